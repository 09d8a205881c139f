/*
 * fuzz_geometry.c: libFuzzer harness for `pbx geometry check`, whose
 * parser is the shared startup check (pbx_core_startup_check, the one
 * function powerboxd's startup and the tool both call).
 *
 * Any input is judged as it is; a record-sized input is also judged
 * resealed (its digest recomputed) and, resealed, with its page count
 * patched to the derived extent, so the checks after authentication
 * (layout, extent, transient range, what the core needs) are reached.
 * Checked: the verdict is one of the documented six and agrees with its
 * error (PBX_OK exactly when it passed); a record that passes re-encodes
 * to the same bytes and derives the very layout the check reported; a
 * record whose page count alone
 * was off is refused at the extent check, never later. Any difference
 * aborts.
 */
#include "bootstrap/pbx_bootstrap.h"
#include "core/pbx_core.h"
#include "core/pbx_core_inspect.h"
#include "sha2/pbx_sha2.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts unless the accepted record rec stands on its own. */
static void fuzz_geometry_accepted(const uint8_t *rec,
                                   const pbx_core_startup_result *r)
{
    uint8_t again[PBX_BOOTSTRAP_RECORD_BYTES];
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_bootstrap_layout l;
    pbx_core_pool_layouts(want);
    if (r->err != PBX_OK ||
        pbx_bootstrap_encode(&r->geo, again, sizeof(again)) != PBX_OK ||
        memcmp(again, rec, sizeof(again)) != 0 ||
        pbx_bootstrap_layout_derive(&r->geo, want, &l) != PBX_OK ||
        l.arena_bytes != r->layout.arena_bytes ||
        l.used_bytes != r->layout.used_bytes ||
        l.page_count != r->layout.page_count) {
        abort();
    }
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        if (l.pools[i].offset_bytes != r->layout.pools[i].offset_bytes ||
            l.pools[i].size_bytes != r->layout.pools[i].size_bytes) {
            abort();
        }
    }
}

/* Judges len bytes at rec; returns the verdict. */
static pbx_core_startup_verdict fuzz_geometry_one(const uint8_t *rec,
                                                  size_t len)
{
    static pbx_core_startup_result r;
    pbx_core_startup_verdict v = pbx_core_startup_check(rec, len, &r);
    if (v != r.verdict || v > PBX_CORE_STARTUP_CORE ||
        (v == PBX_CORE_STARTUP_OK) != (r.err == PBX_OK)) {
        abort();
    }
    if (v == PBX_CORE_STARTUP_OK) {
        fuzz_geometry_accepted(rec, &r);
    }
    return v;
}

/* Recomputes rec's digest in place. */
static void fuzz_geometry_seal(uint8_t *rec)
{
    if (pbx_sha2_digest(rec, PBX_BOOTSTRAP_DIGEST_OFFSET,
                        rec + PBX_BOOTSTRAP_DIGEST_OFFSET) != PBX_OK) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    (void)fuzz_geometry_one(size == 0U ? NULL : data, size);
    if (size != PBX_BOOTSTRAP_RECORD_BYTES) {
        return 0;
    }
    memcpy(rec, data, sizeof(rec));
    fuzz_geometry_seal(rec);
    pbx_core_startup_verdict v = fuzz_geometry_one(rec, sizeof(rec));
    pbx_bootstrap_geometry g;
    uint32_t pages = 0;
    if (v == PBX_CORE_STARTUP_EXTENT &&
        pbx_bootstrap_parse(rec, sizeof(rec), &g) == PBX_OK &&
        pbx_bootstrap_pages_compute(&g, &pages) == PBX_OK) {
        g.arena_page_count = pages;
        if (pbx_bootstrap_encode(&g, rec, sizeof(rec)) != PBX_OK) {
            abort();
        }
        if (fuzz_geometry_one(rec, sizeof(rec)) == PBX_CORE_STARTUP_EXTENT) {
            abort(); /* the derived page count is the extent */
        }
    }
    return 0;
}
