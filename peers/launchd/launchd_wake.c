/*
 * launchd_wake.c: what launchd does on a WAKE and on its timers: a held
 * caller's decision is asked for again, an orphan's collected; calls
 * unanswered for --call-ms release their callers; held DECISIONs and
 * orphans are re-asked every LAUNCHD_REASK_MS as a safety net; idle
 * control connections are dropped; ending jobs are followed.
 */
#include <errno.h>
#include <string.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

static pbx_peer_msg g_in;

/* Acts on a WAKE for request id: a held caller gets its decision asked
 * for; an orphan's is collected; otherwise it is remembered. */
static void launchd_woken(launchd_srv *srv, pbx_ipc_id id)
{
    launchd_orphan *o = launchd_orphan_find(srv, id);
    if (o != NULL) {
        if (o->asking || !o->cancelled) {
            o->woken = true;
        } else {
            o->asking =
                launchd_ask(srv, LAUNCHD_CALL_COLLECT, LAUNCHD_CONNS_CAP, id);
        }
        return;
    }
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        launchd_conn *c = &srv->conns[i];
        if (c->fd < 0) {
            continue;
        }
        /* A parked DECISION goes to powerboxd now, its only one. */
        if (c->nparks != 0U && launchd_park_woken(srv, i, id)) {
            return;
        }
        pbx_peer_track_wake_action a =
            pbx_peer_track_wake(&c->track, id, srv->now);
        if (a == PBX_PEER_TRACK_WAKE_ASK &&
            !launchd_ask(srv, LAUNCHD_CALL_REASK, i, id)) {
            /* Not sent: the fallback asks again later. */
            (void)pbx_peer_track_hold(&c->track, id, 0U, srv->now);
        }
        if (a != PBX_PEER_TRACK_WAKE_NONE) {
            return;
        }
    }
    pbx_peer_log("launchd", "wake for request %u.%u: no connection holds it",
                 id.index, id.gen);
}

/* Receives one WAKE datagram; false on a fatal receive error. */
static bool launchd_wake_one(launchd_srv *srv)
{
    int r = launchd_recv(srv->wake, &g_in);
    if (r == 1) {
        pbx_peer_log("launchd", "empty datagram ignored");
        return true;
    }
    if (r != 0) {
        return false;
    }
    pbx_ipc_wake w;
    pbx_err e = pbx_ipc_frame_decode(g_in.buf, g_in.len, (uint16_t)g_in.nfds,
                                     &g_in.frame);
    if (e == PBX_OK) {
        e = pbx_ipc_wake_decode(&g_in.frame, &w);
    }
    if (g_in.nfds != 0U) {
        pbx_peer_log("launchd", "WAKE carried %zu descriptor(s); deleted",
                     g_in.nfds);
        pbx_peer_io_close_all(g_in.fds, g_in.nfds);
        e = e == PBX_OK ? PBX_E_IPC_CAP_PARTITION : e;
    }
    if (e != PBX_OK) {
        pbx_peer_log("launchd", "malformed WAKE refused: %s", pbx_err_text(e));
        return true;
    }
    pbx_ipc_id id = g_in.frame.request;
    pbx_peer_log("launchd", "wake request %u.%u job %llu.%u", id.index, id.gen,
                 (unsigned long long)w.job_id, w.job_gen);
    if (srv->log != NULL) {
        (void)fprintf(srv->log, "wake request %u.%u job %llu.%u\n", id.index,
                      id.gen, (unsigned long long)w.job_id, w.job_gen);
        (void)fflush(srv->log);
    }
    launchd_woken(srv, id);
    return true;
}

void launchd_wake_input(launchd_srv *srv)
{
    for (int i = 0; i < 64; i++) {
        if (!launchd_wake_one(srv)) {
            if (errno != EAGAIN && errno != EMSGSIZE) {
                pbx_peer_log("launchd", "wake receive failed: %s",
                             strerror(errno));
            }
            return;
        }
    }
}

/* A call unanswered within call-ms: its caller is answered ROUTE and
 * released; the call stays to match a late reply, until it is stale. */
static void launchd_call_timer(launchd_srv *srv, launchd_call *k)
{
    if (k->detached) {
        if (srv->now >= k->deadline_ms + LAUNCHD_STALE_CALL_MS) {
            pbx_peer_log("launchd",
                         "call op %s request %u.%u seq %u "
                         "never answered; forgotten",
                         pbx_ipc_op_name(k->op), k->id.index, k->id.gen,
                         k->seq);
            k->used = false;
            if (k->kind == LAUNCHD_CALL_EXPIRE) {
                /* Only now may the job id be launched again. */
                launchd_job_finish(srv, k->conn, "never answered");
            }
        }
        return;
    }
    k->detached = true;
    pbx_peer_log("launchd",
                 "call op %s request %u.%u unanswered after "
                 "%u ms",
                 pbx_ipc_op_name(k->op), k->id.index, k->id.gen, srv->call_ms);
    if (k->kind == LAUNCHD_CALL_EXPIRE) {
        /* The launcher gets EXIT from the jobs' timer; the id stays
         * taken until this call is answered or forgotten. */
        return;
    }
    launchd_orphan *o = launchd_orphan_find(srv, k->id);
    if (k->kind == LAUNCHD_CALL_COLLECT && o != NULL) {
        o->asking = false;
    }
    if (!launchd_conn_live(srv, k->conn, k->conn_gen)) {
        return;
    }
    launchd_conn *c = &srv->conns[k->conn];
    c->calls -= c->calls > 0U ? 1U : 0U;
    c->begins -=
        k->op == (uint16_t)PBX_IPC_OP_BEGIN && c->begins > 0U ? 1U : 0U;
    if (k->kind == LAUNCHD_CALL_REASK) {
        /* Back to held: the fallback or a WAKE asks again. */
        if (pbx_peer_track_hold(&c->track, k->id, 0U, srv->now)) {
            (void)launchd_ask(srv, LAUNCHD_CALL_REASK, k->conn, k->id);
        }
        return;
    }
    uint32_t seq = 0;
    (void)pbx_peer_track_release(&c->track, k->id, &seq);
    uint8_t out[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    if (k->kind == LAUNCHD_CALL_RELAY &&
        pbx_ipc_status_reply_encode(k->op, k->id, PBX_E_PEER_ROUTE, out,
                                    sizeof(out), &n) == PBX_OK) {
        (void)launchd_reply(srv, k->conn, out, n, k->caller_seq, -1);
    }
}

/* The fallback: held DECISIONs and orphans not asked for LAUNCHD_REASK_MS
 * are asked again, in case a WAKE was lost. */
static void launchd_fallback(launchd_srv *srv)
{
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        launchd_conn *c = &srv->conns[i];
        if (c->fd >= 0 && c->nparks != 0U) {
            launchd_park_timer(srv, i);
        }
        pbx_ipc_id due[PBX_PEER_TRACK_MAX];
        uint32_t n = c->fd < 0 ? 0U
                               : pbx_peer_track_due(&c->track, srv->now,
                                                    LAUNCHD_REASK_MS, due,
                                                    PBX_PEER_TRACK_MAX);
        for (uint32_t j = 0; j < n; j++) {
            if (!launchd_ask(srv, LAUNCHD_CALL_REASK, i, due[j])) {
                (void)pbx_peer_track_hold(&c->track, due[j], 0U, srv->now);
            }
        }
    }
    for (uint32_t i = 0; i < LAUNCHD_ORPHANS_MAX; i++) {
        launchd_orphan *o = &srv->orphans[i];
        if (o->used && !o->asking &&
            o->since_ms + LAUNCHD_REASK_MS <= srv->now) {
            o->since_ms = srv->now;
            o->cancelled = true;
            o->asking = launchd_ask(srv, LAUNCHD_CALL_COLLECT,
                                    LAUNCHD_CONNS_CAP, o->id);
        }
    }
}

bool launchd_evictable(const launchd_srv *srv, uint32_t ci)
{
    const launchd_conn *c = &srv->conns[ci];
    return c->fd >= 0 && !c->job_conn && c->calls == 0U &&
           !pbx_peer_track_waiting(&c->track) && !launchd_is_launcher(srv, ci);
}

/* Drops control connections idle for idle-ms: no accepted LAUNCH or
 * EXPIRE for that long (a refused frame does not count), and evictable
 * (nothing outstanding, no live job). */
static void launchd_idle(launchd_srv *srv)
{
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        if (launchd_evictable(srv, i) &&
            srv->conns[i].last_ms + srv->idle_ms <= srv->now) {
            char why[64];
            (void)snprintf(why, sizeof(why), "idle for %u ms", srv->idle_ms);
            launchd_conn_close(srv, i, why);
        }
    }
}

void launchd_timers(launchd_srv *srv)
{
    for (uint32_t i = 0; i < LAUNCHD_CALLS_MAX; i++) {
        launchd_call *k = &srv->calls[i];
        if (k->used && srv->now >= k->deadline_ms) {
            launchd_call_timer(srv, k);
        }
    }
    launchd_fallback(srv);
    launchd_jobs_timer(srv);
    launchd_idle(srv);
}
