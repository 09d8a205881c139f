/*
 * pbx_core_inspect.c: the read-only inspection API (pbx_core_inspect.h).
 */
#include "core/pbx_core_internal.h"

const void *pbx_core_inspect_record(const pbx_core_ctx *ctx,
                                    pbx_bootstrap_pool pool, uint32_t index)
{
    return pbx_core_rec(ctx, pool, index);
}

const pbx_core_request *pbx_core_inspect_request(const pbx_core_ctx *ctx,
                                                 uint32_t index)
{
    return pbx_core_req(ctx, index);
}

const pbx_core_grant *pbx_core_inspect_grant(const pbx_core_ctx *ctx,
                                             uint32_t index)
{
    return pbx_core_grant_at(ctx, index);
}

const pbx_core_tslot *pbx_core_inspect_tslot(const pbx_core_ctx *ctx,
                                             uint32_t index)
{
    return pbx_core_tslot_at(ctx, index);
}

const pbx_core_outcall *pbx_core_inspect_call(const pbx_core_ctx *ctx,
                                              uint32_t index)
{
    return (const pbx_core_outcall *)pbx_core_rec(ctx, PBX_BOOTSTRAP_POOL_CALLS,
                                                  index);
}

uint32_t pbx_core_inspect_seq(const pbx_core_ctx *ctx, uint32_t index)
{
    return pbx_core_call_seq(ctx, index);
}

uint32_t pbx_core_inspect_bucket(const pbx_core_ctx *ctx,
                                 pbx_bootstrap_pool pool, uint64_t job_id,
                                 uint32_t job_gen)
{
    return pbx_core_index_bucket(ctx, pool, job_id, job_gen);
}

uint32_t pbx_core_inspect_hash(uint64_t job_id, uint32_t job_gen)
{
    return pbx_core_index_hash(job_id, job_gen);
}

pbx_ipc_id pbx_core_inspect_id(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                               uint32_t index)
{
    return pbx_core_id(ctx, pool, index);
}

void *pbx_core_inspect_fault(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                             uint32_t index)
{
    return pbx_core_rec(ctx, pool, index);
}
