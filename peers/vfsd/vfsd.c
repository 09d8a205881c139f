/*
 * vfsd.c: the reference vfsd for the Linux host. It serves a read-only
 * namespace from a directory. Every connection accepted on a scope socket
 * (or handed over as --scope-fd) is given one scope capability for a
 * subtree: one end of a fresh socketpair, sent by SCM_RIGHTS, which vfsd
 * names by that end's inode (the identity powerboxd's fstat of its copy
 * reports), keeping the other end to serve RESOLVE on. RESOLVE mints a
 * fresh object connection: vfsd keeps its provider end and serves
 * OBJ_STAT on it (what the object names: device, inode and size as vfsd
 * opened it); every other call there is refused with an error status. The
 * route (from powerboxd) takes DETACH and RETIRE; RETIRE answers the
 * calls already queued on the object with an error status, then cuts the
 * object's connection so that every copy reads its end. See docs/HOST.md.
 *
 *   pbx-vfsd --root DIR [--scope PATH[=SUBDIR]]... [--scope-fd N[=SUBDIR]]...
 *            [--lie-scope PATH[=SUBDIR]]... [--route PATH] [--route-fd N]
 *            [--ready-fd N]
 */
/* O_PATH and accept4 are Linux extensions. */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ipc/pbx_ipc.h"
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

/* What a listening socket or connection serves. */
enum { VFSD_KIND_ROUTE = 1, VFSD_KIND_SCOPE = 2 };

/* One listening socket or connection. */
typedef struct vfsd_conn {
    int fd;
    int kind;
    int dirfd;         /* the scope's subtree (scopes only; shared) */
    uint64_t scope_id; /* scope connections: inode of the end handed out */
    bool lie;          /* fault switch (--lie-scope): misname the scope */
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
    pbx_peer_msg msg;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
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

/* Looks path up beneath dirfd; *ft and *st (device, inode and size of
 * what was opened) are set when LOOKUP_OK is returned. */
static pbx_peer_lookup vfsd_lookup(int dirfd, char *path, bool follow,
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
    int r = fstat((int)fd, &sb);
    (void)close((int)fd);
    if (r != 0) {
        return PBX_PEER_LOOKUP_OTHER;
    }
    *ft = vfsd_ftype(sb.st_mode);
    st->dev = (uint64_t)sb.st_dev;
    st->ino = (uint64_t)sb.st_ino;
    st->size = sb.st_size > 0 ? (uint64_t)sb.st_size : 0U;
    return PBX_PEER_LOOKUP_OK;
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

/*
 * Mints the object connection for a FOUND answer and replies with its
 * SEND end. vfsd keeps the provider end; cutting it revokes every copy.
 */
static void vfsd_found(vfsd_conn *c, pbx_ipc_resolve_reply *rep,
                       const pbx_peer_vfs_stat *named)
{
    size_t row = 0;
    uint32_t st = pbx_peer_objtab_reserve(&g_vfsd.objs, &row);
    int sv[2] = {-1, -1};
    if (st == 0U &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        st = PBX_PEER_E_INTERNAL;
    }
    uint64_t id = st == 0U ? pbx_peer_io_inode(sv[1]) : 0U;
    if (st == 0U && id == 0U) {
        st = PBX_PEER_E_INTERNAL;
    }
    if (st != 0U) {
        pbx_peer_io_close_all(sv, 2);
        vfsd_fail(c->fd, st, "RESOLVE");
        return;
    }
    rep->object.id = id;
    rep->object.gen = pbx_peer_objtab_mint(&g_vfsd.objs, row, id, c->scope_id,
                                           rep->object_class, sv[0]);
    g_vfsd.stats[row] = *named;
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
        pbx_peer_log("vfsd", "RESOLVE reply failed: %s", strerror(errno));
    } else {
        pbx_peer_log("vfsd", "RESOLVE found object %llu gen %u scope %llu%s",
                     (unsigned long long)id, rep->object.gen,
                     (unsigned long long)rep->scope_id,
                     c->lie ? " (a lie: --lie-scope)" : "");
    }
    (void)close(sv[1]);
}

/* RESOLVE through scope connection c. */
static void vfsd_resolve(vfsd_conn *c)
{
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
    pbx_peer_vfs_stat named = {0U, 0U, 0U};
    if (sel == PBX_PEER_SEL_OK &&
        pbx_peer_vfs_class_allows(rq.operation, rq.object_class)) {
        lk = vfsd_lookup(c->dirfd, path,
                         pbx_peer_vfs_follow_final(rq.object_class), &ft,
                         &named);
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
        vfsd_found(c, &rep, &named);
        return;
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
    uint32_t st = pbx_peer_objtab_detach_check(&g_vfsd.objs, rq.object.id,
                                               rq.object.gen, seen, &row);
    if (st != 0U) {
        vfsd_fail(fd, st, "DETACH");
        return;
    }
    g_vfsd.objs.rows[row].detached++;
    size_t n = 0;
    e = pbx_ipc_detach_reply_encode(m->frame.request, &rq, g_vfsd.out,
                                    sizeof(g_vfsd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    pbx_peer_log("vfsd", "DETACH object %llu gen %u",
                 (unsigned long long)rq.object.id, rq.object.gen);
    vfsd_send(fd, n, -1);
}

/* Receives one call queued on object connection fd without waiting.
 * Returns its length (the message is cut at cap bytes), 0 when nothing is
 * queued (or an empty message was), -1 on a failure. Descriptors that
 * came with it are deleted by the kernel (no control buffer is given),
 * which *fds reports. */
static ssize_t vfsd_obj_recv(int fd, uint8_t *buf, size_t cap, bool *fds)
{
    struct iovec iov = {buf, cap};
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
    return r;
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
 * Answers the call in[0..len) received on the provider end fd of an
 * object: st is what the object names, or NULL once it is retired (every
 * call is then refused). The reply is sent without waiting: a holder that
 * does not read its replies loses them, vfsd never blocks on it.
 */
static void vfsd_obj_answer(int fd, const pbx_peer_vfs_stat *st,
                            const uint8_t *in, size_t len, bool fds,
                            vfsd_tally *t)
{
    pbx_peer_vfs_call call;
    uint8_t out[PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_STAT_BODY_BYTES];
    size_t n = 0;
    if (!pbx_peer_vfs_obj_judge(in, len, fds, st != NULL, &call) ||
        pbx_peer_vfs_obj_reply_encode(&call, st, out, sizeof(out), &n) !=
            PBX_OK) {
        t->ignored++;
        return;
    }
    if (call.status == 0U) {
        t->served++;
    } else {
        t->refused++;
        t->last_op = call.op;
        t->last_status = call.status;
    }
    if (send(fd, out, n, MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)n) {
        t->dropped++;
    }
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
                     (unsigned long long)id, gen);
        return;
    }
    if (t->refused != 0U) {
        pbx_peer_log("vfsd",
                     "object %llu gen %u: %zu call(s) refused, the "
                     "last op 0x%04x: %s",
                     (unsigned long long)id, gen, t->refused, t->last_op,
                     pbx_peer_status_text(t->last_status));
    }
    if (t->ignored != 0U) {
        pbx_peer_log("vfsd",
                     "object %llu gen %u: %zu message(s) that are no "
                     "call dropped",
                     (unsigned long long)id, gen, t->ignored);
    }
    if (t->dropped != 0U) {
        pbx_peer_log("vfsd",
                     "object %llu gen %u: %zu repl(ies) not sent "
                     "(the holder reads none)",
                     (unsigned long long)id, gen, t->dropped);
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
        uint8_t in[2U * PBX_IPC_HEADER_BYTES];
        bool fds = false;
        ssize_t r = vfsd_obj_recv(o->provider, in, sizeof(in), &fds);
        if (r < 0) {
            pbx_peer_log("vfsd", "object %llu: receive failed: %s",
                         (unsigned long long)o->id, strerror(errno));
        }
        empty = r <= 0;
        if (!empty) {
            vfsd_obj_answer(o->provider, &g_vfsd.stats[row], in, (size_t)r, fds,
                            &t);
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
        uint8_t in[2U * PBX_IPC_HEADER_BYTES];
        bool fds = false;
        ssize_t r = vfsd_obj_recv(fd, in, sizeof(in), &fds);
        if (r <= 0) {
            break;
        }
        vfsd_obj_answer(fd, NULL, in, (size_t)r, fds, &t);
    }
    vfsd_obj_log(id, gen, &t, NULL);
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
    uint32_t st =
        pbx_peer_objtab_retire(&g_vfsd.objs, rq.object.id, rq.object.gen,
                               rq.scope_id, rq.object_class, &prov);
    if (st != 0U) {
        vfsd_fail(fd, st, "RETIRE");
        return;
    }
    if (prov >= 0) {
        vfsd_obj_drain(prov, rq.object.id, rq.object.gen);
        (void)shutdown(prov, SHUT_RDWR);
        (void)close(prov);
    }
    size_t n = 0;
    e = pbx_ipc_retire_reply_encode(g_vfsd.msg.frame.request, &rq, g_vfsd.out,
                                    sizeof(g_vfsd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    pbx_peer_log("vfsd", "RETIRE object %llu gen %u%s",
                 (unsigned long long)rq.object.id, rq.object.gen,
                 prov >= 0 ? "" : " (no copy left to cut)");
    vfsd_send(fd, n, -1);
}

/* Serves one message on connection i; false when it must be closed. */
static bool vfsd_serve(vfsd_conn *c)
{
    pbx_peer_msg *m = &g_vfsd.msg;
    int r = pbx_peer_io_recv_frame(c->fd, m);
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
        vfsd_resolve(c);
    } else if (c->kind == VFSD_KIND_ROUTE && op == PBX_IPC_OP_DETACH) {
        vfsd_detach(c->fd);
    } else if (c->kind == VFSD_KIND_ROUTE && op == PBX_IPC_OP_RETIRE) {
        vfsd_retire(c->fd);
    } else {
        pbx_peer_io_close_all(m->fds, m->nfds);
        vfsd_fail(c->fd, PBX_PEER_E_ROUTE, "wrong connection for the op");
    }
    return true;
}

/* Adds a connection of kind named scope_id (0 for the route); on a full
 * table fd is closed and NULL returned. */
static vfsd_conn *vfsd_add_conn(int fd, int kind, int dirfd, uint64_t scope_id)
{
    if (g_vfsd.nconns >= VFSD_CONNS_MAX) {
        pbx_peer_log("vfsd", "connection table full; refusing a connection");
        (void)close(fd);
        return NULL;
    }
    vfsd_conn *c = &g_vfsd.conns[g_vfsd.nconns++];
    *c = (vfsd_conn){fd, kind, dirfd, scope_id, false};
    return c;
}

/* Removes connection i (closing it); keeps the table dense. */
static void vfsd_drop_conn(size_t i)
{
    (void)close(g_vfsd.conns[i].fd);
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
    bool ok = socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0;
    uint64_t id = ok ? pbx_peer_io_inode(sv[1]) : 0U;
    vfsd_conn *c =
        id != 0U ? vfsd_add_conn(sv[0], VFSD_KIND_SCOPE, dirfd, id) : NULL;
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
    pbx_peer_log("vfsd", "HANG-UP object %llu gen %u: no copy left, row freed",
                 (unsigned long long)id, gen);
}

/* Accepts what listener l has waiting: a scope hand-out or a route. */
static void vfsd_accept(const vfsd_conn *l)
{
    int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0 && l->kind == VFSD_KIND_SCOPE) {
        (void)vfsd_hand_scope(fd, l->dirfd, l->lie);
    } else if (fd >= 0) {
        (void)vfsd_add_conn(fd, l->kind, l->dirfd, 0U);
    }
}

/* The poll set of one round: listeners, connections, then the provider
 * ends of live objects (rows[k] and gens[k] name the object polled). */
typedef struct vfsd_pollset {
    struct pollfd
        p[VFSD_LISTEN_MAX + VFSD_CONNS_MAX + PBX_PEER_VFS_OBJECTS_MAX];
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
    if (poll(ps.p, (nfds_t)(ps.nl + ps.nc + ps.no), -1) < 0) {
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
                   : vfsd_add_conn(fd, kind, dirfd, 0U) != NULL;
    }
    if (g_vfsd.nlistens >= VFSD_LISTEN_MAX) {
        pbx_peer_log("vfsd", "too many listening sockets");
        return false;
    }
    g_vfsd.listens[g_vfsd.nlistens++] = (vfsd_conn){fd, kind, dirfd, 0U, lie};
    return true;
}

/* Parses the command line; returns false with a message on any error. */
static bool vfsd_args(int argc, char **argv, int *ready_fd)
{
    const char *root = NULL;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--root") == 0) {
            root = argv[i + 1];
        }
    }
    if (root == NULL || (argc % 2) != 1) {
        pbx_peer_log("vfsd", "usage: pbx-vfsd --root DIR [--scope PATH[=SUB]]"
                             " [--scope-fd N[=SUB]] [--lie-scope PATH[=SUB]]"
                             " [--route PATH] [--route-fd N] [--ready-fd N]");
        return false;
    }
    g_vfsd.root_fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (g_vfsd.root_fd < 0) {
        pbx_peer_log("vfsd", "root '%s': %s", root, strerror(errno));
        return false;
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
        } else if (strcmp(k, "--root") != 0) {
            pbx_peer_log("vfsd", "unknown option '%s'", k);
            ok = false;
        }
    }
    return ok;
}

int main(int argc, char **argv)
{
    int ready_fd = -1;
    pbx_peer_objtab_init(&g_vfsd.objs);
    if (!vfsd_args(argc, argv, &ready_fd)) {
        return 2;
    }
    pbx_peer_log("vfsd", "ready: %zu listener(s), %zu connection(s)",
                 g_vfsd.nlistens, g_vfsd.nconns);
    pbx_peer_io_ready(ready_fd);
    /* Serve until killed; every round blocks in poll. */
    for (;;) {
        if (vfsd_round() != 0) {
            pbx_peer_log("vfsd", "poll failed: %s", strerror(errno));
            return 1;
        }
    }
}
