/*
 * test_core_reach.c: core paths the simulator's CI budget never takes
 * (docs/TESTING.md "Branch coverage under the simulator"), each driven
 * here through the public API and named as the reason of its arms in
 * sim/coverage-reasons.txt: init refusing every inconsistent extent and a
 * zero call window or OPEN deadline; a scoped reply read through another
 * slot refused when the ops layer observes no identity; public frames
 * whose body the decoder refuses answered with the decoder's error; a
 * delivery report for a request that is not waiting for one refused, and
 * a COMMIT after delivery deleted as junk that no request waits for; and
 * public junk that stops at the transient slots kept for peer replies.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t sel[] = "docs/reach.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* The transient-slot records kept free for one peer reply's receipts
 * (the core's PBX_CORE_TSLOT_SPARE, the threshold of pbx_core_peer_ready). */
#define REACH_SPARE PBX_CORE_RECV_SLOTS_MAX

/* ---- init ---------------------------------------------------------------- */

/* Derives a layout for pools of 4 records with one call per class. */
static void reach_layout(pbx_bootstrap_layout *out)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = 4U;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] = 1024U;
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] = PBX_CORE_TSLOTS_MIN;
    g.call_window = 1U;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, want, out) == PBX_OK);
}

/* Whether init refuses layout bad over arena with want, leaving ctx not
 * ready. */
static bool reach_refused(const pbx_bootstrap_layout *bad, uint8_t *arena,
                          pbx_err want)
{
    static pbx_core_ctx ctx;
    static const pbx_core_ops ops;
    pbx_capabi_layout slots;
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, 64U, 64U) == PBX_OK);
    ctx.ready = 1U;
    pbx_err err =
        pbx_core_init(&ctx, bad, arena, bad->arena_bytes, &slots, &ops, NULL);
    return err == want && ctx.ready == 0U;
}

/* A layout that passes every record check but is inconsistent with its
 * own extent or arena, or that could never serve a request, is refused
 * before anything is carved: a pool reaching past the used extent, a zero
 * page size, a used extent larger than the arena, no arena, a zero call
 * window, a zero OPEN deadline. The layout itself is accepted. */
PBX_TEST(core_reach_init_refuses_each_inconsistent_extent)
{
    pbx_bootstrap_layout l;
    reach_layout(&l);
    uint8_t *arena = aligned_alloc(4096U, l.arena_bytes);
    PBX_REQUIRE(arena != NULL);
    static pbx_core_ctx ok;
    static const pbx_core_ops ops;
    pbx_capabi_layout slots;
    PBX_REQUIRE(pbx_capabi_layout_init(&slots, 64U, 64U) == PBX_OK);
    PBX_CHECK_EQ(
        pbx_core_init(&ok, &l, arena, l.arena_bytes, &slots, &ops, NULL),
        PBX_OK);
    PBX_CHECK_EQ(ok.ready, 1U);
    pbx_bootstrap_layout bad = l;
    pbx_bootstrap_pool_extent *e = &bad.pools[PBX_BOOTSTRAP_POOL_REQUESTS];
    PBX_REQUIRE(e->record_size_bytes > 0U);
    e->capacity += (uint32_t)(l.used_bytes / e->record_size_bytes) + 1U;
    e->size_bytes = (size_t)e->capacity * e->record_size_bytes;
    PBX_CHECK(reach_refused(&bad, arena, PBX_E_CORE_ARENA));
    bad = l;
    bad.page_size_bytes = 0U;
    PBX_CHECK(reach_refused(&bad, arena, PBX_E_CORE_ARENA));
    bad = l;
    bad.used_bytes = l.arena_bytes + 1U;
    PBX_CHECK(reach_refused(&bad, arena, PBX_E_CORE_ARENA));
    PBX_CHECK(reach_refused(&l, NULL, PBX_E_CORE_ARENA));
    bad = l;
    bad.call_window = 0U;
    PBX_CHECK(reach_refused(&bad, arena, PBX_E_CORE_LAYOUT));
    bad = l;
    bad.time_ms[PBX_BOOTSTRAP_TIME_OPEN] = 0U;
    PBX_CHECK(reach_refused(&bad, arena, PBX_E_CORE_LAYOUT));
    free(arena);
}

/* ---- scoped replies without an identity observation ---------------------- */

/* Without any identity observation installed (pbx_core_set_identity with
 * NULL), a scope slot still never carries a RESOLVE reply: the reply to
 * a's RESOLVE read through b's scope slot is refused with its receipt
 * deleted, both calls stay outstanding, and on vfsd's route the same
 * reply approves a (the binding is identity-free). */
PBX_TEST(core_reach_scope_reply_without_identity_observation_is_refused)
{
    th_h *h = th_new(4);
    static th_reply r;
    pbx_ipc_begin b;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id other = {0, 0};
    pbx_core_set_identity(&h->core, NULL);
    th_default_begin(&b, sel, SEL_LEN);
    h->hold = true;
    PBX_REQUIRE(th_open(h, &b, sel, &a) == 0U);
    PBX_REQUIRE(th_open(h, &b, sel, &other) == 0U);
    th_run(h);
    PBX_REQUIRE(h->npend == 2U);
    PBX_REQUIRE(strcmp(h->pend[0].name, "resolve") == 0);
    PBX_REQUIRE(h->pend[0].via_slot != h->pend[1].via_slot);
    uint32_t held = pbx_core_held_caps(&h->core);
    th_reply_build(h, 0, &r);
    r.route = PBX_CORE_ROUTE_SCOPE;
    r.via_slot = h->pend[1].via_slot;
    PBX_CHECK_EQ(th_reply_send(h, &r), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
    PBX_CHECK(th_conserved(h));
    PBX_CHECK_EQ(th_deliver(h, 0), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    TH_CHECK_OUTCOME(h, other, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- bodies the decoder refuses ------------------------------------------ */

/* Sends frame (len bytes) with count receipts from the broker; returns the
 * reply status (UINT32_MAX: none) and requires the core to return OK. */
static uint32_t reach_send(th_h *h, const uint8_t *frame, size_t len,
                           const uint32_t *slots, size_t count)
{
    static pbx_core_out out;
    pbx_err core = PBX_OK;
    uint32_t st =
        th_public(h, TH_BROKER, frame, len, slots, count, &core, &out);
    PBX_CHECK_EQ(core, PBX_OK);
    return st;
}

/* A SELECTOR whose chunk length is zero, a COMMIT whose reserved word is
 * set and a DECISION with a body pass the frame decoder (header, op and
 * capability count) but not their body decoders: each gets its own op's
 * error reply with the body decoder's error, the COMMIT's receipt is
 * deleted, and the request they name is unchanged (its selector and
 * commit still go through, and it is approved). */
PBX_TEST(core_reach_malformed_bodies_get_their_decoders_error)
{
    th_h *h = th_new(4);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    size_t n = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    pbx_ipc_selector s = {0U, SEL_LEN, sel};
    PBX_REQUIRE(pbx_ipc_selector_encode(id, &s, buf, sizeof(buf), &n) ==
                PBX_OK);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 4U, 0U);
    PBX_CHECK_EQ(reach_send(h, buf, n, NULL, 0), PBX_E_IPC_BOUND);
    PBX_CHECK_EQ(th_selector(h, id, 0U, sel, SEL_LEN), 0U);
    pbx_ipc_commit c = {dest};
    PBX_REQUIRE(pbx_ipc_commit_encode(id, &c, buf, sizeof(buf), &n) == PBX_OK);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 4U, 1U);
    th_clear_trace(h);
    uint32_t junk = th_put_cap(h, dest, PBX_CAPABI_KIND_ENDPOINT,
                               PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    PBX_CHECK_EQ(reach_send(h, buf, n, &junk, 1), PBX_E_IPC_RESERVED);
    TH_TRACE(h, "del=64");
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf),
                                     &n) == PBX_OK);
    PBX_REQUIRE(n + 4U <= sizeof(buf));
    pbx_le_put32(buf + n, 0U);
    pbx_le_put32(buf + 20, 4U);
    PBX_CHECK_EQ(reach_send(h, buf, n + 4U, NULL, 0), PBX_E_IPC_TRAILING);
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), 0U);
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- delivery reports and a COMMIT after delivery ------------------------ */

/* A delivery report names a request whose published decision waits for
 * one: for a request still in progress, or one whose reply was already
 * delivered (its wake still owed), it is refused and changes nothing. A
 * COMMIT for the delivered request is refused (STATE) and its receipt is
 * junk that no request waits for: while its deletion stays transient the
 * request still retires when its wake goes out, and the receipt is
 * deleted on a later tick. */
PBX_TEST(core_reach_reports_and_commits_after_delivery_are_refused)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    th_push_wake(h, PBX_CORE_IO_BUSY);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    PBX_CHECK_EQ(pbx_core_on_reply_delivered(&h->core, id.index, id.gen, true),
                 PBX_E_CORE_TOKEN);
    th_run(h);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(pbx_core_on_reply_delivered(&h->core, id.index, id.gen, true),
                 PBX_E_CORE_TOKEN);
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_STATE);
    th_clear_trace(h);
    h->hold_all = true;
    PBX_CHECK_EQ(th_commit(h, id, 0U, PBX_CORE_SLOT_NONE),
                 PBX_E_CORE_CLEANUP_PENDING);
    pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_LAUNCHD);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    PBX_CHECK_EQ(h->wake_count, 1U);
    PBX_CHECK_EQ(th_decision(h, id, &d, &xfer), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(h->core.public_orphans, 1U);
    h->hold_all = false;
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- public junk and the peer spare -------------------------------------- */

/* A received endpoint in the lowest free transient slot. */
static uint32_t reach_cap(th_h *h)
{
    return th_put_cap(h, PBX_CORE_SLOT_NONE, PBX_CAPABI_KIND_ENDPOINT,
                      PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
}

/* Sends a DECISION for the unknown request {0, 1} from an ordinary client
 * with count receipts; returns the reply status (UINT32_MAX: none) and
 * *core the core's return value. */
static uint32_t reach_junk(th_h *h, const uint32_t *slots, size_t count,
                           pbx_err *core)
{
    uint8_t buf[64];
    pbx_core_out out;
    pbx_ipc_id none = {0, 1};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, none, buf,
                                     sizeof(buf), &n) == PBX_OK);
    return th_public(h, TH_BADGE, buf, n, slots, count, core, &out);
}

/* With two requests holding their records and every junk deletion held
 * transient, public junk takes transient-slot records only down to the
 * peer spare: after the last frame that fits, exactly the spare
 * (one peer reply's receipts) is free, public intake has no room (a
 * frame with one receipt is held, nothing taken) while peer replies may
 * still be taken. Once the kernel lets go, a tick deletes the junk and
 * the room comes back. */
PBX_TEST(core_reach_public_junk_stops_at_the_peer_spare)
{
    th_h *h = th_new(2);
    pbx_ipc_begin b;
    pbx_ipc_id id[2] = {{0, 0}, {0, 0}};
    uint32_t dest = 0;
    pbx_err core = PBX_OK;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id[0], &dest) == 0U);
    PBX_REQUIRE(th_begin(h, &b, &id[1], &dest) == 0U);
    uint32_t free_n =
        h->core.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].free_count;
    PBX_REQUIRE(free_n >= REACH_SPARE + PBX_CORE_RECV_SLOTS_MAX);
    h->hold_all = true;
    uint32_t four[PBX_CORE_RECV_SLOTS_MAX];
    for (size_t k = 0; k < PBX_CORE_RECV_SLOTS_MAX; k++) {
        four[k] = reach_cap(h);
    }
    PBX_CHECK_EQ(reach_junk(h, four, PBX_CORE_RECV_SLOTS_MAX, &core),
                 PBX_E_CORE_CLEANUP_PENDING);
    PBX_CHECK_EQ(core, PBX_OK);
    uint32_t rest = free_n - PBX_CORE_RECV_SLOTS_MAX - REACH_SPARE;
    PBX_REQUIRE(rest > 0U && rest <= PBX_CORE_RECV_SLOTS_MAX);
    uint32_t more[PBX_CORE_RECV_SLOTS_MAX];
    for (size_t k = 0; k < rest; k++) {
        more[k] = reach_cap(h);
    }
    PBX_CHECK_EQ(reach_junk(h, more, rest, &core), PBX_E_CORE_CLEANUP_PENDING);
    PBX_CHECK_EQ(core, PBX_OK);
    PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].free_count,
                 REACH_SPARE);
    PBX_CHECK(!pbx_core_public_ready(&h->core));
    PBX_CHECK(pbx_core_peer_ready(&h->core));
    uint32_t late = reach_cap(h);
    PBX_CHECK_EQ(reach_junk(h, &late, 1, &core), UINT32_MAX);
    PBX_CHECK_EQ(core, PBX_E_CORE_INTAKE_HELD);
    th_run(h);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    h->hold_all = false;
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    PBX_CHECK(pbx_core_public_ready(&h->core));
    PBX_CHECK_EQ(reach_junk(h, &late, 1, &core), PBX_E_CORE_UNEXPECTED_CAPS);
    PBX_CHECK_EQ(th_cancel(h, id[0]), 0U);
    PBX_CHECK_EQ(th_cancel(h, id[1]), 0U);
    th_run(h);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- a RETIRE acknowledged while the request is queued ------------------- */

/* A request cancelled while its ACTIVE row is out ends its unpublished
 * grant: the grant settles with REMOVE and RETIRE both out, and the
 * request waits for them on no queue. A refused COMMIT for that request
 * leaves a receipt it must wait for; once a tick deletes it the request
 * is queued again, and the RETIRE acknowledgement that arrives before the
 * request's next step queues nothing twice. The request then publishes
 * CANCELLED and every record returns. */
PBX_TEST(core_reach_retire_ack_while_the_request_is_queued)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, sel, &id) == 0U);
    uint32_t k = th_run_to(h, "view+");
    PBX_REQUIRE(k != TH_NONE);
    th_drop(h, k);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    h->hold = true;
    th_run(h);
    PBX_REQUIRE(th_find(h, "view-") != TH_NONE);
    PBX_REQUIRE(th_find(h, "retire") != TH_NONE);
    h->hold_all = true;
    PBX_CHECK_EQ(th_commit(h, id, 0U, PBX_CORE_SLOT_NONE),
                 PBX_E_CORE_CLEANUP_PENDING);
    th_run(h);
    h->hold_all = false;
    th_clear_trace(h);
    pbx_core_on_tick(&h->core);
    PBX_CHECK(th_step(h));
    PBX_CHECK_EQ(h->core.public_orphans, 0U);
    PBX_CHECK_EQ(th_deliver(h, th_find(h, "retire")), PBX_OK);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_NONE);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
