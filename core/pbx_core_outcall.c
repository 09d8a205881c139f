/*
 * pbx_core_outcall.c: the records of outstanding peer calls, the lower
 * half of pbx_core_calls.c. It owns what a call record holds and how a
 * call ends (its deadline FIFO, its owner's field, the window count), so
 * that the slots and the judges can end a call without calling back up
 * into the file that sends and matches calls.
 */
#include "core/pbx_core_internal.h"

pbx_core_outcall *pbx_core_outcall_at(const pbx_core_ctx *ctx, uint32_t o)
{
    return (pbx_core_outcall *)pbx_core_rec(ctx, PBX_BOOTSTRAP_POOL_CALLS, o);
}

uint32_t pbx_core_call_seq(const pbx_core_ctx *ctx, uint32_t o)
{
    /* The whole generation: unique among the calls of 2^32 - 1 sends
     * (pbx_core_call_take), so no reply held back names a later call. */
    return pbx_core_outcall_at(ctx, o)->link.generation;
}

uint32_t *pbx_core_call_owner_field(const pbx_core_ctx *ctx,
                                    const pbx_core_outcall *oc)
{
    if (oc->owner_pool == (uint8_t)PBX_BOOTSTRAP_POOL_REQUESTS) {
        return &pbx_core_req(ctx, oc->owner)->call;
    }
    pbx_core_grant *g = pbx_core_grant_at(ctx, oc->owner);
    /* A live grant's ACTIVE row sent again (RESYNC) is recorded where its
     * REMOVE will be: a grant owes the one only while LIVE, the other only
     * after. */
    return oc->kind == (uint8_t)PBX_CORE_CALL_REMOVE ||
                   oc->kind == (uint8_t)PBX_CORE_CALL_RESYNC
               ? &g->call_remove
               : &g->call_retire;
}

/* Ends call o: it leaves its deadline FIFO and its owner, its record is
 * freed (so its sequence names nothing any more), and everything waiting
 * for a call record gets another chance. */
void pbx_core_call_end(pbx_core_ctx *ctx, uint32_t o)
{
    pbx_core_outcall *oc = pbx_core_outcall_at(ctx, o);
    uint32_t *field = pbx_core_call_owner_field(ctx, oc);
    PBX_ASSERT(*field == o && ctx->calls_out[oc->clazz] > 0U);
    *field = PBX_CORE_NIL;
    ctx->calls_out[oc->clazz]--;
    pbx_core_dequeue(ctx, PBX_BOOTSTRAP_POOL_CALLS, o);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_CALLS, o);
    pbx_core_splice(ctx, PBX_CORE_Q_INTAKE, PBX_CORE_Q_WAIT_CALL_REQUEST);
    pbx_core_splice(ctx, PBX_CORE_Q_GRANT, PBX_CORE_Q_WAIT_CALL_GRANT);
}

void pbx_core_call_cancel(pbx_core_ctx *ctx, uint32_t o)
{
    pbx_core_call_end(ctx, o);
}
