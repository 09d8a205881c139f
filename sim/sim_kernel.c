/*
 * sim_kernel.c: powerboxd's simulated CSpace and the effect table the core
 * runs on. Every capability has a unique identity, a kind, rights,
 * provenance and an owner (the request or grant it belongs to), so the
 * checker can prove conservation. Reserved destinations keep a placeholder
 * until a receipt replaces it; deleting a receipt in a reserved slot gives
 * the placeholder back, as on the Linux port.
 */
#include "sim/sim.h"

#include <string.h>

/* Startup inventory: kind, rights and provenance of slots 3..9. */
static const uint32_t sim_startup[PBX_CAPABI_ENTRY_COUNT][3] = {
    {PBX_CAPABI_KIND_MEMORY, PBX_CAPABI_RIGHT_READ,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED},
    {PBX_CAPABI_KIND_NOTIFY, PBX_CAPABI_RIGHT_SEND,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED},
    {PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED},
    {PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED},
    {PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED},
    {PBX_CAPABI_KIND_NOTIFY, PBX_CAPABI_RIGHT_SEND,
     PBX_CAPABI_PROV_ROOT_TRANSFERRED},
    {PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_RECEIVE, PBX_CAPABI_PROV_LOCAL},
};

sim_cap sim_cap_mint(sim_world *w, uint32_t role, uint32_t owner,
                     uint32_t owner_gen, uint64_t object)
{
    sim_cap c;
    memset(&c, 0, sizeof(c));
    c.id = ++w->next_cap;
    c.kind = PBX_CAPABI_KIND_ENDPOINT;
    c.rights = PBX_CAPABI_RIGHT_SEND;
    c.prov = PBX_CAPABI_PROV_RECEIVED;
    c.role = role;
    c.owner = owner;
    c.owner_gen = owner_gen;
    c.object = object;
    if (role == SIM_ROLE_HANDLE) {
        c.rights = PBX_CAPABI_RIGHT_MANAGE;
    } else if (role == SIM_ROLE_ALIAS) {
        c.prov = PBX_CAPABI_PROV_LOCAL;
    }
    return c;
}

void sim_kernel_boot(sim_world *w)
{
    memset(w->slots, 0, sizeof(w->slots));
    for (uint32_t s = 0; s < SIM_SLOTS; s++) {
        w->slots[s].res_owner = SIM_NIL;
    }
    for (uint32_t e = 0; e < (uint32_t)PBX_CAPABI_ENTRY_COUNT; e++) {
        sim_cap *c = &w->slots[PBX_CAPABI_STARTUP_FIRST + e].cap;
        c->id = ++w->next_cap;
        c->kind = sim_startup[e][0];
        c->rights = sim_startup[e][1];
        c->prov = sim_startup[e][2];
        c->role = SIM_ROLE_STARTUP;
        c->owner = SIM_NIL;
    }
    w->occupied = 0U;
}

/* Whether a slot holds a real capability (not empty, not a placeholder). */
static bool sim_slot_full(const sim_slot *s)
{
    return s->cap.kind != (uint32_t)PBX_CAPABI_KIND_EMPTY &&
           s->cap.kind != (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER;
}

uint32_t sim_slot_put(sim_world *w, const sim_cap *cap, uint32_t want)
{
    uint32_t slot = SIM_NIL;
    if (want >= SIM_TFIRST && want < SIM_SLOTS &&
        w->slots[want].reserved != 0U && !sim_slot_full(&w->slots[want])) {
        slot = want;
    }
    uint32_t start = sim_below(w, SIM_TCOUNT);
    for (uint32_t n = 0; n < SIM_TCOUNT && slot == SIM_NIL; n++) {
        uint32_t s = SIM_TFIRST + (start + n) % SIM_TCOUNT;
        if (w->slots[s].reserved == 0U &&
            w->slots[s].cap.kind == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
            slot = s;
        }
    }
    if (slot == SIM_NIL) {
        sim_fail(w, "kernel: transient slot space exhausted (leak?)");
        return SIM_NIL;
    }
    w->slots[slot].cap = *cap;
    w->occupied++;
    w->dirty = 1U;
    return slot;
}

/* Empties slot after a deletion or a move; a reservation keeps its
 * placeholder. */
static void sim_slot_clear(sim_world *w, uint32_t slot)
{
    sim_slot *s = &w->slots[slot];
    memset(&s->cap, 0, sizeof(s->cap));
    s->cap.owner = SIM_NIL;
    if (s->reserved != 0U) {
        s->cap.kind = PBX_CAPABI_KIND_PLACEHOLDER;
        s->cap.prov = PBX_CAPABI_PROV_LOCAL;
    }
    w->occupied--;
    w->dirty = 1U;
}

void sim_slot_take(sim_world *w, uint32_t slot)
{
    if (slot < SIM_TFIRST || slot >= SIM_SLOTS ||
        !sim_slot_full(&w->slots[slot])) {
        sim_fail(w, "kernel: move out of slot %u that holds nothing", slot);
        return;
    }
    sim_slot_clear(w, slot);
    w->led_moved++;
}

uint32_t sim_count_held(const sim_world *w, uint32_t role, uint32_t owner,
                        uint32_t owner_gen)
{
    uint32_t n = 0;
    for (uint32_t s = SIM_TFIRST; s < SIM_SLOTS; s++) {
        const sim_cap *c = &w->slots[s].cap;
        if (sim_slot_full(&w->slots[s]) && c->role == role &&
            c->owner == owner && c->owner_gen == owner_gen) {
            n++;
        }
    }
    return n;
}

uint32_t sim_count_owned(const sim_world *w, uint32_t role, uint32_t owner,
                         uint32_t owner_gen)
{
    uint32_t n = 0;
    for (uint32_t s = SIM_TFIRST; s < SIM_SLOTS; s++) {
        const sim_cap *c = &w->slots[s].cap;
        if (sim_slot_full(&w->slots[s]) && c->role == role &&
            c->owner == owner && c->owner_gen == owner_gen && c->late == 0U) {
            n++;
        }
    }
    return n;
}

/* Counts one effect callback; true when it is the one that fails. */
static bool sim_effect_fails(sim_world *w)
{
    w->effects++;
    if (w->nth != 0U && w->effects == w->nth && w->healed == 0U) {
        sim_event_add(w, SIM_EV_FAULT, SIM_F_NTH, w->effects, 0, 0);
        return true;
    }
    return false;
}

static void sim_op_query(void *user, uint32_t slot, pbx_capabi_observed *out)
{
    sim_world *w = user;
    out->slot = slot;
    out->kind = PBX_CAPABI_KIND_EMPTY;
    out->rights = 0U;
    out->provenance = PBX_CAPABI_PROV_UNKNOWN;
    if (slot < SIM_SLOTS) {
        out->kind = w->slots[slot].cap.kind;
        out->rights = w->slots[slot].cap.rights;
        out->provenance = w->slots[slot].cap.prov;
    }
}

/* A deleted revocation handle revokes procd's install of its grant. */
static void sim_on_deleted(sim_world *w, const sim_cap *c)
{
    if (c->role != SIM_ROLE_HANDLE) {
        return;
    }
    if (w->procd_installs == 0U) {
        sim_fail(w, "kernel: a revocation handle outlived its install");
        return;
    }
    w->procd_installs--;
    if (c->owner < SIM_GRANT_MAX && w->grants[c->owner].gen == c->owner_gen) {
        w->grants[c->owner].procd_live = 0U;
    }
}

void sim_cap_destroy(sim_world *w, const sim_cap *c)
{
    sim_on_deleted(w, c);
}

static pbx_core_delete sim_op_delete(void *user, uint32_t slot)
{
    sim_world *w = user;
    bool nth = sim_effect_fails(w);
    if (slot < SIM_TFIRST || slot >= SIM_SLOTS) {
        sim_fail(w, "kernel: core deleted non-transient slot %u", slot);
        return PBX_CORE_DELETE_OK;
    }
    if (!sim_slot_full(&w->slots[slot])) {
        sim_fail(w, "kernel: core deleted slot %u which holds nothing", slot);
        return PBX_CORE_DELETE_OK;
    }
    if (sim_fault_fires(w, SIM_F_DEL_PERM)) {
        w->permanent = 1U;
        sim_event_add(w, SIM_EV_DELETE, slot, 2, 0, 0);
        return PBX_CORE_DELETE_REJECTED;
    }
    if (nth || sim_fault_fires(w, SIM_F_DEL_TRANS)) {
        w->public_transient++;
        w->del_disturbed = w->step;
        w->dirty = 1U; /* the core may take an orphan record now */
        sim_event_add(w, SIM_EV_DELETE, slot, 1, 0, 0);
        return PBX_CORE_DELETE_TRANSIENT;
    }
    sim_cap c = w->slots[slot].cap;
    sim_event_add(w, SIM_EV_DELETE, slot, 0, c.role, c.owner);
    sim_slot_clear(w, slot);
    w->led_deleted++;
    sim_on_deleted(w, &c);
    return PBX_CORE_DELETE_OK;
}

static bool sim_op_reserve(void *user, uint32_t *slot_out)
{
    sim_world *w = user;
    if (sim_effect_fails(w) || sim_fault_fires(w, SIM_F_RESERVE)) {
        return false;
    }
    uint32_t start = sim_below(w, SIM_TCOUNT);
    for (uint32_t n = 0; n < SIM_TCOUNT; n++) {
        uint32_t s = SIM_TFIRST + (start + n) % SIM_TCOUNT;
        sim_slot *sl = &w->slots[s];
        if (sl->reserved == 0U &&
            sl->cap.kind == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
            sl->reserved = 1U;
            sl->res_owner = SIM_NIL;
            sl->cap.kind = PBX_CAPABI_KIND_PLACEHOLDER;
            sl->cap.prov = PBX_CAPABI_PROV_LOCAL;
            *slot_out = s;
            w->dirty = 1U;
            sim_event_add(w, SIM_EV_RESERVE, s, 0, 0, 0);
            return true;
        }
    }
    return false;
}

static void sim_op_release(void *user, uint32_t slot)
{
    sim_world *w = user;
    sim_event_add(w, SIM_EV_RELEASE, slot, 0, 0, 0);
    if (slot < SIM_TFIRST || slot >= SIM_SLOTS ||
        w->slots[slot].reserved == 0U) {
        sim_fail(w, "kernel: release of slot %u that is not reserved", slot);
        return;
    }
    if (sim_slot_full(&w->slots[slot])) {
        sim_fail(w,
                 "invariant 1: destination %u released while it still "
                 "holds a receipt",
                 slot);
        return;
    }
    w->slots[slot].reserved = 0U;
    w->slots[slot].res_owner = SIM_NIL;
    memset(&w->slots[slot].cap, 0, sizeof(w->slots[slot].cap));
    w->dirty = 1U;
}

static pbx_core_io sim_op_alias(void *user, uint32_t object,
                                uint32_t *alias_out)
{
    sim_world *w = user;
    bool nth = sim_effect_fails(w);
    sim_route_state *rt = &w->routes[PBX_CORE_ROUTE_VFSD];
    rt->dirty = 1U;
    if (object >= SIM_SLOTS || w->slots[object].cap.role != SIM_ROLE_OBJECT) {
        sim_fail(w, "alias: derived from slot %u which holds no object",
                 object);
        return PBX_CORE_IO_FAILED;
    }
    /* Besides vfsd's busy windows, a seed with the busy fault meets BUSY
     * here at its own rate on the side stream (issue 22 item 8: without
     * it under 1% of seeds ever parked an alias derivation). */
    if (w->step < rt->busy_until ||
        (w->healed == 0U && w->rate[SIM_F_BUSY] != 0U &&
         sim_side_below(w, 1024U) < w->rate[SIM_F_BUSY])) {
        w->stat_alias_busy++;
        sim_event_add(w, SIM_EV_ALIAS, object, 0, 0, 1U);
        return PBX_CORE_IO_BUSY;
    }
    if (nth || sim_fault_fires(w, SIM_F_FAILED)) {
        return PBX_CORE_IO_FAILED;
    }
    const sim_cap *o = &w->slots[object].cap;
    sim_cap a =
        sim_cap_mint(w, SIM_ROLE_ALIAS, o->owner, o->owner_gen, o->object);
    if (sim_fault_fires(w, SIM_F_BADCAP)) {
        a.rights |= PBX_CAPABI_RIGHT_GRANT;
    }
    uint32_t s = sim_slot_put(w, &a, SIM_NIL);
    if (s == SIM_NIL) {
        return PBX_CORE_IO_FAILED;
    }
    w->led_in++;
    *alias_out = s;
    sim_event_add(w, SIM_EV_ALIAS, object, s, a.owner, a.rights);
    return PBX_CORE_IO_OK;
}

static pbx_core_io sim_op_send(void *user, const pbx_core_call *call)
{
    sim_world *w = user;
    bool nth = sim_effect_fails(w);
    if (nth) {
        for (uint32_t r = 0; r < SIM_PEERS; r++) {
            sim_disturb(w, r, w->step + 1U);
        }
    }
    return sim_peer_send(w, call, nth);
}

static pbx_core_io sim_op_wake(void *user, const uint8_t *frame, size_t len)
{
    sim_world *w = user;
    if (sim_effect_fails(w)) {
        return PBX_CORE_IO_BUSY;
    }
    return sim_launchd_wake(w, frame, len);
}

uint64_t sim_kernel_identity(void *user, uint32_t slot)
{
    const sim_world *w = user;
    if (slot >= SIM_SLOTS || w->slots[slot].cap.role != SIM_ROLE_SCOPE) {
        return 0U;
    }
    /* The kernel vouches for the endpoint's identity; vfsd derives the
     * scope identity it reports from the same endpoint (sim_vfsd.c). */
    return SIM_SCOPE_IDENT_BASE + w->slots[slot].cap.id;
}

static const pbx_core_ops sim_ops = {
    sim_op_send,    sim_op_query, sim_op_delete, sim_op_reserve,
    sim_op_release, sim_op_alias, sim_op_wake,
};

const pbx_core_ops *sim_kernel_ops(void)
{
    return &sim_ops;
}
