/*
 * sim.h: the deterministic seeded simulator of everything around the core.
 *
 * One sim_world holds a simulated kernel (powerboxd's slot table with
 * capability identities, kinds, rights, provenance and reservations), the
 * simulated peers vfsd, ttyd, procd and launchd, the replies in flight
 * between them and powerboxd, a seeded clock, the simulated clients, the
 * fault model and the checker's shadow state (of requests, grants and
 * outstanding calls). Every choice comes from one PRNG seeded by --seed;
 * nothing reads time or addresses, so a seed replays exactly and its trace
 * hash is the same at every optimisation level. docs/TESTING.md describes
 * the fault model and the invariants in words.
 */
#ifndef PBX_SIM_H
#define PBX_SIM_H

#include "core/pbx_core.h"

#include <stdint.h>
#include <stdio.h>

/** SIM_TFIRST is the first transient slot of the simulated CSpace. */
#define SIM_TFIRST 64U
/** SIM_TCOUNT is the number of transient slots the kernel simulates. */
#define SIM_TCOUNT 256U
/** SIM_SLOTS is the size of the simulated CSpace. */
#define SIM_SLOTS (SIM_TFIRST + SIM_TCOUNT)
/** SIM_REQ_MAX bounds the request pool capacity a seed may pick. */
#define SIM_REQ_MAX 8U
/** SIM_GRANT_MAX bounds the grant pool capacity a seed may pick. */
#define SIM_GRANT_MAX 8U
/** SIM_CLIENTS is the number of simulated public callers. */
#define SIM_CLIENTS 4U
/** SIM_SCOPE_IDENT_BASE offsets the scope identities vfsd reports. */
#define SIM_SCOPE_IDENT_BASE 0x5C0000000000ULL

/** SIM_EVENTS is the depth of the event ring printed on failure. */
#define SIM_EVENTS 24U
/** SIM_SEL_MAX bounds a simulated selector. */
#define SIM_SEL_MAX PBX_IPC_SELECTOR_LEN_BYTES_MAX
/** SIM_NIL is "none" for sim indices. */
#define SIM_NIL UINT32_MAX
/** SIM_ROW_MAX bounds the transition rows the coverage map tracks. */
#define SIM_ROW_MAX 64U
/** SIM_CALL_MAX bounds the calls pool a seed may pick (its shadow size). */
#define SIM_CALL_MAX (PBX_BOOTSTRAP_CALL_ROUTES * SIM_REQ_MAX)
/** SIM_FLIGHTS bounds the replies in flight (the kernel's queues); a send
 * that finds them full meets backpressure. */
#define SIM_FLIGHTS 256U
/** SIM_REPLY_MAX bounds one peer reply frame (every reply is small). */
#define SIM_REPLY_MAX 512U
/** SIM_PEERS is the number of peer routes that carry calls. */
#define SIM_PEERS 3U

/** sim_role says what a simulated capability is, for conservation. */
typedef enum sim_role {
    /** Empty slot or placeholder. */
    SIM_ROLE_NONE = 0,
    /** A startup inventory capability. */
    SIM_ROLE_STARTUP,
    /** A caller's scope (COMMIT receipt), owned by a request. */
    SIM_ROLE_SCOPE,
    /** vfsd's SEND-only object receipt, owned by a request. */
    SIM_ROLE_OBJECT,
    /** procd's revocation handle, owned by a grant. */
    SIM_ROLE_HANDLE,
    /** A locally derived runtime alias, owned by a request. */
    SIM_ROLE_ALIAS,
    /** A surplus or unexpected receipt nobody asked for. */
    SIM_ROLE_JUNK,
    /** Number of roles; not a role. */
    SIM_ROLE_COUNT
} sim_role;

/** sim_fault names every fault injection site. */
typedef enum sim_fault {
    SIM_F_BUSY = 0,  /**< peer backpressure windows */
    SIM_F_FAILED,    /**< transport failure (message dropped) */
    SIM_F_STATUS,    /**< error-status reply */
    SIM_F_FLIP,      /**< bit-flipped reply frame */
    SIM_F_TRUNC,     /**< truncated reply frame */
    SIM_F_ECHO,      /**< wrong identities / stale generations in echoes */
    SIM_F_SURPLUS,   /**< surplus or unexpected receipts */
    SIM_F_BADCAP,    /**< receipt of the wrong kind, rights or provenance */
    SIM_F_REPLAY,    /**< duplicated (replayed older) reply */
    SIM_F_DEL_TRANS, /**< transient deletion failure */
    SIM_F_DEL_PERM,  /**< permanent deletion rejection (fail-stop) */
    SIM_F_NOTIFY,    /**< long notify backpressure at launchd */
    SIM_F_WAKE_FAIL, /**< launchd refuses a wake (retried on a tick) */
    SIM_F_RESERVE,   /**< no transient destination available */
    SIM_F_DELIVERY,  /**< decision reply delivery failure */
    SIM_F_CLIENT,    /**< invalid and malformed public operations */
    SIM_F_CANCEL,    /**< cancellations at every stage */
    SIM_F_EXPIRE,    /**< expiries at every stage */
    SIM_F_PBX1,      /**< corrupt PBX1 at boot */
    SIM_F_NTH,       /**< failure of the Nth effect callback */
    SIM_F_LATE,      /**< a reply delayed far beyond its call's deadline */
    SIM_F_DUP,       /**< a reply delivered twice (the copy without caps) */
    SIM_F_DROP,      /**< a reply lost (its receipts destroyed) */
    SIM_F_SILENT,    /**< a peer silent for a long stretch (replies held) */
    SIM_F_HANGUP,    /**< a peer hangs up (route down) and comes back */
    SIM_F_STALL,     /**< the runtime stalls: the clock jumps deadlines */
    SIM_F_COUNT      /**< number of faults; not a fault */
} sim_fault;

/** sim_cap is one simulated capability; kind EMPTY means none. */
typedef struct sim_cap {
    /** Unique capability identity (never reused in a run). */
    uint64_t id;
    /** pbx_capabi_kind. */
    uint32_t kind;
    /** PBX_CAPABI_RIGHT_* bits. */
    uint32_t rights;
    /** pbx_capabi_provenance. */
    uint32_t prov;
    /** sim_role. */
    uint32_t role;
    /** Owning request or grant index, or SIM_NIL. */
    uint32_t owner;
    /** Generation of the owner. */
    uint32_t owner_gen;
    /** vfsd object the capability designates (0 for none). */
    uint64_t object;
    /** Nonzero once it arrived with a reply the core refused as matching
     * no open call: owned by nobody, whatever its role says. */
    uint32_t late;
} sim_cap;

/** sim_slot is one slot of powerboxd's simulated CSpace. */
typedef struct sim_slot {
    /** Content (kind EMPTY when empty, PLACEHOLDER when reserved). */
    sim_cap cap;
    /** Nonzero while reserved as a transient destination. */
    uint32_t reserved;
    /** Request index the reservation belongs to, or SIM_NIL. */
    uint32_t res_owner;
} sim_slot;

/** sim_req is the shadow of one core request (indexed like the core). */
typedef struct sim_req {
    /** Nonzero while the core request is believed live. */
    uint32_t live;
    /** Core generation of the request. */
    uint32_t gen;
    /** Client (0..SIM_CLIENTS-1) whose context it carries. */
    uint32_t client;
    /** Badge that began it: the client's, or launchd's broker for a
     * runtime-reply request. */
    uint32_t badge;
    /** Nonzero once an accepted EXPIRE covered it (it may end CANCELLED
     * without a cancel of its own). */
    uint32_t expire_hit;
    /** Nonzero once the core freed this request's grant (it ended). */
    uint32_t grant_gone;
    /** Nonzero once CANCEL answered STATE: something else (an EXPIRE)
     * ended it, so the client asks DECISION instead of cancelling. */
    uint32_t ended;
    /** The BEGIN record sent. */
    pbx_ipc_begin begin;
    /** Selector bytes the client streams. */
    uint8_t selector[SIM_SEL_MAX];
    /** Bytes streamed so far. */
    uint32_t sent;
    /** Reserved destination from the BEGIN reply. */
    uint32_t dest;
    /** Nonzero once COMMIT was accepted. */
    uint32_t committed;
    /** The simulated clock (ms) when the BEGIN was accepted: the core
     * ends the request CANCELLED once the OPEN deadline has passed since
     * then without a COMMIT. */
    uint64_t begun_ms;
    /** Nonzero once a cancel of the in-flight request was accepted. */
    uint32_t cancel_ok;
    /** vfsd's evidence: an exact scoped NOT_FOUND was delivered. */
    uint32_t nf_evidence;
    /** ttyd's exact routine ALLOW was delivered. */
    uint32_t policy_allow;
    /** ttyd delivered the exact user APPROVE for this request. */
    uint32_t user_approved;
    /** Found object identity and scope identity. */
    pbx_ipc_object object;
    /** vfsd's scope identity for this request. */
    uint64_t scope_ident;
    /** Capability identity of the committed scope. */
    uint64_t scope_cap;
    /** Grant index seen at INSTALL/VIEW, or SIM_NIL. */
    uint32_t grant;
    /** Terminal outcome seen in a DECISION reply (0 before). */
    uint32_t outcome;
    /** Terminal replies delivered. */
    uint32_t delivered;
    /** Wakes queued to launchd. */
    uint32_t wakes;
    /** Approved grant identity handed to the client. */
    pbx_ipc_id approved;
    /** Op of a progression call of this request that ended by its
     * deadline or a lost route (0: none): the only cause of a timeout. */
    uint32_t expired_op;
    /** Nonzero once vfsd's route was lost while this request held (or was
     * about to be told) an object vfsd minted: the core ended it DENIED,
     * PROVIDER_LOST, whatever its calls then did (sim_routes_lost_reqs). */
    uint32_t provider_lost;
    /** PROMPTs the kernel took toward ttyd for this request. */
    uint32_t prompts;
    /** Nonzero while a PROMPT ttyd received may still be showing: no
     * exact answer or RETRY reached the core, no WITHDRAW reached ttyd. */
    uint32_t prompt_showing;
    /** Nonzero once vfsd retired this request's object (full identity):
     * whatever procd installed from it is cut. */
    uint32_t obj_retired;
    /** The grant whose exact ACTIVE acknowledgement the core took for
     * this request (gen 0: none); kept past the grant record's reuse. */
    pbx_ipc_id active_acked;
    /** Slot procd installed the object in. */
    uint32_t installed_slot;
    /** Bit (1 << sim_call_kind) set once the core took the exact reply
     * to this request's call of that kind, as sim_calls.c judges the
     * delivered bytes (invariants 16 and 17). */
    uint32_t exact;
    /** The verdict of the exact POLICY reply the core took (0: none). */
    uint32_t exact_verdict;
} sim_req;

/** sim_grant_state is the shadow lifecycle of a grant. */
typedef enum sim_grant_state {
    SIM_G_NONE = 0,  /**< unknown to the peers */
    SIM_G_INSTALLED, /**< procd installed or the alias was derived */
    SIM_G_ACTIVE,    /**< ttyd acknowledged the full ACTIVE row */
    SIM_G_REMOVED,   /**< ttyd acknowledged REMOVE; RETIRE still owed */
    SIM_G_UNVIEWED,  /**< vfsd acknowledged RETIRE; REMOVE still owed */
    SIM_G_RETIRED    /**< both REMOVE and RETIRE acknowledged exactly */
} sim_grant_state;

/** sim_grant is the shadow of one core grant (indexed like the core). */
typedef struct sim_grant {
    /** sim_grant_state. */
    uint32_t state;
    /** Core generation. */
    uint32_t gen;
    /** Request index and generation that installed it. */
    uint32_t req;
    /** Request generation. */
    uint32_t req_gen;
    /** Nonzero while procd holds an unrevoked install. */
    uint32_t procd_live;
    /** Nonzero when an ACTIVE row was ever acknowledged. */
    uint32_t was_active;
    /** Nonzero when the client holds the approval (grant id). */
    uint32_t client_knows;
    /** Nonzero once the core was seen holding it live (accepted). */
    uint32_t core_seen;
    /** Nonzero once the client asked to end it (consume/expire). */
    uint32_t ending;
    /** Installed slot procd reported. */
    uint32_t installed_slot;
    /** Object and scope identity of the grant. */
    pbx_ipc_object object;
    /** Scope identity. */
    uint64_t scope_ident;
    /** Committed selector digest of the grant's request. */
    uint8_t digest[PBX_IPC_DIGEST_BYTES];
    /** Context of the grant (lifetime, job, class). */
    pbx_ipc_context ctx;
    /** Invocation id of the grant's request (INVOCATION lifetime). */
    uint64_t invocation_id;
    /** Badge that began the grant's request (owns CONSUME and CANCEL). */
    uint32_t badge;
} sim_grant;

/** sim_cleanup follows one core grant through its cleanup states. */
typedef struct sim_cleanup {
    /** Core generation the entry belongs to (0: none). */
    uint32_t gen;
    /** Step its revocation began (the grant left LIVE). */
    uint64_t from;
} sim_cleanup;

/** sim_call_kind names the core step behind an outstanding call. */
typedef enum sim_call_kind {
    SIM_CALL_NONE = 0,   /**< unknown */
    SIM_CALL_RESOLVE,    /**< RESOLVE through the scope (progression) */
    SIM_CALL_POLICY,     /**< POLICY (progression) */
    SIM_CALL_PROMPT,     /**< PROMPT (progression) */
    SIM_CALL_INSTALL,    /**< INSTALL (progression) */
    SIM_CALL_DETACH,     /**< DETACH before approval (progression) */
    SIM_CALL_ACTIVE,     /**< VIEW ACTIVE (progression) */
    SIM_CALL_REL_DETACH, /**< DETACH in release */
    SIM_CALL_REQ_RETIRE, /**< RETIRE of a refused install (release) */
    SIM_CALL_WITHDRAW,   /**< WITHDRAW of a prompt (release) */
    SIM_CALL_REMOVE,     /**< VIEW REMOVE of a grant (cleanup) */
    SIM_CALL_RETIRE,     /**< RETIRE of a grant (cleanup) */
    SIM_CALL_RESYNC,     /**< VIEW ACTIVE again to a returned ttyd (live) */
    SIM_CALL_KINDS       /**< number of kinds; not a kind */
} sim_call_kind;

/** sim_call_view is what the core records about one outstanding call. */
typedef struct sim_call_view {
    /** Nonzero while the record is an outstanding call. */
    uint32_t live;
    /** The header seq the call went out with. */
    uint32_t seq;
    /** pbx_core_route, or PBX_CORE_ROUTE_SCOPE. */
    uint32_t route;
    /** Scope slot of a scoped call, else PBX_CORE_SLOT_NONE. */
    uint32_t via_slot;
    /** Operation sent. */
    uint32_t op;
    /** Header identity sent. */
    pbx_ipc_id id;
    /** Owner pool (requests or grants), index and generation. */
    uint32_t owner_pool;
    /** Owner index. */
    uint32_t owner;
    /** Owner generation. */
    uint32_t owner_gen;
    /** sim_call_kind. */
    uint32_t kind;
    /** Deadline class. */
    uint32_t clazz;
    /** Absolute deadline in ms. */
    uint64_t deadline_ms;
} sim_call_view;

/** sim_call is the simulator's own record of a call it carried. */
typedef struct sim_call {
    /** Nonzero while the call is open by the rules: sent, and not yet
     * ended by an accepted reply, its deadline, its route going down or
     * (for a progression call) its owner leaving the state it was sent
     * from. */
    uint32_t open;
    /** Nonzero once the owner fields were filled from the core's record. */
    uint32_t known;
    /** What the core recorded, checked against what went on the wire. */
    sim_call_view v;
    /** Request state the call was sent from (progression calls). */
    uint32_t sent_state;
} sim_call;

/** sim_flight is one reply on its way to powerboxd. */
typedef struct sim_flight {
    /** Route it arrives on (PBX_CORE_ROUTE_SCOPE for a scope). */
    uint32_t route;
    /** Peer whose silence holds it and whose hangup loses it. */
    uint32_t peer;
    /** Scope slot a scope reply arrives through. */
    uint32_t via_slot;
    /** Seq of the call it answers (as sent). */
    uint32_t seq;
    /** Step from which it may be delivered. */
    uint64_t due;
    /** Nonzero for a duplicated copy. */
    uint32_t dup;
    /** What was asked: op, header identity and (VIEW) row kind. */
    uint32_t ask_op;
    /** Header identity of the call. */
    pbx_ipc_id ask_id;
    /** VIEW row kind of the call (0 otherwise). */
    uint32_t ask_kind;
    /** Reply bytes and their length. */
    uint8_t bytes[SIM_REPLY_MAX];
    /** Bytes in use. */
    size_t len;
    /** Receipts held by the sim (the kernel) until delivery or loss. */
    sim_cap caps[PBX_CORE_RECV_SLOTS_MAX];
    /** Receipts in use. */
    size_t ncaps;
} sim_flight;

/** sim_event is one trace record; hashed, and kept in a ring. */
typedef struct sim_event {
    /** Step number. */
    uint64_t step;
    /** Event code (SIM_EV_*). */
    uint32_t code;
    /** Up to four integer arguments. */
    uint64_t a[4];
} sim_event;

/** sim_route_state is the runtime's view of one peer route. */
typedef struct sim_route_state {
    /** Step until which the route answers BUSY. */
    uint64_t busy_until;
    /** Step until which the peer is silent (its replies held). */
    uint64_t silent_until;
    /** Step until which the peer is gone (hung up); 0 while up. */
    uint64_t down_until;
    /** Step until which faults on this route may still delay answers:
     * the bounded-retirement clock of a grant starts after it. */
    uint64_t disturbed_until;
    /** Nonzero when something may be parked on the route. */
    uint32_t dirty;
    /** Last reply bytes (for replay faults) and their length. */
    uint8_t last[SIM_REPLY_MAX];
    /** Length of last. */
    size_t last_len;
} sim_route_state;

/** sim_opts are the command-line options of one run. */
typedef struct sim_opts {
    /** Steps of the faulty phase per seed. */
    uint64_t steps;
    /** Bit set of faults allowed (1 << sim_fault). */
    uint32_t faults;
    /** Kept for the command line (--strict): the strict decision-time
     * checks now always run. */
    uint32_t strict;
    /** Nonzero: print a line per seed. */
    uint32_t verbose;
} sim_opts;

/** sim_world is the whole simulation of one seed. */
typedef struct sim_world {
    /** Options of the run. */
    const sim_opts *opts;
    /** PRNG state (xoshiro256**). */
    uint64_t rng[4];
    /** Seed. */
    uint64_t seed;
    /** Current step. */
    uint64_t step;
    /** FNV-1a hash of every event. */
    uint64_t hash;
    /** Event ring. */
    sim_event ring[SIM_EVENTS];
    /** Events recorded. */
    uint64_t events;
    /** Per-fault firing rate in 1/1024 units (0: off for this seed). */
    uint32_t rate[SIM_F_COUNT];
    /** Nonzero once faults are healed (quiescence). */
    uint32_t healed;
    /** Effect callbacks so far, and the one that fails (0: none). */
    uint64_t effects;
    /** The effect number that fails. */
    uint64_t nth;
    /** Nonzero once a permanent fault was injected. */
    uint32_t permanent;
    /** Faults fired so far (any site). */
    uint64_t faults_fired;
    /** First violation message, or empty. */
    char violation[256];
    /** The simulated CSpace. */
    sim_slot slots[SIM_SLOTS];
    /** Occupied transient slots (not placeholder). */
    uint32_t occupied;
    /** Next capability identity. */
    uint64_t next_cap;
    /** Next vfsd object identity. */
    uint64_t next_object;
    /** Nonzero when a slot changed since the last full check. */
    uint32_t dirty;
    /** Deletions that failed transiently during the current public op. */
    uint32_t public_transient;
    /** Routes. */
    sim_route_state routes[PBX_CORE_ROUTE_COUNT];
    /** The seeded clock (ms) the core last heard, and its mean step. */
    uint64_t now_ms;
    /** Mean milliseconds per step. */
    uint32_t ms_step;
    /** Deadline per class in ms (the geometry's time_ms). */
    uint32_t time_ms[PBX_BOOTSTRAP_TIME_COUNT];
    /** The longest deadline, in steps. */
    uint32_t deadline_steps;
    /** Largest ordinary delivery delay in steps (per seed). */
    uint32_t max_delay;
    /** Step of the last tick. */
    uint64_t last_tick;
    /** Step of the last transient deletion failure. */
    uint64_t del_disturbed;
    /** The retirement bound in steps (see sim_check_cleanup). */
    uint64_t retire_bound;
    /** Replies in flight, densely packed. */
    sim_flight flights[SIM_FLIGHTS];
    /** Flights in use. */
    uint32_t nflights;
    /** The simulator's record of every call, by the core's call index. */
    sim_call calls[SIM_CALL_MAX];
    /** Nonzero when a request or grant record moved since the last walk
     * of the correlation index. */
    uint32_t rec_dirty;
    /** Calls open by the simulator's account. */
    uint32_t calls_open;
    /** No open call's deadline is before this (ms). */
    uint64_t calls_next_ms;
    /** Nonzero when a call, request or grant changed since the last full
     * comparison of calls with the core's records. */
    uint32_t calls_dirty;
    /** Grants in cleanup, by core index. */
    sim_cleanup cleanup[SIM_GRANT_MAX];
    /** Per grant index, the generation whose ACTIVE row the kernel took
     * toward ttyd (ttyd may show it: REMOVE is owed), else 0. */
    uint32_t row_sent[SIM_GRANT_MAX];
    /** Per grant index, the generation whose ACTIVE row the living ttyd
     * took and no REMOVE took down since, else 0; a ttyd that dies
     * forgets every row (sim_routes_view). */
    uint32_t ttyd_row[SIM_GRANT_MAX];
    /** Nonzero while pbx_core_on_route_up re-shows prompts on ttyd: a
     * PROMPT under an open call's seq is that call, not a new one. */
    uint32_t prompt_resend;
    /** Nonzero from ttyd's return until no row is owed to it any more,
     * when its view is compared with the live grants (sim_routes_view). */
    uint32_t resync_pending;
    /** Capability ledger: every capability that entered powerboxd's
     * world (public receipts, derived aliases, peer receipts put in
     * flight) is in its CSpace, in flight, deleted by the core, moved out
     * (DETACH, an exported alias) or destroyed with a lost reply. */
    uint64_t led_in, led_deleted, led_moved, led_dropped, led_flight;
    /** procd installs not yet revoked (their handle not yet deleted or
     * destroyed), over every grant generation. */
    uint64_t procd_installs;
    /** Shadow requests and grants. */
    sim_req reqs[SIM_REQ_MAX];
    /** Shadow grants. */
    sim_grant grants[SIM_GRANT_MAX];
    /** Core state snapshot for transition inference. */
    uint32_t snap_req[SIM_REQ_MAX][4];
    /** Grant snapshot (live, generation, state). */
    uint32_t snap_grant[SIM_GRANT_MAX][3];
    /** Grant-ending event of the current public op plus one (0: none). */
    uint32_t cause;
    /** Transition rows reached (shared across seeds by the caller). */
    uint64_t *coverage;
    /** Counters for the summary. */
    uint64_t stat_begun, stat_approved, stat_denied, stat_cancelled,
        stat_notfound, stat_refused_direct, stat_held;
    /** Replies delivered, refused as late, timeouts, and the longest
     * cleanup seen after the routes answered (steps). */
    uint64_t stat_replies, stat_late, stat_timeouts, stat_retire_max;
    /** The core under test and its arena. */
    pbx_core_ctx *core;
    /** Arena storage. */
    uint8_t *arena;
    /** Arena size. */
    size_t arena_len;
    /** Derived layout. */
    pbx_bootstrap_layout layout;
} sim_world;

/** Event codes recorded into the trace. */
enum {
    SIM_EV_BOOT = 1,
    SIM_EV_PUBLIC,
    SIM_EV_REPLY,
    SIM_EV_STEP,
    SIM_EV_CALL,
    SIM_EV_ANSWER,
    SIM_EV_DELETE,
    SIM_EV_RESERVE,
    SIM_EV_RELEASE,
    SIM_EV_ALIAS,
    SIM_EV_WAKE,
    SIM_EV_READY,
    SIM_EV_DELIVER,
    SIM_EV_FAULT,
    SIM_EV_HEAL,
    SIM_EV_CANCEL,
    SIM_EV_TICK,
    SIM_EV_SEND,
    SIM_EV_LOST,
    SIM_EV_ROUTE,
    SIM_EV_TIME
};

/* ---- sim_rng.c ---------------------------------------------------------- */

/** sim_rng_seed seeds w's PRNG from seed (splitmix64 expansion). */
void sim_rng_seed(sim_world *w, uint64_t seed);
/**
 * sim_rng_feed makes the next len draws (of every sim_rand, sim_below and
 * sim_chance, in any world) come from bytes, one byte per draw, before
 * the seeded PRNG takes over again: a fuzzer's input chooses every
 * decision of a run (fuzz/fuzz_core_machine.c). bytes must stay valid
 * until the feed is used up or replaced; len 0 turns the feed off.
 */
void sim_rng_feed(const uint8_t *bytes, size_t len);
/** sim_rng_feed_left returns how many fed bytes are still to be drawn. */
size_t sim_rng_feed_left(void);
/** sim_rand returns the next 64 random bits. */
uint64_t sim_rand(sim_world *w);
/** sim_below returns a uniform value in [0, n) (n > 0). */
uint32_t sim_below(sim_world *w, uint32_t n);
/** sim_chance returns true with probability per_1024 / 1024. */
bool sim_chance(sim_world *w, uint32_t per_1024);
/** sim_fault_fires rolls fault f at its seed rate (never once healed). */
bool sim_fault_fires(sim_world *w, sim_fault f);
/** sim_event_add records one event into the hash and the ring. */
void sim_event_add(sim_world *w, uint32_t code, uint64_t a0, uint64_t a1,
                   uint64_t a2, uint64_t a3);
/** sim_fail records the first violation (printf-style message). */
void sim_fail(sim_world *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** sim_events_print writes the last events of w to out. */
void sim_events_print(const sim_world *w, FILE *out);
/** sim_fault_name returns the static name of fault f. */
const char *sim_fault_name(sim_fault f);

/* ---- sim_kernel.c ------------------------------------------------------- */

/** sim_kernel_boot fills the startup inventory and empties the rest. */
void sim_kernel_boot(sim_world *w);
/** sim_cap_mint returns a fresh capability of role for owner. */
sim_cap sim_cap_mint(sim_world *w, uint32_t role, uint32_t owner,
                     uint32_t owner_gen, uint64_t object);
/** sim_slot_put places cap into a free transient slot; SIM_NIL if full. */
uint32_t sim_slot_put(sim_world *w, const sim_cap *cap, uint32_t want);
/** sim_slot_take removes the capability in slot (moved out). */
void sim_slot_take(sim_world *w, uint32_t slot);
/** sim_count_held counts held transient caps of role owned by owner. */
uint32_t sim_count_held(const sim_world *w, uint32_t role, uint32_t owner,
                        uint32_t owner_gen);
/** sim_count_owned counts held transient caps of role still owned by
 * owner: those that arrived with a refused late reply (or a COMMIT
 * refused after the decision was published) belong to nobody. */
uint32_t sim_count_owned(const sim_world *w, uint32_t role, uint32_t owner,
                         uint32_t owner_gen);
/** sim_cap_destroy destroys a capability that never reached powerboxd's
 * CSpace (a lost reply's receipt), as the kernel would: a revocation
 * handle's install is revoked. */
void sim_cap_destroy(sim_world *w, const sim_cap *c);
/** sim_kernel_ops returns the effect table the core is driven with. */
const pbx_core_ops *sim_kernel_ops(void);
/** sim_kernel_identity reports the identity vfsd names a held scope
 * capability by (0 for anything else): the core's scope binding. */
uint64_t sim_kernel_identity(void *user, uint32_t slot);

/* ---- sim_peers.c -------------------------------------------------------- */

/** sim_peer_send carries one core peer call to its peer, which acts and
 * puts its reply in flight (the ops send effect; nth: the Nth-effect
 * fault fails it). */
pbx_core_io sim_peer_send(sim_world *w, const pbx_core_call *call, bool nth);
/** sim_launchd_wake takes one wake datagram (the ops wake effect). */
pbx_core_io sim_launchd_wake(sim_world *w, const uint8_t *frame, size_t len);

/* ---- sim_client.c ------------------------------------------------------- */

/** sim_client_act performs one random public operation. */
void sim_client_act(sim_world *w);
/** sim_client_quiesce drives every open request and grant to its end. */
void sim_client_quiesce(sim_world *w);
/**
 * sim_public places caps in powerboxd's CSpace (the first in want when that
 * is a reservation), hands the frame to the core and checks the cleanup
 * precedence of the reply. Returns the reply (static storage, valid until
 * the next call) or NULL after a fail-stop.
 */
const pbx_core_out *sim_public(sim_world *w, uint32_t badge,
                               const uint8_t *frame, size_t len,
                               const sim_cap *caps, size_t ncaps,
                               uint32_t want);

/* ---- sim_check.c -------------------------------------------------------- */

/** sim_check_step checks every per-step invariant. */
void sim_check_step(sim_world *w);
/** sim_check_quiescent checks the invariants of an idle, healed world. */
void sim_check_quiescent(sim_world *w);
/** sim_check_terminal checks request i as its decision becomes visible. */
void sim_check_terminal(sim_world *w, uint32_t i, const char *where);
/** sim_check_outcome checks the evidence behind request i's outcome. */
void sim_check_outcome(sim_world *w, uint32_t i, const pbx_ipc_decision *d);
/** sim_alias_owed reports whether request i (generation gen) holds a
 * published, undelivered runtime-reply approval: its alias stays until
 * delivered (vfsd's RETIRE revokes it) even when its grant ends. */
bool sim_alias_owed(const sim_world *w, uint32_t i, uint32_t gen);
/** sim_check_cleanup checks that every grant in cleanup retires within
 * the bound once its routes answer (once per step). */
void sim_check_cleanup(sim_world *w);
/** sim_check_ledger checks the capability ledger. */
void sim_check_ledger(sim_world *w);
/**
 * sim_coverage_note infers the transitions since the last call from the
 * core's record states (w->cause names the public event that ends a live
 * grant).
 */
void sim_coverage_note(sim_world *w);

/**
 * sim_after_core notes transitions and runs the per-step checks after any
 * call into the core.
 */
void sim_after_core(sim_world *w);

/* ---- sim_flight.c ------------------------------------------------------- */

/** sim_flight_add puts a reply in flight on route (and scope via_slot);
 * false when the kernel's queues are full (nothing was queued). */
bool sim_flight_add(sim_world *w, const sim_flight *f);
/** sim_flights_deliver delivers due replies in seeded random order (all
 * due ones when all is set); false after a fail-stop. */
bool sim_flights_deliver(sim_world *w, bool all);
/** sim_routes_fault starts and ends silent and hung-up stretches; false
 * after a fail-stop. */
bool sim_routes_fault(sim_world *w);
/** sim_clock advances the seeded clock and tells the core; false after a
 * fail-stop. */
bool sim_clock(sim_world *w);
/** sim_heal ends every route fault and brings late replies near. */
void sim_heal(sim_world *w);
/** sim_route_gone reports whether peer route r is hung up now. */
bool sim_route_gone(const sim_world *w, uint32_t r);
/** sim_disturb marks route r as possibly slow to answer until step. */
void sim_disturb(sim_world *w, uint32_t r, uint64_t until);

/* ---- sim_calls.c -------------------------------------------------------- */

/** sim_call_class returns the deadline class of op sent on route. */
uint32_t sim_call_class(uint32_t route, uint32_t op);
/** sim_call_sent records a call the peer received (seq from the frame). */
void sim_call_sent(sim_world *w, const pbx_core_call *c, uint32_t route,
                   const pbx_ipc_frame *f);
/** sim_call_match returns the open call a reply would answer (judged
 * from the bytes as delivered), or SIM_NIL. */
uint32_t sim_call_match(const sim_world *w, const sim_flight *f);
/** sim_call_answered ends call k after the core accepted its reply f
 * and records whether f was that call's exact reply. */
void sim_call_answered(sim_world *w, uint32_t k, const sim_flight *f);
/** sim_calls_expire ends every open call whose deadline is at or before
 * the clock (after the core heard it); returns how many. */
uint32_t sim_calls_expire(sim_world *w);
/** sim_routes_before notes which grant records are LIVE (live[g]). */
void sim_routes_before(sim_world *w, uint8_t *live);
/** sim_routes_lost checks route r's loss ended exactly the grants it
 * must, with the loss's reason (live: sim_routes_before's note). */
void sim_routes_lost(sim_world *w, uint32_t r, const uint8_t *live);
/** sim_routes_before_reqs notes which request records hold (or are
 * about to be told) an object vfsd minted: resolved and in flight, or
 * with RESOLVE outstanding (held[i]). */
void sim_routes_before_reqs(sim_world *w, uint8_t *held);
/** sim_routes_lost_reqs checks a lost vfsd (r) ended every request noted
 * in held DENIED with reason PROVIDER_LOST, so none is ever approved with
 * a dead incarnation's object (issue 20, item 5). */
void sim_routes_lost_reqs(sim_world *w, uint32_t r, const uint8_t *held);
/** sim_routes_reasons checks every grant that left LIVE says why. */
void sim_routes_reasons(sim_world *w);
/** sim_routes_view checks, once a returned ttyd is owed no row, that it
 * shows every live grant whose row went out. */
void sim_routes_view(sim_world *w);

/** sim_calls_route_down ends every open call of a class on route r. */
void sim_calls_route_down(sim_world *w, uint32_t r);
/** sim_calls_check fills, follows and checks every call against the
 * core's outstanding-call records and their owners. */
void sim_calls_check(sim_world *w);
/** sim_calls_open counts open calls. */
uint32_t sim_calls_open(const sim_world *w);

/* ---- sim_inspect.c ------------------------------------------------------ */

/** sim_core_req returns the core's request record i (read only; the
 * record types and the carved pools are the core's public layout). */
static inline const pbx_core_request *sim_core_req(const sim_world *w,
                                                   uint32_t i)
{
    const pbx_core_pool_state *p = &w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS];
    return (const pbx_core_request *)(const void *)(w->core->arena +
                                                    p->offset_bytes +
                                                    (size_t)i *
                                                        p->record_size_bytes);
}

/** sim_core_grant returns the core's grant record g (read only). */
static inline const pbx_core_grant *sim_core_grant(const sim_world *w,
                                                   uint32_t g)
{
    const pbx_core_pool_state *p = &w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS];
    return (
        const pbx_core_grant *)(const void *)(w->core->arena + p->offset_bytes +
                                              (size_t)g * p->record_size_bytes);
}
/** sim_core_tslot_held reports whether core transient-slot record t holds
 * a capability, and (owner non-NULL) the request it is owned by. */
bool sim_core_tslot_held(const sim_world *w, uint32_t t, uint32_t *slot,
                         uint32_t *owner);
/** sim_core_bucket returns the correlation bucket of a job in pool. */
uint32_t sim_core_bucket(const sim_world *w, pbx_bootstrap_pool pool,
                         uint64_t job_id, uint32_t job_gen);
/** sim_core_call reads the core's call record o into *out. */
void sim_core_call(const sim_world *w, uint32_t o, sim_call_view *out);
/** sim_core_calls_view reads every call record into out (SIM_CALL_MAX
 * entries; only live ones in full) and returns the pool capacity. */
uint32_t sim_core_calls_view(const sim_world *w, sim_call_view *out);
/** sim_core_public_orphans counts the public orphan records. */
uint32_t sim_core_public_orphans(const sim_world *w);
/** sim_core_call_index returns the call record a seq names, or SIM_NIL. */
uint32_t sim_core_call_index(const sim_world *w, uint32_t seq);
/** sim_core_req_call returns request i's outstanding call or SIM_NIL. */
uint32_t sim_core_req_call(const sim_world *w, uint32_t i);
/** sim_core_grant_calls returns grant g's REMOVE and RETIRE calls. */
void sim_core_grant_calls(const sim_world *w, uint32_t g, uint32_t *remove,
                          uint32_t *retire);
/** sim_core_records_hash hashes every record a peer reply could change
 * except the transient slots a refused reply's receipts may take. */
uint64_t sim_core_records_hash(const sim_world *w);
/** sim_core_prompt_retries returns the RETRY count of request i. */
uint32_t sim_core_prompt_retries(const sim_world *w, uint32_t i);

/* ---- sim_world.c -------------------------------------------------------- */

/** sim_totals sums what a campaign's seeds saw of the split-phase calls. */
typedef struct sim_totals {
    /** Replies delivered, and those the core refused as matching no
     * open call (late, duplicated, misdirected). */
    uint64_t replies, refused;
    /** Calls ended by their deadline or a lost route. */
    uint64_t timeouts;
    /** Times a request whose policy asked for a prompt waited for a prompt
     * record (the core's prompt_waits, summed). */
    uint64_t prompt_waits;
    /** The seed whose grant cleanup came nearest its bound: the steps it
     * took after its routes answered, and that seed's bound. */
    uint64_t cleanup_age, cleanup_bound;
} sim_totals;

/** sim_run runs one seed, adding to *totals; returns 0 on success, 1 on
 * a violation. */
int sim_run(uint64_t seed, const sim_opts *opts, uint64_t *coverage,
            uint64_t *hash_out, sim_totals *totals);

#endif /* PBX_SIM_H */
