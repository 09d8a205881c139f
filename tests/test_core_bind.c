/*
 * test_core_bind.c: exact peer acknowledgements the approval and the
 * grant's retirement depend on (DETACH, RETIRE receipt cleanup), the
 * scope identity binding of resolution evidence and the parking of a
 * RESOLVE the scope pushed back on, each asserted as exact effects.
 */
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Opens the default install-mode request and runs it until idle. */
static pbx_ipc_id bind_open(th_h *h)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    return id;
}

/* Asks DECISION and checks a receipt-free terminal outcome. */
static void bind_expect(th_h *h, pbx_ipc_id id, uint8_t outcome)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), 0U);
    PBX_CHECK_EQ(d.outcome, outcome);
    PBX_CHECK_EQ(d.grant.gen, 0U);
    PBX_CHECK_EQ(d.installed_slot, 0U);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
}

/* The state of grant record index, read from the arena. */
static uint32_t bind_grant_state(const th_h *h, uint32_t index)
{
    const pbx_core_pool_state *p = &h->core.pools[PBX_BOOTSTRAP_POOL_GRANTS];
    pbx_core_grant g;
    memcpy(&g,
           h->core.arena + p->offset_bytes +
               (size_t)index * p->record_size_bytes,
           sizeof(g));
    return g.link.state;
}

/* An inexact DETACH echo (wrong object generation) or an error status
 * moved the object to vfsd but is no acknowledgement: the request is
 * denied and the installed grant ends through revoke and RETIRE. (Split-
 * phase change: REMOVE is owed only for a row that went to ttyd; this
 * grant's ACTIVE row was never sent, so no VIEW at all reaches ttyd.) */
PBX_TEST(core_detach_inexact_or_error_denies)
{
    static const uint32_t muts[] = {TH_M_WRONG_ECHO, TH_M_ERR_STATUS};
    for (size_t m = 0; m < 2U; m++) {
        th_h *h = th_new(4);
        th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
        th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, muts[m], 0);
        pbx_ipc_id id = bind_open(h);
        TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 "
                    "detach>65 del=66 retire del=64 release=64 wake");
        PBX_CHECK_EQ(h->last_view.kind, 0U); /* no row, no REMOVE */
        PBX_CHECK_EQ(h->wake_count, 1U);
        bind_expect(h, id, PBX_IPC_OUTCOME_DENIED);
        PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_GRANTS].free_count, 4U);
        PBX_CHECK(th_quiescent(h));
        th_free(h);
    }
}

/* A DETACH transport failure transferred nothing: the request is
 * denied, release tries once more to give the copy back and, that send
 * failing too, deletes powerboxd's copy exactly; the grant ends. (Split-
 * phase change: release now gives the copy back with its own DETACH
 * before deleting it, so vfsd fails twice here; and no REMOVE is owed,
 * the ACTIVE row never having been sent.) */
PBX_TEST(core_detach_transport_failure_denies)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    pbx_ipc_id id = bind_open(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 "
                "detach>65:fail detach>65:fail del=65 del=66 retire del=64 "
                "release=64 wake");
    bind_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* DETACH backpressure parks on vfsd and retries the same exact call. */
PBX_TEST(core_detach_busy_parks_then_approves)
{
    th_h *h = th_new(4);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    pbx_ipc_id id = bind_open(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 "
                "detach>65:busy");
    PBX_CHECK_EQ(
        h->core.queues[PBX_CORE_Q_PARK_REQUEST + PBX_CORE_ROUTE_VFSD].count,
        1U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "detach>65 view+ del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* A RETIRE acknowledgement that is exact but carries a surplus receipt
 * whose deletion the kernel permanently rejects is a cleanup fail-stop:
 * the step reports it, the exit status is CLEANUP and the grant
 * generation does not retire. */
PBX_TEST(core_retire_rejected_receipt_deletion_fail_stops)
{
    th_h *h = th_new(4);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = bind_open(h);
    th_clear_trace(h);
    PBX_REQUIRE(th_decision(h, id, &d, &xfer) == 0U);
    PBX_REQUIRE(d.outcome == PBX_IPC_OUTCOME_APPROVED);
    uint32_t free_grants = h->core.pools[PBX_BOOTSTRAP_POOL_GRANTS].free_count;
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_SURPLUS, 0);
    th_push_del(h, PBX_CORE_DELETE_OK);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire <64 del!64");
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    PBX_CHECK_EQ(h->core.ready, 0U);
    PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_GRANTS].free_count,
                 free_grants);
    PBX_CHECK_EQ(bind_grant_state(h, d.grant.index),
                 (uint32_t)PBX_CORE_ST_RETIRE);
    th_free(h);
}

/* With the scope's identity known to the ops layer, a FOUND whose
 * scope_id differs from it is denied; the object receipt is deleted and
 * no policy, install or view follows. */
PBX_TEST(core_resolve_binds_known_scope_identity)
{
    th_h *h = th_new(4);
    h->scope_identity = TH_SCOPE_ID;
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_WRONG_SCOPE, 0);
    pbx_ipc_id id = bind_open(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 del=65 del=64 release=64 wake");
    bind_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    /* The exact identity resolves and is approved, scope_id carried on. */
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    id = bind_open(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 "
                "detach>65 view+ del=64 release=64 wake");
    PBX_CHECK_EQ(h->last_view.scope_id, TH_SCOPE_ID);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_free(h);
}

/* An unknown (zero) identity keeps the identity-free binding: the same
 * mismatching scope_id is accepted as before. */
PBX_TEST(core_resolve_unknown_scope_identity_keeps_binding)
{
    th_h *h = th_new(4);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_WRONG_SCOPE, 0);
    pbx_ipc_id id = bind_open(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 "
                "detach>65 view+ del=64 release=64 wake");
    PBX_CHECK_EQ(h->last_view.scope_id, TH_SCOPE_ID + 1U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_free(h);
}

/* The orphan count of request record index, read from the arena. */
static uint32_t bind_req_orphans(const th_h *h, uint32_t index)
{
    const pbx_core_pool_state *p = &h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS];
    pbx_core_request r;
    memcpy(&r,
           h->core.arena + p->offset_bytes +
               (size_t)index * p->record_size_bytes,
           sizeof(r));
    return r.orphans;
}

/* Simulator seed 1016: a late COMMIT receipt for a request whose decision
 * is already published, whose deletion must be retried, is junk owned by
 * no request: the published decision cannot wait for it and the request
 * retires on delivery before the orphan lane deletes it. */
PBX_TEST(core_late_commit_receipt_after_publication_is_unowned)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 release=64 wake");
    h->hold_slot = dest;
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_CLEANUP_PENDING);
    PBX_CHECK_EQ(bind_req_orphans(h, id.index), 0U);
    bind_expect(h, id, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].free_count, 4U);
    h->hold_slot = PBX_CORE_SLOT_NONE;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "del=64");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A RESOLVE the scope pushed back on never spins: no route's readiness
 * (vfsd's included) retries it, since no route's writability covers a
 * caller's scope. Changed with split-phase calls: the scope park queue
 * (retried by each public frame) is gone; scope backpressure now defers
 * the request to a tick, so a public frame retries nothing and each tick
 * retries it exactly once, until the scope takes the call. */
PBX_TEST(core_resolve_scope_busy_waits_for_a_tick)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64:busy");
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_DEFER_REQUEST].count, 1U);
    PBX_CHECK_EQ(
        h->core.queues[PBX_CORE_Q_PARK_REQUEST + PBX_CORE_ROUTE_VFSD].count,
        0U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    for (uint32_t n = 0; n < 8U; n++) {
        pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
        PBX_CHECK_EQ(th_run(h), 0U);
    }
    TH_TRACE(h, "");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(th_run(h), 0U);
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    pbx_core_on_tick(&h->core);
    PBX_CHECK_EQ(th_run(h), 1U);
    TH_TRACE(h, "resolve@64:busy");
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), 0U);
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "resolve@64 <65 policy install^65 <66 detach>65 view+ "
                "del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Record index of pool, in the arena (tests only read or corrupt it). */
static uint8_t *bind_rec(th_h *h, pbx_bootstrap_pool pool, uint32_t index)
{
    const pbx_core_pool_state *p = &h->core.pools[pool];
    return h->core.arena + p->offset_bytes +
           (size_t)index * p->record_size_bytes;
}

/* The policy and prompt records carry the exact evidence an exceptional
 * request is installed on, and installation reads it back: an answer that
 * no longer says APPROVE is a progression fail-stop, never an install. */
PBX_TEST(core_prompt_and_policy_records_are_install_evidence)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    pbx_core_request r;
    pbx_core_policy pol;
    pbx_core_prompt pr;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_RETRY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_PROCD, TH_BUSY, 0, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    /* RETRY waits for a tick (split-phase change: it used to park on
     * ttyd's route). */
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy prompt prompt "
                "install^65:busy");
    memcpy(&r, bind_rec(h, PBX_BOOTSTRAP_POOL_REQUESTS, id.index), sizeof(r));
    memcpy(&pol, bind_rec(h, PBX_BOOTSTRAP_POOL_POLICIES, r.policy),
           sizeof(pol));
    memcpy(&pr, bind_rec(h, PBX_BOOTSTRAP_POOL_PROMPTS, r.prompt), sizeof(pr));
    PBX_CHECK_EQ(pol.request, id.index);
    PBX_CHECK_EQ(pol.request_generation, id.gen);
    PBX_CHECK_EQ(pol.verdict, (uint32_t)PBX_IPC_VERDICT_PROMPT);
    PBX_CHECK_EQ(pol.exceptional, 1U);
    PBX_CHECK_EQ(pr.request, id.index);
    PBX_CHECK_EQ(pr.request_generation, id.gen);
    PBX_CHECK_EQ(pr.object.id, UINT64_C(0x0B1EC7001));
    PBX_CHECK_EQ(pr.object.gen, 3U);
    PBX_CHECK_EQ(pr.retries, 1U);
    PBX_CHECK_EQ(pr.answer, (uint32_t)PBX_IPC_ANSWER_APPROVE);
    /* The records disagree with the state: installation refuses. */
    pr.answer = PBX_IPC_ANSWER_DENY;
    memcpy(bind_rec(h, PBX_BOOTSTRAP_POOL_PROMPTS, r.prompt), &pr, sizeof(pr));
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_PROCD);
    th_run(h);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    th_free(h);
}

/* The notification names the request (and its decision record) whose
 * wake it carries. */
PBX_TEST(core_notification_names_request_and_decision)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    pbx_core_request r;
    pbx_core_notification n;
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    th_push_wake(h, PBX_CORE_IO_BUSY);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    memcpy(&r, bind_rec(h, PBX_BOOTSTRAP_POOL_REQUESTS, id.index), sizeof(r));
    memcpy(&n, bind_rec(h, PBX_BOOTSTRAP_POOL_NOTIFICATIONS, r.notification),
           sizeof(n));
    PBX_CHECK_EQ(n.request, id.index);
    PBX_CHECK_EQ(n.decision, r.decision);
    th_free(h);
}
