/*
 * test_peers_client.c: pbx-client and pbx-launchd against a fake powerboxd
 * played by the test over real socketpairs: BEGIN, SELECTOR chunks at exact
 * offsets (a selector longer than one chunk), COMMIT carrying exactly the
 * scope descriptor, DECISION PENDING then APPROVED; launchd's EXPIRE frame
 * and its WAKE receiver deleting a smuggled descriptor; and the client's
 * scope acquisition refusing a hand-out that does not name the scope by
 * its own inode.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pbx_peer_msg g_m;
static uint8_t g_out[PBX_IPC_FRAME_BYTES_MAX];

/* Receives one request frame from the client. */
static void tc_recv(int fd, uint16_t op)
{
    PBX_REQUIRE(pbx_peer_io_recv_frame(fd, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    PBX_CHECK_EQ(g_m.frame.op, op);
}

/* Answers with an empty reply of op for id. */
static void tc_empty(int fd, uint16_t op, pbx_ipc_id id)
{
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_empty_encode(op | PBX_IPC_REPLY_BIT, id, g_out,
                                      sizeof(g_out), &n),
                 PBX_OK);
    PBX_CHECK(pbx_peer_io_send(fd, g_out, n, -1) == 0);
}

/* Answers a DECISION with outcome (APPROVED: install grant 9.1 slot 40). */
static void tc_decision(int fd, pbx_ipc_id id, uint8_t outcome)
{
    pbx_ipc_decision d;
    memset(&d, 0, sizeof(d));
    d.outcome = outcome;
    if (outcome == PBX_IPC_OUTCOME_APPROVED) {
        d.mode = PBX_IPC_MODE_INSTALL;
        d.grant.index = 9;
        d.grant.gen = 1;
        d.installed_slot = 40;
    }
    size_t n = 0;
    PBX_CHECK_EQ(
        pbx_ipc_decision_reply_encode(id, &d, g_out, sizeof(g_out), &n),
        PBX_OK);
    PBX_CHECK(pbx_peer_io_send(fd, g_out, n, -1) == 0);
}

/* Plays powerboxd for one request of selector sel from the client. */
static void tc_serve(int pub, int scope_peer, const char *sel)
{
    pbx_ipc_id id = {2, 5};
    static pbx_ipc_begin b;
    tc_recv(pub, PBX_IPC_OP_BEGIN);
    PBX_REQUIRE(pbx_ipc_begin_decode(&g_m.frame, &b) == PBX_OK);
    PBX_CHECK_EQ(b.selector_len, strlen(sel));
    PBX_CHECK_EQ(b.ctx.operation, PBX_IPC_OPERATION_READ);
    PBX_CHECK_EQ(b.target.slot, 40U);
    pbx_ipc_begin_reply br = {70};
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_begin_reply_encode(id, &br, g_out, sizeof(g_out), &n),
                 PBX_OK);
    PBX_CHECK(pbx_peer_io_send(pub, g_out, n, -1) == 0);
    static uint8_t got[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    uint32_t have = 0;
    for (int chunks = 0; have < b.selector_len && chunks < 16; chunks++) {
        pbx_ipc_selector c;
        tc_recv(pub, PBX_IPC_OP_SELECTOR);
        PBX_REQUIRE(pbx_ipc_selector_decode(&g_m.frame, &c) == PBX_OK);
        PBX_REQUIRE(c.offset == have && have + c.len <= sizeof(got));
        memcpy(got + have, c.bytes, c.len);
        have += c.len;
        tc_empty(pub, PBX_IPC_OP_SELECTOR, id);
    }
    uint8_t d[PBX_SHA2_DIGEST_BYTES];
    PBX_CHECK_EQ(pbx_sha2_digest(got, have, d), PBX_OK);
    PBX_CHECK_MEM(d, b.selector_digest, sizeof(d));
    tc_recv(pub, PBX_IPC_OP_COMMIT);
    PBX_REQUIRE(g_m.nfds == 1U);
    /* The transferred scope is the client's connection: same inode. */
    PBX_CHECK(pbx_peer_io_inode(g_m.fds[0]) != 0U);
    PBX_CHECK(pbx_peer_io_send(g_m.fds[0], (const uint8_t *)"x", 1, -1) == 0);
    char one = 0;
    PBX_CHECK(read(scope_peer, &one, 1) == 1 && one == 'x');
    pbx_peer_io_close_all(g_m.fds, g_m.nfds);
    tc_empty(pub, PBX_IPC_OP_COMMIT, id);
    tc_recv(pub, PBX_IPC_OP_DECISION);
    tc_decision(pub, id, PBX_IPC_OUTCOME_PENDING);
    tc_recv(pub, PBX_IPC_OP_DECISION);
    tc_decision(pub, id, PBX_IPC_OUTCOME_APPROVED);
}

PBX_TEST(peers_client_request_frames)
{
    int pub[2];
    int scope[2];
    PBX_REQUIRE(tp_seqpair(pub) && tp_seqpair(scope));
    static char sel[700];
    memset(sel, 'a', sizeof(sel) - 1U);
    sel[4] = '/'; /* "aaaa/aaa...": a path of more than one chunk */
    char parg[16];
    char sarg[16];
    (void)snprintf(parg, sizeof(parg), "%d", pub[1]);
    (void)snprintf(sarg, sizeof(sarg), "%d", scope[1]);
    const char *args[] = {
        "request",  "--control-fd", parg,   "--scope-fd", sarg,   "--selector",
        sel,        "--op",         "read", "--class",    "file", "--lifetime",
        "one-shot", "--target",     "7:2",  "--slot",     "40",   NULL};
    int keep[2] = {pub[1], scope[1]};
    pid_t pid = tp_spawn("client", args, keep, 2, -1);
    (void)close(pub[1]);
    (void)close(scope[1]);
    PBX_REQUIRE(pid > 0);
    tc_serve(pub[0], scope[0], sel);
    PBX_CHECK_EQ(tp_wait_exit(pid, 5000), 0);
    pbx_peer_io_close_all(pub, 1);
    pbx_peer_io_close_all(scope, 1);
}

PBX_TEST(peers_launchd_wake_and_expire)
{
    int w[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w) == 0);
    char log[512];
    char warg[16];
    (void)snprintf(log, sizeof(log), "%s/wakes", tp_tmpdir());
    (void)snprintf(warg, sizeof(warg), "%d", w[1]);
    const char *sargs[] = {"serve", "--wake-fd", warg, "--wake-log", log, NULL};
    pid_t srv = tp_spawn("launchd", sargs, &w[1], 1, -1);
    (void)close(w[1]);
    PBX_REQUIRE(srv > 0);
    pbx_ipc_wake wk = {11, 2};
    pbx_ipc_id id = {4, 9};
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_wake_encode(id, &wk, g_out, sizeof(g_out), &n),
                 PBX_OK);
    int smug[2];
    PBX_REQUIRE(tp_seqpair(smug));
    PBX_CHECK(pbx_peer_io_send(w[0], g_out, n, smug[0]) == 0);
    (void)close(smug[0]);
    PBX_CHECK(tp_hung_up(smug[1], 2000)); /* the descriptor was deleted */
    (void)close(smug[1]);
    PBX_CHECK(pbx_peer_io_send(w[0], g_out, n, -1) == 0);
    char text[256] = {0};
    for (int i = 0; i < 100 && strstr(text, "wake") == NULL; i++) {
        (void)tp_read_file(log, text, sizeof(text));
        struct timespec ts = {0, 10L * 1000L * 1000L};
        (void)nanosleep(&ts, NULL);
    }
    PBX_CHECK(strcmp(text, "wake request 4.9 job 11.2\n") == 0);
    (void)close(w[0]);
    (void)tp_stop(srv);
    int pub[2];
    PBX_REQUIRE(tp_seqpair(pub));
    char parg[16];
    (void)snprintf(parg, sizeof(parg), "%d", pub[1]);
    /* expire has no readiness line: run it without tp_spawn's wait. */
    pid_t cli = fork();
    if (cli == 0) {
        const char *eargs[] = {"pbx-launchd",  "expire", "--public-fd",
                               parg,           "--job",  "11:2",
                               "--invocation", "5",      NULL};
        char path[512];
        const char *bin = getenv("PBX_PEERS_BIN");
        (void)snprintf(path, sizeof(path), "%s/pbx-launchd",
                       bin ? bin : "build/bin");
        (void)fcntl(pub[1], F_SETFD, 0);
        execv(path, (char *const *)(void *)eargs);
        _exit(127);
    }
    (void)close(pub[1]);
    PBX_REQUIRE(cli > 0);
    tc_recv(pub[0], PBX_IPC_OP_EXPIRE);
    pbx_ipc_expire ex;
    PBX_CHECK_EQ(pbx_ipc_expire_decode(&g_m.frame, &ex), PBX_OK);
    PBX_CHECK(ex.kind == PBX_IPC_EXPIRE_INVOCATION && ex.job_id == 11U &&
              ex.job_gen == 2U && ex.invocation_id == 5U);
    pbx_ipc_id zero = {0, 0};
    tc_empty(pub[0], PBX_IPC_OP_EXPIRE, zero);
    PBX_CHECK_EQ(tp_wait_exit(cli, 5000), 0);
    (void)close(pub[0]);
}

/* Plays vfsd's scope socket at path for one connection: hands out one end
 * of a fresh pair, named by the inode of that end plus skew. Returns the
 * child's pid; the child exits 0 once the hand-out went out. */
static pid_t tc_scope_server(const char *path, uint64_t skew)
{
    int l = pbx_peer_io_listen(path, SOCK_SEQPACKET);
    PBX_REQUIRE(l >= 0);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        int c = accept(l, NULL, NULL);
        int sv[2];
        bool ok = c >= 0 && tp_seqpair(sv) &&
                  pbx_peer_io_scope_give(c, sv[1],
                                         pbx_peer_io_inode(sv[1]) + skew) == 0;
        _exit(ok ? 0 : 1);
    }
    (void)close(l);
    return pid;
}

PBX_TEST(peers_client_scope_acquire_checks_the_named_identity)
{
    char path[600];
    uint64_t id = 0;
    (void)snprintf(path, sizeof(path), "%s/scope.sock", tp_tmpdir());
    /* The true name: the scope is the socket whose inode vfsd named. */
    pid_t pid = tc_scope_server(path, 0U);
    int fd = pbx_peer_io_scope_acquire(path, 3000, &id);
    PBX_CHECK(fd >= 0);
    PBX_CHECK(id != 0U && id == pbx_peer_io_inode(fd));
    PBX_CHECK_EQ(tp_wait_exit(pid, 5000), 0);
    (void)close(fd);
    /* A name that is not the inode of the scope handed over is refused. */
    pid = tc_scope_server(path, 1U);
    errno = 0;
    PBX_CHECK_EQ(pbx_peer_io_scope_acquire(path, 3000, &id), -1);
    PBX_CHECK_EQ(errno, EPROTO);
    PBX_CHECK_EQ(tp_wait_exit(pid, 5000), 0);
    /* A first message that is not exactly one hand-out is refused too. */
    int sv[2];
    PBX_REQUIRE(tp_seqpair(sv));
    PBX_REQUIRE(
        pbx_peer_io_send(sv[0], (const uint8_t *)"PBXSCOPE", 8, sv[0]) == 0);
    errno = 0;
    PBX_CHECK_EQ(pbx_peer_io_scope_take(sv[1], 1000, &id), -1);
    PBX_CHECK_EQ(errno, EPROTO);
    errno = 0;
    PBX_CHECK_EQ(pbx_peer_io_scope_take(sv[1], 50, &id), -1);
    PBX_CHECK_EQ(errno, ETIMEDOUT);
    pbx_peer_io_close_all(sv, 2);
}
