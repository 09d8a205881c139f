/*
 * pbx_up.c: `pbx up`, the supervisor of docs/HOST.md ("The supervisor").
 *
 * Runs one stack (pbx-vfsd, pbx-ttyd, pbx-procd, pbx-launchd and the
 * freestanding powerboxd) in the foreground in the runtime directory DIR:
 * takes DIR/lock (a second supervisor on DIR is refused, naming the
 * holder), starts the stack, prints one readiness line, logs every
 * process's standard error to DIR/stack.log, and stops everything on
 * SIGINT, SIGTERM or SIGHUP with exit 0.
 *
 * Any process that dies while the stack runs is restarted alone after a
 * backoff doubling from 0.5 s (0.5, 1, 2, 4, 8 s). A peer (vfsd, ttyd, procd,
 * launchd) gets its new route(s) to the running powerboxd by ROUTE_ATTACH
 * on slot 4 (pbx_up_peer_restart), or none while powerboxd is down; a
 * dead powerboxd is started again with fresh routes handed to the running
 * peers over their attach channels (pbx_up_broker_restart), once no peer
 * is down. The sixth restart of one process within 60 s (or
 * --restart-window-ms) gives up with exit 1. SIGUSR1 logs powerboxd's
 * usage report (pbx_up_usage).
 */
#define _GNU_SOURCE
#include "tools/pbx/pbx_up.h"
#include "tools/pbx/pbx_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Restart policy: the first restart waits PBX_UP_BACKOFF_MS, each further
 * one within the window twice as long; more than PBX_UP_RESTARTS_MAX
 * restarts within the window (PBX_UP_WINDOW_MS, or --restart-window-ms, at
 * most that) give up, so the longest wait is PBX_UP_BACKOFF_MS << 4. */
#define PBX_UP_BACKOFF_MS   500
#define PBX_UP_RESTARTS_MAX 5
#define PBX_UP_WINDOW_MS    60000

_Static_assert(PBX_UP_RESTARTS_MAX < PBX_UP_RESTARTS_KEPT &&
                   (PBX_UP_BACKOFF_MS << (PBX_UP_RESTARTS_MAX - 1)) <= 8000,
               "the give-up rule comes before a wait longer than 8 s and "
               "before the kept restart times run out");

/* The built-in routine policy written to DIR/policy when --policy is not
 * given and pbx up has no terminal: routine reads of files and lists of
 * directories are allowed, every exceptional request is asked (with no
 * terminal, ttyd denies it), anything else is denied (no rule matches). */
static const char pbx_up_policy_text[] =
    "# pbx up's built-in routine policy (ttyd's format: SESSION REALM\n"
    "# OPERATION CLASS URGENCY [ENTRY SELECTOR] VERDICT; the first match\n"
    "# wins; no match denies). Pass --policy FILE to use another.\n"
    "* * read file routine allow\n"
    "* * list directory routine allow\n"
    "* * * * exceptional prompt\n";

/* The built-in policy when pbx up has a terminal (its --tty, or standard
 * input's, is one): this project's own programs (entries pbx-*) read and
 * list routinely without asking; every other request, each brokered open
 * of an unmodified program among them, is asked on the terminal. */
static const char pbx_up_policy_tty_text[] =
    "# pbx up's built-in policy on a terminal (ttyd's format: SESSION\n"
    "# REALM OPERATION CLASS URGENCY [ENTRY SELECTOR] VERDICT; the first\n"
    "# match wins; no match denies). Programs of this project (entries\n"
    "# pbx-*) read routinely; every other program's request, a brokered\n"
    "# open included, is asked. Pass --policy FILE to use another.\n"
    "* * * * exceptional * * prompt\n"
    "* * read file routine pbx-* * allow\n"
    "* * list directory routine pbx-* * allow\n"
    "* * * * routine * * prompt\n";

void pbx_tool_up_usage(FILE *fp)
{
    (void)fputs(
        "  pbx up [--dir DIR] [--root DIR] [--policy FILE] [--tty PATH]\n"
        "         [--bin DIR] [--ready-fd N] [--restart-window-ms MS]\n"
        "      run the stack (powerboxd, vfsd, ttyd, procd, launchd) in the\n"
        "      foreground in runtime directory DIR (default: $PBX_DIR, else\n"
        "      $XDG_RUNTIME_DIR/powerboxd, else /tmp/powerboxd-UID); vfsd\n"
        "      serves --root (default: the current directory); ttyd uses\n"
        "      --policy (default: a built-in policy written to DIR/policy;\n"
        "      on a terminal it asks for every request but this project's\n"
        "      own pbx-* programs' routine reads; DIR/policy links to\n"
        "      --policy FILE, see pbx policy) and prompts on --tty\n"
        "      (default: the controlling\n"
        "      terminal when stdin is one, else /dev/null); the programs\n"
        "      are found in --bin (default: beside pbx). Prints 'pbx up:\n"
        "      ready in DIR' (and writes 'ready' to --ready-fd N) once\n"
        "      every process is ready; logs to DIR/stack.log; restarts a\n"
        "      dead process alone (a peer's new routes go to powerboxd, a\n"
        "      new powerboxd gets fresh routes to the running peers; gives\n"
        "      up after 5 restarts of one process within 60 s: exit 1; a\n"
        "      restart counts only within --restart-window-ms, default\n"
        "      60000); SIGUSR1 logs powerboxd's usage; SIGINT or SIGTERM\n"
        "      stops it: exit 0\n",
        fp);
}

/* Copies src into a PBX_UP_PATH_MAX buffer; false when it does not fit. */
static bool pbx_up_copy(char *dst, const char *src)
{
    int n = snprintf(dst, PBX_UP_PATH_MAX, "%s", src);
    return n >= 0 && n < (int)PBX_UP_PATH_MAX;
}

/* Applies one option with its value; returns false on a bad value. */
static bool pbx_up_option(pbx_up *u, const char *opt, const char *val)
{
    if (strcmp(opt, "--dir") == 0) {
        pbx_tool_dir_set(val);
        return true;
    }
    if (strcmp(opt, "--root") == 0) {
        return pbx_up_copy(u->root, val);
    }
    if (strcmp(opt, "--policy") == 0) {
        return pbx_up_copy(u->policy, val);
    }
    if (strcmp(opt, "--tty") == 0) {
        return pbx_up_copy(u->tty, val);
    }
    if (strcmp(opt, "--bin") == 0) {
        return pbx_up_copy(u->bin, val);
    }
    char *end = NULL;
    errno = 0;
    long n = strtol(val, &end, 10);
    if (errno != 0 || end == val || *end != '\0' || n < 0 || n > INT_MAX) {
        return false;
    }
    if (strcmp(opt, "--restart-window-ms") == 0) {
        if (n > PBX_UP_WINDOW_MS) {
            return false;
        }
        u->window_ms = (int)n;
        return true;
    }
    u->ready_fd = (int)n;
    return true;
}

/* Parses argv (argv[0] is "up"); returns PBX_TOOL_EXIT_OK, or the usage
 * status after one line naming the bad argument. */
static int pbx_up_args(pbx_up *u, int argc, char **argv)
{
    static const char *const opts[] = {
        "--dir", "--root",     "--policy",           "--tty",
        "--bin", "--ready-fd", "--restart-window-ms"};
    /* Every option takes a value: the loop steps over pairs. */
    for (int i = 1; i < argc; i += 2) {
        bool known = false;
        for (size_t k = 0U; k < sizeof(opts) / sizeof(*opts); k++) {
            known = known || strcmp(argv[i], opts[k]) == 0;
        }
        if (!known) {
            return pbx_tool_usage_error("up", "unknown argument", argv[i]);
        }
        if (i + 1 >= argc) {
            return pbx_tool_usage_error("up", "missing value after", argv[i]);
        }
        if (!pbx_up_option(u, argv[i], argv[i + 1])) {
            return pbx_tool_usage_error("up", "bad value", argv[i + 1]);
        }
    }
    return PBX_TOOL_EXIT_OK;
}

/* Fills the defaults of every path option not given: DIR, the root (the
 * current directory), the terminal, the binaries beside pbx. */
static int pbx_up_defaults(pbx_up *u)
{
    if (pbx_tool_dir_path(NULL, u->dir, sizeof(u->dir)) != 0) {
        return PBX_TOOL_EXIT_FAIL;
    }
    if (u->root[0] == '\0' && getcwd(u->root, sizeof(u->root)) == NULL) {
        (void)fprintf(stderr, "pbx up: the current directory: %s\n",
                      strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    if (u->tty[0] == '\0') {
        const char *t = isatty(0) ? ttyname(0) : NULL;
        (void)pbx_up_copy(u->tty, t != NULL ? t : "/dev/null");
    }
    if (u->bin[0] == '\0') {
        ssize_t n = readlink("/proc/self/exe", u->bin, sizeof(u->bin) - 1U);
        char *slash = n > 0 ? memrchr(u->bin, '/', (size_t)n) : NULL;
        if (slash == NULL) {
            (void)fputs("pbx up: cannot find pbx's own directory (use "
                        "--bin DIR)\n",
                        stderr);
            return PBX_TOOL_EXIT_FAIL;
        }
        *slash = '\0';
    }
    return PBX_TOOL_EXIT_OK;
}

/* Makes DIR (mode 0700) or checks the one there (pbx_up_dir_secure: ours,
 * private, not a link) and takes DIR/lock; a held lock is refused with
 * the holder's pid. A dead supervisor's lock is free (flock dies with its
 * holder), so it is simply taken over. */
static int pbx_up_lock(pbx_up *u)
{
    char path[PBX_UP_PATH_MAX + 8U];
    if (pbx_up_dir_secure(u->dir) != 0) {
        return PBX_TOOL_EXIT_FAIL;
    }
    (void)snprintf(path, sizeof(path), "%s/lock", u->dir);
    u->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (u->lock_fd < 0) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", path, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    if (flock(u->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        char pid[32] = {0};
        ssize_t got = pread(u->lock_fd, pid, sizeof(pid) - 1U, 0);
        pid[got > 0 ? (size_t)got : 0U] = '\0';
        pid[strcspn(pid, "\n")] = '\0';
        (void)fprintf(stderr,
                      "pbx up: %s is in use by another pbx up (pid %s); "
                      "stop it first or use --dir\n",
                      u->dir, pid[0] != '\0' ? pid : "unknown");
        return PBX_TOOL_EXIT_FAIL;
    }
    char pid[32];
    int n = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
    if (ftruncate(u->lock_fd, 0) != 0 ||
        pwrite(u->lock_fd, pid, (size_t)n, 0) != (ssize_t)n) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", path, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    return PBX_TOOL_EXIT_OK;
}

/* True when pbx up's terminal (u->tty) opens as a terminal. */
static bool pbx_up_has_terminal(const pbx_up *u)
{
    int fd = open(u->tty, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    bool yes = fd >= 0 && isatty(fd) == 1;
    if (fd >= 0) {
        (void)close(fd);
    }
    return yes;
}

/* DIR/policy is the stack's policy file, the one `pbx policy` lists: with
 * --policy FILE it becomes a symbolic link to FILE (unless FILE is
 * DIR/policy itself), else it is written with the built-in policy (the
 * terminal one when pbx up has a terminal). A stale one is replaced. */
static int pbx_up_policy_file(pbx_up *u)
{
    char own[PBX_UP_PATH_MAX + 16U];
    (void)snprintf(own, sizeof(own), "%s/policy", u->dir);
    char given[PATH_MAX];
    if (u->policy[0] != '\0' && realpath(u->policy, given) != NULL) {
        char here[PATH_MAX];
        if (realpath(own, here) != NULL && strcmp(here, given) == 0) {
            return PBX_TOOL_EXIT_OK;
        }
        (void)unlink(own);
        if (symlink(given, own) != 0) {
            (void)fprintf(stderr,
                          "pbx up: %s: %s (pbx policy will not list "
                          "the rules)\n",
                          own, strerror(errno));
        }
        return PBX_TOOL_EXIT_OK;
    }
    if (u->policy[0] != '\0') {
        return PBX_TOOL_EXIT_OK;
    }
    if (!pbx_up_copy(u->policy, own)) {
        (void)fprintf(stderr, "pbx up: %s: path too long\n", own);
        return PBX_TOOL_EXIT_FAIL;
    }
    bool tty = pbx_up_has_terminal(u);
    const char *text = tty ? pbx_up_policy_tty_text : pbx_up_policy_text;
    (void)unlink(own);
    int fd =
        open(own, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    size_t len = strlen(text);
    bool ok = fd >= 0 && write(fd, text, len) == (ssize_t)len;
    if (fd >= 0) {
        ok = close(fd) == 0 && ok;
    }
    if (!ok) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", own, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    return PBX_TOOL_EXIT_OK;
}

/* Opens stack.log and writes the built-in policy when none was given. */
static int pbx_up_files(pbx_up *u)
{
    char path[PBX_UP_PATH_MAX + 16U];
    (void)snprintf(path, sizeof(path), "%s/stack.log", u->dir);
    u->log_fd = open(path,
                     O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW |
                         O_NONBLOCK,
                     0600);
    if (u->log_fd < 0) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", path, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    return pbx_up_policy_file(u);
}

/* Writes DIR/root.path: the served root's real path and a newline, so that
 * `pbx run --scope` can name a brokered job's scope below it (docs/
 * HOST.md, "Brokered opens"). A failure is noted, not fatal: only
 * brokered opens need it. */
static void pbx_up_root_file(pbx_up *u)
{
    char path[PBX_UP_PATH_MAX + 16U];
    char real[PATH_MAX];
    (void)snprintf(path, sizeof(path), "%s/root.path", u->dir);
    int fd =
        realpath(u->root, real) != NULL
            ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
                   0600)
            : -1;
    bool ok = fd >= 0 && dprintf(fd, "%s\n", real) > 0;
    if (fd >= 0) {
        ok = close(fd) == 0 && ok;
    }
    if (!ok) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", path, strerror(errno));
    }
}

/* Marks every inherited descriptor from 3 up close-on-exec (a child gets
 * only what its spawn hands it), blocks the signals the loop reads from a
 * signalfd, and becomes a child subreaper so launched jobs reparent here
 * and can be killed and reaped. */
static int pbx_up_process(pbx_up *u)
{
    if (close_range(3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
        for (int fd = 3; fd < 1024; fd++) {
            (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
        }
    }
    sigset_t set;
    (void)sigemptyset(&set);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE, SIGUSR1};
    for (size_t i = 0U; i < sizeof(sigs) / sizeof(*sigs); i++) {
        (void)sigaddset(&set, sigs[i]);
    }
    if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 ||
        (u->sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK)) < 0 ||
        prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL) != 0) {
        (void)fprintf(stderr, "pbx up: signals: %s\n", strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    return PBX_TOOL_EXIT_OK;
}

unsigned pbx_up_incarnation(pbx_up *u)
{
    /* 2^32 - 1 starts never happen: the give-up rule stops far sooner. */
    u->broker_incarnation =
        u->broker_incarnation == UINT32_MAX ? 1U : u->broker_incarnation + 1U;
    pbx_up_note(u, "powerboxd incarnation %u starting",
                (unsigned)u->broker_incarnation);
    return (unsigned)u->broker_incarnation;
}

/* Tells the caller the stack is ready: the line, and --ready-fd once. */
static void pbx_up_ready(pbx_up *u)
{
    printf("pbx up: ready in %s\n", u->dir);
    (void)fflush(stdout);
    pbx_up_note(u, "stack ready in %s", u->dir);
    pbx_up_status_write(u);
    if (u->ready_fd >= 0) {
        (void)write(u->ready_fd, "ready\n", 6U);
        (void)close(u->ready_fd);
        u->ready_fd = -1;
    }
}

/* Plans process p's restart at first sight: drops restart times older
 * than the window and sets its due time after the doubling backoff.
 * Returns false (noted) when it came back too often: give up. */
static bool pbx_up_plan(pbx_up *u, pbx_up_proc *p, int64_t now)
{
    int kept = 0;
    for (int k = 0; k < p->nrestarts; k++) {
        if (now - p->restarts[k] < u->window_ms) {
            p->restarts[kept++] = p->restarts[k];
        }
    }
    p->nrestarts = kept;
    if (kept >= PBX_UP_RESTARTS_MAX) {
        pbx_up_note(u, "giving up: %s died again after %d restarts within %d s",
                    p->name, kept, u->window_ms / 1000);
        return false;
    }
    int delay = PBX_UP_BACKOFF_MS << kept;
    p->due_ms = now + delay;
    pbx_up_note(u, "restarting %s alone in %d ms (restart %d within %d s)",
                p->name, delay, kept + 1, u->window_ms / 1000);
    return true;
}

/* Whether some peer is down (powerboxd's restart waits for it: a peer
 * that is down when powerboxd starts could take no route). */
static bool pbx_up_peer_down(const pbx_up *u)
{
    for (size_t i = 0U; i < PBX_UP_POWERBOXD; i++) {
        if (u->proc[i].down) {
            return true;
        }
    }
    return false;
}

/* Whether child pid has exited (its status not yet reaped: it stays for
 * pbx_up_pump's reaping). */
static bool pbx_up_exited(pid_t pid)
{
    siginfo_t si;
    memset(&si, 0, sizeof(si));
    return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
           si.si_pid == pid;
}

/* Restarts process i, which is due; a failure plans it again. A peer
 * started while powerboxd runs gets its routes by ROUTE_ATTACH, one
 * started while powerboxd is down gets none yet, and powerboxd gets fresh
 * routes to the running peers (pbx_up_broker_restart). */
static void pbx_up_restart_one(pbx_up *u, size_t i, int64_t now)
{
    pbx_up_proc *p = &u->proc[i];
    bool broker_up = u->proc[PBX_UP_POWERBOXD].pid > 0;
    p->down = false;
    p->due_ms = 0;
    if (p->nrestarts < PBX_UP_RESTARTS_KEPT) {
        p->restarts[p->nrestarts++] = now;
    }
    int rc = i == PBX_UP_POWERBOXD ? pbx_up_broker_restart(u)
                                   : pbx_up_peer_restart(u, i);
    if (p->pid > 0 && pbx_up_exited(p->pid)) {
        /* It died before its exit was reaped: not back; the reap marks
         * it down again. */
        pbx_up_note(u, "%s[%ld] died during its restart", p->name,
                    (long)p->pid);
        return;
    }
    if (rc == 0 && p->pid == 0) {
        pbx_up_note(u, "%s died during its restart", p->name);
        return;
    }
    if (rc == 0) {
        pbx_up_note(u, "%s[%ld] restarted %s", p->name, (long)p->pid,
                    i == PBX_UP_POWERBOXD ? "with fresh routes to the peers"
                    : broker_up           ? "and attached"
                                          : "without a route (powerboxd is "
                                            "down)");
        return;
    }
    if (u->stopping) {
        return;
    }
    if (i != PBX_UP_POWERBOXD && p->pid > 0 &&
        u->proc[PBX_UP_POWERBOXD].pid == 0) {
        /* powerboxd died during the attach: the peer runs, and takes its
         * route over its attach channel when powerboxd comes back. */
        pbx_up_note(u, "%s[%ld] restarted; its route waits for powerboxd",
                    p->name, (long)p->pid);
        return;
    }
    /* Not back: stop what came up, and plan it again. */
    if (p->pid > 0) {
        (void)kill(p->pid, SIGKILL);
    }
    p->down = true;
}

/* Plans and runs the restarts of processes that died while the stack ran:
 * each is due after its own backoff (pbx_up_plan), peers before powerboxd.
 * Stores in *wait_ms how long the loop may wait before the next one is due
 * (-1: none). Returns false when a process died too often (noted). */
static bool pbx_up_restarts(pbx_up *u, int *wait_ms)
{
    *wait_ms = -1;
    for (size_t i = 0U; i < PBX_UP_PROCS && !u->stopping; i++) {
        pbx_up_proc *p = &u->proc[i];
        int64_t now = pbx_up_now_ms();
        if (!p->down) {
            continue;
        }
        if (p->due_ms == 0 && !pbx_up_plan(u, p, now)) {
            return false;
        }
        if (now < p->due_ms) {
            int left = (int)(p->due_ms - now);
            *wait_ms = *wait_ms < 0 || left < *wait_ms ? left : *wait_ms;
        } else if (i != PBX_UP_POWERBOXD || !pbx_up_peer_down(u)) {
            pbx_up_restart_one(u, i, now);
            *wait_ms = p->down ? 0 : *wait_ms;
        }
    }
    return true;
}

/* The first start failed and the stack is stopped (every pipe read to
 * its end): the last line of the process whose failure ended the start
 * (its reason, such as vfsd's "--root '/x': No such file or directory")
 * is printed on pbx up's own stderr as well as logged. */
static void pbx_up_start_reason(pbx_up *u)
{
    if (u->start_failed == 0U || u->start_failed > PBX_UP_PROCS) {
        return;
    }
    const pbx_up_proc *p = &u->proc[u->start_failed - 1U];
    if (p->said_len > 0U) {
        pbx_up_note(u, "%s[%ld] said: %.*s", p->name, (long)p->last_pid,
                    (int)p->said_len, p->said);
    }
}

/* Starts the stack and keeps it running, each process that dies restarted
 * alone, until a stop or a give-up; returns the exit status. */
static int pbx_up_loop(pbx_up *u)
{
    if (pbx_up_stack_start(u) != 0) {
        if (!u->stopping) {
            pbx_up_note(u, "the stack did not start");
        }
        pbx_up_stack_stop(u);
        pbx_up_start_reason(u);
        return u->stopping ? PBX_TOOL_EXIT_OK : PBX_TOOL_EXIT_FAIL;
    }
    pbx_up_ready(u);
    while (!u->stopping) {
        int wait = -1;
        u->reaped = false;
        if (!pbx_up_restarts(u, &wait)) {
            pbx_up_stack_stop(u);
            return PBX_TOOL_EXIT_FAIL;
        }
        if (u->usage_wanted) {
            u->usage_wanted = false;
            (void)pbx_up_usage(u);
        }
        /* A process reaped during this round (inside a restart's or the
         * usage report's waits) is planned before anything is waited
         * for. */
        (void)pbx_up_pump(u, -1, u->reaped ? 0 : wait);
    }
    pbx_up_stack_stop(u);
    return PBX_TOOL_EXIT_OK;
}

int pbx_tool_up(int argc, char **argv)
{
    static pbx_up u;
    memset(&u, 0, sizeof(u));
    u.ready_fd = -1;
    u.window_ms = PBX_UP_WINDOW_MS;
    u.log_fd = -1;
    u.sig_fd = -1;
    u.lock_fd = -1;
    u.sup_fd = -1;
    static const char *const names[PBX_UP_PROCS] = {"vfsd", "ttyd", "procd",
                                                    "launchd", "powerboxd"};
    for (size_t i = 0U; i < PBX_UP_PROCS; i++) {
        u.proc[i].name = names[i];
        u.proc[i].err = -1;
        u.proc[i].chan = -1;
    }
    int rc = pbx_up_args(&u, argc, argv);
    if (rc == PBX_TOOL_EXIT_OK) {
        rc = pbx_up_defaults(&u);
    }
    if (rc == PBX_TOOL_EXIT_OK) {
        rc = pbx_up_process(&u);
    }
    if (rc == PBX_TOOL_EXIT_OK) {
        rc = pbx_up_lock(&u);
    }
    if (rc == PBX_TOOL_EXIT_OK) {
        rc = pbx_up_files(&u);
    }
    if (rc != PBX_TOOL_EXIT_OK) {
        return rc;
    }
    pbx_up_root_file(&u);
    rc = pbx_up_loop(&u);
    pbx_up_stack_clean(&u);
    pbx_up_note(&u, "stopped (exit %d)", rc);
    return rc;
}
