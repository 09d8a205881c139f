/*
 * procd_query.c: procd's --query socket: each reader is sent the install
 * rows as they are when it connects, without ever blocking procd (at most
 * PROCD_READERS_MAX readers at once, PROCD_READER_MS to read them). See
 * docs/HOST.md, "procd".
 */
/* accept4 is a Linux extension. */
#define _GNU_SOURCE

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/procd/procd.h"

/* Formats every live install row into out[0..cap) (the line format the
 * old --state-file held); returns the length. */
static size_t procd_rows(char *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < g_procd.tab.cap; i++) {
        const pbx_peer_install_row *r = &g_procd.tab.rows[i];
        if (!r->live || cap - n < PROCD_ROW_BYTES) {
            continue;
        }
        int w = snprintf(out + n, cap - n,
                         "process %llu gen %u slot %u grant %u.%u "
                         "object %llu\n",
                         (unsigned long long)r->target.process_id,
                         r->target.process_gen, r->target.slot, r->grant.index,
                         r->grant.gen,
                         (unsigned long long)pbx_peer_io_inode(r->object));
        n += w > 0 && (size_t)w < cap - n ? (size_t)w : 0U;
    }
    return n;
}

/* Ends query reader r (all written, or it was too slow or went away). */
static void procd_reader_end(procd_reader *r, const char *why)
{
    if (why != NULL) {
        pbx_peer_log("procd", "query reader dropped: %s", why);
    }
    (void)close(r->fd);
    r->fd = -1;
    r->pid = 0;
}

/* Writes what reader r takes now without waiting; closes it after the
 * last byte. */
static void procd_reader_serve(procd_reader *r)
{
    for (unsigned k = 0; k < 64U && r->off < r->len; k++) {
        ssize_t w = send(r->fd, r->text + r->off, r->len - r->off,
                         MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            return;
        }
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            procd_reader_end(r, w < 0 ? strerror(errno) : "wrote nothing");
            return;
        }
        r->off += (size_t)w;
    }
    if (r->off == r->len) {
        procd_reader_end(r, NULL);
    }
}

/* Takes one query connection (the listener is polled only while a reader
 * entry is free) and, once it is admitted (not a launched job's,
 * --jobs-below; its process below --max-per-pid readers: see
 * pbx_peer_admit_query), starts writing the rows as they are now. */
static void procd_query_accept(void)
{
    int fd = accept4(g_procd.query_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        return;
    }
    pid_t held[PROCD_READERS_MAX];
    for (size_t i = 0; i < PROCD_READERS_MAX; i++) {
        held[i] = g_procd.readers[i].fd >= 0 ? g_procd.readers[i].pid : 0;
    }
    pid_t pid = pbx_peer_admit_query(fd, &g_procd.admit, held,
                                     PROCD_READERS_MAX, "procd");
    if (pid == 0) {
        return;
    }
    for (size_t i = 0; i < PROCD_READERS_MAX; i++) {
        procd_reader *r = &g_procd.readers[i];
        if (r->fd < 0) {
            r->fd = fd;
            r->pid = pid;
            r->off = 0;
            r->len = procd_rows(r->text, sizeof(r->text));
            r->deadline_ms = procd_mono_ms() + PROCD_READER_MS;
            procd_reader_serve(r);
            return;
        }
    }
    (void)close(fd);
}

/* Fills q[0..PROCD_READERS_MAX] with the query listener (only while a
 * reader entry is free) and the readers; returns whether one is busy. */
bool procd_poll_readers(struct pollfd *q)
{
    bool busy = false;
    bool room = false;
    for (size_t i = 0; i < PROCD_READERS_MAX; i++) {
        int fd = g_procd.readers[i].fd;
        q[1U + i] = (struct pollfd){fd, POLLOUT, 0};
        busy = busy || fd >= 0;
        room = room || fd < 0;
    }
    q[0] = (struct pollfd){room ? g_procd.query_fd : -1, POLLIN, 0};
    return busy;
}

/* Serves the readers (dropping those past their deadline) and the query
 * listener after poll. */
void procd_serve_readers(const struct pollfd *q)
{
    uint64_t now = procd_mono_ms();
    for (size_t i = 0; i < PROCD_READERS_MAX; i++) {
        procd_reader *r = &g_procd.readers[i];
        if (r->fd >= 0 && q[1U + i].revents != 0) {
            procd_reader_serve(r);
        }
        if (r->fd >= 0 && now >= r->deadline_ms) {
            procd_reader_end(r, "not read within its deadline");
        }
    }
    if ((q[0].revents & POLLIN) != 0) {
        procd_query_accept();
    }
}
