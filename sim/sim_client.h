/*
 * sim_client.h: helpers shared by the simulated clients. Internal to sim/.
 */
#ifndef PBX_SIM_CLIENT_H
#define PBX_SIM_CLIENT_H

#include "sim/sim.h"

/** SIM_BADGE is the kernel-vouched badge of client c. */
#define SIM_BADGE(c) (0x100U + (uint32_t)(c))

/** SIM_INVOCATION_FIRST is the first of the two invocation ids per job. */
#define SIM_INVOCATION_FIRST 9U

/**
 * sim_reply_status decodes reply o and returns its status (0 for success),
 * UINT16_MAX when there is no reply and UINT16_MAX - 1 when it does not
 * decode; *id (may be NULL) receives the header request identity.
 */
uint16_t sim_reply_status(const pbx_core_out *o, pbx_ipc_id *id);

/** sim_client_begin sends a BEGIN for client c and records the shadow. */
void sim_client_begin(sim_world *w, uint32_t c);

/** sim_client_selector streams the next chunk of request i. */
void sim_client_selector(sim_world *w, uint32_t i);

/** sim_client_commit transfers the scope of request i (maybe wrongly). */
void sim_client_commit(sim_world *w, uint32_t i);

/** sim_client_decision polls request i and delivers a terminal reply. */
void sim_client_decision(sim_world *w, uint32_t i);

/** sim_client_cancel cancels request i exactly or by correlation. */
void sim_client_cancel(sim_world *w, uint32_t i, bool correlate);

/** sim_client_cancel_grant sends the exact grant form of CANCEL for g. */
void sim_client_cancel_grant(sim_world *w, uint32_t g);

/** sim_foreign_badge returns a client badge other than owner. */
uint32_t sim_foreign_badge(const sim_world *w, uint32_t owner);

/**
 * sim_pick_badge picks the badge to end what owner began with: owner,
 * sometimes launchd's broker, or (client fault, *foreign set) a foreign
 * caller the core must refuse.
 */
uint32_t sim_pick_badge(sim_world *w, uint32_t owner, bool *foreign);

/** sim_client_consume consumes grant g (or a stale variant of it). */
void sim_client_consume(sim_world *w, uint32_t g, bool stale);

/** sim_client_expire sends EXPIRE for grant g's job from badge. */
void sim_client_expire(sim_world *w, uint32_t g, uint32_t badge);

/** sim_client_invalid sends one malformed or misaddressed frame. */
void sim_client_invalid(sim_world *w, uint32_t c);

#endif /* PBX_SIM_CLIENT_H */
