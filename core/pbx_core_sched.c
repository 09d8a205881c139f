/*
 * pbx_core_sched.c: the scheduler. Ready lanes served round-robin (intake,
 * release, grant cleanup, notification, orphan retry), decision wakes,
 * delivery-driven retirement and orphan receipt deletion.
 */
#include "core/pbx_core_peer.h"

pbx_err pbx_core_notify_step(pbx_core_ctx *ctx, uint32_t n)
{
    const pbx_core_notification *no =
        (const pbx_core_notification *)pbx_core_rec(
            ctx, PBX_BOOTSTRAP_POOL_NOTIFICATIONS, n);
    uint32_t i = no->request;
    if (i >= ctx->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity ||
        pbx_core_req(ctx, i)->notification != n ||
        pbx_core_req(ctx, i)->decision != no->decision ||
        (pbx_core_req(ctx, i)->link.state != (uint16_t)PBX_CORE_ST_NOTIFY &&
         pbx_core_req(ctx, i)->link.state != (uint16_t)PBX_CORE_ST_DELIVERED)) {
        /* The wake would announce a decision no request holds. */
        return PBX_E_CORE_INCONSISTENT;
    }
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_wake w = {r->ctx.ctx.job_id, r->ctx.ctx.job_gen};
    size_t len = 0;
    PBX_ASSERT(pbx_ipc_wake_encode(
                   pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i), &w,
                   ctx->frame, sizeof(ctx->frame), &len) == PBX_OK);
    pbx_core_io io = ctx->ops->wake(ctx->ops_user, ctx->frame, len);
    if (io == PBX_CORE_IO_BUSY) {
        /* Retried when launchd's route is writable again, never polled. */
        pbx_core_enqueue(ctx, PBX_CORE_Q_PARK_NOTIFY, n);
        return PBX_OK;
    }
    if (io == PBX_CORE_IO_REJECTED) {
        /* The kernel says no wake can ever go out on this route: every
         * retained decision would wait forever, so the service stops with
         * the notification status (the decision stays, undelivered). */
        pbx_core_enqueue(ctx, PBX_CORE_Q_DEFER_NOTIFY, n);
        return pbx_core_fail(ctx, PBX_CORE_EXIT_NOTIFY,
                             PBX_E_CORE_NOTIFY_REJECTED);
    }
    if (io != PBX_CORE_IO_OK) {
        /* launchd's route refused it (failed, or its peer is gone): no
         * peer's death ends the service. The decision is kept and the
         * wake retried on a later tick; DECISION still delivers it. */
        pbx_core_enqueue(ctx, PBX_CORE_Q_DEFER_NOTIFY, n);
        return PBX_OK;
    }
    pbx_core_req_move(ctx, i, PBX_CORE_EV_WOKEN);
    if (r->link.state == (uint16_t)PBX_CORE_ST_FREE) {
        pbx_core_req_retire(ctx, i);
    }
    return PBX_OK;
}

pbx_err pbx_core_on_reply_delivered(pbx_core_ctx *ctx, uint32_t token,
                                    uint32_t generation, bool delivered)
{
    pbx_ipc_id id = {token, generation};
    uint32_t i = 0;
    if (ctx->ready == 0U) {
        return PBX_E_CORE_NOT_READY;
    }
    if (pbx_core_lookup(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, id, &i) != PBX_OK) {
        return PBX_E_CORE_TOKEN;
    }
    pbx_core_request *r = pbx_core_req(ctx, i);
    if (r->link.state != (uint16_t)PBX_CORE_ST_NOTIFY &&
        r->link.state != (uint16_t)PBX_CORE_ST_DECIDED) {
        return PBX_E_CORE_TOKEN;
    }
    if (!delivered) {
        return PBX_OK; /* Kept, alias included, for the next DECISION. */
    }
    if (r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
        r->ctx.ctx.mode == (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY &&
        pbx_core_tslot_held(ctx, r->handle_tslot)) {
        /* The alias left with the reply: exported exactly once. */
        pbx_core_tslot_drop(ctx, r->handle_tslot);
    }
    pbx_core_req_move(ctx, i, PBX_CORE_EV_DELIVERED);
    if (r->link.state == (uint16_t)PBX_CORE_ST_FREE) {
        pbx_core_req_retire(ctx, i);
    }
    return PBX_OK;
}

/* Retries one orphaned receipt deletion. */
static pbx_err pbx_core_orphan_step(pbx_core_ctx *ctx, uint32_t t)
{
    pbx_core_delete d = pbx_core_delete_tslot(ctx, t);
    if (d == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (d == PBX_CORE_DELETE_TRANSIENT) {
        /* Retried on the next tick, never polled. */
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS, t);
        return PBX_OK;
    }
    uint32_t owner = pbx_core_tslot_at(ctx, t)->owner;
    if (pbx_core_tslot_at(ctx, t)->owner_kind == PBX_CORE_ORPHAN_PUBLIC) {
        PBX_ASSERT(ctx->public_orphans > 0U);
        ctx->public_orphans--;
    }
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS, t);
    if (owner != PBX_CORE_NIL) {
        /* The owner cannot retire while it waits for this deletion. */
        pbx_core_request *r = pbx_core_req(ctx, owner);
        PBX_ASSERT(r->link.live != 0U && r->orphans > 0U);
        r->orphans--;
        if (r->orphans == 0U &&
            r->link.state == (uint16_t)PBX_CORE_ST_RELEASE &&
            r->link.queue == 0U) {
            pbx_core_enqueue(ctx, PBX_CORE_Q_RELEASE, owner);
        }
    }
    return PBX_OK;
}

/* Serves lane; returns false when it had nothing to do. */
static bool pbx_core_lane(pbx_core_ctx *ctx, uint32_t lane, pbx_err *err)
{
    static const pbx_core_queue_id queues[PBX_CORE_LANES] = {
        PBX_CORE_Q_INTAKE, PBX_CORE_Q_RELEASE, PBX_CORE_Q_GRANT,
        PBX_CORE_Q_NOTIFY, PBX_CORE_Q_ORPHAN};
    if (queues[lane] != PBX_CORE_Q_NOTIFY &&
        queues[lane] != PBX_CORE_Q_ORPHAN &&
        pbx_core_free_count(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS) <
            PBX_CORE_TSLOT_SPARE) {
        /* These steps call peers, whose replies may bring receipts that
         * need a record each should their deletion stay transient: they
         * wait until pending deletions have freed a reply's worth. */
        return false;
    }
    uint32_t i = pbx_core_pop(ctx, queues[lane]);
    if (i == PBX_CORE_NIL) {
        return false;
    }
    switch (queues[lane]) {
    case PBX_CORE_Q_GRANT:
        *err = pbx_core_grant_step(ctx, i);
        break;
    case PBX_CORE_Q_NOTIFY:
        *err = pbx_core_notify_step(ctx, i);
        break;
    case PBX_CORE_Q_ORPHAN:
        *err = pbx_core_orphan_step(ctx, i);
        break;
    default:
        *err = pbx_core_progress_step(ctx, i);
        break;
    }
    return true;
}

pbx_err pbx_core_step(pbx_core_ctx *ctx, bool *progressed)
{
    pbx_err err = PBX_OK;
    *progressed = false;
    if (ctx->ready == 0U) {
        return PBX_E_CORE_NOT_READY;
    }
    for (uint32_t n = 0; n < PBX_CORE_LANES; n++) {
        uint32_t lane = ctx->lane;
        ctx->lane = (ctx->lane + 1U) % PBX_CORE_LANES;
        if (pbx_core_lane(ctx, lane, &err)) {
            *progressed = true;
            break;
        }
    }
    if (err != PBX_OK && pbx_core_exit_status(ctx) == PBX_CORE_EXIT_NONE) {
        return pbx_core_fail(ctx, PBX_CORE_EXIT_PROGRESS, err);
    }
    return err;
}
