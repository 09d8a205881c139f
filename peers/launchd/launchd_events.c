/*
 * launchd_events.c: the events that replace polling on launchd's loop. A
 * child's end arrives as SIGCHLD, whose handler writes one byte to a
 * self-pipe in the event set, so launchd reaps only after a child ended
 * (never a wait4 per loop). The --wake-hold-file test aid is followed by
 * an inotify watch on the file's directory, so the file is looked at only
 * when an entry there changes (never an access() per loop); without the
 * option neither the watch nor any file test exists.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* The self-pipe's write end, for the signal handler (-1 before init). */
static volatile int g_chld_w = -1;

/* SIGCHLD: one byte to the self-pipe (a full pipe already wakes the
 * loop, so a failed write loses nothing); errno is kept for the code the
 * signal interrupted. */
static void launchd_on_chld(int sig)
{
    (void)sig;
    int saved = errno;
    uint8_t b = 1U;
    if (g_chld_w >= 0) {
        (void)write(g_chld_w, &b, 1U);
    }
    errno = saved;
}

/* Reads whether the hold file exists now, and logs each change, so a
 * test waits for the line instead of guessing when launchd saw it. */
static void launchd_hold_file_look(launchd_srv *srv)
{
    bool held = srv->hold != NULL && access(srv->hold, F_OK) == 0;
    if (held != srv->wake_held) {
        pbx_peer_log("launchd", "%s",
                     held ? "wake route held (test aid)"
                          : "wake route read again");
    }
    srv->wake_held = held;
}

/* Watches the directory of --wake-hold-file; false after a line. */
static bool launchd_hold_file_watch(launchd_srv *srv)
{
    char dir[4096];
    const char *slash = strrchr(srv->hold, '/');
    size_t n = slash == NULL ? 0U : (size_t)(slash - srv->hold);
    if (n >= sizeof(dir)) {
        pbx_peer_log("launchd", "--wake-hold-file: path too long");
        return false;
    }
    if (slash == NULL) {
        memcpy(dir, ".", 2U);
    } else if (n == 0U) {
        memcpy(dir, "/", 2U);
    } else {
        memcpy(dir, srv->hold, n);
        dir[n] = '\0';
    }
    srv->hold_watch = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (srv->hold_watch < 0 ||
        inotify_add_watch(srv->hold_watch, dir,
                          IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) <
            0) {
        pbx_peer_log("launchd", "--wake-hold-file: cannot watch %s: %s", dir,
                     strerror(errno));
        return false;
    }
    launchd_hold_file_look(srv);
    return true;
}

bool launchd_events_init(launchd_srv *srv)
{
    int p[2];
    srv->hold_watch = -1;
    srv->wake_held = false;
    if (pipe2(p, O_NONBLOCK | O_CLOEXEC) != 0) {
        pbx_peer_log("launchd", "SIGCHLD pipe: %s", strerror(errno));
        return false;
    }
    srv->chld_r = p[0];
    g_chld_w = p[1];
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = launchd_on_chld;
    sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
    (void)sigemptyset(&sa.sa_mask);
    if (sigaction(SIGCHLD, &sa, NULL) != 0) {
        pbx_peer_log("launchd", "SIGCHLD handler: %s", strerror(errno));
        return false;
    }
    return srv->hold == NULL || launchd_hold_file_watch(srv);
}

/* Empties a nonblocking descriptor (bounded: the pipe and the inotify
 * queue are finite). A read shorter than the buffer took all there was
 * (a pipe and an inotify queue both hand back what they hold, up to the
 * length asked), so it ends the drain without a failing read. */
static void launchd_drain(int fd)
{
    uint8_t buf[4096];
    for (int i = 0; i < 64; i++) {
        if (read(fd, buf, sizeof(buf)) < (ssize_t)sizeof(buf)) {
            return;
        }
    }
}

void launchd_events_watch(launchd_srv *srv)
{
    if (srv->hold_watch >= 0) {
        launchd_drain(srv->hold_watch);
        launchd_hold_file_look(srv);
    }
}

void launchd_events_chld(launchd_srv *srv)
{
    /* Drained before reaping: a child ending meanwhile writes again. */
    launchd_drain(srv->chld_r);
    if (!launchd_reap(srv)) {
        /* The reap's bound was reached: go on next pass. */
        uint8_t b = 1U;
        (void)write(g_chld_w, &b, 1U);
    }
}
