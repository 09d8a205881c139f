/*
 * test_mut_m4.c: behaviour that mutation testing (make mutate,
 * docs/TESTING.md "Mutation testing") found unchecked in the PBX1 arena
 * bounds, the VIEW and RESOLVE codecs, and the core's peer-call helpers,
 * install, resolve and grant cleanup paths. Each test names the effect it
 * pins, checked through the public API and core/pbx_core_inspect.h.
 */
#include "../bootstrap/pbx_bootstrap.h"
#include "../core/pbx_core.h"
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

/* ---- PBX1 arena bounds --------------------------------------------------- */

/* A geometry of byte-sized, byte-aligned records, one per pool, with the
 * smallest valid call window: its arena is exactly the sum of capacities. */
static void m4_byte_geometry(pbx_bootstrap_geometry *g)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = 4096U;
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g->capacity[i] = 1U;
        g->layout[i].record_size_bytes = 1U;
        g->layout[i].record_align_bytes = 1U;
    }
    g->call_window = 1U;
    g->capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g->time_ms[t] = 5000U;
    }
    g->arena_page_count = 1U;
}

/* Sum of capacity times record size over every pool. */
static uint64_t m4_total(const pbx_bootstrap_geometry *g)
{
    uint64_t total = 0U;
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        total += (uint64_t)g->capacity[i] * g->layout[i].record_size_bytes;
    }
    return total;
}

/* Pools whose records fill exactly the largest arena are accepted: the
 * total, the last pool's end and the page count all sit on the bound,
 * which is inclusive. One byte more is refused for its total. */
PBX_TEST(mut_m4_arena_of_exactly_the_maximum_is_accepted)
{
    pbx_bootstrap_geometry g;
    m4_byte_geometry(&g);
    /* The requests pool takes 64 KiB records up to 64 KiB short of the
     * maximum; the selector pool (the last byte-sized pool before the
     * end) absorbs the remainder so the sum is exact. */
    g.layout[PBX_BOOTSTRAP_POOL_REQUESTS].record_size_bytes =
        PBX_BOOTSTRAP_RECORD_SIZE_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_REQUESTS] =
        PBX_BOOTSTRAP_ARENA_BYTES_MAX / PBX_BOOTSTRAP_RECORD_SIZE_MAX - 1U;
    uint64_t rest = m4_total(&g) - 1U;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        (uint32_t)(PBX_BOOTSTRAP_ARENA_BYTES_MAX - rest);
    PBX_REQUIRE(m4_total(&g) == PBX_BOOTSTRAP_ARENA_BYTES_MAX);
    uint32_t pages = 0U;
    PBX_CHECK_EQ(pbx_bootstrap_pages_compute(&g, &pages), PBX_OK);
    PBX_CHECK_EQ(pages, PBX_BOOTSTRAP_ARENA_BYTES_MAX / 4096U);
    g.arena_page_count = pages;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    memcpy(want, g.layout, sizeof(want));
    pbx_bootstrap_layout l;
    PBX_CHECK_EQ(pbx_bootstrap_layout_derive(&g, want, &l), PBX_OK);
    PBX_CHECK_EQ(l.arena_bytes, PBX_BOOTSTRAP_ARENA_BYTES_MAX);
    PBX_CHECK_EQ(l.used_bytes, PBX_BOOTSTRAP_ARENA_BYTES_MAX);
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] += 1U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_E_BOOTSTRAP_TOTAL);
    PBX_CHECK_EQ(pbx_bootstrap_pages_compute(&g, &pages),
                 PBX_E_BOOTSTRAP_TOTAL);
}

/* The arena is rounded up to whole pages: records that use one byte more
 * than a page need two pages, and exactly one page needs one. */
PBX_TEST(mut_m4_arena_rounds_a_partial_page_up)
{
    pbx_bootstrap_geometry g;
    m4_byte_geometry(&g);
    uint64_t base = m4_total(&g) - 1U;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        (uint32_t)(4096U + 1U - base);
    PBX_REQUIRE(m4_total(&g) == 4097U);
    uint32_t pages = 0U;
    PBX_CHECK_EQ(pbx_bootstrap_pages_compute(&g, &pages), PBX_OK);
    PBX_CHECK_EQ(pages, 2U);
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] -= 1U;
    PBX_CHECK_EQ(pbx_bootstrap_pages_compute(&g, &pages), PBX_OK);
    PBX_CHECK_EQ(pages, 1U);
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] += 2U;
    PBX_CHECK_EQ(pbx_bootstrap_pages_compute(&g, &pages), PBX_OK);
    PBX_CHECK_EQ(pages, 2U);
}

/* ---- VIEW and RESOLVE codecs --------------------------------------------- */

static const pbx_ipc_id m4_id = {7U, 3U};

/* A VIEW whose program entry is exactly the largest allowed encodes and
 * decodes to the same entry; one byte longer is refused as out of bound. */
PBX_TEST(mut_m4_view_with_the_longest_entry_is_accepted)
{
    static uint8_t v[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_view r;
    memset(&r, 0, sizeof(r));
    r.ctx.session = 1U;
    r.ctx.job_id = 2U;
    r.ctx.job_gen = 3U;
    r.ctx.operation = PBX_IPC_OPERATION_READ;
    r.ctx.object_class = PBX_IPC_CLASS_FILE;
    r.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    r.ctx.mode = PBX_IPC_MODE_INSTALL;
    r.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    r.ctx.entry.len = PBX_IPC_ENTRY_LEN_BYTES_MAX;
    memset(r.ctx.entry.bytes, 'e', PBX_IPC_ENTRY_LEN_BYTES_MAX);
    r.kind = PBX_IPC_VIEW_ACTIVE;
    r.grant.index = 4U;
    r.grant.gen = 6U;
    r.object.id = 4U;
    r.object.gen = 5U;
    r.target.process_id = 0x99U;
    r.target.process_gen = 2U;
    r.target.slot = 33U;
    size_t len = 0;
    PBX_CHECK_EQ(pbx_ipc_view_encode(m4_id, &r, v, sizeof(v), &len), PBX_OK);
    pbx_ipc_frame f;
    pbx_ipc_view out;
    PBX_REQUIRE(pbx_ipc_frame_decode(v, len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_view_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.ctx.entry.len, PBX_IPC_ENTRY_LEN_BYTES_MAX);
    PBX_CHECK_MEM(out.ctx.entry.bytes, r.ctx.entry.bytes,
                  PBX_IPC_ENTRY_LEN_BYTES_MAX);
    r.ctx.entry.len = PBX_IPC_ENTRY_LEN_BYTES_MAX + 1U;
    PBX_CHECK_EQ(pbx_ipc_view_encode(m4_id, &r, v, sizeof(v), &len),
                 PBX_E_IPC_BOUND);
}

/* A RESOLVE request whose selector is longer than the largest allowed is
 * refused as out of bound, before anything is written. */
PBX_TEST(mut_m4_resolve_selector_over_bound_is_a_bound_error)
{
    static uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    static const uint8_t sel[] = "docs/a";
    pbx_ipc_resolve r;
    memset(&r, 0, sizeof(r));
    r.operation = PBX_IPC_OPERATION_READ;
    r.object_class = PBX_IPC_CLASS_FILE;
    r.selector = sel;
    r.selector_len = PBX_IPC_SELECTOR_LEN_BYTES_MAX + 1U;
    size_t len = 999U;
    PBX_CHECK_EQ(pbx_ipc_resolve_encode(m4_id, &r, b, sizeof(b), &len),
                 PBX_E_IPC_BOUND);
    PBX_CHECK_EQ(len, 999U);
}

/* A FOUND RESOLVE reply must carry its one capability: the same reply
 * with none is a capability partition violation. */
PBX_TEST(mut_m4_resolve_found_without_its_capability_is_refused)
{
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_resolve_reply r;
    memset(&r, 0, sizeof(r));
    r.result = PBX_IPC_RESOLVE_FOUND;
    r.object_class = PBX_IPC_CLASS_FILE;
    r.operation = PBX_IPC_OPERATION_READ;
    r.object.id = 9U;
    r.object.gen = 2U;
    r.scope_id = 0x5CU;
    size_t len = 0;
    PBX_REQUIRE(pbx_ipc_resolve_reply_encode(m4_id, &r, b, sizeof(b), &len) ==
                PBX_OK);
    pbx_ipc_frame f;
    pbx_ipc_resolve_reply out;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 1U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_resolve_reply_decode(&f, &out), PBX_OK);
    pbx_le_put16(b + 10, 0U);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_resolve_reply_decode(&f, &out),
                 PBX_E_IPC_CAP_PARTITION);
}

/* ---- core: request progression ------------------------------------------ */

static const uint8_t m4_sel[] = "docs/report.txt";
#define M4_SEL_LEN ((uint32_t)(sizeof(m4_sel) - 1U))

/* Opens the default request (runtime-reply mode when rt) without running
 * it; returns the request id. */
static pbx_ipc_id m4_open(th_h *h, bool rt)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m4_sel, M4_SEL_LEN);
    if (rt) {
        b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
        memset(&b.target, 0, sizeof(b.target));
    }
    PBX_CHECK_EQ(th_open(h, &b, m4_sel, &id), 0U);
    return id;
}

/* Asks DECISION and checks a DENIED outcome with exactly reason. */
static void m4_denied(th_h *h, pbx_ipc_id id, uint16_t reason)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, reason);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
}

/* An ACTIVE row ttyd cannot be sent at all denies the request with
 * PEER_FAILED, and every capability is given back. */
PBX_TEST(mut_m4_active_row_send_failure_denies_peer_failed)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_FAIL, 0, 0);
    pbx_ipc_id id = m4_open(h, false);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    m4_denied(h, id, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A prompt answer that does not echo the request exactly is not the
 * user's: the request is denied with PEER_FAILED, not USER. */
PBX_TEST(mut_m4_inexact_prompt_answer_denies_peer_failed)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_WRONG_ECHO, 0);
    pbx_ipc_id id = m4_open(h, false);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    m4_denied(h, id, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A RETRY answer is a counted PROMPT -> PROMPT transition of the request
 * machine: the state-machine coverage sees it once per RETRY. */
PBX_TEST(mut_m4_prompt_retry_is_a_counted_transition)
{
    th_h *h = th_new(4);
    size_t row = pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_PROMPT,
                                   PBX_CORE_EV_RETRY);
    PBX_REQUIRE(row != SIZE_MAX);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m4_sel, M4_SEL_LEN);
    PBX_CHECK_EQ(th_open_parked(h, &b, m4_sel, &id), 0U);
    PBX_CHECK_EQ(h->core.fsm_hits[row], 1U);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(r->link.state, (uint16_t)PBX_CORE_ST_PROMPT);
    th_free(h);
}

/* The resolution evidence records the operation and object class vfsd
 * echoed, which are the request's own. */
PBX_TEST(mut_m4_resolution_evidence_keeps_operation_and_class)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m4_sel, M4_SEL_LEN);
    b.ctx.operation = PBX_IPC_OPERATION_WRITE;
    b.ctx.object_class = PBX_IPC_CLASS_DIRECTORY;
    PBX_REQUIRE(th_open(h, &b, m4_sel, &id) == 0U);
    PBX_REQUIRE(th_run_to(h, "policy") != TH_NONE);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    const pbx_core_resolution *ev =
        (const pbx_core_resolution *)pbx_core_inspect_record(
            &h->core, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution);
    PBX_CHECK_EQ(ev->operation, (uint16_t)PBX_IPC_OPERATION_WRITE);
    PBX_CHECK_EQ(ev->object_class, (uint16_t)PBX_IPC_CLASS_DIRECTORY);
    th_free(h);
}

/* A surplus receipt on the ACTIVE acknowledgement whose deletion the
 * kernel rejects stops the core with CLEANUP_REJECTED, the error the
 * reply delivery returns. */
PBX_TEST(mut_m4_rejected_deletion_on_active_ack_is_cleanup_rejected)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_SURPLUS, 0);
    (void)m4_open(h, false);
    uint32_t k = th_run_to(h, "view+");
    PBX_REQUIRE(k != TH_NONE);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK(pbx_core_exit_status(&h->core) != PBX_CORE_EXIT_NONE);
    th_free(h);
}

/* A runtime alias of the wrong rights whose deletion the kernel rejects
 * stops the core with CLEANUP_REJECTED from the step. */
PBX_TEST(mut_m4_rejected_deletion_of_a_bad_alias_is_cleanup_rejected)
{
    th_h *h = th_new(4);
    h->alias_rights = PBX_CAPABI_RIGHT_SEND | PBX_CAPABI_RIGHT_MANAGE;
    (void)m4_open(h, true);
    PBX_REQUIRE(th_run_to(h, "policy") != TH_NONE);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_CLEANUP_REJECTED);
    th_free(h);
}

/* A runtime-reply approval whose wake is still owed keeps its alias when
 * the grant is consumed first: the published decision still delivers it. */
PBX_TEST(mut_m4_unwoken_runtime_approval_keeps_its_alias)
{
    th_h *h = th_new(4);
    th_push_wake(h, PBX_CORE_IO_BUSY);
    pbx_ipc_id id = m4_open(h, true);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_REQUIRE(r->link.state == (uint16_t)PBX_CORE_ST_NOTIFY);
    pbx_ipc_id g =
        pbx_core_inspect_id(&h->core, PBX_BOOTSTRAP_POOL_GRANTS, r->grant);
    uint32_t deleted = h->deleted;
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(h->deleted, deleted);
    pbx_ipc_decision d;
    uint32_t xfer = PBX_CORE_SLOT_NONE;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(xfer != PBX_CORE_SLOT_NONE);
    th_free(h);
}

/* ---- core: classified fail-stops when the records disagree -------------- */

/* A live grant on the cleanup lane without a row owed to a returned ttyd
 * means the records disagree: the step fails INCONSISTENT and the core
 * stops with the progress exit status. */
PBX_TEST(mut_m4_live_grant_on_the_lane_without_resync_is_inconsistent)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, m4_sel, M4_SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, m4_sel, false, NULL, NULL);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    h->hold = true;
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    pbx_core_grant *gr = (pbx_core_grant *)pbx_core_inspect_fault(
        &h->core, PBX_BOOTSTRAP_POOL_GRANTS, g.index);
    PBX_REQUIRE((gr->flags & PBX_CORE_GRANT_F_RESYNC) != 0U);
    PBX_REQUIRE(gr->link.state == (uint16_t)PBX_CORE_ST_LIVE);
    gr->flags &= (uint16_t)~PBX_CORE_GRANT_F_RESYNC;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    th_free(h);
}

/* The harness whose transient pool the deletion below starves. */
static th_h *m4_starved;
/* The harness's own ops, which the starving ops wrap. */
static const pbx_core_ops *m4_base_ops;
/* The harness's ops with the starving deletion. */
static pbx_core_ops m4_starve_ops;

/* Deletes through the harness, then makes the records disagree: the
 * transient pool reports no free record, as if its count were lost. */
static pbx_core_delete m4_delete_then_starve(void *user, uint32_t slot)
{
    pbx_core_delete d = m4_base_ops->slot_delete(user, slot);
    m4_starved->core.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].free_count = 0U;
    return d;
}

/* A receipt whose deletion stays transient needs a record to be tracked
 * in; with none free (records that disagree) the delivery fails
 * CLEANUP_REJECTED at once, under the progress exit status, instead of
 * leaving the receipt untracked and judging on. */
PBX_TEST(mut_m4_untrackable_transient_receipt_stops_the_delivery)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_SURPLUS, 0);
    pbx_ipc_id id = m4_open(h, false);
    uint32_t k = th_run_to(h, "view+");
    PBX_REQUIRE(k != TH_NONE);
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    m4_starved = h;
    m4_base_ops = h->core.ops;
    m4_starve_ops = *h->core.ops;
    m4_starve_ops.slot_delete = m4_delete_then_starve;
    uint32_t free_count =
        h->core.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].free_count;
    h->core.ops = &m4_starve_ops;
    PBX_CHECK_EQ(th_deliver(h, k), PBX_E_CORE_CLEANUP_REJECTED);
    h->core.ops = m4_base_ops;
    h->core.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].free_count = free_count;
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    /* Nothing was judged: the request still waits in ACTIVATE. */
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, id.index)->link.state,
                 (uint16_t)PBX_CORE_ST_ACTIVATE);
    th_free(h);
}
