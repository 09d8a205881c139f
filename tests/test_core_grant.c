/*
 * test_core_grant.c: resolution, session policy, trusted prompt, grant
 * installation or runtime alias, the ACTIVE view and decisions, each
 * asserted as the exact sequence of effects through the scripted ops.
 */
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Opens the default request, checks it is pending, and runs it. */
static pbx_ipc_id grant_open(th_h *h, const pbx_ipc_begin *b)
{
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open(h, b, sel, &id), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    return id;
}

PBX_TEST(core_routine_allow_install_end_to_end)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id id = grant_open(h, &b);
    /* RESOLVE through the scope, POLICY, INSTALL with a copy of the
     * object, DETACH of powerboxd's own copy, ACTIVE row, scope deleted
     * and its reservation released, then the wake. */
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 detach>65 "
                "view+ del=64 release=64 wake");
    PBX_CHECK_EQ(h->wake_count, 1U);
    PBX_CHECK_EQ(h->last_wake.index, id.index);
    PBX_CHECK_EQ(h->last_wake.gen, id.gen);
    PBX_CHECK_EQ(h->last_view.kind, PBX_IPC_VIEW_ACTIVE);
    PBX_CHECK_EQ(h->last_view.installed_slot, 40U);
    PBX_CHECK_EQ(h->last_view.scope_id, 0x5C09EU);
    PBX_CHECK_EQ(h->last_view.label.len, b.label.len);
    PBX_CHECK_MEM(h->last_view.selector_digest, b.selector_digest, 32U);
    /* Only the manage-only revocation handle is still held. */
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    PBX_CHECK(th_conserved(h));
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), 0U);
    PBX_CHECK_EQ(d.outcome, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.mode, PBX_IPC_MODE_INSTALL);
    PBX_CHECK_EQ(d.installed_slot, 40U);
    PBX_CHECK_EQ(d.grant.index, h->last_view.grant.index);
    PBX_CHECK_EQ(d.grant.gen, h->last_view.grant.gen);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    TH_TRACE(h, "");
    /* Delivered: the request retired; a second DECISION finds nothing. */
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}
