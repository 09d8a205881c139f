/*
 * vfsd_resolve.c: the reference vfsd's lookups beneath a scope's subtree
 * and RESOLVE (docs/HOST.md, "vfsd"): only the process at the far end
 * of a route may resolve; a FOUND answer mints a fresh object.
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
 * mode says (reading only, reading and writing for a write grant, whose
 * holder may read its own file, or as a directory), through
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
        flags |= O_RDWR;
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
void vfsd_send(int fd, size_t n, int cap)
{
    if (pbx_peer_io_reply(fd, &g_vfsd.msg, g_vfsd.out, n, cap) != 0) {
        pbx_peer_log("vfsd", "reply send failed: %s", strerror(errno));
    }
}

/* Replies to the current message with an error status. */
void vfsd_fail(int fd, uint32_t status, const char *what)
{
    pbx_peer_log("vfsd", "%s: %s", what, pbx_peer_status_text(status));
    (void)pbx_peer_io_reply_status(fd, &g_vfsd.msg, status);
}

/* Closes row's data descriptor when the row is no longer live: a retired
 * or hung-up object serves nothing, so it keeps no file open. Called at
 * each place a row stops being live (and before a row is minted again),
 * so no pass over the table is needed (issue 23 item 3). */
void vfsd_row_files(size_t row)
{
    if (row >= g_vfsd.objs.cap ||
        g_vfsd.objs.rows[row].state == PBX_PEER_OBJ_LIVE) {
        return;
    }
    vfsd_create_release(row);
    if (g_vfsd.data[row] >= 0) {
        (void)close(g_vfsd.data[row]);
        g_vfsd.data[row] = -1;
    }
}

/*
 * Mints the object connection for a FOUND answer and replies with its
 * SEND end on out, the route of the process that sent the RESOLVE (never
 * the scope c, whose other copies the committing job holds). vfsd keeps
 * the provider end; cutting it revokes every copy. mt->data is owned from
 * here on (kept by the row, or closed).
 */
static void vfsd_found(const vfsd_conn *c, int out, pbx_ipc_resolve_reply *rep,
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
        if (mt->create_dir >= 0) {
            (void)close(mt->create_dir);
        }
        vfsd_fail(out, st, "RESOLVE");
        return;
    }
    vfsd_row_files(row);
    rep->object.id = ((uint64_t)g_vfsd.incarnation << 48) | id;
    rep->object.gen = pbx_peer_objtab_mint(&g_vfsd.objs, row, id, c->scope_id,
                                           rep->object_class, sv[0]);
    g_vfsd.stats[row] = mt->named;
    g_vfsd.grant[row] = mt->grant;
    g_vfsd.data[row] = mt->data;
    g_vfsd.owner[row] = mt->owner;
    g_vfsd.create_dir[row] = mt->create_dir;
    (void)snprintf(g_vfsd.create_name[row], sizeof(g_vfsd.create_name[row]),
                   "%s", mt->create_name);
    g_vfsd.mute[row] = false;
    g_vfsd.logs[row] = 0U;
    /* --lie-scope: name another scope than the one resolved through, so
     * that powerboxd's identity check can be seen to refuse it. */
    rep->scope_id = c->lie ? c->scope_id + 1U : c->scope_id;
    size_t n = 0;
    pbx_err e = pbx_ipc_resolve_reply_encode(
        g_vfsd.msg.frame.request, rep, g_vfsd.out, sizeof(g_vfsd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    if (pbx_peer_io_reply(out, &g_vfsd.msg, g_vfsd.out, n, sv[1]) != 0) {
        /* Nobody holds the object: cut it and free the row at once. */
        int prov = -1;
        (void)pbx_peer_objtab_retire(&g_vfsd.objs, id, rep->object.gen,
                                     c->scope_id, rep->object_class, &prov);
        pbx_peer_objtab_unmint(&g_vfsd.objs, row);
        (void)close(sv[0]);
        vfsd_row_files(row);
        pbx_peer_log("vfsd", "RESOLVE reply failed: %s", strerror(errno));
    } else {
        /* Held now: its calls and its hang-up are waited for. */
        vfsd_loop_watch_obj(row);
        pbx_peer_log(
            "vfsd",
            "RESOLVE found object %llu gen %u scope %llu "
            "(operation %s, class %s, file %s)%s",
            (unsigned long long)rep->object.id, rep->object.gen,
            (unsigned long long)rep->scope_id,
            pbx_peer_name_of(PBX_PEER_NAMES_OPERATION, mt->grant.operation),
            pbx_peer_name_of(PBX_PEER_NAMES_CLASS, mt->grant.object_class),
            mt->data >= 0         ? "open"
            : mt->create_dir >= 0 ? "to be created when first used"
                                  : "not open (stat only)",
            c->lie ? " (a lie: --lie-scope)" : "");
    }
    (void)close(sv[1]);
}

/* Whether the far end of route fd is gone (closed or shut). The pid a
 * route names can only be reused by another process after that one died,
 * and its death closes its end: a route that is not hung up still names
 * the very process it was made for, so no RESOLVE is ever served to a
 * later holder of its pid, even before vfsd's poll drops the route. */
static bool vfsd_route_hung(int fd)
{
    struct pollfd p = {fd, POLLRDHUP, 0};
    int n = poll(&p, 1U, 0);
    /* A failed look counts as hung: refusing is the safe answer. */
    return n < 0 ||
           (n > 0 &&
            (p.revents & (POLLHUP | POLLRDHUP | POLLERR | POLLNVAL)) != 0);
}

/* The route whose process sent the RESOLVE just received (pid from its
 * SCM_CREDENTIALS, 0 when none came), or NULL: only the process at the
 * other end of a route (powerboxd) may RESOLVE. */
static const vfsd_conn *vfsd_route_of(pid_t pid)
{
    for (size_t i = 0; pid > 0 && i < g_vfsd.nconns; i++) {
        const vfsd_conn *r = &g_vfsd.conns[i];
        if (r->kind == VFSD_KIND_ROUTE && r->pid == pid &&
            !vfsd_route_hung(r->fd)) {
            return r;
        }
    }
    return NULL;
}

/* Where vfsd answers a message that came on scope connection c from pid:
 * on that process's route when it is a route's process (powerboxd), so
 * that nothing meant for powerboxd ever waits on a connection the job
 * that committed the scope also holds; on c itself otherwise. */
int vfsd_scope_reply_fd(const vfsd_conn *c, pid_t pid)
{
    const vfsd_conn *route = vfsd_route_of(pid);
    return route != NULL ? route->fd : c->fd;
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

/*
 * RESOLVE through scope connection c, whose message came from pid. Every
 * answer to the route's process (FOUND with its object, NOT_FOUND, an
 * error) goes on that process's route, never back on the scope: every
 * copy of a scope is one connection with one receive queue, and the job
 * that committed the scope still holds a copy, so an answer there could
 * be taken by the job before powerboxd's policy or prompt. Only the
 * refusal of a sender that is no route's process goes back on the scope
 * (it carries nothing and is meant for that sender).
 */
void vfsd_resolve(vfsd_conn *c, pid_t pid)
{
    const vfsd_conn *route = vfsd_route_of(pid);
    if (route == NULL) {
        vfsd_not_route(c, pid);
        return;
    }
    int out = route->fd;
    pbx_ipc_resolve rq;
    pbx_err e = pbx_ipc_resolve_decode(&g_vfsd.msg.frame, &rq);
    if (e != PBX_OK) {
        vfsd_fail(out, (uint32_t)e, "RESOLVE malformed");
        return;
    }
    uint8_t d[PBX_SHA2_DIGEST_BYTES];
    if (pbx_sha2_digest(rq.selector, rq.selector_len, d) != PBX_OK ||
        !pbx_mem_equal(d, rq.selector_digest, sizeof(d))) {
        vfsd_fail(out, PBX_PEER_E_DIGEST, "RESOLVE");
        return;
    }
    static char path[PBX_PEER_VFS_PATH_BYTES_MAX];
    pbx_peer_sel sel = pbx_peer_vfs_selector_check(rq.selector, rq.selector_len,
                                                   path, sizeof(path));
    pbx_peer_lookup lk = PBX_PEER_LOOKUP_OTHER;
    pbx_peer_ftype ft = PBX_PEER_FT_OTHER;
    static vfsd_mint mt;
    memset(&mt, 0, sizeof(mt));
    mt.grant = (pbx_peer_vfs_grant){rq.operation, rq.object_class};
    mt.data = -1;
    mt.owner = route->serial;
    mt.create_dir = -1;
    bool create = rq.operation == PBX_IPC_OPERATION_CREATE;
    pbx_peer_vfs_verdict cv = {PBX_IPC_RESOLVE_DENIED, 0U};
    if (create && sel == PBX_PEER_SEL_OK &&
        pbx_peer_vfs_class_allows(rq.operation, rq.object_class)) {
        (void)vfsd_create_resolve(c->dirfd, path, &mt, &cv);
    } else if (sel == PBX_PEER_SEL_OK &&
               pbx_peer_vfs_class_allows(rq.operation, rq.object_class)) {
        lk = vfsd_lookup(
            c->dirfd, path, pbx_peer_vfs_follow_final(rq.object_class),
            pbx_peer_vfs_open_for(mt.grant), &mt.data, &ft, &mt.named);
    }
    pbx_peer_vfs_verdict v =
        create ? cv
               : pbx_peer_vfs_judge(rq.operation, rq.object_class, sel, lk, ft);
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    rep.result = v.result;
    rep.object_class = v.object_class;
    rep.operation = rq.operation;
    memcpy(rep.selector_digest, rq.selector_digest, sizeof(d));
    if (v.result == PBX_IPC_RESOLVE_FOUND) {
        vfsd_found(c, out, &rep, &mt);
        return;
    }
    if (mt.data >= 0) {
        (void)close(mt.data);
    }
    if (mt.create_dir >= 0) {
        (void)close(mt.create_dir);
    }
    pbx_peer_log("vfsd", "RESOLVE %s (selector: %s, lookup %d)",
                 pbx_peer_name_of(PBX_PEER_NAMES_RESULT, v.result),
                 pbx_peer_sel_text(sel), (int)lk);
    size_t n = 0;
    e = pbx_ipc_resolve_reply_encode(g_vfsd.msg.frame.request, &rep, g_vfsd.out,
                                     sizeof(g_vfsd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    vfsd_send(out, n, -1);
}
