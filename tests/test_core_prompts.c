/*
 * test_core_prompts.c: fair shares of the prompt records (issue 20, item
 * 4). A prompt record is taken only when policy asks for a prompt, never
 * at BEGIN, so a routine request never waits for storage only prompts
 * need; a request that finds no record it may take waits on its own lane
 * keeping everything it holds and asks again when one is freed; and no
 * job holds more than pbx_core_prompt_share records. Each test fails on a
 * core that takes a prompt record at BEGIN (routine BEGIN refused BUSY),
 * drops or polls a waiter, or ignores the share.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Records of pool in use now. */
static uint32_t pr_used(const th_h *h, pbx_bootstrap_pool pool)
{
    uint32_t used = UINT32_MAX;
    uint32_t cap = 0U;
    pbx_core_inspect_usage(&h->core, pool, &used, &cap);
    return used;
}

/* The record of request id. */
static const pbx_core_request *pr_req(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index);
}

/* How many PROMPT calls wait for their answer. */
static uint32_t pr_prompts_pending(const th_h *h)
{
    uint32_t n = 0U;
    for (uint32_t k = 0; k < h->npend; k++) {
        n += strcmp(h->pend[k].name, "prompt") == 0 ? 1U : 0U;
    }
    return n;
}

/* Runs the core, answering every call but the PROMPTs, which stay
 * unanswered (a person has not answered yet). */
static void pr_pump(th_h *h)
{
    bool hold = h->hold;
    h->hold = true;
    for (uint32_t round = 0; round < 64U; round++) {
        th_run(h);
        uint32_t k = 0;
        while (k < h->npend && strcmp(h->pend[k].name, "prompt") == 0) {
            k++;
        }
        if (k == h->npend) {
            break;
        }
        PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    }
    h->hold = hold;
}

/* Opens a request of job (id job, generation 1), exceptional or routine,
 * and pumps it as far as it goes. */
static pbx_ipc_id pr_open(th_h *h, uint64_t job, bool exceptional)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.job_id = job;
    b.ctx.job_gen = 1U;
    if (exceptional) {
        b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    }
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    pr_pump(h);
    return id;
}

/* Answers the oldest pending PROMPT (with what the script said at its
 * sending: TH_OK approves) and runs the core to idle. */
static void pr_answer_oldest(th_h *h)
{
    uint32_t k = th_find(h, "prompt");
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    pr_pump(h);
}

/* Checks request id waits for a prompt record: state PROMPT, no record,
 * on the wait lane, its scope and object copy still held. */
static void pr_waiting(const th_h *h, pbx_ipc_id id)
{
    const pbx_core_request *r = pr_req(h, id);
    PBX_CHECK_EQ(r->link.state, PBX_CORE_ST_PROMPT);
    PBX_CHECK_EQ(r->prompt, PBX_CORE_NIL);
    PBX_CHECK_EQ(r->link.queue, (uint32_t)PBX_CORE_Q_WAIT_PROMPT + 1U);
    PBX_CHECK_EQ(r->call, PBX_CORE_NIL);
    PBX_CHECK((r->flags & PBX_CORE_REQ_F_PROMPT) == 0U);
}

/* Asks DECISION for id (delivering it) and checks the outcome. */
static void pr_outcome(th_h *h, pbx_ipc_id id, uint8_t want)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, want);
}

/* The share is an eighth of the prompts capacity, at least one. */
PBX_TEST(core_prompts_share_is_an_eighth_at_least_one)
{
    PBX_CHECK_EQ(pbx_core_prompt_share(1U), 1U);
    PBX_CHECK_EQ(pbx_core_prompt_share(7U), 1U);
    PBX_CHECK_EQ(pbx_core_prompt_share(16U), 2U);
    PBX_CHECK_EQ(pbx_core_prompt_share(32U), 4U);
    PBX_CHECK_EQ(pbx_core_prompt_share(65536U), 8192U);
    th_h *h = th_new_prompts(4, 24);
    PBX_CHECK_EQ(h->core.prompt_share, 3U);
    th_free(h);
}

/* The one prompt record is held by a prompt nobody answers: a routine
 * request of another job is begun, resolved, allowed, installed and
 * approved all the same, and never holds a prompt record (the bug: BEGIN
 * took one for every request and refused this one BUSY). */
PBX_TEST(core_prompts_routine_never_waits_for_prompt_records)
{
    th_h *h = th_new_prompts(4, 1);
    pbx_ipc_id x = pr_open(h, 1U, true);
    PBX_CHECK_EQ(pr_prompts_pending(h), 1U);
    PBX_CHECK_EQ(pr_used(h, PBX_BOOTSTRAP_POOL_PROMPTS), 1U);
    PBX_CHECK_EQ(pr_req(h, x)->link.state, PBX_CORE_ST_PROMPT);
    for (uint32_t k = 0; k < 3U; k++) {
        pbx_ipc_id r = pr_open(h, 2U, false);
        PBX_CHECK_EQ(pr_req(h, r)->prompt, PBX_CORE_NIL);
        pr_outcome(h, r, PBX_IPC_OUTCOME_APPROVED);
        PBX_CHECK_EQ(pr_used(h, PBX_BOOTSTRAP_POOL_PROMPTS), 1U);
    }
    PBX_CHECK_EQ(h->core.prompt_waits, 0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* No prompt record is free: a second job's exceptional request waits on
 * the lane, holding its scope and object copy, with no call and no tick
 * asking again; the first prompt's answer frees the record once its
 * decision is delivered, and the waiter's prompt then goes out and is
 * approved. */
PBX_TEST(core_prompts_wait_lane_keeps_the_request_and_resumes_it)
{
    th_h *h = th_new_prompts(4, 1);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0); /* x's user: yes */
    pbx_ipc_begin b;
    pbx_ipc_id x = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    PBX_CHECK_EQ(th_open(h, &b, sel, &x), 0U);
    pr_pump(h);
    uint32_t held = pbx_core_held_caps(&h->core);
    pbx_ipc_id y = pr_open(h, 2U, true);
    pr_waiting(h, y);
    PBX_CHECK_EQ(h->core.prompt_waits, 1U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held + 2U);
    PBX_CHECK_EQ(pr_prompts_pending(h), 1U);
    /* Ticks and time do not move it: it waits for a record, not a clock. */
    pbx_core_on_tick(&h->core);
    pr_pump(h);
    pr_waiting(h, y);
    PBX_CHECK_EQ(h->core.prompt_waits, 1U);
    th_clear_trace(h);
    pr_answer_oldest(h);
    /* x is approved but its record is kept until its decision is
     * delivered: y still waits. */
    pr_waiting(h, y);
    pr_outcome(h, x, PBX_IPC_OUTCOME_APPROVED);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0); /* y's user: yes */
    pr_pump(h);
    PBX_CHECK_EQ(pr_prompts_pending(h), 1U);
    PBX_CHECK(pr_req(h, y)->prompt != PBX_CORE_NIL);
    pr_answer_oldest(h);
    pr_outcome(h, y, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_PROMPT].count, 0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Eight records, a share of one: job 1's second exceptional request
 * waits although seven records are free, while job 2's goes out at once;
 * when job 1's first ends (cancelled: its prompt withdrawn) and its
 * decision is delivered, job 1's second takes the record. */
PBX_TEST(core_prompts_no_job_holds_more_than_its_share)
{
    th_h *h = th_new_prompts(4, 8);
    PBX_CHECK_EQ(h->core.prompt_share, 1U);
    pbx_ipc_id a1 = pr_open(h, 1U, true);
    pbx_ipc_id a2 = pr_open(h, 1U, true);
    pr_waiting(h, a2);
    pbx_ipc_id b1 = pr_open(h, 2U, true);
    PBX_CHECK(pr_req(h, b1)->prompt != PBX_CORE_NIL);
    PBX_CHECK_EQ(pr_prompts_pending(h), 2U);
    PBX_CHECK_EQ(pr_used(h, PBX_BOOTSTRAP_POOL_PROMPTS), 2U);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_cancel(h, a1), 0U);
    pr_pump(h);
    pr_waiting(h, a2);
    pr_outcome(h, a1, PBX_IPC_OUTCOME_CANCELLED);
    pr_pump(h);
    PBX_CHECK(pr_req(h, a2)->prompt != PBX_CORE_NIL);
    PBX_CHECK_EQ(pr_req(h, a2)->link.queue, 0U);
    PBX_CHECK_EQ(pr_used(h, PBX_BOOTSTRAP_POOL_PROMPTS), 2U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* A waiting request cancelled (or expired) ends like any other in flight:
 * it leaves the lane, no WITHDRAW goes out (it was never shown), its
 * object copy goes back and its scope is deleted before CANCELLED is
 * published. */
PBX_TEST(core_prompts_waiter_cancelled_leaves_the_lane_cleanly)
{
    th_h *h = th_new_prompts(4, 1);
    pbx_ipc_id x = pr_open(h, 1U, true);
    pbx_ipc_id y = pr_open(h, 2U, true);
    pr_waiting(h, y);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_cancel(h, y), 0U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_PROMPT].count, 0U);
    pr_pump(h);
    TH_TRACE(h, "detach>67 del=66 release=66 wake");
    pr_outcome(h, y, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(pr_req(h, x)->link.state, PBX_CORE_ST_PROMPT);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Every request record is taken by one job's exceptional requests, so
 * its chain in the requests index is as long as the pool: the share still
 * counts the oldest, which holds the one record the share allows, and the
 * other three wait. */
PBX_TEST(core_prompts_share_counts_a_full_chain)
{
    th_h *h = th_new_prompts(4, 8);
    pbx_ipc_begin b;
    pbx_ipc_id ids[4];
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    for (uint32_t k = 0; k < 4U; k++) {
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        PBX_CHECK_EQ(th_open(h, &b, sel, &ids[k]), 0U);
    }
    pr_pump(h);
    PBX_CHECK_EQ(pr_used(h, PBX_BOOTSTRAP_POOL_PROMPTS), 1U);
    PBX_CHECK_EQ(pr_prompts_pending(h), 1U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_PROMPT].count, 3U);
    PBX_CHECK(pr_req(h, ids[0])->prompt != PBX_CORE_NIL);
    for (uint32_t k = 1; k < 4U; k++) {
        pr_waiting(h, ids[k]);
    }
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* The count of prompt waits saturates at UINT32_MAX instead of wrapping
 * to 0 (a counter that reads as "never waited" after 2^32 waits). */
PBX_TEST(core_prompts_wait_count_saturates)
{
    th_h *h = th_new_prompts(4, 1);
    pbx_ipc_id x = pr_open(h, 1U, true);
    PBX_CHECK_EQ(pr_prompts_pending(h), 1U);
    PBX_CHECK_EQ(pr_req(h, x)->link.state, PBX_CORE_ST_PROMPT);
    h->core.prompt_waits = UINT32_MAX;
    pbx_ipc_id y = pr_open(h, 2U, true);
    pr_waiting(h, y);
    PBX_CHECK_EQ(h->core.prompt_waits, UINT32_MAX);
    th_free(h);
}
