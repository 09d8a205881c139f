/*
 * pbx_test_sock.c: see pbx_test_sock.h.
 */
#define _GNU_SOURCE
#include "pbx_test_sock.h"

#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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
