/*
 * test_sha2_paths.c: the x86 SHA-extension path against the portable
 * path on pseudo-random messages, lengths and split points.
 *
 * The generator is seeded with a constant, so every run hashes the same
 * messages and a failure names a reproducible case. The tests pass
 * trivially on a CPU without the extensions (they say so): there is only
 * one path to compare.
 */
#include "runner/pbx_test.h"
#include "sha2/pbx_sha2.h"

#include <stdio.h>
#include <string.h>

enum { PATHS_LEN_MAX = 4200, PATHS_CASES = 3000 };

static uint8_t paths_msg[PATHS_LEN_MAX];

/* Hashes len bytes of paths_msg on path in up to three updates split at
 * a <= b <= len; false when the path cannot be set or an update fails. */
static bool paths_digest(pbx_sha2_path path, size_t len, size_t a, size_t b,
                         uint8_t out[PBX_SHA2_DIGEST_BYTES])
{
    pbx_sha2_ctx ctx;
    if (pbx_sha2_path_set(path) != PBX_OK) {
        return false;
    }
    pbx_sha2_init(&ctx);
    bool ok = pbx_sha2_update(&ctx, paths_msg, a) == PBX_OK &&
              pbx_sha2_update(&ctx, paths_msg + a, b - a) == PBX_OK &&
              pbx_sha2_update(&ctx, paths_msg + b, len - b) == PBX_OK;
    pbx_sha2_final(&ctx, out);
    return ok;
}

/* Reports whether the extensions are here, and says so when not. */
static bool paths_have_x86(void)
{
    if (pbx_sha2_path_available(PBX_SHA2_PATH_X86_SHA)) {
        return true;
    }
    (void)fprintf(stderr, "test_sha2_paths: no x86 SHA extensions here; "
                          "nothing to compare\n");
    return false;
}

PBX_TEST(sha2_paths_agree_on_random_messages_and_splits)
{
    uint64_t rng = 0x5348412D4E49ULL;
    pbx_sha2_path was = pbx_sha2_path_current();
    size_t bad = 0;
    if (!paths_have_x86()) {
        return;
    }
    for (size_t i = 0; i < PATHS_LEN_MAX; i++) {
        paths_msg[i] = (uint8_t)(pbx_test_rng_next(&rng) >> 56);
    }
    for (size_t c = 0; c < PATHS_CASES; c++) {
        uint8_t a_out[PBX_SHA2_DIGEST_BYTES];
        uint8_t b_out[PBX_SHA2_DIGEST_BYTES];
        size_t len = (size_t)(pbx_test_rng_next(&rng) % (PATHS_LEN_MAX + 1U));
        size_t a = (size_t)(pbx_test_rng_next(&rng) % (len + 1U));
        size_t b = a + (size_t)(pbx_test_rng_next(&rng) % (len - a + 1U));
        /* Each case also changes one byte, so the messages differ. */
        paths_msg[pbx_test_rng_next(&rng) % PATHS_LEN_MAX] ^= 0x5AU;
        PBX_REQUIRE(paths_digest(PBX_SHA2_PATH_PORTABLE, len, a, b, a_out));
        PBX_REQUIRE(paths_digest(PBX_SHA2_PATH_X86_SHA, len, a, b, b_out));
        if (memcmp(a_out, b_out, sizeof(a_out)) != 0) {
            pbx_test_failf(__FILE__, __LINE__,
                           "case %zu: len %zu split %zu/%zu differs", c, len, a,
                           b);
            bad++;
        }
    }
    PBX_REQUIRE(pbx_sha2_path_set(was) == PBX_OK);
    PBX_CHECK_EQ(bad, 0U);
}

/* Every length up to five blocks in one update, and the x86 path's block
 * loop over many blocks at once against the portable one. */
PBX_TEST(sha2_paths_agree_on_every_short_length)
{
    uint64_t rng = 0x0123456789ABCDEFULL;
    pbx_sha2_path was = pbx_sha2_path_current();
    size_t bad = 0;
    if (!paths_have_x86()) {
        return;
    }
    for (size_t i = 0; i < PATHS_LEN_MAX; i++) {
        paths_msg[i] = (uint8_t)(pbx_test_rng_next(&rng) >> 56);
    }
    for (size_t len = 0; len <= 320U; len++) {
        uint8_t a_out[PBX_SHA2_DIGEST_BYTES];
        uint8_t b_out[PBX_SHA2_DIGEST_BYTES];
        PBX_REQUIRE(paths_digest(PBX_SHA2_PATH_PORTABLE, len, 0, 0, a_out));
        PBX_REQUIRE(paths_digest(PBX_SHA2_PATH_X86_SHA, len, 0, 0, b_out));
        bad += memcmp(a_out, b_out, sizeof(a_out)) == 0 ? 0U : 1U;
    }
    PBX_REQUIRE(pbx_sha2_path_set(was) == PBX_OK);
    PBX_CHECK_EQ(bad, 0U);
}
