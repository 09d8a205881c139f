/*
 * pbx_peer_stage.h: procd's stage wire, between procd's stage socket and
 * the stage program (pbx-stage) a job runs first in install mode
 * (docs/HOST.md, "Install mode on the host"). Pure codec: no I/O, no
 * allocation.
 *
 * Three frames, each with the ipc v2 32-byte header in the form launchd's
 * local wire uses (pbx_peer_launch.h: request id and reserved word zero,
 * op numbers outside every pbx_ipc_op):
 *
 *   STAGE   (program -> procd): body u64 pid, the caller's own process
 *           id; no descriptor.
 *   STAGE reply (procd -> program): status 0 and body u32 generation
 *           (nonzero), or a nonzero status and an empty body.
 *   DELIVER (procd -> program, no reply): body u32 slot, u32 grant
 *           index, u32 grant generation (nonzero), u16 operation, u16
 *           reserved zero; exactly one descriptor, the installed object.
 */
#ifndef PBX_PEER_STAGE_H
#define PBX_PEER_STAGE_H

#include "ipc/pbx_ipc.h"

/** PBX_PEER_OP_STAGE asks procd to stage the calling process. */
#define PBX_PEER_OP_STAGE 0x0F11U
/** PBX_PEER_OP_DELIVER hands a staged process one installed object. */
#define PBX_PEER_OP_DELIVER 0x0F12U
/** PBX_PEER_STAGE_BYTES is the body of a STAGE request. */
#define PBX_PEER_STAGE_BYTES 8U
/** PBX_PEER_STAGE_REPLY_BYTES is the body of a status-zero STAGE reply. */
#define PBX_PEER_STAGE_REPLY_BYTES 4U
/** PBX_PEER_DELIVER_BYTES is the body of a DELIVER. */
#define PBX_PEER_DELIVER_BYTES 16U
/** PBX_PEER_STAGE_FRAME_MAX bounds every stage-wire frame. */
#define PBX_PEER_STAGE_FRAME_MAX (PBX_IPC_HEADER_BYTES + 16U)

/** pbx_peer_deliver is the body of a DELIVER; plain data. */
typedef struct pbx_peer_deliver {
    /** slot is the descriptor number the object is meant for. */
    uint32_t slot;
    /** grant is powerboxd's grant identity (gen nonzero). */
    pbx_ipc_id grant;
    /** operation is the granted pbx_ipc_operation. */
    uint16_t operation;
} pbx_peer_deliver;

/**
 * pbx_peer_stage_frame is one decoded stage-wire frame: op (reply bit
 * included), status, seq, and the field its op carries (pid for STAGE,
 * gen for a status-zero STAGE reply, deliver for DELIVER; the others
 * zero).
 */
typedef struct pbx_peer_stage_frame {
    /** op is PBX_PEER_OP_STAGE, its reply form, or PBX_PEER_OP_DELIVER. */
    uint16_t op;
    /** status is zero but in a refused STAGE reply. */
    uint16_t status;
    /** seq is the sender's sequence number. */
    uint32_t seq;
    /** pid is a STAGE's process id. */
    uint64_t pid;
    /** gen is a status-zero STAGE reply's generation. */
    uint32_t gen;
    /** deliver is a DELIVER's body. */
    pbx_peer_deliver deliver;
} pbx_peer_stage_frame;

/**
 * pbx_peer_stage_encode writes STAGE of pid (nonzero) with seq into
 * buf[0..cap) and its length into *n. Returns PBX_OK, PBX_E_IPC_NO_SPACE
 * or PBX_E_IPC_BOUND (pid zero).
 */
pbx_err pbx_peer_stage_encode(uint64_t pid, uint32_t seq, uint8_t *buf,
                              size_t cap, size_t *n);

/**
 * pbx_peer_stage_reply_encode writes the STAGE reply with seq: status 0
 * and gen (nonzero), or status nonzero and no body (gen ignored). Returns
 * PBX_OK, PBX_E_IPC_NO_SPACE or PBX_E_IPC_GENERATION (status 0, gen 0).
 */
pbx_err pbx_peer_stage_reply_encode(uint16_t status, uint32_t gen, uint32_t seq,
                                    uint8_t *buf, size_t cap, size_t *n);

/**
 * pbx_peer_deliver_encode writes DELIVER of *d with seq (its descriptor
 * is the caller's to attach) into buf[0..cap). Returns PBX_OK,
 * PBX_E_IPC_NO_SPACE or PBX_E_IPC_GENERATION (grant generation 0).
 */
pbx_err pbx_peer_deliver_encode(const pbx_peer_deliver *d, uint32_t seq,
                                uint8_t *buf, size_t cap, size_t *n);

/**
 * pbx_peer_stage_decode checks buf[0..len), which arrived with nfds
 * descriptors, as one stage-wire frame and fills *out: magic, version, a
 * known op, exact body length for the op and status, reserved word and
 * request id zero, cap count nfds (1 for DELIVER, else 0), pid, gen and
 * grant generation nonzero, DELIVER's reserved field zero. Returns PBX_OK
 * or the PBX_E_IPC_* error of the first failed check.
 */
pbx_err pbx_peer_stage_decode(const uint8_t *buf, size_t len, size_t nfds,
                              pbx_peer_stage_frame *out);

#endif /* PBX_PEER_STAGE_H */
