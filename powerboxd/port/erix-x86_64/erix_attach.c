/*
 * erix_attach.c: route re-attachment on the erix-x86_64 port, declared
 * and not yet wired. On EriX the creator's startup endpoint (slot 4) would
 * be bound to the wait set like the broker endpoint; ROUTE_ATTACH would
 * arrive on it as an IPC message carrying the new route capability in a
 * staging slot, judged by the kernel's own record (ERIX_SYS_SLOT_QUERY:
 * kind and exact rights) and by ERIX_SYS_SLOT_IDENTIFY against the
 * identity of the peer the creator named, and moved over the old route
 * with ERIX_SYS_SLOT_MOVE (docs/PORTS.md, "Route re-attachment"). Until
 * the EriX creator protocol exists, powerboxd on EriX takes no route
 * after startup: opening the supervisor connection answers
 * PBX_E_PORT_STATE, which the runtime logs once and goes on without.
 */
#include "powerboxd/port/erix-x86_64/erix_int.h"

pbx_err pbx_port_supervisor_open(pbx_port_ctx *ctx, int32_t slot)
{
    (void)ctx;
    (void)slot;
    return PBX_E_PORT_STATE;
}

pbx_err pbx_port_supervisor_recv(pbx_port_ctx *ctx, uint8_t *buf,
                                 uint32_t cap_bytes, pbx_port_msg *msg)
{
    (void)ctx;
    (void)buf;
    (void)cap_bytes;
    pbx_mem_set(msg, 0, sizeof(*msg));
    return PBX_E_PORT_STATE;
}

pbx_err pbx_port_receipt_query(pbx_port_ctx *ctx, uint32_t index,
                               pbx_port_slot_info *info)
{
    if (index >= ctx->staged_count || index >= PBX_PORT_RECEIPTS_MAX ||
        ctx->staged[index] == PBX_PORT_SLOT_NONE) {
        pbx_mem_set(info, 0, sizeof(*info));
        return PBX_E_PORT_RECEIPT_INDEX;
    }
    return pbx_port_slot_query(ctx, ctx->staged[index], info);
}

pbx_err pbx_port_route_replace(pbx_port_ctx *ctx, uint32_t index, int32_t slot)
{
    (void)ctx;
    (void)index;
    (void)slot;
    return PBX_E_PORT_STATE;
}

pbx_err pbx_port_self_uid(pbx_port_ctx *ctx, uint32_t *uid)
{
    (void)ctx;
    *uid = 0U;
    return PBX_E_PORT_STATE;
}
