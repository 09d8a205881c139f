/*
 * vfsd_fuse.c: vfsd's side of its revocable descriptors (vfsd_fuse.h,
 * docs/HOST.md "Revocable descriptors"): the server started at vfsd's
 * start, OPEN queued at the server (whose helper thread opens a one-use
 * entry and sends the descriptor back) and answered from vfsd's event
 * loop, and revocation at RETIRE or the route's loss through the
 * revocation table shared with the server. Nothing here waits for the
 * server but the page invalidation at revocation (docs/HOST.md, "mmap").
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peers/lib/pbx_peer.h"
#include "peers/vfsd/vfsd.h"
#include "peers/vfsd/vfsd_fuse.h"

/* The wire form of a channel message: kind, 3 zero bytes, u32 mode,
 * u64 node, the name's bytes, u32 slot, 4 zero bytes. */
#define VFSD_FUSE_WIRE_BYTES (24U + VFSD_FUSE_NAME_BYTES)

int vfsd_fuse_send_msg(int chan, const vfsd_fuse_msg *m, int fd)
{
    return vfsd_fuse_send_msg_flags(chan, m, fd, 0);
}

int vfsd_fuse_send_msg_flags(int chan, const vfsd_fuse_msg *m, int fd,
                             int flags)
{
    uint8_t b[VFSD_FUSE_WIRE_BYTES];
    memset(b, 0, sizeof(b));
    b[0] = (uint8_t)m->kind;
    pbx_le_put32(b + 4, m->mode);
    pbx_le_put64(b + 8, m->node);
    memcpy(b + 16, m->name, VFSD_FUSE_NAME_BYTES);
    pbx_le_put32(b + 16 + VFSD_FUSE_NAME_BYTES, m->slot);
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } cbuf;
    struct iovec iov = {b, sizeof(b)};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (fd >= 0) {
        memset(&cbuf, 0, sizeof(cbuf));
        mh.msg_control = cbuf.buf;
        mh.msg_controllen = sizeof(cbuf.buf);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof(int));
    }
    return sendmsg(chan, &mh, MSG_NOSIGNAL | flags) == (ssize_t)sizeof(b) ? 0
                                                                          : -1;
}

int vfsd_fuse_send(int chan, char kind, uint64_t node, int fd, int flags)
{
    vfsd_fuse_msg m;
    memset(&m, 0, sizeof(m));
    m.kind = kind;
    m.node = node;
    return vfsd_fuse_send_msg_flags(chan, &m, fd, flags);
}

ssize_t vfsd_fuse_recv(int chan, vfsd_fuse_msg *m, int *fd, int flags)
{
    uint8_t b[VFSD_FUSE_WIRE_BYTES];
    union {
        char buf[CMSG_SPACE(sizeof(int) * 4U)];
        struct cmsghdr align;
    } cbuf;
    struct iovec iov = {b, sizeof(b)};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(m, 0, sizeof(*m));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf.buf;
    mh.msg_controllen = sizeof(cbuf.buf);
    *fd = -1;
    ssize_t r = recvmsg(chan, &mh, flags | MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *c = r >= 0 ? CMSG_FIRSTHDR(&mh) : NULL; c != NULL;
         c = CMSG_NXTHDR(&mh, c)) {
        size_t n = c->cmsg_type == SCM_RIGHTS
                       ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int)
                       : 0U;
        for (size_t i = 0; i < n; i++) {
            int got = -1;
            memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (*fd < 0) {
                *fd = got;
            } else {
                (void)close(got);
            }
        }
    }
    if (r > 0 && (size_t)r != sizeof(b)) {
        m->kind = '?';
        return r;
    }
    if (r > 0) {
        m->kind = (char)b[0];
        m->mode = pbx_le_get32(b + 4);
        m->node = pbx_le_get64(b + 8);
        memcpy(m->name, b + 16, VFSD_FUSE_NAME_BYTES);
        m->slot = pbx_le_get32(b + 16 + VFSD_FUSE_NAME_BYTES);
    }
    return r;
}

/* Detaches, lazily, up to 8 pbx-vfsd mounts left at dir by an earlier
 * vfsd (its server killed with it, or still serving descriptors: those
 * keep working). Without it a dead mount fails every stat of dir, and a
 * live one would sit under this vfsd's mount. Only mounts whose source
 * is pbx-vfsd are touched. Runs before readiness only (it may wait for
 * fusermount3). */
static void vfsd_fuse_stale(const char *dir)
{
    size_t dlen = strlen(dir);
    for (int round = 0; round < 8; round++) {
        FILE *f = fopen("/proc/self/mounts", "re");
        char line[4096];
        bool found = false;
        while (f != NULL && !found && fgets(line, sizeof(line), f) != NULL) {
            found = strncmp(line, "pbx-vfsd ", 9U) == 0 &&
                    strncmp(line + 9, dir, dlen) == 0 && line[9U + dlen] == ' ';
        }
        if (f != NULL) {
            (void)fclose(f);
        }
        if (!found) {
            return;
        }
        pbx_peer_log("vfsd", "detaching a pbx-vfsd mount left at %s", dir);
        if (umount2(dir, MNT_DETACH) != 0) {
            pid_t p = fork();
            if (p == 0) {
                execlp("fusermount3", "fusermount3", "-u", "-z", "--", dir,
                       (char *)NULL);
                _exit(127);
            }
            if (p < 0 || waitpid(p, NULL, 0) != p) {
                return;
            }
        }
    }
}

/* Makes the mount point: --fuse-dir's (made 0700 when missing, refused
 * unless it is a directory of vfsd's user), else a fresh directory
 * under /tmp. Returns NULL and stores why in *why when it cannot. */
static const char *vfsd_fuse_dir(bool *own, const char **why)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    struct stat sb;
    *own = f->dir == NULL;
    if (f->dir == NULL) {
        (void)snprintf(f->made, sizeof(f->made), "/tmp/pbx-vfsd-fuse.XXXXXX");
        if (mkdtemp(f->made) == NULL) {
            *why = strerror(errno);
            return NULL;
        }
        return f->made;
    }
    vfsd_fuse_stale(f->dir);
    if (mkdir(f->dir, 0700) != 0 && errno != EEXIST) {
        *why = strerror(errno);
        return NULL;
    }
    if (stat(f->dir, &sb) != 0 || !S_ISDIR(sb.st_mode) ||
        sb.st_uid != getuid() || chmod(f->dir, 0700) != 0) {
        *why = "--fuse-dir is not a directory of vfsd's user";
        return NULL;
    }
    return f->dir;
}

/* Waits for the server's first message: 'K' with its /dev/fuse. */
static bool vfsd_fuse_ready(pid_t child)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    struct pollfd p = {f->chan, POLLIN, 0};
    vfsd_fuse_msg m;
    int fd = -1;
    if (poll(&p, 1, VFSD_FUSE_START_MS) == 1 &&
        vfsd_fuse_recv(f->chan, &m, &fd, MSG_DONTWAIT) > 0 && m.kind == 'K' &&
        fd >= 0) {
        f->dev = fd;
        return true;
    }
    if (fd >= 0) {
        (void)close(fd);
    }
    (void)waitpid(child, NULL, 0);
    return false;
}

void vfsd_fuse_start(void)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    const char *why = "the mount was refused (no /dev/fuse, or no "
                      "permission to mount; the server's line says which)";
    bool own = false;
    int sv[2] = {-1, -1};
    f->chan = -1;
    f->dev = -1;
    f->next_node = 2U;
    f->max = f->max != 0U ? f->max : VFSD_FUSE_OPEN_MAX;
    f->nodes = calloc(f->max, sizeof(vfsd_fuse_node));
    void *live = mmap(NULL, f->max * sizeof(uint64_t), PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    f->live = live != MAP_FAILED ? live : NULL;
    f->mnt =
        f->nodes != NULL && f->live != NULL ? vfsd_fuse_dir(&own, &why) : NULL;
    if (f->mnt != NULL &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
        pid_t child =
            vfsd_fuse_fork(sv[1], sv[0], f->mnt, own, f->max, f->live);
        (void)close(sv[1]);
        f->chan = sv[0];
        f->up = child > 0 && vfsd_fuse_ready(child);
    }
    if (!f->up) {
        if (f->chan >= 0) {
            (void)close(f->chan);
            f->chan = -1;
        }
        if (own && f->mnt != NULL) {
            (void)rmdir(f->mnt);
        }
        pbx_peer_log("vfsd",
                     "FUSE unavailable at %s: %s; OPEN answers "
                     "\"no revocable descriptors\"",
                     f->mnt != NULL ? f->mnt : (f->dir ? f->dir : "/tmp"), why);
        f->told = true;
        return;
    }
    pbx_peer_log("vfsd", "FUSE server mounted at %s (0700, this user only)",
                 f->mnt);
}

/* A fresh entry name: 128 random bits in hex. False when the kernel
 * gives no randomness. */
static bool vfsd_fuse_name(char *name)
{
    static const char hex[] = "0123456789abcdef";
    uint8_t r[VFSD_FUSE_NAME_BYTES / 2U];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        return false;
    }
    for (size_t i = 0; i < sizeof(r); i++) {
        name[2U * i] = hex[r[i] >> 4];
        name[2U * i + 1U] = hex[r[i] & 15U];
    }
    return true;
}

/* A free row of the node table, or NULL when it is full. */
static vfsd_fuse_node *vfsd_fuse_free_row(void)
{
    for (size_t i = 0; i < g_vfsd.fuse.max; i++) {
        if (!g_vfsd.fuse.nodes[i].used) {
            return &g_vfsd.fuse.nodes[i];
        }
    }
    return NULL;
}

uint32_t vfsd_fuse_open(size_t row, const pbx_peer_vfs_call *call, bool *queued)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    vfsd_fuse_msg m;
    memset(&m, 0, sizeof(m));
    *queued = false;
    if (!f->up) {
        return (uint32_t)PBX_E_OBJ_NO_REVOCABLE;
    }
    vfsd_fuse_node *slot = vfsd_fuse_free_row();
    if (slot == NULL) {
        return (uint32_t)PBX_E_PEER_BUSY;
    }
    if (g_vfsd.data[row] < 0 || !vfsd_fuse_name(m.name)) {
        return (uint32_t)PBX_E_OBJ_IO;
    }
    m.kind = 'A';
    m.mode = call->mode;
    m.node = f->next_node++;
    m.slot = (uint32_t)(slot - f->nodes);
    /* Live before the server can see the entry; a full channel (the
     * server does not read) refuses this OPEN, it never waits. */
    __atomic_store_n(&f->live[m.slot], m.node, __ATOMIC_RELEASE);
    if (vfsd_fuse_send_msg_flags(f->chan, &m, g_vfsd.data[row], MSG_DONTWAIT) !=
        0) {
        int e = errno;
        __atomic_store_n(&f->live[m.slot], 0U, __ATOMIC_RELEASE);
        pbx_peer_log("vfsd", "FUSE server not taking OPEN: %s", strerror(e));
        return (uint32_t)(e == EAGAIN ? PBX_E_PEER_BUSY : PBX_E_OBJ_IO);
    }
    slot->used = true;
    slot->pending = true;
    f->npending++;
    slot->id = g_vfsd.objs.rows[row].id;
    slot->gen = g_vfsd.objs.rows[row].gen;
    slot->node = m.node;
    slot->row = row;
    slot->call = *call;
    slot->call.data = NULL;
    *queued = true;
    return 0U;
}

bool vfsd_fuse_pending(size_t row)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
    /* The same object only: a row re-minted after a hang-up is another. */
    for (size_t i = 0; f->npending != 0U && i < f->max; i++) {
        const vfsd_fuse_node *n = &f->nodes[i];
        if (n->used && n->pending && n->row == row && n->id == o->id &&
            n->gen == o->gen) {
            return true;
        }
    }
    return false;
}

/* Drops the kernel's cached pages of node, so that a mapping of it
 * faults again and reaches the server (which answers EIO once revoked).
 * Written to the server's /dev/fuse by vfsd itself: the server never
 * waits for vfsd, so this cannot deadlock with a fault it serves; it
 * waits only while a read of a page of node is in progress there. */
static void vfsd_fuse_inval(uint64_t node)
{
    struct fuse_out_header h;
    struct fuse_notify_inval_inode_out b;
    memset(&h, 0, sizeof(h));
    memset(&b, 0, sizeof(b));
    h.len = (uint32_t)(sizeof(h) + sizeof(b));
    h.error = FUSE_NOTIFY_INVAL_INODE;
    b.ino = node;
    b.off = 0;
    b.len = 0;
    struct iovec iov[2] = {{&h, sizeof(h)}, {&b, sizeof(b)}};
    if (g_vfsd.fuse.dev >= 0) {
        (void)writev(g_vfsd.fuse.dev, iov, 2);
    }
}

void vfsd_fuse_revoke(uint64_t id, uint32_t gen)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    vfsd_fuse_msg msg_r;
    memset(&msg_r, 0, sizeof(msg_r));
    msg_r.kind = 'R';
    for (size_t i = 0; f->up && i < f->max; i++) {
        vfsd_fuse_node *n = &f->nodes[i];
        if (!n->used || n->id != id || n->gen != gen) {
            continue;
        }
        size_t k = (size_t)(n - f->nodes);
        __atomic_store_n(&f->live[k], 0U, __ATOMIC_RELEASE);
        /* A hint that frees the server's row early: lost on a full
         * channel, when the server's check of the table still refuses. A
         * pending OPEN's node is not open anywhere: nothing to drop. */
        msg_r.node = n->node;
        msg_r.slot = (uint32_t)k;
        (void)vfsd_fuse_send_msg_flags(f->chan, &msg_r, -1, MSG_DONTWAIT);
        if (n->pending) {
            f->npending--;
        } else {
            vfsd_fuse_inval(n->node);
        }
        memset(n, 0, sizeof(*n));
    }
}

/* The node table's row of node, or NULL. */
static vfsd_fuse_node *vfsd_fuse_find(uint64_t node)
{
    for (size_t i = 0; node != 0U && i < g_vfsd.fuse.max; i++) {
        if (g_vfsd.fuse.nodes[i].used && g_vfsd.fuse.nodes[i].node == node) {
            return &g_vfsd.fuse.nodes[i];
        }
    }
    return NULL;
}

/* Frees row n: its node is no longer live anywhere. */
static void vfsd_fuse_free(vfsd_fuse_node *n)
{
    __atomic_store_n(&g_vfsd.fuse.live[n - g_vfsd.fuse.nodes], 0U,
                     __ATOMIC_RELEASE);
    memset(n, 0, sizeof(*n));
}

/* Answers pending row n's OPEN with status (and on 0 descriptor fd, which
 * the caller still owns) on its object's provider end, when that object
 * is still the live one that asked; without waiting (a holder that reads
 * no replies loses it). Returns whether the descriptor was sent. */
static bool vfsd_fuse_answer(vfsd_fuse_node *n, uint32_t status, int fd)
{
    const pbx_peer_obj *o = &g_vfsd.objs.rows[n->row];
    pbx_peer_vfs_call call = n->call;
    size_t len = 0;
    n->pending = false;
    g_vfsd.fuse.npending--;
    if (o->state != PBX_PEER_OBJ_LIVE || o->id != n->id || o->gen != n->gen ||
        o->provider < 0) {
        return false;
    }
    call.status = status;
    pbx_err e =
        status == 0U
            ? pbx_peer_vfs_obj_open_reply_encode(&call, g_vfsd.obj_out,
                                                 sizeof(g_vfsd.obj_out), &len)
            : pbx_peer_vfs_obj_reply_encode(&call, NULL, g_vfsd.obj_out,
                                            sizeof(g_vfsd.obj_out), &len);
    PBX_ASSERT(e == PBX_OK);
    return pbx_peer_io_send_fds(o->provider, g_vfsd.obj_out, len, &fd,
                                status == 0U ? 1U : 0U, MSG_DONTWAIT) == 0 &&
           status == 0U;
}

/* Applies one message of the server's: 'O' (with fd, owned here) or 'E'
 * answers a pending OPEN, 'C' frees a closed descriptor's row. */
static void vfsd_fuse_apply(const vfsd_fuse_msg *m, int fd)
{
    vfsd_fuse_node *n = vfsd_fuse_find(m->node);
    if (m->kind == 'O' && n != NULL && n->pending && fd >= 0) {
        /* Unsent (the object is gone, or its holder reads nothing): the
         * close below is the descriptor's last, and 'C' frees the row. */
        (void)vfsd_fuse_answer(n, 0U, fd);
    } else if (m->kind == 'E' && n != NULL && n->pending) {
        pbx_peer_log("vfsd", "FUSE open of a fresh entry failed (node %llu)",
                     (unsigned long long)m->node);
        (void)vfsd_fuse_answer(n, (uint32_t)PBX_E_OBJ_IO, -1);
        vfsd_fuse_free(n);
    } else if (m->kind == 'C' && n != NULL && !n->pending) {
        vfsd_fuse_free(n);
    }
    if (fd >= 0) {
        (void)close(fd);
    }
}

/* The server is gone: every queued OPEN is answered, nothing more is
 * handed out. */
static void vfsd_fuse_gone(void)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    pbx_peer_log("vfsd", "FUSE server gone; OPEN answers \"no "
                         "revocable descriptors\" from now on");
    (void)close(f->chan);
    f->chan = -1;
    f->up = false;
    for (size_t i = 0; i < f->max; i++) {
        if (f->nodes[i].used && f->nodes[i].pending) {
            (void)vfsd_fuse_answer(&f->nodes[i],
                                   (uint32_t)PBX_E_OBJ_NO_REVOCABLE, -1);
            vfsd_fuse_free(&f->nodes[i]);
        }
    }
}

void vfsd_fuse_input(void)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    for (size_t i = 0; i < 64U && f->chan >= 0; i++) {
        vfsd_fuse_msg m;
        int fd = -1;
        ssize_t r = vfsd_fuse_recv(f->chan, &m, &fd, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            return;
        }
        if (r <= 0) {
            if (fd >= 0) {
                (void)close(fd);
            }
            vfsd_fuse_gone();
            return;
        }
        vfsd_fuse_apply(&m, fd);
    }
}
