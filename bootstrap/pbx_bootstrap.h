/*
 * pbx_bootstrap.h: PBX1, the authenticated storage geometry (seed
 * lib-bootstrap), and the arena layout it implies.
 *
 * A deployment patches one PBX1 record into powerboxd: how many records
 * each storage pool holds, the record size and alignment each pool was
 * built for, the page size and the arena page count. powerboxd parses the
 * record strictly, checks its type layouts against the ones it was compiled
 * with, derives every pool's arena offset and refuses to start when the
 * patched page count differs from the derived one. docs/PBX1.md is the
 * normative byte layout; this header is its C face.
 *
 * Freestanding: no allocation, no libc, every loop bounded by
 * PBX_BOOTSTRAP_POOL_COUNT or PBX_BOOTSTRAP_TIME_COUNT.
 */
#ifndef PBX_BOOTSTRAP_H
#define PBX_BOOTSTRAP_H

#include "base/pbx_base.h"

/**
 * pbx_bootstrap_pool names every storage pool the arena holds, in the order
 * the PBX1 record lists them and the arena lays them out. The values are
 * wire positions: never reorder, only append with a new PBX1 version.
 */
typedef enum pbx_bootstrap_pool {
    /** Streamed selector requests (BEGIN until terminal retirement). */
    PBX_BOOTSTRAP_POOL_REQUESTS = 0,
    /** Selector bytes: one record per byte (record size 1, alignment 1). */
    PBX_BOOTSTRAP_POOL_SELECTOR_BYTES = 1,
    /** Installed, generational grants. */
    PBX_BOOTSTRAP_POOL_GRANTS = 2,
    /** Trusted prompts awaiting or holding a ttyd answer. */
    PBX_BOOTSTRAP_POOL_PROMPTS = 3,
    /** Session-policy answers retained for a request. */
    PBX_BOOTSTRAP_POOL_POLICIES = 4,
    /** Terminal decisions kept until wake and reply delivery. */
    PBX_BOOTSTRAP_POOL_DECISIONS = 5,
    /** Generational transient capability slots (every capability the
     * core holds, received receipts included, lives in one). */
    PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS = 6,
    /** Scoped vfsd resolution evidence. */
    PBX_BOOTSTRAP_POOL_RESOLUTIONS = 7,
    /** Authority-free launchd correlation wakes awaiting queueing. */
    PBX_BOOTSTRAP_POOL_NOTIFICATIONS = 8,
    /** Outstanding split-phase peer calls, each with its deadline. */
    PBX_BOOTSTRAP_POOL_CALLS = 9,
    /** Number of pools; not a pool. Version 2's receipt and reply pools
     * were never used and are gone (docs/PBX1.md). */
    PBX_BOOTSTRAP_POOL_COUNT = 10
} pbx_bootstrap_pool;

/**
 * pbx_bootstrap_time names every deadline a PBX1 record carries, by its
 * index in pbx_bootstrap_geometry.time_ms. A deadline is a duration in
 * milliseconds; the core keeps no clock, the runtime turns each deadline
 * into a timer event. The values are wire positions: never reorder, only
 * append with a new PBX1 version.
 */
typedef enum pbx_bootstrap_time {
    /** Deadline of one vfsd call. */
    PBX_BOOTSTRAP_TIME_VFSD = 0,
    /** Deadline of one ttyd policy, view or withdraw call. */
    PBX_BOOTSTRAP_TIME_TTYD = 1,
    /** Deadline of one procd call. */
    PBX_BOOTSTRAP_TIME_PROCD = 2,
    /** Deadline of one resolution through a caller's scope. */
    PBX_BOOTSTRAP_TIME_SCOPE = 3,
    /** Deadline of one trusted prompt waiting for a person. */
    PBX_BOOTSTRAP_TIME_PROMPT = 4,
    /** Deadline of a request begun but not committed. */
    PBX_BOOTSTRAP_TIME_OPEN = 5,
    /** How long a public connection may stay silent before powerboxd
     * closes it (PBX1 version 3). */
    PBX_BOOTSTRAP_TIME_IDLE = 6,
    /** Number of deadlines; not a deadline. */
    PBX_BOOTSTRAP_TIME_COUNT = 7
} pbx_bootstrap_time;

/**
 * pbx_bootstrap_type_layout is the size and alignment of one pool's record
 * type. A PBX1 record carries the layouts the deployment was built for; the
 * executable compares them with the layouts it was compiled with
 * (sizeof/_Alignof of its own record types). Plain values, no ownership.
 */
typedef struct pbx_bootstrap_type_layout {
    /** sizeof the record type in bytes; 1..PBX_BOOTSTRAP_RECORD_SIZE_MAX. */
    uint32_t record_size_bytes;
    /** _Alignof the record type; a power of two up to the page size. */
    uint32_t record_align_bytes;
} pbx_bootstrap_type_layout;

/** PBX_BOOTSTRAP_MAGIC_0..3 are the four magic bytes "PBX1". */
#define PBX_BOOTSTRAP_MAGIC_0 0x50U
/** Second magic byte, 'B'. */
#define PBX_BOOTSTRAP_MAGIC_1 0x42U
/** Third magic byte, 'X'. */
#define PBX_BOOTSTRAP_MAGIC_2 0x58U
/** Fourth magic byte, '1'. */
#define PBX_BOOTSTRAP_MAGIC_3 0x31U

/** PBX_BOOTSTRAP_VERSION is the only PBX1 version this code accepts. */
#define PBX_BOOTSTRAP_VERSION 3U

/**
 * PBX_BOOTSTRAP_PREFIX_BYTES is the magic plus the version: the bytes a
 * parser reads before the exact length, so that a record of another
 * version is refused as that version rather than for its length.
 */
#define PBX_BOOTSTRAP_PREFIX_BYTES 6U

/** PBX_BOOTSTRAP_HEADER_BYTES is the size of the fixed header fields. */
#define PBX_BOOTSTRAP_HEADER_BYTES 16U

/** PBX_BOOTSTRAP_POOL_ENTRY_BYTES is the size of one pool entry. */
#define PBX_BOOTSTRAP_POOL_ENTRY_BYTES 16U

/** PBX_BOOTSTRAP_DIGEST_BYTES is the SHA-256 digest length at the end. */
#define PBX_BOOTSTRAP_DIGEST_BYTES 32U

/** PBX_BOOTSTRAP_CALLS_OFFSET is where the calls section follows the pools. */
#define PBX_BOOTSTRAP_CALLS_OFFSET                                             \
    (PBX_BOOTSTRAP_HEADER_BYTES +                                              \
     PBX_BOOTSTRAP_POOL_ENTRY_BYTES * (unsigned)PBX_BOOTSTRAP_POOL_COUNT)

/**
 * PBX_BOOTSTRAP_CALLS_BYTES is the size of the calls section: the call
 * window (u32) and one u32 per deadline (version 3 took the word version 2
 * kept reserved for the IDLE deadline).
 */
#define PBX_BOOTSTRAP_CALLS_BYTES (4U + 4U * (unsigned)PBX_BOOTSTRAP_TIME_COUNT)

/** PBX_BOOTSTRAP_DIGEST_OFFSET is where the digest starts (= bytes hashed). */
#define PBX_BOOTSTRAP_DIGEST_OFFSET                                            \
    (PBX_BOOTSTRAP_CALLS_OFFSET + PBX_BOOTSTRAP_CALLS_BYTES)

/** PBX_BOOTSTRAP_RECORD_BYTES is the exact length of a PBX1 record. */
#define PBX_BOOTSTRAP_RECORD_BYTES                                             \
    (PBX_BOOTSTRAP_DIGEST_OFFSET + PBX_BOOTSTRAP_DIGEST_BYTES)

/** The record size is part of the wire format: pin it. */
_Static_assert(PBX_BOOTSTRAP_RECORD_BYTES == 240U,
               "PBX1 version 3 record is 240 bytes (docs/PBX1.md)");

/** PBX_BOOTSTRAP_RECORDS_MAX caps the capacity of every record pool. */
#define PBX_BOOTSTRAP_RECORDS_MAX 65536U

/** PBX_BOOTSTRAP_SELECTOR_BYTES_MAX caps the selector-bytes pool (16 MiB). */
#define PBX_BOOTSTRAP_SELECTOR_BYTES_MAX 16777216U

/** PBX_BOOTSTRAP_RECORD_SIZE_MAX caps a record type's size (64 KiB). */
#define PBX_BOOTSTRAP_RECORD_SIZE_MAX 65536U

/** PBX_BOOTSTRAP_PAGE_SIZE_MIN is the smallest accepted page size. */
#define PBX_BOOTSTRAP_PAGE_SIZE_MIN 4096U

/** PBX_BOOTSTRAP_PAGE_SIZE_MAX is the largest accepted page size (1 GiB). */
#define PBX_BOOTSTRAP_PAGE_SIZE_MAX 1073741824U

/**
 * PBX_BOOTSTRAP_CALL_ROUTES is the number of peer routes that carry
 * split-phase calls (vfsd, ttyd, procd): each may hold call_window calls
 * outstanding, so the calls pool must hold call_window times this many.
 */
#define PBX_BOOTSTRAP_CALL_ROUTES 3U

/** PBX_BOOTSTRAP_CALL_WINDOW_MAX caps the outstanding calls per deadline class.
 */
#define PBX_BOOTSTRAP_CALL_WINDOW_MAX 4096U

/** PBX_BOOTSTRAP_TIME_MS_MAX caps every deadline: one day in ms. */
#define PBX_BOOTSTRAP_TIME_MS_MAX 86400000U

/**
 * PBX_BOOTSTRAP_ARENA_BYTES_MAX caps both the derived arena extent and the
 * patched extent (page count times page size): 1 GiB. It fits a 32-bit
 * size_t, so every layout computation below it is exact on every target.
 */
#define PBX_BOOTSTRAP_ARENA_BYTES_MAX 1073741824U

/**
 * PBX_BOOTSTRAP_RECEIPTS_PER_RECEIVE is how many capabilities one receive
 * of powerboxd's port may stage (the port's PBX_PORT_RECEIPTS_MAX, which
 * the runtime asserts equal): the transient range holds the
 * transient-slots pool plus this many, so what arrives can always be
 * placed.
 */
#define PBX_BOOTSTRAP_RECEIPTS_PER_RECEIVE 16U

/**
 * PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX bounds powerboxd's transient slot range
 * (the runtime's PBX_RT_TRANSIENT_MAX): the transient-slots capacity plus
 * PBX_BOOTSTRAP_RECEIPTS_PER_RECEIVE must not exceed it. From the usual
 * first transient slot (64) the range ends at slot 4095, inside the
 * kernel's default hard descriptor limit (4096), so a stack can hold
 * 1,000 live install-mode grants (each keeps a transient slot) with room
 * to spare; powerboxd raises its soft limit to the range's end at startup
 * and refuses to start when the hard limit is lower (docs/STATUS.md).
 */
#define PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX 4032U

/**
 * pbx_bootstrap_geometry is a parsed PBX1 record. Plain values owned by the
 * caller; no pointers into the source buffer survive parsing.
 */
typedef struct pbx_bootstrap_geometry {
    /** PBX1 version; PBX_BOOTSTRAP_VERSION after a successful parse. */
    uint16_t version;
    /** Page size in bytes; a power of two in [PAGE_SIZE_MIN, MAX]. */
    uint32_t page_size_bytes;
    /** Number of pages the deployment patched in for the arena. */
    uint32_t arena_page_count;
    /** Records per pool, indexed by pbx_bootstrap_pool; each nonzero. */
    uint32_t capacity[PBX_BOOTSTRAP_POOL_COUNT];
    /** The type layout each pool was built for, by pbx_bootstrap_pool. */
    pbx_bootstrap_type_layout layout[PBX_BOOTSTRAP_POOL_COUNT];
    /** Outstanding calls allowed per deadline class; 1..CALL_WINDOW_MAX, and
     * call_window * PBX_BOOTSTRAP_CALL_ROUTES <= capacity[POOL_CALLS]. */
    uint32_t call_window;
    /** Deadlines in ms, indexed by pbx_bootstrap_time; 1..TIME_MS_MAX. */
    uint32_t time_ms[PBX_BOOTSTRAP_TIME_COUNT];
    /** SHA-256 over the record's first PBX_BOOTSTRAP_DIGEST_OFFSET bytes. */
    uint8_t digest[PBX_BOOTSTRAP_DIGEST_BYTES];
} pbx_bootstrap_geometry;

/**
 * pbx_bootstrap_pool_extent is where one pool lives inside the arena. The
 * offset is relative to the arena base (never a pointer) and is a multiple
 * of the pool's record alignment.
 */
typedef struct pbx_bootstrap_pool_extent {
    /** Arena offset of the pool's first record. */
    size_t offset_bytes;
    /** capacity * record_size_bytes: the pool's exact extent. */
    size_t size_bytes;
    /** Records the pool holds (copied from the geometry). */
    uint32_t capacity;
    /** Size of one record (copied from the geometry). */
    uint32_t record_size_bytes;
    /** Alignment of one record (copied from the geometry). */
    uint32_t record_align_bytes;
} pbx_bootstrap_pool_extent;

/**
 * pbx_bootstrap_layout is the arena a geometry implies: every pool's
 * extent in pool order, the bytes they span and the page extent. The core
 * carves its arena from it once at startup. Plain values, caller-owned.
 */
typedef struct pbx_bootstrap_layout {
    /** Pool extents indexed by pbx_bootstrap_pool; non-overlapping. */
    pbx_bootstrap_pool_extent pools[PBX_BOOTSTRAP_POOL_COUNT];
    /** End of the last pool: the bytes the pools span from offset zero. */
    size_t used_bytes;
    /** Page size in bytes (a power of two). */
    size_t page_size_bytes;
    /** used_bytes rounded up to whole pages, in pages. */
    size_t page_count;
    /** page_count * page_size_bytes: the arena's exact mapping size. */
    size_t arena_bytes;
    /** Outstanding calls allowed per route kind (the geometry's). */
    uint32_t call_window;
    /** Deadlines in milliseconds by PBX_BOOTSTRAP_TIME_* (the geometry's). */
    uint32_t time_ms[PBX_BOOTSTRAP_TIME_COUNT];
} pbx_bootstrap_layout;

/**
 * pbx_bootstrap_pool_name returns a static, NUL-terminated, lower-case
 * name for pool ("requests", "selector-bytes", ...), or "unknown" for a
 * value outside the enum. The string lives for the whole program.
 */
const char *pbx_bootstrap_pool_name(pbx_bootstrap_pool pool);

/**
 * pbx_bootstrap_capacity_max returns the documented maximum capacity of
 * pool (PBX_BOOTSTRAP_SELECTOR_BYTES_MAX for selector bytes, otherwise
 * PBX_BOOTSTRAP_RECORDS_MAX), or 0 for a value outside the enum.
 */
uint32_t pbx_bootstrap_capacity_max(pbx_bootstrap_pool pool);

/**
 * pbx_bootstrap_parse decodes and authenticates one PBX1 record. buf holds
 * len bytes of untrusted input and is only read during the call; len must
 * be exactly PBX_BOOTSTRAP_RECORD_BYTES. On success *out holds the
 * geometry and PBX_OK is returned; on any failure a distinct PBX_E_BOOTSTRAP
 * error is returned and *out is left untouched. The check order is: a
 * length that covers magic and version, magic, version, exact length,
 * digest, reserved fields, then the semantic checks of
 * pbx_bootstrap_geometry_check.
 */
pbx_err pbx_bootstrap_parse(const uint8_t *buf, size_t len,
                            pbx_bootstrap_geometry *out);

/**
 * pbx_bootstrap_geometry_check validates the values of g except its digest:
 * version, page size, every capacity against zero and its maximum, every
 * type layout's shape, that the raw pool totals stay within
 * PBX_BOOTSTRAP_ARENA_BYTES_MAX, that the patched extent
 * (arena_page_count pages) does too, the call window's range, that the
 * calls pool holds a full window on every call route, and every
 * deadline's range, in that order. Whether the page count equals the
 * derived one is pbx_bootstrap_layout_derive's check. Reads g only.
 */
pbx_err pbx_bootstrap_geometry_check(const pbx_bootstrap_geometry *g);

/**
 * pbx_bootstrap_time_name returns a static, NUL-terminated, lower-case
 * name for a deadline ("vfsd", "ttyd", "procd", "scope", "prompt",
 * "open"), or "unknown" for a value outside the enum. The string lives for
 * the whole program.
 */
const char *pbx_bootstrap_time_name(pbx_bootstrap_time time);

/**
 * pbx_bootstrap_encode writes g as a PBX1 record into out, which must have
 * room for len bytes; len must be exactly PBX_BOOTSTRAP_RECORD_BYTES. It
 * validates g first (pbx_bootstrap_geometry_check) and writes nothing on
 * failure. g->digest is ignored: the digest written is computed afresh.
 */
pbx_err pbx_bootstrap_encode(const pbx_bootstrap_geometry *g, uint8_t *out,
                             size_t len);

/**
 * pbx_bootstrap_pages_compute derives the arena page count that g's
 * capacities, layouts and page size imply, ignoring g->arena_page_count
 * (a deployment tool uses it to fill that field in). Stores the count in
 * *pages_out and returns PBX_OK, or returns an error and leaves *pages_out
 * untouched.
 */
pbx_err pbx_bootstrap_pages_compute(const pbx_bootstrap_geometry *g,
                                    uint32_t *pages_out);

/**
 * pbx_bootstrap_layout_derive checks g's type layouts against the compiled
 * layouts in expected (PBX_BOOTSTRAP_POOL_COUNT entries, read only) and
 * computes the arena layout into *out. A mismatching pool yields its own
 * PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_* error (see pbx_bootstrap_mismatch_pool);
 * a patched page count that differs from the derived one yields
 * PBX_E_BOOTSTRAP_PAGE_EXTENT; overflow yields PBX_E_BOOTSTRAP_TOTAL. On
 * failure *out is left untouched.
 */
pbx_err pbx_bootstrap_layout_derive(
    const pbx_bootstrap_geometry *g,
    const pbx_bootstrap_type_layout expected[PBX_BOOTSTRAP_POOL_COUNT],
    pbx_bootstrap_layout *out);

/**
 * pbx_bootstrap_mismatch_pool reports whether err is a per-pool type layout
 * mismatch; when it is, it stores the pool in *pool and returns true.
 */
bool pbx_bootstrap_mismatch_pool(pbx_err err, pbx_bootstrap_pool *pool);

#endif /* PBX_BOOTSTRAP_H */
