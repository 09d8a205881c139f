/*
 * pbx_test_sock.c: see pbx_test_sock.h.
 */
#define _GNU_SOURCE
#include "pbx_test_sock.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int pbx_test_sock_connect(const char *name)
{
    struct sockaddr_un a;
    size_t n = strlen(name);
    if (n == 0U || n >= sizeof(a.sun_path)) {
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return -1;
    }
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    memcpy(a.sun_path, name, n);
    a.sun_path[0] = '\0';
    if (connect(fd, (struct sockaddr *)&a,
                (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n)) != 0) {
        (void)close(fd);
        return -1;
    }
    return fd;
}

bool pbx_test_sock_send(int fd, const void *msg, size_t len, const int *fds,
                        int nfds)
{
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * PBX_TEST_SOCK_FDS_MAX)];
    } ctrl;
    struct iovec iov = {(void *)msg, len};
    struct msghdr mh;
    if (nfds < 0 || nfds > PBX_TEST_SOCK_FDS_MAX) {
        return false;
    }
    memset(&mh, 0, sizeof(mh));
    memset(&ctrl, 0, sizeof(ctrl));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (nfds > 0) {
        struct cmsghdr *h = &ctrl.h;
        mh.msg_control = ctrl.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
        memcpy(CMSG_DATA(h), fds, sizeof(int) * (size_t)nfds);
    }
    return sendmsg(fd, &mh, MSG_NOSIGNAL) == (ssize_t)len;
}

/* The child's side: connects n times and sends every descriptor back on
 * out in one message; never returns. */
static void pbx_test_sock_child_run(int out, const char *name, int n)
{
    int fds[PBX_TEST_SOCK_CHILD_MAX];
    uint8_t one = 1U;
    for (int i = 0; i < n; i++) {
        fds[i] = pbx_test_sock_connect(name);
        if (fds[i] < 0) {
            _exit(1);
        }
    }
    _exit(pbx_test_sock_send(out, &one, sizeof(one), fds, n) ? 0 : 1);
}

/* Receives up to n descriptors from in into fds; returns how many. */
static int pbx_test_sock_child_take(int in, int *fds, int n)
{
    union {
        struct cmsghdr h;
        uint8_t b[CMSG_SPACE(sizeof(int) * PBX_TEST_SOCK_CHILD_MAX)];
    } ctl;
    uint8_t byte = 0;
    struct iovec iov = {&byte, sizeof(byte)};
    struct msghdr mh;
    int got = 0;
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.b;
    mh.msg_controllen = sizeof(ctl.b);
    if (recvmsg(in, &mh, MSG_CMSG_CLOEXEC) != 1) {
        return 0;
    }
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h != NULL;
         h = CMSG_NXTHDR(&mh, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && i < (size_t)PBX_TEST_SOCK_CHILD_MAX; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
            if (got < n) {
                fds[got++] = fd;
            } else {
                (void)close(fd);
            }
        }
    }
    return got;
}

int pbx_test_sock_connect_child(const char *name, int *fds, int n)
{
    int sv[2];
    int status = 0;
    if (n < 1 || n > PBX_TEST_SOCK_CHILD_MAX ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        return 0;
    }
    pid_t pid = fork();
    if (pid == 0) {
        (void)close(sv[0]);
        pbx_test_sock_child_run(sv[1], name, n);
    }
    (void)close(sv[1]);
    int got = pid > 0 ? pbx_test_sock_child_take(sv[0], fds, n) : 0;
    (void)close(sv[0]);
    if (pid > 0) {
        (void)waitpid(pid, &status, 0);
    }
    if (got != n) {
        for (int i = 0; i < got; i++) {
            (void)close(fds[i]);
        }
        for (int i = 0; i < n; i++) {
            fds[i] = -1;
        }
        return 0;
    }
    return n;
}
