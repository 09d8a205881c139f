/*
 * pbx_core_layout.h: the core's retained record types, one per PBX1 pool,
 * and the type layouts the executable checks PBX1 against.
 *
 * Every record lives in one pool carved from the single deployment arena.
 * Records refer to each other by pool index (and generation where a stale
 * reference must be detectable), never by pointer, so the arena can be
 * mapped anywhere and a record's bytes mean the same thing in every run.
 * Freestanding: only fixed-size plain data.
 */
#ifndef PBX_CORE_LAYOUT_H
#define PBX_CORE_LAYOUT_H

#include "base/pbx_base.h"
#include "bootstrap/pbx_bootstrap.h"
#include "ipc/pbx_ipc.h"

/** PBX_CORE_NIL is the "no record" index in every link and reference. */
#define PBX_CORE_NIL UINT32_MAX

/** PBX_CORE_SLOT_NONE is the "no capability slot" value. */
#define PBX_CORE_SLOT_NONE UINT32_MAX

/** PBX_CORE_DIGEST_BYTES is the size of a selector digest (SHA-256). */
#define PBX_CORE_DIGEST_BYTES 32U

/** PBX_CORE_LABEL_BYTES_MAX bounds the stored display label. */
#define PBX_CORE_LABEL_BYTES_MAX 64U

/**
 * PBX_CORE_SELECTOR_CHUNK_BYTES is the granule of selector storage: the
 * selector-bytes pool is cut into chunks of this many bytes, the last four
 * of which link to the next chunk, so a request reserves exactly the
 * chunks its declared length needs and nothing is fragmented.
 */
#define PBX_CORE_SELECTOR_CHUNK_BYTES 64U

/** PBX_CORE_SELECTOR_CHUNK_DATA_BYTES is the selector payload per chunk. */
#define PBX_CORE_SELECTOR_CHUNK_DATA_BYTES (PBX_CORE_SELECTOR_CHUNK_BYTES - 4U)

/**
 * pbx_core_link is the first member of every record: free-list and queue
 * links (pool indices, PBX_CORE_NIL for none), the record's generation
 * (nonzero, bumped each time the record is reused, so stale references are
 * rejected) and which intrusive list currently holds it.
 */
typedef struct pbx_core_link {
    /** Next record in the free list or queue, or PBX_CORE_NIL. */
    uint32_t next;
    /** Previous record in the queue, or PBX_CORE_NIL. */
    uint32_t prev;
    /** Nonzero generation of the current (or last) use of the record. */
    uint32_t generation;
    /** Nonzero while allocated; zero on the free list. */
    uint8_t live;
    /** Which queue holds the record (pbx_core_queue id), 0 for none. */
    uint8_t queue;
    /** The record's state in its machine (pbx_core_state), 0 when free. */
    uint16_t state;
} pbx_core_link;

/**
 * pbx_core_chain is a record's place in its pool's correlation index: hash
 * chains keyed by job (id, generation), embedded in the records so the
 * index needs no memory beyond the pools PBX1 describes. The pool has as
 * many buckets as records, and bucket b's head lives in record b, whether
 * or not record b itself is in use. Chains are doubly linked, so a record
 * leaves its chain in O(1).
 */
typedef struct pbx_core_chain {
    /** First record of bucket <this record's index>, or PBX_CORE_NIL. */
    uint32_t bucket_head;
    /** Next record in the bucket this record is chained in, or NIL. */
    uint32_t next;
    /** Previous record in that bucket, or PBX_CORE_NIL at its head. */
    uint32_t prev;
    /** Bucket the record is chained in, or PBX_CORE_NIL when unchained. */
    uint32_t bucket;
} pbx_core_chain;

/**
 * pbx_core_context is the launchd-authenticated contextual body kept from
 * BEGIN (ipc's decoded BEGIN record, which holds no pointers): program
 * entry, job id and generation, realm, session, operation, class,
 * lifetime, mode, urgency, install target, selector length and digest,
 * and a display label that never selects authority.
 */
typedef pbx_ipc_begin pbx_core_context;

/**
 * pbx_core_request is one public request from BEGIN until its decision
 * reply is delivered. It holds the context, the selector chunk chain, and
 * references (indices) to the transient slots and retained records it
 * owns. A request owns its capabilities only through transient slots.
 */
typedef struct pbx_core_request {
    /** Links, generation and state. */
    pbx_core_link link;
    /** Job chain: chained from BEGIN until the record is freed. */
    pbx_core_chain chain;
    /** The contextual body from BEGIN. */
    pbx_core_context ctx;
    /** Caller route (badge) that began the request. */
    uint32_t caller_badge;
    /** Selector bytes received so far (the next exact offset). */
    uint32_t selector_received_bytes;
    /** First selector chunk, or PBX_CORE_NIL for an empty selector. */
    uint32_t selector_head;
    /** Chunk that receives the next selector byte. */
    uint32_t selector_cursor;
    /** Chunks reserved for the selector. */
    uint32_t selector_chunks;
    /** Transient slot reserved at BEGIN for the scope, then holding it. */
    uint32_t scope_tslot;
    /** Transient slot holding the resolved object, or PBX_CORE_NIL. */
    uint32_t object_tslot;
    /** Transient slot for the revocation handle or the runtime alias. */
    uint32_t handle_tslot;
    /** Notification record reserved for the decision wake. */
    uint32_t notification;
    /** Resolution evidence record, or PBX_CORE_NIL. */
    uint32_t resolution;
    /** Policy answer record, or PBX_CORE_NIL. */
    uint32_t policy;
    /** Prompt record, or PBX_CORE_NIL. */
    uint32_t prompt;
    /** Grant record, or PBX_CORE_NIL. */
    uint32_t grant;
    /** Decision record, or PBX_CORE_NIL. */
    uint32_t decision;
    /** Route the request is parked on after peer BUSY, or PBX_CORE_NIL. */
    uint32_t parked_route;
    /** Receipts that arrived for this request, were refused and still
     * await deletion in the orphan lane; its decision waits for zero. */
    uint32_t orphans;
    /** The one outstanding call of this request, or PBX_CORE_NIL. */
    uint32_t call;
    /** Terminal status chosen for the decision (pbx_core_status). */
    uint16_t outcome;
    /** Request flags (PBX_CORE_REQ_F_*). */
    uint16_t flags;
    /** Why a DENIED decision was denied (pbx_ipc_reason), else 0. */
    uint16_t reason;
    /** Reserved, zero. */
    uint16_t reserved;
    /** While OPEN: when the request ends CANCELLED unless committed
     * (BEGIN time plus the OPEN deadline, the runtime's ms). */
    uint64_t open_deadline_ms;
} pbx_core_request;

/**
 * pbx_core_grant is one installed (or runtime-exported) grant from
 * installation until its exact retirement. It carries the full row that
 * ttyd shows and vfsd retires, so it outlives the request record.
 */
typedef struct pbx_core_grant {
    /** Links, generation (the grant generation) and state. */
    pbx_core_link link;
    /** Job chain: chained exactly while the grant is LIVE. */
    pbx_core_chain chain;
    /** The contextual body copied from the request. */
    pbx_core_context ctx;
    /** vfsd object identity of the granted object. */
    pbx_ipc_object object;
    /** vfsd scope identity the object was resolved in. */
    uint64_t scope_id;
    /** Installed slot in the child (data), or the alias slot number. */
    uint32_t installed_slot;
    /** Transient slot of procd's manage-only revocation handle. */
    uint32_t revocation_tslot;
    /** Transient slot of the runtime-reply alias until exported. */
    uint32_t alias_tslot;
    /** Request that created it while that request is live. */
    uint32_t request;
    /** Generation of that request. */
    uint32_t request_generation;
    /** Badge (caller connection) that began the request; owns the grant. */
    uint32_t caller_badge;
    /** Outstanding REMOVE call at ttyd, or PBX_CORE_NIL. */
    uint32_t call_remove;
    /** Outstanding RETIRE call at vfsd, or PBX_CORE_NIL. */
    uint32_t call_retire;
    /** The pbx_core_event that ended the grant (CONSUME, EXPIRE, CANCEL
     * or LOST, whose reason the GRANT_F_*_LOST flags say), 0 while live;
     * read only by the log (pbx_core_inspect_grant_end). */
    uint16_t end_reason;
    /** Grant flags (PBX_CORE_GRANT_F_*). */
    uint16_t flags;
} pbx_core_grant;

/**
 * pbx_core_prompt is one trusted prompt correlation, opened when policy
 * asks for a prompt: the exact request and object shown, how often ttyd
 * answered RETRY, and the user's exactly correlated answer. Read back
 * right before installation (the evidence an exceptional or prompted
 * request needs).
 */
typedef struct pbx_core_prompt {
    /** Links, generation and state. */
    pbx_core_link link;
    /** Object identity shown to the user. */
    pbx_ipc_object object;
    /** Owning request index. */
    uint32_t request;
    /** Owning request generation. */
    uint32_t request_generation;
    /** RETRY answers received so far (saturating). */
    uint32_t retries;
    /** Exact answer (pbx_ipc_answer), 0 while pending. */
    uint32_t answer;
} pbx_core_prompt;

/**
 * pbx_core_policy is one retained, exactly echoed ttyd session-policy
 * answer. Read back right before installation: only a routine ALLOW
 * installs without the prompt record's exact APPROVE.
 */
typedef struct pbx_core_policy {
    /** Links, generation and state. */
    pbx_core_link link;
    /** Owning request index. */
    uint32_t request;
    /** Owning request generation. */
    uint32_t request_generation;
    /** Verdict (pbx_ipc_verdict). */
    uint32_t verdict;
    /** Nonzero when the policy came from an exceptional request. */
    uint32_t exceptional;
} pbx_core_policy;

/**
 * pbx_core_decision is one terminal decision, retained until its wake is
 * queued to launchd and its reply is delivered.
 */
typedef struct pbx_core_decision {
    /** Links, generation and state. */
    pbx_core_link link;
    /** Job identity to wake. */
    uint64_t job_id;
    /** Job generation to wake. */
    uint32_t job_generation;
    /** Request index. */
    uint32_t request;
    /** Request generation. */
    uint32_t request_generation;
    /** Grant index for APPROVED, else PBX_CORE_NIL. */
    uint32_t grant;
    /** Grant generation for APPROVED, else 0. */
    uint32_t grant_generation;
    /** Installed slot (data) for APPROVED. */
    uint32_t installed_slot;
    /** Status (pbx_core_status). */
    uint16_t status;
    /** Decision flags (PBX_CORE_DECISION_F_*). */
    uint16_t flags;
} pbx_core_decision;

/**
 * pbx_core_tslot is one generational transient capability slot: a slot
 * number the ops layer reserved for the core, whether it is still empty
 * or holds a capability, and which record owns it.
 */
typedef struct pbx_core_tslot {
    /** Links, generation and state (pbx_core_tslot_state). */
    pbx_core_link link;
    /** Receiver-local slot number (data). */
    uint32_t slot;
    /** 0, or PBX_CORE_ORPHAN_PUBLIC for an orphan from a public frame. */
    uint32_t owner_kind;
    /** Owning record index. */
    uint32_t owner;
    /** What the slot holds (pbx_core_receipt_kind). */
    uint32_t kind;
} pbx_core_tslot;

/**
 * pbx_core_resolution is scoped vfsd resolution evidence: the binding of
 * operation, class, selector digest, scope and object identity.
 */
typedef struct pbx_core_resolution {
    /** Links, generation and state. */
    pbx_core_link link;
    /** Scope identity vfsd resolved in. */
    uint64_t scope_id;
    /** Resolved object identity. */
    pbx_ipc_object object;
    /** Operation the evidence is bound to. */
    uint16_t operation;
    /** Object class the evidence is bound to. */
    uint16_t object_class;
    /** Missing-object class for NOT_FOUND evidence, else 0. */
    uint16_t missing_class;
    /** Nonzero when the evidence is an exact NOT_FOUND. */
    uint16_t not_found;
    /** Selector digest the evidence is bound to. */
    uint8_t selector_digest[PBX_CORE_DIGEST_BYTES];
} pbx_core_resolution;

/**
 * pbx_core_notification is one authority-free launchd correlation wake
 * waiting to be queued. Both fields are written when the decision is
 * published and checked against the request before the wake goes.
 */
typedef struct pbx_core_notification {
    /** Links, generation and state. */
    pbx_core_link link;
    /** Decision record to announce (the request's decision index). */
    uint32_t decision;
    /** Request index whose decision it is. */
    uint32_t request;
} pbx_core_notification;

/**
 * pbx_core_outcall is one outstanding split-phase peer call, from the send
 * until its answer, its deadline or its owner's end. The calls pool holds
 * every such call; a route whose window is full answers backpressure.
 */
typedef struct pbx_core_outcall {
    /** Links (deadline FIFO), generation and state. */
    pbx_core_link link;
    /** Absolute deadline on the runtime's clock, in ms. */
    uint64_t deadline_ms;
    /** Header identity the call was sent with. */
    pbx_ipc_id id;
    /** Owning request or grant index. */
    uint32_t owner;
    /** Generation of the owner. */
    uint32_t owner_generation;
    /** The scope slot for a scoped call, else PBX_CORE_SLOT_NONE. */
    uint32_t via_slot;
    /** The pbx_ipc_op sent. */
    uint16_t op;
    /** The pbx_core_route the call went on. */
    uint8_t route;
    /** The pbx_bootstrap_pool of the owner. */
    uint8_t owner_pool;
    /** Which step sent it (a core-private enum). */
    uint8_t kind;
    /** Deadline class (PBX_BOOTSTRAP_TIME_*). */
    uint8_t clazz;
    /** Zero. */
    uint16_t reserved;
} pbx_core_outcall;

/**
 * pbx_core_pool_layouts writes the compiled record size and alignment of
 * every pool into out (PBX_BOOTSTRAP_POOL_COUNT entries, caller-owned):
 * the layouts a PBX1 record must carry for this build. Selector bytes are
 * 1/1. Cannot fail.
 */
void pbx_core_pool_layouts(
    pbx_bootstrap_type_layout out[PBX_BOOTSTRAP_POOL_COUNT]);

#endif /* PBX_CORE_LAYOUT_H */
