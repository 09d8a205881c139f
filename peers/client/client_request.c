/*
 * client_request.c: pbx-client's request flow: BEGIN, the SELECTOR chunks
 * and COMMIT, the DECISION wait (with --wait-ms's exact CANCEL), the
 * object check of --verify-object and the --then steps. See client.c.
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
#include "peers/client/client.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"

/* Bounds every wait loop; far beyond any real number of rounds. */
#define CLIENT_ROUNDS_MAX 100000000U

/* The connection and its calls (the app library's call layer). */
pbx_app_conn g_conn;
/* In --repeat mode the per-request key=value lines are not printed. */
bool g_quiet;
/* --repeat: decisions naming another request + objects not verified. */
uint64_t g_mismatches;
/* --repeat: BEGINs answered with retryable backpressure and sent again. */
uint64_t g_busy_retries;

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
int client_request(const client_opts *o)
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
