/*
 * pbx_peer_launch.h: launchd's local wire (LAUNCH, EXIT) and the binding of
 * a BEGIN to the job launchd launched. Pure codec: no I/O, no allocation.
 *
 * LAUNCH and EXIT travel only between a program and launchd's control
 * socket; powerboxd never sees them. They use the ipc v2 32-byte header
 * (magic, version, op, status, cap count, request id, body length, seq,
 * reserved zero) with op numbers outside every pbx_ipc_op, so
 * pbx_ipc_frame_decode refuses them and this codec checks them instead.
 * docs/HOST.md ("launchd") is the normative description.
 */
#ifndef PBX_PEER_LAUNCH_H
#define PBX_PEER_LAUNCH_H

#include "ipc/pbx_ipc.h"

/** PBX_PEER_OP_LAUNCH asks launchd to start a job (3 descriptors: stdio). */
#define PBX_PEER_OP_LAUNCH 0x0F01U
/** PBX_PEER_OP_EXIT tells the launching connection its job exited. */
#define PBX_PEER_OP_EXIT 0x0F02U

/** PBX_PEER_LAUNCH_ENTRY_MAX bounds a launched job's program entry. */
#define PBX_PEER_LAUNCH_ENTRY_MAX 64U
/** PBX_PEER_LAUNCH_ARGS_MAX bounds a LAUNCH's argument count. */
#define PBX_PEER_LAUNCH_ARGS_MAX 32U
/** PBX_PEER_LAUNCH_FDS is the descriptor count of a LAUNCH without a
 * scope (stdin, stdout, stderr). */
#define PBX_PEER_LAUNCH_FDS 3U
/** PBX_PEER_LAUNCH_FDS_SCOPE is the descriptor count of a LAUNCH that
 * also hands the job a scope (the fourth, given to the job as fd 4). */
#define PBX_PEER_LAUNCH_FDS_SCOPE 4U
/** PBX_PEER_LAUNCH_SANDBOX is the LAUNCH flag asking for a sandboxed job
 * (docs/HOST.md, "Sandboxed programs"). */
#define PBX_PEER_LAUNCH_SANDBOX 0x1U
/** PBX_PEER_LAUNCH_STAGE is the LAUNCH flag saying that the program is a
 * stage program (pbx-stage) that executes the argument after its first
 * "--": a sandboxed job's rule then allows executing both files
 * (docs/HOST.md, "Install mode on the host"). */
#define PBX_PEER_LAUNCH_STAGE 0x2U
/** PBX_PEER_LAUNCH_PROFILE is the LAUNCH flag saying that a profile
 * file's path follows the flags word (u16 length, then the path): launchd
 * reads that file and changes the sandbox's system profile by it
 * (docs/HOST.md, "Profile files"). Only with PBX_PEER_LAUNCH_SANDBOX. */
#define PBX_PEER_LAUNCH_PROFILE 0x4U
/** PBX_PEER_LAUNCH_PROFILE_MAX bounds the profile path's length. */
#define PBX_PEER_LAUNCH_PROFILE_MAX 1024U
/** PBX_PEER_LAUNCH_BROKERED is the LAUNCH flag asking, with
 * PBX_PEER_LAUNCH_SANDBOX, for brokered opens (docs/HOST.md, "Brokered
 * opens"): the broker block (the scope directory and vfsd's root) then
 * ends the body (pbx_peer_launch_decode). */
#define PBX_PEER_LAUNCH_BROKERED 0x8U
/** PBX_PEER_LAUNCH_ROUTINE_OPENS is the LAUNCH flag (only beside
 * PBX_PEER_LAUNCH_BROKERED) by which the launching user marks the job's
 * brokered opens routine instead of exceptional (the program itself never
 * chooses); no field comes with it. */
#define PBX_PEER_LAUNCH_ROUTINE_OPENS 0x10U
/** PBX_PEER_LAUNCH_CWD is the LAUNCH flag saying that the frame's last
 * descriptor is the launching process's working directory (an O_PATH
 * directory descriptor; no body field comes with it): the job's process
 * changes to it before its sandbox is applied and its program runs, so
 * its relative paths name what they name for the caller. Without it the
 * job runs in launchd's own working directory (docs/HOST.md, "launchd"). */
#define PBX_PEER_LAUNCH_CWD 0x20U
/** PBX_PEER_LAUNCH_FDS_MAX is the most descriptors a LAUNCH carries
 * (stdio, a scope, the working directory). */
#define PBX_PEER_LAUNCH_FDS_MAX 5U
/** PBX_PEER_LAUNCH_DIR_MAX bounds each path of the broker block. */
#define PBX_PEER_LAUNCH_DIR_MAX 1024U
/** PBX_PEER_LAUNCH_FLAGS_KNOWN is every LAUNCH flag this codec knows. */
#define PBX_PEER_LAUNCH_FLAGS_KNOWN                                            \
    (PBX_PEER_LAUNCH_SANDBOX | PBX_PEER_LAUNCH_STAGE |                         \
     PBX_PEER_LAUNCH_PROFILE | PBX_PEER_LAUNCH_BROKERED |                      \
     PBX_PEER_LAUNCH_ROUTINE_OPENS | PBX_PEER_LAUNCH_CWD)
/** PBX_PEER_LAUNCH_REPLY_BYTES is the body of a status-zero LAUNCH reply. */
#define PBX_PEER_LAUNCH_REPLY_BYTES 28U
/** PBX_PEER_EXIT_BYTES is the body of an EXIT frame. */
#define PBX_PEER_EXIT_BYTES 4U

/**
 * pbx_peer_launch_frame is a checked local-wire header plus a view of the
 * body. body borrows the decoded buffer and is valid while it is.
 */
typedef struct pbx_peer_launch_frame {
    /** op is the full operation number (reply bit included). */
    uint16_t op;
    /** status is zero in requests; in a reply, zero or an error status. */
    uint16_t status;
    /** seq is the per-call sequence number. */
    uint32_t seq;
    /** caps is the descriptor count the frame arrived with. */
    uint16_t caps;
    /** body is the first body byte (borrowed; NULL when body_len is 0). */
    const uint8_t *body;
    /** body_len is the exact body length. */
    size_t body_len;
} pbx_peer_launch_frame;

/**
 * pbx_peer_launch_req is a decoded LAUNCH request. job_id and job_gen are
 * both zero (launchd allocates) or name the job wanted (gen nonzero).
 * session (nonzero) and realm (1..UINT32_MAX, BEGIN's realm is 32 bits)
 * are the job's: launchd binds every BEGIN of the job to them. entry holds
 * entry_len bytes (1..PBX_PEER_LAUNCH_ENTRY_MAX, printable ASCII),
 * NUL-terminated. args[i] points at arg_lens[i] bytes inside the decoded buffer
 * (borrowed, not NUL-terminated). flags holds PBX_PEER_LAUNCH_* bits;
 * scope says whether a fourth descriptor (a scope for the job) comes
 * with the frame.
 */
typedef struct pbx_peer_launch_req {
    /** job_id is the job wanted, or zero. */
    uint64_t job_id;
    /** job_gen is the generation wanted, or zero with job_id zero. */
    uint32_t job_gen;
    /** session is the job's session (nonzero). */
    uint64_t session;
    /** realm is the job's realm (1..UINT32_MAX). */
    uint64_t realm;
    /** entry_len is the number of entry bytes. */
    uint16_t entry_len;
    /** entry is the program entry, NUL-terminated. */
    char entry[PBX_PEER_LAUNCH_ENTRY_MAX + 1U];
    /** argc is the argument count (1..PBX_PEER_LAUNCH_ARGS_MAX). */
    uint16_t argc;
    /** arg_lens are the argument lengths. */
    uint16_t arg_lens[PBX_PEER_LAUNCH_ARGS_MAX];
    /** args point at the argument bytes (borrowed). */
    const uint8_t *args[PBX_PEER_LAUNCH_ARGS_MAX];
    /** flags are the PBX_PEER_LAUNCH_* bits (zero: an ordinary job). */
    uint32_t flags;
    /** scope is true when the frame carries a fourth descriptor. */
    bool scope;
    /** profile_len is the profile path's length (nonzero exactly when
     * flags holds PBX_PEER_LAUNCH_PROFILE). */
    uint16_t profile_len;
    /** profile points at the profile path's bytes (borrowed, not
     * NUL-terminated; absolute: it starts with '/'). */
    const uint8_t *profile;
    /** broker_scope is the brokered job's scope directory (absolute,
     * broker_scope_len bytes, borrowed, not NUL-terminated); set only
     * with PBX_PEER_LAUNCH_BROKERED. */
    const uint8_t *broker_scope;
    /** broker_scope_len is its length (1..PBX_PEER_LAUNCH_DIR_MAX). */
    uint16_t broker_scope_len;
    /** broker_root is vfsd's root directory (as broker_scope). */
    const uint8_t *broker_root;
    /** broker_root_len is its length (1..PBX_PEER_LAUNCH_DIR_MAX). */
    uint16_t broker_root_len;
} pbx_peer_launch_req;

/** pbx_peer_launch_reply is the body of a status-zero LAUNCH reply. */
typedef struct pbx_peer_launch_reply {
    /** job_id is the job launched. */
    uint64_t job_id;
    /** job_gen is its generation (nonzero). */
    uint32_t job_gen;
    /** pid is the job's process id (its process group too). */
    uint32_t pid;
    /** target_pid is the staged process bound to the job, or zero. */
    uint64_t target_pid;
    /** target_gen is its generation, or zero when none was free. */
    uint32_t target_gen;
} pbx_peer_launch_reply;

/**
 * pbx_peer_launch_peek checks the header of the len bytes in buf, which
 * arrived with nfds descriptors, as a local-wire frame and fills *out:
 * length at least a header and at most PBX_IPC_FRAME_BYTES_MAX, magic,
 * version, op LAUNCH or EXIT (request or reply form), body length exact,
 * reserved word zero, cap count equal to nfds (a LAUNCH request 3 to
 * PBX_PEER_LAUNCH_FDS_MAX, everything else 0), request id zero, a nonzero
 * status only in a reply with an empty body. Returns PBX_OK or the PBX_E_IPC_*
 * error of the first failed check (PBX_E_IPC_UNKNOWN_OP for any other op, so a
 * caller can try pbx_ipc_frame_decode instead).
 */
pbx_err pbx_peer_launch_peek(const uint8_t *buf, size_t len, size_t nfds,
                             pbx_peer_launch_frame *out);

/**
 * pbx_peer_launch_encode writes a LAUNCH request for rec into buf (cap
 * count pbx_peer_launch_nfds(rec); seq 0) and stores its length in
 * *out_len. args[i] must point at
 * arg_lens[i] readable bytes. Returns PBX_E_IPC_NO_SPACE when buf_len is
 * too small, or the error pbx_peer_launch_decode would return for the
 * record; nothing past buf_len is written.
 */
pbx_err pbx_peer_launch_encode(const pbx_peer_launch_req *rec, uint8_t *buf,
                               size_t buf_len, size_t *out_len);

/**
 * pbx_peer_launch_decode decodes the body of a checked LAUNCH request f
 * (from pbx_peer_launch_peek) into *out. Body: u64 job id, u32 job
 * generation, u64 session, u64 realm, u16 entry length + entry, u16 argc,
 * then per argument u16 length + bytes. Checks: exact length, entry 1..64
 * bytes of printable ASCII, argc 1..32, each argument 1..body bytes
 * without NUL, job id and generation both zero or generation nonzero,
 * session nonzero, realm 1..UINT32_MAX (PBX_E_IPC_BOUND). After the last
 * argument an optional u32 flags word may follow: absent means zero
 * (the frame an older sender writes); present, it must be nonzero and
 * hold only PBX_PEER_LAUNCH_FLAGS_KNOWN bits (PBX_E_IPC_BOUND), so each
 * request has one encoding. With PBX_PEER_LAUNCH_PROFILE (which needs
 * PBX_PEER_LAUNCH_SANDBOX) a u16 length and the profile path follow the
 * flags word: 1..PBX_PEER_LAUNCH_PROFILE_MAX bytes, no NUL, starting
 * with '/' (PBX_E_IPC_BOUND, PBX_E_IPC_TEXT). With
 * PBX_PEER_LAUNCH_BROKERED (also only beside the sandbox flag) the broker
 * block comes next: u16 length + the scope directory, u16 length + vfsd's
 * root, each 1..PBX_PEER_LAUNCH_DIR_MAX bytes of an absolute path
 * without NUL. Nothing may follow the last field.
 * The descriptors are stdio, then the scope when out->scope, then the
 * working directory when flags hold PBX_PEER_LAUNCH_CWD: out->scope is
 * true when f->caps, less one for the working directory, is 4; any count
 * other than 3 or 4 left is PBX_E_IPC_CAP_PARTITION. out->args and out->profile
 * borrow f's buffer. Returns PBX_OK, PBX_E_IPC_OP_MISMATCH, PBX_E_IPC_TRUNCATED
 * (a field runs past the body), PBX_E_IPC_TRAILING (bytes after the last
 * argument), PBX_E_IPC_BOUND, PBX_E_IPC_TEXT, PBX_E_IPC_GENERATION or
 * PBX_E_IPC_CAP_PARTITION.
 */
pbx_err pbx_peer_launch_decode(const pbx_peer_launch_frame *f,
                               pbx_peer_launch_req *out);

/**
 * pbx_peer_launch_nfds is the descriptor count of the LAUNCH rec: 3
 * (stdio), one more with rec->scope, one more with PBX_PEER_LAUNCH_CWD.
 */
size_t pbx_peer_launch_nfds(const pbx_peer_launch_req *rec);

/**
 * pbx_peer_launch_cwd_index is the index, among the descriptors of the
 * decoded LAUNCH rec, of the working directory: the last one, or -1 when
 * rec has none (no PBX_PEER_LAUNCH_CWD).
 */
int pbx_peer_launch_cwd_index(const pbx_peer_launch_req *rec);

/**
 * pbx_peer_launch_reply_encode writes a LAUNCH reply into buf: with status
 * zero the body of rec (rec must not be NULL), otherwise an empty error
 * reply (rec ignored). seq is written as given. Returns PBX_OK or
 * PBX_E_IPC_NO_SPACE.
 */
pbx_err pbx_peer_launch_reply_encode(uint16_t status,
                                     const pbx_peer_launch_reply *rec,
                                     uint32_t seq, uint8_t *buf, size_t buf_len,
                                     size_t *out_len);

/**
 * pbx_peer_launch_reply_decode decodes a checked LAUNCH reply f whose
 * status is zero into *out (exact body length, job generation nonzero).
 * Returns PBX_OK, PBX_E_IPC_OP_MISMATCH, PBX_E_IPC_STATUS (f is an error
 * reply: read f->status), PBX_E_IPC_BODY_LEN or PBX_E_IPC_GENERATION.
 */
pbx_err pbx_peer_launch_reply_decode(const pbx_peer_launch_frame *f,
                                     pbx_peer_launch_reply *out);

/**
 * pbx_peer_exit_encode writes an EXIT frame carrying the wait status
 * (as waitpid reported it) with seq, request id zero and no descriptor.
 * Returns PBX_OK or PBX_E_IPC_NO_SPACE.
 */
pbx_err pbx_peer_exit_encode(uint32_t wait_status, uint32_t seq, uint8_t *buf,
                             size_t buf_len, size_t *out_len);

/**
 * pbx_peer_exit_decode decodes a checked EXIT frame f into *wait_status.
 * Returns PBX_OK, PBX_E_IPC_OP_MISMATCH or PBX_E_IPC_BODY_LEN.
 */
pbx_err pbx_peer_exit_decode(const pbx_peer_launch_frame *f,
                             uint32_t *wait_status);

/**
 * pbx_peer_launch_binding is what launchd launched a job as: its identity,
 * session and realm, program entry (entry_len bytes), simulated staged
 * process (target_gen zero when none) and its own process id (own_pid,
 * zero before the fork). Plain data, caller-owned.
 */
typedef struct pbx_peer_launch_binding {
    /** job_id is the job's id. */
    uint64_t job_id;
    /** job_gen is the job's generation (nonzero). */
    uint32_t job_gen;
    /** realm is the job's realm. */
    uint32_t realm;
    /** session is the job's session. */
    uint64_t session;
    /** entry_len is the number of entry bytes. */
    uint16_t entry_len;
    /** entry is the job's program entry. */
    uint8_t entry[PBX_PEER_LAUNCH_ENTRY_MAX];
    /** target_pid is the job's staged process id. */
    uint64_t target_pid;
    /** target_gen is its generation, zero when the job has none. */
    uint32_t target_gen;
    /** own_pid is the job's own process id (launchd forked it), zero
     * when unknown: an install target naming it with a nonzero
     * generation is the job's real process (procd checks the
     * generation). */
    uint64_t own_pid;
} pbx_peer_launch_binding;

/**
 * pbx_peer_launch_bind_result says what pbx_peer_launch_bind_begin found.
 */
typedef enum pbx_peer_launch_bind_result {
    /** The BEGIN names the job exactly (after filling empty fields). */
    PBX_PEER_BIND_OK = 0,
    /** The BEGIN claims another job (id or generation). */
    PBX_PEER_BIND_JOB = 1,
    /** The BEGIN claims another program entry. */
    PBX_PEER_BIND_ENTRY = 2,
    /** The BEGIN names a target that is neither the job's own process
     * (any nonzero generation) nor its simulated staged process, or
     * leaves the target zero while the job has no simulated one. */
    PBX_PEER_BIND_TARGET = 3,
    /** The BEGIN body does not decode (see *err). */
    PBX_PEER_BIND_MALFORMED = 4,
    /** The BEGIN claims another session. */
    PBX_PEER_BIND_SESSION = 5,
    /** The BEGIN claims another realm. */
    PBX_PEER_BIND_REALM = 6
} pbx_peer_launch_bind_result;

/**
 * pbx_peer_launch_bind_begin binds the BEGIN request in[0..in_len) (whose
 * header already passed pbx_ipc_frame_decode) to job b. Job id and
 * generation both zero, a zero session, a zero realm, an empty entry, or
 * (install mode) target process id and generation both zero are filled in
 * from b (the target from the simulated staged process); any other value
 * must equal b's exactly, but for an install target naming b's own_pid
 * with a nonzero generation (a claim of another job is reported first,
 * then session, realm, entry, target). On PBX_PEER_BIND_OK
 * the bound frame (same seq, body re-laid when the entry was inserted) is in
 * out[0..*out_len) and *rec holds its strict decode (pbx_ipc_begin_decode). On
 * MALFORMED *err holds the decoder's error. out must not overlap in and out_len
 * must be at least PBX_IPC_FRAME_BYTES_MAX.
 */
pbx_peer_launch_bind_result
pbx_peer_launch_bind_begin(const pbx_peer_launch_binding *b, const uint8_t *in,
                           size_t in_len, uint8_t *out, size_t out_cap,
                           size_t *out_len, pbx_ipc_begin *rec, pbx_err *err);

#endif /* PBX_PEER_LAUNCH_H */
