/*
 * launchd_reply.c: the broker's replies. Each reply powerboxd sends over
 * the broker is matched to exactly one call in the table (launchd's own
 * seq, op and request id) and goes to the connection that made it with
 * the caller's seq restored; a PENDING DECISION holds its caller until
 * WAKE; launchd's own calls (re-asks, orphans' CANCELs and decisions,
 * EXPIREs, grant CANCELs) are finished here; a lost broker or connection
 * ends every call on it. The calls are made in launchd_relay.c.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_admin.h"

static pbx_peer_msg g_rep;

/* Delivers the broker reply in g_rep for DECISION of id to the held or
 * asking caller on ci (seq restored, alias attached) and updates ci's
 * table; req is the DECISION frame that was asked. */
static void launchd_deliver(launchd_srv *srv, uint32_t ci, uint32_t seq,
                            const pbx_ipc_frame *req)
{
    launchd_conn *c = &srv->conns[ci];
    const pbx_peer_track_req *r = pbx_peer_track_get(&c->track, req->request);
    uint64_t job_id = r != NULL ? r->job_id : 0U;
    uint32_t job_gen = r != NULL ? r->job_gen : 0U;
    if (pbx_peer_track_relayed(&c->track, req, &g_rep.frame)) {
        char e[PBX_PEER_LAUNCH_ENTRY_MAX + 1U];
        launchd_log_end(req->request, job_id, job_gen,
                        launchd_entry_of(srv, job_id, job_gen, e, sizeof(e)),
                        &g_rep.frame, NULL);
    }
    launchd_note_approval(req->request, &g_rep.frame);
    launchd_budget_decided(srv, ci, req->request, &g_rep.frame);
    int alias = g_rep.nfds == 1U ? g_rep.fds[0] : -1;
    if (launchd_reply(srv, ci, g_rep.buf, g_rep.len, seq, alias) &&
        alias >= 0) {
        /* Logged once per alias that reached its caller, whether the
         * caller's own DECISION or launchd's re-ask after a WAKE brought
         * it. */
        pbx_peer_log("launchd", "request %u.%u: alias handed to the caller",
                     req->request.index, req->request.gen);
    }
}

/* Whether the DECISION reply in g_rep says PENDING. */
static bool launchd_pending(void)
{
    pbx_ipc_decision d;
    return g_rep.frame.status == 0U &&
           pbx_ipc_decision_reply_decode(&g_rep.frame, &d) == PBX_OK &&
           d.outcome == (uint8_t)PBX_IPC_OUTCOME_PENDING;
}

/* A DECISION answer (the caller's own, or launchd's re-ask) for live
 * connection ci: PENDING holds the caller; anything else is delivered. */
static void launchd_decision(launchd_srv *srv, const launchd_call *k,
                             const pbx_ipc_frame *req)
{
    pbx_peer_track *t = &srv->conns[k->conn].track;
    if (launchd_pending() && pbx_peer_track_get(t, k->id) != NULL) {
        if (pbx_peer_track_hold(t, k->id, k->caller_seq, srv->now)) {
            (void)launchd_ask(srv, LAUNCHD_CALL_REASK, k->conn, k->id);
        }
        return;
    }
    uint32_t seq = k->caller_seq;
    bool held = pbx_peer_track_release(t, k->id, &seq);
    if (k->kind == LAUNCHD_CALL_REASK && !held) {
        pbx_peer_log("launchd",
                     "re-asked decision of request %u.%u: no "
                     "caller held; dropped",
                     k->id.index, k->id.gen);
        return;
    }
    launchd_deliver(srv, k->conn, seq, req);
}

/* The grant of an APPROVED DECISION reply (rep) that no caller will
 * learn of (its caller was answered ROUTE): CANCELled at powerboxd (grant
 * form), so no authority outlives the answer its program never got.
 * Returns whether rep was such an approval. */
static bool launchd_cancel_grant(launchd_srv *srv, const pbx_ipc_frame *rep)
{
    pbx_ipc_decision d;
    if (rep->status != 0U || pbx_ipc_decision_reply_decode(rep, &d) != PBX_OK ||
        d.outcome != (uint8_t)PBX_IPC_OUTCOME_APPROVED || d.grant.gen == 0U) {
        return false;
    }
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant = d.grant;
    uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_IPC_CANCEL_BYTES];
    size_t n = 0;
    bool sent = pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK &&
                launchd_own_call(srv, LAUNCHD_CALL_GRANT, buf, n,
                                 LAUNCHD_CONNS_CAP, d.grant);
    pbx_peer_log(
        "launchd",
        "request %u.%u: late approval for a caller answered ROUTE; "
        "grant %u.%u %s",
        rep->request.index, rep->request.gen, d.grant.index, d.grant.gen,
        sent ? "cancelled" : "not cancelled (the job's EXPIRE ends it)");
    return true;
}

/* A reply whose caller is gone or was released: nothing is delivered; a
 * new request is cancelled, an alias closed, an orphan's decision noted,
 * a late approval's grant cancelled. */
static void launchd_late(launchd_srv *srv, const launchd_call *k,
                         const pbx_ipc_frame *req)
{
    const pbx_ipc_frame *rep = &g_rep.frame;
    pbx_peer_log("launchd",
                 "late reply: op %s request %u.%u status "
                 "0x%04x for a caller gone or released; %zu "
                 "descriptor(s) closed",
                 pbx_ipc_op_name(rep->op), rep->request.index, rep->request.gen,
                 rep->status, g_rep.nfds);
    if (k->op == (uint16_t)PBX_IPC_OP_BEGIN && rep->status == 0U) {
        static pbx_ipc_begin b;
        bool ok = pbx_ipc_begin_decode(req, &b) == PBX_OK;
        launchd_orphan_add(srv, rep->request, ok ? b.ctx.job_id : 0U,
                           ok ? b.ctx.job_gen : 0U, b.ctx.entry.bytes,
                           ok ? b.ctx.entry.len : 0U, false);
        return;
    }
    if (k->op != (uint16_t)PBX_IPC_OP_DECISION) {
        return;
    }
    launchd_orphan *o = launchd_orphan_find(srv, k->id);
    if (o != NULL) {
        launchd_orphan_decided(srv, o, rep);
        return;
    }
    /* Released after call-ms, connection still there: keep its table
     * true to powerboxd; an approval it never heard of is cancelled. */
    if (launchd_conn_live(srv, k->conn, k->conn_gen)) {
        pbx_peer_track *t = &srv->conns[k->conn].track;
        uint32_t seq = 0;
        (void)pbx_peer_track_release(t, k->id, &seq);
        if (launchd_cancel_grant(srv, rep)) {
            (void)pbx_peer_track_drop(t, k->id);
        } else {
            (void)pbx_peer_track_relayed(t, req, rep);
        }
    }
}

/* Dispatches a reply to one of launchd's own bookkeeping calls (an
 * orphan's CANCEL or DECISION, a job's EXPIRE, a grant CANCEL). */
static void launchd_own_reply(launchd_srv *srv, const launchd_call *k)
{
    if (k->kind == LAUNCHD_CALL_EXPIRE) {
        launchd_job_finish(srv, k->conn,
                           g_rep.frame.status == 0U
                               ? "accepted"
                               : pbx_peer_status_text(g_rep.frame.status));
        return;
    }
    if (k->kind == LAUNCHD_CALL_USER) {
        uint16_t st = g_rep.frame.status;
        pbx_ipc_id r = launchd_request_of(k->id);
        if (st == 0U) {
            /* The audit line `pbx log` reads: this grant's end (powerboxd
             * logs it as cancelled) was the user's. */
            pbx_peer_log("launchd",
                         "event=user-cancel request=%u:%u grant=%u:%u", r.index,
                         r.gen, k->id.index, k->id.gen);
        } else {
            pbx_peer_log("launchd", "user-cancel of grant %u.%u refused: %s",
                         k->id.index, k->id.gen, pbx_peer_status_text(st));
        }
        if (!k->detached && launchd_conn_live(srv, k->conn, k->conn_gen)) {
            launchd_user_answer(srv, k->conn, k->caller_seq, k->id, st);
        }
        return;
    }
    if (k->kind == LAUNCHD_CALL_GRANT) {
        pbx_peer_log("launchd", "grant %u.%u CANCEL answered: %s", k->id.index,
                     k->id.gen,
                     g_rep.frame.status == 0U
                         ? "accepted"
                         : pbx_peer_status_text(g_rep.frame.status));
        return;
    }
    launchd_orphan *o = launchd_orphan_find(srv, k->id);
    if (o != NULL && k->kind == LAUNCHD_CALL_CANCEL) {
        o->cancelled = true;
        o->cancel_st = g_rep.frame.status;
        o->asking =
            launchd_ask(srv, LAUNCHD_CALL_COLLECT, LAUNCHD_CONNS_CAP, o->id);
        launchd_orphan_arm(srv, o);
    } else if (o != NULL) {
        launchd_orphan_decided(srv, o, &g_rep.frame);
    }
}

/* Dispatches the matched reply in g_rep to call k (already freed). */
static void launchd_dispatch(launchd_srv *srv, const launchd_call *k)
{
    pbx_ipc_frame req;
    if (pbx_ipc_frame_decode(k->copy, k->len, k->caps, &req) != PBX_OK) {
        return;
    }
    bool alive = launchd_conn_live(srv, k->conn, k->conn_gen);
    if (k->kind != LAUNCHD_CALL_RELAY && k->kind != LAUNCHD_CALL_REASK) {
        launchd_own_reply(srv, k);
        return;
    }
    /* A re-ask answers a caller that is still held however late it comes
     * (its call-ms only put the caller back to held); a caller's own call
     * past call-ms was answered ROUTE and gets nothing more. */
    if (!alive || (k->detached && k->kind == LAUNCHD_CALL_RELAY)) {
        launchd_late(srv, k, &req);
        return;
    }
    if (k->op == (uint16_t)PBX_IPC_OP_DECISION) {
        launchd_decision(srv, k, &req);
        return;
    }
    launchd_conn *c = &srv->conns[k->conn];
    if (pbx_peer_track_relayed(&c->track, &req, &g_rep.frame) &&
        k->op == (uint16_t)PBX_IPC_OP_BEGIN) {
        const pbx_peer_track_req *r =
            pbx_peer_track_get(&c->track, g_rep.frame.request);
        launchd_budget_begun(srv, k->conn, &req, g_rep.frame.request);
        launchd_wake_hint(srv, k->conn, g_rep.frame.request);
        char e[PBX_PEER_LAUNCH_ENTRY_MAX + 1U];
        pbx_peer_log(
            "launchd",
            "BEGIN admitted: request %u.%u job %llu.%u "
            "entry %s",
            g_rep.frame.request.index, g_rep.frame.request.gen,
            (unsigned long long)r->job_id, r->job_gen,
            launchd_entry_of(srv, r->job_id, r->job_gen, e, sizeof(e)));
    }
    int alias = g_rep.nfds == 1U ? g_rep.fds[0] : -1;
    (void)launchd_reply(srv, k->conn, g_rep.buf, g_rep.len, k->caller_seq,
                        alias);
}

/* The call g_rep answers, or NULL (logged) when none matches exactly. */
static launchd_call *launchd_match(launchd_srv *srv)
{
    const pbx_ipc_frame *f = &g_rep.frame;
    /* The seq names the call's slot (launchd_index.c). */
    launchd_call *k = launchd_call_by_seq(srv, f->seq);
    if (k != NULL) {
        bool same_id =
            k->op == (uint16_t)PBX_IPC_OP_BEGIN ||
            (f->request.index == k->id.index && f->request.gen == k->id.gen);
        if (f->op == (uint16_t)(k->op | PBX_IPC_REPLY_BIT) && same_id) {
            return k;
        }
    }
    pbx_peer_log("launchd",
                 "unmatched broker reply: op %s request %u.%u "
                 "seq %u; %zu descriptor(s) closed",
                 pbx_ipc_op_name(f->op), f->request.index, f->request.gen,
                 f->seq, g_rep.nfds);
    return NULL;
}

/* Answers caller seq on connection ci a status-only ROUTE reply to op
 * of request id; false when the connection is gone (or was closed by a
 * failed send). */
static bool launchd_route_answer(launchd_srv *srv, uint32_t ci, uint16_t op,
                                 pbx_ipc_id id, uint32_t seq)
{
    uint8_t out[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    if (srv->conns[ci].fd < 0) {
        return false;
    }
    if (pbx_ipc_status_reply_encode(op, id, PBX_E_PEER_ROUTE, out, sizeof(out),
                                    &n) != PBX_OK) {
        return true;
    }
    return launchd_reply(srv, ci, out, n, seq, -1);
}

/* Fails one call of the lost broker: a waiting caller is answered ROUTE
 * (a user's cancel its own answer), a job's EXPIRE ends the job, since
 * no powerboxd will ever answer either. */
static void launchd_call_lost(launchd_srv *srv, launchd_call *k)
{
    launchd_call_free(srv, k);
    launchd_call_arm(srv, k);
    if (k->kind == LAUNCHD_CALL_EXPIRE) {
        launchd_job_finish(srv, k->conn, "not answered: broker lost");
        return;
    }
    if (k->detached || !launchd_conn_live(srv, k->conn, k->conn_gen)) {
        return;
    }
    if (k->kind == LAUNCHD_CALL_RELAY) {
        (void)launchd_route_answer(srv, k->conn, k->op, k->id, k->caller_seq);
    } else if (k->kind == LAUNCHD_CALL_USER) {
        launchd_user_answer(srv, k->conn, k->caller_seq, k->id,
                            (uint16_t)PBX_PEER_E_ROUTE);
    }
}

/* Ends, for connection ci, what only the lost broker's powerboxd knew:
 * each grant it holds (one line each; the objects behind it died with
 * that powerboxd's routes, and no later powerboxd knows the grant), each
 * request it began (its end line) and each held or parked DECISION
 * (answered ROUTE). Its job keeps running. */
static void launchd_conn_lost(launchd_srv *srv, uint32_t ci)
{
    launchd_conn *c = &srv->conns[ci];
    pbx_peer_track *t = &c->track;
    for (uint32_t i = 0; i < t->grant_count && i < PBX_PEER_TRACK_GRANTS_MAX;
         i++) {
        pbx_peer_log("launchd", "grant %u.%u of job %llu.%u ended: broker lost",
                     t->grants[i].index, t->grants[i].gen,
                     (unsigned long long)t->job_id, t->job_gen);
    }
    t->grant_count = 0U;
    /* Copied out first: a failed answer closes the connection, and its
     * table must then hold nothing to cancel at a new powerboxd. */
    static pbx_peer_track_req reqs[PBX_PEER_TRACK_MAX];
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count && i < PBX_PEER_TRACK_MAX; i++) {
        reqs[n++] = t->reqs[i];
    }
    t->count = 0U;
    c->calls = c->begins = 0U;
    launchd_park_lost(srv, ci);
    char e[PBX_PEER_LAUNCH_ENTRY_MAX + 1U];
    for (uint32_t i = 0; i < n; i++) {
        const pbx_peer_track_req *r = &reqs[i];
        if (r->wait == (uint8_t)PBX_PEER_TRACK_HELD ||
            r->wait == (uint8_t)PBX_PEER_TRACK_REASK) {
            (void)launchd_route_answer(srv, ci, PBX_IPC_OP_DECISION, r->id,
                                       r->held_seq);
        }
        launchd_log_end(
            r->id, r->job_id, r->job_gen,
            launchd_entry_of(srv, r->job_id, r->job_gen, e, sizeof(e)), NULL,
            "broker lost");
    }
}

void launchd_broker_lost(launchd_srv *srv, const char *why)
{
    pbx_peer_log("launchd", "%s", why);
    launchd_loop_forget(srv, srv->broker);
    (void)close(srv->broker);
    srv->broker = -1;
    for (uint32_t i = 0; i < LAUNCHD_CALLS_MAX; i++) {
        if (srv->calls[i].used) {
            launchd_call_lost(srv, &srv->calls[i]);
        }
    }
    for (uint32_t i = 0; i < LAUNCHD_ORPHANS_MAX; i++) {
        launchd_orphan *o = &srv->orphans[i];
        if (o->used) {
            char e[PBX_PEER_LAUNCH_ENTRY_MAX + 1U] = "-";
            if (o->entry_len != 0U) {
                memcpy(e, o->entry, o->entry_len);
                e[o->entry_len] = '\0';
            }
            launchd_log_end(o->id, o->job_id, o->job_gen, e, NULL,
                            "broker lost");
            launchd_orphan_index_drop(srv, i);
            o->used = false;
        }
    }
    for (uint32_t ci = 0; ci < LAUNCHD_CONNS_CAP; ci++) {
        if (srv->conns[ci].fd >= 0) {
            launchd_conn_lost(srv, ci);
            launchd_conn_arm(srv, ci);
        }
    }
    /* An ending job's EXPIRE has no powerboxd left to answer it. */
    for (uint32_t ji = 0; ji < LAUNCHD_JOBS_CAP; ji++) {
        launchd_job_arm(srv, ji);
    }
}

void launchd_broker_input(launchd_srv *srv)
{
    for (int i = 0; i < 64 && srv->broker >= 0; i++) {
        int r = launchd_recv(srv->broker, &g_rep);
        if (r != 0) {
            if (r == 1 || errno != EAGAIN) {
                launchd_broker_lost(srv, "powerboxd closed the broker; calls "
                                         "answered ROUTE until a new broker");
            }
            return;
        }
        g_rep.err = pbx_ipc_frame_decode(g_rep.buf, g_rep.len,
                                         (uint16_t)g_rep.nfds, &g_rep.frame);
        if (g_rep.err != PBX_OK) {
            pbx_peer_log("launchd",
                         "undecodable broker frame: %s; %zu "
                         "descriptor(s) closed",
                         pbx_err_text(g_rep.err), g_rep.nfds);
            pbx_peer_io_close_all(g_rep.fds, g_rep.nfds);
            continue;
        }
        launchd_call *k = launchd_match(srv);
        if (k == NULL) {
            pbx_peer_io_close_all(g_rep.fds, g_rep.nfds);
            continue;
        }
        static launchd_call done;
        done = *k;
        launchd_call_free(srv, k);
        launchd_call_arm(srv, k);
        /* A detached call was uncounted when it was detached. */
        if (!done.detached &&
            launchd_conn_live(srv, done.conn, done.conn_gen)) {
            launchd_conn *c = &srv->conns[done.conn];
            c->calls -= c->calls > 0U ? 1U : 0U;
            c->begins -= done.op == (uint16_t)PBX_IPC_OP_BEGIN && c->begins > 0U
                             ? 1U
                             : 0U;
        }
        pbx_peer_log("launchd", "broker: op %s request %u.%u status 0x%04x%s",
                     pbx_ipc_op_name(done.op), g_rep.frame.request.index,
                     g_rep.frame.request.gen, g_rep.frame.status,
                     g_rep.nfds == 1U ? ", carrying an alias" : "");
        launchd_dispatch(srv, &done);
        pbx_peer_io_close_all(g_rep.fds, g_rep.nfds);
        /* The reply may have ended a wait or a call of its connection. */
        launchd_conn_arm(srv, done.conn);
        if (srv->ncalls == 0U) {
            /* No call is left at powerboxd, which sends nothing else on
             * the broker: the queue is empty, and the receive that would
             * fail with EAGAIN is saved. A stray frame, or the broker's
             * end, is reported by the next wait (the set is
             * level-triggered). */
            return;
        }
    }
}
