/*
 * port_child.c: start the portcheck image with an exact startup inventory
 * and talk to it the way powerboxd's peers and callers would.
 */
#define _GNU_SOURCE
#include "port_child.h"
#include "../sock/pbx_test_sock.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The highest descriptor the child setup closes before exec. */
#define T_FD_SWEEP 4096

int t_memfd(const char *name, const void *data, size_t len)
{
    int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return -1;
    }
    if (len > 0U && write(fd, data, len) != (ssize_t)len) {
        (void)close(fd);
        return -1;
    }
    return fd;
}

/* Builds the PBX1 object for mode; -1 means "no object" (or failure). */
static int t_pbx1(t_pbx1_mode mode)
{
    uint8_t rec[16] = {'P', 'B', 'X', '1', 1, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0};
    int all = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    int fd;
    if (mode == T_PBX1_NONE) {
        return -1;
    }
    if (mode == T_PBX1_DEVNULL) {
        return open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    if (mode == T_PBX1_BADMAGIC) {
        rec[3] = '2';
    }
    fd = t_memfd("pbx1", rec, sizeof(rec));
    if (fd >= 0 && mode == T_PBX1_PARTIAL) {
        (void)fcntl(fd, F_ADD_SEALS, all & ~F_SEAL_WRITE);
    } else if (fd >= 0 && mode != T_PBX1_UNSEALED) {
        (void)fcntl(fd, F_ADD_SEALS, all);
    }
    return fd;
}

/* The RLIMIT_NOFILE of the next spawned child (t_spawn_nofile); a hard
 * value of 0 leaves the harness's own. */
static struct rlimit t_nofile_next;

void t_spawn_nofile(rlim_t soft, rlim_t hard)
{
    t_nofile_next.rlim_cur = soft;
    t_nofile_next.rlim_max = hard;
}

/* In the child: places err_fd (when not negative) at fd 2 and src[i] at
 * fd 3 + i (closing 3 + i when src[i] is negative), closes everything else
 * above 2, and runs the image. */
static _Noreturn void t_child_exec(const char *path, const char *name,
                                   const int *src, int err_fd)
{
    int high[4];
    for (int i = 0; i < 4; i++) {
        high[i] = src[i] >= 0 ? fcntl(src[i], F_DUPFD, 64) : -1;
    }
    if (err_fd >= 0 && err_fd != 2) {
        (void)dup2(err_fd, 2);
    }
    for (int i = 0; i < 4; i++) {
        if (high[i] >= 0) {
            (void)dup2(high[i], 3 + i);
        } else {
            (void)close(3 + i);
        }
    }
    for (int fd = 7; fd < T_FD_SWEEP; fd++) {
        (void)close(fd);
    }
    if (t_nofile_next.rlim_max != 0U &&
        setrlimit(RLIMIT_NOFILE, &t_nofile_next) != 0) {
        _exit(126);
    }
    char *const argv[] = {(char *)path, (char *)name, NULL};
    execv(path, argv);
    _exit(127);
}

/* Opens the three route pairs; ours go into c, the child's into theirs. */
static bool t_routes(t_child *c, int *theirs)
{
    int sup[2];
    int note[2];
    int peer[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sup) != 0) {
        return false;
    }
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, note) != 0) {
        (void)close(sup[0]);
        (void)close(sup[1]);
        return false;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, peer) != 0) {
        (void)close(sup[0]);
        (void)close(sup[1]);
        (void)close(note[0]);
        (void)close(note[1]);
        return false;
    }
    c->supervisor = sup[0];
    c->notify = note[0];
    c->peer = peer[0];
    theirs[1] = sup[1];
    theirs[2] = note[1];
    theirs[3] = peer[1];
    return true;
}

bool t_spawn(t_child *c, t_pbx1_mode mode)
{
    return t_spawn_err(c, mode, -1);
}

bool t_spawn_err(t_child *c, t_pbx1_mode mode, int err_fd)
{
    static unsigned serial;
    const char *path = getenv("PBX_PORTCHECK");
    int theirs[4] = {-1, -1, -1, -1};
    memset(c, 0, sizeof(*c));
    c->supervisor = c->notify = c->peer = c->client = -1;
    if (path == NULL || !t_routes(c, theirs)) {
        return false;
    }
    theirs[0] = t_pbx1(mode);
    (void)snprintf(c->name, sizeof(c->name), "@pbx-port-%d-%u", (int)getpid(),
                   serial++);
    c->pid = fork();
    if (c->pid == 0) {
        t_child_exec(path, c->name, theirs, err_fd);
    }
    /* A limit applies to one spawn only. */
    t_spawn_nofile(0U, 0U);
    for (int i = 0; i < 4; i++) {
        if (theirs[i] >= 0) {
            (void)close(theirs[i]);
        }
    }
    if (c->pid < 0) {
        c->pid = 0;
        t_close_all(c);
        return false;
    }
    return true;
}

/* Waits up to ms for fd to become readable. */
static bool t_readable(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, ms) == 1 && (p.revents & POLLIN) != 0;
}

bool t_wait_ready(t_child *c)
{
    char buf[16] = {0};
    if (!t_readable(c->supervisor, 5000)) {
        return false;
    }
    return recv(c->supervisor, buf, sizeof(buf), 0) == 5 &&
           memcmp(buf, "READY", 5) == 0;
}

int t_exit_status(t_child *c)
{
    int st = 0;
    for (int i = 0; i < 500 && c->pid > 0; i++) {
        pid_t r = waitpid(c->pid, &st, WNOHANG);
        if (r == c->pid) {
            c->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        struct timespec ts = {0, 10000000L};
        (void)nanosleep(&ts, NULL);
    }
    return -2;
}

void t_close_all(t_child *c)
{
    int *fds[] = {&c->supervisor, &c->notify, &c->peer, &c->client};
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++) {
        if (*fds[i] >= 0) {
            (void)close(*fds[i]);
            *fds[i] = -1;
        }
    }
    if (c->pid > 0) {
        (void)kill(c->pid, SIGKILL);
        (void)waitpid(c->pid, NULL, 0);
        c->pid = 0;
    }
}

int t_connect(const t_child *c)
{
    return pbx_test_sock_connect(c->name);
}

bool t_send(int fd, const void *msg, size_t len, const int *fds, int nfds)
{
    return pbx_test_sock_send(fd, msg, len, fds, nfds);
}

/* Takes the first descriptor out of a received control buffer, closing
 * any others, and stores it in *fd_out or closes it too. */
static void t_take_fds(struct msghdr *mh, int *fd_out)
{
    for (struct cmsghdr *h = CMSG_FIRSTHDR(mh); h != NULL;
         h = CMSG_NXTHDR(mh, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t n = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < n; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof(fd));
            if (fd_out != NULL && *fd_out < 0) {
                *fd_out = fd;
            } else {
                (void)close(fd);
            }
        }
    }
}

bool t_recv_reply(int fd, uint32_t *w, int *fd_out, int ms)
{
    uint8_t buf[4 * T_REPLY_WORDS];
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int) * 4)];
    } ctrl;
    struct iovec iov = {buf, sizeof(buf)};
    struct msghdr mh;
    memset(w, 0, sizeof(uint32_t) * T_REPLY_WORDS);
    memset(buf, 0, sizeof(buf));
    if (fd_out != NULL) {
        *fd_out = -1;
    }
    if (!t_readable(fd, ms)) {
        return false;
    }
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl.buf;
    mh.msg_controllen = sizeof(ctrl.buf);
    if (recvmsg(fd, &mh, MSG_CMSG_CLOEXEC) <= 0) {
        return false;
    }
    t_take_fds(&mh, fd_out);
    for (int i = 0; i < T_REPLY_WORDS; i++) {
        const uint8_t *p = buf + (size_t)4 * (size_t)i;
        w[i] = (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
               ((uint32_t)p[3] << 24);
    }
    return true;
}

bool t_request(t_child *c, char op, uint8_t arg, const int *fds, int nfds,
               uint32_t *w, int *fd_out)
{
    uint8_t msg[2] = {(uint8_t)op, arg};
    return t_send(c->client, msg, sizeof(msg), fds, nfds) &&
           t_recv_reply(c->client, w, fd_out, 5000);
}

int t_fd_count(pid_t pid)
{
    char path[64];
    int n = 0;
    (void)snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL) {
        return -1;
    }
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        n += e->d_name[0] != '.';
    }
    (void)closedir(d);
    return n;
}

bool t_same_object(pid_t pid, int slot, int fd)
{
    char path[64];
    struct stat a;
    struct stat b;
    (void)snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, slot);
    return stat(path, &a) == 0 && fstat(fd, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}
