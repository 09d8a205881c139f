/*
 * pbx_core_inspect.h: a small read-only window into the core's records,
 * for the simulator, the tests and the benchmarks. It names the record
 * states and flags the core sets and returns const views of live records
 * by pool index; it changes nothing. The runtime uses only the log views
 * below (pbx_core_inspect_decision, pbx_core_inspect_selector,
 * pbx_core_inspect_grant_end), to write powerboxd's decision and grant-end
 * lines. The core's private helpers stay in pbx_core_internal.h, which
 * only core/ includes (scripts/layers.py enforces that).
 */
#ifndef PBX_CORE_INSPECT_H
#define PBX_CORE_INSPECT_H

#include "core/pbx_core.h"

/** PBX_CORE_TSLOT_RESERVED marks a reserved transient slot still empty. */
#define PBX_CORE_TSLOT_RESERVED 1U
/** PBX_CORE_TSLOT_HELD marks a transient slot holding a capability. */
#define PBX_CORE_TSLOT_HELD 2U
/** PBX_CORE_TSLOT_IDLE marks a tslot record with no slot attached yet. */
#define PBX_CORE_TSLOT_IDLE 3U

/** PBX_CORE_REQ_F_CANCELLED: the request was cancelled. */
#define PBX_CORE_REQ_F_CANCELLED 0x0001U
/* 0x0002 (an exported alias) was never set and is retired. */
/* 0x0004 and 0x0008 (a withdrawn approval and its held wake) are
 * retired: a published decision is final until delivered. */
/**
 * PBX_CORE_REQ_F_RETIRE: the object was sent to procd but no manage-only
 * handle was accepted, so procd may have installed it; vfsd must retire
 * the object (full identity, exact acknowledgement) before the decision
 * is published.
 */
#define PBX_CORE_REQ_F_RETIRE 0x0010U

/**
 * PBX_CORE_REQ_F_PROMPT: a PROMPT went to ttyd and no exact answer came
 * back, so the prompt may be showing or queued there: release withdraws
 * it (WITHDRAW) before the decision is published.
 */
#define PBX_CORE_REQ_F_PROMPT 0x0020U

/**
 * PBX_CORE_REQ_F_ABANDONED: launchd's broker connection was lost
 * (pbx_core_on_broker_lost) before this request's decision was delivered:
 * nobody can poll it any more, so once published it counts as delivered
 * (a decision that carries nothing; an approved alias was deleted).
 */
#define PBX_CORE_REQ_F_ABANDONED 0x0040U

/** PBX_CORE_ORPHAN_PUBLIC marks (owner_kind) an orphan from a public frame. */
#define PBX_CORE_ORPHAN_PUBLIC 1U

/** PBX_CORE_GRANT_F_INSTALL: grant delivered by procd installation. */
#define PBX_CORE_GRANT_F_INSTALL 0x0001U
/** PBX_CORE_GRANT_F_APPROVED: the approval is visible (decision made). */
#define PBX_CORE_GRANT_F_APPROVED 0x0002U
/**
 * PBX_CORE_GRANT_F_ROW: the ACTIVE row went to ttyd, so ttyd may show it:
 * cleanup owes a REMOVE. A grant whose row never left needs none.
 */
#define PBX_CORE_GRANT_F_ROW 0x0004U
/**
 * PBX_CORE_GRANT_F_RESYNC: ttyd's route came back (pbx_core_on_route_up)
 * while this live grant's ACTIVE row was shown there: the row is sent
 * again to the new ttyd (call PBX_CORE_CALL_RESYNC) until it is
 * acknowledged exactly or the grant ends; a failed or inexact attempt is
 * retried on the next tick.
 */
#define PBX_CORE_GRANT_F_RESYNC 0x0008U
/** PBX_CORE_GRANT_F_PROVIDER_LOST: the grant ended (event LOST) because
 * vfsd's route was lost (reason PROVIDER_LOST). */
#define PBX_CORE_GRANT_F_PROVIDER_LOST 0x0010U
/** PBX_CORE_GRANT_F_INSTALLER_LOST: the install-mode grant ended (event
 * LOST) because procd's route was lost (reason INSTALLER_LOST). */
#define PBX_CORE_GRANT_F_INSTALLER_LOST 0x0020U

/**
 * pbx_core_call_kind names the step that sent an outstanding call, which
 * is the step that judges its reply (or its absence).
 */
typedef enum pbx_core_call_kind {
    /** RESOLVE through the request's scope. */
    PBX_CORE_CALL_RESOLVE = 1,
    /** Session POLICY at ttyd. */
    PBX_CORE_CALL_POLICY,
    /** Trusted PROMPT at ttyd. */
    PBX_CORE_CALL_PROMPT,
    /** INSTALL at procd. */
    PBX_CORE_CALL_INSTALL,
    /** DETACH of an installed object before approval. */
    PBX_CORE_CALL_DETACH,
    /** VIEW ACTIVE at ttyd before approval. */
    PBX_CORE_CALL_ACTIVE,
    /** DETACH of a terminal request's object copy (release). */
    PBX_CORE_CALL_RELEASE_DETACH,
    /** RETIRE of an object a refused or lost INSTALL may have placed. */
    PBX_CORE_CALL_REQ_RETIRE,
    /** WITHDRAW of a prompt that may be showing (release). */
    PBX_CORE_CALL_WITHDRAW,
    /** VIEW REMOVE of a grant's row (grant cleanup). */
    PBX_CORE_CALL_REMOVE,
    /** RETIRE of a grant's object (grant cleanup). */
    PBX_CORE_CALL_RETIRE,
    /** VIEW ACTIVE of a live grant's row sent again to a returned ttyd
     * (pbx_core_on_route_up); recorded in the grant's call_remove. */
    PBX_CORE_CALL_RESYNC
} pbx_core_call_kind;

/**
 * pbx_core_inspect_record returns a const view of record index of pool
 * (index below the pool's capacity; live or free), valid while ctx is.
 */
const void *pbx_core_inspect_record(const pbx_core_ctx *ctx,
                                    pbx_bootstrap_pool pool, uint32_t index);

/** pbx_core_inspect_request returns request index (below capacity). */
const pbx_core_request *pbx_core_inspect_request(const pbx_core_ctx *ctx,
                                                 uint32_t index);

/** pbx_core_inspect_grant returns grant index (below capacity). */
const pbx_core_grant *pbx_core_inspect_grant(const pbx_core_ctx *ctx,
                                             uint32_t index);

/** pbx_core_inspect_tslot returns transient-slot record index. */
const pbx_core_tslot *pbx_core_inspect_tslot(const pbx_core_ctx *ctx,
                                             uint32_t index);

/** pbx_core_inspect_call returns outstanding-call record index. */
const pbx_core_outcall *pbx_core_inspect_call(const pbx_core_ctx *ctx,
                                              uint32_t index);

/**
 * pbx_core_inspect_seq returns the sequence the wire carries for live call
 * record index: its generation's low 16 bits above its index.
 */
uint32_t pbx_core_inspect_seq(const pbx_core_ctx *ctx, uint32_t index);

/**
 * pbx_core_inspect_bucket returns the correlation-index bucket of job (id,
 * generation) in pool (requests or grants).
 */
uint32_t pbx_core_inspect_bucket(const pbx_core_ctx *ctx,
                                 pbx_bootstrap_pool pool, uint64_t job_id,
                                 uint32_t job_gen);

/** pbx_core_inspect_hash returns the correlation index's hash of job
 * (id, generation), before the modulo of a pool capacity. Pure. */
uint32_t pbx_core_inspect_hash(uint64_t job_id, uint32_t job_gen);

/** pbx_core_inspect_id returns the ipc identity (index, generation) of
 * record index of pool. */
pbx_ipc_id pbx_core_inspect_id(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                               uint32_t index);

/**
 * pbx_core_inspect_fault returns a writable view of record index of pool.
 * It exists only so that fault-injection tests can make the records
 * disagree and watch the core's classified fail-stop; nothing else may
 * write through it.
 */
void *pbx_core_inspect_fault(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                             uint32_t index);

/**
 * pbx_core_log_decision is what powerboxd's log says about one published
 * decision (pbx_core_inspect_decision). Every pointer borrows the core's
 * records or static strings: valid until the core is entered again.
 */
typedef struct pbx_core_log_decision {
    /** The request's identity. */
    pbx_ipc_id request;
    /** The grant an APPROVED decision names, else {0, 0}. */
    pbx_ipc_id grant;
    /** The granted object's vfsd identity (as vfsd names it on the wire)
     * for an APPROVED decision, else {0, 0}: what ties the grant to
     * vfsd's own lines about that object. */
    pbx_ipc_object object;
    /** The launchd-authenticated context from BEGIN (job, entry,
     * operation, lifetime, ...), borrowed from the request record. */
    const pbx_ipc_context *ctx;
    /** The committed selector's length in bytes. */
    uint32_t selector_len;
    /** The published outcome (pbx_ipc_outcome). */
    uint32_t outcome;
    /** Why, as the core knows it: for APPROVED "user" (the user's exact
     * APPROVE at the trusted prompt) or "policy" (a routine ALLOW); for
     * DENIED the pbx_ipc_reason name ("user", "policy",
     * "prompt-timeout", ...); "not-found" and "cancelled" for those
     * outcomes. A static string, never NULL. */
    const char *reason;
} pbx_core_log_decision;

/**
 * pbx_core_inspect_decision fills *out for request (index and generation)
 * when it names a live request whose decision is published (from its
 * publication until the request retires after delivery). Returns false,
 * leaving *out untouched, for anything else. Changes nothing.
 */
bool pbx_core_inspect_decision(const pbx_core_ctx *ctx, pbx_ipc_id request,
                               pbx_core_log_decision *out);

/**
 * pbx_core_inspect_selector copies the first bytes of live request's
 * received selector (at most cap bytes) into buf and returns how many it
 * copied; 0 when request names no live request. buf holds cap bytes and
 * is not NUL-terminated. The walk is bounded by the request's chunk
 * count. Changes nothing.
 */
uint32_t pbx_core_inspect_selector(const pbx_core_ctx *ctx, pbx_ipc_id request,
                                   uint8_t *buf, uint32_t cap);

/**
 * pbx_core_log_grant_end is what powerboxd's log says about one ended
 * grant (pbx_core_inspect_grant_end). Pointers borrow the core's records
 * or static strings: valid until the core is entered again.
 */
typedef struct pbx_core_log_grant_end {
    /** The grant's identity. */
    pbx_ipc_id grant;
    /** The request that made it while that request is live, else {0, 0}
     * (a retired request's index is no longer kept). */
    pbx_ipc_id request;
    /** The context copied from the request (job, entry, operation,
     * lifetime, ...). */
    const pbx_ipc_context *ctx;
    /** The granted object's vfsd identity. */
    pbx_ipc_object object;
    /** How it ended: "consumed" (CONSUME), "expired" (launchd's EXPIRE of
     * its invocation or job, or the loss of launchd's broker), "cancelled"
     * (CANCEL, by its job or by launchd), "lost" (a peer it depended on
     * died: pbx_core_on_route_down), else "revoked". A static string,
     * never NULL. */
    const char *end;
    /** The operation that ended it as the core saw it ("consume",
     * "expire", "cancel"), for "lost" the pbx_ipc_reason name
     * ("provider-lost": vfsd died; "installer-lost": procd died), else
     * "unknown". A static string. */
    const char *reason;
} pbx_core_log_grant_end;

/**
 * pbx_core_inspect_grant_end fills *out for grant (index and generation)
 * when it names a grant whose approval was published and which has left
 * LIVE (its revocation, REMOVE or RETIRE is under way). Returns false,
 * leaving *out untouched, for anything else. Changes nothing.
 */
bool pbx_core_inspect_grant_end(const pbx_core_ctx *ctx, pbx_ipc_id grant,
                                pbx_core_log_grant_end *out);

/**
 * pbx_core_startup_verdict classifies the one startup check of a PBX1
 * record (pbx_core_startup_check). Each failing verdict is one startup
 * refusal of powerboxd, with its own exit status.
 */
typedef enum pbx_core_startup_verdict {
    /** Every check passed: powerboxd would start with this record. */
    PBX_CORE_STARTUP_OK = 0,
    /** The record does not parse or authenticate (length, magic,
     * version, digest, reserved fields, geometry bounds): exit 16. */
    PBX_CORE_STARTUP_RECORD = 1,
    /** A pool's type layout differs from this build's: exit 17. */
    PBX_CORE_STARTUP_LAYOUT = 2,
    /** The patched page count differs from the derived extent: exit 18. */
    PBX_CORE_STARTUP_EXTENT = 3,
    /** The transient-slots capacity plus one receive's receipts exceeds
     * PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX: exit 19. */
    PBX_CORE_STARTUP_TRANSIENT = 4,
    /** The core could not serve with this layout (fewer transient slots
     * than PBX_CORE_TSLOTS_MIN): exit 29. */
    PBX_CORE_STARTUP_CORE = 5
} pbx_core_startup_verdict;

/**
 * pbx_core_startup_result is what pbx_core_startup_check learned; every
 * field is written whatever the verdict (zeroed where not reached).
 */
typedef struct pbx_core_startup_result {
    /** The verdict. */
    pbx_core_startup_verdict verdict;
    /** The error behind a failing verdict (PBX_OK when it passed). */
    pbx_err err;
    /** The parsed geometry (valid from PBX_CORE_STARTUP_LAYOUT on). */
    pbx_bootstrap_geometry geo;
    /** The derived layout (valid from PBX_CORE_STARTUP_TRANSIENT on). */
    pbx_bootstrap_layout layout;
    /** The transient range length: the transient-slots capacity plus
     * PBX_BOOTSTRAP_RECEIPTS_PER_RECEIVE (valid once parsed). */
    uint32_t transient_count;
} pbx_core_startup_result;

/**
 * pbx_core_startup_check runs, in powerboxd's order, every startup check
 * that depends on the PBX1 record alone: parse and authenticate len bytes
 * at rec, derive the layout against this build's compiled record types,
 * check the patched extent, the transient range and what the core needs
 * to serve. powerboxd's startup and `pbx geometry check` and `make` call
 * this one function, so the tool accepts exactly the records powerboxd
 * accepts (the remaining refusals are about the running system: mapping
 * the arena, the inventory, the endpoints). Pure; rec is borrowed for
 * the call; *out is caller storage. Returns out->verdict.
 */
pbx_core_startup_verdict pbx_core_startup_check(const uint8_t *rec, size_t len,
                                                pbx_core_startup_result *out);

/**
 * pbx_core_inspect_usage stores in *used how many records of pool are in
 * use now (taken from its free list: live, ending, or waiting for a
 * deletion to finish) and in *capacity how many it holds. The
 * selector-bytes pool is counted in selector chunks (those taken, and
 * every whole chunk carved). pool must be below PBX_BOOTSTRAP_POOL_COUNT
 * (a programmer error otherwise). O(1); changes nothing. The runtime's
 * USAGE report on slot 4 is built from it.
 */
void pbx_core_inspect_usage(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                            uint32_t *used, uint32_t *capacity);

#endif /* PBX_CORE_INSPECT_H */
