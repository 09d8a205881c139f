/*
 * vfsd_objects.c: the reference vfsd's minted objects: the calls queued
 * on a provider end served by the object's grant, a retired object's
 * queue drained and its connection cut, and hang-ups (docs/HOST.md).
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
    case PBX_PEER_OP_OBJ_OPEN:
        return "open";
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
    size_t n = 0;
    /* A CREATE object's file comes into being with its first OPEN or
     * WRITE: only an approved grant's holder can make one. */
    if (call.status == 0U &&
        (call.op == PBX_PEER_OP_OBJ_OPEN || call.op == PBX_PEER_OP_OBJ_WRITE)) {
        call.status = vfsd_create_now((size_t)row);
    }
    if (call.status == 0U && call.op == PBX_PEER_OP_OBJ_OPEN) {
        /* Queued at the FUSE server: answered when it has opened the
         * entry (vfsd_fuse_input), never waited for here. */
        bool queued = false;
        call.status = vfsd_fuse_open((size_t)row, &call, &queued);
        if (queued) {
            t->served++;
            return;
        }
    } else if (call.status == 0U) {
        n = vfsd_obj_do((size_t)row, &call);
    }
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
    if (pbx_peer_io_send_fds(fd, g_vfsd.obj_out, n, NULL, 0U, MSG_DONTWAIT) !=
        0) {
        t->dropped++;
    }
}

/* The whole wire id of local id (the inode of the provider end): what
 * powerboxd, ttyd and procd name the object by, so vfsd's log lines can
 * be matched with theirs. */
unsigned long long vfsd_wire(uint64_t local)
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
bool vfsd_obj_serve(size_t row)
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
        /* A queued OPEN is answered before any later call of its object. */
        if (vfsd_fuse_pending(row)) {
            break;
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
void vfsd_obj_cut(int prov, uint64_t id, uint32_t gen)
{
    /* The descriptors OPEN handed out fail from the next access on. */
    vfsd_fuse_revoke(id, gen);
    if (prov >= 0) {
        vfsd_loop_unwatch(prov);
        vfsd_obj_drain(prov, id, gen);
        (void)shutdown(prov, SHUT_RDWR);
        (void)close(prov);
    }
    size_t row = 0;
    if (pbx_peer_objtab_find(&g_vfsd.objs, id, gen, &row)) {
        vfsd_row_files(row);
    }
}

/* The provider end of live row hung up: every receiver copy of the
 * object is closed (refused at FOUND, detached after a denial, revoked at
 * procd), so nobody holds it and the end is closed at once. The row stays
 * HUNG, holding nothing, to acknowledge a RETIRE that may still come. */
void vfsd_hangup(size_t row)
{
    const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
    uint64_t id = o->id;
    uint32_t gen = o->gen;
    int prov = -1;
    if (pbx_peer_objtab_hangup(&g_vfsd.objs, row, &prov) != 0U) {
        return;
    }
    if (prov >= 0) {
        vfsd_loop_unwatch(prov);
        (void)close(prov);
    }
    vfsd_row_files(row);
    pbx_peer_log("vfsd", "HANG-UP object %llu gen %u: no copy left, row freed",
                 vfsd_wire(id), gen);
}
