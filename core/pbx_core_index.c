/*
 * pbx_core_index.c: the correlation index. Requests and grants are chained
 * by job (id, generation) in hash buckets embedded in their own pools, so
 * a generation-zero CANCEL or an EXPIRE walks the one chain its job hashes
 * to instead of scanning a pool. Every operation here is O(1) except
 * pbx_core_index_init, which runs once while the arena is carved.
 */
#include "core/pbx_core_internal.h"

/* Odd 64-bit multipliers for the mix: the golden-ratio constant and a
 * second one with well-spread bits. Oddness keeps each multiplication a
 * bijection, so no key bits are lost before the final fold. */
#define PBX_CORE_MIX_A UINT64_C(0x9E3779B97F4A7C15)
#define PBX_CORE_MIX_B UINT64_C(0xD1342543DE82EF95)

uint32_t pbx_core_index_hash(uint64_t job_id, uint32_t job_gen)
{
    /* Multiply-xorshift rounds: every input bit reaches every output bit,
     * so job ids that differ only in a few low or high bits (sequential
     * jobs, generations of one job) land in unrelated buckets. */
    uint64_t x = job_id * PBX_CORE_MIX_A + (uint64_t)job_gen;
    x ^= x >> 32;
    x *= PBX_CORE_MIX_B;
    x ^= x >> 29;
    x *= PBX_CORE_MIX_A;
    x ^= x >> 32;
    return (uint32_t)x;
}

/* The chain of record index of pool; only requests and grants have one. */
static pbx_core_chain *pbx_core_chain_of(const pbx_core_ctx *ctx,
                                         pbx_bootstrap_pool pool,
                                         uint32_t index)
{
    if (pool == PBX_BOOTSTRAP_POOL_REQUESTS) {
        return &pbx_core_req(ctx, index)->chain;
    }
    PBX_ASSERT(pool == PBX_BOOTSTRAP_POOL_GRANTS);
    return &pbx_core_grant_at(ctx, index)->chain;
}

/* The context (and so the job key) of record index of pool. */
static const pbx_core_context *pbx_core_key_of(const pbx_core_ctx *ctx,
                                               pbx_bootstrap_pool pool,
                                               uint32_t index)
{
    if (pool == PBX_BOOTSTRAP_POOL_REQUESTS) {
        return &pbx_core_req(ctx, index)->ctx;
    }
    PBX_ASSERT(pool == PBX_BOOTSTRAP_POOL_GRANTS);
    return &pbx_core_grant_at(ctx, index)->ctx;
}

uint32_t pbx_core_index_bucket(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                               uint64_t job_id, uint32_t job_gen)
{
    uint32_t cap = ctx->pools[pool].capacity;
    PBX_ASSERT(cap > 0U);
    return pbx_core_index_hash(job_id, job_gen) % cap;
}

void pbx_core_index_init(pbx_core_ctx *ctx)
{
    static const pbx_bootstrap_pool pools[] = {PBX_BOOTSTRAP_POOL_REQUESTS,
                                               PBX_BOOTSTRAP_POOL_GRANTS};
    for (size_t p = 0; p < PBX_ARRAY_LEN(pools); p++) {
        uint32_t cap = ctx->pools[pools[p]].capacity;
        for (uint32_t i = 0; i < cap; i++) {
            pbx_core_chain *c = pbx_core_chain_of(ctx, pools[p], i);
            c->bucket_head = PBX_CORE_NIL;
            c->next = PBX_CORE_NIL;
            c->prev = PBX_CORE_NIL;
            c->bucket = PBX_CORE_NIL;
        }
    }
}

void pbx_core_index_insert(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                           uint32_t index)
{
    const pbx_core_context *k = pbx_core_key_of(ctx, pool, index);
    pbx_core_chain *c = pbx_core_chain_of(ctx, pool, index);
    PBX_ASSERT(pbx_core_link_of(ctx, pool, index)->live != 0U &&
               c->bucket == PBX_CORE_NIL);
    uint32_t b =
        pbx_core_index_bucket(ctx, pool, k->ctx.job_id, k->ctx.job_gen);
    pbx_core_chain *head = pbx_core_chain_of(ctx, pool, b);
    c->bucket = b;
    c->prev = PBX_CORE_NIL;
    c->next = head->bucket_head;
    if (c->next != PBX_CORE_NIL) {
        pbx_core_chain_of(ctx, pool, c->next)->prev = index;
    }
    head->bucket_head = index;
}

void pbx_core_index_remove(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                           uint32_t index)
{
    pbx_core_chain *c = pbx_core_chain_of(ctx, pool, index);
    if (c->bucket == PBX_CORE_NIL) {
        return;
    }
    if (c->prev != PBX_CORE_NIL) {
        pbx_core_chain_of(ctx, pool, c->prev)->next = c->next;
    } else {
        PBX_ASSERT(pbx_core_chain_of(ctx, pool, c->bucket)->bucket_head ==
                   index);
        pbx_core_chain_of(ctx, pool, c->bucket)->bucket_head = c->next;
    }
    if (c->next != PBX_CORE_NIL) {
        pbx_core_chain_of(ctx, pool, c->next)->prev = c->prev;
    }
    c->bucket = PBX_CORE_NIL;
    c->next = PBX_CORE_NIL;
    c->prev = PBX_CORE_NIL;
}

bool pbx_core_index_chained(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                            uint32_t index)
{
    return pbx_core_chain_of(ctx, pool, index)->bucket != PBX_CORE_NIL;
}

uint32_t pbx_core_index_head(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                             uint64_t job_id, uint32_t job_gen)
{
    uint32_t b = pbx_core_index_bucket(ctx, pool, job_id, job_gen);
    return pbx_core_chain_of(ctx, pool, b)->bucket_head;
}

uint32_t pbx_core_index_next(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                             uint32_t index)
{
    const pbx_core_chain *c = pbx_core_chain_of(ctx, pool, index);
    /* Only live records are chained (insert checks it; every path that
     * frees a record unchains it first), so a walk never meets a freed
     * or reused record: a stale reference cannot come from the index. */
    PBX_ASSERT(c->bucket != PBX_CORE_NIL &&
               pbx_core_link_of(ctx, pool, index)->live != 0U);
    if (ctx->index_visits != UINT32_MAX) {
        ctx->index_visits++;
    }
    return c->next;
}
