/*
 * pbx_base.h: the foundation every powerboxd library stands on.
 *
 * Freestanding by design: it needs only the compiler's own headers, so the
 * libraries and the core can be built with -ffreestanding -nostdlib. It
 * defines the single project-wide error enum (one range per layer), the
 * always-on assertion for programmer errors, and explicit little-endian
 * helpers for every wire read and write.
 */
#ifndef PBX_BASE_H
#define PBX_BASE_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/**
 * PBX_ASSERT guards programmer errors only, never untrusted input. It stays
 * on in release builds: a broken invariant in an authority broker must stop
 * the service rather than continue with state that may leak authority. It
 * traps without calling anything, so it adds no external symbol.
 */
#define PBX_ASSERT(cond)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            __builtin_trap();                                                  \
        }                                                                      \
    } while (0)

/** PBX_ARRAY_LEN gives the element count of a true array (not a pointer). */
#define PBX_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/**
 * PBX_ERR_DEF is the X-macro used by base/err/\*.def. Each layer owns one
 * .def file, and each entry names the constant, its value inside the layer's
 * range, and a one-line description shown to operators.
 */
#define PBX_ERR_DEF(name, value, text) name = (value),

/**
 * pbx_err is the single error enum of the project. Zero is success. Each
 * layer owns a range of 0x100 values: base 0x01xx, sha2 0x02xx, ipc 0x03xx,
 * bootstrap 0x04xx, capabi 0x05xx, core 0x06xx, runtime and ports 0x07xx,
 * tools and peers 0x08xx. Values are stable once published in docs.
 */
typedef enum pbx_err {
    PBX_OK = 0,
#include "err/base.def"
#include "err/bootstrap.def"
#include "err/capabi.def"
#include "err/core.def"
#include "err/ipc.def"
#include "err/runtime.def"
#include "err/sha2.def"
#include "err/tools.def"
} pbx_err;

#undef PBX_ERR_DEF

/** PBX_ERR_LAYER_SHIFT extracts a layer number from an error value. */
#define PBX_ERR_LAYER_SHIFT 8U

/**
 * pbx_err_text returns a static, NUL-terminated description of err. The
 * string lives for the whole program and must not be freed or written. An
 * unknown value returns "unknown error" rather than failing.
 */
const char *pbx_err_text(pbx_err err);

/**
 * pbx_err_name returns the constant's name (for example "PBX_E_IPC_MAGIC")
 * as a static string, or "PBX_E_UNKNOWN" for a value no layer defines.
 */
const char *pbx_err_name(pbx_err err);

/** pbx_le_get16 reads a little-endian u16; the caller proved 2 bytes exist. */
static inline uint16_t pbx_le_get16(const uint8_t *p)
{
    return (uint16_t)((uint16_t)p[0] | (uint16_t)((uint16_t)p[1] << 8));
}

/** pbx_le_get32 reads a little-endian u32; the caller proved 4 bytes exist. */
static inline uint32_t pbx_le_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
           ((uint32_t)p[3] << 24);
}

/** pbx_le_get64 reads a little-endian u64; the caller proved 8 bytes exist. */
static inline uint64_t pbx_le_get64(const uint8_t *p)
{
    return (uint64_t)pbx_le_get32(p) | ((uint64_t)pbx_le_get32(p + 4) << 32);
}

/** pbx_le_put16 writes v little-endian; the caller proved 2 bytes of room. */
static inline void pbx_le_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xFFU);
    p[1] = (uint8_t)(v >> 8);
}

/** pbx_le_put32 writes v little-endian; the caller proved 4 bytes of room. */
static inline void pbx_le_put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v & 0xFFU);
    p[1] = (uint8_t)((v >> 8) & 0xFFU);
    p[2] = (uint8_t)((v >> 16) & 0xFFU);
    p[3] = (uint8_t)(v >> 24);
}

/** pbx_le_put64 writes v little-endian; the caller proved 8 bytes of room. */
static inline void pbx_le_put64(uint8_t *p, uint64_t v)
{
    pbx_le_put32(p, (uint32_t)(v & 0xFFFFFFFFU));
    pbx_le_put32(p + 4, (uint32_t)(v >> 32));
}

/**
 * pbx_mem_copy copies n bytes from src to dst. The ranges must not overlap.
 * The project's own copy keeps freestanding objects free of libc symbols.
 */
void pbx_mem_copy(void *dst, const void *src, size_t n);

/** pbx_mem_set fills n bytes at dst with byte value v. */
void pbx_mem_set(void *dst, uint8_t v, size_t n);

/**
 * pbx_mem_equal compares n bytes in time that depends only on n, so digest
 * and identity comparisons leak no prefix length. Returns true when equal.
 */
bool pbx_mem_equal(const void *a, const void *b, size_t n);

/**
 * pbx_add_overflows_size stores a + b in *out and returns false, or returns
 * true (leaving *out untouched) when the sum does not fit in size_t.
 */
static inline bool pbx_add_overflows_size(size_t a, size_t b, size_t *out)
{
    if (a > SIZE_MAX - b) {
        return true;
    }
    *out = a + b;
    return false;
}

/**
 * pbx_mul_overflows_size stores a * b in *out and returns false, or returns
 * true (leaving *out untouched) when the product does not fit in size_t.
 */
static inline bool pbx_mul_overflows_size(size_t a, size_t b, size_t *out)
{
    if (a != 0U && b > SIZE_MAX / a) {
        return true;
    }
    *out = a * b;
    return false;
}

#endif /* PBX_BASE_H */
