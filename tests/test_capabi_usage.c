/*
 * test_capabi_usage.c: the USAGE query and report of slot 4
 * (capabi/pbx_capabi_usage.c): exact bytes, round trips, every
 * truncation, every malformed field refused with its own error in the
 * documented order, nothing written on an encode error, and the magic
 * alone telling a query from an attach.
 */
#include "capabi/pbx_capabi.h"
#include "runner/pbx_test.h"

#include <string.h>

/* A report whose every count differs, used <= capacity. */
static pbx_capabi_usage usage_sample(void)
{
    pbx_capabi_usage u;
    memset(&u, 0, sizeof(u));
    u.nonce = 0xA1B2C3D4U;
    u.status = 0U;
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        u.used[i] = i * 3U;
        u.capacity[i] = 100U + i;
    }
    u.fds = 27U;
    u.log_dropped = 0xFFFFFFFFU;
    return u;
}

/* The report of usage_sample, encoded. */
static void usage_report(uint8_t buf[PBX_CAPABI_USAGE_REPORT_BYTES])
{
    pbx_capabi_usage u = usage_sample();
    PBX_REQUIRE(pbx_capabi_usage_encode(
                    &u, buf, PBX_CAPABI_USAGE_REPORT_BYTES) == PBX_OK);
}

PBX_TEST(capabi_usage_query_round_trips_with_its_exact_bytes)
{
    static const uint8_t want[PBX_CAPABI_USAGE_QUERY_BYTES] = {
        'P', 'B', 'X', 'U', 1, 0, 0, 0, 0x78, 0x56, 0x34, 0x12, 0, 0, 0, 0};
    uint8_t buf[PBX_CAPABI_USAGE_QUERY_BYTES];
    uint32_t nonce = 0;
    PBX_REQUIRE(pbx_capabi_usage_query_encode(0x12345678U, buf, sizeof(buf)) ==
                PBX_OK);
    PBX_CHECK_MEM(buf, want, sizeof(want));
    PBX_CHECK_EQ(pbx_capabi_usage_query_decode(buf, sizeof(buf), 0U, &nonce),
                 PBX_OK);
    PBX_CHECK_EQ(nonce, 0x12345678U);
    PBX_CHECK(pbx_capabi_usage_is_query(buf, sizeof(buf)));
}

PBX_TEST(capabi_usage_magic_alone_tells_a_query_from_an_attach)
{
    uint8_t q[PBX_CAPABI_USAGE_QUERY_BYTES];
    uint8_t a[PBX_CAPABI_ATTACH_BYTES];
    pbx_capabi_attach at = {PBX_CAPABI_ROUTE_TTYD, 7U};
    PBX_REQUIRE(pbx_capabi_usage_query_encode(1U, q, sizeof(q)) == PBX_OK);
    PBX_REQUIRE(pbx_capabi_attach_encode(&at, a, sizeof(a)) == PBX_OK);
    PBX_CHECK(!pbx_capabi_usage_is_query(a, sizeof(a)));
    /* The magic decides even for a query of the wrong length, so that
     * one is refused as a query; three bytes are no query at all. */
    for (size_t len = 4U; len <= sizeof(q); len++) {
        PBX_CHECK(pbx_capabi_usage_is_query(q, len));
    }
    for (size_t len = 0U; len < 4U; len++) {
        PBX_CHECK(!pbx_capabi_usage_is_query(q, len));
    }
    PBX_CHECK(!pbx_capabi_usage_is_query(NULL, 0U));
    for (size_t i = 0; i < 4U; i++) {
        PBX_REQUIRE(pbx_capabi_usage_query_encode(1U, q, sizeof(q)) == PBX_OK);
        q[i] ^= 0x20U;
        PBX_CHECK(!pbx_capabi_usage_is_query(q, sizeof(q)));
    }
}

PBX_TEST(capabi_usage_query_decode_refuses_every_malformed_form_in_order)
{
    uint8_t buf[PBX_CAPABI_USAGE_QUERY_BYTES + 8U];
    uint32_t nonce = 0;
    memset(buf, 0, sizeof(buf));
    PBX_REQUIRE(pbx_capabi_usage_query_encode(0xCAFEF00DU, buf, sizeof(buf)) ==
                PBX_OK);
    /* Every truncation and one byte too many: the length, and the nonce
     * echoed only when its bytes were there. */
    for (size_t len = 0; len <= PBX_CAPABI_USAGE_QUERY_BYTES + 1U; len++) {
        if (len == PBX_CAPABI_USAGE_QUERY_BYTES) {
            continue;
        }
        nonce = 99U;
        PBX_CHECK_EQ(pbx_capabi_usage_query_decode(buf, len, 0U, &nonce),
                     PBX_E_CAPABI_USAGE_LENGTH);
        PBX_CHECK_EQ(nonce, len >= 12U ? 0xCAFEF00DU : 0U);
    }
    PBX_CHECK_EQ(pbx_capabi_usage_query_decode(NULL, 0U, 0U, &nonce),
                 PBX_E_CAPABI_USAGE_LENGTH);
    /* Each byte of magic, version and both reserved fields, flipped. */
    for (size_t i = 0; i < PBX_CAPABI_USAGE_QUERY_BYTES; i++) {
        if (i >= 8U && i < 12U) {
            continue; /* The nonce: any value is valid. */
        }
        PBX_REQUIRE(pbx_capabi_usage_query_encode(5U, buf, sizeof(buf)) ==
                    PBX_OK);
        buf[i] ^= 0x01U;
        pbx_err want = i < 4U   ? PBX_E_CAPABI_USAGE_MAGIC
                       : i < 6U ? PBX_E_CAPABI_USAGE_VERSION
                                : PBX_E_CAPABI_USAGE_RESERVED;
        PBX_CHECK_EQ(pbx_capabi_usage_query_decode(
                         buf, PBX_CAPABI_USAGE_QUERY_BYTES, 0U, &nonce),
                     want);
        PBX_CHECK_EQ(nonce, 5U);
    }
    PBX_REQUIRE(pbx_capabi_usage_query_encode(5U, buf, sizeof(buf)) == PBX_OK);
    static const uint32_t bad_counts[] = {1U, 2U, 16U, 0xFFFFFFFFU};
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad_counts); i++) {
        PBX_CHECK_EQ(pbx_capabi_usage_query_decode(buf,
                                                   PBX_CAPABI_USAGE_QUERY_BYTES,
                                                   bad_counts[i], &nonce),
                     PBX_E_CAPABI_USAGE_COUNT);
    }
    /* Order: the version hides the count, the length hides the magic. */
    buf[4] = 2U;
    PBX_CHECK_EQ(pbx_capabi_usage_query_decode(
                     buf, PBX_CAPABI_USAGE_QUERY_BYTES, 1U, &nonce),
                 PBX_E_CAPABI_USAGE_VERSION);
    buf[0] ^= 1U;
    PBX_CHECK_EQ(pbx_capabi_usage_query_decode(
                     buf, PBX_CAPABI_USAGE_QUERY_BYTES, 1U, &nonce),
                 PBX_E_CAPABI_USAGE_MAGIC);
    PBX_CHECK_EQ(pbx_capabi_usage_query_decode(buf, 15U, 1U, &nonce),
                 PBX_E_CAPABI_USAGE_LENGTH);
}

PBX_TEST(capabi_usage_query_encode_refuses_a_short_buffer)
{
    uint8_t buf[PBX_CAPABI_USAGE_QUERY_BYTES + 1U];
    memset(buf, 0xAA, sizeof(buf));
    PBX_CHECK_EQ(pbx_capabi_usage_query_encode(
                     1U, buf, PBX_CAPABI_USAGE_QUERY_BYTES - 1U),
                 PBX_E_CAPABI_USAGE_LENGTH);
    for (size_t i = 0; i < sizeof(buf); i++) {
        PBX_CHECK_EQ(buf[i], 0xAAU);
    }
    PBX_CHECK_EQ(pbx_capabi_usage_query_encode(1U, buf, sizeof(buf)), PBX_OK);
    PBX_CHECK_EQ(buf[PBX_CAPABI_USAGE_QUERY_BYTES], 0xAAU);
}

PBX_TEST(capabi_usage_report_round_trips_with_its_exact_layout)
{
    uint8_t buf[PBX_CAPABI_USAGE_REPORT_BYTES];
    pbx_capabi_usage want = usage_sample();
    pbx_capabi_usage got;
    memset(&got, 0, sizeof(got));
    usage_report(buf);
    PBX_CHECK_EQ(PBX_CAPABI_USAGE_REPORT_BYTES, 104U);
    PBX_CHECK_MEM(buf, "PBXu", 4U);
    PBX_CHECK_EQ(pbx_le_get16(buf + 4), 1U);
    PBX_CHECK_EQ(pbx_le_get16(buf + 6), 0U);
    PBX_CHECK_EQ(pbx_le_get32(buf + 8), 0xA1B2C3D4U);
    PBX_CHECK_EQ(pbx_le_get32(buf + 12), 0U);
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        PBX_CHECK_EQ(pbx_le_get32(buf + 16U + (size_t)8U * i), i * 3U);
        PBX_CHECK_EQ(pbx_le_get32(buf + 20U + (size_t)8U * i), 100U + i);
    }
    PBX_CHECK_EQ(pbx_le_get32(buf + 96), 27U);
    PBX_CHECK_EQ(pbx_le_get32(buf + 100), 0xFFFFFFFFU);
    PBX_CHECK_EQ(pbx_capabi_usage_decode(buf, sizeof(buf), &got), PBX_OK);
    PBX_CHECK_MEM(&got, &want, sizeof(want));
    /* A refusal's report carries its status as sent. */
    want.status = (uint32_t)PBX_E_CAPABI_USAGE_COUNT;
    PBX_REQUIRE(pbx_capabi_usage_encode(&want, buf, sizeof(buf)) == PBX_OK);
    PBX_CHECK_EQ(pbx_capabi_usage_decode(buf, sizeof(buf), &got), PBX_OK);
    PBX_CHECK_EQ(got.status, (uint32_t)PBX_E_CAPABI_USAGE_COUNT);
}

PBX_TEST(capabi_usage_report_decode_refuses_every_malformed_form)
{
    uint8_t buf[PBX_CAPABI_USAGE_REPORT_BYTES + 8U];
    pbx_capabi_usage got;
    pbx_capabi_usage untouched;
    memset(buf, 0, sizeof(buf));
    memset(&untouched, 0x5A, sizeof(untouched));
    usage_report(buf);
    /* Split at every offset: each prefix, and one byte too many. */
    for (size_t len = 0; len <= PBX_CAPABI_USAGE_REPORT_BYTES + 1U; len++) {
        if (len == PBX_CAPABI_USAGE_REPORT_BYTES) {
            continue;
        }
        got = untouched;
        PBX_CHECK_EQ(pbx_capabi_usage_decode(buf, len, &got),
                     PBX_E_CAPABI_USAGE_LENGTH);
        PBX_CHECK_MEM(&got, &untouched, sizeof(got));
    }
    PBX_CHECK_EQ(pbx_capabi_usage_decode(NULL, 0U, &got),
                 PBX_E_CAPABI_USAGE_LENGTH);
    for (size_t i = 0; i < 8U; i++) {
        usage_report(buf);
        buf[i] ^= 0x02U;
        pbx_err want = i < 4U   ? PBX_E_CAPABI_USAGE_MAGIC
                       : i < 6U ? PBX_E_CAPABI_USAGE_VERSION
                                : PBX_E_CAPABI_USAGE_RESERVED;
        got = untouched;
        PBX_CHECK_EQ(
            pbx_capabi_usage_decode(buf, PBX_CAPABI_USAGE_REPORT_BYTES, &got),
            want);
        PBX_CHECK_MEM(&got, &untouched, sizeof(got));
    }
    /* A pool counting more in use than it holds, each pool alone. */
    for (uint32_t p = 0; p < PBX_CAPABI_USAGE_POOLS; p++) {
        usage_report(buf);
        pbx_le_put32(buf + 16U + (size_t)8U * p, 101U + p);
        got = untouched;
        PBX_CHECK_EQ(
            pbx_capabi_usage_decode(buf, PBX_CAPABI_USAGE_REPORT_BYTES, &got),
            PBX_E_CAPABI_USAGE_RANGE);
        PBX_CHECK_MEM(&got, &untouched, sizeof(got));
        /* Exactly full is valid. */
        pbx_le_put32(buf + 16U + (size_t)8U * p, 100U + p);
        PBX_CHECK_EQ(
            pbx_capabi_usage_decode(buf, PBX_CAPABI_USAGE_REPORT_BYTES, &got),
            PBX_OK);
    }
    /* A query is no report, and a report is no query. */
    PBX_REQUIRE(pbx_capabi_usage_query_encode(1U, buf, sizeof(buf)) == PBX_OK);
    PBX_CHECK_EQ(
        pbx_capabi_usage_decode(buf, PBX_CAPABI_USAGE_REPORT_BYTES, &got),
        PBX_E_CAPABI_USAGE_MAGIC);
    usage_report(buf);
    PBX_CHECK(!pbx_capabi_usage_is_query(buf, PBX_CAPABI_USAGE_REPORT_BYTES));
}

PBX_TEST(capabi_usage_report_encode_refuses_without_writing)
{
    uint8_t buf[PBX_CAPABI_USAGE_REPORT_BYTES + 1U];
    pbx_capabi_usage u = usage_sample();
    memset(buf, 0xAA, sizeof(buf));
    PBX_CHECK_EQ(
        pbx_capabi_usage_encode(&u, buf, PBX_CAPABI_USAGE_REPORT_BYTES - 1U),
        PBX_E_CAPABI_USAGE_LENGTH);
    u.used[PBX_CAPABI_USAGE_POOLS - 1U] =
        u.capacity[PBX_CAPABI_USAGE_POOLS - 1U] + 1U;
    PBX_CHECK_EQ(pbx_capabi_usage_encode(&u, buf, sizeof(buf)),
                 PBX_E_CAPABI_USAGE_RANGE);
    for (size_t i = 0; i < sizeof(buf); i++) {
        PBX_CHECK_EQ(buf[i], 0xAAU);
    }
    u = usage_sample();
    PBX_CHECK_EQ(pbx_capabi_usage_encode(&u, buf, sizeof(buf)), PBX_OK);
    PBX_CHECK_EQ(buf[PBX_CAPABI_USAGE_REPORT_BYTES], 0xAAU);
}

PBX_TEST(capabi_usage_pool_names_are_distinct_and_in_pbx1_order)
{
    static const char *const want[PBX_CAPABI_USAGE_POOLS] = {
        "requests", "selector_chunks", "grants",
        "prompts",  "policies",        "decisions",
        "tslots",   "resolutions",     "notifications",
        "calls"};
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        PBX_CHECK(strcmp(pbx_capabi_usage_pool_name(i), want[i]) == 0);
    }
    static const pbx_err errs[] = {
        PBX_E_CAPABI_USAGE_LENGTH,  PBX_E_CAPABI_USAGE_MAGIC,
        PBX_E_CAPABI_USAGE_VERSION, PBX_E_CAPABI_USAGE_RESERVED,
        PBX_E_CAPABI_USAGE_COUNT,   PBX_E_CAPABI_USAGE_RANGE};
    for (size_t i = 0; i < PBX_ARRAY_LEN(errs); i++) {
        PBX_CHECK(strncmp(pbx_err_name(errs[i]), "PBX_E_CAPABI_USAGE_", 19) ==
                  0);
        for (size_t j = i + 1U; j < PBX_ARRAY_LEN(errs); j++) {
            PBX_CHECK(errs[i] != errs[j]);
        }
    }
}
