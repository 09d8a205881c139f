/*
 * fuzz_core_machine.c: libFuzzer harness that runs the core as a state
 * machine inside the simulator's world, with the input choosing every
 * event.
 *
 * The simulator (sim/, linked, not copied) already holds everything
 * around a live core: the kernel's slot table behind the core's ops
 * table, the peers that answer its calls, the replies in flight, the
 * clock, the clients and the checker. Each of its decisions is a draw
 * (sim_below, sim_chance); this harness hands those draws the input's
 * bytes, one byte per draw (sim_rng_feed), so the input is decoded as a
 * sequence of events by the very code that performs them:
 *
 *  - byte 0 is the seed, whose residue picks the fault mix's lean;
 *  - the next draws pick the fault rates, the pool capacities, the call
 *    window and the deadlines, then boot the core from that PBX1;
 *  - then, step after step: how far the clock moves (calls past their
 *    deadline end), which route goes silent, hangs up or comes back,
 *    whether a tick or a readiness notice comes, which reply in flight
 *    is delivered next and in what order (any outstanding call, late,
 *    duplicated or lost), and either a core step or one public operation
 *    (BEGIN, SELECTOR chunks, COMMIT with its receipt, DECISION, CANCEL,
 *    CONSUME, EXPIRE, well formed or not) of one of the clients;
 *  - each peer answer is built from the call the core sent (so most
 *    inputs advance the lifecycle), and a fault draw corrupts one echoed
 *    field (identity, generation, seq, operation, class, digest byte),
 *    adds or drops a receipt, flips or truncates the frame, or replays an
 *    older reply;
 *  - when the input runs out the seeded PRNG takes over, the world heals
 *    and is driven to quiescence.
 *
 * After every event the simulator's checker runs (sim_after_core:
 * capability conservation over the ledger of every receipt, the request
 * and grant shadows against the core's records, every outstanding call
 * against what went on the wire, and the numbered invariants of
 * docs/TESTING.md), and at quiescence the quiescent invariants. A
 * violation makes sim_run return 1 (it prints the seed, the step, the
 * message and the last events) and the harness aborts, so libFuzzer
 * saves the input; `pbx-sim` cannot replay it (its draws come from a
 * PRNG), the harness binary can: build/fuzz/fuzz_core_machine FILE.
 */
#include "sim/sim.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Steps of the faulty phase per input byte: a step draws a handful of
 * bytes, so the input runs out before the steps do. */
#define FUZZ_CORE_STEPS_PER_BYTE 1U
/* Bounds the faulty phase however long the input. */
#define FUZZ_CORE_STEPS_MAX 512U

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static uint64_t coverage[SIM_ROW_MAX];
    sim_opts opts = {0};
    sim_totals totals = {0};
    uint64_t hash = 0;
    if (size < 2U) {
        return 0;
    }
    size_t steps = (size - 1U) * FUZZ_CORE_STEPS_PER_BYTE;
    opts.steps = steps < FUZZ_CORE_STEPS_MAX ? steps : FUZZ_CORE_STEPS_MAX;
    opts.faults = (1U << SIM_F_COUNT) - 1U;
    sim_rng_feed(data + 1, size - 1U);
    int failed = sim_run(data[0], &opts, coverage, &hash, &totals);
    sim_rng_feed(NULL, 0U);
    if (failed != 0) {
        /* sim_run printed the violation and the last events: make sure
         * they reach the log before the abort. */
        (void)fflush(stdout);
        abort();
    }
    return 0;
}
