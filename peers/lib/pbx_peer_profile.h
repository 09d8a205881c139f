/*
 * pbx_peer_profile.h: the system profile of a sandboxed job and the
 * profile files that change it (docs/HOST.md, "Sandboxed programs",
 * "The system profile"). Pure: the caller reads the file and resolves
 * paths; this module decides what the text means and which paths it may
 * name, so every rule of the format and every refusal is tested without
 * a kernel or a filesystem.
 *
 * A profile file is text, one line each (at most PBX_PEER_PROFILE_LINES):
 *
 *   # a comment (a line whose first non-blank byte is '#'), or blank
 *   +r PATH     PATH (file or directory, and everything beneath) read-only
 *   +rx PATH    the same, and its files may be executed
 *   -PATH       remove every entry at or beneath PATH (system or added)
 *
 * PATH is absolute and written plainly: no "//", no "." or ".."
 * component, no trailing '/' (but "/" itself), no control byte. Lines
 * apply in order, after the system profile. Refused, with the line's
 * number: any other line; a PATH at, beneath or above a forbidden
 * directory (the caller's: the stack directory and, once there is one,
 * the FUSE mount; and always /proc: the job's own /proc/PID is in the
 * system profile, never another process's); a
 * removal beneath an entry that stays (Landlock only adds rights, so a
 * part of an allowed tree cannot be taken back); more entries than
 * PBX_PEER_PROFILE_ENTRIES.
 */
#ifndef PBX_PEER_PROFILE_H
#define PBX_PEER_PROFILE_H

#include "base/pbx_base.h"

/** PBX_PEER_PROFILE_BYTES is the largest profile file read. */
#define PBX_PEER_PROFILE_BYTES 16384U
/** PBX_PEER_PROFILE_LINES is the most lines a profile file may have. */
#define PBX_PEER_PROFILE_LINES 512U
/** PBX_PEER_PROFILE_ENTRIES bounds the entries of a profile (the
 * system's and the added ones together). */
#define PBX_PEER_PROFILE_ENTRIES 48U
/** PBX_PEER_PROFILE_PATH is the longest path plus its NUL. */
#define PBX_PEER_PROFILE_PATH 256U
/** PBX_PEER_PROFILE_FORBIDDEN bounds the caller's forbidden paths. */
#define PBX_PEER_PROFILE_FORBIDDEN 4U

/** The access an entry gives. */
typedef enum pbx_peer_profile_access {
    /** Read files, list directories. */
    PBX_PEER_PROFILE_R = 1,
    /** Read, list and execute. */
    PBX_PEER_PROFILE_RX = 2,
    /** Read and write a file (the system profile's three devices only;
     * a profile file cannot ask for it). */
    PBX_PEER_PROFILE_RW = 3
} pbx_peer_profile_access;

/** pbx_peer_profile_entry is one allowed path. */
typedef struct pbx_peer_profile_entry {
    /** path is absolute and NUL-terminated. */
    char path[PBX_PEER_PROFILE_PATH];
    /** access is a pbx_peer_profile_access. */
    uint8_t access;
    /** line is the profile file's line that added it, 0 for the
     * system profile (whose missing paths are skipped; an added path
     * that is missing refuses the profile). */
    uint32_t line;
} pbx_peer_profile_entry;

/**
 * pbx_peer_profile is a profile: its entries, the removals that made it
 * (so resolved paths can be judged too) and whether the job's own
 * /proc/PID is allowed (read-only). Plain data, caller-allocated.
 */
typedef struct pbx_peer_profile {
    /** n is the number of entries. */
    uint32_t n;
    /** entries are the allowed paths. */
    pbx_peer_profile_entry entries[PBX_PEER_PROFILE_ENTRIES];
    /** nremoved is the number of removals. */
    uint32_t nremoved;
    /** removed are the removed paths, in the file's order. */
    pbx_peer_profile_entry removed[PBX_PEER_PROFILE_ENTRIES];
    /** proc_self says whether the job's /proc/PID is readable. */
    bool proc_self;
} pbx_peer_profile;

/**
 * pbx_peer_profile_refusal says why a profile was refused: line is the
 * profile file's line (1-based; 0 when no line is to blame, as for a
 * file too large) and why a static sentence (never NULL after a
 * refusal).
 */
typedef struct pbx_peer_profile_refusal {
    /** line is the 1-based line, or 0. */
    uint32_t line;
    /** why is a static sentence naming what is wrong. */
    const char *why;
} pbx_peer_profile_refusal;

/**
 * pbx_peer_profile_system fills *p with the system profile: read and
 * execute on /usr, /bin, /sbin, /lib, /lib32, /lib64, /libx32; read on
 * /etc/ld.so.cache, /etc/ld.so.preload, /etc/nsswitch.conf, /etc/passwd,
 * /etc/group, /etc/localtime, /etc/locale.alias, /etc/terminfo; read
 * and write on /dev/null,
 * /dev/zero, /dev/urandom; and proc_self. Cannot fail.
 */
void pbx_peer_profile_system(pbx_peer_profile *p);

/**
 * pbx_peer_profile_apply checks the profile file text[0..len) against
 * *p (normally the system profile) and the forbidden directories
 * forbidden[0..nforbidden) (absolute paths written plainly, at most
 * PBX_PEER_PROFILE_FORBIDDEN; /proc is always forbidden), then applies
 * it. On PBX_OK *p is the changed profile; on PBX_E_PEER_PROFILE *p is
 * unchanged and *why says which line and why. text need not end with a
 * newline; a NUL byte anywhere refuses it.
 */
pbx_err pbx_peer_profile_apply(pbx_peer_profile *p, const uint8_t *text,
                               size_t len, const char *const *forbidden,
                               size_t nforbidden,
                               pbx_peer_profile_refusal *why);

/**
 * pbx_peer_profile_removed says whether path (absolute, NUL-terminated)
 * lies at or beneath a path that one of p's removals on a line after
 * `after` names: the caller asks it of each entry's resolved path with
 * the entry's line, so that "-/usr" also drops /bin when /bin is a link
 * into /usr, while a path added back after the removal stays.
 */
bool pbx_peer_profile_removed(const pbx_peer_profile *p, const char *path,
                              uint32_t after);

/**
 * pbx_peer_profile_forbidden returns a static sentence when path
 * (absolute, NUL-terminated, resolved by the caller) lies at, beneath or
 * above one of forbidden[0..nforbidden) or /proc, else NULL: the caller
 * asks it of each entry's resolved path, so a link cannot lead a rule
 * into the stack directory.
 */
const char *pbx_peer_profile_forbidden(const char *path,
                                       const char *const *forbidden,
                                       size_t nforbidden);

/**
 * pbx_peer_profile_rights returns the Landlock rights (PBX_PEER_LL_FS_*
 * bits, pbx_peer_sandbox.h) an entry of access gives, for a directory or
 * (dir false) another file, within handled (the ruleset's handled
 * filesystem rights): a file's rule may carry file rights only.
 */
uint64_t pbx_peer_profile_rights(uint8_t access, bool dir, uint64_t handled);

#endif /* PBX_PEER_PROFILE_H */
