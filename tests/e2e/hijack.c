/*
 * hijack.c: pbx-test-hijack, the foreign program of the e2e scenario
 * route-hijack (tests/e2e/run.py). Statically linked, so it also runs
 * under `pbx run --sandbox`.
 *
 *   pbx-test-hijack [--scope PATH] [--scope-fd N] [--rounds N] PATH...
 *
 * Each round connects to every PATH with a SOCK_SEQPACKET, a SOCK_STREAM
 * and a SOCK_DGRAM socket and sends each connection a RESOLVE-shaped
 * frame (docs/readme.txt, read, file), as a process that wants to become
 * vfsd's route would; whatever comes back within 20 ms is taken. A
 * descriptor that comes from the --scope PATH is a scope: a RESOLVE is
 * sent through it, as through the scope at --scope-fd N (a sandboxed
 * job's descriptor 4), and must be refused. A descriptor from any other
 * path, and any object or FOUND a RESOLVE brings, is authority this
 * process must never get. After every round one line is printed and
 * flushed: "round=R sockets_refused=A connects_refused=B connected=C
 * scopes=D resolve_refused=E found=F objects=G" (cumulative; socket()
 * refused, e.g. EPERM under the sandbox's walls, counts in A). The
 * scenario kills the program and reads the last line; --rounds bounds it
 * (default 100000). Exits 0.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipc/pbx_ipc.h"
#include "peers/common/pbx_peer_io.h"
#include "sha2/pbx_sha2.h"

/* The most paths one run probes. */
#define HIJACK_PATHS_MAX 16

/* What the program has seen so far (cumulative over rounds). */
typedef struct hijack_tally {
    unsigned long sockets_refused;
    unsigned long connects_refused;
    unsigned long connected;
    unsigned long scopes;
    unsigned long resolve_refused;
    unsigned long found;
    unsigned long objects;
} hijack_tally;

/* The RESOLVE-shaped frame every connection is sent (encoded once). */
static uint8_t g_frame[PBX_IPC_FRAME_BYTES_MAX];
static size_t g_frame_len;

/* Encodes the RESOLVE frame; false when the codec refuses. */
static bool hijack_frame(void)
{
    static const char sel[] = "docs/readme.txt";
    pbx_ipc_resolve rq;
    memset(&rq, 0, sizeof(rq));
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.selector = (const uint8_t *)sel;
    rq.selector_len = (uint32_t)(sizeof(sel) - 1U);
    pbx_ipc_id id = {1U, 1U};
    return pbx_sha2_digest(rq.selector, rq.selector_len, rq.selector_digest) ==
               PBX_OK &&
           pbx_ipc_resolve_encode(id, &rq, g_frame, sizeof(g_frame),
                                  &g_frame_len) == PBX_OK;
}

/* Sends a RESOLVE through scope and counts what the answer gives: an
 * object or FOUND (authority), else a refusal. Closes nothing. */
static void hijack_resolve(int scope, hijack_tally *t)
{
    static pbx_peer_msg m;
    int r = pbx_peer_io_call(scope, g_frame, g_frame_len, -1, &m, 2000);
    if (r != 0) {
        t->resolve_refused++;
        return;
    }
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    bool found = m.nfds > 0U ||
                 (m.err == PBX_OK && m.frame.status == 0U &&
                  pbx_ipc_resolve_reply_decode(&m.frame, &rep) == PBX_OK &&
                  rep.result == PBX_IPC_RESOLVE_FOUND);
    t->objects += m.nfds;
    pbx_peer_io_close_all(m.fds, m.nfds);
    if (found) {
        t->found++;
    } else {
        t->resolve_refused++;
    }
}

/* Takes whatever conn has for us within 20 ms: descriptors from the
 * scope path are scopes (each tried), any other is an object. */
static void hijack_take(int conn, bool from_scope, hijack_tally *t)
{
    struct pollfd p = {conn, POLLIN, 0};
    if (poll(&p, 1U, 20) != 1) {
        return;
    }
    uint8_t buf[256];
    union {
        char b[CMSG_SPACE(sizeof(int) * 8U)];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {buf, sizeof(buf)};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof(ctl.b);
    if (recvmsg(conn, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0) {
        return;
    }
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL;
         c = CMSG_NXTHDR(&mh, c)) {
        size_t n = c->cmsg_type == SCM_RIGHTS
                       ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int)
                       : 0U;
        for (size_t i = 0; i < n && i < 8U; i++) {
            int fd = -1;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (from_scope) {
                t->scopes++;
                hijack_resolve(fd, t);
            } else {
                t->objects++;
            }
            (void)close(fd);
        }
    }
}

/* One connection of type to path: refused, or sent the frame and read. */
static void hijack_one(const char *path, int type, bool from_scope,
                       hijack_tally *t)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        t->sockets_refused++;
        return;
    }
    if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        t->connects_refused++;
        (void)close(fd);
        return;
    }
    t->connected++;
    (void)send(fd, g_frame, g_frame_len, MSG_DONTWAIT | MSG_NOSIGNAL);
    hijack_take(fd, from_scope, t);
    (void)close(fd);
}

int main(int argc, char **argv)
{
    const char *scope_path = NULL;
    int scope_fd = -1;
    unsigned long rounds = 100000UL;
    const char *paths[HIJACK_PATHS_MAX];
    size_t npaths = 0;
    for (int i = 1; i < argc; i++) {
        bool has = i + 1 < argc;
        if (strcmp(argv[i], "--scope") == 0 && has) {
            scope_path = argv[++i];
            paths[npaths++] = scope_path;
        } else if (strcmp(argv[i], "--scope-fd") == 0 && has) {
            scope_fd = (int)strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--rounds") == 0 && has) {
            rounds = strtoul(argv[++i], NULL, 10);
        } else {
            paths[npaths++] = argv[i];
        }
        if (npaths >= HIJACK_PATHS_MAX) {
            (void)fputs("pbx-test-hijack: too many paths\n", stderr);
            return 2;
        }
    }
    if (!hijack_frame()) {
        (void)fputs("pbx-test-hijack: cannot encode RESOLVE\n", stderr);
        return 2;
    }
    static const int types[3] = {SOCK_SEQPACKET, SOCK_STREAM, SOCK_DGRAM};
    hijack_tally t;
    memset(&t, 0, sizeof(t));
    for (unsigned long r = 1; r <= rounds; r++) {
        for (size_t i = 0; i < npaths; i++) {
            for (size_t k = 0; k < 3U; k++) {
                hijack_one(paths[i], types[k], paths[i] == scope_path, &t);
            }
        }
        if (scope_fd >= 0) {
            hijack_resolve(scope_fd, &t);
        }
        (void)printf("round=%lu sockets_refused=%lu connects_refused=%lu "
                     "connected=%lu scopes=%lu resolve_refused=%lu found=%lu "
                     "objects=%lu\n",
                     r, t.sockets_refused, t.connects_refused, t.connected,
                     t.scopes, t.resolve_refused, t.found, t.objects);
        (void)fflush(stdout);
        struct timespec ts = {0, 20L * 1000L * 1000L};
        (void)nanosleep(&ts, NULL);
    }
    return 0;
}
