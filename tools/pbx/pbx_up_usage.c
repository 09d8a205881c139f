/*
 * pbx_up_usage.c: `pbx up` asks the running powerboxd for its usage
 * report (a USAGE query on its slot 4, capabi/pbx_capabi.h) and logs it
 * as one line, so that a check after a storm of kills can compare
 * powerboxd's pools and descriptors with their baseline. The wait is
 * bounded and serves logs and signals meanwhile (pbx_up_pump); datagrams
 * that are not the answer (a late attach answer, an older report) are
 * skipped, a few at most.
 */
#include "capabi/pbx_capabi.h"
#include "tools/pbx/pbx_up.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

/** PBX_UP_USAGE_MS bounds the wait for powerboxd's report. */
#define PBX_UP_USAGE_MS 2000

/** PBX_UP_USAGE_SKIP bounds the datagrams skipped while waiting. */
#define PBX_UP_USAGE_SKIP 4

/** PBX_UP_USAGE_ROUNDS bounds the pump rounds of one wait (each ends on
 * a signal, a line of output, readability or the deadline). */
#define PBX_UP_USAGE_ROUNDS 100000

/* Formats r as " key=N/CAP ... fds=N log_dropped=N" into out (cap
 * bytes, NUL-terminated, cut if it had to be). */
static void pbx_up_usage_format(const pbx_capabi_usage *r, char *out,
                                size_t cap)
{
    size_t n = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS && n < cap; i++) {
        int w = snprintf(out + n, cap - n, " %s=%u/%u",
                         pbx_capabi_usage_pool_name(i), (unsigned)r->used[i],
                         (unsigned)r->capacity[i]);
        n = w < 0 ? cap : n + (size_t)w;
    }
    if (n < cap) {
        (void)snprintf(out + n, cap - n, " fds=%u log_dropped=%u",
                       (unsigned)r->fds, (unsigned)r->log_dropped);
    }
}

/* Receives one datagram waiting on sup_fd; returns 1 when it is the
 * report for nonce (written to *r), 0 when it is something else (to be
 * skipped), -1 when nothing could be read. */
static int pbx_up_usage_take(pbx_up *u, uint32_t nonce, pbx_capabi_usage *r)
{
    uint8_t in[PBX_CAPABI_USAGE_REPORT_BYTES + 1U];
    ssize_t got = recv(u->sup_fd, in, sizeof(in), MSG_DONTWAIT);
    if (got < 0) {
        return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0
                                                                         : -1;
    }
    if (pbx_capabi_usage_decode(in, (size_t)got, r) != PBX_OK ||
        r->nonce != nonce) {
        return 0;
    }
    return 1;
}

/* Waits, bounded, for the report answering nonce. Returns 0 with *r
 * written, else -1 after a note saying why. */
static int pbx_up_usage_wait(pbx_up *u, uint32_t nonce, pbx_capabi_usage *r)
{
    int64_t end = pbx_up_now_ms() + PBX_UP_USAGE_MS;
    int skipped = 0;
    for (int round = 0; round < PBX_UP_USAGE_ROUNDS; round++) {
        if (u->stopping || u->proc[PBX_UP_POWERBOXD].pid == 0) {
            pbx_up_note(u, "usage: powerboxd went away before it answered");
            return -1;
        }
        int64_t left = end - pbx_up_now_ms();
        if (left <= 0) {
            pbx_up_note(u, "usage: no answer from powerboxd within %d ms",
                        PBX_UP_USAGE_MS);
            return -1;
        }
        if (!pbx_up_pump(u, u->sup_fd, (int)left)) {
            continue;
        }
        int t = pbx_up_usage_take(u, nonce, r);
        if (t == 1) {
            return 0;
        }
        if (t < 0 || ++skipped > PBX_UP_USAGE_SKIP) {
            pbx_up_note(u,
                        "usage: no report from powerboxd (%d other "
                        "datagram(s) skipped)",
                        skipped);
            return -1;
        }
    }
    return -1;
}

int pbx_up_usage(pbx_up *u)
{
    static uint32_t next_nonce;
    uint8_t q[PBX_CAPABI_USAGE_QUERY_BYTES];
    pbx_capabi_usage r;
    char line[PBX_UP_LINE_MAX];
    pid_t pid = u->proc[PBX_UP_POWERBOXD].pid;
    if (u->sup_fd < 0 || pid == 0) {
        pbx_up_note(u, "usage: powerboxd is not running");
        return -1;
    }
    /* A fresh nonce per query, so a late report of an earlier one is
     * never taken for this one's. */
    if (next_nonce == 0U) {
        next_nonce = (uint32_t)pbx_up_now_ms() | 1U;
    }
    uint32_t nonce = next_nonce++;
    if (pbx_capabi_usage_query_encode(nonce, q, sizeof(q)) != PBX_OK ||
        send(u->sup_fd, q, sizeof(q), MSG_DONTWAIT | MSG_NOSIGNAL) !=
            (ssize_t)sizeof(q)) {
        pbx_up_note(u, "usage: cannot send the query to powerboxd: %s",
                    strerror(errno));
        return -1;
    }
    if (pbx_up_usage_wait(u, nonce, &r) != 0) {
        return -1;
    }
    if (r.status != 0U) {
        pbx_up_note(u, "usage: powerboxd[%ld] refused the query: %s", (long)pid,
                    pbx_err_name((pbx_err)r.status));
        return -1;
    }
    pbx_up_usage_format(&r, line, sizeof(line));
    pbx_up_note(u, "usage: powerboxd[%ld]%s", (long)pid, line);
    return 0;
}
