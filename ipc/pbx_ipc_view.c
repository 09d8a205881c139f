/*
 * pbx_ipc_view.c: the receipt-free ttyd grant VIEW (ACTIVE or REMOVE with
 * the full grant row) and its generational acknowledgement.
 */
#include "ipc/pbx_ipc_internal.h"

/* Writes the VIEW fixed part; the caller proved the body has room. */
static void pbx_ipc_view_put(uint8_t *b, const pbx_ipc_view *r)
{
    const pbx_ipc_context *c = &r->ctx;
    b[0] = r->kind;
    b[1] = c->lifetime;
    b[2] = c->mode;
    b[3] = c->urgency;
    pbx_le_put16(b + 4, c->operation);
    pbx_le_put16(b + 6, c->object_class);
    pbx_le_put32(b + 8, r->grant.index);
    pbx_le_put32(b + 12, r->grant.gen);
    pbx_le_put64(b + 16, c->session);
    pbx_le_put64(b + 24, c->job_id);
    pbx_le_put64(b + 32, r->object.id);
    pbx_le_put64(b + 40, r->scope_id);
    pbx_le_put64(b + 48, r->target.process_id);
    pbx_le_put32(b + 56, c->realm);
    pbx_le_put32(b + 60, c->job_gen);
    pbx_le_put32(b + 64, r->object.gen);
    pbx_le_put32(b + 68, r->target.process_gen);
    pbx_le_put32(b + 72, r->target.slot);
    pbx_le_put32(b + 76, r->installed_slot);
    pbx_ipc_entry_put(b, 80, PBX_IPC_VIEW_FIXED_BYTES, &c->entry);
    pbx_le_put16(b + 82, r->label.len);
    pbx_mem_copy(b + 88, r->selector_digest, PBX_IPC_DIGEST_BYTES);
    pbx_mem_copy(b + PBX_IPC_VIEW_FIXED_BYTES + c->entry.len, r->label.bytes,
                 r->label.len);
}

pbx_err pbx_ipc_view_encode(pbx_ipc_id request, const pbx_ipc_view *rec,
                            uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    if (rec->ctx.entry.len > PBX_IPC_ENTRY_LEN_BYTES_MAX ||
        rec->label.len > PBX_IPC_LABEL_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    size_t body_len =
        PBX_IPC_VIEW_FIXED_BYTES + (size_t)rec->ctx.entry.len + rec->label.len;
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_VIEW, request,
                                      0U, body_len, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_ipc_view_put(b, rec);
    pbx_ipc_frame f;
    pbx_ipc_view chk;
    err = pbx_ipc_frame_reopen(buf, body_len, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_view_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, body_len, out_len);
}

/* Reads the VIEW fixed part and the tail, whose lengths are the ones the
 * caller proved (entry_len, label_len), not a second read of the body:
 * the values are the same, and EVA then keeps their bounds. */
static void pbx_ipc_view_get(const uint8_t *b, uint16_t entry_len,
                             uint16_t label_len, pbx_ipc_view *r)
{
    pbx_ipc_context *c = &r->ctx;
    r->kind = b[0];
    c->lifetime = b[1];
    c->mode = b[2];
    c->urgency = b[3];
    c->operation = pbx_le_get16(b + 4);
    c->object_class = pbx_le_get16(b + 6);
    r->grant.index = pbx_le_get32(b + 8);
    r->grant.gen = pbx_le_get32(b + 12);
    c->session = pbx_le_get64(b + 16);
    c->job_id = pbx_le_get64(b + 24);
    r->object.id = pbx_le_get64(b + 32);
    r->scope_id = pbx_le_get64(b + 40);
    r->target.process_id = pbx_le_get64(b + 48);
    c->realm = pbx_le_get32(b + 56);
    c->job_gen = pbx_le_get32(b + 60);
    r->object.gen = pbx_le_get32(b + 64);
    r->target.process_gen = pbx_le_get32(b + 68);
    r->target.slot = pbx_le_get32(b + 72);
    r->installed_slot = pbx_le_get32(b + 76);
    c->entry.len = entry_len;
    r->label.len = label_len;
    pbx_mem_copy(r->selector_digest, b + 88, PBX_IPC_DIGEST_BYTES);
    pbx_mem_copy(c->entry.bytes, b + PBX_IPC_VIEW_FIXED_BYTES, c->entry.len);
    pbx_mem_copy(r->label.bytes, b + PBX_IPC_VIEW_FIXED_BYTES + c->entry.len,
                 r->label.len);
}

/* Checks every VIEW field after the lengths are proven. */
static pbx_err pbx_ipc_view_check(const pbx_ipc_view *r)
{
    if (r->kind != PBX_IPC_VIEW_ACTIVE && r->kind != PBX_IPC_VIEW_REMOVE) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    pbx_err err = pbx_ipc_context_check(&r->ctx);
    if (err != PBX_OK) {
        return err;
    }
    if (r->grant.gen == 0U || r->object.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    err = pbx_ipc_target_check(r->ctx.mode, &r->target);
    if (err != PBX_OK) {
        return err;
    }
    if (r->ctx.mode == PBX_IPC_MODE_RUNTIME_REPLY && r->installed_slot != 0U) {
        return PBX_E_IPC_MODE_TARGET;
    }
    return pbx_ipc_text_check(r->label.bytes, r->label.len, 0U,
                              PBX_IPC_LABEL_LEN_BYTES_MAX);
}

pbx_err pbx_ipc_view_decode(const pbx_ipc_frame *f, pbx_ipc_view *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_at_least(f, PBX_IPC_OP_VIEW, PBX_IPC_VIEW_FIXED_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    uint16_t e = 0;
    uint16_t l = 0;
    err = pbx_ipc_texts_total(f, PBX_IPC_VIEW_FIXED_BYTES, 80U, 0U, &e, &l);
    if (err != PBX_OK) {
        return err;
    }
    if (pbx_le_get32(b + 84) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    pbx_ipc_view_get(b, e, l, out);
    return pbx_ipc_view_check(out);
}

pbx_err pbx_ipc_view_reply_encode(pbx_ipc_id request,
                                  const pbx_ipc_view_ack *rec, uint8_t *buf,
                                  size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_REPLY_OF(PBX_IPC_OP_VIEW),
                            request, 0U, PBX_IPC_VIEW_REPLY_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    b[0] = rec->kind;
    pbx_le_put32(b + 4, rec->grant.index);
    pbx_le_put32(b + 8, rec->grant.gen);
    pbx_ipc_frame f;
    pbx_ipc_view_ack chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_VIEW_REPLY_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_view_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_VIEW_REPLY_BYTES, out_len);
}

pbx_err pbx_ipc_view_reply_decode(const pbx_ipc_frame *f, pbx_ipc_view_ack *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_VIEW),
                                     PBX_IPC_VIEW_REPLY_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if (!pbx_ipc_all_zero(b + 1, 3U)) {
        return PBX_E_IPC_RESERVED;
    }
    out->kind = b[0];
    out->grant.index = pbx_le_get32(b + 4);
    out->grant.gen = pbx_le_get32(b + 8);
    if (out->kind != PBX_IPC_VIEW_ACTIVE && out->kind != PBX_IPC_VIEW_REMOVE) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    return out->grant.gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}
