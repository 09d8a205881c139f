/*
 * sim_peers.c: the call transport and the reply fault model. A send the
 * kernel takes reaches its peer at once: the peer decodes the core's frame
 * strictly with the ipc decoders (a malformed outgoing frame is a core
 * bug), checks that it binds exactly the request the shadow state knows,
 * acts, and answers with any outcome through the ipc encoders, echoing
 * the call's seq; only then may the transport corrupt, replay, pad, delay,
 * duplicate or lose the reply, which goes in flight (sim_flight.c).
 * Evidence for the checker is taken from the bytes the core accepted as
 * the answer to its open call, never from what the peer meant to say.
 */
#include "sim/sim_peers.h"

#include <stddef.h>
#include <string.h>

bool sim_ctx_equal(const pbx_ipc_context *a, const pbx_ipc_context *b)
{
    return a->session == b->session && a->job_id == b->job_id &&
           a->job_gen == b->job_gen && a->realm == b->realm &&
           a->operation == b->operation && a->object_class == b->object_class &&
           a->lifetime == b->lifetime && a->mode == b->mode &&
           a->urgency == b->urgency && a->entry.len == b->entry.len &&
           memcmp(a->entry.bytes, b->entry.bytes, a->entry.len) == 0;
}

sim_req *sim_live_req(sim_world *w, pbx_ipc_id id, const char *who)
{
    if (id.index >= SIM_REQ_MAX || w->reqs[id.index].live == 0U ||
        w->reqs[id.index].gen != id.gen) {
        sim_fail(w, "%s: frame names request %u/%u the clients never began",
                 who, id.index, id.gen);
        return NULL;
    }
    return &w->reqs[id.index];
}

bool sim_final(const sim_flight *fl, pbx_ipc_frame *f)
{
    if (pbx_ipc_frame_decode(fl->bytes, fl->len, (uint16_t)fl->ncaps, f) !=
        PBX_OK) {
        return false;
    }
    return f->op == (uint16_t)(fl->ask_op | PBX_IPC_REPLY_BIT) &&
           f->status == 0U && f->request.index == fl->ask_id.index &&
           f->request.gen == fl->ask_id.gen;
}

/* A peer that does not act: an error-status reply, or a duplicate of an
 * older reply (its own seq, or this call's patched in, as a confused peer
 * would). Returns true when r was filled that way. */
static bool sim_no_act(sim_world *w, const sim_route_state *rt, sim_reply *r,
                       const pbx_ipc_frame *req)
{
    if (sim_fault_fires(w, SIM_F_STATUS)) {
        if (pbx_ipc_status_reply_encode(req->op, req->request, PBX_E_CORE_BUSY,
                                        r->bytes, sizeof(r->bytes),
                                        &r->len) != PBX_OK) {
            r->len = 0U;
        }
        (void)pbx_ipc_frame_set_seq(r->bytes, r->len, req->seq);
        return true;
    }
    if (rt->last_len > 0U && sim_fault_fires(w, SIM_F_REPLAY)) {
        memcpy(r->bytes, rt->last, rt->last_len);
        r->len = rt->last_len;
        r->replayed = 1U;
        if (sim_chance(w, 512U)) {
            (void)pbx_ipc_frame_set_seq(r->bytes, r->len, req->seq);
        }
        return true;
    }
    return false;
}

/* Whether byte at of a reply to op is an identity a peer vouches for and
 * the core cannot cross-check (vfsd's object and scope identity, procd's
 * installed slot): a flip there is a different answer, not a malformed
 * one, and the echo faults cover wrong answers. */
static bool sim_vouched(uint16_t op, size_t at)
{
    size_t b = at - PBX_IPC_HEADER_BYTES;
    if (at < PBX_IPC_HEADER_BYTES) {
        return false;
    }
    return (op == (uint16_t)PBX_IPC_OP_RESOLVE && b >= 8U && b < 28U) ||
           (op == (uint16_t)PBX_IPC_OP_INSTALL && b >= 4U && b < 8U);
}

/* Corrupts what the peer said: bit flips, truncation, surplus receipts,
 * and (an echo fault) a seq that names no call. */
static void sim_mutate(sim_world *w, sim_reply *r, uint16_t op)
{
    if (r->len > 0U && sim_fault_fires(w, SIM_F_FLIP)) {
        uint32_t bit = sim_below(w, (uint32_t)r->len * 8U);
        if (!sim_vouched(op, bit / 8U)) {
            r->bytes[bit / 8U] ^= (uint8_t)(1U << (bit % 8U));
        }
    }
    if (r->len > 0U && sim_fault_fires(w, SIM_F_TRUNC)) {
        r->len = sim_below(w, (uint32_t)r->len);
    }
    /* Never on a replayed reply: it travels without its receipts, and a
     * junk one would stand in for its object or handle, a different
     * answer the core cannot tell from the true one (seed 1441 with the
     * broker fault: an exact FOUND replayed under its own call's seq). */
    if (r->ncaps < PBX_CORE_RECV_SLOTS_MAX && r->replayed == 0U &&
        sim_fault_fires(w, SIM_F_SURPLUS)) {
        r->caps[r->ncaps++] = sim_cap_mint(w, SIM_ROLE_JUNK, SIM_NIL, 0, 0);
    }
    uint32_t seq = 0;
    if (sim_chance(w, 128U) &&
        pbx_ipc_frame_peek_seq(r->bytes, r->len, &seq) == PBX_OK &&
        sim_fault_fires(w, SIM_F_ECHO)) {
        (void)pbx_ipc_frame_set_seq(r->bytes, r->len, seq ^ 0x10000U);
    }
}

/* Decodes the core's outgoing frame and checks route and capability. */
static bool sim_call_frame(sim_world *w, const pbx_core_call *c, uint32_t route,
                           pbx_ipc_frame *f)
{
    uint16_t caps = c->send_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    pbx_err err = pbx_ipc_frame_decode(c->frame, c->frame_len, caps, f);
    if (err != PBX_OK) {
        sim_fail(w, "core sent a malformed peer frame: %s", pbx_err_name(err));
        return false;
    }
    uint32_t family = (uint32_t)f->op >> 8;
    if (family != route + 1U || (f->op & PBX_IPC_REPLY_BIT) != 0U) {
        sim_fail(w, "core sent op %#x on route %u", f->op, route);
        return false;
    }
    if (caps == 1U && (c->send_slot >= SIM_SLOTS ||
                       w->slots[c->send_slot].cap.role == SIM_ROLE_NONE)) {
        sim_fail(w, "core transferred slot %u which holds nothing",
                 c->send_slot);
        return false;
    }
    return true;
}

/* Finds the peer of a call; a held scope leads to vfsd. */
static uint32_t sim_call_route(sim_world *w, const pbx_core_call *c)
{
    if (c->route != PBX_CORE_ROUTE_SCOPE) {
        if (c->route >= (uint32_t)PBX_CORE_ROUTE_LAUNCHD ||
            c->via_slot != PBX_CORE_SLOT_NONE) {
            sim_fail(w, "core called route %u (via %u)", c->route, c->via_slot);
            return SIM_NIL;
        }
        return c->route;
    }
    if (c->via_slot >= SIM_SLOTS ||
        w->slots[c->via_slot].cap.role != SIM_ROLE_SCOPE) {
        sim_fail(w, "invariant 2: core invoked slot %u which holds no scope",
                 c->via_slot);
        return SIM_NIL;
    }
    return PBX_CORE_ROUTE_VFSD;
}

/* Runs the peer handler of op; false when the peer saw a violation. */
static bool sim_answer(sim_world *w, const pbx_ipc_frame *f,
                       const pbx_core_call *c, sim_reply *r)
{
    switch (f->op) {
    case PBX_IPC_OP_RESOLVE:
        return sim_vfsd_resolve(w, f, c, r);
    case PBX_IPC_OP_DETACH:
        return sim_vfsd_detach(w, f, c, r);
    case PBX_IPC_OP_RETIRE:
        return sim_vfsd_retire(w, f, r);
    case PBX_IPC_OP_POLICY:
        return sim_ttyd_policy(w, f, r);
    case PBX_IPC_OP_PROMPT:
        return sim_ttyd_prompt(w, f, r);
    case PBX_IPC_OP_VIEW:
        return sim_ttyd_view(w, f, r);
    case PBX_IPC_OP_WITHDRAW:
        return sim_ttyd_withdraw(w, f, r);
    case PBX_IPC_OP_INSTALL:
        return sim_procd_install(w, f, c, r);
    default:
        sim_fail(w, "core sent unexpected peer op %#x", f->op);
        return false;
    }
}

/* A send that went nowhere. A WITHDRAW that failed ends the core's need
 * for it (display hygiene, not authority): the prompt it was for may stay
 * up, which the checker then no longer holds against the decision. */
static pbx_core_io sim_send_failed(sim_world *w, const pbx_ipc_frame *f)
{
    if (f->op == (uint16_t)PBX_IPC_OP_WITHDRAW &&
        f->request.index < SIM_REQ_MAX) {
        w->reqs[f->request.index].prompt_showing = 0U;
    }
    return PBX_CORE_IO_FAILED;
}

/* Notes what the kernel took toward ttyd, whether or not ttyd acts on
 * it: a PROMPT the core must withdraw unless answered, an ACTIVE row it
 * must remove. */
static void sim_sent(sim_world *w, const pbx_ipc_frame *f)
{
    pbx_ipc_view v;
    if (f->op == (uint16_t)PBX_IPC_OP_PROMPT &&
        f->request.index < SIM_REQ_MAX) {
        w->reqs[f->request.index].prompts++;
    } else if (f->op == (uint16_t)PBX_IPC_OP_VIEW &&
               pbx_ipc_view_decode(f, &v) == PBX_OK &&
               v.kind == (uint8_t)PBX_IPC_VIEW_ACTIVE &&
               v.grant.index < SIM_GRANT_MAX) {
        w->row_sent[v.grant.index] = v.grant.gen;
        w->ttyd_row[v.grant.index] = v.grant.gen;
    } else if (f->op == (uint16_t)PBX_IPC_OP_VIEW &&
               pbx_ipc_view_decode(f, &v) == PBX_OK &&
               v.kind == (uint8_t)PBX_IPC_VIEW_REMOVE &&
               v.grant.index < SIM_GRANT_MAX &&
               w->ttyd_row[v.grant.index] == v.grant.gen) {
        w->ttyd_row[v.grant.index] = 0U;
    }
}

/* Lets the peer of f act on it and answer into r. A WITHDRAW always takes
 * the prompt down (the faults only change the answer). Returns false when
 * the peer saw a violation. */
static bool sim_act(sim_world *w, const sim_route_state *rt,
                    const pbx_ipc_frame *f, const pbx_core_call *c,
                    sim_reply *r)
{
    memset(r, 0, sizeof(*r));
    if (f->op == (uint16_t)PBX_IPC_OP_WITHDRAW) {
        if (!sim_answer(w, f, c, r)) {
            return false;
        }
        sim_reply keep = *r;
        if (sim_no_act(w, rt, r, f)) {
            r->ncaps = keep.ncaps;
        }
        return true;
    }
    return sim_no_act(w, rt, r, f) || sim_answer(w, f, c, r);
}

/* Delivery delay of a reply of route (and op): 0..max_delay steps, or
 * under the late fault well past its call's deadline. */
static uint64_t sim_delay(sim_world *w, uint32_t route, uint16_t op,
                          uint32_t peer)
{
    uint64_t d = sim_below(w, w->max_delay + 1U);
    if (sim_fault_fires(w, SIM_F_LATE)) {
        uint32_t k = sim_call_class(route, op);
        uint64_t dl = w->time_ms[k] / w->ms_step + 1U;
        d = dl + 1U + sim_below(w, (uint32_t)(2U * dl));
        sim_disturb(w, peer, w->step + dl + 1U);
    }
    return d;
}

/* Puts r in flight as the reply to call f on its route: a scoped call's
 * (RESOLVE) on vfsd's route, as the reference vfsd answers, except under
 * the echo fault and for a replayed older frame, which come back through
 * the scope the call went by (where the job could read them: the core
 * must refuse them). A replay on the route that echoes another open
 * RESOLVE exactly, with a surplus object receipt, is not modelled: on
 * the route nothing binds a receipt to the object the FOUND names.
 * Lost under the drop fault and duplicated under the dup fault. */
static void sim_to_flight(sim_world *w, const pbx_core_call *c, uint32_t peer,
                          const pbx_ipc_frame *f, const sim_reply *r)
{
    static sim_flight fl;
    memset(&fl, 0, offsetof(sim_flight, bytes));
    fl.route = c->route;
    fl.peer = peer;
    fl.via_slot = c->via_slot;
    if (c->route == PBX_CORE_ROUTE_SCOPE && r->replayed == 0U &&
        !sim_fault_fires(w, SIM_F_ECHO)) {
        fl.route = PBX_CORE_ROUTE_VFSD;
        fl.via_slot = PBX_CORE_SLOT_NONE;
    }
    fl.seq = f->seq;
    fl.ask_op = f->op;
    fl.ask_id = f->request;
    pbx_ipc_view v;
    if (f->op == (uint16_t)PBX_IPC_OP_VIEW &&
        pbx_ipc_view_decode(f, &v) == PBX_OK) {
        fl.ask_kind = v.kind;
    }
    memcpy(fl.bytes, r->bytes, r->len);
    fl.len = r->len;
    memcpy(fl.caps, r->caps, sizeof(fl.caps));
    fl.ncaps = r->ncaps;
    w->led_in += r->ncaps;
    fl.due = w->step + sim_delay(w, c->route, f->op, peer);
    if (sim_fault_fires(w, SIM_F_DROP)) {
        uint32_t k = sim_call_class(c->route, f->op);
        sim_disturb(w, peer, w->step + w->time_ms[k] / w->ms_step + 2U);
        for (size_t i = 0; i < fl.ncaps; i++) {
            sim_cap_destroy(w, &fl.caps[i]);
        }
        w->led_dropped += fl.ncaps;
        sim_event_add(w, SIM_EV_LOST, f->op, f->seq, fl.ncaps, 0);
        return;
    }
    (void)sim_flight_add(w, &fl);
    if (sim_fault_fires(w, SIM_F_DUP)) {
        fl.dup = 1U;
        fl.ncaps = 0U;
        fl.due = w->step + sim_delay(w, c->route, f->op, peer);
        (void)sim_flight_add(w, &fl);
    }
}

pbx_core_io sim_peer_send(sim_world *w, const pbx_core_call *c, bool nth)
{
    pbx_ipc_frame f;
    uint32_t peer = sim_call_route(w, c);
    if (peer == SIM_NIL || !sim_call_frame(w, c, peer, &f)) {
        return PBX_CORE_IO_FAILED;
    }
    sim_route_state *rt = &w->routes[peer];
    rt->dirty = 1U;
    sim_event_add(w, SIM_EV_CALL, c->route, f.op, f.request.index, f.seq);
    if (nth || sim_route_gone(w, peer)) {
        return sim_send_failed(w, &f);
    }
    if (w->step < rt->busy_until) {
        return PBX_CORE_IO_BUSY;
    }
    uint64_t fired = w->faults_fired;
    if (sim_fault_fires(w, SIM_F_BUSY)) {
        rt->busy_until = w->step + 1U + sim_below(w, 40U);
        sim_disturb(w, peer, rt->busy_until);
        return PBX_CORE_IO_BUSY;
    }
    if (sim_fault_fires(w, SIM_F_FAILED)) {
        sim_disturb(w, peer, w->step + 1U);
        return sim_send_failed(w, &f);
    }
    if (w->nflights + 2U > SIM_FLIGHTS) {
        /* The kernel's queues toward the peer are full. */
        return PBX_CORE_IO_BUSY;
    }
    static sim_reply r;
    if (!sim_act(w, rt, &f, c, &r)) {
        return PBX_CORE_IO_FAILED;
    }
    /* OK means the kernel moved the capability, whatever the answer. */
    if (c->send_slot != PBX_CORE_SLOT_NONE && !c->send_copy) {
        sim_slot_take(w, c->send_slot);
    }
    /* Encoders write seq 0: the answer echoes the call's (a status reply
     * or a replay already carries the seq it echoes). */
    uint32_t seq = 0;
    if (pbx_ipc_frame_peek_seq(r.bytes, r.len, &seq) == PBX_OK && seq == 0U) {
        (void)pbx_ipc_frame_set_seq(r.bytes, r.len, f.seq);
    }
    memcpy(rt->last, r.bytes, r.len);
    rt->last_len = r.len;
    sim_sent(w, &f);
    sim_mutate(w, &r, f.op);
    sim_call_sent(w, c, peer, &f);
    sim_to_flight(w, c, peer, &f, &r);
    if (w->faults_fired != fired) {
        /* A faulty answer may be refused (then its call waits for its
         * deadline) or judged inexact (then retried on a later tick). */
        uint32_t k = sim_call_class(c->route, f.op);
        sim_disturb(w, peer,
                    w->step + w->time_ms[k] / w->ms_step + w->max_delay + 2U);
    }
    sim_event_add(w, SIM_EV_SEND, f.op, r.len, r.ncaps,
                  r.len > 0U ? r.bytes[r.len - 1U] : 0U);
    return PBX_CORE_IO_OK;
}

pbx_core_io sim_launchd_wake(sim_world *w, const uint8_t *frame, size_t len)
{
    pbx_ipc_frame f;
    pbx_ipc_wake wk;
    sim_route_state *rt = &w->routes[PBX_CORE_ROUTE_LAUNCHD];
    rt->dirty = 1U;
    if (pbx_ipc_frame_decode(frame, len, 0U, &f) != PBX_OK ||
        f.op != (uint16_t)PBX_IPC_OP_WAKE ||
        pbx_ipc_wake_decode(&f, &wk) != PBX_OK) {
        sim_fail(w, "core sent a malformed WAKE");
        return PBX_CORE_IO_FAILED;
    }
    sim_req *q = sim_live_req(w, f.request, "launchd");
    if (q == NULL) {
        return PBX_CORE_IO_FAILED;
    }
    sim_event_add(w, SIM_EV_WAKE, f.request.index, f.request.gen, 0, 0);
    if (wk.job_id != q->begin.ctx.job_id ||
        wk.job_gen != q->begin.ctx.job_gen) {
        sim_fail(w, "WAKE names job %llu/%u, request has another job",
                 (unsigned long long)wk.job_id, wk.job_gen);
        return PBX_CORE_IO_FAILED;
    }
    if (w->step < rt->busy_until) {
        return PBX_CORE_IO_BUSY;
    }
    if (sim_fault_fires(w, SIM_F_NOTIFY)) {
        rt->busy_until = w->step + 20U + sim_below(w, 600U);
        return PBX_CORE_IO_BUSY;
    }
    if (sim_fault_fires(w, SIM_F_WAKE_FAIL)) {
        /* launchd's wake route refuses this wake: the core keeps the
         * decision and retries on a later tick, never a fail-stop. In a
         * seed that allows a permanent fault, now and then the kernel
         * rejects it for good (side stream): the core must stop with
         * the notification status (sim_core_step checks it). */
        if (w->rate[SIM_F_DEL_PERM] != 0U && sim_side_below(w, 256U) == 0U) {
            w->permanent = 1U;
            w->wake_rejected = 1U;
            return PBX_CORE_IO_REJECTED;
        }
        return PBX_CORE_IO_FAILED;
    }
    q->wakes++;
    if (q->wakes > 1U) {
        sim_fail(w, "invariant 9: request %u/%u woken twice", f.request.index,
                 f.request.gen);
    }
    sim_check_terminal(w, f.request.index, "wake");
    return PBX_CORE_IO_OK;
}
