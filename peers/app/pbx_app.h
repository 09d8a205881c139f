/*
 * pbx_app.h: the library a program links to ask powerboxd for an object
 * from inside a launchd job (docs/HOST.md). Hosted code: libc and POSIX.
 * Built as $(BUILD)/lib/libpbx-app.a, which also holds the peer library
 * it uses; a program links it before libpbx.a.
 *
 * Two levels. pbx_app_open, pbx_app_consume and pbx_app_cancel run a
 * whole runtime-reply request over the job connection launchd hands a
 * program ($PBX_LAUNCHD_FD), with the claims launchd put in the
 * environment; they share one connection state per process and are not
 * thread-safe (one call at a time). Below them, pbx_app_conn is the call
 * layer they use (and pbx-client uses): calls matched to replies by seq,
 * BEGIN from claims, the SELECTOR chunks, COMMIT, and the wait for one
 * DECISION; its context is caller-allocated.
 */
#ifndef PBX_APP_H
#define PBX_APP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ipc/pbx_ipc.h"
#include "peers/common/pbx_peer_io.h"

/** PBX_APP_DIR_NAME is the runtime directory's name under
 * $XDG_RUNTIME_DIR, and its prefix under /tmp (followed by -UID). */
#define PBX_APP_DIR_NAME "powerboxd"

/** PBX_APP_SCOPE_SOCK is vfsd's scope socket's name in the runtime
 * directory: one fresh scope of the served root per connection. */
#define PBX_APP_SCOPE_SOCK "scope.sock"

/** pbx_app status: 0 on success, else one of these (pbx_app_strerror
 * names each). They are the library's own numbers, never an errno. */
enum {
    /** PBX_APP_OK: success. */
    PBX_APP_OK = 0,
    /** PBX_APP_E_PATH: a runtime path does not fit its buffer. */
    PBX_APP_E_PATH = 1,
    /** PBX_APP_E_ARG: the request is malformed (selector empty or too
     * long, an unknown or inadmissible operation, class or lifetime). */
    PBX_APP_E_ARG = 2,
    /** PBX_APP_E_NO_JOB: not inside a launchd job: $PBX_LAUNCHD_FD is
     * unset or not an open descriptor, or a claim variable is malformed. */
    PBX_APP_E_NO_JOB = 3,
    /** PBX_APP_E_SCOPE: no scope: $PBX_SCOPE_FD is not an open
     * descriptor, or vfsd's scope socket gave none. */
    PBX_APP_E_SCOPE = 4,
    /** PBX_APP_E_TRANSPORT: the connection failed or was closed, or a
     * reply did not come in time. */
    PBX_APP_E_TRANSPORT = 5,
    /** PBX_APP_E_REFUSED: launchd or powerboxd refused a call (the
     * grant's status field holds its status). */
    PBX_APP_E_REFUSED = 6,
    /** PBX_APP_E_PROTOCOL: a reply was malformed or named another
     * request. */
    PBX_APP_E_PROTOCOL = 7,
    /** PBX_APP_E_DENIED: the request was denied (reason in the grant). */
    PBX_APP_E_DENIED = 8,
    /** PBX_APP_E_NOT_FOUND: the selector names no object. */
    PBX_APP_E_NOT_FOUND = 9,
    /** PBX_APP_E_CANCELLED: the request was cancelled before a decision. */
    PBX_APP_E_CANCELLED = 10,
    /** PBX_APP_E_TIMEOUT: no decision within the request's wait_ms; the
     * library cancelled the request. */
    PBX_APP_E_TIMEOUT = 11,
    /** PBX_APP_E_STATE: the grant holds nothing to consume or cancel. */
    PBX_APP_E_STATE = 12
};

/**
 * pbx_app_dir writes the runtime directory of the stack into out[0..cap)
 * (NUL-terminated): flag when it is non-NULL and non-empty (a --dir
 * option), else $PBX_DIR, else $XDG_RUNTIME_DIR/powerboxd, else
 * /tmp/powerboxd-UID with the real user id; an empty variable counts as
 * unset. flag is only read. Returns PBX_APP_OK, or PBX_APP_E_PATH (out
 * holds "") when the path needs cap bytes or more.
 */
int pbx_app_dir(const char *flag, char *out, size_t cap);

/**
 * pbx_app_dir_path writes the path of name inside the runtime directory
 * pbx_app_dir resolves from flag into out[0..cap); name NULL or "" gives
 * the directory itself. Returns PBX_APP_OK or PBX_APP_E_PATH (out "").
 */
int pbx_app_dir_path(const char *flag, const char *name, char *out, size_t cap);

/**
 * pbx_app_request is one runtime-reply request, filled by the caller.
 * Zero fields take the defaults noted; the strings are only read during
 * pbx_app_open.
 */
typedef struct pbx_app_request {
    /** selector is the NUL-terminated object path under the scope's
     * root, 1 to PBX_IPC_SELECTOR_LEN_BYTES_MAX bytes. */
    const char *selector;
    /** operation is a pbx_ipc_operation (READ, WRITE, LIST, ...). */
    uint16_t operation;
    /** object_class is a pbx_ipc_class; 0 picks the class the operation
     * implies (pbx_app_class_for). */
    uint16_t object_class;
    /** lifetime is a pbx_ipc_lifetime; 0 means one-shot. */
    uint8_t lifetime;
    /** urgency is a pbx_ipc_urgency; 0 means routine. */
    uint8_t urgency;
    /** wait_ms bounds the wait for the decision (0: no bound); when it
     * passes the request is cancelled (PBX_APP_E_TIMEOUT). */
    uint64_t wait_ms;
    /** invocation is the launchd invocation the request is made within
     * (0: none; needed for an invocation lifetime). */
    uint64_t invocation;
    /** label is a NUL-terminated text shown with the prompt, or NULL. */
    const char *label;
    /** scope_dir is the runtime directory to take a fresh scope from
     * when $PBX_SCOPE_FD is unset (NULL: pbx_app_dir's default). */
    const char *scope_dir;
} pbx_app_request;

/**
 * pbx_app_grant is what pbx_app_open returns: the decision and, when it
 * is APPROVED, the object. The caller owns obj (a descriptor, -1 when
 * none came) until pbx_app_consume or pbx_app_cancel closes it, or it
 * closes obj itself.
 */
typedef struct pbx_app_grant {
    /** obj is the object's descriptor (vfsd's object connection; call it
     * with pbx_obj_*), or -1. */
    int obj;
    /** outcome is the pbx_ipc_outcome of the decision (0: none came). */
    uint8_t outcome;
    /** reason is the pbx_ipc_reason of a DENIED decision, else 0. */
    uint16_t reason;
    /** status is the status of the last refused call (PBX_APP_E_REFUSED;
     * pbx_peer_status_text names it), else 0. */
    uint32_t status;
    /** request is the request's identity (from BEGIN). */
    pbx_ipc_id request;
    /** grant is the installed grant's identity when APPROVED, else 0:0. */
    pbx_ipc_id grant;
    /** decision_calls counts the DECISION calls the wait made (1 when
     * launchd held the call until the decision was final). */
    uint64_t decision_calls;
    /** slot is the installed slot of an APPROVED install-mode request
     * (pbx_app_install), else 0. */
    uint32_t slot;
} pbx_app_grant;

/**
 * pbx_app_open asks for rq's object: BEGIN (runtime-reply mode, the
 * claims launchd left in the environment), the SELECTOR chunks, COMMIT
 * with the scope ($PBX_SCOPE_FD if set, else a fresh one from the
 * runtime directory's scope.sock, closed after COMMIT), then one DECISION
 * call whose reply launchd sends when the decision is final. Blocks until
 * then or rq->wait_ms. Fills *out in every case (obj -1 unless
 * approved). Returns PBX_APP_OK when APPROVED, else PBX_APP_E_DENIED,
 * _NOT_FOUND, _CANCELLED, _TIMEOUT or an error status.
 */
int pbx_app_open(const pbx_app_request *rq, pbx_app_grant *out);

/**
 * pbx_app_install asks for rq's object in install mode, for the calling
 * process itself: as pbx_app_open, but the BEGIN names the install target
 * (getpid(), pgen, slot), where pgen is the generation procd gave this
 * process when it staged itself (docs/HOST.md, "Install mode on the
 * host"); launchd accepts that target only from the job's own process.
 * The object does not come with the decision: procd delivers it on the
 * process's stage connection before it answers INSTALL, so it is there
 * when the APPROVED decision arrives. Fills *out in every case (obj
 * always -1; slot and grant set when approved). Returns PBX_APP_OK when
 * APPROVED (with out->slot equal to slot, else PBX_APP_E_PROTOCOL), else
 * what pbx_app_open returns.
 */
int pbx_app_install(const pbx_app_request *rq, uint32_t pgen, uint32_t slot,
                    pbx_app_grant *out);

/**
 * pbx_app_consume ends the grant g holds (a one-shot grant's use is
 * over): CONSUME on the job connection, then closes g->obj and clears
 * g's grant. vfsd retires the object, so any copy of the descriptor
 * fails from then on. Returns PBX_APP_OK, PBX_APP_E_STATE when g holds no
 * grant, or the call's error status (g->status set when refused).
 */
int pbx_app_consume(pbx_app_grant *g);

/**
 * pbx_app_cancel cancels the grant g holds (the grant form of CANCEL, on
 * the job connection), then closes g->obj and clears g's grant. Returns
 * as pbx_app_consume does.
 */
int pbx_app_cancel(pbx_app_grant *g);

/** pbx_app_strerror returns a static one-line description of a pbx_app
 * status ("unknown status" for any other value); never NULL. */
const char *pbx_app_strerror(int status);

/**
 * pbx_app_class_for returns the object class an operation asks for when a
 * request gives none: FILE for READ, WRITE, EXECUTE and CREATE, DIRECTORY for
 * LIST, DIRECTORY_ENTRY for ENTRY_METADATA_READ and ENTRY_TOUCH; 0 for
 * any other value.
 */
uint16_t pbx_app_class_for(uint16_t operation);

/* ---- the call layer ----------------------------------------------------- */

/** PBX_APP_CALL_MAIN is the call slot of the request's own calls. */
#define PBX_APP_CALL_MAIN 0U
/** PBX_APP_CALL_CANCEL is the call slot of a CANCEL sent while the
 * DECISION is outstanding. */
#define PBX_APP_CALL_CANCEL 1U
/** PBX_APP_CALLS is the number of call slots. */
#define PBX_APP_CALLS 2U
/** PBX_APP_CALL_MS bounds the wait for the reply of one call other than
 * DECISION (longer than launchd's own relay bound). */
#define PBX_APP_CALL_MS ((uint64_t)30000U)
/** PBX_APP_GRACE_MS bounds the CANCEL and the decision after a wait
 * expired, and a scope hand-out. */
#define PBX_APP_GRACE_MS ((uint64_t)10000U)

/** pbx_app_call is one call: its seq (0: none outstanding), whether its
 * reply came, and the reply (whose descriptors the slot owns). */
typedef struct pbx_app_call {
    /** seq is the call's seq, 0 when no call is outstanding. */
    uint32_t seq;
    /** done is true once the reply arrived. */
    bool done;
    /** msg is the reply (valid when done). */
    pbx_peer_msg msg;
} pbx_app_call;

/**
 * pbx_app_conn is one connection to launchd (a job connection or the
 * control socket) and its calls. Caller-allocated (about 15 KiB, so keep
 * it static or on the heap), set up by pbx_app_conn_init. who names the
 * program in log lines (one line per failure on stderr) and must outlive
 * the context; NULL logs nothing.
 */
typedef struct pbx_app_conn {
    /** fd is the connection (not owned: the caller closes it). */
    int fd;
    /** who prefixes every log line (e.g. "pbx-client"). */
    const char *who;
    /** seq is the last seq given to a call (the next is one more, never
     * 0). */
    uint32_t seq;
    /** decision_calls counts DECISION calls sent. */
    uint64_t decision_calls;
    /** calls are the call slots. */
    pbx_app_call calls[PBX_APP_CALLS];
    /** in receives every message before it goes to its call. */
    pbx_peer_msg in;
    /** buf holds the call being encoded. */
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
} pbx_app_conn;

/** pbx_app_now_ns returns CLOCK_MONOTONIC in nanoseconds. */
uint64_t pbx_app_now_ns(void);

/** pbx_app_conn_init sets *c up for connection fd with no call
 * outstanding; who is kept (not copied). */
void pbx_app_conn_init(pbx_app_conn *c, int fd, const char *who);

/** pbx_app_conn_next_seq returns a fresh nonzero seq. */
uint32_t pbx_app_conn_next_seq(pbx_app_conn *c);

/**
 * pbx_app_conn_send sends the encoded call c->buf[0..n) (with descriptor
 * cap unless it is negative; the caller keeps cap) as call slot k under a
 * fresh seq, after closing what the slot's last reply still held. what
 * names the call in the log. Returns false with a logged message.
 */
bool pbx_app_conn_send(pbx_app_conn *c, size_t k, size_t n, int cap,
                       const char *what);

/**
 * pbx_app_conn_wait receives replies, each to the call whose seq it
 * echoes (others logged and dropped), until slot k has its reply or
 * deadline_ns (monotonic; 0: none) passes. Returns 0 when it has, 1 when
 * the connection was closed, -1 with errno set (ETIMEDOUT at the
 * deadline).
 */
int pbx_app_conn_wait(pbx_app_conn *c, size_t k, uint64_t deadline_ns);

/**
 * pbx_app_conn_result returns slot k's answered frame when it decoded
 * with status zero, else NULL with a logged message (the reply's
 * descriptors closed; *status, when status is non-NULL, gets the nonzero
 * status or 0 for a malformed reply). The frame borrows the slot.
 */
const pbx_ipc_frame *pbx_app_conn_result(pbx_app_conn *c, size_t k,
                                         const char *what, uint32_t *status);

/** pbx_app_conn_no_reply logs why a wait (result r of
 * pbx_app_conn_wait) ended without a reply to call what. */
void pbx_app_conn_no_reply(const pbx_app_conn *c, int r, const char *what);

/**
 * pbx_app_conn_call sends c->buf[0..n) on slot PBX_APP_CALL_MAIN and
 * waits at most PBX_APP_CALL_MS for its reply; returns it as
 * pbx_app_conn_result does.
 */
const pbx_ipc_frame *pbx_app_conn_call(pbx_app_conn *c, size_t n, int cap,
                                       const char *what, uint32_t *status);

/**
 * pbx_app_claims is what a BEGIN claims. Zero job (0:0), empty entry and
 * zero target leave them for launchd to fill in from the job the
 * connection is bound to.
 */
typedef struct pbx_app_claims {
    /** session is the claimed session (1 by default). */
    uint64_t session;
    /** realm is the claimed realm. */
    uint64_t realm;
    /** job_id and job_gen are the job claim (0:0: none). */
    uint64_t job_id;
    /** job_gen is the job claim's generation. */
    uint64_t job_gen;
    /** pid and pgen are an install target claim (0:0: none). */
    uint64_t pid;
    /** pgen is the install target's generation. */
    uint64_t pgen;
    /** slot is the install target's slot. */
    uint64_t slot;
    /** entry is the program entry claim ("": none); only read. */
    const char *entry;
} pbx_app_claims;

/**
 * pbx_app_claims_env fills *cl with the defaults (session 1, nothing
 * else claimed) and then what launchd put in a job's environment:
 * PBX_JOB=ID:GEN, PBX_ENTRY, PBX_TARGET=PID:GEN, PBX_SESSION, PBX_REALM.
 * Returns false with a logged message (prefix who; none when who is
 * NULL) naming a malformed variable. cl->entry then borrows the
 * environment.
 */
bool pbx_app_claims_env(pbx_app_claims *cl, const char *who);

/**
 * pbx_app_begin_args is one BEGIN besides its claims: the discriminants
 * (pbx_ipc_operation, _class, _lifetime, _mode, _urgency), the selector
 * (NUL-terminated), a label (NUL-terminated, "" for none) and the
 * invocation (0: none).
 */
typedef struct pbx_app_begin_args {
    /** selector is the object path; only read. */
    const char *selector;
    /** label is shown with the prompt ("" for none); only read. */
    const char *label;
    /** invocation is the launchd invocation id, or 0. */
    uint64_t invocation;
    /** operation is a pbx_ipc_operation. */
    uint32_t operation;
    /** object_class is a pbx_ipc_class. */
    uint32_t object_class;
    /** lifetime is a pbx_ipc_lifetime. */
    uint32_t lifetime;
    /** mode is a pbx_ipc_mode. */
    uint32_t mode;
    /** urgency is a pbx_ipc_urgency. */
    uint32_t urgency;
} pbx_app_begin_args;

/**
 * pbx_app_begin_encode writes the BEGIN of a and cl into c->buf and its
 * length into *n, in its unclaimed form where cl claims nothing (job and
 * target zero, the entry empty). Returns false with a logged message when
 * a length or discriminant makes no admissible BEGIN.
 */
bool pbx_app_begin_encode(pbx_app_conn *c, const pbx_app_claims *cl,
                          const pbx_app_begin_args *a, size_t *n);

/**
 * pbx_app_selector_send streams selector (NUL-terminated) for request id
 * in chunks at exact offsets, one call each. Returns false with a logged
 * message (*status as pbx_app_conn_result gives it).
 */
bool pbx_app_selector_send(pbx_app_conn *c, pbx_ipc_id id, const char *selector,
                           uint32_t *status);

/**
 * pbx_app_commit sends COMMIT of request id into dest_slot, carrying
 * scope_fd (kept by the caller). Returns false with a logged message.
 */
bool pbx_app_commit(pbx_app_conn *c, pbx_ipc_id id, uint32_t dest_slot,
                    int scope_fd, uint32_t *status);

/**
 * pbx_app_cancel_send sends the exact CANCEL of request id on slot k
 * (PBX_APP_CALL_CANCEL while a DECISION is outstanding) and waits for its
 * reply until deadline_ns (0: PBX_APP_CALL_MS from now). Returns true
 * when it was accepted.
 */
bool pbx_app_cancel_send(pbx_app_conn *c, size_t k, pbx_ipc_id id,
                         uint64_t deadline_ns);

/** pbx_app_wait results: the decision came, the deadline passed first,
 * or the wait failed (logged). */
enum {
    /** PBX_APP_WAIT_FINAL: *d holds the final decision. */
    PBX_APP_WAIT_FINAL = 0,
    /** PBX_APP_WAIT_EXPIRED: the deadline passed first. */
    PBX_APP_WAIT_EXPIRED = 1,
    /** PBX_APP_WAIT_FAILED: transport failure or refusal (logged). */
    PBX_APP_WAIT_FAILED = 2,
    /** PBX_APP_WAIT_OTHER: the decision named another request. */
    PBX_APP_WAIT_OTHER = 3
};

/**
 * pbx_app_decision_wait waits for the final DECISION of request id until
 * deadline_ns (0: none). asked says a DECISION call is outstanding on
 * slot PBX_APP_CALL_MAIN already; otherwise one is sent. An older
 * launchd's PENDING answer is asked again after pause_us microseconds.
 * On PBX_APP_WAIT_FINAL the decision is in *d and its descriptors stay in
 * the main slot's msg (the caller takes or closes them).
 */
int pbx_app_decision_wait(pbx_app_conn *c, pbx_ipc_id id, bool asked,
                          uint64_t deadline_ns, uint64_t pause_us,
                          pbx_ipc_decision *d);

#endif /* PBX_APP_H */
