/*
 * pbx_peer_proc.c: procd's staged processes and install table. Pure.
 * Every decision on an install reads the indexes (pbx_peer_proc_index.c),
 * which the apply and drop steps keep in step with the rows.
 */
#include "peers/lib/pbx_peer_proc.h"

#include "peers/lib/pbx_peer.h"

void pbx_peer_proctab_init(pbx_peer_proctab *t)
{
    pbx_peer_proctab_init_cap(t, PBX_PEER_PROC_INSTALLS_MAX);
}

void pbx_peer_proctab_init_cap(pbx_peer_proctab *t, size_t cap)
{
    PBX_ASSERT(cap >= 1U && cap <= PBX_PEER_PROC_INSTALLS_CAP);
    /* Only the rows in use are cleared: the rest of the static storage
     * stays untouched (and, in a fresh process, unmapped). */
    pbx_mem_set(t, 0, offsetof(pbx_peer_proctab, rows));
    pbx_mem_set(t->rows, 0, cap * sizeof(t->rows[0]));
    t->cap = cap;
    for (size_t i = 0; i < cap; i++) {
        t->rows[i].object = -1;
        t->rows[i].handle = -1;
        t->rows[i].route = -1;
    }
    for (size_t i = 0; i < PBX_PEER_PROC_STAGED_MAX; i++) {
        t->conns[i] = -1;
    }
    t->next_gen = 1U;
    pbx_peer_procix_init(t);
}

/* Reports whether process_id has a live install (in any generation). */
static bool proc_busy(const pbx_peer_proctab *t, uint64_t process_id)
{
    return pbx_peer_procix_pid_busy(t, process_id);
}

uint32_t pbx_peer_proctab_stage(pbx_peer_proctab *t, uint64_t process_id,
                                uint32_t gen)
{
    if (gen == 0U) {
        return PBX_PEER_E_MISMATCH;
    }
    for (size_t i = 0; i < t->staged_count; i++) {
        if (t->staged[i].process_id == process_id) {
            if (proc_busy(t, process_id)) {
                return PBX_PEER_E_CONFLICT;
            }
            t->staged[i].process_gen = gen;
            return 0U;
        }
    }
    if (t->staged_count >= PBX_PEER_PROC_STAGED_MAX) {
        return PBX_PEER_E_BUSY;
    }
    pbx_ipc_target s = {process_id, gen, 0U};
    t->conns[t->staged_count] = -1;
    t->staged[t->staged_count++] = s;
    /* A registration never gets a generation a simulated stage used, so
     * a job bound to a simulated PID:GEN never names a real process. */
    if (gen >= t->next_gen && gen != UINT32_MAX) {
        t->next_gen = gen + 1U;
    }
    return 0U;
}

/* Takes the next registration generation (never 0). */
static uint32_t proc_fresh_gen(pbx_peer_proctab *t)
{
    uint32_t g = t->next_gen;
    t->next_gen = g == UINT32_MAX ? 1U : g + 1U;
    return g;
}

uint32_t pbx_peer_proctab_register(pbx_peer_proctab *t, uint64_t claimed,
                                   uint64_t cred_pid, int conn, uint32_t *gen)
{
    if (claimed == 0U) {
        return PBX_PEER_E_MISMATCH;
    }
    if (claimed != cred_pid) {
        return PBX_PEER_E_NOT_YOURS;
    }
    /* An earlier process of this pid still has installs: they must be
     * revoked first (powerboxd does on the job's end). */
    if (proc_busy(t, claimed)) {
        return PBX_PEER_E_CONFLICT;
    }
    for (size_t i = 0; i < t->staged_count; i++) {
        if (t->staged[i].process_id == claimed) {
            if (t->conns[i] >= 0) {
                return PBX_PEER_E_CONFLICT;
            }
            t->staged[i].process_gen = proc_fresh_gen(t);
            t->conns[i] = conn;
            *gen = t->staged[i].process_gen;
            return 0U;
        }
    }
    if (t->staged_count >= PBX_PEER_PROC_STAGED_MAX) {
        return PBX_PEER_E_BUSY;
    }
    pbx_ipc_target s = {claimed, proc_fresh_gen(t), 0U};
    t->conns[t->staged_count] = conn;
    t->staged[t->staged_count++] = s;
    *gen = s.process_gen;
    return 0U;
}

bool pbx_peer_proctab_unstage(pbx_peer_proctab *t, int conn, uint64_t *pid)
{
    for (size_t i = 0; conn >= 0 && i < t->staged_count; i++) {
        if (t->conns[i] == conn) {
            *pid = t->staged[i].process_id;
            size_t last = --t->staged_count;
            t->staged[i] = t->staged[last];
            t->conns[i] = t->conns[last];
            t->conns[last] = -1;
            return true;
        }
    }
    return false;
}

int pbx_peer_proctab_conn(const pbx_peer_proctab *t,
                          const pbx_ipc_target *target)
{
    for (size_t i = 0; i < t->staged_count; i++) {
        if (t->staged[i].process_id == target->process_id) {
            return t->conns[i];
        }
    }
    return -1;
}

/* Checks the staged generation of the target. */
static uint32_t proc_staged(const pbx_peer_proctab *t,
                            const pbx_ipc_target *target)
{
    for (size_t i = 0; i < t->staged_count; i++) {
        if (t->staged[i].process_id == target->process_id) {
            return t->staged[i].process_gen == target->process_gen
                       ? 0U
                       : PBX_PEER_E_MISMATCH;
        }
    }
    return PBX_PEER_E_UNKNOWN;
}

uint32_t pbx_peer_proctab_install_check(const pbx_peer_proctab *t,
                                        const pbx_ipc_install *rq, size_t *row)
{
    uint32_t st = proc_staged(t, &rq->target);
    if (st != 0U) {
        return st;
    }
    if (rq->target.slot >= PBX_PEER_PROC_SLOT_LIMIT) {
        return PBX_PEER_E_SLOT;
    }
    if (pbx_peer_procix_grant(t, &rq->grant) != t->cap) {
        return PBX_PEER_E_CONFLICT;
    }
    if (pbx_peer_procix_target(t, rq->target.process_id, rq->target.slot) !=
        t->cap) {
        return PBX_PEER_E_SLOT;
    }
    size_t free_row = pbx_peer_procix_free_top(t);
    if (free_row == t->cap) {
        return PBX_PEER_E_BUSY;
    }
    *row = free_row;
    return 0U;
}

void pbx_peer_proctab_install_apply(pbx_peer_proctab *t, size_t row,
                                    const pbx_ipc_install *rq, int object,
                                    int handle)
{
    pbx_peer_proctab_install_apply_on(t, row, rq, object, handle, -1);
}

void pbx_peer_proctab_install_apply_on(pbx_peer_proctab *t, size_t row,
                                       const pbx_ipc_install *rq, int object,
                                       int handle, int route)
{
    PBX_ASSERT(row < t->cap && !t->rows[row].live);
    pbx_peer_install_row *r = &t->rows[row];
    r->live = true;
    r->target = rq->target;
    r->grant = rq->grant;
    r->operation = rq->operation;
    r->object_class = rq->object_class;
    r->lifetime = rq->lifetime;
    r->object = object;
    r->handle = handle;
    r->route = route;
    pbx_peer_procix_add(t, row);
}

bool pbx_peer_proctab_by_route(const pbx_peer_proctab *t, int route,
                               size_t *row)
{
    for (size_t i = 0; route >= 0 && i < t->cap; i++) {
        if (t->rows[i].live && t->rows[i].route == route) {
            *row = i;
            return true;
        }
    }
    return false;
}

bool pbx_peer_proctab_by_handle(const pbx_peer_proctab *t, int handle,
                                size_t *row)
{
    for (size_t i = 0; i < t->cap; i++) {
        if (t->rows[i].live && t->rows[i].handle == handle) {
            *row = i;
            return true;
        }
    }
    return false;
}

uint32_t pbx_peer_proctab_revoke_check(const pbx_peer_proctab *t, size_t row,
                                       const pbx_ipc_revoke *rq)
{
    PBX_ASSERT(row < t->cap);
    const pbx_peer_install_row *r = &t->rows[row];
    bool exact = r->live && r->grant.index == rq->grant.index &&
                 r->grant.gen == rq->grant.gen &&
                 r->target.process_id == rq->target_process_id &&
                 r->target.process_gen == rq->target_process_gen &&
                 r->target.slot == rq->installed_slot;
    return exact ? 0U : PBX_PEER_E_MISMATCH;
}

void pbx_peer_proctab_drop(pbx_peer_proctab *t, size_t row, int *object,
                           int *handle)
{
    PBX_ASSERT(row < t->cap);
    pbx_peer_install_row *r = &t->rows[row];
    *object = r->object;
    *handle = r->handle;
    if (r->live) {
        pbx_peer_procix_remove(t, row);
    }
    pbx_mem_set(r, 0, sizeof(*r));
    r->object = -1;
    r->handle = -1;
    r->route = -1;
}

size_t pbx_peer_proctab_live(const pbx_peer_proctab *t)
{
    return t->cap - t->ix.nfree;
}
