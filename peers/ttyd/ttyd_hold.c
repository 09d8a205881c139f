/*
 * ttyd_hold.c: the prompt hold, ttyd's side (docs/PROTOCOL.md, "Prompt
 * hold"). With --hold PATH, before ttyd draws a prompt it connects to
 * launchd's hold socket (when not connected: launchd admits ttyd only
 * from outside its process tree) and sends "HOLD n\n"; it draws only once
 * launchd answered "HELD n\n" (launchd then writes no job output to the
 * terminal and reads no keyboard). When no prompt shows or waits any more
 * ttyd sends "RELEASE n\n". A HOLD not acknowledged within
 * TTYD_HOLD_WAIT_MS answers the waiting prompt RETRY: ttyd never draws
 * over output that is not held. Where nothing listens at PATH (launchd
 * is down, and its relays with it) there is nothing to hold and the
 * prompt is drawn.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "peers/ttyd/ttyd.h"

/* Ends the connection to launchd h. */
static void ttyd_holder_end(ttyd_holder *h, const char *why)
{
    pbx_peer_log("ttyd", "hold channel to launchd closed: %s", why);
    (void)close(h->fd);
    h->fd = -1;
    h->acked = false;
    h->len = 0;
}

/* Sends one line to launchd on h without waiting (a full socket ends
 * the connection: launchd does not read). */
static void ttyd_holder_say(ttyd_holder *h, const char *verb)
{
    char line[TTYD_HOLD_LINE];
    int n = snprintf(line, sizeof(line), "%s %u\n", verb, g_ttyd.hold_serial);
    ssize_t w = send(h->fd, line, (size_t)n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (w != (ssize_t)n) {
        ttyd_holder_end(h, "its socket takes no line");
    }
}

/* Whether launchd (every connection) acknowledged the current HOLD. */
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

/* Connects to launchd's hold socket when not connected; false when
 * nothing listens there. */
static bool ttyd_hold_connect(ttyd_holder *h)
{
    if (h->fd >= 0) {
        return true;
    }
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(g_ttyd.hold_path);
    if (n >= sizeof(sa.sun_path)) {
        return false;
    }
    memcpy(sa.sun_path, g_ttyd.hold_path, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0 || connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        if (fd >= 0) {
            (void)close(fd);
        }
        return false;
    }
    h->fd = fd;
    h->len = 0;
    h->acked = false;
    pbx_peer_log("ttyd", "hold channel to launchd connected");
    return true;
}

/* One complete line from launchd on h: "HELD n" for the current serial
 * acknowledges; anything else ends the connection. */
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

/* Reads what launchd sent on h (poll said so). */
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

bool ttyd_hold_poll(struct pollfd *p)
{
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        p[i] = (struct pollfd){g_ttyd.holders[i].fd, POLLIN, 0};
    }
    return g_ttyd.hold_state == TTYD_HOLD_ASKED;
}

void ttyd_hold_serve(const struct pollfd *p)
{
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        ttyd_holder *h = &g_ttyd.holders[i];
        if (h->fd >= 0 && p[i].revents != 0) {
            ttyd_holder_read(h);
        }
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
        if (g_ttyd.hold_path != NULL && ttyd_hold_connect(h)) {
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

/* Sends RELEASE to launchd: no prompt holds the output now. */
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
