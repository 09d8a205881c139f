/*
 * test_peers_broker_live.c: the open broker's notification handler
 * (peers/broker/broker_notify.c) in the kernel. A child installs the
 * open family's user-notification filter, hands its listener to this
 * process and makes real opens; this process serves them with
 * pbx_broker_serve_one and a fake ask that records each question and
 * answers with a descriptor of a file under a stand-in "mount". Each
 * open's result comes back on a pipe.
 */
#define _GNU_SOURCE
#include "../../peers/broker/broker.h"
#include "../../peers/lib/pbx_peer_seccomp.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The opens the child makes, in order; each reports one int. */
enum {
    TL_SYSTEM = 0,   /* /etc/passwd: continued */
    TL_GRANT,        /* scope/a.txt read: asked, injected */
    TL_GRANT_BYTES,  /* the injected descriptor reads the object */
    TL_LINK_OUT,     /* scope/out -> /etc/passwd: EACCES, not asked */
    TL_DIR,          /* the scope directory itself: EACCES */
    TL_DOTDOT,       /* openat(scope dir fd, "../secret"): EACCES */
    TL_OUTSIDE,      /* root/secret: EACCES, not asked */
    TL_O_PATH,       /* scope/a.txt with O_PATH: EACCES */
    TL_MISSING,      /* scope/missing: ENOENT */
    TL_TRUNC_DENIED, /* relative "a.txt" O_RDONLY|O_TRUNC: asked as a
                        write, denied: EACCES */
    TL_REOPEN,       /* /proc/self/fd/N of the grant, for write: EACCES */
    TL_IN_ROOT,      /* openat2 RESOLVE_IN_ROOT of a scope file: EXDEV */
    TL_RATE_LAST,    /* scope/b.txt: the burst's last prompt */
    TL_RATE_OVER,    /* scope/c.txt: over the rate, EACCES, not asked */
    TL_OWN_PROC,     /* /proc/PID/status (its own PID): continued */
    TL_OWN_TASK,     /* /proc/PID/task/PID/status: continued */
    TL_OTHER_PROC,   /* /proc/1/status: EACCES, not asked */
    TL_N
};

/* What the fake ask saw. */
typedef struct tl_seen {
    uint32_t asks;
    uint8_t ops[16];
    char sel[16][64];
    char path[16][256];
    const char *obj;
} tl_seen;

/* The fake ask: records the question; approves reads with a descriptor
 * of the stand-in mount's object, denies everything else. */
static int tl_ask(void *ctx, const pbx_broker_ask *q, int *fd, bool *person)
{
    tl_seen *s = ctx;
    /* Every answer here stands for a person's (charged). */
    *person = true;
    uint32_t i = s->asks++ % 16U;
    s->ops[i] = q->op;
    (void)snprintf(s->sel[i], sizeof(s->sel[i]), "%s", q->selector);
    (void)snprintf(s->path[i], sizeof(s->path[i]), "%s", q->path);
    if (q->op != PBX_PEER_BROKER_OP_READ) {
        return EACCES;
    }
    *fd = open(s->obj, O_RDONLY | O_CLOEXEC);
    return *fd >= 0 ? 0 : EIO;
}

/* An open's result: 0 with fd kept in *fd, else errno. */
static int tl_res(int fd, int *keep)
{
    if (fd < 0) {
        return errno;
    }
    if (keep != NULL) {
        *keep = fd;
    } else {
        (void)close(fd);
    }
    return 0;
}

/* The child's opens below dir (root/scope); results to wfd. */
static void tl_child_opens(const char *dir, int d, int wfd)
{
    int r[TL_N];
    char p[512];
    int g = -1;
    r[TL_SYSTEM] = tl_res(open("/etc/passwd", O_RDONLY), NULL);
    (void)snprintf(p, sizeof(p), "%s/scope/a.txt", dir);
    r[TL_GRANT] = tl_res(open(p, O_RDONLY), &g);
    char buf[16] = {0};
    r[TL_GRANT_BYTES] =
        g >= 0 && read(g, buf, 7) == 7 && memcmp(buf, "OBJECT!", 7) == 0 ? 0
                                                                         : -1;
    (void)snprintf(p, sizeof(p), "%s/scope/out", dir);
    r[TL_LINK_OUT] = tl_res(open(p, O_RDONLY), NULL);
    (void)snprintf(p, sizeof(p), "%s/scope", dir);
    r[TL_DIR] = tl_res(open(p, O_RDONLY | O_DIRECTORY), NULL);
    r[TL_DOTDOT] = tl_res(openat(d, "../secret", O_RDONLY), NULL);
    (void)snprintf(p, sizeof(p), "%s/secret", dir);
    r[TL_OUTSIDE] = tl_res(open(p, O_RDONLY), NULL);
    (void)snprintf(p, sizeof(p), "%s/scope/a.txt", dir);
    r[TL_O_PATH] = tl_res(open(p, O_PATH), NULL);
    (void)snprintf(p, sizeof(p), "%s/scope/missing", dir);
    r[TL_MISSING] = tl_res(open(p, O_RDONLY), NULL);
    (void)snprintf(p, sizeof(p), "%s/scope", dir);
    r[TL_TRUNC_DENIED] =
        chdir(p) == 0 ? tl_res(open("a.txt", O_RDONLY | O_TRUNC), NULL) : -1;
    (void)snprintf(p, sizeof(p), "/proc/self/fd/%d", g);
    r[TL_REOPEN] = tl_res(open(p, O_WRONLY), NULL);
    struct open_how how = {0};
    how.flags = O_RDONLY;
    how.resolve = RESOLVE_IN_ROOT;
    r[TL_IN_ROOT] = tl_res(
        (int)syscall(SYS_openat2, AT_FDCWD, "a.txt", &how, sizeof(how)), NULL);
    r[TL_RATE_LAST] = tl_res(open("b.txt", O_RDONLY), NULL);
    r[TL_RATE_OVER] = tl_res(open("c.txt", O_RDONLY), NULL);
    /* Its own /proc/PID is its /proc/self; another process's is not. */
    (void)snprintf(p, sizeof(p), "/proc/%d/status", (int)getpid());
    r[TL_OWN_PROC] = tl_res(open(p, O_RDONLY), NULL);
    (void)snprintf(p, sizeof(p), "/proc/%d/task/%d/status", (int)getpid(),
                   (int)getpid());
    r[TL_OWN_TASK] = tl_res(open(p, O_RDONLY), NULL);
    r[TL_OTHER_PROC] = tl_res(open("/proc/1/status", O_RDONLY), NULL);
    (void)!write(wfd, r, sizeof(r));
}

/* The child: installs the notify filter, sends its listener on sock,
 * makes the opens. Never returns. */
static void tl_child(const char *dir, int sock, int wfd)
{
    static pbx_peer_seccomp_filter f;
    pbx_peer_seccomp_build_notify(&f);
    struct sock_fprog fp = {f.len, f.insns};
    /* A directory descriptor of the scope from before the filter. */
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/scope", dir);
    int d = open(p, O_RDONLY | O_DIRECTORY);
    (void)prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL);
    long l = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
    if (l < 0) {
        _exit(3);
    }
    int lfd = (int)l;
    if (!tp_send_fd(sock, lfd)) {
        _exit(4);
    }
    (void)close(lfd);
    (void)close(sock);
    tl_child_opens(dir, d, wfd);
    _exit(0);
}

/* Writes text into the file dir/name. */
static void tl_file(const char *dir, const char *name, const char *text)
{
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd >= 0) {
        (void)!write(fd, text, strlen(text));
        (void)close(fd);
    }
}

PBX_TEST(peers_broker_serves_a_sandboxed_child_in_the_kernel)
{
    char dir[] = "/tmp/pbx-broker-XXXXXX";
    PBX_REQUIRE(mkdtemp(dir) != NULL);
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/scope", dir);
    PBX_REQUIRE(mkdir(p, 0700) == 0);
    (void)snprintf(p, sizeof(p), "%s/mnt", dir);
    PBX_REQUIRE(mkdir(p, 0700) == 0);
    tl_file(dir, "scope/a.txt", "plain bytes");
    tl_file(dir, "scope/b.txt", "b");
    tl_file(dir, "scope/c.txt", "c");
    tl_file(dir, "secret", "secret");
    tl_file(dir, "mnt/obj", "OBJECT!");
    (void)snprintf(p, sizeof(p), "%s/scope/out", dir);
    PBX_REQUIRE(symlink("/etc/passwd", p) == 0);
    int sv[2];
    int pp[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == 0);
    PBX_REQUIRE(pipe(pp) == 0);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        tl_child(dir, sv[1], pp[1]);
    }
    (void)close(sv[1]);
    (void)close(pp[1]);
    int lfd = tp_recv_fd(sv[0]);
    PBX_REQUIRE(lfd >= 0);
    static pbx_broker b;
    static char sreal[PBX_BROKER_PATH_MAX];
    static char rreal[PBX_BROKER_PATH_MAX];
    static char mnt[PBX_BROKER_PATH_MAX];
    (void)snprintf(p, sizeof(p), "%s/scope", dir);
    PBX_REQUIRE(pbx_broker_init(&b, lfd, p, dir, sreal, rreal, 3U, 3600000U) ==
                0);
    (void)snprintf(mnt, sizeof(mnt), "%.300s/mnt", rreal);
    b.pl.mount = mnt;
    static tl_seen seen;
    char obj[600];
    (void)snprintf(obj, sizeof(obj), "%.400s/obj", mnt);
    seen.obj = obj;
    b.ask = tl_ask;
    b.ask_ctx = &seen;
    /* Bounded: the child makes TL_N opens and a few of its own. */
    for (uint32_t i = 0; i < 1000U && pbx_broker_serve_one(&b) == 0; i++) {
    }
    int r[TL_N];
    PBX_REQUIRE(read(pp[0], r, sizeof(r)) == (ssize_t)sizeof(r));
    int ws = 0;
    (void)waitpid(pid, &ws, 0);
    PBX_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    PBX_CHECK_EQ(r[TL_SYSTEM], 0);
    PBX_CHECK_EQ(r[TL_GRANT], 0);
    PBX_CHECK_EQ(r[TL_GRANT_BYTES], 0);
    PBX_CHECK_EQ(r[TL_LINK_OUT], EACCES);
    PBX_CHECK_EQ(r[TL_DIR], EACCES);
    PBX_CHECK_EQ(r[TL_DOTDOT], EACCES);
    PBX_CHECK_EQ(r[TL_OUTSIDE], EACCES);
    PBX_CHECK_EQ(r[TL_O_PATH], EACCES);
    PBX_CHECK_EQ(r[TL_MISSING], ENOENT);
    PBX_CHECK_EQ(r[TL_TRUNC_DENIED], EACCES);
    PBX_CHECK_EQ(r[TL_REOPEN], EACCES);
    PBX_CHECK_EQ(r[TL_IN_ROOT], EXDEV);
    PBX_CHECK_EQ(r[TL_RATE_LAST], 0);
    PBX_CHECK_EQ(r[TL_RATE_OVER], EACCES);
    PBX_CHECK_EQ(r[TL_OWN_PROC], 0);
    PBX_CHECK_EQ(r[TL_OWN_TASK], 0);
    PBX_CHECK_EQ(r[TL_OTHER_PROC], EACCES);
    /* Asked exactly three times (the burst): a.txt read, a.txt as a
     * write (O_TRUNC), b.txt; each naming the resolved object. */
    PBX_CHECK_EQ(seen.asks, 3U);
    PBX_CHECK_EQ(seen.ops[0], PBX_PEER_BROKER_OP_READ);
    PBX_CHECK(strcmp(seen.sel[0], "scope/a.txt") == 0);
    (void)snprintf(p, sizeof(p), "%.400s/scope/a.txt", rreal);
    PBX_CHECK(strcmp(seen.path[0], p) == 0);
    PBX_CHECK_EQ(seen.ops[1], PBX_PEER_BROKER_OP_WRITE);
    PBX_CHECK(strcmp(seen.sel[1], "scope/a.txt") == 0);
    PBX_CHECK(strcmp(seen.sel[2], "scope/b.txt") == 0);
    PBX_CHECK_EQ(b.injected, 2U);
    pbx_broker_release(&b);
    (void)close(sv[0]);
    (void)close(pp[0]);
    const char *rm[] = {"scope/a.txt", "scope/b.txt", "scope/c.txt",
                        "scope/out",   "secret",      "mnt/obj"};
    for (size_t i = 0; i < sizeof(rm) / sizeof(rm[0]); i++) {
        (void)snprintf(p, sizeof(p), "%s/%s", dir, rm[i]);
        (void)unlink(p);
    }
    (void)snprintf(p, sizeof(p), "%s/scope", dir);
    (void)rmdir(p);
    (void)snprintf(p, sizeof(p), "%s/mnt", dir);
    (void)rmdir(p);
    (void)rmdir(dir);
}

/* A path the program chose reaches the broker's lines (its stderr is the
 * job's, often the user's terminal, which the pty relay does not hold):
 * every control byte and every byte from 0x7f up is written as \xHH, so
 * no escape sequence can draw over a prompt; the final newline stays. */
PBX_TEST(peers_broker_lines_escape_what_the_program_chose)
{
    char path[] = "/tmp/pbx-broker-say.XXXXXX";
    int fd = mkstemp(path);
    PBX_REQUIRE(fd >= 0);
    (void)fflush(stderr);
    int saved = dup(STDERR_FILENO);
    PBX_REQUIRE(saved >= 0 && dup2(fd, STDERR_FILENO) == STDERR_FILENO);
    pbx_broker_say("pbx-broker: %s: refused\n",
                   "/x\x1b[2J\x1b[HApprove? [y/n]\r\x07\x7f\xc3\xa9");
    (void)fflush(stderr);
    PBX_REQUIRE(dup2(saved, STDERR_FILENO) == STDERR_FILENO);
    (void)close(saved);
    char got[512];
    ssize_t n = pread(fd, got, sizeof(got) - 1U, 0);
    (void)close(fd);
    (void)unlink(path);
    PBX_REQUIRE(n > 0);
    got[n] = '\0';
    PBX_CHECK_EQ(strcmp(got, "pbx-broker: /x\\x1b[2J\\x1b[HApprove? [y/n]"
                             "\\x0d\\x07\\x7f\\xc3\\xa9: refused\n"),
                 0);
}
