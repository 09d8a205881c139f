/*
 * pbx_up.h: the pieces of `pbx up` (the supervisor of docs/HOST.md) shared
 * between pbx_up.c (command line, lock, restart loop), pbx_up_stack.c
 * (starting and stopping the five processes) and pbx_up_log.c (stack.log,
 * the poll loop, reaping). Hosted code, Linux only.
 */
#ifndef PBX_UP_H
#define PBX_UP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** PBX_UP_PROCS counts the stack's processes: vfsd, ttyd, procd, launchd
 * and powerboxd, in that start order (pbx_up_proc_index). */
#define PBX_UP_PROCS 5U

/** PBX_UP_LINE_MAX bounds one logged line of a child's standard error in
 * bytes; a longer line is logged in pieces of at most this length. */
#define PBX_UP_LINE_MAX 1024U

/** PBX_UP_PATH_MAX bounds every path `pbx up` builds, NUL included. */
#define PBX_UP_PATH_MAX 1024U

/** PBX_UP_RESTARTS_KEPT bounds the restart times remembered per
 * process (more than the giving-up rule ever needs). */
#define PBX_UP_RESTARTS_KEPT 8

/** The index of each stack process in pbx_up.proc, in start order. */
typedef enum pbx_up_proc_index {
    PBX_UP_VFSD = 0,
    PBX_UP_TTYD = 1,
    PBX_UP_PROCD = 2,
    PBX_UP_LAUNCHD = 3,
    PBX_UP_POWERBOXD = 4
} pbx_up_proc_index;

/**
 * One stack process: its name in the log, its pid while it runs (0
 * otherwise) and the read end of the pipe that carries its standard error
 * (and output) to the supervisor, with the part of a line read so far.
 */
typedef struct pbx_up_proc {
    /** Short name for the log ("vfsd", ..., "powerboxd"); static string. */
    const char *name;
    /** The pid while the process is alive and unreaped, else 0. */
    pid_t pid;
    /** The pid of its last incarnation, for lines read after its exit. */
    pid_t last_pid;
    /** The read end of its stderr pipe (non-blocking), or -1. */
    int err;
    /** Bytes of line held (always < PBX_UP_LINE_MAX). */
    size_t len;
    /** The part of a line read but not yet ended by a newline. */
    char line[PBX_UP_LINE_MAX];
    /** The last whole line it wrote (said_len bytes), kept so that a
     * process that dies during the first start has its reason printed on
     * pbx up's own stderr, not only in stack.log. */
    char said[PBX_UP_LINE_MAX];
    /** Bytes of said in use. */
    size_t said_len;
    /** How many times this supervisor started it (its incarnation in
     * DIR/status, `pbx status`). */
    unsigned starts;
    /** A process that died while the stack ran and awaits its restart. */
    bool down;
    /** When its restart is due (monotonic ms), or 0 while not planned. */
    int64_t due_ms;
    /** The times of its recent restarts (monotonic ms), for the backoff
     * and the giving-up rule; nrestarts of them are valid. */
    int64_t restarts[PBX_UP_RESTARTS_KEPT];
    /** How many entries of restarts are valid. */
    int nrestarts;
    /** The supervisor's end of a peer's attach channel (--attach-fd, a
     * SOCK_SEQPACKET pair): new routes go over it when powerboxd is
     * restarted; -1 for powerboxd and while the peer is not running. */
    int chan;
    /** The number of the last 'R' sent on chan (its tag: the answer
     * echoes it, so a late answer to an earlier call is never taken). */
    uint32_t chan_calls;
} pbx_up_proc;

/**
 * The supervisor's whole state: caller-allocated (pbx_up.c keeps one on
 * its stack), filled by the option parser, then owned by the run loop.
 * Every descriptor is close-on-exec; a child gets only what its spawn
 * passes on purpose.
 */
typedef struct pbx_up {
    /** The runtime directory (absolute or as given). */
    char dir[PBX_UP_PATH_MAX];
    /** The directory vfsd serves. */
    char root[PBX_UP_PATH_MAX];
    /** ttyd's policy file. */
    char policy[PBX_UP_PATH_MAX];
    /** ttyd's terminal. */
    char tty[PBX_UP_PATH_MAX];
    /** The directory holding powerboxd and the pbx-* peers. */
    char bin[PBX_UP_PATH_MAX];
    /** --ready-fd, or -1 (closed after the first readiness). */
    int ready_fd;
    /** DIR/stack.log opened for appending, or -1. */
    int log_fd;
    /** The signalfd for SIGINT, SIGTERM, SIGHUP, SIGCHLD and SIGPIPE. */
    int sig_fd;
    /** DIR/lock, flocked for the supervisor's whole life. */
    int lock_fd;
    /** Log lines lost since the last successful write to stack.log. */
    uint64_t dropped;
    /** Set by SIGINT, SIGTERM or SIGHUP: stop everything and exit 0. */
    bool stopping;
    /** Set when a stack process exited during the first start. */
    bool died;
    /** True while the stack is being stopped on purpose. */
    bool stopping_stack;
    /** True once the whole stack is ready: a process that dies from then
     * on is restarted alone (pbx_up_peer_restart, pbx_up_broker_restart). */
    bool running;
    /** Set by SIGUSR1: log powerboxd's usage report once the loop is
     * free (pbx_up_usage). */
    bool usage_wanted;
    /** Set whenever a running stack's process is reaped and marked down:
     * the loop plans its restart before it waits again (a death during
     * another process's restart must not wait for some later wake-up). */
    bool reaped;
    /** The supervisor's end of powerboxd's slot 4 (a datagram pair):
     * readiness, then ROUTE_ATTACH and its answers; -1 when none. */
    int sup_fd;
    /** The stack's processes, indexed by pbx_up_proc_index. */
    pbx_up_proc proc[PBX_UP_PROCS];
    /** The process whose failure ended the first start (1 + its index;
     * 0: none): its last line is printed once the stack is stopped. */
    size_t start_failed;
    /** The incarnation passed to the last vfsd started (0: none yet);
     * each start passes the next (1, 2, ..., 65535, skipping 0), so no
     * vfsd of this supervisor repeats an earlier one's within 65535
     * starts. */
    uint16_t vfsd_incarnation;
    /** The incarnation passed to the last powerboxd started (0: none
     * yet); each start passes the next, 1, 2, ... (pbx_up_incarnation). */
    uint32_t broker_incarnation;
    /** --restart-window-ms: how long a restart counts toward the
     * doubling backoff and the give-up rule (default 60000). */
    int window_ms;
} pbx_up;

/**
 * pbx_up_note logs one line of the supervisor's own: on stderr as
 * "pbx up: TEXT" and in stack.log as "TIME up[PID]: TEXT". fmt is a
 * printf format; the line is cut at PBX_UP_LINE_MAX bytes.
 */
void pbx_up_note(pbx_up *u, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/**
 * pbx_up_log_line appends "TIME NAME[PID]: TEXT\n" to stack.log, text
 * being len bytes (no newline, at most PBX_UP_LINE_MAX). It never waits:
 * a write that fails or falls short counts the line as dropped, and the
 * next line that is written is preceded by a note of how many were lost.
 */
void pbx_up_log_line(pbx_up *u, const char *name, pid_t pid, const char *text,
                     size_t len);

/**
 * pbx_up_pump waits at most timeout_ms (negative: no bound) for a signal,
 * a child's output, or fd becoming readable (fd -1: none). It logs every
 * output line, reaps every exited child (noting a stack process's exit and
 * marking it down, or setting u->died during the first start, when it was
 * not being stopped), sets u->stopping on SIGINT, SIGTERM or SIGHUP and
 * u->usage_wanted on SIGUSR1. Returns true when fd is readable.
 */
bool pbx_up_pump(pbx_up *u, int fd, int timeout_ms);

/**
 * pbx_up_proc_closed drains and closes p's stderr pipe (a child's last
 * words are logged), leaving p->err at -1.
 */
void pbx_up_proc_closed(pbx_up *u, pbx_up_proc *p);

/**
 * pbx_up_incarnation numbers a powerboxd start: returns the next
 * incarnation (1 for the stack's first powerboxd, then 2, 3, ...; never
 * 0) after logging "powerboxd incarnation N starting" (pbx_up_note).
 * Called once per start while its command line is built, so the note
 * precedes every line of that powerboxd in stack.log; `pbx log`, `pbx
 * grants` and `pbx cancel` read the latest note as the live incarnation.
 */
unsigned pbx_up_incarnation(pbx_up *u);

/**
 * pbx_up_stack_start starts the five processes in order, each ready
 * before the next, and waits for powerboxd's readiness report. Returns 0
 * when the whole stack is ready; otherwise -1 after a note saying why
 * (whatever it started is left running for pbx_up_stack_stop).
 */
int pbx_up_stack_start(pbx_up *u);

/**
 * pbx_up_stack_stop ends the stack: SIGTERM to every stack process (each
 * in a session and process group of its own), SIGKILL to whichever is left
 * after a bound, then SIGKILL to every other descendant (launched jobs,
 * reparented to the supervisor, a child subreaper), and reaps them all.
 * Logs each exit; closes the stderr pipes.
 */
void pbx_up_stack_stop(pbx_up *u);

/**
 * pbx_up_peer_restart starts stack peer idx (vfsd, ttyd, procd or
 * launchd) alone. While powerboxd runs, its route(s) are made by the new
 * process itself (so the kernel names it as their peer) and handed to
 * powerboxd by ROUTE_ATTACH on slot 4, each answer logged; while
 * powerboxd is down the peer starts with no route and gets one over its
 * attach channel when powerboxd comes back. Before a launchd starts, the
 * dead launchd's orphaned jobs are killed. Returns 0 when the peer is
 * ready and every route was accepted (or none was due), else -1 (noted).
 */
int pbx_up_peer_restart(pbx_up *u, size_t idx);

/**
 * pbx_up_broker_restart starts powerboxd alone while the peers run: ttyd,
 * procd and launchd are sent fresh routes over their attach channels,
 * vfsd is asked over its own for a route pair made for the exact pid of
 * powerboxd's child (held before exec until it has it, as at a start),
 * and powerboxd gets the other ends at its startup slots. Returns 0 once
 * powerboxd's readiness report came, else -1 (noted); a peer that refused or
 * was gone is logged, and its route is simply down in the new powerboxd until
 * that peer is restarted.
 */
int pbx_up_broker_restart(pbx_up *u);

/**
 * pbx_up_stack_clean removes the sockets a stack makes in DIR (a dead
 * stack's leftovers before a start, the stopped stack's at exit).
 */
void pbx_up_stack_clean(const pbx_up *u);

/** pbx_up_now_ms returns CLOCK_MONOTONIC in milliseconds. */
int64_t pbx_up_now_ms(void);

/**
 * pbx_up_usage asks the running powerboxd for its usage report (a USAGE
 * query with a fresh nonce on u->sup_fd, its slot 4) and waits at most
 * two seconds, serving logs and signals (pbx_up_pump), for the report
 * carrying that nonce; a few other datagrams are skipped meanwhile. On
 * success it logs one line with pbx_up_note, "usage: powerboxd[PID]"
 * then " NAME=USED/CAPACITY" per arena pool (requests, selector_chunks,
 * grants, prompts, policies, decisions, tslots, resolutions,
 * notifications, calls) and " fds=N log_dropped=N", and returns 0.
 * Returns -1 after a note when powerboxd is not running, the query
 * cannot be sent, no report comes, or powerboxd refused it.
 */
int pbx_up_usage(pbx_up *u);

/**
 * pbx_up_status_write replaces DIR/status (written to DIR/status.tmp, then
 * renamed, so a reader sees a whole file) with the supervisor's view: the
 * line "pbx-up PID STATE" (starting, ready or stopping), then one line per
 * process, "NAME PID STATE incarnation N" (STATE running or down, PID 0
 * when down; N powerboxd's and vfsd's incarnation numbers, the start
 * count for the others). `pbx status` reads it while DIR/lock is held.
 * Failures are ignored: the file is a convenience, never authority.
 */
void pbx_up_status_write(const pbx_up *u);

/**
 * Makes the runtime directory dir (mode 0700) when it is missing, then
 * checks it: it must be a directory, not a symbolic link (lstat), owned by
 * the effective user, with no access for group or others, and its parent
 * must be owned by that user or root and not writable by others unless
 * sticky (like /tmp). Returns 0 when dir may be used; otherwise prints one
 * line on stderr naming dir and why, and returns -1. dir is a NUL-ended
 * path shorter than PBX_UP_PATH_MAX; nothing is kept.
 */
int pbx_up_dir_secure(const char *dir);

#endif /* PBX_UP_H */
