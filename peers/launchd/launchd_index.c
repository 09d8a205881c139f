/*
 * launchd_index.c: the indexes that keep launchd's per-event work
 * independent of its table sizes. A call's seq names its slot (seq modulo
 * LAUNCHD_CALLS_MAX), so a broker reply finds its call in one step and a
 * new call takes a free slot from a queue, never walking the 512 slots; a
 * live job is found by its id and a running one by its pid through two
 * open-addressing hash tables, and an orphan by its request id in a
 * third; each connection counts the live jobs it
 * launched whose EXIT has not gone. Each index changes only here, at the
 * moment its table does, and launchd_index_check recomputes them all by
 * walking the tables (a test aid: it is never on launchd's own path).
 * Pure: no I/O, so tests/peers/test_peers_launchd_index.c runs it alone.
 */
#include "peers/launchd/launchd.h"

/* The hash tables' keys. */
enum { LAUNCHD_IX_ID = 0, LAUNCHD_IX_PID = 1, LAUNCHD_IX_ORPHAN = 2 };

void launchd_index_init(launchd_srv *srv)
{
    /* In slot order: slot 0 is taken first. */
    for (uint32_t i = 0; i < LAUNCHD_CALLS_MAX; i++) {
        srv->call_free[i] = (uint16_t)i;
    }
    srv->call_free_head = 0U;
    srv->ncall_free = LAUNCHD_CALLS_MAX;
    for (uint32_t i = 0; i < LAUNCHD_JOB_HASH; i++) {
        srv->job_ids[i] = 0U;
        srv->job_pids[i] = 0U;
    }
    for (uint32_t i = 0; i < LAUNCHD_ORPHAN_HASH; i++) {
        srv->orphan_ids[i] = 0U;
    }
}

launchd_call *launchd_call_take(launchd_srv *srv)
{
    if (srv->ncall_free == 0U || srv->ncall_free > LAUNCHD_CALLS_MAX) {
        return NULL;
    }
    uint32_t slot = srv->call_free[srv->call_free_head % LAUNCHD_CALLS_MAX] %
                    LAUNCHD_CALLS_MAX;
    srv->call_free_head = (srv->call_free_head + 1U) % LAUNCHD_CALLS_MAX;
    srv->ncall_free--;
    launchd_call *k = &srv->calls[slot];
    /* A slot's next seq is its last one's upper part plus one, over the
     * slot: seq modulo LAUNCHD_CALLS_MAX is always the slot (2^32 is a
     * multiple of it, so wrapping keeps that), so no two outstanding calls
     * share one, and a slot repeats a seq only after 2^23 uses of it;
     * freed slots are taken in turn (a queue), so that is about 2^32
     * calls, as the single counter it replaced. Zero is never used. */
    uint32_t seq = 0U;
    uint32_t upper = k->seq / LAUNCHD_CALLS_MAX;
    for (uint32_t tries = 0; tries < 2U && seq == 0U; tries++) {
        seq = ++upper * LAUNCHD_CALLS_MAX + slot;
    }
    k->used = true;
    k->seq = seq;
    srv->ncalls++;
    return k;
}

void launchd_call_free(launchd_srv *srv, launchd_call *k)
{
    if (!k->used || srv->ncall_free >= LAUNCHD_CALLS_MAX) {
        return;
    }
    k->used = false;
    srv->ncalls -= srv->ncalls > 0U ? 1U : 0U;
    uint32_t tail = (srv->call_free_head + srv->ncall_free) % LAUNCHD_CALLS_MAX;
    srv->call_free[tail] = (uint16_t)(k - srv->calls);
    srv->ncall_free++;
}

launchd_call *launchd_call_by_seq(launchd_srv *srv, uint32_t seq)
{
    launchd_call *k = &srv->calls[seq % LAUNCHD_CALLS_MAX];
    return seq != 0U && k->used && k->seq == seq ? k : NULL;
}

/* Buckets of table which. */
static uint32_t launchd_ix_size(int which)
{
    return which == LAUNCHD_IX_ORPHAN ? LAUNCHD_ORPHAN_HASH : LAUNCHD_JOB_HASH;
}

/* The key of slot v - 1 in table which: a job's id or pid, an orphan's
 * request id. */
static uint64_t launchd_ix_key(const launchd_srv *srv, int which, uint16_t v)
{
    if (which == LAUNCHD_IX_ORPHAN) {
        const launchd_orphan *o =
            &srv->orphans[(uint32_t)(v - 1U) % LAUNCHD_ORPHANS_MAX];
        return (uint64_t)o->id.index << 32 | o->id.gen;
    }
    const launchd_job *j = &srv->jobs[(uint32_t)(v - 1U) % LAUNCHD_JOBS_CAP];
    return which == LAUNCHD_IX_ID ? j->bind.job_id : (uint64_t)j->pid;
}

/* Where key's probe starts in a table of size buckets (a multiplicative
 * hash's top bits; size is a power of two). */
static uint32_t launchd_ix_home(uint64_t key, uint32_t size)
{
    return (uint32_t)((key * 0x9E3779B97F4A7C15ULL) >> 40) % size;
}

/* The table of which, to read. */
static const uint16_t *launchd_ix_ctab(const launchd_srv *srv, int which)
{
    return which == LAUNCHD_IX_ORPHAN ? srv->orphan_ids
           : which == LAUNCHD_IX_ID   ? srv->job_ids
                                      : srv->job_pids;
}

/* The table of which, to change. */
static uint16_t *launchd_ix_tab(launchd_srv *srv, int which)
{
    return which == LAUNCHD_IX_ORPHAN ? srv->orphan_ids
           : which == LAUNCHD_IX_ID   ? srv->job_ids
                                      : srv->job_pids;
}

/* The bucket holding key in table which, or its size. At most half of
 * a table's buckets are ever full, so a probe ends at an empty one long
 * before the bound. */
static uint32_t launchd_ix_find(const launchd_srv *srv, int which, uint64_t key)
{
    const uint16_t *tab = launchd_ix_ctab(srv, which);
    uint32_t size = launchd_ix_size(which);
    uint32_t b = launchd_ix_home(key, size);
    for (uint32_t step = 0; step < size && tab[b] != 0U; step++) {
        if (launchd_ix_key(srv, which, tab[b]) == key) {
            return b;
        }
        b = (b + 1U) % size;
    }
    return size;
}

/* Adds slot i to table which (its key not there yet). */
static void launchd_ix_add(launchd_srv *srv, int which, uint32_t i)
{
    uint16_t *tab = launchd_ix_tab(srv, which);
    uint32_t size = launchd_ix_size(which);
    uint32_t b =
        launchd_ix_home(launchd_ix_key(srv, which, (uint16_t)(i + 1U)), size);
    for (uint32_t step = 0; step < size; step++) {
        if (tab[b] == 0U) {
            tab[b] = (uint16_t)(i + 1U);
            return;
        }
        b = (b + 1U) % size;
    }
}

/* Removes slot i from table which (its key as when it was added),
 * moving back each later entry of the run whose probe passed the hole,
 * so every find still ends at the first empty bucket. */
static void launchd_ix_del(launchd_srv *srv, int which, uint32_t i)
{
    uint16_t *tab = launchd_ix_tab(srv, which);
    uint32_t size = launchd_ix_size(which);
    uint32_t hole = launchd_ix_find(
        srv, which, launchd_ix_key(srv, which, (uint16_t)(i + 1U)));
    if (hole >= size || tab[hole] != (uint16_t)(i + 1U)) {
        return;
    }
    tab[hole] = 0U;
    uint32_t q = hole;
    for (uint32_t step = 1; step < size; step++) {
        q = (q + 1U) % size;
        if (tab[q] == 0U) {
            return;
        }
        uint32_t home =
            launchd_ix_home(launchd_ix_key(srv, which, tab[q]), size);
        /* The entry at q stays unless its home lies cyclically outside
         * (hole, q]: then its probe crossed the hole. */
        uint32_t dist_home = (q + size - home) % size;
        uint32_t dist_hole = (q + size - hole) % size;
        if (dist_home >= dist_hole) {
            tab[hole] = tab[q];
            tab[q] = 0U;
            hole = q;
        }
    }
}

int launchd_job_by_id(const launchd_srv *srv, uint64_t job_id)
{
    uint32_t b = launchd_ix_find(srv, LAUNCHD_IX_ID, job_id);
    return b < LAUNCHD_JOB_HASH ? (int)srv->job_ids[b] - 1 : -1;
}

int launchd_job_by_pid(const launchd_srv *srv, pid_t pid)
{
    uint32_t b = launchd_ix_find(srv, LAUNCHD_IX_PID, (uint64_t)pid);
    return b < LAUNCHD_JOB_HASH ? (int)srv->job_pids[b] - 1 : -1;
}

void launchd_job_indexed(launchd_srv *srv, uint32_t ji)
{
    launchd_job *j = &srv->jobs[ji];
    launchd_ix_add(srv, LAUNCHD_IX_ID, ji);
    launchd_ix_add(srv, LAUNCHD_IX_PID, ji);
    if (j->launcher < LAUNCHD_CONNS_CAP &&
        srv->conns[j->launcher].gen == j->launcher_gen) {
        srv->conns[j->launcher].launched++;
    }
}

void launchd_job_index_ended(launchd_srv *srv, uint32_t ji)
{
    launchd_ix_del(srv, LAUNCHD_IX_PID, ji);
}

void launchd_job_index_exit(launchd_srv *srv, uint32_t ji)
{
    const launchd_job *j = &srv->jobs[ji];
    if (j->launcher < LAUNCHD_CONNS_CAP &&
        srv->conns[j->launcher].gen == j->launcher_gen &&
        srv->conns[j->launcher].launched > 0U) {
        srv->conns[j->launcher].launched--;
    }
}

/* The used orphan slot of request id, or LAUNCHD_ORPHANS_MAX. */
static uint32_t launchd_orphan_slot(const launchd_srv *srv, pbx_ipc_id id)
{
    uint32_t b = launchd_ix_find(srv, LAUNCHD_IX_ORPHAN,
                                 (uint64_t)id.index << 32 | id.gen);
    return b < LAUNCHD_ORPHAN_HASH
               ? (uint32_t)(srv->orphan_ids[b] - 1U) % LAUNCHD_ORPHANS_MAX
               : LAUNCHD_ORPHANS_MAX;
}

launchd_orphan *launchd_orphan_by_id(launchd_srv *srv, pbx_ipc_id id)
{
    uint32_t oi = launchd_orphan_slot(srv, id);
    return oi < LAUNCHD_ORPHANS_MAX ? &srv->orphans[oi] : NULL;
}

void launchd_orphan_indexed(launchd_srv *srv, uint32_t oi)
{
    launchd_ix_add(srv, LAUNCHD_IX_ORPHAN, oi);
}

void launchd_orphan_index_drop(launchd_srv *srv, uint32_t oi)
{
    launchd_ix_del(srv, LAUNCHD_IX_ORPHAN, oi);
}

bool launchd_is_launcher(const launchd_srv *srv, uint32_t ci)
{
    /* Counted where jobs become live and send their EXIT, so a timer's
     * arm never walks the jobs. */
    return ci < LAUNCHD_CONNS_CAP && srv->conns[ci].launched != 0U;
}

void launchd_job_index_drop(launchd_srv *srv, uint32_t ji)
{
    launchd_ix_del(srv, LAUNCHD_IX_ID, ji);
}

/* The call table's index against a walk: the free queue holds exactly
 * the unused slots, once each, and every used call's seq names its slot.
 * NULL when they agree, else what drifted. */
static const char *launchd_index_check_calls(const launchd_srv *srv)
{
    bool seen[LAUNCHD_CALLS_MAX] = {false};
    uint32_t used = 0;
    if (srv->ncall_free > LAUNCHD_CALLS_MAX) {
        return "free call count past the table";
    }
    for (uint32_t i = 0; i < srv->ncall_free; i++) {
        uint32_t s =
            srv->call_free[(srv->call_free_head + i) % LAUNCHD_CALLS_MAX];
        if (s >= LAUNCHD_CALLS_MAX || seen[s] || srv->calls[s].used) {
            return "free call queue holds a used, repeated or bad slot";
        }
        seen[s] = true;
    }
    for (uint32_t i = 0; i < LAUNCHD_CALLS_MAX; i++) {
        const launchd_call *k = &srv->calls[i];
        used += k->used ? 1U : 0U;
        if (k->used && (k->seq == 0U || k->seq % LAUNCHD_CALLS_MAX != i)) {
            return "a used call's seq does not name its slot";
        }
    }
    if (used + srv->ncall_free != LAUNCHD_CALLS_MAX || used != srv->ncalls) {
        return "free call queue or ncalls disagrees with the used slots";
    }
    return NULL;
}

/* The job indexes against a walk. */
static const char *launchd_index_check_jobs(const launchd_srv *srv)
{
    uint32_t live = 0;
    uint32_t running = 0;
    uint32_t ids = 0;
    uint32_t pids = 0;
    for (uint32_t ji = 0; ji < LAUNCHD_JOBS_CAP; ji++) {
        const launchd_job *j = &srv->jobs[ji];
        if (!j->live) {
            continue;
        }
        live++;
        if (launchd_job_by_id(srv, j->bind.job_id) != (int)ji) {
            return "a live job is not found by its id";
        }
        if (!j->ending) {
            running++;
            if (launchd_job_by_pid(srv, j->pid) != (int)ji) {
                return "a running job is not found by its pid";
            }
        }
    }
    for (uint32_t b = 0; b < LAUNCHD_JOB_HASH; b++) {
        ids += srv->job_ids[b] != 0U ? 1U : 0U;
        pids += srv->job_pids[b] != 0U ? 1U : 0U;
    }
    if (ids != live || pids != running) {
        return "a job index holds a job that is not live (or not running)";
    }
    return NULL;
}

/* The orphan index against a walk. */
static const char *launchd_index_check_orphans(const launchd_srv *srv)
{
    uint32_t used = 0;
    uint32_t ids = 0;
    for (uint32_t i = 0; i < LAUNCHD_ORPHANS_MAX; i++) {
        const launchd_orphan *o = &srv->orphans[i];
        if (o->used) {
            used++;
            if (launchd_orphan_slot(srv, o->id) != i) {
                return "a used orphan is not found by its request id";
            }
        }
    }
    for (uint32_t b = 0; b < LAUNCHD_ORPHAN_HASH; b++) {
        ids += srv->orphan_ids[b] != 0U ? 1U : 0U;
    }
    return ids == used ? NULL : "the orphan index holds an unused orphan";
}

/* Each connection's count of launched jobs against one walk of the
 * jobs (cheap enough to run after every loop pass). */
static const char *launchd_index_check_launched(const launchd_srv *srv)
{
    static uint32_t n[LAUNCHD_CONNS_CAP];
    for (uint32_t ci = 0; ci < LAUNCHD_CONNS_CAP; ci++) {
        n[ci] = 0U;
    }
    for (uint32_t ji = 0; ji < LAUNCHD_JOBS_CAP; ji++) {
        const launchd_job *j = &srv->jobs[ji];
        if (j->live && !j->exit_sent && j->launcher < LAUNCHD_CONNS_CAP &&
            j->launcher_gen == srv->conns[j->launcher].gen) {
            n[j->launcher]++;
        }
    }
    for (uint32_t ci = 0; ci < LAUNCHD_CONNS_CAP; ci++) {
        if (n[ci] != srv->conns[ci].launched) {
            return "a connection's count of launched jobs drifted";
        }
    }
    return NULL;
}

const char *launchd_index_check(const launchd_srv *srv)
{
    const char *why = launchd_index_check_calls(srv);
    if (why == NULL) {
        why = launchd_index_check_jobs(srv);
    }
    if (why == NULL) {
        why = launchd_index_check_orphans(srv);
    }
    return why != NULL ? why : launchd_index_check_launched(srv);
}
