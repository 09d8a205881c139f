/*
 * pbx_ipc_public.c: the public operations (client or launchd ->
 * powerboxd): BEGIN, SELECTOR, COMMIT, DECISION, CANCEL, CONSUME, EXPIRE.
 */
#include "ipc/pbx_ipc_internal.h"

static const pbx_ipc_id pbx_ipc_no_id = {0U, 0U};

/* ---- BEGIN ---------------------------------------------------------------
 */

pbx_err pbx_ipc_begin_encode(const pbx_ipc_begin *rec, uint8_t *buf,
                             size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL && out_len != NULL);
    const pbx_ipc_context *c = &rec->ctx;
    if (c->entry.len > PBX_IPC_ENTRY_LEN_BYTES_MAX ||
        rec->label.len > PBX_IPC_LABEL_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    size_t body_len =
        PBX_IPC_BEGIN_FIXED_BYTES + (size_t)c->entry.len + rec->label.len;
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_BEGIN,
                                      pbx_ipc_no_id, 0U, body_len, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put64(b, c->job_id);
    pbx_le_put64(b + 8, c->session);
    pbx_le_put64(b + 16, rec->target.process_id);
    pbx_le_put32(b + 24, c->job_gen);
    pbx_le_put32(b + 28, c->realm);
    pbx_le_put32(b + 32, rec->target.process_gen);
    pbx_le_put32(b + 36, rec->target.slot);
    pbx_le_put32(b + 40, rec->selector_len);
    pbx_le_put16(b + 44, c->operation);
    pbx_le_put16(b + 46, c->object_class);
    b[48] = c->lifetime;
    b[49] = c->mode;
    b[50] = c->urgency;
    pbx_ipc_entry_put(b, 52, PBX_IPC_BEGIN_FIXED_BYTES, &c->entry);
    pbx_le_put16(b + 54, rec->label.len);
    pbx_mem_copy(b + 56, rec->selector_digest, PBX_IPC_DIGEST_BYTES);
    pbx_le_put64(b + 88, rec->invocation_id);
    pbx_mem_copy(b + PBX_IPC_BEGIN_FIXED_BYTES + c->entry.len, rec->label.bytes,
                 rec->label.len);
    pbx_ipc_frame f;
    pbx_ipc_begin chk;
    err = pbx_ipc_frame_reopen(buf, body_len, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_begin_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, body_len, out_len);
}

/* Checks every BEGIN field after the lengths are proven. */
static pbx_err pbx_ipc_begin_check(const pbx_ipc_begin *r)
{
    pbx_err err = pbx_ipc_context_check(&r->ctx);
    if (err != PBX_OK) {
        return err;
    }
    if (r->selector_len == 0U ||
        r->selector_len > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    err = pbx_ipc_target_check(r->ctx.mode, &r->target);
    if (err != PBX_OK) {
        return err;
    }
    /* An invocation grant must name its invocation so that EXPIRE
     * INVOCATION can match it exactly; a one-shot grant made within an
     * invocation names it too (0: made outside any), so that the
     * invocation's end ends it; a job grant outlives invocations and
     * names none. */
    bool inv = r->ctx.lifetime == (uint8_t)PBX_IPC_LIFETIME_INVOCATION;
    bool job = r->ctx.lifetime == (uint8_t)PBX_IPC_LIFETIME_JOB;
    if ((inv && r->invocation_id == 0U) || (job && r->invocation_id != 0U)) {
        return PBX_E_IPC_OUTCOME_FIELDS;
    }
    return pbx_ipc_text_check(r->label.bytes, r->label.len, 0U,
                              PBX_IPC_LABEL_LEN_BYTES_MAX);
}

pbx_err pbx_ipc_begin_decode(const pbx_ipc_frame *f, pbx_ipc_begin *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_at_least(f, PBX_IPC_OP_BEGIN, PBX_IPC_BEGIN_FIXED_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    uint16_t entry_len = 0;
    uint16_t label_len = 0;
    err = pbx_ipc_texts_total(f, PBX_IPC_BEGIN_FIXED_BYTES, 52U, 0U, &entry_len,
                              &label_len);
    if (err != PBX_OK) {
        return err;
    }
    if (b[51] != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    pbx_ipc_context *c = &out->ctx;
    c->job_id = pbx_le_get64(b);
    c->session = pbx_le_get64(b + 8);
    out->target.process_id = pbx_le_get64(b + 16);
    c->job_gen = pbx_le_get32(b + 24);
    c->realm = pbx_le_get32(b + 28);
    out->target.process_gen = pbx_le_get32(b + 32);
    out->target.slot = pbx_le_get32(b + 36);
    out->selector_len = pbx_le_get32(b + 40);
    c->operation = pbx_le_get16(b + 44);
    c->object_class = pbx_le_get16(b + 46);
    c->lifetime = b[48];
    c->mode = b[49];
    c->urgency = b[50];
    c->entry.len = entry_len;
    pbx_mem_copy(c->entry.bytes, b + PBX_IPC_BEGIN_FIXED_BYTES, entry_len);
    out->label.len = label_len;
    pbx_mem_copy(out->label.bytes, b + PBX_IPC_BEGIN_FIXED_BYTES + entry_len,
                 label_len);
    pbx_mem_copy(out->selector_digest, b + 56, PBX_IPC_DIGEST_BYTES);
    out->invocation_id = pbx_le_get64(b + 88);
    return pbx_ipc_begin_check(out);
}

pbx_err pbx_ipc_begin_reply_encode(pbx_ipc_id request,
                                   const pbx_ipc_begin_reply *rec, uint8_t *buf,
                                   size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_REPLY_OF(PBX_IPC_OP_BEGIN),
                            request, 0U, PBX_IPC_BEGIN_REPLY_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put32(b, rec->dest_slot);
    pbx_ipc_frame f;
    pbx_ipc_begin_reply chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_BEGIN_REPLY_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_begin_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_BEGIN_REPLY_BYTES, out_len);
}

pbx_err pbx_ipc_begin_reply_decode(const pbx_ipc_frame *f,
                                   pbx_ipc_begin_reply *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_BEGIN),
                                     PBX_IPC_BEGIN_REPLY_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    out->dest_slot = pbx_le_get32(f->body);
    return PBX_OK;
}

/* ---- SELECTOR and COMMIT -------------------------------------------------
 */

pbx_err pbx_ipc_selector_encode(pbx_ipc_id request, const pbx_ipc_selector *rec,
                                uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    if (rec->len > PBX_IPC_SELECTOR_CHUNK_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    size_t body_len = PBX_IPC_SELECTOR_FIXED_BYTES + (size_t)rec->len;
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_SELECTOR,
                                      request, 0U, body_len, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put32(b, rec->offset);
    pbx_le_put32(b + 4, rec->len);
    pbx_ipc_bytes_copy(b + PBX_IPC_SELECTOR_FIXED_BYTES, rec->bytes, rec->len);
    pbx_ipc_frame f;
    pbx_ipc_selector chk;
    err = pbx_ipc_frame_reopen(buf, body_len, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_selector_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, body_len, out_len);
}

pbx_err pbx_ipc_selector_decode(const pbx_ipc_frame *f, pbx_ipc_selector *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_at_least(f, PBX_IPC_OP_SELECTOR,
                                        PBX_IPC_SELECTOR_FIXED_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    uint32_t offset = pbx_le_get32(f->body);
    uint32_t len = pbx_le_get32(f->body + 4);
    if (len == 0U || len > PBX_IPC_SELECTOR_CHUNK_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    err = pbx_ipc_body_total(f, PBX_IPC_SELECTOR_FIXED_BYTES + (size_t)len);
    if (err != PBX_OK) {
        return err;
    }
    if ((uint64_t)offset + len > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return PBX_E_IPC_SELECTOR_RANGE;
    }
    out->offset = offset;
    out->len = len;
    out->bytes = f->body + PBX_IPC_SELECTOR_FIXED_BYTES;
    return PBX_OK;
}

pbx_err pbx_ipc_commit_encode(pbx_ipc_id request, const pbx_ipc_commit *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_COMMIT, request,
                                      1U, PBX_IPC_COMMIT_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put32(b, rec->dest_slot);
    pbx_ipc_frame f;
    pbx_ipc_commit chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_COMMIT_BYTES, 1U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_commit_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_COMMIT_BYTES, out_len);
}

pbx_err pbx_ipc_commit_decode(const pbx_ipc_frame *f, pbx_ipc_commit *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_exact(f, PBX_IPC_OP_COMMIT, PBX_IPC_COMMIT_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    if (pbx_le_get32(f->body + 4) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    out->dest_slot = pbx_le_get32(f->body);
    return PBX_OK;
}

/* ---- DECISION ------------------------------------------------------------
 */

pbx_err pbx_ipc_decision_reply_encode(pbx_ipc_id request,
                                      const pbx_ipc_decision *rec, uint8_t *buf,
                                      size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint16_t caps = (rec->outcome == PBX_IPC_OUTCOME_APPROVED &&
                     rec->mode == PBX_IPC_MODE_RUNTIME_REPLY)
                        ? 1U
                        : 0U;
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_REPLY_OF(PBX_IPC_OP_DECISION),
                            request, caps, PBX_IPC_DECISION_REPLY_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    b[0] = rec->outcome;
    b[1] = rec->mode;
    pbx_le_put16(b + 2, rec->reason);
    pbx_le_put32(b + 4, rec->grant.index);
    pbx_le_put32(b + 8, rec->grant.gen);
    pbx_le_put32(b + 12, rec->installed_slot);
    pbx_ipc_frame f;
    pbx_ipc_decision chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_DECISION_REPLY_BYTES, caps, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_decision_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_DECISION_REPLY_BYTES, out_len);
}

/* Applies the outcome rules: which fields and how many capabilities. */
static pbx_err pbx_ipc_decision_check(const pbx_ipc_decision *d, uint16_t caps)
{
    if (d->outcome < PBX_IPC_OUTCOME_PENDING ||
        d->outcome > PBX_IPC_OUTCOME_NOT_FOUND) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (d->reason > PBX_IPC_REASON_INSTALLER_LOST) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (d->reason != PBX_IPC_REASON_NONE &&
        d->outcome != PBX_IPC_OUTCOME_DENIED) {
        return PBX_E_IPC_OUTCOME_FIELDS;
    }
    if (d->outcome != PBX_IPC_OUTCOME_APPROVED) {
        if (d->mode != 0U || d->grant.index != 0U || d->grant.gen != 0U ||
            d->installed_slot != 0U) {
            return PBX_E_IPC_OUTCOME_FIELDS;
        }
        return caps == 0U ? PBX_OK : PBX_E_IPC_CAP_PARTITION;
    }
    if (d->mode != PBX_IPC_MODE_INSTALL &&
        d->mode != PBX_IPC_MODE_RUNTIME_REPLY) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (d->grant.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    if (d->mode == PBX_IPC_MODE_INSTALL) {
        return caps == 0U ? PBX_OK : PBX_E_IPC_CAP_PARTITION;
    }
    if (d->installed_slot != 0U) {
        return PBX_E_IPC_OUTCOME_FIELDS;
    }
    return caps == 1U ? PBX_OK : PBX_E_IPC_CAP_PARTITION;
}

pbx_err pbx_ipc_decision_reply_decode(const pbx_ipc_frame *f,
                                      pbx_ipc_decision *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_DECISION),
                                     PBX_IPC_DECISION_REPLY_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    out->outcome = b[0];
    out->mode = b[1];
    out->reason = pbx_le_get16(b + 2);
    out->grant.index = pbx_le_get32(b + 4);
    out->grant.gen = pbx_le_get32(b + 8);
    out->installed_slot = pbx_le_get32(b + 12);
    return pbx_ipc_decision_check(out, f->cap_count);
}

/* ---- CANCEL, CONSUME, EXPIRE ---------------------------------------------
 */

pbx_err pbx_ipc_cancel_encode(const pbx_ipc_cancel *rec, uint8_t *buf,
                              size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    if (rec->by_grant && rec->by_correlation) {
        return PBX_E_IPC_REQUEST_ID;
    }
    pbx_ipc_id id = rec->by_grant         ? rec->grant
                    : rec->by_correlation ? pbx_ipc_no_id
                                          : rec->request;
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_CANCEL, id, 0U,
                                      PBX_IPC_CANCEL_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put64(b, rec->job_id);
    pbx_le_put64(b + 8, rec->session);
    pbx_le_put32(b + 16, rec->job_gen);
    b[20] = rec->by_grant ? (uint8_t)PBX_IPC_CANCEL_F_GRANT : 0U;
    pbx_ipc_frame f;
    pbx_ipc_cancel chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_CANCEL_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_cancel_decode(&f, &chk);
    }
    if (err == PBX_OK && (chk.by_correlation != rec->by_correlation ||
                          chk.by_grant != rec->by_grant)) {
        err = PBX_E_IPC_REQUEST_ID;
    }
    return pbx_ipc_frame_done(err, PBX_IPC_CANCEL_BYTES, out_len);
}

/* The grant form: the header names the grant, the body is only the flag. */
static pbx_err pbx_ipc_cancel_grant(const pbx_ipc_frame *f, pbx_ipc_cancel *out)
{
    out->by_grant = true;
    out->by_correlation = false;
    out->grant = f->request;
    out->request = pbx_ipc_no_id;
    if (f->request.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    return pbx_ipc_all_zero(f->body, 20U) ? PBX_OK : PBX_E_IPC_OUTCOME_FIELDS;
}

pbx_err pbx_ipc_cancel_decode(const pbx_ipc_frame *f, pbx_ipc_cancel *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_exact(f, PBX_IPC_OP_CANCEL, PBX_IPC_CANCEL_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if ((b[20] & (uint8_t)~PBX_IPC_CANCEL_F_GRANT) != 0U ||
        !pbx_ipc_all_zero(b + 21, 3U)) {
        return PBX_E_IPC_RESERVED;
    }
    out->job_id = pbx_le_get64(b);
    out->session = pbx_le_get64(b + 8);
    out->job_gen = pbx_le_get32(b + 16);
    if (b[20] != 0U) {
        return pbx_ipc_cancel_grant(f, out);
    }
    out->by_grant = false;
    out->grant = pbx_ipc_no_id;
    out->request = f->request;
    out->by_correlation = f->request.gen == 0U;
    if (!out->by_correlation) {
        return pbx_ipc_all_zero(b, 20U) ? PBX_OK : PBX_E_IPC_OUTCOME_FIELDS;
    }
    if (f->request.index != 0U) {
        return PBX_E_IPC_REQUEST_ID;
    }
    return out->job_gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}

pbx_err pbx_ipc_consume_encode(const pbx_ipc_consume *rec, uint8_t *buf,
                               size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_CONSUME, pbx_ipc_no_id, 0U,
                            PBX_IPC_CONSUME_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put32(b, rec->grant.index);
    pbx_le_put32(b + 4, rec->grant.gen);
    pbx_ipc_frame f;
    pbx_ipc_consume chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_CONSUME_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_consume_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_CONSUME_BYTES, out_len);
}

pbx_err pbx_ipc_consume_decode(const pbx_ipc_frame *f, pbx_ipc_consume *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_exact(f, PBX_IPC_OP_CONSUME, PBX_IPC_CONSUME_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    out->grant.index = pbx_le_get32(f->body);
    out->grant.gen = pbx_le_get32(f->body + 4);
    return out->grant.gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}

pbx_err pbx_ipc_expire_encode(const pbx_ipc_expire *rec, uint8_t *buf,
                              size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_EXPIRE, pbx_ipc_no_id, 0U,
                            PBX_IPC_EXPIRE_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    b[0] = rec->kind;
    pbx_le_put32(b + 4, rec->job_gen);
    pbx_le_put64(b + 8, rec->job_id);
    pbx_le_put64(b + 16, rec->invocation_id);
    pbx_ipc_frame f;
    pbx_ipc_expire chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_EXPIRE_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_expire_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_EXPIRE_BYTES, out_len);
}

pbx_err pbx_ipc_expire_decode(const pbx_ipc_frame *f, pbx_ipc_expire *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_exact(f, PBX_IPC_OP_EXPIRE, PBX_IPC_EXPIRE_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if (!pbx_ipc_all_zero(b + 1, 3U)) {
        return PBX_E_IPC_RESERVED;
    }
    out->kind = b[0];
    out->job_gen = pbx_le_get32(b + 4);
    out->job_id = pbx_le_get64(b + 8);
    out->invocation_id = pbx_le_get64(b + 16);
    if (out->kind != PBX_IPC_EXPIRE_INVOCATION &&
        out->kind != PBX_IPC_EXPIRE_JOB) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (out->job_gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    bool has_invocation = out->invocation_id != 0U;
    if (has_invocation != (out->kind == PBX_IPC_EXPIRE_INVOCATION)) {
        return PBX_E_IPC_OUTCOME_FIELDS;
    }
    return PBX_OK;
}
