/*
 * test_core_scope_share.c: where a RESOLVE's reply may come from. On the
 * Linux host every copy of a scope is the same connection to vfsd, and
 * the job that committed the scope holds one: a reply on the scope could
 * be read by the job, object and all, before any decision. So vfsd
 * answers RESOLVE on its route, and the core takes a RESOLVE reply only
 * from the vfsd route, matched by seq and echo; one read through any
 * scope slot (the call's own, a copy of it, another scope) is refused
 * with its receipts deleted and the call stays outstanding.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/shared.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Opens two requests and runs until both RESOLVE calls are pending; their
 * pending indices are 0 (a) and 1 (b). */
static void share_two(th_h *h, pbx_ipc_id *a, pbx_ipc_id *b)
{
    pbx_ipc_begin rec;
    th_default_begin(&rec, sel, SEL_LEN);
    h->hold = true;
    PBX_REQUIRE(th_open(h, &rec, sel, a) == 0U);
    PBX_REQUIRE(th_open(h, &rec, sel, b) == 0U);
    th_run(h);
    PBX_REQUIRE(h->npend == 2U);
    PBX_REQUIRE(strcmp(h->pend[0].name, "resolve") == 0);
    PBX_REQUIRE(strcmp(h->pend[1].name, "resolve") == 0);
    PBX_REQUIRE(h->pend[0].via_slot != h->pend[1].via_slot);
}

/* Sends the reply to pending call 0 as if read through scope slot via;
 * returns what the core said. */
static pbx_err share_through(th_h *h, th_reply *r, uint32_t via)
{
    th_reply_build(h, 0, r);
    r->route = PBX_CORE_ROUTE_SCOPE;
    r->via_slot = via;
    return th_reply_send(h, r);
}

/* Checks that a reply through a scope slot was refused: counted, its
 * receipt deleted (the core holds no more than before) and both calls
 * still outstanding. */
static void share_refused(th_h *h, uint32_t held, uint32_t deleted)
{
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(h->deleted, deleted + 1U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    PBX_CHECK(th_conserved(h));
}

/* Delivers every reply on the route and checks both requests approved. */
static void share_finish(th_h *h, pbx_ipc_id a, pbx_ipc_id b)
{
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    TH_CHECK_OUTCOME(h, b, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
}

/* Two requests through one scope: both replies come on vfsd's route and
 * each answers its own call by seq and echo. */
PBX_TEST(core_resolve_reply_on_the_vfsd_route_is_taken)
{
    th_h *h = th_new(4);
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id b = {0, 0};
    h->scope_identity = TH_SCOPE_ID;
    share_two(h, &a, &b);
    PBX_CHECK_EQ(h->pend[0].route, PBX_CORE_ROUTE_SCOPE);
    PBX_CHECK_EQ(th_deliver(h, 0), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 0U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    share_finish(h, a, b);
    th_free(h);
}

/* The exact reply read through the very scope slot the call went through
 * (what a job reading its own scope copy would race for) is refused and
 * its object receipt deleted; the same reply on the route is then taken. */
PBX_TEST(core_resolve_reply_on_its_own_scope_is_refused)
{
    th_h *h = th_new(4);
    static th_reply r;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id b = {0, 0};
    h->scope_identity = TH_SCOPE_ID;
    share_two(h, &a, &b);
    uint32_t held = pbx_core_held_caps(&h->core);
    uint32_t deleted = h->deleted;
    PBX_CHECK_EQ(share_through(h, &r, h->pend[0].via_slot), PBX_OK);
    PBX_REQUIRE(r.n == 1U);
    share_refused(h, held, deleted);
    share_finish(h, a, b);
    th_free(h);
}

/* The same scope object in another slot (equal identities) does not make
 * a scope an acceptable place for a reply either. */
PBX_TEST(core_resolve_reply_through_a_copy_of_the_scope_is_refused)
{
    th_h *h = th_new(4);
    static th_reply r;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id b = {0, 0};
    h->scope_identity = TH_SCOPE_ID;
    share_two(h, &a, &b);
    uint32_t held = pbx_core_held_caps(&h->core);
    uint32_t deleted = h->deleted;
    PBX_CHECK_EQ(share_through(h, &r, h->pend[1].via_slot), PBX_OK);
    share_refused(h, held, deleted);
    share_finish(h, a, b);
    th_free(h);
}
