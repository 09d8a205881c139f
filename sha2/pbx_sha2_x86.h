/*
 * pbx_sha2_x86.h: the SHA-256 compression path on the x86 SHA extensions,
 * used only by pbx_sha2.c (callers choose a path through pbx_sha2.h).
 *
 * PBX_SHA2_X86 is 1 where pbx_sha2_x86.c holds code: an x86-64 build by a
 * compiler with the GNU vector extensions and the SHA builtins (gcc or
 * clang). Elsewhere it is 0, the file compiles to nothing and the
 * functions below are not defined.
 */
#ifndef PBX_SHA2_X86_H
#define PBX_SHA2_X86_H

#include "base/pbx_base.h"

/* Frama-C (make eva) parses no vector types or SHA builtins: there the
 * portable path is the only one, which is the one it proves. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__FRAMAC__)
/** PBX_SHA2_X86 is 1 where the x86 SHA path is built. */
#define PBX_SHA2_X86 1
#else
/** PBX_SHA2_X86 is 0 where the x86 SHA path is not built. */
#define PBX_SHA2_X86 0
#endif

#if PBX_SHA2_X86
/**
 * pbx_sha2_x86_supported reports whether CPUID says this CPU has the SHA
 * extensions (leaf 7, EBX bit 29), SSE4.1 and SSSE3 (leaf 1, ECX bits 19
 * and 9), every instruction pbx_sha2_x86_blocks uses beyond x86-64's
 * SSE2. It has no side effects.
 */
bool pbx_sha2_x86_supported(void);

/**
 * pbx_sha2_x86_blocks folds blocks whole 64-byte blocks at data into the
 * eight hash words state (H0..H7, as in pbx_sha2_ctx). data must hold
 * 64 * blocks bytes and needs no alignment; nothing is kept after the
 * call. Must only run where pbx_sha2_x86_supported returned true (the
 * instructions fault elsewhere).
 */
void pbx_sha2_x86_blocks(uint32_t state[8], const uint8_t *data, size_t blocks);
#endif

#endif /* PBX_SHA2_X86_H */
