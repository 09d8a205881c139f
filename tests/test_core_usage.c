/*
 * test_core_usage.c: pbx_core_inspect_usage, the pool counts of
 * powerboxd's USAGE report, follows one request's records through BEGIN,
 * its approval, its delivery and its grant's end, and returns to zero in
 * every pool.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* The records in use in pool. */
static uint32_t usage_used(const th_h *h, pbx_bootstrap_pool pool)
{
    uint32_t used = 0xFFFFFFFFU;
    uint32_t cap = 0;
    pbx_core_inspect_usage(&h->core, pool, &used, &cap);
    PBX_CHECK(used <= cap);
    return used;
}

/* Whether every pool is empty. */
static bool usage_all_free(const th_h *h)
{
    for (uint32_t p = 0; p < (uint32_t)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        if (usage_used(h, (pbx_bootstrap_pool)p) != 0U) {
            return false;
        }
    }
    return true;
}

PBX_TEST(core_usage_capacities_are_the_pools_and_start_empty)
{
    th_h *h = th_new(4);
    for (uint32_t p = 0; p < (uint32_t)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        uint32_t used = 7U;
        uint32_t cap = 0U;
        pbx_core_inspect_usage(&h->core, (pbx_bootstrap_pool)p, &used, &cap);
        PBX_CHECK_EQ(used, 0U);
        if (p == (uint32_t)PBX_BOOTSTRAP_POOL_SELECTOR_BYTES) {
            PBX_CHECK_EQ(cap, h->core.chunk_count);
        } else {
            PBX_CHECK_EQ(cap, h->core.pools[p].capacity);
        }
        PBX_CHECK(cap > 0U);
    }
    th_free(h);
}

PBX_TEST(core_usage_follows_a_grant_and_returns_to_zero)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    /* Open: one request with every record it takes at BEGIN, its
     * selector, and its three transient-slot records (the committed
     * scope's and the two it keeps for the object and the handle); no
     * prompt record: a routine request never takes one. */
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_REQUESTS), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_GRANTS), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_PROMPTS), 0U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_POLICIES), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_DECISIONS), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_RESOLUTIONS), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_NOTIFICATIONS), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_SELECTOR_BYTES), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS), 3U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_CALLS), 0U);
    th_run(h);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    /* Delivered: the request retired; the live grant keeps its record
     * and procd's revocation handle, nothing else. */
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_REQUESTS), 0U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_GRANTS), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS), 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_SELECTOR_BYTES), 0U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_CALLS), 0U);
    PBX_CHECK(!usage_all_free(h));
    /* CONSUME: its cleanup calls are outstanding until answered. */
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    h->hold = true;
    for (int i = 0; i < 8 && usage_used(h, PBX_BOOTSTRAP_POOL_CALLS) == 0U;
         i++) {
        (void)th_step(h);
    }
    PBX_CHECK(usage_used(h, PBX_BOOTSTRAP_POOL_CALLS) >= 1U);
    PBX_CHECK_EQ(usage_used(h, PBX_BOOTSTRAP_POOL_GRANTS), 1U);
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK(usage_all_free(h));
    PBX_CHECK(th_conserved(h));
    th_free(h);
}
