/*
 * fuzz_attach.c: libFuzzer harness for the attach-channel codec
 * (peers/common/pbx_peer_attach.c) over a real SOCK_SEQPACKET pair.
 *
 * Input layout: byte 0 picks the descriptors sent with the message (its
 * low two bits: 0..3 of them; bit 2: datagram sockets instead of
 * seqpacket ones) and the answer's status (bit 3); the rest (at least one
 * byte) is the message, sent as one packet. The peer's side receives it
 * (pbx_peer_attach_recv), judges it as a route message
 * (pbx_peer_attach_route_check, as ttyd and procd do and as launchd
 * does) and answers it (pbx_peer_attach_reply); the supervisor's side
 * reads the answer and judges it (pbx_peer_attach_echoes). Checked: a
 * message within the bounds arrives ok with its exact op, body and
 * descriptor count, anything beyond them arrives not ok with no
 * descriptor left open; an accepted route message is an 'R' with an
 * empty or 4-byte body and the exact descriptor count; the answer echoes
 * the message exactly when its body is a tag, and an answer with any one
 * tag byte changed is not taken. Every descriptor is closed (LSan and
 * the descriptor count at the end catch a leak). Any failure aborts.
 */
#include "peers/common/pbx_peer_attach.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The longest message sent: long enough to be truncated. */
#define FUZZ_ATTACH_MSG_MAX (2U + PBX_PEER_ATTACH_BODY_MAX)

/* Sends msg (len bytes) on fd with nfds fresh sockets of type attached. */
static void fuzz_attach_send(int fd, const uint8_t *msg, size_t len,
                             size_t nfds, int type)
{
    int socks[3][2];
    int fds[3];
    union {
        char buf[CMSG_SPACE(sizeof(int) * 3U)];
        struct cmsghdr align;
    } cbuf;
    struct iovec iov = {(void *)msg, len};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&cbuf, 0, sizeof(cbuf));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    for (size_t i = 0; i < nfds; i++) {
        if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, socks[i]) != 0) {
            abort();
        }
        fds[i] = socks[i][0];
    }
    if (nfds != 0U) {
        mh.msg_control = cbuf.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    if (sendmsg(fd, &mh, MSG_DONTWAIT) != (ssize_t)len) {
        abort();
    }
    for (size_t i = 0; i < nfds; i++) {
        (void)close(socks[i][0]);
        (void)close(socks[i][1]);
    }
}

/* Checks what arrived against what was sent. */
static void fuzz_attach_arrived(const pbx_peer_attach_msg *m,
                                const uint8_t *msg, size_t len, size_t nfds)
{
    bool fits =
        len <= 1U + PBX_PEER_ATTACH_BODY_MAX && nfds <= PBX_PEER_ATTACH_FDS_MAX;
    if (m->ok != fits || (!m->ok && m->nfds != 0U)) {
        abort();
    }
    if (m->ok && (m->op != msg[0] || m->body_len != len - 1U ||
                  memcmp(m->body, msg + 1, len - 1U) != 0 || m->nfds != nfds)) {
        abort();
    }
}

/* Judges m as a route message the way each peer does. */
static void fuzz_attach_route(const pbx_peer_attach_msg *m)
{
    static const int one[1] = {SOCK_SEQPACKET};
    static const int two[2] = {SOCK_DGRAM, SOCK_SEQPACKET};
    const char *a = pbx_peer_attach_route_check(m, one, 1U);
    const char *b = pbx_peer_attach_route_check(m, two, 2U);
    /* Every descriptor sent is of one type, so the launchd pair (a
     * datagram socket, then a seqpacket one) is never accepted. */
    if ((a == NULL && m->nfds != 1U) || b == NULL) {
        abort();
    }
    if (a == NULL &&
        (!m->ok || m->op != PBX_PEER_ATTACH_OP_ROUTE ||
         (m->body_len != 0U && m->body_len != PBX_PEER_ATTACH_TAG_MAX))) {
        abort();
    }
}

/* Answers m on peer and judges the answer read on sup. */
static void fuzz_attach_answer(int peer, int sup, const pbx_peer_attach_msg *m,
                               const uint8_t *msg, size_t len, uint8_t status)
{
    uint8_t ans[PBX_PEER_ATTACH_ANSWER_MAX + 1U];
    if (pbx_peer_attach_reply(peer, m, status, -1) != 0) {
        abort();
    }
    ssize_t n = recv(sup, ans, sizeof(ans), MSG_DONTWAIT);
    if (n < 2 || ans[1] != status) {
        abort();
    }
    bool tag = len - 1U <= PBX_PEER_ATTACH_TAG_MAX;
    if (pbx_peer_attach_echoes(ans, (size_t)n, msg, len) != tag) {
        abort();
    }
    for (size_t i = 2; tag && i < (size_t)n; i++) {
        ans[i] ^= 0x01U;
        if (pbx_peer_attach_echoes(ans, (size_t)n, msg, len)) {
            abort();
        }
        ans[i] ^= 0x01U;
    }
}

/* Returns the lowest free descriptor number. */
static int fuzz_attach_lowest_fd(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        abort();
    }
    (void)close(fd);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int chan[2] = {-1, -1};
    if (size < 2U || size - 1U > FUZZ_ATTACH_MSG_MAX) {
        return 0;
    }
    if (chan[0] < 0 &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, chan) != 0) {
        abort();
    }
    const uint8_t *msg = data + 1;
    size_t len = size - 1U;
    size_t nfds = data[0] & 3U;
    int type = (data[0] & 4U) != 0U ? SOCK_DGRAM : SOCK_SEQPACKET;
    uint8_t status =
        (data[0] & 8U) != 0U ? PBX_PEER_ATTACH_REFUSED : PBX_PEER_ATTACH_DONE;
    pbx_peer_attach_msg m;
    int low = fuzz_attach_lowest_fd();
    fuzz_attach_send(chan[0], msg, len, nfds, type);
    if (pbx_peer_attach_recv(chan[1], &m) != 0) {
        abort();
    }
    fuzz_attach_arrived(&m, msg, len, nfds);
    fuzz_attach_route(&m);
    fuzz_attach_answer(chan[1], chan[0], &m, msg, len, status);
    for (size_t i = 0; i < m.nfds; i++) {
        (void)close(m.fds[i]);
    }
    /* Nothing may stay open: the lowest free descriptor after the input
     * is the one before it. */
    if (fuzz_attach_lowest_fd() != low) {
        abort();
    }
    return 0;
}
