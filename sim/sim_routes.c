/*
 * sim_routes.c: the invariants of a peer's loss and return (issue 13).
 * Right after pbx_core_on_route_down the simulator compares every grant
 * record with what it was just before: a lost vfsd ends every live grant
 * with reason PROVIDER_LOST, a lost procd every live install-mode grant
 * with reason INSTALLER_LOST, and nothing else moves. After a ttyd
 * returns (pbx_core_on_route_up, a ttyd that starts empty), once no row
 * is owed to it any more, ttyd shows exactly the live grants whose row
 * went out. Every grant that left LIVE always says why it ended. A lost
 * vfsd also ends every request holding its object (resolved, or RESOLVE
 * outstanding) DENIED with reason PROVIDER_LOST (issue 20, item 5).
 */
#include "core/pbx_core_inspect.h"
#include "sim/sim.h"

void sim_routes_before(sim_world *w, uint8_t *live)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t g = 0; g < SIM_GRANT_MAX; g++) {
        const pbx_core_grant *gr = g < cap ? sim_core_grant(w, g) : NULL;
        live[g] = gr != NULL && gr->link.live != 0U &&
                          gr->link.state == (uint16_t)PBX_CORE_ST_LIVE
                      ? 1U
                      : 0U;
    }
}

void sim_routes_lost(sim_world *w, uint32_t r, const uint8_t *live)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    uint16_t flag = r == (uint32_t)PBX_CORE_ROUTE_VFSD
                        ? PBX_CORE_GRANT_F_PROVIDER_LOST
                        : PBX_CORE_GRANT_F_INSTALLER_LOST;
    for (uint32_t g = 0; g < cap && g < SIM_GRANT_MAX; g++) {
        const pbx_core_grant *gr = sim_core_grant(w, g);
        bool depends = r == (uint32_t)PBX_CORE_ROUTE_VFSD ||
                       (r == (uint32_t)PBX_CORE_ROUTE_PROCD &&
                        (gr->flags & PBX_CORE_GRANT_F_INSTALL) != 0U);
        bool still =
            gr->link.live != 0U && gr->link.state == (uint16_t)PBX_CORE_ST_LIVE;
        if (live[g] == 0U || !depends) {
            if (live[g] != 0U && !still) {
                sim_fail(w,
                         "route loss: grant %u left LIVE although route %u "
                         "does not carry it",
                         g, r);
            }
            continue;
        }
        if (still || gr->end_reason != (uint16_t)PBX_CORE_EV_LOST ||
            (gr->flags & flag) == 0U) {
            sim_fail(w,
                     "route loss: grant %u is %s (end %u, flags %#x) after "
                     "route %u was lost: it must end, lost with the %s's "
                     "reason",
                     g, still ? "still LIVE" : "ended otherwise",
                     gr->end_reason, gr->flags, r,
                     r == (uint32_t)PBX_CORE_ROUTE_VFSD ? "provider"
                                                        : "installer");
        }
    }
}

void sim_routes_before_reqs(sim_world *w, uint8_t *held)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        const pbx_core_request *r = i < cap ? sim_core_req(w, i) : NULL;
        pbx_core_state st =
            r != NULL ? (pbx_core_state)r->link.state : PBX_CORE_ST_FREE;
        bool on = r != NULL && r->link.live != 0U &&
                  ((st >= PBX_CORE_ST_POLICY && st <= PBX_CORE_ST_ACTIVATE) ||
                   (st == PBX_CORE_ST_RESOLVE && r->call != PBX_CORE_NIL));
        held[i] = on ? 1U : 0U;
    }
}

void sim_routes_lost_reqs(sim_world *w, uint32_t r, const uint8_t *held)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    if (r != (uint32_t)PBX_CORE_ROUTE_VFSD) {
        return;
    }
    for (uint32_t i = 0; i < cap && i < SIM_REQ_MAX; i++) {
        const pbx_core_request *q = sim_core_req(w, i);
        if (held[i] == 0U) {
            continue;
        }
        w->reqs[i].provider_lost = 1U;
        if (q->link.state != (uint16_t)PBX_CORE_ST_RELEASE ||
            q->outcome != (uint16_t)PBX_IPC_OUTCOME_DENIED ||
            q->reason != (uint16_t)PBX_IPC_REASON_PROVIDER_LOST) {
            sim_fail(w,
                     "route loss: request %u holding the lost vfsd's object "
                     "is %s (outcome %u, reason %u): it must end DENIED, "
                     "provider-lost",
                     i, pbx_core_state_name((pbx_core_state)q->link.state),
                     q->outcome, q->reason);
            return;
        }
    }
}

/* Whether grant g ended with a reason the log can name. */
static bool sim_grant_reason_ok(const pbx_core_grant *gr)
{
    uint16_t lost = gr->flags & (PBX_CORE_GRANT_F_PROVIDER_LOST |
                                 PBX_CORE_GRANT_F_INSTALLER_LOST);
    switch ((pbx_core_event)gr->end_reason) {
    case PBX_CORE_EV_CONSUME:
    case PBX_CORE_EV_EXPIRE:
    case PBX_CORE_EV_CANCEL:
        return lost == 0U;
    case PBX_CORE_EV_LOST:
        return lost == PBX_CORE_GRANT_F_PROVIDER_LOST ||
               lost == PBX_CORE_GRANT_F_INSTALLER_LOST;
    default:
        return false;
    }
}

void sim_routes_reasons(sim_world *w)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t g = 0; g < cap; g++) {
        const pbx_core_grant *gr = sim_core_grant(w, g);
        pbx_core_state st = (pbx_core_state)gr->link.state;
        if (gr->link.live == 0U || st == PBX_CORE_ST_LIVE ||
            st == PBX_CORE_ST_FREE) {
            continue;
        }
        if (!sim_grant_reason_ok(gr)) {
            sim_fail(w,
                     "grant end: grant %u/%u in state %s ended without a "
                     "reason (end %u, flags %#x)",
                     g, gr->link.generation, pbx_core_state_name(st),
                     gr->end_reason, gr->flags);
            return;
        }
    }
}

void sim_routes_view(sim_world *w)
{
    uint32_t cap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    if (w->resync_pending == 0U ||
        w->routes[PBX_CORE_ROUTE_TTYD].down_until != 0U) {
        return;
    }
    for (uint32_t g = 0; g < cap; g++) {
        const pbx_core_grant *gr = sim_core_grant(w, g);
        if (gr->link.live != 0U &&
            (gr->flags & PBX_CORE_GRANT_F_RESYNC) != 0U) {
            return; /* A row is still owed to the returned ttyd. */
        }
    }
    w->resync_pending = 0U;
    for (uint32_t g = 0; g < cap && g < SIM_GRANT_MAX; g++) {
        const pbx_core_grant *gr = sim_core_grant(w, g);
        bool shown = gr->link.live != 0U &&
                     gr->link.state == (uint16_t)PBX_CORE_ST_LIVE &&
                     (gr->flags & PBX_CORE_GRANT_F_ROW) != 0U;
        if (shown && w->ttyd_row[g] != gr->link.generation) {
            sim_fail(w,
                     "ttyd resync: live grant %u/%u whose row went out is "
                     "not shown by the returned ttyd",
                     g, gr->link.generation);
            return;
        }
    }
}
