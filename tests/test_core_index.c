/*
 * test_core_index.c: the correlation index (requests and grants chained
 * by job in buckets embedded in their pools). Generation-zero CANCEL with
 * no, one and two candidates and with keys that collide in one bucket,
 * stale generations after slot reuse, EXPIRE of a job with records in
 * every kind of state, of one invocation, and of two jobs back to back,
 * and the bound itself: index_visits shows that a CANCEL or EXPIRE visits
 * only its job's chain, however many unrelated records are live.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Returns the first job id from `from` on (generation gen) whose bucket in
 * the request pool is (want_same ? bucket : anything but bucket). */
static uint64_t ix_job(th_h *h, uint64_t from, uint32_t gen, uint32_t bucket,
                       bool want_same)
{
    for (uint64_t j = from; j < from + 100000U; j++) {
        uint32_t b = pbx_core_inspect_bucket(
            &h->core, PBX_BOOTSTRAP_POOL_REQUESTS, j, gen);
        if ((b == bucket) == want_same) {
            return j;
        }
    }
    PBX_REQUIRE(false);
    return 0;
}

/* The bucket of job (id, gen) in the request pool. */
static uint32_t ix_bucket(th_h *h, uint64_t job, uint32_t gen)
{
    return pbx_core_inspect_bucket(&h->core, PBX_BOOTSTRAP_POOL_REQUESTS, job,
                                   gen);
}

/* Opens b and leaves it parked at the trusted prompt (in flight). */
static pbx_ipc_id ix_parked(th_h *h, const pbx_ipc_begin *b)
{
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open_parked(h, b, sel, &id), 0U);
    return id;
}

/* Runs b to an approved decision, delivered unless keep; returns the
 * grant and the request through *req. */
static pbx_ipc_id ix_approve(th_h *h, const pbx_ipc_begin *b, bool keep,
                             pbx_ipc_id *req)
{
    return th_approve(h, b, sel, keep, req, NULL);
}

/* The state of request id's record. */
static uint16_t ix_req_state(th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* The state of grant id's record. */
static uint16_t ix_grant_state(th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_grant(&h->core, id.index)->link.state;
}

PBX_TEST(core_index_hash_spreads_and_buckets_fit_the_pool)
{
    th_h *h = th_new(8);
    uint32_t seen[8] = {0};
    /* Sequential jobs reach every bucket, and the hash is a pure function
     * of the key. */
    for (uint64_t j = 1; j <= 64U; j++) {
        uint32_t b = ix_bucket(h, j, 1U);
        PBX_CHECK(b < 8U);
        seen[b < 8U ? b : 0U]++;
        PBX_CHECK_EQ(pbx_core_inspect_hash(j, 1U),
                     pbx_core_inspect_hash(j, 1U));
    }
    for (size_t b = 0; b < 8U; b++) {
        PBX_CHECK(seen[b] > 0U);
    }
    /* Neighbouring generations of one job are unrelated. */
    PBX_CHECK(pbx_core_inspect_hash(0x70BU, 2U) !=
              pbx_core_inspect_hash(0x70BU, 3U));
    PBX_CHECK(pbx_core_inspect_hash(0x70BU, 2U) !=
              pbx_core_inspect_hash(0x70CU, 2U));
    th_free(h);
}

PBX_TEST(core_index_cancel_zero_one_two_candidates)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    uint64_t job = b.ctx.job_id;
    uint32_t gen = b.ctx.job_gen;
    uint64_t ses = b.ctx.session;
    /* No candidate: an empty bucket is not walked at all. */
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(h->core.index_visits, 0U);
    /* One candidate of another session is still no candidate. */
    pbx_ipc_id a = ix_parked(h, &b);
    uint32_t v = h->core.index_visits;
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses + 1U), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(h->core.index_visits - v, 1U);
    /* Two candidates: ambiguous, nothing changes, and the walk stopped at
     * the second match. */
    pbx_ipc_id c = ix_parked(h, &b);
    v = h->core.index_visits;
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), PBX_E_CORE_AMBIGUOUS);
    PBX_CHECK_EQ(h->core.index_visits - v, 2U);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(ix_req_state(h, a), PBX_CORE_ST_PROMPT);
    PBX_CHECK_EQ(ix_req_state(h, c), PBX_CORE_ST_PROMPT);
    /* One candidate (the other cancelled exactly and retired once its
     * decision was delivered): generation zero ends exactly that one. */
    PBX_CHECK_EQ(th_cancel(h, c), 0U);
    th_run(h);
    TH_CHECK_OUTCOME(h, c, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), 0U);
    PBX_CHECK_EQ(ix_req_state(h, a), PBX_CORE_ST_RELEASE);
    th_run(h);
    TH_TRACE(h, "detach>65 del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_index_colliding_keys_stay_exact)
{
    th_h *h = th_new(4);
    pbx_ipc_begin ba;
    pbx_ipc_begin bb;
    th_default_begin(&ba, sel, SEL_LEN);
    /* Three different jobs that land in one bucket. */
    uint32_t bucket = ix_bucket(h, ba.ctx.job_id, ba.ctx.job_gen);
    uint64_t jb = ix_job(h, ba.ctx.job_id + 1U, ba.ctx.job_gen, bucket, true);
    uint64_t jc = ix_job(h, jb + 1U, ba.ctx.job_gen, bucket, true);
    PBX_CHECK(jb != ba.ctx.job_id && jc != jb);
    bb = ba;
    bb.ctx.job_id = jb;
    pbx_ipc_id a = ix_parked(h, &ba);
    pbx_ipc_id b = ix_parked(h, &bb);
    /* Job C has nothing: its walk meets both records, matches neither. */
    uint32_t v = h->core.index_visits;
    PBX_CHECK_EQ(th_cancel_corr(h, jc, ba.ctx.job_gen, ba.ctx.session),
                 PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(h->core.index_visits - v, 2U);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB, jc,
                           ba.ctx.job_gen, 0U),
                 0U);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    /* Same bucket, same session: still not ambiguous, the keys differ. */
    PBX_CHECK_EQ(
        th_cancel_corr(h, ba.ctx.job_id, ba.ctx.job_gen, ba.ctx.session), 0U);
    PBX_CHECK_EQ(ix_req_state(h, a), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(ix_req_state(h, b), PBX_CORE_ST_PROMPT);
    th_run(h);
    TH_TRACE(h, "detach>65 del=64 release=64 wake");
    /* EXPIRE of job B ends B only, though A is still chained beside it. */
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB, jb,
                           ba.ctx.job_gen, 0U),
                 0U);
    PBX_CHECK_EQ(ix_req_state(h, b), PBX_CORE_ST_RELEASE);
    th_run(h);
    TH_TRACE(h, "detach>67 del=66 release=66 wake");
    PBX_CHECK_EQ(th_decision(h, a, &(pbx_ipc_decision){0}, &(uint32_t){0}), 0U);
    PBX_CHECK_EQ(th_decision(h, b, &(pbx_ipc_decision){0}, &(uint32_t){0}), 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_index_stale_generation_after_slot_reuse)
{
    th_h *h = th_new(1);
    pbx_ipc_begin bj;
    pbx_ipc_begin bk;
    th_default_begin(&bj, sel, SEL_LEN);
    bk = bj;
    bk.ctx.job_id = bj.ctx.job_id + 1U;
    /* Job J's request and grant come and go. */
    pbx_ipc_id rj = {0, 0};
    pbx_ipc_id gj = ix_approve(h, &bj, false, &rj);
    PBX_CHECK_EQ(th_consume(h, gj), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    /* Job K takes the very same records under new generations. */
    pbx_ipc_id rk = {0, 0};
    pbx_ipc_id gk = ix_approve(h, &bk, true, &rk);
    PBX_CHECK_EQ(rk.index, rj.index);
    PBX_CHECK(rk.gen != rj.gen);
    PBX_CHECK_EQ(gk.index, gj.index);
    PBX_CHECK(gk.gen != gj.gen);
    /* J's old identities are stale, and J's correlation finds nothing:
     * the reused records are chained under K only. */
    PBX_CHECK_EQ(th_cancel(h, rj), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_cancel_grant(h, gj), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(
        th_cancel_corr(h, bj.ctx.job_id, bj.ctx.job_gen, bj.ctx.session),
        PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           bj.ctx.job_id, bj.ctx.job_gen, 0U),
                 0U);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(ix_grant_state(h, gk), PBX_CORE_ST_LIVE);
    /* K's own expiry ends K's grant; its published, undelivered
     * approval stays as published. */
    uint32_t wakes = h->wake_count;
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           bk.ctx.job_id, bk.ctx.job_gen, 0U),
                 0U);
    PBX_CHECK_EQ(ix_grant_state(h, gk), PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(ix_req_state(h, rk), PBX_CORE_ST_DECIDED);
    th_run(h);
    /* The wake went out with the approval; none is repeated. */
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(h->wake_count, wakes);
    PBX_CHECK_EQ(ix_grant_state(h, gk), PBX_CORE_ST_FREE);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, rk, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, gk.index);
    PBX_CHECK_EQ(d.grant.gen, gk.gen);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    /* K's retired generation is as stale as J's for what comes later. */
    PBX_CHECK_EQ(th_cancel_grant(h, gk), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_decision(h, rk, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Opens b up to BEGIN only (before COMMIT). */
static pbx_ipc_id ix_begun(th_h *h, const pbx_ipc_begin *b)
{
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    PBX_CHECK_EQ(th_begin(h, b, &id, &dest), 0U);
    th_clear_trace(h);
    return id;
}

PBX_TEST(core_index_expire_job_in_every_state)
{
    th_h *h = th_new(8);
    pbx_ipc_begin b;
    pbx_ipc_begin other;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    other = b;
    other.ctx.job_id = b.ctx.job_id + 1U;
    /* Job J: granted and delivered, granted and undelivered, denied and
     * undelivered, parked at the prompt, and begun only; job K: granted
     * and parked. */
    pbx_ipc_id g_done = ix_approve(h, &b, false, NULL);
    pbx_ipc_id r_kept = {0, 0};
    pbx_ipc_id g_kept = ix_approve(h, &b, true, &r_kept);
    pbx_ipc_id r_denied = {0, 0};
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    PBX_CHECK_EQ(th_open(h, &b, sel, &r_denied), 0U);
    th_run(h);
    th_clear_trace(h);
    pbx_ipc_id r_parked = ix_parked(h, &b);
    pbx_ipc_id r_begun = ix_begun(h, &b);
    pbx_ipc_id g_other = ix_approve(h, &other, false, NULL);
    pbx_ipc_id r_other = ix_parked(h, &other);
    uint32_t expire_row = (uint32_t)pbx_core_fsm_find(
        PBX_CORE_MACHINE_GRANT, PBX_CORE_ST_LIVE, PBX_CORE_EV_EXPIRE);
    uint32_t hits = h->core.fsm_hits[expire_row];
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0U),
                 0U);
    /* Within the event: one transition per covered record, nothing else. */
    PBX_CHECK_EQ(h->core.fsm_hits[expire_row] - hits, 2U);
    PBX_CHECK_EQ(ix_grant_state(h, g_done), PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(ix_grant_state(h, g_kept), PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(ix_req_state(h, r_parked), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(ix_req_state(h, r_begun), PBX_CORE_ST_RELEASE);
    PBX_CHECK(ix_req_state(h, r_denied) == PBX_CORE_ST_NOTIFY ||
              ix_req_state(h, r_denied) == PBX_CORE_ST_DECIDED);
    PBX_CHECK_EQ(ix_grant_state(h, g_other), PBX_CORE_ST_LIVE);
    PBX_CHECK_EQ(ix_req_state(h, r_other), PBX_CORE_ST_PROMPT);
    TH_TRACE(h, "");
    /* Then the lanes, round-robin: the begun request's empty reservation
     * released, the parked one's object handed back and scope deleted,
     * and both grants revoked, removed and retired. (Split-phase change:
     * each grant's REMOVE and RETIRE now go out together in one step.) */
    th_run(h);
    TH_TRACE(h, "release=68 del=67 wake detach>65 del=66 del=64 release=64 "
                "view- retire wake view- retire");
    PBX_CHECK_EQ(ix_grant_state(h, g_done), PBX_CORE_ST_FREE);
    PBX_CHECK_EQ(ix_grant_state(h, g_kept), PBX_CORE_ST_FREE);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    /* The published, undelivered approval stays as published, naming
     * the grant whose generation just retired. */
    TH_CHECK_OUTCOME(h, r_kept, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, g_kept.index);
    PBX_CHECK_EQ(d.grant.gen, g_kept.gen);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    TH_CHECK_OUTCOME(h, r_denied, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    TH_CHECK_OUTCOME(h, r_parked, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    TH_CHECK_OUTCOME(h, r_begun, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    TH_CHECK_OUTCOME(h, r_other, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(ix_grant_state(h, g_other), PBX_CORE_ST_LIVE);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 3U);
    th_free(h);
}

PBX_TEST(core_index_expire_one_invocation)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    b.invocation_id = 5U;
    pbx_ipc_id g5 = ix_approve(h, &b, false, NULL);
    pbx_ipc_id r5 = ix_parked(h, &b);
    b.invocation_id = 6U;
    pbx_ipc_id g6 = ix_approve(h, &b, false, NULL);
    pbx_ipc_id r6 = ix_parked(h, &b);
    /* The job's chains hold both invocations: two requests, two grants;
     * only invocation 5's records end. */
    uint32_t v = h->core.index_visits;
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_INVOCATION,
                           b.ctx.job_id, b.ctx.job_gen, 5U),
                 0U);
    PBX_CHECK_EQ(h->core.index_visits - v, 4U);
    PBX_CHECK_EQ(ix_grant_state(h, g5), PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(ix_req_state(h, r5), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(ix_grant_state(h, g6), PBX_CORE_ST_LIVE);
    PBX_CHECK_EQ(ix_req_state(h, r6), PBX_CORE_ST_PROMPT);
    th_run(h);
    /* REMOVE and RETIRE go out in one step (split-phase change). */
    TH_TRACE(h, "detach>65 del=66 del=64 release=64 view- retire wake");
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, r5, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    TH_CHECK_OUTCOME(h, r6, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(h->last_view.grant.index, g5.index);
    PBX_CHECK_EQ(h->last_view.grant.gen, g5.gen);
    th_free(h);
}

/* Seed: every grant bound to the expired invocation ends, whatever its
 * lifetime's form: its invocation grants and the one-shot grants made
 * within it; another invocation's and the job's grants stay. */
PBX_TEST(core_expire_invocation_ends_its_one_shot_grants)
{
    th_h *h = th_new(8);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b.invocation_id = 5U;
    pbx_ipc_id once5 = ix_approve(h, &b, false, NULL);
    b.ctx.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    pbx_ipc_id inv5 = ix_approve(h, &b, false, NULL);
    b.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b.invocation_id = 6U;
    pbx_ipc_id once6 = ix_approve(h, &b, false, NULL);
    b.invocation_id = 0U;
    pbx_ipc_id once0 = ix_approve(h, &b, false, NULL);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    pbx_ipc_id job = ix_approve(h, &b, false, NULL);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_INVOCATION,
                           b.ctx.job_id, b.ctx.job_gen, 5U),
                 0U);
    PBX_CHECK_EQ(ix_grant_state(h, once5), PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(ix_grant_state(h, inv5), PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(ix_grant_state(h, once6), PBX_CORE_ST_LIVE);
    PBX_CHECK_EQ(ix_grant_state(h, once0), PBX_CORE_ST_LIVE);
    PBX_CHECK_EQ(ix_grant_state(h, job), PBX_CORE_ST_LIVE);
    th_run(h);
    PBX_CHECK_EQ(ix_grant_state(h, once5), PBX_CORE_ST_FREE);
    PBX_CHECK_EQ(ix_grant_state(h, inv5), PBX_CORE_ST_FREE);
    PBX_CHECK_EQ(ix_grant_state(h, once6), PBX_CORE_ST_LIVE);
    th_free(h);
}

PBX_TEST(core_index_expire_while_another_is_in_progress)
{
    th_h *h = th_new(4);
    pbx_ipc_begin bj;
    pbx_ipc_begin bk;
    th_default_begin(&bj, sel, SEL_LEN);
    bj.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    bk = bj;
    bk.ctx.job_id = bj.ctx.job_id + 1U;
    pbx_ipc_id gj = ix_approve(h, &bj, false, NULL);
    pbx_ipc_id gk = ix_approve(h, &bk, false, NULL);
    /* J's expiry stalls in its cleanup: ttyd pushes back on REMOVE. The
     * retirement at vfsd does not wait for it; only REMOVE is owed. */
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           bj.ctx.job_id, bj.ctx.job_gen, 0U),
                 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view-:busy retire");
    PBX_CHECK_EQ(ix_grant_state(h, gj), PBX_CORE_ST_REMOVE);
    /* J again: accepted, and it finds nothing left to end. */
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           bj.ctx.job_id, bj.ctx.job_gen, 0U),
                 0U);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    /* K while J's cleanup is still in progress: accepted, and it ends K. */
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           bk.ctx.job_id, bk.ctx.job_gen, 0U),
                 0U);
    PBX_CHECK_EQ(ix_grant_state(h, gk), PBX_CORE_ST_REVOKE);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    th_run(h);
    TH_TRACE(h, "del=67 view-:busy retire");
    PBX_CHECK_EQ(ix_grant_state(h, gk), PBX_CORE_ST_REMOVE);
    /* No refusal window: a BEGIN of the expired job is a new request the
     * past expiry does not cover (launchd must not broker it). */
    pbx_ipc_id late = ix_begun(h, &bj);
    PBX_CHECK_EQ(ix_req_state(h, late), PBX_CORE_ST_OPEN);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    th_run(h);
    TH_TRACE(h, "view- view-");
    PBX_CHECK_EQ(ix_req_state(h, late), PBX_CORE_ST_OPEN);
    PBX_CHECK_EQ(th_cancel(h, late), 0U);
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, late, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Fills h with `count` begun requests of distinct jobs (generation gen)
 * whose bucket is not `avoid` (or is, when same), from job id `from`. */
static void ix_fill(th_h *h, uint32_t count, uint64_t from, uint32_t avoid,
                    bool same)
{
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    uint64_t j = from;
    for (uint32_t n = 0; n < count; n++) {
        j = ix_job(h, j, b.ctx.job_gen, avoid, same);
        b.ctx.job_id = j++;
        (void)ix_begun(h, &b);
    }
}

/* Runs the bounded-work probe on a harness of capacity cap with `noise`
 * unrelated live requests: returns the visits of a generation-zero CANCEL
 * and of an EXPIRE of the one job that has a request and a grant. */
static void ix_probe(uint32_t cap, uint32_t noise, bool collide,
                     uint32_t *cancel_visits, uint32_t *expire_visits)
{
    th_h *h = th_new(cap);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    uint32_t home = ix_bucket(h, b.ctx.job_id, b.ctx.job_gen);
    (void)ix_approve(h, &b, false, NULL);
    pbx_ipc_id r = ix_parked(h, &b);
    ix_fill(h, noise, b.ctx.job_id + 1U, home, collide);
    PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].free_count,
                 cap - noise - 1U);
    uint32_t v = h->core.index_visits;
    PBX_CHECK_EQ(th_cancel_corr(h, b.ctx.job_id, b.ctx.job_gen, b.ctx.session),
                 0U);
    *cancel_visits = h->core.index_visits - v;
    PBX_CHECK_EQ(ix_req_state(h, r), PBX_CORE_ST_RELEASE);
    v = h->core.index_visits;
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0U),
                 0U);
    *expire_visits = h->core.index_visits - v;
    th_free(h);
}

PBX_TEST(core_index_work_is_bounded_by_the_chain_not_the_pool)
{
    uint32_t c_small = 0;
    uint32_t e_small = 0;
    uint32_t c_big = 0;
    uint32_t e_big = 0;
    /* One live request of the job in its bucket, plus one live grant:
     * the same visits with 2 unrelated live requests in a pool of 8 as
     * with 60 in a pool of 64. */
    ix_probe(8U, 2U, false, &c_small, &e_small);
    ix_probe(64U, 60U, false, &c_big, &e_big);
    PBX_CHECK_EQ(c_small, 1U);
    PBX_CHECK_EQ(e_small, 2U);
    PBX_CHECK_EQ(c_big, c_small);
    PBX_CHECK_EQ(e_big, e_small);
    /* The bound is the chain: unrelated jobs forced into the same bucket
     * are walked (each one record), and nothing beyond them. */
    ix_probe(64U, 20U, true, &c_big, &e_big);
    PBX_CHECK_EQ(c_big, 21U);
    PBX_CHECK_EQ(e_big, 22U);
}
