/*
 * pbx_ipc.h: every powerboxd operation number, discriminant and wire record
 * (seed lib-ipc), and the one canonical frame codec.
 *
 * A frame is a 32-byte little-endian header followed by an op-specific body.
 * pbx_ipc_frame_decode checks everything the header alone can prove
 * (magic, version, known op, exact body length, reserved word zero,
 * capability count against the transport and the authority partition
 * table, status and request identity rules). The header's per-call
 * sequence number (seq) is data: any value in a request, echoed by its
 * reply (error replies included) so that many calls may be outstanding at
 * once; encoders write 0 and pbx_ipc_frame_set_seq patches it. Each record
 * decoder then checks its body strictly: exact length, known discriminants,
 * reserved fields zero, bounded lengths, outcome-dependent capability counts.
 * Decoded records are plain host-side structs; nothing is ever cast over wire
 * bytes.
 *
 * Every encoder writes a whole frame (header and body) into caller storage,
 * then decodes its own output, so it can only emit frames that the decoder
 * accepts. Encoders return PBX_E_IPC_NO_SPACE when buf_len is too small and
 * never write past buf_len. docs/PROTOCOL.md is the normative description.
 */
#ifndef PBX_IPC_H
#define PBX_IPC_H

/*
 * The codec is split by responsibility so that each header stays small:
 * the frame and the public operations, then each peer's records. Each
 * compiles alone; this header is the one to include.
 */
#include "ipc/pbx_ipc_launchd.h" /* IWYU pragma: export */
#include "ipc/pbx_ipc_procd.h"   /* IWYU pragma: export */
#include "ipc/pbx_ipc_ttyd.h"    /* IWYU pragma: export */
#include "ipc/pbx_ipc_vfsd.h"    /* IWYU pragma: export */
#include "ipc/pbx_ipc_wire.h"    /* IWYU pragma: export */

#endif /* PBX_IPC_H */
