/*
 * test_mut_m9.c: behaviour that the full mutation run of issue 22 item 7
 * (make mutate, docs/TESTING.md "Mutation testing") left unchecked on
 * today's tree: where the notification of a decision whose wake the
 * kernel rejected for good is kept once the service has stopped; that a
 * reply record the runtime reuses after a dropped frame says "no drop" for
 * the next frame answered; and that the EXPIRE walk over a job's grants
 * reaches every grant when grants outnumber the prompt records. Each test
 * is named for the behaviour it pins, not for a mutant.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_fixture.h"
#include "test_core_harness.h"

#include <string.h>

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

/* pbx_core_on_public sets every field of the caller's reply record
 * (core/pbx_core.h), drop included: a runtime that reuses one record
 * after a frame it was told to drop must not be told to drop the
 * caller's next, well-formed frame too. */
PBX_TEST(mut_m9_reused_reply_record_is_not_left_saying_drop)
{
    tfx_public f;
    tfx_setup(&f, 4, m9_sel, M9_SEL_LEN);
    uint32_t badge = f.h->badge;
    memset(f.buf, 0xEE, 40U);
    PBX_CHECK_EQ(tfx_send(&f, badge, 40U, NULL, 0), UINT32_MAX);
    PBX_CHECK_EQ(f.core, PBX_OK);
    PBX_CHECK_EQ(f.out.drop, PBX_E_CORE_FRAME);
    tfx_encode_begin(&f);
    PBX_CHECK_EQ(tfx_send(&f, badge, f.n, NULL, 0), 0U);
    PBX_CHECK_EQ(f.core, PBX_OK);
    PBX_CHECK_EQ(f.out.drop, PBX_OK);
    PBX_CHECK(f.out.len > 0U);
    /* A refused frame with a reply (a broken body) is no drop either. */
    f.out.drop = PBX_E_CORE_FRAME;
    PBX_CHECK_EQ(tfx_send(&f, badge, f.n - 1U, NULL, 0), PBX_E_IPC_BODY_LEN);
    PBX_CHECK_EQ(f.out.drop, PBX_OK);
    tfx_teardown(&f);
}

/* Grants in the harness: more than the prompt records below. */
#define M9_GRANTS 4U
/* Prompt records: fewer than the job's grants (routine requests allowed
 * by policy take none). */
#define M9_PROMPTS 1U

/* An EXPIRE of a job ends every live grant of the job, the last of its
 * chain included, whatever the size of the other pools: here the job
 * holds more grants than there are prompt records. */
PBX_TEST(mut_m9_expire_ends_every_grant_when_grants_outnumber_prompts)
{
    th_h *h = th_new_prompts(M9_GRANTS, M9_PROMPTS);
    pbx_ipc_begin b;
    th_default_begin(&b, m9_sel, M9_SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    for (uint32_t k = 0; k < M9_GRANTS; k++) {
        (void)th_approve(h, &b, m9_sel, false, NULL, NULL);
    }
    for (uint32_t g = 0; g < M9_GRANTS; g++) {
        PBX_REQUIRE(pbx_core_inspect_grant(&h->core, g)->link.state ==
                    PBX_CORE_ST_LIVE);
    }
    th_clear_trace(h);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0U),
                 0U);
    for (uint32_t g = 0; g < M9_GRANTS; g++) {
        PBX_CHECK(pbx_core_inspect_grant(&h->core, g)->link.state !=
                  PBX_CORE_ST_LIVE);
    }
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    for (uint32_t g = 0; g < M9_GRANTS; g++) {
        PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g)->link.state,
                     PBX_CORE_ST_FREE);
    }
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
