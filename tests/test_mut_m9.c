/*
 * test_mut_m9.c: behaviour that the full mutation run of issue 22 item 7
 * (make mutate, docs/TESTING.md "Mutation testing") left unchecked on
 * today's tree: where the notification of a decision whose wake the
 * kernel rejected for good is kept once the service has stopped. Each
 * test is named for the behaviour it pins, not for a mutant.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

static const uint8_t m9_sel[] = "docs/m9.txt";
#define M9_SEL_LEN ((uint32_t)(sizeof(m9_sel) - 1U))

/* A wake the kernel rejects for good stops the service with the
 * notification status, and the decision stays, undelivered: its
 * notification record is kept on the deferred notification lane (so the
 * stopped core still asks for a tick, and the lanes stay sorted by pool:
 * a notification record never sits on a lane of requests waiting for a
 * call record). */
PBX_TEST(mut_m9_rejected_wake_keeps_the_notification_on_its_deferred_lane)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m9_sel, M9_SEL_LEN);
    th_push_wake(h, PBX_CORE_IO_REJECTED);
    PBX_REQUIRE(th_open(h, &b, m9_sel, &id) == 0U);
    PBX_CHECK(!pbx_core_tick_wanted(&h->core));
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_NOTIFY_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NOTIFY);
    PBX_CHECK_EQ(h->wake_count, 0U);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(r->link.state, PBX_CORE_ST_NOTIFY);
    const pbx_core_queue *defer = &h->core.queues[PBX_CORE_Q_DEFER_NOTIFY];
    PBX_CHECK_EQ(defer->count, 1U);
    PBX_CHECK_EQ(defer->head, r->notification);
    PBX_CHECK_EQ(defer->pool, PBX_BOOTSTRAP_POOL_NOTIFICATIONS);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_CALL_REQUEST].count, 0U);
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    pbx_core_log_decision d;
    PBX_CHECK(pbx_core_inspect_decision(&h->core, id, &d));
    PBX_CHECK_EQ(d.outcome, PBX_IPC_OUTCOME_APPROVED);
    th_free(h);
}
