/*
 * pbx_capabi.h: powerboxd's endpoint routes, rights, provenance and local
 * slot layout (seed lib-capabi).
 *
 * Slot numbers are data, never authority: this layer only says which slot
 * must hold which capability, of which kind, with exactly which rights and
 * arriving which way, and it judges live observations of a slot against
 * that expectation. It holds no state and changes nothing.
 *
 * The local slot space [0, PBX_CAPABI_SLOT_LIMIT) (on the Linux host: the
 * fd table) is laid out as follows.
 *
 *   slots      class      holds
 *   0..2       HOST       nothing of powerboxd's (Linux: stdin/out/err)
 *   3          STARTUP    PBX1 deployment record   MEMORY   READ     root
 *   4          STARTUP    supervisor readiness     NOTIFY   SEND     root
 *   5          STARTUP    vfsd route               ENDPOINT SEND     root
 *   6          STARTUP    ttyd route               ENDPOINT SEND     root
 *   7          STARTUP    procd route              ENDPOINT SEND     root
 *   8          STARTUP    launchd wake route       NOTIFY   SEND     root
 *   9          STARTUP    public request endpoint  ENDPOINT RECEIVE  local
 *   10         STARTUP    launchd broker endpoint  ENDPOINT RECEIVE  root
 *   11..63     PORT       the syscall port's private slots (event
 *                         multiplexer, placeholder source, and on Linux
 *                         the accepted public connections); never
 *                         protocol authority
 *   first..    TRANSIENT  per-request receipts and reserved destinations,
 *                         [first, first + count), first >= 64
 *   the rest   FREE       unused; must stay empty
 *
 * "root" means transferred into powerboxd at startup by its creator;
 * "local" means created by powerboxd itself after startup. The public
 * endpoint is never startup-transferred: at startup its slot must be
 * empty. Rights are exact: a route holding more rights than listed is
 * rejected just as one holding fewer.
 *
 * The launchd broker endpoint is the capability that identifies launchd's
 * exact-job broker: every message received on it, and only those, carries
 * the core's launchd badge (EXPIRE, and CONSUME/CANCEL of any request).
 * On the Linux host it is one end of a connected SOCK_SEQPACKET pair whose
 * other end the supervisor gives to launchd; no credential is consulted.
 */
#ifndef PBX_CAPABI_H
#define PBX_CAPABI_H

#include "base/pbx_base.h"

/** PBX_CAPABI_RIGHT_SEND permits sending (invoking) through an endpoint. */
#define PBX_CAPABI_RIGHT_SEND 0x01U
/** PBX_CAPABI_RIGHT_RECEIVE permits receiving on an endpoint. */
#define PBX_CAPABI_RIGHT_RECEIVE 0x02U
/** PBX_CAPABI_RIGHT_GRANT permits transferring the capability onward. */
#define PBX_CAPABI_RIGHT_GRANT 0x04U
/** PBX_CAPABI_RIGHT_MANAGE permits revoking or deleting derived copies. */
#define PBX_CAPABI_RIGHT_MANAGE 0x08U
/** PBX_CAPABI_RIGHT_READ permits reading a memory object. */
#define PBX_CAPABI_RIGHT_READ 0x10U
/** PBX_CAPABI_RIGHT_WRITE permits writing a memory object. */
#define PBX_CAPABI_RIGHT_WRITE 0x20U
/** PBX_CAPABI_RIGHTS_KNOWN is every defined right; other bits are extra. */
#define PBX_CAPABI_RIGHTS_KNOWN 0x3FU

/**
 * pbx_capabi_kind is what a slot holds. The values equal the syscall
 * port's pbx_port_slot_kind, so a port observation maps one to one. An
 * observed kind is untrusted data and may be any number.
 */
typedef enum pbx_capabi_kind {
    /** The slot is empty. */
    PBX_CAPABI_KIND_EMPTY = 0,
    /** A reservation placeholder held for a transient destination. */
    PBX_CAPABI_KIND_PLACEHOLDER = 1,
    /** A message endpoint (Linux: SOCK_SEQPACKET socket). */
    PBX_CAPABI_KIND_ENDPOINT = 2,
    /** An endpoint used only for authority-free, non-blocking wakes and
     * readiness (Linux: SOCK_DGRAM socket). */
    PBX_CAPABI_KIND_NOTIFY = 3,
    /** A byte-stream channel; never a powerboxd route. */
    PBX_CAPABI_KIND_STREAM = 4,
    /** A memory object (Linux: sealed memfd). */
    PBX_CAPABI_KIND_MEMORY = 5,
    /** Anything else; never accepted. */
    PBX_CAPABI_KIND_OTHER = 6
} pbx_capabi_kind;

/** pbx_capabi_provenance says how a capability came to be in its slot. */
typedef enum pbx_capabi_provenance {
    /** Not known; never accepted. */
    PBX_CAPABI_PROV_UNKNOWN = 0,
    /** Transferred into powerboxd at startup by its creator (root). */
    PBX_CAPABI_PROV_ROOT_TRANSFERRED = 1,
    /** Created or derived by powerboxd itself. */
    PBX_CAPABI_PROV_LOCAL = 2,
    /** Received with a message after startup (a per-request receipt). */
    PBX_CAPABI_PROV_RECEIVED = 3
} pbx_capabi_provenance;

/**
 * pbx_capabi_entry names one slot of the fixed startup inventory. Its slot
 * is PBX_CAPABI_STARTUP_FIRST + the entry's value.
 */
typedef enum pbx_capabi_entry {
    /** The sealed PBX1 deployment record. */
    PBX_CAPABI_ENTRY_PBX1 = 0,
    /** The supervisor's readiness route. */
    PBX_CAPABI_ENTRY_SUPERVISOR = 1,
    /** The vfsd peer route (resolve, detach, retire). */
    PBX_CAPABI_ENTRY_VFSD = 2,
    /** The ttyd peer route (policy, prompt, grant view). */
    PBX_CAPABI_ENTRY_TTYD = 3,
    /** The procd peer route (install, revoke). */
    PBX_CAPABI_ENTRY_PROCD = 4,
    /** The launchd wake route (authority-free decision wakes). */
    PBX_CAPABI_ENTRY_LAUNCHD = 5,
    /** The process-created public request endpoint. */
    PBX_CAPABI_ENTRY_PUBLIC = 6,
    /** The endpoint launchd's broker sends on (its frames carry the
     * launchd badge). */
    PBX_CAPABI_ENTRY_BROKER = 7,
    /** The number of startup inventory entries. */
    PBX_CAPABI_ENTRY_COUNT = 8
} pbx_capabi_entry;

/** PBX_CAPABI_SLOT_LIMIT is one past the highest local slot number. */
#define PBX_CAPABI_SLOT_LIMIT 65536U
/** PBX_CAPABI_HOST_END ends the host-reserved slots [0, 3). */
#define PBX_CAPABI_HOST_END 3U
/** PBX_CAPABI_STARTUP_FIRST is the slot of PBX_CAPABI_ENTRY_PBX1. */
#define PBX_CAPABI_STARTUP_FIRST 3U
/** PBX_CAPABI_STARTUP_END is one past the last startup inventory slot. */
#define PBX_CAPABI_STARTUP_END                                                 \
    (PBX_CAPABI_STARTUP_FIRST + (uint32_t)PBX_CAPABI_ENTRY_COUNT)
/** PBX_CAPABI_SLOT_PBX1 holds the sealed PBX1 memory object. */
#define PBX_CAPABI_SLOT_PBX1 3U
/** PBX_CAPABI_SLOT_SUPERVISOR holds the readiness route. */
#define PBX_CAPABI_SLOT_SUPERVISOR 4U
/** PBX_CAPABI_SLOT_VFSD holds the vfsd route. */
#define PBX_CAPABI_SLOT_VFSD 5U
/** PBX_CAPABI_SLOT_TTYD holds the ttyd route. */
#define PBX_CAPABI_SLOT_TTYD 6U
/** PBX_CAPABI_SLOT_PROCD holds the procd route. */
#define PBX_CAPABI_SLOT_PROCD 7U
/** PBX_CAPABI_SLOT_LAUNCHD holds the launchd wake route. */
#define PBX_CAPABI_SLOT_LAUNCHD 8U
/** PBX_CAPABI_SLOT_PUBLIC holds the locally created public endpoint. */
#define PBX_CAPABI_SLOT_PUBLIC 9U
/** PBX_CAPABI_SLOT_BROKER holds launchd's broker endpoint (RECEIVE). */
#define PBX_CAPABI_SLOT_BROKER 10U
/** PBX_CAPABI_PORT_FIRST starts the syscall port's private slots. */
#define PBX_CAPABI_PORT_FIRST 11U
/** PBX_CAPABI_FIXED_END ends every fixed slot; transients start here. */
#define PBX_CAPABI_FIXED_END 64U
/** PBX_CAPABI_TRANSIENT_FIRST_DEFAULT is the usual first transient slot. */
#define PBX_CAPABI_TRANSIENT_FIRST_DEFAULT 64U
/**
 * PBX_CAPABI_TRANSIENT_COUNT_DEFAULT is a transient count whose range
 * ends at slot 1024, inside Linux's default soft RLIMIT_NOFILE. A
 * deployment normally takes the count from its PBX1 transient-slot pool.
 */
#define PBX_CAPABI_TRANSIENT_COUNT_DEFAULT 960U

/**
 * pbx_capabi_slot_class is what part of the layout a slot number falls in
 * (see the table at the top of this header).
 */
typedef enum pbx_capabi_slot_class {
    /** Host-reserved slots below PBX_CAPABI_HOST_END. */
    PBX_CAPABI_CLASS_HOST = 1,
    /** A fixed startup inventory slot (a pbx_capabi_entry). */
    PBX_CAPABI_CLASS_STARTUP = 2,
    /** The syscall port's private slots. */
    PBX_CAPABI_CLASS_PORT = 3,
    /** Inside the layout's transient range. */
    PBX_CAPABI_CLASS_TRANSIENT = 4,
    /** In the slot space but assigned to nothing. */
    PBX_CAPABI_CLASS_FREE = 5,
    /** At or beyond PBX_CAPABI_SLOT_LIMIT. */
    PBX_CAPABI_CLASS_OUT_OF_RANGE = 6
} pbx_capabi_slot_class;

/**
 * pbx_capabi_layout is a validated transient range [first, first + count).
 * Caller-allocated plain data; only pbx_capabi_layout_init writes it, so a
 * layout passed to any other function is known to be valid.
 */
typedef struct pbx_capabi_layout {
    /** First transient slot; at least PBX_CAPABI_FIXED_END. */
    uint32_t transient_first;
    /** Number of transient slots; nonzero, range inside the slot space. */
    uint32_t transient_count;
} pbx_capabi_layout;

/**
 * pbx_capabi_expect is the exact expectation for one startup inventory
 * slot. Instances live in a static table for the whole program.
 */
typedef struct pbx_capabi_expect {
    /** The slot number. */
    uint32_t slot;
    /** The required pbx_capabi_kind. */
    uint32_t kind;
    /** The exact set of PBX_CAPABI_RIGHT_* bits. */
    uint32_t rights;
    /** The required pbx_capabi_provenance. */
    uint32_t provenance;
    /** A short static name for diagnostics, e.g. "vfsd". */
    const char *name;
} pbx_capabi_expect;

/**
 * pbx_capabi_observed is one live observation of a slot, as the runtime
 * learned it from a slot query. Every field is untrusted data.
 */
typedef struct pbx_capabi_observed {
    /** The slot that was queried. */
    uint32_t slot;
    /** What it holds: a pbx_capabi_kind value, or any other number. */
    uint32_t kind;
    /** The rights it carries: PBX_CAPABI_RIGHT_* bits, or any others. */
    uint32_t rights;
    /** How it arrived: a pbx_capabi_provenance value, or any number. */
    uint32_t provenance;
} pbx_capabi_observed;

/**
 * pbx_capabi_phase selects which inventory pbx_capabi_check_inventory
 * expects: before powerboxd creates its public endpoint, or after.
 */
typedef enum pbx_capabi_phase {
    /** At startup: the seven root-transferred slots are present and the
     * public endpoint slot is empty. */
    PBX_CAPABI_PHASE_STARTUP = 1,
    /** After the public endpoint is created: all eight slots present. */
    PBX_CAPABI_PHASE_READY = 2
} pbx_capabi_phase;

/**
 * pbx_capabi_receipt names the per-request capability a transient slot is
 * meant to hold, each with one exact expectation (ENDPOINT kind always):
 * SCOPE and OBJECT are SEND-only receipts, REVOCATION is procd's
 * MANAGE-only handle (both PROV_RECEIVED), ALIAS is a SEND-only alias
 * powerboxd derives itself (PROV_LOCAL) for runtime-reply export.
 */
typedef enum pbx_capabi_receipt {
    /** The caller's scope, received at COMMIT. */
    PBX_CAPABI_RECEIPT_SCOPE = 1,
    /** The object vfsd resolved, received with RESOLVE's reply. */
    PBX_CAPABI_RECEIPT_OBJECT = 2,
    /** procd's manage-only revocation handle, received with INSTALL's. */
    PBX_CAPABI_RECEIPT_REVOCATION = 3,
    /** The revocable alias derived locally in runtime-reply mode. */
    PBX_CAPABI_RECEIPT_ALIAS = 4
} pbx_capabi_receipt;

/**
 * pbx_capabi_expected returns the static expectation for entry, which
 * must be below PBX_CAPABI_ENTRY_COUNT (a programmer error otherwise).
 * The pointer stays valid for the whole program; never write through it.
 */
const pbx_capabi_expect *pbx_capabi_expected(pbx_capabi_entry entry);

/**
 * pbx_capabi_entry_for_slot stores in *entry the startup inventory entry
 * whose slot is slot and returns true, or returns false (leaving *entry
 * untouched) when slot is not a startup inventory slot.
 */
bool pbx_capabi_entry_for_slot(uint32_t slot, pbx_capabi_entry *entry);

/**
 * pbx_capabi_layout_init validates the transient range [first, first +
 * count) and, only when it is valid, writes it to *layout (old contents
 * ignored). Returns PBX_OK, PBX_E_CAPABI_TRANSIENT_EMPTY for count 0,
 * PBX_E_CAPABI_TRANSIENT_OVERLAP when the range starts below
 * PBX_CAPABI_FIXED_END (host, startup or port slots), or
 * PBX_E_CAPABI_SLOT_RANGE when it ends beyond PBX_CAPABI_SLOT_LIMIT.
 */
pbx_err pbx_capabi_layout_init(pbx_capabi_layout *layout, uint32_t first,
                               uint32_t count);

/**
 * pbx_capabi_slot_classify says which part of the layout slot falls in.
 * layout must come from a successful pbx_capabi_layout_init. Total: every
 * uint32_t has a class.
 */
pbx_capabi_slot_class pbx_capabi_slot_classify(const pbx_capabi_layout *layout,
                                               uint32_t slot);

/**
 * pbx_capabi_transient_index maps a transient slot to its zero-based index
 * in the range, stored in *index. Returns PBX_OK, PBX_E_CAPABI_SLOT_RANGE
 * for a slot beyond the slot space, or PBX_E_CAPABI_SLOT_UNEXPECTED for
 * any other slot outside the transient range; *index is written only on
 * success.
 */
pbx_err pbx_capabi_transient_index(const pbx_capabi_layout *layout,
                                   uint32_t slot, uint32_t *index);

/**
 * pbx_capabi_transient_slot returns the slot of transient index, which
 * must be below layout->transient_count (an index is the caller's own
 * bookkeeping, so a bad one is a programmer error).
 */
uint32_t pbx_capabi_transient_slot(const pbx_capabi_layout *layout,
                                   uint32_t index);

/**
 * pbx_capabi_check_entry judges one observation of a startup inventory
 * slot against its ready-phase expectation. Checks run in this order and
 * the first failure is returned: PBX_E_CAPABI_SLOT_RANGE (slot beyond the
 * slot space), PBX_E_CAPABI_SLOT_UNEXPECTED (not a startup slot),
 * PBX_E_CAPABI_ENTRY_MISSING (kind EMPTY), PBX_E_CAPABI_KIND,
 * PBX_E_CAPABI_PROVENANCE, PBX_E_CAPABI_RIGHTS_MISSING,
 * PBX_E_CAPABI_RIGHTS_EXTRA. Returns PBX_OK when everything is exact.
 */
pbx_err pbx_capabi_check_entry(const pbx_capabi_observed *obs);

/**
 * pbx_capabi_check_inventory judges count observations (obs may be NULL
 * only when count is 0) as a whole inventory for phase. Each observation
 * must name a distinct startup slot (PBX_E_CAPABI_SLOT_RANGE,
 * PBX_E_CAPABI_SLOT_UNEXPECTED, PBX_E_CAPABI_SLOT_DUPLICATE) and pass
 * pbx_capabi_check_entry, except that in PBX_CAPABI_PHASE_STARTUP the
 * public endpoint slot must be empty: anything in it was transferred at
 * startup and fails with PBX_E_CAPABI_PROVENANCE. Afterwards every entry
 * the phase requires must have been observed non-empty, else
 * PBX_E_CAPABI_ENTRY_MISSING. On failure *bad_index (may be NULL) is the
 * index of the offending observation, or count for a missing entry.
 */
pbx_err pbx_capabi_check_inventory(const pbx_capabi_observed *obs, size_t count,
                                   pbx_capabi_phase phase, size_t *bad_index);

/**
 * pbx_capabi_check_receipt judges an observation of a transient slot that
 * should hold the per-request capability receipt. Returns PBX_OK,
 * PBX_E_CAPABI_SLOT_RANGE or PBX_E_CAPABI_SLOT_UNEXPECTED (slot outside
 * the transient range), PBX_E_CAPABI_ENTRY_MISSING (kind EMPTY or
 * PLACEHOLDER: nothing arrived), then as pbx_capabi_check_entry:
 * PBX_E_CAPABI_KIND, PBX_E_CAPABI_PROVENANCE, PBX_E_CAPABI_RIGHTS_MISSING,
 * PBX_E_CAPABI_RIGHTS_EXTRA. receipt must be a pbx_capabi_receipt value.
 */
pbx_err pbx_capabi_check_receipt(const pbx_capabi_layout *layout,
                                 const pbx_capabi_observed *obs,
                                 pbx_capabi_receipt receipt);

/*
 * ROUTE_ATTACH: a fresh peer route handed to a running powerboxd.
 *
 * After readiness powerboxd keeps slot 4 (the supervisor's startup
 * connection) and takes one kind of message on it: ROUTE_ATTACH, a fixed
 * little-endian datagram carrying exactly one capability, the new route
 * of a restarted peer. Layout (PBX_CAPABI_ATTACH_BYTES): u32 magic
 * "PBXA", u16 version, u16 route (pbx_capabi_route), u32 the expected
 * peer's process id (1..INT32_MAX), u32 reserved (0). The capability is
 * judged exactly as the startup inventory judges the slot it replaces
 * (kind, provenance, exact rights) and then by the peer's credentials:
 * the kernel must name a connected peer running as powerboxd's own user
 * whose process id is the expected one. A route received over slot 4
 * counts as root-transferred: slot 4 is the creator's own startup
 * connection, and nothing else is read there.
 *
 * Every attach is answered with one datagram on slot 4
 * (PBX_CAPABI_ANSWER_BYTES): u32 magic "PBXa", u16 version, u16 the
 * route named (0 when the frame named none), u32 the peer process id
 * named (0 when none), u32 status: 0 accepted, else the pbx_err of the
 * refusal. A refused attach keeps no descriptor it carried.
 */

/** PBX_CAPABI_ATTACH_MAGIC is the u32 whose little-endian bytes are "PBXA". */
#define PBX_CAPABI_ATTACH_MAGIC 0x41584250U
/** PBX_CAPABI_ANSWER_MAGIC is the u32 whose little-endian bytes are "PBXa". */
#define PBX_CAPABI_ANSWER_MAGIC 0x61584250U
/** PBX_CAPABI_ATTACH_VERSION is the ROUTE_ATTACH and answer version. */
#define PBX_CAPABI_ATTACH_VERSION 1U
/** PBX_CAPABI_ATTACH_BYTES is the exact length of a ROUTE_ATTACH frame. */
#define PBX_CAPABI_ATTACH_BYTES 16U
/** PBX_CAPABI_ANSWER_BYTES is the exact length of its answer. */
#define PBX_CAPABI_ANSWER_BYTES 16U

/** pbx_capabi_route names the route a ROUTE_ATTACH replaces. */
typedef enum pbx_capabi_route {
    /** vfsd's route, slot 5. */
    PBX_CAPABI_ROUTE_VFSD = 1,
    /** ttyd's route, slot 6. */
    PBX_CAPABI_ROUTE_TTYD = 2,
    /** procd's route, slot 7. */
    PBX_CAPABI_ROUTE_PROCD = 3,
    /** launchd's wake route, slot 8. */
    PBX_CAPABI_ROUTE_WAKE = 4,
    /** launchd's broker endpoint, slot 10. */
    PBX_CAPABI_ROUTE_BROKER = 5
} pbx_capabi_route;

/** pbx_capabi_attach is a decoded ROUTE_ATTACH; plain data. */
typedef struct pbx_capabi_attach {
    /** The route replaced: a pbx_capabi_route value. */
    uint32_t route;
    /** The process id the new route's peer must have (1..INT32_MAX). */
    uint32_t peer_pid;
} pbx_capabi_attach;

/** pbx_capabi_answer is a decoded answer to a ROUTE_ATTACH; plain data. */
typedef struct pbx_capabi_answer {
    /** The route the attach named, or 0 when it named none. */
    uint32_t route;
    /** The peer process id the attach named, or 0. */
    uint32_t peer_pid;
    /** PBX_OK when accepted, else the refusal's pbx_err value. */
    uint32_t status;
} pbx_capabi_answer;

/**
 * pbx_capabi_peer is what the kernel says about the connected peer of an
 * attached route (Linux: SO_PEERCRED), and powerboxd's own user. Every
 * field but self_uid is untrusted observation.
 */
typedef struct pbx_capabi_peer {
    /** Nonzero when the kernel named a connected peer at all. */
    uint32_t present;
    /** The peer's process id (meaningful only when present). */
    uint32_t pid;
    /** The peer's user id (meaningful only when present). */
    uint32_t uid;
    /** powerboxd's own user id. */
    uint32_t self_uid;
} pbx_capabi_peer;

/**
 * pbx_capabi_attach_encode writes the ROUTE_ATTACH frame for a (a route
 * of pbx_capabi_route and a peer pid in 1..INT32_MAX, else
 * PBX_E_CAPABI_ATTACH_ROUTE or PBX_E_CAPABI_ATTACH_PID) into buf, which
 * must have cap >= PBX_CAPABI_ATTACH_BYTES bytes
 * (PBX_E_CAPABI_ATTACH_LENGTH otherwise). Nothing is written on error.
 */
pbx_err pbx_capabi_attach_encode(const pbx_capabi_attach *a, uint8_t *buf,
                                 size_t cap);

/**
 * pbx_capabi_attach_decode judges len untrusted bytes of buf that arrived
 * on slot 4 with receipts capabilities, in this order, returning the
 * first failure: PBX_E_CAPABI_ATTACH_LENGTH (len is not
 * PBX_CAPABI_ATTACH_BYTES), _MAGIC, _VERSION, _ROUTE, _PID, _RESERVED,
 * _COUNT (receipts is not exactly 1). On success *out is written; on
 * failure *out keeps whatever could be read (route and peer_pid, each 0
 * unless its bytes were present), so the answer can echo them.
 */
pbx_err pbx_capabi_attach_decode(const uint8_t *buf, size_t len,
                                 uint32_t receipts, pbx_capabi_attach *out);

/**
 * pbx_capabi_attach_entry returns the startup inventory entry whose slot
 * route replaces, which must be a pbx_capabi_route value (a programmer
 * error otherwise: decode has proved it).
 */
pbx_capabi_entry pbx_capabi_attach_entry(uint32_t route);

/**
 * pbx_capabi_check_attach judges the observation obs of the capability a
 * decoded attach a carried (obs->slot is wherever it is staged; it is
 * judged as if it were in the slot it replaces) and its peer's
 * credentials peer. Order, first failure returned:
 * PBX_E_CAPABI_ENTRY_MISSING (kind EMPTY), PBX_E_CAPABI_KIND,
 * PBX_E_CAPABI_PROVENANCE, PBX_E_CAPABI_RIGHTS_MISSING,
 * PBX_E_CAPABI_RIGHTS_EXTRA, PBX_E_CAPABI_PEER_NONE,
 * PBX_E_CAPABI_PEER_USER, PBX_E_CAPABI_PEER_PID.
 */
pbx_err pbx_capabi_check_attach(const pbx_capabi_attach *a,
                                const pbx_capabi_observed *obs,
                                const pbx_capabi_peer *peer);

/**
 * pbx_capabi_answer_encode writes the answer ans into buf (cap >=
 * PBX_CAPABI_ANSWER_BYTES, else PBX_E_CAPABI_ATTACH_LENGTH and nothing
 * written).
 */
pbx_err pbx_capabi_answer_encode(const pbx_capabi_answer *ans, uint8_t *buf,
                                 size_t cap);

/**
 * pbx_capabi_answer_decode judges len untrusted bytes of an answer:
 * PBX_E_CAPABI_ATTACH_LENGTH, _MAGIC or _VERSION, else PBX_OK with *out
 * written (out untouched on error). The status is reported as sent.
 */
pbx_err pbx_capabi_answer_decode(const uint8_t *buf, size_t len,
                                 pbx_capabi_answer *out);

/*
 * USAGE on slot 4.
 *
 * Besides ROUTE_ATTACH, slot 4 takes a USAGE query: a fixed little-endian
 * datagram carrying no capability (PBX_CAPABI_USAGE_QUERY_BYTES): u32
 * magic "PBXU", u16 version, u16 reserved (0), u32 nonce (any value,
 * echoed), u32 reserved (0). The runtime tells the two frames apart by
 * their magic alone (pbx_capabi_usage_is_query); every other frame,
 * unknown magics included, goes the attach path and is refused there.
 *
 * Every query is answered with one USAGE report on slot 4
 * (PBX_CAPABI_USAGE_REPORT_BYTES): u32 magic "PBXu", u16 version, u16
 * reserved (0), u32 the nonce echoed (0 when the query was too short to
 * hold one), u32 status (0 answered, else the pbx_err of the refusal),
 * then for each of the PBX_CAPABI_USAGE_POOLS pools of the arena, in
 * PBX1 pool order, u32 records in use and u32 capacity, then u32 open
 * descriptors (non-empty slots from 0 to the end of the reservable range)
 * and u32 log lines dropped since start. A refused query's report carries
 * zeros after its status, and every capability the query carried is
 * deleted. Pool 1 (selector bytes) is counted in selector chunks.
 */

/** PBX_CAPABI_USAGE_MAGIC is the u32 whose little-endian bytes are "PBXU". */
#define PBX_CAPABI_USAGE_MAGIC 0x55584250U
/** PBX_CAPABI_REPORT_MAGIC is the u32 whose little-endian bytes are "PBXu". */
#define PBX_CAPABI_REPORT_MAGIC 0x75584250U
/** PBX_CAPABI_USAGE_VERSION is the USAGE query and report version. */
#define PBX_CAPABI_USAGE_VERSION 1U
/** PBX_CAPABI_USAGE_QUERY_BYTES is the exact length of a USAGE query. */
#define PBX_CAPABI_USAGE_QUERY_BYTES 16U
/**
 * PBX_CAPABI_USAGE_POOLS is the number of arena pools a report counts:
 * the PBX1 pools (pbx_bootstrap_pool), in their order, which the runtime
 * checks at build time.
 */
#define PBX_CAPABI_USAGE_POOLS 10U
/** PBX_CAPABI_USAGE_REPORT_BYTES is the exact length of a USAGE report:
 * a 16-byte head, two u32 per pool, open descriptors, dropped lines. */
#define PBX_CAPABI_USAGE_REPORT_BYTES (16U + 8U * PBX_CAPABI_USAGE_POOLS + 8U)

/**
 * pbx_capabi_usage is a decoded USAGE report; plain data. used[i] and
 * capacity[i] are pool i (pbx_bootstrap_pool order); used[i] never
 * exceeds capacity[i] in a report that decoded.
 */
typedef struct pbx_capabi_usage {
    /** The nonce of the query answered. */
    uint32_t nonce;
    /** PBX_OK when answered, else the refusal's pbx_err value. */
    uint32_t status;
    /** Records in use per pool (selector bytes: chunks in use). */
    uint32_t used[PBX_CAPABI_USAGE_POOLS];
    /** Records per pool (selector bytes: whole chunks). */
    uint32_t capacity[PBX_CAPABI_USAGE_POOLS];
    /** Descriptors (non-empty slots) powerboxd holds open. */
    uint32_t fds;
    /** Log lines powerboxd dropped since it started (saturating). */
    uint32_t log_dropped;
} pbx_capabi_usage;

/**
 * pbx_capabi_usage_is_query says whether len untrusted bytes of buf
 * (buf may be NULL only when len is 0) begin with the USAGE query magic,
 * so that slot 4 hands the frame to the USAGE path; anything shorter
 * than the magic is not a query. Pure.
 */
bool pbx_capabi_usage_is_query(const uint8_t *buf, size_t len);

/**
 * pbx_capabi_usage_query_encode writes the USAGE query carrying nonce
 * into buf, which must have cap >= PBX_CAPABI_USAGE_QUERY_BYTES bytes
 * (PBX_E_CAPABI_USAGE_LENGTH and nothing written otherwise).
 */
pbx_err pbx_capabi_usage_query_encode(uint32_t nonce, uint8_t *buf, size_t cap);

/**
 * pbx_capabi_usage_query_decode judges len untrusted bytes of buf that
 * arrived on slot 4 with receipts capabilities, in this order, returning
 * the first failure: PBX_E_CAPABI_USAGE_LENGTH (len is not
 * PBX_CAPABI_USAGE_QUERY_BYTES), _MAGIC, _VERSION, _RESERVED (either
 * reserved field), _COUNT (receipts is not 0). *nonce is always written:
 * the nonce when its bytes were present (even on failure, so the report
 * can echo it), else 0.
 */
pbx_err pbx_capabi_usage_query_decode(const uint8_t *buf, size_t len,
                                      uint32_t receipts, uint32_t *nonce);

/**
 * pbx_capabi_usage_encode writes the report u into buf (cap >=
 * PBX_CAPABI_USAGE_REPORT_BYTES, else PBX_E_CAPABI_USAGE_LENGTH).
 * PBX_E_CAPABI_USAGE_RANGE when a pool's used count exceeds its
 * capacity. Nothing is written on error.
 */
pbx_err pbx_capabi_usage_encode(const pbx_capabi_usage *u, uint8_t *buf,
                                size_t cap);

/**
 * pbx_capabi_usage_decode judges len untrusted bytes of a report, in this
 * order: PBX_E_CAPABI_USAGE_LENGTH, _MAGIC, _VERSION, _RESERVED, _RANGE
 * (a pool's used count above its capacity); PBX_OK with *out written
 * (out untouched on error). The status is reported as sent.
 */
pbx_err pbx_capabi_usage_decode(const uint8_t *buf, size_t len,
                                pbx_capabi_usage *out);

/**
 * pbx_capabi_usage_pool_name returns the short static name a usage line
 * gives pool (below PBX_CAPABI_USAGE_POOLS, a programmer error
 * otherwise): "requests", "selector_chunks", "grants", "prompts",
 * "policies", "decisions", "tslots", "resolutions", "notifications",
 * "calls". Never NULL; valid for the whole program.
 */
const char *pbx_capabi_usage_pool_name(uint32_t pool);

#endif /* PBX_CAPABI_H */
