/*
 * test_mut_m5.c: behaviour that mutation testing (make mutate,
 * docs/TESTING.md "Mutation testing") found unchecked in the release of a
 * refused request whose handle slot is still held: a runtime-reply alias
 * of the wrong rights whose deletion the kernel answered TRANSIENT. Its
 * grant was never filled (still FREE), so no revocation deletes the
 * alias first: release itself must delete it, then the scope, and only
 * then publish the decision.
 */
#include "../core/pbx_core.h"
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t m5_sel[] = "docs/report.txt";
#define M5_SEL_LEN ((uint32_t)(sizeof(m5_sel) - 1U))

/* Opens a runtime-reply request whose derived alias carries the wrong
 * rights and whose first deletion the kernel answers TRANSIENT; runs the
 * core until the POLICY call is pending and clears the trace. Returns the
 * request. */
static pbx_ipc_id m5_open_bad_alias_kept(th_h *h)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    h->alias_rights = PBX_CAPABI_RIGHT_SEND | PBX_CAPABI_RIGHT_MANAGE;
    th_default_begin(&b, m5_sel, M5_SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    PBX_CHECK_EQ(th_open(h, &b, m5_sel, &id), 0U);
    PBX_REQUIRE(th_run_to(h, "policy") != TH_NONE);
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    th_clear_trace(h);
    return id;
}

/* A refused alias whose deletion stayed TRANSIENT is still held when the
 * request is denied; release deletes it, without waiting for a tick, and
 * then the scope, and publishes DENIED with PEER_FAILED leaving nothing
 * held. */
PBX_TEST(mut_m5_refused_alias_kept_by_transient_delete_is_released)
{
    th_h *h = th_new(4);
    pbx_ipc_id id = m5_open_bad_alias_kept(h);
    th_run(h);
    /* The alias (66) stays after its TRANSIENT deletion; the copy goes
     * back to vfsd; release deletes the alias, then the scope (64), gives
     * the reservation back, and only then wakes the caller. */
    TH_TRACE(h, "alias=66 del~66 detach>65 del=66 del=64 release=64 wake");
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    /* Published and woken without any tick: the release lane carried it
     * through. */
    PBX_CHECK_EQ(r->link.state, (uint16_t)PBX_CORE_ST_DECIDED);
    PBX_CHECK(pbx_core_inspect_tslot(&h->core, r->handle_tslot)->link.state !=
              PBX_CORE_TSLOT_HELD);
    PBX_CHECK(pbx_core_inspect_tslot(&h->core, r->scope_tslot)->link.state !=
              PBX_CORE_TSLOT_HELD);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_PEER_FAILED);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
