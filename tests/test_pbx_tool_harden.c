/*
 * test_pbx_tool_harden.c: the pbx tool's defences against the user's other
 * processes and other users (docs/SECURITY.md):
 *  - `pbx up` refuses a runtime directory that is not its own private
 *    directory (group or other access, a symbolic link, a parent others
 *    may write without the sticky bit) and makes a missing one 0700;
 *  - pbx is not dumpable, so a process of the same user cannot take the
 *    control connection `pbx run` holds to launchd (pidfd_getfd).
 *
 * The tests run the real pbx binary (PBX_BIN, else "pbx" beside this test
 * binary, as test_pbx_tool.c finds it).
 */
#define _GNU_SOURCE
#include "runner/pbx_test.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* The user that runs pbx and the attacker in the dumpable test when the
 * test runs as root (root may ptrace anything whatever pbx does). */
#define T_NOBODY 65534U

/* Finds the pbx binary into path. */
static void t_bin(char *path, size_t cap)
{
    const char *env = getenv("PBX_BIN");
    int n = 0;
    if (env != NULL && env[0] != '\0') {
        n = snprintf(path, cap, "%s", env);
    } else {
        char self[PATH_MAX];
        ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1U);
        PBX_REQUIRE(len > 0);
        self[len] = '\0';
        char *slash = strrchr(self, '/');
        PBX_REQUIRE(slash != NULL);
        if (slash != NULL) {
            *slash = '\0';
        }
        n = snprintf(path, cap, "%s/pbx", self);
    }
    PBX_REQUIRE(n > 0 && (size_t)n < cap && access(path, X_OK) == 0);
}

/* Makes a fresh private directory. */
static void t_tmp(char *dir, size_t cap)
{
    const char *base = getenv("TMPDIR");
    int n = snprintf(dir, cap, "%s/pbx-harden.XXXXXX",
                     base != NULL && base[0] != '\0' ? base : "/tmp");
    PBX_REQUIRE(n > 0 && (size_t)n < cap && mkdtemp(dir) != NULL);
}

/* Runs `pbx up --dir dir --bin /nonexistent` (a stack that cannot start,
 * so pbx up ends right after its directory checks and lock) with stderr in
 * err; returns its exit status (-1 when killed). */
static int t_up(const char *tmp, const char *dir, char *err, size_t cap)
{
    char bin[PATH_MAX];
    char errp[PATH_MAX];
    t_bin(bin, sizeof(bin));
    PBX_REQUIRE(snprintf(errp, sizeof(errp), "%s/stderr", tmp) > 0);
    fflush(NULL);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int in = open("/dev/null", O_RDWR);
        if (fd < 0 || in < 0 || dup2(fd, 2) < 0 || dup2(in, 0) < 0 ||
            dup2(in, 1) < 0) {
            _exit(126);
        }
        execl(bin, bin, "up", "--dir", dir, "--bin", "/nonexistent",
              (char *)NULL);
        _exit(127);
    }
    int ws = 0;
    PBX_REQUIRE(waitpid(pid, &ws, 0) == pid);
    int fd = open(errp, O_RDONLY);
    PBX_REQUIRE(fd >= 0);
    ssize_t n = read(fd, err, cap - 1U);
    (void)close(fd);
    err[n > 0 ? (size_t)n : 0U] = '\0';
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

/* Checks a refusal: exit 1 and exactly one line naming dir and why. */
static void t_refused(const char *tmp, const char *dir, const char *why)
{
    char err[2048];
    PBX_CHECK_EQ(t_up(tmp, dir, err, sizeof(err)), 1);
    char *nl = strchr(err, '\n');
    PBX_CHECK(nl != NULL && nl[1] == '\0');
    PBX_CHECK(strstr(err, dir) != NULL);
    PBX_CHECK(strstr(err, why) != NULL);
    if (strstr(err, why) == NULL) {
        pbx_test_failf(__FILE__, __LINE__, "stderr: %s", err);
    }
}

PBX_TEST(pbx_up_dir_refuses_open_mode)
{
    char tmp[PATH_MAX];
    char dir[PATH_MAX + 16];
    t_tmp(tmp, sizeof(tmp));
    PBX_REQUIRE(snprintf(dir, sizeof(dir), "%s/open", tmp) > 0);
    PBX_REQUIRE(mkdir(dir, 0700) == 0 && chmod(dir, 0755) == 0);
    t_refused(tmp, dir, "group or others have access");
    /* Nothing was made in the refused directory. */
    char lock[PATH_MAX + 32];
    PBX_REQUIRE(snprintf(lock, sizeof(lock), "%s/lock", dir) > 0);
    PBX_CHECK(access(lock, F_OK) != 0);
}

PBX_TEST(pbx_up_dir_refuses_symlink)
{
    char tmp[PATH_MAX];
    char real[PATH_MAX + 16];
    char link[PATH_MAX + 16];
    t_tmp(tmp, sizeof(tmp));
    PBX_REQUIRE(snprintf(real, sizeof(real), "%s/real", tmp) > 0);
    PBX_REQUIRE(snprintf(link, sizeof(link), "%s/link", tmp) > 0);
    /* The link's target is private and ours: only the link is wrong. */
    PBX_REQUIRE(mkdir(real, 0700) == 0 && symlink(real, link) == 0);
    t_refused(tmp, link, "symbolic link");
}

PBX_TEST(pbx_up_dir_refuses_open_parent)
{
    char tmp[PATH_MAX];
    char pub[PATH_MAX + 16];
    char dir[PATH_MAX + 32];
    t_tmp(tmp, sizeof(tmp));
    PBX_REQUIRE(snprintf(pub, sizeof(pub), "%s/pub", tmp) > 0);
    PBX_REQUIRE(snprintf(dir, sizeof(dir), "%s/stack", pub) > 0);
    PBX_REQUIRE(mkdir(pub, 0700) == 0 && chmod(pub, 0777) == 0);
    t_refused(tmp, dir, "parent is writable by others");
    PBX_CHECK(access(dir, F_OK) != 0);
}

PBX_TEST(pbx_up_dir_fresh_is_private_under_sticky_parent)
{
    char tmp[PATH_MAX];
    char pub[PATH_MAX + 16];
    char dir[PATH_MAX + 32];
    t_tmp(tmp, sizeof(tmp));
    /* A parent like /tmp: writable by all but sticky. */
    PBX_REQUIRE(snprintf(pub, sizeof(pub), "%s/sticky", tmp) > 0);
    PBX_REQUIRE(snprintf(dir, sizeof(dir), "%s/stack", pub) > 0);
    PBX_REQUIRE(mkdir(pub, 0700) == 0 && chmod(pub, 01777) == 0);
    mode_t old = umask(0);
    char err[2048];
    (void)t_up(tmp, dir, err, sizeof(err));
    (void)umask(old);
    struct stat st;
    PBX_REQUIRE(lstat(dir, &st) == 0);
    PBX_CHECK(S_ISDIR(st.st_mode));
    PBX_CHECK_EQ(st.st_mode & 07777U, 0700U);
    PBX_CHECK_EQ(st.st_uid, geteuid());
    /* pbx up went past its checks: it took DIR/lock. */
    PBX_CHECK(strstr(err, "refused") == NULL);
    char lock[PATH_MAX + 48];
    PBX_REQUIRE(snprintf(lock, sizeof(lock), "%s/lock", dir) > 0);
    PBX_CHECK(access(lock, F_OK) == 0);
}

/* Becomes user uid (all ids, no supplementary groups) in a child; exits
 * the child on failure. A root test drops to uid so that neither pbx nor
 * the attacker keeps CAP_SYS_PTRACE. */
static void t_become(uid_t uid)
{
    if (getuid() == 0U && uid != 0U &&
        (setgroups(0, NULL) != 0 || setresgid(uid, uid, uid) != 0 ||
         setresuid(uid, uid, uid) != 0)) {
        _exit(125);
    }
}

/* The attacker: as uid, tries to take each of pbx's first 64 descriptors
 * with pidfd_getfd. Exits 0 when every try was refused with EPERM, 1 when
 * one descriptor was taken, 2 when pbx was gone (an inconclusive run) and
 * 3 on any other failure. */
static void t_attack(pid_t target, uid_t uid)
{
    t_become(uid);
    int pidfd = (int)syscall(SYS_pidfd_open, target, 0);
    if (pidfd < 0) {
        _exit(errno == ESRCH ? 2 : 3);
    }
    int code = 0;
    for (int fd = 0; fd < 64 && code == 0; fd++) {
        long got = syscall(SYS_pidfd_getfd, pidfd, fd, 0);
        if (got >= 0) {
            code = 1;
        } else if (errno == ESRCH) {
            code = 2;
        } else if (errno != EPERM) {
            /* EBADF: no such descriptor in a dumpable pbx; keep looking. */
            code = errno == EBADF ? 0 : 3;
        }
    }
    _exit(code);
}

/* Listens on a SOCK_SEQPACKET socket at path (the fake launchd). */
static int t_listen(const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    PBX_REQUIRE(strlen(path) < sizeof(sa.sun_path));
    memcpy(sa.sun_path, path, strlen(path) + 1U);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    PBX_REQUIRE(fd >= 0);
    PBX_REQUIRE(bind(fd, (const struct sockaddr *)&sa, sizeof(sa)) == 0);
    PBX_REQUIRE(chmod(path, 0777) == 0 && listen(fd, 4) == 0);
    return fd;
}

PBX_TEST(pbx_run_control_connection_not_takeable)
{
    uid_t uid = getuid() == 0U ? (uid_t)T_NOBODY : getuid();
    char tmp[PATH_MAX];
    char sock[PATH_MAX + 16];
    char bin[PATH_MAX];
    t_bin(bin, sizeof(bin));
    t_tmp(tmp, sizeof(tmp));
    PBX_REQUIRE(chmod(tmp, 0711) == 0);
    PBX_REQUIRE(snprintf(sock, sizeof(sock), "%s/ctl.sock", tmp) > 0);
    int lfd = t_listen(sock);
    fflush(NULL);
    pid_t pbx = fork();
    PBX_REQUIRE(pbx >= 0);
    if (pbx == 0) {
        t_become(uid);
        int in = open("/dev/null", O_RDWR);
        if (in < 0 || dup2(in, 0) < 0 || dup2(in, 1) < 0 || dup2(in, 2) < 0) {
            _exit(126);
        }
        execl(bin, bin, "--dir", tmp, "run", "--control", sock, "--",
              "/bin/true", (char *)NULL);
        _exit(127);
    }
    /* pbx holds its control connection once it is accepted: the
     * observable event, waited for with a generous bound. */
    struct pollfd p = {.fd = lfd, .events = POLLIN, .revents = 0};
    PBX_CHECK_EQ(poll(&p, 1, 30000), 1);
    int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    PBX_CHECK(cfd >= 0);
    pid_t att = fork();
    PBX_REQUIRE(att >= 0);
    if (att == 0) {
        t_attack(pbx, uid);
    }
    int ws = 0;
    PBX_REQUIRE(waitpid(att, &ws, 0) == att);
    PBX_CHECK(WIFEXITED(ws));
    PBX_CHECK_EQ(WEXITSTATUS(ws), 0);
    (void)kill(pbx, SIGKILL);
    PBX_REQUIRE(waitpid(pbx, &ws, 0) == pbx);
    if (cfd >= 0) {
        (void)close(cfd);
    }
    (void)close(lfd);
    (void)unlink(sock);
}
