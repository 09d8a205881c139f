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
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
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

/* Asks DECISION and checks a receipt-free terminal outcome. */
static void grant_expect(th_h *h, pbx_ipc_id id, uint8_t outcome)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), 0U);
    PBX_CHECK_EQ(d.outcome, outcome);
    PBX_CHECK_EQ(d.mode, 0U);
    PBX_CHECK_EQ(d.grant.gen, 0U);
    PBX_CHECK_EQ(d.installed_slot, 0U);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
}

PBX_TEST(core_policy_deny_releases_before_decision)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    /* In flight: PENDING, receipt-free, nothing to deliver. */
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    th_run(h);
    /* The object goes back and the scope is deleted before the wake. */
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy detach>65 del=64 "
                "release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_exceptional_allow_from_policy_is_denied)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_EXC_ALLOW, 0);
    pbx_ipc_id id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy detach>65 del=64 "
                "release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    /* A routine request whose policy echo does not match is denied too. */
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_WRONG_ECHO, 0);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy detach>65 del=64 "
                "release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_prompt_retry_keeps_request_then_approves)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_RETRY, 0, 0);
    pbx_ipc_id id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy prompt");
    /* The exact contextual body reached the trusted prompt. */
    PBX_CHECK_EQ(h->last_prompt_ctx.ctx.job_id, b.ctx.job_id);
    PBX_CHECK_EQ(h->last_prompt_ctx.ctx.session, b.ctx.session);
    PBX_CHECK_EQ(h->last_prompt_ctx.ctx.entry.len, b.ctx.entry.len);
    PBX_CHECK_MEM(h->last_prompt_ctx.ctx.entry.bytes, b.ctx.entry.bytes,
                  b.ctx.entry.len);
    PBX_CHECK_MEM(h->last_prompt_ctx.label.bytes, b.label.bytes, b.label.len);
    PBX_CHECK_MEM(h->last_prompt_ctx.selector_digest, b.selector_digest, 32U);
    /* Waiting: no polling, still pending, scope and object kept, no call
     * outstanding. Split-phase change: RETRY used to park on ttyd's route
     * (its readiness asked again); now the request waits for a tick, and
     * ttyd's readiness asks nothing. */
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 2U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 0U);
    PBX_CHECK(th_conserved(h));
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_TTYD);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK(pbx_core_tick_wanted(&h->core));
    pbx_core_on_tick(&h->core);
    th_run(h);
    TH_TRACE(h, "prompt install^65 <66 detach>65 view+ del=64 release=64 "
                "wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

PBX_TEST(core_prompt_wrong_echo_or_user_deny_is_denied)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_WRONG_ECHO, 0);
    pbx_ipc_id id = grant_open(h, &b);
    /* The inexact answer is no answer: the prompt may still be showing,
     * so release withdraws it (split-phase change: WITHDRAW is new). */
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy prompt withdraw detach>65 "
                "del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_USER_DENY, 0, 0);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy prompt detach>65 del=64 "
                "release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    /* A surplus receipt on the answer is deleted and denies. */
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_SURPLUS, 0);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy prompt <66 del=66 "
                "withdraw detach>65 del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_install_rejects_staging_and_inexact_handles)
{
    static const uint32_t muts[] = {0, TH_M_WRONG_SLOT, TH_M_WRONG_ECHO,
                                    TH_M_BAD_RIGHTS};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (size_t k = 0; k < PBX_ARRAY_LEN(muts); k++) {
        th_push(h, PBX_CORE_ROUTE_PROCD, k == 0 ? TH_STAGING : TH_OK, muts[k],
                0);
        pbx_ipc_id id = grant_open(h, &b);
        /* The handle is deleted, never kept as revocation authority; the
         * object procd may have installed is retired before DENIED. */
        TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 del=66 "
                    "detach>65 del=64 release=64 retire wake");
        grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
        PBX_CHECK(th_quiescent(h));
    }
    th_free(h);
}

PBX_TEST(core_runtime_reply_alias_exported_exactly_once)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    h->badge = PBX_CORE_BADGE_LAUNCHD; /* runtime-reply: launchd's broker */
    pbx_ipc_id id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy alias=66 detach>65 view+ "
                "del=64 release=64 wake");
    PBX_CHECK_EQ(h->last_view.installed_slot, 0U);
    /* An undelivered reply keeps the alias for the next DECISION. */
    h->deliver = false;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.mode, PBX_IPC_MODE_RUNTIME_REPLY);
    PBX_CHECK_EQ(xfer, 66U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    TH_TRACE(h, "");
    h->deliver = true;
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), 0U);
    PBX_CHECK_EQ(xfer, 66U);
    TH_TRACE(h, "xfer=66");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    pbx_ipc_id grant = d.grant;
    /* Exported once: the request retired with the delivery. */
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    TH_TRACE(h, "");
    /* Consumption removes the row and retires the object at vfsd, which
     * revokes the exported alias; powerboxd holds nothing to delete. */
    PBX_CHECK_EQ(th_consume(h, grant), 0U);
    th_run(h);
    TH_TRACE(h, "view- retire");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_not_found_only_for_exact_scoped_class)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_NOT_FOUND, 0, 0);
    pbx_ipc_id id = grant_open(h, &b);
    /* Scope deleted and released before the receipt-free NOT_FOUND. */
    TH_TRACE(h, "reserve=64 resolve@64 del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_NOT_FOUND);
    PBX_CHECK(th_quiescent(h));
    /* A NOT_FOUND for another class is a denial. */
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_NOT_FOUND, 0, PBX_IPC_CLASS_DIRECTORY);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    /* A NOT_FOUND carrying a receipt is malformed: deleted, denied. */
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_NOT_FOUND, TH_M_SURPLUS, 0);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 del=65 del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_resolver_failures_are_never_not_found)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    pbx_ipc_id id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64:fail del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_DENIED, 0, 0);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    /* An object receipt with extra rights, or evidence bound to another
     * digest, is deleted at once. */
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_BAD_RIGHTS, 0);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 del=65 del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_WRONG_ECHO, 0);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 del=65 del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    /* A surplus receipt on FOUND: both deleted, denied. */
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_SURPLUS, 0);
    id = grant_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 <66 del=65 del=66 del=64 "
                "release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

PBX_TEST(core_active_view_unacknowledged_denies_and_cleans_grant)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, TH_M_WRONG_ECHO, 0);
    pbx_ipc_id id = grant_open(h, &b);
    /* Never approved: the installed grant is revoked, its REMOVE row
     * reconciled and the object retired before the denial exists. */
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy install^65 <66 detach>65 "
                "view+ del=66 view- retire del=64 release=64 wake");
    grant_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
