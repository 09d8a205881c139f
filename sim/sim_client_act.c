/*
 * sim_client_act.c: CONSUME, EXPIRE, invalid frames, the random choice of
 * the next public operation, and the drive to quiescence.
 */
#include "sim/sim_client.h"

#include <string.h>

void sim_client_consume(sim_world *w, uint32_t g, bool stale)
{
    sim_grant *gr = &w->grants[g];
    uint8_t buf[64];
    size_t n = 0;
    bool foreign = false;
    uint32_t badge = sim_pick_badge(w, gr->badge, &foreign);
    pbx_ipc_consume q = {{g, gr->gen}};
    if (stale) {
        q.grant.gen = gr->gen + 1U + sim_below(w, 2U) * (UINT32_MAX - 2U);
    }
    if (q.grant.gen == 0U ||
        pbx_ipc_consume_encode(&q, buf, sizeof(buf), &n) != PBX_OK) {
        return;
    }
    static sim_effect e;
    sim_effect_before(w, &e);
    sim_effect_cover_grant(&e, q.grant.index, q.grant.gen);
    const pbx_core_out *o = sim_public(w, badge, buf, n, NULL, 0U, 0U);
    if (o != NULL) {
        sim_effect_check(w, &e, sim_reply_status(o, NULL) == 0U, "CONSUME");
    }
    if (o == NULL || sim_reply_status(o, NULL) != 0U) {
        return;
    }
    if (stale || foreign || gr->state != (uint32_t)SIM_G_ACTIVE ||
        gr->ending != 0U ||
        gr->ctx.lifetime != (uint8_t)PBX_IPC_LIFETIME_ONE_SHOT) {
        sim_fail(w,
                 "invariant 7: CONSUME of %u/%u from %#x acted on a stale, "
                 "ended, foreign or non-one-shot grant",
                 q.grant.index, q.grant.gen, badge);
        return;
    }
    gr->ending = 1U;
}

/* Whether expiry e covers a request or grant of context c with
 * invocation id inv (the seed's rule, restated from PROTOCOL.md): the
 * job's end ends all of it, an invocation's end its invocation grants and
 * the one-shot grants made within it, never a job grant. */
static bool sim_expire_covers(const pbx_ipc_expire *e, const pbx_ipc_context *c,
                              uint64_t inv)
{
    if (c->job_id != e->job_id || c->job_gen != e->job_gen) {
        return false;
    }
    return e->kind == (uint8_t)PBX_IPC_EXPIRE_JOB ||
           (c->lifetime != (uint8_t)PBX_IPC_LIFETIME_JOB && inv != 0U &&
            inv == e->invocation_id);
}

/* Names in *x what expiry q covers, from the shadow alone. */
static void sim_expire_cover(const sim_world *w, const pbx_ipc_expire *q,
                             sim_effect *x)
{
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        const sim_req *s = &w->reqs[i];
        if (s->live != 0U &&
            sim_expire_covers(q, &s->begin.ctx, s->begin.invocation_id)) {
            sim_effect_cover_req(w, x, i);
        }
    }
    for (uint32_t g = 0; g < SIM_GRANT_MAX; g++) {
        const sim_grant *gr = &w->grants[g];
        if (gr->gen != 0U &&
            sim_expire_covers(q, &gr->ctx, gr->invocation_id)) {
            sim_effect_cover_grant(x, g, gr->gen);
        }
    }
}

void sim_client_expire(sim_world *w, uint32_t g, uint32_t badge)
{
    const sim_grant *gr = &w->grants[g];
    uint8_t buf[64];
    size_t n = 0;
    pbx_ipc_expire q;
    memset(&q, 0, sizeof(q));
    q.kind =
        sim_chance(w, 512U) ? PBX_IPC_EXPIRE_JOB : PBX_IPC_EXPIRE_INVOCATION;
    q.job_id = gr->ctx.job_id;
    q.job_gen = gr->ctx.job_gen != 0U ? gr->ctx.job_gen : 1U;
    if (q.kind == (uint8_t)PBX_IPC_EXPIRE_INVOCATION) {
        q.invocation_id = gr->invocation_id != 0U && sim_chance(w, 800U)
                              ? gr->invocation_id
                              : SIM_INVOCATION_FIRST + sim_below(w, 2U);
    }
    if (pbx_ipc_expire_encode(&q, buf, sizeof(buf), &n) != PBX_OK) {
        return;
    }
    static sim_effect e;
    sim_effect_before(w, &e);
    sim_expire_cover(w, &q, &e);
    const pbx_core_out *o = sim_public(w, badge, buf, n, NULL, 0U, 0U);
    if (o != NULL) {
        sim_effect_check(w, &e, sim_reply_status(o, NULL) == 0U, "EXPIRE");
    }
    if (o == NULL || sim_reply_status(o, NULL) != 0U) {
        return;
    }
    if (badge != PBX_CORE_BADGE_LAUNCHD) {
        sim_fail(w, "EXPIRE accepted from badge %#x, not launchd", badge);
        return;
    }
    /* The expiry may have ended any covered request in flight CANCELLED. */
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        sim_req *s = &w->reqs[i];
        if (s->live != 0U &&
            sim_expire_covers(&q, &s->begin.ctx, s->begin.invocation_id)) {
            s->expire_hit = 1U;
        }
    }
}

/* Sends random bytes with a surplus capability. */
static void sim_invalid_garbage(sim_world *w, uint32_t c)
{
    uint8_t buf[64];
    size_t len = sim_below(w, sizeof(buf));
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)sim_rand(w);
    }
    if (len >= 8U && sim_chance(w, 700U)) {
        pbx_le_put32(buf, PBX_IPC_MAGIC);
        pbx_le_put16(buf + 4, PBX_IPC_VERSION);
    }
    sim_cap junk = sim_cap_mint(w, SIM_ROLE_JUNK, SIM_NIL, 0, 0);
    (void)sim_public(w, SIM_BADGE(c), buf, len, &junk,
                     sim_chance(w, 512U) ? 1U : 0U, SIM_NIL);
}

/* Polls request i from a client's own badge, the program that asked
 * included: launchd's broker began it, so every client badge is refused. */
static void sim_invalid_foreign(sim_world *w, uint32_t c, uint32_t i)
{
    const sim_req *s = &w->reqs[i];
    uint8_t buf[64];
    size_t n = 0;
    pbx_ipc_id id = {i, s->gen};
    uint32_t other = (s->client + c) % SIM_CLIENTS;
    if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf), &n) !=
        PBX_OK) {
        return;
    }
    const pbx_core_out *o =
        sim_public(w, SIM_BADGE(other), buf, n, NULL, 0U, 0U);
    if (o != NULL && sim_reply_status(o, NULL) == 0U) {
        sim_fail(w, "request %u answered a caller that did not begin it", i);
    }
}

/* Sends a stale or surplus-capability DECISION for request i. */
static void sim_invalid_stale(sim_world *w, uint32_t i)
{
    const sim_req *s = &w->reqs[i];
    uint8_t buf[64];
    size_t n = 0;
    pbx_ipc_id id = {i, s->gen + 1U};
    bool surplus = sim_chance(w, 512U);
    if (surplus) {
        id.gen = s->gen;
    }
    if (id.gen == 0U || pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf,
                                             sizeof(buf), &n) != PBX_OK) {
        return;
    }
    sim_cap junk = sim_cap_mint(w, SIM_ROLE_JUNK, SIM_NIL, 0, 0);
    const pbx_core_out *o =
        sim_public(w, s->badge, buf, n, &junk, surplus ? 1U : 0U, SIM_NIL);
    if (o != NULL && sim_reply_status(o, NULL) == 0U) {
        sim_fail(w, "a %s DECISION for %u was answered",
                 surplus ? "capability-carrying" : "stale", i);
    }
}

void sim_client_invalid(sim_world *w, uint32_t c)
{
    uint32_t i = sim_below(w, SIM_REQ_MAX);
    bool live = w->reqs[i].live != 0U;
    switch (sim_below(w, 4U)) {
    case 0:
        if (live) {
            sim_invalid_foreign(w, c, i);
            break;
        }
        sim_invalid_garbage(w, c);
        break;
    case 1:
        if (live) {
            sim_invalid_stale(w, i);
            break;
        }
        sim_invalid_garbage(w, c);
        break;
    case 2:
        if (w->grants[i % SIM_GRANT_MAX].gen != 0U) {
            sim_client_expire(w, i % SIM_GRANT_MAX, SIM_BADGE(c));
            break;
        }
        sim_invalid_garbage(w, c);
        break;
    default:
        sim_invalid_garbage(w, c);
        break;
    }
}

/* Advances request i by its natural next operation. */
static void sim_client_advance(sim_world *w, uint32_t i)
{
    const sim_req *s = &w->reqs[i];
    if (s->sent < s->begin.selector_len && s->cancel_ok == 0U &&
        s->ended == 0U) {
        sim_client_selector(w, i);
    } else if (s->committed == 0U && s->cancel_ok == 0U && s->ended == 0U) {
        sim_client_commit(w, i);
    } else {
        sim_client_decision(w, i);
    }
}

/* Ends grant g the way its lifetime allows. */
static void sim_client_end_grant(sim_world *w, uint32_t g, bool stale)
{
    const sim_grant *gr = &w->grants[g];
    if (gr->ctx.lifetime == (uint8_t)PBX_IPC_LIFETIME_ONE_SHOT &&
        !sim_chance(w, 100U)) {
        sim_client_consume(w, g, stale);
    } else {
        sim_client_expire(w, g, PBX_CORE_BADGE_LAUNCHD);
    }
}

void sim_client_act(sim_world *w)
{
    uint32_t c = sim_below(w, SIM_CLIENTS);
    uint32_t i = sim_below(w, SIM_REQ_MAX);
    uint32_t g = sim_below(w, SIM_GRANT_MAX);
    uint32_t roll = sim_below(w, 100U);
    if (roll < 15U) {
        sim_client_begin(w, c);
    } else if (roll < 75U) {
        if (w->reqs[i].live != 0U && w->reqs[i].abandoned == 0U) {
            sim_client_advance(w, i);
        }
    } else if (roll < 82U) {
        if (w->reqs[i].live != 0U && w->reqs[i].abandoned == 0U &&
            sim_fault_fires(w, SIM_F_CANCEL)) {
            sim_client_cancel(w, i, sim_chance(w, 256U));
        }
    } else if (roll < 90U) {
        const sim_grant *gr = &w->grants[g];
        if (gr->client_knows == 0U) {
            return;
        }
        if (sim_fault_fires(w, SIM_F_CANCEL) && sim_chance(w, 400U)) {
            sim_client_cancel_grant(w, g);
        } else if (gr->ctx.lifetime == (uint8_t)PBX_IPC_LIFETIME_ONE_SHOT ||
                   sim_fault_fires(w, SIM_F_EXPIRE)) {
            sim_client_end_grant(w, g, sim_chance(w, 128U));
        }
    } else if (sim_fault_fires(w, SIM_F_CLIENT)) {
        sim_client_invalid(w, c);
    }
}

void sim_client_quiesce(sim_world *w)
{
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        const sim_req *s = &w->reqs[i];
        if (s->live == 0U || s->abandoned != 0U) {
            continue;
        }
        if (s->committed == 0U && s->cancel_ok == 0U && s->ended == 0U) {
            sim_client_cancel(w, i, false);
        } else if (s->delivered == 0U) {
            sim_client_decision(w, i);
        }
    }
    for (uint32_t g = 0; g < SIM_GRANT_MAX; g++) {
        const sim_grant *gr = &w->grants[g];
        if (gr->client_knows != 0U && gr->state == (uint32_t)SIM_G_ACTIVE &&
            gr->ending == 0U) {
            if (gr->ctx.lifetime != (uint8_t)PBX_IPC_LIFETIME_ONE_SHOT &&
                sim_chance(w, 256U)) {
                sim_client_cancel_grant(w, g);
            } else {
                sim_client_end_grant(w, g, false);
            }
        }
    }
}
