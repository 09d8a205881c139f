/*
 * walls.c: pbx-test-walls, the hostile-and-honest program of the e2e
 * scenario sandbox-walls (docs/HOST.md, "Sandboxed programs", "The
 * walls"). Statically linked, so `pbx run --sandbox` runs it.
 *
 *   pbx-test-walls [--sock PATH ...] [--sibling PID] [--tcp PORT]
 *                  [--abstract NAME] [--exec PATH] [--no-honest] SELECTOR
 *
 * It tries, one after the other, what a sandboxed program must not do:
 * create a socket of every family, a socket pair, connect its standard
 * input and its job connection to each PATH (the stack's sockets), to TCP
 * PORT on localhost and to the abstract unix socket NAME, trace the
 * process PID, read its memory, open its /proc files or signal it (and
 * signal every process), forge SCM_CREDENTIALS naming its parent's pid on
 * the job connection, keep a capability (CapEff, CapPrm and, run by root,
 * CapBnd of /proc/self/status), execute PATH, set up io_uring, enter new
 * namespaces, and more. Each attempt prints one line:
 *
 *   wall WHAT: refused errno N NAME     (the kernel said no; for "a
 *                                       descriptor above 4", EBADF:
 *                                       none is open; for a capability
 *                                       set, EPERM: the set is empty)
 *   wall WHAT: ALLOWED                  (it went through)
 *
 * Then, unless --no-honest, it asks for a one-shot READ of SELECTOR on
 * its job connection, as pbx-demo does, and prints
 * "honest: approved, N bytes: TEXT" (the bytes read through the object,
 * newlines as "|") or "honest: failed: WHY". Exit 0 when every wall
 * refused and the honest request was approved and read, 1 when a wall let
 * it through, 2 when the honest request failed, 3 on a bad command line.
 *
 * Run unsandboxed (the scenario's control), every attempt must reach the
 * kernel: a connect of an inherited socket that is already connected, or
 * of another family or type than the address's, is retried on a fresh
 * socket of the address's family; the mount names a directory that does
 * not exist (a mount that went through would change the host's mounts);
 * the new user namespace is entered in a child; the ptrace is a SEIZE
 * (the sibling never stops); every signal is signal 0.
 */
#define _GNU_SOURCE
#include "peers/app/pbx_app.h"
#include "peers/app/pbx_obj.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* The most --sock options. */
#define WALLS_SOCKS_MAX 16U
/* The most bytes of the honest file read and printed. */
#define WALLS_BYTES_MAX 4096U
/* How long the honest request waits for its decision. */
#define WALLS_WAIT_MS 60000U
/* Descriptors checked for being closed (the job keeps 0..4). */
#define WALLS_FDS_MAX 1024
/* Raw x86_64 call numbers the libc may not name. */
#define WALLS_NR_IO_URING_SETUP 425
#define WALLS_NR_PIDFD_OPEN     434
#define WALLS_NR_CLONE3         435
#define WALLS_X32_BIT           0x40000000L

/* The command line. */
typedef struct walls_opts {
    const char *socks[WALLS_SOCKS_MAX];
    size_t nsocks;
    long sibling;
    long tcp;
    const char *abstract;
    const char *exec;
    bool honest;
    const char *selector;
} walls_opts;

/* How many attempts went through. */
static unsigned g_allowed;

/* The name of the errno values a wall answers with. */
static const char *walls_errname(int e)
{
    switch (e) {
    case EPERM:
        return "EPERM";
    case EACCES:
        return "EACCES";
    case ENOSYS:
        return "ENOSYS";
    case EBADF:
        return "EBADF";
    default:
        return "other";
    }
}

/* Prints what attempt what gave: r < 0 is a refusal with errno e. */
static void walls_say(const char *what, long r, int e)
{
    if (r < 0) {
        (void)printf("wall %s: refused errno %d %s\n", what, e,
                     walls_errname(e));
    } else {
        g_allowed++;
        (void)printf("wall %s: ALLOWED\n", what);
    }
    (void)fflush(stdout);
}

/* Tries socket(family, type, proto) and closes what it got. */
static void walls_socket(const char *what, int family, int type, int proto)
{
    int fd = socket(family, type | SOCK_CLOEXEC, proto);
    walls_say(what, fd, errno);
    if (fd >= 0) {
        (void)close(fd);
    }
}

/* Every socket family a program could reach anything through. */
static void walls_sockets(void)
{
    walls_socket("socket AF_UNIX stream", AF_UNIX, SOCK_STREAM, 0);
    walls_socket("socket AF_UNIX dgram", AF_UNIX, SOCK_DGRAM, 0);
    walls_socket("socket AF_UNIX seqpacket", AF_UNIX, SOCK_SEQPACKET, 0);
    walls_socket("socket AF_INET stream", AF_INET, SOCK_STREAM, 0);
    walls_socket("socket AF_INET dgram", AF_INET, SOCK_DGRAM, 0);
    walls_socket("socket AF_INET icmp", AF_INET, SOCK_DGRAM, IPPROTO_ICMP);
    walls_socket("socket AF_INET6 stream", AF_INET6, SOCK_STREAM, 0);
    walls_socket("socket AF_INET6 dgram", AF_INET6, SOCK_DGRAM, 0);
    walls_socket("socket AF_NETLINK route", AF_NETLINK, SOCK_RAW,
                 NETLINK_ROUTE);
    walls_socket("socket AF_PACKET raw", AF_PACKET, SOCK_RAW, 0);
    walls_socket("socket AF_VSOCK stream", AF_VSOCK, SOCK_STREAM, 0);
    walls_socket("socket AF_ALG seqpacket", AF_ALG, SOCK_SEQPACKET, 0);
    int sv[2];
    int r = socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
    walls_say("socketpair AF_UNIX stream", r, errno);
    if (r == 0) {
        (void)close(sv[0]);
        (void)close(sv[1]);
    }
}

/* Connects a fresh socket of sa's family to sa (unix: each type until
 * one is not the wrong type); 0 or -1 with errno. Reached only when the
 * inherited descriptor's connect got past the walls (unsandboxed). */
static int walls_connect_fresh(const void *sa, socklen_t len)
{
    static const int types[] = {SOCK_SEQPACKET, SOCK_STREAM, SOCK_DGRAM};
    int family = ((const struct sockaddr *)sa)->sa_family;
    int r = -1;
    for (size_t i = 0; i < 3U; i++) {
        int fd = socket(family, types[i] | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            continue;
        }
        r = connect(fd, (const struct sockaddr *)sa, len);
        int e = errno;
        (void)close(fd);
        errno = e;
        /* An abstract name is looked up with the socket's type: the
         * wrong type finds nothing (ECONNREFUSED). */
        if (r == 0 || (e != EPROTOTYPE && e != ESOCKTNOSUPPORT &&
                       e != EPROTONOSUPPORT && e != ECONNREFUSED)) {
            break;
        }
    }
    return r;
}

/* Tries connect() of the given descriptor fd (named who) to sa. When the
 * kernel refuses it for the socket's own state (already connected, or
 * another family or type), only a fresh socket could tell whether the
 * address is reachable: that connect's answer is reported. */
static void walls_connect(const char *who, int fd, const char *to,
                          const void *sa, socklen_t len)
{
    char what[600];
    (void)snprintf(what, sizeof(what), "connect %s to %s", who, to);
    int r = connect(fd, (const struct sockaddr *)sa, len);
    int e = errno;
    if (r != 0 && (e == EISCONN || e == EINVAL || e == EAFNOSUPPORT ||
                   e == EPROTOTYPE || e == ECONNREFUSED)) {
        r = walls_connect_fresh(sa, len);
        e = errno;
    }
    walls_say(what, r, e);
}

/* Connects the given descriptors (stdin and the job connection) to the
 * socket at path, to TCP port on localhost and to the abstract name. */
static void walls_connects(const walls_opts *o)
{
    static const int fds[] = {0, 3};
    static const char *const who[] = {"stdin", "job connection"};
    for (size_t k = 0; k < 2U; k++) {
        for (size_t i = 0; i < o->nsocks; i++) {
            struct sockaddr_un sa;
            memset(&sa, 0, sizeof(sa));
            sa.sun_family = AF_UNIX;
            (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", o->socks[i]);
            walls_connect(who[k], fds[k], o->socks[i], &sa, sizeof(sa));
        }
        if (o->tcp > 0) {
            struct sockaddr_in in;
            memset(&in, 0, sizeof(in));
            in.sin_family = AF_INET;
            in.sin_port = htons((uint16_t)o->tcp);
            in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            walls_connect(who[k], fds[k], "tcp 127.0.0.1", &in, sizeof(in));
        }
        if (o->abstract != NULL) {
            struct sockaddr_un sa;
            memset(&sa, 0, sizeof(sa));
            sa.sun_family = AF_UNIX;
            size_t n = strnlen(o->abstract, sizeof(sa.sun_path) - 2U);
            memcpy(sa.sun_path + 1, o->abstract, n);
            walls_connect(
                who[k], fds[k], "an abstract socket", &sa,
                (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1U + n));
        }
    }
}

/* The start of pid's first mapping (from /proc/PID/maps), so that a read
 * of its memory that gets through succeeds; 0x400000 when unreadable. */
static unsigned long walls_mapped(long pid)
{
    char path[64];
    char line[128];
    (void)snprintf(path, sizeof(path), "/proc/%ld/maps", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, line, sizeof(line) - 1U) : -1;
    if (fd >= 0) {
        (void)close(fd);
    }
    if (n <= 0) {
        return 0x400000UL;
    }
    line[n] = '\0';
    return strtoul(line, NULL, 16);
}

/* Signals (signal 0: nothing is delivered) the sibling pid, its thread
 * pid, and every process (-1). */
static void walls_signals(long pid)
{
    long r = kill((pid_t)pid, 0);
    walls_say("kill sibling", r, errno);
    r = syscall(SYS_tgkill, pid, pid, 0L);
    walls_say("tgkill sibling", r, errno);
    r = kill(-1, 0);
    walls_say("kill -1", r, errno);
}

/* Tries to reach the sibling process pid: trace it, read its memory,
 * open its /proc files, take a pidfd of it, lower its limits. */
static void walls_sibling(long pid)
{
    char what[128];
    /* A seize does not stop the sibling; the exit of this program ends
     * the tracing. */
    long r = syscall(SYS_ptrace, 0x4206L /* PTRACE_SEIZE */, pid, 0L, 0L);
    walls_say("ptrace PTRACE_SEIZE sibling", r, errno);
    char buf[16];
    struct iovec local = {buf, sizeof(buf)};
    /* An address in the sibling, not in this process. */
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    struct iovec remote = {(void *)walls_mapped(pid), sizeof(buf)};
    r = (long)process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
    walls_say("process_vm_readv sibling", r, errno);
    static const char *const files[] = {"environ", "status", "cmdline", "maps"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[64];
        (void)snprintf(path, sizeof(path), "/proc/%ld/%s", pid, files[i]);
        (void)snprintf(what, sizeof(what), "open %s", path);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        walls_say(what, fd, errno);
        if (fd >= 0) {
            (void)close(fd);
        }
    }
    r = syscall(WALLS_NR_PIDFD_OPEN, pid, 0L);
    walls_say("pidfd_open sibling", r, errno);
    if (r >= 0) {
        (void)close((int)r);
    }
    /* The limit's current and maximum values, read only. */
    uint64_t lim[2] = {0U, 0U};
    r = syscall(SYS_prlimit64, pid, 7L /* RLIMIT_NOFILE */, NULL, lim);
    walls_say("prlimit64 sibling", r, errno);
    walls_signals(pid);
}

/* Sends one byte on the job connection (descriptor 3) with
 * SCM_CREDENTIALS naming its parent's pid: only a process holding
 * CAP_SYS_ADMIN may name another pid than its own (vfsd trusts
 * powerboxd's). */
static void walls_forge(void)
{
    struct ucred cred = {getppid(), getuid(), getgid()};
    union {
        struct cmsghdr h;
        uint8_t b[CMSG_SPACE(sizeof(struct ucred))];
    } ctl;
    memset(&ctl, 0, sizeof(ctl));
    char byte = 0;
    struct iovec io = {&byte, 1U};
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = &io;
    m.msg_iovlen = 1U;
    m.msg_control = ctl.b;
    m.msg_controllen = sizeof(ctl.b);
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_CREDENTIALS;
    c->cmsg_len = CMSG_LEN(sizeof(struct ucred));
    memcpy(CMSG_DATA(c), &cred, sizeof(cred));
    long r = sendmsg(3, &m, MSG_NOSIGNAL);
    walls_say("sendmsg SCM_CREDENTIALS naming the parent", r, errno);
}

/* Whether the capability set key ("CapEff:") of /proc/self/status is
 * empty: a wall refused (EPERM) when it is, let through when not or when
 * the status cannot be read. */
static void walls_capset(const char *status, const char *key, const char *what)
{
    const char *at = strstr(status, key);
    bool empty = at != NULL && strtoull(at + strlen(key), NULL, 16) == 0ULL;
    walls_say(what, empty ? -1 : 0, EPERM);
}

/* The capabilities it holds: none (the bounding set too when root runs
 * it; another user cannot drop its bounding set and holds nothing an exec
 * could raise under no-new-privileges). */
static void walls_caps(void)
{
    static char status[8192];
    status[0] = '\0';
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, status, sizeof(status) - 1U);
        status[n > 0 ? n : 0] = '\0';
        (void)close(fd);
    }
    walls_capset(status, "CapEff:", "capabilities effective");
    walls_capset(status, "CapPrm:", "capabilities permitted");
    if (getuid() == 0) {
        walls_capset(status, "CapBnd:", "capabilities bounding");
    }
}

/* Executes path in a child (so that a success cannot replace this
 * program; without its descriptors above 2) and reports whether the exec
 * went through: the child writes the exec's errno into a close-on-exec
 * pipe, which a successful exec closes with nothing written. */
static void walls_exec(const char *path)
{
    char what[600];
    (void)snprintf(what, sizeof(what), "execve %s", path);
    (void)fflush(stdout);
    int p[2];
    pid_t c = pipe2(p, O_CLOEXEC) == 0 ? fork() : -1;
    if (c == 0) {
        char *const argv[] = {(char *)path, NULL};
        char *const envp[] = {NULL};
        (void)close(p[0]);
        (void)syscall(SYS_close_range, 3U, (unsigned)p[1] - 1U, 0U);
        (void)execve(path, argv, envp);
        int e = errno;
        (void)write(p[1], &e, sizeof(e));
        _exit(127);
    }
    int e = 0;
    ssize_t n = -1;
    if (c > 0) {
        (void)close(p[1]);
        n = read(p[0], &e, sizeof(e));
        (void)close(p[0]);
    }
    if (c < 0 || waitpid(c, NULL, 0) != c || n < 0) {
        (void)printf("wall %s: could not try (%s)\n", what, strerror(errno));
        g_allowed++;
        return;
    }
    walls_say(what, n == 0 ? 0 : -1, e);
}

/* Tries unshare(CLONE_NEWUSER) in a child (one that got through would
 * change what every later attempt means) and reports its answer, passed
 * through a pipe. */
static void walls_unshare(void)
{
    int p[2];
    pid_t c = pipe2(p, O_CLOEXEC) == 0 ? fork() : -1;
    if (c == 0) {
        int e = unshare(CLONE_NEWUSER) == 0 ? 0 : errno;
        (void)write(p[1], &e, sizeof(e));
        _exit(0);
    }
    int e = EBADF;
    if (c > 0) {
        (void)close(p[1]);
        if (read(p[0], &e, sizeof(e)) != (ssize_t)sizeof(e)) {
            e = EBADF;
        }
        (void)close(p[0]);
        (void)waitpid(c, NULL, 0);
    }
    walls_say("unshare CLONE_NEWUSER", e == 0 ? 0 : -1, e);
}

/* Kernel surfaces: io_uring, namespaces (clone, unshare, clone3), x32
 * calls, bpf, perf, userfaultfd, keys, mounts, typing into a terminal. */
static void walls_kernel(void)
{
    uint8_t params[120];
    memset(params, 0, sizeof(params));
    long r = syscall(WALLS_NR_IO_URING_SETUP, 4L, params);
    walls_say("io_uring_setup", r, errno);
    if (r >= 0) {
        (void)close((int)r);
    }
    walls_unshare();
    /* A raw clone into a new user namespace; a child that got through
     * exits at once. */
    r = syscall(SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0L, 0L, 0L, 0L);
    if (r == 0) {
        _exit(0);
    }
    walls_say("clone CLONE_NEWUSER", r, errno);
    if (r > 0) {
        (void)waitpid((pid_t)r, NULL, 0);
    }
    uint64_t args[11];
    memset(args, 0, sizeof(args));
    args[0] = CLONE_NEWUSER;
    args[4] = SIGCHLD;
    r = syscall(WALLS_NR_CLONE3, args, sizeof(args));
    if (r == 0) {
        _exit(0);
    }
    /* clone3 answers ENOSYS (libc falls back to clone, which is read). */
    walls_say("clone3 CLONE_NEWUSER", r, errno);
    r = syscall(SYS_getpid | WALLS_X32_BIT);
    walls_say("x32 getpid", r, errno);
    /* A real request: an array map of one 4-byte entry (BPF_MAP_CREATE;
     * map_type, key_size, value_size, max_entries). */
    uint32_t battr[12] = {2U, 4U, 4U, 1U};
    r = syscall(SYS_bpf, 0L, battr, sizeof(battr));
    walls_say("bpf", r, errno);
    if (r >= 0) {
        (void)close((int)r);
    }
    /* A real request any user may make: the software dummy counter of
     * this process, user space only (type, size, config, flags with
     * exclude_kernel and exclude_hv). */
    uint64_t pattr[16];
    memset(pattr, 0, sizeof(pattr));
    pattr[0] = 1U | ((uint64_t)sizeof(pattr) << 32U);
    pattr[1] = 9U;
    pattr[5] = (1U << 0U) | (1U << 5U) | (1U << 6U);
    r = syscall(SYS_perf_event_open, pattr, 0L, -1L, -1L, 0L);
    walls_say("perf_event_open", r, errno);
    if (r >= 0) {
        (void)close((int)r);
    }
    /* UFFD_USER_MODE_ONLY: what any user may ask for. */
    r = syscall(SYS_userfaultfd, 1L | (long)O_CLOEXEC);
    walls_say("userfaultfd", r, errno);
    if (r >= 0) {
        (void)close((int)r);
    }
    r = syscall(SYS_keyctl, 0L /* KEYCTL_GET_KEYRING_ID */, -3L, 0L);
    walls_say("keyctl", r, errno);
    r = syscall(SYS_mount, "none", "/nonexistent-pbx-walls", "tmpfs", 0L, NULL);
    walls_say("mount", r, errno);
    char c = 'x';
    r = ioctl(0, TIOCSTI, &c);
    walls_say("ioctl TIOCSTI", r, errno);
}

/* Whether a descriptor above the job's own (0..4) is open. */
static void walls_fds(void)
{
    int open_fd = -1;
    for (int fd = 5; fd < WALLS_FDS_MAX && open_fd < 0; fd++) {
        if (fcntl(fd, F_GETFD) >= 0) {
            open_fd = fd;
        }
    }
    char what[64];
    (void)snprintf(what, sizeof(what), "a descriptor above 4 (first: %d)",
                   open_fd);
    walls_say(open_fd < 0 ? "a descriptor above 4" : what, open_fd < 0 ? -1 : 0,
              EBADF);
}

/* The honest request: a one-shot READ of selector, read through the
 * object; true when approved and read. */
static bool walls_honest(const char *selector)
{
    pbx_app_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.selector = selector;
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    rq.urgency = (uint8_t)PBX_IPC_URGENCY_ROUTINE;
    rq.wait_ms = WALLS_WAIT_MS;
    rq.label = "pbx-test-walls reads one file";
    pbx_app_grant g;
    memset(&g, 0, sizeof(g));
    g.obj = -1;
    int st = pbx_app_open(&rq, &g);
    if (st != PBX_APP_OK) {
        (void)printf("honest: failed: %s\n", pbx_app_strerror(st));
        return false;
    }
    static char buf[WALLS_BYTES_MAX + 1U];
    size_t got = 0;
    int rd = pbx_obj_read(g.obj, 0, buf, WALLS_BYTES_MAX, &got);
    (void)pbx_app_consume(&g);
    (void)close(g.obj);
    if (rd != 0) {
        (void)printf("honest: failed: read: %s\n", pbx_obj_strerror(rd));
        return false;
    }
    for (size_t i = 0; i < got; i++) {
        if (buf[i] == '\n') {
            buf[i] = '|';
        }
    }
    buf[got] = '\0';
    (void)printf("honest: approved, %zu bytes: %s\n", got, buf);
    return true;
}

/* Parses argv into *o; false on a bad command line. */
static bool walls_args(int argc, char **argv, walls_opts *o)
{
    int i = 1;
    while (i + 1 < argc && strncmp(argv[i], "--", 2) == 0) {
        const char *k = argv[i];
        const char *v = argv[i + 1];
        if (strcmp(k, "--no-honest") == 0) {
            o->honest = false;
            i++;
            continue;
        }
        if (strcmp(k, "--sock") == 0 && o->nsocks < WALLS_SOCKS_MAX) {
            o->socks[o->nsocks++] = v;
        } else if (strcmp(k, "--sibling") == 0) {
            o->sibling = strtol(v, NULL, 10);
        } else if (strcmp(k, "--tcp") == 0) {
            o->tcp = strtol(v, NULL, 10);
        } else if (strcmp(k, "--abstract") == 0) {
            o->abstract = v;
        } else if (strcmp(k, "--exec") == 0) {
            o->exec = v;
        } else {
            return false;
        }
        i += 2;
    }
    o->selector = i == argc - 1 ? argv[i] : NULL;
    return o->selector != NULL && o->selector[0] != '-';
}

int main(int argc, char **argv)
{
    static walls_opts o;
    o.honest = true;
    if (!walls_args(argc, argv, &o)) {
        (void)fputs("usage: pbx-test-walls [--sock PATH ...] [--sibling PID] "
                    "[--tcp PORT] [--abstract NAME] [--exec PATH] "
                    "[--no-honest] SELECTOR\n",
                    stderr);
        return 3;
    }
    walls_fds();
    walls_sockets();
    walls_connects(&o);
    if (o.sibling > 0) {
        walls_sibling(o.sibling);
    }
    walls_forge();
    walls_caps();
    if (o.exec != NULL) {
        walls_exec(o.exec);
    }
    walls_kernel();
    (void)printf("walls: %u allowed\n", g_allowed);
    (void)fflush(stdout);
    bool honest = !o.honest || walls_honest(o.selector);
    return g_allowed != 0U ? 1 : honest ? 0 : 2;
}
