/*
 * sim_peers.c: the simulated vfsd, procd and launchd, the call transport
 * and the reply fault model. Each peer decodes the core's frame strictly
 * with the ipc decoders (a malformed outgoing frame is a core bug), checks
 * that it binds exactly the request the shadow state knows, answers with
 * any outcome through the ipc encoders, and only then may the transport
 * corrupt, replay or pad the reply. Evidence for the checker is taken from
 * the bytes actually delivered, never from what the peer meant to say.
 */
#include "sim/sim_peers.h"

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

bool sim_final(const sim_reply *r, uint16_t op, pbx_ipc_id id, pbx_ipc_frame *f)
{
    if (pbx_ipc_frame_decode(r->bytes, r->len, (uint16_t)r->ncaps, f) !=
        PBX_OK) {
        return false;
    }
    return f->op == (uint16_t)(op | PBX_IPC_REPLY_BIT) && f->status == 0U &&
           f->request.index == id.index && f->request.gen == id.gen;
}

/* A peer that does not act: an error-status reply, or a duplicate of an
 * older reply. Returns true when r was filled that way. */
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

/* Corrupts what the peer said: bit flips, truncation, surplus receipts. */
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
    if (r->ncaps < PBX_CORE_RECV_SLOTS_MAX &&
        sim_fault_fires(w, SIM_F_SURPLUS)) {
        r->caps[r->ncaps++] = sim_cap_mint(w, SIM_ROLE_JUNK, SIM_NIL, 0, 0);
    }
}

/* Delivers r into the core's reply buffer and receipts into slots. */
static pbx_core_io sim_deliver(sim_world *w, pbx_core_call *c,
                               sim_route_state *rt, const sim_reply *r)
{
    size_t n = r->len < c->reply_cap ? r->len : c->reply_cap;
    memcpy(c->reply, r->bytes, n);
    c->reply_len = n;
    memcpy(rt->last, r->bytes, r->len);
    rt->last_len = r->len;
    c->recv_count = 0U;
    for (size_t i = 0; i < r->ncaps; i++) {
        uint32_t s = sim_slot_put(w, &r->caps[i], SIM_NIL);
        if (s == SIM_NIL) {
            return PBX_CORE_IO_FAILED;
        }
        c->recv_slots[c->recv_count++] = s;
    }
    return PBX_CORE_IO_OK;
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

/* Finds the route of a call; a held scope leads to vfsd. */
static uint32_t sim_call_route(sim_world *w, const pbx_core_call *c)
{
    if (c->via_slot == PBX_CORE_SLOT_NONE) {
        if (c->route >= (uint32_t)PBX_CORE_ROUTE_LAUNCHD) {
            sim_fail(w, "core called route %u", c->route);
            return SIM_NIL;
        }
        return c->route;
    }
    if (c->via_slot >= SIM_SLOTS ||
        w->slots[c->via_slot].cap.role != SIM_ROLE_SCOPE) {
        sim_fail(w, "invariant 3: core invoked slot %u which holds no scope",
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
    case PBX_IPC_OP_INSTALL:
        return sim_procd_install(w, f, c, r);
    default:
        sim_fail(w, "core sent unexpected peer op %#x", f->op);
        return false;
    }
}

/* Takes the evidence the checker may rely on from the delivered bytes. */
static void sim_evidence(sim_world *w, const pbx_ipc_frame *f,
                         const sim_reply *r)
{
    switch (f->op) {
    case PBX_IPC_OP_RESOLVE:
        sim_vfsd_resolve_evidence(w, f, r);
        break;
    case PBX_IPC_OP_RETIRE:
        sim_vfsd_retire_evidence(w, f, r);
        break;
    case PBX_IPC_OP_POLICY:
    case PBX_IPC_OP_PROMPT:
    case PBX_IPC_OP_VIEW:
        sim_ttyd_evidence(w, f, r);
        break;
    default:
        break;
    }
}

pbx_core_io sim_peer_call(sim_world *w, pbx_core_call *c)
{
    pbx_ipc_frame f;
    c->reply_len = 0U;
    c->recv_count = 0U;
    uint32_t route = sim_call_route(w, c);
    if (route == SIM_NIL || !sim_call_frame(w, c, route, &f)) {
        return PBX_CORE_IO_FAILED;
    }
    sim_route_state *rt = &w->routes[route];
    rt->dirty = 1U;
    sim_event_add(w, SIM_EV_CALL, route, f.op, f.request.index, f.request.gen);
    if (w->step < rt->busy_until) {
        return PBX_CORE_IO_BUSY;
    }
    if (sim_fault_fires(w, SIM_F_BUSY)) {
        rt->busy_until = w->step + 1U + sim_below(w, 40U);
        return PBX_CORE_IO_BUSY;
    }
    if (sim_fault_fires(w, SIM_F_FAILED)) {
        return PBX_CORE_IO_FAILED;
    }
    static sim_reply r;
    memset(&r, 0, sizeof(r));
    if (!sim_no_act(w, rt, &r, &f)) {
        if (!sim_answer(w, &f, c, &r)) {
            return PBX_CORE_IO_FAILED;
        }
        /* Every fresh answer echoes the call's seq (one place for every
         * simulated peer); a replayed older reply keeps its own. */
        (void)pbx_ipc_frame_set_seq(r.bytes, r.len, f.seq);
    }
    /* IO_OK means the kernel moved the capability, whatever the answer. */
    if (c->send_slot != PBX_CORE_SLOT_NONE && !c->send_copy) {
        sim_slot_take(w, c->send_slot);
    }
    sim_mutate(w, &r, f.op);
    sim_evidence(w, &f, &r);
    sim_event_add(w, SIM_EV_ANSWER, f.op, r.len, r.ncaps,
                  r.len > 0U ? r.bytes[r.len - 1U] : 0U);
    return sim_deliver(w, c, rt, &r);
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
        w->permanent = 1U;
        return PBX_CORE_IO_FAILED;
    }
    q->wakes++;
    if (q->wakes > 1U) {
        sim_fail(w, "invariant 10: request %u/%u woken twice", f.request.index,
                 f.request.gen);
    }
    sim_check_terminal(w, f.request.index, "wake");
    return PBX_CORE_IO_OK;
}
