/*
 * ttyd_query.c: ttyd's --query socket: the live grant rows listed to each
 * reader without ever blocking ttyd (at most TTYD_READERS_MAX readers at
 * once, TTYD_READER_ROWS rows per round, TTYD_READER_MS to read them all).
 * See docs/HOST.md, "ttyd".
 */
/* accept4 is a Linux extension. */
#define _GNU_SOURCE

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "peers/ttyd/ttyd.h"

/* The monotonic clock in ms (reader deadlines). */
uint64_t ttyd_mono_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000U + (uint64_t)ts.tv_nsec / 1000000U;
}

/* Ends query reader r (its rows listed, or it gave up or was too slow). */
static void ttyd_reader_end(ttyd_reader *r, const char *why)
{
    if (why != NULL) {
        pbx_peer_log("ttyd", "query reader dropped: %s", why);
    }
    (void)close(r->fd);
    r->fd = -1;
    r->pid = 0;
}

/* Writes what reader r can take now without waiting: the rest of its
 * current row, then the next rows (at most TTYD_READER_ROWS per call).
 * Rows are listed from the live table, slot by slot, so each row listed
 * was ACTIVE when it was formatted; the reader is closed after the last. */
static void ttyd_reader_serve(ttyd_reader *r)
{
    for (unsigned k = 0; k <= TTYD_READER_ROWS; k++) {
        if (r->off == r->len) {
            r->off = r->len = 0;
            while (r->len == 0U && r->slot < PBX_PEER_TTY_VIEWS_MAX) {
                r->len = pbx_peer_tty_views_row(&g_ttyd.views, r->slot++,
                                                r->line, sizeof(r->line));
            }
            if (r->len == 0U) {
                ttyd_reader_end(r, NULL);
                return;
            }
            if (k == TTYD_READER_ROWS) {
                return;
            }
        }
        ssize_t w = send(r->fd, r->line + r->off, r->len - r->off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            ttyd_reader_end(r, w < 0 ? strerror(errno) : "wrote nothing");
            return;
        }
        r->off += (size_t)w;
    }
}

/* Takes one query connection into a free reader entry (the caller polls
 * the listener only while one is free) and starts listing, once it is
 * admitted: not a launched job's (--jobs-below), and its process below
 * --max-per-pid readers (see pbx_peer_admit_query). */
static void ttyd_query_accept(void)
{
    int fd = accept4(g_ttyd.query_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        return;
    }
    pid_t held[TTYD_READERS_MAX];
    for (size_t i = 0; i < TTYD_READERS_MAX; i++) {
        held[i] = g_ttyd.readers[i].fd >= 0 ? g_ttyd.readers[i].pid : 0;
    }
    pid_t pid =
        pbx_peer_admit_query(fd, &g_ttyd.admit, held, TTYD_READERS_MAX, "ttyd");
    if (pid == 0) {
        return;
    }
    for (size_t i = 0; i < TTYD_READERS_MAX; i++) {
        ttyd_reader *r = &g_ttyd.readers[i];
        if (r->fd < 0) {
            r->fd = fd;
            r->pid = pid;
            r->slot = r->off = r->len = 0;
            r->deadline_ms = ttyd_mono_ms() + TTYD_READER_MS;
            ttyd_reader_serve(r);
            return;
        }
    }
    (void)close(fd);
}

/* Drops every reader past its deadline: a reader that does not read
 * holds one entry for TTYD_READER_MS at most. */
static void ttyd_readers_timer(void)
{
    uint64_t now = ttyd_mono_ms();
    for (size_t i = 0; i < TTYD_READERS_MAX; i++) {
        ttyd_reader *r = &g_ttyd.readers[i];
        if (r->fd >= 0 && now >= r->deadline_ms) {
            ttyd_reader_end(r, "not read within its deadline");
        }
    }
}

/* Fills p[0..TTYD_READERS_MAX] with the query listener (only while a
 * reader entry is free: more connections wait in the backlog) and the
 * readers; returns whether any reader is being served. */
bool ttyd_poll_readers(struct pollfd *p)
{
    bool busy = false;
    bool room = false;
    for (size_t i = 0; i < TTYD_READERS_MAX; i++) {
        int fd = g_ttyd.readers[i].fd;
        p[1U + i] = (struct pollfd){fd, POLLOUT, 0};
        busy = busy || fd >= 0;
        room = room || fd < 0;
    }
    p[0] = (struct pollfd){room ? g_ttyd.query_fd : -1, POLLIN, 0};
    return busy;
}

/* Serves the readers and the query listener after poll (q as filled by
 * ttyd_poll_readers). */
void ttyd_serve_readers(const struct pollfd *q)
{
    for (size_t i = 0; i < TTYD_READERS_MAX; i++) {
        if (g_ttyd.readers[i].fd >= 0 && q[1U + i].revents != 0) {
            ttyd_reader_serve(&g_ttyd.readers[i]);
        }
    }
    ttyd_readers_timer();
    if ((q[0].revents & POLLIN) != 0) {
        ttyd_query_accept();
    }
}

/* Opens the --query listener at path: a stream socket of mode 0600 (the
 * rows name the user's grants). */
int ttyd_query_listen(const char *path)
{
    int fd = pbx_peer_io_listen_private(path, SOCK_STREAM);
    if (fd >= 0 && listen(fd, 16) != 0) {
        (void)close(fd);
        return -1;
    }
    return fd;
}
