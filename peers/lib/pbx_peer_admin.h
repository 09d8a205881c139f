/*
 * pbx_peer_admin.h: the user's administrative calls on launchd's control
 * socket beyond LAUNCH and EXIT: USER_CANCEL, which asks launchd to end
 * one live grant on the user's behalf (`pbx cancel`). Pure codec: no I/O,
 * no allocation. Like LAUNCH it uses the ipc v2 32-byte header with an op
 * number outside every pbx_ipc_op, so powerboxd's decoder refuses it;
 * docs/HOST.md ("launchd") is the normative description.
 */
#ifndef PBX_PEER_ADMIN_H
#define PBX_PEER_ADMIN_H

#include "ipc/pbx_ipc.h"

/** PBX_PEER_OP_USER_CANCEL asks launchd to cancel a live grant (the next
 * launchd-local op after LAUNCH 0x0F01 and EXIT 0x0F02). */
#define PBX_PEER_OP_USER_CANCEL 0x0F03U
/** PBX_PEER_USER_CANCEL_REPLY_BYTES is the body of a status-zero reply. */
#define PBX_PEER_USER_CANCEL_REPLY_BYTES 8U

/**
 * pbx_peer_admin_op returns the op of the len bytes in buf when they hold
 * at least a header with the ipc magic and version, else 0. It checks
 * nothing else: the caller decodes the frame of that op.
 */
uint16_t pbx_peer_admin_op(const uint8_t *buf, size_t len);

/**
 * pbx_peer_user_cancel_encode writes a USER_CANCEL request for grant
 * (gen nonzero) with seq into buf (buf_len bytes) and stores its length
 * in *out_len: header only, the grant in the header's request id, no
 * body, no descriptor. Returns PBX_OK, PBX_E_IPC_GENERATION (gen zero) or
 * PBX_E_IPC_NO_SPACE.
 */
pbx_err pbx_peer_user_cancel_encode(pbx_ipc_id grant, uint32_t seq,
                                    uint8_t *buf, size_t buf_len,
                                    size_t *out_len);

/**
 * pbx_peer_user_cancel_decode checks the len bytes in buf, which arrived
 * with nfds descriptors, as a USER_CANCEL request and stores the grant in
 * *grant and the seq in *seq: exact header length, magic, version, op,
 * status zero, no descriptor, empty body, reserved word zero, grant
 * generation nonzero. Returns PBX_OK or the PBX_E_IPC_* error of the
 * first failed check (*seq is set whenever a header was present, so the
 * refusal can echo it).
 */
pbx_err pbx_peer_user_cancel_decode(const uint8_t *buf, size_t len, size_t nfds,
                                    pbx_ipc_id *grant, uint32_t *seq);

/**
 * pbx_peer_user_cancel_reply is launchd's answer: status 0 (the grant's
 * CANCEL was accepted by powerboxd) or why not (a pbx_err: the broker's
 * refusal such as PBX_E_CORE_STALE or PBX_E_CORE_STATE, or launchd's own
 * PBX_E_PEER_ROUTE / PBX_E_PEER_BUSY); with status 0, request is the
 * grant's request as launchd relayed it ({0,0}: launchd does not know
 * it).
 */
typedef struct pbx_peer_user_cancel_reply {
    /** grant echoes the request's grant. */
    pbx_ipc_id grant;
    /** status is 0 or a pbx_err value. */
    uint16_t status;
    /** request is the grant's request id (status 0 only). */
    pbx_ipc_id request;
} pbx_peer_user_cancel_reply;

/**
 * pbx_peer_user_cancel_reply_encode writes rec as a USER_CANCEL reply
 * with seq into buf: the grant in the header's request id, status in the
 * header, and with status zero an 8-byte body (u32 request index, u32
 * request generation). Returns PBX_OK or PBX_E_IPC_NO_SPACE.
 */
pbx_err pbx_peer_user_cancel_reply_encode(const pbx_peer_user_cancel_reply *rec,
                                          uint32_t seq, uint8_t *buf,
                                          size_t buf_len, size_t *out_len);

/**
 * pbx_peer_user_cancel_reply_decode checks the len bytes in buf (nfds
 * descriptors arrived) as a USER_CANCEL reply and fills *out: header as
 * for the request but the reply op, body exactly 8 bytes with status zero
 * and empty otherwise. Returns PBX_OK or a PBX_E_IPC_* error.
 */
pbx_err pbx_peer_user_cancel_reply_decode(const uint8_t *buf, size_t len,
                                          size_t nfds,
                                          pbx_peer_user_cancel_reply *out);

#endif /* PBX_PEER_ADMIN_H */
