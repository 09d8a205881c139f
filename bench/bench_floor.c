/*
 * bench_floor.c: `pbx-bench floor`, the physical floor of one lifecycle:
 * the work no implementation can avoid. Every frame a routine
 * install-mode lifecycle puts on the wire (client <-> powerboxd and
 * powerboxd <-> vfsd, ttyd, procd, launchd) is encoded once by its sender
 * and decoded once, strictly, by its receiver with the ipc codec alone,
 * and the selector is hashed once (the COMMIT digest check). Nothing is
 * tracked, queued or checked beyond what the codec does.
 *
 * Two callgrind views of one run (bench/bench.sh): bench_floor_measure is
 * the whole floor (both ends of every frame); the bench_floor_core_*
 * functions are powerboxd's half of it (encode what it sends, decode
 * what it receives, the digest), the floor of the core alone.
 */
#include "bench/bench.h"

#include "sha2/pbx_sha2.h"

#include <stdio.h>
#include <string.h>

/* The frame kinds of one lifecycle. */
typedef enum fl_op {
    FL_BEGIN,
    FL_SELECTOR,
    FL_COMMIT,
    FL_RESOLVE,
    FL_POLICY,
    FL_INSTALL,
    FL_DETACH,
    FL_VIEW_ACTIVE,
    FL_WAKE,
    FL_DECISION,
    FL_CONSUME,
    FL_VIEW_REMOVE,
    FL_RETIRE
} fl_op;

/* One frame on the wire: which op, request or reply, who sends it and
 * how many capabilities the transport reports with it. */
typedef struct fl_frame {
    fl_op op;
    bool reply;
    bool core_sends;
    uint16_t caps;
} fl_frame;

/* Every frame of one routine install-mode lifecycle, in wire order. */
static const fl_frame fl_frames[] = {
    {FL_BEGIN, false, false, 0U},      {FL_BEGIN, true, true, 0U},
    {FL_SELECTOR, false, false, 0U},   {FL_SELECTOR, true, true, 0U},
    {FL_COMMIT, false, false, 1U},     {FL_COMMIT, true, true, 0U},
    {FL_RESOLVE, false, true, 0U},     {FL_RESOLVE, true, false, 1U},
    {FL_POLICY, false, true, 0U},      {FL_POLICY, true, false, 0U},
    {FL_INSTALL, false, true, 1U},     {FL_INSTALL, true, false, 1U},
    {FL_DETACH, false, true, 1U},      {FL_DETACH, true, false, 0U},
    {FL_VIEW_ACTIVE, false, true, 0U}, {FL_VIEW_ACTIVE, true, false, 0U},
    {FL_WAKE, false, true, 0U},        {FL_DECISION, false, false, 0U},
    {FL_DECISION, true, true, 0U},     {FL_CONSUME, false, false, 0U},
    {FL_CONSUME, true, true, 0U},      {FL_VIEW_REMOVE, false, true, 0U},
    {FL_VIEW_REMOVE, true, false, 0U}, {FL_RETIRE, false, true, 0U},
    {FL_RETIRE, true, false, 0U},
};

/** The number of frames one lifecycle puts on the wire. */
#define FL_FRAMES (sizeof(fl_frames) / sizeof(fl_frames[0]))

/* The records each sender encodes, built once, and the wire buffer. */
typedef struct fl_state {
    pbx_ipc_begin begin;
    pbx_ipc_id id;
    pbx_ipc_resolve resolve;
    pbx_ipc_resolve_reply resolve_reply;
    pbx_ipc_policy policy;
    pbx_ipc_policy_reply policy_reply;
    pbx_ipc_install install;
    pbx_ipc_install_reply install_reply;
    pbx_ipc_detach detach;
    pbx_ipc_view view;
    pbx_ipc_view_ack view_ack;
    pbx_ipc_wake wake;
    pbx_ipc_decision decision;
    pbx_ipc_retire retire;
    const uint8_t *sel;
    uint32_t sel_len;
    uint8_t digest[PBX_SHA2_DIGEST_BYTES];
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t len;
} fl_state;

/* The full ipc op number of a frame. */
static uint16_t fl_wire_op(const fl_frame *fr)
{
    static const uint16_t ops[] = {
        PBX_IPC_OP_BEGIN,    PBX_IPC_OP_SELECTOR, PBX_IPC_OP_COMMIT,
        PBX_IPC_OP_RESOLVE,  PBX_IPC_OP_POLICY,   PBX_IPC_OP_INSTALL,
        PBX_IPC_OP_DETACH,   PBX_IPC_OP_VIEW,     PBX_IPC_OP_WAKE,
        PBX_IPC_OP_DECISION, PBX_IPC_OP_CONSUME,  PBX_IPC_OP_VIEW,
        PBX_IPC_OP_RETIRE,
    };
    return (uint16_t)(ops[fr->op] | (fr->reply ? PBX_IPC_REPLY_BIT : 0U));
}

/* Encodes a request frame into s->buf. */
static pbx_err fl_enc_req(fl_state *s, fl_op op)
{
    uint8_t *b = s->buf;
    size_t cap = sizeof(s->buf);
    pbx_ipc_selector sel = {0U, s->sel_len, s->sel};
    pbx_ipc_commit cm = {70U};
    pbx_ipc_consume cs = {s->decision.grant};
    switch (op) {
    case FL_BEGIN:
        return pbx_ipc_begin_encode(&s->begin, b, cap, &s->len);
    case FL_SELECTOR:
        return pbx_ipc_selector_encode(s->id, &sel, b, cap, &s->len);
    case FL_COMMIT:
        return pbx_ipc_commit_encode(s->id, &cm, b, cap, &s->len);
    case FL_RESOLVE:
        return pbx_ipc_resolve_encode(s->id, &s->resolve, b, cap, &s->len);
    case FL_POLICY:
        return pbx_ipc_policy_encode(s->id, &s->policy, b, cap, &s->len);
    case FL_INSTALL:
        return pbx_ipc_install_encode(s->id, &s->install, b, cap, &s->len);
    case FL_DETACH:
        return pbx_ipc_detach_encode(s->id, &s->detach, b, cap, &s->len);
    case FL_VIEW_ACTIVE:
    case FL_VIEW_REMOVE:
        s->view.kind = op == FL_VIEW_ACTIVE ? (uint8_t)PBX_IPC_VIEW_ACTIVE
                                            : (uint8_t)PBX_IPC_VIEW_REMOVE;
        return pbx_ipc_view_encode(s->id, &s->view, b, cap, &s->len);
    case FL_WAKE:
        return pbx_ipc_wake_encode(s->id, &s->wake, b, cap, &s->len);
    case FL_DECISION:
        return pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, s->id, b, cap,
                                    &s->len);
    case FL_CONSUME:
        return pbx_ipc_consume_encode(&cs, b, cap, &s->len);
    case FL_RETIRE:
        return pbx_ipc_retire_encode(s->id, &s->retire, b, cap, &s->len);
    }
    return PBX_E_IPC_UNKNOWN_OP;
}

/* Encodes a reply frame into s->buf. */
static pbx_err fl_enc_rep(fl_state *s, const fl_frame *fr)
{
    uint8_t *b = s->buf;
    size_t cap = sizeof(s->buf);
    pbx_ipc_begin_reply br = {70U};
    switch (fr->op) {
    case FL_BEGIN:
        return pbx_ipc_begin_reply_encode(s->id, &br, b, cap, &s->len);
    case FL_RESOLVE:
        return pbx_ipc_resolve_reply_encode(s->id, &s->resolve_reply, b, cap,
                                            &s->len);
    case FL_POLICY:
        return pbx_ipc_policy_reply_encode(s->id, &s->policy_reply, b, cap,
                                           &s->len);
    case FL_INSTALL:
        return pbx_ipc_install_reply_encode(s->id, &s->install_reply, b, cap,
                                            &s->len);
    case FL_DETACH:
        return pbx_ipc_detach_reply_encode(s->id, &s->detach, b, cap, &s->len);
    case FL_VIEW_ACTIVE:
    case FL_VIEW_REMOVE:
        s->view_ack.kind = s->view.kind;
        return pbx_ipc_view_reply_encode(s->id, &s->view_ack, b, cap, &s->len);
    case FL_DECISION:
        return pbx_ipc_decision_reply_encode(s->id, &s->decision, b, cap,
                                             &s->len);
    case FL_RETIRE:
        return pbx_ipc_retire_reply_encode(s->id, &s->retire, b, cap, &s->len);
    case FL_CONSUME:
        /* CONSUME names its grant in the body; its header id is zero. */
        return pbx_ipc_empty_encode(fl_wire_op(fr), (pbx_ipc_id){0U, 0U}, b,
                                    cap, &s->len);
    default:
        return pbx_ipc_empty_encode(fl_wire_op(fr), s->id, b, cap, &s->len);
    }
}

/* Decodes a request record from a checked frame into scratch storage. */
static pbx_err fl_dec_req(const pbx_ipc_frame *f, fl_op op)
{
    union {
        pbx_ipc_begin begin;
        pbx_ipc_selector sel;
        pbx_ipc_commit commit;
        pbx_ipc_resolve resolve;
        pbx_ipc_policy policy;
        pbx_ipc_install install;
        pbx_ipc_detach detach;
        pbx_ipc_view view;
        pbx_ipc_wake wake;
        pbx_ipc_consume consume;
        pbx_ipc_retire retire;
    } u;
    switch (op) {
    case FL_BEGIN:
        return pbx_ipc_begin_decode(f, &u.begin);
    case FL_SELECTOR:
        return pbx_ipc_selector_decode(f, &u.sel);
    case FL_COMMIT:
        return pbx_ipc_commit_decode(f, &u.commit);
    case FL_RESOLVE:
        return pbx_ipc_resolve_decode(f, &u.resolve);
    case FL_POLICY:
        return pbx_ipc_policy_decode(f, &u.policy);
    case FL_INSTALL:
        return pbx_ipc_install_decode(f, &u.install);
    case FL_DETACH:
        return pbx_ipc_detach_decode(f, &u.detach);
    case FL_VIEW_ACTIVE:
    case FL_VIEW_REMOVE:
        return pbx_ipc_view_decode(f, &u.view);
    case FL_WAKE:
        return pbx_ipc_wake_decode(f, &u.wake);
    case FL_DECISION:
        return pbx_ipc_empty_decode(f, PBX_IPC_OP_DECISION);
    case FL_CONSUME:
        return pbx_ipc_consume_decode(f, &u.consume);
    case FL_RETIRE:
        return pbx_ipc_retire_decode(f, &u.retire);
    }
    return PBX_E_IPC_UNKNOWN_OP;
}

/* Decodes a reply record from a checked frame into scratch storage. */
static pbx_err fl_dec_rep(const pbx_ipc_frame *f, const fl_frame *fr)
{
    union {
        pbx_ipc_begin_reply begin;
        pbx_ipc_resolve_reply resolve;
        pbx_ipc_policy_reply policy;
        pbx_ipc_install_reply install;
        pbx_ipc_detach detach;
        pbx_ipc_view_ack view;
        pbx_ipc_decision decision;
        pbx_ipc_retire retire;
    } u;
    switch (fr->op) {
    case FL_BEGIN:
        return pbx_ipc_begin_reply_decode(f, &u.begin);
    case FL_RESOLVE:
        return pbx_ipc_resolve_reply_decode(f, &u.resolve);
    case FL_POLICY:
        return pbx_ipc_policy_reply_decode(f, &u.policy);
    case FL_INSTALL:
        return pbx_ipc_install_reply_decode(f, &u.install);
    case FL_DETACH:
        return pbx_ipc_detach_reply_decode(f, &u.detach);
    case FL_VIEW_ACTIVE:
    case FL_VIEW_REMOVE:
        return pbx_ipc_view_reply_decode(f, &u.view);
    case FL_DECISION:
        return pbx_ipc_decision_reply_decode(f, &u.decision);
    case FL_RETIRE:
        return pbx_ipc_retire_reply_decode(f, &u.retire);
    default:
        return pbx_ipc_empty_decode(f, fl_wire_op(fr));
    }
}

/* The sender's half of a frame: encode it. */
static bool fl_encode(fl_state *s, const fl_frame *fr)
{
    return (fr->reply ? fl_enc_rep(s, fr) : fl_enc_req(s, fr->op)) == PBX_OK;
}

/* The receiver's half of a frame: the strict header and record decode. */
static bool fl_decode(const fl_state *s, const fl_frame *fr)
{
    pbx_ipc_frame f;
    if (pbx_ipc_frame_decode(s->buf, s->len, fr->caps, &f) != PBX_OK) {
        return false;
    }
    return (fr->reply ? fl_dec_rep(&f, fr) : fl_dec_req(&f, fr->op)) == PBX_OK;
}

/* powerboxd's half of one frame (callgrind's core-floor view). */
BENCH_MEASURED static bool
bench_floor_core_half(fl_state *s, const fl_frame *fr, bool encode)
{
    return encode ? fl_encode(s, fr) : fl_decode(s, fr);
}

/* The other end's half of one frame. */
BENCH_MEASURED static bool
bench_floor_peer_half(fl_state *s, const fl_frame *fr, bool encode)
{
    return encode ? fl_encode(s, fr) : fl_decode(s, fr);
}

/* The COMMIT digest check: SHA-256 of the selector, compared. */
BENCH_MEASURED static bool bench_floor_core_digest(fl_state *s)
{
    uint8_t d[PBX_SHA2_DIGEST_BYTES];
    return pbx_sha2_digest(s->sel, s->sel_len, d) == PBX_OK &&
           pbx_sha2_digest_equal(d, s->digest);
}

/* The measured floor: n lifecycles' frames, both ends, and the digest. */
BENCH_MEASURED static bool bench_floor_measure(fl_state *s, uint32_t n)
{
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) {
        for (size_t k = 0; k < FL_FRAMES && ok; k++) {
            const fl_frame *fr = &fl_frames[k];
            ok = fr->core_sends ? bench_floor_core_half(s, fr, true) &&
                                      bench_floor_peer_half(s, fr, false)
                                : bench_floor_peer_half(s, fr, true) &&
                                      bench_floor_core_half(s, fr, false);
            if (ok && fr->op == FL_COMMIT && !fr->reply) {
                ok = bench_floor_core_digest(s);
            }
        }
    }
    return ok;
}

/* Builds, once, the records every sender encodes, echoing each other as
 * the real peers would (the same context and object as `core`). */
static bool fl_setup(fl_state *s)
{
    const pbx_ipc_object obj = {0x0B1EC7001U, 3U};
    const pbx_ipc_id grant = {3U, 1U};
    memset(s, 0, sizeof(*s));
    if (!bench_default_begin(&s->begin)) {
        return false;
    }
    s->sel = bench_selector(&s->sel_len);
    memcpy(s->digest, s->begin.selector_digest, PBX_SHA2_DIGEST_BYTES);
    s->id = (pbx_ipc_id){5U, 1U};
    s->resolve = (pbx_ipc_resolve){s->begin.ctx.operation,
                                   s->begin.ctx.object_class,
                                   s->sel_len,
                                   {0},
                                   s->sel};
    memcpy(s->resolve.selector_digest, s->digest, PBX_SHA2_DIGEST_BYTES);
    s->resolve_reply = (pbx_ipc_resolve_reply){PBX_IPC_RESOLVE_FOUND,
                                               s->begin.ctx.object_class,
                                               s->begin.ctx.operation,
                                               obj,
                                               0x5C09EU,
                                               {0}};
    memcpy(s->resolve_reply.selector_digest, s->digest, PBX_SHA2_DIGEST_BYTES);
    s->policy = (pbx_ipc_policy){s->begin.ctx, obj};
    s->policy_reply =
        (pbx_ipc_policy_reply){PBX_IPC_VERDICT_ALLOW, s->begin.ctx.urgency,
                               s->begin.ctx.realm, s->begin.ctx.session};
    s->install =
        (pbx_ipc_install){s->begin.target, grant, s->begin.ctx.operation,
                          s->begin.ctx.object_class, s->begin.ctx.lifetime};
    s->install_reply = (pbx_ipc_install_reply){
        PBX_IPC_HANDLE_MANAGE_ONLY, s->begin.target.slot, grant,
        s->begin.target.process_id, s->begin.target.process_gen};
    s->detach.object = obj;
    return true;
}

/* The rest of the records: the grant row, its ack, wake, decision and
 * retirement. */
static void fl_setup_grant(fl_state *s)
{
    const pbx_ipc_id grant = s->install.grant;
    const pbx_ipc_object obj = s->detach.object;
    s->view.kind = PBX_IPC_VIEW_ACTIVE;
    s->view.grant = grant;
    s->view.ctx = s->begin.ctx;
    s->view.object = obj;
    s->view.scope_id = s->resolve_reply.scope_id;
    s->view.target = s->begin.target;
    s->view.installed_slot = s->begin.target.slot;
    memcpy(s->view.selector_digest, s->digest, PBX_SHA2_DIGEST_BYTES);
    s->view.label = s->begin.label;
    s->view_ack = (pbx_ipc_view_ack){PBX_IPC_VIEW_ACTIVE, grant};
    s->wake = (pbx_ipc_wake){s->begin.ctx.job_id, s->begin.ctx.job_gen};
    s->decision =
        (pbx_ipc_decision){PBX_IPC_OUTCOME_APPROVED, PBX_IPC_MODE_INSTALL,
                           grant, s->begin.target.slot, 0U};
    s->retire = (pbx_ipc_retire){obj, s->resolve_reply.scope_id,
                                 s->begin.ctx.object_class};
}

/* Checks that every frame round-trips (outside the measured functions)
 * and sums the wire bytes of one lifecycle; 0 when a frame fails. */
static size_t fl_wire_bytes(fl_state *s)
{
    size_t total = 0;
    for (size_t k = 0; k < FL_FRAMES; k++) {
        if (!fl_encode(s, &fl_frames[k]) || !fl_decode(s, &fl_frames[k])) {
            return 0U;
        }
        total += s->len;
    }
    return total;
}

int bench_floor_main(int argc, char **argv)
{
    static fl_state s;
    uint32_t n = bench_arg_u32(argc, argv, "--n", 1000U);
    if (n == 0U || !fl_setup(&s)) {
        (void)fprintf(stderr, "bench: floor setup failed\n");
        return 1;
    }
    fl_setup_grant(&s);
    size_t bytes = fl_wire_bytes(&s);
    if (bytes == 0U) {
        (void)fprintf(stderr, "bench: a floor frame does not round-trip\n");
        return 1;
    }
    uint64_t t0 = bench_now_ns();
    bool ok = bench_floor_measure(&s, n);
    uint64_t ns = bench_now_ns() - t0;
    if (!ok) {
        (void)fprintf(stderr, "bench: floor failed\n");
        return 1;
    }
    (void)printf(
        "floor n=%u frames_per_lifecycle=%zu wire_bytes_per_lifecycle=%zu "
        "ns_per_lifecycle=%.1f\n",
        n, (size_t)FL_FRAMES, bytes, (double)ns / (double)n);
    return 0;
}
