/*
 * test_port_vdso.c: the linux-x86_64 port's vDSO lookup (lx_vdso.c),
 * run against this test process's own vDSO, which the kernel maps from
 * the same image it gives powerboxd.
 *
 * The image is found through getauxval(AT_SYSINFO_EHDR), its mapped
 * extent from /proc/self/maps ("[vdso]"). The clock function the lookup
 * finds is called and must agree with libc's clock_gettime. Copies of
 * the image, truncated at every length and with fields corrupted, must
 * be refused or give an offset inside the copy, never a read beyond it
 * (under make check-asan each copy is a heap block of exactly its
 * length).
 */
#include "../../powerboxd/port/linux-x86_64/lx_vdso.h"
#include "../runner/pbx_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>

/* The extent of the [vdso] mapping in /proc/self/maps, or 0. */
static size_t vdso_map_len(uintptr_t base)
{
    char line[512];
    size_t len = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    if (f == NULL) {
        return 0;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char *end = NULL;
        if (strstr(line, "[vdso]") == NULL) {
            continue;
        }
        unsigned long lo = strtoul(line, &end, 16);
        unsigned long hi = *end == '-' ? strtoul(end + 1, NULL, 16) : 0UL;
        if (lo == base && hi > lo) {
            len = (size_t)(hi - lo);
        }
    }
    (void)fclose(f);
    return len;
}

/* This process's vDSO and its mapped length; ends the test without one. */
static const uint8_t *vdso_self(size_t *map_len)
{
    uintptr_t base = (uintptr_t)getauxval(AT_SYSINFO_EHDR);
    PBX_REQUIRE(base != 0U);
    *map_len = vdso_map_len(base);
    PBX_REQUIRE(*map_len >= LX_VDSO_HEAD_BYTES);
    return (const uint8_t *)base; // NOLINT(performance-no-int-to-ptr)
}

/** The vDSO's clock_gettime, as lx_clock.c calls it. */
typedef int (*vdso_clock_fn)(int clock, struct timespec *ts);

PBX_TEST(port_vdso_finds_clock_gettime_in_own_vdso)
{
    size_t map_len = 0;
    const uint8_t *image = vdso_self(&map_len);
    size_t len = lx_vdso_image_len(image);
    size_t off = 0;
    PBX_REQUIRE(len >= 64U && len <= map_len);
    PBX_REQUIRE(lx_vdso_find(image, len, "__vdso_clock_gettime", &off));
    PBX_CHECK(off > 0U && off < len);
    /* The function found reads the same clock as libc: between two
     * libc reads, never before the first nor after the second. */
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    vdso_clock_fn fn = (vdso_clock_fn)(uintptr_t)(image + off);
    struct timespec a;
    struct timespec b;
    struct timespec c;
    PBX_REQUIRE(clock_gettime(CLOCK_MONOTONIC, &a) == 0);
    PBX_REQUIRE(fn(CLOCK_MONOTONIC, &b) == 0);
    PBX_REQUIRE(clock_gettime(CLOCK_MONOTONIC, &c) == 0);
    uint64_t na = (uint64_t)a.tv_sec * 1000000000U + (uint64_t)a.tv_nsec;
    uint64_t nb = (uint64_t)b.tv_sec * 1000000000U + (uint64_t)b.tv_nsec;
    uint64_t nc = (uint64_t)c.tv_sec * 1000000000U + (uint64_t)c.tv_nsec;
    PBX_CHECK(na <= nb && nb <= nc);
    /* Another exported function is found at another address; names
     * that are not there, or only a prefix of one, are not. */
    size_t other = 0;
    PBX_CHECK(lx_vdso_find(image, len, "__vdso_gettimeofday", &other));
    PBX_CHECK(other != off);
    other = 7;
    PBX_CHECK(!lx_vdso_find(image, len, "__vdso_clock_gettim", &other));
    PBX_CHECK(!lx_vdso_find(image, len, "__vdso_clock_gettimex", &other));
    PBX_CHECK(!lx_vdso_find(image, len, "", &other));
    PBX_CHECK_EQ(other, 7U);
}

/* A heap copy of the first n bytes of image, exactly n bytes long. */
static uint8_t *vdso_copy(const uint8_t *image, size_t n)
{
    uint8_t *p = malloc(n > 0U ? n : 1U);
    PBX_REQUIRE(p != NULL);
    // cppcheck-suppress nullPointerRedundantCheck
    memcpy(p, image, n);
    return p;
}

PBX_TEST(port_vdso_truncated_image_never_read_past_its_end)
{
    size_t map_len = 0;
    const uint8_t *image = vdso_self(&map_len);
    size_t len = lx_vdso_image_len(image);
    size_t want = 0;
    size_t bad = 0;
    size_t found = 0;
    PBX_REQUIRE(lx_vdso_find(image, len, "__vdso_clock_gettime", &want));
    /* Every shorter image: refused, or (once the tables it needs are
     * inside) the same answer. */
    for (size_t n = 0; n < len; n++) {
        uint8_t *copy = vdso_copy(image, n);
        size_t off = SIZE_MAX;
        if (lx_vdso_find(copy, n, "__vdso_clock_gettime", &off)) {
            found++;
            bad += off == want && off < n ? 0U : 1U;
        } else {
            bad += off == SIZE_MAX ? 0U : 1U;
        }
        free(copy);
    }
    PBX_CHECK_EQ(bad, 0U);
    /* The header alone is refused. */
    PBX_CHECK(found < len);
}

/* The first program header of type in the len-byte copy, its bounds
 * checked; ends the test when there is none. */
static uint8_t *vdso_phdr(uint8_t *copy, size_t len, uint32_t type)
{
    PBX_REQUIRE(len >= 64U);
    uint64_t phoff = pbx_le_get64(copy + 32);
    uint64_t phnum = pbx_le_get16(copy + 56);
    PBX_REQUIRE(phoff <= len && phnum * 56U <= len - phoff);
    for (uint64_t i = 0; i < phnum; i++) {
        uint8_t *ph = copy + phoff + 56U * i;
        if (pbx_le_get32(ph) == type) {
            return ph;
        }
    }
    PBX_REQUIRE(false);
    return NULL;
}

/* Corrupts byte at of a copy with value v and looks the clock up. */
static bool vdso_find_corrupt(const uint8_t *image, size_t len, size_t at,
                              uint8_t v, size_t *off)
{
    uint8_t *copy = vdso_copy(image, len);
    copy[at] = v;
    bool ok = lx_vdso_find(copy, len, "__vdso_clock_gettime", off);
    free(copy);
    return ok;
}

PBX_TEST(port_vdso_corrupt_headers_refused_or_bounded)
{
    size_t map_len = 0;
    const uint8_t *image = vdso_self(&map_len);
    size_t len = lx_vdso_image_len(image);
    size_t off = 0;
    /* The magic, the class, the byte order, the type, the program
     * header entry size and count: each wrong value is refused. */
    PBX_CHECK(!vdso_find_corrupt(image, len, 0, 0x7E, &off));
    PBX_CHECK(!vdso_find_corrupt(image, len, 4, 1, &off));
    PBX_CHECK(!vdso_find_corrupt(image, len, 5, 2, &off));
    PBX_CHECK(!vdso_find_corrupt(image, len, 16, 2, &off));
    PBX_CHECK(!vdso_find_corrupt(image, len, 54, 57, &off));
    PBX_CHECK(!vdso_find_corrupt(image, len, 57, 0xFF, &off));
    PBX_CHECK(!vdso_find_corrupt(image, len, 39, 0x80, &off));
    /* Every byte of the headers and tables set to 0xFF and to 0x00 in
     * turn: refused or an offset inside the image, and the walk ends. */
    size_t bad = 0;
    /* The headers and tables lie in the first page of the image. */
    size_t span = len < LX_VDSO_HEAD_BYTES ? len : LX_VDSO_HEAD_BYTES;
    // cppcheck-suppress knownConditionTrueFalse
    for (size_t at = 0; at < span; at++) {
        for (unsigned v = 0; v < 2U; v++) {
            size_t got = SIZE_MAX;
            if (vdso_find_corrupt(image, len, at, v != 0U ? 0xFFU : 0U, &got)) {
                bad += got < len ? 0U : 1U;
            }
        }
    }
    PBX_CHECK_EQ(bad, 0U);
    /* A PT_LOAD whose file size reaches past LX_VDSO_IMAGE_MAX makes
     * image_len refuse the image rather than report it. */
    uint8_t *copy = vdso_copy(image, LX_VDSO_HEAD_BYTES);
    PBX_CHECK_EQ(lx_vdso_image_len(copy), len);
    uint8_t *load = vdso_phdr(copy, LX_VDSO_HEAD_BYTES, 1U);
    pbx_le_put64(load + 32, (uint64_t)LX_VDSO_IMAGE_MAX + 1U);
    PBX_CHECK_EQ(lx_vdso_image_len(copy), 0U);
    free(copy);
}

/* Without DT_HASH the symbol count comes from the room between the
 * symbol and string tables: the same function is found. */
PBX_TEST(port_vdso_found_without_hash_table)
{
    size_t map_len = 0;
    const uint8_t *image = vdso_self(&map_len);
    size_t len = lx_vdso_image_len(image);
    size_t want = 0;
    size_t got = 0;
    size_t hidden = 0;
    PBX_REQUIRE(lx_vdso_find(image, len, "__vdso_clock_gettime", &want));
    uint8_t *copy = vdso_copy(image, len);
    const uint8_t *ph = vdso_phdr(copy, len, 2U);
    uint64_t dyn = pbx_le_get64(ph + 8);
    uint64_t count = pbx_le_get64(ph + 32) / 16U;
    PBX_REQUIRE(dyn <= len && count <= (len - dyn) / 16U);
    for (uint64_t e = 0; e < count; e++) {
        if (pbx_le_get64(copy + dyn + 16U * e) == 4U) {
            /* DT_HASH becomes a tag the lookup does not read. */
            pbx_le_put64(copy + dyn + 16U * e, UINT64_C(0x6FFFFFF1));
            hidden++;
        }
    }
    PBX_CHECK_EQ(hidden, 1U);
    PBX_CHECK(lx_vdso_find(copy, len, "__vdso_clock_gettime", &got));
    PBX_CHECK_EQ(got, want);
    free(copy);
}
