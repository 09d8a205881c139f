/*
 * pbx_ipc_procd.h: the procd (grant installer) records.
 *
 * Part of the wire codec of ipc/pbx_ipc.h, which includes this header;
 * include ipc/pbx_ipc.h, not this file. The rules of that header
 * (frame layout, encoder self-check, borrowed byte pointers) hold here.
 */
#ifndef PBX_IPC_PROCD_H
#define PBX_IPC_PROCD_H

#include "ipc/pbx_ipc_wire.h"

/* ---- procd ------------------------------------------------------------- */

/**
 * pbx_ipc_install asks procd to install the carried object (exactly 1 cap)
 * into the staged target's exact slot as grant. target.process_gen and
 * grant.gen are nonzero; the discriminants pass the admission rule.
 */
typedef struct pbx_ipc_install {
    /** target is the staged process generation and slot. */
    pbx_ipc_target target;
    /** grant is the grant identity being installed. */
    pbx_ipc_id grant;
    /** operation is a pbx_ipc_operation. */
    uint16_t operation;
    /** object_class is a pbx_ipc_class. */
    uint16_t object_class;
    /** lifetime is a pbx_ipc_lifetime. */
    uint8_t lifetime;
} pbx_ipc_install;

/** pbx_ipc_install_encode writes an INSTALL request (cap_count 1). */
pbx_err pbx_ipc_install_encode(pbx_ipc_id request, const pbx_ipc_install *rec,
                               uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_install_decode decodes an INSTALL request frame into *out. */
pbx_err pbx_ipc_install_decode(const pbx_ipc_frame *f, pbx_ipc_install *out);

/**
 * pbx_ipc_install_reply is procd's answer, carrying exactly one capability
 * (the handle) of handle_kind. The decoder reports STAGING faithfully; the
 * core must reject it and delete the receipt.
 */
typedef struct pbx_ipc_install_reply {
    /** handle_kind is a pbx_ipc_handle_kind. */
    uint8_t handle_kind;
    /** installed_slot is the slot now holding the object (data). */
    uint32_t installed_slot;
    /** grant echoes the grant identity (gen nonzero). */
    pbx_ipc_id grant;
    /** target_process_id echoes the target process. */
    uint64_t target_process_id;
    /** target_process_gen echoes the process generation (nonzero). */
    uint32_t target_process_gen;
} pbx_ipc_install_reply;

/** pbx_ipc_install_reply_encode writes an INSTALL reply (cap_count 1). */
pbx_err pbx_ipc_install_reply_encode(pbx_ipc_id request,
                                     const pbx_ipc_install_reply *rec,
                                     uint8_t *buf, size_t buf_len,
                                     size_t *out_len);
/** pbx_ipc_install_reply_decode decodes an INSTALL reply into *out. */
pbx_err pbx_ipc_install_reply_decode(const pbx_ipc_frame *f,
                                     pbx_ipc_install_reply *out);

/**
 * pbx_ipc_revoke is sent through the manage-only revocation handle (0
 * caps) to revoke an installed grant; grant.gen and target_process_gen
 * are nonzero.
 */
typedef struct pbx_ipc_revoke {
    /** grant is the grant identity. */
    pbx_ipc_id grant;
    /** target_process_id is the process holding the grant. */
    uint64_t target_process_id;
    /** target_process_gen is its generation. */
    uint32_t target_process_gen;
    /** installed_slot is the slot procd reported at install (data). */
    uint32_t installed_slot;
} pbx_ipc_revoke;

/** pbx_ipc_revoke_encode writes a REVOKE request. */
pbx_err pbx_ipc_revoke_encode(pbx_ipc_id request, const pbx_ipc_revoke *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_revoke_decode decodes a REVOKE request frame into *out. */
pbx_err pbx_ipc_revoke_decode(const pbx_ipc_frame *f, pbx_ipc_revoke *out);

/** pbx_ipc_revoke_ack is procd's REVOKE acknowledgement: the grant echo. */
typedef struct pbx_ipc_revoke_ack {
    /** grant echoes the grant identity (gen nonzero). */
    pbx_ipc_id grant;
} pbx_ipc_revoke_ack;

/** pbx_ipc_revoke_reply_encode writes a REVOKE acknowledgement. */
pbx_err pbx_ipc_revoke_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_revoke_ack *rec, uint8_t *buf,
                                    size_t buf_len, size_t *out_len);
/** pbx_ipc_revoke_reply_decode decodes a REVOKE acknowledgement. */
pbx_err pbx_ipc_revoke_reply_decode(const pbx_ipc_frame *f,
                                    pbx_ipc_revoke_ack *out);

#endif /* PBX_IPC_PROCD_H */
