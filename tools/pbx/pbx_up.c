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
 * A peer (vfsd, ttyd, procd, launchd) that dies while the stack runs is
 * restarted alone after a backoff doubling from 0.5 s (at most 30 s), its
 * new route(s) handed to the running powerboxd by ROUTE_ATTACH on slot 4
 * (pbx_up_peer_restart); when powerboxd dies, the whole stack is stopped
 * and started again after the same backoff. The sixth restart of one
 * process within 60 s gives up with exit 1.
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
#include <unistd.h>

/* Restart policy: the first restart waits PBX_UP_BACKOFF_MS, each further
 * one within the window twice as long (at most PBX_UP_BACKOFF_MAX_MS);
 * more than PBX_UP_RESTARTS_MAX restarts within the window (PBX_UP_WINDOW_MS,
 * or --restart-window-ms, at most that) give up. */
#define PBX_UP_BACKOFF_MS     500
#define PBX_UP_BACKOFF_MAX_MS 30000
#define PBX_UP_RESTARTS_MAX   5
#define PBX_UP_WINDOW_MS      60000

/* The built-in routine policy written to DIR/policy when --policy is not
 * given: routine reads of files and lists of directories are allowed,
 * every exceptional request is asked on the terminal (with no terminal,
 * ttyd denies it), anything else is denied (no rule matches). */
static const char pbx_up_policy_text[] =
    "# pbx up's built-in routine policy (ttyd's format: SESSION REALM\n"
    "# OPERATION CLASS URGENCY VERDICT; the first match wins; no match\n"
    "# denies). Pass --policy FILE to use another.\n"
    "* * read file routine allow\n"
    "* * list directory routine allow\n"
    "* * * * exceptional prompt\n";

void pbx_tool_up_usage(FILE *fp)
{
    (void)fputs(
        "  pbx up [--dir DIR] [--root DIR] [--policy FILE] [--tty PATH]\n"
        "         [--bin DIR] [--ready-fd N] [--restart-window-ms MS]\n"
        "      run the stack (powerboxd, vfsd, ttyd, procd, launchd) in the\n"
        "      foreground in runtime directory DIR (default: $PBX_DIR, else\n"
        "      $XDG_RUNTIME_DIR/powerboxd, else /tmp/powerboxd-UID); vfsd\n"
        "      serves --root (default: the current directory); ttyd uses\n"
        "      --policy (default: a built-in routine policy written to\n"
        "      DIR/policy) and prompts on --tty (default: the controlling\n"
        "      terminal when stdin is one, else /dev/null); the programs\n"
        "      are found in --bin (default: beside pbx). Prints 'pbx up:\n"
        "      ready in DIR' (and writes 'ready' to --ready-fd N) once\n"
        "      every process is ready; logs to DIR/stack.log; restarts a\n"
        "      dead peer alone and hands its new routes to powerboxd, or\n"
        "      the whole stack when powerboxd dies (gives up after 5\n"
        "      restarts of one process within 60 s: exit 1; a restart\n"
        "      counts only within --restart-window-ms, default 60000);\n"
        "      SIGINT or SIGTERM stops it: exit 0\n",
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

/* Makes DIR (mode 0700) and takes DIR/lock; a held lock is refused with
 * the holder's pid. A dead supervisor's lock is free (flock dies with its
 * holder), so it is simply taken over. */
static int pbx_up_lock(pbx_up *u)
{
    char path[PBX_UP_PATH_MAX + 8U];
    if (mkdir(u->dir, 0700) != 0 && errno != EEXIST) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", u->dir, strerror(errno));
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
    if (u->policy[0] != '\0') {
        return PBX_TOOL_EXIT_OK;
    }
    int n = snprintf(u->policy, sizeof(u->policy), "%s/policy", u->dir);
    int fd =
        n < 0 || n >= (int)sizeof(u->policy)
            ? -1
            : open(u->policy,
                   O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    size_t len = sizeof(pbx_up_policy_text) - 1U;
    bool ok = fd >= 0 && write(fd, pbx_up_policy_text, len) == (ssize_t)len;
    if (fd >= 0) {
        ok = close(fd) == 0 && ok;
    }
    if (!ok) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", u->policy, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    return PBX_TOOL_EXIT_OK;
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
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGPIPE};
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

/* Tells the caller the stack is ready: the line, and --ready-fd once. */
static void pbx_up_ready(pbx_up *u, int restarts)
{
    if (restarts == 0) {
        printf("pbx up: ready in %s\n", u->dir);
        (void)fflush(stdout);
        pbx_up_note(u, "stack ready in %s", u->dir);
    } else {
        pbx_up_note(u, "stack ready again after restart %d", restarts);
    }
    if (u->ready_fd >= 0) {
        (void)write(u->ready_fd, "ready\n", 6U);
        (void)close(u->ready_fd);
        u->ready_fd = -1;
    }
}

/* Waits for the backoff before a restart; false when stopped meanwhile or
 * when too many restarts came within the window (noted). times[] holds
 * the restarts' times (ms), *n how many. */
static bool pbx_up_backoff(pbx_up *u, int64_t *times, int *n)
{
    int64_t now = pbx_up_now_ms();
    int kept = 0;
    for (int i = 0; i < *n; i++) {
        if (now - times[i] < u->window_ms) {
            times[kept++] = times[i];
        }
    }
    *n = kept;
    if (kept >= PBX_UP_RESTARTS_MAX) {
        pbx_up_note(u,
                    "giving up: the stack died again after %d restarts "
                    "within %d s",
                    kept, u->window_ms / 1000);
        return false;
    }
    int delay = PBX_UP_BACKOFF_MS << kept;
    delay = delay > PBX_UP_BACKOFF_MAX_MS ? PBX_UP_BACKOFF_MAX_MS : delay;
    pbx_up_note(u,
                "restarting the whole stack in %d ms (restart %d within "
                "%d s)",
                delay, kept + 1, u->window_ms / 1000);
    int64_t end = now + delay;
    for (int r = 0; r < 100000 && !u->stopping; r++) {
        int64_t left = end - pbx_up_now_ms();
        if (left <= 0) {
            break;
        }
        (void)pbx_up_pump(u, -1, (int)left);
    }
    times[(*n)++] = pbx_up_now_ms();
    return !u->stopping;
}

/* Plans and runs the restarts of peers that died while the stack ran:
 * each is due after its own backoff (pbx_up_backoff's rule per process),
 * and one that fails to come back is planned again. Stores in *wait_ms
 * how long the loop may wait before the next one is due (-1: none).
 * Returns false when a peer died too often (noted): give up. */
static bool pbx_up_restarts(pbx_up *u, int *wait_ms)
{
    *wait_ms = -1;
    for (size_t i = 0U; i < PBX_UP_POWERBOXD && !u->died && !u->stopping; i++) {
        pbx_up_proc *p = &u->proc[i];
        if (!p->down) {
            continue;
        }
        int64_t now = pbx_up_now_ms();
        if (p->due_ms == 0) {
            int kept = 0;
            for (int k = 0; k < p->nrestarts; k++) {
                if (now - p->restarts[k] < u->window_ms) {
                    p->restarts[kept++] = p->restarts[k];
                }
            }
            p->nrestarts = kept;
            if (kept >= PBX_UP_RESTARTS_MAX) {
                pbx_up_note(u,
                            "giving up: %s died again after %d restarts "
                            "within %d s",
                            p->name, kept, u->window_ms / 1000);
                return false;
            }
            int delay = PBX_UP_BACKOFF_MS << kept;
            delay =
                delay > PBX_UP_BACKOFF_MAX_MS ? PBX_UP_BACKOFF_MAX_MS : delay;
            p->due_ms = now + delay;
            pbx_up_note(u,
                        "restarting %s alone in %d ms (restart %d within %d s)",
                        p->name, delay, kept + 1, u->window_ms / 1000);
        }
        if (now < p->due_ms) {
            int left = (int)(p->due_ms - now);
            *wait_ms = *wait_ms < 0 || left < *wait_ms ? left : *wait_ms;
            continue;
        }
        p->down = false;
        p->due_ms = 0;
        if (p->nrestarts < PBX_UP_RESTARTS_KEPT) {
            p->restarts[p->nrestarts++] = now;
        }
        if (pbx_up_peer_restart(u, i) == 0) {
            pbx_up_note(u, "%s[%ld] restarted and attached", p->name,
                        (long)p->pid);
        } else if (!u->died && !u->stopping) {
            /* Not back: stop what came up, and plan it again. */
            if (p->pid > 0) {
                (void)kill(p->pid, SIGKILL);
            }
            p->down = true;
            *wait_ms = 0;
        }
    }
    return true;
}

/* Starts the stack and keeps it running until a stop or a give-up;
 * returns the exit status. */
static int pbx_up_loop(pbx_up *u)
{
    int64_t times[PBX_UP_RESTARTS_MAX + 1];
    int ntimes = 0;
    int restarts = 0;
    for (;;) {
        if (pbx_up_stack_start(u) == 0) {
            pbx_up_ready(u, restarts);
        } else if (restarts == 0 && !u->stopping) {
            pbx_up_note(u, "the stack did not start");
            pbx_up_stack_stop(u);
            return PBX_TOOL_EXIT_FAIL;
        } else {
            u->died = true;
        }
        while (!u->stopping && !u->died) {
            int wait = -1;
            if (!pbx_up_restarts(u, &wait)) {
                pbx_up_stack_stop(u);
                return PBX_TOOL_EXIT_FAIL;
            }
            (void)pbx_up_pump(u, -1, wait);
        }
        pbx_up_stack_stop(u);
        if (u->stopping) {
            return PBX_TOOL_EXIT_OK;
        }
        if (!pbx_up_backoff(u, times, &ntimes)) {
            return u->stopping ? PBX_TOOL_EXIT_OK : PBX_TOOL_EXIT_FAIL;
        }
        restarts++;
        pbx_up_note(u, "restart %d: starting the whole stack", restarts);
    }
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
    rc = pbx_up_loop(&u);
    pbx_up_stack_clean(&u);
    pbx_up_note(&u, "stopped (exit %d)", rc);
    return rc;
}
