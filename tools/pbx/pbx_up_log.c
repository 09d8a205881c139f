/*
 * pbx_up_log.c: stack.log and the supervisor's poll loop.
 *
 * Every child's standard error arrives on a pipe of its own. The loop
 * reads each pipe without waiting, cuts what it read into lines (at most
 * PBX_UP_LINE_MAX bytes each) and appends each line to DIR/stack.log with
 * an RFC 3339 UTC time, the process's name and pid. A write to the log
 * never waits on anything but the file itself: a failed or short write
 * drops the line and counts it, so a full disk never stalls a child (its
 * pipe keeps being read). Signals arrive on a signalfd in the same poll.
 */
#define _GNU_SOURCE
#include "tools/pbx/pbx_up.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Reads per pipe per poll round, so one chatty child cannot starve the
 * others or the signals. */
#define PBX_UP_READS_PER_ROUND 8

int64_t pbx_up_now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + (int64_t)(ts.tv_nsec / 1000000);
}

/* Writes the RFC 3339 UTC time of now, to the millisecond, into out. */
static void pbx_up_stamp(char *out, size_t cap)
{
    struct timespec ts;
    struct tm tm;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    if (gmtime_r(&ts.tv_sec, &tm) == NULL) {
        (void)snprintf(out, cap, "1970-01-01T00:00:00.000Z");
        return;
    }
    (void)snprintf(out, cap, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                   tm.tm_min, tm.tm_sec, (long)(ts.tv_nsec / 1000000));
}

/* Appends one formatted line to stack.log in one write; false when the
 * write failed or fell short. */
static bool pbx_up_log_write(const pbx_up *u, const char *name, pid_t pid,
                             const char *text, size_t len)
{
    char stamp[96];
    char buf[PBX_UP_LINE_MAX + 160U];
    pbx_up_stamp(stamp, sizeof(stamp));
    int head =
        snprintf(buf, sizeof(buf), "%s %s[%ld]: ", stamp, name, (long)pid);
    if (head < 0 || (size_t)head >= sizeof(buf)) {
        return false;
    }
    size_t n = (size_t)head;
    size_t take = len < sizeof(buf) - n - 1U ? len : sizeof(buf) - n - 1U;
    memcpy(buf + n, text, take);
    n += take;
    buf[n++] = '\n';
    ssize_t put = write(u->log_fd, buf, n);
    return put >= 0 && (size_t)put == n;
}

void pbx_up_log_line(pbx_up *u, const char *name, pid_t pid, const char *text,
                     size_t len)
{
    if (u->log_fd < 0) {
        u->dropped++;
        return;
    }
    if (u->dropped > 0U) {
        char note[96];
        int n = snprintf(note, sizeof(note),
                         "%llu log line(s) dropped: stack.log could not be "
                         "written",
                         (unsigned long long)u->dropped);
        if (n > 0 && pbx_up_log_write(u, "up", getpid(), note, (size_t)n)) {
            u->dropped = 0U;
        }
    }
    if (!pbx_up_log_write(u, name, pid, text, len)) {
        u->dropped++;
    }
}

void pbx_up_note(pbx_up *u, const char *fmt, ...)
{
    char text[PBX_UP_LINE_MAX];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    size_t len = (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1U;
    (void)fprintf(stderr, "pbx up: %s\n", text);
    pbx_up_log_line(u, "up", getpid(), text, len);
}

/* Logs one line of p's and keeps it as the last thing p said. */
static void pbx_up_proc_said(pbx_up *u, pbx_up_proc *p, const char *text,
                             size_t len)
{
    pbx_up_log_line(u, p->name, p->last_pid, text, len);
    len = len < sizeof(p->said) ? len : sizeof(p->said);
    memmove(p->said, text, len);
    p->said_len = len;
}

/* Logs the whole lines in p's buffer and keeps the unfinished rest; a
 * full buffer without a newline is logged as one piece. */
static void pbx_up_proc_lines(pbx_up *u, pbx_up_proc *p)
{
    size_t start = 0U;
    for (size_t i = 0U; i < p->len; i++) {
        if (p->line[i] == '\n') {
            pbx_up_proc_said(u, p, p->line + start, i - start);
            start = i + 1U;
        }
    }
    if (start == 0U && p->len == sizeof(p->line)) {
        pbx_up_proc_said(u, p, p->line, p->len);
        start = p->len;
    }
    memmove(p->line, p->line + start, p->len - start);
    p->len -= start;
}

/* Reads what p's pipe holds (bounded rounds); returns false at its end. */
static bool pbx_up_proc_read(pbx_up *u, pbx_up_proc *p)
{
    for (int r = 0; r < PBX_UP_READS_PER_ROUND; r++) {
        ssize_t got = read(p->err, p->line + p->len, sizeof(p->line) - p->len);
        if (got == 0) {
            return false;
        }
        if (got < 0) {
            return errno == EAGAIN || errno == EINTR;
        }
        p->len += (size_t)got;
        pbx_up_proc_lines(u, p);
    }
    return true;
}

void pbx_up_proc_closed(pbx_up *u, pbx_up_proc *p)
{
    if (p->err < 0) {
        return;
    }
    (void)pbx_up_proc_read(u, p);
    if (p->len > 0U) {
        pbx_up_proc_said(u, p, p->line, p->len);
        p->len = 0U;
    }
    (void)close(p->err);
    p->err = -1;
}

/* Notes how a stack process ended. */
static void pbx_up_exit_note(pbx_up *u, const pbx_up_proc *p, pid_t pid,
                             int status)
{
    const char *why = u->stopping_stack ? "" : " unexpectedly";
    if (WIFEXITED(status)) {
        pbx_up_note(u, "%s[%ld] exited%s with status %d", p->name, (long)pid,
                    why, WEXITSTATUS(status));
    } else if (WIFSIGNALED(status)) {
        pbx_up_note(u, "%s[%ld] killed%s by signal %d (%s)", p->name, (long)pid,
                    why, WTERMSIG(status),
                    sigabbrev_np(WTERMSIG(status)) != NULL
                        ? sigabbrev_np(WTERMSIG(status))
                        : "?");
    }
}

/* Reaps every exited child: a stack process is noted (and, unless the
 * stack is being stopped, marked down for a restart of its own once the
 * stack has run, or u->died set for a death during the first start); any
 * other child is a launched job reparented here (the supervisor is a child
 * subreaper) and only reaped. Bounded: each round reaps one child, and
 * there are finitely many. */
static void pbx_up_reap(pbx_up *u)
{
    for (int round = 0; round < 4096; round++) {
        int status = 0;
        pid_t pid = waitpid(-1, &status, WNOHANG);
        if (pid <= 0) {
            return;
        }
        for (size_t i = 0U; i < PBX_UP_PROCS; i++) {
            pbx_up_proc *p = &u->proc[i];
            if (p->pid == pid) {
                p->pid = 0;
                pbx_up_exit_note(u, p, pid, status);
                pbx_up_status_write(u);
                /* A running stack's process is restarted alone (its
                 * attach channel is dead with it); a death during the
                 * first start fails the start. */
                if (p->chan >= 0) {
                    (void)close(p->chan);
                    p->chan = -1;
                }
                if (u->stopping_stack) {
                    continue;
                }
                if (u->running) {
                    p->down = true;
                    u->reaped = true;
                } else {
                    u->died = true;
                    u->start_failed =
                        u->start_failed != 0U ? u->start_failed : i + 1U;
                }
            }
        }
    }
}

/* Reads the pending signals off the signalfd. */
static void pbx_up_signals(pbx_up *u)
{
    for (int round = 0; round < 64; round++) {
        struct signalfd_siginfo si;
        ssize_t got = read(u->sig_fd, &si, sizeof(si));
        if (got != (ssize_t)sizeof(si)) {
            return;
        }
        int sig = (int)si.ssi_signo;
        if (sig == SIGUSR1) {
            u->usage_wanted = true;
        } else if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) &&
                   !u->stopping) {
            u->stopping = true;
            pbx_up_note(u, "signal %d (%s): stopping the stack", sig,
                        sigabbrev_np(sig) != NULL ? sigabbrev_np(sig) : "?");
        }
    }
}

bool pbx_up_pump(pbx_up *u, int fd, int timeout_ms)
{
    struct pollfd pfd[PBX_UP_PROCS + 2U];
    pbx_up_proc *who[PBX_UP_PROCS + 2U];
    nfds_t n = 0;
    pfd[n++] = (struct pollfd){.fd = u->sig_fd, .events = POLLIN};
    pfd[n++] = (struct pollfd){.fd = fd, .events = POLLIN};
    for (size_t i = 0U; i < PBX_UP_PROCS; i++) {
        if (u->proc[i].err >= 0) {
            who[n] = &u->proc[i];
            pfd[n++] = (struct pollfd){.fd = u->proc[i].err, .events = POLLIN};
        }
    }
    if (poll(pfd, n, timeout_ms) <= 0) {
        return false;
    }
    for (nfds_t i = 2; i < n; i++) {
        if (pfd[i].revents != 0 && !pbx_up_proc_read(u, who[i])) {
            pbx_up_proc_closed(u, who[i]);
        }
    }
    if (pfd[0].revents != 0) {
        pbx_up_signals(u);
    }
    pbx_up_reap(u);
    return fd >= 0 && (pfd[1].revents & (POLLIN | POLLHUP)) != 0;
}
