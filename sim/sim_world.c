/*
 * sim_world.c: one seed from boot to quiescence. The seed picks the pool
 * capacities (small, so pools fill), the call window and deadlines, its
 * own fault mix, and whether boot first meets a corrupt PBX1; then the
 * faulty phase interleaves, step by step, the clock (calls past their
 * deadline end), route faults, ticks and route readiness, deliveries of
 * due replies in seeded random order, core steps and client operations;
 * then faults heal and the world runs until idle, where the quiescence
 * invariants are checked.
 */
#include "sim/sim.h"

#include <stdlib.h>
#include <string.h>

/* Rounds of the healed drive to quiescence before it counts as stuck. */
#define SIM_QUIESCE_ROUNDS 3000U
/* The runtime ticks at least this often (steps). */
#define SIM_TICK_STEPS 32U
/* Mean milliseconds of simulated time per step. */
#define SIM_MS_STEP 10U

void sim_after_core(sim_world *w)
{
    if (w->core->ready == 0U) {
        return; /* fail-stop: the caller judges whether it was earned */
    }
    sim_coverage_note(w);
    sim_check_step(w);
}

/* The CI rotation of fault mixes: the seed's residue picks one, without
 * a draw. Half of the seeds keep the random mix (each allowed fault on at
 * one of four rates); the rest each lean on the paths a random mix seldom
 * reaches together (docs/TESTING.md, "Branch coverage"). */
typedef enum sim_mix {
    SIM_MIX_RANDOM = 0, /* every allowed fault on or off at random */
    SIM_MIX_CLEANUP,    /* deletions fail (transient, once permanent) */
    SIM_MIX_WINDOW,     /* slow peers hold calls: windows and pool fill */
    SIM_MIX_ENDINGS,    /* cancel, expiry and failed delivery mid-flight */
    SIM_MIX_BACKLOG     /* routes full: wakes, sends and aliases wait */
} sim_mix;

/* The mix of seed s: residues 1, 3, 5 and 7 of eight lean, the even
 * ones stay random. */
static sim_mix sim_mix_of(uint64_t s)
{
    static const sim_mix mixes[8] = {
        SIM_MIX_RANDOM, SIM_MIX_CLEANUP, SIM_MIX_RANDOM, SIM_MIX_WINDOW,
        SIM_MIX_RANDOM, SIM_MIX_ENDINGS, SIM_MIX_RANDOM, SIM_MIX_BACKLOG};
    return mixes[s % 8U];
}

/* Sets fault f to rate (1/1024 units) when the run allows it. */
static void sim_lean(sim_world *w, sim_fault f, uint32_t rate)
{
    if ((w->opts->faults & (1U << f)) != 0U) {
        w->rate[f] = rate;
    }
}

/* Leans the random mix the seed's way. */
static void sim_pick_lean(sim_world *w)
{
    switch (sim_mix_of(w->seed)) {
    case SIM_MIX_CLEANUP:
        /* Every deletion site meets transient failures and retries; one
         * permanent rejection ends the run at a random site. */
        sim_lean(w, SIM_F_DEL_TRANS, 160U);
        sim_lean(w, SIM_F_DEL_PERM, 2U + sim_below(w, 6U));
        sim_lean(w, SIM_F_SURPLUS, 160U);
        sim_lean(w, SIM_F_RESERVE, 64U);
        break;
    case SIM_MIX_WINDOW:
        /* Calls stay outstanding: nothing ends them early. */
        sim_lean(w, SIM_F_FAILED, 0U);
        sim_lean(w, SIM_F_DROP, 0U);
        sim_lean(w, SIM_F_HANGUP, 0U);
        sim_lean(w, SIM_F_STALL, 0U);
        sim_lean(w, SIM_F_SILENT, 16U);
        break;
    case SIM_MIX_ENDINGS:
        sim_lean(w, SIM_F_CANCEL, 600U);
        sim_lean(w, SIM_F_EXPIRE, 600U);
        sim_lean(w, SIM_F_DELIVERY, 400U);
        break;
    case SIM_MIX_BACKLOG:
        sim_lean(w, SIM_F_NOTIFY, 160U);
        sim_lean(w, SIM_F_WAKE_FAIL, 160U);
        sim_lean(w, SIM_F_BUSY, 160U);
        break;
    default:
        break;
    }
}

/* Picks this seed's fault mix from the allowed set. */
static void sim_pick_faults(sim_world *w)
{
    static const uint32_t rates[] = {4U, 16U, 64U, 160U};
    for (uint32_t f = 0; f < (uint32_t)SIM_F_BROKER; f++) {
        bool on = (w->opts->faults & (1U << f)) != 0U && sim_chance(w, 600U);
        w->rate[f] = on ? rates[sim_below(w, 4U)] : 0U;
    }
    /* Faults added later draw on the side stream, so that every seed
     * keeps the main stream (and its replay) it had before them. */
    for (uint32_t f = (uint32_t)SIM_F_BROKER; f < (uint32_t)SIM_F_COUNT; f++) {
        bool on = (w->opts->faults & (1U << f)) != 0U &&
                  sim_side_below(w, 1024U) < 600U;
        w->rate[f] = on ? rates[sim_side_below(w, 4U)] : 0U;
    }
    /* A permanent deletion rejection ends a run early: keep it rare. A
     * refused wake is retried on a tick (no fail-stop): any rate. */
    w->rate[SIM_F_DEL_PERM] =
        w->rate[SIM_F_DEL_PERM] != 0U && sim_chance(w, 200U) ? 1U : 0U;
    sim_pick_lean(w);
    w->nth = w->rate[SIM_F_NTH] != 0U
                 ? 1U + sim_below(w, (uint32_t)(w->opts->steps * 2U + 1U))
                 : 0U;
}

/* Picks the call window, the calls pool (one window per call route, so
 * the requests' own calls never starve the grants' REMOVE and RETIRE of
 * records), each class's deadline (short, medium or long against the
 * delivery delays) and the ordinary delivery delay. */
static void sim_geometry_calls(sim_world *w, pbx_bootstrap_geometry *g,
                               uint32_t req)
{
    static const uint32_t bases[] = {40U, 120U, 400U};
    static const uint32_t delays[] = {0U, 3U, 10U, 30U};
    g->call_window = 1U + sim_below(w, req);
    g->capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * req;
    w->ms_step = SIM_MS_STEP;
    w->max_delay = delays[sim_below(w, 4U)];
    if (sim_mix_of(w->seed) == SIM_MIX_WINDOW) {
        /* One call per class, or every class at its full window with
         * the smallest calls pool PBX1 admits (three windows for five
         * classes): the pool runs out before the windows do. */
        g->call_window = (w->seed / 8U) % 2U == 0U ? 1U : req;
        w->max_delay = 30U;
    }
    uint32_t base = bases[sim_below(w, 3U)];
    w->deadline_steps = 0U;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        uint32_t steps = base + sim_below(w, base);
        g->time_ms[t] = steps * w->ms_step;
        w->time_ms[t] = g->time_ms[t];
        w->deadline_steps =
            steps > w->deadline_steps ? steps : w->deadline_steps;
    }
    /* The retirement bound (sim_check_cleanup). Once both its routes
     * answer and no deletion fails, a grant needs two lane services
     * (revoke; then REMOVE and RETIRE), two replies of at most max_delay
     * steps, and between retries a tick or a readiness notice (at most
     * SIM_TICK_STEPS). Its class window may be held by every other
     * request and grant, each call of which ends within one delivery
     * delay and is followed by a lane service: a core step comes on half
     * of the steps and serves the five lanes in turn, so about ten steps
     * per record queued ahead. Twice that per record, plus four ticks
     * and a margin, is the bound; the campaign's worst case stays far
     * below it (the verbose summary prints both). */
    uint32_t records = req + g->capacity[PBX_BOOTSTRAP_POOL_GRANTS] + 2U;
    w->retire_bound = (uint64_t)records * (w->max_delay + 20U) +
                      (uint64_t)(4U * SIM_TICK_STEPS) + 200U;
}

/* Fills a small geometry for this seed. */
static void sim_geometry(sim_world *w, pbx_bootstrap_geometry *g)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = 4096U;
    pbx_core_pool_layouts(g->layout);
    uint32_t req = 1U + sim_below(w, SIM_REQ_MAX);
    /* The calls pool and the PBX1 v2 call fields take no draws, so a seed
     * picks the same pools it picked before they existed. */
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_CALLS; i++) {
        g->capacity[i] = 1U + sim_below(w, req + 1U);
    }
    g->capacity[PBX_BOOTSTRAP_POOL_REQUESTS] = req;
    g->capacity[PBX_BOOTSTRAP_POOL_GRANTS] = 1U + sim_below(w, SIM_GRANT_MAX);
    g->capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        PBX_CORE_TSLOTS_MIN + sim_below(w, 3U * req + 8U);
    g->capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        PBX_CORE_SELECTOR_CHUNK_BYTES * (2U + sim_below(w, 80U));
    sim_geometry_calls(w, g, req);
    (void)pbx_bootstrap_pages_compute(g, &g->arena_page_count);
}

/* Parses, derives and initialises from rec; true when the core is ready. */
static bool sim_boot_from(sim_world *w, const uint8_t *rec, int arena_delta)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_capabi_layout slots;
    pbx_core_pool_layouts(want);
    memset(w->core, 0, sizeof(*w->core));
    if (pbx_bootstrap_parse(rec, PBX_BOOTSTRAP_RECORD_BYTES, &g) != PBX_OK ||
        pbx_bootstrap_layout_derive(&g, want, &w->layout) != PBX_OK ||
        pbx_capabi_layout_init(&slots, SIM_TFIRST, SIM_TCOUNT) != PBX_OK) {
        return false;
    }
    free(w->arena);
    w->arena_len = w->layout.arena_bytes;
    w->arena = aligned_alloc(4096U, w->arena_len);
    if (w->arena == NULL) {
        return false;
    }
    size_t len = (size_t)((ptrdiff_t)w->arena_len + arena_delta);
    if (pbx_core_init(w->core, &w->layout, w->arena, len, &slots,
                      sim_kernel_ops(), w) != PBX_OK) {
        return false;
    }
    pbx_core_set_identity(w->core, sim_kernel_identity);
    return true;
}

/* Corrupts a good PBX1 record one of four ways; returns the arena delta. */
static int sim_corrupt(sim_world *w, pbx_bootstrap_geometry *g, uint8_t *rec)
{
    switch (sim_below(w, 4U)) {
    case 0: {
        uint32_t bit = sim_below(w, PBX_BOOTSTRAP_RECORD_BYTES * 8U);
        rec[bit / 8U] ^= (uint8_t)(1U << (bit % 8U));
        return 0;
    }
    case 1:
        g->layout[sim_below(w, PBX_BOOTSTRAP_POOL_COUNT)].record_size_bytes +=
            8U;
        break;
    case 2:
        g->arena_page_count += 1U;
        break;
    default:
        return -4096;
    }
    (void)pbx_bootstrap_encode(g, rec, PBX_BOOTSTRAP_RECORD_BYTES);
    return 0;
}

/* Boots the core; a corrupt PBX1 must be refused before readiness. */
static bool sim_boot(sim_world *w)
{
    pbx_bootstrap_geometry g;
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    sim_geometry(w, &g);
    if (pbx_bootstrap_encode(&g, rec, sizeof(rec)) != PBX_OK) {
        sim_fail(w, "sim: PBX1 encode failed");
        return false;
    }
    sim_kernel_boot(w);
    if (sim_fault_fires(w, SIM_F_PBX1)) {
        uint8_t bad[PBX_BOOTSTRAP_RECORD_BYTES];
        pbx_bootstrap_geometry bg = g;
        memcpy(bad, rec, sizeof(bad));
        int delta = sim_corrupt(w, &bg, bad);
        if (sim_boot_from(w, bad, delta) || w->core->ready != 0U) {
            sim_fail(w, "a corrupt PBX1 reached readiness");
            return false;
        }
        pbx_core_out out;
        if (pbx_core_on_public(w->core, 0x100U, rec, 8U, NULL, 0U, &out) !=
            PBX_E_CORE_NOT_READY) {
            sim_fail(w, "a refused core answered a public frame");
            return false;
        }
    }
    if (!sim_boot_from(w, rec, 0)) {
        sim_fail(w, "boot from a good PBX1 failed");
        return false;
    }
    sim_event_add(w, SIM_EV_BOOT, g.capacity[0], g.capacity[2], g.capacity[7],
                  g.capacity[1]);
    return true;
}

/* The runtime learns which parked routes became writable, and now and
 * then (at least every SIM_TICK_STEPS, every round while quiescing) that
 * time passed: the core's deferred retries go back to their lanes, once
 * per tick. A hung-up route is never reported writable. */
static void sim_tick(sim_world *w, bool all)
{
    if (all || w->step - w->last_tick >= SIM_TICK_STEPS || sim_chance(w, 64U)) {
        w->last_tick = w->step;
        sim_event_add(w, SIM_EV_TICK, 0, 0, 0, 0);
        pbx_core_on_tick(w->core);
    }
    for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
        sim_route_state *rt = &w->routes[r];
        if (rt->dirty != 0U && w->step >= rt->busy_until &&
            !sim_route_gone(w, r) && (all || sim_chance(w, 400U))) {
            rt->dirty = 0U;
            sim_event_add(w, SIM_EV_READY, r, 0, 0, 0);
            pbx_core_on_route_ready(w->core, (pbx_core_route)r);
        }
    }
}

/* One core step; false after a fail-stop. */
static bool sim_core_step(sim_world *w, bool *progressed)
{
    w->cause = 0U;
    pbx_err err = pbx_core_step(w->core, progressed);
    uint32_t lane = (w->core->lane + PBX_CORE_LANES - 1U) % PBX_CORE_LANES;
    sim_event_add(w, SIM_EV_STEP, *progressed ? 1U : 0U, lane, err, 0);
    sim_after_core(w);
    if (err != PBX_OK) {
        if (w->permanent == 0U) {
            sim_fail(w, "core fail-stop %s (exit %d) without a permanent fault",
                     pbx_err_name(err), (int)pbx_core_exit_status(w->core));
        } else if (w->wake_rejected != 0U &&
                   (err != PBX_E_CORE_NOTIFY_REJECTED ||
                    pbx_core_exit_status(w->core) != PBX_CORE_EXIT_NOTIFY)) {
            sim_fail(w,
                     "a rejected wake stopped the core with %s (exit %d), "
                     "not the notification status",
                     pbx_err_name(err), (int)pbx_core_exit_status(w->core));
        }
        return false;
    }
    return true;
}

/* Whether the world is idle: no live request, grant or held capability. */
static bool sim_idle(const sim_world *w)
{
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        if (w->reqs[i].live != 0U) {
            return false;
        }
    }
    for (uint32_t g = 0; g < SIM_GRANT_MAX; g++) {
        uint32_t st = w->grants[g].state;
        if (st != (uint32_t)SIM_G_NONE && st != (uint32_t)SIM_G_RETIRED) {
            return false;
        }
    }
    return w->occupied == 0U && w->nflights == 0U &&
           pbx_core_calls_outstanding(w->core) == 0U;
}

/* The world's part of one step before the core or a client acts: time,
 * route faults, ticks and readiness, deliveries. False when the run
 * ended. */
static bool sim_world_turn(sim_world *w, bool all)
{
    if (!sim_clock(w) || !sim_routes_fault(w) || !sim_broker_fault(w)) {
        return false;
    }
    sim_tick(w, all);
    if (!sim_flights_deliver(w, all)) {
        return false;
    }
    sim_check_cleanup(w);
    return w->violation[0] == '\0' && w->core->ready != 0U;
}

/* The faulty phase; false when the run ended (violation or fail-stop). */
static bool sim_faulty(sim_world *w)
{
    for (w->step = 1; w->step <= w->opts->steps; w->step++) {
        if (!sim_world_turn(w, false)) {
            return false;
        }
        uint32_t roll = sim_below(w, 100U);
        bool progressed = false;
        if (roll < 50U) {
            if (!sim_core_step(w, &progressed)) {
                return false;
            }
        } else {
            sim_client_act(w);
        }
        if (w->violation[0] != '\0' || w->core->ready == 0U) {
            return false;
        }
    }
    return true;
}

/* Heals every fault and drives the world until idle. */
static void sim_quiesce(sim_world *w)
{
    w->healed = 1U;
    sim_event_add(w, SIM_EV_HEAL, 0, 0, 0, 0);
    sim_heal(w);
    for (uint32_t r = 0; r < (uint32_t)PBX_CORE_ROUTE_COUNT; r++) {
        w->routes[r].busy_until = 0U;
        w->routes[r].dirty = 1U;
    }
    for (uint32_t round = 0; round < SIM_QUIESCE_ROUNDS; round++) {
        w->step++;
        if (!sim_world_turn(w, true)) {
            return;
        }
        sim_client_quiesce(w);
        bool progressed = true;
        for (uint32_t n = 0; n < 256U && progressed; n++) {
            if (!sim_core_step(w, &progressed)) {
                return;
            }
        }
        if (w->violation[0] != '\0' || sim_idle(w)) {
            break;
        }
    }
    if (w->violation[0] == '\0') {
        sim_check_quiescent(w);
    }
}

/* Adds w's counters to the campaign totals. */
static void sim_add_totals(const sim_world *w, sim_totals *t)
{
    t->replies += w->stat_replies;
    t->refused += w->stat_late;
    t->timeouts += w->stat_timeouts;
    t->prompt_waits += w->core->prompt_waits;
    t->broker_seeds += w->stat_broker_lost != 0U ? 1U : 0U;
    t->alias_busy_seeds += w->stat_alias_busy != 0U ? 1U : 0U;
    if (w->retire_bound != 0U && w->stat_retire_max * t->cleanup_bound >=
                                     t->cleanup_age * w->retire_bound) {
        t->cleanup_age = w->stat_retire_max;
        t->cleanup_bound = w->retire_bound;
    }
}

int sim_run(uint64_t seed, const sim_opts *opts, uint64_t *coverage,
            uint64_t *hash_out, sim_totals *totals)
{
    static sim_world world;
    static pbx_core_ctx core;
    sim_world *w = &world;
    free(w->arena);
    memset(w, 0, sizeof(*w));
    w->opts = opts;
    w->seed = seed;
    w->core = &core;
    w->coverage = coverage;
    w->hash = 0xCBF29CE484222325ULL;
    sim_rng_seed(w, seed);
    sim_pick_faults(w);
    if (sim_boot(w) && sim_faulty(w)) {
        sim_quiesce(w);
    }
    *hash_out = w->hash;
    sim_add_totals(w, totals);
    /* Exact coverage: the rows the core itself counted in this run. */
    for (size_t r = 0; r < (size_t)PBX_CORE_FSM_ROWS && r < SIM_ROW_MAX; r++) {
        coverage[r] += core.fsm_hits[r];
    }
    if (w->violation[0] == '\0') {
        if (opts->verbose != 0U) {
            (void)printf(
                "seed %llu ok: %llu begun, %llu approved, %llu "
                "denied, %llu cancelled, %llu not-found, %llu direct "
                "BEGINs refused, %llu sends held, %llu replies (%llu "
                "refused), %llu timeouts, cleanup %llu/%llu steps%s\n",
                (unsigned long long)seed, (unsigned long long)w->stat_begun,
                (unsigned long long)w->stat_approved,
                (unsigned long long)w->stat_denied,
                (unsigned long long)w->stat_cancelled,
                (unsigned long long)w->stat_notfound,
                (unsigned long long)w->stat_refused_direct,
                (unsigned long long)w->stat_held,
                (unsigned long long)w->stat_replies,
                (unsigned long long)w->stat_late,
                (unsigned long long)w->stat_timeouts,
                (unsigned long long)w->stat_retire_max,
                (unsigned long long)w->retire_bound,
                w->permanent != 0U ? " (permanent fault: fail-stop)" : "");
        }
        return 0;
    }
    (void)printf("FAIL seed %llu step %llu: %s\n", (unsigned long long)seed,
                 (unsigned long long)w->step, w->violation);
    (void)printf("  faults:");
    for (uint32_t f = 0; f < (uint32_t)SIM_F_COUNT; f++) {
        if (w->rate[f] != 0U) {
            (void)printf(" %s", sim_fault_name((sim_fault)f));
        }
    }
    (void)printf("\n  last events:\n");
    sim_events_print(w, stdout);
    return 1;
}
