/*
 * vfsd_fuse.c: vfsd's side of its revocable descriptors (vfsd_fuse.h,
 * docs/HOST.md "Revocable descriptors"): the server started at vfsd's
 * start, OPEN served by a one-use entry vfsd opens itself, and
 * revocation at RETIRE or the route's loss.
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
 * u64 node, the name's bytes. */
#define VFSD_FUSE_WIRE_BYTES (16U + VFSD_FUSE_NAME_BYTES)

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

int vfsd_fuse_send(int chan, char kind, uint64_t node, int fd)
{
    vfsd_fuse_msg m;
    memset(&m, 0, sizeof(m));
    m.kind = kind;
    m.node = node;
    return vfsd_fuse_send_msg(chan, &m, fd);
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
    }
    return r;
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
    f->mnt = f->nodes != NULL ? vfsd_fuse_dir(&own, &why) : NULL;
    if (f->mnt != NULL &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0) {
        pid_t child = vfsd_fuse_fork(sv[1], sv[0], f->mnt, own, f->max);
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

/* Opens the entry named m->name on the mount for m->mode; returns the
 * descriptor or -1 (errno set). */
static int vfsd_fuse_open_entry(const vfsd_fuse_msg *m)
{
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%.*s", g_vfsd.fuse.mnt,
                     (int)VFSD_FUSE_NAME_BYTES, m->name);
    if (n < 0 || (size_t)n >= sizeof(path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int flags = m->mode == 1U ? O_RDONLY : m->mode == 3U ? O_RDWR : O_WRONLY;
    return open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
}

uint32_t vfsd_fuse_open(size_t row, uint32_t mode, int *fd)
{
    vfsd_fuse *f = &g_vfsd.fuse;
    vfsd_fuse_msg m;
    memset(&m, 0, sizeof(m));
    *fd = -1;
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
    m.mode = mode;
    m.node = f->next_node++;
    if (vfsd_fuse_send_msg(f->chan, &m, g_vfsd.data[row]) != 0) {
        pbx_peer_log("vfsd", "FUSE server unreachable: %s", strerror(errno));
        return (uint32_t)PBX_E_OBJ_IO;
    }
    int got = vfsd_fuse_open_entry(&m);
    int e = errno;
    /* The name is dropped whatever happened: it is never opened again. */
    (void)vfsd_fuse_send(f->chan, 'N', m.node, -1);
    if (got < 0) {
        pbx_peer_log("vfsd", "FUSE open of a fresh entry failed: %s",
                     strerror(e));
        return (uint32_t)PBX_E_OBJ_IO;
    }
    slot->used = true;
    slot->id = g_vfsd.objs.rows[row].id;
    slot->gen = g_vfsd.objs.rows[row].gen;
    slot->node = m.node;
    *fd = got;
    return 0U;
}

/* Drops the kernel's cached pages of node, so that a mapping of it
 * faults again and reaches the server (which answers EIO once revoked).
 * Written to the server's /dev/fuse by vfsd itself: the server never
 * waits for vfsd, so this cannot deadlock with a fault it serves. */
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
    for (size_t i = 0; f->up && i < f->max; i++) {
        vfsd_fuse_node *n = &f->nodes[i];
        if (!n->used || n->id != id || n->gen != gen) {
            continue;
        }
        (void)vfsd_fuse_send(f->chan, 'R', n->node, -1);
        vfsd_fuse_inval(n->node);
        memset(n, 0, sizeof(*n));
    }
}

/* Frees the node table's row of node (its descriptor was closed). */
static void vfsd_fuse_closed(uint64_t node)
{
    for (size_t i = 0; i < g_vfsd.fuse.max; i++) {
        if (g_vfsd.fuse.nodes[i].used && g_vfsd.fuse.nodes[i].node == node) {
            memset(&g_vfsd.fuse.nodes[i], 0, sizeof(g_vfsd.fuse.nodes[i]));
            return;
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
        if (fd >= 0) {
            (void)close(fd);
        }
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            return;
        }
        if (r <= 0) {
            /* The server is gone: nothing more is handed out. */
            pbx_peer_log("vfsd", "FUSE server gone; OPEN answers \"no "
                                 "revocable descriptors\" from now on");
            (void)close(f->chan);
            f->chan = -1;
            f->up = false;
            return;
        }
        if (m.kind == 'C') {
            vfsd_fuse_closed(m.node);
        }
    }
}
