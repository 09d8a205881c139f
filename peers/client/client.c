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

#include "peers/app/pbx_app.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"

/* Bounds every wait loop; far beyond any real number of rounds. */
#define CLIENT_ROUNDS_MAX 100000000U

/* Everything the command line (and the environment) said. */
typedef struct client_opts {
    int public_fd;
    int scope_fd;
    /* The identity vfsd named the scope by (--scope PATH), else 0. */
    uint64_t scope_id;
    const char *selector;
    /* --wait-ms: the bound on the DECISION wait (0: none). */
    uint64_t wait_ms;
    /* What the BEGIN claims (session, realm, job, install target, entry;
     * unclaimed ones are filled in by launchd). */
    pbx_app_claims cl;
    /* --invocation N: the BEGIN's invocation id (0: none). */
    uint64_t invocation;
    uint64_t a;
    uint64_t b;
    uint32_t op;
    uint32_t cls;
    uint32_t lifetime;
    uint32_t mode;
    uint32_t urgency;
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

/* The connection and its calls (the app library's call layer). */
static pbx_app_conn g_conn;
/* In --repeat mode the per-request key=value lines are not printed. */
static bool g_quiet;
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

/* Waits at most PBX_APP_GRACE_MS for the OBJ_STAT reply of seq on alias
 * into *st; returns false with a message. */
static bool client_obj_stat(int alias, pbx_peer_vfs_stat *st)
{
    uint32_t seq = pbx_app_conn_next_seq(&g_conn);
    size_t n = 0;
    if (pbx_peer_vfs_obj_stat_encode(seq, g_conn.buf, sizeof(g_conn.buf), &n) !=
            PBX_OK ||
        pbx_peer_io_send(alias, g_conn.buf, n, -1) != 0) {
        pbx_peer_log("pbx-client", "OBJ_STAT: send failed: %s",
                     strerror(errno));
        return false;
    }
    struct pollfd p = {alias, POLLIN, 0};
    int r = poll(&p, 1, (int)PBX_APP_GRACE_MS);
    if (r != 1 || (r = pbx_peer_io_recv_frame(alias, &g_conn.in)) != 0) {
        pbx_peer_log("pbx-client", "OBJ_STAT: %s",
                     r == 1 ? "the object's connection ended" : "no reply");
        return false;
    }
    /* The object's ops are not pbx_ipc ops: the ipc decode failed and
     * closed what came with it; the raw bytes are checked here. */
    uint32_t status = 0;
    pbx_err e = pbx_peer_vfs_obj_stat_reply_decode(
        g_conn.in.buf, g_conn.in.len, g_conn.in.nfds, seq, st, &status);
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
    pbx_peer_msg *m = &g_conn.calls[PBX_APP_CALL_MAIN].msg;
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
        printf("reason=%s\n", pbx_ipc_reason_name(d->reason));
    }
    int rc = 3;
    if (d->outcome != PBX_IPC_OUTCOME_APPROVED) {
        pbx_ipc_id zero = {0U, 0U};
        g_grant = zero;
        pbx_peer_io_close_all(g_conn.calls[PBX_APP_CALL_MAIN].msg.fds,
                              g_conn.calls[PBX_APP_CALL_MAIN].msg.nfds);
    } else {
        rc = client_approved(d, o);
    }
    if (!g_quiet) {
        /* One request: how many DECISION calls it took (1 when launchd
         * held the call until the decision was final: no polling). */
        printf("decision_calls=%llu\n",
               (unsigned long long)g_conn.decision_calls);
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
    uint64_t ms = wait_ms == 0U ? PBX_APP_GRACE_MS : wait_ms;
    int r = poll(&p, 1, (int)(ms > 60000U ? 60000U : ms));
    bool gone = r == 1 && recv(g_alias, b, sizeof(b), MSG_DONTWAIT) == 0;
    (void)close(g_alias);
    g_alias = -1;
    printf("alias=%s\n", gone ? "revoked" : "live");
    return gone ? 0 : 1;
}

/*
 * Waits for the DECISION of id until deadline_ns (0: none). asked says a
 * DECISION call is outstanding already; otherwise one is sent. A PENDING
 * reply (an older launchd) is asked again after a pause: 50 ms for one
 * request, 1 ms under --repeat. Returns the exit status, or -1 when the
 * deadline passed first; another request's decision fails one request and
 * is only counted under --repeat.
 */
static int client_await_decision(pbx_ipc_id id, const client_opts *o,
                                 bool asked, uint64_t deadline_ns)
{
    pbx_ipc_decision d;
    int w = pbx_app_decision_wait(&g_conn, id, asked, deadline_ns,
                                  g_quiet ? 1000U : 50000U, &d);
    if (w == PBX_APP_WAIT_FINAL) {
        return client_report(&d, id, o);
    }
    if (w == PBX_APP_WAIT_EXPIRED) {
        return -1;
    }
    if (w == PBX_APP_WAIT_OTHER) {
        g_mismatches++;
        return g_quiet ? 0 : 1;
    }
    return 1;
}

/* --wait-ms passed: the exact CANCEL (its own call, while the DECISION
 * may still be outstanding), then at most PBX_APP_GRACE_MS more for the
 * decision, printed as usual. */
static int client_expired(pbx_ipc_id id, const client_opts *o)
{
    /* A DECISION outstanding (or answered while the CANCEL was) keeps its
     * seq; one already read has none. */
    bool asked = g_conn.calls[PBX_APP_CALL_MAIN].seq != 0U;
    uint64_t end = pbx_app_now_ns() + PBX_APP_GRACE_MS * 1000000U;
    printf("wait=expired\n");
    (void)fflush(stdout);
    bool ok = pbx_app_cancel_send(&g_conn, PBX_APP_CALL_CANCEL, id, end);
    printf("cancel=%s\n", ok ? "accepted" : "refused");
    (void)fflush(stdout);
    int rc = client_await_decision(id, o, asked, end);
    if (rc < 0) {
        printf("outcome=pending\n");
        pbx_peer_log("pbx-client",
                     "no decision within %llu ms of the wait's "
                     "expiry",
                     (unsigned long long)PBX_APP_GRACE_MS);
        return 1;
    }
    return rc;
}

/* Asks for the DECISION of id once and waits for it (--wait-ms bounds the
 * wait; on expiry the request is cancelled). */
static int client_decision(pbx_ipc_id id, const client_opts *o)
{
    uint64_t deadline =
        o->wait_ms == 0U ? 0U : pbx_app_now_ns() + o->wait_ms * 1000000U;
    int rc = client_await_decision(id, o, false, deadline);
    return rc >= 0 ? rc : client_expired(id, o);
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
static void client_cancel_exact(pbx_ipc_id id, const client_opts *o)
{
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = id;
    if (o->then_cancel_session) {
        c.by_correlation = true;
        memset(&c.request, 0, sizeof(c.request));
        c.job_id = o->cl.job_id;
        c.job_gen = (uint32_t)o->cl.job_gen;
        c.session = o->cl.session;
    }
    size_t n = 0;
    const pbx_ipc_frame *f = NULL;
    bool ok = pbx_ipc_cancel_encode(&c, g_conn.buf, sizeof(g_conn.buf), &n) ==
                  PBX_OK &&
              (f = pbx_app_conn_call(&g_conn, n, -1, "CANCEL", NULL)) != NULL &&
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

/* Sends the BEGIN in g_conn.buf[0..n) and returns its reply. Under --repeat a
 * BUSY answer is backpressure, not failure: the same BEGIN is sent again
 * after a pause that doubles from 1 ms to 64 ms, for at most
 * CLIENT_BUSY_MS_MAX in all, each retry counted (busy_retries=). A single
 * request reports BUSY as it is, so a caller sees the backpressure. */
static const pbx_ipc_frame *client_begin_call(size_t n)
{
    uint64_t until = pbx_app_now_ns() + (uint64_t)CLIENT_BUSY_MS_MAX * 1000000U;
    long pause_us = 1000;
    for (uint32_t i = 0; i < CLIENT_BUSY_MS_MAX; i++) {
        if (!pbx_app_conn_send(&g_conn, PBX_APP_CALL_MAIN, n, -1, "BEGIN")) {
            return NULL;
        }
        int r =
            pbx_app_conn_wait(&g_conn, PBX_APP_CALL_MAIN,
                              pbx_app_now_ns() + PBX_APP_CALL_MS * 1000000U);
        if (r != 0) {
            pbx_app_conn_no_reply(&g_conn, r, "BEGIN");
            return NULL;
        }
        const pbx_peer_msg *m = &g_conn.calls[PBX_APP_CALL_MAIN].msg;
        if (!g_quiet || m->err != PBX_OK || !client_busy(m->frame.status) ||
            pbx_app_now_ns() >= until) {
            break;
        }
        g_busy_retries++;
        struct timespec ts = {0, pause_us * 1000L};
        (void)nanosleep(&ts, NULL);
        pause_us = pause_us < 64000 ? pause_us * 2 : pause_us;
    }
    return pbx_app_conn_result(&g_conn, PBX_APP_CALL_MAIN, "BEGIN", NULL);
}

static int client_begin(const client_opts *o, pbx_ipc_id *id, uint32_t *slot)
{
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
    pbx_app_begin_args a = {o->selector, o->label, o->invocation, o->op, o->cls,
                            o->lifetime, o->mode,  o->urgency};
    if (!pbx_app_begin_encode(&g_conn, &o->cl, &a, &n)) {
        return 2;
    }
    const pbx_ipc_frame *f = client_begin_call(n);
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
    if (pbx_ipc_consume_encode(&cs, g_conn.buf, sizeof(g_conn.buf), &n) !=
            PBX_OK ||
        (f = pbx_app_conn_call(&g_conn, n, -1, "CONSUME", NULL)) == NULL ||
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
    if (!pbx_app_selector_send(&g_conn, id, o->selector, NULL) ||
        !pbx_app_commit(&g_conn, id, slot, o->scope_fd, NULL)) {
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
        client_cancel_exact(id, o);
        client_wait_line();
    }
    (void)fflush(stdout);
    g_grant = (pbx_ipc_id){0U, 0U};
    rc = client_decision(id, o);
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
           (double)g_conn.decision_calls / (double)n,
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
    uint64_t start = pbx_app_now_ns();
    for (uint64_t i = 0; i < o->repeat; i++) {
        uint64_t t0 = pbx_app_now_ns();
        int rc = client_request(o);
        ns[i] = pbx_app_now_ns() - t0;
        if (rc != 0) {
            printf("failed_at=%llu\nmismatches=%llu\nbusy_retries=%llu\n",
                   (unsigned long long)i, (unsigned long long)g_mismatches,
                   (unsigned long long)g_busy_retries);
            free(ns);
            return rc;
        }
    }
    uint64_t total = pbx_app_now_ns() - start;
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
        c.job_id = o->have_pair ? 0U : o->cl.job_id;
        c.job_gen = o->have_pair ? 0U : (uint32_t)o->cl.job_gen;
        c.session = o->have_pair ? 0U : o->cl.session;
        e = pbx_ipc_cancel_encode(&c, g_conn.buf, sizeof(g_conn.buf), &n);
    } else {
        pbx_ipc_consume c = {{(uint32_t)o->a, (uint32_t)o->b}};
        e = pbx_ipc_consume_encode(&c, g_conn.buf, sizeof(g_conn.buf), &n);
    }
    if (e != PBX_OK) {
        pbx_peer_log("pbx-client", "invalid %s: %s",
                     cancel ? "cancel" : "consume", pbx_err_text(e));
        return 2;
    }
    const pbx_ipc_frame *f =
        pbx_app_conn_call(&g_conn, n, -1, cancel ? "CANCEL" : "CONSUME", NULL);
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
            pbx_peer_io_scope_acquire(v, (int)PBX_APP_GRACE_MS, &o->scope_id);
        ok = o->scope_fd >= 0;
    } else if (strcmp(k, "--control-fd") == 0 ||
               strcmp(k, "--public-fd") == 0 || strcmp(k, "--scope-fd") == 0) {
        int fd = pbx_peer_io_fd_arg(v);
        *(strcmp(k, "--scope-fd") != 0 ? &o->public_fd : &o->scope_fd) = fd;
        ok = fd >= 0;
    } else if (strcmp(k, "--selector") == 0) {
        o->selector = v;
    } else if (strcmp(k, "--entry") == 0 || strcmp(k, "--label") == 0) {
        *(strcmp(k, "--entry") == 0 ? &o->cl.entry : &o->label) = v;
    } else if (strcmp(k, "--verify-object") == 0) {
        o->verify_root = v;
    } else if (strcmp(k, "--job") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &o->cl.job_id,
                                 &o->cl.job_gen);
    } else if (strcmp(k, "--target") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &o->cl.pid,
                                 &o->cl.pgen);
    } else if (strcmp(k, "--request") == 0 || strcmp(k, "--grant") == 0) {
        ok = pbx_peer_parse_pair(v, UINT32_MAX, UINT32_MAX, &o->a, &o->b);
        o->have_pair = true;
    } else if (strcmp(k, "--session") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &o->cl.session);
    } else if (strcmp(k, "--invocation") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &o->invocation);
    } else if (strcmp(k, "--realm") == 0 || strcmp(k, "--slot") == 0) {
        ok = pbx_peer_parse_u64(v, UINT32_MAX,
                                strcmp(k, "--realm") == 0 ? &o->cl.realm
                                                          : &o->cl.slot);
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
    o->cl.session = 1;
    o->cl.entry = "";
    o->mode = PBX_IPC_MODE_INSTALL;
    o->urgency = PBX_IPC_URGENCY_ROUTINE;
    o->lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    o->label = "";
}

/* Takes the claims' defaults from what launchd put in the environment of
 * a job it launched (PBX_JOB=ID:GEN, PBX_ENTRY, PBX_TARGET=PID:GEN,
 * PBX_SESSION, PBX_REALM); false with a message when one is malformed. */
static bool client_env(client_opts *o)
{
    return pbx_app_claims_env(&o->cl, "pbx-client");
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

/* Names the first word in an option position of argv (argv[1] is the
 * command) that is not one of client_option's names, on one line; false
 * then. The list is client_option's; an option added there goes here. */
static bool client_known_options(int argc, char **argv)
{
    static const char *const known[] = {
        "--class",     "--control",       "--control-fd", "--entry",
        "--grant",     "--invocation",    "--job",        "--label",
        "--lifetime",  "--mode",          "--op",         "--public",
        "--public-fd", "--ready-fd",      "--realm",      "--repeat",
        "--request",   "--scope",         "--scope-fd",   "--selector",
        "--session",   "--slot",          "--target",     "--then",
        "--urgency",   "--verify-object", "--wait-ms"};
    for (int i = 2; i < argc; i += 2) {
        bool found = false;
        for (size_t j = 0; j < PBX_ARRAY_LEN(known); j++) {
            found = found || strcmp(argv[i], known[j]) == 0;
        }
        if (!found) {
            pbx_peer_log("pbx-client",
                         "unknown option '%s' (try 'pbx-client --help')",
                         argv[i]);
            return false;
        }
    }
    return true;
}

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
    if (!client_known_options(argc, argv)) {
        return 2;
    }
    bool ok = argc >= 2 && (argc % 2) == 0 && client_env(&o);
    for (int i = 2; ok && i + 1 < argc; i += 2) {
        errno = 0;
        ok = client_option(&o, argv[i], argv[i + 1]);
    }
    ok = ok && client_connection(&o);
    pbx_app_conn_init(&g_conn, o.public_fd, "pbx-client");
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
