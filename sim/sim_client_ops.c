/*
 * sim_client_ops.c: COMMIT, DECISION, CANCEL, CONSUME, EXPIRE and the
 * invalid public operations, each with the check of what the core may
 * answer given the shadow state.
 */
#include "sim/sim_client.h"

#include "sha2/pbx_sha2.h"

#include <string.h>

/* A COMMIT receipt refused after request i's decision was published is
 * owned by no request (the core deletes it as junk): mark it so. */
static void sim_commit_refused(sim_world *w, uint32_t i, uint64_t cap_id)
{
    const pbx_core_request *r = sim_core_req(w, i);
    uint16_t st = r->link.state;
    if (r->link.live == 0U || r->link.generation != w->reqs[i].gen ||
        (st != (uint16_t)PBX_CORE_ST_NOTIFY &&
         st != (uint16_t)PBX_CORE_ST_DECIDED &&
         st != (uint16_t)PBX_CORE_ST_DELIVERED)) {
        return;
    }
    for (uint32_t slot = SIM_TFIRST; slot < SIM_SLOTS; slot++) {
        if (w->slots[slot].cap.id == cap_id) {
            w->slots[slot].cap.late = 1U;
        }
    }
}

void sim_client_commit(sim_world *w, uint32_t i)
{
    sim_req *s = &w->reqs[i];
    uint8_t buf[64];
    size_t n = 0;
    pbx_ipc_commit q = {s->dest};
    pbx_ipc_id id = {i, s->gen};
    sim_cap scope = sim_cap_mint(w, SIM_ROLE_SCOPE, i, s->gen, 0);
    uint32_t want = s->dest;
    bool bad = false;
    if (sim_fault_fires(w, SIM_F_CLIENT)) {
        bad = true;
        if (sim_chance(w, 512U)) {
            scope.rights |= PBX_CAPABI_RIGHT_GRANT;
        } else {
            want = SIM_NIL;
        }
    }
    if (pbx_ipc_commit_encode(id, &q, buf, sizeof(buf), &n) != PBX_OK) {
        return;
    }
    uint8_t digest[32];
    (void)pbx_sha2_digest(s->selector, s->begin.selector_len, digest);
    bool good_digest = memcmp(digest, s->begin.selector_digest, 32U) == 0;
    /* The runtime's placement query (pbx_core_commit_dest, pure): it may
     * name only this request's own reservation, and every COMMIT the core
     * accepts is one it named so (issue 22 item 8: every entry point). */
    uint32_t named = PBX_CORE_SLOT_NONE;
    bool placed = pbx_core_commit_dest(w->core, s->badge, buf, n, 1U, &named);
    if (placed && named != s->dest) {
        sim_fail(w, "commit_dest named slot %u for request %u/%u (dest %u)",
                 named, i, s->gen, s->dest);
        return;
    }
    const pbx_core_out *o = sim_public(w, s->badge, buf, n, &scope, 1U, want);
    if (o != NULL && sim_reply_status(o, NULL) == 0U && !placed) {
        sim_fail(w,
                 "COMMIT of request %u/%u accepted where commit_dest named "
                 "no destination",
                 i, s->gen);
        return;
    }
    if (o != NULL && sim_reply_status(o, NULL) != 0U) {
        sim_commit_refused(w, i, scope.id);
    }
    if (o != NULL && !bad &&
        sim_reply_status(o, NULL) == (uint32_t)PBX_E_CORE_STATE) {
        /* No longer open (its OPEN deadline passed, or an EXPIRE ended
         * it): a real caller asks for the decision now. */
        s->ended = 1U;
    }
    if (o == NULL || sim_reply_status(o, NULL) != 0U) {
        return;
    }
    if (bad || !good_digest || s->sent != s->begin.selector_len) {
        sim_fail(w,
                 "invariant 1: COMMIT of request %u/%u accepted a wrong "
                 "receipt, destination or digest",
                 i, s->gen);
        return;
    }
    s->committed = 1U;
    s->scope_cap = scope.id;
}

/* Checks the capability a terminal DECISION reply transfers. */
static void sim_decision_caps(sim_world *w, uint32_t i, const pbx_core_out *o,
                              const pbx_ipc_decision *d)
{
    const sim_req *s = &w->reqs[i];
    bool alias = d->outcome == (uint8_t)PBX_IPC_OUTCOME_APPROVED &&
                 d->mode == (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY;
    if (!alias) {
        if (o->transfer_slot != PBX_CORE_SLOT_NONE) {
            sim_fail(w, "invariant 5: outcome %u reply carries a capability",
                     d->outcome);
        }
        return;
    }
    if (o->transfer_slot >= SIM_SLOTS) {
        sim_fail(w, "invariant 5: runtime APPROVED reply carries no alias");
        return;
    }
    const sim_cap *c = &w->slots[o->transfer_slot].cap;
    if (c->role != SIM_ROLE_ALIAS || c->owner != i || c->owner_gen != s->gen ||
        c->object != s->object.id) {
        sim_fail(w,
                 "invariant 5: runtime APPROVED reply exports slot %u "
                 "which is not this request's alias",
                 o->transfer_slot);
    }
}

/* Delivers (or fails to deliver) a terminal reply and reports it. */
static void sim_decision_deliver(sim_world *w, uint32_t i,
                                 const pbx_core_out *o,
                                 const pbx_ipc_decision *d)
{
    sim_req *s = &w->reqs[i];
    bool ok = !sim_fault_fires(w, SIM_F_DELIVERY);
    uint32_t token = o->token;
    uint32_t gen = o->token_generation;
    if (token != i || gen != s->gen) {
        sim_fail(w, "terminal reply of %u/%u carries token %u/%u", i, s->gen,
                 token, gen);
        return;
    }
    if (ok && o->transfer_slot != PBX_CORE_SLOT_NONE) {
        sim_slot_take(w, o->transfer_slot);
    }
    sim_event_add(w, SIM_EV_DELIVER, i, gen, ok ? 1U : 0U, d->outcome);
    s->delivered += ok ? 1U : 0U;
    pbx_err err = pbx_core_on_reply_delivered(w->core, token, gen, ok);
    sim_after_core(w);
    if (err != PBX_OK) {
        if (w->permanent == 0U) {
            sim_fail(w, "reply delivery report refused: %s", pbx_err_name(err));
        }
        return;
    }
    if (s->delivered > 1U) {
        sim_fail(w, "invariant 9: decision of %u/%u delivered twice", i,
                 s->gen);
    }
    if (ok && d->outcome == (uint8_t)PBX_IPC_OUTCOME_APPROVED &&
        d->grant.index < SIM_GRANT_MAX &&
        w->grants[d->grant.index].gen == d->grant.gen) {
        s->approved = d->grant;
        w->grants[d->grant.index].client_knows = 1U;
    }
}

void sim_client_decision(sim_world *w, uint32_t i)
{
    sim_req *s = &w->reqs[i];
    uint8_t buf[64];
    size_t n = 0;
    pbx_ipc_id id = {i, s->gen};
    if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf), &n) !=
        PBX_OK) {
        return;
    }
    const pbx_core_out *o = sim_public(w, s->badge, buf, n, NULL, 0U, 0U);
    pbx_ipc_frame f;
    pbx_ipc_decision d;
    if (o == NULL || sim_reply_status(o, NULL) != 0U) {
        return;
    }
    uint16_t caps = o->transfer_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    if (pbx_ipc_frame_decode(o->frame, o->len, caps, &f) != PBX_OK ||
        pbx_ipc_decision_reply_decode(&f, &d) != PBX_OK) {
        sim_fail(w, "DECISION reply does not decode (caps %u)", caps);
        return;
    }
    sim_decision_caps(w, i, o, &d);
    if (d.outcome == (uint8_t)PBX_IPC_OUTCOME_PENDING) {
        return;
    }
    /* A published decision is final until delivered: a later CANCEL,
     * CONSUME or EXPIRE ends the grant it names, never the decision. */
    if (s->outcome != 0U && s->outcome != d.outcome) {
        sim_fail(w, "invariant 9: decision of %u/%u changed from %u to %u", i,
                 s->gen, s->outcome, d.outcome);
    }
    s->outcome = d.outcome;
    sim_check_terminal(w, i, "decision");
    sim_check_outcome(w, i, &d);
    sim_decision_deliver(w, i, o, &d);
}

/* Whether the core would accept a cancel of request i right now. */
static bool sim_core_cancellable(const sim_world *w, uint32_t i)
{
    const pbx_core_request *r = sim_core_req(w, i);
    if (r->link.live == 0U) {
        return false;
    }
    if (pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST,
                          (pbx_core_state)r->link.state,
                          PBX_CORE_EV_CANCEL) != SIZE_MAX) {
        return true;
    }
    return r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
           r->grant != PBX_CORE_NIL &&
           sim_core_grant(w, r->grant)->link.state ==
               (uint16_t)PBX_CORE_ST_LIVE;
}

/* Finds the one cancellable request a correlation names; SIM_NIL when
 * none or several. */
static uint32_t sim_correlate(const sim_world *w, const sim_req *s)
{
    uint32_t found = SIM_NIL;
    uint32_t count = 0;
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    for (uint32_t j = 0; j < cap && j < SIM_REQ_MAX; j++) {
        const sim_req *t = &w->reqs[j];
        if (t->live != 0U && t->client == s->client &&
            t->begin.ctx.job_id == s->begin.ctx.job_id &&
            t->begin.ctx.job_gen == s->begin.ctx.job_gen &&
            sim_core_cancellable(w, j)) {
            found = j;
            count++;
        }
    }
    return count == 1U ? found : SIM_NIL;
}

uint32_t sim_foreign_badge(const sim_world *w, uint32_t owner)
{
    (void)w;
    for (uint32_t c = 0; c < SIM_CLIENTS; c++) {
        if (SIM_BADGE(c) != owner) {
            return SIM_BADGE(c);
        }
    }
    return SIM_BADGE(0);
}

/* Picks the badge a cancel or consume is sent with: the owner (launchd's
 * broker, which begins every request; the second branch keeps the seed
 * streams of runs from before that rule), and under the client fault a
 * foreign client badge that must be refused (*foreign set). */
uint32_t sim_pick_badge(sim_world *w, uint32_t owner, bool *foreign)
{
    *foreign = sim_fault_fires(w, SIM_F_CLIENT);
    if (*foreign) {
        return sim_foreign_badge(w, owner);
    }
    return sim_chance(w, 128U) ? PBX_CORE_BADGE_LAUNCHD : owner;
}

/* Records what an accepted cancel of request target did. */
static void sim_cancel_accepted(sim_world *w, uint32_t target, bool inflight)
{
    if (inflight) {
        w->reqs[target].cancel_ok = 1U;
    } else if (w->reqs[target].grant < SIM_GRANT_MAX) {
        w->grants[w->reqs[target].grant].ending = 1U;
    }
}

/* Whether the core would find request target live and owned by someone
 * other than badge (the owner check comes after the lookup). */
static bool sim_not_owner(const sim_world *w, uint32_t target, uint32_t badge)
{
    return target != SIM_NIL && w->reqs[target].live != 0U &&
           badge != PBX_CORE_BADGE_LAUNCHD && w->reqs[target].badge != badge;
}

void sim_client_cancel(sim_world *w, uint32_t i, bool correlate)
{
    sim_req *s = &w->reqs[i];
    uint8_t buf[64];
    size_t n = 0;
    bool foreign = false;
    uint32_t badge = sim_pick_badge(w, s->badge, &foreign);
    pbx_ipc_cancel q;
    memset(&q, 0, sizeof(q));
    q.by_correlation = correlate;
    if (correlate) {
        q.job_id = s->begin.ctx.job_id;
        q.session = s->begin.ctx.session;
        q.job_gen = s->begin.ctx.job_gen;
    } else {
        q.request.index = i;
        q.request.gen = s->gen;
    }
    uint32_t target = correlate ? sim_correlate(w, s) : i;
    bool inflight =
        target != SIM_NIL && sim_core_cancellable(w, target) &&
        pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST,
                          (pbx_core_state)sim_core_req(w, target)->link.state,
                          PBX_CORE_EV_CANCEL) != SIZE_MAX;
    bool refuse = sim_not_owner(w, target, badge);
    uint16_t before =
        target != SIM_NIL ? sim_core_req(w, target)->link.state : 0U;
    if (pbx_ipc_cancel_encode(&q, buf, sizeof(buf), &n) != PBX_OK) {
        return;
    }
    sim_event_add(w, SIM_EV_CANCEL, target, before,
                  target != SIM_NIL ? sim_core_req(w, target)->outcome : 0U,
                  (inflight ? 1U : 0U) | (refuse ? 2U : 0U));
    static sim_effect e;
    sim_effect_before(w, &e);
    if (target != SIM_NIL) {
        sim_effect_cover_req(w, &e, target);
    }
    const pbx_core_out *o = sim_public(w, badge, buf, n, NULL, 0U, 0U);
    if (o == NULL) {
        return;
    }
    uint16_t st = sim_reply_status(o, NULL);
    sim_effect_check(w, &e, st == 0U,
                     correlate ? "correlated CANCEL" : "CANCEL");
    if (refuse && sim_core_cancellable(w, target) &&
        (st != (uint16_t)PBX_E_CORE_UNKNOWN ||
         sim_core_req(w, target)->link.state != before)) {
        sim_fail(w,
                 "CANCEL of %u/%u from foreign badge %#x answered %#x "
                 "(state %u -> %u), not UNKNOWN (one answer for not yours and "
                 "missing) and no change",
                 target, w->reqs[target].gen, badge, st, before,
                 sim_core_req(w, target)->link.state);
        return;
    }
    if (st == (uint16_t)PBX_E_CORE_STATE && !correlate && !foreign) {
        /* Ended elsewhere (an EXPIRE): ask DECISION from now on. */
        s->ended = 1U;
    }
    if (st != 0U) {
        return;
    }
    if (target == SIM_NIL) {
        sim_fail(w, "invariant 7: generation-zero cancel acted without one "
                    "unambiguous live correlation");
        return;
    }
    sim_cancel_accepted(w, target, inflight);
}

void sim_client_cancel_grant(sim_world *w, uint32_t g)
{
    sim_grant *gr = &w->grants[g];
    uint8_t buf[64];
    size_t n = 0;
    bool foreign = false;
    uint32_t badge = sim_pick_badge(w, gr->badge, &foreign);
    const pbx_core_grant *cg = sim_core_grant(w, g);
    bool known = cg->link.live != 0U && cg->link.generation == gr->gen &&
                 cg->link.state != (uint16_t)PBX_CORE_ST_FREE;
    bool live = known && cg->link.state == (uint16_t)PBX_CORE_ST_LIVE;
    uint16_t before = cg->link.state;
    pbx_ipc_cancel q;
    memset(&q, 0, sizeof(q));
    q.by_grant = true;
    q.grant.index = g;
    q.grant.gen = gr->gen;
    if (q.grant.gen == 0U ||
        pbx_ipc_cancel_encode(&q, buf, sizeof(buf), &n) != PBX_OK) {
        return;
    }
    sim_event_add(w, SIM_EV_CANCEL, g, before, 0x6A, foreign ? 1U : 0U);
    static sim_effect e;
    sim_effect_before(w, &e);
    sim_effect_cover_grant(&e, g, gr->gen);
    const pbx_core_out *o = sim_public(w, badge, buf, n, NULL, 0U, 0U);
    if (o == NULL) {
        return;
    }
    uint16_t st = sim_reply_status(o, NULL);
    sim_effect_check(w, &e, st == 0U, "grant CANCEL");
    if (foreign && known &&
        (st != (uint16_t)PBX_E_CORE_UNKNOWN || cg->link.state != before)) {
        sim_fail(w,
                 "grant CANCEL of %u/%u from foreign badge %#x answered "
                 "%#x, not UNKNOWN (one answer for not yours and missing) "
                 "and no change",
                 g, gr->gen, badge, st);
        return;
    }
    if (st != 0U) {
        return;
    }
    if (!live || foreign || gr->ending != 0U) {
        sim_fail(w,
                 "invariant 7: grant CANCEL of %u/%u acted on a grant that "
                 "is not live (state %u) or not the caller's",
                 g, gr->gen, before);
        return;
    }
    gr->ending = 1U;
}
