/*
 * pbx_peer_sandbox.h: the pure decisions behind launchd's sandboxed jobs
 * (docs/HOST.md, "Sandboxed programs"): which Landlock rights a ruleset
 * handles for the ABI the running kernel reports and whether that kernel
 * can sandbox at all. No system call is made here, so each decision is
 * tested for every ABI without a kernel that has (or lacks) Landlock.
 * The paths a job may use are the profile's (pbx_peer_profile.h).
 */
#ifndef PBX_PEER_SANDBOX_H
#define PBX_PEER_SANDBOX_H

#include "base/pbx_base.h"

/*
 * Landlock's access rights and scopes as the kernel's uapi numbers them
 * (linux/landlock.h). They are spelled out here because the build host's
 * header may predate the running kernel; the numbers are kernel ABI and
 * never change.
 */
/** PBX_PEER_LL_FS_EXECUTE: execute a file. */
#define PBX_PEER_LL_FS_EXECUTE (1ULL << 0)
/** PBX_PEER_LL_FS_READ_FILE: open a file for reading. */
#define PBX_PEER_LL_FS_READ_FILE (1ULL << 2)
/** PBX_PEER_LL_FS_ABI1: every filesystem right of ABI 1 (bits 0..12). */
#define PBX_PEER_LL_FS_ABI1 ((1ULL << 13) - 1ULL)
/** PBX_PEER_LL_FS_REFER: link or rename across directories (ABI 2). */
#define PBX_PEER_LL_FS_REFER (1ULL << 13)
/** PBX_PEER_LL_FS_TRUNCATE: truncate a file (ABI 3). */
#define PBX_PEER_LL_FS_TRUNCATE (1ULL << 14)
/** PBX_PEER_LL_FS_IOCTL_DEV: ioctl on a device file (ABI 5). */
#define PBX_PEER_LL_FS_IOCTL_DEV (1ULL << 15)
/** PBX_PEER_LL_NET_BIND_TCP: bind a TCP socket to a port (ABI 4). */
#define PBX_PEER_LL_NET_BIND_TCP (1ULL << 0)
/** PBX_PEER_LL_NET_CONNECT_TCP: connect a TCP socket to a port (ABI 4). */
#define PBX_PEER_LL_NET_CONNECT_TCP (1ULL << 1)
/** PBX_PEER_LL_SCOPE_ABSTRACT_UNIX: abstract unix sockets (ABI 6). */
#define PBX_PEER_LL_SCOPE_ABSTRACT_UNIX (1ULL << 0)
/** PBX_PEER_LL_SCOPE_SIGNAL: signals to processes outside (ABI 6). */
#define PBX_PEER_LL_SCOPE_SIGNAL (1ULL << 1)

/**
 * pbx_peer_sandbox_plan is the ruleset a sandboxed job gets: the
 * filesystem rights handled (denied unless a rule allows them), the
 * scopes (ABI 6 and later, else zero), and the rights its one rule
 * allows on the program's own file. Plain data, caller-owned.
 */
typedef struct pbx_peer_sandbox_plan {
    /** abi is the Landlock ABI the plan was made for (1 or more). */
    long abi;
    /** handled_fs is every filesystem right that ABI knows. */
    uint64_t handled_fs;
    /** handled_net is BIND_TCP and CONNECT_TCP from ABI 4 (no rule
     * allows either, so both are denied), else zero. */
    uint64_t handled_net;
    /** scoped is the scopes enforced (zero before ABI 6). */
    uint64_t scoped;
    /** prog_access is what the rule on the program's file allows. */
    uint64_t prog_access;
} pbx_peer_sandbox_plan;

/**
 * pbx_peer_sandbox_decide makes the plan for what the kernel answered to
 * landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION): abi
 * is its return value and err the errno when abi is negative. Returns
 * PBX_OK with *out filled for an ABI of 1 or more (an ABI newer than 7 is
 * planned with the rights this code knows, all of which it still has);
 * PBX_E_PEER_NO_LANDLOCK when the kernel has none (ENOSYS, EOPNOTSUPP,
 * or an ABI below 1); PBX_E_PEER_SANDBOX for any other failure. *out is
 * written only on PBX_OK.
 */
pbx_err pbx_peer_sandbox_decide(long abi, int err, pbx_peer_sandbox_plan *out);

#endif /* PBX_PEER_SANDBOX_H */
