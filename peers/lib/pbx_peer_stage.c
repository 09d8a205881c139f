/*
 * pbx_peer_stage.c: procd's stage wire (see pbx_peer_stage.h).
 */
#include "peers/lib/pbx_peer_stage.h"

#include <string.h>

/* Header offsets of the local-wire form (pbx_peer_launch.c). */
#define STAGE_HEADER_VERSION  4U
#define STAGE_HEADER_OP       6U
#define STAGE_HEADER_STATUS   8U
#define STAGE_HEADER_CAPS     10U
#define STAGE_HEADER_REQUEST  12U
#define STAGE_HEADER_BODY_LEN 20U

/* Writes the header of op with status, caps, body_len and seq into buf
 * (which holds at least a header). */
static void stage_header_put(uint8_t *buf, uint16_t op, uint16_t status,
                             uint16_t caps, size_t body_len, uint32_t seq)
{
    memset(buf, 0, PBX_IPC_HEADER_BYTES);
    pbx_le_put32(buf, PBX_IPC_MAGIC);
    pbx_le_put16(buf + STAGE_HEADER_VERSION, (uint16_t)PBX_IPC_VERSION);
    pbx_le_put16(buf + STAGE_HEADER_OP, op);
    pbx_le_put16(buf + STAGE_HEADER_STATUS, status);
    pbx_le_put16(buf + STAGE_HEADER_CAPS, caps);
    pbx_le_put32(buf + STAGE_HEADER_BODY_LEN, (uint32_t)body_len);
    pbx_le_put32(buf + PBX_IPC_SEQ_OFFSET, seq);
}

pbx_err pbx_peer_stage_encode(uint64_t pid, uint32_t seq, uint8_t *buf,
                              size_t cap, size_t *n)
{
    if (pid == 0U) {
        return PBX_E_IPC_BOUND;
    }
    if (cap < PBX_IPC_HEADER_BYTES + PBX_PEER_STAGE_BYTES) {
        return PBX_E_IPC_NO_SPACE;
    }
    stage_header_put(buf, PBX_PEER_OP_STAGE, 0U, 0U, PBX_PEER_STAGE_BYTES, seq);
    pbx_le_put64(buf + PBX_IPC_HEADER_BYTES, pid);
    *n = PBX_IPC_HEADER_BYTES + PBX_PEER_STAGE_BYTES;
    return PBX_OK;
}

pbx_err pbx_peer_stage_reply_encode(uint16_t status, uint32_t gen, uint32_t seq,
                                    uint8_t *buf, size_t cap, size_t *n)
{
    size_t body = status == 0U ? PBX_PEER_STAGE_REPLY_BYTES : 0U;
    if (status == 0U && gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    if (cap < PBX_IPC_HEADER_BYTES + body) {
        return PBX_E_IPC_NO_SPACE;
    }
    stage_header_put(buf, PBX_PEER_OP_STAGE | PBX_IPC_REPLY_BIT, status, 0U,
                     body, seq);
    if (body != 0U) {
        pbx_le_put32(buf + PBX_IPC_HEADER_BYTES, gen);
    }
    *n = PBX_IPC_HEADER_BYTES + body;
    return PBX_OK;
}

pbx_err pbx_peer_deliver_encode(const pbx_peer_deliver *d, uint32_t seq,
                                uint8_t *buf, size_t cap, size_t *n)
{
    if (d->grant.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    if (cap < PBX_IPC_HEADER_BYTES + PBX_PEER_DELIVER_BYTES) {
        return PBX_E_IPC_NO_SPACE;
    }
    stage_header_put(buf, PBX_PEER_OP_DELIVER, 0U, 1U, PBX_PEER_DELIVER_BYTES,
                     seq);
    uint8_t *b = buf + PBX_IPC_HEADER_BYTES;
    pbx_le_put32(b, d->slot);
    pbx_le_put32(b + 4U, d->grant.index);
    pbx_le_put32(b + 8U, d->grant.gen);
    pbx_le_put16(b + 12U, d->operation);
    pbx_le_put16(b + 14U, 0U);
    *n = PBX_IPC_HEADER_BYTES + PBX_PEER_DELIVER_BYTES;
    return PBX_OK;
}

/* The header checks that do not depend on the op: magic, version,
 * reserved word, request id, body length and cap count. */
static pbx_err stage_header_check(const uint8_t *buf, size_t len, size_t nfds)
{
    if (buf == NULL || len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_TRUNCATED;
    }
    if (pbx_le_get32(buf) != PBX_IPC_MAGIC) {
        return PBX_E_IPC_MAGIC;
    }
    if (pbx_le_get16(buf + STAGE_HEADER_VERSION) != PBX_IPC_VERSION) {
        return PBX_E_IPC_VERSION;
    }
    if (len > PBX_PEER_STAGE_FRAME_MAX) {
        return PBX_E_IPC_FRAME_TOO_LARGE;
    }
    if ((size_t)pbx_le_get32(buf + STAGE_HEADER_BODY_LEN) !=
        len - PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_BODY_LEN;
    }
    if (pbx_le_get32(buf + PBX_IPC_RESERVED_OFFSET) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    if (pbx_le_get32(buf + STAGE_HEADER_REQUEST) != 0U ||
        pbx_le_get32(buf + STAGE_HEADER_REQUEST + 4U) != 0U) {
        return PBX_E_IPC_REQUEST_ID;
    }
    if ((size_t)pbx_le_get16(buf + STAGE_HEADER_CAPS) != nfds) {
        return PBX_E_IPC_CAP_COUNT;
    }
    return PBX_OK;
}

/* Decodes the body b[0..body) of op (status st, nfds descriptors) into
 * *out. */
static pbx_err stage_body(uint16_t op, uint16_t st, const uint8_t *b,
                          size_t body, size_t nfds, pbx_peer_stage_frame *out)
{
    bool deliver = op == PBX_PEER_OP_DELIVER;
    if (nfds != (deliver ? 1U : 0U)) {
        return PBX_E_IPC_CAP_PARTITION;
    }
    if (st != 0U) {
        return op == (PBX_PEER_OP_STAGE | PBX_IPC_REPLY_BIT) && body == 0U
                   ? PBX_OK
                   : PBX_E_IPC_STATUS;
    }
    if (op == PBX_PEER_OP_STAGE) {
        if (body != PBX_PEER_STAGE_BYTES) {
            return PBX_E_IPC_BODY_LEN;
        }
        out->pid = pbx_le_get64(b);
        return out->pid != 0U ? PBX_OK : PBX_E_IPC_BOUND;
    }
    if (!deliver) {
        if (body != PBX_PEER_STAGE_REPLY_BYTES) {
            return PBX_E_IPC_BODY_LEN;
        }
        out->gen = pbx_le_get32(b);
        return out->gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
    }
    if (body != PBX_PEER_DELIVER_BYTES) {
        return PBX_E_IPC_BODY_LEN;
    }
    out->deliver.slot = pbx_le_get32(b);
    out->deliver.grant.index = pbx_le_get32(b + 4U);
    out->deliver.grant.gen = pbx_le_get32(b + 8U);
    out->deliver.operation = pbx_le_get16(b + 12U);
    if (pbx_le_get16(b + 14U) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    return out->deliver.grant.gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}

pbx_err pbx_peer_stage_decode(const uint8_t *buf, size_t len, size_t nfds,
                              pbx_peer_stage_frame *out)
{
    pbx_err e = stage_header_check(buf, len, nfds);
    if (e != PBX_OK) {
        return e;
    }
    uint16_t op = pbx_le_get16(buf + STAGE_HEADER_OP);
    if (op != PBX_PEER_OP_STAGE && op != PBX_PEER_OP_DELIVER &&
        op != (PBX_PEER_OP_STAGE | PBX_IPC_REPLY_BIT)) {
        return PBX_E_IPC_UNKNOWN_OP;
    }
    memset(out, 0, sizeof(*out));
    out->op = op;
    out->status = pbx_le_get16(buf + STAGE_HEADER_STATUS);
    out->seq = pbx_le_get32(buf + PBX_IPC_SEQ_OFFSET);
    return stage_body(op, out->status, buf + PBX_IPC_HEADER_BYTES,
                      len - PBX_IPC_HEADER_BYTES, nfds, out);
}
