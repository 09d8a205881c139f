/*
 * pbx_sha2.c: SHA-256, written from FIPS 180-4 sections 4.1.2, 4.2.2,
 * 5.1.1, 5.3.3 and 6.2.
 *
 * The message is absorbed in 64-byte blocks; a partial block waits in the
 * context. Words are big-endian on the wire, so this file has its own two
 * big-endian helpers rather than using the little-endian ones from base.
 */
#include "sha2/pbx_sha2.h"

#include "sha2/pbx_sha2_x86.h"

/* Section 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t pbx_sha2_k[64] = {
    0x428A2F98U, 0x71374491U, 0xB5C0FBCFU, 0xE9B5DBA5U, 0x3956C25BU,
    0x59F111F1U, 0x923F82A4U, 0xAB1C5ED5U, 0xD807AA98U, 0x12835B01U,
    0x243185BEU, 0x550C7DC3U, 0x72BE5D74U, 0x80DEB1FEU, 0x9BDC06A7U,
    0xC19BF174U, 0xE49B69C1U, 0xEFBE4786U, 0x0FC19DC6U, 0x240CA1CCU,
    0x2DE92C6FU, 0x4A7484AAU, 0x5CB0A9DCU, 0x76F988DAU, 0x983E5152U,
    0xA831C66DU, 0xB00327C8U, 0xBF597FC7U, 0xC6E00BF3U, 0xD5A79147U,
    0x06CA6351U, 0x14292967U, 0x27B70A85U, 0x2E1B2138U, 0x4D2C6DFCU,
    0x53380D13U, 0x650A7354U, 0x766A0ABBU, 0x81C2C92EU, 0x92722C85U,
    0xA2BFE8A1U, 0xA81A664BU, 0xC24B8B70U, 0xC76C51A3U, 0xD192E819U,
    0xD6990624U, 0xF40E3585U, 0x106AA070U, 0x19A4C116U, 0x1E376C08U,
    0x2748774CU, 0x34B0BCB5U, 0x391C0CB3U, 0x4ED8AA4AU, 0x5B9CCA4FU,
    0x682E6FF3U, 0x748F82EEU, 0x78A5636FU, 0x84C87814U, 0x8CC70208U,
    0x90BEFFFAU, 0xA4506CEBU, 0xBEF9A3F7U, 0xC67178F2U,
};

/* Section 5.3.3: the first 32 bits of the fractional parts of the square
 * roots of the first 8 primes. */
static const uint32_t pbx_sha2_h0[8] = {
    0x6A09E667U, 0xBB67AE85U, 0x3C6EF372U, 0xA54FF53AU,
    0x510E527FU, 0x9B05688CU, 0x1F83D9ABU, 0x5BE0CD19U,
};

_Static_assert(PBX_ARRAY_LEN(pbx_sha2_k) == 64U, "64 round constants");
_Static_assert(PBX_SHA2_BLOCK_BYTES == 64U, "SHA-256 block is 512 bits");
_Static_assert(PBX_SHA2_DIGEST_BYTES == sizeof(pbx_sha2_h0),
               "digest is the eight hash words");
_Static_assert(PBX_SHA2_MESSAGE_BYTES_MAX <= UINT64_MAX / 8U,
               "the bit length of the longest message fits in 64 bits");

static uint32_t pbx_sha2_rotr(uint32_t x, unsigned n)
{
    return (x >> n) | (x << (32U - n));
}

static uint32_t pbx_sha2_be_get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) |
           ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static void pbx_sha2_be_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)((v >> 16) & 0xFFU);
    p[2] = (uint8_t)((v >> 8) & 0xFFU);
    p[3] = (uint8_t)(v & 0xFFU);
}

/* Section 6.2.2 step 1: the message schedule W0..W63 of one block. */
static void pbx_sha2_schedule(const uint8_t *block, uint32_t w[64])
{
    for (size_t t = 0; t < 16U; t++) {
        w[t] = pbx_sha2_be_get32(block + 4U * t);
    }
    for (unsigned t = 16; t < 64U; t++) {
        uint32_t s0 = pbx_sha2_rotr(w[t - 15U], 7) ^
                      pbx_sha2_rotr(w[t - 15U], 18) ^ (w[t - 15U] >> 3);
        uint32_t s1 = pbx_sha2_rotr(w[t - 2U], 17) ^
                      pbx_sha2_rotr(w[t - 2U], 19) ^ (w[t - 2U] >> 10);
        w[t] = s1 + w[t - 7U] + s0 + w[t - 16U];
    }
}

/* Section 6.2.2 steps 2 to 4: the 64 rounds over one block, folded into
 * the running hash words. */
static void pbx_sha2_compress(uint32_t state[8], const uint8_t *block)
{
    uint32_t w[64];
    uint32_t v[8];
    pbx_sha2_schedule(block, w);
    for (unsigned i = 0; i < 8U; i++) {
        v[i] = state[i];
    }
    for (unsigned t = 0; t < 64U; t++) {
        uint32_t s1 = pbx_sha2_rotr(v[4], 6) ^ pbx_sha2_rotr(v[4], 11) ^
                      pbx_sha2_rotr(v[4], 25);
        uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
        uint32_t t1 = v[7] + s1 + ch + pbx_sha2_k[t] + w[t];
        uint32_t s0 = pbx_sha2_rotr(v[0], 2) ^ pbx_sha2_rotr(v[0], 13) ^
                      pbx_sha2_rotr(v[0], 22);
        uint32_t maj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
        uint32_t t2 = s0 + maj;
        v[7] = v[6];
        v[6] = v[5];
        v[5] = v[4];
        v[4] = v[3] + t1;
        v[3] = v[2];
        v[2] = v[1];
        v[1] = v[0];
        v[0] = t1 + t2;
    }
    for (unsigned i = 0; i < 8U; i++) {
        state[i] += v[i];
    }
}

/* The path every compression takes; portable until pbx_sha2_select or
 * pbx_sha2_path_set chooses another at startup. */
static pbx_sha2_path pbx_sha2_active = PBX_SHA2_PATH_PORTABLE;

/* Folds n whole blocks at data into state on the current path. */
static void pbx_sha2_blocks(uint32_t state[8], const uint8_t *data, size_t n)
{
#if PBX_SHA2_X86
    if (pbx_sha2_active == PBX_SHA2_PATH_X86_SHA) {
        pbx_sha2_x86_blocks(state, data, n);
        return;
    }
#endif
    /* One pass per block: bounded by n. */
    for (size_t i = 0; i < n; i++) {
        pbx_sha2_compress(state, data + PBX_SHA2_BLOCK_BYTES * i);
    }
}

bool pbx_sha2_path_available(pbx_sha2_path path)
{
    if (path == PBX_SHA2_PATH_PORTABLE) {
        return true;
    }
#if PBX_SHA2_X86
    if (path == PBX_SHA2_PATH_X86_SHA) {
        return pbx_sha2_x86_supported();
    }
#endif
    return false;
}

pbx_err pbx_sha2_path_set(pbx_sha2_path path)
{
    if (!pbx_sha2_path_available(path)) {
        return PBX_E_SHA2_PATH;
    }
    pbx_sha2_active = path;
    return PBX_OK;
}

pbx_sha2_path pbx_sha2_select(void)
{
    pbx_sha2_active = pbx_sha2_path_available(PBX_SHA2_PATH_X86_SHA)
                          ? PBX_SHA2_PATH_X86_SHA
                          : PBX_SHA2_PATH_PORTABLE;
    return pbx_sha2_active;
}

pbx_sha2_path pbx_sha2_path_current(void)
{
    return pbx_sha2_active;
}

void pbx_sha2_init(pbx_sha2_ctx *ctx)
{
    PBX_ASSERT(ctx != NULL);
    pbx_mem_set(ctx, 0, sizeof(*ctx));
    for (unsigned i = 0; i < 8U; i++) {
        ctx->state[i] = pbx_sha2_h0[i];
    }
    ctx->live = PBX_SHA2_LIVE;
}

pbx_err pbx_sha2_update(pbx_sha2_ctx *ctx, const uint8_t *data, size_t len)
{
    PBX_ASSERT(ctx != NULL && ctx->live == PBX_SHA2_LIVE);
    PBX_ASSERT(len == 0U || data != NULL);
    PBX_ASSERT(ctx->block_len < PBX_SHA2_BLOCK_BYTES);
    /* Check first: the new total must stay within the FIPS 180-4 limit.
     * Comparing against the remaining room avoids any overflow. */
    if ((uint64_t)len > PBX_SHA2_MESSAGE_BYTES_MAX - ctx->total_bytes) {
        return PBX_E_SHA2_LENGTH;
    }
    if (len == 0U) {
        return PBX_OK;
    }
    ctx->total_bytes += (uint64_t)len;
    size_t pos = 0;
    /* Top up a waiting partial block first. */
    if (ctx->block_len != 0U) {
        size_t room = PBX_SHA2_BLOCK_BYTES - ctx->block_len;
        size_t take = len < room ? len : room;
        pbx_mem_copy(ctx->block + ctx->block_len, data, take);
        ctx->block_len += (uint32_t)take;
        pos = take;
        if (ctx->block_len < PBX_SHA2_BLOCK_BYTES) {
            return PBX_OK;
        }
        pbx_sha2_blocks(ctx->state, ctx->block, 1);
        ctx->block_len = 0;
    }
    /* Whole blocks straight from the input, in one call so a fast path
     * keeps the hash words in registers across them. */
    size_t whole = (len - pos) / PBX_SHA2_BLOCK_BYTES;
    /* The bytes left after them, fewer than a block: computed as the
     * remainder (equal to len - pos after the blocks), a bound make eva's
     * intervals keep, so block_len < PBX_SHA2_BLOCK_BYTES is proven. */
    size_t rest = (len - pos) % PBX_SHA2_BLOCK_BYTES;
    pbx_sha2_blocks(ctx->state, data + pos, whole);
    pos += whole * PBX_SHA2_BLOCK_BYTES;
    pbx_mem_copy(ctx->block, data + pos, rest);
    ctx->block_len = (uint32_t)rest;
    return PBX_OK;
}

void pbx_sha2_final(pbx_sha2_ctx *ctx, uint8_t out[PBX_SHA2_DIGEST_BYTES])
{
    PBX_ASSERT(ctx != NULL && ctx->live == PBX_SHA2_LIVE);
    PBX_ASSERT(out != NULL);
    PBX_ASSERT(ctx->block_len < PBX_SHA2_BLOCK_BYTES);
    /* Section 5.1.1: a single 1 bit, zeros up to 56 bytes into the last
     * block, then the message length in bits as a 64-bit big-endian
     * number. When fewer than 9 bytes are left, padding spills into one
     * more block. */
    uint64_t bits = ctx->total_bytes * 8U;
    uint32_t n = ctx->block_len;
    ctx->block[n] = 0x80U;
    n++;
    if (n > PBX_SHA2_BLOCK_BYTES - 8U) {
        pbx_mem_set(ctx->block + n, 0, PBX_SHA2_BLOCK_BYTES - n);
        pbx_sha2_blocks(ctx->state, ctx->block, 1);
        n = 0;
    }
    pbx_mem_set(ctx->block + n, 0, PBX_SHA2_BLOCK_BYTES - 8U - n);
    pbx_sha2_be_put32(ctx->block + 56, (uint32_t)(bits >> 32));
    pbx_sha2_be_put32(ctx->block + 60, (uint32_t)(bits & 0xFFFFFFFFU));
    pbx_sha2_blocks(ctx->state, ctx->block, 1);
    for (size_t i = 0; i < 8U; i++) {
        pbx_sha2_be_put32(out + 4U * i, ctx->state[i]);
    }
    /* Leave nothing of the message or the hash state behind. */
    pbx_mem_set(ctx, 0, sizeof(*ctx));
}

pbx_err pbx_sha2_digest(const uint8_t *data, size_t len,
                        uint8_t out[PBX_SHA2_DIGEST_BYTES])
{
    pbx_sha2_ctx ctx;
    PBX_ASSERT(out != NULL);
    pbx_sha2_init(&ctx);
    pbx_err err = pbx_sha2_update(&ctx, data, len);
    if (err != PBX_OK) {
        pbx_mem_set(&ctx, 0, sizeof(ctx));
        return err;
    }
    pbx_sha2_final(&ctx, out);
    return PBX_OK;
}

bool pbx_sha2_digest_equal(const uint8_t a[PBX_SHA2_DIGEST_BYTES],
                           const uint8_t b[PBX_SHA2_DIGEST_BYTES])
{
    PBX_ASSERT(a != NULL && b != NULL);
    return pbx_mem_equal(a, b, PBX_SHA2_DIGEST_BYTES);
}
