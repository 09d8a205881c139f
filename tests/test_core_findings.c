/*
 * test_core_findings.c: regression tests for the core bugs the simulator
 * found (seeds in sim/regress.txt) and the exact transition counters, each
 * asserted as exact effects (BEGIN only through launchd's broker is in
 * test_core_intake.c).
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Row index of a transition, which must exist. */
static size_t row_of(pbx_core_machine m, pbx_core_state from, pbx_core_event ev)
{
    size_t row = pbx_core_fsm_find(m, from, ev);
    PBX_ASSERT(row < (size_t)PBX_CORE_FSM_ROWS);
    return row;
}

/* Finding 4 (seeds 506, 789, 1777): the handle of a refused INSTALL
 * whose deletion must be retried still holds the child's install, so
 * DENIED waits until it is gone. */
PBX_TEST(core_refused_install_handle_delays_denial)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_PROCD, TH_STAGING, 0, 0);
    h->hold_slot = 66U;
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 detach>65 "
                "del=64 release=64");
    /* Object back, scope gone, but the handle remains: no decision. */
    PBX_CHECK_EQ(h->wake_count, 0U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    h->hold_slot = PBX_CORE_SLOT_NONE;
    pbx_core_on_tick(&h->core);
    th_run(h);
    /* The handle first, then the object's retirement, then DENIED. */
    TH_TRACE(h, "del=66 retire wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Finding 3 (seeds 368, 868, 1172, 1542), revised by the seed-fidelity
 * fix: a published decision is final until delivered. A CANCEL of an
 * approval whose runtime-reply reply was lost ends the grant it
 * describes (REMOVE and RETIRE; vfsd's retirement revokes every copy of
 * the object) but deletes nothing: the unexported alias stays with the
 * decision, dead, and DECISION keeps reading APPROVED with the same grant
 * id and that alias until the reply is delivered, once. */
PBX_TEST(core_published_runtime_approval_keeps_its_dead_alias_until_delivered)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    h->badge = PBX_CORE_BADGE_LAUNCHD;
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    h->deliver = false;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(xfer, 66U);
    pbx_ipc_id g = d.grant;
    h->deliver = true;
    PBX_CHECK_EQ(h->wake_count, 1U);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    /* Ending: a second CANCEL of the request or its grant is refused. */
    PBX_CHECK_EQ(th_cancel(h, id), PBX_E_CORE_STATE);
    PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_STATE);
    uint32_t deleted = h->deleted;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    /* No deletion is even attempted: REMOVE and RETIRE only. */
    TH_TRACE(h, "view- retire");
    PBX_CHECK_EQ(h->deleted, deleted);
    PBX_CHECK_EQ(h->last_view.kind, PBX_IPC_VIEW_REMOVE);
    PBX_CHECK_EQ(h->last_view.grant.gen, g.gen);
    /* The grant's generation retired; the alias is still held. */
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    PBX_CHECK_EQ(th_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    /* Undelivered again: the same decision, the same alias, nothing
     * moves. */
    h->deliver = false;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, g.index);
    PBX_CHECK_EQ(d.grant.gen, g.gen);
    PBX_CHECK_EQ(d.mode, PBX_IPC_MODE_RUNTIME_REPLY);
    PBX_CHECK_EQ(xfer, 66U);
    TH_TRACE(h, "");
    h->deliver = true;
    /* Delivered: the dead alias leaves with it, once. */
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, g.index);
    PBX_CHECK_EQ(d.grant.gen, g.gen);
    PBX_CHECK_EQ(xfer, 66U);
    TH_TRACE(h, "xfer=66");
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    /* The approval's one wake; none for the cancellation. */
    PBX_CHECK_EQ(h->wake_count, 1U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_fsm_hits_count_every_transition_taken)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), 0U);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    th_run(h);
    PBX_CHECK(th_quiescent(h));
    /* One routine lifecycle, consumed: exactly these rows, once each. */
    static const uint8_t want[][3] = {
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_FREE, PBX_CORE_EV_BEGIN},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_OPEN, PBX_CORE_EV_SELECTOR},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_OPEN, PBX_CORE_EV_COMMIT},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_RESOLVE, PBX_CORE_EV_RESOLVED},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_POLICY, PBX_CORE_EV_ALLOW},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_INSTALL, PBX_CORE_EV_INSTALLED},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_DETACH, PBX_CORE_EV_DETACHED},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_ACTIVATE,
         PBX_CORE_EV_ACTIVE_ACK},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_RELEASE, PBX_CORE_EV_RELEASED},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_NOTIFY, PBX_CORE_EV_WOKEN},
        {PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_DECIDED, PBX_CORE_EV_DELIVERED},
        {PBX_CORE_MACHINE_GRANT, PBX_CORE_ST_FREE, PBX_CORE_EV_INSTALLED},
        {PBX_CORE_MACHINE_GRANT, PBX_CORE_ST_LIVE, PBX_CORE_EV_CONSUME},
        {PBX_CORE_MACHINE_GRANT, PBX_CORE_ST_REVOKE, PBX_CORE_EV_REVOKED},
        {PBX_CORE_MACHINE_GRANT, PBX_CORE_ST_SETTLE, PBX_CORE_EV_REMOVED},
        {PBX_CORE_MACHINE_GRANT, PBX_CORE_ST_RETIRE, PBX_CORE_EV_RETIRED},
    };
    uint32_t total = 0;
    for (size_t r = 0; r < (size_t)PBX_CORE_FSM_ROWS; r++) {
        total += h->core.fsm_hits[r];
    }
    PBX_CHECK_EQ(total, (uint32_t)PBX_ARRAY_LEN(want));
    for (size_t i = 0; i < PBX_ARRAY_LEN(want); i++) {
        PBX_CHECK_EQ(h->core.fsm_hits[row_of((pbx_core_machine)want[i][0],
                                             (pbx_core_state)want[i][1],
                                             (pbx_core_event)want[i][2])],
                     1U);
    }
    th_free(h);
}

/* Model finding F1b, revised by the seed-fidelity fix: a CONSUME naming
 * a published runtime-reply grant before its approval reply is delivered
 * ends the grant like CANCEL and EXPIRE do, and keeps the approval as it
 * was published. Here the reply is delivered while REMOVE and RETIRE are
 * still unanswered: the request retires first, leaving the (exported)
 * alias's record to the grant, whose exact acknowledgements then retire
 * its generation. */
PBX_TEST(core_consume_before_delivery_keeps_the_approval)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    h->badge = PBX_CORE_BADGE_LAUNCHD;
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    h->deliver = false;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(xfer, 66U);
    pbx_ipc_id g = d.grant;
    h->deliver = true;
    th_clear_trace(h);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                 PBX_CORE_ST_REVOKE);
    /* One-shot: consumed once. */
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_STATE);
    h->hold = true;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    /* The alias is not deleted; REMOVE and RETIRE go out together. */
    TH_TRACE(h, "view- retire");
    PBX_CHECK_EQ(h->npend, 2U);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                 PBX_CORE_ST_SETTLE);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    /* The decision reads as published, and is delivered with the alias
     * while the grant's cleanup is still outstanding. */
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.grant.index, g.index);
    PBX_CHECK_EQ(d.grant.gen, g.gen);
    PBX_CHECK_EQ(xfer, 66U);
    TH_TRACE(h, "xfer=66");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    /* Delivered once: the request retired, its id names nothing now. */
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
    /* The grant still waits for both exact acknowledgements. */
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                 PBX_CORE_ST_SETTLE);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_STATE);
    h->hold = false;
    PBX_CHECK_EQ(th_deliver_all(h), 2U);
    PBX_CHECK_EQ(h->deliver_err, PBX_OK);
    th_run(h);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                 PBX_CORE_ST_FREE);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(h->wake_count, 1U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Model finding F2: procd may have installed the object although its
 * reply carries a STAGING handle. The object is retired at vfsd (full
 * identity, acknowledged exactly, cutting the child's copy too) before
 * DENIED is published; BUSY parks the retirement and DENIED waits. */
PBX_TEST(core_refused_install_retires_object_before_denial)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_PROCD, TH_STAGING, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);   /* RESOLVE */
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);   /* DETACH */
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0); /* RETIRE */
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_WRONG_ECHO, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 del=66 "
                "detach>65 del=64 release=64 retire:busy");
    PBX_CHECK_EQ(h->wake_count, 0U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    /* An inexact acknowledgement is no retirement: DENIED still waits,
     * and vfsd's always-writable route does not re-ask: a tick does. */
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    th_run(h);
    TH_TRACE(h, "retire");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "retire wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* F2, lost reply: procd got the object, but no answer came before the
 * INSTALL deadline, so the object may still have been installed: it is
 * retired before DENIED (reason PEER_TIMEOUT) is published. (Split-phase
 * change: a lost reply is now a deadline passing; a send the transport
 * refused outright (FAILED) moved nothing, so then nothing is retired.) */
PBX_TEST(core_failed_install_retires_object_before_denial)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    uint32_t k = th_run_to(h, "install");
    PBX_REQUIRE(k != TH_NONE);
    h->hold = true; /* procd's answer is late */
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65");
    PBX_CHECK_EQ(th_time(h, 4999U), PBX_OK);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(th_time(h, 5000U), PBX_OK);
    /* The answer after the deadline is refused, its handle deleted. */
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    TH_TRACE(h, "<66 del=66");
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "detach>65 del=64 release=64 retire wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK(th_quiescent(h));
    /* A send procd's route refused moved nothing: no retirement owed. */
    th_push(h, PBX_CORE_ROUTE_PROCD, TH_FAIL, 0, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65:fail detach>65 "
                "del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
