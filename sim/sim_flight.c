/*
 * sim_flight.c: replies in flight, the seeded clock and the route faults.
 * A peer's reply waits in the kernel until its due step and is then
 * delivered in seeded random order among the due ones (so replies are
 * reordered and delayed), unless its peer is silent (held) or hangs up
 * (lost with the connection: its receipts are destroyed, as the kernel
 * would). Each delivery is judged against the simulator's own record of
 * open calls: the core must take exactly the replies that answer an open
 * call, and a reply it refuses must leave every record as it was.
 */
#include "sim/sim_peers.h"

#include <string.h>

/* A silent stretch lasts up to this many deadlines. */
#define SIM_SILENT_DEADLINES 2U
/* A hung-up peer stays away for up to this many steps. */
#define SIM_HANGUP_STEPS 600U

bool sim_flight_add(sim_world *w, const sim_flight *f)
{
    if (w->nflights >= SIM_FLIGHTS) {
        return false;
    }
    w->flights[w->nflights++] = *f;
    w->led_flight += f->ncaps;
    return true;
}

/* Removes flight k (the last one takes its place). */
static void sim_flight_remove(sim_world *w, uint32_t k)
{
    w->nflights--;
    if (k != w->nflights) {
        w->flights[k] = w->flights[w->nflights];
    }
}

/* Destroys flight k and its receipts: the reply is lost. */
static void sim_flight_lose(sim_world *w, uint32_t k)
{
    const sim_flight *f = &w->flights[k];
    for (size_t i = 0; i < f->ncaps; i++) {
        sim_cap_destroy(w, &f->caps[i]);
    }
    w->led_flight -= f->ncaps;
    w->led_dropped += f->ncaps;
    sim_event_add(w, SIM_EV_LOST, f->ask_op, f->seq, f->ncaps, 1U);
    sim_flight_remove(w, k);
}

bool sim_route_gone(const sim_world *w, uint32_t r)
{
    return r < SIM_PEERS && w->routes[r].down_until != 0U;
}

void sim_disturb(sim_world *w, uint32_t r, uint64_t until)
{
    if (r < SIM_PEERS && until > w->routes[r].disturbed_until) {
        w->routes[r].disturbed_until = until;
    }
}

/* Whether flight f may be delivered now. */
static bool sim_flight_due(const sim_world *w, const sim_flight *f)
{
    return f->due <= w->step && w->step >= w->routes[f->peer].silent_until;
}

/* Records what a reply the core took for open call k proves. */
static void sim_evidence(sim_world *w, const sim_flight *f)
{
    switch (f->ask_op) {
    case PBX_IPC_OP_RESOLVE:
        sim_vfsd_resolve_evidence(w, f);
        break;
    case PBX_IPC_OP_RETIRE:
        sim_vfsd_retire_evidence(w, f);
        break;
    case PBX_IPC_OP_POLICY:
    case PBX_IPC_OP_PROMPT:
    case PBX_IPC_OP_VIEW:
        sim_ttyd_evidence(w, f);
        break;
    default:
        break;
    }
}

/* Places flight f's receipts in powerboxd's CSpace; false when full. */
static bool sim_flight_land(sim_world *w, const sim_flight *f, uint32_t *slots)
{
    for (size_t i = 0; i < f->ncaps; i++) {
        slots[i] = sim_slot_put(w, &f->caps[i], SIM_NIL);
        if (slots[i] == SIM_NIL) {
            return false;
        }
    }
    w->led_flight -= f->ncaps;
    return true;
}

/* Marks the receipts of a refused reply as owned by nobody. */
static void sim_flight_orphaned(sim_world *w, const sim_flight *f,
                                const uint32_t *slots)
{
    for (size_t i = 0; i < f->ncaps; i++) {
        if (w->slots[slots[i]].cap.id == f->caps[i].id) {
            w->slots[slots[i]].cap.late = 1U;
        }
    }
}

/* Judges the core's handling of reply f: took says whether it matched a
 * call, call is the open call the simulator says it answers. */
static void sim_flight_judge(sim_world *w, const sim_flight *f, uint32_t call,
                             bool took, uint64_t before)
{
    if (call == SIM_NIL && took) {
        sim_fail(w,
                 "invariant 11: the core took a reply (op %#x seq %#x%s) that "
                 "answers no open call",
                 f->ask_op, f->seq, f->dup != 0U ? ", duplicate" : "");
    } else if (call != SIM_NIL && !took) {
        sim_fail(
            w, "invariant 11: the core refused the reply to its open call %#x",
            f->seq);
    } else if (!took && sim_core_records_hash(w) != before) {
        sim_fail(w,
                 "invariant 11: a refused reply (op %#x seq %#x) changed the "
                 "core's records",
                 f->ask_op, f->seq);
    }
}

/* Delivers flight k; false after a fail-stop or a violation. */
static bool sim_deliver(sim_world *w, uint32_t k)
{
    static sim_flight f;
    uint32_t slots[PBX_CORE_RECV_SLOTS_MAX];
    f = w->flights[k];
    sim_flight_remove(w, k);
    uint32_t call = sim_call_match(w, &f);
    if (!sim_flight_land(w, &f, slots)) {
        return false;
    }
    uint64_t before = call == SIM_NIL ? sim_core_records_hash(w) : 0U;
    uint32_t refused = w->core->replies_refused;
    sim_event_add(w, SIM_EV_ANSWER, f.route, f.seq, f.len,
                  f.ncaps | (f.dup << 8) | ((call != SIM_NIL ? 1U : 0U) << 9));
    pbx_err err = pbx_core_on_peer_reply(w->core, f.route, f.via_slot, f.bytes,
                                         f.len, slots, f.ncaps);
    bool took = w->core->replies_refused == refused;
    w->stat_replies++;
    if (took && call != SIM_NIL) {
        /* The bytes answer the call they echo, which need not be the
         * one the peer was answering (a replay can answer another). */
        const sim_call_view *v = &w->calls[call].v;
        f.ask_op = v->op;
        f.ask_id = v->id;
        f.ask_kind = v->kind == (uint32_t)SIM_CALL_ACTIVE ||
                             v->kind == (uint32_t)SIM_CALL_RESYNC
                         ? PBX_IPC_VIEW_ACTIVE
                     : v->kind == (uint32_t)SIM_CALL_REMOVE
                         ? PBX_IPC_VIEW_REMOVE
                         : 0U;
        sim_call_answered(w, call, &f);
        sim_evidence(w, &f);
    } else if (!took) {
        w->stat_late++;
        sim_flight_orphaned(w, &f, slots);
    }
    sim_after_core(w);
    if (err != PBX_OK) {
        if (err == PBX_E_CORE_INTAKE_HELD) {
            sim_fail(w, "a peer reply was held while the core reported "
                        "peer intake ready");
        } else if (w->permanent == 0U) {
            sim_fail(w, "core fail-stop %s (exit %d) without a permanent fault",
                     pbx_err_name(err), (int)pbx_core_exit_status(w->core));
        }
        return false;
    }
    sim_flight_judge(w, &f, call, took, before);
    return w->violation[0] == '\0';
}

/* Picks the due flight number pick (in array order); SIM_NIL if none. */
static uint32_t sim_flight_nth_due(const sim_world *w, uint32_t pick)
{
    for (uint32_t k = 0; k < w->nflights; k++) {
        if (sim_flight_due(w, &w->flights[k])) {
            if (pick == 0U) {
                return k;
            }
            pick--;
        }
    }
    return SIM_NIL;
}

bool sim_flights_deliver(sim_world *w, bool all)
{
    uint32_t budget = all ? SIM_FLIGHTS : 1U + sim_below(w, 2U);
    for (uint32_t n = 0; n < budget && w->nflights > 0U; n++) {
        if (!pbx_core_peer_ready(w->core)) {
            return true; /* The replies wait in the kernel. */
        }
        uint32_t due = 0;
        for (uint32_t k = 0; k < w->nflights; k++) {
            due += sim_flight_due(w, &w->flights[k]) ? 1U : 0U;
        }
        if (due == 0U) {
            return true;
        }
        uint32_t k = sim_flight_nth_due(w, sim_below(w, due));
        if (!sim_deliver(w, k)) {
            return false;
        }
    }
    return true;
}

/* Peer r hangs up: its queued replies are lost with the connection, a
 * hung-up ttyd shows no prompt, and the core hears the route is down.
 * False after a fail-stop. */
static bool sim_hangup(sim_world *w, uint32_t r)
{
    sim_route_state *rt = &w->routes[r];
    rt->down_until = w->step + 20U + sim_below(w, SIM_HANGUP_STEPS);
    sim_disturb(w, r, rt->down_until + 1U);
    sim_event_add(w, SIM_EV_ROUTE, r, 1U, rt->down_until, 0);
    for (uint32_t k = w->nflights; k > 0U; k--) {
        if (w->flights[k - 1U].peer == r) {
            sim_flight_lose(w, k - 1U);
        }
    }
    if (r == (uint32_t)PBX_CORE_ROUTE_TTYD) {
        /* The ttyd that comes back starts empty. */
        for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
            w->reqs[i].prompt_showing = 0U;
        }
        memset(w->ttyd_row, 0, sizeof(w->ttyd_row));
        w->resync_pending = 0U;
    }
    uint8_t live[SIM_GRANT_MAX];
    uint8_t held[SIM_REQ_MAX];
    sim_routes_before(w, live);
    sim_routes_before_reqs(w, held);
    uint32_t expired = w->core->calls_expired;
    pbx_err err = pbx_core_on_route_down(w->core, (pbx_core_route)r);
    sim_calls_route_down(w, r);
    if (err == PBX_OK) {
        sim_routes_lost(w, r, live);
        sim_routes_lost_reqs(w, r, held);
    }
    w->stat_timeouts += w->core->calls_expired - expired;
    sim_after_core(w);
    if (err != PBX_OK) {
        if (w->permanent == 0U) {
            sim_fail(w,
                     "core fail-stop %s at a route loss without a "
                     "permanent fault",
                     pbx_err_name(err));
        }
        return false;
    }
    return true;
}

/* Peer r comes back on a fresh route (pbx_core_on_route_up): a returned
 * ttyd is sent every live row and open prompt again. */
static void sim_route_back(sim_world *w, uint32_t r)
{
    w->routes[r].down_until = 0U;
    w->routes[r].dirty = 0U;
    sim_event_add(w, SIM_EV_ROUTE, r, 2U, 0, 0);
    w->prompt_resend = 1U;
    pbx_err err = pbx_core_on_route_up(w->core, (pbx_core_route)r);
    w->prompt_resend = 0U;
    if (err != PBX_OK) {
        sim_fail(w, "route up: %s", pbx_err_name(err));
    }
    if (r == (uint32_t)PBX_CORE_ROUTE_TTYD) {
        w->resync_pending = 1U;
    }
    w->rec_dirty = 1U;
    w->calls_dirty = 1U;
    sim_after_core(w);
}

bool sim_routes_fault(sim_world *w)
{
    uint64_t bits = sim_rand(w);
    for (uint32_t r = 0; r < SIM_PEERS; r++) {
        sim_route_state *rt = &w->routes[r];
        if (rt->down_until != 0U && w->step >= rt->down_until) {
            sim_route_back(w, r);
        }
        if (w->healed != 0U || rt->down_until != 0U ||
            w->step < rt->silent_until) {
            continue;
        }
        /* Onsets are rare (rate / 2^18 per route and step): one draw
         * serves all three routes, 18 bits each. */
        uint32_t x = (uint32_t)(bits >> (18U * r)) & ((1U << 18) - 1U);
        if (x < w->rate[SIM_F_SILENT]) {
            rt->silent_until =
                w->step + 20U +
                sim_below(w, SIM_SILENT_DEADLINES * w->deadline_steps);
            sim_disturb(w, r, rt->silent_until + w->max_delay + 1U);
            w->faults_fired++;
            sim_event_add(w, SIM_EV_FAULT, SIM_F_SILENT, r, rt->silent_until,
                          0);
        } else if (x < w->rate[SIM_F_SILENT] + w->rate[SIM_F_HANGUP]) {
            w->faults_fired++;
            sim_event_add(w, SIM_EV_FAULT, SIM_F_HANGUP, r, 0, 0);
            if (!sim_hangup(w, r)) {
                return false;
            }
        }
    }
    return true;
}

/* The runtime stalled (rate / 2^16 per step): the clock jumps by up to
 * three deadlines, so many calls end at once. */
static void sim_stall(sim_world *w)
{
    if (w->healed != 0U || w->rate[SIM_F_STALL] == 0U ||
        sim_below(w, 1U << 16) >= w->rate[SIM_F_STALL]) {
        return;
    }
    uint32_t steps = 1U + sim_below(w, 3U * w->deadline_steps);
    w->now_ms += (uint64_t)steps * w->ms_step;
    w->faults_fired++;
    sim_event_add(w, SIM_EV_FAULT, SIM_F_STALL, steps, 0, 0);
    for (uint32_t r = 0; r < SIM_PEERS; r++) {
        sim_disturb(w, r, w->step + w->max_delay + 1U);
    }
}

/* The runtime's wait bound (pbx_core_next_deadline, pure): after the
 * core heard the time, the earliest deadline it names is still ahead, and
 * it names one exactly while a call is outstanding or a request is OPEN
 * (issue 22 item 8: every core entry point driven). */
static void sim_check_next_deadline(sim_world *w)
{
    uint64_t at = 0;
    bool any = pbx_core_next_deadline(w->core, &at);
    bool open = pbx_core_calls_outstanding(w->core) != 0U;
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    for (uint32_t i = 0; i < cap && i < SIM_REQ_MAX && !open; i++) {
        const pbx_core_request *r = sim_core_req(w, i);
        open =
            r->link.live != 0U && r->link.state == (uint16_t)PBX_CORE_ST_OPEN;
    }
    if (any != open || (any && at <= w->now_ms)) {
        sim_fail(w, "next_deadline: %s %llu at %llu ms with %s outstanding",
                 any ? "names" : "names none,", (unsigned long long)at,
                 (unsigned long long)w->now_ms, open ? "work" : "nothing");
    }
}

bool sim_clock(sim_world *w)
{
    w->now_ms += 1U + sim_below(w, 2U * w->ms_step - 1U);
    sim_stall(w);
    uint32_t expired = w->core->calls_expired;
    uint32_t opens = w->core->opens_expired;
    pbx_err err = pbx_core_on_time(w->core, w->now_ms);
    if (err == PBX_OK) {
        sim_check_next_deadline(w);
    }
    uint32_t ended = sim_calls_expire(w);
    uint32_t n = w->core->calls_expired - expired;
    /* A request that stayed uncommitted past its OPEN deadline moved to
     * release inside on_time: the records must be observed now, before a
     * step moves it on. */
    uint32_t closed = w->core->opens_expired - opens;
    if (n == 0U && ended == 0U && closed == 0U && err == PBX_OK) {
        return true;
    }
    w->stat_timeouts += n;
    sim_event_add(w, SIM_EV_TIME, w->now_ms, n, ended, err);
    sim_after_core(w);
    if (err != PBX_OK) {
        if (w->permanent == 0U) {
            sim_fail(w,
                     "core fail-stop %s at a deadline without a "
                     "permanent fault",
                     pbx_err_name(err));
        }
        return false;
    }
    return true;
}

void sim_heal(sim_world *w)
{
    for (uint32_t r = 0; r < SIM_PEERS; r++) {
        w->routes[r].silent_until = 0U;
        if (w->routes[r].down_until != 0U) {
            sim_route_back(w, r);
        }
    }
    for (uint32_t k = 0; k < w->nflights; k++) {
        sim_flight *f = &w->flights[k];
        if (f->due > w->step + w->max_delay) {
            f->due = w->step + sim_below(w, w->max_delay + 1U);
        }
    }
}
