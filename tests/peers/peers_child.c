/*
 * peers_child.c: spawning and stopping peer processes for the tests.
 */
/* pipe2 is a Linux extension. */
#define _GNU_SOURCE

#include "peers_child.h"
#include "peers/common/pbx_peer_io.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Runs in the child: prepares descriptors and execs; never returns. */
static void tp_exec(const char *name, const char *const *args, const int *keep,
                    size_t nkeep, int stdin_fd, int ready_wr)
{
    char path[512];
    char log[512];
    const char *bin = getenv("PBX_PEERS_BIN");
    const char *tmp = getenv("TMPDIR");
    (void)snprintf(path, sizeof(path), "%s/pbx-%s", bin ? bin : "build/bin",
                   name);
    (void)snprintf(log, sizeof(log), "%s/pbx-peer-%s.log", tmp ? tmp : "/tmp",
                   name);
    int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (lfd >= 0) {
        (void)dup2(lfd, 1);
        (void)dup2(lfd, 2);
    }
    if (stdin_fd >= 0) {
        (void)dup2(stdin_fd, 0);
    } else {
        int nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (nul >= 0) {
            (void)dup2(nul, 0);
        }
    }
    for (size_t i = 0; i < nkeep; i++) {
        (void)fcntl(keep[i], F_SETFD, 0);
    }
    (void)fcntl(ready_wr, F_SETFD, 0);
    char rfd[16];
    (void)snprintf(rfd, sizeof(rfd), "%d", ready_wr);
    char *argv[TP_ARGS_MAX + 4];
    size_t n = 0;
    argv[n++] = path;
    for (size_t i = 0; args[i] != NULL && n < TP_ARGS_MAX; i++) {
        argv[n++] = (char *)args[i];
    }
    argv[n++] = (char *)"--ready-fd";
    argv[n++] = rfd;
    argv[n] = NULL;
    execv(path, argv);
    _exit(127);
}

pid_t tp_spawn(const char *name, const char *const *args, const int *keep,
               size_t nkeep, int stdin_fd)
{
    int rp[2];
    if (pipe2(rp, O_CLOEXEC) != 0) {
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        /* A test that aborts (PBX_REQUIRE) skips its own stop: the peer
         * must still die with the test process, never outlive it. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL) != 0 ||
            getppid() != parent) {
            _exit(127);
        }
        (void)close(rp[0]);
        tp_exec(name, args, keep, nkeep, stdin_fd, rp[1]);
    }
    (void)close(rp[1]);
    if (pid < 0) {
        (void)close(rp[0]);
        return -1;
    }
    struct pollfd p = {rp[0], POLLIN, 0};
    char buf[16] = {0};
    ssize_t r = -1;
    if (poll(&p, 1, 5000) == 1) {
        r = read(rp[0], buf, sizeof(buf) - 1U);
    }
    /* Wait for the peer to close its end too, so fd counts are stable. */
    if (r > 0 && poll(&p, 1, 1000) == 1) {
        char rest[8];
        (void)!read(rp[0], rest, sizeof(rest));
    }
    (void)close(rp[0]);
    if (r < 5 || strncmp(buf, "ready", 5) != 0) {
        (void)kill(pid, SIGKILL);
        (void)waitpid(pid, NULL, 0);
        return -1;
    }
    return pid;
}

int tp_wait_exit(pid_t pid, int timeout_ms)
{
    int st = 0;
    for (int i = 0; i < timeout_ms / 10 + 1; i++) {
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        }
        struct timespec ts = {0, 10L * 1000L * 1000L};
        (void)nanosleep(&ts, NULL);
    }
    (void)kill(pid, SIGKILL);
    (void)waitpid(pid, NULL, 0);
    return -1;
}

int tp_stop(pid_t pid)
{
    int st = 0;
    (void)kill(pid, SIGTERM);
    (void)kill(pid, SIGCONT);
    /* Bounded: a peer that does not end within 20 s of SIGTERM (one
     * stuck in a call, say) is killed, and its status says so, so that a
     * hang fails its test instead of holding the whole run. */
    for (int i = 0; i < 2000; i++) {
        if (waitpid(pid, &st, WNOHANG) == pid) {
            return st;
        }
        tp_sleep_ms(10);
    }
    (void)fprintf(stderr, "tp_stop: pid %d ignored SIGTERM for 20 s: killed\n",
                  (int)pid);
    (void)kill(pid, SIGKILL);
    (void)waitpid(pid, &st, 0);
    return st;
}

/* The state letter of pid in /proc (R, S, T, ...), or '?'. */
static char tp_state(pid_t pid)
{
    char path[64];
    char buf[512];
    (void)snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (tp_read_file(path, buf, sizeof(buf)) <= 0) {
        return '?';
    }
    const char *close_paren = strrchr(buf, ')');
    if (close_paren == NULL || close_paren[1] != ' ') {
        return '?';
    }
    return close_paren[2];
}

bool tp_stall(pid_t pid, bool stop)
{
    if (kill(pid, stop ? SIGSTOP : SIGCONT) != 0) {
        return false;
    }
    /* Signals are delivered asynchronously: wait until the state shows. */
    for (int i = 0; i < 200; i++) {
        char st = tp_state(pid);
        if ((st == 'T') == stop) {
            return true;
        }
        tp_sleep_ms(5);
    }
    return false;
}

void tp_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000L * 1000L};
    (void)nanosleep(&ts, NULL);
}

bool tp_readable(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    return poll(&p, 1, timeout_ms) == 1;
}

const char *tp_tmpdir(void)
{
    static char bufs[8][256];
    static unsigned next;
    char *b = bufs[next++ % 8U];
    const char *tmp = getenv("TMPDIR");
    (void)snprintf(b, 256, "%s/pbx-peers-XXXXXX", tmp ? tmp : "/tmp");
    if (mkdtemp(b) == NULL) {
        perror("pbx-peers-test: mkdtemp");
        exit(2);
    }
    return b;
}

int tp_fd_count(pid_t pid)
{
    char path[64];
    (void)snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL) {
        return -1;
    }
    int n = 0;
    for (struct dirent *e = readdir(d); e != NULL && n < 100000;
         e = readdir(d)) {
        n += e->d_name[0] != '.' ? 1 : 0;
    }
    (void)closedir(d);
    return n;
}

bool tp_hung_up(int fd, int timeout_ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, timeout_ms) != 1) {
        return false;
    }
    return (p.revents & POLLHUP) != 0;
}

bool tp_seqpair(int sv[2])
{
    return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0;
}

long tp_read_file(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, buf, cap - 1U);
    (void)close(fd);
    if (n < 0) {
        return -1;
    }
    buf[n] = '\0';
    return (long)n;
}

int tp_fd_settle(pid_t pid, int want, int timeout_ms)
{
    int n = tp_fd_count(pid);
    for (int i = 0; i < timeout_ms / 10 && n != want; i++) {
        struct timespec ts = {0, 10L * 1000L * 1000L};
        (void)nanosleep(&ts, NULL);
        n = tp_fd_count(pid);
    }
    return n;
}

_Noreturn void tp_exec_peer(const char *name, const char *const *args)
{
    char path[512];
    const char *bin = getenv("PBX_PEERS_BIN");
    (void)snprintf(path, sizeof(path), "%s/pbx-%s",
                   bin != NULL ? bin : "build/bin", name);
    char *argv[TP_ARGS_MAX + 2];
    size_t n = 0;
    argv[n++] = path;
    for (size_t i = 0; args[i] != NULL && n <= TP_ARGS_MAX; i++) {
        argv[n++] = (char *)args[i]; /* execv takes char *const[] */
    }
    argv[n] = NULL;
    execv(path, argv);
    _exit(127);
}

int tp_cli(const char *name, const char *const *args, char *out, char *err,
           size_t cap)
{
    const char *dir = tp_tmpdir();
    char paths[2][512];
    (void)snprintf(paths[0], sizeof(paths[0]), "%s/stdout", dir);
    (void)snprintf(paths[1], sizeof(paths[1]), "%s/stderr", dir);
    pid_t pid = fork();
    if (pid == 0) {
        int o = open(paths[0], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(paths[1], O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int nul = open("/dev/null", O_RDONLY);
        if (o < 0 || e < 0 || nul < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0 ||
            dup2(nul, 0) < 0) {
            _exit(126);
        }
        tp_exec_peer(name, args);
    }
    if (pid < 0) {
        return -1;
    }
    int st = tp_wait_exit(pid, 5000);
    if (tp_read_file(paths[0], out, cap) < 0 ||
        tp_read_file(paths[1], err, cap) < 0) {
        return -1;
    }
    return st;
}

bool tp_logged(const char *path, const char *what)
{
    static char text[65536];
    for (int i = 0; i < 200; i++) {
        if (tp_read_file(path, text, sizeof(text)) > 0 &&
            strstr(text, what) != NULL) {
            return true;
        }
        tp_sleep_ms(10);
    }
    return false;
}

uint8_t tp_attach_send(int chan, uint8_t op, const int *fds, size_t nfds,
                       uint8_t want)
{
    if (pbx_peer_io_send_fds(chan, &op, 1U, fds, nfds, 0) != 0 ||
        !tp_readable(chan, 3000)) {
        return 0xFFU;
    }
    uint8_t a[4] = {0, 0, 0, 0};
    if (read(chan, a, sizeof(a)) != 2) {
        return 0xFFU;
    }
    return a[0] == want ? a[1] : 0xFEU;
}

bool tp_send_fd(int sock, int fd)
{
    char c = 'L';
    struct iovec iov = {&c, 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    memset(&u, 0, sizeof(u));
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = u.b;
    m.msg_controllen = sizeof(u.b);
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(h), &fd, sizeof(int));
    return sendmsg(sock, &m, 0) == 1;
}

int tp_recv_fd(int sock)
{
    char c = 0;
    struct iovec iov = {&c, 1};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(sizeof(int))];
    } u;
    struct msghdr m = {0};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = u.b;
    m.msg_controllen = sizeof(u.b);
    if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1) {
        return -1;
    }
    struct cmsghdr *h = CMSG_FIRSTHDR(&m);
    int fd = -1;
    if (h != NULL && h->cmsg_type == SCM_RIGHTS) {
        memcpy(&fd, CMSG_DATA(h), sizeof(int));
    }
    return fd;
}
