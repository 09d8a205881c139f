/*
 * pbx_core_cleanup.c: release of request-owned authority, the grant
 * cleanup chain (revoke, then REMOVE and RETIRE independently), decision
 * wakes, delivery-driven retirement and the round-robin scheduler.
 */
#include "core/pbx_core_peer.h"

/* Releases the scope: delete a held one; prove a reserved one empty. */
static pbx_core_delete pbx_core_release_scope(pbx_core_ctx *ctx,
                                              pbx_core_request *r)
{
    pbx_core_tslot *t = pbx_core_tslot_at(ctx, r->scope_tslot);
    if (t->link.state == PBX_CORE_TSLOT_HELD) {
        /* The scope sits in the destination reserved at BEGIN: deleting
         * it leaves the reservation, which is released once proven empty
         * (the exact deletion is that proof). */
        uint32_t slot = t->slot;
        pbx_core_delete d = pbx_core_delete_tslot(ctx, r->scope_tslot);
        if (d == PBX_CORE_DELETE_OK) {
            ctx->ops->slot_release(ctx->ops_user, slot);
        }
        return d;
    }
    if (t->link.state == PBX_CORE_TSLOT_RESERVED) {
        pbx_capabi_observed obs;
        ctx->ops->slot_query(ctx->ops_user, t->slot, &obs);
        if (obs.kind != (uint32_t)PBX_CAPABI_KIND_EMPTY &&
            obs.kind != (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER) {
            /* A refused COMMIT receipt sits in the destination; the orphan
             * record that tracks it deletes it (deleting it here too would
             * track one slot twice). The reservation waits for that. */
            return PBX_CORE_DELETE_TRANSIENT;
        }
        ctx->ops->slot_release(ctx->ops_user, t->slot);
        t->link.state = PBX_CORE_TSLOT_IDLE;
        t->slot = PBX_CORE_SLOT_NONE;
    }
    return PBX_CORE_DELETE_OK;
}

/* Publishes request i's decision and queues its wake. */
static void pbx_core_publish(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_decision *d = (pbx_core_decision *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_DECISIONS, r->decision);
    pbx_core_notification *n = (pbx_core_notification *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_NOTIFICATIONS, r->notification);
    d->job_id = r->ctx.ctx.job_id;
    d->job_generation = r->ctx.ctx.job_gen;
    d->request = i;
    d->request_generation = r->link.generation;
    d->status = r->outcome;
    d->grant = PBX_CORE_NIL;
    d->grant_generation = 0U;
    d->installed_slot = 0U;
    if (r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED) {
        pbx_core_grant *g = pbx_core_grant_at(ctx, r->grant);
        d->grant = r->grant;
        d->grant_generation = g->link.generation;
        d->installed_slot = g->installed_slot;
        /* From here on consumption, expiry and cancellation end the grant
         * itself; before, they end it through this request. */
        g->flags |= PBX_CORE_GRANT_F_APPROVED;
    }
    n->decision = r->decision;
    n->request = i;
    pbx_core_req_move(ctx, i, PBX_CORE_EV_RELEASED);
    pbx_core_enqueue(ctx, PBX_CORE_Q_NOTIFY, r->notification);
}

/* Sends WITHDRAW for request i's prompt, which may be showing or queued
 * at ttyd: display hygiene, not authority, so a failure to send ends the
 * need for it. Returns true while the request waits for the answer. */
static bool pbx_core_withdraw_send(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_withdraw q = {((const pbx_core_prompt *)pbx_core_rec(
                               ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt))
                              ->object};
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    size_t n = 0;
    pbx_core_call c;
    PBX_ASSERT(pbx_ipc_withdraw_encode(id, &q, ctx->frame, sizeof(ctx->frame),
                                       &n) == PBX_OK);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_TTYD, n);
    pbx_core_call_spec spec = {
        PBX_CORE_CALL_WITHDRAW,      PBX_BOOTSTRAP_TIME_TTYD,
        PBX_BOOTSTRAP_POOL_REQUESTS, i,
        PBX_IPC_OP_WITHDRAW,         id};
    pbx_core_io io = pbx_core_call_send(ctx, &c, &spec);
    if (io == PBX_CORE_IO_FAILED) {
        r->flags &= (uint16_t)~PBX_CORE_REQ_F_PROMPT;
        return false;
    }
    return true;
}

/* Gives back (DETACH, moved) request i's object copy during release. A
 * send that failed moved nothing: the copy is deleted instead. Returns
 * PBX_OK with *wait true while the request waits (for the reply, a call
 * record, the route or a tick), or a fail-stop error. */
static pbx_err pbx_core_release_object(pbx_core_ctx *ctx, uint32_t i,
                                       bool *wait)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    *wait = true;
    pbx_core_io io = pbx_core_detach_send(ctx, i, PBX_CORE_CALL_RELEASE_DETACH);
    if (io != PBX_CORE_IO_FAILED) {
        return PBX_OK;
    }
    pbx_core_delete d = pbx_core_delete_tslot(ctx, r->object_tslot);
    if (d == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (d == PBX_CORE_DELETE_TRANSIENT) {
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
        return PBX_OK;
    }
    *wait = false;
    return PBX_OK;
}

pbx_err pbx_core_release_step(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_delete d = PBX_CORE_DELETE_OK;
    if ((r->flags & PBX_CORE_REQ_F_PROMPT) != 0U &&
        pbx_core_withdraw_send(ctx, i)) {
        return PBX_OK;
    }
    if (pbx_core_tslot_held(ctx, r->object_tslot)) {
        /* powerboxd's own copy goes back to vfsd before an unpublished
         * grant's cleanup starts, so vfsd always sees DETACH before the
         * RETIRE of the same object (one route, delivered in order). */
        bool wait = true;
        pbx_err err = pbx_core_release_object(ctx, i, &wait);
        if (err != PBX_OK || wait) {
            return err;
        }
    }
    if (r->outcome != (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
        r->grant != PBX_CORE_NIL &&
        pbx_core_grant_at(ctx, r->grant)->link.state !=
            (uint16_t)PBX_CORE_ST_FREE) {
        /* An installed grant that never became visible is cleaned up
         * next; its retirement puts this request back in the lane. */
        if (pbx_core_grant_at(ctx, r->grant)->link.state ==
            (uint16_t)PBX_CORE_ST_LIVE) {
            pbx_core_grant_end(ctx, r->grant, PBX_CORE_EV_CANCEL);
        }
        return PBX_OK;
    }
    if (r->grant == PBX_CORE_NIL ||
        r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED ||
        !pbx_core_tslot_held(ctx, r->handle_tslot)) {
        d = pbx_core_release_scope(ctx, r);
    } else {
        d = pbx_core_delete_tslot(ctx, r->handle_tslot);
    }
    if (d == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (d == PBX_CORE_DELETE_TRANSIENT) {
        /* A refused receipt of this request in the reservation: its
         * orphan's deletion puts the request back on this lane. Any other
         * deletion that could not finish is retried on the next tick. */
        if (r->orphans == 0U) {
            pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
        }
        return PBX_OK;
    }
    if (pbx_core_tslot_held(ctx, r->scope_tslot) ||
        pbx_core_tslot_at(ctx, r->scope_tslot)->link.state ==
            PBX_CORE_TSLOT_RESERVED) {
        pbx_core_enqueue(ctx, PBX_CORE_Q_RELEASE, i);
        return PBX_OK;
    }
    if (r->orphans != 0U) {
        /* Refused receipts that arrived for this request still await
         * deletion: the last one's deletion puts it back on this lane. */
        return PBX_OK;
    }
    if ((r->flags & PBX_CORE_REQ_F_RETIRE) != 0U) {
        /* Last, after the refused handle is gone (terminal cleanup order):
         * the object a refused or lost INSTALL may have placed is retired
         * at vfsd; the exact acknowledgement brings the request back. */
        pbx_core_req_retire_send(ctx, i);
        return PBX_OK;
    }
    pbx_core_publish(ctx, i);
    return PBX_OK;
}

/* Ends the withdrawal of grant g's request once the revocation authority
 * is gone: its CANCELLED decision becomes visible and a held wake goes. */
static void pbx_core_grant_withdrawn(pbx_core_ctx *ctx, uint32_t g)
{
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    uint32_t i = gr->request;
    if (i == PBX_CORE_NIL || pbx_core_req(ctx, i)->link.live == 0U ||
        pbx_core_req(ctx, i)->link.generation != gr->request_generation) {
        return;
    }
    pbx_core_request *r = pbx_core_req(ctx, i);
    if ((r->flags & PBX_CORE_REQ_F_WAKE_HELD) != 0U) {
        pbx_core_enqueue(ctx, PBX_CORE_Q_NOTIFY, r->notification);
    }
    r->flags &=
        (uint16_t) ~(PBX_CORE_REQ_F_WITHDRAWN | PBX_CORE_REQ_F_WAKE_HELD);
}

/* Deletes the grant's revocation authority (or unexported alias). */
static pbx_err pbx_core_grant_revoke(pbx_core_ctx *ctx, uint32_t g)
{
    pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    uint32_t t = (gr->flags & PBX_CORE_GRANT_F_INSTALL) != 0U
                     ? gr->revocation_tslot
                     : gr->alias_tslot;
    pbx_core_delete d = pbx_core_delete_tslot(ctx, t);
    if (d == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (d != PBX_CORE_DELETE_OK) {
        /* Retried on the next tick, never polled. */
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        return PBX_OK;
    }
    pbx_core_grant_move(ctx, g, PBX_CORE_EV_REVOKED);
    pbx_core_grant_withdrawn(ctx, g);
    pbx_core_enqueue(ctx, PBX_CORE_Q_GRANT, g);
    return PBX_OK;
}

/* Sends the receipt-free full-identity retirement q to vfsd under grant
 * identity gid, as call kind for owner (a request or a grant). */
static void pbx_core_retire_send(pbx_core_ctx *ctx, pbx_ipc_id gid,
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
static bool pbx_core_retire_exact(const pbx_core_call *c, pbx_ipc_id gid,
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

/* The retirement of the object of request i whose INSTALL was refused or
 * lost (procd may hold it), under the grant id the INSTALL named. */
static pbx_ipc_retire pbx_core_req_retirement(const pbx_core_ctx *ctx,
                                              uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    const pbx_core_resolution *ev = (const pbx_core_resolution *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution);
    pbx_ipc_retire q = {ev->object, ev->scope_id, r->ctx.ctx.object_class};
    return q;
}

void pbx_core_req_retire_send(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_ipc_retire q = pbx_core_req_retirement(ctx, i);
    pbx_core_retire_send(ctx,
                         pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS,
                                     pbx_core_req(ctx, i)->grant),
                         &q, PBX_CORE_CALL_REQ_RETIRE,
                         PBX_BOOTSTRAP_POOL_REQUESTS, i);
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
    if (pbx_core_grant_at(ctx, g)->link.state == (uint16_t)PBX_CORE_ST_SETTLE) {
        pbx_core_grant_move(ctx, g, event);
        return;
    }
    pbx_core_grant_retire(ctx, g, event);
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
    if (owe_retire && gr->call_retire == PBX_CORE_NIL) {
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
static pbx_err pbx_core_judge_grant(pbx_core_ctx *ctx, uint32_t kind,
                                    uint32_t g, const pbx_core_call *c)
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

/* Judges a release call of request i (c NULL: none came). */
static pbx_err pbx_core_judge_release(pbx_core_ctx *ctx, uint32_t kind,
                                      uint32_t i, const pbx_core_call *c)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    bool again = true;
    if (kind == (uint32_t)PBX_CORE_CALL_WITHDRAW) {
        /* Whatever ttyd answered, the prompt is no longer ours to show;
         * a late answer to it matches nothing. */
        r->flags &= (uint16_t)~PBX_CORE_REQ_F_PROMPT;
    } else if (kind == (uint32_t)PBX_CORE_CALL_REQ_RETIRE) {
        pbx_ipc_retire q = pbx_core_req_retirement(ctx, i);
        again = pbx_core_retire_exact(
            c, pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, r->grant), &q);
        if (again) {
            r->flags &= (uint16_t)~PBX_CORE_REQ_F_RETIRE;
        }
    }
    if (c != NULL &&
        pbx_core_drop_receipts(ctx, c, 0, i) == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (again) {
        pbx_core_dequeue(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
        pbx_core_enqueue(ctx, PBX_CORE_Q_RELEASE, i);
    } else {
        /* The decision is not published while the child may still hold
         * the object: asked again on a later tick. */
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    }
    return PBX_OK;
}

pbx_err pbx_core_cleanup_judge(pbx_core_ctx *ctx, uint32_t kind, uint32_t owner,
                               const pbx_core_call *c)
{
    switch ((pbx_core_call_kind)kind) {
    case PBX_CORE_CALL_REMOVE:
    case PBX_CORE_CALL_RETIRE:
        return pbx_core_judge_grant(ctx, kind, owner, c);
    case PBX_CORE_CALL_RELEASE_DETACH:
    case PBX_CORE_CALL_REQ_RETIRE:
    case PBX_CORE_CALL_WITHDRAW:
        return pbx_core_judge_release(ctx, kind, owner, c);
    default:
        return PBX_E_CORE_INCONSISTENT;
    }
}

void pbx_core_req_retire(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    /* A request retires only after its decision was delivered, long
     * after its last call ended. */
    PBX_ASSERT(r->call == PBX_CORE_NIL);
    pbx_core_chunks_give(ctx, r->selector_head, r->selector_chunks);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS, r->scope_tslot);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS, r->object_tslot);
    if (r->grant == PBX_CORE_NIL ||
        pbx_core_grant_at(ctx, r->grant)->link.state ==
            (uint16_t)PBX_CORE_ST_FREE) {
        /* No grant outlives the request: the handle slot goes too. */
        pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS, r->handle_tslot);
        if (r->grant != PBX_CORE_NIL) {
            pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_GRANTS, r->grant);
        }
    } else {
        pbx_core_grant_at(ctx, r->grant)->request = PBX_CORE_NIL;
    }
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_POLICIES, r->policy);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_DECISIONS, r->decision);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_NOTIFICATIONS, r->notification);
    r->link.state = (uint16_t)PBX_CORE_ST_FREE;
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
}

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
    if ((r->flags & PBX_CORE_REQ_F_WITHDRAWN) != 0U) {
        /* No wake for a decision being withdrawn; the grant's revocation
         * queues it again. */
        r->flags |= PBX_CORE_REQ_F_WAKE_HELD;
        return PBX_OK;
    }
    pbx_ipc_wake w = {r->ctx.ctx.job_id, r->ctx.ctx.job_gen};
    size_t len = 0;
    PBX_ASSERT(pbx_ipc_wake_encode(
                   pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i), &w,
                   ctx->frame, sizeof(ctx->frame), &len) == PBX_OK);
    pbx_core_io io = ctx->ops->wake(ctx->ops_user, ctx->frame, len);
    if (io == PBX_CORE_IO_BUSY) {
#ifdef PBX_PLANT_DROP_ON_NOTIFY_BUSY
        /* PLANTED BUG (simulator proof only): the wake is dropped under
         * backpressure instead of parked. */
        return PBX_OK;
#endif
        /* Retried when launchd's route is writable again, never polled. */
        pbx_core_enqueue(ctx, PBX_CORE_Q_PARK_NOTIFY, n);
        return PBX_OK;
    }
    if (io != PBX_CORE_IO_OK) {
        return pbx_core_fail(ctx, PBX_CORE_EXIT_NOTIFY,
                             PBX_E_CORE_NOTIFY_FAILED);
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
        r->grant != PBX_CORE_NIL &&
        pbx_core_tslot_held(ctx,
                            pbx_core_grant_at(ctx, r->grant)->alias_tslot)) {
        /* The alias left with the reply: exported exactly once. */
        pbx_core_tslot_drop(ctx, pbx_core_grant_at(ctx, r->grant)->alias_tslot);
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

bool pbx_core_expire_hits(const pbx_ipc_expire *e, const pbx_core_context *c)
{
    if (c->ctx.job_id != e->job_id || c->ctx.job_gen != e->job_gen) {
        return false;
    }
    /* An invocation's end ends everything bound to it: its invocation
     * grants and the one-shot grants made within it, whatever the mode. */
    return e->kind == (uint8_t)PBX_IPC_EXPIRE_JOB ||
           (c->ctx.lifetime != (uint8_t)PBX_IPC_LIFETIME_JOB &&
            c->invocation_id == e->invocation_id);
}

/* A request of the expired job (or invocation) still in flight ends
 * CANCELLED through the normal release path, so it can never be approved
 * after its scope ended. One whose grant is installed ends through that
 * grant at once (an unpublished approval turns CANCELLED before release
 * can publish it); any other has a decision that grants nothing. */
static void pbx_core_expire_request(pbx_core_ctx *ctx, const pbx_ipc_expire *e,
                                    uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    if (!pbx_core_expire_hits(e, &r->ctx)) {
        return;
    }
    if (r->grant != PBX_CORE_NIL &&
        pbx_core_grant_at(ctx, r->grant)->link.state ==
            (uint16_t)PBX_CORE_ST_LIVE) {
        pbx_core_grant_stop(ctx, r->grant, PBX_CORE_EV_EXPIRE);
        return;
    }
    if (pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST,
                          (pbx_core_state)r->link.state,
                          PBX_CORE_EV_CANCEL) != SIZE_MAX) {
        r->flags |= PBX_CORE_REQ_F_CANCELLED;
        pbx_core_req_terminate(ctx, i, PBX_CORE_EV_CANCEL,
                               PBX_IPC_OUTCOME_CANCELLED);
    }
}

/* Requests go first, then grants. Ending a request never frees or
 * unchains another request, and ending a grant unchains at most that
 * grant (the one being visited), so saving the successor before acting
 * keeps each walk on its chain. Every grant the request half stopped has
 * left LIVE and so the grant chain; one whose approval is unpublished is
 * still LIVE, and meeting it again changes nothing (its request is
 * already terminating). Each walk is bounded by the pool capacity. */
void pbx_core_expire(pbx_core_ctx *ctx, const pbx_ipc_expire *e)
{
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    uint32_t i = pbx_core_index_head(ctx, PBX_BOOTSTRAP_POOL_REQUESTS,
                                     e->job_id, e->job_gen);
    for (uint32_t n = 0; n < cap && i != PBX_CORE_NIL; n++) {
        uint32_t next =
            pbx_core_index_next(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
        pbx_core_expire_request(ctx, e, i);
        i = next;
    }
    cap = ctx->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    uint32_t g = pbx_core_index_head(ctx, PBX_BOOTSTRAP_POOL_GRANTS, e->job_id,
                                     e->job_gen);
    for (uint32_t n = 0; n < cap && g != PBX_CORE_NIL; n++) {
        uint32_t next = pbx_core_index_next(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        /* Every live grant of the job ends, including one whose approval
         * is not yet published: it must never be published past its
         * expiry. */
        if (pbx_core_expire_hits(e, &pbx_core_grant_at(ctx, g)->ctx)) {
            pbx_core_grant_stop(ctx, g, PBX_CORE_EV_EXPIRE);
        }
        g = next;
    }
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
