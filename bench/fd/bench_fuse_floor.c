/*
 * bench_fuse_floor.c: the zero-work FUSE server of pbx-bench-fd
 * (bench_fuse_floor.h; docs/BENCH.md, "Revocable descriptor"). It mounts
 * the way vfsd's server does (Debian's libfuse3 low-level API,
 * fuse_session_mount, the same mount options, a child process of the
 * bench) and serves one file with direct I/O, answering each READ from
 * the bytes it holds with one fuse_reply_buf: no file read, no splice, no
 * table lookup, no poll before each request (libfuse's own single-thread
 * loop: one read of /dev/fuse, one writev of the reply). What a read
 * through it costs is the floor any FUSE server without the page cache or
 * passthrough pays here.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 31

#include "bench/fd/bench_fuse_floor.h"

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The file's node number (the root is FUSE_ROOT_ID, 1). */
#define FLOOR_NODE 2U

/* The server's bytes: the child's copy of the caller's buffer. */
static const char *g_bytes;
static size_t g_len;

/* The attributes of node (the root directory or the file) in *st. */
static void floor_attr(fuse_ino_t node, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = node;
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (node == FUSE_ROOT_ID) {
        st->st_mode = S_IFDIR | 0500;
        st->st_nlink = 2;
        return;
    }
    st->st_mode = S_IFREG | 0400;
    st->st_nlink = 1;
    st->st_size = (off_t)g_len;
    st->st_blksize = 65536;
}

static void floor_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param ep;
    memset(&ep, 0, sizeof(ep));
    if (parent != FUSE_ROOT_ID || strcmp(name, BENCH_FLOOR_NAME) != 0) {
        (void)fuse_reply_err(req, ENOENT);
        return;
    }
    ep.ino = FLOOR_NODE;
    ep.generation = 1;
    floor_attr(FLOOR_NODE, &ep.attr);
    (void)fuse_reply_entry(req, &ep);
}

static void floor_getattr(fuse_req_t req, fuse_ino_t node,
                          struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    if (node != FUSE_ROOT_ID && node != FLOOR_NODE) {
        (void)fuse_reply_err(req, ENOENT);
        return;
    }
    floor_attr(node, &st);
    (void)fuse_reply_attr(req, &st, 0.0);
}

/* Opens the file as vfsd's server opens an entry: read-only, direct I/O
 * (every read reaches this server), nothing cached, no FLUSH at close. */
static void floor_open(fuse_req_t req, fuse_ino_t node,
                       struct fuse_file_info *fi)
{
    if (node != FLOOR_NODE || (fi->flags & O_ACCMODE) != O_RDONLY) {
        (void)fuse_reply_err(req, EACCES);
        return;
    }
    fi->direct_io = 1;
    fi->keep_cache = 0;
    fi->noflush = 1;
    (void)fuse_reply_open(req, fi);
}

/* The zero work: the asked range of the held bytes, in one reply. */
static void floor_read(fuse_req_t req, fuse_ino_t node, size_t size, off_t off,
                       struct fuse_file_info *fi)
{
    (void)fi;
    if (node != FLOOR_NODE || off < 0) {
        (void)fuse_reply_err(req, EINVAL);
        return;
    }
    size_t at = (size_t)off < g_len ? (size_t)off : g_len;
    size_t n = g_len - at < size ? g_len - at : size;
    (void)fuse_reply_buf(req, g_bytes + at, n);
}

/* Nothing that would cache: no writeback cache (as vfsd's server). */
static void floor_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

static const struct fuse_lowlevel_ops floor_ops = {
    .init = floor_init,
    .lookup = floor_lookup,
    .getattr = floor_getattr,
    .open = floor_open,
    .read = floor_read,
};

/* The child's whole life: mount on mnt, report on ready ('K' mounted, 'F'
 * not), serve until the mount is detached. Never returns. */
static void floor_child(int ready, const char *mnt)
{
    static char *argv0[] = {"pbx-bench-floor", "-o",
                            "fsname=pbx-bench-floor,noexec", NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, argv0);
    (void)signal(SIGPIPE, SIG_IGN);
    struct fuse_session *se =
        fuse_session_new(&args, &floor_ops, sizeof(floor_ops), NULL);
    if (se == NULL || fuse_session_mount(se, mnt) != 0) {
        (void)write(ready, "F", 1U);
        _exit(1);
    }
    (void)write(ready, "K", 1U);
    (void)close(ready);
    /* Ends when the kernel ends the connection: the parent detached the
     * mount and the last descriptor on it is closed. */
    (void)fuse_session_loop(se);
    fuse_session_unmount(se);
    fuse_session_destroy(se);
    _exit(0);
}

/* Detaches the mount at mnt lazily: umount2 where this process may (it
 * has the privilege), else fusermount3 (the mount is the user's, made
 * through it), as vfsd's server does. */
static void floor_detach(const char *mnt)
{
    if (umount2(mnt, MNT_DETACH) == 0) {
        return;
    }
    pid_t p = fork();
    if (p == 0) {
        int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (null >= 0) {
            (void)dup2(null, 2);
        }
        execlp("fusermount3", "fusermount3", "-u", "-z", "--", mnt,
               (char *)NULL);
        _exit(127);
    }
    if (p > 0) {
        (void)waitpid(p, NULL, 0);
    }
}

/* Waits for the server's report on rd (bounded); true on 'K'. */
static bool floor_wait(bench_floor *f, int rd)
{
    struct pollfd p = {rd, POLLIN, 0};
    char c = 0;
    bool got = poll(&p, 1, BENCH_FLOOR_START_MS) == 1 && read(rd, &c, 1U) == 1;
    if (!got || c != 'K') {
        (void)snprintf(f->why, sizeof(f->why), "%s",
                       got ? "FUSE cannot be mounted here "
                             "(fuse_session_mount failed)"
                           : "the zero-work FUSE server did not report");
        return false;
    }
    return true;
}

bool bench_floor_start(bench_floor *f, const char *dir, const char *bytes,
                       size_t len)
{
    int rp[2];
    f->pid = -1;
    f->why[0] = '\0';
    int n = snprintf(f->mnt, sizeof(f->mnt), "%s/pbx-bench-floor.XXXXXX", dir);
    if (n <= 0 || (size_t)n >= sizeof(f->mnt) || mkdtemp(f->mnt) == NULL) {
        (void)snprintf(f->why, sizeof(f->why), "no mount point: %s",
                       strerror(errno));
        f->mnt[0] = '\0';
        return false;
    }
    if (pipe2(rp, O_CLOEXEC) != 0) {
        (void)snprintf(f->why, sizeof(f->why), "no pipe: %s", strerror(errno));
        bench_floor_stop(f);
        return false;
    }
    g_bytes = bytes;
    g_len = len;
    f->pid = fork();
    if (f->pid == 0) {
        (void)close(rp[0]);
        floor_child(rp[1], f->mnt);
    }
    (void)close(rp[1]);
    bool ok = f->pid > 0 && floor_wait(f, rp[0]);
    (void)close(rp[0]);
    if (!ok) {
        bench_floor_stop(f);
    }
    return ok;
}

void bench_floor_stop(bench_floor *f)
{
    if (f->pid > 0) {
        floor_detach(f->mnt);
        /* The detach ends the connection (nothing is open on it), so the
         * server's loop ends; a server stuck anyway is killed rather than
         * waited on forever. */
        int st = 0;
        pid_t w = 0;
        for (int i = 0; i < 1000 && (w = waitpid(f->pid, &st, WNOHANG)) == 0;
             i++) {
            (void)usleep(10000);
        }
        if (w == 0) {
            (void)kill(f->pid, SIGKILL);
            (void)waitpid(f->pid, &st, 0);
        }
        f->pid = -1;
    }
    if (f->mnt[0] != '\0') {
        (void)rmdir(f->mnt);
        f->mnt[0] = '\0';
    }
}
