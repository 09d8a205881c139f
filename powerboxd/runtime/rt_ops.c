/*
 * rt_ops.c: the core's effect table over the syscall port, and the
 * runtime's record of every transient slot. A transient slot is FREE, a
 * core RESERVED destination (placeholder), a reservation HELD with its
 * receipt, or a LOOSE capability the core owns without a reservation
 * (peer-reply receipts, surplus public receipts, aliases). Every receipt
 * the core sees lives in the transient range, so capabi can judge it.
 *
 * A deletion the port answers PBX_E_PORT_DELETE_AGAIN (interrupted or
 * retryable: the capability is still there) never ends the service. For
 * a deletion the core asked for, the core hears TRANSIENT and retries on
 * its ticks. For one the runtime owns (a moved or delivered capability,
 * a reservation the core released, staged receipts) the slot stays
 * recorded as DOOMED or RELEASING, counted, and rt_pending_retry tries
 * again every loop turn. Only a permanent rejection is exit 65.
 */
#include "powerboxd/runtime/rt_int.h"

_Static_assert(PBX_PORT_RIGHT_SEND == PBX_CAPABI_RIGHT_SEND &&
                   PBX_PORT_RIGHT_RECEIVE == PBX_CAPABI_RIGHT_RECEIVE &&
                   PBX_PORT_RIGHT_GRANT == PBX_CAPABI_RIGHT_GRANT &&
                   PBX_PORT_RIGHT_MANAGE == PBX_CAPABI_RIGHT_MANAGE &&
                   PBX_PORT_RIGHT_READ == PBX_CAPABI_RIGHT_READ &&
                   PBX_PORT_RIGHT_WRITE == PBX_CAPABI_RIGHT_WRITE,
               "port rights are capabi rights");
_Static_assert((int)PBX_PORT_KIND_MEMORY == (int)PBX_CAPABI_KIND_MEMORY &&
                   (int)PBX_PORT_KIND_PLACEHOLDER ==
                       (int)PBX_CAPABI_KIND_PLACEHOLDER,
               "port kinds are capabi kinds");

void rt_fail(rt_state *s, uint32_t status)
{
    if (s->fail_status == 0U) {
        s->fail_status = status;
    }
}

/* Maps slot to its transient index; false outside the range. */
static bool rt_tindex(const rt_state *s, uint32_t slot, uint32_t *index)
{
    return pbx_capabi_transient_index(&s->slots, slot, index) == PBX_OK;
}

/* Finds the lowest FREE transient index (rt_tfree_find, a word at a
 * time) and reserves its slot with a placeholder. */
static bool rt_tnew(rt_state *s, uint32_t *index)
{
    uint32_t i = 0;
    if (!rt_tfree_find(s, &i)) {
        return false;
    }
    if (pbx_port_reserve(&s->port, (int32_t)pbx_capabi_transient_slot(
                                       &s->slots, i)) != PBX_OK) {
        /* Whatever the failed reservation left is judged afresh. */
        rt_tset(s, i, RT_T_FREE);
        return false;
    }
    rt_tset(s, i, RT_T_RESERVED);
    *index = i;
    return true;
}

/* Records transient index as free. */
static void rt_tclear(rt_state *s, uint32_t index)
{
    rt_tset(s, index, RT_T_FREE);
    s->torigin[index] = (uint8_t)RT_O_NONE;
}

/* Gives a reservation (placeholder only) back. An interrupted release
 * keeps the reservation recorded and counted as RELEASING, retried every
 * turn; a permanent rejection is a cleanup fail-stop. */
static void rt_tfree(rt_state *s, uint32_t index)
{
    pbx_err err = pbx_port_unreserve(
        &s->port, (int32_t)pbx_capabi_transient_slot(&s->slots, index));
    if (err == PBX_E_PORT_DELETE_AGAIN) {
        rt_tset(s, index, RT_T_RELEASING);
        s->releasing++;
        return;
    }
    if (err != PBX_OK) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
    }
    rt_tclear(s, index);
}

bool rt_loose_place(rt_state *s, uint32_t index, rt_origin origin,
                    uint32_t *slot)
{
    uint32_t t = 0;
    if (!rt_tnew(s, &t)) {
        return false;
    }
    *slot = pbx_capabi_transient_slot(&s->slots, t);
    if (pbx_port_receipt_move(&s->port, index, (int32_t)*slot) != PBX_OK) {
        rt_tfree(s, t);
        return false;
    }
    rt_tset(s, t, RT_T_LOOSE);
    s->torigin[t] = (uint8_t)origin;
    return true;
}

bool rt_commit_place(rt_state *s, uint32_t dest)
{
    uint32_t t = 0;
    if (!rt_tindex(s, dest, &t) || s->tstate[t] != (uint8_t)RT_T_RESERVED) {
        return false;
    }
    if (pbx_port_receipt_move(&s->port, 0, (int32_t)dest) != PBX_OK) {
        /* A move that failed after the swap leaves the receipt there:
         * whatever dest holds is judged afresh. */
        rt_judged_forget(s, dest);
        return false;
    }
    rt_tset(s, t, RT_T_HELD);
    s->torigin[t] = (uint8_t)RT_O_PUBLIC;
    return true;
}

/* The core's view of a port deletion result: an interrupted one is
 * TRANSIENT (the capability is still held), anything else but success a
 * permanent rejection. */
static pbx_core_delete rt_delete_result(pbx_err err)
{
    if (err == PBX_OK) {
        return PBX_CORE_DELETE_OK;
    }
    return err == PBX_E_PORT_DELETE_AGAIN ? PBX_CORE_DELETE_TRANSIENT
                                          : PBX_CORE_DELETE_REJECTED;
}

pbx_core_delete rt_drop(rt_state *s, uint32_t slot)
{
    uint32_t t = 0;
    pbx_core_delete d;
    if (!rt_tindex(s, slot, &t)) {
        return PBX_CORE_DELETE_REJECTED;
    }
    if (s->tstate[t] == (uint8_t)RT_T_HELD) {
        /* The reservation stays: the placeholder goes back over it. */
        d = rt_delete_result(pbx_port_slot_restore(&s->port, (int32_t)slot));
        if (d == PBX_CORE_DELETE_OK) {
            rt_tset(s, t, RT_T_RESERVED);
            s->torigin[t] = (uint8_t)RT_O_NONE;
        }
        return d;
    }
    if (s->tstate[t] == (uint8_t)RT_T_LOOSE) {
        d = rt_delete_result(pbx_port_slot_delete(&s->port, (int32_t)slot));
        if (d == PBX_CORE_DELETE_OK) {
            rt_tclear(s, t);
        }
        return d;
    }
    /* Deleting what the runtime never handed over is a broken invariant. */
    return PBX_CORE_DELETE_REJECTED;
}

void rt_dispose(rt_state *s, uint32_t slot)
{
    uint32_t t = 0;
    if (!rt_tindex(s, slot, &t) || s->tstate[t] != (uint8_t)RT_T_LOOSE) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
        return;
    }
    pbx_core_delete d = rt_drop(s, slot);
    if (d == PBX_CORE_DELETE_TRANSIENT) {
        /* Still held: recorded and counted until a later turn's retry
         * deletes it. */
        rt_tset(s, t, RT_T_DOOMED);
        s->doomed++;
    } else if (d != PBX_CORE_DELETE_OK) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
    }
}

void rt_staged_drop(rt_state *s)
{
    pbx_err err = pbx_port_receipts_delete(&s->port, NULL);
    s->staged_again = err == PBX_E_PORT_DELETE_AGAIN ? 1U : 0U;
    if (err != PBX_OK && err != PBX_E_PORT_DELETE_AGAIN) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
    }
}

/* Retries one DOOMED or RELEASING transient index once: done, still
 * pending, or a permanent rejection (fail-stop 65). */
static void rt_retry_one(rt_state *s, uint32_t index)
{
    bool doomed = s->tstate[index] == (uint8_t)RT_T_DOOMED;
    int32_t slot = (int32_t)pbx_capabi_transient_slot(&s->slots, index);
    pbx_err err = doomed ? pbx_port_slot_delete(&s->port, slot)
                         : pbx_port_unreserve(&s->port, slot);
    if (err == PBX_E_PORT_DELETE_AGAIN) {
        return;
    }
    if (err != PBX_OK) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
    }
    /* Done (or fail-stopped, which ends the service this turn). */
    if (doomed) {
        s->doomed--;
    } else {
        s->releasing--;
    }
    rt_tclear(s, index);
}

void rt_pending_retry(rt_state *s)
{
    if (s->staged_again != 0U) {
        rt_staged_drop(s);
    }
    /* One bounded pass: the transient range never exceeds
     * PBX_RT_TRANSIENT_MAX (checked at startup). */
    for (uint32_t i = 0;
         i < s->slots.transient_count && i < PBX_RT_TRANSIENT_MAX &&
         s->doomed + s->releasing > 0U;
         i++) {
        if (s->tstate[i] == (uint8_t)RT_T_DOOMED ||
            s->tstate[i] == (uint8_t)RT_T_RELEASING) {
            rt_retry_one(s, i);
        }
    }
}

bool rt_pending(const rt_state *s)
{
    return s->staged_again != 0U || s->doomed != 0U || s->releasing != 0U;
}

/* Linux descriptors carry no rights: derive them from what the slot is.
 * A listening endpoint receives; a connected one sends, except procd's
 * handle, which the runtime knows by origin is manage-only, and the
 * broker slot's connection, whose one sender is launchd: powerboxd only
 * receives there (and answers what it received). A listening socket in
 * the broker slot would let anyone connect, i.e. grant sending to all,
 * so it carries GRANT too and is refused. Memory reads, and writes
 * unless sealed. */
static uint32_t rt_rights_derive(const pbx_port_slot_info *info,
                                 rt_origin origin, uint32_t slot)
{
    bool peer = (info->flags & PBX_PORT_INFO_PEER) != 0U;
    bool broker = slot == PBX_CAPABI_SLOT_BROKER;
    switch (info->kind) {
    case PBX_PORT_KIND_ENDPOINT:
        if ((info->flags & PBX_PORT_INFO_LISTENING) != 0U) {
            return broker ? PBX_CAPABI_RIGHT_RECEIVE | PBX_CAPABI_RIGHT_GRANT
                          : PBX_CAPABI_RIGHT_RECEIVE;
        }
        if (peer && broker) {
            return PBX_CAPABI_RIGHT_RECEIVE;
        }
        if (!peer) {
            return 0U;
        }
        return origin == RT_O_PROCD ? PBX_CAPABI_RIGHT_MANAGE
                                    : PBX_CAPABI_RIGHT_SEND;
    case PBX_PORT_KIND_NOTIFY:
        return peer ? PBX_CAPABI_RIGHT_SEND : 0U;
    case PBX_PORT_KIND_MEMORY:
        return (info->flags & PBX_PORT_INFO_SEALED) != 0U
                   ? PBX_CAPABI_RIGHT_READ
                   : PBX_CAPABI_RIGHT_READ | PBX_CAPABI_RIGHT_WRITE;
    default:
        return 0U;
    }
}

uint32_t rt_rights_at(const pbx_port_slot_info *info, uint32_t slot)
{
    return (info->flags & PBX_PORT_INFO_RIGHTS) != 0U
               ? info->rights
               : rt_rights_derive(info, RT_O_NONE, slot);
}

/* How the capability in slot came to be there, as far as the runtime
 * knows; anything it cannot vouch for is UNKNOWN. */
static uint32_t rt_provenance(const rt_state *s, uint32_t slot, uint32_t kind,
                              rt_origin origin)
{
    if (kind == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
        return PBX_CAPABI_PROV_UNKNOWN;
    }
    if (slot == PBX_CAPABI_SLOT_PUBLIC) {
        return s->public_created != 0U ? PBX_CAPABI_PROV_LOCAL
                                       : PBX_CAPABI_PROV_ROOT_TRANSFERRED;
    }
    if (slot >= PBX_CAPABI_STARTUP_FIRST && slot < PBX_CAPABI_STARTUP_END) {
        return PBX_CAPABI_PROV_ROOT_TRANSFERRED;
    }
    if (origin == RT_O_LOCAL) {
        return PBX_CAPABI_PROV_LOCAL;
    }
    return origin == RT_O_NONE ? PBX_CAPABI_PROV_UNKNOWN
                               : PBX_CAPABI_PROV_RECEIVED;
}

/* The host cannot see where a descriptor came from, so a COMMIT scope
 * (a HELD reservation) is accepted only as a connected endpoint whose
 * peer process is the vfsd route's peer process: the provider of the
 * resolver evidence. Anything else is reported as the wrong kind, which
 * the core refuses and deletes. EriX reports rights itself and keeps its
 * kernel provenance; this check is the Linux port's stand-in. */
static bool rt_scope_foreign(rt_state *s, uint32_t slot,
                             const pbx_port_slot_info *info)
{
    pbx_port_slot_info vfsd;
    uint32_t t = 0;
    if ((info->flags & PBX_PORT_INFO_RIGHTS) != 0U || !rt_tindex(s, slot, &t) ||
        s->tstate[t] != (uint8_t)RT_T_HELD ||
        s->torigin[t] != (uint8_t)RT_O_PUBLIC) {
        return false;
    }
    if (info->kind != (uint32_t)PBX_PORT_KIND_ENDPOINT ||
        (info->flags & PBX_PORT_INFO_PEER) == 0U ||
        (info->flags & PBX_PORT_INFO_LISTENING) != 0U || info->peer_pid <= 0) {
        return true;
    }
    return rt_judged_query(s, PBX_CAPABI_SLOT_VFSD, &vfsd) != PBX_OK ||
           vfsd.kind != (uint32_t)PBX_PORT_KIND_ENDPOINT ||
           (vfsd.flags & PBX_PORT_INFO_PEER) == 0U ||
           vfsd.peer_pid != info->peer_pid;
}

void rt_observe(rt_state *s, uint32_t slot, pbx_capabi_observed *out)
{
    pbx_port_slot_info info;
    uint32_t t = 0;
    rt_origin origin = RT_O_NONE;
    out->slot = slot;
    if (rt_judged_query(s, slot, &info) != PBX_OK) {
        out->kind = PBX_CAPABI_KIND_OTHER;
        out->rights = 0U;
        out->provenance = PBX_CAPABI_PROV_UNKNOWN;
        return;
    }
    if (rt_tindex(s, slot, &t)) {
        origin = (rt_origin)s->torigin[t];
    }
    if (rt_scope_foreign(s, slot, &info)) {
        out->kind = PBX_CAPABI_KIND_OTHER;
        out->rights = 0U;
        out->provenance = PBX_CAPABI_PROV_UNKNOWN;
        return;
    }
    out->kind = info.kind;
    out->rights = (info.flags & PBX_PORT_INFO_RIGHTS) != 0U
                      ? info.rights
                      : rt_rights_derive(&info, origin, slot);
    out->provenance = rt_provenance(s, slot, info.kind, origin);
}

/* The startup slot of each core route. */
static int32_t rt_route_slot(uint32_t route)
{
    static const int32_t slots[PBX_CORE_ROUTE_COUNT] = {
        PBX_CAPABI_SLOT_VFSD, PBX_CAPABI_SLOT_TTYD, PBX_CAPABI_SLOT_PROCD,
        PBX_CAPABI_SLOT_LAUNCHD};
    return route < PBX_CORE_ROUTE_COUNT ? slots[route] : PBX_PORT_SLOT_NONE;
}

/* Whether slot is a capability the core holds in the transient range. */
static bool rt_held(const rt_state *s, uint32_t slot)
{
    uint32_t t = 0;
    return rt_tindex(s, slot, &t) && (s->tstate[t] == (uint8_t)RT_T_HELD ||
                                      s->tstate[t] == (uint8_t)RT_T_LOOSE);
}

/* Whether call c may send slot: a copy of anything the core holds, or a
 * move of a LOOSE capability only (the core moves only object copies
 * that came with a peer reply), whose later deletion the runtime owns. */
static bool rt_movable(const rt_state *s, uint32_t slot, const pbx_core_call *c)
{
    uint32_t t = 0;
    if (c->send_copy) {
        return rt_held(s, slot);
    }
    return rt_tindex(s, slot, &t) && s->tstate[t] == (uint8_t)RT_T_LOOSE;
}

int32_t rt_route_slot_of(uint32_t route)
{
    return rt_route_slot(route);
}

/* Queues one call without waiting for its reply: the reply is a later
 * event on the route (for RESOLVE through a scope, on vfsd's route; the
 * scope is watched from now on too, so that anything read there reaches
 * the core, which refuses it and deletes its receipts). */
static pbx_core_io rt_op_send(void *user, const pbx_core_call *c)
{
    rt_state *s = user;
    bool scoped = c->route == PBX_CORE_ROUTE_SCOPE;
    if (c->route == PBX_CORE_ROUTE_VFSD) {
        /* A RETIRE of an approved grant that ended: its log line, once. */
        rt_log_grant_end(s, c->frame, c->frame_len);
    }
    int32_t via = scoped ? (int32_t)c->via_slot : rt_route_slot(c->route);
    int32_t cap = c->send_slot != PBX_CORE_SLOT_NONE ? (int32_t)c->send_slot
                                                     : PBX_PORT_SLOT_NONE;
    if (s->fail_status != 0U || via == PBX_PORT_SLOT_NONE ||
        c->frame_len > UINT32_MAX ||
        (!scoped && s->route_down[c->route % PBX_CORE_ROUTE_COUNT] != 0U) ||
        (scoped && !rt_held(s, c->via_slot)) ||
        (cap != PBX_PORT_SLOT_NONE && !rt_movable(s, c->send_slot, c))) {
        return PBX_CORE_IO_FAILED;
    }
    pbx_err err = pbx_port_call_send(&s->port, via, c->frame,
                                     (uint32_t)c->frame_len, cap);
    if (err == PBX_E_PORT_BACKPRESSURE) {
        return PBX_CORE_IO_BUSY;
    }
    if (err == PBX_E_PORT_PEER_CLOSED && !scoped) {
        /* The loop tells the core at its next turn (never from inside a
         * core call): the route's outstanding calls end then. */
        s->route_lost[c->route % PBX_CORE_ROUTE_COUNT] = 1U;
    }
    if (err != PBX_OK) {
        /* Nothing was transferred: powerboxd still holds send_slot. */
        return PBX_CORE_IO_FAILED;
    }
    if (cap != PBX_PORT_SLOT_NONE && !c->send_copy) {
        /* Moved: the core forgets it now, so its deletion is the
         * runtime's (retried by the loop should the port be interrupted). */
        rt_dispose(s, c->send_slot);
    }
    if (scoped) {
        /* vfsd answers on its route; a frame on the scope is a fault the
         * core refuses. Should the watch fail, such a frame merely waits
         * unread: the call still ends by its reply on the route or by its
         * deadline. */
        (void)pbx_port_watch(&s->port, via, PBX_PORT_WANT_READ);
    }
    return PBX_CORE_IO_OK;
}

static void rt_op_slot_query(void *user, uint32_t slot,
                             pbx_capabi_observed *out)
{
    rt_observe(user, slot, out);
}

static pbx_core_delete rt_op_slot_delete(void *user, uint32_t slot)
{
    return rt_drop(user, slot);
}

static bool rt_op_slot_reserve(void *user, uint32_t *slot_out)
{
    rt_state *s = user;
    uint32_t t = 0;
    if (!rt_tnew(s, &t)) {
        return false;
    }
    *slot_out = pbx_capabi_transient_slot(&s->slots, t);
    return true;
}

static void rt_op_slot_release(void *user, uint32_t slot)
{
    rt_state *s = user;
    uint32_t t = 0;
    if (!rt_tindex(s, slot, &t) || s->tstate[t] != (uint8_t)RT_T_RESERVED) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
        return;
    }
    rt_tfree(s, t);
}

static pbx_core_io rt_op_alias_derive(void *user, uint32_t object,
                                      uint32_t *alias_out)
{
    rt_state *s = user;
    uint32_t t = 0;
    if (!rt_held(s, object)) {
        return PBX_CORE_IO_FAILED;
    }
    if (!rt_tnew(s, &t)) {
        return PBX_CORE_IO_BUSY;
    }
    uint32_t slot = pbx_capabi_transient_slot(&s->slots, t);
    if (pbx_port_slot_copy(&s->port, (int32_t)object, (int32_t)slot) !=
        PBX_OK) {
        rt_tfree(s, t);
        return PBX_CORE_IO_FAILED;
    }
    rt_tset(s, t, RT_T_LOOSE);
    s->torigin[t] = (uint8_t)RT_O_LOCAL;
    *alias_out = slot;
    return PBX_CORE_IO_OK;
}

static pbx_core_io rt_op_wake(void *user, const uint8_t *frame, size_t len)
{
    rt_state *s = user;
    /* The wake of a published decision: its log line, once. */
    rt_log_decision(s, frame, len);
    if (len > UINT32_MAX) {
        return PBX_CORE_IO_REJECTED; /* No retry can ever send it. */
    }
    pbx_err err = pbx_port_notify(&s->port, PBX_CAPABI_SLOT_LAUNCHD, frame,
                                  (uint32_t)len);
    if (err == PBX_E_PORT_BACKPRESSURE) {
        return PBX_CORE_IO_BUSY;
    }
    /* A slot the port refuses outright never becomes usable: permanent
     * (the core stops with the notification status). Anything else, a
     * launchd that hung up above all, is retried on a tick. */
    return err == PBX_OK                  ? PBX_CORE_IO_OK
           : err == PBX_E_PORT_SLOT_RANGE ? PBX_CORE_IO_REJECTED
                                          : PBX_CORE_IO_FAILED;
}

uint64_t rt_identity(void *user, uint32_t slot)
{
    rt_state *s = user;
    uint64_t id = 0;
    /* A descriptor is judged once, at receipt: its kept judgment answers
     * (issue 23 item 4), else the port is asked. */
    if (rt_judged_identity(s, slot, &id)) {
        return id;
    }
    if (slot > (uint32_t)INT32_MAX ||
        pbx_port_slot_identity(&s->port, (int32_t)slot, &id) != PBX_OK) {
        return 0U;
    }
    return id;
}

const pbx_core_ops rt_ops = {
    rt_op_send,         rt_op_slot_query,   rt_op_slot_delete,
    rt_op_slot_reserve, rt_op_slot_release, rt_op_alias_derive,
    rt_op_wake,
};
