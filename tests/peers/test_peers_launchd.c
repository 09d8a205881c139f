/*
 * test_peers_launchd.c: launchd's per-connection table (pure, on cases:
 * ownership, job binding, DECISIONs held until woken) and pbx-launchd
 * serve as a real process between control and job connections and a fake
 * powerboxd on the broker socketpair and wake route: jobs are launched
 * (python3 helpers), bound (job, session, realm, entry, target) and ended
 * (EXIT, EXPIRE, the id kept until the EXPIRE is answered, process group
 * and pid killed with their launcher); jobs and their descendants cannot
 * use the control socket; `run` passes --session and --realm; broker
 * replies are matched by launchd's own seq across concurrent callers, a
 * slow call answers ROUTE and its late reply is cancelled (a late
 * approval's grant too), never delivered, and counted off once; held
 * DECISIONs are delivered on WAKE (an early WAKE remembered, a late
 * re-ask still delivered); spoofed claims and BEGIN from control
 * connections are refused; hang-ups cancel exactly what was left open
 * (the end line keeps the entry); broker sends never wait and one
 * connection has at most 64 calls out; idle control connections are
 * dropped (only accepted LAUNCH/EXPIRE count as use), the longest-silent
 * evicted at --max-conns, a newcomer refused only when none can be;
 * descriptors return to their baseline. With --attach-fd and no routes,
 * callers are answered ROUTE until an 'R' brings a wake route and a
 * broker (wrong counts and types refused, descriptors closed); a second
 * 'R', or powerboxd closing the broker, ends every grant of the old one
 * with a line each (the job keeps running). */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_launch.h"
#include "../../peers/lib/pbx_peer_track.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static pbx_peer_msg g_m;
/* The fake powerboxd's end of the running launchd's wake route (set by
 * tl_start and on new routes): tl_call wakes a request before asking its
 * DECISION, as powerboxd does once the decision is published. */
static int g_tl_wake = -1;
static uint8_t g_out[PBX_IPC_FRAME_BYTES_MAX];
static uint8_t g_req[PBX_IPC_FRAME_BYTES_MAX];
static uint8_t g_rep[PBX_IPC_FRAME_BYTES_MAX];

/* Decodes the n bytes in buf (no capability) into *f. */
static void tl_decode(const uint8_t *buf, size_t n, pbx_ipc_frame *f)
{
    PBX_REQUIRE(pbx_ipc_frame_decode(buf, n, 0, f) == PBX_OK);
}

/* A request frame of op for id (BEGIN: the fixed record below; CANCEL:
 * the exact form). */
static size_t tl_request(uint16_t op, pbx_ipc_id id, uint8_t *buf)
{
    size_t n = 0;
    if (op == (uint16_t)PBX_IPC_OP_BEGIN) {
        pbx_ipc_begin b;
        memset(&b, 0, sizeof(b));
        b.ctx.session = 7;
        b.ctx.job_id = 11;
        b.ctx.job_gen = 1;
        b.ctx.operation = PBX_IPC_OPERATION_READ;
        b.ctx.object_class = PBX_IPC_CLASS_FILE;
        b.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
        b.ctx.mode = PBX_IPC_MODE_INSTALL;
        b.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
        b.ctx.entry.len = 3;
        memcpy(b.ctx.entry.bytes, "cat", 3);
        b.target.process_id = 42;
        b.target.process_gen = 5;
        b.target.slot = 20;
        b.selector_len = 1;
        PBX_REQUIRE(pbx_ipc_begin_encode(&b, buf, PBX_IPC_FRAME_BYTES_MAX,
                                         &n) == PBX_OK);
        return n;
    }
    if (op == (uint16_t)PBX_IPC_OP_CANCEL) {
        pbx_ipc_cancel c;
        memset(&c, 0, sizeof(c));
        c.request = id;
        PBX_REQUIRE(pbx_ipc_cancel_encode(&c, buf, PBX_IPC_FRAME_BYTES_MAX,
                                          &n) == PBX_OK);
        return n;
    }
    PBX_REQUIRE(pbx_ipc_empty_encode(op, id, buf, PBX_IPC_FRAME_BYTES_MAX,
                                     &n) == PBX_OK);
    return n;
}

/* A reply to op for id: status st (error form), or status zero with
 * the BEGIN reply or a DECISION of outcome. */
static size_t tl_reply(uint16_t op, pbx_ipc_id id, uint16_t st, uint8_t outcome,
                       uint8_t *buf)
{
    size_t n = 0;
    if (st != 0U) {
        PBX_REQUIRE(pbx_ipc_status_reply_encode(op, id, (pbx_err)st, buf,
                                                PBX_IPC_FRAME_BYTES_MAX,
                                                &n) == PBX_OK);
    } else if (op == (uint16_t)PBX_IPC_OP_BEGIN) {
        pbx_ipc_begin_reply br = {70};
        PBX_REQUIRE(pbx_ipc_begin_reply_encode(
                        id, &br, buf, PBX_IPC_FRAME_BYTES_MAX, &n) == PBX_OK);
    } else if (op == (uint16_t)PBX_IPC_OP_DECISION) {
        pbx_ipc_decision d;
        memset(&d, 0, sizeof(d));
        d.outcome = outcome;
        PBX_REQUIRE(pbx_ipc_decision_reply_encode(
                        id, &d, buf, PBX_IPC_FRAME_BYTES_MAX, &n) == PBX_OK);
    } else {
        PBX_REQUIRE(pbx_ipc_empty_encode((uint16_t)(op | PBX_IPC_REPLY_BIT), id,
                                         buf, PBX_IPC_FRAME_BYTES_MAX,
                                         &n) == PBX_OK);
    }
    return n;
}

/* Feeds one relayed call (request op for req, reply as tl_reply) to t
 * and returns whether the table changed. */
static bool tl_feed(pbx_peer_track *t, uint16_t op, pbx_ipc_id req,
                    pbx_ipc_id rep, uint16_t st, uint8_t outcome)
{
    pbx_ipc_frame fq;
    pbx_ipc_frame fr;
    tl_decode(g_req, tl_request(op, req, g_req), &fq);
    tl_decode(g_rep, tl_reply(op, rep, st, outcome, g_rep), &fr);
    return pbx_peer_track_relayed(t, &fq, &fr);
}

PBX_TEST(peers_track_keeps_exactly_the_undecided_requests)
{
    static pbx_peer_track t;
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id b = {4, 2};
    const pbx_ipc_id stale = {3, 8};
    pbx_peer_track_init(&t);
    /* A begun request is added once; a refused BEGIN adds nothing. */
    PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, a, 0, 0));
    PBX_CHECK(!tl_feed(&t, PBX_IPC_OP_BEGIN, zero, a, 0, 0));
    PBX_CHECK(!tl_feed(&t, PBX_IPC_OP_BEGIN, zero, zero,
                       (uint16_t)PBX_E_CORE_BROKER, 0));
    PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, b, 0, 0));
    PBX_CHECK_EQ(t.count, 2U);
    /* PENDING, other ops and refusals that leave the request alive keep
     * it; a stale generation names another request. */
    PBX_CHECK(
        !tl_feed(&t, PBX_IPC_OP_DECISION, a, a, 0, PBX_IPC_OUTCOME_PENDING));
    PBX_CHECK(!tl_feed(&t, PBX_IPC_OP_DECISION, a, a,
                       (uint16_t)PBX_E_CORE_PARTITION, 0));
    PBX_CHECK(!tl_feed(&t, PBX_IPC_OP_CANCEL, a, a, 0, 0));
    PBX_CHECK(!tl_feed(&t, PBX_IPC_OP_DECISION, stale, stale, 0,
                       PBX_IPC_OUTCOME_DENIED));
    PBX_CHECK_EQ(t.count, 2U);
    /* A terminal outcome, or a record already delivered, ends it. */
    PBX_CHECK(
        tl_feed(&t, PBX_IPC_OP_DECISION, a, a, 0, PBX_IPC_OUTCOME_CANCELLED));
    PBX_CHECK(
        tl_feed(&t, PBX_IPC_OP_DECISION, b, b, (uint16_t)PBX_E_CORE_STATE, 0));
    PBX_CHECK_EQ(t.count, 0U);
    /* Bounded: a full table takes nothing more and says so. */
    for (uint32_t i = 0; i < PBX_PEER_TRACK_MAX; i++) {
        pbx_ipc_id id = {i, 1U};
        PBX_CHECK(!pbx_peer_track_full(&t));
        PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, id, 0, 0));
    }
    pbx_ipc_id more = {99, 1};
    PBX_CHECK(pbx_peer_track_full(&t));
    PBX_CHECK(!tl_feed(&t, PBX_IPC_OP_BEGIN, zero, more, 0, 0));
    PBX_CHECK(!pbx_peer_track_drop(&t, more));
    PBX_CHECK(pbx_peer_track_drop(&t, (pbx_ipc_id){5, 1}));
    PBX_CHECK_EQ(t.count, PBX_PEER_TRACK_MAX - 1U);
}

/* A CANCEL of grant g (grant form), or by correlation of job:gen and
 * session when g.gen is zero. */
static size_t tl_cancel_end(pbx_ipc_id g, uint64_t job, uint32_t job_gen,
                            uint64_t session, uint8_t *buf)
{
    pbx_ipc_cancel c;
    size_t n = 0;
    memset(&c, 0, sizeof(c));
    c.by_grant = g.gen != 0U;
    c.grant = g;
    c.by_correlation = g.gen == 0U;
    c.job_id = c.by_correlation ? job : 0U;
    c.job_gen = c.by_correlation ? job_gen : 0U;
    c.session = c.by_correlation ? session : 0U;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, buf, PBX_IPC_FRAME_BYTES_MAX, &n) ==
                PBX_OK);
    return n;
}

/* A CONSUME of grant g. */
static size_t tl_consume(pbx_ipc_id g, uint8_t *buf)
{
    pbx_ipc_consume c = {g};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_consume_encode(&c, buf, PBX_IPC_FRAME_BYTES_MAX, &n) ==
                PBX_OK);
    return n;
}

/* The admission verdict of t for the n-byte request in g_req. */
static uint16_t tl_admit(const pbx_peer_track *t, size_t n)
{
    pbx_ipc_frame f;
    tl_decode(g_req, n, &f);
    return pbx_peer_track_admit(t, &f);
}

/* An APPROVED DECISION reply for request id naming grant g into buf. */
static size_t tl_approved(pbx_ipc_id id, pbx_ipc_id g, uint8_t *buf)
{
    pbx_ipc_decision d;
    size_t n = 0;
    memset(&d, 0, sizeof(d));
    d.outcome = PBX_IPC_OUTCOME_APPROVED;
    d.mode = PBX_IPC_MODE_INSTALL;
    d.grant = g;
    d.installed_slot = 20;
    PBX_REQUIRE(pbx_ipc_decision_reply_encode(
                    id, &d, buf, PBX_IPC_FRAME_BYTES_MAX, &n) == PBX_OK);
    return n;
}

PBX_TEST(peers_track_admits_only_what_the_connection_owns)
{
    static pbx_peer_track t;
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id other = {3, 8};
    const pbx_ipc_id g = {9, 4};
    pbx_peer_track_init(&t);
    /* Unbound (a control connection): BEGIN is refused, EXPIRE passes. */
    PBX_CHECK_EQ(tl_admit(&t, tl_request(PBX_IPC_OP_BEGIN, zero, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    pbx_ipc_expire ex0 = {PBX_IPC_EXPIRE_JOB, 1, 11, 0};
    size_t n0 = 0;
    PBX_REQUIRE(pbx_ipc_expire_encode(&ex0, g_req, sizeof(g_req), &n0) ==
                PBX_OK);
    PBX_CHECK_EQ(tl_admit(&t, n0), 0U);
    /* Bound to job 11:1: nothing begun, every frame naming a request or
     * grant is refused; BEGIN passes, EXPIRE does not; a non-public op is
     * misrouted. */
    pbx_peer_track_bind(&t, 11, 1);
    PBX_CHECK_EQ(tl_admit(&t, tl_request(PBX_IPC_OP_BEGIN, zero, g_req)), 0U);
    PBX_CHECK_EQ(tl_admit(&t, tl_request(PBX_IPC_OP_DECISION, a, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_admit(&t, tl_request(PBX_IPC_OP_CANCEL, a, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_admit(&t, tl_consume(g, g_req)), PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_admit(&t, tl_cancel_end(g, 0, 0, 0, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_admit(&t, tl_cancel_end(zero, 11, 1, 7, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    pbx_ipc_expire ex = {PBX_IPC_EXPIRE_JOB, 1, 11, 0};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_expire_encode(&ex, g_req, sizeof(g_req), &n) == PBX_OK);
    PBX_CHECK_EQ(tl_admit(&t, n), PBX_PEER_E_NOT_YOURS);
    pbx_ipc_wake w;
    memset(&w, 0, sizeof(w));
    w.job_id = 11;
    w.job_gen = 1;
    PBX_REQUIRE(pbx_ipc_wake_encode(a, &w, g_req, sizeof(g_req), &n) == PBX_OK);
    PBX_CHECK_EQ(tl_admit(&t, n), PBX_PEER_E_ROUTE);
    /* Begun (job 11:1, session 7): its exact id and its correlation pass,
     * another generation and another job or session do not. */
    PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, a, 0, 0));
    PBX_CHECK_EQ(t.reqs[0].job_id, 11U);
    PBX_CHECK_EQ(t.reqs[0].session, 7U);
    PBX_CHECK_EQ(t.reqs[0].job_gen, 1U);
    uint16_t ops[] = {PBX_IPC_OP_SELECTOR, PBX_IPC_OP_DECISION,
                      PBX_IPC_OP_CANCEL};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        size_t k =
            ops[i] == PBX_IPC_OP_SELECTOR ? 0U : tl_request(ops[i], a, g_req);
        if (ops[i] == PBX_IPC_OP_SELECTOR) {
            pbx_ipc_selector sc = {0, 1, (const uint8_t *)"x"};
            PBX_REQUIRE(pbx_ipc_selector_encode(a, &sc, g_req, sizeof(g_req),
                                                &k) == PBX_OK);
        }
        PBX_CHECK_EQ(tl_admit(&t, k), 0U);
    }
    PBX_CHECK_EQ(tl_admit(&t, tl_request(PBX_IPC_OP_DECISION, other, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_admit(&t, tl_cancel_end(zero, 11, 1, 7, g_req)), 0U);
    PBX_CHECK_EQ(tl_admit(&t, tl_cancel_end(zero, 11, 2, 7, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_admit(&t, tl_cancel_end(zero, 11, 1, 8, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_admit(&t, tl_consume(g, g_req)), PBX_PEER_E_NOT_YOURS);
    /* A correlation naming another job is refused even if a request of
     * the connection claimed it (a bound connection speaks for its job). */
    t.reqs[0].job_id = 12;
    PBX_CHECK_EQ(tl_admit(&t, tl_cancel_end(zero, 12, 1, 7, g_req)),
                 PBX_PEER_E_NOT_YOURS);
}

PBX_TEST(peers_track_holds_decisions_until_woken)
{
    static pbx_peer_track t;
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id b = {4, 1};
    const pbx_ipc_id none = {9, 9};
    pbx_ipc_id due[4];
    uint32_t seq = 0;
    pbx_peer_track_init(&t);
    pbx_peer_track_bind(&t, 11, 1);
    PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, a, 0, 0));
    PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, b, 0, 0));
    PBX_CHECK(!pbx_peer_track_waiting(&t));
    /* a: asked, PENDING -> held; a second DECISION waits (BUSY). */
    PBX_CHECK(pbx_peer_track_asked(&t, a));
    PBX_CHECK(!pbx_peer_track_asked(&t, a));
    PBX_CHECK(!pbx_peer_track_hold(&t, a, 0x51, 100));
    PBX_CHECK(pbx_peer_track_waiting(&t));
    PBX_CHECK_EQ(tl_admit(&t, tl_request(PBX_IPC_OP_DECISION, a, g_req)),
                 PBX_PEER_E_BUSY);
    /* The WAKE asks again; a second WAKE meanwhile is remembered, so the
     * next PENDING asks once more; the final answer releases the caller
     * with its seq. */
    PBX_CHECK_EQ(pbx_peer_track_wake(&t, a, 200), PBX_PEER_TRACK_WAKE_ASK);
    PBX_CHECK_EQ(pbx_peer_track_wake(&t, a, 210), PBX_PEER_TRACK_WAKE_KEPT);
    PBX_CHECK(pbx_peer_track_hold(&t, a, 0, 220));
    PBX_CHECK(!pbx_peer_track_hold(&t, a, 0, 230));
    PBX_CHECK(pbx_peer_track_release(&t, a, &seq));
    PBX_CHECK_EQ(seq, 0x51U);
    PBX_CHECK(!pbx_peer_track_waiting(&t));
    /* b: a WAKE before its PENDING answer is remembered and acted on. */
    PBX_CHECK(pbx_peer_track_asked(&t, b));
    PBX_CHECK_EQ(pbx_peer_track_wake(&t, b, 300), PBX_PEER_TRACK_WAKE_KEPT);
    PBX_CHECK(pbx_peer_track_hold(&t, b, 0x52, 310));
    PBX_CHECK_EQ(t.reqs[1].wait, (uint8_t)PBX_PEER_TRACK_REASK);
    /* Back to held; the fallback finds it after every_ms, once. */
    PBX_CHECK(!pbx_peer_track_hold(&t, b, 0, 400));
    PBX_CHECK_EQ(pbx_peer_track_due(&t, 4000, 5000, due, 4), 0U);
    PBX_CHECK_EQ(pbx_peer_track_due(&t, 5400, 5000, due, 4), 1U);
    PBX_CHECK(due[0].index == b.index && due[0].gen == b.gen);
    PBX_CHECK_EQ(pbx_peer_track_due(&t, 5400, 5000, due, 4), 0U);
    PBX_CHECK(pbx_peer_track_release(&t, b, &seq));
    PBX_CHECK_EQ(seq, 0x52U);
    /* A request the connection does not hold. */
    PBX_CHECK_EQ(pbx_peer_track_wake(&t, none, 1), PBX_PEER_TRACK_WAKE_NONE);
    PBX_CHECK(!pbx_peer_track_release(&t, none, &seq));
}

PBX_TEST(peers_track_grants_follow_approval)
{
    static pbx_peer_track t;
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id other = {3, 8};
    const pbx_ipc_id g = {9, 4};
    size_t n = 0;
    pbx_peer_track_init(&t);
    PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, a, 0, 0));
    /* APPROVED ends the request and hands over its grant: the grant
     * passes, the request no longer does. */
    pbx_ipc_frame fq;
    pbx_ipc_frame fr;
    tl_decode(g_req, tl_request(PBX_IPC_OP_DECISION, a, g_req), &fq);
    tl_decode(g_rep, tl_approved(a, g, g_rep), &fr);
    PBX_CHECK(pbx_peer_track_relayed(&t, &fq, &fr));
    PBX_CHECK_EQ(t.count, 0U);
    PBX_CHECK_EQ(t.grant_count, 1U);
    PBX_CHECK(pbx_peer_track_holds(&t, g));
    PBX_CHECK_EQ(tl_admit(&t, tl_request(PBX_IPC_OP_DECISION, a, g_req)),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_admit(&t, tl_consume(g, g_req)), 0U);
    PBX_CHECK_EQ(tl_admit(&t, tl_cancel_end(g, 0, 0, 0, g_req)), 0U);
    PBX_CHECK_EQ(tl_admit(&t, tl_consume(other, g_req)), PBX_PEER_E_NOT_YOURS);
    /* A refusal that leaves the grant alive keeps it; an accepted CONSUME
     * (or a grant already gone) ends it. */
    tl_decode(g_req, tl_consume(g, g_req), &fq);
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_CONSUME, zero,
                                            PBX_E_CORE_BUSY, g_rep,
                                            sizeof(g_rep), &n) == PBX_OK);
    tl_decode(g_rep, n, &fr);
    PBX_CHECK(!pbx_peer_track_relayed(&t, &fq, &fr));
    PBX_CHECK(pbx_peer_track_holds(&t, g));
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_CONSUME | PBX_IPC_REPLY_BIT,
                                     zero, g_rep, sizeof(g_rep), &n) == PBX_OK);
    tl_decode(g_rep, n, &fr);
    PBX_CHECK(pbx_peer_track_relayed(&t, &fq, &fr));
    PBX_CHECK(!pbx_peer_track_holds(&t, g));
    PBX_CHECK_EQ(tl_admit(&t, tl_consume(g, g_req)), PBX_PEER_E_NOT_YOURS);
    /* The grant CANCEL ends a grant too, even when answered STALE. */
    PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, a, 0, 0));
    tl_decode(g_req, tl_request(PBX_IPC_OP_DECISION, a, g_req), &fq);
    tl_decode(g_rep, tl_approved(a, other, g_rep), &fr);
    PBX_CHECK(pbx_peer_track_relayed(&t, &fq, &fr));
    tl_decode(g_req, tl_cancel_end(other, 0, 0, 0, g_req), &fq);
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_CANCEL, other,
                                            PBX_E_CORE_STALE, g_rep,
                                            sizeof(g_rep), &n) == PBX_OK);
    tl_decode(g_rep, n, &fr);
    PBX_CHECK(pbx_peer_track_relayed(&t, &fq, &fr));
    PBX_CHECK_EQ(t.grant_count, 0U);
    /* Bounded: with the grant table full a DECISION waits (BUSY). */
    PBX_CHECK(tl_feed(&t, PBX_IPC_OP_BEGIN, zero, a, 0, 0));
    t.grant_count = PBX_PEER_TRACK_GRANTS_MAX;
    PBX_CHECK_EQ(tl_admit(&t, tl_request(PBX_IPC_OP_DECISION, a, g_req)),
                 PBX_PEER_E_BUSY);
    /* A body that does not decode is answered with its decoder's error. */
    n = tl_consume(g, g_req);
    g_req[PBX_IPC_HEADER_BYTES + 4U] = 0U;
    g_req[PBX_IPC_HEADER_BYTES + 5U] = 0U;
    g_req[PBX_IPC_HEADER_BYTES + 6U] = 0U;
    g_req[PBX_IPC_HEADER_BYTES + 7U] = 0U;
    PBX_CHECK_EQ(tl_admit(&t, n), (uint16_t)PBX_E_IPC_GENERATION);
}

/* Sends powerboxd's WAKE for id. */
static void tl_wake(int wake, pbx_ipc_id id)
{
    pbx_ipc_wake w = {11, 1};
    size_t k = 0;
    PBX_REQUIRE(pbx_ipc_wake_encode(id, &w, g_out, sizeof(g_out), &k) ==
                PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send(wake, g_out, k, -1) == 0);
}

/* The fake powerboxd: receives one frame on the broker (launchd's own
 * nonzero seq), checks op and id, and answers as tl_reply with that seq;
 * returns the seq. */
static uint32_t tl_serve(int broker, uint16_t op, pbx_ipc_id id, uint16_t st,
                         uint8_t outcome)
{
    PBX_REQUIRE(tp_readable(broker, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(broker, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    PBX_CHECK_EQ(g_m.frame.op, op);
    PBX_CHECK(g_m.frame.seq != 0U);
    if (op != (uint16_t)PBX_IPC_OP_BEGIN && op != (uint16_t)PBX_IPC_OP_EXPIRE) {
        PBX_CHECK_EQ(g_m.frame.request.index, id.index);
        PBX_CHECK_EQ(g_m.frame.request.gen, id.gen);
    }
    if (op == (uint16_t)PBX_IPC_OP_CANCEL) {
        /* The exact form: neither correlation nor grant. */
        pbx_ipc_cancel c;
        PBX_CHECK_EQ(pbx_ipc_cancel_decode(&g_m.frame, &c), PBX_OK);
        PBX_CHECK(!c.by_correlation && !c.by_grant);
    }
    pbx_peer_io_close_all(g_m.fds, g_m.nfds);
    uint32_t seq = g_m.frame.seq;
    size_t n = tl_reply(op, id, st, outcome, g_out);
    PBX_CHECK(pbx_peer_io_send_seq(broker, g_out, n, seq, -1) == 0);
    return seq;
}

/* Receives the next frame on conn (within 3 s) into g_m. */
static void tl_recv(int conn)
{
    PBX_REQUIRE(tp_readable(conn, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(conn, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
}

/* The client side: sends op for id on conn with seq 0x77 while the fake
 * answers it; returns the status launchd relayed back (seq restored). */
static uint16_t tl_call(int conn, int broker, uint16_t op, pbx_ipc_id id,
                        uint16_t st, uint8_t outcome)
{
    size_t n = tl_request(op, id, g_req);
    if (op == (uint16_t)PBX_IPC_OP_DECISION) {
        /* Decided: launchd asks powerboxd only after this WAKE. */
        tl_wake(g_tl_wake, id);
    }
    PBX_REQUIRE(pbx_peer_io_send_seq(conn, g_req, n, 0x77U, -1) == 0);
    (void)tl_serve(broker, op, id, st, outcome);
    tl_recv(conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0x77U);
    return g_m.frame.status;
}

/* Whether nothing arrives on fd within ms. */
static bool tl_quiet(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) == 0;
}

/* Sends the n bytes in g_req (with cap unless negative) on conn and
 * returns the status of launchd's own answer; fails if the frame reached
 * the fake powerboxd on broker. */
static uint16_t tl_refused(int conn, int broker, size_t n, int cap)
{
    PBX_REQUIRE(pbx_peer_io_send(conn, g_req, n, cap) == 0);
    tl_recv(conn);
    PBX_CHECK_EQ(g_m.nfds, 0U);
    PBX_CHECK(tl_quiet(broker, 50));
    return g_m.frame.status;
}

/* A running launchd with a fake powerboxd (broker and wake ends ours).
 * broker_sndbuf (set before tl_start; 0: the default) shrinks launchd's
 * send buffer on the broker, so that it fills after a few frames. Its
 * stderr goes to log, a file of its own. */
typedef struct tl_srv {
    pid_t pid;
    int wake;
    int broker;
    int broker_sndbuf;
    /* When set (before tl_start): launchd runs under pbx-sandbox-probe
     * --no-landlock (or fake, when set: --no-seccomp) with this errno (as
     * text). */
    const char *no_landlock;
    const char *fake;
    /* When set (before tl_start): launchd gets no wake route and no
     * broker, only --attach-fd (our end in attach; wake and broker -1). */
    bool attach_only;
    int attach;
    char ctl[512];
    char log[512];
} tl_srv;

/* The serve options of s's launchd (its ends in w[1] and b[1], or the
 * attach channel's in b[1] when attach_only) into args from n on;
 * returns the new count. */
static size_t tl_serve_args(tl_srv *s, const char **args, size_t n,
                            const int *w, const int *b)
{
    static char warg[16];
    static char barg[16];
    (void)snprintf(warg, sizeof(warg), "%d", w[1]);
    (void)snprintf(barg, sizeof(barg), "%d", b[1]);
    args[n++] = "serve";
    if (!s->attach_only) {
        args[n++] = "--wake-fd";
        args[n++] = warg;
    }
    args[n++] = s->attach_only ? "--attach-fd" : "--broker-fd";
    args[n++] = barg;
    args[n++] = "--control";
    args[n++] = s->ctl;
    args[n++] = "--stage";
    args[n++] = "42:5";
    return n;
}

/* Starts pbx-launchd serve with the extra NULL-terminated options. */
static void tl_start(tl_srv *s, const char *const *extra)
{
    int w[2] = {-1, -1};
    int b[2];
    if (!s->attach_only) {
        PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w) == 0);
    }
    PBX_REQUIRE(tp_seqpair(b));
    if (s->broker_sndbuf > 0) {
        PBX_REQUIRE(setsockopt(b[1], SOL_SOCKET, SO_SNDBUF, &s->broker_sndbuf,
                               sizeof(s->broker_sndbuf)) == 0);
    }
    const char *dir = tp_tmpdir();
    (void)snprintf(s->ctl, sizeof(s->ctl), "%s/launchd.sock", dir);
    (void)snprintf(s->log, sizeof(s->log), "%s/pbx-peer-%s.log", dir,
                   s->no_landlock != NULL ? "sandbox-probe" : "launchd");
    static char launchd[512];
    const char *bin = getenv("PBX_PEERS_BIN");
    (void)snprintf(launchd, sizeof(launchd), "%s/pbx-launchd",
                   bin != NULL ? bin : "build/bin");
    const char *args[TP_ARGS_MAX] = {s->fake != NULL ? s->fake
                                                     : "--no-landlock",
                                     s->no_landlock, "--", launchd};
    size_t n = tl_serve_args(s, args, s->no_landlock != NULL ? 4U : 0U, w, b);
    for (size_t i = 0;
         extra != NULL && extra[i] != NULL && n + 4U < TP_ARGS_MAX; i++) {
        args[n++] = extra[i];
    }
    args[n] = NULL;
    int keep[2] = {b[1], w[1]};
    /* tp_spawn puts the log in $TMPDIR: this test's own directory. */
    static char old[512];
    const char *t = getenv("TMPDIR");
    (void)snprintf(old, sizeof(old), "%s", t != NULL ? t : "");
    PBX_REQUIRE(setenv("TMPDIR", dir, 1) == 0);
    s->pid = tp_spawn(s->no_landlock != NULL ? "sandbox-probe" : "launchd",
                      args, keep, s->attach_only ? 1U : 2U, -1);
    if (t != NULL) {
        (void)setenv("TMPDIR", old, 1);
    } else {
        (void)unsetenv("TMPDIR");
    }
    if (w[1] >= 0) {
        (void)close(w[1]);
    }
    (void)close(b[1]);
    PBX_REQUIRE(s->pid > 0);
    s->wake = w[0];
    g_tl_wake = w[0];
    s->broker = s->attach_only ? -1 : b[0];
    s->attach = s->attach_only ? b[0] : -1;
}

/* Whether launchd's log says what within 2 s. */
static bool tl_logged(const tl_srv *s, const char *what)
{
    static char text[65536];
    for (int i = 0; i < 200; i++) {
        if (tp_read_file(s->log, text, sizeof(text)) > 0 &&
            strstr(text, what) != NULL) {
            return true;
        }
        tp_sleep_ms(10);
    }
    return false;
}

/* Stops s and closes its ends. */
static void tl_stop(tl_srv *s)
{
    (void)tp_stop(s->pid);
    int ends[3] = {s->wake, s->broker, s->attach};
    for (size_t i = 0; i < 3U; i++) {
        if (ends[i] >= 0) {
            (void)close(ends[i]);
        }
    }
}

/* The launched helper: hands its job connection (fd 3) back over its
 * stdin (a socket of ours) as a scope hand-out, closes its own copy, and
 * lives until that socket reaches its end. */
static const char tl_helper[] =
    "import os,socket\n"
    "s=socket.socket(fileno=0)\n"
    "socket.send_fds(s,[b'PBXSCOPE'+bytes(8)],[3])\n"
    "os.close(3)\n"
    "s.recv(1)\n";

/* A launched job as the test drives it. */
typedef struct tl_job {
    int launcher; /* the control connection that launched it */
    int conn;     /* its job connection (launchd's fd 3 of the job) */
    int life;     /* closing this ends the job's process */
    uint64_t id;
    uint32_t gen;
    uint64_t target_pid;
    uint32_t target_gen;
} tl_job;

/* Sends buf[0..n) on fd with the three descriptors io attached. */
static int tl_send3(int fd, const uint8_t *buf, size_t n, const int *io)
{
    union {
        char b[CMSG_SPACE(3 * sizeof(int))];
        struct cmsghdr align;
    } cb;
    struct iovec iov = {(void *)buf, n};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&cb, 0, sizeof(cb));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cb.b;
    mh.msg_controllen = sizeof(cb.b);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(3 * sizeof(int));
    memcpy(CMSG_DATA(c), io, 3 * sizeof(int));
    return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)n ? 0 : -1;
}

/* Sends a LAUNCH of PROG args (NULL-terminated) on conn with stdio fds
 * io and job id:gen; returns the reply's status (body in *rep). */
static uint16_t tl_launch_raw(int conn, const char *const *args, const int *io,
                              uint64_t id, uint32_t gen,
                              pbx_peer_launch_reply *rep)
{
    static pbx_peer_launch_req r;
    memset(&r, 0, sizeof(r));
    r.job_id = id;
    r.job_gen = gen;
    r.session = 7;
    r.realm = 3;
    r.entry_len = 3;
    memcpy(r.entry, "cat", 3);
    for (; args[r.argc] != NULL; r.argc++) {
        r.args[r.argc] = (const uint8_t *)args[r.argc];
        r.arg_lens[r.argc] = (uint16_t)strlen(args[r.argc]);
    }
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_req, sizeof(g_req), &n) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_set_seq(g_req, n, 0x33U) == PBX_OK);
    PBX_REQUIRE(tl_send3(conn, g_req, n, io) == 0);
    PBX_REQUIRE(tp_readable(conn, 5000));
    int r2 = pbx_peer_io_recv_frame(conn, &g_m);
    PBX_REQUIRE(r2 == 0);
    pbx_peer_launch_frame f;
    PBX_REQUIRE(pbx_peer_launch_peek(g_m.buf, g_m.len, g_m.nfds, &f) == PBX_OK);
    PBX_CHECK_EQ(f.seq, 0x33U);
    if (f.status == 0U) {
        PBX_CHECK_EQ(pbx_peer_launch_reply_decode(&f, rep), PBX_OK);
    }
    return f.status;
}

/* Launches the helper as job id:gen (0:0: launchd picks) through a new
 * control connection of s and takes its job connection. */
static void tl_job_start(const tl_srv *s, tl_job *j, uint64_t id, uint32_t gen)
{
    static const char *const args[] = {"python3", "-c", tl_helper, NULL};
    int sp[2];
    PBX_REQUIRE(tp_seqpair(sp));
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    PBX_REQUIRE(nul >= 0);
    j->launcher = pbx_peer_io_connect(s->ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(j->launcher >= 0);
    int io[3] = {sp[1], nul, 2};
    pbx_peer_launch_reply rep;
    PBX_REQUIRE(tl_launch_raw(j->launcher, args, io, id, gen, &rep) == 0U);
    (void)close(sp[1]);
    (void)close(nul);
    j->id = rep.job_id;
    j->gen = rep.job_gen;
    j->target_pid = rep.target_pid;
    j->target_gen = rep.target_gen;
    uint64_t ignored = 0;
    j->conn = pbx_peer_io_scope_take(sp[0], 5000, &ignored);
    PBX_REQUIRE(j->conn >= 0);
    j->life = sp[0];
}

/* Ends job j's process and expects launchd's EXPIRE of the job at the
 * fake powerboxd and, only once that is answered, EXIT (status 0) on its
 * launcher: the job id stays taken until then. */
static void tl_job_end(const tl_srv *s, tl_job *j)
{
    (void)close(j->life);
    const pbx_ipc_id zero = {0, 0};
    PBX_CHECK(!tp_readable(j->launcher, 300));
    (void)tl_serve(s->broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
    pbx_ipc_expire ex;
    PBX_CHECK_EQ(pbx_ipc_expire_decode(&g_m.frame, &ex), PBX_OK);
    PBX_CHECK(ex.kind == PBX_IPC_EXPIRE_JOB && ex.job_id == j->id &&
              ex.job_gen == j->gen);
    PBX_REQUIRE(tp_readable(j->launcher, 5000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(j->launcher, &g_m) == 0);
    pbx_peer_launch_frame f;
    uint32_t ws = 1;
    PBX_REQUIRE(pbx_peer_launch_peek(g_m.buf, g_m.len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_exit_decode(&f, &ws), PBX_OK);
    PBX_CHECK_EQ(f.seq, 0x33U);
    PBX_CHECK_EQ(ws, 0U);
    (void)close(j->launcher);
    (void)close(j->conn);
}

/* Starts launchd (extra: more serve options, or NULL) with the fake
 * powerboxd and launches one job j that launchd numbers itself. */
static void tl_up(tl_srv *s, tl_job *j, const char *const *extra)
{
    memset(s, 0, sizeof(*s));
    tl_start(s, extra);
    tl_job_start(s, j, 0, 0);
}

/* Ends job j (its EXPIRE answered, then EXIT) and stops launchd. */
static void tl_down(tl_srv *s, tl_job *j)
{
    tl_job_end(s, j);
    tl_stop(s);
}

PBX_TEST(peers_launchd_launches_binds_and_ends_jobs)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    int base = tp_fd_count(s.pid);
    /* launchd picks job 11:1 and binds it to the one staged process. */
    tl_job a;
    tl_job_start(&s, &a, 0, 0);
    PBX_CHECK(a.id == 11U && a.gen == 1U);
    PBX_CHECK(a.target_pid == 42U && a.target_gen == 5U);
    /* A named job that is live is refused; a second job gets no staged
     * process (none free). */
    int c = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    static const char *const args[] = {"true", NULL};
    int io[3] = {0, 1, 2};
    pbx_peer_launch_reply rep;
    PBX_CHECK_EQ(tl_launch_raw(c, args, io, 11, 1, &rep), PBX_PEER_E_BUSY);
    tl_job b;
    tl_job_start(&s, &b, 20, 3);
    PBX_CHECK(b.id == 20U && b.gen == 3U && b.target_gen == 0U);
    /* Job connections may not LAUNCH or EXPIRE. */
    pbx_ipc_expire ex = {PBX_IPC_EXPIRE_JOB, 1, 11, 0};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_expire_encode(&ex, g_req, sizeof(g_req), &n) == PBX_OK);
    PBX_CHECK_EQ(tl_refused(a.conn, s.broker, n, -1), PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_launch_raw(a.conn, args, io, 0, 0, &rep),
                 PBX_PEER_E_NOT_YOURS);
    /* A job's exit: EXIT to its launcher, EXPIRE at powerboxd. */
    tl_job_end(&s, &b);
    tl_job_end(&s, &a);
    /* The staged process is free again. */
    tl_job_start(&s, &a, 0, 0);
    PBX_CHECK(a.id == 12U && a.target_gen == 5U);
    /* Its launcher hangs up: the job's process group is killed, then it
     * is expired (no EXIT: nobody to tell). */
    (void)close(a.launcher);
    const pbx_ipc_id zero = {0, 0};
    (void)tl_serve(s.broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
    PBX_CHECK(tp_hung_up(a.conn, 2000));
    (void)close(a.conn);
    (void)close(a.life);
    (void)close(c);
    PBX_CHECK_EQ(tp_fd_settle(s.pid, base, 2000), base);
    tl_stop(&s);
}

/* Receives the next broker frame into g_m and returns its seq. */
static uint32_t tl_take(int broker, uint16_t op)
{
    PBX_REQUIRE(tp_readable(broker, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(broker, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    PBX_CHECK_EQ(g_m.frame.op, op);
    PBX_CHECK(g_m.frame.seq != 0U);
    return g_m.frame.seq;
}

PBX_TEST(peers_launchd_cancels_what_a_hung_up_caller_left)
{
    tl_srv s;
    tl_job j;
    static const char *const extra[] = {"--max-open", "4", NULL};
    tl_up(&s, &j, extra);
    int base = tp_fd_count(s.pid);
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id d = {4, 2};
    /* a stays open; d is begun and decided; a refused BEGIN begins
     * nothing. */
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, d, 0, 0), 0U);
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_DECISION, d, 0,
                         PBX_IPC_OUTCOME_DENIED),
                 0U);
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, zero,
                         (uint16_t)PBX_E_CORE_BUSY, 0),
                 (uint16_t)PBX_E_CORE_BUSY);
    /* Bounded by --max-open: three more fill it; the next is BUSY
     * without reaching powerboxd. */
    for (uint32_t i = 0; i < 3U; i++) {
        pbx_ipc_id id = {10U + i, 1U};
        PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, id, 0, 0), 0U);
    }
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker,
                            tl_request(PBX_IPC_OP_BEGIN, zero, g_req), -1),
                 PBX_PEER_E_BUSY);
    /* The hang-up: exactly a and the three are cancelled at once; each
     * decision is collected after its CANCEL, a PENDING one on its WAKE;
     * nothing else is sent. */
    (void)close(j.conn);
    uint32_t cancelled = 0;
    for (uint32_t i = 0; i < 4U; i++) {
        PBX_REQUIRE(tp_readable(s.broker, 3000));
        PBX_REQUIRE(pbx_peer_io_recv_frame(s.broker, &g_m) == 0);
        pbx_ipc_id id = g_m.frame.request;
        PBX_CHECK_EQ(g_m.frame.op, PBX_IPC_OP_CANCEL);
        cancelled += (id.index == a.index && id.gen == a.gen) ||
                             (id.index >= 10U && id.gen == 1U)
                         ? 1U
                         : 0U;
        size_t n = tl_reply(PBX_IPC_OP_CANCEL, id, 0, 0, g_out);
        PBX_CHECK(pbx_peer_io_send_seq(s.broker, g_out, n, g_m.frame.seq, -1) ==
                  0);
    }
    pbx_ipc_id pending = zero;
    for (uint32_t i = 0; i < 4U; i++) {
        uint32_t seq = tl_take(s.broker, PBX_IPC_OP_DECISION);
        pbx_ipc_id id = g_m.frame.request;
        size_t n = tl_reply(PBX_IPC_OP_DECISION, id, 0,
                            i == 0U ? PBX_IPC_OUTCOME_PENDING
                                    : PBX_IPC_OUTCOME_CANCELLED,
                            g_out);
        PBX_CHECK(pbx_peer_io_send_seq(s.broker, g_out, n, seq, -1) == 0);
        pending = i == 0U ? id : pending;
    }
    /* PENDING: collected on its WAKE. */
    PBX_CHECK(tl_quiet(s.broker, 200));
    tl_wake(s.wake, pending);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, pending, 0,
                   PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(cancelled, 4U);
    PBX_CHECK(tl_quiet(s.broker, 300));
    PBX_CHECK_EQ(tp_fd_settle(s.pid, base - 1, 2000), base - 1);
    (void)close(j.life);
    (void)close(j.launcher);
    tl_stop(&s);
}

/* Connection cb (B) tries to drive request a, which another connection
 * began: DECISION, exact CANCEL, correlation CANCEL of a's job and
 * session, and COMMIT (whose scope launchd closes) are each answered by
 * launchd and never reach the fake powerboxd on broker. */
static void tl_foreign_request(int cb, int broker, pbx_ipc_id a)
{
    const pbx_ipc_id zero = {0, 0};
    PBX_CHECK_EQ(
        tl_refused(cb, broker, tl_request(PBX_IPC_OP_DECISION, a, g_req), -1),
        PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(
        tl_refused(cb, broker, tl_request(PBX_IPC_OP_CANCEL, a, g_req), -1),
        PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(
        tl_refused(cb, broker, tl_cancel_end(zero, 11, 1, 7, g_req), -1),
        PBX_PEER_E_NOT_YOURS);
    int scope[2];
    PBX_REQUIRE(tp_seqpair(scope));
    pbx_ipc_commit cm = {70};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_commit_encode(a, &cm, g_req, sizeof(g_req), &n) ==
                PBX_OK);
    PBX_CHECK_EQ(tl_refused(cb, broker, n, scope[0]), PBX_PEER_E_NOT_YOURS);
    (void)close(scope[0]);
    PBX_CHECK(tp_hung_up(scope[1], 2000));
    (void)close(scope[1]);
}

PBX_TEST(peers_launchd_relays_only_what_a_connection_owns)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    /* The control socket is launchd's authority: owner-only. */
    struct stat st;
    PBX_REQUIRE(stat(s.ctl, &st) == 0);
    PBX_CHECK_EQ(st.st_mode & 0777U, 0600U);
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id g = {9, 4};
    size_t n = 0;
    tl_job ja;
    tl_job_start(&s, &ja, 0, 0);
    int cb = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(cb >= 0);
    PBX_CHECK_EQ(tl_call(ja.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    tl_foreign_request(cb, s.broker, a);
    /* A still can: its DECISION, once woken, is relayed and hands A the
     * grant. */
    tl_wake(s.wake, a);
    PBX_REQUIRE(pbx_peer_io_send(ja.conn, g_req,
                                 tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                 -1) == 0);
    PBX_REQUIRE(tp_readable(s.broker, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(s.broker, &g_m) == 0);
    PBX_CHECK_EQ(g_m.frame.op, PBX_IPC_OP_DECISION);
    PBX_CHECK(pbx_peer_io_send_seq(s.broker, g_out, tl_approved(a, g, g_out),
                                   g_m.frame.seq, -1) == 0);
    tl_recv(ja.conn);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    /* B cannot drive A's grant either. */
    PBX_CHECK_EQ(tl_refused(cb, s.broker, tl_consume(g, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_refused(cb, s.broker, tl_cancel_end(g, 0, 0, 0, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    /* A consumes it: relayed exactly. */
    PBX_REQUIRE(pbx_peer_io_send(ja.conn, g_req, tl_consume(g, g_req), -1) ==
                0);
    (void)tl_serve(s.broker, PBX_IPC_OP_CONSUME, zero, 0, 0);
    tl_recv(ja.conn);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    /* EXPIRE stays launchd's administrative operation, from a control
     * connection. */
    pbx_ipc_expire ex = {PBX_IPC_EXPIRE_JOB, 1, 11, 0};
    PBX_REQUIRE(pbx_ipc_expire_encode(&ex, g_req, sizeof(g_req), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send(cb, g_req, n, -1) == 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
    tl_recv(cb);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    (void)close(cb);
    tl_job_end(&s, &ja);
    PBX_CHECK(tl_quiet(s.broker, 200));
    tl_stop(&s);
}

PBX_TEST(peers_launchd_matches_replies_by_seq_across_callers)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    static const char *const extra[] = {"--call-ms", "400", "--stage", "43:1",
                                        NULL};
    tl_start(&s, extra);
    tl_job ja;
    tl_job jb;
    tl_job_start(&s, &ja, 0, 0);
    tl_job_start(&s, &jb, 0, 0);
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id ra = {3, 7};
    const pbx_ipc_id rb = {4, 9};
    /* A's BEGIN, then B's (each names no job or target: launchd fills
     * them in); powerboxd answers B first, then A: each caller gets its
     * own request id and its own seq. */
    size_t n = tl_request(PBX_IPC_OP_BEGIN, zero, g_req);
    uint8_t *body = g_req + PBX_IPC_HEADER_BYTES;
    pbx_le_put64(body, 0);
    pbx_le_put32(body + 24, 0);
    pbx_le_put64(body + 16, 0);
    pbx_le_put32(body + 32, 0);
    PBX_REQUIRE(pbx_peer_io_send_seq(ja.conn, g_req, n, 0xA1U, -1) == 0);
    uint32_t sa = tl_take(s.broker, PBX_IPC_OP_BEGIN);
    PBX_REQUIRE(pbx_peer_io_send_seq(jb.conn, g_req, n, 0xB1U, -1) == 0);
    uint32_t sb = tl_take(s.broker, PBX_IPC_OP_BEGIN);
    PBX_CHECK(sa != sb);
    PBX_CHECK(pbx_peer_io_send_seq(s.broker, g_out,
                                   tl_reply(PBX_IPC_OP_BEGIN, rb, 0, 0, g_out),
                                   sb, -1) == 0);
    tl_recv(jb.conn);
    PBX_CHECK(g_m.frame.request.index == rb.index && g_m.frame.seq == 0xB1U);
    PBX_CHECK(tl_quiet(ja.conn, 50));
    PBX_CHECK(pbx_peer_io_send_seq(s.broker, g_out,
                                   tl_reply(PBX_IPC_OP_BEGIN, ra, 0, 0, g_out),
                                   sa, -1) == 0);
    tl_recv(ja.conn);
    PBX_CHECK(g_m.frame.request.index == ra.index && g_m.frame.seq == 0xA1U);
    /* A reply that matches no call goes to nobody. */
    PBX_CHECK(pbx_peer_io_send_seq(s.broker, g_out,
                                   tl_reply(PBX_IPC_OP_BEGIN, rb, 0, 0, g_out),
                                   sb, -1) == 0);
    PBX_CHECK(tl_quiet(ja.conn, 100) && tl_quiet(jb.conn, 100));
    /* A slow call: A's BEGIN is unanswered past --call-ms, A gets ROUTE;
     * B is served meanwhile; A's late reply is not delivered to anyone,
     * and the request it names is cancelled at powerboxd. */
    PBX_REQUIRE(pbx_peer_io_send_seq(ja.conn, g_req, n, 0xA2U, -1) == 0);
    uint32_t slow = tl_take(s.broker, PBX_IPC_OP_BEGIN);
    tl_wake(s.wake, rb);
    PBX_REQUIRE(pbx_peer_io_send_seq(jb.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, rb, g_req),
                                     0xB2U, -1) == 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, rb, 0,
                   PBX_IPC_OUTCOME_DENIED);
    tl_recv(jb.conn);
    PBX_CHECK(g_m.frame.seq == 0xB2U && g_m.frame.request.index == rb.index);
    tl_recv(ja.conn);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_ROUTE);
    PBX_CHECK_EQ(g_m.frame.seq, 0xA2U);
    const pbx_ipc_id late = {6, 1};
    PBX_CHECK(
        pbx_peer_io_send_seq(s.broker, g_out,
                             tl_reply(PBX_IPC_OP_BEGIN, late, 0, 0, g_out),
                             slow, -1) == 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_CANCEL, late, 0, 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, late, 0,
                   PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(tl_quiet(ja.conn, 100) && tl_quiet(jb.conn, 100));
    /* ra is still open: the job's end cancels it before the EXPIRE. */
    (void)close(ja.conn);
    (void)tl_serve(s.broker, PBX_IPC_OP_CANCEL, ra, 0, 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, ra, 0,
                   PBX_IPC_OUTCOME_CANCELLED);
    ja.conn = open("/dev/null", O_RDONLY | O_CLOEXEC);
    tl_job_end(&s, &ja);
    tl_down(&s, &jb);
}

/* An APPROVED runtime-reply DECISION reply for id carrying alias. */
static void tl_send_alias(int broker, pbx_ipc_id id, uint32_t seq, int alias)
{
    pbx_ipc_decision d;
    size_t n = 0;
    memset(&d, 0, sizeof(d));
    d.outcome = PBX_IPC_OUTCOME_APPROVED;
    d.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    d.grant = (pbx_ipc_id){9, 4};
    PBX_REQUIRE(pbx_ipc_decision_reply_encode(id, &d, g_out, sizeof(g_out),
                                              &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send_seq(broker, g_out, n, seq, alias) == 0);
}

PBX_TEST(peers_launchd_delivers_decisions_on_wake)
{
    tl_srv s;
    tl_job j;
    tl_up(&s, &j, NULL);
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id b = {4, 1};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, b, 0, 0), 0U);
    /* Undecided: the caller's DECISION waits at launchd; nothing reaches
     * powerboxd and nobody polls. */
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                     0xD1U, -1) == 0);
    PBX_CHECK(tl_quiet(j.conn, 300) && tl_quiet(s.broker, 10));
    /* The WAKE: launchd asks once and delivers, alias included, with the
     * caller's seq; that is the lifecycle's only DECISION at powerboxd. */
    tl_wake(s.wake, a);
    uint32_t seq = tl_take(s.broker, PBX_IPC_OP_DECISION);
    PBX_CHECK(g_m.frame.request.index == a.index);
    int al[2];
    PBX_REQUIRE(tp_seqpair(al));
    tl_send_alias(s.broker, a, seq, al[0]);
    (void)close(al[0]);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0xD1U);
    PBX_CHECK_EQ(g_m.nfds, 1U);
    PBX_CHECK(g_m.frame.request.index == a.index);
    pbx_peer_io_close_all(g_m.fds, g_m.nfds);
    PBX_CHECK(tp_hung_up(al[1], 2000));
    (void)close(al[1]);
    PBX_CHECK(tl_quiet(s.broker, 100));
    /* An early WAKE (before the caller's DECISION) is remembered: the
     * DECISION is relayed at once, and once. */
    tl_wake(s.wake, b);
    PBX_CHECK(tl_logged(&s, "wake request 4.1 "));
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, b, g_req),
                                     0xD2U, -1) == 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, b, 0, PBX_IPC_OUTCOME_DENIED);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0xD2U);
    PBX_CHECK(g_m.frame.request.index == b.index);
    PBX_CHECK(tl_quiet(s.broker, 100));
    tl_down(&s, &j);
}

/* The job on conn runs in session 7, realm 3 (tl_launch_raw): a BEGIN
 * claiming another session or realm is refused too, and logged (as the
 * claim of job 12.1 before it). */
static void tl_other_session_realm(const tl_srv *s, int conn)
{
    uint8_t *body = g_req + PBX_IPC_HEADER_BYTES;
    size_t n = tl_request(PBX_IPC_OP_BEGIN, (pbx_ipc_id){0, 0}, g_req);
    pbx_le_put64(body + 8, 8);
    PBX_CHECK_EQ(tl_refused(conn, s->broker, n, -1), PBX_PEER_E_NOT_YOURS);
    n = tl_request(PBX_IPC_OP_BEGIN, (pbx_ipc_id){0, 0}, g_req);
    pbx_le_put32(body + 28, 4);
    PBX_CHECK_EQ(tl_refused(conn, s->broker, n, -1), PBX_PEER_E_NOT_YOURS);
    PBX_CHECK(tl_logged(s, "BEGIN refused: job 11.1 claims session 8"));
    PBX_CHECK(tl_logged(s, "BEGIN refused: job 11.1 claims realm 4"));
    PBX_CHECK(tl_logged(s, "BEGIN refused: job 11.1 claims job 12.1"));
}

PBX_TEST(peers_launchd_refuses_job_spoofing)
{
    tl_srv s;
    tl_job j;
    tl_up(&s, &j, NULL);
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    /* tl_request's BEGIN names job 11:1, entry cat, target 42:5. A BEGIN
     * from a control connection, one claiming another job, another
     * entry or another target: refused, nothing reaches powerboxd. */
    int c = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    size_t n = tl_request(PBX_IPC_OP_BEGIN, zero, g_req);
    PBX_CHECK_EQ(tl_refused(c, s.broker, n, -1), PBX_PEER_E_NOT_YOURS);
    uint8_t *body = g_req + PBX_IPC_HEADER_BYTES;
    pbx_le_put64(body, 12);
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker, n, -1), PBX_PEER_E_NOT_YOURS);
    n = tl_request(PBX_IPC_OP_BEGIN, zero, g_req);
    body[PBX_IPC_BEGIN_FIXED_BYTES] = 'd';
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker, n, -1), PBX_PEER_E_NOT_YOURS);
    n = tl_request(PBX_IPC_OP_BEGIN, zero, g_req);
    pbx_le_put64(body + 16, 43);
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker, n, -1), PBX_PEER_E_NOT_YOURS);
    tl_other_session_realm(&s, j.conn);
    /* Zero job, session, realm and target claims are filled in from the
     * binding. */
    n = tl_request(PBX_IPC_OP_BEGIN, zero, g_req);
    pbx_le_put64(body, 0);
    pbx_le_put64(body + 8, 0);
    pbx_le_put32(body + 24, 0);
    pbx_le_put64(body + 16, 0);
    pbx_le_put32(body + 32, 0);
    PBX_REQUIRE(pbx_peer_io_send(j.conn, g_req, n, -1) == 0);
    (void)tl_take(s.broker, PBX_IPC_OP_BEGIN);
    pbx_ipc_begin b;
    PBX_CHECK_EQ(pbx_ipc_begin_decode(&g_m.frame, &b), PBX_OK);
    PBX_CHECK(b.ctx.job_id == 11U && b.ctx.job_gen == 1U &&
              b.target.process_id == 42U && b.target.process_gen == 5U);
    PBX_CHECK(b.ctx.session == 7U && b.ctx.realm == 3U);
    n = tl_reply(PBX_IPC_OP_BEGIN, a, 0, 0, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, g_m.frame.seq, -1) ==
                0);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    /* An undecodable frame is answered with the decoder's error. */
    n = tl_request(PBX_IPC_OP_DECISION, a, g_req);
    g_req[PBX_IPC_RESERVED_OFFSET] = 1U;
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req, n, 0x53U, -1) == 0);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.status, PBX_E_IPC_RESERVED);
    PBX_CHECK_EQ(g_m.frame.seq, 0x53U);
    (void)close(c);
    /* The job's end cancels a. */
    (void)close(j.conn);
    (void)tl_serve(s.broker, PBX_IPC_OP_CANCEL, a, 0, 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, a, 0,
                   PBX_IPC_OUTCOME_CANCELLED);
    j.conn = open("/dev/null", O_RDONLY | O_CLOEXEC);
    tl_down(&s, &j);
}

/* Sends an EXPIRE of job 30:1 on control connection c (seq 0x44). */
static void tl_send_expire(int c)
{
    pbx_ipc_expire ex = {PBX_IPC_EXPIRE_JOB, 1, 30, 0};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_expire_encode(&ex, g_req, sizeof(g_req), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send_seq(c, g_req, n, 0x44U, -1) == 0);
}

PBX_TEST(peers_launchd_drops_idle_and_refuses_past_its_limit)
{
    tl_srv s;
    tl_job j;
    static const char *const extra[] = {"--idle-ms", "400", NULL};
    tl_up(&s, &j, extra);
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    /* c1 only sends frames launchd refuses (a DECISION for a request it
     * does not own), every 80 ms: they do not count as use, so it is
     * dropped about 400 ms after it connected all the same. c2's accepted
     * EXPIREs, as often, keep it. */
    int c1 = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    int c2 = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c1 >= 0 && c2 >= 0);
    bool gone = false;
    int rounds = 0;
    for (; rounds < 15 && !gone; rounds++) {
        size_t n = tl_request(PBX_IPC_OP_DECISION, a, g_req);
        gone = pbx_peer_io_send(c1, g_req, n, -1) != 0 ||
               !tp_readable(c1, 1000) || pbx_peer_io_recv_frame(c1, &g_m) != 0;
        PBX_CHECK(gone || g_m.frame.status == PBX_PEER_E_NOT_YOURS);
        tl_send_expire(c2);
        (void)tl_serve(s.broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
        tl_recv(c2);
        PBX_CHECK_EQ(g_m.frame.status, 0U);
        tp_sleep_ms(80);
    }
    PBX_CHECK(gone && rounds <= 10);
    PBX_CHECK(tl_logged(&s, "dropped: idle for 400 ms"));
    PBX_CHECK(!tp_hung_up(c2, 150));
    /* Then c2 falls silent and goes too; the launcher (its job is alive)
     * and the job connection stay. */
    PBX_CHECK(tp_hung_up(c2, 1000));
    PBX_CHECK(tl_quiet(j.launcher, 100) && tl_quiet(j.conn, 10));
    (void)close(c1);
    (void)close(c2);
    tl_down(&s, &j);
}

PBX_TEST(peers_launchd_evicts_the_longest_silent_at_its_limit)
{
    tl_srv s;
    tl_job j;
    static const char *const extra[] = {"--max-conns", "3", NULL};
    tl_up(&s, &j, extra);
    /* The launcher (live job) and c1, c2: the limit. c1 has been silent
     * longest, so c3 evicts it; c2 and the launcher stay. */
    int c1 = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c1 >= 0);
    tp_sleep_ms(150);
    int c2 = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c2 >= 0);
    tp_sleep_ms(150);
    int c3 = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c3 >= 0);
    PBX_CHECK(tp_hung_up(c1, 1000));
    PBX_CHECK(!tp_hung_up(c2, 100) && !tp_hung_up(c3, 10));
    PBX_CHECK(tl_logged(&s, "evicted for a new one: silent for"));
    /* c2 and c3 each have a call at powerboxd: nobody may be evicted, so
     * c4 is refused. */
    const pbx_ipc_id zero = {0, 0};
    tl_send_expire(c2);
    uint32_t q2 = tl_take(s.broker, PBX_IPC_OP_EXPIRE);
    tl_send_expire(c3);
    uint32_t q3 = tl_take(s.broker, PBX_IPC_OP_EXPIRE);
    int c4 = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c4 >= 0);
    PBX_CHECK(tp_hung_up(c4, 1000));
    PBX_CHECK(tl_logged(&s, "control connection refused: limit 3"));
    PBX_CHECK(!tp_hung_up(c2, 50) && !tp_hung_up(c3, 10) &&
              tl_quiet(j.launcher, 10));
    size_t n = tl_reply(PBX_IPC_OP_EXPIRE, zero, 0, 0, g_out);
    PBX_CHECK(pbx_peer_io_send_seq(s.broker, g_out, n, q2, -1) == 0);
    PBX_CHECK(pbx_peer_io_send_seq(s.broker, g_out, n, q3, -1) == 0);
    tl_recv(c2);
    tl_recv(c3);
    pbx_peer_io_close_all((int[]){c1, c2}, 2);
    pbx_peer_io_close_all((int[]){c3, c4}, 2);
    tl_down(&s, &j);
}

/* Launches PROG args as job id:gen through launcher with stdin null,
 * stdout out and stderr 2; returns the reply (status checked zero). */
static pbx_peer_launch_reply tl_launch_out(int launcher,
                                           const char *const *args, int out,
                                           uint64_t id, uint32_t gen)
{
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    PBX_REQUIRE(nul >= 0);
    int io[3] = {nul, out, 2};
    pbx_peer_launch_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_REQUIRE(tl_launch_raw(launcher, args, io, id, gen, &rep) == 0U);
    (void)close(nul);
    return rep;
}

/* Reads one line (at most cap-1 bytes) the job wrote on fd, within 5 s. */
static void tl_line(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    while (n + 1U < cap && tp_readable(fd, 5000)) {
        ssize_t r = read(fd, buf + n, cap - 1U - n);
        if (r <= 0) {
            break;
        }
        n += (size_t)r;
        buf[n] = '\0';
        if (strchr(buf, '\n') != NULL) {
            break;
        }
    }
}

/* Expects the EXPIRE of job id:gen at the fake powerboxd, answers it,
 * then EXIT with wait status ws on launcher. */
static void tl_expect_end(const tl_srv *s, int launcher, uint64_t id,
                          uint32_t gen, uint32_t ws)
{
    const pbx_ipc_id zero = {0, 0};
    (void)tl_serve(s->broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
    pbx_ipc_expire ex;
    PBX_CHECK_EQ(pbx_ipc_expire_decode(&g_m.frame, &ex), PBX_OK);
    PBX_CHECK(ex.job_id == id && ex.job_gen == gen);
    PBX_REQUIRE(tp_readable(launcher, 5000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(launcher, &g_m) == 0);
    pbx_peer_launch_frame f;
    uint32_t got = 0xFFFFU;
    PBX_REQUIRE(pbx_peer_launch_peek(g_m.buf, g_m.len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_exit_decode(&f, &got), PBX_OK);
    PBX_CHECK_EQ(got, ws);
}

/* The probe a job runs: connects to launchd's control socket (argv[1])
 * itself, then from a grandchild that left its session and whose parent
 * exited (so it was reparented: to launchd, the subreaper); prints what
 * each saw ("closed": launchd hung up at once) and its PBX_SESSION and
 * PBX_REALM. */
static const char tl_probe[] =
    "import os,socket,sys,time\n"
    "def probe():\n"
    "  s=socket.socket(socket.AF_UNIX,socket.SOCK_SEQPACKET)\n"
    "  s.connect(sys.argv[1]); s.settimeout(3)\n"
    "  try: r=s.recv(64)\n"
    "  except OSError: r=None\n"
    "  return 'closed' if r==b'' else 'open'\n"
    "out=[probe()]\n"
    "r,w=os.pipe()\n"
    "if os.fork()==0:\n"
    "  os.setsid()\n"
    "  if os.fork()==0:\n"
    "    time.sleep(0.3)\n"
    "    os.write(w,(probe()+' '+str(os.getppid())).encode()); os._exit(0)\n"
    "  os._exit(0)\n"
    "os.close(w); os.wait()\n"
    "out.append(os.read(r,64).decode())\n"
    "out.append(os.environ['PBX_SESSION']+' '+os.environ['PBX_REALM'])\n"
    "os.write(1,(' '.join(out)+'\\n').encode())\n";

PBX_TEST(peers_launchd_refuses_control_connections_from_jobs)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    int launcher = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(launcher >= 0);
    int sp[2];
    PBX_REQUIRE(tp_seqpair(sp));
    const char *const args[] = {"python3", "-c", tl_probe, s.ctl, NULL};
    pbx_peer_launch_reply rep = tl_launch_out(launcher, args, sp[1], 0, 0);
    (void)close(sp[1]);
    char line[256];
    tl_line(sp[0], line, sizeof(line));
    /* The job and its detached grandchild (whose parent is launchd now)
     * are both refused; the job's environment names its session and
     * realm (tl_launch_raw: 7 and 3). */
    char want[128];
    (void)snprintf(want, sizeof(want), "closed closed %d 7 3\n", (int)s.pid);
    PBX_CHECK(strcmp(line, want) == 0);
    PBX_CHECK(tl_logged(&s, "control connection from a launched job refused"));
    /* The user's own programs still connect: the launcher was one, and
     * it gets its job's EXIT. */
    tl_expect_end(&s, launcher, rep.job_id, rep.job_gen, 0);
    int c = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    PBX_CHECK(!tp_hung_up(c, 200));
    (void)close(c);
    (void)close(sp[0]);
    (void)close(launcher);
    tl_stop(&s);
}

/* Runs pbx-launchd with the NULL-terminated args (no readiness line),
 * stdout to out unless negative; returns its exit status (10 s). */
static int tl_cli(const char *const *args, int out)
{
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        if (out >= 0) {
            (void)dup2(out, 1);
        }
        tp_exec_peer("launchd", args);
    }
    return tp_wait_exit(pid, 10000);
}

PBX_TEST(peers_launchd_run_session_and_realm_options)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    static const char show[] = "echo $PBX_SESSION $PBX_REALM $PBX_JOB";
    const char *dir = tp_tmpdir();
    char path[600];
    (void)snprintf(path, sizeof(path), "%s/out", dir);
    /* Given, then defaulted (1 and 1); the fake powerboxd answers each
     * job's EXPIRE, after which run exits with the job's status. */
    for (int k = 0; k < 2; k++) {
        int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        PBX_REQUIRE(out >= 0);
        pid_t pid = fork();
        PBX_REQUIRE(pid >= 0);
        if (pid == 0) {
            const char *given[] = {"run",     "--control", s.ctl, "--session",
                                   "9",       "--realm",   "4",   "--",
                                   "/bin/sh", "-c",        show,  NULL};
            const char *dflt[] = {"run",     "--control", s.ctl, "--",
                                  "/bin/sh", "-c",        show,  NULL};
            _exit(tl_cli(k == 0 ? given : dflt, out));
        }
        (void)close(out);
        const pbx_ipc_id zero = {0, 0};
        (void)tl_serve(s.broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
        PBX_CHECK_EQ(tp_wait_exit(pid, 10000), 0);
        char text[128];
        PBX_CHECK(tp_read_file(path, text, sizeof(text)) > 0);
        PBX_CHECK(strcmp(text, k == 0 ? "9 4 11:1\n" : "1 1 12:1\n") == 0);
    }
    /* Zero, a realm past 32 bits and a word are usage errors. */
    const char *bad[][9] = {
        {"run", "--control", s.ctl, "--session", "0", "--", "true", NULL},
        {"run", "--control", s.ctl, "--realm", "4294967296", "--", "true",
         NULL},
        {"run", "--control", s.ctl, "--realm", "x", "--", "true", NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        PBX_CHECK_EQ(tl_cli(bad[i], -1), 2);
    }
    PBX_CHECK(tl_quiet(s.broker, 100));
    tl_stop(&s);
}

PBX_TEST(peers_launchd_has_no_max_open_job)
{
    int w[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w) == 0);
    char warg[16];
    (void)snprintf(warg, sizeof(warg), "%d", w[1]);
    (void)fcntl(w[1], F_SETFD, 0);
    /* One connection per job: --max-open is the per-job bound, and the
     * old per-job option is a usage error. */
    const char *args[] = {"serve",          "--wake-fd", warg,
                          "--max-open-job", "4",         NULL};
    PBX_CHECK_EQ(tl_cli(args, -1), 2);
    pbx_peer_io_close_all(w, 2);
}

PBX_TEST(peers_launchd_answers_a_held_caller_from_a_late_reask)
{
    tl_srv s;
    tl_job j;
    static const char *const extra[] = {"--call-ms", "300", NULL};
    tl_up(&s, &j, extra);
    const pbx_ipc_id a = {3, 7};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    /* Parked without a WAKE, the caller's DECISION goes to powerboxd
     * half of --call-ms after it came; powerboxd answers PENDING, so the
     * caller is held. The WAKE's re-ask is answered only after 700 ms,
     * past --call-ms: the caller, still held, gets that answer (and no
     * ROUTE: launchd's re-ask is not the caller's call). */
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                     0xD1U, -1) == 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, a, 0,
                   PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK(tl_quiet(j.conn, 400));
    tl_wake(s.wake, a);
    uint32_t seq = tl_take(s.broker, PBX_IPC_OP_DECISION);
    PBX_CHECK(tl_quiet(j.conn, 700));
    size_t n =
        tl_reply(PBX_IPC_OP_DECISION, a, 0, PBX_IPC_OUTCOME_DENIED, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, seq, -1) == 0);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0xD1U);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    pbx_ipc_decision d;
    PBX_CHECK_EQ(pbx_ipc_decision_reply_decode(&g_m.frame, &d), PBX_OK);
    PBX_CHECK_EQ(d.outcome, (uint8_t)PBX_IPC_OUTCOME_DENIED);
    /* Delivered once: the request is no longer the connection's. */
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker,
                            tl_request(PBX_IPC_OP_DECISION, a, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    tl_down(&s, &j);
}

PBX_TEST(peers_launchd_bounds_a_parked_decision_by_call_ms)
{
    tl_srv s;
    tl_job j;
    static const char *const extra[] = {"--call-ms", "300", NULL};
    tl_up(&s, &j, extra);
    const pbx_ipc_id a = {3, 7};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    /* No WAKE comes and powerboxd never answers (as while it is stopped):
     * the parked DECISION still reaches it, and its caller is answered
     * ROUTE on its own seq, as every call unanswered after --call-ms. */
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                     0xD1U, -1) == 0);
    uint32_t seq = tl_take(s.broker, PBX_IPC_OP_DECISION);
    PBX_CHECK(g_m.frame.request.index == a.index &&
              g_m.frame.request.gen == a.gen);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0xD1U);
    PBX_CHECK_EQ(g_m.frame.op,
                 (uint16_t)(PBX_IPC_OP_DECISION | PBX_IPC_REPLY_BIT));
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_ROUTE);
    PBX_CHECK(tl_logged(&s, "call op decision request 3.7 unanswered after "
                            "300 ms"));
    /* The late answer is logged and dropped; the request is still the
     * connection's, and a new DECISION (WAKE first) is relayed at once. */
    size_t n =
        tl_reply(PBX_IPC_OP_DECISION, a, 0, PBX_IPC_OUTCOME_PENDING, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, seq, -1) == 0);
    PBX_CHECK(tl_logged(&s, "late reply: op decision-reply request 3.7"));
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_DECISION, a, 0,
                         PBX_IPC_OUTCOME_DENIED),
                 0U);
    PBX_CHECK(tl_quiet(j.conn, 100) && tl_quiet(s.broker, 10));
    tl_down(&s, &j);
}

/* A BEGIN (job and target zero: launchd fills them in) on conn with seq;
 * returns the seq of its relayed copy at the fake powerboxd. */
static uint32_t tl_begin_out(int conn, int broker, uint32_t seq)
{
    size_t n = tl_request(PBX_IPC_OP_BEGIN, (pbx_ipc_id){0, 0}, g_req);
    PBX_REQUIRE(pbx_peer_io_send_seq(conn, g_req, n, seq, -1) == 0);
    return tl_take(broker, PBX_IPC_OP_BEGIN);
}

PBX_TEST(peers_launchd_counts_a_late_call_once)
{
    tl_srv s;
    tl_job j;
    static const char *const extra[] = {"--call-ms", "300", "--max-open", "2",
                                        NULL};
    tl_up(&s, &j, extra);
    const pbx_ipc_id x = {5, 1};
    /* x's BEGIN is answered ROUTE at --call-ms; y's stays at powerboxd. */
    uint32_t sx = tl_begin_out(j.conn, s.broker, 0xE1U);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_ROUTE);
    uint32_t sy = tl_begin_out(j.conn, s.broker, 0xE2U);
    /* x's late reply: its request is cancelled and collected, and it is
     * not counted off a second time, so y still counts: one more BEGIN
     * fits under --max-open 2, the next is BUSY. */
    size_t n = tl_reply(PBX_IPC_OP_BEGIN, x, 0, 0, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, sx, -1) == 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_CANCEL, x, 0, 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, x, 0,
                   PBX_IPC_OUTCOME_CANCELLED);
    uint32_t sz = tl_begin_out(j.conn, s.broker, 0xE3U);
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker,
                            tl_request(PBX_IPC_OP_BEGIN, x, g_req), -1),
                 PBX_PEER_E_BUSY);
    /* y and z are answered (refused BUSY by powerboxd): room again. */
    n = tl_reply(PBX_IPC_OP_BEGIN, x, (uint16_t)PBX_E_CORE_BUSY, 0, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, sy, -1) == 0);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, sz, -1) == 0);
    tl_recv(j.conn);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.status, (uint16_t)PBX_E_CORE_BUSY);
    PBX_CHECK(tl_quiet(j.conn, 100));
    tl_down(&s, &j);
}

PBX_TEST(peers_launchd_cancels_a_late_approval_answered_route)
{
    tl_srv s;
    tl_job j;
    static const char *const extra[] = {"--call-ms", "300", NULL};
    tl_up(&s, &j, extra);
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id g = {9, 4};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    /* The caller's DECISION (woken) is unanswered past --call-ms:
     * ROUTE. */
    tl_wake(s.wake, a);
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                     0xD1U, -1) == 0);
    uint32_t seq = tl_take(s.broker, PBX_IPC_OP_DECISION);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_ROUTE);
    /* The late APPROVED reaches nobody; its grant is CANCELled (grant
     * form) at powerboxd, and the grant is not the connection's. */
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, tl_approved(a, g, g_out),
                                     seq, -1) == 0);
    (void)tl_take(s.broker, PBX_IPC_OP_CANCEL);
    pbx_ipc_cancel c;
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&g_m.frame, &c), PBX_OK);
    PBX_CHECK(c.by_grant && c.grant.index == g.index && c.grant.gen == g.gen);
    size_t n = tl_reply(PBX_IPC_OP_CANCEL, g, 0, 0, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, g_m.frame.seq, -1) ==
                0);
    PBX_CHECK(tl_quiet(j.conn, 100));
    PBX_CHECK(tl_logged(&s, "grant 9.4 CANCEL answered: accepted"));
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker, tl_consume(g, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker,
                            tl_request(PBX_IPC_OP_DECISION, a, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    tl_down(&s, &j);
}

PBX_TEST(peers_launchd_keeps_the_job_id_until_its_expire_is_answered)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    static const char *const extra[] = {"--call-ms", "300", NULL};
    tl_start(&s, extra);
    tl_job j;
    tl_job_start(&s, &j, 20, 1);
    /* The job exits; its EXPIRE stays unanswered: EXIT comes at
     * --call-ms all the same, but job 20:1 cannot be launched again. */
    (void)close(j.life);
    uint32_t seq = tl_take(s.broker, PBX_IPC_OP_EXPIRE);
    PBX_REQUIRE(tp_readable(j.launcher, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(j.launcher, &g_m) == 0);
    pbx_peer_launch_frame f;
    uint32_t ws = 1;
    PBX_REQUIRE(pbx_peer_launch_peek(g_m.buf, g_m.len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_exit_decode(&f, &ws), PBX_OK);
    PBX_CHECK_EQ(ws, 0U);
    static const char *const args[] = {"true", NULL};
    int io[3] = {0, 1, 2};
    pbx_peer_launch_reply rep;
    PBX_CHECK_EQ(tl_launch_raw(j.launcher, args, io, 20, 1, &rep),
                 PBX_PEER_E_BUSY);
    /* The late answer frees it. */
    size_t n = tl_reply(PBX_IPC_OP_EXPIRE, (pbx_ipc_id){0, 0}, 0, 0, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, seq, -1) == 0);
    PBX_CHECK(tl_logged(&s, "job 20.1 ended: EXPIRE accepted"));
    PBX_CHECK_EQ(tl_launch_raw(j.launcher, args, io, 20, 1, &rep), 0U);
    tl_expect_end(&s, j.launcher, 20, 1, 0);
    (void)close(j.launcher);
    (void)close(j.conn);
    tl_stop(&s);
}

/* A job that leaves its process group: a child makes a group of its own
 * and closes the job's descriptors, the job joins the child's group,
 * says "moved" and waits on its stdin. */
static const char tl_mover[] =
    "import os,sys,time\n"
    "r,w=os.pipe()\n"
    "pid=os.fork()\n"
    "if pid==0:\n"
    "  os.setpgid(0,0)\n"
    "  for fd in (0,1,3): os.close(fd)\n"
    "  os.write(w,b'x'); time.sleep(2); os._exit(0)\n"
    "os.read(r,1)\n"
    "os.setpgid(0,pid)\n"
    "os.write(1,b'moved\\n')\n"
    "os.read(0,1)\n";

PBX_TEST(peers_launchd_kills_the_job_pid_outside_its_group)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    int launcher = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(launcher >= 0);
    int sp[2];
    PBX_REQUIRE(tp_seqpair(sp));
    const char *const args[] = {"python3", "-c", tl_mover, NULL};
    int io[3] = {sp[1], sp[1], 2};
    pbx_peer_launch_reply rep;
    PBX_REQUIRE(tl_launch_raw(launcher, args, io, 0, 0, &rep) == 0U);
    (void)close(sp[1]);
    char line[64];
    tl_line(sp[0], line, sizeof(line));
    PBX_CHECK(strcmp(line, "moved\n") == 0);
    /* Its launcher hangs up: the job's own group is empty, the pid is
     * killed all the same (its stdin socket hangs up), then expired. */
    (void)close(launcher);
    PBX_CHECK(tp_hung_up(sp[0], 2000));
    const pbx_ipc_id zero = {0, 0};
    (void)tl_serve(s.broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
    PBX_CHECK(tl_logged(&s, "ended: EXPIRE accepted"));
    (void)close(sp[0]);
    tl_stop(&s);
}

PBX_TEST(peers_launchd_orphan_end_line_keeps_the_entry)
{
    tl_srv s;
    tl_job j;
    tl_up(&s, &j, NULL);
    const pbx_ipc_id a = {3, 7};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    /* The job exits with a open: CANCEL a, then the job's EXPIRE, both
     * answered (the job is gone), then a's decision is collected: its end
     * line still names the job's entry. */
    (void)close(j.life);
    (void)tl_serve(s.broker, PBX_IPC_OP_CANCEL, a, 0, 0);
    const pbx_ipc_id zero = {0, 0};
    (void)tl_serve(s.broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
    PBX_CHECK(tl_logged(&s, "job 11.1 ended: EXPIRE accepted"));
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, a, 0,
                   PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(tl_logged(&s, "request 3.7 job 11.1 entry cat outcome "
                            "cancelled reason caller gone"));
    (void)close(j.launcher);
    (void)close(j.conn);
    tl_stop(&s);
}

/* Sends a SELECTOR chunk of len bytes for request id on conn with seq. */
static void tl_selector(int conn, pbx_ipc_id id, uint32_t len, uint32_t seq)
{
    static uint8_t chunk[PBX_IPC_SELECTOR_CHUNK_BYTES_MAX];
    memset(chunk, 'x', sizeof(chunk));
    pbx_ipc_selector sc = {0, len, chunk};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_selector_encode(id, &sc, g_req, sizeof(g_req), &n) ==
                PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send_seq(conn, g_req, n, seq, -1) == 0);
}

PBX_TEST(peers_launchd_broker_sends_never_wait)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    s.broker_sndbuf = 1; /* the kernel's minimum */
    tl_start(&s, NULL);
    tl_job j;
    tl_job_start(&s, &j, 0, 0);
    const pbx_ipc_id a = {3, 7};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    /* Full SELECTOR chunks that powerboxd does not read: within a few the
     * broker is full, and that very frame is answered BUSY at once (its
     * own seq, within 100 ms): launchd did not wait for room. */
    bool busy = false;
    uint32_t sent = 0;
    for (uint32_t i = 1; i <= 48U && !busy; i++) {
        tl_selector(j.conn, a, PBX_IPC_SELECTOR_CHUNK_BYTES_MAX, 0x100U + i);
        sent = i;
        if (tp_readable(j.conn, 100)) {
            tl_recv(j.conn);
            PBX_CHECK_EQ(g_m.frame.seq, 0x100U + i);
            PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_BUSY);
            busy = true;
        }
    }
    PBX_CHECK(busy && sent < 48U);
    /* Other connections are served meanwhile (a refusal answered). */
    int c = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    PBX_REQUIRE(pbx_peer_io_send(c, g_req,
                                 tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                 -1) == 0);
    tl_recv(c);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_NOT_YOURS);
    (void)close(c);
    (void)close(j.life);
    (void)close(j.launcher);
    (void)close(j.conn);
    tl_stop(&s);
}

PBX_TEST(peers_launchd_bounds_calls_per_connection)
{
    tl_srv s;
    tl_job j;
    tl_up(&s, &j, NULL);
    const pbx_ipc_id a = {3, 7};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    /* 64 SELECTORs at powerboxd at once; the 65th is BUSY and relayed
     * nowhere; one answer makes room for one more. */
    uint32_t first = 0;
    for (uint32_t i = 0; i < 64U; i++) {
        tl_selector(j.conn, a, 1, 0x200U + i);
        uint32_t q = tl_take(s.broker, PBX_IPC_OP_SELECTOR);
        first = i == 0U ? q : first;
    }
    tl_selector(j.conn, a, 1, 0x300U);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0x300U);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_BUSY);
    PBX_CHECK(tl_quiet(s.broker, 50));
    size_t n = tl_reply(PBX_IPC_OP_SELECTOR, a, 0, 0, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, first, -1) == 0);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0x200U);
    tl_selector(j.conn, a, 1, 0x301U);
    (void)tl_take(s.broker, PBX_IPC_OP_SELECTOR);
    (void)close(j.life);
    (void)close(j.launcher);
    (void)close(j.conn);
    tl_stop(&s);
}

/* Sends a LAUNCH of PROG args (NULL-terminated) on conn with the flags
 * and the nio descriptors io (3: stdio; 4: stdio and a scope) as a job
 * launchd numbers; returns the reply's status (body in *rep). */
/* The profile path the next tl_launch_with names (with
 * PBX_PEER_LAUNCH_PROFILE in its flags), or NULL. */
static const char *g_tl_profile;

static uint16_t tl_launch_with(int conn, const char *const *args, const int *io,
                               size_t nio, uint32_t flags,
                               pbx_peer_launch_reply *rep)
{
    static pbx_peer_launch_req r;
    memset(&r, 0, sizeof(r));
    r.session = 7;
    r.realm = 3;
    r.entry_len = 5;
    memcpy(r.entry, "probe", 5);
    r.flags = flags;
    /* A working directory (PBX_PEER_LAUNCH_CWD) is the last of io. */
    r.scope = nio - ((flags & PBX_PEER_LAUNCH_CWD) != 0U ? 1U : 0U) == 4U;
    if (g_tl_profile != NULL) {
        r.profile = (const uint8_t *)g_tl_profile;
        r.profile_len = (uint16_t)strlen(g_tl_profile);
    }
    for (; args[r.argc] != NULL; r.argc++) {
        r.args[r.argc] = (const uint8_t *)args[r.argc];
        r.arg_lens[r.argc] = (uint16_t)strlen(args[r.argc]);
    }
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_req, sizeof(g_req), &n) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_set_seq(g_req, n, 0x33U) == PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send_fds(conn, g_req, n, io, nio, 0) == 0);
    PBX_REQUIRE(tp_readable(conn, 5000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(conn, &g_m) == 0);
    pbx_peer_launch_frame f;
    PBX_REQUIRE(pbx_peer_launch_peek(g_m.buf, g_m.len, g_m.nfds, &f) == PBX_OK);
    if (f.status == 0U) {
        PBX_CHECK_EQ(pbx_peer_launch_reply_decode(&f, rep), PBX_OK);
    }
    return f.status;
}

/* A close-on-exec pipe in p; false when none could be made. */
static bool tl_pipe(int p[2])
{
    return pipe(p) == 0 && fcntl(p[0], F_SETFD, FD_CLOEXEC) == 0 &&
           fcntl(p[1], F_SETFD, FD_CLOEXEC) == 0;
}

/* Reads fd to its end (at most cap-1 bytes, 5 s) into buf. */
static void tl_slurp(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    while (n + 1U < cap && tp_readable(fd, 5000)) {
        ssize_t r = read(fd, buf + n, cap - 1U - n);
        if (r <= 0) {
            break;
        }
        n += (size_t)r;
        buf[n] = '\0';
    }
}

/* The static probe's path. */
static const char *tl_probe_path(void)
{
    static char path[512];
    const char *bin = getenv("PBX_PEERS_BIN");
    (void)snprintf(path, sizeof(path), "%s/pbx-sandbox-probe",
                   bin != NULL ? bin : "build/bin");
    return path;
}

/* Launches args (flags, stdin null, stderr 2) on a new control connection
 * of s with stdout a pipe; returns the LAUNCH status, the job's whole
 * output in out and, on status 0, waits for its end (EXIT status 0). */
static uint16_t tl_probe_run(const tl_srv *s, const char *const *args,
                             uint32_t flags, char *out, size_t cap)
{
    int p[2];
    PBX_REQUIRE(tl_pipe(p));
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    PBX_REQUIRE(nul >= 0);
    int c = pbx_peer_io_connect(s->ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    int io[3] = {nul, p[1], 2};
    pbx_peer_launch_reply rep;
    uint16_t st = tl_launch_with(c, args, io, 3, flags, &rep);
    (void)close(p[1]);
    (void)close(nul);
    tl_slurp(p[0], out, cap);
    (void)close(p[0]);
    if (st == 0U) {
        tl_expect_end(s, c, rep.job_id, rep.job_gen, 0);
    }
    (void)close(c);
    return st;
}

PBX_TEST(peers_launchd_sandboxes_a_static_program)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    const char *dir = tp_tmpdir();
    char file[600];
    char mark[600];
    char fopen_[640];
    char self[640];
    (void)snprintf(file, sizeof(file), "%s/secret", dir);
    (void)snprintf(mark, sizeof(mark), "%s/ran", dir);
    int fd = open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(fd >= 0 && write(fd, "s\n", 2) == 2);
    (void)close(fd);
    /* A program of the user's own (executable, outside the profile). */
    char tool[600];
    char etool[640];
    (void)snprintf(tool, sizeof(tool), "%s/tool", dir);
    fd = open(tool, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
    PBX_REQUIRE(fd >= 0 && write(fd, "#!/bin/sh\nexit 0\n", 17) == 17);
    (void)close(fd);
    (void)snprintf(etool, sizeof(etool), "exec:%s", tool);
    (void)snprintf(fopen_, sizeof(fopen_), "open:%s", file);
    (void)snprintf(self, sizeof(self), "open:%s", tl_probe_path());
    /* A process of the same user outside the job, which it must not
     * signal (kill(1) would be refused to a non-root user anyway). */
    pid_t sib = fork();
    PBX_REQUIRE(sib >= 0);
    if (sib == 0) {
        (void)pause();
        _exit(0);
    }
    char ksib[64];
    (void)snprintf(ksib, sizeof(ksib), "kill:%ld", (long)sib);
    /* Root's bounding set can be dropped; another user's cannot (it
     * holds no capability, and no-new-privileges keeps it so). */
    const char *bnd = geteuid() == 0 ? "0" : "set";
    /* Sandboxed: no new privileges, no capability; the user's own file
     * and program refused by the kernel (EACCES); its own file and
     * /etc/passwd (the system profile) readable; no signal to a process
     * outside (EPERM: the filter, and ABI 6 scopes). */
    const char *args[] = {tl_probe_path(),    "nnp", "caps", fopen_, self,
                          "open:/etc/passwd", ksib,  etool,  NULL};
    static char out[4096];
    PBX_CHECK_EQ(
        tl_probe_run(&s, args, PBX_PEER_LAUNCH_SANDBOX, out, sizeof(out)), 0U);
    char want[4096];
    (void)snprintf(want, sizeof(want),
                   "nnp=1\ncaps eff=0 prm=0 bnd=%s\nopen %s: errno 13\nopen "
                   "%s: ok\nopen /etc/passwd: ok\nkill %ld: errno 1\nexec %s: "
                   "errno 13\n",
                   bnd, file, tl_probe_path(), (long)sib, tool);
    PBX_CHECK(strcmp(out, want) == 0);
    PBX_CHECK(tl_logged(&s, "sandbox: ") && tl_logged(&s, " sandboxed") &&
              tl_logged(&s, "; profile system; "));
    /* The same probe unsandboxed reads the file and signals the sibling
     * (root keeps its capabilities): the refusals above are the
     * sandbox's. */
    const char *plain[] = {tl_probe_path(), "nnp", "caps", fopen_, ksib, NULL};
    PBX_CHECK_EQ(tl_probe_run(&s, plain, 0U, out, sizeof(out)), 0U);
    const char *eff = geteuid() == 0 ? "set" : "0";
    (void)snprintf(want, sizeof(want),
                   "nnp=0\ncaps eff=%s prm=%s bnd=set\nopen %s: ok\nkill "
                   "%ld: ok\n",
                   eff, eff, file, (long)sib);
    PBX_CHECK(strcmp(out, want) == 0);
    (void)kill(sib, SIGKILL);
    (void)waitpid(sib, NULL, 0);
    /* A dynamically linked program runs under the system profile: it
     * reads /etc/passwd, its write into the user's directory is refused
     * (no mark); a name that is no file is refused and never runs. */
    char touch[900];
    (void)snprintf(touch, sizeof(touch),
                   "read l < /etc/passwd && echo passwd:ok; "
                   "(echo x > %s) 2>/dev/null || echo mark:refused",
                   mark);
    const char *dyn[] = {"/bin/sh", "-c", touch, NULL};
    PBX_CHECK_EQ(
        tl_probe_run(&s, dyn, PBX_PEER_LAUNCH_SANDBOX, out, sizeof(out)), 0U);
    PBX_CHECK(strcmp(out, "passwd:ok\nmark:refused\n") == 0);
    const char *none[] = {"/nonexistent/prog", NULL};
    PBX_CHECK_EQ(
        tl_probe_run(&s, none, PBX_PEER_LAUNCH_SANDBOX, out, sizeof(out)),
        (uint16_t)PBX_E_PEER_NOT_EXEC);
    PBX_CHECK(tl_logged(&s, "LAUNCH refused: sandbox: the program is not a "
                            "regular executable file"));
    PBX_CHECK(access(mark, F_OK) != 0);
    PBX_CHECK(tl_quiet(s.broker, 100));
    tl_stop(&s);
}

PBX_TEST(peers_launchd_refuses_a_fifo_at_once)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    char fifo[600];
    (void)snprintf(fifo, sizeof(fifo), "%s/fifo", tp_tmpdir());
    PBX_REQUIRE(mkfifo(fifo, 0700) == 0);
    /* A FIFO as the program: refused at once (no writer ever comes; a
     * blocking open would hold launchd's loop, and the reply would not
     * come within tl_launch_with's 5 s). */
    static char out[4096];
    const char *prog[] = {fifo, NULL};
    PBX_CHECK_EQ(
        tl_probe_run(&s, prog, PBX_PEER_LAUNCH_SANDBOX, out, sizeof(out)),
        (uint16_t)PBX_E_PEER_NOT_EXEC);
    /* A FIFO as the profile: refused at once as not a regular file. */
    const char *nnp[] = {tl_probe_path(), "nnp", NULL};
    g_tl_profile = fifo;
    uint16_t st =
        tl_probe_run(&s, nnp, PBX_PEER_LAUNCH_SANDBOX | PBX_PEER_LAUNCH_PROFILE,
                     out, sizeof(out));
    g_tl_profile = NULL;
    PBX_CHECK_EQ(st, (uint16_t)PBX_E_PEER_PROFILE);
    PBX_CHECK(tl_logged(&s, "not a readable regular file"));
    /* launchd serves the next LAUNCH. */
    PBX_CHECK_EQ(
        tl_probe_run(&s, nnp, PBX_PEER_LAUNCH_SANDBOX, out, sizeof(out)), 0U);
    PBX_CHECK(strcmp(out, "nnp=1\n") == 0);
    tl_stop(&s);
}

PBX_TEST(peers_launchd_hands_a_scope_at_fd_4)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    int p[2];
    int scope[2];
    PBX_REQUIRE(tl_pipe(p) && tl_pipe(scope));
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    PBX_REQUIRE(nul >= 0);
    int c = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    /* The fourth descriptor is the job's fd 4, named by PBX_SCOPE_FD. */
    const char *args[] = {"/bin/sh", "-c", "echo fd=$PBX_SCOPE_FD >&4", NULL};
    int io[4] = {nul, p[1], 2, scope[1]};
    pbx_peer_launch_reply rep;
    PBX_REQUIRE(tl_launch_with(c, args, io, 4, 0U, &rep) == 0U);
    (void)close(scope[1]);
    (void)close(p[1]);
    (void)close(nul);
    char out[64];
    tl_slurp(scope[0], out, sizeof(out));
    PBX_CHECK(strcmp(out, "fd=4\n") == 0);
    tl_expect_end(&s, c, rep.job_id, rep.job_gen, 0);
    /* Without one, PBX_SCOPE_FD is unset (not launchd's own). */
    const char *unset[] = {"/bin/sh", "-c", "echo fd=${PBX_SCOPE_FD-none}",
                           NULL};
    static char text[256];
    PBX_CHECK_EQ(tl_probe_run(&s, unset, 0U, text, sizeof(text)), 0U);
    PBX_CHECK(strcmp(text, "fd=none\n") == 0);
    pbx_peer_io_close_all(p, 1);
    pbx_peer_io_close_all(scope, 1);
    (void)close(c);
    tl_stop(&s);
}

PBX_TEST(peers_launchd_runs_the_job_in_the_callers_directory)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    int base = tp_fd_count(s.pid);
    char dir[] = "/tmp/pbx-cwd-XXXXXX";
    PBX_REQUIRE(mkdtemp(dir) != NULL);
    int p[2];
    PBX_REQUIRE(tl_pipe(p));
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    int cwd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    PBX_REQUIRE(nul >= 0 && cwd >= 0);
    int c = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    /* The job's working directory is the one the LAUNCH handed over. */
    const char *args[] = {"/bin/sh", "-c", "pwd", NULL};
    int io[4] = {nul, p[1], 2, cwd};
    pbx_peer_launch_reply rep;
    PBX_REQUIRE(tl_launch_with(c, args, io, 4, PBX_PEER_LAUNCH_CWD, &rep) ==
                0U);
    (void)close(p[1]);
    char out[128];
    char want[128];
    tl_slurp(p[0], out, sizeof(out));
    (void)snprintf(want, sizeof(want), "%s\n", dir);
    PBX_CHECK(strcmp(out, want) == 0);
    tl_expect_end(&s, c, rep.job_id, rep.job_gen, 0);
    /* Something that is not a directory: the LAUNCH is refused. */
    int q[2];
    PBX_REQUIRE(tl_pipe(q));
    int bad[4] = {nul, q[1], 2, q[0]};
    PBX_CHECK_EQ(tl_launch_with(c, args, bad, 4, PBX_PEER_LAUNCH_CWD, &rep),
                 (uint16_t)PBX_E_PEER_CWD);
    pbx_peer_io_close_all(q, 2);
    (void)close(p[0]);
    (void)close(cwd);
    (void)close(nul);
    (void)close(c);
    /* launchd kept no copy of either descriptor. */
    PBX_CHECK_EQ(tp_fd_settle(s.pid, base, 2000), base);
    (void)rmdir(dir);
    tl_stop(&s);
}

PBX_TEST(peers_launchd_refuses_a_sandbox_where_the_kernel_has_no_landlock)
{
    /* launchd under a seccomp filter that answers landlock_create_ruleset
     * as a kernel without Landlock does (ENOSYS) or with it disabled
     * (EOPNOTSUPP): the sandboxed LAUNCH is refused and the program never
     * runs; an ordinary LAUNCH still runs. */
    static const char *const errs[] = {"38", "95"};
    for (size_t i = 0; i < 2; i++) {
        tl_srv s;
        memset(&s, 0, sizeof(s));
        s.no_landlock = errs[i];
        tl_start(&s, NULL);
        const char *args[] = {tl_probe_path(), "nnp", NULL};
        static char out[256];
        PBX_CHECK_EQ(
            tl_probe_run(&s, args, PBX_PEER_LAUNCH_SANDBOX, out, sizeof(out)),
            (uint16_t)PBX_E_PEER_NO_LANDLOCK);
        PBX_CHECK(out[0] == '\0');
        PBX_CHECK(tl_logged(&s, "LAUNCH refused: sandbox: this kernel has "
                                "no Landlock"));
        PBX_CHECK(tl_quiet(s.broker, 100));
        PBX_CHECK_EQ(tl_probe_run(&s, args, 0U, out, sizeof(out)), 0U);
        PBX_CHECK(strcmp(out, "nnp=1\n") == 0);
        tl_stop(&s);
    }
}

PBX_TEST(peers_launchd_refuses_a_sandbox_where_the_kernel_has_no_seccomp)
{
    /* launchd under a seccomp filter that answers seccomp() as a kernel
     * without seccomp does (ENOSYS) or without filter mode (EINVAL): the
     * sandboxed LAUNCH is refused, naming the wall it cannot build, and
     * the program never runs (it is never run with fewer walls); an
     * ordinary LAUNCH still runs. */
    static const char *const errs[] = {"38", "22"};
    for (size_t i = 0; i < 2; i++) {
        tl_srv s;
        memset(&s, 0, sizeof(s));
        s.no_landlock = errs[i];
        s.fake = "--no-seccomp";
        tl_start(&s, NULL);
        const char *args[] = {tl_probe_path(), "nnp", NULL};
        static char out[256];
        PBX_CHECK_EQ(
            tl_probe_run(&s, args, PBX_PEER_LAUNCH_SANDBOX, out, sizeof(out)),
            (uint16_t)PBX_E_PEER_NO_SECCOMP);
        PBX_CHECK(out[0] == '\0');
        PBX_CHECK(tl_logged(&s, "sandbox: seccomp filter mode: "));
        PBX_CHECK(tl_logged(&s, "LAUNCH refused: sandbox: this kernel "
                                "cannot install a seccomp filter"));
        PBX_CHECK(tl_quiet(s.broker, 100));
        PBX_CHECK_EQ(tl_probe_run(&s, args, 0U, out, sizeof(out)), 0U);
        PBX_CHECK(strcmp(out, "nnp=1\n") == 0);
        tl_stop(&s);
    }
}

PBX_TEST(peers_launchd_never_runs_a_sandboxed_job_whose_filter_failed)
{
    /* launchd's check passes but installing the filter fails in the job's
     * child: the child says so on the job's stderr and exits 126 without
     * running the program (it prints nothing). */
    tl_srv s;
    memset(&s, 0, sizeof(s));
    s.no_landlock = "22";
    s.fake = "--no-seccomp-install";
    tl_start(&s, NULL);
    int p[2];
    int e[2];
    PBX_REQUIRE(tl_pipe(p) && tl_pipe(e));
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    PBX_REQUIRE(nul >= 0);
    int c = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    const char *args[] = {tl_probe_path(), "nnp", NULL};
    int io[3] = {nul, p[1], e[1]};
    pbx_peer_launch_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_CHECK_EQ(tl_launch_with(c, args, io, 3, PBX_PEER_LAUNCH_SANDBOX, &rep),
                 0U);
    (void)close(p[1]);
    (void)close(e[1]);
    (void)close(nul);
    static char out[256];
    static char err[512];
    tl_slurp(p[0], out, sizeof(out));
    tl_slurp(e[0], err, sizeof(err));
    PBX_CHECK(out[0] == '\0');
    PBX_CHECK(strstr(err, "pbx-launchd: sandbox: seccomp: ") != NULL &&
              strstr(err, "the program was not run") != NULL);
    tl_expect_end(&s, c, rep.job_id, rep.job_gen, 126U << 8);
    pbx_peer_io_close_all(p, 1);
    pbx_peer_io_close_all(e, 1);
    (void)close(c);
    tl_stop(&s);
}

/* Counts the newline-ended lines of s. */
static size_t tl_lines(const char *s)
{
    size_t n = 0;
    for (size_t i = 0; i < 65536U && s[i] != '\0'; i++) {
        n += s[i] == '\n' ? 1U : 0U;
    }
    return n;
}

/* Every peer binary and every launchd and client subcommand answers -h
 * and --help with its usage on stdout, nothing on stderr, exit 0. */
PBX_TEST(peers_cli_help_on_every_binary_and_subcommand)
{
    static const struct {
        const char *name;
        const char *args[3];
        const char *names; /* what the usage must mention */
    } cases[] = {
        {"launchd", {NULL}, "pbx-launchd serve"},
        {"launchd", {"serve", NULL}, "pbx-launchd serve"},
        {"launchd", {"run", NULL}, "pbx-launchd run"},
        {"launchd", {"expire", NULL}, "pbx-launchd expire"},
        {"client", {NULL}, "pbx-client request"},
        {"client", {"request", NULL}, "pbx-client request"},
        {"client", {"cancel", NULL}, "pbx-client cancel"},
        {"client", {"consume", NULL}, "pbx-client consume"},
        {"ttyd", {NULL}, "pbx-ttyd --policy"},
        {"procd", {NULL}, "pbx-procd [--stage"},
        {"demo", {NULL}, "pbx-demo [--direct"},
        {"stage", {NULL}, "pbx-stage [--stage-sock"},
        {"vfsd", {NULL}, "pbx-vfsd"},
    };
    static const char *const flags[] = {"-h", "--help"};
    static char out[4096];
    static char err[4096];
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        for (size_t f = 0; f < PBX_ARRAY_LEN(flags); f++) {
            const char *args[3] = {cases[i].args[0], NULL, NULL};
            args[args[0] != NULL ? 1 : 0] = flags[f];
            PBX_CHECK_EQ(tp_cli(cases[i].name, args, out, err, sizeof(out)), 0);
            PBX_CHECK(strncmp(out, "usage:", 6) == 0);
            PBX_CHECK(strstr(out, cases[i].names) != NULL);
            PBX_CHECK_EQ(err[0], '\0');
        }
    }
}

/* An unknown option, to any peer binary or subcommand, exits 2 with one
 * line on stderr naming it and nothing on stdout; it is refused before
 * any option is applied (serve's --wake socket is never made). */
PBX_TEST(peers_cli_unknown_option_named_on_one_line)
{
    char wake[600];
    (void)snprintf(wake, sizeof(wake), "%s/wake.sock", tp_tmpdir());
    static const struct {
        const char *name;
        const char *args[5];
    } cases[] = {
        {"launchd", {"serve", "--bogus", NULL}},
        {"launchd", {"serve", "--wake", "W", "--bogus", NULL}},
        {"launchd", {"run", "--bogus", NULL}},
        {"launchd", {"run", "--sandbox", "--bogus", NULL}},
        {"launchd", {"expire", "--bogus", NULL}},
        {"client", {"request", "--bogus", NULL}},
        {"client", {"cancel", "--selector", "x", "--bogus", NULL}},
        {"ttyd", {"--bogus", NULL}},
        {"ttyd", {"--tty", "/dev/null", "--bogus", "x", NULL}},
        {"procd", {"--bogus", NULL}},
        {"demo", {"--bogus", NULL}},
        {"demo", {"--exceptional", "--bogus", "x", NULL}},
        {"stage", {"--bogus", NULL}},
        {"vfsd", {"--bogus", NULL}},
    };
    static char out[4096];
    static char err[4096];
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        const char *args[5];
        for (size_t k = 0; k < 5U; k++) {
            const char *a = cases[i].args[k];
            args[k] = a != NULL && strcmp(a, "W") == 0 ? wake : a;
        }
        PBX_CHECK_EQ(tp_cli(cases[i].name, args, out, err, sizeof(out)), 2);
        PBX_CHECK_EQ(out[0], '\0');
        PBX_CHECK_EQ(tl_lines(err), 1U);
        PBX_CHECK(strstr(err, "'--bogus'") != NULL);
        PBX_CHECK(strstr(err, "unknown") != NULL);
    }
    PBX_CHECK(access(wake, F_OK) != 0);
}

/* Sends one attach message (the len bytes of msg, the nfds descriptors
 * fds) on chan and returns launchd's 2-byte answer as op << 8 | status. */
static unsigned tl_attach(int chan, const char *msg, size_t len, const int *fds,
                          size_t nfds)
{
    PBX_REQUIRE(pbx_peer_io_send_fds(chan, (const uint8_t *)msg, len, fds, nfds,
                                     0) == 0);
    uint8_t ans[8];
    PBX_REQUIRE(tp_readable(chan, 3000));
    /* The answer echoes a body of at most 4 bytes (its tag). */
    size_t want = len <= 5U ? len + 1U : 2U;
    PBX_REQUIRE(recv(chan, ans, sizeof(ans), 0) == (ssize_t)want);
    PBX_CHECK(want == 2U || memcmp(ans + 2, msg + 1, len - 1U) == 0);
    return (unsigned)ans[0] << 8 | ans[1];
}

/* A fresh wake route (w) and broker (b) pair; hands launchd w[1] and
 * b[1] in an 'R' on s's channel (our copies closed), keeps w[0] and b[0]
 * as the fake powerboxd's ends; returns the answer. */
static unsigned tl_attach_routes(tl_srv *s)
{
    int w[2];
    int b[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w) == 0);
    PBX_REQUIRE(tp_seqpair(b));
    int fds[2] = {w[1], b[1]};
    unsigned a = tl_attach(s->attach, "R", 1, fds, 2);
    (void)close(w[1]);
    (void)close(b[1]);
    s->wake = w[0];
    g_tl_wake = w[0];
    s->broker = b[0];
    return a;
}

/* Checks that 'R' with the n descriptors fds is refused ('r', 1) and that
 * launchd closed them: the peer end of each reads its end. */
static void tl_attach_refused(tl_srv *s, const int *fds, const int *peers,
                              size_t n)
{
    PBX_CHECK_EQ(tl_attach(s->attach, "R", 1, fds, n), ('r' << 8) | 1U);
    for (size_t i = 0; i < n; i++) {
        (void)close(fds[i]);
        PBX_CHECK(tp_hung_up(peers[i], 2000));
        (void)close(peers[i]);
    }
}

/* The job connection's DECISION of request a approved as grant g by the
 * fake powerboxd on broker; the job gets it. */
static void tl_approve(int conn, int broker, pbx_ipc_id a, pbx_ipc_id g)
{
    tl_wake(g_tl_wake, a);
    PBX_REQUIRE(pbx_peer_io_send_seq(conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                     0xA1U, -1) == 0);
    uint32_t seq = tl_take(broker, PBX_IPC_OP_DECISION);
    PBX_REQUIRE(pbx_peer_io_send_seq(broker, g_out, tl_approved(a, g, g_out),
                                     seq, -1) == 0);
    tl_recv(conn);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    PBX_CHECK_EQ(g_m.frame.seq, 0xA1U);
}

PBX_TEST(peers_launchd_attach_channel_refuses_wrong_routes)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    s.attach_only = true;
    tl_start(&s, NULL);
    PBX_CHECK(tl_logged(&s, "launchd: ready (attach channel open)"));
    int base = tp_fd_count(s.pid);
    /* One descriptor, two of the wrong types, and none: refused, each
     * descriptor closed (its pair's other end reads its end). */
    int p1[2];
    int p2[2];
    int p3[2];
    PBX_REQUIRE(tp_seqpair(p1) && tp_seqpair(p2) && tp_seqpair(p3));
    int one[1] = {p1[1]};
    int one_peer[1] = {p1[0]};
    tl_attach_refused(&s, one, one_peer, 1);
    PBX_CHECK(tl_logged(&s, "launchd: attach channel: refused: 'R' carries 1 "
                            "descriptor(s), not 2"));
    int two[2] = {p2[1], p3[1]};
    int two_peer[2] = {p2[0], p3[0]};
    tl_attach_refused(&s, two, two_peer, 2);
    PBX_CHECK(tl_logged(&s, "launchd: attach channel: refused: descriptor 0 "
                            "(wake) is not a SOCK_DGRAM socket"));
    PBX_CHECK_EQ(tl_attach(s.attach, "R", 1, NULL, 0), ('r' << 8) | 1U);
    /* 'L' is vfsd's; 'R' with a body is malformed. */
    PBX_CHECK_EQ(tl_attach(s.attach, "L/tmp/x", 7, NULL, 0), ('l' << 8) | 1U);
    PBX_CHECK_EQ(tl_attach(s.attach, "Rx", 2, NULL, 0), ('r' << 8) | 1U);
    PBX_CHECK(tl_logged(&s, "op 0x4c is not served by launchd"));
    PBX_CHECK_EQ(tp_fd_settle(s.pid, base, 2000), base);
    /* The channel's end: launchd serves on (a control connection is
     * still accepted and answered). */
    (void)close(s.attach);
    s.attach = -1;
    PBX_CHECK(tl_logged(&s, "launchd: attach channel closed; serving on"));
    tl_job j;
    tl_job_start(&s, &j, 0, 0);
    PBX_CHECK(j.id == 11U);
    (void)close(j.life);
    PBX_CHECK(tl_logged(&s, "EXPIRE not sent: no broker"));
    (void)close(j.launcher);
    (void)close(j.conn);
    tl_stop(&s);
}

PBX_TEST(peers_launchd_attach_adopts_routes_and_ends_grants_on_loss)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    s.attach_only = true;
    tl_start(&s, NULL);
    tl_job j;
    tl_job_start(&s, &j, 0, 0);
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id b = {4, 2};
    const pbx_ipc_id g = {9, 4};
    /* No broker yet: the job's BEGIN is answered ROUTE by launchd. */
    size_t n = tl_request(PBX_IPC_OP_BEGIN, a, g_req);
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req, n, 0x61U, -1) == 0);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_ROUTE);
    /* Routes arrive: BEGIN and WAKE work on them. */
    PBX_CHECK_EQ(tl_attach_routes(&s), (unsigned)'r' << 8);
    PBX_CHECK(tl_logged(&s, "launchd: attach channel: route(s) adopted"));
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, b, 0, 0), 0U);
    tl_approve(j.conn, s.broker, a, g);
    /* b's DECISION is held until its WAKE (none comes). */
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, b, g_req),
                                     0xB2U, -1) == 0);
    PBX_CHECK(tl_quiet(s.broker, 200));
    tl_wake(s.wake, (pbx_ipc_id){8, 8});
    PBX_CHECK(tl_logged(&s, "wake request 8.8 job 11.1"));
    /* New routes: the old broker is lost first. Its grant ends with a
     * line of its own, the held caller is answered ROUTE, the old ends
     * are closed; the job keeps running. */
    int old_wake = s.wake;
    int old_broker = s.broker;
    PBX_CHECK_EQ(tl_attach_routes(&s), (unsigned)'r' << 8);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0xB2U);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_ROUTE);
    char line[96];
    (void)snprintf(line, sizeof(line),
                   "launchd: grant 9.4 of job %llu.%u ended: broker lost",
                   (unsigned long long)j.id, j.gen);
    PBX_CHECK(tl_logged(&s, line));
    PBX_CHECK(tl_logged(&s, "request 4.2 job 11.1 entry cat outcome gone "
                            "reason broker lost"));
    PBX_CHECK(tp_hung_up(old_broker, 2000));
    (void)close(old_broker);
    (void)close(old_wake);
    PBX_CHECK(!tp_hung_up(j.conn, 100));
    /* The grant and the request are no longer the job's. */
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker, tl_consume(g, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_refused(j.conn, s.broker,
                            tl_request(PBX_IPC_OP_DECISION, b, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    /* The new broker serves; when powerboxd closes it, its grant ends
     * the same way. */
    const pbx_ipc_id g2 = {9, 5};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, b, 0, 0), 0U);
    tl_approve(j.conn, s.broker, b, g2);
    (void)close(s.broker);
    (void)snprintf(line, sizeof(line),
                   "launchd: grant 9.5 of job %llu.%u ended: broker lost",
                   (unsigned long long)j.id, j.gen);
    PBX_CHECK(tl_logged(&s, line));
    PBX_CHECK(tl_logged(&s, "powerboxd closed the broker; calls answered "
                            "ROUTE until a new broker"));
    (void)close(s.wake);
    PBX_CHECK_EQ(tl_attach_routes(&s), (unsigned)'r' << 8);
    tl_down(&s, &j);
}

/* A BEGIN on conn that names no job or target (launchd fills them in
 * from conn's job), admitted by the fake powerboxd as request id. */
static void tl_begin_any(int conn, int broker, pbx_ipc_id id)
{
    size_t n = tl_request(PBX_IPC_OP_BEGIN, (pbx_ipc_id){0, 0}, g_req);
    uint8_t *body = g_req + PBX_IPC_HEADER_BYTES;
    pbx_le_put64(body, 0);
    pbx_le_put32(body + 24, 0);
    pbx_le_put64(body + 16, 0);
    pbx_le_put32(body + 32, 0);
    PBX_REQUIRE(pbx_peer_io_send_seq(conn, g_req, n, 0x78U, -1) == 0);
    (void)tl_serve(broker, PBX_IPC_OP_BEGIN, id, 0, 0);
    tl_recv(conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0x78U);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
}

/* The caller's DECISION of id (seq) on conn waits at launchd; the WAKE of
 * id brings the one DECISION to the fake powerboxd, whose DENIED answer
 * reaches exactly conn with seq restored. */
static void tl_woken_decision(const tl_srv *s, int conn, pbx_ipc_id id,
                              uint32_t seq)
{
    tl_wake(s->wake, id);
    uint32_t ls = tl_take(s->broker, PBX_IPC_OP_DECISION);
    PBX_CHECK(g_m.frame.request.index == id.index &&
              g_m.frame.request.gen == id.gen);
    size_t n =
        tl_reply(PBX_IPC_OP_DECISION, id, 0, PBX_IPC_OUTCOME_DENIED, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s->broker, g_out, n, ls, -1) == 0);
    tl_recv(conn);
    PBX_CHECK_EQ(g_m.frame.seq, seq);
    PBX_CHECK(g_m.frame.request.index == id.index &&
              g_m.frame.request.gen == id.gen);
}

/* A WAKE looks first at the connection that began its request (a hint by
 * request id); a hint overwritten by another request's (same slot: the
 * ids differ only below bit 8 of the generation) still finds its caller,
 * on the other connection, through the walk it falls back to. */
PBX_TEST(peers_launchd_finds_a_wake_whose_hint_was_overwritten)
{
    tl_srv s;
    tl_job ja;
    tl_job jb;
    /* A second staged process: each job has a target to bind. */
    static const char *const extra[] = {"--stage", "43:1", NULL};
    tl_up(&s, &ja, extra);
    tl_job_start(&s, &jb, 0, 0);
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id b = {3, 8};
    tl_begin_any(ja.conn, s.broker, a);
    tl_begin_any(jb.conn, s.broker, b);
    PBX_REQUIRE(pbx_peer_io_send_seq(ja.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                     0xA1U, -1) == 0);
    PBX_REQUIRE(pbx_peer_io_send_seq(jb.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, b, g_req),
                                     0xB1U, -1) == 0);
    PBX_CHECK(tl_quiet(s.broker, 200));
    tl_woken_decision(&s, ja.conn, a, 0xA1U);
    PBX_CHECK(tl_quiet(jb.conn, 50));
    tl_woken_decision(&s, jb.conn, b, 0xB1U);
    PBX_CHECK(tl_quiet(ja.conn, 50) && tl_quiet(s.broker, 100));
    PBX_CHECK(!tl_logged(&s, "no connection holds it"));
    tl_job_end(&s, &ja);
    tl_down(&s, &jb);
}

/* When the supervisor's attach channel ends, launchd's event set is made
 * again without it (the channel was closed where it was read, not by the
 * loop): every connection, the broker and the wake route are served as
 * before, and new control connections are accepted. */
PBX_TEST(peers_launchd_serves_on_after_its_attach_channel_ends)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    s.attach_only = true;
    static const char *const extra[] = {"--stage", "43:1", NULL};
    tl_start(&s, extra);
    PBX_CHECK_EQ(tl_attach_routes(&s), (unsigned)'r' << 8);
    tl_job j;
    tl_job_start(&s, &j, 0, 0);
    const pbx_ipc_id a = {5, 3};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    (void)close(s.attach);
    s.attach = -1;
    PBX_CHECK(tl_logged(&s, "attach channel closed; serving on without it"));
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                     0xC1U, -1) == 0);
    PBX_CHECK(tl_quiet(s.broker, 200));
    tl_woken_decision(&s, j.conn, a, 0xC1U);
    tl_job k;
    tl_job_start(&s, &k, 0, 0);
    const pbx_ipc_id b = {6, 1};
    tl_begin_any(k.conn, s.broker, b);
    PBX_REQUIRE(pbx_peer_io_send_seq(k.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, b, g_req),
                                     0xC2U, -1) == 0);
    tl_woken_decision(&s, k.conn, b, 0xC2U);
    tl_job_end(&s, &k);
    tl_down(&s, &j);
}
