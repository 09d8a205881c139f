/*
 * probe.c: pbx-sandbox-probe, a statically linked program the launchd
 * tests start under --sandbox to see from inside what the sandbox allows.
 * Each argument is one probe; each prints one line on stdout:
 *
 *   nnp              "nnp=1" when no-new-privileges is set
 *   open:PATH        "open PATH: ok" or "open PATH: errno N"
 *   kill:PID         kill(PID, 0): "kill PID: ok" or "kill PID: errno N"
 *   abstract:NAME    connect to the abstract unix socket NAME (stream):
 *                    "abstract NAME: ok" or "abstract NAME: errno N"
 *   caps             "caps eff=E prm=P bnd=B", each "0" when that set of
 *                    /proc/self/status is empty, else "set" ("?" unread)
 *   exec:PATH        execv(PATH) of the file itself; prints only when the
 *                    exec failed: "exec PATH: errno N"
 *   tty, line, rows:N, spam:N  the terminal probes (see probe_tty)
 *
 * As a wrapper, `pbx-sandbox-probe --no-landlock ERRNO -- PROG [ARG...]`
 * installs a seccomp filter under which landlock_create_ruleset fails with
 * ERRNO (ENOSYS: a kernel built without Landlock; EOPNOTSUPP: one that
 * has it disabled) and executes PROG: the tests run launchd so, to see
 * that a kernel without Landlock refuses a sandboxed LAUNCH. The filter
 * lives in this test program only; launchd has no such hook.
 * `pbx-sandbox-probe --no-seccomp ERRNO -- PROG [ARG...]` does the same
 * for seccomp itself: the seccomp() call and prctl(PR_SET_SECCOMP) fail
 * with ERRNO (ENOSYS: a kernel without seccomp; EINVAL: one without filter
 * mode), so the tests see launchd refuse a sandbox it cannot wall in.
 * `--no-seccomp-install ERRNO` fails only seccomp(SECCOMP_SET_MODE_FILTER)
 * (launchd's check before the fork passes; the install in the job's child
 * fails), so the tests see the child stop without running the program.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* Prints "what arg: ok" for r == 0, else "what arg: errno N". */
static void probe_say(const char *what, const char *arg, int r)
{
    if (r == 0) {
        (void)printf("%s %s: ok\n", what, arg);
    } else {
        (void)printf("%s %s: errno %d\n", what, arg, errno);
    }
}

/* Connects a stream socket to the abstract name; 0 or -1 (errno). */
static int probe_abstract(const char *name)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(name);
    if (n + 1U >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(sa.sun_path + 1, name, n);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0) {
        return -1;
    }
    socklen_t len =
        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1U + n);
    int r = connect(fd, (const struct sockaddr *)&sa, len);
    int e = errno;
    (void)close(fd);
    errno = e;
    return r;
}

/* The terminal probes (launchd's pty relay): "tty": whether 0, 1 and 2
 * are terminals, whether the process leads its session and whether
 * stdin is its controlling terminal (TIOCGSID names its session), and
 * whether stdin is the terminal named by $PBX_PROBE_OUTER ("outer=1":
 * the user's own, not a relay); "line": one line read from stdin,
 * printed as "line: TEXT"; "rows:N": waits (at most 5 s) until the
 * terminal has N rows, then prints "rows N: got M"; "spam:N": N bytes of
 * 'x' written, then "spam done". */
static bool probe_tty(const char *w)
{
    if (strcmp(w, "tty") == 0) {
        pid_t sid = 0;
        bool ctty = ioctl(0, TIOCGSID, &sid) == 0 && sid == getsid(0);
        const char *outer = getenv("PBX_PROBE_OUTER");
        const char *name = ttyname(0);
        (void)printf("tty 0=%d 1=%d 2=%d leader=%d ctty=%d outer=%d\n",
                     isatty(0), isatty(1), isatty(2), getsid(0) == getpid(),
                     ctty,
                     outer != NULL && name != NULL && strcmp(outer, name) == 0);
    } else if (strcmp(w, "line") == 0) {
        char line[128];
        (void)fflush(stdout);
        if (fgets(line, sizeof(line), stdin) != NULL) {
            line[strcspn(line, "\r\n")] = '\0';
            (void)printf("line: %s\n", line);
        }
    } else if (strncmp(w, "rows:", 5) == 0) {
        /* Waits (at most 5 s) for the terminal to have N rows. */
        long want = strtol(w + 5, NULL, 10);
        struct winsize ws;
        memset(&ws, 0, sizeof(ws));
        for (int i = 0; i < 500; i++) {
            if (ioctl(0, TIOCGWINSZ, &ws) == 0 && ws.ws_row == want) {
                break;
            }
            struct timespec ts = {0, 10L * 1000L * 1000L};
            (void)nanosleep(&ts, NULL);
        }
        (void)printf("rows %ld: got %u\n", want, (unsigned)ws.ws_row);
    } else if (strncmp(w, "spam:", 5) == 0) {
        long n = strtol(w + 5, NULL, 10);
        for (long i = 0; i < n && i < (1L << 24); i++) {
            (void)putchar('x');
        }
        (void)printf("\nspam done\n");
    } else {
        return false;
    }
    (void)fflush(stdout);
    return true;
}

/* Whether the capability set named key ("CapEff:") of /proc/self/status
 * is empty: "0", "set", or "?" when it could not be read. */
static const char *probe_capset(const char *status, const char *key)
{
    const char *at = strstr(status, key);
    if (at == NULL) {
        return "?";
    }
    unsigned long long v = strtoull(at + strlen(key), NULL, 16);
    return v == 0ULL ? "0" : "set";
}

/* Prints which capability sets the process holds. */
static void probe_caps(void)
{
    static char status[8192];
    status[0] = '\0';
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, status, sizeof(status) - 1U);
        status[n > 0 ? n : 0] = '\0';
        (void)close(fd);
    }
    (void)printf("caps eff=%s prm=%s bnd=%s\n", probe_capset(status, "CapEff:"),
                 probe_capset(status, "CapPrm:"),
                 probe_capset(status, "CapBnd:"));
}

/* Runs one probe word. */
static void probe_one(const char *w)
{
    if (probe_tty(w)) {
        return;
    }
    if (strcmp(w, "caps") == 0) {
        probe_caps();
    } else if (strcmp(w, "nnp") == 0) {
        (void)printf("nnp=%d\n", prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0));
    } else if (strncmp(w, "open:", 5) == 0) {
        int fd = open(w + 5, O_RDONLY | O_CLOEXEC);
        probe_say("open", w + 5, fd >= 0 ? 0 : -1);
        if (fd >= 0) {
            (void)close(fd);
        }
    } else if (strncmp(w, "kill:", 5) == 0) {
        probe_say("kill", w + 5, kill((pid_t)strtol(w + 5, NULL, 10), 0));
    } else if (strncmp(w, "abstract:", 9) == 0) {
        probe_say("abstract", w + 9, probe_abstract(w + 9));
    } else if (strncmp(w, "exec:", 5) == 0) {
        char *const argv[] = {(char *)(w + 5), NULL};
        (void)fflush(stdout);
        (void)execv(w + 5, argv);
        probe_say("exec", w + 5, -1);
    } else {
        (void)printf("unknown probe %s\n", w);
    }
}

/* Makes landlock_create_ruleset fail with err in this process and every
 * program it executes; false when the filter could not be installed. */
static bool probe_no_landlock(int err)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_landlock_create_ruleset, 0, 1),
        BPF_STMT(BPF_RET | BPF_K,
                 SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

/* Makes seccomp() and prctl(PR_SET_SECCOMP) fail with err in this
 * process and every program it executes (only seccomp() installing a
 * filter when install_only); false when the filter could not be
 * installed. */
static bool probe_no_seccomp(int err, bool install_only)
{
    const unsigned ret_err =
        SECCOMP_RET_ERRNO | ((unsigned)err & SECCOMP_RET_DATA);
    /* seccomp(): any operation fails (install_only: only installing a
     * filter); prctl(PR_SET_SECCOMP) fails; everything else is allowed. */
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_seccomp, 0, 2),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SECCOMP_SET_MODE_FILTER, 3,
                 install_only ? 4 : 3),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_prctl, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args[0])),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PR_SET_SECCOMP, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, ret_err),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
           prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == 0;
}

int main(int argc, char **argv)
{
    bool no_ll = argc >= 5 && strcmp(argv[1], "--no-landlock") == 0;
    bool no_sc = argc >= 5 && strcmp(argv[1], "--no-seccomp") == 0;
    bool no_in = argc >= 5 && strcmp(argv[1], "--no-seccomp-install") == 0;
    if ((no_ll || no_sc || no_in) && strcmp(argv[3], "--") == 0) {
        int err = (int)strtol(argv[2], NULL, 10);
        if (no_ll ? !probe_no_landlock(err) : !probe_no_seccomp(err, no_in)) {
            perror("pbx-sandbox-probe: seccomp");
            return 1;
        }
        (void)execv(argv[4], argv + 4);
        perror("pbx-sandbox-probe: exec");
        return 127;
    }
    for (int i = 1; i < argc; i++) {
        probe_one(argv[i]);
    }
    return 0;
}
