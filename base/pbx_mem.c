/*
 * pbx_mem.c: the few memory primitives the freestanding layers need.
 *
 * They are written as plain bounded loops so that no object built from the
 * project references memcpy or memset from a C library. Copies and fills
 * move eight bytes at a time through a word type that may alias anything
 * and needs no alignment (x86_64 and the other targets load and store
 * unaligned words), then finish the tail bytes one by one; the byte-wise
 * loops they replace took a third of the live powerboxd's instructions
 * (issue 23). pbx_mem_equal compares word by word. (A tail of overlapping
 * words saved about 1k instructions a lifecycle more, but Frama-C EVA
 * could not prove its accesses: two more ipc alarms, eva/baseline.txt.)
 * tests/test_base_mem.c checks both against a byte-wise reference at every
 * length 0..300 and every alignment 0..15.
 */
#include "pbx_base.h"

/** pbx_mem_word is an eight-byte word read or written at any address and
 * through any object type (GCC and Clang: may_alias, alignment one). */
typedef uint64_t __attribute__((__may_alias__, __aligned__(1))) pbx_mem_word;

/** PBX_MEM_WORD is the byte count of one pbx_mem_word. */
#define PBX_MEM_WORD ((size_t)8U)

/** PBX_MEM_BLOCK is four words: the unrolled step of the long loops. */
#define PBX_MEM_BLOCK ((size_t)32U)

void pbx_mem_copy(void *dst, const void *src, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    /* The ends of the block and word runs: n rounded down to a multiple
     * of each step, so every step starts at a multiple of it below the
     * end and its last byte is below n. */
    size_t blocks = n / PBX_MEM_BLOCK * PBX_MEM_BLOCK;
    size_t words = n / PBX_MEM_WORD * PBX_MEM_WORD;
    size_t i = 0;
    PBX_ASSERT(n == 0U || (d != NULL && s != NULL));
    for (; i < blocks; i += PBX_MEM_BLOCK) {
        pbx_mem_word w0 = *(const pbx_mem_word *)(const void *)(s + i);
        pbx_mem_word w1 = *(const pbx_mem_word *)(const void *)(s + i + 8U);
        pbx_mem_word w2 = *(const pbx_mem_word *)(const void *)(s + i + 16U);
        pbx_mem_word w3 = *(const pbx_mem_word *)(const void *)(s + i + 24U);
        *(pbx_mem_word *)(void *)(d + i) = w0;
        *(pbx_mem_word *)(void *)(d + i + 8U) = w1;
        *(pbx_mem_word *)(void *)(d + i + 16U) = w2;
        *(pbx_mem_word *)(void *)(d + i + 24U) = w3;
    }
    for (; i < words; i += PBX_MEM_WORD) {
        *(pbx_mem_word *)(void *)(d + i) =
            *(const pbx_mem_word *)(const void *)(s + i);
    }
    for (; i < n; i++) {
        d[i] = s[i];
    }
}

void pbx_mem_set(void *dst, uint8_t v, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    /* The byte repeated in every lane of a word. */
    pbx_mem_word w = (uint64_t)v * UINT64_C(0x0101010101010101);
    /* The ends of the block and word runs, as in pbx_mem_copy. */
    size_t blocks = n / PBX_MEM_BLOCK * PBX_MEM_BLOCK;
    size_t words = n / PBX_MEM_WORD * PBX_MEM_WORD;
    size_t i = 0;
    PBX_ASSERT(n == 0U || d != NULL);
    for (; i < blocks; i += PBX_MEM_BLOCK) {
        *(pbx_mem_word *)(void *)(d + i) = w;
        *(pbx_mem_word *)(void *)(d + i + 8U) = w;
        *(pbx_mem_word *)(void *)(d + i + 16U) = w;
        *(pbx_mem_word *)(void *)(d + i + 24U) = w;
    }
    for (; i < words; i += PBX_MEM_WORD) {
        *(pbx_mem_word *)(void *)(d + i) = w;
    }
    for (; i < n; i++) {
        d[i] = v;
    }
}

bool pbx_mem_equal(const void *a, const void *b, size_t n)
{
    const uint8_t *x = (const uint8_t *)a;
    const uint8_t *y = (const uint8_t *)b;
    /* Volatile so the compiler keeps every load and cannot stop at the
     * first difference. */
    volatile uint64_t diff = 0;
    size_t i = 0;
    PBX_ASSERT(n == 0U || (x != NULL && y != NULL));
    /* Every byte is visited whatever the outcome, so the time taken does
     * not reveal the position of the first difference: words first, then
     * the tail bytes. */
    for (; n - i >= PBX_MEM_WORD; i += PBX_MEM_WORD) {
        diff = diff | (*(const pbx_mem_word *)(const void *)(x + i) ^
                       *(const pbx_mem_word *)(const void *)(y + i));
    }
    for (; i < n; i++) {
        diff = diff | (uint64_t)(x[i] ^ y[i]);
    }
    return diff == 0U;
}
