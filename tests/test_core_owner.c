/*
 * test_core_owner.c: who may drive and end what (every request is begun
 * through launchd's broker, so no other badge may send its SELECTOR,
 * COMMIT, DECISION, CANCEL or CONSUME), the exact grant CANCEL form,
 * exact invocation expiry, expiry of in-flight requests, frames that name
 * nothing to answer, and the retained-progression fail-stop, each with
 * the exact effects through the scripted ops.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))
#define OTHER   (TH_BADGE + 1U)

/* Runs b to an approved decision; delivers it unless keep; returns the
 * grant and the request through *req. */
static pbx_ipc_id own_approve(th_h *h, const pbx_ipc_begin *b, bool keep,
                              pbx_ipc_id *req)
{
    return th_approve(h, b, sel, keep, req, NULL);
}

/* Opens b and leaves it parked at the trusted prompt (in flight). */
static pbx_ipc_id own_parked(th_h *h, const pbx_ipc_begin *b)
{
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open_parked(h, b, sel, &id), 0U);
    return id;
}

/* Asks DECISION as the request's owner and returns the outcome. */
static uint8_t own_outcome(th_h *h, pbx_ipc_id id)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    uint32_t st = th_decision(h, id, &d, &xfer);
    PBX_CHECK_EQ(st, 0U);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    return st == 0U ? d.outcome : 0U;
}

/* Sends SELECTOR, DECISION, both request CANCEL forms and COMMIT for id
 * from badge; each must be refused with its status, the COMMIT's scope
 * deleted, and nothing else may change. */
static void own_foreign_request(th_h *h, uint32_t badge, pbx_ipc_id id,
                                uint32_t dest, const pbx_ipc_begin *b)
{
    pbx_ipc_decision d;
    uint32_t xfer = PBX_CORE_SLOT_NONE;
    uint32_t owner = h->badge;
    uint32_t held = pbx_core_held_caps(&h->core);
    h->badge = badge;
    PBX_CHECK_EQ(th_selector(h, id, 0, sel, SEL_LEN), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(th_cancel(h, id), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(
        th_cancel_corr(h, b->ctx.job_id, b->ctx.job_gen, b->ctx.session),
        PBX_E_CORE_UNKNOWN);
    TH_TRACE(h, "");
    /* A foreign COMMIT's scope is deleted at once and owned by no
     * request (the reserved destination keeps its placeholder). */
    PBX_CHECK_EQ(th_commit(h, id, dest, 90U), PBX_E_CORE_UNKNOWN);
    TH_TRACE(h, "del=90");
    h->badge = owner;
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
    PBX_CHECK(th_conserved(h));
}

/* Sends CONSUME and the grant CANCEL for grant g from badge; both must be
 * refused and nothing may change. */
static void own_foreign_grant(th_h *h, uint32_t badge, pbx_ipc_id g)
{
    uint32_t owner = h->badge;
    uint32_t held = pbx_core_held_caps(&h->core);
    h->badge = badge;
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
    h->badge = owner;
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
}

PBX_TEST(core_foreign_badges_cannot_drive_a_broker_request)
{
    static const uint32_t foreign[] = {TH_BADGE, OTHER, 0U};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    /* Open, before any selector byte. */
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    th_clear_trace(h);
    for (size_t f = 0; f < PBX_ARRAY_LEN(foreign); f++) {
        own_foreign_request(h, foreign[f], id, dest, &b);
    }
    PBX_CHECK_EQ(h->slots[dest].kind, PBX_CAPABI_KIND_PLACEHOLDER);
    /* The broker streams and commits it; parked at the prompt. */
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_RETRY, 0, 0);
    PBX_CHECK_EQ(th_selector(h, id, 0, sel, SEL_LEN), 0U);
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), 0U);
    th_run(h);
    th_clear_trace(h);
    for (size_t f = 0; f < PBX_ARRAY_LEN(foreign); f++) {
        own_foreign_request(h, foreign[f], id, dest, &b);
    }
    PBX_CHECK_EQ(own_outcome(h, id), PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    TH_TRACE(h, "detach>65 del=64 release=64 wake");
    PBX_CHECK_EQ(own_outcome(h, id), PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    /* Approved, reply not delivered: the grant is the broker's too. */
    pbx_ipc_id g = own_approve(h, &b, true, &id);
    for (size_t f = 0; f < PBX_ARRAY_LEN(foreign); f++) {
        own_foreign_request(h, foreign[f], id, dest, &b);
        own_foreign_grant(h, foreign[f], g);
    }
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.gen, g.gen);
    /* The request retired with its delivery; the grant lives on. */
    for (size_t f = 0; f < PBX_ARRAY_LEN(foreign); f++) {
        own_foreign_grant(h, foreign[f], g);
    }
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_consume_and_cancel_only_by_the_broker)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id req = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = own_approve(h, &b, false, &req);
    /* Other callers that guessed the grant id change nothing. */
    h->badge = OTHER;
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
    h->badge = TH_BADGE;
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    /* A stale generation is refused before ownership is even asked. */
    pbx_ipc_id stale = {g.index, g.gen + 1U};
    PBX_CHECK_EQ(th_consume(h, stale), PBX_E_CORE_UNKNOWN);
    /* launchd's broker, which began it, consumes it. */
    h->badge = TH_BROKER;
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK(th_quiescent(h));
    /* An in-flight request: others are refused, the broker cancels it. */
    pbx_ipc_id id = own_parked(h, &b);
    h->badge = OTHER;
    PBX_CHECK_EQ(th_cancel(h, id), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    h->badge = TH_BROKER;
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    TH_TRACE(h, "detach>65 del=64 release=64 wake");
    PBX_CHECK_EQ(own_outcome(h, id), PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_cancel_grant_form_after_request_retired)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    pbx_ipc_id req = {0, 0};
    pbx_ipc_id g = own_approve(h, &b, false, &req);
    /* The request retired with its delivery: only the grant form can
     * still name the grant. */
    PBX_CHECK_EQ(th_cancel(h, req), PBX_E_CORE_UNKNOWN);
    pbx_ipc_id stale = {g.index, g.gen + 1U};
    PBX_CHECK_EQ(th_cancel_grant(h, stale), PBX_E_CORE_UNKNOWN);
    pbx_ipc_id wild = {1000U, g.gen};
    PBX_CHECK_EQ(th_cancel_grant(h, wild), PBX_E_CORE_UNKNOWN);
    TH_TRACE(h, "");
    /* Exact: revoke first; ttyd's push-back on REMOVE does not hold the
     * RETIRE back, and REMOVE is retried on its own. */
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    PBX_CHECK_EQ(th_cancel_grant(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view-:busy retire");
    /* Already ending: a second cancel is refused and changes nothing. */
    PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_STATE);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    th_run(h);
    TH_TRACE(h, "view-");
    PBX_CHECK_EQ(h->last_view.kind, PBX_IPC_VIEW_REMOVE);
    PBX_CHECK_EQ(h->last_view.grant.gen, g.gen);
    PBX_CHECK(th_quiescent(h));
    PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
    th_free(h);
}

/* The grant form of CANCEL after the approval was published but its
 * reply lost: the grant ends (procd's handle revoked, or, runtime-reply,
 * the unexported alias left to vfsd's RETIRE), and the decision stays as
 * published, naming that grant, until delivered. */
PBX_TEST(core_cancel_grant_form_keeps_a_published_approval)
{
    static const uint8_t modes[] = {PBX_IPC_MODE_INSTALL,
                                    PBX_IPC_MODE_RUNTIME_REPLY};
    for (size_t m = 0; m < PBX_ARRAY_LEN(modes); m++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        bool runtime = modes[m] == PBX_IPC_MODE_RUNTIME_REPLY;
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.mode = modes[m];
        if (runtime) {
            memset(&b.target, 0, sizeof(b.target));
            h->badge = PBX_CORE_BADGE_LAUNCHD; /* launchd's broker asks */
        }
        /* Approved, reply lost: the caller knows the grant id only. */
        pbx_ipc_id req = {0, 0};
        pbx_ipc_id g = own_approve(h, &b, true, &req);
        PBX_CHECK_EQ(th_cancel_grant(h, g), 0U);
        PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, req.index)->link.state,
                     PBX_CORE_ST_DECIDED);
        PBX_CHECK_EQ(th_cancel(h, req), PBX_E_CORE_STATE);
        th_run(h);
        TH_TRACE(h, runtime ? "view- retire" : "del=66 view- retire");
        PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                     PBX_CORE_ST_FREE);
        PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
        /* The retained decision still names the grant it published. */
        TH_CHECK_OUTCOME(h, req, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
        PBX_CHECK_EQ(d.grant.index, g.index);
        PBX_CHECK_EQ(d.grant.gen, g.gen);
        PBX_CHECK_EQ(xfer, runtime ? 66U : PBX_CORE_SLOT_NONE);
        TH_TRACE(h, runtime ? "xfer=66" : "");
        PBX_CHECK_EQ(th_decision(h, req, &d, &xfer), PBX_E_CORE_UNKNOWN);
        PBX_CHECK(th_quiescent(h));
        th_free(h);
    }
}

/* The grant form of CANCEL naming a grant whose approval is decided but
 * not yet published (release is still deleting the scope): the request
 * turns CANCELLED before release can publish it, and the grant ends
 * first. */
PBX_TEST(core_cancel_grant_form_of_unpublished_approval_cancels_it)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    /* Hold the scope deletion so the approval stays unpublished. */
    h->hold_slot = TH_T_FIRST;
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 "
                "detach>65 view+");
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, id.index)->link.state,
                 PBX_CORE_ST_RELEASE);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    /* The grant id, unpublished (only a guess could name it). */
    uint32_t gi = pbx_core_inspect_request(&h->core, id.index)->grant;
    PBX_REQUIRE(gi != PBX_CORE_NIL);
    pbx_ipc_id g = pbx_core_inspect_id(&h->core, PBX_BOOTSTRAP_POOL_GRANTS, gi);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, gi)->flags &
                     PBX_CORE_GRANT_F_APPROVED,
                 0U);
    PBX_CHECK_EQ(th_cancel_grant(h, g), 0U);
    h->hold_slot = PBX_CORE_SLOT_NONE;
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    /* The grant's cleanup first, then the scope, then the wake. */
    TH_TRACE(h, "del=66 view- retire del=64 release=64 wake");
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, gi)->link.state,
                 PBX_CORE_ST_FREE);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(d.grant.gen, 0U);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_expire_invocation_matches_the_exact_invocation)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    b.invocation_id = 5U;
    pbx_ipc_id g5 = own_approve(h, &b, false, NULL);
    b.invocation_id = 6U;
    pbx_ipc_id g6 = own_approve(h, &b, false, NULL);
    PBX_CHECK(g5.index != g6.index);
    /* Another invocation of the same job touches neither. */
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_INVOCATION,
                           b.ctx.job_id, b.ctx.job_gen, 7U),
                 0U);
    th_run(h);
    TH_TRACE(h, "");
    /* Invocation 5 ends exactly its own grant. */
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_INVOCATION,
                           b.ctx.job_id, b.ctx.job_gen, 5U),
                 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(h->last_view.grant.index, g5.index);
    PBX_CHECK_EQ(h->last_view.grant.gen, g5.gen);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_INVOCATION,
                           b.ctx.job_id, b.ctx.job_gen, 6U),
                 0U);
    th_run(h);
    TH_TRACE(h, "del=67 view- retire");
    PBX_CHECK_EQ(h->last_view.grant.index, g6.index);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_expire_ends_in_flight_requests_cancelled)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id open = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    b.invocation_id = 5U;
    /* One parked at the prompt, one still before COMMIT, and one of
     * another invocation. */
    pbx_ipc_id parked = own_parked(h, &b);
    PBX_REQUIRE(th_begin(h, &b, &open, &dest) == 0U);
    b.invocation_id = 6U;
    pbx_ipc_id other = own_parked(h, &b);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_INVOCATION,
                           b.ctx.job_id, b.ctx.job_gen, 5U),
                 0U);
    /* Both covered requests ended within the event, before any step:
     * each took its CANCEL row and waits on the release lane; the other
     * invocation's request is untouched. */
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, parked.index)->link.state,
                 PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, open.index)->link.state,
                 PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, other.index)->link.state,
                 PBX_CORE_ST_PROMPT);
    th_run(h);
    /* Object back and scope gone for the parked one; the empty
     * reservation proven empty and released for the open one. */
    TH_TRACE(h, "release=66 wake detach>65 del=64 release=64 wake");
    PBX_CHECK_EQ(own_outcome(h, parked), PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(own_outcome(h, open), PBX_IPC_OUTCOME_CANCELLED);
    /* The prompt answer can no longer approve anything: the other
     * invocation's request is still pending and alone at the prompt. */
    PBX_CHECK_EQ(own_outcome(h, other), PBX_IPC_OUTCOME_PENDING);
    /* After RETRY the prompt is asked again on a tick (split-phase
     * change: it used to wait for ttyd's route). */
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "prompt install^68 <64 detach>68 view+ del=67 release=67 "
                "wake");
    b.invocation_id = 5U;
    pbx_ipc_id late = {0, 0};
    PBX_CHECK_EQ(th_begin(h, &b, &late, &dest), 0U);
    /* The other request is approved and published, its reply not yet
     * asked for; its grant is live. */
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, other.index)->link.state,
                 PBX_CORE_ST_DECIDED);
    uint32_t gi = pbx_core_inspect_request(&h->core, other.index)->grant;
    PBX_REQUIRE(gi != PBX_CORE_NIL);
    pbx_ipc_id g = pbx_core_inspect_id(&h->core, PBX_BOOTSTRAP_POOL_GRANTS, gi);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, gi)->link.state,
                 PBX_CORE_ST_LIVE);
    /* A job expiry ends the rest of the job, in flight or granted. */
    th_clear_trace(h);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0U),
                 0U);
    th_run(h);
    TH_TRACE(h, "release=65 del=64 wake view- retire");
    PBX_CHECK_EQ(own_outcome(h, late), PBX_IPC_OUTCOME_CANCELLED);
    /* The other request's grant ended (procd's handle revoked, REMOVE,
     * RETIRE, its generation retired), but the decision published before
     * the expiry stays as published, naming that grant. */
    PBX_CHECK_EQ(h->last_view.grant.index, g.index);
    PBX_CHECK_EQ(h->last_view.grant.gen, g.gen);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, gi)->link.state,
                 PBX_CORE_ST_FREE);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, other, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, g.index);
    PBX_CHECK_EQ(d.grant.gen, g.gen);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_decision(h, other, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_selector_beyond_all_storage_is_not_busy)
{
    th_h *h = th_new(1);
    uint8_t big[300];
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    memset(big, 'a', sizeof(big));
    /* One record pool holds 4 chunks (240 bytes): retrying can never
     * help, so the answer is SELECTOR_LENGTH, not BUSY. */
    th_default_begin(&b, big, sizeof(big));
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), PBX_E_CORE_SELECTOR_LENGTH);
    th_default_begin(&b, big, 240U);
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), 0U);
    TH_TRACE(h, "reserve=64");
    th_free(h);
}

/* Sends len raw bytes with no capability; returns the reply status. */
static uint32_t own_raw(th_h *h, const uint8_t *buf, size_t len,
                        pbx_core_out *out)
{
    pbx_err core = PBX_OK;
    uint32_t st = th_public(h, TH_BADGE, buf, len, NULL, 0, &core, out);
    PBX_CHECK_EQ(core, PBX_OK);
    return st;
}

PBX_TEST(core_every_public_frame_gets_a_reply_or_a_drop)
{
    th_h *h = th_new(4);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_core_out out;
    pbx_ipc_begin b;
    size_t n = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) == PBX_OK);
    /* A public op whose body is broken is answered in its own form. */
    PBX_CHECK_EQ(own_raw(h, buf, n - 1U, &out), PBX_E_IPC_BODY_LEN);
    PBX_CHECK_EQ(out.drop, PBX_OK);
    PBX_CHECK_EQ(pbx_le_get16(out.frame + 6), 0x8001U);
    /* Too short for a header, bad magic, bad version, unknown op:
     * nothing names an operation, so no reply and drop the connection. */
    PBX_CHECK_EQ(own_raw(h, buf, 10U, &out), UINT32_MAX);
    PBX_CHECK_EQ(out.drop, PBX_E_CORE_FRAME);
    PBX_CHECK_EQ(own_raw(h, NULL, 0U, &out), UINT32_MAX);
    PBX_CHECK_EQ(out.drop, PBX_E_CORE_FRAME);
    uint8_t bad[PBX_IPC_FRAME_BYTES_MAX];
    memcpy(bad, buf, n);
    bad[0] ^= 1U;
    PBX_CHECK_EQ(own_raw(h, bad, n, &out), UINT32_MAX);
    PBX_CHECK_EQ(out.drop, PBX_E_CORE_FRAME);
    memcpy(bad, buf, n);
    const uint16_t next_version = PBX_IPC_VERSION + 1U;
    pbx_le_put16(bad + 4, next_version);
    PBX_CHECK_EQ(own_raw(h, bad, n, &out), UINT32_MAX);
    PBX_CHECK_EQ(out.drop, PBX_E_CORE_FRAME);
    memcpy(bad, buf, n);
    pbx_le_put16(bad + 6, 0x0077U);
    PBX_CHECK_EQ(own_raw(h, bad, n, &out), UINT32_MAX);
    PBX_CHECK_EQ(out.drop, PBX_E_CORE_FRAME);
    /* A peer op on the public route is refused in its own form... */
    pbx_ipc_revoke_ack ack = {{1U, 1U}};
    pbx_ipc_id rid = {1U, 1U};
    PBX_REQUIRE(pbx_ipc_revoke_reply_encode(rid, &ack, buf, sizeof(buf), &n) ==
                PBX_OK);
    PBX_CHECK_EQ(own_raw(h, buf, n, &out), PBX_E_CORE_PARTITION);
    PBX_CHECK_EQ(pbx_le_get16(out.frame + 6), 0x8302U);
    /* ...except WAKE, which has no reply form: dropped. */
    pbx_ipc_wake w = {1U, 1U};
    PBX_REQUIRE(pbx_ipc_wake_encode(rid, &w, buf, sizeof(buf), &n) == PBX_OK);
    PBX_CHECK_EQ(own_raw(h, buf, n, &out), UINT32_MAX);
    PBX_CHECK_EQ(out.drop, PBX_E_CORE_FRAME);
    TH_TRACE(h, "");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_inconsistent_retained_record_is_a_progress_fail_stop)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    /* A request on the intake lane in a state no step serves: the
     * records disagree, so progression stops with its own status. */
    ((pbx_core_request *)pbx_core_inspect_fault(
         &h->core, PBX_BOOTSTRAP_POOL_REQUESTS, id.index))
        ->link.state = (uint16_t)PBX_CORE_ST_DECIDED;
    PBX_CHECK(th_step(h));
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    bool progressed = true;
    PBX_CHECK_EQ(pbx_core_step(&h->core, &progressed), PBX_E_CORE_NOT_READY);
    th_free(h);
    /* A wake whose notification no request holds is the same class. */
    h = th_new(4);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    th_push_wake(h, PBX_CORE_IO_BUSY);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    ((pbx_core_request *)pbx_core_inspect_fault(
         &h->core, PBX_BOOTSTRAP_POOL_REQUESTS, id.index))
        ->notification = PBX_CORE_NIL;
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_LAUNCHD);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_INCONSISTENT);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_PROGRESS);
    PBX_CHECK_EQ(h->wake_count, 0U);
    th_free(h);
}
