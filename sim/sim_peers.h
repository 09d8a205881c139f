/*
 * sim_peers.h: helpers shared by the simulated peers (vfsd, ttyd, procd,
 * launchd). Internal to sim/.
 */
#ifndef PBX_SIM_PEERS_H
#define PBX_SIM_PEERS_H

#include "sim/sim.h"

/** sim_reply is one peer reply being built: bytes and receipts. */
typedef struct sim_reply {
    /** Reply frame bytes. */
    uint8_t bytes[SIM_REPLY_MAX];
    /** Bytes in use. */
    size_t len;
    /** Receipts that travel with the reply. */
    sim_cap caps[PBX_CORE_RECV_SLOTS_MAX];
    /** Receipts in use. */
    size_t ncaps;
    /** Nonzero when the bytes replay an older reply (the replay fault). */
    uint32_t replayed;
} sim_reply;

/** sim_ctx_equal compares two request contexts field by field. */
bool sim_ctx_equal(const pbx_ipc_context *a, const pbx_ipc_context *b);

/** sim_live_req returns the shadow of live request id, or NULL (a
 * violation, reported as seen by who). */
sim_req *sim_live_req(sim_world *w, pbx_ipc_id id, const char *who);

/** sim_final decodes the delivered reply fl as the exact status-zero
 * reply of its call; *f borrows fl. */
bool sim_final(const sim_flight *fl, pbx_ipc_frame *f);

/** sim_vfsd_resolve answers RESOLVE through the request's scope. */
bool sim_vfsd_resolve(sim_world *w, const pbx_ipc_frame *f,
                      const pbx_core_call *c, sim_reply *r);
/** sim_vfsd_detach takes powerboxd's own object copy back. */
bool sim_vfsd_detach(sim_world *w, const pbx_ipc_frame *f,
                     const pbx_core_call *c, sim_reply *r);
/** sim_vfsd_retire answers the full-identity retirement of a grant. */
bool sim_vfsd_retire(sim_world *w, const pbx_ipc_frame *f, sim_reply *r);
/** sim_vfsd_resolve_evidence records an exact NOT_FOUND the core took. */
void sim_vfsd_resolve_evidence(sim_world *w, const sim_flight *fl);
/** sim_vfsd_retire_evidence records an exact RETIRE ack the core took. */
void sim_vfsd_retire_evidence(sim_world *w, const sim_flight *fl);
/** sim_ttyd_policy answers a session POLICY question. */
bool sim_ttyd_policy(sim_world *w, const pbx_ipc_frame *f, sim_reply *r);
/** sim_ttyd_prompt answers a trusted PROMPT (RETRY or an answer). */
bool sim_ttyd_prompt(sim_world *w, const pbx_ipc_frame *f, sim_reply *r);
/** sim_ttyd_view acknowledges an ACTIVE or REMOVE grant row. */
bool sim_ttyd_view(sim_world *w, const pbx_ipc_frame *f, sim_reply *r);
/** sim_ttyd_withdraw takes a prompt down and acknowledges (echo). */
bool sim_ttyd_withdraw(sim_world *w, const pbx_ipc_frame *f, sim_reply *r);
/**
 * sim_runtime_grant creates the shadow of runtime-reply grant (index below
 * SIM_GRANT_MAX) from the live runtime-reply request that resolved
 * object_id, the first time a VIEW or RETIRE names it. Returns NULL when
 * no such request is live, or after failing the run when the index is
 * reused before its retirement.
 */
sim_grant *sim_runtime_grant(sim_world *w, pbx_ipc_id grant,
                             uint64_t object_id);
/** sim_ttyd_evidence records exact ALLOW, APPROVE and VIEW acks and
 * PROMPT answers the core took. */
void sim_ttyd_evidence(sim_world *w, const sim_flight *fl);
/** sim_procd_install installs the object copy and returns a handle. */
bool sim_procd_install(sim_world *w, const pbx_ipc_frame *f,
                       const pbx_core_call *c, sim_reply *r);

#endif /* PBX_SIM_PEERS_H */
