/*
 * test_core_routes.c: what a peer's death and return do (issue 13),
 * through the scripted ops with exact effect traces: a lost vfsd ends
 * every live grant (PROVIDER_LOST), a lost procd every live install-mode
 * grant (INSTALLER_LOST, its object retired at vfsd at once), a lost ttyd
 * keeps its prompts until their deadline and a returned ttyd gets every
 * live row and open prompt again, a second loss before the return ends
 * nothing twice, and a lost launchd broker cancels what is in flight and
 * expires every grant. Every test checks capability conservation.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* The grant record of id. */
static const pbx_core_grant *rt_grant(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_grant(&h->core, id.index);
}

/* The state of request id's record. */
static uint16_t rt_req_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* How often the grant row (from, event) was taken. */
static uint32_t rt_hits(const th_h *h, pbx_core_state from,
                        pbx_core_event event)
{
    size_t row = pbx_core_fsm_find(PBX_CORE_MACHINE_GRANT, from, event);
    return row < (size_t)PBX_CORE_FSM_ROWS ? h->core.fsm_hits[row] : UINT32_MAX;
}

/* The seq of pending call k, or 0 when there is none (no call's seq is
 * 0: its generation is nonzero). */
static uint32_t rt_seq(const th_h *h, uint32_t k)
{
    return k < h->npend ? h->pend[k].seq : 0U;
}

/* Approves one routine grant of mode (reply delivered) and clears the
 * trace. */
static pbx_ipc_id rt_approved(th_h *h, uint8_t mode)
{
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = mode;
    if (mode == PBX_IPC_MODE_RUNTIME_REPLY) {
        memset(&b.target, 0, sizeof(b.target));
    }
    return th_approve(h, &b, sel, false, NULL, NULL);
}

/* Checks the log view of ended grant g: end and reason texts. */
static void rt_end_is(const th_h *h, pbx_ipc_id g, const char *end,
                      const char *reason)
{
    pbx_core_log_grant_end e;
    PBX_REQUIRE(pbx_core_inspect_grant_end(&h->core, g, &e));
    PBX_CHECK(strcmp(e.end, end) == 0);
    PBX_CHECK(strcmp(e.reason, reason) == 0);
}

/* ---- vfsd ---------------------------------------------------------------- */

/* vfsd dies with an install grant and a runtime grant live: both end
 * (LOST, provider-lost), each is revoked, its REMOVE goes to ttyd, and
 * its RETIRE waits while vfsd's route refuses it (one try per tick); the
 * returned vfsd gets both RETIREs at once and the exact echoes free the
 * grants. */
PBX_TEST(core_routes_vfsd_loss_ends_every_live_grant)
{
    th_h *h = th_new(4);
    pbx_ipc_id a = rt_approved(h, PBX_IPC_MODE_INSTALL);
    pbx_ipc_id b = rt_approved(h, PBX_IPC_MODE_RUNTIME_REPLY);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    h->hold = true;
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    PBX_CHECK_EQ(rt_hits(h, PBX_CORE_ST_LIVE, PBX_CORE_EV_LOST), 2U);
    PBX_CHECK_EQ(rt_grant(h, a)->link.state, PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(rt_grant(h, b)->link.state, PBX_CORE_ST_REVOKE);
    rt_end_is(h, a, "lost", "provider-lost");
    rt_end_is(h, b, "lost", "provider-lost");
    th_run(h);
    TH_TRACE(h, "del=66 view- retire:fail view- retire:fail");
    PBX_CHECK(th_conserved(h));
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    PBX_CHECK_EQ(th_deliver_all(h), 2U);
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    th_run(h);
    TH_TRACE(h, "retire retire");
    PBX_CHECK_EQ(th_deliver_all(h), 2U);
    PBX_CHECK_EQ(rt_grant(h, a)->link.live, 0U);
    PBX_CHECK_EQ(rt_grant(h, b)->link.live, 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* vfsd dies while a request waits for ttyd's ACTIVE acknowledgement: its
 * installed, unpublished grant ends lost, and the request's decision is
 * DENIED saying why (provider-lost); it is published only after the
 * object's RETIRE was acknowledged. */
PBX_TEST(core_routes_vfsd_loss_before_approval_denies_with_its_reason)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    PBX_REQUIRE(th_run_to(h, "view+") != TH_NONE);
    PBX_CHECK_EQ(rt_req_state(h, id), PBX_CORE_ST_ACTIVATE);
    th_clear_trace(h);
    h->hold = true;
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    PBX_CHECK_EQ(rt_req_state(h, id), PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(rt_hits(h, PBX_CORE_ST_LIVE, PBX_CORE_EV_LOST), 1U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    h->hold = false;
    th_run(h);
    TH_TRACE(h, "del=64 release=64 wake");
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_PROVIDER_LOST);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- procd --------------------------------------------------------------- */

/* procd dies with an install grant and a runtime grant live: only the
 * install grant ends (LOST, installer-lost) and its object's RETIRE goes
 * to vfsd at once; the runtime grant, which procd never held, stays
 * LIVE and is consumed later as usual. */
PBX_TEST(core_routes_procd_loss_retires_what_procd_installed)
{
    th_h *h = th_new(4);
    pbx_ipc_id a = rt_approved(h, PBX_IPC_MODE_INSTALL);
    pbx_ipc_id b = rt_approved(h, PBX_IPC_MODE_RUNTIME_REPLY);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_PROCD),
                 PBX_OK);
    PBX_CHECK_EQ(rt_grant(h, a)->link.state, PBX_CORE_ST_REVOKE);
    PBX_CHECK_EQ(rt_grant(h, b)->link.state, PBX_CORE_ST_LIVE);
    rt_end_is(h, a, "lost", "installer-lost");
    th_run(h);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK_EQ(rt_grant(h, a)->link.live, 0U);
    PBX_CHECK_EQ(rt_grant(h, b)->link.state, PBX_CORE_ST_LIVE);
    PBX_CHECK_EQ(th_consume(h, b), 0U);
    th_run(h);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* procd dies while its INSTALL is outstanding: the install may have
 * happened, so the object is retired at vfsd before the DENIED decision
 * (peer-timeout) is published. */
PBX_TEST(core_routes_procd_loss_during_install_retires_first)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    uint32_t k = th_run_to(h, "install");
    PBX_REQUIRE(k != TH_NONE);
    th_drop(h, k);
    th_clear_trace(h);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_PROCD),
                 PBX_OK);
    th_run(h);
    TH_TRACE(h, "detach>65 del=64 release=64 retire wake");
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- ttyd ---------------------------------------------------------------- */

/* ttyd dies and comes back empty: the live grant's ACTIVE row is sent
 * again (exact generation) and its exact acknowledgement ends the
 * resync; the open prompt is sent again under its own seq and its answer
 * from the new ttyd counts. */
PBX_TEST(core_routes_ttyd_return_resends_rows_and_prompts)
{
    th_h *h = th_new(4);
    pbx_ipc_id g = rt_approved(h, PBX_IPC_MODE_INSTALL);
    pbx_ipc_begin x;
    pbx_ipc_id p = {0, 0};
    th_default_begin(&x, sel, SEL_LEN);
    x.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    PBX_CHECK_EQ(th_open(h, &x, sel, &p), 0U);
    uint32_t k = th_run_to(h, "prompt");
    PBX_REQUIRE(k != TH_NONE);
    uint32_t seq = rt_seq(h, k);
    th_drop(h, k);
    th_clear_trace(h);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    PBX_CHECK_EQ(rt_req_state(h, p), PBX_CORE_ST_PROMPT);
    PBX_CHECK_EQ(rt_grant(h, g)->link.state, PBX_CORE_ST_LIVE);
    h->hold = true;
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_TTYD), PBX_OK);
    PBX_CHECK((rt_grant(h, g)->flags & PBX_CORE_GRANT_F_RESYNC) != 0U);
    th_run(h);
    TH_TRACE(h, "prompt view+");
    PBX_CHECK_EQ(h->last_view.grant.index, g.index);
    PBX_CHECK_EQ(h->last_view.grant.gen, g.gen);
    PBX_CHECK_EQ(h->last_view.kind, PBX_IPC_VIEW_ACTIVE);
    k = th_find(h, "prompt");
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(rt_seq(h, k), seq);
    PBX_CHECK_EQ(th_deliver_all(h), 2U);
    PBX_CHECK_EQ(rt_grant(h, g)->flags & PBX_CORE_GRANT_F_RESYNC, 0U);
    h->hold = false;
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, p, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- a second loss before the return ------------------------------------ */

/* vfsd is lost twice before it returns: the second loss ends nothing more
 * (the grant already ended; its RETIRE stays owed, one try per tick), and
 * the return sends that RETIRE exactly once. */
PBX_TEST(core_routes_second_loss_before_return_changes_nothing)
{
    th_h *h = th_new(4);
    pbx_ipc_id a = rt_approved(h, PBX_IPC_MODE_INSTALL);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    th_run(h);
    th_clear_trace(h);
    PBX_CHECK_EQ(pbx_core_on_route_down(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    PBX_CHECK_EQ(rt_hits(h, PBX_CORE_ST_LIVE, PBX_CORE_EV_LOST), 1U);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_on_route_up(&h->core, PBX_CORE_ROUTE_VFSD), PBX_OK);
    th_run(h);
    TH_TRACE(h, "retire");
    PBX_CHECK_EQ(rt_grant(h, a)->link.live, 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- launchd's broker -----------------------------------------------------
 */

/* launchd's broker connection is lost with a live grant, a request in
 * flight and an undelivered approval: the grants end EXPIRE, the request
 * in flight ends CANCELLED, and no decision waits for a caller that is
 * gone: every request record retires. */
PBX_TEST(core_routes_broker_loss_cancels_and_expires)
{
    th_h *h = th_new(4);
    pbx_ipc_id a = rt_approved(h, PBX_IPC_MODE_INSTALL);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    pbx_ipc_id r2 = {0, 0};
    pbx_ipc_id c = th_approve(h, &b, sel, true, &r2, NULL);
    pbx_ipc_id q = {0, 0};
    PBX_CHECK_EQ(th_open_parked(h, &b, sel, &q), 0U);
    PBX_CHECK_EQ(pbx_core_on_broker_lost(&h->core), PBX_OK);
    rt_end_is(h, a, "expired", "expire");
    rt_end_is(h, c, "expired", "expire");
    th_run(h);
    TH_TRACE(h, "del=67 detach>65 del=64 release=64 del=66 wake view- retire "
                "view- retire");
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, r2.index)->link.live, 0U);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, q.index)->link.live, 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
