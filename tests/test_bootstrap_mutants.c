/*
 * test_bootstrap_mutants.c: PBX1 geometry rules that mutation testing
 * (make mutate, docs/TESTING.md "Mutation testing") found unchecked: the
 * arena total counts every pool, the first and the last included.
 */
#include "../bootstrap/pbx_bootstrap.h"
#include "../core/pbx_core.h"
#include "runner/pbx_test.h"

#include <string.h>

/* A valid small geometry with the core's record layouts. */
static void bm_geometry(pbx_bootstrap_geometry *g)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = 4096U;
    pbx_core_pool_layouts(g->layout);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g->capacity[i] = 4U;
    }
    g->capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] = 4096U;
    g->call_window = 1U;
    g->capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g->time_ms[t] = 5000U;
    }
    g->arena_page_count = 1U;
}

/* Whichever single pool alone is over the arena bound, the geometry is
 * refused for its total, so no pool is left out of the sum. */
PBX_TEST(bootstrap_mutants_every_pool_counts_toward_the_total)
{
    pbx_bootstrap_geometry g;
    bm_geometry(&g);
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        pbx_bootstrap_geometry big = g;
        big.capacity[i] = pbx_bootstrap_capacity_max((pbx_bootstrap_pool)i);
        big.layout[i].record_size_bytes = PBX_BOOTSTRAP_RECORD_SIZE_MAX;
        big.layout[i].record_align_bytes = 8U;
        PBX_REQUIRE((uint64_t)big.capacity[i] * PBX_BOOTSTRAP_RECORD_SIZE_MAX >
                    PBX_BOOTSTRAP_ARENA_BYTES_MAX);
        pbx_err got = pbx_bootstrap_geometry_check(&big);
        if (got != PBX_E_BOOTSTRAP_TOTAL) {
            pbx_test_failf(__FILE__, __LINE__, "pool %zu alone: got %s", i,
                           pbx_err_name(got));
        }
    }
}

/* The prefix (magic and version) is judged as soon as it is whole: a
 * record of exactly the prefix length with a wrong magic is refused for
 * its magic, not its length. */
PBX_TEST(bootstrap_mutants_prefix_judged_once_whole)
{
    uint8_t b[PBX_BOOTSTRAP_PREFIX_BYTES];
    memset(b, 0, sizeof(b));
    pbx_bootstrap_geometry g;
    PBX_CHECK_EQ(pbx_bootstrap_parse(b, sizeof(b), &g), PBX_E_BOOTSTRAP_MAGIC);
    PBX_CHECK_EQ(pbx_bootstrap_parse(b, sizeof(b) - 1U, &g),
                 PBX_E_BOOTSTRAP_LENGTH);
}

/* The first pool starts the arena: offset 0, and each later pool starts
 * where the one before it ends, rounded up to its alignment. */
PBX_TEST(bootstrap_mutants_first_pool_at_offset_zero)
{
    pbx_bootstrap_geometry g;
    bm_geometry(&g);
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_core_pool_layouts(want);
    pbx_bootstrap_layout l;
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, want, &l) == PBX_OK);
    PBX_CHECK_EQ(l.pools[0].offset_bytes, 0U);
    for (size_t i = 1; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        size_t end = l.pools[i - 1U].offset_bytes + l.pools[i - 1U].size_bytes;
        size_t a = want[i].record_align_bytes;
        PBX_CHECK_EQ(l.pools[i].offset_bytes, (end + a - 1U) / a * a);
    }
}

/* The largest page size is accepted, and an arena of exactly the largest
 * extent (one such page) too. */
PBX_TEST(bootstrap_mutants_largest_page_and_arena_accepted)
{
    pbx_bootstrap_geometry g;
    bm_geometry(&g);
    g.page_size_bytes = PBX_BOOTSTRAP_PAGE_SIZE_MAX;
    PBX_CHECK_EQ(pbx_bootstrap_pages_compute(&g, &g.arena_page_count), PBX_OK);
    PBX_CHECK_EQ(g.arena_page_count, 1U);
    PBX_CHECK_EQ((uint64_t)g.arena_page_count * g.page_size_bytes,
                 PBX_BOOTSTRAP_ARENA_BYTES_MAX);
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
}
