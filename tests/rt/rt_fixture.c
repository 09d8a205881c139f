/*
 * rt_fixture.c: the shared setup of the hosted runtime tests
 * (rt_fixture.h).
 */
#include "tests/rt/rt_fixture.h"

#include <stdlib.h>
#include <string.h>

#include "tests/rt/rt_fake_port.h"
#include "tests/runner/pbx_test.h"

/* Derives a small arena layout, four records per pool, into *geo and
 * *out: small enough that the tests can fill a pool, large enough for a
 * whole request. */
static void rt_fixture_layout(pbx_bootstrap_geometry *geo,
                              pbx_bootstrap_layout *out)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = 4U;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        3U * 4U + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        4U * 4U * PBX_CORE_SELECTOR_CHUNK_BYTES;
    g.call_window = 4U;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * 4U;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, want, out) == PBX_OK);
    *geo = g;
}

void rt_fixture_setup(rt_state *rs, uint8_t **arena, const int32_t *base,
                      size_t base_count)
{
    fk_reset();
    memset(rs, 0, sizeof(*rs));
    rt_fixture_layout(&rs->geo, &rs->layout);
    rs->port.slot_min = (int32_t)PBX_CAPABI_TRANSIENT_FIRST_DEFAULT;
    rs->port.slot_max = (int32_t)(PBX_CAPABI_TRANSIENT_FIRST_DEFAULT +
                                  PBX_RT_TRANSIENT_MAX - 1U);
    for (uint32_t i = 0; i < PBX_PORT_RECEIPTS_MAX; i++) {
        rs->port.staged[i] = PBX_PORT_SLOT_NONE;
    }
    /* The baseline slots are marked before the core comes up, as the
     * kernel already holds them when rt_startup runs. A slot the fake
     * does not know ends the test without counting a check, so the
     * tests' check counts stay those of their own assertions. */
    for (size_t i = 0; i < base_count; i++) {
        if (base[i] < 0 || (uint32_t)base[i] >= FK_SLOTS) {
            pbx_test_failf(__FILE__, __LINE__, "base slot %d out of range",
                           (int)base[i]);
            pbx_test_abort();
        }
        fk.kind[base[i]] = PBX_PORT_KIND_ENDPOINT;
    }
    PBX_REQUIRE(pbx_capabi_layout_init(
                    &rs->slots, PBX_CAPABI_TRANSIENT_FIRST_DEFAULT,
                    rs->geo.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] +
                        PBX_PORT_RECEIPTS_MAX) == PBX_OK);
    if (*arena == NULL) {
        *arena = aligned_alloc(4096U, rs->layout.arena_bytes);
    }
    PBX_REQUIRE(*arena != NULL);
    rs->arena = *arena;
    PBX_REQUIRE(pbx_core_init(&rs->core, &rs->layout, rs->arena,
                              rs->layout.arena_bytes, &rs->slots, &rt_ops,
                              rs) == PBX_OK);
    pbx_core_set_identity(&rs->core, rt_identity);
}
