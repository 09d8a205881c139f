/*
 * pbx_up_spawn.h: the private pieces `pbx up` shares between
 * pbx_up_spawn.c (command lines, forking a stack process with exactly
 * the descriptors it is given, waiting for readiness),
 * pbx_up_stack.c (starting and stopping the whole stack) and
 * pbx_up_restart.c (restarting one process alone). Hosted, Linux only.
 */
#ifndef PBX_UP_SPAWN_H
#define PBX_UP_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "tools/pbx/pbx_up.h"

/** PBX_UP_READY_MS bounds how long one process may take to become ready
 * (and a restarted peer's child to send its route back). */
#define PBX_UP_READY_MS 10000

/** PBX_UP_ARGS_MAX bounds the arguments of any stack process. */
#define PBX_UP_ARGS_MAX 64U

/** A command line under construction: argument strings live in text;
 * full is set instead of overflowing. Caller-allocated, zeroed. */
typedef struct pbx_up_argv {
    char *arg[PBX_UP_ARGS_MAX + 1U];
    size_t n;
    char text[8192];
    size_t used;
    bool full;
} pbx_up_argv;

/* What a child gets besides its standard streams: keep[] stay at their
 * numbers (a peer's --X-fd N), or slot[] are moved to 3, 4, ... in order
 * (powerboxd; -1 leaves that slot empty). With gate at 0 or more, slot
 * gate_slot is instead the one descriptor the supervisor sends over the
 * gate (the child's end of a socketpair) while the child waits before
 * exec: vfsd's route end, made for this child's exact pid ('P'); the
 * child exits 127 when the gate closes without one. */
typedef struct pbx_up_fds {
    const int *keep;
    size_t nkeep;
    const int *slot;
    size_t nslot;
    int gate;
    size_t gate_slot;
    /* Route hand-offs (a restarted peer): channel ends kept in the child,
     * each replaced by the child's end of a pair it makes itself, whose
     * other end goes back over the channel (pbx_up_child_handoff). */
    const int *handoff;
    const int *handoff_type;
    size_t nhandoff;
} pbx_up_fds;

/* The route hand-offs of the peer being restarted (none at a start). */
typedef struct pbx_up_handoffs {
    int ch[2];
    int type[2];
    size_t n;
} pbx_up_handoffs;

/* The descriptors of one start: each pair's [0] is powerboxd's end. */
typedef struct pbx_up_wires {
    int sup[2];
    int tty[2];
    int proc[2];
    int broker[2];
    int wake[2];
    int pbx1;
} pbx_up_wires;

/** pbx_up_arg appends one formatted argument to a (full when no room). */
void pbx_up_arg(pbx_up_argv *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/** pbx_up_path writes DIR/name into out (PBX_UP_PATH_MAX bytes); false
 * when it does not fit. */
bool pbx_up_path(const pbx_up *u, const char *name, char *out);

/** pbx_up_spawn forks and execs u->proc[idx] with argv a and exactly the
 * descriptors f; notes its pid. Returns 0, or -1 (noted). */
int pbx_up_spawn(pbx_up *u, size_t idx, const pbx_up_argv *a,
                 const pbx_up_fds *f);

/** pbx_up_await waits (at most PBX_UP_READY_MS, serving logs and
 * signals) until fd is readable; false (noted) on timeout, a stop, a
 * death during the first start, or the death of stack process watch. */
bool pbx_up_await(pbx_up *u, int fd, const char *name, size_t watch);

/** pbx_up_peer_h starts peer idx with argv a (--ready-fd and --attach-fd
 * appended; keep[0..nkeep) kept at their numbers; h may be NULL: no
 * hand-offs) and waits for its ready line. Returns 0, or -1 (noted). */
int pbx_up_peer_h(pbx_up *u, size_t idx, pbx_up_argv *a, const int *keep,
                  size_t nkeep, const pbx_up_handoffs *h);

/** pbx_up_wires_make makes the socketpairs of one powerboxd start (w's
 * descriptors -1 before); false (noted) on failure. */
bool pbx_up_wires_make(pbx_up *u, pbx_up_wires *w);

/** pbx_up_wires_close closes every open descriptor of w, setting it -1. */
void pbx_up_wires_close(pbx_up_wires *w);

/** The starts of one peer each (pbx_up_stack.c): route and hand-offs as
 * documented there; each returns 0 once the peer is ready, else -1. */
int pbx_up_start_vfsd(pbx_up *u, const pbx_up_handoffs *h, pid_t pid);
int pbx_up_start_ttyd(pbx_up *u, int route, const pbx_up_handoffs *h);
int pbx_up_start_procd(pbx_up *u, int route, const pbx_up_handoffs *h);
int pbx_up_start_launchd(pbx_up *u, int wake, int broker,
                         const pbx_up_handoffs *h);

/** pbx_up_start_powerboxd starts powerboxd with the slots of w and waits
 * for its readiness report. Returns 0, or -1 (noted). */
int pbx_up_start_powerboxd(pbx_up *u, pbx_up_wires *w);

/** pbx_up_vfsd_pair asks the running vfsd over its attach channel ('P')
 * for a route pair whose RESOLVEs it serves to pid alone, and returns the
 * far end (the caller's to close), or -1 (noted) when vfsd is gone,
 * refused or did not answer within PBX_UP_READY_MS. */
int pbx_up_vfsd_pair(pbx_up *u, pid_t pid);

/** pbx_up_kill_children SIGKILLs every child of the supervisor that is
 * not a live stack process; returns how many. */
int pbx_up_kill_children(const pbx_up *u);

#endif /* PBX_UP_SPAWN_H */
