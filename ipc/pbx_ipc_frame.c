/*
 * pbx_ipc_frame.c: the frame header codec, the authority partition table,
 * discriminant checks and the helpers every record codec shares.
 */
#include "ipc/pbx_ipc_internal.h"

/* The authority partition table, indexed by the op number itself: the
 * reply bit, the peer family (the high byte without the reply bit) and
 * the number within the family, so a frame's row is found by three
 * index computations and one comparison, never a scan (issue 23 item 5).
 * A slot no row fills holds op 0 and matches no frame. Capability ranges
 * are for status-zero frames; error replies never carry a capability. */
#define PBX_IPC_FAMILIES   5U
#define PBX_IPC_FAMILY_OPS 8U
#define PBX_IPC_ROW(op, lo, hi, id)                                            \
    [((op) >> 15) & 1U][((op) >> 8) & 0x7FU][(op)&0xFFU] = {(op), (lo), (hi),  \
                                                            (id)}
static const pbx_ipc_op_rule
    pbx_ipc_rules[2][PBX_IPC_FAMILIES][PBX_IPC_FAMILY_OPS] = {
        PBX_IPC_ROW(PBX_IPC_OP_BEGIN, 0, 0, PBX_IPC_ID_ZERO),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_BEGIN), 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_SELECTOR, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_SELECTOR), 0, 0,
                    PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_COMMIT, 1, 1, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_COMMIT), 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_DECISION, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_DECISION), 0, 1,
                    PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_CANCEL, 0, 0, PBX_IPC_ID_CANCEL),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_CANCEL), 0, 0,
                    PBX_IPC_ID_CANCEL),
        PBX_IPC_ROW(PBX_IPC_OP_CONSUME, 0, 0, PBX_IPC_ID_ZERO),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_CONSUME), 0, 0,
                    PBX_IPC_ID_ZERO),
        PBX_IPC_ROW(PBX_IPC_OP_EXPIRE, 0, 0, PBX_IPC_ID_ZERO),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_EXPIRE), 0, 0, PBX_IPC_ID_ZERO),
        PBX_IPC_ROW(PBX_IPC_OP_RESOLVE, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_RESOLVE), 0, 1,
                    PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_DETACH, 1, 1, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_DETACH), 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_RETIRE, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_RETIRE), 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_POLICY, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_POLICY), 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_PROMPT, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_PROMPT), 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_VIEW, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_VIEW), 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_WITHDRAW, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_WITHDRAW), 0, 0,
                    PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_INSTALL, 1, 1, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_INSTALL), 1, 1,
                    PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_REVOKE, 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_REPLY_OF(PBX_IPC_OP_REVOKE), 0, 0, PBX_IPC_ID_LIVE),
        PBX_IPC_ROW(PBX_IPC_OP_WAKE, 0, 0, PBX_IPC_ID_LIVE),
};

/* Every op number fits the table: family below PBX_IPC_FAMILIES, number
 * below PBX_IPC_FAMILY_OPS (a designated index past the end would not
 * compile either). */
_Static_assert((PBX_IPC_OP_WAKE >> 8) < PBX_IPC_FAMILIES &&
                   (PBX_IPC_OP_EXPIRE & 0xFFU) < PBX_IPC_FAMILY_OPS,
               "the largest family and number fit the table");

/* The ops whose status-zero record is an empty body. */
static const uint16_t pbx_ipc_empty_ops[] = {
    PBX_IPC_OP_DECISION,
    PBX_IPC_REPLY_OF(PBX_IPC_OP_SELECTOR),
    PBX_IPC_REPLY_OF(PBX_IPC_OP_COMMIT),
    PBX_IPC_REPLY_OF(PBX_IPC_OP_CANCEL),
    PBX_IPC_REPLY_OF(PBX_IPC_OP_CONSUME),
    PBX_IPC_REPLY_OF(PBX_IPC_OP_EXPIRE),
    PBX_IPC_REPLY_OF(PBX_IPC_OP_PROMPT),
};

static const pbx_ipc_op_rule *pbx_ipc_rule_find(uint16_t op)
{
    uint32_t family = ((uint32_t)op >> 8) & 0x7FU;
    uint32_t number = (uint32_t)op & 0xFFU;
    if (family >= PBX_IPC_FAMILIES || number >= PBX_IPC_FAMILY_OPS) {
        return NULL;
    }
    const pbx_ipc_op_rule *row =
        &pbx_ipc_rules[(uint32_t)op >> 15][family][number];
    /* An empty slot holds op 0, which is no frame's op. */
    return row->op == op && op != 0U ? row : NULL;
}

pbx_err pbx_ipc_op_rule_get(uint16_t op, pbx_ipc_op_rule *out)
{
    PBX_ASSERT(out != NULL);
    const pbx_ipc_op_rule *row = pbx_ipc_rule_find(op);
    if (row == NULL) {
        return PBX_E_IPC_UNKNOWN_OP;
    }
    *out = *row;
    return PBX_OK;
}

bool pbx_ipc_caps_allowed(uint16_t op, uint16_t status, uint16_t caps)
{
    const pbx_ipc_op_rule *row = pbx_ipc_rule_find(op);
    if (row == NULL) {
        return false;
    }
    if (status != 0U) {
        return (op & PBX_IPC_REPLY_BIT) != 0U && caps == 0U;
    }
    return caps >= row->caps_min && caps <= row->caps_max;
}

bool pbx_ipc_operation_known(uint32_t v)
{
    return v >= PBX_IPC_OPERATION_READ && v <= PBX_IPC_OPERATION_CREATE;
}

bool pbx_ipc_class_known(uint32_t v)
{
    return v >= PBX_IPC_CLASS_FILE && v <= PBX_IPC_CLASS_ENDPOINT;
}

bool pbx_ipc_lifetime_known(uint32_t v)
{
    return v >= PBX_IPC_LIFETIME_ONE_SHOT && v <= PBX_IPC_LIFETIME_JOB;
}

pbx_err pbx_ipc_admission_check(uint16_t operation, uint16_t object_class,
                                uint8_t lifetime)
{
    bool entry_op = operation == PBX_IPC_OPERATION_ENTRY_METADATA_READ ||
                    operation == PBX_IPC_OPERATION_ENTRY_TOUCH;
    /* The seed admits a directory entry only for an exact entry-metadata
     * read or touch, one-shot: never a widened operation or lifetime. */
    if (object_class == PBX_IPC_CLASS_DIRECTORY_ENTRY) {
        return (entry_op && lifetime == PBX_IPC_LIFETIME_ONE_SHOT)
                   ? PBX_OK
                   : PBX_E_IPC_DIR_ENTRY_WIDENED;
    }
    /* A file that does not exist yet is only ever a file. */
    bool bad_create = operation == PBX_IPC_OPERATION_CREATE &&
                      object_class != PBX_IPC_CLASS_FILE;
    return entry_op || bad_create ? PBX_E_IPC_ADMISSION : PBX_OK;
}

/* Applies the header request-identity rule of a status-zero frame. */
static pbx_err pbx_ipc_id_check(uint8_t rule, pbx_ipc_id id)
{
    switch (rule) {
    case PBX_IPC_ID_ZERO:
        return (id.index == 0U && id.gen == 0U) ? PBX_OK : PBX_E_IPC_REQUEST_ID;
    case PBX_IPC_ID_LIVE:
        return id.gen != 0U ? PBX_OK : PBX_E_IPC_REQUEST_ID;
    default:
        return (id.gen != 0U || id.index == 0U) ? PBX_OK : PBX_E_IPC_REQUEST_ID;
    }
}

/* Header checks after the length, magic and version are proven: status
 * rule, partition table and request identity. */
static pbx_err pbx_ipc_header_rules(const pbx_ipc_op_rule *row,
                                    const pbx_ipc_frame *f)
{
    if (f->status != 0U) {
        if ((f->op & PBX_IPC_REPLY_BIT) == 0U || f->body_len != 0U ||
            f->cap_count != 0U) {
            return PBX_E_IPC_STATUS;
        }
        return PBX_OK;
    }
    if (f->cap_count < row->caps_min || f->cap_count > row->caps_max) {
        return PBX_E_IPC_CAP_PARTITION;
    }
    return pbx_ipc_id_check(row->id_rule, f->request);
}

/* The proof pbx_ipc_frame_decode leaves in a status-zero frame it
 * accepted (pbx_ipc_frame.proven): op and capability count under a mark
 * bit, so a zeroed record (proven 0) matches no op, not even op 0. */
static uint64_t pbx_ipc_proof(uint16_t op, uint16_t caps)
{
    return ((uint64_t)1U << 32) | ((uint64_t)caps << 16) | (uint64_t)op;
}

/* Reads every field of *out from the header of the len bytes in buf (the
 * caller proved len >= PBX_IPC_HEADER_BYTES) before anything is checked:
 * every field is then written on every later path, so the record needs
 * no clearing first (issue 23 item 5). proven stays 0 until every check
 * has passed. */
static void pbx_ipc_header_get(const uint8_t *buf, size_t len,
                               pbx_ipc_frame *out)
{
    out->op = pbx_le_get16(buf + 6);
    out->status = pbx_le_get16(buf + 8);
    out->cap_count = pbx_le_get16(buf + 10);
    out->request.index = pbx_le_get32(buf + 12);
    out->request.gen = pbx_le_get32(buf + 16);
    out->seq = pbx_le_get32(buf + PBX_IPC_SEQ_OFFSET);
    out->body_len = len - PBX_IPC_HEADER_BYTES;
    out->body = out->body_len != 0U ? buf + PBX_IPC_HEADER_BYTES : NULL;
    out->proven = 0U;
}

pbx_err pbx_ipc_frame_decode(const uint8_t *buf, size_t len,
                             uint16_t transport_caps, pbx_ipc_frame *out)
{
    PBX_ASSERT(out != NULL);
    PBX_ASSERT(buf != NULL || len == 0U);
    if (len < PBX_IPC_HEADER_BYTES) {
        /* No header to read: the one path that defines the fields by
         * clearing them, so a caller (and EVA) never reads stale ones. */
        pbx_mem_set(out, 0, sizeof(*out));
        return PBX_E_IPC_TRUNCATED;
    }
    pbx_ipc_header_get(buf, len, out);
    if (pbx_le_get32(buf) != PBX_IPC_MAGIC) {
        return PBX_E_IPC_MAGIC;
    }
    if (pbx_le_get16(buf + 4) != PBX_IPC_VERSION) {
        return PBX_E_IPC_VERSION;
    }
    const pbx_ipc_op_rule *row = pbx_ipc_rule_find(out->op);
    if (row == NULL) {
        return PBX_E_IPC_UNKNOWN_OP;
    }
    if (len > PBX_IPC_FRAME_BYTES_MAX) {
        return PBX_E_IPC_FRAME_TOO_LARGE;
    }
    if ((size_t)pbx_le_get32(buf + 20) != out->body_len) {
        return PBX_E_IPC_BODY_LEN;
    }
    if (pbx_le_get32(buf + PBX_IPC_RESERVED_OFFSET) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    if (out->cap_count != transport_caps) {
        return PBX_E_IPC_CAP_COUNT;
    }
    pbx_err err = pbx_ipc_header_rules(row, out);
    if (err == PBX_OK && out->status == 0U) {
        out->proven = pbx_ipc_proof(out->op, out->cap_count);
    }
    return err;
}

/* Writes a header with seq 0; the caller proved PBX_IPC_HEADER_BYTES of
 * room. */
static void pbx_ipc_header_put(uint8_t *buf, uint16_t op, uint16_t status,
                               uint16_t caps, pbx_ipc_id request,
                               size_t body_len)
{
    pbx_le_put32(buf, PBX_IPC_MAGIC);
    pbx_le_put16(buf + 4, (uint16_t)PBX_IPC_VERSION);
    pbx_le_put16(buf + 6, op);
    pbx_le_put16(buf + 8, status);
    pbx_le_put16(buf + 10, caps);
    pbx_le_put32(buf + 12, request.index);
    pbx_le_put32(buf + 16, request.gen);
    pbx_le_put32(buf + 20, (uint32_t)body_len);
    pbx_le_put32(buf + PBX_IPC_SEQ_OFFSET, 0U);
    pbx_le_put32(buf + PBX_IPC_RESERVED_OFFSET, 0U);
}

pbx_err pbx_ipc_frame_set_seq(uint8_t *frame, size_t len, uint32_t seq)
{
    PBX_ASSERT(frame != NULL || len == 0U);
    if (len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_TRUNCATED;
    }
    pbx_le_put32(frame + PBX_IPC_SEQ_OFFSET, seq);
    return PBX_OK;
}

pbx_err pbx_ipc_frame_peek_seq(const uint8_t *frame, size_t len, uint32_t *seq)
{
    PBX_ASSERT(seq != NULL);
    PBX_ASSERT(frame != NULL || len == 0U);
    if (len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_TRUNCATED;
    }
    *seq = pbx_le_get32(frame + PBX_IPC_SEQ_OFFSET);
    return PBX_OK;
}

pbx_err pbx_ipc_frame_start(uint8_t *buf, size_t buf_len, uint16_t op,
                            pbx_ipc_id request, uint16_t caps, size_t body_len,
                            uint8_t **body)
{
    PBX_ASSERT(buf != NULL || buf_len == 0U);
    PBX_ASSERT(body != NULL);
    if (body_len > PBX_IPC_BODY_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    if (buf_len < PBX_IPC_HEADER_BYTES ||
        buf_len - PBX_IPC_HEADER_BYTES < body_len) {
        return PBX_E_IPC_NO_SPACE;
    }
    pbx_ipc_header_put(buf, op, 0U, caps, request, body_len);
    *body = buf + PBX_IPC_HEADER_BYTES;
    /* Kept (issue 23 item 5): the record encoders that follow write their
     * named fields only, and their reserved words and padding are zero
     * because of this clear (the COMMIT entry of equivalent.txt leans on
     * it); no encoder has been proven to write every byte it is given. */
    pbx_mem_set(*body, 0U, body_len);
    return PBX_OK;
}

pbx_err pbx_ipc_frame_reopen(const uint8_t *buf, size_t body_len, uint16_t caps,
                             pbx_ipc_frame *f)
{
    return pbx_ipc_frame_decode(buf, PBX_IPC_HEADER_BYTES + body_len, caps, f);
}

pbx_err pbx_ipc_frame_done(pbx_err err, size_t body_len, size_t *out_len)
{
    PBX_ASSERT(out_len != NULL);
    if (err == PBX_OK) {
        *out_len = PBX_IPC_HEADER_BYTES + body_len;
    }
    return err;
}

pbx_err pbx_ipc_status_reply_encode(uint16_t req_op, pbx_ipc_id request,
                                    pbx_err status, uint8_t *buf,
                                    size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(out_len != NULL);
    PBX_ASSERT(buf != NULL || buf_len == 0U);
    if ((req_op & PBX_IPC_REPLY_BIT) != 0U ||
        pbx_ipc_rule_find(PBX_IPC_REPLY_OF(req_op)) == NULL) {
        return PBX_E_IPC_UNKNOWN_OP;
    }
    if (status == PBX_OK || (unsigned)status > 0xFFFFU) {
        return PBX_E_IPC_STATUS;
    }
    if (buf_len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_NO_SPACE;
    }
    pbx_ipc_header_put(buf, PBX_IPC_REPLY_OF(req_op), (uint16_t)status, 0U,
                       request, 0U);
    *out_len = PBX_IPC_HEADER_BYTES;
    return PBX_OK;
}

static bool pbx_ipc_is_empty_op(uint16_t op)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(pbx_ipc_empty_ops); i++) {
        if (pbx_ipc_empty_ops[i] == op) {
            return true;
        }
    }
    return false;
}

pbx_err pbx_ipc_empty_encode(uint16_t op, pbx_ipc_id request, uint8_t *buf,
                             size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(out_len != NULL);
    if (!pbx_ipc_is_empty_op(op)) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    uint8_t *body = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, op, request, 0U, 0U, &body);
    if (err != PBX_OK) {
        return err;
    }
    pbx_ipc_frame f;
    err = pbx_ipc_frame_reopen(buf, 0U, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_empty_decode(&f, op);
    }
    return pbx_ipc_frame_done(err, 0U, out_len);
}

pbx_err pbx_ipc_empty_decode(const pbx_ipc_frame *f, uint16_t op)
{
    if (!pbx_ipc_is_empty_op(op)) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    return pbx_ipc_body_exact(f, op, 0U);
}

pbx_err pbx_ipc_body_exact(const pbx_ipc_frame *f, uint16_t op, size_t len)
{
    pbx_err err = pbx_ipc_body_at_least(f, op, len);
    return err != PBX_OK ? err : pbx_ipc_body_total(f, len);
}

pbx_err pbx_ipc_body_at_least(const pbx_ipc_frame *f, uint16_t op, size_t fixed)
{
    PBX_ASSERT(f != NULL);
    PBX_ASSERT(f->body != NULL || f->body_len == 0U);
    if (f->op != op) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    if (f->status != 0U) {
        return PBX_E_IPC_STATUS;
    }
    /* pbx_ipc_frame_decode checked this op's capability partition and left
     * its proof, so the rule row is not looked up again here. A frame
     * built by hand, or whose op or cap_count changed since, carries no
     * matching proof: its partition was never proven, so it is refused. */
    if (f->proven != pbx_ipc_proof(op, f->cap_count)) {
        return PBX_E_IPC_CAP_PARTITION;
    }
    return f->body_len < fixed ? PBX_E_IPC_TRUNCATED : PBX_OK;
}

pbx_err pbx_ipc_body_total(const pbx_ipc_frame *f, size_t want)
{
    if (f->body_len < want) {
        return PBX_E_IPC_TRUNCATED;
    }
    return f->body_len > want ? PBX_E_IPC_TRAILING : PBX_OK;
}

pbx_err pbx_ipc_texts_total(const pbx_ipc_frame *f, size_t fixed,
                            size_t lens_off, size_t extra, uint16_t *entry_len,
                            uint16_t *label_len)
{
    PBX_ASSERT(lens_off + 4U <= fixed && f->body_len >= fixed);
    uint16_t e = pbx_le_get16(f->body + lens_off);
    uint16_t l = pbx_le_get16(f->body + lens_off + 2U);
    if (e == 0U || e > PBX_IPC_ENTRY_LEN_BYTES_MAX ||
        l > PBX_IPC_LABEL_LEN_BYTES_MAX) {
        return PBX_E_IPC_BOUND;
    }
    pbx_err err = pbx_ipc_body_total(f, fixed + (size_t)e + l + extra);
    if (err == PBX_OK) {
        *entry_len = e;
        *label_len = l;
    }
    return err;
}

bool pbx_ipc_all_zero(const uint8_t *p, size_t n)
{
    uint8_t acc = 0U;
    for (size_t i = 0; i < n; i++) {
        acc |= p[i];
    }
    return acc == 0U;
}

pbx_err pbx_ipc_text_check(const uint8_t *bytes, size_t len, size_t min,
                           size_t max)
{
    if (len < min || len > max) {
        return PBX_E_IPC_BOUND;
    }
    for (size_t i = 0; i < len; i++) {
        if (bytes[i] < 0x20U || bytes[i] > 0x7EU) {
            return PBX_E_IPC_TEXT;
        }
    }
    return PBX_OK;
}

pbx_err pbx_ipc_context_check(const pbx_ipc_context *ctx)
{
    if (!pbx_ipc_operation_known(ctx->operation) ||
        !pbx_ipc_class_known(ctx->object_class) ||
        !pbx_ipc_lifetime_known(ctx->lifetime) ||
        (ctx->mode != PBX_IPC_MODE_INSTALL &&
         ctx->mode != PBX_IPC_MODE_RUNTIME_REPLY) ||
        (ctx->urgency != PBX_IPC_URGENCY_ROUTINE &&
         ctx->urgency != PBX_IPC_URGENCY_EXCEPTIONAL)) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (ctx->job_gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    pbx_err err = pbx_ipc_admission_check(ctx->operation, ctx->object_class,
                                          ctx->lifetime);
    if (err != PBX_OK) {
        return err;
    }
    return pbx_ipc_text_check(ctx->entry.bytes, ctx->entry.len, 1U,
                              PBX_IPC_ENTRY_LEN_BYTES_MAX);
}

pbx_err pbx_ipc_target_check(uint8_t mode, const pbx_ipc_target *t)
{
    if (mode == PBX_IPC_MODE_INSTALL) {
        return t->process_gen != 0U ? PBX_OK : PBX_E_IPC_MODE_TARGET;
    }
    bool zero = t->process_id == 0U && t->process_gen == 0U && t->slot == 0U;
    return zero ? PBX_OK : PBX_E_IPC_MODE_TARGET;
}

void pbx_ipc_entry_put(uint8_t *body, size_t len_off, size_t bytes_off,
                       const pbx_ipc_entry *e)
{
    PBX_ASSERT(e->len <= PBX_IPC_ENTRY_LEN_BYTES_MAX);
    pbx_le_put16(body + len_off, e->len);
    pbx_mem_copy(body + bytes_off, e->bytes, e->len);
}

void pbx_ipc_bytes_copy(uint8_t *dst, const uint8_t *src, size_t len)
{
    if (len != 0U) {
        PBX_ASSERT(src != NULL);
        pbx_mem_copy(dst, src, len);
    }
}

_Static_assert(PBX_IPC_DETACH_BYTES == PBX_IPC_OBJECT_BODY_BYTES &&
                   PBX_IPC_WITHDRAW_BYTES == PBX_IPC_OBJECT_BODY_BYTES,
               "DETACH and WITHDRAW bodies are one object identity");

pbx_err pbx_ipc_object_body_put(uint16_t op, uint16_t caps, pbx_ipc_id request,
                                const pbx_ipc_object *o, uint8_t *buf,
                                size_t buf_len)
{
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, op, request, caps,
                                      PBX_IPC_OBJECT_BODY_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put64(b, o->id);
    pbx_le_put32(b + 8, o->gen);
    return PBX_OK;
}

pbx_err pbx_ipc_object_body_get(const pbx_ipc_frame *f, uint16_t op,
                                pbx_ipc_object *o)
{
    pbx_err err = pbx_ipc_body_exact(f, op, PBX_IPC_OBJECT_BODY_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    if (pbx_le_get32(f->body + 12) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    uint32_t gen = pbx_le_get32(f->body + 8);
    if (gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    o->id = pbx_le_get64(f->body);
    o->gen = gen;
    return PBX_OK;
}
