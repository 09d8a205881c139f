/*
 * launchd_relay.c: the broker relay. Every call to powerboxd carries
 * launchd's own seq and stays in the call table until the reply with that
 * seq (and the call's op and request id) comes back; the reply then goes
 * to exactly the connection that made the call, with the caller's seq
 * restored. A program's DECISION waits at launchd until powerboxd's WAKE
 * for that request (relayed at once only when the WAKE already came, or
 * half of --call-ms after it came without one: launchd_park.c), so
 * powerboxd gets one DECISION per lifecycle; one answered PENDING is held
 * until the WAKE, then asked again and delivered. Requests whose caller
 * went away are cancelled and their decisions collected (orphans). The
 * user's USER_CANCEL (`pbx cancel`) on a control connection becomes a
 * grant CANCEL over the broker.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_admin.h"

/* Approvals remembered (grant -> request) for the user-cancel log line:
 * a ring, the oldest forgotten first; a grant no longer in it is
 * cancelled all the same, its request logged as 0:0. */
#define LAUNCHD_APPROVALS_MAX 1024U

/* One approval launchd delivered: its grant and the request it ended. */
typedef struct launchd_approval {
    pbx_ipc_id grant;
    pbx_ipc_id request;
} launchd_approval;

static pbx_peer_msg g_in;
static uint8_t g_bound[PBX_IPC_FRAME_BYTES_MAX];
static launchd_approval g_approvals[LAUNCHD_APPROVALS_MAX];
static size_t g_approvals_next;

/* Reason names for the per-request log line. */
static const char *launchd_reason(uint16_t r)
{
    static const char *const names[] = {
        "none",         "policy",      "user",   "prompt-timeout",
        "peer-timeout", "peer-failed", "resolve"};
    return r < PBX_ARRAY_LEN(names) ? names[r] : "?";
}

bool launchd_conn_live(const launchd_srv *srv, uint32_t ci, uint32_t gen)
{
    return ci < LAUNCHD_CONNS_CAP && srv->conns[ci].fd >= 0 &&
           srv->conns[ci].gen == gen;
}

/* The entry of the job connection ci is bound to ("-" for none). */
const char *launchd_entry_of(const launchd_srv *srv, uint64_t job_id,
                             uint32_t job_gen, char *buf, size_t cap)
{
    int ji = launchd_job_by_id(srv, job_id);
    const pbx_peer_launch_binding *b = ji >= 0 ? &srv->jobs[ji].bind : NULL;
    if (b == NULL || b->job_gen != job_gen) {
        return "-";
    }
    size_t n = b->entry_len < cap - 1U ? b->entry_len : cap - 1U;
    memcpy(buf, b->entry, n);
    buf[n] = '\0';
    return buf;
}

/* Logs the end of one relayed request of job_id:job_gen, program entry e
 * ("-" when unknown): its decision, or why it ended. */
void launchd_log_end(pbx_ipc_id id, uint64_t job_id, uint32_t job_gen,
                     const char *e, const pbx_ipc_frame *rep, const char *why)
{
    pbx_ipc_decision d;
    if (rep != NULL && rep->status == 0U &&
        pbx_ipc_decision_reply_decode(rep, &d) == PBX_OK) {
        bool denied = d.outcome == (uint8_t)PBX_IPC_OUTCOME_DENIED;
        pbx_peer_log("launchd",
                     "request %u.%u job %llu.%u entry %s outcome %s%s%s",
                     id.index, id.gen, (unsigned long long)job_id, job_gen, e,
                     pbx_peer_name_of(PBX_PEER_NAMES_OUTCOME, d.outcome),
                     denied || why != NULL ? " reason " : "",
                     denied        ? launchd_reason(d.reason)
                     : why != NULL ? why
                                   : "");
        return;
    }
    pbx_peer_log("launchd",
                 "request %u.%u job %llu.%u entry %s outcome gone reason %s",
                 id.index, id.gen, (unsigned long long)job_id, job_gen, e,
                 rep != NULL ? pbx_peer_status_text(rep->status)
                             : (why != NULL ? why : "?"));
}

bool launchd_reply(launchd_srv *srv, uint32_t ci, uint8_t *buf, size_t len,
                   uint32_t seq, int cap)
{
    launchd_conn *c = &srv->conns[ci];
    if (launchd_send_now(c->fd, buf, len, seq, cap) == 0) {
        return true;
    }
    launchd_conn_close(
        srv, ci, errno == EAGAIN ? "its socket is full" : strerror(errno));
    return false;
}

/* Answers the frame in g_in from ci with an error status and closes what
 * came with it; a frame whose header names no known request op cannot be
 * answered, so the connection is closed instead. */
static void launchd_refuse(launchd_srv *srv, uint32_t ci, uint32_t st,
                           const char *why)
{
    size_t closed = g_in.nfds;
    pbx_peer_io_close_all(g_in.fds, g_in.nfds);
    uint16_t op = 0;
    pbx_ipc_id id = {0, 0};
    if (g_in.len >= PBX_IPC_HEADER_BYTES) {
        op = pbx_le_get16(g_in.buf + 6);
        id.index = pbx_le_get32(g_in.buf + 12);
        id.gen = pbx_le_get32(g_in.buf + 16);
    }
    uint8_t out[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    if ((op & PBX_IPC_REPLY_BIT) != 0U ||
        pbx_ipc_status_reply_encode(op, id, (pbx_err)st, out, sizeof(out),
                                    &n) != PBX_OK) {
        pbx_peer_log("launchd", "connection closed: unanswerable frame (%s)",
                     pbx_peer_status_text(st));
        launchd_conn_close(srv, ci, NULL);
        return;
    }
    pbx_peer_log("launchd",
                 "relay refused: op %s request %u.%u: %s%s%s; %zu "
                 "descriptor(s) closed",
                 pbx_ipc_op_name(op), id.index, id.gen,
                 pbx_peer_status_text(st), why != NULL ? ": " : "",
                 why != NULL ? why : "", closed);
    (void)launchd_reply(srv, ci, out, n, pbx_peer_io_msg_seq(&g_in), -1);
}

/* Sends buf (with cap unless negative) to powerboxd stamped with seq,
 * without waiting: a full broker is the caller's BUSY, so one slow
 * powerboxd read never stalls every other connection. */
static bool launchd_broker_send(launchd_srv *srv, uint8_t *buf, size_t len,
                                uint32_t seq, int cap)
{
    return srv->broker >= 0 &&
           launchd_send_now(srv->broker, buf, len, seq, cap) == 0;
}

/* Records and sends one call of kind for connection ci (gen as now);
 * buf[0..len) is the frame, caps its descriptor count (cap attached).
 * Returns the call (its deadline --call-ms from now), or NULL (nothing
 * recorded) when the table is full or the frame could not go to
 * powerboxd. */
static launchd_call *launchd_call_send(launchd_srv *srv, uint8_t kind,
                                       uint8_t *buf, size_t len, uint32_t ci,
                                       int cap, uint32_t caller_seq)
{
    /* No slot is taken without a broker to send on (nothing to undo). */
    bool fits = len <= LAUNCHD_CALL_COPY && len >= PBX_IPC_HEADER_BYTES;
    launchd_call *k = fits && srv->broker >= 0 ? launchd_call_take(srv) : NULL;
    if (k == NULL) {
        return NULL;
    }
    uint32_t seq = k->seq;
    if (!launchd_broker_send(srv, buf, len, seq, cap)) {
        launchd_call_free(srv, k);
        /* The send stamped launchd's seq: the refusal echoes the
         * caller's. */
        (void)pbx_ipc_frame_set_seq(buf, len, caller_seq);
        return NULL;
    }
    memset(k, 0, sizeof(*k));
    k->used = true;
    k->kind = kind;
    k->op = pbx_le_get16(buf + 6);
    k->caps = pbx_le_get16(buf + 10);
    k->id.index = pbx_le_get32(buf + 12);
    k->id.gen = pbx_le_get32(buf + 16);
    k->seq = seq;
    k->caller_seq = caller_seq;
    k->conn = ci;
    k->conn_gen = ci < LAUNCHD_CONNS_CAP ? srv->conns[ci].gen : 0U;
    k->deadline_ms = srv->now + srv->call_ms;
    k->len = len;
    memcpy(k->copy, buf, len);
    launchd_call_arm(srv, k);
    if (ci < LAUNCHD_CONNS_CAP) {
        srv->conns[ci].calls++;
        srv->conns[ci].begins += k->op == (uint16_t)PBX_IPC_OP_BEGIN ? 1U : 0U;
    }
    return k;
}

bool launchd_decision_send(launchd_srv *srv, uint32_t ci, pbx_ipc_id id,
                           uint32_t seq, uint64_t deadline_ms)
{
    uint8_t buf[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf), &n) !=
        PBX_OK) {
        return false;
    }
    launchd_call *k =
        launchd_call_send(srv, LAUNCHD_CALL_RELAY, buf, n, ci, -1, seq);
    if (k == NULL) {
        return false;
    }
    k->deadline_ms = deadline_ms;
    launchd_call_arm(srv, k);
    return true;
}

bool launchd_own_call(launchd_srv *srv, uint8_t kind, uint8_t *buf, size_t len,
                      uint32_t ci, pbx_ipc_id id)
{
    if (launchd_call_send(srv, kind, buf, len, ci, -1, 0U) != NULL) {
        return true;
    }
    pbx_peer_log("launchd", "own call op %s request %u.%u not sent: %s",
                 pbx_ipc_op_name(pbx_le_get16(buf + 6)), id.index, id.gen,
                 srv->broker < 0 ? "no broker"
                                 : "call table full or broker full");
    return false;
}

/* Asks DECISION of id for connection ci (a held caller's, kind REASK) or
 * for an orphan (kind COLLECT, ci LAUNCHD_CONNS_CAP). */
bool launchd_ask(launchd_srv *srv, uint8_t kind, uint32_t ci, pbx_ipc_id id)
{
    uint8_t buf[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    return pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf),
                                &n) == PBX_OK &&
           launchd_own_call(srv, kind, buf, n, ci, id);
}

/* The orphan entry for id, or NULL: one lookup in the orphan index
 * (launchd_index.c), whatever the orphans in use. */
launchd_orphan *launchd_orphan_find(launchd_srv *srv, pbx_ipc_id id)
{
    return launchd_orphan_by_id(srv, id);
}

/* Takes over request id (of job_id:job_gen, program entry[0..entry_len))
 * of a caller that went away: sends its exact CANCEL; its decision is
 * collected when the CANCEL is answered, on WAKE and by the fallback. */
void launchd_orphan_add(launchd_srv *srv, pbx_ipc_id id, uint64_t job_id,
                        uint32_t job_gen, const uint8_t *entry,
                        uint16_t entry_len, bool woken)
{
    launchd_orphan *o = launchd_orphan_find(srv, id);
    for (uint32_t i = 0; o == NULL && i < LAUNCHD_ORPHANS_MAX; i++) {
        o = srv->orphans[i].used ? NULL : &srv->orphans[i];
    }
    if (o == NULL) {
        pbx_peer_log("launchd",
                     "hang-up: request %u.%u not cancelled: "
                     "orphan table full (powerboxd's deadline "
                     "ends it)",
                     id.index, id.gen);
        return;
    }
    /* One already taken over for id keeps its index entry (same key). */
    bool fresh = !o->used;
    memset(o, 0, sizeof(*o));
    o->used = true;
    o->woken = woken;
    o->id = id;
    if (fresh) {
        launchd_orphan_indexed(srv, (uint32_t)(o - srv->orphans));
    }
    o->job_id = job_id;
    o->job_gen = job_gen;
    o->since_ms = srv->now;
    /* The entry is kept here: the job may be gone when the end is logged. */
    o->entry_len = entry_len <= PBX_PEER_LAUNCH_ENTRY_MAX ? entry_len : 0U;
    if (o->entry_len != 0U) {
        memcpy(o->entry, entry, o->entry_len);
    }
    pbx_ipc_cancel rec;
    uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_IPC_CANCEL_BYTES];
    size_t n = 0;
    memset(&rec, 0, sizeof(rec));
    rec.request = id;
    if (pbx_ipc_cancel_encode(&rec, buf, sizeof(buf), &n) != PBX_OK ||
        !launchd_own_call(srv, LAUNCHD_CALL_CANCEL, buf, n, LAUNCHD_CONNS_CAP,
                          id)) {
        o->cancelled = true;
        o->cancel_st = PBX_PEER_E_ROUTE;
    }
    launchd_orphan_arm(srv, o);
}

/* An orphan's decision arrived (rep): final or gone ends the orphan. */
void launchd_orphan_decided(launchd_srv *srv, launchd_orphan *o,
                            const pbx_ipc_frame *rep)
{
    pbx_ipc_decision d;
    memset(&d, 0, sizeof(d));
    bool pending = rep->status == 0U &&
                   pbx_ipc_decision_reply_decode(rep, &d) == PBX_OK &&
                   d.outcome == (uint8_t)PBX_IPC_OUTCOME_PENDING;
    o->asking = false;
    if (pending) {
        if (o->woken && o->cancelled) {
            o->woken = false;
            o->asking = launchd_ask(srv, LAUNCHD_CALL_COLLECT,
                                    LAUNCHD_CONNS_CAP, o->id);
        }
        launchd_orphan_arm(srv, o);
        return;
    }
    pbx_peer_log("launchd", "hang-up: CANCEL request %u.%u %s, decision %s",
                 o->id.index, o->id.gen,
                 !o->cancelled       ? "not answered"
                 : o->cancel_st == 0 ? "accepted"
                                     : pbx_peer_status_text(o->cancel_st),
                 rep->status == 0U
                     ? pbx_peer_name_of(PBX_PEER_NAMES_OUTCOME, d.outcome)
                     : pbx_peer_status_text(rep->status));
    char e[PBX_PEER_LAUNCH_ENTRY_MAX + 1U] = "-";
    if (o->entry_len != 0U) {
        memcpy(e, o->entry, o->entry_len);
        e[o->entry_len] = '\0';
    }
    launchd_log_end(o->id, o->job_id, o->job_gen, e, rep, "caller gone");
    launchd_orphan_index_drop(srv, (uint32_t)(o - srv->orphans));
    o->used = false;
    launchd_orphan_arm(srv, o);
}

void launchd_conn_close(launchd_srv *srv, uint32_t ci, const char *why)
{
    launchd_conn *c = &srv->conns[ci];
    if (c->fd < 0) {
        return;
    }
    if (why != NULL) {
        pbx_peer_log("launchd", "%s connection %u dropped: %s",
                     c->job_conn ? "job" : "control", ci, why);
    }
    launchd_loop_forget(srv, c->fd);
    (void)close(c->fd);
    c->fd = -1;
    c->gen++;
    /* Its launched jobs were counted under the old generation. */
    uint32_t launched = c->launched;
    c->launched = 0U;
    const pbx_peer_launch_binding *b =
        c->job_conn ? &srv->jobs[c->job].bind : NULL;
    for (uint32_t i = 0; i < c->track.count && i < PBX_PEER_TRACK_MAX; i++) {
        const pbx_peer_track_req *r = &c->track.reqs[i];
        launchd_orphan_add(srv, r->id, r->job_id, r->job_gen,
                           b != NULL ? b->entry : NULL,
                           b != NULL ? b->entry_len : 0U, r->woken);
    }
    pbx_peer_track_init(&c->track);
    /* Its parked DECISIONs' callers are gone with it. */
    c->nparks = 0U;
    launchd_conn_arm(srv, ci);
    if (c->job_conn) {
        launchd_job_conn_gone(srv, c->job, ci);
    } else {
        srv->ncontrol--;
        /* A job still running has not sent its EXIT, so it was counted:
         * with none counted there is nothing to kill and no walk. */
        if (launched != 0U) {
            launchd_jobs_hangup(srv, ci);
        }
    }
    c->calls = c->begins = 0;
}

/* Logs a BEGIN of job b refused by bind result r; body is the BEGIN's
 * (at least its fixed part, checked by the binding). */
static void launchd_log_claim(const pbx_peer_launch_binding *b,
                              pbx_peer_launch_bind_result r,
                              const uint8_t *body)
{
    unsigned long long job = (unsigned long long)b->job_id;
    if (r == PBX_PEER_BIND_SESSION || r == PBX_PEER_BIND_REALM) {
        bool session = r == PBX_PEER_BIND_SESSION;
        pbx_peer_log("launchd", "BEGIN refused: job %llu.%u claims %s %llu",
                     job, b->job_gen, session ? "session" : "realm",
                     session ? (unsigned long long)pbx_le_get64(body + 8U)
                             : (unsigned long long)pbx_le_get32(body + 28U));
        return;
    }
    bool target = r == PBX_PEER_BIND_TARGET;
    pbx_peer_log("launchd", "BEGIN refused: job %llu.%u claims %s %llu.%u", job,
                 b->job_gen,
                 r == PBX_PEER_BIND_JOB ? "job"
                 : target               ? "target"
                                        : "another entry; job",
                 (unsigned long long)pbx_le_get64(body + (target ? 16U : 0U)),
                 pbx_le_get32(body + (target ? 32U : 24U)));
}

/* Binds the BEGIN in g_in to ci's job (filling what it left empty) into
 * g_bound; returns its length, or 0 after refusing it. */
static size_t launchd_bind(launchd_srv *srv, uint32_t ci)
{
    launchd_conn *c = &srv->conns[ci];
    if (!c->job_conn) {
        pbx_peer_log("launchd",
                     "BEGIN from an unlaunched program "
                     "(control connection %u)",
                     ci);
        launchd_refuse(srv, ci, PBX_PEER_E_NOT_YOURS, "not a launched job");
        return 0;
    }
    const pbx_peer_launch_binding *b = &srv->jobs[c->job].bind;
    static pbx_ipc_begin rec;
    size_t n = 0;
    pbx_err err = PBX_OK;
    pbx_peer_launch_bind_result r = pbx_peer_launch_bind_begin(
        b, g_in.buf, g_in.len, g_bound, sizeof(g_bound), &n, &rec, &err);
    if (r == PBX_PEER_BIND_OK) {
        return n;
    }
    if (r == PBX_PEER_BIND_MALFORMED) {
        launchd_refuse(srv, ci, (uint32_t)err, NULL);
        return 0;
    }
    launchd_log_claim(b, r, g_in.buf + PBX_IPC_HEADER_BYTES);
    launchd_refuse(srv, ci, PBX_PEER_E_NOT_YOURS, "claim of another job");
    return 0;
}

/* Whether ci may begin one more request: a job has one connection, so
 * this per-connection bound is the per-job one. */
static bool launchd_room(const launchd_srv *srv, uint32_t ci)
{
    const launchd_conn *c = &srv->conns[ci];
    return c->track.count + c->begins < srv->max_open;
}

/* Whether the caller's DECISION of request id (admitted) on ci waits at
 * launchd instead of going to powerboxd: powerboxd wakes launchd when the
 * decision is published, so one DECISION after that WAKE is the only one
 * it needs. Until the WAKE the DECISION is parked (taken here, seq its
 * caller's; launchd_park.c bounds it by --call-ms); once the WAKE came, it
 * is relayed at once (false). A DECISION with a body or descriptors is
 * refused (true) as powerboxd would refuse it. */
static bool launchd_hold_decision(launchd_srv *srv, uint32_t ci,
                                  const pbx_ipc_frame *f, uint32_t seq)
{
    pbx_peer_track *t = &srv->conns[ci].track;
    const pbx_peer_track_req *r = pbx_peer_track_get(t, f->request);
    if (r != NULL && r->woken) {
        return false;
    }
    pbx_err e = pbx_ipc_empty_decode(f, PBX_IPC_OP_DECISION);
    if (e != PBX_OK) {
        launchd_refuse(srv, ci, (uint32_t)e, NULL);
        return true;
    }
    pbx_peer_io_close_all(g_in.fds, g_in.nfds);
    (void)pbx_peer_track_asked(t, f->request);
    launchd_park_add(srv, ci, f->request, seq);
    return true;
}

/* Relays the decoded public frame in g_in from ci over the broker. */
static void launchd_relay(launchd_srv *srv, uint32_t ci)
{
    launchd_conn *c = &srv->conns[ci];
    uint8_t *buf = g_in.buf;
    size_t len = g_in.len;
    pbx_ipc_frame f = g_in.frame;
    if (f.op == (uint16_t)PBX_IPC_OP_BEGIN) {
        len = launchd_bind(srv, ci);
        if (len == 0U) {
            return;
        }
        buf = g_bound;
        /* The bound frame decoded in launchd_bind; this only re-reads it. */
        if (pbx_ipc_frame_decode(buf, len, 0, &f) != PBX_OK) {
            launchd_refuse(srv, ci, PBX_PEER_E_INTERNAL, NULL);
            return;
        }
    }
    uint16_t st = pbx_peer_track_admit(&c->track, &f);
    if (st == 0U && f.op == (uint16_t)PBX_IPC_OP_BEGIN &&
        !launchd_room(srv, ci)) {
        st = PBX_PEER_E_BUSY;
    }
    /* A sandboxed job with no prompt left: nobody is asked. */
    if (st == 0U && f.op == (uint16_t)PBX_IPC_OP_BEGIN &&
        !launchd_budget_admit(srv, ci)) {
        st = (uint16_t)PBX_E_PEER_PROMPT_RATE;
    }
    if (st == 0U && srv->broker < 0) {
        st = PBX_PEER_E_ROUTE;
    }
    bool crowded = st == 0U && c->calls >= LAUNCHD_CONN_CALLS_MAX;
    if (st != 0U || crowded) {
        launchd_refuse(srv, ci, crowded ? PBX_PEER_E_BUSY : st,
                       crowded ? "64 calls of the connection at powerboxd"
                               : NULL);
        return;
    }
    if (f.op == (uint16_t)PBX_IPC_OP_DECISION &&
        launchd_hold_decision(srv, ci, &f, pbx_peer_io_msg_seq(&g_in))) {
        return;
    }
    int cap = g_in.nfds == 1U ? g_in.fds[0] : -1;
    bool sent = launchd_call_send(srv, LAUNCHD_CALL_RELAY, buf, len, ci, cap,
                                  pbx_peer_io_msg_seq(&g_in)) != NULL;
    if (!sent) {
        launchd_refuse(srv, ci, PBX_PEER_E_BUSY, "call table or broker full");
        return;
    }
    pbx_peer_io_close_all(g_in.fds, g_in.nfds);
    if (f.op == (uint16_t)PBX_IPC_OP_DECISION) {
        (void)pbx_peer_track_asked(&c->track, f.request);
    }
    if (f.op == (uint16_t)PBX_IPC_OP_EXPIRE) {
        /* An accepted administrative call: the connection is in use. */
        c->last_ms = srv->now;
    }
}

/* Remembers the grant of an APPROVED DECISION reply rep of request, so
 * that a user's cancel of that grant names its request in the log. */
void launchd_note_approval(pbx_ipc_id request, const pbx_ipc_frame *rep)
{
    pbx_ipc_decision d;
    if (rep->status != 0U || pbx_ipc_decision_reply_decode(rep, &d) != PBX_OK ||
        d.outcome != (uint8_t)PBX_IPC_OUTCOME_APPROVED || d.grant.gen == 0U) {
        return;
    }
    launchd_approval *a = &g_approvals[g_approvals_next];
    g_approvals_next = (g_approvals_next + 1U) % LAUNCHD_APPROVALS_MAX;
    a->grant = d.grant;
    a->request = request;
}

/* The request of grant as launchd delivered its approval, or {0,0}. */
pbx_ipc_id launchd_request_of(pbx_ipc_id grant)
{
    for (size_t i = 0; i < LAUNCHD_APPROVALS_MAX; i++) {
        const launchd_approval *a = &g_approvals[i];
        if (a->grant.gen != 0U && a->grant.index == grant.index &&
            a->grant.gen == grant.gen) {
            return a->request;
        }
    }
    return (pbx_ipc_id){0, 0};
}

/* Answers the USER_CANCEL of grant on control connection ci (seq) with
 * status st (0: cancelled; then request names the grant's request). */
void launchd_user_answer(launchd_srv *srv, uint32_t ci, uint32_t seq,
                         pbx_ipc_id grant, uint16_t st)
{
    pbx_peer_user_cancel_reply rep = {grant, st, {0, 0}};
    if (st == 0U) {
        rep.request = launchd_request_of(grant);
    }
    uint8_t out[PBX_IPC_HEADER_BYTES + PBX_PEER_USER_CANCEL_REPLY_BYTES];
    size_t n = 0;
    if (pbx_peer_user_cancel_reply_encode(&rep, seq, out, sizeof(out), &n) ==
        PBX_OK) {
        (void)launchd_reply(srv, ci, out, n, seq, -1);
    }
}

/* USER_CANCEL in g_in from connection ci: the user asks for grant to end.
 * Only a control connection may (a job's connection is refused
 * NOT_YOURS: a program never cancels grants it does not hold); launchd
 * sends the grant form of CANCEL over its broker (the grant's request has
 * usually retired, and only the grant form reaches a grant after that)
 * and answers when powerboxd does. */
static void launchd_user_cancel(launchd_srv *srv, uint32_t ci)
{
    pbx_ipc_id grant = {0, 0};
    uint32_t seq = 0;
    pbx_peer_io_close_all(g_in.fds, g_in.nfds);
    pbx_err e = pbx_peer_user_cancel_decode(g_in.buf, g_in.len, g_in.nfds,
                                            &grant, &seq);
    uint16_t st = (uint16_t)e;
    if (e == PBX_OK && srv->conns[ci].job_conn) {
        st = (uint16_t)PBX_PEER_E_NOT_YOURS;
    }
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant = grant;
    uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_IPC_CANCEL_BYTES];
    size_t n = 0;
    if (st == 0U &&
        (pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) != PBX_OK ||
         launchd_call_send(srv, LAUNCHD_CALL_USER, buf, n, ci, -1, seq) ==
             NULL)) {
        st = (uint16_t)(srv->broker < 0 ? PBX_PEER_E_ROUTE : PBX_PEER_E_BUSY);
    }
    if (st != 0U) {
        pbx_peer_log("launchd", "user-cancel of grant %u.%u refused: %s",
                     grant.index, grant.gen, pbx_peer_status_text(st));
        launchd_user_answer(srv, ci, seq, grant, st);
    }
}

/* The name of a launchd-local op (reply forms "-reply"), else the ipc
 * operation's name, for logs (never a number). */
static const char *launchd_local_op_name(uint16_t op)
{
    static const char *const names[] = {"launch", "exit", "user-cancel"};
    static const char *const replies[] = {"launch-reply", "exit-reply",
                                          "user-cancel-reply"};
    uint16_t base = (uint16_t)(op & (uint16_t)~PBX_IPC_REPLY_BIT);
    if (base >= PBX_PEER_OP_LAUNCH &&
        base - PBX_PEER_OP_LAUNCH < PBX_ARRAY_LEN(names)) {
        size_t i = base - PBX_PEER_OP_LAUNCH;
        return (op & PBX_IPC_REPLY_BIT) != 0U ? replies[i] : names[i];
    }
    return pbx_ipc_op_name(op);
}

/* Answers a local-wire frame that is not a valid LAUNCH request: a
 * malformed LAUNCH gets an error reply; anything else (an EXIT or a reply
 * sent to launchd) closes the connection. */
static void launchd_local_refuse(launchd_srv *srv, uint32_t ci, pbx_err le)
{
    size_t closed = g_in.nfds;
    pbx_peer_io_close_all(g_in.fds, g_in.nfds);
    uint32_t seq = pbx_peer_io_msg_seq(&g_in);
    if (le != PBX_OK && pbx_le_get16(g_in.buf + 6) == PBX_PEER_OP_LAUNCH) {
        uint8_t out[PBX_IPC_HEADER_BYTES];
        size_t n = 0;
        pbx_peer_log("launchd", "LAUNCH refused: %s; %zu descriptor(s) closed",
                     pbx_err_text(le), closed);
        if (pbx_peer_launch_reply_encode((uint16_t)le, NULL, seq, out,
                                         sizeof(out), &n) == PBX_OK) {
            (void)launchd_reply(srv, ci, out, n, seq, -1);
        }
        return;
    }
    pbx_peer_log("launchd", "connection closed: local frame op %s: %s",
                 launchd_local_op_name(pbx_le_get16(g_in.buf + 6)),
                 le == PBX_OK ? "not a LAUNCH request" : pbx_err_text(le));
    launchd_conn_close(srv, ci, NULL);
}

void launchd_conn_frame(launchd_srv *srv, uint32_t ci)
{
    launchd_conn *c = &srv->conns[ci];
    int r = launchd_recv(c->fd, &g_in);
    if (r != 0) {
        if (r == 1 || errno != EAGAIN) {
            launchd_conn_close(srv, ci, r == 1 ? NULL : strerror(errno));
        }
        return;
    }
    if (pbx_peer_admin_op(g_in.buf, g_in.len) ==
        (uint16_t)PBX_PEER_OP_USER_CANCEL) {
        launchd_user_cancel(srv, ci);
        return;
    }
    pbx_peer_launch_frame lf;
    pbx_err le = pbx_peer_launch_peek(g_in.buf, g_in.len, g_in.nfds, &lf);
    if (le == PBX_OK && lf.op == PBX_PEER_OP_LAUNCH) {
        launchd_launch(srv, ci, &g_in, &lf);
        return;
    }
    if (le != PBX_E_IPC_UNKNOWN_OP) {
        launchd_local_refuse(srv, ci, le);
        return;
    }
    g_in.err = pbx_ipc_frame_decode(g_in.buf, g_in.len, (uint16_t)g_in.nfds,
                                    &g_in.frame);
    if (g_in.err != PBX_OK) {
        launchd_refuse(srv, ci, (uint32_t)g_in.err, NULL);
        return;
    }
    launchd_relay(srv, ci);
}
