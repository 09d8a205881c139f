/*
 * pbx_core_install.c: installation at procd (or runtime alias
 * derivation), powerboxd's own object copy back to vfsd (DETACH), and the
 * ACTIVE row at ttyd, whose exact acknowledgement alone lets approval be
 * decided.
 */
#include "core/pbx_core_progress.h"

/* Whether the retained policy and prompt records of request i show why it
 * may be installed: a routine ALLOW, or the user's exact APPROVE of this
 * request generation and object. Checked again right before authority is
 * installed, so an exceptional request can never pass on policy alone. */
bool pbx_core_allow_evidence(const pbx_core_ctx *ctx, uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    uint32_t gen = r->link.generation;
    const pbx_core_policy *p = (const pbx_core_policy *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_POLICIES, r->policy);
    pbx_ipc_object o = pbx_core_req_object(ctx, r);
    if (p->request != i || p->request_generation != gen) {
        return false;
    }
    if (p->verdict == (uint32_t)PBX_IPC_VERDICT_ALLOW && p->exceptional == 0U) {
        return true;
    }
    if (r->prompt == PBX_CORE_NIL) {
        return false; /* No prompt record: no prompt was ever answered. */
    }
    const pbx_core_prompt *q = (const pbx_core_prompt *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
    return p->verdict == (uint32_t)PBX_IPC_VERDICT_PROMPT && q->request == i &&
           q->request_generation == gen && q->object.id == o.id &&
           q->object.gen == o.gen &&
           q->answer == (uint32_t)PBX_IPC_ANSWER_APPROVE;
}

/* Fills grant g from request i once its handle is held. */
static void pbx_core_grant_fill(pbx_core_ctx *ctx, uint32_t i,
                                uint32_t installed_slot)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_grant *g = pbx_core_grant_at(ctx, r->grant);
    const pbx_core_resolution *ev = (const pbx_core_resolution *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution);
    pbx_mem_copy(&g->ctx, &r->ctx, sizeof(g->ctx));
    g->object = ev->object;
    g->scope_id = ev->scope_id;
    g->installed_slot = installed_slot;
    g->request = i;
    g->request_generation = r->link.generation;
    g->caller_badge = r->caller_badge;
    g->end_reason = 0U;
    g->revocation_tslot = PBX_CORE_NIL;
    g->alias_tslot = PBX_CORE_NIL;
    if (r->ctx.ctx.mode == (uint8_t)PBX_IPC_MODE_INSTALL) {
        g->flags = PBX_CORE_GRANT_F_INSTALL;
        g->revocation_tslot = r->handle_tslot;
    } else {
        g->flags = 0U;
        g->alias_tslot = r->handle_tslot;
    }
    pbx_core_grant_move(ctx, r->grant, PBX_CORE_EV_INSTALLED);
}

/* Judges procd's INSTALL reply: a manage-only handle, never staging. */
static bool pbx_core_install_judge(pbx_core_ctx *ctx, uint32_t i,
                                   const pbx_core_call *c, uint32_t *slot)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    pbx_ipc_id gid = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, r->grant);
    pbx_ipc_frame f;
    pbx_ipc_install_reply ir;
    if (pbx_core_reply_frame(c, PBX_IPC_OP_INSTALL, id, &f) != PBX_OK ||
        pbx_ipc_install_reply_decode(&f, &ir) != PBX_OK ||
        ir.handle_kind != (uint8_t)PBX_IPC_HANDLE_MANAGE_ONLY ||
        ir.grant.index != gid.index || ir.grant.gen != gid.gen ||
        ir.installed_slot != r->ctx.target.slot ||
        ir.target_process_id != r->ctx.target.process_id ||
        ir.target_process_gen != r->ctx.target.process_gen ||
        !pbx_core_receipt_ok(ctx, c->recv_slots[0],
                             PBX_CAPABI_RECEIPT_REVOCATION)) {
        return false;
    }
    *slot = ir.installed_slot;
    return true;
}

pbx_err pbx_core_step_install(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_install q = {
        r->ctx.target, pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, r->grant),
        r->ctx.ctx.operation, r->ctx.ctx.object_class, r->ctx.ctx.lifetime};
    size_t n = 0;
    pbx_core_call c;
    PBX_ASSERT(pbx_ipc_install_encode(
                   pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i), &q,
                   ctx->frame, sizeof(ctx->frame), &n) == PBX_OK);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_PROCD, n);
    c.send_slot = pbx_core_tslot_at(ctx, r->object_tslot)->slot;
    c.send_copy = true;
    if (pbx_core_req_send(ctx, i, &c, PBX_CORE_CALL_INSTALL,
                          PBX_BOOTSTRAP_TIME_PROCD,
                          PBX_IPC_OP_INSTALL) == PBX_CORE_IO_OK) {
        /* The object went out: procd may install it whatever it answers,
         * or if no answer comes, and deleting a refused handle need not
         * cut that install. Until an exact handle is accepted, release
         * retires the object at vfsd, cutting every copy, before any
         * decision is published. */
        r->flags |= PBX_CORE_REQ_F_RETIRE;
    }
    return PBX_OK;
}

/* Judges INSTALL's reply (c NULL: none came) for request i. */
pbx_err pbx_core_judge_install(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                               const pbx_core_call *c)
{
    (void)kind;
    pbx_core_request *r = pbx_core_req(ctx, i);
    uint32_t slot = 0;
    bool ok = c != NULL && pbx_core_install_judge(ctx, i, c, &slot);
    if (ok) {
        pbx_core_tslot_hold(ctx, r->handle_tslot, c->recv_slots[0],
                            PBX_CAPABI_RECEIPT_REVOCATION);
    }
    if (c != NULL && pbx_core_drop_receipts(ctx, c, ok ? 1U : 0U, i) ==
                         PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (!ok) {
        pbx_core_deny(ctx, i, pbx_core_no_answer(c));
        return PBX_OK;
    }
    /* The grant's own cleanup (revoke, REMOVE, RETIRE) covers the object
     * from here on. */
    r->flags &= (uint16_t)~PBX_CORE_REQ_F_RETIRE;
    pbx_core_grant_fill(ctx, i, slot);
    pbx_core_advance(ctx, i, PBX_CORE_EV_INSTALLED);
    return PBX_OK;
}

/* Runtime-reply mode: derive the revocable alias exported once later. */
pbx_err pbx_core_step_alias(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    uint32_t alias = PBX_CORE_SLOT_NONE;
    pbx_core_io io = ctx->ops->alias_derive(
        ctx->ops_user, pbx_core_tslot_at(ctx, r->object_tslot)->slot, &alias);
    if (io == PBX_CORE_IO_BUSY) {
        /* No slot for the alias now: a local shortage, which no route's
         * writability ends, so it waits for a tick. */
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
        return PBX_OK;
    }
    if (io != PBX_CORE_IO_OK) {
        pbx_core_deny(ctx, i, PBX_IPC_REASON_PEER_FAILED);
        return PBX_OK;
    }
    pbx_core_tslot_hold(ctx, r->handle_tslot, alias, PBX_CAPABI_RECEIPT_ALIAS);
    if (!pbx_core_receipt_ok(ctx, alias, PBX_CAPABI_RECEIPT_ALIAS)) {
        if (pbx_core_delete_tslot(ctx, r->handle_tslot) ==
            PBX_CORE_DELETE_REJECTED) {
            return PBX_E_CORE_CLEANUP_REJECTED;
        }
        pbx_core_deny(ctx, i, PBX_IPC_REASON_PEER_FAILED);
        return PBX_OK;
    }
    pbx_core_grant_fill(ctx, i, 0U);
    pbx_core_advance(ctx, i, PBX_CORE_EV_INSTALLED);
    return PBX_OK;
}

/* Sends DETACH: powerboxd's own object copy goes back to vfsd (moved,
 * so once sent it is no longer held, whatever vfsd answers). kind says
 * whether progression (approval waits for the exact acknowledgement) or
 * release (only the move matters) sent it. */
pbx_core_io pbx_core_detach_send(pbx_core_ctx *ctx, uint32_t i, uint32_t kind)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_detach q = {pbx_core_req_object(ctx, r)};
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    size_t n = 0;
    pbx_core_call c;
    PBX_ASSERT(pbx_ipc_detach_encode(id, &q, ctx->frame, sizeof(ctx->frame),
                                     &n) == PBX_OK);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_VFSD, n);
    c.send_slot = pbx_core_tslot_at(ctx, r->object_tslot)->slot;
    pbx_core_call_spec spec = {
        kind, PBX_BOOTSTRAP_TIME_VFSD, PBX_BOOTSTRAP_POOL_REQUESTS,
        i,    PBX_IPC_OP_DETACH,       id};
    pbx_core_io io = pbx_core_call_send(ctx, &c, &spec);
    if (io == PBX_CORE_IO_OK) {
        /* The move happened: the slot is vfsd's now. */
        pbx_core_tslot_drop(ctx, r->object_tslot);
    }
    return io;
}

bool pbx_core_detach_exact(const pbx_core_ctx *ctx, uint32_t i,
                           const pbx_core_call *c)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_object o = pbx_core_req_object(ctx, r);
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    pbx_ipc_frame f;
    pbx_ipc_detach ack;
    return c != NULL &&
           pbx_core_reply_frame(c, PBX_IPC_OP_DETACH, id, &f) == PBX_OK &&
           pbx_ipc_detach_reply_decode(&f, &ack) == PBX_OK &&
           ack.object.id == o.id && ack.object.gen == o.gen;
}

/* Publishes (ACTIVE) or removes (REMOVE) grant g's full row at ttyd: the
 * frame goes to ctx->frame and its length is returned. */
size_t pbx_core_view_encode(pbx_core_ctx *ctx, uint32_t g, uint8_t kind)
{
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    pbx_ipc_view v;
    pbx_ipc_id gid = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
    size_t n = 0;
    v.kind = kind;
    v.grant = gid;
    pbx_mem_copy(&v.ctx, &gr->ctx.ctx, sizeof(v.ctx));
    v.object = gr->object;
    v.scope_id = gr->scope_id;
    v.target = gr->ctx.target;
    v.installed_slot = gr->installed_slot;
    pbx_mem_copy(v.selector_digest, gr->ctx.selector_digest,
                 PBX_IPC_DIGEST_BYTES);
    pbx_mem_copy(&v.label, &gr->ctx.label, sizeof(v.label));
    PBX_ASSERT(pbx_ipc_view_encode(gid, &v, ctx->frame, sizeof(ctx->frame),
                                   &n) == PBX_OK);
    return n;
}

bool pbx_core_view_exact(const pbx_core_ctx *ctx, uint32_t g, uint8_t kind,
                         const pbx_core_call *c)
{
    pbx_ipc_id gid = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
    pbx_ipc_frame f;
    pbx_ipc_view_ack ack;
    return c != NULL &&
           pbx_core_reply_frame(c, PBX_IPC_OP_VIEW, gid, &f) == PBX_OK &&
           pbx_ipc_view_reply_decode(&f, &ack) == PBX_OK && ack.kind == kind &&
           ack.grant.index == gid.index && ack.grant.gen == gid.gen;
}

/* Sends the ACTIVE row of request i's grant, under the grant identity. */
pbx_err pbx_core_step_activate(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_call c;
    size_t n = pbx_core_view_encode(ctx, r->grant, PBX_IPC_VIEW_ACTIVE);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_TTYD, n);
    pbx_core_call_spec spec = {
        PBX_CORE_CALL_ACTIVE,
        PBX_BOOTSTRAP_TIME_TTYD,
        PBX_BOOTSTRAP_POOL_REQUESTS,
        i,
        PBX_IPC_OP_VIEW,
        pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, r->grant)};
    pbx_core_io io = pbx_core_call_send(ctx, &c, &spec);
    if (io == PBX_CORE_IO_OK) {
        /* ttyd may show the row from now on: cleanup owes a REMOVE. */
        pbx_core_grant_at(ctx, r->grant)->flags |= PBX_CORE_GRANT_F_ROW;
    } else if (io == PBX_CORE_IO_FAILED) {
        pbx_core_deny(ctx, i, PBX_IPC_REASON_PEER_FAILED);
    }
    return PBX_OK;
}

/* Judges the ACTIVE acknowledgement (c NULL: none came) for request i. */
pbx_err pbx_core_judge_activate(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                                const pbx_core_call *c)
{
    (void)kind;
    pbx_core_request *r = pbx_core_req(ctx, i);
    bool acked = pbx_core_view_exact(ctx, r->grant, PBX_IPC_VIEW_ACTIVE, c);
    if (c != NULL &&
        pbx_core_drop_receipts(ctx, c, 0, i) == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (!acked) {
        pbx_core_deny(ctx, i, pbx_core_no_answer(c));
        return PBX_OK;
    }
    /* Only now, with the ACTIVE row acknowledged, may approval be
     * decided; it becomes visible when release publishes it. */
    pbx_core_req_terminate(ctx, i, PBX_CORE_EV_ACTIVE_ACK,
                           PBX_IPC_OUTCOME_APPROVED);
    return PBX_OK;
}

/* Approval needs vfsd's exact DETACH acknowledgement. FAILED (nothing
 * moved) denies; release then gives back or deletes the object copy and
 * ends the installed grant (revoke, REMOVE, RETIRE). */
pbx_err pbx_core_step_detach(pbx_core_ctx *ctx, uint32_t i)
{
    if (pbx_core_detach_send(ctx, i, PBX_CORE_CALL_DETACH) ==
        PBX_CORE_IO_FAILED) {
        pbx_core_deny(ctx, i, PBX_IPC_REASON_PEER_FAILED);
    }
    return PBX_OK;
}

/* Judges the DETACH acknowledgement (c NULL: none came) for request i:
 * the object already left powerboxd with the call. */
pbx_err pbx_core_judge_detach(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                              const pbx_core_call *c)
{
    (void)kind;
    bool exact = pbx_core_detach_exact(ctx, i, c);
    if (c != NULL &&
        pbx_core_drop_receipts(ctx, c, 0, i) == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (exact) {
        pbx_core_advance(ctx, i, PBX_CORE_EV_DETACHED);
    } else {
        pbx_core_deny(ctx, i, pbx_core_no_answer(c));
    }
    return PBX_OK;
}
