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
 * alone); every other call there is refused with a distinct status. The
 * route (from powerboxd) takes DETACH and RETIRE; RETIRE answers the
 * calls already queued on the object with an error status, then cuts the
 * object's connection so that every copy reads its end. When a route
 * closes, every object minted for it is retired the same way: no object
 * outlives the powerboxd that could revoke it (one RETIRE line per object,
 * then a count line). With --attach-fd N the supervisor (`pbx up`) may
 * start vfsd with no route and later send 'L' and a path: vfsd then
 * listens there (mode 0600) for powerboxd's route, exactly as on --route,
 * closing the listener an earlier 'L' made. See docs/HOST.md.
 */
/* O_PATH and accept4 are Linux extensions. */
#define _GNU_SOURCE

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ipc/pbx_ipc.h"
#include "peers/common/pbx_peer_attach.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"
#include "peers/vfsd/vfsd.h"
#include "sha2/pbx_sha2.h"

/* The command line, printed by -h/--help and named in usage errors. */
static const char vfsd_usage[] =
    "usage: pbx-vfsd --root DIR [--scope PATH[=SUBDIR]]... "
    "[--scope-fd N[=SUBDIR]]...\n"
    "                [--lie-scope PATH[=SUBDIR]]... [--route PATH] "
    "[--route-fd N] [--route-pid PID] [--ready-fd N]\n"
    "                [--incarnation N] [--attach-fd N]\n"
    "Serves DIR to powerboxd: every connection to a --scope socket gets one\n"
    "scope of DIR (or its SUBDIR); powerboxd's route (--route, --route-fd)\n"
    "takes DETACH and RETIRE (--route-pid: the process at the far end of a\n"
    "--route-fd pair vfsd made itself). Object ids carry this vfsd's\n"
    "incarnation: RETIRE or DETACH of another's is echoed as absent.\n"
    "--incarnation N (1..65535) sets it; without it, it is random (a\n"
    "restarted vfsd may then repeat a dead one's). --attach-fd N: the\n"
    "supervisor's attach channel; its 'L' PATH makes vfsd listen at PATH\n"
    "for a route (so vfsd may start with no route). See docs/HOST.md.\n";

vfsd g_vfsd;

/* Accepts what listener l has waiting: a scope hand-out or a route. */
static void vfsd_accept(const vfsd_conn *l)
{
    int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0 && l->kind == VFSD_KIND_SCOPE) {
        (void)vfsd_hand_scope(fd, l->dirfd, l->lie);
    } else if (fd >= 0) {
        (void)vfsd_add_conn(fd, l->kind, l->dirfd, 0U, false);
    }
}

/* Closes the route listener an earlier 'L' made, if any, and takes it
 * out of the listeners (routes accepted on it stay). */
static void vfsd_attach_unlisten(void)
{
    for (size_t i = 0; i < g_vfsd.nlistens && g_vfsd.attach_listen >= 0; i++) {
        if (g_vfsd.listens[i].fd == g_vfsd.attach_listen) {
            (void)close(g_vfsd.attach_listen);
            g_vfsd.listens[i] = g_vfsd.listens[g_vfsd.nlistens - 1U];
            g_vfsd.nlistens--;
            g_vfsd.attach_listen = -1;
        }
    }
}

/* Applies the 'L' message m: a fresh private route listener at its path
 * (the previous 'L' listener closed first). Returns NULL when done, else
 * why it was refused (in why, cap bytes). */
static const char *vfsd_attach_listen(const pbx_peer_attach_msg *m, char *why,
                                      size_t cap)
{
    char path[108];
    if (m->nfds != 0U) {
        (void)snprintf(why, cap, "'L' carries %zu descriptor(s), not 0",
                       m->nfds);
        return why;
    }
    if (m->body_len == 0U || m->body_len >= sizeof(path) ||
        memchr(m->body, 0, m->body_len) != NULL) {
        return "bad path (1..107 bytes, no NUL)";
    }
    memcpy(path, m->body, m->body_len);
    path[m->body_len] = '\0';
    vfsd_attach_unlisten();
    if (g_vfsd.nlistens >= VFSD_LISTEN_MAX) {
        return "listener table full";
    }
    int fd = pbx_peer_io_listen_private(path, SOCK_SEQPACKET);
    if (fd < 0) {
        (void)snprintf(why, cap, "bind failed at %s: %s", path,
                       strerror(errno));
        return why;
    }
    g_vfsd.listens[g_vfsd.nlistens++] =
        (vfsd_conn){fd, VFSD_KIND_ROUTE, g_vfsd.root_fd, 0U, false, 0, 0U};
    g_vfsd.attach_listen = fd;
    pbx_peer_log("vfsd", "attach channel: listening for a route at %s", path);
    return NULL;
}

/* Handles what waits on the attach channel: 'L' messages, answered 'l'
 * and 0 or 1; every other op refused. At the channel's end (the
 * supervisor is gone) it is closed and vfsd serves on. */
static void vfsd_attach_input(void)
{
    static pbx_peer_attach_msg m;
    for (int i = 0; i < 8 && pbx_peer_attach_next(&g_vfsd.attach, "vfsd", &m);
         i++) {
        char buf[192];
        const char *why = !m.ok ? "malformed message (truncated, or more than "
                                  "2 descriptors)"
                          : m.op != PBX_PEER_ATTACH_OP_LISTEN
                              ? "op not served by vfsd (only 'L')"
                              : vfsd_attach_listen(&m, buf, sizeof(buf));
        if (why != NULL) {
            pbx_peer_attach_refuse(g_vfsd.attach, &m, "vfsd", why);
        } else if (pbx_peer_attach_answer(g_vfsd.attach, m.op,
                                          PBX_PEER_ATTACH_DONE) != 0) {
            pbx_peer_log("vfsd", "attach channel: answer not sent: %s",
                         strerror(errno));
        }
    }
}

/* The poll set of one round: listeners, connections, the provider ends
 * of live objects (rows[k] and gens[k] name the object polled), then the
 * attach channel (-1, skipped by poll, when there is none). */
typedef struct vfsd_pollset {
    struct pollfd
        p[VFSD_LISTEN_MAX + VFSD_CONNS_MAX + PBX_PEER_VFS_OBJECTS_MAX + 1U];
    size_t rows[PBX_PEER_VFS_OBJECTS_MAX];
    uint32_t gens[PBX_PEER_VFS_OBJECTS_MAX];
    size_t nl;
    size_t nc;
    size_t no;
} vfsd_pollset;

/* Fills the poll set. A live object's provider end is watched for calls
 * (POLLIN, POLLRDHUP) unless muted; POLLHUP and POLLERR are reported
 * whatever the events. */
static void vfsd_pollset_fill(vfsd_pollset *ps)
{
    ps->nl = g_vfsd.nlistens;
    ps->nc = g_vfsd.nconns;
    ps->no = 0;
    for (size_t i = 0; i < ps->nl; i++) {
        ps->p[i] = (struct pollfd){g_vfsd.listens[i].fd, POLLIN, 0};
    }
    for (size_t i = 0; i < ps->nc; i++) {
        ps->p[ps->nl + i] = (struct pollfd){g_vfsd.conns[i].fd, POLLIN, 0};
    }
    for (size_t r = 0; r < PBX_PEER_VFS_OBJECTS_MAX; r++) {
        const pbx_peer_obj *o = &g_vfsd.objs.rows[r];
        if (o->state == PBX_PEER_OBJ_LIVE && o->provider >= 0) {
            short ev = g_vfsd.mute[r] ? (short)0 : (short)(POLLIN | POLLRDHUP);
            ps->rows[ps->no] = r;
            ps->gens[ps->no] = o->gen;
            ps->p[ps->nl + ps->nc + ps->no++] =
                (struct pollfd){o->provider, ev, 0};
        }
    }
    ps->p[ps->nl + ps->nc + ps->no] = (struct pollfd){g_vfsd.attach, POLLIN, 0};
}

/* Handles what the round saw on the objects. A RETIRE served before may
 * have closed a watched end already, and a FOUND may have minted a new
 * object into that row: only the object polled (same row, same
 * generation, still live) is served or hung up. */
static void vfsd_objects(const vfsd_pollset *ps)
{
    for (size_t k = 0; k < ps->no; k++) {
        size_t row = ps->rows[k];
        const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
        short rev = ps->p[ps->nl + ps->nc + k].revents;
        if (rev == 0 || o->state != PBX_PEER_OBJ_LIVE ||
            o->gen != ps->gens[k]) {
            continue;
        }
        if ((rev & (POLLHUP | POLLERR)) != 0) {
            vfsd_hangup(row);
        } else if ((rev & (POLLIN | POLLRDHUP)) != 0) {
            bool empty = vfsd_obj_serve(row);
            /* The writing side was shut and the queue is empty: calls can
             * never come again, and poll would report it every round. */
            g_vfsd.mute[row] = empty && (rev & POLLRDHUP) != 0;
        }
    }
}

/* One poll round over listeners, connections and live objects. */
static int vfsd_round(void)
{
    static vfsd_pollset ps;
    vfsd_pollset_fill(&ps);
    if (poll(ps.p, (nfds_t)(ps.nl + ps.nc + ps.no + 1U), -1) < 0) {
        return errno == EINTR ? 0 : -1;
    }
    for (size_t i = 0; i < ps.nl; i++) {
        if ((ps.p[i].revents & POLLIN) != 0) {
            vfsd_accept(&g_vfsd.listens[i]);
        }
    }
    /* Walk backwards so dropping a connection never skips another. */
    for (size_t k = ps.nc; k > 0U; k--) {
        size_t i = k - 1U;
        if (ps.p[ps.nl + i].revents != 0 && !vfsd_serve(&g_vfsd.conns[i])) {
            vfsd_drop_conn(i);
        }
    }
    vfsd_objects(&ps);
    /* Last: an 'L' changes the listeners this round's indexes name. */
    if (ps.p[ps.nl + ps.nc + ps.no].revents != 0) {
        vfsd_attach_input();
    }
    return 0;
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
                   : vfsd_add_conn(fd, kind, dirfd, 0U, true) != NULL;
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
        "--root",        "--scope",    "--scope-fd", "--lie-scope",
        "--route",       "--route-fd", "--ready-fd", "--route-pid",
        "--incarnation", "--attach-fd"};
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
        if (strcmp(argv[i], "--route-pid") == 0) {
            char *end = NULL;
            long pid = strtol(argv[i + 1], &end, 10);
            if (end == argv[i + 1] || *end != '\0' || pid <= 0 ||
                pid > INT32_MAX) {
                pbx_peer_log("vfsd", "bad argument: --route-pid '%s'",
                             argv[i + 1]);
                return 2;
            }
            g_vfsd.route_pid = (pid_t)pid;
        }
        if (strcmp(argv[i], "--incarnation") == 0 &&
            !vfsd_incarnation_arg(argv[i + 1])) {
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
        } else if (strcmp(k, "--route") == 0 || strcmp(k, "--route-fd") == 0) {
            ok = vfsd_endpoint_arg(argv[i + 1], VFSD_KIND_ROUTE,
                                   strcmp(k, "--route-fd") == 0, false);
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
    g_vfsd.attach = g_vfsd.attach_listen = -1;
    pbx_peer_objtab_init(&g_vfsd.objs);
    for (size_t r = 0; r < PBX_PEER_VFS_OBJECTS_MAX; r++) {
        g_vfsd.data[r] = -1;
    }
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
                 "incarnation %u%s",
                 g_vfsd.nlistens, g_vfsd.nconns, g_vfsd.incarnation,
                 g_vfsd.attach >= 0 ? ", attach channel open" : "");
    pbx_peer_io_ready(ready_fd);
    /* Serve until killed; every round blocks in poll. */
    for (;;) {
        if (vfsd_round() != 0) {
            pbx_peer_log("vfsd", "poll failed: %s", strerror(errno));
            return 1;
        }
    }
}
