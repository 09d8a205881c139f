/*
 * pbx_mem.c: the few memory primitives the freestanding layers need.
 *
 * They are written as plain bounded loops so that no object built from the
 * project references memcpy or memset from a C library.
 */
#include "pbx_base.h"

void pbx_mem_copy(void *dst, const void *src, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = (const uint8_t *)src;
    PBX_ASSERT(n == 0U || (d != NULL && s != NULL));
    for (size_t i = 0; i < n; i++) {
        d[i] = s[i];
    }
}

void pbx_mem_set(void *dst, uint8_t v, size_t n)
{
    uint8_t *d = (uint8_t *)dst;
    PBX_ASSERT(n == 0U || d != NULL);
    for (size_t i = 0; i < n; i++) {
        d[i] = v;
    }
}

bool pbx_mem_equal(const void *a, const void *b, size_t n)
{
    const volatile uint8_t *x = (const volatile uint8_t *)a;
    const volatile uint8_t *y = (const volatile uint8_t *)b;
    uint8_t diff = 0;
    PBX_ASSERT(n == 0U || (x != NULL && y != NULL));
    /* Every byte is visited whatever the outcome, so the time taken does
     * not reveal the position of the first difference. */
    for (size_t i = 0; i < n; i++) {
        diff = (uint8_t)(diff | (uint8_t)(x[i] ^ y[i]));
    }
    return diff == 0U;
}
