/*
 * test_core_fsm.c: the transition table, its dot rendering, and arena
 * construction with layout and page-extent mismatches.
 */
#include "../core/pbx_core.h"
#include "runner/pbx_test.h"

#include <stdlib.h>
#include <string.h>

PBX_TEST(core_fsm_table_is_deterministic)
{
    size_t n = 0;
    const pbx_core_transition *t = pbx_core_fsm_table(&n);
    PBX_REQUIRE(n > 0U);
    for (size_t i = 0; i < n; i++) {
        PBX_CHECK_EQ(pbx_core_fsm_find((pbx_core_machine)t[i].machine,
                                       (pbx_core_state)t[i].from,
                                       (pbx_core_event)t[i].event),
                     i);
    }
    PBX_CHECK_EQ(pbx_core_fsm_next(PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_OPEN,
                                   PBX_CORE_EV_COMMIT),
                 PBX_CORE_ST_RESOLVE);
    PBX_CHECK_EQ(pbx_core_fsm_find(PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_NOTIFY,
                                   PBX_CORE_EV_CANCEL),
                 SIZE_MAX);
}

static void core_test_emit(void *user, const char *text, size_t len)
{
    char *buf = user;
    size_t at = strlen(buf);
    if (at + len < 8192U) {
        memcpy(buf + at, text, len);
        buf[at + len] = '\0';
    }
}

PBX_TEST(core_fsm_dot_lists_every_edge)
{
    static char buf[8192];
    buf[0] = '\0';
    pbx_core_fsm_dot(core_test_emit, buf);
    PBX_CHECK(strstr(buf, "digraph powerboxd") != NULL);
    PBX_CHECK(
        strstr(buf, "request_open -> request_resolve [label=\"commit\"]") !=
        NULL);
    PBX_CHECK(strstr(buf, "grant_retire -> grant_free [label=\"retired\"]") !=
              NULL);
}

/* Builds the layout for small capacities through the bootstrap library. */
static void core_test_layout(pbx_bootstrap_layout *out)
{
    pbx_bootstrap_geometry g;
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = 4U;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] = 1024U;
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] = PBX_CORE_TSLOTS_MIN;
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_core_pool_layouts(want);
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, want, out) == PBX_OK);
}

PBX_TEST(core_init_carves_and_rejects_mismatch)
{
    pbx_bootstrap_layout l;
    core_test_layout(&l);
    static pbx_core_ctx ctx;
    pbx_capabi_layout slots;
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, 64U, 64U) == PBX_OK);
    static const pbx_core_ops ops;
    uint8_t *arena = aligned_alloc(4096U, l.arena_bytes);
    if (arena == NULL) {
        PBX_REQUIRE(arena != NULL);
        return;
    }
    memset(arena, 0xA5, l.arena_bytes);
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &l, arena, l.arena_bytes, &slots, &ops, NULL),
        PBX_OK);
    PBX_CHECK_EQ(ctx.pools[PBX_BOOTSTRAP_POOL_REQUESTS].free_count, 4U);
    PBX_CHECK_EQ(ctx.chunk_free_count, 1024U / PBX_CORE_SELECTOR_CHUNK_BYTES);
    PBX_CHECK_EQ(pbx_core_held_caps(&ctx), 0U);
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &l, arena, l.arena_bytes - 1U, &slots, &ops, NULL),
        PBX_E_CORE_ARENA);
    PBX_CHECK_EQ(ctx.ready, 0U);
    pbx_bootstrap_layout bad = l;
    bad.pools[PBX_BOOTSTRAP_POOL_GRANTS].record_size_bytes += 8U;
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &bad, arena, l.arena_bytes, &slots, &ops, NULL),
        PBX_E_CORE_LAYOUT);
    /* A transient-slot pool too small to serve one request beside the
     * records kept for transient deletions is refused before readiness. */
    bad = l;
    bad.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].capacity =
        PBX_CORE_TSLOTS_MIN - 1U;
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &bad, arena, l.arena_bytes, &slots, &ops, NULL),
        PBX_E_CORE_LAYOUT);
    PBX_CHECK_EQ(ctx.ready, 0U);
    bad = l;
    bad.page_count += 1U;
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &bad, arena, l.arena_bytes, &slots, &ops, NULL),
        PBX_E_CORE_ARENA);
    free(arena);
}
