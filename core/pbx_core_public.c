/*
 * pbx_core_public.c: the one canonical public dispatch. Every frame goes
 * through pbx_ipc_frame_decode (which enforces the authority partition
 * table), every capability that arrives where none is accepted is deleted
 * before the reply, and a deletion failure takes precedence over the
 * operation's own status.
 */
#include "core/pbx_core_internal.h"
#include "sha2/pbx_sha2.h"

/* Records reserved per request at BEGIN so no later step can run out. */
#define PBX_CORE_BEGIN_TSLOTS 3U

/* Writes an error reply for op and request into out. */
static void pbx_core_reply_err(pbx_core_out *out, uint16_t op, pbx_ipc_id id,
                               pbx_err err)
{
    size_t n = 0;
    if (pbx_ipc_status_reply_encode(op, id, err, out->frame, sizeof(out->frame),
                                    &n) != PBX_OK) {
        n = 0;
    }
    out->len = n;
}

/* Writes an empty status-zero reply of op into out. */
static void pbx_core_reply_empty(pbx_core_out *out, uint16_t op, pbx_ipc_id id)
{
    size_t n = 0;
    pbx_err err = pbx_ipc_empty_encode((uint16_t)(op | PBX_IPC_REPLY_BIT), id,
                                       out->frame, sizeof(out->frame), &n);
    PBX_ASSERT(err == PBX_OK);
    out->len = n;
}

/* Deletes every slot in slots; a receipt whose deletion must be retried
 * is owned by request owner (or PBX_CORE_NIL) until it is gone. Returns
 * PBX_OK, CLEANUP_PENDING when some deletion failed for now, or
 * CLEANUP_REJECTED (a fail-stop). */
static pbx_err pbx_core_delete_all(pbx_core_ctx *ctx, const uint32_t *slots,
                                   size_t count, uint32_t owner)
{
    pbx_err result = PBX_OK;
    for (size_t i = 0; i < count; i++) {
        pbx_core_delete d = pbx_core_delete_slot(ctx, slots[i]);
        if (d == PBX_CORE_DELETE_TRANSIENT) {
            d = pbx_core_orphan(ctx, slots[i], owner, true);
            result = PBX_E_CORE_CLEANUP_PENDING;
        }
        if (d == PBX_CORE_DELETE_REJECTED) {
            return PBX_E_CORE_CLEANUP_REJECTED;
        }
    }
    return result;
}

/* Whether request i's decision is already published (NOTIFY or later). */
static bool pbx_core_req_published(const pbx_core_ctx *ctx, uint32_t i)
{
    uint16_t st = pbx_core_req(ctx, i)->link.state;
    return st == (uint16_t)PBX_CORE_ST_NOTIFY ||
           st == (uint16_t)PBX_CORE_ST_DECIDED ||
           st == (uint16_t)PBX_CORE_ST_DELIVERED;
}

/* Looks a request up by the header id and checks it belongs to badge.
 * The public endpoint gives one refusal, PBX_E_CORE_UNKNOWN, for an id
 * that names nothing (out of range, free, stale generation) and for a live
 * request that is not the caller's, so no holder of the endpoint learns
 * whether someone else's id is live (issue 20, item 3). */
static pbx_err pbx_core_find_req(const pbx_core_ctx *ctx, pbx_ipc_id id,
                                 uint32_t badge, uint32_t *index)
{
    pbx_err err = pbx_core_lookup(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, id, index);
    if (err != PBX_OK || pbx_core_req(ctx, *index)->caller_badge != badge) {
        return PBX_E_CORE_UNKNOWN;
    }
    return PBX_OK;
}

/* Whether badge may end what owner began: the owner itself, or launchd's
 * broker acting for the job. */
static bool pbx_core_owner_ok(uint32_t owner, uint32_t badge)
{
    return badge == owner || badge == PBX_CORE_BADGE_LAUNCHD;
}

/* Every record a request may need, so no later step can run short; all
 * but a prompt record, which only a request whose policy asks for a prompt
 * needs: it is taken then (pbx_core_prompt_take), and a request that finds
 * none waits for one keeping everything else (issue 20, item 4), so a
 * routine request never waits for storage only prompts need. */
static bool pbx_core_begin_space(const pbx_core_ctx *ctx, uint32_t chunks)
{
    static const pbx_bootstrap_pool one[] = {
        PBX_BOOTSTRAP_POOL_REQUESTS,    PBX_BOOTSTRAP_POOL_GRANTS,
        PBX_BOOTSTRAP_POOL_POLICIES,    PBX_BOOTSTRAP_POOL_DECISIONS,
        PBX_BOOTSTRAP_POOL_RESOLUTIONS, PBX_BOOTSTRAP_POOL_NOTIFICATIONS,
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(one); i++) {
        if (pbx_core_free_count(ctx, one[i]) == 0U) {
            return false;
        }
    }
    /* Besides its own records, BEGIN leaves the peer spare and one public
     * frame's headroom free: requests alone never hold public intake. */
    return pbx_core_free_count(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS) >=
               PBX_CORE_BEGIN_TSLOTS + PBX_CORE_TSLOT_SPARE +
                   PBX_CORE_TSLOT_PUBLIC &&
           ctx->chunk_free_count >= chunks;
}

/* Allocates an idle tslot owned by request index. */
static uint32_t pbx_core_tslot_new(pbx_core_ctx *ctx, uint32_t owner)
{
    uint32_t t = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS);
    pbx_core_tslot *ts = pbx_core_tslot_at(ctx, t);
    ts->link.state = PBX_CORE_TSLOT_IDLE;
    ts->owner = owner;
    ts->owner_kind = 0U;
    ts->slot = PBX_CORE_SLOT_NONE;
    ts->kind = 0U;
    return t;
}

/* Applies a checked BEGIN: takes every reserved record. */
static uint32_t pbx_core_begin_apply(pbx_core_ctx *ctx, const pbx_ipc_begin *b,
                                     uint32_t badge, uint32_t dest,
                                     uint32_t chunks)
{
    uint32_t i = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_REQUESTS);
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_mem_copy(&r->ctx, b, sizeof(r->ctx));
    r->caller_badge = badge;
    r->selector_received_bytes = 0U;
    r->selector_chunks = chunks;
    r->selector_head = pbx_core_chunks_take(ctx, chunks);
    r->selector_cursor = r->selector_head;
    r->scope_tslot = pbx_core_tslot_new(ctx, i);
    pbx_core_tslot *scope = pbx_core_tslot_at(ctx, r->scope_tslot);
    scope->slot = dest;
    scope->link.state = PBX_CORE_TSLOT_RESERVED;
    r->object_tslot = pbx_core_tslot_new(ctx, i);
    r->handle_tslot = pbx_core_tslot_new(ctx, i);
    r->resolution = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_RESOLUTIONS);
    r->policy = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_POLICIES);
    r->prompt = PBX_CORE_NIL; /* Taken only when a prompt is due. */
    r->grant = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_GRANTS);
    pbx_core_grant_at(ctx, r->grant)->caller_badge = badge;
    pbx_core_grant_at(ctx, r->grant)->call_remove = PBX_CORE_NIL;
    pbx_core_grant_at(ctx, r->grant)->call_retire = PBX_CORE_NIL;
    r->decision = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_DECISIONS);
    r->notification = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_NOTIFICATIONS);
    r->parked_route = PBX_CORE_NIL;
    r->orphans = 0U;
    r->call = PBX_CORE_NIL;
    r->outcome = 0U;
    r->flags = 0U;
    r->reason = 0U;
    r->reserved = 0U;
    r->open_deadline_ms = ctx->now_ms + ctx->open_ms;
    pbx_core_req_move(ctx, i, PBX_CORE_EV_BEGIN);
    /* The OPEN deadline bounds how long a caller that never commits holds
     * the reservation and the records taken here. */
    pbx_core_enqueue(ctx, PBX_CORE_Q_OPEN, i);
    return i;
}

/* Refuses a BEGIN no retry could serve: a request, in either mode, from
 * anyone but launchd's exact-job broker (only launchd can vouch for the
 * contextual body, job, session, realm and program entry, that policy,
 * the prompt and the grant row are bound to; and in runtime-reply mode it
 * delivers the exported alias to the blocked caller), or a selector larger
 * than all the deployment's selector storage (BUSY would promise a retry
 * that can never succeed). */
static pbx_err pbx_core_begin_check(const pbx_core_ctx *ctx, uint32_t badge,
                                    uint32_t chunks)
{
    if (badge != PBX_CORE_BADGE_LAUNCHD) {
        return PBX_E_CORE_BROKER;
    }
    if (chunks > ctx->chunk_count) {
        return PBX_E_CORE_SELECTOR_LENGTH;
    }
    return PBX_OK;
}

static void pbx_core_on_begin(pbx_core_ctx *ctx, const pbx_ipc_frame *f,
                              uint32_t badge, pbx_core_out *out)
{
    pbx_ipc_begin b;
    pbx_ipc_id zero = {0, 0};
    /* Zeroed first: pbx_core_begin_apply copies the whole record into the
     * arena, and the decoder writes only the entry and label bytes their
     * lengths cover (make eva: no stack bytes reach the arena). */
    pbx_mem_set(&b, 0, sizeof(b));
    pbx_err err = pbx_ipc_begin_decode(f, &b);
    if (err != PBX_OK) {
        pbx_core_reply_err(out, PBX_IPC_OP_BEGIN, zero, err);
        return;
    }
    uint32_t chunks = pbx_core_chunks_for(b.selector_len);
    uint32_t dest = PBX_CORE_SLOT_NONE;
    err = pbx_core_begin_check(ctx, badge, chunks);
    if (err != PBX_OK) {
        pbx_core_reply_err(out, PBX_IPC_OP_BEGIN, zero, err);
        return;
    }
    if (!pbx_core_begin_space(ctx, chunks) ||
        !ctx->ops->slot_reserve(ctx->ops_user, &dest)) {
        pbx_core_reply_err(out, PBX_IPC_OP_BEGIN, zero, PBX_E_CORE_BUSY);
        return;
    }
    uint32_t i = pbx_core_begin_apply(ctx, &b, badge, dest, chunks);
    pbx_ipc_begin_reply rep = {dest};
    size_t n = 0;
    err = pbx_ipc_begin_reply_encode(
        pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i), &rep, out->frame,
        sizeof(out->frame), &n);
    PBX_ASSERT(err == PBX_OK);
    out->len = n;
}

/* Stores len bytes at the request's cursor, advancing chunk by chunk. */
static void pbx_core_selector_store(pbx_core_ctx *ctx, pbx_core_request *r,
                                    const uint8_t *bytes, uint32_t len)
{
    uint32_t done = 0;
    for (uint32_t guard = 0; guard <= len && done < len; guard++) {
        uint32_t at =
            r->selector_received_bytes % PBX_CORE_SELECTOR_CHUNK_DATA_BYTES;
        uint32_t room = PBX_CORE_SELECTOR_CHUNK_DATA_BYTES - at;
        uint32_t n = len - done < room ? len - done : room;
        pbx_mem_copy(pbx_core_chunk_data(ctx, r->selector_cursor) + at,
                     bytes + done, n);
        done += n;
        r->selector_received_bytes += n;
        if (at + n == PBX_CORE_SELECTOR_CHUNK_DATA_BYTES &&
            r->selector_received_bytes < r->ctx.selector_len) {
            r->selector_cursor = pbx_core_chunk_next(ctx, r->selector_cursor);
        }
    }
}

static void pbx_core_on_selector(pbx_core_ctx *ctx, const pbx_ipc_frame *f,
                                 uint32_t badge, pbx_core_out *out)
{
    pbx_ipc_selector s;
    uint32_t i = 0;
    pbx_err err = pbx_ipc_selector_decode(f, &s);
    if (err == PBX_OK) {
        err = pbx_core_find_req(ctx, f->request, badge, &i);
    }
    if (err == PBX_OK) {
        pbx_core_request *r = pbx_core_req(ctx, i);
        if (r->link.state != (uint16_t)PBX_CORE_ST_OPEN) {
            err = PBX_E_CORE_STATE;
        } else if (s.offset != r->selector_received_bytes) {
            err = PBX_E_CORE_SELECTOR_OFFSET;
        } else if (s.len > r->ctx.selector_len - s.offset) {
            err = PBX_E_CORE_SELECTOR_OVERRUN;
        } else {
            pbx_core_selector_store(ctx, r, s.bytes, s.len);
            pbx_core_req_move(ctx, i, PBX_CORE_EV_SELECTOR);
        }
    }
    if (err != PBX_OK) {
        pbx_core_reply_err(out, PBX_IPC_OP_SELECTOR, f->request, err);
        return;
    }
    pbx_core_reply_empty(out, PBX_IPC_OP_SELECTOR, f->request);
}

bool pbx_core_commit_dest(const pbx_core_ctx *ctx, uint32_t badge,
                          const uint8_t *frame, size_t len, size_t slot_count,
                          uint32_t *dest)
{
    pbx_ipc_frame f;
    pbx_ipc_commit c;
    uint32_t i = 0;
    if (ctx->ready == 0U || frame == NULL || slot_count != 1U ||
        pbx_ipc_frame_decode(frame, len, 1U, &f) != PBX_OK ||
        f.op != (uint16_t)PBX_IPC_OP_COMMIT ||
        pbx_ipc_commit_decode(&f, &c) != PBX_OK ||
        pbx_core_find_req(ctx, f.request, badge, &i) != PBX_OK) {
        return false;
    }
    const pbx_core_request *r = pbx_core_req(ctx, i);
    const pbx_core_tslot *scope = pbx_core_tslot_at(ctx, r->scope_tslot);
    if (r->link.state != (uint16_t)PBX_CORE_ST_OPEN ||
        scope->link.state != PBX_CORE_TSLOT_RESERVED ||
        c.dest_slot != scope->slot) {
        return false;
    }
    *dest = scope->slot;
    return true;
}

/* Checks a COMMIT against request i without changing anything. */
static pbx_err pbx_core_commit_check(pbx_core_ctx *ctx, uint32_t i,
                                     const pbx_ipc_commit *c, uint32_t slot)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    const pbx_core_tslot *scope = pbx_core_tslot_at(ctx, r->scope_tslot);
    if (r->link.state != (uint16_t)PBX_CORE_ST_OPEN) {
        return PBX_E_CORE_STATE;
    }
    if (c->dest_slot != scope->slot || slot != scope->slot) {
        return PBX_E_CORE_COMMIT_SLOT;
    }
    if (r->selector_received_bytes != r->ctx.selector_len) {
        return PBX_E_CORE_SELECTOR_INCOMPLETE;
    }
    uint8_t sel[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    uint8_t digest[PBX_SHA2_DIGEST_BYTES];
    pbx_core_selector_copy(ctx, r, sel, sizeof(sel));
    if (pbx_sha2_digest(sel, r->ctx.selector_len, digest) != PBX_OK ||
        !pbx_sha2_digest_equal(digest, r->ctx.selector_digest)) {
        return PBX_E_CORE_DIGEST;
    }
    pbx_capabi_observed obs;
    ctx->ops->slot_query(ctx->ops_user, slot, &obs);
    if (pbx_capabi_check_receipt(&ctx->slots, &obs, PBX_CAPABI_RECEIPT_SCOPE) !=
        PBX_OK) {
        return PBX_E_CORE_COMMIT_KIND;
    }
    return PBX_OK;
}

/* COMMIT: the one public op that accepts a capability. Returns the
 * deletion error when the unwanted receipt could not be deleted. */
static pbx_err pbx_core_on_commit(pbx_core_ctx *ctx, const pbx_ipc_frame *f,
                                  uint32_t badge, const uint32_t *slots,
                                  pbx_core_out *out)
{
    pbx_ipc_commit c;
    uint32_t i = 0;
    pbx_err err = pbx_ipc_commit_decode(f, &c);
    if (err == PBX_OK) {
        err = pbx_core_find_req(ctx, f->request, badge, &i);
    }
    if (err == PBX_OK) {
        err = pbx_core_commit_check(ctx, i, &c, slots[0]);
    }
    if (err != PBX_OK) {
        /* A receipt refused for the caller's own live request stays that
         * request's until deleted: its decision waits for it. Once the
         * decision is published nothing can wait for it any more (and the
         * request may retire first): the receipt is plain junk then. */
        uint32_t owner = pbx_core_find_req(ctx, f->request, badge, &i) == PBX_OK
                             ? i
                             : PBX_CORE_NIL;
        if (owner != PBX_CORE_NIL && pbx_core_req_published(ctx, owner)) {
            owner = PBX_CORE_NIL;
        }
        pbx_err del = pbx_core_delete_all(ctx, slots, f->cap_count, owner);
        pbx_core_reply_err(out, PBX_IPC_OP_COMMIT, f->request,
                           del != PBX_OK ? del : err);
        return del == PBX_E_CORE_CLEANUP_REJECTED ? del : PBX_OK;
    }
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_tslot_hold(ctx, r->scope_tslot, slots[0],
                        PBX_CAPABI_RECEIPT_SCOPE);
    pbx_core_dequeue(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    pbx_core_req_move(ctx, i, PBX_CORE_EV_COMMIT);
    pbx_core_enqueue(ctx, PBX_CORE_Q_INTAKE, i);
    pbx_core_reply_empty(out, PBX_IPC_OP_COMMIT, f->request);
    return PBX_OK;
}

/* Fills a DECISION reply for a request whose decision is published. */
static pbx_err pbx_core_decision_fill(pbx_core_ctx *ctx, uint32_t i,
                                      pbx_ipc_decision *d, uint32_t *xfer)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    const pbx_core_decision *dec = (const pbx_core_decision *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_DECISIONS, r->decision);
    d->outcome = (uint8_t)dec->status;
    if (dec->status == (uint16_t)PBX_IPC_OUTCOME_DENIED) {
        d->reason = r->reason;
    }
    if (dec->status != (uint16_t)PBX_IPC_OUTCOME_APPROVED) {
        return PBX_OK;
    }
    d->mode = r->ctx.ctx.mode;
    d->grant.index = dec->grant;
    d->grant.gen = dec->grant_generation;
    d->installed_slot = dec->installed_slot;
    if (r->ctx.ctx.mode == (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY) {
        /* The alias (the request's handle slot, the grant's alias) leaves
         * exactly once: only while it is held, so no earlier reply was
         * delivered. It stays with the decision even after the grant
         * ended: then vfsd retired its object and it is dead. */
        if (!pbx_core_tslot_held(ctx, r->handle_tslot)) {
            return PBX_E_CORE_STATE;
        }
        *xfer = pbx_core_tslot_at(ctx, r->handle_tslot)->slot;
    }
    return PBX_OK;
}

static void pbx_core_on_decision(pbx_core_ctx *ctx, const pbx_ipc_frame *f,
                                 uint32_t badge, pbx_core_out *out)
{
    uint32_t i = 0;
    pbx_ipc_decision d = {PBX_IPC_OUTCOME_PENDING, 0, {0, 0}, 0, 0};
    uint32_t xfer = PBX_CORE_SLOT_NONE;
    pbx_err err = pbx_ipc_empty_decode(f, PBX_IPC_OP_DECISION);
    if (err == PBX_OK) {
        err = pbx_core_find_req(ctx, f->request, badge, &i);
    }
    if (err == PBX_OK) {
        uint16_t st = pbx_core_req(ctx, i)->link.state;
        if (st == (uint16_t)PBX_CORE_ST_DELIVERED) {
            err = PBX_E_CORE_STATE;
        } else if (st == (uint16_t)PBX_CORE_ST_NOTIFY ||
                   st == (uint16_t)PBX_CORE_ST_DECIDED) {
            err = pbx_core_decision_fill(ctx, i, &d, &xfer);
        }
    }
    if (err != PBX_OK) {
        pbx_core_reply_err(out, PBX_IPC_OP_DECISION, f->request, err);
        return;
    }
    size_t n = 0;
    err = pbx_ipc_decision_reply_encode(f->request, &d, out->frame,
                                        sizeof(out->frame), &n);
    PBX_ASSERT(err == PBX_OK);
    out->len = n;
    if (d.outcome != (uint8_t)PBX_IPC_OUTCOME_PENDING) {
        out->token = i;
        out->token_generation = f->request.gen;
        out->transfer_slot = xfer;
    }
}

/* Whether request i can be cancelled now (in flight, or approved with a
 * live grant). */
static bool pbx_core_cancellable(const pbx_core_ctx *ctx, uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_state st = (pbx_core_state)r->link.state;
    if (pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST, st, PBX_CORE_EV_CANCEL) !=
        SIZE_MAX) {
        return true;
    }
    /* Approved (published or not) with the grant still live. */
    return r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
           r->grant != PBX_CORE_NIL &&
           pbx_core_grant_at(ctx, r->grant)->link.state ==
               (uint16_t)PBX_CORE_ST_LIVE;
}

/* Applies a cancellation the caller proved possible. */
static void pbx_core_cancel_apply(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    if (pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST,
                          (pbx_core_state)r->link.state,
                          PBX_CORE_EV_CANCEL) != SIZE_MAX) {
        r->flags |= PBX_CORE_REQ_F_CANCELLED;
        pbx_core_req_terminate(ctx, i, PBX_CORE_EV_CANCEL,
                               PBX_IPC_OUTCOME_CANCELLED);
        return;
    }
    pbx_core_grant_stop(ctx, r->grant, PBX_CORE_EV_CANCEL);
}

/* Finds the one live, cancellable request of a job and session, counted
 * across every caller so the correlation is globally unambiguous, and
 * checks that the caller owns it. Every live request is chained by its
 * job, so only the job's bucket is walked (bounded by the request
 * capacity), and the walk stops at the second match: ambiguity needs no
 * more evidence. */
static pbx_err pbx_core_cancel_correlate(pbx_core_ctx *ctx,
                                         const pbx_ipc_cancel *c,
                                         uint32_t badge, uint32_t *index)
{
    uint32_t found = 0;
    bool foreign = false;
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    uint32_t i = pbx_core_index_head(ctx, PBX_BOOTSTRAP_POOL_REQUESTS,
                                     c->job_id, c->job_gen);
    for (uint32_t n = 0; n < cap && i != PBX_CORE_NIL && found < 2U; n++) {
        const pbx_core_request *r = pbx_core_req(ctx, i);
        if (r->ctx.ctx.job_id == c->job_id &&
            r->ctx.ctx.job_gen == c->job_gen &&
            r->ctx.ctx.session == c->session && pbx_core_cancellable(ctx, i)) {
            found++;
            foreign = foreign || !pbx_core_owner_ok(r->caller_badge, badge);
            *index = i;
        }
        i = pbx_core_index_next(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
    }
    /* Someone else's match is answered as no match at all, and before
     * ambiguity, which would otherwise say that it exists. */
    if (found == 0U || foreign) {
        return PBX_E_CORE_UNKNOWN;
    }
    return found == 1U ? PBX_OK : PBX_E_CORE_AMBIGUOUS;
}

/* Finds the exact request of a CANCEL and checks the caller owns it:
 * one refusal (PBX_E_CORE_UNKNOWN) for "names nothing" and "not yours". */
static pbx_err pbx_core_cancel_exact(const pbx_core_ctx *ctx, pbx_ipc_id id,
                                     uint32_t badge, uint32_t *index)
{
    pbx_err err = pbx_core_lookup(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, id, index);
    if (err != PBX_OK ||
        !pbx_core_owner_ok(pbx_core_req(ctx, *index)->caller_badge, badge)) {
        return PBX_E_CORE_UNKNOWN;
    }
    return PBX_OK;
}

/* Finds an installed grant by its exact identity for CONSUME or CANCEL:
 * unknown, stale and not-yet-installed ids name nothing, and only the
 * badge that began it (or launchd) may end it; all of these get the one
 * refusal PBX_E_CORE_UNKNOWN, so a live grant that is not the caller's
 * cannot be told from a missing one. */
static pbx_err pbx_core_find_grant(const pbx_core_ctx *ctx, pbx_ipc_id id,
                                   uint32_t badge, uint32_t *g)
{
    pbx_err err = pbx_core_lookup(ctx, PBX_BOOTSTRAP_POOL_GRANTS, id, g);
    if (err != PBX_OK) {
        return PBX_E_CORE_UNKNOWN;
    }
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, *g);
    if (gr->link.state == (uint16_t)PBX_CORE_ST_FREE ||
        !pbx_core_owner_ok(gr->caller_badge, badge)) {
        return PBX_E_CORE_UNKNOWN;
    }
    return gr->link.state == (uint16_t)PBX_CORE_ST_LIVE ? PBX_OK
                                                        : PBX_E_CORE_STATE;
}

static void pbx_core_on_cancel(pbx_core_ctx *ctx, const pbx_ipc_frame *f,
                               uint32_t badge, pbx_core_out *out)
{
    pbx_ipc_cancel c;
    uint32_t i = 0;
    /* Zeroed first, so every field read below is defined on every path. */
    pbx_mem_set(&c, 0, sizeof(c));
    pbx_err err = pbx_ipc_cancel_decode(f, &c);
    if (err == PBX_OK && c.by_grant) {
        err = pbx_core_find_grant(ctx, c.grant, badge, &i);
        if (err == PBX_OK) {
            /* Revoke, REMOVE, RETIRE; an unpublished approval becomes
             * CANCELLED through its request, a published one stays. */
            pbx_core_grant_stop(ctx, i, PBX_CORE_EV_CANCEL);
        }
    } else if (err == PBX_OK) {
        err = c.by_correlation
                  ? pbx_core_cancel_correlate(ctx, &c, badge, &i)
                  : pbx_core_cancel_exact(ctx, f->request, badge, &i);
        if (err == PBX_OK && !pbx_core_cancellable(ctx, i)) {
            err = PBX_E_CORE_STATE;
        }
        if (err == PBX_OK) {
            pbx_core_cancel_apply(ctx, i);
        }
    }
    if (err != PBX_OK) {
        pbx_core_reply_err(out, PBX_IPC_OP_CANCEL, f->request, err);
        return;
    }
    pbx_core_reply_empty(out, PBX_IPC_OP_CANCEL, f->request);
}

static void pbx_core_on_consume(pbx_core_ctx *ctx, const pbx_ipc_frame *f,
                                uint32_t badge, pbx_core_out *out)
{
    pbx_ipc_consume c;
    uint32_t g = 0;
    pbx_err err = pbx_ipc_consume_decode(f, &c);
    if (err == PBX_OK) {
        err = pbx_core_find_grant(ctx, c.grant, badge, &g);
    }
    if (err == PBX_OK) {
        const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
        if ((gr->flags & PBX_CORE_GRANT_F_APPROVED) == 0U) {
            err = PBX_E_CORE_STATE;
        } else if (gr->ctx.ctx.lifetime != (uint8_t)PBX_IPC_LIFETIME_ONE_SHOT) {
            err = PBX_E_CORE_LIFETIME;
        }
    }
    if (err != PBX_OK) {
        pbx_core_reply_err(out, PBX_IPC_OP_CONSUME, f->request, err);
        return;
    }
    /* The same stop path as CANCEL and EXPIRE: a published approval
     * stays as it was published until delivered; the grant it names
     * ends. */
    pbx_core_grant_stop(ctx, g, PBX_CORE_EV_CONSUME);
    pbx_core_reply_empty(out, PBX_IPC_OP_CONSUME, f->request);
}

static void pbx_core_on_expire(pbx_core_ctx *ctx, const pbx_ipc_frame *f,
                               uint32_t badge, pbx_core_out *out)
{
    pbx_ipc_expire e;
    pbx_err err = pbx_ipc_expire_decode(f, &e);
    if (err == PBX_OK && badge != PBX_CORE_BADGE_LAUNCHD) {
        err = PBX_E_CORE_PARTITION;
    }
    if (err != PBX_OK) {
        pbx_core_reply_err(out, PBX_IPC_OP_EXPIRE, f->request, err);
        return;
    }
    /* Everything covered ends within this event (one transition each),
     * so no sweep outlives it: a second EXPIRE, or a BEGIN of the job,
     * never meets an expiry half done. */
    pbx_core_expire(ctx, &e);
    pbx_core_reply_empty(out, PBX_IPC_OP_EXPIRE, f->request);
}

/* Routes a decoded, capability-free public frame to its handler. */
static void pbx_core_dispatch(pbx_core_ctx *ctx, const pbx_ipc_frame *f,
                              uint32_t badge, pbx_core_out *out)
{
    switch (f->op) {
    case PBX_IPC_OP_BEGIN:
        pbx_core_on_begin(ctx, f, badge, out);
        break;
    case PBX_IPC_OP_SELECTOR:
        pbx_core_on_selector(ctx, f, badge, out);
        break;
    case PBX_IPC_OP_DECISION:
        pbx_core_on_decision(ctx, f, badge, out);
        break;
    case PBX_IPC_OP_CANCEL:
        pbx_core_on_cancel(ctx, f, badge, out);
        break;
    case PBX_IPC_OP_CONSUME:
        pbx_core_on_consume(ctx, f, badge, out);
        break;
    case PBX_IPC_OP_EXPIRE:
        pbx_core_on_expire(ctx, f, badge, out);
        break;
    default:
        pbx_core_reply_err(out, f->op, f->request, PBX_E_CORE_PARTITION);
        break;
    }
}

/* Whether op is a public request (not a reply, not a peer op). */
static bool pbx_core_public_op(uint16_t op)
{
    return op >= (uint16_t)PBX_IPC_OP_BEGIN &&
           op <= (uint16_t)PBX_IPC_OP_EXPIRE;
}

/* Answers a frame the decoder refused. When the header names a public
 * op (magic, version and op re-checked here, because the decoder stopped
 * early) the caller gets that op's error reply echoing its request id:
 * COMMIT_COUNT or UNEXPECTED_CAPS for a capability-count refusal, else
 * the decoder's own error, and a deletion failure (del) takes precedence.
 * A decoded non-public op is answered in its own form. Anything else names
 * no operation that could be answered: no reply, and the runtime is told
 * to drop the connection (every received message gets one or the other). */
static void pbx_core_reply_undecoded(const uint8_t *frame, size_t len,
                                     pbx_err err, pbx_err del,
                                     pbx_core_out *out)
{
    if (frame == NULL || len < PBX_IPC_HEADER_BYTES ||
        pbx_le_get32(frame) != PBX_IPC_MAGIC ||
        pbx_le_get16(frame + 4) != PBX_IPC_VERSION) {
        out->drop = PBX_E_CORE_FRAME;
        return;
    }
    uint16_t op = pbx_le_get16(frame + 6);
    pbx_ipc_id id = {pbx_le_get32(frame + 12), pbx_le_get32(frame + 16)};
    pbx_ipc_op_rule rule;
    if (err == PBX_E_CORE_PARTITION &&
        pbx_ipc_op_rule_get(op, &rule) == PBX_OK) {
        op &= (uint16_t)~PBX_IPC_REPLY_BIT;
    } else if (!pbx_core_public_op(op)) {
        out->drop = PBX_E_CORE_FRAME;
        return;
    }
    if (err == PBX_E_IPC_CAP_COUNT || err == PBX_E_IPC_CAP_PARTITION) {
        err = op == (uint16_t)PBX_IPC_OP_COMMIT ? PBX_E_CORE_COMMIT_COUNT
                                                : PBX_E_CORE_UNEXPECTED_CAPS;
    }
    pbx_core_reply_err(out, op, id, del != PBX_OK ? del : err);
    if (out->len == 0U) {
        out->drop = PBX_E_CORE_FRAME; /* WAKE: an op without a reply. */
    }
}

static pbx_err pbx_core_on_public_frame(pbx_core_ctx *ctx, uint32_t badge,
                                        const uint8_t *frame, size_t len,
                                        const uint32_t *slots,
                                        size_t slot_count, pbx_core_out *out)
{
    pbx_ipc_frame f;
    out->len = 0;
    out->transfer_slot = PBX_CORE_SLOT_NONE;
    out->token = PBX_CORE_NIL;
    out->token_generation = 0U;
    out->drop = PBX_OK;
    if (ctx->ready == 0U) {
        return PBX_E_CORE_NOT_READY;
    }
    if (slot_count > (size_t)pbx_core_public_room(ctx)) {
        /* Some of these might need a record to wait in that public junk
         * may not take now: take nothing (the caller keeps the slots and
         * should have waited for pbx_core_public_ready). */
        return PBX_E_CORE_INTAKE_HELD;
    }
    pbx_err err =
        slot_count > UINT16_MAX
            ? PBX_E_IPC_CAP_COUNT
            : pbx_ipc_frame_decode(frame, len, (uint16_t)slot_count, &f);
    if (err == PBX_OK && !pbx_core_public_op(f.op)) {
        err = PBX_E_CORE_PARTITION;
    }
    if (err == PBX_OK && f.op == (uint16_t)PBX_IPC_OP_COMMIT) {
        return pbx_core_on_commit(ctx, &f, badge, slots, out);
    }
    pbx_err del = pbx_core_delete_all(ctx, slots, slot_count, PBX_CORE_NIL);
    if (del == PBX_E_CORE_CLEANUP_REJECTED) {
        return del;
    }
    if (err != PBX_OK) {
        pbx_core_reply_undecoded(frame, len, err, del, out);
        return PBX_OK;
    }
    if (del != PBX_OK) {
        pbx_core_reply_err(out, f.op, f.request, del);
        return PBX_OK;
    }
    pbx_core_dispatch(ctx, &f, badge, out);
    return PBX_OK;
}

/* Every reply echoes the seq of the frame it answers, error replies too. */
pbx_err pbx_core_on_public(pbx_core_ctx *ctx, uint32_t badge,
                           const uint8_t *frame, size_t len,
                           const uint32_t *slots, size_t slot_count,
                           pbx_core_out *out)
{
    pbx_err err = pbx_core_on_public_frame(ctx, badge, frame, len, slots,
                                           slot_count, out);
    uint32_t seq = 0U;
    if (out->len != 0U && pbx_ipc_frame_peek_seq(frame, len, &seq) == PBX_OK) {
        (void)pbx_ipc_frame_set_seq(out->frame, out->len, seq);
    }
    return err;
}
