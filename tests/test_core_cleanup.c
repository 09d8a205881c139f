/*
 * test_core_cleanup.c: the order of terminal grant cleanup through
 * scripted ops. Revocation comes first; REMOVE at ttyd and RETIRE at vfsd
 * then proceed independently, so ttyd's backpressure never keeps a
 * revoked grant (or an exported runtime alias) alive; the generation
 * retires only once both are acknowledged exactly. A request cancelled
 * while its DETACH is parked gives its object copy back to vfsd before the
 * unpublished grant is retired there.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Returns the machine state of grant id's record. */
static uint16_t cl_grant_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_grant(&h->core, id.index)->link.state;
}

/* Returns how often the grant row (from, event) was taken; UINT32_MAX
 * when the table has no such row, which no expected count equals. */
static uint32_t cl_hits(const th_h *h, pbx_core_state from,
                        pbx_core_event event)
{
    size_t row = pbx_core_fsm_find(PBX_CORE_MACHINE_GRANT, from, event);
    return row < (size_t)PBX_CORE_FSM_ROWS ? h->core.fsm_hits[row] : UINT32_MAX;
}

/* Runs b to an approved, delivered decision; returns the grant id and
 * leaves the trace empty. */
static pbx_ipc_id cl_approve(th_h *h, const pbx_ipc_begin *b, uint32_t *xfer)
{
    return th_approve(h, b, sel, false, NULL, xfer);
}

/* Review D1: once the runtime alias is exported, vfsd's RETIRE is the only
 * revocation there is. ttyd pushing back on REMOVE must not delay it. */
PBX_TEST(core_runtime_alias_retires_while_ttyd_pushes_back)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    pbx_ipc_id g = cl_approve(h, &b, &xfer);
    PBX_CHECK_EQ(xfer, 66U); /* exported: the caller holds the alias */
    for (int k = 0; k < 5; k++) {
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    }
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    /* Nothing of powerboxd's to delete; the first REMOVE is refused and
     * the RETIRE goes out in the same step: the alias is dead at vfsd. */
    TH_TRACE(h, "view-:busy retire");
    PBX_CHECK_EQ(cl_grant_state(h, g), PBX_CORE_ST_REMOVE);
    PBX_CHECK_EQ(cl_hits(h, PBX_CORE_ST_SETTLE, PBX_CORE_EV_RETIRED), 1U);
    /* REMOVE is retried on its own, on ttyd's readiness only. */
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    PBX_CHECK_EQ(th_run(h), 0U);
    for (int k = 0; k < 4; k++) {
        pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
        th_run(h);
    }
    TH_TRACE(h, "view-:busy view-:busy view-:busy view-:busy");
    /* The generation retires only on the exact REMOVE acknowledgement. */
    PBX_CHECK_EQ(cl_grant_state(h, g), PBX_CORE_ST_REMOVE);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_STATE);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    th_run(h);
    TH_TRACE(h, "view-");
    PBX_CHECK_EQ(h->last_view.kind, PBX_IPC_VIEW_REMOVE);
    PBX_CHECK_EQ(h->last_view.grant.gen, g.gen);
    PBX_CHECK_EQ(cl_hits(h, PBX_CORE_ST_REMOVE, PBX_CORE_EV_REMOVED), 1U);
    PBX_CHECK_EQ(th_consume(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Install mode: procd's revocation handle is deleted first, whatever ttyd
 * does; then ttyd's refusal does not hold the RETIRE back. */
PBX_TEST(core_install_revokes_first_and_retires_despite_ttyd)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = cl_approve(h, &b, &xfer);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_FAIL, 0, 0);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view-:fail retire");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    PBX_CHECK_EQ(cl_grant_state(h, g), PBX_CORE_ST_REMOVE);
    /* A failed REMOVE (not backpressure) is asked again on a tick: ttyd's
     * route readiness alone does not re-ask. */
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "view-");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The other order: REMOVE acknowledged, RETIRE refused. The generation
 * waits for vfsd's exact acknowledgement; ttyd is not asked again. */
PBX_TEST(core_removed_grant_waits_for_exact_retire)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = cl_approve(h, &b, &xfer);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_WRONG_ECHO, 0);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire:busy");
    PBX_CHECK_EQ(cl_grant_state(h, g), PBX_CORE_ST_RETIRE);
    PBX_CHECK_EQ(cl_hits(h, PBX_CORE_ST_SETTLE, PBX_CORE_EV_REMOVED), 1U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    th_run(h);
    TH_TRACE(h, "retire");
    PBX_CHECK_EQ(cl_grant_state(h, g), PBX_CORE_ST_RETIRE);
    /* The inexact echo waits for a tick, not for vfsd's route. */
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "retire");
    PBX_CHECK_EQ(cl_hits(h, PBX_CORE_ST_RETIRE, PBX_CORE_EV_RETIRED), 1U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Both refused: the grant keeps both owed and waits on vfsd (the
 * revocation is what must not wait), retrying both from there. */
PBX_TEST(core_settle_with_both_peers_refusing_waits_on_vfsd)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = cl_approve(h, &b, &xfer);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    TH_TRACE(h, "del=66 view-:busy retire:busy");
    PBX_CHECK_EQ(cl_grant_state(h, g), PBX_CORE_ST_SETTLE);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    th_run(h);
    TH_TRACE(h, "view- retire");
    PBX_CHECK_EQ(cl_hits(h, PBX_CORE_ST_SETTLE, PBX_CORE_EV_REMOVED), 1U);
    PBX_CHECK_EQ(cl_hits(h, PBX_CORE_ST_RETIRE, PBX_CORE_EV_RETIRED), 1U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Review D4: a cancel while DETACH is parked gives powerboxd's own object
 * copy back to vfsd first, then revokes the unpublished grant, so vfsd
 * sees DETACH before RETIRE for the object, in both modes. (Split-phase
 * change: the grant's ACTIVE row never went to ttyd, so no REMOVE is
 * owed and none is sent.) */
PBX_TEST(core_cancel_in_detach_detaches_before_retire)
{
    for (int mode = 0; mode < 2; mode++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        pbx_ipc_id id = {0, 0};
        th_default_begin(&b, sel, SEL_LEN);
        if (mode == 1) {
            b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
            memset(&b.target, 0, sizeof(b.target));
        }
        th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
        th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
        PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
        th_run(h);
        th_clear_trace(h);
        PBX_CHECK_EQ(th_cancel(h, id), 0U);
        th_run(h);
        TH_TRACE(h, "detach>65 del=66 retire del=64 release=64 wake");
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
        PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE); /* carries nothing */
        PBX_CHECK(th_quiescent(h));
        th_free(h);
    }
}

/* A cancel while the DETACH meets backpressure: the installed grant is
 * revoked at once (procd's handle deleted), never after a vfsd round
 * trip; its RETIRE waits only until the request's own copy went back to
 * vfsd, so vfsd sees DETACH before RETIRE. */
PBX_TEST(core_cancel_in_detach_revokes_at_once_and_retires_after_detach)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_BUSY, 0, 0);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    th_run(h);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    TH_TRACE(h, "detach>65:busy del=66");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 2U);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
    th_run(h);
    /* No row went to ttyd: RETIRE only (no REMOVE owed). */
    TH_TRACE(h, "detach>65 retire del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
