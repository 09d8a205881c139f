/*
 * vfsd_route.c: the reference vfsd's connections: routes (DETACH,
 * RETIRE, and every object of a closed route retired) and scope
 * connections (each handed out as one end of a fresh pair, RESOLVE
 * received with its sender's credentials and answered on that sender's
 * route, never on the scope). See docs/HOST.md.
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

/* The route of serial closed: every object minted for it is retired at
 * once (its queued calls refused, its connection cut), so that no object
 * outlives the powerboxd that could revoke it. Logged one line per
 * object, then once with the count. */
static void vfsd_route_lost(uint64_t serial, pid_t pid)
{
    size_t n = 0;
    for (size_t r = 0; r < g_vfsd.objs.cap; r++) {
        pbx_peer_obj *o = &g_vfsd.objs.rows[r];
        if (o->state == PBX_PEER_OBJ_HUNG && g_vfsd.owner[r] == serial) {
            /* Nobody holds its connection, but an OPEN's descriptor may
             * still be open: it ends with the route too. */
            vfsd_fuse_revoke(o->id, o->gen);
        }
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
bool vfsd_serve(vfsd_conn *c)
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
    /* Whatever the route's process sends through a scope is answered on
     * its route (vfsd_scope_reply_fd): never where a job can read it. */
    int out = c->kind == VFSD_KIND_SCOPE ? vfsd_scope_reply_fd(c, pid) : c->fd;
    if (m->err != PBX_OK) {
        vfsd_fail(out, (uint32_t)m->err, "malformed frame");
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
        vfsd_fail(out, PBX_PEER_E_ROUTE, what);
    }
    return true;
}

/* The pid the kernel names at the other end of socket fd (SO_PEERCRED:
 * the process that connected, or that made a socketpair), or 0. */
static pid_t vfsd_peer_pid(int fd)
{
    struct ucred cr;
    socklen_t cl = sizeof(cr);
    memset(&cr, 0, sizeof(cr));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
        cr.pid = 0;
    }
    return cr.pid;
}

/* Adds a connection of kind named scope_id (0 for a route); on a full
 * table fd is closed and NULL returned. A route serves RESOLVE to one
 * process: named when the caller knows it exactly (a pair vfsd made
 * itself names vfsd at both ends: 'P' names the pid, --route-pid the far
 * end of --route-fd), else the one SO_PEERCRED of fd names. A scope
 * connection records named as the process it was handed to. */
vfsd_conn *vfsd_add_conn(int fd, int kind, int dirfd, uint64_t scope_id,
                         pid_t named)
{
    if (g_vfsd.nconns >= VFSD_CONNS_MAX) {
        pbx_peer_log("vfsd", "connection table full; refusing a connection");
        (void)close(fd);
        return NULL;
    }
    vfsd_conn *c = &g_vfsd.conns[g_vfsd.nconns++];
    *c = (vfsd_conn){fd, kind, dirfd, scope_id, false, named, 0U};
    vfsd_loop_watch_conn(g_vfsd.nconns - 1U);
    if (kind == VFSD_KIND_ROUTE) {
        c->pid = named > 0 ? named : vfsd_peer_pid(fd);
        c->serial = ++g_vfsd.routes_made;
        pbx_peer_log("vfsd", "route from pid %ld: its RESOLVEs are served",
                     (long)c->pid);
    }
    return c;
}

/* Removes connection i (closing it); keeps the table dense. A route's
 * objects are retired with it. */
void vfsd_drop_conn(size_t i)
{
    vfsd_loop_unwatch(g_vfsd.conns[i].fd);
    (void)close(g_vfsd.conns[i].fd);
    if (g_vfsd.conns[i].kind == VFSD_KIND_ROUTE) {
        vfsd_route_lost(g_vfsd.conns[i].serial, g_vfsd.conns[i].pid);
    }
    g_vfsd.conns[i] = g_vfsd.conns[g_vfsd.nconns - 1U];
    g_vfsd.nconns--;
    if (i < g_vfsd.nconns) {
        vfsd_loop_moved_conn(i);
    }
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
 * all of them and the 64-bit wire field keeps the inode whole. A process
 * (SO_PEERCRED of conn) that already holds --scopes-per-pid scopes is
 * refused: conn is closed with no scope, and the refusal logged.
 */
bool vfsd_hand_scope(int conn, int dirfd, bool lie)
{
    pid_t holder = vfsd_peer_pid(conn);
    uint32_t held = 0U;
    for (size_t i = 0; i < g_vfsd.nconns; i++) {
        if (g_vfsd.conns[i].kind == VFSD_KIND_SCOPE &&
            g_vfsd.conns[i].pid == holder) {
            held++;
        }
    }
    if (held >= g_vfsd.scopes_per_pid) {
        /* Admission: one process cannot fill the table others need. */
        pbx_peer_log("vfsd",
                     "scope refused to pid %ld: it holds %u scope(s), the "
                     "most one process may (--scopes-per-pid %u)",
                     (long)holder, held, g_vfsd.scopes_per_pid);
        (void)close(conn);
        return false;
    }
    int sv[2] = {-1, -1};
    int on = 1;
    /* SO_PASSCRED on the end vfsd keeps, before anyone can send on the
     * other: every message then arrives with its sender's credentials. */
    bool ok = socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0 &&
              setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == 0;
    uint64_t id = ok ? pbx_peer_io_inode(sv[1]) : 0U;
    vfsd_conn *c =
        id != 0U ? vfsd_add_conn(sv[0], VFSD_KIND_SCOPE, dirfd, id, holder)
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
