/*
 * test_core_lifetime.c: one-shot consumption, invocation and job expiry,
 * exact and generation-zero cancellation, stale generations, the
 * terminal cleanup order (revoke, REMOVE, RETIRE), and the finality of a
 * published decision until its delivery, through scripted ops.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Runs b to an approved, delivered decision; returns the grant id. */
static pbx_ipc_id life_approve(th_h *h, const pbx_ipc_begin *b, pbx_ipc_id *req)
{
    return th_approve(h, b, sel, false, req, NULL);
}

PBX_TEST(core_consume_one_shot_revokes_removes_retires_in_order)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id req = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = life_approve(h, &b, &req);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    /* procd's revocation handle first, then REMOVE, then RETIRE. */
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(h->last_view.kind, PBX_IPC_VIEW_REMOVE);
    PBX_CHECK_EQ(h->last_view.grant.gen, g.gen);
    PBX_CHECK(th_quiescent(h));
    /* One-shot: a second consumption names nothing. */
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    /* Reuse bumps both generations: the old ids are stale. */
    pbx_ipc_id req2 = {0, 0};
    pbx_ipc_id g2 = life_approve(h, &b, &req2);
    PBX_CHECK_EQ(g2.index, g.index);
    PBX_CHECK(g2.gen != g.gen);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(req2.index, req.index);
    PBX_CHECK_EQ(th_cancel(h, req), PBX_E_CORE_UNKNOWN);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(th_consume(h, g2), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_consume_refuses_other_lifetimes_and_waits_for_acks)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    pbx_ipc_id g = life_approve(h, &b, NULL);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_LIFETIME);
    /* Job expiry ends it; REMOVE and RETIRE retry until exactly acked,
     * each on its own: ttyd's push-back does not hold RETIRE back. Both
     * failing with an inexact RETIRE waits for a tick, which retries
     * both. */
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_WRONG_ECHO, 0);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0),
                 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view-:busy retire");
    PBX_CHECK(th_conserved(h));
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    /* The inexact RETIRE waits for a tick, not for vfsd's route, which is
     * writable all along. */
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "view- retire");
    PBX_CHECK(th_quiescent(h));
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0),
                 0U);
    th_run(h);
    TH_TRACE(h, "");
    th_free(h);
}

PBX_TEST(core_expire_invocation_and_job_exactly)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    b.invocation_id = 5U;
    pbx_ipc_id gi = life_approve(h, &b, NULL);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    b.invocation_id = 0U;
    pbx_ipc_id gj = life_approve(h, &b, NULL);
    PBX_CHECK(gi.index != gj.index);
    /* Only launchd may expire. */
    PBX_CHECK_EQ(th_expire(h, TH_BADGE, PBX_IPC_EXPIRE_JOB, b.ctx.job_id,
                           b.ctx.job_gen, 0),
                 PBX_E_CORE_PARTITION);
    /* Another job generation touches nothing. */
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen + 1U, 0),
                 0U);
    th_run(h);
    TH_TRACE(h, "");
    /* Invocation expiry ends only the invocation grant. */
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_INVOCATION,
                           b.ctx.job_id, b.ctx.job_gen, 5U),
                 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(h->last_view.grant.index, gi.index);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0),
                 0U);
    th_run(h);
    TH_TRACE(h, "del=67 view- retire");
    PBX_CHECK_EQ(h->last_view.grant.index, gj.index);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_cancel_in_flight_and_before_commit)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    /* Before COMMIT: the empty reservation is proven empty, released. */
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    /* A refused COMMIT receipt sits in the reservation and its deletion
     * must be retried: its orphan record deletes it exactly once, and only
     * then is the reservation released (seeds 144, 1138, 1291 tracked the
     * slot twice: release deleted it too). */
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_CHECK_EQ(th_selector(h, id, 0, sel, SEL_LEN), 0U);
    {
        uint8_t buf[64];
        size_t n = 0;
        pbx_ipc_commit c = {dest};
        pbx_core_out out;
        pbx_err core = PBX_OK;
        PBX_REQUIRE(pbx_ipc_commit_encode(id, &c, buf, sizeof(buf), &n) ==
                    PBX_OK);
        uint32_t slot =
            th_put_cap(h, dest, PBX_CAPABI_KIND_ENDPOINT,
                       PBX_CAPABI_RIGHT_SEND | PBX_CAPABI_RIGHT_MANAGE,
                       PBX_CAPABI_PROV_RECEIVED);
        th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
        PBX_CHECK_EQ(th_public(h, h->badge, buf, n, &slot, 1, &core, &out),
                     PBX_E_CORE_CLEANUP_PENDING);
        PBX_CHECK_EQ(core, PBX_OK);
    }
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 del~64 del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    /* Waiting at the prompt: object back, scope gone, CANCELLED. */
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_RETRY, 0, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    PBX_CHECK_EQ(th_cancel(h, id), PBX_E_CORE_STATE);
    th_run(h);
    TH_TRACE(h, "detach>65 del=64 release=64 wake");
    /* Route-ready after the cancel finds nothing parked. */
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK(th_quiescent(h));
    /* Stale generation: refused. */
    pbx_ipc_id stale = {id.index, id.gen + 7U};
    PBX_CHECK_EQ(th_cancel(h, stale), PBX_E_CORE_UNKNOWN);
    th_free(h);
}

/* Opens b and leaves it parked at the trusted prompt. */
static pbx_ipc_id life_parked(th_h *h, const pbx_ipc_begin *b)
{
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open_parked(h, b, sel, &id), 0U);
    return id;
}

PBX_TEST(core_cancel_generation_zero_only_when_unambiguous)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    uint64_t job = b.ctx.job_id;
    uint32_t gen = b.ctx.job_gen;
    uint64_t ses = b.ctx.session;
    pbx_ipc_id a = life_parked(h, &b);
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses + 1U), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen + 1U, ses), PBX_E_CORE_UNKNOWN);
    /* Two live correlations: ambiguous, and nothing changes. */
    pbx_ipc_id c = life_parked(h, &b);
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), PBX_E_CORE_AMBIGUOUS);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(th_cancel(h, c), 0U);
    th_run(h);
    TH_CHECK_OUTCOME(h, c, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    th_clear_trace(h);
    /* Another caller cannot use the correlation of this one. */
    h->badge = TH_BADGE + 1U;
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_cancel(h, a), PBX_E_CORE_UNKNOWN);
    h->badge = TH_BROKER;
    /* Exactly one left: generation zero cancels it. */
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), 0U);
    th_run(h);
    TH_TRACE(h, "detach>65 del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_cancel_after_lost_approval_reply)
{
    static const uint8_t modes[] = {PBX_IPC_MODE_INSTALL,
                                    PBX_IPC_MODE_RUNTIME_REPLY};
    for (size_t m = 0; m < PBX_ARRAY_LEN(modes); m++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        pbx_ipc_id id = {0, 0};
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.mode = modes[m];
        if (modes[m] == PBX_IPC_MODE_RUNTIME_REPLY) {
            memset(&b.target, 0, sizeof(b.target));
            h->badge = PBX_CORE_BADGE_LAUNCHD; /* launchd's broker asks */
        }
        bool runtime = modes[m] == PBX_IPC_MODE_RUNTIME_REPLY;
        PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
        th_run(h);
        h->deliver = false;
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
        pbx_ipc_decision first = d;
        th_clear_trace(h);
        /* The approval was lost: generation zero finds the one grant. */
        PBX_CHECK_EQ(
            th_cancel_corr(h, b.ctx.job_id, b.ctx.job_gen, b.ctx.session), 0U);
        /* Ending already: nothing is left to cancel by correlation. */
        PBX_CHECK_EQ(
            th_cancel_corr(h, b.ctx.job_id, b.ctx.job_gen, b.ctx.session),
            PBX_E_CORE_UNKNOWN);
        th_run(h);
        /* procd's handle is revoked; an unexported alias stays with the
         * published decision (vfsd's RETIRE revokes its object). */
        TH_TRACE(h, runtime ? "view- retire" : "del=66 view- retire");
        PBX_CHECK_EQ(
            pbx_core_inspect_grant(&h->core, first.grant.index)->link.state,
            PBX_CORE_ST_FREE);
        PBX_CHECK_EQ(th_cancel_grant(h, first.grant), PBX_E_CORE_UNKNOWN);
        PBX_CHECK_EQ(pbx_core_held_caps(&h->core), runtime ? 1U : 0U);
        /* The retained decision is final until delivered: still APPROVED,
         * still the grant it published (and, runtime-reply, its alias). */
        h->deliver = true;
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
        PBX_CHECK_EQ(d.grant.index, first.grant.index);
        PBX_CHECK_EQ(d.grant.gen, first.grant.gen);
        PBX_CHECK_EQ(d.installed_slot, first.installed_slot);
        PBX_CHECK_EQ(xfer, runtime ? 66U : PBX_CORE_SLOT_NONE);
        TH_TRACE(h, runtime ? "xfer=66" : "");
        PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
        PBX_CHECK(th_quiescent(h));
        th_free(h);
    }
}

PBX_TEST(core_expiry_or_cancel_before_publication_never_approves)
{
    for (int how = 0; how < 2; how++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        pbx_ipc_id id = {0, 0};
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
        /* Hold the scope deletion so the approval stays unpublished. */
        h->hold_slot = TH_T_FIRST;
        PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
        th_run(h);
        TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 "
                    "detach>65 view+");
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
        if (how == 0) {
            PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD,
                                   PBX_IPC_EXPIRE_JOB, b.ctx.job_id,
                                   b.ctx.job_gen, 0),
                         0U);
        } else {
            PBX_CHECK_EQ(th_cancel(h, id), 0U);
        }
        h->hold_slot = PBX_CORE_SLOT_NONE;
        pbx_core_on_tick(&h->core);
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        TH_TRACE(h, "del=66 view- retire del=64 release=64 wake");
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
        PBX_CHECK(th_quiescent(h));
        th_free(h);
    }
}

/* How an event between publication and delivery names the grant. */
enum life_end {
    LIFE_CANCEL_EXACT = 0,
    LIFE_CANCEL_CORR,
    LIFE_CANCEL_GRANT,
    LIFE_CONSUME,
    LIFE_EXPIRE,
    LIFE_ENDS
};

/* Sends the event `how` for request req of b and grant g; returns its
 * status. */
static uint32_t life_end(th_h *h, int how, const pbx_ipc_begin *b,
                         pbx_ipc_id req, pbx_ipc_id g)
{
    switch (how) {
    case LIFE_CANCEL_EXACT:
        return th_cancel(h, req);
    case LIFE_CANCEL_CORR:
        return th_cancel_corr(h, b->ctx.job_id, b->ctx.job_gen, b->ctx.session);
    case LIFE_CANCEL_GRANT:
        return th_cancel_grant(h, g);
    case LIFE_CONSUME:
        return th_consume(h, g);
    default:
        return th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                         b->ctx.job_id, b->ctx.job_gen, 0U);
    }
}

/* The grant event `how` takes out of LIVE. */
static pbx_core_event life_event(int how)
{
    return how == LIFE_CONSUME  ? PBX_CORE_EV_CONSUME
           : how == LIFE_EXPIRE ? PBX_CORE_EV_EXPIRE
                                : PBX_CORE_EV_CANCEL;
}

/* Transitions of machine m taken since init (every row summed). */
static uint32_t life_hits(const th_h *h, pbx_core_machine m)
{
    size_t rows = 0;
    const pbx_core_transition *t = pbx_core_fsm_table(&rows);
    uint32_t n = 0;
    PBX_ASSERT(rows == (size_t)PBX_CORE_FSM_ROWS);
    for (size_t r = 0; r < rows; r++) {
        n += t[r].machine == (uint8_t)m ? h->core.fsm_hits[r] : 0U;
    }
    return n;
}

/* How often row (m, from, ev) was taken. */
static uint32_t life_row(const th_h *h, pbx_core_machine m, pbx_core_state from,
                         pbx_core_event ev)
{
    size_t row = pbx_core_fsm_find(m, from, ev);
    PBX_ASSERT(row < (size_t)PBX_CORE_FSM_ROWS);
    return h->core.fsm_hits[row];
}

/* One mode, one event: see core_published_decision_is_final_until_delivered. */
static void life_final(uint8_t mode, int how)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    bool runtime = mode == (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = mode;
    if (runtime) {
        memset(&b.target, 0, sizeof(b.target));
    }
    /* Published (the wake went out), the reply lost once. */
    pbx_ipc_id req = {0, 0};
    uint32_t alias = PBX_CORE_SLOT_NONE;
    pbx_ipc_id g = th_approve(h, &b, sel, true, &req, &alias);
    PBX_CHECK_EQ(alias, runtime ? 66U : PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(h->wake_count, 1U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    uint32_t installed = runtime ? 0U : b.target.slot;
    uint32_t grant_hits = life_hits(h, PBX_CORE_MACHINE_GRANT);
    uint32_t req_hits = life_hits(h, PBX_CORE_MACHINE_REQUEST);
    uint32_t moved = h->transferred;
    uint32_t ev_hits =
        life_row(h, PBX_CORE_MACHINE_GRANT, PBX_CORE_ST_LIVE, life_event(how));
    PBX_CHECK_EQ(life_end(h, how, &b, req, g), 0U);
    /* Within the event: the grant left LIVE; the request did not move. */
    PBX_CHECK_EQ(
        life_row(h, PBX_CORE_MACHINE_GRANT, PBX_CORE_ST_LIVE, life_event(how)),
        ev_hits + 1U);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                 PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, req.index)->link.state,
                 PBX_CORE_ST_DECIDED);
    PBX_CHECK_EQ(life_hits(h, PBX_CORE_MACHINE_REQUEST), req_hits);
    TH_TRACE(h, "");
    /* Before any cleanup step, and again after it: the decision reads as
     * published (runtime-reply: with its alias), undelivered. */
    h->deliver = false;
    for (int pass = 0; pass < 2; pass++) {
        TH_CHECK_OUTCOME(h, req, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
        PBX_CHECK_EQ(d.mode, mode);
        PBX_CHECK_EQ(d.grant.index, g.index);
        PBX_CHECK_EQ(d.grant.gen, g.gen);
        PBX_CHECK_EQ(d.installed_slot, installed);
        PBX_CHECK_EQ(xfer, alias);
        if (pass == 0) {
            th_run(h);
            PBX_CHECK_EQ(h->step_err, PBX_OK);
            /* The grant's cleanup, to retirement: procd's handle revoked
             * (an unexported alias is left to vfsd's RETIRE), REMOVE
             * and RETIRE acknowledged exactly, the generation retired. */
            TH_TRACE(h, runtime ? "view- retire" : "del=66 view- retire");
            PBX_CHECK_EQ(h->last_view.kind, PBX_IPC_VIEW_REMOVE);
            PBX_CHECK_EQ(h->last_view.grant.index, g.index);
            PBX_CHECK_EQ(h->last_view.grant.gen, g.gen);
            PBX_CHECK_EQ(life_hits(h, PBX_CORE_MACHINE_GRANT), grant_hits + 4U);
            PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                         PBX_CORE_ST_FREE);
            PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
            PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
            PBX_CHECK_EQ(th_cancel(h, req), PBX_E_CORE_STATE);
            PBX_CHECK_EQ(pbx_core_held_caps(&h->core), runtime ? 1U : 0U);
            PBX_CHECK_EQ(h->npend, 0U);
        }
    }
    TH_TRACE(h, "");
    /* Delivered: the same decision, the alias leaving with it once. */
    h->deliver = true;
    TH_CHECK_OUTCOME(h, req, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, g.index);
    PBX_CHECK_EQ(d.grant.gen, g.gen);
    PBX_CHECK_EQ(xfer, alias);
    TH_TRACE(h, runtime ? "xfer=66" : "");
    PBX_CHECK_EQ(h->transferred - moved, runtime ? 1U : 0U);
    /* A second DECISION is refused: the request retired with delivery. */
    PBX_CHECK_EQ(th_decision(h, req, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    /* No CANCEL row and no second wake: the request went RELEASE,
     * NOTIFY, DECIDED, FREE only. */
    PBX_CHECK_EQ(life_hits(h, PBX_CORE_MACHINE_REQUEST), req_hits + 1U);
    PBX_CHECK_EQ(h->wake_count, 1U);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A decision, once exposed, is final until delivered: CANCEL (exact,
 * generation-zero or grant form), CONSUME and EXPIRE arriving between
 * publication and delivery end the grant the decision describes
 * (revoke, REMOVE, RETIRE, its generation retired) and never the
 * decision, which reads APPROVED with the same grant id (runtime-reply:
 * carrying its alias, exactly once) until delivered, in either mode. */
PBX_TEST(core_published_decision_is_final_until_delivered)
{
    static const uint8_t modes[] = {PBX_IPC_MODE_INSTALL,
                                    PBX_IPC_MODE_RUNTIME_REPLY};
    for (size_t m = 0; m < PBX_ARRAY_LEN(modes); m++) {
        for (int how = 0; how < (int)LIFE_ENDS; how++) {
            life_final(modes[m], how);
        }
    }
}

/* Runtime-reply, the grant ended between publication and delivery, and
 * the reply delivered before the grant's cleanup ran: the alias leaves
 * with the reply (once), the request retires, and the cleanup then has
 * nothing left to delete (vfsd's RETIRE revokes the exported alias).
 * With the wake parked (the request still in NOTIFY) the wake is not
 * held back by the ended grant: it goes out once, when launchd's route
 * is writable again. */
PBX_TEST(core_published_runtime_reply_delivered_before_its_grant_cleanup)
{
    for (int parked = 0; parked < 2; parked++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        pbx_ipc_id req = {0, 0};
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
        memset(&b.target, 0, sizeof(b.target));
        if (parked != 0) {
            th_push_wake(h, PBX_CORE_IO_BUSY);
        }
        PBX_REQUIRE(th_open(h, &b, sel, &req) == 0U);
        th_run(h);
        TH_TRACE(h, parked != 0 ? "reserve=64 resolve@64 <65 policy alias=66 "
                                  "detach>65 view+ del=64 release=64 wake:busy"
                                : "reserve=64 resolve@64 <65 policy alias=66 "
                                  "detach>65 view+ del=64 release=64 wake");
        PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, req.index)->link.state,
                     parked != 0 ? PBX_CORE_ST_NOTIFY : PBX_CORE_ST_DECIDED);
        uint32_t gi = pbx_core_inspect_request(&h->core, req.index)->grant;
        PBX_REQUIRE(gi != PBX_CORE_NIL);
        pbx_ipc_id g =
            pbx_core_inspect_id(&h->core, PBX_BOOTSTRAP_POOL_GRANTS, gi);
        PBX_CHECK_EQ(th_cancel(h, req), 0U);
        PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, gi)->link.state,
                     PBX_CORE_ST_REVOKE);
        /* Delivered before any cleanup step. */
        TH_CHECK_OUTCOME(h, req, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
        PBX_CHECK_EQ(d.grant.index, g.index);
        PBX_CHECK_EQ(d.grant.gen, g.gen);
        PBX_CHECK_EQ(xfer, 66U);
        TH_TRACE(h, "xfer=66");
        PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
        PBX_CHECK_EQ(th_decision(h, req, &d, &xfer),
                     parked != 0 ? PBX_E_CORE_STATE : PBX_E_CORE_UNKNOWN);
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        TH_TRACE(h, "view- retire");
        PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, gi)->link.state,
                     PBX_CORE_ST_FREE);
        PBX_CHECK_EQ(h->wake_count, parked != 0 ? 0U : 1U);
        pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_LAUNCHD);
        th_run(h);
        TH_TRACE(h, parked != 0 ? "wake" : "");
        PBX_CHECK_EQ(h->wake_count, 1U);
        PBX_CHECK_EQ(th_decision(h, req, &d, &xfer), PBX_E_CORE_UNKNOWN);
        PBX_CHECK(th_quiescent(h));
        th_free(h);
    }
}
