/*
 * fuzz_sha2.c: libFuzzer harness for SHA-256 streaming against one-shot.
 *
 * Input layout: byte 0 is the number of split points (at most 15), the
 * next that many bytes are the piece lengths (each 0..255, taken in turn;
 * the last piece is the rest), the remainder is the message. The message
 * is hashed once with pbx_sha2_digest and once through pbx_sha2_update in
 * those pieces (empty pieces included, so block-boundary carries and
 * zero-length updates are both exercised); the two digests must be
 * equal, and pbx_sha2_digest_equal must agree with memcmp on them and on
 * a digest with one bit flipped. A difference aborts.
 */
#include "sha2/pbx_sha2.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* At most this many split points per input; more add nothing. */
#define FUZZ_SHA2_SPLITS_MAX 15U

/* Hashes msg in the pieces lens[0..n) then the rest, into out. */
static void fuzz_sha2_stream(const uint8_t *msg, size_t len,
                             const uint8_t *lens, size_t n,
                             uint8_t out[PBX_SHA2_DIGEST_BYTES])
{
    pbx_sha2_ctx ctx;
    size_t off = 0;
    pbx_sha2_init(&ctx);
    for (size_t i = 0; i < n; i++) {
        size_t piece = lens[i];
        if (piece > len - off) {
            piece = len - off;
        }
        if (pbx_sha2_update(&ctx, piece == 0U ? NULL : msg + off, piece) !=
            PBX_OK) {
            abort();
        }
        off += piece;
    }
    if (pbx_sha2_update(&ctx, len == off ? NULL : msg + off, len - off) !=
        PBX_OK) {
        abort();
    }
    pbx_sha2_final(&ctx, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t one[PBX_SHA2_DIGEST_BYTES];
    uint8_t streamed[PBX_SHA2_DIGEST_BYTES];
    if (size == 0U) {
        return 0;
    }
    size_t n = data[0] % (FUZZ_SHA2_SPLITS_MAX + 1U);
    if (n > size - 1U) {
        n = size - 1U;
    }
    const uint8_t *lens = data + 1;
    const uint8_t *msg = data + 1 + n;
    size_t len = size - 1U - n;
    if (pbx_sha2_digest(len == 0U ? NULL : msg, len, one) != PBX_OK) {
        abort();
    }
    fuzz_sha2_stream(msg, len, lens, n, streamed);
    if (memcmp(one, streamed, sizeof(one)) != 0 ||
        !pbx_sha2_digest_equal(one, streamed)) {
        abort();
    }
    streamed[len % PBX_SHA2_DIGEST_BYTES] ^= (uint8_t)(1U << (len % 8U));
    if (pbx_sha2_digest_equal(one, streamed)) {
        abort();
    }
    return 0;
}
