/*
 * pbx_peer_attach.c: receive and answer on the attach channel of a peer
 * started with --attach-fd (docs/HOST.md).
 */
#include "peers/common/pbx_peer_attach.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"

/* Control buffer for exactly PBX_PEER_ATTACH_FDS_MAX descriptors, so the
 * kernel itself drops (closes) any beyond them and reports MSG_CTRUNC. */
typedef union peer_attach_cbuf {
    char buf[CMSG_SPACE(sizeof(int) * PBX_PEER_ATTACH_FDS_MAX)];
    struct cmsghdr align;
} peer_attach_cbuf;

/* Copies the SCM_RIGHTS descriptors of mh into m; false when foreign
 * control data or more descriptors than fit arrived (those are closed). */
static bool peer_attach_take_fds(struct msghdr *mh, pbx_peer_attach_msg *m)
{
    bool clean = true;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL;
         c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
            c->cmsg_len < CMSG_LEN(0)) {
            clean = false;
            continue;
        }
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        const unsigned char *p = CMSG_DATA(c);
        for (size_t i = 0; i < n && i < PBX_PEER_IO_FDS_MAX; i++) {
            int fd = -1;
            memcpy(&fd, p + i * sizeof(int), sizeof(int));
            if (m->nfds < PBX_PEER_ATTACH_FDS_MAX) {
                m->fds[m->nfds++] = fd;
            } else {
                (void)close(fd);
                clean = false;
            }
        }
    }
    return clean;
}

int pbx_peer_attach_recv(int chan, pbx_peer_attach_msg *m)
{
    uint8_t raw[1U + PBX_PEER_ATTACH_BODY_MAX];
    peer_attach_cbuf cbuf;
    struct iovec iov = {raw, sizeof(raw)};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&cbuf, 0, sizeof(cbuf));
    memset(m, 0, sizeof(*m));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf.buf;
    mh.msg_controllen = sizeof(cbuf.buf);
    ssize_t r = -1;
    for (int tries = 0; tries < 64; tries++) {
        r = recvmsg(chan, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
        if (r >= 0 || errno != EINTR) {
            break;
        }
    }
    if (r < 0) {
        return -1;
    }
    bool clean = peer_attach_take_fds(&mh, m);
    if (r == 0 && m->nfds == 0U && (mh.msg_flags & MSG_CTRUNC) == 0) {
        return 1;
    }
    m->ok = clean && r > 0 && (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) == 0;
    if (r > 0) {
        m->op = raw[0];
        m->body_len = (size_t)r - 1U;
        memcpy(m->body, raw + 1, m->body_len);
    }
    if (!m->ok) {
        pbx_peer_io_close_all(m->fds, m->nfds);
        m->nfds = 0;
    }
    return 0;
}

int pbx_peer_attach_answer(int chan, uint8_t op, uint8_t status)
{
    uint8_t out[2];
    out[0] =
        (op >= (uint8_t)'A' && op <= (uint8_t)'Z') ? (uint8_t)(op + 32U) : op;
    out[1] = status;
    for (int tries = 0; tries < 64; tries++) {
        ssize_t r = send(chan, out, sizeof(out), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r >= 0) {
            return (size_t)r == sizeof(out) ? 0 : -1;
        }
        if (errno != EINTR) {
            return -1;
        }
    }
    return -1;
}

int pbx_peer_attach_reply(int chan, const pbx_peer_attach_msg *m,
                          uint8_t status, int fd)
{
    uint8_t out[PBX_PEER_ATTACH_ANSWER_MAX];
    const uint8_t op = m->op;
    out[0] =
        (op >= (uint8_t)'A' && op <= (uint8_t)'Z') ? (uint8_t)(op + 32U) : op;
    out[1] = status;
    size_t len = 2U;
    /* The tag lets the supervisor tell this answer from a late one of an
     * earlier call; a longer body is no tag and is not echoed. */
    if (m->body_len <= PBX_PEER_ATTACH_TAG_MAX) {
        memcpy(out + 2, m->body, m->body_len);
        len += m->body_len;
    }
    const int *fds = fd >= 0 ? &fd : NULL;
    return pbx_peer_io_send_fds(chan, out, len, fds, fd >= 0 ? 1U : 0U,
                                MSG_DONTWAIT);
}

bool pbx_peer_attach_echoes(const uint8_t *ans, size_t n, const uint8_t *msg,
                            size_t len)
{
    if (len == 0U || len > 1U + PBX_PEER_ATTACH_TAG_MAX || n != len + 1U) {
        return false;
    }
    const uint8_t op = msg[0];
    const uint8_t lower =
        (op >= (uint8_t)'A' && op <= (uint8_t)'Z') ? (uint8_t)(op + 32U) : op;
    return ans[0] == lower && memcmp(ans + 2, msg + 1, len - 1U) == 0;
}

bool pbx_peer_attach_is_socket(int fd, int type)
{
    int got = -1;
    int domain = -1;
    socklen_t len = sizeof(got);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &got, &len) != 0 ||
        len != sizeof(got)) {
        return false;
    }
    len = sizeof(domain);
    if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0 ||
        len != sizeof(domain)) {
        return false;
    }
    return got == type && domain == AF_UNIX;
}

const char *pbx_peer_attach_route_check(const pbx_peer_attach_msg *m,
                                        const int *types, size_t ntypes)
{
    if (!m->ok || (m->op == PBX_PEER_ATTACH_OP_ROUTE && m->body_len != 0U &&
                   m->body_len != PBX_PEER_ATTACH_TAG_MAX)) {
        return "malformed message";
    }
    if (m->op != PBX_PEER_ATTACH_OP_ROUTE) {
        return "wrong op for this peer";
    }
    if (m->nfds != ntypes) {
        return "wrong descriptor count";
    }
    for (size_t i = 0; i < ntypes && i < PBX_PEER_ATTACH_FDS_MAX; i++) {
        if (!pbx_peer_attach_is_socket(m->fds[i], types[i])) {
            return "wrong socket type";
        }
    }
    return NULL;
}

void pbx_peer_attach_refuse(int chan, pbx_peer_attach_msg *m, const char *who,
                            const char *reason)
{
    pbx_peer_io_close_all(m->fds, m->nfds);
    m->nfds = 0;
    pbx_peer_log(who, "attach channel: refused: %s", reason);
    (void)pbx_peer_attach_reply(chan, m, PBX_PEER_ATTACH_REFUSED, -1);
}

bool pbx_peer_attach_next(int *chan, const char *who, pbx_peer_attach_msg *m)
{
    if (*chan < 0) {
        return false;
    }
    int r = pbx_peer_attach_recv(*chan, m);
    if (r == 0) {
        return true;
    }
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return false;
    }
    pbx_peer_log(who, "attach channel %s; serving on without it",
                 r > 0 ? "closed" : strerror(errno));
    (void)close(*chan);
    *chan = -1;
    return false;
}

void pbx_peer_attach_adopt(int chan, pbx_peer_attach_msg *m, const char *who,
                           int *routes, size_t *nroutes, size_t max)
{
    static const int types[1] = {SOCK_SEQPACKET};
    const char *why = pbx_peer_attach_route_check(m, types, 1U);
    if (why == NULL && *nroutes >= max) {
        why = "route table full";
    }
    if (why != NULL) {
        pbx_peer_attach_refuse(chan, m, who, why);
        return;
    }
    routes[(*nroutes)++] = m->fds[0];
    m->nfds = 0;
    pbx_peer_log(who, "attach channel: route(s) adopted");
    if (pbx_peer_attach_reply(chan, m, PBX_PEER_ATTACH_DONE, -1) != 0) {
        pbx_peer_log(who, "attach channel: answer not sent: %s",
                     strerror(errno));
    }
}
