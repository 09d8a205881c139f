/*
 * pbx_ipc_ttyd.c: the ttyd peer exchanges: session POLICY, trusted PROMPT
 * (RETRY or a fully echoed ANSWER), the receipt-free grant VIEW (in
 * pbx_ipc_view.c) and WITHDRAW of a prompt shown or queued.
 */
#include "ipc/pbx_ipc_internal.h"

/* POLICY and PROMPT share body offsets 0..43: the context without its
 * entry, plus the resolved object's identity. */
static void pbx_ipc_pp_put(uint8_t *b, const pbx_ipc_context *c,
                           const pbx_ipc_object *o)
{
    pbx_le_put64(b, c->session);
    pbx_le_put64(b + 8, c->job_id);
    pbx_le_put64(b + 16, o->id);
    pbx_le_put32(b + 24, c->job_gen);
    pbx_le_put32(b + 28, c->realm);
    pbx_le_put32(b + 32, o->gen);
    pbx_le_put16(b + 36, c->operation);
    pbx_le_put16(b + 38, c->object_class);
    b[40] = c->lifetime;
    b[41] = c->mode;
    b[42] = c->urgency;
}

static void pbx_ipc_pp_get(const uint8_t *b, pbx_ipc_context *c,
                           pbx_ipc_object *o)
{
    c->session = pbx_le_get64(b);
    c->job_id = pbx_le_get64(b + 8);
    o->id = pbx_le_get64(b + 16);
    c->job_gen = pbx_le_get32(b + 24);
    c->realm = pbx_le_get32(b + 28);
    o->gen = pbx_le_get32(b + 32);
    c->operation = pbx_le_get16(b + 36);
    c->object_class = pbx_le_get16(b + 38);
    c->lifetime = b[40];
    c->mode = b[41];
    c->urgency = b[42];
}

/* ---- POLICY --------------------------------------------------------------
 */

pbx_err pbx_ipc_policy_encode(pbx_ipc_id request, const pbx_ipc_policy *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    if (rec->ctx.entry.len > PBX_IPC_ENTRY_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    size_t body_len = PBX_IPC_POLICY_FIXED_BYTES + (size_t)rec->ctx.entry.len;
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_POLICY, request,
                                      0U, body_len, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_ipc_pp_put(b, &rec->ctx, &rec->object);
    pbx_ipc_entry_put(b, 44, PBX_IPC_POLICY_FIXED_BYTES, &rec->ctx.entry);
    pbx_ipc_frame f;
    pbx_ipc_policy chk;
    err = pbx_ipc_frame_reopen(buf, body_len, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_policy_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, body_len, out_len);
}

pbx_err pbx_ipc_policy_decode(const pbx_ipc_frame *f, pbx_ipc_policy *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_at_least(f, PBX_IPC_OP_POLICY, PBX_IPC_POLICY_FIXED_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    uint16_t entry_len = pbx_le_get16(b + 44);
    if (entry_len == 0U || entry_len > PBX_IPC_ENTRY_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    err = pbx_ipc_body_total(f, PBX_IPC_POLICY_FIXED_BYTES + (size_t)entry_len);
    if (err != PBX_OK) {
        return err;
    }
    if (b[43] != 0U || pbx_le_get16(b + 46) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    pbx_ipc_pp_get(b, &out->ctx, &out->object);
    out->ctx.entry.len = entry_len;
    pbx_mem_copy(out->ctx.entry.bytes, b + PBX_IPC_POLICY_FIXED_BYTES,
                 entry_len);
    err = pbx_ipc_context_check(&out->ctx);
    if (err != PBX_OK) {
        return err;
    }
    return out->object.gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}

pbx_err pbx_ipc_policy_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_policy_reply *rec,
                                    uint8_t *buf, size_t buf_len,
                                    size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_REPLY_OF(PBX_IPC_OP_POLICY),
                            request, 0U, PBX_IPC_POLICY_REPLY_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    b[0] = rec->verdict;
    b[1] = rec->urgency;
    pbx_le_put32(b + 4, rec->realm);
    pbx_le_put64(b + 8, rec->session);
    pbx_ipc_frame f;
    pbx_ipc_policy_reply chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_POLICY_REPLY_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_policy_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_POLICY_REPLY_BYTES, out_len);
}

pbx_err pbx_ipc_policy_reply_decode(const pbx_ipc_frame *f,
                                    pbx_ipc_policy_reply *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_POLICY),
                                     PBX_IPC_POLICY_REPLY_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if (pbx_le_get16(b + 2) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    out->verdict = b[0];
    out->urgency = b[1];
    out->realm = pbx_le_get32(b + 4);
    out->session = pbx_le_get64(b + 8);
    if (out->verdict < PBX_IPC_VERDICT_ALLOW ||
        out->verdict > PBX_IPC_VERDICT_PROMPT ||
        (out->urgency != PBX_IPC_URGENCY_ROUTINE &&
         out->urgency != PBX_IPC_URGENCY_EXCEPTIONAL)) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (out->verdict == PBX_IPC_VERDICT_ALLOW &&
        out->urgency == PBX_IPC_URGENCY_EXCEPTIONAL) {
        return PBX_E_IPC_EXCEPTIONAL_ALLOW;
    }
    return PBX_OK;
}

/* ---- PROMPT --------------------------------------------------------------
 */

pbx_err pbx_ipc_prompt_encode(pbx_ipc_id request, const pbx_ipc_prompt *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    size_t e = rec->ctx.entry.len;
    size_t l = rec->label.len;
    if (e > PBX_IPC_ENTRY_LEN_BYTES_MAX || l > PBX_IPC_LABEL_LEN_BYTES_MAX ||
        rec->selector_len > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    size_t body_len = PBX_IPC_PROMPT_FIXED_BYTES + e + l + rec->selector_len;
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_PROMPT, request,
                                      0U, body_len, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_ipc_pp_put(b, &rec->ctx, &rec->object);
    pbx_ipc_entry_put(b, 44, PBX_IPC_PROMPT_FIXED_BYTES, &rec->ctx.entry);
    pbx_le_put16(b + 46, rec->label.len);
    pbx_le_put32(b + 48, rec->selector_len);
    pbx_mem_copy(b + 56, rec->selector_digest, PBX_IPC_DIGEST_BYTES);
    pbx_mem_copy(b + PBX_IPC_PROMPT_FIXED_BYTES + e, rec->label.bytes, l);
    pbx_ipc_bytes_copy(b + PBX_IPC_PROMPT_FIXED_BYTES + e + l, rec->selector,
                       rec->selector_len);
    pbx_ipc_frame f;
    pbx_ipc_prompt chk;
    err = pbx_ipc_frame_reopen(buf, body_len, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_prompt_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, body_len, out_len);
}

/* Copies the PROMPT tail (entry, label, selector view) once lengths hold. */
static void pbx_ipc_prompt_tail(const uint8_t *b, pbx_ipc_prompt *out)
{
    const uint8_t *p = b + PBX_IPC_PROMPT_FIXED_BYTES;
    pbx_mem_copy(out->ctx.entry.bytes, p, out->ctx.entry.len);
    p += out->ctx.entry.len;
    pbx_mem_copy(out->label.bytes, p, out->label.len);
    out->selector = p + out->label.len;
    pbx_mem_copy(out->selector_digest, b + 56, PBX_IPC_DIGEST_BYTES);
}

pbx_err pbx_ipc_prompt_decode(const pbx_ipc_frame *f, pbx_ipc_prompt *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_at_least(f, PBX_IPC_OP_PROMPT, PBX_IPC_PROMPT_FIXED_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    uint16_t e = 0;
    uint16_t l = 0;
    uint32_t s = pbx_le_get32(b + 48);
    if (s == 0U || s > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    err = pbx_ipc_texts_total(f, PBX_IPC_PROMPT_FIXED_BYTES, 44U, s, &e, &l);
    if (err != PBX_OK) {
        return err;
    }
    if (b[43] != 0U || pbx_le_get32(b + 52) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    pbx_ipc_pp_get(b, &out->ctx, &out->object);
    out->ctx.entry.len = e;
    out->label.len = l;
    out->selector_len = s;
    pbx_ipc_prompt_tail(b, out);
    err = pbx_ipc_context_check(&out->ctx);
    if (err != PBX_OK) {
        return err;
    }
    if (out->object.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    return pbx_ipc_text_check(out->label.bytes, l, 0U,
                              PBX_IPC_LABEL_LEN_BYTES_MAX);
}

pbx_err pbx_ipc_prompt_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_prompt_reply *rec,
                                    uint8_t *buf, size_t buf_len,
                                    size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    if (rec->retry &&
        (rec->answer != 0U || rec->realm != 0U || rec->session != 0U ||
         rec->job_id != 0U || rec->job_gen != 0U || rec->request.index != 0U ||
         rec->request.gen != 0U || rec->object.id != 0U ||
         rec->object.gen != 0U)) {
        return PBX_E_IPC_OUTCOME_FIELDS;
    }
    size_t body_len = rec->retry ? 0U : PBX_IPC_PROMPT_ANSWER_BYTES;
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_REPLY_OF(PBX_IPC_OP_PROMPT),
                            request, 0U, body_len, &b);
    if (err != PBX_OK) {
        return err;
    }
    if (!rec->retry) {
        b[0] = rec->answer;
        pbx_le_put32(b + 4, rec->realm);
        pbx_le_put64(b + 8, rec->session);
        pbx_le_put64(b + 16, rec->job_id);
        pbx_le_put64(b + 24, rec->object.id);
        pbx_le_put32(b + 32, rec->job_gen);
        pbx_le_put32(b + 36, rec->request.index);
        pbx_le_put32(b + 40, rec->request.gen);
        pbx_le_put32(b + 44, rec->object.gen);
    }
    pbx_ipc_frame f;
    pbx_ipc_prompt_reply chk;
    err = pbx_ipc_frame_reopen(buf, body_len, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_prompt_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, body_len, out_len);
}

pbx_err pbx_ipc_prompt_reply_decode(const pbx_ipc_frame *f,
                                    pbx_ipc_prompt_reply *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_at_least(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_PROMPT), 0U);
    if (err != PBX_OK) {
        return err;
    }
    pbx_mem_set(out, 0U, sizeof(*out));
    if (f->body_len == 0U) {
        out->retry = true;
        return PBX_OK;
    }
    err = pbx_ipc_body_total(f, PBX_IPC_PROMPT_ANSWER_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if (!pbx_ipc_all_zero(b + 1, 3U)) {
        return PBX_E_IPC_RESERVED;
    }
    out->answer = b[0];
    out->realm = pbx_le_get32(b + 4);
    out->session = pbx_le_get64(b + 8);
    out->job_id = pbx_le_get64(b + 16);
    out->object.id = pbx_le_get64(b + 24);
    out->job_gen = pbx_le_get32(b + 32);
    out->request.index = pbx_le_get32(b + 36);
    out->request.gen = pbx_le_get32(b + 40);
    out->object.gen = pbx_le_get32(b + 44);
    if (out->answer != PBX_IPC_ANSWER_APPROVE &&
        out->answer != PBX_IPC_ANSWER_DENY) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (out->job_gen == 0U || out->request.gen == 0U || out->object.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    return PBX_OK;
}

/* ---- WITHDRAW ------------------------------------------------------------
 */

/* Encodes WITHDRAW (request or acknowledgement): the shown object. */
static pbx_err pbx_ipc_withdraw_put(uint16_t op, pbx_ipc_id request,
                                    const pbx_ipc_withdraw *rec, uint8_t *buf,
                                    size_t buf_len)
{
    PBX_ASSERT(rec != NULL);
    return pbx_ipc_object_body_put(op, 0U, request, &rec->object, buf, buf_len);
}

/* Decodes either WITHDRAW direction. */
static pbx_err pbx_ipc_withdraw_get(const pbx_ipc_frame *f, uint16_t op,
                                    pbx_ipc_withdraw *out)
{
    PBX_ASSERT(out != NULL);
    return pbx_ipc_object_body_get(f, op, &out->object);
}

/* Encodes a WITHDRAW of op and proves it with its own decoder. */
static pbx_err pbx_ipc_withdraw_write(uint16_t op, pbx_ipc_id request,
                                      const pbx_ipc_withdraw *rec, uint8_t *buf,
                                      size_t buf_len, size_t *out_len)
{
    pbx_err err = pbx_ipc_withdraw_put(op, request, rec, buf, buf_len);
    pbx_ipc_frame f;
    pbx_ipc_withdraw chk;
    if (err == PBX_OK) {
        err = pbx_ipc_frame_reopen(buf, PBX_IPC_WITHDRAW_BYTES, 0U, &f);
    }
    if (err == PBX_OK) {
        err = pbx_ipc_withdraw_get(&f, op, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_WITHDRAW_BYTES, out_len);
}

pbx_err pbx_ipc_withdraw_encode(pbx_ipc_id request, const pbx_ipc_withdraw *rec,
                                uint8_t *buf, size_t buf_len, size_t *out_len)
{
    return pbx_ipc_withdraw_write(PBX_IPC_OP_WITHDRAW, request, rec, buf,
                                  buf_len, out_len);
}

pbx_err pbx_ipc_withdraw_decode(const pbx_ipc_frame *f, pbx_ipc_withdraw *out)
{
    return pbx_ipc_withdraw_get(f, PBX_IPC_OP_WITHDRAW, out);
}

pbx_err pbx_ipc_withdraw_reply_encode(pbx_ipc_id request,
                                      const pbx_ipc_withdraw *rec, uint8_t *buf,
                                      size_t buf_len, size_t *out_len)
{
    return pbx_ipc_withdraw_write(PBX_IPC_REPLY_OF(PBX_IPC_OP_WITHDRAW),
                                  request, rec, buf, buf_len, out_len);
}

pbx_err pbx_ipc_withdraw_reply_decode(const pbx_ipc_frame *f,
                                      pbx_ipc_withdraw *out)
{
    return pbx_ipc_withdraw_get(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_WITHDRAW), out);
}
