/*
 * sim_ttyd.c: the simulated ttyd (session policy, trusted prompt, grant
 * view rows) and procd (grant installation). ttyd answers every verdict,
 * RETRY and answer, including forbidden ones built by hand (ALLOW for an
 * exceptional request); procd installs the copied object and returns a
 * manage-only handle, or a staging handle under the bad-capability fault.
 */
#include "sim/sim_peers.h"

#include <string.h>

/* Checks that ctx and object bind the request exactly. */
static bool sim_ttyd_bind(sim_world *w, const sim_req *s,
                          const pbx_ipc_context *ctx, pbx_ipc_object object,
                          const char *who)
{
    if (!sim_ctx_equal(ctx, &s->begin.ctx) || object.id != s->object.id ||
        object.gen != s->object.gen) {
        sim_fail(w,
                 "invariant 2: %s does not bind the request's context "
                 "and resolved object",
                 who);
        return false;
    }
    return true;
}

/* Encodes ALLOW for an exceptional request by patching the urgency byte:
 * the encoder refuses it, a compromised ttyd would not. */
static bool sim_policy_exceptional_allow(pbx_ipc_id id,
                                         pbx_ipc_policy_reply *pr, sim_reply *r)
{
    pr->verdict = PBX_IPC_VERDICT_ALLOW;
    pr->urgency = PBX_IPC_URGENCY_ROUTINE;
    if (pbx_ipc_policy_reply_encode(id, pr, r->bytes, sizeof(r->bytes),
                                    &r->len) != PBX_OK) {
        return false;
    }
    r->bytes[PBX_IPC_HEADER_BYTES + 1U] = PBX_IPC_URGENCY_EXCEPTIONAL;
    return true;
}

bool sim_ttyd_policy(sim_world *w, const pbx_ipc_frame *f, sim_reply *r)
{
    pbx_ipc_policy q;
    if (pbx_ipc_policy_decode(f, &q) != PBX_OK) {
        sim_fail(w, "ttyd: undecodable POLICY");
        return false;
    }
    sim_req *s = sim_live_req(w, f->request, "ttyd policy");
    if (s == NULL || !sim_ttyd_bind(w, s, &q.ctx, q.object, "POLICY")) {
        return false;
    }
    bool routine = q.ctx.urgency == (uint8_t)PBX_IPC_URGENCY_ROUTINE;
    pbx_ipc_policy_reply pr = {PBX_IPC_VERDICT_DENY, q.ctx.urgency, q.ctx.realm,
                               q.ctx.session};
    uint32_t roll = sim_below(w, 100U);
    if (routine && roll < 55U) {
        pr.verdict = PBX_IPC_VERDICT_ALLOW;
    } else if (roll >= (routine ? 70U : 30U)) {
        pr.verdict = PBX_IPC_VERDICT_PROMPT;
    }
    if (sim_fault_fires(w, SIM_F_ECHO)) {
        if (!routine && sim_chance(w, 512U)) {
            return sim_policy_exceptional_allow(f->request, &pr, r);
        }
        pr.realm ^= 1U + sim_below(w, 3U);
    }
    return pbx_ipc_policy_reply_encode(f->request, &pr, r->bytes,
                                       sizeof(r->bytes), &r->len) == PBX_OK;
}

/* An echo fault in a prompt answer: one identity is wrong. */
static void sim_prompt_echo_fault(sim_world *w, pbx_ipc_prompt_reply *a)
{
    switch (sim_below(w, 5U)) {
    case 0:
        a->session++;
        break;
    case 1:
        a->job_gen++;
        break;
    case 2:
        a->request.gen++;
        break;
    case 3:
        a->object.gen++;
        break;
    default:
        a->realm++;
        break;
    }
}

bool sim_ttyd_prompt(sim_world *w, const pbx_ipc_frame *f, sim_reply *r)
{
    pbx_ipc_prompt q;
    if (pbx_ipc_prompt_decode(f, &q) != PBX_OK) {
        sim_fail(w, "ttyd: undecodable PROMPT");
        return false;
    }
    sim_req *s = sim_live_req(w, f->request, "ttyd prompt");
    if (s == NULL || !sim_ttyd_bind(w, s, &q.ctx, q.object, "PROMPT")) {
        return false;
    }
    if (q.selector_len != s->begin.selector_len ||
        memcmp(q.selector, s->selector, q.selector_len) != 0 ||
        q.label.len != s->begin.label.len) {
        sim_fail(w, "invariant 2: PROMPT shows another selector or label");
        return false;
    }
    /* Showing from now on, until an exact answer or a RETRY reaches the
     * core or a WITHDRAW reaches ttyd. */
    s->prompt_showing = 1U;
    pbx_ipc_prompt_reply a;
    memset(&a, 0, sizeof(a));
    uint32_t roll = sim_below(w, 100U);
    a.retry = roll < 30U;
    if (!a.retry) {
        a.answer = roll < 80U ? PBX_IPC_ANSWER_APPROVE : PBX_IPC_ANSWER_DENY;
        a.realm = q.ctx.realm;
        a.session = q.ctx.session;
        a.job_id = q.ctx.job_id;
        a.job_gen = q.ctx.job_gen;
        a.request = f->request;
        a.object = q.object;
        if (sim_fault_fires(w, SIM_F_ECHO)) {
            sim_prompt_echo_fault(w, &a);
        }
    }
    return pbx_ipc_prompt_reply_encode(f->request, &a, r->bytes,
                                       sizeof(r->bytes), &r->len) == PBX_OK;
}

sim_grant *sim_runtime_grant(sim_world *w, pbx_ipc_id grant, uint64_t object_id)
{
    sim_grant *gr = &w->grants[grant.index];
    for (uint32_t i = 0; i < SIM_REQ_MAX; i++) {
        const sim_req *s = &w->reqs[i];
        if (s->live == 0U || s->object.id != object_id ||
            s->begin.ctx.mode != (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY) {
            continue;
        }
        if (gr->state != (uint32_t)SIM_G_NONE &&
            gr->state != (uint32_t)SIM_G_RETIRED) {
            sim_fail(w,
                     "invariant 7: grant %u reused (gen %u -> %u) "
                     "before retirement",
                     grant.index, gr->gen, grant.gen);
            return NULL;
        }
        memset(gr, 0, sizeof(*gr));
        gr->state = SIM_G_INSTALLED;
        /* A VIEW or RETIRE naming it shows the core accepted the alias. */
        gr->core_seen = 1U;
        gr->gen = grant.gen;
        gr->req = i;
        gr->req_gen = s->gen;
        gr->object = s->object;
        gr->scope_ident = s->scope_ident;
        gr->ctx = s->begin.ctx;
        gr->invocation_id = s->begin.invocation_id;
        gr->badge = s->badge;
        memcpy(gr->digest, s->begin.selector_digest, 32U);
        w->reqs[i].grant = grant.index;
        return gr;
    }
    return NULL;
}

/* Finds (or, for a runtime-reply grant, creates) grant v's shadow. */
static sim_grant *sim_view_grant(sim_world *w, const pbx_ipc_view *v)
{
    uint32_t g = v->grant.index;
    if (g >= SIM_GRANT_MAX) {
        sim_fail(w, "ttyd: VIEW names grant index %u out of range", g);
        return NULL;
    }
    sim_grant *gr = &w->grants[g];
    if (gr->gen == v->grant.gen && gr->state != (uint32_t)SIM_G_NONE) {
        return gr;
    }
    if (v->ctx.mode == (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY) {
        gr = sim_runtime_grant(w, v->grant, v->object.id);
        if (gr != NULL || w->violation[0] != '\0') {
            return gr;
        }
    }
    sim_fail(w,
             "invariant 7: VIEW names grant %u/%u that was never "
             "installed",
             g, v->grant.gen);
    return NULL;
}

/* Checks a VIEW row against the grant and the cleanup order. */
static bool sim_view_check(sim_world *w, const pbx_ipc_view *v,
                           const sim_grant *gr)
{
    if (!sim_ctx_equal(&v->ctx, &gr->ctx) || v->object.id != gr->object.id ||
        v->object.gen != gr->object.gen || v->scope_id != gr->scope_ident ||
        v->installed_slot != gr->installed_slot ||
        memcmp(v->selector_digest, gr->digest, 32U) != 0) {
        sim_fail(w,
                 "ttyd: VIEW row of grant %u is not its full row "
                 "(ctx %d object %llu/%u vs %llu/%u scope %d slot %u/%u)",
                 v->grant.index, sim_ctx_equal(&v->ctx, &gr->ctx),
                 (unsigned long long)v->object.id, v->object.gen,
                 (unsigned long long)gr->object.id, gr->object.gen,
                 v->scope_id == gr->scope_ident, v->installed_slot,
                 gr->installed_slot);
        return false;
    }
    /* A returned ttyd is sent the row again (ACTIVE already acked). */
    if (v->kind == (uint8_t)PBX_IPC_VIEW_ACTIVE &&
        gr->state != (uint32_t)SIM_G_INSTALLED &&
        gr->state != (uint32_t)SIM_G_ACTIVE) {
        sim_fail(w, "ttyd: ACTIVE row for grant %u in shadow state %u",
                 v->grant.index, gr->state);
        return false;
    }
    if (v->kind == (uint8_t)PBX_IPC_VIEW_REMOVE &&
        w->row_sent[v->grant.index] != v->grant.gen) {
        sim_fail(w,
                 "ttyd: REMOVE row for grant %u/%u whose ACTIVE row "
                 "never reached ttyd",
                 v->grant.index, v->grant.gen);
        return false;
    }
    if (v->kind == (uint8_t)PBX_IPC_VIEW_REMOVE &&
        (gr->procd_live != 0U ||
         (sim_count_held(w, SIM_ROLE_ALIAS, gr->req, gr->req_gen) != 0U &&
          !sim_alias_owed(w, gr->req, gr->req_gen)))) {
        sim_fail(w,
                 "invariant 8: REMOVE row for grant %u/%u before its "
                 "revocation authority was deleted",
                 v->grant.index, v->grant.gen);
        return false;
    }
    return true;
}

bool sim_ttyd_view(sim_world *w, const pbx_ipc_frame *f, sim_reply *r)
{
    pbx_ipc_view v;
    if (pbx_ipc_view_decode(f, &v) != PBX_OK) {
        sim_fail(w, "ttyd: undecodable VIEW");
        return false;
    }
    if (f->request.index != v.grant.index || f->request.gen != v.grant.gen) {
        sim_fail(w, "ttyd: VIEW header does not name its grant");
        return false;
    }
    sim_grant *gr = sim_view_grant(w, &v);
    if (gr == NULL || !sim_view_check(w, &v, gr)) {
        return false;
    }
    pbx_ipc_view_ack ack = {v.kind, v.grant};
    if (sim_fault_fires(w, SIM_F_ECHO)) {
        if (sim_chance(w, 512U)) {
            ack.kind = (uint8_t)(3U - v.kind);
        } else {
            ack.grant.gen++;
        }
    }
    return pbx_ipc_view_reply_encode(f->request, &ack, r->bytes,
                                     sizeof(r->bytes), &r->len) == PBX_OK;
}

bool sim_ttyd_withdraw(sim_world *w, const pbx_ipc_frame *f, sim_reply *r)
{
    pbx_ipc_withdraw q;
    if (pbx_ipc_withdraw_decode(f, &q) != PBX_OK) {
        sim_fail(w, "ttyd: undecodable WITHDRAW");
        return false;
    }
    sim_req *s = sim_live_req(w, f->request, "ttyd withdraw");
    if (s == NULL) {
        return false;
    }
    if (s->prompts == 0U || q.object.id != s->object.id ||
        q.object.gen != s->object.gen) {
        sim_fail(w, "ttyd: WITHDRAW of request %u/%u which %s",
                 f->request.index, f->request.gen,
                 s->prompts == 0U ? "never prompted"
                                  : "prompted for another object");
        return false;
    }
    s->prompt_showing = 0U;
    if (sim_fault_fires(w, SIM_F_ECHO)) {
        q.object.gen++;
    }
    return pbx_ipc_withdraw_reply_encode(f->request, &q, r->bytes,
                                         sizeof(r->bytes), &r->len) == PBX_OK;
}

/* Records the policy and prompt evidence of the delivered bytes: a
 * routine ALLOW, the user's exact APPROVE, and (an exact answer or a
 * RETRY) that the prompt is no longer showing. */
static void sim_ttyd_req_evidence(sim_world *w, const sim_flight *fl,
                                  const pbx_ipc_frame *d)
{
    sim_req *s = &w->reqs[fl->ask_id.index];
    const pbx_ipc_context *c = &s->begin.ctx;
    pbx_ipc_policy_reply pr;
    pbx_ipc_prompt_reply a;
    if (fl->ask_op == (uint16_t)PBX_IPC_OP_POLICY) {
        s->policy_allow = pbx_ipc_policy_reply_decode(d, &pr) == PBX_OK &&
                          pr.verdict == (uint8_t)PBX_IPC_VERDICT_ALLOW &&
                          pr.urgency == (uint8_t)PBX_IPC_URGENCY_ROUTINE &&
                          c->urgency == (uint8_t)PBX_IPC_URGENCY_ROUTINE &&
                          pr.realm == c->realm && pr.session == c->session;
        return;
    }
    if (pbx_ipc_prompt_reply_decode(d, &a) != PBX_OK) {
        return;
    }
    bool exact = a.session == c->session && a.realm == c->realm &&
                 a.job_id == c->job_id && a.job_gen == c->job_gen &&
                 a.request.index == fl->ask_id.index &&
                 a.request.gen == fl->ask_id.gen &&
                 a.object.id == s->object.id && a.object.gen == s->object.gen;
    if (a.retry || exact) {
        s->prompt_showing = 0U;
    }
    if (!a.retry && exact && a.answer == (uint8_t)PBX_IPC_ANSWER_APPROVE) {
        s->user_approved = 1U;
    }
}

void sim_ttyd_evidence(sim_world *w, const sim_flight *fl)
{
    pbx_ipc_frame d;
    pbx_ipc_view_ack ack;
    bool exact = sim_final(fl, &d);
    if (fl->ask_op != (uint16_t)PBX_IPC_OP_VIEW) {
        if (exact) {
            sim_ttyd_req_evidence(w, fl, &d);
        }
        return;
    }
    if (fl->ask_id.index >= SIM_GRANT_MAX || !exact ||
        pbx_ipc_view_reply_decode(&d, &ack) != PBX_OK ||
        ack.kind != fl->ask_kind || ack.grant.index != fl->ask_id.index ||
        ack.grant.gen != fl->ask_id.gen) {
        return;
    }
    sim_grant *gr = &w->grants[fl->ask_id.index];
    if (fl->ask_kind == (uint32_t)PBX_IPC_VIEW_ACTIVE) {
        gr->state = SIM_G_ACTIVE;
        gr->was_active = 1U;
        if (gr->req < SIM_REQ_MAX && w->reqs[gr->req].live != 0U &&
            w->reqs[gr->req].gen == gr->req_gen) {
            w->reqs[gr->req].active_acked = fl->ask_id;
        }
    } else {
        /* The generation may retire once vfsd's RETIRE is acked too. */
        gr->state = gr->state == (uint32_t)SIM_G_UNVIEWED ||
                            gr->state == (uint32_t)SIM_G_RETIRED
                        ? SIM_G_RETIRED
                        : SIM_G_REMOVED;
    }
}
