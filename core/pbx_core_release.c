/*
 * pbx_core_release.c: release of a terminal request's authority, in the
 * seed's order: withdraw a prompt that may still show, give powerboxd's
 * own object copy back (DETACH), end an unpublished grant, delete the
 * scope or a refused handle, retire an object a refused or lost INSTALL
 * may have placed, and only then publish the decision. Each call it
 * makes is split-phase; its judge brings the request back.
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
    if ((r->flags & PBX_CORE_REQ_F_ABANDONED) != 0U) {
        /* Its caller left with launchd's broker: nobody can read the
         * decision, which carries nothing (the broker's loss ended its
         * grant before approval), so it counts as delivered. */
        pbx_core_req_move(ctx, i, PBX_CORE_EV_DELIVERED);
    }
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
        /* ttyd's route refused it (or is gone): nothing can show the
         * prompt any more through it; the release goes on. Backpressure
         * waits for the route instead: the installed grant, if any, was
         * revoked before this step, so only the decision waits. */
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
    if (r->outcome != (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
        r->grant != PBX_CORE_NIL &&
        pbx_core_grant_at(ctx, r->grant)->link.state ==
            (uint16_t)PBX_CORE_ST_LIVE) {
        /* An installed grant that never became visible is revoked first,
         * at once: nothing below (a prompt to withdraw, a copy to give
         * back) may delay the revocation. Its RETIRE waits only until this
         * request's own copy has gone back to vfsd. */
        pbx_core_grant_end(ctx, r->grant, PBX_CORE_EV_CANCEL);
    }
    if ((r->flags & PBX_CORE_REQ_F_PROMPT) != 0U &&
        pbx_core_withdraw_send(ctx, i)) {
        return PBX_OK;
    }
    if (pbx_core_tslot_held(ctx, r->object_tslot)) {
        /* powerboxd's own copy goes back to vfsd before the unpublished
         * grant's RETIRE is sent, so vfsd always sees DETACH before the
         * RETIRE of the same object (one route, delivered in order). */
        bool wait = true;
        pbx_err err = pbx_core_release_object(ctx, i, &wait);
        pbx_core_grant_copy_gone(ctx, i);
        if (err != PBX_OK || wait) {
            return err;
        }
    }
    if (r->outcome != (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
        r->grant != PBX_CORE_NIL &&
        pbx_core_grant_at(ctx, r->grant)->link.state !=
            (uint16_t)PBX_CORE_ST_FREE &&
        pbx_core_grant_at(ctx, r->grant)->link.state !=
            (uint16_t)PBX_CORE_ST_REMOVE) {
        /* The unpublished grant's revocation and retirement at vfsd put
         * this request back in the lane. Only ttyd's REMOVE may still be
         * owed then: it holds no capability, so the decision does not
         * wait for it. */
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

/* Judges a release call of request i (c NULL: none came). */
pbx_err pbx_core_release_judge(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                               const pbx_core_call *c)
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
    pbx_core_prompt_give(ctx, i);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_DECISIONS, r->decision);
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_NOTIFICATIONS, r->notification);
    r->link.state = (uint16_t)PBX_CORE_ST_FREE;
    pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
}
