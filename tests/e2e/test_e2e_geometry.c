/*
 * test_e2e_geometry.c: `pbx geometry check` accepts exactly the PBX1
 * records the real powerboxd binary accepts at startup. Over 240 seeded
 * random geometries, boundary values included (transient slots around
 * the core's minimum of 11 and the runtime's 4016, capacity 1 and each
 * pool's maximum, several page sizes, call windows and deadlines, a
 * spoiled layout, an arena one page too long or too short), each record
 * is judged by the pbx binary (PBX_BIN) and by powerboxd (PBX_POWERBOXD)
 * started on a good inventory as the harness starts it: check says "ok"
 * exactly when powerboxd reports ready, and when both refuse, the exit
 * status check names is the one powerboxd exits with.
 */
#define _GNU_SOURCE
#include "../runner/pbx_test.h"
#include "e2e_harness.h"

#include "bootstrap/pbx_bootstrap.h"
#include "core/pbx_core_layout.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/** Records judged by both (records the encoder refuses are not). */
#define GEO_RECORDS 240
/** Arenas above this are not started (memory on a shared machine); a
 * record is then drawn again. */
#define GEO_ARENA_MAX (32ULL << 20)

/* xorshift64: the seeded generator. */
static uint64_t geo_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A value in [lo, hi]. */
static uint32_t geo_range(uint64_t *s, uint32_t lo, uint32_t hi)
{
    return lo + (uint32_t)(geo_next(s) % ((uint64_t)hi - lo + 1U));
}

/* A transient-slots capacity, mostly at the two startup boundaries. */
static uint32_t geo_tslots(uint64_t *s)
{
    static const uint32_t edge[] = {1U,    10U,   11U,   12U,   100U,
                                    4015U, 4016U, 4017U, 4018U, 65536U};
    if (geo_next(s) % 3U != 0U) {
        return edge[geo_next(s) % (sizeof(edge) / sizeof(edge[0]))];
    }
    return geo_range(s, 1U, 4200U);
}

/* Draws geometry g (valid or not for the encoder) from s. */
static void geo_draw(uint64_t *s, pbx_bootstrap_geometry *g)
{
    static const uint32_t pages[] = {4096U, 4096U, 8192U, 65536U, 1U << 20};
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = pages[geo_next(s) % 5U];
    pbx_core_pool_layouts(g->layout);
    for (uint32_t i = 0; i < (uint32_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        uint32_t max = pbx_bootstrap_capacity_max((pbx_bootstrap_pool)i);
        uint64_t pick = geo_next(s) % 16U;
        g->capacity[i] = pick == 0U   ? 1U
                         : pick == 1U ? max
                                      : geo_range(s, 1U, 64U);
    }
    g->capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        geo_next(s) % 8U == 0U ? 64U : geo_range(s, 64U, 65536U);
    g->capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] = geo_tslots(s);
    g->call_window = geo_range(s, 1U, 8U);
    g->capacity[PBX_BOOTSTRAP_POOL_CALLS] =
        g->call_window * PBX_BOOTSTRAP_CALL_ROUTES + geo_range(s, 0U, 4U);
    for (uint32_t t = 0; t < (uint32_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g->time_ms[t] = geo_next(s) % 8U == 0U ? PBX_BOOTSTRAP_TIME_MS_MAX
                                               : geo_range(s, 1U, 60000U);
    }
    (void)pbx_bootstrap_pages_compute(g, &g->arena_page_count);
    uint64_t spoil = geo_next(s) % 16U;
    if (spoil == 0U) {
        g->layout[PBX_BOOTSTRAP_POOL_GRANTS].record_size_bytes += 8U;
    } else if (spoil == 1U) {
        g->arena_page_count++;
    } else if (spoil == 2U && g->arena_page_count > 1U) {
        g->arena_page_count--;
    }
}

/* `pbx geometry check path`: its exit status, and the powerboxd exit
 * status its message names (0 when it names none). */
static int geo_check(const char *path, int *named)
{
    int err[2];
    int st = -1;
    char msg[512] = "";
    *named = 0;
    if (pipe2(err, O_CLOEXEC) != 0) {
        return -1;
    }
    const char *bin = getenv("PBX_BIN");
    if (bin == NULL) {
        (void)close(err[0]);
        (void)close(err[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        (void)dup2(null, 1);
        (void)dup2(err[1], 2);
        execl(bin, "pbx", "geometry", "check", path, (char *)NULL);
        _exit(127);
    }
    (void)close(err[1]);
    ssize_t n = pid > 0 ? read(err[0], msg, sizeof(msg) - 1U) : -1;
    msg[n > 0 ? n : 0] = '\0';
    (void)close(err[0]);
    if (pid > 0 && waitpid(pid, &st, 0) == pid) {
        st = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    const char *at = strstr(msg, "(exit status ");
    if (at != NULL) {
        *named = (int)strtol(at + strlen("(exit status "), NULL, 10);
    }
    return st;
}

/* Starts powerboxd with record rec in slot 3: 0 when it reported ready
 * (then it is stopped), else its exit status (negative: neither). */
static int geo_powerboxd(const uint8_t *rec, size_t len)
{
    e2e_proc p;
    if (!e2e_prepare(&p, E2E_PBX1_GOOD)) {
        return -100;
    }
    (void)close(p.theirs[0]);
    p.theirs[0] = e2e_pbx1_fd(rec, len);
    if (p.theirs[0] < 0 || !e2e_start(&p)) {
        e2e_close(&p);
        return -101;
    }
    int result = -102;
    /* Ready (a readiness datagram) or an exit, whichever comes first,
     * within 10 s. */
    for (int i = 0; i < 1000 && result == -102; i++) {
        struct pollfd pf = {p.supervisor, POLLIN, 0};
        int st = 0;
        if (poll(&pf, 1, 10) == 1 && (pf.revents & POLLIN) != 0) {
            result = e2e_wait_ready(&p) ? 0 : -103;
        } else if (waitpid(p.pid, &st, WNOHANG) == p.pid) {
            p.pid = 0;
            result = WIFEXITED(st) ? WEXITSTATUS(st) : -104;
        }
    }
    e2e_close(&p);
    return result;
}

PBX_TEST(e2e_geometry_check_accepts_exactly_what_powerboxd_accepts)
{
    uint64_t seed = 0x9E3779B97F4A7C15ULL;
    int judged = 0;
    int accepted = 0;
    int refused[32] = {0};
    char path[] = "/tmp/pbx-e2e-geometry-XXXXXX";
    int fd = mkstemp(path);
    PBX_REQUIRE(fd >= 0);
    PBX_REQUIRE(getenv("PBX_BIN") != NULL && getenv("PBX_POWERBOXD") != NULL);
    /* Bounded: at most 20 draws per judged record. */
    for (int draw = 0; draw < 20 * GEO_RECORDS && judged < GEO_RECORDS;
         draw++) {
        pbx_bootstrap_geometry g;
        uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
        geo_draw(&seed, &g);
        if ((uint64_t)g.arena_page_count * g.page_size_bytes > GEO_ARENA_MAX ||
            pbx_bootstrap_encode(&g, rec, sizeof(rec)) != PBX_OK) {
            continue;
        }
        PBX_REQUIRE(pwrite(fd, rec, sizeof(rec), 0) == (ssize_t)sizeof(rec));
        int named = 0;
        int check = geo_check(path, &named);
        int run = geo_powerboxd(rec, sizeof(rec));
        PBX_CHECK(check == 0 || check == 1);
        PBX_CHECK(run >= 0);
        PBX_CHECK_EQ(check == 0, run == 0);
        if (check == 1 && run > 0) {
            PBX_CHECK_EQ(named, run);
        }
        if (check != (run == 0 ? 0 : 1)) {
            (void)fprintf(stderr, "  record %d: check %d, powerboxd %d\n",
                          judged, check, run);
        }
        accepted += run == 0 ? 1 : 0;
        refused[run > 0 && run < 32 ? run : 0] += run > 0 ? 1 : 0;
        judged++;
    }
    (void)close(fd);
    (void)unlink(path);
    PBX_CHECK_EQ(judged, GEO_RECORDS);
    /* Both answers, and each refusal the check shares, were exercised. */
    PBX_CHECK(accepted >= 20);
    PBX_CHECK(refused[17] > 0 && refused[18] > 0 && refused[19] > 0 &&
              refused[29] > 0);
    (void)fprintf(stderr,
                  "  %d records: %d accepted, refused 17:%d 18:%d 19:%d "
                  "29:%d\n",
                  judged, accepted, refused[17], refused[18], refused[19],
                  refused[29]);
}
