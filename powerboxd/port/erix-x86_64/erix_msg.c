/*
 * erix_msg.c: the public endpoint, waiting, and message transport of the
 * erix-x86_64 port. A public message arrives with a one-shot reply
 * capability that the kernel places in one of the port's reply slots; the
 * slot number is the message's from_slot, and sending to it replies.
 */
#include "powerboxd/port/erix-x86_64/erix_int.h"

int erix_reply_find(const pbx_port_ctx *ctx, int32_t slot, uint32_t *at)
{
    for (uint32_t i = 0; i < ctx->client_count && i < PBX_PORT_CLIENTS_MAX;
         i++) {
        if (ctx->clients[i] == slot) {
            *at = i;
            return 1;
        }
    }
    return 0;
}

void erix_reply_forget(pbx_port_ctx *ctx, uint32_t at)
{
    ctx->client_count--;
    ctx->clients[at] = ctx->clients[ctx->client_count];
    ctx->clients[ctx->client_count] = PBX_PORT_SLOT_NONE;
}

/* Finds a reply slot not in use; returns it or PBX_PORT_SLOT_NONE. */
static int32_t erix_reply_free(const pbx_port_ctx *ctx)
{
    for (int32_t s = ERIX_SLOT_REPLY; s < ERIX_SLOT_PRIVATE_END; s++) {
        uint32_t at = 0;
        if (!erix_reply_find(ctx, s, &at)) {
            return s;
        }
    }
    return PBX_PORT_SLOT_NONE;
}

pbx_err pbx_port_public_open(pbx_port_ctx *ctx, int32_t slot,
                             const uint8_t *name, uint32_t name_len)
{
    int32_t at = slot == PBX_PORT_SLOT_NONE ? ERIX_SLOT_PUBLIC : slot;
    /* An EriX endpoint is named by its capability alone; the name exists
     * for the Linux port, but must still be well formed here. */
    if ((ctx->flags & ERIX_FLAG_INIT) == 0U || ctx->public_slot >= 0) {
        return PBX_E_PORT_STATE;
    }
    if (name == (const uint8_t *)0 || name_len == 0U || name_len > 107U) {
        return PBX_E_PORT_NAME;
    }
    if (at < 0 ||
        (slot != PBX_PORT_SLOT_NONE && at >= PBX_PORT_STARTUP_SLOTS)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (erix_type(at) != ERIX_OBJ_EMPTY) {
        return PBX_E_PORT_SLOT_OCCUPIED;
    }
    if (erix_sys(ERIX_SYS_ENDPOINT_CREATE, (uint64_t)at, 0, 0, 0,
                 (uint64_t *)0) != ERIX_OK ||
        erix_sys(ERIX_SYS_WAITSET_BIND, ERIX_SLOT_WAITSET, (uint64_t)at,
                 ERIX_READY_RECV,
                 ((uint64_t)ERIX_TAG_PUBLIC << 32) | (uint32_t)at,
                 (uint64_t *)0) != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->public_slot = at;
    return PBX_OK;
}

pbx_err pbx_port_broker_open(pbx_port_ctx *ctx, int32_t slot)
{
    /* An EriX endpoint cannot hang up under its receiver: once bound, the
     * broker endpoint is watched for as long as powerboxd runs. */
    if ((ctx->flags & ERIX_FLAG_INIT) == 0U || ctx->broker_slot >= 0 ||
        slot == ctx->public_slot) {
        return PBX_E_PORT_STATE;
    }
    if (slot < 0 || slot >= PBX_PORT_STARTUP_SLOTS) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (erix_sys(ERIX_SYS_WAITSET_BIND, ERIX_SLOT_WAITSET, (uint64_t)slot,
                 ERIX_READY_RECV,
                 ((uint64_t)ERIX_TAG_BROKER << 32) | (uint32_t)slot,
                 (uint64_t *)0) != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->broker_slot = slot;
    return PBX_OK;
}

pbx_err pbx_port_watch(pbx_port_ctx *ctx, int32_t slot, uint32_t want)
{
    uint64_t interest = 0;
    /* Routes live outside the port's private slots; the public endpoint is
     * watched by the port itself. */
    if (slot < 0 || slot > ERIX_SLOT_LIMIT ||
        (slot >= ERIX_SLOT_WAITSET && slot < ERIX_SLOT_PRIVATE_END) ||
        slot == ctx->broker_slot ||
        (want & ~(PBX_PORT_WANT_READ | PBX_PORT_WANT_WRITE)) != 0U ||
        (ctx->flags & ERIX_FLAG_INIT) == 0U) {
        return PBX_E_PORT_STATE;
    }
    interest |= (want & PBX_PORT_WANT_READ) != 0U ? ERIX_READY_RECV : 0U;
    interest |= (want & PBX_PORT_WANT_WRITE) != 0U ? ERIX_READY_SEND : 0U;
    return erix_sys(ERIX_SYS_WAITSET_BIND, ERIX_SLOT_WAITSET, (uint64_t)slot,
                    interest, ((uint64_t)ERIX_TAG_ROUTE << 32) | (uint32_t)slot,
                    (uint64_t *)0) == ERIX_OK
               ? PBX_OK
               : PBX_E_PORT_SYSCALL;
}

/* Binds slot in the wait set with interest (0: not watched) under tag. */
static pbx_err erix_public_bind(int32_t slot, uint64_t interest, uint32_t tag)
{
    if (slot < 0) {
        return PBX_OK;
    }
    return erix_sys(ERIX_SYS_WAITSET_BIND, ERIX_SLOT_WAITSET, (uint64_t)slot,
                    interest, ((uint64_t)tag << 32) | (uint32_t)slot,
                    (uint64_t *)0) == ERIX_OK
               ? PBX_OK
               : PBX_E_PORT_SYSCALL;
}

pbx_err pbx_port_public_hold(pbx_port_ctx *ctx, uint32_t hold)
{
    /* Held messages stay queued on the endpoints: the kernel keeps them
     * until the wait set watches the endpoints again. */
    uint64_t interest = hold != 0U ? 0U : ERIX_READY_RECV;
    if ((ctx->flags & ERIX_FLAG_INIT) == 0U) {
        return PBX_E_PORT_STATE;
    }
    pbx_err err = erix_public_bind(ctx->public_slot, interest, ERIX_TAG_PUBLIC);
    pbx_err b = erix_public_bind(ctx->broker_slot, interest, ERIX_TAG_BROKER);
    return err != PBX_OK ? err : b;
}

/* Takes one wait set event; flags ERIX_WAIT_NONBLOCK returns at once. */
static pbx_err erix_wait(pbx_port_ctx *ctx, pbx_port_event *ev, uint64_t flags,
                         uint64_t timeout_ms)
{
    struct erix_wait_event got;
    int64_t st;
    ev->kind = 0;
    ev->slot = PBX_PORT_SLOT_NONE;
    if ((ctx->flags & ERIX_FLAG_INIT) == 0U) {
        return PBX_E_PORT_STATE;
    }
    pbx_mem_set(&got, 0, sizeof(got));
    st = erix_sys(ERIX_SYS_WAITSET_WAIT, ERIX_SLOT_WAITSET, (uintptr_t)&got,
                  flags, timeout_ms, (uint64_t *)0);
    if (st == ERIX_E_INTERRUPTED || st == ERIX_E_WOULD_BLOCK) {
        return PBX_E_PORT_AGAIN;
    }
    if (st != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    ev->slot = (int32_t)(uint32_t)(got.token & 0xFFFFFFFFU);
    if ((got.token >> 32) == ERIX_TAG_PUBLIC ||
        (got.token >> 32) == ERIX_TAG_BROKER) {
        ev->kind = PBX_PORT_EV_PUBLIC_READABLE;
    } else if ((got.ready & ERIX_READY_ERROR) != 0U) {
        ev->kind = PBX_PORT_EV_ROUTE_ERROR;
    } else if ((got.ready & ERIX_READY_SEND) != 0U) {
        ev->kind = PBX_PORT_EV_ROUTE_WRITABLE;
    } else {
        ev->kind = PBX_PORT_EV_ROUTE_READABLE;
    }
    return PBX_OK;
}

pbx_err pbx_port_wait(pbx_port_ctx *ctx, pbx_port_event *ev)
{
    return erix_wait(ctx, ev, 0U, 0U);
}

pbx_err pbx_port_poll(pbx_port_ctx *ctx, pbx_port_event *ev)
{
    return erix_wait(ctx, ev, ERIX_WAIT_NONBLOCK, 0U);
}

pbx_err pbx_port_wait_for(pbx_port_ctx *ctx, pbx_port_event *ev,
                          uint32_t timeout_ms)
{
    pbx_err err = erix_wait(ctx, ev, ERIX_WAIT_TIMEOUT,
                            timeout_ms == 0U ? 1U : (uint64_t)timeout_ms);
    if (err == PBX_E_PORT_AGAIN) {
        ev->kind = PBX_PORT_EV_TIMEOUT;
        ev->slot = PBX_PORT_SLOT_NONE;
        return PBX_OK;
    }
    return err;
}

pbx_err pbx_port_receipts_delete(pbx_port_ctx *ctx, uint32_t *deleted)
{
    pbx_err first = PBX_OK;
    uint32_t again = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < ctx->staged_count && i < PBX_PORT_RECEIPTS_MAX;
         i++) {
        if (ctx->staged[i] != PBX_PORT_SLOT_NONE) {
            pbx_err err = erix_delete_to(ctx->staged[i], ERIX_OBJ_EMPTY);
            if (err == PBX_E_PORT_DELETE_AGAIN) {
                again = 1U; /* Still held: stays staged for the retry. */
                continue;
            }
            first = first == PBX_OK ? err : first;
            ctx->staged[i] = PBX_PORT_SLOT_NONE;
            n++;
        }
    }
    /* A permanent failure outranks an interrupted deletion. */
    if (again != 0U) {
        first = first == PBX_OK ? PBX_E_PORT_DELETE_AGAIN : first;
    } else {
        ctx->staged_count = 0;
    }
    if (deleted != (uint32_t *)0) {
        *deleted = n;
    }
    return first;
}

/* Prepares a receive descriptor naming the port's staging slots. */
static void erix_recv_desc(struct erix_ipc_desc *d, uint8_t *buf, uint32_t cap,
                           uint32_t reply_slot, uint32_t flags)
{
    pbx_mem_set(d, 0, sizeof(*d));
    d->buf = (uintptr_t)buf;
    d->len = cap;
    d->flags = flags;
    d->reply_slot = reply_slot;
    for (uint32_t i = 0; i < ERIX_IPC_CAPS_MAX; i++) {
        d->caps[i] = (uint32_t)ERIX_SLOT_STAGE + i;
    }
}

/* Stages what a completed receive delivered and judges it: truncation of
 * data or capabilities deletes every receipt, and a deletion failure takes
 * precedence over the original status. */
static pbx_err erix_recv_judge(pbx_port_ctx *ctx, const struct erix_ipc_desc *d)
{
    pbx_err err = PBX_OK;
    pbx_err del;
    uint32_t n = d->cap_count <= ERIX_IPC_CAPS_MAX ? d->cap_count : 0U;
    for (uint32_t i = 0; i < n; i++) {
        ctx->staged[i] = ERIX_SLOT_STAGE + (int32_t)i;
    }
    ctx->staged_count = n;
    if (d->cap_count > ERIX_IPC_CAPS_MAX) {
        err = PBX_E_PORT_CONTROL_MALFORMED;
    } else if ((d->flags & ERIX_IPC_CAPS_DROPPED) != 0U) {
        err = PBX_E_PORT_CTRUNC;
    } else if ((d->flags & ERIX_IPC_TRUNC) != 0U) {
        err = PBX_E_PORT_MSG_TRUNC;
    }
    if (err == PBX_OK) {
        return PBX_OK;
    }
    del = pbx_port_receipts_delete(ctx, (uint32_t *)0);
    return del != PBX_OK ? del : err;
}

/* Reports whether any staged receipt still awaits a move or deletion. */
static int erix_staged_pending(const pbx_port_ctx *ctx)
{
    for (uint32_t i = 0; i < ctx->staged_count && i < PBX_PORT_RECEIPTS_MAX;
         i++) {
        if (ctx->staged[i] != PBX_PORT_SLOT_NONE) {
            return 1;
        }
    }
    return 0;
}

pbx_err pbx_port_public_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                             uint32_t cap_bytes, pbx_port_msg *msg)
{
    struct erix_ipc_desc d;
    int32_t reply = erix_reply_free(ctx);
    int64_t st;
    pbx_err err;
    pbx_mem_set(msg, 0, sizeof(*msg));
    if ((slot != ctx->public_slot && slot != ctx->broker_slot) || slot < 0) {
        return PBX_E_PORT_NOT_CLIENT;
    }
    if (erix_staged_pending(ctx)) {
        return PBX_E_PORT_RECEIPTS_PENDING;
    }
    if (reply == PBX_PORT_SLOT_NONE) {
        return PBX_E_PORT_CLIENTS_FULL;
    }
    erix_recv_desc(&d, buf, cap_bytes, (uint32_t)reply, ERIX_IPC_NONBLOCK);
    st = erix_sys(ERIX_SYS_IPC_RECV, (uint64_t)slot, (uintptr_t)&d, 0, 0,
                  (uint64_t *)0);
    if (st == ERIX_E_WOULD_BLOCK || st == ERIX_E_INTERRUPTED) {
        return PBX_E_PORT_AGAIN;
    }
    if (st != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->clients[ctx->client_count] = reply;
    ctx->client_count++;
    err = erix_recv_judge(ctx, &d);
    msg->from_slot = reply;
    /* The kernel's badge of the capability the sender invoked; one wider
     * than the runtime's badges is unidentified (0). */
    msg->badge = d.badge <= UINT32_MAX ? (uint32_t)d.badge : 0U;
    msg->len_bytes = err == PBX_OK ? d.len : 0U;
    msg->receipts = ctx->staged_count;
    return err;
}

pbx_err pbx_port_client_close(pbx_port_ctx *ctx, int32_t slot)
{
    uint32_t at = 0;
    if (!erix_reply_find(ctx, slot, &at)) {
        return PBX_E_PORT_NOT_CLIENT;
    }
    erix_reply_forget(ctx, at);
    return erix_delete_to(slot, ERIX_OBJ_EMPTY);
}

/* On EriX a caller holds no connection: each received message brings
 * one reply capability, which the runtime answers (or deletes) within the
 * same turn, so nothing can sit idle and nothing is closed. */
pbx_err pbx_port_clients_idle(pbx_port_ctx *ctx, uint64_t now_ms,
                              uint64_t idle_ms, uint64_t *next_ms,
                              uint32_t *closed)
{
    (void)ctx;
    (void)now_ms;
    (void)idle_ms;
    *next_ms = UINT64_MAX;
    *closed = 0U;
    return PBX_OK;
}

pbx_err pbx_port_receipt_move(pbx_port_ctx *ctx, uint32_t index,
                              int32_t dest_slot)
{
    int32_t from;
    if (index >= ctx->staged_count || index >= PBX_PORT_RECEIPTS_MAX ||
        ctx->staged[index] == PBX_PORT_SLOT_NONE) {
        return PBX_E_PORT_RECEIPT_INDEX;
    }
    if (dest_slot < ctx->slot_min || dest_slot > ctx->slot_max) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (erix_type(dest_slot) != ERIX_OBJ_RESERVED) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    from = ctx->staged[index];
    if (erix_sys(ERIX_SYS_SLOT_MOVE, (uint64_t)from, (uint64_t)dest_slot, 0, 0,
                 (uint64_t *)0) != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    ctx->staged[index] = PBX_PORT_SLOT_NONE;
    return erix_type(from) == ERIX_OBJ_EMPTY ? PBX_OK
                                             : PBX_E_PORT_DELETE_UNPROVEN;
}

/* Maps a send status to the port's errors. */
static pbx_err erix_send_status(int64_t st)
{
    if (st == ERIX_OK) {
        return PBX_OK;
    }
    if (st == ERIX_E_WOULD_BLOCK) {
        return PBX_E_PORT_BACKPRESSURE;
    }
    return st == ERIX_E_PEER_GONE ? PBX_E_PORT_PEER_CLOSED : PBX_E_PORT_SYSCALL;
}

/* Prepares a send descriptor carrying at most one capability copy. */
static void erix_send_desc(struct erix_ipc_desc *d, const uint8_t *msg,
                           uint32_t len, int32_t cap_slot)
{
    pbx_mem_set(d, 0, sizeof(*d));
    d->buf = (uintptr_t)msg;
    d->len = len;
    d->flags = ERIX_IPC_NONBLOCK;
    d->reply_slot = ERIX_SLOT_NONE;
    if (cap_slot != PBX_PORT_SLOT_NONE) {
        d->cap_count = 1U;
        d->caps[0] = (uint32_t)cap_slot;
    }
}

pbx_err pbx_port_send(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                      uint32_t len_bytes, int32_t cap_slot)
{
    struct erix_ipc_desc d;
    uint32_t at = 0;
    int64_t st;
    if (slot < 0 || slot > ERIX_SLOT_LIMIT ||
        (cap_slot != PBX_PORT_SLOT_NONE &&
         (cap_slot < 0 || cap_slot > ERIX_SLOT_LIMIT))) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    erix_send_desc(&d, msg, len_bytes, cap_slot);
    if (!erix_reply_find(ctx, slot, &at)) {
        return erix_send_status(erix_sys(ERIX_SYS_IPC_SEND, (uint64_t)slot,
                                         (uintptr_t)&d, 0, 0, (uint64_t *)0));
    }
    /* A reply consumes the one-shot reply capability whatever the outcome
     * except backpressure, after which the reply is retried. */
    st = erix_sys(ERIX_SYS_IPC_REPLY, (uint64_t)slot, (uintptr_t)&d, 0, 0,
                  (uint64_t *)0);
    if (st != ERIX_E_WOULD_BLOCK) {
        erix_reply_forget(ctx, at);
    }
    return erix_send_status(st);
}

pbx_err pbx_port_call_send(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                           uint32_t len_bytes, int32_t cap_slot)
{
    struct erix_ipc_desc d;
    (void)ctx;
    if (slot < 0 || slot > ERIX_SLOT_LIMIT ||
        (cap_slot != PBX_PORT_SLOT_NONE &&
         (cap_slot < 0 || cap_slot > ERIX_SLOT_LIMIT))) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    erix_send_desc(&d, msg, len_bytes, cap_slot);
    /* The kernel mints a one-shot reply capability to this same route
     * endpoint and hands it to the peer with the call; the peer's reply
     * then arrives on the route as an ordinary message, which
     * pbx_port_route_recv takes when the wait set reports it. */
    d.flags |= ERIX_IPC_REPLY_TO;
    d.reply_slot = (uint32_t)slot;
    return erix_send_status(erix_sys(ERIX_SYS_IPC_SEND, (uint64_t)slot,
                                     (uintptr_t)&d, 0, 0, (uint64_t *)0));
}

pbx_err pbx_port_notify(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                        uint32_t len_bytes)
{
    struct erix_ipc_desc d;
    (void)ctx;
    if (slot < 0 || slot > ERIX_SLOT_LIMIT) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    erix_send_desc(&d, msg, len_bytes, PBX_PORT_SLOT_NONE);
    return erix_send_status(erix_sys(ERIX_SYS_IPC_SEND, (uint64_t)slot,
                                     (uintptr_t)&d, 0, 0, (uint64_t *)0));
}

pbx_err pbx_port_route_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                            uint32_t cap_bytes, pbx_port_msg *msg)
{
    struct erix_ipc_desc d;
    int64_t st;
    pbx_err err;
    pbx_mem_set(msg, 0, sizeof(*msg));
    if (slot < 0 || slot > ERIX_SLOT_LIMIT) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (erix_staged_pending(ctx)) {
        return PBX_E_PORT_RECEIPTS_PENDING;
    }
    /* A reply to a split-phase call (sent with ERIX_IPC_REPLY_TO) arrives
     * as an ordinary message on the route's reply endpoint. */
    erix_recv_desc(&d, buf, cap_bytes, ERIX_SLOT_NONE, ERIX_IPC_NONBLOCK);
    st = erix_sys(ERIX_SYS_IPC_RECV, (uint64_t)slot, (uintptr_t)&d, 0, 0,
                  (uint64_t *)0);
    if (st == ERIX_E_WOULD_BLOCK || st == ERIX_E_INTERRUPTED) {
        return PBX_E_PORT_AGAIN;
    }
    if (st == ERIX_E_PEER_GONE) {
        return PBX_E_PORT_PEER_CLOSED;
    }
    if (st != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    err = erix_recv_judge(ctx, &d);
    msg->from_slot = slot;
    msg->len_bytes = err == PBX_OK ? d.len : 0U;
    msg->receipts = ctx->staged_count;
    return err;
}

pbx_err pbx_port_now_ms(pbx_port_ctx *ctx, uint64_t *now_ms)
{
    uint64_t ms = 0;
    (void)ctx;
    if (erix_sys(ERIX_SYS_CLOCK_MS, 0, 0, 0, 0, &ms) != ERIX_OK) {
        return PBX_E_PORT_SYSCALL;
    }
    *now_ms = ms;
    return PBX_OK;
}

pbx_err pbx_port_call(pbx_port_ctx *ctx, int32_t route, const uint8_t *req,
                      uint32_t req_bytes, int32_t cap_slot, uint8_t *resp,
                      uint32_t cap_bytes, pbx_port_msg *msg,
                      uint32_t timeout_ms)
{
    struct erix_ipc_desc out;
    struct erix_ipc_desc in;
    int64_t st;
    pbx_err err;
    pbx_mem_set(msg, 0, sizeof(*msg));
    if (erix_staged_pending(ctx)) {
        return PBX_E_PORT_RECEIPTS_PENDING;
    }
    if (route < 0 || route > ERIX_SLOT_LIMIT) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    erix_send_desc(&out, req, req_bytes, cap_slot);
    out.flags = 0U;
    erix_recv_desc(&in, resp, cap_bytes, ERIX_SLOT_NONE, 0U);
    st = erix_sys(ERIX_SYS_IPC_CALL, (uint64_t)route, (uintptr_t)&out,
                  (uintptr_t)&in, timeout_ms == 0U ? 1U : timeout_ms,
                  (uint64_t *)0);
    if (st == ERIX_E_TIMED_OUT) {
        return PBX_E_PORT_TIMEOUT;
    }
    if (st != ERIX_OK) {
        return erix_send_status(st);
    }
    err = erix_recv_judge(ctx, &in);
    msg->from_slot = route;
    msg->len_bytes = err == PBX_OK ? in.len : 0U;
    msg->receipts = ctx->staged_count;
    return err;
}
