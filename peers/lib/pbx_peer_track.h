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

/** pbx_peer_track_req is one open request of a connection; plain data. */
typedef struct pbx_peer_track_req {
    /** id is the exact request identity powerboxd's BEGIN reply named. */
    pbx_ipc_id id;
    /** job_id is the job the BEGIN claimed. */
    uint64_t job_id;
    /** session is the session the BEGIN claimed. */
    uint64_t session;
    /** job_gen is the job generation the BEGIN claimed. */
    uint32_t job_gen;
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
} pbx_peer_track;

/** pbx_peer_track_init empties t (old contents are ignored). */
void pbx_peer_track_init(pbx_peer_track *t);

/** pbx_peer_track_full reports whether t can take no further request, so
 * the caller must refuse a BEGIN (with PBX_PEER_E_BUSY) instead of
 * relaying it. */
bool pbx_peer_track_full(const pbx_peer_track *t);

/**
 * pbx_peer_track_admit decides whether the request frame req (borrowed),
 * received on t's connection, may be relayed to powerboxd. Returns 0 to
 * relay it, or the status launchd answers itself: PBX_PEER_E_NOT_YOURS
 * when SELECTOR, COMMIT, DECISION or the exact request CANCEL names a
 * request t does not hold, when CONSUME or the grant CANCEL names a grant
 * t does not hold, or when a generation-zero CANCEL names a job (id and
 * generation) and session that no request of t claimed; PBX_PEER_E_BUSY
 * for a BEGIN while t holds PBX_PEER_TRACK_MAX requests or a DECISION
 * while it holds PBX_PEER_TRACK_GRANTS_MAX grants; PBX_PEER_E_ROUTE for an
 * operation that is not a public request; or the ipc decoder's error for a
 * BEGIN, CANCEL or CONSUME body that does not decode. EXPIRE is launchd's
 * own operation and always admitted. Pure: t is not changed.
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

#endif /* PBX_PEER_TRACK_H */
