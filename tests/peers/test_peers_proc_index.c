/*
 * test_peers_proc_index.c: procd's install indexes (pbx_peer_proc_index.c)
 * and hung list (procd_hung.c) against plain walks of the rows. Random
 * INSTALLs, revocations, stages and hang-ups over a few colliding keys
 * (a small table, so grants, targets and process ids share buckets and
 * probe runs) decide exactly as a walk decides, find exactly the rows a
 * walk finds, and leave pbx_peer_procix_check and procd_index_check,
 * which procd runs after every round under PBX_PROCD_CHECK_INDEX, with
 * nothing to report; each kind of drift those checks exist to catch is
 * reported.
 */
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_proc.h"
#include "../../peers/procd/procd.h"
#include "../runner/pbx_test.h"

#include <string.h>

/* procd_hung.c works on procd's one state; the test gives it one. */
procd g_procd;

/* The table the tests use: small, so keys collide. */
#define PI_CAP 8U
/* The keys drawn: few, so INSTALLs conflict and reuse keys. */
#define PI_PIDS   10U
#define PI_SLOTS  3U
#define PI_GRANTS 6U

/* A small deterministic generator (xorshift32). */
static uint32_t pi_next(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* An INSTALL of a random key (pids 1..PI_PIDS at gen 1, so sometimes
 * an unstaged one or a wrong generation). */
static pbx_ipc_install pi_install(uint32_t *s)
{
    pbx_ipc_install rq;
    memset(&rq, 0, sizeof(rq));
    rq.target.process_id = 1U + pi_next(s) % (PI_PIDS + 1U);
    rq.target.process_gen = pi_next(s) % 8U == 0U ? 2U : 1U;
    rq.target.slot = pi_next(s) % PI_SLOTS;
    rq.grant.index = pi_next(s) % PI_GRANTS;
    rq.grant.gen = 1U + pi_next(s) % 2U;
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.lifetime = PBX_IPC_LIFETIME_JOB;
    return rq;
}

/* What install_check must say, by walking every row. */
static uint32_t pi_walk_check(const pbx_peer_proctab *t,
                              const pbx_ipc_install *rq)
{
    bool staged = false;
    for (size_t i = 0; i < t->staged_count; i++) {
        if (t->staged[i].process_id == rq->target.process_id) {
            staged = true;
            if (t->staged[i].process_gen != rq->target.process_gen) {
                return PBX_PEER_E_MISMATCH;
            }
        }
    }
    if (!staged) {
        return PBX_PEER_E_UNKNOWN;
    }
    bool grant = false;
    bool slot = false;
    bool room = false;
    for (size_t i = 0; i < t->cap; i++) {
        const pbx_peer_install_row *r = &t->rows[i];
        room = room || !r->live;
        grant = grant || (r->live && r->grant.index == rq->grant.index &&
                          r->grant.gen == rq->grant.gen);
        slot =
            slot || (r->live && r->target.process_id == rq->target.process_id &&
                     r->target.slot == rq->target.slot);
    }
    return grant  ? PBX_PEER_E_CONFLICT
           : slot ? PBX_PEER_E_SLOT
           : room ? 0U
                  : PBX_PEER_E_BUSY;
}

/* Whether every lookup over the whole small key space finds what a walk
 * finds, the live count is the walk's, and the check sees no drift. */
static bool pi_agree(const pbx_peer_proctab *t)
{
    size_t live = 0;
    for (size_t i = 0; i < t->cap; i++) {
        live += t->rows[i].live ? 1U : 0U;
    }
    bool ok =
        pbx_peer_proctab_live(t) == live && pbx_peer_procix_check(t) == NULL;
    for (uint64_t pid = 1; pid <= PI_PIDS + 1U; pid++) {
        bool busy = false;
        for (uint32_t sl = 0; sl < PI_SLOTS; sl++) {
            size_t want = t->cap;
            for (size_t i = 0; i < t->cap; i++) {
                const pbx_peer_install_row *r = &t->rows[i];
                bool here = r->live && r->target.process_id == pid;
                busy = busy || here;
                want = here && r->target.slot == sl ? i : want;
            }
            ok = ok && pbx_peer_procix_target(t, pid, sl) == want;
        }
        ok = ok && pbx_peer_procix_pid_busy(t, pid) == busy;
    }
    for (uint32_t gi = 0; gi < PI_GRANTS; gi++) {
        for (uint32_t gg = 1; gg <= 2U; gg++) {
            size_t want = t->cap;
            for (size_t i = 0; i < t->cap; i++) {
                const pbx_peer_install_row *r = &t->rows[i];
                want = r->live && r->grant.index == gi && r->grant.gen == gg
                           ? i
                           : want;
            }
            pbx_ipc_id g = {gi, gg};
            ok = ok && pbx_peer_procix_grant(t, &g) == want;
        }
    }
    return ok;
}

/* One random INSTALL: decided as the walk decides, applied when 0. */
static bool pi_step_install(pbx_peer_proctab *t, uint32_t *s)
{
    pbx_ipc_install rq = pi_install(s);
    size_t row = t->cap;
    uint32_t want = pi_walk_check(t, &rq);
    uint32_t got = pbx_peer_proctab_install_check(t, &rq, &row);
    if (got != want) {
        return false;
    }
    if (got == 0U) {
        if (row >= t->cap || t->rows[row].live) {
            return false;
        }
        pbx_peer_proctab_install_apply_on(t, row, &rq, (int)(100U + row),
                                          (int)(200U + row), 9);
    }
    return true;
}

/* Drops a random row (live or not: a free row's drop changes nothing). */
static void pi_step_drop(pbx_peer_proctab *t, uint32_t *s)
{
    int object = -1;
    int handle = -1;
    size_t row = pi_next(s) % t->cap;
    bool was = t->rows[row].live;
    pbx_peer_proctab_drop(t, row, &object, &handle);
    PBX_CHECK(!was ||
              (object == (int)(100U + row) && handle == (int)(200U + row)));
}

/* Restages a random process: refused CONFLICT exactly while a walk finds
 * a live row of it. */
static bool pi_step_stage(pbx_peer_proctab *t, uint32_t *s)
{
    uint64_t pid = 1U + pi_next(s) % PI_PIDS;
    bool busy = false;
    for (size_t i = 0; i < t->cap; i++) {
        busy = busy || (t->rows[i].live && t->rows[i].target.process_id == pid);
    }
    uint32_t st = pbx_peer_proctab_stage(t, pid, 1U);
    return st == (busy ? PBX_PEER_E_CONFLICT : 0U);
}

PBX_TEST(peers_proc_index_random_orders_agree_with_walks)
{
    static pbx_peer_proctab t;
    for (uint32_t seed = 1; seed <= 300U; seed++) {
        uint32_t s = seed * 2654435761U;
        pbx_peer_proctab_init_cap(&t, PI_CAP);
        for (uint64_t pid = 1; pid <= PI_PIDS; pid++) {
            PBX_REQUIRE(pbx_peer_proctab_stage(&t, pid, 1U) == 0U);
        }
        bool ok = true;
        for (uint32_t i = 0; ok && i < 400U; i++) {
            uint32_t op = pi_next(&s) % 8U;
            if (op < 5U) {
                ok = pi_step_install(&t, &s);
            } else if (op < 7U) {
                pi_step_drop(&t, &s);
            } else {
                ok = pi_step_stage(&t, &s);
            }
            ok = ok && pi_agree(&t);
        }
        PBX_CHECK(ok);
    }
}

/* A table with every row live: grants 0..cap-1 of process 1 in slots
 * 0..cap-1, and process 2 in none. */
static void pi_fill(pbx_peer_proctab *t)
{
    pbx_peer_proctab_init_cap(t, PI_CAP);
    PBX_REQUIRE(pbx_peer_proctab_stage(t, 1U, 1U) == 0U);
    for (uint32_t i = 0; i < PI_CAP; i++) {
        pbx_ipc_install rq;
        memset(&rq, 0, sizeof(rq));
        rq.target = (pbx_ipc_target){1U, 1U, i};
        rq.grant = (pbx_ipc_id){i, 1U};
        size_t row = PI_CAP;
        PBX_REQUIRE(pbx_peer_proctab_install_check(t, &rq, &row) == 0U);
        pbx_peer_proctab_install_apply(t, row, &rq, 10, 11);
    }
}

PBX_TEST(peers_proc_index_check_reports_each_drift)
{
    static pbx_peer_proctab t;
    pi_fill(&t);
    PBX_CHECK(pbx_peer_procix_check(&t) == NULL);
    /* A row freed behind the indexes' back. */
    t.rows[3].live = false;
    PBX_CHECK(pbx_peer_procix_check(&t) != NULL);
    pi_fill(&t);
    /* A grant changed without its hash. */
    t.rows[2].grant.gen = 7U;
    PBX_CHECK(pbx_peer_procix_check(&t) != NULL);
    pi_fill(&t);
    /* A target changed without its hash (and its process count). */
    t.rows[5].target.process_id = 2U;
    PBX_CHECK(pbx_peer_procix_check(&t) != NULL);
    pi_fill(&t);
    /* A free row that is live. */
    t.ix.free_stack[t.ix.nfree++] = 1U;
    PBX_CHECK(pbx_peer_procix_check(&t) != NULL);
    pi_fill(&t);
    /* A process count off by one. */
    size_t p = 0;
    while (t.ix.pid_count[p] == 0U) {
        p++;
    }
    t.ix.pid_count[p]++;
    PBX_CHECK(pbx_peer_procix_check(&t) != NULL);
}

/* Marks g_procd's table like procd's after init with cap rows. */
static void pi_procd_reset(void)
{
    memset(&g_procd, 0, sizeof(g_procd));
    pi_fill(&g_procd.tab);
}

PBX_TEST(peers_proc_index_hung_list_follows_hangups)
{
    uint32_t s = 77U;
    pi_procd_reset();
    bool ok = procd_index_check() == NULL;
    for (uint32_t i = 0; ok && i < 2000U; i++) {
        size_t row = pi_next(&s) % PI_CAP;
        if (pi_next(&s) % 2U == 0U) {
            procd_hang(row, 1U + pi_next(&s) % 1000U);
        } else {
            procd_unhang(row);
        }
        size_t hung = 0;
        for (size_t r = 0; r < PI_CAP; r++) {
            hung += g_procd.hung_ms[r] != 0U ? 1U : 0U;
        }
        ok = procd_index_check() == NULL && hung == g_procd.nhung;
    }
    PBX_CHECK(ok);
    /* Drifts: a hang-up time set behind the list's back, and a listed
     * row whose time was cleared. */
    pi_procd_reset();
    g_procd.hung_ms[4] = 5U;
    PBX_CHECK(procd_index_check() != NULL);
    pi_procd_reset();
    procd_hang(4, 5U);
    procd_hang(6, 5U);
    g_procd.hung_ms[4] = 0U;
    PBX_CHECK(procd_index_check() != NULL);
}

/* The home place of pid in an empty table of PI_CAP rows: where its
 * first install puts it (found by looking, as the hash is private). */
static size_t pi_home(pbx_peer_proctab *t, uint64_t pid)
{
    pbx_peer_proctab_init_cap(t, PI_CAP);
    PBX_REQUIRE(pbx_peer_proctab_stage(t, pid, 1U) == 0U);
    pbx_ipc_install rq;
    memset(&rq, 0, sizeof(rq));
    rq.target = (pbx_ipc_target){pid, 1U, 0U};
    rq.grant = (pbx_ipc_id){1U, 1U};
    size_t row = 0;
    PBX_REQUIRE(pbx_peer_proctab_install_check(t, &rq, &row) == 0U);
    pbx_peer_proctab_install_apply(t, row, &rq, 10, 11);
    size_t at = 0;
    while (at < t->ix.mask && t->ix.pid_count[at] == 0U) {
        at++;
    }
    return at;
}

/* Installs grant gi of pid (staged at gen 1) in slot 0. */
static size_t pi_put(pbx_peer_proctab *t, uint64_t pid, uint32_t gi)
{
    PBX_REQUIRE(pbx_peer_proctab_stage(t, pid, 1U) == 0U);
    pbx_ipc_install rq;
    memset(&rq, 0, sizeof(rq));
    rq.target = (pbx_ipc_target){pid, 1U, 0U};
    rq.grant = (pbx_ipc_id){gi, 1U};
    size_t row = 0;
    PBX_REQUIRE(pbx_peer_proctab_install_check(t, &rq, &row) == 0U);
    pbx_peer_proctab_install_apply(t, row, &rq, 10, 11);
    return row;
}

PBX_TEST(peers_proc_index_pid_runs_wrap_the_table)
{
    /* Process ids whose homes are the last place but one (a) and the
     * last (b, c): c's probe wraps to place 0. Ending a's install empties
     * the place before b's run; c must stay where it is (its home is past
     * the hole), or its process would read as having no install. */
    static pbx_peer_proctab t;
    uint64_t a = 0;
    uint64_t b = 0;
    uint64_t c = 0;
    for (uint64_t pid = 1; pid < 5000U && c == 0U; pid++) {
        size_t home = pi_home(&t, pid);
        if (home == t.ix.mask - 1U && a == 0U) {
            a = pid;
        } else if (home == t.ix.mask && b == 0U) {
            b = pid;
        } else if (home == t.ix.mask && b != 0U) {
            c = pid;
        }
    }
    PBX_REQUIRE(a != 0U && c != 0U);
    pbx_peer_proctab_init_cap(&t, PI_CAP);
    size_t ra = pi_put(&t, a, 1U);
    (void)pi_put(&t, b, 2U);
    (void)pi_put(&t, c, 3U);
    PBX_CHECK(t.ix.pid_count[0] != 0U && t.ix.pid_key[0] == c);
    int o = -1;
    int h = -1;
    pbx_peer_proctab_drop(&t, ra, &o, &h);
    PBX_CHECK(!pbx_peer_procix_pid_busy(&t, a));
    PBX_CHECK(pbx_peer_procix_pid_busy(&t, b));
    PBX_CHECK(pbx_peer_procix_pid_busy(&t, c));
    PBX_CHECK(pbx_peer_procix_check(&t) == NULL);
    PBX_CHECK_EQ(pbx_peer_proctab_stage(&t, c, 2U), PBX_PEER_E_CONFLICT);
}
