/*
 * bench_fd.c: pbx-bench-fd, the revocable descriptor's throughput
 * (docs/BENCH.md, "Revocable descriptor"). It starts pbx-vfsd (from the
 * directory named on the command line) on a scratch root holding a file
 * of --mib MiB, resolves it for reading over a scope and a route held
 * here, asks OPEN for a revocable descriptor, and times reading the whole
 * file with --chunk-byte reads through that descriptor and through a
 * plain open() of the same file, best of --reps each. Prints one line:
 *
 *   fd mib=N chunk=B reps=R direct_mb_s=X fuse_mb_s=Y ratio=Y/X same=yes
 *
 * Usage: pbx-bench-fd BIN_DIR WORKDIR [--mib N] [--chunk B] [--reps R]
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ipc/pbx_ipc.h"
#include "peers/app/pbx_obj.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer_vfs.h"
#include "sha2/pbx_sha2.h"

/* The most MiB, reps and chunk bytes the options take. */
#define FD_MIB_MAX   256L
#define FD_REPS_MAX  1000L
#define FD_CHUNK_MAX (1L << 20)

/* A running vfsd serving root/pub over a scope and a route held here. */
typedef struct fd_vfsd {
    pid_t pid;
    int scope;
    int route;
} fd_vfsd;

static uint64_t fd_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000U + (uint64_t)ts.tv_nsec;
}

/* Execs pbx-vfsd in the child: scope end s, route end r, ready end w. */
static void fd_exec(const char *bin, const char *root, int s, int r, int w)
{
    char exe[4096];
    char sa[32];
    char ra[32];
    char wa[32];
    (void)snprintf(exe, sizeof(exe), "%s/pbx-vfsd", bin);
    (void)snprintf(sa, sizeof(sa), "%d=pub", s);
    (void)snprintf(ra, sizeof(ra), "%d", r);
    (void)snprintf(wa, sizeof(wa), "%d", w);
    int fds[3] = {s, r, w};
    for (size_t i = 0; i < 3U; i++) {
        (void)fcntl(fds[i], F_SETFD, 0);
    }
    execl(exe, exe, "--root", root, "--scope-fd", sa, "--route-fd", ra,
          "--ready-fd", wa, (char *)NULL);
    _exit(127);
}

/* Starts vfsd on root; false when it did not become ready in 10 s. */
static bool fd_up(fd_vfsd *v, const char *bin, const char *root)
{
    int sp[2];
    int rp[2];
    int ready[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, rp) != 0 ||
        pipe2(ready, O_CLOEXEC) != 0) {
        return false;
    }
    v->pid = fork();
    if (v->pid == 0) {
        fd_exec(bin, root, sp[1], rp[1], ready[1]);
    }
    (void)close(sp[1]);
    (void)close(rp[1]);
    (void)close(ready[1]);
    struct pollfd p = {ready[0], POLLIN, 0};
    char b[8];
    bool ok = v->pid > 0 && poll(&p, 1, 10000) == 1 &&
              read(ready[0], b, sizeof(b)) >= 5;
    (void)close(ready[0]);
    uint64_t id = 0;
    v->scope = ok ? pbx_peer_io_scope_take(sp[0], 3000, &id) : -1;
    (void)close(sp[0]);
    v->route = rp[0];
    return v->scope >= 0;
}

/* Sends the n bytes of buf on fd and takes the answer from reply_fd
 * (3 s): vfsd answers a RESOLVE sent through a scope on its route. */
static bool fd_call_via(int fd, int reply_fd, const uint8_t *buf, size_t n,
                        pbx_peer_msg *m)
{
    struct pollfd p = {reply_fd, POLLIN, 0};
    return pbx_peer_io_send(fd, buf, n, -1) == 0 && poll(&p, 1, 3000) == 1 &&
           pbx_peer_io_recv_frame(reply_fd, m) == 0;
}

/* Resolves sel for reading through v's scope; returns the object or -1. */
static int fd_resolve(const fd_vfsd *v, const char *sel)
{
    static pbx_peer_msg m;
    pbx_ipc_resolve rq;
    pbx_ipc_resolve_reply rep;
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    memset(&rq, 0, sizeof(rq));
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.selector = (const uint8_t *)sel;
    rq.selector_len = (uint32_t)strlen(sel);
    if (pbx_sha2_digest(rq.selector, rq.selector_len, rq.selector_digest) !=
            PBX_OK ||
        pbx_ipc_resolve_encode(id, &rq, buf, sizeof(buf), &n) != PBX_OK ||
        !fd_call_via(v->scope, v->route, buf, n, &m) || m.err != PBX_OK ||
        pbx_ipc_resolve_reply_decode(&m.frame, &rep) != PBX_OK ||
        rep.result != PBX_IPC_RESOLVE_FOUND || m.nfds != 1U) {
        return -1;
    }
    return m.fds[0];
}

/* Reads all of fd from offset 0 in chunk-byte preads into buf; returns
 * the nanoseconds taken, or 0 when fewer than len bytes came. */
static uint64_t fd_time_read(int fd, char *buf, size_t len, size_t chunk)
{
    uint64_t t0 = fd_now_ns();
    size_t got = 0;
    for (size_t i = 0; got < len && i <= len / chunk + 1U; i++) {
        size_t want = len - got < chunk ? len - got : chunk;
        ssize_t r = pread(fd, buf + got, want, (off_t)got);
        if (r <= 0) {
            return 0U;
        }
        got += (size_t)r;
    }
    uint64_t t = fd_now_ns() - t0;
    return got == len && t > 0U ? t : 0U;
}

/* A decimal option value in 1..max, or 0. */
static long fd_num(const char *s, long max)
{
    char *end = NULL;
    long n = strtol(s, &end, 10);
    return end == s || *end != '\0' || n < 1L || n > max ? 0L : n;
}

/* Writes the len-byte test file at path (a byte pattern). */
static bool fd_make(const char *path, char *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (char)('a' + (i * 7U) % 26U);
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, buf, len) == (ssize_t)len;
    if (fd >= 0) {
        (void)close(fd);
    }
    return ok;
}

/* Best-of-reps times through fd and direct into *tf and *td; checks the
 * bytes read through fd equal the file (*same). */
static bool fd_measure(int fd, int direct, char *a, char *b, size_t len,
                       size_t chunk, long reps, uint64_t *tf, uint64_t *td,
                       bool *same)
{
    *tf = UINT64_MAX;
    *td = UINT64_MAX;
    for (long r = 0; r < reps; r++) {
        uint64_t f = fd_time_read(fd, a, len, chunk);
        uint64_t d = fd_time_read(direct, b, len, chunk);
        if (f == 0U || d == 0U) {
            return false;
        }
        *tf = f < *tf ? f : *tf;
        *td = d < *td ? d : *td;
    }
    *same = memcmp(a, b, len) == 0;
    return true;
}

int main(int argc, char **argv)
{
    long mib = 1;
    long chunk = 65536;
    long reps = 20;
    for (int i = 3; i + 1 < argc; i += 2) {
        long *o = strcmp(argv[i], "--mib") == 0     ? &mib
                  : strcmp(argv[i], "--chunk") == 0 ? &chunk
                  : strcmp(argv[i], "--reps") == 0  ? &reps
                                                    : NULL;
        long max = o == &mib    ? FD_MIB_MAX
                   : o == &reps ? FD_REPS_MAX
                                : FD_CHUNK_MAX;
        if (o == NULL || (*o = fd_num(argv[i + 1], max)) == 0L) {
            (void)fprintf(stderr, "pbx-bench-fd: bad option %s\n", argv[i]);
            return 2;
        }
    }
    if (argc < 3 || argc % 2 == 0) {
        (void)fprintf(stderr, "usage: pbx-bench-fd BIN_DIR WORKDIR [--mib N] "
                              "[--chunk B] [--reps R]\n");
        return 2;
    }
    size_t len = (size_t)mib << 20;
    char root[4096];
    char path[4200];
    (void)snprintf(root, sizeof(root), "%s/fdroot", argv[2]);
    (void)snprintf(path, sizeof(path), "%s/pub/data.bin", root);
    char *a = malloc(len);
    char *b = malloc(len);
    char pub[4200];
    (void)snprintf(pub, sizeof(pub), "%s/pub", root);
    (void)mkdir(argv[2], 0700);
    (void)mkdir(root, 0700);
    (void)mkdir(pub, 0700);
    fd_vfsd v = {-1, -1, -1};
    int obj = -1;
    int fd = -1;
    bool ok = a != NULL && b != NULL && fd_make(path, a, len) &&
              fd_up(&v, argv[1], root) &&
              (obj = fd_resolve(&v, "data.bin")) >= 0 &&
              pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0;
    int direct = ok ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    uint64_t tf = 0;
    uint64_t td = 0;
    bool same = false;
    ok =
        ok && direct >= 0 &&
        fd_measure(fd, direct, a, b, len, (size_t)chunk, reps, &tf, &td, &same);
    if (ok) {
        double df = (double)len / 1048576.0 / ((double)tf / 1e9);
        double dd = (double)len / 1048576.0 / ((double)td / 1e9);
        (void)printf(
            "fd mib=%ld chunk=%ld reps=%ld direct_mb_s=%.1f fuse_mb_s=%.1f "
            "ratio=%.3f same=%s\n",
            mib, chunk, reps, dd, df, df / dd, same ? "yes" : "no");
    } else {
        (void)fprintf(stderr, "pbx-bench-fd: setup or a read failed\n");
    }
    int mine[3] = {fd, direct, obj};
    for (size_t i = 0; i < 3U; i++) {
        if (mine[i] >= 0) {
            (void)close(mine[i]);
        }
    }
    if (v.pid > 0) {
        (void)kill(v.pid, SIGTERM);
        (void)waitpid(v.pid, NULL, 0);
    }
    free(a);
    free(b);
    return ok && same ? 0 : 1;
}
