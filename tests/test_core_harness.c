/*
 * test_core_harness.c: the scripted ops table, fake slot table, peer
 * answers and public client behind the core's scripted-ops tests.
 */
#include "test_core_harness.h"

#include "runner/pbx_test.h"
#include "sha2/pbx_sha2.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Appends one formatted token to the trace, space-separated. */
__attribute__((format(printf, 2, 3))) static void th_log(th_h *h,
                                                         const char *fmt, ...)
{
    size_t at = strlen(h->trace);
    if (at + 2U >= sizeof(h->trace)) {
        return;
    }
    if (at > 0U) {
        h->trace[at++] = ' ';
        h->trace[at] = '\0';
    }
    va_list ap;
    va_start(ap, fmt);
    (void)vsnprintf(h->trace + at, sizeof(h->trace) - at, fmt, ap);
    va_end(ap);
}

/* Whether slot holds a real capability (not empty, not a placeholder). */
static bool th_has_cap(const th_h *h, uint32_t slot)
{
    return slot < TH_SLOTS &&
           h->slots[slot].kind != (uint32_t)PBX_CAPABI_KIND_EMPTY &&
           h->slots[slot].kind != (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER;
}

/* Empties slot after a deletion or a transfer (a reservation stays). */
static void th_vacate(th_h *h, uint32_t slot)
{
    th_slot *s = &h->slots[slot];
    s->kind = s->reserved ? (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER
                          : (uint32_t)PBX_CAPABI_KIND_EMPTY;
    s->rights = 0U;
    s->prov = 0U;
}

uint32_t th_put_cap(th_h *h, uint32_t slot, uint32_t kind, uint32_t rights,
                    uint32_t prov)
{
    if (slot == PBX_CORE_SLOT_NONE) {
        for (uint32_t s = TH_T_FIRST; s < TH_T_FIRST + TH_T_COUNT; s++) {
            if (!h->slots[s].reserved &&
                h->slots[s].kind == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
                slot = s;
                break;
            }
        }
    }
    PBX_ASSERT(slot < TH_SLOTS && !th_has_cap(h, slot));
    h->slots[slot].kind = kind;
    h->slots[slot].rights = rights;
    h->slots[slot].prov = prov;
    h->handed++;
    return slot;
}

/* A received endpoint receipt with rights, in the lowest free slot. */
static uint32_t th_receipt(th_h *h, uint32_t rights)
{
    return th_put_cap(h, PBX_CORE_SLOT_NONE, PBX_CAPABI_KIND_ENDPOINT, rights,
                      PBX_CAPABI_PROV_RECEIVED);
}

/* ---- ops ------------------------------------------------------------- */

static void th_op_query(void *user, uint32_t slot, pbx_capabi_observed *out)
{
    const th_h *h = user;
    out->slot = slot;
    out->kind = slot < TH_SLOTS ? h->slots[slot].kind : 0U;
    out->rights = slot < TH_SLOTS ? h->slots[slot].rights : 0U;
    out->provenance = slot < TH_SLOTS ? h->slots[slot].prov : 0U;
}

/* The identity observation: the configured scope identity for a held
 * received endpoint (0 keeps the core's identity-free binding). */
static uint64_t th_op_identity(void *user, uint32_t slot)
{
    const th_h *h = user;
    if (!th_has_cap(h, slot)) {
        return 0U;
    }
    return h->slot_identity[slot] != 0U ? h->slot_identity[slot]
                                        : h->scope_identity;
}

static pbx_core_delete th_op_delete(void *user, uint32_t slot)
{
    th_h *h = user;
    pbx_core_delete d = PBX_CORE_DELETE_OK;
    if (slot == h->hold_slot) {
        return PBX_CORE_DELETE_TRANSIENT;
    }
    if (h->hold_all && th_has_cap(h, slot)) {
        th_log(h, "del~%u", slot);
        return PBX_CORE_DELETE_TRANSIENT;
    }
    if (h->dhead != h->dtail) {
        d = h->dels[h->dhead++ % TH_SCRIPT_MAX];
    }
    if (!th_has_cap(h, slot)) {
        h->violations++;
        th_log(h, "del?%u", slot);
        return PBX_CORE_DELETE_OK;
    }
    if (d == PBX_CORE_DELETE_OK) {
        th_vacate(h, slot);
        h->deleted++;
        th_log(h, "del=%u", slot);
    } else {
        th_log(h, d == PBX_CORE_DELETE_TRANSIENT ? "del~%u" : "del!%u", slot);
    }
    return d;
}

static bool th_op_reserve(void *user, uint32_t *slot_out)
{
    th_h *h = user;
    for (uint32_t s = TH_T_FIRST; s < TH_T_FIRST + TH_T_COUNT; s++) {
        if (!h->slots[s].reserved &&
            h->slots[s].kind == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
            h->slots[s].reserved = true;
            h->slots[s].kind = PBX_CAPABI_KIND_PLACEHOLDER;
            *slot_out = s;
            th_log(h, "reserve=%u", s);
            return true;
        }
    }
    return false;
}

static void th_op_release(void *user, uint32_t slot)
{
    th_h *h = user;
    if (slot >= TH_SLOTS || !h->slots[slot].reserved || th_has_cap(h, slot)) {
        h->violations++;
    }
    if (slot < TH_SLOTS) {
        h->slots[slot].reserved = false;
        h->slots[slot].kind = PBX_CAPABI_KIND_EMPTY;
    }
    th_log(h, "release=%u", slot);
}

static pbx_core_io th_op_alias(void *user, uint32_t object, uint32_t *alias)
{
    th_h *h = user;
    pbx_core_io io = PBX_CORE_IO_OK;
    if (h->ahead != h->atail) {
        io = h->aliases[h->ahead++ % TH_SCRIPT_MAX];
    }
    if (!th_has_cap(h, object)) {
        h->violations++;
    }
    if (io != PBX_CORE_IO_OK) {
        th_log(h, io == PBX_CORE_IO_BUSY ? "alias:busy" : "alias:fail");
        return io;
    }
    *alias = th_put_cap(h, PBX_CORE_SLOT_NONE, PBX_CAPABI_KIND_ENDPOINT,
                        h->alias_rights, h->alias_prov);
    th_log(h, "alias=%u", *alias);
    return io;
}

static pbx_core_io th_op_wake(void *user, const uint8_t *frame, size_t len)
{
    th_h *h = user;
    pbx_core_io io = PBX_CORE_IO_OK;
    pbx_ipc_frame f;
    pbx_ipc_wake w;
    if (h->whead != h->wtail) {
        io = h->wakes[h->whead++ % TH_SCRIPT_MAX];
    }
    if (pbx_ipc_frame_decode(frame, len, 0, &f) != PBX_OK ||
        pbx_ipc_wake_decode(&f, &w) != PBX_OK) {
        h->violations++;
        return PBX_CORE_IO_FAILED;
    }
    if (io != PBX_CORE_IO_OK) {
        th_log(h, io == PBX_CORE_IO_BUSY ? "wake:busy" : "wake:fail");
        return io;
    }
    h->last_wake = f.request;
    h->wake_count++;
    th_log(h, "wake");
    return io;
}

/* ---- peer answers ---------------------------------------------------- */

/* The answer context for one reply being built from a pending call. */
typedef struct th_call {
    th_h *h;
    th_reply *r;
    pbx_ipc_frame f;
    th_script s;
} th_call;

/* Applies the armed one-shot edit to rec when this call is its op. */
static void th_edit_apply(th_call *k, void *rec)
{
    th_h *h = k->h;
    if (h->edit != NULL && h->edit_op == k->f.op) {
        th_edit e = h->edit;
        h->edit = NULL;
        e(h, k->f.op, rec);
    }
}

/* Attaches one received receipt with rights to the reply. */
static void th_recv(th_call *k, uint32_t rights)
{
    PBX_ASSERT(k->r->n < PBX_ARRAY_LEN(k->r->slots));
    k->r->slots[k->r->n++] = th_receipt(k->h, rights);
}

/* Attaches a surplus receipt when the script asks for one. */
static void th_surplus(th_call *k)
{
    if ((k->s.mut & (uint32_t)TH_M_SURPLUS) != 0U) {
        th_recv(k, PBX_CAPABI_RIGHT_SEND);
    }
}

static pbx_err th_ans_resolve(th_call *k)
{
    pbx_ipc_resolve q;
    pbx_ipc_resolve_reply r;
    pbx_err err = pbx_ipc_resolve_decode(&k->f, &q);
    if (err != PBX_OK) {
        return err;
    }
    memset(&r, 0, sizeof(r));
    r.operation = q.operation;
    memcpy(r.selector_digest, q.selector_digest, PBX_IPC_DIGEST_BYTES);
    if (k->s.ans == TH_NOT_FOUND) {
        r.result = PBX_IPC_RESOLVE_NOT_FOUND;
        r.object_class =
            k->s.arg != 0U ? (uint16_t)k->s.arg : (uint16_t)q.object_class;
    } else if (k->s.ans == TH_DENIED) {
        r.result = PBX_IPC_RESOLVE_DENIED;
    } else {
        r.result = PBX_IPC_RESOLVE_FOUND;
        r.object_class = q.object_class;
        r.object.id = 0x0B1EC7000U + ++k->h->object_seq;
        r.object.gen = 3U;
        r.scope_id = TH_SCOPE_ID;
        if ((k->s.mut & (uint32_t)TH_M_WRONG_SCOPE) != 0U) {
            r.scope_id++;
        }
        if ((k->s.mut & (uint32_t)TH_M_WRONG_ECHO) != 0U) {
            r.selector_digest[0] ^= 1U;
        }
        uint32_t rights = (k->s.mut & (uint32_t)TH_M_BAD_RIGHTS) != 0U
                              ? PBX_CAPABI_RIGHT_SEND | PBX_CAPABI_RIGHT_MANAGE
                              : PBX_CAPABI_RIGHT_SEND;
        th_recv(k, rights);
    }
    th_edit_apply(k, &r);
    th_surplus(k);
    return pbx_ipc_resolve_reply_encode(k->f.request, &r, k->r->frame,
                                        sizeof(k->r->frame), &k->r->len);
}

static pbx_err th_ans_policy(th_call *k)
{
    pbx_ipc_policy q;
    pbx_ipc_policy_reply r;
    pbx_err err = pbx_ipc_policy_decode(&k->f, &q);
    if (err != PBX_OK) {
        return err;
    }
    /* The happy path for an exceptional request is the prompt: ALLOW
     * with an EXCEPTIONAL echo does not even encode (unless a test edits
     * the echo or patches the bytes on purpose). */
    bool prompt = k->s.ans == TH_PROMPT ||
                  (q.ctx.urgency == (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL &&
                   k->s.ans != TH_DENY &&
                   (k->h->edit == NULL || k->h->edit_op != k->f.op) &&
                   (k->s.mut & (uint32_t)TH_M_EXC_ALLOW) == 0U);
    r.verdict = k->s.ans == TH_DENY ? (uint8_t)PBX_IPC_VERDICT_DENY
                : prompt            ? (uint8_t)PBX_IPC_VERDICT_PROMPT
                                    : (uint8_t)PBX_IPC_VERDICT_ALLOW;
    r.urgency = q.ctx.urgency;
    r.realm = q.ctx.realm;
    r.session = q.ctx.session;
    if ((k->s.mut & (uint32_t)TH_M_WRONG_ECHO) != 0U) {
        r.session ^= 1U;
    }
    if ((k->s.mut & (uint32_t)TH_M_EXC_ALLOW) != 0U) {
        r.urgency = PBX_IPC_URGENCY_ROUTINE;
    }
    th_edit_apply(k, &r);
    th_surplus(k);
    err = pbx_ipc_policy_reply_encode(k->f.request, &r, k->r->frame,
                                      sizeof(k->r->frame), &k->r->len);
    if ((k->s.mut & (uint32_t)TH_M_EXC_ALLOW) != 0U && err == PBX_OK) {
        /* No encoder emits ALLOW + EXCEPTIONAL: patch the urgency byte. */
        k->r->frame[PBX_IPC_HEADER_BYTES + 1U] = PBX_IPC_URGENCY_EXCEPTIONAL;
    }
    return err;
}

static pbx_err th_ans_prompt(th_call *k)
{
    pbx_ipc_prompt q;
    pbx_ipc_prompt_reply r;
    pbx_err err = pbx_ipc_prompt_decode(&k->f, &q);
    if (err != PBX_OK) {
        return err;
    }
    memset(&k->h->last_prompt_ctx, 0, sizeof(k->h->last_prompt_ctx));
    k->h->last_prompt_ctx.ctx = q.ctx;
    k->h->last_prompt_ctx.label = q.label;
    k->h->last_prompt_ctx.selector_len = q.selector_len;
    memcpy(k->h->last_prompt_ctx.selector_digest, q.selector_digest,
           PBX_IPC_DIGEST_BYTES);
    memset(&r, 0, sizeof(r));
    if (k->s.ans == TH_RETRY) {
        r.retry = true;
    } else {
        r.answer = k->s.ans == TH_USER_DENY ? (uint8_t)PBX_IPC_ANSWER_DENY
                                            : (uint8_t)PBX_IPC_ANSWER_APPROVE;
        r.realm = q.ctx.realm;
        r.session = q.ctx.session;
        r.job_id = q.ctx.job_id;
        r.job_gen = q.ctx.job_gen;
        r.request = k->f.request;
        r.object = q.object;
        if ((k->s.mut & (uint32_t)TH_M_WRONG_ECHO) != 0U) {
            r.object.gen++;
        }
    }
    if (!r.retry) {
        th_edit_apply(k, &r);
    }
    th_surplus(k);
    return pbx_ipc_prompt_reply_encode(k->f.request, &r, k->r->frame,
                                       sizeof(k->r->frame), &k->r->len);
}

static pbx_err th_ans_view(th_call *k)
{
    pbx_ipc_view_ack r;
    pbx_err err = pbx_ipc_view_decode(&k->f, &k->h->last_view);
    if (err != PBX_OK) {
        return err;
    }
    r.kind = k->h->last_view.kind;
    r.grant = k->h->last_view.grant;
    if ((k->s.mut & (uint32_t)TH_M_WRONG_ECHO) != 0U) {
        r.grant.gen++;
    }
    th_edit_apply(k, &r);
    th_surplus(k);
    return pbx_ipc_view_reply_encode(k->f.request, &r, k->r->frame,
                                     sizeof(k->r->frame), &k->r->len);
}

static pbx_err th_ans_install(th_call *k)
{
    pbx_ipc_install q;
    pbx_ipc_install_reply r;
    pbx_err err = pbx_ipc_install_decode(&k->f, &q);
    if (err != PBX_OK) {
        return err;
    }
    bool staging = k->s.ans == TH_STAGING;
    r.handle_kind = staging ? (uint8_t)PBX_IPC_HANDLE_STAGING
                            : (uint8_t)PBX_IPC_HANDLE_MANAGE_ONLY;
    r.installed_slot = q.target.slot;
    if ((k->s.mut & (uint32_t)TH_M_WRONG_SLOT) != 0U) {
        r.installed_slot++;
    }
    r.grant = q.grant;
    if ((k->s.mut & (uint32_t)TH_M_WRONG_ECHO) != 0U) {
        r.grant.gen++;
    }
    r.target_process_id = q.target.process_id;
    r.target_process_gen = q.target.process_gen;
    uint32_t rights = staging ? PBX_CAPABI_RIGHT_SEND : PBX_CAPABI_RIGHT_MANAGE;
    if ((k->s.mut & (uint32_t)TH_M_BAD_RIGHTS) != 0U) {
        rights |= PBX_CAPABI_RIGHT_SEND;
    }
    th_edit_apply(k, &r);
    th_recv(k, rights);
    th_surplus(k);
    return pbx_ipc_install_reply_encode(k->f.request, &r, k->r->frame,
                                        sizeof(k->r->frame), &k->r->len);
}

static pbx_err th_ans_detach(th_call *k)
{
    pbx_ipc_detach q;
    pbx_err err = pbx_ipc_detach_decode(&k->f, &q);
    if (err != PBX_OK) {
        return err;
    }
    if ((k->s.mut & (uint32_t)TH_M_WRONG_ECHO) != 0U) {
        q.object.gen++;
    }
    if ((k->s.mut & (uint32_t)TH_M_ERR_STATUS) != 0U) {
        return pbx_ipc_status_reply_encode(PBX_IPC_OP_DETACH, k->f.request,
                                           PBX_E_IPC_STATUS, k->r->frame,
                                           sizeof(k->r->frame), &k->r->len);
    }
    th_edit_apply(k, &q);
    th_surplus(k);
    return pbx_ipc_detach_reply_encode(k->f.request, &q, k->r->frame,
                                       sizeof(k->r->frame), &k->r->len);
}

static pbx_err th_ans_retire(th_call *k)
{
    pbx_ipc_retire q;
    pbx_err err = pbx_ipc_retire_decode(&k->f, &q);
    if (err != PBX_OK) {
        return err;
    }
    if ((k->s.mut & (uint32_t)TH_M_WRONG_ECHO) != 0U) {
        q.scope_id++;
    }
    th_edit_apply(k, &q);
    th_surplus(k);
    return pbx_ipc_retire_reply_encode(k->f.request, &q, k->r->frame,
                                       sizeof(k->r->frame), &k->r->len);
}

/* WITHDRAW: ttyd acknowledges by echoing the object (a wrong echo
 * changes its generation; any answer ends the need for it). */
static pbx_err th_ans_withdraw(th_call *k)
{
    pbx_ipc_withdraw q;
    pbx_err err = pbx_ipc_withdraw_decode(&k->f, &q);
    if (err != PBX_OK) {
        return err;
    }
    if ((k->s.mut & (uint32_t)TH_M_WRONG_ECHO) != 0U) {
        q.object.gen++;
    }
    th_surplus(k);
    return pbx_ipc_withdraw_reply_encode(k->f.request, &q, k->r->frame,
                                         sizeof(k->r->frame), &k->r->len);
}

/* The trace name of a decoded peer request. */
static const char *th_op_name(const pbx_ipc_frame *f)
{
    switch (f->op) {
    case PBX_IPC_OP_RESOLVE:
        return "resolve";
    case PBX_IPC_OP_DETACH:
        return "detach";
    case PBX_IPC_OP_RETIRE:
        return "retire";
    case PBX_IPC_OP_POLICY:
        return "policy";
    case PBX_IPC_OP_PROMPT:
        return "prompt";
    case PBX_IPC_OP_WITHDRAW:
        return "withdraw";
    case PBX_IPC_OP_VIEW:
        return f->body != NULL && f->body[0] == PBX_IPC_VIEW_ACTIVE ? "view+"
                                                                    : "view-";
    case PBX_IPC_OP_INSTALL:
        return "install";
    default:
        return "unknown";
    }
}

/* Builds the scripted reply for a decoded request. */
static pbx_err th_answer(th_call *k)
{
    switch (k->f.op) {
    case PBX_IPC_OP_RESOLVE:
        return th_ans_resolve(k);
    case PBX_IPC_OP_POLICY:
        return th_ans_policy(k);
    case PBX_IPC_OP_PROMPT:
        return th_ans_prompt(k);
    case PBX_IPC_OP_WITHDRAW:
        return th_ans_withdraw(k);
    case PBX_IPC_OP_VIEW:
        return th_ans_view(k);
    case PBX_IPC_OP_INSTALL:
        return th_ans_install(k);
    case PBX_IPC_OP_DETACH:
        return th_ans_detach(k);
    case PBX_IPC_OP_RETIRE:
        return th_ans_retire(k);
    default:
        return PBX_E_IPC_UNKNOWN_OP;
    }
}

/* Logs a sent call with its slots: via, sent (moved '>' or copied '^'). */
static void th_log_call(th_h *h, const pbx_core_call *c, const char *name,
                        const char *suffix)
{
    char extra[64] = "";
    if (c->via_slot != PBX_CORE_SLOT_NONE) {
        (void)snprintf(extra, sizeof(extra), "@%u", c->via_slot);
    } else if (c->send_slot != PBX_CORE_SLOT_NONE) {
        (void)snprintf(extra, sizeof(extra), "%c%u", c->send_copy ? '^' : '>',
                       c->send_slot);
    }
    th_log(h, "%s%s%s", name, extra, suffix);
}

/* The script FIFO a call's route answers from: a scoped call is answered
 * by vfsd, behind the scope. */
static uint32_t th_script_route(uint32_t route)
{
    return route == PBX_CORE_ROUTE_SCOPE ? (uint32_t)PBX_CORE_ROUTE_VFSD
                                         : route;
}

/* Queues the pending reply to a call the fake peer accepted. */
static void th_pend_push(th_h *h, const pbx_core_call *c,
                         const pbx_ipc_frame *f, const th_script *s,
                         uint16_t caps)
{
    PBX_ASSERT(h->npend < TH_PEND_MAX &&
               c->frame_len <= PBX_IPC_FRAME_BYTES_MAX);
    th_pend *p = &h->pend[h->npend++];
    p->route = c->route;
    p->via_slot = c->via_slot;
    p->seq = f->seq;
    p->op = f->op;
    p->caps = caps;
    p->id = f->request;
    p->s = *s;
    (void)snprintf(p->name, sizeof(p->name), "%s", th_op_name(f));
    p->len = c->frame_len;
    memcpy(p->frame, c->frame, c->frame_len);
}

static pbx_core_io th_op_send(void *user, const pbx_core_call *c)
{
    th_h *h = user;
    th_script s = {TH_OK, 0U, 0U};
    pbx_ipc_frame f;
    uint16_t sent = c->send_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    bool scoped = c->route == PBX_CORE_ROUTE_SCOPE;
    if ((c->route >= PBX_CORE_ROUTE_COUNT && !scoped) ||
        c->route == PBX_CORE_ROUTE_LAUNCHD ||
        pbx_ipc_frame_decode(c->frame, c->frame_len, sent, &f) != PBX_OK ||
        (sent != 0U && !th_has_cap(h, c->send_slot)) ||
        scoped != (c->via_slot != PBX_CORE_SLOT_NONE) ||
        (scoped && !th_has_cap(h, c->via_slot))) {
        h->violations++;
        th_log(h, "badcall");
        return PBX_CORE_IO_FAILED;
    }
    uint32_t q = th_script_route(c->route);
    if (h->shead[q] != h->stail[q]) {
        s = h->script[q][h->shead[q]++ % TH_SCRIPT_MAX];
    }
    if (s.ans == TH_BUSY || s.ans == TH_FAIL) {
        th_log_call(h, c, th_op_name(&f), s.ans == TH_BUSY ? ":busy" : ":fail");
        return s.ans == TH_BUSY ? PBX_CORE_IO_BUSY : PBX_CORE_IO_FAILED;
    }
    if (sent != 0U && !c->send_copy) {
        th_vacate(h, c->send_slot);
        h->transferred++;
    }
    th_pend_push(h, c, &f, &s, sent);
    h->sends++;
    h->route_sends[c->route]++;
    th_log_call(h, c, th_op_name(&f), "");
    return PBX_CORE_IO_OK;
}

uint32_t th_find(const th_h *h, const char *name)
{
    for (uint32_t k = 0; k < h->npend; k++) {
        if (strcmp(h->pend[k].name, name) == 0) {
            return k;
        }
    }
    return TH_NONE;
}

void th_reply_build(th_h *h, uint32_t k, th_reply *r)
{
    PBX_ASSERT(k < h->npend);
    const th_pend *p = &h->pend[k];
    memset(r, 0, sizeof(*r));
    th_call c = {h, r, {0}, p->s};
    /* As the reference vfsd: a scoped call (RESOLVE) is answered on the
     * vfsd route, never through the scope. */
    r->route = th_script_route(p->route);
    r->via_slot = PBX_CORE_SLOT_NONE;
    if (pbx_ipc_frame_decode(p->frame, p->len, p->caps, &c.f) != PBX_OK ||
        th_answer(&c) != PBX_OK ||
        pbx_ipc_frame_set_seq(r->frame, r->len, p->seq) != PBX_OK) {
        h->violations++;
    }
    if (h->log_replies) {
        th_log(h, "re:%s", p->name);
    }
    for (size_t i = 0; i < r->n; i++) {
        th_log(h, "<%u", r->slots[i]);
    }
}

pbx_err th_reply_send(th_h *h, const th_reply *r)
{
    h->delivered++;
    return pbx_core_on_peer_reply(&h->core, r->route, r->via_slot, r->frame,
                                  r->len, r->slots, r->n);
}

void th_drop(th_h *h, uint32_t k)
{
    PBX_ASSERT(k < h->npend);
    memmove(&h->pend[k], &h->pend[k + 1U],
            (size_t)(h->npend - k - 1U) * sizeof(h->pend[0]));
    h->npend--;
}

pbx_err th_deliver(th_h *h, uint32_t k)
{
    static th_reply r;
    th_reply_build(h, k, &r);
    th_drop(h, k);
    pbx_err err = th_reply_send(h, &r);
    if (err != PBX_OK) {
        h->deliver_err = err;
    }
    return err;
}

uint32_t th_deliver_all(th_h *h)
{
    uint32_t n = 0;
    for (uint32_t guard = 0; guard < 10000U && h->npend > 0U; guard++) {
        n++;
        if (th_deliver(h, 0) != PBX_OK) {
            break;
        }
    }
    return n;
}

/* Delivers every pending reply except those to calls named name. */
static bool th_deliver_others(th_h *h, const char *name)
{
    uint32_t j = 0;
    for (uint32_t guard = 0; guard < 10000U && j < h->npend; guard++) {
        if (strcmp(h->pend[j].name, name) == 0) {
            j++;
        } else if (th_deliver(h, j) != PBX_OK) {
            h->step_err = h->deliver_err;
            return false;
        }
    }
    return true;
}

uint32_t th_run_to(th_h *h, const char *name)
{
    uint32_t k = TH_NONE;
    h->step_err = PBX_OK;
    for (uint32_t i = 0; i < 10000U && th_deliver_others(h, name); i++) {
        bool progressed = false;
        k = th_find(h, name);
        if (k != TH_NONE) {
            break;
        }
        h->step_err = pbx_core_step(&h->core, &progressed);
        if (h->step_err != PBX_OK || (!progressed && h->npend == 0U)) {
            break;
        }
    }
    return k;
}

pbx_err th_time(th_h *h, uint64_t now_ms)
{
    return pbx_core_on_time(&h->core, now_ms);
}

static const pbx_core_ops th_ops = {
    th_op_send,    th_op_query, th_op_delete, th_op_reserve,
    th_op_release, th_op_alias, th_op_wake,
};

/* ---- construction ---------------------------------------------------- */

/* Derives the arena layout for pools of n records and window calls
 * outstanding per deadline class. */
/* The prompts capacity the next harness gets (0: the default above). */
static uint32_t th_prompts;
/* The grants capacity the next harness gets (0: n, like every pool). */
static uint32_t th_grants;

static bool th_layout(uint32_t n, uint32_t window, const uint32_t *time_ms,
                      pbx_bootstrap_layout *out)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = n;
    }
    /* Three per request, two spare, and what BEGIN leaves free: one peer
     * reply's receipts whose deletion must be retried and one public
     * frame's headroom. */
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        3U * n + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        4U * n * PBX_CORE_SELECTOR_CHUNK_BYTES;
    /* n prompt records per job (pbx_core_prompt_share), so one job's
     * requests never wait for one unless a test says so (th_new_prompts). */
    g.capacity[PBX_BOOTSTRAP_POOL_PROMPTS] =
        th_prompts != 0U ? th_prompts : PBX_CORE_PROMPT_SHARE_DIVISOR * n;
    if (th_grants != 0U) {
        g.capacity[PBX_BOOTSTRAP_POOL_GRANTS] = th_grants;
    }
    g.call_window = window < PBX_BOOTSTRAP_CALL_WINDOW_MAX
                        ? window
                        : PBX_BOOTSTRAP_CALL_WINDOW_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] =
        PBX_BOOTSTRAP_CALL_ROUTES * g.call_window;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = time_ms != NULL ? time_ms[t] : 5000U;
    }
    return pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK &&
           pbx_bootstrap_layout_derive(&g, want, out) == PBX_OK;
}

th_h *th_new(uint32_t n)
{
    /* A window of n calls on every peer route. */
    return th_new_window(n, n);
}

th_h *th_new_prompts(uint32_t n, uint32_t prompts)
{
    th_prompts = prompts;
    th_h *h = th_new_times(n, n, NULL);
    th_prompts = 0U;
    return h;
}

th_h *th_new_grants(uint32_t n, uint32_t grants, uint32_t window)
{
    th_grants = grants;
    th_h *h = th_new_times(n, window, NULL);
    th_grants = 0U;
    return h;
}

th_h *th_new_window(uint32_t n, uint32_t window)
{
    return th_new_times(n, window, NULL);
}

th_h *th_new_times(uint32_t n, uint32_t window, const uint32_t *time_ms)
{
    pbx_bootstrap_layout l;
    pbx_capabi_layout slots;
    th_h *h = calloc(1, sizeof(*h));
    PBX_REQUIRE(h != NULL);
    PBX_REQUIRE(th_layout(n, window, time_ms, &l));
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, TH_T_FIRST, TH_T_COUNT) ==
                PBX_OK);
    h->arena = aligned_alloc(4096U, l.arena_bytes);
    PBX_REQUIRE(h->arena != NULL);
    h->deliver = true;
    h->badge = TH_BROKER;
    h->hold_slot = PBX_CORE_SLOT_NONE;
    h->alias_rights = PBX_CAPABI_RIGHT_SEND;
    h->alias_prov = PBX_CAPABI_PROV_LOCAL;
    PBX_REQUIRE(pbx_core_init(&h->core, &l, h->arena, l.arena_bytes, &slots,
                              &th_ops, h) == PBX_OK);
    pbx_core_set_identity(&h->core, th_op_identity);
    return h;
}

void th_free(th_h *h)
{
    free(h->arena);
    free(h);
}

void th_push(th_h *h, pbx_core_route route, th_ans ans, uint32_t mut,
             uint32_t arg)
{
    th_script s = {ans, mut, arg};
    PBX_ASSERT(h->stail[route] - h->shead[route] < TH_SCRIPT_MAX);
    h->script[route][h->stail[route]++ % TH_SCRIPT_MAX] = s;
}

void th_push_del(th_h *h, pbx_core_delete d)
{
    h->dels[h->dtail++ % TH_SCRIPT_MAX] = d;
}

void th_push_wake(th_h *h, pbx_core_io io)
{
    h->wakes[h->wtail++ % TH_SCRIPT_MAX] = io;
}

void th_push_alias(th_h *h, pbx_core_io io)
{
    h->aliases[h->atail++ % TH_SCRIPT_MAX] = io;
}

void th_set_edit(th_h *h, uint16_t op, th_edit edit, uint32_t field)
{
    h->edit = edit;
    h->edit_op = op;
    h->edit_field = field;
}

void th_clear_trace(th_h *h)
{
    h->trace[0] = '\0';
}

void th_default_begin(pbx_ipc_begin *b, const uint8_t *sel, uint32_t len)
{
    static const char entry[] = "/bin/viewer";
    static const char label[] = "open report";
    memset(b, 0, sizeof(*b));
    b->ctx.session = 0x5E55U;
    b->ctx.job_id = 0x70BU;
    b->ctx.job_gen = 2U;
    b->ctx.realm = 9U;
    b->ctx.operation = PBX_IPC_OPERATION_READ;
    b->ctx.object_class = PBX_IPC_CLASS_FILE;
    b->ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b->ctx.mode = PBX_IPC_MODE_INSTALL;
    b->ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    b->ctx.entry.len = (uint16_t)(sizeof(entry) - 1U);
    memcpy(b->ctx.entry.bytes, entry, sizeof(entry) - 1U);
    b->target.process_id = 0x9C0U;
    b->target.process_gen = 4U;
    b->target.slot = 40U;
    b->selector_len = len;
    PBX_ASSERT(pbx_sha2_digest(sel, len, b->selector_digest) == PBX_OK);
    b->label.len = (uint16_t)(sizeof(label) - 1U);
    memcpy(b->label.bytes, label, sizeof(label) - 1U);
}

/* ---- client ---------------------------------------------------------- */

uint32_t th_public(th_h *h, uint32_t badge, const uint8_t *frame, size_t len,
                   const uint32_t *slots, size_t n, pbx_err *core,
                   pbx_core_out *out)
{
    pbx_ipc_frame f;
    *core = pbx_core_on_public(&h->core, badge, frame, len, slots, n, out);
    if (out->len == 0U) {
        return UINT32_MAX;
    }
    uint16_t caps = out->transfer_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    if (pbx_ipc_frame_decode(out->frame, out->len, caps, &f) != PBX_OK) {
        h->violations++;
        return UINT32_MAX;
    }
    return f.status;
}

/* Sends a capability-free frame as h->badge; returns the reply status. */
static uint32_t th_send(th_h *h, const uint8_t *frame, size_t len,
                        pbx_core_out *out)
{
    pbx_err core = PBX_OK;
    uint32_t st = th_public(h, h->badge, frame, len, NULL, 0, &core, out);
    return core != PBX_OK ? (uint32_t)core : st;
}

uint32_t th_begin(th_h *h, const pbx_ipc_begin *b, pbx_ipc_id *id,
                  uint32_t *dest)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    pbx_ipc_frame f;
    pbx_ipc_begin_reply r;
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_begin_encode(b, buf, sizeof(buf), &n) == PBX_OK);
    uint32_t st = th_send(h, buf, n, &out);
    if (st == 0U) {
        PBX_ASSERT(pbx_ipc_frame_decode(out.frame, out.len, 0, &f) == PBX_OK);
        PBX_ASSERT(pbx_ipc_begin_reply_decode(&f, &r) == PBX_OK);
        *id = f.request;
        *dest = r.dest_slot;
    }
    return st;
}

uint32_t th_selector(th_h *h, pbx_ipc_id id, uint32_t off, const uint8_t *p,
                     uint32_t len)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static pbx_core_out out;
    pbx_ipc_selector s = {off, len, p};
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_selector_encode(id, &s, buf, sizeof(buf), &n) == PBX_OK);
    return th_send(h, buf, n, &out);
}

uint32_t th_commit(th_h *h, pbx_ipc_id id, uint32_t dest, uint32_t land)
{
    uint8_t buf[64];
    static pbx_core_out out;
    pbx_ipc_commit c = {dest};
    size_t n = 0;
    pbx_err core = PBX_OK;
    PBX_ASSERT(pbx_ipc_commit_encode(id, &c, buf, sizeof(buf), &n) == PBX_OK);
    uint32_t slot = th_put_cap(h, land, PBX_CAPABI_KIND_ENDPOINT,
                               PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    uint32_t st = th_public(h, h->badge, buf, n, &slot, 1, &core, &out);
    return core != PBX_OK ? (uint32_t)core : st;
}

uint32_t th_open(th_h *h, const pbx_ipc_begin *b, const uint8_t *sel,
                 pbx_ipc_id *id)
{
    uint32_t dest = 0;
    uint32_t st = th_begin(h, b, id, &dest);
    for (uint32_t off = 0; st == 0U && off < b->selector_len;) {
        uint32_t len = b->selector_len - off;
        len = len > PBX_IPC_SELECTOR_CHUNK_BYTES_MAX
                  ? PBX_IPC_SELECTOR_CHUNK_BYTES_MAX
                  : len;
        st = th_selector(h, *id, off, sel + off, len);
        off += len;
    }
    return st != 0U ? st : th_commit(h, *id, dest, dest);
}

uint32_t th_open_parked(th_h *h, const pbx_ipc_begin *b, const uint8_t *sel,
                        pbx_ipc_id *id)
{
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_RETRY, 0, 0);
    uint32_t st = th_open(h, b, sel, id);
    th_run(h);
    th_clear_trace(h);
    return st;
}

pbx_ipc_id th_approve(th_h *h, const pbx_ipc_begin *b, const uint8_t *sel,
                      bool keep, pbx_ipc_id *req, uint32_t *xfer)
{
    pbx_ipc_decision d;
    uint32_t moved = 0;
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open(h, b, sel, &id), 0U);
    th_run(h);
    h->deliver = !keep;
    TH_CHECK_OUTCOME(h, id, &d, &moved, PBX_IPC_OUTCOME_APPROVED);
    h->deliver = true;
    if (req != NULL) {
        *req = id;
    }
    if (xfer != NULL) {
        *xfer = moved;
    }
    th_clear_trace(h);
    return d.grant;
}

uint32_t th_decision(th_h *h, pbx_ipc_id id, pbx_ipc_decision *d,
                     uint32_t *xfer)
{
    uint8_t buf[64];
    static pbx_core_out out;
    pbx_ipc_frame f;
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf),
                                    &n) == PBX_OK);
    uint32_t st = th_send(h, buf, n, &out);
    *xfer = out.transfer_slot;
    memset(d, 0, sizeof(*d));
    if (st != 0U) {
        return st;
    }
    uint16_t caps = out.transfer_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    if (pbx_ipc_frame_decode(out.frame, out.len, caps, &f) != PBX_OK ||
        pbx_ipc_decision_reply_decode(&f, d) != PBX_OK) {
        h->violations++;
        return UINT32_MAX;
    }
    if (out.token == PBX_CORE_NIL) {
        return st;
    }
    if (h->deliver && out.transfer_slot != PBX_CORE_SLOT_NONE) {
        /* The runtime moved the alias out with the reply. */
        if (!th_has_cap(h, out.transfer_slot)) {
            h->violations++;
        } else {
            th_vacate(h, out.transfer_slot);
            h->transferred++;
            th_log(h, "xfer=%u", out.transfer_slot);
        }
    }
    pbx_err err = pbx_core_on_reply_delivered(&h->core, out.token,
                                              out.token_generation, h->deliver);
    return err != PBX_OK ? (uint32_t)err : st;
}

uint32_t th_cancel(th_h *h, pbx_ipc_id id)
{
    uint8_t buf[64];
    static pbx_core_out out;
    pbx_ipc_cancel c;
    size_t n = 0;
    memset(&c, 0, sizeof(c));
    c.request = id;
    PBX_ASSERT(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    return th_send(h, buf, n, &out);
}

uint32_t th_cancel_corr(th_h *h, uint64_t job, uint32_t gen, uint64_t session)
{
    uint8_t buf[64];
    static pbx_core_out out;
    pbx_ipc_cancel c;
    size_t n = 0;
    memset(&c, 0, sizeof(c));
    c.by_correlation = true;
    c.job_id = job;
    c.job_gen = gen;
    c.session = session;
    PBX_ASSERT(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    return th_send(h, buf, n, &out);
}

uint32_t th_cancel_grant(th_h *h, pbx_ipc_id grant)
{
    uint8_t buf[64];
    static pbx_core_out out;
    pbx_ipc_cancel c;
    size_t n = 0;
    memset(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant = grant;
    PBX_ASSERT(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    return th_send(h, buf, n, &out);
}

uint32_t th_consume(th_h *h, pbx_ipc_id grant)
{
    uint8_t buf[64];
    static pbx_core_out out;
    pbx_ipc_consume c = {grant};
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_consume_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    return th_send(h, buf, n, &out);
}

uint32_t th_expire(th_h *h, uint32_t badge, uint8_t kind, uint64_t job,
                   uint32_t gen, uint64_t inv)
{
    uint8_t buf[64];
    static pbx_core_out out;
    pbx_ipc_expire e = {kind, gen, job, inv};
    size_t n = 0;
    pbx_err core = PBX_OK;
    PBX_ASSERT(pbx_ipc_expire_encode(&e, buf, sizeof(buf), &n) == PBX_OK);
    uint32_t st = th_public(h, badge, buf, n, NULL, 0, &core, &out);
    return core != PBX_OK ? (uint32_t)core : st;
}

/* Delivers every pending reply unless h->hold; a failed delivery's
 * error becomes the step error. Returns false after such a failure. */
static bool th_pump(th_h *h)
{
    if (h->hold || h->npend == 0U) {
        return true;
    }
    h->deliver_err = PBX_OK;
    (void)th_deliver_all(h);
    if (h->deliver_err != PBX_OK) {
        h->step_err = h->deliver_err;
        return false;
    }
    return true;
}

bool th_step(th_h *h)
{
    bool progressed = false;
    h->step_err = pbx_core_step(&h->core, &progressed);
    if (h->step_err == PBX_OK) {
        (void)th_pump(h);
    }
    return progressed;
}

uint32_t th_run(th_h *h)
{
    bool progressed = true;
    h->step_err = PBX_OK;
    h->steps = 0;
    if (!th_pump(h)) {
        return 0;
    }
    for (uint32_t i = 0; i < 10000U && progressed; i++) {
        pbx_err err = pbx_core_step(&h->core, &progressed);
        if (err != PBX_OK) {
            h->step_err = err;
            break;
        }
        h->steps += progressed ? 1U : 0U;
        if (!th_pump(h)) {
            break;
        }
    }
    return h->steps;
}

/* ---- checks ---------------------------------------------------------- */

bool th_conserved(const th_h *h)
{
    uint32_t occupied = 0;
    for (uint32_t s = TH_T_FIRST; s < TH_T_FIRST + TH_T_COUNT; s++) {
        occupied += th_has_cap(h, s) ? 1U : 0U;
    }
    uint32_t held = pbx_core_held_caps(&h->core);
    if (h->violations != 0U || occupied != held ||
        h->handed != h->deleted + h->transferred + held) {
        fprintf(stderr,
                "conservation: violations %u occupied %u held %u handed %u "
                "deleted %u transferred %u\n",
                h->violations, occupied, held, h->handed, h->deleted,
                h->transferred);
        return false;
    }
    return true;
}

bool th_quiescent(const th_h *h)
{
    for (uint32_t s = TH_T_FIRST; s < TH_T_FIRST + TH_T_COUNT; s++) {
        if (h->slots[s].reserved ||
            h->slots[s].kind != (uint32_t)PBX_CAPABI_KIND_EMPTY) {
            fprintf(stderr, "baseline: slot %u still %s\n", s,
                    h->slots[s].reserved ? "reserved" : "occupied");
            return false;
        }
    }
    return th_conserved(h) && pbx_core_held_caps(&h->core) == 0U;
}

void th_trace_is(th_h *h, const char *file, int line, const char *want)
{
    pbx_test_checks++;
    if (strcmp(h->trace, want) != 0) {
        pbx_test_failf(file, line, "trace\n  got:  %s\n  want: %s", h->trace,
                       want);
    }
    th_clear_trace(h);
}
