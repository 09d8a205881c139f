/*
 * pbx_peer_origin.h: who is at the other end of a local connection, and
 * the admission rule of the stack's shared sockets (hosted; Linux).
 *
 * A launched job is recognised by its ancestry: launchd and the
 * supervisor (`pbx up`) are child subreapers, so every descendant of a
 * job, however it detached (a new session, its parent gone), stays below
 * launchd, or below the supervisor once launchd is gone. The walk reads
 * the connecting process's SO_PEERCRED pid and its parents from
 * /proc/PID/stat. launchd uses it to keep jobs off its control socket;
 * ttyd's and procd's query sockets use it (with --jobs-below) to answer
 * only the user's administrative processes. See docs/HOST.md.
 */
#ifndef PBX_PEER_ORIGIN_H
#define PBX_PEER_ORIGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/**
 * PBX_PEER_ORIGIN_STEPS is how far up the process tree a walk goes before
 * it gives up; a process deeper than that is judged unknown (refused).
 */
#define PBX_PEER_ORIGIN_STEPS 64

/**
 * PBX_PEER_ADMIT_LINE_MAX is the longest refusal line
 * pbx_peer_admit_query sends, its newline included.
 */
#define PBX_PEER_ADMIT_LINE_MAX 192U

/** pbx_peer_origin_kind is where a process stands relative to another. */
typedef enum pbx_peer_origin_kind {
    /** PBX_PEER_ORIGIN_OUTSIDE: the ancestor is not above the process. */
    PBX_PEER_ORIGIN_OUTSIDE = 0,
    /** PBX_PEER_ORIGIN_BELOW: a strict descendant of the ancestor. */
    PBX_PEER_ORIGIN_BELOW = 1,
    /** PBX_PEER_ORIGIN_SELF: the process is the ancestor itself. */
    PBX_PEER_ORIGIN_SELF = 2,
    /**
     * PBX_PEER_ORIGIN_UNKNOWN: the pid is unknown or gone, a parent
     * changed or vanished during the walk, or the tree is deeper than
     * PBX_PEER_ORIGIN_STEPS. Callers refuse it.
     */
    PBX_PEER_ORIGIN_UNKNOWN = 3
} pbx_peer_origin_kind;

/**
 * pbx_peer_origin_pid returns the pid (SO_PEERCRED) of the process that
 * connected AF_UNIX socket fd, or 0 when the kernel reports none. fd is
 * borrowed.
 */
pid_t pbx_peer_origin_pid(int fd);

/**
 * pbx_peer_origin_stat_ppid reads the parent pid from stat, the
 * NUL-terminated text of a /proc/PID/stat file ("pid (comm) S ppid ...").
 * The process names its own comm, which may hold spaces and parentheses,
 * so the last ')' ends it; the state is one byte, then the parent. Returns
 * -1 when the text is not of that form or the parent is negative. Split
 * out of the walk (pure text work) so that fuzz_peer_parse can drive it.
 */
pid_t pbx_peer_origin_stat_ppid(const char *stat);

/**
 * pbx_peer_origin_walk judges process pid against ancestor (> 0) by
 * walking its parents, at most PBX_PEER_ORIGIN_STEPS of them, then
 * reading every link of the chain again: a link that changed in between
 * (a parent died and its pid may have been reused) makes the answer
 * PBX_PEER_ORIGIN_UNKNOWN, never OUTSIDE. Reads /proc only.
 */
pbx_peer_origin_kind pbx_peer_origin_walk(pid_t pid, pid_t ancestor);

/**
 * pbx_peer_origin_of judges the process that connected fd (borrowed)
 * against ancestor: pbx_peer_origin_walk of its SO_PEERCRED pid, stored
 * in *peer (0 when unknown). Where the kernel gives a pidfd of the peer
 * (SO_PEERPIDFD) the peer must still be alive after the walk, so the pid
 * walked was the connecting process's, not a reused one; else the answer
 * is PBX_PEER_ORIGIN_UNKNOWN.
 */
pbx_peer_origin_kind pbx_peer_origin_of(int fd, pid_t ancestor, pid_t *peer);

/**
 * pbx_peer_admit is the admission rule of a query socket (ttyd's,
 * procd's): jobs_below is the pid whose strict descendants are launched
 * jobs and are refused (0: no such check; the process itself is
 * served), per_pid how many connections one process (by SO_PEERCRED pid)
 * may hold at once (1 or more).
 */
typedef struct pbx_peer_admit {
    /** jobs_below is the subreaper above every job, or 0 for none. */
    pid_t jobs_below;
    /** per_pid is the most connections one process holds at once. */
    uint32_t per_pid;
} pbx_peer_admit;

/**
 * pbx_peer_admit_option applies option k with value v (both
 * NUL-terminated) to *a: `--jobs-below PID` (a pid above 1) or
 * `--max-per-pid N` (1..per_pid_max). Returns 0 when k is neither (a is
 * unchanged), 1 when it was applied, -1 when v is invalid (a is
 * unchanged).
 */
int pbx_peer_admit_option(pbx_peer_admit *a, const char *k, const char *v,
                          uint32_t per_pid_max);

/**
 * pbx_peer_admit_query judges new connection fd (owned by the call) on a
 * query socket under rule a, where held[0..n) are the pids of the
 * connections being served (0 entries are free). Returns the peer's pid
 * when fd is admitted (the caller keeps fd). Otherwise returns 0 and fd
 * is closed: a launched job (below a->jobs_below), a peer whose ancestry
 * cannot be read, or one that already holds a->per_pid connections is
 * first sent one line "refused: WHY" (never waiting), and the refusal is
 * logged once as who.
 */
pid_t pbx_peer_admit_query(int fd, const pbx_peer_admit *a, const pid_t *held,
                           size_t n, const char *who);

#endif
