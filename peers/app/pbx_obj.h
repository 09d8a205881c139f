/*
 * pbx_obj.h: calls a program makes on an object descriptor vfsd minted
 * (what a grant gave it: docs/HOST.md, "Objects"). Hosted code: libc and
 * POSIX. Part of libpbx-app.a.
 *
 * An object serves STAT always, and READ, LIST or WRITE only when it was
 * granted for that operation: a READ grant on a file reads, a LIST grant
 * on a directory lists, a WRITE grant on a file writes; OPEN turns a READ
 * or WRITE grant on a file into a revocable descriptor. Every other call
 * is refused by vfsd with a distinct status, and after the grant ends
 * (RETIRE, or vfsd's route to powerboxd closed) every call fails at once.
 *
 * Each function sends its calls on obj and waits at most
 * PBX_OBJ_TIMEOUT_MS for each reply. They keep no state but a call
 * counter, so one object may be used by one thread at a time; different
 * objects are independent. obj stays the caller's: nothing here closes
 * it.
 */
#ifndef PBX_OBJ_H
#define PBX_OBJ_H

#include <stddef.h>
#include <stdint.h>

/** PBX_OBJ_TIMEOUT_MS bounds the wait for each reply. */
#define PBX_OBJ_TIMEOUT_MS 10000

/** pbx_obj_info is what STAT reports of an object's file. */
typedef struct pbx_obj_info {
    /** dev is the device of the file vfsd opened at RESOLVE. */
    uint64_t dev;
    /** ino is its inode number. */
    uint64_t ino;
    /** size is its size in bytes now (for a STAT-only object: when vfsd
     * resolved it). */
    uint64_t size;
} pbx_obj_info;

/*
 * Statuses: 0 on success, else a pbx_err value of the tools range
 * (base/err/tools.def) that pbx_obj_strerror names, never an errno.
 * vfsd's refusals: PBX_E_OBJ_NOT_GRANTED, PBX_E_OBJ_READ_ONLY,
 * PBX_E_OBJ_IS_DIR, PBX_E_OBJ_NOT_DIR, PBX_E_OBJ_KIND, PBX_E_OBJ_RANGE,
 * PBX_E_OBJ_LENGTH, PBX_E_OBJ_RETIRED, PBX_E_OBJ_NO_OP, PBX_E_OBJ_IO. The
 * connection's: PBX_E_OBJ_GONE (closed: the grant ended or vfsd is gone),
 * PBX_E_OBJ_TIMEOUT, PBX_E_OBJ_TRANSPORT. The arguments':
 * PBX_E_OBJ_ARG. A malformed reply: the pbx_err of its first fault (a
 * PBX_E_IPC_* value, or PBX_E_PEER_MISMATCH).
 */

/**
 * pbx_obj_read reads up to len bytes of the file at offset into buf,
 * in calls of at most 4096 bytes each, and stores how many it stored in
 * *got (also on a failure: the bytes before it). Fewer than len only
 * where the file ends; an offset at the end reads nothing (0 returned),
 * one past it is PBX_E_OBJ_RANGE. buf may be NULL only when len is 0;
 * got must not be NULL.
 */
int pbx_obj_read(int obj, uint64_t offset, void *buf, size_t len, size_t *got);

/**
 * pbx_obj_stat asks what the object names into *out (written only on
 * success). Served on every live object.
 */
int pbx_obj_stat(int obj, pbx_obj_info *out);

/**
 * pbx_obj_list lists one page of a directory object from entry cookie (0:
 * the first) into names[0..cap): each entry's name NUL-terminated, packed
 * one after another, *used bytes in all ("." and ".." are never listed).
 * *next is the cookie of the next page, 0 when no entry is left. cap must
 * be at least 256 (a name of up to 255 bytes always fits), else
 * PBX_E_OBJ_ARG; a page holds at most 4088 bytes whatever cap is. A
 * cookie past the last entry is PBX_E_OBJ_RANGE. Cookies count entries,
 * so a directory that changes between pages may repeat or skip names.
 */
int pbx_obj_list(int obj, uint32_t cookie, char *names, size_t cap,
                 size_t *used, uint32_t *next);

/**
 * pbx_obj_write writes the len bytes at buf into the file at offset, in
 * calls of at most 4096 bytes each, and stores how many were written in
 * *put (also on a failure). offset may be at most the file's size (at
 * the size it appends), else PBX_E_OBJ_RANGE. Served only by an object
 * granted for writing (else PBX_E_OBJ_READ_ONLY). buf may be NULL only
 * when len is 0; put must not be NULL.
 */
int pbx_obj_write(int obj, uint64_t offset, const void *buf, size_t len,
                  size_t *put);

/**
 * pbx_obj_open_fd asks vfsd for a revocable descriptor on a file object
 * (OPEN): mode 1 reads, 2 writes, 3 both (PBX_PEER_VFS_MODE_*). On success
 * *fd_out is a regular-file descriptor (close-on-exec, the caller's to
 * close) on vfsd's FUSE mount: read, pread, lseek and fstat work (write
 * and ftruncate for mode 2), every access reaches vfsd, and after the
 * grant ends or vfsd dies the next one fails with EIO. On a failure
 * *fd_out is -1 and nothing is held: vfsd's refusals are those of READ
 * and WRITE (PBX_E_OBJ_NOT_GRANTED, PBX_E_OBJ_READ_ONLY, ...), plus
 * PBX_E_OBJ_NO_REVOCABLE where vfsd could not mount FUSE and
 * PBX_E_PEER_BUSY where its table of open descriptors is full.
 */
int pbx_obj_open_fd(int obj, uint32_t mode, int *fd_out);

/**
 * pbx_obj_strerror returns a static description of status (0: "ok"); the
 * string lives for the whole program.
 */
const char *pbx_obj_strerror(int status);

#endif /* PBX_OBJ_H */
