/*
 * rt_loop.c: the service loop, the one place powerboxd waits. Each turn
 * reads the clock and tells the core the time (ending calls whose
 * deadline passed), takes at most one port event (blocking only when no
 * retained work is ready, and never past the nearest call deadline or
 * deferred-work tick), handles it, then runs at most
 * PBX_RT_STEPS_PER_WAKE steps of retained work, which the core serves
 * round-robin. Peer calls are split-phase: a step sends and goes on, and
 * the reply is a readable event on the route it went on (RESOLVE, sent
 * through a scope, is answered on vfsd's route),
 * handed to the core, which matches it to its call. No peer's timing,
 * silence or death ends the service: a route whose peer hung up is
 * reported to the core and no longer watched.
 */
#include "powerboxd/runtime/rt_int.h"

/** RT_BADGE_LAST is the highest ordinary badge; higher values are the
 * core's reserved badges (PBX_CORE_BADGE_LAUNCHD). */
#define RT_BADGE_LAST UINT32_C(0xFFFFFFF0)

/* The badge of message m that arrived on conn: the launchd badge exactly
 * when it arrived on the startup-transferred broker endpoint, else the
 * badge the port reported for the capability the caller invoked (Linux:
 * a fresh number per accepted connection; EriX: the kernel's badge). 0
 * means unidentified: such a message is nobody's request. */
static uint32_t rt_badge(int32_t conn, const pbx_port_msg *m)
{
    if (conn == (int32_t)PBX_CAPABI_SLOT_BROKER) {
        return PBX_CORE_BADGE_LAUNCHD;
    }
    return m->badge <= RT_BADGE_LAST ? m->badge : 0U;
}

/* Ends a public connection after hang-up, a refused receive or a frame
 * with nothing to answer. The broker endpoint is never closed: it is a
 * startup capability (the port stops watching it once its sender is
 * gone), and a frame from it that cannot be answered is only discarded. */
static pbx_err rt_conn_end(rt_state *s, int32_t conn)
{
    if (conn == (int32_t)PBX_CAPABI_SLOT_BROKER) {
        return PBX_OK;
    }
    return pbx_port_client_close(&s->port, conn);
}

/* Sends the core's reply to conn (the slot the port named as the
 * message's reply target), then reports delivery: a transferred alias
 * leaves powerboxd only once the send succeeded, and the core may retire
 * a terminal decision only after that report. */
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
        if (delivered && cap != PBX_PORT_SLOT_NONE) {
            rt_dispose(s, out->transfer_slot);
        }
    }
    if (out->token == PBX_CORE_NIL) {
        return PBX_OK;
    }
    return pbx_core_on_reply_delivered(&s->core, out->token,
                                       out->token_generation, delivered);
}

/* Places every staged receipt of m into loose transient slots recorded
 * with origin; false (with all of them deleted) when there is no room or
 * there are more than the core tracks per message. */
static bool rt_loose_all(rt_state *s, uint32_t origin, const pbx_port_msg *m,
                         uint32_t *slots, size_t *count)
{
    *count = 0;
    bool ok = m->receipts <= PBX_CORE_RECV_SLOTS_MAX;
    for (uint32_t i = 0; i < m->receipts && ok; i++) {
        ok = rt_loose_place(s, i, (rt_origin)origin, &slots[i]);
        *count += ok ? 1U : 0U;
    }
    if (ok) {
        return true;
    }
    for (size_t i = 0; i < *count; i++) {
        rt_dispose(s, slots[i]);
    }
    rt_staged_drop(s);
    *count = 0;
    return false;
}

/* Moves every staged receipt into the transient range. The one receipt
 * of a COMMIT goes into its reserved destination only once the core's
 * canonical parser accepted the frame and proved the reservation belongs
 * to this caller's own open request (pbx_core_commit_dest); everything
 * else goes into loose slots the core will delete. Returns false (with
 * everything deleted) when there is no room. */
static bool rt_place(rt_state *s, uint32_t badge, const pbx_port_msg *m,
                     uint32_t *slots, size_t *count)
{
    uint32_t dest = 0;
    *count = 0;
    if (pbx_core_commit_dest(&s->core, badge, s->msg, m->len_bytes, m->receipts,
                             &dest) &&
        rt_commit_place(s, dest)) {
        slots[0] = dest;
        *count = 1;
        return true;
    }
    return rt_loose_all(s, RT_O_PUBLIC, m, slots, count);
}

/* One canonical public receive on conn (a public connection or the
 * broker endpoint), dispatch, reply and delivery. */
static pbx_err rt_public(rt_state *s, int32_t conn)
{
    pbx_port_msg m;
    uint32_t slots[PBX_PORT_RECEIPTS_MAX];
    size_t n = 0;
    pbx_err err =
        pbx_port_public_recv(&s->port, conn, s->msg, sizeof(s->msg), &m);
    if (err == PBX_E_PORT_DELETE_UNPROVEN) {
        rt_fail(s, PBX_CORE_EXIT_CLEANUP);
        return err;
    }
    if (err == PBX_E_PORT_RECEIPTS_PENDING) {
        /* Staged receipts still held after an interrupted deletion: the
         * message waits in the kernel until a later turn deleted them. */
        return s->staged_again != 0U ? PBX_OK : err;
    }
    if (err == PBX_E_PORT_AGAIN) {
        return PBX_OK;
    }
    if (err == PBX_E_PORT_DELETE_AGAIN) {
        s->staged_again = 1U; /* The refused message's receipts stay. */
    }
    if (err == PBX_E_PORT_PEER_CLOSED &&
        conn == (int32_t)PBX_CAPABI_SLOT_BROKER) {
        /* launchd is gone: its requests and its jobs' grants end. */
        return rt_broker_lost(s);
    }
    if (err != PBX_OK) {
        /* Hang-up, or refused by the port (truncated, foreign control
         * data): every receipt is already deleted and the bytes are not
         * a frame, so, as for a frame the core cannot answer, the
         * connection goes. */
        return rt_conn_end(s, conn);
    }
    if (rt_badge(conn, &m) == 0U) {
        /* An unidentified sender owns no request: delete what it sent and
         * end the conversation (on EriX, its reply capability). */
        rt_staged_drop(s);
        return rt_conn_end(s, m.from_slot);
    }
    /* No room for its receipts: all were deleted, and the frame goes to
     * the core as if none had come, whose count check refuses it with an
     * error reply (UNEXPECTED_CAPS, or COMMIT_COUNT): the caller, the
     * broker included, always gets an answer, never silence. */
    (void)rt_place(s, rt_badge(conn, &m), &m, slots, &n);
    err = pbx_core_on_public(&s->core, rt_badge(conn, &m), s->msg, m.len_bytes,
                             slots, n, &s->out);
    if (err != PBX_OK) {
        return err;
    }
    if (s->out.drop != PBX_OK) {
        /* No public operation to answer: drop the caller's connection. */
        return rt_conn_end(s, m.from_slot);
    }
    return rt_reply(s, m.from_slot);
}

/* The core route a startup slot serves, or PBX_CORE_ROUTE_COUNT. */
static uint32_t rt_slot_route(int32_t slot)
{
    for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
        if (slot == rt_route_slot_of(r)) {
            return r;
        }
    }
    return PBX_CORE_ROUTE_COUNT;
}

/* A watched route became writable: the work parked on it goes back to
 * the ready lanes (rt_watch_routes stops the write watch once nothing is
 * parked). */
static void rt_route_ready(rt_state *s, int32_t slot)
{
    uint32_t r = rt_slot_route(slot);
    if (r < (uint32_t)PBX_CORE_ROUTE_COUNT) {
        pbx_core_on_route_ready(&s->core, (pbx_core_route)r);
    }
}

/* Logs that startup route slot's peer hung up, once. */
static void rt_log_route_down(int32_t slot)
{
    static const char head[] = "powerboxd: peer route slot ";
    static const char tail[] = " hung up: its calls end; the service "
                               "goes on\n";
    uint8_t line[96];
    uint32_t n = 0;
    for (uint32_t i = 0; head[i] != '\0' && n < sizeof(line); i++) {
        line[n++] = (uint8_t)head[i];
    }
    if (slot >= 0 && slot < 100) {
        if (slot >= 10) {
            line[n++] = (uint8_t)('0' + slot / 10);
        }
        line[n++] = (uint8_t)('0' + slot % 10);
    }
    for (uint32_t i = 0; tail[i] != '\0' && n < sizeof(line); i++) {
        line[n++] = (uint8_t)tail[i];
    }
    (void)rt_log_write(line, n);
}

/* Route r's peer is gone: stop watching it, stop sending on it, and end
 * every call outstanding on it (the core denies what needed it and keeps
 * cleanup waiting) until a ROUTE_ATTACH brings it back (rt_attach.c).
 * The service goes on. */
pbx_err rt_route_down(rt_state *s, uint32_t r)
{
    s->route_lost[r] = 0U;
    if (s->route_down[r] != 0U) {
        return PBX_OK;
    }
    s->route_down[r] = 1U;
    (void)pbx_port_watch(&s->port, rt_route_slot_of(r), 0U);
    s->watching[r] = 0U;
    rt_log_route_down(rt_route_slot_of(r));
    return pbx_core_on_route_down(&s->core, (pbx_core_route)r);
}

/* One reply readable on slot (a startup route, or a scope a call went
 * through: RESOLVE is answered on vfsd's route, so whatever is read on a
 * scope is refused by the core) goes to the core, which matches it to its
 * call or refuses it and deletes its receipts. A reply the runtime cannot
 * place, or the core cannot track now, loses its receipts (deleted) and its
 * call ends by deadline: never a wait and never a stop. */
static pbx_err rt_reply_event(rt_state *s, int32_t slot)
{
    static const uint8_t origins[PBX_CORE_ROUTE_COUNT + 1U] = {
        RT_O_VFSD, RT_O_TTYD, RT_O_PROCD, RT_O_NONE, RT_O_VFSD};
    pbx_port_msg m;
    uint32_t slots[PBX_CORE_RECV_SLOTS_MAX];
    size_t n = 0;
    uint32_t r = rt_slot_route(slot);
    uint32_t route =
        r < (uint32_t)PBX_CORE_ROUTE_COUNT ? r : PBX_CORE_ROUTE_SCOPE;
    pbx_err err =
        pbx_port_route_recv(&s->port, slot, s->reply, sizeof(s->reply), &m);
    if (err == PBX_E_PORT_AGAIN ||
        (err == PBX_E_PORT_RECEIPTS_PENDING && s->staged_again != 0U)) {
        return PBX_OK; /* Nothing, or the reply waits for that deletion. */
    }
    if (err != PBX_OK) {
        rt_staged_drop(s);
        if (route != PBX_CORE_ROUTE_SCOPE) {
            return err == PBX_E_PORT_PEER_CLOSED ? rt_route_down(s, route)
                                                 : PBX_OK;
        }
        /* A scope that hung up: its call ends by deadline. */
        (void)pbx_port_watch(&s->port, slot, 0U);
        return PBX_OK;
    }
    if (!rt_loose_all(s, origins[route], &m, slots, &n)) {
        return PBX_OK;
    }
    err = pbx_core_on_peer_reply(
        &s->core, route,
        route == PBX_CORE_ROUTE_SCOPE ? (uint32_t)slot : PBX_CORE_SLOT_NONE,
        s->reply, m.len_bytes, slots, n);
    if (err == PBX_E_CORE_INTAKE_HELD) {
        for (size_t i = 0; i < n; i++) {
            rt_dispose(s, slots[i]);
        }
        return PBX_OK;
    }
    return err;
}

/* Writes head, the decimal n and tail as one log line. */
static void rt_log_count(const char *head, uint32_t n, const char *tail)
{
    uint8_t line[128];
    uint32_t len = 0;
    uint8_t digits[10];
    uint32_t nd = 0;
    for (uint32_t i = 0; head[i] != '\0' && len < 64U; i++) {
        line[len++] = (uint8_t)head[i];
    }
    do {
        digits[nd++] = (uint8_t)('0' + n % 10U);
        n /= 10U;
    } while (n != 0U && nd < sizeof(digits));
    while (nd > 0U) {
        line[len++] = digits[--nd];
    }
    for (uint32_t i = 0; tail[i] != '\0' && len < sizeof(line); i++) {
        line[len++] = (uint8_t)tail[i];
    }
    (void)rt_log_write(line, len);
}

/* The per-process refusal line names the bound as " holds 8": this keeps
 * the two equal. */
_Static_assert(PBX_PORT_CLIENTS_PER_PID == 8U, "the refusal line names it");

/* Handles one event; returns a fail-stop error or PBX_OK. */
static pbx_err rt_event(rt_state *s, const pbx_port_event *ev)
{
    switch (ev->kind) {
    case PBX_PORT_EV_PUBLIC_READABLE:
        return rt_public(s, ev->slot);
    case PBX_PORT_EV_ROUTE_READABLE:
        return rt_reply_event(s, ev->slot);
    case PBX_PORT_EV_ROUTE_WRITABLE:
        rt_route_ready(s, ev->slot);
        return PBX_OK;
    case PBX_PORT_EV_SUPERVISOR_READABLE:
        return rt_attach(s, false);
    case PBX_PORT_EV_SUPERVISOR_CLOSED:
        return rt_attach(s, true);
    case PBX_PORT_EV_BROKER_CLOSED:
        return rt_broker_lost(s);
    case PBX_PORT_EV_PUBLIC_REFUSED:
        rt_log_count("powerboxd: public connection refused: ",
                     PBX_PORT_CLIENTS_MAX, " already open\n");
        return PBX_OK;
    case PBX_PORT_EV_PUBLIC_REFUSED_PID:
        rt_log_count("powerboxd: public connection refused: pid ", ev->pid,
                     " holds 8\n");
        return PBX_OK;
    case PBX_PORT_EV_ROUTE_ERROR:
        if (rt_slot_route(ev->slot) < (uint32_t)PBX_CORE_ROUTE_COUNT) {
            return rt_route_down(s, rt_slot_route(ev->slot));
        }
        /* A scope whose provider end closed: its call ends by deadline. */
        (void)pbx_port_watch(&s->port, ev->slot, 0U);
        return PBX_OK;
    default:
        return PBX_OK;
    }
}

/* Work parked on route r: requests, grant cleanup and (launchd) wakes. */
static uint32_t rt_parked(const rt_state *s, uint32_t r)
{
    uint32_t parked =
        s->core.queues[(uint32_t)PBX_CORE_Q_PARK_REQUEST + r].count +
        s->core.queues[(uint32_t)PBX_CORE_Q_PARK_GRANT + r].count;
    if (r == (uint32_t)PBX_CORE_ROUTE_LAUNCHD) {
        parked += s->core.queues[PBX_CORE_Q_PARK_NOTIFY].count;
    }
    return parked;
}

/* Watches every live route for exactly what it needs: replies (vfsd,
 * ttyd, procd, always) and writability while work is parked on it after
 * backpressure. A route whose peer is gone is watched no more. */
static void rt_watch_routes(rt_state *s)
{
    /* Replies are taken only while the core can track their receipts and
     * none are still staged; meanwhile they wait in the kernel. The same
     * for every route, so asked once per turn, not once per route. */
    uint32_t read = pbx_core_peer_ready(&s->core) && s->staged_again == 0U
                        ? PBX_PORT_WANT_READ
                        : 0U;
    for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
        if (s->route_down[r] != 0U) {
            continue;
        }
        uint32_t want = r != (uint32_t)PBX_CORE_ROUTE_LAUNCHD ? read : 0U;
        want |= rt_parked(s, r) > 0U ? PBX_PORT_WANT_WRITE : 0U;
        if (want != s->watching[r] &&
            pbx_port_watch(&s->port, rt_route_slot_of(r), want) == PBX_OK) {
            s->watching[r] = want;
        }
    }
}

/* The next wait after ms ran out: doubled, up to PBX_RT_RETRY_MS_MAX. */
static uint32_t rt_backoff(uint32_t ms)
{
    return ms >= PBX_RT_RETRY_MS_MAX / 2U ? PBX_RT_RETRY_MS_MAX : ms * 2U;
}

/* Holds public intake in the kernel exactly while the core could not
 * track a public frame's receipts (pbx_core_public_ready) or receipts
 * are still staged after an interrupted deletion: nothing is received,
 * so nothing is dropped, and pending deletions free room. */
static void rt_intake(rt_state *s)
{
    uint32_t hold =
        pbx_core_public_ready(&s->core) && s->staged_again == 0U ? 0U : 1U;
    if (hold != s->intake_held) {
        if (pbx_port_public_hold(&s->port, hold) != PBX_OK) {
            rt_fail(s, PBX_CORE_EXIT_PUBLIC);
            return;
        }
        s->intake_held = hold;
    }
}

/* Ticks the core when a wait ran out (timed_out) or after
 * PBX_RT_TICK_TURNS turns without one, while it has deferred work: each
 * deferred retry then happens once. The wait before the next tick doubles
 * each time it runs out, up to PBX_RT_RETRY_MS_MAX, and starts again from
 * PBX_RT_RETRY_MS_FIRST only once nothing was deferred for that long, so
 * that work deferred again and again (a ttyd answering RETRY to every
 * PROMPT, a peer that keeps answering inexactly) backs off instead of
 * being asked again every PBX_RT_RETRY_MS_FIRST. */
static void rt_tick(rt_state *s, bool timed_out, uint64_t now)
{
    if (!pbx_core_tick_wanted(&s->core)) {
        if (s->tick_idle_ms == 0U) {
            s->tick_idle_ms = now == 0U ? 1U : now;
        } else if (now - s->tick_idle_ms >= PBX_RT_RETRY_MS_MAX) {
            s->tick_ms = 0U;
        }
        s->tick_turns = 0U;
        return;
    }
    s->tick_idle_ms = 0U;
    s->tick_turns++;
    if (!timed_out && s->tick_turns < PBX_RT_TICK_TURNS) {
        return;
    }
    if (timed_out) {
        s->tick_ms = rt_backoff(s->tick_ms);
    }
    s->tick_turns = 0U;
    pbx_core_on_tick(&s->core);
}

/* Takes the next event: without blocking while work is ready; else
 * waiting at most until the nearest call deadline and, while the core has
 * deferred work, the tick wait; else blocking. This is the only wait. */
static pbx_err rt_next_event(rt_state *s, bool busy, uint64_t now,
                             pbx_port_event *ev)
{
    if (busy) {
        return pbx_port_poll(&s->port, ev);
    }
    /* The runtime's own pending deletions are retried every turn, so
     * they bound the wait like deferred core work. */
    bool tick = pbx_core_tick_wanted(&s->core) || rt_pending(s);
    uint64_t at = 0;
    bool deadline = pbx_core_next_deadline(&s->core, &at);
    if (s->idle_next_ms != UINT64_MAX && (!deadline || s->idle_next_ms < at)) {
        /* A public connection becomes idle before any call deadline. */
        at = s->idle_next_ms;
        deadline = true;
    }
    if (!tick && !deadline) {
        return pbx_port_wait(&s->port, ev);
    }
    if (tick && s->tick_ms == 0U) {
        s->tick_ms = PBX_RT_RETRY_MS_FIRST;
    }
    uint64_t ms = tick ? s->tick_ms : UINT32_MAX;
    if (deadline) {
        uint64_t left = at > now ? at - now : 0U;
        ms = left < ms ? left : ms;
    }
    /* A deadline that is due now still waits one millisecond at least,
     * so the clock moves past it: the next turn's time event ends it. */
    return pbx_port_wait_for(&s->port, ev, ms == 0U ? 1U : (uint32_t)ms);
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
        if (s->fail_status != 0U) {
            return PBX_OK;
        }
        if (!progressed) {
            return PBX_OK;
        }
    }
    *busy = true;
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

/* Logs one line naming the fail-stop's exit status and its class, so an
 * operator reading the log (not only the exit status) can tell which part
 * stopped the service. */
static void rt_log_stop(uint8_t status)
{
    static const char head[] = "powerboxd: fail-stop, exit status ";
    _Static_assert(sizeof(head) + 3U + 40U <= 96U, "the line fits");
    const char *why = status == (uint8_t)PBX_CORE_EXIT_PUBLIC
                          ? ": public receive, dispatch or reply\n"
                      : status == (uint8_t)PBX_CORE_EXIT_CLEANUP ? ": cleanup\n"
                      : status == (uint8_t)PBX_CORE_EXIT_PROGRESS
                          ? ": retained request progression\n"
                      : status == (uint8_t)PBX_CORE_EXIT_NOTIFY
                          ? ": notification\n"
                          : ": peer route\n";
    uint8_t line[96];
    uint32_t n = 0;
    for (uint32_t i = 0; head[i] != '\0' && n < sizeof(line); i++) {
        line[n++] = (uint8_t)head[i];
    }
    /* The head leaves room for three digits and the class. */
    if (status >= 100U) {
        line[n++] = (uint8_t)('0' + status / 100U);
    }
    if (status >= 10U) {
        line[n++] = (uint8_t)('0' + status / 10U % 10U);
    }
    line[n++] = (uint8_t)('0' + status % 10U);
    for (uint32_t i = 0; why[i] != '\0' && n < sizeof(line); i++) {
        line[n++] = (uint8_t)why[i];
    }
    (void)rt_log_write(line, n);
}

/* Tells the core the time and what the last turn's sends learned about
 * lost routes; ends every call whose deadline passed. Returns whether
 * any call ended, so that the work it readied runs before the next wait. */
static bool rt_time(rt_state *s, uint64_t *now)
{
    uint32_t ended = s->core.calls_expired;
    if (pbx_port_now_ms(&s->port, now) != PBX_OK) {
        *now = s->core.now_ms; /* No clock reading: time stands still. */
    }
    for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
        if (s->route_lost[r] != 0U && rt_route_down(s, r) != PBX_OK) {
            return true;
        }
    }
    uint32_t opens = s->core.opens_expired;
    (void)pbx_core_on_time(&s->core, *now);
    return s->core.calls_expired != ended || s->core.opens_expired != opens;
}

/* Closes the public connections that stayed silent for the PBX1 IDLE
 * time, logs how many, and remembers when the next one becomes idle, so
 * that idle callers can never hold every connection for long. */
static void rt_idle(rt_state *s, uint64_t now)
{
    uint32_t closed = 0;
    if (pbx_port_clients_idle(&s->port, now,
                              s->layout.time_ms[PBX_BOOTSTRAP_TIME_IDLE],
                              &s->idle_next_ms, &closed) != PBX_OK) {
        rt_fail(s, PBX_CORE_EXIT_PUBLIC);
    }
    if (closed != 0U) {
        rt_log_count("powerboxd: closed ", closed,
                     " idle public connection(s)\n");
    }
}

uint8_t rt_loop(rt_state *s)
{
    bool busy = true;
    s->idle_next_ms = UINT64_MAX;
    /* Startup judged the inventory live; from now on a route slot's
     * judgment is kept until a ROUTE_ATTACH replaces it (rt_tslot.c). */
    s->judge_routes = 1U;
    /* The service runs until a fail-stop; every turn is bounded by one
     * event and PBX_RT_STEPS_PER_WAKE steps. */
    for (;;) {
        pbx_port_event ev;
        uint64_t now = 0;
        rt_pending_retry(s);
        rt_intake(s);
        rt_watch_routes(s);
        if (pbx_port_now_ms(&s->port, &now) != PBX_OK) {
            now = s->core.now_ms;
        }
        for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
            /* A send found its peer gone: tell the core without waiting. */
            busy = busy || s->route_lost[r] != 0U;
        }
        pbx_err err = rt_next_event(s, busy, now, &ev);
        /* The time after the wait, told to the core before anything else
         * happens in this turn: calls sent by this turn's steps are
         * stamped with it, and whatever expired during the wait is ended
         * (and its work readied) first. */
        busy = rt_time(s, &now) || busy;
        rt_idle(s, now);
        rt_tick(s, err == PBX_OK && ev.kind == (uint32_t)PBX_PORT_EV_TIMEOUT,
                now);
        if (err == PBX_OK && pbx_core_exit_status(&s->core) == 0U) {
            err = rt_event(s, &ev);
            if (err != PBX_OK && pbx_core_exit_status(&s->core) == 0U) {
                rt_fail(s, PBX_CORE_EXIT_PUBLIC);
            }
        } else if (err != PBX_OK && err != PBX_E_PORT_AGAIN &&
                   err != PBX_E_PORT_CLIENTS_FULL) {
            rt_fail(s, PBX_CORE_EXIT_PUBLIC);
        }
        if (s->fail_status == 0U && pbx_core_exit_status(&s->core) == 0U &&
            rt_steps(s, &busy) != PBX_OK &&
            pbx_core_exit_status(&s->core) == 0U) {
            rt_fail(s, PBX_CORE_EXIT_PROGRESS);
        }
        if (s->fail_status != 0U || pbx_core_exit_status(&s->core) != 0U) {
            uint8_t status = rt_exit_status(s);
            rt_log_stop(status);
            return status;
        }
    }
}
