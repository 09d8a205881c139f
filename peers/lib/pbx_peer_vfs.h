/*
 * pbx_peer_vfs.h: vfsd's pure decisions. Selector confinement (what a
 * scope-relative selector may name at all), the operation/class rules, the
 * RESOLVE verdict from a lookup observation, and the object table that
 * tracks every minted object connection until RETIRE.
 *
 * The I/O main resolves an accepted selector with openat2 and
 * RESOLVE_BENEATH, which confines symlinks to the scope in the kernel; this
 * layer rejects what must never reach the kernel (absolute paths, "..",
 * ".", empty components, NUL bytes) and turns the kernel's answer into one
 * exact protocol result.
 */
#ifndef PBX_PEER_VFS_H
#define PBX_PEER_VFS_H

#include "ipc/pbx_ipc.h"

/** PBX_PEER_VFS_PATH_BYTES_MAX bounds an accepted path, NUL included. */
#define PBX_PEER_VFS_PATH_BYTES_MAX 4097U
/** PBX_PEER_VFS_OBJECTS_MAX is the object table's default capacity (what
 * pbx_peer_objtab_init gives; vfsd's --objects chooses another). */
#define PBX_PEER_VFS_OBJECTS_MAX 256U
/** PBX_PEER_VFS_OBJECTS_CAP is the most rows a table can have: its static
 * storage, so no table grows after startup. */
#define PBX_PEER_VFS_OBJECTS_CAP 4096U

/** pbx_peer_sel is the verdict on a selector's shape. */
typedef enum pbx_peer_sel {
    /** The selector is a clean relative path. */
    PBX_PEER_SEL_OK = 0,
    /** Zero bytes long. */
    PBX_PEER_SEL_EMPTY = 1,
    /** Starts with '/': absolute paths never resolve inside a scope. */
    PBX_PEER_SEL_ABSOLUTE = 2,
    /** Has a ".." component. */
    PBX_PEER_SEL_DOTDOT = 3,
    /** Has a "." component (selectors are canonical). */
    PBX_PEER_SEL_DOT = 4,
    /** Has an empty component ("a//b" or a trailing '/'). */
    PBX_PEER_SEL_EMPTY_COMPONENT = 5,
    /** Holds a NUL byte. */
    PBX_PEER_SEL_NUL = 6,
    /** Longer than the output buffer allows. */
    PBX_PEER_SEL_TOO_LONG = 7
} pbx_peer_sel;

/**
 * pbx_peer_vfs_selector_check judges len selector bytes and, when they are
 * a clean relative path, copies them NUL-terminated into out (out_len
 * bytes). out is written only on PBX_PEER_SEL_OK. sel may be NULL only
 * when len is 0.
 */
pbx_peer_sel pbx_peer_vfs_selector_check(const uint8_t *sel, size_t len,
                                         char *out, size_t out_len);

/** pbx_peer_sel_text returns a static description of a selector verdict. */
const char *pbx_peer_sel_text(pbx_peer_sel s);

/** pbx_peer_lookup is what the kernel said about a confined lookup. */
typedef enum pbx_peer_lookup {
    /** The object exists; its file type is reported separately. */
    PBX_PEER_LOOKUP_OK = 0,
    /** ENOENT: the named object does not exist. */
    PBX_PEER_LOOKUP_MISSING = 1,
    /** EXDEV: resolution would leave the scope (symlink or ".."). */
    PBX_PEER_LOOKUP_ESCAPE = 2,
    /** ELOOP: a symlink loop, or a symlink where none may be. */
    PBX_PEER_LOOKUP_LOOP = 3,
    /** EACCES or EPERM. */
    PBX_PEER_LOOKUP_ACCESS = 4,
    /** ENOTDIR: a middle component is not a directory. */
    PBX_PEER_LOOKUP_NOTDIR = 5,
    /** Anything else, including transport or internal failures. */
    PBX_PEER_LOOKUP_OTHER = 6
} pbx_peer_lookup;

/** pbx_peer_ftype is the file type of a found object. */
typedef enum pbx_peer_ftype {
    /** Regular file. */
    PBX_PEER_FT_REGULAR = 1,
    /** Directory. */
    PBX_PEER_FT_DIRECTORY = 2,
    /** Character or block device. */
    PBX_PEER_FT_DEVICE = 3,
    /** Socket. */
    PBX_PEER_FT_SOCKET = 4,
    /** Symbolic link (seen only when the final component is not followed). */
    PBX_PEER_FT_SYMLINK = 5,
    /** FIFO or anything else. */
    PBX_PEER_FT_OTHER = 6
} pbx_peer_ftype;

/** pbx_peer_vfs_verdict is one RESOLVE answer before any object exists. */
typedef struct pbx_peer_vfs_verdict {
    /** result is a pbx_ipc_resolve_result. */
    uint8_t result;
    /** object_class: FOUND class, NOT_FOUND missing class, DENIED 0. */
    uint16_t object_class;
} pbx_peer_vfs_verdict;

/**
 * pbx_peer_vfs_class_allows reports whether operation may be asked of an
 * object of object_class: LIST needs a directory, EXECUTE a file, the entry
 * operations a directory entry, CREATE a file; READ and WRITE any file,
 * device or endpoint (READ also a directory). Unknown values are never
 * allowed.
 */
bool pbx_peer_vfs_class_allows(uint16_t operation, uint16_t object_class);

/**
 * pbx_peer_vfs_follow_final reports whether the final component is
 * followed when it is a symlink: for a directory entry the entry itself is
 * the object, so it is not.
 */
bool pbx_peer_vfs_follow_final(uint16_t object_class);

/**
 * pbx_peer_vfs_judge turns the selector verdict, the lookup observation and
 * the found file type into the exact RESOLVE answer for (operation,
 * want_class). DENIED for a bad selector, an operation the class does not
 * allow, any lookup failure but MISSING, or a found object of another
 * class; NOT_FOUND (class = want_class) only for a clean MISSING; FOUND
 * otherwise. lookup and ftype are ignored when an earlier rule decides.
 */
pbx_peer_vfs_verdict pbx_peer_vfs_judge(uint16_t operation, uint16_t want_class,
                                        pbx_peer_sel sel,
                                        pbx_peer_lookup lookup,
                                        pbx_peer_ftype ftype);

/** pbx_peer_obj_state is the state of one object table row. */
typedef enum pbx_peer_obj_state {
    /** Never used, or reused. */
    PBX_PEER_OBJ_FREE = 0,
    /** Minted: vfsd holds the provider end, the connection is alive. */
    PBX_PEER_OBJ_LIVE = 1,
    /** Retired: the provider end was cut; kept to ack a repeated RETIRE. */
    PBX_PEER_OBJ_RETIRED = 2,
    /** Hung up: every receiver copy was closed (the provider end saw the
     * hang-up), so nobody holds the object and the provider end was
     * closed; kept to acknowledge the RETIRE powerboxd may still send. */
    PBX_PEER_OBJ_HUNG = 3
} pbx_peer_obj_state;

/** pbx_peer_obj is one object table row; plain data. */
typedef struct pbx_peer_obj {
    /** state is a pbx_peer_obj_state. */
    uint8_t state;
    /** object_class is the object's pbx_ipc_class. */
    uint16_t object_class;
    /** gen is the object's generation (nonzero once minted). */
    uint32_t gen;
    /** id is the object identity (on the host: the SEND end's inode). */
    uint64_t id;
    /** scope_id is the scope the object was resolved in. */
    uint64_t scope_id;
    /** provider is the I/O main's handle of the provider end (an fd). */
    int provider;
    /** detached counts accepted DETACH calls (diagnostics only). */
    uint32_t detached;
} pbx_peer_obj;

/** pbx_peer_obj_ring is a FIFO of row indexes (one per row at most). */
typedef struct pbx_peer_obj_ring {
    /** first is the index in at of the oldest entry. */
    uint32_t first;
    /** count is the entries held. */
    uint32_t count;
    /** at holds the rows, oldest at first, wrapping at the table's cap. */
    uint32_t at[PBX_PEER_VFS_OBJECTS_CAP];
    /** in marks the rows held (so none is held twice). */
    bool in[PBX_PEER_VFS_OBJECTS_CAP];
} pbx_peer_obj_ring;

/**
 * pbx_peer_objtab is vfsd's caller-allocated object table. Rows are found
 * by exact identity; a retired row is kept until its space is needed.
 * Generations are minted in strictly increasing order, one per object, so
 * a generation below next_gen that no row holds any more names an object
 * that was minted, is no longer live (live rows are never reused) and whose
 * row was reused: such an object is provably dead.
 */
typedef struct pbx_peer_objtab {
    /** next_gen is the generation the next minted object gets (nonzero). */
    uint32_t next_gen;
    /** wrapped is true once next_gen has wrapped past UINT32_MAX (every
     * generation has then been minted at least once). */
    bool wrapped;
    /** cap is the rows in use, 1..PBX_PEER_VFS_OBJECTS_CAP, fixed at
     * init: rows[cap..] are never touched. */
    size_t cap;
    /** mask is the generation index's bucket count minus one (a power of
     * two at least cap): a row is found by its generation in the chain
     * of bucket gen & mask, so a lookup costs the same whatever the live
     * objects (generations are consecutive, so chains stay short). */
    uint32_t mask;
    /** head is each bucket's first row, -1 for none. */
    int32_t head[PBX_PEER_VFS_OBJECTS_CAP];
    /** next is each row's successor in its bucket's chain (-1: last); a
     * row is in a chain from its first mint on (gen nonzero). */
    int32_t next[PBX_PEER_VFS_OBJECTS_CAP];
    /** fresh is the first row never minted: rows fresh..cap-1 are free
     * and are handed out in order before any other. */
    size_t fresh;
    /** rings are the rows the table itself made free (unmint), retired
     * and hung up, oldest first, each row at most once per ring
     * (PBX_PEER_OBJ_RING_*): reserve takes a ring's oldest row in O(1),
     * so picking a row does not walk the live ones. */
    pbx_peer_obj_ring rings[3];
    /** rows are the table entries (the first cap of them). */
    pbx_peer_obj rows[PBX_PEER_VFS_OBJECTS_CAP];
} pbx_peer_objtab;

/** pbx_peer_objtab_init empties t (old contents ignored) with the default
 * capacity, PBX_PEER_VFS_OBJECTS_MAX rows. */
void pbx_peer_objtab_init(pbx_peer_objtab *t);

/** pbx_peer_objtab_init_cap empties t with room for cap live objects;
 * cap must be 1..PBX_PEER_VFS_OBJECTS_CAP (the caller checks an option's
 * value before). Touches only the header and the first cap rows. */
void pbx_peer_objtab_init_cap(pbx_peer_objtab *t, size_t cap);

/**
 * pbx_peer_objtab_reserve picks a row for a new object: a free row, else
 * a retired one, else a hung-up one (a RETIRE may still come for it, so
 * it is reused last). Rows the table itself freed, retired or hung up are
 * taken oldest first in O(1) (never-minted rows first, in order); when a
 * row's state was changed behind the table's back, or none is found that
 * way, every row is looked at: the first free, else the first retired,
 * else the first hung-up one. Stores its index in *row and returns 0, or
 * returns PBX_PEER_E_BUSY when every row is live. Changes nothing.
 */
uint32_t pbx_peer_objtab_reserve(const pbx_peer_objtab *t, size_t *row);

/**
 * pbx_peer_objtab_mint fills row (from pbx_peer_objtab_reserve) with a
 * live object of identity id, the next generation, scope_id, object_class
 * and provider handle, and returns the generation given. Cannot fail.
 */
uint32_t pbx_peer_objtab_mint(pbx_peer_objtab *t, size_t row, uint64_t id,
                              uint64_t scope_id, uint16_t object_class,
                              int provider);

/**
 * pbx_peer_objtab_detach_check accepts powerboxd's alias for DETACH: a
 * live row with exactly id and gen whose identity the received capability
 * proves (observed_id, the inode of what arrived, equals id). Returns 0
 * and the row in *row, PBX_PEER_E_UNKNOWN, or PBX_PEER_E_MISMATCH.
 */
uint32_t pbx_peer_objtab_detach_check(const pbx_peer_objtab *t, uint64_t id,
                                      uint32_t gen, uint64_t observed_id,
                                      size_t *row);

/**
 * pbx_peer_objtab_retire retires the row with exactly id, gen, scope_id
 * and object_class. A live row becomes RETIRED and its provider handle is
 * stored in *provider (the caller cuts it); an already retired or hung-up
 * exact row becomes RETIRED and stores -1 (nothing left to cut; the call
 * is acknowledged). RETIRE is idempotent: a repeat (a retry after a lost
 * or late acknowledgement) is acknowledged the same way, even after the
 * row was reused for another object: a generation that was minted (below
 * next_gen, or any once wrapped) and that no row holds any more is dead,
 * so it is acknowledged with -1 too. Returns 0; PBX_PEER_E_MISMATCH when
 * the row with id and gen names another scope or class, or another row
 * holds gen under another id; PBX_PEER_E_UNKNOWN for generation 0 or one
 * never minted. Nothing changes on an error.
 */
uint32_t pbx_peer_objtab_retire(pbx_peer_objtab *t, uint64_t id, uint32_t gen,
                                uint64_t scope_id, uint16_t object_class,
                                int *provider);

/**
 * pbx_peer_objtab_hangup records that the provider end of live row has
 * seen the hang-up of every receiver copy: nobody holds the object any
 * more, so the row becomes HUNG and its provider handle is stored in
 * *provider for the caller to close. Returns 0, or PBX_PEER_E_UNKNOWN
 * (nothing changed) when row is out of range or not live.
 */
uint32_t pbx_peer_objtab_hangup(pbx_peer_objtab *t, size_t row, int *provider);

/**
 * pbx_peer_objtab_unmint frees row, reserved and minted but never handed
 * out (its FOUND could not be sent): it is reused before retired rows.
 */
void pbx_peer_objtab_unmint(pbx_peer_objtab *t, size_t row);

/**
 * pbx_peer_objtab_find finds the row holding exactly id and gen in any
 * state but free (through the generation index: its cost does not grow
 * with the live objects); returns true and its index in *row.
 */
bool pbx_peer_objtab_find(const pbx_peer_objtab *t, uint64_t id, uint32_t gen,
                          size_t *row);

/** pbx_peer_objtab_live counts live rows (for listings and tests). */
size_t pbx_peer_objtab_live(const pbx_peer_objtab *t);

/*
 * Object connections. vfsd serves its own (provider) end of every object
 * connection it minted. Calls and replies are framed with the ipc v2
 * 32-byte header (magic, version, op, status, request id echoed, seq
 * echoed, reserved word zero) but use op numbers outside every
 * pbx_ipc_op, so pbx_ipc_frame_decode does not know them: these
 * functions are their whole codec. docs/HOST.md describes the wire form.
 */

/** PBX_PEER_OP_OBJ_STAT asks an object what it names: header only, no
 * body, no descriptor. The reply (op | PBX_IPC_REPLY_BIT) carries
 * PBX_PEER_VFS_STAT_BODY_BYTES: u64 dev, u64 ino, u64 size. */
#define PBX_PEER_OP_OBJ_STAT 0x0F10U
/** PBX_PEER_VFS_STAT_BODY_BYTES is the body length of a STAT reply. */
#define PBX_PEER_VFS_STAT_BODY_BYTES 24U

/** pbx_peer_vfs_stat is what OBJ_STAT reports of the object's file. */
typedef struct pbx_peer_vfs_stat {
    /** dev is the device of the file vfsd opened at RESOLVE. */
    uint64_t dev;
    /** ino is its inode number. */
    uint64_t ino;
    /** size is its size in bytes when vfsd opened it. */
    uint64_t size;
} pbx_peer_vfs_stat;

/** PBX_PEER_OP_OBJ_READ reads bytes of a file object. Body
 * PBX_PEER_VFS_READ_BODY_BYTES: u64 offset, u32 length (at most
 * PBX_PEER_VFS_IO_BYTES_MAX), u32 zero. The reply's body is the bytes
 * read: exactly length, fewer only where the file ends. */
#define PBX_PEER_OP_OBJ_READ 0x0F11U
/** PBX_PEER_OP_OBJ_LIST lists one page of a directory object. Body
 * PBX_PEER_VFS_LIST_BODY_BYTES: u32 cookie (0: the first entry), u32 cap
 * (name bytes the caller takes, PBX_PEER_VFS_NAME_BYTES_MAX up to
 * PBX_PEER_VFS_LIST_NAMES_MAX). The reply's body: u32 next cookie (0: no
 * entry left), u32 count, then count names, each NUL-terminated, at most
 * cap bytes in all. */
#define PBX_PEER_OP_OBJ_LIST 0x0F12U
/** PBX_PEER_OP_OBJ_WRITE writes bytes into a file object granted for
 * writing. Body: u64 offset, u32 length, u32 zero (the
 * PBX_PEER_VFS_WRITE_FIXED_BYTES), then exactly length bytes (at most
 * PBX_PEER_VFS_IO_BYTES_MAX). The reply's body
 * (PBX_PEER_VFS_WRITE_REPLY_BYTES): u32 bytes written. */
#define PBX_PEER_OP_OBJ_WRITE 0x0F13U
/** PBX_PEER_OP_OBJ_OPEN asks for a revocable descriptor on a file object.
 * Body PBX_PEER_VFS_OPEN_BODY_BYTES: u32 mode (PBX_PEER_VFS_MODE_*), u32
 * zero. A status-0 reply has no body, cap count 1, and carries exactly one
 * descriptor (SCM_RIGHTS): a regular file on vfsd's FUSE mount that
 * serves this object alone (docs/HOST.md, "Revocable descriptors"). */
#define PBX_PEER_OP_OBJ_OPEN 0x0F14U
/** PBX_PEER_VFS_OPEN_BODY_BYTES is the body length of an OPEN call. */
#define PBX_PEER_VFS_OPEN_BODY_BYTES 8U
/** PBX_PEER_VFS_MODE_READ opens for reading (a READ or WRITE grant). */
#define PBX_PEER_VFS_MODE_READ 1U
/** PBX_PEER_VFS_MODE_WRITE opens for writing (needs a WRITE grant). */
#define PBX_PEER_VFS_MODE_WRITE 2U
/** PBX_PEER_VFS_MODE_RDWR opens for both (needs a WRITE grant). */
#define PBX_PEER_VFS_MODE_RDWR 3U

/** PBX_PEER_VFS_IO_BYTES_MAX bounds the bytes one READ or WRITE moves. */
#define PBX_PEER_VFS_IO_BYTES_MAX 4096U
/** PBX_PEER_VFS_READ_BODY_BYTES is the body length of a READ call. */
#define PBX_PEER_VFS_READ_BODY_BYTES 16U
/** PBX_PEER_VFS_LIST_BODY_BYTES is the body length of a LIST call. */
#define PBX_PEER_VFS_LIST_BODY_BYTES 8U
/** PBX_PEER_VFS_LIST_HEAD_BYTES is the fixed part of a LIST reply body. */
#define PBX_PEER_VFS_LIST_HEAD_BYTES 8U
/** PBX_PEER_VFS_NAME_BYTES_MAX bounds one listed name, NUL included; it
 * is also the smallest cap a LIST call may give (one name always fits). */
#define PBX_PEER_VFS_NAME_BYTES_MAX 256U
/** PBX_PEER_VFS_LIST_NAMES_MAX bounds the name bytes of one LIST page. */
#define PBX_PEER_VFS_LIST_NAMES_MAX                                            \
    (PBX_PEER_VFS_IO_BYTES_MAX - PBX_PEER_VFS_LIST_HEAD_BYTES)
/** PBX_PEER_VFS_WRITE_FIXED_BYTES is a WRITE call's body before its data. */
#define PBX_PEER_VFS_WRITE_FIXED_BYTES 16U
/** PBX_PEER_VFS_WRITE_REPLY_BYTES is the body length of a WRITE reply. */
#define PBX_PEER_VFS_WRITE_REPLY_BYTES 4U
/** PBX_PEER_VFS_CALL_BYTES_MAX bounds every object call (a full WRITE). */
#define PBX_PEER_VFS_CALL_BYTES_MAX                                            \
    (PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_WRITE_FIXED_BYTES +                   \
     PBX_PEER_VFS_IO_BYTES_MAX)
/** PBX_PEER_VFS_REPLY_BYTES_MAX bounds every object reply (a full READ or
 * LIST page). */
#define PBX_PEER_VFS_REPLY_BYTES_MAX                                           \
    (PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_IO_BYTES_MAX)

/** pbx_peer_vfs_call is one call received on an object connection, as
 * far as its reply needs it. */
typedef struct pbx_peer_vfs_call {
    /** op is the call's op (never with the reply bit). */
    uint16_t op;
    /** request is the header's request identity, echoed by the reply. */
    pbx_ipc_id request;
    /** seq is the call's seq, echoed by the reply. */
    uint32_t seq;
    /** status is 0 to serve the call, else the error status to answer. */
    uint32_t status;
    /** offset is where a READ or WRITE starts (0 for other ops). */
    uint64_t offset;
    /** length is the bytes a READ asks for, a WRITE carries, or the name
     * bytes a LIST page may hold (0 for STAT). */
    uint32_t length;
    /** cookie is the LIST entry to start at (0 for other ops). */
    uint32_t cookie;
    /** data borrows the WRITE bytes from the judged buffer (length of
     * them); NULL for other ops. Valid while that buffer is. */
    const uint8_t *data;
    /** mode is an OPEN's PBX_PEER_VFS_MODE_* (0 for other ops). */
    uint32_t mode;
} pbx_peer_vfs_call;

/** pbx_peer_vfs_grant is what an object was minted for: the RESOLVE's
 * operation (a pbx_ipc_operation) and object class (a pbx_ipc_class). */
typedef struct pbx_peer_vfs_grant {
    /** operation is the granted pbx_ipc_operation. */
    uint16_t operation;
    /** object_class is the object's pbx_ipc_class. */
    uint16_t object_class;
} pbx_peer_vfs_grant;

/** pbx_peer_vfs_open is how vfsd opens the file of a new object. */
typedef enum pbx_peer_vfs_open {
    /** A path handle only: the object serves STAT alone. */
    PBX_PEER_VFS_OPEN_PATH = 0,
    /** Read-only: a READ grant on a file. */
    PBX_PEER_VFS_OPEN_READ = 1,
    /** Write-only: a WRITE grant on a file (never created, never
     * truncated). */
    PBX_PEER_VFS_OPEN_WRITE = 2,
    /** A directory opened for listing: a LIST grant on a directory. */
    PBX_PEER_VFS_OPEN_LIST = 3
} pbx_peer_vfs_open;

/**
 * pbx_peer_vfs_open_for returns how the file of an object granted g is
 * opened: for reading only for a READ grant on a file, for writing only
 * for a WRITE grant on a file, as a directory only for a LIST grant on a
 * directory, else as a path handle.
 */
pbx_peer_vfs_open pbx_peer_vfs_open_for(pbx_peer_vfs_grant g);

/**
 * pbx_peer_vfs_obj_call_judge judges the len bytes in buf received on an
 * object connection (extra is true when the message carried descriptors
 * or was cut at the receive buffer; the caller has already dropped the
 * descriptors) for an object granted *g, or retired when g is NULL.
 * Returns false when nothing can be answered: shorter than a header,
 * another magic or version, or a reply (reply bit set). Otherwise fills
 * *call (its data borrows buf) with the first fault in this order:
 * PBX_E_OBJ_RETIRED (g NULL), PBX_E_OBJ_NO_OP (not one of the five
 * object ops), the pbx_err of a malformed call (PBX_E_IPC_CAP_COUNT,
 * PBX_E_IPC_BODY_LEN, PBX_E_IPC_RESERVED, PBX_E_IPC_STATUS), then the
 * grant rules: STAT is served on every object; READ of a directory
 * PBX_E_OBJ_IS_DIR, of a device or endpoint PBX_E_OBJ_KIND, without a
 * READ grant PBX_E_OBJ_NOT_GRANTED; LIST of anything but a directory
 * PBX_E_OBJ_NOT_DIR, without a LIST grant PBX_E_OBJ_NOT_GRANTED; WRITE
 * of a directory PBX_E_OBJ_IS_DIR, of a device or endpoint
 * PBX_E_OBJ_KIND, without a WRITE grant PBX_E_OBJ_READ_ONLY; OPEN of a
 * mode outside 1..3 PBX_E_OBJ_ARG, of a directory PBX_E_OBJ_IS_DIR, of
 * a device or endpoint PBX_E_OBJ_KIND, then mode READ without a READ
 * grant PBX_E_OBJ_NOT_GRANTED, WRITE or RDWR on a READ grant
 * PBX_E_OBJ_READ_ONLY, any other mode the grant does not cover
 * PBX_E_OBJ_NOT_GRANTED; last the lengths: a READ or WRITE length above
 * PBX_PEER_VFS_IO_BYTES_MAX, or a LIST cap outside
 * PBX_PEER_VFS_NAME_BYTES_MAX..PBX_PEER_VFS_LIST_NAMES_MAX, PBX_E_OBJ_LENGTH.
 * Status 0 means serve it. buf may be NULL only when len is 0.
 */
bool pbx_peer_vfs_obj_call_judge(const uint8_t *buf, size_t len, bool extra,
                                 const pbx_peer_vfs_grant *g,
                                 pbx_peer_vfs_call *call);

/**
 * pbx_peer_vfs_obj_range checks a judged READ or WRITE call against the
 * file's current size: an offset past size, or one whose end would not
 * fit in 64 bits, is PBX_E_OBJ_RANGE (a READ at exactly size is served
 * and reads nothing; a WRITE there appends). Returns 0 or that status;
 * other ops always 0.
 */
uint32_t pbx_peer_vfs_obj_range(const pbx_peer_vfs_call *call, uint64_t size);

/**
 * pbx_peer_vfs_obj_read_encode writes a READ call of length bytes at
 * offset with seq (request identity zero) into buf (cap bytes) and its
 * length into *out_len. length is not checked (vfsd judges it). Returns
 * PBX_E_IPC_NO_SPACE when cap is too short.
 */
pbx_err pbx_peer_vfs_obj_read_encode(uint32_t seq, uint64_t offset,
                                     uint32_t length, uint8_t *buf, size_t cap,
                                     size_t *out_len);

/**
 * pbx_peer_vfs_obj_list_encode writes a LIST call for the page starting
 * at cookie holding at most names_cap name bytes, with seq, into buf (cap
 * bytes) and its length into *out_len. Returns PBX_E_IPC_NO_SPACE when
 * cap is too short.
 */
pbx_err pbx_peer_vfs_obj_list_encode(uint32_t seq, uint32_t cookie,
                                     uint32_t names_cap, uint8_t *buf,
                                     size_t cap, size_t *out_len);

/**
 * pbx_peer_vfs_obj_write_encode writes a WRITE call of the n bytes at data
 * (data may be NULL only when n is 0; n at most PBX_PEER_VFS_IO_BYTES_MAX)
 * at offset with seq into buf (cap bytes) and its length into *out_len.
 * Returns PBX_E_IPC_NO_SPACE when cap is too short or n above the bound.
 */
pbx_err pbx_peer_vfs_obj_write_encode(uint32_t seq, uint64_t offset,
                                      const uint8_t *data, size_t n,
                                      uint8_t *buf, size_t cap,
                                      size_t *out_len);

/**
 * pbx_peer_vfs_obj_reply_head writes the header of a status-0 reply to
 * call whose body_len body bytes the caller has put (or puts) at
 * buf + PBX_IPC_HEADER_BYTES; buf holds cap bytes. Stores the whole
 * length in *out_len. Returns PBX_E_IPC_NO_SPACE when the reply does not
 * fit in cap or body_len exceeds PBX_PEER_VFS_IO_BYTES_MAX, or
 * PBX_E_IPC_STATUS when call->status is not 0.
 */
pbx_err pbx_peer_vfs_obj_reply_head(const pbx_peer_vfs_call *call,
                                    size_t body_len, uint8_t *buf, size_t cap,
                                    size_t *out_len);

/**
 * pbx_peer_vfs_page is a LIST reply body being filled: names[0..cap) is
 * caller-allocated and borrowed, used bytes of it are filled with count
 * NUL-terminated names. Initialise it with every field zero but names
 * and cap.
 */
typedef struct pbx_peer_vfs_page {
    /** names receives the packed names (borrowed). */
    uint8_t *names;
    /** cap is the room in names. */
    size_t cap;
    /** used is the bytes filled so far. */
    size_t used;
    /** count is the names added so far. */
    uint32_t count;
} pbx_peer_vfs_page;

/**
 * pbx_peer_vfs_name_ok reports whether the len bytes at name may be
 * listed: 1 to PBX_PEER_VFS_NAME_BYTES_MAX - 1 bytes, no '/', no NUL, not
 * "." or "..".
 */
bool pbx_peer_vfs_name_ok(const uint8_t *name, size_t len);

/**
 * pbx_peer_vfs_page_add appends the len-byte name (which must pass
 * pbx_peer_vfs_name_ok) and its NUL to page p. Returns false, changing
 * nothing, when it does not fit or is not a listable name.
 */
bool pbx_peer_vfs_page_add(pbx_peer_vfs_page *p, const uint8_t *name,
                           size_t len);

/**
 * pbx_peer_vfs_obj_reply_check checks that the len bytes in buf (which
 * came with nfds descriptors) are the reply to the object call op of seq:
 * the header, op | reply bit, seq echoed, no descriptor, reserved zero,
 * body_len equal to what follows the header, and no body with a nonzero
 * status. Stores the status in *status and the body in *body and
 * *body_len (borrowing buf), and returns PBX_OK; or the first fault
 * (PBX_E_IPC_TRUNCATED, _MAGIC, _VERSION, _OP_MISMATCH,
 * PBX_E_PEER_MISMATCH for another seq, _CAP_COUNT, _RESERVED, _BODY_LEN)
 * leaving the outputs untouched. The op's own body rules are the
 * per-op decoders' to check.
 */
pbx_err pbx_peer_vfs_obj_reply_check(const uint8_t *buf, size_t len,
                                     size_t nfds, uint16_t op, uint32_t seq,
                                     uint32_t *status, const uint8_t **body,
                                     size_t *body_len);

/**
 * pbx_peer_vfs_obj_read_reply_decode checks a READ reply to seq that
 * asked for asked bytes (pbx_peer_vfs_obj_reply_check, then a body of at
 * most asked bytes, none with a nonzero status). Stores the bytes in
 * *data and *n (borrowing buf) and the status; returns PBX_OK or the
 * first fault (PBX_E_IPC_BODY_LEN for too many bytes).
 */
pbx_err pbx_peer_vfs_obj_read_reply_decode(const uint8_t *buf, size_t len,
                                           size_t nfds, uint32_t seq,
                                           size_t asked, const uint8_t **data,
                                           size_t *n, uint32_t *status);

/**
 * pbx_peer_vfs_obj_list_reply_decode checks a LIST reply to seq whose
 * call gave names_cap: with status 0 a body of the fixed head and then
 * exactly count well-formed NUL-terminated names (pbx_peer_vfs_name_ok)
 * filling at most names_cap bytes. Stores the names in *names and
 * *names_len (borrowing buf), *count, *next and the status; returns
 * PBX_OK or the first fault (PBX_E_IPC_BODY_LEN for a body of the wrong
 * shape, PBX_E_IPC_BOUND for a malformed name or a wrong count).
 */
pbx_err pbx_peer_vfs_obj_list_reply_decode(const uint8_t *buf, size_t len,
                                           size_t nfds, uint32_t seq,
                                           size_t names_cap,
                                           const uint8_t **names,
                                           size_t *names_len, uint32_t *count,
                                           uint32_t *next, uint32_t *status);

/**
 * pbx_peer_vfs_obj_write_reply_decode checks a WRITE reply to seq that
 * carried sent bytes: with status 0 exactly the
 * PBX_PEER_VFS_WRITE_REPLY_BYTES body naming at most sent bytes written.
 * Stores the count in *put and the status; returns PBX_OK or the first
 * fault (PBX_E_IPC_BODY_LEN for another body or a count above sent).
 */
pbx_err pbx_peer_vfs_obj_write_reply_decode(const uint8_t *buf, size_t len,
                                            size_t nfds, uint32_t seq,
                                            size_t sent, size_t *put,
                                            uint32_t *status);

/**
 * pbx_peer_vfs_obj_judge is pbx_peer_vfs_obj_call_judge for an object
 * that serves STAT alone (a path handle of no class, no operation), live
 * or retired (live false): kept for callers that play or ask OBJ_STAT
 * only. Returns and fills exactly what that function does.
 */
bool pbx_peer_vfs_obj_judge(const uint8_t *buf, size_t len, bool extra,
                            bool live, pbx_peer_vfs_call *call);

/**
 * pbx_peer_vfs_obj_stat_encode writes an OBJ_STAT call with seq (request
 * identity zero) into buf (cap bytes) and its length into *out_len.
 * Returns PBX_E_IPC_NO_SPACE when cap is shorter than a header.
 */
pbx_err pbx_peer_vfs_obj_stat_encode(uint32_t seq, uint8_t *buf, size_t cap,
                                     size_t *out_len);

/**
 * pbx_peer_vfs_obj_reply_encode writes the reply to call into buf (cap
 * bytes) and its length into *out_len: with a nonzero call->status an
 * error reply (header only); with status 0 an OBJ_STAT reply carrying
 * *st (st must then not be NULL). The reply echoes call's request and
 * seq. Returns PBX_E_IPC_NO_SPACE when cap is too short, or
 * PBX_E_IPC_STATUS for a status above 0xFFFF or a status-zero reply to
 * another op than OBJ_STAT.
 */
pbx_err pbx_peer_vfs_obj_reply_encode(const pbx_peer_vfs_call *call,
                                      const pbx_peer_vfs_stat *st, uint8_t *buf,
                                      size_t cap, size_t *out_len);

/**
 * pbx_peer_vfs_obj_stat_reply_decode checks that the len bytes in buf
 * (which came with nfds descriptors) are the reply to the OBJ_STAT call
 * of seq: the header, op OBJ_STAT | reply bit, seq echoed, no descriptor,
 * and either status 0 with exactly the STAT body (stored in *st) or a
 * nonzero status with no body. Stores the status in *status and returns
 * PBX_OK, or the first fault (PBX_E_IPC_TRUNCATED, _MAGIC, _VERSION,
 * _OP_MISMATCH, PBX_E_PEER_MISMATCH for another seq, _CAP_COUNT,
 * _RESERVED, _BODY_LEN) leaving *st and *status untouched.
 */
pbx_err pbx_peer_vfs_obj_stat_reply_decode(const uint8_t *buf, size_t len,
                                           size_t nfds, uint32_t seq,
                                           pbx_peer_vfs_stat *st,
                                           uint32_t *status);

/**
 * pbx_peer_vfs_obj_open_encode writes an OPEN call for mode with seq
 * (request identity zero) into buf (cap bytes) and its length into
 * *out_len. mode is not checked (vfsd judges it). Returns
 * PBX_E_IPC_NO_SPACE when cap is too short.
 */
pbx_err pbx_peer_vfs_obj_open_encode(uint32_t seq, uint32_t mode, uint8_t *buf,
                                     size_t cap, size_t *out_len);

/**
 * pbx_peer_vfs_obj_open_reply_encode writes the status-0 reply to the OPEN
 * call (header only, cap count 1: the caller sends the descriptor with
 * it) into buf (cap bytes) and its length into *out_len. Returns
 * PBX_E_IPC_NO_SPACE when cap is too short, PBX_E_IPC_STATUS when call is
 * no OPEN or its status is not 0 (refusals use
 * pbx_peer_vfs_obj_reply_encode).
 */
pbx_err pbx_peer_vfs_obj_open_reply_encode(const pbx_peer_vfs_call *call,
                                           uint8_t *buf, size_t cap,
                                           size_t *out_len);

/**
 * pbx_peer_vfs_obj_open_reply_decode checks that the len bytes in buf
 * (which came with nfds descriptors) are the reply to the OPEN call of
 * seq: the header, op OPEN | reply bit, seq echoed, reserved zero, no
 * body, and either status 0 with cap count 1 and exactly one descriptor
 * or a nonzero status with none. Stores the status in *status and returns
 * PBX_OK, or the first fault (PBX_E_IPC_TRUNCATED, _MAGIC, _VERSION,
 * _OP_MISMATCH, PBX_E_PEER_MISMATCH for another seq, _CAP_COUNT,
 * _RESERVED, _BODY_LEN) leaving *status untouched. The caller owns and
 * closes the descriptors whatever this returns.
 */
pbx_err pbx_peer_vfs_obj_open_reply_decode(const uint8_t *buf, size_t len,
                                           size_t nfds, uint32_t seq,
                                           uint32_t *status);

#endif /* PBX_PEER_VFS_H */
