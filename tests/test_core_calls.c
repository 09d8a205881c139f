/*
 * test_core_calls.c: the split-phase peer call contract, through the
 * scripted ops with replies held (h->hold) and delivered, dropped or
 * tampered with by each test. A reply matches its call only by what it
 * echoes (header seq with the call record's generation, the operation
 * with the reply bit, the header identity, the route and the scope);
 * anything else is refused with its receipts deleted. Calls end by their
 * reply, their deadline (pbx_core_on_time), their route going down or
 * their owner's end; a full window makes the next sender wait without
 * spinning; grant cleanup sends REMOVE and RETIRE together. Every test
 * asserts effects (outcomes, reasons, held capabilities, calls
 * outstanding, the exact effect trace), not only acceptance.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* The state of request id's record. */
static uint16_t calls_req_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* The state of grant id's record. */
static uint16_t calls_grant_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_grant(&h->core, id.index)->link.state;
}

/* How often the grant row (from, event) was taken. */
static uint32_t calls_grant_hits(const th_h *h, pbx_core_state from,
                                 pbx_core_event event)
{
    size_t row = pbx_core_fsm_find(PBX_CORE_MACHINE_GRANT, from, event);
    return row < (size_t)PBX_CORE_FSM_ROWS ? h->core.fsm_hits[row] : UINT32_MAX;
}

/* Pending call k, or an all-zero record when there is none (which no
 * check below accepts). */
static const th_pend *calls_pend(const th_h *h, uint32_t k)
{
    static const th_pend none;
    return k < h->npend ? &h->pend[k] : &none;
}

/* Opens the default request (b) and checks the public side accepted it. */
static pbx_ipc_id calls_open(th_h *h, const pbx_ipc_begin *b)
{
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open(h, b, sel, &id), 0U);
    return id;
}

/* Asks DECISION for id and checks outcome and reason. */
static void calls_expect(th_h *h, pbx_ipc_id id, uint8_t outcome,
                         uint16_t reason)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, outcome);
    PBX_CHECK_EQ(d.reason, reason);
}

/* ---- (1) several calls outstanding on one route ------------------------ */

/* Two requests' POLICY calls are outstanding on ttyd at once; their
 * replies come back in the reverse order and each request gets exactly
 * its own answer (ttyd's scripted answers follow the send order: the
 * first POLICY sent is denied, the second allowed). */
PBX_TEST(core_calls_two_on_one_route_answered_in_reverse_order)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    h->hold = true;
    h->log_replies = true;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0);
    pbx_ipc_id a = calls_open(h, &b);
    pbx_ipc_id c = calls_open(h, &b);
    th_run(h);
    TH_TRACE(h, "reserve=64 reserve=65 resolve@64 resolve@65");
    /* Both resolutions outstanding, each through its own scope. */
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_SCOPE], 2U);
    PBX_REQUIRE(h->npend == 2U);
    PBX_CHECK(h->pend[0].seq != h->pend[1].seq);
    PBX_CHECK_EQ(h->pend[0].id.index, a.index);
    PBX_CHECK_EQ(h->pend[1].id.index, c.index);
    /* The later one first: c's object lands in 66, a's in 67. */
    PBX_CHECK_EQ(th_deliver(h, 1), PBX_OK);
    PBX_CHECK_EQ(th_deliver(h, 0), PBX_OK);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 4U);
    th_run(h);
    /* c resolved first, so its POLICY went first and will be denied. */
    TH_TRACE(h, "re:resolve <66 re:resolve <67 policy policy");
    PBX_REQUIRE(h->npend == 2U);
    PBX_CHECK_EQ(h->pend[0].id.index, c.index);
    PBX_CHECK_EQ(h->pend[0].id.gen, c.gen);
    PBX_CHECK_EQ(h->pend[1].id.index, a.index);
    PBX_CHECK_EQ(h->pend[1].id.gen, a.gen);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_TTYD], 2U);
    /* a's ALLOW first, then c's DENY. */
    PBX_CHECK_EQ(th_deliver(h, 1), PBX_OK);
    PBX_CHECK_EQ(calls_req_state(h, a), PBX_CORE_ST_INSTALL);
    PBX_CHECK_EQ(calls_req_state(h, c), PBX_CORE_ST_POLICY);
    PBX_CHECK_EQ(th_deliver(h, 0), PBX_OK);
    PBX_CHECK_EQ(calls_req_state(h, c), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(h->core.replies_refused, 0U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    h->hold = false;
    h->log_replies = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    calls_expect(h, a, PBX_IPC_OUTCOME_APPROVED, PBX_IPC_REASON_NONE);
    calls_expect(h, c, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_POLICY);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- (2) replies that echo the wrong call ------------------------------ */

/* Mutations of an otherwise exact reply. */
enum calls_mut {
    CM_SEQ_INDEX = 0, /* the seq names another call record */
    CM_SEQ_GEN,       /* the seq names the record's other generation */
    CM_OP_NO_REPLY,   /* the request op, without the reply bit */
    CM_OP_OTHER,      /* another op's reply */
    CM_REQ_INDEX,     /* another request index in the header */
    CM_REQ_GEN,       /* another request generation in the header */
    CM_ROUTE_SCOPE,   /* arrived through its own scope, not vfsd's route */
    CM_ROUTE_TTYD,    /* arrived on ttyd's route */
    CM_ROUTE_WILD,    /* a route number no call uses */
    CM_SCOPE,         /* through another scope slot */
    CM_SHORT,         /* too short to echo anything */
    CM_COUNT
};

/* Applies mutation m to r. */
static void calls_mutate(th_reply *r, uint32_t m)
{
    uint32_t seq = 0;
    PBX_ASSERT(pbx_ipc_frame_peek_seq(r->frame, r->len, &seq) == PBX_OK);
    switch (m) {
    case CM_SEQ_INDEX:
        (void)pbx_ipc_frame_set_seq(r->frame, r->len, seq + 1U);
        break;
    case CM_SEQ_GEN:
        (void)pbx_ipc_frame_set_seq(r->frame, r->len, seq + 0x10000U);
        break;
    case CM_OP_NO_REPLY:
        pbx_le_put16(r->frame + 6, PBX_IPC_OP_RESOLVE);
        break;
    case CM_OP_OTHER:
        pbx_le_put16(r->frame + 6,
                     (uint16_t)(PBX_IPC_OP_POLICY | PBX_IPC_REPLY_BIT));
        break;
    case CM_REQ_INDEX:
        pbx_le_put32(r->frame + 12, pbx_le_get32(r->frame + 12) + 1U);
        break;
    case CM_REQ_GEN:
        pbx_le_put32(r->frame + 16, pbx_le_get32(r->frame + 16) + 1U);
        break;
    case CM_ROUTE_SCOPE:
        r->route = PBX_CORE_ROUTE_SCOPE;
        r->via_slot = 64U;
        break;
    case CM_ROUTE_TTYD:
        r->route = PBX_CORE_ROUTE_TTYD;
        r->via_slot = PBX_CORE_SLOT_NONE;
        break;
    case CM_ROUTE_WILD:
        r->route = PBX_CORE_ROUTE_SCOPE + 1U;
        break;
    case CM_SCOPE:
        r->route = PBX_CORE_ROUTE_SCOPE;
        r->via_slot = 99U;
        break;
    default:
        r->len = PBX_IPC_HEADER_BYTES - 1U;
        break;
    }
}

/* Every reply that echoes anything but the outstanding call is refused:
 * its receipt is deleted at once (the core holds no more than before),
 * replies_refused counts it, and the call is still outstanding, so the
 * exact reply that follows is judged normally. */
PBX_TEST(core_calls_reply_echoing_another_call_is_refused)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_reply r;
    th_default_begin(&b, sel, SEL_LEN);
    h->hold = true;
    pbx_ipc_id id = calls_open(h, &b);
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64");
    PBX_REQUIRE(h->npend == 1U);
    PBX_CHECK_EQ(h->pend[0].route, PBX_CORE_ROUTE_SCOPE);
    PBX_CHECK_EQ(h->pend[0].via_slot, 64U);
    for (uint32_t m = 0; m < CM_COUNT; m++) {
        uint32_t held = pbx_core_held_caps(&h->core);
        uint32_t refused = h->core.replies_refused;
        uint32_t deleted = h->deleted;
        th_reply_build(h, 0, &r);
        PBX_REQUIRE(r.n == 1U);
        calls_mutate(&r, m);
        PBX_CHECK_EQ(th_reply_send(h, &r), PBX_OK);
        /* The receipt (always in 65, freed again each time) is gone. */
        TH_TRACE(h, "<65 del=65");
        PBX_CHECK_EQ(h->core.replies_refused, refused + 1U);
        PBX_CHECK_EQ(h->deleted, deleted + 1U);
        PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
        PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
        PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RESOLVE);
        PBX_CHECK_EQ(th_run(h), 0U);
        PBX_CHECK(th_conserved(h));
    }
    PBX_CHECK_EQ(h->core.replies_refused, (uint32_t)CM_COUNT);
    PBX_CHECK_EQ(h->core.calls_expired, 0U);
    /* The seq of another live call, everything else this call's: the
     * seq alone names the call, so it is refused too, and both calls
     * stay outstanding. */
    pbx_ipc_id other = calls_open(h, &b);
    th_run(h);
    TH_TRACE(h, "reserve=65 resolve@65");
    PBX_REQUIRE(h->npend == 2U);
    th_reply_build(h, 0, &r);
    (void)pbx_ipc_frame_set_seq(r.frame, r.len, h->pend[1].seq);
    PBX_CHECK_EQ(th_reply_send(h, &r), PBX_OK);
    TH_TRACE(h, "<66 del=66");
    PBX_CHECK_EQ(h->core.replies_refused, (uint32_t)CM_COUNT + 1U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    PBX_CHECK_EQ(calls_req_state(h, other), PBX_CORE_ST_RESOLVE);
    th_drop(h, 1);
    PBX_CHECK_EQ(th_cancel(h, other), 0U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    th_run(h);
    TH_TRACE(h, "del=65 release=65 wake");
    calls_expect(h, other, PBX_IPC_OUTCOME_CANCELLED, PBX_IPC_REASON_NONE);
    /* The exact reply still matches: resolved, and on to POLICY. */
    PBX_CHECK_EQ(th_deliver(h, 0), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, (uint32_t)CM_COUNT + 1U);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_POLICY);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 2U);
    h->hold = false;
    th_run(h);
    TH_TRACE(h, "<65 policy install^65 <66 detach>65 view+ del=64 release=64 "
                "wake");
    calls_expect(h, id, PBX_IPC_OUTCOME_APPROVED, PBX_IPC_REASON_NONE);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- (3) a duplicated reply -------------------------------------------- */

/* A reply delivered twice: the first ends the call, the second matches
 * nothing (its call record already serves the next call, under a new
 * generation) and is refused with its receipt, and the next call is
 * undisturbed. */
PBX_TEST(core_calls_duplicated_reply_is_refused)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_reply first;
    th_reply again;
    th_default_begin(&b, sel, SEL_LEN);
    h->hold = true;
    pbx_ipc_id id = calls_open(h, &b);
    th_run(h);
    PBX_REQUIRE(h->npend == 1U);
    uint32_t seq = h->pend[0].seq;
    th_reply_build(h, 0, &first);
    th_reply_build(h, 0, &again);
    th_drop(h, 0);
    TH_TRACE(h, "reserve=64 resolve@64 <65 <66");
    PBX_CHECK_EQ(th_reply_send(h, &first), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 0U);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_POLICY);
    th_run(h);
    TH_TRACE(h, "policy");
    /* The POLICY call reuses the RESOLVE's call record: same index, next
     * generation, so the old seq names nothing live. */
    PBX_REQUIRE(h->npend == 1U);
    PBX_CHECK_EQ(h->pend[0].seq, seq + 1U);
    PBX_CHECK_EQ(th_reply_send(h, &again), PBX_OK);
    TH_TRACE(h, "del=66");
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 2U); /* scope and object */
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_POLICY);
    /* A duplicate of a receipt-free reply is refused the same way. */
    th_reply_build(h, 0, &first);
    th_reply_build(h, 0, &again);
    th_drop(h, 0);
    PBX_CHECK_EQ(th_reply_send(h, &first), PBX_OK);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_INSTALL);
    PBX_CHECK_EQ(th_reply_send(h, &again), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 2U);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_INSTALL);
    h->hold = false;
    th_run(h);
    TH_TRACE(h, "install^65 <66 detach>65 view+ del=64 release=64 wake");
    calls_expect(h, id, PBX_IPC_OUTCOME_APPROVED, PBX_IPC_REASON_NONE);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- (4) replies after the deadline ------------------------------------ */

/* A RESOLVE unanswered at its deadline ends the request DENIED (reason
 * PEER_TIMEOUT); the reply that comes later is refused and its receipt
 * deleted. The clock never goes back. */
PBX_TEST(core_calls_late_resolve_reply_refused_after_deadline)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    uint64_t at = 0;
    th_default_begin(&b, sel, SEL_LEN);
    h->hold = true;
    pbx_ipc_id id = calls_open(h, &b);
    PBX_CHECK(!pbx_core_next_deadline(&h->core, &at));
    th_run(h);
    TH_TRACE(h, "reserve=64 resolve@64");
    PBX_CHECK(pbx_core_next_deadline(&h->core, &at));
    PBX_CHECK_EQ(at, 5000U);
    PBX_CHECK_EQ(th_time(h, 4999U), PBX_OK);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RESOLVE);
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    PBX_CHECK_EQ(h->core.calls_expired, 1U);
    PBX_CHECK(!pbx_core_next_deadline(&h->core, &at));
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RELEASE);
    /* The late reply names an ended call. */
    PBX_CHECK_EQ(th_deliver(h, 0), PBX_OK);
    TH_TRACE(h, "<65 del=65");
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U); /* the scope only */
    th_run(h);
    TH_TRACE(h, "del=64 release=64 wake");
    calls_expect(h, id, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_TIMEOUT);
    /* An earlier time is ignored: the next call's deadline counts from
     * 5000, not from 10. */
    PBX_CHECK_EQ(th_time(h, 10U), PBX_OK);
    PBX_CHECK_EQ(h->core.now_ms, 5000U);
    id = calls_open(h, &b);
    th_run(h);
    PBX_CHECK(pbx_core_next_deadline(&h->core, &at));
    PBX_CHECK_EQ(at, 10000U);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RESOLVE);
    th_free(h);
}

/* A PROMPT unanswered at its own deadline (the PROMPT class, longer than
 * ttyd's) ends the request DENIED with PROMPT_TIMEOUT; the prompt may
 * still be showing, so release withdraws it; the user's late answer is
 * refused and approves nothing. */
PBX_TEST(core_calls_late_prompt_answer_refused_after_deadline)
{
    uint32_t ms[PBX_BOOTSTRAP_TIME_COUNT] = {1000U,  1000U, 1000U, 1000U,
                                             30000U, 1000U, 1000U};
    th_h *h = th_new_times(4, 4, ms);
    pbx_ipc_begin b;
    uint64_t at = 0;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    pbx_ipc_id id = calls_open(h, &b);
    uint32_t k = th_run_to(h, "prompt");
    PBX_REQUIRE(k != TH_NONE);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy prompt");
    PBX_CHECK(pbx_core_next_deadline(&h->core, &at));
    PBX_CHECK_EQ(at, 30000U);
    /* ttyd's own deadline passing does not end a prompt. */
    PBX_CHECK_EQ(th_time(h, 1000U), PBX_OK);
    PBX_CHECK_EQ(th_time(h, 29999U), PBX_OK);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_PROMPT);
    PBX_CHECK_EQ(th_time(h, 30000U), PBX_OK);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(h->core.calls_expired, 1U);
    /* The user approves too late. */
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RELEASE);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "withdraw detach>65 del=64 release=64 wake");
    calls_expect(h, id, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PROMPT_TIMEOUT);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- (5) cancel while the prompt is outstanding ------------------------ */

/* CANCEL while the PROMPT is outstanding ends the call at once; release
 * sends WITHDRAW for exactly that request and object, and the decision
 * is published CANCELLED only once ttyd answered it. The user's APPROVE
 * arriving meanwhile is refused and changes nothing. */
PBX_TEST(core_calls_cancel_while_prompting_withdraws_then_cancels)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_frame f;
    pbx_ipc_withdraw w;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0); /* the user's APPROVE */
    pbx_ipc_id id = calls_open(h, &b);
    uint32_t k = th_run_to(h, "prompt");
    PBX_REQUIRE(k != TH_NONE);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    h->hold = true;
    th_run(h);
    TH_TRACE(h, "withdraw");
    const th_pend *wp = calls_pend(h, th_find(h, "withdraw"));
    PBX_CHECK_EQ(wp->route, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(wp->id.index, id.index);
    PBX_CHECK_EQ(wp->id.gen, id.gen);
    PBX_REQUIRE(pbx_ipc_frame_decode(wp->frame, wp->len, 0, &f) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_withdraw_decode(&f, &w) == PBX_OK);
    PBX_CHECK_EQ(w.object.id, UINT64_C(0x0B1EC7001));
    PBX_CHECK_EQ(w.object.gen, 3U);
    /* The late APPROVE: refused, no install, nothing published. */
    uint32_t held = pbx_core_held_caps(&h->core);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
    PBX_CHECK_EQ(h->wake_count, 0U);
    calls_expect(h, id, PBX_IPC_OUTCOME_PENDING, PBX_IPC_REASON_NONE);
    /* ttyd acknowledges the withdrawal: only now the object goes back
     * and CANCELLED is published. */
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "withdraw")), PBX_OK);
    h->hold = false;
    th_run(h);
    TH_TRACE(h, "detach>65 del=64 release=64 wake");
    calls_expect(h, id, PBX_IPC_OUTCOME_CANCELLED, PBX_IPC_REASON_NONE);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* WITHDRAW needs only some answer or its deadline: an inexact
 * acknowledgement ends it as well as a silent ttyd's deadline does. */
PBX_TEST(core_calls_withdraw_ends_on_any_answer_or_deadline)
{
    for (int how = 0; how < 2; how++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0);
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_WRONG_ECHO, 0);
        pbx_ipc_id id = calls_open(h, &b);
        uint32_t k = th_run_to(h, "prompt");
        PBX_REQUIRE(k != TH_NONE);
        th_drop(h, k);
        PBX_CHECK_EQ(th_cancel(h, id), 0U);
        uint32_t wk = th_run_to(h, "withdraw");
        PBX_REQUIRE(wk != TH_NONE);
        th_clear_trace(h);
        if (how == 0) {
            PBX_CHECK_EQ(th_deliver(h, wk), PBX_OK);
        } else {
            th_drop(h, wk);
            PBX_CHECK_EQ(th_run(h), 0U);
            PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
            PBX_CHECK_EQ(h->core.calls_expired, 1U);
        }
        th_run(h);
        TH_TRACE(h, "detach>65 del=64 release=64 wake");
        calls_expect(h, id, PBX_IPC_OUTCOME_CANCELLED, PBX_IPC_REASON_NONE);
        PBX_CHECK(th_quiescent(h));
        th_free(h);
    }
}

/* ---- (6) a full window -------------------------------------------------- */

/* With a window of one call per class, a second request's RESOLVE finds
 * the scope class full: it waits, consuming no step, neither on route
 * readiness nor on ticks, and goes out in the very step after the first
 * call ends. */
PBX_TEST(core_calls_full_window_waits_without_spinning)
{
    th_h *h = th_new_window(4, 1);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    h->hold = true;
    pbx_ipc_id a = calls_open(h, &b);
    pbx_ipc_id c = calls_open(h, &b);
    th_clear_trace(h);
    /* One step sends a's RESOLVE, one finds the window full. */
    PBX_CHECK_EQ(th_run(h), 2U);
    TH_TRACE(h, "resolve@64");
    PBX_CHECK_EQ(h->sends, 1U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_CALL_REQUEST].count, 1U);
    PBX_CHECK_EQ(calls_req_state(h, c), PBX_CORE_ST_RESOLVE);
    /* Waiting costs nothing and nothing but a call's end wakes it. */
    for (int n = 0; n < 4; n++) {
        PBX_CHECK_EQ(th_run(h), 0U);
        pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
        PBX_CHECK_EQ(th_run(h), 0U);
        pbx_core_on_tick(&h->core);
        PBX_CHECK_EQ(th_run(h), 0U);
    }
    PBX_CHECK(!pbx_core_tick_wanted(&h->core));
    PBX_CHECK_EQ(h->sends, 1U);
    TH_TRACE(h, "");
    /* a's RESOLVE ends: c's goes out in the next step, then a's POLICY
     * (another class, its own window). */
    PBX_CHECK_EQ(th_deliver(h, 0), PBX_OK);
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_WAIT_CALL_REQUEST].count, 0U);
    PBX_CHECK(th_step(h));
    TH_TRACE(h, "<66 resolve@65");
    PBX_CHECK(th_step(h));
    TH_TRACE(h, "policy");
    PBX_CHECK_EQ(th_run(h), 0U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    /* Run both to the end: exactly one step per transition (a: INSTALL,
     * DETACH, ACTIVE, release; c: POLICY, INSTALL, DETACH, ACTIVE,
     * release; two wakes), none spent idling on a window. */
    h->hold = false;
    PBX_CHECK_EQ(th_run(h), 11U);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    calls_expect(h, a, PBX_IPC_OUTCOME_APPROVED, PBX_IPC_REASON_NONE);
    calls_expect(h, c, PBX_IPC_OUTCOME_APPROVED, PBX_IPC_REASON_NONE);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- (7) a route goes down --------------------------------------------- */

/* ttyd hangs up with two POLICY calls and a PROMPT outstanding: both
 * POLICY calls end at once as if their deadlines had passed
 * (PEER_TIMEOUT) and their late replies are refused; the PROMPT outlives
 * its ttyd until its own deadline (PROMPT_TIMEOUT then), and a RESOLVE
 * outstanding through a scope is untouched. */
PBX_TEST(core_calls_route_down_ends_its_outstanding_calls)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_begin x;
    th_default_begin(&b, sel, SEL_LEN);
    x = b;
    x.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    pbx_ipc_id p = calls_open(h, &x);
    PBX_REQUIRE(th_run_to(h, "prompt") != TH_NONE);
    h->hold = true;
    pbx_ipc_id a = calls_open(h, &b);
    pbx_ipc_id c = calls_open(h, &b);
    th_run(h);
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "resolve")), PBX_OK);
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "resolve")), PBX_OK);
    th_run(h);
    pbx_ipc_id s = calls_open(h, &b);
    th_run(h);
    th_clear_trace(h);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_TTYD], 2U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_PROMPT], 1U);
    PBX_CHECK_EQ(h->core.calls_out[PBX_BOOTSTRAP_TIME_SCOPE], 1U);
    PBX_CHECK_EQ(h->npend, 4U);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    PBX_CHECK_EQ(h->core.calls_expired, 2U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    PBX_CHECK_EQ(calls_req_state(h, a), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(calls_req_state(h, c), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(calls_req_state(h, p), PBX_CORE_ST_PROMPT);
    PBX_CHECK_EQ(calls_req_state(h, s), PBX_CORE_ST_RESOLVE);
    /* ttyd's replies that were already on their way match nothing; the
     * dead ttyd's prompt reply never arrives. */
    for (int n = 0; n < 2; n++) {
        uint32_t k = th_find(h, "policy");
        PBX_REQUIRE(k != TH_NONE);
        PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    }
    th_drop(h, th_find(h, "prompt"));
    PBX_CHECK_EQ(h->core.replies_refused, 2U);
    TH_TRACE(h, "");
    /* The scope's answer still counts. */
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(calls_req_state(h, p), PBX_CORE_ST_PROMPT);
    /* The prompt's own deadline ends it. */
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    PBX_CHECK_EQ(calls_req_state(h, p), PBX_CORE_ST_RELEASE);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 2U);
    calls_expect(h, a, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_TIMEOUT);
    calls_expect(h, c, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_TIMEOUT);
    calls_expect(h, p, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PROMPT_TIMEOUT);
    calls_expect(h, s, PBX_IPC_OUTCOME_APPROVED, PBX_IPC_REASON_NONE);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- (8) grant cleanup: REMOVE and RETIRE together --------------------- */

/* Approves a routine grant, holds every later reply, and consumes it:
 * revocation is done and REMOVE and RETIRE are both outstanding. Returns
 * the grant. */
static pbx_ipc_id calls_consumed(th_h *h)
{
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, sel, false, NULL, NULL);
    h->hold = true;
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    return g;
}

/* After revocation REMOVE and RETIRE are both sent before either reply;
 * RETIRE's acknowledgement first moves the grant to REMOVE, REMOVE's then
 * retires it (the generation is free again). */
PBX_TEST(core_calls_remove_and_retire_sent_together_acked_in_any_order)
{
    th_h *h = th_new(4);
    pbx_ipc_id g = calls_consumed(h);
    PBX_CHECK_EQ(h->npend, 2U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    PBX_CHECK_EQ(calls_grant_state(h, g), PBX_CORE_ST_SETTLE);
    uint32_t rt = th_find(h, "retire");
    PBX_REQUIRE(rt != TH_NONE);
    PBX_CHECK_EQ(calls_pend(h, th_find(h, "view-"))->id.gen, g.gen);
    PBX_CHECK_EQ(calls_pend(h, rt)->id.gen, g.gen);
    PBX_CHECK_EQ(th_deliver(h, rt), PBX_OK);
    PBX_CHECK_EQ(calls_grant_state(h, g), PBX_CORE_ST_REMOVE);
    PBX_CHECK_EQ(calls_grant_hits(h, PBX_CORE_ST_SETTLE, PBX_CORE_EV_RETIRED),
                 1U);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_STATE);
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "view-")), PBX_OK);
    PBX_CHECK_EQ(calls_grant_hits(h, PBX_CORE_ST_REMOVE, PBX_CORE_EV_REMOVED),
                 1U);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(h->core.replies_refused, 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A silent ttyd never delays the RETIRE: it goes out with the REMOVE and
 * its acknowledgement counts at once. The unanswered REMOVE passes its
 * deadline and is asked again on the next tick (not before), never
 * abandoned, and RETIRE is not repeated. */
PBX_TEST(core_calls_silent_ttyd_never_delays_retire)
{
    th_h *h = th_new(4);
    pbx_ipc_id g = calls_consumed(h);
    th_drop(h, th_find(h, "view-")); /* ttyd never answers */
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "retire")), PBX_OK);
    PBX_CHECK_EQ(calls_grant_state(h, g), PBX_CORE_ST_REMOVE);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    PBX_CHECK_EQ(th_time(h, 4999U), PBX_OK);
    PBX_CHECK_EQ(th_run(h), 0U);
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    PBX_CHECK_EQ(h->core.calls_expired, 1U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    PBX_CHECK_EQ(calls_grant_state(h, g), PBX_CORE_ST_REMOVE);
    /* Not polled: nothing until a tick. */
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "view-");
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "view-")), PBX_OK);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_grant_hits(h, PBX_CORE_ST_REMOVE, PBX_CORE_EV_REMOVED),
                 1U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- (9) no row, no REMOVE ---------------------------------------------- */

/* An installed grant whose request is denied before its ACTIVE row went
 * to ttyd (here: vfsd never acknowledged DETACH) is cleaned up by revoke
 * and RETIRE only: ttyd never showed the row, so no REMOVE is sent, and
 * the DENIED decision (PEER_TIMEOUT) is published after RETIRE alone. */
PBX_TEST(core_calls_denied_before_active_row_sends_no_remove)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id id = calls_open(h, &b);
    uint32_t k = th_run_to(h, "detach");
    PBX_REQUIRE(k != TH_NONE);
    th_drop(h, k);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 detach>65");
    pbx_ipc_id g = pbx_core_inspect_id(
        &h->core, PBX_BOOTSTRAP_POOL_GRANTS,
        pbx_core_inspect_request(&h->core, id.index)->grant);
    PBX_CHECK_EQ(calls_grant_state(h, g), PBX_CORE_ST_LIVE);
    uint32_t ttyd_calls = h->route_sends[PBX_CORE_ROUTE_TTYD];
    PBX_CHECK_EQ(ttyd_calls, 1U); /* the POLICY */
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "del=66 retire del=64 release=64 wake");
    PBX_CHECK_EQ(h->last_view.kind, 0U); /* no VIEW ever reached ttyd */
    PBX_CHECK_EQ(h->route_sends[PBX_CORE_ROUTE_TTYD], ttyd_calls);
    PBX_CHECK_EQ(calls_grant_hits(h, PBX_CORE_ST_SETTLE, PBX_CORE_EV_REMOVED),
                 1U);
    PBX_CHECK_EQ(calls_grant_hits(h, PBX_CORE_ST_RETIRE, PBX_CORE_EV_RETIRED),
                 1U);
    calls_expect(h, id, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The contrast: once the ACTIVE row went to ttyd, ttyd may show it, so a
 * request denied because that row's acknowledgement never came (its
 * deadline passed) owes the REMOVE: REMOVE and RETIRE go out together,
 * and the late ACTIVE acknowledgement is refused. */
PBX_TEST(core_calls_unacknowledged_active_row_still_owes_remove)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id id = calls_open(h, &b);
    uint32_t k = th_run_to(h, "view+");
    PBX_REQUIRE(k != TH_NONE);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK); /* too late */
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "del=66 view- retire del=64 release=64 wake");
    PBX_CHECK_EQ(h->last_view.kind, PBX_IPC_VIEW_REMOVE);
    calls_expect(h, id, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Work parked on a route's backpressure when that route goes down is not
 * stranded: it goes back to its lane, its next send fails, and it takes
 * its failure path (here: DENIED, PEER_FAILED). */
PBX_TEST(core_calls_route_down_frees_work_parked_on_it)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_FAIL, 0, 0);
    pbx_ipc_id id = calls_open(h, &b);
    th_run(h);
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_POLICY);
    PBX_CHECK_EQ(th_run(h), 0U); /* parked: nothing to do */
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    th_run(h);
    calls_expect(h, id, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A denied request whose ACTIVE row went out publishes its decision as
 * soon as its grant is revoked and retired at vfsd: the REMOVE row, which
 * holds no capability, is still owed to a silent ttyd and never delays the
 * decision (before, the decision waited for both acknowledgements). */
PBX_TEST(core_calls_decision_never_waits_for_remove)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id id = calls_open(h, &b);
    uint32_t k = th_run_to(h, "view+");
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK); /* ACTIVE unanswered */
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);  /* too late: refused */
    /* ttyd goes silent: REMOVE is sent but never answered. */
    uint32_t rm = th_run_to(h, "view-");
    PBX_REQUIRE(rm != TH_NONE);
    th_drop(h, rm);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    /* Revoked and retired: DENIED is published with the REMOVE still
     * outstanding. */
    calls_expect(h, id, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    PBX_CHECK(pbx_core_calls_outstanding(&h->core) >= 1U);
    th_free(h);
}

/* Request-owned cleanup calls in release. The release DETACH (the copy
 * already moved with the send) is waited for: nothing more happens until
 * vfsd answers or the deadline passes. The RETIRE of an object a refused
 * INSTALL may have placed is never abandoned: unanswered at its deadline
 * it is asked again on the next tick (not before), and DENIED is
 * published only after its exact acknowledgement. */
PBX_TEST(core_calls_release_cleanup_calls_wait_and_retry)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_PROCD, TH_STAGING, 0, 0);
    pbx_ipc_id id = calls_open(h, &b);
    uint32_t k = th_run_to(h, "detach");
    PBX_REQUIRE(k != TH_NONE);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 del=66 "
                "detach>65");
    PBX_CHECK_EQ(calls_req_state(h, id), PBX_CORE_ST_RELEASE);
    /* While the DETACH is outstanding, the scope stays and nothing is
     * published. */
    h->hold = true;
    PBX_CHECK_EQ(th_run(h), 0U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U); /* the scope */
    calls_expect(h, id, PBX_IPC_OUTCOME_PENDING, PBX_IPC_REASON_NONE);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    th_run(h);
    TH_TRACE(h, "del=64 release=64 retire");
    /* vfsd stays silent on the RETIRE. */
    k = th_find(h, "retire");
    PBX_REQUIRE(k != TH_NONE);
    th_drop(h, k);
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    PBX_CHECK_EQ(h->core.calls_expired, 1U);
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    calls_expect(h, id, PBX_IPC_OUTCOME_PENDING, PBX_IPC_REASON_NONE);
    PBX_CHECK_EQ(h->wake_count, 0U);
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "retire");
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "retire")), PBX_OK);
    th_run(h);
    TH_TRACE(h, "wake");
    calls_expect(h, id, PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The DECISION reply says why a request was DENIED, and only then:
 * the session policy, the user, resolution evidence that does not bind,
 * a peer that refused or answered inexactly; NOT_FOUND and APPROVED carry
 * no reason. */
PBX_TEST(core_calls_denied_decision_carries_its_reason)
{
    static const struct {
        pbx_core_route route;
        th_ans ans;
        uint32_t mut;
        bool exceptional;
        uint8_t outcome;
        uint16_t reason;
    } rows[] = {
        {PBX_CORE_ROUTE_TTYD, TH_DENY, 0, false, PBX_IPC_OUTCOME_DENIED,
         PBX_IPC_REASON_POLICY},
        {PBX_CORE_ROUTE_TTYD, TH_USER_DENY, 0, true, PBX_IPC_OUTCOME_DENIED,
         PBX_IPC_REASON_USER},
        {PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_WRONG_ECHO, false,
         PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_RESOLVE},
        {PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, false, PBX_IPC_OUTCOME_DENIED,
         PBX_IPC_REASON_PEER_FAILED},
        {PBX_CORE_ROUTE_PROCD, TH_STAGING, 0, false, PBX_IPC_OUTCOME_DENIED,
         PBX_IPC_REASON_PEER_FAILED},
        {PBX_CORE_ROUTE_VFSD, TH_NOT_FOUND, 0, false, PBX_IPC_OUTCOME_NOT_FOUND,
         PBX_IPC_REASON_NONE},
        {PBX_CORE_ROUTE_PROCD, TH_OK, 0, false, PBX_IPC_OUTCOME_APPROVED,
         PBX_IPC_REASON_NONE},
    };
    th_h *h = th_new(4);
    for (size_t k = 0; k < PBX_ARRAY_LEN(rows); k++) {
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        if (rows[k].exceptional) {
            b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
            th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        }
        th_push(h, rows[k].route, rows[k].ans, rows[k].mut, 0);
        pbx_ipc_id id = calls_open(h, &b);
        th_run(h);
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        calls_expect(h, id, rows[k].outcome, rows[k].reason);
        th_clear_trace(h);
    }
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- (10) identifier edges from the public frame ----------------------- */

/* Sends frame (len bytes) as the broker; returns the reply status. */
static uint32_t calls_raw(th_h *h, const uint8_t *frame, size_t len)
{
    pbx_core_out out;
    pbx_err core = PBX_OK;
    uint32_t st = th_public(h, TH_BROKER, frame, len, NULL, 0, &core, &out);
    PBX_CHECK_EQ(core, PBX_OK);
    return st;
}

/* DECISION naming id (any generation, zero included: built raw). */
static uint32_t calls_decision_raw(th_h *h, pbx_ipc_id id)
{
    uint8_t buf[64];
    pbx_ipc_id one = {0, 1};
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, one, buf, sizeof(buf),
                                    &n) == PBX_OK);
    pbx_le_put32(buf + 12, id.index);
    pbx_le_put32(buf + 16, id.gen);
    return calls_raw(h, buf, n);
}

/* Exact CANCEL naming id (generation zero included: built raw). */
static uint32_t calls_cancel_raw(th_h *h, pbx_ipc_id id)
{
    uint8_t buf[64];
    pbx_ipc_cancel c;
    size_t n = 0;
    memset(&c, 0, sizeof(c));
    c.request.index = 0U;
    c.request.gen = 1U;
    PBX_ASSERT(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    pbx_le_put32(buf + 12, id.index);
    pbx_le_put32(buf + 16, id.gen);
    return calls_raw(h, buf, n);
}

/* CONSUME naming grant (generation zero included: built raw). */
static uint32_t calls_consume_raw(th_h *h, pbx_ipc_id grant)
{
    uint8_t buf[64];
    pbx_ipc_consume c = {{0, 1}};
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_consume_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES, grant.index);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 4U, grant.gen);
    return calls_raw(h, buf, n);
}

/* Gives the next record pool hands out the generation gen - 1, so that
 * its allocation yields gen. */
static void calls_next_gen(th_h *h, pbx_bootstrap_pool pool, uint32_t gen)
{
    uint32_t head = h->core.pools[pool].free_head;
    PBX_REQUIRE(head != PBX_CORE_NIL);
    ((pbx_core_link *)pbx_core_inspect_fault(&h->core, pool, head))
        ->generation = gen - 1U;
}

/* Checks that none of the refused frames changed anything. */
static void calls_unchanged(th_h *h, pbx_ipc_id req, uint16_t state,
                            uint32_t held)
{
    PBX_CHECK_EQ(calls_req_state(h, req), state);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
}

/* The identities DECISION, CANCEL and CONSUME carry are checked exactly:
 * an index equal to the pool capacity names nothing (UNKNOWN), generation
 * zero is refused by the codec, a stale generation (one below, one above,
 * and the wrapped neighbour) is STALE, and the largest generation works
 * like any other, wrapping to 1 (never 0) when the record is reused. */
PBX_TEST(core_calls_public_identifier_edges)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    const uint32_t cap = h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(cap == 4U);
    /* Records whose next generation is the largest there is. */
    calls_next_gen(h, PBX_BOOTSTRAP_POOL_REQUESTS, UINT32_MAX);
    calls_next_gen(h, PBX_BOOTSTRAP_POOL_GRANTS, UINT32_MAX);
    pbx_ipc_id r = {0, 0};
    pbx_ipc_id g = th_approve(h, &b, sel, true, &r, NULL);
    PBX_CHECK_EQ(r.gen, UINT32_MAX);
    PBX_CHECK_EQ(g.gen, UINT32_MAX);
    uint32_t held = pbx_core_held_caps(&h->core);
    PBX_CHECK_EQ(held, 1U);
    pbx_ipc_id past = {cap, UINT32_MAX};
    pbx_ipc_id zero_r = {r.index, 0U};
    pbx_ipc_id zero_g = {g.index, 0U};
    pbx_ipc_id below_r = {r.index, UINT32_MAX - 1U};
    pbx_ipc_id below_g = {g.index, UINT32_MAX - 1U};
    pbx_ipc_id wrap_r = {r.index, 1U};
    pbx_ipc_id wrap_g = {g.index, 1U};
    /* DECISION. */
    PBX_CHECK_EQ(calls_decision_raw(h, past), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_decision_raw(h, zero_r), PBX_E_IPC_REQUEST_ID);
    PBX_CHECK_EQ(calls_decision_raw(h, below_r), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_decision_raw(h, wrap_r), PBX_E_CORE_UNKNOWN);
    calls_unchanged(h, r, PBX_CORE_ST_DECIDED, held);
    /* CANCEL (exact form). */
    PBX_CHECK_EQ(calls_cancel_raw(h, past), PBX_E_CORE_UNKNOWN);
    /* Generation zero is the correlation form: with index 0 it lacks
     * the job generation, with any other index it is malformed. */
    PBX_CHECK_EQ(r.index, 0U);
    PBX_CHECK_EQ(calls_cancel_raw(h, zero_r), PBX_E_IPC_GENERATION);
    pbx_ipc_id zero_other = {1U, 0U};
    PBX_CHECK_EQ(calls_cancel_raw(h, zero_other), PBX_E_IPC_REQUEST_ID);
    PBX_CHECK_EQ(calls_cancel_raw(h, below_r), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_cancel_raw(h, wrap_r), PBX_E_CORE_UNKNOWN);
    calls_unchanged(h, r, PBX_CORE_ST_DECIDED, held);
    /* CONSUME. */
    PBX_CHECK_EQ(calls_consume_raw(h, past), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_consume_raw(h, zero_g), PBX_E_IPC_GENERATION);
    PBX_CHECK_EQ(calls_consume_raw(h, below_g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_consume_raw(h, wrap_g), PBX_E_CORE_UNKNOWN);
    calls_unchanged(h, r, PBX_CORE_ST_DECIDED, held);
    PBX_CHECK_EQ(calls_grant_state(h, g), PBX_CORE_ST_LIVE);
    /* The largest generation itself names the live records. */
    TH_CHECK_OUTCOME(h, r, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, g.index);
    PBX_CHECK_EQ(d.grant.gen, UINT32_MAX);
    PBX_CHECK_EQ(calls_consume_raw(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK(th_quiescent(h));
    /* Reuse wraps both generations to 1: the old largest ones are stale,
     * and a CANCEL of the new request by its wrapped id works. */
    pbx_ipc_id r2 = {0, 0};
    pbx_ipc_id g2 = th_approve(h, &b, sel, true, &r2, NULL);
    PBX_CHECK_EQ(r2.index, r.index);
    PBX_CHECK_EQ(r2.gen, 1U);
    PBX_CHECK_EQ(g2.index, g.index);
    PBX_CHECK_EQ(g2.gen, 1U);
    PBX_CHECK_EQ(calls_decision_raw(h, r), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_cancel_raw(h, r), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_consume_raw(h, g), PBX_E_CORE_UNKNOWN);
    calls_unchanged(h, r2, PBX_CORE_ST_DECIDED, 1U);
    PBX_CHECK_EQ(calls_cancel_raw(h, r2), 0U);
    PBX_CHECK_EQ(calls_grant_state(h, g2), PBX_CORE_ST_REVOKE);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(calls_grant_state(h, g2), PBX_CORE_ST_FREE);
    /* The approval was published before the CANCEL: it stays as it was
     * published, naming the wrapped grant, until delivered. */
    TH_CHECK_OUTCOME(h, r2, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, g2.index);
    PBX_CHECK_EQ(d.grant.gen, 1U);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(calls_decision_raw(h, r2), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(calls_consume_raw(h, g2), PBX_E_CORE_UNKNOWN);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
