/*
 * test_core_provider.c: reconciliation across vfsd incarnations (issue 20,
 * item 5). A request whose object the lost vfsd minted is never approved:
 * at every stage a request can be in when vfsd's route goes down (RESOLVE
 * outstanding, POLICY outstanding, the prompt showing, the user's yes with
 * INSTALL or DETACH in flight) it ends DENIED with reason PROVIDER_LOST,
 * its prompt is withdrawn, a late answer to any of its calls is refused,
 * and every capability it held is cleaned up as on other denial paths.
 * Each test fails on a core that leaves such a request in flight (before
 * this part, the yes after a restart approved a dead object).
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* The state of request id's record. */
static uint16_t pv_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* How many requests reached approval (ttyd acknowledged their ACTIVE
 * row): the only path to an APPROVED decision. */
static uint32_t pv_approvals(const th_h *h)
{
    size_t row = pbx_core_fsm_find(
        PBX_CORE_MACHINE_REQUEST, PBX_CORE_ST_ACTIVATE, PBX_CORE_EV_ACTIVE_ACK);
    return row < (size_t)PBX_CORE_FSM_ROWS ? h->core.fsm_hits[row] : UINT32_MAX;
}

/* Opens an exceptional request (prompt due) and returns it. */
static pbx_ipc_id pv_open_exceptional(th_h *h)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    return id;
}

/* Opens a routine request and returns it. */
static pbx_ipc_id pv_open_routine(th_h *h)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    return id;
}

/* vfsd's route goes down (the next send on it fails): the request leaves
 * its stage at once, DENIED for PROVIDER_LOST. */
static void pv_lose_vfsd(th_h *h, pbx_ipc_id id)
{
    th_clear_trace(h);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    PBX_CHECK_EQ(pv_state(h, id), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, id.index)->reason,
                 PBX_IPC_REASON_PROVIDER_LOST);
}

/* Delivers the held reply k late: it matches no call and is refused, and
 * it moves nothing (no install, no wake). */
static void pv_late_refused(th_h *h, uint32_t k, pbx_ipc_id id)
{
    uint32_t refused = h->core.replies_refused;
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, refused + 1U);
    PBX_CHECK_EQ(pv_state(h, id), PBX_CORE_ST_RELEASE);
}

/* Checks the published decision: DENIED, PROVIDER_LOST, nothing moved. */
static void pv_denied(th_h *h, pbx_ipc_id id)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_PROVIDER_LOST);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(d.grant.gen, 0U);
}

/* RESOLVE is outstanding through the scope when vfsd dies: its reply,
 * written before the death, would name an object of the dead incarnation,
 * so the request ends now and that reply is refused. */
PBX_TEST(core_provider_lost_with_resolve_outstanding)
{
    th_h *h = th_new(4);
    pbx_ipc_id id = pv_open_routine(h);
    uint32_t k = th_run_to(h, "resolve");
    PBX_REQUIRE(k != TH_NONE);
    pv_lose_vfsd(h, id);
    pv_late_refused(h, k, id);
    th_run(h);
    TH_TRACE(h, "<65 del=65 del=64 release=64 wake");
    pv_denied(h, id);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Resolved, awaiting ttyd's POLICY answer when vfsd dies: the request
 * ends; the late ALLOW installs nothing; the dead object's copy goes back
 * (the DETACH fails on the lost route, so it is deleted). */
PBX_TEST(core_provider_lost_awaiting_policy)
{
    th_h *h = th_new(4);
    pbx_ipc_id id = pv_open_routine(h);
    uint32_t k = th_run_to(h, "policy");
    PBX_REQUIRE(k != TH_NONE);
    pv_lose_vfsd(h, id);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    pv_late_refused(h, k, id);
    th_run(h);
    TH_TRACE(h, "detach>65:fail del=65 del=64 release=64 wake");
    pv_denied(h, id);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The prompt is showing when vfsd dies: the request ends, its prompt is
 * withdrawn the normal way (WITHDRAW first), and the user's yes that
 * comes afterwards is refused: no INSTALL, no grant. */
PBX_TEST(core_provider_lost_while_prompt_shows)
{
    th_h *h = th_new(4);
    pbx_ipc_id id = pv_open_exceptional(h);
    uint32_t k = th_run_to(h, "prompt");
    PBX_REQUIRE(k != TH_NONE);
    pv_lose_vfsd(h, id);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    pv_late_refused(h, k, id);
    th_run(h);
    TH_TRACE(h, "withdraw detach>65:fail del=65 del=64 release=64 wake");
    pv_denied(h, id);
    PBX_CHECK_EQ(pv_approvals(h), 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The user said yes and INSTALL is in flight at procd when vfsd dies: the
 * request ends; procd may have placed the object, so its retirement goes
 * to the returned vfsd (which echoes one it never minted) before the
 * DENIED decision is published; procd's late handle is refused and
 * deleted. */
PBX_TEST(core_provider_lost_with_install_in_flight)
{
    th_h *h = th_new(4);
    pbx_ipc_id id = pv_open_exceptional(h);
    uint32_t k = th_run_to(h, "install");
    PBX_REQUIRE(k != TH_NONE);
    pv_lose_vfsd(h, id);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    pv_late_refused(h, k, id);
    th_run(h);
    TH_TRACE(h, "<66 del=66 detach>65:fail del=65 del=64 release=64 "
                "retire:fail");
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    th_run(h);
    TH_TRACE(h, "retire wake");
    pv_denied(h, id);
    PBX_CHECK_EQ(pv_approvals(h), 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* INSTALL succeeded and DETACH is in flight at the dying vfsd: the request
 * ends PROVIDER_LOST (not as an unanswered DETACH), its installed,
 * unpublished grant ends lost (revoked, REMOVE, RETIRE at the returned
 * vfsd), and the decision is published DENIED only after that. */
PBX_TEST(core_provider_lost_with_detach_in_flight)
{
    th_h *h = th_new(4);
    pbx_ipc_id id = pv_open_exceptional(h);
    uint32_t k = th_run_to(h, "detach");
    PBX_REQUIRE(k != TH_NONE);
    pv_lose_vfsd(h, id);
    const pbx_core_grant *g = pbx_core_inspect_grant(
        &h->core, pbx_core_inspect_request(&h->core, id.index)->grant);
    PBX_CHECK_EQ(g->end_reason, PBX_CORE_EV_LOST);
    PBX_CHECK((g->flags & PBX_CORE_GRANT_F_PROVIDER_LOST) != 0U);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    pv_late_refused(h, k, id);
    th_run(h);
    TH_TRACE(h, "del=66 retire:fail");
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    th_run(h);
    TH_TRACE(h, "retire del=64 release=64 wake");
    pv_denied(h, id);
    PBX_CHECK_EQ(pv_approvals(h), 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A request still OPEN (no scope committed, nothing resolved) and one
 * whose RESOLVE is not yet sent are not the lost vfsd's: they go on and
 * are approved through the returned vfsd. */
PBX_TEST(core_provider_lost_spares_unresolved_requests)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), 0U);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    PBX_CHECK_EQ(pv_state(h, id), PBX_CORE_ST_OPEN);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    PBX_CHECK_EQ(th_selector(h, id, 0, sel, SEL_LEN), 0U);
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), 0U);
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}
