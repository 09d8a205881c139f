/*
 * pbx_peer_broker.h: the decisions of the open broker (peers/broker/,
 * docs/HOST.md, "Brokered opens"), kept free of I/O so that each one is
 * tested on chosen inputs (tests/peers/test_peers_broker.c).
 *
 * A sandboxed job's open, openat, openat2 and creat reach the broker as
 * seccomp notifications. The broker reads the path once, makes it
 * absolute (against the program's cwd or directory descriptor) and asks
 * these functions three things: where the path lies (the job's scope,
 * the FUSE mount, the system profile, elsewhere), what the open flags
 * ask for (read, write, create, or a refusal with its errno), and whether
 * the job may be prompted now (a rate and a burst of prompts per job).
 */
#ifndef PBX_PEER_BROKER_H
#define PBX_PEER_BROKER_H

#include "base/pbx_base.h"

/** PBX_PEER_BROKER_PROFILE_MAX bounds the system profile's prefixes. */
#define PBX_PEER_BROKER_PROFILE_MAX 64U

/** Where a path lies (pbx_peer_broker_place). */
typedef enum pbx_peer_broker_where {
    /** PBX_PEER_BROKER_SCOPE: inside the job's scope: a powerbox request. */
    PBX_PEER_BROKER_SCOPE = 1,
    /** PBX_PEER_BROKER_MOUNT: inside or above vfsd's FUSE mount, or
     * inside the scope's own parent chain: refused (EACCES). */
    PBX_PEER_BROKER_MOUNT = 2,
    /** PBX_PEER_BROKER_SYSTEM: under the system profile: the call goes on
     * as the program's own and Landlock decides. */
    PBX_PEER_BROKER_SYSTEM = 3,
    /** PBX_PEER_BROKER_OUTSIDE: anywhere else: EACCES without asking. */
    PBX_PEER_BROKER_OUTSIDE = 4
} pbx_peer_broker_where;

/** What a brokered open asks for (pbx_peer_broker_flags). */
typedef enum pbx_peer_broker_op {
    /** PBX_PEER_BROKER_OP_READ: O_RDONLY of an existing file. */
    PBX_PEER_BROKER_OP_READ = 1,
    /** PBX_PEER_BROKER_OP_WRITE: O_WRONLY or O_RDWR (or O_RDONLY with
     * O_TRUNC) of an existing file. */
    PBX_PEER_BROKER_OP_WRITE = 2,
    /** PBX_PEER_BROKER_OP_CREATE: O_CREAT of a missing file. */
    PBX_PEER_BROKER_OP_CREATE = 3
} pbx_peer_broker_op;

/**
 * pbx_peer_broker_places names the places of one job. Caller-allocated;
 * the strings are borrowed (absolute, without a trailing slash but "/"
 * itself) and must outlive every call that reads them.
 */
typedef struct pbx_peer_broker_places {
    /** scope is the job's scope directory (pbx run --scope DIR). */
    const char *scope;
    /** mount is vfsd's FUSE mount directory, or NULL when none. */
    const char *mount;
    /** profile lists the system profile's paths (files or directories). */
    const char *profile[PBX_PEER_BROKER_PROFILE_MAX];
    /** nprofile is how many of profile are used. */
    size_t nprofile;
} pbx_peer_broker_places;

/**
 * pbx_peer_broker_place says where the absolute path abs (NUL-terminated,
 * as the program wrote it once made absolute, "." and ".." left for the
 * kernel) lies among pl's places, on component boundaries. The mount is
 * checked first (a path inside it, or a parent of it, is refused), then
 * the scope (its rest, without leading slashes, is stored in *rest: a
 * pointer into abs), then the profile. A ".." is left to the
 * resolution: beneath the scope it cannot climb out (openat2), under the
 * profile Landlock decides. Never fails; abs is only read.
 */
pbx_peer_broker_where pbx_peer_broker_place(const pbx_peer_broker_places *pl,
                                            const char *abs, const char **rest);

/**
 * pbx_peer_broker_flags decides what open flags flags (the x86_64 values
 * of the call's flags argument) ask of a brokered path that exists
 * (exists) or not. Stores the operation in *op and returns 0, or returns
 * the positive errno the open fails with: EACCES for O_PATH (a path-only
 * descriptor cannot be revocable) and O_DIRECTORY (only files are
 * brokered), EOPNOTSUPP for O_TMPFILE, EINVAL for the access mode 3,
 * ENOENT for a missing file without O_CREAT, EEXIST for O_CREAT|O_EXCL
 * of an existing one. O_TRUNC on a read-only open counts as a write.
 */
int pbx_peer_broker_flags(uint64_t flags, bool exists, uint8_t *op);

/**
 * pbx_peer_broker_fd_path recognises a reopen through the process's
 * descriptor table: "/proc/self/fd/N", "/proc/thread-self/fd/N",
 * "/proc/TGID/fd/N" and "/proc/TGID/task/TID/fd/N" for the notifying
 * thread tid of process tgid. Stores N in *fd and returns true; false for
 * any other path (also a "/proc" path naming another process). abs is
 * only read.
 */
bool pbx_peer_broker_fd_path(const char *abs, uint32_t tgid, uint32_t tid,
                             uint32_t *fd);

/**
 * pbx_peer_broker_proc_own rewrites a path through the calling process's
 * own /proc entry, "/proc/TGID" or "/proc/TGID/..." (TGID written as the
 * kernel does, without a leading zero), as "/proc/self" with the same
 * rest into out[0..cap), so that it is placed exactly as "/proc/self/..."
 * is ("/proc/TGID/task/TID/..." becomes "/proc/self/task/TID/...").
 * Returns false, out untouched, for any other path (another process's
 * entry too) or when the rewrite does not fit. abs is only read.
 */
bool pbx_peer_broker_proc_own(const char *abs, uint32_t tgid, char *out,
                              size_t cap);

/**
 * pbx_peer_broker_join writes base "/" rel into out[0..cap) (NUL-
 * terminated), or rel alone when it is absolute. base must be absolute.
 * Returns PBX_OK or PBX_E_BASE_OVERFLOW (out holds "") when it does not
 * fit.
 */
pbx_err pbx_peer_broker_join(const char *base, const char *rel, char *out,
                             size_t cap);

/**
 * pbx_peer_broker_rate is one job's prompt budget: a bucket of burst
 * prompts refilled by one every per_ms milliseconds. Caller-allocated;
 * pbx_peer_broker_rate_init fills it.
 */
typedef struct pbx_peer_broker_rate {
    /** burst is the most prompts in a row. */
    uint32_t burst;
    /** per_ms is the time one more prompt takes to be allowed. */
    uint32_t per_ms;
    /** tokens is how many prompts are allowed now. */
    uint32_t tokens;
    /** last_ms is when tokens was last refilled. */
    uint64_t last_ms;
} pbx_peer_broker_rate;

/** pbx_peer_broker_rate_init fills *r with burst prompts allowed at once
 * (at least 1) and one more every per_ms (at least 1), full at now_ms. */
void pbx_peer_broker_rate_init(pbx_peer_broker_rate *r, uint32_t burst,
                               uint32_t per_ms, uint64_t now_ms);

/**
 * pbx_peer_broker_rate_take refills *r up to now_ms and takes one prompt:
 * true when one was left, false (nothing changed but the refill) when the
 * job must be refused without a prompt. A clock going backwards refills
 * nothing.
 */
bool pbx_peer_broker_rate_take(pbx_peer_broker_rate *r, uint64_t now_ms);

/**
 * pbx_peer_broker_default_profile fills pl's profile with the default
 * system profile (the loader and libraries, /usr, /etc, /dev/null,
 * /dev/zero, /dev/urandom, /proc/self, ...). The strings are static.
 */
void pbx_peer_broker_default_profile(pbx_peer_broker_places *pl);

#endif /* PBX_PEER_BROKER_H */
