/*
 * test_core_defer.c: transient deletions and inexact answers are neither a
 * fail-stop nor a busy retry (review D3, D6). Junk receipts from public
 * frames take at most PBX_CORE_PUBLIC_ORPHANS_MAX records, after which the
 * core holds public intake (pbx_core_public_ready) instead of stopping the
 * service; every retry of a held deletion waits for a tick
 * (pbx_core_on_tick) and consumes no step without one.
 */
#include "runner/pbx_test.h"
#include "test_core_harness.h"

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Encodes a DECISION for the unknown request {0, 1} into buf. */
static size_t defer_decision_frame(uint8_t *buf, size_t cap)
{
    pbx_ipc_id none = {0, 1};
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, none, buf, cap, &n) ==
               PBX_OK);
    return n;
}

/* Sends that DECISION from an ordinary client with the count capabilities
 * in slots; returns the reply status (UINT32_MAX: none), *core the core's
 * return value. */
static uint32_t defer_junk(th_h *h, const uint32_t *slots, size_t count,
                           pbx_err *core)
{
    uint8_t buf[64];
    pbx_core_out out;
    size_t n = defer_decision_frame(buf, sizeof(buf));
    return th_public(h, TH_BADGE, buf, n, slots, count, core, &out);
}

/* A received endpoint in the lowest free transient slot. */
static uint32_t defer_cap(th_h *h)
{
    return th_put_cap(h, PBX_CORE_SLOT_NONE, PBX_CAPABI_KIND_ENDPOINT,
                      PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
}

/* Review D3 (the reviewer's scratch test, fixed): junk receipts whose
 * deletion stays transient used to fill the transient-slot pool until the
 * next one became a CLEANUP fail-stop although the kernel never rejected
 * anything. Now the public cap holds intake instead: no fail-stop, nothing
 * dropped, request-owned records stay free, and intake resumes once the
 * deletions succeed on a tick. */
PBX_TEST(core_transient_public_junk_holds_intake_not_the_service)
{
    th_h *h = th_new(2);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    pbx_err core = PBX_OK;
    uint32_t sent = 0;
    th_default_begin(&b, sel, SEL_LEN);
    h->hold_all = true;
    for (uint32_t n = 0; n < 64U && pbx_core_public_ready(&h->core); n++) {
        uint32_t s = defer_cap(h);
        PBX_CHECK_EQ(defer_junk(h, &s, 1, &core), PBX_E_CORE_CLEANUP_PENDING);
        PBX_CHECK_EQ(core, PBX_OK);
        sent++;
    }
    /* Ready exactly while one more frame's worth fits under the cap. */
    PBX_CHECK_EQ(sent,
                 PBX_CORE_PUBLIC_ORPHANS_MAX - PBX_CORE_RECV_SLOTS_MAX + 1U);
    PBX_CHECK_EQ(h->core.public_orphans, sent);
    TH_TRACE(h, "del~64 del~65 del~66 del~67 del~68");
    /* Request-owned work keeps its records: BEGIN is still accepted. */
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), 0U);
    TH_TRACE(h, "reserve=69");
    /* A frame received anyway is refused with nothing taken; it stays the
     * caller's (the runtime leaves it in the kernel), no reply. */
    uint32_t held[PBX_CORE_RECV_SLOTS_MAX];
    for (size_t k = 0; k < PBX_CORE_RECV_SLOTS_MAX; k++) {
        held[k] = defer_cap(h);
    }
    PBX_CHECK_EQ(defer_junk(h, held, PBX_CORE_RECV_SLOTS_MAX, &core),
                 UINT32_MAX);
    PBX_CHECK_EQ(core, PBX_E_CORE_INTAKE_HELD);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    /* One prompt retry each, then nothing until a tick; a tick retries
     * each held deletion exactly once. */
    PBX_CHECK_EQ(th_run(h), sent);
    TH_TRACE(h, "del~64 del~65 del~66 del~67 del~68");
    PBX_CHECK_EQ(th_run(h), 0U);
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    pbx_core_on_tick(&h->core);
    PBX_CHECK_EQ(th_run(h), sent);
    TH_TRACE(h, "del~64 del~65 del~66 del~67 del~68");
    PBX_CHECK(!pbx_core_public_ready(&h->core));
    /* The kernel lets go: the next tick deletes every junk receipt
     * exactly, and intake is ready again. */
    h->hold_all = false;
    pbx_core_on_tick(&h->core);
    PBX_CHECK_EQ(th_run(h), sent);
    TH_TRACE(h, "del=64 del=65 del=66 del=67 del=68");
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    PBX_CHECK(pbx_core_public_ready(&h->core));
    PBX_CHECK(!pbx_core_tick_wanted(&h->core));
    /* The frame the kernel kept is received now, its receipts deleted. */
    PBX_CHECK_EQ(defer_junk(h, held, PBX_CORE_RECV_SLOTS_MAX, &core),
                 PBX_E_CORE_UNEXPECTED_CAPS);
    PBX_CHECK_EQ(core, PBX_OK);
    TH_TRACE(h, "del=70 del=71 del=72 del=73");
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    TH_TRACE(h, "release=69 wake");
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Review D6 (the reviewer's scratch test, fixed): a refused COMMIT
 * receipt held in the reserved destination used to keep the release lane
 * re-queueing itself (10,000 steps while one deletion stayed transient).
 * Now release waits for the receipt's orphan, whose retries wait for
 * ticks: no step is consumed without one, and the reservation is released
 * only after the receipt is proven deleted. */
PBX_TEST(core_held_deletion_consumes_no_steps_without_a_tick)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    th_clear_trace(h);
    h->hold_slot = dest; /* every deletion of dest stays TRANSIENT */
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_CLEANUP_PENDING);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    /* The orphan's one prompt retry and one release step, then idle. */
    PBX_CHECK_EQ(th_run(h), 2U);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK(th_conserved(h));
    PBX_CHECK(h->slots[dest].reserved);
    /* Each tick costs exactly one retry of the held deletion. */
    for (int k = 0; k < 3; k++) {
        pbx_core_on_tick(&h->core);
        PBX_CHECK_EQ(th_run(h), 1U);
    }
    PBX_CHECK_EQ(h->wake_count, 0U);
    /* Deleted on the next tick; only then the reservation goes. */
    h->hold_slot = PBX_CORE_SLOT_NONE;
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "del=64 release=64 wake");
    PBX_CHECK_EQ(h->wake_count, 1U);
    PBX_CHECK(!pbx_core_tick_wanted(&h->core));
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Review D6: an inexact REMOVE acknowledgement from ttyd is retried on a
 * tick, not on ttyd's route (writable all along); backpressure still
 * waits for the route. */
PBX_TEST(core_inexact_remove_waits_for_a_tick)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_clear_trace(h);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_WRONG_ECHO, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    th_run(h);
    /* The inexact REMOVE does not hold RETIRE back (it goes in the same
     * step); REMOVE alone is owed from here. */
    TH_TRACE(h, "del=66 view- retire");
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "view-:busy");
    /* Backpressure parks on the route: a tick does not re-ask. */
    pbx_core_on_tick(&h->core);
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    th_run(h);
    TH_TRACE(h, "view-");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
