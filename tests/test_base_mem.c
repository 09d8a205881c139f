/*
 * test_base_mem.c: base's word-sized pbx_mem_copy and pbx_mem_set against a
 * byte-wise reference, at every length 0..300 and every alignment 0..15 of
 * each pointer, with guard bytes on both sides of every destination (issue
 * 23 item 5: the word loops must be exact for every length and alignment,
 * never touching a byte outside the range).
 */
#include "../base/pbx_base.h"
#include "runner/pbx_test.h"

/** MEM_LEN_MAX is the longest length tried. */
#define MEM_LEN_MAX 300U
/** MEM_ALIGN is the number of alignments tried for each pointer. */
#define MEM_ALIGN 16U
/** MEM_GUARD is the guard room on each side of a destination. */
#define MEM_GUARD 32U
/** MEM_BUF is one buffer: guard, alignment room, range, guard. */
#define MEM_BUF (MEM_GUARD + MEM_ALIGN + MEM_LEN_MAX + MEM_GUARD)

/* Fills buf with a pattern that differs from byte to byte and by seed, so
 * that a copy from the wrong offset or a stray write shows. */
static void mem_pattern(uint8_t *buf, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        buf[i] = (uint8_t)((i * 131U + (size_t)seed * 7U + (i >> 8)) & 0xFFU);
    }
}

/* Counts the bytes where a and b differ. */
static size_t mem_diff(const uint8_t *a, const uint8_t *b, size_t n)
{
    size_t d = 0;
    for (size_t i = 0; i < n; i++) {
        d += a[i] != b[i] ? 1U : 0U;
    }
    return d;
}

PBX_TEST(base_mem_copy_every_length_and_alignment)
{
    static uint8_t src[MEM_BUF];
    static uint8_t dst[MEM_BUF];
    static uint8_t want[MEM_BUF];
    size_t bad_cases = 0;
    size_t first_len = 0;
    size_t first_da = 0;
    size_t first_sa = 0;
    mem_pattern(src, sizeof(src), 1U);
    for (size_t len = 0; len <= MEM_LEN_MAX; len++) {
        for (size_t da = 0; da < MEM_ALIGN; da++) {
            for (size_t sa = 0; sa < MEM_ALIGN; sa++) {
                const uint8_t *s = src + MEM_GUARD + sa;
                mem_pattern(dst, sizeof(dst), 2U + (uint32_t)len);
                mem_pattern(want, sizeof(want), 2U + (uint32_t)len);
                for (size_t i = 0; i < len; i++) {
                    want[MEM_GUARD + da + i] = s[i];
                }
                pbx_mem_copy(dst + MEM_GUARD + da, s, len);
                if (mem_diff(dst, want, sizeof(dst)) != 0U) {
                    if (bad_cases == 0U) {
                        first_len = len;
                        first_da = da;
                        first_sa = sa;
                    }
                    bad_cases++;
                }
            }
        }
    }
    PBX_CHECK_EQ(bad_cases, 0U);
    PBX_CHECK_EQ(first_len, 0U);
    PBX_CHECK_EQ(first_da, 0U);
    PBX_CHECK_EQ(first_sa, 0U);
}

PBX_TEST(base_mem_set_every_length_and_alignment)
{
    static const uint8_t values[] = {0x00U, 0xA5U, 0xFFU, 0x01U};
    static uint8_t dst[MEM_BUF];
    static uint8_t want[MEM_BUF];
    size_t bad_cases = 0;
    size_t first_len = 0;
    size_t first_da = 0;
    for (size_t v = 0; v < sizeof(values); v++) {
        for (size_t len = 0; len <= MEM_LEN_MAX; len++) {
            for (size_t da = 0; da < MEM_ALIGN; da++) {
                mem_pattern(dst, sizeof(dst), 3U + (uint32_t)len);
                mem_pattern(want, sizeof(want), 3U + (uint32_t)len);
                for (size_t i = 0; i < len; i++) {
                    want[MEM_GUARD + da + i] = values[v];
                }
                pbx_mem_set(dst + MEM_GUARD + da, values[v], len);
                if (mem_diff(dst, want, sizeof(dst)) != 0U) {
                    if (bad_cases == 0U) {
                        first_len = len;
                        first_da = da;
                    }
                    bad_cases++;
                }
            }
        }
    }
    PBX_CHECK_EQ(bad_cases, 0U);
    PBX_CHECK_EQ(first_len, 0U);
    PBX_CHECK_EQ(first_da, 0U);
}

/* A copy through the word loops between objects of other types: the
 * may_alias word type must keep the compiler from reordering the copy
 * against typed reads and writes of the same bytes. */
PBX_TEST(base_mem_copy_between_typed_objects)
{
    uint32_t a[9];
    uint32_t b[9];
    for (uint32_t i = 0; i < 9U; i++) {
        a[i] = 0x01020304U * (i + 1U);
        b[i] = 0U;
    }
    pbx_mem_copy(b, a, sizeof(a));
    for (uint32_t i = 0; i < 9U; i++) {
        PBX_CHECK_EQ(b[i], 0x01020304U * (i + 1U));
    }
    pbx_mem_set(a, 0, sizeof(a));
    a[8] = 7U;
    PBX_CHECK_EQ(a[0], 0U);
    PBX_CHECK_EQ(a[8], 7U);
}

/* pbx_mem_equal compares word by word, then the tail: at every length
 * 0..300 and alignment of each side, equal ranges compare equal and a
 * range differing in any one byte (one bit, so the word XOR is that bit
 * alone) compares unequal, whatever lies outside the range. */
PBX_TEST(base_mem_equal_every_length_alignment_and_position)
{
    static uint8_t a[MEM_BUF];
    static uint8_t b[MEM_BUF];
    size_t bad = 0;
    for (size_t len = 0; len <= MEM_LEN_MAX; len++) {
        for (size_t aa = 0; aa < MEM_ALIGN; aa += 3U) {
            for (size_t ba = 0; ba < MEM_ALIGN; ba += 5U) {
                uint8_t *x = a + MEM_GUARD + aa;
                uint8_t *y = b + MEM_GUARD + ba;
                mem_pattern(a, sizeof(a), 3U);
                mem_pattern(b, sizeof(b), 4U);
                for (size_t i = 0; i < len; i++) {
                    y[i] = x[i];
                }
                bad += pbx_mem_equal(x, y, len) ? 0U : 1U;
                for (size_t i = 0; i < len; i++) {
                    y[i] ^= (uint8_t)(1U << (i & 7U));
                    bad += pbx_mem_equal(x, y, len) ? 1U : 0U;
                    y[i] ^= (uint8_t)(1U << (i & 7U));
                }
            }
        }
    }
    PBX_CHECK_EQ(bad, 0U);
}
