/*
 * launchd_sandbox.c: the walls of a job launched with the
 * PBX_PEER_LAUNCH_SANDBOX flag (docs/HOST.md, "Sandboxed programs"):
 * Landlock (files, TCP ports, abstract sockets, signals), a seccomp
 * filter (peers/lib/pbx_peer_seccomp.h: sockets, other processes,
 * io_uring, namespaces, ...) and only the descriptors it was given.
 *
 * Everything that can fail for a reason the caller should hear is done in
 * launchd itself before the fork, so the LAUNCH is refused with a status
 * that says why: asking the kernel's Landlock ABI and whether it can
 * install a seccomp filter, finding and opening the program (a regular
 * executable file, static or dynamic), reading and checking the profile
 * file (--profile), building the ruleset with a rule for each path of
 * the profile (pbx_peer_profile.h) and one for the program's own file.
 * The child then (for a stage job, after connecting to procd's stage
 * socket for it; for a brokered job, after entering a user namespace of
 * its own, launchd_sandbox_userns) adds the rule on its own /proc/PID (only it
 * can name it), sets no-new-privileges, drops every capability (ambient,
 * bounding, effective, permitted, inheritable), enforces the ruleset,
 * closes every descriptor but the job's, installs the filter and executes
 * the very file that was checked (by descriptor); if a step fails it says
 * so on the job's standard error and exits without running the program.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_profile.h"
#include "peers/lib/pbx_peer_sandbox.h"
#include "peers/lib/pbx_peer_seccomp.h"

/* The longest program path tried while searching PATH. */
#define LAUNCHD_PATH_MAX 4096U
/* The most PATH entries searched. */
#define LAUNCHD_PATH_DIRS 64U
/* What the child exits with when the sandbox could not be entered. */
#define LAUNCHD_SANDBOX_EXIT 126
/* The job's own descriptors are below this: 0..2 stdio, 3 the job
 * connection, 4 the scope. A stage job also keeps its stage connection at
 * LAUNCHD_STAGE_FD. */
#define LAUNCHD_KEEP_FDS 5
#define LAUNCHD_STAGE_FD 5
/* More capabilities than any kernel has: the bounding set is dropped up
 * to the first number the kernel refuses as no capability (EINVAL). */
#define LAUNCHD_CAPS_MAX 64UL
/* The most arguments searched for --stage-sock. */
#define LAUNCHD_STAGE_ARGS 64

/* The ruleset attribute as of Landlock ABI 6 (handled filesystem rights,
 * handled network rights, scopes). The kernel takes a shorter prefix from
 * older ABIs; the build host's header may not have the newer fields. */
typedef struct launchd_ll_attr {
    /* The kernel reads these three (cppcheck cannot see it). */
    // cppcheck-suppress unusedStructMember
    uint64_t handled_fs;
    // cppcheck-suppress unusedStructMember
    uint64_t handled_net;
    // cppcheck-suppress unusedStructMember
    uint64_t scoped;
} launchd_ll_attr;

/* What a profile's rules may not reach, and the rights the ruleset
 * handles (a rule may carry only those). */
typedef struct launchd_sandbox_walls {
    const char *forbidden[PBX_PEER_PROFILE_FORBIDDEN];
    size_t n;
    uint64_t handled;
} launchd_sandbox_walls;

/* Opens the regular, executable file at path read-only (close-on-exec);
 * -1 when it is not one. Non-blocking, so that a FIFO (or a device) is
 * opened at once and refused by its type instead of holding launchd's
 * loop until a writer comes. */
static int launchd_sandbox_open_one(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
                    faccessat(AT_FDCWD, path, X_OK, AT_EACCESS) != 0)) {
        (void)close(fd);
        fd = -1;
    }
    return fd;
}

/* Opens prog as execvp would find it: a name with a slash as it is, any
 * other in launchd's PATH (default "/usr/bin:/bin"). */
static int launchd_sandbox_open(const char *prog)
{
    if (strchr(prog, '/') != NULL) {
        return launchd_sandbox_open_one(prog);
    }
    const char *path = getenv("PATH");
    path = path != NULL && path[0] != '\0' ? path : "/usr/bin:/bin";
    static char cand[LAUNCHD_PATH_MAX];
    for (uint32_t i = 0; i < LAUNCHD_PATH_DIRS && path[0] != '\0'; i++) {
        const char *colon = strchr(path, ':');
        size_t n = colon != NULL ? (size_t)(colon - path) : strlen(path);
        int w = snprintf(cand, sizeof(cand), "%.*s/%s", (int)n, path, prog);
        int fd = w > 0 && (size_t)w < sizeof(cand)
                     ? launchd_sandbox_open_one(n != 0U ? cand : prog)
                     : -1;
        if (fd >= 0) {
            return fd;
        }
        path += n + (colon != NULL ? 1U : 0U);
    }
    return -1;
}

/* Adds a rule allowing access on the file open at fd to ruleset rfd; 0
 * or -1 with errno set. */
static int launchd_sandbox_rule(int rfd, int fd, uint64_t access)
{
    struct landlock_path_beneath_attr rule;
    memset(&rule, 0, sizeof(rule));
    rule.allowed_access = access;
    rule.parent_fd = fd;
    return syscall(__NR_landlock_add_rule, rfd, LANDLOCK_RULE_PATH_BENEATH,
                   &rule, 0U) == 0
               ? 0
               : -1;
}

/* Makes an empty ruleset for plan; its descriptor or -1. */
static int launchd_sandbox_ruleset(const pbx_peer_sandbox_plan *plan)
{
    launchd_ll_attr attr = {plan->handled_fs, plan->handled_net, plan->scoped};
    /* Only the fields the ABI has: handled_net came with 4, scoped 6. */
    size_t size = plan->abi >= 6   ? sizeof(attr)
                  : plan->abi >= 4 ? 2U * sizeof(uint64_t)
                                   : sizeof(uint64_t);
    long rfd = syscall(__NR_landlock_create_ruleset, &attr, size, 0U);
    return rfd >= 0 ? (int)rfd : -1;
}

/* Reads the profile file at path (absolute, a regular file of at most
 * PBX_PEER_PROFILE_BYTES) and applies it to *p; 0, or the refusal
 * status after a log line naming the file, the line and why. */
static uint16_t launchd_sandbox_profile(const char *path,
                                        const char *const *forbidden,
                                        size_t nforbidden, pbx_peer_profile *p)
{
    static uint8_t text[PBX_PEER_PROFILE_BYTES + 1U];
    /* Non-blocking: a FIFO opens at once and is refused by its type. */
    int fd = path[0] == '/'
                 ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)
                 : -1;
    struct stat st;
    ssize_t got = -1;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        got = read(fd, text, sizeof(text));
    }
    int e = errno;
    if (fd >= 0) {
        (void)close(fd);
    }
    if (got < 0) {
        pbx_peer_log("launchd", "sandbox: profile %s: %s", path,
                     path[0] != '/' ? "not an absolute path"
                     : fd >= 0      ? "not a readable regular file"
                                    : strerror(e));
        return (uint16_t)PBX_E_PEER_PROFILE;
    }
    pbx_peer_profile_refusal why;
    if (pbx_peer_profile_apply(p, text, (size_t)got, forbidden, nforbidden,
                               &why) != PBX_OK) {
        pbx_peer_log("launchd", "sandbox: profile %s, line %u: %s", path,
                     (unsigned)why.line, why.why);
        return (uint16_t)PBX_E_PEER_PROFILE;
    }
    return 0U;
}

/* Adds the rule of profile entry e to ruleset rfd: a missing path of the
 * system profile is skipped, as is one whose resolved path a later
 * removal names; 0, or the refusal status after a log line. */
static uint16_t launchd_sandbox_entry(const pbx_peer_profile *p,
                                      const pbx_peer_profile_entry *e,
                                      const launchd_sandbox_walls *w, int rfd)
{
    static char real[LAUNCHD_PATH_MAX];
    int fd = open(e->path, O_PATH | O_CLOEXEC);
    if (fd < 0 || realpath(e->path, real) == NULL) {
        int err = errno;
        if (fd >= 0) {
            (void)close(fd);
        }
        if (e->line == 0U && err == ENOENT) {
            return 0U;
        }
        pbx_peer_log("launchd", "sandbox: profile line %u: %s: %s",
                     (unsigned)e->line, e->path, strerror(err));
        return (uint16_t)PBX_E_PEER_PROFILE;
    }
    const char *no = pbx_peer_profile_forbidden(real, w->forbidden, w->n);
    struct stat st;
    uint16_t rc = 0U;
    if (no != NULL) {
        pbx_peer_log("launchd", "sandbox: profile line %u: %s is %s: %s",
                     (unsigned)e->line, e->path, real, no);
        rc = (uint16_t)PBX_E_PEER_PROFILE;
    } else if (!pbx_peer_profile_removed(p, real, e->line)) {
        uint64_t r = fstat(fd, &st) == 0
                         ? pbx_peer_profile_rights(
                               e->access, S_ISDIR(st.st_mode), w->handled)
                         : 0U;
        rc = r != 0U && launchd_sandbox_rule(rfd, fd, r) == 0
                 ? 0U
                 : (uint16_t)PBX_E_PEER_SANDBOX;
    }
    (void)close(fd);
    return rc;
}

/* Adds a rule for every entry of profile p to ruleset rfd; 0 or the
 * refusal status. */
static uint16_t launchd_sandbox_rules(const pbx_peer_profile *p,
                                      const launchd_sandbox_walls *w, int rfd)
{
    uint16_t st = 0U;
    for (uint32_t i = 0; i < p->n && i < PBX_PEER_PROFILE_ENTRIES && st == 0U;
         i++) {
        st = launchd_sandbox_entry(p, &p->entries[i], w, rfd);
    }
    return st;
}

/* Opens and checks (regular, executable) the program the stage program
 * runs; returns its descriptor, or -1 and the refusal status in *st. */
static int launchd_sandbox_next(const char *next, uint16_t *st)
{
    int fd = launchd_sandbox_open(next);
    if (fd < 0) {
        pbx_peer_log("launchd", "sandbox: %s: not an executable file", next);
        *st = (uint16_t)PBX_E_PEER_NOT_EXEC;
    }
    return fd;
}

/* Whether the kernel can install the walls' seccomp filter: filter mode
 * with the ERRNO action, on the one architecture the filter is written
 * for; false after a line saying why. */
static bool launchd_sandbox_can_filter(void)
{
#if defined(__x86_64__)
    uint32_t act = SECCOMP_RET_ERRNO;
    if (syscall(__NR_seccomp, SECCOMP_GET_ACTION_AVAIL, 0U, &act) == 0) {
        return true;
    }
    pbx_peer_log("launchd", "sandbox: seccomp filter mode: %s",
                 strerror(errno));
#else
    pbx_peer_log("launchd", "sandbox: seccomp: the walls' filter is written "
                            "for x86_64 only");
#endif
    return false;
}

/* The kernel's Landlock plan and whether it can filter; 0 or the
 * refusal status after a log line. */
static uint16_t launchd_sandbox_plan(pbx_peer_sandbox_plan *plan)
{
    long abi = syscall(__NR_landlock_create_ruleset, NULL, 0U,
                       LANDLOCK_CREATE_RULESET_VERSION);
    pbx_err e = pbx_peer_sandbox_decide(abi, abi < 0 ? errno : 0, plan);
    if (e != PBX_OK) {
        pbx_peer_log("launchd", "sandbox: Landlock ABI query: %s",
                     abi < 0 ? strerror(errno) : "ABI below 1");
        return (uint16_t)e;
    }
    return launchd_sandbox_can_filter() ? 0U : (uint16_t)PBX_E_PEER_NO_SECCOMP;
}

/* The forbidden directories of w: the stack directory and, for a
 * brokered job, vfsd's root (each resolved), when known. */
static void launchd_sandbox_forbid(const launchd_sandbox_want *want,
                                   launchd_sandbox_walls *w)
{
    static char stack[LAUNCHD_PATH_MAX];
    static char root[LAUNCHD_PATH_MAX];
    w->n = 0U;
    if (want->stack != NULL && realpath(want->stack, stack) != NULL) {
        w->forbidden[w->n++] = stack;
    }
    if (want->root != NULL && realpath(want->root, root) != NULL) {
        w->forbidden[w->n++] = root;
    }
}

/* Builds sb's ruleset: the profile's rules, then the program's own file
 * and the next program's (execute and read); 0 or the refusal status. */
static uint16_t launchd_sandbox_build(const launchd_sandbox_want *want,
                                      const pbx_peer_sandbox_plan *plan,
                                      int nfd, launchd_sandbox *sb)
{
    static pbx_peer_profile prof;
    launchd_sandbox_walls w;
    launchd_sandbox_forbid(want, &w);
    w.handled = plan->handled_fs;
    pbx_peer_profile_system(&prof);
    uint16_t st =
        want->profile != NULL
            ? launchd_sandbox_profile(want->profile, w.forbidden, w.n, &prof)
            : 0U;
    sb->ruleset = st == 0U ? launchd_sandbox_ruleset(plan) : -1;
    if (st == 0U && sb->ruleset < 0) {
        st = (uint16_t)PBX_E_PEER_SANDBOX;
    }
    st = st == 0U ? launchd_sandbox_rules(&prof, &w, sb->ruleset) : st;
    if (st == 0U &&
        (launchd_sandbox_rule(sb->ruleset, sb->prog, plan->prog_access) != 0 ||
         (nfd >= 0 &&
          launchd_sandbox_rule(sb->ruleset, nfd, plan->prog_access) != 0))) {
        st = (uint16_t)PBX_E_PEER_SANDBOX;
    }
    sb->proc_rights = prof.proc_self
                          ? pbx_peer_profile_rights(PBX_PEER_PROFILE_R, true,
                                                    plan->handled_fs)
                          : 0U;
    return st;
}

uint16_t launchd_sandbox_prepare(const launchd_sandbox_want *want,
                                 launchd_sandbox *sb)
{
    sb->prog = -1;
    sb->ruleset = -1;
    sb->proc_rights = 0U;
    pbx_peer_sandbox_plan plan;
    uint16_t st = launchd_sandbox_plan(&plan);
    if (st != 0U) {
        return st;
    }
    sb->stage = want->next != NULL;
    sb->prog = launchd_sandbox_open(want->prog);
    if (sb->prog < 0) {
        pbx_peer_log("launchd", "sandbox: %s: not an executable file",
                     want->prog);
        return (uint16_t)PBX_E_PEER_NOT_EXEC;
    }
    int nfd = want->next != NULL ? launchd_sandbox_next(want->next, &st) : -1;
    st = st == 0U ? launchd_sandbox_build(want, &plan, nfd, sb) : st;
    if (nfd >= 0) {
        (void)close(nfd);
    }
    if (st != 0U) {
        pbx_peer_log("launchd", "sandbox: %s: %s", want->prog,
                     pbx_err_text((pbx_err)st));
        launchd_sandbox_release(sb);
        return st;
    }
    pbx_peer_log("launchd",
                 "sandbox: %s%s%s: Landlock ABI %ld, filesystem rights 0x%llx "
                 "handled, network rights 0x%llx, scopes 0x%llx; profile %s; "
                 "seccomp filter",
                 want->prog, want->next != NULL ? " then " : "",
                 want->next != NULL ? want->next : "", plan.abi,
                 (unsigned long long)plan.handled_fs,
                 (unsigned long long)plan.handled_net,
                 (unsigned long long)plan.scoped,
                 want->profile != NULL ? want->profile : "system");
    return 0U;
}

void launchd_sandbox_release(launchd_sandbox *sb)
{
    if (sb->prog >= 0) {
        (void)close(sb->prog);
    }
    if (sb->ruleset >= 0) {
        (void)close(sb->ruleset);
    }
    sb->prog = -1;
    sb->ruleset = -1;
}

/* Writes "pbx-launchd: sandbox: what: <errno text>" to the job's stderr
 * and ends the child without running the program. */
_Noreturn static void launchd_sandbox_fail(const char *what)
{
    (void)dprintf(STDERR_FILENO,
                  "pbx-launchd: sandbox: %s: %s; the program was not run\n",
                  what, strerror(errno));
    _exit(LAUNCHD_SANDBOX_EXIT);
}

/* For a stage job: connects to procd's stage socket (the path after
 * "--stage-sock" among the stage program's options, before "--") and puts
 * the connection at LAUNCHD_STAGE_FD, named by PBX_STAGE_FD, so the
 * stage program stages itself without a socket of its own. The pid procd
 * reads from the connection is the job's: this process, which the exec
 * keeps. Ends the child when it cannot. */
static void launchd_sandbox_stage(char *const *argv)
{
    const char *path = NULL;
    for (int i = 1; i < LAUNCHD_STAGE_ARGS && argv[i] != NULL &&
                    argv[i + 1] != NULL && strcmp(argv[i], "--") != 0;
         i++) {
        if (strcmp(argv[i], "--stage-sock") == 0) {
            path = argv[i + 1];
            break;
        }
    }
    if (path == NULL) {
        errno = EINVAL;
        launchd_sandbox_fail("stage: no --stage-sock before \"--\"");
        return; /* Not reached: the child has ended. */
    }
    int fd = pbx_peer_io_connect(path, SOCK_SEQPACKET);
    if (fd < 0 || dup2(fd, LAUNCHD_STAGE_FD) != LAUNCHD_STAGE_FD) {
        launchd_sandbox_fail("stage: procd's stage socket");
    }
    if (fd != LAUNCHD_STAGE_FD) {
        (void)close(fd);
    }
    /* dup2 onto itself keeps close-on-exec: the job must inherit it. */
    if (fcntl(LAUNCHD_STAGE_FD, F_SETFD, 0) != 0) {
        launchd_sandbox_fail("stage: F_SETFD");
    }
    (void)setenv("PBX_STAGE_FD", "5", 1);
}

/* Closes every descriptor from keep on but prog (close-on-exec: the exec
 * closes it); 0 or -1 with errno set. */
static int launchd_sandbox_close_rest(int keep, int prog)
{
    if (prog > keep && syscall(__NR_close_range, (unsigned)keep,
                               (unsigned)prog - 1U, 0U) != 0) {
        return -1;
    }
    unsigned from = (unsigned)(prog >= keep ? prog + 1 : keep);
    return syscall(__NR_close_range, from, ~0U, 0U) == 0 ? 0 : -1;
}

/* Installs the walls' seccomp filter for this process (the job: its pid
 * stays across exec). Ends the child when it cannot. */
static void launchd_sandbox_filter(void)
{
    static pbx_peer_seccomp_filter f;
    if (pbx_peer_seccomp_build((uint32_t)getpid(), &f) != PBX_OK) {
        errno = E2BIG;
        launchd_sandbox_fail("seccomp filter");
    }
    struct sock_fprog fp = {f.len, f.insns};
    if (syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0U, &fp) != 0) {
        launchd_sandbox_fail("seccomp");
    }
}

/* Adds the rule on the job's own /proc/PID (this process: the exec keeps
 * its pid), which only the child can name, when the profile keeps it.
 * Ends the child when it cannot. */
static void launchd_sandbox_proc_self(const launchd_sandbox *sb)
{
    if (sb->proc_rights == 0U) {
        return;
    }
    char path[32];
    (void)snprintf(path, sizeof(path), "/proc/%ld", (long)getpid());
    int fd = open(path, O_PATH | O_CLOEXEC | O_DIRECTORY);
    if (fd < 0 || launchd_sandbox_rule(sb->ruleset, fd, sb->proc_rights) != 0) {
        launchd_sandbox_fail("the rule on /proc/self");
    }
    (void)close(fd);
}

/* Writes text to the file path; false when it cannot. */
static bool launchd_sandbox_write(const char *path, const char *text)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    size_t n = strlen(text);
    bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
    if (fd >= 0) {
        (void)close(fd);
    }
    return ok;
}

/* Whether Yama restricts ptrace here (ptrace_scope 1 or more). */
static bool launchd_sandbox_yama(void)
{
    char v[8] = {0};
    int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, v, sizeof(v) - 1U) : -1;
    if (fd >= 0) {
        (void)close(fd);
    }
    return n > 0 && v[0] != '0';
}

/* A brokered job enters a user namespace of its own, with an identity
 * map of its user and group, before the walls: the broker (launchd's
 * other child, in the parent namespace with the same user, so the
 * namespace's owner) then holds every capability in it, and Yama's
 * relational check (ptrace_scope 1) lets it read the memory and take the
 * descriptors of the job and of every process the job forks, which
 * PR_SET_PTRACER alone (not inherited by a fork) does not. Where the
 * kernel refuses the namespace the job runs without it (the broker then
 * refuses, fail-closed, every open it cannot read; a line says so when
 * Yama restricts ptrace); a map the kernel refuses leaves the ids
 * unmapped inside, which changes no access: the kernel checks the same
 * user outside. */
static void launchd_sandbox_userns(void)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER) != 0) {
        if (launchd_sandbox_yama()) {
            (void)dprintf(STDERR_FILENO,
                          "pbx-launchd: sandbox: no user namespace (%s): "
                          "under Yama's ptrace_scope the broker can serve "
                          "only the job's first process\n",
                          strerror(errno));
        }
        return;
    }
    char map[64];
    (void)snprintf(map, sizeof(map), "%lu %lu 1\n", (unsigned long)uid,
                   (unsigned long)uid);
    (void)launchd_sandbox_write("/proc/self/uid_map", map);
    (void)launchd_sandbox_write("/proc/self/setgroups", "deny\n");
    (void)snprintf(map, sizeof(map), "%lu %lu 1\n", (unsigned long)gid,
                   (unsigned long)gid);
    (void)launchd_sandbox_write("/proc/self/gid_map", map);
}

void launchd_sandbox_notify(const launchd_sandbox *sb)
{
    if (sb->notify < 0) {
        return;
    }
    /* Under Yama's restricted ptrace the broker (not an ancestor) may
     * read this process's memory and take its descriptors only so; no
     * Yama: EINVAL, nothing needed. */
    (void)prctl(PR_SET_PTRACER, (unsigned long)sb->broker_pid, 0UL, 0UL, 0UL);
    static pbx_peer_seccomp_filter f;
    pbx_peer_seccomp_build_notify(&f);
    struct sock_fprog fp = {f.len, f.insns};
    long lfd = syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER,
                       SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
    if (lfd < 0) {
        launchd_sandbox_fail("seccomp user notification");
    }
    /* The job's standard error goes with it (its pty slave under the
     * relay): the broker's lines go where the job's output goes, held
     * with it while a prompt shows (docs/HOST.md, "pbx-broker's
     * lines"). */
    int two[2] = {(int)lfd, STDERR_FILENO};
    uint8_t c = 'L';
    if (launchd_send_fds(sb->notify, &c, 1U, two, 2U) != 0) {
        launchd_sandbox_fail("handing the open listener to the broker");
    }
    (void)close(two[0]);
    (void)close(sb->notify);
}

/* Drops every capability from the bounding set (numbers 0 up to the
 * first the kernel calls no capability). A process that holds no
 * capability (held false) cannot drop them (EPERM) and needs not: with
 * no-new-privileges set, no exec gives it any. 0, or -1 with errno. */
static int launchd_sandbox_drop_bounding(bool held)
{
    for (unsigned long cap = 0UL; cap < LAUNCHD_CAPS_MAX; cap++) {
        if (prctl(PR_CAPBSET_DROP, cap, 0UL, 0UL, 0UL) == 0) {
            continue;
        }
        if (errno == EINVAL && cap > 0UL) {
            return 0;
        }
        return errno == EPERM && !held ? 0 : -1;
    }
    return 0;
}

/* Leaves the child no capability at all, so that a job started by root
 * cannot, say, forge SCM_CREDENTIALS naming powerboxd's pid (which vfsd
 * trusts): the ambient set cleared, the bounding set dropped, then the
 * effective, permitted and inheritable sets zeroed. Runs after
 * no-new-privileges is set. Ends the child when a step fails. */
static void launchd_sandbox_drop_caps(void)
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[_LINUX_CAPABILITY_U32S_3];
    memset(d, 0, sizeof(d));
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0UL, 0UL, 0UL) != 0) {
        launchd_sandbox_fail("clearing the ambient capabilities");
    }
    if (syscall(__NR_capget, &h, d) != 0) {
        launchd_sandbox_fail("capget");
    }
    bool held = (d[0].permitted | d[1].permitted) != 0U;
    if (launchd_sandbox_drop_bounding(held) != 0) {
        launchd_sandbox_fail("dropping the bounding capabilities");
    }
    memset(d, 0, sizeof(d));
    h.version = _LINUX_CAPABILITY_VERSION_3;
    h.pid = 0;
    if (syscall(__NR_capset, &h, d) != 0) {
        launchd_sandbox_fail("capset");
    }
}

void launchd_sandbox_exec(const launchd_sandbox *sb, char *const *argv)
{
    extern char **environ;
    int keep = LAUNCHD_KEEP_FDS;
    /* The one thing done for the job before the walls: its stage
     * connection, which the stage program closes before PROG runs. */
    if (sb->stage) {
        launchd_sandbox_stage(argv);
        keep = LAUNCHD_STAGE_FD + 1;
    }
    if (sb->notify >= 0) {
        launchd_sandbox_userns();
    }
    launchd_sandbox_proc_self(sb);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL) != 0) {
        launchd_sandbox_fail("PR_SET_NO_NEW_PRIVS");
    }
    launchd_sandbox_drop_caps();
    if (syscall(__NR_landlock_restrict_self, sb->ruleset, 0U) != 0) {
        launchd_sandbox_fail("landlock_restrict_self");
    }
    /* Brokered opens: the open family reports to the broker from here
     * on (the walls' filter below lets it through: ERRNO would win). */
    launchd_sandbox_notify(sb);
    /* Only the job's descriptors go on (the ruleset's too is closed). */
    if (launchd_sandbox_close_rest(keep, sb->prog) != 0) {
        launchd_sandbox_fail("close_range");
    }
    launchd_sandbox_filter();
    /* The file that was checked, not whatever its name means now. */
    (void)syscall(__NR_execveat, sb->prog, "", argv, environ, AT_EMPTY_PATH);
    launchd_sandbox_fail("execveat");
}
