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
    g.call_window = 1U;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
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

/* The link at record r of pool p of a carved ctx (read by copy). */
static pbx_core_link core_test_link(const pbx_core_ctx *ctx, size_t p,
                                    uint32_t r)
{
    pbx_core_link l;
    const pbx_core_pool_state *s = &ctx->pools[p];
    memcpy(&l, ctx->arena + s->offset_bytes + (size_t)r * s->record_size_bytes,
           sizeof(l));
    return l;
}

/* Whether init refuses layout bad with want and leaves ctx not ready. */
static bool core_test_refused(pbx_core_ctx *ctx,
                              const pbx_bootstrap_layout *bad, uint8_t *arena,
                              pbx_err want)
{
    static const pbx_core_ops ops;
    pbx_capabi_layout slots;
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, 64U, 64U) == PBX_OK);
    pbx_err err =
        pbx_core_init(ctx, bad, arena, bad->arena_bytes, &slots, &ops, NULL);
    return err == want && ctx->ready == 0U;
}

/* Every pool PBX1 describes is carved, the receipts and replies pools no
 * path uses yet included: each at its derived offset, inside the used
 * extent, disjoint from every other, its free list threaded over every
 * record and the arena's old bytes ignored. Each kind of mismatch in any
 * one pool is refused before readiness. */
PBX_TEST(core_init_carves_every_pool_and_refuses_each_mismatch)
{
    pbx_bootstrap_layout l;
    core_test_layout(&l);
    static pbx_core_ctx ctx;
    static const pbx_core_ops ops;
    pbx_capabi_layout slots;
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, 64U, 64U) == PBX_OK);
    uint8_t *arena = aligned_alloc(4096U, l.arena_bytes);
    if (arena == NULL) {
        PBX_REQUIRE(arena != NULL);
        return;
    }
    memset(arena, 0xA5, l.arena_bytes);
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &l, arena, l.arena_bytes, &slots, &ops, NULL),
        PBX_OK);
    PBX_CHECK_EQ(ctx.ready, 1U);
    for (size_t p = 0; p < (size_t)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        const pbx_bootstrap_pool_extent *e = &l.pools[p];
        PBX_CHECK_EQ(ctx.pools[p].offset_bytes, e->offset_bytes);
        PBX_CHECK_EQ(ctx.pools[p].capacity, e->capacity);
        PBX_CHECK(e->offset_bytes + e->size_bytes <= l.used_bytes);
        for (size_t q = p + 1U; q < (size_t)PBX_BOOTSTRAP_POOL_COUNT; q++) {
            const pbx_bootstrap_pool_extent *f = &l.pools[q];
            PBX_CHECK(e->offset_bytes + e->size_bytes <= f->offset_bytes ||
                      f->offset_bytes + f->size_bytes <= e->offset_bytes);
        }
        if (p == (size_t)PBX_BOOTSTRAP_POOL_SELECTOR_BYTES) {
            continue;
        }
        PBX_CHECK_EQ(ctx.pools[p].free_count, e->capacity);
        PBX_CHECK_EQ(ctx.pools[p].free_head, 0U);
        for (uint32_t r = 0; r < e->capacity; r++) {
            pbx_core_link k = core_test_link(&ctx, p, r);
            PBX_CHECK_EQ(k.next, r + 1U < e->capacity ? r + 1U : PBX_CORE_NIL);
            PBX_CHECK(k.live == 0U && k.queue == 0U && k.state == 0U);
        }
    }
    PBX_CHECK(ctx.pools[PBX_BOOTSTRAP_POOL_CALLS].capacity > 0U);
    PBX_CHECK_EQ(ctx.pools[PBX_BOOTSTRAP_POOL_CALLS].free_count,
                 l.pools[PBX_BOOTSTRAP_POOL_CALLS].capacity);
    for (size_t p = 0; p < (size_t)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        pbx_bootstrap_layout bad = l;
        bad.pools[p].record_size_bytes += 8U;
        PBX_CHECK(core_test_refused(&ctx, &bad, arena, PBX_E_CORE_LAYOUT));
        bad = l;
        bad.pools[p].record_align_bytes *= 2U;
        PBX_CHECK(core_test_refused(&ctx, &bad, arena, PBX_E_CORE_LAYOUT));
        bad = l;
        bad.pools[p].size_bytes += 1U;
        PBX_CHECK(core_test_refused(&ctx, &bad, arena, PBX_E_CORE_LAYOUT));
        bad = l;
        bad.pools[p].capacity = 0U;
        bad.pools[p].size_bytes = 0U;
        PBX_CHECK(core_test_refused(&ctx, &bad, arena, PBX_E_CORE_LAYOUT));
        /* Aligned, but past the used extent. */
        size_t align = l.pools[p].record_align_bytes;
        bad = l;
        bad.pools[p].offset_bytes = (l.used_bytes / align + 1U) * align;
        PBX_CHECK(core_test_refused(&ctx, &bad, arena, PBX_E_CORE_ARENA));
        if (l.pools[p].record_align_bytes > 1U) {
            bad = l;
            bad.pools[p].offset_bytes += 1U;
            PBX_CHECK(core_test_refused(&ctx, &bad, arena, PBX_E_CORE_LAYOUT));
        }
    }
    /* An arena that is not aligned for the records is refused too. */
    PBX_CHECK_EQ(
        pbx_core_init(&ctx, &l, arena + 1, l.arena_bytes, &slots, &ops, NULL),
        PBX_E_CORE_ARENA);
    PBX_CHECK_EQ(ctx.ready, 0U);
    free(arena);
}
