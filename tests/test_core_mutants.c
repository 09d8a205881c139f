/*
 * test_core_mutants.c: core behaviour that mutation testing (make mutate,
 * docs/TESTING.md "Mutation testing") found unchecked: each test pins an
 * effect a surviving mutant changed (the exact denial reason of a peer
 * failure, readiness over a dirty context, the deadline check of init,
 * the exact bytes of the state-machine graph), through the public API.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Opens the default install-mode request (or runtime-reply when rt) and
 * runs it until idle. */
static pbx_ipc_id mut_open(th_h *h, bool rt)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    if (rt) {
        b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
        memset(&b.target, 0, sizeof(b.target));
    }
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    return id;
}

/* Asks DECISION and checks a DENIED outcome with exactly reason. */
static void mut_denied(th_h *h, pbx_ipc_id id, uint16_t reason)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, reason);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
}

/* A DETACH that fails in transport denies with PEER_FAILED, the reason
 * launchd and the client see for a peer that could not be reached. */
PBX_TEST(core_mutants_detach_failure_denies_peer_failed)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    pbx_ipc_id id = mut_open(h, false);
    mut_denied(h, id, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A runtime-reply approval whose alias derivation fails is denied with
 * PEER_FAILED, and the request's capabilities are all given back. */
PBX_TEST(core_mutants_alias_failure_denies_peer_failed)
{
    th_h *h = th_new(4);
    th_push_alias(h, PBX_CORE_IO_FAILED);
    pbx_ipc_id id = mut_open(h, true);
    PBX_CHECK_EQ(h->wake_count, 1U);
    mut_denied(h, id, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- init over a dirty context ------------------------------------------ */

/* Derives a layout for pools of n records (deadline classes time_ms). */
static void mut_layout(uint32_t n, uint32_t time_ms, pbx_bootstrap_layout *out)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = n;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        3U * n + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        4U * n * PBX_CORE_SELECTOR_CHUNK_BYTES;
    g.call_window = n;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * n;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = time_ms;
    }
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, want, out) == PBX_OK);
}

/* Re-initialises the harness's core over a context first filled with
 * junk: init must set every field it relies on, ignoring old contents. */
static void mut_reinit_dirty(th_h *h)
{
    pbx_bootstrap_layout l;
    mut_layout(4U, 5000U, &l);
    const pbx_core_ops *ops = h->core.ops;
    void *user = h->core.ops_user;
    pbx_capabi_layout slots = h->core.slots;
    pbx_core_identity_fn identity = h->core.identity;
    PBX_REQUIRE(l.arena_bytes == h->core.arena_len);
    memset(&h->core, 0xA5, sizeof(h->core));
    memset(h->arena, 0x5A, l.arena_bytes);
    PBX_REQUIRE(pbx_core_init(&h->core, &l, h->arena, l.arena_bytes, &slots,
                              ops, user) == PBX_OK);
    /* No identity observation until the runtime sets one. */
    PBX_CHECK(h->core.identity == NULL);
    pbx_core_set_identity(&h->core, identity);
}

/* Two approvals, one after the other, on a core carved over a dirty
 * context and arena: every record comes from a well-formed free list. */
PBX_TEST(core_mutants_init_ignores_a_dirty_context)
{
    th_h *h = th_new(4);
    mut_reinit_dirty(h);
    PBX_CHECK(th_quiescent(h));
    /* Every counter starts at zero, whatever the context held. */
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    PBX_CHECK_EQ(h->core.replies_refused, 0U);
    PBX_CHECK_EQ(h->core.calls_expired, 0U);
    PBX_CHECK_EQ(h->core.index_visits, 0U);
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    PBX_CHECK_EQ(h->core.now_ms, 0U);
    PBX_CHECK_EQ(h->core.call_serial, 0U);
    PBX_CHECK_EQ(h->core.prompt_waits, 0U);
    PBX_CHECK_EQ(h->core.chunk_free_count, h->core.chunk_count);
    for (size_t r = 0; r < (size_t)PBX_CORE_FSM_ROWS; r++) {
        PBX_CHECK_EQ(h->core.fsm_hits[r], 0U);
    }
    for (uint32_t k = 0; k < 2U; k++) {
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        pbx_ipc_id req = {0, 0};
        pbx_ipc_id g = th_approve(h, &b, sel, false, &req, NULL);
        PBX_CHECK(g.gen != 0U);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
    }
    PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].free_count, 4U);
    th_free(h);
}

/* A layout whose call deadline is zero would expire every call unsent:
 * init refuses it whichever class is zero. */
PBX_TEST(core_mutants_init_refuses_a_zero_deadline)
{
    pbx_bootstrap_layout l;
    mut_layout(4U, 5000U, &l);
    static pbx_core_ctx ctx;
    static const pbx_core_ops ops;
    pbx_capabi_layout slots;
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, 64U, 64U) == PBX_OK);
    uint8_t *arena = aligned_alloc(4096U, l.arena_bytes);
    PBX_REQUIRE(arena != NULL);
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &l, arena, l.arena_bytes, &slots, &ops, NULL),
        PBX_OK);
    for (size_t k = 0; k < (size_t)PBX_CORE_CALL_CLASSES; k++) {
        pbx_bootstrap_layout bad = l;
        bad.time_ms[k] = 0U;
        PBX_CHECK_EQ(
            pbx_core_init(&ctx, &bad, arena, l.arena_bytes, &slots, &ops, NULL),
            PBX_E_CORE_LAYOUT);
        PBX_CHECK_EQ(ctx.ready, 0U);
    }
    /* Nor may the OPEN deadline be zero: every request would end
     * uncommitted. */
    pbx_bootstrap_layout bad = l;
    bad.time_ms[PBX_BOOTSTRAP_TIME_OPEN] = 0U;
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &bad, arena, l.arena_bytes, &slots, &ops, NULL),
        PBX_E_CORE_LAYOUT);
    free(arena);
}

/* ---- the state-machine graph -------------------------------------------- */

struct mut_sink {
    char buf[16384];
    size_t len;
    bool nul;
};

static void mut_emit(void *user, const char *text, size_t len)
{
    struct mut_sink *s = user;
    for (size_t i = 0; i < len; i++) {
        s->nul = s->nul || text[i] == '\0';
    }
    if (s->len + len < sizeof(s->buf)) {
        memcpy(s->buf + s->len, text, len);
        s->len += len;
    }
}

/* The DOT graph is text (no NUL byte is ever emitted) and every brace it
 * opens is closed: one per machine cluster and one for the graph. */
PBX_TEST(core_mutants_fsm_dot_is_balanced_text)
{
    static struct mut_sink s;
    memset(&s, 0, sizeof(s));
    pbx_core_fsm_dot(mut_emit, &s);
    PBX_REQUIRE(s.len > 0U && s.len < sizeof(s.buf));
    PBX_CHECK(!s.nul);
    size_t open = 0;
    size_t close = 0;
    for (size_t i = 0; i < s.len; i++) {
        open += s.buf[i] == '{' ? 1U : 0U;
        close += s.buf[i] == '}' ? 1U : 0U;
    }
    PBX_CHECK_EQ(open, (size_t)PBX_CORE_MACHINE_COUNT + 1U);
    /* Every transition is drawn once, in its own machine's cluster. */
    size_t edges = 0;
    for (size_t i = 0; i + 1U < s.len; i++) {
        edges += s.buf[i] == '-' && s.buf[i + 1U] == '>' ? 1U : 0U;
    }
    PBX_CHECK_EQ(edges, (size_t)PBX_CORE_FSM_ROWS);
    /* Each cluster holds its own machine's edges: a request edge before
     * the grant cluster opens, a grant edge after. */
    s.buf[s.len] = '\0';
    const char *grant = strstr(s.buf, "subgraph cluster_grant");
    const char *req_edge = strstr(s.buf, "request_open -> request_resolve");
    const char *grant_edge = strstr(s.buf, "grant_retire -> grant_free");
    PBX_REQUIRE(grant != NULL && req_edge != NULL && grant_edge != NULL);
    PBX_CHECK(req_edge < grant);
    PBX_CHECK(grant_edge > grant);
    PBX_CHECK_EQ(close, open);
    PBX_CHECK_EQ(s.buf[s.len - 1U], '\n');
    PBX_CHECK_EQ(s.buf[s.len - 2U], '}');
}

/* ---- what each transient slot records that it holds --------------------- */

/* The receipt kind request id's tslot field (SCOPE, OBJECT, HANDLE) says
 * its slot holds, read through the inspection API. */
static uint32_t mut_tslot_kind(const th_h *h, pbx_ipc_id id, int which)
{
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    uint32_t t = which == 0   ? r->scope_tslot
                 : which == 1 ? r->object_tslot
                              : r->handle_tslot;
    const pbx_core_tslot *ts = pbx_core_inspect_tslot(&h->core, t);
    PBX_CHECK_EQ(ts->link.state, PBX_CORE_TSLOT_HELD);
    return ts->kind;
}

/* Each held receipt is recorded with its own kind while the request
 * moves (the committed scope, vfsd's object, procd's revocation handle),
 * and a slot given back keeps no kind. */
PBX_TEST(core_mutants_tslots_record_the_kind_they_hold)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    PBX_REQUIRE(th_run_to(h, "policy") != TH_NONE);
    PBX_CHECK_EQ(mut_tslot_kind(h, id, 0), PBX_CAPABI_RECEIPT_SCOPE);
    /* Request-owned slots are no public orphans. */
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(pbx_core_inspect_tslot(&h->core, r->scope_tslot)->owner_kind,
                 0U);
    PBX_CHECK_EQ(pbx_core_inspect_tslot(&h->core, r->object_tslot)->owner_kind,
                 0U);
    PBX_CHECK_EQ(mut_tslot_kind(h, id, 1), PBX_CAPABI_RECEIPT_OBJECT);
    PBX_REQUIRE(th_run_to(h, "detach") != TH_NONE);
    PBX_CHECK_EQ(mut_tslot_kind(h, id, 2), PBX_CAPABI_RECEIPT_REVOCATION);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    uint32_t cap = h->core.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].capacity;
    uint32_t held = 0;
    for (uint32_t t = 0; t < cap; t++) {
        const pbx_core_tslot *ts = pbx_core_inspect_tslot(&h->core, t);
        if (ts->link.state == PBX_CORE_TSLOT_HELD) {
            held++;
            continue;
        }
        PBX_CHECK_EQ(ts->kind, 0U);
    }
    /* Only the grant's revocation handle is still held. */
    PBX_CHECK_EQ(held, 1U);
    th_free(h);
}

/* The decision record request id's decision was written to, read
 * through the inspection API while the request is alive. */
static const pbx_core_decision *mut_decision(const th_h *h, pbx_ipc_id id)
{
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    return (const pbx_core_decision *)pbx_core_inspect_record(
        &h->core, PBX_BOOTSTRAP_POOL_DECISIONS, r->decision);
}

/* A decision record names exactly its request, job and outcome, and the
 * grant only for an approval: one reused for a denial after it carried
 * an approval keeps nothing of the grant, and DECISION reads DENIED with
 * no grant. With two records, one of two denials after the approval
 * reuses its record, whichever order the free list gives them back in. */
PBX_TEST(core_mutants_decision_record_is_exact_and_forgets_its_grant)
{
    th_h *h = th_new(2);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id req = {0, 0};
    pbx_ipc_id g = th_approve(h, &b, sel, true, &req, NULL);
    PBX_REQUIRE(g.gen != 0U);
    const pbx_core_decision *dec = mut_decision(h, req);
    PBX_CHECK_EQ(dec->status, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(dec->job_id, b.ctx.job_id);
    PBX_CHECK_EQ(dec->job_generation, b.ctx.job_gen);
    PBX_CHECK_EQ(dec->request, req.index);
    PBX_CHECK_EQ(dec->request_generation, req.gen);
    PBX_CHECK_EQ(dec->grant, g.index);
    PBX_CHECK_EQ(dec->grant_generation, g.gen);
    PBX_CHECK_EQ(dec->installed_slot, b.target.slot);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, req, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    for (uint32_t k = 0; k < 2U; k++) {
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
        b.ctx.job_gen += 1U;
        pbx_ipc_id id = {0, 0};
        PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        dec = mut_decision(h, id);
        PBX_CHECK_EQ(dec->status, PBX_IPC_OUTCOME_DENIED);
        PBX_CHECK_EQ(dec->job_generation, b.ctx.job_gen);
        PBX_CHECK_EQ(dec->request, id.index);
        PBX_CHECK_EQ(dec->request_generation, id.gen);
        PBX_CHECK_EQ(dec->grant, PBX_CORE_NIL);
        PBX_CHECK_EQ(dec->grant_generation, 0U);
        PBX_CHECK_EQ(dec->installed_slot, 0U);
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
        PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_POLICY);
        PBX_CHECK_EQ(d.grant.index, 0U);
        PBX_CHECK_EQ(d.grant.gen, 0U);
        PBX_CHECK_EQ(d.installed_slot, 0U);
    }
    th_free(h);
}

/* A request parked on vfsd is spliced behind a request already ready
 * when the route drains; cancelling the spliced one before the core
 * steps must unlink it alone, so the one ahead of it still runs to its
 * approval. */
PBX_TEST(core_mutants_cancel_after_splice_keeps_the_queue_ahead)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    pbx_ipc_id parked = mut_open(h, false);
    PBX_REQUIRE(
        h->core.queues[PBX_CORE_Q_PARK_REQUEST + PBX_CORE_ROUTE_VFSD].count ==
        1U);
    pbx_ipc_id ready = {0, 0};
    b.ctx.job_id += 1U;
    PBX_REQUIRE(th_open(h, &b, sel, &ready) == 0U);
    PBX_REQUIRE(h->core.queues[PBX_CORE_Q_INTAKE].count == 1U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_INTAKE].count, 2U);
    PBX_CHECK_EQ(th_cancel(h, parked), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, ready, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    TH_CHECK_OUTCOME(h, parked, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    th_free(h);
}

/* Every way an approval decided but not yet published is ended (the
 * grant form of CANCEL, the exact CANCEL, EXPIRE of its job) marks the
 * request cancelled at once, as does a CANCEL of a request still
 * resolving; the mark is what inspection reports while release runs. */
PBX_TEST(core_mutants_every_cancel_path_marks_the_request)
{
    for (int how = 0; how < 4; how++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        pbx_ipc_id id = {0, 0};
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
        if (how < 3) {
            /* Hold the scope deletion so the approval stays unpublished. */
            h->hold_slot = TH_T_FIRST;
            PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
            th_run(h);
        } else {
            PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
            PBX_REQUIRE(th_run_to(h, "policy") != TH_NONE);
        }
        const pbx_core_request *r =
            pbx_core_inspect_request(&h->core, id.index);
        PBX_CHECK_EQ(r->flags & PBX_CORE_REQ_F_CANCELLED, 0U);
        /* Where the request's state takes CANCEL, that exact transition
         * is the one taken (and counted). */
        size_t row = pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST,
                                       (pbx_core_state)r->link.state,
                                       PBX_CORE_EV_CANCEL);
        uint32_t hits = row != SIZE_MAX ? h->core.fsm_hits[row] : 0U;
        if (how == 0) {
            pbx_ipc_id g = pbx_core_inspect_id(
                &h->core, PBX_BOOTSTRAP_POOL_GRANTS, r->grant);
            PBX_CHECK_EQ(th_cancel_grant(h, g), 0U);
        } else if (how == 1) {
            PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD,
                                   PBX_IPC_EXPIRE_JOB, b.ctx.job_id,
                                   b.ctx.job_gen, 0),
                         0U);
        } else {
            PBX_CHECK_EQ(th_cancel(h, id), 0U);
        }
        PBX_CHECK_EQ(r->flags & PBX_CORE_REQ_F_CANCELLED,
                     PBX_CORE_REQ_F_CANCELLED);
        if (row != SIZE_MAX) {
            PBX_CHECK_EQ(h->core.fsm_hits[row], hits + 1U);
        }
        h->hold_slot = PBX_CORE_SLOT_NONE;
        pbx_core_on_tick(&h->core);
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
        PBX_CHECK(th_quiescent(h));
        th_free(h);
    }
}

/* ---- peer replies nobody asked for --------------------------------------- */

/* A peer reply that matches no outstanding call has its receipt deleted;
 * a permanent rejection of that deletion is the cleanup fail-stop, with
 * its own error returned to the caller. After a fail-stop the core is not
 * ready: a later reply and a later time step are refused as such. */
PBX_TEST(core_mutants_unsolicited_reply_rejected_deletion_fail_stops)
{
    th_h *h = th_new(4);
    uint8_t frame[PBX_IPC_HEADER_BYTES];
    size_t len = 0;
    pbx_ipc_id nobody = {3U, 9U};
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_RESOLVE, nobody,
                                            PBX_E_IPC_BOUND, frame,
                                            sizeof(frame), &len) == PBX_OK);
    uint32_t s = th_put_cap(h, 70U, PBX_CAPABI_KIND_ENDPOINT,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    PBX_CHECK_EQ(pbx_core_on_peer_reply(&h->core, PBX_CORE_ROUTE_VFSD,
                                        PBX_CORE_SLOT_NONE, frame, len, &s, 1U),
                 PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    PBX_CHECK_EQ(pbx_core_on_peer_reply(&h->core, PBX_CORE_ROUTE_VFSD,
                                        PBX_CORE_SLOT_NONE, frame, len, NULL,
                                        0U),
                 PBX_E_CORE_NOT_READY);
    PBX_CHECK_EQ(pbx_core_on_time(&h->core, 1000U), PBX_E_CORE_NOT_READY);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD),
                 PBX_E_CORE_NOT_READY);
    th_free(h);
}

/* Without a rejection the unsolicited receipt is simply deleted and the
 * core goes on. */
PBX_TEST(core_mutants_unsolicited_reply_receipt_is_deleted)
{
    th_h *h = th_new(4);
    uint8_t frame[PBX_IPC_HEADER_BYTES];
    size_t len = 0;
    pbx_ipc_id nobody = {3U, 9U};
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_RESOLVE, nobody,
                                            PBX_E_IPC_BOUND, frame,
                                            sizeof(frame), &len) == PBX_OK);
    uint32_t s = th_put_cap(h, 70U, PBX_CAPABI_KIND_ENDPOINT,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    PBX_CHECK_EQ(pbx_core_on_peer_reply(&h->core, PBX_CORE_ROUTE_VFSD,
                                        PBX_CORE_SLOT_NONE, frame, len, &s, 1U),
                 PBX_OK);
    TH_TRACE(h, "del=70");
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A receipt of a judged peer reply whose deletion the kernel rejects
 * permanently is the cleanup fail-stop (not a progress one). */
PBX_TEST(core_mutants_rejected_receipt_deletion_in_a_judged_reply_is_cleanup)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_SURPLUS, 0);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    th_free(h);
}

/* An idle core has no call outstanding, whatever time it was told. */
PBX_TEST(core_mutants_idle_core_counts_no_calls_at_any_time)
{
    th_h *h = th_new(4);
    PBX_CHECK_EQ(pbx_core_on_time(&h->core, 0x123456789ULL), PBX_OK);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    /* Each call counts while its reply is pending, on every route. */
    static const char *const names[] = {"resolve", "policy", "install",
                                        "detach"};
    pbx_ipc_id id = {0, 0};
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    for (size_t k = 0; k < PBX_ARRAY_LEN(names); k++) {
        PBX_REQUIRE(th_run_to(h, names[k]) != TH_NONE);
        PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
        /* The call record names its owner and keeps its reserved field
         * zero, as the layout documents. */
        const pbx_core_request *r =
            pbx_core_inspect_request(&h->core, id.index);
        PBX_REQUIRE(r->call != PBX_CORE_NIL);
        const pbx_core_outcall *oc = pbx_core_inspect_call(&h->core, r->call);
        PBX_CHECK_EQ(oc->owner, id.index);
        PBX_CHECK_EQ(oc->reserved, 0U);
    }
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    b.ctx.job_id += 1U;
    pbx_ipc_id g = th_approve(h, &b, sel, false, NULL, NULL);
    PBX_CHECK(g.gen != 0U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    th_free(h);
}

/* ---- public replies ------------------------------------------------------ */

/* Sends frame (seq patched in) from the broker and returns the reply's
 * header, which must decode. */
static pbx_ipc_frame mut_public(th_h *h, uint8_t *frame, size_t len,
                                uint32_t seq, pbx_core_out *out)
{
    pbx_err core = PBX_OK;
    pbx_ipc_frame f;
    memset(&f, 0, sizeof(f));
    PBX_REQUIRE(pbx_ipc_frame_set_seq(frame, len, seq) == PBX_OK);
    (void)th_public(h, TH_BROKER, frame, len, NULL, 0, &core, out);
    PBX_CHECK_EQ(core, PBX_OK);
    PBX_REQUIRE(out->len >= PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(out->frame, out->len, 0U, &f), PBX_OK);
    return f;
}

/* A SELECTOR for no live request is refused with an error reply of
 * SELECTOR's own reply op, and every public reply echoes the seq of the
 * frame it answers, the error replies included. */
PBX_TEST(core_mutants_selector_error_reply_op_and_seq_echo)
{
    th_h *h = th_new(4);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    pbx_ipc_id nobody = {2U, 7U};
    pbx_ipc_selector s = {0U, SEL_LEN, sel};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_selector_encode(nobody, &s, buf, sizeof(buf), &n) ==
                PBX_OK);
    pbx_ipc_frame f = mut_public(h, buf, n, 0x5EC0001U, &out);
    PBX_CHECK_EQ(f.op, PBX_IPC_OP_SELECTOR | PBX_IPC_REPLY_BIT);
    PBX_CHECK(f.status != 0U);
    PBX_CHECK_EQ(f.seq, 0x5EC0001U);
    /* A successful reply echoes its seq too. */
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) == PBX_OK);
    f = mut_public(h, buf, n, 0x5EC0002U, &out);
    PBX_CHECK_EQ(f.op, PBX_IPC_OP_BEGIN | PBX_IPC_REPLY_BIT);
    PBX_CHECK_EQ(f.status, 0U);
    PBX_CHECK_EQ(f.seq, 0x5EC0002U);
    th_free(h);
}

/* ---- generation-zero CANCEL ---------------------------------------------- */

/* Opens n requests of one job (one chain), each with its own session
 * unless same, committed and not yet stepped (so each is cancellable). */
static void mut_open_job(th_h *h, uint32_t n, bool same, pbx_ipc_begin *b,
                         pbx_ipc_id *ids)
{
    for (uint32_t k = 0; k < n; k++) {
        th_default_begin(b, sel, SEL_LEN);
        b->ctx.session = 0x5E55000U + (same ? 0U : k);
        PBX_REQUIRE(th_open(h, b, sel, &ids[k]) == 0U);
    }
}

/* The walk of a correlation CANCEL covers the whole chain: the one
 * matching request, opened first and so last in its chain, is found
 * behind every other request of the pool. */
PBX_TEST(core_mutants_correlation_cancel_walks_the_whole_chain)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id ids[4];
    mut_open_job(h, 4U, false, &b, ids);
    PBX_CHECK_EQ(th_cancel_corr(h, b.ctx.job_id, b.ctx.job_gen, 0x5E55000U),
                 0U);
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, ids[0], &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    th_free(h);
}

/* With three matching requests the walk stops at the second match
 * (ambiguity needs no more evidence): two index visits, and the CANCEL
 * is refused as ambiguous. */
PBX_TEST(core_mutants_correlation_cancel_stops_at_the_second_match)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id ids[3];
    mut_open_job(h, 3U, true, &b, ids);
    uint32_t before = h->core.index_visits;
    PBX_CHECK_EQ(th_cancel_corr(h, b.ctx.job_id, b.ctx.job_gen, 0x5E55000U),
                 PBX_E_CORE_AMBIGUOUS);
    PBX_CHECK_EQ(h->core.index_visits - before, 2U);
    th_free(h);
}

/* ---- receipts and reservations ------------------------------------------- */

/* An alias the ops layer derived with the wrong rights is deleted and
 * the request denied with PEER_FAILED. */
PBX_TEST(core_mutants_alias_with_wrong_rights_denies_peer_failed)
{
    th_h *h = th_new(4);
    h->alias_rights = PBX_CAPABI_RIGHT_SEND | PBX_CAPABI_RIGHT_MANAGE;
    pbx_ipc_id id = mut_open(h, true);
    mut_denied(h, id, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* At every peer step (RESOLVE, POLICY, INSTALL, DETACH, and PROMPT after a
 * PROMPT verdict), a surplus receipt whose deletion the kernel rejects is
 * the cleanup fail-stop, and the reply's delivery returns that error. */
PBX_TEST(core_mutants_rejected_surplus_at_every_step_is_cleanup)
{
    static const struct {
        pbx_core_route route;
        uint32_t skip; /* answers on that route before the surplus one */
        bool prompt;
    } rows[] = {
        {PBX_CORE_ROUTE_VFSD, 0U, false},  {PBX_CORE_ROUTE_TTYD, 0U, false},
        {PBX_CORE_ROUTE_PROCD, 0U, false}, {PBX_CORE_ROUTE_VFSD, 1U, false},
        {PBX_CORE_ROUTE_TTYD, 1U, true},
    };
    for (size_t k = 0; k < PBX_ARRAY_LEN(rows); k++) {
        th_h *h = th_new(4);
        if (rows[k].prompt) {
            th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        } else {
            for (uint32_t s = 0; s < rows[k].skip; s++) {
                th_push(h, rows[k].route, TH_OK, 0, 0);
            }
        }
        th_push(h, rows[k].route, TH_OK, TH_M_SURPLUS, 0);
        th_push_del(h, PBX_CORE_DELETE_REJECTED);
        pbx_ipc_begin b;
        pbx_ipc_id id = {0, 0};
        th_default_begin(&b, sel, SEL_LEN);
        PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
        th_run(h);
        if (pbx_core_exit_status(&h->core) != PBX_CORE_EXIT_CLEANUP ||
            h->deliver_err != PBX_E_CORE_CLEANUP_REJECTED) {
            pbx_test_failf(__FILE__, __LINE__, "row %zu: exit %u, %s", k,
                           (unsigned)pbx_core_exit_status(&h->core),
                           pbx_err_name(h->deliver_err));
        }
        th_free(h);
    }
}

/* A request cancelled before its COMMIT gives its reserved destination
 * back when the kernel reports it empty (not only as a placeholder). */
PBX_TEST(core_mutants_uncommitted_cancel_releases_an_empty_destination)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    if (dest >= TH_SLOTS) {
        PBX_REQUIRE(dest < TH_SLOTS);
        th_free(h);
        return;
    }
    h->slots[dest].kind = PBX_CAPABI_KIND_EMPTY;
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_clear_trace(h);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(!h->slots[dest].reserved);
    th_free(h);
}

/* A request parked on a route records which route it waits for, and
 * forgets it once it runs again. */
PBX_TEST(core_mutants_parked_request_records_its_route)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    pbx_ipc_id id = mut_open(h, false);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(r->parked_route, PBX_CORE_ROUTE_VFSD);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    PBX_REQUIRE(th_run_to(h, "view+") != TH_NONE);
    PBX_CHECK_EQ(r->parked_route, PBX_CORE_NIL);
    th_free(h);
}

/* A request just begun carries no flag, no denial reason and no parked
 * route. */
PBX_TEST(core_mutants_begun_request_is_clean)
{
    /* One record each: the second request reuses the first's records,
     * the first having ended DENIED and marked cancelled-free. */
    th_h *h = th_new(1);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    pbx_ipc_id first = mut_open(h, false);
    mut_denied(h, first, PBX_IPC_REASON_POLICY);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.job_gen += 1U;
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_CHECK_EQ(id.index, first.index);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(r->flags, 0U);
    PBX_CHECK_EQ(r->reason, 0U);
    PBX_CHECK_EQ(r->parked_route, PBX_CORE_NIL);
    th_free(h);
}

/* An alias the ops layer cannot derive for now (BUSY) waits for a tick
 * and is then derived: the request is approved, not denied. */
PBX_TEST(core_mutants_alias_busy_waits_for_a_tick)
{
    th_h *h = th_new(4);
    th_push_alias(h, PBX_CORE_IO_BUSY);
    pbx_ipc_id id = mut_open(h, true);
    PBX_CHECK_EQ(h->wake_count, 0U);
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(xfer != PBX_CORE_SLOT_NONE);
    th_free(h);
}

/* ---- deadlines and error replies ----------------------------------------- */

/* While one call is outstanding, the next deadline the runtime must wake
 * for is that call's, in its own class: vfsd's DETACH included. */
PBX_TEST(core_mutants_next_deadline_of_every_call_class)
{
    uint32_t ms[PBX_BOOTSTRAP_TIME_COUNT];
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        ms[t] = 1100U * (uint32_t)(t + 1U);
    }
    const struct {
        const char *name;
        uint32_t at;
    } calls[] = {
        {"resolve", ms[PBX_BOOTSTRAP_TIME_SCOPE]},
        {"policy", ms[PBX_BOOTSTRAP_TIME_TTYD]},
        {"install", ms[PBX_BOOTSTRAP_TIME_PROCD]},
        {"detach", ms[PBX_BOOTSTRAP_TIME_VFSD]},
    };
    th_h *h = th_new_times(4, 4, ms);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint64_t at = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    for (size_t k = 0; k < PBX_ARRAY_LEN(calls); k++) {
        PBX_REQUIRE(th_run_to(h, calls[k].name) != TH_NONE);
        PBX_CHECK(pbx_core_next_deadline(&h->core, &at));
        PBX_CHECK_EQ(at, calls[k].at);
    }
    th_free(h);
}

/* An EXPIRE from anyone but launchd is refused in EXPIRE's own reply
 * form. */
PBX_TEST(core_mutants_refused_expire_reply_op)
{
    th_h *h = th_new(4);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    pbx_ipc_expire e = {PBX_IPC_EXPIRE_JOB, 3U, 0x77U, 0U};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_expire_encode(&e, buf, sizeof(buf), &n) == PBX_OK);
    pbx_err core = PBX_OK;
    (void)th_public(h, TH_BADGE, buf, n, NULL, 0, &core, &out);
    pbx_ipc_frame f;
    PBX_REQUIRE(out.len >= PBX_IPC_HEADER_BYTES);
    PBX_REQUIRE(pbx_ipc_frame_decode(out.frame, out.len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(f.op, PBX_IPC_OP_EXPIRE | PBX_IPC_REPLY_BIT);
    PBX_CHECK(f.status != 0U);
    th_free(h);
}

/* A public frame whose header does not decode (here its reserved word
 * is set) is answered with an error reply echoing the raw header's exact
 * request identity; one whose record does not decode, too. */
PBX_TEST(core_mutants_undecodable_frame_echoes_its_identity)
{
    th_h *h = th_new(4);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    pbx_ipc_id id = {0x01020304U, 0x0A0B0C0DU};
    pbx_ipc_selector s = {0U, SEL_LEN, sel};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_selector_encode(id, &s, buf, sizeof(buf), &n) ==
                PBX_OK);
    for (int how = 0; how < 2; how++) {
        uint8_t t[PBX_IPC_FRAME_BYTES_MAX];
        memcpy(t, buf, n);
        if (how == 0) {
            pbx_le_put32(t + PBX_IPC_RESERVED_OFFSET,
                         1U); /* the header's reserved word */
        } else {
            /* The chunk claims one byte more than the body carries. */
            pbx_le_put32(t + PBX_IPC_HEADER_BYTES + 4U, SEL_LEN + 1U);
        }
        pbx_err core = PBX_OK;
        (void)th_public(h, TH_BROKER, t, n, NULL, 0, &core, &out);
        pbx_ipc_frame f;
        PBX_REQUIRE(out.len >= PBX_IPC_HEADER_BYTES);
        PBX_REQUIRE(pbx_ipc_frame_decode(out.frame, out.len, 0U, &f) == PBX_OK);
        PBX_CHECK_EQ(f.op, PBX_IPC_OP_SELECTOR | PBX_IPC_REPLY_BIT);
        PBX_CHECK(f.status != 0U);
        PBX_CHECK_EQ(f.request.index, id.index);
        PBX_CHECK_EQ(f.request.gen, id.gen);
    }
    th_free(h);
}

/* A RESOLVE reply refused for its echo, carrying its object and one
 * surplus receipt, has both deleted: every receipt, not only the
 * first. */
PBX_TEST(core_mutants_refused_reply_deletes_every_receipt)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_WRONG_ECHO | TH_M_SURPLUS, 0);
    pbx_ipc_id id = mut_open(h, false);
    mut_denied(h, id, PBX_IPC_REASON_RESOLVE);
    PBX_CHECK(th_conserved(h));
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- more receipts, deadlines and evidence ------------------------------- */

/* A request begun and never committed ends at its OPEN deadline marked
 * cancelled. */
PBX_TEST(core_mutants_open_deadline_marks_the_request_cancelled)
{
    uint32_t t[PBX_BOOTSTRAP_TIME_COUNT];
    for (size_t k = 0; k < (size_t)PBX_BOOTSTRAP_TIME_COUNT; k++) {
        t[k] = 5000U;
    }
    t[PBX_BOOTSTRAP_TIME_OPEN] = 700U;
    th_h *h = th_new_times(4, 4, t);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(r->flags & PBX_CORE_REQ_F_CANCELLED, 0U);
    PBX_CHECK_EQ(th_time(h, 700U), PBX_OK);
    PBX_CHECK_EQ(r->flags & PBX_CORE_REQ_F_CANCELLED, PBX_CORE_REQ_F_CANCELLED);
    th_free(h);
}

/* A peer reply with more receipts than any record allows is held back
 * untouched (the runtime keeps it), whatever it is. */
PBX_TEST(core_mutants_reply_with_too_many_receipts_is_held)
{
    th_h *h = th_new(4);
    uint8_t frame[PBX_IPC_HEADER_BYTES];
    size_t len = 0;
    pbx_ipc_id nobody = {3U, 9U};
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_RESOLVE, nobody,
                                            PBX_E_IPC_BOUND, frame,
                                            sizeof(frame), &len) == PBX_OK);
    uint32_t s[PBX_CORE_RECV_SLOTS_MAX + 1U];
    for (size_t k = 0; k < PBX_ARRAY_LEN(s); k++) {
        s[k] = th_put_cap(h, (uint32_t)(70U + k), PBX_CAPABI_KIND_ENDPOINT,
                          PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    }
    PBX_CHECK_EQ(pbx_core_on_peer_reply(&h->core, PBX_CORE_ROUTE_VFSD,
                                        PBX_CORE_SLOT_NONE, frame, len, s,
                                        PBX_ARRAY_LEN(s)),
                 PBX_E_CORE_INTAKE_HELD);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    /* Exactly the most any record allows is taken (here: deleted, the
     * reply matching no call). */
    PBX_CHECK_EQ(pbx_core_on_peer_reply(&h->core, PBX_CORE_ROUTE_VFSD,
                                        PBX_CORE_SLOT_NONE, frame, len, s,
                                        PBX_CORE_RECV_SLOTS_MAX),
                 PBX_OK);
    PBX_CHECK_EQ(h->deleted, PBX_CORE_RECV_SLOTS_MAX);
    th_free(h);
}

/* Receipts of peer replies whose deletion must be retried are tracked as
 * peer orphans, never counted against the public intake cap: an
 * unsolicited reply's and a judged reply's surplus alike. */
PBX_TEST(core_mutants_peer_receipt_orphans_are_not_public)
{
    th_h *h = th_new(4);
    uint8_t frame[PBX_IPC_HEADER_BYTES];
    size_t len = 0;
    pbx_ipc_id nobody = {3U, 9U};
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_RESOLVE, nobody,
                                            PBX_E_IPC_BOUND, frame,
                                            sizeof(frame), &len) == PBX_OK);
    uint32_t s = th_put_cap(h, 70U, PBX_CAPABI_KIND_ENDPOINT,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    PBX_CHECK_EQ(pbx_core_on_peer_reply(&h->core, PBX_CORE_ROUTE_VFSD,
                                        PBX_CORE_SLOT_NONE, frame, len, &s, 1U),
                 PBX_OK);
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    th_free(h);
    /* A surplus receipt of a judged RESOLVE reply, every deletion held
     * transient so the orphan stays. */
    h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_SURPLUS, 0);
    h->hold_all = true;
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK(pbx_core_held_caps(&h->core) > 0U);
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    th_free(h);
}

/* The resolution evidence binds the selector digest vfsd echoed (which
 * is the request's own). */
PBX_TEST(core_mutants_resolution_evidence_keeps_the_digest)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    PBX_REQUIRE(th_run_to(h, "policy") != TH_NONE);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    const pbx_core_resolution *ev =
        (const pbx_core_resolution *)pbx_core_inspect_record(
            &h->core, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution);
    PBX_CHECK(memcmp(ev->selector_digest, b.selector_digest,
                     PBX_IPC_DIGEST_BYTES) == 0);
    th_free(h);
}

/* Decodes the pending RESOLVE call the core sent (run to it first); false
 * when none is pending or it does not decode. */
static bool mut_pending_resolve(th_h *h, pbx_ipc_resolve *q)
{
    uint32_t k = th_run_to(h, "resolve");
    pbx_ipc_frame f;
    if (k == TH_NONE || k >= TH_PEND_MAX) {
        return false;
    }
    return pbx_ipc_frame_decode(h->pend[k].frame, h->pend[k].len, 0U, &f) ==
               PBX_OK &&
           pbx_ipc_resolve_decode(&f, q) == PBX_OK;
}

/* A selector whose last chunk holds a single byte reaches vfsd whole. */
PBX_TEST(core_mutants_selector_with_a_one_byte_last_chunk)
{
    static uint8_t big[PBX_CORE_SELECTOR_CHUNK_DATA_BYTES + 1U];
    for (size_t i = 0; i < sizeof(big); i++) {
        big[i] = (uint8_t)('a' + i % 26U);
    }
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, big, (uint32_t)sizeof(big));
    PBX_REQUIRE(th_open(h, &b, big, &id) == 0U);
    pbx_ipc_resolve q;
    PBX_REQUIRE(mut_pending_resolve(h, &q));
    PBX_CHECK_EQ(q.selector_len, sizeof(big));
    PBX_CHECK(memcmp(q.selector, big, sizeof(big)) == 0);
    th_free(h);
}

/* A peer's op sent on the public route is refused for its partition, in
 * its own reply form: RESOLVE, the first op after the public ones,
 * included. */
PBX_TEST(core_mutants_peer_op_on_the_public_route_is_refused)
{
    th_h *h = th_new(4);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    pbx_ipc_resolve q;
    memset(&q, 0, sizeof(q));
    q.operation = PBX_IPC_OPERATION_READ;
    q.object_class = PBX_IPC_CLASS_FILE;
    q.selector_len = SEL_LEN;
    q.selector = sel;
    pbx_ipc_id id = {1U, 1U};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_resolve_encode(id, &q, buf, sizeof(buf), &n) == PBX_OK);
    pbx_err core = PBX_OK;
    (void)th_public(h, TH_BROKER, buf, n, NULL, 0, &core, &out);
    pbx_ipc_frame f;
    PBX_REQUIRE(out.len >= PBX_IPC_HEADER_BYTES);
    PBX_REQUIRE(pbx_ipc_frame_decode(out.frame, out.len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(f.op, PBX_IPC_OP_RESOLVE | PBX_IPC_REPLY_BIT);
    PBX_CHECK_EQ(f.status, (uint16_t)PBX_E_CORE_PARTITION);
    th_free(h);
}

/* A trusted prompt counts the RETRY answers of its own request only: a
 * prompt record reused by the next request starts again from zero. */
PBX_TEST(core_mutants_prompt_retries_count_per_request)
{
    th_h *h = th_new(1);
    for (uint32_t k = 0; k < 2U; k++) {
        pbx_ipc_begin b;
        pbx_ipc_id id = {0, 0};
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.job_gen += k;
        PBX_REQUIRE(th_open_parked(h, &b, sel, &id) == 0U);
        const pbx_core_request *r =
            pbx_core_inspect_request(&h->core, id.index);
        const pbx_core_prompt *p =
            (const pbx_core_prompt *)pbx_core_inspect_record(
                &h->core, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
        PBX_CHECK_EQ(p->retries, 1U);
        PBX_CHECK_EQ(th_cancel(h, id), 0U);
        th_run(h);
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    }
    th_free(h);
}

/* A refused BEGIN is answered in BEGIN's own reply form, and a reply
 * that delivers no decision carries no delivery token. */
PBX_TEST(core_mutants_refused_begin_reply_op_and_no_token)
{
    th_h *h = th_new(4);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) == PBX_OK);
    memset(&out, 0xA5, sizeof(out));
    pbx_err core = PBX_OK;
    (void)th_public(h, TH_BADGE, buf, n, NULL, 0, &core, &out);
    pbx_ipc_frame f;
    PBX_REQUIRE(out.len >= PBX_IPC_HEADER_BYTES && out.len <= sizeof(buf));
    PBX_REQUIRE(pbx_ipc_frame_decode(out.frame, out.len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(f.op, PBX_IPC_OP_BEGIN | PBX_IPC_REPLY_BIT);
    PBX_CHECK_EQ(f.status, (uint16_t)PBX_E_CORE_BROKER);
    PBX_CHECK_EQ(out.token, PBX_CORE_NIL);
    PBX_CHECK_EQ(out.token_generation, 0U);
    PBX_CHECK_EQ(out.transfer_slot, PBX_CORE_SLOT_NONE);
    th_free(h);
}

/* NOT_FOUND evidence records the class vfsd found missing. */
PBX_TEST(core_mutants_not_found_evidence_keeps_the_missing_class)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_NOT_FOUND, 0, PBX_IPC_CLASS_DIRECTORY);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.object_class = PBX_IPC_CLASS_DIRECTORY;
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    const pbx_core_resolution *ev =
        (const pbx_core_resolution *)pbx_core_inspect_record(
            &h->core, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution);
    PBX_CHECK_EQ(ev->not_found, 1U);
    PBX_CHECK_EQ(ev->missing_class, PBX_IPC_CLASS_DIRECTORY);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_NOT_FOUND);
    th_free(h);
}

/* In runtime-reply mode the request's handle slot holds the alias the
 * ops layer derived, recorded as an alias. */
PBX_TEST(core_mutants_runtime_handle_holds_an_alias)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    PBX_REQUIRE(th_run_to(h, "detach") != TH_NONE);
    PBX_CHECK_EQ(mut_tslot_kind(h, id, 2), PBX_CAPABI_RECEIPT_ALIAS);
    th_free(h);
}

/* A one-byte selector is stored and reaches vfsd. */
PBX_TEST(core_mutants_one_byte_selector_reaches_vfsd)
{
    static const uint8_t one[] = "x";
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, one, 1U);
    PBX_REQUIRE(th_open(h, &b, one, &id) == 0U);
    pbx_ipc_resolve q;
    PBX_REQUIRE(mut_pending_resolve(h, &q));
    PBX_CHECK_EQ(q.selector_len, 1U);
    PBX_CHECK_EQ(q.selector[0], 'x');
    th_free(h);
}

/* A BEGIN whose record does not decode is refused in BEGIN's own reply
 * form too. */
PBX_TEST(core_mutants_malformed_begin_reply_op)
{
    th_h *h = th_new(4);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) == PBX_OK);
    buf[PBX_IPC_HEADER_BYTES + 51U] = 1U; /* a reserved byte */
    pbx_err core = PBX_OK;
    (void)th_public(h, TH_BROKER, buf, n, NULL, 0, &core, &out);
    pbx_ipc_frame f;
    PBX_REQUIRE(out.len >= PBX_IPC_HEADER_BYTES);
    PBX_REQUIRE(pbx_ipc_frame_decode(out.frame, out.len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(f.op, PBX_IPC_OP_BEGIN | PBX_IPC_REPLY_BIT);
    PBX_CHECK_EQ(f.status, (uint16_t)PBX_E_IPC_RESERVED);
    th_free(h);
}

/* A transient-slot record that served as a public orphan and is reused
 * by a request no longer reads as a public orphan. */
PBX_TEST(core_mutants_reused_orphan_record_is_not_public)
{
    th_h *h = th_new(4);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    size_t n = 0;
    pbx_ipc_id id = {1U, 1U};
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf),
                                     &n) == PBX_OK);
    uint32_t s = th_put_cap(h, 70U, PBX_CAPABI_KIND_ENDPOINT,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    pbx_err core = PBX_OK;
    (void)th_public(h, TH_BROKER, buf, n, &s, 1U, &core, &out);
    PBX_CHECK_EQ(h->core.public_orphans, 1U);
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    pbx_ipc_begin b;
    pbx_ipc_id rid = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &rid) == 0U);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, rid.index);
    PBX_CHECK_EQ(pbx_core_inspect_tslot(&h->core, r->scope_tslot)->owner_kind,
                 0U);
    PBX_CHECK_EQ(pbx_core_inspect_tslot(&h->core, r->object_tslot)->owner_kind,
                 0U);
    PBX_CHECK_EQ(pbx_core_inspect_tslot(&h->core, r->handle_tslot)->owner_kind,
                 0U);
    th_free(h);
}
