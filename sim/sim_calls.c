/*
 * sim_calls.c: the simulator's own account of every call it carried. A
 * call is open from the send the kernel took until exactly one of: the
 * core accepted a reply that echoes it, its deadline passed (the clock the
 * core heard reached it), its route went down (every class on that
 * route; a prompt outlives its ttyd until its deadline), or, for a
 * progression call, its owner left the state it was sent from
 * (cancellation, expiry), and for a live grant's row resent to a returned
 * ttyd, its grant left LIVE. After every call into the core the open
 * set must equal the core's outstanding-call records, field for field,
 * and every record must belong to a live owner of the same generation
 * that records exactly that call; no request or grant may wait on a call
 * that is not its own.
 */
#include "sim/sim.h"

#include <string.h>

uint32_t sim_call_class(uint32_t route, uint32_t op)
{
    if (route == PBX_CORE_ROUTE_SCOPE) {
        return PBX_BOOTSTRAP_TIME_SCOPE;
    }
    switch (op) {
    case PBX_IPC_OP_PROMPT:
        return PBX_BOOTSTRAP_TIME_PROMPT;
    case PBX_IPC_OP_POLICY:
    case PBX_IPC_OP_VIEW:
    case PBX_IPC_OP_WITHDRAW:
        return PBX_BOOTSTRAP_TIME_TTYD;
    case PBX_IPC_OP_INSTALL:
        return PBX_BOOTSTRAP_TIME_PROCD;
    default:
        return PBX_BOOTSTRAP_TIME_VFSD;
    }
}

/* The route whose loss ends a class's calls (none for a caller's scope,
 * whose calls end only by reply, deadline or owner). */
static uint32_t sim_class_route(uint32_t clazz)
{
    switch (clazz) {
    case PBX_BOOTSTRAP_TIME_VFSD:
        return PBX_CORE_ROUTE_VFSD;
    case PBX_BOOTSTRAP_TIME_TTYD:
    case PBX_BOOTSTRAP_TIME_PROMPT:
        return PBX_CORE_ROUTE_TTYD;
    case PBX_BOOTSTRAP_TIME_PROCD:
        return PBX_CORE_ROUTE_PROCD;
    default:
        return SIM_NIL;
    }
}

/* Whether kind is a progression call (sent before the decision). */
static bool sim_kind_progress(uint32_t kind)
{
    return kind >= (uint32_t)SIM_CALL_RESOLVE &&
           kind <= (uint32_t)SIM_CALL_ACTIVE;
}

/* The operation each kind sends. */
static uint32_t sim_kind_op(uint32_t kind)
{
    static const uint16_t ops[SIM_CALL_KINDS] = {
        [SIM_CALL_RESOLVE] = PBX_IPC_OP_RESOLVE,
        [SIM_CALL_POLICY] = PBX_IPC_OP_POLICY,
        [SIM_CALL_PROMPT] = PBX_IPC_OP_PROMPT,
        [SIM_CALL_INSTALL] = PBX_IPC_OP_INSTALL,
        [SIM_CALL_DETACH] = PBX_IPC_OP_DETACH,
        [SIM_CALL_ACTIVE] = PBX_IPC_OP_VIEW,
        [SIM_CALL_REL_DETACH] = PBX_IPC_OP_DETACH,
        [SIM_CALL_REQ_RETIRE] = PBX_IPC_OP_RETIRE,
        [SIM_CALL_WITHDRAW] = PBX_IPC_OP_WITHDRAW,
        [SIM_CALL_REMOVE] = PBX_IPC_OP_VIEW,
        [SIM_CALL_RETIRE] = PBX_IPC_OP_RETIRE,
        [SIM_CALL_RESYNC] = PBX_IPC_OP_VIEW,
    };
    return kind < (uint32_t)SIM_CALL_KINDS ? ops[kind] : 0U;
}

/* The request state a request-owned kind is sent from. */
static uint32_t sim_kind_state(uint32_t kind)
{
    static const uint8_t st[SIM_CALL_KINDS] = {
        [SIM_CALL_RESOLVE] = PBX_CORE_ST_RESOLVE,
        [SIM_CALL_POLICY] = PBX_CORE_ST_POLICY,
        [SIM_CALL_PROMPT] = PBX_CORE_ST_PROMPT,
        [SIM_CALL_INSTALL] = PBX_CORE_ST_INSTALL,
        [SIM_CALL_DETACH] = PBX_CORE_ST_DETACH,
        [SIM_CALL_ACTIVE] = PBX_CORE_ST_ACTIVATE,
        [SIM_CALL_REL_DETACH] = PBX_CORE_ST_RELEASE,
        [SIM_CALL_REQ_RETIRE] = PBX_CORE_ST_RELEASE,
        [SIM_CALL_WITHDRAW] = PBX_CORE_ST_RELEASE,
    };
    return kind < (uint32_t)SIM_CALL_KINDS ? st[kind] : 0U;
}

void sim_call_sent(sim_world *w, const pbx_core_call *c, uint32_t peer,
                   const pbx_ipc_frame *f)
{
    (void)peer;
    uint32_t k = sim_core_call_index(w, f->seq);
    if (k == SIM_NIL || k >= SIM_CALL_MAX) {
        sim_fail(
            w, "invariant 10: the core sent seq %#x that names no call record",
            f->seq);
        return;
    }
    sim_call *sc = &w->calls[k];
    if (sc->open != 0U && sc->v.seq == f->seq &&
        f->op == (uint16_t)PBX_IPC_OP_PROMPT &&
        sc->v.op == (uint16_t)PBX_IPC_OP_PROMPT &&
        c->route == (uint32_t)PBX_CORE_ROUTE_TTYD && w->prompt_resend != 0U) {
        /* A returned ttyd is shown the open prompt again: the same call,
         * its sequence and deadline unchanged. */
        return;
    }
    if (sc->open != 0U) {
        sim_fail(
            w,
            "invariant 10: the core sent seq %#x on record %u while its call "
            "%#x is still open",
            f->seq, k, sc->v.seq);
        return;
    }
    memset(sc, 0, sizeof(*sc));
    sc->open = 1U;
    w->calls_open++;
    w->calls_dirty = 1U;
    sc->v.live = 1U;
    sc->v.seq = f->seq;
    sc->v.route = c->route;
    sc->v.via_slot = c->via_slot;
    sc->v.op = f->op;
    sc->v.id = f->request;
    sc->v.clazz = sim_call_class(c->route, f->op);
    sc->v.deadline_ms = w->now_ms + w->time_ms[sc->v.clazz];
    if (sc->v.deadline_ms < w->calls_next_ms) {
        w->calls_next_ms = sc->v.deadline_ms;
    }
}

uint32_t sim_call_match(const sim_world *w, const sim_flight *f)
{
    uint32_t seq = 0;
    if (f->len < PBX_IPC_HEADER_BYTES ||
        pbx_ipc_frame_peek_seq(f->bytes, f->len, &seq) != PBX_OK) {
        return SIM_NIL;
    }
    for (uint32_t k = 0; k < SIM_CALL_MAX; k++) {
        const sim_call *sc = &w->calls[k];
        if (sc->open == 0U || sc->v.seq != seq) {
            continue;
        }
        /* A scoped call (RESOLVE) is answered on vfsd's route only: a
         * reply on any scope (the job holds a copy) answers nothing. */
        uint32_t on = sc->v.route == PBX_CORE_ROUTE_SCOPE
                          ? (uint32_t)PBX_CORE_ROUTE_VFSD
                          : sc->v.route;
        if (on != f->route ||
            pbx_le_get16(f->bytes + 6) !=
                (uint16_t)(sc->v.op | PBX_IPC_REPLY_BIT) ||
            pbx_le_get32(f->bytes + 12) != sc->v.id.index ||
            pbx_le_get32(f->bytes + 16) != sc->v.id.gen) {
            return SIM_NIL;
        }
        return k;
    }
    return SIM_NIL;
}

/* Closes open call sc. */
static void sim_call_close(sim_world *w, sim_call *sc)
{
    sc->open = 0U;
    w->calls_open--;
    w->calls_dirty = 1U;
}

/* Decodes reply f as the status-zero reply to call v: the operation with
 * the reply bit and the header identity the call went out with. */
static bool sim_reply_of(const sim_flight *f, const sim_call_view *v,
                         pbx_ipc_frame *out)
{
    return pbx_ipc_frame_decode(f->bytes, f->len, (uint16_t)f->ncaps, out) ==
               PBX_OK &&
           out->op == (uint16_t)(v->op | PBX_IPC_REPLY_BIT) &&
           out->status == 0U && out->request.index == v->id.index &&
           out->request.gen == v->id.gen;
}

/* Whether receipt c is the one fresh receipt of role a peer owes request
 * (or grant) owner/gen, with the rights the seed allows it. */
static bool sim_receipt_exact(const sim_flight *f, uint32_t role,
                              uint32_t rights, uint32_t owner, uint32_t gen)
{
    const sim_cap *c = &f->caps[0];
    return f->ncaps == 1U && c->role == role && c->rights == rights &&
           c->kind == (uint32_t)PBX_CAPABI_KIND_ENDPOINT &&
           c->prov == (uint32_t)PBX_CAPABI_PROV_RECEIVED && c->owner == owner &&
           c->owner_gen == gen;
}

/* Whether d is vfsd's exact FOUND for request s (index i): the request's
 * operation, class and digest, the identity vfsd gives its committed
 * scope, the object vfsd resolved, and one SEND-only object receipt. */
static bool sim_exact_resolve(const sim_req *s, uint32_t i, const sim_flight *f,
                              const pbx_ipc_frame *d)
{
    pbx_ipc_resolve_reply rr;
    const pbx_ipc_context *c = &s->begin.ctx;
    return pbx_ipc_resolve_reply_decode(d, &rr) == PBX_OK &&
           rr.result == (uint8_t)PBX_IPC_RESOLVE_FOUND &&
           rr.operation == c->operation && rr.object_class == c->object_class &&
           memcmp(rr.selector_digest, s->begin.selector_digest, 32U) == 0 &&
           rr.scope_id == SIM_SCOPE_IDENT_BASE + s->scope_cap &&
           rr.object.id == s->object.id && rr.object.gen == s->object.gen &&
           sim_receipt_exact(f, SIM_ROLE_OBJECT, PBX_CAPABI_RIGHT_SEND, i,
                             s->gen);
}

/* Whether d is procd's exact INSTALL reply for request s: a manage-only
 * handle in the target slot, echoing the grant procd installed (the one
 * the INSTALL named) and the target process, with one MANAGE-only handle
 * receipt of that grant. */
static bool sim_exact_install(const sim_world *w, const sim_req *s,
                              const sim_flight *f, const pbx_ipc_frame *d)
{
    pbx_ipc_install_reply ir;
    if (s->grant >= SIM_GRANT_MAX ||
        pbx_ipc_install_reply_decode(d, &ir) != PBX_OK) {
        return false;
    }
    const sim_grant *gr = &w->grants[s->grant];
    return ir.handle_kind == (uint8_t)PBX_IPC_HANDLE_MANAGE_ONLY &&
           ir.installed_slot == s->begin.target.slot &&
           ir.grant.index == s->grant && ir.grant.gen == gr->gen &&
           ir.target_process_id == s->begin.target.process_id &&
           ir.target_process_gen == s->begin.target.process_gen &&
           sim_receipt_exact(f, SIM_ROLE_HANDLE, PBX_CAPABI_RIGHT_MANAGE,
                             s->grant, gr->gen);
}

/* Whether d is the exact answer to the call of kind for request s: the
 * same rules the seed states for each reply, restated from the sim's own
 * records (what the peers resolved, installed and were asked). */
static bool sim_exact_reply(const sim_world *w, uint32_t kind, uint32_t i,
                            const sim_flight *f, const pbx_ipc_frame *d,
                            uint32_t *verdict)
{
    const sim_req *s = &w->reqs[i];
    const pbx_ipc_context *c = &s->begin.ctx;
    pbx_ipc_policy_reply pr;
    pbx_ipc_detach det;
    pbx_ipc_view_ack ack;
    pbx_ipc_retire rt;
    switch (kind) {
    case SIM_CALL_RESOLVE:
        return sim_exact_resolve(s, i, f, d);
    case SIM_CALL_POLICY:
        *verdict = pbx_ipc_policy_reply_decode(d, &pr) == PBX_OK &&
                           pr.urgency == c->urgency && pr.realm == c->realm &&
                           pr.session == c->session
                       ? pr.verdict
                       : 0U;
        return *verdict != 0U;
    case SIM_CALL_INSTALL:
        return sim_exact_install(w, s, f, d);
    case SIM_CALL_DETACH:
        return pbx_ipc_detach_reply_decode(d, &det) == PBX_OK &&
               det.object.id == s->object.id && det.object.gen == s->object.gen;
    case SIM_CALL_ACTIVE:
        return pbx_ipc_view_reply_decode(d, &ack) == PBX_OK &&
               ack.kind == (uint8_t)PBX_IPC_VIEW_ACTIVE &&
               ack.grant.index == d->request.index &&
               ack.grant.gen == d->request.gen;
    case SIM_CALL_REQ_RETIRE:
        return pbx_ipc_retire_reply_decode(d, &rt) == PBX_OK &&
               rt.object.id == s->object.id && rt.object.gen == s->object.gen &&
               rt.scope_id == s->scope_ident &&
               rt.object_class == c->object_class;
    default:
        return false;
    }
}

void sim_call_answered(sim_world *w, uint32_t k, const sim_flight *f)
{
    sim_call *sc = &w->calls[k];
    const sim_call_view *v = &sc->v;
    pbx_ipc_frame d;
    uint32_t verdict = 0U;
    sim_call_close(w, sc);
    uint32_t i = v->owner;
    if (sc->known == 0U ||
        v->owner_pool != (uint32_t)PBX_BOOTSTRAP_POOL_REQUESTS ||
        i >= SIM_REQ_MAX || w->reqs[i].live == 0U ||
        w->reqs[i].gen != v->owner_gen || v->kind >= 32U) {
        return;
    }
    if (sim_reply_of(f, v, &d) &&
        sim_exact_reply(w, v->kind, i, f, &d, &verdict)) {
        w->reqs[i].exact |= 1U << v->kind;
        w->reqs[i].exact_verdict = v->kind == (uint32_t)SIM_CALL_POLICY
                                       ? verdict
                                       : w->reqs[i].exact_verdict;
    }
}

/* Ends call sc without an accepted reply (deadline or lost route): a
 * progression call's owner may now end only on a timeout. */
static void sim_call_unanswered(sim_world *w, sim_call *sc)
{
    sim_call_close(w, sc);
    uint32_t i = sc->v.owner;
    if (sc->known != 0U &&
        sc->v.owner_pool == (uint32_t)PBX_BOOTSTRAP_POOL_REQUESTS &&
        sim_kind_progress(sc->v.kind) && i < SIM_REQ_MAX &&
        w->reqs[i].live != 0U && w->reqs[i].gen == sc->v.owner_gen) {
        w->reqs[i].expired_op = sc->v.op;
    }
}

uint32_t sim_calls_expire(sim_world *w)
{
    uint32_t n = 0;
    if (w->now_ms < w->calls_next_ms) {
        return 0U; /* No open call's deadline has come. */
    }
    w->calls_next_ms = UINT64_MAX;
    for (uint32_t k = 0; k < SIM_CALL_MAX; k++) {
        sim_call *sc = &w->calls[k];
        if (sc->open != 0U && sc->v.deadline_ms <= w->now_ms) {
            sim_call_unanswered(w, sc);
            n++;
        } else if (sc->open != 0U && sc->v.deadline_ms < w->calls_next_ms) {
            w->calls_next_ms = sc->v.deadline_ms;
        }
    }
    return n;
}

void sim_calls_route_down(sim_world *w, uint32_t r)
{
    for (uint32_t k = 0; k < SIM_CALL_MAX; k++) {
        sim_call *sc = &w->calls[k];
        /* A prompt outlives its ttyd until its own deadline. */
        if (sc->open != 0U && sim_class_route(sc->v.clazz) == r &&
            sc->v.clazz != (uint32_t)PBX_BOOTSTRAP_TIME_PROMPT) {
            sim_call_unanswered(w, sc);
        }
    }
}

uint32_t sim_calls_open(const sim_world *w)
{
    return w->calls_open;
}

/* The identity a call of kind owned by a request (i, gen) carries: its
 * own, or its grant's for the ACTIVE row and a refused install's RETIRE. */
static pbx_ipc_id sim_req_call_id(const sim_world *w, uint32_t kind, uint32_t i,
                                  uint32_t gen)
{
    pbx_ipc_id id = {i, gen};
    const pbx_core_request *r = sim_core_req(w, i);
    if ((kind == (uint32_t)SIM_CALL_ACTIVE ||
         kind == (uint32_t)SIM_CALL_REQ_RETIRE) &&
        r->grant < w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity) {
        id.index = r->grant;
        id.gen = sim_core_grant(w, r->grant)->link.generation;
    }
    return id;
}

/* Checks that a freshly sent call's owner, kind, state and identity fit
 * together. */
static void sim_call_fits(sim_world *w, const sim_call *sc)
{
    const sim_call_view *v = &sc->v;
    bool req = v->owner_pool == (uint32_t)PBX_BOOTSTRAP_POOL_REQUESTS;
    pbx_ipc_id want = {v->owner, v->owner_gen};
    uint32_t state = 0;
    bool ok = sim_kind_op(v->kind) == v->op;
    if (req &&
        v->owner < w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity) {
        state = sim_core_req(w, v->owner)->link.state;
        want = sim_req_call_id(w, v->kind, v->owner, v->owner_gen);
        ok = ok && v->kind <= (uint32_t)SIM_CALL_WITHDRAW &&
             state == sim_kind_state(v->kind);
    } else if (!req &&
               v->owner < w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity) {
        state = sim_core_grant(w, v->owner)->link.state;
        ok = ok &&
             ((v->kind == (uint32_t)SIM_CALL_RESYNC &&
               state == PBX_CORE_ST_LIVE) ||
              (v->kind == (uint32_t)SIM_CALL_REMOVE &&
               (state == PBX_CORE_ST_SETTLE || state == PBX_CORE_ST_REMOVE)) ||
              (v->kind == (uint32_t)SIM_CALL_RETIRE &&
               (state == PBX_CORE_ST_SETTLE || state == PBX_CORE_ST_RETIRE)));
    } else {
        ok = false;
    }
    if (!ok || want.index != v->id.index || want.gen != v->id.gen) {
        sim_fail(
            w,
            "invariant 10: %#x (kind %u, op %#x, id %u/%u) sent for %s %u/%u "
            "in state %s",
            v->seq, v->kind, v->op, v->id.index, v->id.gen,
            req ? "request" : "grant", v->owner, v->owner_gen,
            pbx_core_state_name((pbx_core_state)state));
    }
}

/* Fills call k's owner from the core's record right after the send and
 * checks the record says what went out. */
static void sim_call_fill(sim_world *w, sim_call *sc, const sim_call_view *cv)
{
    const sim_call_view *v = &sc->v;
    if (cv->live == 0U || cv->seq != v->seq) {
        sim_fail(w,
                 "invariant 10: the core keeps no record of call %#x (op %#x)",
                 v->seq, v->op);
        return;
    }
    if (cv->route != v->route || cv->op != v->op ||
        (v->route == PBX_CORE_ROUTE_SCOPE && cv->via_slot != v->via_slot) ||
        cv->id.index != v->id.index || cv->id.gen != v->id.gen ||
        cv->clazz != v->clazz || cv->deadline_ms != v->deadline_ms) {
        sim_fail(
            w,
            "invariant 10: the core's record of %#x (route %u op %#x id %u/%u "
            "class %u deadline %llu) is not what went out (route %u "
            "op %#x id %u/%u class %u deadline %llu)",
            v->seq, cv->route, cv->op, cv->id.index, cv->id.gen, cv->clazz,
            (unsigned long long)cv->deadline_ms, v->route, v->op, v->id.index,
            v->id.gen, v->clazz, (unsigned long long)v->deadline_ms);
        return;
    }
    sc->v.owner_pool = cv->owner_pool;
    sc->v.owner = cv->owner;
    sc->v.owner_gen = cv->owner_gen;
    sc->v.kind = cv->kind;
    sc->known = 1U;
    sim_call_fits(w, sc);
    if (cv->owner_pool == (uint32_t)PBX_BOOTSTRAP_POOL_REQUESTS &&
        cv->owner < w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity) {
        sc->sent_state = sim_core_req(w, cv->owner)->link.state;
    }
}

/* Ends an open progression call whose owner left the state it was sent
 * from: the owner's end cancelled it. */
static void sim_call_follow(sim_world *w, sim_call *sc)
{
    const sim_call_view *v = &sc->v;
    if (sc->open != 0U && sc->known != 0U &&
        v->kind == (uint32_t)SIM_CALL_RESYNC &&
        v->owner < w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity) {
        /* A row owed to a returned ttyd is no longer owed once its grant
         * leaves LIVE: the grant's end cancels the call. */
        const pbx_core_grant *g = sim_core_grant(w, v->owner);
        if (g->link.live == 0U || g->link.generation != v->owner_gen ||
            g->link.state != (uint16_t)PBX_CORE_ST_LIVE) {
            sim_call_close(w, sc);
        }
        return;
    }
    if (sc->open == 0U || sc->known == 0U || !sim_kind_progress(v->kind) ||
        v->owner >= w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity) {
        return;
    }
    const pbx_core_request *r = sim_core_req(w, v->owner);
    if (r->link.live == 0U || r->link.generation != v->owner_gen ||
        r->link.state != sc->sent_state) {
        sim_call_close(w, sc);
    }
}

/* Checks that outstanding call record k belongs to a live owner of the
 * same generation that records exactly this call. */
static void sim_call_owner(sim_world *w, uint32_t k, const sim_call_view *cv)
{
    bool ok = false;
    if (cv->owner_pool == (uint32_t)PBX_BOOTSTRAP_POOL_REQUESTS &&
        cv->owner < w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity) {
        const pbx_core_request *r = sim_core_req(w, cv->owner);
        ok = r->link.live != 0U && r->link.generation == cv->owner_gen &&
             sim_core_req_call(w, cv->owner) == k;
    } else if (cv->owner_pool == (uint32_t)PBX_BOOTSTRAP_POOL_GRANTS &&
               cv->owner < w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity) {
        const pbx_core_grant *g = sim_core_grant(w, cv->owner);
        uint32_t rm = SIM_NIL;
        uint32_t rt = SIM_NIL;
        sim_core_grant_calls(w, cv->owner, &rm, &rt);
        ok = g->link.live != 0U && g->link.generation == cv->owner_gen &&
             (cv->kind == (uint32_t)SIM_CALL_REMOVE ||
                      cv->kind == (uint32_t)SIM_CALL_RESYNC
                  ? rm
                  : rt) == k;
    }
    if (!ok) {
        sim_fail(
            w,
            "invariant 10: outstanding call %#x (op %#x) belongs to %s %u/%u, "
            "which is gone or does not record it",
            cv->seq, cv->op,
            cv->owner_pool == (uint32_t)PBX_BOOTSTRAP_POOL_REQUESTS ? "request"
                                                                    : "grant",
            cv->owner, cv->owner_gen);
    }
}

/* Checks that call c, recorded by owner (pool, i, gen) as kind (SIM_NIL:
 * any request kind), is an outstanding call of exactly that owner. */
static void sim_call_mine(sim_world *w, uint32_t c, uint32_t pool, uint32_t i,
                          uint32_t gen, uint32_t kind)
{
    sim_call_view cv;
    if (c == SIM_NIL) {
        return;
    }
    bool ok = c < w->core->pools[PBX_BOOTSTRAP_POOL_CALLS].capacity;
    if (ok) {
        sim_core_call(w, c, &cv);
        ok = cv.live != 0U && cv.owner_pool == pool && cv.owner == i &&
             cv.owner_gen == gen && (kind == SIM_NIL || cv.kind == kind);
    }
    if (!ok) {
        sim_fail(w,
                 "invariant 10: %s %u/%u waits on call record %u, which is not "
                 "its own outstanding call",
                 pool == (uint32_t)PBX_BOOTSTRAP_POOL_REQUESTS ? "request"
                                                               : "grant",
                 i, gen, c);
    }
}

/* No live request or grant waits on a call that is not its own. */
static void sim_calls_owners(sim_world *w)
{
    uint32_t rcap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    uint32_t gcap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t i = 0; i < rcap; i++) {
        const pbx_core_request *r = sim_core_req(w, i);
        if (r->link.live != 0U) {
            sim_call_mine(w, sim_core_req_call(w, i),
                          PBX_BOOTSTRAP_POOL_REQUESTS, i, r->link.generation,
                          SIM_NIL);
        }
    }
    for (uint32_t g = 0; g < gcap; g++) {
        const pbx_core_grant *gr = sim_core_grant(w, g);
        uint32_t rm = SIM_NIL;
        uint32_t rt = SIM_NIL;
        if (gr->link.live == 0U) {
            continue;
        }
        sim_core_grant_calls(w, g, &rm, &rt);
        /* A LIVE grant's row to a returned ttyd waits where its REMOVE
         * will. */
        sim_call_mine(w, rm, PBX_BOOTSTRAP_POOL_GRANTS, g, gr->link.generation,
                      gr->link.state == (uint16_t)PBX_CORE_ST_LIVE
                          ? SIM_CALL_RESYNC
                          : SIM_CALL_REMOVE);
        sim_call_mine(w, rt, PBX_BOOTSTRAP_POOL_GRANTS, g, gr->link.generation,
                      SIM_CALL_RETIRE);
    }
}

/* Compares call record k with the simulator's account of it. */
static void sim_call_compare(sim_world *w, uint32_t k, const sim_call *sc,
                             const sim_call_view *cv)
{
    bool core_open = cv->live != 0U;
    if (sc->open != 0U && (!core_open || cv->seq != sc->v.seq)) {
        sim_fail(
            w,
            "invariant 10: %#x (op %#x, owner %u/%u) ended in the core without "
            "an accepted reply, its deadline, its route's loss or its "
            "owner's end",
            sc->v.seq, sc->v.op, sc->v.owner, sc->v.owner_gen);
    } else if (core_open && (sc->open == 0U || cv->seq != sc->v.seq)) {
        sim_fail(w,
                 "invariant 10: the core keeps call %#x (op %#x, owner %u/%u, "
                 "deadline %llu, now %llu) open after its reply, deadline, "
                 "route loss or owner's end",
                 cv->seq, cv->op, cv->owner, cv->owner_gen,
                 (unsigned long long)cv->deadline_ms,
                 (unsigned long long)w->now_ms);
    } else if (core_open) {
        sim_call_owner(w, k, cv);
    }
}

void sim_calls_check(sim_world *w)
{
    static sim_call_view views[SIM_CALL_MAX];
    const pbx_core_ctx *c = w->core;
    uint32_t used = c->pools[PBX_BOOTSTRAP_POOL_CALLS].capacity -
                    c->pools[PBX_BOOTSTRAP_POOL_CALLS].free_count;
    /* Nothing the calls depend on changed, and the core's counts agree:
     * the full comparison would find what it found last time. */
    if (w->calls_dirty == 0U && used == w->calls_open &&
        pbx_core_calls_outstanding(c) == w->calls_open) {
        return;
    }
    w->calls_dirty = 0U;
    uint32_t per[PBX_CORE_CALL_CLASSES] = {0};
    uint32_t cap = sim_core_calls_view(w, views);
    for (uint32_t k = 0; k < cap; k++) {
        sim_call *sc = &w->calls[k];
        if (sc->open != 0U && sc->known == 0U) {
            sim_call_fill(w, sc, &views[k]);
        }
        sim_call_follow(w, sc);
        sim_call_compare(w, k, sc, &views[k]);
        if (views[k].live != 0U && views[k].clazz < PBX_CORE_CALL_CLASSES) {
            per[views[k].clazz]++;
        }
        if (w->violation[0] != '\0') {
            return;
        }
    }
    for (uint32_t k = 0; k < PBX_CORE_CALL_CLASSES; k++) {
        if (per[k] != c->calls_out[k] || per[k] > c->call_window) {
            sim_fail(
                w,
                "invariant 10: class %u has %u outstanding records, the core "
                "counts %u (window %u)",
                k, per[k], c->calls_out[k], c->call_window);
            return;
        }
    }
    sim_calls_owners(w);
}
