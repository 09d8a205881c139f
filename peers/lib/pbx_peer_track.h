/*
 * pbx_peer_track.h: launchd's pure bookkeeping of what one control
 * connection owns. Every request is begun through launchd's broker, so
 * powerboxd sees every request and grant as the broker's: only launchd can
 * tell which program began which. The table names, by exact index and
 * generation, each request whose BEGIN it relayed for the connection and
 * whose terminal DECISION reply has not yet gone back (with the job and
 * session the BEGIN claimed), and each grant the connection received in an
 * APPROVED DECISION that has not ended yet. launchd relays a frame that
 * names a request or grant only when this table holds it, and when the
 * program hangs up it cancels each request still open.
 */
#ifndef PBX_PEER_TRACK_H
#define PBX_PEER_TRACK_H

#include "ipc/pbx_ipc.h"

/** PBX_PEER_TRACK_MAX bounds the open requests of one control connection;
 * a BEGIN beyond it is refused before it is relayed. */
#define PBX_PEER_TRACK_MAX 32U

/** PBX_PEER_TRACK_GRANTS_MAX bounds the live grants one control connection
 * holds; while it is reached a DECISION is refused before it is relayed,
 * so an approval can always be recorded. */
#define PBX_PEER_TRACK_GRANTS_MAX 32U

/**
 * pbx_peer_track_wait is where a request's DECISION stands: launchd
 * answers a DECISION only when it is final, holding the caller meanwhile.
 */
typedef enum pbx_peer_track_wait {
    /** No DECISION from the caller is outstanding. */
    PBX_PEER_TRACK_IDLE = 0,
    /** The caller's DECISION is at powerboxd. */
    PBX_PEER_TRACK_ASKED = 1,
    /** powerboxd said PENDING: the caller is held until a WAKE. */
    PBX_PEER_TRACK_HELD = 2,
    /** Held, and launchd's own DECISION for it is at powerboxd. */
    PBX_PEER_TRACK_REASK = 3
} pbx_peer_track_wait;

/** pbx_peer_track_req is one open request of a connection; plain data. */
typedef struct pbx_peer_track_req {
    /** id is the exact request identity powerboxd's BEGIN reply named. */
    pbx_ipc_id id;
    /** job_id is the job the BEGIN named (bound by launchd). */
    uint64_t job_id;
    /** session is the session the BEGIN claimed. */
    uint64_t session;
    /** since_ms is when the hold began or was last re-asked. */
    uint64_t since_ms;
    /** job_gen is the job generation the BEGIN named. */
    uint32_t job_gen;
    /** held_seq is the held caller's DECISION seq (HELD and REASK). */
    uint32_t held_seq;
    /** wait is a pbx_peer_track_wait. */
    uint8_t wait;
    /** woken is set by a WAKE that found no held caller to answer yet. */
    bool woken;
} pbx_peer_track_req;

/** pbx_peer_track is one connection's caller-allocated table; plain data. */
typedef struct pbx_peer_track {
    /** reqs holds the open requests, the first count of them in use. */
    pbx_peer_track_req reqs[PBX_PEER_TRACK_MAX];
    /** count is how many entries of reqs are in use. */
    uint32_t count;
    /** grants holds the live grants, the first grant_count in use. */
    pbx_ipc_id grants[PBX_PEER_TRACK_GRANTS_MAX];
    /** grant_count is how many entries of grants are in use. */
    uint32_t grant_count;
    /** bound says the connection is a launched job's (job_id, job_gen). */
    bool bound;
    /** job_id is the bound job's id. */
    uint64_t job_id;
    /** job_gen is the bound job's generation. */
    uint32_t job_gen;
} pbx_peer_track;

/**
 * pbx_peer_track_wake_action is what a WAKE for a request means to the
 * connection that owns it.
 */
typedef enum pbx_peer_track_wake_action {
    /** The connection does not hold the request. */
    PBX_PEER_TRACK_WAKE_NONE = 0,
    /** A caller is held: ask DECISION again now (state is now REASK). */
    PBX_PEER_TRACK_WAKE_ASK = 1,
    /** Nobody is held yet (or a re-ask is out): remembered for later. */
    PBX_PEER_TRACK_WAKE_KEPT = 2
} pbx_peer_track_wake_action;

/** pbx_peer_track_init empties t (old contents are ignored). */
void pbx_peer_track_init(pbx_peer_track *t);

/** pbx_peer_track_full reports whether t can take no further request, so
 * the caller must refuse a BEGIN (with PBX_PEER_E_BUSY) instead of
 * relaying it. */
bool pbx_peer_track_full(const pbx_peer_track *t);

/** pbx_peer_track_bind marks t as the connection of launched job
 * job_id:job_gen (job_gen nonzero); only such a connection may BEGIN. */
void pbx_peer_track_bind(pbx_peer_track *t, uint64_t job_id, uint32_t job_gen);

/**
 * pbx_peer_track_admit decides whether the request frame req (borrowed),
 * received on t's connection, may be relayed to powerboxd. Returns 0 to
 * relay it, or the status launchd answers itself: PBX_PEER_E_NOT_YOURS
 * for a BEGIN on an unbound (control) connection, an EXPIRE on a bound
 * (job) connection, when SELECTOR, COMMIT, DECISION or the exact request
 * CANCEL names a request t does not hold, when CONSUME or the grant CANCEL
 * names a grant t does not hold, or when a generation-zero CANCEL names a
 * job (id and generation) other than a bound t's own or a job and session
 * that no request of t named; PBX_PEER_E_BUSY for a BEGIN while t holds
 * PBX_PEER_TRACK_MAX requests, a DECISION while it holds
 * PBX_PEER_TRACK_GRANTS_MAX grants, or a DECISION for a request whose
 * previous DECISION is still outstanding or held; PBX_PEER_E_ROUTE for an
 * operation that is not a public request; or the ipc decoder's error for a
 * BEGIN, CANCEL or CONSUME body that does not decode. Pure: t is not
 * changed.
 */
uint16_t pbx_peer_track_admit(const pbx_peer_track *t,
                              const pbx_ipc_frame *req);

/**
 * pbx_peer_track_relayed updates t with one relayed call: req is the frame
 * the connection sent, rep powerboxd's decoded reply (both borrowed for the
 * call). A status-zero BEGIN reply adds the new request id with the job and
 * session its BEGIN claimed (ignored when t is full or already holds it).
 * A terminal DECISION reply (status zero and not PENDING), or one saying
 * the request is gone (UNKNOWN, STALE, or STATE: already delivered),
 * removes req's id; an APPROVED one adds the grant it names (ignored when
 * the grant table is full or already holds it). A CONSUME or grant CANCEL
 * that was accepted, or answered UNKNOWN, STALE or STATE (the grant ended
 * or is ending), removes the grant. Every other call leaves t as it is.
 * Returns true when t changed.
 */
bool pbx_peer_track_relayed(pbx_peer_track *t, const pbx_ipc_frame *req,
                            const pbx_ipc_frame *rep);

/** pbx_peer_track_drop removes request id from t; returns whether it was
 * there. */
bool pbx_peer_track_drop(pbx_peer_track *t, pbx_ipc_id id);

/** pbx_peer_track_owns reports whether t holds request id. */
bool pbx_peer_track_owns(const pbx_peer_track *t, pbx_ipc_id id);

/** pbx_peer_track_holds reports whether t holds grant id. */
bool pbx_peer_track_holds(const pbx_peer_track *t, pbx_ipc_id grant);

/** pbx_peer_track_get returns t's entry for request id (borrowed from t,
 * valid until t changes), or NULL when t does not hold it. */
const pbx_peer_track_req *pbx_peer_track_get(const pbx_peer_track *t,
                                             pbx_ipc_id id);

/** pbx_peer_track_asked notes that the caller's DECISION for id went to
 * powerboxd (IDLE -> ASKED); returns false when id is absent or not
 * IDLE. */
bool pbx_peer_track_asked(pbx_peer_track *t, pbx_ipc_id id);

/**
 * pbx_peer_track_hold applies a PENDING answer for id: from ASKED the
 * caller's DECISION (seq) is held from now_ms; from REASK the caller stays
 * held (seq ignored). Returns true when a WAKE came meanwhile (woken is
 * cleared and the state is REASK): launchd must ask again at once. Returns
 * false otherwise, also when id is absent or in another state.
 */
bool pbx_peer_track_hold(pbx_peer_track *t, pbx_ipc_id id, uint32_t seq,
                         uint64_t now_ms);

/**
 * pbx_peer_track_wake applies a WAKE for id: when the caller is HELD the
 * state becomes REASK (since now_ms) and the answer is ASK; when id is
 * held otherwise (IDLE, ASKED or REASK) woken is set and the answer is
 * KEPT; NONE when t does not hold id.
 */
pbx_peer_track_wake_action pbx_peer_track_wake(pbx_peer_track *t, pbx_ipc_id id,
                                               uint64_t now_ms);

/**
 * pbx_peer_track_release ends the wait of id (any state -> IDLE) and
 * stores the held caller's seq in *seq when one was held (HELD or REASK).
 * Returns whether a caller was held.
 */
bool pbx_peer_track_release(pbx_peer_track *t, pbx_ipc_id id, uint32_t *seq);

/**
 * pbx_peer_track_due finds held requests not re-asked for every_ms (HELD,
 * since_ms + every_ms <= now_ms), moves each to REASK since now_ms and
 * stores its id in out (at most max). Returns how many were stored.
 */
uint32_t pbx_peer_track_due(pbx_peer_track *t, uint64_t now_ms,
                            uint64_t every_ms, pbx_ipc_id *out, uint32_t max);

/** pbx_peer_track_waiting reports whether some request of t has a
 * DECISION outstanding or held (any state but IDLE). */
bool pbx_peer_track_waiting(const pbx_peer_track *t);

#endif /* PBX_PEER_TRACK_H */
