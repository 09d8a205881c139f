/*
 * bench_ops.c: the lean ops table for the lifecycle benchmark: a fake
 * kernel slot table with O(1) reservation, and the four peers answering
 * the happy path with the ipc encoders. A call is split-phase: send
 * builds the reply at once into a small ring, and bench_deliver_all
 * hands it to the core as a reply event. The PBX1 geometry of each run is
 * built with the bootstrap encoder and authenticated back before use.
 */
#include "bench/bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether slot holds a real capability (not empty, not a placeholder). */
static bool bench_has_cap(const bench_env *e, uint32_t slot)
{
    return slot < e->slot_count &&
           e->slots[slot].kind != (uint32_t)PBX_CAPABI_KIND_EMPTY &&
           e->slots[slot].kind != (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER;
}

/* Empties slot after a deletion or a transfer; a reservation stays. */
static void bench_vacate(bench_env *e, uint32_t slot)
{
    bench_slot *s = &e->slots[slot];
    s->rights = 0U;
    s->prov = 0U;
    if (s->reserved) {
        s->kind = PBX_CAPABI_KIND_PLACEHOLDER;
        return;
    }
    s->kind = PBX_CAPABI_KIND_EMPTY;
    if (slot >= BENCH_T_FIRST) {
        e->free_stack[e->free_top++] = slot;
    }
}

uint32_t bench_put_cap(bench_env *e, uint32_t slot, uint32_t rights)
{
    if (slot == PBX_CORE_SLOT_NONE) {
        if (e->free_top == 0U) {
            e->violations++;
            return PBX_CORE_SLOT_NONE;
        }
        slot = e->free_stack[--e->free_top];
    }
    if (slot >= e->slot_count || bench_has_cap(e, slot)) {
        e->violations++;
        return PBX_CORE_SLOT_NONE;
    }
    e->slots[slot].kind = PBX_CAPABI_KIND_ENDPOINT;
    e->slots[slot].rights = rights;
    e->slots[slot].prov = PBX_CAPABI_PROV_RECEIVED;
    return slot;
}

/* ---- kernel ops -------------------------------------------------------- */

static void bench_op_query(void *user, uint32_t slot, pbx_capabi_observed *out)
{
    const bench_env *e = user;
    bool in = slot < e->slot_count;
    out->slot = slot;
    out->kind = in ? e->slots[slot].kind : 0U;
    out->rights = in ? e->slots[slot].rights : 0U;
    out->provenance = in ? e->slots[slot].prov : 0U;
}

static pbx_core_delete bench_op_delete(void *user, uint32_t slot)
{
    bench_env *e = user;
    if (!bench_has_cap(e, slot)) {
        e->violations++;
        return PBX_CORE_DELETE_OK;
    }
    bench_vacate(e, slot);
    return PBX_CORE_DELETE_OK;
}

static bool bench_op_reserve(void *user, uint32_t *slot_out)
{
    bench_env *e = user;
    if (e->free_top == 0U) {
        return false;
    }
    uint32_t slot = e->free_stack[--e->free_top];
    e->slots[slot].reserved = true;
    e->slots[slot].kind = PBX_CAPABI_KIND_PLACEHOLDER;
    *slot_out = slot;
    return true;
}

static void bench_op_release(void *user, uint32_t slot)
{
    bench_env *e = user;
    if (slot < BENCH_T_FIRST || slot >= e->slot_count ||
        !e->slots[slot].reserved || bench_has_cap(e, slot)) {
        e->violations++;
        return;
    }
    e->slots[slot].reserved = false;
    e->slots[slot].kind = PBX_CAPABI_KIND_EMPTY;
    e->free_stack[e->free_top++] = slot;
}

static pbx_core_io bench_op_alias(void *user, uint32_t object,
                                  uint32_t *alias_out)
{
    bench_env *e = user;
    (void)object;
    *alias_out = bench_put_cap(e, PBX_CORE_SLOT_NONE, PBX_CAPABI_RIGHT_SEND);
    return *alias_out == PBX_CORE_SLOT_NONE ? PBX_CORE_IO_FAILED
                                            : PBX_CORE_IO_OK;
}

static pbx_core_io bench_op_wake(void *user, const uint8_t *frame, size_t len)
{
    bench_env *e = user;
    pbx_ipc_frame f;
    pbx_ipc_wake w;
    if (pbx_ipc_frame_decode(frame, len, 0, &f) != PBX_OK ||
        pbx_ipc_wake_decode(&f, &w) != PBX_OK) {
        e->violations++;
        return PBX_CORE_IO_FAILED;
    }
    e->wakes++;
    return PBX_CORE_IO_OK;
}

/* ---- peers ------------------------------------------------------------- */

/* Adds one received receipt with rights to the reply. */
static void bench_receipt(bench_env *e, bench_pend *c, uint32_t rights)
{
    uint32_t slot = bench_put_cap(e, PBX_CORE_SLOT_NONE, rights);
    if (slot != PBX_CORE_SLOT_NONE && c->n < PBX_CORE_RECV_SLOTS_MAX) {
        c->slots[c->n++] = slot;
    }
}

/* vfsd RESOLVE: FOUND, with a SEND-only object receipt. */
static pbx_err bench_ans_resolve(bench_env *e, const pbx_ipc_frame *f,
                                 bench_pend *c, size_t *n)
{
    pbx_ipc_resolve q;
    pbx_ipc_resolve_reply r;
    pbx_err err = pbx_ipc_resolve_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    memset(&r, 0, sizeof(r));
    r.result = PBX_IPC_RESOLVE_FOUND;
    r.operation = q.operation;
    r.object_class = q.object_class;
    r.object.id = 0x0B1EC7000U + ++e->object_seq;
    r.object.gen = 3U;
    r.scope_id = 0x5C09EU;
    memcpy(r.selector_digest, q.selector_digest, PBX_IPC_DIGEST_BYTES);
    bench_receipt(e, c, PBX_CAPABI_RIGHT_SEND);
    return pbx_ipc_resolve_reply_encode(f->request, &r, c->frame,
                                        sizeof(c->frame), n);
}

/* ttyd POLICY: routine ALLOW echoing urgency, realm and session. */
static pbx_err bench_ans_policy(const pbx_ipc_frame *f, bench_pend *c,
                                size_t *n)
{
    pbx_ipc_policy q;
    pbx_ipc_policy_reply r;
    pbx_err err = pbx_ipc_policy_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    r.verdict = PBX_IPC_VERDICT_ALLOW;
    r.urgency = q.ctx.urgency;
    r.realm = q.ctx.realm;
    r.session = q.ctx.session;
    return pbx_ipc_policy_reply_encode(f->request, &r, c->frame,
                                       sizeof(c->frame), n);
}

/* ttyd VIEW: acknowledge the row kind and grant. */
static pbx_err bench_ans_view(const pbx_ipc_frame *f, bench_pend *c, size_t *n)
{
    pbx_ipc_view q;
    pbx_ipc_view_ack r;
    pbx_err err = pbx_ipc_view_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    r.kind = q.kind;
    r.grant = q.grant;
    return pbx_ipc_view_reply_encode(f->request, &r, c->frame, sizeof(c->frame),
                                     n);
}

/* procd INSTALL: installed at the target slot, manage-only handle. */
static pbx_err bench_ans_install(bench_env *e, const pbx_ipc_frame *f,
                                 bench_pend *c, size_t *n)
{
    pbx_ipc_install q;
    pbx_ipc_install_reply r;
    pbx_err err = pbx_ipc_install_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    r.handle_kind = PBX_IPC_HANDLE_MANAGE_ONLY;
    r.installed_slot = q.target.slot;
    r.grant = q.grant;
    r.target_process_id = q.target.process_id;
    r.target_process_gen = q.target.process_gen;
    bench_receipt(e, c, PBX_CAPABI_RIGHT_MANAGE);
    return pbx_ipc_install_reply_encode(f->request, &r, c->frame,
                                        sizeof(c->frame), n);
}

/* vfsd DETACH and RETIRE: echo the record. */
static pbx_err bench_ans_echo(const pbx_ipc_frame *f, bench_pend *c, size_t *n)
{
    if (f->op == PBX_IPC_OP_DETACH) {
        pbx_ipc_detach q;
        pbx_err err = pbx_ipc_detach_decode(f, &q);
        return err != PBX_OK
                   ? err
                   : pbx_ipc_detach_reply_encode(f->request, &q, c->frame,
                                                 sizeof(c->frame), n);
    }
    pbx_ipc_retire q;
    pbx_err err = pbx_ipc_retire_decode(f, &q);
    return err != PBX_OK ? err
                         : pbx_ipc_retire_reply_encode(f->request, &q, c->frame,
                                                       sizeof(c->frame), n);
}

/* Builds the happy-path reply for a decoded peer request. */
static pbx_err bench_answer(bench_env *e, const pbx_ipc_frame *f, bench_pend *c,
                            size_t *n)
{
    switch (f->op) {
    case PBX_IPC_OP_RESOLVE:
        return bench_ans_resolve(e, f, c, n);
    case PBX_IPC_OP_POLICY:
        return bench_ans_policy(f, c, n);
    case PBX_IPC_OP_VIEW:
        return bench_ans_view(f, c, n);
    case PBX_IPC_OP_INSTALL:
        return bench_ans_install(e, f, c, n);
    case PBX_IPC_OP_DETACH:
    case PBX_IPC_OP_RETIRE:
        return bench_ans_echo(f, c, n);
    default:
        return PBX_E_IPC_UNKNOWN_OP;
    }
}

/* Queues the reply to a call a fake peer accepted: built now, with its
 * receipts, echoing the call's seq; delivered by bench_deliver_all. */
static pbx_core_io bench_op_send(void *user, const pbx_core_call *c)
{
    bench_env *e = user;
    pbx_ipc_frame f;
    uint16_t sent = c->send_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    bool scoped = c->route == PBX_CORE_ROUTE_SCOPE;
    if ((c->route >= PBX_CORE_ROUTE_COUNT && !scoped) ||
        e->pend_count == BENCH_PEND_MAX ||
        pbx_ipc_frame_decode(c->frame, c->frame_len, sent, &f) != PBX_OK ||
        (sent != 0U && !bench_has_cap(e, c->send_slot)) ||
        (scoped && !bench_has_cap(e, c->via_slot))) {
        e->violations++;
        return PBX_CORE_IO_FAILED;
    }
    if (sent != 0U && !c->send_copy) {
        bench_vacate(e, c->send_slot);
    }
    bench_pend *p = &e->pend[(e->pend_head + e->pend_count) % BENCH_PEND_MAX];
    e->pend_count++;
    /* vfsd answers a call sent through a scope (RESOLVE) on its route,
     * never on the scope (the core refuses a reply read there). */
    p->route = scoped ? PBX_CORE_ROUTE_VFSD : c->route;
    p->via_slot = scoped ? PBX_CORE_SLOT_NONE : c->via_slot;
    p->n = 0;
    p->len = 0;
    if (bench_answer(e, &f, p, &p->len) != PBX_OK ||
        pbx_ipc_frame_set_seq(p->frame, p->len, f.seq) != PBX_OK) {
        e->violations++;
    }
    return PBX_CORE_IO_OK;
}

bool bench_deliver_all(bench_env *e)
{
    for (uint32_t guard = 0; guard < BENCH_PEND_MAX && e->pend_count > 0U;
         guard++) {
        const bench_pend *p = &e->pend[e->pend_head];
        uint32_t refused = e->core.replies_refused;
        e->pend_head = (e->pend_head + 1U) % BENCH_PEND_MAX;
        e->pend_count--;
        e->events++;
        if (pbx_core_on_peer_reply(&e->core, p->route, p->via_slot, p->frame,
                                   p->len, p->slots, p->n) != PBX_OK ||
            e->core.replies_refused != refused) {
            return false;
        }
    }
    return true;
}

const pbx_core_ops bench_ops = {
    bench_op_send,    bench_op_query, bench_op_delete, bench_op_reserve,
    bench_op_release, bench_op_alias, bench_op_wake,
};

/* ---- construction ------------------------------------------------------ */

/* Encodes the PBX1 record for pools of cap records, then parses and
 * authenticates it back and derives the arena layout, as startup does. */
static bool bench_layout(uint32_t cap, pbx_bootstrap_layout *out)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_geometry parsed;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = cap;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        3U * cap + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        4U * cap * PBX_CORE_SELECTOR_CHUNK_BYTES;
    /* A window of cap calls on every peer route. */
    g.call_window = cap < PBX_BOOTSTRAP_CALL_WINDOW_MAX
                        ? cap
                        : PBX_BOOTSTRAP_CALL_WINDOW_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] =
        PBX_BOOTSTRAP_CALL_ROUTES * g.call_window;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
    return pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK &&
           pbx_bootstrap_encode(&g, rec, sizeof(rec)) == PBX_OK &&
           pbx_bootstrap_parse(rec, sizeof(rec), &parsed) == PBX_OK &&
           pbx_bootstrap_layout_derive(&parsed, want, out) == PBX_OK;
}

/* Allocates the slot table and threads every transient slot onto the
 * free stack, lowest on top. */
static bool bench_slots_new(bench_env *e, uint32_t tcount)
{
    e->slot_count = BENCH_T_FIRST + tcount;
    e->slots = calloc(e->slot_count, sizeof(*e->slots));
    e->free_stack = calloc(tcount, sizeof(*e->free_stack));
    if (e->slots == NULL || e->free_stack == NULL) {
        return false;
    }
    for (uint32_t i = 0; i < tcount; i++) {
        e->free_stack[i] = e->slot_count - 1U - i;
    }
    e->free_top = tcount;
    return true;
}

bench_env *bench_env_new(uint32_t capacity)
{
    pbx_bootstrap_layout l;
    pbx_capabi_layout slots;
    uint32_t tcount = 3U * capacity + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX;
    bench_env *e = calloc(1, sizeof(*e));
    if (e == NULL || !bench_layout(capacity, &l) ||
        pbx_capabi_layout_init(&slots, BENCH_T_FIRST, tcount) != PBX_OK ||
        !bench_slots_new(e, tcount)) {
        (void)fprintf(stderr, "bench: no PBX1 layout for capacity %u\n",
                      capacity);
        bench_env_free(e);
        return NULL;
    }
    e->capacity = capacity;
    e->arena_bytes = l.arena_bytes;
    e->arena = aligned_alloc(l.page_size_bytes, l.arena_bytes);
    if (e->arena == NULL || pbx_core_init(&e->core, &l, e->arena, l.arena_bytes,
                                          &slots, &bench_ops, e) != PBX_OK) {
        (void)fprintf(stderr, "bench: core init failed for capacity %u\n",
                      capacity);
        bench_env_free(e);
        return NULL;
    }
    return e;
}

void bench_env_free(bench_env *env)
{
    if (env == NULL) {
        return;
    }
    free(env->arena);
    free(env->slots);
    free(env->free_stack);
    free(env);
}
