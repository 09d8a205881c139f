/*
 * rt_loop.c: the service loop. Each turn takes at most one port event
 * (blocking only when no retained work is ready), handles it, then runs
 * at most PBX_RT_STEPS_PER_WAKE steps of retained work, which the core
 * itself serves round-robin across intake, release, grant cleanup and
 * notification. Work parked on a busy route comes back when the port
 * reports that route writable: nothing is polled.
 */
#include "powerboxd/runtime/rt_int.h"

/** RT_BADGE_LAST is the highest ordinary badge; higher values are the
 * core's reserved badges (PBX_CORE_BADGE_LAUNCHD). */
#define RT_BADGE_LAST UINT32_C(0xFFFFFFF0)

/* Gives a new public connection its badge: launchd's process gets the
 * launchd badge, every other connection a fresh number never reused, so a
 * recycled slot number cannot inherit an old caller's requests. */
static void rt_connect(rt_state *s, int32_t conn)
{
    pbx_port_slot_info info;
    uint32_t badge = s->next_badge;
    if (conn < 0 || conn >= (int32_t)RT_CONN_SLOTS) {
        return;
    }
    if (s->launchd_pid > 0 &&
        pbx_port_slot_query(&s->port, conn, &info) == PBX_OK &&
        (info.flags & PBX_PORT_INFO_PEER) != 0U &&
        info.peer_pid == s->launchd_pid) {
        badge = PBX_CORE_BADGE_LAUNCHD;
    } else {
        s->next_badge = s->next_badge >= RT_BADGE_LAST ? 1U : badge + 1U;
    }
    s->badges[conn] = badge;
}

/* Sends the core's reply on conn, then reports delivery: a transferred
 * alias leaves powerboxd only once the send succeeded, and the core may
 * retire a terminal decision only after that report. */
static pbx_err rt_reply(rt_state *s, int32_t conn)
{
    pbx_core_out *out = &s->out;
    bool delivered = false;
    if (out->len > 0U && out->len <= sizeof(out->frame)) {
        int32_t cap = out->transfer_slot != PBX_CORE_SLOT_NONE
                          ? (int32_t)out->transfer_slot
                          : PBX_PORT_SLOT_NONE;
        delivered = pbx_port_send(&s->port, conn, out->frame,
                                  (uint32_t)out->len, cap) == PBX_OK;
        if (delivered && cap != PBX_PORT_SLOT_NONE &&
            rt_drop(s, out->transfer_slot) != PBX_CORE_DELETE_OK) {
            rt_fail(s, PBX_CORE_EXIT_CLEANUP);
        }
    }
    if (out->token == PBX_CORE_NIL) {
        return PBX_OK;
    }
    return pbx_core_on_reply_delivered(&s->core, out->token,
                                       out->token_generation, delivered);
}

/* Moves every staged receipt into the transient range: a COMMIT's one
 * receipt into the exact reserved destination it names, everything else
 * into loose slots the core will delete. Returns false (with everything
 * deleted) when there is no room. */
static bool rt_place(rt_state *s, const pbx_port_msg *m, uint32_t *slots,
                     size_t *count)
{
    const uint8_t *f = s->msg;
    bool ok = true;
    *count = 0;
    if (m->receipts == 1U && m->len_bytes >= PBX_IPC_HEADER_BYTES + 4U &&
        pbx_le_get32(f) == PBX_IPC_MAGIC &&
        pbx_le_get16(f + 6) == (uint16_t)PBX_IPC_OP_COMMIT &&
        rt_commit_place(s, pbx_le_get32(f + PBX_IPC_HEADER_BYTES))) {
        slots[0] = pbx_le_get32(f + PBX_IPC_HEADER_BYTES);
        *count = 1;
        return true;
    }
    for (uint32_t i = 0; i < m->receipts && i < PBX_PORT_RECEIPTS_MAX && ok;
         i++) {
        ok = rt_loose_place(s, i, RT_O_PUBLIC, &slots[i]);
        *count += ok ? 1U : 0U;
    }
    if (ok) {
        return true;
    }
    for (size_t i = 0; i < *count; i++) {
        if (rt_drop(s, slots[i]) != PBX_CORE_DELETE_OK) {
            rt_fail(s, PBX_CORE_EXIT_CLEANUP);
        }
    }
    if (pbx_port_receipts_delete(&s->port, NULL) != PBX_OK) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
    }
    *count = 0;
    return false;
}

/* One canonical public receive on conn, dispatch, reply and delivery. */
static pbx_err rt_public(rt_state *s, int32_t conn)
{
    pbx_port_msg m;
    uint32_t slots[PBX_PORT_RECEIPTS_MAX];
    size_t n = 0;
    pbx_err err =
        pbx_port_public_recv(&s->port, conn, s->msg, sizeof(s->msg), &m);
    if (conn < 0 || conn >= (int32_t)RT_CONN_SLOTS) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    if (err == PBX_E_PORT_PEER_CLOSED || err == PBX_E_PORT_SYSCALL) {
        s->badges[conn] = 0U;
        return pbx_port_client_close(&s->port, conn);
    }
    if (err == PBX_E_PORT_DELETE_UNPROVEN) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
        return err;
    }
    if (err == PBX_E_PORT_RECEIPTS_PENDING) {
        return err;
    }
    if (err != PBX_OK) {
        /* Refused by the port (truncated, foreign control data): every
         * receipt is already deleted and the bytes are not a frame, so,
         * as for a frame the core cannot answer, the connection goes. */
        s->badges[conn] = 0U;
        return pbx_port_client_close(&s->port, conn);
    }
    if (!rt_place(s, &m, slots, &n)) {
        return PBX_OK;
    }
    err = pbx_core_on_public(&s->core, s->badges[conn], s->msg, m.len_bytes,
                             slots, n, &s->out);
    if (err != PBX_OK) {
        return err;
    }
    if (s->out.drop != PBX_OK) {
        /* No public operation to answer: drop the caller's connection. */
        s->badges[conn] = 0U;
        return pbx_port_client_close(&s->port, conn);
    }
    return rt_reply(s, conn);
}

/* The core route a startup slot serves, or PBX_CORE_ROUTE_COUNT. */
static uint32_t rt_slot_route(int32_t slot)
{
    for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
        if (slot == (int32_t)PBX_CAPABI_SLOT_VFSD + (int32_t)r) {
            return r;
        }
    }
    return PBX_CORE_ROUTE_COUNT;
}

/* A watched route became writable or failed: stop watching it and give
 * the work parked on it back to the ready lanes (a failed route then
 * fails that work instead of parking it for ever). */
static void rt_route_ready(rt_state *s, int32_t slot)
{
    uint32_t r = rt_slot_route(slot);
    if (r >= (uint32_t)PBX_CORE_ROUTE_COUNT) {
        return;
    }
    (void)pbx_port_watch(&s->port, slot, 0U);
    s->watching[r] = 0U;
    pbx_core_on_route_ready(&s->core, (pbx_core_route)r);
}

/* Handles one event; returns a fail-stop error or PBX_OK. */
static pbx_err rt_event(rt_state *s, const pbx_port_event *ev)
{
    switch (ev->kind) {
    case PBX_PORT_EV_PUBLIC_CONNECT:
        rt_connect(s, ev->slot);
        return PBX_OK;
    case PBX_PORT_EV_PUBLIC_READABLE:
        return rt_public(s, ev->slot);
    case PBX_PORT_EV_PUBLIC_CLOSED:
        if (ev->slot >= 0 && ev->slot < (int32_t)RT_CONN_SLOTS) {
            s->badges[ev->slot] = 0U;
        }
        return PBX_OK;
    case PBX_PORT_EV_ROUTE_WRITABLE:
    case PBX_PORT_EV_ROUTE_ERROR:
        rt_route_ready(s, ev->slot);
        return PBX_OK;
    default:
        return PBX_OK;
    }
}

/* Watches exactly the routes that have work parked on them. */
static void rt_watch_parked(rt_state *s)
{
    for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
        uint32_t parked =
            s->core.queues[(uint32_t)PBX_CORE_Q_PARK_REQUEST + r].count +
            s->core.queues[(uint32_t)PBX_CORE_Q_PARK_GRANT + r].count;
        if (r == (uint32_t)PBX_CORE_ROUTE_LAUNCHD) {
            parked += s->core.queues[PBX_CORE_Q_PARK_NOTIFY].count;
        }
        uint32_t want = parked > 0U ? PBX_PORT_WANT_WRITE : 0U;
        if (want != s->watching[r] &&
            pbx_port_watch(&s->port, (int32_t)PBX_CAPABI_SLOT_VFSD + (int32_t)r,
                           want) == PBX_OK) {
            s->watching[r] = want;
        }
    }
}

/* Runs up to PBX_RT_STEPS_PER_WAKE steps; *busy says work remains ready. */
static pbx_err rt_steps(rt_state *s, bool *busy)
{
    *busy = false;
    for (uint32_t i = 0; i < PBX_RT_STEPS_PER_WAKE; i++) {
        bool progressed = false;
        pbx_err err = pbx_core_step(&s->core, &progressed);
        if (err != PBX_OK) {
            return err;
        }
        if (!progressed) {
            rt_watch_parked(s);
            return PBX_OK;
        }
    }
    *busy = true;
    rt_watch_parked(s);
    return PBX_OK;
}

/* The status to exit with after a fail-stop. */
static uint8_t rt_exit_status(const rt_state *s)
{
    uint32_t st = (uint32_t)pbx_core_exit_status(&s->core);
    if (st == 0U) {
        st = s->fail_status;
    }
    return st != 0U ? (uint8_t)st : (uint8_t)PBX_CORE_EXIT_PUBLIC;
}

uint8_t rt_loop(rt_state *s)
{
    bool busy = true;
    /* The service runs until a fail-stop; every turn is bounded by one
     * event and PBX_RT_STEPS_PER_WAKE steps. */
    for (;;) {
        pbx_port_event ev;
        pbx_err err =
            busy ? pbx_port_poll(&s->port, &ev) : pbx_port_wait(&s->port, &ev);
        if (err == PBX_OK) {
            err = rt_event(s, &ev);
            if (err != PBX_OK && pbx_core_exit_status(&s->core) == 0U) {
                rt_fail(s, PBX_CORE_EXIT_PUBLIC);
            }
        } else if (err != PBX_E_PORT_AGAIN && err != PBX_E_PORT_CLIENTS_FULL) {
            rt_fail(s, PBX_CORE_EXIT_PUBLIC);
        }
        if (s->fail_status == 0U && pbx_core_exit_status(&s->core) == 0U &&
            rt_steps(s, &busy) != PBX_OK &&
            pbx_core_exit_status(&s->core) == 0U) {
            rt_fail(s, PBX_CORE_EXIT_PROGRESS);
        }
        if (s->fail_status != 0U || pbx_core_exit_status(&s->core) != 0U) {
            return rt_exit_status(s);
        }
    }
}
