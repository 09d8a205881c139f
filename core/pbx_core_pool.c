/*
 * pbx_core_pool.c: record access, free lists, intrusive queues, selector
 * chunks and transient slot bookkeeping. Every operation here is O(1)
 * except the chunk chain walks, which are bounded by the chain length.
 */
#include "core/pbx_core_internal.h"

void *pbx_core_rec(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                   uint32_t index)
{
    const pbx_core_pool_state *p = &ctx->pools[pool];
    PBX_ASSERT(index < p->capacity);
    return ctx->arena + p->offset_bytes +
           (size_t)index * (size_t)p->record_size_bytes;
}

pbx_core_link *pbx_core_link_of(const pbx_core_ctx *ctx,
                                pbx_bootstrap_pool pool, uint32_t index)
{
    PBX_ASSERT(pool != PBX_BOOTSTRAP_POOL_SELECTOR_BYTES);
    return (pbx_core_link *)pbx_core_rec(ctx, pool, index);
}

pbx_core_request *pbx_core_req(const pbx_core_ctx *ctx, uint32_t index)
{
    return (pbx_core_request *)pbx_core_rec(ctx, PBX_BOOTSTRAP_POOL_REQUESTS,
                                            index);
}

pbx_core_grant *pbx_core_grant_at(const pbx_core_ctx *ctx, uint32_t index)
{
    return (pbx_core_grant *)pbx_core_rec(ctx, PBX_BOOTSTRAP_POOL_GRANTS,
                                          index);
}

pbx_core_tslot *pbx_core_tslot_at(const pbx_core_ctx *ctx, uint32_t index)
{
    return (pbx_core_tslot *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS, index);
}

uint32_t pbx_core_alloc(pbx_core_ctx *ctx, pbx_bootstrap_pool pool)
{
    pbx_core_pool_state *p = &ctx->pools[pool];
    uint32_t index = p->free_head;
    PBX_ASSERT(index != PBX_CORE_NIL && p->free_count > 0U);
    pbx_core_link *l = pbx_core_link_of(ctx, pool, index);
    PBX_ASSERT(l->live == 0U);
    p->free_head = l->next;
    p->free_count--;
    l->next = PBX_CORE_NIL;
    l->prev = PBX_CORE_NIL;
    /* Generations stay nonzero: zero never names a live record. */
    l->generation = l->generation == UINT32_MAX ? 1U : l->generation + 1U;
    l->live = 1U;
    l->queue = 0U;
    l->state = (uint16_t)PBX_CORE_ST_FREE;
    return index;
}

void pbx_core_free(pbx_core_ctx *ctx, pbx_bootstrap_pool pool, uint32_t index)
{
    pbx_core_pool_state *p = &ctx->pools[pool];
    pbx_core_link *l = pbx_core_link_of(ctx, pool, index);
    PBX_ASSERT(l->live == 1U && l->queue == 0U);
    /* A freed record must have left the correlation index first, or a
     * later walk would reach a record reused under another key. The
     * chain is read here, not through pbx_core_index_chained, so that
     * the pool stays below the index that uses it. */
    PBX_ASSERT(pool != PBX_BOOTSTRAP_POOL_REQUESTS ||
               pbx_core_req(ctx, index)->chain.bucket == PBX_CORE_NIL);
    PBX_ASSERT(pool != PBX_BOOTSTRAP_POOL_GRANTS ||
               pbx_core_grant_at(ctx, index)->chain.bucket == PBX_CORE_NIL);
    l->live = 0U;
    l->state = (uint16_t)PBX_CORE_ST_FREE;
    l->prev = PBX_CORE_NIL;
    l->next = p->free_head;
    p->free_head = index;
    p->free_count++;
}

uint32_t pbx_core_free_count(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool)
{
    return ctx->pools[pool].free_count;
}

void pbx_core_enqueue(pbx_core_ctx *ctx, pbx_core_queue_id q, uint32_t index)
{
    pbx_core_queue *qu = &ctx->queues[q];
    pbx_bootstrap_pool pool = (pbx_bootstrap_pool)qu->pool;
    pbx_core_link *l = pbx_core_link_of(ctx, pool, index);
    PBX_ASSERT(l->live == 1U && l->queue == 0U);
    l->queue = (uint8_t)(q + 1);
    l->next = PBX_CORE_NIL;
    l->prev = qu->tail;
    if (qu->tail != PBX_CORE_NIL) {
        pbx_core_link_of(ctx, pool, qu->tail)->next = index;
    } else {
        qu->head = index;
    }
    qu->tail = index;
    qu->count++;
}

void pbx_core_dequeue(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                      uint32_t index)
{
    pbx_core_link *l = pbx_core_link_of(ctx, pool, index);
    if (l->queue == 0U) {
        return;
    }
    pbx_core_queue *qu = &ctx->queues[l->queue - 1U];
    PBX_ASSERT(qu->pool == (uint32_t)pool && qu->count > 0U);
    if (l->prev != PBX_CORE_NIL) {
        pbx_core_link_of(ctx, pool, l->prev)->next = l->next;
    } else {
        qu->head = l->next;
    }
    if (l->next != PBX_CORE_NIL) {
        pbx_core_link_of(ctx, pool, l->next)->prev = l->prev;
    } else {
        qu->tail = l->prev;
    }
    qu->count--;
    l->queue = 0U;
    l->next = PBX_CORE_NIL;
    l->prev = PBX_CORE_NIL;
}

uint32_t pbx_core_pop(pbx_core_ctx *ctx, pbx_core_queue_id q)
{
    pbx_core_queue *qu = &ctx->queues[q];
    uint32_t index = qu->head;
    if (index != PBX_CORE_NIL) {
        pbx_core_dequeue(ctx, (pbx_bootstrap_pool)qu->pool, index);
    }
    return index;
}

/* Moves every record of from behind to. Each moved record is re-tagged
 * with its new queue so a later cancel can unlink it in O(1); the walk is
 * bounded by the records moved, each of which the ready lane then serves
 * once, so the cost per event stays amortised O(1). */
void pbx_core_splice(pbx_core_ctx *ctx, pbx_core_queue_id to,
                     pbx_core_queue_id from)
{
    pbx_core_queue *dst = &ctx->queues[to];
    pbx_core_queue *src = &ctx->queues[from];
    PBX_ASSERT(dst->pool == src->pool);
    pbx_bootstrap_pool pool = (pbx_bootstrap_pool)src->pool;
    uint32_t i = src->head;
    for (uint32_t n = 0; n < src->count && i != PBX_CORE_NIL; n++) {
        pbx_core_link *l = pbx_core_link_of(ctx, pool, i);
        l->queue = (uint8_t)(to + 1);
        i = l->next;
    }
    if (src->head == PBX_CORE_NIL) {
        return;
    }
    if (dst->tail != PBX_CORE_NIL) {
        pbx_core_link_of(ctx, pool, dst->tail)->next = src->head;
        pbx_core_link_of(ctx, pool, src->head)->prev = dst->tail;
    } else {
        dst->head = src->head;
    }
    dst->tail = src->tail;
    dst->count += src->count;
    src->head = PBX_CORE_NIL;
    src->tail = PBX_CORE_NIL;
    src->count = 0U;
}
