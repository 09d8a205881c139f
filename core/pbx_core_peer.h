/*
 * pbx_core_peer.h: helpers for the typed private-peer adapters (vfsd,
 * ttyd, procd, launchd). Internal to core/.
 */
#ifndef PBX_CORE_PEER_H
#define PBX_CORE_PEER_H

#include "core/pbx_core_internal.h"

/**
 * pbx_core_call_init prepares c to send frame_len bytes of ctx->frame to
 * route; nothing is transferred and no reply is attached.
 */
void pbx_core_call_init(pbx_core_ctx *ctx, pbx_core_call *c, uint32_t route,
                        size_t frame_len);

/**
 * pbx_core_drop_receipts deletes every receipt of c from index keep on.
 * A deletion that cannot finish now keeps the receipt tracked for retry,
 * owned by request owner (or PBX_CORE_NIL); returns the worst outcome
 * (REJECTED is already a fail-stop).
 */
pbx_core_delete pbx_core_drop_receipts(pbx_core_ctx *ctx,
                                       const pbx_core_call *c, size_t keep,
                                       uint32_t owner);

/**
 * pbx_core_reply_frame decodes c's reply and checks it is the status-zero
 * reply of op for request id. *f borrows c->reply.
 */
pbx_err pbx_core_reply_frame(const pbx_core_call *c, uint16_t op, pbx_ipc_id id,
                             pbx_ipc_frame *f);

/** pbx_core_receipt_ok authenticates slot as a receipt of kind. */
bool pbx_core_receipt_ok(pbx_core_ctx *ctx, uint32_t slot,
                         pbx_capabi_receipt kind);

/** pbx_core_park parks record index of pool on route until it is ready. */
void pbx_core_park(pbx_core_ctx *ctx, pbx_bootstrap_pool pool, uint32_t index,
                   pbx_core_route route);

/**
 * pbx_core_detach_send sends request i's own object copy back to vfsd
 * (DETACH, moved: once sent it is no longer held) as call kind. Returns
 * the pbx_core_call_send outcome.
 */
pbx_core_io pbx_core_detach_send(pbx_core_ctx *ctx, uint32_t i, uint32_t kind);

/**
 * pbx_core_detach_exact reports whether c is vfsd's status-zero DETACH
 * acknowledgement echoing request i and its object's full identity.
 */
bool pbx_core_detach_exact(const pbx_core_ctx *ctx, uint32_t i,
                           const pbx_core_call *c);

/**
 * pbx_core_view_encode encodes grant g's full row of kind (ACTIVE or
 * REMOVE) into ctx->frame under the grant identity; returns its length.
 */
size_t pbx_core_view_encode(pbx_core_ctx *ctx, uint32_t g, uint8_t kind);

/**
 * pbx_core_view_exact reports whether c is ttyd's exact acknowledgement
 * of grant g's row of kind.
 */
bool pbx_core_view_exact(const pbx_core_ctx *ctx, uint32_t g, uint8_t kind,
                         const pbx_core_call *c);

#endif /* PBX_CORE_PEER_H */
