/*
 * pbx_app_request.c: the app library's whole runtime-reply request
 * (pbx_app.h): BEGIN over the job's launchd connection, the decision,
 * COMMIT or install, and the grant's end. Moved from pbx_app.c.
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

/* The high-level calls log nothing: their status says what happened. */
static const char *const pbx_app_who = NULL;
/* The process's job connection and its calls, set up on first use. */
static pbx_app_conn g_pbx_app;
static bool g_pbx_app_ready;

/* Sets g_pbx_app up on the job connection in $PBX_LAUNCHD_FD once;
 * returns PBX_APP_OK or PBX_APP_E_NO_JOB. */
static int pbx_app_job_conn(void)
{
    if (g_pbx_app_ready) {
        return PBX_APP_OK;
    }
    const char *v = getenv("PBX_LAUNCHD_FD");
    int fd = v != NULL ? pbx_peer_io_fd_arg(v) : -1;
    if (fd < 0) {
        return PBX_APP_E_NO_JOB;
    }
    pbx_app_conn_init(&g_pbx_app, fd, pbx_app_who);
    g_pbx_app_ready = true;
    return PBX_APP_OK;
}

/* The scope to COMMIT: $PBX_SCOPE_FD (kept: *owned false), else a fresh
 * one from the runtime directory's scope socket (*owned true). Returns
 * the descriptor or -1. */
static int pbx_app_scope(const char *dir, bool *owned)
{
    const char *v = getenv("PBX_SCOPE_FD");
    *owned = false;
    if (v != NULL && v[0] != '\0') {
        return pbx_peer_io_fd_arg(v);
    }
    char path[4096];
    if (pbx_app_dir_path(dir, PBX_APP_SCOPE_SOCK, path, sizeof(path)) !=
        PBX_APP_OK) {
        return -1;
    }
    uint64_t id = 0;
    int fd = pbx_peer_io_scope_acquire(path, (int)PBX_APP_GRACE_MS, &id);
    *owned = fd >= 0;
    return fd;
}

uint16_t pbx_app_class_for(uint16_t operation)
{
    switch (operation) {
    case PBX_IPC_OPERATION_READ:
    case PBX_IPC_OPERATION_WRITE:
    case PBX_IPC_OPERATION_EXECUTE:
    case PBX_IPC_OPERATION_CREATE:
        return PBX_IPC_CLASS_FILE;
    case PBX_IPC_OPERATION_LIST:
        return PBX_IPC_CLASS_DIRECTORY;
    case PBX_IPC_OPERATION_ENTRY_METADATA_READ:
    case PBX_IPC_OPERATION_ENTRY_TOUCH:
        return PBX_IPC_CLASS_DIRECTORY_ENTRY;
    default:
        return 0U;
    }
}

/* An install-mode request's target: generation zero for runtime-reply
 * mode. */
typedef struct pbx_app_target {
    uint32_t pgen;
    uint32_t slot;
} pbx_app_target;

/* BEGIN, SELECTOR and COMMIT of rq on the job connection, in install mode
 * for this process when tg->pgen is nonzero; fills out->request. Returns
 * a pbx_app status. */
static int pbx_app_ask(const pbx_app_request *rq, const pbx_app_target *tg,
                       pbx_app_grant *out)
{
    pbx_app_conn *c = &g_pbx_app;
    pbx_app_claims cl;
    if (!pbx_app_claims_env(&cl, pbx_app_who)) {
        return PBX_APP_E_NO_JOB;
    }
    if (tg->pgen != 0U) {
        cl.pid = (uint64_t)getpid();
        cl.pgen = tg->pgen;
        cl.slot = tg->slot;
    }
    pbx_app_begin_args a = {
        rq->selector,
        rq->label != NULL ? rq->label : "",
        rq->invocation,
        rq->operation,
        rq->object_class != 0U ? rq->object_class
                               : pbx_app_class_for(rq->operation),
        rq->lifetime != 0U ? rq->lifetime : (uint32_t)PBX_IPC_LIFETIME_ONE_SHOT,
        tg->pgen != 0U ? PBX_IPC_MODE_INSTALL : PBX_IPC_MODE_RUNTIME_REPLY,
        rq->urgency != 0U ? rq->urgency : (uint32_t)PBX_IPC_URGENCY_ROUTINE};
    size_t n = 0;
    if (!pbx_app_begin_encode(c, &cl, &a, &n)) {
        return PBX_APP_E_ARG;
    }
    bool owned = false;
    int scope = pbx_app_scope(rq->scope_dir, &owned);
    if (scope < 0) {
        return PBX_APP_E_SCOPE;
    }
    pbx_ipc_begin_reply br;
    const pbx_ipc_frame *f = pbx_app_conn_call(c, n, -1, "BEGIN", &out->status);
    bool ok = f != NULL && pbx_ipc_begin_reply_decode(f, &br) == PBX_OK;
    if (ok) {
        out->request = f->request;
        ok = pbx_app_selector_send(c, out->request, rq->selector,
                                   &out->status) &&
             pbx_app_commit(c, out->request, br.dest_slot, scope, &out->status);
    }
    if (owned) {
        (void)close(scope);
    }
    if (ok) {
        return PBX_APP_OK;
    }
    return out->status != 0U ? PBX_APP_E_REFUSED
           : f == NULL       ? PBX_APP_E_TRANSPORT
                             : PBX_APP_E_PROTOCOL;
}

/* Maps a final decision to the grant and the status; an APPROVED
 * runtime-reply one hands its object (the one descriptor that came) to
 * out->obj, an APPROVED install-mode one (tg->pgen nonzero) sets
 * out->slot, which must be the slot asked for. */
static int pbx_app_decided_to(const pbx_ipc_decision *d,
                              const pbx_app_target *tg, pbx_app_grant *out)
{
    pbx_peer_msg *m = &g_pbx_app.calls[PBX_APP_CALL_MAIN].msg;
    out->outcome = d->outcome;
    out->reason = d->reason;
    bool installed = d->outcome == PBX_IPC_OUTCOME_APPROVED && tg->pgen != 0U &&
                     d->mode == PBX_IPC_MODE_INSTALL &&
                     d->installed_slot == tg->slot && m->nfds == 0U;
    if (installed) {
        out->grant = d->grant;
        out->slot = d->installed_slot;
    } else if (d->outcome == PBX_IPC_OUTCOME_APPROVED && tg->pgen == 0U &&
               m->nfds == 1U) {
        out->grant = d->grant;
        out->obj = m->fds[0];
        m->fds[0] = -1;
    }
    pbx_peer_io_close_all(m->fds, m->nfds);
    m->nfds = 0;
    switch (d->outcome) {
    case PBX_IPC_OUTCOME_APPROVED:
        return out->obj >= 0 || installed ? PBX_APP_OK : PBX_APP_E_PROTOCOL;
    case PBX_IPC_OUTCOME_DENIED:
        return PBX_APP_E_DENIED;
    case PBX_IPC_OUTCOME_NOT_FOUND:
        return PBX_APP_E_NOT_FOUND;
    case PBX_IPC_OUTCOME_CANCELLED:
        return PBX_APP_E_CANCELLED;
    default:
        return PBX_APP_E_PROTOCOL;
    }
}

/* The wait for the decision of out->request, bounded by wait_ms (0:
 * none); on expiry the exact CANCEL and at most PBX_APP_GRACE_MS more. */
static int pbx_app_await(uint64_t wait_ms, const pbx_app_target *tg,
                         pbx_app_grant *out)
{
    pbx_app_conn *c = &g_pbx_app;
    pbx_ipc_decision d;
    uint64_t before = c->decision_calls;
    uint64_t deadline =
        wait_ms == 0U ? 0U : pbx_app_now_ns() + wait_ms * 1000000U;
    int w = pbx_app_decision_wait(c, out->request, false, deadline, 50000U, &d);
    bool expired = w == PBX_APP_WAIT_EXPIRED;
    if (expired) {
        bool asked = c->calls[PBX_APP_CALL_MAIN].seq != 0U;
        uint64_t end = pbx_app_now_ns() + PBX_APP_GRACE_MS * 1000000U;
        (void)pbx_app_cancel_send(c, PBX_APP_CALL_CANCEL, out->request, end);
        w = pbx_app_decision_wait(c, out->request, asked, end, 50000U, &d);
    }
    out->decision_calls = c->decision_calls - before;
    if (w != PBX_APP_WAIT_FINAL) {
        return w == PBX_APP_WAIT_EXPIRED ? PBX_APP_E_TIMEOUT
               : w == PBX_APP_WAIT_OTHER ? PBX_APP_E_PROTOCOL
                                         : PBX_APP_E_TRANSPORT;
    }
    int rc = pbx_app_decided_to(&d, tg, out);
    /* A request the library cancelled because its wait passed reports the
     * timeout, not the cancellation it caused. */
    return expired && rc == PBX_APP_E_CANCELLED ? PBX_APP_E_TIMEOUT : rc;
}

/* pbx_app_open and pbx_app_install: the whole request for target tg. */
static int pbx_app_request_run(const pbx_app_request *rq,
                               const pbx_app_target *tg, pbx_app_grant *out)
{
    memset(out, 0, sizeof(*out));
    out->obj = -1;
    if (rq == NULL || rq->selector == NULL || rq->selector[0] == '\0' ||
        (rq->object_class == 0U && pbx_app_class_for(rq->operation) == 0U)) {
        return PBX_APP_E_ARG;
    }
    int rc = pbx_app_job_conn();
    if (rc == PBX_APP_OK) {
        rc = pbx_app_ask(rq, tg, out);
    }
    if (rc == PBX_APP_OK) {
        rc = pbx_app_await(rq->wait_ms, tg, out);
    }
    return rc;
}

int pbx_app_open(const pbx_app_request *rq, pbx_app_grant *out)
{
    pbx_app_target tg = {0U, 0U};
    return pbx_app_request_run(rq, &tg, out);
}

int pbx_app_install(const pbx_app_request *rq, uint32_t pgen, uint32_t slot,
                    pbx_app_grant *out)
{
    pbx_app_target tg = {pgen, slot};
    if (pgen == 0U) {
        memset(out, 0, sizeof(*out));
        out->obj = -1;
        return PBX_APP_E_ARG;
    }
    return pbx_app_request_run(rq, &tg, out);
}

/* Sends the grant-ending call op (CONSUME, or the grant form of CANCEL)
 * for g->grant, then closes g->obj and clears the grant. */
static int pbx_app_end(pbx_app_grant *g, bool consume)
{
    if (g == NULL || g->grant.gen == 0U) {
        return PBX_APP_E_STATE;
    }
    int rc = pbx_app_job_conn();
    pbx_app_conn *c = &g_pbx_app;
    size_t n = 0;
    pbx_err e = PBX_OK;
    if (rc == PBX_APP_OK && consume) {
        pbx_ipc_consume cs = {g->grant};
        e = pbx_ipc_consume_encode(&cs, c->buf, sizeof(c->buf), &n);
    } else if (rc == PBX_APP_OK) {
        pbx_ipc_cancel cn;
        memset(&cn, 0, sizeof(cn));
        cn.by_grant = true;
        cn.grant = g->grant;
        e = pbx_ipc_cancel_encode(&cn, c->buf, sizeof(c->buf), &n);
    }
    uint16_t op = consume ? PBX_IPC_OP_CONSUME : PBX_IPC_OP_CANCEL;
    const char *what = consume ? "CONSUME" : "CANCEL";
    const pbx_ipc_frame *f = NULL;
    if (rc == PBX_APP_OK && e != PBX_OK) {
        rc = PBX_APP_E_STATE;
    } else if (rc == PBX_APP_OK &&
               (f = pbx_app_conn_call(c, n, -1, what, &g->status)) == NULL) {
        rc = g->status != 0U ? PBX_APP_E_REFUSED : PBX_APP_E_TRANSPORT;
    } else if (rc == PBX_APP_OK &&
               pbx_ipc_empty_decode(f, op | PBX_IPC_REPLY_BIT) != PBX_OK) {
        rc = PBX_APP_E_PROTOCOL;
    }
    if (g->obj >= 0) {
        (void)close(g->obj);
        g->obj = -1;
    }
    g->grant = (pbx_ipc_id){0U, 0U};
    return rc;
}

int pbx_app_consume(pbx_app_grant *g)
{
    return pbx_app_end(g, true);
}

int pbx_app_cancel(pbx_app_grant *g)
{
    return pbx_app_end(g, false);
}

const char *pbx_app_strerror(int status)
{
    static const char *const text[] = {
        "success",
        "the runtime directory's path is too long",
        "the request is malformed",
        ("not inside a launchd job (PBX_LAUNCHD_FD or a claim variable is "
         "missing or malformed)"),
        ("no scope (PBX_SCOPE_FD is not open, and vfsd's scope socket gave "
         "none)"),
        "the connection to launchd failed or was closed",
        "launchd or powerboxd refused the call",
        "a reply was malformed or named another request",
        "the request was denied",
        "no such object",
        "the request was cancelled",
        "no decision in time: the request was cancelled",
        "no grant to end",
    };
    if (status < 0 || (size_t)status >= sizeof(text) / sizeof(text[0])) {
        return "unknown status";
    }
    return text[status];
}
