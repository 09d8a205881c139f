/*
 * pbx_core_steps.c: one transition per retained request step. A ready
 * request is dispatched by its state to the step that serves it
 * (pbx_core_resolve.c, pbx_core_install.c, pbx_core_release.c). It is
 * the upper half of the request lanes: the steps call what
 * pbx_core_progress.c shares, never this file, so no circle runs through
 * the dispatch.
 */
#include "core/pbx_core_progress.h"

pbx_err pbx_core_progress_step(pbx_core_ctx *ctx, uint32_t i)
{
    pbx_core_request *r = pbx_core_req(ctx, i);
    if (r->call != PBX_CORE_NIL) {
        /* Woken while its own call is outstanding (an orphan deletion
         * finished, say): the call's judge brings it back. */
        return PBX_OK;
    }
    switch ((pbx_core_state)r->link.state) {
    case PBX_CORE_ST_RESOLVE:
        return pbx_core_step_resolve(ctx, i);
    case PBX_CORE_ST_POLICY:
        return pbx_core_step_policy(ctx, i);
    case PBX_CORE_ST_PROMPT:
        return pbx_core_step_prompt(ctx, i);
    case PBX_CORE_ST_INSTALL:
        if (!pbx_core_allow_evidence(ctx, i)) {
            /* Allowed without the evidence that allows it: the records
             * disagree, a classified progression fail-stop. */
            return PBX_E_CORE_INCONSISTENT;
        }
        return r->ctx.ctx.mode == (uint8_t)PBX_IPC_MODE_INSTALL
                   ? pbx_core_step_install(ctx, i)
                   : pbx_core_step_alias(ctx, i);
    case PBX_CORE_ST_DETACH:
        return pbx_core_step_detach(ctx, i);
    case PBX_CORE_ST_ACTIVATE:
        return pbx_core_step_activate(ctx, i);
    case PBX_CORE_ST_RELEASE:
        return pbx_core_release_step(ctx, i);
    case PBX_CORE_ST_OPEN:
        /* A request that waited for a call record in OPEN cannot exist:
         * OPEN sends nothing. */
    default:
        /* A request on a ready lane in a state no step serves means the
         * records disagree: a classified progression fail-stop. */
        return PBX_E_CORE_INCONSISTENT;
    }
}
