/*
 * launchd_io.c: launchd's socket helpers that the shared peer layer does
 * not have: a receive that keeps every descriptor whatever the frame (a
 * LAUNCH carries three and is not an ipc frame), a send of several
 * descriptors, a send that never waits, a connect that cannot block
 * forever, and the ancestry check of a control connection's peer.
 */
/* struct ucred (SO_PEERCRED) is a GNU extension of glibc's headers. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"

/* Control buffer for PBX_PEER_IO_FDS_MAX descriptors, suitably aligned. */
typedef union launchd_cbuf {
    char buf[CMSG_SPACE(sizeof(int) * PBX_PEER_IO_FDS_MAX)];
    struct cmsghdr align;
} launchd_cbuf;

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

/* Copies the descriptors of every SCM_RIGHTS block into m; *odd is set
 * when something else came or there were too many (those are closed). */
static void launchd_take_fds(struct msghdr *mh, pbx_peer_msg *m, bool *odd)
{
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL;
         c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            *odd = true;
            continue;
        }
        size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n && i < PBX_PEER_IO_FDS_MAX + 1U; i++) {
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

int launchd_recv(int fd, pbx_peer_msg *m)
{
    launchd_cbuf cbuf;
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
    m->err = PBX_E_IPC_TRUNCATED;
    ssize_t r = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (r < 0) {
        return -1;
    }
    bool odd = false;
    launchd_take_fds(&mh, m, &odd);
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

/* The parent of process pid from /proc/PID/stat ("pid (comm) S ppid
 * ..."; comm may hold spaces and parentheses, so the last ')' ends it),
 * or -1 when it cannot be read. */
static pid_t launchd_ppid(pid_t pid)
{
    char path[64];
    char buf[512];
    (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1U);
    (void)close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    const char *end = strrchr(buf, ')');
    if (end == NULL || end[1] != ' ' || end[2] == '\0' || end[3] != ' ') {
        return -1;
    }
    char *stop = NULL;
    long pp = strtol(end + 4, &stop, 10);
    return stop != end + 4 && *stop == ' ' && pp >= 0 ? (pid_t)pp : -1;
}

int launchd_peer_origin(int fd, pid_t self, pid_t *peer)
{
    struct ucred uc;
    socklen_t n = sizeof(uc);
    memset(&uc, 0, sizeof(uc));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &n) != 0 || uc.pid <= 0) {
        *peer = 0;
        return LAUNCHD_ORIGIN_UNKNOWN;
    }
    *peer = uc.pid;
    /* launchd is a child subreaper: every descendant of a job, however it
     * detached, still has launchd above it. */
    pid_t p = uc.pid;
    for (int step = 0; step < LAUNCHD_ANCESTRY_STEPS; step++) {
        if (p == self) {
            return LAUNCHD_ORIGIN_JOB;
        }
        if (p <= 1) {
            return LAUNCHD_ORIGIN_OUTSIDE;
        }
        p = launchd_ppid(p);
        if (p < 0) {
            return LAUNCHD_ORIGIN_UNKNOWN;
        }
    }
    return LAUNCHD_ORIGIN_UNKNOWN;
}
