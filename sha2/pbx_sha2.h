/*
 * pbx_sha2.h: SHA-256 as specified by FIPS 180-4 (seed lib-sha2).
 *
 * powerboxd commits a selector by its SHA-256 digest at BEGIN and checks
 * the streamed selector bytes against it at COMMIT, so this is the one
 * canonical digest of the project. The implementation is freestanding: it
 * allocates nothing, calls nothing outside the project and keeps all state
 * in a caller-allocated context.
 *
 * Length limit: FIPS 180-4 defines SHA-256 for messages shorter than 2^64
 * bits. The context counts bytes, and an update that would take the total
 * above PBX_SHA2_MESSAGE_BYTES_MAX (2^61 - 1 bytes, the largest whole-byte
 * length whose bit count fits in 64 bits) is refused with
 * PBX_E_SHA2_LENGTH and leaves the context unchanged.
 */
#ifndef PBX_SHA2_H
#define PBX_SHA2_H

#include "base/pbx_base.h"

/** PBX_SHA2_DIGEST_BYTES is the size of a SHA-256 digest in bytes. */
#define PBX_SHA2_DIGEST_BYTES 32U

/** PBX_SHA2_BLOCK_BYTES is the size of one SHA-256 message block. */
#define PBX_SHA2_BLOCK_BYTES 64U

/**
 * PBX_SHA2_MESSAGE_BYTES_MAX is the longest message, in bytes, that one
 * context accepts: its length in bits, 8 * (2^61 - 1), is the largest
 * multiple of 8 below 2^64.
 */
#define PBX_SHA2_MESSAGE_BYTES_MAX ((UINT64_C(1) << 61) - UINT64_C(1))

/**
 * pbx_sha2_ctx is the state of one running SHA-256 computation. It is
 * caller-allocated (stack, arena or static) and holds no pointers, so it
 * may be copied to fork a computation. Its fields are private to
 * pbx_sha2.c: callers only pass it to the functions below. A context is
 * usable between pbx_sha2_init and pbx_sha2_final; final wipes it.
 */
typedef struct pbx_sha2_ctx {
    /** The eight 32-bit working hash words H0..H7. */
    uint32_t state[8];
    /** Message bytes absorbed so far, at most PBX_SHA2_MESSAGE_BYTES_MAX. */
    uint64_t total_bytes;
    /** Bytes of the current partial block, always below one block. */
    uint32_t block_len;
    /** PBX_SHA2_LIVE while the context is between init and final. */
    uint32_t live;
    /** The partial block waiting for more input. */
    uint8_t block[PBX_SHA2_BLOCK_BYTES];
} pbx_sha2_ctx;

/** PBX_SHA2_LIVE marks a context between init and final. */
#define PBX_SHA2_LIVE 0x53484132U

/**
 * pbx_sha2_init starts a new computation in *ctx, ignoring whatever the
 * memory held before. ctx must not be NULL. Cannot fail.
 */
void pbx_sha2_init(pbx_sha2_ctx *ctx);

/**
 * pbx_sha2_update absorbs len bytes at data into the running computation.
 * The bytes are only read during the call; no pointer is kept. data may
 * be NULL only when len is 0. ctx must have been initialised and not yet
 * finalised (a programmer error otherwise, caught by PBX_ASSERT).
 *
 * Returns PBX_OK, or PBX_E_SHA2_LENGTH when the message would exceed
 * PBX_SHA2_MESSAGE_BYTES_MAX bytes; on error the context is unchanged and
 * remains usable.
 */
pbx_err pbx_sha2_update(pbx_sha2_ctx *ctx, const uint8_t *data, size_t len);

/**
 * pbx_sha2_final pads the message, writes the 32-byte digest to out and
 * wipes *ctx, which must be initialised again before further use. out
 * must hold PBX_SHA2_DIGEST_BYTES bytes and may not overlap *ctx. Cannot
 * fail: every length accepted by update is a valid message length.
 */
void pbx_sha2_final(pbx_sha2_ctx *ctx, uint8_t out[PBX_SHA2_DIGEST_BYTES]);

/**
 * pbx_sha2_digest computes the SHA-256 of len bytes at data into out in
 * one call (init, update, final on a stack context that is wiped before
 * return). data may be NULL only when len is 0; out must hold
 * PBX_SHA2_DIGEST_BYTES bytes. Returns PBX_OK, or PBX_E_SHA2_LENGTH when
 * len exceeds PBX_SHA2_MESSAGE_BYTES_MAX, in which case out is untouched.
 */
pbx_err pbx_sha2_digest(const uint8_t *data, size_t len,
                        uint8_t out[PBX_SHA2_DIGEST_BYTES]);

/**
 * pbx_sha2_digest_equal compares two 32-byte digests in time independent
 * of their contents (through pbx_mem_equal), so a mismatch position is not
 * observable. Both pointers must reference PBX_SHA2_DIGEST_BYTES bytes.
 * Returns true when the digests are identical.
 */
bool pbx_sha2_digest_equal(const uint8_t a[PBX_SHA2_DIGEST_BYTES],
                           const uint8_t b[PBX_SHA2_DIGEST_BYTES]);

/**
 * pbx_sha2_path names one implementation of the SHA-256 compression
 * function. Every path computes the same digest; they differ in speed.
 */
typedef enum pbx_sha2_path {
    /** The portable C rounds of pbx_sha2.c, available everywhere. */
    PBX_SHA2_PATH_PORTABLE = 0,
    /** The x86 SHA extensions (pbx_sha2_x86.c), where CPUID reports them. */
    PBX_SHA2_PATH_X86_SHA = 1,
} pbx_sha2_path;

/**
 * pbx_sha2_path_available reports whether this build and this CPU can run
 * path: the portable path always, the x86 path only in an x86-64 build on a
 * CPU whose CPUID reports SHA, SSE4.1 and SSSE3. It reads CPUID each call
 * and changes nothing.
 */
bool pbx_sha2_path_available(pbx_sha2_path path);

/**
 * pbx_sha2_path_set makes path the one every later compression uses, in
 * every context of the process. Returns PBX_OK, or PBX_E_SHA2_PATH (and
 * changes nothing) when path is unknown or not available here. The choice
 * is one process-wide variable: set it at startup, before any thread or
 * context is hashing, never while another thread may be hashing. Tests
 * and the bench use it to force each path.
 */
pbx_err pbx_sha2_path_set(pbx_sha2_path path);

/**
 * pbx_sha2_select picks the fastest available path (the x86 extensions
 * where available, else portable), makes it current as pbx_sha2_path_set
 * does (with the same rule: once at startup) and returns it. Until it or
 * pbx_sha2_path_set is called the portable path is used.
 */
pbx_sha2_path pbx_sha2_select(void);

/** pbx_sha2_path_current returns the path compressions use now. */
pbx_sha2_path pbx_sha2_path_current(void);

#endif /* PBX_SHA2_H */
