/*
 * pbx_peer.h: shared pure pieces of the reference peers for the Linux host
 * (vfsd, ttyd, procd, launchd and the client): the peers' error statuses
 * and the names of the protocol discriminants used on command lines, in
 * configuration files and in trusted prompts.
 *
 * Everything under peers/lib/ is pure decision logic: no I/O, no global
 * state, no allocation. The peers' thin I/O mains feed it observations and
 * carry out what it decides, so the decisions are tested on tables of
 * cases without sockets.
 */
#ifndef PBX_PEER_H
#define PBX_PEER_H

#include "base/pbx_base.h"

/*
 * The peers' reply statuses live in the tools-and-peers range 0x08xx
 * (pbx_base.h), at 0x08C0 and up. They are wire values of the frame
 * header's status field. They are defined once, in base/err/tools.def;
 * these names are the peers' short spellings of the same values.
 */

/** PBX_PEER_E_BUSY: a peer table is full; retry later (backpressure). */
#define PBX_PEER_E_BUSY ((uint16_t)PBX_E_PEER_BUSY)
/** PBX_PEER_E_UNKNOWN: no such object, grant, process or request. */
#define PBX_PEER_E_UNKNOWN ((uint16_t)PBX_E_PEER_UNKNOWN)
/** PBX_PEER_E_MISMATCH: an identity does not match the record exactly. */
#define PBX_PEER_E_MISMATCH ((uint16_t)PBX_E_PEER_MISMATCH)
/** PBX_PEER_E_ROUTE: the operation is not served on this connection. */
#define PBX_PEER_E_ROUTE ((uint16_t)PBX_E_PEER_ROUTE)
/** PBX_PEER_E_SLOT: the target slot is occupied or out of range. */
#define PBX_PEER_E_SLOT ((uint16_t)PBX_E_PEER_SLOT)
/** PBX_PEER_E_CONFLICT: the grant is already present with another row. */
#define PBX_PEER_E_CONFLICT ((uint16_t)PBX_E_PEER_CONFLICT)
/** PBX_PEER_E_DIGEST: SHA-256 of the selector differs from its digest. */
#define PBX_PEER_E_DIGEST ((uint16_t)PBX_E_PEER_DIGEST)
/** PBX_PEER_E_INTERNAL: the peer failed locally (a system call failed). */
#define PBX_PEER_E_INTERNAL ((uint16_t)PBX_E_PEER_INTERNAL)
/** PBX_PEER_E_NOT_YOURS: launchd's relay refused a frame naming a request
 * or grant its control connection did not begin or receive. */
#define PBX_PEER_E_NOT_YOURS ((uint16_t)PBX_E_PEER_NOT_YOURS)

/**
 * pbx_peer_status_text returns a static description of a peer status
 * (PBX_PEER_E_*), or of any pbx_err value through pbx_err_text. The string
 * lives for the whole program.
 */
const char *pbx_peer_status_text(uint32_t status);

/**
 * pbx_peer_name_kind selects which discriminant table pbx_peer_name_parse
 * and pbx_peer_name_of use.
 */
typedef enum pbx_peer_name_kind {
    /** pbx_ipc_operation: read, write, execute, list, entry-... */
    PBX_PEER_NAMES_OPERATION = 1,
    /** pbx_ipc_class: file, directory, directory-entry, device, endpoint. */
    PBX_PEER_NAMES_CLASS = 2,
    /** pbx_ipc_lifetime: one-shot, invocation, job. */
    PBX_PEER_NAMES_LIFETIME = 3,
    /** pbx_ipc_mode: install, runtime-reply. */
    PBX_PEER_NAMES_MODE = 4,
    /** pbx_ipc_urgency: routine, exceptional. */
    PBX_PEER_NAMES_URGENCY = 5,
    /** pbx_ipc_verdict: allow, deny, prompt. */
    PBX_PEER_NAMES_VERDICT = 6,
    /** pbx_ipc_outcome: pending, approved, denied, cancelled, not-found. */
    PBX_PEER_NAMES_OUTCOME = 7,
    /** pbx_ipc_resolve_result: found, not-found, denied. */
    PBX_PEER_NAMES_RESULT = 8
} pbx_peer_name_kind;

/**
 * pbx_peer_name_parse looks up the NUL-terminated lower-case name in the
 * table of kind and stores its discriminant in *value. Returns false
 * (leaving *value untouched) for an unknown name.
 */
bool pbx_peer_name_parse(pbx_peer_name_kind kind, const char *name,
                         uint32_t *value);

/**
 * pbx_peer_name_of returns the static name of discriminant value in the
 * table of kind, or "?" for a value the table does not hold.
 */
const char *pbx_peer_name_of(pbx_peer_name_kind kind, uint32_t value);

/**
 * pbx_peer_parse_u64 parses a whole NUL-terminated decimal number that
 * fits in max into *out. Returns false (leaving *out untouched) for an
 * empty string, a non-digit, or a value above max.
 */
bool pbx_peer_parse_u64(const char *s, uint64_t max, uint64_t *out);

/**
 * pbx_peer_parse_pair parses "A:B" (or "A.B") of two decimal numbers, A at
 * most max_a and B at most max_b, into *a and *b. Returns false (leaving
 * both untouched) on any malformed input.
 */
bool pbx_peer_parse_pair(const char *s, uint64_t max_a, uint64_t max_b,
                         uint64_t *a, uint64_t *b);

#endif /* PBX_PEER_H */
