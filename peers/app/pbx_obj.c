/*
 * pbx_obj.c: a program's calls on an object vfsd minted. The wire is
 * vfsd's object codec (peers/lib/pbx_peer_vfs.h); this file adds the
 * socket calls, the wait for the matching reply and the chunking of long
 * reads and writes.
 */
#include "peers/app/pbx_obj.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/pbx_base.h"
#include "peers/lib/pbx_peer_vfs.h"

/* Replies to earlier calls (one that timed out) skipped while waiting. */
#define OBJ_STALE_MAX 16U

/* The seq of the next call: replies are matched to calls by it. */
static uint32_t g_obj_seq;

/* One call and its reply buffers (caller's stack). */
typedef struct obj_xfer {
    uint8_t call[PBX_PEER_VFS_CALL_BYTES_MAX];
    uint8_t reply[PBX_PEER_VFS_REPLY_BYTES_MAX + 1U];
    size_t len;  /* reply bytes received */
    size_t nfds; /* descriptors that came with it (closed at once) */
    bool keep;   /* keep the first descriptor in fd (an OPEN's reply) */
    int fd;      /* the kept descriptor, or -1 (owned) */
} obj_xfer;

/* The status of a failed send or receive on an object connection. */
static int obj_errno_status(int e)
{
    return e == EPIPE || e == ECONNRESET || e == ENOTCONN
               ? (int)PBX_E_OBJ_GONE
               : (int)PBX_E_OBJ_TRANSPORT;
}

/* Receives one reply into x; descriptors that came are closed and
 * counted. Returns 0, or a status. */
static int obj_recv(int obj, obj_xfer *x)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * 8U)];
        struct cmsghdr align;
    } cbuf;
    struct iovec iov = {x->reply, sizeof(x->reply)};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf.buf;
    mh.msg_controllen = sizeof(cbuf.buf);
    ssize_t r = recvmsg(obj, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r < 0) {
        return obj_errno_status(errno);
    }
    x->nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c != NULL;
         c = CMSG_NXTHDR(&mh, c)) {
        size_t n = c->cmsg_type == SCM_RIGHTS
                       ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int)
                       : 0U;
        for (size_t i = 0; i < n; i++) {
            int fd = -1;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (x->keep && x->fd < 0) {
                x->fd = fd;
            } else {
                (void)close(fd);
            }
            x->nfds++;
        }
    }
    if (r == 0 && x->nfds == 0U) {
        return (int)PBX_E_OBJ_GONE;
    }
    if ((mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
        x->nfds += (mh.msg_flags & MSG_CTRUNC) != 0 ? 1U : 0U;
    }
    x->len = (size_t)r;
    return 0;
}

/* Sends the call of n bytes in x->call (seq stamped by its encoder) and
 * waits for the reply that echoes seq. Returns 0 with the reply in x, or
 * a status. With keep, the first descriptor of that reply stays open in
 * x->fd (the caller's to close); every other one is closed. */
static int obj_call_keep(int obj, obj_xfer *x, size_t n, uint32_t seq,
                         bool keep)
{
    x->keep = keep;
    x->fd = -1;
    ssize_t s = -1;
    for (int tries = 0; tries < 64 && s < 0; tries++) {
        s = send(obj, x->call, n, MSG_NOSIGNAL);
        if (s < 0 && errno != EINTR) {
            return obj_errno_status(errno);
        }
    }
    if (s != (ssize_t)n) {
        return (int)PBX_E_OBJ_TRANSPORT;
    }
    for (size_t i = 0; i <= OBJ_STALE_MAX; i++) {
        struct pollfd p = {obj, POLLIN, 0};
        int r = poll(&p, 1, PBX_OBJ_TIMEOUT_MS);
        if (r == 0) {
            return (int)PBX_E_OBJ_TIMEOUT;
        }
        if (r < 0) {
            return errno == EINTR ? (int)PBX_E_OBJ_TIMEOUT
                                  : (int)PBX_E_OBJ_TRANSPORT;
        }
        int st = obj_recv(obj, x);
        if (st != 0) {
            return st;
        }
        /* A reply to an earlier call that timed out is skipped, with the
         * descriptor it may have carried. */
        if (x->len < PBX_IPC_HEADER_BYTES ||
            pbx_le_get32(x->reply + PBX_IPC_SEQ_OFFSET) == seq) {
            return 0;
        }
        if (x->fd >= 0) {
            (void)close(x->fd);
            x->fd = -1;
        }
    }
    return (int)PBX_E_OBJ_TRANSPORT;
}

/* obj_call_keep for a reply whose descriptors are all closed. */
static int obj_call(int obj, obj_xfer *x, size_t n, uint32_t seq)
{
    return obj_call_keep(obj, x, n, seq, false);
}

/* The next call's seq. */
static uint32_t obj_next_seq(void)
{
    return ++g_obj_seq;
}

/* The bytes of the next chunk when left bytes are still to move: at most
 * what one call carries. */
static size_t obj_chunk(size_t left)
{
    return left < PBX_PEER_VFS_IO_BYTES_MAX ? left
                                            : (size_t)PBX_PEER_VFS_IO_BYTES_MAX;
}

/* A decoded reply's outcome: the decode fault, else vfsd's status. */
static int obj_outcome(pbx_err e, uint32_t status)
{
    return e != PBX_OK ? (int)e : (int)status;
}

int pbx_obj_stat(int obj, pbx_obj_info *out)
{
    obj_xfer x;
    size_t n = 0;
    uint32_t seq = obj_next_seq();
    if (out == NULL) {
        return (int)PBX_E_OBJ_ARG;
    }
    (void)pbx_peer_vfs_obj_stat_encode(seq, x.call, sizeof(x.call), &n);
    int st = obj_call(obj, &x, n, seq);
    if (st != 0) {
        return st;
    }
    pbx_peer_vfs_stat s = {0U, 0U, 0U};
    uint32_t status = 0;
    pbx_err e = pbx_peer_vfs_obj_stat_reply_decode(x.reply, x.len, x.nfds, seq,
                                                   &s, &status);
    st = obj_outcome(e, status);
    if (st == 0) {
        out->dev = s.dev;
        out->ino = s.ino;
        out->size = s.size;
    }
    return st;
}

/* One READ call of at most PBX_PEER_VFS_IO_BYTES_MAX bytes into buf;
 * stores the bytes read in *got. */
static int obj_read_chunk(int obj, uint64_t offset, uint8_t *buf, size_t len,
                          size_t *got)
{
    obj_xfer x;
    size_t n = 0;
    uint32_t seq = obj_next_seq();
    (void)pbx_peer_vfs_obj_read_encode(seq, offset, (uint32_t)len, x.call,
                                       sizeof(x.call), &n);
    int st = obj_call(obj, &x, n, seq);
    if (st != 0) {
        return st;
    }
    const uint8_t *data = NULL;
    uint32_t status = 0;
    pbx_err e = pbx_peer_vfs_obj_read_reply_decode(x.reply, x.len, x.nfds, seq,
                                                   len, &data, got, &status);
    st = obj_outcome(e, status);
    if (st == 0 && *got != 0U && buf != NULL && data != NULL) {
        memcpy(buf, data, *got);
    }
    return st;
}

int pbx_obj_read(int obj, uint64_t offset, void *buf, size_t len, size_t *got)
{
    if (got == NULL || (buf == NULL && len != 0U) ||
        offset > UINT64_MAX - len) {
        return (int)PBX_E_OBJ_ARG;
    }
    *got = 0;
    uint8_t *b = buf;
    /* At least one call, so that an offset past the end is reported. */
    for (size_t i = 0; i <= len / PBX_PEER_VFS_IO_BYTES_MAX; i++) {
        size_t want = obj_chunk(len - *got);
        size_t n = 0;
        int st = obj_read_chunk(obj, offset + *got, b + *got, want, &n);
        if (st != 0) {
            return st;
        }
        *got += n;
        if (n != want || *got == len) {
            return 0;
        }
    }
    return 0;
}

int pbx_obj_list(int obj, uint32_t cookie, char *names, size_t cap,
                 size_t *used, uint32_t *next)
{
    if (names == NULL || used == NULL || next == NULL ||
        cap < PBX_PEER_VFS_NAME_BYTES_MAX) {
        return (int)PBX_E_OBJ_ARG;
    }
    size_t page = cap < PBX_PEER_VFS_LIST_NAMES_MAX
                      ? cap
                      : (size_t)PBX_PEER_VFS_LIST_NAMES_MAX;
    obj_xfer x;
    size_t n = 0;
    uint32_t seq = obj_next_seq();
    (void)pbx_peer_vfs_obj_list_encode(seq, cookie, (uint32_t)page, x.call,
                                       sizeof(x.call), &n);
    int st = obj_call(obj, &x, n, seq);
    if (st != 0) {
        return st;
    }
    const uint8_t *p = NULL;
    size_t plen = 0;
    uint32_t count = 0;
    uint32_t nx = 0;
    uint32_t status = 0;
    pbx_err e = pbx_peer_vfs_obj_list_reply_decode(
        x.reply, x.len, x.nfds, seq, page, &p, &plen, &count, &nx, &status);
    st = obj_outcome(e, status);
    if (st == 0) {
        memcpy(names, p, plen);
        *used = plen;
        *next = nx;
    }
    return st;
}

/* One WRITE call of at most PBX_PEER_VFS_IO_BYTES_MAX bytes; stores the
 * bytes written in *put. */
static int obj_write_chunk(int obj, uint64_t offset, const uint8_t *buf,
                           size_t len, size_t *put)
{
    obj_xfer x;
    size_t n = 0;
    uint32_t seq = obj_next_seq();
    (void)pbx_peer_vfs_obj_write_encode(seq, offset, buf, len, x.call,
                                        sizeof(x.call), &n);
    int st = obj_call(obj, &x, n, seq);
    if (st != 0) {
        return st;
    }
    uint32_t status = 0;
    pbx_err e = pbx_peer_vfs_obj_write_reply_decode(x.reply, x.len, x.nfds, seq,
                                                    len, put, &status);
    return obj_outcome(e, status);
}

int pbx_obj_write(int obj, uint64_t offset, const void *buf, size_t len,
                  size_t *put)
{
    if (put == NULL || (buf == NULL && len != 0U) ||
        offset > UINT64_MAX - len) {
        return (int)PBX_E_OBJ_ARG;
    }
    *put = 0;
    const uint8_t *b = buf;
    for (size_t i = 0; i <= len / PBX_PEER_VFS_IO_BYTES_MAX; i++) {
        size_t want = obj_chunk(len - *put);
        size_t n = 0;
        int st = obj_write_chunk(obj, offset + *put, b + *put, want, &n);
        if (st != 0) {
            return st;
        }
        *put += n;
        if (n != want || *put == len) {
            return n != want ? (int)PBX_E_OBJ_IO : 0;
        }
    }
    return 0;
}

int pbx_obj_open_fd(int obj, uint32_t mode, int *fd_out)
{
    obj_xfer x;
    size_t n = 0;
    uint32_t seq = obj_next_seq();
    if (fd_out == NULL) {
        return (int)PBX_E_OBJ_ARG;
    }
    *fd_out = -1;
    (void)pbx_peer_vfs_obj_open_encode(seq, mode, x.call, sizeof(x.call), &n);
    int st = obj_call_keep(obj, &x, n, seq, true);
    if (st != 0) {
        return st;
    }
    uint32_t status = 0;
    pbx_err e = pbx_peer_vfs_obj_open_reply_decode(x.reply, x.len, x.nfds, seq,
                                                   &status);
    st = obj_outcome(e, status);
    if (st == 0 && x.fd >= 0) {
        *fd_out = x.fd;
        return 0;
    }
    if (x.fd >= 0) {
        (void)close(x.fd);
    }
    return st != 0 ? st : (int)PBX_E_IPC_CAP_COUNT;
}

const char *pbx_obj_strerror(int status)
{
    if (status == 0) {
        return "ok";
    }
    return status < 0 ? "unknown status" : pbx_err_text((pbx_err)status);
}
