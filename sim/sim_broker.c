/*
 * sim_broker.c: launchd's broker connection lost (the broker fault,
 * issue 22 item 8), so that pbx_core_on_broker_lost is driven like every
 * other core entry point. Onsets draw on the side stream (rate per 2^18
 * steps), so a seed without the fault replays as it did before it. Right
 * after the call the simulator compares every request and grant record
 * with what it was just before: no grant is LIVE any more and each that
 * was ended with event EXPIRE; no request is in flight any more, each
 * that was ended CANCELLED (unless already on the release lane with its
 * own decision, which it keeps), and every live request is marked
 * abandoned. The callers left with the broker: no client acts on an
 * abandoned request or on a grant it knew again, and an abandoned request
 * may retire without a delivered decision (at most one wake, never two).
 * The runtime's fresh broker keeps the same badge: BEGIN goes on.
 */
#include "core/pbx_core_inspect.h"
#include "sim/sim.h"

/* What the loss is judged against: each record's state just before. */
typedef struct sim_broker_snap {
    /* Request records: live, generation, state, outcome. */
    uint32_t req[SIM_REQ_MAX][4];
    /* Grant records: 1 when LIVE just before. */
    uint8_t grant_live[SIM_GRANT_MAX];
} sim_broker_snap;

/* Whether request state st is still in flight (a CANCEL would end it). */
static bool sim_broker_inflight(uint32_t st)
{
    return pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST, (pbx_core_state)st,
                             PBX_CORE_EV_CANCEL) != SIZE_MAX;
}

static void sim_broker_before(sim_world *w, sim_broker_snap *b)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        const pbx_core_request *r = i < cap ? sim_core_req(w, i) : NULL;
        b->req[i][0] = r != NULL ? r->link.live : 0U;
        b->req[i][1] = r != NULL ? r->link.generation : 0U;
        b->req[i][2] = r != NULL ? r->link.state : 0U;
        b->req[i][3] = r != NULL ? r->outcome : 0U;
    }
    sim_routes_before(w, b->grant_live);
}

/* Checks request i against its note: ended if it was in flight, in no
 * flight state now, abandoned while it lives. */
static void sim_broker_req(sim_world *w, const sim_broker_snap *b, uint32_t i)
{
    const pbx_core_request *r = sim_core_req(w, i);
    const uint32_t *q = b->req[i];
    if (q[0] == 0U || r->link.live == 0U || r->link.generation != q[1]) {
        return; /* Retired by the loss (its decision dropped), or none. */
    }
    if (sim_broker_inflight(r->link.state)) {
        sim_fail(w, "broker loss: request %u/%u still in flight (%s)", i, q[1],
                 pbx_core_state_name((pbx_core_state)r->link.state));
    } else if ((r->flags & PBX_CORE_REQ_F_ABANDONED) == 0U) {
        sim_fail(w, "broker loss: request %u/%u not marked abandoned", i, q[1]);
    } else if (sim_broker_inflight(q[2]) &&
               (r->outcome != (uint16_t)PBX_IPC_OUTCOME_CANCELLED ||
                (r->flags & PBX_CORE_REQ_F_CANCELLED) == 0U)) {
        sim_fail(w,
                 "broker loss: request %u/%u in flight (%s) ended with "
                 "outcome %u, flags %#x: it must end CANCELLED",
                 i, q[1], pbx_core_state_name((pbx_core_state)q[2]), r->outcome,
                 r->flags);
    } else if (!sim_broker_inflight(q[2]) && q[3] != 0U &&
               q[3] != (uint32_t)PBX_IPC_OUTCOME_APPROVED &&
               r->outcome != q[3]) {
        /* A decision already made without approval stands. */
        sim_fail(w, "broker loss: request %u/%u decided %u turned %u", i, q[1],
                 q[3], r->outcome);
    }
}

/* Every grant LIVE just before has left LIVE, ended by EXPIRE. */
static void sim_broker_grants(sim_world *w, const sim_broker_snap *b)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t g = 0; g < cap && g < SIM_GRANT_MAX; g++) {
        const pbx_core_grant *gr = sim_core_grant(w, g);
        bool live =
            gr->link.live != 0U && gr->link.state == (uint16_t)PBX_CORE_ST_LIVE;
        if (b->grant_live[g] != 0U &&
            (live || gr->end_reason != (uint16_t)PBX_CORE_EV_EXPIRE)) {
            sim_fail(w,
                     "broker loss: grant %u is %s (end %u): every LIVE "
                     "grant must end as expired",
                     g, live ? "still LIVE" : "ended otherwise",
                     gr->end_reason);
            return;
        }
        /* Nobody can consume, cancel or expire it for a caller now. */
        w->grants[g].client_knows = 0U;
    }
}

/* Loses the broker now: the core is told and judged. False after a
 * fail-stop (a deletion the kernel rejected). */
static bool sim_broker_lose(sim_world *w)
{
    static sim_broker_snap b;
    sim_broker_before(w, &b);
    w->faults_fired++;
    w->stat_broker_lost++;
    sim_event_add(w, SIM_EV_FAULT, SIM_F_BROKER, 0, 0, 0);
    pbx_err err = pbx_core_on_broker_lost(w->core);
    w->rec_dirty = 1U;
    w->calls_dirty = 1U;
    w->dirty = 1U;
    if (err != PBX_OK) {
        sim_after_core(w);
        if (w->permanent == 0U) {
            sim_fail(w,
                     "core fail-stop %s at a broker loss without a "
                     "permanent fault",
                     pbx_err_name(err));
        }
        return false;
    }
    for (uint32_t i = 0; i < SIM_REQ_MAX && w->violation[0] == '\0'; i++) {
        sim_broker_req(w, &b, i);
        w->reqs[i].abandoned |= w->reqs[i].live;
    }
    if (w->violation[0] == '\0') {
        sim_broker_grants(w, &b);
    }
    sim_after_core(w);
    return w->violation[0] == '\0';
}

bool sim_broker_fault(sim_world *w)
{
    if (w->healed != 0U || w->rate[SIM_F_BROKER] == 0U ||
        sim_side_below(w, 1U << 18) >= w->rate[SIM_F_BROKER]) {
        return true;
    }
    return sim_broker_lose(w);
}
