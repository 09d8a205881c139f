/*
 * lx_attach.c: the supervisor connection after readiness (slot 4, a
 * connected SOCK_DGRAM pair with powerboxd's creator), its one kind of
 * message (ROUTE_ATTACH with one descriptor by SCM_RIGHTS), the query of
 * a staged receipt and the exact replacement of a startup route slot by
 * it, for the linux-x86_64 port.
 */
#include "powerboxd/port/linux-x86_64/lx_int.h"

/** LX_SYS_GETUID returns the real user id; it cannot fail. */
#define LX_SYS_GETUID 102

pbx_err pbx_port_supervisor_open(pbx_port_ctx *ctx, int32_t slot)
{
    if ((ctx->flags & LX_FLAG_INIT) == 0U ||
        ctx->supervisor_slot != PBX_PORT_SLOT_NONE ||
        slot == ctx->public_slot || slot == ctx->broker_slot) {
        return PBX_E_PORT_STATE;
    }
    if (slot < 0 || slot >= PBX_PORT_STARTUP_SLOTS) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (!lx_slot_open(slot) ||
        lx_epoll_set(ctx, LX_EPOLL_CTL_ADD, slot, LX_TAG_SUPERVISOR,
                     LX_EPOLLIN) != PBX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->supervisor_slot = slot;
    return PBX_OK;
}

void lx_supervisor_unwatch(pbx_port_ctx *ctx)
{
    if (ctx->supervisor_slot < 0) {
        return;
    }
    /* ENOENT (already unwatched) is as good as done. */
    (void)lx_epoll_set(ctx, LX_EPOLL_CTL_DEL, ctx->supervisor_slot,
                       LX_TAG_SUPERVISOR, 0);
}

pbx_err pbx_port_supervisor_recv(pbx_port_ctx *ctx, uint8_t *buf,
                                 uint32_t cap_bytes, pbx_port_msg *msg)
{
    if (ctx->supervisor_slot < 0) {
        pbx_mem_set(msg, 0, sizeof(*msg));
        return PBX_E_PORT_STATE;
    }
    pbx_err err = lx_recv(ctx, ctx->supervisor_slot, buf, cap_bytes, msg,
                          LX_MSG_DONTWAIT);
    if (err == PBX_E_PORT_PEER_CLOSED) {
        /* A level-triggered hang-up would be reported for ever. */
        lx_supervisor_unwatch(ctx);
    }
    /* The creator's messages identify nobody's request. */
    msg->badge = 0U;
    return err;
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

/* Whether slot may be replaced: a startup slot holding no object of the
 * port's own (the public endpoint, the supervisor connection). */
static bool lx_replaceable(const pbx_port_ctx *ctx, int32_t slot)
{
    return slot >= 0 && slot < PBX_PORT_STARTUP_SLOTS &&
           slot != ctx->public_slot && slot != ctx->supervisor_slot &&
           slot != ctx->wait_slot && slot != ctx->placeholder_slot;
}

/* Stops every watch of slot before its object changes under the number:
 * epoll keys a registration by number and open file, so a registration
 * of the old file must not outlive it. */
static void lx_replace_unwatch(pbx_port_ctx *ctx, int32_t slot)
{
    if (slot == ctx->broker_slot) {
        lx_broker_unwatch(ctx);
        ctx->flags &= ~LX_FLAG_BROKER_HELD;
        return;
    }
    (void)lx_epoll_set(ctx, LX_EPOLL_CTL_DEL, slot, LX_TAG_ROUTE, 0);
}

/* Watches a fresh broker endpoint: at once, or (public intake held) when
 * the hold ends. */
static pbx_err lx_broker_rearm(pbx_port_ctx *ctx)
{
    if ((ctx->flags & LX_FLAG_HELD) != 0U) {
        ctx->flags |= LX_FLAG_BROKER_HELD;
        return PBX_OK;
    }
    pbx_err err = lx_epoll_set(ctx, LX_EPOLL_CTL_ADD, ctx->broker_slot,
                               LX_TAG_BROKER, LX_EPOLLIN);
    if (err == PBX_OK) {
        ctx->flags |= LX_FLAG_BROKER_ARMED;
    }
    return err;
}

pbx_err pbx_port_route_replace(pbx_port_ctx *ctx, uint32_t index, int32_t slot)
{
    if ((ctx->flags & LX_FLAG_INIT) == 0U || !lx_replaceable(ctx, slot)) {
        return PBX_E_PORT_STATE;
    }
    if (index >= ctx->staged_count || index >= PBX_PORT_RECEIPTS_MAX ||
        ctx->staged[index] == PBX_PORT_SLOT_NONE) {
        return PBX_E_PORT_RECEIPT_INDEX;
    }
    int32_t from = ctx->staged[index];
    lx_replace_unwatch(ctx, slot);
    /* dup3 replaces the old route in one step (the old file is released
     * with the number); then the staging number goes, with proof. */
    if (lx_sys3(LX_SYS_DUP3, from, slot, LX_O_CLOEXEC) != slot) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->staged[index] = PBX_PORT_SLOT_NONE;
    pbx_err err = lx_close_proven(from);
    if (slot == ctx->broker_slot) {
        pbx_err armed = lx_broker_rearm(ctx);
        err = err == PBX_OK ? armed : err;
    }
    return err;
}

pbx_err pbx_port_self_uid(pbx_port_ctx *ctx, uint32_t *uid)
{
    (void)ctx;
    *uid = (uint32_t)lx_sys1(LX_SYS_GETUID, 0);
    return PBX_OK;
}
