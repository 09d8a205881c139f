/*
 * pbx_core_calls.c: outstanding split-phase peer calls. A step sends its
 * call and goes on; the call lives in a record of the calls pool until it
 * ends exactly once: by the reply that echoes it (route, operation,
 * identity and per-call sequence), by its deadline, by its owner's
 * cancellation or by its route going down. Each deadline class keeps its
 * calls in one FIFO, which is sorted by deadline because every call of a
 * class has the same timeout and time never goes back. An ended call
 * reaches its judge only through the table pbx_core_judges
 * (pbx_core_judges.c), so this file names no responsibility module; the
 * call records themselves live one file down, in pbx_core_outcall.c.
 */
#include "core/pbx_core_peer.h"

_Static_assert(PBX_CORE_CALL_CLASSES == 5U &&
                   PBX_BOOTSTRAP_TIME_PROMPT + 1 == PBX_CORE_CALL_CLASSES,
               "one deadline class per PBX1 call time, in order");

/* Takes a call record and gives it the core's next call generation,
 * which is greater than any it had (until the serial wraps to 1). */
static uint32_t pbx_core_call_take(pbx_core_ctx *ctx)
{
    uint32_t o = pbx_core_alloc(ctx, PBX_BOOTSTRAP_POOL_CALLS);
    ctx->call_serial =
        ctx->call_serial == UINT32_MAX ? 1U : ctx->call_serial + 1U;
    pbx_core_outcall_at(ctx, o)->link.generation = ctx->call_serial;
    return o;
}

/* The startup route a deadline class's calls go on (scope calls: none). */
static uint32_t pbx_core_class_route(uint32_t clazz)
{
    static const uint32_t routes[PBX_CORE_CALL_CLASSES] = {
        PBX_CORE_ROUTE_VFSD, PBX_CORE_ROUTE_TTYD, PBX_CORE_ROUTE_PROCD,
        PBX_CORE_ROUTE_SCOPE, PBX_CORE_ROUTE_TTYD};
    return routes[clazz];
}

/* Queues owner after backpressure (io BUSY) or a full window. */
static void pbx_core_call_wait(pbx_core_ctx *ctx,
                               const pbx_core_call_spec *spec, uint32_t route,
                               bool window)
{
    bool req = spec->owner_pool == PBX_BOOTSTRAP_POOL_REQUESTS;
    pbx_core_dequeue(ctx, spec->owner_pool, spec->owner);
    if (window) {
        /* Woken when any call ends, never by writability (a writable
         * route with a full window would spin). */
        pbx_core_enqueue(ctx,
                         req ? PBX_CORE_Q_WAIT_CALL_REQUEST
                             : PBX_CORE_Q_WAIT_CALL_GRANT,
                         spec->owner);
    } else if (route == PBX_CORE_ROUTE_SCOPE) {
        /* No route's writability covers a caller's scope: a tick. */
        pbx_core_defer(ctx, spec->owner_pool, spec->owner);
    } else {
        pbx_core_park(ctx, spec->owner_pool, spec->owner,
                      (pbx_core_route)route);
    }
}

pbx_core_io pbx_core_call_send(pbx_core_ctx *ctx, pbx_core_call *c,
                               const pbx_core_call_spec *spec)
{
    PBX_ASSERT(spec->clazz < PBX_CORE_CALL_CLASSES);
    if (ctx->calls_out[spec->clazz] >= ctx->call_window ||
        pbx_core_free_count(ctx, PBX_BOOTSTRAP_POOL_CALLS) == 0U) {
        pbx_core_call_wait(ctx, spec, c->route, true);
        return PBX_CORE_IO_BUSY;
    }
    uint32_t o = pbx_core_call_take(ctx);
    PBX_ASSERT(pbx_ipc_frame_set_seq(ctx->frame, c->frame_len,
                                     pbx_core_call_seq(ctx, o)) == PBX_OK);
    pbx_core_io io = ctx->ops->send(ctx->ops_user, c);
    if (io != PBX_CORE_IO_OK) {
        pbx_core_free(ctx, PBX_BOOTSTRAP_POOL_CALLS, o);
        if (io == PBX_CORE_IO_BUSY) {
            pbx_core_call_wait(ctx, spec, c->route, false);
        }
        return io == PBX_CORE_IO_BUSY ? io : PBX_CORE_IO_FAILED;
    }
    pbx_core_outcall *oc = pbx_core_outcall_at(ctx, o);
    oc->deadline_ms = ctx->now_ms + ctx->call_ms[spec->clazz];
    oc->id = spec->id;
    oc->owner = spec->owner;
    oc->owner_generation =
        pbx_core_link_of(ctx, spec->owner_pool, spec->owner)->generation;
    oc->via_slot = c->via_slot;
    oc->op = spec->op;
    oc->route = (uint8_t)c->route;
    oc->owner_pool = (uint8_t)spec->owner_pool;
    oc->kind = (uint8_t)spec->kind;
    oc->clazz = (uint8_t)spec->clazz;
    oc->reserved = 0U;
    ctx->calls_out[spec->clazz]++;
    *pbx_core_call_owner_field(ctx, oc) = o;
    pbx_core_enqueue(ctx, (pbx_core_queue_id)(PBX_CORE_Q_CALLS + spec->clazz),
                     o);
    return PBX_CORE_IO_OK;
}

/* Hands an ended call's reply (c, or NULL when none will come) to the
 * judge of its kind, through the one dispatch table: this file names no
 * judge, so no responsibility module is called from here. */
static pbx_err pbx_core_judge(pbx_core_ctx *ctx, uint32_t kind, uint32_t owner,
                              const pbx_core_call *c)
{
    if (kind >= PBX_CORE_CALL_KINDS || pbx_core_judges[kind] == NULL) {
        return PBX_E_CORE_INCONSISTENT;
    }
    return pbx_core_judges[kind](ctx, kind, owner, c);
}

/* Ends call o without a reply (deadline or lost route) and lets its step
 * judge the absence. */
static pbx_err pbx_core_call_expire(pbx_core_ctx *ctx, uint32_t o)
{
    const pbx_core_outcall *oc = pbx_core_outcall_at(ctx, o);
    uint32_t kind = oc->kind;
    uint32_t owner = oc->owner;
    pbx_core_call_end(ctx, o);
    ctx->calls_expired += ctx->calls_expired == UINT32_MAX ? 0U : 1U;
    return pbx_core_judge(ctx, kind, owner, NULL);
}

/* Ends, CANCELLED, every request whose OPEN deadline has passed: the
 * caller began it and never committed, so its reservation and records
 * return through the ordinary release (the decision is published and its
 * wake sent like any other). */
static void pbx_core_open_expire(pbx_core_ctx *ctx)
{
    const pbx_core_queue *q = &ctx->queues[PBX_CORE_Q_OPEN];
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    for (uint32_t n = 0; n < cap && q->head != PBX_CORE_NIL; n++) {
        uint32_t i = q->head;
        pbx_core_request *r = pbx_core_req(ctx, i);
        PBX_ASSERT(r->link.state == (uint16_t)PBX_CORE_ST_OPEN);
        if (r->open_deadline_ms > ctx->now_ms) {
            break;
        }
        r->flags |= PBX_CORE_REQ_F_CANCELLED;
        pbx_core_req_terminate(ctx, i, PBX_CORE_EV_CANCEL,
                               PBX_IPC_OUTCOME_CANCELLED);
        ctx->opens_expired += ctx->opens_expired < UINT32_MAX ? 1U : 0U;
    }
}

pbx_err pbx_core_on_time(pbx_core_ctx *ctx, uint64_t now_ms)
{
    if (ctx->ready == 0U) {
        return PBX_E_CORE_NOT_READY;
    }
    ctx->now_ms = now_ms > ctx->now_ms ? now_ms : ctx->now_ms;
    pbx_core_open_expire(ctx);
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_CALLS].capacity;
    for (uint32_t k = 0; k < PBX_CORE_CALL_CLASSES; k++) {
        const pbx_core_queue *q = &ctx->queues[PBX_CORE_Q_CALLS + k];
        for (uint32_t n = 0; n < cap && q->head != PBX_CORE_NIL; n++) {
            if (pbx_core_outcall_at(ctx, q->head)->deadline_ms > ctx->now_ms) {
                break;
            }
            pbx_err err = pbx_core_call_expire(ctx, q->head);
            if (err != PBX_OK) {
                return pbx_core_fail(ctx, PBX_CORE_EXIT_PROGRESS, err);
            }
        }
    }
    return PBX_OK;
}

bool pbx_core_next_deadline(const pbx_core_ctx *ctx, uint64_t *at_ms)
{
    bool any = false;
    uint32_t open = ctx->queues[PBX_CORE_Q_OPEN].head;
    if (open != PBX_CORE_NIL) {
        *at_ms = pbx_core_req(ctx, open)->open_deadline_ms;
        any = true;
    }
    for (uint32_t k = 0; k < PBX_CORE_CALL_CLASSES; k++) {
        uint32_t head = ctx->queues[PBX_CORE_Q_CALLS + k].head;
        if (head == PBX_CORE_NIL) {
            continue;
        }
        uint64_t at = pbx_core_outcall_at(ctx, head)->deadline_ms;
        if (!any || at < *at_ms) {
            *at_ms = at;
        }
        any = true;
    }
    return any;
}

pbx_err pbx_core_calls_route_down(pbx_core_ctx *ctx, pbx_core_route route)
{
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_CALLS].capacity;
    for (uint32_t k = 0; k < PBX_CORE_CALL_CLASSES; k++) {
        /* A prompt outlives its ttyd: it stays outstanding until its own
         * deadline and is shown again when the route comes back. */
        if (pbx_core_class_route(k) != (uint32_t)route ||
            k == PBX_BOOTSTRAP_TIME_PROMPT) {
            continue;
        }
        /* Every call of the class is on this route: end them in order. */
        const pbx_core_queue *q = &ctx->queues[PBX_CORE_Q_CALLS + k];
        for (uint32_t n = 0; n < cap && q->head != PBX_CORE_NIL; n++) {
            pbx_err err = pbx_core_call_expire(ctx, q->head);
            if (err != PBX_OK) {
                return pbx_core_fail(ctx, PBX_CORE_EXIT_PROGRESS, err);
            }
        }
    }
    return PBX_OK;
}

/* The route a call's reply must arrive on. A RESOLVE goes through the
 * request's scope, but vfsd answers it on its own route to powerboxd,
 * never on the scope: the job that committed the scope holds a copy of
 * that very connection (copies share one receive queue), and a reply
 * there could be read by the job before any decision. A reply read
 * through any scope slot therefore matches no call at all. */
static uint32_t pbx_core_reply_route(uint32_t sent)
{
    return sent == PBX_CORE_ROUTE_SCOPE ? (uint32_t)PBX_CORE_ROUTE_VFSD : sent;
}

/* The live call of class clazz whose generation is seq, or PBX_CORE_NIL:
 * one walk of the class's deadline FIFO, bounded by the pool. */
static uint32_t pbx_core_call_find(const pbx_core_ctx *ctx, uint32_t clazz,
                                   uint32_t seq)
{
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_CALLS].capacity;
    uint32_t o = ctx->queues[PBX_CORE_Q_CALLS + clazz].head;
    for (uint32_t n = 0; n < cap && o != PBX_CORE_NIL; n++) {
        const pbx_core_outcall *oc = pbx_core_outcall_at(ctx, o);
        if (oc->link.generation == seq) {
            return o;
        }
        o = oc->link.next;
    }
    return PBX_CORE_NIL;
}

/* Finds the live call a reply header echoes: the sequence is the whole
 * generation of a live call whose replies come on this route (a scoped
 * call's on vfsd's), with this operation and this identity. Only the
 * classes whose replies come on route are searched. Returns its index or
 * PBX_CORE_NIL. */
static uint32_t pbx_core_call_match(const pbx_core_ctx *ctx, uint32_t route,
                                    const uint8_t *frame, size_t len)
{
    uint32_t seq = 0;
    if (len < PBX_IPC_HEADER_BYTES ||
        pbx_ipc_frame_peek_seq(frame, len, &seq) != PBX_OK || seq == 0U) {
        return PBX_CORE_NIL;
    }
    uint32_t o = PBX_CORE_NIL;
    for (uint32_t k = 0; k < PBX_CORE_CALL_CLASSES && o == PBX_CORE_NIL; k++) {
        if (pbx_core_reply_route(pbx_core_class_route(k)) == route) {
            o = pbx_core_call_find(ctx, k, seq);
        }
    }
    if (o == PBX_CORE_NIL) {
        return PBX_CORE_NIL;
    }
    const pbx_core_outcall *oc = pbx_core_outcall_at(ctx, o);
    uint16_t op = pbx_le_get16(frame + 6);
    uint32_t index = pbx_le_get32(frame + 12);
    uint32_t gen = pbx_le_get32(frame + 16);
    if (oc->link.live == 0U || pbx_core_call_seq(ctx, o) != seq ||
        pbx_core_reply_route(oc->route) != route ||
        op != (uint16_t)(oc->op | PBX_IPC_REPLY_BIT) || index != oc->id.index ||
        gen != oc->id.gen) {
        return PBX_CORE_NIL;
    }
    return o;
}

bool pbx_core_peer_ready(const pbx_core_ctx *ctx)
{
    return ctx->ready != 0U &&
           pbx_core_free_count(ctx, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS) >=
               PBX_CORE_RECV_SLOTS_MAX;
}

/* Refuses a reply that matches no live call: every receipt goes. */
static pbx_err pbx_core_reply_refuse(pbx_core_ctx *ctx, const uint32_t *slots,
                                     size_t count)
{
    ctx->replies_refused += ctx->replies_refused == UINT32_MAX ? 0U : 1U;
    for (size_t i = 0; i < count; i++) {
        pbx_core_delete d = pbx_core_delete_slot(ctx, slots[i]);
        if (d == PBX_CORE_DELETE_TRANSIENT) {
            d = pbx_core_orphan(ctx, slots[i], PBX_CORE_NIL, false);
        }
        if (d == PBX_CORE_DELETE_REJECTED) {
            return PBX_E_CORE_CLEANUP_REJECTED;
        }
    }
    return PBX_OK;
}

pbx_err pbx_core_on_peer_reply(pbx_core_ctx *ctx, uint32_t route,
                               uint32_t via_slot, const uint8_t *frame,
                               size_t len, const uint32_t *slots,
                               size_t slot_count)
{
    if (ctx->ready == 0U) {
        return PBX_E_CORE_NOT_READY;
    }
    if (slot_count > PBX_CORE_RECV_SLOTS_MAX || !pbx_core_peer_ready(ctx)) {
        return PBX_E_CORE_INTAKE_HELD;
    }
    uint32_t o = route <= PBX_CORE_ROUTE_SCOPE && frame != NULL
                     ? pbx_core_call_match(ctx, route, frame, len)
                     : PBX_CORE_NIL;
    if (o == PBX_CORE_NIL) {
        pbx_err err = pbx_core_reply_refuse(ctx, slots, slot_count);
        return err == PBX_OK ? err
                             : pbx_core_fail(ctx, PBX_CORE_EXIT_CLEANUP, err);
    }
    const pbx_core_outcall *oc = pbx_core_outcall_at(ctx, o);
    uint32_t kind = oc->kind;
    uint32_t owner = oc->owner;
    /* Every field is written below (recv_slots whole: PBX_CORE_SLOT_NONE
     * past slot_count), so the record is not cleared first; only padding
     * stays unwritten, and nothing reads or compares it. */
    pbx_core_call c;
    c.route = route;
    c.via_slot = via_slot;
    c.frame = NULL;
    c.frame_len = 0U;
    c.send_slot = PBX_CORE_SLOT_NONE;
    c.send_copy = false;
    c.reply = frame;
    c.reply_len = len;
    c.recv_count = slot_count;
    for (size_t i = 0; i < PBX_CORE_RECV_SLOTS_MAX; i++) {
        c.recv_slots[i] = i < slot_count ? slots[i] : PBX_CORE_SLOT_NONE;
    }
    pbx_core_call_end(ctx, o);
    pbx_err err = pbx_core_judge(ctx, kind, owner, &c);
    if (err != PBX_OK && pbx_core_exit_status(ctx) == PBX_CORE_EXIT_NONE) {
        return pbx_core_fail(ctx,
                             err == PBX_E_CORE_CLEANUP_REJECTED
                                 ? PBX_CORE_EXIT_CLEANUP
                                 : PBX_CORE_EXIT_PROGRESS,
                             err);
    }
    return err;
}

uint32_t pbx_core_calls_outstanding(const pbx_core_ctx *ctx)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < PBX_CORE_CALL_CLASSES; k++) {
        n += ctx->calls_out[k];
    }
    return n;
}
