/*
 * pbx_core_progress.c: one transition per retained request step, through
 * scoped resolution, session policy, the deferred trusted prompt, grant
 * installation (or runtime alias derivation), detach and the ACTIVE view.
 * Each step that calls a peer sends its call and returns; the matched
 * reply, or its absence at the deadline, comes back to the step's judge
 * (pbx_core_progress_judge), so no request ever waits on another's call.
 */
#include "core/pbx_core_peer.h"

/* Ends request i on a denial-class outcome, saying why (pbx_ipc_reason). */
static void pbx_core_deny(pbx_core_ctx *ctx, uint32_t i, uint16_t reason)
{
    pbx_core_req(ctx, i)->reason = reason;
    pbx_core_req_terminate(ctx, i, PBX_CORE_EV_DENY, PBX_IPC_OUTCOME_DENIED);
}

/* The denial reason when a call's answer is missing (c NULL: deadline or
 * lost route) or unusable. */
static uint16_t pbx_core_no_answer(const pbx_core_call *c)
{
    return c == NULL ? (uint16_t)PBX_IPC_REASON_PEER_TIMEOUT
                     : (uint16_t)PBX_IPC_REASON_PEER_FAILED;
}

/* Moves request i by event and puts it back on the intake lane. */
static void pbx_core_advance(pbx_core_ctx *ctx, uint32_t i, pbx_core_event ev)
{
    pbx_core_req_move(ctx, i, ev);
    pbx_core_req(ctx, i)->parked_route = PBX_CORE_NIL;
    pbx_core_enqueue(ctx, PBX_CORE_Q_INTAKE, i);
}

/* Sends c for request i as kind, with the request's identity, in
 * deadline class clazz. OK: outstanding; BUSY: request i is queued to
 * try again; FAILED: nothing left powerboxd and the request is denied. */
static pbx_core_io pbx_core_req_send(pbx_core_ctx *ctx, uint32_t i,
                                     pbx_core_call *c, uint32_t kind,
                                     uint32_t clazz, uint16_t op)
{
    pbx_core_call_spec spec = {
        kind, clazz, PBX_BOOTSTRAP_POOL_REQUESTS,
        i,    op,    pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i)};
    pbx_core_io io = pbx_core_call_send(ctx, c, &spec);
    if (io == PBX_CORE_IO_FAILED) {
        pbx_core_deny(ctx, i, PBX_IPC_REASON_PEER_FAILED);
    }
    return io;
}

/* The committed scope's identity as the ops layer reports it (0: unknown,
 * which keeps the binding to operation, class, digest and object). */
static uint64_t pbx_core_scope_identity(const pbx_core_ctx *ctx,
                                        const pbx_core_request *r)
{
    if (ctx->identity == NULL) {
        return 0U;
    }
    return ctx->identity(ctx->ops_user,
                         pbx_core_tslot_at(ctx, r->scope_tslot)->slot);
}

/* Judges a RESOLVE reply and binds the evidence; returns the event. */
static pbx_core_event pbx_core_resolve_judge(pbx_core_ctx *ctx, uint32_t i,
                                             const pbx_core_call *c)
{
    pbx_ipc_frame f;
    pbx_ipc_resolve_reply rr;
    const pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
#ifdef PBX_PLANT_NOT_FOUND_ANY_CLASS
    /* PLANTED BUG (simulator proof only): a NOT_FOUND whose missing-object
     * class differs from the request's is taken as exact. */
    if (pbx_core_reply_frame(c, PBX_IPC_OP_RESOLVE, id, &f) == PBX_OK &&
        pbx_ipc_resolve_reply_decode(&f, &rr) == PBX_OK &&
        rr.result == (uint8_t)PBX_IPC_RESOLVE_NOT_FOUND &&
        rr.operation == r->ctx.ctx.operation) {
        return PBX_CORE_EV_NOT_FOUND;
    }
#endif
    uint64_t scope = pbx_core_scope_identity(ctx, r);
    if (pbx_core_reply_frame(c, PBX_IPC_OP_RESOLVE, id, &f) != PBX_OK ||
        pbx_ipc_resolve_reply_decode(&f, &rr) != PBX_OK ||
        rr.operation != r->ctx.ctx.operation ||
        !pbx_mem_equal(rr.selector_digest, r->ctx.selector_digest,
                       PBX_IPC_DIGEST_BYTES) ||
        rr.object_class != r->ctx.ctx.object_class) {
        return PBX_CORE_EV_DENY;
    }
    pbx_core_resolution *ev = (pbx_core_resolution *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution);
    ev->operation = rr.operation;
    ev->object_class = rr.object_class;
    ev->scope_id = rr.scope_id;
    ev->object = rr.object;
    pbx_mem_copy(ev->selector_digest, rr.selector_digest, PBX_IPC_DIGEST_BYTES);
    if (rr.result == (uint8_t)PBX_IPC_RESOLVE_NOT_FOUND) {
        ev->not_found = 1U;
        ev->missing_class = rr.object_class;
        return PBX_CORE_EV_NOT_FOUND;
    }
    /* A FOUND object is bound to the committed scope's identity when the
     * ops layer knows it (a NOT_FOUND carries none on the wire). */
#ifdef PBX_PLANT_SCOPE_UNBOUND
    /* PLANTED BUG (simulator proof only): the committed scope's identity
     * is ignored, so a FOUND naming another scope is accepted. */
    (void)scope;
#else
    if (scope != 0U && rr.scope_id != scope) {
        return PBX_CORE_EV_DENY;
    }
#endif
    if (rr.result != (uint8_t)PBX_IPC_RESOLVE_FOUND ||
        !pbx_core_receipt_ok(ctx, c->recv_slots[0],
                             PBX_CAPABI_RECEIPT_OBJECT)) {
        return PBX_CORE_EV_DENY;
    }
    return PBX_CORE_EV_RESOLVED;
}

static pbx_err pbx_core_step_resolve(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    uint8_t sel[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    pbx_ipc_resolve q = {r->ctx.ctx.operation,
                         r->ctx.ctx.object_class,
                         r->ctx.selector_len,
                         {0},
                         sel};
    size_t n = 0;
    pbx_core_call c;
    pbx_core_selector_copy(ctx, r, sel, sizeof(sel));
    pbx_mem_copy(q.selector_digest, r->ctx.selector_digest,
                 PBX_IPC_DIGEST_BYTES);
    pbx_err err =
        pbx_ipc_resolve_encode(pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i),
                               &q, ctx->frame, sizeof(ctx->frame), &n);
    PBX_ASSERT(err == PBX_OK);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_SCOPE, n);
    /* Resolution goes only through the committed scope. */
    c.via_slot = pbx_core_tslot_at(ctx, r->scope_tslot)->slot;
    (void)pbx_core_req_send(ctx, i, &c, PBX_CORE_CALL_RESOLVE,
                            PBX_BOOTSTRAP_TIME_SCOPE, PBX_IPC_OP_RESOLVE);
    return PBX_OK;
}

/* Judges RESOLVE's reply (c NULL: none came) for request i. */
static pbx_err pbx_core_judge_resolve(pbx_core_ctx *ctx, uint32_t i,
                                      const pbx_core_call *c)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_event ev =
        c != NULL ? pbx_core_resolve_judge(ctx, i, c) : PBX_CORE_EV_DENY;
#ifdef PBX_PLANT_NOT_FOUND_ON_TRANSPORT
    /* PLANTED BUG (simulator proof only): transport absence reported as
     * NOT_FOUND. */
    ev = c == NULL ? PBX_CORE_EV_NOT_FOUND : ev;
#endif
    size_t keep = ev == PBX_CORE_EV_RESOLVED ? 1U : 0U;
    if (keep == 1U) {
        pbx_core_tslot_hold(ctx, r->object_tslot, c->recv_slots[0],
                            PBX_CAPABI_RECEIPT_OBJECT);
    }
    if (c != NULL &&
        pbx_core_drop_receipts(ctx, c, keep, i) == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (ev == PBX_CORE_EV_RESOLVED) {
        pbx_core_advance(ctx, i, ev);
    } else if (ev == PBX_CORE_EV_NOT_FOUND) {
        pbx_core_req_terminate(ctx, i, ev, PBX_IPC_OUTCOME_NOT_FOUND);
    } else {
        pbx_core_deny(ctx, i,
                      c == NULL ? (uint16_t)PBX_IPC_REASON_PEER_TIMEOUT
                                : (uint16_t)PBX_IPC_REASON_RESOLVE);
    }
    return PBX_OK;
}

/* Fills the object identity of request i's resolution. */
static pbx_ipc_object pbx_core_req_object(const pbx_core_ctx *ctx,
                                          const pbx_core_request *r)
{
    return ((const pbx_core_resolution *)pbx_core_rec(
                ctx, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution))
        ->object;
}

/* Opens request i's prompt record: the exact request and object to show,
 * no RETRY yet, no answer yet. */
static void pbx_core_prompt_open(pbx_core_ctx *ctx, uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_prompt *p = (pbx_core_prompt *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
    p->object = pbx_core_req_object(ctx, r);
    p->request = i;
    p->request_generation = r->link.generation;
    p->retries = 0U;
    p->answer = 0U;
}

/* Whether the retained policy and prompt records of request i show why it
 * may be installed: a routine ALLOW, or the user's exact APPROVE of this
 * request generation and object. Checked again right before authority is
 * installed, so an exceptional request can never pass on policy alone. */
static bool pbx_core_allow_evidence(const pbx_core_ctx *ctx, uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    uint32_t gen = r->link.generation;
    const pbx_core_policy *p = (const pbx_core_policy *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_POLICIES, r->policy);
    const pbx_core_prompt *q = (const pbx_core_prompt *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
    pbx_ipc_object o = pbx_core_req_object(ctx, r);
    if (p->request != i || p->request_generation != gen) {
        return false;
    }
    if (p->verdict == (uint32_t)PBX_IPC_VERDICT_ALLOW && p->exceptional == 0U) {
        return true;
    }
    return p->verdict == (uint32_t)PBX_IPC_VERDICT_PROMPT && q->request == i &&
           q->request_generation == gen && q->object.id == o.id &&
           q->object.gen == o.gen &&
           q->answer == (uint32_t)PBX_IPC_ANSWER_APPROVE;
}

static pbx_err pbx_core_step_policy(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_policy q;
    pbx_mem_copy(&q.ctx, &r->ctx.ctx, sizeof(q.ctx));
    q.object = pbx_core_req_object(ctx, r);
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    size_t n = 0;
    pbx_core_call c;
    PBX_ASSERT(pbx_ipc_policy_encode(id, &q, ctx->frame, sizeof(ctx->frame),
                                     &n) == PBX_OK);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_TTYD, n);
    (void)pbx_core_req_send(ctx, i, &c, PBX_CORE_CALL_POLICY,
                            PBX_BOOTSTRAP_TIME_TTYD, PBX_IPC_OP_POLICY);
    return PBX_OK;
}

/* Judges POLICY's reply (c NULL: none came) for request i. */
static pbx_err pbx_core_judge_policy(pbx_core_ctx *ctx, uint32_t i,
                                     const pbx_core_call *c)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    pbx_ipc_frame f;
    pbx_ipc_policy_reply pr;
    uint16_t reason = pbx_core_no_answer(c);
    /* Routine or exceptional is the request's own launchd-authenticated
     * context, never ttyd's echo of it: the echo must match, but a wrong
     * echo alone can then never turn an exceptional request routine. */
    bool exceptional =
        r->ctx.ctx.urgency == (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL;
    pbx_core_event ev = PBX_CORE_EV_DENY;
    if (c != NULL &&
        pbx_core_reply_frame(c, PBX_IPC_OP_POLICY, id, &f) == PBX_OK &&
        pbx_ipc_policy_reply_decode(&f, &pr) == PBX_OK &&
        pr.urgency == r->ctx.ctx.urgency && pr.realm == r->ctx.ctx.realm &&
        pr.session == r->ctx.ctx.session) {
        reason = PBX_IPC_REASON_POLICY;
        /* Only a routine request may be allowed without a prompt. */
        if (pr.verdict == (uint8_t)PBX_IPC_VERDICT_ALLOW && !exceptional) {
            ev = PBX_CORE_EV_ALLOW;
        } else if (pr.verdict == (uint8_t)PBX_IPC_VERDICT_PROMPT) {
            ev = PBX_CORE_EV_PROMPT;
        }
#ifdef PBX_PLANT_EXCEPTIONAL_AUTO_ALLOW
        /* PLANTED BUG (simulator proof only): an exceptional request's
         * PROMPT verdict allowed without the user. */
        if (ev == PBX_CORE_EV_PROMPT && exceptional) {
            ev = PBX_CORE_EV_ALLOW;
        }
#endif
        pbx_core_policy *p = (pbx_core_policy *)pbx_core_rec(
            ctx, PBX_BOOTSTRAP_POOL_POLICIES, r->policy);
        p->request = i;
        p->request_generation = id.gen;
        p->verdict = pr.verdict;
        p->exceptional = exceptional ? 1U : 0U;
        if (ev == PBX_CORE_EV_PROMPT) {
            pbx_core_prompt_open(ctx, i);
        }
    }
    if (c != NULL &&
        pbx_core_drop_receipts(ctx, c, 0, i) == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (ev == PBX_CORE_EV_DENY) {
        pbx_core_deny(ctx, i, reason);
    } else {
        pbx_core_advance(ctx, i, ev);
    }
    return PBX_OK;
}

/* Checks every echo of a trusted prompt answer against request i. */
static bool pbx_core_answer_exact(const pbx_core_ctx *ctx, uint32_t i,
                                  const pbx_ipc_prompt_reply *a)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    pbx_ipc_object o = pbx_core_req_object(ctx, r);
    return a->session == r->ctx.ctx.session && a->realm == r->ctx.ctx.realm &&
           a->job_id == r->ctx.ctx.job_id && a->job_gen == r->ctx.ctx.job_gen &&
           a->request.index == id.index && a->request.gen == id.gen &&
           a->object.id == o.id && a->object.gen == o.gen;
}

static pbx_err pbx_core_step_prompt(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    uint8_t sel[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    pbx_ipc_prompt q;
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    size_t n = 0;
    pbx_core_call c;
    pbx_mem_copy(&q.ctx, &r->ctx.ctx, sizeof(q.ctx));
    pbx_mem_copy(&q.label, &r->ctx.label, sizeof(q.label));
    q.object = pbx_core_req_object(ctx, r);
    q.selector_len = r->ctx.selector_len;
    q.selector = sel;
    pbx_core_selector_copy(ctx, r, sel, sizeof(sel));
    pbx_mem_copy(q.selector_digest, r->ctx.selector_digest,
                 PBX_IPC_DIGEST_BYTES);
    PBX_ASSERT(pbx_ipc_prompt_encode(id, &q, ctx->frame, sizeof(ctx->frame),
                                     &n) == PBX_OK);
    pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_TTYD, n);
    if (pbx_core_req_send(ctx, i, &c, PBX_CORE_CALL_PROMPT,
                          PBX_BOOTSTRAP_TIME_PROMPT,
                          PBX_IPC_OP_PROMPT) == PBX_CORE_IO_OK) {
        /* ttyd may show it from now on until an exact answer: a request
         * that ends otherwise withdraws it. */
        r->flags |= PBX_CORE_REQ_F_PROMPT;
    }
    return PBX_OK;
}

/* Judges PROMPT's reply (c NULL: none came before the deadline: the
 * request ends DENIED, saying the prompt timed out) for request i. */
static pbx_err pbx_core_judge_prompt(pbx_core_ctx *ctx, uint32_t i,
                                     const pbx_core_call *c)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    pbx_ipc_frame f;
    pbx_ipc_prompt_reply a;
    uint16_t reason = c == NULL ? (uint16_t)PBX_IPC_REASON_PROMPT_TIMEOUT
                                : (uint16_t)PBX_IPC_REASON_PEER_FAILED;
    pbx_core_event ev = PBX_CORE_EV_DENY;
    if (c != NULL &&
        pbx_core_reply_frame(c, PBX_IPC_OP_PROMPT, id, &f) == PBX_OK &&
        pbx_ipc_prompt_reply_decode(&f, &a) == PBX_OK) {
        if (a.retry) {
            ev = PBX_CORE_EV_RETRY;
        } else if (pbx_core_answer_exact(ctx, i, &a)) {
            ((pbx_core_prompt *)pbx_core_rec(ctx, PBX_BOOTSTRAP_POOL_PROMPTS,
                                             r->prompt))
                ->answer = a.answer;
            /* An exact answer: the prompt is no longer showing. */
            r->flags &= (uint16_t)~PBX_CORE_REQ_F_PROMPT;
            reason = PBX_IPC_REASON_USER;
            ev = a.answer == (uint8_t)PBX_IPC_ANSWER_APPROVE ? PBX_CORE_EV_ALLOW
                                                             : PBX_CORE_EV_DENY;
        }
    }
    if (c != NULL &&
        pbx_core_drop_receipts(ctx, c, 0, i) == PBX_CORE_DELETE_REJECTED) {
        return PBX_E_CORE_CLEANUP_REJECTED;
    }
    if (ev == PBX_CORE_EV_RETRY) {
        /* Keep the exact request; ask again on a later tick (ttyd took
         * the call, so its route is writable and writability would ask
         * again at once). */
        pbx_core_prompt *p = (pbx_core_prompt *)pbx_core_rec(
            ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
        p->retries = p->retries == UINT32_MAX ? p->retries : p->retries + 1U;
        r->flags &= (uint16_t)~PBX_CORE_REQ_F_PROMPT;
        pbx_core_req_move(ctx, i, ev);
        pbx_core_defer(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    } else if (ev == PBX_CORE_EV_ALLOW) {
        pbx_core_advance(ctx, i, ev);
    } else {
        pbx_core_deny(ctx, i, reason);
    }
    return PBX_OK;
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

static pbx_err pbx_core_step_install(pbx_core_ctx *ctx, uint32_t i)
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
static pbx_err pbx_core_judge_install(pbx_core_ctx *ctx, uint32_t i,
                                      const pbx_core_call *c)
{
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
static pbx_err pbx_core_step_alias(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    uint32_t alias = PBX_CORE_SLOT_NONE;
    pbx_core_io io = ctx->ops->alias_derive(
        ctx->ops_user, pbx_core_tslot_at(ctx, r->object_tslot)->slot, &alias);
    if (io == PBX_CORE_IO_BUSY) {
        pbx_core_park(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i, PBX_CORE_ROUTE_VFSD);
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
static pbx_err pbx_core_step_activate(pbx_core_ctx *ctx, uint32_t i)
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
static pbx_err pbx_core_judge_activate(pbx_core_ctx *ctx, uint32_t i,
                                       const pbx_core_call *c)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    bool acked = pbx_core_view_exact(ctx, r->grant, PBX_IPC_VIEW_ACTIVE, c);
#ifdef PBX_PLANT_APPROVE_BEFORE_ACTIVE
    /* PLANTED BUG (simulator proof only): approve without ttyd's ACTIVE
     * acknowledgement. */
    acked = c != NULL;
#endif
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
static pbx_err pbx_core_step_detach(pbx_core_ctx *ctx, uint32_t i)
{
    if (pbx_core_detach_send(ctx, i, PBX_CORE_CALL_DETACH) ==
        PBX_CORE_IO_FAILED) {
        pbx_core_deny(ctx, i, PBX_IPC_REASON_PEER_FAILED);
    }
    return PBX_OK;
}

/* Judges the DETACH acknowledgement (c NULL: none came) for request i:
 * the object already left powerboxd with the call. */
static pbx_err pbx_core_judge_detach(pbx_core_ctx *ctx, uint32_t i,
                                     const pbx_core_call *c)
{
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

pbx_err pbx_core_progress_judge(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                                const pbx_core_call *c)
{
    switch ((pbx_core_call_kind)kind) {
    case PBX_CORE_CALL_RESOLVE:
        return pbx_core_judge_resolve(ctx, i, c);
    case PBX_CORE_CALL_POLICY:
        return pbx_core_judge_policy(ctx, i, c);
    case PBX_CORE_CALL_PROMPT:
        return pbx_core_judge_prompt(ctx, i, c);
    case PBX_CORE_CALL_INSTALL:
        return pbx_core_judge_install(ctx, i, c);
    case PBX_CORE_CALL_DETACH:
        return pbx_core_judge_detach(ctx, i, c);
    case PBX_CORE_CALL_ACTIVE:
        return pbx_core_judge_activate(ctx, i, c);
    default:
        return PBX_E_CORE_INCONSISTENT;
    }
}

pbx_err pbx_core_progress_step(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    if (r->call != PBX_CORE_NIL) {
        /* Woken while its own call is outstanding (an orphan deletion
         * finished, say): the call's judge brings it back. */
        return PBX_OK;
    }
    switch ((pbx_core_state)r->link.state) {
    case PBX_CORE_ST_RESOLVE:
        return pbx_core_step_resolve(ctx, i);
    case PBX_CORE_ST_POLICY:
        return pbx_core_step_policy(ctx, i);
    case PBX_CORE_ST_PROMPT:
        return pbx_core_step_prompt(ctx, i);
    case PBX_CORE_ST_INSTALL:
        if (!pbx_core_allow_evidence(ctx, i)) {
            /* Allowed without the evidence that allows it: the records
             * disagree, a classified progression fail-stop. */
            return PBX_E_CORE_INCONSISTENT;
        }
        return r->ctx.ctx.mode == (uint8_t)PBX_IPC_MODE_INSTALL
                   ? pbx_core_step_install(ctx, i)
                   : pbx_core_step_alias(ctx, i);
    case PBX_CORE_ST_DETACH:
        return pbx_core_step_detach(ctx, i);
    case PBX_CORE_ST_ACTIVATE:
        return pbx_core_step_activate(ctx, i);
    case PBX_CORE_ST_RELEASE:
        return pbx_core_release_step(ctx, i);
    case PBX_CORE_ST_OPEN:
        /* A request that waited for a call record in OPEN cannot exist:
         * OPEN sends nothing. */
    default:
        /* A request on a ready lane in a state no step serves means the
         * records disagree: a classified progression fail-stop. */
        return PBX_E_CORE_INCONSISTENT;
    }
}
