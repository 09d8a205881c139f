/*
 * test_core_backpressure.c: full pools, peer and wake backpressure,
 * fail-stop exit statuses and round-robin progress, through scripted ops.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

PBX_TEST(core_full_pool_answers_busy_and_drops_nothing)
{
    th_h *h = th_new(1);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_id other = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    /* The one request slot is taken: BUSY, nothing reserved. */
    PBX_CHECK_EQ(th_begin(h, &b, &other, &dest), PBX_E_CORE_BUSY);
    TH_TRACE(h, "reserve=64");
    th_run(h);
    PBX_CHECK_EQ(th_begin(h, &b, &other, &dest), PBX_E_CORE_BUSY);
    /* The first request was not disturbed by the refusals. */
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    TH_TRACE(h, "resolve@64 <65 policy install^65 <66 detach>65 view+ "
                "del=64 release=64 wake");
    /* Retired on delivery, the records are free again; the live grant
     * keeps its own slot, so a second grant finds the pool full. */
    PBX_CHECK_EQ(th_begin(h, &b, &other, &dest), PBX_E_CORE_BUSY);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(th_begin(h, &b, &other, &dest), 0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

PBX_TEST(core_peer_busy_parks_keeps_slots_and_resumes)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_PROCD, TH_BUSY, 0, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64:busy");
    /* Deferred: no retry until the next tick; the scope is kept. The
     * scope pushed back, not vfsd's route, so no route's readiness
     * (vfsd's included) wakes it. (Split-phase change: scope backpressure
     * used to wait for the next public frame; now it waits for a tick,
     * and a public frame retries nothing.) */
    PBX_CHECK_EQ(th_run(h), 0U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "resolve@64 <65 policy:busy");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 2U);
    PBX_CHECK(th_conserved(h));
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    th_run(h);
    TH_TRACE(h, "policy install^65:busy");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_PROCD);
    th_run(h);
    TH_TRACE(h, "install^65 <66 detach>65 view+ del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

PBX_TEST(core_detach_and_view_busy_park_before_approval)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 "
                "detach>65:busy");
    /* The BUSY DETACH moved nothing: the object is still held. */
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 3U);
    PBX_CHECK(th_conserved(h));
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    th_run(h);
    TH_TRACE(h, "detach>65 view+:busy");
    /* No approval before the ACTIVE row is acknowledged. */
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    th_run(h);
    TH_TRACE(h, "view+ del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_free(h);
}

PBX_TEST(core_wake_busy_retains_decision_until_route_ready)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    th_push_wake(h, PBX_CORE_IO_BUSY);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy detach>65 del=64 "
                "release=64 wake:busy");
    /* Not polled: nothing happens until launchd's route is ready. */
    PBX_CHECK_EQ(th_run(h), 0U);
    PBX_CHECK_EQ(h->wake_count, 0U);
    /* The reply may be delivered first; the decision is still kept
     * until the wake is queued. */
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_STATE);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_LAUNCHD);
    th_run(h);
    TH_TRACE(h, "wake");
    PBX_CHECK_EQ(h->last_wake.index, id.index);
    PBX_CHECK_EQ(h->last_wake.gen, id.gen);
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_undelivered_reply_keeps_terminal_decision)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_NOT_FOUND, 0, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    h->deliver = false;
    for (int k = 0; k < 3; k++) {
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_NOT_FOUND);
    }
    h->deliver = true;
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), 0U);
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
    /* A delivery report for a retired token is refused. */
    PBX_CHECK_EQ(pbx_core_on_reply_delivered(&h->core, id.index, id.gen, true),
                 PBX_E_CORE_TOKEN);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A wake launchd's route refuses (failed, not backpressure) is no
 * fail-stop: the decision is kept, the wake is retried on the next tick
 * and goes out once; the decision is delivered meanwhile. */
PBX_TEST(core_refused_wake_is_retried_never_a_fail_stop)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    th_push_wake(h, PBX_CORE_IO_FAILED);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK_EQ(h->wake_count, 0U);
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    /* No step retries it before the tick: never polled. */
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->wake_count, 1U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_free(h);
}

/* Drives a permanent rejection of the revocation-handle deletion after a
 * CONSUME: the cleanup fail-stop. */
static pbx_core_exit fail_stop_cleanup(void)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_REQUIRE(th_decision(h, id, &d, &xfer) == 0U);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    th_clear_trace(h);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    th_run(h);
    TH_TRACE(h, "del!66");
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_CLEANUP_REJECTED);
    pbx_core_exit st = pbx_core_exit_status(&h->core);
    th_free(h);
    return st;
}

/* Drives a retained request whose state no step serves: the progression
 * fail-stop. */
static pbx_core_exit fail_stop_progress(void)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    ((pbx_core_request *)pbx_core_inspect_fault(
         &h->core, PBX_BOOTSTRAP_POOL_REQUESTS, id.index))
        ->link.state = (uint16_t)PBX_CORE_ST_DECIDED;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_INCONSISTENT);
    TH_TRACE(h, "reserve=64");
    pbx_core_exit st = pbx_core_exit_status(&h->core);
    /* Stopped: no further step is taken. */
    bool progressed = true;
    PBX_CHECK_EQ(pbx_core_step(&h->core, &progressed), PBX_E_CORE_NOT_READY);
    PBX_CHECK(!progressed);
    th_free(h);
    return st;
}

/* Each core fail-stop, driven, reports its own documented status
 * (pbx_core.h: cleanup 65, progression 66, notification 67), distinct
 * from each other and from the runtime's public status 64. */
PBX_TEST(core_fail_stops_have_distinct_exit_statuses)
{
    /* 67, a notification failure, is retired: a refused wake is retried
     * (core_refused_wake_is_retried_never_a_fail_stop). */
    pbx_core_exit got[2] = {fail_stop_cleanup(), fail_stop_progress()};
    static const unsigned want[2] = {65U, 66U};
    for (size_t k = 0; k < 2U; k++) {
        PBX_CHECK_EQ((unsigned)got[k], want[k]);
        PBX_CHECK((unsigned)got[k] != (unsigned)PBX_CORE_EXIT_PUBLIC);
        for (size_t j = 0; j < k; j++) {
            PBX_CHECK((unsigned)got[j] != (unsigned)got[k]);
        }
    }
    PBX_CHECK_EQ((unsigned)PBX_CORE_EXIT_PUBLIC, 64U);
}

PBX_TEST(core_transient_cleanup_retries_and_keeps_tracking)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_REQUIRE(th_decision(h, id, &d, &xfer) == 0U);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    th_clear_trace(h);
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    th_run(h);
    /* REMOVE waits for the revocation handle to be proven deleted; the
     * retry waits for a tick, it is not polled. */
    TH_TRACE(h, "del~66");
    PBX_CHECK_EQ(th_run(h), 0U);
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_one_transition_per_step_round_robin)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id c = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &a) == 0U);
    PBX_REQUIRE(th_open(h, &b, sel, &c) == 0U);
    th_clear_trace(h);
    /* Intake is FIFO and one step is one transition. */
    PBX_CHECK(th_step(h));
    TH_TRACE(h, "resolve@64 <66");
    PBX_CHECK(th_step(h));
    TH_TRACE(h, "resolve@65 <67");
    PBX_CHECK(th_step(h));
    TH_TRACE(h, "policy");
    /* Cleanup work (an orphaned receipt) is served between intake
     * steps rather than after all of them. */
    uint8_t buf[64];
    pbx_core_out out;
    pbx_err core = PBX_OK;
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, a, buf, sizeof(buf),
                                     &n) == PBX_OK);
    uint32_t s = th_put_cap(h, 90U, PBX_CAPABI_KIND_ENDPOINT,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    PBX_CHECK_EQ(th_public(h, TH_BADGE, buf, n, &s, 1, &core, &out),
                 PBX_E_CORE_CLEANUP_PENDING);
    TH_TRACE(h, "del~90");
    PBX_CHECK(th_step(h));
    PBX_CHECK(th_step(h));
    TH_TRACE(h, "del=90 policy");
    th_run(h);
    PBX_CHECK_EQ(h->wake_count, 2U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}
