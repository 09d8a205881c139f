/*
 * rt_int.h: the runtime's state and the functions its files share.
 * Private to powerboxd/runtime.
 */
#ifndef PBX_RT_INT_H
#define PBX_RT_INT_H

#include "core/pbx_core.h"
#include "powerboxd/port/pbx_port.h"
#include "powerboxd/runtime/pbx_rt.h"

/** RT_PBX1_BYTES_MAX is the PBX1 read buffer; longer objects are refused.
 * It has room for a record one byte too long, so that is refused by the
 * parser's length check rather than by the port. */
#define RT_PBX1_BYTES_MAX 512U

/** The buffer must hold a whole PBX1 record and one byte more. */
_Static_assert(RT_PBX1_BYTES_MAX > PBX_BOOTSTRAP_RECORD_BYTES,
               "the PBX1 read buffer holds a whole record");

/** The shared startup check sizes the transient range by the port's
 * receipts per receive. */
_Static_assert(PBX_PORT_RECEIPTS_MAX == PBX_BOOTSTRAP_RECEIPTS_PER_RECEIVE,
               "the startup check knows the port's receipts per receive");

/** rt_tstate is what the runtime knows about one transient slot. */
typedef enum rt_tstate {
    /** Empty and unclaimed. */
    RT_T_FREE = 0,
    /** A core reservation holding only its placeholder. */
    RT_T_RESERVED = 1,
    /** A core reservation now holding a receipt (the COMMIT scope). */
    RT_T_HELD = 2,
    /** A capability the core owns that has no reservation of its own. */
    RT_T_LOOSE = 3,
    /** A capability the runtime itself must delete (a moved send_slot, a
     * delivered alias, a receipt the core never saw) whose deletion the
     * port answered PBX_E_PORT_DELETE_AGAIN: still held, counted in
     * rt_state.doomed, retried every loop turn (rt_pending_retry). */
    RT_T_DOOMED = 4,
    /** A reservation of the runtime's (or one the core released) whose
     * release answered PBX_E_PORT_DELETE_AGAIN: still held, counted in
     * rt_state.releasing, retried every loop turn. */
    RT_T_RELEASING = 5
} rt_tstate;

/** rt_origin says where a held transient capability came from. */
typedef enum rt_origin {
    /** Nothing held. */
    RT_O_NONE = 0,
    /** Arrived with a public message. */
    RT_O_PUBLIC = 1,
    /** Arrived with a vfsd reply. */
    RT_O_VFSD = 2,
    /** Arrived with a ttyd reply. */
    RT_O_TTYD = 3,
    /** Arrived with a procd reply: procd's manage-only handle. */
    RT_O_PROCD = 4,
    /** Derived by powerboxd itself (a runtime-reply alias). */
    RT_O_LOCAL = 5
} rt_origin;

/** rt_state is the whole runtime, in static storage (no allocation). */
typedef struct rt_state {
    /** The syscall port. */
    pbx_port_ctx port;
    /** The semantic core. */
    pbx_core_ctx core;
    /** The reply to the public frame being handled. */
    pbx_core_out out;
    /** The authenticated PBX1 geometry. */
    pbx_bootstrap_geometry geo;
    /** The arena layout it implies. */
    pbx_bootstrap_layout layout;
    /** The transient slot range. */
    pbx_capabi_layout slots;
    /** The one arena, layout.arena_bytes long, mapped once. */
    uint8_t *arena;
    /** Nonzero once powerboxd created its public endpoint. */
    uint32_t public_created;
    /** Nonzero per core route once its peer hung up: nothing is sent on
     * it any more and it is no longer watched. */
    uint32_t route_down[PBX_CORE_ROUTE_COUNT];
    /** Nonzero per core route when a send found its peer gone and the
     * loop has not told the core yet (never from inside a core call). */
    uint32_t route_lost[PBX_CORE_ROUTE_COUNT];
    /** The current wait before the next core tick in milliseconds (0:
     * nothing deferred). */
    uint32_t tick_ms;
    /** When the core last stopped wanting ticks (port clock, ms), or 0
     * while it wants them. */
    uint64_t tick_idle_ms;
    /** When the next public connection becomes idle (port clock, ms),
     * or UINT64_MAX when none is open (pbx_port_clients_idle). */
    uint64_t idle_next_ms;
    /** Loop turns since the last core tick (PBX_RT_TICK_TURNS). */
    uint32_t tick_turns;
    /** Nonzero while public intake is held (pbx_core_public_ready). */
    uint32_t intake_held;
    /** A fail-stop status the runtime itself detected, or 0. */
    uint32_t fail_status;
    /** Transient slots in RT_T_DOOMED: capabilities still held whose
     * deletion is the runtime's own and is being retried. */
    uint32_t doomed;
    /** Transient slots in RT_T_RELEASING: reservations still held whose
     * release is being retried. */
    uint32_t releasing;
    /** Nonzero while staged receipts are still held because their
     * deletion answered PBX_E_PORT_DELETE_AGAIN (retried every turn;
     * receives wait meanwhile). */
    uint32_t staged_again;
    /** Nonzero once launchd's broker endpoint (slot 10) hung up and the
     * core was told (pbx_core_on_broker_lost), until a ROUTE_ATTACH
     * installs a fresh one. */
    uint32_t broker_down;
    /** Nonzero once the supervisor connection (slot 4) hung up: no route
     * is attached any more. */
    uint32_t supervisor_down;
    /** Watch bits currently set per core route. */
    uint32_t watching[PBX_CORE_ROUTE_COUNT];
    /** rt_tstate per transient index. */
    uint8_t tstate[PBX_RT_TRANSIENT_MAX];
    /** rt_origin per transient index. */
    uint8_t torigin[PBX_RT_TRANSIENT_MAX];
    /** Per transient index, a bit set while it is not RT_T_FREE (rt_tset),
     * so rt_tfree_find tests 64 indexes at a time. */
    uint64_t tbusy[(PBX_RT_TRANSIENT_MAX + 63U) / 64U];
    /** Per word of tbusy, a bit set while that word is full (all 64
     * indexes not RT_T_FREE; rt_tset keeps it), so rt_tfree_find finds
     * the lowest word with a free index in one step, whatever the range. */
    uint64_t tfull;
    /** Per transient index, nonzero while tinfo holds the port's judgment
     * of what the slot holds now (rt_judged_query; rt_tset forgets it). */
    uint8_t tjudged[PBX_RT_TRANSIENT_MAX];
    /** Nonzero per core route while rinfo holds its startup slot's
     * judgment (kept only once the loop runs; ROUTE_ATTACH forgets it). */
    uint8_t rjudged[PBX_CORE_ROUTE_COUNT];
    /** Nonzero once the service loop runs: route judgments are kept. */
    uint32_t judge_routes;
    /** The kept judgment per transient index (valid while tjudged). */
    pbx_port_slot_info tinfo[PBX_RT_TRANSIENT_MAX];
    /** The kept judgment per core route's startup slot (rjudged). */
    pbx_port_slot_info rinfo[PBX_CORE_ROUTE_COUNT];
    /** Receive buffer for public frames. */
    uint8_t msg[PBX_CORE_FRAME_BYTES_MAX];
    /** Receive buffer for peer replies. */
    uint8_t reply[PBX_CORE_FRAME_BYTES_MAX];
    /** PBX1 read buffer. */
    uint8_t pbx1[RT_PBX1_BYTES_MAX];
    /** The error behind a startup refusal, when one says more than its
     * exit status (a PBX1 check, an inventory check), else PBX_OK. */
    pbx_err refused_err;
    /** The startup slot a refusal concerns, or -1. */
    int32_t refused_slot;
    /** This start's incarnation (--incarnation N, else 1): the prefix of
     * every request and grant id the log writes (rt_log.c). */
    uint32_t incarnation;
} rt_state;

/** rt_ops is the core's effect table over the port; user is rt_state. */
extern const pbx_core_ops rt_ops;

/**
 * rt_identity is the core's identity observation (pbx_core_set_identity);
 * user is rt_state. It returns the identity the kernel vouches for the
 * object behind slot (pbx_port_slot_identity: on Linux the socket's inode,
 * which the reference vfsd names a scope by), or 0 when the port reports
 * none. It changes nothing.
 */
uint64_t rt_identity(void *user, uint32_t slot);

/** RT_ARGS_HELP is rt_args' answer to -h or --help. */
#define RT_ARGS_HELP 1U

/**
 * rt_args judges the command line: RT_ARGS_HELP for exactly "-h" or
 * "--help", 0 for the public endpoint's name (the last argument, not
 * empty, not beginning with '-') alone or after "--incarnation N" (N
 * decimal, 1 to UINT32_MAX), else PBX_RT_EXIT_ARGS. *incarnation is set
 * to N, to 1 when the option is absent, or to 0 when N is malformed.
 */
uint8_t rt_args(const pbx_port_start *start, uint32_t *incarnation);

/**
 * rt_startup runs every startup check in order and sends the readiness
 * report. Returns 0, or the pbx_rt_exit status of the first refusal.
 */
uint8_t rt_startup(rt_state *s, const pbx_port_start *start);

/** rt_loop runs the service until a fail-stop; returns its exit status. */
uint8_t rt_loop(rt_state *s);

/**
 * rt_observe queries slot through the port and describes it as capabi
 * sees it: kind, rights (the kernel's, or derived on Linux) and
 * provenance (from what the runtime knows of the slot).
 */
void rt_observe(rt_state *s, uint32_t slot, pbx_capabi_observed *out);

/**
 * rt_rights_at returns the rights of the capability info describes as if
 * it sat in slot: the kernel's own record when the port has one (EriX),
 * else derived from kind and state the way rt_observe derives them for
 * that slot (Linux), so a route staged anywhere is judged as its slot.
 */
uint32_t rt_rights_at(const pbx_port_slot_info *info, uint32_t slot);

/**
 * rt_route_down tells the core once that core route r (below
 * PBX_CORE_ROUTE_COUNT) lost its peer: the route is no longer watched
 * nor sent on, and its outstanding calls end. Returns the core's answer.
 */
pbx_err rt_route_down(rt_state *s, uint32_t r);

/**
 * rt_broker_lost tells the core once that launchd's broker endpoint hung
 * up (pbx_core_on_broker_lost) and logs it; a later call before a fresh
 * broker is attached does nothing.
 */
pbx_err rt_broker_lost(rt_state *s);

/**
 * rt_attach takes one message waiting on the supervisor connection (or,
 * with closed set, notes once that the connection hung up): a
 * ROUTE_ATTACH is judged exactly as the startup inventory judges the slot
 * it replaces, then by its peer's credentials; accepted, the old route is
 * replaced, its down state cleared and the core told
 * (pbx_core_on_route_up). Anything else is refused with every descriptor
 * it carried deleted. Either way one answer datagram goes back on slot 4
 * and one log line is written. Returns a fail-stop error or PBX_OK.
 */
pbx_err rt_attach(rt_state *s, bool closed);

/**
 * rt_log_attach writes the one line of an attach: route (a
 * pbx_capabi_route value, or anything else for none), the peer pid it
 * named, and accepted (status PBX_OK) or refused with the error's name.
 */
void rt_log_attach(uint32_t route, uint32_t pid, pbx_err status);

/** rt_log_note writes one fixed line of the runtime's own (text ends
 * without a newline; one is added). */
void rt_log_note(const char *text);

/** rt_route_slot_of returns the startup slot of core route, or
 * PBX_PORT_SLOT_NONE. */
int32_t rt_route_slot_of(uint32_t route);

/**
 * rt_tset records state for transient index (below the range's count):
 * the free bitmap follows, and the slot's kept judgment is forgotten,
 * because every change of what the slot holds is followed by a state
 * write (rt_tslot.c says why a judgment may be kept until then).
 */
void rt_tset(rt_state *s, uint32_t index, rt_tstate state);

/**
 * rt_tfree_find stores the lowest RT_T_FREE transient index in *index and
 * returns true, or returns false when every index is in use. It tests one
 * bitmap word of 64 indexes per step and changes nothing.
 */
bool rt_tfree_find(const rt_state *s, uint32_t *index);

/**
 * rt_judged_query describes slot as pbx_port_slot_query does, through the
 * port only when the slot's judgment is not kept: a transient slot is
 * judged once per content (at receipt), a core route's startup slot once
 * per attached route while the loop runs. Returns the port's error.
 */
pbx_err rt_judged_query(rt_state *s, uint32_t slot, pbx_port_slot_info *info);

/**
 * rt_judged_identity answers rt_identity from slot's kept judgment, with no
 * port call: true with the identity in *identity (0 for an empty slot or a
 * placeholder) when the judgment is kept and says it (the port set
 * PBX_PORT_INFO_IDENTITY, or the kind has none); false, *identity
 * untouched, when the port must be asked (no kept judgment, or a kind
 * whose identity the query did not vouch for). Changes nothing.
 */
bool rt_judged_identity(rt_state *s, uint32_t slot, uint64_t *identity);

/** rt_judged_forget drops the kept judgment of slot (a ROUTE_ATTACH
 * replaced the route in it); harmless when none is kept. */
void rt_judged_forget(rt_state *s, uint32_t slot);

/**
 * rt_loose_place moves staged receipt index into a fresh transient slot
 * recorded as LOOSE with origin, storing the slot in *slot. Returns false
 * when no transient slot is free or the move fails.
 */
bool rt_loose_place(rt_state *s, uint32_t index, rt_origin origin,
                    uint32_t *slot);

/**
 * rt_commit_place moves staged receipt 0 into dest when dest is a core
 * reservation holding only its placeholder. Returns false otherwise.
 */
bool rt_commit_place(rt_state *s, uint32_t dest);

/**
 * rt_drop deletes the capability in transient slot with proof (a HELD
 * reservation gets its placeholder back, a LOOSE slot becomes free).
 */
pbx_core_delete rt_drop(rt_state *s, uint32_t slot);

/**
 * rt_dispose deletes a LOOSE transient capability whose deletion the
 * runtime owns (the core already forgot it, or never saw it). On
 * PBX_E_PORT_DELETE_AGAIN the slot becomes RT_T_DOOMED, counted, and is
 * retried by rt_pending_retry; any other failure, or a slot that is not
 * LOOSE, is a permanent rejection: fail-stop 65.
 */
void rt_dispose(rt_state *s, uint32_t slot);

/**
 * rt_staged_drop deletes every staged receipt (pbx_port_receipts_delete).
 * PBX_E_PORT_DELETE_AGAIN sets staged_again (the receipts stay staged and
 * are retried by rt_pending_retry); another failure is fail-stop 65.
 */
void rt_staged_drop(rt_state *s);

/**
 * rt_pending_retry retries, once each, the runtime's own deletions still
 * pending: the staged receipts, then one pass over the transient range
 * (at most PBX_RT_TRANSIENT_MAX slots) for DOOMED and RELEASING slots.
 * The loop calls it every turn.
 */
void rt_pending_retry(rt_state *s);

/** rt_pending says whether any of the runtime's own deletions is still
 * pending, so the loop never blocks without a bounded wait meanwhile. */
bool rt_pending(const rt_state *s);

/**
 * rt_log_write writes one whole line (len bytes, ending in a newline) to
 * the port's diagnostic output without blocking. A line the port could
 * not take at once is dropped and counted; the next line written is
 * preceded by "event=log-dropped lines=N". Returns whether line went out.
 */
bool rt_log_write(const uint8_t *line, uint32_t len);

/**
 * rt_log_decision logs the published decision whose wake frame (len
 * bytes, the request's identity in its header) the core is about to
 * send: one "event=decision" line per request generation, however often
 * the wake is retried. Anything that is not such a frame is ignored.
 */
void rt_log_decision(rt_state *s, const uint8_t *frame, size_t len);

/**
 * rt_log_grant_end logs the end of the approved grant whose RETIRE
 * frame (len bytes, the grant's identity in its header) the core is
 * about to send to vfsd: one "event=grant-end" line per grant
 * generation. Any other frame, and the RETIRE of a grant that was never
 * approved, is ignored.
 */
void rt_log_grant_end(rt_state *s, const uint8_t *frame, size_t len);

/**
 * rt_log_refused writes the one line of a startup refusal: what was
 * wrong (the text of status, a pbx_rt_exit value), the startup slot it
 * concerns when slot >= 0, the error behind it when detail is not
 * PBX_OK, and the exit status.
 */
void rt_log_refused(uint8_t status, pbx_err detail, int32_t slot);

/** rt_fail records a runtime fail-stop status, a pbx_core_exit or
 * pbx_rt_exit value (first one wins). */
void rt_fail(rt_state *s, uint32_t status);

/**
 * rt_usage_answer answers one USAGE query that arrived on the supervisor
 * connection (rt_attach hands it every frame whose magic is the query's,
 * pbx_capabi_usage_is_query): len bytes at buf (borrowed for the call)
 * with receipts capabilities staged. A well-formed query without
 * capabilities is answered with the live counts (every arena pool's
 * records in use and capacity, the open descriptors up to the end of the
 * reservable range, the log lines dropped since start); anything else
 * with its refusal, every staged capability deleted first. Either way
 * one report goes back on slot 4 without blocking.
 */
void rt_usage_answer(rt_state *s, const uint8_t *buf, uint32_t len,
                     uint32_t receipts);

/** rt_log_dropped_total returns how many log lines were dropped since
 * start (saturating at UINT32_MAX); unlike the pending count that the
 * next written line reports, it never goes back to 0. */
uint32_t rt_log_dropped_total(void);

#endif /* PBX_RT_INT_H */
