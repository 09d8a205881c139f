/*
 * rt_attach.c: route re-attachment over the supervisor connection (slot
 * 4), and the loss of launchd's broker endpoint.
 *
 * A restarted peer's new route reaches powerboxd only as a ROUTE_ATTACH
 * from its creator on slot 4 (capabi/pbx_capabi.h has the wire). It is
 * judged before anything uses it, exactly as the startup inventory
 * judges the slot it replaces (kind, exact rights; it counts as
 * root-transferred because slot 4 is the creator's own connection) and
 * then by the kernel's word on its peer: a connected process running as
 * powerboxd's user whose pid is the one the creator named. Only then is
 * the old route deleted by the replacement, its down state cleared and
 * the core told. Every refusal deletes every descriptor the message
 * carried. Each attach gets one answer datagram and one log line.
 */
#include "powerboxd/runtime/rt_int.h"

/* The core route a pbx_capabi_route replaces, or PBX_CORE_ROUTE_COUNT for
 * the broker, which is no core route. */
static uint32_t rt_attach_core_route(uint32_t route)
{
    switch (route) {
    case PBX_CAPABI_ROUTE_VFSD:
        return PBX_CORE_ROUTE_VFSD;
    case PBX_CAPABI_ROUTE_TTYD:
        return PBX_CORE_ROUTE_TTYD;
    case PBX_CAPABI_ROUTE_PROCD:
        return PBX_CORE_ROUTE_PROCD;
    case PBX_CAPABI_ROUTE_WAKE:
        return PBX_CORE_ROUTE_LAUNCHD;
    default:
        return PBX_CORE_ROUTE_COUNT;
    }
}

pbx_err rt_broker_lost(rt_state *s)
{
    if (s->broker_down != 0U) {
        return PBX_OK;
    }
    s->broker_down = 1U;
    rt_log_note("powerboxd: launchd's broker endpoint hung up: its "
                "requests end and no job keeps a grant; the service goes on");
    return pbx_core_on_broker_lost(&s->core);
}

/* Sends the answer to an attach on slot 4; a creator that cannot take
 * it loses only the answer (it reads the log line instead). */
static void rt_attach_answer(rt_state *s, const pbx_capabi_attach *a,
                             pbx_err status)
{
    uint8_t buf[PBX_CAPABI_ANSWER_BYTES];
    pbx_capabi_answer ans = {a->route, a->peer_pid, (uint32_t)status};
    rt_log_attach(a->route, a->peer_pid, status);
    if (pbx_capabi_answer_encode(&ans, buf, sizeof(buf)) == PBX_OK) {
        (void)pbx_port_notify(&s->port, (int32_t)PBX_CAPABI_SLOT_SUPERVISOR,
                              buf, (uint32_t)sizeof(buf));
    }
}

/* Judges staged receipt 0 as the route a names, by capabi: the startup
 * expectation of the slot it replaces, then the peer's credentials. */
static pbx_err rt_attach_judge(rt_state *s, const pbx_capabi_attach *a)
{
    pbx_port_slot_info info;
    uint32_t self_uid = 0;
    const pbx_capabi_expect *want =
        pbx_capabi_expected(pbx_capabi_attach_entry(a->route));
    pbx_err err = pbx_port_receipt_query(&s->port, 0U, &info);
    if (err != PBX_OK) {
        return err;
    }
    err = pbx_port_self_uid(&s->port, &self_uid);
    if (err != PBX_OK) {
        return err;
    }
    pbx_capabi_observed obs = {0U, info.kind, rt_rights_at(&info, want->slot),
                               PBX_CAPABI_PROV_ROOT_TRANSFERRED};
    pbx_capabi_peer peer = {
        (info.flags & PBX_PORT_INFO_PEER) != 0U && info.peer_pid > 0 ? 1U : 0U,
        info.peer_pid > 0 ? (uint32_t)info.peer_pid : 0U, info.peer_uid,
        self_uid};
    return pbx_capabi_check_attach(a, &obs, &peer);
}

/* Replaces the route a names by staged receipt 0. The route the new one
 * replaces is lost first if the core did not know yet (its calls could
 * never be answered now). Returns the port's error, a fail-stop error in
 * *stop, or PBX_OK with the core told the route is back. */
static pbx_err rt_attach_install(rt_state *s, const pbx_capabi_attach *a,
                                 pbx_err *stop)
{
    uint32_t r = rt_attach_core_route(a->route);
    int32_t slot =
        (int32_t)pbx_capabi_expected(pbx_capabi_attach_entry(a->route))->slot;
    *stop = r < (uint32_t)PBX_CORE_ROUTE_COUNT ? rt_route_down(s, r)
                                               : rt_broker_lost(s);
    if (*stop != PBX_OK) {
        return PBX_OK;
    }
    pbx_err err = pbx_port_route_replace(&s->port, 0U, slot);
    /* The slot holds another route now (or, after a failure, may): it is
     * judged afresh when next observed. */
    rt_judged_forget(s, (uint32_t)slot);
    if (err != PBX_OK) {
        return err;
    }
    if (r >= (uint32_t)PBX_CORE_ROUTE_COUNT) {
        /* A fresh broker endpoint: BEGIN is accepted on it as on the
         * first (the port watches it again). */
        s->broker_down = 0U;
        return PBX_OK;
    }
    s->route_down[r] = 0U;
    s->route_lost[r] = 0U;
    s->watching[r] = 0U; /* rt_watch_routes watches it afresh. */
    *stop = pbx_core_on_route_up(&s->core, (pbx_core_route)r);
    return PBX_OK;
}

/* The refusal a port error on receive stands for in the answer: a frame
 * too long, or too many or foreign descriptors (all already deleted). */
static pbx_err rt_attach_recv_refusal(pbx_err err)
{
    switch (err) {
    case PBX_E_PORT_MSG_TRUNC:
        return PBX_E_CAPABI_ATTACH_LENGTH;
    case PBX_E_PORT_CTRUNC:
    case PBX_E_PORT_CONTROL_MALFORMED:
    case PBX_E_PORT_SLOT_RANGE:
        return PBX_E_CAPABI_ATTACH_COUNT;
    default:
        return err;
    }
}

/* The supervisor connection is gone: logged once. */
static void rt_attach_closed(rt_state *s)
{
    if (s->supervisor_down == 0U) {
        s->supervisor_down = 1U;
        rt_log_note("powerboxd: the supervisor connection closed: no "
                    "route is attached any more");
    }
}

pbx_err rt_attach(rt_state *s, bool closed)
{
    /* One byte more than a frame, so a longer one is seen as truncated. */
    uint8_t buf[PBX_CAPABI_ATTACH_BYTES + 1U];
    pbx_port_msg m;
    pbx_capabi_attach a = {0U, 0U};
    if (closed) {
        rt_attach_closed(s);
        return PBX_OK;
    }
    pbx_err err = pbx_port_supervisor_recv(&s->port, buf, sizeof(buf), &m);
    if (err == PBX_E_PORT_AGAIN ||
        (err == PBX_E_PORT_RECEIPTS_PENDING && s->staged_again != 0U)) {
        return PBX_OK; /* Nothing, or it waits for that deletion. */
    }
    if (err == PBX_E_PORT_PEER_CLOSED || err == PBX_E_PORT_STATE) {
        rt_attach_closed(s);
        return PBX_OK;
    }
    if (err == PBX_E_PORT_DELETE_UNPROVEN) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
        return PBX_OK;
    }
    if (err != PBX_OK) {
        /* Refused by the port: every descriptor is already deleted. */
        rt_attach_answer(s, &a, rt_attach_recv_refusal(err));
        return PBX_OK;
    }
    if (pbx_capabi_usage_is_query(buf, m.len_bytes)) {
        rt_usage_answer(s, buf, m.len_bytes, m.receipts);
        return PBX_OK;
    }
    err = pbx_capabi_attach_decode(buf, m.len_bytes, m.receipts, &a);
    if (err == PBX_OK) {
        err = rt_attach_judge(s, &a);
    }
    pbx_err stop = PBX_OK;
    if (err == PBX_OK) {
        err = rt_attach_install(s, &a, &stop);
    }
    /* Whatever is still staged was refused (or not moved): deleted. */
    rt_staged_drop(s);
    rt_attach_answer(s, &a, stop != PBX_OK ? stop : err);
    return stop;
}
