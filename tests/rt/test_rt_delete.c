/*
 * test_rt_delete.c: powerboxd's runtime (powerboxd/runtime/rt_ops.c and
 * rt_loop.c, unchanged, with a real core) against the scripted fake port
 * (rt_fake_port.h). Issue 11, deviation 5: a deletion the port answers
 * PBX_E_PORT_DELETE_AGAIN (interrupted: the capability is still in its
 * slot) never ends the service; the capability stays recorded and
 * counted while the deletion is retried, and is gone once the port
 * succeeds. A permanent rejection still fail-stops with 65.
 */
#include <string.h>

#include "powerboxd/runtime/rt_int.h"
#include "tests/rt/rt_fake_port.h"
#include "tests/rt/rt_fixture.h"
#include "tests/runner/pbx_test.h"

/** The runtime under test (static: it embeds the core and buffers). */
static rt_state rs;
/** The core's arena, allocated once and reused by every test. */
static uint8_t *rt_arena;
/** A small frame the effect table sends. */
static const uint8_t rt_frame[8] = {1, 2, 3, 4, 5, 6, 7, 8};

/* A fresh fake kernel and a runtime whose core is ready, set up as
 * rt_startup does after PBX1 (rt_fixture.h). */
static void rt_setup(void)
{
    rt_fixture_setup(&rs, &rt_arena, NULL, 0U);
}

/* Stages one endpoint receipt and lets the runtime place it loose, as a
 * peer reply's object copy is placed; returns its transient slot. */
static uint32_t rt_loose_endpoint(void)
{
    uint32_t slot = 0;
    rs.port.staged[0] = FK_STAGE_FIRST;
    rs.port.staged_count = 1U;
    fk.kind[FK_STAGE_FIRST] = PBX_PORT_KIND_ENDPOINT;
    PBX_REQUIRE(rt_loose_place(&rs, 0, RT_O_VFSD, &slot));
    rs.port.staged_count = 0U;
    return slot;
}

/* The runtime's record of transient slot. */
static uint8_t rt_tstate_of(uint32_t slot)
{
    uint32_t t = 0;
    PBX_REQUIRE(pbx_capabi_transient_index(&rs.slots, slot, &t) == PBX_OK);
    return rs.tstate[t];
}

/* A DETACH-like call moving slot to vfsd. */
static pbx_core_call rt_move_call(uint32_t slot)
{
    pbx_core_call c;
    memset(&c, 0, sizeof(c));
    c.route = PBX_CORE_ROUTE_VFSD;
    c.via_slot = PBX_CORE_SLOT_NONE;
    c.frame = rt_frame;
    c.frame_len = sizeof(rt_frame);
    c.send_slot = slot;
    c.send_copy = false;
    return c;
}

PBX_TEST(rt_core_delete_interrupted_is_transient_then_done)
{
    rt_setup();
    uint32_t slot = rt_loose_endpoint();
    fk.again[slot] = 2U;
    /* The core hears TRANSIENT (it retries on its ticks); nothing ends. */
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, slot), PBX_CORE_DELETE_TRANSIENT);
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, slot), PBX_CORE_DELETE_TRANSIENT);
    PBX_CHECK_EQ(rs.fail_status, 0U);
    PBX_CHECK_EQ(rt_tstate_of(slot), RT_T_LOOSE);
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_ENDPOINT);
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, slot), PBX_CORE_DELETE_OK);
    PBX_CHECK_EQ(rt_tstate_of(slot), RT_T_FREE);
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(fk.deletes[slot], 3U);
}

PBX_TEST(rt_core_restore_interrupted_is_transient_reservation_kept)
{
    rt_setup();
    uint32_t dest = 0;
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &dest));
    rs.port.staged[0] = FK_STAGE_FIRST;
    rs.port.staged_count = 1U;
    fk.kind[FK_STAGE_FIRST] = PBX_PORT_KIND_ENDPOINT;
    PBX_REQUIRE(rt_commit_place(&rs, dest));
    fk.again[dest] = 1U;
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, dest), PBX_CORE_DELETE_TRANSIENT);
    PBX_CHECK_EQ(rt_tstate_of(dest), RT_T_HELD);
    PBX_CHECK_EQ(fk.kind[dest], PBX_PORT_KIND_ENDPOINT);
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, dest), PBX_CORE_DELETE_OK);
    PBX_CHECK_EQ(rt_tstate_of(dest), RT_T_RESERVED);
    PBX_CHECK_EQ(fk.kind[dest], PBX_PORT_KIND_PLACEHOLDER);
    PBX_CHECK_EQ(rs.fail_status, 0U);
}

PBX_TEST(rt_core_delete_rejected_for_good_is_rejected)
{
    rt_setup();
    uint32_t slot = rt_loose_endpoint();
    fk.reject[slot] = 1U;
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, slot), PBX_CORE_DELETE_REJECTED);
}

PBX_TEST(rt_moved_capability_interrupted_stays_counted_until_deleted)
{
    rt_setup();
    uint32_t slot = rt_loose_endpoint();
    pbx_core_call c = rt_move_call(slot);
    fk.again[slot] = 3U;
    PBX_CHECK_EQ(rt_ops.send(&rs, &c), PBX_CORE_IO_OK);
    PBX_CHECK_EQ(rs.fail_status, 0U);
    /* Still held: recorded, counted, and never handed out again. */
    PBX_CHECK_EQ(rt_tstate_of(slot), RT_T_DOOMED);
    PBX_CHECK_EQ(rs.doomed, 1U);
    PBX_CHECK(rt_pending(&rs));
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_ENDPOINT);
    uint32_t other = 0;
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &other));
    PBX_CHECK(other != slot);
    rt_ops.slot_release(&rs, other);
    /* Two loop turns: still interrupted; the third deletes it. */
    rt_pending_retry(&rs);
    rt_pending_retry(&rs);
    PBX_CHECK_EQ(rs.doomed, 1U);
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_ENDPOINT);
    rt_pending_retry(&rs);
    PBX_CHECK_EQ(rs.doomed, 0U);
    PBX_CHECK(!rt_pending(&rs));
    PBX_CHECK_EQ(rt_tstate_of(slot), RT_T_FREE);
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(fk.deletes[slot], 4U);
    PBX_CHECK_EQ(rs.fail_status, 0U);
}

PBX_TEST(rt_moved_capability_rejected_for_good_is_exit_65)
{
    rt_setup();
    uint32_t slot = rt_loose_endpoint();
    pbx_core_call c = rt_move_call(slot);
    fk.reject[slot] = 1U;
    PBX_CHECK_EQ(rt_ops.send(&rs, &c), PBX_CORE_IO_OK);
    PBX_CHECK_EQ(rs.fail_status, PBX_CORE_EXIT_CLEANUP);
}

PBX_TEST(rt_moved_capability_rejected_on_retry_is_exit_65)
{
    rt_setup();
    uint32_t slot = rt_loose_endpoint();
    pbx_core_call c = rt_move_call(slot);
    fk.again[slot] = 1U;
    PBX_CHECK_EQ(rt_ops.send(&rs, &c), PBX_CORE_IO_OK);
    PBX_CHECK_EQ(rs.fail_status, 0U);
    fk.reject[slot] = 1U;
    rt_pending_retry(&rs);
    PBX_CHECK_EQ(rs.fail_status, PBX_CORE_EXIT_CLEANUP);
}

PBX_TEST(rt_released_reservation_interrupted_is_retried)
{
    rt_setup();
    uint32_t slot = 0;
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
    fk.again[slot] = 2U;
    rt_ops.slot_release(&rs, slot);
    PBX_CHECK_EQ(rs.fail_status, 0U);
    PBX_CHECK_EQ(rt_tstate_of(slot), RT_T_RELEASING);
    PBX_CHECK_EQ(rs.releasing, 1U);
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_PLACEHOLDER);
    rt_pending_retry(&rs);
    PBX_CHECK_EQ(rs.releasing, 1U);
    rt_pending_retry(&rs);
    PBX_CHECK_EQ(rs.releasing, 0U);
    PBX_CHECK_EQ(rt_tstate_of(slot), RT_T_FREE);
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(rs.fail_status, 0U);
}

PBX_TEST(rt_released_reservation_rejected_for_good_is_exit_65)
{
    rt_setup();
    uint32_t slot = 0;
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
    fk.reject[slot] = 1U;
    rt_ops.slot_release(&rs, slot);
    PBX_CHECK_EQ(rs.fail_status, PBX_CORE_EXIT_CLEANUP);
}

PBX_TEST(rt_delivered_alias_interrupted_is_retried)
{
    rt_setup();
    uint32_t object = rt_loose_endpoint();
    uint32_t alias = 0;
    PBX_REQUIRE(rt_ops.alias_derive(&rs, object, &alias) == PBX_CORE_IO_OK);
    PBX_CHECK_EQ(fk.kind[alias], PBX_PORT_KIND_ENDPOINT);
    /* What rt_reply does once the reply carrying the alias was sent. */
    fk.again[alias] = 1U;
    rt_dispose(&rs, alias);
    PBX_CHECK_EQ(rs.fail_status, 0U);
    PBX_CHECK_EQ(rt_tstate_of(alias), RT_T_DOOMED);
    PBX_CHECK_EQ(rs.doomed, 1U);
    rt_pending_retry(&rs);
    PBX_CHECK_EQ(rs.doomed, 0U);
    PBX_CHECK_EQ(fk.kind[alias], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(fk.kind[object], PBX_PORT_KIND_ENDPOINT);
}

/* Scripts one public message on connection 20 and then timeouts. */
static void rt_script_public(uint32_t badge, uint32_t receipts,
                             uint32_t timeouts)
{
    fk.msg.len = 8U;
    memcpy(fk.msg.bytes, rt_frame, sizeof(rt_frame));
    fk.msg.receipts = receipts;
    fk.msg.badge = badge;
    fk.msg_ready = 1U;
    fk.kind[20] = PBX_PORT_KIND_ENDPOINT;
    fk_event(PBX_PORT_EV_PUBLIC_READABLE, 20);
    for (uint32_t i = 0; i < timeouts; i++) {
        fk_event(PBX_PORT_EV_TIMEOUT, PBX_PORT_SLOT_NONE);
    }
}

PBX_TEST(rt_loop_staged_receipts_interrupted_are_retried_without_exit)
{
    rt_setup();
    /* Nobody's message (badge 0): the loop deletes its two receipts
     * straight from staging; the first one's deletion is interrupted
     * twice. The loop ends only at the script's end (64), never 65. */
    rt_script_public(0U, 2U, 3U);
    fk.again[FK_STAGE_FIRST] = 2U;
    PBX_CHECK_EQ(rt_loop(&rs), PBX_CORE_EXIT_PUBLIC);
    PBX_CHECK_EQ(fk.kind[FK_STAGE_FIRST], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(fk.kind[FK_STAGE_FIRST + 1], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(fk.deletes[FK_STAGE_FIRST], 3U);
    PBX_CHECK_EQ(fk.deletes[FK_STAGE_FIRST + 1], 1U);
    PBX_CHECK_EQ(fk_staged_held(&rs.port), 0U);
    PBX_CHECK_EQ(rs.staged_again, 0U);
    /* Public intake was held while they were pending, and resumed. */
    PBX_CHECK_EQ(fk.holds, 1U);
    PBX_CHECK_EQ(fk.held, 0U);
    PBX_CHECK_EQ(fk.closes, 1U);
}

PBX_TEST(rt_loop_staged_receipt_rejected_for_good_is_exit_65)
{
    rt_setup();
    rt_script_public(0U, 1U, 3U);
    fk.reject[FK_STAGE_FIRST] = 1U;
    PBX_CHECK_EQ(rt_loop(&rs), PBX_CORE_EXIT_CLEANUP);
}

PBX_TEST(rt_loop_unwanted_receipt_interrupted_stays_held_and_counted)
{
    rt_setup();
    /* A caller's frame the core refuses, with one receipt the core must
     * delete; the port keeps interrupting it. One tick later the loop
     * ends (64): the capability is still there and the core still
     * counts it. */
    uint32_t slot = PBX_CAPABI_TRANSIENT_FIRST_DEFAULT;
    rt_script_public(7U, 1U, 1U);
    fk.again[slot] = 100U;
    PBX_CHECK_EQ(rt_loop(&rs), PBX_CORE_EXIT_PUBLIC);
    PBX_CHECK(fk.deletes[slot] >= 2U);
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_ENDPOINT);
    PBX_CHECK_EQ(rt_tstate_of(slot), RT_T_LOOSE);
    PBX_CHECK_EQ(pbx_core_held_caps(&rs.core), 1U);
    PBX_CHECK_EQ(pbx_core_exit_status(&rs.core), 0U);
}

PBX_TEST(rt_loop_unwanted_receipt_interrupted_is_deleted_on_a_later_tick)
{
    rt_setup();
    uint32_t slot = PBX_CAPABI_TRANSIENT_FIRST_DEFAULT;
    rt_script_public(7U, 1U, 6U);
    fk.again[slot] = 3U;
    PBX_CHECK_EQ(rt_loop(&rs), PBX_CORE_EXIT_PUBLIC);
    PBX_CHECK_EQ(fk.deletes[slot], 4U);
    PBX_CHECK_EQ(fk.kind[slot], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(rt_tstate_of(slot), RT_T_FREE);
    PBX_CHECK_EQ(pbx_core_held_caps(&rs.core), 0U);
    PBX_CHECK_EQ(pbx_core_exit_status(&rs.core), 0U);
}

PBX_TEST(rt_loop_unwanted_receipt_rejected_for_good_is_exit_65)
{
    rt_setup();
    uint32_t slot = PBX_CAPABI_TRANSIENT_FIRST_DEFAULT;
    rt_script_public(7U, 1U, 3U);
    fk.reject[slot] = 1U;
    PBX_CHECK_EQ(rt_loop(&rs), PBX_CORE_EXIT_CLEANUP);
}
