/*
 * test_core_walks.c: every walk over a pool reaches its last record with
 * that record live (issue 22 item 8). Each test fills the pool (its
 * capacity, the last index included) and checks the walk acted on every
 * record, the last above all: the broker-loss walks over requests and
 * grants, the route-loss walks (vfsd's requests and grants, procd's
 * grants), ttyd's resync walk on return, and the EXPIRE walks of a job's
 * request and grant chains, each as long as its pool; the OPEN deadline
 * walk, the per-job prompt count and the splice of the prompt waiters
 * over a full requests pool; and, over a full calls pool whose last
 * record belongs to the class walked, the call deadline walk, the
 * route-down walk, the prompt resend walk and the reply match walk. A
 * class FIFO never holds more than one call window, a third of the calls
 * pool at most, so those four walks are shown reaching the tail of their
 * FIFO (the pool's last index), not a FIFO as long as the pool.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))
/* Records per pool: every walk must reach index WALK_N - 1. */
#define WALK_N 4U

/* How a grant walk is driven. */
enum walk_how {
    WALK_BROKER = 0,
    WALK_VFSD,
    WALK_PROCD,
    WALK_EXPIRE,
    WALK_TTYD,
    WALK_HOWS
};

/* Drives walk how on h (b: the job every record belongs to). */
static void walk_drive(th_h *h, int how, const pbx_ipc_begin *b)
{
    switch (how) {
    case WALK_BROKER:
        PBX_CHECK_EQ(pbx_core_on_broker_lost(&h->core), PBX_OK);
        break;
    case WALK_VFSD:
        PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD),
                     PBX_OK);
        break;
    case WALK_PROCD:
        PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_PROCD),
                     PBX_OK);
        break;
    case WALK_EXPIRE:
        PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                               b->ctx.job_id, b->ctx.job_gen, 0U),
                     0U);
        break;
    default:
        PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD),
                     PBX_OK);
        PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD),
                     PBX_OK);
        break;
    }
}

/* Every grant record is LIVE (approved, delivered, its request retired),
 * one job's, installed by procd; each walk must end (or, ttyd's return,
 * resend the row of) every one of them, the last index included. */
PBX_TEST(core_grant_walks_reach_the_last_live_record)
{
    for (int how = 0; how < WALK_HOWS; how++) {
        th_h *h = th_new(WALK_N);
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
        for (uint32_t k = 0; k < WALK_N; k++) {
            (void)th_approve(h, &b, sel, false, NULL, NULL);
        }
        for (uint32_t g = 0; g < WALK_N; g++) {
            PBX_REQUIRE(pbx_core_inspect_grant(&h->core, g)->link.state ==
                        PBX_CORE_ST_LIVE);
        }
        th_clear_trace(h);
        walk_drive(h, how, &b);
        for (uint32_t g = 0; g < WALK_N; g++) {
            const pbx_core_grant *gr = pbx_core_inspect_grant(&h->core, g);
            if (how == WALK_TTYD) {
                PBX_CHECK_EQ(gr->link.state, PBX_CORE_ST_LIVE);
                PBX_CHECK((gr->flags & PBX_CORE_GRANT_F_RESYNC) != 0U);
            } else {
                PBX_CHECK(gr->link.state != PBX_CORE_ST_LIVE);
            }
        }
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        th_free(h);
    }
}

/* Every request record is in flight (parked at the trusted prompt,
 * holding its resolved object); the broker-loss walk cancels every one,
 * vfsd's loss denies every one (PROVIDER_LOST), and an EXPIRE of their
 * job cancels every one: the last index included. */
PBX_TEST(core_request_walks_reach_the_last_live_record)
{
    static const int hows[] = {WALK_BROKER, WALK_VFSD, WALK_EXPIRE};
    for (size_t w = 0; w < sizeof(hows) / sizeof(hows[0]); w++) {
        th_h *h = th_new(WALK_N);
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        for (uint32_t k = 0; k < WALK_N; k++) {
            pbx_ipc_id id = {0, 0};
            PBX_REQUIRE(th_open_parked(h, &b, sel, &id) == 0U);
            PBX_REQUIRE(id.index == k);
        }
        walk_drive(h, hows[w], &b);
        for (uint32_t i = 0; i < WALK_N; i++) {
            const pbx_core_request *r = pbx_core_inspect_request(&h->core, i);
            PBX_CHECK_EQ(r->link.state, PBX_CORE_ST_RELEASE);
            PBX_CHECK_EQ(r->outcome, hows[w] == WALK_VFSD
                                         ? PBX_IPC_OUTCOME_DENIED
                                         : PBX_IPC_OUTCOME_CANCELLED);
        }
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        th_free(h);
    }
}

/* The generation-zero CANCEL's walk of a job's request chain, as long as
 * the pool: with every request record in one job, the one request of the
 * named session is found wherever it sits in the chain (first or last
 * begun), and only it is cancelled. */
PBX_TEST(core_cancel_correlation_walk_reaches_the_last_record)
{
    for (uint32_t at = 0; at < WALK_N; at += WALK_N - 1U) {
        th_h *h = th_new(WALK_N);
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        uint64_t other = b.ctx.session + 1U;
        for (uint32_t k = 0; k < WALK_N; k++) {
            pbx_ipc_begin bk = b;
            bk.ctx.session = k == at ? b.ctx.session : other;
            pbx_ipc_id id = {0, 0};
            PBX_REQUIRE(th_open_parked(h, &bk, sel, &id) == 0U);
            PBX_REQUIRE(id.index == k);
        }
        PBX_CHECK_EQ(
            th_cancel_corr(h, b.ctx.job_id, b.ctx.job_gen, b.ctx.session), 0U);
        for (uint32_t i = 0; i < WALK_N; i++) {
            const pbx_core_request *r = pbx_core_inspect_request(&h->core, i);
            PBX_CHECK_EQ(r->link.state == PBX_CORE_ST_RELEASE, i == at);
        }
        th_free(h);
    }
}

/* ---- the OPEN deadline walk ------------------------------------------- */

/* Every request record is begun and never committed, so the OPEN queue
 * is as long as the pool, the last index its tail. The OPEN deadline walk
 * (pbx_core_on_time) ends none before the deadline and every one at it,
 * CANCELLED, the last index included. */
PBX_TEST(core_open_deadline_walk_reaches_the_last_open_request)
{
    th_h *h = th_new(WALK_N);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (uint32_t k = 0; k < WALK_N; k++) {
        pbx_ipc_id id = {0, 0};
        uint32_t dest = 0;
        PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
        PBX_REQUIRE(id.index == k);
    }
    PBX_REQUIRE(h->core.queues[PBX_CORE_Q_OPEN].count == WALK_N);
    PBX_REQUIRE(h->core.queues[PBX_CORE_Q_OPEN].tail == WALK_N - 1U);
    PBX_CHECK_EQ(th_time(h, 4999U), PBX_OK);
    PBX_CHECK_EQ(h->core.opens_expired, 0U);
    for (uint32_t i = 0; i < WALK_N; i++) {
        PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, i)->link.state,
                     PBX_CORE_ST_OPEN);
    }
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    PBX_CHECK_EQ(h->core.opens_expired, WALK_N);
    for (uint32_t i = 0; i < WALK_N; i++) {
        const pbx_core_request *r = pbx_core_inspect_request(&h->core, i);
        PBX_CHECK_EQ(r->link.state, PBX_CORE_ST_RELEASE);
        PBX_CHECK_EQ(r->outcome, PBX_IPC_OUTCOME_CANCELLED);
    }
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    th_free(h);
}

/* ---- walks over the calls pool ----------------------------------------- */

/* Calls per deadline class (the PBX1 call window) in the full calls pool
 * below: the pool holds three windows (one per peer route), so three
 * pairs of requests fill it, the last pair at indices 4 and 5. */
#define WALK_W     2U
#define WALK_CALLS (3U * WALK_W)

/* How many pending replies are to calls named name. */
static uint32_t walk_pending(const th_h *h, const char *name)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < h->npend; k++) {
        n += strcmp(h->pend[k].name, name) == 0 ? 1U : 0U;
    }
    return n;
}

/* Whether name is one of the nkeep names in keep. */
static bool walk_kept(const char *name, const char *const *keep, size_t nkeep)
{
    for (size_t k = 0; k < nkeep; k++) {
        if (strcmp(name, keep[k]) == 0) {
            return true;
        }
    }
    return false;
}

/* Opens two requests of b (ids[0], ids[1]) with replies held and runs the
 * core, delivering every reply except those to calls named in keep, until
 * two calls named at (the last of keep) are pending. Calls the earlier
 * pairs left pending stay pending, so the pair's calls take the records
 * those left free, the lowest indices first. */
static void walk_pair(th_h *h, const pbx_ipc_begin *b, const char *const *keep,
                      size_t nkeep, pbx_ipc_id ids[2])
{
    const char *at = keep[nkeep - 1U];
    h->hold = true;
    for (uint32_t k = 0; k < 2U; k++) {
        PBX_REQUIRE(th_open(h, b, sel, &ids[k]) == 0U);
    }
    for (uint32_t guard = 0; guard < 1000U && walk_pending(h, at) < 2U;
         guard++) {
        bool progressed = false;
        for (uint32_t j = 0; j < h->npend;) {
            if (walk_kept(h->pend[j].name, keep, nkeep)) {
                j++;
            } else {
                PBX_REQUIRE(th_deliver(h, j) == PBX_OK);
            }
        }
        PBX_REQUIRE(pbx_core_step(&h->core, &progressed) == PBX_OK);
    }
    PBX_REQUIRE(walk_pending(h, at) == 2U);
    th_clear_trace(h);
}

/* Fills the calls pool of h: requests ids[0..1] wait on DETACH (vfsd),
 * ids[2..3] on call mid and ids[4..5] on call last, their replies held.
 * Every call record is live and the last pair's calls hold indices 4 and
 * 5, the last one ids[5]'s. ttyd is scripted to answer POLICY with PROMPT
 * for every pair that goes on to a "prompt" call. */
static void walk_fill(th_h *h, const char *mid, const char *last,
                      pbx_ipc_id ids[6])
{
    const char *const keep[3] = {"detach", mid, last};
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    walk_pair(h, &b, keep, 1U, &ids[0]);
    for (size_t p = 1; p < 3U; p++) {
        if (strcmp(keep[p], "prompt") == 0) {
            th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
            th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        }
        walk_pair(h, &b, keep, p + 1U, &ids[2U * p]);
    }
    PBX_REQUIRE(pbx_core_calls_outstanding(&h->core) == WALK_CALLS);
    PBX_REQUIRE(h->core.pools[PBX_BOOTSTRAP_POOL_CALLS].free_count == 0U);
    for (uint32_t o = 0; o < WALK_CALLS; o++) {
        const pbx_core_outcall *oc = pbx_core_inspect_call(&h->core, o);
        PBX_REQUIRE(oc->link.live != 0U);
        PBX_REQUIRE(oc->owner == ids[o & ~1U].index ||
                    oc->owner == ids[o | 1U].index);
    }
    PBX_REQUIRE(pbx_core_inspect_call(&h->core, WALK_CALLS - 1U)->owner ==
                ids[5].index);
}

/* The state of request id's record. */
static uint16_t walk_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* Checks that a walk over the full calls pool walk_fill left (ids[0..6),
 * the walked class last) ended exactly the walked class's two requests,
 * ids[4] and ids[5], each DENIED for reason, and no other request. */
static void walk_check_last_two_ended(const th_h *h, const pbx_ipc_id ids[6],
                                      uint16_t reason)
{
    for (uint32_t k = 0; k < 6U; k++) {
        const pbx_core_request *r =
            pbx_core_inspect_request(&h->core, ids[k].index);
        if (k >= 4U) {
            PBX_CHECK_EQ(r->link.state, PBX_CORE_ST_RELEASE);
            PBX_CHECK_EQ(r->outcome, PBX_IPC_OUTCOME_DENIED);
            PBX_CHECK_EQ(r->reason, reason);
        } else {
            PBX_CHECK(r->link.state != PBX_CORE_ST_RELEASE);
        }
    }
}

/* The calls pool is full (six calls, two per class of three classes) and
 * the PROMPT class, the last one the deadline walk visits, holds the last
 * two records, index 5 its tail. Only the PROMPT deadline is short: the
 * walk (pbx_core_on_time) ends nothing before it, then both prompts, the
 * last record included (each request DENIED, PROMPT_TIMEOUT), and no
 * call of another class. */
PBX_TEST(core_call_deadline_walk_reaches_the_last_call)
{
    uint32_t ms[PBX_BOOTSTRAP_TIME_COUNT] = {30000U, 30000U, 30000U, 30000U,
                                             1000U,  30000U, 30000U};
    th_h *h = th_new_times(WALK_CALLS, WALK_W, ms);
    pbx_ipc_id ids[6];
    walk_fill(h, "install", "prompt", ids);
    PBX_CHECK_EQ(th_time(h, 999U), PBX_OK);
    PBX_CHECK_EQ(h->core.calls_expired, 0U);
    PBX_CHECK_EQ(th_time(h, 1000U), PBX_OK);
    PBX_CHECK_EQ(h->core.calls_expired, 2U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_PROMPT], 0U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), WALK_CALLS - 2U);
    walk_check_last_two_ended(h, ids, PBX_IPC_REASON_PROMPT_TIMEOUT);
    th_free(h);
}

/* The calls pool is full and ttyd's POLICY class holds its last two
 * records, index 5 its tail; two PROMPT calls (also on ttyd) sit below
 * them. ttyd's loss ends both POLICY calls through the route-down walk,
 * the last record included (DENIED, PEER_TIMEOUT), and neither PROMPT
 * (a prompt outlives its ttyd) nor vfsd's DETACH calls. */
PBX_TEST(core_route_down_call_walk_reaches_the_last_call)
{
    th_h *h = th_new_window(WALK_CALLS, WALK_W);
    pbx_ipc_id ids[6];
    walk_fill(h, "prompt", "policy", ids);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    PBX_CHECK_EQ(h->core.calls_expired, 2U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_TTYD], 0U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_PROMPT], WALK_W);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_VFSD], WALK_W);
    walk_check_last_two_ended(h, ids, PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK_EQ(walk_state(h, ids[2]), PBX_CORE_ST_PROMPT);
    PBX_CHECK_EQ(walk_state(h, ids[3]), PBX_CORE_ST_PROMPT);
    th_free(h);
}

/* The calls pool is full and the PROMPT class holds its last two records,
 * index 5 its tail. ttyd goes down and comes back: the resend walk shows
 * both prompts to the new ttyd again, the last record included, each
 * with its own request's identity, and sends nothing else. */
PBX_TEST(core_prompt_resend_walk_reaches_the_last_call)
{
    th_h *h = th_new_window(WALK_CALLS, WALK_W);
    pbx_ipc_id ids[6];
    walk_fill(h, "install", "prompt", ids);
    uint32_t before = h->route_sends[PBX_CORE_ROUTE_TTYD];
    uint32_t pend = h->npend;
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    PBX_CHECK_EQ(h->route_sends[PBX_CORE_ROUTE_TTYD], before + 2U);
    PBX_REQUIRE(h->npend == pend + 2U);
    for (uint32_t k = 0; k < 2U; k++) {
        const th_pend *p = &h->pend[pend + k];
        PBX_CHECK_EQ(strcmp(p->name, "prompt"), 0);
        PBX_CHECK_EQ(p->id.index, ids[4U + k].index);
        PBX_CHECK_EQ(p->id.gen, ids[4U + k].gen);
        PBX_CHECK(
            (pbx_core_inspect_request(&h->core, ids[4U + k].index)->flags &
             PBX_CORE_REQ_F_PROMPT) != 0U);
    }
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_PROMPT], WALK_W);
    th_free(h);
}

/* ---- the per-job prompt count ---------------------------------------- */

/* Fills the requests pool of h (share 1) with one job's requests: index
 * 0 holds the job's prompt record, parked at the prompt, and the other
 * three, all begun before any asks, each ask for one. */
static void walk_prompt_waiters(th_h *h)
{
    PBX_REQUIRE(h->core.prompt_share == 1U);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id id = {0, 0};
    PBX_REQUIRE(th_open_parked(h, &b, sel, &id) == 0U);
    PBX_REQUIRE(id.index == 0U);
    PBX_REQUIRE(pbx_core_inspect_request(&h->core, 0U)->prompt != PBX_CORE_NIL);
    for (uint32_t k = 1; k < WALK_N; k++) {
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
        PBX_REQUIRE(id.index == k);
    }
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
}

/* One job may hold one prompt record (share 1) and fills the requests
 * pool. Its first request (index 0, the last of the job's chain, which
 * grows at its head) holds the job's prompt record, parked at the
 * prompt. The other three are begun before any asks, so each count walks
 * a chain as long as the pool: each must find index 0's record at the
 * chain's end and wait on the prompt lane, taking none. */
PBX_TEST(core_prompt_count_walk_reaches_the_last_request)
{
    th_h *h = th_new_prompts(WALK_N, PBX_CORE_PROMPT_SHARE_DIVISOR);
    walk_prompt_waiters(h);
    PBX_CHECK_EQ(h->core.prompt_waits, WALK_N - 1U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_PROMPT].count, WALK_N - 1U);
    PBX_CHECK(pbx_core_inspect_request(&h->core, 0U)->prompt != PBX_CORE_NIL);
    for (uint32_t i = 1; i < WALK_N; i++) {
        PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, i)->prompt,
                     PBX_CORE_NIL);
    }
    th_free(h);
}

/* ---- the splice of the prompt waiters ---------------------------------- */

/* The job's prompt record is freed (its holder cancelled) while the three
 * other requests wait for one, the pool's last index the tail of their
 * lane: the splice moves every waiter back to the intake lane and
 * re-tags each with it, the last included, so each can later be
 * unlinked from the lane it is really on. */
PBX_TEST(core_prompt_waiter_splice_retags_the_last_waiter)
{
    th_h *h = th_new_prompts(WALK_N, PBX_CORE_PROMPT_SHARE_DIVISOR);
    walk_prompt_waiters(h);
    const pbx_core_queue *w = &h->core.queues[PBX_CORE_Q_WAIT_PROMPT];
    PBX_REQUIRE(w->count == WALK_N - 1U && w->tail == WALK_N - 1U);
    pbx_ipc_id id0 =
        pbx_core_inspect_id(&h->core, PBX_BOOTSTRAP_POOL_REQUESTS, 0U);
    PBX_CHECK_EQ(th_cancel(h, id0), 0U);
    /* The holder was deferred to a tick; its release takes the lane, and
     * its record (the prompt record with it) goes once its decision is
     * taken. */
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_REQUIRE(w->count == WALK_N - 1U);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id0, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_REQUIRE(w->count == 0U);
    for (uint32_t i = 1; i < WALK_N; i++) {
        PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, i)->link.queue,
                     PBX_CORE_Q_INTAKE + 1U);
    }
    /* Served from there in order: the first takes the record, the other
     * two wait again. */
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK(pbx_core_inspect_request(&h->core, 1U)->prompt != PBX_CORE_NIL);
    PBX_CHECK_EQ(w->count, WALK_N - 2U);
    th_free(h);
}

/* ---- the reply match walk ---------------------------------------------- */

/* The calls pool is full and the PROMPT class holds its last two records,
 * index 5 its tail. The reply to that last call is matched (the walk of
 * the class's FIFO reaches it), not refused: its request leaves the
 * prompt while the other prompt stays outstanding. */
PBX_TEST(core_reply_match_walk_reaches_the_last_call)
{
    th_h *h = th_new_window(WALK_CALLS, WALK_W);
    pbx_ipc_id ids[6];
    walk_fill(h, "install", "prompt", ids);
    uint32_t k = TH_NONE;
    for (uint32_t j = 0; j < h->npend; j++) {
        if (strcmp(h->pend[j].name, "prompt") == 0 &&
            h->pend[j].id.index == ids[5].index) {
            k = j;
        }
    }
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 0U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_PROMPT], 1U);
    PBX_CHECK(walk_state(h, ids[5]) != PBX_CORE_ST_PROMPT);
    PBX_CHECK_EQ(walk_state(h, ids[4]), PBX_CORE_ST_PROMPT);
    th_free(h);
}
