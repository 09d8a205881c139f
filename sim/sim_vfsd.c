/*
 * sim_vfsd.c: the simulated vfsd. RESOLVE must arrive through the exact
 * scope the request committed and bind its operation, class and selector;
 * the answer is FOUND (with a SEND-only object receipt), an exact or
 * inexact NOT_FOUND, or DENIED. DETACH must give back exactly the request's
 * object copy; RETIRE must come after the revocation authority and
 * powerboxd's own object copy are gone (never waiting for ttyd's REMOVE)
 * and name the full identity.
 */
#include "sim/sim_peers.h"

#include <string.h>

/* Checks RESOLVE q against request s and the scope it went through. */
static bool sim_resolve_bind(sim_world *w, const sim_req *s,
                             const pbx_ipc_resolve *q, const pbx_core_call *c)
{
    const sim_cap *scope = &w->slots[c->via_slot].cap;
    if (scope->id != s->scope_cap) {
        sim_fail(w,
                 "invariant 2: RESOLVE went through scope cap %llu, the "
                 "request committed %llu",
                 (unsigned long long)scope->id,
                 (unsigned long long)s->scope_cap);
        return false;
    }
    if (q->operation != s->begin.ctx.operation ||
        q->object_class != s->begin.ctx.object_class ||
        q->selector_len != s->begin.selector_len ||
        memcmp(q->selector, s->selector, q->selector_len) != 0 ||
        memcmp(q->selector_digest, s->begin.selector_digest, 32U) != 0) {
        sim_fail(w, "invariant 2: RESOLVE does not bind the request's "
                    "operation, class and selector");
        return false;
    }
    return true;
}

/* An echo fault: one field of the binding is wrong. */
static void sim_resolve_echo_fault(sim_world *w, pbx_ipc_resolve_reply *rr,
                                   pbx_ipc_id *id)
{
    switch (sim_below(w, 5U)) {
    case 0:
        rr->object_class = (uint16_t)(rr->object_class % 5U + 1U);
        break;
    case 4:
        /* Another scope's identity: only a FOUND carries one. */
        rr->scope_id ^= rr->scope_id != 0U ? 0x100U : 0U;
        break;
    case 1:
        rr->operation = (uint16_t)(rr->operation % 4U + 1U);
        break;
    case 2:
        rr->selector_digest[sim_below(w, 32U)] ^= 0x40U;
        break;
    default:
        id->gen++;
        break;
    }
}

bool sim_vfsd_resolve(sim_world *w, const pbx_ipc_frame *f,
                      const pbx_core_call *c, sim_reply *r)
{
    pbx_ipc_resolve q;
    if (pbx_ipc_resolve_decode(f, &q) != PBX_OK) {
        sim_fail(w, "vfsd: undecodable RESOLVE");
        return false;
    }
    sim_req *s = sim_live_req(w, f->request, "vfsd");
    if (s == NULL || !sim_resolve_bind(w, s, &q, c)) {
        return false;
    }
    pbx_ipc_resolve_reply rr;
    memset(&rr, 0, sizeof(rr));
    rr.operation = q.operation;
    memcpy(rr.selector_digest, q.selector_digest, 32U);
    uint32_t roll = sim_below(w, 100U);
    if (roll < 70U) {
        rr.result = PBX_IPC_RESOLVE_FOUND;
        rr.object_class = q.object_class;
        rr.object.id = ++w->next_object;
        rr.object.gen = 1U + sim_below(w, 7U);
        rr.scope_id = SIM_SCOPE_IDENT_BASE + s->scope_cap;
        s->object = rr.object;
        s->scope_ident = rr.scope_id;
        r->caps[0] = sim_cap_mint(w, SIM_ROLE_OBJECT, f->request.index,
                                  f->request.gen, rr.object.id);
        if (sim_fault_fires(w, SIM_F_BADCAP)) {
            r->caps[0].rights |= PBX_CAPABI_RIGHT_GRANT;
        }
        r->ncaps = 1U;
    } else if (roll < 88U) {
        rr.result = PBX_IPC_RESOLVE_NOT_FOUND;
        rr.object_class =
            roll < 82U ? q.object_class : (uint16_t)(q.object_class % 5U + 1U);
    } else {
        rr.result = PBX_IPC_RESOLVE_DENIED;
    }
    pbx_ipc_id id = f->request;
    if (sim_fault_fires(w, SIM_F_ECHO)) {
        sim_resolve_echo_fault(w, &rr, &id);
    }
    return pbx_ipc_resolve_reply_encode(id, &rr, r->bytes, sizeof(r->bytes),
                                        &r->len) == PBX_OK;
}

void sim_vfsd_resolve_evidence(sim_world *w, const sim_flight *fl)
{
    sim_req *s = &w->reqs[fl->ask_id.index];
    pbx_ipc_frame d;
    pbx_ipc_resolve_reply rr;
    s->nf_evidence = 0U;
    if (sim_final(fl, &d) && pbx_ipc_resolve_reply_decode(&d, &rr) == PBX_OK &&
        rr.result == (uint8_t)PBX_IPC_RESOLVE_NOT_FOUND &&
        rr.object_class == s->begin.ctx.object_class &&
        rr.operation == s->begin.ctx.operation &&
        memcmp(rr.selector_digest, s->begin.selector_digest, 32U) == 0) {
        s->nf_evidence = 1U;
    }
}

bool sim_vfsd_detach(sim_world *w, const pbx_ipc_frame *f,
                     const pbx_core_call *c, sim_reply *r)
{
    pbx_ipc_detach q;
    if (pbx_ipc_detach_decode(f, &q) != PBX_OK) {
        sim_fail(w, "vfsd: undecodable DETACH");
        return false;
    }
    sim_req *s = sim_live_req(w, f->request, "vfsd detach");
    if (s == NULL) {
        return false;
    }
    const sim_cap *o = &w->slots[c->send_slot].cap;
    if (c->send_copy || o->role != SIM_ROLE_OBJECT ||
        o->owner != f->request.index || o->owner_gen != f->request.gen ||
        q.object.id != s->object.id || q.object.gen != s->object.gen ||
        o->object != s->object.id) {
        sim_fail(w, "vfsd: DETACH does not give back exactly the request's "
                    "object copy");
        return false;
    }
    pbx_ipc_id id = f->request;
    if (sim_fault_fires(w, SIM_F_ECHO)) {
        q.object.gen++;
    }
    return pbx_ipc_detach_reply_encode(id, &q, r->bytes, sizeof(r->bytes),
                                       &r->len) == PBX_OK;
}

/* Checks that powerboxd gave its own copy of request i's object back (or
 * deleted it) before the object's RETIRE: vfsd sees DETACH first. */
static bool sim_retire_detached(sim_world *w, uint32_t i, uint32_t gen,
                                const pbx_ipc_frame *f)
{
    if (sim_count_held(w, SIM_ROLE_OBJECT, i, gen) != 0U) {
        sim_fail(w,
                 "invariant 8: RETIRE under grant %u/%u while powerboxd "
                 "still holds the object copy of request %u/%u",
                 f->request.index, f->request.gen, i, gen);
        return false;
    }
    return true;
}

/* Checks the RETIRE of an object whose INSTALL the core refused or lost
 * (procd may hold it): a live request resolved exactly this full identity,
 * and when procd did install it, the refused handle was deleted first. */
static bool sim_retire_refused_check(sim_world *w, const pbx_ipc_frame *f,
                                     const pbx_ipc_retire *q)
{
    uint32_t g = f->request.index;
    /* A handle that reached the core with its INSTALL reply must be gone
     * first; one still in flight, or refused as late (owned by nobody),
     * is cut by this very retirement. */
    if (g < SIM_GRANT_MAX &&
        sim_count_owned(w, SIM_ROLE_HANDLE, g, f->request.gen) != 0U) {
        sim_fail(w,
                 "invariant 8: RETIRE of refused install %u/%u before its "
                 "handle was deleted",
                 g, f->request.gen);
        return false;
    }
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        const sim_req *s = &w->reqs[i];
        if (s->live != 0U && s->object.id == q->object.id &&
            s->object.gen == q->object.gen && s->scope_ident == q->scope_id &&
            s->begin.ctx.object_class == q->object_class) {
            return sim_retire_detached(w, i, s->gen, f);
        }
    }
    sim_fail(w,
             "invariant 7: RETIRE names grant %u/%u that no peer installed "
             "and no live request resolved",
             g, f->request.gen);
    return false;
}

/* Checks a RETIRE against grant g's shadow: order and full identity. It
 * needs the revocation authority gone (procd's install revoked, no alias
 * left in powerboxd), never ttyd's REMOVE acknowledgement: the two are
 * reconciled independently. */
static bool sim_retire_check(sim_world *w, const pbx_ipc_frame *f,
                             const pbx_ipc_retire *q)
{
    uint32_t g = f->request.index;
    if (g < SIM_GRANT_MAX && (w->grants[g].gen != f->request.gen ||
                              w->grants[g].state == (uint32_t)SIM_G_NONE)) {
        /* A runtime-reply grant cancelled before its ACTIVE row may reach
         * vfsd before ttyd has seen it at all. */
        (void)sim_runtime_grant(w, f->request, q->object.id);
        if (w->violation[0] != '\0') {
            return false;
        }
    }
    if (g >= SIM_GRANT_MAX || w->grants[g].gen != f->request.gen ||
        w->grants[g].state == (uint32_t)SIM_G_NONE ||
        (w->grants[g].state == (uint32_t)SIM_G_INSTALLED &&
         w->grants[g].core_seen == 0U)) {
        return sim_retire_refused_check(w, f, q);
    }
    const sim_grant *gr = &w->grants[g];
    if (gr->procd_live != 0U ||
        (sim_count_held(w, SIM_ROLE_ALIAS, gr->req, gr->req_gen) != 0U &&
         !sim_alias_owed(w, gr->req, gr->req_gen))) {
        sim_fail(w,
                 "invariant 8: RETIRE of grant %u/%u before its "
                 "revocation authority was deleted",
                 g, f->request.gen);
        return false;
    }
    if (!sim_retire_detached(w, gr->req, gr->req_gen, f)) {
        return false;
    }
    if (q->object.id != gr->object.id || q->object.gen != gr->object.gen ||
        q->scope_id != gr->scope_ident ||
        q->object_class != gr->ctx.object_class) {
        sim_fail(w, "invariant 8: RETIRE does not name the grant's full "
                    "identity");
        return false;
    }
    return true;
}

/* vfsd retires the object: every copy of it, procd's included, is cut
 * from now on. */
static void sim_retire_apply(sim_world *w, const pbx_ipc_retire *q)
{
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        sim_req *s = &w->reqs[i];
        if (s->live != 0U && s->object.id == q->object.id &&
            s->object.gen == q->object.gen && s->scope_ident == q->scope_id &&
            s->begin.ctx.object_class == q->object_class) {
            s->obj_retired = 1U;
        }
    }
}

bool sim_vfsd_retire(sim_world *w, const pbx_ipc_frame *f, sim_reply *r)
{
    pbx_ipc_retire q;
    if (pbx_ipc_retire_decode(f, &q) != PBX_OK) {
        sim_fail(w, "vfsd: undecodable RETIRE");
        return false;
    }
    if (!sim_retire_check(w, f, &q)) {
        return false;
    }
    sim_retire_apply(w, &q);
    pbx_ipc_id id = f->request;
    if (sim_fault_fires(w, SIM_F_ECHO)) {
        if (sim_chance(w, 512U)) {
            q.scope_id++;
        } else {
            id.gen++;
        }
    }
    return pbx_ipc_retire_reply_encode(id, &q, r->bytes, sizeof(r->bytes),
                                       &r->len) == PBX_OK;
}

void sim_vfsd_retire_evidence(sim_world *w, const sim_flight *fl)
{
    pbx_ipc_frame d;
    pbx_ipc_retire ack;
    if (fl->ask_id.index >= SIM_GRANT_MAX) {
        return;
    }
    sim_grant *gr = &w->grants[fl->ask_id.index];
    if (gr->gen != fl->ask_id.gen || gr->state == (uint32_t)SIM_G_NONE ||
        (gr->state == (uint32_t)SIM_G_INSTALLED && gr->core_seen == 0U)) {
        /* A refused install's retirement: the core frees that grant
         * without RETIRED, and the checker treats it as refused. */
        return;
    }
    if (sim_final(fl, &d) && pbx_ipc_retire_reply_decode(&d, &ack) == PBX_OK &&
        ack.object.id == gr->object.id && ack.object.gen == gr->object.gen &&
        ack.scope_id == gr->scope_ident &&
        ack.object_class == gr->ctx.object_class) {
        /* The generation may retire once ttyd's REMOVE is acked too. */
        gr->state = gr->state == (uint32_t)SIM_G_REMOVED ||
                            gr->state == (uint32_t)SIM_G_RETIRED
                        ? SIM_G_RETIRED
                        : SIM_G_UNVIEWED;
    }
}
