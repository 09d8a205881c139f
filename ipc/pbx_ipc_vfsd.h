/*
 * pbx_ipc_vfsd.h: the vfsd (scope and object provider) records: RESOLVE, its
 * reply, OPEN and RETIRE.
 *
 * Part of the wire codec of ipc/pbx_ipc.h, which includes this header;
 * include ipc/pbx_ipc.h, not this file. The rules of that header
 * (frame layout, encoder self-check, borrowed byte pointers) hold here.
 */
#ifndef PBX_IPC_VFSD_H
#define PBX_IPC_VFSD_H

#include "ipc/pbx_ipc_wire.h"

/* ---- vfsd -------------------------------------------------------------- */

/**
 * pbx_ipc_resolve is the RESOLVE request powerboxd sends through the
 * transferred scope endpoint (0 caps; header id is the request). selector
 * is borrowed like pbx_ipc_selector.bytes; selector_len is 1..SELECTOR max.
 */
typedef struct pbx_ipc_resolve {
    /** operation is a pbx_ipc_operation. */
    uint16_t operation;
    /** object_class is the expected pbx_ipc_class. */
    uint16_t object_class;
    /** selector_len is the selector length. */
    uint32_t selector_len;
    /** selector_digest is the committed SHA-256 of the selector. */
    uint8_t selector_digest[PBX_IPC_DIGEST_BYTES];
    /** selector is the selector bytes (borrowed). */
    const uint8_t *selector;
} pbx_ipc_resolve;

/** pbx_ipc_resolve_encode writes a RESOLVE request for request. */
pbx_err pbx_ipc_resolve_encode(pbx_ipc_id request, const pbx_ipc_resolve *rec,
                               uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_resolve_decode decodes a RESOLVE request frame into *out. */
pbx_err pbx_ipc_resolve_decode(const pbx_ipc_frame *f, pbx_ipc_resolve *out);

/**
 * pbx_ipc_resolve_reply is vfsd's answer. Every result echoes operation
 * and selector_digest. FOUND: 1 cap (SEND-only object), object gen
 * nonzero, object_class known. NOT_FOUND: 0 caps, object_class is the
 * missing-object class, object and scope_id zero. DENIED: 0 caps,
 * object_class, object and scope_id zero. The core checks the binding.
 */
typedef struct pbx_ipc_resolve_reply {
    /** result is a pbx_ipc_resolve_result. */
    uint8_t result;
    /** object_class is the found or missing object's pbx_ipc_class. */
    uint16_t object_class;
    /** operation echoes the request's operation. */
    uint16_t operation;
    /** object is the found object's identity. */
    pbx_ipc_object object;
    /** scope_id is vfsd's identity of the scope used. */
    uint64_t scope_id;
    /** selector_digest echoes the request's digest. */
    uint8_t selector_digest[PBX_IPC_DIGEST_BYTES];
} pbx_ipc_resolve_reply;

/** pbx_ipc_resolve_reply_encode writes a RESOLVE reply (1 cap if FOUND). */
pbx_err pbx_ipc_resolve_reply_encode(pbx_ipc_id request,
                                     const pbx_ipc_resolve_reply *rec,
                                     uint8_t *buf, size_t buf_len,
                                     size_t *out_len);
/** pbx_ipc_resolve_reply_decode decodes a RESOLVE reply into *out. */
pbx_err pbx_ipc_resolve_reply_decode(const pbx_ipc_frame *f,
                                     pbx_ipc_resolve_reply *out);

/**
 * pbx_ipc_detach names powerboxd's own alias given back to vfsd: the
 * request carries exactly that capability; the acknowledgement (0 caps)
 * echoes the same object identity. object.gen is nonzero.
 */
typedef struct pbx_ipc_detach {
    /** object is the detached object's identity. */
    pbx_ipc_object object;
} pbx_ipc_detach;

/** pbx_ipc_detach_encode writes a DETACH request (cap_count 1). */
pbx_err pbx_ipc_detach_encode(pbx_ipc_id request, const pbx_ipc_detach *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_detach_decode decodes a DETACH request frame into *out. */
pbx_err pbx_ipc_detach_decode(const pbx_ipc_frame *f, pbx_ipc_detach *out);
/** pbx_ipc_detach_reply_encode writes the DETACH acknowledgement. */
pbx_err pbx_ipc_detach_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_detach *rec, uint8_t *buf,
                                    size_t buf_len, size_t *out_len);
/** pbx_ipc_detach_reply_decode decodes a DETACH acknowledgement. */
pbx_err pbx_ipc_detach_reply_decode(const pbx_ipc_frame *f,
                                    pbx_ipc_detach *out);

/**
 * pbx_ipc_retire is the receipt-free full-identity retirement of an object
 * at vfsd (0 caps both ways); the acknowledgement echoes it exactly.
 */
typedef struct pbx_ipc_retire {
    /** object is the object identity (gen nonzero). */
    pbx_ipc_object object;
    /** scope_id is the scope the object was resolved in. */
    uint64_t scope_id;
    /** object_class is the object's pbx_ipc_class. */
    uint16_t object_class;
} pbx_ipc_retire;

/** pbx_ipc_retire_encode writes a RETIRE request. */
pbx_err pbx_ipc_retire_encode(pbx_ipc_id request, const pbx_ipc_retire *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_retire_decode decodes a RETIRE request frame into *out. */
pbx_err pbx_ipc_retire_decode(const pbx_ipc_frame *f, pbx_ipc_retire *out);
/** pbx_ipc_retire_reply_encode writes the RETIRE acknowledgement. */
pbx_err pbx_ipc_retire_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_retire *rec, uint8_t *buf,
                                    size_t buf_len, size_t *out_len);
/** pbx_ipc_retire_reply_decode decodes a RETIRE acknowledgement. */
pbx_err pbx_ipc_retire_reply_decode(const pbx_ipc_frame *f,
                                    pbx_ipc_retire *out);

#endif /* PBX_IPC_VFSD_H */
