/*
 * pbx_core_peer.c: helpers of the typed private-peer calls. Each step
 * encodes a canonical frame and sends it (pbx_core_calls.c); its judge
 * later decodes the matched reply strictly, checks that it answers
 * exactly this request, and keeps at most the one receipt the reply may
 * carry; every other receipt is deleted.
 */
#include "core/pbx_core_peer.h"

void pbx_core_call_init(pbx_core_ctx *ctx, pbx_core_call *c, uint32_t route,
                        size_t frame_len)
{
    c->route = route;
    c->via_slot = PBX_CORE_SLOT_NONE;
    c->frame = ctx->frame;
    c->frame_len = frame_len;
    c->send_slot = PBX_CORE_SLOT_NONE;
    c->send_copy = false;
    c->reply = NULL;
    c->reply_len = 0;
    c->recv_count = 0;
}

pbx_core_delete pbx_core_drop_receipts(pbx_core_ctx *ctx,
                                       const pbx_core_call *c, size_t keep,
                                       uint32_t owner)
{
    pbx_core_delete worst = PBX_CORE_DELETE_OK;
    size_t n = c->recv_count < PBX_CORE_RECV_SLOTS_MAX
                   ? c->recv_count
                   : PBX_CORE_RECV_SLOTS_MAX;
    /* recv_count is written by the ops layer through a function pointer,
     * which cppcheck cannot follow from pbx_core_call_init's zero. */
    // cppcheck-suppress knownConditionTrueFalse
    for (size_t i = keep; i < n; i++) {
        pbx_core_delete d = pbx_core_delete_slot(ctx, c->recv_slots[i]);
        if (d == PBX_CORE_DELETE_REJECTED) {
            return d;
        }
        if (d == PBX_CORE_DELETE_TRANSIENT) {
            /* Keep it tracked so the cleanup lane retries the deletion. */
            d = pbx_core_orphan(ctx, c->recv_slots[i], owner, false);
            if (d == PBX_CORE_DELETE_REJECTED) {
                return d;
            }
            worst = d == PBX_CORE_DELETE_TRANSIENT ? d : worst;
        }
    }
    return worst;
}

pbx_err pbx_core_reply_frame(const pbx_core_call *c, uint16_t op, pbx_ipc_id id,
                             pbx_ipc_frame *f)
{
    size_t caps = c->recv_count;
    if (caps > PBX_CORE_RECV_SLOTS_MAX || c->reply == NULL) {
        return PBX_E_CORE_PEER_REPLY;
    }
    pbx_err err =
        pbx_ipc_frame_decode(c->reply, c->reply_len, (uint16_t)caps, f);
    if (err != PBX_OK) {
        return err;
    }
    if (f->op != (uint16_t)(op | PBX_IPC_REPLY_BIT) || f->status != 0U ||
        f->request.index != id.index || f->request.gen != id.gen) {
        return PBX_E_CORE_PEER_REPLY;
    }
    return PBX_OK;
}

bool pbx_core_receipt_ok(pbx_core_ctx *ctx, uint32_t slot,
                         pbx_capabi_receipt kind)
{
    pbx_capabi_observed obs;
    ctx->ops->slot_query(ctx->ops_user, slot, &obs);
    return pbx_capabi_check_receipt(&ctx->slots, &obs, kind) == PBX_OK;
}

void pbx_core_park(pbx_core_ctx *ctx, pbx_bootstrap_pool pool, uint32_t index,
                   pbx_core_route route)
{
    pbx_core_queue_id base = pool == PBX_BOOTSTRAP_POOL_GRANTS
                                 ? PBX_CORE_Q_PARK_GRANT
                                 : PBX_CORE_Q_PARK_REQUEST;
    pbx_core_dequeue(ctx, pool, index);
    pbx_core_enqueue(ctx, (pbx_core_queue_id)((unsigned)base + (unsigned)route),
                     index);
    if (pool == PBX_BOOTSTRAP_POOL_REQUESTS) {
        pbx_core_req(ctx, index)->parked_route = (uint32_t)route;
    }
}

void pbx_core_on_route_ready(pbx_core_ctx *ctx, pbx_core_route route)
{
    PBX_ASSERT((unsigned)route < (unsigned)PBX_CORE_ROUTE_COUNT);
    pbx_core_splice(ctx, PBX_CORE_Q_INTAKE,
                    (pbx_core_queue_id)((unsigned)PBX_CORE_Q_PARK_REQUEST +
                                        (unsigned)route));
    pbx_core_splice(
        ctx, PBX_CORE_Q_GRANT,
        (pbx_core_queue_id)((unsigned)PBX_CORE_Q_PARK_GRANT + (unsigned)route));
    if (route == PBX_CORE_ROUTE_LAUNCHD) {
        pbx_core_splice(ctx, PBX_CORE_Q_NOTIFY, PBX_CORE_Q_PARK_NOTIFY);
    }
}
