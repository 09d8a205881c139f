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
#include "sha2/pbx_sha2.h"

#define VFSD_LISTEN_MAX 9U
/* Scope and route connections: every scope handed out stays one until
 * the last copy of it is closed, so 64 concurrent clients with a scope
 * each need more than 64 (run.py many-clients). */
#define VFSD_CONNS_MAX      256U
#define VFSD_COMPONENTS_MAX 256U
/* Calls served per object per poll round: a holder that floods its object
 * delays only itself, the rest waits for the next round. */
#define VFSD_OBJ_CALLS_PER_ROUND 8U
/* Calls still queued on an object at RETIRE that get an error reply. */
#define VFSD_OBJ_DRAIN_MAX 64U
/* Rounds of refusals or drops logged per object before it goes quiet. */
#define VFSD_OBJ_LOGS_MAX 8U
/* Directory entries one LIST call may step over (its cookie included). */
#define VFSD_LIST_SCAN_MAX (1U << 20)
/* Short transfers one READ or WRITE call retries before it answers. */
#define VFSD_IO_TRIES 8U

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

/* The local part of an object id (the provider socket's inode); the top
 * 16 bits carry the incarnation. */
#define VFSD_LOCAL_ID_MAX ((UINT64_C(1) << 48) - 1U)

/* What a listening socket or connection serves. */
enum { VFSD_KIND_ROUTE = 1, VFSD_KIND_SCOPE = 2 };

/* One listening socket or connection. */
typedef struct vfsd_conn {
    int fd;
    int kind;
    int dirfd;         /* the scope's subtree (scopes only; shared) */
    uint64_t scope_id; /* scope connections: inode of the end handed out */
    bool lie;          /* fault switch (--lie-scope): misname the scope */
    pid_t pid;         /* routes: the process at the other end */
    uint64_t serial;   /* routes: which route this is (never reused) */
} vfsd_conn;

/* The whole daemon state (static storage). */
typedef struct vfsd {
    int root_fd;
    vfsd_conn listens[VFSD_LISTEN_MAX];
    size_t nlistens;
    vfsd_conn conns[VFSD_CONNS_MAX];
    size_t nconns;
    pbx_peer_objtab objs;
    /* What each row's object names, observed when vfsd opened it. */
    pbx_peer_vfs_stat stats[PBX_PEER_VFS_OBJECTS_MAX];
    /* Rows whose holders shut their writing side: no call can come any
     * more, so the provider end is watched for hang-up only. */
    bool mute[PBX_PEER_VFS_OBJECTS_MAX];
    /* Rounds whose refusals or drops were logged, per row: a holder that
     * floods its object cannot flood the log beyond VFSD_OBJ_LOGS_MAX. */
    uint32_t logs[PBX_PEER_VFS_OBJECTS_MAX];
    /* What each row's object was granted, the file opened for it (-1:
     * none, STAT only) and the route it was minted for. */
    pbx_peer_vfs_grant grant[PBX_PEER_VFS_OBJECTS_MAX];
    int data[PBX_PEER_VFS_OBJECTS_MAX];
    uint64_t owner[PBX_PEER_VFS_OBJECTS_MAX];
    uint64_t routes_made;
    /* This vfsd's incarnation: --incarnation's, else random; nonzero,
     * chosen at start, carried
     * in the top 16 bits of every object id it mints, so a RETIRE or
     * DETACH of another incarnation's object is known absent, exactly. */
    uint16_t incarnation;
    /* --route-pid: the process at the far end of a --route-fd pair the
     * supervisor had this vfsd make (a restart), or 0: SO_PEERCRED. */
    pid_t route_pid;
    /* --attach-fd: the supervisor's attach channel (-1: none, or closed
     * at its end), and the route listener its last 'L' made (-1: none). */
    int attach;
    int attach_listen;
    pbx_peer_msg msg;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t obj_in[PBX_PEER_VFS_CALL_BYTES_MAX + 1U];
    uint8_t obj_out[PBX_PEER_VFS_REPLY_BYTES_MAX];
} vfsd;

static vfsd g_vfsd;

/* Maps a lookup errno to the observation pbx_peer_vfs_judge takes. */
static pbx_peer_lookup vfsd_errno_lookup(int e)
{
    switch (e) {
    case ENOENT:
        return PBX_PEER_LOOKUP_MISSING;
    case EXDEV:
        return PBX_PEER_LOOKUP_ESCAPE;
    case ELOOP:
        return PBX_PEER_LOOKUP_LOOP;
    case EACCES:
    case EPERM:
        return PBX_PEER_LOOKUP_ACCESS;
    case ENOTDIR:
        return PBX_PEER_LOOKUP_NOTDIR;
    default:
        return PBX_PEER_LOOKUP_OTHER;
    }
}

/* Maps a file mode to a file type. */
static pbx_peer_ftype vfsd_ftype(mode_t mode)
{
    if (S_ISREG(mode)) {
        return PBX_PEER_FT_REGULAR;
    }
    if (S_ISDIR(mode)) {
        return PBX_PEER_FT_DIRECTORY;
    }
    if (S_ISCHR(mode) || S_ISBLK(mode)) {
        return PBX_PEER_FT_DEVICE;
    }
    if (S_ISSOCK(mode)) {
        return PBX_PEER_FT_SOCKET;
    }
    return S_ISLNK(mode) ? PBX_PEER_FT_SYMLINK : PBX_PEER_FT_OTHER;
}

/*
 * The careful equivalent of RESOLVE_BENEATH for kernels without openat2:
 * one component at a time, never following any symlink (a symlink in the
 * middle, or a followed final one, is refused with ELOOP). ".." never gets
 * here: the selector check rejected it.
 */
static int vfsd_walk(int dirfd, char *path, bool follow)
{
    int cur = dirfd;
    char *save = NULL;
    char *comp = strtok_r(path, "/", &save);
    for (size_t i = 0; comp != NULL && i < VFSD_COMPONENTS_MAX; i++) {
        int next = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        if (cur != dirfd) {
            (void)close(cur);
        }
        if (next < 0) {
            errno = e;
            return -1;
        }
        cur = next;
        comp = strtok_r(NULL, "/", &save);
        struct stat st;
        if (fstat(cur, &st) == 0 && S_ISLNK(st.st_mode) &&
            (comp != NULL || follow)) {
            (void)close(cur);
            errno = ELOOP;
            return -1;
        }
    }
    if (cur == dirfd) {
        errno = EINVAL;
        return -1;
    }
    return cur;
}

/*
 * Opens the file the O_PATH handle pfd names for an object's data, the way
 * mode says (reading only, writing only, or as a directory), through
 * /proc/self/fd: the very file the confined lookup found, with the
 * kernel's permission check, and never created or truncated. The opened
 * file must be the one looked up (device and inode). Returns the
 * descriptor, or -1 with errno set.
 */
static int vfsd_open_data(int pfd, pbx_peer_vfs_open mode,
                          const struct stat *sb)
{
    int flags = O_CLOEXEC | O_NOCTTY | O_NONBLOCK;
    if (mode == PBX_PEER_VFS_OPEN_WRITE) {
        flags |= O_WRONLY;
    } else if (mode == PBX_PEER_VFS_OPEN_LIST) {
        flags |= O_RDONLY | O_DIRECTORY;
    } else {
        flags |= O_RDONLY;
    }
    char proc[64];
    (void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
    int fd = open(proc, flags);
    struct stat now;
    if (fd >= 0 && (fstat(fd, &now) != 0 || now.st_dev != sb->st_dev ||
                    now.st_ino != sb->st_ino)) {
        (void)close(fd);
        errno = EXDEV;
        fd = -1;
    }
    return fd;
}

/* Looks path up beneath dirfd; *ft and *st (device, inode and size of
 * what was opened) are set when LOOKUP_OK is returned. When mode asks for
 * data and the file is of the type it needs (a regular file to read or
 * write, a directory to list), the file is opened for that into *data;
 * *data stays -1 otherwise. */
static pbx_peer_lookup vfsd_lookup(int dirfd, char *path, bool follow,
                                   pbx_peer_vfs_open mode, int *data,
                                   pbx_peer_ftype *ft, pbx_peer_vfs_stat *st)
{
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = O_PATH | O_CLOEXEC | (follow ? 0U : (uint64_t)O_NOFOLLOW);
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
    if (fd < 0 && errno == ENOSYS) {
        fd = vfsd_walk(dirfd, path, follow);
    }
    if (fd < 0) {
        return vfsd_errno_lookup(errno);
    }
    struct stat sb;
    pbx_peer_lookup lk = PBX_PEER_LOOKUP_OK;
    if (fstat((int)fd, &sb) != 0) {
        lk = PBX_PEER_LOOKUP_OTHER;
    } else {
        *ft = vfsd_ftype(sb.st_mode);
        st->dev = (uint64_t)sb.st_dev;
        st->ino = (uint64_t)sb.st_ino;
        st->size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0U;
        bool fits = mode == PBX_PEER_VFS_OPEN_LIST ? S_ISDIR(sb.st_mode)
                                                   : S_ISREG(sb.st_mode);
        if (mode != PBX_PEER_VFS_OPEN_PATH && fits) {
            *data = vfsd_open_data((int)fd, mode, &sb);
            lk = *data >= 0 ? PBX_PEER_LOOKUP_OK : vfsd_errno_lookup(errno);
        }
    }
    (void)close((int)fd);
    return lk;
}

/* Sends the encoded reply of n bytes (with cap unless negative) on fd,
 * echoing the current request's seq. */
static void vfsd_send(int fd, size_t n, int cap)
{
    if (pbx_peer_io_reply(fd, &g_vfsd.msg, g_vfsd.out, n, cap) != 0) {
        pbx_peer_log("vfsd", "reply send failed: %s", strerror(errno));
    }
}

/* Replies to the current message with an error status. */
static void vfsd_fail(int fd, uint32_t status, const char *what)
{
    pbx_peer_log("vfsd", "%s: %s", what, pbx_peer_status_text(status));
    (void)pbx_peer_io_reply_status(fd, &g_vfsd.msg, status);
}

/* The table entry of the object a FOUND answer mints. */
typedef struct vfsd_mint {
    pbx_peer_vfs_stat named; /* what the object names */
    pbx_peer_vfs_grant grant;
    int data;       /* the file opened for the grant, or -1 (owned) */
    uint64_t owner; /* the route the RESOLVE came from */
} vfsd_mint;

/* Closes the data descriptor of every row that is no longer live: a
 * retired or hung-up object serves nothing, so it keeps no file open. */
static void vfsd_data_sweep(void)
{
    for (size_t r = 0; r < PBX_PEER_VFS_OBJECTS_MAX; r++) {
        if (g_vfsd.objs.rows[r].state != PBX_PEER_OBJ_LIVE &&
            g_vfsd.data[r] >= 0) {
            (void)close(g_vfsd.data[r]);
            g_vfsd.data[r] = -1;
        }
    }
}

/*
 * Mints the object connection for a FOUND answer and replies with its
 * SEND end. vfsd keeps the provider end; cutting it revokes every copy.
 * mt->data is owned from here on (kept by the row, or closed).
 */
static void vfsd_found(vfsd_conn *c, pbx_ipc_resolve_reply *rep,
                       const vfsd_mint *mt)
{
    size_t row = 0;
    uint32_t st = pbx_peer_objtab_reserve(&g_vfsd.objs, &row);
    int sv[2] = {-1, -1};
    if (st == 0U &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        st = PBX_PEER_E_INTERNAL;
    }
    uint64_t id = st == 0U ? pbx_peer_io_inode(sv[1]) : 0U;
    if (st == 0U && (id == 0U || id > VFSD_LOCAL_ID_MAX)) {
        st = PBX_PEER_E_INTERNAL;
    }
    if (st != 0U) {
        pbx_peer_io_close_all(sv, 2);
        if (mt->data >= 0) {
            (void)close(mt->data);
        }
        vfsd_fail(c->fd, st, "RESOLVE");
        return;
    }
    vfsd_data_sweep();
    rep->object.id = ((uint64_t)g_vfsd.incarnation << 48) | id;
    rep->object.gen = pbx_peer_objtab_mint(&g_vfsd.objs, row, id, c->scope_id,
                                           rep->object_class, sv[0]);
    g_vfsd.stats[row] = mt->named;
    g_vfsd.grant[row] = mt->grant;
    g_vfsd.data[row] = mt->data;
    g_vfsd.owner[row] = mt->owner;
    g_vfsd.mute[row] = false;
    g_vfsd.logs[row] = 0U;
    /* --lie-scope: name another scope than the one resolved through, so
     * that powerboxd's identity check can be seen to refuse it. */
    rep->scope_id = c->lie ? c->scope_id + 1U : c->scope_id;
    size_t n = 0;
    pbx_err e = pbx_ipc_resolve_reply_encode(
        g_vfsd.msg.frame.request, rep, g_vfsd.out, sizeof(g_vfsd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    if (pbx_peer_io_reply(c->fd, &g_vfsd.msg, g_vfsd.out, n, sv[1]) != 0) {
        /* Nobody holds the object: cut it and free the row at once. */
        int prov = -1;
        (void)pbx_peer_objtab_retire(&g_vfsd.objs, id, rep->object.gen,
                                     c->scope_id, rep->object_class, &prov);
        g_vfsd.objs.rows[row].state = PBX_PEER_OBJ_FREE;
        (void)close(sv[0]);
        vfsd_data_sweep();
        pbx_peer_log("vfsd", "RESOLVE reply failed: %s", strerror(errno));
    } else {
        pbx_peer_log(
            "vfsd",
            "RESOLVE found object %llu gen %u scope %llu "
            "(operation %s, class %s, file %s)%s",
            (unsigned long long)rep->object.id, rep->object.gen,
            (unsigned long long)rep->scope_id,
            pbx_peer_name_of(PBX_PEER_NAMES_OPERATION, mt->grant.operation),
            pbx_peer_name_of(PBX_PEER_NAMES_CLASS, mt->grant.object_class),
            mt->data >= 0 ? "open" : "not open (stat only)",
            c->lie ? " (a lie: --lie-scope)" : "");
    }
    (void)close(sv[1]);
}

/* The route whose process sent the RESOLVE just received (pid from its
 * SCM_CREDENTIALS, 0 when none came), or NULL: only the process at the
 * other end of a route (powerboxd) may RESOLVE. */
static const vfsd_conn *vfsd_route_of(pid_t pid)
{
    for (size_t i = 0; pid > 0 && i < g_vfsd.nconns; i++) {
        const vfsd_conn *r = &g_vfsd.conns[i];
        if (r->kind == VFSD_KIND_ROUTE && r->pid == pid) {
            return r;
        }
    }
    return NULL;
}

/* Logs and refuses a RESOLVE that no route's process sent. */
static void vfsd_not_route(const vfsd_conn *c, pid_t pid)
{
    pid_t route = 0;
    for (size_t i = 0; i < g_vfsd.nconns && route == 0; i++) {
        if (g_vfsd.conns[i].kind == VFSD_KIND_ROUTE) {
            route = g_vfsd.conns[i].pid;
        }
    }
    pbx_peer_log("vfsd",
                 "RESOLVE on scope %llu refused: sent by pid %ld, not by the "
                 "route's process (pid %ld); nothing minted",
                 (unsigned long long)c->scope_id, (long)pid, (long)route);
    (void)pbx_peer_io_reply_status(c->fd, &g_vfsd.msg, PBX_E_PEER_NOT_ROUTE);
}

/* RESOLVE through scope connection c, whose message came from pid. */
static void vfsd_resolve(vfsd_conn *c, pid_t pid)
{
    const vfsd_conn *route = vfsd_route_of(pid);
    if (route == NULL) {
        vfsd_not_route(c, pid);
        return;
    }
    pbx_ipc_resolve rq;
    pbx_err e = pbx_ipc_resolve_decode(&g_vfsd.msg.frame, &rq);
    if (e != PBX_OK) {
        vfsd_fail(c->fd, (uint32_t)e, "RESOLVE malformed");
        return;
    }
    uint8_t d[PBX_SHA2_DIGEST_BYTES];
    if (pbx_sha2_digest(rq.selector, rq.selector_len, d) != PBX_OK ||
        !pbx_mem_equal(d, rq.selector_digest, sizeof(d))) {
        vfsd_fail(c->fd, PBX_PEER_E_DIGEST, "RESOLVE");
        return;
    }
    static char path[PBX_PEER_VFS_PATH_BYTES_MAX];
    pbx_peer_sel sel = pbx_peer_vfs_selector_check(rq.selector, rq.selector_len,
                                                   path, sizeof(path));
    pbx_peer_lookup lk = PBX_PEER_LOOKUP_OTHER;
    pbx_peer_ftype ft = PBX_PEER_FT_OTHER;
    vfsd_mint mt = {
        {0U, 0U, 0U}, {rq.operation, rq.object_class}, -1, route->serial};
    if (sel == PBX_PEER_SEL_OK &&
        pbx_peer_vfs_class_allows(rq.operation, rq.object_class)) {
        lk = vfsd_lookup(
            c->dirfd, path, pbx_peer_vfs_follow_final(rq.object_class),
            pbx_peer_vfs_open_for(mt.grant), &mt.data, &ft, &mt.named);
    }
    pbx_peer_vfs_verdict v =
        pbx_peer_vfs_judge(rq.operation, rq.object_class, sel, lk, ft);
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    rep.result = v.result;
    rep.object_class = v.object_class;
    rep.operation = rq.operation;
    memcpy(rep.selector_digest, rq.selector_digest, sizeof(d));
    if (v.result == PBX_IPC_RESOLVE_FOUND) {
        vfsd_found(c, &rep, &mt);
        return;
    }
    if (mt.data >= 0) {
        (void)close(mt.data);
    }
    pbx_peer_log("vfsd", "RESOLVE %s (selector: %s, lookup %d)",
                 pbx_peer_name_of(PBX_PEER_NAMES_RESULT, v.result),
                 pbx_peer_sel_text(sel), (int)lk);
    size_t n = 0;
    e = pbx_ipc_resolve_reply_encode(g_vfsd.msg.frame.request, &rep, g_vfsd.out,
                                     sizeof(g_vfsd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    vfsd_send(c->fd, n, -1);
}

/* Whether wire object id was minted by another incarnation of vfsd (its
 * top 16 bits are not ours): such an object is provably absent here, its
 * connections died with the vfsd that minted it. Otherwise *local is the
 * id the table knows (the inode). */
static bool vfsd_foreign(uint64_t id, uint64_t *local)
{
    *local = id & VFSD_LOCAL_ID_MAX;
    return (uint16_t)(id >> 48) != g_vfsd.incarnation;
}

/* DETACH on the route: authenticate the alias by inode, then drop it. */
static void vfsd_detach(int fd)
{
    pbx_peer_msg *m = &g_vfsd.msg;
    pbx_ipc_detach rq;
    pbx_err e = pbx_ipc_detach_decode(&m->frame, &rq);
    uint64_t seen = m->nfds == 1U ? pbx_peer_io_inode(m->fds[0]) : 0U;
    pbx_peer_io_close_all(m->fds, m->nfds);
    if (e != PBX_OK) {
        vfsd_fail(fd, (uint32_t)e, "DETACH malformed");
        return;
    }
    size_t row = 0;
    uint64_t local = 0;
    bool absent = vfsd_foreign(rq.object.id, &local);
    uint32_t st = absent ? 0U
                         : pbx_peer_objtab_detach_check(
                               &g_vfsd.objs, local, rq.object.gen, seen, &row);
    if (st != 0U) {
        vfsd_fail(fd, st, "DETACH");
        return;
    }
    if (!absent) {
        g_vfsd.objs.rows[row].detached++;
    }
    size_t n = 0;
    e = pbx_ipc_detach_reply_encode(m->frame.request, &rq, g_vfsd.out,
                                    sizeof(g_vfsd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    /* Logged by the whole id it was named by (as RESOLVE logged it). */
    pbx_peer_log("vfsd", "DETACH object %llu gen %u%s",
                 (unsigned long long)rq.object.id, rq.object.gen,
                 absent ? ": absent (another vfsd incarnation minted it)" : "");
    vfsd_send(fd, n, -1);
}

/* Receives one call queued on object connection fd without waiting into
 * g_vfsd.obj_in. Returns its length, 0 when nothing is queued (or an
 * empty message was), -1 on a failure. Descriptors that came with it are
 * deleted by the kernel (no control buffer is given), which *fds
 * reports; *cut reports a message longer than any object call. */
static ssize_t vfsd_obj_recv(int fd, bool *fds, bool *cut)
{
    struct iovec iov = {g_vfsd.obj_in, sizeof(g_vfsd.obj_in)};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    ssize_t r = recvmsg(fd, &mh, MSG_DONTWAIT);
    if (r < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0
                                                                         : -1;
    }
    *fds = (mh.msg_flags & MSG_CTRUNC) != 0;
    *cut = (mh.msg_flags & MSG_TRUNC) != 0 ||
           (size_t)r > PBX_PEER_VFS_CALL_BYTES_MAX;
    return r;
}

/* The name of an object call op for the log: never a number. */
static const char *vfsd_obj_op_name(uint16_t op)
{
    switch (op) {
    case PBX_PEER_OP_OBJ_STAT:
        return "stat";
    case PBX_PEER_OP_OBJ_READ:
        return "read";
    case PBX_PEER_OP_OBJ_LIST:
        return "list";
    case PBX_PEER_OP_OBJ_WRITE:
        return "write";
    default:
        return "no object operation";
    }
}

/* The current size of row's file (what it named at RESOLVE when no file
 * is open for it), or -1 when fstat fails. */
static int64_t vfsd_obj_size(size_t row)
{
    struct stat sb;
    if (g_vfsd.data[row] < 0) {
        return (int64_t)g_vfsd.stats[row].size;
    }
    if (fstat(g_vfsd.data[row], &sb) != 0) {
        return -1;
    }
    return sb.st_size > 0 ? (int64_t)sb.st_size : 0;
}

/* READ or WRITE of call on row's file; the bytes move between the file
 * and body. Returns the status and the bytes moved in *done. */
static uint32_t vfsd_obj_io(size_t row, const pbx_peer_vfs_call *call,
                            uint8_t *body, size_t *done)
{
    int64_t size = vfsd_obj_size(row);
    if (size < 0) {
        return (uint32_t)PBX_E_OBJ_IO;
    }
    uint32_t st = pbx_peer_vfs_obj_range(call, (uint64_t)size);
    bool wr = call->op == PBX_PEER_OP_OBJ_WRITE;
    size_t n = 0;
    for (size_t i = 0; st == 0U && n < call->length && i < VFSD_IO_TRIES; i++) {
        off_t at = (off_t)(call->offset + n);
        ssize_t r =
            wr ? pwrite(g_vfsd.data[row], call->data + n, call->length - n, at)
               : pread(g_vfsd.data[row], body + n, call->length - n, at);
        if (r < 0 && errno != EINTR) {
            st = (uint32_t)PBX_E_OBJ_IO;
        }
        if (r == 0) {
            break; /* the end of the file: a short READ */
        }
        n += r > 0 ? (size_t)r : 0U;
    }
    *done = n;
    return st;
}

/* One directory entry's name from a getdents64 record at rec (reclen
 * bytes); false when the record is malformed. */
static bool vfsd_dirent_name(const uint8_t *rec, size_t reclen,
                             const uint8_t **name, size_t *len)
{
    /* linux_dirent64: u64 ino, s64 off, u16 reclen, u8 type, name. */
    const size_t name_at = 19U;
    if (reclen <= name_at) {
        return false;
    }
    const uint8_t *end = memchr(rec + name_at, 0, reclen - name_at);
    if (end == NULL) {
        return false;
    }
    *name = rec + name_at;
    *len = (size_t)(end - *name);
    return true;
}

/* Fills page p with the entries of directory fd from entry cookie on
 * ("." and ".." are no entries). Stores the cookie of the first entry
 * that did not fit in *next (0: none left). Returns the status. */
static uint32_t vfsd_list(int fd, uint32_t cookie, pbx_peer_vfs_page *p,
                          uint32_t *next)
{
    static uint8_t buf[8192];
    uint32_t idx = 0;
    *next = 0;
    if (lseek(fd, 0, SEEK_SET) != 0) {
        return (uint32_t)PBX_E_OBJ_IO;
    }
    for (size_t round = 0; round < VFSD_LIST_SCAN_MAX; round++) {
        long got = syscall(SYS_getdents64, fd, buf, sizeof(buf));
        if (got < 0) {
            return (uint32_t)PBX_E_OBJ_IO;
        }
        if (got == 0) {
            return idx < cookie ? (uint32_t)PBX_E_OBJ_RANGE : 0U;
        }
        for (size_t at = 0; at + 19U < (size_t)got;) {
            uint16_t reclen = 0;
            memcpy(&reclen, buf + at + 16U, sizeof(reclen));
            const uint8_t *name = NULL;
            size_t len = 0;
            if (reclen == 0U || at + reclen > (size_t)got ||
                !vfsd_dirent_name(buf + at, reclen, &name, &len) ||
                idx >= VFSD_LIST_SCAN_MAX) {
                return (uint32_t)PBX_E_OBJ_IO;
            }
            at += reclen;
            if (!pbx_peer_vfs_name_ok(name, len)) {
                continue;
            }
            if (idx >= cookie && !pbx_peer_vfs_page_add(p, name, len)) {
                *next = idx;
                return 0U;
            }
            idx++;
        }
    }
    return (uint32_t)PBX_E_OBJ_IO;
}

/* Serves call (judged, status 0) on live row into g_vfsd.obj_out; returns
 * the reply length, or 0 with call->status set to the refusal. */
static size_t vfsd_obj_do(size_t row, pbx_peer_vfs_call *call)
{
    uint8_t *out = g_vfsd.obj_out;
    uint8_t *body = out + PBX_IPC_HEADER_BYTES;
    size_t cap = sizeof(g_vfsd.obj_out);
    size_t n = 0;
    size_t len = 0;
    pbx_err e = PBX_OK;
    if (call->op == PBX_PEER_OP_OBJ_STAT) {
        pbx_peer_vfs_stat st = g_vfsd.stats[row];
        int64_t size = vfsd_obj_size(row);
        st.size = size >= 0 ? (uint64_t)size : st.size;
        e = pbx_peer_vfs_obj_reply_encode(call, &st, out, cap, &len);
    } else if (call->op == PBX_PEER_OP_OBJ_LIST) {
        pbx_peer_vfs_page p = {body + PBX_PEER_VFS_LIST_HEAD_BYTES,
                               call->length, 0U, 0U};
        uint32_t next = 0;
        call->status = vfsd_list(g_vfsd.data[row], call->cookie, &p, &next);
        pbx_le_put32(body, next);
        pbx_le_put32(body + 4, p.count);
        n = PBX_PEER_VFS_LIST_HEAD_BYTES + p.used;
    } else {
        call->status = vfsd_obj_io(row, call, body, &n);
        if (call->op == PBX_PEER_OP_OBJ_WRITE) {
            pbx_le_put32(body, (uint32_t)n);
            n = PBX_PEER_VFS_WRITE_REPLY_BYTES;
        }
    }
    if (call->status != 0U) {
        return 0U;
    }
    if (call->op != PBX_PEER_OP_OBJ_STAT) {
        e = pbx_peer_vfs_obj_reply_head(call, n, out, cap, &len);
    }
    PBX_ASSERT(e == PBX_OK);
    return len;
}

/* What one round did on one object, logged once per round (a holder
 * that floods its object cannot flood the log). */
typedef struct vfsd_tally {
    size_t served;
    size_t refused;
    size_t ignored;
    size_t dropped;
    uint16_t last_op;
    uint32_t last_status;
} vfsd_tally;

/*
 * Answers the call of len bytes in g_vfsd.obj_in received on the provider
 * end fd of an object: live row's (row < 0 once it is retired: every call
 * is then refused). fds and cut are what vfsd_obj_recv reported. The
 * reply is sent without waiting: a holder that does not read its replies
 * loses them, vfsd never blocks on it.
 */
static void vfsd_obj_answer(int fd, long row, size_t len, bool fds, bool cut,
                            vfsd_tally *t)
{
    pbx_peer_vfs_call call;
    const pbx_peer_vfs_grant *g = row >= 0 ? &g_vfsd.grant[row] : NULL;
    size_t in = len < sizeof(g_vfsd.obj_in) ? len : sizeof(g_vfsd.obj_in);
    if (!pbx_peer_vfs_obj_call_judge(g_vfsd.obj_in, in, fds, g, &call)) {
        t->ignored++;
        return;
    }
    if (cut && call.status != (uint32_t)PBX_E_OBJ_RETIRED &&
        call.status != (uint32_t)PBX_E_OBJ_NO_OP) {
        call.status = (uint32_t)PBX_E_OBJ_LENGTH;
    }
    size_t n = call.status == 0U ? vfsd_obj_do((size_t)row, &call) : 0U;
    if (call.status != 0U) {
        pbx_err e = pbx_peer_vfs_obj_reply_encode(&call, NULL, g_vfsd.obj_out,
                                                  sizeof(g_vfsd.obj_out), &n);
        PBX_ASSERT(e == PBX_OK);
        t->refused++;
        t->last_op = call.op;
        t->last_status = call.status;
    } else {
        t->served++;
    }
    if (send(fd, g_vfsd.obj_out, n, MSG_DONTWAIT | MSG_NOSIGNAL) !=
        (ssize_t)n) {
        t->dropped++;
    }
}

/* The whole wire id of local id (the inode of the provider end): what
 * powerboxd, ttyd and procd name the object by, so vfsd's log lines can
 * be matched with theirs. */
static unsigned long long vfsd_wire(uint64_t local)
{
    return (unsigned long long)(((uint64_t)g_vfsd.incarnation << 48) | local);
}

/* Logs what a round did on object id.gen, except plain service; *logs
 * counts the rounds logged for it (NULL: always log). */
static void vfsd_obj_log(uint64_t id, uint32_t gen, const vfsd_tally *t,
                         uint32_t *logs)
{
    if ((t->refused == 0U && t->ignored == 0U && t->dropped == 0U) ||
        (logs != NULL && *logs > VFSD_OBJ_LOGS_MAX)) {
        return;
    }
    if (logs != NULL && ++*logs > VFSD_OBJ_LOGS_MAX) {
        pbx_peer_log("vfsd",
                     "object %llu gen %u: further refusals and "
                     "drops not logged",
                     vfsd_wire(id), gen);
        return;
    }
    if (t->refused != 0U) {
        pbx_peer_log("vfsd",
                     "object %llu gen %u: %zu call(s) refused, the "
                     "last a %s: %s",
                     vfsd_wire(id), gen, t->refused,
                     vfsd_obj_op_name(t->last_op),
                     pbx_peer_status_text(t->last_status));
    }
    if (t->ignored != 0U) {
        pbx_peer_log("vfsd",
                     "object %llu gen %u: %zu message(s) that are no "
                     "call dropped",
                     vfsd_wire(id), gen, t->ignored);
    }
    if (t->dropped != 0U) {
        pbx_peer_log("vfsd",
                     "object %llu gen %u: %zu repl(ies) not sent "
                     "(the holder reads none)",
                     vfsd_wire(id), gen, t->dropped);
    }
}

/* Serves at most VFSD_OBJ_CALLS_PER_ROUND calls queued on live row's
 * object; returns true when its queue was found empty. */
static bool vfsd_obj_serve(size_t row)
{
    const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
    vfsd_tally t;
    memset(&t, 0, sizeof(t));
    bool empty = false;
    for (size_t i = 0; i < VFSD_OBJ_CALLS_PER_ROUND && !empty; i++) {
        bool fds = false;
        bool cut = false;
        ssize_t r = vfsd_obj_recv(o->provider, &fds, &cut);
        if (r < 0) {
            pbx_peer_log("vfsd", "object %llu: receive failed: %s",
                         vfsd_wire(o->id), strerror(errno));
        }
        empty = r <= 0;
        if (!empty) {
            vfsd_obj_answer(o->provider, (long)row, (size_t)r, fds, cut, &t);
        }
    }
    vfsd_obj_log(o->id, o->gen, &t, &g_vfsd.logs[row]);
    return empty;
}

/* RETIRE of object id.gen whose provider end is fd: the calls already
 * queued on it (at most VFSD_OBJ_DRAIN_MAX) are refused with an error
 * status before the end is cut, so that a holder waiting for a reply gets
 * one; its next read then finds the end of the connection. */
static void vfsd_obj_drain(int fd, uint64_t id, uint32_t gen)
{
    vfsd_tally t;
    memset(&t, 0, sizeof(t));
    for (size_t i = 0; i < VFSD_OBJ_DRAIN_MAX; i++) {
        bool fds = false;
        bool cut = false;
        ssize_t r = vfsd_obj_recv(fd, &fds, &cut);
        if (r <= 0) {
            break;
        }
        vfsd_obj_answer(fd, -1, (size_t)r, fds, cut, &t);
    }
    vfsd_obj_log(id, gen, &t, NULL);
}

/* Drains and cuts provider end prov of a retired object, then closes the
 * files of every row no longer live. */
static void vfsd_obj_cut(int prov, uint64_t id, uint32_t gen)
{
    if (prov >= 0) {
        vfsd_obj_drain(prov, id, gen);
        (void)shutdown(prov, SHUT_RDWR);
        (void)close(prov);
    }
    vfsd_data_sweep();
}

/* The route of serial closed: every object minted for it is retired at
 * once (its queued calls refused, its connection cut), so that no object
 * outlives the powerboxd that could revoke it. Logged one line per
 * object, then once with the count. */
static void vfsd_route_lost(uint64_t serial, pid_t pid)
{
    size_t n = 0;
    for (size_t r = 0; r < PBX_PEER_VFS_OBJECTS_MAX; r++) {
        pbx_peer_obj *o = &g_vfsd.objs.rows[r];
        if (o->state != PBX_PEER_OBJ_LIVE || g_vfsd.owner[r] != serial) {
            continue;
        }
        int prov = -1;
        uint64_t id = o->id;
        uint32_t gen = o->gen;
        if (pbx_peer_objtab_retire(&g_vfsd.objs, id, gen, o->scope_id,
                                   o->object_class, &prov) == 0U) {
            vfsd_obj_cut(prov, id, gen);
            /* The per-object record of a dead powerboxd's grants. */
            pbx_peer_log("vfsd",
                         "RETIRE object %llu gen %u: route to pid %ld closed",
                         vfsd_wire(id), gen, (long)pid);
            n++;
        }
    }
    vfsd_data_sweep();
    pbx_peer_log("vfsd",
                 "route to pid %ld closed: %zu object(s) minted for it "
                 "retired",
                 (long)pid, n);
}

/* RETIRE on the route: cut the provider end so every copy dies. */
static void vfsd_retire(int fd)
{
    pbx_ipc_retire rq;
    pbx_err e = pbx_ipc_retire_decode(&g_vfsd.msg.frame, &rq);
    if (e != PBX_OK) {
        vfsd_fail(fd, (uint32_t)e, "RETIRE malformed");
        return;
    }
    int prov = -1;
    uint64_t local = 0;
    bool absent = vfsd_foreign(rq.object.id, &local);
    uint32_t st =
        absent ? 0U
               : pbx_peer_objtab_retire(&g_vfsd.objs, local, rq.object.gen,
                                        rq.scope_id, rq.object_class, &prov);
    if (st != 0U) {
        vfsd_fail(fd, st, "RETIRE");
        return;
    }
    if (!absent) {
        vfsd_obj_cut(prov, local, rq.object.gen);
    }
    size_t n = 0;
    e = pbx_ipc_retire_reply_encode(g_vfsd.msg.frame.request, &rq, g_vfsd.out,
                                    sizeof(g_vfsd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    pbx_peer_log("vfsd", "RETIRE object %llu gen %u%s",
                 (unsigned long long)rq.object.id, rq.object.gen,
                 absent      ? ": absent (another vfsd incarnation minted it)"
                 : prov >= 0 ? ""
                             : " (no copy left to cut)");
    vfsd_send(fd, n, -1);
}

/* Control buffer for the sender's credentials and PBX_PEER_IO_FDS_MAX
 * descriptors, suitably aligned. */
typedef union vfsd_cbuf {
    char buf[CMSG_SPACE(sizeof(struct ucred)) +
             CMSG_SPACE(sizeof(int) * PBX_PEER_IO_FDS_MAX)];
    struct cmsghdr align;
} vfsd_cbuf;

/* Takes the credentials and descriptors of a received message: the pid
 * in *pid (0 when none came), descriptors into m; *odd when anything
 * else came or descriptors did not fit (those are closed). */
static void vfsd_take_control(struct msghdr *mh, pbx_peer_msg *m, pid_t *pid,
                              bool *odd)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL;
         c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_CREDENTIALS &&
            c->cmsg_len == CMSG_LEN(sizeof(struct ucred))) {
            struct ucred cr;
            memcpy(&cr, CMSG_DATA(c), sizeof(cr));
            *pid = cr.pid;
            continue;
        }
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            *odd = true;
            continue;
        }
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd = -1;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (m->nfds < PBX_PEER_IO_FDS_MAX) {
                m->fds[m->nfds++] = fd;
            } else {
                (void)close(fd);
                *odd = true;
            }
        }
    }
}

/*
 * Receives one frame on scope connection fd into *m like
 * pbx_peer_io_recv_frame, and the pid of the process that sent it into
 * *pid: the kernel attaches the sender's real credentials because vfsd set
 * SO_PASSCRED on this end before the scope was handed out, whatever the
 * sender did (0 when none came). Returns 0, 1 at the end of the
 * connection, or -1 with errno set.
 */
static int vfsd_recv_scope(int fd, pbx_peer_msg *m, pid_t *pid)
{
    vfsd_cbuf cbuf;
    struct iovec iov = {m->buf, sizeof(m->buf)};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&cbuf, 0, sizeof(cbuf));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf.buf;
    mh.msg_controllen = sizeof(cbuf.buf);
    m->nfds = 0;
    m->len = 0;
    *pid = 0;
    ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
    if (r < 0) {
        return -1;
    }
    bool odd = false;
    vfsd_take_control(&mh, m, pid, &odd);
    if (r == 0 && m->nfds == 0U) {
        return 1;
    }
    if (odd || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0) {
        pbx_peer_io_close_all(m->fds, m->nfds);
        m->nfds = 0;
        errno = EMSGSIZE;
        return -1;
    }
    m->len = (size_t)r;
    m->err = pbx_ipc_frame_decode(m->buf, m->len, (uint16_t)m->nfds, &m->frame);
    if (m->err != PBX_OK) {
        pbx_peer_io_close_all(m->fds, m->nfds);
    }
    return 0;
}

/* Serves one message on connection i; false when it must be closed. */
static bool vfsd_serve(vfsd_conn *c)
{
    pbx_peer_msg *m = &g_vfsd.msg;
    pid_t pid = 0;
    int r = c->kind == VFSD_KIND_SCOPE ? vfsd_recv_scope(c->fd, m, &pid)
                                       : pbx_peer_io_recv_frame(c->fd, m);
    if (r == 1) {
        return false;
    }
    if (r < 0) {
        pbx_peer_log("vfsd", "receive failed: %s", strerror(errno));
        return errno == EMSGSIZE;
    }
    if (m->err != PBX_OK) {
        vfsd_fail(c->fd, (uint32_t)m->err, "malformed frame");
        return true;
    }
    uint16_t op = m->frame.op;
    if (c->kind == VFSD_KIND_SCOPE && op == PBX_IPC_OP_RESOLVE) {
        vfsd_resolve(c, pid);
    } else if (c->kind == VFSD_KIND_ROUTE && op == PBX_IPC_OP_DETACH) {
        vfsd_detach(c->fd);
    } else if (c->kind == VFSD_KIND_ROUTE && op == PBX_IPC_OP_RETIRE) {
        vfsd_retire(c->fd);
    } else {
        pbx_peer_io_close_all(m->fds, m->nfds);
        char what[96];
        (void)snprintf(what, sizeof(what), "%s on the wrong connection",
                       pbx_ipc_op_name(op));
        vfsd_fail(c->fd, PBX_PEER_E_ROUTE, what);
    }
    return true;
}

/* Adds a connection of kind named scope_id (0 for the route); on a full
 * table fd is closed and NULL returned. handed says a route came as
 * --route-fd (a pair --route-pid may name the far end of), not accepted
 * on a listener. */
static vfsd_conn *vfsd_add_conn(int fd, int kind, int dirfd, uint64_t scope_id,
                                bool handed)
{
    if (g_vfsd.nconns >= VFSD_CONNS_MAX) {
        pbx_peer_log("vfsd", "connection table full; refusing a connection");
        (void)close(fd);
        return NULL;
    }
    vfsd_conn *c = &g_vfsd.conns[g_vfsd.nconns++];
    *c = (vfsd_conn){fd, kind, dirfd, scope_id, false, 0, 0U};
    if (kind == VFSD_KIND_ROUTE) {
        /* The process at the other end: the one that connected (or, for
         * a handed-over socketpair, made it). Only it may RESOLVE. */
        struct ucred cr;
        socklen_t cl = sizeof(cr);
        memset(&cr, 0, sizeof(cr));
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
            cr.pid = 0;
        }
        /* A pair vfsd made itself names vfsd at both ends: the
         * supervisor says who holds the other (--route-pid). */
        c->pid = handed && g_vfsd.route_pid > 0 ? g_vfsd.route_pid : cr.pid;
        c->serial = ++g_vfsd.routes_made;
        pbx_peer_log("vfsd", "route from pid %ld: its RESOLVEs are served",
                     (long)c->pid);
    }
    return c;
}

/* Removes connection i (closing it); keeps the table dense. A route's
 * objects are retired with it. */
static void vfsd_drop_conn(size_t i)
{
    (void)close(g_vfsd.conns[i].fd);
    if (g_vfsd.conns[i].kind == VFSD_KIND_ROUTE) {
        vfsd_route_lost(g_vfsd.conns[i].serial, g_vfsd.conns[i].pid);
    }
    g_vfsd.conns[i] = g_vfsd.conns[g_vfsd.nconns - 1U];
    g_vfsd.nconns--;
}

/*
 * Hands one fresh scope for dirfd to the client at the other end of conn,
 * then closes conn. The scope is one end of a new socketpair, sent by
 * SCM_RIGHTS; vfsd keeps the other end as the scope connection and names
 * the scope by the inode of the end it sent. Every copy of a descriptor
 * passed this way is the same open socket, so powerboxd's fstat of the
 * copy it receives at COMMIT reports that very inode: an identity the
 * kernel vouches for and the client cannot choose. The inode alone is the
 * name: every socket lives on the one sockfs, so st_dev is the same for
 * all of them and the 64-bit wire field keeps the inode whole.
 */
static bool vfsd_hand_scope(int conn, int dirfd, bool lie)
{
    int sv[2] = {-1, -1};
    int on = 1;
    /* SO_PASSCRED on the end vfsd keeps, before anyone can send on the
     * other: every message then arrives with its sender's credentials. */
    bool ok = socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0 &&
              setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == 0;
    uint64_t id = ok ? pbx_peer_io_inode(sv[1]) : 0U;
    vfsd_conn *c = id != 0U
                       ? vfsd_add_conn(sv[0], VFSD_KIND_SCOPE, dirfd, id, false)
                       : NULL;
    if (c == NULL) {
        pbx_peer_log("vfsd", "no scope handed out: %s",
                     ok ? "table full" : strerror(errno));
        pbx_peer_io_close_all(&sv[1], 1);
        if (id == 0U) {
            pbx_peer_io_close_all(sv, 1);
        }
        (void)close(conn);
        return false;
    }
    c->lie = lie;
    ok = pbx_peer_io_scope_give(conn, sv[1], id) == 0;
    if (!ok) {
        pbx_peer_log("vfsd", "scope hand-out failed: %s", strerror(errno));
        vfsd_drop_conn(g_vfsd.nconns - 1U);
    } else {
        pbx_peer_log("vfsd", "scope %llu handed out%s", (unsigned long long)id,
                     lie ? " (--lie-scope)" : "");
    }
    (void)close(sv[1]);
    (void)close(conn);
    return ok;
}

/* The provider end of live row hung up: every receiver copy of the
 * object is closed (refused at FOUND, detached after a denial, revoked at
 * procd), so nobody holds it and the end is closed at once. The row stays
 * HUNG, holding nothing, to acknowledge a RETIRE that may still come. */
static void vfsd_hangup(size_t row)
{
    const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
    uint64_t id = o->id;
    uint32_t gen = o->gen;
    int prov = -1;
    if (pbx_peer_objtab_hangup(&g_vfsd.objs, row, &prov) != 0U) {
        return;
    }
    if (prov >= 0) {
        (void)close(prov);
    }
    vfsd_data_sweep();
    pbx_peer_log("vfsd", "HANG-UP object %llu gen %u: no copy left, row freed",
                 vfsd_wire(id), gen);
}

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
