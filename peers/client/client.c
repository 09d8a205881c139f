/*
 * client.c: pbx-client, a program asking powerboxd for authority through
 * launchd. It runs BEGIN, the SELECTOR chunks and COMMIT (transferring the
 * scope descriptor), then asks for the DECISION; it also sends CANCEL and
 * CONSUME. Output is key=value lines. See docs/HOST.md.
 *
 * --scope PATH takes one scope from vfsd's scope socket at PATH: vfsd
 * hands it over by SCM_RIGHTS, named by its socket inode, which is the
 * identity powerboxd checks vfsd's RESOLVE replies against (printed as
 * scope=). --scope-fd N uses a scope this process already holds.
 *
 *   pbx-client request [--control PATH | --control-fd N]
 *       (--scope PATH | --scope-fd N) --selector S --op OP --class CLASS
 *       --lifetime L [--mode install|runtime-reply] [--urgency U]
 *       [--job ID:GEN] [--session N] [--realm N] [--entry TEXT]
 *       [--label TEXT] [--target PID:GEN] [--slot N] [--wait-ms N]
 *       [--invocation N] [--verify-object ROOT]
 *       [--then consume [--repeat N] | --then hang-up | --then hold |
 *        --then cancel | --then cancel-session]
 *   pbx-client cancel [--control ...] (--request I:G | --job ID:GEN
 *       --session N)
 *   pbx-client consume [--control ...] --grant I:G
 *   pbx-client --help
 *
 * The connection: --control is the socket of `pbx-launchd serve
 * --control`, which relays every frame over launchd's broker connection:
 * powerboxd accepts BEGIN, in either mode, only there, and the broker then
 * owns the request. --public PATH and --public-fd N are the same option
 * under the name of the endpoint it used to be; pointed at powerboxd's own
 * public endpoint the BEGIN is refused. With none of them, pbx-client
 * uses the descriptor in PBX_LAUNCHD_FD: the job connection launchd hands
 * a program it launched.
 *
 * Claims: --job, --entry, --target, --session and --realm are what the
 * BEGIN claims; they default to PBX_JOB, PBX_ENTRY, PBX_TARGET,
 * PBX_SESSION and PBX_REALM (set by launchd for a launched job), else to
 * zero or empty (session 1), which launchd fills in from the job the
 * connection is bound to (and refuses on an unbound connection).
 *
 * Calls: every call carries its own nonzero seq and a reply is matched to
 * its call by seq, so a CANCEL can be outstanding while the DECISION is
 * held. The DECISION is asked once and the client waits for it: launchd
 * answers it when it is final. An older launchd answers PENDING at once;
 * the client then asks again after a short pause, so it works with both.
 * --wait-ms N (0, the default: no limit) bounds that wait: when it passes
 * the client sends the exact CANCEL of its request, prints wait=expired
 * and cancel=accepted or cancel=refused, then waits at most 10 s more for
 * the decision and prints it as usual (outcome=pending and exit 1 when
 * none came). Every other call waits at most 30 s for its reply.
 *
 * --verify-object ROOT: after an APPROVED runtime-reply decision the
 * client asks the alias (vfsd's object connection) OBJ_STAT and compares
 * its device and inode with stat(ROOT/selector) (lstat for a
 * directory-entry request): object=verified, or object=mismatch (exit 1).
 *
 * Modes: `request --then consume` runs a whole one-shot lifecycle on one
 * connection (under --repeat a BEGIN answered BUSY is sent again after a
 * backoff, for at most 10 s, counted as busy_retries=); with `--repeat N`
 * it runs N of them back to back and prints
 * only latency statistics (docs/BENCH.md) and mismatches=M: the decisions
 * that named another request than the one begun, plus (with
 * --verify-object) the objects that did not verify; M nonzero exits 1.
 * `--then hang-up` exits right after COMMIT without asking for the
 * decision, as a program that dies would: launchd then cancels the
 * request it relayed. `--then hold` waits after COMMIT for a line on
 * standard input (or its end) before asking for the decision; `--then
 * cancel` waits for one such line, sends the exact CANCEL of the request
 * on the same connection (cancel=accepted or cancel=refused), waits for
 * another, then asks for the decision; `--then cancel-session` does the
 * same with a generation-zero CANCEL naming the request's job and session
 * instead of the request. --invocation N names the launchd invocation the
 * BEGIN is made within (required with --lifetime invocation; optional for
 * one-shot). A DENIED decision prints its reason (reason=).
 *
 * Exit status: 0 approved or accepted (and --help), 3 denied, cancelled
 * or not found, 1 a protocol or transport failure, a mismatch or an
 * object that does not verify, 2 a usage error.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"
#include "sha2/pbx_sha2.h"

/* How long one call other than DECISION may stay unanswered: longer than
 * launchd's own bound on a relayed call (--call-ms, 10 s by default),
 * after which launchd answers with an error itself. */
#define CLIENT_CALL_MS ((uint64_t)30000U)
/* After --wait-ms passed: the bound on the CANCEL and the decision. Also
 * the bound on a scope hand-out, an OBJ_STAT and the alias's revocation
 * when --wait-ms does not give one. */
#define CLIENT_GRACE_MS ((uint64_t)10000U)
/* Bounds every wait loop; far beyond any real number of rounds. */
#define CLIENT_ROUNDS_MAX 100000000U

/* The call slots: the request's own calls, and a CANCEL sent while the
 * DECISION is still outstanding. */
enum { CLIENT_MAIN = 0, CLIENT_CANCEL = 1, CLIENT_CALLS = 2 };

/* BEGIN body offsets of the claims (docs/PROTOCOL.md, "BEGIN"). */
enum {
    CLIENT_B_JOB_ID = 0,
    CLIENT_B_TARGET_PID = 16,
    CLIENT_B_JOB_GEN = 24,
    CLIENT_B_TARGET_GEN = 32,
    CLIENT_B_ENTRY_LEN = 52,
    CLIENT_B_LABEL_LEN = 54
};

/* Everything the command line (and the environment) said. */
typedef struct client_opts {
    int public_fd;
    int scope_fd;
    /* The identity vfsd named the scope by (--scope PATH), else 0. */
    uint64_t scope_id;
    const char *selector;
    /* --wait-ms: the bound on the DECISION wait (0: none). */
    uint64_t wait_ms;
    uint64_t session;
    uint64_t realm;
    /* The job claim (0:0: none, launchd fills it in). */
    uint64_t job_id;
    uint64_t job_gen;
    /* The install target claim (0:0: none, launchd fills it in). */
    uint64_t pid;
    uint64_t pgen;
    uint64_t slot;
    /* --invocation N: the BEGIN's invocation id (0: none). */
    uint64_t invocation;
    uint64_t a;
    uint64_t b;
    uint32_t op;
    uint32_t cls;
    uint32_t lifetime;
    uint32_t mode;
    uint32_t urgency;
    /* The program entry claim ("": none, launchd fills it in). */
    const char *entry;
    const char *label;
    /* --verify-object ROOT, or NULL. */
    const char *verify_root;
    bool have_pair;
    /* --then consume: after APPROVED, consume the grant on the same
     * connection (the caller that began a request owns it). */
    bool then_consume;
    /* --then hang-up: exit after COMMIT without asking for the decision. */
    bool then_hangup;
    /* --then hold: after COMMIT, wait for a line on stdin, then DECISION. */
    bool then_hold;
    /* --then cancel: after COMMIT, wait for a line on stdin, CANCEL the
     * request, wait for another line, then DECISION. */
    bool then_cancel;
    /* --then cancel-session: as --then cancel, but the CANCEL names the
     * request's job and session (generation zero), not the request. */
    bool then_cancel_session;
    /* --repeat N: N whole lifecycles on the one connection (0: one, as
     * a plain request, with its key=value report). */
    uint64_t repeat;
} client_opts;

/* One call: its seq (0: never sent), whether its reply came, the reply. */
typedef struct client_slot {
    uint32_t seq;
    bool done;
    pbx_peer_msg msg;
} client_slot;

static client_slot g_calls[CLIENT_CALLS];
/* Every received message lands here first, then goes to its call. */
static pbx_peer_msg g_in;
static uint8_t g_buf[PBX_IPC_FRAME_BYTES_MAX];
/* The last seq given to a call (the next is one more, never 0). */
static uint32_t g_seq;
/* In --repeat mode the per-request key=value lines are not printed. */
static bool g_quiet;
/* DECISION calls made so far (--repeat reports them per lifecycle). */
static uint64_t g_decision_calls;
/* --repeat: decisions naming another request + objects not verified. */
static uint64_t g_mismatches;
/* --repeat: BEGINs answered with retryable backpressure and sent again. */
static uint64_t g_busy_retries;

/* How long --repeat keeps retrying one BEGIN answered BUSY, in total. */
#define CLIENT_BUSY_MS_MAX 10000U
/* The grant of the last APPROVED decision, for --then consume. */
static pbx_ipc_id g_grant;
/* The runtime-reply alias kept for --then consume, or -1. */
static int g_alias = -1;

/* Monotonic nanoseconds. */
static uint64_t client_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000U + (uint64_t)ts.tv_nsec;
}

/* The next call seq: nonzero, and distinct from every call outstanding. */
static uint32_t client_next_seq(void)
{
    g_seq = g_seq == UINT32_MAX ? 1U : g_seq + 1U;
    return g_seq;
}

/* Sends the encoded call g_buf[0..n) (with cap unless negative) as call
 * slot k under a fresh seq. Whatever the slot's last reply still held is
 * closed first. Returns false with a message. */
static bool client_send(int fd, size_t k, size_t n, int cap, const char *what)
{
    client_slot *c = &g_calls[k];
    pbx_peer_io_close_all(c->msg.fds, c->msg.nfds);
    c->msg.nfds = 0;
    c->done = false;
    c->seq = client_next_seq();
    if (pbx_peer_io_send_seq(fd, g_buf, n, c->seq, cap) != 0) {
        pbx_peer_log("pbx-client", "%s: send failed: %s", what,
                     strerror(errno));
        c->seq = 0;
        return false;
    }
    return true;
}

/* Hands the message in g_in to the outstanding call whose seq it echoes;
 * a reply that matches no call is logged and its descriptors closed. */
static void client_deliver(void)
{
    uint32_t seq = pbx_peer_io_msg_seq(&g_in);
    for (size_t k = 0; k < CLIENT_CALLS; k++) {
        client_slot *c = &g_calls[k];
        if (c->seq != 0U && c->seq == seq && !c->done) {
            c->msg = g_in;
            if (g_in.err == PBX_OK && g_in.frame.body != NULL) {
                c->msg.frame.body =
                    c->msg.buf + (g_in.frame.body - (const uint8_t *)g_in.buf);
            }
            c->done = true;
            return;
        }
    }
    pbx_peer_log("pbx-client", "a reply with seq %u matches no call: dropped",
                 seq);
    pbx_peer_io_close_all(g_in.fds, g_in.nfds);
}

/* Milliseconds left until deadline_ns (0: no deadline, -1 for poll), or 0
 * when it has passed. */
static int client_left_ms(uint64_t deadline_ns)
{
    if (deadline_ns == 0U) {
        return -1;
    }
    uint64_t now = client_now_ns();
    if (now >= deadline_ns) {
        return 0;
    }
    uint64_t ms = (deadline_ns - now + 999999U) / 1000000U;
    return ms > (uint64_t)INT_MAX ? INT_MAX : (int)ms;
}

/* Receives replies on fd, each to its own call, until call k has its
 * reply or deadline_ns (0: none) passes. Returns 0 when it has, 1 when the
 * connection was closed, -1 with errno set (ETIMEDOUT at the deadline). */
static int client_wait(int fd, size_t k, uint64_t deadline_ns)
{
    for (uint64_t i = 0; i < CLIENT_ROUNDS_MAX && !g_calls[k].done; i++) {
        int ms = client_left_ms(deadline_ns);
        if (ms == 0) {
            errno = ETIMEDOUT;
            return -1;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, ms);
        if (r <= 0) {
            if (r < 0 && errno != EINTR) {
                return -1;
            }
            continue;
        }
        r = pbx_peer_io_recv_frame(fd, &g_in);
        if (r != 0) {
            return r;
        }
        client_deliver();
    }
    if (!g_calls[k].done) {
        errno = ETIMEDOUT;
        return -1;
    }
    return 0;
}

/* The answered call k: its frame when it decoded with status zero, else
 * NULL with a message (the reply's descriptors closed). */
static const pbx_ipc_frame *client_result(size_t k, const char *what)
{
    pbx_peer_msg *m = &g_calls[k].msg;
    if (m->err != PBX_OK) {
        pbx_peer_log("pbx-client", "%s: malformed reply: %s", what,
                     pbx_err_text(m->err));
        return NULL;
    }
    if (m->frame.status != 0U) {
        pbx_peer_log("pbx-client", "%s refused: %s (0x%04x)", what,
                     pbx_peer_status_text(m->frame.status), m->frame.status);
        pbx_peer_io_close_all(m->fds, m->nfds);
        return NULL;
    }
    return &m->frame;
}

/* Logs why a wait for a reply ended without one. */
static void client_no_reply(int r, const char *what)
{
    pbx_peer_log("pbx-client", "%s: %s", what,
                 r == 1 ? "the connection was closed" : strerror(errno));
}

/* One call on slot CLIENT_MAIN: sends g_buf[0..n), waits at most
 * CLIENT_CALL_MS for its reply; returns it or NULL with a message. */
static const pbx_ipc_frame *client_call(int fd, size_t n, int cap,
                                        const char *what)
{
    if (!client_send(fd, CLIENT_MAIN, n, cap, what)) {
        return NULL;
    }
    int r = client_wait(fd, CLIENT_MAIN,
                        client_now_ns() + CLIENT_CALL_MS * 1000000U);
    if (r != 0) {
        client_no_reply(r, what);
        return NULL;
    }
    return client_result(CLIENT_MAIN, what);
}

/* Fills the BEGIN record from the options. An unclaimed job, entry or
 * target gets a placeholder the encoder accepts; client_unclaim then
 * writes the unclaimed form over it. */
static bool client_begin_rec(const client_opts *o, pbx_ipc_begin *b)
{
    memset(b, 0, sizeof(*b));
    size_t sl = strlen(o->selector);
    size_t el = strlen(o->entry);
    size_t ll = strlen(o->label);
    if (sl == 0U || sl > PBX_IPC_SELECTOR_LEN_BYTES_MAX ||
        el > PBX_IPC_ENTRY_LEN_BYTES_MAX || ll > PBX_IPC_LABEL_LEN_BYTES_MAX) {
        pbx_peer_log("pbx-client", "selector, entry or label length invalid");
        return false;
    }
    bool no_job = o->job_id == 0U && o->job_gen == 0U;
    b->ctx.session = o->session;
    b->ctx.job_id = o->job_id;
    b->ctx.job_gen = no_job ? 1U : (uint32_t)o->job_gen;
    b->ctx.realm = (uint32_t)o->realm;
    b->ctx.operation = (uint16_t)o->op;
    b->ctx.object_class = (uint16_t)o->cls;
    b->ctx.lifetime = (uint8_t)o->lifetime;
    b->ctx.mode = (uint8_t)o->mode;
    b->ctx.urgency = (uint8_t)o->urgency;
    b->ctx.entry.len = (uint16_t)(el == 0U ? 1U : el);
    memcpy(b->ctx.entry.bytes, el == 0U ? "x" : o->entry, b->ctx.entry.len);
    b->label.len = (uint16_t)ll;
    memcpy(b->label.bytes, o->label, ll);
    if (o->mode == PBX_IPC_MODE_INSTALL) {
        bool no_target = o->pid == 0U && o->pgen == 0U;
        b->target.process_id = o->pid;
        b->target.process_gen = no_target ? 1U : (uint32_t)o->pgen;
        b->target.slot = (uint32_t)o->slot;
    }
    b->selector_len = (uint32_t)sl;
    b->invocation_id = o->invocation;
    return pbx_sha2_digest((const uint8_t *)o->selector, sl,
                           b->selector_digest) == PBX_OK;
}

/*
 * Rewrites the encoded BEGIN f[0..*n) into its unclaimed form where the
 * options claim nothing: job id and generation zero, an empty entry (its
 * placeholder byte removed, the label moved up, the body length cut), an
 * install target's process id and generation zero. launchd fills these
 * in from the job its connection is bound to (docs/HOST.md). Returns
 * false when the frame is not the BEGIN client_begin_rec described.
 */
static bool client_unclaim(const client_opts *o, uint8_t *f, size_t *n)
{
    size_t fixed = PBX_IPC_HEADER_BYTES + PBX_IPC_BEGIN_FIXED_BYTES;
    if (*n < fixed) {
        return false;
    }
    uint8_t *b = f + PBX_IPC_HEADER_BYTES;
    size_t el = pbx_le_get16(b + CLIENT_B_ENTRY_LEN);
    size_t ll = pbx_le_get16(b + CLIENT_B_LABEL_LEN);
    if (fixed + el + ll != *n) {
        return false;
    }
    if (o->job_id == 0U && o->job_gen == 0U) {
        pbx_le_put64(b + CLIENT_B_JOB_ID, 0U);
        pbx_le_put32(b + CLIENT_B_JOB_GEN, 0U);
    }
    if (o->mode == PBX_IPC_MODE_INSTALL && o->pid == 0U && o->pgen == 0U) {
        pbx_le_put64(b + CLIENT_B_TARGET_PID, 0U);
        pbx_le_put32(b + CLIENT_B_TARGET_GEN, 0U);
    }
    if (o->entry[0] == '\0') {
        uint8_t *text = b + PBX_IPC_BEGIN_FIXED_BYTES;
        memmove(text, text + el, ll);
        pbx_le_put16(b + CLIENT_B_ENTRY_LEN, 0U);
        *n -= el;
        pbx_le_put32(f + 20, (uint32_t)(*n - PBX_IPC_HEADER_BYTES));
    }
    return true;
}

/* Streams the selector in chunks at exact offsets. */
static bool client_selector(int fd, pbx_ipc_id id, const char *sel)
{
    size_t len = strlen(sel);
    for (size_t off = 0; off < len; off += PBX_IPC_SELECTOR_CHUNK_BYTES_MAX) {
        size_t n = len - off;
        n = n < PBX_IPC_SELECTOR_CHUNK_BYTES_MAX
                ? n
                : PBX_IPC_SELECTOR_CHUNK_BYTES_MAX;
        pbx_ipc_selector c = {(uint32_t)off, (uint32_t)n,
                              (const uint8_t *)sel + off};
        size_t fl = 0;
        const pbx_ipc_frame *f = NULL;
        if (pbx_ipc_selector_encode(id, &c, g_buf, sizeof(g_buf), &fl) !=
                PBX_OK ||
            (f = client_call(fd, fl, -1, "SELECTOR")) == NULL ||
            pbx_ipc_empty_decode(f, PBX_IPC_OP_SELECTOR | PBX_IPC_REPLY_BIT) !=
                PBX_OK) {
            return false;
        }
    }
    return true;
}

/* The name of a DENIED decision's reason (pbx_ipc_reason). */
static const char *client_reason_name(uint16_t reason)
{
    static const char *const names[] = {
        "none",         "policy",      "user",   "prompt-timeout",
        "peer-timeout", "peer-failed", "resolve"};
    return reason < PBX_ARRAY_LEN(names) ? names[reason] : "?";
}

/* Waits at most CLIENT_GRACE_MS for the OBJ_STAT reply of seq on alias
 * into *st; returns false with a message. */
static bool client_obj_stat(int alias, pbx_peer_vfs_stat *st)
{
    uint32_t seq = client_next_seq();
    size_t n = 0;
    if (pbx_peer_vfs_obj_stat_encode(seq, g_buf, sizeof(g_buf), &n) != PBX_OK ||
        pbx_peer_io_send(alias, g_buf, n, -1) != 0) {
        pbx_peer_log("pbx-client", "OBJ_STAT: send failed: %s",
                     strerror(errno));
        return false;
    }
    struct pollfd p = {alias, POLLIN, 0};
    int r = poll(&p, 1, (int)CLIENT_GRACE_MS);
    if (r != 1 || (r = pbx_peer_io_recv_frame(alias, &g_in)) != 0) {
        pbx_peer_log("pbx-client", "OBJ_STAT: %s",
                     r == 1 ? "the object's connection ended" : "no reply");
        return false;
    }
    /* The object's ops are not pbx_ipc ops: the ipc decode failed and
     * closed what came with it; the raw bytes are checked here. */
    uint32_t status = 0;
    pbx_err e = pbx_peer_vfs_obj_stat_reply_decode(g_in.buf, g_in.len,
                                                   g_in.nfds, seq, st, &status);
    if (e != PBX_OK || status != 0U) {
        pbx_peer_log("pbx-client", "OBJ_STAT: %s",
                     e != PBX_OK ? pbx_err_text(e)
                                 : pbx_peer_status_text(status));
        return false;
    }
    return true;
}

/* --verify-object: does the object alias (or -1: none came) name the
 * file ROOT/selector? Prints object=verified or object=mismatch. */
static bool client_verify(int alias, const client_opts *o)
{
    pbx_peer_vfs_stat st = {0U, 0U, 0U};
    char path[PBX_IPC_SELECTOR_LEN_BYTES_MAX + 1024U];
    struct stat sb;
    int w = snprintf(path, sizeof(path), "%s/%s", o->verify_root, o->selector);
    bool ok = alias >= 0 && client_obj_stat(alias, &st);
    if (ok &&
        (w < 0 || (size_t)w >= sizeof(path) ||
         (o->cls == PBX_IPC_CLASS_DIRECTORY_ENTRY ? lstat(path, &sb)
                                                  : stat(path, &sb)) != 0)) {
        pbx_peer_log("pbx-client", "--verify-object: cannot stat '%s': %s",
                     path, strerror(errno));
        ok = false;
    }
    ok = ok && st.dev == (uint64_t)sb.st_dev && st.ino == (uint64_t)sb.st_ino;
    if (alias < 0) {
        pbx_peer_log("pbx-client", "--verify-object: no object came");
    } else if (!ok) {
        pbx_peer_log("pbx-client",
                     "--verify-object: the object names "
                     "%llu:%llu, not '%s'",
                     (unsigned long long)st.dev, (unsigned long long)st.ino,
                     path);
    }
    if (!g_quiet) {
        printf("object=%s\n", ok ? "verified" : "mismatch");
    }
    return ok;
}

/* An APPROVED decision: prints its grant, keeps or verifies the alias.
 * Returns the exit status so far. */
static int client_approved(const pbx_ipc_decision *d, const client_opts *o)
{
    pbx_peer_msg *m = &g_calls[CLIENT_MAIN].msg;
    if (!g_quiet) {
        printf("mode=%s\ngrant=%u.%u\nslot=%u\n",
               pbx_peer_name_of(PBX_PEER_NAMES_MODE, d->mode), d->grant.index,
               d->grant.gen, d->installed_slot);
    }
    g_grant = d->grant;
    int alias = m->nfds == 1U ? m->fds[0] : -1;
    if (alias >= 0) {
        m->fds[0] = -1;
    }
    if (alias >= 0 && !g_quiet) {
        printf("alias_inode=%llu\n",
               (unsigned long long)pbx_peer_io_inode(alias));
    }
    pbx_peer_io_close_all(m->fds, m->nfds);
    int rc = 0;
    if (o->verify_root != NULL && !client_verify(alias, o)) {
        g_mismatches++;
        /* --repeat counts it and goes on; one request fails. */
        rc = g_quiet ? 0 : 1;
    }
    if (alias >= 0 && !g_quiet) {
        /* Kept only to watch its revocation after --then consume. */
        g_alias = alias;
    } else if (alias >= 0) {
        (void)close(alias);
    }
    return rc;
}

/* Prints a DECISION and maps it to the exit status. */
static int client_report(const pbx_ipc_decision *d, pbx_ipc_id id,
                         const client_opts *o)
{
    if (!g_quiet || d->outcome != PBX_IPC_OUTCOME_APPROVED) {
        printf("request=%u.%u\noutcome=%s\n", id.index, id.gen,
               pbx_peer_name_of(PBX_PEER_NAMES_OUTCOME, d->outcome));
    }
    if (d->outcome == PBX_IPC_OUTCOME_DENIED) {
        printf("reason=%s\n", client_reason_name(d->reason));
    }
    int rc = 3;
    if (d->outcome != PBX_IPC_OUTCOME_APPROVED) {
        pbx_ipc_id zero = {0U, 0U};
        g_grant = zero;
        pbx_peer_io_close_all(g_calls[CLIENT_MAIN].msg.fds,
                              g_calls[CLIENT_MAIN].msg.nfds);
    } else {
        rc = client_approved(d, o);
    }
    if (!g_quiet) {
        /* One request: how many DECISION calls it took (1 when launchd
         * held the call until the decision was final: no polling). */
        printf("decision_calls=%llu\n", (unsigned long long)g_decision_calls);
    }
    return rc;
}

/* After consumption, waits (bounded) for the alias to be revoked: vfsd's
 * RETIRE cuts the object's connection, so the alias reads end of file.
 * Prints alias=revoked or alias=live; returns the exit status. */
static int client_alias_revoked(uint64_t wait_ms)
{
    uint8_t b[64];
    struct pollfd p = {g_alias, POLLIN, 0};
    uint64_t ms = wait_ms == 0U ? CLIENT_GRACE_MS : wait_ms;
    int r = poll(&p, 1, (int)(ms > 60000U ? 60000U : ms));
    bool gone = r == 1 && recv(g_alias, b, sizeof(b), MSG_DONTWAIT) == 0;
    (void)close(g_alias);
    g_alias = -1;
    printf("alias=%s\n", gone ? "revoked" : "live");
    return gone ? 0 : 1;
}

/* The pause before asking again after a PENDING reply (an older launchd's
 * answer), in microseconds. A single request asks every 50 ms. --repeat
 * waits 20 us, doubling up to 1 ms, so a pending decision costs at most
 * about 1 ms more. */
static uint64_t client_backoff_us(uint64_t prev_us)
{
    if (!g_quiet) {
        return 50000U;
    }
    return prev_us == 0U ? 20U : (prev_us >= 500U ? 1000U : prev_us * 2U);
}

/* Sleeps pause_us, but not past deadline_ns (0: none); returns false
 * when the deadline has passed. */
static bool client_pause(uint64_t pause_us, uint64_t deadline_ns)
{
    uint64_t ns = pause_us * 1000U;
    uint64_t now = client_now_ns();
    if (deadline_ns != 0U) {
        if (now >= deadline_ns) {
            return false;
        }
        ns = deadline_ns - now < ns ? deadline_ns - now : ns;
    }
    struct timespec ts = {(time_t)(ns / 1000000000U), (long)(ns % 1000000000U)};
    (void)nanosleep(&ts, NULL);
    return deadline_ns == 0U || client_now_ns() < deadline_ns;
}

/* Sends the DECISION call for id on slot CLIENT_MAIN. */
static bool client_ask(int fd, pbx_ipc_id id)
{
    size_t n = 0;
    g_decision_calls++;
    return pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, g_buf, sizeof(g_buf),
                                &n) == PBX_OK &&
           client_send(fd, CLIENT_MAIN, n, -1, "DECISION");
}

/* What an answered DECISION said. */
enum {
    CLIENT_D_FINAL = 0,
    CLIENT_D_PENDING = 1,
    CLIENT_D_FAILED = 2,
    CLIENT_D_OTHER = 3
};

/* Reads the answered DECISION of id into *d. A decision that names
 * another request than id is CLIENT_D_OTHER (logged, counted). */
static int client_decided(pbx_ipc_id id, pbx_ipc_decision *d)
{
    const pbx_ipc_frame *f = client_result(CLIENT_MAIN, "DECISION");
    pbx_peer_msg *m = &g_calls[CLIENT_MAIN].msg;
    if (f == NULL || pbx_ipc_decision_reply_decode(f, d) != PBX_OK) {
        pbx_peer_io_close_all(m->fds, m->nfds);
        return CLIENT_D_FAILED;
    }
    if (f->request.index != id.index || f->request.gen != id.gen) {
        pbx_peer_log("pbx-client",
                     "the DECISION names request %u.%u, not "
                     "%u.%u",
                     f->request.index, f->request.gen, id.index, id.gen);
        pbx_peer_io_close_all(m->fds, m->nfds);
        g_mismatches++;
        return CLIENT_D_OTHER;
    }
    return d->outcome == PBX_IPC_OUTCOME_PENDING ? CLIENT_D_PENDING
                                                 : CLIENT_D_FINAL;
}

/* Maps a non-final DECISION state to the exit status: another request's
 * decision fails one request and is only counted under --repeat. */
static int client_unfinished(int state)
{
    return state == CLIENT_D_OTHER && g_quiet ? 0 : 1;
}

/*
 * Waits for the DECISION of id until deadline_ns (0: none). asked says a
 * DECISION call is outstanding already; otherwise one is sent. A PENDING
 * reply (an older launchd) is asked again after a pause. Returns the
 * exit status, or -1 when the deadline passed first.
 */
static int client_await_decision(int fd, pbx_ipc_id id, const client_opts *o,
                                 bool asked, uint64_t deadline_ns)
{
    uint64_t pause_us = 0;
    for (uint64_t i = 0; i < CLIENT_ROUNDS_MAX; i++) {
        if (!asked && !client_ask(fd, id)) {
            return 1;
        }
        asked = false;
        int r = client_wait(fd, CLIENT_MAIN, deadline_ns);
        if (r < 0 && errno == ETIMEDOUT) {
            return -1;
        }
        if (r != 0) {
            client_no_reply(r, "DECISION");
            return 1;
        }
        pbx_ipc_decision d;
        int state = client_decided(id, &d);
        g_calls[CLIENT_MAIN].seq = 0U;
        if (state == CLIENT_D_FINAL) {
            return client_report(&d, id, o);
        }
        if (state != CLIENT_D_PENDING) {
            return client_unfinished(state);
        }
        pause_us = client_backoff_us(pause_us);
        if (!client_pause(pause_us, deadline_ns)) {
            return -1;
        }
    }
    return -1;
}

/* The exact CANCEL of request id, encoded into g_buf; false when it does
 * not encode. */
static bool client_cancel_frame(pbx_ipc_id id, size_t *n)
{
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = id;
    return pbx_ipc_cancel_encode(&c, g_buf, sizeof(g_buf), n) == PBX_OK;
}

/* --wait-ms passed: the exact CANCEL (its own call, while the DECISION
 * may still be outstanding), then at most CLIENT_GRACE_MS more for the
 * decision, printed as usual. */
static int client_expired(int fd, pbx_ipc_id id, const client_opts *o)
{
    /* A DECISION outstanding (or answered while the CANCEL was) keeps its
     * seq; one already read has none. */
    bool asked = g_calls[CLIENT_MAIN].seq != 0U;
    uint64_t end = client_now_ns() + CLIENT_GRACE_MS * 1000000U;
    printf("wait=expired\n");
    (void)fflush(stdout);
    size_t n = 0;
    bool ok = client_cancel_frame(id, &n) &&
              client_send(fd, CLIENT_CANCEL, n, -1, "CANCEL");
    int r = ok ? client_wait(fd, CLIENT_CANCEL, end) : -1;
    if (ok && r != 0) {
        client_no_reply(r, "CANCEL");
    }
    const pbx_ipc_frame *f =
        ok && r == 0 ? client_result(CLIENT_CANCEL, "CANCEL") : NULL;
    ok = f != NULL && pbx_ipc_empty_decode(f, PBX_IPC_OP_CANCEL |
                                                  PBX_IPC_REPLY_BIT) == PBX_OK;
    printf("cancel=%s\n", ok ? "accepted" : "refused");
    (void)fflush(stdout);
    int rc = client_await_decision(fd, id, o, asked, end);
    if (rc < 0) {
        printf("outcome=pending\n");
        pbx_peer_log("pbx-client",
                     "no decision within %llu ms of the wait's "
                     "expiry",
                     (unsigned long long)CLIENT_GRACE_MS);
        return 1;
    }
    return rc;
}

/* Asks for the DECISION of id once and waits for it (--wait-ms bounds the
 * wait; on expiry the request is cancelled). */
static int client_decision(int fd, pbx_ipc_id id, const client_opts *o)
{
    uint64_t deadline =
        o->wait_ms == 0U ? 0U : client_now_ns() + o->wait_ms * 1000000U;
    int rc = client_await_decision(fd, id, o, false, deadline);
    return rc >= 0 ? rc : client_expired(fd, id, o);
}

/* Waits for one line on standard input, or its end (--then hold and
 * --then cancel: the caller says when to go on). */
static void client_wait_line(void)
{
    (void)fflush(stdout);
    char ch = 0;
    for (uint64_t i = 0; i < CLIENT_ROUNDS_MAX; i++) {
        if (read(STDIN_FILENO, &ch, 1U) != 1 || ch == '\n') {
            return;
        }
    }
}

/* --then cancel: the exact CANCEL of request id on this connection. */
static void client_cancel_exact(int fd, pbx_ipc_id id, const client_opts *o)
{
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = id;
    if (o->then_cancel_session) {
        c.by_correlation = true;
        memset(&c.request, 0, sizeof(c.request));
        c.job_id = o->job_id;
        c.job_gen = (uint32_t)o->job_gen;
        c.session = o->session;
    }
    size_t n = 0;
    const pbx_ipc_frame *f = NULL;
    bool ok = pbx_ipc_cancel_encode(&c, g_buf, sizeof(g_buf), &n) == PBX_OK &&
              (f = client_call(fd, n, -1, "CANCEL")) != NULL &&
              pbx_ipc_empty_decode(f, PBX_IPC_OP_CANCEL | PBX_IPC_REPLY_BIT) ==
                  PBX_OK;
    printf("cancel=%s\n", ok ? "accepted" : "refused");
}

/* BEGIN: stores the request id and the destination slot. Returns 0, 1 on
 * a failure, 2 when the options make no admissible BEGIN. */
/* Whether status is retryable backpressure: powerboxd's full pools or a
 * full launchd table. */
static bool client_busy(uint32_t status)
{
    return status == (uint32_t)PBX_E_CORE_BUSY ||
           status == (uint32_t)PBX_PEER_E_BUSY;
}

/* Sends the BEGIN in g_buf[0..n) and returns its reply. Under --repeat a
 * BUSY answer is backpressure, not failure: the same BEGIN is sent again
 * after a pause that doubles from 1 ms to 64 ms, for at most
 * CLIENT_BUSY_MS_MAX in all, each retry counted (busy_retries=). A single
 * request reports BUSY as it is, so a caller sees the backpressure. */
static const pbx_ipc_frame *client_begin_call(int fd, size_t n)
{
    uint64_t until = client_now_ns() + (uint64_t)CLIENT_BUSY_MS_MAX * 1000000U;
    long pause_us = 1000;
    for (uint32_t i = 0; i < CLIENT_BUSY_MS_MAX; i++) {
        if (!client_send(fd, CLIENT_MAIN, n, -1, "BEGIN")) {
            return NULL;
        }
        int r = client_wait(fd, CLIENT_MAIN,
                            client_now_ns() + CLIENT_CALL_MS * 1000000U);
        if (r != 0) {
            client_no_reply(r, "BEGIN");
            return NULL;
        }
        const pbx_peer_msg *m = &g_calls[CLIENT_MAIN].msg;
        if (!g_quiet || m->err != PBX_OK || !client_busy(m->frame.status) ||
            client_now_ns() >= until) {
            break;
        }
        g_busy_retries++;
        struct timespec ts = {0, pause_us * 1000L};
        (void)nanosleep(&ts, NULL);
        pause_us = pause_us < 64000 ? pause_us * 2 : pause_us;
    }
    return client_result(CLIENT_MAIN, "BEGIN");
}

static int client_begin(const client_opts *o, pbx_ipc_id *id, uint32_t *slot)
{
    static pbx_ipc_begin b;
    size_t n = 0;
    pbx_ipc_begin_reply br;
    if (o->scope_fd < 0 || o->selector == NULL) {
        pbx_peer_log("pbx-client", "request needs --scope and --selector");
        return 2;
    }
    if (o->verify_root != NULL && o->mode != PBX_IPC_MODE_RUNTIME_REPLY) {
        pbx_peer_log("pbx-client", "--verify-object needs --mode "
                                   "runtime-reply (an install grant's object "
                                   "goes to procd, not to the client)");
        return 2;
    }
    if (!client_begin_rec(o, &b)) {
        return 2;
    }
    if (pbx_ipc_begin_encode(&b, g_buf, sizeof(g_buf), &n) != PBX_OK ||
        !client_unclaim(o, g_buf, &n)) {
        pbx_peer_log("pbx-client", "BEGIN is not admissible (check op, "
                                   "class, lifetime, mode and target)");
        return 2;
    }
    const pbx_ipc_frame *f = client_begin_call(o->public_fd, n);
    if (f == NULL || pbx_ipc_begin_reply_decode(f, &br) != PBX_OK) {
        return 1;
    }
    *id = f->request;
    *slot = br.dest_slot;
    return 0;
}

/* CONSUME of the grant just approved; then, for one request holding its
 * alias, the wait for the alias's revocation. */
static int client_consume_grant(const client_opts *o)
{
    size_t n = 0;
    pbx_ipc_consume cs = {g_grant};
    const pbx_ipc_frame *f = NULL;
    if (pbx_ipc_consume_encode(&cs, g_buf, sizeof(g_buf), &n) != PBX_OK ||
        (f = client_call(o->public_fd, n, -1, "CONSUME")) == NULL ||
        pbx_ipc_empty_decode(f, PBX_IPC_OP_CONSUME | PBX_IPC_REPLY_BIT) !=
            PBX_OK) {
        return 1;
    }
    if (!g_quiet) {
        printf("consume=accepted\n");
    }
    return g_alias >= 0 ? client_alias_revoked(o->wait_ms) : 0;
}

/* request: BEGIN, SELECTOR chunks, COMMIT with the scope, DECISION. */
static int client_request(const client_opts *o)
{
    pbx_ipc_id id = {0U, 0U};
    uint32_t slot = 0;
    int rc = client_begin(o, &id, &slot);
    if (rc != 0) {
        return rc;
    }
    if (!g_quiet) {
        printf("request=%u.%u\ndest_slot=%u\n", id.index, id.gen, slot);
        if (o->scope_id != 0U) {
            printf("scope=%llu\n", (unsigned long long)o->scope_id);
        }
    }
    if (!client_selector(o->public_fd, id, o->selector)) {
        return 1;
    }
    pbx_ipc_commit c = {slot};
    size_t n = 0;
    const pbx_ipc_frame *f = NULL;
    if (pbx_ipc_commit_encode(id, &c, g_buf, sizeof(g_buf), &n) != PBX_OK ||
        (f = client_call(o->public_fd, n, o->scope_fd, "COMMIT")) == NULL ||
        pbx_ipc_empty_decode(f, PBX_IPC_OP_COMMIT | PBX_IPC_REPLY_BIT) !=
            PBX_OK) {
        return 1;
    }
    if (o->then_hangup) {
        /* Exiting closes the connection with the request still open. */
        printf("hang_up=after-commit\n");
        return 0;
    }
    if (o->then_hold || o->then_cancel || o->then_cancel_session) {
        client_wait_line();
    }
    if (o->then_cancel || o->then_cancel_session) {
        client_cancel_exact(o->public_fd, id, o);
        client_wait_line();
    }
    (void)fflush(stdout);
    g_grant = (pbx_ipc_id){0U, 0U};
    rc = client_decision(o->public_fd, id, o);
    /* No grant: a decision that named another request (--repeat goes
     * on), or no APPROVED one. */
    if (rc != 0 || !o->then_consume || g_grant.gen == 0U) {
        return rc;
    }
    return client_consume_grant(o);
}

/* Orders two latencies for qsort. */
static int client_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The CPU time this process has used so far, in ns (user and system):
 * a launched job is not the benchmark's child, so it reports its own. */
static uint64_t client_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0U;
    }
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) *
               1000000000U +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) *
               1000U;
}

/* Prints the statistics of the n sorted latencies in ns (n > 0). */
static void client_stats(const uint64_t *ns, uint64_t n, uint64_t total_ns)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        sum += ns[i];
    }
    /* The nearest-rank percentiles: the smallest sample with at least
     * that share of the samples at or below it. */
    uint64_t p50 = (n * 50U + 99U) / 100U;
    uint64_t p99 = (n * 99U + 99U) / 100U;
    printf("repeat=%llu\nmin_ns=%llu\nmedian_ns=%llu\np99_ns=%llu\n"
           "max_ns=%llu\nmean_ns=%llu\nwall_ns_per_lifecycle=%llu\n"
           "decisions_per_lifecycle=%.3f\nmismatches=%llu\n"
           "busy_retries=%llu\ncpu_ns_client=%llu\n",
           (unsigned long long)n, (unsigned long long)ns[0],
           (unsigned long long)ns[p50 - 1U], (unsigned long long)ns[p99 - 1U],
           (unsigned long long)ns[n - 1U], (unsigned long long)(sum / n),
           (unsigned long long)(total_ns / n),
           (double)g_decision_calls / (double)n,
           (unsigned long long)g_mismatches, (unsigned long long)g_busy_retries,
           (unsigned long long)(client_cpu_ns() / n));
}

/* --repeat: o->repeat whole one-shot lifecycles on the one connection,
 * each timed from sending BEGIN to CONSUME's reply. */
static int client_repeat(const client_opts *o)
{
    if (!o->then_consume || o->lifetime != PBX_IPC_LIFETIME_ONE_SHOT) {
        pbx_peer_log("pbx-client", "--repeat needs --then consume and a "
                                   "one-shot lifetime");
        return 2;
    }
    uint64_t *ns = calloc((size_t)o->repeat, sizeof(*ns));
    if (ns == NULL) {
        pbx_peer_log("pbx-client", "--repeat: out of memory");
        return 1;
    }
    g_quiet = true;
    uint64_t start = client_now_ns();
    for (uint64_t i = 0; i < o->repeat; i++) {
        uint64_t t0 = client_now_ns();
        int rc = client_request(o);
        ns[i] = client_now_ns() - t0;
        if (rc != 0) {
            printf("failed_at=%llu\nmismatches=%llu\nbusy_retries=%llu\n",
                   (unsigned long long)i, (unsigned long long)g_mismatches,
                   (unsigned long long)g_busy_retries);
            free(ns);
            return rc;
        }
    }
    uint64_t total = client_now_ns() - start;
    qsort(ns, (size_t)o->repeat, sizeof(*ns), client_cmp_u64);
    client_stats(ns, o->repeat, total);
    free(ns);
    return g_mismatches == 0U ? 0 : 1;
}

/* cancel (exact request, or job and session correlation) and consume. */
static int client_simple(const client_opts *o, bool cancel)
{
    size_t n = 0;
    pbx_err e = PBX_OK;
    uint16_t op = cancel ? PBX_IPC_OP_CANCEL : PBX_IPC_OP_CONSUME;
    if (cancel) {
        pbx_ipc_cancel c;
        memset(&c, 0, sizeof(c));
        c.by_correlation = !o->have_pair;
        c.request.index = (uint32_t)o->a;
        c.request.gen = (uint32_t)o->b;
        c.job_id = o->have_pair ? 0U : o->job_id;
        c.job_gen = o->have_pair ? 0U : (uint32_t)o->job_gen;
        c.session = o->have_pair ? 0U : o->session;
        e = pbx_ipc_cancel_encode(&c, g_buf, sizeof(g_buf), &n);
    } else {
        pbx_ipc_consume c = {{(uint32_t)o->a, (uint32_t)o->b}};
        e = pbx_ipc_consume_encode(&c, g_buf, sizeof(g_buf), &n);
    }
    if (e != PBX_OK) {
        pbx_peer_log("pbx-client", "invalid %s: %s",
                     cancel ? "cancel" : "consume", pbx_err_text(e));
        return 2;
    }
    const pbx_ipc_frame *f =
        client_call(o->public_fd, n, -1, cancel ? "CANCEL" : "CONSUME");
    if (f == NULL ||
        pbx_ipc_empty_decode(f, op | PBX_IPC_REPLY_BIT) != PBX_OK) {
        return 1;
    }
    printf("%s=accepted\n", cancel ? "cancel" : "consume");
    return 0;
}

/* Parses one name-valued option; returns false when it is not known. */
static bool client_named(client_opts *o, const char *k, const char *v, bool *ok)
{
    static const struct {
        const char *key;
        pbx_peer_name_kind kind;
        size_t off;
    } named[] = {
        {"--op", PBX_PEER_NAMES_OPERATION, offsetof(client_opts, op)},
        {"--class", PBX_PEER_NAMES_CLASS, offsetof(client_opts, cls)},
        {"--lifetime", PBX_PEER_NAMES_LIFETIME,
         offsetof(client_opts, lifetime)},
        {"--mode", PBX_PEER_NAMES_MODE, offsetof(client_opts, mode)},
        {"--urgency", PBX_PEER_NAMES_URGENCY, offsetof(client_opts, urgency)},
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(named); i++) {
        if (strcmp(k, named[i].key) == 0) {
            uint32_t *dst = (uint32_t *)(void *)((char *)o + named[i].off);
            *ok = pbx_peer_name_parse(named[i].kind, v, dst);
            return true;
        }
    }
    return false;
}

/* Parses one option pair; false with a message when it is invalid. */
static bool client_option(client_opts *o, const char *k, const char *v)
{
    bool ok = true;
    if (client_named(o, k, v, &ok)) {
    } else if (strcmp(k, "--control") == 0 || strcmp(k, "--public") == 0) {
        o->public_fd = pbx_peer_io_connect(v, SOCK_SEQPACKET);
        ok = o->public_fd >= 0;
    } else if (strcmp(k, "--scope") == 0) {
        o->scope_fd =
            pbx_peer_io_scope_acquire(v, (int)CLIENT_GRACE_MS, &o->scope_id);
        ok = o->scope_fd >= 0;
    } else if (strcmp(k, "--control-fd") == 0 ||
               strcmp(k, "--public-fd") == 0 || strcmp(k, "--scope-fd") == 0) {
        int fd = pbx_peer_io_fd_arg(v);
        *(strcmp(k, "--scope-fd") != 0 ? &o->public_fd : &o->scope_fd) = fd;
        ok = fd >= 0;
    } else if (strcmp(k, "--selector") == 0) {
        o->selector = v;
    } else if (strcmp(k, "--entry") == 0 || strcmp(k, "--label") == 0) {
        *(strcmp(k, "--entry") == 0 ? &o->entry : &o->label) = v;
    } else if (strcmp(k, "--verify-object") == 0) {
        o->verify_root = v;
    } else if (strcmp(k, "--job") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &o->job_id,
                                 &o->job_gen);
    } else if (strcmp(k, "--target") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &o->pid, &o->pgen);
    } else if (strcmp(k, "--request") == 0 || strcmp(k, "--grant") == 0) {
        ok = pbx_peer_parse_pair(v, UINT32_MAX, UINT32_MAX, &o->a, &o->b);
        o->have_pair = true;
    } else if (strcmp(k, "--session") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &o->session);
    } else if (strcmp(k, "--invocation") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &o->invocation);
    } else if (strcmp(k, "--realm") == 0 || strcmp(k, "--slot") == 0) {
        ok = pbx_peer_parse_u64(
            v, UINT32_MAX, strcmp(k, "--realm") == 0 ? &o->realm : &o->slot);
    } else if (strcmp(k, "--ready-fd") == 0) {
        int fd = pbx_peer_io_fd_arg(v);
        pbx_peer_io_ready(fd);
        ok = fd >= 0;
    } else if (strcmp(k, "--then") == 0) {
        bool *then = strcmp(v, "consume") == 0   ? &o->then_consume
                     : strcmp(v, "hang-up") == 0 ? &o->then_hangup
                     : strcmp(v, "hold") == 0    ? &o->then_hold
                     : strcmp(v, "cancel") == 0  ? &o->then_cancel
                     : strcmp(v, "cancel-session") == 0
                         ? &o->then_cancel_session
                         : NULL;
        if (then == NULL) {
            pbx_peer_log("pbx-client", "--then takes 'consume', 'hang-up', "
                                       "'hold', 'cancel' or 'cancel-session'");
            return false;
        }
        *then = true;
    } else if (strcmp(k, "--repeat") == 0) {
        ok = pbx_peer_parse_u64(v, 10000000U, &o->repeat) && o->repeat > 0U;
    } else if (strcmp(k, "--wait-ms") == 0) {
        ok = pbx_peer_parse_u64(v, 3600000U, &o->wait_ms);
    } else {
        pbx_peer_log("pbx-client", "unknown option '%s'", k);
        return false;
    }
    if (!ok) {
        pbx_peer_log("pbx-client", "invalid %s '%s'%s%s", k, v,
                     errno != 0 ? ": " : "", errno != 0 ? strerror(errno) : "");
    }
    return ok;
}

/* Sets the defaults: a routine one-shot install request of session 1,
 * claiming no job, entry or target (launchd fills them in). */
static void client_defaults(client_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->public_fd = -1;
    o->scope_fd = -1;
    o->session = 1;
    o->mode = PBX_IPC_MODE_INSTALL;
    o->urgency = PBX_IPC_URGENCY_ROUTINE;
    o->lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    o->entry = "";
    o->label = "";
}

/* Takes the claims' defaults from what launchd put in the environment of
 * a job it launched (PBX_JOB=ID:GEN, PBX_ENTRY, PBX_TARGET=PID:GEN,
 * PBX_SESSION, PBX_REALM); false with a message when one is malformed. */
static bool client_env(client_opts *o)
{
    const char *job = getenv("PBX_JOB");
    const char *entry = getenv("PBX_ENTRY");
    const char *target = getenv("PBX_TARGET");
    const char *session = getenv("PBX_SESSION");
    const char *realm = getenv("PBX_REALM");
    if (session != NULL &&
        !pbx_peer_parse_u64(session, UINT64_MAX, &o->session)) {
        pbx_peer_log("pbx-client", "invalid PBX_SESSION '%s'", session);
        return false;
    }
    if (realm != NULL && !pbx_peer_parse_u64(realm, UINT32_MAX, &o->realm)) {
        pbx_peer_log("pbx-client", "invalid PBX_REALM '%s'", realm);
        return false;
    }
    if (job != NULL && !pbx_peer_parse_pair(job, UINT64_MAX, UINT32_MAX,
                                            &o->job_id, &o->job_gen)) {
        pbx_peer_log("pbx-client", "invalid PBX_JOB '%s'", job);
        return false;
    }
    if (target != NULL && !pbx_peer_parse_pair(target, UINT64_MAX, UINT32_MAX,
                                               &o->pid, &o->pgen)) {
        pbx_peer_log("pbx-client", "invalid PBX_TARGET '%s'", target);
        return false;
    }
    if (entry != NULL) {
        o->entry = entry;
    }
    return true;
}

/* With no --control, --public or their -fd forms: the job connection in
 * PBX_LAUNCHD_FD; false with a message when there is none. */
static bool client_connection(client_opts *o)
{
    if (o->public_fd >= 0) {
        return true;
    }
    const char *v = getenv("PBX_LAUNCHD_FD");
    if (v == NULL) {
        pbx_peer_log("pbx-client", "need --control PATH (pbx-launchd serve "
                                   "--control), --control-fd N, or "
                                   "PBX_LAUNCHD_FD (a job launchd launched)");
        return false;
    }
    o->public_fd = pbx_peer_io_fd_arg(v);
    if (o->public_fd < 0) {
        pbx_peer_log("pbx-client",
                     "PBX_LAUNCHD_FD '%s' is not an open "
                     "descriptor",
                     v);
        return false;
    }
    return true;
}

/* The usage text --help prints (docs/HOST.md says more). */
static const char client_usage[] =
    "usage: pbx-client request [CONNECTION] (--scope PATH | --scope-fd N)\n"
    "           --selector S --op OP --class CLASS --lifetime L\n"
    "           [--mode install|runtime-reply] [--urgency U] [--job ID:GEN]\n"
    "           [--session N] [--realm N] [--entry TEXT] [--label TEXT]\n"
    "           [--target PID:GEN] [--slot N] [--invocation N]\n"
    "           [--wait-ms N] [--verify-object ROOT]\n"
    "           [--then consume [--repeat N] | --then hang-up |\n"
    "            --then hold | --then cancel | --then cancel-session]\n"
    "       pbx-client cancel [CONNECTION] (--request I:G |\n"
    "           --job ID:GEN --session N)\n"
    "       pbx-client consume [CONNECTION] --grant I:G\n"
    "       pbx-client --help\n"
    "CONNECTION: --control PATH | --control-fd N (launchd's control\n"
    "socket); without one, the descriptor in PBX_LAUNCHD_FD (a job\n"
    "launchd launched). --job, --entry, --target, --session and --realm\n"
    "default to PBX_JOB, PBX_ENTRY, PBX_TARGET, PBX_SESSION and PBX_REALM;\n"
    "without them job, entry, target and realm are left for launchd to\n"
    "fill in, and the session claimed is 1.\n"
    "--wait-ms N bounds the wait for the decision (0, the default: none);\n"
    "on expiry the request is cancelled.\n"
    "Exit: 0 approved or accepted, 3 denied, cancelled or not found,\n"
    "1 failure or mismatch, 2 usage error.\n";

int main(int argc, char **argv)
{
    static client_opts o;
    client_defaults(&o);
    for (int i = 1; i < argc; i += i == 1 ? 1 : 2) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            (void)fputs(client_usage, stdout);
            return 0;
        }
    }
    const char *cmd = argc > 1 ? argv[1] : "";
    bool ok = argc >= 2 && (argc % 2) == 0 && client_env(&o);
    for (int i = 2; ok && i + 1 < argc; i += 2) {
        errno = 0;
        ok = client_option(&o, argv[i], argv[i + 1]);
    }
    ok = ok && client_connection(&o);
    if (!ok) {
        pbx_peer_log("pbx-client", "usage: pbx-client request|cancel|consume "
                                   "... (pbx-client --help)");
        return 2;
    }
    int rc = 2;
    if (strcmp(cmd, "request") == 0) {
        rc = o.repeat > 0U ? client_repeat(&o) : client_request(&o);
    } else if (strcmp(cmd, "cancel") == 0 || strcmp(cmd, "consume") == 0) {
        rc = client_simple(&o, strcmp(cmd, "cancel") == 0);
    } else {
        pbx_peer_log("pbx-client", "unknown command '%s'", cmd);
    }
    (void)fflush(stdout);
    return rc;
}
