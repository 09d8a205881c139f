/*
 * pbx_core_internal.h: helpers shared by the core's translation units:
 * record access by pool index, free lists, intrusive queues, selector
 * chunks, transient slot bookkeeping and fail-stop classification. Not
 * part of the public API; only core/ includes it.
 */
#ifndef PBX_CORE_INTERNAL_H
#define PBX_CORE_INTERNAL_H

#include "core/pbx_core.h"
#include "core/pbx_core_inspect.h"

/**
 * PBX_CORE_TSLOT_SPARE is how many transient-slot records BEGIN leaves
 * free for receipts whose deletion must be retried (one peer reply's
 * worth), so a transient deletion failure finds a record to wait in. The
 * lanes that call peers run only while this many records are free.
 */
#define PBX_CORE_TSLOT_SPARE PBX_CORE_RECV_SLOTS_MAX

/**
 * PBX_CORE_TSLOT_PUBLIC is the headroom BEGIN also leaves free for one
 * public frame's receipts, so that public intake (DECISION polls above
 * all) never waits for requests to retire: only pending deletions can
 * hold it.
 */
#define PBX_CORE_TSLOT_PUBLIC PBX_CORE_RECV_SLOTS_MAX

/** pbx_core_call_spec says who sends a call, for what, and how long it
 * may stay outstanding. */
typedef struct pbx_core_call_spec {
    /** Which step sends it (pbx_core_call_kind). */
    uint32_t kind;
    /** Deadline class (PBX_BOOTSTRAP_TIME_*, below PBX_CORE_CALL_CLASSES). */
    uint32_t clazz;
    /** Owner pool: requests or grants. */
    pbx_bootstrap_pool owner_pool;
    /** Owner index. */
    uint32_t owner;
    /** Operation sent (pbx_ipc_op, without the reply bit). */
    uint16_t op;
    /** Header identity sent, which the reply must echo. */
    pbx_ipc_id id;
} pbx_core_call_spec;

/** pbx_core_rec returns record index of pool (index below capacity). */
void *pbx_core_rec(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                   uint32_t index);

/** pbx_core_link_of returns the link header of record index of pool. */
pbx_core_link *pbx_core_link_of(const pbx_core_ctx *ctx,
                                pbx_bootstrap_pool pool, uint32_t index);

/** pbx_core_req returns request index (a live, in-range index). */
pbx_core_request *pbx_core_req(const pbx_core_ctx *ctx, uint32_t index);

/** pbx_core_grant_at returns grant index (a live, in-range index). */
pbx_core_grant *pbx_core_grant_at(const pbx_core_ctx *ctx, uint32_t index);

/** pbx_core_tslot_at returns transient slot record index. */
pbx_core_tslot *pbx_core_tslot_at(const pbx_core_ctx *ctx, uint32_t index);

/**
 * pbx_core_alloc takes a record off pool's free list, bumps its nonzero
 * generation, marks it live with state FREE and returns its index. The
 * caller proved the pool has a free record (check-then-apply).
 */
uint32_t pbx_core_alloc(pbx_core_ctx *ctx, pbx_bootstrap_pool pool);

/** pbx_core_free returns a live, unqueued record to its pool's free list. */
void pbx_core_free(pbx_core_ctx *ctx, pbx_bootstrap_pool pool, uint32_t index);

/** pbx_core_free_count returns how many records pool has free. */
uint32_t pbx_core_free_count(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool);

/** pbx_core_enqueue appends an unqueued record to queue q (tail). */
void pbx_core_enqueue(pbx_core_ctx *ctx, pbx_core_queue_id q, uint32_t index);

/** pbx_core_dequeue removes a record from whichever queue holds it. */
void pbx_core_dequeue(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                      uint32_t index);

/** pbx_core_pop removes and returns the head of q, or PBX_CORE_NIL. */
uint32_t pbx_core_pop(pbx_core_ctx *ctx, pbx_core_queue_id q);

/** pbx_core_splice appends all of queue from to queue to in O(1). */
void pbx_core_splice(pbx_core_ctx *ctx, pbx_core_queue_id to,
                     pbx_core_queue_id from);

/** pbx_core_chunks_for returns the selector chunks len bytes need. */
uint32_t pbx_core_chunks_for(uint32_t len_bytes);

/**
 * pbx_core_chunks_take links n free chunks (n <= chunk_free_count) into a
 * chain and returns its head, or PBX_CORE_NIL for n == 0.
 */
uint32_t pbx_core_chunks_take(pbx_core_ctx *ctx, uint32_t n);

/** pbx_core_chunks_give returns a chain of n chunks from head. */
void pbx_core_chunks_give(pbx_core_ctx *ctx, uint32_t head, uint32_t n);

/** pbx_core_chunk_data returns the payload of chunk index. */
uint8_t *pbx_core_chunk_data(const pbx_core_ctx *ctx, uint32_t chunk);

/** pbx_core_chunk_next returns the chunk after chunk in its chain. */
uint32_t pbx_core_chunk_next(const pbx_core_ctx *ctx, uint32_t chunk);

/**
 * pbx_core_selector_copy gathers a request's whole selector into out
 * (cap bytes, at least the selector length). Bounded by the chain length.
 */
void pbx_core_selector_copy(const pbx_core_ctx *ctx,
                            const pbx_core_request *req, uint8_t *out,
                            size_t cap);

/**
 * pbx_core_tslot_hold records that tslot now holds capability slot of
 * receipt kind, counting it as held.
 */
void pbx_core_tslot_hold(pbx_core_ctx *ctx, uint32_t tslot, uint32_t slot,
                         uint32_t kind);

/**
 * pbx_core_tslot_drop forgets the capability of tslot after it was proven
 * deleted or transferred; the record goes back to IDLE (still reserved by
 * its owner).
 */
void pbx_core_tslot_drop(pbx_core_ctx *ctx, uint32_t tslot);

/** pbx_core_tslot_held reports whether tslot holds a capability. */
bool pbx_core_tslot_held(const pbx_core_ctx *ctx, uint32_t tslot);

/**
 * pbx_core_orphan keeps slot, whose deletion could not finish now, in an
 * orphan record on the cleanup lane. owner is the request the receipt
 * arrived for (its decision waits until the receipt is gone) or
 * PBX_CORE_NIL; from_public says it came with a public frame (counted
 * against PBX_CORE_PUBLIC_ORPHANS_MAX). The intake check and the lane gate
 * guarantee a free record; finding none means the records disagree, a
 * progression fail-stop (PBX_E_CORE_INCONSISTENT), never a cleanup one:
 * the kernel rejected nothing. Returns TRANSIENT when the receipt is now
 * tracked, REJECTED after such a fail-stop.
 */
pbx_core_delete pbx_core_orphan(pbx_core_ctx *ctx, uint32_t slot,
                                uint32_t owner, bool from_public);

/**
 * pbx_core_public_room returns how many capabilities a public frame may
 * bring now: each gets a record should its deletion stay transient,
 * within the public cap and without touching the peer spare. O(1).
 */
uint32_t pbx_core_public_room(const pbx_core_ctx *ctx);

/**
 * pbx_core_defer moves record index of pool (requests, grants or
 * transient slots) to its deferred queue, from whichever queue held it:
 * it is retried on the next tick, never polled.
 */
void pbx_core_defer(pbx_core_ctx *ctx, pbx_bootstrap_pool pool, uint32_t index);

/**
 * pbx_core_delete_slot deletes capability slot exactly. TRANSIENT leaves
 * it held; REJECTED records a cleanup fail-stop. Returns the outcome.
 */
pbx_core_delete pbx_core_delete_slot(pbx_core_ctx *ctx, uint32_t slot);

/**
 * pbx_core_delete_tslot deletes the capability held in tslot and drops it
 * on success; returns the deletion outcome (OK when it held nothing).
 */
pbx_core_delete pbx_core_delete_tslot(pbx_core_ctx *ctx, uint32_t tslot);

/** pbx_core_fail records a fail-stop of class status; returns err. */
pbx_err pbx_core_fail(pbx_core_ctx *ctx, pbx_core_exit status, pbx_err err);

/** pbx_core_req_move applies event to request index via the table. */
void pbx_core_req_move(pbx_core_ctx *ctx, uint32_t index, pbx_core_event event);

/** pbx_core_grant_move applies event to grant index via the table. */
void pbx_core_grant_move(pbx_core_ctx *ctx, uint32_t index,
                         pbx_core_event event);

/**
 * pbx_core_req_terminate cancels or ends request index with outcome (an
 * ipc outcome) through event and queues it for release. The caller checked
 * the transition exists.
 */
void pbx_core_req_terminate(pbx_core_ctx *ctx, uint32_t index,
                            pbx_core_event event, uint16_t outcome);

/** pbx_core_grant_end ends live grant index with event and queues cleanup. */
void pbx_core_grant_end(pbx_core_ctx *ctx, uint32_t index,
                        pbx_core_event event);

/**
 * pbx_core_grant_stop ends live grant g for event (consume, expire or
 * cancel). A published grant ends at once; one whose approval is not yet
 * published ends through its request, whose decision becomes CANCELLED,
 * so an ended grant is never reported approved.
 */
void pbx_core_grant_stop(pbx_core_ctx *ctx, uint32_t g, pbx_core_event event);

/** pbx_core_id returns the ipc identity of a live record. */
pbx_ipc_id pbx_core_id(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                       uint32_t index);

/**
 * pbx_core_lookup finds the live record id names in pool: PBX_OK with
 * *index, PBX_E_CORE_UNKNOWN (out of range or free) or PBX_E_CORE_STALE
 * (generation mismatch or zero).
 */
pbx_err pbx_core_lookup(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                        pbx_ipc_id id, uint32_t *index);

/** pbx_core_progress_step does one progression step of request index. */
pbx_err pbx_core_progress_step(pbx_core_ctx *ctx, uint32_t index);

/** pbx_core_release_step does one release step of request index. */
pbx_err pbx_core_release_step(pbx_core_ctx *ctx, uint32_t index);

/** pbx_core_grant_step does one cleanup step of grant index. */
pbx_err pbx_core_grant_step(pbx_core_ctx *ctx, uint32_t index);

/** pbx_core_notify_step queues the wake of notification index. */
pbx_err pbx_core_notify_step(pbx_core_ctx *ctx, uint32_t index);

/**
 * pbx_core_expire_hits reports whether expiry e covers context c: the same
 * job id and generation, and for an INVOCATION expiry an INVOCATION
 * lifetime with the same invocation id. Pure, O(1).
 */
bool pbx_core_expire_hits(const pbx_ipc_expire *e, const pbx_core_context *c);

/**
 * pbx_core_expire ends everything expiry e covers, within the event: every
 * covered request still in flight turns CANCELLED and every covered live
 * grant starts its cleanup: revoke, then REMOVE and RETIRE independently
 * (the lanes do the rest, one step at a time). It walks only the job's request
 * and grant chains, so its work is bounded by the records chained in those two
 * buckets. Cannot fail.
 */
void pbx_core_expire(pbx_core_ctx *ctx, const pbx_ipc_expire *e);

/**
 * pbx_core_index_hash mixes a job key (id, generation) into 32 well-spread
 * bits. Unkeyed: anyone who knows it can build colliding keys, which costs
 * them one pool record per chained record and changes no outcome (every
 * walk compares keys exactly and is bounded by the pool capacity). Pure.
 */
uint32_t pbx_core_index_hash(uint64_t job_id, uint32_t job_gen);

/**
 * pbx_core_index_bucket returns the bucket of job (id, generation) in pool
 * (requests or grants): the hash modulo the pool capacity.
 */
uint32_t pbx_core_index_bucket(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                               uint64_t job_id, uint32_t job_gen);

/** pbx_core_index_init empties every bucket of the requests and grants
 * pools; part of carving the arena. */
void pbx_core_index_init(pbx_core_ctx *ctx);

/**
 * pbx_core_index_insert chains live, unchained record index of pool
 * (requests or grants) at the head of its job's bucket, keyed by the job
 * in its context. O(1).
 */
void pbx_core_index_insert(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                           uint32_t index);

/** pbx_core_index_remove unchains record index of pool in O(1); a record
 * that is not chained is left as it is. */
void pbx_core_index_remove(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                           uint32_t index);

/** pbx_core_index_chained reports whether record index of pool is chained. */
bool pbx_core_index_chained(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                            uint32_t index);

/** pbx_core_index_head returns the first record of the bucket job (id,
 * generation) hashes to in pool, or PBX_CORE_NIL. */
uint32_t pbx_core_index_head(const pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                             uint64_t job_id, uint32_t job_gen);

/**
 * pbx_core_index_next counts one visit of chained record index of pool
 * (ctx->index_visits) and returns the record after it in its bucket, or
 * PBX_CORE_NIL. Callers bound their walks by the pool capacity.
 */
uint32_t pbx_core_index_next(pbx_core_ctx *ctx, pbx_bootstrap_pool pool,
                             uint32_t index);

/**
 * pbx_core_call_send stamps c's frame (ctx->frame) with a fresh call
 * sequence and sends it for spec's owner. OK: sent, the call is
 * outstanding and recorded in the owner; BUSY: the owner is queued
 * (parked on the route after backpressure, deferred to a tick for a
 * scope, or waiting for a call record while the class window is full),
 * nothing was sent; FAILED: nothing was sent or transferred.
 */
pbx_core_io pbx_core_call_send(pbx_core_ctx *ctx, pbx_core_call *c,
                               const pbx_core_call_spec *spec);

/** pbx_core_call_seq returns the sequence that names live call o on the
 * wire: its generation's low 16 bits above its index. */
uint32_t pbx_core_call_seq(const pbx_core_ctx *ctx, uint32_t o);

/** pbx_core_outcall_at returns call record o (below the calls capacity). */
pbx_core_outcall *pbx_core_outcall_at(const pbx_core_ctx *ctx, uint32_t o);

/**
 * pbx_core_call_owner_field returns where oc's owner records it: the
 * request's call, or the grant's REMOVE (also a RESYNC) or RETIRE call.
 * Valid while the owner's record is.
 */
uint32_t *pbx_core_call_owner_field(const pbx_core_ctx *ctx,
                                    const pbx_core_outcall *oc);

/**
 * pbx_core_call_end ends outstanding call o: it leaves its deadline FIFO
 * and its owner, its record is freed (so its sequence names nothing any
 * more), and everything waiting for a call record gets another chance.
 */
void pbx_core_call_end(pbx_core_ctx *ctx, uint32_t o);

/**
 * pbx_core_call_cancel ends outstanding call o of an owner that no longer
 * waits for it (cancellation): its reply, should it come, matches nothing.
 */
void pbx_core_call_cancel(pbx_core_ctx *ctx, uint32_t o);

/**
 * pbx_core_judge_fn judges the reply c to a call of kind (NULL when none
 * will come: deadline or lost route) for owner, the request or grant that
 * sent it. Returns PBX_OK or a fail-stop error.
 */
typedef pbx_err (*pbx_core_judge_fn)(pbx_core_ctx *ctx, uint32_t kind,
                                     uint32_t owner, const pbx_core_call *c);

/** PBX_CORE_CALL_KINDS bounds pbx_core_call_kind (kind 0 is none). */
#define PBX_CORE_CALL_KINDS ((uint32_t)PBX_CORE_CALL_RESYNC + 1U)

/**
 * pbx_core_judges is the one dispatch table of ended calls: the judge of
 * each call kind (NULL for kind 0, which no call has). pbx_core_calls.c
 * reaches every judge through it and names none. Constant, static
 * storage.
 */
extern const pbx_core_judge_fn pbx_core_judges[PBX_CORE_CALL_KINDS];

/**
 * pbx_core_calls_route_down ends, as unanswered, every call outstanding on
 * route except the prompts (which outlive ttyd until their own deadline),
 * class by class in deadline order, each through its judge. Returns
 * PBX_OK or the fail-stop a judge raised (already recorded).
 */
pbx_err pbx_core_calls_route_down(pbx_core_ctx *ctx, pbx_core_route route);

/**
 * pbx_core_judge_grant judges grant g's REMOVE or RETIRE acknowledgement
 * of kind (c NULL: none came): only the exact one counts; anything else
 * asks again on a later tick, never abandoning the cleanup.
 */
pbx_err pbx_core_judge_grant(pbx_core_ctx *ctx, uint32_t kind, uint32_t g,
                             const pbx_core_call *c);

/**
 * pbx_core_req_retire_send sends the full-identity RETIRE of the object a
 * refused or lost INSTALL of request i may have placed, under the grant
 * id the INSTALL named; the exact acknowledgement clears
 * PBX_CORE_REQ_F_RETIRE and brings the request back to release.
 */
void pbx_core_req_retire_send(pbx_core_ctx *ctx, uint32_t i);

/**
 * pbx_core_retire_send sends the receipt-free full-identity retirement q
 * to vfsd under grant identity gid, as call kind for owner (a request or
 * a grant); a send that failed is asked again on a later tick.
 */
void pbx_core_retire_send(pbx_core_ctx *ctx, pbx_ipc_id gid,
                          const pbx_ipc_retire *q, uint32_t kind,
                          pbx_bootstrap_pool pool, uint32_t owner);

/** pbx_core_retire_exact reports whether c is vfsd's exact
 * acknowledgement of retirement q under gid (false for c NULL). */
bool pbx_core_retire_exact(const pbx_core_call *c, pbx_ipc_id gid,
                           const pbx_ipc_retire *q);

/**
 * pbx_core_release_judge judges a release call (DETACH, request RETIRE,
 * WITHDRAW) of request i (c NULL: none came) and brings the request back.
 */
pbx_err pbx_core_release_judge(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                               const pbx_core_call *c);

/**
 * pbx_core_grant_copy_gone wakes the grant of request i whose RETIRE
 * waited for the request's own object copy to go back to vfsd, once the
 * copy is no longer held.
 */
void pbx_core_grant_copy_gone(pbx_core_ctx *ctx, uint32_t i);

/**
 * pbx_core_route_lost ends what route's loss ends beyond its calls (see
 * pbx_core_on_route_down): the LIVE grants that depended on vfsd or on
 * procd. One pass over the grants pool. (The requests holding a lost
 * vfsd's object ended before the calls: pbx_core_route_lost_requests.)
 */
void pbx_core_route_lost(pbx_core_ctx *ctx, pbx_core_route route);

/**
 * pbx_core_route_lost_requests ends, before any of vfsd's calls is ended
 * for the route's loss, every request in flight whose object the lost
 * vfsd minted or is about to name (resolved, or RESOLVE outstanding):
 * each is DENIED with reason PROVIDER_LOST and released on the ordinary
 * lane (its prompt withdrawn, its calls cancelled, its object copy given
 * back or deleted, an INSTALL that may have placed the object retired),
 * so a dead incarnation's object is never approved. Other routes: no-op.
 * One pass over the requests pool; cannot fail.
 */
void pbx_core_route_lost_requests(pbx_core_ctx *ctx, pbx_core_route route);

/**
 * pbx_core_resync_step sends live grant g's ACTIVE row again to a
 * returned ttyd (PBX_CORE_GRANT_F_RESYNC set, no call outstanding).
 */
void pbx_core_resync_step(pbx_core_ctx *ctx, uint32_t g);

/**
 * pbx_core_resync_judge judges ttyd's answer (c NULL: none came) to grant
 * g's resent ACTIVE row: exact clears PBX_CORE_GRANT_F_RESYNC; anything
 * else (and a send that failed) asks again on a later tick while the
 * grant is LIVE.
 */
pbx_err pbx_core_resync_judge(pbx_core_ctx *ctx, uint32_t kind, uint32_t g,
                              const pbx_core_call *c);

/**
 * pbx_core_prompts_resend sends every outstanding PROMPT call again on
 * ttyd's route under its own sequence (its deadline unchanged), to a ttyd
 * that came back empty. A send that is not taken leaves the call to its
 * deadline. One pass over the prompt calls.
 */
void pbx_core_prompts_resend(pbx_core_ctx *ctx);

/**
 * pbx_core_prompt_encode encodes request i's PROMPT into ctx->frame and
 * returns its length (the sequence is stamped by the sender).
 */
size_t pbx_core_prompt_encode(pbx_core_ctx *ctx, uint32_t i);

/**
 * pbx_core_prompt_take gives request i (in state PROMPT, holding no
 * prompt record) a prompt record, opened for its exact request and
 * object, when one is free and i's job holds fewer than
 * ctx->prompt_share; returns false (nothing changed) otherwise. Walks only
 * the job's request chain, bounded by the requests capacity.
 */
bool pbx_core_prompt_take(pbx_core_ctx *ctx, uint32_t i);

/**
 * pbx_core_prompt_give frees request i's prompt record, if it holds one,
 * and sends every request waiting for one (PBX_CORE_Q_WAIT_PROMPT) back to
 * the intake lane, in order, in O(1).
 */
void pbx_core_prompt_give(pbx_core_ctx *ctx, uint32_t i);

/** pbx_core_req_retire frees request index and every record it reserved. */
void pbx_core_req_retire(pbx_core_ctx *ctx, uint32_t index);

#endif /* PBX_CORE_INTERNAL_H */
