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

/**
 * sim_effect is what one EXPIRE, CANCEL or CONSUME may do (invariant 15):
 * the requests and grants it covers, by index bit, as the simulator's own
 * shadow names them, and every request and grant record as it was before
 * the frame. Caller-allocated; filled by sim_effect_before.
 */
typedef struct sim_effect {
    /** Covered requests (bit i: request index i). */
    uint32_t reqs;
    /** Covered grants (bit g: grant index g). */
    uint32_t grants;
    /** Requests before: live, generation, state, outcome, flags, grant. */
    uint32_t req[SIM_REQ_MAX][6];
    /** Grants before: live, generation, state, flags, request. */
    uint32_t grant[SIM_GRANT_MAX][5];
} sim_effect;

/** sim_effect_before notes every request and grant record into *e and
 * clears the covered sets. */
void sim_effect_before(const sim_world *w, sim_effect *e);

/** sim_effect_cover_req adds live shadow request i (and its grant) to the
 * covered sets when the core record is that generation. */
void sim_effect_cover_req(const sim_world *w, sim_effect *e, uint32_t i);

/** sim_effect_cover_grant adds grant g of generation gen to the covered
 * set when the core record was that generation. */
void sim_effect_cover_grant(sim_effect *e, uint32_t g, uint32_t gen);

/**
 * sim_effect_check checks the records after the frame what named:
 * accepted, exactly the covered requests and grants moved toward their
 * end and nothing else changed; refused, nothing changed.
 */
void sim_effect_check(sim_world *w, const sim_effect *e, bool accepted,
                      const char *what);

#endif /* PBX_SIM_CLIENT_H */
