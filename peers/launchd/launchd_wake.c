/*
 * launchd_wake.c: what launchd does on a WAKE and on its timers: a held
 * caller's decision is asked for again, an orphan's collected; calls
 * unanswered for --call-ms release their callers; held DECISIONs and
 * orphans are re-asked every LAUNCHD_REASK_MS as a safety net; idle
 * control connections are dropped; ending jobs are followed. Each
 * deadline is one handle in srv->timer (launchd_timer.c), so a wake-up
 * runs only what is due.
 */
#include <errno.h>
#include <string.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

static pbx_peer_msg g_in;

/* The hint slot of request id. */
static launchd_hint *launchd_hint_of(launchd_srv *srv, pbx_ipc_id id)
{
    uint32_t h = (id.index * 2654435761U) ^ id.gen;
    return &srv->hints[(h >> 8) % LAUNCHD_HINTS];
}

void launchd_wake_hint(launchd_srv *srv, uint32_t ci, pbx_ipc_id id)
{
    if (ci < LAUNCHD_CONNS_CAP) {
        *launchd_hint_of(srv, id) = (launchd_hint){id, ci, srv->conns[ci].gen};
    }
}

/* Acts on a WAKE for request id held by connection i (live); false when
 * i holds neither a parked DECISION nor a track entry of it. */
static bool launchd_woken_on(launchd_srv *srv, uint32_t i, pbx_ipc_id id)
{
    launchd_conn *c = &srv->conns[i];
    /* A parked DECISION goes to powerboxd now, its only one. */
    if (c->nparks != 0U && launchd_park_woken(srv, i, id)) {
        return true;
    }
    pbx_peer_track_wake_action a = pbx_peer_track_wake(&c->track, id, srv->now);
    if (a == PBX_PEER_TRACK_WAKE_ASK &&
        !launchd_ask(srv, LAUNCHD_CALL_REASK, i, id)) {
        /* Not sent: the fallback asks again later. */
        (void)pbx_peer_track_hold(&c->track, id, 0U, srv->now);
    }
    if (a != PBX_PEER_TRACK_WAKE_NONE) {
        launchd_conn_arm(srv, i);
        return true;
    }
    return false;
}

/* Acts on a WAKE for request id: a held caller gets its decision asked
 * for; an orphan's is collected; otherwise it is remembered. The
 * connection that began it is found through its hint; only a request
 * whose hint was overwritten (or that is no longer there) walks the
 * connections. */
static void launchd_woken(launchd_srv *srv, pbx_ipc_id id)
{
    launchd_orphan *o = launchd_orphan_find(srv, id);
    if (o != NULL) {
        if (o->asking || !o->cancelled) {
            o->woken = true;
        } else {
            o->asking =
                launchd_ask(srv, LAUNCHD_CALL_COLLECT, LAUNCHD_CONNS_CAP, id);
            launchd_orphan_arm(srv, o);
        }
        return;
    }
    const launchd_hint *h = launchd_hint_of(srv, id);
    if (h->id.index == id.index && h->id.gen == id.gen &&
        h->conn < LAUNCHD_CONNS_CAP && srv->conns[h->conn].fd >= 0 &&
        srv->conns[h->conn].gen == h->conn_gen &&
        launchd_woken_on(srv, h->conn, id)) {
        return;
    }
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        if (srv->conns[i].fd >= 0 && launchd_woken_on(srv, i, id)) {
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
            launchd_call_free(srv, k);
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
        launchd_orphan_arm(srv, o);
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

/* The fallback for connection ci: its held DECISIONs not asked for
 * LAUNCHD_REASK_MS are asked again, in case a WAKE was lost. */
static void launchd_conn_fallback(launchd_srv *srv, uint32_t ci)
{
    launchd_conn *c = &srv->conns[ci];
    pbx_ipc_id due[PBX_PEER_TRACK_MAX];
    uint32_t n = pbx_peer_track_due(&c->track, srv->now, LAUNCHD_REASK_MS, due,
                                    PBX_PEER_TRACK_MAX);
    for (uint32_t j = 0; j < n && c->fd >= 0; j++) {
        if (!launchd_ask(srv, LAUNCHD_CALL_REASK, ci, due[j])) {
            (void)pbx_peer_track_hold(&c->track, due[j], 0U, srv->now);
        }
    }
}

/* The fallback for orphan o: its decision not asked for LAUNCHD_REASK_MS
 * is collected again. */
static void launchd_orphan_timer(launchd_srv *srv, launchd_orphan *o)
{
    if (o->used && !o->asking && o->since_ms + LAUNCHD_REASK_MS <= srv->now) {
        o->since_ms = srv->now;
        o->cancelled = true;
        o->asking =
            launchd_ask(srv, LAUNCHD_CALL_COLLECT, LAUNCHD_CONNS_CAP, o->id);
    }
}

bool launchd_evictable(const launchd_srv *srv, uint32_t ci)
{
    const launchd_conn *c = &srv->conns[ci];
    return c->fd >= 0 && !c->job_conn && c->calls == 0U &&
           !pbx_peer_track_waiting(&c->track) && !launchd_is_launcher(srv, ci);
}

/* Connection ci's timer: its parked DECISIONs due go to powerboxd, its
 * held ones due are asked again, and a control connection idle for
 * idle-ms (no accepted LAUNCH or EXPIRE for that long; a refused frame
 * does not count) is dropped when it is evictable (nothing outstanding,
 * no live job). */
static void launchd_conn_timer(launchd_srv *srv, uint32_t ci)
{
    launchd_conn *c = &srv->conns[ci];
    if (c->fd >= 0 && c->nparks != 0U) {
        launchd_park_timer(srv, ci);
    }
    if (c->fd >= 0) {
        launchd_conn_fallback(srv, ci);
    }
    if (launchd_evictable(srv, ci) && c->last_ms + srv->idle_ms <= srv->now) {
        char why[64];
        (void)snprintf(why, sizeof(why), "idle for %u ms", srv->idle_ms);
        launchd_conn_close(srv, ci, why);
    }
}

void launchd_call_arm(launchd_srv *srv, const launchd_call *k)
{
    uint64_t due = !k->used      ? UINT64_MAX
                   : k->detached ? k->deadline_ms + LAUNCHD_STALE_CALL_MS
                                 : k->deadline_ms;
    launchd_timer_set(&srv->timer, LAUNCHD_T_CALL + (uint32_t)(k - srv->calls),
                      due);
}

void launchd_orphan_arm(launchd_srv *srv, const launchd_orphan *o)
{
    uint64_t due =
        o->used && !o->asking ? o->since_ms + LAUNCHD_REASK_MS : UINT64_MAX;
    launchd_timer_set(&srv->timer,
                      LAUNCHD_T_ORPHAN + (uint32_t)(o - srv->orphans), due);
}

void launchd_conn_arm(launchd_srv *srv, uint32_t ci)
{
    if (ci >= LAUNCHD_CONNS_CAP) {
        return;
    }
    const launchd_conn *c = &srv->conns[ci];
    uint64_t due = UINT64_MAX;
    if (c->fd >= 0) {
        due = launchd_park_due(srv, ci);
        const pbx_peer_track *t = &c->track;
        for (uint32_t i = 0; i < t->count && i < PBX_PEER_TRACK_MAX; i++) {
            const pbx_peer_track_req *r = &t->reqs[i];
            uint64_t w = r->since_ms + LAUNCHD_REASK_MS;
            due = r->wait == (uint8_t)PBX_PEER_TRACK_HELD && w < due ? w : due;
        }
        /* Only a control connection is dropped when idle (a job's never
         * is), and only once it is evictable: what makes it so (its
         * calls answered, its job's EXIT) arms it again. */
        uint64_t idle = c->last_ms + srv->idle_ms;
        due = !c->job_conn && idle < due && launchd_evictable(srv, ci) ? idle
                                                                       : due;
    }
    launchd_timer_set(&srv->timer, LAUNCHD_T_CONN + ci, due);
}

/* Runs the timer of handle h (popped: due) and arms it again. */
static void launchd_timer_fire(launchd_srv *srv, uint32_t h)
{
    if (h < LAUNCHD_T_ORPHAN) {
        launchd_call *k = &srv->calls[h - LAUNCHD_T_CALL];
        uint32_t ci = k->conn;
        if (k->used && srv->now >= k->deadline_ms) {
            launchd_call_timer(srv, k);
        }
        launchd_call_arm(srv, k);
        launchd_conn_arm(srv, ci);
    } else if (h < LAUNCHD_T_CONN) {
        launchd_orphan *o = &srv->orphans[h - LAUNCHD_T_ORPHAN];
        launchd_orphan_timer(srv, o);
        launchd_orphan_arm(srv, o);
    } else if (h < LAUNCHD_T_JOB) {
        launchd_conn_timer(srv, h - LAUNCHD_T_CONN);
        launchd_conn_arm(srv, h - LAUNCHD_T_CONN);
    } else {
        launchd_job_timer(srv, h - LAUNCHD_T_JOB);
        launchd_job_arm(srv, h - LAUNCHD_T_JOB);
    }
}

void launchd_timers(launchd_srv *srv)
{
    /* Bounded: a fired handle is armed again later than now, or not. */
    for (uint32_t i = 0; i < LAUNCHD_TIMERS; i++) {
        uint32_t h = launchd_timer_pop(&srv->timer, srv->now);
        if (h >= LAUNCHD_TIMERS) {
            return;
        }
        launchd_timer_fire(srv, h);
    }
}
