/*
 * pbx_peer_track.h: launchd's pure bookkeeping of the requests it relayed
 * for one control connection. Every request is begun through launchd's
 * broker, so when the program behind a control connection hangs up only
 * launchd can end what it left waiting: the table names, by exact index
 * and generation, each request whose BEGIN it relayed and whose terminal
 * DECISION reply has not yet gone back, so that each can be cancelled.
 */
#ifndef PBX_PEER_TRACK_H
#define PBX_PEER_TRACK_H

#include "ipc/pbx_ipc.h"

/** PBX_PEER_TRACK_MAX bounds the open requests of one control connection;
 * a BEGIN beyond it is refused before it is relayed. */
#define PBX_PEER_TRACK_MAX 32U

/** pbx_peer_track is one connection's caller-allocated table; plain data. */
typedef struct pbx_peer_track {
    /** ids holds the open requests, the first count of them in use. */
    pbx_ipc_id ids[PBX_PEER_TRACK_MAX];
    /** count is how many entries of ids are in use. */
    uint32_t count;
} pbx_peer_track;

/** pbx_peer_track_init empties t (old contents are ignored). */
void pbx_peer_track_init(pbx_peer_track *t);

/** pbx_peer_track_full reports whether t can take no further request, so
 * the caller must refuse a BEGIN (with PBX_PEER_E_BUSY) instead of
 * relaying it. */
bool pbx_peer_track_full(const pbx_peer_track *t);

/**
 * pbx_peer_track_relayed updates t with one relayed call: req is the frame
 * the connection sent, rep powerboxd's decoded reply (both borrowed for the
 * call). A status-zero BEGIN reply adds the new request id (ignored when
 * t is full or already holds it); a terminal DECISION reply (status zero
 * and not PENDING), or one saying the request is gone (UNKNOWN, STALE, or
 * STATE: already delivered), removes req's id. Every other call leaves t
 * as it is. Returns true when t changed.
 */
bool pbx_peer_track_relayed(pbx_peer_track *t, const pbx_ipc_frame *req,
                            const pbx_ipc_frame *rep);

/** pbx_peer_track_drop removes id from t; returns whether it was there. */
bool pbx_peer_track_drop(pbx_peer_track *t, pbx_ipc_id id);

#endif /* PBX_PEER_TRACK_H */
