/*
 * launchd.h: the reference launchd's private state, shared by its files
 * (launchd.c: commands; launchd_loop.c: the serve loop; launchd_relay.c:
 * the broker relay and hang-up cleanup; launchd_reply.c: the broker's
 * replies; launchd_wake.c: WAKE delivery and timers; launchd_jobs.c:
 * launching and reaping jobs; launchd_io.c: socket helpers;
 * launchd_attach.c: the supervisor's attach channel; launchd_index.c: the
 * indexes that keep per-event work independent of the tables' sizes).
 * Usage is documented at the top of launchd.c and in docs/HOST.md.
 */
#ifndef LAUNCHD_H
#define LAUNCHD_H

#include <poll.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/types.h>
#include <termios.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/common/pbx_peer_origin.h"
#include "peers/lib/pbx_peer_broker.h"
#include "peers/lib/pbx_peer_launch.h"
#include "peers/lib/pbx_peer_track.h"

/* Hard caps of the configurable limits (the tables are static). */
#define LAUNCHD_CONTROL_CAP 512U
#define LAUNCHD_JOBS_CAP    256U
#define LAUNCHD_CONNS_CAP   (LAUNCHD_CONTROL_CAP + LAUNCHD_JOBS_CAP)
/* Outstanding broker calls, cancelled requests whose decision is still
 * to be collected, and staged processes. */
#define LAUNCHD_CALLS_MAX   512U
#define LAUNCHD_ORPHANS_MAX 512U
#define LAUNCHD_STAGE_MAX   64U
/* The largest public request frame relayed (a full SELECTOR chunk). */
#define LAUNCHD_CALL_COPY 1024U
/* Held DECISIONs are re-asked this often if no WAKE came (safety net). */
#define LAUNCHD_REASK_MS 5000U
/* The serve loop wakes at least this often for its timers. */
#define LAUNCHD_TICK_MS 100
/* A call unanswered this long after its caller was released is given up
 * (a reply after that is unmatched, logged and its descriptors closed). */
#define LAUNCHD_STALE_CALL_MS 60000U
/* Calls one connection may have at powerboxd at once (BUSY beyond). */
#define LAUNCHD_CONN_CALLS_MAX 64U
/* How far up the process tree the control socket's ancestry check walks
 * before it gives up (and refuses). */
#define LAUNCHD_ANCESTRY_STEPS PBX_PEER_ORIGIN_STEPS

/* Bytes a sandboxed job's pty relay buffers each way: when the output
 * buffer is full launchd stops reading the pty master, so the program
 * blocks in write and nothing is lost. */
#define LAUNCHD_PTY_BUF 4096U
/* Descriptors per job relay: the master, the keyboard, the terminal. */
#define LAUNCHD_PTY_FDS 3U
/* The longest line on the hold channel. */
#define LAUNCHD_TTYD_LINE 32U

/* A sandboxed job's pseudo-terminal relay: the job's stdio that were
 * terminals are the slave; launchd relays the master to and from its own
 * non-blocking reopens of the terminal the LAUNCH handed it. */
typedef struct launchd_pty {
    int master;   /* -1: no relay */
    int term_in;  /* the keyboard (the LAUNCH's stdin terminal), or -1 */
    int term_out; /* where the job's output goes, or -1 (dropped) */
    bool raw;     /* term_in was put in raw mode; saved restores it */
    bool eof;     /* the job's side is closed (the master gave EIO) */
    bool noted;   /* "output held" logged during the current hold */
    dev_t rdev;   /* the keyboard terminal's device (shared raw mode) */
    uint32_t gen; /* the relay's registrations' (loop) */
    uint32_t ev[LAUNCHD_PTY_FDS]; /* what each fd is registered for */
    struct termios saved;
    struct winsize ws;
    size_t out_len;
    size_t in_len;
    uint8_t out[LAUNCHD_PTY_BUF];
    uint8_t in[LAUNCHD_PTY_BUF];
} launchd_pty;

/* What an outstanding broker call is for. */
typedef enum launchd_call_kind {
    LAUNCHD_CALL_RELAY = 1,   /* a caller's frame */
    LAUNCHD_CALL_REASK = 2,   /* DECISION for a held caller */
    LAUNCHD_CALL_CANCEL = 3,  /* exact CANCEL of an orphaned request */
    LAUNCHD_CALL_COLLECT = 4, /* DECISION of an orphaned request */
    LAUNCHD_CALL_EXPIRE = 5,  /* EXPIRE of a job that exited */
    LAUNCHD_CALL_GRANT = 6,   /* grant CANCEL of an undelivered approval */
    LAUNCHD_CALL_USER = 7     /* grant CANCEL the user asked (pbx cancel) */
} launchd_call_kind;

/* One call at powerboxd, matched by launchd's own seq. */
typedef struct launchd_call {
    bool used;
    bool detached; /* the caller was answered ROUTE or went away */
    uint8_t kind;
    uint16_t op;
    uint16_t caps;
    uint32_t seq;
    uint32_t caller_seq;
    uint32_t conn;
    uint32_t conn_gen;
    pbx_ipc_id id;
    uint64_t deadline_ms;
    size_t len;
    uint8_t copy[LAUNCHD_CALL_COPY];
} launchd_call;

/* A program's DECISION that waits at launchd for its request's WAKE
 * (launchd_park.c): the request, the caller's seq, and when it came. Its
 * track entry stays ASKED: the caller's call is out, at launchd. */
typedef struct launchd_park {
    pbx_ipc_id id;
    uint32_t seq;
    uint64_t since_ms;
} launchd_park;

/* One connection: a control connection, or a launched job's (fd 3). */
typedef struct launchd_conn {
    int fd; /* -1: free slot */
    uint32_t gen;
    bool job_conn;
    uint32_t job;
    uint32_t calls;   /* calls at powerboxd for it (not detached) */
    uint32_t begins;  /* of which BEGINs */
    uint64_t last_ms; /* accepted, or its last accepted LAUNCH/EXPIRE */
    pid_t peer;       /* a control connection's SO_PEERCRED pid */
    pbx_peer_track track;
    uint32_t nparks; /* parks in use, the first nparks of parks */
    launchd_park parks[PBX_PEER_TRACK_MAX];
    /* Live jobs this connection (as of gen) launched whose EXIT has not
     * gone (launchd_index.c): nonzero keeps it from being evicted. */
    uint32_t launched;
} launchd_conn;

/* The most exceptional requests of one job launchd remembers until their
 * decision (launchd_budget.c): both its connections' --max-open. */
#define LAUNCHD_BUDGET_EXC 32U

/* One sandboxed job's prompt budget (launchd_budget.c): the prompts a
 * person was shown for it, whoever asked (the job on its own connection,
 * or its open broker on the second one). */
typedef struct launchd_budget {
    bool on; /* a sandboxed job's: limited */
    pbx_peer_broker_rate rate;
    uint32_t nexc;
    pbx_ipc_id exc[LAUNCHD_BUDGET_EXC]; /* exceptional, undecided */
} launchd_budget;

/* One launched job. A job whose process exited stays live (its id kept)
 * while its EXPIRE is at powerboxd: EXIT goes to the launcher once that
 * is answered, or at --call-ms after the exit if it is not; the id is
 * freed only with the EXPIRE's answer (or when its call is forgotten). */
typedef struct launchd_job {
    bool live;
    bool ending;     /* the process exited */
    bool expire_out; /* its EXPIRE call is at powerboxd */
    bool exit_sent;  /* EXIT went to the launcher */
    int ws;          /* its wait status, for EXIT */
    uint64_t ended_ms;
    pid_t pid;
    uint32_t launcher;  /* the control connection that launched it */
    pid_t launcher_pid; /* that connection's SO_PEERCRED pid */
    uint32_t launcher_gen;
    uint32_t launch_seq;
    int conn;           /* its job connection, or -1 */
    int broker_conn;    /* its broker's job connection, or -1 */
    int stage;          /* its staged process, or -1 */
    bool finish_wanted; /* its EXPIRE was answered while its pty drained */
    pbx_peer_launch_binding bind;
    launchd_pty pty;
    launchd_budget budget; /* a sandboxed job's prompt budget */
} launchd_job;

/* A request whose caller went away: cancelled, decision to collect. */
typedef struct launchd_orphan {
    bool used;
    bool asking;
    bool woken;
    bool cancelled; /* the CANCEL was answered */
    uint16_t cancel_st;
    uint16_t entry_len;
    pbx_ipc_id id;
    uint64_t job_id;
    uint32_t job_gen;
    uint64_t since_ms;
    uint8_t entry[PBX_PEER_LAUNCH_ENTRY_MAX]; /* for its end line */
} launchd_orphan;

/* One staged process launchd may bind a job to. */
typedef struct launchd_stage {
    uint64_t pid;
    uint32_t gen;
    bool used;
} launchd_stage;

/* Timer handles (launchd_timer.c): one per call, orphan, connection and
 * job, in that order; each is armed at most once, with its next
 * deadline. */
#define LAUNCHD_T_CALL   0U
#define LAUNCHD_T_ORPHAN (LAUNCHD_T_CALL + LAUNCHD_CALLS_MAX)
#define LAUNCHD_T_CONN   (LAUNCHD_T_ORPHAN + LAUNCHD_ORPHANS_MAX)
#define LAUNCHD_T_JOB    (LAUNCHD_T_CONN + LAUNCHD_CONNS_CAP)
#define LAUNCHD_TIMERS   (LAUNCHD_T_JOB + LAUNCHD_JOBS_CAP)

/* The armed handles as a binary min-heap on their deadlines; plain data,
 * zeroed is empty. */
typedef struct launchd_theap {
    uint32_t n;                    /* armed handles */
    uint16_t heap[LAUNCHD_TIMERS]; /* handles, the earliest first */
    uint16_t pos[LAUNCHD_TIMERS];  /* a handle's heap index + 1; 0: unarmed */
    uint64_t due[LAUNCHD_TIMERS];  /* an armed handle's deadline (ms) */
} launchd_theap;

/* launchd_timer.c. set arms handle h (< LAUNCHD_TIMERS) for due_ms, moving
 * it if it was armed; UINT64_MAX unarms it. pop unarms and returns the
 * earliest handle due at now_ms, or LAUNCHD_TIMERS when none is. wait is
 * how long poll may sleep: until the earliest deadline, at most cap_ms.
 * Each costs O(log LAUNCHD_TIMERS) at most, whatever is armed. */
void launchd_timer_set(launchd_theap *t, uint32_t h, uint64_t due_ms);
uint32_t launchd_timer_pop(launchd_theap *t, uint64_t now_ms);
int launchd_timer_wait(const launchd_theap *t, uint64_t now_ms, int cap_ms);

/* Where a request's WAKE should look first (launchd_wake.c): the
 * connection (slot and generation) whose BEGIN it was. A hint, in a table
 * indexed by a hash of the request id: a stale or overwritten one only
 * sends the WAKE to the walk over every connection it replaced. Eight
 * times the calls launchd may have out, so with k requests outstanding a
 * WAKE falls back to the walk with a chance of about k / 4096 (with 256
 * slots it was about a quarter at 64 programs at once). */
#define LAUNCHD_HINTS 4096U
typedef struct launchd_hint {
    pbx_ipc_id id;
    uint32_t conn;
    uint32_t conn_gen;
} launchd_hint;

/* Buckets of each job hash table (launchd_index.c): twice the jobs, so
 * a probe meets an empty bucket soon. */
#define LAUNCHD_JOB_HASH (2U * LAUNCHD_JOBS_CAP)
/* Buckets of the orphan hash table, twice the orphans for the same
 * reason. */
#define LAUNCHD_ORPHAN_HASH (2U * LAUNCHD_ORPHANS_MAX)

/* What an event loop registration names (launchd_loop.c), in the order
 * a pass serves them: the broker's replies first, then WAKEs, the attach
 * channel, the hold subscriber and listener, the pty relays, the
 * connections, new control connections, the hold file and SIGCHLD. */
enum {
    LAUNCHD_EV_BROKER = 0,
    LAUNCHD_EV_WAKE = 1,
    LAUNCHD_EV_ATTACH = 2,
    LAUNCHD_EV_TTYD = 3,
    LAUNCHD_EV_HOLD = 4,
    LAUNCHD_EV_PTY = 5,
    LAUNCHD_EV_CONN = 6,
    LAUNCHD_EV_CONTROL = 7,
    LAUNCHD_EV_WATCH = 8,
    LAUNCHD_EV_CHLD = 9,
    LAUNCHD_EV_KINDS = 10
};

/* Everything serve holds. */
typedef struct launchd_srv {
    int wake;   /* -1: none (no wakes) */
    int broker; /* -1: none (callers answered ROUTE) */
    int control;
    const char *control_path; /* --control's PATH, or NULL */
    int attach;               /* --attach-fd, or -1 */
    FILE *log;
    const char *hold;
    /* Events instead of per-loop polling (launchd_events.c): the SIGCHLD
     * self-pipe's read end, the --wake-hold-file directory's inotify
     * descriptor (-1 without the option), and whether that file exists
     * (read again only when the directory changes). */
    int chld_r;
    int hold_watch;
    bool wake_held;
    /* --fuse-dir: vfsd's FUSE mount (vfsd's own --fuse-dir), passed to
     * every open broker as --mount, or NULL when not given. */
    const char *fuse_dir;
    uint32_t max_conns;
    uint32_t max_per_pid; /* control connections one process holds */
    uint32_t idle_ms;
    uint32_t max_open;
    uint32_t max_jobs;
    uint32_t max_jobs_per_pid; /* live jobs one launching process holds */
    uint32_t call_ms;
    /* A sandboxed job's prompt budget (--prompt-burst, --prompt-per-ms). */
    uint32_t prompt_burst;
    uint32_t prompt_per_ms;
    uint64_t next_job;
    uint32_t ncontrol;
    uint32_t njobs;
    uint32_t nstage;
    pid_t self;
    /* Calls in use in calls[] (launchd_relay.c, launchd_reply.c): with
     * none, the broker's queue holds no reply to drain. */
    uint32_t ncalls;
    /* Where the free call queue starts (call_free below). */
    uint32_t call_free_head;
    uint64_t now;
    /* The prompt hold (--hold PATH, docs/PROTOCOL.md). */
    int hold_listen; /* the --hold listener, or -1 */
    int ttyd_fd;     /* ttyd's subscription, or -1 */
    bool tty_held;   /* a prompt shows: no job output, no keys */
    size_t ttyd_len;
    char ttyd_in[LAUNCHD_TTYD_LINE];
    launchd_conn conns[LAUNCHD_CONNS_CAP];
    launchd_call calls[LAUNCHD_CALLS_MAX];
    launchd_orphan orphans[LAUNCHD_ORPHANS_MAX];
    launchd_job jobs[LAUNCHD_JOBS_CAP];
    launchd_stage stage[LAUNCHD_STAGE_MAX];
    launchd_theap timer; /* every deadline above (launchd_wake.c) */
    /* The event loop (launchd_loop.c): its epoll set (-1 before start),
     * each lone descriptor's registration (its fd and events, by kind),
     * and the jobs with a pty relay (launchd_pty.c), in no order. */
    int ep;
    int reg_fd[LAUNCHD_EV_KINDS];
    uint32_t reg_ev[LAUNCHD_EV_KINDS];
    uint32_t pty_gen;
    uint32_t npty;
    uint16_t pty_jobs[LAUNCHD_JOBS_CAP];
    /* WAKE hints by request (launchd_wake.c). */
    launchd_hint hints[LAUNCHD_HINTS];
    /* Indexes kept in step with calls[] and jobs[] (launchd_index.c):
     * the free call slots (a queue: ncall_free of them from
     * call_free_head, taken in turn), and the live jobs
     * by job id and the running ones by pid, and the used orphans by
     * request id (slot + 1; 0: empty). */
    uint32_t ncall_free;
    uint16_t call_free[LAUNCHD_CALLS_MAX];
    uint16_t job_ids[LAUNCHD_JOB_HASH];
    uint16_t job_pids[LAUNCHD_JOB_HASH];
    uint16_t orphan_ids[LAUNCHD_ORPHAN_HASH];
} launchd_srv;

/* launchd_index.c: what keeps launchd's per-event cost independent of its
 * table sizes; each is O(1) (the hash probes are bounded by their
 * table's buckets and short at its load of at most a half). init makes
 * every call slot free and the hash tables empty (before anything else
 * touches the tables). call_take returns the free call slot whose turn it
 * is, marked used, its seq set (its last seq plus LAUNCHD_CALLS_MAX, so
 * seq modulo LAUNCHD_CALLS_MAX is its slot; never 0) and ncalls counted,
 * or NULL when all are used; call_free gives a used one back, last in
 * turn (ncalls counted off); call_by_seq is the used call
 * whose seq is seq, or NULL. job_indexed is called once a job is live
 * (its id, pid, launcher and launcher_gen set); job_index_ended when its
 * process exited (ending set; its pid leaves the pid table);
 * job_index_exit when its EXIT goes (exit_sent set); job_index_drop when
 * it stops being live (its id leaves). job_by_id is the live job slot of
 * job_id, job_by_pid the running (live, not ending) job slot of pid, -1
 * when none. orphan_indexed is called once an orphan is used with its
 * request id set, orphan_index_drop just before it stops being used;
 * orphan_by_id is the used orphan of request id, or NULL. A connection's
 * launched count is reset where its generation moves (launchd_conn_close).
 * check recomputes every index by walking the tables: NULL when all agree, else
 * what drifted (a test aid). */
void launchd_index_init(launchd_srv *srv);
launchd_call *launchd_call_take(launchd_srv *srv);
void launchd_call_free(launchd_srv *srv, launchd_call *k);
launchd_call *launchd_call_by_seq(launchd_srv *srv, uint32_t seq);
void launchd_job_indexed(launchd_srv *srv, uint32_t ji);
void launchd_job_index_ended(launchd_srv *srv, uint32_t ji);
void launchd_job_index_exit(launchd_srv *srv, uint32_t ji);
void launchd_job_index_drop(launchd_srv *srv, uint32_t ji);
int launchd_job_by_id(const launchd_srv *srv, uint64_t job_id);
int launchd_job_by_pid(const launchd_srv *srv, pid_t pid);
void launchd_orphan_indexed(launchd_srv *srv, uint32_t oi);
void launchd_orphan_index_drop(launchd_srv *srv, uint32_t oi);
launchd_orphan *launchd_orphan_by_id(launchd_srv *srv, pbx_ipc_id id);
const char *launchd_index_check(const launchd_srv *srv);

/* launchd_io.c */
uint64_t launchd_now_ms(void);
int launchd_recv(int fd, pbx_peer_msg *m);
int launchd_send_fds(int fd, const uint8_t *buf, size_t len, const int *fds,
                     size_t nfds);
int launchd_send_now(int fd, uint8_t *buf, size_t len, uint32_t seq, int cap);
int launchd_connect(const char *path, int timeout_ms);
int launchd_peer_origin(int fd, pid_t self, pid_t *peer);

/* What launchd_peer_origin found about a control connection's peer. */
#define LAUNCHD_ORIGIN_OUTSIDE 0 /* not below launchd: the user's own */
#define LAUNCHD_ORIGIN_JOB     1 /* launchd's descendant: a job's */
#define LAUNCHD_ORIGIN_UNKNOWN 2 /* unreadable or too deep: refused too */
bool launchd_wait_readable(int fd, int timeout_ms);
/* launchd.c: accepts what waits on the control listener (at most 16). */
void launchd_accept(launchd_srv *srv);
void launchd_nonblock(int fd);

/* The owner a job's own EXPIRE call records in place of a connection:
 * past every connection index (and LAUNCHD_CONNS_CAP, the orphans'). */
#define LAUNCHD_JOB_REF(ji) (LAUNCHD_CONNS_CAP + 1U + (uint32_t)(ji))

/* launchd_jobs.c (the rest is declared below) */
void launchd_job_finish(launchd_srv *srv, uint32_t ref, const char *expire);
/* launchd_index.c: whether connection ci (as of its generation) launched
 * a live job whose EXIT has not gone; O(1), from its launched count. */
bool launchd_is_launcher(const launchd_srv *srv, uint32_t ci);

/* launchd_relay.c */
void launchd_conn_frame(launchd_srv *srv, uint32_t ci);
void launchd_broker_input(launchd_srv *srv);
/* The broker is lost (powerboxd closed it, or the attach channel brings a
 * new one; why, logged as it is, says which): it is closed, every call on it
 * fails (callers answered ROUTE, EXPIREs end their jobs), and every
 * grant, request and orphan of that powerboxd is logged and dropped. */
void launchd_broker_lost(launchd_srv *srv, const char *why);
void launchd_conn_close(launchd_srv *srv, uint32_t ci, const char *why);
bool launchd_own_call(launchd_srv *srv, uint8_t kind, uint8_t *buf, size_t len,
                      uint32_t ci, pbx_ipc_id id);
bool launchd_conn_live(const launchd_srv *srv, uint32_t ci, uint32_t gen);
bool launchd_reply(launchd_srv *srv, uint32_t ci, uint8_t *buf, size_t len,
                   uint32_t seq, int cap);
bool launchd_ask(launchd_srv *srv, uint8_t kind, uint32_t ci, pbx_ipc_id id);
launchd_orphan *launchd_orphan_find(launchd_srv *srv, pbx_ipc_id id);
bool launchd_evictable(const launchd_srv *srv, uint32_t ci);
/* Shared by launchd_relay.c and launchd_reply.c (the broker's replies).
 * The entry of job job_id:job_gen into buf[0..cap) ("-" for none). */
const char *launchd_entry_of(const launchd_srv *srv, uint64_t job_id,
                             uint32_t job_gen, char *buf, size_t cap);
/* Logs the end of one relayed request: its decision rep, or why. */
void launchd_log_end(pbx_ipc_id id, uint64_t job_id, uint32_t job_gen,
                     const char *e, const pbx_ipc_frame *rep, const char *why);
/* Takes over request id of a caller that went away (its exact CANCEL). */
void launchd_orphan_add(launchd_srv *srv, pbx_ipc_id id, uint64_t job_id,
                        uint32_t job_gen, const uint8_t *entry,
                        uint16_t entry_len, bool woken);
/* An orphan's decision rep arrived: final or gone ends the orphan. */
void launchd_orphan_decided(launchd_srv *srv, launchd_orphan *o,
                            const pbx_ipc_frame *rep);
/* Remembers the grant of an APPROVED DECISION reply rep of request. */
void launchd_note_approval(pbx_ipc_id request, const pbx_ipc_frame *rep);
/* The request of grant as launchd delivered its approval, or {0,0}. */
pbx_ipc_id launchd_request_of(pbx_ipc_id grant);
/* Answers the USER_CANCEL of grant on ci (seq) with status st. */
void launchd_user_answer(launchd_srv *srv, uint32_t ci, uint32_t seq,
                         pbx_ipc_id grant, uint16_t st);

/* launchd_relay.c: relays the caller's DECISION of request id on ci (seq
 * its caller's; its track entry ASKED) as the caller's own call, answered
 * ROUTE at deadline_ms unless powerboxd answered by then. False (nothing
 * recorded) when the call table or the broker is full or gone. */
bool launchd_decision_send(launchd_srv *srv, uint32_t ci, pbx_ipc_id id,
                           uint32_t seq, uint64_t deadline_ms);

/* launchd_park.c: a program's DECISION whose WAKE has not come is parked
 * at launchd instead of going to powerboxd, so powerboxd is asked once per
 * lifecycle, after the WAKE. A parked DECISION is a call like any other:
 * bounded by --call-ms from when it came. add parks the DECISION of
 * request id (track entry already ASKED) with the caller's seq. woken
 * relays a parked DECISION of id on ci at its WAKE (true when one was
 * parked). timer relays those parked half of --call-ms ago (powerboxd's
 * answer, PENDING or final, then comes within the other half, or ROUTE);
 * due is the earliest such time of ci (UINT64_MAX: none). lost answers
 * every parked caller of ci ROUTE and forgets them (the broker is gone).
 * Closing a connection forgets its parks (nparks 0). */
void launchd_park_add(launchd_srv *srv, uint32_t ci, pbx_ipc_id id,
                      uint32_t seq);
bool launchd_park_woken(launchd_srv *srv, uint32_t ci, pbx_ipc_id id);
void launchd_park_timer(launchd_srv *srv, uint32_t ci);
uint64_t launchd_park_due(const launchd_srv *srv, uint32_t ci);
void launchd_park_lost(launchd_srv *srv, uint32_t ci);

/* launchd_attach.c: receives and applies what waits on srv->attach
 * (routes in 'R'); at the channel's end it is closed (attach -1). */
void launchd_attach_input(launchd_srv *srv);

/* launchd_wake.c. timers runs what is due (each handle popped from
 * srv->timer, its owner's timer run, then armed again from its state).
 * The arm functions set an owner's handle from its state (its next
 * deadline, or unarmed); they are called wherever that deadline may move
 * earlier: a call when sent or answered, an orphan when added or when it
 * stops asking, a connection when a reply or a WAKE changed its table,
 * it parked a DECISION, it was accepted, or its job ended. */
void launchd_wake_input(launchd_srv *srv);
/* Notes that request id was begun on connection ci (its WAKE looks there
 * first). */
void launchd_wake_hint(launchd_srv *srv, uint32_t ci, pbx_ipc_id id);
void launchd_timers(launchd_srv *srv);
void launchd_call_arm(launchd_srv *srv, const launchd_call *k);
void launchd_orphan_arm(launchd_srv *srv, const launchd_orphan *o);
void launchd_conn_arm(launchd_srv *srv, uint32_t ci);
/* launchd_jobs.c: job ji's end deadlines (its EXPIRE retried, its EXIT at
 * --call-ms), and its timer. */
void launchd_job_arm(launchd_srv *srv, uint32_t ji);
void launchd_job_timer(launchd_srv *srv, uint32_t ji);

/* launchd_sandbox.c: a sandboxed job's program file and Landlock ruleset
 * (both close-on-exec descriptors, -1 when absent). prepare's next, when
 * not NULL, is the program a stage program executes: allowed as prog
 * is, and stage set (the child connects to the stage socket for it
 * before the walls go up). profile, when not NULL, is the absolute path
 * of a profile file that changes the system profile; stack is the stack
 * directory no rule may reach (NULL: none known). proc_rights are the
 * rights the child's rule on its own /proc/PID gets (0: none). */
typedef struct launchd_sandbox {
    int prog;
    int ruleset;
    bool stage;
    uint64_t proc_rights;
    /* Brokered opens (launchd_broker.c): where the child sends its open
     * family's seccomp listener (-1: none), and the broker's pid (its
     * ptracer under Yama). */
    int notify;
    pid_t broker_pid;
} launchd_sandbox;
typedef struct launchd_sandbox_want {
    const char *prog;
    const char *next;
    const char *profile;
    const char *stack;
    /* vfsd's root when the job's opens are brokered, else NULL: a profile
     * may not name it (at, beneath or above), or Landlock would let the
     * program open the scope's files itself, unbrokered and unrevocable. */
    const char *root;
} launchd_sandbox_want;
uint16_t launchd_sandbox_prepare(const launchd_sandbox_want *w,
                                 launchd_sandbox *sb);
void launchd_sandbox_release(launchd_sandbox *sb);
void launchd_sandbox_exec(const launchd_sandbox *sb, char *const *argv);

/* launchd_pty.c: the sandboxed jobs' pty relays. Whether any of the
 * LAUNCH's stdio fds[0..2] is a terminal (then the job gets a pty). */
bool launchd_pty_wanted(const int *fds);
/* Opens p's master and the slave (*slave, close-on-exec) for the stdio
 * fds[0..2], the terminal's settings and size copied to the slave and
 * the keyboard put in raw mode; 0, or -1 with nothing left open. */
int launchd_pty_open(launchd_srv *srv, launchd_pty *p, const int *fds,
                     int *slave);
/* Closes p's relay (the keyboard's settings restored unless another
 * relay still uses that terminal). */
void launchd_pty_close(launchd_srv *srv, launchd_pty *p);
/* Moves what is ready on entry k (0 master, 1 keyboard, 2 terminal) of
 * job ji's relay, when its registration generation gen is the relay's. */
void launchd_pty_input(launchd_srv *srv, uint32_t ji, uint32_t k, uint32_t gen);
/* Before each wait: each relay's registrations set to what it can move
 * now, and the "output held" line; bounded by the relays, not the jobs. */
void launchd_pty_arm(launchd_srv *srv);
/* Window sizes followed; drained relays of ended jobs closed. */
void launchd_pty_timer(launchd_srv *srv);

/* launchd_hold.c: the prompt hold's listener (--hold PATH) and its one
 * subscriber, ttyd. input reads the subscriber's lines (HOLD held and
 * acknowledged, RELEASE); accept takes a new subscriber. */
void launchd_hold_input(launchd_srv *srv);
void launchd_hold_accept(launchd_srv *srv);

/* launchd_events.c: SIGCHLD through a self-pipe, the --wake-hold-file
 * through inotify. Installs both (false after a line). */
bool launchd_events_init(launchd_srv *srv);
/* Reaps after SIGCHLD (chld), looks at the hold file after its
 * directory changed (watch). */
void launchd_events_chld(launchd_srv *srv);
void launchd_events_watch(launchd_srv *srv);

/* launchd_loop.c: launchd's epoll loop. start makes the set (false after
 * a line). pass waits once (at most until the next timer) and serves
 * what is ready, then the timers: its cost follows what is ready and
 * the live pty relays, never the connection or job tables. watch_conn
 * registers connection ci's fd (tagged with its slot and generation)
 * once it is set; watch_pty registers job ji's relay's descriptors;
 * forget removes fd's registration and must come before every close of
 * a descriptor launchd registered (a forked child's copy would keep a
 * closed descriptor's registration alive). */
bool launchd_loop_start(launchd_srv *srv);
void launchd_loop_pass(launchd_srv *srv);
void launchd_loop_watch_conn(launchd_srv *srv, uint32_t ci);
void launchd_loop_forget(launchd_srv *srv, int fd);
/* Moves fd's registration from *have to want events (0: not registered),
 * tagged tag; *have is updated. */
void launchd_loop_want(launchd_srv *srv, int fd, uint32_t *have, uint32_t want,
                       uint64_t tag);
/* The tag of a registration: kind, index and generation. */
uint64_t launchd_loop_tag(unsigned kind, uint32_t index, uint32_t gen);

/* launchd_jobs.c */
void launchd_launch(launchd_srv *srv, uint32_t ci, pbx_peer_msg *m,
                    const pbx_peer_launch_frame *f);
/* Reaps ended children (at most 64); true when none is left to reap. */
bool launchd_reap(launchd_srv *srv);
void launchd_jobs_hangup(launchd_srv *srv, uint32_t ci);
int launchd_conn_alloc(launchd_srv *srv);
int launchd_run(int argc, char **argv);
void launchd_child_env(const launchd_job *j, bool scope);

/* launchd_broker.c: the open broker of a job launched with
 * PBX_PEER_LAUNCH_BROKERED (docs/HOST.md, "Brokered opens"). start runs
 * pbx-broker beside job j (before the job's fork) with a second job
 * connection bound to j, j's stderr and scope (fds[2], fds[3] when
 * req->scope), and sets sb->notify to the end the job's child sends its
 * listener on; 0 or the LAUNCH's refusal status (nothing started). done
 * closes launchd's end after the job's fork. conn_gone forgets job ji's
 * connection ci (its job or broker connection) when it is closed. */
uint16_t launchd_broker_start(launchd_srv *srv, launchd_job *j,
                              const pbx_peer_launch_req *req, const int *fds,
                              launchd_sandbox *sb);
void launchd_broker_done(launchd_sandbox *sb);
void launchd_job_conn_gone(launchd_srv *srv, uint32_t ji, uint32_t ci);
/* launchd_budget.c: a sandboxed job's prompt budget (docs/HOST.md, "The
 * prompt budget"), one for both its connections. init sets j's (on for a
 * sandboxed LAUNCH, full). admit is asked before a BEGIN of connection ci
 * goes to powerboxd: false (logged) when ci's job has no prompt left, so
 * the BEGIN is refused without anyone being asked. begun notes the
 * request of an admitted BEGIN (the bound frame begin, request id) of
 * ci; decided reads a DECISION reply rep of request on ci and charges
 * the job's budget when it shows a person was asked. */
void launchd_budget_init(const launchd_srv *srv, launchd_job *j, bool on);
bool launchd_budget_admit(launchd_srv *srv, uint32_t ci);
void launchd_budget_begun(launchd_srv *srv, uint32_t ci,
                          const pbx_ipc_frame *begin, pbx_ipc_id request);
void launchd_budget_decided(launchd_srv *srv, uint32_t ci, pbx_ipc_id request,
                            const pbx_ipc_frame *rep);
/* launchd_sandbox.c: the child's half of brokered opens. */
void launchd_sandbox_notify(const launchd_sandbox *sb);
/* launchd_cwd.c: the caller's working directory (PBX_PEER_LAUNCH_CWD).
 * check says whether the decoded LAUNCH req's working-directory
 * descriptor among fds (when it has one) is a directory: 0, or
 * PBX_E_PEER_CWD after a log line. enter, in the job's child before its
 * sandbox, changes to it (none: launchd's own stays); the child ends
 * (127) when it cannot. */
uint16_t launchd_cwd_check(const pbx_peer_launch_req *req, const int *fds);
void launchd_cwd_enter(const pbx_peer_launch_req *req, const int *fds);

#endif /* LAUNCHD_H */
