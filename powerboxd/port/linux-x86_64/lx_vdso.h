/*
 * lx_vdso.h: the linux-x86_64 port's clock, read through the vDSO.
 *
 * The kernel maps a small ELF shared object, the vDSO, into every process
 * and passes its address in the auxiliary vector (AT_SYSINFO_EHDR). Its
 * __vdso_clock_gettime reads CLOCK_MONOTONIC without entering the kernel.
 * The freestanding image has no dynamic loader, so lx_vdso.c finds the
 * symbol itself in the vDSO's dynamic symbol table; every read is checked
 * against the image's length, as if the image were hostile, though it is
 * the kernel's. lx_vdso_find and lx_vdso_image_len use nothing but base's
 * inline helpers, so the hosted port tests link lx_vdso.c alone and run it
 * against their own process's vDSO. lx_clock.c holds the port's use of it.
 */
#ifndef PBX_LX_VDSO_H
#define PBX_LX_VDSO_H

#include "base/pbx_base.h"

/** LX_VDSO_HEAD_BYTES is what lx_vdso_image_len may read: one page, the
 * least the kernel maps at the vDSO's address. */
#define LX_VDSO_HEAD_BYTES 4096U

/** LX_VDSO_IMAGE_MAX (256 KiB) bounds the image length lx_vdso_image_len
 * accepts: the x86-64 vDSO is under two pages, and an image claiming more
 * than this is refused as malformed rather than read. */
#define LX_VDSO_IMAGE_MAX 0x40000U

/**
 * lx_vdso_image_len returns the length of the ELF image at image, from
 * its program headers: the end of its furthest PT_LOAD file contents.
 * It reads only the first LX_VDSO_HEAD_BYTES bytes, which must be
 * readable; the ELF and program headers must lie inside them. Returns 0
 * when the header is not a 64-bit little-endian ELF shared object, a
 * count or offset is out of range, or the length would pass
 * LX_VDSO_IMAGE_MAX. Changes nothing.
 */
size_t lx_vdso_image_len(const uint8_t *image);

/**
 * lx_vdso_find looks up the defined function symbol name (NUL-terminated)
 * among the dynamic symbols of the ELF shared object in image[0..len),
 * and stores in *offset where its code starts, as a byte offset from
 * image. Every header, table and string is read only after its bounds
 * are checked against len, and every loop is bounded by a count that the
 * checks have limited to len; nothing is written but *offset. Symbol
 * versions are not consulted (the vDSO exports one version of each).
 * The symbol count comes from DT_HASH, or, without it, from the room
 * between the symbol and string tables.
 *
 * Returns true and sets *offset (below len, inside an executable PT_LOAD)
 * when found; false, with *offset untouched, when the image is malformed
 * or has no such defined function.
 */
bool lx_vdso_find(const uint8_t *image, size_t len, const char *name,
                  size_t *offset);

/**
 * lx_clock_init finds the vDSO's clock_gettime from the process's initial
 * stack sp (argc, argv, NULL, the environment, NULL, the auxiliary
 * vector), as the kernel laid it out at _start; walks are bounded. Call
 * once, before any clock read, from the single startup thread. Without a
 * vDSO (none mapped, or its image refused) the clock stays on the system
 * call. Defined in lx_clock.c, for the freestanding image only.
 */
void lx_clock_init(const uint64_t *sp);

/**
 * lx_clock_gettime reads clock into *sec and *nsec through the vDSO when
 * lx_clock_init found it, else with the clock_gettime system call, and
 * also with the system call should the vDSO's function fail. Returns 0 or
 * a negated errno (then *sec and *nsec are unspecified).
 */
int64_t lx_clock_gettime(int32_t clock, int64_t *sec, int64_t *nsec);

#endif /* PBX_LX_VDSO_H */
