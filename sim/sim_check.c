/*
 * sim_check.c: the checker. Per step: capability conservation between the
 * simulated CSpace and the core's transient-slot records, the capability
 * ledger (receipts in flight included), the startup inventory, pool
 * bounds, every outstanding call against its owner (sim_calls.c), and
 * that requests and grants retire only after their decision was delivered
 * once and woken once, or their retirement was acknowledged; a grant in
 * cleanup must retire within a bound once its routes answer. At decision
 * time: no request-owned capability remains, no prompt is left showing,
 * replies carry only what the outcome allows, and every outcome has its
 * evidence. At quiescence: everything is back to the startup baseline.
 * Per step, too: the correlation index chains exactly the live requests
 * and the LIVE grants, each in the bucket its job hashes to. The core's
 * private records are read through sim_inspect.c only.
 */
#include "sim/sim.h"

#include <string.h>

/* Every capability powerboxd holds is tracked by exactly one record. */
static void sim_check_conservation(sim_world *w)
{
    static uint8_t mark[SIM_SLOTS];
    memset(mark, 0, sizeof(mark));
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].capacity;
    uint32_t held = 0;
    for (uint32_t t = 0; t < cap; t++) {
        uint32_t slot = 0;
        if (!sim_core_tslot_held(w, t, &slot, NULL)) {
            continue;
        }
        held++;
        if (slot < SIM_TFIRST || slot >= SIM_SLOTS || mark[slot] != 0U) {
            sim_fail(w, "conservation: slot %u tracked twice or out of range",
                     slot);
            return;
        }
        mark[slot] = 1U;
        uint32_t kind = w->slots[slot].cap.kind;
        if (kind == (uint32_t)PBX_CAPABI_KIND_EMPTY ||
            kind == (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER) {
            sim_fail(w, "conservation: core tracks slot %u which is empty",
                     slot);
            return;
        }
    }
    for (uint32_t s = SIM_TFIRST; s < SIM_SLOTS; s++) {
        uint32_t kind = w->slots[s].cap.kind;
        if (kind != (uint32_t)PBX_CAPABI_KIND_EMPTY &&
            kind != (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER && mark[s] == 0U) {
            sim_fail(w,
                     "conservation: slot %u (role %u, owner %u) is held "
                     "but no core record tracks it",
                     s, w->slots[s].cap.role, w->slots[s].cap.owner);
            return;
        }
    }
    if (held != pbx_core_held_caps(w->core) || held != w->occupied) {
        sim_fail(w, "conservation: core counts %u held, records %u, kernel %u",
                 pbx_core_held_caps(w->core), held, w->occupied);
    }
}

/* The startup inventory is never touched. */
static void sim_check_startup(sim_world *w)
{
    for (uint32_t e = 0; e < (uint32_t)PBX_CAPABI_ENTRY_COUNT; e++) {
        if (w->slots[PBX_CAPABI_STARTUP_FIRST + e].cap.role !=
            SIM_ROLE_STARTUP) {
            sim_fail(w, "startup slot %u lost its capability",
                     PBX_CAPABI_STARTUP_FIRST + e);
        }
    }
}

/* Pools stay within their capacity. */
static void sim_check_pools(sim_world *w)
{
    for (size_t p = 0; p < (size_t)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        const pbx_core_pool_state *ps = &w->core->pools[p];
        if (p != (size_t)PBX_BOOTSTRAP_POOL_SELECTOR_BYTES &&
            ps->free_count > ps->capacity) {
            sim_fail(w, "pool %s: %u free of %u",
                     pbx_bootstrap_pool_name((pbx_bootstrap_pool)p),
                     ps->free_count, ps->capacity);
        }
    }
    if (w->core->chunk_free_count > w->core->chunk_count) {
        sim_fail(w, "selector chunks: %u free of %u", w->core->chunk_free_count,
                 w->core->chunk_count);
    }
}

/* Notices whether grant g's core record ended and checks it earned it:
 * both exact acknowledgements, or only RETIRE's when ttyd never received
 * the ACTIVE row (no REMOVE is owed then). An install the core never
 * accepted stays pending until its record goes with its request. */
static void sim_check_grant_gone(sim_world *w, uint32_t g)
{
    sim_grant *gr = &w->grants[g];
    const pbx_core_grant *cg = sim_core_grant(w, g);
    bool record_gone = cg->link.live == 0U || cg->link.generation != gr->gen;
    bool gone = record_gone || cg->link.state == (uint16_t)PBX_CORE_ST_FREE;
    if (gone && gr->core_seen != 0U && gr->state != (uint32_t)SIM_G_NONE &&
        gr->req < SIM_REQ_MAX && w->reqs[gr->req].live != 0U &&
        w->reqs[gr->req].gen == gr->req_gen) {
        /* Remembered past the record's reuse by another request. */
        w->reqs[gr->req].grant_gone = 1U;
    }
    if (gr->core_seen == 0U && gr->state == (uint32_t)SIM_G_INSTALLED) {
        if (record_gone) {
            /* The core refused or lost procd's answer; the object was
             * retired at vfsd (checked at decision time). */
            gr->state = SIM_G_NONE;
        }
    } else if (gone && gr->state == (uint32_t)SIM_G_UNVIEWED &&
               w->row_sent[g] != gr->gen) {
        gr->state = SIM_G_RETIRED;
    } else if (gone && gr->state != (uint32_t)SIM_G_NONE &&
               gr->state != (uint32_t)SIM_G_RETIRED) {
        sim_fail(w,
                 "invariant 8: grant %u/%u freed in shadow state %u "
                 "without exact REMOVE and RETIRE acknowledgements",
                 g, gr->gen, gr->state);
    }
}

/* Notices requests and grants the core retired and checks they earned
 * it. */
static void sim_check_retired(sim_world *w)
{
    uint32_t rcap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    for (uint32_t i = 0; i < rcap && i < SIM_REQ_MAX; i++) {
        sim_req *s = &w->reqs[i];
        const pbx_core_request *r = sim_core_req(w, i);
        if (s->live == 0U ||
            (r->link.live != 0U && r->link.generation == s->gen)) {
            continue;
        }
        /* An abandoned request's caller left with the broker: nobody
         * could read its decision (sim/sim_broker.c). */
        bool ok = s->abandoned != 0U ? s->delivered <= 1U && s->wakes <= 1U
                                     : s->delivered == 1U && s->wakes == 1U;
        if (!ok) {
            sim_fail(w,
                     "invariant 9: request %u/%u retired after %u "
                     "deliveries and %u wakes",
                     i, s->gen, s->delivered, s->wakes);
        }
        s->live = 0U;
    }
    uint32_t gcap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t g = 0; g < gcap && g < SIM_GRANT_MAX; g++) {
        sim_check_grant_gone(w, g);
    }
}

/* Whether record i of pool should be chained: every live request, and a
 * grant exactly while it is LIVE. */
static bool sim_index_member(const sim_world *w, pbx_bootstrap_pool pool,
                             uint32_t i)
{
    if (pool == PBX_BOOTSTRAP_POOL_REQUESTS) {
        return sim_core_req(w, i)->link.live != 0U;
    }
    const pbx_core_grant *g = sim_core_grant(w, i);
    return g->link.live != 0U && g->link.state == (uint16_t)PBX_CORE_ST_LIVE;
}

/* The chain of record i of pool (requests or grants). */
static const pbx_core_chain *
sim_index_chain(const sim_world *w, pbx_bootstrap_pool pool, uint32_t i)
{
    return pool == PBX_BOOTSTRAP_POOL_REQUESTS ? &sim_core_req(w, i)->chain
                                               : &sim_core_grant(w, i)->chain;
}

/* The bucket the job of record i of pool hashes to. */
static uint32_t sim_index_home(const sim_world *w, pbx_bootstrap_pool pool,
                               uint32_t i)
{
    const pbx_core_context *k = pool == PBX_BOOTSTRAP_POOL_REQUESTS
                                    ? &sim_core_req(w, i)->ctx
                                    : &sim_core_grant(w, i)->ctx;
    return sim_core_bucket(w, pool, k->ctx.job_id, k->ctx.job_gen);
}

/* Walks every bucket of pool's correlation index: each chained record is
 * a member, sits in the bucket its job hashes to, is linked both ways,
 * and every member is reached exactly once. */
static void sim_check_index(sim_world *w, pbx_bootstrap_pool pool)
{
    uint32_t cap = w->core->pools[pool].capacity;
    uint32_t members = 0;
    uint32_t reached = 0;
    for (uint32_t i = 0; i < cap; i++) {
        members += sim_index_member(w, pool, i) ? 1U : 0U;
    }
    for (uint32_t b = 0; b < cap && reached <= members; b++) {
        uint32_t prev = PBX_CORE_NIL;
        uint32_t i = sim_index_chain(w, pool, b)->bucket_head;
        for (uint32_t n = 0; n <= cap && i != PBX_CORE_NIL; n++) {
            if (i >= cap || !sim_index_member(w, pool, i) ||
                sim_index_chain(w, pool, i)->bucket != b ||
                sim_index_chain(w, pool, i)->prev != prev ||
                sim_index_home(w, pool, i) != b) {
                sim_fail(w, "index: %s record %u misplaced in bucket %u",
                         pbx_bootstrap_pool_name(pool), i, b);
                return;
            }
            reached++;
            prev = i;
            i = sim_index_chain(w, pool, i)->next;
        }
    }
    if (reached != members) {
        sim_fail(w, "index: %s chains reach %u records of %u members",
                 pbx_bootstrap_pool_name(pool), reached, members);
    }
}

/* Public-frame orphans stay under their cap, are exactly the records
 * counted, and never take the peer spare. Whatever the kernel did, a
 * fail-stop never follows from transient deletions alone (sim_public and
 * sim_core_step fail a run that stops without a permanent fault). */
static void sim_check_intake(sim_world *w)
{
    const pbx_core_ctx *c = w->core;
    uint32_t n = sim_core_public_orphans(w);
    if (n != c->public_orphans || n > PBX_CORE_PUBLIC_ORPHANS_MAX) {
        sim_fail(w, "intake: %u public orphans held, %u counted (cap %u)", n,
                 c->public_orphans, PBX_CORE_PUBLIC_ORPHANS_MAX);
    }
    if (pbx_core_public_ready(c) &&
        c->pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].free_count <
            2U * PBX_CORE_RECV_SLOTS_MAX) {
        sim_fail(w, "intake: ready with only %u transient-slot records free",
                 c->pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].free_count);
    }
}

void sim_check_ledger(sim_world *w)
{
    uint64_t out = w->occupied + w->led_flight + w->led_deleted + w->led_moved +
                   w->led_dropped;
    if (w->led_in != out) {
        sim_fail(w,
                 "conservation: %llu capabilities entered, %llu accounted "
                 "for (%u held, %llu in flight, %llu deleted, %llu moved "
                 "out, %llu lost with replies)",
                 (unsigned long long)w->led_in, (unsigned long long)out,
                 w->occupied, (unsigned long long)w->led_flight,
                 (unsigned long long)w->led_deleted,
                 (unsigned long long)w->led_moved,
                 (unsigned long long)w->led_dropped);
    }
}

/* Invariant 14: once the core has been told the time, no request is
 * still OPEN (begun, never committed) whose OPEN deadline has passed, and
 * none ended by that deadline before it passed (sim_check_outcome). */
static void sim_check_open(sim_world *w)
{
    uint64_t open_ms = w->time_ms[PBX_BOOTSTRAP_TIME_OPEN];
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        const sim_req *s = &w->reqs[i];
        if (s->live == 0U || s->committed != 0U ||
            w->core->now_ms < s->begun_ms + open_ms) {
            continue;
        }
        const pbx_core_request *r = sim_core_req(w, i);
        if (r->link.live != 0U && r->link.generation == s->gen &&
            r->link.state == (uint16_t)PBX_CORE_ST_OPEN) {
            sim_fail(w,
                     "invariant 14: request %u/%u still open %llu ms after "
                     "BEGIN (OPEN deadline %llu ms)",
                     i, s->gen,
                     (unsigned long long)(w->core->now_ms - s->begun_ms),
                     (unsigned long long)open_ms);
            return;
        }
    }
}

/* Invariant 19 (issue 20, item 4): a request holds a prompt record only
 * once its policy asked for a prompt (state PROMPT or later, never OPEN,
 * RESOLVE or POLICY: BEGIN takes none), a request waiting for one is in
 * PROMPT, and no job (id and generation) holds more than the core's
 * prompt share at once. */
static void sim_check_prompt_share(sim_world *w)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    const pbx_core_queue *wq = &w->core->queues[PBX_CORE_Q_WAIT_PROMPT];
    for (uint32_t i = 0; i < cap && i < SIM_REQ_MAX; i++) {
        const pbx_core_request *r = sim_core_req(w, i);
        pbx_core_state st = (pbx_core_state)r->link.state;
        if (r->link.live == 0U || r->prompt == PBX_CORE_NIL) {
            continue;
        }
        uint32_t held = 0U;
        for (uint32_t k = 0; k < cap && k < SIM_REQ_MAX; k++) {
            const pbx_core_request *q = sim_core_req(w, k);
            held += q->link.live != 0U && q->prompt != PBX_CORE_NIL &&
                            q->ctx.ctx.job_id == r->ctx.ctx.job_id &&
                            q->ctx.ctx.job_gen == r->ctx.ctx.job_gen
                        ? 1U
                        : 0U;
        }
        if (st == PBX_CORE_ST_OPEN || st == PBX_CORE_ST_RESOLVE ||
            st == PBX_CORE_ST_POLICY || held > w->core->prompt_share) {
            sim_fail(w,
                     "invariant 19: request %u in state %s holds a prompt "
                     "record; its job holds %u (share %u)",
                     i, pbx_core_state_name(st), held, w->core->prompt_share);
            return;
        }
    }
    for (uint32_t k = wq->head, n = 0; k != PBX_CORE_NIL && n < cap; n++) {
        const pbx_core_request *r = sim_core_req(w, k);
        if (r->link.state != (uint16_t)PBX_CORE_ST_PROMPT ||
            r->prompt != PBX_CORE_NIL) {
            sim_fail(w,
                     "invariant 19: request %u waits for a prompt record "
                     "in state %s holding one",
                     k, pbx_core_state_name((pbx_core_state)r->link.state));
            return;
        }
        k = r->link.next;
    }
}

void sim_check_step(sim_world *w)
{
    /* The index changes only when a request or grant record moves, and
     * orphan records only when a slot changes: walk them then. */
    if (w->rec_dirty != 0U) {
        w->rec_dirty = 0U;
        sim_check_index(w, PBX_BOOTSTRAP_POOL_REQUESTS);
        sim_check_index(w, PBX_BOOTSTRAP_POOL_GRANTS);
        sim_routes_reasons(w);
        sim_routes_view(w);
        sim_check_prompt_share(w);
    }
    if (w->dirty != 0U) {
        w->dirty = 0U;
        sim_check_intake(w);
        sim_check_conservation(w);
        sim_check_startup(w);
    }
    sim_check_ledger(w);
    sim_check_pools(w);
    sim_calls_check(w);
    sim_check_retired(w);
    sim_check_open(w);
}

bool sim_alias_owed(const sim_world *w, uint32_t i, uint32_t gen)
{
    if (i >= w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity) {
        return false;
    }
    const pbx_core_request *r = sim_core_req(w, i);
    return r->link.live != 0U && r->link.generation == gen &&
           r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
           r->ctx.ctx.mode == (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY &&
           (r->link.state == (uint16_t)PBX_CORE_ST_NOTIFY ||
            r->link.state == (uint16_t)PBX_CORE_ST_DECIDED);
}

void sim_check_cleanup(sim_world *w)
{
    uint32_t gcap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t g = 0; g < gcap && g < SIM_GRANT_MAX; g++) {
        const sim_cleanup *c = &w->cleanup[g];
        if (c->gen == 0U) {
            continue;
        }
        uint64_t start = c->from;
        start = w->routes[PBX_CORE_ROUTE_VFSD].disturbed_until > start
                    ? w->routes[PBX_CORE_ROUTE_VFSD].disturbed_until
                    : start;
        start = w->routes[PBX_CORE_ROUTE_TTYD].disturbed_until > start
                    ? w->routes[PBX_CORE_ROUTE_TTYD].disturbed_until
                    : start;
        start = w->del_disturbed > start ? w->del_disturbed : start;
        if (w->step <= start) {
            continue;
        }
        uint64_t age = w->step - start;
        w->stat_retire_max =
            age > w->stat_retire_max ? age : w->stat_retire_max;
        if (age > w->retire_bound) {
            sim_fail(w,
                     "invariant 13: grant %u/%u in state %s not retired %llu "
                     "steps after its revocation began (step %llu) and its "
                     "routes answered (bound %llu)",
                     g, c->gen,
                     pbx_core_state_name(
                         (pbx_core_state)sim_core_grant(w, g)->link.state),
                     (unsigned long long)age, (unsigned long long)c->from,
                     (unsigned long long)w->retire_bound);
            return;
        }
    }
}

/* Whether an unapproved decision of request i (generation gen) would
 * leave authority behind: an alias, or an install procd still holds whose
 * object vfsd never retired. */
static bool sim_authority_left(const sim_world *w, uint32_t i, uint32_t gen)
{
    const sim_req *s = &w->reqs[i];
    if (sim_count_owned(w, SIM_ROLE_ALIAS, i, gen) != 0U) {
        return true;
    }
    if (s->grant >= SIM_GRANT_MAX) {
        return false;
    }
    const sim_grant *gr = &w->grants[s->grant];
    return gr->req == i && gr->req_gen == gen && gr->procd_live != 0U &&
           s->obj_retired == 0U;
}

/* Invariant 17: an unapproved decision of a request whose INSTALL procd
 * received, and whose exact INSTALL reply the core never took, is visible
 * only after the core took vfsd's exact acknowledgement of the object's
 * full-identity RETIRE (procd may hold the object: only that retirement
 * cuts it). */
static void sim_check_refused_install(sim_world *w, uint32_t i,
                                      const char *where)
{
    const sim_req *s = &w->reqs[i];
    bool installed_at_procd =
        s->begin.ctx.mode == (uint8_t)PBX_IPC_MODE_INSTALL &&
        s->grant < SIM_GRANT_MAX && w->grants[s->grant].req == i &&
        w->grants[s->grant].req_gen == s->gen;
    if (installed_at_procd && (s->exact & (1U << SIM_CALL_INSTALL)) == 0U &&
        (s->exact & (1U << SIM_CALL_REQ_RETIRE)) == 0U) {
        sim_fail(w,
                 "invariant 17: decision of %u/%u visible (%s) before vfsd "
                 "exactly acknowledged the RETIRE of the object its refused "
                 "INSTALL may have placed",
                 i, s->gen, where);
    }
}

void sim_check_terminal(sim_world *w, uint32_t i, const char *where)
{
    const sim_req *s = &w->reqs[i];
    const pbx_core_request *r = sim_core_req(w, i);
    if (sim_count_owned(w, SIM_ROLE_SCOPE, i, s->gen) != 0U ||
        sim_count_owned(w, SIM_ROLE_OBJECT, i, s->gen) != 0U) {
        sim_fail(w,
                 "invariant 5: decision of %u/%u visible (%s) while its "
                 "scope or object is still held",
                 i, s->gen, where);
        return;
    }
    if (w->slots[s->dest].reserved != 0U && w->slots[s->dest].res_owner == i) {
        sim_fail(w,
                 "invariant 5: decision of %u/%u visible (%s) while its "
                 "destination %u is still reserved",
                 i, s->gen, where, s->dest);
        return;
    }
    if (s->prompt_showing != 0U) {
        sim_fail(w,
                 "invariant 5: decision of %u/%u visible (%s) while its "
                 "prompt may still be showing at ttyd (no WITHDRAW)",
                 i, s->gen, where);
        return;
    }
    if (r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED) {
        return;
    }
    sim_check_refused_install(w, i, where);
    if (sim_authority_left(w, i, s->gen)) {
        sim_fail(w,
                 "invariant 5: unapproved decision of %u/%u visible (%s) "
                 "while its grant authority remains (alias %u, procd "
                 "install %u, object retired %u)",
                 i, s->gen, where,
                 sim_count_owned(w, SIM_ROLE_ALIAS, i, s->gen),
                 s->grant < SIM_GRANT_MAX ? w->grants[s->grant].procd_live : 0U,
                 s->obj_retired);
    }
}
