/*
 * test_peers_attach.c: the attach channel's receive and answer helpers
 * over a real socketpair: an 'R' with one descriptor and an 'L' with a
 * path arrive whole; a third descriptor, an over-long body and foreign
 * bytes-less messages are refused with every descriptor closed (the other
 * end of the pair reads end of file); an empty channel answers EAGAIN,
 * a closed one end of file; the answer is the op in lower case and the
 * status; the socket-type check tells SEQPACKET from DGRAM and a pipe.
 */
#include "../../peers/common/pbx_peer_attach.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Checks that reason is the non-NULL string want. */
#define TA_REASON(reason, want)                                                \
    PBX_CHECK((reason) != NULL && strcmp((reason), (want)) == 0)

/* Sends op plus body on chan with nfds copies of fd attached. */
static void ta_send(int chan, uint8_t op, const char *body, int fd, size_t nfds)
{
    uint8_t buf[256];
    size_t n = strlen(body);
    buf[0] = op;
    memcpy(buf + 1, body, n);
    int fds[3] = {fd, fd, fd};
    PBX_REQUIRE(nfds <= 3U);
    PBX_REQUIRE(pbx_peer_io_send_fds(chan, buf, n + 1U, fds, nfds, 0) == 0);
}

PBX_TEST(peers_attach_recv_route_and_listen)
{
    int ch[2];
    int pair[2];
    PBX_REQUIRE(tp_seqpair(ch));
    PBX_REQUIRE(tp_seqpair(pair));
    pbx_peer_attach_msg m;
    errno = 0;
    PBX_CHECK_EQ(pbx_peer_attach_recv(ch[1], &m), -1);
    PBX_CHECK_EQ(errno, EAGAIN);
    ta_send(ch[0], PBX_PEER_ATTACH_OP_ROUTE, "", pair[1], 1U);
    PBX_REQUIRE(pbx_peer_attach_recv(ch[1], &m) == 0);
    PBX_CHECK(m.ok);
    PBX_CHECK_EQ(m.op, 'R');
    PBX_CHECK_EQ(m.body_len, 0U);
    PBX_REQUIRE(m.nfds == 1U);
    PBX_CHECK(pbx_peer_attach_is_socket(m.fds[0], SOCK_SEQPACKET));
    static const int seq[1] = {SOCK_SEQPACKET};
    static const int two[2] = {SOCK_DGRAM, SOCK_SEQPACKET};
    PBX_CHECK(pbx_peer_attach_route_check(&m, seq, 1U) == NULL);
    TA_REASON(pbx_peer_attach_route_check(&m, two, 2U),
              "wrong descriptor count");
    static const int dgram[1] = {SOCK_DGRAM};
    TA_REASON(pbx_peer_attach_route_check(&m, dgram, 1U), "wrong socket type");
    PBX_CHECK(!pbx_peer_attach_is_socket(m.fds[0], SOCK_DGRAM));
    /* The received descriptor is the pair's end: bytes reach the other. */
    PBX_CHECK_EQ(write(m.fds[0], "x", 1), 1);
    char c = 0;
    PBX_CHECK_EQ(read(pair[0], &c, 1), 1);
    PBX_CHECK_EQ(c, 'x');
    (void)close(m.fds[0]);
    ta_send(ch[0], (uint8_t)'L', "/tmp/route.sock", -1, 0U);
    PBX_REQUIRE(pbx_peer_attach_recv(ch[1], &m) == 0);
    PBX_CHECK(m.ok);
    PBX_CHECK_EQ(m.op, 'L');
    PBX_CHECK_EQ(m.nfds, 0U);
    PBX_CHECK_EQ(m.body_len, 15U);
    TA_REASON(pbx_peer_attach_route_check(&m, seq, 1U),
              "wrong op for this peer");
    PBX_CHECK_MEM(m.body, "/tmp/route.sock", 15U);
    /* The answer: the op in lower case, then the status. */
    PBX_CHECK_EQ(pbx_peer_attach_answer(ch[1], 'R', PBX_PEER_ATTACH_REFUSED),
                 0);
    uint8_t a[4];
    PBX_CHECK_EQ(read(ch[0], a, sizeof(a)), 2);
    PBX_CHECK_EQ(a[0], 'r');
    PBX_CHECK_EQ(a[1], 1U);
    PBX_CHECK_EQ(pbx_peer_attach_answer(ch[1], 'L', PBX_PEER_ATTACH_DONE), 0);
    PBX_CHECK_EQ(read(ch[0], a, sizeof(a)), 2);
    PBX_CHECK_EQ(a[0], 'l');
    PBX_CHECK_EQ(a[1], 0U);
    (void)close(pair[0]);
    (void)close(pair[1]);
    (void)close(ch[0]);
    PBX_CHECK_EQ(pbx_peer_attach_recv(ch[1], &m), 1);
    (void)close(ch[1]);
}

PBX_TEST(peers_attach_refuses_extra_fds_and_long_bodies)
{
    int ch[2];
    int pair[2];
    PBX_REQUIRE(tp_seqpair(ch));
    PBX_REQUIRE(tp_seqpair(pair));
    pbx_peer_attach_msg m;
    /* Three descriptors: more than fit, so all are closed. */
    ta_send(ch[0], PBX_PEER_ATTACH_OP_ROUTE, "", pair[1], 3U);
    (void)close(pair[1]);
    PBX_REQUIRE(pbx_peer_attach_recv(ch[1], &m) == 0);
    PBX_CHECK(!m.ok);
    PBX_CHECK_EQ(m.op, 'R');
    PBX_CHECK_EQ(m.nfds, 0U);
    static const int seq[1] = {SOCK_SEQPACKET};
    TA_REASON(pbx_peer_attach_route_check(&m, seq, 1U), "malformed message");
    PBX_CHECK(tp_hung_up(pair[0], 2000));
    char c = 0;
    PBX_CHECK_EQ(read(pair[0], &c, 1), 0);
    (void)close(pair[0]);
    /* A body longer than any path is truncated and refused. */
    char big[200];
    memset(big, 'a', sizeof(big) - 1U);
    big[sizeof(big) - 1U] = '\0';
    ta_send(ch[0], (uint8_t)'L', big, -1, 0U);
    PBX_REQUIRE(pbx_peer_attach_recv(ch[1], &m) == 0);
    PBX_CHECK(!m.ok);
    /* refuse closes what came and answers status 1. */
    PBX_REQUIRE(tp_seqpair(pair));
    ta_send(ch[0], (uint8_t)'L', "/x", pair[1], 1U);
    (void)close(pair[1]);
    PBX_REQUIRE(pbx_peer_attach_recv(ch[1], &m) == 0);
    PBX_CHECK(m.ok);
    PBX_CHECK_EQ(m.nfds, 1U);
    pbx_peer_attach_refuse(ch[1], &m, "test", "wrong descriptor count");
    PBX_CHECK_EQ(m.nfds, 0U);
    PBX_CHECK(tp_hung_up(pair[0], 2000));
    uint8_t a[8];
    /* The refusal echoes the short body ("/x") as its tag. */
    PBX_CHECK_EQ(read(ch[0], a, sizeof(a)), 4);
    PBX_CHECK_EQ(a[0], 'l');
    PBX_CHECK_EQ(a[1], 1U);
    PBX_CHECK_MEM(a + 2, "/x", 2U);
    int p[2];
    PBX_REQUIRE(pipe(p) == 0);
    PBX_CHECK(!pbx_peer_attach_is_socket(p[0], SOCK_SEQPACKET));
    (void)close(p[0]);
    (void)close(p[1]);
    (void)close(pair[0]);
    (void)close(ch[0]);
    (void)close(ch[1]);
}

/* An 'R' tagged with a call number is adopted and answered 'r' 0 with the
 * number echoed; the supervisor's test takes that answer for its own call
 * and not for a later call of another number (a late answer of a call
 * that timed out), nor a 'p' for another pid for a 'P'. */
PBX_TEST(peers_attach_answer_echoes_its_call)
{
    int ch[2];
    int pair[2];
    PBX_REQUIRE(tp_seqpair(ch));
    PBX_REQUIRE(tp_seqpair(pair));
    pbx_peer_attach_msg m;
    ta_send(ch[0], (uint8_t)'R', "\x07\x01\x02\x03", pair[1], 1U);
    (void)close(pair[1]);
    PBX_REQUIRE(pbx_peer_attach_recv(ch[1], &m) == 0);
    PBX_CHECK(m.ok);
    int routes[1] = {-1};
    size_t nroutes = 0U;
    pbx_peer_attach_adopt(ch[1], &m, "test", routes, &nroutes, 1U);
    PBX_CHECK_EQ(nroutes, 1U);
    uint8_t a[8];
    PBX_CHECK_EQ(read(ch[0], a, sizeof(a)), 6);
    static const uint8_t call7[5] = {'R', 7, 1, 2, 3};
    static const uint8_t call8[5] = {'R', 8, 1, 2, 3};
    PBX_CHECK_EQ(a[1], PBX_PEER_ATTACH_DONE);
    PBX_CHECK(pbx_peer_attach_echoes(a, 6U, call7, sizeof(call7)));
    PBX_CHECK(!pbx_peer_attach_echoes(a, 6U, call8, sizeof(call8)));
    /* An op-only answer never matches a tagged call. */
    PBX_CHECK(!pbx_peer_attach_echoes(a, 2U, call7, sizeof(call7)));
    /* A 'p' for pid 0x0a00 is not the answer to a 'P' for pid 0x0b00. */
    static const uint8_t pa[6] = {'p', 0, 0, 0x0a, 0, 0};
    static const uint8_t pmsg[5] = {'P', 0, 0x0b, 0, 0};
    PBX_CHECK(!pbx_peer_attach_echoes(pa, sizeof(pa), pmsg, sizeof(pmsg)));
    static const uint8_t pb[6] = {'p', 0, 0, 0x0b, 0, 0};
    PBX_CHECK(pbx_peer_attach_echoes(pb, sizeof(pb), pmsg, sizeof(pmsg)));
    (void)close(routes[0]);
    (void)close(pair[0]);
    (void)close(ch[0]);
    (void)close(ch[1]);
}
