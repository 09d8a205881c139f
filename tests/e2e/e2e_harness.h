/*
 * e2e_harness.h: start the real powerboxd image (the freestanding ELF named
 * by $PBX_POWERBOXD) with an exact startup inventory, and play its
 * supervisor, its four peers and its callers over real sockets.
 */
#ifndef PBX_E2E_HARNESS_H
#define PBX_E2E_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ipc/pbx_ipc.h"

/** E2E_SLOTS is the number of startup slots the harness fills: 3..10. */
#define E2E_SLOTS 8

/** E2E_DEADLINE_MS is the deadline of every call in the harness's PBX1
 * geometry but those through a caller's scope. */
#define E2E_DEADLINE_MS 5000

/** E2E_DEADLINE_PROCD_MS is the deadline of a call to procd: short, so
 * that a test can watch one pass. */
#define E2E_DEADLINE_PROCD_MS 2000

/** E2E_DEADLINE_SCOPE_MS is the deadline of a call through a scope. */
#define E2E_DEADLINE_SCOPE_MS 1000

/** E2E_DEADLINE_OPEN_MS is the PBX1 OPEN deadline: how long a request
 * may stay begun and uncommitted before it ends CANCELLED. Short, so that
 * a test can watch one pass; every other test commits at once. */
#define E2E_DEADLINE_OPEN_MS 1500

/** E2E_DEADLINE_IDLE_MS is the PBX1 IDLE time: how long a public
 * connection may stay silent before powerboxd closes it. Short, so that a
 * test can watch one pass; a test that keeps a public connection silent
 * longer must send on it in between or expect it closed. */
#define E2E_DEADLINE_IDLE_MS 2000

/** e2e_slow returns ms times PBX_E2E_SLOW when that variable is set to
 * 2..100 (make memcheck-e2e sets it: powerboxd then runs under valgrind,
 * many times slower), else ms unchanged (ms <= 0 too). The harness's
 * waits (readiness, a message, an exit, a log line) and the PBX1
 * deadlines it writes grow by it alike, so that each keeps its place
 * among the others; without the variable nothing changes. */
int e2e_slow(int ms);

/** e2e_pbx1_bad names the ways the harness can spoil the PBX1 object. */
typedef enum e2e_pbx1_bad {
    E2E_PBX1_GOOD = 0,  /**< a valid, fully sealed record */
    E2E_PBX1_NONE,      /**< slot 3 empty */
    E2E_PBX1_DEVNULL,   /**< not a memory object */
    E2E_PBX1_UNSEALED,  /**< a memfd without seals */
    E2E_PBX1_PARTIAL,   /**< sealed except against writing */
    E2E_PBX1_SHORT,     /**< one byte short of a record */
    E2E_PBX1_DIGEST,    /**< one byte flipped after sealing the digest */
    E2E_PBX1_LAYOUT,    /**< a pool's record size differs from the build */
    E2E_PBX1_EXTENT,    /**< one page more than the derived extent */
    E2E_PBX1_TRANSIENT, /**< more transient slots than the runtime fits */
    E2E_PBX1_TSLOTS_MIN /**< fewer transient slots than the core needs */
} e2e_pbx1_bad;

/**
 * e2e_proc is one powerboxd process and the harness's ends of its
 * inventory. theirs[i] is what the harness put at slot 3 + i (closed in
 * the harness after the start); ours are the peer ends.
 */
typedef struct e2e_proc {
    pid_t pid;               /**< process id, 0 once reaped */
    int supervisor;          /**< our end of slot 4 (datagram) */
    int vfsd;                /**< our end of slot 5 */
    int ttyd;                /**< our end of slot 6 */
    int procd;               /**< our end of slot 7 */
    int launchd;             /**< our end of slot 8 (datagram) */
    int broker;              /**< our end of slot 10: launchd's broker */
    int log;                 /**< powerboxd's stderr (a memfd), or -1 */
    char name[64];           /**< the public endpoint name ("@...") */
    int theirs[E2E_SLOTS];   /**< descriptors for slots 3..10, -1 for empty */
    const char *const *argv; /**< the argv to start it with (NULL-ended),
                                  or NULL for {path, name} */
    /** before_exec, when not NULL, runs in the child with slots 3..10 in
     * place, just before exec (a resource limit, a system call filter the
     * very binary then starts under); NULL after e2e_prepare. */
    void (*before_exec)(void);
} e2e_proc;

/**
 * e2e_pbx1_fd puts len bytes of rec into a fresh memory file sealed
 * against every change, as powerboxd's slot 3 wants it; -1 on failure.
 */
int e2e_pbx1_fd(const uint8_t *rec, size_t len);

/**
 * e2e_prepare builds a good inventory (PBX1 spoiled as bad says) without
 * starting anything: the caller may replace theirs[] entries first.
 */
bool e2e_prepare(e2e_proc *p, e2e_pbx1_bad bad);

/** e2e_start execs $PBX_POWERBOXD with theirs[] at slots 3..10 and its
 * stderr writing into p->log (when that memfd could be made). */
bool e2e_start(e2e_proc *p);

/** e2e_wait_ready waits up to 5 s for the typed readiness report. */
bool e2e_wait_ready(e2e_proc *p);

/** e2e_exit_status reaps the process (5 s) and returns its exit status,
 * -1 when killed by a signal, -2 on timeout (then it is killed). */
int e2e_exit_status(e2e_proc *p);

/** e2e_exit_cpu reaps the process within ms and returns its exit status
 * (-1 killed by a signal, -2 still running), storing the CPU time it used
 * in *cpu_ms (-1 unless reaped). */
int e2e_exit_cpu(e2e_proc *p, int ms, long *cpu_ms);

/** e2e_limit_fds lowers the running process's descriptor limit (soft and
 * hard) to limit, so that no descriptor at or above it can be made. */
bool e2e_limit_fds(const e2e_proc *p, unsigned limit);

/**
 * e2e_log_count counts the occurrences of needle (a NUL-terminated
 * string) in what powerboxd wrote to its stderr so far, which the harness
 * keeps in a memory file (p->log); -1 when it cannot be read.
 */
int e2e_log_count(const e2e_proc *p, const char *needle);

/**
 * e2e_log_text copies what powerboxd wrote to its stderr so far into buf
 * (cap bytes, always NUL-terminated, cut to fit); false when there is no
 * log or it cannot be read.
 */
bool e2e_log_text(const e2e_proc *p, char *buf, size_t cap);

/**
 * e2e_log_sum adds up the decimal numbers that directly follow each
 * occurrence of head (a NUL-terminated string) in powerboxd's stderr,
 * e.g. the N of every "powerboxd: closed N idle" line; -1 when the log
 * cannot be read.
 */
long e2e_log_sum(const e2e_proc *p, const char *head);

/**
 * e2e_log_wait waits up to ms for needle to occur at least want times in
 * powerboxd's stderr (e2e_log_count); returns whether it did.
 */
bool e2e_log_wait(const e2e_proc *p, const char *needle, int want, int ms);

/** e2e_close closes every harness descriptor and kills a live process;
 * what powerboxd wrote to its stderr is copied to the harness's stderr
 * first, so a run's output shows it as before the capture. */
void e2e_close(e2e_proc *p);

/** e2e_connect opens a public connection; returns the fd or -1. */
int e2e_connect(const e2e_proc *p);

/** e2e_send sends len bytes with nfds descriptors attached. */
bool e2e_send(int fd, const void *buf, size_t len, const int *fds, int nfds);

/** e2e_reply is e2e_send for a fake peer's reply: it first writes into
 * buf (a whole encoded frame of len bytes) the seq of the request req it
 * answers, so every fake peer echoes seq the way a real peer must. */
bool e2e_reply(int fd, const pbx_ipc_frame *req, uint8_t *buf, size_t len,
               const int *fds, int nfds);

/**
 * e2e_recv waits up to ms for one message on fd into buf (cap bytes),
 * storing up to fds_cap received descriptors in fds and their count in
 * *nfds (may be NULL: then they are closed). Returns the length or -1.
 */
long e2e_recv(int fd, uint8_t *buf, size_t cap, int *fds, int fds_cap,
              int *nfds, int ms);

/**
 * e2e_take_fd copies the descriptor powerboxd holds at slot into the
 * harness (pidfd_getfd: the same open object, as ptrace rights allow any
 * process of the same user to take it); returns the copy or -1. The
 * caller closes it.
 */
int e2e_take_fd(const e2e_proc *p, int slot);

/** e2e_fd_count counts /proc/<pid>/fd entries, or -1. */
int e2e_fd_count(pid_t pid);

/** e2e_socketpair makes a pair of the given type; false on failure. */
bool e2e_socketpair(int type, int *sv);

#endif /* PBX_E2E_HARNESS_H */
