/*
 * test_sha2.c: SHA-256 against the FIPS 180-4 examples, NIST CAVP short
 * and long message vectors, every way of splitting the input across
 * updates, the length limit, and the system's sha256sum as an oracle for
 * every length from 0 to 1,100 bytes. Each vector and split test runs on
 * every compression path this CPU has (SHA2_PATH_TEST), the portable one
 * and the x86 SHA extensions, each forced in turn.
 */
#include "runner/pbx_test.h"
#include "sha2/pbx_sha2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Runs body once on each available compression path, forcing each with
 * pbx_sha2_path_set, and restores the path that was current. A CPU
 * without the x86 extensions runs the portable path only (the runner's
 * output says so once). */
static void sha2_on_each_path(void (*body)(void))
{
    static const pbx_sha2_path paths[] = {PBX_SHA2_PATH_PORTABLE,
                                          PBX_SHA2_PATH_X86_SHA};
    pbx_sha2_path was = pbx_sha2_path_current();
    static bool told;
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        if (!pbx_sha2_path_available(paths[i])) {
            if (!told) {
                (void)fprintf(stderr,
                              "test_sha2: path %d not available "
                              "here; tested the others\n",
                              (int)paths[i]);
                told = true;
            }
            continue;
        }
        PBX_REQUIRE(pbx_sha2_path_set(paths[i]) == PBX_OK);
        PBX_REQUIRE(pbx_sha2_path_current() == paths[i]);
        body();
    }
    PBX_REQUIRE(pbx_sha2_path_set(was) == PBX_OK);
}

/* SHA2_PATH_TEST(name) defines test name whose body runs on each path. */
#define SHA2_PATH_TEST(name)                                                   \
    static void name##_on_path(void);                                          \
    PBX_TEST(name)                                                             \
    {                                                                          \
        sha2_on_each_path(name##_on_path);                                     \
    }                                                                          \
    static void name##_on_path(void)

/* Returns the value of one lower-case hex digit, or 16 for any other
 * character. */
static unsigned hex_nibble(char c)
{
    if (c >= '0' && c <= '9') {
        return (unsigned)(c - '0');
    }
    if (c >= 'a' && c <= 'f') {
        return (unsigned)(c - 'a') + 10U;
    }
    return 16U;
}

/* Decodes a lower-case hex string of at most 2 * cap digits into out and
 * returns the byte count; ends the test on a malformed literal. */
static size_t hex_decode(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = strlen(hex);
    PBX_REQUIRE(n % 2U == 0U && n / 2U <= cap);
    for (size_t i = 0; i < n / 2U; i++) {
        unsigned hi = hex_nibble(hex[2U * i]);
        unsigned lo = hex_nibble(hex[(2U * i) + 1U]);
        PBX_REQUIRE(hi < 16U && lo < 16U);
        out[i] = (uint8_t)((hi << 4) | lo);
    }
    return n / 2U;
}

/* Checks the one-shot digest of msg against the hex digest want. */
static void check_digest(const uint8_t *msg, size_t len, const char *want)
{
    uint8_t expect[PBX_SHA2_DIGEST_BYTES];
    uint8_t got[PBX_SHA2_DIGEST_BYTES];
    PBX_REQUIRE(hex_decode(want, expect, sizeof(expect)) == sizeof(expect));
    PBX_CHECK_EQ(pbx_sha2_digest(msg, len, got), PBX_OK);
    PBX_CHECK_MEM(got, expect, sizeof(expect));
}

static void check_text(const char *msg, const char *want)
{
    check_digest((const uint8_t *)msg, strlen(msg), want);
}

/* A deterministic byte pattern for the long vectors below. */
static void fill_pattern(uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        buf[i] = (uint8_t)(((i * 131U) + 7U) ^ (i >> 3));
    }
}

static const char fips_448[] =
    "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
static const char fips_896[] =
    "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
    "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";

SHA2_PATH_TEST(sha2_fips_examples)
{
    check_text("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b"
                   "7852b855");
    check_text("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff"
                      "61f20015ad");
    check_text(fips_448, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6e"
                         "cedd419db06c1");
    check_text(fips_896, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afa"
                         "c45037afee9d1");
}

SHA2_PATH_TEST(sha2_million_a)
{
    uint8_t chunk[1000];
    uint8_t got[PBX_SHA2_DIGEST_BYTES];
    uint8_t want[PBX_SHA2_DIGEST_BYTES];
    pbx_sha2_ctx ctx;
    memset(chunk, 'a', sizeof(chunk));
    pbx_sha2_init(&ctx);
    for (int i = 0; i < 1000; i++) {
        PBX_REQUIRE(pbx_sha2_update(&ctx, chunk, sizeof(chunk)) == PBX_OK);
    }
    pbx_sha2_final(&ctx, got);
    hex_decode(
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0",
        want, sizeof(want));
    PBX_CHECK_MEM(got, want, sizeof(want));
}

/* NIST CAVP SHA256ShortMsg.rsp (byte-oriented), first lengths. */
SHA2_PATH_TEST(sha2_cavp_short)
{
    static const char *const vec[][2] = {
        {"d3",
         "28969cdfa74a12c82f3bad960b0b000aca2ac329deea5c2328ebc6f2ba9802c1"},
        {"11af",
         "5ca7133fa735326081558ac312c620eeca9970d1e70a4b95533d956f072d1f98"},
        {"b4190e",
         "dff2e73091f6c05e528896c4c831b9448653dc2ff043528f6769437bc7b975c2"},
        {"74ba2521",
         "b16aa56be3880d18cd41e68384cf1ec8c17680c45a02b1575dc1518923ae8b0e"},
        {"c299209682",
         "f0887fe961c9cd3beab957e8222494abb969b1ce4c6557976df8b0f6d20e9166"},
        {"e1dc724d5621",
         "eca0a060b489636225b4fa64d267dabbe44273067ac679f20820bddc6b6a90ac"},
        {"06e076f5a442d5",
         "3fd877e27450e6bbd5d74bb82f9870c64c66e109418baa8e6bbcff355e287926"},
        {"5738c929c4f4ccb6",
         "963bb88f27f512777aab6c8b1a02c70ec0ad651d428f870036e1917120fb48bf"},
    };
    for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
        uint8_t msg[16];
        size_t n = hex_decode(vec[i][0], msg, sizeof(msg));
        check_digest(msg, n, vec[i][1]);
    }
}

/* NIST CAVP SHA256LongMsg.rsp, Len = 1304 bits. */
SHA2_PATH_TEST(sha2_cavp_long)
{
    static const char msg_hex[] =
        "451101250ec6f26652249d59dc974b7361d571a8101cdfd36aba3b5854d3ae08"
        "6b5fdd4597721b66e3c0dc5d8c606d9657d0e323283a5217d1f53f2f284f57b8"
        "5c8a61ac8924711f895c5ed90ef17745ed2d728abd22a5f7a13479a462d71b56"
        "c19a74a40b655c58edfe0a188ad2cf46cbf30524f65d423c837dd1ff2bf462ac"
        "4198007345bb44dbb7b1c861298cdf61982a833afc728fae1eda2f87aa2c9480"
        "858bec";
    uint8_t msg[163];
    PBX_REQUIRE(hex_decode(msg_hex, msg, sizeof(msg)) == 163U);
    check_digest(msg, 163,
                 "3c593aa539fdcdae516cdf2f15000f6634185c88f505b39775fb9ab137a"
                 "10aa2");
}

/* Multi-block messages around block and page boundaries, digests taken
 * from the system's sha256sum over the same pattern. */
SHA2_PATH_TEST(sha2_long_pattern)
{
    static uint8_t buf[4097];
    fill_pattern(buf, sizeof(buf));
    check_digest(buf, 1000,
                 "3fec874244848bfca7c32ea872a9449045e958ee839d5b32f9cbfe3e855"
                 "e1739");
    check_digest(buf, 4095,
                 "89464574e7fbcea00a98970c9f91676cc4b1a77b7059850e38d599cb306"
                 "1e2a2");
    check_digest(buf, 4097,
                 "71a094938088260888f5c1063615562a325b02c64baa3d94a576cba031f"
                 "81102");
}

/* Hashes msg as the concatenation of up to three updates split at a and
 * b (a <= b <= len) and compares with the one-shot digest. */
static bool split_matches(const uint8_t *msg, size_t len, size_t a, size_t b,
                          const uint8_t *want)
{
    uint8_t got[PBX_SHA2_DIGEST_BYTES];
    pbx_sha2_ctx ctx;
    pbx_sha2_init(&ctx);
    bool ok = pbx_sha2_update(&ctx, msg, a) == PBX_OK &&
              pbx_sha2_update(&ctx, msg + a, b - a) == PBX_OK &&
              pbx_sha2_update(&ctx, msg + b, len - b) == PBX_OK;
    pbx_sha2_final(&ctx, got);
    return ok && memcmp(got, want, sizeof(got)) == 0;
}

SHA2_PATH_TEST(sha2_every_two_way_split)
{
    static uint8_t buf[300];
    const size_t lens[] = {sizeof(fips_896) - 1U, 128, 200, 300};
    fill_pattern(buf, sizeof(buf));
    memcpy(buf, fips_896, sizeof(fips_896) - 1U);
    for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
        uint8_t want[PBX_SHA2_DIGEST_BYTES];
        size_t bad = 0;
        PBX_REQUIRE(pbx_sha2_digest(buf, lens[k], want) == PBX_OK);
        for (size_t a = 0; a <= lens[k]; a++) {
            bad += split_matches(buf, lens[k], a, a, want) ? 0U : 1U;
        }
        PBX_CHECK_EQ(bad, 0U);
    }
}

SHA2_PATH_TEST(sha2_every_three_way_split_200)
{
    uint8_t buf[200];
    uint8_t want[PBX_SHA2_DIGEST_BYTES];
    size_t bad = 0;
    size_t runs = 0;
    fill_pattern(buf, sizeof(buf));
    PBX_REQUIRE(pbx_sha2_digest(buf, sizeof(buf), want) == PBX_OK);
    for (size_t a = 0; a <= sizeof(buf); a++) {
        for (size_t b = a; b <= sizeof(buf); b++) {
            bad += split_matches(buf, sizeof(buf), a, b, want) ? 0U : 1U;
            runs++;
        }
    }
    PBX_CHECK_EQ(bad, 0U);
    PBX_CHECK_EQ(runs, 201U * 202U / 2U);
}

SHA2_PATH_TEST(sha2_byte_at_a_time_and_empty_updates)
{
    uint8_t got[PBX_SHA2_DIGEST_BYTES];
    uint8_t want[PBX_SHA2_DIGEST_BYTES];
    pbx_sha2_ctx ctx;
    pbx_sha2_init(&ctx);
    PBX_CHECK_EQ(pbx_sha2_update(&ctx, NULL, 0), PBX_OK);
    for (size_t i = 0; i < sizeof(fips_896) - 1U; i++) {
        PBX_CHECK_EQ(pbx_sha2_update(&ctx, (const uint8_t *)fips_896 + i, 1),
                     PBX_OK);
        PBX_CHECK_EQ(pbx_sha2_update(&ctx, NULL, 0), PBX_OK);
    }
    pbx_sha2_final(&ctx, got);
    PBX_CHECK_EQ(
        pbx_sha2_digest((const uint8_t *)fips_896, sizeof(fips_896) - 1U, want),
        PBX_OK);
    PBX_CHECK_MEM(got, want, sizeof(want));
}

SHA2_PATH_TEST(sha2_init_ignores_old_contents_and_final_wipes)
{
    uint8_t got[PBX_SHA2_DIGEST_BYTES];
    uint8_t want[PBX_SHA2_DIGEST_BYTES];
    uint8_t zero[sizeof(pbx_sha2_ctx)];
    pbx_sha2_ctx ctx;
    memset(&ctx, 0xA5, sizeof(ctx));
    memset(zero, 0, sizeof(zero));
    pbx_sha2_init(&ctx);
    PBX_CHECK_EQ(pbx_sha2_update(&ctx, (const uint8_t *)"abc", 3), PBX_OK);
    pbx_sha2_final(&ctx, got);
    PBX_CHECK_MEM(&ctx, zero, sizeof(ctx));
    hex_decode(
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        want, sizeof(want));
    PBX_CHECK_MEM(got, want, sizeof(want));
}

SHA2_PATH_TEST(sha2_context_copy_forks_the_computation)
{
    uint8_t got1[PBX_SHA2_DIGEST_BYTES];
    uint8_t got2[PBX_SHA2_DIGEST_BYTES];
    uint8_t want[PBX_SHA2_DIGEST_BYTES];
    pbx_sha2_ctx a;
    pbx_sha2_ctx b;
    pbx_sha2_init(&a);
    PBX_CHECK_EQ(pbx_sha2_update(&a, (const uint8_t *)"ab", 2), PBX_OK);
    b = a;
    PBX_CHECK_EQ(pbx_sha2_update(&a, (const uint8_t *)"c", 1), PBX_OK);
    PBX_CHECK_EQ(pbx_sha2_update(&b, (const uint8_t *)"c", 1), PBX_OK);
    pbx_sha2_final(&a, got1);
    pbx_sha2_final(&b, got2);
    PBX_CHECK_EQ(pbx_sha2_digest((const uint8_t *)"abc", 3, want), PBX_OK);
    PBX_CHECK_MEM(got1, want, sizeof(want));
    PBX_CHECK_MEM(got2, want, sizeof(want));
}

/* The FIPS 180-4 length limit: the context refuses to pass 2^61 - 1
 * bytes, unchanged, and still finalises a message of exactly that length.
 * The byte counter is preset because hashing 2^61 bytes is impossible. */
PBX_TEST(sha2_length_limit)
{
    uint8_t got[PBX_SHA2_DIGEST_BYTES];
    pbx_sha2_ctx ctx;
    pbx_sha2_ctx before;
    pbx_sha2_init(&ctx);
    ctx.total_bytes = PBX_SHA2_MESSAGE_BYTES_MAX - 3U;
    before = ctx;
    PBX_CHECK_EQ(pbx_sha2_update(&ctx, (const uint8_t *)"abcd", 4),
                 PBX_E_SHA2_LENGTH);
    PBX_CHECK_MEM(&ctx, &before, sizeof(ctx));
    PBX_CHECK_EQ(pbx_sha2_update(&ctx, (const uint8_t *)"abc", 3), PBX_OK);
    PBX_CHECK_EQ(ctx.total_bytes, PBX_SHA2_MESSAGE_BYTES_MAX);
    PBX_CHECK_EQ(pbx_sha2_update(&ctx, (const uint8_t *)"a", 1),
                 PBX_E_SHA2_LENGTH);
    PBX_CHECK_EQ(pbx_sha2_update(&ctx, NULL, 0), PBX_OK);
    pbx_sha2_final(&ctx, got);
    PBX_CHECK_EQ(ctx.live, 0U);
    if (sizeof(size_t) >= sizeof(uint64_t)) {
        uint8_t untouched[PBX_SHA2_DIGEST_BYTES];
        memset(got, 0x3C, sizeof(got));
        memset(untouched, 0x3C, sizeof(untouched));
        PBX_CHECK_EQ(pbx_sha2_digest((const uint8_t *)"x",
                                     (size_t)PBX_SHA2_MESSAGE_BYTES_MAX + 1U,
                                     got),
                     PBX_E_SHA2_LENGTH);
        PBX_CHECK_MEM(got, untouched, sizeof(got));
    }
}

PBX_TEST(sha2_digest_equal_constant_time_compare)
{
    uint8_t a[PBX_SHA2_DIGEST_BYTES];
    uint8_t b[PBX_SHA2_DIGEST_BYTES];
    PBX_REQUIRE(pbx_sha2_digest((const uint8_t *)"abc", 3, a) == PBX_OK);
    memcpy(b, a, sizeof(b));
    PBX_CHECK(pbx_sha2_digest_equal(a, b));
    for (size_t i = 0; i < sizeof(b); i++) {
        for (unsigned bit = 0; bit < 8U; bit++) {
            b[i] ^= (uint8_t)(1U << bit);
            PBX_CHECK(!pbx_sha2_digest_equal(a, b));
            b[i] ^= (uint8_t)(1U << bit);
        }
    }
    PBX_CHECK(pbx_sha2_digest_equal(a, b));
}

/* The path switch itself: select picks the extensions exactly where they
 * are available, and a path that is unknown or unavailable is refused
 * with nothing changed. */
PBX_TEST(sha2_path_select_and_refusal)
{
    pbx_sha2_path was = pbx_sha2_path_current();
    bool x86 = pbx_sha2_path_available(PBX_SHA2_PATH_X86_SHA);
    PBX_CHECK(pbx_sha2_path_available(PBX_SHA2_PATH_PORTABLE));
    PBX_CHECK_EQ(pbx_sha2_select(),
                 x86 ? PBX_SHA2_PATH_X86_SHA : PBX_SHA2_PATH_PORTABLE);
    PBX_CHECK_EQ(pbx_sha2_path_set(PBX_SHA2_PATH_PORTABLE), PBX_OK);
    PBX_CHECK_EQ(pbx_sha2_path_set((pbx_sha2_path)7), PBX_E_SHA2_PATH);
    PBX_CHECK_EQ(pbx_sha2_path_current(), PBX_SHA2_PATH_PORTABLE);
    PBX_CHECK_EQ(pbx_sha2_path_set(PBX_SHA2_PATH_X86_SHA),
                 x86 ? PBX_OK : PBX_E_SHA2_PATH);
    PBX_CHECK_EQ(pbx_sha2_path_current(),
                 x86 ? PBX_SHA2_PATH_X86_SHA : PBX_SHA2_PATH_PORTABLE);
    PBX_REQUIRE(pbx_sha2_path_set(was) == PBX_OK);
}
