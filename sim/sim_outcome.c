/*
 * sim_outcome.c: the evidence every outcome needs, the quiescence checks
 * and the transition coverage inferred from the core's record states.
 */
#include "sim/sim.h"

#include <string.h>

/* APPROVED needs the ACTIVE acknowledgement and an authorisation. */
static void sim_check_approved(sim_world *w, uint32_t i,
                               const pbx_ipc_decision *d)
{
    const sim_req *s = &w->reqs[i];
    const pbx_ipc_context *c = &s->begin.ctx;
    if (s->active_acked.gen == 0U || s->active_acked.index != d->grant.index ||
        s->active_acked.gen != d->grant.gen) {
        sim_fail(w,
                 "invariant 4: APPROVED for %u/%u (grant %u/%u) before "
                 "ttyd acknowledged its ACTIVE row",
                 i, s->gen, d->grant.index, d->grant.gen);
        return;
    }
    bool routine = c->urgency == (uint8_t)PBX_IPC_URGENCY_ROUTINE;
    if (!(routine && s->policy_allow != 0U) && s->user_approved == 0U) {
        sim_fail(w, "invariant 3: %s request %u/%u APPROVED without %s",
                 routine ? "routine" : "exceptional", i, s->gen,
                 routine ? "ALLOW or user approval" : "the user's approval");
        return;
    }
    if (pbx_ipc_admission_check(c->operation, c->object_class, c->lifetime) !=
        PBX_OK) {
        sim_fail(w, "invariant 3: inadmissible grant shape approved");
        return;
    }
    if (d->mode != c->mode || (c->mode == (uint8_t)PBX_IPC_MODE_INSTALL &&
                               d->installed_slot != s->installed_slot)) {
        sim_fail(w, "APPROVED reply mode or installed slot differs");
    }
    w->stat_approved++;
}

/* Whether request i's grant ended (cancel, consume or expiry) before its
 * approval was delivered: the core then retains CANCELLED instead. */
static bool sim_grant_ended(const sim_world *w, uint32_t i)
{
    const sim_req *s = &w->reqs[i];
    if (s->grant_gone != 0U) {
        return true;
    }
    if (s->grant >= SIM_GRANT_MAX || w->grants[s->grant].req != i ||
        w->grants[s->grant].req_gen != s->gen) {
        return false;
    }
    const pbx_core_grant *cg = sim_core_grant(w, s->grant);
    return w->grants[s->grant].ending != 0U || cg->link.live == 0U ||
           cg->link.generation != w->grants[s->grant].gen ||
           cg->link.state != (uint16_t)PBX_CORE_ST_LIVE;
}

/* A DENIED decision says why, and says timeout exactly when a call of
 * the request ended unanswered (its deadline or its route's loss): a
 * PROMPT's as PROMPT_TIMEOUT, any other progression call's as
 * PEER_TIMEOUT; one ended by the loss of the vfsd whose object it held
 * says PROVIDER_LOST (issue 20, item 5). Such a decision never carries
 * authority (checked for every unapproved decision in sim_check_terminal). */
static void sim_check_denied(sim_world *w, uint32_t i,
                             const pbx_ipc_decision *d)
{
    const sim_req *s = &w->reqs[i];
    uint32_t want = s->provider_lost != 0U
                        ? (uint32_t)PBX_IPC_REASON_PROVIDER_LOST
                    : s->expired_op == 0U ? 0U
                    : s->expired_op == (uint32_t)PBX_IPC_OP_PROMPT
                        ? (uint32_t)PBX_IPC_REASON_PROMPT_TIMEOUT
                        : (uint32_t)PBX_IPC_REASON_PEER_TIMEOUT;
    bool timeout = d->reason == (uint16_t)PBX_IPC_REASON_PROMPT_TIMEOUT ||
                   d->reason == (uint16_t)PBX_IPC_REASON_PEER_TIMEOUT;
    if (d->reason == (uint16_t)PBX_IPC_REASON_NONE ||
        (want != 0U && d->reason != want) || (want == 0U && timeout)) {
        sim_fail(w,
                 "invariant 12: request %u/%u DENIED with reason %u, but its "
                 "unanswered call was op %#x",
                 i, s->gen, d->reason, s->expired_op);
        return;
    }
    if (d->grant.gen != 0U || d->mode != 0U) {
        sim_fail(w, "invariant 12: DENIED decision of %u/%u names a grant", i,
                 s->gen);
    }
}

/* Whether request s could have ended by its OPEN deadline: never
 * committed, and the deadline since its BEGIN has passed. */
static bool sim_open_expired(const sim_world *w, const sim_req *s)
{
    return s->committed == 0U &&
           w->now_ms >= s->begun_ms + w->time_ms[PBX_BOOTSTRAP_TIME_OPEN];
}

void sim_check_outcome(sim_world *w, uint32_t i, const pbx_ipc_decision *d)
{
    const sim_req *s = &w->reqs[i];
    if (d->outcome != (uint8_t)PBX_IPC_OUTCOME_CANCELLED &&
        s->cancel_ok != 0U) {
        sim_fail(w, "request %u/%u was cancelled in flight but decided %u", i,
                 s->gen, d->outcome);
        return;
    }
    switch (d->outcome) {
    case PBX_IPC_OUTCOME_APPROVED:
        sim_check_approved(w, i, d);
        break;
    case PBX_IPC_OUTCOME_NOT_FOUND:
        if (s->nf_evidence == 0U) {
            sim_fail(w,
                     "invariant 6: NOT_FOUND for %u/%u without an exact "
                     "scoped vfsd NOT_FOUND",
                     i, s->gen);
        }
        w->stat_notfound++;
        break;
    case PBX_IPC_OUTCOME_CANCELLED:
        if (s->cancel_ok == 0U && s->expire_hit == 0U &&
            !sim_open_expired(w, s) && !sim_grant_ended(w, i)) {
            sim_fail(w, "CANCELLED for %u/%u that nobody cancelled", i, s->gen);
        }
        w->stat_cancelled++;
        break;
    case PBX_IPC_OUTCOME_DENIED:
        sim_check_denied(w, i, d);
        w->stat_denied++;
        break;
    default:
        sim_fail(w, "unknown outcome %u", d->outcome);
        break;
    }
}

/* Every pool is back to all-free; every queue empty. */
static void sim_check_pools_free(sim_world *w)
{
    const pbx_core_ctx *c = w->core;
    for (size_t p = 0; p < (size_t)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        if (p == (size_t)PBX_BOOTSTRAP_POOL_SELECTOR_BYTES) {
            continue;
        }
        if (c->pools[p].free_count != c->pools[p].capacity) {
            sim_fail(w, "quiescence: pool %s holds %u records",
                     pbx_bootstrap_pool_name((pbx_bootstrap_pool)p),
                     c->pools[p].capacity - c->pools[p].free_count);
            return;
        }
    }
    if (c->chunk_free_count != c->chunk_count) {
        sim_fail(w, "quiescence: %u selector chunks still held",
                 c->chunk_count - c->chunk_free_count);
    }
    for (size_t q = 0; q < (size_t)PBX_CORE_Q_COUNT; q++) {
        if (c->queues[q].count != 0U) {
            sim_fail(w, "quiescence: queue %zu holds %u records", q,
                     c->queues[q].count);
            return;
        }
    }
}

void sim_check_quiescent(sim_world *w)
{
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        const sim_req *s = &w->reqs[i];
        if (s->live != 0U) {
            const pbx_core_request *r = sim_core_req(w, i);
            sim_fail(w,
                     "quiescence: request %u/%u never finished (core state "
                     "%s, outcome %u, delivered %u, woken %u)",
                     i, s->gen,
                     pbx_core_state_name((pbx_core_state)r->link.state),
                     r->outcome, s->delivered, s->wakes);
            return;
        }
    }
    for (uint32_t g = 0; g < SIM_GRANT_MAX; g++) {
        const sim_grant *gr = &w->grants[g];
        if ((gr->state != (uint32_t)SIM_G_NONE &&
             gr->state != (uint32_t)SIM_G_RETIRED) ||
            gr->procd_live != 0U) {
            sim_fail(w,
                     "quiescence: grant %u/%u not revoked and retired "
                     "(shadow state %u, procd %u)",
                     g, gr->gen, gr->state, gr->procd_live);
            return;
        }
    }
    sim_check_pools_free(w);
    if (w->occupied != 0U || pbx_core_held_caps(w->core) != 0U) {
        sim_fail(w, "quiescence: %u capabilities still held", w->occupied);
    }
    if (w->nflights != 0U || w->led_flight != 0U || sim_calls_open(w) != 0U ||
        pbx_core_calls_outstanding(w->core) != 0U) {
        sim_fail(w,
                 "quiescence: %u replies (%llu receipts) in flight, %u calls "
                 "open, %u outstanding in the core",
                 w->nflights, (unsigned long long)w->led_flight,
                 sim_calls_open(w), pbx_core_calls_outstanding(w->core));
    }
    if (w->procd_installs != 0U) {
        sim_fail(w, "quiescence: %llu procd installs never revoked",
                 (unsigned long long)w->procd_installs);
    }
    sim_check_ledger(w);
    for (uint32_t s = SIM_TFIRST; s < SIM_SLOTS; s++) {
        if (w->slots[s].reserved != 0U) {
            sim_fail(w, "quiescence: destination %u still reserved", s);
            return;
        }
    }
}

/* Marks the table row (machine, from, event) reached. */
static void sim_cover(sim_world *w, pbx_core_machine m, uint32_t from,
                      pbx_core_event ev, uint32_t to)
{
    size_t row = pbx_core_fsm_find(m, (pbx_core_state)from, ev);
    size_t n = 0;
    const pbx_core_transition *t = pbx_core_fsm_table(&n);
    if (row == SIZE_MAX || t[row].to != to) {
        sim_fail(w, "fsm: %s %s -> %s is no row of the transition table",
                 m == PBX_CORE_MACHINE_REQUEST ? "request" : "grant",
                 pbx_core_state_name((pbx_core_state)from),
                 pbx_core_state_name((pbx_core_state)to));
        return;
    }
    /* Coverage itself is counted by the core (fsm_hits); the inference
     * here only checks that every move the records show is a row. */
}

/* Infers the event of a request move from what is now visible. */
static pbx_core_event sim_req_event(const sim_world *w, uint32_t i,
                                    uint32_t from, uint32_t to)
{
    const pbx_core_request *r = sim_core_req(w, i);
    if (to == (uint32_t)PBX_CORE_ST_RELEASE) {
        switch (r->outcome) {
        case PBX_IPC_OUTCOME_APPROVED:
            return PBX_CORE_EV_ACTIVE_ACK;
        case PBX_IPC_OUTCOME_NOT_FOUND:
            return PBX_CORE_EV_NOT_FOUND;
        case PBX_IPC_OUTCOME_CANCELLED:
            return PBX_CORE_EV_CANCEL;
        default:
            return PBX_CORE_EV_DENY;
        }
    }
    static const uint8_t ev_to[PBX_CORE_ST_COUNT] = {
        [PBX_CORE_ST_RESOLVE] = PBX_CORE_EV_COMMIT,
        [PBX_CORE_ST_POLICY] = PBX_CORE_EV_RESOLVED,
        [PBX_CORE_ST_PROMPT] = PBX_CORE_EV_PROMPT,
        [PBX_CORE_ST_INSTALL] = PBX_CORE_EV_ALLOW,
        [PBX_CORE_ST_DETACH] = PBX_CORE_EV_INSTALLED,
        [PBX_CORE_ST_ACTIVATE] = PBX_CORE_EV_DETACHED,
        [PBX_CORE_ST_NOTIFY] = PBX_CORE_EV_RELEASED,
        [PBX_CORE_ST_DECIDED] = PBX_CORE_EV_WOKEN,
        [PBX_CORE_ST_DELIVERED] = PBX_CORE_EV_DELIVERED,
    };
    if (to == (uint32_t)PBX_CORE_ST_FREE) {
        return from == (uint32_t)PBX_CORE_ST_DECIDED ? PBX_CORE_EV_DELIVERED
                                                     : PBX_CORE_EV_WOKEN;
    }
    if (to == (uint32_t)PBX_CORE_ST_OPEN) {
        return from == (uint32_t)PBX_CORE_ST_OPEN ? PBX_CORE_EV_SELECTOR
                                                  : PBX_CORE_EV_BEGIN;
    }
    if (to == from && to == (uint32_t)PBX_CORE_ST_PROMPT) {
        return PBX_CORE_EV_RETRY;
    }
    return (pbx_core_event)ev_to[to < (uint32_t)PBX_CORE_ST_COUNT ? to : 0U];
}

/* Infers the event of a grant move from from to to. */
static pbx_core_event sim_grant_event(uint32_t from, uint32_t to)
{
    switch (to) {
    case PBX_CORE_ST_LIVE:
        return PBX_CORE_EV_INSTALLED;
    case PBX_CORE_ST_SETTLE:
        return PBX_CORE_EV_REVOKED;
    case PBX_CORE_ST_REMOVE:
        return PBX_CORE_EV_RETIRED;
    case PBX_CORE_ST_RETIRE:
        return PBX_CORE_EV_REMOVED;
    case PBX_CORE_ST_FREE:
        /* The last of the two acknowledgements frees the record. */
        return from == (uint32_t)PBX_CORE_ST_REMOVE ? PBX_CORE_EV_REMOVED
                                                    : PBX_CORE_EV_RETIRED;
    default:
        /* Out of LIVE: CONSUME, CANCEL and EXPIRE set w->cause; a core
         * step ends a grant only for its cancelled request. */
        return PBX_CORE_EV_CANCEL;
    }
}

/* Reads the request aux word: selector bytes and prompt retries. */
static uint32_t sim_req_aux(const sim_world *w, uint32_t i)
{
    const pbx_core_request *r = sim_core_req(w, i);
    return r->selector_received_bytes ^ (sim_core_prompt_retries(w, i) << 16);
}

/* The exact reply (sim_call_kind bit) a request needs before it moves
 * from from to to, or 0 when the move needs none of them. */
static uint32_t sim_step_needs(const sim_world *w, uint32_t i, uint32_t from,
                               uint32_t to)
{
    const pbx_core_request *r = sim_core_req(w, i);
    if (from == (uint32_t)PBX_CORE_ST_RESOLVE &&
        to == (uint32_t)PBX_CORE_ST_POLICY) {
        return 1U << SIM_CALL_RESOLVE;
    }
    if (from == (uint32_t)PBX_CORE_ST_POLICY &&
        to == (uint32_t)PBX_CORE_ST_PROMPT) {
        return 1U << SIM_CALL_POLICY;
    }
    /* A runtime-reply request derives its alias locally: no INSTALL. */
    if (from == (uint32_t)PBX_CORE_ST_INSTALL &&
        to == (uint32_t)PBX_CORE_ST_DETACH &&
        w->reqs[i].begin.ctx.mode == (uint8_t)PBX_IPC_MODE_INSTALL) {
        return 1U << SIM_CALL_INSTALL;
    }
    if (from == (uint32_t)PBX_CORE_ST_DETACH &&
        to == (uint32_t)PBX_CORE_ST_ACTIVATE) {
        return 1U << SIM_CALL_DETACH;
    }
    if (from == (uint32_t)PBX_CORE_ST_ACTIVATE &&
        to == (uint32_t)PBX_CORE_ST_RELEASE &&
        r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED) {
        return 1U << SIM_CALL_ACTIVE;
    }
    return 0U;
}

/* Invariant 16: a request advances only on the exact reply to the call
 * of the state it leaves (sim_calls.c judges the bytes the core took): an
 * exact FOUND before POLICY, an exact PROMPT verdict before the prompt,
 * procd's exact INSTALL reply before DETACH, vfsd's exact DETACH
 * acknowledgement (the identity of the object copy it took) before the
 * ACTIVE row, and ttyd's exact ACTIVE acknowledgement before approval is
 * decided. */
static void sim_check_step_exact(sim_world *w, uint32_t i, uint32_t from,
                                 uint32_t to)
{
    const sim_req *s = &w->reqs[i];
    uint32_t need = sim_step_needs(w, i, from, to);
    bool ok = (s->exact & need) == need;
    if (need == (1U << SIM_CALL_POLICY)) {
        ok = ok && s->exact_verdict == (uint32_t)PBX_IPC_VERDICT_PROMPT;
    }
    if (s->live != 0U && !ok) {
        sim_fail(w,
                 "invariant 16: request %u/%u moved %s -> %s without the "
                 "exact reply to its call (exact replies taken %#x)",
                 i, s->gen, pbx_core_state_name((pbx_core_state)from),
                 pbx_core_state_name((pbx_core_state)to), s->exact);
    }
}

/* Notes the move of request i since the last snapshot. */
static void sim_note_req(sim_world *w, uint32_t i)
{
    const pbx_core_request *r = sim_core_req(w, i);
    uint32_t *snap = w->snap_req[i];
    uint32_t live = r->link.live;
    uint32_t gen = r->link.generation;
    uint32_t st = live != 0U ? r->link.state : (uint32_t)PBX_CORE_ST_FREE;
    uint32_t aux = sim_req_aux(w, i);
    if (snap[2] != st || snap[1] != gen || snap[0] != live) {
        w->calls_dirty = 1U;
        w->rec_dirty = 1U;
    }
    if (snap[0] != 0U && (snap[1] != gen || live == 0U) &&
        snap[2] != (uint32_t)PBX_CORE_ST_FREE) {
        uint32_t from = snap[2];
        sim_cover(w, PBX_CORE_MACHINE_REQUEST, from,
                  sim_req_event(w, i, from, PBX_CORE_ST_FREE),
                  PBX_CORE_ST_FREE);
        snap[0] = 0U;
    }
    if (live != 0U && (snap[0] == 0U || snap[1] != gen)) {
        sim_cover(w, PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_FREE,
                  PBX_CORE_EV_BEGIN, PBX_CORE_ST_OPEN);
        snap[2] = PBX_CORE_ST_OPEN;
        snap[3] = 0U;
    }
    if (live != 0U && (snap[2] != st || snap[3] != aux)) {
        if (snap[2] == (uint32_t)PBX_CORE_ST_RELEASE &&
            st == (uint32_t)PBX_CORE_ST_DELIVERED &&
            w->reqs[i].abandoned != 0U && w->reqs[i].gen == gen) {
            /* Abandoned with the broker: published and counted delivered
             * in one call (pbx_core_publish), two rows. */
            sim_cover(w, PBX_CORE_MACHINE_REQUEST, snap[2],
                      PBX_CORE_EV_RELEASED, PBX_CORE_ST_NOTIFY);
            snap[2] = PBX_CORE_ST_NOTIFY;
        }
        sim_cover(w, PBX_CORE_MACHINE_REQUEST, snap[2],
                  sim_req_event(w, i, snap[2], st), st);
        if (w->reqs[i].gen == gen) {
            sim_check_step_exact(w, i, snap[2], st);
        }
    }
    snap[0] = live;
    snap[1] = gen;
    snap[2] = st;
    snap[3] = aux;
}

/* Notes the move of grant g since the last snapshot. */
static void sim_note_grant(sim_world *w, uint32_t g)
{
    const pbx_core_grant *cg = sim_core_grant(w, g);
    uint32_t *snap = w->snap_grant[g];
    uint32_t st =
        cg->link.live != 0U ? cg->link.state : (uint32_t)PBX_CORE_ST_FREE;
    uint32_t gen = cg->link.generation;
    if (st != (uint32_t)PBX_CORE_ST_FREE && w->grants[g].gen == gen) {
        w->grants[g].core_seen = 1U;
    }
    /* Revocation began when the grant left LIVE: its cleanup clock. */
    bool cleanup = st == (uint32_t)PBX_CORE_ST_REVOKE ||
                   st == (uint32_t)PBX_CORE_ST_SETTLE ||
                   st == (uint32_t)PBX_CORE_ST_REMOVE ||
                   st == (uint32_t)PBX_CORE_ST_RETIRE;
    if (!cleanup) {
        w->cleanup[g].gen = 0U;
    } else if (w->cleanup[g].gen != gen) {
        w->cleanup[g].gen = gen;
        w->cleanup[g].from = w->step;
    }
    if (snap[1] != gen || snap[2] != st) {
        w->calls_dirty = 1U;
        w->rec_dirty = 1U;
    }
    if (snap[1] != gen) {
        if (snap[2] != (uint32_t)PBX_CORE_ST_FREE) {
            sim_cover(w, PBX_CORE_MACHINE_GRANT, snap[2],
                      sim_grant_event(snap[2], PBX_CORE_ST_FREE),
                      PBX_CORE_ST_FREE);
        }
        snap[2] = PBX_CORE_ST_FREE;
    }
    if (snap[2] != st) {
        pbx_core_event ev = sim_grant_event(snap[2], st);
        if (st == (uint32_t)PBX_CORE_ST_REVOKE && w->cause != 0U) {
            ev = (pbx_core_event)(w->cause - 1U);
        }
        sim_cover(w, PBX_CORE_MACHINE_GRANT, snap[2], ev, st);
    }
    snap[1] = gen;
    snap[2] = st;
}

void sim_coverage_note(sim_world *w)
{
    uint32_t rcap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    uint32_t gcap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t i = 0; i < rcap && i < SIM_REQ_MAX; i++) {
        sim_note_req(w, i);
    }
    for (uint32_t g = 0; g < gcap && g < SIM_GRANT_MAX; g++) {
        sim_note_grant(w, g);
    }
}
