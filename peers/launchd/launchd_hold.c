/*
 * launchd_hold.c: the prompt hold, launchd's side (serve --hold PATH;
 * docs/PROTOCOL.md, "Prompt hold"). launchd listens on PATH (mode 0600)
 * and takes one subscriber, ttyd, admitted only from outside launchd's
 * process tree (never a job). ttyd sends "HOLD n\n" before it draws a
 * prompt: launchd stops writing every job's output to the terminal and
 * reading keys (launchd_pty.c), then answers "HELD n\n"; "RELEASE n\n"
 * ends the hold. A newer subscriber replaces the older one (ttyd
 * restarted); when the subscriber goes the hold ends with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* Ends the subscription (why logged); the hold ends with it. */
static void launchd_hold_end(launchd_srv *srv, const char *why)
{
    pbx_peer_log("launchd", "ttyd hold subscription ended: %s%s", why,
                 srv->tty_held ? " (hold released)" : "");
    launchd_loop_forget(srv, srv->ttyd_fd);
    (void)close(srv->ttyd_fd);
    srv->ttyd_fd = -1;
    srv->tty_held = false;
    srv->ttyd_len = 0;
}

/* Takes a subscriber from outside launchd's tree; it replaces the one
 * before it. */
void launchd_hold_accept(launchd_srv *srv)
{
    int c = accept(srv->hold_listen, NULL, NULL);
    if (c < 0) {
        return;
    }
    pid_t peer = 0;
    if (launchd_peer_origin(c, srv->self, &peer) != LAUNCHD_ORIGIN_OUTSIDE) {
        pbx_peer_log("launchd",
                     "hold subscriber refused: pid %d is a job's or "
                     "unknown",
                     (int)peer);
        (void)close(c);
        return;
    }
    if (srv->ttyd_fd >= 0) {
        launchd_hold_end(srv, "a newer subscriber came");
    }
    (void)fcntl(c, F_SETFD, FD_CLOEXEC);
    launchd_nonblock(c);
    srv->ttyd_fd = c;
    srv->ttyd_len = 0;
    pbx_peer_log("launchd", "ttyd hold subscriber pid %d", (int)peer);
}

/* One line from ttyd: HOLD n (held now: every relay stops at once, as
 * the loop pass that read it writes nothing more; acknowledged) or
 * RELEASE n; anything else ends the subscription. */
static void launchd_hold_line(launchd_srv *srv)
{
    srv->ttyd_in[srv->ttyd_len] = '\0';
    bool hold = strncmp(srv->ttyd_in, "HOLD ", 5) == 0;
    bool release = strncmp(srv->ttyd_in, "RELEASE ", 8) == 0;
    char *end = NULL;
    unsigned long n = strtoul(srv->ttyd_in + (hold ? 5 : 8), &end, 10);
    if ((!hold && !release) || end == NULL || *end != '\0') {
        launchd_hold_end(srv, "not a HOLD or RELEASE line");
        return;
    }
    srv->tty_held = hold;
    if (hold) {
        char ack[LAUNCHD_TTYD_LINE];
        int k = snprintf(ack, sizeof(ack), "HELD %lu\n", n);
        if (send(srv->ttyd_fd, ack, (size_t)k, MSG_DONTWAIT | MSG_NOSIGNAL) !=
            k) {
            launchd_hold_end(srv, "HELD not sent");
        }
    }
}

/* Reads what the subscriber sent. */
void launchd_hold_input(launchd_srv *srv)
{
    char buf[LAUNCHD_TTYD_LINE];
    ssize_t r = recv(srv->ttyd_fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (r <= 0) {
        launchd_hold_end(srv, r == 0 ? "ttyd closed it" : strerror(errno));
        return;
    }
    for (ssize_t i = 0; i < r && srv->ttyd_fd >= 0; i++) {
        if (buf[i] == '\n') {
            launchd_hold_line(srv);
            srv->ttyd_len = 0;
        } else if (srv->ttyd_len + 1U < sizeof(srv->ttyd_in)) {
            srv->ttyd_in[srv->ttyd_len++] = buf[i];
        } else {
            launchd_hold_end(srv, "line too long");
        }
    }
}
