/*
 * test_peers_broker_say.c: where pbx-broker's lines go
 * (peers/broker/broker_say.c; docs/HOST.md "pbx-broker's lines"). The
 * job's stderr handed over with the listener becomes the broker's; a
 * pty slave is reopened non-blocking, so the lines go into the pty (the
 * relay holds them there) and a full pty drops a line, counted, instead
 * of stalling the broker. Each test puts this process's stdout and
 * stderr back afterwards.
 */
#define _GNU_SOURCE
#include "../../peers/broker/broker.h"
#include "../runner/pbx_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Lines said into a full pty: far beyond what a pty buffers. */
#define TS_LINES 4000U
/* How long a read of the master waits for bytes (generous). */
#define TS_WAIT_MS 10000

/* This process's stdout and stderr, kept while a test moves them. */
typedef struct ts_saved {
    int out;
    int err;
} ts_saved;

/* Opens a pty into *master (non-blocking) and *slave; false when none. */
static bool ts_pty(int *master, int *slave)
{
    *master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    const char *name = NULL;
    if (*master >= 0 && grantpt(*master) == 0 && unlockpt(*master) == 0) {
        name = ptsname(*master);
    }
    *slave = name != NULL ? open(name, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
    if (*master >= 0) {
        (void)fcntl(*master, F_SETFL, O_NONBLOCK);
    }
    return *slave >= 0;
}

static ts_saved ts_save(void)
{
    (void)fflush(stdout);
    (void)fflush(stderr);
    ts_saved s = {dup(STDOUT_FILENO), dup(STDERR_FILENO)};
    return s;
}

static void ts_restore(ts_saved s)
{
    (void)dup2(s.out, STDOUT_FILENO);
    (void)dup2(s.err, STDERR_FILENO);
    (void)close(s.out);
    (void)close(s.err);
}

/* Reads what master has into out (cap bytes, NUL-terminated) until it
 * holds want or TS_WAIT_MS pass without a byte; the length. */
static size_t ts_drain(int master, char *out, size_t cap, const char *want)
{
    size_t n = 0;
    out[0] = '\0';
    for (uint32_t k = 0; k < 100000U && n + 1U < cap; k++) {
        if (want != NULL && strstr(out, want) != NULL) {
            break;
        }
        ssize_t r = read(master, out + n, cap - 1U - n);
        if (r > 0) {
            n += (size_t)r;
            out[n] = '\0';
            continue;
        }
        struct pollfd p = {master, POLLIN, 0};
        if (r < 0 && errno == EAGAIN &&
            poll(&p, 1U, want != NULL ? TS_WAIT_MS : 0) > 0) {
            continue;
        }
        break;
    }
    return n;
}

/* The slave handed over becomes the broker's stdout and stderr as a
 * description of its own: non-blocking there, while the job's own (the
 * slave as handed) keeps its flags; a line said arrives at the master. */
PBX_TEST(peers_broker_lines_go_into_the_handed_pty)
{
    int master = -1;
    int slave = -1;
    PBX_REQUIRE(ts_pty(&master, &slave));
    ts_saved s = ts_save();
    PBX_REQUIRE(pbx_broker_say_adopt(dup(slave)) == 0);
    int err_fl = fcntl(STDERR_FILENO, F_GETFL);
    int out_fl = fcntl(STDOUT_FILENO, F_GETFL);
    pbx_broker_say_limit(16U, 1000U);
    pbx_broker_say("pbx-broker: /x\x1b[2J: refused\n");
    ts_restore(s);
    PBX_CHECK((err_fl & O_NONBLOCK) != 0);
    PBX_CHECK((out_fl & O_NONBLOCK) != 0);
    PBX_CHECK((fcntl(slave, F_GETFL) & O_NONBLOCK) == 0);
    static char got[4096];
    (void)ts_drain(master, got, sizeof(got), "refused");
    PBX_CHECK(strstr(got, "pbx-broker: /x\\x1b[2J: refused") != NULL);
    (void)close(slave);
    (void)close(master);
}

/* The complete filler lines in text (*lines) and the sum of the counts
 * of its complete "suppressed" lines (*counted). A line the pty took
 * only in part is one the broker counted as suppressed. */
static void ts_tally(const char *text, uint32_t *lines, uint32_t *counted)
{
    static const char end[] = "reads it ..........\r\n";
    static const char said[] = " line(s) suppressed (at most 4001 at once, "
                               "then one per 3600000 ms)\r\n";
    for (const char *p = strstr(text, end); p != NULL; p = strstr(p + 1, end)) {
        (*lines)++;
    }
    for (const char *p = strstr(text, "pbx-broker: "); p != NULL;
         p = strstr(p + 1, "pbx-broker: ")) {
        char *after = NULL;
        unsigned long n = strtoul(p + 12, &after, 10);
        if (after != p + 12 && strncmp(after, said, sizeof(said) - 1U) == 0) {
            *counted += (uint32_t)n;
        }
    }
}

/* A pty nobody reads (the relay holding it) fills: the broker's lines
 * then never block it (the test would hang); every line is either
 * written whole or counted, some are counted, and the count is written
 * once the pty has room again. */
PBX_TEST(peers_broker_lines_into_a_full_pty_are_dropped_and_counted)
{
    int master = -1;
    int slave = -1;
    PBX_REQUIRE(ts_pty(&master, &slave));
    ts_saved s = ts_save();
    PBX_REQUIRE(pbx_broker_say_adopt(dup(slave)) == 0);
    if ((fcntl(STDERR_FILENO, F_GETFL) & O_NONBLOCK) == 0) {
        /* A blocking stderr would stall this test on the full pty. */
        ts_restore(s);
        PBX_REQUIRE(false);
    }
    pbx_broker_say_limit(TS_LINES + 1U, 3600000U);
    for (uint32_t i = 0; i < TS_LINES; i++) {
        pbx_broker_say("pbx-broker: line %04u of the filler that fills "
                       "the pty while nobody reads it ..........\n",
                       i);
    }
    static char got[1U << 20];
    (void)ts_drain(master, got, sizeof(got), NULL);
    pbx_broker_say_flush();
    ts_restore(s);
    static char tail[4096];
    (void)ts_drain(master, tail, sizeof(tail), "ms)\r\n");
    uint32_t lines = 0;
    uint32_t counted = 0;
    ts_tally(got, &lines, &counted);
    uint32_t before = counted;
    ts_tally(tail, &lines, &counted);
    PBX_CHECK(lines > 0U);
    PBX_CHECK(counted > before);
    PBX_CHECK_EQ(lines + counted, TS_LINES);
    pbx_broker_say_limit(16U, 1000U); /* the defaults, for the next test */
    (void)close(slave);
    (void)close(master);
}
