/*
 * sim_procd.c: the simulated procd. INSTALL must carry a copy of exactly
 * the request's resolved object, only after a routine ALLOW or the exact
 * user approval was delivered, into a grant record whose previous use was
 * retired. procd keeps the install until its manage-only handle is deleted
 * from powerboxd's CSpace (sim_kernel.c revokes it then).
 */
#include "sim/sim_peers.h"

#include <string.h>

/* Checks the INSTALL q of request s before procd acts. */
static bool sim_install_check(sim_world *w, const sim_req *s,
                              const pbx_ipc_install *q, const pbx_core_call *c,
                              pbx_ipc_id rid)
{
    const sim_cap *o = &w->slots[c->send_slot].cap;
    if (!c->send_copy || o->role != SIM_ROLE_OBJECT || o->owner != rid.index ||
        o->owner_gen != rid.gen || o->object != s->object.id) {
        sim_fail(w, "procd: INSTALL does not copy the request's own object");
        return false;
    }
    const pbx_ipc_begin *b = &s->begin;
    if (q->target.process_id != b->target.process_id ||
        q->target.process_gen != b->target.process_gen ||
        q->target.slot != b->target.slot || q->operation != b->ctx.operation ||
        q->object_class != b->ctx.object_class ||
        q->lifetime != b->ctx.lifetime) {
        sim_fail(w, "procd: INSTALL target or grant shape differs from BEGIN");
        return false;
    }
    bool routine = b->ctx.urgency == (uint8_t)PBX_IPC_URGENCY_ROUTINE;
    if (!(routine && s->policy_allow != 0U) && s->user_approved == 0U) {
        sim_fail(w,
                 "invariant 3: grant installed for request %u/%u without "
                 "a routine ALLOW or the exact user approval",
                 rid.index, rid.gen);
        return false;
    }
    uint32_t g = q->grant.index;
    const sim_grant *gr = g < SIM_GRANT_MAX ? &w->grants[g] : NULL;
    if (gr == NULL || (gr->state != (uint32_t)SIM_G_NONE &&
                       gr->state != (uint32_t)SIM_G_RETIRED)) {
        sim_fail(w,
                 "invariant 7: INSTALL reuses grant %u (gen %u -> %u) "
                 "before it retired",
                 g, gr != NULL ? gr->gen : 0U, q->grant.gen);
        return false;
    }
    if (gr->gen != 0U && gr->gen == q->grant.gen) {
        sim_fail(w,
                 "invariant 7: grant %u reused without a generation bump "
                 "(gen %u)",
                 g, q->grant.gen);
        return false;
    }
    return true;
}

/* Creates grant g's shadow for request s. */
static void sim_install_apply(sim_world *w, sim_req *s, uint32_t ri,
                              const pbx_ipc_install *q)
{
    sim_grant *gr = &w->grants[q->grant.index];
    memset(gr, 0, sizeof(*gr));
    gr->state = SIM_G_INSTALLED;
    gr->gen = q->grant.gen;
    gr->req = ri;
    gr->req_gen = s->gen;
    gr->procd_live = 1U;
    gr->installed_slot = q->target.slot;
    gr->object = s->object;
    gr->scope_ident = s->scope_ident;
    gr->ctx = s->begin.ctx;
    gr->invocation_id = s->begin.invocation_id;
    gr->badge = s->badge;
    memcpy(gr->digest, s->begin.selector_digest, 32U);
    s->grant = q->grant.index;
    s->installed_slot = q->target.slot;
    w->procd_installs++;
}

bool sim_procd_install(sim_world *w, const pbx_ipc_frame *f,
                       const pbx_core_call *c, sim_reply *r)
{
    pbx_ipc_install q;
    if (pbx_ipc_install_decode(f, &q) != PBX_OK) {
        sim_fail(w, "procd: undecodable INSTALL");
        return false;
    }
    sim_req *s = sim_live_req(w, f->request, "procd");
    if (s == NULL || !sim_install_check(w, s, &q, c, f->request)) {
        return false;
    }
    sim_install_apply(w, s, f->request.index, &q);
    pbx_ipc_install_reply ir = {PBX_IPC_HANDLE_MANAGE_ONLY, q.target.slot,
                                q.grant, q.target.process_id,
                                q.target.process_gen};
    r->caps[0] = sim_cap_mint(w, SIM_ROLE_HANDLE, q.grant.index, q.grant.gen,
                              s->object.id);
    r->ncaps = 1U;
    if (sim_fault_fires(w, SIM_F_BADCAP)) {
        if (sim_chance(w, 512U)) {
            ir.handle_kind = PBX_IPC_HANDLE_STAGING;
        } else {
            r->caps[0].rights = PBX_CAPABI_RIGHT_SEND;
        }
    }
    if (sim_fault_fires(w, SIM_F_ECHO)) {
        if (sim_chance(w, 512U)) {
            ir.grant.gen++;
        } else {
            ir.target_process_gen++;
        }
    }
    return pbx_ipc_install_reply_encode(f->request, &ir, r->bytes,
                                        sizeof(r->bytes), &r->len) == PBX_OK;
}
