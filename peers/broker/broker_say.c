/*
 * broker_say.c: pbx-broker's lines (broker.h, pbx_broker_say): escaped,
 * rate-limited, and written to the job's standard error as the job's own
 * process holds it. launchd's child hands that descriptor over with the
 * seccomp listener (pbx_broker_say_adopt): under a pty relay it is the
 * job's pty slave, so the relay holds the broker's lines with the job's
 * output while a prompt shows (docs/HOST.md, "pbx-broker's lines").
 */
#define _GNU_SOURCE
#include "peers/broker/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The broker's lines: at most BS_BURST at once, then one per
 * BS_PERIOD_MS (pbx_broker_say). */
#define BS_BURST     16U
#define BS_PERIOD_MS 1000U
/* The writes one line may take (a terminal may take part of it). */
#define BS_WRITES_MAX 64U

/* The rate of the broker's lines (pbx_broker_say_limit). */
static struct {
    uint32_t burst;
    uint32_t period_ms;
    uint32_t tokens;
    uint32_t suppressed;
    uint64_t last;
    bool started;
} bs_rate = {BS_BURST, BS_PERIOD_MS, 0U, 0U, 0U, false};

void pbx_broker_say_limit(uint32_t burst, uint32_t period_ms)
{
    bs_rate.burst = burst;
    bs_rate.period_ms = period_ms > 0U ? period_ms : 1U;
    bs_rate.tokens = burst;
    bs_rate.suppressed = 0U;
    bs_rate.last = pbx_broker_now_ms();
    bs_rate.started = true;
}

/* Counts one line that was not written. */
static void bs_count(void)
{
    if (bs_rate.suppressed < UINT32_MAX) {
        bs_rate.suppressed++;
    }
}

/* Takes one line from the rate; false when the line is to be suppressed
 * (counted). The bucket refills one line per period, up to the burst. */
static bool bs_take(void)
{
    uint64_t now = pbx_broker_now_ms();
    if (!bs_rate.started) {
        pbx_broker_say_limit(bs_rate.burst, bs_rate.period_ms);
    }
    uint64_t add = (now - bs_rate.last) / bs_rate.period_ms;
    if (add > 0U) {
        uint64_t t = bs_rate.tokens + add;
        bs_rate.tokens = t > bs_rate.burst ? bs_rate.burst : (uint32_t)t;
        bs_rate.last += add * bs_rate.period_ms;
    }
    if (bs_rate.tokens == 0U) {
        bs_count();
        return false;
    }
    bs_rate.tokens--;
    return true;
}

/* Writes p[0..n) to standard error; false when it would block (the job's
 * pty is full while the relay holds it: the broker never waits on the
 * job's terminal) or failed, the rest then dropped. */
static bool bs_write(const char *p, size_t n)
{
    for (uint32_t k = 0; k < BS_WRITES_MAX && n > 0U; k++) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return n == 0U;
}

void pbx_broker_say_flush(void)
{
    if (bs_rate.suppressed == 0U) {
        return;
    }
    char line[160];
    int n = snprintf(line, sizeof(line),
                     "pbx-broker: %u line(s) suppressed (at most %u at once, "
                     "then one per %u ms)\n",
                     bs_rate.suppressed, bs_rate.burst, bs_rate.period_ms);
    /* A count that was not written stays, for the next line's turn. */
    if (n > 0 && bs_write(line, (size_t)n)) {
        bs_rate.suppressed = 0U;
    }
}

void pbx_broker_say(const char *fmt, ...)
{
    if (!bs_take()) {
        return;
    }
    pbx_broker_say_flush();
    char raw[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    if (n < 0) {
        return;
    }
    size_t len = strlen(raw);
    /* Four output bytes at most per input byte. */
    char out[sizeof(raw) * 4U];
    size_t o = 0;
    for (size_t k = 0; k < len; k++) {
        unsigned char b = (unsigned char)raw[k];
        bool last_newline = b == '\n' && k + 1U == len;
        if ((b < 0x20U && !last_newline) || b >= 0x7fU) {
            o += (size_t)snprintf(out + o, sizeof(out) - o, "\\x%02x", b);
        } else {
            out[o++] = (char)b;
        }
    }
    if (!bs_write(out, o)) {
        bs_count();
    }
}

int pbx_broker_say_adopt(int fd)
{
    int own = -1;
    if (isatty(fd) == 1) {
        /* A file description of the broker's own, non-blocking: the
         * job's flags stay as they are, and a full pty never stalls the
         * broker. */
        char path[64];
        (void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
        own = open(path, O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    }
    /* Without its own description the job's (blocking) one still goes
     * where the job's output goes: never back to the terminal. */
    int use = own >= 0 ? own : fd;
    int r = dup2(use, STDERR_FILENO) == STDERR_FILENO &&
                    dup2(use, STDOUT_FILENO) == STDOUT_FILENO
                ? 0
                : -1;
    if (own >= 0) {
        (void)close(own);
    }
    if (fd > STDERR_FILENO) {
        (void)close(fd);
    }
    return r;
}
