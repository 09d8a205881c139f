/*
 * fuzz_pbx1.c: libFuzzer harness for PBX1 parsing and layout derivation.
 *
 * Any input is handed to pbx_bootstrap_parse. Because a random input
 * almost never carries a valid digest, the harness also reseals a
 * record-sized input (recomputes its digest) so the semantic checks and
 * derivation are explored too. Every accepted geometry must re-encode to
 * the same bytes and hold a call window and deadlines within their
 * ranges, with the window fitting the calls pool on every call route, and
 * every derived layout must be aligned, in order, disjoint and covered by
 * its page extent; a violation traps.
 */
#include "bootstrap/pbx_bootstrap.h"
#include "sha2/pbx_sha2.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks the layout invariants docs/PBX1.md promises. */
static void fuzz_pbx1_check_layout(const pbx_bootstrap_geometry *g,
                                   const pbx_bootstrap_layout *l)
{
    size_t prev_end = 0;
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        const pbx_bootstrap_pool_extent *e = &l->pools[i];
        PBX_ASSERT(e->offset_bytes % g->layout[i].record_align_bytes == 0U);
        PBX_ASSERT(e->offset_bytes >= prev_end);
        PBX_ASSERT(e->size_bytes ==
                   (size_t)g->capacity[i] * g->layout[i].record_size_bytes);
        prev_end = e->offset_bytes + e->size_bytes;
    }
    PBX_ASSERT(l->used_bytes == prev_end);
    PBX_ASSERT(l->arena_bytes == l->page_count * l->page_size_bytes);
    PBX_ASSERT(l->arena_bytes >= l->used_bytes);
    PBX_ASSERT(l->arena_bytes - l->used_bytes < l->page_size_bytes);
    PBX_ASSERT(l->page_count == g->arena_page_count);
}

/* Checks the call window and deadline rules docs/PBX1.md promises. */
static void fuzz_pbx1_check_calls(const pbx_bootstrap_geometry *g)
{
    PBX_ASSERT(g->version == PBX_BOOTSTRAP_VERSION);
    PBX_ASSERT(g->call_window >= 1U &&
               g->call_window <= PBX_BOOTSTRAP_CALL_WINDOW_MAX);
    PBX_ASSERT((uint64_t)g->call_window * PBX_BOOTSTRAP_CALL_ROUTES <=
               g->capacity[PBX_BOOTSTRAP_POOL_CALLS]);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; i++) {
        PBX_ASSERT(g->time_ms[i] >= 1U &&
                   g->time_ms[i] <= PBX_BOOTSTRAP_TIME_MS_MAX);
    }
}

/* Parses buf; on success re-encodes, and derives against its own layouts
 * (so a derivation is reached whenever the page count is consistent). */
static void fuzz_pbx1_one(const uint8_t *buf, size_t len)
{
    pbx_bootstrap_geometry g;
    if (pbx_bootstrap_parse(buf, len, &g) != PBX_OK) {
        return;
    }
    fuzz_pbx1_check_calls(&g);
    uint8_t again[PBX_BOOTSTRAP_RECORD_BYTES];
    PBX_ASSERT(pbx_bootstrap_encode(&g, again, sizeof(again)) == PBX_OK);
    PBX_ASSERT(memcmp(again, buf, sizeof(again)) == 0);
    pbx_bootstrap_layout l;
    if (pbx_bootstrap_layout_derive(&g, g.layout, &l) == PBX_OK) {
        fuzz_pbx1_check_layout(&g, &l);
    }
    uint32_t pages = 0;
    if (pbx_bootstrap_pages_compute(&g, &pages) == PBX_OK) {
        g.arena_page_count = pages;
        if (pbx_bootstrap_layout_derive(&g, g.layout, &l) == PBX_OK) {
            fuzz_pbx1_check_layout(&g, &l);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_pbx1_one(data, size);
    if (size == PBX_BOOTSTRAP_RECORD_BYTES) {
        uint8_t sealed[PBX_BOOTSTRAP_RECORD_BYTES];
        memcpy(sealed, data, sizeof(sealed));
        PBX_ASSERT(pbx_sha2_digest(sealed, PBX_BOOTSTRAP_DIGEST_OFFSET,
                                   sealed + PBX_BOOTSTRAP_DIGEST_OFFSET) ==
                   PBX_OK);
        fuzz_pbx1_one(sealed, sizeof(sealed));
    }
    return 0;
}
