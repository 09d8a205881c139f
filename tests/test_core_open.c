/*
 * test_core_open.c: the OPEN deadline. A request that is begun and never
 * committed (a caller that stops after BEGIN, or whose selector stream
 * stalls) ends CANCELLED once the PBX1 OPEN deadline has passed since its
 * BEGIN: its destination reservation and every record BEGIN took return,
 * its decision is published and woken like any other, and a COMMIT that
 * comes later is refused. A request committed in time is never touched
 * by the deadline. Every test asserts effects: states, outcomes, the
 * reservation, free records and the next deadline the runtime waits for.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/open.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Deadlines: every call class 5000 ms, OPEN 700 ms. */
static th_h *open_new(uint32_t n)
{
    uint32_t t[PBX_BOOTSTRAP_TIME_COUNT];
    for (size_t k = 0; k < (size_t)PBX_BOOTSTRAP_TIME_COUNT; k++) {
        t[k] = 5000U;
    }
    t[PBX_BOOTSTRAP_TIME_OPEN] = 700U;
    return th_new_times(n, n, t);
}

/* The state of request id's record. */
static uint16_t open_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* Free records of the requests pool. */
static uint32_t open_free_requests(const th_h *h)
{
    return h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].free_count;
}

/* A BEGIN with no COMMIT ends CANCELLED at exactly its deadline, with its
 * reservation returned; the COMMIT that comes after is refused. */
PBX_TEST(core_open_uncommitted_request_ends_cancelled_at_deadline)
{
    th_h *h = open_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    uint64_t at = 0;
    th_default_begin(&b, sel, SEL_LEN);
    uint32_t free0 = open_free_requests(h);
    PBX_CHECK_EQ(th_time(h, 100U), PBX_OK);
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), 0U);
    PBX_CHECK_EQ(open_free_requests(h), free0 - 1U);
    PBX_CHECK(pbx_core_next_deadline(&h->core, &at));
    PBX_CHECK_EQ(at, 800U);
    PBX_CHECK_EQ(th_selector(h, id, 0, sel, 4U), 0U);
    PBX_CHECK_EQ(th_time(h, 799U), PBX_OK);
    PBX_CHECK_EQ(open_state(h, id), PBX_CORE_ST_OPEN);
    PBX_CHECK_EQ(h->core.opens_expired, 0U);
    PBX_CHECK_EQ(th_time(h, 800U), PBX_OK);
    PBX_CHECK_EQ(h->core.opens_expired, 1U);
    PBX_CHECK_EQ(open_state(h, id), PBX_CORE_ST_RELEASE);
    PBX_CHECK(!pbx_core_next_deadline(&h->core, &at));
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    /* The decision is woken like any other and says CANCELLED. */
    PBX_CHECK_EQ(h->last_wake.index, id.index);
    PBX_CHECK_EQ(h->last_wake.gen, id.gen);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(d.reason, 0U);
    /* The request finished: its record, its reservation and every slot
     * are back, and a late COMMIT names nothing live. */
    PBX_CHECK_EQ(open_free_requests(h), free0);
    PBX_CHECK(th_quiescent(h));
    PBX_CHECK(th_commit(h, id, dest, dest) != 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Requests expire in BEGIN order, each at its own deadline; one
 * committed in time is never ended by the deadline and is decided
 * normally. */
PBX_TEST(core_open_deadline_spares_committed_and_keeps_order)
{
    th_h *h = open_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id c = {0, 0};
    pbx_ipc_id k = {0, 0};
    uint32_t da = 0;
    uint32_t dc = 0;
    uint64_t at = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_begin(h, &b, &a, &da), 0U);
    PBX_CHECK_EQ(th_time(h, 300U), PBX_OK);
    PBX_CHECK_EQ(th_begin(h, &b, &c, &dc), 0U);
    PBX_CHECK_EQ(th_time(h, 400U), PBX_OK);
    PBX_CHECK_EQ(th_open(h, &b, sel, &k), 0U);
    /* The earliest OPEN deadline is a's (0 + 700). */
    PBX_CHECK(pbx_core_next_deadline(&h->core, &at));
    PBX_CHECK_EQ(at, 700U);
    PBX_CHECK_EQ(th_time(h, 700U), PBX_OK);
    PBX_CHECK_EQ(open_state(h, a), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(open_state(h, c), PBX_CORE_ST_OPEN);
    PBX_CHECK_EQ(h->core.opens_expired, 1U);
    /* c is committed before its deadline (300 + 700): it leaves the
     * OPEN queue and is decided normally, whatever the clock says. */
    PBX_CHECK_EQ(th_selector(h, c, 0, sel, SEL_LEN), 0U);
    PBX_CHECK_EQ(th_commit(h, c, dc, dc), 0U);
    PBX_CHECK_EQ(th_time(h, 5000U - 1U), PBX_OK);
    PBX_CHECK_EQ(h->core.opens_expired, 1U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    TH_CHECK_OUTCOME(h, c, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    TH_CHECK_OUTCOME(h, k, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_free(h);
}

/* An explicit CANCEL of an OPEN request takes it off the OPEN queue: the
 * deadline later ends nothing and no deadline is reported. */
PBX_TEST(core_open_cancelled_request_leaves_the_deadline_queue)
{
    th_h *h = open_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    uint64_t at = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), 0U);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    PBX_CHECK(!pbx_core_next_deadline(&h->core, &at));
    PBX_CHECK_EQ(th_time(h, 10000U), PBX_OK);
    PBX_CHECK_EQ(h->core.opens_expired, 0U);
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
