/*
 * pbx_bootstrap.c: PBX1 parsing, encoding and the arena layout it implies.
 *
 * Every field is read with the little-endian helpers at a fixed offset
 * after the exact length was proven, so no read can leave the buffer. The
 * digest is checked before any field is interpreted beyond the magic and
 * version, and every failure leaves the caller's output untouched: results
 * are built in a local and copied out only once they are complete.
 */
#include "bootstrap/pbx_bootstrap.h"

#include "sha2/pbx_sha2.h"

_Static_assert(PBX_BOOTSTRAP_DIGEST_BYTES == PBX_SHA2_DIGEST_BYTES,
               "PBX1 carries exactly one SHA-256 digest");
_Static_assert(PBX_BOOTSTRAP_CALLS_OFFSET == 176U,
               "PBX1 calls section starts at byte 176 (docs/PBX1.md)");
_Static_assert(PBX_BOOTSTRAP_DIGEST_OFFSET == 208U,
               "PBX1 digest starts at byte 208 (docs/PBX1.md)");
_Static_assert(PBX_BOOTSTRAP_PREFIX_BYTES <= PBX_BOOTSTRAP_RECORD_BYTES,
               "the magic and version prefix lies inside the record");
_Static_assert(
    (uint64_t)PBX_BOOTSTRAP_CALL_WINDOW_MAX *PBX_BOOTSTRAP_CALL_ROUTES <=
        PBX_BOOTSTRAP_RECORDS_MAX,
    "a maximal window on every route fits a maximal calls pool");
_Static_assert(PBX_BOOTSTRAP_PAGE_SIZE_MIN <= PBX_BOOTSTRAP_PAGE_SIZE_MAX,
               "page size range is not empty");
_Static_assert(PBX_BOOTSTRAP_ARENA_BYTES_MAX <= (SIZE_MAX >> 1),
               "arena maximum leaves room for alignment arithmetic");

/* Byte offsets inside a PBX1 record (docs/PBX1.md, "Byte layout"). */
#define PBX1_OFF_MAGIC      0U
#define PBX1_OFF_VERSION    4U
#define PBX1_OFF_RESERVED   6U
#define PBX1_OFF_PAGE_SIZE  8U
#define PBX1_OFF_PAGE_COUNT 12U
#define PBX1_OFF_POOLS      PBX_BOOTSTRAP_HEADER_BYTES

/* Byte offsets inside one pool entry. */
#define PBX1_POOL_OFF_CAPACITY 0U
#define PBX1_POOL_OFF_SIZE     4U
#define PBX1_POOL_OFF_ALIGN    8U
#define PBX1_POOL_OFF_RESERVED 12U

/* Byte offsets inside the calls section. */
#define PBX1_CALLS_OFF_WINDOW 0U
#define PBX1_CALLS_OFF_TIME   4U
_Static_assert(PBX1_CALLS_OFF_TIME + 4U * (unsigned)PBX_BOOTSTRAP_TIME_IDLE ==
                   28U,
               "the idle deadline is the calls section's last word");
_Static_assert(PBX_BOOTSTRAP_CALLS_BYTES == 32U,
               "the calls section is 32 bytes (docs/PBX1.md)");

static const char *const pbx_bootstrap_pool_names[PBX_BOOTSTRAP_POOL_COUNT] = {
    "requests",  "selector-bytes",  "grants",      "prompts",       "policies",
    "decisions", "transient-slots", "resolutions", "notifications", "calls",
};

static const char *const pbx_bootstrap_time_names[PBX_BOOTSTRAP_TIME_COUNT] = {
    "vfsd", "ttyd", "procd", "scope", "prompt", "open", "idle",
};

/* The per-pool mismatch errors, indexed by pool. A table rather than
 * arithmetic on enum values keeps every conversion explicit and checked. */
static const pbx_err pbx_bootstrap_mismatch_errs[PBX_BOOTSTRAP_POOL_COUNT] = {
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_REQUESTS,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_SELECTOR_BYTES,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_GRANTS,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_PROMPTS,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_POLICIES,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_DECISIONS,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_TRANSIENT_SLOTS,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_RESOLUTIONS,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_NOTIFICATIONS,
    PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_CALLS,
};

const char *pbx_bootstrap_pool_name(pbx_bootstrap_pool pool)
{
    if ((unsigned)pool >= (unsigned)PBX_BOOTSTRAP_POOL_COUNT) {
        return "unknown";
    }
    return pbx_bootstrap_pool_names[pool];
}

const char *pbx_bootstrap_time_name(pbx_bootstrap_time time)
{
    if ((unsigned)time >= (unsigned)PBX_BOOTSTRAP_TIME_COUNT) {
        return "unknown";
    }
    return pbx_bootstrap_time_names[time];
}

uint32_t pbx_bootstrap_capacity_max(pbx_bootstrap_pool pool)
{
    if ((unsigned)pool >= (unsigned)PBX_BOOTSTRAP_POOL_COUNT) {
        return 0U;
    }
    if (pool == PBX_BOOTSTRAP_POOL_SELECTOR_BYTES) {
        return PBX_BOOTSTRAP_SELECTOR_BYTES_MAX;
    }
    return PBX_BOOTSTRAP_RECORDS_MAX;
}

bool pbx_bootstrap_mismatch_pool(pbx_err err, pbx_bootstrap_pool *pool)
{
    PBX_ASSERT(pool != NULL);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        if (pbx_bootstrap_mismatch_errs[i] == err) {
            *pool = (pbx_bootstrap_pool)i;
            return true;
        }
    }
    return false;
}

static bool pbx_bootstrap_is_pow2(uint32_t v)
{
    return v != 0U && (v & (v - 1U)) == 0U;
}

/* A record type's layout is well formed when it is what a C compiler could
 * produce: a nonzero size that is a multiple of a power-of-two alignment no
 * larger than the page, so a page-aligned arena can honour it. */
static bool pbx_bootstrap_type_layout_ok(const pbx_bootstrap_type_layout *l,
                                         uint32_t page_size_bytes)
{
    if (l->record_size_bytes == 0U ||
        l->record_size_bytes > PBX_BOOTSTRAP_RECORD_SIZE_MAX) {
        return false;
    }
    if (!pbx_bootstrap_is_pow2(l->record_align_bytes) ||
        l->record_align_bytes > page_size_bytes) {
        return false;
    }
    return l->record_size_bytes % l->record_align_bytes == 0U;
}

/* Checks every pool's capacity and layout, in pool order, capacity first. */
static pbx_err pbx_bootstrap_pools_check(const pbx_bootstrap_geometry *g)
{
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        if (g->capacity[i] == 0U) {
            return PBX_E_BOOTSTRAP_CAPACITY_ZERO;
        }
        if (g->capacity[i] >
            pbx_bootstrap_capacity_max((pbx_bootstrap_pool)i)) {
            return PBX_E_BOOTSTRAP_CAPACITY_MAX;
        }
        if (!pbx_bootstrap_type_layout_ok(&g->layout[i], g->page_size_bytes)) {
            return PBX_E_BOOTSTRAP_TYPE_LAYOUT;
        }
    }
    return PBX_OK;
}

/* Checks the call window, that the calls pool holds a full window on
 * every call route, and every deadline, in that order. */
static pbx_err pbx_bootstrap_calls_check(const pbx_bootstrap_geometry *g)
{
    if (g->call_window == 0U ||
        g->call_window > PBX_BOOTSTRAP_CALL_WINDOW_MAX) {
        return PBX_E_BOOTSTRAP_WINDOW;
    }
    /* The window is at most 4096, so the product cannot wrap a u64. */
    if ((uint64_t)g->call_window * PBX_BOOTSTRAP_CALL_ROUTES >
        g->capacity[PBX_BOOTSTRAP_POOL_CALLS]) {
        return PBX_E_BOOTSTRAP_WINDOW_CALLS;
    }
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; i++) {
        if (g->time_ms[i] == 0U || g->time_ms[i] > PBX_BOOTSTRAP_TIME_MS_MAX) {
            return PBX_E_BOOTSTRAP_TIME;
        }
    }
    return PBX_OK;
}

pbx_err pbx_bootstrap_geometry_check(const pbx_bootstrap_geometry *g)
{
    PBX_ASSERT(g != NULL);
    if (g->version != PBX_BOOTSTRAP_VERSION) {
        return PBX_E_BOOTSTRAP_VERSION;
    }
    if (!pbx_bootstrap_is_pow2(g->page_size_bytes) ||
        g->page_size_bytes < PBX_BOOTSTRAP_PAGE_SIZE_MIN ||
        g->page_size_bytes > PBX_BOOTSTRAP_PAGE_SIZE_MAX) {
        return PBX_E_BOOTSTRAP_PAGE_SIZE;
    }
    pbx_err err = pbx_bootstrap_pools_check(g);
    if (err != PBX_OK) {
        return err;
    }
    /* Capacities are at most 2^24 and record sizes at most 2^16, so each
     * product is below 2^40 and the sum of twelve cannot wrap a u64. */
    uint64_t total = 0U;
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        total += (uint64_t)g->capacity[i] * g->layout[i].record_size_bytes;
    }
    uint64_t patched = (uint64_t)g->arena_page_count * g->page_size_bytes;
    if (total > PBX_BOOTSTRAP_ARENA_BYTES_MAX ||
        patched > PBX_BOOTSTRAP_ARENA_BYTES_MAX) {
        return PBX_E_BOOTSTRAP_TOTAL;
    }
    return pbx_bootstrap_calls_check(g);
}

/* Every reserved byte must be zero: the header's u16 and each entry's
 * u32. */
static bool pbx_bootstrap_reserved_zero(const uint8_t *buf)
{
    uint32_t acc = pbx_le_get16(buf + PBX1_OFF_RESERVED);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        const uint8_t *e =
            buf + PBX1_OFF_POOLS + (size_t)i * PBX_BOOTSTRAP_POOL_ENTRY_BYTES;
        acc |= pbx_le_get32(e + PBX1_POOL_OFF_RESERVED);
    }
    return acc == 0U;
}

/* Decodes the value fields of a length-checked record into g. */
static void pbx_bootstrap_decode(const uint8_t *buf, pbx_bootstrap_geometry *g)
{
    g->version = pbx_le_get16(buf + PBX1_OFF_VERSION);
    g->page_size_bytes = pbx_le_get32(buf + PBX1_OFF_PAGE_SIZE);
    g->arena_page_count = pbx_le_get32(buf + PBX1_OFF_PAGE_COUNT);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        const uint8_t *e =
            buf + PBX1_OFF_POOLS + (size_t)i * PBX_BOOTSTRAP_POOL_ENTRY_BYTES;
        g->capacity[i] = pbx_le_get32(e + PBX1_POOL_OFF_CAPACITY);
        g->layout[i].record_size_bytes = pbx_le_get32(e + PBX1_POOL_OFF_SIZE);
        g->layout[i].record_align_bytes = pbx_le_get32(e + PBX1_POOL_OFF_ALIGN);
    }
    const uint8_t *c = buf + PBX_BOOTSTRAP_CALLS_OFFSET;
    g->call_window = pbx_le_get32(c + PBX1_CALLS_OFF_WINDOW);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; i++) {
        g->time_ms[i] = pbx_le_get32(c + PBX1_CALLS_OFF_TIME + (size_t)i * 4U);
    }
    pbx_mem_copy(g->digest, buf + PBX_BOOTSTRAP_DIGEST_OFFSET,
                 PBX_BOOTSTRAP_DIGEST_BYTES);
}

pbx_err pbx_bootstrap_parse(const uint8_t *buf, size_t len,
                            pbx_bootstrap_geometry *out)
{
    PBX_ASSERT(out != NULL);
    PBX_ASSERT(buf != NULL || len == 0U);
    /* Magic and version are read before the exact length is known, so a
     * record of another version is refused as such; the prefix is proven
     * present first. */
    if (len < PBX_BOOTSTRAP_PREFIX_BYTES) {
        return PBX_E_BOOTSTRAP_LENGTH;
    }
    if (buf[PBX1_OFF_MAGIC] != PBX_BOOTSTRAP_MAGIC_0 ||
        buf[PBX1_OFF_MAGIC + 1U] != PBX_BOOTSTRAP_MAGIC_1 ||
        buf[PBX1_OFF_MAGIC + 2U] != PBX_BOOTSTRAP_MAGIC_2 ||
        buf[PBX1_OFF_MAGIC + 3U] != PBX_BOOTSTRAP_MAGIC_3) {
        return PBX_E_BOOTSTRAP_MAGIC;
    }
    if (pbx_le_get16(buf + PBX1_OFF_VERSION) != PBX_BOOTSTRAP_VERSION) {
        return PBX_E_BOOTSTRAP_VERSION;
    }
    if (len != PBX_BOOTSTRAP_RECORD_BYTES) {
        return PBX_E_BOOTSTRAP_LENGTH;
    }
    uint8_t digest[PBX_SHA2_DIGEST_BYTES];
    pbx_err err = pbx_sha2_digest(buf, PBX_BOOTSTRAP_DIGEST_OFFSET, digest);
    PBX_ASSERT(err == PBX_OK); /* 240 bytes is far below the SHA-256 limit. */
    if (!pbx_sha2_digest_equal(digest, buf + PBX_BOOTSTRAP_DIGEST_OFFSET)) {
        return PBX_E_BOOTSTRAP_DIGEST;
    }
    if (!pbx_bootstrap_reserved_zero(buf)) {
        return PBX_E_BOOTSTRAP_RESERVED;
    }
    /* Zeroed first, here and in pbx_bootstrap_layout_derive: the record
     * has padding no field assignment writes, and the byte copy into *out
     * would otherwise hand the caller whatever the stack held there (make
     * eva: an uninitialised read in pbx_mem_copy). */
    pbx_bootstrap_geometry g;
    pbx_mem_set(&g, 0, sizeof(g));
    pbx_bootstrap_decode(buf, &g);
    err = pbx_bootstrap_geometry_check(&g);
    if (err != PBX_OK) {
        return err;
    }
    pbx_mem_copy(out, &g, sizeof(g));
    return PBX_OK;
}

pbx_err pbx_bootstrap_encode(const pbx_bootstrap_geometry *g, uint8_t *out,
                             size_t len)
{
    PBX_ASSERT(g != NULL);
    PBX_ASSERT(out != NULL || len == 0U);
    if (len != PBX_BOOTSTRAP_RECORD_BYTES) {
        return PBX_E_BOOTSTRAP_LENGTH;
    }
    pbx_err err = pbx_bootstrap_geometry_check(g);
    if (err != PBX_OK) {
        return err;
    }
    pbx_mem_set(out, 0U, len);
    out[PBX1_OFF_MAGIC] = PBX_BOOTSTRAP_MAGIC_0;
    out[PBX1_OFF_MAGIC + 1U] = PBX_BOOTSTRAP_MAGIC_1;
    out[PBX1_OFF_MAGIC + 2U] = PBX_BOOTSTRAP_MAGIC_2;
    out[PBX1_OFF_MAGIC + 3U] = PBX_BOOTSTRAP_MAGIC_3;
    pbx_le_put16(out + PBX1_OFF_VERSION, g->version);
    pbx_le_put32(out + PBX1_OFF_PAGE_SIZE, g->page_size_bytes);
    pbx_le_put32(out + PBX1_OFF_PAGE_COUNT, g->arena_page_count);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        uint8_t *e =
            out + PBX1_OFF_POOLS + (size_t)i * PBX_BOOTSTRAP_POOL_ENTRY_BYTES;
        pbx_le_put32(e + PBX1_POOL_OFF_CAPACITY, g->capacity[i]);
        pbx_le_put32(e + PBX1_POOL_OFF_SIZE, g->layout[i].record_size_bytes);
        pbx_le_put32(e + PBX1_POOL_OFF_ALIGN, g->layout[i].record_align_bytes);
    }
    uint8_t *c = out + PBX_BOOTSTRAP_CALLS_OFFSET;
    pbx_le_put32(c + PBX1_CALLS_OFF_WINDOW, g->call_window);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; i++) {
        pbx_le_put32(c + PBX1_CALLS_OFF_TIME + (size_t)i * 4U, g->time_ms[i]);
    }
    err = pbx_sha2_digest(out, PBX_BOOTSTRAP_DIGEST_OFFSET,
                          out + PBX_BOOTSTRAP_DIGEST_OFFSET);
    PBX_ASSERT(err == PBX_OK); /* 240 bytes is far below the SHA-256 limit. */
    return PBX_OK;
}

/* Lays the pools out in pool order from arena offset zero, each at the next
 * multiple of its alignment, and rounds the span up to whole pages. g must
 * have passed pbx_bootstrap_geometry_check, so alignments are powers of two;
 * every step is still overflow-checked against the arena maximum. */
static pbx_err pbx_bootstrap_layout_compute(const pbx_bootstrap_geometry *g,
                                            pbx_bootstrap_layout *l)
{
    size_t cursor = 0U;
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        size_t align = g->layout[i].record_align_bytes;
        size_t offset = 0U;
        size_t size = 0U;
        size_t end = 0U;
        if (pbx_add_overflows_size(cursor, align - 1U, &offset) ||
            pbx_mul_overflows_size(g->capacity[i],
                                   g->layout[i].record_size_bytes, &size)) {
            return PBX_E_BOOTSTRAP_TOTAL;
        }
        offset &= ~(align - 1U);
        if (pbx_add_overflows_size(offset, size, &end) ||
            end > PBX_BOOTSTRAP_ARENA_BYTES_MAX) {
            return PBX_E_BOOTSTRAP_TOTAL;
        }
        l->pools[i].offset_bytes = offset;
        l->pools[i].size_bytes = size;
        l->pools[i].capacity = g->capacity[i];
        l->pools[i].record_size_bytes = g->layout[i].record_size_bytes;
        l->pools[i].record_align_bytes = g->layout[i].record_align_bytes;
        cursor = end;
    }
    size_t page = g->page_size_bytes;
    size_t rounded = 0U;
    if (pbx_add_overflows_size(cursor, page - 1U, &rounded)) {
        return PBX_E_BOOTSTRAP_TOTAL;
    }
    rounded &= ~(page - 1U);
    if (rounded > PBX_BOOTSTRAP_ARENA_BYTES_MAX) {
        return PBX_E_BOOTSTRAP_TOTAL;
    }
    l->used_bytes = cursor;
    l->page_size_bytes = page;
    l->page_count = rounded / page;
    l->arena_bytes = rounded;
    return PBX_OK;
}

pbx_err pbx_bootstrap_pages_compute(const pbx_bootstrap_geometry *g,
                                    uint32_t *pages_out)
{
    PBX_ASSERT(g != NULL && pages_out != NULL);
    pbx_err err = pbx_bootstrap_geometry_check(g);
    if (err != PBX_OK) {
        return err;
    }
    pbx_bootstrap_layout l;
    err = pbx_bootstrap_layout_compute(g, &l);
    if (err != PBX_OK) {
        return err;
    }
    /* The arena maximum over the minimum page size bounds the count. */
    *pages_out = (uint32_t)l.page_count;
    return PBX_OK;
}

pbx_err pbx_bootstrap_layout_derive(
    const pbx_bootstrap_geometry *g,
    const pbx_bootstrap_type_layout expected[PBX_BOOTSTRAP_POOL_COUNT],
    pbx_bootstrap_layout *out)
{
    PBX_ASSERT(g != NULL && expected != NULL && out != NULL);
    pbx_err err = pbx_bootstrap_geometry_check(g);
    if (err != PBX_OK) {
        return err;
    }
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        if (g->layout[i].record_size_bytes != expected[i].record_size_bytes ||
            g->layout[i].record_align_bytes != expected[i].record_align_bytes) {
            return pbx_bootstrap_mismatch_errs[i];
        }
    }
    pbx_bootstrap_layout l;
    pbx_mem_set(&l, 0, sizeof(l));
    err = pbx_bootstrap_layout_compute(g, &l);
    if (err != PBX_OK) {
        return err;
    }
    if (l.page_count != g->arena_page_count) {
        return PBX_E_BOOTSTRAP_PAGE_EXTENT;
    }
    l.call_window = g->call_window;
    pbx_mem_copy(l.time_ms, g->time_ms, sizeof(l.time_ms));
    pbx_mem_copy(out, &l, sizeof(l));
    return PBX_OK;
}
