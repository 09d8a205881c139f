/*
 * pbx_core_resolve.c: scoped resolution (RESOLVE through the committed
 * scope, evidence bound to operation, class, digest, scope and object),
 * session policy (routine or exceptional from the request's own context)
 * and the trusted prompt (exact echoes; RETRY waits for a tick).
 */
#include "core/pbx_core_progress.h"

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
    if (scope != 0U && rr.scope_id != scope) {
        return PBX_CORE_EV_DENY;
    }
    if (rr.result != (uint8_t)PBX_IPC_RESOLVE_FOUND ||
        !pbx_core_receipt_ok(ctx, c->recv_slots[0],
                             PBX_CAPABI_RECEIPT_OBJECT)) {
        return PBX_CORE_EV_DENY;
    }
    return PBX_CORE_EV_RESOLVED;
}

pbx_err pbx_core_step_resolve(pbx_core_ctx *ctx, uint32_t i)
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
pbx_err pbx_core_judge_resolve(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                               const pbx_core_call *c)
{
    (void)kind;
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_event ev =
        c != NULL ? pbx_core_resolve_judge(ctx, i, c) : PBX_CORE_EV_DENY;
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

pbx_err pbx_core_step_policy(pbx_core_ctx *ctx, uint32_t i)
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
pbx_err pbx_core_judge_policy(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                              const pbx_core_call *c)
{
    (void)kind;
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
        pbx_core_policy *p = (pbx_core_policy *)pbx_core_rec(
            ctx, PBX_BOOTSTRAP_POOL_POLICIES, r->policy);
        p->request = i;
        p->request_generation = id.gen;
        p->verdict = pr.verdict;
        p->exceptional = exceptional ? 1U : 0U;
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

size_t pbx_core_prompt_encode(pbx_core_ctx *ctx, uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    uint8_t sel[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    pbx_ipc_prompt q;
    pbx_ipc_id id = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    size_t n = 0;
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
    return n;
}

pbx_err pbx_core_step_prompt(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_call c;
    if (r->prompt == PBX_CORE_NIL && !pbx_core_prompt_take(ctx, i)) {
        /* No prompt record for it now: it waits, keeping everything it
         * holds, until one is freed (never polled, never dropped). */
        pbx_core_enqueue(ctx, PBX_CORE_Q_WAIT_PROMPT, i);
        ctx->prompt_waits += ctx->prompt_waits == UINT32_MAX ? 0U : 1U;
        return PBX_OK;
    }
    size_t n = pbx_core_prompt_encode(ctx, i);
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
pbx_err pbx_core_judge_prompt(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                              const pbx_core_call *c)
{
    (void)kind;
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

void pbx_core_prompts_resend(pbx_core_ctx *ctx)
{
    const pbx_core_queue *q =
        &ctx->queues[PBX_CORE_Q_CALLS + PBX_BOOTSTRAP_TIME_PROMPT];
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_CALLS].capacity;
    uint32_t o = q->head;
    /* Sending changes no queue: the walk sees each prompt call once. */
    for (uint32_t n = 0; n < cap && o != PBX_CORE_NIL; n++) {
        const pbx_core_outcall *oc = pbx_core_outcall_at(ctx, o);
        uint32_t i = oc->owner;
        pbx_core_call c;
        size_t len = pbx_core_prompt_encode(ctx, i);
        PBX_ASSERT(pbx_ipc_frame_set_seq(ctx->frame, len,
                                         pbx_core_call_seq(ctx, o)) == PBX_OK);
        pbx_core_call_init(ctx, &c, PBX_CORE_ROUTE_TTYD, len);
        if (ctx->ops->send(ctx->ops_user, &c) == PBX_CORE_IO_OK) {
            /* The new ttyd may show it until an exact answer. */
            pbx_core_req(ctx, i)->flags |= PBX_CORE_REQ_F_PROMPT;
        }
        o = oc->link.next;
    }
}
