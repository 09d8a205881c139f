/*
 * test_peers_launchd_index.c: launchd's indexes (launchd_index.c) against
 * walks of the tables they index. The call slots taken and freed in any
 * order keep a free stack of exactly the unused slots and a seq that
 * names its slot; jobs made live, ended, exited and dropped in any order
 * (ids and pids chosen to collide in the hash tables) are found by id and
 * pid exactly as a walk finds them, and orphans by request id; each
 * connection's count of launched jobs follows launches, EXITs and generation
 * moves; and launchd_index_check, which the e2e runner has launchd run after
 * every loop pass, reports each kind of drift it exists to catch.
 */
#include "../../peers/launchd/launchd.h"
#include "../runner/pbx_test.h"

#include <string.h>

static launchd_srv g_s;

/* A small deterministic generator (xorshift32). */
static uint32_t ti_next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* A fresh launchd state as serve starts it (every connection free). */
static void ti_reset(void)
{
    memset(&g_s, 0, sizeof(g_s));
    launchd_index_init(&g_s);
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        g_s.conns[i].fd = -1;
    }
}

/* The live job slot of job_id by walking, or -1. */
static int ti_walk_id(uint64_t job_id)
{
    for (uint32_t j = 0; j < LAUNCHD_JOBS_CAP; j++) {
        if (g_s.jobs[j].live && g_s.jobs[j].bind.job_id == job_id) {
            return (int)j;
        }
    }
    return -1;
}

/* The running job slot of pid by walking, or -1. */
static int ti_walk_pid(pid_t pid)
{
    for (uint32_t j = 0; j < LAUNCHD_JOBS_CAP; j++) {
        if (g_s.jobs[j].live && !g_s.jobs[j].ending && g_s.jobs[j].pid == pid) {
            return (int)j;
        }
    }
    return -1;
}

PBX_TEST(peers_launchd_index_call_seq_names_its_slot)
{
    ti_reset();
    static bool seen[LAUNCHD_CALLS_MAX];
    memset(seen, 0, sizeof(seen));
    /* Every slot can be taken, once, each seq naming its own slot. */
    for (uint32_t i = 0; i < LAUNCHD_CALLS_MAX; i++) {
        launchd_call *k = launchd_call_take(&g_s);
        PBX_REQUIRE(k != NULL);
        uint32_t slot = (uint32_t)(k - g_s.calls);
        PBX_CHECK(!seen[slot] && k->used && k->seq != 0U);
        PBX_CHECK_EQ(k->seq % LAUNCHD_CALLS_MAX, slot);
        PBX_CHECK(launchd_call_by_seq(&g_s, k->seq) == k);
        seen[slot] = true;
    }
    PBX_CHECK(launchd_call_take(&g_s) == NULL);
    PBX_CHECK_EQ(g_s.ncalls, LAUNCHD_CALLS_MAX);
    PBX_CHECK(launchd_index_check(&g_s) == NULL);
    /* A freed call's seq no longer matches; its slot's next seq differs
     * (a late reply to the old call is unmatched). */
    launchd_call *k = &g_s.calls[7];
    uint32_t old = k->seq;
    launchd_call_free(&g_s, k);
    PBX_CHECK(launchd_call_by_seq(&g_s, old) == NULL);
    PBX_CHECK(launchd_call_take(&g_s) == k);
    PBX_CHECK(k->seq != old && launchd_call_by_seq(&g_s, old) == NULL);
    PBX_CHECK(launchd_call_by_seq(&g_s, 0U) == NULL);
    /* Freeing twice counts off once. */
    launchd_call_free(&g_s, k);
    launchd_call_free(&g_s, k);
    PBX_CHECK_EQ(g_s.ncalls, LAUNCHD_CALLS_MAX - 1U);
    PBX_CHECK(launchd_index_check(&g_s) == NULL);
}

PBX_TEST(peers_launchd_index_calls_in_any_order)
{
    ti_reset();
    uint32_t seed = 0x1234567U;
    /* Each slot's seq wraps inside the run: a seq must still name its
     * slot and never be 0. */
    for (uint32_t i = 0; i < LAUNCHD_CALLS_MAX; i++) {
        g_s.calls[i].seq = (uint32_t)(0U - 4U * LAUNCHD_CALLS_MAX) + i;
    }
    for (uint32_t step = 0; step < 20000U; step++) {
        uint32_t r = ti_next(&seed);
        launchd_call *k = &g_s.calls[r % LAUNCHD_CALLS_MAX];
        if ((r >> 12) % 3U != 0U) {
            k = launchd_call_take(&g_s);
            PBX_REQUIRE(k != NULL || g_s.ncalls == LAUNCHD_CALLS_MAX);
        } else {
            launchd_call_free(&g_s, k);
        }
        if (step % 97U == 0U) {
            PBX_REQUIRE(launchd_index_check(&g_s) == NULL);
        }
    }
    PBX_CHECK(launchd_index_check(&g_s) == NULL);
    for (uint32_t i = 0; i < LAUNCHD_CALLS_MAX; i++) {
        const launchd_call *k = &g_s.calls[i];
        PBX_CHECK(!k->used || launchd_call_by_seq(&g_s, k->seq) == k);
    }
}

/* Makes job slot ji live as launchd_launch does: id, pid, launcher. */
static void ti_launch(uint32_t ji, uint64_t id, pid_t pid, uint32_t ci)
{
    launchd_job *j = &g_s.jobs[ji];
    memset(j, 0, sizeof(*j));
    j->bind.job_id = id;
    j->bind.job_gen = 1U;
    j->pid = pid;
    j->launcher = ci;
    j->launcher_gen = g_s.conns[ci].gen;
    j->live = true;
    launchd_job_indexed(&g_s, ji);
}

/* One random step on job slot ji, as launchd_jobs.c steps a job: launch
 * a free slot, end a running job, send an ending job's EXIT, drop an
 * exited one; or close (a generation move of) its launcher. */
static void ti_job_step(uint32_t ji, uint32_t r)
{
    launchd_job *j = &g_s.jobs[ji];
    /* Ids and pids from small ranges, spread by a stride: many share
     * a home bucket or a probe run. */
    uint64_t id = 11U + (uint64_t)(r % 700U) * (uint64_t)LAUNCHD_JOB_HASH;
    pid_t pid = (pid_t)(100 + (int)((r >> 10) % 900U));
    uint32_t ci = (r >> 20) % 4U;
    if ((r >> 24) % 16U == 0U) {
        /* launchd_conn_close: the generation moves, the count resets. */
        g_s.conns[ci].gen++;
        g_s.conns[ci].launched = 0U;
    } else if (!j->live) {
        if (ti_walk_id(id) < 0 && ti_walk_pid(pid) < 0) {
            ti_launch(ji, id, pid, ci);
        }
    } else if (!j->ending) {
        launchd_job_index_ended(&g_s, ji);
        j->ending = true;
    } else if (!j->exit_sent) {
        j->exit_sent = true;
        launchd_job_index_exit(&g_s, ji);
    } else {
        launchd_job_index_drop(&g_s, ji);
        j->live = false;
        j->ending = false;
    }
}

PBX_TEST(peers_launchd_index_jobs_found_as_a_walk_finds_them)
{
    ti_reset();
    uint32_t seed = 0xC0FFEEU;
    for (uint32_t step = 0; step < 60000U; step++) {
        uint32_t r = ti_next(&seed);
        ti_job_step(ti_next(&seed) % LAUNCHD_JOBS_CAP, r);
        if (step % 61U != 0U) {
            continue;
        }
        PBX_REQUIRE(launchd_index_check(&g_s) == NULL);
        /* Lookups of keys present and absent agree with the walk. */
        uint64_t id = 11U + (uint64_t)(r % 700U) * (uint64_t)LAUNCHD_JOB_HASH;
        pid_t pid = (pid_t)(100 + (int)((r >> 10) % 900U));
        PBX_CHECK_EQ(launchd_job_by_id(&g_s, id), ti_walk_id(id));
        PBX_CHECK_EQ(launchd_job_by_pid(&g_s, pid), ti_walk_pid(pid));
    }
    /* The run filled the tables enough to probe past collisions. */
    uint32_t live = 0;
    for (uint32_t j = 0; j < LAUNCHD_JOBS_CAP; j++) {
        live += g_s.jobs[j].live ? 1U : 0U;
    }
    PBX_CHECK(live > LAUNCHD_JOBS_CAP / 4U);
    PBX_CHECK(launchd_index_check(&g_s) == NULL);
}

/* The used orphan of request id by walking, or NULL. */
static launchd_orphan *ti_walk_orphan(pbx_ipc_id id)
{
    for (uint32_t i = 0; i < LAUNCHD_ORPHANS_MAX; i++) {
        launchd_orphan *o = &g_s.orphans[i];
        if (o->used && o->id.index == id.index && o->id.gen == id.gen) {
            return o;
        }
    }
    return NULL;
}

PBX_TEST(peers_launchd_index_orphans_found_as_a_walk_finds_them)
{
    ti_reset();
    uint32_t seed = 0xBADC0DEU;
    uint32_t most = 0;
    for (uint32_t step = 0; step < 60000U; step++) {
        uint32_t r = ti_next(&seed);
        /* Request ids from a small range: many collide. */
        pbx_ipc_id id = {r % 900U, 1U + (r >> 10) % 3U};
        launchd_orphan *o = &g_s.orphans[(r >> 16) % LAUNCHD_ORPHANS_MAX];
        if ((r >> 28) % 3U != 0U) {
            /* As launchd_orphan_add: a request not yet taken over. */
            if (!o->used && ti_walk_orphan(id) == NULL) {
                o->used = true;
                o->id = id;
                launchd_orphan_indexed(&g_s, (uint32_t)(o - g_s.orphans));
            }
        } else if (o->used) {
            launchd_orphan_index_drop(&g_s, (uint32_t)(o - g_s.orphans));
            o->used = false;
        }
        PBX_CHECK(launchd_orphan_by_id(&g_s, id) == ti_walk_orphan(id));
        if (step % 61U == 0U) {
            PBX_REQUIRE(launchd_index_check(&g_s) == NULL);
        }
        uint32_t n = 0;
        for (uint32_t i = 0; i < LAUNCHD_ORPHANS_MAX && step % 997U == 0U;
             i++) {
            n += g_s.orphans[i].used ? 1U : 0U;
        }
        most = n > most ? n : most;
    }
    PBX_CHECK(most > LAUNCHD_ORPHANS_MAX / 4U);
    PBX_CHECK(launchd_index_check(&g_s) == NULL);
    /* An orphan no longer used but still indexed is a drift. */
    for (uint32_t i = 0; i < LAUNCHD_ORPHANS_MAX; i++) {
        if (g_s.orphans[i].used) {
            g_s.orphans[i].used = false;
            PBX_CHECK(launchd_index_check(&g_s) != NULL);
            g_s.orphans[i].used = true;
            break;
        }
    }
}

PBX_TEST(peers_launchd_index_launcher_count_follows_exit_and_gen)
{
    ti_reset();
    ti_launch(0, 11U, 500, 3U);
    ti_launch(1, 12U, 501, 3U);
    PBX_CHECK(launchd_is_launcher(&g_s, 3U) && !launchd_is_launcher(&g_s, 4U));
    g_s.jobs[0].exit_sent = true;
    launchd_job_index_exit(&g_s, 0U);
    PBX_CHECK(launchd_is_launcher(&g_s, 3U));
    /* The connection closes: its old jobs no longer count, and their
     * EXIT later does not count off the slot's next connection. */
    g_s.conns[3].gen++;
    g_s.conns[3].launched = 0U;
    ti_launch(2, 13U, 502, 3U);
    g_s.jobs[1].exit_sent = true;
    launchd_job_index_exit(&g_s, 1U);
    PBX_CHECK_EQ(g_s.conns[3].launched, 1U);
    PBX_CHECK(launchd_index_check(&g_s) == NULL);
}

PBX_TEST(peers_launchd_index_check_reports_each_drift)
{
    ti_reset();
    ti_launch(0, 11U, 500, 3U);
    ti_launch(1, 11U + LAUNCHD_JOB_HASH, 500 + (pid_t)LAUNCHD_JOB_HASH, 3U);
    launchd_call *k = launchd_call_take(&g_s);
    PBX_REQUIRE(k != NULL && launchd_index_check(&g_s) == NULL);
    /* A call marked used behind the stack's back. */
    g_s.calls[9].used = true;
    PBX_CHECK(launchd_index_check(&g_s) != NULL);
    g_s.calls[9].used = false;
    /* A seq that does not name its slot. */
    k->seq += 1U;
    PBX_CHECK(launchd_index_check(&g_s) != NULL);
    k->seq -= 1U;
    /* A launch the count missed. */
    g_s.conns[3].launched--;
    PBX_CHECK(launchd_index_check(&g_s) != NULL);
    g_s.conns[3].launched++;
    /* A job whose process exited without leaving the pid table. */
    g_s.jobs[1].ending = true;
    PBX_CHECK(launchd_index_check(&g_s) != NULL);
    launchd_job_index_ended(&g_s, 1U);
    PBX_CHECK(launchd_index_check(&g_s) == NULL);
    /* A job no longer live but still in the id table. */
    g_s.jobs[0].live = false;
    PBX_CHECK(launchd_index_check(&g_s) != NULL);
    g_s.jobs[0].live = true;
    PBX_CHECK(launchd_index_check(&g_s) == NULL);
}
