/*
 * vfsd_fuse_server.c: vfsd's FUSE server (docs/HOST.md, "Revocable
 * descriptors"). It runs in a child process of vfsd, so that vfsd never
 * waits on it, and so that the mount outlives vfsd long enough to answer
 * every later access with EIO rather than leave the kernel's "not
 * connected". It serves a flat directory of one-use entries that vfsd
 * adds over its channel: each names one object's file (a descriptor vfsd
 * sent), is looked up and opened only by this server's helper thread
 * (which sends the open descriptor back to vfsd), and answers every read,
 * write and stat of the open file (direct I/O) only while vfsd's
 * revocation table still names it. When vfsd is gone it revokes
 * everything, drops every node's cached pages and detaches its own
 * mount. Uses Debian's libfuse3 low-level API.
 */
#define _GNU_SOURCE
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/vfsd/vfsd_fuse.h"

/* One entry: an object's file, named until the helper has opened it. */
typedef struct fs_entry {
    bool used;
    bool named;  /* the name still resolves (until the helper's 'D') */
    bool opened; /* opened once: a second OPEN is refused */
    bool live;   /* false once revoked: every access is EIO */
    uint32_t mode;
    uint32_t slot; /* its row of vfsd's revocation table */
    uint64_t node;
    int fd; /* the object's file (owned; -1 once revoked) */
    char name[VFSD_FUSE_NAME_BYTES + 1U];
} fs_entry;

/* The server's whole state (the child process's static storage). */
typedef struct fs_state {
    fs_entry *rows;
    size_t nrows;
    int chan;             /* the channel to vfsd; -1 once vfsd is gone */
    int help;             /* the main thread's end of the helper's channel */
    int help_end;         /* the helper thread's end */
    int help_chan;        /* the helper's copy of chan (its 'O' and 'E') */
    pid_t help_tid;       /* the helper thread (atomic): the only opener */
    const uint64_t *live; /* vfsd's revocation table (vfsd_fuse.h) */
    pthread_t gone; /* the thread that cuts everything when vfsd is gone */
    bool gone_started;
    int root; /* O_PATH of this server's mount root (atomic), or -1 */
    const char *mnt;
    bool own_dir; /* vfsd made the mount point: removed at the end */
    struct fuse_session *se;
} fs_state;

static fs_state g_fs;

/* The entry of node, or NULL. */
static fs_entry *fs_find(fuse_ino_t node)
{
    for (size_t i = 0; i < g_fs.nrows; i++) {
        if (g_fs.rows[i].used && g_fs.rows[i].node == (uint64_t)node) {
            return &g_fs.rows[i];
        }
    }
    return NULL;
}

/* Revokes e: its file is closed and every later access is EIO. */
static void fs_revoke(fs_entry *e);

/* Whether e is still live: vfsd's table still names its node in its
 * slot (revoked there, e is revoked here too). Checked before every
 * access, so that a revocation vfsd stored is in force whether or not
 * its 'R' came through the channel. */
static bool fs_live(fs_entry *e)
{
    if (e == NULL || !e->live || e->fd < 0) {
        return false;
    }
    if (__atomic_load_n(&g_fs.live[e->slot], __ATOMIC_ACQUIRE) != e->node) {
        fs_revoke(e);
        return false;
    }
    return true;
}

/* Frees e once nothing can reach it: no name and no open file. */
static void fs_maybe_free(fs_entry *e)
{
    if (e->named || e->opened) {
        return;
    }
    if (e->fd >= 0) {
        (void)close(e->fd);
    }
    memset(e, 0, sizeof(*e));
    e->fd = -1;
}

/* Revokes e: its file is closed and every later access is EIO. */
static void fs_revoke(fs_entry *e)
{
    e->live = false;
    e->named = false;
    if (e->fd >= 0) {
        (void)close(e->fd);
        e->fd = -1;
    }
}

/* Tells vfsd, without waiting, that node's open failed (a full channel
 * loses it: the OPEN stays queued at vfsd until vfsd or this server
 * ends). */
static void fs_tell_failed(uint64_t node)
{
    if (g_fs.chan >= 0) {
        (void)vfsd_fuse_send(g_fs.chan, 'E', node, -1, MSG_DONTWAIT);
    }
}

/* Adds the entry message m (with descriptor fd, owned) sent by vfsd, in
 * the row of its slot (an entry still there is stale: vfsd reuses a slot
 * only once its node is revoked or closed), and asks the helper thread to
 * open it. */
static void fs_add(const vfsd_fuse_msg *m, int fd)
{
    if (m->slot >= g_fs.nrows || m->node == 0U) {
        pbx_peer_log("vfsd-fuse", "entry slot %u out of range: refused",
                     (unsigned)m->slot);
        (void)close(fd);
        fs_tell_failed(m->node);
        return;
    }
    fs_entry *e = &g_fs.rows[m->slot];
    if (e->used) {
        fs_revoke(e);
    }
    memset(e, 0, sizeof(*e));
    e->used = true;
    e->named = true;
    e->live = true;
    e->mode = m->mode;
    e->slot = m->slot;
    e->node = m->node;
    e->fd = fd;
    memcpy(e->name, m->name, VFSD_FUSE_NAME_BYTES);
    e->name[VFSD_FUSE_NAME_BYTES] = '\0';
    if (vfsd_fuse_send_msg_flags(g_fs.help, m, -1, MSG_DONTWAIT) != 0) {
        fs_revoke(e);
        memset(e, 0, sizeof(*e));
        e->fd = -1;
        fs_tell_failed(m->node);
    }
}

/* The mount id of descriptor fd (the "mnt_id:" of /proc/self/fdinfo), or
 * -1. */
static long fs_mnt_id(int fd)
{
    char path[64];
    char line[256];
    long id = -1;
    (void)snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
    FILE *f = fopen(path, "re");
    for (int i = 0;
         f != NULL && i < 64 && id < 0 && fgets(line, sizeof(line), f) != NULL;
         i++) {
        if (strncmp(line, "mnt_id:", 7U) == 0) {
            id = strtol(line + 7, NULL, 10);
        }
    }
    if (f != NULL) {
        (void)fclose(f);
    }
    return id;
}

/* Whether mount id is the topmost mount at the mount point (the last
 * line of /proc/self/mountinfo that names it), so that a detach by path
 * detaches this server's mount and no later vfsd's. */
static bool fs_on_top(long id)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    char line[4096];
    char point[4096];
    long top = -1;
    for (int i = 0; f != NULL && i < 65536 && fgets(line, sizeof(line), f);
         i++) {
        /* Field 1 is the mount id, field 5 the mount point. */
        char *end = NULL;
        long mid = strtol(line, &end, 10);
        if (end != line && sscanf(end, " %*s %*s %*s %4095s", point) == 1 &&
            strcmp(point, g_fs.mnt) == 0) {
            top = mid;
        }
    }
    if (f != NULL) {
        (void)fclose(f);
    }
    return top >= 0 && top == id;
}

/* Detaches this server's mount lazily, so that the server ends once the
 * last descriptor on it is closed, and removes the mount point vfsd made.
 * By the descriptor of the mount's root where it can (umount2 needs the
 * privilege), else by path (fusermount3) only while its mount is the
 * topmost there: a later vfsd may have mounted on the same directory,
 * and its mount is never taken. A mount already detached (a later vfsd
 * did it) is left alone. */
static void fs_detach(void)
{
    char self[64];
    int root = __atomic_load_n(&g_fs.root, __ATOMIC_ACQUIRE);
    (void)snprintf(self, sizeof(self), "/proc/self/fd/%d", root);
    long id = root >= 0 ? fs_mnt_id(root) : -1;
    bool by_path = root < 0 || (id >= 0 && fs_on_top(id));
    bool done =
        root >= 0 && (umount2(self, MNT_DETACH) == 0 || errno == EINVAL);
    /* The root's descriptor would keep the detached mount, and so this
     * server, alive. */
    if (root >= 0) {
        (void)close(root);
        __atomic_store_n(&g_fs.root, -1, __ATOMIC_RELEASE);
    }
    if (!done && by_path && umount2(g_fs.mnt, MNT_DETACH) != 0) {
        pid_t p = fork();
        if (p == 0) {
            execlp("fusermount3", "fusermount3", "-u", "-z", "--", g_fs.mnt,
                   (char *)NULL);
            _exit(127);
        }
        if (p > 0) {
            (void)waitpid(p, NULL, 0);
        }
    }
    if (g_fs.own_dir) {
        (void)rmdir(g_fs.mnt);
    }
}

/* The nodes whose pages the cut drops (owned by the thread). */
typedef struct fs_cut {
    uint64_t *nodes;
    size_t n;
} fs_cut;

/* vfsd is gone: drops the kernel's pages of every node (a FUSE inode
 * invalidation, offset 0 and length 0: every mapping of it faults again
 * and reaches this server, which refuses), then detaches the mount. A
 * thread of its own: an invalidation may wait for a page whose read the
 * main thread must answer first. */
static void *fs_cut_thread(void *arg)
{
    fs_cut *c = arg;
    for (size_t i = 0; i < c->n; i++) {
        (void)fuse_lowlevel_notify_inval_inode(g_fs.se, (fuse_ino_t)c->nodes[i],
                                               0, 0);
    }
    fs_detach();
    pbx_peer_log("vfsd-fuse",
                 "vfsd gone: %zu node(s) revoked and their pages dropped, "
                 "mount detached",
                 c->n);
    free(c->nodes);
    free(c);
    return NULL;
}

/* vfsd is gone: every entry is revoked, its pages dropped and the mount
 * detached (fs_cut_thread), so that the server ends once the last
 * descriptor on it is closed. */
static void fs_vfsd_gone(void)
{
    fs_cut *c = calloc(1, sizeof(*c));
    uint64_t *nodes = calloc(g_fs.nrows + 1U, sizeof(uint64_t));
    size_t n = 0;
    for (size_t i = 0; i < g_fs.nrows; i++) {
        if (g_fs.rows[i].used) {
            fs_revoke(&g_fs.rows[i]);
        }
        if (g_fs.rows[i].used && nodes != NULL) {
            nodes[n++] = g_fs.rows[i].node;
        }
    }
    (void)close(g_fs.chan);
    g_fs.chan = -1;
    if (c == NULL || nodes == NULL) {
        free(c);
        free(nodes);
        fs_detach();
        return;
    }
    c->nodes = nodes;
    c->n = n;
    g_fs.gone_started = pthread_create(&g_fs.gone, NULL, fs_cut_thread, c) == 0;
    if (!g_fs.gone_started) {
        free(nodes);
        free(c);
        fs_detach();
    }
}

/* Applies every message vfsd has queued, without waiting. */
static void fs_drain(void)
{
    for (size_t i = 0; i < 4096U && g_fs.chan >= 0; i++) {
        vfsd_fuse_msg m;
        int fd = -1;
        ssize_t r = vfsd_fuse_recv(g_fs.chan, &m, &fd, MSG_DONTWAIT);
        if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
            return;
        }
        if (r <= 0) {
            fs_vfsd_gone();
            return;
        }
        fs_entry *e = m.kind == 'A' ? NULL : fs_find((fuse_ino_t)m.node);
        if (m.kind == 'A' && fd >= 0) {
            fs_add(&m, fd);
            fd = -1;
        } else if (m.kind == 'R' && e != NULL) {
            /* Freed at once, still open or not: a node number is never
             * reused, and every request on an unknown node is EIO. */
            fs_revoke(e);
            memset(e, 0, sizeof(*e));
            e->fd = -1;
        }
        if (fd >= 0) {
            (void)close(fd);
        }
    }
}

/* Applies what the helper thread reported: 'D', node's open is over
 * (its name is dropped, whatever the open gave). */
static void fs_helper_input(void)
{
    for (size_t i = 0; i < 4096U; i++) {
        vfsd_fuse_msg m;
        int fd = -1;
        ssize_t r = vfsd_fuse_recv(g_fs.help, &m, &fd, MSG_DONTWAIT);
        if (fd >= 0) {
            (void)close(fd);
        }
        if (r <= 0) {
            return;
        }
        fs_entry *e = fs_find((fuse_ino_t)m.node);
        if (m.kind == 'D' && e != NULL) {
            e->named = false;
            fs_maybe_free(e);
        }
    }
}

/* Opens the entry of message m on the mount for m->mode and sends the
 * descriptor to vfsd ('O'), or 'E'; then tells the main thread ('D'). The
 * helper's open waits for the main thread's answers, never the
 * reverse. */
static void fs_helper_open(const vfsd_fuse_msg *m)
{
    char path[4096];
    int n = snprintf(path, sizeof(path), "%s/%.*s", g_fs.mnt,
                     (int)VFSD_FUSE_NAME_BYTES, m->name);
    int flags = m->mode == 1U ? O_RDONLY : m->mode == 3U ? O_RDWR : O_WRONLY;
    int fd = n > 0 && (size_t)n < sizeof(path)
                 ? open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY)
                 : -1;
    if (fd < 0) {
        pbx_peer_log("vfsd-fuse", "open of a fresh entry failed: %s",
                     strerror(errno));
    }
    (void)vfsd_fuse_send(g_fs.help_chan, fd >= 0 ? 'O' : 'E', m->node, fd, 0);
    if (fd >= 0) {
        (void)close(fd);
    }
    (void)vfsd_fuse_send(g_fs.help_end, 'D', m->node, -1, 0);
}

/* The helper thread: opens each entry the main thread names (vfsd_fuse.h,
 * 'A'), until the main thread's end closes. */
static void *fs_helper(void *arg)
{
    (void)arg;
    __atomic_store_n(&g_fs.help_tid, gettid(), __ATOMIC_RELEASE);
    /* The mount's root, taken here: the lookup it may need is answered
     * by the main thread. */
    int root = open(g_fs.mnt, O_PATH | O_DIRECTORY | O_CLOEXEC);
    __atomic_store_n(&g_fs.root, root, __ATOMIC_RELEASE);
    for (;;) {
        vfsd_fuse_msg m;
        int fd = -1;
        ssize_t r = vfsd_fuse_recv(g_fs.help_end, &m, &fd, 0);
        if (fd >= 0) {
            (void)close(fd);
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return NULL;
        }
        if (m.kind == 'A') {
            fs_helper_open(&m);
        }
    }
}

/* Whether req comes from the helper thread: nobody else looks up or
 * opens an entry. */
static bool fs_from_helper(fuse_req_t req)
{
    const struct fuse_ctx *c = fuse_req_ctx(req);
    pid_t tid = __atomic_load_n(&g_fs.help_tid, __ATOMIC_ACQUIRE);
    return c != NULL && tid > 0 && c->pid == tid;
}

/* The attributes of e (live) or of the root directory (e NULL). */
static int fs_attr(fs_entry *e, fuse_ino_t node, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_ino = node;
    st->st_uid = getuid();
    st->st_gid = getgid();
    if (e == NULL) {
        st->st_mode = S_IFDIR | 0500;
        st->st_nlink = 2;
        return 0;
    }
    struct stat real;
    if (!fs_live(e) || fstat(e->fd, &real) != 0) {
        return EIO;
    }
    st->st_mode = (mode_t)(S_IFREG | (e->mode == 1U   ? 0400
                                      : e->mode == 3U ? 0600
                                                      : 0200));
    st->st_nlink = 1;
    st->st_size = real.st_size;
    st->st_blksize = 65536;
    st->st_blocks = real.st_blocks;
    st->st_atim = real.st_atim;
    st->st_mtim = real.st_mtim;
    st->st_ctim = real.st_ctim;
    return 0;
}

static void fs_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
    struct fuse_entry_param ep;
    memset(&ep, 0, sizeof(ep));
    if (parent != FUSE_ROOT_ID || !fs_from_helper(req)) {
        (void)fuse_reply_err(req, parent != FUSE_ROOT_ID ? ENOENT : EACCES);
        return;
    }
    for (size_t i = 0; i < g_fs.nrows; i++) {
        fs_entry *e = &g_fs.rows[i];
        if (e->used && e->named && !e->opened && fs_live(e) &&
            strcmp(e->name, name) == 0 &&
            fs_attr(e, (fuse_ino_t)e->node, &ep.attr) == 0) {
            ep.ino = (fuse_ino_t)e->node;
            ep.generation = 1;
            (void)fuse_reply_entry(req, &ep);
            return;
        }
    }
    (void)fuse_reply_err(req, ENOENT);
}

static void fs_getattr(fuse_req_t req, fuse_ino_t node,
                       struct fuse_file_info *fi)
{
    (void)fi;
    struct stat st;
    fs_entry *e = node == FUSE_ROOT_ID ? NULL : fs_find(node);
    if (node != FUSE_ROOT_ID && e == NULL) {
        (void)fuse_reply_err(req, EIO);
        return;
    }
    int err = fs_attr(e, node, &st);
    if (err != 0) {
        (void)fuse_reply_err(req, err);
        return;
    }
    (void)fuse_reply_attr(req, &st, 0.0);
}

static void fs_open(fuse_req_t req, fuse_ino_t node, struct fuse_file_info *fi)
{
    fs_entry *e = fs_find(node);
    int acc = fi->flags & O_ACCMODE;
    int want = e == NULL || e->mode == 1U ? O_RDONLY
               : e->mode == 3U            ? O_RDWR
                                          : O_WRONLY;
    if (e == NULL || !fs_from_helper(req) || e->opened || !e->named ||
        !fs_live(e) || acc != want || (fi->flags & O_TRUNC) != 0) {
        (void)fuse_reply_err(req, EACCES);
        return;
    }
    e->opened = true;
    fi->fh = e->node;
    fi->direct_io = 1;
    fi->keep_cache = 0;
    /* No FLUSH at close (FOPEN_NOFLUSH): with direct I/O there is nothing
     * to flush, and a close must never wait for this server. vfsd closes
     * its copy of every descriptor it hands out, and a stopped server
     * would otherwise hold vfsd's event loop in close(). */
    fi->noflush = 1;
    (void)fuse_reply_open(req, fi);
}

static void fs_read(fuse_req_t req, fuse_ino_t node, size_t size, off_t off,
                    struct fuse_file_info *fi)
{
    (void)fi;
    fs_entry *e = fs_find(node);
    /* Mode 1 reads, mode 2 writes, mode 3 does both (a write grant). */
    if (!fs_live(e) || (e->mode & 1U) == 0U) {
        (void)fuse_reply_err(req, e != NULL && e->live ? EBADF : EIO);
        return;
    }
    /* The bytes go from the object's file to the kernel by splice where
     * it can (libfuse falls back to a copy): fewer copies per read. */
    struct fuse_bufvec bv = FUSE_BUFVEC_INIT(size);
    bv.buf[0].flags = (enum fuse_buf_flags)(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    bv.buf[0].fd = e->fd;
    bv.buf[0].pos = off;
    (void)fuse_reply_data(req, &bv, FUSE_BUF_SPLICE_MOVE);
}

static void fs_write(fuse_req_t req, fuse_ino_t node, const char *data,
                     size_t size, off_t off, struct fuse_file_info *fi)
{
    (void)fi;
    fs_entry *e = fs_find(node);
    if (!fs_live(e) || (e->mode & 2U) == 0U) {
        (void)fuse_reply_err(req, e != NULL && e->live ? EBADF : EIO);
        return;
    }
    ssize_t r = pwrite(e->fd, data, size, off);
    if (r < 0) {
        (void)fuse_reply_err(req, EIO);
        return;
    }
    (void)fuse_reply_write(req, (size_t)r);
}

static void fs_setattr(fuse_req_t req, fuse_ino_t node, struct stat *attr,
                       int to_set, struct fuse_file_info *fi)
{
    (void)fi;
    fs_entry *e = fs_find(node);
    struct stat st;
    if (!fs_live(e)) {
        (void)fuse_reply_err(req, EIO);
        return;
    }
    /* A truncation may come with the times the kernel sets on it; every
     * other change (mode, owner, times alone) is refused. */
    const int times =
        FUSE_SET_ATTR_MTIME | FUSE_SET_ATTR_MTIME_NOW | FUSE_SET_ATTR_CTIME;
    if ((to_set & FUSE_SET_ATTR_SIZE) == 0 ||
        (to_set & ~(FUSE_SET_ATTR_SIZE | times)) != 0 || (e->mode & 2U) == 0U) {
        (void)fuse_reply_err(req, EPERM);
        return;
    }
    if (ftruncate(e->fd, attr->st_size) != 0) {
        (void)fuse_reply_err(req, EIO);
        return;
    }
    int err = fs_attr(e, node, &st);
    if (err != 0) {
        (void)fuse_reply_err(req, err);
        return;
    }
    (void)fuse_reply_attr(req, &st, 0.0);
}

static void fs_release(fuse_req_t req, fuse_ino_t node,
                       struct fuse_file_info *fi)
{
    (void)fi;
    fs_entry *e = fs_find(node);
    if (e != NULL) {
        e->opened = false;
        e->named = false;
        fs_maybe_free(e);
        /* vfsd frees its row: the bound counts open descriptors. A full
         * channel loses this, and the row waits for the revocation. */
        if (g_fs.chan >= 0) {
            vfsd_fuse_msg m;
            memset(&m, 0, sizeof(m));
            m.kind = 'C';
            m.node = (uint64_t)node;
            (void)vfsd_fuse_send_msg_flags(g_fs.chan, &m, -1, MSG_DONTWAIT);
        }
    }
    (void)fuse_reply_err(req, 0);
}

static void fs_fsync(fuse_req_t req, fuse_ino_t node, int datasync,
                     struct fuse_file_info *fi)
{
    (void)datasync;
    (void)fi;
    fs_entry *e = fs_find(node);
    bool ok = fs_live(e) && fdatasync(e->fd) == 0;
    (void)fuse_reply_err(req, ok ? 0 : EIO);
}

static void fs_opendir(fuse_req_t req, fuse_ino_t node,
                       struct fuse_file_info *fi)
{
    (void)node;
    (void)fi;
    /* Nobody lists the mount: names are handed to vfsd alone. */
    (void)fuse_reply_err(req, EACCES);
}

/* Asks the kernel for spliced replies (reads without a copy through this
 * process) and nothing that would cache: no writeback cache. */
static void fs_init(void *userdata, struct fuse_conn_info *conn)
{
    (void)userdata;
    conn->want |=
        conn->capable & (FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE);
    conn->want &= ~(unsigned)FUSE_CAP_WRITEBACK_CACHE;
}

static const struct fuse_lowlevel_ops fs_ops = {
    .init = fs_init,
    .lookup = fs_lookup,
    .getattr = fs_getattr,
    .setattr = fs_setattr,
    .open = fs_open,
    .read = fs_read,
    .write = fs_write,
    .release = fs_release,
    .fsync = fs_fsync,
    .opendir = fs_opendir,
};

/* Serves the mount until the kernel ends the connection (the mount was
 * detached and its last open file closed). */
static void fs_loop(void)
{
    struct fuse_buf buf;
    memset(&buf, 0, sizeof(buf));
    int ffd = fuse_session_fd(g_fs.se);
    for (;;) {
        struct pollfd p[3] = {
            {ffd, POLLIN, 0}, {g_fs.help, POLLIN, 0}, {g_fs.chan, POLLIN, 0}};
        if (poll(p, g_fs.chan >= 0 ? 3U : 2U, -1) < 0 && errno != EINTR) {
            break;
        }
        /* vfsd's messages first: a revocation is in force from vfsd's
         * table already, its 'R' only frees the row early. */
        if (g_fs.chan >= 0 && p[2].revents != 0) {
            fs_drain();
        }
        if (p[1].revents != 0) {
            fs_helper_input();
        }
        if ((p[0].revents & POLLIN) != 0) {
            int r = fuse_session_receive_buf(g_fs.se, &buf);
            if (r == -EINTR || r == -EAGAIN) {
                continue;
            }
            if (r <= 0) {
                break;
            }
            fuse_session_process_buf(g_fs.se, &buf);
        } else if ((p[0].revents & (POLLERR | POLLHUP)) != 0) {
            break;
        }
    }
    free(buf.mem);
}

/* Starts the helper thread on a fresh channel; false when it cannot. */
static bool fs_helper_start(void)
{
    int sv[2] = {-1, -1};
    pthread_t t;
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        return false;
    }
    g_fs.help = sv[0];
    g_fs.help_end = sv[1];
    g_fs.help_chan = fcntl(g_fs.chan, F_DUPFD_CLOEXEC, 0);
    if (g_fs.help_chan < 0 || pthread_create(&t, NULL, fs_helper, NULL) != 0) {
        return false;
    }
    (void)pthread_detach(t);
    return true;
}

/* The child's whole life: mount, report to vfsd, serve. Never returns. */
static void fs_child(int chan, const char *mnt, bool own_dir, size_t rows,
                     const uint64_t *live)
{
    static char *argv0[] = {"pbx-vfsd-fuse", "-o", "fsname=pbx-vfsd,noexec",
                            NULL};
    struct fuse_args args = FUSE_ARGS_INIT(3, argv0);
    (void)signal(SIGTERM, SIG_IGN);
    (void)signal(SIGINT, SIG_IGN);
    (void)signal(SIGHUP, SIG_IGN);
    (void)signal(SIGPIPE, SIG_IGN);
    g_fs.chan = chan;
    g_fs.root = -1;
    g_fs.mnt = mnt;
    g_fs.own_dir = own_dir;
    g_fs.live = live;
    g_fs.nrows = rows;
    g_fs.rows = calloc(rows, sizeof(fs_entry));
    g_fs.se = g_fs.rows != NULL
                  ? fuse_session_new(&args, &fs_ops, sizeof(fs_ops), NULL)
                  : NULL;
    if (g_fs.se == NULL || fuse_session_mount(g_fs.se, mnt) != 0) {
        (void)vfsd_fuse_send(chan, 'F', 0U, -1, 0);
        _exit(1);
    }
    for (size_t i = 0; i < rows; i++) {
        g_fs.rows[i].fd = -1;
    }
    if (!fs_helper_start() ||
        vfsd_fuse_send(chan, 'K', 0U, fuse_session_fd(g_fs.se), 0) != 0) {
        fs_detach();
        _exit(1);
    }
    fs_loop();
    if (g_fs.gone_started) {
        (void)pthread_join(g_fs.gone, NULL);
    }
    _exit(0);
}

pid_t vfsd_fuse_fork(int chan_child, int chan_parent, const char *mnt,
                     bool own_dir, size_t rows, uint64_t *live)
{
    pid_t p = fork();
    if (p != 0) {
        return p;
    }
    /* The child holds nothing of vfsd's but its channel end and the
     * revocation table: a copy of an object's provider end would keep the
     * object from hanging up. */
    (void)close(chan_parent);
    if (dup2(chan_child, 3) != 3) {
        _exit(1);
    }
    (void)close_range(4U, ~0U, 0);
    fs_child(3, mnt, own_dir, rows, live);
    return -1;
}
