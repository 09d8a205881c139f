/*
 * test_peers_seccomp.c: the walls' seccomp filter (peers/lib/
 * pbx_peer_seccomp.h). Each decision is checked twice: by running the
 * built program here, on chosen seccomp_data records, with a small
 * interpreter of the classic BPF instructions the builder uses (so the
 * architecture check, x32 and every argument rule are tried without the
 * kernel's help); and in the kernel, in a child process that installs the
 * filter and makes real calls.
 */
#define _GNU_SOURCE
#include "../../peers/lib/pbx_peer_seccomp.h"
#include "../runner/pbx_test.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* AUDIT_ARCH_I386: a foreign architecture's calls. */
#define TS_ARCH_I386 0x40000003U
/* What the interpreter answers for a program it cannot run. */
#define TS_BAD 0xDEADBEEFU

/* The seccomp_data record the filter reads (linux/seccomp.h layout). */
typedef struct ts_data {
    uint32_t nr;
    uint32_t arch;
    uint64_t ip;
    uint64_t args[6];
} ts_data;

/* Runs f on d as the kernel would; returns the action, or TS_BAD for an
 * instruction the builder never emits, an out-of-range load or jump, or a
 * program that runs off its end. Bounded: jumps only go forward. */
static uint32_t ts_run(const pbx_peer_seccomp_filter *f, const ts_data *d)
{
    uint8_t raw[sizeof(ts_data)];
    memcpy(raw, d, sizeof(raw));
    uint32_t a = 0;
    for (uint32_t pc = 0; pc < f->len; pc++) {
        const struct sock_filter *in = &f->insns[pc];
        uint32_t skip = 0;
        switch (in->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (in->k + 4U > sizeof(raw)) {
                return TS_BAD;
            }
            memcpy(&a, raw + in->k, 4U);
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            skip = a == in->k ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            skip = a >= in->k ? in->jt : in->jf;
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            skip = (a & in->k) != 0U ? in->jt : in->jf;
            break;
        case BPF_RET | BPF_K:
            return in->k;
        default:
            return TS_BAD;
        }
        pc += skip;
    }
    return TS_BAD;
}

/* The action for call nr of arch with arguments a0 and a1. */
static uint32_t ts_call(const pbx_peer_seccomp_filter *f, uint32_t arch,
                        uint32_t nr, uint64_t a0, uint64_t a1)
{
    ts_data d;
    memset(&d, 0, sizeof(d));
    d.nr = nr;
    d.arch = arch;
    d.args[0] = a0;
    d.args[1] = a1;
    return ts_run(f, &d);
}

static const uint32_t ts_eperm = SECCOMP_RET_ERRNO | (uint32_t)EPERM;
static const uint32_t ts_enosys = SECCOMP_RET_ERRNO | (uint32_t)ENOSYS;
static const uint32_t ts_allow = SECCOMP_RET_ALLOW;

PBX_TEST(peers_seccomp_filter_decides_every_wall)
{
    static pbx_peer_seccomp_filter f;
    const uint32_t self = 4242U;
    const uint32_t x64 = PBX_PEER_SECCOMP_ARCH_X86_64;
    PBX_REQUIRE(pbx_peer_seccomp_build(self, &f) == PBX_OK);
    PBX_CHECK(f.len > 0U && f.len <= PBX_PEER_SECCOMP_INSNS_MAX);
    size_t n = 0;
    const pbx_peer_seccomp_call *denied = pbx_peer_seccomp_denied(&n);
    PBX_CHECK(n >= 40U);
    for (size_t i = 0; i < n; i++) {
        /* Whatever the arguments: refused with EPERM, never a kill. */
        PBX_CHECK_EQ(ts_call(&f, x64, denied[i].nr, 0U, 0U), ts_eperm);
        PBX_CHECK_EQ(ts_call(&f, x64, denied[i].nr, ~0ULL, 1U), ts_eperm);
    }
    /* The walls the issue names, by number, so that a call dropped from
     * the table is caught here: socket, connect, accept, bind, listen,
     * socketpair, accept4, ptrace, process_vm_readv/writev, kcmp,
     * pidfd_send_signal, io_uring_setup/enter/register, pidfd_open,
     * pidfd_getfd, bpf, perf_event_open, userfaultfd, add_key,
     * request_key, keyctl, mount, umount2, unshare, setns, tkill,
     * process_madvise, process_mrelease; and every call that changes a
     * file's mode, owner, times or extended attributes (sandbox-setattr);
     * System V IPC and POSIX message queues (sandbox-ipc). */
    static const uint32_t named[] = {
        41U,  42U,  43U,  49U,  50U,  53U,  288U, 101U, 310U, 311U, 312U, 424U,
        425U, 426U, 427U, 434U, 438U, 321U, 298U, 323U, 248U, 249U, 250U, 165U,
        166U, 272U, 308U, 200U, 440U, 448U, 90U,  91U,  268U, 452U, 92U,  93U,
        94U,  260U, 132U, 235U, 261U, 280U, 188U, 189U, 190U, 463U, 197U, 198U,
        199U, 466U, 29U,  30U,  31U,  64U,  65U,  66U,  220U, 68U,  69U,  70U,
        71U,  240U, 241U, 242U, 243U, 244U, 245U,
    };
    for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
        PBX_CHECK_EQ(ts_call(&f, x64, named[i], 0U, 0U), ts_eperm);
    }
    /* What a program needs to use what it was given. */
    static const uint32_t kept[] = {
        0U /* read */,          1U /* write */,        3U /* close */,
        7U /* poll */,          9U /* mmap */,         46U /* sendmsg */,
        47U /* recvmsg */,      59U /* execve */,      60U /* exit */,
        62U /* kill */,         231U /* exit_group */, 322U /* execveat */,
        436U /* close_range */, 39U /* getpid */,      44U /* sendto */,
        45U /* recvfrom */,     72U /* fcntl */,       317U /* seccomp */,
    };
    for (size_t i = 0; i < sizeof(kept) / sizeof(kept[0]); i++) {
        PBX_CHECK_EQ(ts_call(&f, x64, kept[i], 0U, 0U), ts_allow);
    }
    /* x32 calls and another architecture's calls: refused. */
    PBX_CHECK_EQ(ts_call(&f, x64, PBX_PEER_SECCOMP_X32_BIT, 0U, 0U), ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, x64, PBX_PEER_SECCOMP_X32_BIT | 39U, 0U, 0U),
                 ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, TS_ARCH_I386, 3U /* i386 read */, 0U, 0U),
                 ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, TS_ARCH_I386, 1U /* i386 exit */, 0U, 0U),
                 ts_eperm);
    /* clone3 is not read (its flags are behind a pointer): ENOSYS, so
     * libc falls back to clone, whose flags are read. */
    PBX_CHECK_EQ(ts_call(&f, x64, 435U, 0U, 0U), ts_enosys);
    PBX_CHECK_EQ(ts_call(&f, x64, 56U, 0x3D0F00U /* a thread */, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&f, x64, 56U, SIGCHLD /* fork */, 0U), ts_allow);
    static const uint32_t ns[] = {CLONE_NEWNS,  CLONE_NEWCGROUP, CLONE_NEWUTS,
                                  CLONE_NEWIPC, CLONE_NEWUSER,   CLONE_NEWPID,
                                  CLONE_NEWNET};
    for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++) {
        PBX_CHECK_EQ(ts_call(&f, x64, 56U, ns[i] | SIGCHLD, 0U), ts_eperm);
    }
    /* ioctl: typing into the terminal refused, the rest allowed. */
    PBX_CHECK_EQ(ts_call(&f, x64, 16U, 0U, PBX_PEER_SECCOMP_TIOCSTI), ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, x64, 16U, 0U, 0x5401U /* TCGETS */), ts_allow);
    /* Calls naming a process: the caller (0 or its pid) only. */
    const pbx_peer_seccomp_call *own = pbx_peer_seccomp_self_only(&n);
    PBX_CHECK(n >= 7U);
    for (size_t i = 0; i < n; i++) {
        uint64_t a[2] = {0U, 0U};
        PBX_CHECK_EQ(ts_call(&f, x64, own[i].nr, a[0], a[1]), ts_allow);
        a[own[i].arg] = self;
        PBX_CHECK_EQ(ts_call(&f, x64, own[i].nr, a[0], a[1]), ts_allow);
        a[own[i].arg] = 1U;
        PBX_CHECK_EQ(ts_call(&f, x64, own[i].nr, a[0], a[1]), ts_eperm);
        a[own[i].arg] = self + 1U;
        PBX_CHECK_EQ(ts_call(&f, x64, own[i].nr, a[0], a[1]), ts_eperm);
    }
    /* Signals: kill of itself or its own group (0) only, never every
     * process (-1, in the low half the kernel reads), another group or
     * another pid; tgkill of its own thread group only. */
    PBX_CHECK_EQ(ts_call(&f, x64, 62U, 0U, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&f, x64, 62U, self, 9U), ts_allow);
    PBX_CHECK_EQ(ts_call(&f, x64, 62U, 0xFFFFFFFFU, 0U), ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, x64, 62U, ~0ULL, 0U), ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, x64, 62U, (uint32_t) - (int32_t)self, 0U),
                 ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, x64, 62U, 1U, 0U), ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, x64, 234U, self, self + 1U), ts_allow);
    PBX_CHECK_EQ(ts_call(&f, x64, 234U, self + 1U, self + 1U), ts_eperm);
    PBX_CHECK_EQ(ts_call(&f, x64, 200U, self, 0U), ts_eperm);
}

/* In a child: installs the filter for itself and makes real calls; exits
 * 0 when each answered as the walls say, else the number of the first
 * check that did not. */
static int ts_child(void)
{
    static pbx_peer_seccomp_filter f;
    if (pbx_peer_seccomp_build((uint32_t)getpid(), &f) != PBX_OK) {
        return 1;
    }
    struct sock_fprog fp = {f.len, f.insns};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0U, &fp) != 0) {
        return 2;
    }
    int sv[2];
    if (socket(AF_UNIX, SOCK_STREAM, 0) != -1 || errno != EPERM) {
        return 3;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != -1 || errno != EPERM) {
        return 4;
    }
    if (unshare(CLONE_NEWUSER) != -1 || errno != EPERM) {
        return 5;
    }
    if (syscall(435L, NULL, 0L) != -1 || errno != ENOSYS) {
        return 6;
    }
    if (syscall(SYS_getpid | 0x40000000L) != -1 || errno != EPERM) {
        return 7;
    }
    if (syscall(SYS_prlimit64, 1L, 7L, NULL, NULL) != -1 || errno != EPERM) {
        return 8;
    }
    /* Signals: another process (its parent, every process) refused,
     * raise() (tgkill of its own thread) still works. */
    if (kill(getppid(), 0) != -1 || errno != EPERM) {
        return 10;
    }
    if (kill(-1, 0) != -1 || errno != EPERM) {
        return 11;
    }
    if (syscall(SYS_tgkill, (long)getppid(), (long)getppid(), 0L) != -1 ||
        errno != EPERM) {
        return 12;
    }
    (void)signal(SIGURG, SIG_IGN);
    if (raise(SIGURG) != 0 || kill(getpid(), 0) != 0 || kill(0, 0) != 0) {
        return 13;
    }
    /* Still allowed: its own pid, a fork, a write. */
    pid_t c = fork();
    if (c == 0) {
        _exit(0);
    }
    int st = 0;
    if (c < 0 || waitpid(c, &st, 0) != c || st != 0 ||
        write(STDERR_FILENO, "", 0) != 0 ||
        syscall(SYS_prlimit64, 0L, 7L, NULL, NULL) != 0) {
        return 9;
    }
    return 0;
}

PBX_TEST(peers_seccomp_filter_holds_in_the_kernel)
{
    pid_t c = fork();
    PBX_REQUIRE(c >= 0);
    if (c == 0) {
        _exit(ts_child());
    }
    int st = 0;
    PBX_REQUIRE(waitpid(c, &st, 0) == c);
    PBX_CHECK(WIFEXITED(st));
    PBX_CHECK_EQ(WEXITSTATUS(st), 0);
}

PBX_TEST(peers_seccomp_notify_filter_reports_the_open_family_only)
{
    static pbx_peer_seccomp_filter f;
    const uint32_t x64 = PBX_PEER_SECCOMP_ARCH_X86_64;
    const uint32_t notif = SECCOMP_RET_USER_NOTIF;
    pbx_peer_seccomp_build_notify(&f);
    PBX_CHECK_EQ(f.len, PBX_PEER_SECCOMP_NOTIFY_INSNS);
    /* open, creat, openat, openat2: whatever their arguments. */
    PBX_CHECK_EQ(ts_call(&f, x64, 2U, 0U, 0U), notif);
    PBX_CHECK_EQ(ts_call(&f, x64, 85U, 0U, 0U), notif);
    PBX_CHECK_EQ(ts_call(&f, x64, 257U, ~0ULL, 0101U), notif);
    PBX_CHECK_EQ(ts_call(&f, x64, 437U, 0U, 0U), notif);
    /* Everything else goes on to the walls' filter: read, close, stat,
     * execve, and another architecture's open. */
    PBX_CHECK_EQ(ts_call(&f, x64, 0U, 0U, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&f, x64, 3U, 0U, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&f, x64, 4U, 0U, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&f, x64, 59U, 0U, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&f, TS_ARCH_I386, 5U, 0U, 0U), ts_allow);
    /* The walls let the open family through to the notifier (ERRNO
     * would beat USER_NOTIF). */
    static pbx_peer_seccomp_filter w;
    PBX_REQUIRE(pbx_peer_seccomp_build(4242U, &w) == PBX_OK);
    PBX_CHECK_EQ(ts_call(&w, x64, 2U, 0U, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&w, x64, 85U, 0U, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&w, x64, 257U, 0U, 0U), ts_allow);
    PBX_CHECK_EQ(ts_call(&w, x64, 437U, 0U, 0U), ts_allow);
}
