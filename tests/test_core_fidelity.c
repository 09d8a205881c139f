/*
 * test_core_fidelity.c: issue 22's seed-fidelity and blind-spot cases of
 * the core: an EXPIRE of a request already denied keeps its decision
 * (invariant 15), a COMMIT digest wrong in any one of its 32 bytes, a
 * refused receipt whose deletion failed once before NOT_FOUND.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Seeds 7354829 and 7357882 (sim/regress.txt): a request denied after its
 * grant was installed (ttyd's ACTIVE acknowledgement never came) waits on
 * the release lane while that grant, never published, is still LIVE. An
 * EXPIRE of its job then ends the grant but not the decision: DENIED with
 * its own reason stays, since a denial carries no authority to withhold,
 * and the seed retains every decision once made until its wake. */
PBX_TEST(core_expire_of_denied_request_keeps_its_denial)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    h->hold = true;
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    uint32_t k = th_run_to(h, "view+");
    PBX_REQUIRE(k != TH_NONE);
    th_drop(h, k);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 detach>65 "
                "view+");
    /* The ACTIVE row's deadline passes: DENIED, queued for release, which
     * has not run yet. */
    PBX_CHECK_EQ(th_time(h, 60000U), PBX_OK);
    /* Denied on the release lane, its installed grant LIVE, unpublished. */
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    PBX_REQUIRE(r->grant != PBX_CORE_NIL);
    const pbx_core_grant *g = pbx_core_inspect_grant(&h->core, r->grant);
    PBX_CHECK_EQ(r->link.state, PBX_CORE_ST_RELEASE);
    PBX_CHECK_EQ(r->outcome, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(g->link.state, PBX_CORE_ST_LIVE);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0),
                 0U);
    PBX_CHECK_EQ(r->outcome, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(r->reason, PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK_EQ(r->flags & PBX_CORE_REQ_F_CANCELLED, 0U);
    PBX_CHECK_EQ(g->link.state, PBX_CORE_ST_LIVE);
    h->hold = false;
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "del=66 view- retire del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A COMMIT whose BEGIN digest is wrong in any one of its 32 bytes (each
 * byte with a different bit) is refused with PBX_E_CORE_DIGEST and its
 * scope receipt deleted; the same request with the exact digest commits.
 * A comparison that skipped any byte would accept one of these. */
PBX_TEST(core_commit_digest_wrong_in_any_of_its_32_bytes)
{
    for (uint32_t at = 0; at <= PBX_IPC_DIGEST_BYTES; at++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        pbx_ipc_id id = {0, 0};
        uint32_t dest = 0;
        bool exact = at == PBX_IPC_DIGEST_BYTES;
        th_default_begin(&b, sel, SEL_LEN);
        if (!exact) {
            b.selector_digest[at] ^= (uint8_t)(1U << (at % 8U));
        }
        PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
        PBX_REQUIRE(th_selector(h, id, 0, sel, SEL_LEN) == 0U);
        th_clear_trace(h);
        if (exact) {
            PBX_CHECK_EQ(th_commit(h, id, dest, dest), 0U);
            TH_TRACE(h, "");
        } else {
            PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_DIGEST);
            TH_TRACE(h, "del=64");
            PBX_CHECK_EQ(
                pbx_core_inspect_request(&h->core, id.index)->link.state,
                PBX_CORE_ST_OPEN);
        }
        PBX_CHECK(th_conserved(h));
        th_free(h);
    }
}

/* NOT_FOUND is reported only after request authority cleanup, and a
 * refused receipt whose deletion failed once is such authority: a second
 * COMMIT's receipt (refused, owned by the request) whose deletion fails
 * transiently keeps the exact scoped NOT_FOUND unpublished (PENDING) until
 * the retried deletion succeeds; then the decision is NOT_FOUND, neither
 * lost to a denial nor published early. */
PBX_TEST(core_not_found_after_transient_deletion_of_refused_receipt)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_NOT_FOUND, 0, 0);
    h->hold = true;
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_REQUIRE(th_selector(h, id, 0, sel, SEL_LEN) == 0U);
    PBX_REQUIRE(th_commit(h, id, dest, dest) == 0U);
    h->hold_slot = 82U;
    PBX_CHECK_EQ(th_commit(h, id, dest, 82U), PBX_E_CORE_CLEANUP_PENDING);
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    /* The scope is deleted and released, the refused receipt is not. */
    TH_TRACE(h, "reserve=64 resolve@64 del=64 release=64");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    h->hold_slot = PBX_CORE_SLOT_NONE;
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "del=82 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_NOT_FOUND);
    PBX_CHECK_EQ(d.reason, 0U);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A wake the kernel rejects permanently stops the service with its own
 * exit status, PBX_CORE_EXIT_NOTIFY (67), distinct from public (64),
 * cleanup (65) and progression (66); a wake refused for now (FAILED) is
 * kept and retried on a tick, and backpressure (BUSY) when launchd's route
 * is ready again, neither ever a fail-stop. */
PBX_TEST(core_permanent_wake_rejection_stops_with_notify_status)
{
    static const pbx_core_io ios[] = {PBX_CORE_IO_FAILED, PBX_CORE_IO_BUSY,
                                      PBX_CORE_IO_REJECTED};
    for (size_t k = 0; k < sizeof(ios) / sizeof(ios[0]); k++) {
        th_h *h = th_new(4);
        pbx_ipc_begin b;
        pbx_ipc_id id = {0, 0};
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        th_default_begin(&b, sel, SEL_LEN);
        th_push_wake(h, ios[k]);
        PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
        th_run(h);
        PBX_CHECK_EQ(h->wake_count, 0U);
        if (ios[k] == PBX_CORE_IO_REJECTED) {
            PBX_CHECK_EQ(h->step_err, PBX_E_CORE_NOTIFY_REJECTED);
            PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NOTIFY);
            PBX_CHECK_EQ((int)PBX_CORE_EXIT_NOTIFY, 67);
            th_free(h);
            continue;
        }
        PBX_CHECK_EQ(h->step_err, PBX_OK);
        PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
        if (ios[k] == PBX_CORE_IO_BUSY) {
            pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_LAUNCHD);
        } else {
            pbx_core_on_tick(&h->core);
        }
        th_run(h);
        PBX_CHECK_EQ(h->wake_count, 1U);
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
        th_free(h);
    }
}
