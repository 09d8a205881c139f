/*
 * fuzz_track.c: libFuzzer harness for launchd's check of the frames a
 * job sends (pbx_peer_track_admit, peers/lib/pbx_peer_track.c) and the
 * table of requests and grants it checks them against, driven as a
 * machine.
 *
 * Input layout: a sequence of records, each a kind byte (low three bits
 * the kind, the next three a descriptor count) and its arguments:
 *   0 ADMIT  u16 length, then a frame the job sent; one that the ipc
 *            frame decoder accepts is admitted or refused, and an
 *            admitted one is the call the next RELAY answers.
 *   1 RELAY  u16 length, then powerboxd's reply to the admitted call
 *            (pbx_peer_track_relayed).
 *   2 REQ    u32 index, u32 gen, u64 job, u32 job gen, u64 session: a
 *            request the connection began (as a relayed BEGIN adds it).
 *   3 GRANT  u32 index, u32 gen: a grant the connection holds.
 *   4 BIND   u64 job, u32 job gen (nonzero): the connection is a job's.
 *   5 WAIT   u8 action, u8 which request, u32 seq, u16 time: one step of
 *            the DECISION hold (asked, hold, wake, release, due, drop).
 * A short record ends the input.
 *
 * Checked after every record: the table holds at most its bounds, every
 * identity in it is exact (generation nonzero) and unique, every wait
 * state known. ADMIT never changes the table, answers one of its
 * documented statuses, and admits a frame only under the rules of
 * pbx_peer_track.h; RELAY reports a change exactly when the table
 * changed, and a relayed BEGIN or APPROVED DECISION leaves what it
 * names in the table. Any difference aborts.
 */
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_track.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The machine: the table, and the last admitted call (its bytes copied,
 * so the frame's body stays valid while the reply is judged). */
typedef struct fth_state {
    pbx_peer_track t;
    uint8_t req_buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_frame req;
    bool have_req;
    uint64_t now_ms;
} fth_state;

static fth_state g_s;

/* Aborts unless cond holds. */
static void fth_check(bool cond)
{
    if (!cond) {
        abort();
    }
}

/* Whether an identity is in ids[0..n) more than once or inexact. */
static bool fth_ids_bad(const pbx_ipc_id *ids, size_t n, size_t stride)
{
    for (size_t i = 0; i < n; i++) {
        const pbx_ipc_id *a =
            (const pbx_ipc_id *)(const void *)((const uint8_t *)ids +
                                               i * stride);
        if (a->gen == 0U) {
            return true;
        }
        for (size_t j = i + 1U; j < n; j++) {
            const pbx_ipc_id *b =
                (const pbx_ipc_id *)(const void *)((const uint8_t *)ids +
                                                   j * stride);
            if (a->index == b->index && a->gen == b->gen) {
                return true;
            }
        }
    }
    return false;
}

/* Checks the table's invariants. */
static void fth_table_ok(const pbx_peer_track *t)
{
    fth_check(t->count <= PBX_PEER_TRACK_MAX &&
              t->grant_count <= PBX_PEER_TRACK_GRANTS_MAX);
    fth_check(!fth_ids_bad(&t->reqs[0].id, t->count, sizeof(t->reqs[0])));
    fth_check(!fth_ids_bad(t->grants, t->grant_count, sizeof(t->grants[0])));
    bool waiting = false;
    for (uint32_t i = 0; i < t->count; i++) {
        fth_check(t->reqs[i].wait <= (uint8_t)PBX_PEER_TRACK_REASK);
        waiting = waiting || t->reqs[i].wait != (uint8_t)PBX_PEER_TRACK_IDLE;
        fth_check(pbx_peer_track_owns(t, t->reqs[i].id) &&
                  pbx_peer_track_get(t, t->reqs[i].id) == &t->reqs[i]);
    }
    for (uint32_t g = 0; g < t->grant_count; g++) {
        fth_check(pbx_peer_track_holds(t, t->grants[g]));
    }
    fth_check(pbx_peer_track_waiting(t) == waiting);
    fth_check(pbx_peer_track_full(t) == (t->count >= PBX_PEER_TRACK_MAX));
}

/* Whether tables a and b hold the same, field by field (their unused
 * entries aside). */
static bool fth_same(const pbx_peer_track *a, const pbx_peer_track *b)
{
    if (a->count != b->count || a->grant_count != b->grant_count ||
        a->bound != b->bound || a->job_id != b->job_id ||
        a->job_gen != b->job_gen) {
        return false;
    }
    for (uint32_t i = 0; i < a->count && i < PBX_PEER_TRACK_MAX; i++) {
        const pbx_peer_track_req *x = &a->reqs[i];
        const pbx_peer_track_req *y = &b->reqs[i];
        if (x->id.index != y->id.index || x->id.gen != y->id.gen ||
            x->job_id != y->job_id || x->session != y->session ||
            x->since_ms != y->since_ms || x->job_gen != y->job_gen ||
            x->held_seq != y->held_seq || x->wait != y->wait ||
            x->woken != y->woken) {
            return false;
        }
    }
    for (uint32_t i = 0; i < a->grant_count && i < PBX_PEER_TRACK_GRANTS_MAX;
         i++) {
        if (a->grants[i].index != b->grants[i].index ||
            a->grants[i].gen != b->grants[i].gen) {
            return false;
        }
    }
    return true;
}

/* The oracle reads the table itself, by exact identity (a generation of
 * zero names nothing), rather than through pbx_peer_track_owns, _holds
 * and _get: a lookup bug of pbx_peer_track.c then cannot agree with
 * itself. Returns request id's entry in t, or NULL. */
static const pbx_peer_track_req *fth_req_of(const pbx_peer_track *t,
                                            pbx_ipc_id id)
{
    for (uint32_t i = 0; id.gen != 0U && i < PBX_PEER_TRACK_MAX; i++) {
        if (i < t->count && t->reqs[i].id.index == id.index &&
            t->reqs[i].id.gen == id.gen) {
            return &t->reqs[i];
        }
    }
    return NULL;
}

/* Whether t lists grant id (exact identity, read by the oracle). */
static bool fth_has_grant(const pbx_peer_track *t, pbx_ipc_id id)
{
    uint32_t hits = 0;
    for (uint32_t i = 0; i < PBX_PEER_TRACK_GRANTS_MAX; i++) {
        hits += (uint32_t)(id.gen != 0U && i < t->grant_count &&
                           t->grants[i].index == id.index &&
                           t->grants[i].gen == id.gen);
    }
    return hits != 0U;
}

/* The facts pbx_peer_track.h's rules for admit speak of, gathered
 * before any status is chosen. */
typedef struct fth_facts {
    /* The op is one of the seven public requests. */
    bool public_op;
    /* What the header alone names is the connection's: a BEGIN's bound
     * job, an EXPIRE's unbound control connection, the request of a
     * SELECTOR, COMMIT or DECISION (true for the others). */
    bool header_mine;
    /* The ipc decoder's error for a BEGIN, CANCEL or CONSUME body. */
    uint16_t body_err;
    /* What a CANCEL's or CONSUME's body names is the connection's (true
     * for the others). */
    bool body_mine;
    /* A BEGIN with every request slot taken, or a DECISION with every
     * grant slot taken or its request's DECISION outstanding or held. */
    bool busy;
} fth_facts;

/* Whether a generation-zero CANCEL c is the connection's: its job is a
 * bound connection's own (any job on an unbound one) and some request
 * of t named exactly that job and session. */
static bool fth_correlation_mine(const pbx_peer_track *t,
                                 const pbx_ipc_cancel *c)
{
    bool named = false;
    if (t->bound && !(c->job_id == t->job_id && c->job_gen == t->job_gen)) {
        return false;
    }
    for (uint32_t i = 0; i < PBX_PEER_TRACK_MAX && i < t->count; i++) {
        const pbx_peer_track_req *r = &t->reqs[i];
        named = named || (r->session == c->session &&
                          r->job_gen == c->job_gen && r->job_id == c->job_id);
    }
    return named;
}

/* The body facts of a CANCEL or CONSUME f (decoded by the ipc decoders). */
static void fth_body_facts(const pbx_peer_track *t, const pbx_ipc_frame *f,
                           fth_facts *x)
{
    pbx_ipc_consume cs;
    pbx_ipc_cancel c;
    pbx_err e = PBX_OK;
    if (f->op == (uint16_t)PBX_IPC_OP_CONSUME) {
        e = pbx_ipc_consume_decode(f, &cs);
        x->body_mine = e == PBX_OK && fth_has_grant(t, cs.grant);
    } else {
        e = pbx_ipc_cancel_decode(f, &c);
        if (e == PBX_OK && c.by_grant) {
            x->body_mine = fth_has_grant(t, c.grant);
        } else if (e == PBX_OK && c.by_correlation) {
            x->body_mine = fth_correlation_mine(t, &c);
        } else {
            x->body_mine = e == PBX_OK && fth_req_of(t, c.request) != NULL;
        }
    }
    x->body_err = (uint16_t)e;
}

/* Gathers the facts of frame f on t. */
static fth_facts fth_facts_of(const pbx_peer_track *t, const pbx_ipc_frame *f)
{
    fth_facts x = {true, true, 0U, true, false};
    const pbx_peer_track_req *r = fth_req_of(t, f->request);
    pbx_ipc_begin b;
    if (f->op == (uint16_t)PBX_IPC_OP_BEGIN) {
        x.header_mine = t->bound;
        x.body_err = (uint16_t)pbx_ipc_begin_decode(f, &b);
        x.busy = t->count == PBX_PEER_TRACK_MAX;
    } else if (f->op == (uint16_t)PBX_IPC_OP_EXPIRE) {
        x.header_mine = !t->bound;
    } else if (f->op == (uint16_t)PBX_IPC_OP_SELECTOR ||
               f->op == (uint16_t)PBX_IPC_OP_COMMIT) {
        x.header_mine = r != NULL;
    } else if (f->op == (uint16_t)PBX_IPC_OP_DECISION) {
        x.header_mine = r != NULL;
        x.busy = t->grant_count == PBX_PEER_TRACK_GRANTS_MAX ||
                 (r != NULL && (r->wait == (uint8_t)PBX_PEER_TRACK_ASKED ||
                                r->wait == (uint8_t)PBX_PEER_TRACK_HELD ||
                                r->wait == (uint8_t)PBX_PEER_TRACK_REASK));
    } else if (f->op == (uint16_t)PBX_IPC_OP_CANCEL ||
               f->op == (uint16_t)PBX_IPC_OP_CONSUME) {
        fth_body_facts(t, f, &x);
    } else {
        x.public_op = false;
    }
    return x;
}

/* The status pbx_peer_track.h says admit answers for f on t, by one
 * precedence for every op: not a public request; what the header names
 * is not the connection's; the body does not decode; what the body names
 * is not the connection's; no room or a DECISION outstanding. */
static uint16_t fth_expected(const pbx_peer_track *t, const pbx_ipc_frame *f)
{
    fth_facts x = fth_facts_of(t, f);
    if (!x.public_op) {
        return PBX_PEER_E_ROUTE;
    }
    if (!x.header_mine) {
        return PBX_PEER_E_NOT_YOURS;
    }
    if (x.body_err != 0U) {
        return x.body_err;
    }
    if (!x.body_mine) {
        return PBX_PEER_E_NOT_YOURS;
    }
    return x.busy ? PBX_PEER_E_BUSY : 0U;
}

/* ADMIT: judges the frame buf[0..n) (nfds descriptors) a job sent. */
static void fth_admit(const uint8_t *buf, size_t n, size_t nfds)
{
    pbx_ipc_frame f;
    g_s.have_req = false;
    if (n > sizeof(g_s.req_buf)) {
        return;
    }
    memcpy(g_s.req_buf, buf, n);
    if (pbx_ipc_frame_decode(g_s.req_buf, n, nfds, &f) != PBX_OK) {
        return;
    }
    static pbx_peer_track before;
    memcpy(&before, &g_s.t, sizeof(before));
    uint16_t st = pbx_peer_track_admit(&g_s.t, &f);
    fth_check(fth_same(&before, &g_s.t));
    fth_check(st == fth_expected(&g_s.t, &f));
    if (st == 0U) {
        g_s.req = f;
        g_s.have_req = true;
    }
}

/* Checks what a relay that changed the table left in it: a BEGIN's new
 * request with the job and session it claimed; a final DECISION's
 * request gone and an APPROVED one's grant held (when there was room). */
static void fth_relayed_left(const pbx_ipc_frame *req, const pbx_ipc_frame *rep,
                             uint32_t grants)
{
    const pbx_peer_track *t = &g_s.t;
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    if (req->op == (uint16_t)PBX_IPC_OP_BEGIN) {
        const pbx_peer_track_req *r = fth_req_of(t, rep->request);
        fth_check(rep->status == 0U && r != NULL &&
                  pbx_ipc_begin_decode(req, &b) == PBX_OK &&
                  r->job_id == b.ctx.job_id && r->job_gen == b.ctx.job_gen &&
                  r->session == b.ctx.session &&
                  r->wait == (uint8_t)PBX_PEER_TRACK_IDLE);
    } else if (req->op == (uint16_t)PBX_IPC_OP_DECISION) {
        fth_check(fth_req_of(t, req->request) == NULL);
        if (rep->status == 0U &&
            pbx_ipc_decision_reply_decode(rep, &d) == PBX_OK &&
            d.outcome == (uint8_t)PBX_IPC_OUTCOME_APPROVED &&
            d.grant.gen != 0U && grants < PBX_PEER_TRACK_GRANTS_MAX) {
            fth_check(fth_has_grant(t, d.grant));
        }
    } else {
        fth_check(req->op == (uint16_t)PBX_IPC_OP_CONSUME ||
                  req->op == (uint16_t)PBX_IPC_OP_CANCEL);
        fth_check(t->grant_count + 1U == grants);
    }
}

/* RELAY: powerboxd's reply buf[0..n) (nfds descriptors) to the admitted
 * call. */
static void fth_relay(const uint8_t *buf, size_t n, size_t nfds)
{
    static uint8_t rep_buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_peer_track before;
    pbx_ipc_frame rep;
    if (!g_s.have_req || n > sizeof(rep_buf)) {
        return;
    }
    memcpy(rep_buf, buf, n);
    if (pbx_ipc_frame_decode(rep_buf, n, nfds, &rep) != PBX_OK) {
        return;
    }
    g_s.have_req = false;
    memcpy(&before, &g_s.t, sizeof(before));
    bool changed = pbx_peer_track_relayed(&g_s.t, &g_s.req, &rep);
    fth_check(changed == !fth_same(&before, &g_s.t));
    if (changed) {
        fth_relayed_left(&g_s.req, &rep, before.grant_count);
    }
}

/* REQ: a request the connection began, added as a relayed BEGIN does. */
static void fth_req(const uint8_t *a)
{
    pbx_peer_track *t = &g_s.t;
    pbx_ipc_id id = {pbx_le_get32(a), pbx_le_get32(a + 4)};
    if (id.gen == 0U || t->count >= PBX_PEER_TRACK_MAX ||
        fth_req_of(t, id) != NULL) {
        return;
    }
    pbx_peer_track_req *r = &t->reqs[t->count++];
    memset(r, 0, sizeof(*r));
    r->id = id;
    r->job_id = pbx_le_get64(a + 8);
    r->job_gen = pbx_le_get32(a + 16);
    r->session = pbx_le_get64(a + 20);
}

/* GRANT: a grant the connection holds, added as an APPROVED DECISION
 * relayed does. */
static void fth_grant(const uint8_t *a)
{
    pbx_peer_track *t = &g_s.t;
    pbx_ipc_id id = {pbx_le_get32(a), pbx_le_get32(a + 4)};
    if (id.gen == 0U || t->grant_count >= PBX_PEER_TRACK_GRANTS_MAX ||
        fth_has_grant(t, id)) {
        return;
    }
    t->grants[t->grant_count++] = id;
}

/* WAIT: one step of a request's DECISION hold, each checked against the
 * transition pbx_peer_track.h documents. */
static void fth_wait(const uint8_t *a)
{
    pbx_peer_track *t = &g_s.t;
    pbx_ipc_id id = {a[1], 1U};
    if (t->count != 0U) {
        id = t->reqs[a[1] % t->count].id;
    }
    const pbx_peer_track_req *r = fth_req_of(t, id);
    uint8_t w = r != NULL ? r->wait : 0U;
    uint32_t seq = pbx_le_get32(a + 2);
    g_s.now_ms += pbx_le_get16(a + 6);
    switch (a[0] % 6U) {
    case 0:
        fth_check(pbx_peer_track_asked(t, id) ==
                  (r != NULL && w == (uint8_t)PBX_PEER_TRACK_IDLE));
        break;
    case 1:
        (void)pbx_peer_track_hold(t, id, seq, g_s.now_ms);
        break;
    case 2:
        fth_check((pbx_peer_track_wake(t, id, g_s.now_ms) ==
                   PBX_PEER_TRACK_WAKE_NONE) == (r == NULL));
        break;
    case 3:
        fth_check(pbx_peer_track_release(t, id, &seq) ==
                  (w == (uint8_t)PBX_PEER_TRACK_HELD ||
                   w == (uint8_t)PBX_PEER_TRACK_REASK));
        break;
    case 4: {
        pbx_ipc_id due[PBX_PEER_TRACK_MAX];
        fth_check(pbx_peer_track_due(t, g_s.now_ms, 1000U, due,
                                     PBX_PEER_TRACK_MAX) <= t->count);
        break;
    }
    default:
        fth_check(pbx_peer_track_drop(t, id) == (r != NULL) &&
                  fth_req_of(t, id) == NULL);
        break;
    }
}

/* Runs one record at data[0..size); returns its length, or 0 when it is
 * cut short (the input ends). */
static size_t fth_record(const uint8_t *data, size_t size)
{
    static const size_t args[8] = {2U, 2U, 28U, 8U, 12U, 8U, 0U, 0U};
    unsigned kind = data[0] & 7U;
    size_t nfds = (data[0] >> 3) & 7U;
    if (kind > 5U || size - 1U < args[kind]) {
        return 0U;
    }
    const uint8_t *a = data + 1;
    size_t used = 1U + args[kind];
    if (kind <= 1U) {
        size_t n = pbx_le_get16(a);
        if (size - used < n) {
            return 0U;
        }
        if (kind == 0U) {
            fth_admit(a + 2, n, nfds);
        } else {
            fth_relay(a + 2, n, nfds);
        }
        used += n;
    } else if (kind == 2U) {
        fth_req(a);
    } else if (kind == 3U) {
        fth_grant(a);
    } else if (kind == 4U && pbx_le_get32(a + 8) != 0U) {
        pbx_peer_track_bind(&g_s.t, pbx_le_get64(a), pbx_le_get32(a + 8));
    } else if (kind == 5U) {
        fth_wait(a);
    }
    return used;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    pbx_peer_track_init(&g_s.t);
    g_s.have_req = false;
    g_s.now_ms = 0U;
    size_t at = 0;
    /* Every record consumes at least its kind byte: at most size steps. */
    while (at < size) {
        size_t used = fth_record(data + at, size - at);
        if (used == 0U) {
            break;
        }
        fth_table_ok(&g_s.t);
        at += used;
    }
    return 0;
}
