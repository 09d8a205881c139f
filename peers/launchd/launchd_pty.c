/*
 * launchd_pty.c: a sandboxed job's pseudo-terminal relay. Each of the
 * job's stdin, stdout and stderr that the LAUNCH handed as a terminal is
 * instead the slave of a pty launchd makes (the job's controlling
 * terminal: setsid and TIOCSCTTY in the child), so the program never
 * holds the user's terminal. launchd relays the master to and from its
 * own non-blocking reopens of that terminal in its serve loop: bounded
 * buffers each way, never a blocking call; when the output buffer is
 * full the master is not read, so the program blocks and nothing is
 * lost. While ttyd shows a prompt (tty_held, launchd_hold.c) no job
 * output is written to the terminal and no key is read from it. The
 * keyboard is put in raw mode while a relay reads it (the pty's own line
 * discipline edits and echoes) and restored when the last relay on that
 * terminal ends. See docs/HOST.md, "The job's terminal".
 */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

bool launchd_pty_wanted(const int *fds)
{
    return isatty(fds[0]) == 1 || isatty(fds[1]) == 1 || isatty(fds[2]) == 1;
}

/* A new open file description of terminal fd with flags (non-blocking,
 * so launchd never waits on it, without changing the user's own). */
static int launchd_pty_reopen(int fd, int flags)
{
    char path[64];
    (void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    return open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
}

/* Another live relay's raw keyboard on the same terminal as p, or NULL. */
static launchd_pty *launchd_pty_sharing(launchd_srv *srv, const launchd_pty *p)
{
    for (uint32_t j = 0; j < LAUNCHD_JOBS_CAP; j++) {
        launchd_pty *o = &srv->jobs[j].pty;
        if (o != p && srv->jobs[j].live && o->master >= 0 && o->raw &&
            o->rdev == p->rdev) {
            return o;
        }
    }
    return NULL;
}

/* Puts p's keyboard in raw mode, the settings before it kept (those a
 * relay on the same terminal kept, when one is live: its raw mode is not
 * the user's). */
static void launchd_pty_raw(launchd_srv *srv, launchd_pty *p)
{
    struct stat st;
    if (p->term_in < 0 || fstat(p->term_in, &st) != 0) {
        return;
    }
    p->rdev = st.st_rdev;
    const launchd_pty *o = launchd_pty_sharing(srv, p);
    if (o != NULL) {
        p->saved = o->saved;
    } else if (tcgetattr(p->term_in, &p->saved) != 0) {
        return;
    }
    struct termios t = p->saved;
    cfmakeraw(&t);
    p->raw = tcsetattr(p->term_in, TCSANOW, &t) == 0;
}

/* Opens the master and the slave; false with neither open. */
static bool launchd_pty_pair(launchd_pty *p, int *slave)
{
    p->master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    const char *name = NULL;
    if (p->master >= 0 && grantpt(p->master) == 0 && unlockpt(p->master) == 0) {
        name = ptsname(p->master);
    }
    *slave = name != NULL ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
    if (*slave < 0) {
        if (p->master >= 0) {
            (void)close(p->master);
        }
        p->master = -1;
        return false;
    }
    launchd_nonblock(p->master);
    return true;
}

/* The job whose relay p is (p is some srv->jobs[j].pty). */
static uint32_t launchd_pty_job(const launchd_srv *srv, const launchd_pty *p)
{
    return (uint32_t)(((const char *)p - (const char *)&srv->jobs[0].pty) /
                      (ptrdiff_t)sizeof(launchd_job));
}

/* Lists p's job among the relays, with a new registration generation
 * (its descriptors are registered by the next launchd_pty_arm). */
static void launchd_pty_list(launchd_srv *srv, launchd_pty *p)
{
    p->gen = ++srv->pty_gen;
    memset(p->ev, 0, sizeof(p->ev));
    if (srv->npty < LAUNCHD_JOBS_CAP) {
        srv->pty_jobs[srv->npty++] = (uint16_t)launchd_pty_job(srv, p);
    }
}

/* Takes p's job off the relays' list. */
static void launchd_pty_unlist(launchd_srv *srv, const launchd_pty *p)
{
    uint16_t j = (uint16_t)launchd_pty_job(srv, p);
    for (uint32_t i = 0; i < srv->npty && i < LAUNCHD_JOBS_CAP; i++) {
        if (srv->pty_jobs[i] == j) {
            srv->pty_jobs[i] = srv->pty_jobs[--srv->npty];
            return;
        }
    }
}

/* Closes relay descriptor *fd (its registration first) and marks it -1. */
static void launchd_pty_shut(launchd_srv *srv, int *fd)
{
    if (*fd >= 0) {
        launchd_loop_forget(srv, *fd);
        (void)close(*fd);
    }
    *fd = -1;
}

int launchd_pty_open(launchd_srv *srv, launchd_pty *p, const int *fds,
                     int *slave)
{
    memset(p, 0, sizeof(*p));
    p->term_in = p->term_out = -1;
    if (!launchd_pty_pair(p, slave)) {
        pbx_peer_log("launchd", "pty: cannot make one: %s", strerror(errno));
        return -1;
    }
    int out = isatty(fds[1]) == 1   ? fds[1]
              : isatty(fds[2]) == 1 ? fds[2]
                                    : fds[0];
    p->term_out = launchd_pty_reopen(out, O_WRONLY);
    if (isatty(fds[0]) == 1) {
        p->term_in = launchd_pty_reopen(fds[0], O_RDONLY);
    }
    /* The slave starts as the terminal is (modes, size), before the
     * keyboard goes raw. */
    struct termios t;
    if (tcgetattr(out, &t) == 0) {
        (void)tcsetattr(*slave, TCSANOW, &t);
    }
    if (ioctl(out, TIOCGWINSZ, &p->ws) == 0) {
        (void)ioctl(p->master, TIOCSWINSZ, &p->ws);
    }
    launchd_pty_raw(srv, p);
    launchd_pty_list(srv, p);
    return 0;
}

void launchd_pty_close(launchd_srv *srv, launchd_pty *p)
{
    if (p->master < 0) {
        return;
    }
    if (p->raw && launchd_pty_sharing(srv, p) == NULL) {
        (void)tcsetattr(p->term_in, TCSANOW, &p->saved);
    }
    launchd_pty_unlist(srv, p);
    launchd_pty_shut(srv, &p->master);
    launchd_pty_shut(srv, &p->term_in);
    launchd_pty_shut(srv, &p->term_out);
    p->raw = false;
}

/* What relay t's entry k (0 master, 1 keyboard, 2 terminal) can move
 * now, as epoll events (0: nothing, so not registered). */
static uint32_t launchd_pty_wants(const launchd_srv *srv, const launchd_pty *t,
                                  uint32_t k)
{
    bool held = srv->tty_held;
    if (k == 0U) {
        return (!t->eof && t->out_len < LAUNCHD_PTY_BUF ? EPOLLIN : 0U) |
               (!t->eof && t->in_len > 0U ? EPOLLOUT : 0U);
    }
    if (k == 1U) {
        return !held && t->in_len < LAUNCHD_PTY_BUF ? EPOLLIN : 0U;
    }
    return !held && t->out_len > 0U ? EPOLLOUT : 0U;
}

/* Logs once per hold that relay t's output waits (why the program
 * stalls; it shows the hold works), and drops what has nowhere to go. */
static void launchd_pty_note(launchd_srv *srv, uint32_t j, launchd_pty *t)
{
    if (srv->tty_held && !t->noted && t->out_len == LAUNCHD_PTY_BUF) {
        pbx_peer_log("launchd",
                     "job %llu.%u: output held while ttyd shows a "
                     "prompt (%u bytes waiting; the program blocks)",
                     (unsigned long long)srv->jobs[j].bind.job_id,
                     srv->jobs[j].bind.job_gen, LAUNCHD_PTY_BUF);
        t->noted = true;
    }
    t->noted = t->noted && srv->tty_held;
    if (t->term_out < 0) {
        t->out_len = 0;
    }
}

void launchd_pty_arm(launchd_srv *srv)
{
    for (uint32_t i = 0; i < srv->npty && i < LAUNCHD_JOBS_CAP; i++) {
        uint32_t j = srv->pty_jobs[i];
        launchd_pty *t = &srv->jobs[j].pty;
        launchd_pty_note(srv, j, t);
        const int fds[LAUNCHD_PTY_FDS] = {t->master, t->term_in, t->term_out};
        for (uint32_t k = 0; k < LAUNCHD_PTY_FDS; k++) {
            launchd_loop_want(
                srv, fds[k], &t->ev[k], launchd_pty_wants(srv, t, k),
                launchd_loop_tag(LAUNCHD_EV_PTY, j * LAUNCHD_PTY_FDS + k,
                                 t->gen));
        }
    }
}

/* Reads what fd has into buf[*len..cap): the bytes count, 0 at its end
 * (or a failure: EIO is how a master reports its slave closed), -1 when
 * there is nothing now. */
static ssize_t launchd_pty_take(int fd, uint8_t *buf, size_t *len, size_t cap)
{
    ssize_t r = read(fd, buf + *len, cap - *len);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
        return -1;
    }
    if (r > 0) {
        *len += (size_t)r;
        return r;
    }
    return 0;
}

/* Writes what buf[0..*len) fd takes now and keeps the rest; false when
 * fd failed (the terminal is gone). */
static bool launchd_pty_give(int fd, uint8_t *buf, size_t *len)
{
    ssize_t w = write(fd, buf, *len);
    if (w < 0) {
        return errno == EAGAIN || errno == EINTR;
    }
    memmove(buf, buf + w, *len - (size_t)w);
    *len -= (size_t)w;
    return true;
}

/* One ready entry k (0 master, 1 keyboard, 2 terminal) of relay t. */
static void launchd_pty_move(launchd_srv *srv, launchd_pty *t, uint32_t k)
{
    if (k == 0U) {
        if (t->out_len < LAUNCHD_PTY_BUF &&
            launchd_pty_take(t->master, t->out, &t->out_len, LAUNCHD_PTY_BUF) ==
                0) {
            t->eof = true;
        }
        if (!t->eof && t->in_len > 0U &&
            !launchd_pty_give(t->master, t->in, &t->in_len)) {
            t->eof = true;
        }
    } else if (k == 1U && !srv->tty_held) {
        if (launchd_pty_take(t->term_in, t->in, &t->in_len, LAUNCHD_PTY_BUF) ==
            0) {
            /* The keyboard ended: the job reads no more of it. */
            launchd_pty_shut(srv, &t->term_in);
        }
    } else if (k == 2U && !srv->tty_held) {
        if (!launchd_pty_give(t->term_out, t->out, &t->out_len)) {
            /* The terminal is gone: the job's output has nowhere to go
             * and is dropped (the job is not blocked forever). */
            launchd_pty_shut(srv, &t->term_out);
            t->out_len = 0;
        }
    }
}

void launchd_pty_input(launchd_srv *srv, uint32_t ji, uint32_t k, uint32_t gen)
{
    if (ji >= LAUNCHD_JOBS_CAP || k >= LAUNCHD_PTY_FDS) {
        return;
    }
    launchd_pty *t = &srv->jobs[ji].pty;
    /* The relay may have closed (or its slot a new one) this pass. */
    if (srv->jobs[ji].live && t->master >= 0 && t->gen == gen) {
        launchd_pty_move(srv, t, k);
    }
}

void launchd_pty_timer(launchd_srv *srv)
{
    /* Backwards: a relay closed here leaves the list (the last one takes
     * its place, already seen). */
    for (uint32_t i = srv->npty; i > 0U; i--) {
        uint32_t j = srv->pty_jobs[i - 1U];
        launchd_job *job = &srv->jobs[j];
        launchd_pty *t = &job->pty;
        if (!job->live || t->master < 0) {
            continue;
        }
        struct winsize ws;
        if (t->term_out >= 0 && ioctl(t->term_out, TIOCGWINSZ, &ws) == 0 &&
            memcmp(&ws, &t->ws, sizeof(ws)) != 0) {
            /* The kernel signals SIGWINCH to the job's foreground. */
            t->ws = ws;
            (void)ioctl(t->master, TIOCSWINSZ, &ws);
        }
        /* An ended job's relay closes once its output is out, or at
         * --call-ms after the exit when a descendant keeps the slave open
         * (never while a prompt holds the output: ttyd's settings must be
         * restored first). */
        bool drained = t->eof && (t->out_len == 0U || t->term_out < 0);
        bool late = job->ending && srv->now >= job->ended_ms + srv->call_ms;
        if (!srv->tty_held && (drained || late)) {
            launchd_pty_close(srv, t);
            if (job->finish_wanted) {
                launchd_job_finish(srv, LAUNCHD_JOB_REF(j), "answered");
            }
        }
    }
}
