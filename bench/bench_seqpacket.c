/*
 * bench_seqpacket.c: `pbx-bench seqpacket`, the host transport's floor:
 * raw AF_UNIX SOCK_SEQPACKET round trips between two processes, the
 * transport every powerboxd call uses on Linux (docs/HOST.md). Three
 * forms: no capability, one fd (SCM_RIGHTS) with the request (COMMIT,
 * DETACH), and one fd each way (INSTALL: a copy out, a handle back).
 * The receiver closes every fd it gets, as a receiver that is handed an
 * unwanted capability must. Reported as best batch mean and overall mean.
 */
#include "bench/bench.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/** Bytes per message: the size of a typical powerboxd frame. */
#define SP_MSG_BYTES 128U

/* The three forms measured (the first message byte names the form). */
enum { SP_PLAIN = 0, SP_FD_OUT = 1, SP_FD_BOTH = 2, SP_FORMS = 3 };

/* Sends len bytes with fd attached when fd >= 0. */
static bool sp_send(int sock, const uint8_t *msg, size_t len, int fd)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {(void *)msg, len};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (fd >= 0) {
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof(ctl.buf);
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof(int));
    }
    return sendmsg(sock, &mh, MSG_NOSIGNAL) == (ssize_t)len;
}

/* Receives one message into msg; closes any fd that came with it.
 * Returns the byte count, 0 at end of stream, -1 on error. */
static ssize_t sp_recv(int sock, uint8_t *msg, size_t cap)
{
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {msg, cap};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
    for (struct cmsghdr *cm = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; cm != NULL;
         cm = CMSG_NXTHDR(&mh, cm)) {
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS) {
            int fd = -1;
            memcpy(&fd, CMSG_DATA(cm), sizeof(int));
            (void)close(fd);
        }
    }
    return (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0 ? -1 : n;
}

/* The echo peer: answers every message with one of the same length,
 * attaching fd when the form asks for one back. */
static void sp_peer(int sock, int fd)
{
    uint8_t msg[SP_MSG_BYTES];
    for (;;) {
        ssize_t n = sp_recv(sock, msg, sizeof(msg));
        if (n <= 0 ||
            !sp_send(sock, msg, (size_t)n, msg[0] == SP_FD_BOTH ? fd : -1)) {
            return;
        }
    }
}

/* One batch of n round trips in form; returns nanoseconds, 0 on error. */
static uint64_t sp_batch(int sock, int fd, uint8_t form, uint32_t n)
{
    uint8_t msg[SP_MSG_BYTES];
    memset(msg, 0x5A, sizeof(msg));
    msg[0] = form;
    uint64_t t0 = bench_now_ns();
    for (uint32_t i = 0; i < n; i++) {
        if (!sp_send(sock, msg, sizeof(msg), form == SP_PLAIN ? -1 : fd) ||
            sp_recv(sock, msg, sizeof(msg)) != (ssize_t)sizeof(msg)) {
            return 0U;
        }
    }
    return bench_now_ns() - t0;
}

/* Measures every form: best batch mean and overall mean, in ns. */
static bool sp_measure(int sock, int fd, uint32_t n, uint32_t batches)
{
    static const char *const names[SP_FORMS] = {"plain", "fd_out", "fd_both"};
    for (unsigned form = 0; form < (unsigned)SP_FORMS; form++) {
        uint64_t best = UINT64_MAX;
        uint64_t total = 0;
        for (uint32_t b = 0; b < batches; b++) {
            uint64_t ns = sp_batch(sock, fd, (uint8_t)form, n);
            if (ns == 0U) {
                return false;
            }
            best = ns < best ? ns : best;
            total += ns;
        }
        (void)printf("seqpacket form=%s n=%u best_ns=%.0f mean_ns=%.0f\n",
                     names[form], n, (double)best / (double)n,
                     (double)total / ((double)n * (double)batches));
    }
    return true;
}

int bench_seqpacket_main(int argc, char **argv)
{
    uint32_t n = bench_arg_u32(argc, argv, "--n", 20000U);
    uint32_t batches = bench_arg_u32(argc, argv, "--batches", 5U);
    int sv[2];
    int fds[2];
    if (n == 0U || batches == 0U ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
        pipe(fds) != 0) {
        perror("pbx-bench seqpacket");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("pbx-bench seqpacket: fork");
        return 1;
    }
    if (pid == 0) {
        (void)close(sv[0]);
        sp_peer(sv[1], fds[1]);
        _exit(0);
    }
    (void)close(sv[1]);
    bool ok = sp_measure(sv[0], fds[0], n, batches);
    (void)close(sv[0]);
    int status = 0;
    (void)waitpid(pid, &status, 0);
    (void)close(fds[0]);
    (void)close(fds[1]);
    if (!ok) {
        (void)fprintf(stderr, "bench: seqpacket round trip failed\n");
        return 1;
    }
    return 0;
}
