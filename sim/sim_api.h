/*
 * sim_api.h: the functions of the simulator's modules, one section per
 * source file. Included by sim/sim.h after the world's types (sim.h holds
 * what the simulation is, this file what each module does to it); include
 * sim/sim.h, never this header alone.
 */
#ifndef PBX_SIM_API_H
#define PBX_SIM_API_H

#ifndef PBX_SIM_H
#error "include sim/sim.h, which includes sim/sim_api.h after its types"
#endif

/* ---- sim_rng.c ---------------------------------------------------------- */

/** sim_rng_seed seeds w's PRNG from seed (splitmix64 expansion). */
void sim_rng_seed(sim_world *w, uint64_t seed);
/**
 * sim_rng_feed makes the next len draws (of every sim_rand, sim_below and
 * sim_chance, in any world) come from bytes, one byte per draw, before
 * the seeded PRNG takes over again: a fuzzer's input chooses every
 * decision of a run (fuzz/fuzz_core_machine.c). bytes must stay valid
 * until the feed is used up or replaced; len 0 turns the feed off.
 */
void sim_rng_feed(const uint8_t *bytes, size_t len);
/** sim_rng_feed_left returns how many fed bytes are still to be drawn. */
size_t sim_rng_feed_left(void);
/** sim_rand returns the next 64 random bits. */
uint64_t sim_rand(sim_world *w);
/** sim_below returns a uniform value in [0, n) (n > 0). */
uint32_t sim_below(sim_world *w, uint32_t n);
/** sim_chance returns true with probability per_1024 / 1024. */
bool sim_chance(sim_world *w, uint32_t per_1024);
/** sim_fault_fires rolls fault f at its seed rate (never once healed). */
bool sim_fault_fires(sim_world *w, sim_fault f);
/** sim_side_below draws from the side stream (w->side): uniform in
 * [0, n), n > 0. */
uint32_t sim_side_below(sim_world *w, uint32_t n);
/** sim_event_add records one event into the hash and the ring. */
void sim_event_add(sim_world *w, uint32_t code, uint64_t a0, uint64_t a1,
                   uint64_t a2, uint64_t a3);
/** sim_fail records the first violation (printf-style message). */
void sim_fail(sim_world *w, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/** sim_events_print writes the last events of w to out. */
void sim_events_print(const sim_world *w, FILE *out);
/** sim_fault_name returns the static name of fault f. */
const char *sim_fault_name(sim_fault f);

/* ---- sim_kernel.c ------------------------------------------------------- */

/** sim_kernel_boot fills the startup inventory and empties the rest. */
void sim_kernel_boot(sim_world *w);
/** sim_cap_mint returns a fresh capability of role for owner. */
sim_cap sim_cap_mint(sim_world *w, uint32_t role, uint32_t owner,
                     uint32_t owner_gen, uint64_t object);
/** sim_slot_put places cap into a free transient slot; SIM_NIL if full. */
uint32_t sim_slot_put(sim_world *w, const sim_cap *cap, uint32_t want);
/** sim_slot_take removes the capability in slot (moved out). */
void sim_slot_take(sim_world *w, uint32_t slot);
/** sim_count_held counts held transient caps of role owned by owner. */
uint32_t sim_count_held(const sim_world *w, uint32_t role, uint32_t owner,
                        uint32_t owner_gen);
/** sim_count_owned counts held transient caps of role still owned by
 * owner: those that arrived with a refused late reply (or a COMMIT
 * refused after the decision was published) belong to nobody. */
uint32_t sim_count_owned(const sim_world *w, uint32_t role, uint32_t owner,
                         uint32_t owner_gen);
/** sim_cap_destroy destroys a capability that never reached powerboxd's
 * CSpace (a lost reply's receipt), as the kernel would: a revocation
 * handle's install is revoked. */
void sim_cap_destroy(sim_world *w, const sim_cap *c);
/** sim_kernel_ops returns the effect table the core is driven with. */
const pbx_core_ops *sim_kernel_ops(void);
/** sim_kernel_identity reports the identity vfsd names a held scope
 * capability by (0 for anything else): the core's scope binding. */
uint64_t sim_kernel_identity(void *user, uint32_t slot);

/* ---- sim_peers.c -------------------------------------------------------- */

/** sim_peer_send carries one core peer call to its peer, which acts and
 * puts its reply in flight (the ops send effect; nth: the Nth-effect
 * fault fails it). */
pbx_core_io sim_peer_send(sim_world *w, const pbx_core_call *call, bool nth);
/** sim_launchd_wake takes one wake datagram (the ops wake effect). */
pbx_core_io sim_launchd_wake(sim_world *w, const uint8_t *frame, size_t len);

/* ---- sim_client.c ------------------------------------------------------- */

/** sim_client_act performs one random public operation. */
void sim_client_act(sim_world *w);
/** sim_client_quiesce drives every open request and grant to its end. */
void sim_client_quiesce(sim_world *w);
/**
 * sim_public places caps in powerboxd's CSpace (the first in want when that
 * is a reservation), hands the frame to the core and checks the cleanup
 * precedence of the reply. Returns the reply (static storage, valid until
 * the next call) or NULL after a fail-stop.
 */
const pbx_core_out *sim_public(sim_world *w, uint32_t badge,
                               const uint8_t *frame, size_t len,
                               const sim_cap *caps, size_t ncaps,
                               uint32_t want);

/* ---- sim_check.c -------------------------------------------------------- */

/** sim_check_step checks every per-step invariant. */
void sim_check_step(sim_world *w);
/** sim_check_quiescent checks the invariants of an idle, healed world. */
void sim_check_quiescent(sim_world *w);
/** sim_check_terminal checks request i as its decision becomes visible. */
void sim_check_terminal(sim_world *w, uint32_t i, const char *where);
/** sim_check_outcome checks the evidence behind request i's outcome. */
void sim_check_outcome(sim_world *w, uint32_t i, const pbx_ipc_decision *d);
/** sim_alias_owed reports whether request i (generation gen) holds a
 * published, undelivered runtime-reply approval: its alias stays until
 * delivered (vfsd's RETIRE revokes it) even when its grant ends. */
bool sim_alias_owed(const sim_world *w, uint32_t i, uint32_t gen);
/** sim_check_cleanup checks that every grant in cleanup retires within
 * the bound once its routes answer (once per step). */
void sim_check_cleanup(sim_world *w);
/** sim_check_ledger checks the capability ledger. */
void sim_check_ledger(sim_world *w);
/**
 * sim_coverage_note infers the transitions since the last call from the
 * core's record states (w->cause names the public event that ends a live
 * grant).
 */
void sim_coverage_note(sim_world *w);

/**
 * sim_after_core notes transitions and runs the per-step checks after any
 * call into the core.
 */
void sim_after_core(sim_world *w);

/* ---- sim_flight.c ------------------------------------------------------- */

/** sim_flight_add puts a reply in flight on route (and scope via_slot);
 * false when the kernel's queues are full (nothing was queued). */
bool sim_flight_add(sim_world *w, const sim_flight *f);
/** sim_flights_deliver delivers due replies in seeded random order (all
 * due ones when all is set); false after a fail-stop. */
bool sim_flights_deliver(sim_world *w, bool all);
/** sim_routes_fault starts and ends silent and hung-up stretches; false
 * after a fail-stop. */
bool sim_routes_fault(sim_world *w);
/** sim_clock advances the seeded clock and tells the core; false after a
 * fail-stop. */
bool sim_clock(sim_world *w);
/** sim_broker_fault loses launchd's broker connection now and then
 * (pbx_core_on_broker_lost, sim/sim_broker.c) and checks what the core
 * did; false after a violation or a fail-stop. */
bool sim_broker_fault(sim_world *w);
/** sim_heal ends every route fault and brings late replies near. */
void sim_heal(sim_world *w);
/** sim_route_gone reports whether peer route r is hung up now. */
bool sim_route_gone(const sim_world *w, uint32_t r);
/** sim_disturb marks route r as possibly slow to answer until step. */
void sim_disturb(sim_world *w, uint32_t r, uint64_t until);

/* ---- sim_calls.c -------------------------------------------------------- */

/** sim_call_class returns the deadline class of op sent on route. */
uint32_t sim_call_class(uint32_t route, uint32_t op);
/** sim_call_sent records a call the peer received (seq from the frame). */
void sim_call_sent(sim_world *w, const pbx_core_call *c, uint32_t route,
                   const pbx_ipc_frame *f);
/** sim_call_match returns the open call a reply would answer (judged
 * from the bytes as delivered), or SIM_NIL. */
uint32_t sim_call_match(const sim_world *w, const sim_flight *f);
/** sim_call_answered ends call k after the core accepted its reply f
 * and records whether f was that call's exact reply. */
void sim_call_answered(sim_world *w, uint32_t k, const sim_flight *f);
/** sim_calls_expire ends every open call whose deadline is at or before
 * the clock (after the core heard it); returns how many. */
uint32_t sim_calls_expire(sim_world *w);
/** sim_routes_before notes which grant records are LIVE (live[g]). */
void sim_routes_before(sim_world *w, uint8_t *live);
/** sim_routes_lost checks route r's loss ended exactly the grants it
 * must, with the loss's reason (live: sim_routes_before's note). */
void sim_routes_lost(sim_world *w, uint32_t r, const uint8_t *live);
/** sim_routes_before_reqs notes which request records hold (or are
 * about to be told) an object vfsd minted: resolved and in flight, or
 * with RESOLVE outstanding (held[i]). */
void sim_routes_before_reqs(sim_world *w, uint8_t *held);
/** sim_routes_lost_reqs checks a lost vfsd (r) ended every request noted
 * in held DENIED with reason PROVIDER_LOST, so none is ever approved with
 * a dead incarnation's object (issue 20, item 5). */
void sim_routes_lost_reqs(sim_world *w, uint32_t r, const uint8_t *held);
/** sim_routes_reasons checks every grant that left LIVE says why. */
void sim_routes_reasons(sim_world *w);
/** sim_routes_view checks, once a returned ttyd is owed no row, that it
 * shows every live grant whose row went out. */
void sim_routes_view(sim_world *w);

/** sim_calls_route_down ends every open call of a class on route r. */
void sim_calls_route_down(sim_world *w, uint32_t r);
/** sim_calls_check fills, follows and checks every call against the
 * core's outstanding-call records and their owners. */
void sim_calls_check(sim_world *w);
/** sim_calls_open counts open calls. */
uint32_t sim_calls_open(const sim_world *w);

/* ---- sim_inspect.c ------------------------------------------------------ */

/** sim_core_req returns the core's request record i (read only; the
 * record types and the carved pools are the core's public layout). */
static inline const pbx_core_request *sim_core_req(const sim_world *w,
                                                   uint32_t i)
{
    const pbx_core_pool_state *p = &w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS];
    return (const pbx_core_request *)(const void *)(w->core->arena +
                                                    p->offset_bytes +
                                                    (size_t)i *
                                                        p->record_size_bytes);
}

/** sim_core_grant returns the core's grant record g (read only). */
static inline const pbx_core_grant *sim_core_grant(const sim_world *w,
                                                   uint32_t g)
{
    const pbx_core_pool_state *p = &w->core->pools[PBX_BOOTSTRAP_POOL_GRANTS];
    return (
        const pbx_core_grant *)(const void *)(w->core->arena + p->offset_bytes +
                                              (size_t)g * p->record_size_bytes);
}
/** sim_core_tslot_held reports whether core transient-slot record t holds
 * a capability, and (owner non-NULL) the request it is owned by. */
bool sim_core_tslot_held(const sim_world *w, uint32_t t, uint32_t *slot,
                         uint32_t *owner);
/** sim_core_bucket returns the correlation bucket of a job in pool. */
uint32_t sim_core_bucket(const sim_world *w, pbx_bootstrap_pool pool,
                         uint64_t job_id, uint32_t job_gen);
/** sim_core_call reads the core's call record o into *out. */
void sim_core_call(const sim_world *w, uint32_t o, sim_call_view *out);
/** sim_core_calls_view reads every call record into out (SIM_CALL_MAX
 * entries; only live ones in full) and returns the pool capacity. */
uint32_t sim_core_calls_view(const sim_world *w, sim_call_view *out);
/** sim_core_public_orphans counts the public orphan records. */
uint32_t sim_core_public_orphans(const sim_world *w);
/** sim_core_call_index returns the call record a seq names, or SIM_NIL. */
uint32_t sim_core_call_index(const sim_world *w, uint32_t seq);
/** sim_core_req_call returns request i's outstanding call or SIM_NIL. */
uint32_t sim_core_req_call(const sim_world *w, uint32_t i);
/** sim_core_grant_calls returns grant g's REMOVE and RETIRE calls. */
void sim_core_grant_calls(const sim_world *w, uint32_t g, uint32_t *remove,
                          uint32_t *retire);
/** sim_core_records_hash hashes every record a peer reply could change
 * except the transient slots a refused reply's receipts may take. */
uint64_t sim_core_records_hash(const sim_world *w);
/** sim_core_prompt_retries returns the RETRY count of request i. */
uint32_t sim_core_prompt_retries(const sim_world *w, uint32_t i);

/* ---- sim_world.c -------------------------------------------------------- */

/** sim_totals sums what a campaign's seeds saw of the split-phase calls. */
typedef struct sim_totals {
    /** Replies delivered, and those the core refused as matching no
     * open call (late, duplicated, misdirected). */
    uint64_t replies, refused;
    /** Calls ended by their deadline or a lost route. */
    uint64_t timeouts;
    /** Times a request whose policy asked for a prompt waited for a prompt
     * record (the core's prompt_waits, summed). */
    uint64_t prompt_waits;
    /** The seed whose grant cleanup came nearest its bound: the steps it
     * took after its routes answered, and that seed's bound. */
    uint64_t cleanup_age, cleanup_bound;
    /** Seeds that lost launchd's broker, and seeds whose alias derivation
     * met BUSY at least once. */
    uint64_t broker_seeds, alias_busy_seeds;
} sim_totals;

/** sim_run runs one seed, adding to *totals; returns 0 on success, 1 on
 * a violation. */
int sim_run(uint64_t seed, const sim_opts *opts, uint64_t *coverage,
            uint64_t *hash_out, sim_totals *totals);

#endif /* PBX_SIM_API_H */
