/*
 * test_mut_m2.c: behaviour of the call, slot and scheduler code of the
 * core (core/pbx_core_calls.c, core/pbx_core_slots.c,
 * core/pbx_core_sched.c) that mutation testing (docs/TESTING.md "Mutation
 * testing") found unchecked: which calls go out when the calls pool is
 * nearly empty, which lane a woken request returns to, counters that stop
 * at 2^32 - 1, the earliest deadline over all classes, deadline and route
 * walks over more calls than there are requests, the classified fail-stop
 * of a call whose record disagrees, lane gating while transient-slot
 * records run short, receipts handed in an exactly sized array, the
 * longest selector, and the record fields the inspect window shows after
 * a drop, an orphaning, a cancel and a grant's end. Every test drives the
 * core through its public API and the scripted harness.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t sel[] = "docs/m2.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* The transient-slot records kept free for one peer reply's receipts (the
 * core's PBX_CORE_TSLOT_SPARE, the threshold of pbx_core_peer_ready). */
#define M2_SPARE PBX_CORE_RECV_SLOTS_MAX

/* Begins, fills and commits the default request without stepping the
 * core: it waits on the intake lane. */
static pbx_ipc_id m2_open(th_h *h)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    return id;
}

/* The state of request id's record. */
static uint16_t m2_req_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* Asks DECISION for id and checks its outcome. */
static void m2_outcome(th_h *h, pbx_ipc_id id, uint8_t outcome)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, outcome);
}

/* Free transient-slot records. */
static uint32_t m2_free_tslots(const th_h *h)
{
    return h->core.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].free_count;
}

/* A received endpoint capability in a free transient slot. */
static uint32_t m2_cap(th_h *h)
{
    return th_put_cap(h, PBX_CORE_SLOT_NONE, PBX_CAPABI_KIND_ENDPOINT,
                      PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
}

/* Hands the core a vfsd reply with no frame (it matches no call) carrying
 * n fresh receipts; returns the core's error. */
static pbx_err m2_refused_reply(th_h *h, size_t n)
{
    uint32_t slots[PBX_CORE_RECV_SLOTS_MAX];
    PBX_REQUIRE(n <= PBX_CORE_RECV_SLOTS_MAX);
    for (size_t k = 0; k < n; k++) {
        slots[k] = m2_cap(h);
    }
    return pbx_core_on_peer_reply(&h->core, PBX_CORE_ROUTE_VFSD,
                                  PBX_CORE_SLOT_NONE, NULL, 0, slots, n);
}

/* Sends public junk (DECISION for an unknown request from an ordinary
 * client) with receipts until exactly the peer spare of transient-slot
 * records is free; h->hold_all must keep the deletions transient. */
static void m2_junk_to_spare(th_h *h)
{
    for (int guard = 0; guard < 16; guard++) {
        uint8_t buf[64];
        uint32_t slots[PBX_CORE_RECV_SLOTS_MAX];
        pbx_core_out out;
        pbx_err core = PBX_OK;
        pbx_ipc_id none = {0, 1};
        size_t len = 0;
        size_t n = 0;
        uint32_t free_n = m2_free_tslots(h);
        if (free_n <= M2_SPARE) {
            break;
        }
        for (uint32_t left = free_n - M2_SPARE;
             n < PBX_CORE_RECV_SLOTS_MAX && n < left; n++) {
            slots[n] = m2_cap(h);
        }
        PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, none, buf,
                                         sizeof(buf), &len) == PBX_OK);
        PBX_CHECK_EQ(th_public(h, TH_BADGE, buf, len, slots, n, &core, &out),
                     PBX_E_CORE_CLEANUP_PENDING);
    }
    PBX_REQUIRE(m2_free_tslots(h) == M2_SPARE);
}

/* ---- calls ------------------------------------------------------------- */

/* With one call per class and a calls pool of three, a scope RESOLVE
 * outstanding and a consumed grant's REMOVE just sent, the last free call
 * record still carries the grant's RETIRE: a free record is enough. */
PBX_TEST(core_mut2_last_free_call_record_is_used)
{
    th_h *h = th_new_window(4, 1);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, sel, false, NULL, NULL);
    PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_CALLS].capacity, 3U);
    h->hold = true;
    pbx_ipc_id a = m2_open(h);
    th_run(h);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 3U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_CALL_GRANT].count, 0U);
    PBX_CHECK(th_find(h, "retire") != TH_NONE);
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    m2_outcome(h, a, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* A request waiting for a call record goes back to the intake lane when a
 * call ends, beside the request whose call ended; nothing is put on the
 * release lane. */
PBX_TEST(core_mut2_call_end_wakes_waiters_on_the_intake_lane)
{
    th_h *h = th_new_window(4, 1);
    h->hold = true;
    pbx_ipc_id a = m2_open(h);
    pbx_ipc_id c = m2_open(h);
    th_run(h);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_CALL_REQUEST].count, 1U);
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "resolve")), PBX_OK);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_CALL_REQUEST].count, 0U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_INTAKE].count, 2U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_RELEASE].count, 0U);
    /* The waiter was woken first, so it goes first. */
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_INTAKE].head, c.index);
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    m2_outcome(h, a, PBX_IPC_OUTCOME_APPROVED);
    m2_outcome(h, c, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* A request deferred to the next tick (a prompt answered RETRY) is put
 * back on the intake lane by the tick, not on the release lane. */
PBX_TEST(core_mut2_tick_returns_deferred_requests_to_intake)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    PBX_CHECK_EQ(th_open_parked(h, &b, sel, &id), 0U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_DEFER_REQUEST].count, 1U);
    pbx_core_on_tick(&h->core);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_DEFER_REQUEST].count, 0U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_INTAKE].count, 1U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_INTAKE].head, id.index);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_RELEASE].count, 0U);
    th_free(h);
}

/* Counters stop at 2^32 - 1 instead of wrapping. 2^32 events cannot be
 * run in a test, so each counter starts one below its top and two events
 * are counted. */
PBX_TEST(core_mut2_event_counters_saturate)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id o[2] = {{0, 0}, {0, 0}};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    /* Two requests left OPEN pass their OPEN deadline. */
    PBX_REQUIRE(th_begin(h, &b, &o[0], &dest) == 0U);
    PBX_REQUIRE(th_begin(h, &b, &o[1], &dest) == 0U);
    h->core.opens_expired = UINT32_MAX - 1U;
    PBX_CHECK_EQ(th_time(h, 60000U), PBX_OK);
    PBX_CHECK_EQ(h->core.opens_expired, UINT32_MAX);
    th_run(h);
    /* Two RESOLVE calls pass their deadline. */
    h->hold = true;
    (void)m2_open(h);
    (void)m2_open(h);
    th_run(h);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    h->core.calls_expired = UINT32_MAX - 1U;
    PBX_CHECK_EQ(th_time(h, 120000U), PBX_OK);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    PBX_CHECK_EQ(h->core.calls_expired, UINT32_MAX);
    /* Two replies that match no call are refused. */
    h->core.replies_refused = UINT32_MAX - 1U;
    PBX_CHECK_EQ(m2_refused_reply(h, 0), PBX_OK);
    PBX_CHECK_EQ(m2_refused_reply(h, 0), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, UINT32_MAX);
    th_free(h);
}

/* The next deadline is the earliest over every class: a scope RESOLVE due
 * at 1000 ms comes before a POLICY due at 5000 ms, whichever class is
 * looked at first. */
PBX_TEST(core_mut2_next_deadline_is_the_earliest_of_all_classes)
{
    uint32_t times[PBX_BOOTSTRAP_TIME_COUNT];
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        times[t] = 5000U;
    }
    times[PBX_BOOTSTRAP_TIME_SCOPE] = 1000U;
    th_h *h = th_new_times(4, 4, times);
    uint64_t at = 0;
    (void)m2_open(h);
    PBX_REQUIRE(th_run_to(h, "policy") != TH_NONE);
    h->hold = true;
    (void)m2_open(h);
    th_run(h);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_TTYD], 1U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_SCOPE], 1U);
    PBX_CHECK(pbx_core_next_deadline(&h->core, &at));
    PBX_CHECK_EQ(at, 1000U);
    th_free(h);
}

/* Re-initialises h's core with one request record, three of every other
 * record and a window of three calls per class, over a new arena. */
static void m2_reshape(th_h *h)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_bootstrap_layout l;
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = 3U;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_REQUESTS] = 1U;
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        9U + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        12U * PBX_CORE_SELECTOR_CHUNK_BYTES;
    g.call_window = 3U;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * 3U;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, want, &l) == PBX_OK);
    const pbx_core_ops *ops = h->core.ops;
    void *user = h->core.ops_user;
    pbx_capabi_layout slots = h->core.slots;
    pbx_core_identity_fn identity = h->core.identity;
    free(h->arena);
    h->arena = aligned_alloc(4096U, l.arena_bytes);
    PBX_REQUIRE(h->arena != NULL);
    PBX_REQUIRE(pbx_core_init(&h->core, &l, h->arena, l.arena_bytes, &slots,
                              ops, user) == PBX_OK);
    pbx_core_set_identity(&h->core, identity);
}

/* Three grants approved one after the other (each request retires once
 * its decision is delivered) and consumed with every reply held: three
 * REMOVE calls on ttyd and three RETIRE calls on vfsd are outstanding,
 * more calls of one class than there are request records. */
static void m2_three_cleanups(th_h *h)
{
    pbx_ipc_begin b;
    pbx_ipc_id g[3];
    th_default_begin(&b, sel, SEL_LEN);
    m2_reshape(h);
    for (int k = 0; k < 3; k++) {
        g[k] = th_approve(h, &b, sel, false, NULL, NULL);
    }
    h->hold = true;
    for (int k = 0; k < 3; k++) {
        PBX_CHECK_EQ(th_consume(h, g[k]), 0U);
    }
    th_run(h);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_TTYD], 3U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_VFSD], 3U);
}

/* One pass of the clock ends every due call of every class, even when a
 * class holds more calls than there are request records. */
PBX_TEST(core_mut2_deadline_ends_more_calls_than_requests)
{
    th_h *h = th_new(4);
    m2_three_cleanups(h);
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    PBX_CHECK_EQ(h->core.calls_expired, 6U);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    th_free(h);
}

/* ttyd going down ends all of its calls at once, even when they are more
 * than there are request records; vfsd's calls stay outstanding. */
PBX_TEST(core_mut2_route_down_ends_more_calls_than_requests)
{
    th_h *h = th_new(4);
    m2_three_cleanups(h);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_TTYD], 0U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_VFSD], 3U);
    PBX_CHECK_EQ(h->core.calls_expired, 3U);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    th_free(h);
}

/* ---- calls whose record disagrees: a classified fail-stop -------------- */

/* Opens a request, runs it until its call named name is outstanding (its
 * reply held) and corrupts that call's kind to one no step sent. Returns
 * the request. */
static pbx_ipc_id m2_bad_call(th_h *h, const char *name)
{
    pbx_ipc_id id = m2_open(h);
    PBX_REQUIRE(th_run_to(h, name) != TH_NONE);
    uint32_t o = pbx_core_inspect_request(&h->core, id.index)->call;
    PBX_REQUIRE(o != PBX_CORE_NIL);
    pbx_core_outcall *oc = (pbx_core_outcall *)pbx_core_inspect_fault(
        &h->core, PBX_BOOTSTRAP_POOL_CALLS, o);
    oc->kind = 0U;
    return id;
}

/* The reply to a call whose record names no kind is a progression
 * fail-stop: the core stops with the progression status and serves
 * nothing more. */
PBX_TEST(core_mut2_reply_to_a_corrupt_call_fail_stops_progress)
{
    th_h *h = th_new(4);
    (void)m2_bad_call(h, "resolve");
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "resolve")), PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    bool progressed = true;
    PBX_CHECK_EQ(pbx_core_step(&h->core, &progressed), PBX_E_CORE_NOT_READY);
    PBX_CHECK(!progressed);
    th_free(h);
}

/* A corrupt call that passes its deadline is the same fail-stop. */
PBX_TEST(core_mut2_deadline_of_a_corrupt_call_fail_stops_progress)
{
    th_h *h = th_new(4);
    (void)m2_bad_call(h, "resolve");
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    PBX_CHECK_EQ(th_time(h, 6000U), PBX_E_CORE_NOT_READY);
    th_free(h);
}

/* A corrupt call ended by its route going down is the same fail-stop. */
PBX_TEST(core_mut2_route_down_with_a_corrupt_call_fail_stops_progress)
{
    th_h *h = th_new(4);
    (void)m2_bad_call(h, "policy");
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD),
                 PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    th_free(h);
}

/* A decision wake whose notification names a request index one past the
 * pool is refused as inconsistent (a progression fail-stop), never read;
 * the stopped core then refuses delivery reports as not ready. */
PBX_TEST(core_mut2_wake_for_a_request_past_the_pool_fail_stops)
{
    th_h *h = th_new(4);
    th_push_wake(h, PBX_CORE_IO_FAILED);
    pbx_ipc_id p = m2_open(h);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_DEFER_NOTIFY].count, 1U);
    uint32_t n = pbx_core_inspect_request(&h->core, p.index)->notification;
    pbx_core_notification *no = (pbx_core_notification *)pbx_core_inspect_fault(
        &h->core, PBX_BOOTSTRAP_POOL_NOTIFICATIONS, n);
    no->request = h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    PBX_CHECK_EQ(h->wake_count, 0U);
    PBX_CHECK_EQ(pbx_core_on_reply_delivered(&h->core, p.index, p.gen, true),
                 PBX_E_CORE_NOT_READY);
    th_free(h);
}

/* ---- orphans and lanes while transient-slot records run short ---------- */

/* The kernel rejecting an orphan's deletion retry makes the step return
 * CLEANUP_REJECTED and stop the core with the cleanup status. */
PBX_TEST(core_mut2_rejected_orphan_retry_returns_cleanup_rejected)
{
    th_h *h = th_new(4);
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    PBX_CHECK_EQ(m2_refused_reply(h, 1), PBX_OK);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_ORPHAN].count, 1U);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    bool progressed = false;
    PBX_CHECK_EQ(pbx_core_step(&h->core, &progressed),
                 PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK(progressed);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    th_free(h);
}

/* With exactly the peer spare of transient-slot records free, the lanes
 * that call peers still run: a committed request sends its RESOLVE. */
PBX_TEST(core_mut2_peer_lanes_run_with_exactly_the_spare_free)
{
    th_h *h = th_new(2);
    pbx_ipc_id a = m2_open(h);
    pbx_ipc_id c = m2_open(h);
    h->hold_all = true;
    m2_junk_to_spare(h);
    h->hold = true;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(h->sends, 2U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_SCOPE], 2U);
    h->hold_all = false;
    h->hold = false;
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    m2_outcome(h, a, PBX_IPC_OUTCOME_APPROVED);
    m2_outcome(h, c, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Checks the orphan record at the head of the orphan lane: it holds a
 * receipt of no known kind (junk, not a scope or object), for no
 * request. */
static void m2_check_orphan_record(const th_h *h)
{
    uint32_t t = h->core.queues[PBX_CORE_Q_ORPHAN].head;
    PBX_REQUIRE(t != PBX_CORE_NIL);
    const pbx_core_tslot *ts = pbx_core_inspect_tslot(&h->core, t);
    PBX_CHECK_EQ(ts->link.state, PBX_CORE_TSLOT_HELD);
    PBX_CHECK_EQ(ts->kind, 0U);
    PBX_CHECK(ts->slot != PBX_CORE_SLOT_NONE);
}

/* Below the peer spare the intake, release and grant lanes wait (a
 * committed request sends nothing, and a step with only them left reports
 * no progress) while the notification lane still sends a retried wake
 * and the orphan lane still retries deletions, which is what brings the
 * records back; then the request runs to approval. */
PBX_TEST(core_mut2_peer_lanes_wait_below_the_spare_others_run)
{
    th_h *h = th_new(2);
    th_push_wake(h, PBX_CORE_IO_FAILED);
    pbx_ipc_id p = m2_open(h);
    th_run(h);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_DEFER_NOTIFY].count, 1U);
    pbx_ipc_id a = m2_open(h);
    uint32_t sends = h->sends;
    h->hold_all = true;
    m2_junk_to_spare(h);
    /* A peer reply may still come with a full spare of receipts: each is
     * refused and kept for a later deletion, down to the last record. */
    PBX_CHECK_EQ(m2_refused_reply(h, PBX_CORE_RECV_SLOTS_MAX), PBX_OK);
    PBX_CHECK_EQ(m2_free_tslots(h), 0U);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    m2_check_orphan_record(h);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(h->sends, sends);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_INTAKE].count, 1U);
    bool progressed = true;
    PBX_CHECK_EQ(pbx_core_step(&h->core, &progressed), PBX_OK);
    PBX_CHECK(!progressed);
    /* The tick retries the wake: it goes out although records are short. */
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->wake_count, 1U);
    PBX_CHECK_EQ(h->sends, sends);
    /* The kernel lets go: the orphan lane deletes, the request runs. */
    h->hold_all = false;
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    m2_outcome(h, a, PBX_IPC_OUTCOME_APPROVED);
    m2_outcome(h, p, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- receipts and selectors at their limits ---------------------------- */

/* A peer reply whose receipts come in an array of exactly their number
 * is read within that array and answers its call. */
PBX_TEST(core_mut2_reply_receipts_in_an_exact_array)
{
    th_h *h = th_new(4);
    th_reply r;
    pbx_ipc_id a = m2_open(h);
    uint32_t k = th_run_to(h, "resolve");
    PBX_REQUIRE(k != TH_NONE);
    th_reply_build(h, k, &r);
    th_drop(h, k);
    /* A RESOLVE answer carries the one object: an array of one. */
    uint32_t exact[1];
    PBX_REQUIRE(r.n == 1U);
    exact[0] = r.slots[0];
    PBX_CHECK_EQ(pbx_core_on_peer_reply(&h->core, r.route, r.via_slot, r.frame,
                                        r.len, exact, r.n),
                 PBX_OK);
    PBX_CHECK_EQ(m2_req_state(h, a), PBX_CORE_ST_POLICY);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    m2_outcome(h, a, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* The longest selector (PBX_IPC_SELECTOR_LEN_BYTES_MAX bytes, whose
 * chunks hold more than that) commits, resolves and is kept exactly. */
PBX_TEST(core_mut2_longest_selector_is_kept_exactly)
{
    th_h *h = th_new(18);
    static uint8_t big[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    static uint8_t back[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    for (size_t i = 0; i < sizeof(big); i++) {
        big[i] = (uint8_t)('a' + (i % 26U));
    }
    th_default_begin(&b, big, (uint32_t)sizeof(big));
    PBX_CHECK_EQ(th_open(h, &b, big, &id), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(
        pbx_core_inspect_selector(&h->core, id, back, (uint32_t)sizeof(back)),
        (uint32_t)sizeof(big));
    PBX_CHECK_MEM(back, big, sizeof(big));
    m2_outcome(h, id, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- record fields the inspect window shows ---------------------------- */

/* Once release deleted an approved request's scope, its scope record is
 * idle and names no slot and no kind (the decision is not yet
 * delivered, so the record is still the request's). */
PBX_TEST(core_mut2_dropped_scope_record_names_no_slot)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id req = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    (void)th_approve(h, &b, sel, true, &req, NULL);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, req.index);
    PBX_REQUIRE(r->link.live != 0U);
    const pbx_core_tslot *ts = pbx_core_inspect_tslot(&h->core, r->scope_tslot);
    PBX_CHECK_EQ(ts->link.state, PBX_CORE_TSLOT_IDLE);
    PBX_CHECK_EQ(ts->slot, PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(ts->kind, 0U);
    th_free(h);
}

/* A request parked on ttyd's backpressure and then cancelled is no longer
 * parked on any route. */
PBX_TEST(core_mut2_cancelled_request_is_parked_nowhere)
{
    th_h *h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    pbx_ipc_id a = m2_open(h);
    th_run(h);
    PBX_CHECK_EQ(m2_req_state(h, a), PBX_CORE_ST_POLICY);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, a.index)->parked_route,
                 (uint32_t)PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_cancel(h, a), 0U);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, a.index)->parked_route,
                 PBX_CORE_NIL);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    m2_outcome(h, a, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A live grant owed its row by a returned ttyd and consumed before the row
 * went out owes it no more: its RESYNC flag is cleared as it ends. */
PBX_TEST(core_mut2_ended_grant_owes_no_resync)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, sel, false, NULL, NULL);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    const pbx_core_grant *gr = pbx_core_inspect_grant(&h->core, g.index);
    PBX_CHECK((gr->flags & PBX_CORE_GRANT_F_RESYNC) != 0U);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    PBX_CHECK_EQ(gr->flags & PBX_CORE_GRANT_F_RESYNC, 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
