/*
 * test_base.c: the base layer's endian helpers, memory primitives, overflow
 * checks and error table.
 */
#include "../base/pbx_base.h"
#include "runner/pbx_test.h"

#include <string.h>

PBX_TEST(base_le_roundtrip)
{
    uint8_t b[8];
    pbx_le_put16(b, 0xA1B2U);
    PBX_CHECK_EQ(b[0], 0xB2U);
    PBX_CHECK_EQ(b[1], 0xA1U);
    PBX_CHECK_EQ(pbx_le_get16(b), 0xA1B2U);
    pbx_le_put32(b, 0x01020304U);
    PBX_CHECK_EQ(b[0], 0x04U);
    PBX_CHECK_EQ(b[3], 0x01U);
    PBX_CHECK_EQ(pbx_le_get32(b), 0x01020304U);
    pbx_le_put64(b, 0x1122334455667788ULL);
    PBX_CHECK_EQ(b[0], 0x88U);
    PBX_CHECK_EQ(b[7], 0x11U);
    PBX_CHECK_EQ(pbx_le_get64(b), 0x1122334455667788ULL);
}

PBX_TEST(base_mem_primitives)
{
    uint8_t a[16];
    uint8_t b[16];
    pbx_mem_set(a, 0x5A, sizeof(a));
    for (size_t i = 0; i < sizeof(a); i++) {
        PBX_CHECK_EQ(a[i], 0x5AU);
    }
    pbx_mem_copy(b, a, sizeof(a));
    PBX_CHECK(pbx_mem_equal(a, b, sizeof(a)));
    b[15] ^= 1U;
    PBX_CHECK(!pbx_mem_equal(a, b, sizeof(a)));
    PBX_CHECK(pbx_mem_equal(a, b, 15));
    PBX_CHECK(pbx_mem_equal(a, b, 0));
}

PBX_TEST(base_overflow_checks)
{
    size_t out = 7;
    PBX_CHECK(!pbx_add_overflows_size(1, 2, &out));
    PBX_CHECK_EQ(out, 3U);
    PBX_CHECK(pbx_add_overflows_size(SIZE_MAX, 1, &out));
    PBX_CHECK_EQ(out, 3U);
    PBX_CHECK(!pbx_mul_overflows_size(0, SIZE_MAX, &out));
    PBX_CHECK_EQ(out, 0U);
    PBX_CHECK(pbx_mul_overflows_size(SIZE_MAX / 2U + 1U, 2, &out));
    PBX_CHECK(!pbx_mul_overflows_size(SIZE_MAX / 2U, 2, &out));
}

PBX_TEST(base_err_names)
{
    PBX_CHECK(strcmp(pbx_err_name(PBX_OK), "PBX_OK") == 0);
    PBX_CHECK(
        strcmp(pbx_err_name(PBX_E_BASE_OVERFLOW), "PBX_E_BASE_OVERFLOW") == 0);
    PBX_CHECK(
        strcmp(pbx_err_text(PBX_E_BASE_OVERFLOW), "arithmetic overflow") == 0);
    PBX_CHECK(strcmp(pbx_err_name((pbx_err)0x7FFF), "PBX_E_UNKNOWN") == 0);
    PBX_CHECK_EQ((unsigned)PBX_E_SHA2_LENGTH >> PBX_ERR_LAYER_SHIFT, 2U);
}
