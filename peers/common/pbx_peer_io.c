/*
 * pbx_peer_io.c: SEQPACKET frames with SCM_RIGHTS descriptors for the
 * reference peers.
 */
#include "peers/common/pbx_peer_io.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "peers/lib/pbx_peer.h"

/* Control buffer for PBX_PEER_IO_FDS_MAX descriptors, suitably aligned. */
typedef union peer_cbuf {
    char buf[CMSG_SPACE(sizeof(int) * PBX_PEER_IO_FDS_MAX)];
    struct cmsghdr align;
} peer_cbuf;

void pbx_peer_log(const char *who, const char *fmt, ...)
{
    char line[512];
    int n = snprintf(line, sizeof(line), "%s: ", who);
    if (n < 0 || (size_t)n >= sizeof(line)) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0U : (size_t)m);
    if (len > sizeof(line) - 2U) {
        len = sizeof(line) - 2U;
    }
    line[len] = '\n';
    (void)!write(STDERR_FILENO, line, len + 1U);
}

void pbx_peer_io_close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (fds[i] >= 0) {
            (void)close(fds[i]);
            fds[i] = -1;
        }
    }
}

/* Copies every descriptor of every SCM_RIGHTS block into m->fds. */
static void peer_take_fds(struct msghdr *mh, pbx_peer_msg *m, bool *odd)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL;
         c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            *odd = true;
            continue;
        }
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const unsigned char *p = CMSG_DATA(c);
        for (size_t i = 0; i < n; i++) {
            int fd = -1;
            memcpy(&fd, p + i * sizeof(int), sizeof(int));
            if (m->nfds < PBX_PEER_IO_FDS_MAX) {
                m->fds[m->nfds++] = fd;
            } else {
                (void)close(fd);
                *odd = true;
            }
        }
    }
}

int pbx_peer_io_recv_raw(int fd, pbx_peer_msg *m, int flags)
{
    peer_cbuf cbuf;
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
    ssize_t r = -1;
    for (int tries = 0; tries < 64; tries++) {
        r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | flags);
        if (r >= 0 || errno != EINTR) {
            break;
        }
    }
    if (r < 0) {
        return -1;
    }
    bool odd = false;
    peer_take_fds(&mh, m, &odd);
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
    return 0;
}

int pbx_peer_io_recv_frame(int fd, pbx_peer_msg *m)
{
    int r = pbx_peer_io_recv_raw(fd, m, 0);
    if (r != 0) {
        return r;
    }
    m->err = pbx_ipc_frame_decode(m->buf, m->len, (uint16_t)m->nfds, &m->frame);
    if (m->err != PBX_OK) {
        pbx_peer_io_close_all(m->fds, m->nfds);
    }
    return 0;
}

int pbx_peer_io_send_fds(int fd, const uint8_t *buf, size_t len, const int *fds,
                         size_t nfds, int flags)
{
    peer_cbuf cbuf;
    struct iovec iov = {(void *)buf, len};
    struct msghdr mh;
    if (nfds > PBX_PEER_IO_FDS_MAX) {
        errno = EINVAL;
        return -1;
    }
    memset(&mh, 0, sizeof(mh));
    memset(&cbuf, 0, sizeof(cbuf));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds != 0U) {
        mh.msg_control = cbuf.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    for (int tries = 0; tries < 64; tries++) {
        ssize_t r = sendmsg(fd, &mh, MSG_NOSIGNAL | flags);
        if (r >= 0) {
            return (size_t)r == len ? 0 : -1;
        }
        if (errno != EINTR) {
            return -1;
        }
    }
    return -1;
}

int pbx_peer_io_send(int fd, const uint8_t *buf, size_t len, int cap_fd)
{
    return pbx_peer_io_send_fds(fd, buf, len, &cap_fd, cap_fd >= 0 ? 1U : 0U,
                                0);
}

uint32_t pbx_peer_io_msg_seq(const pbx_peer_msg *m)
{
    uint32_t seq = 0;
    (void)pbx_ipc_frame_peek_seq(m->buf, m->len, &seq);
    return seq;
}

int pbx_peer_io_send_seq(int fd, uint8_t *buf, size_t len, uint32_t seq,
                         int cap_fd)
{
    if (pbx_ipc_frame_set_seq(buf, len, seq) != PBX_OK) {
        errno = EINVAL;
        return -1;
    }
    return pbx_peer_io_send(fd, buf, len, cap_fd);
}

int pbx_peer_io_reply(int fd, const pbx_peer_msg *req, uint8_t *buf, size_t len,
                      int cap_fd)
{
    return pbx_peer_io_send_seq(fd, buf, len, pbx_peer_io_msg_seq(req), cap_fd);
}

int pbx_peer_io_reply_status(int fd, const pbx_peer_msg *m, uint32_t status)
{
    uint16_t op = 0;
    pbx_ipc_id id = {0, 0};
    if (m->err == PBX_OK) {
        op = m->frame.op;
        id = m->frame.request;
    } else if (m->len >= PBX_IPC_HEADER_BYTES) {
        op = pbx_le_get16(m->buf + 6);
        id.index = pbx_le_get32(m->buf + 12);
        id.gen = pbx_le_get32(m->buf + 16);
    }
    uint8_t out[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    if ((op & PBX_IPC_REPLY_BIT) != 0U || status == 0U || status > 0xFFFFU ||
        pbx_ipc_status_reply_encode(op, id, (pbx_err)status, out, sizeof(out),
                                    &n) != PBX_OK) {
        return 0;
    }
    return pbx_peer_io_reply(fd, m, out, n, -1);
}

int pbx_peer_io_call(int fd, const uint8_t *req, size_t req_len, int cap_fd,
                     pbx_peer_msg *reply, int timeout_ms)
{
    if (pbx_peer_io_send(fd, req, req_len, cap_fd) != 0) {
        return -1;
    }
    struct pollfd p = {fd, POLLIN, 0};
    int r = -1;
    for (int tries = 0; tries < 64; tries++) {
        r = poll(&p, 1, timeout_ms);
        if (r >= 0 || errno != EINTR) {
            break;
        }
    }
    if (r < 0) {
        return -1;
    }
    if (r == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return pbx_peer_io_recv_frame(fd, reply);
}

/* Fills *sa with path; false when the path does not fit. */
static bool peer_addr(const char *path, struct sockaddr_un *sa)
{
    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n == 0U || n >= sizeof(sa->sun_path)) {
        errno = ENAMETOOLONG;
        return false;
    }
    memcpy(sa->sun_path, path, n);
    return true;
}

/* Binds an AF_UNIX socket of type at path (and listens, for SOCK_SEQPACKET);
 * private makes the file mode 0600 before anyone can connect: a connect
 * to a bound socket that does not listen yet is refused. */
static int peer_listen(const char *path, int type, bool private_mode)
{
    struct sockaddr_un sa;
    if (!peer_addr(path, &sa)) {
        return -1;
    }
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
        (void)unlink(path);
    }
    if (bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0 ||
        (private_mode && chmod(path, S_IRUSR | S_IWUSR) != 0) ||
        (type == SOCK_SEQPACKET && listen(fd, 16) != 0)) {
        int e = errno;
        (void)close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int pbx_peer_io_listen(const char *path, int type)
{
    return peer_listen(path, type, false);
}

int pbx_peer_io_listen_private(const char *path, int type)
{
    return peer_listen(path, type, true);
}

int pbx_peer_io_connect(const char *path, int type)
{
    struct sockaddr_un sa;
    if (!peer_addr(path, &sa)) {
        return -1;
    }
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int e = errno;
        (void)close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

int pbx_peer_io_fd_arg(const char *s)
{
    uint64_t v = 0;
    if (!pbx_peer_parse_u64(s, 65535U, &v) || fcntl((int)v, F_GETFD) < 0) {
        return -1;
    }
    return (int)v;
}

uint64_t pbx_peer_io_inode(int fd)
{
    struct stat st;
    if (fstat(fd, &st) != 0) {
        return 0U;
    }
    return (uint64_t)st.st_ino;
}

/* The magic that opens a scope hand-out. */
static const uint8_t peer_scope_magic[8] = {'P', 'B', 'X', 'S',
                                            'C', 'O', 'P', 'E'};

int pbx_peer_io_scope_give(int conn, int scope_fd, uint64_t scope_id)
{
    uint8_t msg[PBX_PEER_IO_SCOPE_BYTES];
    memcpy(msg, peer_scope_magic, sizeof(peer_scope_magic));
    pbx_le_put64(msg + sizeof(peer_scope_magic), scope_id);
    return pbx_peer_io_send(conn, msg, sizeof(msg), scope_fd);
}

int pbx_peer_io_scope_take(int conn, int timeout_ms, uint64_t *scope_id)
{
    static pbx_peer_msg m;
    struct pollfd p = {conn, POLLIN, 0};
    int r = -1;
    for (int tries = 0; tries < 64; tries++) {
        r = poll(&p, 1, timeout_ms);
        if (r >= 0 || errno != EINTR) {
            break;
        }
    }
    if (r <= 0) {
        errno = r == 0 ? ETIMEDOUT : errno;
        return -1;
    }
    r = pbx_peer_io_recv_raw(conn, &m, 0);
    if (r != 0) {
        errno = r == 1 ? ECONNRESET : errno;
        return -1;
    }
    if (m.len != PBX_PEER_IO_SCOPE_BYTES || m.nfds != 1U ||
        memcmp(m.buf, peer_scope_magic, sizeof(peer_scope_magic)) != 0) {
        pbx_peer_io_close_all(m.fds, m.nfds);
        errno = EPROTO;
        return -1;
    }
    *scope_id = pbx_le_get64(m.buf + sizeof(peer_scope_magic));
    return m.fds[0];
}

int pbx_peer_io_scope_acquire(const char *path, int timeout_ms,
                              uint64_t *scope_id)
{
    int conn = pbx_peer_io_connect(path, SOCK_SEQPACKET);
    if (conn < 0) {
        return -1;
    }
    int fd = pbx_peer_io_scope_take(conn, timeout_ms, scope_id);
    int e = errno;
    (void)close(conn);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISSOCK(st.st_mode) ||
                    (uint64_t)st.st_ino != *scope_id)) {
        (void)close(fd);
        fd = -1;
        e = EPROTO;
    }
    errno = e;
    return fd;
}

void pbx_peer_io_ready(int ready_fd)
{
    if (ready_fd >= 0) {
        (void)!write(ready_fd, "ready\n", 6U);
        (void)close(ready_fd);
    }
}
