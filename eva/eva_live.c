/*
 * EVA driver for core/ from live states (library "live" of make eva): the
 * core of eva/eva_common.c's geometry (eva/eva_core.c's too), driven
 * through a fixed, valid sequence of events that a correct client,
 * launchd and peers would produce (BEGIN, SELECTOR, COMMIT, every peer
 * call answered as the reference peers answer it, DECISION and its
 * delivery, CONSUME, CANCEL, a PROMPT approved, a route lost and back,
 * EXPIRE, time past every deadline, the broker lost), so that requests,
 * grants, prompts and calls are live. Before each event a probe runs on
 * one branch of a nondeterministic choice: the same event with any one
 * byte of its frame of any value and any length from the header up (EVA's
 * weak update makes every byte either its valid value or any value), then
 * a time, a step with ops that answer every outcome, a route lost and the
 * broker lost; the state before the probe is then restored by structure
 * assignment, so the sequence goes on concretely. Each entry point is
 * thus analysed from the live states the sequence reaches
 * (docs/SECURITY.md, section 7).
 *
 * Freestanding: the fake kernel (a slot table) and the fake peers are
 * written with the project's own ipc encoders and base/ helpers only.
 */
#include <__fc_builtin.h>

#include "base/pbx_base.h"
#include "bootstrap/pbx_bootstrap.h"
#include "capabi/pbx_capabi.h"
#include "core/pbx_core.h"
#include "core/pbx_core_layout.h"
#include "eva/eva_common.h"
#include "ipc/pbx_ipc.h"
#include "sha2/pbx_sha2.h"

#define EVA_ARENA (256U * 1024U)
#define EVA_FIRST 64U
#define EVA_COUNT 64U
/* The fake slot table covers the target slot (40) and every transient. */
#define EVA_SLOTS (EVA_FIRST + EVA_COUNT)
/* Replies pending at once: a window of two calls per route. */
#define EVA_PEND 8U
/* Steps of one run to idle: far more than one request's calls. */
#define EVA_RUN_STEPS  24U
#define EVA_SESSION    0x5E55U
#define EVA_JOB        0x70BU
#define EVA_JOB_GEN    2U
#define EVA_TARGET     40U
#define EVA_INVOCATION 0x1AU

/* One call the fake peers accepted and will answer. */
typedef struct eva_pend {
    uint32_t route;
    uint16_t caps;
    size_t len;
    uint8_t frame[PBX_IPC_FRAME_BYTES_MAX];
} eva_pend;

/* Everything outside the core that a probe may change and the restore
 * puts back: the fake slot table, the pending replies, the ops' mode. */
typedef struct eva_world {
    uint32_t kind[EVA_SLOTS];
    uint32_t rights[EVA_SLOTS];
    uint32_t prov[EVA_SLOTS];
    bool reserved[EVA_SLOTS];
    eva_pend pend[EVA_PEND];
    uint32_t npend;
    uint32_t object_seq;
    /* While true (probes only) the ops answer every outcome. */
    bool wild;
} eva_world;

typedef struct eva_arena_bytes {
    uint8_t b[EVA_ARENA];
} eva_arena_bytes;

static eva_arena_bytes eva_arena __attribute__((aligned(4096)));
static eva_arena_bytes eva_arena_save;
static pbx_core_ctx eva_core;
static pbx_core_ctx eva_core_save;
static eva_world eva_w;
static eva_world eva_w_save;
static pbx_core_out eva_out;
/* Frames as structures, so that a probe's copy is one assignment. */
typedef struct eva_frame {
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
} eva_frame;

/* The next public event's frame, a probe's copy, the next peer reply. */
static eva_frame eva_buf;
static eva_frame eva_probe_buf;
static eva_frame eva_reply_buf;
#define eva_reply (eva_reply_buf.b)
static uint32_t eva_reply_slots[PBX_CORE_RECV_SLOTS_MAX];
static size_t eva_reply_n;
/* Milestones the sequence reached, one bit each (eva_mark): the native
 * run of make eva (eva/native/) requires every bit of EVA_REACHED_ALL, so
 * a sequence that stops reaching a live state fails there. */
volatile uint32_t eva_reached;

static uint32_t eva_u32(void)
{
    return Frama_C_unsigned_int_interval(0, 0xffffffffu);
}

static bool eva_choice(void)
{
    return Frama_C_interval(0, 1) != 0;
}

/* ---- the fake kernel ------------------------------------------------- */

/* Puts a capability in the lowest free transient slot (or slot when it
 * is below the transient range); returns the slot or SLOT_NONE. */
static uint32_t eva_put(uint32_t slot, uint32_t rights, uint32_t prov)
{
    uint32_t s = slot;
    for (uint32_t i = EVA_FIRST; s == PBX_CORE_SLOT_NONE && i < EVA_SLOTS;
         i++) {
        if (!eva_w.reserved[i] &&
            eva_w.kind[i] == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
            s = i;
        }
    }
    if (s < EVA_SLOTS) {
        eva_w.kind[s] = PBX_CAPABI_KIND_ENDPOINT;
        eva_w.rights[s] = rights;
        eva_w.prov[s] = prov;
    }
    return s;
}

static void eva_vacate(uint32_t slot)
{
    if (slot < EVA_SLOTS) {
        eva_w.kind[slot] = eva_w.reserved[slot]
                               ? (uint32_t)PBX_CAPABI_KIND_PLACEHOLDER
                               : (uint32_t)PBX_CAPABI_KIND_EMPTY;
        eva_w.rights[slot] = 0U;
        eva_w.prov[slot] = 0U;
    }
}

static pbx_core_io eva_wild_io(void)
{
    return (pbx_core_io)Frama_C_interval(0, 2);
}

static void eva_query(void *user, uint32_t slot, pbx_capabi_observed *out)
{
    (void)user;
    out->slot = slot;
    if (eva_w.wild) {
        out->kind = eva_u32();
        out->rights = eva_u32();
        out->provenance = eva_u32();
        return;
    }
    out->kind = slot < EVA_SLOTS ? eva_w.kind[slot] : 0U;
    out->rights = slot < EVA_SLOTS ? eva_w.rights[slot] : 0U;
    out->provenance = slot < EVA_SLOTS ? eva_w.prov[slot] : 0U;
}

static pbx_core_delete eva_delete(void *user, uint32_t slot)
{
    (void)user;
    if (eva_w.wild) {
        return (pbx_core_delete)Frama_C_interval(0, 2);
    }
    eva_vacate(slot);
    return PBX_CORE_DELETE_OK;
}

static bool eva_reserve(void *user, uint32_t *slot_out)
{
    (void)user;
    for (uint32_t s = EVA_FIRST; s < EVA_SLOTS; s++) {
        if (!eva_w.reserved[s] &&
            eva_w.kind[s] == (uint32_t)PBX_CAPABI_KIND_EMPTY) {
            eva_w.reserved[s] = true;
            eva_w.kind[s] = PBX_CAPABI_KIND_PLACEHOLDER;
            *slot_out = s;
            return true;
        }
    }
    return false;
}

static void eva_release(void *user, uint32_t slot)
{
    (void)user;
    if (slot < EVA_SLOTS) {
        eva_w.reserved[slot] = false;
        eva_w.kind[slot] = PBX_CAPABI_KIND_EMPTY;
    }
}

static pbx_core_io eva_alias(void *user, uint32_t object, uint32_t *alias_out)
{
    (void)user;
    (void)object;
    if (eva_w.wild) {
        *alias_out = Frama_C_unsigned_int_interval(EVA_FIRST, EVA_SLOTS - 1U);
        return eva_wild_io();
    }
    *alias_out = eva_put(PBX_CORE_SLOT_NONE, PBX_CAPABI_RIGHT_SEND,
                         PBX_CAPABI_PROV_LOCAL);
    return *alias_out == PBX_CORE_SLOT_NONE ? PBX_CORE_IO_FAILED
                                            : PBX_CORE_IO_OK;
}

static pbx_core_io eva_wake(void *user, const uint8_t *frame, size_t len)
{
    (void)user;
    (void)frame;
    (void)len;
    return eva_w.wild ? eva_wild_io() : PBX_CORE_IO_OK;
}

/* Accepts every call (a probe: any outcome) and queues its reply. */
static pbx_core_io eva_send(void *user, const pbx_core_call *call)
{
    (void)user;
    if (eva_w.wild) {
        return eva_wild_io();
    }
    if (eva_w.npend >= EVA_PEND || call->frame_len > PBX_IPC_FRAME_BYTES_MAX) {
        return PBX_CORE_IO_BUSY;
    }
    eva_pend *p = &eva_w.pend[eva_w.npend];
    p->route = call->route == PBX_CORE_ROUTE_SCOPE
                   ? (uint32_t)PBX_CORE_ROUTE_VFSD
                   : call->route;
    p->caps = call->send_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    p->len = call->frame_len;
    pbx_mem_copy(p->frame, call->frame, call->frame_len);
    if (p->caps != 0U && !call->send_copy) {
        eva_vacate(call->send_slot);
    }
    eva_w.npend++;
    return PBX_CORE_IO_OK;
}

static const pbx_core_ops eva_ops = {
    eva_send,    eva_query, eva_delete, eva_reserve,
    eva_release, eva_alias, eva_wake,
};

/* ---- the fake peers: each call answered as the reference peer does --- */

/* Attaches one received receipt with rights to the reply being built. */
static void eva_receipt(uint32_t rights)
{
    if (eva_reply_n < PBX_CORE_RECV_SLOTS_MAX) {
        eva_reply_slots[eva_reply_n++] =
            eva_put(PBX_CORE_SLOT_NONE, rights, PBX_CAPABI_PROV_RECEIVED);
    }
}

static pbx_err eva_ans_resolve(const pbx_ipc_frame *f, size_t *len)
{
    pbx_ipc_resolve q;
    pbx_ipc_resolve_reply r;
    pbx_err err = pbx_ipc_resolve_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    pbx_mem_set(&r, 0, sizeof(r));
    r.result = PBX_IPC_RESOLVE_FOUND;
    r.operation = q.operation;
    r.object_class = q.object_class;
    pbx_mem_copy(r.selector_digest, q.selector_digest, PBX_IPC_DIGEST_BYTES);
    r.object.id = 0x0B1EC7000U + ++eva_w.object_seq;
    r.object.gen = 3U;
    r.scope_id = 0x5C09EU;
    eva_receipt(PBX_CAPABI_RIGHT_SEND);
    return pbx_ipc_resolve_reply_encode(f->request, &r, eva_reply,
                                        sizeof(eva_reply), len);
}

/* ALLOW, or PROMPT for an exceptional request (ALLOW does not encode). */
static pbx_err eva_ans_policy(const pbx_ipc_frame *f, size_t *len)
{
    pbx_ipc_policy q;
    pbx_ipc_policy_reply r;
    pbx_err err = pbx_ipc_policy_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    pbx_mem_set(&r, 0, sizeof(r));
    r.verdict = q.ctx.urgency == (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL
                    ? (uint8_t)PBX_IPC_VERDICT_PROMPT
                    : (uint8_t)PBX_IPC_VERDICT_ALLOW;
    r.urgency = q.ctx.urgency;
    r.realm = q.ctx.realm;
    r.session = q.ctx.session;
    return pbx_ipc_policy_reply_encode(f->request, &r, eva_reply,
                                       sizeof(eva_reply), len);
}

/* The user approves. */
static pbx_err eva_ans_prompt(const pbx_ipc_frame *f, size_t *len)
{
    pbx_ipc_prompt q;
    pbx_ipc_prompt_reply r;
    pbx_err err = pbx_ipc_prompt_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    pbx_mem_set(&r, 0, sizeof(r));
    r.answer = PBX_IPC_ANSWER_APPROVE;
    r.realm = q.ctx.realm;
    r.session = q.ctx.session;
    r.job_id = q.ctx.job_id;
    r.job_gen = q.ctx.job_gen;
    r.request = f->request;
    r.object = q.object;
    return pbx_ipc_prompt_reply_encode(f->request, &r, eva_reply,
                                       sizeof(eva_reply), len);
}

static pbx_err eva_ans_view(const pbx_ipc_frame *f, size_t *len)
{
    pbx_ipc_view q;
    pbx_ipc_view_ack r;
    pbx_err err = pbx_ipc_view_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    pbx_mem_set(&r, 0, sizeof(r));
    r.kind = q.kind;
    r.grant = q.grant;
    return pbx_ipc_view_reply_encode(f->request, &r, eva_reply,
                                     sizeof(eva_reply), len);
}

/* A MANAGE_ONLY revocation handle for the target slot. */
static pbx_err eva_ans_install(const pbx_ipc_frame *f, size_t *len)
{
    pbx_ipc_install q;
    pbx_ipc_install_reply r;
    pbx_err err = pbx_ipc_install_decode(f, &q);
    if (err != PBX_OK) {
        return err;
    }
    pbx_mem_set(&r, 0, sizeof(r));
    r.handle_kind = PBX_IPC_HANDLE_MANAGE_ONLY;
    r.installed_slot = q.target.slot;
    r.grant = q.grant;
    r.target_process_id = q.target.process_id;
    r.target_process_gen = q.target.process_gen;
    eva_receipt(PBX_CAPABI_RIGHT_MANAGE);
    return pbx_ipc_install_reply_encode(f->request, &r, eva_reply,
                                        sizeof(eva_reply), len);
}

static pbx_err eva_ans_detach(const pbx_ipc_frame *f, size_t *len)
{
    pbx_ipc_detach q;
    pbx_err err = pbx_ipc_detach_decode(f, &q);
    return err != PBX_OK
               ? err
               : pbx_ipc_detach_reply_encode(f->request, &q, eva_reply,
                                             sizeof(eva_reply), len);
}

static pbx_err eva_ans_retire(const pbx_ipc_frame *f, size_t *len)
{
    pbx_ipc_retire q;
    pbx_err err = pbx_ipc_retire_decode(f, &q);
    return err != PBX_OK
               ? err
               : pbx_ipc_retire_reply_encode(f->request, &q, eva_reply,
                                             sizeof(eva_reply), len);
}

static pbx_err eva_ans_withdraw(const pbx_ipc_frame *f, size_t *len)
{
    pbx_ipc_withdraw q;
    pbx_err err = pbx_ipc_withdraw_decode(f, &q);
    return err != PBX_OK
               ? err
               : pbx_ipc_withdraw_reply_encode(f->request, &q, eva_reply,
                                               sizeof(eva_reply), len);
}

/* Builds the reply to pending call p into eva_reply (its receipts in
 * eva_reply_slots), its seq echoed; false when the call does not decode. */
static bool eva_answer(const eva_pend *p, size_t *len)
{
    pbx_ipc_frame f;
    pbx_err err = PBX_E_IPC_UNKNOWN_OP;
    eva_reply_n = 0U;
    if (pbx_ipc_frame_decode(p->frame, p->len, p->caps, &f) != PBX_OK) {
        return false;
    }
    switch (f.op) {
    case PBX_IPC_OP_RESOLVE:
        err = eva_ans_resolve(&f, len);
        break;
    case PBX_IPC_OP_POLICY:
        err = eva_ans_policy(&f, len);
        break;
    case PBX_IPC_OP_PROMPT:
        err = eva_ans_prompt(&f, len);
        break;
    case PBX_IPC_OP_VIEW:
        err = eva_ans_view(&f, len);
        break;
    case PBX_IPC_OP_INSTALL:
        err = eva_ans_install(&f, len);
        break;
    case PBX_IPC_OP_DETACH:
        err = eva_ans_detach(&f, len);
        break;
    case PBX_IPC_OP_RETIRE:
        err = eva_ans_retire(&f, len);
        break;
    case PBX_IPC_OP_WITHDRAW:
        err = eva_ans_withdraw(&f, len);
        break;
    default:
        break;
    }
    return err == PBX_OK &&
           pbx_ipc_frame_set_seq(eva_reply, *len, f.seq) == PBX_OK;
}

/* ---- probes ---------------------------------------------------------- */

static void eva_save(void)
{
    eva_core_save = eva_core;
    eva_arena_save = eva_arena;
    eva_w_save = eva_w;
}

static void eva_restore(void)
{
    eva_core = eva_core_save;
    eva_arena = eva_arena_save;
    eva_w = eva_w_save;
}

/* Copies frame into the probe buffer with any one byte of any value;
 * returns a length from 0 to len. */
static size_t eva_mangle(const eva_frame *frame, size_t len)
{
    eva_probe_buf = *frame;
    if (len > 0U) {
        size_t i = Frama_C_size_t_interval(0, len - 1U);
        eva_probe_buf.b[i] = (uint8_t)Frama_C_interval(0, 255);
    }
    return Frama_C_size_t_interval(0, len);
}

/* Every event but frames, with ops that answer every outcome. */
static void eva_probe_events(void)
{
    bool progressed = false;
    uint64_t at = 0;
    eva_w.wild = true;
    (void)pbx_core_on_reply_delivered(&eva_core, eva_u32(), eva_u32(),
                                      eva_choice());
    (void)pbx_core_on_time(&eva_core, (uint64_t)eva_u32());
    pbx_core_on_tick(&eva_core);
    (void)pbx_core_step(&eva_core, &progressed);
    pbx_core_route r =
        (pbx_core_route)Frama_C_interval(0, (int)PBX_CORE_ROUTE_COUNT - 1);
    (void)pbx_core_on_route_down(&eva_core, r);
    (void)pbx_core_on_route_up(&eva_core, r);
    pbx_core_on_route_ready(&eva_core, r);
    (void)pbx_core_step(&eva_core, &progressed);
    (void)pbx_core_on_broker_lost(&eva_core);
    (void)pbx_core_next_deadline(&eva_core, &at);
    (void)pbx_core_public_ready(&eva_core);
    (void)pbx_core_peer_ready(&eva_core);
    (void)pbx_core_tick_wanted(&eva_core);
    (void)pbx_core_calls_outstanding(&eva_core);
    (void)pbx_core_exit_status(&eva_core);
    (void)pbx_core_held_caps(&eva_core);
}

/* On one branch: the public frame in eva_buf mangled, then every other
 * event; the state is restored after. */
static void eva_probe_public(uint32_t badge, size_t len, const uint32_t *slots,
                             size_t count)
{
    uint32_t dest = 0;
    if (!eva_choice()) {
        return;
    }
    eva_save();
    size_t n = eva_mangle(&eva_buf, len);
    size_t c = Frama_C_size_t_interval(0, count);
    (void)pbx_core_commit_dest(&eva_core, badge, eva_probe_buf.b, n, c, &dest);
    (void)pbx_core_on_public(&eva_core, badge, eva_probe_buf.b, n, slots, c,
                             &eva_out);
    eva_probe_events();
    eva_restore();
}

/* On one branch: the peer reply in eva_reply mangled, with any count of
 * its receipts, then every other event; the state is restored after. */
static void eva_probe_reply(uint32_t route, size_t len)
{
    if (!eva_choice()) {
        return;
    }
    eva_save();
    size_t n = eva_mangle(&eva_reply_buf, len);
    size_t c = Frama_C_size_t_interval(0, eva_reply_n);
    (void)pbx_core_on_peer_reply(&eva_core, route, PBX_CORE_SLOT_NONE,
                                 eva_probe_buf.b, n, eva_reply_slots, c);
    eva_probe_events();
    eva_restore();
}

/* ---- the valid sequence ---------------------------------------------- */

/* Sends the public frame in eva_buf after its probe. */
static pbx_err eva_public(size_t len, const uint32_t *slots, size_t count)
{
    eva_probe_public(PBX_CORE_BADGE_LAUNCHD, len, slots, count);
    return pbx_core_on_public(&eva_core, PBX_CORE_BADGE_LAUNCHD, eva_buf.b, len,
                              slots, count, &eva_out);
}

/* Answers the oldest pending call, after its probe. */
static void eva_deliver_one(void)
{
    static eva_pend p;
    size_t len = 0;
    p = eva_w.pend[0];
    /*@ loop unroll EVA_PEND; */
    for (uint32_t k = 1U; k < eva_w.npend; k++) {
        eva_w.pend[k - 1U] = eva_w.pend[k];
    }
    eva_w.npend--;
    if (!eva_answer(&p, &len)) {
        return;
    }
    eva_probe_reply(p.route, len);
    (void)pbx_core_on_peer_reply(&eva_core, p.route, PBX_CORE_SLOT_NONE,
                                 eva_reply, len, eva_reply_slots, eva_reply_n);
}

/* Answers every pending call, then steps, until the core is idle. */
static void eva_run(void)
{
    /*@ loop unroll EVA_RUN_STEPS; */
    for (uint32_t i = 0; i < EVA_RUN_STEPS; i++) {
        bool progressed = false;
        /*@ loop unroll EVA_PEND; */
        for (uint32_t k = 0; k < EVA_PEND && eva_w.npend > 0U; k++) {
            eva_deliver_one();
        }
        if (pbx_core_step(&eva_core, &progressed) != PBX_OK ||
            (!progressed && eva_w.npend == 0U)) {
            break;
        }
    }
}

/* BEGIN, every SELECTOR chunk and COMMIT of one request; its identity. */
static pbx_ipc_id eva_open(uint8_t urgency, uint8_t lifetime)
{
    static const uint8_t sel[] = "/home/user/report.txt";
    static const char entry[] = "/bin/viewer";
    pbx_ipc_begin b;
    pbx_ipc_begin_reply r;
    pbx_ipc_frame f;
    pbx_ipc_id id = {0, 0};
    size_t n = 0;
    pbx_mem_set(&b, 0, sizeof(b));
    b.ctx.session = EVA_SESSION;
    b.ctx.job_id = EVA_JOB;
    b.ctx.job_gen = EVA_JOB_GEN;
    b.ctx.realm = 9U;
    b.ctx.operation = PBX_IPC_OPERATION_READ;
    b.ctx.object_class = PBX_IPC_CLASS_FILE;
    b.ctx.lifetime = lifetime;
    b.ctx.mode = PBX_IPC_MODE_INSTALL;
    b.ctx.urgency = urgency;
    b.invocation_id =
        lifetime == (uint8_t)PBX_IPC_LIFETIME_INVOCATION ? EVA_INVOCATION : 0U;
    b.ctx.entry.len = (uint16_t)(sizeof(entry) - 1U);
    pbx_mem_copy(b.ctx.entry.bytes, entry, sizeof(entry) - 1U);
    b.target.process_id = 0x9C0U;
    b.target.process_gen = 4U;
    b.target.slot = EVA_TARGET;
    b.selector_len = (uint32_t)(sizeof(sel) - 1U);
    b.label.len = 4U;
    pbx_mem_copy(b.label.bytes, "open", 4U);
    if (pbx_sha2_digest(sel, sizeof(sel) - 1U, b.selector_digest) != PBX_OK ||
        pbx_ipc_begin_encode(&b, eva_buf.b, sizeof(eva_buf.b), &n) != PBX_OK ||
        eva_public(n, NULL, 0) != PBX_OK ||
        pbx_ipc_frame_decode(eva_out.frame, eva_out.len, 0, &f) != PBX_OK ||
        f.status != 0U || pbx_ipc_begin_reply_decode(&f, &r) != PBX_OK) {
        return id;
    }
    id = f.request;
    pbx_ipc_selector s = {0U, (uint32_t)(sizeof(sel) - 1U), sel};
    pbx_ipc_commit c = {r.dest_slot};
    uint32_t land =
        eva_put(r.dest_slot, PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    if (pbx_ipc_selector_encode(id, &s, eva_buf.b, sizeof(eva_buf.b), &n) !=
            PBX_OK ||
        eva_public(n, NULL, 0) != PBX_OK ||
        pbx_ipc_commit_encode(id, &c, eva_buf.b, sizeof(eva_buf.b), &n) !=
            PBX_OK) {
        return id;
    }
    (void)eva_public(n, &land, 1);
    return id;
}

/* DECISION of request id and its delivery; the outcome (0: none). */
static uint8_t eva_decision(pbx_ipc_id id, pbx_ipc_id *grant)
{
    pbx_ipc_frame f;
    pbx_ipc_decision d;
    size_t n = 0;
    if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, eva_buf.b,
                             sizeof(eva_buf.b), &n) != PBX_OK ||
        eva_public(n, NULL, 0) != PBX_OK) {
        return 0U;
    }
    uint16_t caps = eva_out.transfer_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    if (pbx_ipc_frame_decode(eva_out.frame, eva_out.len, caps, &f) != PBX_OK ||
        f.status != 0U || pbx_ipc_decision_reply_decode(&f, &d) != PBX_OK) {
        return 0U;
    }
    *grant = d.grant;
    if (eva_out.token != PBX_CORE_NIL) {
        (void)pbx_core_on_reply_delivered(&eva_core, eva_out.token,
                                          eva_out.token_generation, true);
    }
    return d.outcome;
}

/* Marks milestone bit when cond holds. */
static void eva_mark(uint32_t bit, bool cond)
{
    if (cond) {
        eva_reached |= 1U << bit;
    }
}

/* Sends the capability-free public frame encoded into eva_buf (n bytes)
 * unless its encoding failed. */
static pbx_err eva_small(pbx_err encoded, const size_t *n)
{
    return encoded != PBX_OK ? encoded : eva_public(*n, NULL, 0);
}

/* The first request: routine, approved by policy, installed, consumed. */
static void eva_seq_consume(void)
{
    pbx_ipc_id grant = {0, 0};
    pbx_ipc_id id =
        eva_open(PBX_IPC_URGENCY_ROUTINE, PBX_IPC_LIFETIME_ONE_SHOT);
    eva_run();
    eva_mark(0, eva_decision(id, &grant) == (uint8_t)PBX_IPC_OUTCOME_APPROVED);
    pbx_ipc_consume c = {grant};
    size_t n = 0;
    eva_mark(1, eva_small(pbx_ipc_consume_encode(&c, eva_buf.b,
                                                 sizeof(eva_buf.b), &n),
                          &n) == PBX_OK);
    eva_run();
}

/* The second: exceptional, so prompted and approved by the user, then
 * cancelled by its grant. */
static void eva_seq_prompt(void)
{
    pbx_ipc_id grant = {0, 0};
    pbx_ipc_cancel c;
    size_t n = 0;
    pbx_ipc_id id =
        eva_open(PBX_IPC_URGENCY_EXCEPTIONAL, PBX_IPC_LIFETIME_INVOCATION);
    eva_run();
    eva_mark(2, eva_decision(id, &grant) == (uint8_t)PBX_IPC_OUTCOME_APPROVED);
    pbx_mem_set(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant = grant;
    eva_mark(3, eva_small(
                    pbx_ipc_cancel_encode(&c, eva_buf.b, sizeof(eva_buf.b), &n),
                    &n) == PBX_OK);
    eva_run();
}

/* The third: vfsd lost while its RESOLVE is out, then back. */
static void eva_seq_route(void)
{
    bool progressed = false;
    pbx_ipc_id grant = {0, 0};
    pbx_ipc_id id = eva_open(PBX_IPC_URGENCY_ROUTINE, PBX_IPC_LIFETIME_JOB);
    (void)pbx_core_step(&eva_core, &progressed);
    eva_mark(4, eva_w.npend > 0U);
    if (eva_choice()) {
        eva_save();
        eva_probe_events();
        eva_restore();
    }
    eva_w.npend = 0U;
    (void)pbx_core_on_route_down(&eva_core, PBX_CORE_ROUTE_VFSD);
    (void)pbx_core_on_route_up(&eva_core, PBX_CORE_ROUTE_VFSD);
    pbx_core_on_route_ready(&eva_core, PBX_CORE_ROUTE_VFSD);
    eva_run();
    eva_mark(5, eva_decision(id, &grant) != 0U);
    eva_run();
}

/* The fourth: a job-long grant, then the job expires. */
static void eva_seq_expire(void)
{
    pbx_ipc_id grant = {0, 0};
    size_t n = 0;
    pbx_ipc_id id = eva_open(PBX_IPC_URGENCY_ROUTINE, PBX_IPC_LIFETIME_JOB);
    eva_run();
    eva_mark(6, eva_decision(id, &grant) == (uint8_t)PBX_IPC_OUTCOME_APPROVED);
    pbx_ipc_expire e = {PBX_IPC_EXPIRE_JOB, EVA_JOB_GEN, EVA_JOB, 0U};
    eva_mark(7, eva_small(
                    pbx_ipc_expire_encode(&e, eva_buf.b, sizeof(eva_buf.b), &n),
                    &n) == PBX_OK);
    eva_run();
}

/* The fifth: vfsd never answers its RESOLVE; time passes every
 * deadline, then the broker is lost. */
static void eva_seq_time(void)
{
    bool progressed = false;
    pbx_ipc_id grant = {0, 0};
    uint64_t at = 0;
    pbx_ipc_id id =
        eva_open(PBX_IPC_URGENCY_ROUTINE, PBX_IPC_LIFETIME_ONE_SHOT);
    (void)pbx_core_step(&eva_core, &progressed);
    eva_w.npend = 0U;
    eva_mark(8, pbx_core_next_deadline(&eva_core, &at));
    if (eva_choice()) {
        eva_save();
        eva_probe_events();
        eva_restore();
    }
    (void)pbx_core_on_time(&eva_core, 3600U * 1000U);
    eva_run();
    eva_mark(9, eva_decision(id, &grant) == (uint8_t)PBX_IPC_OUTCOME_DENIED);
    eva_run();
    eva_mark(10, pbx_core_on_broker_lost(&eva_core) == PBX_OK);
    eva_run();
}

/* The entry point EVA starts from (-main eva_main). */
void eva_main(void);
void eva_main(void)
{
    pbx_bootstrap_layout l;
    pbx_capabi_layout slots;
    if (!eva_layout(&l) || l.arena_bytes > sizeof(eva_arena.b) ||
        pbx_capabi_layout_init(&slots, EVA_FIRST, EVA_COUNT) != PBX_OK ||
        pbx_core_init(&eva_core, &l, eva_arena.b, l.arena_bytes, &slots,
                      &eva_ops, NULL) != PBX_OK) {
        return;
    }
    eva_seq_consume();
    eva_seq_prompt();
    eva_seq_route();
    eva_seq_expire();
    eva_seq_time();
}
