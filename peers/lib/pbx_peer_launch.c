/*
 * pbx_peer_launch.c: launchd's local wire (LAUNCH, EXIT) and the binding of
 * a BEGIN to its job (see pbx_peer_launch.h).
 */
#include "peers/lib/pbx_peer_launch.h"

#include <string.h>

/* BEGIN body offsets (docs/PROTOCOL.md): the fields launchd binds. */
#define LAUNCH_BEGIN_JOB_ID     0U
#define LAUNCH_BEGIN_SESSION    8U
#define LAUNCH_BEGIN_TARGET_ID  16U
#define LAUNCH_BEGIN_JOB_GEN    24U
#define LAUNCH_BEGIN_REALM      28U
#define LAUNCH_BEGIN_TARGET_GEN 32U
#define LAUNCH_BEGIN_MODE       49U
#define LAUNCH_BEGIN_ENTRY_LEN  52U
#define LAUNCH_BEGIN_LABEL_LEN  54U
#define LAUNCH_HEADER_BODY_LEN  20U
#define LAUNCH_HEADER_CAPS      10U
#define LAUNCH_HEADER_STATUS    8U
#define LAUNCH_HEADER_OP        6U
#define LAUNCH_HEADER_VERSION   4U
/* LAUNCH body: job id, generation, session, realm, entry length (the
 * entry follows), argc. */
#define LAUNCH_REQ_SESSION   12U
#define LAUNCH_REQ_REALM     20U
#define LAUNCH_REQ_ENTRY_LEN 28U
#define LAUNCH_REQ_ENTRY     30U
#define LAUNCH_REQUEST_FIXED 32U

/* Writes a local-wire header for op into buf (which holds at least a
 * header): status, cap count, body length and seq as given, request id
 * and reserved word zero. */
static void launch_header_put(uint8_t *buf, uint16_t op, uint16_t status,
                              uint16_t caps, size_t body_len, uint32_t seq)
{
    memset(buf, 0, PBX_IPC_HEADER_BYTES);
    pbx_le_put32(buf, PBX_IPC_MAGIC);
    pbx_le_put16(buf + LAUNCH_HEADER_VERSION, (uint16_t)PBX_IPC_VERSION);
    pbx_le_put16(buf + LAUNCH_HEADER_OP, op);
    pbx_le_put16(buf + LAUNCH_HEADER_STATUS, status);
    pbx_le_put16(buf + LAUNCH_HEADER_CAPS, caps);
    pbx_le_put32(buf + LAUNCH_HEADER_BODY_LEN, (uint32_t)body_len);
    pbx_le_put32(buf + PBX_IPC_SEQ_OFFSET, seq);
}

/* Whether op is LAUNCH or EXIT, in request or reply form. */
static bool launch_op_known(uint16_t op)
{
    uint16_t base = (uint16_t)(op & (uint16_t)~PBX_IPC_REPLY_BIT);
    return base == PBX_PEER_OP_LAUNCH || base == PBX_PEER_OP_EXIT;
}

/* The header checks after magic, version and op: lengths, reserved, ids,
 * status and descriptor count. */
static pbx_err launch_header_check(const uint8_t *buf, size_t len, size_t nfds,
                                   uint16_t op)
{
    if ((size_t)pbx_le_get32(buf + LAUNCH_HEADER_BODY_LEN) !=
        len - PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_BODY_LEN;
    }
    if (pbx_le_get32(buf + PBX_IPC_RESERVED_OFFSET) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    if ((size_t)pbx_le_get16(buf + LAUNCH_HEADER_CAPS) != nfds) {
        return PBX_E_IPC_CAP_COUNT;
    }
    if (pbx_le_get32(buf + 12) != 0U || pbx_le_get32(buf + 16) != 0U) {
        return PBX_E_IPC_REQUEST_ID;
    }
    uint16_t status = pbx_le_get16(buf + LAUNCH_HEADER_STATUS);
    bool reply = (op & PBX_IPC_REPLY_BIT) != 0U;
    if (status != 0U && (!reply || len != PBX_IPC_HEADER_BYTES || nfds != 0U)) {
        return PBX_E_IPC_STATUS;
    }
    if (op == PBX_PEER_OP_LAUNCH) {
        return nfds >= PBX_PEER_LAUNCH_FDS && nfds <= PBX_PEER_LAUNCH_FDS_MAX
                   ? PBX_OK
                   : PBX_E_IPC_CAP_PARTITION;
    }
    return nfds == 0U ? PBX_OK : PBX_E_IPC_CAP_PARTITION;
}

pbx_err pbx_peer_launch_peek(const uint8_t *buf, size_t len, size_t nfds,
                             pbx_peer_launch_frame *out)
{
    if (buf == NULL || len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_TRUNCATED;
    }
    if (pbx_le_get32(buf) != PBX_IPC_MAGIC) {
        return PBX_E_IPC_MAGIC;
    }
    if (pbx_le_get16(buf + LAUNCH_HEADER_VERSION) != PBX_IPC_VERSION) {
        return PBX_E_IPC_VERSION;
    }
    uint16_t op = pbx_le_get16(buf + LAUNCH_HEADER_OP);
    if (!launch_op_known(op)) {
        return PBX_E_IPC_UNKNOWN_OP;
    }
    if (len > PBX_IPC_FRAME_BYTES_MAX) {
        return PBX_E_IPC_FRAME_TOO_LARGE;
    }
    pbx_err err = launch_header_check(buf, len, nfds, op);
    if (err != PBX_OK) {
        return err;
    }
    out->op = op;
    out->status = pbx_le_get16(buf + LAUNCH_HEADER_STATUS);
    out->seq = pbx_le_get32(buf + PBX_IPC_SEQ_OFFSET);
    out->caps = (uint16_t)nfds;
    out->body_len = len - PBX_IPC_HEADER_BYTES;
    out->body = out->body_len != 0U ? buf + PBX_IPC_HEADER_BYTES : NULL;
    return PBX_OK;
}

/* Whether bytes[0..len) is printable ASCII (0x20..0x7E). */
static bool launch_printable(const uint8_t *bytes, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (bytes[i] < 0x20U || bytes[i] > 0x7EU) {
            return false;
        }
    }
    return true;
}

/* Decodes the profile path that starts at body offset *off (moved past
 * it), the field after the flags word of a LAUNCH with the profile flag. */
static pbx_err launch_profile_decode(const pbx_peer_launch_frame *f,
                                     size_t *poff, pbx_peer_launch_req *out)
{
    if ((out->flags & PBX_PEER_LAUNCH_SANDBOX) == 0U) {
        return PBX_E_IPC_BOUND;
    }
    size_t off = *poff;
    if (f->body_len - off < 2U) {
        return PBX_E_IPC_TRUNCATED;
    }
    uint16_t n = pbx_le_get16(f->body + off);
    off += 2U;
    if (n == 0U || n > PBX_PEER_LAUNCH_PROFILE_MAX) {
        return PBX_E_IPC_BOUND;
    }
    if (f->body_len - off < n) {
        return PBX_E_IPC_TRUNCATED;
    }
    if (memchr(f->body + off, 0, n) != NULL || f->body[off] != '/') {
        return PBX_E_IPC_TEXT;
    }
    out->profile_len = n;
    out->profile = f->body + off;
    *poff = off + n;
    return PBX_OK;
}

/* Decodes one path of the broker block at body offset *off. */
static pbx_err launch_dir_decode(const pbx_peer_launch_frame *f, size_t *off,
                                 const uint8_t **p, uint16_t *len)
{
    if (f->body_len - *off < 2U) {
        return PBX_E_IPC_TRUNCATED;
    }
    uint16_t n = pbx_le_get16(f->body + *off);
    *off += 2U;
    if (n == 0U || n > PBX_PEER_LAUNCH_DIR_MAX) {
        return PBX_E_IPC_BOUND;
    }
    if (f->body_len - *off < n) {
        return PBX_E_IPC_TRUNCATED;
    }
    if (f->body[*off] != '/' || memchr(f->body + *off, 0, n) != NULL) {
        return PBX_E_IPC_TEXT;
    }
    *p = f->body + *off;
    *len = n;
    *off += n;
    return PBX_OK;
}

/* Decodes the broker block (scope, root) at body offset *off (moved
 * past it); flags must also ask for the sandbox. */
static pbx_err launch_broker_decode(const pbx_peer_launch_frame *f, size_t *off,
                                    pbx_peer_launch_req *out)
{
    if ((out->flags & PBX_PEER_LAUNCH_SANDBOX) == 0U) {
        return PBX_E_IPC_BOUND;
    }
    pbx_err e =
        launch_dir_decode(f, off, &out->broker_scope, &out->broker_scope_len);
    if (e == PBX_OK) {
        e = launch_dir_decode(f, off, &out->broker_root, &out->broker_root_len);
    }
    return e;
}

/* Decodes the arguments that start at body offset off. */
static pbx_err launch_args_decode(const pbx_peer_launch_frame *f, size_t off,
                                  pbx_peer_launch_req *out)
{
    for (uint16_t i = 0; i < out->argc; i++) {
        if (f->body_len < off + 2U) {
            return PBX_E_IPC_TRUNCATED;
        }
        uint16_t n = pbx_le_get16(f->body + off);
        off += 2U;
        if (n == 0U) {
            return PBX_E_IPC_BOUND;
        }
        if (f->body_len - off < n) {
            return PBX_E_IPC_TRUNCATED;
        }
        if (memchr(f->body + off, 0, n) != NULL) {
            return PBX_E_IPC_TEXT;
        }
        out->arg_lens[i] = n;
        out->args[i] = f->body + off;
        off += n;
    }
    out->flags = 0U;
    out->profile_len = 0U;
    out->profile = NULL;
    out->broker_scope = out->broker_root = NULL;
    out->broker_scope_len = out->broker_root_len = 0U;
    if (off == f->body_len) {
        return PBX_OK;
    }
    if (f->body_len - off < 4U) {
        return PBX_E_IPC_TRAILING;
    }
    out->flags = pbx_le_get32(f->body + off);
    off += 4U;
    if (out->flags == 0U ||
        (out->flags & ~(uint32_t)PBX_PEER_LAUNCH_FLAGS_KNOWN) != 0U) {
        return PBX_E_IPC_BOUND;
    }
    pbx_err e = PBX_OK;
    if ((out->flags & PBX_PEER_LAUNCH_PROFILE) != 0U) {
        e = launch_profile_decode(f, &off, out);
    }
    if (e == PBX_OK && (out->flags & PBX_PEER_LAUNCH_BROKERED) != 0U) {
        e = launch_broker_decode(f, &off, out);
    } else if ((out->flags & PBX_PEER_LAUNCH_ROUTINE_OPENS) != 0U) {
        e = PBX_E_IPC_BOUND;
    }
    return e != PBX_OK ? e : off == f->body_len ? PBX_OK : PBX_E_IPC_TRAILING;
}

pbx_err pbx_peer_launch_decode(const pbx_peer_launch_frame *f,
                               pbx_peer_launch_req *out)
{
    if (f->op != PBX_PEER_OP_LAUNCH) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    if (f->body_len < LAUNCH_REQUEST_FIXED) {
        return PBX_E_IPC_TRUNCATED;
    }
    const uint8_t *b = f->body;
    out->job_id = pbx_le_get64(b);
    out->job_gen = pbx_le_get32(b + 8);
    if (out->job_gen == 0U && out->job_id != 0U) {
        return PBX_E_IPC_GENERATION;
    }
    out->session = pbx_le_get64(b + LAUNCH_REQ_SESSION);
    out->realm = pbx_le_get64(b + LAUNCH_REQ_REALM);
    /* Zero in a BEGIN means "the job's": the job's own must be nonzero,
     * and BEGIN's realm has 32 bits. */
    if (out->session == 0U || out->realm == 0U || out->realm > UINT32_MAX) {
        return PBX_E_IPC_BOUND;
    }
    uint16_t e = pbx_le_get16(b + LAUNCH_REQ_ENTRY_LEN);
    if (e == 0U || e > PBX_PEER_LAUNCH_ENTRY_MAX) {
        return PBX_E_IPC_BOUND;
    }
    /* The fixed part ends with the entry, then argc. */
    if (f->body_len < LAUNCH_REQUEST_FIXED + (size_t)e) {
        return PBX_E_IPC_TRUNCATED;
    }
    if (!launch_printable(b + LAUNCH_REQ_ENTRY, e)) {
        return PBX_E_IPC_TEXT;
    }
    memcpy(out->entry, b + LAUNCH_REQ_ENTRY, e);
    out->entry[e] = '\0';
    out->entry_len = e;
    out->argc = pbx_le_get16(b + LAUNCH_REQ_ENTRY + e);
    if (out->argc == 0U || out->argc > PBX_PEER_LAUNCH_ARGS_MAX) {
        return PBX_E_IPC_BOUND;
    }
    pbx_err err = launch_args_decode(f, LAUNCH_REQUEST_FIXED + (size_t)e, out);
    /* The working directory, when the flags name one, is the last
     * descriptor; what is left is stdio and maybe a scope. */
    size_t cwd = (out->flags & PBX_PEER_LAUNCH_CWD) != 0U ? 1U : 0U;
    size_t rest = (size_t)f->caps - cwd;
    out->scope = rest == PBX_PEER_LAUNCH_FDS_SCOPE;
    if (err == PBX_OK && rest != PBX_PEER_LAUNCH_FDS && !out->scope) {
        err = PBX_E_IPC_CAP_PARTITION;
    }
    return err;
}

size_t pbx_peer_launch_nfds(const pbx_peer_launch_req *rec)
{
    return PBX_PEER_LAUNCH_FDS + (rec->scope ? 1U : 0U) +
           ((rec->flags & PBX_PEER_LAUNCH_CWD) != 0U ? 1U : 0U);
}

int pbx_peer_launch_cwd_index(const pbx_peer_launch_req *rec)
{
    return (rec->flags & PBX_PEER_LAUNCH_CWD) != 0U
               ? (int)pbx_peer_launch_nfds(rec) - 1
               : -1;
}

pbx_err pbx_peer_launch_encode(const pbx_peer_launch_req *rec, uint8_t *buf,
                               size_t buf_len, size_t *out_len)
{
    size_t n = PBX_IPC_HEADER_BYTES + LAUNCH_REQUEST_FIXED + rec->entry_len;
    if (rec->entry_len > PBX_PEER_LAUNCH_ENTRY_MAX ||
        rec->argc > PBX_PEER_LAUNCH_ARGS_MAX) {
        return PBX_E_IPC_BOUND;
    }
    for (uint16_t i = 0; i < rec->argc; i++) {
        n += 2U + (size_t)rec->arg_lens[i];
    }
    /* The flags word is written only when a flag is set, so an ordinary
     * LAUNCH is byte for byte what older senders write. */
    n += rec->flags != 0U ? 4U : 0U;
    bool prof = (rec->flags & PBX_PEER_LAUNCH_PROFILE) != 0U;
    if (prof && (rec->profile_len == 0U ||
                 rec->profile_len > PBX_PEER_LAUNCH_PROFILE_MAX)) {
        return PBX_E_IPC_BOUND;
    }
    n += prof ? 2U + (size_t)rec->profile_len : 0U;
    bool brokered = (rec->flags & PBX_PEER_LAUNCH_BROKERED) != 0U;
    if (brokered) {
        n += 4U + (size_t)rec->broker_scope_len + rec->broker_root_len;
    }
    uint16_t caps = (uint16_t)pbx_peer_launch_nfds(rec);
    if (n > buf_len || n > PBX_IPC_FRAME_BYTES_MAX) {
        return PBX_E_IPC_NO_SPACE;
    }
    launch_header_put(buf, PBX_PEER_OP_LAUNCH, 0, caps,
                      n - PBX_IPC_HEADER_BYTES, 0);
    uint8_t *b = buf + PBX_IPC_HEADER_BYTES;
    pbx_le_put64(b, rec->job_id);
    pbx_le_put32(b + 8, rec->job_gen);
    pbx_le_put64(b + LAUNCH_REQ_SESSION, rec->session);
    pbx_le_put64(b + LAUNCH_REQ_REALM, rec->realm);
    pbx_le_put16(b + LAUNCH_REQ_ENTRY_LEN, rec->entry_len);
    memcpy(b + LAUNCH_REQ_ENTRY, rec->entry, rec->entry_len);
    size_t off = LAUNCH_REQ_ENTRY + (size_t)rec->entry_len;
    pbx_le_put16(b + off, rec->argc);
    off += 2U;
    for (uint16_t i = 0; i < rec->argc; i++) {
        pbx_le_put16(b + off, rec->arg_lens[i]);
        memcpy(b + off + 2U, rec->args[i], rec->arg_lens[i]);
        off += 2U + (size_t)rec->arg_lens[i];
    }
    if (rec->flags != 0U) {
        pbx_le_put32(b + off, rec->flags);
        off += 4U;
    }
    if (prof) {
        pbx_le_put16(b + off, rec->profile_len);
        memcpy(b + off + 2U, rec->profile, rec->profile_len);
        off += 2U + (size_t)rec->profile_len;
    }
    if (brokered) {
        pbx_le_put16(b + off, rec->broker_scope_len);
        memcpy(b + off + 2U, rec->broker_scope, rec->broker_scope_len);
        off += 2U + (size_t)rec->broker_scope_len;
        pbx_le_put16(b + off, rec->broker_root_len);
        memcpy(b + off + 2U, rec->broker_root, rec->broker_root_len);
    }
    /* Check the output as the receiver will, so only valid frames leave. */
    pbx_peer_launch_frame f;
    static pbx_peer_launch_req chk;
    pbx_err err = pbx_peer_launch_peek(buf, n, caps, &f);
    if (err == PBX_OK) {
        err = pbx_peer_launch_decode(&f, &chk);
    }
    *out_len = err == PBX_OK ? n : 0U;
    return err;
}

pbx_err pbx_peer_launch_reply_encode(uint16_t status,
                                     const pbx_peer_launch_reply *rec,
                                     uint32_t seq, uint8_t *buf, size_t buf_len,
                                     size_t *out_len)
{
    size_t body = status == 0U ? PBX_PEER_LAUNCH_REPLY_BYTES : 0U;
    if (buf_len < PBX_IPC_HEADER_BYTES + body) {
        return PBX_E_IPC_NO_SPACE;
    }
    launch_header_put(buf, PBX_PEER_OP_LAUNCH | PBX_IPC_REPLY_BIT, status, 0,
                      body, seq);
    if (status == 0U) {
        uint8_t *b = buf + PBX_IPC_HEADER_BYTES;
        pbx_le_put64(b, rec->job_id);
        pbx_le_put32(b + 8, rec->job_gen);
        pbx_le_put32(b + 12, rec->pid);
        pbx_le_put64(b + 16, rec->target_pid);
        pbx_le_put32(b + 24, rec->target_gen);
    }
    *out_len = PBX_IPC_HEADER_BYTES + body;
    return PBX_OK;
}

pbx_err pbx_peer_launch_reply_decode(const pbx_peer_launch_frame *f,
                                     pbx_peer_launch_reply *out)
{
    if (f->op != (PBX_PEER_OP_LAUNCH | PBX_IPC_REPLY_BIT)) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    if (f->status != 0U) {
        return PBX_E_IPC_STATUS;
    }
    if (f->body_len != PBX_PEER_LAUNCH_REPLY_BYTES) {
        return PBX_E_IPC_BODY_LEN;
    }
    out->job_id = pbx_le_get64(f->body);
    out->job_gen = pbx_le_get32(f->body + 8);
    out->pid = pbx_le_get32(f->body + 12);
    out->target_pid = pbx_le_get64(f->body + 16);
    out->target_gen = pbx_le_get32(f->body + 24);
    return out->job_gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}

pbx_err pbx_peer_exit_encode(uint32_t wait_status, uint32_t seq, uint8_t *buf,
                             size_t buf_len, size_t *out_len)
{
    if (buf_len < PBX_IPC_HEADER_BYTES + PBX_PEER_EXIT_BYTES) {
        return PBX_E_IPC_NO_SPACE;
    }
    launch_header_put(buf, PBX_PEER_OP_EXIT, 0, 0, PBX_PEER_EXIT_BYTES, seq);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES, wait_status);
    *out_len = PBX_IPC_HEADER_BYTES + PBX_PEER_EXIT_BYTES;
    return PBX_OK;
}

pbx_err pbx_peer_exit_decode(const pbx_peer_launch_frame *f,
                             uint32_t *wait_status)
{
    if (f->op != PBX_PEER_OP_EXIT) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    if (f->body_len != PBX_PEER_EXIT_BYTES) {
        return PBX_E_IPC_BODY_LEN;
    }
    *wait_status = pbx_le_get32(f->body);
    return PBX_OK;
}

/* Checks the job id and generation at body b against the job, filling
 * both when both are zero. */
static pbx_peer_launch_bind_result
launch_bind_job(const pbx_peer_launch_binding *j, uint8_t *b)
{
    uint64_t id = pbx_le_get64(b + LAUNCH_BEGIN_JOB_ID);
    uint32_t gen = pbx_le_get32(b + LAUNCH_BEGIN_JOB_GEN);
    if (id == 0U && gen == 0U) {
        pbx_le_put64(b + LAUNCH_BEGIN_JOB_ID, j->job_id);
        pbx_le_put32(b + LAUNCH_BEGIN_JOB_GEN, j->job_gen);
        return PBX_PEER_BIND_OK;
    }
    return id == j->job_id && gen == j->job_gen ? PBX_PEER_BIND_OK
                                                : PBX_PEER_BIND_JOB;
}

/* Checks the session and realm at body b against the job's, filling
 * each that is zero. */
static pbx_peer_launch_bind_result
launch_bind_context(const pbx_peer_launch_binding *j, uint8_t *b)
{
    uint64_t session = pbx_le_get64(b + LAUNCH_BEGIN_SESSION);
    uint32_t realm = pbx_le_get32(b + LAUNCH_BEGIN_REALM);
    if (session == 0U) {
        pbx_le_put64(b + LAUNCH_BEGIN_SESSION, j->session);
    } else if (session != j->session) {
        return PBX_PEER_BIND_SESSION;
    }
    if (realm == 0U) {
        pbx_le_put32(b + LAUNCH_BEGIN_REALM, j->realm);
    } else if (realm != j->realm) {
        return PBX_PEER_BIND_REALM;
    }
    return PBX_PEER_BIND_OK;
}

/* Checks the install target at body b: the job's own process (launchd
 * forked it; procd, which staged it, judges the generation), or the
 * job's simulated staged process, which also fills a target whose id and
 * generation are both zero. Runtime-reply mode names no target; the
 * strict decode checks that. */
static pbx_peer_launch_bind_result
launch_bind_target(const pbx_peer_launch_binding *j, uint8_t *b)
{
    if (b[LAUNCH_BEGIN_MODE] != (uint8_t)PBX_IPC_MODE_INSTALL) {
        return PBX_PEER_BIND_OK;
    }
    uint64_t id = pbx_le_get64(b + LAUNCH_BEGIN_TARGET_ID);
    uint32_t gen = pbx_le_get32(b + LAUNCH_BEGIN_TARGET_GEN);
    if (j->own_pid != 0U && id == j->own_pid && gen != 0U) {
        return PBX_PEER_BIND_OK;
    }
    if (j->target_gen == 0U) {
        return PBX_PEER_BIND_TARGET;
    }
    if (id == 0U && gen == 0U) {
        pbx_le_put64(b + LAUNCH_BEGIN_TARGET_ID, j->target_pid);
        pbx_le_put32(b + LAUNCH_BEGIN_TARGET_GEN, j->target_gen);
        return PBX_PEER_BIND_OK;
    }
    return id == j->target_pid && gen == j->target_gen ? PBX_PEER_BIND_OK
                                                       : PBX_PEER_BIND_TARGET;
}

/* Copies the BEGIN in[0..in_len) to out, inserting the job's entry when
 * the BEGIN's is empty; checks a nonempty entry against the job's. The
 * body is at least the fixed part and its text lengths add up. */
static pbx_peer_launch_bind_result
launch_bind_entry(const pbx_peer_launch_binding *j, const uint8_t *in,
                  size_t in_len, uint8_t *out, size_t out_cap, size_t *out_len)
{
    const uint8_t *b = in + PBX_IPC_HEADER_BYTES;
    size_t head = PBX_IPC_HEADER_BYTES + PBX_IPC_BEGIN_FIXED_BYTES;
    uint16_t e = pbx_le_get16(b + LAUNCH_BEGIN_ENTRY_LEN);
    if (e != 0U) {
        bool same = e == j->entry_len && memcmp(in + head, j->entry, e) == 0;
        memcpy(out, in, in_len);
        *out_len = in_len;
        return same ? PBX_PEER_BIND_OK : PBX_PEER_BIND_ENTRY;
    }
    if (in_len + j->entry_len > out_cap ||
        in_len + j->entry_len > PBX_IPC_FRAME_BYTES_MAX) {
        return PBX_PEER_BIND_MALFORMED;
    }
    memcpy(out, in, head);
    memcpy(out + head, j->entry, j->entry_len);
    memcpy(out + head + j->entry_len, in + head, in_len - head);
    pbx_le_put16(out + PBX_IPC_HEADER_BYTES + LAUNCH_BEGIN_ENTRY_LEN,
                 j->entry_len);
    *out_len = in_len + j->entry_len;
    pbx_le_put32(out + LAUNCH_HEADER_BODY_LEN,
                 (uint32_t)(*out_len - PBX_IPC_HEADER_BYTES));
    return PBX_PEER_BIND_OK;
}

pbx_peer_launch_bind_result
pbx_peer_launch_bind_begin(const pbx_peer_launch_binding *b, const uint8_t *in,
                           size_t in_len, uint8_t *out, size_t out_cap,
                           size_t *out_len, pbx_ipc_begin *rec, pbx_err *err)
{
    *err = PBX_E_IPC_TRUNCATED;
    size_t head = PBX_IPC_HEADER_BYTES + PBX_IPC_BEGIN_FIXED_BYTES;
    if (in_len < head || in_len > PBX_IPC_FRAME_BYTES_MAX) {
        return PBX_PEER_BIND_MALFORMED;
    }
    const uint8_t *body = in + PBX_IPC_HEADER_BYTES;
    size_t texts = (size_t)pbx_le_get16(body + LAUNCH_BEGIN_ENTRY_LEN) +
                   pbx_le_get16(body + LAUNCH_BEGIN_LABEL_LEN);
    if (head + texts != in_len) {
        *err = head + texts > in_len ? PBX_E_IPC_TRUNCATED : PBX_E_IPC_TRAILING;
        return PBX_PEER_BIND_MALFORMED;
    }
    pbx_peer_launch_bind_result r =
        launch_bind_entry(b, in, in_len, out, out_cap, out_len);
    uint8_t *ob = out + PBX_IPC_HEADER_BYTES;
    /* A claim of another job is reported before the others: it says
     * most about who is asking; then session and realm, entry, target. */
    if (r != PBX_PEER_BIND_MALFORMED) {
        pbx_peer_launch_bind_result c = launch_bind_job(b, ob);
        c = c == PBX_PEER_BIND_OK ? launch_bind_context(b, ob) : c;
        r = c != PBX_PEER_BIND_OK ? c : r;
    }
    if (r == PBX_PEER_BIND_OK) {
        r = launch_bind_target(b, ob);
    }
    if (r != PBX_PEER_BIND_OK) {
        *err = r == PBX_PEER_BIND_MALFORMED ? PBX_E_IPC_NO_SPACE : PBX_OK;
        return r;
    }
    pbx_ipc_frame f;
    *err = pbx_ipc_frame_decode(out, *out_len, 0, &f);
    if (*err == PBX_OK) {
        *err = pbx_ipc_begin_decode(&f, rec);
    }
    return *err == PBX_OK ? PBX_PEER_BIND_OK : PBX_PEER_BIND_MALFORMED;
}
