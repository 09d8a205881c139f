/*
 * test_mut_m7.c: behaviour that the full mutation run of issue 22 item 7
 * (make mutate, docs/TESTING.md "Mutation testing") left unchecked: a
 * reply is matched wherever its call stands in its deadline class's FIFO,
 * even when that class holds more outstanding calls than the requests
 * pool has records. Grants own calls of their own (a revoked grant's
 * REMOVE row goes to ttyd in the ttyd class) after their request is
 * freed, so a class can hold more calls than there are requests when the
 * call window is wider than the requests pool. Each test is named for the
 * behaviour it pins, not for a mutant.
 */
#include "../core/pbx_core.h"
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t m7_sel[] = "docs/report.txt";
#define M7_SEL_LEN ((uint32_t)(sizeof(m7_sel) - 1U))

/* The state of grant id's record. */
static uint16_t m7_grant_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_grant(&h->core, id.index)->link.state;
}

/* One request record, two grant records, and a window of two calls per
 * deadline class: two approved grants, each outliving its request, are
 * consumed together, so both REMOVE rows are outstanding in the ttyd
 * class's FIFO, the second past the requests pool's one record. ttyd's
 * acknowledgement of the second row is matched to its call (nothing is
 * refused, the grant leaves SETTLE), and the first row's after it. */
PBX_TEST(mut_m7_reply_matches_a_call_past_the_requests_capacity)
{
    th_h *h = th_new_grants(1, 2, 2);
    pbx_ipc_begin b;
    th_default_begin(&b, m7_sel, M7_SEL_LEN);
    pbx_ipc_id g1 = th_approve(h, &b, m7_sel, false, NULL, NULL);
    pbx_ipc_id g2 = th_approve(h, &b, m7_sel, false, NULL, NULL);
    PBX_CHECK(g1.index != g2.index);
    h->hold = true;
    PBX_CHECK_EQ(th_consume(h, g1), 0U);
    PBX_CHECK_EQ(th_consume(h, g2), 0U);
    th_run(h);
    /* Two ttyd-class calls outstanding, one request record. */
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_TTYD], 2U);
    PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity, 1U);
    uint32_t first = th_find(h, "view-");
    PBX_REQUIRE(first != TH_NONE);
    uint32_t k = first + 1U;
    for (; k < h->npend && strcmp(h->pend[k].name, "view-") != 0; k++) {
    }
    PBX_REQUIRE(k < h->npend);
    uint32_t refused = h->core.replies_refused;
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, refused);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_TTYD], 1U);
    PBX_CHECK_EQ(m7_grant_state(h, g2), PBX_CORE_ST_RETIRE);
    PBX_CHECK_EQ(m7_grant_state(h, g1), PBX_CORE_ST_SETTLE);
    /* Everything else answers: both grants end, nothing refused. */
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->core.replies_refused, refused);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    PBX_CHECK_EQ(m7_grant_state(h, g1), PBX_CORE_ST_FREE);
    PBX_CHECK_EQ(m7_grant_state(h, g2), PBX_CORE_ST_FREE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
