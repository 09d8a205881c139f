/*
 * test_peers_launchd.c: launchd's per-connection table (pure, on cases:
 * ownership, job binding, DECISIONs held until woken) and pbx-launchd
 * serve as a real process between control and job connections and a fake
 * powerboxd on the broker socketpair and wake route: jobs are launched
 * (python3 helper that hands its descriptor 3 back), bound and ended
 * (EXIT, EXPIRE, process group killed with its launcher); broker replies
 * are matched by launchd's own seq across concurrent callers, a slow call
 * answers ROUTE and its late reply is cancelled, never delivered; held
 * DECISIONs are delivered on WAKE (an early WAKE remembered); spoofed job
 * claims and BEGIN from control connections are refused; hang-ups cancel
 * exactly what was left open; idle control connections are dropped and
 * one past --max-conns refused; descriptors return to their baseline.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_launch.h"
#include "../../peers/lib/pbx_peer_track.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static pbx_peer_msg g_m;
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

/* A running launchd with a fake powerboxd (broker and wake ends ours). */
typedef struct tl_srv {
    pid_t pid;
    int wake;
    int broker;
    char ctl[512];
} tl_srv;

/* Starts pbx-launchd serve with the extra NULL-terminated options. */
static void tl_start(tl_srv *s, const char *const *extra)
{
    int w[2];
    int b[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w) == 0);
    PBX_REQUIRE(tp_seqpair(b));
    static char warg[16];
    static char barg[16];
    (void)snprintf(s->ctl, sizeof(s->ctl), "%s/launchd.sock", tp_tmpdir());
    (void)snprintf(warg, sizeof(warg), "%d", w[1]);
    (void)snprintf(barg, sizeof(barg), "%d", b[1]);
    const char *args[TP_ARGS_MAX] = {"serve",       "--wake-fd", warg,
                                     "--broker-fd", barg,        "--control",
                                     s->ctl,        "--stage",   "42:5"};
    size_t n = 9;
    for (size_t i = 0;
         extra != NULL && extra[i] != NULL && n + 4U < TP_ARGS_MAX; i++) {
        args[n++] = extra[i];
    }
    args[n] = NULL;
    int keep[2] = {w[1], b[1]};
    s->pid = tp_spawn("launchd", args, keep, 2, -1);
    (void)close(w[1]);
    (void)close(b[1]);
    PBX_REQUIRE(s->pid > 0);
    s->wake = w[0];
    s->broker = b[0];
}

/* Stops s and closes its ends. */
static void tl_stop(tl_srv *s)
{
    (void)tp_stop(s->pid);
    (void)close(s->wake);
    (void)close(s->broker);
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

/* Sends powerboxd's WAKE for id. */
static void tl_wake(int wake, pbx_ipc_id id)
{
    pbx_ipc_wake w = {11, 1};
    size_t k = 0;
    PBX_REQUIRE(pbx_ipc_wake_encode(id, &w, g_out, sizeof(g_out), &k) ==
                PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send(wake, g_out, k, -1) == 0);
}

PBX_TEST(peers_launchd_cancels_what_a_hung_up_caller_left)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    static const char *const extra[] = {"--max-open", "4", NULL};
    tl_start(&s, extra);
    tl_job j;
    tl_job_start(&s, &j, 0, 0);
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
    /* A still can: its DECISION is relayed and hands A the grant. */
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
    tl_job_end(&s, &jb);
    tl_stop(&s);
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
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    tl_job j;
    tl_job_start(&s, &j, 0, 0);
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id b = {4, 1};
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    PBX_CHECK_EQ(tl_call(j.conn, s.broker, PBX_IPC_OP_BEGIN, b, 0, 0), 0U);
    (void)zero;
    /* PENDING: the caller is held, nobody polls. */
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                     0xD1U, -1) == 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, a, 0,
                   PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK(tl_quiet(j.conn, 300) && tl_quiet(s.broker, 10));
    /* The WAKE: launchd asks again and delivers, alias included, with the
     * caller's seq. */
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
    /* An early WAKE (before the PENDING answer) is remembered: the
     * PENDING answer triggers the re-ask at once. */
    PBX_REQUIRE(pbx_peer_io_send_seq(j.conn, g_req,
                                     tl_request(PBX_IPC_OP_DECISION, b, g_req),
                                     0xD2U, -1) == 0);
    seq = tl_take(s.broker, PBX_IPC_OP_DECISION);
    tl_wake(s.wake, b);
    tp_sleep_ms(100);
    size_t n =
        tl_reply(PBX_IPC_OP_DECISION, b, 0, PBX_IPC_OUTCOME_PENDING, g_out);
    PBX_REQUIRE(pbx_peer_io_send_seq(s.broker, g_out, n, seq, -1) == 0);
    (void)tl_serve(s.broker, PBX_IPC_OP_DECISION, b, 0, PBX_IPC_OUTCOME_DENIED);
    tl_recv(j.conn);
    PBX_CHECK_EQ(g_m.frame.seq, 0xD2U);
    PBX_CHECK(g_m.frame.request.index == b.index);
    PBX_CHECK(tl_quiet(s.broker, 100));
    tl_job_end(&s, &j);
    tl_stop(&s);
}

PBX_TEST(peers_launchd_refuses_job_spoofing)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    tl_start(&s, NULL);
    tl_job j;
    tl_job_start(&s, &j, 0, 0);
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
    /* Zero job and target claims are filled in from the binding. */
    n = tl_request(PBX_IPC_OP_BEGIN, zero, g_req);
    pbx_le_put64(body, 0);
    pbx_le_put32(body + 24, 0);
    pbx_le_put64(body + 16, 0);
    pbx_le_put32(body + 32, 0);
    PBX_REQUIRE(pbx_peer_io_send(j.conn, g_req, n, -1) == 0);
    (void)tl_take(s.broker, PBX_IPC_OP_BEGIN);
    pbx_ipc_begin b;
    PBX_CHECK_EQ(pbx_ipc_begin_decode(&g_m.frame, &b), PBX_OK);
    PBX_CHECK(b.ctx.job_id == 11U && b.ctx.job_gen == 1U &&
              b.target.process_id == 42U && b.target.process_gen == 5U);
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
    tl_job_end(&s, &j);
    tl_stop(&s);
}

PBX_TEST(peers_launchd_drops_idle_and_refuses_past_its_limit)
{
    tl_srv s;
    memset(&s, 0, sizeof(s));
    static const char *const extra[] = {"--idle-ms", "300", "--max-conns", "2",
                                        NULL};
    tl_start(&s, extra);
    tl_job j;
    tl_job_start(&s, &j, 0, 0);
    /* The launcher is one of the two; one more fits, the third is
     * accepted and closed at once. */
    int c1 = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    int c2 = pbx_peer_io_connect(s.ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c1 >= 0 && c2 >= 0);
    PBX_CHECK(tp_hung_up(c2, 1000));
    /* c1 says nothing: dropped after --idle-ms; the launcher (its job is
     * alive) and the job connection are not. */
    PBX_CHECK(!tp_hung_up(c1, 100));
    PBX_CHECK(tp_hung_up(c1, 2000));
    PBX_CHECK(tl_quiet(j.launcher, 200) && tl_quiet(j.conn, 10));
    (void)close(c1);
    (void)close(c2);
    tl_job_end(&s, &j);
    tl_stop(&s);
}
