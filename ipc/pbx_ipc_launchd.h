/*
 * pbx_ipc_launchd.h: the launchd (job supervisor) WAKE datagram.
 *
 * Part of the wire codec of ipc/pbx_ipc.h, which includes this header;
 * include ipc/pbx_ipc.h, not this file. The rules of that header
 * (frame layout, encoder self-check, borrowed byte pointers) hold here.
 */
#ifndef PBX_IPC_LAUNCHD_H
#define PBX_IPC_LAUNCHD_H

#include "ipc/pbx_ipc_wire.h"

/* ---- launchd ----------------------------------------------------------- */

/**
 * pbx_ipc_wake is the authority-free decision-ready datagram to launchd (0
 * caps, no reply). The header request id (gen nonzero) names the request;
 * job_gen is nonzero.
 */
typedef struct pbx_ipc_wake {
    /** job_id is the request's job. */
    uint64_t job_id;
    /** job_gen is the job generation. */
    uint32_t job_gen;
} pbx_ipc_wake;

/** pbx_ipc_wake_encode writes a WAKE datagram for request. */
pbx_err pbx_ipc_wake_encode(pbx_ipc_id request, const pbx_ipc_wake *rec,
                            uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_wake_decode decodes a WAKE datagram frame into *out. */
pbx_err pbx_ipc_wake_decode(const pbx_ipc_frame *f, pbx_ipc_wake *out);

#endif /* PBX_IPC_LAUNCHD_H */
