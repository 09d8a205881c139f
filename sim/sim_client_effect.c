/*
 * sim_client_effect.c: invariant 15, the effects of EXPIRE, CANCEL and
 * CONSUME. Before such a frame the records of every request and grant are
 * noted; the caller names, from the simulator's own shadow (job,
 * invocation, lifetime, the exact request or grant asked for), the
 * requests and grants the frame covers. After an accepted frame exactly
 * the covered ones moved toward their end, each the way the seed says,
 * and nothing else changed; after a refused one nothing changed at all.
 */
#include "sim/sim_client.h"

#include "core/pbx_core_inspect.h"

#include <string.h>

/* The request fields an ending may change, in snap_req order. */
enum { SE_LIVE = 0, SE_GEN, SE_STATE, SE_OUTCOME, SE_FLAGS, SE_GRANT };

void sim_effect_before(const sim_world *w, sim_effect *e)
{
    memset(e, 0, sizeof(*e));
    uint32_t rcap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    uint32_t gcap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t i = 0; i < rcap && i < SIM_REQ_MAX; i++) {
        const pbx_core_request *r = sim_core_req(w, i);
        uint32_t *q = e->req[i];
        q[SE_LIVE] = r->link.live;
        q[SE_GEN] = r->link.generation;
        q[SE_STATE] = r->link.state;
        q[SE_OUTCOME] = r->outcome;
        q[SE_FLAGS] = r->flags;
        q[SE_GRANT] = r->grant;
    }
    for (uint32_t g = 0; g < gcap && g < SIM_GRANT_MAX; g++) {
        const pbx_core_grant *gr = sim_core_grant(w, g);
        uint32_t *q = e->grant[g];
        q[SE_LIVE] = gr->link.live;
        q[SE_GEN] = gr->link.generation;
        q[SE_STATE] = gr->link.state;
        q[3] = gr->flags;
        q[4] = gr->request;
    }
}

void sim_effect_cover_req(const sim_world *w, sim_effect *e, uint32_t i)
{
    if (i >= SIM_REQ_MAX || e->req[i][SE_LIVE] == 0U ||
        e->req[i][SE_GEN] != w->reqs[i].gen) {
        return;
    }
    e->reqs |= 1U << i;
    /* A request's grant ends with it (through it while unpublished). */
    if (e->req[i][SE_GRANT] < SIM_GRANT_MAX) {
        e->grants |= 1U << e->req[i][SE_GRANT];
    }
}

void sim_effect_cover_grant(sim_effect *e, uint32_t g, uint32_t gen)
{
    if (g < SIM_GRANT_MAX && e->grant[g][SE_LIVE] != 0U &&
        e->grant[g][SE_GEN] == gen) {
        e->grants |= 1U << g;
    }
}

/* Whether a request in state could be cancelled in flight (a CANCEL row
 * leaves it). */
static bool sim_effect_inflight(uint32_t state)
{
    return pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST, (pbx_core_state)state,
                             PBX_CORE_EV_CANCEL) != SIZE_MAX;
}

/* What the covered grants demand of their requests: a LIVE grant whose
 * approval is unpublished ends through its request (bits of requests that
 * must end). */
static uint32_t sim_effect_via_grants(const sim_effect *e)
{
    uint32_t must = 0;
    for (uint32_t g = 0; g < SIM_GRANT_MAX; g++) {
        const uint32_t *q = e->grant[g];
        if ((e->grants & (1U << g)) != 0U &&
            q[SE_STATE] == (uint32_t)PBX_CORE_ST_LIVE &&
            (q[3] & PBX_CORE_GRANT_F_APPROVED) == 0U && q[4] < SIM_REQ_MAX) {
            must |= 1U << q[4];
        }
    }
    return must;
}

/* Checks request i after the frame: covered (or owning a covered grant
 * whose approval is unpublished and still possible), it ended CANCELLED
 * unless nothing of it could end; otherwise it is exactly as it was. A
 * published decision never changes. */
static void sim_effect_req(sim_world *w, const sim_effect *e, uint32_t i,
                           uint32_t must, const char *what)
{
    const uint32_t *q = e->req[i];
    const pbx_core_request *r = sim_core_req(w, i);
    bool covered = (e->reqs & (1U << i)) != 0U;
    /* Through its grant only a request that could still be approved ends:
     * one already ending without approval (a denial before its release
     * revoked the grant) keeps its own outcome and reason. */
    bool via = (must & (1U << i)) != 0U &&
               (sim_effect_inflight(q[SE_STATE]) ||
                q[SE_OUTCOME] == (uint32_t)PBX_IPC_OUTCOME_APPROVED);
    bool end = via || (covered && sim_effect_inflight(q[SE_STATE]));
    bool ended = r->outcome == (uint16_t)PBX_IPC_OUTCOME_CANCELLED &&
                 (r->flags & PBX_CORE_REQ_F_CANCELLED) != 0U;
    bool same = r->link.live == q[SE_LIVE] && r->link.generation == q[SE_GEN] &&
                r->link.state == q[SE_STATE] && r->outcome == q[SE_OUTCOME] &&
                r->flags == q[SE_FLAGS];
    if (end ? !ended || r->link.generation != q[SE_GEN] : !same) {
        sim_fail(w,
                 "invariant 15: %s %s request %u/%u (state %s -> %s, outcome "
                 "%u -> %u, flags %#x -> %#x)",
                 what, end ? "did not end covered" : "changed uncovered", i,
                 q[SE_GEN], pbx_core_state_name((pbx_core_state)q[SE_STATE]),
                 pbx_core_state_name((pbx_core_state)r->link.state),
                 q[SE_OUTCOME], r->outcome, q[SE_FLAGS], r->flags);
    }
}

/* Checks grant g after the frame: a covered LIVE grant whose approval is
 * published is revoking now (its request, checked apart, ends an
 * unpublished one); every other grant is exactly as it was. */
static void sim_effect_grant(sim_world *w, const sim_effect *e, uint32_t g)
{
    const uint32_t *q = e->grant[g];
    const pbx_core_grant *gr = sim_core_grant(w, g);
    bool covered = (e->grants & (1U << g)) != 0U &&
                   q[SE_STATE] == (uint32_t)PBX_CORE_ST_LIVE;
    bool published = (q[3] & PBX_CORE_GRANT_F_APPROVED) != 0U;
    bool same = gr->link.live == q[SE_LIVE] &&
                gr->link.generation == q[SE_GEN] &&
                gr->link.state == q[SE_STATE] && gr->flags == q[3];
    bool ok = covered && published
                  ? gr->link.generation == q[SE_GEN] &&
                        gr->link.state == (uint16_t)PBX_CORE_ST_REVOKE
                  : same;
    if (!ok) {
        sim_fail(w, "invariant 15: %s grant %u/%u (state %s -> %s, flags %#x)",
                 covered ? "covered" : "uncovered", g, q[SE_GEN],
                 pbx_core_state_name((pbx_core_state)q[SE_STATE]),
                 pbx_core_state_name((pbx_core_state)gr->link.state), q[3]);
    }
}

void sim_effect_check(sim_world *w, const sim_effect *e, bool accepted,
                      const char *what)
{
    sim_effect none;
    const sim_effect *x = e;
    if (!accepted) {
        /* A refused frame covers nothing. */
        none = *e;
        none.reqs = 0U;
        none.grants = 0U;
        x = &none;
    }
    uint32_t must = sim_effect_via_grants(x);
    uint32_t rcap = w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    uint32_t gcap = w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t i = 0; i < rcap && i < SIM_REQ_MAX; i++) {
        sim_effect_req(w, x, i, must, what);
    }
    for (uint32_t g = 0; g < gcap && g < SIM_GRANT_MAX; g++) {
        sim_effect_grant(w, x, g);
    }
}
