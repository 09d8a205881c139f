/*
 * test_peers_launchd_timer.c: launchd's timer heap (launchd_timer.c)
 * against a plain table of deadlines: whatever is armed, moved or unarmed,
 * pop returns exactly the handles due, earliest first, and wait says how
 * long poll may sleep.
 */
#include "../../peers/launchd/launchd.h"
#include "../runner/pbx_test.h"

#include <string.h>

static launchd_theap g_t;
/* The model: each handle's deadline, UINT64_MAX when unarmed. */
static uint64_t g_due[LAUNCHD_TIMERS];

/* A small deterministic generator (xorshift32). */
static uint32_t tt_next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* The model's earliest deadline (UINT64_MAX: none armed). */
static uint64_t tt_earliest(void)
{
    uint64_t m = UINT64_MAX;
    for (uint32_t h = 0; h < LAUNCHD_TIMERS; h++) {
        m = g_due[h] < m ? g_due[h] : m;
    }
    return m;
}

/* Pops everything due at now from both; they must agree, in order. */
static void tt_pop_due(uint64_t now)
{
    uint64_t last = 0;
    for (uint32_t i = 0; i <= LAUNCHD_TIMERS; i++) {
        uint32_t h = launchd_timer_pop(&g_t, now);
        /* LAUNCHD_TIMERS: nothing is due (never a handle past it). */
        if (h >= LAUNCHD_TIMERS) {
            PBX_CHECK_EQ(h, LAUNCHD_TIMERS);
            break;
        }
        PBX_CHECK(g_due[h] <= now && g_due[h] >= last);
        last = g_due[h];
        g_due[h] = UINT64_MAX;
    }
    PBX_CHECK(tt_earliest() > now);
}

PBX_TEST(peers_launchd_timer_pops_exactly_what_is_due_in_order)
{
    memset(&g_t, 0, sizeof(g_t));
    for (uint32_t h = 0; h < LAUNCHD_TIMERS; h++) {
        g_due[h] = UINT64_MAX;
    }
    PBX_CHECK_EQ(launchd_timer_wait(&g_t, 0, 100), 100);
    PBX_CHECK_EQ(launchd_timer_pop(&g_t, UINT64_MAX - 1U), LAUNCHD_TIMERS);
    uint32_t seed = 0x2545F491U;
    uint64_t now = 1000;
    for (uint32_t round = 0; round < 400; round++) {
        /* Arm, move or unarm some handles; every handle can be touched,
         * the whole table included. */
        for (uint32_t k = 0; k < 40; k++) {
            uint32_t h = tt_next(&seed) % LAUNCHD_TIMERS;
            uint32_t r = tt_next(&seed);
            uint64_t due = r % 5U == 0U ? UINT64_MAX : now + r % 700U;
            launchd_timer_set(&g_t, h, due);
            g_due[h] = due;
        }
        uint64_t m = tt_earliest();
        int want = m == UINT64_MAX  ? 100
                   : m <= now       ? 0
                   : m - now < 100U ? (int)(m - now)
                                    : 100;
        PBX_CHECK_EQ(launchd_timer_wait(&g_t, now, 100), want);
        now += tt_next(&seed) % 60U;
        tt_pop_due(now);
    }
    /* Filled: every handle armed at once, then drained in order. */
    for (uint32_t h = 0; h < LAUNCHD_TIMERS; h++) {
        g_due[h] = now + 1U + (uint64_t)((h * 7919U) % 1000U);
        launchd_timer_set(&g_t, h, g_due[h]);
    }
    PBX_CHECK_EQ(g_t.n, LAUNCHD_TIMERS);
    tt_pop_due(now + 2000U);
    PBX_CHECK_EQ(g_t.n, 0U);
    /* A handle out of range is ignored. */
    launchd_timer_set(&g_t, LAUNCHD_TIMERS, now);
    PBX_CHECK_EQ(g_t.n, 0U);
}
