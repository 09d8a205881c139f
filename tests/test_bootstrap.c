/*
 * test_bootstrap.c: PBX1 parsing, encoding and arena layout derivation.
 *
 * Every malformed form named in docs/PBX1.md gets its own rejection test,
 * and the exhaustive tests (every truncation, every bit flip) prove that no
 * altered record is accepted. Records with a deliberately bad field are
 * resealed (their digest recomputed) so the check under test is reached.
 */
#include "../bootstrap/pbx_bootstrap.h"
#include "../sha2/pbx_sha2.h"
#include "runner/pbx_test.h"

#include <string.h>

/* Byte offsets the tests poke at (docs/PBX1.md, "Byte layout"). */
#define T_OFF_VERSION    4U
#define T_OFF_RESERVED   6U
#define T_OFF_PAGE_SIZE  8U
#define T_OFF_PAGE_COUNT 12U
#define T_OFF_POOLS      16U
#define T_OFF_WINDOW     176U
#define T_OFF_TIME       180U
#define T_OFF_IDLE       204U
#define T_OFF_DIGEST     208U

static const pbx_bootstrap_type_layout t_layouts[PBX_BOOTSTRAP_POOL_COUNT] = {
    {96, 8}, {1, 1},  {64, 8}, {48, 8}, {16, 4},
    {32, 8}, {16, 8}, {80, 8}, {16, 8}, {56, 8},
};

static const uint32_t t_capacities[PBX_BOOTSTRAP_POOL_COUNT] = {
    64, 4096, 64, 16, 16, 64, 128, 64, 64, 48,
};

/* The call window of the valid geometry: exactly fills the calls pool. */
#define T_WINDOW 16U

static const uint32_t t_times[PBX_BOOTSTRAP_TIME_COUNT] = {
    5000, 5001, 5002, 2000, 300000, 30000, 30001,
};

/* Fills g with a valid geometry whose page count is the derived one. */
static void t_geometry(pbx_bootstrap_geometry *g)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = 4096U;
    memcpy(g->capacity, t_capacities, sizeof(t_capacities));
    memcpy(g->layout, t_layouts, sizeof(t_layouts));
    g->call_window = T_WINDOW;
    memcpy(g->time_ms, t_times, sizeof(t_times));
    uint32_t pages = 0;
    PBX_REQUIRE(pbx_bootstrap_pages_compute(g, &pages) == PBX_OK);
    g->arena_page_count = pages;
}

/* Writes the valid default record into buf. */
static void t_record(uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES])
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    PBX_REQUIRE(pbx_bootstrap_encode(&g, buf, PBX_BOOTSTRAP_RECORD_BYTES) ==
                PBX_OK);
}

/* Recomputes the digest after a test changed a field on purpose. */
static void t_reseal(uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES])
{
    PBX_REQUIRE(pbx_sha2_digest(buf, PBX_BOOTSTRAP_DIGEST_OFFSET,
                                buf + PBX_BOOTSTRAP_DIGEST_OFFSET) == PBX_OK);
}

/* Parses buf and returns the result, checking that a failure left the
 * output untouched. */
static pbx_err t_parse(const uint8_t *buf, size_t len)
{
    /* The output is viewed as raw bytes so that even its padding is
     * proven unwritten on failure. */
    union {
        pbx_bootstrap_geometry g;
        uint8_t bytes[sizeof(pbx_bootstrap_geometry)];
    } out;
    memset(out.bytes, 0xA5, sizeof(out.bytes));
    pbx_err err = pbx_bootstrap_parse(buf, len, &out.g);
    if (err != PBX_OK) {
        size_t changed = 0;
        for (size_t i = 0; i < sizeof(out.bytes); i++) {
            changed += out.bytes[i] != 0xA5U ? 1U : 0U;
        }
        PBX_CHECK_EQ(changed, 0U);
    }
    return err;
}

/* Byte offset of field_off inside pool entry pool. */
static size_t t_pool_off(unsigned pool, size_t field_off)
{
    return T_OFF_POOLS + (size_t)pool * PBX_BOOTSTRAP_POOL_ENTRY_BYTES +
           field_off;
}

PBX_TEST(bootstrap_roundtrip)
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    PBX_REQUIRE(pbx_bootstrap_encode(&g, buf, sizeof(buf)) == PBX_OK);
    PBX_CHECK_MEM(buf, "PBX1", 4);
    PBX_CHECK_EQ(pbx_le_get16(buf + T_OFF_VERSION), 3U);
    PBX_CHECK_EQ(pbx_le_get32(buf + T_OFF_PAGE_SIZE), 4096U);
    /* The byte layout of docs/PBX1.md, pinned field by field. */
    PBX_CHECK_EQ(PBX_BOOTSTRAP_RECORD_BYTES, 240U);
    PBX_CHECK_EQ(PBX_BOOTSTRAP_DIGEST_OFFSET, T_OFF_DIGEST);
    PBX_CHECK_EQ(pbx_le_get32(buf + t_pool_off(PBX_BOOTSTRAP_POOL_CALLS, 0)),
                 48U);
    PBX_CHECK_EQ(pbx_le_get32(buf + t_pool_off(PBX_BOOTSTRAP_POOL_CALLS, 4)),
                 56U);
    PBX_CHECK_EQ(pbx_le_get32(buf + T_OFF_WINDOW), T_WINDOW);
    for (unsigned t = 0; t < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        PBX_CHECK_EQ(pbx_le_get32(buf + T_OFF_TIME + (size_t)4U * t),
                     t_times[t]);
    }
    PBX_CHECK_EQ(T_OFF_TIME + 4U * PBX_BOOTSTRAP_TIME_IDLE, T_OFF_IDLE);
    pbx_bootstrap_geometry p;
    PBX_REQUIRE(pbx_bootstrap_parse(buf, sizeof(buf), &p) == PBX_OK);
    PBX_CHECK_EQ(p.version, g.version);
    PBX_CHECK_EQ(p.page_size_bytes, g.page_size_bytes);
    PBX_CHECK_EQ(p.arena_page_count, g.arena_page_count);
    PBX_CHECK_MEM(p.capacity, g.capacity, sizeof(g.capacity));
    PBX_CHECK_MEM(p.layout, g.layout, sizeof(g.layout));
    PBX_CHECK_EQ(p.call_window, T_WINDOW);
    PBX_CHECK_MEM(p.time_ms, t_times, sizeof(t_times));
    uint8_t digest[PBX_SHA2_DIGEST_BYTES];
    PBX_REQUIRE(pbx_sha2_digest(buf, PBX_BOOTSTRAP_DIGEST_OFFSET, digest) ==
                PBX_OK);
    PBX_CHECK_MEM(p.digest, digest, sizeof(digest));
    uint8_t again[PBX_BOOTSTRAP_RECORD_BYTES];
    PBX_REQUIRE(pbx_bootstrap_encode(&p, again, sizeof(again)) == PBX_OK);
    PBX_CHECK_MEM(again, buf, sizeof(buf));
}

PBX_TEST(bootstrap_reject_every_truncation_and_extension)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES + 1];
    t_record(buf);
    buf[PBX_BOOTSTRAP_RECORD_BYTES] = 0;
    for (size_t len = 0; len < sizeof(buf); len++) {
        if (len != PBX_BOOTSTRAP_RECORD_BYTES) {
            PBX_CHECK_EQ(t_parse(buf, len), PBX_E_BOOTSTRAP_LENGTH);
        }
    }
    PBX_CHECK_EQ(t_parse(NULL, 0), PBX_E_BOOTSTRAP_LENGTH);
    PBX_CHECK_EQ(t_parse(buf, PBX_BOOTSTRAP_RECORD_BYTES), PBX_OK);
}

PBX_TEST(bootstrap_reject_every_bit_flip)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    t_record(buf);
    for (size_t i = 0; i < sizeof(buf); i++) {
        for (unsigned bit = 0; bit < 8U; bit++) {
            buf[i] ^= (uint8_t)(1U << bit);
            PBX_CHECK(t_parse(buf, sizeof(buf)) != PBX_OK);
            buf[i] ^= (uint8_t)(1U << bit);
        }
    }
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_OK);
}

PBX_TEST(bootstrap_reject_bad_magic)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    for (size_t i = 0; i < 4U; i++) {
        t_record(buf);
        buf[i] = (uint8_t)(buf[i] + 1U);
        t_reseal(buf);
        PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_MAGIC);
    }
}

PBX_TEST(bootstrap_reject_bad_version)
{
    static const uint16_t bad[] = {0U, 1U, 2U, 4U, 0x0300U, 0xFFFFU};
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        t_record(buf);
        pbx_le_put16(buf + T_OFF_VERSION, bad[i]);
        t_reseal(buf);
        PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_VERSION);
    }
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    g.version = 1U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_E_BOOTSTRAP_VERSION);
    g.version = 2U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_E_BOOTSTRAP_VERSION);
    g.version = 4U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_E_BOOTSTRAP_VERSION);
}

/* A whole, correctly sealed version 1 record (224 bytes: eleven pools, no
 * calls section, digest at 192) is refused as a version, not a length. */
PBX_TEST(bootstrap_reject_version_1_record)
{
    uint8_t v1[224];
    memset(v1, 0, sizeof(v1));
    v1[0] = PBX_BOOTSTRAP_MAGIC_0;
    v1[1] = PBX_BOOTSTRAP_MAGIC_1;
    v1[2] = PBX_BOOTSTRAP_MAGIC_2;
    v1[3] = PBX_BOOTSTRAP_MAGIC_3;
    pbx_le_put16(v1 + T_OFF_VERSION, 1U);
    pbx_le_put32(v1 + T_OFF_PAGE_SIZE, 4096U);
    pbx_le_put32(v1 + T_OFF_PAGE_COUNT, 8U);
    /* Version 1 had eleven pools; their values do not matter, since the
     * version is refused first. */
    for (unsigned p = 0; p < 11U; p++) {
        unsigned q = p % (unsigned)PBX_BOOTSTRAP_POOL_COUNT;
        pbx_le_put32(v1 + t_pool_off(p, 0), t_capacities[q]);
        pbx_le_put32(v1 + t_pool_off(p, 4), t_layouts[q].record_size_bytes);
        pbx_le_put32(v1 + t_pool_off(p, 8), t_layouts[q].record_align_bytes);
    }
    PBX_REQUIRE(pbx_sha2_digest(v1, 192U, v1 + 192U) == PBX_OK);
    PBX_CHECK_EQ(t_parse(v1, sizeof(v1)), PBX_E_BOOTSTRAP_VERSION);
    /* So is a version 1 prefix at the version 3 length. */
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    t_record(buf);
    pbx_le_put16(buf + T_OFF_VERSION, 1U);
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_VERSION);
    /* Magic and version are read only once their six bytes are there. */
    for (size_t len = 0; len < PBX_BOOTSTRAP_PREFIX_BYTES; len++) {
        PBX_CHECK_EQ(t_parse(v1, len), PBX_E_BOOTSTRAP_LENGTH);
    }
}

PBX_TEST(bootstrap_reject_bad_digest)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    t_record(buf);
    buf[PBX_BOOTSTRAP_RECORD_BYTES - 1U] ^= 0x80U;
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_DIGEST);
    /* A changed body with the old digest is a digest failure too, even
     * when the new value would be valid on its own. */
    t_record(buf);
    pbx_le_put32(buf + t_pool_off(0, 0), 65U);
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_DIGEST);
    t_reseal(buf);
    PBX_CHECK(t_parse(buf, sizeof(buf)) != PBX_E_BOOTSTRAP_DIGEST);
}

PBX_TEST(bootstrap_reject_nonzero_reserved)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    t_record(buf);
    buf[T_OFF_RESERVED + 1U] = 1U;
    t_reseal(buf);
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_RESERVED);
    for (unsigned p = 0; p < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        for (size_t b = 0; b < 4U; b++) {
            t_record(buf);
            buf[t_pool_off(p, 12U + b)] = 0x10U;
            t_reseal(buf);
            PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_RESERVED);
        }
    }
    /* Version 3 took the calls section's last word (reserved in version
     * 2) for the IDLE deadline: it is a value now, read back exactly. */
    t_record(buf);
    PBX_CHECK_EQ(pbx_le_get32(buf + T_OFF_IDLE), 30001U);
    pbx_bootstrap_geometry g;
    PBX_CHECK_EQ(pbx_bootstrap_parse(buf, sizeof(buf), &g), PBX_OK);
    PBX_CHECK_EQ(g.time_ms[PBX_BOOTSTRAP_TIME_IDLE], 30001U);
}

PBX_TEST(bootstrap_reject_zero_capacity)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    for (unsigned p = 0; p < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        t_record(buf);
        pbx_le_put32(buf + t_pool_off(p, 0), 0U);
        t_reseal(buf);
        PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_CAPACITY_ZERO);
    }
}

PBX_TEST(bootstrap_reject_capacity_over_max)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    for (unsigned p = 0; p < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        uint32_t max = pbx_bootstrap_capacity_max((pbx_bootstrap_pool)p);
        PBX_CHECK(max > 0U);
        t_record(buf);
        pbx_le_put32(buf + t_pool_off(p, 0), max + 1U);
        t_reseal(buf);
        PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_CAPACITY_MAX);
        /* Exactly the maximum is a valid capacity. */
        pbx_bootstrap_geometry g;
        t_geometry(&g);
        g.capacity[p] = max;
        PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
    }
    PBX_CHECK_EQ(pbx_bootstrap_capacity_max(PBX_BOOTSTRAP_POOL_SELECTOR_BYTES),
                 PBX_BOOTSTRAP_SELECTOR_BYTES_MAX);
    PBX_CHECK_EQ(pbx_bootstrap_capacity_max(PBX_BOOTSTRAP_POOL_COUNT), 0U);
}

PBX_TEST(bootstrap_reject_overflowing_totals)
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    /* 65536 records of 64 KiB is 4 GiB: over the 1 GiB arena maximum. */
    g.capacity[PBX_BOOTSTRAP_POOL_GRANTS] = PBX_BOOTSTRAP_RECORDS_MAX;
    g.layout[PBX_BOOTSTRAP_POOL_GRANTS].record_size_bytes = 65536U;
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    memset(buf, 0x77, sizeof(buf));
    PBX_CHECK_EQ(pbx_bootstrap_encode(&g, buf, sizeof(buf)),
                 PBX_E_BOOTSTRAP_TOTAL);
    PBX_CHECK_EQ(buf[0], 0x77U);
    t_record(buf);
    pbx_le_put32(buf + t_pool_off(PBX_BOOTSTRAP_POOL_GRANTS, 0),
                 PBX_BOOTSTRAP_RECORDS_MAX);
    pbx_le_put32(buf + t_pool_off(PBX_BOOTSTRAP_POOL_GRANTS, 4), 65536U);
    t_reseal(buf);
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_TOTAL);
    /* A patched page count beyond the arena maximum is an overflow too. */
    t_record(buf);
    pbx_le_put32(buf + T_OFF_PAGE_COUNT, 0xFFFFFFFFU);
    t_reseal(buf);
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_TOTAL);
}

/* Raw totals within the maximum, but alignment padding and the trailing
 * pools push the derived extent past it: derivation must catch it. */
PBX_TEST(bootstrap_reject_overflow_from_padding)
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    for (unsigned p = 0; p < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        g.capacity[p] = 1U;
        g.layout[p].record_size_bytes = 1U;
        g.layout[p].record_align_bytes = 1U;
    }
    g.capacity[0] = 16383U;
    g.layout[0].record_size_bytes = 65536U;
    g.capacity[2] = 15U;
    g.layout[2].record_size_bytes = 4096U;
    g.layout[2].record_align_bytes = 4096U;
    g.call_window = 1U;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES;
    g.arena_page_count = 1U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
    uint32_t pages = 99U;
    PBX_CHECK_EQ(pbx_bootstrap_pages_compute(&g, &pages),
                 PBX_E_BOOTSTRAP_TOTAL);
    PBX_CHECK_EQ(pages, 99U);
    pbx_bootstrap_layout l;
    PBX_CHECK_EQ(pbx_bootstrap_layout_derive(&g, g.layout, &l),
                 PBX_E_BOOTSTRAP_TOTAL);
}

PBX_TEST(bootstrap_reject_bad_page_size)
{
    static const uint32_t bad[] = {0U,          1U,          2048U,
                                   4095U,       4097U,       12288U,
                                   0x80000000U, 0xFFFFFFFFU, 0x40000001U};
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        t_record(buf);
        pbx_le_put32(buf + T_OFF_PAGE_SIZE, bad[i]);
        t_reseal(buf);
        PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_PAGE_SIZE);
    }
}

PBX_TEST(bootstrap_reject_malformed_type_layout)
{
    static const pbx_bootstrap_type_layout bad[] = {
        {0, 1},       {1, 0},     {12, 3},          {12, 8},
        {8192, 8192}, {65537, 1}, {4, 0x80000000U},
    };
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        t_record(buf);
        pbx_le_put32(buf + t_pool_off(3, 4), bad[i].record_size_bytes);
        pbx_le_put32(buf + t_pool_off(3, 8), bad[i].record_align_bytes);
        t_reseal(buf);
        PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_TYPE_LAYOUT);
    }
}

PBX_TEST(bootstrap_reject_bad_call_window)
{
    static const uint32_t bad[] = {0U, PBX_BOOTSTRAP_CALL_WINDOW_MAX + 1U,
                                   0x80000000U, 0xFFFFFFFFU};
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        t_record(buf);
        pbx_le_put32(buf + T_OFF_WINDOW, bad[i]);
        t_reseal(buf);
        PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_WINDOW);
        pbx_bootstrap_geometry g;
        t_geometry(&g);
        g.call_window = bad[i];
        PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_E_BOOTSTRAP_WINDOW);
    }
    /* The largest window is valid with a calls pool that holds it. */
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    g.call_window = PBX_BOOTSTRAP_CALL_WINDOW_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] =
        PBX_BOOTSTRAP_CALL_ROUTES * PBX_BOOTSTRAP_CALL_WINDOW_MAX;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
    g.call_window = 1U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
}

PBX_TEST(bootstrap_reject_window_over_calls_pool)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    /* 16 per route on 3 routes is 48: one call short in the pool, or one
     * more in the window, fails. */
    t_record(buf);
    pbx_le_put32(buf + t_pool_off(PBX_BOOTSTRAP_POOL_CALLS, 0), 47U);
    t_reseal(buf);
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_WINDOW_CALLS);
    t_record(buf);
    pbx_le_put32(buf + T_OFF_WINDOW, T_WINDOW + 1U);
    t_reseal(buf);
    PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_WINDOW_CALLS);
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * 16U - 1U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g),
                 PBX_E_BOOTSTRAP_WINDOW_CALLS);
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_RECORDS_MAX;
    g.call_window = PBX_BOOTSTRAP_CALL_WINDOW_MAX;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
    /* The window is checked before it is compared with the pool. */
    g.call_window = 0U;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = 1U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_E_BOOTSTRAP_WINDOW);
}

PBX_TEST(bootstrap_reject_bad_deadline)
{
    static const uint32_t bad[] = {0U, PBX_BOOTSTRAP_TIME_MS_MAX + 1U,
                                   0xFFFFFFFFU};
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    for (unsigned t = 0; t < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
            t_record(buf);
            pbx_le_put32(buf + T_OFF_TIME + (size_t)4U * t, bad[i]);
            t_reseal(buf);
            PBX_CHECK_EQ(t_parse(buf, sizeof(buf)), PBX_E_BOOTSTRAP_TIME);
            pbx_bootstrap_geometry g;
            t_geometry(&g);
            g.time_ms[t] = bad[i];
            PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g),
                         PBX_E_BOOTSTRAP_TIME);
            /* The window and its pool are checked before any deadline. */
            g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = 1U;
            PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g),
                         PBX_E_BOOTSTRAP_WINDOW_CALLS);
        }
        /* Both ends of the range are valid. */
        pbx_bootstrap_geometry g;
        t_geometry(&g);
        g.time_ms[t] = 1U;
        PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
        g.time_ms[t] = PBX_BOOTSTRAP_TIME_MS_MAX;
        PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_OK);
    }
    PBX_CHECK(
        strcmp(pbx_bootstrap_time_name(PBX_BOOTSTRAP_TIME_VFSD), "vfsd") == 0);
    PBX_CHECK(
        strcmp(pbx_bootstrap_time_name(PBX_BOOTSTRAP_TIME_OPEN), "open") == 0);
    PBX_CHECK(
        strcmp(pbx_bootstrap_time_name(PBX_BOOTSTRAP_TIME_IDLE), "idle") == 0);
    PBX_CHECK(strcmp(pbx_bootstrap_time_name(PBX_BOOTSTRAP_TIME_COUNT),
                     "unknown") == 0);
}

/* The calls section is checked after the pools and their totals. */
PBX_TEST(bootstrap_calls_checked_after_pools)
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    g.call_window = 0U;
    g.time_ms[0] = 0U;
    g.capacity[3] = 0U;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g),
                 PBX_E_BOOTSTRAP_CAPACITY_ZERO);
    g.capacity[3] = 16U;
    g.arena_page_count = 0xFFFFFFFFU;
    PBX_CHECK_EQ(pbx_bootstrap_geometry_check(&g), PBX_E_BOOTSTRAP_TOTAL);
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    memset(buf, 0x3C, sizeof(buf));
    t_geometry(&g);
    g.time_ms[PBX_BOOTSTRAP_TIME_PROMPT] = 0U;
    PBX_CHECK_EQ(pbx_bootstrap_encode(&g, buf, sizeof(buf)),
                 PBX_E_BOOTSTRAP_TIME);
    PBX_CHECK_EQ(buf[0], 0x3CU);
    pbx_bootstrap_layout l;
    PBX_CHECK_EQ(pbx_bootstrap_layout_derive(&g, t_layouts, &l),
                 PBX_E_BOOTSTRAP_TIME);
    uint32_t pages = 0U;
    PBX_CHECK_EQ(pbx_bootstrap_pages_compute(&g, &pages), PBX_E_BOOTSTRAP_TIME);
}

PBX_TEST(bootstrap_encode_rejects_and_writes_nothing)
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES + 1];
    memset(buf, 0x3C, sizeof(buf));
    PBX_CHECK_EQ(pbx_bootstrap_encode(&g, buf, sizeof(buf)),
                 PBX_E_BOOTSTRAP_LENGTH);
    g.capacity[4] = 0U;
    PBX_CHECK_EQ(pbx_bootstrap_encode(&g, buf, PBX_BOOTSTRAP_RECORD_BYTES),
                 PBX_E_BOOTSTRAP_CAPACITY_ZERO);
    for (size_t i = 0; i < sizeof(buf); i++) {
        PBX_CHECK_EQ(buf[i], 0x3CU);
    }
}

PBX_TEST(bootstrap_derive_default_layout)
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    pbx_bootstrap_layout l;
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, t_layouts, &l) == PBX_OK);
    /* Hand-computed from the table above: requests at 0 (6144 bytes),
     * selector bytes at 6144 (4096), grants at 10240 (4096), and so on. */
    PBX_CHECK_EQ(l.pools[0].offset_bytes, 0U);
    PBX_CHECK_EQ(l.pools[0].size_bytes, 6144U);
    PBX_CHECK_EQ(l.pools[1].offset_bytes, 6144U);
    PBX_CHECK_EQ(l.pools[1].size_bytes, 4096U);
    PBX_CHECK_EQ(l.pools[2].offset_bytes, 10240U);
    PBX_CHECK_EQ(l.pools[4].offset_bytes, 15104U);
    PBX_CHECK_EQ(l.pools[6].offset_bytes, 17408U);
    PBX_CHECK_EQ(l.pools[8].offset_bytes, 24576U);
    PBX_CHECK_EQ(l.pools[9].offset_bytes, 25600U);
    PBX_CHECK_EQ(l.pools[9].size_bytes, 2688U);
    PBX_CHECK_EQ(l.used_bytes, 28288U);
    PBX_CHECK_EQ(l.page_size_bytes, 4096U);
    PBX_CHECK_EQ(l.page_count, 7U);
    PBX_CHECK_EQ(l.arena_bytes, 28672U);
    PBX_CHECK_EQ(g.arena_page_count, 7U);
}

PBX_TEST(bootstrap_derive_rejects_layout_mismatch_per_pool)
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    for (unsigned p = 0; p < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        for (unsigned field = 0; field < 2U; field++) {
            pbx_bootstrap_type_layout exp[PBX_BOOTSTRAP_POOL_COUNT];
            memcpy(exp, t_layouts, sizeof(exp));
            if (field == 0U) {
                exp[p].record_size_bytes += exp[p].record_align_bytes;
            } else {
                exp[p].record_align_bytes *= 2U;
            }
            pbx_bootstrap_layout l;
            memset(&l, 0x5A, sizeof(l));
            pbx_err err = pbx_bootstrap_layout_derive(&g, exp, &l);
            pbx_bootstrap_pool which = PBX_BOOTSTRAP_POOL_COUNT;
            PBX_CHECK(pbx_bootstrap_mismatch_pool(err, &which));
            PBX_CHECK_EQ(which, p);
            PBX_CHECK(strstr(pbx_err_text(err),
                             pbx_bootstrap_pool_name(which)) != NULL);
            PBX_CHECK_EQ(((const uint8_t *)&l)[0], 0x5AU);
        }
    }
    pbx_bootstrap_pool which = PBX_BOOTSTRAP_POOL_RESOLUTIONS;
    PBX_CHECK(!pbx_bootstrap_mismatch_pool(PBX_E_BOOTSTRAP_TOTAL, &which));
    PBX_CHECK_EQ(which, PBX_BOOTSTRAP_POOL_RESOLUTIONS);
    PBX_CHECK(strcmp(pbx_bootstrap_pool_name(PBX_BOOTSTRAP_POOL_COUNT),
                     "unknown") == 0);
}

PBX_TEST(bootstrap_derive_rejects_page_extent_mismatch)
{
    pbx_bootstrap_geometry g;
    t_geometry(&g);
    pbx_bootstrap_layout l;
    static const uint32_t deltas[] = {1U, 0xFFFFFFFFU};
    for (size_t i = 0; i < PBX_ARRAY_LEN(deltas); i++) {
        t_geometry(&g);
        g.arena_page_count += deltas[i];
        PBX_CHECK_EQ(pbx_bootstrap_layout_derive(&g, t_layouts, &l),
                     PBX_E_BOOTSTRAP_PAGE_EXTENT);
    }
    g.arena_page_count = 0U;
    PBX_CHECK_EQ(pbx_bootstrap_layout_derive(&g, t_layouts, &l),
                 PBX_E_BOOTSTRAP_PAGE_EXTENT);
}

/* Builds a random valid-shaped geometry from the generator state. */
static void t_random_geometry(uint64_t *rng, pbx_bootstrap_geometry *g)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = 4096U << (pbx_test_rng_next(rng) % 5U);
    for (unsigned p = 0; p < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        uint32_t align = 1U << (pbx_test_rng_next(rng) % 8U);
        uint32_t units = 1U + (uint32_t)(pbx_test_rng_next(rng) % 64U);
        g->layout[p].record_align_bytes = align;
        g->layout[p].record_size_bytes = align * units;
        g->capacity[p] = 1U + (uint32_t)(pbx_test_rng_next(rng) % 3000U);
    }
    uint32_t calls = g->capacity[PBX_BOOTSTRAP_POOL_CALLS];
    if (calls < PBX_BOOTSTRAP_CALL_ROUTES) {
        calls = PBX_BOOTSTRAP_CALL_ROUTES;
        g->capacity[PBX_BOOTSTRAP_POOL_CALLS] = calls;
    }
    g->call_window = 1U + (uint32_t)(pbx_test_rng_next(rng) %
                                     (calls / PBX_BOOTSTRAP_CALL_ROUTES));
    for (unsigned t = 0; t < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g->time_ms[t] =
            1U + (uint32_t)(pbx_test_rng_next(rng) % PBX_BOOTSTRAP_TIME_MS_MAX);
    }
}

/* Checks that every pool is aligned, sized exactly, in order and disjoint,
 * and that the page extent covers the pools with less than a page spare. */
static void t_check_layout(const pbx_bootstrap_geometry *g,
                           const pbx_bootstrap_layout *l)
{
    size_t prev_end = 0U;
    for (unsigned p = 0; p < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        const pbx_bootstrap_pool_extent *e = &l->pools[p];
        PBX_CHECK_EQ(e->offset_bytes % g->layout[p].record_align_bytes, 0U);
        PBX_CHECK(e->offset_bytes >= prev_end);
        PBX_CHECK(e->offset_bytes - prev_end < g->layout[p].record_align_bytes);
        PBX_CHECK_EQ(e->size_bytes,
                     (size_t)g->capacity[p] * g->layout[p].record_size_bytes);
        PBX_CHECK_EQ(e->capacity, g->capacity[p]);
        prev_end = e->offset_bytes + e->size_bytes;
    }
    PBX_CHECK_EQ(l->used_bytes, prev_end);
    PBX_CHECK_EQ(l->arena_bytes, l->page_count * l->page_size_bytes);
    PBX_CHECK(l->arena_bytes >= l->used_bytes);
    PBX_CHECK(l->arena_bytes - l->used_bytes < l->page_size_bytes);
    PBX_CHECK(l->arena_bytes <= PBX_BOOTSTRAP_ARENA_BYTES_MAX);
}

PBX_TEST(bootstrap_random_layouts_aligned_and_disjoint)
{
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    for (unsigned iter = 0; iter < 500U; iter++) {
        pbx_bootstrap_geometry g;
        t_random_geometry(&rng, &g);
        uint32_t pages = 0;
        PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &pages) == PBX_OK);
        g.arena_page_count = pages;
        uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
        PBX_REQUIRE(pbx_bootstrap_encode(&g, buf, sizeof(buf)) == PBX_OK);
        pbx_bootstrap_geometry p;
        PBX_REQUIRE(pbx_bootstrap_parse(buf, sizeof(buf), &p) == PBX_OK);
        PBX_CHECK_EQ(p.call_window, g.call_window);
        PBX_CHECK_MEM(p.time_ms, g.time_ms, sizeof(g.time_ms));
        pbx_bootstrap_layout l;
        PBX_REQUIRE(pbx_bootstrap_layout_derive(&p, g.layout, &l) == PBX_OK);
        t_check_layout(&p, &l);
    }
}
