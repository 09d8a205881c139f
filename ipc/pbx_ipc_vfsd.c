/*
 * pbx_ipc_vfsd.c: the vfsd peer exchanges: RESOLVE through the transferred
 * scope, DETACH of powerboxd's own alias, receipt-free RETIRE.
 */
#include "ipc/pbx_ipc_internal.h"

/* ---- RESOLVE -------------------------------------------------------------
 */

pbx_err pbx_ipc_resolve_encode(pbx_ipc_id request, const pbx_ipc_resolve *rec,
                               uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    if (rec->selector_len > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    size_t body_len = PBX_IPC_RESOLVE_FIXED_BYTES + (size_t)rec->selector_len;
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_RESOLVE, request,
                                      0U, body_len, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put16(b, rec->operation);
    pbx_le_put16(b + 2, rec->object_class);
    pbx_le_put32(b + 4, rec->selector_len);
    pbx_mem_copy(b + 8, rec->selector_digest, PBX_IPC_DIGEST_BYTES);
    pbx_ipc_bytes_copy(b + PBX_IPC_RESOLVE_FIXED_BYTES, rec->selector,
                       rec->selector_len);
    pbx_ipc_frame f;
    pbx_ipc_resolve chk;
    err = pbx_ipc_frame_reopen(buf, body_len, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_resolve_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, body_len, out_len);
}

pbx_err pbx_ipc_resolve_decode(const pbx_ipc_frame *f, pbx_ipc_resolve *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_at_least(f, PBX_IPC_OP_RESOLVE,
                                        PBX_IPC_RESOLVE_FIXED_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    uint32_t len = pbx_le_get32(b + 4);
    if (len == 0U || len > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    err = pbx_ipc_body_total(f, PBX_IPC_RESOLVE_FIXED_BYTES + (size_t)len);
    if (err != PBX_OK) {
        return err;
    }
    out->operation = pbx_le_get16(b);
    out->object_class = pbx_le_get16(b + 2);
    out->selector_len = len;
    pbx_mem_copy(out->selector_digest, b + 8, PBX_IPC_DIGEST_BYTES);
    out->selector = b + PBX_IPC_RESOLVE_FIXED_BYTES;
    if (!pbx_ipc_operation_known(out->operation) ||
        !pbx_ipc_class_known(out->object_class)) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    return PBX_OK;
}

pbx_err pbx_ipc_resolve_reply_encode(pbx_ipc_id request,
                                     const pbx_ipc_resolve_reply *rec,
                                     uint8_t *buf, size_t buf_len,
                                     size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint16_t caps = rec->result == PBX_IPC_RESOLVE_FOUND ? 1U : 0U;
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_REPLY_OF(PBX_IPC_OP_RESOLVE),
                            request, caps, PBX_IPC_RESOLVE_REPLY_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    b[0] = rec->result;
    pbx_le_put16(b + 2, rec->object_class);
    pbx_le_put16(b + 4, rec->operation);
    pbx_le_put64(b + 8, rec->object.id);
    pbx_le_put64(b + 16, rec->scope_id);
    pbx_le_put32(b + 24, rec->object.gen);
    pbx_mem_copy(b + 32, rec->selector_digest, PBX_IPC_DIGEST_BYTES);
    pbx_ipc_frame f;
    pbx_ipc_resolve_reply chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_RESOLVE_REPLY_BYTES, caps, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_resolve_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_RESOLVE_REPLY_BYTES, out_len);
}

/* Applies the result rules: which fields and how many capabilities. */
static pbx_err pbx_ipc_resolve_reply_check(const pbx_ipc_resolve_reply *r,
                                           uint16_t caps)
{
    if (r->result < PBX_IPC_RESOLVE_FOUND ||
        r->result > PBX_IPC_RESOLVE_DENIED ||
        !pbx_ipc_operation_known(r->operation)) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    bool no_object =
        r->object.id == 0U && r->object.gen == 0U && r->scope_id == 0U;
    if (r->result == PBX_IPC_RESOLVE_DENIED) {
        if (r->object_class != 0U || !no_object) {
            return PBX_E_IPC_OUTCOME_FIELDS;
        }
        return caps == 0U ? PBX_OK : PBX_E_IPC_CAP_PARTITION;
    }
    if (!pbx_ipc_class_known(r->object_class)) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (r->result == PBX_IPC_RESOLVE_NOT_FOUND) {
        if (!no_object) {
            return PBX_E_IPC_OUTCOME_FIELDS;
        }
        return caps == 0U ? PBX_OK : PBX_E_IPC_CAP_PARTITION;
    }
    if (r->object.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    return caps == 1U ? PBX_OK : PBX_E_IPC_CAP_PARTITION;
}

pbx_err pbx_ipc_resolve_reply_decode(const pbx_ipc_frame *f,
                                     pbx_ipc_resolve_reply *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_RESOLVE),
                                     PBX_IPC_RESOLVE_REPLY_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if (b[1] != 0U || pbx_le_get16(b + 6) != 0U || pbx_le_get32(b + 28) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    out->result = b[0];
    out->object_class = pbx_le_get16(b + 2);
    out->operation = pbx_le_get16(b + 4);
    out->object.id = pbx_le_get64(b + 8);
    out->scope_id = pbx_le_get64(b + 16);
    out->object.gen = pbx_le_get32(b + 24);
    pbx_mem_copy(out->selector_digest, b + 32, PBX_IPC_DIGEST_BYTES);
    return pbx_ipc_resolve_reply_check(out, f->cap_count);
}

/* ---- DETACH --------------------------------------------------------------
 */

/* Encodes DETACH (request with the alias, or its acknowledgement). */
static pbx_err pbx_ipc_detach_put(uint16_t op, uint16_t caps,
                                  pbx_ipc_id request, const pbx_ipc_detach *rec,
                                  uint8_t *buf, size_t buf_len)
{
    PBX_ASSERT(rec != NULL);
    return pbx_ipc_object_body_put(op, caps, request, &rec->object, buf,
                                   buf_len);
}

/* Decodes either DETACH direction. */
static pbx_err pbx_ipc_detach_get(const pbx_ipc_frame *f, uint16_t op,
                                  pbx_ipc_detach *out)
{
    PBX_ASSERT(out != NULL);
    return pbx_ipc_object_body_get(f, op, &out->object);
}

pbx_err pbx_ipc_detach_encode(pbx_ipc_id request, const pbx_ipc_detach *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len)
{
    pbx_err err =
        pbx_ipc_detach_put(PBX_IPC_OP_DETACH, 1U, request, rec, buf, buf_len);
    pbx_ipc_frame f;
    pbx_ipc_detach chk;
    if (err == PBX_OK) {
        err = pbx_ipc_frame_reopen(buf, PBX_IPC_DETACH_BYTES, 1U, &f);
    }
    if (err == PBX_OK) {
        err = pbx_ipc_detach_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_DETACH_BYTES, out_len);
}

pbx_err pbx_ipc_detach_decode(const pbx_ipc_frame *f, pbx_ipc_detach *out)
{
    return pbx_ipc_detach_get(f, PBX_IPC_OP_DETACH, out);
}

pbx_err pbx_ipc_detach_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_detach *rec, uint8_t *buf,
                                    size_t buf_len, size_t *out_len)
{
    pbx_err err = pbx_ipc_detach_put(PBX_IPC_REPLY_OF(PBX_IPC_OP_DETACH), 0U,
                                     request, rec, buf, buf_len);
    pbx_ipc_frame f;
    pbx_ipc_detach chk;
    if (err == PBX_OK) {
        err = pbx_ipc_frame_reopen(buf, PBX_IPC_DETACH_BYTES, 0U, &f);
    }
    if (err == PBX_OK) {
        err = pbx_ipc_detach_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_DETACH_BYTES, out_len);
}

pbx_err pbx_ipc_detach_reply_decode(const pbx_ipc_frame *f, pbx_ipc_detach *out)
{
    return pbx_ipc_detach_get(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_DETACH), out);
}

/* ---- RETIRE --------------------------------------------------------------
 */

/* Encodes RETIRE (request or acknowledgement; both are receipt-free). */
static pbx_err pbx_ipc_retire_put(uint16_t op, pbx_ipc_id request,
                                  const pbx_ipc_retire *rec, uint8_t *buf,
                                  size_t buf_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, op, request, 0U,
                                      PBX_IPC_RETIRE_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put64(b, rec->object.id);
    pbx_le_put64(b + 8, rec->scope_id);
    pbx_le_put32(b + 16, rec->object.gen);
    pbx_le_put16(b + 20, rec->object_class);
    return PBX_OK;
}

/* Decodes either RETIRE direction. */
static pbx_err pbx_ipc_retire_get(const pbx_ipc_frame *f, uint16_t op,
                                  pbx_ipc_retire *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, op, PBX_IPC_RETIRE_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if (pbx_le_get16(b + 22) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    out->object.id = pbx_le_get64(b);
    out->scope_id = pbx_le_get64(b + 8);
    out->object.gen = pbx_le_get32(b + 16);
    out->object_class = pbx_le_get16(b + 20);
    if (!pbx_ipc_class_known(out->object_class)) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    return out->object.gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}

pbx_err pbx_ipc_retire_encode(pbx_ipc_id request, const pbx_ipc_retire *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len)
{
    pbx_err err =
        pbx_ipc_retire_put(PBX_IPC_OP_RETIRE, request, rec, buf, buf_len);
    pbx_ipc_frame f;
    pbx_ipc_retire chk;
    if (err == PBX_OK) {
        err = pbx_ipc_frame_reopen(buf, PBX_IPC_RETIRE_BYTES, 0U, &f);
    }
    if (err == PBX_OK) {
        err = pbx_ipc_retire_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_RETIRE_BYTES, out_len);
}

pbx_err pbx_ipc_retire_decode(const pbx_ipc_frame *f, pbx_ipc_retire *out)
{
    return pbx_ipc_retire_get(f, PBX_IPC_OP_RETIRE, out);
}

pbx_err pbx_ipc_retire_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_retire *rec, uint8_t *buf,
                                    size_t buf_len, size_t *out_len)
{
    pbx_err err = pbx_ipc_retire_put(PBX_IPC_REPLY_OF(PBX_IPC_OP_RETIRE),
                                     request, rec, buf, buf_len);
    pbx_ipc_frame f;
    pbx_ipc_retire chk;
    if (err == PBX_OK) {
        err = pbx_ipc_frame_reopen(buf, PBX_IPC_RETIRE_BYTES, 0U, &f);
    }
    if (err == PBX_OK) {
        err = pbx_ipc_retire_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_RETIRE_BYTES, out_len);
}

pbx_err pbx_ipc_retire_reply_decode(const pbx_ipc_frame *f, pbx_ipc_retire *out)
{
    return pbx_ipc_retire_get(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_RETIRE), out);
}
