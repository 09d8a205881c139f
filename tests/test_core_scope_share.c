/*
 * test_core_scope_share.c: one scope committed by several requests. On
 * the Linux host every copy of a scope is the same connection to vfsd, so
 * the reply to a RESOLVE sent through one copy may be read through
 * another. A scoped reply is matched to its call by its seq and echo, and
 * it may arrive through any slot the kernel vouches is the same object as
 * the one the call went through (equal nonzero identities); through any
 * other slot it is refused with its receipts deleted.
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

/* Sends the reply to pending call 0 as if read through pending call 1's
 * scope slot; forgets call 0 when accepted is expected. */
static pbx_err share_cross(th_h *h, th_reply *r)
{
    th_reply_build(h, 0, r);
    r->via_slot = h->pend[1].via_slot;
    return th_reply_send(h, r);
}

/* The same scope object in two slots: a's reply read through b's slot
 * answers a's call, and both requests are approved. */
PBX_TEST(core_scope_reply_through_a_copy_of_the_same_scope_is_taken)
{
    th_h *h = th_new(4);
    static th_reply r;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id b = {0, 0};
    h->scope_identity = TH_SCOPE_ID;
    share_two(h, &a, &b);
    PBX_CHECK_EQ(share_cross(h, &r), PBX_OK);
    th_drop(h, 0);
    PBX_CHECK_EQ(h->core.replies_refused, 0U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    TH_CHECK_OUTCOME(h, b, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Two different scope objects: a's reply read through b's slot is
 * refused (its receipt deleted) and a's call stays outstanding until its
 * reply comes through its own slot. */
PBX_TEST(core_scope_reply_through_another_scope_is_refused)
{
    th_h *h = th_new(4);
    static th_reply r;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id b = {0, 0};
    h->scope_identity = TH_SCOPE_ID;
    share_two(h, &a, &b);
    h->slot_identity[h->pend[1].via_slot] = TH_SCOPE_ID + 1U;
    uint32_t held = pbx_core_held_caps(&h->core);
    PBX_CHECK_EQ(share_cross(h, &r), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
    PBX_CHECK(th_conserved(h));
    /* Through its own slot the same reply is a's answer. */
    PBX_CHECK_EQ(th_deliver(h, 0), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    h->hold = false;
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_free(h);
}

/* Without any identity observation the slots must be equal: a copy is
 * not recognised, so the crossed reply is refused. */
PBX_TEST(core_scope_reply_through_unknown_identity_is_refused)
{
    th_h *h = th_new(4);
    static th_reply r;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id b = {0, 0};
    share_two(h, &a, &b);
    PBX_CHECK_EQ(share_cross(h, &r), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 2U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}
