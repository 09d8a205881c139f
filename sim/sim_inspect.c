/*
 * sim_inspect.c: the simulator's one window into the core's records,
 * through the core's read-only inspection API (pbx_core_inspect.h):
 * transient-slot states and owners, call records and the seq that names
 * them, the correlation bucket of a job, and a hash of the records a peer
 * reply could change. Only sim_client_effect.c includes the inspection
 * header besides this file (for the record flags invariant 15 compares);
 * record access by index uses the carved pools of pbx_core_ctx (public).
 */
#include "core/pbx_core_inspect.h"
#include "sim/sim.h"

#include <string.h>

/* Record i of pool (i below the pool's capacity). */
static inline const void *sim_rec(const sim_world *w, pbx_bootstrap_pool pool,
                                  uint32_t i)
{
    const pbx_core_pool_state *p = &w->core->pools[pool];
    return w->core->arena + p->offset_bytes + (size_t)i * p->record_size_bytes;
}

bool sim_core_tslot_held(const sim_world *w, uint32_t t, uint32_t *slot,
                         uint32_t *owner)
{
    const pbx_core_tslot *ts = (const pbx_core_tslot *)sim_rec(
        w, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS, t);
    if (ts->link.live == 0U || ts->link.state != PBX_CORE_TSLOT_HELD) {
        return false;
    }
    *slot = ts->slot;
    if (owner != NULL) {
        *owner = ts->owner;
    }
    return true;
}

uint32_t sim_core_public_orphans(const sim_world *w)
{
    const pbx_core_pool_state *p =
        &w->core->pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS];
    const uint8_t *base = w->core->arena + p->offset_bytes;
    uint32_t n = 0;
    for (uint32_t t = 0; t < p->capacity; t++) {
        const pbx_core_tslot *ts =
            (const pbx_core_tslot *)(const void *)(base +
                                                   (size_t)t *
                                                       p->record_size_bytes);
        /* An orphan record is on one of the two orphan queues. */
        uint32_t q = ts->link.queue;
        n += ts->link.live != 0U && ts->owner_kind == PBX_CORE_ORPHAN_PUBLIC &&
                     (q == (uint32_t)PBX_CORE_Q_ORPHAN + 1U ||
                      q == (uint32_t)PBX_CORE_Q_DEFER_ORPHAN + 1U)
                 ? 1U
                 : 0U;
    }
    return n;
}

uint32_t sim_core_bucket(const sim_world *w, pbx_bootstrap_pool pool,
                         uint64_t job_id, uint32_t job_gen)
{
    return pbx_core_inspect_bucket(w->core, pool, job_id, job_gen);
}

/* The simulator's name for a core call kind. */
static uint32_t sim_kind_of(uint32_t kind)
{
    switch ((pbx_core_call_kind)kind) {
    case PBX_CORE_CALL_RESOLVE:
        return SIM_CALL_RESOLVE;
    case PBX_CORE_CALL_POLICY:
        return SIM_CALL_POLICY;
    case PBX_CORE_CALL_PROMPT:
        return SIM_CALL_PROMPT;
    case PBX_CORE_CALL_INSTALL:
        return SIM_CALL_INSTALL;
    case PBX_CORE_CALL_DETACH:
        return SIM_CALL_DETACH;
    case PBX_CORE_CALL_ACTIVE:
        return SIM_CALL_ACTIVE;
    case PBX_CORE_CALL_RELEASE_DETACH:
        return SIM_CALL_REL_DETACH;
    case PBX_CORE_CALL_REQ_RETIRE:
        return SIM_CALL_REQ_RETIRE;
    case PBX_CORE_CALL_WITHDRAW:
        return SIM_CALL_WITHDRAW;
    case PBX_CORE_CALL_REMOVE:
        return SIM_CALL_REMOVE;
    case PBX_CORE_CALL_RETIRE:
        return SIM_CALL_RETIRE;
    case PBX_CORE_CALL_RESYNC:
        return SIM_CALL_RESYNC;
    default:
        return SIM_CALL_NONE;
    }
}

void sim_core_call(const sim_world *w, uint32_t o, sim_call_view *out)
{
    const pbx_core_outcall *oc = pbx_core_inspect_call(w->core, o);
    out->live = oc->link.live;
    out->seq = pbx_core_inspect_seq(w->core, o);
    out->route = oc->route;
    out->via_slot = oc->via_slot;
    out->op = oc->op;
    out->id = oc->id;
    out->owner_pool = oc->owner_pool;
    out->owner = oc->owner;
    out->owner_gen = oc->owner_generation;
    out->kind = sim_kind_of(oc->kind);
    out->clazz = oc->clazz;
    out->deadline_ms = oc->deadline_ms;
}

uint32_t sim_core_calls_view(const sim_world *w, sim_call_view *out)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_CALLS].capacity;
    for (uint32_t o = 0; o < cap && o < SIM_CALL_MAX; o++) {
        const pbx_core_outcall *oc =
            (const pbx_core_outcall *)sim_rec(w, PBX_BOOTSTRAP_POOL_CALLS, o);
        out[o].live = oc->link.live;
        if (oc->link.live != 0U) {
            sim_core_call(w, o, &out[o]);
        }
    }
    return cap < SIM_CALL_MAX ? cap : SIM_CALL_MAX;
}

uint32_t sim_core_call_index(const sim_world *w, uint32_t seq)
{
    /* A seq is its call record's whole generation (pbx_core_inspect_seq),
     * unique among live calls: the live record that carries it. */
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_CALLS].capacity;
    for (uint32_t o = 0; o < cap && seq != 0U; o++) {
        const pbx_core_outcall *oc =
            (const pbx_core_outcall *)sim_rec(w, PBX_BOOTSTRAP_POOL_CALLS, o);
        if (oc->link.live != 0U && pbx_core_inspect_seq(w->core, o) == seq) {
            return o;
        }
    }
    return SIM_NIL;
}

uint32_t sim_core_req_call(const sim_world *w, uint32_t i)
{
    uint32_t c = sim_core_req(w, i)->call;
    return c == PBX_CORE_NIL ? SIM_NIL : c;
}

void sim_core_grant_calls(const sim_world *w, uint32_t g, uint32_t *remove,
                          uint32_t *retire)
{
    const pbx_core_grant *gr = sim_core_grant(w, g);
    *remove = gr->call_remove == PBX_CORE_NIL ? SIM_NIL : gr->call_remove;
    *retire = gr->call_retire == PBX_CORE_NIL ? SIM_NIL : gr->call_retire;
}

/* Folds n bytes into an FNV-1a hash, a 64-bit word at a time. */
static uint64_t sim_fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    size_t i = 0;
    for (; i + 8U <= n; i += 8U) {
        uint64_t v = 0;
        memcpy(&v, b + i, 8U);
        h ^= v;
        h *= 0x100000001B3ULL;
    }
    for (; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001B3ULL;
    }
    return h;
}

uint64_t sim_core_records_hash(const sim_world *w)
{
    const pbx_core_ctx *c = w->core;
    uint64_t h = 0xCBF29CE484222325ULL;
    for (size_t p = 0; p < (size_t)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        const pbx_core_pool_state *ps = &c->pools[p];
        if (p == (size_t)PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS) {
            continue; /* a refused reply's receipts may wait there */
        }
        h = sim_fnv(h, c->arena + ps->offset_bytes,
                    (size_t)ps->capacity * ps->record_size_bytes);
        h = sim_fnv(h, &ps->free_count, sizeof(ps->free_count));
    }
    for (size_t q = 0; q < (size_t)PBX_CORE_Q_COUNT; q++) {
        if (c->queues[q].pool != (uint32_t)PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS) {
            h = sim_fnv(h, &c->queues[q], sizeof(c->queues[q]));
        }
    }
    h = sim_fnv(h, c->calls_out, sizeof(c->calls_out));
    h = sim_fnv(h, &c->chunk_free_count, sizeof(c->chunk_free_count));
    return sim_fnv(h, &c->lane, sizeof(c->lane));
}

uint32_t sim_core_prompt_retries(const sim_world *w, uint32_t i)
{
    const pbx_core_request *r = sim_core_req(w, i);
    if (r->link.live == 0U ||
        r->prompt >= w->core->pools[PBX_BOOTSTRAP_POOL_PROMPTS].capacity) {
        return 0U;
    }
    return ((const pbx_core_prompt *)sim_rec(w, PBX_BOOTSTRAP_POOL_PROMPTS,
                                             r->prompt))
        ->retries;
}
