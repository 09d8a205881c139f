/*
 * pbx_core_inspect.c: the read-only inspection API (pbx_core_inspect.h).
 */
#include "core/pbx_core_internal.h"

const void *pbx_core_inspect_record(const pbx_core_ctx *ctx,
                                    pbx_bootstrap_pool pool, uint32_t index)
{
    return pbx_core_rec(ctx, pool, index);
}

const pbx_core_request *pbx_core_inspect_request(const pbx_core_ctx *ctx,
                                                 uint32_t index)
{
    return pbx_core_req(ctx, index);
}

const pbx_core_grant *pbx_core_inspect_grant(const pbx_core_ctx *ctx,
                                             uint32_t index)
{
    return pbx_core_grant_at(ctx, index);
}

const pbx_core_tslot *pbx_core_inspect_tslot(const pbx_core_ctx *ctx,
                                             uint32_t index)
{
    return pbx_core_tslot_at(ctx, index);
}

const pbx_core_outcall *pbx_core_inspect_call(const pbx_core_ctx *ctx,
                                              uint32_t index)
{
    return (const pbx_core_outcall *)pbx_core_rec(ctx, PBX_BOOTSTRAP_POOL_CALLS,
                                                  index);
}

uint32_t pbx_core_inspect_seq(const pbx_core_ctx *ctx, uint32_t index)
{
    return pbx_core_call_seq(ctx, index);
}

uint32_t pbx_core_inspect_bucket(const pbx_core_ctx *ctx,
                                 pbx_bootstrap_pool pool, uint64_t job_id,
                                 uint32_t job_gen)
{
    return pbx_core_index_bucket(ctx, pool, job_id, job_gen);
}

uint32_t pbx_core_inspect_hash(uint64_t job_id, uint32_t job_gen)
{
    return pbx_core_index_hash(job_id, job_gen);
}

pbx_ipc_id pbx_core_inspect_id(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                               uint32_t index)
{
    return pbx_core_id(ctx, pool, index);
}

void *pbx_core_inspect_fault(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                             uint32_t index)
{
    return pbx_core_rec(ctx, pool, index);
}

/* Why approved request i was approved: the user's exact APPROVE recorded
 * in its own prompt record, else its routine policy ALLOW. */
static const char *pbx_core_inspect_approval(const pbx_core_ctx *ctx,
                                             uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    if (r->prompt >= ctx->pools[PBX_BOOTSTRAP_POOL_PROMPTS].capacity) {
        return "policy";
    }
    const pbx_core_prompt *q = (const pbx_core_prompt *)pbx_core_rec(
        ctx, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
    return q->request == i && q->request_generation == r->link.generation &&
                   q->answer == (uint32_t)PBX_IPC_ANSWER_APPROVE
               ? "user"
               : "policy";
}

/* The reason text of request i's published outcome. */
static const char *pbx_core_inspect_reason(const pbx_core_ctx *ctx, uint32_t i)
{
    const pbx_core_request *r = pbx_core_req(ctx, i);
    switch ((pbx_ipc_outcome)r->outcome) {
    case PBX_IPC_OUTCOME_APPROVED:
        return pbx_core_inspect_approval(ctx, i);
    case PBX_IPC_OUTCOME_DENIED:
        return pbx_ipc_reason_name(r->reason);
    case PBX_IPC_OUTCOME_NOT_FOUND:
        return "not-found";
    case PBX_IPC_OUTCOME_CANCELLED:
        return "cancelled";
    default:
        return "unknown";
    }
}

bool pbx_core_inspect_decision(const pbx_core_ctx *ctx, pbx_ipc_id request,
                               pbx_core_log_decision *out)
{
    uint32_t i = 0;
    if (pbx_core_lookup(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, request, &i) !=
        PBX_OK) {
        return false;
    }
    const pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_state st = (pbx_core_state)r->link.state;
    if (st != PBX_CORE_ST_NOTIFY && st != PBX_CORE_ST_DECIDED &&
        st != PBX_CORE_ST_DELIVERED) {
        return false;
    }
    out->request = request;
    out->grant.index = 0U;
    out->grant.gen = 0U;
    out->object.id = 0U;
    out->object.gen = 0U;
    if (r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
        r->grant < ctx->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity) {
        out->grant = pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_GRANTS, r->grant);
        out->object = pbx_core_grant_at(ctx, r->grant)->object;
    }
    out->ctx = &r->ctx.ctx;
    out->selector_len = r->ctx.selector_len;
    out->outcome = r->outcome;
    out->reason = pbx_core_inspect_reason(ctx, i);
    return true;
}

uint32_t pbx_core_inspect_selector(const pbx_core_ctx *ctx, pbx_ipc_id request,
                                   uint8_t *buf, uint32_t cap)
{
    uint32_t i = 0;
    if (pbx_core_lookup(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, request, &i) !=
        PBX_OK) {
        return 0U;
    }
    const pbx_core_request *r = pbx_core_req(ctx, i);
    uint32_t want =
        r->selector_received_bytes < cap ? r->selector_received_bytes : cap;
    uint32_t chunk = r->selector_head;
    uint32_t done = 0;
    /* One chunk per turn, never more than the request reserved. */
    for (uint32_t n = 0; n < r->selector_chunks && done < want; n++) {
        uint32_t len = want - done < PBX_CORE_SELECTOR_CHUNK_DATA_BYTES
                           ? want - done
                           : PBX_CORE_SELECTOR_CHUNK_DATA_BYTES;
        pbx_mem_copy(buf + done, pbx_core_chunk_data(ctx, chunk), len);
        done += len;
        chunk = pbx_core_chunk_next(ctx, chunk);
    }
    return done;
}

bool pbx_core_inspect_grant_end(const pbx_core_ctx *ctx, pbx_ipc_id grant,
                                pbx_core_log_grant_end *out)
{
    uint32_t g = 0;
    if (pbx_core_lookup(ctx, PBX_BOOTSTRAP_POOL_GRANTS, grant, &g) != PBX_OK) {
        return false;
    }
    const pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    if ((gr->flags & PBX_CORE_GRANT_F_APPROVED) == 0U ||
        gr->link.state == (uint16_t)PBX_CORE_ST_LIVE) {
        return false;
    }
    out->grant = grant;
    out->request.index = 0U;
    out->request.gen = 0U;
    if (gr->request != PBX_CORE_NIL) {
        out->request.index = gr->request;
        out->request.gen = gr->request_generation;
    }
    out->ctx = &gr->ctx.ctx;
    out->object = gr->object;
    switch ((pbx_core_event)gr->end_reason) {
    case PBX_CORE_EV_CONSUME:
        out->end = "consumed";
        out->reason = "consume";
        break;
    case PBX_CORE_EV_EXPIRE:
        out->end = "expired";
        out->reason = "expire";
        break;
    case PBX_CORE_EV_CANCEL:
        out->end = "cancelled";
        out->reason = "cancel";
        break;
    case PBX_CORE_EV_LOST:
        out->end = "lost";
        out->reason = pbx_ipc_reason_name(
            (gr->flags & PBX_CORE_GRANT_F_INSTALLER_LOST) != 0U
                ? PBX_IPC_REASON_INSTALLER_LOST
                : PBX_IPC_REASON_PROVIDER_LOST);
        break;
    default:
        out->end = "revoked";
        out->reason = "unknown";
        break;
    }
    return true;
}

/* Records verdict v with its error in *out and returns v. */
static pbx_core_startup_verdict
pbx_core_startup_is(pbx_core_startup_result *out, pbx_core_startup_verdict v,
                    pbx_err err)
{
    out->verdict = v;
    out->err = err;
    return v;
}

pbx_core_startup_verdict pbx_core_startup_check(const uint8_t *rec, size_t len,
                                                pbx_core_startup_result *out)
{
    pbx_bootstrap_type_layout compiled[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_bootstrap_pool pool = PBX_BOOTSTRAP_POOL_REQUESTS;
    pbx_mem_set(out, 0, sizeof(*out));
    pbx_err err = pbx_bootstrap_parse(rec, len, &out->geo);
    if (err != PBX_OK) {
        return pbx_core_startup_is(out, PBX_CORE_STARTUP_RECORD, err);
    }
    out->transient_count =
        out->geo.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] +
        PBX_BOOTSTRAP_RECEIPTS_PER_RECEIVE;
    _Static_assert(PBX_CORE_TSLOTS_MIN == 11U &&
                       PBX_BOOTSTRAP_RECEIPTS_PER_RECEIVE == 16U &&
                       PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX == 4032U,
                   "the error texts name these limits");
    pbx_core_pool_layouts(compiled);
    err = pbx_bootstrap_layout_derive(&out->geo, compiled, &out->layout);
    if (pbx_bootstrap_mismatch_pool(err, &pool)) {
        return pbx_core_startup_is(out, PBX_CORE_STARTUP_LAYOUT, err);
    }
    if (err == PBX_E_BOOTSTRAP_PAGE_EXTENT) {
        return pbx_core_startup_is(out, PBX_CORE_STARTUP_EXTENT, err);
    }
    if (err != PBX_OK) {
        return pbx_core_startup_is(out, PBX_CORE_STARTUP_RECORD, err);
    }
    /* The capacity is at most PBX_BOOTSTRAP_RECORDS_MAX: no overflow. */
    if (out->transient_count > PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX) {
        return pbx_core_startup_is(out, PBX_CORE_STARTUP_TRANSIENT,
                                   PBX_E_BOOTSTRAP_TRANSIENT_RANGE);
    }
    if (out->geo.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] <
        PBX_CORE_TSLOTS_MIN) {
        /* pbx_core_init refuses this too: too few transient slots to
         * serve one request beside the records kept for deletions. */
        return pbx_core_startup_is(out, PBX_CORE_STARTUP_CORE,
                                   PBX_E_BOOTSTRAP_TRANSIENT_MIN);
    }
    return pbx_core_startup_is(out, PBX_CORE_STARTUP_OK, PBX_OK);
}

void pbx_core_inspect_usage(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                            uint32_t *used, uint32_t *capacity)
{
    PBX_ASSERT(ctx != NULL && used != NULL && capacity != NULL &&
               (uint32_t)pool < (uint32_t)PBX_BOOTSTRAP_POOL_COUNT);
    /* Selector bytes are handed out in chunks, not records: the pool's
     * own free count stays 0, the chunk list is what is used. */
    if (pool == PBX_BOOTSTRAP_POOL_SELECTOR_BYTES) {
        *capacity = ctx->chunk_count;
        *used = ctx->chunk_count - ctx->chunk_free_count;
        return;
    }
    const pbx_core_pool_state *p = &ctx->pools[pool];
    *capacity = p->capacity;
    *used = p->capacity - p->free_count;
}
