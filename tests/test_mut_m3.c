/*
 * test_mut_m3.c: core behaviour found unchecked by mutation testing of
 * init, the correlation index, pools, release, expiry and the state
 * names (docs/TESTING.md "Mutation testing"). Each test names the effect
 * it pins: the exact init refusals, a context re-initialised over junk,
 * the index hash's known answers, release's exact fail-stop errors, the
 * queue a parked wake sits on, and what a retired request leaves behind.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t m3_sel[] = "docs/report.txt";
#define M3_SEL_LEN ((uint32_t)(sizeof(m3_sel) - 1U))

/* Derives a layout for pools of n records with tslots transient slots
 * (every deadline class time_ms). */
static void m3_layout(uint32_t n, uint32_t tslots, pbx_bootstrap_layout *out)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = n;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] = tslots;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        4U * n * PBX_CORE_SELECTOR_CHUNK_BYTES;
    g.call_window = n;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * n;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, want, out) == PBX_OK);
}

/* The transient-slot count th_new(4) uses. */
#define M3_TSLOTS (3U * 4U + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX)

/* Re-initialises h's core (pools of 4) over a context and arena filled
 * with junk, keeping its ops, slots and identity observation. */
static void m3_reinit_dirty(th_h *h)
{
    pbx_bootstrap_layout l;
    m3_layout(4U, M3_TSLOTS, &l);
    const pbx_core_ops *ops = h->core.ops;
    void *user = h->core.ops_user;
    pbx_capabi_layout slots = h->core.slots;
    pbx_core_identity_fn identity = h->core.identity;
    PBX_REQUIRE(l.arena_bytes == h->core.arena_len);
    memset(&h->core, 0xA5, sizeof(h->core));
    memset(h->arena, 0x5A, l.arena_bytes);
    PBX_REQUIRE(pbx_core_init(&h->core, &l, h->arena, l.arena_bytes, &slots,
                              ops, user) == PBX_OK);
    pbx_core_set_identity(&h->core, identity);
}

/* ---- init ---------------------------------------------------------------- */

/* Too few transient slots to serve one request is a layout the core
 * cannot serve (PBX_E_CORE_LAYOUT, startup exit 29), not an arena fault;
 * exactly the minimum is served. */
PBX_TEST(mut_m3_init_refuses_too_few_transient_slots_as_layout)
{
    pbx_bootstrap_layout l;
    pbx_capabi_layout slots;
    pbx_core_ctx *ctx = calloc(1, sizeof(*ctx));
    PBX_REQUIRE(ctx != NULL);
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, TH_T_FIRST, TH_T_COUNT) ==
                PBX_OK);
    m3_layout(4U, PBX_CORE_TSLOTS_MIN - 1U, &l);
    uint8_t *arena = aligned_alloc(4096U, l.arena_bytes);
    PBX_REQUIRE(arena != NULL);
    PBX_CHECK_EQ(
        pbx_core_init(ctx, &l, arena, l.arena_bytes, &slots, NULL, NULL),
        PBX_E_CORE_LAYOUT);
    free(arena);
    m3_layout(4U, PBX_CORE_TSLOTS_MIN, &l);
    arena = aligned_alloc(4096U, l.arena_bytes);
    PBX_REQUIRE(arena != NULL);
    PBX_CHECK_EQ(
        pbx_core_init(ctx, &l, arena, l.arena_bytes, &slots, NULL, NULL),
        PBX_OK);
    free(arena);
    free(ctx);
}

/* The core checks only that the arena is a whole number of pages: a
 * layout described in one-byte pages is as good as one in 4 KiB pages,
 * while a zero page size is refused as an arena fault. */
PBX_TEST(mut_m3_init_accepts_one_byte_pages_and_refuses_zero)
{
    pbx_bootstrap_layout l;
    pbx_capabi_layout slots;
    pbx_core_ctx *ctx = calloc(1, sizeof(*ctx));
    PBX_REQUIRE(ctx != NULL);
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, TH_T_FIRST, TH_T_COUNT) ==
                PBX_OK);
    m3_layout(4U, M3_TSLOTS, &l);
    uint8_t *arena = aligned_alloc(4096U, l.arena_bytes);
    PBX_REQUIRE(arena != NULL);
    l.page_size_bytes = 1U;
    l.page_count = l.arena_bytes;
    PBX_CHECK_EQ(
        pbx_core_init(ctx, &l, arena, l.arena_bytes, &slots, NULL, NULL),
        PBX_OK);
    PBX_CHECK_EQ(ctx->ready, 1U);
    l.page_size_bytes = 0U;
    l.page_count = 0U;
    PBX_CHECK_EQ(
        pbx_core_init(ctx, &l, arena, l.arena_bytes, &slots, NULL, NULL),
        PBX_E_CORE_ARENA);
    PBX_CHECK_EQ(ctx->ready, 0U);
    free(arena);
    free(ctx);
}

/* A context initialised over junk reports no exit, wants no tick, and
 * counts expired opens from zero: the first open that reaches its
 * deadline counts exactly one. */
PBX_TEST(mut_m3_init_over_junk_has_no_exit_no_tick_and_counts_from_zero)
{
    th_h *h = th_new(4);
    m3_reinit_dirty(h);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK(!pbx_core_tick_wanted(&h->core));
    PBX_CHECK_EQ(h->core.opens_expired, 0U);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_CHECK_EQ(th_time(h, 5001U), PBX_OK);
    th_run(h);
    PBX_CHECK_EQ(h->core.opens_expired, 1U);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK(!pbx_core_tick_wanted(&h->core));
    th_free(h);
}

/* ---- state names -----------------------------------------------------------
 */

/* The count itself and anything beyond it name no state or event. */
PBX_TEST(mut_m3_names_past_the_last_state_and_event_are_unknown)
{
    PBX_CHECK(strcmp(pbx_core_state_name(PBX_CORE_ST_COUNT), "unknown") == 0);
    PBX_CHECK(strcmp(pbx_core_event_name(PBX_CORE_EV_COUNT), "unknown") == 0);
    PBX_CHECK(
        strcmp(pbx_core_state_name((pbx_core_state)(PBX_CORE_ST_COUNT - 1)),
               "unknown") != 0);
    PBX_CHECK(
        strcmp(pbx_core_event_name((pbx_core_event)(PBX_CORE_EV_COUNT - 1)),
               "unknown") != 0);
}

/* ---- correlation index -----------------------------------------------------
 */

/* Known answers of the job-key hash, computed independently from its
 * definition (x = id * A + gen; x ^= x >> 32; x *= B; x ^= x >> 29;
 * x *= A; x ^= x >> 32; low 32 bits) with Python's integers: the
 * buckets, and so every correlation walk, are fixed by it. */
PBX_TEST(mut_m3_index_hash_known_answers)
{
    PBX_CHECK_EQ(pbx_core_inspect_hash(0U, 0U), 0U);
    PBX_CHECK_EQ(pbx_core_inspect_hash(1U, 1U), 0x5254232BU);
    PBX_CHECK_EQ(pbx_core_inspect_hash(42U, 7U), 0xEF2BF00CU);
    PBX_CHECK_EQ(pbx_core_inspect_hash(UINT64_MAX, UINT32_MAX), 0xEEE80E98U);
    PBX_CHECK_EQ(pbx_core_inspect_hash(UINT64_C(0x123456789ABCDEF0), 3U),
                 0xD62621F5U);
}

/* ---- scheduling ------------------------------------------------------------
 */

/* A fresh core serves its lanes from the intake lane: with a committed
 * request on intake and a cancelled one waiting to release, the first
 * step sends the first request's RESOLVE. */
PBX_TEST(mut_m3_fresh_core_serves_intake_first)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id c = {0, 0};
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, m3_sel, &a) == 0U);
    b.ctx.job_id++;
    PBX_REQUIRE(th_open(h, &b, m3_sel, &c) == 0U);
    PBX_CHECK_EQ(th_cancel(h, c), 0U);
    th_clear_trace(h);
    PBX_CHECK(th_step(h));
    TH_TRACE(h, "resolve@64 <66");
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, c, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_free(h);
}

/* ---- release ---------------------------------------------------------------
 */

/* Opens the default request, runs it to its POLICY call, drops that call
 * and cancels the request: release is next. */
static pbx_ipc_id m3_cancel_at_policy(th_h *h)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, m3_sel, &id) == 0U);
    uint32_t k = th_run_to(h, "policy");
    PBX_REQUIRE(k != TH_NONE);
    th_drop(h, k);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_clear_trace(h);
    return id;
}

/* A WITHDRAW that fails to send ends the need for it: after the object
 * copy went back the release does not try ttyd again, and the request no
 * longer counts a prompt as showing. */
PBX_TEST(mut_m3_failed_withdraw_is_not_sent_again)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_FAIL, 0, 0);
    PBX_REQUIRE(th_open(h, &b, m3_sel, &id) == 0U);
    uint32_t k = th_run_to(h, "prompt");
    PBX_REQUIRE(k != TH_NONE);
    th_drop(h, k);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_clear_trace(h);
    h->hold = true;
    th_run(h);
    TH_TRACE(h, "withdraw:fail detach>65");
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, id.index)->flags &
                     PBX_CORE_REQ_F_PROMPT,
                 0U);
    h->hold = false;
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "detach")), PBX_OK);
    th_run(h);
    TH_TRACE(h, "del=64 release=64 wake");
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The copy of a cancelled request's object whose DETACH fails to send is
 * deleted instead; a permanent rejection of that deletion is the cleanup
 * fail-stop with its own error. */
PBX_TEST(mut_m3_release_copy_deletion_rejected_is_cleanup)
{
    th_h *h = th_new(4);
    (void)m3_cancel_at_policy(h);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    th_run(h);
    TH_TRACE(h, "detach>65:fail del!65");
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    th_free(h);
}

/* A rejected deletion of a cancelled request's scope is the cleanup
 * fail-stop with its own error. */
PBX_TEST(mut_m3_release_scope_deletion_rejected_is_cleanup)
{
    th_h *h = th_new(4);
    (void)m3_cancel_at_policy(h);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    th_run(h);
    TH_TRACE(h, "detach>65 del!64");
    PBX_CHECK_EQ(h->step_err, PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    th_free(h);
}

/* A surplus receipt on the answer to a release DETACH whose deletion is
 * rejected fails the delivery with the cleanup error. */
PBX_TEST(mut_m3_release_reply_receipt_rejected_is_cleanup)
{
    th_h *h = th_new(4);
    (void)m3_cancel_at_policy(h);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, TH_M_SURPLUS, 0);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    th_run(h);
    TH_TRACE(h, "detach>65 <65 del!65");
    PBX_CHECK_EQ(h->deliver_err, PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    th_free(h);
}

/* A runtime-reply request whose DETACH fails after its alias was made is
 * denied: release gives its copy back, its unpublished grant is revoked
 * (the never-exported alias deleted) and retired at vfsd, and only then
 * the scope goes and the decision is published; nothing is left held. */
PBX_TEST(mut_m3_denied_runtime_reply_deletes_its_alias_then_scope)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    h->badge = PBX_CORE_BADGE_LAUNCHD;
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_OK, 0, 0);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_FAIL, 0, 0);
    PBX_REQUIRE(th_open(h, &b, m3_sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy alias=66 detach>65:fail "
                "detach>65 del=66 retire del=64 release=64 wake");
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- expiry ----------------------------------------------------------------
 */

/* An EXPIRE of the job after its published grant was cancelled (cleanup
 * still under way) leaves the grant ended as cancelled: expiry ends only
 * live grants. */
PBX_TEST(mut_m3_expire_after_grant_cancel_keeps_it_cancelled)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id r = {0, 0};
    pbx_core_log_grant_end e;
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, m3_sel, true, &r, NULL);
    PBX_CHECK_EQ(th_cancel_grant(h, g), 0U);
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0),
                 0U);
    PBX_REQUIRE(pbx_core_inspect_grant_end(&h->core, g, &e));
    PBX_CHECK(strcmp(e.end, "cancelled") == 0);
    PBX_CHECK(strcmp(e.reason, "cancel") == 0);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "del=66 view- retire");
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* EXPIRE of a job whose one approval is published but undelivered ends
 * that grant through its request and walks exactly one record: the
 * grant, ended, has left its chain before the grant walk. */
PBX_TEST(mut_m3_expire_of_a_published_grant_walks_one_record)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id r = {0, 0};
    pbx_core_log_grant_end e;
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, m3_sel, true, &r, NULL);
    uint32_t visits = h->core.index_visits;
    PBX_CHECK_EQ(th_expire(h, PBX_CORE_BADGE_LAUNCHD, PBX_IPC_EXPIRE_JOB,
                           b.ctx.job_id, b.ctx.job_gen, 0),
                 0U);
    PBX_CHECK_EQ(h->core.index_visits - visits, 1U);
    PBX_REQUIRE(pbx_core_inspect_grant_end(&h->core, g, &e));
    PBX_CHECK(strcmp(e.end, "expired") == 0);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- records a decision leaves ----------------------------------------------
 */

/* The decision log of a request that is not the pool's first record
 * names that request, and so does its decision record. */
PBX_TEST(mut_m3_decision_log_of_a_second_request)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id first = {0, 0};
    pbx_ipc_id second = {0, 0};
    pbx_core_log_decision ld;
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    (void)th_approve(h, &b, m3_sel, true, &first, NULL);
    b.ctx.job_id++;
    (void)th_approve(h, &b, m3_sel, true, &second, NULL);
    PBX_REQUIRE(second.index != first.index);
    PBX_REQUIRE(second.index != 0U);
    PBX_REQUIRE(pbx_core_inspect_decision(&h->core, second, &ld));
    PBX_CHECK_EQ(ld.request.index, second.index);
    PBX_CHECK_EQ(ld.request.gen, second.gen);
    PBX_CHECK_EQ(ld.outcome, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(ld.ctx->job_id, b.ctx.job_id);
    /* The decision record itself names its request and generation. */
    const pbx_core_decision *dec =
        (const pbx_core_decision *)pbx_core_inspect_record(
            &h->core, PBX_BOOTSTRAP_POOL_DECISIONS,
            pbx_core_inspect_request(&h->core, second.index)->decision);
    PBX_CHECK_EQ(dec->request, second.index);
    PBX_CHECK_EQ(dec->request_generation, second.gen);
    th_free(h);
}

/* Once the request that made a grant retired (its decision delivered),
 * the grant's end log names no request. */
PBX_TEST(mut_m3_grant_end_after_request_retired_names_no_request)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id r = {0, 0};
    pbx_core_log_grant_end e;
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, m3_sel, false, &r, NULL);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    PBX_REQUIRE(pbx_core_inspect_grant_end(&h->core, g, &e));
    PBX_CHECK(strcmp(e.end, "consumed") == 0);
    PBX_CHECK_EQ(e.request.index, 0U);
    PBX_CHECK_EQ(e.request.gen, 0U);
    th_run(h);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A wake launchd's route cannot take yet parks the notification record,
 * not its request: the request record sits in no queue meanwhile. */
PBX_TEST(mut_m3_parked_wake_queues_the_notification_record)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, m3_sel, M3_SEL_LEN);
    th_push_wake(h, PBX_CORE_IO_BUSY);
    PBX_REQUIRE(th_open(h, &b, m3_sel, &id) == 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    const pbx_core_link *n = (const pbx_core_link *)pbx_core_inspect_record(
        &h->core, PBX_BOOTSTRAP_POOL_NOTIFICATIONS, r->notification);
    PBX_CHECK_EQ(r->link.queue, 0U);
    PBX_CHECK_EQ(n->queue, (uint8_t)(PBX_CORE_Q_PARK_NOTIFY + 1));
    PBX_CHECK_EQ(h->core.queues[PBX_CORE_Q_PARK_NOTIFY].count, 1U);
    th_free(h);
}
