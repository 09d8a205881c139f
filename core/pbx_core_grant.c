/*
 * pbx_core_grant.c: the grant cleanup chain. Revocation (procd's
 * manage-only handle, or the unexported alias) comes first; then the ttyd
 * REMOVE and the vfsd RETIRE go out together and neither waits for the
 * other; only both exact acknowledgements retire the generation. A live
 * grant's ACTIVE row is sent again here too (RESYNC), on the grant's own
 * lane, when ttyd comes back empty (pbx_core_on_route_up).
 */
#include "core/pbx_core_peer.h"

/* Whether grant g's approval is published and its reply not delivered
 * yet: the decision is final until delivered, so the runtime-reply alias
 * it carries stays with it (dead once vfsd retires the object). */
static bool pbx_core_grant_reply_owed(const pbx_core_ctx *ctx, uint32_t g)
{
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    uint32_t i = gr->request;
    if (i == PBX_CORE_NIL) {
        return false;
    }
    const pbx_core_request *r = pbx_core_req(ctx, i);
    return r->link.live != 0U && r->link.generation == gr->request_generation &&
           r->grant == g &&
           (r->link.state == (uint16_t)PBX_CORE_ST_NOTIFY ||
            r->link.state == (uint16_t)PBX_CORE_ST_DECIDED);
}

/* Deletes the grant's revocation authority (or unexported alias). */
static pbx_err pbx_core_grant_revoke(pbx_core_ctx *ctx, uint32_t g)
{
    pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    bool install = (gr->flags & PBX_CORE_GRANT_F_INSTALL) != 0U;
    uint32_t t = install ? gr->revocation_tslot : gr->alias_tslot;
    pbx_core_delete d = PBX_CORE_DELETE_OK;
    /* An unexported alias behind a published, undelivered approval stays:
     * the decision is final until delivered, and vfsd's RETIRE, which
     * follows, revokes every copy of the object, that one included. */
    if (install || !pbx_core_grant_reply_owed(ctx, g)) {
        d = pbx_core_delete_tslot(ctx, t);
    }
    if (d == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (d != PBX_CORE_DELETE_OK) {
        /* Retried on the next tick, never polled. */
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        return PBX_OK;
    }
    pbx_core_grant_move(ctx, g, PBX_CORE_EV_REVOKED);
    pbx_core_enqueue(ctx, PBX_CORE_Q_GRANT, g);
    return PBX_OK;
}

/* Sends the receipt-free full-identity retirement q to vfsd under grant
 * identity gid, as call kind for owner (a request or a grant). */
void pbx_core_retire_send(pbx_core_ctx *ctx, pbx_ipc_id gid,
                          const pbx_ipc_retire *q, uint32_t kind,
                          pbx_bootstrap_pool pool, uint32_t owner)
{
    pbx_core_call c;
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_retire_encode(gid, q, ctx->frame, sizeof(ctx->frame),
                                     &n) == PBX_OK);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_VFSD, n);
    pbx_core_call_spec spec = {kind,  PBX_BOOTSTRAP_TIME_VFSD, pool,
                               owner, PBX_IPC_OP_RETIRE,       gid};
    if (pbx_core_call_send(ctx, &c, &spec) == PBX_CORE_IO_FAILED) {
        /* Never abandoned: asked again on a later tick. */
        pbx_core_defer(ctx, pool, owner);
    }
}

/* Whether c is vfsd's exact acknowledgement of retirement q under gid. */
bool pbx_core_retire_exact(const pbx_core_call *c, pbx_ipc_id gid,
                           const pbx_ipc_retire *q)
{
    pbx_ipc_frame f;
    pbx_ipc_retire ack;
    return c != NULL &&
           pbx_core_reply_frame(c, PBX_IPC_OP_RETIRE, gid, &f) == PBX_OK &&
           pbx_ipc_retire_reply_decode(&f, &ack) == PBX_OK &&
           ack.object.id == q->object.id && ack.object.gen == q->object.gen &&
           ack.scope_id == q->scope_id && ack.object_class == q->object_class;
}

/* The retirement of grant g's object. */
static pbx_ipc_retire pbx_core_grant_retirement(const pbx_core_ctx *ctx,
                                                uint32_t g)
{
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    pbx_ipc_retire q = {gr->object, gr->scope_id, gr->ctx.ctx.object_class};
    return q;
}

/* Frees grant g once the last of its two exact acknowledgements (event:
 * REMOVED or RETIRED) arrived, and wakes a request waiting on its cleanup. */
static void pbx_core_grant_retire(pbx_core_ctx *ctx, uint32_t g,
                                  pbx_core_event event)
{
    pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    uint32_t i = gr->request;
    /* Both acknowledgements came: no call of the grant is outstanding. */
    PBX_ASSERT(gr->call_remove == PBX_CORE_NIL &&
               gr->call_retire == PBX_CORE_NIL);
    pbx_core_dequeue(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
    pbx_core_grant_move(ctx, g, event);
    gr->link.state = (uint16_t)PBX_CORE_ST_FREE;
    if (i != PBX_CORE_NIL && pbx_core_req(ctx, i)->link.live != 0U &&
        pbx_core_req(ctx, i)->link.generation == gr->request_generation &&
        pbx_core_req(ctx, i)->grant == g) {
        pbx_core_request *r = pbx_core_req(ctx, i);
        r->grant = PBX_CORE_NIL;
        if (r->link.state == (uint16_t)PBX_CORE_ST_RELEASE &&
            r->link.queue == 0U) {
            pbx_core_enqueue(ctx, PBX_CORE_Q_RELEASE, i);
        }
        pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        return;
    }
    /* The request retired earlier and left its handle slot record here. */
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS,
                  (gr->flags & PBX_CORE_GRANT_F_INSTALL) != 0U
                      ? gr->revocation_tslot
                      : gr->alias_tslot);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
}

/* Sends grant g's REMOVE row to ttyd. */
static void pbx_core_remove_send(pbx_core_ctx *ctx, uint32_t g)
{
    pbx_core_call c;
    size_t n = pbx_core_view_encode(ctx, g, PBX_IPC_VIEW_REMOVE);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_TTYD, n);
    pbx_core_call_spec spec = {PBX_CORE_CALL_REMOVE,
                               PBX_BOOTSTRAP_TIME_TTYD,
                               PBX_BOOTSTRAP_POOL_GRANTS,
                               g,
                               PBX_IPC_OP_VIEW,
                               pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g)};
    if (pbx_core_call_send(ctx, &c, &spec) == PBX_CORE_IO_FAILED) {
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
    }
}

/* Records one exact acknowledgement (REMOVED or RETIRED) of grant g in
 * SETTLE, REMOVE or RETIRE: the last of the two frees the grant. */
static void pbx_core_grant_acked(pbx_core_ctx *ctx, uint32_t g,
                                 pbx_core_event event)
{
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    if (gr->link.state != (uint16_t)PBX_CORE_ST_SETTLE) {
        pbx_core_grant_retire(ctx, g, event);
        return;
    }
    pbx_core_grant_move(ctx, g, event);
    uint32_t i = gr->request;
    if (event == PBX_CORE_EV_RETIRED && i != PBX_CORE_NIL &&
        pbx_core_req(ctx, i)->link.live != 0U &&
        pbx_core_req(ctx, i)->link.generation == gr->request_generation &&
        pbx_core_req(ctx, i)->grant == g &&
        pbx_core_req(ctx, i)->link.state == (uint16_t)PBX_CORE_ST_RELEASE &&
        pbx_core_req(ctx, i)->link.queue == 0U &&
        pbx_core_req(ctx, i)->call == PBX_CORE_NIL) {
        /* Revoked and retired: a request waiting to release may publish
         * its decision; only the REMOVE row is still owed. */
        pbx_core_enqueue(ctx, PBX_CORE_Q_RELEASE, i);
    }
}

/* Whether grant g's request still holds its own copy of the object, not
 * yet sent back to vfsd: the grant's RETIRE must not overtake that DETACH
 * (one route, delivered in order). */
static bool pbx_core_grant_copy_held(const pbx_core_ctx *ctx, uint32_t g)
{
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    uint32_t i = gr->request;
    if (i == PBX_CORE_NIL) {
        return false;
    }
    const pbx_core_request *r = pbx_core_req(ctx, i);
    return r->link.live != 0U && r->link.generation == gr->request_generation &&
           r->grant == g && pbx_core_tslot_held(ctx, r->object_tslot);
}

void pbx_core_grant_copy_gone(pbx_core_ctx *ctx, uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    uint32_t g = r->grant;
    if (g == PBX_CORE_NIL || pbx_core_tslot_held(ctx, r->object_tslot)) {
        return;
    }
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    if ((gr->link.state == (uint16_t)PBX_CORE_ST_SETTLE ||
         gr->link.state == (uint16_t)PBX_CORE_ST_RETIRE) &&
        gr->call_retire == PBX_CORE_NIL && gr->link.queue == 0U) {
        pbx_core_enqueue(ctx, PBX_CORE_Q_GRANT, g);
    }
}

/* Both REMOVE and RETIRE may be owed; they go out together and neither
 * waits for the other, because once a runtime alias is exported vfsd's
 * retirement is the only revocation there is, and a silent ttyd must not
 * keep it alive. A row that never went to ttyd is known absent there: no
 * REMOVE is owed. RETIRE is sent last, so that when both meet
 * backpressure the grant waits on vfsd, the revocation. */
static pbx_err pbx_core_grant_settle(pbx_core_ctx *ctx, uint32_t g)
{
    pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    pbx_core_state st = (pbx_core_state)gr->link.state;
    bool owe_remove = st != PBX_CORE_ST_RETIRE;
    bool owe_retire = st != PBX_CORE_ST_REMOVE;
    if (owe_remove && (gr->flags & PBX_CORE_GRANT_F_ROW) == 0U) {
        pbx_core_grant_acked(ctx, g, PBX_CORE_EV_REMOVED);
        if (!owe_retire) {
            return PBX_OK; /* Freed. */
        }
        owe_remove = false;
    }
    if (owe_remove && gr->call_remove == PBX_CORE_NIL) {
        pbx_core_remove_send(ctx, g);
    }
    if (owe_retire && gr->call_retire == PBX_CORE_NIL &&
        !pbx_core_grant_copy_held(ctx, g)) {
        pbx_ipc_retire q = pbx_core_grant_retirement(ctx, g);
        pbx_core_retire_send(
            ctx, pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g), &q,
            PBX_CORE_CALL_RETIRE, PBX_BOOTSTRAP_POOL_GRANTS, g);
    }
    return PBX_OK;
}

pbx_err pbx_core_grant_step(pbx_core_ctx *ctx, uint32_t g)
{
    pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    switch ((pbx_core_state)gr->link.state) {
    case PBX_CORE_ST_LIVE:
        /* Only a row owed to a returned ttyd brings a live grant here. */
        if ((gr->flags & PBX_CORE_GRANT_F_RESYNC) == 0U ||
            gr->call_remove != PBX_CORE_NIL) {
            return PBX_E_CORE_INCONSISTENT;
        }
        pbx_core_resync_step(ctx, g);
        return PBX_OK;
    case PBX_CORE_ST_REVOKE:
        return pbx_core_grant_revoke(ctx, g);
    case PBX_CORE_ST_SETTLE:
    case PBX_CORE_ST_REMOVE:
    case PBX_CORE_ST_RETIRE:
        return pbx_core_grant_settle(ctx, g);
    default:
        /* A grant on the cleanup lane in any other state means the
         * records disagree: retained progression cannot continue. */
        return PBX_E_CORE_INCONSISTENT;
    }
}

/* Judges a REMOVE or RETIRE acknowledgement (c NULL: none came) of grant
 * g: only the exact one counts; anything else asks again on a later tick,
 * never abandoning the cleanup. */
pbx_err pbx_core_judge_grant(pbx_core_ctx *ctx, uint32_t kind, uint32_t g,
                             const pbx_core_call *c)
{
    bool remove = kind == (uint32_t)PBX_CORE_CALL_REMOVE;
    bool exact = false;
    if (remove) {
        exact = pbx_core_view_exact(ctx, g, PBX_IPC_VIEW_REMOVE, c);
    } else {
        pbx_ipc_retire q = pbx_core_grant_retirement(ctx, g);
        exact = pbx_core_retire_exact(
            c, pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g), &q);
    }
    if (c != NULL && pbx_core_drop_receipts(ctx, c, 0, PBX_CORE_NIL) ==
                         PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (!exact) {
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        return PBX_OK;
    }
    pbx_core_grant_acked(ctx, g,
                         remove ? PBX_CORE_EV_REMOVED : PBX_CORE_EV_RETIRED);
    return PBX_OK;
}

void pbx_core_resync_step(pbx_core_ctx *ctx, uint32_t g)
{
    pbx_core_call c;
    size_t n = pbx_core_view_encode(ctx, g, PBX_IPC_VIEW_ACTIVE);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_TTYD, n);
    pbx_core_call_spec spec = {PBX_CORE_CALL_RESYNC,
                               PBX_BOOTSTRAP_TIME_TTYD,
                               PBX_BOOTSTRAP_POOL_GRANTS,
                               g,
                               PBX_IPC_OP_VIEW,
                               pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g)};
    if (pbx_core_call_send(ctx, &c, &spec) == PBX_CORE_IO_FAILED) {
        /* Asked again on a later tick, as a REMOVE would be. */
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
    }
}

pbx_err pbx_core_resync_judge(pbx_core_ctx *ctx, uint32_t kind, uint32_t g,
                              const pbx_core_call *c)
{
    (void)kind;
    pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    bool exact = pbx_core_view_exact(ctx, g, PBX_IPC_VIEW_ACTIVE, c);
    if (c != NULL && pbx_core_drop_receipts(ctx, c, 0, PBX_CORE_NIL) ==
                         PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (exact) {
        gr->flags &= (uint16_t)~PBX_CORE_GRANT_F_RESYNC;
        return PBX_OK;
    }
    /* The grant is LIVE: ending it cancels this call first. */
    pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
    return PBX_OK;
}
