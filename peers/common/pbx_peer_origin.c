/*
 * pbx_peer_origin.c: the ancestry walk of a connecting process and the
 * query sockets' admission rule. See pbx_peer_origin.h.
 */
/* struct ucred (SO_PEERCRED) is a GNU extension of glibc's headers. */
#define _GNU_SOURCE

#include "peers/common/pbx_peer_origin.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"

/* SO_PEERPIDFD (Linux 6.5) where the C library's headers lack it. */
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

pid_t pbx_peer_origin_stat_ppid(const char *stat)
{
    const char *end = strrchr(stat, ')');
    if (end == NULL || end[1] != ' ' || end[2] == '\0' || end[3] != ' ') {
        return -1;
    }
    char *stop = NULL;
    long pp = strtol(end + 4, &stop, 10);
    return stop != end + 4 && *stop == ' ' && pp >= 0 ? (pid_t)pp : -1;
}

/* The parent of process pid from /proc/PID/stat (see
 * pbx_peer_origin_stat_ppid), or -1 when it cannot be read. */
static pid_t origin_ppid(pid_t pid)
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
    return pbx_peer_origin_stat_ppid(buf);
}

pid_t pbx_peer_origin_pid(int fd)
{
    struct ucred uc;
    socklen_t n = sizeof(uc);
    memset(&uc, 0, sizeof(uc));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &n) != 0 || uc.pid <= 0) {
        return 0;
    }
    return uc.pid;
}

pbx_peer_origin_kind pbx_peer_origin_walk(pid_t pid, pid_t ancestor)
{
    if (pid <= 0 || ancestor <= 0) {
        return PBX_PEER_ORIGIN_UNKNOWN;
    }
    if (pid == ancestor) {
        return PBX_PEER_ORIGIN_SELF;
    }
    pid_t chain[PBX_PEER_ORIGIN_STEPS + 1];
    size_t n = 0;
    chain[n++] = pid;
    pbx_peer_origin_kind kind = PBX_PEER_ORIGIN_UNKNOWN;
    for (int step = 0; step < PBX_PEER_ORIGIN_STEPS; step++) {
        pid_t p = origin_ppid(chain[n - 1U]);
        if (p < 0) {
            return PBX_PEER_ORIGIN_UNKNOWN;
        }
        chain[n++] = p;
        if (p == ancestor) {
            kind = PBX_PEER_ORIGIN_BELOW;
            break;
        }
        if (p <= 1) {
            kind = PBX_PEER_ORIGIN_OUTSIDE;
            break;
        }
    }
    /* The second reading: a parent that died during the walk changed its
     * children's parent (to a subreaper) before its pid could be reused,
     * so a link read again unchanged was a true link throughout. */
    for (size_t i = 0; kind != PBX_PEER_ORIGIN_UNKNOWN && i + 1U < n; i++) {
        if (origin_ppid(chain[i]) != chain[i + 1U]) {
            kind = PBX_PEER_ORIGIN_UNKNOWN;
        }
    }
    return kind;
}

/* Whether the process behind pidfd is still alive: a pidfd turns
 * readable once its process has exited (pidfd_open(2)), so an empty poll
 * means the pid was not free for reuse during the walk. A pidfd that
 * cannot be polled counts as gone. poll, not pidfd_send_signal with
 * signal 0: valgrind 3.19 (Debian 12) does not know that system call and
 * answers ENOSYS, which made every connection look gone under make
 * memcheck. */
static bool origin_alive(int pidfd)
{
    struct pollfd p = {.fd = pidfd, .events = POLLIN, .revents = 0};
    return poll(&p, 1, 0) == 0;
}

pbx_peer_origin_kind pbx_peer_origin_of(int fd, pid_t ancestor, pid_t *peer)
{
    *peer = pbx_peer_origin_pid(fd);
    if (*peer == 0) {
        return PBX_PEER_ORIGIN_UNKNOWN;
    }
    int pidfd = -1;
    socklen_t len = sizeof(pidfd);
    bool have = getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0;
    if (!have && errno != ENOPROTOOPT && errno != EINVAL) {
        /* The kernel knows the option but not the peer: gone. */
        return PBX_PEER_ORIGIN_UNKNOWN;
    }
    pbx_peer_origin_kind kind = pbx_peer_origin_walk(*peer, ancestor);
    if (have) {
        if (!origin_alive(pidfd)) {
            kind = PBX_PEER_ORIGIN_UNKNOWN;
        }
        (void)close(pidfd);
    }
    return kind;
}

int pbx_peer_admit_option(pbx_peer_admit *a, const char *k, const char *v,
                          uint32_t per_pid_max)
{
    uint64_t x = 0;
    if (strcmp(k, "--jobs-below") == 0) {
        if (!pbx_peer_parse_u64(v, INT32_MAX, &x) || x <= 1U) {
            return -1;
        }
        a->jobs_below = (pid_t)x;
        return 1;
    }
    if (strcmp(k, "--max-per-pid") == 0) {
        if (!pbx_peer_parse_u64(v, per_pid_max, &x) || x == 0U) {
            return -1;
        }
        a->per_pid = (uint32_t)x;
        return 1;
    }
    return 0;
}

/* Writes why a new connection from peer is refused under a into why
 * (cap bytes), or leaves it empty when it is admitted. */
static void admit_judge(int fd, const pbx_peer_admit *a, const pid_t *held,
                        size_t n, pid_t *peer, char *why, size_t cap)
{
    why[0] = '\0';
    pbx_peer_origin_kind kind = PBX_PEER_ORIGIN_OUTSIDE;
    if (a->jobs_below > 0) {
        kind = pbx_peer_origin_of(fd, a->jobs_below, peer);
    } else {
        *peer = pbx_peer_origin_pid(fd);
    }
    if (kind == PBX_PEER_ORIGIN_BELOW) {
        (void)snprintf(why, cap,
                       "pid %d is a launched job (below pid %d): this socket "
                       "answers only the user's administrative processes",
                       (int)*peer, (int)a->jobs_below);
        return;
    }
    if (*peer == 0) {
        (void)snprintf(why, cap, "the connecting process is unknown");
        return;
    }
    if (kind == PBX_PEER_ORIGIN_UNKNOWN) {
        (void)snprintf(why, cap,
                       "the ancestry of pid %d cannot be read within %d "
                       "steps",
                       (int)*peer, PBX_PEER_ORIGIN_STEPS);
        return;
    }
    size_t mine = 0;
    for (size_t i = 0; i < n; i++) {
        mine += held[i] == *peer ? 1U : 0U;
    }
    if (mine >= a->per_pid) {
        (void)snprintf(why, cap,
                       "pid %d already holds %zu connection(s) here (at most "
                       "%u per process)",
                       (int)*peer, mine, a->per_pid);
    }
}

pid_t pbx_peer_admit_query(int fd, const pbx_peer_admit *a, const pid_t *held,
                           size_t n, const char *who)
{
    char why[PBX_PEER_ADMIT_LINE_MAX - 16U];
    pid_t peer = 0;
    admit_judge(fd, a, held, n, &peer, why, sizeof(why));
    if (why[0] == '\0') {
        return peer;
    }
    char line[PBX_PEER_ADMIT_LINE_MAX];
    int len = snprintf(line, sizeof(line), "refused: %s\n", why);
    /* One short line on a fresh connection: its socket buffer is empty,
     * so the send never waits; a reader that is gone just misses it. */
    (void)send(fd, line, (size_t)len, MSG_DONTWAIT | MSG_NOSIGNAL);
    pbx_peer_log(who, "query connection refused: %s", why);
    (void)close(fd);
    return 0;
}
