/*
 * pbx_sha2_x86.c: SHA-256 compression on the x86 SHA extensions, written
 * from Intel's descriptions of SHA256RNDS2, SHA256MSG1 and SHA256MSG2 in
 * the Intel 64 and IA-32 Architectures Software Developer's Manual
 * (volume 2) and Intel's white paper "Intel SHA Extensions".
 *
 * The instructions keep the eight working variables in two registers:
 * ABEF holds A, B, E, F from the high lane down, CDGH holds C, D, G, H.
 * SHA256RNDS2 runs two rounds: it takes CDGH, ABEF and, in the low two
 * lanes of its implicit operand, W[t] + K[t] for the two rounds, and
 * returns the new ABEF; the old ABEF is then the new CDGH, so the two
 * registers swap roles every call. SHA256MSG1 and SHA256MSG2 compute four
 * new schedule words from the sixteen before them (FIPS 180-4 6.2.2 step
 * 1): MSG1 adds sigma0 of the next word to each of W[t-16..t-13], the
 * caller adds W[t-7..t-4], and MSG2 adds sigma1 of W[t-2] and W[t-1],
 * including the two words it computes itself.
 *
 * No header beyond the compiler's is used (the tree is freestanding): the
 * vector type is the GNU vector extension and the instructions are the
 * compiler's builtins, enabled for these functions alone by a target
 * attribute, so the rest of the tree keeps the baseline instruction set.
 * Callers must check pbx_sha2_x86_supported first.
 */
#include "sha2/pbx_sha2_x86.h"

#if PBX_SHA2_X86

/** Four 32-bit lanes, lane 0 in the low bits (the x86 element order). */
typedef uint32_t pbx_v4u __attribute__((vector_size(16)));
/** Four signed 32-bit lanes: the operand type of the SHA builtins. */
typedef int pbx_v4i __attribute__((vector_size(16)));
/** Sixteen bytes, for the byte shuffle of the big-endian load. */
typedef uint8_t pbx_v16b __attribute__((vector_size(16)));
/** The same sixteen bytes with no alignment, for loads from the input. */
typedef uint8_t pbx_v16b_u
    __attribute__((vector_size(16), aligned(1), may_alias));
/** Four lanes with no alignment, for the hash words and constants. */
typedef uint32_t pbx_v4u_u
    __attribute__((vector_size(16), aligned(1), may_alias));

/** The target attribute: the instructions this file's code may use. */
#define PBX_SHA2_X86_TARGET __attribute__((target("sha,sse4.1,ssse3")))

/* FIPS 180-4 section 4.2.2, the same constants as pbx_sha2.c. */
static const uint32_t pbx_sha2_x86_k[64] = {
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

/** CPUID leaf 1 ECX: SSSE3 (PSHUFB, PALIGNR). */
#define PBX_SHA2_X86_ECX1_SSSE3 (1U << 9)
/** CPUID leaf 1 ECX: SSE4.1 (PBLENDW). */
#define PBX_SHA2_X86_ECX1_SSE41 (1U << 19)
/** CPUID leaf 7 subleaf 0 EBX: the SHA extensions. */
#define PBX_SHA2_X86_EBX7_SHA (1U << 29)

/* One CPUID query; out receives EAX, EBX, ECX, EDX. */
static void pbx_sha2_x86_cpuid(uint32_t leaf, uint32_t sub, uint32_t out[4])
{
    uint32_t a = 0;
    uint32_t b = 0;
    uint32_t c = 0;
    uint32_t d = 0;
    __asm__ volatile("cpuid"
                     : "=a"(a), "=b"(b), "=c"(c), "=d"(d)
                     : "a"(leaf), "c"(sub));
    out[0] = a;
    out[1] = b;
    out[2] = c;
    out[3] = d;
}

bool pbx_sha2_x86_supported(void)
{
    uint32_t r[4];
    pbx_sha2_x86_cpuid(0, 0, r);
    /* Leaf 7 exists only when leaf 0 reports it as within range. */
    if (r[0] < 7U) {
        return false;
    }
    pbx_sha2_x86_cpuid(1, 0, r);
    uint32_t need1 = PBX_SHA2_X86_ECX1_SSSE3 | PBX_SHA2_X86_ECX1_SSE41;
    if ((r[2] & need1) != need1) {
        return false;
    }
    pbx_sha2_x86_cpuid(7, 0, r);
    return (r[1] & PBX_SHA2_X86_EBX7_SHA) != 0U;
}

/* Loads four message words: the block's bytes are big-endian words, so
 * each lane's four bytes are reversed (one PSHUFB). */
PBX_SHA2_X86_TARGET static inline pbx_v4u pbx_sha2_x86_load(const uint8_t *p)
{
    pbx_v16b b = *(const pbx_v16b_u *)(const void *)p;
    return (pbx_v4u)__builtin_shufflevector(b, b, 3, 2, 1, 0, 7, 6, 5, 4, 11,
                                            10, 9, 8, 15, 14, 13, 12);
}

/* Four rounds from t = 4 * quad: W + K for the four, the low pair to the
 * first SHA256RNDS2 and the high pair (moved down) to the second. */
PBX_SHA2_X86_TARGET static inline void
pbx_sha2_x86_rounds(pbx_v4u *abef, pbx_v4u *cdgh, pbx_v4u w, unsigned quad)
{
    pbx_v4u wk = w + *(const pbx_v4u_u *)(const void *)(pbx_sha2_x86_k +
                                                        (size_t)4U * quad);
    pbx_v4u hi = __builtin_shufflevector(wk, wk, 2, 3, 2, 3);
    *cdgh = (pbx_v4u)__builtin_ia32_sha256rnds2((pbx_v4i)*cdgh, (pbx_v4i)*abef,
                                                (pbx_v4i)wk);
    *abef = (pbx_v4u)__builtin_ia32_sha256rnds2((pbx_v4i)*abef, (pbx_v4i)*cdgh,
                                                (pbx_v4i)hi);
}

/* The next four schedule words from the last sixteen, oldest first in w0:
 * MSG1(w0, w1) gives W[t-16..t-13] + sigma0(W[t-15..t-12]); adding
 * W[t-7..t-4] (the upper three lanes of w2 and the lowest of w3) and
 * MSG2 with w3 (W[t-2] and W[t-1] in its upper lanes) finishes them. */
PBX_SHA2_X86_TARGET static inline pbx_v4u
pbx_sha2_x86_next(pbx_v4u w0, pbx_v4u w1, pbx_v4u w2, pbx_v4u w3)
{
    pbx_v4u s = (pbx_v4u)__builtin_ia32_sha256msg1((pbx_v4i)w0, (pbx_v4i)w1);
    s += __builtin_shufflevector(w2, w3, 1, 2, 3, 4);
    return (pbx_v4u)__builtin_ia32_sha256msg2((pbx_v4i)s, (pbx_v4i)w3);
}

/* The 64 rounds of one block on the running ABEF and CDGH registers. */
PBX_SHA2_X86_TARGET static void pbx_sha2_x86_block(pbx_v4u *abef, pbx_v4u *cdgh,
                                                   const uint8_t *block)
{
    pbx_v4u w0 = pbx_sha2_x86_load(block);
    pbx_v4u w1 = pbx_sha2_x86_load(block + 16);
    pbx_v4u w2 = pbx_sha2_x86_load(block + 32);
    pbx_v4u w3 = pbx_sha2_x86_load(block + 48);
    pbx_sha2_x86_rounds(abef, cdgh, w0, 0);
    pbx_sha2_x86_rounds(abef, cdgh, w1, 1);
    pbx_sha2_x86_rounds(abef, cdgh, w2, 2);
    pbx_sha2_x86_rounds(abef, cdgh, w3, 3);
    /* Rounds 16 to 63: three passes of four quads; each quad replaces
     * the oldest four schedule words, so the names rotate back after
     * four. */
    for (unsigned q = 4; q < 16U; q += 4U) {
        w0 = pbx_sha2_x86_next(w0, w1, w2, w3);
        pbx_sha2_x86_rounds(abef, cdgh, w0, q);
        w1 = pbx_sha2_x86_next(w1, w2, w3, w0);
        pbx_sha2_x86_rounds(abef, cdgh, w1, q + 1U);
        w2 = pbx_sha2_x86_next(w2, w3, w0, w1);
        pbx_sha2_x86_rounds(abef, cdgh, w2, q + 2U);
        w3 = pbx_sha2_x86_next(w3, w0, w1, w2);
        pbx_sha2_x86_rounds(abef, cdgh, w3, q + 3U);
    }
}

PBX_SHA2_X86_TARGET void pbx_sha2_x86_blocks(uint32_t state[8],
                                             const uint8_t *data, size_t blocks)
{
    /* state is A..D and E..H, lane 0 first; the instructions want ABEF
     * (lanes F, E, B, A) and CDGH (lanes H, G, D, C). */
    pbx_v4u abcd = *(const pbx_v4u_u *)(const void *)state;
    pbx_v4u efgh = *(const pbx_v4u_u *)(const void *)(state + 4);
    pbx_v4u abef = __builtin_shufflevector(abcd, efgh, 5, 4, 1, 0);
    pbx_v4u cdgh = __builtin_shufflevector(abcd, efgh, 7, 6, 3, 2);
    /* One pass per block: the loop runs exactly blocks times. */
    for (size_t i = 0; i < blocks; i++) {
        pbx_v4u save_abef = abef;
        pbx_v4u save_cdgh = cdgh;
        pbx_sha2_x86_block(&abef, &cdgh, data + 64U * i);
        abef += save_abef;
        cdgh += save_cdgh;
    }
    abcd = __builtin_shufflevector(abef, cdgh, 3, 2, 7, 6);
    efgh = __builtin_shufflevector(abef, cdgh, 1, 0, 5, 4);
    *(pbx_v4u_u *)(void *)state = abcd;
    *(pbx_v4u_u *)(void *)(state + 4) = efgh;
}

#else
/* ISO C wants at least one declaration in a translation unit. */
typedef int pbx_sha2_x86_absent;
#endif
