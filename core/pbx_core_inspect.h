/*
 * pbx_core_inspect.h: a small read-only window into the core's records,
 * for the simulator, the tests and the benchmarks. It names the record
 * states and flags the core sets and returns const views of live records
 * by pool index; it changes nothing and the runtime never uses it. The
 * core's private helpers stay in pbx_core_internal.h, which only core/
 * includes (scripts/layers.py enforces that).
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
    PBX_CORE_CALL_RETIRE
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

#endif /* PBX_CORE_INSPECT_H */
