/*
 * pbx_core_progress.h: what the request progression files share. Internal
 * to core/.
 */
#ifndef PBX_CORE_PROGRESS_H
#define PBX_CORE_PROGRESS_H

#include "core/pbx_core_peer.h"

/** Ends request i on a denial-class outcome, saying why (pbx_ipc_reason). */
void pbx_core_deny(pbx_core_ctx *ctx, uint32_t i, uint16_t reason);

/** The denial reason when a call's answer is missing (c NULL: deadline or
 * lost route) or unusable. */
uint16_t pbx_core_no_answer(const pbx_core_call *c);

/** Moves request i by event and puts it back on the intake lane. */
void pbx_core_advance(pbx_core_ctx *ctx, uint32_t i, pbx_core_event ev);

/** Sends c for request i as kind, with the request's identity, in
 * deadline class clazz. OK: outstanding; BUSY: request i is queued to
 * try again; FAILED: nothing left powerboxd and the request is denied. */
pbx_core_io pbx_core_req_send(pbx_core_ctx *ctx, uint32_t i, pbx_core_call *c,
                              uint32_t kind, uint32_t clazz, uint16_t op);

/** Fills the object identity of request i's resolution. */
pbx_ipc_object pbx_core_req_object(const pbx_core_ctx *ctx,
                                   const pbx_core_request *r);

/** pbx_core_step_resolve sends RESOLVE of request i through its committed
 * scope. */
pbx_err pbx_core_step_resolve(pbx_core_ctx *ctx, uint32_t i);

/** pbx_core_step_policy sends request i's session POLICY call to ttyd. */
pbx_err pbx_core_step_policy(pbx_core_ctx *ctx, uint32_t i);

/** pbx_core_step_prompt sends request i's trusted PROMPT to ttyd; from then on
 * the prompt may show until an exact answer. */
pbx_err pbx_core_step_prompt(pbx_core_ctx *ctx, uint32_t i);

/** Judges RESOLVE's reply (c NULL: none came) for request i. */
pbx_err pbx_core_judge_resolve(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                               const pbx_core_call *c);

/** Judges POLICY's reply (c NULL: none came) for request i. */
pbx_err pbx_core_judge_policy(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                              const pbx_core_call *c);

/** Judges PROMPT's reply (c NULL: none came before the deadline: the
 * request ends DENIED, saying the prompt timed out) for request i. */
pbx_err pbx_core_judge_prompt(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                              const pbx_core_call *c);

/** Whether the retained policy and prompt records of request i show why it
 * may be installed: a routine ALLOW, or the user's exact APPROVE of this
 * request generation and object. Checked again right before authority is
 * installed, so an exceptional request can never pass on policy alone. */
bool pbx_core_allow_evidence(const pbx_core_ctx *ctx, uint32_t i);

/** pbx_core_step_install sends INSTALL of request i's object (a copy) into the
 * staged process at procd. */
pbx_err pbx_core_step_install(pbx_core_ctx *ctx, uint32_t i);

/** Judges INSTALL's reply (c NULL: none came) for request i. */
pbx_err pbx_core_judge_install(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                               const pbx_core_call *c);

/** Runtime-reply mode: derive the revocable alias exported once later. */
pbx_err pbx_core_step_alias(pbx_core_ctx *ctx, uint32_t i);

/** Sends the ACTIVE row of request i's grant, under the grant identity. */
pbx_err pbx_core_step_activate(pbx_core_ctx *ctx, uint32_t i);

/** Judges the ACTIVE acknowledgement (c NULL: none came) for request i. */
pbx_err pbx_core_judge_activate(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                                const pbx_core_call *c);

/** Approval needs vfsd's exact DETACH acknowledgement. FAILED (nothing
 * moved) denies; release then gives back or deletes the object copy and
 * ends the installed grant (revoke, REMOVE, RETIRE). */
pbx_err pbx_core_step_detach(pbx_core_ctx *ctx, uint32_t i);

/** Judges the DETACH acknowledgement (c NULL: none came) for request i:
 * the object already left powerboxd with the call. */
pbx_err pbx_core_judge_detach(pbx_core_ctx *ctx, uint32_t kind, uint32_t i,
                              const pbx_core_call *c);

#endif /* PBX_CORE_PROGRESS_H */
