/*
 * test_mut_m6.c: behaviour that the full mutation run of issue 22 item 7
 * (make mutate, docs/TESTING.md "Mutation testing") found unchecked in
 * the code added since the last full run: route loss and return
 * (core/pbx_core_routes.c), the install evidence of a request without a
 * prompt record (core/pbx_core_install.c) and the inspection views. Each
 * test is named for the behaviour it pins, not for a mutant.
 */
#include "../core/pbx_core.h"
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t m6_sel[] = "docs/report.txt";
#define M6_SEL_LEN ((uint32_t)(sizeof(m6_sel) - 1U))

/* The scope slot the harness lands the first request's scope in. */
#define M6_SCOPE_SLOT 64U

/* The state of request id's record. */
static uint16_t m6_req_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* The seq of pending call k, or 0 when there is none (no call's seq is
 * 0). */
static uint32_t m6_seq(const th_h *h, uint32_t k)
{
    return k < h->npend ? h->pend[k].seq : 0U;
}

/* Opens one routine install-mode request and runs the core until ttyd's
 * ACTIVE acknowledgement is pending (the grant installed, LIVE and not
 * yet published); clears the trace. Returns the request. */
static pbx_ipc_id m6_open_to_activate(th_h *h)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, m6_sel, &id), 0U);
    PBX_REQUIRE(th_run_to(h, "view+") != TH_NONE);
    PBX_CHECK_EQ(m6_req_state(h, id), PBX_CORE_ST_ACTIVATE);
    th_clear_trace(h);
    return id;
}

/* procd dies while a request waits for ttyd's ACTIVE acknowledgement: the
 * install-mode grant procd installed ends lost, and the request, not yet
 * approved, is denied saying why (installer-lost), not left to time out. */
PBX_TEST(mut_m6_procd_loss_before_approval_denies_installer_lost)
{
    th_h *h = th_new(4);
    pbx_ipc_id id = m6_open_to_activate(h);
    h->hold = true;
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_PROCD),
                 PBX_OK);
    PBX_CHECK_EQ(m6_req_state(h, id), PBX_CORE_ST_RELEASE);
    /* The grant ended unpublished: no log line speaks of its end. */
    uint32_t gi = pbx_core_inspect_request(&h->core, id.index)->grant;
    pbx_ipc_id g = pbx_core_inspect_id(&h->core, PBX_BOOTSTRAP_POOL_GRANTS, gi);
    PBX_CHECK(pbx_core_inspect_grant(&h->core, gi)->link.state !=
              PBX_CORE_ST_LIVE);
    pbx_core_log_grant_end e;
    PBX_CHECK(!pbx_core_inspect_grant_end(&h->core, g, &e));
    h->hold = false;
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_INSTALLER_LOST);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* vfsd dies after the approval was decided but before it was published
 * (the scope's deletion is still owed): the decision turns DENIED with
 * provider-lost, never CANCELLED nor still APPROVED, and is published
 * once the scope is deleted. */
PBX_TEST(mut_m6_vfsd_loss_after_unpublished_approval_denies_provider_lost)
{
    th_h *h = th_new(4);
    pbx_ipc_id id = m6_open_to_activate(h);
    h->hold_slot = M6_SCOPE_SLOT;
    th_run(h);
    PBX_CHECK_EQ(m6_req_state(h, id), PBX_CORE_ST_RELEASE);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(r->outcome, (uint16_t)PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    PBX_CHECK_EQ(r->outcome, (uint16_t)PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(r->reason, (uint16_t)PBX_IPC_REASON_PROVIDER_LOST);
    h->hold_slot = PBX_CORE_SLOT_NONE;
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_PROVIDER_LOST);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Work parked on a route's backpressure while the route was down goes
 * back to its lane when the route returns: the INSTALL procd refused as
 * busy is sent again once pbx_core_on_route_up returned, with no
 * writability event. */
PBX_TEST(mut_m6_route_up_sends_work_parked_on_the_route)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_PROCD),
                 PBX_OK);
    th_push(h, PBX_CORE_ROUTE_PROCD, TH_BUSY, 0, 0);
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, m6_sel, &id), 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65:busy");
    PBX_CHECK_EQ(m6_req_state(h, id), PBX_CORE_ST_INSTALL);
    h->hold = true;
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_PROCD), PBX_OK);
    th_run(h);
    TH_TRACE(h, "install^65");
    PBX_CHECK_EQ(th_find(h, "install"), 0U);
    th_free(h);
}

/* A routine request whose policy record says PROMPT but which holds no
 * prompt record reaches INSTALL only if the records were corrupted: the
 * install evidence check refuses it (a progression fail-stop), never
 * installs on it. */
PBX_TEST(mut_m6_install_without_prompt_record_is_a_fail_stop)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_push(h, PBX_CORE_ROUTE_PROCD, TH_BUSY, 0, 0);
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, m6_sel, &id), 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65:busy");
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(r->prompt, PBX_CORE_NIL);
    pbx_core_policy *p = (pbx_core_policy *)pbx_core_inspect_fault(
        &h->core, PBX_BOOTSTRAP_POOL_POLICIES, r->policy);
    PBX_CHECK_EQ(p->verdict, (uint32_t)PBX_IPC_VERDICT_ALLOW);
    p->verdict = PBX_IPC_VERDICT_PROMPT;
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_PROCD);
    th_run(h);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    th_free(h);
}

/* ttyd comes back but refuses the first resent ACTIVE row (the send
 * fails): the row is owed, not forgotten, and the next tick sends it
 * again; its exact acknowledgement ends the resync. */
PBX_TEST(mut_m6_failed_resync_row_is_sent_again_on_a_tick)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, m6_sel, false, NULL, NULL);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    th_clear_trace(h);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_FAIL, 0, 0);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    TH_TRACE(h, "view+:fail");
    const pbx_core_grant *gr = pbx_core_inspect_grant(&h->core, g.index);
    PBX_CHECK((gr->flags & PBX_CORE_GRANT_F_RESYNC) != 0U);
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "view+");
    PBX_CHECK_EQ(gr->flags & PBX_CORE_GRANT_F_RESYNC, 0U);
    PBX_CHECK_EQ(gr->link.state, (uint16_t)PBX_CORE_ST_LIVE);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* The decision view of a denial names no grant and no object: every one
 * of those fields is written 0, whatever the caller's record held
 * before (the log line prints them). */
PBX_TEST(mut_m6_denial_view_clears_grant_and_object)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    h->deliver = false;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    PBX_CHECK_EQ(th_open(h, &b, m6_sel, &id), 0U);
    th_run(h);
    pbx_core_log_decision v;
    memset(&v, 0xA5, sizeof(v));
    PBX_REQUIRE(pbx_core_inspect_decision(&h->core, id, &v));
    PBX_CHECK_EQ(v.outcome, (uint32_t)PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(v.grant.index, 0U);
    PBX_CHECK_EQ(v.grant.gen, 0U);
    PBX_CHECK_EQ(v.object.id, 0U);
    PBX_CHECK_EQ(v.object.gen, 0U);
    th_free(h);
}

/* The grant-end view borrows the grant's own context (the job the log
 * line names) and says how the grant ended, whatever the caller's record
 * held before. */
PBX_TEST(mut_m6_grant_end_view_borrows_the_grants_context)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id req = {0, 0};
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    /* Two approvals kept undelivered: the second request (index 1) is
     * still live when its grant ends, so the view names it. */
    (void)th_approve(h, &b, m6_sel, true, NULL, NULL);
    b.ctx.job_gen += 1U;
    pbx_ipc_id g = th_approve(h, &b, m6_sel, true, &req, NULL);
    PBX_CHECK_EQ(req.index, 1U);
    pbx_core_log_grant_end e;
    /* No view of a grant still LIVE, nor of one that does not exist. */
    PBX_CHECK(!pbx_core_inspect_grant_end(&h->core, g, &e));
    pbx_ipc_id stale = {g.index, g.gen + 1U};
    PBX_CHECK(!pbx_core_inspect_grant_end(&h->core, stale, &e));
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    memset(&e, 0xA5, sizeof(e));
    PBX_REQUIRE(pbx_core_inspect_grant_end(&h->core, g, &e));
    const pbx_core_grant *gr = pbx_core_inspect_grant(&h->core, g.index);
    PBX_CHECK(e.ctx == &gr->ctx.ctx);
    PBX_CHECK_EQ(e.ctx->job_id, b.ctx.job_id);
    PBX_CHECK_EQ(e.ctx->job_gen, b.ctx.job_gen);
    PBX_CHECK_EQ(e.grant.index, g.index);
    PBX_CHECK_EQ(e.grant.gen, g.gen);
    PBX_CHECK_EQ(e.request.index, req.index);
    PBX_CHECK_EQ(e.request.gen, req.gen);
    PBX_CHECK_EQ(e.object.id, gr->object.id);
    PBX_CHECK_EQ(e.object.gen, gr->object.gen);
    PBX_CHECK(strcmp(e.end, "consumed") == 0);
    PBX_CHECK(strcmp(e.reason, "consume") == 0);
    th_run(h);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Entry points that need a ready core refuse a context that never became
 * ready with PBX_E_CORE_NOT_READY, and touch nothing. */
PBX_TEST(mut_m6_route_up_and_broker_loss_need_a_ready_core)
{
    static pbx_core_ctx z;
    memset(&z, 0, sizeof(z));
    PBX_CHECK_EQ(pbx_core_on_route_up(&z, PBX_CORE_ROUTE_TTYD),
                 PBX_E_CORE_NOT_READY);
    PBX_CHECK_EQ(pbx_core_on_broker_lost(&z), PBX_E_CORE_NOT_READY);
    PBX_CHECK_EQ(z.ready, 0U);
}

/* A parsed geometry is fully defined, padding included: it compares
 * bytewise equal to a zeroed record given the same field values, so a
 * byte comparison (or digest) of two parsed records compares their
 * fields, never stack leftovers. */
/* A valid small geometry with the core's record layouts, zeroed whole
 * before its fields are set. */
static void m6_geometry(pbx_bootstrap_geometry *g)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = 4096U;
    pbx_core_pool_layouts(g->layout);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g->capacity[i] = 4U;
    }
    g->capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] = 4096U;
    g->capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] = 16U;
    g->call_window = 1U;
    g->capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g->time_ms[t] = 5000U;
    }
    g->arena_page_count = 1U;
}

/* Leaves a page of the stack holding nonzero bytes, so that a callee's
 * record that is never written reads as nonzero, not as a lucky zero. */
static __attribute__((noinline)) void m6_dirty_stack(void)
{
    volatile uint8_t junk[4096];
    for (size_t k = 0; k < sizeof(junk); k++) {
        junk[k] = 0xA5U;
    }
    (void)junk[0];
}

PBX_TEST(mut_m6_parsed_geometry_padding_is_zero)
{
    pbx_bootstrap_geometry g;
    m6_geometry(&g);
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    PBX_REQUIRE(pbx_bootstrap_encode(&g, rec, sizeof(rec)) == PBX_OK);
    pbx_bootstrap_geometry p;
    memset(&p, 0xA5, sizeof(p));
    m6_dirty_stack();
    PBX_REQUIRE(pbx_bootstrap_parse(rec, sizeof(rec), &p) == PBX_OK);
    /* g was zeroed whole before its fields were set; the digest the
     * encoder computed is the one field parse adds. */
    memcpy(g.digest, p.digest, sizeof(g.digest));
    uint8_t got[sizeof(p)];
    uint8_t want[sizeof(g)];
    memcpy(got, &p, sizeof(got));
    memcpy(want, &g, sizeof(want));
    PBX_CHECK(memcmp(got, want, sizeof(want)) == 0);
}

/* ttyd comes back and acknowledges the resent ACTIVE row with a wrong
 * echo: the row is not taken as shown; the grant stays LIVE and still
 * owes it, and the next tick sends it again. */
PBX_TEST(mut_m6_inexact_resync_ack_sends_the_row_again_on_a_tick)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, m6_sel, false, NULL, NULL);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    th_clear_trace(h);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_WRONG_ECHO, 0);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    TH_TRACE(h, "view+");
    const pbx_core_grant *gr = pbx_core_inspect_grant(&h->core, g.index);
    PBX_CHECK((gr->flags & PBX_CORE_GRANT_F_RESYNC) != 0U);
    PBX_CHECK_EQ(gr->link.state, (uint16_t)PBX_CORE_ST_LIVE);
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "view+");
    PBX_CHECK_EQ(gr->flags & PBX_CORE_GRANT_F_RESYNC, 0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* The decision view names the grant of an approval whatever the grant's
 * index, also past the prompts pool's capacity (a core with more grant
 * records than prompt records). */
PBX_TEST(mut_m6_decision_view_names_a_grant_beyond_the_prompt_pool)
{
    th_h *h = th_new_prompts(4, 1);
    pbx_ipc_begin b;
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    pbx_ipc_id r1 = {0, 0};
    pbx_ipc_id g1 = th_approve(h, &b, m6_sel, true, &r1, NULL);
    b.ctx.job_gen += 1U;
    pbx_ipc_id r2 = {0, 0};
    pbx_ipc_id g2 = th_approve(h, &b, m6_sel, true, &r2, NULL);
    PBX_CHECK_EQ(g1.index, 0U);
    PBX_CHECK_EQ(g2.index, 1U);
    pbx_core_log_decision v;
    memset(&v, 0, sizeof(v));
    PBX_REQUIRE(pbx_core_inspect_decision(&h->core, r2, &v));
    PBX_CHECK_EQ(v.outcome, (uint32_t)PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(v.grant.index, g2.index);
    PBX_CHECK_EQ(v.grant.gen, g2.gen);
    PBX_CHECK(v.object.id != 0U);
    th_free(h);
}

/* A fresh core's call serial starts at 0, so its first call carries
 * generation (and seq) 1 and each send takes the next. */
PBX_TEST(mut_m6_first_call_after_init_has_seq_one)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, m6_sel, &id), 0U);
    uint32_t k = th_run_to(h, "resolve");
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(m6_seq(h, k), 1U);
    th_clear_trace(h);
    k = th_run_to(h, "policy");
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(m6_seq(h, k), 2U);
    th_free(h);
}

/* ttyd returns twice before the resent row went out: the grant, already
 * queued for it, is queued once more in place (no record is queued
 * twice) and the row goes out exactly once. */
PBX_TEST(mut_m6_second_ttyd_return_before_the_resync_sends_the_row_once)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, m6_sel, false, NULL, NULL);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    th_clear_trace(h);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    TH_TRACE(h, "view+");
    const pbx_core_grant *gr = pbx_core_inspect_grant(&h->core, g.index);
    PBX_CHECK_EQ(gr->flags & PBX_CORE_GRANT_F_RESYNC, 0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ttyd's acknowledgement of a resent ACTIVE row carries a receipt no
 * VIEW reply may carry: the receipt is deleted, every one of them, and
 * nothing is left held. */
PBX_TEST(mut_m6_resync_ack_receipt_is_deleted)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    (void)th_approve(h, &b, m6_sel, false, NULL, NULL);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    th_clear_trace(h);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_SURPLUS, 0);
    uint32_t deleted = h->deleted;
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    PBX_CHECK(h->deleted > deleted);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* A derived layout is fully defined, padding included: it compares
 * bytewise equal to a zeroed record given the same field values. */
PBX_TEST(mut_m6_derived_layout_padding_is_zero)
{
    pbx_bootstrap_geometry g;
    m6_geometry(&g);
    pbx_bootstrap_type_layout compiled[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_core_pool_layouts(compiled);
    pbx_bootstrap_layout l;
    /* The arena's page count is the one the pools need: found by trying
     * each count up to a bound, so the geometry stays the helper's. */
    pbx_err err = PBX_E_BOOTSTRAP_PAGE_EXTENT;
    for (uint32_t n = 1; n <= 4096U && err == PBX_E_BOOTSTRAP_PAGE_EXTENT;
         n++) {
        g.arena_page_count = n;
        memset(&l, 0xA5, sizeof(l));
        m6_dirty_stack();
        err = pbx_bootstrap_layout_derive(&g, compiled, &l);
    }
    PBX_REQUIRE(err == PBX_OK);
    pbx_bootstrap_layout w;
    memset(&w, 0, sizeof(w));
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        w.pools[i].offset_bytes = l.pools[i].offset_bytes;
        w.pools[i].size_bytes = l.pools[i].size_bytes;
        w.pools[i].capacity = l.pools[i].capacity;
        w.pools[i].record_size_bytes = l.pools[i].record_size_bytes;
        w.pools[i].record_align_bytes = l.pools[i].record_align_bytes;
    }
    w.used_bytes = l.used_bytes;
    w.page_size_bytes = l.page_size_bytes;
    w.page_count = l.page_count;
    w.arena_bytes = l.arena_bytes;
    w.call_window = l.call_window;
    memcpy(w.time_ms, l.time_ms, sizeof(w.time_ms));
    uint8_t got[sizeof(l)];
    uint8_t want[sizeof(w)];
    memcpy(got, &l, sizeof(got));
    memcpy(want, &w, sizeof(want));
    PBX_CHECK(memcmp(got, want, sizeof(want)) == 0);
}

/* The kernel rejects the deletion of a receipt on ttyd's acknowledgement
 * of a resent row: a cleanup fail-stop, and the delivery answers
 * PBX_E_CORE_CLEANUP_REJECTED. */
PBX_TEST(mut_m6_rejected_resync_receipt_deletion_is_a_cleanup_fail_stop)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    (void)th_approve(h, &b, m6_sel, false, NULL, NULL);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    th_clear_trace(h);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_SURPLUS, 0);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    h->hold = true;
    th_run(h);
    uint32_t k = th_find(h, "view+");
    PBX_REQUIRE(k != TH_NONE);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    th_free(h);
}

/* launchd's broker is lost while a runtime-reply approval waits
 * undelivered and the kernel rejects the deletion of its alias: a cleanup
 * fail-stop, and pbx_core_on_broker_lost answers
 * PBX_E_CORE_CLEANUP_REJECTED. */
PBX_TEST(mut_m6_broker_loss_rejected_alias_deletion_is_a_cleanup_fail_stop)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, m6_sel, M6_SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    pbx_ipc_id req = {0, 0};
    (void)th_approve(h, &b, m6_sel, true, &req, NULL);
    for (uint32_t k = 0; k < 4U; k++) {
        th_push_del(h, PBX_CORE_DELETE_REJECTED);
    }
    PBX_CHECK_EQ(pbx_core_on_broker_lost(&h->core),
                 PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    th_free(h);
}
