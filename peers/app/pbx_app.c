/*
 * pbx_app.c: the app library (pbx_app.h): the runtime directory, the
 * call layer on a launchd connection (factored out of pbx-client), and a
 * whole runtime-reply request over a job's launchd connection.
 */
#include "peers/app/pbx_app.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "peers/lib/pbx_peer.h"
#include "sha2/pbx_sha2.h"

/* The value of environment variable name, or NULL when it is unset or
 * empty. */
static const char *pbx_app_env(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

int pbx_app_dir(const char *flag, char *out, size_t cap)
{
    const char *dir = flag != NULL && flag[0] != '\0' ? flag : NULL;
    const char *xdg = pbx_app_env("XDG_RUNTIME_DIR");
    int n = 0;
    if (dir == NULL) {
        dir = pbx_app_env("PBX_DIR");
    }
    if (dir != NULL) {
        n = snprintf(out, cap, "%s", dir);
    } else if (xdg != NULL) {
        n = snprintf(out, cap, "%s/%s", xdg, PBX_APP_DIR_NAME);
    } else {
        n = snprintf(out, cap, "/tmp/%s-%lu", PBX_APP_DIR_NAME,
                     (unsigned long)getuid());
    }
    if (n < 0 || (size_t)n >= cap) {
        if (cap > 0U) {
            out[0] = '\0';
        }
        return PBX_APP_E_PATH;
    }
    return PBX_APP_OK;
}

int pbx_app_dir_path(const char *flag, const char *name, char *out, size_t cap)
{
    int rc = pbx_app_dir(flag, out, cap);
    if (rc != PBX_APP_OK || name == NULL || name[0] == '\0') {
        return rc;
    }
    size_t used = 0;
    while (used < cap && out[used] != '\0') {
        used++;
    }
    int n = snprintf(out + used, cap - used, "/%s", name);
    if (n < 0 || (size_t)n >= cap - used) {
        out[0] = '\0';
        return PBX_APP_E_PATH;
    }
    return PBX_APP_OK;
}

/* Bounds every wait loop; far beyond any real number of rounds. */
#define PBX_APP_ROUNDS_MAX 100000000U

/* BEGIN body offsets of the claims (docs/PROTOCOL.md, "BEGIN"). */
enum {
    PBX_APP_B_JOB_ID = 0,
    PBX_APP_B_TARGET_PID = 16,
    PBX_APP_B_JOB_GEN = 24,
    PBX_APP_B_TARGET_GEN = 32,
    PBX_APP_B_ENTRY_LEN = 52,
    PBX_APP_B_LABEL_LEN = 54
};

/* Logs one line under c->who, or nothing when who is NULL (the
 * high-level calls are silent: their status says what happened). */
static void pbx_app_log(const pbx_app_conn *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void pbx_app_log(const pbx_app_conn *c, const char *fmt, ...)
{
    if (c->who == NULL) {
        return;
    }
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    pbx_peer_log(c->who, "%s", line);
}

uint64_t pbx_app_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000U + (uint64_t)ts.tv_nsec;
}

void pbx_app_conn_init(pbx_app_conn *c, int fd, const char *who)
{
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->who = who;
}

uint32_t pbx_app_conn_next_seq(pbx_app_conn *c)
{
    c->seq = c->seq == UINT32_MAX ? 1U : c->seq + 1U;
    return c->seq;
}

bool pbx_app_conn_send(pbx_app_conn *c, size_t k, size_t n, int cap,
                       const char *what)
{
    pbx_app_call *call = &c->calls[k];
    pbx_peer_io_close_all(call->msg.fds, call->msg.nfds);
    call->msg.nfds = 0;
    call->done = false;
    call->seq = pbx_app_conn_next_seq(c);
    if (pbx_peer_io_send_seq(c->fd, c->buf, n, call->seq, cap) != 0) {
        pbx_app_log(c, "%s: send failed: %s", what, strerror(errno));
        call->seq = 0;
        return false;
    }
    return true;
}

/* Hands the message in c->in to the outstanding call whose seq it
 * echoes; a reply that matches no call is logged and its descriptors
 * closed. */
static void pbx_app_deliver(pbx_app_conn *c)
{
    uint32_t seq = pbx_peer_io_msg_seq(&c->in);
    for (size_t k = 0; k < PBX_APP_CALLS; k++) {
        pbx_app_call *call = &c->calls[k];
        if (call->seq != 0U && call->seq == seq && !call->done) {
            call->msg = c->in;
            if (c->in.err == PBX_OK && c->in.frame.body != NULL) {
                call->msg.frame.body =
                    call->msg.buf +
                    (c->in.frame.body - (const uint8_t *)c->in.buf);
            }
            call->done = true;
            return;
        }
    }
    pbx_app_log(c, "a reply with seq %u matches no call: dropped", seq);
    pbx_peer_io_close_all(c->in.fds, c->in.nfds);
}

/* Milliseconds left until deadline_ns (0: no deadline, -1 for poll), or 0
 * when it has passed. */
static int pbx_app_left_ms(uint64_t deadline_ns)
{
    if (deadline_ns == 0U) {
        return -1;
    }
    uint64_t now = pbx_app_now_ns();
    if (now >= deadline_ns) {
        return 0;
    }
    uint64_t ms = (deadline_ns - now + 999999U) / 1000000U;
    return ms > (uint64_t)INT_MAX ? INT_MAX : (int)ms;
}

int pbx_app_conn_wait(pbx_app_conn *c, size_t k, uint64_t deadline_ns)
{
    for (uint64_t i = 0; i < PBX_APP_ROUNDS_MAX && !c->calls[k].done; i++) {
        int ms = pbx_app_left_ms(deadline_ns);
        if (ms == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {c->fd, POLLIN, 0};
        int r = poll(&p, 1, ms);
        if (r <= 0) {
            if (r < 0 && errno != EINTR) {
                return -1;
            }
            continue;
        }
        r = pbx_peer_io_recv_frame(c->fd, &c->in);
        if (r != 0) {
            return r;
        }
        pbx_app_deliver(c);
    }
    if (!c->calls[k].done) {
        errno = ETIMEDOUT;
        return -1;
    }
    return 0;
}

const pbx_ipc_frame *pbx_app_conn_result(pbx_app_conn *c, size_t k,
                                         const char *what, uint32_t *status)
{
    pbx_peer_msg *m = &c->calls[k].msg;
    if (status != NULL) {
        *status = 0;
    }
    if (m->err != PBX_OK) {
        pbx_app_log(c, "%s: malformed reply: %s", what, pbx_err_text(m->err));
        return NULL;
    }
    if (m->frame.status != 0U) {
        pbx_app_log(c, "%s refused: %s (0x%04x)", what,
                    pbx_peer_status_text(m->frame.status), m->frame.status);
        if (status != NULL) {
            *status = m->frame.status;
        }
        pbx_peer_io_close_all(m->fds, m->nfds);
        return NULL;
    }
    return &m->frame;
}

void pbx_app_conn_no_reply(const pbx_app_conn *c, int r, const char *what)
{
    pbx_app_log(c, "%s: %s", what,
                r == 1 ? "the connection was closed" : strerror(errno));
}

const pbx_ipc_frame *pbx_app_conn_call(pbx_app_conn *c, size_t n, int cap,
                                       const char *what, uint32_t *status)
{
    if (status != NULL) {
        *status = 0;
    }
    if (!pbx_app_conn_send(c, PBX_APP_CALL_MAIN, n, cap, what)) {
        return NULL;
    }
    int r = pbx_app_conn_wait(c, PBX_APP_CALL_MAIN,
                              pbx_app_now_ns() + PBX_APP_CALL_MS * 1000000U);
    if (r != 0) {
        pbx_app_conn_no_reply(c, r, what);
        return NULL;
    }
    return pbx_app_conn_result(c, PBX_APP_CALL_MAIN, what, status);
}

/* Parses the pair in claim variable name; false with a message (unless
 * who is NULL) when it is set and malformed. */
static bool pbx_app_env_pair(const char *who, const char *name, uint64_t *a,
                             uint64_t *b)
{
    const char *v = getenv(name);
    if (v != NULL && !pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, a, b)) {
        if (who != NULL) {
            pbx_peer_log(who, "invalid %s '%s'", name, v);
        }
        return false;
    }
    return true;
}

/* As pbx_app_env_pair for a single number of at most max. */
static bool pbx_app_env_u64(const char *who, const char *name, uint64_t max,
                            uint64_t *out)
{
    const char *v = getenv(name);
    if (v != NULL && !pbx_peer_parse_u64(v, max, out)) {
        if (who != NULL) {
            pbx_peer_log(who, "invalid %s '%s'", name, v);
        }
        return false;
    }
    return true;
}

bool pbx_app_claims_env(pbx_app_claims *cl, const char *who)
{
    memset(cl, 0, sizeof(*cl));
    cl->session = 1;
    cl->entry = "";
    const char *entry = getenv("PBX_ENTRY");
    if (entry != NULL) {
        cl->entry = entry;
    }
    return pbx_app_env_u64(who, "PBX_SESSION", UINT64_MAX, &cl->session) &&
           pbx_app_env_u64(who, "PBX_REALM", UINT32_MAX, &cl->realm) &&
           pbx_app_env_pair(who, "PBX_JOB", &cl->job_id, &cl->job_gen) &&
           pbx_app_env_pair(who, "PBX_TARGET", &cl->pid, &cl->pgen);
}

/* Fills the BEGIN record. An unclaimed job, entry or target gets a
 * placeholder the encoder accepts; pbx_app_unclaim then writes the
 * unclaimed form over it. */
static bool pbx_app_begin_rec(const pbx_app_claims *cl,
                              const pbx_app_begin_args *a, pbx_ipc_begin *b)
{
    memset(b, 0, sizeof(*b));
    size_t sl = strlen(a->selector);
    size_t el = strlen(cl->entry);
    size_t ll = strlen(a->label);
    if (sl == 0U || sl > PBX_IPC_SELECTOR_LEN_BYTES_MAX ||
        el > PBX_IPC_ENTRY_LEN_BYTES_MAX || ll > PBX_IPC_LABEL_LEN_BYTES_MAX) {
        return false;
    }
    bool no_job = cl->job_id == 0U && cl->job_gen == 0U;
    b->ctx.session = cl->session;
    b->ctx.job_id = cl->job_id;
    b->ctx.job_gen = no_job ? 1U : (uint32_t)cl->job_gen;
    b->ctx.realm = (uint32_t)cl->realm;
    b->ctx.operation = (uint16_t)a->operation;
    b->ctx.object_class = (uint16_t)a->object_class;
    b->ctx.lifetime = (uint8_t)a->lifetime;
    b->ctx.mode = (uint8_t)a->mode;
    b->ctx.urgency = (uint8_t)a->urgency;
    b->ctx.entry.len = (uint16_t)(el == 0U ? 1U : el);
    memcpy(b->ctx.entry.bytes, el == 0U ? "x" : cl->entry, b->ctx.entry.len);
    b->label.len = (uint16_t)ll;
    memcpy(b->label.bytes, a->label, ll);
    if (a->mode == PBX_IPC_MODE_INSTALL) {
        bool no_target = cl->pid == 0U && cl->pgen == 0U;
        b->target.process_id = cl->pid;
        b->target.process_gen = no_target ? 1U : (uint32_t)cl->pgen;
        b->target.slot = (uint32_t)cl->slot;
    }
    b->selector_len = (uint32_t)sl;
    b->invocation_id = a->invocation;
    return pbx_sha2_digest((const uint8_t *)a->selector, sl,
                           b->selector_digest) == PBX_OK;
}

/*
 * Rewrites the encoded BEGIN f[0..*n) into its unclaimed form where cl
 * claims nothing: job id and generation zero, an empty entry (its
 * placeholder byte removed, the label moved up, the body length cut), an
 * install target's process id and generation zero. launchd fills these
 * in from the job its connection is bound to (docs/HOST.md). Returns
 * false when the frame is not the BEGIN pbx_app_begin_rec described.
 */
static bool pbx_app_unclaim(const pbx_app_claims *cl, uint32_t mode, uint8_t *f,
                            size_t *n)
{
    size_t fixed = PBX_IPC_HEADER_BYTES + PBX_IPC_BEGIN_FIXED_BYTES;
    if (*n < fixed) {
        return false;
    }
    uint8_t *b = f + PBX_IPC_HEADER_BYTES;
    size_t el = pbx_le_get16(b + PBX_APP_B_ENTRY_LEN);
    size_t ll = pbx_le_get16(b + PBX_APP_B_LABEL_LEN);
    if (fixed + el + ll != *n) {
        return false;
    }
    if (cl->job_id == 0U && cl->job_gen == 0U) {
        pbx_le_put64(b + PBX_APP_B_JOB_ID, 0U);
        pbx_le_put32(b + PBX_APP_B_JOB_GEN, 0U);
    }
    if (mode == PBX_IPC_MODE_INSTALL && cl->pid == 0U && cl->pgen == 0U) {
        pbx_le_put64(b + PBX_APP_B_TARGET_PID, 0U);
        pbx_le_put32(b + PBX_APP_B_TARGET_GEN, 0U);
    }
    if (cl->entry[0] == '\0') {
        uint8_t *text = b + PBX_IPC_BEGIN_FIXED_BYTES;
        memmove(text, text + el, ll);
        pbx_le_put16(b + PBX_APP_B_ENTRY_LEN, 0U);
        *n -= el;
        pbx_le_put32(f + 20, (uint32_t)(*n - PBX_IPC_HEADER_BYTES));
    }
    return true;
}

bool pbx_app_begin_encode(pbx_app_conn *c, const pbx_app_claims *cl,
                          const pbx_app_begin_args *a, size_t *n)
{
    static pbx_ipc_begin b;
    if (!pbx_app_begin_rec(cl, a, &b)) {
        pbx_app_log(c, "selector, entry or label length invalid");
        return false;
    }
    *n = 0;
    if (pbx_ipc_begin_encode(&b, c->buf, sizeof(c->buf), n) != PBX_OK ||
        !pbx_app_unclaim(cl, a->mode, c->buf, n)) {
        pbx_app_log(c, "BEGIN is not admissible (check op, class, "
                       "lifetime, mode and target)");
        return false;
    }
    return true;
}

bool pbx_app_selector_send(pbx_app_conn *c, pbx_ipc_id id, const char *selector,
                           uint32_t *status)
{
    size_t len = strlen(selector);
    for (size_t off = 0; off < len; off += PBX_IPC_SELECTOR_CHUNK_BYTES_MAX) {
        size_t n = len - off;
        n = n < PBX_IPC_SELECTOR_CHUNK_BYTES_MAX
                ? n
                : PBX_IPC_SELECTOR_CHUNK_BYTES_MAX;
        pbx_ipc_selector ch = {(uint32_t)off, (uint32_t)n,
                               (const uint8_t *)selector + off};
        size_t fl = 0;
        const pbx_ipc_frame *f = NULL;
        if (pbx_ipc_selector_encode(id, &ch, c->buf, sizeof(c->buf), &fl) !=
                PBX_OK ||
            (f = pbx_app_conn_call(c, fl, -1, "SELECTOR", status)) == NULL ||
            pbx_ipc_empty_decode(f, PBX_IPC_OP_SELECTOR | PBX_IPC_REPLY_BIT) !=
                PBX_OK) {
            return false;
        }
    }
    return true;
}

bool pbx_app_commit(pbx_app_conn *c, pbx_ipc_id id, uint32_t dest_slot,
                    int scope_fd, uint32_t *status)
{
    pbx_ipc_commit cm = {dest_slot};
    size_t n = 0;
    const pbx_ipc_frame *f = NULL;
    return pbx_ipc_commit_encode(id, &cm, c->buf, sizeof(c->buf), &n) ==
               PBX_OK &&
           (f = pbx_app_conn_call(c, n, scope_fd, "COMMIT", status)) != NULL &&
           pbx_ipc_empty_decode(f, PBX_IPC_OP_COMMIT | PBX_IPC_REPLY_BIT) ==
               PBX_OK;
}

bool pbx_app_cancel_send(pbx_app_conn *c, size_t k, pbx_ipc_id id,
                         uint64_t deadline_ns)
{
    pbx_ipc_cancel cn;
    memset(&cn, 0, sizeof(cn));
    cn.request = id;
    size_t n = 0;
    if (deadline_ns == 0U) {
        deadline_ns = pbx_app_now_ns() + PBX_APP_CALL_MS * 1000000U;
    }
    if (pbx_ipc_cancel_encode(&cn, c->buf, sizeof(c->buf), &n) != PBX_OK ||
        !pbx_app_conn_send(c, k, n, -1, "CANCEL")) {
        return false;
    }
    int r = pbx_app_conn_wait(c, k, deadline_ns);
    if (r != 0) {
        pbx_app_conn_no_reply(c, r, "CANCEL");
        return false;
    }
    const pbx_ipc_frame *f = pbx_app_conn_result(c, k, "CANCEL", NULL);
    return f != NULL && pbx_ipc_empty_decode(
                            f, PBX_IPC_OP_CANCEL | PBX_IPC_REPLY_BIT) == PBX_OK;
}

/* Reads slot PBX_APP_CALL_MAIN's answered DECISION of id into *d:
 * PBX_APP_WAIT_FINAL, _OTHER (another request's, logged), _FAILED, or -1
 * for PENDING. */
static int pbx_app_decided(pbx_app_conn *c, pbx_ipc_id id, pbx_ipc_decision *d)
{
    const pbx_ipc_frame *f =
        pbx_app_conn_result(c, PBX_APP_CALL_MAIN, "DECISION", NULL);
    pbx_peer_msg *m = &c->calls[PBX_APP_CALL_MAIN].msg;
    if (f == NULL || pbx_ipc_decision_reply_decode(f, d) != PBX_OK) {
        pbx_peer_io_close_all(m->fds, m->nfds);
        return PBX_APP_WAIT_FAILED;
    }
    if (f->request.index != id.index || f->request.gen != id.gen) {
        pbx_app_log(c, "the DECISION names request %u.%u, not %u.%u",
                    f->request.index, f->request.gen, id.index, id.gen);
        pbx_peer_io_close_all(m->fds, m->nfds);
        return PBX_APP_WAIT_OTHER;
    }
    return d->outcome == PBX_IPC_OUTCOME_PENDING ? -1 : PBX_APP_WAIT_FINAL;
}

/* Sleeps pause_us, but not past deadline_ns (0: none); returns false
 * when the deadline has passed. */
static bool pbx_app_pause(uint64_t pause_us, uint64_t deadline_ns)
{
    uint64_t ns = pause_us * 1000U;
    uint64_t now = pbx_app_now_ns();
    if (deadline_ns != 0U) {
        if (now >= deadline_ns) {
            return false;
        }
        ns = deadline_ns - now < ns ? deadline_ns - now : ns;
    }
    struct timespec ts = {(time_t)(ns / 1000000000U), (long)(ns % 1000000000U)};
    (void)nanosleep(&ts, NULL);
    return deadline_ns == 0U || pbx_app_now_ns() < deadline_ns;
}

int pbx_app_decision_wait(pbx_app_conn *c, pbx_ipc_id id, bool asked,
                          uint64_t deadline_ns, uint64_t pause_us,
                          pbx_ipc_decision *d)
{
    for (uint64_t i = 0; i < PBX_APP_ROUNDS_MAX; i++) {
        size_t n = 0;
        if (!asked) {
            c->decision_calls++;
            if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, c->buf,
                                     sizeof(c->buf), &n) != PBX_OK ||
                !pbx_app_conn_send(c, PBX_APP_CALL_MAIN, n, -1, "DECISION")) {
                return PBX_APP_WAIT_FAILED;
            }
        }
        asked = false;
        int r = pbx_app_conn_wait(c, PBX_APP_CALL_MAIN, deadline_ns);
        if (r < 0 && errno == ETIMEDOUT) {
            return PBX_APP_WAIT_EXPIRED;
        }
        if (r != 0) {
            pbx_app_conn_no_reply(c, r, "DECISION");
            return PBX_APP_WAIT_FAILED;
        }
        int state = pbx_app_decided(c, id, d);
        c->calls[PBX_APP_CALL_MAIN].seq = 0U;
        if (state >= 0) {
            return state;
        }
        if (!pbx_app_pause(pause_us, deadline_ns)) {
            return PBX_APP_WAIT_EXPIRED;
        }
    }
    return PBX_APP_WAIT_EXPIRED;
}
