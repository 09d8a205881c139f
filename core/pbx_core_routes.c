/*
 * pbx_core_routes.c: what a peer's death and return do to the core's
 * records. A lost vfsd takes every live grant's object with it; a lost
 * procd can no longer revoke what it installed, so those objects are
 * retired at vfsd; a returned ttyd starts empty and gets every live row
 * again; a lost launchd broker leaves no caller to read a decision and no
 * launchd to manage a job. Each is one bounded pass over a pool, with no
 * allocation; everything else goes through the ordinary lanes.
 */
#include "core/pbx_core_peer.h"
#include "core/pbx_core_progress.h"

/* Ends live grant g because a peer it depends on was lost (flag and
 * reason say which). A published grant ends like an expiry; one whose
 * approval is unpublished ends the same way and its request's decision
 * becomes DENIED with that reason, unless the request already ends
 * without approval (its own reason stands). */
static void pbx_core_grant_lost(pbx_core_ctx *ctx, uint32_t g, uint16_t flag,
                                uint16_t reason)
{
    pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
    gr->flags |= flag;
    pbx_core_grant_end(ctx, g, PBX_CORE_EV_LOST);
    if ((gr->flags & PBX_CORE_GRANT_F_APPROVED) != 0U) {
        return;
    }
    uint32_t i = gr->request;
    PBX_ASSERT(i != PBX_CORE_NIL);
    pbx_core_request *r = pbx_core_req(ctx, i);
    PBX_ASSERT(r->link.live != 0U &&
               r->link.generation == gr->request_generation);
    if (pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST,
                          (pbx_core_state)r->link.state,
                          PBX_CORE_EV_DENY) != SIZE_MAX) {
        pbx_core_deny(ctx, i, reason);
    } else if (r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED) {
        /* Decided but unpublished: release retires the grant first and
         * then publishes the denial. */
        r->outcome = PBX_IPC_OUTCOME_DENIED;
        r->reason = reason;
    }
}

void pbx_core_route_lost(pbx_core_ctx *ctx, pbx_core_route route)
{
    uint16_t flag = PBX_CORE_GRANT_F_PROVIDER_LOST;
    uint16_t reason = PBX_IPC_REASON_PROVIDER_LOST;
    uint16_t need = 0U;
    if (route == PBX_CORE_ROUTE_PROCD) {
        /* Only what procd installed depends on procd. */
        flag = PBX_CORE_GRANT_F_INSTALLER_LOST;
        reason = PBX_IPC_REASON_INSTALLER_LOST;
        need = PBX_CORE_GRANT_F_INSTALL;
    } else if (route != PBX_CORE_ROUTE_VFSD) {
        return;
    }
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    /* Ending a grant frees no grant record, so one pass sees each once. */
    for (uint32_t g = 0; g < cap; g++) {
        const pbx_core_link *l =
            pbx_core_link_of(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        if (l->live != 0U && l->state == (uint16_t)PBX_CORE_ST_LIVE &&
            (pbx_core_grant_at(ctx, g)->flags & need) == need) {
            pbx_core_grant_lost(ctx, g, flag, reason);
        }
    }
}

/* Whether request r, in flight, holds (or is about to receive) an object
 * the lost vfsd minted: it was resolved (POLICY to ACTIVATE), or its
 * RESOLVE is outstanding, whose reply, written before vfsd died, would
 * still name an object of the dead incarnation. */
static bool pbx_core_req_on_provider(const pbx_core_request *r)
{
    switch ((pbx_core_state)r->link.state) {
    case PBX_CORE_ST_POLICY:
    case PBX_CORE_ST_PROMPT:
    case PBX_CORE_ST_INSTALL:
    case PBX_CORE_ST_DETACH:
    case PBX_CORE_ST_ACTIVATE:
        return true;
    case PBX_CORE_ST_RESOLVE:
        return r->call != PBX_CORE_NIL;
    default:
        return false;
    }
}

void pbx_core_route_lost_requests(pbx_core_ctx *ctx, pbx_core_route route)
{
    if (route != PBX_CORE_ROUTE_VFSD) {
        return;
    }
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    /* Denying request i frees no request record and moves it to RELEASE,
     * which this pass skips: one pass sees each request once. */
    for (uint32_t i = 0; i < cap; i++) {
        const pbx_core_link *l =
            pbx_core_link_of(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
        if (l->live != 0U && pbx_core_req_on_provider(pbx_core_req(ctx, i))) {
            pbx_core_deny(ctx, i, PBX_IPC_REASON_PROVIDER_LOST);
        }
    }
}

pbx_err pbx_core_on_route_down(pbx_core_ctx *ctx, pbx_core_route route)
{
    PBX_ASSERT((unsigned)route < (unsigned)PBX_CORE_ROUTE_COUNT);
    if (ctx->ready == 0U) {
        return PBX_E_CORE_NOT_READY;
    }
    /* Work parked on the route's backpressure would wait for a
     * writability that never comes: it goes back to its lanes, where its
     * next send fails and takes its failure path. */
    pbx_core_on_route_ready(ctx, route);
    /* First, so that a request whose object dies with vfsd says so
     * (PROVIDER_LOST) rather than that its DETACH went unanswered. */
    pbx_core_route_lost_requests(ctx, route);
    /* Then every call outstanding on the route, each through its judge. */
    pbx_err err = pbx_core_calls_route_down(ctx, route);
    if (err != PBX_OK) {
        return err;
    }
    pbx_core_route_lost(ctx, route);
    return PBX_OK;
}

/* Queues every LIVE grant whose ACTIVE row the old ttyd was sent, so the
 * new one, which starts empty, gets it again. */
static void pbx_core_resync_all(pbx_core_ctx *ctx)
{
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t g = 0; g < cap; g++) {
        const pbx_core_link *l =
            pbx_core_link_of(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        pbx_core_grant *gr = pbx_core_grant_at(ctx, g);
        if (l->live == 0U || l->state != (uint16_t)PBX_CORE_ST_LIVE ||
            (gr->flags & PBX_CORE_GRANT_F_ROW) == 0U ||
            gr->call_remove != PBX_CORE_NIL) {
            /* Not shown, or its row is on its way to the new ttyd. */
            continue;
        }
        gr->flags |= PBX_CORE_GRANT_F_RESYNC;
        pbx_core_dequeue(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        pbx_core_enqueue(ctx, PBX_CORE_Q_GRANT, g);
    }
}

pbx_err pbx_core_on_route_up(pbx_core_ctx *ctx, pbx_core_route route)
{
    PBX_ASSERT((unsigned)route < (unsigned)PBX_CORE_ROUTE_COUNT);
    if (ctx->ready == 0U) {
        return PBX_E_CORE_NOT_READY;
    }
    /* Parked work goes back to its lanes, and so does work deferred to a
     * tick (owed RETIREs and REMOVEs above all): a fresh route takes it. */
    pbx_core_on_route_ready(ctx, route);
    pbx_core_on_tick(ctx);
    if (route == PBX_CORE_ROUTE_TTYD) {
        pbx_core_resync_all(ctx);
        pbx_core_prompts_resend(ctx);
    }
    return PBX_OK;
}

/* Ends request i of a lost broker: in flight, CANCELLED (through its
 * grant when that is live); decided, its decision dropped once published.
 * Returns PBX_OK or a cleanup fail-stop error. */
static pbx_err pbx_core_broker_drop(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    pbx_core_state st = (pbx_core_state)r->link.state;
    r->flags |= PBX_CORE_REQ_F_ABANDONED;
    if (r->grant != PBX_CORE_NIL &&
        pbx_core_grant_at(ctx, r->grant)->link.state ==
            (uint16_t)PBX_CORE_ST_LIVE) {
        bool published = (pbx_core_grant_at(ctx, r->grant)->flags &
                          PBX_CORE_GRANT_F_APPROVED) != 0U;
        pbx_core_grant_stop(ctx, r->grant, PBX_CORE_EV_EXPIRE);
        if (!published) {
            return PBX_OK; /* The request ends CANCELLED through it. */
        }
    }
    if (pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST, st, PBX_CORE_EV_CANCEL) !=
        SIZE_MAX) {
        r->flags |= PBX_CORE_REQ_F_CANCELLED;
        pbx_core_req_terminate(ctx, i, PBX_CORE_EV_CANCEL,
                               PBX_IPC_OUTCOME_CANCELLED);
        return PBX_OK;
    }
    if (st != PBX_CORE_ST_NOTIFY && st != PBX_CORE_ST_DECIDED) {
        return PBX_OK; /* RELEASE: dropped when published; DELIVERED. */
    }
    if (pbx_core_tslot_held(ctx, r->handle_tslot) &&
        r->outcome == (uint16_t)PBX_IPC_OUTCOME_APPROVED &&
        r->ctx.ctx.mode == (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY) {
        /* The alias will never leave with a reply: it is deleted here. */
        pbx_core_delete d = pbx_core_delete_tslot(ctx, r->handle_tslot);
        if (d == PBX_CORE_DELETE_REJECTED) {
            return PBX_E_CORE_CLEANUP_REJECTED;
        }
        if (d != PBX_CORE_DELETE_OK) {
            return PBX_OK; /* Kept with its decision, as undelivered. */
        }
    }
    pbx_core_req_move(ctx, i, PBX_CORE_EV_DELIVERED);
    if (r->link.state == (uint16_t)PBX_CORE_ST_FREE) {
        pbx_core_req_retire(ctx, i);
    }
    return PBX_OK;
}

pbx_err pbx_core_on_broker_lost(pbx_core_ctx *ctx)
{
    if (ctx->ready == 0U) {
        return PBX_E_CORE_NOT_READY;
    }
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    /* Ending or retiring request i touches no other request record. */
    for (uint32_t i = 0; i < cap; i++) {
        const pbx_core_link *l =
            pbx_core_link_of(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
        if (l->live == 0U || l->state == (uint16_t)PBX_CORE_ST_FREE) {
            continue;
        }
        pbx_err err = pbx_core_broker_drop(ctx, i);
        if (err != PBX_OK) {
            return pbx_core_fail(ctx, PBX_CORE_EXIT_CLEANUP, err);
        }
    }
    cap = ctx->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    for (uint32_t g = 0; g < cap; g++) {
        const pbx_core_link *l =
            pbx_core_link_of(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        if (l->live != 0U && l->state == (uint16_t)PBX_CORE_ST_LIVE) {
            /* A grant whose request retired: no launchd manages its job. */
            pbx_core_grant_end(ctx, g, PBX_CORE_EV_EXPIRE);
        }
    }
    return PBX_OK;
}
