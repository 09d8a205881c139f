/*
 * pbx_core_expire.c: EXPIRE of a job or an invocation, within its event:
 * one walk of the job's request chain and one of its grant chain.
 */
#include "core/pbx_core_peer.h"

bool pbx_core_expire_hits(const pbx_ipc_expire *e, const pbx_core_context *c)
{
    if (c->ctx.job_id != e->job_id || c->ctx.job_gen != e->job_gen) {
        return false;
    }
    /* An invocation's end ends everything bound to it: its invocation
     * grants and the one-shot grants made within it, whatever the mode. */
    return e->kind == (uint8_t)PBX_IPC_EXPIRE_JOB ||
           (c->ctx.lifetime != (uint8_t)PBX_IPC_LIFETIME_JOB &&
            c->invocation_id == e->invocation_id);
}

/* A request of the expired job (or invocation) still in flight ends
 * CANCELLED through the normal release path, so it can never be approved
 * after its scope ended. One whose grant is installed ends through that
 * grant at once (an unpublished approval turns CANCELLED before release
 * can publish it); any other has a decision that grants nothing. */
static void pbx_core_expire_request(pbx_core_ctx *ctx, const pbx_ipc_expire *e,
                                    uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    if (!pbx_core_expire_hits(e, &r->ctx)) {
        return;
    }
    if (r->grant != PBX_CORE_NIL &&
        pbx_core_grant_at(ctx, r->grant)->link.state ==
            (uint16_t)PBX_CORE_ST_LIVE) {
        pbx_core_grant_stop(ctx, r->grant, PBX_CORE_EV_EXPIRE);
        return;
    }
    if (pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST,
                          (pbx_core_state)r->link.state,
                          PBX_CORE_EV_CANCEL) != SIZE_MAX) {
        r->flags |= PBX_CORE_REQ_F_CANCELLED;
        pbx_core_req_terminate(ctx, i, PBX_CORE_EV_CANCEL,
                               PBX_IPC_OUTCOME_CANCELLED);
    }
}

/* Requests go first, then grants. Ending a request never frees or
 * unchains another request, and ending a grant unchains at most that
 * grant (the one being visited), so saving the successor before acting
 * keeps each walk on its chain. Every grant the request half stopped has
 * left LIVE and so the grant chain; one whose approval is unpublished is
 * still LIVE, and meeting it again changes nothing (its request is
 * already terminating). Each walk is bounded by the pool capacity. */
void pbx_core_expire(pbx_core_ctx *ctx, const pbx_ipc_expire *e)
{
    uint32_t cap = ctx->pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    uint32_t i = pbx_core_index_head(ctx, PBX_BOOTSTRAP_POOL_REQUESTS,
                                     e->job_id, e->job_gen);
    for (uint32_t n = 0; n < cap && i != PBX_CORE_NIL; n++) {
        uint32_t next =
            pbx_core_index_next(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i);
        pbx_core_expire_request(ctx, e, i);
        i = next;
    }
    cap = ctx->pools[PBX_BOOTSTRAP_POOL_GRANTS].capacity;
    uint32_t g = pbx_core_index_head(ctx, PBX_BOOTSTRAP_POOL_GRANTS, e->job_id,
                                     e->job_gen);
    for (uint32_t n = 0; n < cap && g != PBX_CORE_NIL; n++) {
        uint32_t next = pbx_core_index_next(ctx, PBX_BOOTSTRAP_POOL_GRANTS, g);
        /* Every live grant of the job ends, including one whose approval
         * is not yet published: it must never be published past its
         * expiry. */
        if (pbx_core_expire_hits(e, &pbx_core_grant_at(ctx, g)->ctx)) {
            pbx_core_grant_stop(ctx, g, PBX_CORE_EV_EXPIRE);
        }
        g = next;
    }
}
