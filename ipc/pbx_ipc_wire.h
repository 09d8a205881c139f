/*
 * pbx_ipc_wire.h: the frame header, operations, discriminants, shared
 * record pieces and the public operations of the wire codec (seed
 * lib-ipc); ipc/pbx_ipc.h includes it with the per-peer headers and
 * describes the rules every encoder and decoder here keeps.
 */
#ifndef PBX_IPC_WIRE_H
#define PBX_IPC_WIRE_H

#include "base/pbx_base.h"

/* ---- frame header ------------------------------------------------------ */

/** PBX_IPC_MAGIC is the u32 whose little-endian bytes are 'P','B','X','F'. */
#define PBX_IPC_MAGIC 0x46584250U
/** PBX_IPC_VERSION is the only frame version this codec accepts. */
#define PBX_IPC_VERSION 2U
/** PBX_IPC_HEADER_BYTES is the fixed size of the frame header. */
#define PBX_IPC_HEADER_BYTES 32U
/** PBX_IPC_SEQ_OFFSET is the header offset of the u32 per-call seq. */
#define PBX_IPC_SEQ_OFFSET 24U
/** PBX_IPC_RESERVED_OFFSET is the header offset of the reserved u32. */
#define PBX_IPC_RESERVED_OFFSET 28U
/**
 * PBX_IPC_FRAME_BYTES_MAX bounds a whole frame (header plus body). It is
 * sized for the largest record, a PROMPT with a full selector, entry and
 * label; transports size their receive buffers from it.
 */
#define PBX_IPC_FRAME_BYTES_MAX 4608U
/** PBX_IPC_BODY_BYTES_MAX bounds the body that follows the header. */
#define PBX_IPC_BODY_BYTES_MAX (PBX_IPC_FRAME_BYTES_MAX - PBX_IPC_HEADER_BYTES)
/** PBX_IPC_REPLY_BIT marks a reply: a reply's op is the request op | bit. */
#define PBX_IPC_REPLY_BIT 0x8000U
/** PBX_IPC_CAPS_MAX is the most capabilities any frame may carry. */
#define PBX_IPC_CAPS_MAX 1U

/* ---- field bounds ------------------------------------------------------ */

/** PBX_IPC_SELECTOR_LEN_BYTES_MAX bounds a whole selector (at least 1). */
#define PBX_IPC_SELECTOR_LEN_BYTES_MAX 4096U
/** PBX_IPC_SELECTOR_CHUNK_BYTES_MAX bounds one SELECTOR chunk (at least 1). */
#define PBX_IPC_SELECTOR_CHUNK_BYTES_MAX 512U
/** PBX_IPC_LABEL_LEN_BYTES_MAX bounds a display label (0 allowed). */
#define PBX_IPC_LABEL_LEN_BYTES_MAX 64U
/** PBX_IPC_ENTRY_LEN_BYTES_MAX bounds a program entry (at least 1). */
#define PBX_IPC_ENTRY_LEN_BYTES_MAX 128U
/** PBX_IPC_DIGEST_BYTES is the size of a selector SHA-256 digest. */
#define PBX_IPC_DIGEST_BYTES 32U

/* ---- fixed body sizes (bytes before any variable tail) ------------------ */

/** PBX_IPC_BEGIN_FIXED_BYTES: BEGIN body before the entry and label. */
#define PBX_IPC_BEGIN_FIXED_BYTES 96U
/** PBX_IPC_BEGIN_REPLY_BYTES: BEGIN reply body (destination slot). */
#define PBX_IPC_BEGIN_REPLY_BYTES 4U
/** PBX_IPC_SELECTOR_FIXED_BYTES: SELECTOR body before the chunk bytes. */
#define PBX_IPC_SELECTOR_FIXED_BYTES 8U
/** PBX_IPC_COMMIT_BYTES: COMMIT body (slot echo and reserved zero). */
#define PBX_IPC_COMMIT_BYTES 8U
/** PBX_IPC_DECISION_REPLY_BYTES: DECISION reply body. */
#define PBX_IPC_DECISION_REPLY_BYTES 16U
/** PBX_IPC_CANCEL_BYTES: CANCEL body (correlation, grant flag, or zero). */
#define PBX_IPC_CANCEL_BYTES 24U
/** PBX_IPC_CONSUME_BYTES: CONSUME body (grant identity). */
#define PBX_IPC_CONSUME_BYTES 8U
/** PBX_IPC_EXPIRE_BYTES: EXPIRE body. */
#define PBX_IPC_EXPIRE_BYTES 24U
/** PBX_IPC_RESOLVE_FIXED_BYTES: RESOLVE body before the selector bytes. */
#define PBX_IPC_RESOLVE_FIXED_BYTES 40U
/** PBX_IPC_RESOLVE_REPLY_BYTES: RESOLVE reply body. */
#define PBX_IPC_RESOLVE_REPLY_BYTES 64U
/** PBX_IPC_DETACH_BYTES: DETACH body, and its acknowledgement. */
#define PBX_IPC_DETACH_BYTES 16U
/** PBX_IPC_RETIRE_BYTES: RETIRE body, and its acknowledgement. */
#define PBX_IPC_RETIRE_BYTES 24U
/** PBX_IPC_POLICY_FIXED_BYTES: POLICY body before the entry bytes. */
#define PBX_IPC_POLICY_FIXED_BYTES 48U
/** PBX_IPC_POLICY_REPLY_BYTES: POLICY reply body. */
#define PBX_IPC_POLICY_REPLY_BYTES 16U
/** PBX_IPC_PROMPT_FIXED_BYTES: PROMPT body before entry, label, selector. */
#define PBX_IPC_PROMPT_FIXED_BYTES 88U
/** PBX_IPC_PROMPT_ANSWER_BYTES: PROMPT ANSWER reply body (RETRY is 0). */
#define PBX_IPC_PROMPT_ANSWER_BYTES 48U
/** PBX_IPC_VIEW_FIXED_BYTES: VIEW body before the entry and label. */
#define PBX_IPC_VIEW_FIXED_BYTES 120U
/** PBX_IPC_VIEW_REPLY_BYTES: VIEW acknowledgement body. */
#define PBX_IPC_VIEW_REPLY_BYTES 12U
/** PBX_IPC_INSTALL_BYTES: INSTALL body. */
#define PBX_IPC_INSTALL_BYTES 32U
/** PBX_IPC_INSTALL_REPLY_BYTES: INSTALL reply body. */
#define PBX_IPC_INSTALL_REPLY_BYTES 32U
/** PBX_IPC_REVOKE_BYTES: REVOKE body. */
#define PBX_IPC_REVOKE_BYTES 24U
/** PBX_IPC_REVOKE_REPLY_BYTES: REVOKE acknowledgement body. */
#define PBX_IPC_REVOKE_REPLY_BYTES 8U
/** PBX_IPC_WAKE_BYTES: WAKE datagram body. */
#define PBX_IPC_WAKE_BYTES 16U
/** PBX_IPC_WITHDRAW_BYTES: WITHDRAW body, and its acknowledgement. */
#define PBX_IPC_WITHDRAW_BYTES 16U

/** The seq and reserved words close the header exactly. */
_Static_assert(PBX_IPC_SEQ_OFFSET + 4U == PBX_IPC_RESERVED_OFFSET &&
                   PBX_IPC_RESERVED_OFFSET + 4U == PBX_IPC_HEADER_BYTES,
               "seq and reserved are the header's last two words");

/** A selector chunk never exceeds the whole selector. */
_Static_assert(PBX_IPC_SELECTOR_CHUNK_BYTES_MAX <=
                   PBX_IPC_SELECTOR_LEN_BYTES_MAX,
               "a chunk never exceeds the whole selector");
/** The largest PROMPT (full entry, label and selector) fits one frame. */
_Static_assert(PBX_IPC_HEADER_BYTES + PBX_IPC_PROMPT_FIXED_BYTES +
                       PBX_IPC_ENTRY_LEN_BYTES_MAX +
                       PBX_IPC_LABEL_LEN_BYTES_MAX +
                       PBX_IPC_SELECTOR_LEN_BYTES_MAX <=
                   PBX_IPC_FRAME_BYTES_MAX,
               "the largest PROMPT fits one frame");
/** The largest RESOLVE (full selector) fits one frame. */
_Static_assert(PBX_IPC_HEADER_BYTES + PBX_IPC_RESOLVE_FIXED_BYTES +
                       PBX_IPC_SELECTOR_LEN_BYTES_MAX <=
                   PBX_IPC_FRAME_BYTES_MAX,
               "the largest RESOLVE fits one frame");
/** The largest VIEW row fits one frame body. */
_Static_assert(PBX_IPC_VIEW_FIXED_BYTES + PBX_IPC_ENTRY_LEN_BYTES_MAX +
                       PBX_IPC_LABEL_LEN_BYTES_MAX <=
                   PBX_IPC_BODY_BYTES_MAX,
               "the largest VIEW fits one frame");
/** Every frame length fits the u32 body length field. */
_Static_assert(PBX_IPC_FRAME_BYTES_MAX <= UINT32_MAX,
               "frame length fits the u32 body length field");

/* ---- operations -------------------------------------------------------- */

/**
 * pbx_ipc_op numbers every request. The high byte names the peer family
 * (0x00 public, 0x01 vfsd, 0x02 ttyd, 0x03 procd, 0x04 launchd); a reply
 * uses the same number with PBX_IPC_REPLY_BIT set. WAKE has no reply.
 */
typedef enum pbx_ipc_op {
    PBX_IPC_OP_BEGIN = 0x0001,
    PBX_IPC_OP_SELECTOR = 0x0002,
    PBX_IPC_OP_COMMIT = 0x0003,
    PBX_IPC_OP_DECISION = 0x0004,
    PBX_IPC_OP_CANCEL = 0x0005,
    PBX_IPC_OP_CONSUME = 0x0006,
    PBX_IPC_OP_EXPIRE = 0x0007,
    PBX_IPC_OP_RESOLVE = 0x0101,
    PBX_IPC_OP_DETACH = 0x0102,
    PBX_IPC_OP_RETIRE = 0x0103,
    PBX_IPC_OP_POLICY = 0x0201,
    PBX_IPC_OP_PROMPT = 0x0202,
    PBX_IPC_OP_VIEW = 0x0203,
    PBX_IPC_OP_WITHDRAW = 0x0204,
    PBX_IPC_OP_INSTALL = 0x0301,
    PBX_IPC_OP_REVOKE = 0x0302,
    PBX_IPC_OP_WAKE = 0x0401
} pbx_ipc_op;

/** PBX_IPC_OP_COUNT is the number of request operations in pbx_ipc_op. */
#define PBX_IPC_OP_COUNT 17U

/**
 * pbx_ipc_id_rule says what the header's request identity must hold on a
 * frame whose status is zero. Frames with a nonzero status (error replies)
 * echo whatever the request carried and are not checked.
 */
typedef enum pbx_ipc_id_rule {
    /** Index and generation both zero (BEGIN request, CONSUME, EXPIRE). */
    PBX_IPC_ID_ZERO = 1,
    /** Any index, nonzero generation: an exact live request. */
    PBX_IPC_ID_LIVE = 2,
    /** CANCEL: generation zero (then index zero) selects correlation. */
    PBX_IPC_ID_CANCEL = 3
} pbx_ipc_id_rule;

/**
 * pbx_ipc_op_rule is one row of the authority partition table: for one op
 * (request or reply form) the inclusive range of capabilities a frame with
 * status zero may carry, and its request identity rule. A frame with a
 * nonzero status always carries zero capabilities and an empty body.
 * Record decoders narrow the range by outcome (for example RESOLVE FOUND
 * carries exactly 1, NOT_FOUND exactly 0).
 */
typedef struct pbx_ipc_op_rule {
    /** op is the full operation number, including the reply bit. */
    uint16_t op;
    /** caps_min is the fewest capabilities a status-zero frame carries. */
    uint8_t caps_min;
    /** caps_max is the most capabilities a status-zero frame carries. */
    uint8_t caps_max;
    /** id_rule is a pbx_ipc_id_rule value for the header request id. */
    uint8_t id_rule;
} pbx_ipc_op_rule;

/**
 * pbx_ipc_op_rule_get looks up op (request, or request | reply bit) in the
 * authority partition table and copies its row to *out. Returns
 * PBX_E_IPC_UNKNOWN_OP (leaving *out untouched) for any other number,
 * including a reply form of WAKE. out must not be NULL.
 */
pbx_err pbx_ipc_op_rule_get(uint16_t op, pbx_ipc_op_rule *out);

/**
 * pbx_ipc_caps_allowed reports whether a frame of op with the given status
 * may carry caps capabilities according to the partition table (before
 * outcome-dependent narrowing). Unknown ops are never allowed.
 */
bool pbx_ipc_caps_allowed(uint16_t op, uint16_t status, uint16_t caps);

/* ---- discriminants ------------------------------------------------------ */

/** pbx_ipc_operation is the access a request asks for (u16 on the wire). */
typedef enum pbx_ipc_operation {
    PBX_IPC_OPERATION_READ = 1,
    PBX_IPC_OPERATION_WRITE = 2,
    PBX_IPC_OPERATION_EXECUTE = 3,
    PBX_IPC_OPERATION_LIST = 4,
    PBX_IPC_OPERATION_ENTRY_METADATA_READ = 5,
    PBX_IPC_OPERATION_ENTRY_TOUCH = 6,
    /* CREATE asks for a file that does not exist yet: vfsd creates it
     * only when the approved object is first opened (docs/HOST.md,
     * "Brokered opens"); admitted only with the class FILE. */
    PBX_IPC_OPERATION_CREATE = 7
} pbx_ipc_operation;

/** pbx_ipc_class is the class of the object (u16 on the wire). */
typedef enum pbx_ipc_class {
    PBX_IPC_CLASS_FILE = 1,
    PBX_IPC_CLASS_DIRECTORY = 2,
    PBX_IPC_CLASS_DIRECTORY_ENTRY = 3,
    PBX_IPC_CLASS_DEVICE = 4,
    PBX_IPC_CLASS_ENDPOINT = 5
} pbx_ipc_class;

/** pbx_ipc_lifetime is how long a grant lives (u8 on the wire). */
typedef enum pbx_ipc_lifetime {
    PBX_IPC_LIFETIME_ONE_SHOT = 1,
    PBX_IPC_LIFETIME_INVOCATION = 2,
    PBX_IPC_LIFETIME_JOB = 3
} pbx_ipc_lifetime;

/** pbx_ipc_mode is how an approved grant is delivered (u8 on the wire). */
typedef enum pbx_ipc_mode {
    /** procd installs the object into the staged target's exact slot. */
    PBX_IPC_MODE_INSTALL = 1,
    /** The DECISION reply to launchd exports a revocable alias once. */
    PBX_IPC_MODE_RUNTIME_REPLY = 2
} pbx_ipc_mode;

/** pbx_ipc_urgency separates pre-authorizable from deny-or-prompt (u8). */
typedef enum pbx_ipc_urgency {
    PBX_IPC_URGENCY_ROUTINE = 1,
    PBX_IPC_URGENCY_EXCEPTIONAL = 2
} pbx_ipc_urgency;

/** pbx_ipc_outcome is the DECISION reply's state (u8 on the wire). */
typedef enum pbx_ipc_outcome {
    PBX_IPC_OUTCOME_PENDING = 1,
    PBX_IPC_OUTCOME_APPROVED = 2,
    PBX_IPC_OUTCOME_DENIED = 3,
    PBX_IPC_OUTCOME_CANCELLED = 4,
    PBX_IPC_OUTCOME_NOT_FOUND = 5
} pbx_ipc_outcome;

/**
 * pbx_ipc_reason says why a DECISION reply is DENIED (u16 on the wire).
 * Only DENIED may carry a nonzero reason; NONE is valid for every outcome.
 */
typedef enum pbx_ipc_reason {
    /** No reason given (the only value outside DENIED). */
    PBX_IPC_REASON_NONE = 0,
    /** The session policy denied the request. */
    PBX_IPC_REASON_POLICY = 1,
    /** The user answered no at the trusted prompt. */
    PBX_IPC_REASON_USER = 2,
    /** The trusted prompt was not answered before its deadline. */
    PBX_IPC_REASON_PROMPT_TIMEOUT = 3,
    /** A resolution, policy or install call got no answer in time. */
    PBX_IPC_REASON_PEER_TIMEOUT = 4,
    /** A peer refused, failed or answered inexactly. */
    PBX_IPC_REASON_PEER_FAILED = 5,
    /** The resolution evidence did not bind to the request. */
    PBX_IPC_REASON_RESOLVE = 6,
    /** vfsd's route was lost: the grant's object died with its provider. */
    PBX_IPC_REASON_PROVIDER_LOST = 7,
    /** procd's route was lost: the installed grant can no longer be
     * revoked through procd, so its object was retired at vfsd. */
    PBX_IPC_REASON_INSTALLER_LOST = 8
} pbx_ipc_reason;

/** pbx_ipc_expire_kind says which launchd scope ended (u8 on the wire). */
typedef enum pbx_ipc_expire_kind {
    PBX_IPC_EXPIRE_INVOCATION = 1,
    PBX_IPC_EXPIRE_JOB = 2
} pbx_ipc_expire_kind;

/** pbx_ipc_resolve_result is vfsd's RESOLVE answer (u8 on the wire). */
typedef enum pbx_ipc_resolve_result {
    PBX_IPC_RESOLVE_FOUND = 1,
    PBX_IPC_RESOLVE_NOT_FOUND = 2,
    PBX_IPC_RESOLVE_DENIED = 3
} pbx_ipc_resolve_result;

/** pbx_ipc_verdict is ttyd's session POLICY answer (u8 on the wire). */
typedef enum pbx_ipc_verdict {
    PBX_IPC_VERDICT_ALLOW = 1,
    PBX_IPC_VERDICT_DENY = 2,
    PBX_IPC_VERDICT_PROMPT = 3
} pbx_ipc_verdict;

/** pbx_ipc_answer is the user's trusted PROMPT answer (u8 on the wire). */
typedef enum pbx_ipc_answer {
    PBX_IPC_ANSWER_APPROVE = 1,
    PBX_IPC_ANSWER_DENY = 2
} pbx_ipc_answer;

/** pbx_ipc_view_kind publishes or removes a grant row (u8 on the wire). */
typedef enum pbx_ipc_view_kind {
    PBX_IPC_VIEW_ACTIVE = 1,
    PBX_IPC_VIEW_REMOVE = 2
} pbx_ipc_view_kind;

/**
 * pbx_ipc_handle_kind is the kind of handle procd returns from INSTALL (u8
 * on the wire). The decoder reports both; the core must reject STAGING.
 */
typedef enum pbx_ipc_handle_kind {
    PBX_IPC_HANDLE_MANAGE_ONLY = 1,
    PBX_IPC_HANDLE_STAGING = 2
} pbx_ipc_handle_kind;

/** pbx_ipc_operation_known reports whether v is a pbx_ipc_operation. */
bool pbx_ipc_operation_known(uint32_t v);
/** pbx_ipc_class_known reports whether v is a pbx_ipc_class. */
bool pbx_ipc_class_known(uint32_t v);
/** pbx_ipc_lifetime_known reports whether v is a pbx_ipc_lifetime. */
bool pbx_ipc_lifetime_known(uint32_t v);

/* ---- printable names (pbx_ipc_names.c) ---------------------------------- */

/**
 * pbx_ipc_op_name names an operation number for logs: the request's name
 * in lower case ("begin", "resolve", "wake", ...) and, with
 * PBX_IPC_REPLY_BIT set, "<name>-reply" ("resolve-reply"). Any other
 * number (a reply form of WAKE included) is "unknown". The result is a
 * static NUL-terminated string, never NULL, never freed.
 */
const char *pbx_ipc_op_name(uint16_t op);

/**
 * pbx_ipc_operation_name names a pbx_ipc_operation: "read", "write",
 * "execute", "list", "stat" (ENTRY_METADATA_READ), "touch" (ENTRY_TOUCH),
 * "create"; any other value "unknown". Static string, never NULL.
 */
const char *pbx_ipc_operation_name(uint32_t operation);

/** pbx_ipc_class_name names a pbx_ipc_class ("file", "directory",
 * "directory-entry", "device", "endpoint"), else "unknown". Static. */
const char *pbx_ipc_class_name(uint32_t object_class);

/** pbx_ipc_lifetime_name names a pbx_ipc_lifetime ("one-shot",
 * "invocation", "job"), else "unknown". Static string, never NULL. */
const char *pbx_ipc_lifetime_name(uint32_t lifetime);

/** pbx_ipc_mode_name names a pbx_ipc_mode ("install", "runtime-reply"),
 * else "unknown". Static string, never NULL. */
const char *pbx_ipc_mode_name(uint32_t mode);

/** pbx_ipc_urgency_name names a pbx_ipc_urgency ("routine",
 * "exceptional"), else "unknown". Static string, never NULL. */
const char *pbx_ipc_urgency_name(uint32_t urgency);

/** pbx_ipc_outcome_name names a pbx_ipc_outcome ("pending", "approved",
 * "denied", "cancelled", "not-found"), else "unknown". Static. */
const char *pbx_ipc_outcome_name(uint32_t outcome);

/** pbx_ipc_reason_name names a pbx_ipc_reason ("none", "policy", "user",
 * "prompt-timeout", "peer-timeout", "peer-failed", "resolve"), else
 * "unknown". Static string, never NULL. */
const char *pbx_ipc_reason_name(uint32_t reason);

/** pbx_ipc_resolve_result_name names a pbx_ipc_resolve_result ("found",
 * "not-found", "denied"), else "unknown". Static string, never NULL. */
const char *pbx_ipc_resolve_result_name(uint32_t result);

/** pbx_ipc_verdict_name names a pbx_ipc_verdict ("allow", "deny",
 * "prompt"), else "unknown". Static string, never NULL. */
const char *pbx_ipc_verdict_name(uint32_t verdict);

/**
 * pbx_ipc_admission_check applies the seed's entry rules to validated
 * discriminants. The class DIRECTORY_ENTRY is admitted only for the exact
 * entry operations ENTRY_METADATA_READ and ENTRY_TOUCH with lifetime
 * ONE_SHOT, never widened: any other operation or lifetime with that class
 * is PBX_E_IPC_DIR_ENTRY_WIDENED. The entry operations are admitted only
 * for that class, and CREATE only for the class FILE (PBX_E_IPC_ADMISSION
 * otherwise). Returns PBX_OK or one of
 * those errors. Pure; every decoder carrying the triple (BEGIN, POLICY,
 * PROMPT, VIEW, INSTALL) calls it.
 */
pbx_err pbx_ipc_admission_check(uint16_t operation, uint16_t object_class,
                                uint8_t lifetime);

/* ---- shared record pieces ---------------------------------------------- */

/** pbx_ipc_id is a generational identity (request or grant): data only. */
typedef struct pbx_ipc_id {
    /** index is the table slot; any value. */
    uint32_t index;
    /** gen is the slot's generation; zero never names a live record. */
    uint32_t gen;
} pbx_ipc_id;

/** pbx_ipc_object is vfsd's identity for a resolved object: data only. */
typedef struct pbx_ipc_object {
    /** id is vfsd's object number. */
    uint64_t id;
    /** gen is the object's generation; nonzero for a real object. */
    uint32_t gen;
} pbx_ipc_object;

/**
 * pbx_ipc_entry is a launchd-authenticated canonical program entry, copied
 * into the record (no pointer into the frame). len is 1..ENTRY_MAX and the
 * first len bytes are printable ASCII (0x20..0x7E); the rest are ignored.
 */
typedef struct pbx_ipc_entry {
    /** len is the number of valid bytes. */
    uint16_t len;
    /** bytes holds the entry; only the first len bytes are meaningful. */
    uint8_t bytes[PBX_IPC_ENTRY_LEN_BYTES_MAX];
} pbx_ipc_entry;

/**
 * pbx_ipc_label is a display label, copied into the record. len is
 * 0..LABEL_MAX, bytes printable ASCII. A label never selects authority.
 */
typedef struct pbx_ipc_label {
    /** len is the number of valid bytes. */
    uint16_t len;
    /** bytes holds the label; only the first len bytes are meaningful. */
    uint8_t bytes[PBX_IPC_LABEL_LEN_BYTES_MAX];
} pbx_ipc_label;

/**
 * pbx_ipc_context is the request context shared by BEGIN, POLICY, PROMPT
 * and VIEW. All fields are data. operation, object_class, lifetime, mode
 * and urgency hold the enum values above; job_gen is nonzero.
 */
typedef struct pbx_ipc_context {
    /** session is ttyd's authenticated session number. */
    uint64_t session;
    /** job_id is launchd's job number. */
    uint64_t job_id;
    /** job_gen is the job's generation (nonzero). */
    uint32_t job_gen;
    /** realm is the session realm. */
    uint32_t realm;
    /** operation is a pbx_ipc_operation. */
    uint16_t operation;
    /** object_class is a pbx_ipc_class. */
    uint16_t object_class;
    /** lifetime is a pbx_ipc_lifetime. */
    uint8_t lifetime;
    /** mode is a pbx_ipc_mode. */
    uint8_t mode;
    /** urgency is a pbx_ipc_urgency. */
    uint8_t urgency;
    /** entry is the canonical program entry. */
    pbx_ipc_entry entry;
} pbx_ipc_context;

/**
 * pbx_ipc_target is the install destination: procd's staged process and
 * slot. In INSTALL mode process_gen is nonzero; in RUNTIME_REPLY mode all
 * three fields are zero.
 */
typedef struct pbx_ipc_target {
    /** process_id is procd's process number. */
    uint64_t process_id;
    /** process_gen is the staged process generation. */
    uint32_t process_gen;
    /** slot is the slot number in the target's CSpace (data). */
    uint32_t slot;
} pbx_ipc_target;

/* ---- frame ------------------------------------------------------------- */

/**
 * pbx_ipc_frame is a decoded header plus a view of the body. body points
 * into the buffer given to pbx_ipc_frame_decode and is valid only while
 * that buffer is unchanged; record decoders copy what they keep.
 */
typedef struct pbx_ipc_frame {
    /** op is the full operation number (reply bit included). */
    uint16_t op;
    /** status is 0 or, in a reply, a pbx_err value. */
    uint16_t status;
    /** cap_count equals the transport-reported capability count. */
    uint16_t cap_count;
    /** request is the header's request identity. */
    pbx_ipc_id request;
    /** seq is the per-call sequence number (a reply echoes its request's). */
    uint32_t seq;
    /** body is the first body byte (borrowed; NULL when body_len is 0). */
    const uint8_t *body;
    /** body_len is the exact body length in bytes. */
    size_t body_len;
    /**
     * proven is what pbx_ipc_frame_decode proved of a status-zero frame it
     * accepted: its op and capability count, packed with a mark bit (0
     * otherwise). Record decoders trust the partition check only while
     * this still matches op and cap_count, so they need not repeat it; a
     * frame built or changed by hand does not match and is refused with
     * PBX_E_IPC_CAP_PARTITION. Never set it by hand.
     */
    uint64_t proven;
} pbx_ipc_frame;

/**
 * pbx_ipc_frame_decode checks a received frame of len bytes in buf, which
 * the transport says carried transport_caps capabilities, and fills *out.
 * Checks, in order: length >= header, magic, version, known op, length <=
 * FRAME_MAX, body_len == len - header, reserved header word zero
 * (PBX_E_IPC_RESERVED), cap_count == transport_caps, status
 * rule (zero in requests; a nonzero reply status has an empty body and no
 * capability), capability count against the partition table, request
 * identity rule. Every field is defined on every path (make eva relies on
 * it): when len is below the header size *out is all zero; otherwise the
 * header's fields are read into it before any other check, and proven is
 * nonzero only on PBX_OK with status 0. buf may be NULL only when len is
 * 0; out must not be NULL.
 */
pbx_err pbx_ipc_frame_decode(const uint8_t *buf, size_t len,
                             uint16_t transport_caps, pbx_ipc_frame *out);

/**
 * pbx_ipc_frame_set_seq writes seq into the header of the already-encoded
 * frame at frame[0..len) (nothing else is checked or changed). Every
 * encoder writes seq 0; a reply must echo its request's seq, so a replier
 * calls this after encoding (pbx_ipc_frame_peek_seq or pbx_ipc_frame.seq
 * gives the request's). Returns PBX_E_IPC_TRUNCATED when len is shorter
 * than the header. frame may be NULL only when len is 0.
 */
pbx_err pbx_ipc_frame_set_seq(uint8_t *frame, size_t len, uint32_t seq);

/**
 * pbx_ipc_frame_peek_seq reads the header's seq from frame[0..len) into
 * *seq without any other check (the frame need not decode), so even a
 * malformed request's error reply can echo it. Returns PBX_E_IPC_TRUNCATED
 * (leaving *seq untouched) when len is shorter than the header. frame may
 * be NULL only when len is 0; seq must not be NULL.
 */
pbx_err pbx_ipc_frame_peek_seq(const uint8_t *frame, size_t len, uint32_t *seq);

/**
 * pbx_ipc_status_reply_encode writes an error reply: the reply form of
 * request op req_op, echoing request, with nonzero status, no body and no
 * capability. It writes seq 0: the caller echoes the request's seq with
 * pbx_ipc_frame_set_seq on the output afterwards. Returns
 * PBX_E_IPC_UNKNOWN_OP for an op without a reply and PBX_E_IPC_STATUS when
 * status is zero or above 0xFFFF.
 */
pbx_err pbx_ipc_status_reply_encode(uint16_t req_op, pbx_ipc_id request,
                                    pbx_err status, uint8_t *buf,
                                    size_t buf_len, size_t *out_len);

/**
 * pbx_ipc_empty_encode writes a status-zero frame of op (full number, reply
 * bit included) with an empty body and no capability. Valid for the ops
 * whose record is empty: DECISION request and the SELECTOR, COMMIT,
 * CANCEL, CONSUME, EXPIRE and PROMPT (RETRY) replies; any other op returns
 * PBX_E_IPC_OP_MISMATCH.
 */
pbx_err pbx_ipc_empty_encode(uint16_t op, pbx_ipc_id request, uint8_t *buf,
                             size_t buf_len, size_t *out_len);

/**
 * pbx_ipc_empty_decode checks that f is a status-zero frame of op whose
 * record is empty (see pbx_ipc_empty_encode) and carries no body and no
 * capability.
 */
pbx_err pbx_ipc_empty_decode(const pbx_ipc_frame *f, uint16_t op);

/* ---- public operations -------------------------------------------------- */

/**
 * pbx_ipc_begin is the contextual BEGIN request (client or launchd ->
 * powerboxd, 0 caps, header request id zero). selector_len is 1..SELECTOR
 * max; target follows the mode rule of pbx_ipc_target. invocation_id is
 * nonzero exactly when ctx.lifetime is INVOCATION (PBX_E_IPC_OUTCOME_FIELDS
 * otherwise), so a zero-initialised record stays valid for ONE_SHOT and JOB.
 */
typedef struct pbx_ipc_begin {
    /** ctx is the request context. */
    pbx_ipc_context ctx;
    /** target is the install destination (zero in RUNTIME_REPLY mode). */
    pbx_ipc_target target;
    /** selector_len is the total selector length the caller will stream. */
    uint32_t selector_len;
    /** selector_digest is the SHA-256 the selector must match at COMMIT. */
    uint8_t selector_digest[PBX_IPC_DIGEST_BYTES];
    /** label is the display label shown in prompts. */
    pbx_ipc_label label;
    /** invocation_id is launchd's invocation (INVOCATION lifetime only). */
    uint64_t invocation_id;
} pbx_ipc_begin;

/** pbx_ipc_begin_encode writes a BEGIN request frame. */
pbx_err pbx_ipc_begin_encode(const pbx_ipc_begin *rec, uint8_t *buf,
                             size_t buf_len, size_t *out_len);
/** pbx_ipc_begin_decode decodes a BEGIN request frame into *out. */
pbx_err pbx_ipc_begin_decode(const pbx_ipc_frame *f, pbx_ipc_begin *out);

/**
 * pbx_ipc_begin_reply is the BEGIN reply body: the reserved destination
 * slot number (data). The new request identity is the header's request id.
 */
typedef struct pbx_ipc_begin_reply {
    /** dest_slot is powerboxd's reserved transient destination number. */
    uint32_t dest_slot;
} pbx_ipc_begin_reply;

/** pbx_ipc_begin_reply_encode writes a BEGIN reply for request. */
pbx_err pbx_ipc_begin_reply_encode(pbx_ipc_id request,
                                   const pbx_ipc_begin_reply *rec, uint8_t *buf,
                                   size_t buf_len, size_t *out_len);
/** pbx_ipc_begin_reply_decode decodes a BEGIN reply frame into *out. */
pbx_err pbx_ipc_begin_reply_decode(const pbx_ipc_frame *f,
                                   pbx_ipc_begin_reply *out);

/**
 * pbx_ipc_selector is one SELECTOR chunk. bytes is borrowed: after decode
 * it points into the frame buffer (valid while that buffer is); for
 * encode it must point at len readable bytes. len is 1..CHUNK max and
 * offset + len <= SELECTOR max.
 */
typedef struct pbx_ipc_selector {
    /** offset is where the chunk starts inside the selector. */
    uint32_t offset;
    /** len is the chunk length. */
    uint32_t len;
    /** bytes is the chunk (borrowed). */
    const uint8_t *bytes;
} pbx_ipc_selector;

/** pbx_ipc_selector_encode writes a SELECTOR request for request. */
pbx_err pbx_ipc_selector_encode(pbx_ipc_id request, const pbx_ipc_selector *rec,
                                uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_selector_decode decodes a SELECTOR request frame into *out. */
pbx_err pbx_ipc_selector_decode(const pbx_ipc_frame *f, pbx_ipc_selector *out);

/**
 * pbx_ipc_commit is the COMMIT body: the reserved destination slot echoed
 * (the frame carries exactly one capability, the scope).
 */
typedef struct pbx_ipc_commit {
    /** dest_slot echoes the BEGIN reply's destination slot. */
    uint32_t dest_slot;
} pbx_ipc_commit;

/** pbx_ipc_commit_encode writes a COMMIT request (cap_count 1). */
pbx_err pbx_ipc_commit_encode(pbx_ipc_id request, const pbx_ipc_commit *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_commit_decode decodes a COMMIT request frame into *out. */
pbx_err pbx_ipc_commit_decode(const pbx_ipc_frame *f, pbx_ipc_commit *out);

/**
 * pbx_ipc_decision is the DECISION reply. Only APPROVED carries mode,
 * grant (nonzero gen) and installed_slot; every other outcome has them
 * zero. Only DENIED may carry a nonzero reason (a pbx_ipc_reason). The
 * frame carries one capability (the alias) exactly when the outcome is
 * APPROVED and mode RUNTIME_REPLY, and then installed_slot is zero;
 * otherwise it carries none.
 */
typedef struct pbx_ipc_decision {
    /** outcome is a pbx_ipc_outcome. */
    uint8_t outcome;
    /** mode is a pbx_ipc_mode when APPROVED, else zero. */
    uint8_t mode;
    /** grant is the installed grant's identity when APPROVED. */
    pbx_ipc_id grant;
    /** installed_slot is the target slot in INSTALL mode (data). */
    uint32_t installed_slot;
    /** reason is a pbx_ipc_reason; nonzero only when DENIED. */
    uint16_t reason;
} pbx_ipc_decision;

/** pbx_ipc_decision_reply names the DECISION reply record (same type). */
typedef pbx_ipc_decision pbx_ipc_decision_reply;

/** pbx_ipc_decision_reply_encode writes a DECISION reply for request. */
pbx_err pbx_ipc_decision_reply_encode(pbx_ipc_id request,
                                      const pbx_ipc_decision *rec, uint8_t *buf,
                                      size_t buf_len, size_t *out_len);
/** pbx_ipc_decision_reply_decode decodes a DECISION reply into *out. */
pbx_err pbx_ipc_decision_reply_decode(const pbx_ipc_frame *f,
                                      pbx_ipc_decision *out);

/**
 * pbx_ipc_cancel is a CANCEL request. Exact form: header generation
 * nonzero, by_correlation and by_grant false, body all zero. Correlation
 * form: header index and generation zero, by_correlation true, job_gen
 * nonzero; it names the one unambiguous live request of that job and
 * session. Grant form: by_grant true, the header carries grant (nonzero
 * generation), the body is zero except the GRANT flag; it names a known
 * grant exactly, even after its request retired. by_grant and
 * by_correlation are exclusive (PBX_E_IPC_REQUEST_ID).
 */
typedef struct pbx_ipc_cancel {
    /** by_correlation is true for the generation-zero form. */
    bool by_correlation;
    /** request is the exact request (zero in correlation form). */
    pbx_ipc_id request;
    /** job_id is the job to correlate (zero in exact form). */
    uint64_t job_id;
    /** session is the session to correlate (zero in exact form). */
    uint64_t session;
    /** job_gen is the job generation (nonzero only in correlation form). */
    uint32_t job_gen;
    /** by_grant is true for the exact grant form. */
    bool by_grant;
    /** grant is the exact grant (grant form only; gen nonzero). */
    pbx_ipc_id grant;
} pbx_ipc_cancel;

/** PBX_IPC_CANCEL_F_GRANT is the CANCEL body flag of the grant form. */
#define PBX_IPC_CANCEL_F_GRANT 0x01U

/** pbx_ipc_cancel_encode writes a CANCEL request (header from rec). */
pbx_err pbx_ipc_cancel_encode(const pbx_ipc_cancel *rec, uint8_t *buf,
                              size_t buf_len, size_t *out_len);
/** pbx_ipc_cancel_decode decodes a CANCEL request frame into *out. */
pbx_err pbx_ipc_cancel_decode(const pbx_ipc_frame *f, pbx_ipc_cancel *out);

/** pbx_ipc_consume names a one-shot grant to consume (gen nonzero). */
typedef struct pbx_ipc_consume {
    /** grant is the grant identity. */
    pbx_ipc_id grant;
} pbx_ipc_consume;

/** pbx_ipc_consume_encode writes a CONSUME request (header id zero). */
pbx_err pbx_ipc_consume_encode(const pbx_ipc_consume *rec, uint8_t *buf,
                               size_t buf_len, size_t *out_len);
/** pbx_ipc_consume_decode decodes a CONSUME request frame into *out. */
pbx_err pbx_ipc_consume_decode(const pbx_ipc_frame *f, pbx_ipc_consume *out);

/**
 * pbx_ipc_expire is launchd's EXPIRE: kind, job, nonzero job generation;
 * invocation_id is nonzero for INVOCATION and zero for JOB.
 */
typedef struct pbx_ipc_expire {
    /** kind is a pbx_ipc_expire_kind. */
    uint8_t kind;
    /** job_gen is the job generation (nonzero). */
    uint32_t job_gen;
    /** job_id is launchd's job number. */
    uint64_t job_id;
    /** invocation_id names the ended invocation (INVOCATION only). */
    uint64_t invocation_id;
} pbx_ipc_expire;

/** pbx_ipc_expire_encode writes an EXPIRE request (header id zero). */
pbx_err pbx_ipc_expire_encode(const pbx_ipc_expire *rec, uint8_t *buf,
                              size_t buf_len, size_t *out_len);
/** pbx_ipc_expire_decode decodes an EXPIRE request frame into *out. */
pbx_err pbx_ipc_expire_decode(const pbx_ipc_frame *f, pbx_ipc_expire *out);

#endif /* PBX_IPC_WIRE_H */
