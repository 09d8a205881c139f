/*
 * pbx_peer_seccomp.h: the seccomp-BPF filter of launchd's sandboxed jobs
 * (docs/HOST.md, "Sandboxed programs", "The walls"). Written by hand as
 * classic BPF: no library builds it. Building it makes no system call, so
 * every decision it takes is tested by running the program on chosen
 * seccomp_data records (tests/peers/test_peers_seccomp.c) as well as in
 * the kernel (e2e scenario sandbox-walls).
 *
 * The filter is a deny list for x86_64. Every call of another
 * architecture, and every x32 call, fails with EPERM; the calls below
 * fail with EPERM (never a kill, so the program can say what it was
 * refused); clone3 fails with ENOSYS (its flags are behind a pointer the
 * filter cannot read, so libc falls back to clone, whose flags it reads);
 * everything else is allowed, so the program keeps using what it was
 * given (read, write, sendmsg, recvmsg, poll on its descriptors, mmap,
 * exit, execve of the files Landlock lets it execute).
 */
#ifndef PBX_PEER_SECCOMP_H
#define PBX_PEER_SECCOMP_H

#include "base/pbx_base.h"

#include <linux/filter.h>

/** PBX_PEER_SECCOMP_INSNS_MAX bounds the filter's length (instructions). */
#define PBX_PEER_SECCOMP_INSNS_MAX 224U

/** PBX_PEER_SECCOMP_ARCH_X86_64: AUDIT_ARCH_X86_64 (linux/audit.h). */
#define PBX_PEER_SECCOMP_ARCH_X86_64 0xC000003EU
/** PBX_PEER_SECCOMP_X32_BIT: the bit every x32 system call number has. */
#define PBX_PEER_SECCOMP_X32_BIT 0x40000000U
/** PBX_PEER_SECCOMP_CLONE_NS: clone's namespace flags (CLONE_NEWNS,
 * NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET). */
#define PBX_PEER_SECCOMP_CLONE_NS 0x7E020000U
/** PBX_PEER_SECCOMP_TIOCSTI: the ioctl that types into a terminal. */
#define PBX_PEER_SECCOMP_TIOCSTI 0x5412U

/**
 * pbx_peer_seccomp_call names one x86_64 system call the filter treats
 * specially. Static data, never freed.
 */
typedef struct pbx_peer_seccomp_call {
    /** nr is the x86_64 system call number (kernel ABI, never changes). */
    uint32_t nr;
    /** arg is the argument that names a process (self-only calls). */
    uint32_t arg;
    /** name is the call's name, for messages and docs/HOST.md. */
    const char *name;
} pbx_peer_seccomp_call;

/**
 * pbx_peer_seccomp_filter is the whole program: insns[0..len). Caller-
 * allocated; pbx_peer_seccomp_build fills it.
 */
typedef struct pbx_peer_seccomp_filter {
    /** len is the number of instructions used. */
    uint16_t len;
    /** insns is the classic BPF program the kernel runs on each call. */
    struct sock_filter insns[PBX_PEER_SECCOMP_INSNS_MAX];
} pbx_peer_seccomp_filter;

/**
 * pbx_peer_seccomp_denied returns the calls that always fail with EPERM
 * and stores their count in *n. The table is static and lives forever.
 */
const pbx_peer_seccomp_call *pbx_peer_seccomp_denied(size_t *n);

/**
 * pbx_peer_seccomp_self_only returns the calls that name a process in
 * their argument arg and are allowed only when it is 0 (the caller) or
 * the pid the filter was built for; count in *n. Static.
 */
const pbx_peer_seccomp_call *pbx_peer_seccomp_self_only(size_t *n);

/**
 * pbx_peer_seccomp_build writes the filter into *out. self_pid is the
 * process the filter is installed in (the job: the pid stays across
 * exec): calls of pbx_peer_seccomp_self_only naming it or 0 are allowed.
 * Returns PBX_OK, or PBX_E_BASE_OVERFLOW when the program would not fit (a
 * programming error the unit test catches). Makes no system call.
 */
pbx_err pbx_peer_seccomp_build(uint32_t self_pid, pbx_peer_seccomp_filter *out);

/** PBX_PEER_SECCOMP_NOTIFY_INSNS is the open filter's length. */
#define PBX_PEER_SECCOMP_NOTIFY_INSNS 9U

/**
 * pbx_peer_seccomp_build_notify writes the brokered-open filter into
 * *out: open (2), creat (85), openat (257) and openat2 (437) of x86_64
 * return SECCOMP_RET_USER_NOTIF (their caller waits for the broker, which
 * holds the listener the kernel returns for this filter); every other
 * call, and every call of another architecture, is allowed here (the
 * walls' filter refuses those, and ERRNO beats USER_NOTIF, so the walls
 * must, and do, let the open family through). Makes no system call.
 */
void pbx_peer_seccomp_build_notify(pbx_peer_seccomp_filter *out);

#endif /* PBX_PEER_SECCOMP_H */
