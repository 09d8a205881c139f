/*
 * pbx_peer_track.c: launchd's per-connection table of the requests and
 * grants a control connection owns (see pbx_peer_track.h).
 */
#include "peers/lib/pbx_peer_track.h"

#include <string.h>

#include "peers/lib/pbx_peer.h"

void pbx_peer_track_init(pbx_peer_track *t)
{
    memset(t, 0, sizeof(*t));
}

bool pbx_peer_track_full(const pbx_peer_track *t)
{
    return t->count >= PBX_PEER_TRACK_MAX;
}

/* Whether a and b are the same exact identity (generation zero never is). */
static bool pbx_peer_track_same(pbx_ipc_id a, pbx_ipc_id b)
{
    return a.gen != 0U && a.index == b.index && a.gen == b.gen;
}

/* Index of request id in t, or PBX_PEER_TRACK_MAX when absent. */
static uint32_t pbx_peer_track_find(const pbx_peer_track *t, pbx_ipc_id id)
{
    for (uint32_t i = 0; i < t->count && i < PBX_PEER_TRACK_MAX; i++) {
        if (pbx_peer_track_same(t->reqs[i].id, id)) {
            return i;
        }
    }
    return PBX_PEER_TRACK_MAX;
}

/* Index of grant id in t, or PBX_PEER_TRACK_GRANTS_MAX when absent. */
static uint32_t pbx_peer_track_grant_find(const pbx_peer_track *t,
                                          pbx_ipc_id id)
{
    for (uint32_t i = 0; i < t->grant_count && i < PBX_PEER_TRACK_GRANTS_MAX;
         i++) {
        if (pbx_peer_track_same(t->grants[i], id)) {
            return i;
        }
    }
    return PBX_PEER_TRACK_GRANTS_MAX;
}

const pbx_peer_track_req *pbx_peer_track_get(const pbx_peer_track *t,
                                             pbx_ipc_id id)
{
    uint32_t i = pbx_peer_track_find(t, id);
    return i == PBX_PEER_TRACK_MAX ? NULL : &t->reqs[i];
}

bool pbx_peer_track_owns(const pbx_peer_track *t, pbx_ipc_id id)
{
    return pbx_peer_track_find(t, id) != PBX_PEER_TRACK_MAX;
}

bool pbx_peer_track_holds(const pbx_peer_track *t, pbx_ipc_id grant)
{
    return pbx_peer_track_grant_find(t, grant) != PBX_PEER_TRACK_GRANTS_MAX;
}

bool pbx_peer_track_drop(pbx_peer_track *t, pbx_ipc_id id)
{
    uint32_t i = pbx_peer_track_find(t, id);
    if (i == PBX_PEER_TRACK_MAX) {
        return false;
    }
    /* Order does not matter: the last entry fills the hole. */
    t->reqs[i] = t->reqs[t->count - 1U];
    t->count--;
    return true;
}

/* Removes grant id from t; returns whether it was there. */
static bool pbx_peer_track_grant_drop(pbx_peer_track *t, pbx_ipc_id id)
{
    uint32_t i = pbx_peer_track_grant_find(t, id);
    if (i == PBX_PEER_TRACK_GRANTS_MAX) {
        return false;
    }
    t->grants[i] = t->grants[t->grant_count - 1U];
    t->grant_count--;
    return true;
}

/* Whether some open request of t claimed exactly this job and session:
 * only then may the connection cancel by correlation. */
static bool pbx_peer_track_claims(const pbx_peer_track *t,
                                  const pbx_ipc_cancel *c)
{
    for (uint32_t i = 0; i < t->count && i < PBX_PEER_TRACK_MAX; i++) {
        const pbx_peer_track_req *r = &t->reqs[i];
        if (r->job_id == c->job_id && r->job_gen == c->job_gen &&
            r->session == c->session) {
            return true;
        }
    }
    return false;
}

/* admit for CANCEL (any of its three forms) and CONSUME. */
static uint16_t pbx_peer_track_admit_end(const pbx_peer_track *t,
                                         const pbx_ipc_frame *req)
{
    if (req->op == (uint16_t)PBX_IPC_OP_CONSUME) {
        pbx_ipc_consume cs;
        pbx_err e = pbx_ipc_consume_decode(req, &cs);
        if (e != PBX_OK) {
            return (uint16_t)e;
        }
        return pbx_peer_track_holds(t, cs.grant) ? 0U : PBX_PEER_E_NOT_YOURS;
    }
    pbx_ipc_cancel c;
    pbx_err e = pbx_ipc_cancel_decode(req, &c);
    if (e != PBX_OK) {
        return (uint16_t)e;
    }
    bool other_job = c.by_correlation && t->bound &&
                     (c.job_id != t->job_id || c.job_gen != t->job_gen);
    bool mine = c.by_grant         ? pbx_peer_track_holds(t, c.grant)
                : c.by_correlation ? !other_job && pbx_peer_track_claims(t, &c)
                                   : pbx_peer_track_owns(t, c.request);
    return mine ? 0U : PBX_PEER_E_NOT_YOURS;
}

uint16_t pbx_peer_track_admit(const pbx_peer_track *t, const pbx_ipc_frame *req)
{
    switch (req->op) {
    case PBX_IPC_OP_BEGIN: {
        /* Only a launched job asks: its connection names who it is. */
        if (!t->bound) {
            return PBX_PEER_E_NOT_YOURS;
        }
        pbx_ipc_begin b;
        pbx_err e = pbx_ipc_begin_decode(req, &b);
        if (e != PBX_OK) {
            return (uint16_t)e;
        }
        /* Every begun request must stay cancellable on hang-up. */
        return pbx_peer_track_full(t) ? PBX_PEER_E_BUSY : 0U;
    }
    case PBX_IPC_OP_SELECTOR:
    case PBX_IPC_OP_COMMIT:
        return pbx_peer_track_owns(t, req->request) ? 0U : PBX_PEER_E_NOT_YOURS;
    case PBX_IPC_OP_DECISION: {
        const pbx_peer_track_req *r = pbx_peer_track_get(t, req->request);
        if (r == NULL) {
            return PBX_PEER_E_NOT_YOURS;
        }
        /* One DECISION per request at a time: a held caller is answered
         * once; an approval must find room, or its grant could not be
         * driven. */
        return r->wait != (uint8_t)PBX_PEER_TRACK_IDLE ||
                       t->grant_count >= PBX_PEER_TRACK_GRANTS_MAX
                   ? PBX_PEER_E_BUSY
                   : 0U;
    }
    case PBX_IPC_OP_CANCEL:
    case PBX_IPC_OP_CONSUME:
        return pbx_peer_track_admit_end(t, req);
    case PBX_IPC_OP_EXPIRE:
        /* launchd's administrative surface, never a job's. */
        return t->bound ? PBX_PEER_E_NOT_YOURS : 0U;
    default:
        return PBX_PEER_E_ROUTE;
    }
}

/* Whether a reply status says the request or grant ended or is ending. */
static bool pbx_peer_track_gone(uint16_t status)
{
    return status == (uint16_t)PBX_E_CORE_UNKNOWN ||
           status == (uint16_t)PBX_E_CORE_STALE ||
           status == (uint16_t)PBX_E_CORE_STATE;
}

/* Applies a DECISION reply: a terminal one ends req's request; an
 * APPROVED one hands the connection its grant. */
static bool pbx_peer_track_decision(pbx_peer_track *t, pbx_ipc_id id,
                                    const pbx_ipc_frame *rep)
{
    if (rep->status != 0U) {
        return pbx_peer_track_gone(rep->status) && pbx_peer_track_drop(t, id);
    }
    pbx_ipc_decision d;
    if (pbx_ipc_decision_reply_decode(rep, &d) != PBX_OK ||
        d.outcome == (uint8_t)PBX_IPC_OUTCOME_PENDING) {
        return false;
    }
    bool mine = pbx_peer_track_drop(t, id);
    if (mine && d.outcome == (uint8_t)PBX_IPC_OUTCOME_APPROVED &&
        d.grant.gen != 0U && t->grant_count < PBX_PEER_TRACK_GRANTS_MAX &&
        !pbx_peer_track_holds(t, d.grant)) {
        t->grants[t->grant_count++] = d.grant;
    }
    return mine;
}

/* Applies a CONSUME or CANCEL reply: an ended grant leaves the table. */
static bool pbx_peer_track_ended(pbx_peer_track *t, const pbx_ipc_frame *req,
                                 const pbx_ipc_frame *rep)
{
    if (rep->status != 0U && !pbx_peer_track_gone(rep->status)) {
        return false;
    }
    pbx_ipc_consume cs;
    pbx_ipc_cancel c;
    if (req->op == (uint16_t)PBX_IPC_OP_CONSUME &&
        pbx_ipc_consume_decode(req, &cs) == PBX_OK) {
        return pbx_peer_track_grant_drop(t, cs.grant);
    }
    if (req->op == (uint16_t)PBX_IPC_OP_CANCEL &&
        pbx_ipc_cancel_decode(req, &c) == PBX_OK && c.by_grant) {
        return pbx_peer_track_grant_drop(t, c.grant);
    }
    return false;
}

bool pbx_peer_track_relayed(pbx_peer_track *t, const pbx_ipc_frame *req,
                            const pbx_ipc_frame *rep)
{
    if (rep->op != (uint16_t)(req->op | PBX_IPC_REPLY_BIT)) {
        return false;
    }
    pbx_ipc_begin b;
    if (req->op == (uint16_t)PBX_IPC_OP_BEGIN && rep->status == 0U &&
        rep->request.gen != 0U && !pbx_peer_track_full(t) &&
        !pbx_peer_track_owns(t, rep->request) &&
        pbx_ipc_begin_decode(req, &b) == PBX_OK) {
        pbx_peer_track_req *r = &t->reqs[t->count++];
        memset(r, 0, sizeof(*r));
        r->id = rep->request;
        r->job_id = b.ctx.job_id;
        r->session = b.ctx.session;
        r->job_gen = b.ctx.job_gen;
        return true;
    }
    if (req->op == (uint16_t)PBX_IPC_OP_DECISION) {
        return pbx_peer_track_decision(t, req->request, rep);
    }
    if (req->op == (uint16_t)PBX_IPC_OP_CONSUME ||
        req->op == (uint16_t)PBX_IPC_OP_CANCEL) {
        return pbx_peer_track_ended(t, req, rep);
    }
    return false;
}

void pbx_peer_track_bind(pbx_peer_track *t, uint64_t job_id, uint32_t job_gen)
{
    t->bound = true;
    t->job_id = job_id;
    t->job_gen = job_gen;
}

/* t's mutable entry for id, or NULL. */
static pbx_peer_track_req *pbx_peer_track_at(pbx_peer_track *t, pbx_ipc_id id)
{
    uint32_t i = pbx_peer_track_find(t, id);
    return i == PBX_PEER_TRACK_MAX ? NULL : &t->reqs[i];
}

bool pbx_peer_track_asked(pbx_peer_track *t, pbx_ipc_id id)
{
    pbx_peer_track_req *r = pbx_peer_track_at(t, id);
    if (r == NULL || r->wait != (uint8_t)PBX_PEER_TRACK_IDLE) {
        return false;
    }
    r->wait = (uint8_t)PBX_PEER_TRACK_ASKED;
    return true;
}

bool pbx_peer_track_hold(pbx_peer_track *t, pbx_ipc_id id, uint32_t seq,
                         uint64_t now_ms)
{
    pbx_peer_track_req *r = pbx_peer_track_at(t, id);
    if (r == NULL || (r->wait != (uint8_t)PBX_PEER_TRACK_ASKED &&
                      r->wait != (uint8_t)PBX_PEER_TRACK_REASK)) {
        return false;
    }
    if (r->wait == (uint8_t)PBX_PEER_TRACK_ASKED) {
        r->held_seq = seq;
    }
    r->since_ms = now_ms;
    /* A WAKE that came while nobody was held yet is acted on now. */
    if (r->woken) {
        r->woken = false;
        r->wait = (uint8_t)PBX_PEER_TRACK_REASK;
        return true;
    }
    r->wait = (uint8_t)PBX_PEER_TRACK_HELD;
    return false;
}

pbx_peer_track_wake_action pbx_peer_track_wake(pbx_peer_track *t, pbx_ipc_id id,
                                               uint64_t now_ms)
{
    pbx_peer_track_req *r = pbx_peer_track_at(t, id);
    if (r == NULL) {
        return PBX_PEER_TRACK_WAKE_NONE;
    }
    if (r->wait == (uint8_t)PBX_PEER_TRACK_HELD) {
        r->wait = (uint8_t)PBX_PEER_TRACK_REASK;
        r->since_ms = now_ms;
        return PBX_PEER_TRACK_WAKE_ASK;
    }
    r->woken = true;
    return PBX_PEER_TRACK_WAKE_KEPT;
}

bool pbx_peer_track_release(pbx_peer_track *t, pbx_ipc_id id, uint32_t *seq)
{
    pbx_peer_track_req *r = pbx_peer_track_at(t, id);
    if (r == NULL) {
        return false;
    }
    bool held = r->wait == (uint8_t)PBX_PEER_TRACK_HELD ||
                r->wait == (uint8_t)PBX_PEER_TRACK_REASK;
    if (held) {
        *seq = r->held_seq;
    }
    r->wait = (uint8_t)PBX_PEER_TRACK_IDLE;
    return held;
}

uint32_t pbx_peer_track_due(pbx_peer_track *t, uint64_t now_ms,
                            uint64_t every_ms, pbx_ipc_id *out, uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < t->count && i < PBX_PEER_TRACK_MAX && n < max;
         i++) {
        pbx_peer_track_req *r = &t->reqs[i];
        if (r->wait == (uint8_t)PBX_PEER_TRACK_HELD &&
            r->since_ms + every_ms <= now_ms) {
            r->wait = (uint8_t)PBX_PEER_TRACK_REASK;
            r->since_ms = now_ms;
            out[n++] = r->id;
        }
    }
    return n;
}

bool pbx_peer_track_waiting(const pbx_peer_track *t)
{
    for (uint32_t i = 0; i < t->count && i < PBX_PEER_TRACK_MAX; i++) {
        if (t->reqs[i].wait != (uint8_t)PBX_PEER_TRACK_IDLE) {
            return true;
        }
    }
    return false;
}
