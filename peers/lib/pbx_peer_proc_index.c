/*
 * pbx_peer_proc_index.c: the indexes of procd's install table (see
 * pbx_peer_proc_index.h). Each is changed only with the row it names, in
 * pbx_peer_proc.c's apply and drop steps, and every operation here is
 * O(1) expected (a hash bucket's chain, a stack top), bounded by the
 * table's rows in the worst case, so an INSTALL or a revocation costs the
 * same at 1 and at 900 live installs. Pure.
 */
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_proc.h"

/* The storage the index arrays are sized for is the table's. */
_Static_assert(PBX_PEER_PROCIX_ROWS == PBX_PEER_PROC_INSTALLS_CAP,
               "the index covers every row of the table");
_Static_assert(PBX_PEER_PROCIX_BUCKETS >= 2U * PBX_PEER_PROCIX_ROWS,
               "the process table stays at most half full");
_Static_assert(PBX_PEER_PROCIX_ROWS < PBX_PEER_PROCIX_NONE,
               "a row index never reads as the none link");

/* A 64-bit mixer (the splitmix64 finalizer, a public-domain constant
 * set): every key bit reaches every bucket bit, so keys that differ only
 * in high bits (generations) still spread. */
static uint64_t ix_mix(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static size_t ix_grant_bucket(const pbx_peer_procix *ix, const pbx_ipc_id *g)
{
    return (size_t)(ix_mix((uint64_t)g->index << 32 | g->gen) & ix->mask);
}

static size_t ix_target_bucket(const pbx_peer_procix *ix, uint64_t pid,
                               uint32_t slot)
{
    return (size_t)(ix_mix(ix_mix(pid) + slot) & ix->mask);
}

static size_t ix_pid_home(const pbx_peer_procix *ix, uint64_t pid)
{
    return (size_t)(ix_mix(pid ^ 0x9e3779b97f4a7c15ULL) & ix->mask);
}

void pbx_peer_procix_init(pbx_peer_proctab *t)
{
    pbx_peer_procix *ix = &t->ix;
    uint32_t nb = 2U;
    while (nb < 2U * t->cap && nb < PBX_PEER_PROCIX_BUCKETS) {
        nb *= 2U;
    }
    ix->mask = nb - 1U;
    /* Row 0 on top: a fresh table fills its rows in order. */
    ix->nfree = t->cap;
    for (size_t k = 0; k < t->cap; k++) {
        size_t row = t->cap - 1U - k;
        ix->free_stack[k] = (uint16_t)row;
        ix->free_pos[row] = (uint16_t)k;
        ix->grant_next[k] = ix->grant_prev[k] = PBX_PEER_PROCIX_NONE;
        ix->target_next[k] = ix->target_prev[k] = PBX_PEER_PROCIX_NONE;
    }
    for (size_t b = 0; b < nb; b++) {
        ix->grant_head[b] = ix->target_head[b] = PBX_PEER_PROCIX_NONE;
        ix->pid_key[b] = 0U;
        ix->pid_count[b] = 0U;
    }
}

size_t pbx_peer_procix_free_top(const pbx_peer_proctab *t)
{
    const pbx_peer_procix *ix = &t->ix;
    return ix->nfree == 0U ? t->cap : ix->free_stack[ix->nfree - 1U];
}

size_t pbx_peer_procix_grant(const pbx_peer_proctab *t, const pbx_ipc_id *g)
{
    const pbx_peer_procix *ix = &t->ix;
    size_t r = ix->grant_head[ix_grant_bucket(ix, g)];
    /* A chain holds live rows only, so at most cap steps. */
    for (size_t n = 0; r != PBX_PEER_PROCIX_NONE && n < t->cap; n++) {
        if (t->rows[r].grant.index == g->index &&
            t->rows[r].grant.gen == g->gen) {
            return r;
        }
        r = ix->grant_next[r];
    }
    return t->cap;
}

size_t pbx_peer_procix_target(const pbx_peer_proctab *t, uint64_t process_id,
                              uint32_t slot)
{
    const pbx_peer_procix *ix = &t->ix;
    size_t r = ix->target_head[ix_target_bucket(ix, process_id, slot)];
    for (size_t n = 0; r != PBX_PEER_PROCIX_NONE && n < t->cap; n++) {
        if (t->rows[r].target.process_id == process_id &&
            t->rows[r].target.slot == slot) {
            return r;
        }
        r = ix->target_next[r];
    }
    return t->cap;
}

/* The place of pid in the process table: its own, or the empty place
 * that ends its probe (never full: at most half the places are used). */
static size_t ix_pid_find(const pbx_peer_procix *ix, uint64_t pid)
{
    size_t i = ix_pid_home(ix, pid);
    for (size_t n = 0; n <= ix->mask; n++) {
        if (ix->pid_count[i] == 0U || ix->pid_key[i] == pid) {
            return i;
        }
        i = (i + 1U) & ix->mask;
    }
    return i;
}

bool pbx_peer_procix_pid_busy(const pbx_peer_proctab *t, uint64_t process_id)
{
    return t->ix.pid_count[ix_pid_find(&t->ix, process_id)] != 0U;
}

/* Empties place hole of the process table, moving back each later entry
 * of the run that may sit there (linear probing's deletion: no
 * tombstones, so a lookup never walks past the run its key is in). */
static void ix_pid_unplace(pbx_peer_procix *ix, size_t hole)
{
    size_t i = hole;
    size_t j = hole;
    for (size_t n = 0; n < ix->mask; n++) {
        j = (j + 1U) & ix->mask;
        if (ix->pid_count[j] == 0U) {
            break;
        }
        size_t k = ix_pid_home(ix, ix->pid_key[j]);
        /* The entry at j stays when its home lies cyclically in (i, j]. */
        bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
        if (!stays) {
            ix->pid_key[i] = ix->pid_key[j];
            ix->pid_count[i] = ix->pid_count[j];
            i = j;
        }
    }
    ix->pid_key[i] = 0U;
    ix->pid_count[i] = 0U;
}

/* Pushes row at the head of a bucket's chain. */
static void ix_link(uint16_t *head, uint16_t *next, uint16_t *prev, size_t row)
{
    next[row] = *head;
    prev[row] = PBX_PEER_PROCIX_NONE;
    if (*head != PBX_PEER_PROCIX_NONE) {
        prev[*head] = (uint16_t)row;
    }
    *head = (uint16_t)row;
}

/* Takes row out of its bucket's chain. */
static void ix_unlink(uint16_t *head, uint16_t *next, uint16_t *prev,
                      size_t row)
{
    if (prev[row] == PBX_PEER_PROCIX_NONE) {
        *head = next[row];
    } else {
        next[prev[row]] = next[row];
    }
    if (next[row] != PBX_PEER_PROCIX_NONE) {
        prev[next[row]] = prev[row];
    }
    next[row] = prev[row] = PBX_PEER_PROCIX_NONE;
}

void pbx_peer_procix_add(pbx_peer_proctab *t, size_t row)
{
    pbx_peer_procix *ix = &t->ix;
    const pbx_peer_install_row *r = &t->rows[row];
    PBX_ASSERT(row < t->cap && ix->nfree > 0U);
    /* Out of the free stack: the stack's top takes row's place. */
    size_t at = ix->free_pos[row];
    uint16_t top = ix->free_stack[--ix->nfree];
    ix->free_stack[at] = top;
    ix->free_pos[top] = (uint16_t)at;
    ix_link(&ix->grant_head[ix_grant_bucket(ix, &r->grant)], ix->grant_next,
            ix->grant_prev, row);
    ix_link(&ix->target_head[ix_target_bucket(ix, r->target.process_id,
                                              r->target.slot)],
            ix->target_next, ix->target_prev, row);
    size_t p = ix_pid_find(ix, r->target.process_id);
    ix->pid_key[p] = r->target.process_id;
    ix->pid_count[p]++;
}

void pbx_peer_procix_remove(pbx_peer_proctab *t, size_t row)
{
    pbx_peer_procix *ix = &t->ix;
    const pbx_peer_install_row *r = &t->rows[row];
    PBX_ASSERT(row < t->cap && ix->nfree < t->cap);
    ix_unlink(&ix->grant_head[ix_grant_bucket(ix, &r->grant)], ix->grant_next,
              ix->grant_prev, row);
    ix_unlink(&ix->target_head[ix_target_bucket(ix, r->target.process_id,
                                                r->target.slot)],
              ix->target_next, ix->target_prev, row);
    size_t p = ix_pid_find(ix, r->target.process_id);
    PBX_ASSERT(ix->pid_count[p] != 0U);
    if (--ix->pid_count[p] == 0U) {
        ix_pid_unplace(ix, p);
    }
    ix->free_pos[row] = (uint16_t)ix->nfree;
    ix->free_stack[ix->nfree++] = (uint16_t)row;
}

/* Checks the free stack against the rows: exactly the free rows, each
 * once, each knowing its place. */
static const char *ix_check_free(const pbx_peer_proctab *t, size_t live)
{
    const pbx_peer_procix *ix = &t->ix;
    if (ix->nfree != t->cap - live) {
        return "free row count differs from the rows not live";
    }
    for (size_t k = 0; k < ix->nfree; k++) {
        size_t row = ix->free_stack[k];
        if (row >= t->cap || t->rows[row].live || ix->free_pos[row] != k) {
            return "free stack holds a live, repeated or bad row";
        }
    }
    return NULL;
}

/* Checks one hash's chains: each holds live rows of its own bucket only,
 * linked both ways, and together they hold every live row once. */
static const char *ix_check_chains(const pbx_peer_proctab *t, bool grant,
                                   size_t live)
{
    const pbx_peer_procix *ix = &t->ix;
    const uint16_t *head = grant ? ix->grant_head : ix->target_head;
    const uint16_t *next = grant ? ix->grant_next : ix->target_next;
    const uint16_t *prev = grant ? ix->grant_prev : ix->target_prev;
    size_t seen = 0;
    for (size_t b = 0; b <= ix->mask; b++) {
        size_t before = PBX_PEER_PROCIX_NONE;
        for (size_t r = head[b]; r != PBX_PEER_PROCIX_NONE; r = next[r]) {
            const pbx_peer_install_row *w = &t->rows[r < t->cap ? r : 0U];
            size_t home = grant ? ix_grant_bucket(ix, &w->grant)
                                : ix_target_bucket(ix, w->target.process_id,
                                                   w->target.slot);
            if (r >= t->cap || !w->live || home != b || prev[r] != before ||
                ++seen > live) {
                return grant ? "grant hash chain holds a wrong row"
                             : "target hash chain holds a wrong row";
            }
            before = r;
        }
    }
    return seen == live ? NULL
           : grant      ? "grant hash misses a live row"
                        : "target hash misses a live row";
}

/* Checks the process table: each used place reachable from its home,
 * its count the live rows of its pid (counted into scratch by place). */
static const char *ix_check_pids(const pbx_peer_proctab *t)
{
    static uint16_t scratch[PBX_PEER_PROCIX_BUCKETS];
    const pbx_peer_procix *ix = &t->ix;
    pbx_mem_set(scratch, 0, sizeof(scratch));
    for (size_t row = 0; row < t->cap; row++) {
        if (t->rows[row].live) {
            scratch[ix_pid_find(ix, t->rows[row].target.process_id)]++;
        }
    }
    for (size_t i = 0; i <= ix->mask; i++) {
        bool placed =
            ix->pid_count[i] == 0U || ix_pid_find(ix, ix->pid_key[i]) == i;
        if (!placed || scratch[i] != ix->pid_count[i]) {
            return "process live counts differ from the rows";
        }
    }
    return NULL;
}

const char *pbx_peer_procix_check(const pbx_peer_proctab *t)
{
    size_t live = 0;
    for (size_t row = 0; row < t->cap; row++) {
        const pbx_peer_install_row *r = &t->rows[row];
        if (!r->live) {
            continue;
        }
        live++;
        if (pbx_peer_procix_grant(t, &r->grant) != row) {
            return "a live row's grant is not found at it";
        }
        if (pbx_peer_procix_target(t, r->target.process_id, r->target.slot) !=
            row) {
            return "a live row's target is not found at it";
        }
    }
    const char *why = ix_check_free(t, live);
    why = why != NULL ? why : ix_check_chains(t, true, live);
    why = why != NULL ? why : ix_check_chains(t, false, live);
    return why != NULL ? why : ix_check_pids(t);
}
