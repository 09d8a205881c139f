/*
 * test_peers_vfsd_attach.c: how pbx-vfsd gets its routes and bounds its
 * scopes, as a real process over real sockets. vfsd listens for no route:
 * --route PATH is refused at start; with --attach-fd and no route nobody's
 * RESOLVE is served; 'P' PID makes a route pair whose far end comes back
 * in the answer and whose RESOLVEs are served to PID alone (a holder of
 * a scope that is not PID is refused, even while that route lives); wrong
 * messages (the retired 'L' included) are refused with their descriptors
 * closed; the channel's end leaves vfsd serving; a route whose far end
 * closed serves nobody even before vfsd drops it; a route's close logs
 * one RETIRE line per object before the count line. One process holds at
 * most --scopes-per-pid scopes: beyond, its connection is closed with no
 * scope and the refusal logged, and a scope it gives back makes room.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_attach.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"
#include "vfsd_test.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A vfsd started with a scope and --attach-fd only (no route); its log
 * is dir/pbx-peer-vfsd.log. */
typedef struct tva {
    pid_t pid;
    int scope;
    uint64_t scope_id;
    int chan; /* our end of the attach channel */
    char dir[256];
    char log[512];
} tva;

/* Starts pbx-vfsd with args (keep[0..nkeep) kept) logging into dir's
 * pbx-peer-vfsd.log: tp_spawn puts the log in $TMPDIR. */
static pid_t tva_spawn(const char *dir, const char *const *args,
                       const int *keep, size_t nkeep)
{
    static char old[512];
    const char *tmp = getenv("TMPDIR");
    (void)snprintf(old, sizeof(old), "%s", tmp != NULL ? tmp : "");
    PBX_REQUIRE(setenv("TMPDIR", dir, 1) == 0);
    pid_t pid = tp_spawn("vfsd", args, keep, nkeep, -1);
    if (tmp != NULL) {
        (void)setenv("TMPDIR", old, 1);
    } else {
        (void)unsetenv("TMPDIR");
    }
    return pid;
}

/* Starts vfsd on dir/pub (a.txt in it) with a handed-over scope and the
 * attach channel, and no route at all. */
static void tva_up(tva *t)
{
    const char *d = tp_tmpdir();
    (void)snprintf(t->dir, sizeof(t->dir), "%s", d);
    (void)snprintf(t->log, sizeof(t->log), "%s/pbx-peer-vfsd.log", d);
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/pub", d);
    PBX_REQUIRE(mkdir(p, 0700) == 0);
    tv_file(p, "a.txt");
    int sp[2];
    int ap[2];
    PBX_REQUIRE(tp_seqpair(sp) && tp_seqpair(ap));
    char sarg[32];
    char aarg[32];
    (void)snprintf(sarg, sizeof(sarg), "%d=pub", sp[1]);
    (void)snprintf(aarg, sizeof(aarg), "%d", ap[1]);
    const char *args[] = {"--root",      d,    "--scope-fd", sarg,
                          "--attach-fd", aarg, NULL};
    int keep[2] = {sp[1], ap[1]};
    t->pid = tva_spawn(d, args, keep, 2U);
    (void)close(sp[1]);
    (void)close(ap[1]);
    PBX_REQUIRE(t->pid > 0);
    t->scope = pbx_peer_io_scope_take(sp[0], 3000, &t->scope_id);
    PBX_REQUIRE(t->scope >= 0);
    (void)close(sp[0]);
    t->chan = ap[0];
}

/* Receives one answer on t's channel into ans (cap bytes); returns its
 * length, the descriptor it carried in *fd (-1: none). */
static size_t tva_answer(const tva *t, uint8_t *ans, size_t cap, int *fd)
{
    PBX_REQUIRE(tp_readable(t->chan, 3000));
    struct iovec iov = {ans, cap};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    ssize_t n = recvmsg(t->chan, &mh, MSG_CMSG_CLOEXEC);
    PBX_REQUIRE(n >= 2);
    const struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    *fd = -1;
    if (c != NULL && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len == CMSG_LEN(sizeof(int))) {
        memcpy(fd, CMSG_DATA(c), sizeof(int));
    }
    return (size_t)n;
}

/* Sends one attach message (len bytes of msg, nfds descriptors fds) and
 * returns vfsd's answer as op << 8 | status, checking that it echoes
 * msg's tag (a body of at most 4 bytes) or is 2 bytes (a longer body);
 * the descriptor the answer carried goes to *got (-1: none; got NULL:
 * none may come). */
static unsigned tva_call(const tva *t, const uint8_t *msg, size_t len,
                         const int *fds, size_t nfds, int *got)
{
    PBX_REQUIRE(pbx_peer_io_send_fds(t->chan, msg, len, fds, nfds, 0) == 0);
    uint8_t ans[PBX_PEER_ATTACH_ANSWER_MAX + 1U];
    int fd = -1;
    size_t n = tva_answer(t, ans, sizeof(ans), &fd);
    if (len <= 1U + PBX_PEER_ATTACH_TAG_MAX) {
        PBX_CHECK(pbx_peer_attach_echoes(ans, n, msg, len));
    } else {
        PBX_CHECK_EQ(n, 2U);
    }
    if (got != NULL) {
        *got = fd;
    } else {
        PBX_CHECK_EQ(fd, -1);
    }
    return (unsigned)ans[0] << 8 | ans[1];
}

/* Asks vfsd for a route pair made for pid; returns the answer, the far
 * end in *route (-1 when none came). */
static unsigned tva_pair(const tva *t, pid_t pid, int *route)
{
    uint8_t msg[5] = {'P', (uint8_t)pid, (uint8_t)(pid >> 8),
                      (uint8_t)(pid >> 16), (uint8_t)(pid >> 24)};
    return tva_call(t, msg, sizeof(msg), NULL, 0U, route);
}

/* Sends the text message msg (no descriptor) and returns the answer. */
static unsigned tva_text(const tva *t, const char *msg)
{
    return tva_call(t, (const uint8_t *)msg, strlen(msg), NULL, 0U, NULL);
}

PBX_TEST(peers_vfsd_route_listener_refused)
{
    const char *d = tp_tmpdir();
    char path[600];
    (void)snprintf(path, sizeof(path), "%s/route.sock", d);
    const char *args[] = {"--root", d, "--route", path, NULL};
    /* tp_spawn reaps a peer that never became ready. */
    PBX_CHECK(tva_spawn(d, args, NULL, 0U) < 0);
    char log[600];
    (void)snprintf(log, sizeof(log), "%s/pbx-peer-vfsd.log", d);
    PBX_CHECK(tp_logged(log, "vfsd listens for no route"));
    struct stat st;
    PBX_CHECK(stat(path, &st) != 0);
}

PBX_TEST(peers_vfsd_attach_refusals_leak_nothing)
{
    static tva t;
    static pbx_peer_msg m;
    tva_up(&t);
    PBX_CHECK(tp_logged(t.log, "incarnation"));
    int base = tp_fd_count(t.pid);
    /* No route yet: nobody's RESOLVE is served. */
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_CHECK_EQ(tv_resolve(t.scope, t.scope, "a.txt", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_E_PEER_NOT_ROUTE);
    /* 'P' with a descriptor, 'R' (ttyd's, procd's, launchd's), the
     * retired 'L', and bad pids: refused, descriptors closed. */
    int p[2];
    PBX_REQUIRE(tp_seqpair(p));
    const uint8_t me[5] = {'P', 1, 0, 0, 0};
    PBX_CHECK_EQ(tva_call(&t, me, sizeof(me), &p[1], 1U, NULL),
                 ('p' << 8) | 1U);
    (void)close(p[1]);
    PBX_CHECK(tp_hung_up(p[0], 2000));
    (void)close(p[0]);
    PBX_REQUIRE(tp_seqpair(p));
    const uint8_t r = 'R';
    PBX_CHECK_EQ(tva_call(&t, &r, 1U, &p[1], 1U, NULL), ('r' << 8) | 1U);
    (void)close(p[1]);
    PBX_CHECK(tp_hung_up(p[0], 2000));
    (void)close(p[0]);
    char path[400];
    (void)snprintf(path, sizeof(path), "L%s/r0.sock", t.dir);
    PBX_CHECK_EQ(tva_text(&t, path), ('l' << 8) | 1U);
    struct stat st;
    PBX_CHECK(stat(path + 1, &st) != 0);
    PBX_CHECK_EQ(tva_text(&t, "P"), ('p' << 8) | 1U);
    PBX_CHECK_EQ(tva_text(&t, "P123"), ('p' << 8) | 1U);
    const uint8_t zero[5] = {'P', 0, 0, 0, 0};
    const uint8_t neg[5] = {'P', 0xff, 0xff, 0xff, 0xff};
    PBX_CHECK_EQ(tva_call(&t, zero, sizeof(zero), NULL, 0U, NULL),
                 ('p' << 8) | 1U);
    PBX_CHECK_EQ(tva_call(&t, neg, sizeof(neg), NULL, 0U, NULL),
                 ('p' << 8) | 1U);
    PBX_CHECK(tp_logged(t.log, "vfsd: attach channel: refused: bad pid"));
    PBX_CHECK(tp_logged(t.log, "vfsd: attach channel: refused: op not "
                               "served by vfsd (only 'P')"));
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    /* Still nobody's route. */
    PBX_CHECK_EQ(tv_resolve(t.scope, t.scope, "a.txt", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_E_PEER_NOT_ROUTE);
    (void)close(t.chan);
    (void)close(t.scope);
    (void)tp_stop(t.pid);
}

/* Forks a child that only waits to be killed; returns its pid. */
static pid_t tva_sleeper(void)
{
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        for (int i = 0; i < 600; i++) {
            (void)sleep(1);
        }
        _exit(0);
    }
    return pid;
}

PBX_TEST(peers_vfsd_attach_pair_serves_only_its_pid)
{
    static tva t;
    static pbx_peer_msg m;
    /* Forked first, so that it holds none of vfsd's descriptors. */
    pid_t other = tva_sleeper();
    tva_up(&t);
    /* A route pair for another process: this one holds the scope and
     * even the route's far end, and is still refused. */
    int r0 = -1;
    PBX_CHECK_EQ(tva_pair(&t, other, &r0), 'p' << 8);
    PBX_REQUIRE(r0 >= 0);
    PBX_CHECK(pbx_peer_attach_is_socket(r0, SOCK_SEQPACKET));
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_CHECK_EQ(tv_resolve(t.scope, t.scope, "a.txt", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_E_PEER_NOT_ROUTE);
    char want[256];
    (void)snprintf(want, sizeof(want),
                   "sent by pid %ld, not by the route's process",
                   (long)getpid());
    PBX_CHECK(tp_logged(t.log, want));
    /* A pair for this process: its RESOLVE is served, and the object's
     * RETIRE goes over the route's far end. */
    int r1 = -1;
    PBX_CHECK_EQ(tva_pair(&t, getpid(), &r1), 'p' << 8);
    PBX_REQUIRE(r1 >= 0);
    (void)snprintf(want, sizeof(want),
                   "vfsd: attach channel: route pair made for pid %ld",
                   (long)getpid());
    PBX_CHECK(tp_logged(t.log, want));
    PBX_CHECK_EQ(tv_resolve(t.scope, r1, "a.txt", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_FOUND);
    pbx_peer_io_close_all(m.fds, m.nfds);
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    PBX_CHECK_EQ(tv_retire(r1, &rq, &m), 0U);
    /* Its far end closed: refused at once, whether or not vfsd has polled
     * the hang-up yet (a dead process's pid names no route). */
    (void)close(r1);
    PBX_CHECK_EQ(tv_resolve(t.scope, t.scope, "a.txt", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_E_PEER_NOT_ROUTE);
    /* The channel's end: vfsd serves on (r0 still names the other). */
    (void)close(t.chan);
    PBX_CHECK(tp_logged(t.log, "vfsd: attach channel closed; serving on"));
    (void)kill(other, SIGKILL);
    (void)waitpid(other, NULL, 0);
    (void)close(r0);
    (void)snprintf(want, sizeof(want),
                   "vfsd: route to pid %ld closed: 0 object(s)", (long)other);
    PBX_CHECK(tp_logged(t.log, want));
    (void)close(t.scope);
    (void)tp_stop(t.pid);
}

/* The answer to a 'P' echoes its pid: when two 'P's wait, the answer to
 * the first (another process's pid, say one whose call timed out) is not
 * taken for the second's, and each carries its own route end. */
PBX_TEST(peers_vfsd_attach_pair_answer_echoes_its_pid)
{
    static tva t;
    pid_t other = tva_sleeper();
    tva_up(&t);
    const pid_t pids[2] = {other, getpid()};
    uint8_t msg[2][1U + PBX_PEER_ATTACH_PID_BYTES];
    for (size_t i = 0U; i < 2U; i++) {
        uint32_t v = (uint32_t)pids[i];
        msg[i][0] = (uint8_t)PBX_PEER_ATTACH_OP_PAIR;
        for (size_t k = 0U; k < 4U; k++) {
            msg[i][1U + k] = (uint8_t)(v >> (8U * k));
        }
        PBX_REQUIRE(pbx_peer_io_send_fds(t.chan, msg[i], sizeof(msg[i]), NULL,
                                         0U, 0) == 0);
    }
    uint8_t ans[PBX_PEER_ATTACH_ANSWER_MAX + 1U];
    for (size_t i = 0U; i < 2U; i++) {
        int fd = -1;
        size_t n = tva_answer(&t, ans, sizeof(ans), &fd);
        PBX_CHECK_EQ(n, 2U + PBX_PEER_ATTACH_PID_BYTES);
        PBX_CHECK_EQ(ans[1], PBX_PEER_ATTACH_DONE);
        PBX_CHECK(fd >= 0);
        /* Its own message's answer, and not the other's, although both
         * are 'p' 0 with a route end. */
        PBX_CHECK(pbx_peer_attach_echoes(ans, n, msg[i], sizeof(msg[i])));
        PBX_CHECK(
            !pbx_peer_attach_echoes(ans, n, msg[1U - i], sizeof(msg[1U - i])));
        if (fd >= 0) {
            (void)close(fd);
        }
    }
    (void)close(t.chan);
    (void)kill(other, SIGKILL);
    (void)waitpid(other, NULL, 0);
    (void)close(t.scope);
    (void)tp_stop(t.pid);
}

/* Encodes a RESOLVE of a.txt (read, file) into buf; returns its length. */
static size_t tva_resolve_frame(uint8_t *buf, size_t cap)
{
    static const char sel[] = "a.txt";
    pbx_ipc_resolve rq;
    memset(&rq, 0, sizeof(rq));
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.selector = (const uint8_t *)sel;
    rq.selector_len = (uint32_t)(sizeof(sel) - 1U);
    PBX_CHECK_EQ(
        pbx_sha2_digest(rq.selector, rq.selector_len, rq.selector_digest),
        PBX_OK);
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    PBX_CHECK_EQ(pbx_ipc_resolve_encode(id, &rq, buf, cap, &n), PBX_OK);
    return n;
}

/* Whether pid is stopped (state T in /proc/PID/stat), waiting up to 2 s:
 * kill(SIGSTOP) returns before the stop has happened. */
static bool tva_stopped(pid_t pid)
{
    char path[64];
    (void)snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    for (int i = 0; i < 200; i++) {
        char text[512];
        if (tp_read_file(path, text, sizeof(text)) > 0) {
            const char *paren = strrchr(text, ')');
            if (paren != NULL && paren[1] == ' ' && paren[2] == 'T') {
                return true;
            }
        }
        (void)usleep(10000);
    }
    return false;
}

PBX_TEST(peers_vfsd_hung_route_serves_nobody)
{
    static pbx_peer_msg m;
    const char *d = tp_tmpdir();
    tv_file(d, "a.txt");
    char sock[600];
    (void)snprintf(sock, sizeof(sock), "%s/scope.sock", d);
    int ap[2];
    PBX_REQUIRE(tp_seqpair(ap));
    char aarg[32];
    (void)snprintf(aarg, sizeof(aarg), "%d", ap[1]);
    const char *args[] = {"--root",      d,    "--scope", sock,
                          "--attach-fd", aarg, NULL};
    tva t;
    memset(&t, 0, sizeof(t));
    t.pid = tva_spawn(d, args, &ap[1], 1U);
    (void)close(ap[1]);
    PBX_REQUIRE(t.pid > 0);
    t.chan = ap[0];
    /* The route first, the scope after it: vfsd walks its connections
     * from the last, so in one round it serves the scope's RESOLVE before
     * it drops the route. */
    int route = -1;
    PBX_CHECK_EQ(tva_pair(&t, getpid(), &route), 'p' << 8);
    PBX_REQUIRE(route >= 0);
    uint64_t id = 0;
    int scope = pbx_peer_io_scope_acquire(sock, 3000, &id);
    PBX_REQUIRE(scope >= 0);
    /* While vfsd is stopped: the route's far end closes (its process
     * gone, as far as vfsd can tell) and a RESOLVE from its pid waits. */
    PBX_REQUIRE(kill(t.pid, SIGSTOP) == 0);
    PBX_REQUIRE(tva_stopped(t.pid));
    (void)close(route);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = tva_resolve_frame(buf, sizeof(buf));
    PBX_REQUIRE(pbx_peer_io_send_fds(scope, buf, n, NULL, 0U, 0) == 0);
    PBX_REQUIRE(kill(t.pid, SIGCONT) == 0);
    /* Refused, nothing minted, though the route was still in vfsd's
     * table when the RESOLVE was served. */
    PBX_REQUIRE(tp_readable(scope, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(scope, &m) == 0);
    PBX_CHECK_EQ(m.nfds, 0U);
    PBX_CHECK_EQ(m.frame.status, (uint32_t)PBX_E_PEER_NOT_ROUTE);
    pbx_peer_io_close_all(m.fds, m.nfds);
    char log[600];
    (void)snprintf(log, sizeof(log), "%s/pbx-peer-vfsd.log", d);
    PBX_CHECK(tp_logged(log, "not by the route's process"));
    char want[128];
    (void)snprintf(want, sizeof(want),
                   "vfsd: route to pid %ld closed: 0 object(s)",
                   (long)getpid());
    PBX_CHECK(tp_logged(log, want));
    (void)close(scope);
    (void)close(t.chan);
    (void)tp_stop(t.pid);
}

PBX_TEST(peers_vfsd_route_close_logs_each_retired_object)
{
    static tva t;
    static pbx_peer_msg m;
    tva_up(&t);
    int route = -1;
    PBX_CHECK_EQ(tva_pair(&t, getpid(), &route), 'p' << 8);
    PBX_REQUIRE(route >= 0);
    /* Two objects minted for the route (this process, named by 'P'). */
    pbx_ipc_resolve_reply rep[2];
    int obj[2];
    for (int i = 0; i < 2; i++) {
        memset(&rep[i], 0, sizeof(rep[i]));
        PBX_REQUIRE(tv_resolve(t.scope, route, "a.txt", PBX_IPC_OPERATION_READ,
                               PBX_IPC_CLASS_FILE, &rep[i], &m) == PBX_OK);
        PBX_REQUIRE(m.nfds == 1U);
        obj[i] = m.fds[0];
    }
    /* powerboxd dies: one RETIRE line per object, then the count. */
    (void)close(route);
    char count[128];
    (void)snprintf(count, sizeof(count),
                   "vfsd: route to pid %ld closed: 2 object(s) minted for "
                   "it retired",
                   (long)getpid());
    PBX_CHECK(tp_logged(t.log, count));
    static char text[65536];
    PBX_REQUIRE(tp_read_file(t.log, text, sizeof(text)) > 0);
    const char *end = strstr(text, count);
    for (int i = 0; i < 2; i++) {
        PBX_CHECK(tp_hung_up(obj[i], 2000));
        (void)close(obj[i]);
        char line[160];
        (void)snprintf(line, sizeof(line),
                       "vfsd: RETIRE object %llu gen %u: route to pid %ld "
                       "closed\n",
                       (unsigned long long)rep[i].object.id, rep[i].object.gen,
                       (long)getpid());
        const char *at = strstr(text, line);
        PBX_CHECK(at != NULL && end != NULL && at < end);
    }
    (void)close(t.chan);
    (void)close(t.scope);
    (void)tp_stop(t.pid);
}

PBX_TEST(peers_vfsd_scopes_per_pid_bound)
{
    const char *d = tp_tmpdir();
    char sock[600];
    char log[600];
    (void)snprintf(sock, sizeof(sock), "%s/scope.sock", d);
    (void)snprintf(log, sizeof(log), "%s/pbx-peer-vfsd.log", d);
    const char *args[] = {"--root",           d,   "--scope", sock,
                          "--scopes-per-pid", "3", NULL};
    pid_t pid = tva_spawn(d, args, NULL, 0U);
    PBX_REQUIRE(pid > 0);
    int held[3] = {-1, -1, -1};
    uint64_t id = 0;
    for (int i = 0; i < 3; i++) {
        held[i] = pbx_peer_io_scope_acquire(sock, 3000, &id);
        PBX_CHECK(held[i] >= 0);
    }
    /* The fourth is refused: no scope, the refusal logged. */
    PBX_CHECK(pbx_peer_io_scope_acquire(sock, 3000, &id) < 0);
    char want[160];
    (void)snprintf(want, sizeof(want),
                   "vfsd: scope refused to pid %ld: it holds 3 scope(s), the "
                   "most one process may (--scopes-per-pid 3)",
                   (long)getpid());
    PBX_CHECK(tp_logged(log, want));
    /* Another process is not charged for this one's scopes. */
    pid_t child = fork();
    PBX_REQUIRE(child >= 0);
    if (child == 0) {
        uint64_t cid = 0;
        _exit(pbx_peer_io_scope_acquire(sock, 3000, &cid) >= 0 ? 0 : 1);
    }
    PBX_CHECK_EQ(tp_wait_exit(child, 5000), 0);
    /* A scope given back makes room (once vfsd saw its end). */
    (void)close(held[0]);
    held[0] = -1;
    for (int i = 0; i < 250 && held[0] < 0; i++) {
        held[0] = pbx_peer_io_scope_acquire(sock, 3000, &id);
        if (held[0] < 0) {
            (void)usleep(20000);
        }
    }
    PBX_CHECK(held[0] >= 0);
    pbx_peer_io_close_all(held, 3);
    (void)tp_stop(pid);
}

PBX_TEST(peers_vfsd_scopes_per_pid_usage_errors)
{
    const char *d = tp_tmpdir();
    char log[600];
    (void)snprintf(log, sizeof(log), "%s/pbx-peer-vfsd.log", d);
    static const char *const bad[] = {"0", "257", "x"};
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        const char *args[] = {"--root", d, "--scopes-per-pid", bad[i], NULL};
        PBX_CHECK(tva_spawn(d, args, NULL, 0U) < 0);
        char want[96];
        (void)snprintf(want, sizeof(want),
                       "bad argument: --scopes-per-pid '%s' (1..256)", bad[i]);
        PBX_CHECK(tp_logged(log, want));
    }
}
