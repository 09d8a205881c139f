/*
 * launchd_io.c: launchd's socket helpers that the shared peer layer does
 * not have: a receive that keeps every descriptor whatever the frame (a
 * LAUNCH carries three and is not an ipc frame), a send of several
 * descriptors, a send that never waits, a connect that cannot block
 * forever, and the ancestry check of a control connection's peer (the
 * walk itself is shared: peers/common/pbx_peer_origin.c).
 */
/* struct ucred (SO_PEERCRED) is a GNU extension of glibc's headers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"

uint64_t launchd_now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000U + (uint64_t)ts.tv_nsec / 1000000U;
}

void launchd_nonblock(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0) {
        (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
    }
}

int launchd_recv(int fd, pbx_peer_msg *m)
{
    /* Not decoded here: launchd judges launchd-local and ipc frames
     * itself. */
    m->err = PBX_E_IPC_TRUNCATED;
    return pbx_peer_io_recv_raw(fd, m, MSG_DONTWAIT);
}

int launchd_send_fds(int fd, const uint8_t *buf, size_t len, const int *fds,
                     size_t nfds)
{
    return pbx_peer_io_send_fds(fd, buf, len, fds, nfds, 0);
}

int launchd_connect(const char *path, int timeout_ms)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n == 0U || n >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path, path, n);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    /* A listener whose backlog is full would block connect forever; the
     * send timeout bounds it (EAGAIN). */
    struct timeval tv = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000L};
    (void)setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int e = errno;
        (void)close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

bool launchd_wait_readable(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    for (int tries = 0; tries < 64; tries++) {
        int r = poll(&p, 1, timeout_ms);
        if (r >= 0) {
            return r > 0;
        }
        if (errno != EINTR) {
            return false;
        }
    }
    return false;
}

int launchd_send_now(int fd, uint8_t *buf, size_t len, uint32_t seq, int cap)
{
    if (pbx_ipc_frame_set_seq(buf, len, seq) != PBX_OK) {
        errno = EINVAL;
        return -1;
    }
    /* MSG_DONTWAIT: a full peer is the caller's BUSY, never launchd's
     * wait, whatever the descriptor's own flags. */
    return pbx_peer_io_send_fds(fd, buf, len, &cap, cap >= 0 ? 1U : 0U,
                                MSG_DONTWAIT);
}

int launchd_peer_origin(int fd, pid_t self, pid_t *peer)
{
    /* launchd is a child subreaper: every descendant of a job, however it
     * detached, still has launchd above it (the walk is shared with ttyd's
     * and procd's query sockets). */
    pbx_peer_origin_kind k = pbx_peer_origin_of(fd, self, peer);
    if (k == PBX_PEER_ORIGIN_OUTSIDE) {
        return LAUNCHD_ORIGIN_OUTSIDE;
    }
    return k == PBX_PEER_ORIGIN_UNKNOWN ? LAUNCHD_ORIGIN_UNKNOWN
                                        : LAUNCHD_ORIGIN_JOB;
}
