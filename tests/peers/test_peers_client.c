/*
 * test_peers_client.c: pbx-client and pbx-launchd against a fake powerboxd
 * (or launchd) played by the test over real socketpairs: BEGIN, SELECTOR
 * chunks at exact offsets (a selector longer than one chunk), COMMIT
 * carrying exactly the scope descriptor, DECISION PENDING (an older
 * launchd) asked again under a new seq, then APPROVED; the job connection
 * in PBX_LAUNCHD_FD and the claims (unclaimed job, entry and target, or
 * PBX_JOB, PBX_ENTRY, PBX_TARGET, an option winning); usage errors and
 * --help; a DECISION held with nothing else sent; --wait-ms expiry (the
 * exact CANCEL outstanding beside the DECISION under its own seq, a stray
 * reply dropped, replies out of order); --verify-object against a fake
 * object, and --repeat counting decisions that name another request and
 * objects that do not verify; launchd's EXPIRE frame and its WAKE
 * receiver deleting a smuggled descriptor; and the client's scope
 * acquisition refusing a hand-out that does not name the scope by its
 * own inode.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pbx_peer_msg g_m;
static uint8_t g_out[PBX_IPC_FRAME_BYTES_MAX];

/* Receives one request frame from the client (within 5 s). */
static void tc_recv(int fd, uint16_t op)
{
    PBX_REQUIRE(tp_readable(fd, 5000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(fd, &g_m) == 0);
    PBX_REQUIRE(g_m.err == PBX_OK);
    PBX_CHECK_EQ(g_m.frame.op, op);
}

/* Receives one call of op from pbx-client, which stamps a nonzero seq on
 * every call. */
static void tc_call(int fd, uint16_t op)
{
    tc_recv(fd, op);
    PBX_CHECK(g_m.frame.seq != 0U);
}

/* Sends the encoded reply g_out[0..n) to the call of seq. */
static void tc_send(int fd, size_t n, uint32_t seq, int cap)
{
    PBX_CHECK(pbx_peer_io_send_seq(fd, g_out, n, seq, cap) == 0);
}

/* Answers the call of seq with an empty reply of op for id. */
static void tc_empty(int fd, uint16_t op, pbx_ipc_id id, uint32_t seq)
{
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_empty_encode(op | PBX_IPC_REPLY_BIT, id, g_out,
                                      sizeof(g_out), &n),
                 PBX_OK);
    tc_send(fd, n, seq, -1);
}

/* Answers the DECISION call of seq with outcome for id (APPROVED: grant
 * 9.1, install slot 40; or runtime-reply with alias when alias >= 0). */
static void tc_decision(int fd, pbx_ipc_id id, uint8_t outcome, uint32_t seq,
                        int alias)
{
    pbx_ipc_decision d;
    memset(&d, 0, sizeof(d));
    d.outcome = outcome;
    if (outcome == PBX_IPC_OUTCOME_APPROVED) {
        d.mode = alias >= 0 ? PBX_IPC_MODE_RUNTIME_REPLY : PBX_IPC_MODE_INSTALL;
        d.grant.index = 9;
        d.grant.gen = 1;
        d.installed_slot = alias >= 0 ? 0U : 40U;
    }
    size_t n = 0;
    PBX_CHECK_EQ(
        pbx_ipc_decision_reply_encode(id, &d, g_out, sizeof(g_out), &n),
        PBX_OK);
    tc_send(fd, n, seq, alias);
}

/* Plays powerboxd for BEGIN, SELECTOR chunks and COMMIT of selector sel,
 * answering request id; the BEGIN record goes to *b. */
static void tc_serve_commit(int pub, int scope_peer, const char *sel,
                            pbx_ipc_id id, pbx_ipc_begin *b)
{
    tc_call(pub, PBX_IPC_OP_BEGIN);
    PBX_REQUIRE(pbx_ipc_begin_decode(&g_m.frame, b) == PBX_OK);
    PBX_CHECK_EQ(b->selector_len, strlen(sel));
    pbx_ipc_begin_reply br = {70};
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_begin_reply_encode(id, &br, g_out, sizeof(g_out), &n),
                 PBX_OK);
    tc_send(pub, n, g_m.frame.seq, -1);
    static uint8_t got[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    uint32_t have = 0;
    for (int chunks = 0; have < b->selector_len && chunks < 16; chunks++) {
        pbx_ipc_selector c;
        tc_call(pub, PBX_IPC_OP_SELECTOR);
        PBX_REQUIRE(pbx_ipc_selector_decode(&g_m.frame, &c) == PBX_OK);
        PBX_REQUIRE(c.offset == have && have + c.len <= sizeof(got));
        memcpy(got + have, c.bytes, c.len);
        have += c.len;
        tc_empty(pub, PBX_IPC_OP_SELECTOR, id, g_m.frame.seq);
    }
    uint8_t d[PBX_SHA2_DIGEST_BYTES];
    PBX_CHECK_EQ(pbx_sha2_digest(got, have, d), PBX_OK);
    PBX_CHECK_MEM(d, b->selector_digest, sizeof(d));
    tc_call(pub, PBX_IPC_OP_COMMIT);
    PBX_REQUIRE(g_m.nfds == 1U);
    if (scope_peer >= 0) {
        /* The transferred scope is the client's connection. */
        PBX_CHECK(pbx_peer_io_send(g_m.fds[0], (const uint8_t *)"x", 1, -1) ==
                  0);
        char one = 0;
        PBX_CHECK(read(scope_peer, &one, 1) == 1 && one == 'x');
    }
    pbx_peer_io_close_all(g_m.fds, g_m.nfds);
    tc_empty(pub, PBX_IPC_OP_COMMIT, id, g_m.frame.seq);
}

/* A pbx-client run: its pid and where its stdout and stderr go. */
typedef struct tc_run {
    pid_t pid;
    char out[600];
    char err[600];
} tc_run;

/* Starts pbx-client with args (NULL-terminated, without argv[0]) and
 * nothing else in its environment's PBX_ variables but env ("K=V",
 * NULL-terminated), keeping keep[0..nkeep) open; stdin is stdin_fd or
 * /dev/null; stdout and stderr go to files in a fresh directory. */
static void tc_start(tc_run *run, const char *const *args, const int *keep,
                     size_t nkeep, const char *const *env, int stdin_fd)
{
    const char *d = tp_tmpdir();
    (void)snprintf(run->out, sizeof(run->out), "%s/out", d);
    (void)snprintf(run->err, sizeof(run->err), "%s/err", d);
    run->pid = fork();
    PBX_REQUIRE(run->pid >= 0);
    if (run->pid != 0) {
        return;
    }
    int o = open(run->out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int e = open(run->err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int i = stdin_fd >= 0 ? stdin_fd : open("/dev/null", O_RDONLY);
    if (o < 0 || e < 0 || i < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 ||
        dup2(i, 0) < 0) {
        _exit(126);
    }
    for (size_t k = 0; k < nkeep; k++) {
        (void)fcntl(keep[k], F_SETFD, 0);
    }
    static const char *const vars[] = {"PBX_LAUNCHD_FD", "PBX_JOB",
                                       "PBX_ENTRY",      "PBX_TARGET",
                                       "PBX_SESSION",    "PBX_REALM"};
    for (size_t k = 0; k < PBX_ARRAY_LEN(vars); k++) {
        (void)unsetenv(vars[k]);
    }
    for (size_t k = 0; env != NULL && env[k] != NULL; k++) {
        (void)putenv((char *)env[k]);
    }
    char path[512];
    const char *bin = getenv("PBX_PEERS_BIN");
    (void)snprintf(path, sizeof(path), "%s/pbx-client",
                   bin ? bin : "build/bin");
    const char *argv[TP_ARGS_MAX + 2];
    size_t n = 0;
    argv[n++] = "pbx-client";
    for (size_t k = 0; args[k] != NULL && n < TP_ARGS_MAX; k++) {
        argv[n++] = args[k];
    }
    argv[n] = NULL;
    execv(path, (char *const *)(void *)argv);
    _exit(127);
}

/* Waits for run to exit (at most timeout_ms); returns its exit status and
 * its stdout in out (cap bytes, NUL-terminated). */
static int tc_finish(const tc_run *run, int timeout_ms, char *out, size_t cap)
{
    int rc = tp_wait_exit(run->pid, timeout_ms);
    out[0] = '\0';
    (void)tp_read_file(run->out, out, cap);
    return rc;
}

/* Whether the stderr of run says what. */
static bool tc_logged(const tc_run *run, const char *what)
{
    static char text[8192];
    return tp_read_file(run->err, text, sizeof(text)) >= 0 &&
           strstr(text, what) != NULL;
}

/* Formats descriptor fd as text into buf (16 bytes). */
static const char *tc_num(char *buf, int fd)
{
    (void)snprintf(buf, 16, "%d", fd);
    return buf;
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
    const char *args[] = {"request",
                          "--control-fd",
                          tc_num(parg, pub[1]),
                          "--scope-fd",
                          tc_num(sarg, scope[1]),
                          "--selector",
                          sel,
                          "--op",
                          "read",
                          "--class",
                          "file",
                          "--lifetime",
                          "one-shot",
                          "--target",
                          "7:2",
                          "--slot",
                          "40",
                          "--job",
                          "11:1",
                          "--entry",
                          "bin/cat",
                          NULL};
    int keep[2] = {pub[1], scope[1]};
    static tc_run run;
    tc_start(&run, args, keep, 2, NULL, -1);
    (void)close(pub[1]);
    (void)close(scope[1]);
    pbx_ipc_id id = {2, 5};
    static pbx_ipc_begin b;
    tc_serve_commit(pub[0], scope[0], sel, id, &b);
    PBX_CHECK(b.ctx.job_id == 11U && b.ctx.job_gen == 1U);
    PBX_CHECK(b.ctx.entry.len == 7U &&
              memcmp(b.ctx.entry.bytes, "bin/cat", 7) == 0);
    PBX_CHECK(b.target.process_id == 7U && b.target.process_gen == 2U &&
              b.target.slot == 40U);
    /* An older launchd answers PENDING at once: the client asks again,
     * each DECISION under its own seq. */
    tc_call(pub[0], PBX_IPC_OP_DECISION);
    uint32_t first = g_m.frame.seq;
    tc_decision(pub[0], id, PBX_IPC_OUTCOME_PENDING, first, -1);
    tc_call(pub[0], PBX_IPC_OP_DECISION);
    PBX_CHECK(g_m.frame.seq != first);
    tc_decision(pub[0], id, PBX_IPC_OUTCOME_APPROVED, g_m.frame.seq, -1);
    char out[1024];
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "outcome=approved\nmode=install\ngrant=9.1\n") !=
              NULL);
    /* Answered PENDING once (an older launchd), so asked twice. */
    PBX_CHECK(strstr(out, "decision_calls=2\n") != NULL);
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
    tc_empty(pub[0], PBX_IPC_OP_EXPIRE, zero, g_m.frame.seq);
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

/* Answers the call in g_m with an error status. */
static void tc_refuse(int fd, uint16_t status)
{
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_status_reply_encode(g_m.frame.op, g_m.frame.request,
                                             (pbx_err)status, g_out,
                                             sizeof(g_out), &n),
                 PBX_OK);
    tc_send(fd, n, g_m.frame.seq, -1);
}

PBX_TEST(peers_client_launchd_fd_and_claims)
{
    int pub[2];
    int scope[2];
    PBX_REQUIRE(tp_seqpair(pub) && tp_seqpair(scope));
    char sarg[16];
    static char fdenv[40];
    (void)snprintf(fdenv, sizeof(fdenv), "PBX_LAUNCHD_FD=%d", pub[1]);
    const char *args[] = {"request",    "--scope-fd", tc_num(sarg, scope[1]),
                          "--selector", "f",          "--op",
                          "read",       "--class",    "file",
                          "--lifetime", "one-shot",   "--slot",
                          "40",         "--label",    "lbl",
                          NULL};
    int keep[2] = {pub[1], scope[1]};
    /* A launched job: the job connection in PBX_LAUNCHD_FD and no claim
     * at all. The BEGIN names job 0:0, an empty entry and target 0:0
     * (slot kept) for launchd to fill in. */
    const char *env1[] = {fdenv, NULL};
    static tc_run run;
    tc_start(&run, args, keep, 2, env1, -1);
    tc_call(pub[0], PBX_IPC_OP_BEGIN);
    const uint8_t *b = g_m.buf + PBX_IPC_HEADER_BYTES;
    PBX_CHECK_EQ(g_m.len,
                 PBX_IPC_HEADER_BYTES + PBX_IPC_BEGIN_FIXED_BYTES + 3U);
    PBX_CHECK(pbx_le_get64(b) == 0U && pbx_le_get32(b + 24) == 0U);
    PBX_CHECK(pbx_le_get64(b + 16) == 0U && pbx_le_get32(b + 32) == 0U);
    PBX_CHECK_EQ(pbx_le_get32(b + 36), 40U);
    /* Without PBX_SESSION and PBX_REALM: session 1, realm 0 (launchd's to
     * fill in). */
    PBX_CHECK(pbx_le_get64(b + 8) == 1U && pbx_le_get32(b + 28) == 0U);
    PBX_CHECK(pbx_le_get16(b + 52) == 0U && pbx_le_get16(b + 54) == 3U);
    PBX_CHECK(memcmp(b + PBX_IPC_BEGIN_FIXED_BYTES, "lbl", 3) == 0);
    static pbx_ipc_begin rec;
    PBX_CHECK(pbx_ipc_begin_decode(&g_m.frame, &rec) != PBX_OK);
    tc_refuse(pub[0], PBX_PEER_E_NOT_YOURS);
    char out[1024];
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 1);
    PBX_CHECK(tc_logged(&run, "BEGIN refused"));
    /* PBX_JOB, PBX_ENTRY, PBX_TARGET, PBX_SESSION and PBX_REALM are the
     * claims' defaults; an option still wins. */
    const char *env2[] = {fdenv,
                          "PBX_JOB=12:3",
                          "PBX_ENTRY=bin/cat",
                          "PBX_TARGET=7:2",
                          "PBX_SESSION=9",
                          "PBX_REALM=4",
                          NULL};
    const char *args2[] = {
        "request", "--scope-fd", sarg,   "--selector", "f",        "--op",
        "read",    "--class",    "file", "--lifetime", "one-shot", "--slot",
        "40",      "--job",      "13:1", "--realm",    "5",        NULL};
    tc_start(&run, args2, keep, 2, env2, -1);
    tc_call(pub[0], PBX_IPC_OP_BEGIN);
    PBX_REQUIRE(pbx_ipc_begin_decode(&g_m.frame, &rec) == PBX_OK);
    PBX_CHECK(rec.ctx.job_id == 13U && rec.ctx.job_gen == 1U);
    PBX_CHECK(rec.ctx.session == 9U && rec.ctx.realm == 5U);
    PBX_CHECK(rec.ctx.entry.len == 7U &&
              memcmp(rec.ctx.entry.bytes, "bin/cat", 7) == 0);
    PBX_CHECK(rec.target.process_id == 7U && rec.target.process_gen == 2U);
    tc_refuse(pub[0], PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 1);
    pbx_peer_io_close_all(pub, 2);
    pbx_peer_io_close_all(scope, 2);
}

PBX_TEST(peers_client_usage_errors_and_help)
{
    int pub[2];
    int scope[2];
    PBX_REQUIRE(tp_seqpair(pub) && tp_seqpair(scope));
    char sarg[16];
    static char fdenv[40];
    (void)snprintf(fdenv, sizeof(fdenv), "PBX_LAUNCHD_FD=%d", pub[1]);
    const char *args[] = {"request",    "--scope-fd", tc_num(sarg, scope[1]),
                          "--selector", "f",          "--op",
                          "read",       "--class",    "file",
                          "--lifetime", "one-shot",   NULL};
    int keep[2] = {pub[1], scope[1]};
    const char *env1[] = {fdenv, NULL};
    static tc_run run;
    char out[1024];
    /* No connection at all, or one that is not open: a usage error. */
    tc_start(&run, args, keep, 2, NULL, -1);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 2);
    PBX_CHECK(tc_logged(&run, "PBX_LAUNCHD_FD"));
    const char *env3[] = {"PBX_LAUNCHD_FD=999", NULL};
    tc_start(&run, args, keep, 2, env3, -1);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 2);
    const char *env4[] = {fdenv, "PBX_JOB=twelve", NULL};
    tc_start(&run, args, keep, 2, env4, -1);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 2);
    PBX_CHECK(tc_logged(&run, "invalid PBX_JOB"));
    const char *env6[] = {fdenv, "PBX_SESSION=x", NULL};
    tc_start(&run, args, keep, 2, env6, -1);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 2);
    PBX_CHECK(tc_logged(&run, "invalid PBX_SESSION"));
    const char *env7[] = {fdenv, "PBX_REALM=4294967296", NULL};
    tc_start(&run, args, keep, 2, env7, -1);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 2);
    PBX_CHECK(tc_logged(&run, "invalid PBX_REALM"));
    /* --verify-object needs a runtime-reply request: nothing is sent. */
    const char *args5[] = {"request",    "--scope-fd", sarg,
                           "--selector", "f",          "--op",
                           "read",       "--class",    "file",
                           "--lifetime", "one-shot",   "--verify-object",
                           "/",          NULL};
    tc_start(&run, args5, keep, 2, env1, -1);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 2);
    PBX_CHECK(tc_logged(&run, "--verify-object needs --mode runtime-reply"));
    /* --help and -h print the usage and succeed. */
    const char *help[] = {"--help", NULL};
    tc_start(&run, help, NULL, 0, NULL, -1);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "usage: pbx-client request") != NULL);
    const char *h2[] = {"request", "-h", NULL};
    tc_start(&run, h2, NULL, 0, NULL, -1);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "PBX_LAUNCHD_FD") != NULL);
    PBX_CHECK(!tp_readable(pub[0], 0));
    pbx_peer_io_close_all(pub, 2);
    pbx_peer_io_close_all(scope, 2);
}

/* Starts pbx-client with a runtime-reply request of "f.txt" on pub[1]
 * and the scope scope[1], plus the extra args (NULL-terminated), as job
 * 11:1 entry bin/cat. */
static void tc_runtime_start(tc_run *run, const int pub[2], const int scope[2],
                             const char *const *extra)
{
    static char parg[16];
    static char sarg[16];
    const char *args[TP_ARGS_MAX] = {"request",
                                     "--control-fd",
                                     tc_num(parg, pub[1]),
                                     "--scope-fd",
                                     tc_num(sarg, scope[1]),
                                     "--selector",
                                     "f.txt",
                                     "--op",
                                     "read",
                                     "--class",
                                     "file",
                                     "--lifetime",
                                     "one-shot",
                                     "--mode",
                                     "runtime-reply",
                                     "--job",
                                     "11:1",
                                     "--entry",
                                     "bin/cat",
                                     NULL};
    size_t n = 19;
    for (size_t i = 0; extra[i] != NULL && n + 1U < TP_ARGS_MAX; i++) {
        args[n++] = extra[i];
    }
    args[n] = NULL;
    int keep[2] = {pub[1], scope[1]};
    tc_start(run, args, keep, 2, NULL, -1);
}

/* Starts a runtime-reply request of "f.txt" on pub[1] with the extra
 * args (NULL-terminated) and serves it up to COMMIT. */
static void tc_runtime(tc_run *run, const int pub[2], const int scope[2],
                       const char *const *extra, pbx_ipc_id id)
{
    tc_runtime_start(run, pub, scope, extra);
    static pbx_ipc_begin b;
    tc_serve_commit(pub[0], -1, "f.txt", id, &b);
    PBX_CHECK_EQ(b.ctx.mode, PBX_IPC_MODE_RUNTIME_REPLY);
}

PBX_TEST(peers_client_held_decision_and_wait_expiry)
{
    int pub[2];
    int scope[2];
    PBX_REQUIRE(tp_seqpair(pub) && tp_seqpair(scope));
    pbx_ipc_id id = {2, 5};
    static tc_run run;
    char out[2048];
    /* No --wait-ms: the DECISION is asked once and held as long as the
     * answer takes; the client sends nothing else meanwhile. */
    const char *none[] = {NULL};
    tc_runtime(&run, pub, scope, none, id);
    tc_call(pub[0], PBX_IPC_OP_DECISION);
    uint32_t d = g_m.frame.seq;
    PBX_CHECK(!tp_readable(pub[0], 1500));
    PBX_CHECK_EQ(waitpid(run.pid, NULL, WNOHANG), 0);
    int obj[2];
    PBX_REQUIRE(tp_seqpair(obj));
    tc_decision(pub[0], id, PBX_IPC_OUTCOME_APPROVED, d, obj[1]);
    (void)close(obj[1]);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "outcome=approved\nmode=runtime-reply\n") != NULL);
    PBX_CHECK(strstr(out, "alias_inode=") != NULL);
    (void)close(obj[0]);
    /* --wait-ms 300: the exact CANCEL goes out while the DECISION is
     * still outstanding, under another seq. Replies come out of order,
     * after a stray one that matches no call. */
    const char *w[] = {"--wait-ms", "300", NULL};
    tc_runtime(&run, pub, scope, w, id);
    tc_call(pub[0], PBX_IPC_OP_DECISION);
    d = g_m.frame.seq;
    tc_call(pub[0], PBX_IPC_OP_CANCEL);
    uint32_t c = g_m.frame.seq;
    pbx_ipc_cancel cq;
    PBX_REQUIRE(pbx_ipc_cancel_decode(&g_m.frame, &cq) == PBX_OK);
    PBX_CHECK(!cq.by_correlation && cq.request.index == id.index &&
              cq.request.gen == id.gen);
    PBX_CHECK(c != d);
    tc_decision(pub[0], id, PBX_IPC_OUTCOME_APPROVED, c + d + 1000U, -1);
    tc_decision(pub[0], id, PBX_IPC_OUTCOME_CANCELLED, d, -1);
    tc_empty(pub[0], PBX_IPC_OP_CANCEL, id, c);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 3);
    PBX_CHECK(strstr(out, "wait=expired\ncancel=accepted\nrequest=2.5\n"
                          "outcome=cancelled\n") != NULL);
    PBX_CHECK(strstr(out, "decision_calls=1\n") != NULL);
    PBX_CHECK(tc_logged(&run, "matches no call"));
    /* The CANCEL refused and answered first; the decision that comes
     * after it is printed as usual. */
    tc_runtime(&run, pub, scope, w, id);
    tc_call(pub[0], PBX_IPC_OP_DECISION);
    d = g_m.frame.seq;
    tc_call(pub[0], PBX_IPC_OP_CANCEL);
    tc_refuse(pub[0], PBX_PEER_E_UNKNOWN);
    PBX_REQUIRE(tp_seqpair(obj));
    tc_decision(pub[0], id, PBX_IPC_OUTCOME_APPROVED, d, obj[1]);
    (void)close(obj[1]);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "wait=expired\ncancel=refused\nrequest=2.5\n"
                          "outcome=approved\n") != NULL);
    (void)close(obj[0]);
    pbx_peer_io_close_all(pub, 2);
    pbx_peer_io_close_all(scope, 2);
}

/* Plays vfsd's end of object obj: answers one OBJ_STAT with what
 * stat(dir/name) reports. */
static void tc_obj_stat(int obj, const char *dir, const char *name)
{
    PBX_REQUIRE(tp_readable(obj, 5000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(obj, &g_m) == 0);
    pbx_peer_vfs_call call;
    PBX_REQUIRE(
        pbx_peer_vfs_obj_judge(g_m.buf, g_m.len, g_m.nfds != 0U, true, &call));
    PBX_CHECK_EQ(call.status, 0U);
    char p[600];
    struct stat sb;
    (void)snprintf(p, sizeof(p), "%s/%s", dir, name);
    PBX_REQUIRE(stat(p, &sb) == 0);
    pbx_peer_vfs_stat st = {(uint64_t)sb.st_dev, (uint64_t)sb.st_ino,
                            (uint64_t)sb.st_size};
    size_t n = 0;
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_reply_encode(&call, &st, g_out, sizeof(g_out), &n),
        PBX_OK);
    PBX_CHECK(pbx_peer_io_send(obj, g_out, n, -1) == 0);
}

/* Writes an empty file dir/name. */
static void tc_file(const char *dir, const char *name)
{
    char p[600];
    (void)snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(fd >= 0);
    (void)close(fd);
}

/* One approved lifecycle of --repeat: the DECISION names named (with an
 * alias), the object answers STAT as stat_name (NULL: no STAT expected),
 * and CONSUME is answered when consume is true. */
static void tc_lifecycle(int pub, int scope_peer, pbx_ipc_id id,
                         pbx_ipc_id named, const char *root,
                         const char *stat_name, bool consume)
{
    static pbx_ipc_begin b;
    tc_serve_commit(pub, scope_peer, "f.txt", id, &b);
    tc_call(pub, PBX_IPC_OP_DECISION);
    int obj[2];
    PBX_REQUIRE(tp_seqpair(obj));
    tc_decision(pub, named, PBX_IPC_OUTCOME_APPROVED, g_m.frame.seq, obj[1]);
    (void)close(obj[1]);
    if (stat_name != NULL) {
        tc_obj_stat(obj[0], root, stat_name);
    }
    if (consume) {
        tc_call(pub, PBX_IPC_OP_CONSUME);
        tc_empty(pub, PBX_IPC_OP_CONSUME, g_m.frame.request, g_m.frame.seq);
    }
    (void)close(obj[0]);
}

PBX_TEST(peers_client_verify_object)
{
    int pub[2];
    int scope[2];
    PBX_REQUIRE(tp_seqpair(pub) && tp_seqpair(scope));
    const char *root = tp_tmpdir();
    tc_file(root, "f.txt");
    tc_file(root, "g.txt");
    pbx_ipc_id id = {2, 5};
    static tc_run run;
    char out[2048];
    /* The object names ROOT/f.txt: verified. */
    const char *v[] = {"--verify-object", root, NULL};
    tc_runtime(&run, pub, scope, v, id);
    tc_call(pub[0], PBX_IPC_OP_DECISION);
    int obj[2];
    PBX_REQUIRE(tp_seqpair(obj));
    tc_decision(pub[0], id, PBX_IPC_OUTCOME_APPROVED, g_m.frame.seq, obj[1]);
    (void)close(obj[1]);
    tc_obj_stat(obj[0], root, "f.txt");
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "object=verified\n") != NULL);
    (void)close(obj[0]);
    /* Another file: a mismatch, exit 1. */
    tc_runtime(&run, pub, scope, v, id);
    tc_call(pub[0], PBX_IPC_OP_DECISION);
    PBX_REQUIRE(tp_seqpair(obj));
    tc_decision(pub[0], id, PBX_IPC_OUTCOME_APPROVED, g_m.frame.seq, obj[1]);
    (void)close(obj[1]);
    tc_obj_stat(obj[0], root, "g.txt");
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 1);
    PBX_CHECK(strstr(out, "object=mismatch\n") != NULL);
    (void)close(obj[0]);
    pbx_peer_io_close_all(pub, 2);
    pbx_peer_io_close_all(scope, 2);
}

PBX_TEST(peers_client_repeat_counts_mismatches)
{
    int pub[2];
    int scope[2];
    PBX_REQUIRE(tp_seqpair(pub) && tp_seqpair(scope));
    const char *root = tp_tmpdir();
    tc_file(root, "f.txt");
    tc_file(root, "g.txt");
    pbx_ipc_id id = {2, 5};
    pbx_ipc_id other = {3, 7};
    static tc_run run;
    char out[2048];
    /* --repeat 3: a good lifecycle, a decision naming another request
     * (nothing consumed), an object that does not verify (consumed). */
    const char *r[] = {"--verify-object", root,      "--repeat", "3",
                       "--then",          "consume", NULL};
    tc_runtime_start(&run, pub, scope, r);
    tc_lifecycle(pub[0], -1, id, id, root, "f.txt", true);
    /* Backpressure is not failure under --repeat: the second BEGIN is
     * answered BUSY by powerboxd, then by launchd, and sent again. */
    tc_call(pub[0], PBX_IPC_OP_BEGIN);
    PBX_CHECK(pbx_peer_io_reply_status(pub[0], &g_m, PBX_E_CORE_BUSY) == 0);
    tc_call(pub[0], PBX_IPC_OP_BEGIN);
    PBX_CHECK(pbx_peer_io_reply_status(pub[0], &g_m, PBX_PEER_E_BUSY) == 0);
    tc_lifecycle(pub[0], -1, id, other, root, NULL, false);
    tc_lifecycle(pub[0], -1, id, id, root, "g.txt", true);
    PBX_CHECK_EQ(tc_finish(&run, 5000, out, sizeof(out)), 1);
    PBX_CHECK(strstr(out, "repeat=3\n") != NULL);
    PBX_CHECK(strstr(out, "mismatches=2\n") != NULL);
    PBX_CHECK(strstr(out, "busy_retries=2\n") != NULL);
    PBX_CHECK(strstr(out, "failed_at") == NULL);
    PBX_CHECK(tc_logged(&run, "names request 3.7, not 2.5"));
    PBX_CHECK(!tp_readable(pub[0], 0));
    pbx_peer_io_close_all(pub, 2);
    pbx_peer_io_close_all(scope, 2);
}
