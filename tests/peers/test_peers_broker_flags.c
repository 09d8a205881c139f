/*
 * test_peers_broker_flags.c: what the injected descriptor keeps of the
 * open's flags, and how the broker waits and ends (peers/broker/
 * broker_notify.c; docs/HOST.md "Brokered opens", the flag table). A
 * child installs the open family's notification filter, hands its
 * listener over and makes real opens of a scope file; this process
 * serves them with a fake ask that approves with a plain descriptor of
 * the file, so whatever the program's descriptor shows beyond that plain
 * open is what the broker applied.
 */
#define _GNU_SOURCE
#include "../../peers/broker/broker.h"
#include "../../peers/lib/pbx_peer_seccomp.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* What the child reports, in order. */
enum {
    TF_CLOEXEC = 0,  /* O_CLOEXEC asked: FD_CLOEXEC on the descriptor */
    TF_NO_CLOEXEC,   /* not asked: no FD_CLOEXEC */
    TF_APPEND,       /* O_WRONLY|O_APPEND|O_NONBLOCK: both status flags */
    TF_OTHER,        /* O_SYNC|O_NOATIME|O_NOCTTY: none of them */
    TF_NOFOLLOW,     /* O_NOFOLLOW of a symlink in the scope: ELOOP */
    TF_VFSD_MISSING, /* the ask says ENOENT (vfsd has no such file) */
    TF_WAITED,       /* the job's other process opened after the prompt */
    TF_N
};

/* The test's state, shared with the fake ask. */
typedef struct tf_run {
    char dir[64];
    pid_t child;
    int tell;   /* read end: the job's other process's pid */
    int go;     /* write end: lets that process open */
    int done;   /* read end: that process's open returned */
    bool held;  /* it was seen waiting in its open during a prompt */
    bool early; /* its open returned while the prompt still showed */
    uint32_t asks;
} tf_run;

/* Whether process pid is blocked in the openat system call (the kernel
 * says so in /proc/PID/syscall: its number first). */
static bool tf_in_openat(pid_t pid)
{
    char p[64];
    char text[64] = {0};
    (void)snprintf(p, sizeof(p), "/proc/%d/syscall", (int)pid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, text, sizeof(text) - 1U) : -1;
    if (fd >= 0) {
        (void)close(fd);
    }
    char num[8];
    (void)snprintf(num, sizeof(num), "%d ", (int)SYS_openat);
    return n > 0 && strncmp(text, num, strlen(num)) == 0;
}

/* While the prompt for "hold.txt" shows: lets the job's other process
 * open, waits (bounded, for an observable state) until it is blocked in
 * its openat, and notes whether its open returned meanwhile. */
static void tf_hold(tf_run *r)
{
    pid_t other = 0;
    struct pollfd p = {r->tell, POLLIN, 0};
    if (poll(&p, 1U, 10000) != 1 ||
        read(r->tell, &other, sizeof(other)) != (ssize_t)sizeof(other)) {
        return;
    }
    (void)!write(r->go, "g", 1);
    /* Generous: the event comes at once on a working broker. */
    for (uint32_t i = 0; i < 10000U && !r->held; i++) {
        r->held = tf_in_openat(other);
        if (!r->held) {
            (void)usleep(1000U);
        }
    }
    struct pollfd d = {r->done, POLLIN, 0};
    r->early = poll(&d, 1U, 0) == 1;
}

/* The fake ask: a plain descriptor of the scope's a.txt in the mode
 * asked; "gone.txt" is missing at "vfsd" (ENOENT); "hold.txt" holds the
 * prompt (tf_hold). */
static int tf_ask(void *ctx, const pbx_broker_ask *q, int *fd, bool *person)
{
    tf_run *r = ctx;
    *person = false;
    r->asks++;
    const char *base = strrchr(q->path, '/');
    base = base != NULL ? base + 1 : q->path;
    if (strcmp(base, "gone.txt") == 0) {
        return ENOENT;
    }
    if (strcmp(base, "hold.txt") == 0) {
        tf_hold(r);
    }
    char p[128];
    (void)snprintf(p, sizeof(p), "%s/scope/a.txt", r->dir);
    int mode = q->mode == 3U ? O_RDWR : q->mode == 2U ? O_WRONLY : O_RDONLY;
    *fd = open(p, mode | O_CLOEXEC);
    return *fd >= 0 ? 0 : EIO;
}

/* The scope file dir/scope/name opened with flags: the descriptor's
 * F_GETFD (which) or F_GETFL, or -errno when the open failed. */
static int tf_flags_of(const char *dir, const char *name, int flags, int which)
{
    char p[128];
    (void)snprintf(p, sizeof(p), "%s/scope/%s", dir, name);
    int fd = open(p, flags);
    if (fd < 0) {
        return -errno;
    }
    int v = fcntl(fd, which);
    (void)close(fd);
    return v;
}

/* The job's other process: tells its pid, waits for go, opens a system
 * file (reported to the same listener), then says it returned. */
static void tf_other(int tell, int go, int done)
{
    pid_t me = getpid();
    char c = 0;
    (void)!write(tell, &me, sizeof(me));
    (void)!read(go, &c, 1);
    int fd = open("/etc/passwd", O_RDONLY);
    (void)!write(done, fd >= 0 ? "y" : "n", 1);
    _exit(0);
}

/* The child's opens; results to wfd. */
static void tf_opens(const char *dir, int wfd, const int *pipes)
{
    int r[TF_N];
    int fd = tf_flags_of(dir, "a.txt", O_RDONLY | O_CLOEXEC, F_GETFD);
    r[TF_CLOEXEC] = fd < 0 ? fd : (fd & FD_CLOEXEC) != 0;
    fd = tf_flags_of(dir, "a.txt", O_RDONLY, F_GETFD);
    r[TF_NO_CLOEXEC] = fd < 0 ? fd : (fd & FD_CLOEXEC) != 0;
    fd = tf_flags_of(dir, "a.txt", O_WRONLY | O_APPEND | O_NONBLOCK, F_GETFL);
    r[TF_APPEND] = fd < 0 ? fd : (fd & (O_APPEND | O_NONBLOCK));
    fd = tf_flags_of(dir, "a.txt", O_RDONLY | O_SYNC | O_NOATIME | O_NOCTTY,
                     F_GETFL);
    r[TF_OTHER] = fd < 0 ? fd : (fd & (O_SYNC | O_NOATIME | O_NOCTTY));
    r[TF_NOFOLLOW] = tf_flags_of(dir, "link", O_RDONLY | O_NOFOLLOW, F_GETFL);
    r[TF_VFSD_MISSING] = tf_flags_of(dir, "gone.txt", O_RDONLY, F_GETFL);
    pid_t other = fork();
    if (other == 0) {
        tf_other(pipes[0], pipes[1], pipes[2]);
    }
    /* Asked while the other process waits to open. */
    r[TF_WAITED] = tf_flags_of(dir, "hold.txt", O_RDONLY, F_GETFL) >= 0;
    (void)waitpid(other, NULL, 0);
    (void)!write(wfd, r, sizeof(r));
}

/* The child: the notify filter, its listener on sock, the opens. */
static void tf_child(const char *dir, int sock, int wfd, const int *pipes)
{
    (void)alarm(30U);
    static pbx_peer_seccomp_filter f;
    pbx_peer_seccomp_build_notify(&f);
    struct sock_fprog fp = {f.len, f.insns};
    (void)prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL);
    long l = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
    if (l < 0 || !tp_send_fd(sock, (int)l)) {
        _exit(3);
    }
    (void)close((int)l);
    (void)close(sock);
    tf_opens(dir, wfd, pipes);
    _exit(0);
}

/* Makes dir/scope with a.txt, gone.txt, hold.txt and link -> a.txt. */
static void tf_setup(tf_run *r)
{
    (void)snprintf(r->dir, sizeof(r->dir), "/tmp/pbx-broker-flags-XXXXXX");
    PBX_REQUIRE(mkdtemp(r->dir) != NULL);
    char p[128];
    (void)snprintf(p, sizeof(p), "%s/scope", r->dir);
    PBX_REQUIRE(mkdir(p, 0700) == 0);
    static const char *const names[] = {"a.txt", "gone.txt", "hold.txt"};
    for (size_t i = 0; i < 3U; i++) {
        (void)snprintf(p, sizeof(p), "%s/scope/%s", r->dir, names[i]);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        PBX_REQUIRE(fd >= 0);
        (void)close(fd);
    }
    (void)snprintf(p, sizeof(p), "%s/scope/link", r->dir);
    PBX_REQUIRE(symlink("a.txt", p) == 0);
}

/* Removes what tf_setup made. */
static void tf_teardown(const tf_run *r)
{
    static const char *const names[] = {"a.txt", "gone.txt", "hold.txt",
                                        "link"};
    char p[128];
    for (size_t i = 0; i < 4U; i++) {
        (void)snprintf(p, sizeof(p), "%s/scope/%s", r->dir, names[i]);
        (void)unlink(p);
    }
    (void)snprintf(p, sizeof(p), "%s/scope", r->dir);
    (void)rmdir(p);
    (void)rmdir(r->dir);
}

PBX_TEST(peers_broker_applies_the_open_flags_and_waits_and_ends)
{
    static tf_run r;
    memset(&r, 0, sizeof(r));
    tf_setup(&r);
    int sv[2];
    int pp[2];
    int tell[2];
    int go[2];
    int done[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
    PBX_REQUIRE(pipe(pp) == 0 && pipe(tell) == 0 && pipe(go) == 0 &&
                pipe(done) == 0);
    r.child = fork();
    PBX_REQUIRE(r.child >= 0);
    if (r.child == 0) {
        const int pipes[3] = {tell[1], go[0], done[1]};
        tf_child(r.dir, sv[1], pp[1], pipes);
    }
    (void)close(sv[1]);
    (void)close(pp[1]);
    (void)close(tell[1]);
    (void)close(go[0]);
    (void)close(done[1]);
    r.tell = tell[0];
    r.go = go[1];
    r.done = done[0];
    int lfd = tp_recv_fd(sv[0]);
    PBX_REQUIRE(lfd >= 0);
    static pbx_broker b;
    static char sreal[PBX_BROKER_PATH_MAX];
    static char rreal[PBX_BROKER_PATH_MAX];
    char scope[128];
    (void)snprintf(scope, sizeof(scope), "%s/scope", r.dir);
    PBX_REQUIRE(pbx_broker_init(&b, lfd, scope, r.dir, sreal, rreal, 100U,
                                3600000U) == 0);
    b.ask = tf_ask;
    b.ask_ctx = &r;
    /* Bounded: the child makes a few opens and a few of its own. */
    int last = 0;
    for (uint32_t i = 0; i < 200U && last == 0; i++) {
        last = pbx_broker_serve_one(&b);
    }
    int res[TF_N];
    PBX_REQUIRE(read(pp[0], res, sizeof(res)) == (ssize_t)sizeof(res));
    int ws = 0;
    (void)waitpid(r.child, &ws, 0);
    PBX_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    PBX_CHECK_EQ(res[TF_CLOEXEC], 1);
    PBX_CHECK_EQ(res[TF_NO_CLOEXEC], 0);
    PBX_CHECK_EQ(res[TF_APPEND], O_APPEND | O_NONBLOCK);
    PBX_CHECK_EQ(res[TF_OTHER], 0);
    PBX_CHECK_EQ(res[TF_NOFOLLOW], -ELOOP);
    PBX_CHECK_EQ(res[TF_VFSD_MISSING], -ENOENT);
    PBX_CHECK_EQ(res[TF_WAITED], 1);
    /* The other process's open waited in the kernel while the prompt
     * showed, and returned once it was answered. */
    PBX_CHECK(r.held && !r.early);
    char c = 0;
    PBX_CHECK(read(r.done, &c, 1) == 1 && c == 'y');
    /* The job's last process gone: the listener's end ends the serving
     * loop (pbx-broker's main then exits). */
    PBX_CHECK_EQ(last, -1);
    PBX_CHECK_EQ(pbx_broker_serve_one(&b), -1);
    pbx_broker_release(&b);
    (void)close(sv[0]);
    (void)close(pp[0]);
    (void)close(r.tell);
    (void)close(r.go);
    (void)close(r.done);
    tf_teardown(&r);
}
