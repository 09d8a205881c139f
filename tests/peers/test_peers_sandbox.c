/*
 * test_peers_sandbox.c: the pure decisions of launchd's sandbox: the
 * Landlock plan for every ABI a kernel may report (and for a kernel that
 * has none), and the static-program check on built images and on crafted
 * headers.
 */
#include "../../peers/lib/pbx_peer_sandbox.h"
#include "../runner/pbx_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

PBX_TEST(peers_sandbox_plans_every_abi_and_refuses_without_landlock)
{
    /* The filesystem rights each ABI knows: 13 with ABI 1, REFER with 2,
     * TRUNCATE with 3, none new with 4, IOCTL_DEV with 5, none new with
     * 6 and 7 (6 brought the two scopes, 4 the two TCP rights). A newer
     * ABI keeps them all. */
    static const struct {
        long abi;
        uint64_t fs;
        uint64_t scoped;
        uint64_t net;
    } cases[] = {
        {1, 0x1FFFU, 0U, 0U}, {2, 0x3FFFU, 0U, 0U}, {3, 0x7FFFU, 0U, 0U},
        {4, 0x7FFFU, 0U, 3U}, {5, 0xFFFFU, 0U, 3U}, {6, 0xFFFFU, 3U, 3U},
        {7, 0xFFFFU, 3U, 3U}, {8, 0xFFFFU, 3U, 3U}, {1000, 0xFFFFU, 3U, 3U},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pbx_peer_sandbox_plan p;
        memset(&p, 0xA5, sizeof(p));
        PBX_CHECK_EQ(pbx_peer_sandbox_decide(cases[i].abi, 0, &p), PBX_OK);
        PBX_CHECK(p.abi == cases[i].abi);
        PBX_CHECK(p.handled_fs == cases[i].fs);
        PBX_CHECK(p.scoped == cases[i].scoped);
        /* From ABI 4 TCP bind and connect are handled with no rule that
         * allows a port: denied (the seccomp socket ban holds anyway). */
        PBX_CHECK(p.handled_net == cases[i].net);
        /* The one rule: execute and read the program's own file, both
         * handled (so nothing else is allowed). */
        PBX_CHECK(p.prog_access ==
                  (PBX_PEER_LL_FS_EXECUTE | PBX_PEER_LL_FS_READ_FILE));
        PBX_CHECK((p.prog_access & ~p.handled_fs) == 0U);
    }
    /* No Landlock: not built in (ENOSYS), disabled at boot (EOPNOTSUPP),
     * or an ABI below 1. Any other failure is refused too. *out is left
     * alone either way. */
    static const struct {
        long abi;
        int err;
        pbx_err want;
    } no[] = {
        {-1, ENOSYS, PBX_E_PEER_NO_LANDLOCK},
        {-1, EOPNOTSUPP, PBX_E_PEER_NO_LANDLOCK},
        {0, 0, PBX_E_PEER_NO_LANDLOCK},
        {-5, 0, PBX_E_PEER_SANDBOX},
        {-1, EINVAL, PBX_E_PEER_SANDBOX},
        {-1, EPERM, PBX_E_PEER_SANDBOX},
    };
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        pbx_peer_sandbox_plan p;
        memset(&p, 0xA5, sizeof(p));
        PBX_CHECK_EQ(pbx_peer_sandbox_decide(no[i].abi, no[i].err, &p),
                     no[i].want);
        PBX_CHECK(p.handled_fs == 0xA5A5A5A5A5A5A5A5ULL);
    }
}

/* Reads up to cap bytes of the file at path into buf; returns the count
 * (the test stops when the file cannot be read). */
static size_t ts_image(const char *path, uint8_t *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    PBX_REQUIRE(fd >= 0);
    ssize_t n = read(fd, buf, cap);
    (void)close(fd);
    PBX_REQUIRE(n > 0);
    return (size_t)n;
}

/* A minimal ELF64 header with phnum program headers of the given types
 * right after it; returns its length. */
static size_t ts_elf(uint8_t *img, const uint32_t *types, uint16_t phnum)
{
    size_t n = 64U + (size_t)56U * phnum;
    memset(img, 0, n);
    static const uint8_t magic[4] = {0x7FU, 'E', 'L', 'F'};
    memcpy(img, magic, sizeof(magic));
    img[4] = 2;                 /* 64-bit */
    img[5] = 1;                 /* little-endian */
    pbx_le_put16(img + 16, 2);  /* ET_EXEC */
    pbx_le_put64(img + 32, 64); /* e_phoff */
    pbx_le_put16(img + 54, 56); /* e_phentsize */
    pbx_le_put16(img + 56, phnum);
    for (uint16_t i = 0; i < phnum; i++) {
        pbx_le_put32(img + 64U + (size_t)56U * i, types[i]);
    }
    return n;
}

PBX_TEST(peers_sandbox_tells_static_from_dynamic_programs)
{
    static uint8_t img[4096];
    /* The built probe is static; the test binary itself and /bin/sh are
     * dynamically linked. */
    char path[512];
    const char *bin = getenv("PBX_PEERS_BIN");
    (void)snprintf(path, sizeof(path), "%s/pbx-sandbox-probe",
                   bin != NULL ? bin : "build/bin");
    PBX_CHECK_EQ(pbx_peer_sandbox_elf(img, ts_image(path, img, sizeof(img))),
                 PBX_OK);
    PBX_CHECK_EQ(
        pbx_peer_sandbox_elf(img, ts_image("/bin/sh", img, sizeof(img))),
        PBX_E_PEER_DYNAMIC);
    /* Crafted: LOAD only; INTERP anywhere; a static-pie (ET_DYN). */
    static const uint32_t load[] = {1, 1, 6};
    static const uint32_t interp[] = {6, 1, 3};
    size_t n = ts_elf(img, load, 3);
    PBX_CHECK_EQ(pbx_peer_sandbox_elf(img, n), PBX_OK);
    pbx_le_put16(img + 16, 3);
    PBX_CHECK_EQ(pbx_peer_sandbox_elf(img, n), PBX_OK);
    n = ts_elf(img, interp, 3);
    PBX_CHECK_EQ(pbx_peer_sandbox_elf(img, n), PBX_E_PEER_DYNAMIC);
    /* The table past what was read, the last entry cut short: not judged
     * static (refused). */
    PBX_CHECK_EQ(pbx_peer_sandbox_elf(img, n - 1U), PBX_E_PEER_NOT_ELF);
    n = ts_elf(img, load, 1);
    pbx_le_put64(img + 32, 1ULL << 62);
    PBX_CHECK_EQ(pbx_peer_sandbox_elf(img, n), PBX_E_PEER_NOT_ELF);
    /* Not ELF, 32-bit, big-endian, a relocatable object, an odd entry
     * size, no program header, a short file, a script. */
    static const struct {
        size_t off;
        uint8_t val;
    } bad[] = {{0, 0x7E}, {4, 1}, {5, 2}, {16, 1}, {54, 57}, {56, 0}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        n = ts_elf(img, load, 1);
        img[bad[i].off] = bad[i].val;
        PBX_CHECK_EQ(pbx_peer_sandbox_elf(img, n), PBX_E_PEER_NOT_ELF);
    }
    PBX_CHECK_EQ(pbx_peer_sandbox_elf(img, 63), PBX_E_PEER_NOT_ELF);
    PBX_CHECK_EQ(pbx_peer_sandbox_elf((const uint8_t *)"#!/bin/sh\n", 10),
                 PBX_E_PEER_NOT_ELF);
    PBX_CHECK_EQ(pbx_peer_sandbox_elf(NULL, 0), PBX_E_PEER_NOT_ELF);
}
