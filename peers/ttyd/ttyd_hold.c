/*
 * ttyd_hold.c: the prompt hold (docs/PROTOCOL.md, "Prompt hold"). launchd
 * subscribes on ttyd's --hold socket; before ttyd draws a prompt it sends
 * every subscriber "HOLD n\n" and draws only once each has answered
 * "HELD n\n" (launchd then writes no job output to the terminal and reads
 * no keyboard). When no prompt shows or waits any more ttyd sends
 * "RELEASE n\n". A HOLD not acknowledged within TTYD_HOLD_WAIT_MS answers
 * the waiting prompt RETRY: ttyd never draws over output that is not held.
 * A subscriber that closes holds nothing any more (its relays ended with
 * it). Admission: a subscriber must be a direct child of --jobs-below (a
 * stack peer started by `pbx up`), never a job.
 */
/* accept4 is a Linux extension. */
#define _GNU_SOURCE

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/ttyd/ttyd.h"

/* Ends subscriber h. */
static void ttyd_holder_end(ttyd_holder *h, const char *why)
{
    pbx_peer_log("ttyd", "hold subscriber gone: %s", why);
    (void)close(h->fd);
    h->fd = -1;
    h->acked = false;
    h->len = 0;
}

/* Sends one line to subscriber h without waiting (a full socket ends
 * the subscriber: its launchd does not read). */
static void ttyd_holder_say(ttyd_holder *h, const char *verb)
{
    char line[TTYD_HOLD_LINE];
    int n = snprintf(line, sizeof(line), "%s %u\n", verb, g_ttyd.hold_serial);
    ssize_t w = send(h->fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w != (ssize_t)n) {
        ttyd_holder_end(h, "its socket takes no line");
    }
}

/* Whether every subscriber acknowledged the current HOLD. */
static bool ttyd_hold_all_acked(void)
{
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        const ttyd_holder *h = &g_ttyd.holders[i];
        if (h->fd >= 0 && !h->acked) {
            return false;
        }
    }
    return true;
}

/* The parent pid of pid from /proc/PID/stat, or 0. */
static pid_t ttyd_ppid(pid_t pid)
{
    char path[64];
    char buf[512];
    (void)snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return 0;
    }
    size_t n = fread(buf, 1, sizeof(buf) - 1U, f);
    (void)fclose(f);
    buf[n] = '\0';
    /* The command name may hold spaces and parentheses: after the last
     * ')' come the state and the parent pid. */
    const char *p = strrchr(buf, ')');
    char state = 0;
    long ppid = 0;
    if (p == NULL || sscanf(p + 1, " %c %ld", &state, &ppid) != 2) {
        return 0;
    }
    return (pid_t)ppid;
}

/* Takes one subscriber, when admitted: with --jobs-below, only a direct
 * child of that process (a stack peer; every job is deeper). */
static void ttyd_hold_accept(void)
{
    int fd = accept4(g_ttyd.hold_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        return;
    }
    pid_t pid = pbx_peer_origin_pid(fd);
    if (g_ttyd.admit.jobs_below != 0 &&
        (pid <= 0 || ttyd_ppid(pid) != g_ttyd.admit.jobs_below)) {
        pbx_peer_log("ttyd",
                     "hold subscriber pid %ld refused: not a stack "
                     "peer",
                     (long)pid);
        (void)close(fd);
        return;
    }
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        ttyd_holder *h = &g_ttyd.holders[i];
        if (h->fd < 0) {
            h->fd = fd;
            h->len = 0;
            h->acked = false;
            pbx_peer_log("ttyd", "hold subscriber pid %ld", (long)pid);
            if (g_ttyd.hold_state != TTYD_HOLD_NONE) {
                /* A prompt is up or asked: the newcomer holds too; it
                 * relays nothing drawn yet, so it counts as held. */
                ttyd_holder_say(h, "HOLD");
                h->acked = g_ttyd.hold_state == TTYD_HOLD_HELD;
            }
            return;
        }
    }
    (void)close(fd);
}

/* One complete line from subscriber h: "HELD n" for the current serial
 * acknowledges; anything else ends the subscriber. */
static void ttyd_holder_line(ttyd_holder *h)
{
    unsigned long n = 0;
    char *end = NULL;
    bool ok = h->len > 5U && memcmp(h->in, "HELD ", 5) == 0;
    if (ok) {
        h->in[h->len] = '\0';
        n = strtoul(h->in + 5, &end, 10);
        ok = end != NULL && *end == '\0';
    }
    if (!ok) {
        ttyd_holder_end(h, "not a HELD line");
        return;
    }
    if (g_ttyd.hold_state == TTYD_HOLD_ASKED && n == g_ttyd.hold_serial) {
        h->acked = true;
    }
}

/* Reads what subscriber h sent (poll said so). */
static void ttyd_holder_read(ttyd_holder *h)
{
    char buf[TTYD_HOLD_LINE];
    ssize_t r = recv(h->fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (r <= 0) {
        ttyd_holder_end(h, r == 0 ? "closed" : strerror(errno));
        return;
    }
    for (ssize_t i = 0; i < r && h->fd >= 0; i++) {
        if (buf[i] == '\n') {
            ttyd_holder_line(h);
            h->len = 0;
        } else if (h->len + 1U < sizeof(h->in)) {
            h->in[h->len++] = buf[i];
        } else {
            ttyd_holder_end(h, "line too long");
        }
    }
}

int ttyd_hold_listen(const char *path)
{
    int fd = pbx_peer_io_listen_private(path, SOCK_STREAM);
    if (fd >= 0 && listen(fd, 4) != 0) {
        (void)close(fd);
        return -1;
    }
    return fd;
}

bool ttyd_hold_poll(struct pollfd *p)
{
    bool room = false;
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        int fd = g_ttyd.holders[i].fd;
        p[1U + i] = (struct pollfd){fd, POLLIN, 0};
        room = room || fd < 0;
    }
    p[0] = (struct pollfd){room ? g_ttyd.hold_fd : -1, POLLIN, 0};
    return g_ttyd.hold_state == TTYD_HOLD_ASKED;
}

void ttyd_hold_serve(const struct pollfd *p)
{
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        ttyd_holder *h = &g_ttyd.holders[i];
        if (h->fd >= 0 && p[1U + i].revents != 0) {
            ttyd_holder_read(h);
        }
    }
    if ((p[0].revents & POLLIN) != 0) {
        ttyd_hold_accept();
    }
    if (g_ttyd.hold_state == TTYD_HOLD_ASKED && ttyd_hold_all_acked()) {
        g_ttyd.hold_state = TTYD_HOLD_HELD;
        ttyd_next();
    }
}

bool ttyd_hold_ready(void)
{
    if (g_ttyd.hold_state == TTYD_HOLD_HELD) {
        return true;
    }
    if (g_ttyd.hold_state == TTYD_HOLD_ASKED) {
        return false;
    }
    bool any = false;
    g_ttyd.hold_serial++;
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        ttyd_holder *h = &g_ttyd.holders[i];
        h->acked = false;
        if (h->fd >= 0) {
            ttyd_holder_say(h, "HOLD");
            any = any || h->fd >= 0;
        }
    }
    if (!any) {
        return true; /* nobody relays job output: nothing to hold */
    }
    g_ttyd.hold_state = TTYD_HOLD_ASKED;
    g_ttyd.hold_deadline = ttyd_mono_ms() + TTYD_HOLD_WAIT_MS;
    return false;
}

/* Sends RELEASE to every subscriber: no prompt holds the output now. */
static void ttyd_hold_release(void)
{
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        ttyd_holder *h = &g_ttyd.holders[i];
        if (h->fd >= 0) {
            ttyd_holder_say(h, "RELEASE");
        }
    }
    g_ttyd.hold_state = TTYD_HOLD_NONE;
}

void ttyd_hold_settle(void)
{
    if (g_ttyd.hold_state == TTYD_HOLD_ASKED &&
        ttyd_mono_ms() >= g_ttyd.hold_deadline) {
        pbx_peer_log("ttyd", "HOLD %u not acknowledged in %u ms",
                     g_ttyd.hold_serial, TTYD_HOLD_WAIT_MS);
        ttyd_retry_head("RETRY (job output not held)");
        ttyd_hold_release();
        ttyd_next(); /* the next waiting prompt asks a HOLD of its own */
        return;
    }
    if (g_ttyd.hold_state == TTYD_HOLD_HELD && !g_ttyd.queue.showing &&
        pbx_peer_tty_queue_head(&g_ttyd.queue) == NULL) {
        ttyd_hold_release();
    }
}
