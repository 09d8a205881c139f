/*
 * vfsd.c: the reference vfsd for the Linux host. It serves a read-only
 * namespace from a directory. Every connection accepted on a scope socket
 * (or handed over as --scope-fd) is given one scope capability for a
 * subtree: one end of a fresh socketpair, sent by SCM_RIGHTS, which vfsd
 * names by that end's inode (the identity powerboxd's fstat of its copy
 * reports), keeping the other end to serve RESOLVE on. A RESOLVE is
 * served only when the kernel-attached credentials of its message name
 * the process at the other end of a route (powerboxd): anyone else holding
 * a scope is refused. RESOLVE mints a fresh object connection: vfsd keeps
 * its provider end and serves on it what the object was granted for
 * (STAT always; READ, LIST or WRITE by the grant, the file opened for that
 * alone; OPEN hands out a revocable descriptor on vfsd's FUSE mount,
 * vfsd_fuse.c); every other call there is refused with a distinct status. The
 * route (from powerboxd) takes DETACH and RETIRE; RETIRE answers the
 * calls already queued on the object with an error status, then cuts the
 * object's connection so that every copy reads its end. When a route
 * closes, every object minted for it is retired the same way: no object
 * outlives the powerboxd that could revoke it (one RETIRE line per object,
 * then a count line). vfsd listens for no route: a route is a descriptor
 * handed over (--route-fd, serving --route-pid or the SO_PEERCRED pid of
 * its far end) or, with --attach-fd N, a pair vfsd makes when the
 * supervisor (`pbx up`) sends 'P' and a pid: vfsd serves RESOLVE on it to
 * that pid alone and answers with the far end, which the supervisor gives
 * to the powerboxd it forked and holds before exec. One process (the
 * SO_PEERCRED pid of its scope-socket connection) holds at most
 * --scopes-per-pid scopes at once. See docs/HOST.md.
 */
/* O_PATH and accept4 are Linux extensions. */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ipc/pbx_ipc.h"
#include "peers/common/pbx_peer_attach.h"
#include "peers/common/pbx_peer_fdlimit.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"
#include "peers/vfsd/vfsd.h"
#include "sha2/pbx_sha2.h"

/* The command line, printed by -h/--help and named in usage errors. */
static const char vfsd_usage[] =
    "usage: pbx-vfsd --root DIR [--scope PATH[=SUBDIR]]... "
    "[--scope-fd N[=SUBDIR]]...\n"
    "                [--lie-scope PATH[=SUBDIR]]... "
    "[--route-fd N] [--route-pid PID] [--ready-fd N]\n"
    "                [--incarnation N] [--attach-fd N] [--scopes-per-pid N]\n"
    "                [--fuse-dir DIR] [--fuse-open-max N] [--objects N]\n"
    "Serves DIR to powerboxd: every connection to a --scope socket gets one\n"
    "scope of DIR (or its SUBDIR), at most N held by one process at once\n"
    "(--scopes-per-pid, default 32). RESOLVE is served only to the one\n"
    "process a route names; the route takes DETACH and RETIRE. A route is\n"
    "never a connection to a listener: --route-fd N is a descriptor handed\n"
    "over (--route-pid: the process at its far end; else SO_PEERCRED's), and\n"
    "--attach-fd N is the supervisor's attach channel, whose 'P' PID makes a\n"
    "route pair for PID and answers with its far end (so vfsd may start\n"
    "with no route). Object ids carry this vfsd's incarnation: RETIRE or\n"
    "DETACH of another's is echoed as absent. --incarnation N (1..65535)\n"
    "sets it; without it, it is random. OPEN on an object hands out a\n"
    "revocable descriptor on vfsd's FUSE mount at DIR (--fuse-dir, made\n"
    "0700; default a fresh directory under /tmp), at most N open at once\n"
    "(--fuse-open-max, default 256). --objects N (1..4096, default 256)\n"
    "sizes the object table: at most N objects live at once, a RESOLVE\n"
    "beyond refused BUSY (storage fixed at startup; the descriptor limit\n"
    "is raised to fit, or startup fails). See docs/HOST.md.\n";

vfsd g_vfsd;

/* The pid a 'P' body names (4 bytes, little-endian), or 0 when the body
 * is not one (wrong length, 0, or beyond INT32_MAX). */
static pid_t vfsd_pair_pid(const pbx_peer_attach_msg *m)
{
    if (m->body_len != PBX_PEER_ATTACH_PID_BYTES) {
        return 0;
    }
    uint32_t v = (uint32_t)m->body[0] | (uint32_t)m->body[1] << 8 |
                 (uint32_t)m->body[2] << 16 | (uint32_t)m->body[3] << 24;
    return v == 0U || v > (uint32_t)INT32_MAX ? 0 : (pid_t)v;
}

/*
 * Applies the 'P' message m: a fresh route socketpair whose end vfsd keeps
 * serves RESOLVE to the named pid alone, and its far end goes back in the
 * answer ('p' 0, the pid echoed, with the descriptor). The supervisor forked
 * that process and holds it before exec until it has the end, so no other
 * process can be the one served, whatever connects where. Returns NULL when
 * answered, else why it was refused (in why, cap bytes; nothing was made).
 */
static const char *vfsd_attach_pair(const pbx_peer_attach_msg *m, char *why,
                                    size_t cap)
{
    pid_t pid = vfsd_pair_pid(m);
    int sv[2] = {-1, -1};
    if (m->nfds != 0U) {
        (void)snprintf(why, cap, "'P' carries %zu descriptor(s), not 0",
                       m->nfds);
        return why;
    }
    if (pid == 0) {
        return "bad pid (4 bytes, little-endian, 1..2147483647)";
    }
    if (g_vfsd.nconns >= VFSD_CONNS_MAX) {
        return "connection table full";
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        (void)snprintf(why, cap, "socketpair: %s", strerror(errno));
        return why;
    }
    /* Cannot fail: the table has room (checked above). */
    (void)vfsd_add_conn(sv[0], VFSD_KIND_ROUTE, g_vfsd.root_fd, 0U, pid);
    /* The answer echoes the pid (the tag), so the supervisor never takes
     * it for the answer to a later 'P' for another process. */
    if (pbx_peer_attach_reply(g_vfsd.attach, m, PBX_PEER_ATTACH_DONE, sv[1]) !=
        0) {
        pbx_peer_log("vfsd", "attach channel: route end not sent: %s",
                     strerror(errno));
        vfsd_drop_conn(g_vfsd.nconns - 1U);
    } else {
        pbx_peer_log("vfsd",
                     "attach channel: route pair made for pid %ld (its far "
                     "end handed to the supervisor)",
                     (long)pid);
    }
    (void)close(sv[1]);
    return NULL;
}

/* Handles what waits on the attach channel: 'P' messages, answered 'p'
 * 0 with the pid echoed and a route's far end, or 'p' 1; every other op (the
 * retired 'L' included: vfsd listens for no route) refused. At the channel's
 * end (the supervisor is gone) it is closed and vfsd serves on. */
void vfsd_attach_input(void)
{
    static pbx_peer_attach_msg m;
    for (int i = 0; i < 8 && pbx_peer_attach_next(&g_vfsd.attach, "vfsd", &m);
         i++) {
        char buf[192];
        const char *why = !m.ok ? "malformed message (truncated, or more than "
                                  "2 descriptors)"
                          : m.op != PBX_PEER_ATTACH_OP_PAIR
                              ? "op not served by vfsd (only 'P')"
                              : vfsd_attach_pair(&m, buf, sizeof(buf));
        if (why != NULL) {
            pbx_peer_attach_refuse(g_vfsd.attach, &m, "vfsd", why);
        }
    }
}

/* Opens the subtree "SUB" beneath the root (the root itself when NULL). */
static int vfsd_subtree(const char *sub)
{
    if (sub == NULL) {
        return g_vfsd.root_fd;
    }
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, g_vfsd.root_fd, sub, &how, sizeof(how));
    return (int)fd;
}

/* Adds a listener or handed-over connection from "X[=SUB]"; a scope
 * connection handed over is given its one scope at once. */
static bool vfsd_endpoint_arg(char *arg, int kind, bool is_fd, bool lie)
{
    char *eq = strchr(arg, '=');
    if (eq != NULL) {
        *eq = '\0';
    }
    int dirfd = vfsd_subtree(eq != NULL ? eq + 1 : NULL);
    if (dirfd < 0) {
        pbx_peer_log("vfsd", "subtree '%s' not beneath the root: %s", eq + 1,
                     strerror(errno));
        return false;
    }
    int fd = is_fd ? pbx_peer_io_fd_arg(arg)
                   : pbx_peer_io_listen(arg, SOCK_SEQPACKET);
    if (fd < 0) {
        pbx_peer_log("vfsd", "cannot use '%s': %s", arg, strerror(errno));
        return false;
    }
    if (is_fd) {
        (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        return kind == VFSD_KIND_SCOPE
                   ? vfsd_hand_scope(fd, dirfd, lie)
                   : vfsd_add_conn(fd, kind, dirfd, 0U, g_vfsd.route_pid) !=
                         NULL;
    }
    if (g_vfsd.nlistens >= VFSD_LISTEN_MAX) {
        pbx_peer_log("vfsd", "too many listening sockets");
        return false;
    }
    g_vfsd.listens[g_vfsd.nlistens++] =
        (vfsd_conn){fd, kind, dirfd, 0U, lie, 0, 0U};
    return true;
}

/* Whether option k takes a value (every option but -h/--help does). */
static bool vfsd_known(const char *k)
{
    static const char *const opts[] = {
        "--root",          "--scope",     "--scope-fd",       "--lie-scope",
        "--route",         "--route-fd",  "--ready-fd",       "--route-pid",
        "--incarnation",   "--attach-fd", "--scopes-per-pid", "--fuse-dir",
        "--fuse-open-max", "--objects"};
    for (size_t i = 0; i < PBX_ARRAY_LEN(opts); i++) {
        if (strcmp(k, opts[i]) == 0) {
            return true;
        }
    }
    return false;
}

/* Sets the incarnation from --incarnation's text (decimal 1..65535, the
 * supervisor's choice, one no earlier vfsd of its stack had);
 * returns false after a message naming the bad value. */
static bool vfsd_incarnation_arg(const char *text)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(text, &end, 10);
    if (end == text || *end != '\0' || errno != 0 || n < 1L ||
        n > (long)UINT16_MAX) {
        pbx_peer_log("vfsd", "bad argument: --incarnation '%s' (1..65535)",
                     text);
        return false;
    }
    g_vfsd.incarnation = (uint16_t)n;
    return true;
}

/* A positive decimal of at most max from text, or 0 when it is not one. */
static long vfsd_positive(const char *text, long max)
{
    char *end = NULL;
    errno = 0;
    long n = strtol(text, &end, 10);
    return end == text || *end != '\0' || errno != 0 || n < 1L || n > max ? 0L
                                                                          : n;
}

/* Checks and applies option k's value v where it is a number, and refuses
 * --route: a listener would make its first connector the route (every
 * route is now a pair: --route-fd, or the attach channel's 'P'). Returns
 * false after a message naming the bad argument. */
static bool vfsd_value_arg(const char *k, const char *v)
{
    if (strcmp(k, "--route") == 0) {
        pbx_peer_log("vfsd",
                     "bad argument: --route '%s': vfsd listens for no route "
                     "(its first connector would become one); use --route-fd "
                     "or the attach channel's 'P'",
                     v);
        return false;
    }
    if (strcmp(k, "--incarnation") == 0) {
        return vfsd_incarnation_arg(v);
    }
    if (strcmp(k, "--fuse-dir") == 0) {
        g_vfsd.fuse.dir = v;
        return true;
    }
    if (strcmp(k, "--objects") == 0) {
        long m = vfsd_positive(v, (long)PBX_PEER_VFS_OBJECTS_CAP);
        if (m == 0L) {
            pbx_peer_log("vfsd", "bad argument: %s '%s' (1..%ld)", k, v,
                         (long)PBX_PEER_VFS_OBJECTS_CAP);
        }
        g_vfsd.objects = (size_t)m;
        return m != 0L;
    }
    if (strcmp(k, "--fuse-open-max") == 0) {
        long m = vfsd_positive(v, (long)VFSD_FUSE_OPEN_CAP);
        if (m == 0L) {
            pbx_peer_log("vfsd", "bad argument: %s '%s' (1..%ld)", k, v,
                         (long)VFSD_FUSE_OPEN_CAP);
        }
        g_vfsd.fuse.max = (size_t)m;
        return m != 0L;
    }
    bool pid = strcmp(k, "--route-pid") == 0;
    if (!pid && strcmp(k, "--scopes-per-pid") != 0) {
        return true;
    }
    long n = vfsd_positive(v, pid ? (long)INT32_MAX : (long)VFSD_CONNS_MAX);
    if (n == 0L) {
        pbx_peer_log("vfsd", "bad argument: %s '%s' (1..%ld)", k, v,
                     pid ? (long)INT32_MAX : (long)VFSD_CONNS_MAX);
        return false;
    }
    if (pid) {
        g_vfsd.route_pid = (pid_t)n;
    } else {
        g_vfsd.scopes_per_pid = (uint32_t)n;
    }
    return true;
}

/* Sizes the object table for --objects (its storage is static: only the
 * rows in use are touched) and makes room for the descriptors it may
 * hold: each live object keeps its provider end and, for READ, WRITE or
 * CREATE, a file (VFSD_FDS_PER_OBJECT), beside the connections and a
 * margin (VFSD_FDS_BASE). The soft RLIMIT_NOFILE is
 * raised to that, at most to the hard limit; false after a message when
 * the hard limit is too low, so a too-large table fails at startup, never
 * later with EMFILE. */
static bool vfsd_table_start(void)
{
    size_t n = g_vfsd.objects;
    rlim_t want =
        (rlim_t)(VFSD_FDS_BASE + VFSD_CONNS_MAX + n * VFSD_FDS_PER_OBJECT);
    if (!pbx_peer_fdlimit_raise("vfsd", "--objects", n, "objects", want)) {
        return false;
    }
    pbx_peer_objtab_init_cap(&g_vfsd.objs, n);
    for (size_t r = 0; r < n; r++) {
        g_vfsd.data[r] = -1;
        g_vfsd.create_dir[r] = -1;
    }
    return true;
}

/* Checks the command line's shape: returns 0 when it is well formed with
 * *root set, 1 for -h/--help, 2 with a message naming the bad argument. */
static int vfsd_args_check(int argc, char **argv, const char **root)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            return 1;
        }
    }
    for (int i = 1; i < argc; i += 2) {
        if (!vfsd_known(argv[i])) {
            pbx_peer_log("vfsd", "unknown argument '%s' (pbx-vfsd --help)",
                         argv[i]);
            return 2;
        }
        if (i + 1 >= argc) {
            pbx_peer_log("vfsd", "option '%s' needs a value", argv[i]);
            return 2;
        }
        if (strcmp(argv[i], "--root") == 0) {
            *root = argv[i + 1];
        }
        if (!vfsd_value_arg(argv[i], argv[i + 1])) {
            return 2;
        }
    }
    if (*root == NULL) {
        pbx_peer_log("vfsd", "missing --root DIR (pbx-vfsd --help)");
        return 2;
    }
    return 0;
}

/* Parses the command line and sets every endpoint up: returns 0, 1 for
 * -h/--help (usage printed), or 2 with a message on any error. */
static int vfsd_args(int argc, char **argv, int *ready_fd)
{
    const char *root = NULL;
    int st = vfsd_args_check(argc, argv, &root);
    if (st == 1) {
        (void)fputs(vfsd_usage, stdout);
    }
    if (st != 0) {
        return st;
    }
    if (!vfsd_table_start()) {
        return 2;
    }
    g_vfsd.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (g_vfsd.root_fd < 0) {
        pbx_peer_log("vfsd", "--root '%s': %s", root, strerror(errno));
        return 2;
    }
    bool ok = true;
    for (int i = 1; ok && i + 1 < argc; i += 2) {
        const char *k = argv[i];
        if (strcmp(k, "--scope") == 0 || strcmp(k, "--scope-fd") == 0 ||
            strcmp(k, "--lie-scope") == 0) {
            ok = vfsd_endpoint_arg(argv[i + 1], VFSD_KIND_SCOPE,
                                   strcmp(k, "--scope-fd") == 0,
                                   strcmp(k, "--lie-scope") == 0);
        } else if (strcmp(k, "--route-fd") == 0) {
            ok = vfsd_endpoint_arg(argv[i + 1], VFSD_KIND_ROUTE, true, false);
        } else if (strcmp(k, "--ready-fd") == 0) {
            *ready_fd = pbx_peer_io_fd_arg(argv[i + 1]);
            ok = *ready_fd >= 0;
        } else if (strcmp(k, "--attach-fd") == 0) {
            g_vfsd.attach = pbx_peer_io_fd_arg(argv[i + 1]);
            ok = g_vfsd.attach >= 0 &&
                 fcntl(g_vfsd.attach, F_SETFD, FD_CLOEXEC) == 0;
        }
        if (!ok) {
            pbx_peer_log("vfsd", "bad argument: %s '%s'", k, argv[i + 1]);
        }
    }
    return ok ? 0 : 2;
}

int main(int argc, char **argv)
{
    int ready_fd = -1;
    g_vfsd.attach = -1;
    g_vfsd.scopes_per_pid = VFSD_SCOPES_PER_PID;
    g_vfsd.objects = PBX_PEER_VFS_OBJECTS_MAX;
    /* A nonzero incarnation: 0 would read as "no incarnation". This random
     * choice stands unless --incarnation replaces it. */
    for (int i = 0; i < 64 && g_vfsd.incarnation == 0U; i++) {
        if (getrandom(&g_vfsd.incarnation, sizeof(g_vfsd.incarnation), 0) !=
            (ssize_t)sizeof(g_vfsd.incarnation)) {
            g_vfsd.incarnation = (uint16_t)(getpid() ^ (pid_t)i);
        }
    }
    int st = vfsd_args(argc, argv, &ready_fd);
    if (st != 0) {
        return st == 1 ? 0 : 2;
    }
    pbx_peer_log("vfsd",
                 "ready: %zu listener(s), %zu connection(s), "
                 "incarnation %u, %zu object row(s)%s",
                 g_vfsd.nlistens, g_vfsd.nconns, g_vfsd.incarnation,
                 g_vfsd.objs.cap,
                 g_vfsd.attach >= 0 ? ", attach channel open" : "");
    vfsd_fuse_start();
    if (vfsd_loop_start() != 0) {
        pbx_peer_log("vfsd", "epoll_create1 failed: %s", strerror(errno));
        return 1;
    }
    pbx_peer_io_ready(ready_fd);
    /* Serve until killed; every pass blocks in epoll_wait (vfsd_loop.c). */
    for (;;) {
        if (vfsd_loop_pass() != 0) {
            pbx_peer_log("vfsd", "epoll_wait failed: %s", strerror(errno));
            return 1;
        }
    }
}
