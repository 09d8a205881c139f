/*
 * broker.h: pbx-broker, the open broker of one sandboxed job (docs/
 * HOST.md, "Brokered opens"). launchd starts it beside the job, outside
 * the sandbox, with the seccomp listener of the job's open family and a
 * second job connection bound to the same job. For each open the broker
 * reads the path once from the notifying thread's memory, decides where
 * it lies (peers/lib/pbx_peer_broker.h), lets a system path go on as the
 * program's own call (Landlock decides), refuses a path outside the scope
 * and resolves a scope path itself beneath the scope; it then asks (as
 * the job) and injects exactly the descriptor the answer carries.
 *
 * broker_notify.c handles the notifications and is linked into the peer
 * tests; broker.c is the program (its asking: a powerbox request over the
 * job connection, then OPEN on the object).
 */
#ifndef PBX_BROKER_H
#define PBX_BROKER_H

#include <stdint.h>

#include "peers/lib/pbx_peer_broker.h"

/** PBX_BROKER_PATH_MAX bounds a path read from the program (PATH_MAX). */
#define PBX_BROKER_PATH_MAX 4096U

/**
 * pbx_broker_ask is one question the broker asks: the object it resolved
 * (path, absolute, the name shown in the prompt; selector, the same under
 * vfsd's root) and the operation. Borrowed strings, valid during the call.
 */
typedef struct pbx_broker_ask {
    /** path is the resolved absolute path. */
    const char *path;
    /** selector is path below vfsd's root, without a leading slash. */
    const char *selector;
    /** op is a pbx_peer_broker_op. */
    uint8_t op;
    /** mode is the access the descriptor gets (OPEN's mode: 1 read, 2
     * write, 3 both), from the open's access mode. */
    uint32_t mode;
    /** pid is the notifying thread (the broker's pid namespace). */
    uint32_t pid;
} pbx_broker_ask;

/**
 * pbx_broker_ask_fn asks for q's object; on approval stores a descriptor
 * the broker then owns in *fd and returns 0, else returns the positive
 * errno the program's open fails with (EACCES denied, ENOENT not found).
 * It sets *person (false on entry) when the answer shows that a person
 * was asked (docs/HOST.md, "The prompt budget"): only then is the job's
 * prompt budget charged.
 */
typedef int (*pbx_broker_ask_fn)(void *ctx, const pbx_broker_ask *q, int *fd,
                                 bool *person);

/**
 * pbx_broker is one job's broker. Caller-allocated; pbx_broker_init fills
 * it. The strings are borrowed and must outlive it.
 */
typedef struct pbx_broker {
    /** listener is the seccomp notification listener (owned). */
    int listener;
    /** scope_fd is an O_PATH descriptor of the scope directory (owned). */
    int scope_fd;
    /** root is vfsd's root (its real path). */
    const char *root;
    /** pl holds the scope's real path, the mount and the profile. */
    pbx_peer_broker_places pl;
    /** rate is the job's prompt budget. */
    pbx_peer_broker_rate rate;
    /** ask makes the request; ask_ctx is passed to it. */
    pbx_broker_ask_fn ask;
    /** ask_ctx is ask's context (borrowed). */
    void *ask_ctx;
    /** check_mount makes every brokered open first check that pl.mount
     * is a FUSE mount now (/proc/self/mountinfo): when it is not, vfsd has
     * no revocable descriptors to give, so the open is refused without
     * asking. Set by the program when --mount names the mount. */
    bool check_mount;
    /** mem_fail is a test hook: every read of the program's memory
     * fails as Yama's ptrace_scope 1 makes it fail for a process the
     * broker may not trace (the open is refused EACCES, never continued). */
    bool mem_fail;
    /** tgid_fail is a test hook: the thread group of the notifying
     * thread cannot be read from /proc/TID/status (as when /proc is
     * unreadable); the open is refused EACCES with one line, never left
     * unanswered. */
    bool tgid_fail;
    /** counts of the notifications continued, refused, asked, injected. */
    uint64_t continued, refused, asked, injected;
} pbx_broker;

/**
 * pbx_broker_init fills *b for listener (taken over), the scope directory
 * scope (opened O_PATH here), vfsd's root root (scope must be root or
 * below it; both resolved to their real paths into the caller's buffers
 * scope_real and root_real of PBX_BROKER_PATH_MAX bytes), the prompt
 * budget (burst, per_ms). The caller sets ask and ask_ctx after it.
 * Returns 0, or -1 after a line on stderr saying why; either way b owns
 * listener from then on (pbx_broker_release closes it).
 */
int pbx_broker_init(pbx_broker *b, int listener, const char *scope,
                    const char *root, char *scope_real, char *root_real,
                    uint32_t burst, uint32_t per_ms);

/**
 * pbx_broker_serve_one waits for one notification on b->listener and
 * answers it. Returns 0 when one was handled (or had gone), -1 when the
 * listener is closed (the job and all its threads exited) or fails.
 */
int pbx_broker_serve_one(pbx_broker *b);

/**
 * pbx_broker_mode is the access the injected descriptor of an open with
 * flags, asked as operation op (PBX_PEER_BROKER_OP_*), gets (OPEN's mode:
 * 1 read, 2 write, 3 both): the open's own access mode, as the kernel
 * gives it, except that O_RDONLY with O_TRUNC of an existing file (a
 * write grant) is write-only. O_CREAT | O_RDONLY of a missing file is
 * read-only, as the kernel's is (a create grant covers reading).
 */
uint32_t pbx_broker_mode(uint64_t flags, uint8_t op);

/** pbx_broker_now_ms is CLOCK_MONOTONIC in milliseconds (the rate's). */
uint64_t pbx_broker_now_ms(void);

/**
 * pbx_broker_profile_load reads the job's profile file (absolute path;
 * the format of docs/HOST.md, "Profile files") and adds every path of the
 * changed profile to the paths b lets go on as the program's own opens
 * (Landlock decides them). Call after pbx_broker_init; b borrows the
 * paths from a static table, so call it at most once per process.
 * Returns 0, or -1 after a line on stderr saying why (b then unchanged).
 */
int pbx_broker_profile_load(pbx_broker *b, const char *file);

/**
 * pbx_broker_mount_is_fuse says whether the mount table text[0..len)
 * (the format of /proc/self/mountinfo) has a FUSE filesystem (type
 * "fuse" or "fuse.*") mounted exactly at mount (absolute, no trailing
 * slash; the table's octal escapes of space, tab, newline and backslash
 * are decoded). The last line naming mount decides (it is the top of a
 * stack of mounts there). Only reads text; never fails.
 */
bool pbx_broker_mount_is_fuse(const char *text, size_t len, const char *mount);

/**
 * pbx_broker_fuse_up reads /proc/self/mountinfo (the broker shares vfsd's
 * mount namespace: both are launchd's children or its siblings) and
 * applies pbx_broker_mount_is_fuse to mount. False when the table cannot
 * be read.
 */
bool pbx_broker_fuse_up(const char *mount);

/** pbx_broker_release closes what b owns. */
void pbx_broker_release(pbx_broker *b);

/**
 * pbx_broker_say formats a message as printf does and writes it to
 * standard error (the job's own, as pbx_broker_say_adopt took it) as one
 * line: every byte below 0x20 but the final newline, and every byte from
 * 0x7f up, is written as \xHH. A path the program chose therefore never
 * reaches the terminal as an escape sequence that could draw over a
 * prompt. The line is cut at 1024 bytes. A line that cannot be written
 * at once (a non-blocking pty that is full) is dropped and counted as
 * suppressed.
 */
void pbx_broker_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The broker's lines go where the job's own stderr goes: under launchd's
 * pty relay the job's pty slave, which the relay holds with the job's
 * output while a prompt shows (e2e any-broker-lines). A job can still
 * make the broker write lines of text it chose (its refusals) into its
 * own output; pbx_broker_say therefore writes at most 16 lines at once,
 * then one per second; the lines in between are counted, and the count
 * is written as one line ("N line(s) suppressed") before the next line
 * written and by pbx_broker_say_flush.
 */

/**
 * pbx_broker_say_adopt makes fd (owned; closed here) the broker's
 * standard output and error: the job's standard error as launchd's child
 * handed it over with the seccomp listener. A terminal (the job's pty
 * slave) is reopened as a non-blocking description of the broker's own,
 * so a full pty drops a line instead of stalling the broker and the
 * job's own file flags stay unchanged. Returns 0, or -1 when fd could
 * not be put in place (the broker then ends: its lines must not go to
 * the terminal launchd's relay does not hold).
 */
int pbx_broker_say_adopt(int fd);

/**
 * pbx_broker_say_limit sets pbx_broker_say's rate (burst lines at once,
 * then one per period_ms) and fills it; for tests and the defaults.
 */
void pbx_broker_say_limit(uint32_t burst, uint32_t period_ms);

/**
 * pbx_broker_say_flush writes the count of lines suppressed since the
 * last line written, if any (the broker calls it before it exits).
 */
void pbx_broker_say_flush(void);

/** PBX_BROKER_OBJS_MAX bounds the approved objects one job's broker
 * keeps (each an open descriptor until the job ends); the next brokered
 * open past it is refused EMFILE (docs/HOST.md, "Brokered opens"). */
#define PBX_BROKER_OBJS_MAX 1024U
/** PBX_BROKER_FDS_SPARE is the descriptors the broker needs beside its
 * kept objects (stdio, listener, scope, launchd's connection, one open's
 * temporaries). */
#define PBX_BROKER_FDS_SPARE 64U

/**
 * pbx_broker_person says whether the decision of a brokered request
 * (its outcome and reason, PBX_IPC_OUTCOME_* and PBX_IPC_REASON_*) of
 * urgency (PBX_IPC_URGENCY_*) shows that a person was asked, so the
 * prompt budget is charged: an exceptional request approved (only a
 * person approves one), or a denial by the person or by the prompt's
 * deadline. A routine approval does not say whether a rule or a person
 * gave it: false (not charged).
 */
bool pbx_broker_person(uint8_t outcome, uint16_t reason, uint8_t urgency);

/**
 * pbx_broker_label writes the label of a brokered request for path into
 * out (cap bytes, at least PBX_IPC_LABEL_LEN_BYTES_MAX + 1): path itself
 * when it has at most PBX_IPC_LABEL_LEN_BYTES_MAX bytes, otherwise "..."
 * and its last PBX_IPC_LABEL_LEN_BYTES_MAX - 3 bytes (the end names the
 * file). NUL-terminated; out is "" when cap is too small.
 */
void pbx_broker_label(const char *path, char *out, size_t cap);

/**
 * pbx_broker_refusal_errno is the errno a brokered open fails with when
 * its request ended with the pbx_app_open result app_result (nonzero):
 * ENOENT when vfsd found no such file (PBX_APP_E_NOT_FOUND), EACCES for
 * every other refusal.
 */
int pbx_broker_refusal_errno(int app_result);

/**
 * pbx_broker_nofile_raise raises this process's soft RLIMIT_NOFILE to
 * need, or to the hard limit when that is lower; a soft limit already at
 * least need stays. Returns the soft limit in force afterwards (0 when
 * it cannot be read).
 */
uint64_t pbx_broker_nofile_raise(uint64_t need);

#endif /* PBX_BROKER_H */
