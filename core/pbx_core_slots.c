/*
 * pbx_core_slots.c: selector chunk chains, transient slot bookkeeping,
 * exact deletion, identities and the table-checked state moves.
 */
#include "core/pbx_core_internal.h"

uint32_t pbx_core_chunks_for(uint32_t len_bytes)
{
    return (len_bytes + PBX_CORE_SELECTOR_CHUNK_DATA_BYTES - 1U) /
           PBX_CORE_SELECTOR_CHUNK_DATA_BYTES;
}

/* The link word lives in the last four bytes of each chunk. */
static uint8_t *pbx_core_chunk_base(const pbx_core_ctx *ctx, uint32_t chunk)
{
    PBX_ASSERT(chunk < ctx->chunk_count);
    return (uint8_t *)pbx_core_rec(ctx, PBX_BOOTSTRAP_POOL_SELECTOR_BYTES,
                                   chunk * PBX_CORE_SELECTOR_CHUNK_BYTES);
}

uint8_t *pbx_core_chunk_data(const pbx_core_ctx *ctx, uint32_t chunk)
{
    return pbx_core_chunk_base(ctx, chunk);
}

uint32_t pbx_core_chunk_next(const pbx_core_ctx *ctx, uint32_t chunk)
{
    return pbx_le_get32(pbx_core_chunk_base(ctx, chunk) +
                        PBX_CORE_SELECTOR_CHUNK_DATA_BYTES);
}

static void pbx_core_chunk_link(pbx_core_ctx *ctx, uint32_t chunk,
                                uint32_t next)
{
    pbx_le_put32(pbx_core_chunk_base(ctx, chunk) +
                     PBX_CORE_SELECTOR_CHUNK_DATA_BYTES,
                 next);
}

uint32_t pbx_core_chunks_take(pbx_core_ctx *ctx, uint32_t n)
{
    PBX_ASSERT(n <= ctx->chunk_free_count);
    uint32_t head = n > 0U ? ctx->chunk_free_head : PBX_CORE_NIL;
    uint32_t last = head;
    for (uint32_t i = 1; i < n; i++) {
        last = pbx_core_chunk_next(ctx, last);
    }
    if (n > 0U) {
        ctx->chunk_free_head = pbx_core_chunk_next(ctx, last);
        pbx_core_chunk_link(ctx, last, PBX_CORE_NIL);
        ctx->chunk_free_count -= n;
    }
    return head;
}

void pbx_core_chunks_give(pbx_core_ctx *ctx, uint32_t head, uint32_t n)
{
    uint32_t last = head;
    if (n == 0U) {
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        last = pbx_core_chunk_next(ctx, last);
    }
    pbx_core_chunk_link(ctx, last, ctx->chunk_free_head);
    ctx->chunk_free_head = head;
    ctx->chunk_free_count += n;
}

void pbx_core_selector_copy(const pbx_core_ctx *ctx,
                            const pbx_core_request *req, uint8_t *out,
                            size_t cap)
{
    uint32_t left = req->ctx.selector_len;
    uint32_t chunk = req->selector_head;
    size_t at = 0;
    PBX_ASSERT(cap >= left);
    for (uint32_t i = 0; i < req->selector_chunks && left > 0U; i++) {
        uint32_t n = left < PBX_CORE_SELECTOR_CHUNK_DATA_BYTES
                         ? left
                         : PBX_CORE_SELECTOR_CHUNK_DATA_BYTES;
        pbx_mem_copy(out + at, pbx_core_chunk_data(ctx, chunk), n);
        at += n;
        left -= n;
        chunk = pbx_core_chunk_next(ctx, chunk);
    }
}

void pbx_core_tslot_hold(pbx_core_ctx *ctx, uint32_t tslot, uint32_t slot,
                         uint32_t kind)
{
    pbx_core_tslot *t = pbx_core_tslot_at(ctx, tslot);
    PBX_ASSERT(t->link.state != PBX_CORE_TSLOT_HELD);
    t->slot = slot;
    t->kind = kind;
    t->link.state = PBX_CORE_TSLOT_HELD;
    ctx->held_caps++;
}

void pbx_core_tslot_drop(pbx_core_ctx *ctx, uint32_t tslot)
{
    pbx_core_tslot *t = pbx_core_tslot_at(ctx, tslot);
    PBX_ASSERT(t->link.state == PBX_CORE_TSLOT_HELD && ctx->held_caps > 0U);
    t->link.state = PBX_CORE_TSLOT_IDLE;
    t->slot = PBX_CORE_SLOT_NONE;
    t->kind = 0U;
    ctx->held_caps--;
}

bool pbx_core_tslot_held(const pbx_core_ctx *ctx, uint32_t tslot)
{
    return tslot != PBX_CORE_NIL &&
           pbx_core_tslot_at(ctx, tslot)->link.state == PBX_CORE_TSLOT_HELD;
}

pbx_core_delete pbx_core_delete_slot(pbx_core_ctx *ctx, uint32_t slot)
{
    pbx_core_delete d = ctx->ops->slot_delete(ctx->ops_user, slot);
    if (d == PBX_CORE_DELETE_REJECTED) {
        (void)pbx_core_fail(ctx, PBX_CORE_EXIT_CLEANUP,
                            PBX_E_CORE_CLEANUP_REJECTED);
    }
    return d;
}

pbx_core_delete pbx_core_delete_tslot(pbx_core_ctx *ctx, uint32_t tslot)
{
    if (!pbx_core_tslot_held(ctx, tslot)) {
        return PBX_CORE_DELETE_OK;
    }
    pbx_core_delete d =
        pbx_core_delete_slot(ctx, pbx_core_tslot_at(ctx, tslot)->slot);
    if (d == PBX_CORE_DELETE_OK) {
        pbx_core_tslot_drop(ctx, tslot);
    }
    return d;
}

pbx_core_delete pbx_core_orphan(pbx_core_ctx *ctx, uint32_t slot,
                                uint32_t owner, bool from_public)
{
    if (pbx_core_free_count(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS) == 0U) {
        /* Public intake is checked against the room it may use and the
         * peer lanes run only with a reply's worth free, so this cannot
         * happen unless the records disagree. The capability is still
         * held and the kernel rejected nothing: not a cleanup fail-stop. */
        (void)pbx_core_fail(ctx, PBX_CORE_EXIT_PROGRESS,
                            PBX_E_CORE_INCONSISTENT);
        return PBX_CORE_DELETE_REJECTED;
    }
    uint32_t t = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS);
    pbx_core_tslot *ts = pbx_core_tslot_at(ctx, t);
    ts->owner = owner;
    ts->owner_kind = from_public ? PBX_CORE_ORPHAN_PUBLIC : 0U;
    ts->link.state = PBX_CORE_TSLOT_IDLE;
    pbx_core_tslot_hold(ctx, t, slot, 0U);
    if (owner != PBX_CORE_NIL) {
        pbx_core_req(ctx, owner)->orphans++;
    }
    if (from_public) {
        ctx->public_orphans++;
    }
    /* One prompt retry on the orphan lane; should that fail too, the
     * orphan lane defers it to the next tick (never a spin). */
    pbx_core_enqueue(ctx, PBX_CORE_Q_ORPHAN, t);
    return PBX_CORE_DELETE_TRANSIENT;
}

uint32_t pbx_core_public_room(const pbx_core_ctx *ctx)
{
    uint32_t free_n =
        pbx_core_free_count(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS);
    uint32_t cap = PBX_CORE_PUBLIC_ORPHANS_MAX - ctx->public_orphans;
    uint32_t spare =
        free_n > PBX_CORE_TSLOT_SPARE ? free_n - PBX_CORE_TSLOT_SPARE : 0U;
    PBX_ASSERT(ctx->public_orphans <= PBX_CORE_PUBLIC_ORPHANS_MAX);
    return spare < cap ? spare : cap;
}

bool pbx_core_public_ready(const pbx_core_ctx *ctx)
{
    return ctx->ready != 0U &&
           pbx_core_public_room(ctx) >= PBX_CORE_RECV_SLOTS_MAX;
}

void pbx_core_defer(pbx_core_ctx *ctx, pbx_bootstrap_pool pool, uint32_t index)
{
    pbx_core_queue_id q =
        pool == PBX_BOOTSTRAP_POOL_GRANTS     ? PBX_CORE_Q_DEFER_GRANT
        : pool == PBX_BOOTSTRAP_POOL_REQUESTS ? PBX_CORE_Q_DEFER_REQUEST
                                              : PBX_CORE_Q_DEFER_ORPHAN;
    pbx_core_dequeue(ctx, pool, index);
    pbx_core_enqueue(ctx, q, index);
}

void pbx_core_on_tick(pbx_core_ctx *ctx)
{
    pbx_core_splice(ctx, PBX_CORE_Q_INTAKE, PBX_CORE_Q_DEFER_REQUEST);
    pbx_core_splice(ctx, PBX_CORE_Q_GRANT, PBX_CORE_Q_DEFER_GRANT);
    pbx_core_splice(ctx, PBX_CORE_Q_ORPHAN, PBX_CORE_Q_DEFER_ORPHAN);
    pbx_core_splice(ctx, PBX_CORE_Q_NOTIFY, PBX_CORE_Q_DEFER_NOTIFY);
}

bool pbx_core_tick_wanted(const pbx_core_ctx *ctx)
{
    return ctx->queues[PBX_CORE_Q_DEFER_REQUEST].count +
               ctx->queues[PBX_CORE_Q_DEFER_GRANT].count +
               ctx->queues[PBX_CORE_Q_DEFER_ORPHAN].count +
               ctx->queues[PBX_CORE_Q_DEFER_NOTIFY].count !=
           0U;
}

pbx_core_exit pbx_core_exit_status(const pbx_core_ctx *ctx)
{
    return (pbx_core_exit)ctx->exit_status;
}

pbx_err pbx_core_fail(pbx_core_ctx *ctx, pbx_core_exit status, pbx_err err)
{
    if (ctx->exit_status == (uint32_t)PBX_CORE_EXIT_NONE) {
        ctx->exit_status = (uint32_t)status;
    }
    ctx->ready = 0U;
    return err;
}

/* Moves a record of machine m by event through the table, counting the
 * row taken; a missing row is a programmer error and traps. */
static void pbx_core_move(pbx_core_ctx *ctx, pbx_core_link *l,
                          pbx_core_machine m, pbx_core_event event)
{
    size_t row = pbx_core_fsm_find(m, (pbx_core_state)l->state, event);
    PBX_ASSERT(row < (size_t)PBX_CORE_FSM_ROWS);
    size_t n = 0;
    const pbx_core_transition *t = pbx_core_fsm_table(&n);
    if (ctx->fsm_hits[row] != UINT32_MAX) {
        ctx->fsm_hits[row]++;
    }
    l->state = t[row].to;
}

/* A request is chained by its job from BEGIN until it is freed, so the
 * chain always holds every live request a CANCEL or EXPIRE could name. */
void pbx_core_req_move(pbx_core_ctx *ctx, uint32_t index, pbx_core_event event)
{
    pbx_core_link *l =
        pbx_core_link_of(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, index);
    pbx_core_move(ctx, l, PBX_CORE_MACHINE_REQUEST, event);
    if (event == PBX_CORE_EV_BEGIN) {
        pbx_core_index_insert(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, index);
    } else if (l->state == (uint16_t)PBX_CORE_ST_FREE) {
        pbx_core_index_remove(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, index);
    }
}

/* A grant is chained by its job exactly while it is LIVE: only a live
 * grant can be expired, and every way out of LIVE passes through here. */
void pbx_core_grant_move(pbx_core_ctx *ctx, uint32_t index,
                         pbx_core_event event)
{
    pbx_core_link *l = pbx_core_link_of(ctx, PBX_BOOTSTRAP_POOL_GRANTS, index);
    if (l->state == (uint16_t)PBX_CORE_ST_LIVE) {
        pbx_core_index_remove(ctx, PBX_BOOTSTRAP_POOL_GRANTS, index);
    }
    pbx_core_move(ctx, l, PBX_CORE_MACHINE_GRANT, event);
    if (l->state == (uint16_t)PBX_CORE_ST_LIVE) {
        pbx_core_index_insert(ctx, PBX_BOOTSTRAP_POOL_GRANTS, index);
    }
}

void pbx_core_req_terminate(pbx_core_ctx *ctx, uint32_t index,
                            pbx_core_event event, uint16_t outcome)
{
    pbx_core_request *req = pbx_core_req(ctx, index);
    if (req->call != PBX_CORE_NIL) {
        /* The request no longer waits for its call: a reply that comes
         * later matches nothing and is refused. */
        pbx_core_call_cancel(ctx, req->call);
    }
    pbx_core_dequeue(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, index);
    pbx_core_req_move(ctx, index, event);
    req->outcome = outcome;
    req->parked_route = PBX_CORE_NIL;
    pbx_core_enqueue(ctx, PBX_CORE_Q_RELEASE, index);
}

void pbx_core_grant_end(pbx_core_ctx *ctx, uint32_t index, pbx_core_event event)
{
    pbx_core_grant *gr = pbx_core_grant_at(ctx, index);
    if ((gr->flags & PBX_CORE_GRANT_F_RESYNC) != 0U) {
        /* Its row owed to a returned ttyd is no longer owed; the REMOVE
         * that follows goes out after it on the same route. */
        if (gr->call_remove != PBX_CORE_NIL) {
            pbx_core_call_cancel(ctx, gr->call_remove);
        }
        gr->flags &= (uint16_t)~PBX_CORE_GRANT_F_RESYNC;
    }
    pbx_core_dequeue(ctx, PBX_BOOTSTRAP_POOL_GRANTS, index);
    pbx_core_grant_move(ctx, index, event);
    /* Kept only so that the log can say how the grant ended. */
    pbx_core_grant_at(ctx, index)->end_reason = (uint16_t)event;
    pbx_core_enqueue(ctx, PBX_CORE_Q_GRANT, index);
}

void pbx_core_grant_stop(pbx_core_ctx *ctx, uint32_t g, pbx_core_event event)
{
    pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    if ((gr->flags & PBX_CORE_GRANT_F_APPROVED) != 0U) {
        /* A published decision is final until delivered: what arrives
         * later ends the grant it describes, never the decision. */
        pbx_core_grant_end(ctx, g, event);
        return;
    }
    /* Not yet published: the grant's request is live and owns it. */
    uint32_t i = gr->request;
    PBX_ASSERT(i != PBX_CORE_NIL);
    pbx_core_request *r = pbx_core_req(ctx, i);
    PBX_ASSERT(r->link.live != 0U &&
               r->link.generation == gr->request_generation);
    if (pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST,
                          (pbx_core_state)r->link.state,
                          PBX_CORE_EV_CANCEL) != SIZE_MAX) {
        r->flags |= PBX_CORE_REQ_F_CANCELLED;
        pbx_core_req_terminate(ctx, i, PBX_CORE_EV_CANCEL,
                               PBX_IPC_OUTCOME_CANCELLED);
    } else if (r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED) {
        /* Decided but unpublished: release ends the grant first and
         * publishes CANCELLED instead. */
        r->flags |= PBX_CORE_REQ_F_CANCELLED;
        r->outcome = PBX_IPC_OUTCOME_CANCELLED;
    }
}

pbx_ipc_id pbx_core_id(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                       uint32_t index)
{
    pbx_ipc_id id = {index, pbx_core_link_of(ctx, pool, index)->generation};
    return id;
}

pbx_err pbx_core_lookup(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                        pbx_ipc_id id, uint32_t *index)
{
    if (id.index >= ctx->pools[pool].capacity) {
        return PBX_E_CORE_UNKNOWN;
    }
    const pbx_core_link *l = pbx_core_link_of(ctx, pool, id.index);
    if (l->live == 0U) {
        return PBX_E_CORE_UNKNOWN;
    }
    if (id.gen == 0U || l->generation != id.gen) {
        return PBX_E_CORE_STALE;
    }
    *index = id.index;
    return PBX_OK;
}
