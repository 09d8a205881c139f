/*
 * pbx_peer_admin.c: the USER_CANCEL codec of launchd's control socket.
 * Every read is checked against the length first.
 */
#include "peers/lib/pbx_peer_admin.h"

#include <string.h>

/* Header offsets (docs/PROTOCOL.md section 1). */
#define ADMIN_OP       6U
#define ADMIN_STATUS   8U
#define ADMIN_CAPS     10U
#define ADMIN_INDEX    12U
#define ADMIN_GEN      16U
#define ADMIN_BODY_LEN 20U

/* Writes a header of op with status, the id and body_len, seq. */
static void admin_header_put(uint8_t *buf, uint16_t op, uint16_t status,
                             pbx_ipc_id id, uint32_t body_len, uint32_t seq)
{
    memset(buf, 0, PBX_IPC_HEADER_BYTES);
    pbx_le_put32(buf, PBX_IPC_MAGIC);
    pbx_le_put16(buf + 4U, (uint16_t)PBX_IPC_VERSION);
    pbx_le_put16(buf + ADMIN_OP, op);
    pbx_le_put16(buf + ADMIN_STATUS, status);
    pbx_le_put32(buf + ADMIN_INDEX, id.index);
    pbx_le_put32(buf + ADMIN_GEN, id.gen);
    pbx_le_put32(buf + ADMIN_BODY_LEN, body_len);
    pbx_le_put32(buf + PBX_IPC_SEQ_OFFSET, seq);
}

uint16_t pbx_peer_admin_op(const uint8_t *buf, size_t len)
{
    if (len < PBX_IPC_HEADER_BYTES || pbx_le_get32(buf) != PBX_IPC_MAGIC ||
        pbx_le_get16(buf + 4U) != (uint16_t)PBX_IPC_VERSION) {
        return 0U;
    }
    return pbx_le_get16(buf + ADMIN_OP);
}

/* Checks the header of a USER_CANCEL frame of op (request or reply):
 * length, magic, version, op, no descriptor, body_len the rest, reserved
 * zero, grant generation nonzero; stores the grant. */
static pbx_err admin_check(const uint8_t *buf, size_t len, size_t nfds,
                           uint16_t op, pbx_ipc_id *grant)
{
    if (len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_TRUNCATED;
    }
    if (pbx_le_get32(buf) != PBX_IPC_MAGIC) {
        return PBX_E_IPC_MAGIC;
    }
    if (pbx_le_get16(buf + 4U) != (uint16_t)PBX_IPC_VERSION) {
        return PBX_E_IPC_VERSION;
    }
    if (pbx_le_get16(buf + ADMIN_OP) != op) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    if (len > PBX_IPC_FRAME_BYTES_MAX) {
        return PBX_E_IPC_FRAME_TOO_LARGE;
    }
    if (pbx_le_get32(buf + ADMIN_BODY_LEN) != len - PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_BODY_LEN;
    }
    if (pbx_le_get32(buf + PBX_IPC_RESERVED_OFFSET) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    if (nfds != 0U || pbx_le_get16(buf + ADMIN_CAPS) != 0U) {
        return PBX_E_IPC_CAP_COUNT;
    }
    grant->index = pbx_le_get32(buf + ADMIN_INDEX);
    grant->gen = pbx_le_get32(buf + ADMIN_GEN);
    return grant->gen == 0U ? PBX_E_IPC_GENERATION : PBX_OK;
}

pbx_err pbx_peer_user_cancel_encode(pbx_ipc_id grant, uint32_t seq,
                                    uint8_t *buf, size_t buf_len,
                                    size_t *out_len)
{
    if (grant.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    if (buf_len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_NO_SPACE;
    }
    admin_header_put(buf, (uint16_t)PBX_PEER_OP_USER_CANCEL, 0U, grant, 0U,
                     seq);
    *out_len = PBX_IPC_HEADER_BYTES;
    return PBX_OK;
}

pbx_err pbx_peer_user_cancel_decode(const uint8_t *buf, size_t len, size_t nfds,
                                    pbx_ipc_id *grant, uint32_t *seq)
{
    *seq = len >= PBX_IPC_HEADER_BYTES ? pbx_le_get32(buf + PBX_IPC_SEQ_OFFSET)
                                       : 0U;
    pbx_err e =
        admin_check(buf, len, nfds, (uint16_t)PBX_PEER_OP_USER_CANCEL, grant);
    if (e != PBX_OK) {
        return e;
    }
    if (pbx_le_get16(buf + ADMIN_STATUS) != 0U) {
        return PBX_E_IPC_STATUS;
    }
    return len == PBX_IPC_HEADER_BYTES ? PBX_OK : PBX_E_IPC_BODY_LEN;
}

pbx_err pbx_peer_user_cancel_reply_encode(const pbx_peer_user_cancel_reply *rec,
                                          uint32_t seq, uint8_t *buf,
                                          size_t buf_len, size_t *out_len)
{
    uint32_t body = rec->status == 0U ? PBX_PEER_USER_CANCEL_REPLY_BYTES : 0U;
    if (buf_len < PBX_IPC_HEADER_BYTES + body) {
        return PBX_E_IPC_NO_SPACE;
    }
    admin_header_put(buf,
                     (uint16_t)(PBX_PEER_OP_USER_CANCEL | PBX_IPC_REPLY_BIT),
                     rec->status, rec->grant, body, seq);
    if (body != 0U) {
        pbx_le_put32(buf + PBX_IPC_HEADER_BYTES, rec->request.index);
        pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 4U, rec->request.gen);
    }
    *out_len = PBX_IPC_HEADER_BYTES + body;
    return PBX_OK;
}

pbx_err pbx_peer_user_cancel_reply_decode(const uint8_t *buf, size_t len,
                                          size_t nfds,
                                          pbx_peer_user_cancel_reply *out)
{
    memset(out, 0, sizeof(*out));
    pbx_err e = admin_check(
        buf, len, nfds, (uint16_t)(PBX_PEER_OP_USER_CANCEL | PBX_IPC_REPLY_BIT),
        &out->grant);
    if (e != PBX_OK) {
        return e;
    }
    out->status = pbx_le_get16(buf + ADMIN_STATUS);
    size_t body = out->status == 0U ? PBX_PEER_USER_CANCEL_REPLY_BYTES : 0U;
    if (len != PBX_IPC_HEADER_BYTES + body) {
        return PBX_E_IPC_BODY_LEN;
    }
    if (body != 0U) {
        out->request.index = pbx_le_get32(buf + PBX_IPC_HEADER_BYTES);
        out->request.gen = pbx_le_get32(buf + PBX_IPC_HEADER_BYTES + 4U);
    }
    return PBX_OK;
}
