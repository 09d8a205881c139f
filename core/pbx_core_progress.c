/*
 * pbx_core_progress.c: what the request steps share. The steps live by
 * responsibility (pbx_core_resolve.c: scoped resolution, session policy
 * and the trusted prompt; pbx_core_install.c: grant installation or alias
 * derivation, detach and the ACTIVE view); pbx_core_steps.c dispatches
 * each ready request to its step and pbx_core_judges.c maps each ended
 * call to its judge. This file sits below all of them: it calls no step
 * and no judge. A step that calls a peer sends and returns; the matched
 * reply, or its absence at the deadline, comes back to the step's judge,
 * so no request waits on another's call.
 */
#include "core/pbx_core_progress.h"

/* Ends request i on a denial-class outcome, saying why (pbx_ipc_reason). */
void pbx_core_deny(pbx_core_ctx *ctx, uint32_t i, uint16_t reason)
{
    pbx_core_req(ctx, i)->reason = reason;
    pbx_core_req_terminate(ctx, i, PBX_CORE_EV_DENY, PBX_IPC_OUTCOME_DENIED);
}

/* The denial reason when a call's answer is missing (c NULL: deadline or
 * lost route) or unusable. */
uint16_t pbx_core_no_answer(const pbx_core_call *c)
{
    return c == NULL ? (uint16_t)PBX_IPC_REASON_PEER_TIMEOUT
                     : (uint16_t)PBX_IPC_REASON_PEER_FAILED;
}

/* Moves request i by event and puts it back on the intake lane. */
void pbx_core_advance(pbx_core_ctx *ctx, uint32_t i, pbx_core_event ev)
{
    pbx_core_req_move(ctx, i, ev);
    pbx_core_req(ctx, i)->parked_route = PBX_CORE_NIL;
    pbx_core_enqueue(ctx, PBX_CORE_Q_INTAKE, i);
}

/* Sends c for request i as kind, with the request's identity, in
 * deadline class clazz. OK: outstanding; BUSY: request i is queued to
 * try again; FAILED: nothing left powerboxd and the request is denied. */
pbx_core_io pbx_core_req_send(pbx_core_ctx *ctx, uint32_t i, pbx_core_call *c,
                              uint32_t kind, uint32_t clazz, uint16_t op)
{
    pbx_core_call_spec spec = {
        kind, clazz, PBX_BOOTSTRAP_POOL_REQUESTS,
        i,    op,    pbx_core_id(ctx, PBX_BOOTSTRAP_POOL_REQUESTS, i)};
    pbx_core_io io = pbx_core_call_send(ctx, c, &spec);
    if (io == PBX_CORE_IO_FAILED) {
        pbx_core_deny(ctx, i, PBX_IPC_REASON_PEER_FAILED);
    }
    return io;
}

/* Fills the object identity of request i's resolution. */
pbx_ipc_object pbx_core_req_object(const pbx_core_ctx *ctx,
                                   const pbx_core_request *r)
{
    return ((const pbx_core_resolution *)pbx_core_rec(
                ctx, PBX_BOOTSTRAP_POOL_RESOLUTIONS, r->resolution))
        ->object;
}
