/*
 * bench_fd.c: pbx-bench-fd, the revocable descriptor's throughput
 * (docs/BENCH.md, "Revocable descriptor"). It starts pbx-vfsd (from the
 * directory named on the command line) on a scratch root holding a file
 * of --mib MiB, resolves it for reading over a scope and a route held
 * here, asks OPEN for a revocable descriptor, and times reading the whole
 * file with --chunk-byte reads through that descriptor, through a plain
 * open() of the same file, and through the zero-work FUSE server's file
 * of the same bytes (bench_fuse_floor.h: the floor of a FUSE read), in
 * turn, best of --reps each. Prints one line:
 *
 *   fd mib=N chunk=B reps=R direct_mb_s=X fuse_mb_s=Y ratio=Y/X same=yes
 *      floor_mb_s=Z floor_ratio=Z/X fuse_floor_ratio=Y/Z floor_same=yes
 *
 * (one line; same= is vfsd's bytes against the file, floor_same= the
 * floor's). Where the floor cannot be mounted its three numbers are
 * "none", floor_same=unmounted, and stderr says why.
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

#include "bench/fd/bench_fuse_floor.h"
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

/* The descriptors read in turn: vfsd's, the plain file's, the floor's. */
enum { FD_VFSD, FD_DIRECT, FD_FLOOR, FD_KINDS };

/* Best-of-reps times through each descriptor of fds (one read of the
 * whole file each, in turn, so that the machine's load falls on all
 * alike) into t, each into its own len-byte buffer of bufs; a descriptor
 * of -1 (no floor) is skipped and its time left 0. Then same[k]: the
 * bytes read through fds[k] equal the direct read's. */
static bool fd_measure(const int *fds, char **bufs, size_t len, size_t chunk,
                       long reps, uint64_t *t, bool *same)
{
    for (size_t k = 0; k < FD_KINDS; k++) {
        t[k] = fds[k] >= 0 ? UINT64_MAX : 0U;
    }
    for (long r = 0; r < reps; r++) {
        for (size_t k = 0; k < FD_KINDS; k++) {
            uint64_t x =
                fds[k] >= 0 ? fd_time_read(fds[k], bufs[k], len, chunk) : 1U;
            if (x == 0U) {
                return false;
            }
            t[k] = fds[k] >= 0 && x < t[k] ? x : t[k];
        }
    }
    for (size_t k = 0; k < FD_KINDS; k++) {
        same[k] = fds[k] >= 0 && memcmp(bufs[k], bufs[FD_DIRECT], len) == 0;
    }
    return true;
}

/* MB/s of len bytes read in ns nanoseconds. */
static double fd_mb_s(size_t len, uint64_t ns)
{
    return (double)len / 1048576.0 / ((double)ns / 1e9);
}

/* Prints the result line (the usage comment at the top). */
static void fd_print(long mib, long chunk, long reps, size_t len,
                     const uint64_t *t, const bool *same)
{
    double df = fd_mb_s(len, t[FD_VFSD]);
    double dd = fd_mb_s(len, t[FD_DIRECT]);
    (void)printf("fd mib=%ld chunk=%ld reps=%ld direct_mb_s=%.1f "
                 "fuse_mb_s=%.1f ratio=%.3f same=%s",
                 mib, chunk, reps, dd, df, df / dd,
                 same[FD_VFSD] ? "yes" : "no");
    if (t[FD_FLOOR] == 0U) {
        (void)printf(" floor_mb_s=none floor_ratio=none "
                     "fuse_floor_ratio=none floor_same=unmounted\n");
        return;
    }
    double dz = fd_mb_s(len, t[FD_FLOOR]);
    (void)printf(" floor_mb_s=%.1f floor_ratio=%.3f fuse_floor_ratio=%.3f "
                 "floor_same=%s\n",
                 dz, dz / dd, df / dz, same[FD_FLOOR] ? "yes" : "no");
}

/* Reads --mib, --chunk and --reps from argv[3..] into o[0..2] (kept at
 * their defaults when absent); false after telling why on stderr. */
static bool fd_options(int argc, char **argv, long *o)
{
    static const char *const names[3] = {"--mib", "--chunk", "--reps"};
    static const long maxes[3] = {FD_MIB_MAX, FD_CHUNK_MAX, FD_REPS_MAX};
    for (int i = 3; i + 1 < argc; i += 2) {
        size_t k = 0;
        while (k < 3U && strcmp(argv[i], names[k]) != 0) {
            k++;
        }
        if (k == 3U || (o[k] = fd_num(argv[i + 1], maxes[k])) == 0L) {
            (void)fprintf(stderr, "pbx-bench-fd: bad option %s\n", argv[i]);
            return false;
        }
    }
    if (argc < 3 || argc % 2 == 0) {
        (void)fprintf(stderr, "usage: pbx-bench-fd BIN_DIR WORKDIR [--mib N] "
                              "[--chunk B] [--reps R]\n");
        return false;
    }
    return true;
}

/* Opens the zero-work floor's file (the server holds the len bytes of
 * buf); -1, with the reason on stderr, when FUSE cannot be mounted. */
static int fd_floor_open(bench_floor *fl, const char *buf, size_t len)
{
    char path[4200];
    if (!bench_floor_start(fl, "/tmp", buf, len)) {
        (void)fprintf(stderr, "pbx-bench-fd: zero-work FUSE floor: %s\n",
                      fl->why);
        return -1;
    }
    (void)snprintf(path, sizeof(path), "%s/%s", fl->mnt, BENCH_FLOOR_NAME);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        (void)fprintf(stderr, "pbx-bench-fd: zero-work FUSE floor: open: %s\n",
                      strerror(errno));
    }
    return fd;
}

int main(int argc, char **argv)
{
    long o[3] = {1, 65536, 20}; /* --mib, --chunk, --reps */
    if (!fd_options(argc, argv, o)) {
        return 2;
    }
    size_t len = (size_t)o[0] << 20;
    char root[4096];
    char path[4200];
    char pub[4200];
    (void)snprintf(root, sizeof(root), "%s/fdroot", argv[2]);
    (void)snprintf(path, sizeof(path), "%s/pub/data.bin", root);
    (void)snprintf(pub, sizeof(pub), "%s/pub", root);
    char *bufs[FD_KINDS] = {malloc(len), malloc(len), malloc(len)};
    (void)mkdir(argv[2], 0700);
    (void)mkdir(root, 0700);
    (void)mkdir(pub, 0700);
    fd_vfsd v = {-1, -1, -1};
    bench_floor fl = {-1, "", ""};
    int obj = -1;
    int fds[FD_KINDS] = {-1, -1, -1};
    /* The floor starts first: its server holds nothing of vfsd's. */
    bool ok = bufs[0] != NULL && bufs[1] != NULL && bufs[2] != NULL &&
              fd_make(path, bufs[0], len);
    fds[FD_FLOOR] = ok ? fd_floor_open(&fl, bufs[0], len) : -1;
    ok = ok && fd_up(&v, argv[1], root) &&
         (obj = fd_resolve(&v, "data.bin")) >= 0 &&
         pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fds[FD_VFSD]) == 0 &&
         (fds[FD_DIRECT] = open(path, O_RDONLY | O_CLOEXEC)) >= 0;
    uint64_t t[FD_KINDS] = {0, 0, 0};
    bool same[FD_KINDS] = {false, false, false};
    ok = ok && fd_measure(fds, bufs, len, (size_t)o[1], o[2], t, same);
    if (ok) {
        fd_print(o[0], o[1], o[2], len, t, same);
    } else {
        (void)fprintf(stderr, "pbx-bench-fd: setup or a read failed\n");
    }
    int mine[4] = {fds[0], fds[1], fds[2], obj};
    for (size_t i = 0; i < 4U; i++) {
        if (mine[i] >= 0) {
            (void)close(mine[i]);
        }
    }
    bench_floor_stop(&fl);
    if (v.pid > 0) {
        (void)kill(v.pid, SIGTERM);
        (void)waitpid(v.pid, NULL, 0);
    }
    for (size_t k = 0; k < FD_KINDS; k++) {
        free(bufs[k]);
    }
    return ok && same[FD_VFSD] && (fds[FD_FLOOR] < 0 || same[FD_FLOOR]) ? 0 : 1;
}
