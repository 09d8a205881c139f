/*
 * test_e2e_liars_peer.c: the honest peers of the liars harness (liars.h).
 * Each call powerboxd makes is answered the way the real peer answers it,
 * except the first call the armed fault names, whose reply is told wrongly
 * in exactly one way. Every descriptor the harness passes keeps our end in
 * the run, so that the runner can see powerboxd close its copy.
 */
#define _GNU_SOURCE
#include "liars.h"

#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The object id vfsd gives every found object (a lie's poisoned body
 * names LR_OBJ_POISON instead). */
#define LR_OBJ        900U
#define LR_OBJ_POISON 901U

unsigned lr_op_slot(uint16_t op, uint8_t view_kind)
{
    switch (op) {
    case PBX_IPC_OP_RESOLVE:
        return 0U;
    case PBX_IPC_OP_POLICY:
        return 1U;
    case PBX_IPC_OP_PROMPT:
        return 2U;
    case PBX_IPC_OP_INSTALL:
        return 3U;
    case PBX_IPC_OP_DETACH:
        return 4U;
    case PBX_IPC_OP_VIEW:
        return view_kind == (uint8_t)PBX_IPC_VIEW_ACTIVE ? 5U : 6U;
    default:
        return 7U;
    }
}

bool lr_gone(int fd, int ms)
{
    uint8_t b[64];
    return fd >= 0 && e2e_recv(fd, b, sizeof(b), NULL, 0, NULL, ms) == 0;
}

/* vfsd: RESOLVE through scope k, answered FOUND on vfsd's route. */
static void lr_on_resolve(lr_run *r, unsigned k, const pbx_ipc_frame *f)
{
    pbx_ipc_resolve q;
    pbx_ipc_resolve_reply rr;
    uint8_t out[256];
    size_t n = 0;
    if (r->missing) {
        lr_on_missing(r, k, f);
        return;
    }
    if (pbx_ipc_resolve_decode(f, &q) != PBX_OK) {
        return;
    }
    bool armed = lr_armed(r, PBX_IPC_OP_RESOLVE, 0);
    memset(&rr, 0, sizeof(rr));
    rr.result = PBX_IPC_RESOLVE_FOUND;
    rr.object_class = q.object_class;
    rr.operation = q.operation;
    rr.object.id = LR_OBJ;
    rr.object.gen = 1;
    rr.scope_id = r->scope_id[k];
    memcpy(rr.selector_digest, q.selector_digest, sizeof(rr.selector_digest));
    if (armed && lr_header(&r->fault)) {
        pbx_ipc_resolve_reply bad = rr;
        bad.object.id = LR_OBJ_POISON;
        n = pbx_ipc_resolve_reply_encode(f->request, &bad, out, sizeof(out),
                                         &n) == PBX_OK
                ? n
                : 0U;
        lr_poison_send(r, r->p.vfsd, f, out, n, true);
    }
    uint8_t honest[256];
    size_t hn = 0;
    (void)pbx_ipc_resolve_reply_encode(f->request, &rr, honest, sizeof(honest),
                                       &hn);
    if (armed) {
        lr_flip16(&r->fault, LR_F_OPERATION, &rr.operation,
                  PBX_IPC_OPERATION_READ, PBX_IPC_OPERATION_WRITE);
        lr_flip16(&r->fault, LR_F_CLASS, &rr.object_class, PBX_IPC_CLASS_FILE,
                  PBX_IPC_CLASS_DIRECTORY);
        lr_e64(&r->fault, LR_F_SCOPE, &rr.scope_id);
        lr_e32(&r->fault, LR_F_OBJ_GEN, &rr.object.gen);
        if (r->fault.how == LR_HOW_DIGEST) {
            rr.selector_digest[r->fault.digest_at % 32U] ^= 0x01U;
        }
    }
    int fd = lr_pair(r, false, NULL);
    n = pbx_ipc_resolve_reply_encode(f->request, &rr, out, sizeof(out), &n) ==
                PBX_OK
            ? n
            : 0U;
    lr_zero_patch(&r->fault, out, honest, n);
    lr_deliver(r, armed, r->p.vfsd, f, out, n, &fd, 1);
}

/* ttyd: POLICY, answered ALLOW for a routine request and PROMPT for an
 * exceptional one, echoing urgency, realm and session. */
static void lr_on_policy(lr_run *r, const pbx_ipc_frame *f)
{
    pbx_ipc_policy q;
    uint8_t out[128];
    size_t n = 0;
    if (pbx_ipc_policy_decode(f, &q) != PBX_OK) {
        return;
    }
    r->last_object = q.object.id;
    bool armed = lr_armed(r, PBX_IPC_OP_POLICY, 0);
    uint8_t v = q.ctx.urgency == (uint8_t)PBX_IPC_URGENCY_ROUTINE
                    ? (uint8_t)PBX_IPC_VERDICT_ALLOW
                    : (uint8_t)PBX_IPC_VERDICT_PROMPT;
    pbx_ipc_policy_reply pr = {v, q.ctx.urgency, q.ctx.realm, q.ctx.session};
    if (armed && lr_header(&r->fault)) {
        pbx_ipc_policy_reply bad = pr;
        bad.verdict = PBX_IPC_VERDICT_DENY;
        n = pbx_ipc_policy_reply_encode(f->request, &bad, out, sizeof(out),
                                        &n) == PBX_OK
                ? n
                : 0U;
        lr_poison_send(r, r->p.ttyd, f, out, n, false);
    }
    if (armed) {
        lr_e64(&r->fault, LR_F_SESSION, &pr.session);
        lr_e32(&r->fault, LR_F_REALM, &pr.realm);
        /* ALLOW echoing EXCEPTIONAL is the decoder's refusal, not the
         * echo's: a wrong urgency is told with PROMPT. */
        if (r->fault.field == LR_F_URGENCY) {
            lr_flip8(&r->fault, LR_F_URGENCY, &pr.urgency,
                     PBX_IPC_URGENCY_ROUTINE, PBX_IPC_URGENCY_EXCEPTIONAL);
            pr.verdict = PBX_IPC_VERDICT_PROMPT;
        }
    }
    n = pbx_ipc_policy_reply_encode(f->request, &pr, out, sizeof(out), &n) ==
                PBX_OK
            ? n
            : 0U;
    if (armed) {
        lr_verdict_lie(&r->fault, out, n);
    }
    int none = -1;
    lr_deliver(r, armed, r->p.ttyd, f, out, n, &none, 0);
}

/* ttyd: PROMPT, answered with the exact approving answer. */
static void lr_on_prompt(lr_run *r, const pbx_ipc_frame *f)
{
    pbx_ipc_prompt q;
    pbx_ipc_prompt_reply a;
    uint8_t out[256];
    size_t n = 0;
    if (pbx_ipc_prompt_decode(f, &q) != PBX_OK) {
        return;
    }
    bool armed = lr_armed(r, PBX_IPC_OP_PROMPT, 0);
    memset(&a, 0, sizeof(a));
    a.answer = PBX_IPC_ANSWER_APPROVE;
    a.realm = q.ctx.realm;
    a.session = q.ctx.session;
    a.job_id = q.ctx.job_id;
    a.job_gen = q.ctx.job_gen;
    a.request = f->request;
    a.object = q.object;
    if (armed && lr_header(&r->fault)) {
        pbx_ipc_prompt_reply bad = a;
        bad.answer = PBX_IPC_ANSWER_DENY;
        n = pbx_ipc_prompt_reply_encode(f->request, &bad, out, sizeof(out),
                                        &n) == PBX_OK
                ? n
                : 0U;
        lr_poison_send(r, r->p.ttyd, f, out, n, false);
    }
    if (armed) {
        lr_e64(&r->fault, LR_F_SESSION, &a.session);
        lr_e32(&r->fault, LR_F_REALM, &a.realm);
        lr_e64(&r->fault, LR_F_JOB_ID, &a.job_id);
        lr_e32(&r->fault, LR_F_JOB_GEN, &a.job_gen);
        lr_e32(&r->fault, LR_F_REQ_INDEX, &a.request.index);
        lr_e32(&r->fault, LR_F_REQ_GEN, &a.request.gen);
        lr_e64(&r->fault, LR_F_OBJ_ID, &a.object.id);
        lr_e32(&r->fault, LR_F_OBJ_GEN, &a.object.gen);
    }
    n = pbx_ipc_prompt_reply_encode(f->request, &a, out, sizeof(out), &n) ==
                PBX_OK
            ? n
            : 0U;
    int none = -1;
    lr_deliver(r, armed, r->p.ttyd, f, out, n, &none, 0);
}

/* procd: INSTALL, answered with a manage-only handle (our end kept). */
static void lr_on_install(lr_run *r, const pbx_ipc_frame *f)
{
    pbx_ipc_install q;
    uint8_t out[128];
    size_t n = 0;
    if (pbx_ipc_install_decode(f, &q) != PBX_OK) {
        return;
    }
    bool armed = lr_armed(r, PBX_IPC_OP_INSTALL, 0);
    pbx_ipc_install_reply ir = {PBX_IPC_HANDLE_MANAGE_ONLY, q.target.slot,
                                q.grant, q.target.process_id,
                                q.target.process_gen};
    if (armed && lr_header(&r->fault)) {
        pbx_ipc_install_reply bad = ir;
        bad.installed_slot++;
        n = pbx_ipc_install_reply_encode(f->request, &bad, out, sizeof(out),
                                         &n) == PBX_OK
                ? n
                : 0U;
        lr_poison_send(r, r->p.procd, f, out, n, true);
    }
    uint8_t honest[128];
    size_t hn = 0;
    (void)pbx_ipc_install_reply_encode(f->request, &ir, honest, sizeof(honest),
                                       &hn);
    if (armed) {
        lr_e64(&r->fault, LR_F_PROC_ID, &ir.target_process_id);
        lr_e32(&r->fault, LR_F_PROC_GEN, &ir.target_process_gen);
        lr_e32(&r->fault, LR_F_GRANT_INDEX, &ir.grant.index);
        lr_e32(&r->fault, LR_F_GRANT_GEN, &ir.grant.gen);
        lr_e32(&r->fault, LR_F_SLOT, &ir.installed_slot);
        if (r->fault.how == LR_HOW_STAGING) {
            ir.handle_kind = PBX_IPC_HANDLE_STAGING;
        }
    }
    int fd = lr_pair(r, false, NULL);
    n = pbx_ipc_install_reply_encode(f->request, &ir, out, sizeof(out), &n) ==
                PBX_OK
            ? n
            : 0U;
    lr_zero_patch(&r->fault, out, honest, n);
    lr_deliver(r, armed, r->p.procd, f, out, n, &fd, 1);
}

/* vfsd: DETACH and RETIRE acknowledgements echo the request exactly. */
static void lr_on_vfsd(lr_run *r, const pbx_ipc_frame *f)
{
    uint8_t out[128];
    size_t n = 0;
    int none = -1;
    bool armed = lr_armed(r, f->op, 0);
    if (f->op == PBX_IPC_OP_DETACH) {
        pbx_ipc_detach q;
        if (pbx_ipc_detach_decode(f, &q) != PBX_OK) {
            return;
        }
        if (armed && lr_header(&r->fault)) {
            pbx_ipc_detach bad = q;
            bad.object.id++;
            n = pbx_ipc_detach_reply_encode(f->request, &bad, out, sizeof(out),
                                            &n) == PBX_OK
                    ? n
                    : 0U;
            lr_poison_send(r, r->p.vfsd, f, out, n, false);
        }
        if (armed) {
            lr_e64(&r->fault, LR_F_OBJ_ID, &q.object.id);
            lr_e32(&r->fault, LR_F_OBJ_GEN, &q.object.gen);
        }
        n = pbx_ipc_detach_reply_encode(f->request, &q, out, sizeof(out), &n) ==
                    PBX_OK
                ? n
                : 0U;
    } else {
        pbx_ipc_retire q;
        if (pbx_ipc_retire_decode(f, &q) != PBX_OK) {
            return;
        }
        if (armed && lr_header(&r->fault)) {
            /* A wrong RETIRE body is refused as a wrong header is (the
             * call stays out), so a poisoned body would show nothing:
             * the lie is the honest body under a wrong header, and
             * nothing follows it. Refused, RETIRE is asked again at its
             * deadline (the row's two calls); taken, it never would. */
            n = pbx_ipc_retire_reply_encode(f->request, &q, out, sizeof(out),
                                            &n) == PBX_OK
                    ? n
                    : 0U;
            lr_poison_send(r, r->p.vfsd, f, out, n, false);
            return;
        }
        if (armed) {
            lr_e64(&r->fault, LR_F_OBJ_ID, &q.object.id);
            lr_e32(&r->fault, LR_F_OBJ_GEN, &q.object.gen);
            lr_e64(&r->fault, LR_F_SCOPE, &q.scope_id);
            lr_flip16(&r->fault, LR_F_CLASS, &q.object_class,
                      PBX_IPC_CLASS_FILE, PBX_IPC_CLASS_DIRECTORY);
        }
        n = pbx_ipc_retire_reply_encode(f->request, &q, out, sizeof(out), &n) ==
                    PBX_OK
                ? n
                : 0U;
    }
    lr_deliver(r, armed, r->p.vfsd, f, out, n, &none, 0);
}

/* ttyd: VIEW rows acknowledged exactly; WITHDRAW echoed. */
static void lr_on_view(lr_run *r, const pbx_ipc_frame *f)
{
    uint8_t out[128];
    size_t n = 0;
    int none = -1;
    if (f->op == PBX_IPC_OP_WITHDRAW) {
        pbx_ipc_withdraw w;
        bool armed = lr_armed(r, PBX_IPC_OP_WITHDRAW, 0);
        if (pbx_ipc_withdraw_decode(f, &w) != PBX_OK) {
            return;
        }
        if (armed && lr_header(&r->fault)) {
            pbx_ipc_withdraw bad = w;
            bad.object.id++;
            n = pbx_ipc_withdraw_reply_encode(f->request, &bad, out,
                                              sizeof(out), &n) == PBX_OK
                    ? n
                    : 0U;
            lr_poison_send(r, r->p.ttyd, f, out, n, false);
        }
        if (armed) {
            lr_e64(&r->fault, LR_F_OBJ_ID, &w.object.id);
            lr_e32(&r->fault, LR_F_OBJ_GEN, &w.object.gen);
        }
        if (pbx_ipc_withdraw_reply_encode(f->request, &w, out, sizeof(out),
                                          &n) == PBX_OK) {
            lr_deliver(r, armed, r->p.ttyd, f, out, n, &none, 0);
        }
        return;
    }
    pbx_ipc_view q;
    if (pbx_ipc_view_decode(f, &q) != PBX_OK) {
        return;
    }
    if (q.kind == (uint8_t)PBX_IPC_VIEW_ACTIVE) {
        r->last_slot = q.installed_slot;
    }
    bool armed = lr_armed(r, PBX_IPC_OP_VIEW, q.kind);
    pbx_ipc_view_ack a = {q.kind, q.grant};
    if (armed && lr_header(&r->fault)) {
        /* ACTIVE: a poisoned body, then the honest reply. REMOVE: as
         * RETIRE (lr_on_vfsd), the honest body under a wrong header and
         * nothing after it, so that only asking again completes it. */
        bool remove = q.kind != (uint8_t)PBX_IPC_VIEW_ACTIVE;
        pbx_ipc_view_ack bad = a;
        bad.kind = remove ? q.kind : (uint8_t)PBX_IPC_VIEW_REMOVE;
        n = pbx_ipc_view_reply_encode(f->request, &bad, out, sizeof(out), &n) ==
                    PBX_OK
                ? n
                : 0U;
        lr_poison_send(r, r->p.ttyd, f, out, n, false);
        if (remove) {
            return;
        }
    }
    if (armed) {
        lr_flip8(&r->fault, LR_F_KIND, &a.kind, PBX_IPC_VIEW_ACTIVE,
                 PBX_IPC_VIEW_REMOVE);
        lr_e32(&r->fault, LR_F_GRANT_INDEX, &a.grant.index);
        lr_e32(&r->fault, LR_F_GRANT_GEN, &a.grant.gen);
    }
    n = pbx_ipc_view_reply_encode(f->request, &a, out, sizeof(out), &n) ==
                PBX_OK
            ? n
            : 0U;
    lr_deliver(r, armed, r->p.ttyd, f, out, n, &none, 0);
}

/* Milliseconds on the monotonic clock. */
static long lr_now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void lr_answer(lr_run *r, const pbx_ipc_frame *f);

/* Answers the held request now, honestly (the lie was its delay). */
static void lr_replay(lr_run *r)
{
    uint8_t copy[PBX_IPC_FRAME_BYTES_MAX];
    size_t len = r->held_len;
    memcpy(copy, r->held, len);
    r->held_len = 0;
    pbx_ipc_frame f;
    /* An INSTALL or DETACH carried its object (closed on arrival). */
    if (pbx_ipc_frame_decode(copy, len, 0, &f) == PBX_OK ||
        pbx_ipc_frame_decode(copy, len, 1, &f) == PBX_OK) {
        lr_answer(r, &f);
    }
}

/* Cancels the first request exactly on the broker (LR_HOW_ENDED). */
static void lr_cancel_first(lr_run *r)
{
    uint8_t out[64];
    size_t n = 0;
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = r->req[0];
    if (pbx_ipc_cancel_encode(&c, out, sizeof(out), &n) == PBX_OK) {
        (void)lr_public(r->p.broker, out, n);
    }
}

/* The delaying lies: the call is held, dropped or outlived. Returns true
 * when the call was taken by one (and is not to be answered now). */
static bool lr_delay(lr_run *r, int from, const pbx_ipc_frame *f, uint8_t kind,
                     const uint8_t *buf, size_t len)
{
    lr_how how = r->fault.how;
    bool delaying = how == LR_HOW_SILENT || how == LR_HOW_LATE ||
                    how == LR_HOW_HOLD || how == LR_HOW_REORDER ||
                    how == LR_HOW_ENDED || how == LR_HOW_STALE;
    if (!delaying || len > sizeof(r->held) || !lr_armed(r, f->op, kind)) {
        return false;
    }
    memcpy(r->held, buf, len);
    r->held_len = len;
    r->held_route = from;
    if (how == LR_HOW_SILENT) {
        r->held_len = 0;
    } else if (how == LR_HOW_HOLD) {
        pbx_ipc_decision d;
        r->held_outcome =
            lr_decision(r->p.broker, r->req[0], &d) && r->wakes == 0U
                ? d.outcome
                : 0U;
        lr_replay(r);
    } else if (how == LR_HOW_ENDED) {
        lr_cancel_first(r);
        lr_replay(r);
    }
    return true;
}

/* Answers one peer call honestly, but for the armed lie. */
static void lr_answer(lr_run *r, const pbx_ipc_frame *fp)
{
    const pbx_ipc_frame f = *fp;
    /* RESOLVE comes only through a scope: matched by its request (the
     * scope may have hung up since a held RESOLVE arrived). */
    for (unsigned k = 0; k < r->nreq; k++) {
        if (f.op == PBX_IPC_OP_RESOLVE && r->req[k].index == f.request.index &&
            r->req[k].gen == f.request.gen) {
            lr_on_resolve(r, k, &f);
        }
    }
    if (f.op == PBX_IPC_OP_POLICY) {
        lr_on_policy(r, &f);
    } else if (f.op == PBX_IPC_OP_PROMPT) {
        lr_on_prompt(r, &f);
    } else if (f.op == PBX_IPC_OP_VIEW || f.op == PBX_IPC_OP_WITHDRAW) {
        lr_on_view(r, &f);
    } else if (f.op == PBX_IPC_OP_INSTALL) {
        lr_on_install(r, &f);
    } else if (f.op == PBX_IPC_OP_DETACH || f.op == PBX_IPC_OP_RETIRE) {
        lr_on_vfsd(r, &f);
    }
}

/* Handles one message from a peer-side descriptor (its descriptors
 * already closed: the harness drops the copies it is sent). */
static void lr_handle(lr_run *r, int from, const uint8_t *buf, size_t len,
                      int nfds)
{
    pbx_ipc_frame f;
    pbx_ipc_view v;
    if (pbx_ipc_frame_decode(buf, len, (uint16_t)nfds, &f) != PBX_OK) {
        return;
    }
    if (from == r->p.launchd) {
        pbx_ipc_wake w;
        if (pbx_ipc_wake_decode(&f, &w) == PBX_OK) {
            r->woken[r->wakes % 8U] = f.request;
            r->wakes++;
        }
        if (r->held_len > 0U && r->fault.how == LR_HOW_LATE) {
            lr_replay(r);
        }
        return;
    }
    uint8_t kind =
        f.op == PBX_IPC_OP_VIEW && pbx_ipc_view_decode(&f, &v) == PBX_OK
            ? v.kind
            : 0U;
    r->seen[lr_op_slot(f.op, kind)]++;
    if (r->cancel_at != 0U && f.op == r->cancel_at) {
        /* The client gives up while this call is out (not the lie). */
        r->cancel_at = 0U;
        lr_cancel_first(r);
    }
    if (lr_delay(r, from, &f, kind, buf, len)) {
        return;
    }
    if (r->held_len > 0U && r->fault.how == LR_HOW_STALE &&
        f.op == r->fault.op) {
        /* The ended call's reply again, before this call is answered: a
         * stale generation of a request record that may be reused. */
        size_t keep = r->held_len;
        lr_replay(r);
        r->held_len = keep;
        r->stale_sent++;
    }
    lr_answer(r, &f);
    /* Out of order: the held call of the first request is answered right
     * after the same call of the second. */
    if (r->held_len > 0U && r->fault.how == LR_HOW_REORDER &&
        f.op == r->fault.op) {
        lr_replay(r);
    }
}

/* Receives and handles one message on fd; a scope's hang-up closes our
 * end of it. */
static void lr_take(lr_run *r, int fd, unsigned scope_k)
{
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    int fds[16];
    int nfds = 0;
    long n = e2e_recv(fd, buf, sizeof(buf), fds, 16, &nfds, 0);
    for (int i = 0; i < nfds; i++) {
        (void)close(fds[i]);
    }
    if (n == 0 && scope_k < LR_REQS_MAX) {
        (void)close(r->scope[scope_k]);
        r->scope[scope_k] = -1;
        return;
    }
    if (n > 0) {
        lr_handle(r, fd, buf, (size_t)n, nfds);
    }
}

/* One poll over every peer-side descriptor, handling what is ready. */
static void lr_step(lr_run *r, int ms)
{
    struct pollfd pf[4 + LR_REQS_MAX];
    int routes[4] = {r->p.vfsd, r->p.ttyd, r->p.procd, r->p.launchd};
    nfds_t n = 0;
    for (unsigned i = 0; i < 4U; i++) {
        pf[n++] = (struct pollfd){routes[i], POLLIN, 0};
    }
    for (unsigned k = 0; k < r->nreq; k++) {
        pf[n++] = (struct pollfd){r->scope[k], POLLIN, 0};
    }
    if (poll(pf, n, ms) <= 0) {
        return;
    }
    for (nfds_t i = 0; i < n; i++) {
        if (pf[i].fd >= 0 && (pf[i].revents & (POLLIN | POLLHUP)) != 0) {
            lr_take(r, pf[i].fd, i >= 4U ? (unsigned)(i - 4U) : LR_REQS_MAX);
        }
    }
}

bool lr_serve(lr_run *r, unsigned want, int ms)
{
    long end = lr_now_ms() + e2e_slow(ms);
    while (r->wakes < want && lr_now_ms() < end) {
        lr_step(r, 20);
    }
    return r->wakes >= want;
}

/* Whether one of the last 8 WAKEs named id. */
static bool lr_woken(const lr_run *r, pbx_ipc_id id)
{
    for (unsigned i = 0; i < 8U && i < r->wakes; i++) {
        if (r->woken[i].index == id.index && r->woken[i].gen == id.gen) {
            return true;
        }
    }
    return false;
}

bool lr_serve_for(lr_run *r, pbx_ipc_id id, int ms)
{
    long end = lr_now_ms() + e2e_slow(ms);
    while (!lr_woken(r, id) && lr_now_ms() < end) {
        lr_step(r, 20);
    }
    return lr_woken(r, id);
}

/* Whether every kept end sees its far end closed (each seen is closed
 * and forgotten, so nothing is read twice). */
static bool lr_all_gone(int *list, unsigned n)
{
    bool all = true;
    for (unsigned i = 0; i < n; i++) {
        if (list[i] >= 0 && lr_gone(list[i], 0)) {
            (void)close(list[i]);
            list[i] = -1;
        }
        all = all && list[i] < 0;
    }
    return all;
}

bool lr_settle(lr_run *r, int ms)
{
    long end = lr_now_ms() + e2e_slow(ms);
    while (lr_now_ms() < end) {
        lr_step(r, 20);
        bool scopes = true;
        for (unsigned k = 0; k < r->nreq; k++) {
            scopes = scopes && r->scope[k] < 0;
        }
        bool kept = lr_all_gone(r->kept, r->nkept);
        bool poison = lr_all_gone(r->poison, r->npoison);
        bool asked = true;
        for (unsigned i = 0; i < 8U; i++) {
            asked = asked && r->seen[i] >= r->want[i];
        }
        if (scopes && kept && poison && asked &&
            e2e_fd_count(r->p.pid) == r->baseline) {
            return true;
        }
    }
    return false;
}
