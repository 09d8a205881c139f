/*
 * test_peers_launchd.c: launchd's hang-up cancellation. The table of
 * requests a control connection began (pure, on cases), and pbx-launchd
 * serve as a real process between a control client and a fake powerboxd
 * on the broker socketpair: when the client hangs up, exactly the
 * requests it began and never saw decided are cancelled by exact id and
 * their decisions collected; an error answer to that CANCEL is not fatal;
 * a BEGIN beyond the table's bound is refused before it is relayed; and
 * launchd's descriptors return to their baseline.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_track.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

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
    /* Nothing begun: every frame naming a request or grant is refused;
     * BEGIN and EXPIRE pass; a non-public op is misrouted. */
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
    PBX_CHECK_EQ(tl_admit(&t, n), 0U);
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

/* The fake powerboxd: receives one frame on the broker, checks op and
 * id, and answers as tl_reply. */
static void tl_serve(int broker, uint16_t op, pbx_ipc_id id, uint16_t st,
                     uint8_t outcome)
{
    PBX_REQUIRE(pbx_peer_io_recv_frame(broker, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    PBX_CHECK_EQ(g_m.frame.op, op);
    PBX_CHECK_EQ(g_m.nfds, 0U);
    if (op != (uint16_t)PBX_IPC_OP_BEGIN) {
        PBX_CHECK_EQ(g_m.frame.request.index, id.index);
        PBX_CHECK_EQ(g_m.frame.request.gen, id.gen);
    }
    if (op == (uint16_t)PBX_IPC_OP_CANCEL) {
        /* The exact form: neither correlation nor grant. */
        pbx_ipc_cancel c;
        PBX_CHECK_EQ(pbx_ipc_cancel_decode(&g_m.frame, &c), PBX_OK);
        PBX_CHECK(!c.by_correlation && !c.by_grant);
    }
    size_t n = tl_reply(op, id, st, outcome, g_out);
    PBX_CHECK(pbx_peer_io_send(broker, g_out, n, -1) == 0);
}

/* The client side: sends op for id on conn while the fake answers it;
 * returns the status launchd relayed back. */
static uint16_t tl_call(int conn, int broker, uint16_t op, pbx_ipc_id id,
                        uint16_t st, uint8_t outcome)
{
    size_t n = tl_request(op, id, g_req);
    PBX_REQUIRE(pbx_peer_io_send(conn, g_req, n, -1) == 0);
    tl_serve(broker, op, id, st, outcome);
    PBX_REQUIRE(pbx_peer_io_recv_frame(conn, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    return g_m.frame.status;
}

/* Whether anything arrives on fd within ms. */
static bool tl_quiet(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) == 0;
}

PBX_TEST(peers_launchd_cancels_what_a_hung_up_caller_left)
{
    int w[2];
    int b[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w) == 0);
    PBX_REQUIRE(tp_seqpair(b));
    char ctl[512];
    char warg[16];
    char barg[16];
    (void)snprintf(ctl, sizeof(ctl), "%s/launchd-ctl.sock", tp_tmpdir());
    (void)snprintf(warg, sizeof(warg), "%d", w[1]);
    (void)snprintf(barg, sizeof(barg), "%d", b[1]);
    const char *args[] = {"serve", "--wake-fd", warg, "--broker-fd",
                          barg,    "--control", ctl,  NULL};
    int keep[2] = {w[1], b[1]};
    pid_t srv = tp_spawn("launchd", args, keep, 2, -1);
    (void)close(w[1]);
    (void)close(b[1]);
    PBX_REQUIRE(srv > 0);
    int base = tp_fd_count(srv);
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id d = {4, 2};
    int c = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    /* a stays open; d is begun and decided; a refused BEGIN begins
     * nothing. */
    PBX_CHECK_EQ(tl_call(c, b[0], PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    PBX_CHECK_EQ(tl_call(c, b[0], PBX_IPC_OP_BEGIN, d, 0, 0), 0U);
    PBX_CHECK_EQ(
        tl_call(c, b[0], PBX_IPC_OP_DECISION, d, 0, PBX_IPC_OUTCOME_DENIED),
        0U);
    PBX_CHECK_EQ(
        tl_call(c, b[0], PBX_IPC_OP_BEGIN, zero, (uint16_t)PBX_E_CORE_BUSY, 0),
        (uint16_t)PBX_E_CORE_BUSY);
    (void)close(c);
    /* Exactly a is cancelled, then its decision collected until it is
     * no longer PENDING; nothing else is sent. */
    tl_serve(b[0], PBX_IPC_OP_CANCEL, a, 0, 0);
    tl_serve(b[0], PBX_IPC_OP_DECISION, a, 0, PBX_IPC_OUTCOME_PENDING);
    tl_serve(b[0], PBX_IPC_OP_DECISION, a, 0, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(tl_quiet(b[0], 300));
    /* A request that ended meanwhile answers CANCEL with an error: that
     * is logged, the decision is still asked for, launchd serves on. */
    c = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    const pbx_ipc_id e = {5, 1};
    PBX_CHECK_EQ(tl_call(c, b[0], PBX_IPC_OP_BEGIN, e, 0, 0), 0U);
    (void)close(c);
    tl_serve(b[0], PBX_IPC_OP_CANCEL, e, (uint16_t)PBX_E_CORE_STATE, 0);
    tl_serve(b[0], PBX_IPC_OP_DECISION, e, (uint16_t)PBX_E_CORE_UNKNOWN, 0);
    PBX_CHECK(tl_quiet(b[0], 300));
    /* Bounded: past PBX_PEER_TRACK_MAX open requests a BEGIN is refused
     * BUSY without reaching powerboxd; the hang-up cancels each. */
    c = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    for (uint32_t i = 0; i < PBX_PEER_TRACK_MAX; i++) {
        pbx_ipc_id id = {10U + i, 1U};
        PBX_CHECK_EQ(tl_call(c, b[0], PBX_IPC_OP_BEGIN, id, 0, 0), 0U);
    }
    size_t n = tl_request(PBX_IPC_OP_BEGIN, zero, g_req);
    PBX_REQUIRE(pbx_peer_io_send(c, g_req, n, -1) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(c, &g_m) == 0);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_BUSY);
    PBX_CHECK(tl_quiet(b[0], 100));
    (void)close(c);
    uint32_t cancelled = 0;
    for (uint32_t i = 0; i < PBX_PEER_TRACK_MAX; i++) {
        PBX_REQUIRE(pbx_peer_io_recv_frame(b[0], &g_m) == 0);
        pbx_ipc_id id = g_m.frame.request;
        PBX_CHECK_EQ(g_m.frame.op, PBX_IPC_OP_CANCEL);
        cancelled += id.index >= 10U && id.gen == 1U ? 1U : 0U;
        n = tl_reply(PBX_IPC_OP_CANCEL, id, 0, 0, g_out);
        PBX_CHECK(pbx_peer_io_send(b[0], g_out, n, -1) == 0);
        tl_serve(b[0], PBX_IPC_OP_DECISION, id, 0, PBX_IPC_OUTCOME_CANCELLED);
    }
    PBX_CHECK_EQ(cancelled, PBX_PEER_TRACK_MAX);
    PBX_CHECK(tl_quiet(b[0], 300));
    PBX_CHECK_EQ(tp_fd_settle(srv, base, 2000), base);
    (void)tp_stop(srv);
    (void)close(w[0]);
    (void)close(b[0]);
}

/* Sends the n bytes in g_req (with cap unless negative) on conn and
 * returns the status of launchd's own answer; fails if the frame reached
 * the fake powerboxd on broker. */
static uint16_t tl_refused(int conn, int broker, size_t n, int cap)
{
    PBX_REQUIRE(pbx_peer_io_send(conn, g_req, n, cap) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(conn, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    PBX_CHECK_EQ(g_m.nfds, 0U);
    PBX_CHECK(tl_quiet(broker, 50));
    return g_m.frame.status;
}

/* Starts pbx-launchd serve with a control socket at ctl between a fake
 * powerboxd (*broker, ours) and control clients; returns its pid. */
static pid_t tl_launchd(char *ctl, size_t ctl_len, int *wake, int *broker)
{
    int w[2];
    int b[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w) == 0);
    PBX_REQUIRE(tp_seqpair(b));
    char warg[16];
    char barg[16];
    (void)snprintf(ctl, ctl_len, "%s/launchd-own.sock", tp_tmpdir());
    (void)snprintf(warg, sizeof(warg), "%d", w[1]);
    (void)snprintf(barg, sizeof(barg), "%d", b[1]);
    const char *args[] = {"serve", "--wake-fd", warg, "--broker-fd",
                          barg,    "--control", ctl,  NULL};
    int keep[2] = {w[1], b[1]};
    pid_t srv = tp_spawn("launchd", args, keep, 2, -1);
    (void)close(w[1]);
    (void)close(b[1]);
    PBX_REQUIRE(srv > 0);
    *wake = w[0];
    *broker = b[0];
    return srv;
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
    char ctl[512];
    int wake = -1;
    int broker = -1;
    pid_t srv = tl_launchd(ctl, sizeof(ctl), &wake, &broker);
    int base = tp_fd_count(srv);
    /* The control socket is launchd's authority: owner-only. */
    struct stat st;
    PBX_REQUIRE(stat(ctl, &st) == 0);
    PBX_CHECK_EQ(st.st_mode & 0777U, 0600U);
    const pbx_ipc_id zero = {0, 0};
    const pbx_ipc_id a = {3, 7};
    const pbx_ipc_id g = {9, 4};
    size_t n = 0;
    int ca = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
    int cb = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(ca >= 0 && cb >= 0);
    PBX_CHECK_EQ(tl_call(ca, broker, PBX_IPC_OP_BEGIN, a, 0, 0), 0U);
    tl_foreign_request(cb, broker, a);
    /* A still can: its DECISION is relayed and hands A the grant. */
    PBX_REQUIRE(pbx_peer_io_send(ca, g_req,
                                 tl_request(PBX_IPC_OP_DECISION, a, g_req),
                                 -1) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(broker, &g_m) == 0);
    PBX_CHECK_EQ(g_m.frame.op, PBX_IPC_OP_DECISION);
    PBX_CHECK(pbx_peer_io_send(broker, g_out, tl_approved(a, g, g_out), -1) ==
              0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(ca, &g_m) == 0);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    /* B cannot drive A's grant either. */
    PBX_CHECK_EQ(tl_refused(cb, broker, tl_consume(g, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tl_refused(cb, broker, tl_cancel_end(g, 0, 0, 0, g_req), -1),
                 PBX_PEER_E_NOT_YOURS);
    /* A consumes it: relayed exactly. */
    PBX_REQUIRE(pbx_peer_io_send(ca, g_req, tl_consume(g, g_req), -1) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(broker, &g_m) == 0);
    pbx_ipc_consume cs;
    PBX_CHECK_EQ(pbx_ipc_consume_decode(&g_m.frame, &cs), PBX_OK);
    PBX_CHECK(cs.grant.index == g.index && cs.grant.gen == g.gen);
    n = tl_reply(PBX_IPC_OP_CONSUME, zero, 0, 0, g_out);
    PBX_CHECK(pbx_peer_io_send(broker, g_out, n, -1) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(ca, &g_m) == 0);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    /* EXPIRE stays launchd's administrative operation, from anyone who
     * can reach the control socket. */
    pbx_ipc_expire ex = {PBX_IPC_EXPIRE_JOB, 1, 11, 0};
    PBX_REQUIRE(pbx_ipc_expire_encode(&ex, g_req, sizeof(g_req), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send(cb, g_req, n, -1) == 0);
    tl_serve(broker, PBX_IPC_OP_EXPIRE, zero, 0, 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(cb, &g_m) == 0);
    PBX_CHECK_EQ(g_m.frame.status, 0U);
    /* Nothing was open at either hang-up; descriptors back to base. */
    (void)close(ca);
    (void)close(cb);
    PBX_CHECK(tl_quiet(broker, 300));
    PBX_CHECK_EQ(tp_fd_settle(srv, base, 2000), base);
    (void)tp_stop(srv);
    (void)close(wake);
    (void)close(broker);
}

/* The client sends the n bytes of g_req with seq; the fake powerboxd
 * must see them byte for byte (seq included) and answers with the n_rep
 * bytes of g_out stamped with rep_seq; the client must get those back
 * byte for byte. */
static void tl_relay_exact(int conn, int broker, size_t n, uint32_t seq,
                           size_t n_rep, uint32_t rep_seq)
{
    PBX_REQUIRE(pbx_peer_io_send_seq(conn, g_req, n, seq, -1) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(broker, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    PBX_CHECK_EQ(g_m.len, n);
    PBX_CHECK(memcmp(g_m.buf, g_req, n) == 0);
    PBX_CHECK_EQ(g_m.frame.seq, seq);
    PBX_REQUIRE(pbx_peer_io_send_seq(broker, g_out, n_rep, rep_seq, -1) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(conn, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    PBX_CHECK_EQ(g_m.len, n_rep);
    PBX_CHECK(memcmp(g_m.buf, g_out, n_rep) == 0);
    PBX_CHECK_EQ(g_m.frame.seq, rep_seq);
}

PBX_TEST(peers_launchd_passes_seq_through_and_echoes_it_in_refusals)
{
    char ctl[512];
    int wake = -1;
    int broker = -1;
    pid_t srv = tl_launchd(ctl, sizeof(ctl), &wake, &broker);
    const pbx_ipc_id a = {3, 7};
    int c = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(c >= 0);
    /* Relayed: BEGIN, DECISION, an error answer; the seq goes through
     * unchanged both ways (the reply is powerboxd's, whatever it says). */
    tl_relay_exact(c, broker, tl_request(PBX_IPC_OP_BEGIN, a, g_req), 0x51U,
                   tl_reply(PBX_IPC_OP_BEGIN, a, 0, 0, g_out), 0x51U);
    tl_relay_exact(
        c, broker, tl_request(PBX_IPC_OP_DECISION, a, g_req), 0xFFFFFFFFU,
        tl_reply(PBX_IPC_OP_DECISION, a, 0, PBX_IPC_OUTCOME_PENDING, g_out),
        0xFFFFFFFFU);
    tl_relay_exact(
        c, broker, tl_request(PBX_IPC_OP_CANCEL, a, g_req), 0U,
        tl_reply(PBX_IPC_OP_CANCEL, a, (uint16_t)PBX_E_CORE_STATE, 0, g_out),
        0U);
    /* Refused by launchd itself: the refusal echoes the caller's seq. */
    const pbx_ipc_id other = {8, 8};
    size_t n = tl_request(PBX_IPC_OP_DECISION, other, g_req);
    PBX_REQUIRE(pbx_peer_io_send_seq(c, g_req, n, 0x52U, -1) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(c, &g_m) == 0);
    PBX_CHECK_EQ(g_m.frame.status, PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(g_m.frame.seq, 0x52U);
    n = tl_request(PBX_IPC_OP_DECISION, a, g_req);
    g_req[PBX_IPC_RESERVED_OFFSET] = 1U;
    PBX_REQUIRE(pbx_peer_io_send_seq(c, g_req, n, 0x53U, -1) == 0);
    PBX_REQUIRE(pbx_peer_io_recv_frame(c, &g_m) == 0);
    PBX_CHECK_EQ(g_m.frame.status, PBX_E_IPC_RESERVED);
    PBX_CHECK_EQ(g_m.frame.seq, 0x53U);
    PBX_CHECK(tl_quiet(broker, 50));
    /* The hang-up cancels a, which never got its terminal DECISION. */
    (void)close(c);
    tl_serve(broker, PBX_IPC_OP_CANCEL, a, 0, 0);
    tl_serve(broker, PBX_IPC_OP_DECISION, a, 0, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(tl_quiet(broker, 100));
    (void)tp_stop(srv);
    (void)close(wake);
    (void)close(broker);
}
