/*
 * rt_fake_port.c: the scripted fake of pbx_port.h (rt_fake_port.h). Only
 * the functions powerboxd/runtime's loop and effect table call are
 * defined; startup (rt_start.c) is not part of the test build.
 */
#include "tests/rt/rt_fake_port.h"

#include "capabi/pbx_capabi.h"

#include <stdlib.h>
#include <string.h>

fk_state fk;

void fk_reset(void)
{
    memset(&fk, 0, sizeof(fk));
    fk.now_ms = 1000U;
}

void fk_event(uint32_t kind, int32_t slot)
{
    if (fk.event_count < FK_EVENTS_MAX) {
        fk.events[fk.event_count].kind = kind;
        fk.events[fk.event_count].slot = slot;
        fk.event_count++;
    }
}

uint32_t fk_staged_held(const pbx_port_ctx *ctx)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < ctx->staged_count && i < PBX_PORT_RECEIPTS_MAX;
         i++) {
        n += ctx->staged[i] != PBX_PORT_SLOT_NONE ? 1U : 0U;
    }
    return n;
}

/* Whether slot is a number the fake knows. */
static int fk_valid(int32_t slot)
{
    return slot >= 0 && (uint32_t)slot < FK_SLOTS;
}

/* One deletion attempt of slot that would leave it holding to: a
 * permanent rejection, a scripted interruption (slot unchanged), or
 * done. */
static pbx_err fk_del(int32_t slot, uint32_t to)
{
    fk.deletes[slot]++;
    if (fk.reject[slot] != 0U) {
        return PBX_E_PORT_DELETE_UNPROVEN;
    }
    if (fk.again[slot] > 0U) {
        fk.again[slot]--;
        return PBX_E_PORT_DELETE_AGAIN;
    }
    fk.kind[slot] = to;
    return PBX_OK;
}

pbx_err pbx_port_slot_delete(pbx_port_ctx *ctx, int32_t slot)
{
    (void)ctx;
    if (!fk_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (fk.kind[slot] == (uint32_t)PBX_PORT_KIND_EMPTY) {
        return PBX_E_PORT_DELETE_UNPROVEN;
    }
    return fk_del(slot, PBX_PORT_KIND_EMPTY);
}

pbx_err pbx_port_slot_restore(pbx_port_ctx *ctx, int32_t slot)
{
    (void)ctx;
    if (!fk_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (fk.kind[slot] == (uint32_t)PBX_PORT_KIND_EMPTY ||
        fk.kind[slot] == (uint32_t)PBX_PORT_KIND_PLACEHOLDER) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    return fk_del(slot, PBX_PORT_KIND_PLACEHOLDER);
}

pbx_err pbx_port_unreserve(pbx_port_ctx *ctx, int32_t slot)
{
    (void)ctx;
    if (!fk_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (fk.kind[slot] != (uint32_t)PBX_PORT_KIND_PLACEHOLDER) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    return fk_del(slot, PBX_PORT_KIND_EMPTY);
}

pbx_err pbx_port_reserve(pbx_port_ctx *ctx, int32_t slot)
{
    if (!fk_valid(slot) || slot < ctx->slot_min || slot > ctx->slot_max) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (fk.kind[slot] != (uint32_t)PBX_PORT_KIND_EMPTY) {
        return PBX_E_PORT_SLOT_OCCUPIED;
    }
    fk.kind[slot] = PBX_PORT_KIND_PLACEHOLDER;
    return PBX_OK;
}

pbx_err pbx_port_receipts_delete(pbx_port_ctx *ctx, uint32_t *deleted)
{
    pbx_err first = PBX_OK;
    uint32_t again = 0;
    uint32_t n = 0;
    for (uint32_t i = 0; i < ctx->staged_count && i < PBX_PORT_RECEIPTS_MAX;
         i++) {
        if (ctx->staged[i] == PBX_PORT_SLOT_NONE) {
            continue;
        }
        pbx_err err = fk_del(ctx->staged[i], PBX_PORT_KIND_EMPTY);
        if (err == PBX_E_PORT_DELETE_AGAIN) {
            again = 1U; /* Still held: stays staged, as the contract says. */
            continue;
        }
        first = first == PBX_OK ? err : first;
        ctx->staged[i] = PBX_PORT_SLOT_NONE;
        n++;
    }
    if (again != 0U) {
        first = first == PBX_OK ? PBX_E_PORT_DELETE_AGAIN : first;
    } else {
        ctx->staged_count = 0;
    }
    if (deleted != NULL) {
        *deleted = n;
    }
    return first;
}

pbx_err pbx_port_receipt_move(pbx_port_ctx *ctx, uint32_t index,
                              int32_t dest_slot)
{
    if (index >= ctx->staged_count || index >= PBX_PORT_RECEIPTS_MAX ||
        ctx->staged[index] == PBX_PORT_SLOT_NONE) {
        return PBX_E_PORT_RECEIPT_INDEX;
    }
    if (!fk_valid(dest_slot) ||
        fk.kind[dest_slot] != (uint32_t)PBX_PORT_KIND_PLACEHOLDER) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    fk.kind[dest_slot] = fk.kind[ctx->staged[index]];
    fk.kind[ctx->staged[index]] = PBX_PORT_KIND_EMPTY;
    ctx->staged[index] = PBX_PORT_SLOT_NONE;
    return PBX_OK;
}

pbx_err pbx_port_public_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                             uint32_t cap_bytes, pbx_port_msg *msg)
{
    memset(msg, 0, sizeof(*msg));
    if (fk_staged_held(ctx) != 0U) {
        return PBX_E_PORT_RECEIPTS_PENDING;
    }
    if (fk.msg_ready == 0U || fk.msg.len > cap_bytes ||
        fk.msg.receipts > PBX_PORT_RECEIPTS_MAX) {
        return PBX_E_PORT_AGAIN;
    }
    fk.msg_ready = 0U;
    memcpy(buf, fk.msg.bytes, fk.msg.len);
    for (uint32_t i = 0; i < fk.msg.receipts; i++) {
        ctx->staged[i] = FK_STAGE_FIRST + (int32_t)i;
        fk.kind[FK_STAGE_FIRST + i] = PBX_PORT_KIND_ENDPOINT;
    }
    ctx->staged_count = fk.msg.receipts;
    msg->from_slot = slot;
    msg->len_bytes = fk.msg.len;
    msg->receipts = fk.msg.receipts;
    msg->badge = fk.msg.badge;
    return PBX_OK;
}

pbx_err pbx_port_route_recv(pbx_port_ctx *ctx, int32_t slot, uint8_t *buf,
                            uint32_t cap_bytes, pbx_port_msg *msg)
{
    (void)slot;
    (void)buf;
    (void)cap_bytes;
    memset(msg, 0, sizeof(*msg));
    return fk_staged_held(ctx) != 0U ? PBX_E_PORT_RECEIPTS_PENDING
                                     : PBX_E_PORT_AGAIN;
}

pbx_err pbx_port_client_close(pbx_port_ctx *ctx, int32_t slot)
{
    (void)ctx;
    fk.closes++;
    if (fk_valid(slot)) {
        fk.kind[slot] = PBX_PORT_KIND_EMPTY;
    }
    return PBX_OK;
}

pbx_err pbx_port_send(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                      uint32_t len_bytes, int32_t cap_slot)
{
    (void)ctx;
    (void)slot;
    (void)msg;
    (void)len_bytes;
    (void)cap_slot;
    fk.sends++;
    return PBX_OK;
}

pbx_err pbx_port_call_send(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                           uint32_t len_bytes, int32_t cap_slot)
{
    return pbx_port_send(ctx, slot, msg, len_bytes, cap_slot);
}

pbx_err pbx_port_notify(pbx_port_ctx *ctx, int32_t slot, const uint8_t *msg,
                        uint32_t len_bytes)
{
    fk.notifies++;
    if (fk.notify_fail > 0U) {
        fk.notify_fail--;
        return fk.notify_err;
    }
    size_t keep =
        len_bytes < sizeof(fk.notified) ? len_bytes : sizeof(fk.notified);
    memcpy(fk.notified, msg, keep);
    fk.notified_len = len_bytes;
    fk.notified_slot = slot;
    return pbx_port_send(ctx, slot, msg, len_bytes, PBX_PORT_SLOT_NONE);
}

pbx_err pbx_port_slot_copy(pbx_port_ctx *ctx, int32_t from_slot,
                           int32_t dest_slot)
{
    (void)ctx;
    if (!fk_valid(from_slot) || !fk_valid(dest_slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (fk.kind[dest_slot] != (uint32_t)PBX_PORT_KIND_PLACEHOLDER) {
        return PBX_E_PORT_NOT_RESERVED;
    }
    fk.kind[dest_slot] = fk.kind[from_slot];
    return PBX_OK;
}

pbx_err pbx_port_slot_query(pbx_port_ctx *ctx, int32_t slot,
                            pbx_port_slot_info *info)
{
    (void)ctx;
    memset(info, 0, sizeof(*info));
    if (!fk_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    fk.queries[slot]++;
    info->kind = fk.kind[slot];
    if (info->kind == (uint32_t)PBX_PORT_KIND_ENDPOINT) {
        /* A connected endpoint of some other process. */
        info->flags = PBX_PORT_INFO_PEER;
        info->peer_pid = 4242;
        if (fk.identity_on != 0U) {
            info->flags |= PBX_PORT_INFO_IDENTITY;
            info->object_id = FK_IDENTITY(slot);
        }
    }
    return PBX_OK;
}

pbx_err pbx_port_slot_identity(pbx_port_ctx *ctx, int32_t slot,
                               uint64_t *identity)
{
    (void)ctx;
    *identity = 0U;
    if (!fk_valid(slot)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    fk.identities[slot]++;
    if (fk.identity_on == 0U ||
        fk.kind[slot] != (uint32_t)PBX_PORT_KIND_ENDPOINT) {
        return PBX_E_PORT_NO_IDENTITY;
    }
    *identity = FK_IDENTITY(slot);
    return PBX_OK;
}

/* The fake has no supervisor connection of its own: route
 * re-attachment is tested on the real image (tests/e2e), so opening it
 * answers "not in this state". A test may script one datagram (fk.sup,
 * with its receipts staged as a public receive stages them), which the
 * next supervisor_recv delivers; otherwise it answers as if none were
 * open. */
pbx_err pbx_port_supervisor_open(pbx_port_ctx *ctx, int32_t slot)
{
    (void)ctx;
    (void)slot;
    return PBX_E_PORT_STATE;
}

pbx_err pbx_port_supervisor_recv(pbx_port_ctx *ctx, uint8_t *buf,
                                 uint32_t cap_bytes, pbx_port_msg *msg)
{
    memset(msg, 0, sizeof(*msg));
    if (fk.sup_ready == 0U) {
        return PBX_E_PORT_STATE;
    }
    if (fk_staged_held(ctx) != 0U) {
        return PBX_E_PORT_RECEIPTS_PENDING;
    }
    if (fk.sup.len > cap_bytes || fk.sup.receipts > PBX_PORT_RECEIPTS_MAX) {
        return PBX_E_PORT_MSG_TRUNC;
    }
    fk.sup_ready = 0U;
    memcpy(buf, fk.sup.bytes, fk.sup.len);
    for (uint32_t i = 0; i < fk.sup.receipts; i++) {
        ctx->staged[i] = FK_STAGE_FIRST + (int32_t)i;
        fk.kind[FK_STAGE_FIRST + i] = PBX_PORT_KIND_ENDPOINT;
    }
    ctx->staged_count = fk.sup.receipts;
    msg->from_slot = (int32_t)PBX_CAPABI_SLOT_SUPERVISOR;
    msg->len_bytes = fk.sup.len;
    msg->receipts = fk.sup.receipts;
    return PBX_OK;
}

pbx_err pbx_port_receipt_query(pbx_port_ctx *ctx, uint32_t index,
                               pbx_port_slot_info *info)
{
    (void)ctx;
    (void)index;
    memset(info, 0, sizeof(*info));
    return PBX_E_PORT_RECEIPT_INDEX;
}

pbx_err pbx_port_route_replace(pbx_port_ctx *ctx, uint32_t index, int32_t slot)
{
    (void)ctx;
    (void)index;
    (void)slot;
    return PBX_E_PORT_STATE;
}

pbx_err pbx_port_self_uid(pbx_port_ctx *ctx, uint32_t *uid)
{
    (void)ctx;
    *uid = 0U;
    return PBX_E_PORT_STATE;
}

pbx_err pbx_port_watch(pbx_port_ctx *ctx, int32_t slot, uint32_t want)
{
    (void)ctx;
    (void)slot;
    (void)want;
    return PBX_OK;
}

pbx_err pbx_port_public_hold(pbx_port_ctx *ctx, uint32_t hold)
{
    (void)ctx;
    fk.held = hold;
    fk.holds += hold != 0U ? 1U : 0U;
    return PBX_OK;
}

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

pbx_err pbx_port_now_ms(pbx_port_ctx *ctx, uint64_t *now_ms)
{
    (void)ctx;
    *now_ms = fk.now_ms;
    return PBX_OK;
}

/* The next scripted event; a TIMEOUT moves the clock by ms. Once the
 * script is used up the public endpoint "fails", ending rt_loop with 64. */
static pbx_err fk_next(pbx_port_event *ev, uint32_t ms)
{
    if (fk.next_event >= fk.event_count) {
        return PBX_E_PORT_PUBLIC_DOWN;
    }
    *ev = fk.events[fk.next_event++];
    if (ev->kind == (uint32_t)PBX_PORT_EV_TIMEOUT) {
        fk.now_ms += ms;
    }
    return PBX_OK;
}

pbx_err pbx_port_wait(pbx_port_ctx *ctx, pbx_port_event *ev)
{
    (void)ctx;
    return fk_next(ev, 1000U);
}

pbx_err pbx_port_wait_for(pbx_port_ctx *ctx, pbx_port_event *ev,
                          uint32_t timeout_ms)
{
    (void)ctx;
    return fk_next(ev, timeout_ms);
}

pbx_err pbx_port_poll(pbx_port_ctx *ctx, pbx_port_event *ev)
{
    (void)ctx;
    return fk_next(ev, 1U);
}

bool pbx_port_log(const uint8_t *msg, uint32_t len_bytes)
{
    size_t keep = len_bytes < sizeof(fk.log) ? len_bytes : sizeof(fk.log) - 1U;
    memcpy(fk.log, msg, keep);
    fk.log[keep] = '\0';
    fk.logs++;
    return true;
}

bool pbx_port_print(const uint8_t *msg, uint32_t len_bytes)
{
    (void)msg;
    (void)len_bytes;
    return true;
}

_Noreturn void pbx_port_exit(uint8_t status)
{
    (void)status;
    abort();
}
