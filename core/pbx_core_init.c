/*
 * pbx_core_init.c: carving the one arena into every PBX1 pool.
 */
#include "core/pbx_core_internal.h"

/* Checks the derived layout against the compiled record types and the
 * arena against the derived page extent, before anything is written. */
static pbx_err pbx_core_init_check(const pbx_bootstrap_layout *layout,
                                   const uint8_t *arena, size_t arena_len)
{
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    size_t align_max = 1;
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        const pbx_bootstrap_pool_extent *e = &layout->pools[i];
        if (e->record_size_bytes != want[i].record_size_bytes ||
            e->record_align_bytes != want[i].record_align_bytes ||
            e->capacity == 0U ||
            e->size_bytes != (size_t)e->capacity * e->record_size_bytes ||
            e->offset_bytes % want[i].record_align_bytes != 0U) {
            return PBX_E_CORE_LAYOUT;
        }
        if (e->offset_bytes > layout->used_bytes ||
            e->size_bytes > layout->used_bytes - e->offset_bytes) {
            return PBX_E_CORE_ARENA;
        }
        if (want[i].record_align_bytes > align_max) {
            align_max = want[i].record_align_bytes;
        }
    }
    if (arena == NULL || layout->page_size_bytes == 0U ||
        layout->arena_bytes != layout->page_count * layout->page_size_bytes ||
        layout->used_bytes > layout->arena_bytes ||
        arena_len != layout->arena_bytes ||
        ((uintptr_t)arena % align_max) != 0U) {
        return PBX_E_CORE_ARENA;
    }
    if (layout->pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].capacity <
        PBX_CORE_TSLOTS_MIN) {
        /* Too few to serve one request beside the records kept for
         * transient deletions: the service could never make progress. */
        return PBX_E_CORE_LAYOUT;
    }
    if (layout->call_window == 0U) {
        return PBX_E_CORE_LAYOUT; /* No call could ever be sent. */
    }
    for (size_t k = 0; k < (size_t)PBX_CORE_CALL_CLASSES; k++) {
        if (layout->time_ms[k] == 0U) {
            return PBX_E_CORE_LAYOUT; /* Every call would expire unsent. */
        }
    }
    if (layout->time_ms[PBX_BOOTSTRAP_TIME_OPEN] == 0U) {
        return PBX_E_CORE_LAYOUT; /* Every request would end uncommitted. */
    }
    return PBX_OK;
}

/* Threads pool's free list over every record, ignoring old contents. */
static void pbx_core_init_pool(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                               const pbx_bootstrap_pool_extent *e)
{
    pbx_core_pool_state *p = &ctx->pools[pool];
    p->offset_bytes = e->offset_bytes;
    p->capacity = e->capacity;
    p->record_size_bytes = e->record_size_bytes;
    pbx_mem_set(ctx->arena + e->offset_bytes, 0, e->size_bytes);
    if (pool == PBX_BOOTSTRAP_POOL_SELECTOR_BYTES) {
        p->free_head = PBX_CORE_NIL;
        p->free_count = 0U;
        return;
    }
    for (uint32_t i = 0; i < e->capacity; i++) {
        pbx_core_link *l = pbx_core_link_of(ctx, pool, i);
        l->next = i + 1U < e->capacity ? i + 1U : PBX_CORE_NIL;
        l->prev = PBX_CORE_NIL;
    }
    p->free_head = 0U;
    p->free_count = e->capacity;
}

/* Cuts the selector-bytes pool into linked chunks; a tail shorter than a
 * chunk is never used (the deployment sizes the pool in whole chunks). */
static void pbx_core_init_chunks(pbx_core_ctx *ctx)
{
    uint32_t n = ctx->pools[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES].capacity /
                 PBX_CORE_SELECTOR_CHUNK_BYTES;
    ctx->chunk_count = n;
    ctx->chunk_free_head = PBX_CORE_NIL;
    ctx->chunk_free_count = 0U;
    for (uint32_t i = n; i > 0U; i--) {
        pbx_core_chunks_give(ctx, i - 1U, 1U);
    }
}

static void pbx_core_init_queues(pbx_core_ctx *ctx)
{
    for (size_t q = 0; q < (size_t)PBX_CORE_Q_COUNT; q++) {
        pbx_core_queue *qu = &ctx->queues[q];
        qu->head = PBX_CORE_NIL;
        qu->tail = PBX_CORE_NIL;
        qu->count = 0U;
        qu->pool = (uint32_t)PBX_BOOTSTRAP_POOL_REQUESTS;
        if (q == (size_t)PBX_CORE_Q_GRANT ||
            q == (size_t)PBX_CORE_Q_DEFER_GRANT ||
            q == (size_t)PBX_CORE_Q_WAIT_CALL_GRANT ||
            (q >= (size_t)PBX_CORE_Q_PARK_GRANT &&
             q < (size_t)PBX_CORE_Q_PARK_NOTIFY)) {
            qu->pool = (uint32_t)PBX_BOOTSTRAP_POOL_GRANTS;
        } else if (q == (size_t)PBX_CORE_Q_ORPHAN ||
                   q == (size_t)PBX_CORE_Q_DEFER_ORPHAN) {
            qu->pool = (uint32_t)PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS;
        } else if (q == (size_t)PBX_CORE_Q_NOTIFY ||
                   q == (size_t)PBX_CORE_Q_PARK_NOTIFY ||
                   q == (size_t)PBX_CORE_Q_DEFER_NOTIFY) {
            qu->pool = (uint32_t)PBX_BOOTSTRAP_POOL_NOTIFICATIONS;
        } else if (q >= (size_t)PBX_CORE_Q_CALLS) {
            qu->pool = (uint32_t)PBX_BOOTSTRAP_POOL_CALLS;
        }
    }
}

pbx_err pbx_core_init(pbx_core_ctx *ctx, const pbx_bootstrap_layout *layout,
                      uint8_t *arena, size_t arena_len,
                      const pbx_capabi_layout *slots, const pbx_core_ops *ops,
                      void *ops_user)
{
    ctx->ready = 0U;
    ctx->exit_status = (uint32_t)PBX_CORE_EXIT_NONE;
    ctx->identity = NULL;
    pbx_mem_set(ctx->fsm_hits, 0, sizeof(ctx->fsm_hits));
    pbx_err err = pbx_core_init_check(layout, arena, arena_len);
    if (err != PBX_OK) {
        return err;
    }
    ctx->arena = arena;
    ctx->arena_len = arena_len;
    ctx->ops = ops;
    ctx->ops_user = ops_user;
    ctx->slots = *slots;
    ctx->lane = 0U;
    ctx->call_serial = 0U;
    ctx->held_caps = 0U;
    ctx->index_visits = 0U;
    ctx->public_orphans = 0U;
    ctx->call_window = layout->call_window;
    for (size_t k = 0; k < (size_t)PBX_CORE_CALL_CLASSES; k++) {
        ctx->call_ms[k] = layout->time_ms[k];
        ctx->calls_out[k] = 0U;
    }
    ctx->open_ms = layout->time_ms[PBX_BOOTSTRAP_TIME_OPEN];
    ctx->prompt_share = pbx_core_prompt_share(
        layout->pools[PBX_BOOTSTRAP_POOL_PROMPTS].capacity);
    ctx->prompt_waits = 0U;
    ctx->opens_expired = 0U;
    ctx->now_ms = 0U;
    ctx->replies_refused = 0U;
    ctx->calls_expired = 0U;
    pbx_mem_set(ctx->arena, 0, arena_len);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        pbx_core_init_pool(ctx, (pbx_bootstrap_pool)i, &layout->pools[i]);
    }
    pbx_core_init_chunks(ctx);
    pbx_core_init_queues(ctx);
    pbx_core_index_init(ctx);
    ctx->ready = 1U;
    return PBX_OK;
}

void pbx_core_set_identity(pbx_core_ctx *ctx, pbx_core_identity_fn identity)
{
    ctx->identity = identity;
}

uint32_t pbx_core_held_caps(const pbx_core_ctx *ctx)
{
    return ctx->held_caps;
}
