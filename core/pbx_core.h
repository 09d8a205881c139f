/*
 * pbx_core.h: the sans-IO semantic core of powerboxd.
 *
 * The core makes every lifecycle decision and performs no I/O. Events come
 * in (a public frame with its received capability slots, one step of
 * retained work, a route that became writable, a delivered reply); effects
 * go out through a caller-supplied pbx_core_ops table (peer calls, slot
 * queries, exact slot deletion, the authority-free launchd wake, transient
 * slot reservation). Capabilities are slot numbers owned by the ops layer;
 * the core tracks exactly which record holds which slot and never lets one
 * go except by exact deletion or a transfer the ops layer confirmed.
 *
 * Freestanding: no allocation after pbx_core_init carved the arena, no
 * recursion, every loop bounded, O(1) queue work per event; correlation
 * by job (generation-zero CANCEL, EXPIRE) walks one hash chain only.
 */
#ifndef PBX_CORE_H
#define PBX_CORE_H

#include "base/pbx_base.h"
#include "bootstrap/pbx_bootstrap.h"
#include "capabi/pbx_capabi.h"
#include "core/pbx_core_fsm.h"
#include "core/pbx_core_layout.h"
#include "ipc/pbx_ipc.h"

/** PBX_CORE_FRAME_BYTES_MAX bounds every frame the core sends or parses. */
#define PBX_CORE_FRAME_BYTES_MAX PBX_IPC_FRAME_BYTES_MAX

/** PBX_CORE_RECV_SLOTS_MAX bounds the receipts one call can report. */
#define PBX_CORE_RECV_SLOTS_MAX 4U

/** PBX_CORE_SELECTOR_BYTES_MAX bounds one declared selector. */
#define PBX_CORE_SELECTOR_BYTES_MAX 4096U

/** pbx_core_route names the four private peers the core calls. */
typedef enum pbx_core_route {
    /** vfsd: resolution (through the scope), detach, alias, retirement. */
    PBX_CORE_ROUTE_VFSD = 0,
    /** ttyd: session policy, trusted prompt, grant view rows. */
    PBX_CORE_ROUTE_TTYD = 1,
    /** procd: grant installation into a staged process. */
    PBX_CORE_ROUTE_PROCD = 2,
    /** launchd: authority-free decision wakes. */
    PBX_CORE_ROUTE_LAUNCHD = 3,
    /** Number of routes; not a route. */
    PBX_CORE_ROUTE_COUNT = 4
} pbx_core_route;

/** pbx_core_io is the outcome of a peer call or wake. */
typedef enum pbx_core_io {
    /** Delivered; for a call, a reply arrived. */
    PBX_CORE_IO_OK = 0,
    /** Backpressure: nothing was sent or transferred; retry on ready. */
    PBX_CORE_IO_BUSY = 1,
    /** Transport failure: nothing usable arrived; no transfer happened. */
    PBX_CORE_IO_FAILED = 2,
    /** Permanent refusal: the kernel says the operation can never succeed
     * on this capability (not backpressure, not a peer that is gone and
     * may return). Only a wake may answer it; the core then stops with
     * PBX_CORE_EXIT_NOTIFY. Any other op's REJECTED reads as FAILED. */
    PBX_CORE_IO_REJECTED = 3
} pbx_core_io;

/** pbx_core_delete is the outcome of an exact slot deletion. */
typedef enum pbx_core_delete {
    /** The slot is proven empty. */
    PBX_CORE_DELETE_OK = 0,
    /** The deletion could not finish now; the capability is still held. */
    PBX_CORE_DELETE_TRANSIENT = 1,
    /** The kernel permanently rejected the deletion: fail-stop. */
    PBX_CORE_DELETE_REJECTED = 2
} pbx_core_delete;

/**
 * PBX_CORE_ROUTE_SCOPE names a call through a request's committed scope
 * (RESOLVE). vfsd answers such a call on its own route (VFSD), never on
 * the scope, which the committing job also holds. It is a call route,
 * never a startup route: it has no park queue and is not counted in
 * PBX_CORE_ROUTE_COUNT.
 */
#define PBX_CORE_ROUTE_SCOPE 4U

/**
 * pbx_core_call is one split-phase peer call. The core fills the request
 * half and hands it to ops.send, which queues the frame without waiting;
 * the reply half describes a reply event (pbx_core_on_peer_reply) once
 * the core matched it to this call. Every buffer is borrowed for the
 * duration of the one function call that sees it.
 */
typedef struct pbx_core_call {
    /** Route to send on (pbx_core_route, or PBX_CORE_ROUTE_SCOPE). */
    uint32_t route;
    /** Held slot to invoke instead of a route (the request scope). */
    uint32_t via_slot;
    /** Frame to send: frame_len bytes, valid during ops.send only. */
    const uint8_t *frame;
    /** Bytes in frame. */
    size_t frame_len;
    /** Capability to transfer with the frame, or PBX_CORE_SLOT_NONE. */
    uint32_t send_slot;
    /** True: send a copy and keep send_slot; false: move it on OK. */
    bool send_copy;
    /** Reply bytes of a matched reply event (core-internal). */
    const uint8_t *reply;
    /** Bytes in reply. */
    size_t reply_len;
    /** Slots now holding receipts that arrived with the reply. */
    uint32_t recv_slots[PBX_CORE_RECV_SLOTS_MAX];
    /** Number of valid entries in recv_slots. */
    size_t recv_count;
} pbx_core_call;

/**
 * pbx_core_ops is the effect table. Every function receives the user
 * pointer given to pbx_core_init. The table and user must outlive ctx.
 */
typedef struct pbx_core_ops {
    /**
     * Queues the request half of call without waiting for anything. OK:
     * the frame (and the capability: moved, or copied when send_copy) is
     * on its way and the reply will come as an event; BUSY: backpressure,
     * nothing was sent or transferred; FAILED: the route or scope cannot
     * carry it (gone, or refused), nothing was transferred.
     */
    pbx_core_io (*send)(void *user, const pbx_core_call *call);
    /** Queries slot into *out (kind, rights, provenance); cannot fail. */
    void (*slot_query)(void *user, uint32_t slot, pbx_capabi_observed *out);
    /** Deletes exactly the capability in slot. */
    pbx_core_delete (*slot_delete)(void *user, uint32_t slot);
    /** Reserves an empty transient destination; false when none is free. */
    bool (*slot_reserve)(void *user, uint32_t *slot_out);
    /** Releases an empty reserved destination the core proved empty. */
    void (*slot_release)(void *user, uint32_t slot);
    /** Derives a revocable SEND-only alias of object into *alias_out. */
    pbx_core_io (*alias_derive)(void *user, uint32_t object,
                                uint32_t *alias_out);
    /** Queues an authority-free wake frame of len bytes to launchd:
     * OK, BUSY (retried when launchd's route is ready), FAILED (kept and
     * retried on a tick) or REJECTED (a fail-stop, EXIT_NOTIFY). */
    pbx_core_io (*wake)(void *user, const uint8_t *frame, size_t len);
} pbx_core_ops;

/**
 * pbx_core_identity_fn is the optional identity observation: it returns
 * the identity of the object behind the capability in slot as the kernel
 * vouches for it (for a request scope, the identity vfsd names that scope
 * by in RESOLVE replies), or 0 when the ops layer cannot tell. It receives
 * the ops_user pointer, must not change the slot, and cannot fail.
 */
typedef uint64_t (*pbx_core_identity_fn)(void *user, uint32_t slot);

/**
 * pbx_core_exit names the distinct service-local exit statuses, one per
 * failure class, so an operator can tell which part stopped the service.
 */
typedef enum pbx_core_exit {
    /** Running, or stopped cleanly. */
    PBX_CORE_EXIT_NONE = 0,
    /** Public receive, dispatch or reply failure. */
    PBX_CORE_EXIT_PUBLIC = 64,
    /** Cleanup failure: a permanent kernel deletion rejection. */
    PBX_CORE_EXIT_CLEANUP = 65,
    /** Retained request progression failure. */
    PBX_CORE_EXIT_PROGRESS = 66,
    /** Notification failure: a wake the kernel rejected permanently
     * (PBX_CORE_IO_REJECTED); a wake refused for now is retried on a
     * tick, keeping its decision, and never stops the service. */
    PBX_CORE_EXIT_NOTIFY = 67
} pbx_core_exit;

/** pbx_core_pool_state is one carved pool: where, how big, its free list. */
typedef struct pbx_core_pool_state {
    /** Arena offset of record 0. */
    size_t offset_bytes;
    /** Records in the pool. */
    uint32_t capacity;
    /** Bytes per record. */
    uint32_t record_size_bytes;
    /** First free record, or PBX_CORE_NIL. */
    uint32_t free_head;
    /** Records on the free list. */
    uint32_t free_count;
} pbx_core_pool_state;

/** pbx_core_queue is an intrusive, index-linked FIFO of one pool's records. */
typedef struct pbx_core_queue {
    /** First record, or PBX_CORE_NIL. */
    uint32_t head;
    /** Last record, or PBX_CORE_NIL. */
    uint32_t tail;
    /** Records queued. */
    uint32_t count;
    /** Pool the records belong to (pbx_bootstrap_pool). */
    uint32_t pool;
} pbx_core_queue;

/** pbx_core_queue_id names the core's queues (ready lanes and parking). */
typedef enum pbx_core_queue_id {
    /** Requests ready for their next progression step. */
    PBX_CORE_Q_INTAKE = 0,
    /** Requests ready to release request-owned authority. */
    PBX_CORE_Q_RELEASE,
    /** Grants ready for their next cleanup step. */
    PBX_CORE_Q_GRANT,
    /** Notifications ready to be queued to launchd. */
    PBX_CORE_Q_NOTIFY,
    /** Requests parked per route; PBX_CORE_ROUTE_COUNT entries. */
    PBX_CORE_Q_PARK_REQUEST,
    /** Grants parked per route; PBX_CORE_ROUTE_COUNT entries. */
    PBX_CORE_Q_PARK_GRANT = PBX_CORE_Q_PARK_REQUEST + PBX_CORE_ROUTE_COUNT,
    /** Notifications parked on the launchd route. */
    PBX_CORE_Q_PARK_NOTIFY = PBX_CORE_Q_PARK_GRANT + PBX_CORE_ROUTE_COUNT,
    /** Transient slots whose unwanted receipt awaits deletion retry. */
    PBX_CORE_Q_ORPHAN,
    /**
     * Requests whose retained work met a transient deletion or an inexact
     * peer answer: retried on the next tick (pbx_core_on_tick), never
     * polled. Back to the intake lane.
     */
    PBX_CORE_Q_DEFER_REQUEST,
    /** Grants deferred the same way; back to the grant cleanup lane. */
    PBX_CORE_Q_DEFER_GRANT,
    /** Orphan receipts whose deletion stayed transient; tick-paced. */
    PBX_CORE_Q_DEFER_ORPHAN,
    /**
     * Notifications whose wake launchd's route refused (not backpressure:
     * the route failed, or its peer is gone): the decision is kept and the
     * wake is retried on the next tick, never a fail-stop.
     */
    PBX_CORE_Q_DEFER_NOTIFY,
    /**
     * Requests waiting for a call record: their class's window was full
     * (or the calls pool was). Back to the intake lane whenever any call
     * ends, never on route writability (which would spin).
     */
    PBX_CORE_Q_WAIT_CALL_REQUEST,
    /** Grants waiting for a call record the same way; back to the grant
     * cleanup lane whenever any call ends. */
    PBX_CORE_Q_WAIT_CALL_GRANT,
    /**
     * Requests whose policy asked for a prompt while no prompt record was
     * free, or while their job held its share (pbx_core_prompt_share):
     * they keep every record and capability they hold (retryable
     * backpressure, never a drop) and go back to the intake lane, in
     * order, whenever a prompt record is freed.
     */
    PBX_CORE_Q_WAIT_PROMPT,
    /**
     * Requests begun and not yet committed, in BEGIN order. Every one has
     * the same OPEN deadline and the runtime's clock never goes back, so
     * the FIFO is sorted by deadline: its head is the next to end
     * CANCELLED (pbx_core_on_time) with its reservation returned.
     */
    PBX_CORE_Q_OPEN,
    /**
     * Outstanding calls, one FIFO per deadline class (PBX_BOOTSTRAP_TIME_*
     * below PBX_CORE_CALL_CLASSES): every call of a class has the same
     * timeout and the runtime's clock never goes back, so each FIFO is
     * sorted by deadline and its head is the next to expire.
     */
    PBX_CORE_Q_CALLS,
    /** Number of queues; not a queue. */
    PBX_CORE_Q_COUNT = PBX_CORE_Q_CALLS + 5
} pbx_core_queue_id;

/**
 * PBX_CORE_CALL_CLASSES is the number of deadline classes of outstanding
 * calls: vfsd, ttyd, procd, a caller's scope and a trusted prompt, in
 * PBX_BOOTSTRAP_TIME_* order. Each class has its own window of
 * call_window outstanding calls.
 */
#define PBX_CORE_CALL_CLASSES 5U

/**
 * PBX_CORE_PUBLIC_ORPHANS_MAX caps the transient-slot records that
 * receipts from public frames may hold while their deletion cannot finish
 * (two frames' worth). Past the cap the core exerts backpressure on public
 * intake (pbx_core_public_ready) instead of taking records that
 * request-owned work needs.
 */
#define PBX_CORE_PUBLIC_ORPHANS_MAX (2U * PBX_CORE_RECV_SLOTS_MAX)

/**
 * PBX_CORE_TSLOTS_MIN is the smallest transient-slot pool pbx_core_init
 * accepts: one request's three records, the spare one peer reply's
 * receipts may need, and one public frame's worth of headroom, so that a
 * deployment can serve at least one request.
 */
#define PBX_CORE_TSLOTS_MIN (3U + 2U * PBX_CORE_RECV_SLOTS_MAX)

/** PBX_CORE_LANES is the number of ready lanes served round-robin. */
#define PBX_CORE_LANES 5U

/**
 * PBX_CORE_BADGE_LAUNCHD is the badge the runtime passes for frames that
 * arrived from launchd's broker connection; only it may send BEGIN (either
 * mode; others get PBX_E_CORE_BROKER) and EXPIRE, so it owns every request:
 * SELECTOR, COMMIT and DECISION are accepted only from the badge that began
 * the request, and CANCEL of that request or CONSUME and CANCEL of its
 * grant from that badge or launchd's (others get PBX_E_CORE_NOT_OWNER).
 */
#define PBX_CORE_BADGE_LAUNCHD UINT32_C(0xFFFFFFFE)

/**
 * pbx_core_ctx is the whole core state. Caller-allocated; pbx_core_init
 * ignores old contents. It points at the arena and the ops table, both of
 * which must outlive it; records inside the arena hold indices only.
 */
typedef struct pbx_core_ctx {
    /** Arena base (caller-owned, arena_len bytes). */
    uint8_t *arena;
    /** Arena length in bytes. */
    size_t arena_len;
    /** Effect table. */
    const pbx_core_ops *ops;
    /** Opaque pointer handed to every op. */
    void *ops_user;
    /** Optional identity observation (pbx_core_set_identity), or NULL. */
    pbx_core_identity_fn identity;
    /** Transient slot range for receipt authentication. */
    pbx_capabi_layout slots;
    /** Carved pools, indexed by pbx_bootstrap_pool. */
    pbx_core_pool_state pools[PBX_BOOTSTRAP_POOL_COUNT];
    /** Selector chunks carved from the selector-bytes pool. */
    uint32_t chunk_count;
    /** First free selector chunk, or PBX_CORE_NIL. */
    uint32_t chunk_free_head;
    /** Free selector chunks. */
    uint32_t chunk_free_count;
    /** Every queue, indexed by pbx_core_queue_id. */
    pbx_core_queue queues[PBX_CORE_Q_COUNT];
    /** Next ready lane to serve. */
    uint32_t lane;
    /**
     * Records visited by walks of the correlation index (generation-zero
     * CANCEL, EXPIRE) since init, saturating: the observable that proves
     * such an event visits only its job's chain, never the pool. Tests
     * and benchmarks read it; the core never acts on it.
     */
    uint32_t index_visits;
    /**
     * Transient-slot records now held by receipts that arrived with public
     * frames and await deletion (at most PBX_CORE_PUBLIC_ORPHANS_MAX).
     */
    uint32_t public_orphans;
    /** Outstanding calls allowed per deadline class (PBX1 call_window). */
    uint32_t call_window;
    /** Prompt records one job (id and generation) may hold at once:
     * pbx_core_prompt_share of the PBX1 prompts capacity. */
    uint32_t prompt_share;
    /** Times a request whose policy asked for a prompt found no prompt
     * record it could take and waited (PBX_CORE_Q_WAIT_PROMPT) since init
     * (saturating); an observable for tests and the simulator. */
    uint32_t prompt_waits;
    /** Timeout per deadline class in milliseconds (PBX1 time_ms). */
    uint32_t call_ms[PBX_CORE_CALL_CLASSES];
    /** Outstanding calls per deadline class. */
    uint32_t calls_out[PBX_CORE_CALL_CLASSES];
    /** How long a request may stay begun and uncommitted, in ms (PBX1
     * time OPEN). */
    uint32_t open_ms;
    /** Requests ended CANCELLED by their OPEN deadline since init
     * (saturating); an observable for tests and the simulator. */
    uint32_t opens_expired;
    /**
     * The latest time the runtime reported (pbx_core_on_time), in its
     * milliseconds; never goes back. The core reads no clock.
     */
    uint64_t now_ms;
    /** Peer replies refused since init because they matched no live
     * call (saturating); an observable for tests and the simulator. */
    uint32_t replies_refused;
    /** Calls ended by their deadline or a lost route since init
     * (saturating). */
    uint32_t calls_expired;
    /**
     * The generation the last call record was given: every call takes the
     * next one (UINT32_MAX steps to 1), so a call's generation, which its
     * seq carries whole, names no other call sent within 2^32 - 1 calls.
     */
    uint32_t call_serial;
    /** Capabilities the core holds right now (conservation). */
    uint32_t held_caps;
    /** Nonzero after a successful init and until a fail-stop. */
    uint32_t ready;
    /** Exit status after a fail-stop (pbx_core_exit). */
    uint32_t exit_status;
    /**
     * Transitions taken since init, indexed by the transition-table row
     * pbx_core_fsm_find returns (saturating): exact coverage for tests
     * and the simulator. Read only outside the core.
     */
    uint32_t fsm_hits[PBX_CORE_FSM_ROWS];
    /** Scratch frame for outgoing peer calls and wakes. */
    uint8_t frame[PBX_CORE_FRAME_BYTES_MAX];
} pbx_core_ctx;

/**
 * pbx_core_out is the reply the runtime sends for one public frame.
 * Caller-allocated; pbx_core_on_public sets every field. When token is not
 * PBX_CORE_NIL the runtime must report the delivery outcome with
 * pbx_core_on_reply_delivered; transfer_slot (or PBX_CORE_SLOT_NONE) is a
 * capability to move with the reply, which stays the core's until delivery
 * is reported successful. Every frame gets either a reply (len > 0) or,
 * when drop is not PBX_OK, no reply and the instruction to close the
 * caller's connection: a frame whose header names no public operation
 * (too short, bad magic or version, unknown op) has nothing to answer.
 */
typedef struct pbx_core_out {
    /** Reply frame bytes. */
    uint8_t frame[PBX_CORE_FRAME_BYTES_MAX];
    /** Bytes in frame. */
    size_t len;
    /** Capability to transfer with the reply, or PBX_CORE_SLOT_NONE. */
    uint32_t transfer_slot;
    /** Delivery token (request index), or PBX_CORE_NIL. */
    uint32_t token;
    /** Generation that goes with token. */
    uint32_t token_generation;
    /** PBX_OK, or PBX_E_CORE_FRAME: no reply; drop the connection. */
    pbx_err drop;
} pbx_core_out;

/**
 * pbx_core_init validates layout against the compiled record layouts and
 * the arena (arena_len must equal layout->arena_bytes; arena must be
 * aligned to the largest record alignment) and carves every pool PBX1
 * describes, threading each free list, so no state survives from old
 * arena contents. slots is the transient slot range (copied). ops and
 * ops_user are kept. Returns PBX_OK, PBX_E_CORE_LAYOUT or PBX_E_CORE_ARENA;
 * on error ctx is not ready.
 */
pbx_err pbx_core_init(pbx_core_ctx *ctx, const pbx_bootstrap_layout *layout,
                      uint8_t *arena, size_t arena_len,
                      const pbx_capabi_layout *slots, const pbx_core_ops *ops,
                      void *ops_user);

/**
 * pbx_core_set_identity installs the optional identity observation (NULL
 * removes it); call it after pbx_core_init, which clears it. Without it,
 * or while it returns 0 for the committed scope, resolution evidence is
 * bound to operation, class, selector digest and object identity only; a
 * nonzero scope identity must equal a FOUND RESOLVE reply's scope_id
 * exactly or the request is denied (NOT_FOUND carries no scope_id).
 */
void pbx_core_set_identity(pbx_core_ctx *ctx, pbx_core_identity_fn identity);

/**
 * pbx_core_on_public handles one public frame of len bytes that arrived on
 * the public route with badge (the caller identity the kernel vouched
 * for) together with slot_count received capabilities in slots (each now
 * the core's). It writes the reply into *out. Returns PBX_OK whenever a
 * reply (possibly an error reply) was produced; PBX_E_CORE_INTAKE_HELD,
 * not a fail-stop, when the frame carries more capabilities than the core
 * could track should their deletion stay transient (never while
 * pbx_core_public_ready is true and slot_count is at most
 * PBX_CORE_RECV_SLOTS_MAX): then nothing was taken, the slots are still
 * the caller's and there is no reply. Any other value is a fail-stop whose
 * exit status pbx_core_exit_status reports.
 */
pbx_err pbx_core_on_public(pbx_core_ctx *ctx, uint32_t badge,
                           const uint8_t *frame, size_t len,
                           const uint32_t *slots, size_t slot_count,
                           pbx_core_out *out);

/**
 * pbx_core_commit_dest tells a runtime whose kernel hands over received
 * capabilities before anyone parsed the frame (the Linux port) where the
 * one capability of a public frame of len bytes from badge may go: it
 * runs the canonical frame parser and, only for a well-formed COMMIT of
 * that badge's own request, still open, naming exactly its reserved and
 * still empty destination, stores that destination in *dest and returns
 * true. Anything else returns false and the capability must be placed
 * where the core will delete it. Pure; changes nothing; O(1).
 */
bool pbx_core_commit_dest(const pbx_core_ctx *ctx, uint32_t badge,
                          const uint8_t *frame, size_t len, size_t slot_count,
                          uint32_t *dest);

/**
 * pbx_core_public_ready reports whether the core can accept a public frame
 * carrying up to PBX_CORE_RECV_SLOTS_MAX capabilities now: whether a
 * record is free to track each of them should its deletion stay
 * transient, without taking the records kept for request-owned work. While
 * it is false the runtime must not receive public frames (they stay
 * queued in the kernel; nothing is dropped); it turns true again once
 * pending deletions finish (pbx_core_on_tick retries them). Pure, O(1).
 */
bool pbx_core_public_ready(const pbx_core_ctx *ctx);

/**
 * pbx_core_on_tick tells the core that time passed: every record deferred
 * after a transient deletion or an inexact peer answer goes back to its
 * ready lane, in time linear in the records moved, each of which the
 * lane then serves once. So a deferred retry happens at most once per
 * tick, and the caller's tick interval bounds the retry rate; the core
 * reads no clock. Harmless when nothing is deferred.
 */
void pbx_core_on_tick(pbx_core_ctx *ctx);

/**
 * pbx_core_tick_wanted reports whether anything waits for a tick
 * (pbx_core_on_tick), so the caller arms its timer only then. Pure, O(1).
 */
bool pbx_core_tick_wanted(const pbx_core_ctx *ctx);

/**
 * pbx_core_step performs at most one unit of retained work, taking the
 * next non-empty ready lane in round-robin order. *progressed says whether
 * anything was done. Lanes whose steps call peers (intake, release, grant
 * cleanup) are served only while a peer reply's worth of transient-slot
 * records is free, so a receipt whose deletion stays transient is always
 * tracked; a held deletion (deferred until the next tick) consumes no
 * step. Returns PBX_OK or a fail-stop error.
 */
pbx_err pbx_core_step(pbx_core_ctx *ctx, bool *progressed);

/**
 * pbx_core_on_route_ready moves everything parked on route (after its
 * backpressure) back to its ready lane in O(1). route must be below
 * PBX_CORE_ROUTE_COUNT.
 */
void pbx_core_on_route_ready(pbx_core_ctx *ctx, pbx_core_route route);

/**
 * pbx_core_on_reply_delivered reports whether the reply carrying token and
 * generation (from pbx_core_out) reached the caller. A delivered terminal
 * decision may retire; an undelivered one is kept. Returns PBX_OK,
 * PBX_E_CORE_TOKEN for an unknown or stale token, or a fail-stop error.
 */
pbx_err pbx_core_on_reply_delivered(pbx_core_ctx *ctx, uint32_t token,
                                    uint32_t generation, bool delivered);

/**
 * pbx_core_on_peer_reply handles one reply of len bytes that arrived on
 * route (pbx_core_route, or PBX_CORE_ROUTE_SCOPE with via_slot naming the
 * scope it came through; otherwise via_slot is PBX_CORE_SLOT_NONE) with
 * slot_count received capabilities in slots (each now the core's). The
 * reply is matched to its outstanding call by what it echoes: the call's
 * sequence (header seq), route, operation (with the reply bit) and header
 * identity (request or grant, with generation). The reply to a call sent
 * through a scope (RESOLVE) matches only on route VFSD: one read through
 * any scope slot matches nothing, since the job that committed the scope
 * can read that connection too. A match
 * ends that call exactly once and its step judges the reply strictly;
 * anything else (no such call, a call that already ended by its
 * deadline, cancellation or a lost route, a frame too short to echo
 * anything) is refused: every receipt it carried is deleted and nothing
 * else changes. Returns PBX_OK, PBX_E_CORE_INTAKE_HELD (nothing taken, the
 * slots are still the caller's) when slot_count exceeds what the core can
 * track now (see pbx_core_peer_ready), or a fail-stop error.
 */
pbx_err pbx_core_on_peer_reply(pbx_core_ctx *ctx, uint32_t route,
                               uint32_t via_slot, const uint8_t *frame,
                               size_t len, const uint32_t *slots,
                               size_t slot_count);

/**
 * pbx_core_peer_ready reports whether the core can take a peer reply with
 * up to PBX_CORE_RECV_SLOTS_MAX capabilities now (a record is free to
 * track each should its deletion stay transient). While it is false the
 * runtime stops watching the startup routes for replies, which stay
 * queued in the kernel. Pure, O(1).
 */
bool pbx_core_peer_ready(const pbx_core_ctx *ctx);

/**
 * pbx_core_on_time tells the core the runtime's monotonic time now_ms (a
 * value that never goes back; an earlier one is ignored). Every
 * outstanding call whose deadline is at or before it ends: an unanswered
 * prompt ends its request DENIED (reason PROMPT_TIMEOUT), a resolution,
 * policy, install, detach or ACTIVE call ends its request without
 * authority (reason PEER_TIMEOUT), and a cleanup call (DETACH in
 * release, REMOVE, RETIRE, WITHDRAW) is retried on a later tick, never
 * abandoned. Every request still OPEN (begun, not committed) whose BEGIN
 * was at least the PBX1 OPEN deadline before now_ms ends CANCELLED; its
 * destination reservation and records return through release, and its
 * decision is published and woken like any other. Work per call or
 * request ended is O(1); cannot fail except by a fail-stop the ended
 * steps raise, returned as its error.
 */
pbx_err pbx_core_on_time(pbx_core_ctx *ctx, uint64_t now_ms);

/**
 * pbx_core_next_deadline stores in *at_ms the earliest deadline of any
 * outstanding call or OPEN request and returns true, or returns false
 * when there is none. O(PBX_CORE_CALL_CLASSES).
 */
bool pbx_core_next_deadline(const pbx_core_ctx *ctx, uint64_t *at_ms);

/**
 * pbx_core_on_route_down tells the core that route (below
 * PBX_CORE_ROUTE_COUNT) stopped carrying replies (the peer hung up or
 * died). Work parked on its backpressure goes back to its lanes. For
 * VFSD, every request in flight that holds an object vfsd minted
 * (resolved: POLICY to ACTIVATE) or whose RESOLVE is outstanding ends
 * first, DENIED with reason PROVIDER_LOST, its calls cancelled and its
 * release (prompt withdrawn, object copy given back or deleted, a possibly
 * placed INSTALL retired) queued: a dead incarnation's object is never
 * approved (one pass over the requests pool). Then every call
 * outstanding on the route ends as if its deadline had passed, except
 * ttyd's trusted prompts: those stay outstanding until their own deadline
 * (then DENIED, PROMPT_TIMEOUT) and are shown again by
 * pbx_core_on_route_up. Then, in one pass over the grants pool:
 * - VFSD: every LIVE grant ends (event LOST, reason PROVIDER_LOST): its
 *   revocation, REMOVE and RETIRE follow as for an expiry; the RETIRE is
 *   retried on ticks until the route is back.
 * - PROCD: every LIVE install-mode grant ends the same way (reason
 *   INSTALLER_LOST): procd can no longer revoke it, so its object is
 *   retired at vfsd. An INSTALL outstanding at the loss ends as a lost
 *   INSTALL always does: its object is retired before the DENIED
 *   decision is published.
 * A grant whose approval is not yet published ends through its request,
 * whose decision becomes DENIED with that reason (unless it was already
 * ending otherwise). Later sends on the route are the ops layer's to
 * refuse (FAILED). Work: the calls ended plus one pass over the grants
 * pool; no allocation. Returns PBX_OK, PBX_E_CORE_NOT_READY, or a
 * fail-stop error the ended steps raised.
 */
pbx_err pbx_core_on_route_down(pbx_core_ctx *ctx, pbx_core_route route);

/**
 * pbx_core_on_route_up tells the core that the runtime validated and
 * installed a fresh route to a restarted peer in route's slot (below
 * PBX_CORE_ROUTE_COUNT; the old one is deleted and its route-down state
 * cleared). Everything parked on route and everything deferred to a tick
 * goes back to its lane, so owed RETIREs and REMOVEs go out now. For
 * TTYD, which starts empty: every LIVE grant whose ACTIVE row went to the
 * old ttyd is queued to send that row again (exact generations, one call
 * per grant through the grant lane, under the ttyd window and
 * backpressure; an inexact or missing answer is asked again on a tick),
 * and every prompt call still outstanding is sent again under its own
 * sequence and deadline. Call it whenever a route was replaced, also
 * without a pbx_core_on_route_down before. Work: one pass over the grants
 * pool and the outstanding prompts; no allocation. Returns PBX_OK or
 * PBX_E_CORE_NOT_READY.
 */
pbx_err pbx_core_on_route_up(pbx_core_ctx *ctx, pbx_core_route route);

/**
 * pbx_core_on_broker_lost tells the core that launchd's broker connection
 * (the one whose frames carry PBX_CORE_BADGE_LAUNCHD) is gone, so no
 * launchd manages any job and no waiting caller can read a decision:
 * every request still in flight ends CANCELLED, every LIVE grant ends as
 * if its job expired (event EXPIRE; one whose approval is unpublished
 * turns its request CANCELLED), and every decision not yet delivered is
 * dropped once published (an approved runtime alias it carried is
 * deleted exactly; one whose deletion must be retried stays with its
 * decision). The runtime calls it before installing a fresh broker
 * endpoint, on which BEGIN is accepted as on the first. Work: one pass
 * over the requests and the grants pools; no allocation. Returns PBX_OK,
 * PBX_E_CORE_NOT_READY or a fail-stop error (a deletion the kernel
 * rejected).
 */
pbx_err pbx_core_on_broker_lost(pbx_core_ctx *ctx);

/** pbx_core_calls_outstanding returns how many calls are outstanding. */
uint32_t pbx_core_calls_outstanding(const pbx_core_ctx *ctx);

/** pbx_core_exit_status returns the pbx_core_exit of a fail-stop, or 0. */
pbx_core_exit pbx_core_exit_status(const pbx_core_ctx *ctx);

/** pbx_core_held_caps returns how many capabilities the core holds now. */
uint32_t pbx_core_held_caps(const pbx_core_ctx *ctx);

/**
 * PBX_CORE_PROMPT_SHARE_DIVISOR: one job (id and generation from the
 * launchd-authenticated BEGIN body) may hold at most this fraction of the
 * prompt records at once (one eighth), so at least that many jobs are
 * needed to take them all.
 */
#define PBX_CORE_PROMPT_SHARE_DIVISOR 8U

/**
 * pbx_core_prompt_share returns how many prompt records one job may hold
 * at once under a PBX1 prompts capacity of prompts: prompts divided by
 * PBX_CORE_PROMPT_SHARE_DIVISOR, rounded down, and at least 1 (so every
 * job can always be shown a prompt). Pure; the operator sets it through
 * the prompts capacity (`pbx geometry show` prints it).
 */
uint32_t pbx_core_prompt_share(uint32_t prompts);

#endif /* PBX_CORE_H */
