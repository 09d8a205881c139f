/*
 * test_rt_judge.c: the runtime's judged record and its free-slot bitmap
 * (powerboxd/runtime/rt_tslot.c) against the scripted fake port, which
 * counts its slot queries. Issue 23 item 4: a received descriptor is
 * queried through the port once, at receipt, however often the core
 * observes it; a slot emptied and filled again is judged afresh; a core
 * route's slot is judged once per attached route while the loop runs; and
 * a reservation takes the lowest free transient slot, found a word of 64
 * slots at a time.
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

/* A fresh fake kernel and a runtime whose core is ready. */
static void rt_setup(void)
{
    rt_fixture_setup(&rs, &rt_arena, NULL, 0U);
}

/* Stages one receipt of kind and lets the runtime place it loose, as a
 * peer reply's object copy is placed; returns its transient slot. */
static uint32_t rt_loose_of(uint32_t kind)
{
    uint32_t slot = 0;
    rs.port.staged[0] = FK_STAGE_FIRST;
    rs.port.staged_count = 1U;
    fk.kind[FK_STAGE_FIRST] = kind;
    PBX_REQUIRE(rt_loose_place(&rs, 0, RT_O_VFSD, &slot));
    rs.port.staged_count = 0U;
    return slot;
}

PBX_TEST(rt_judge_receipt_is_queried_once)
{
    pbx_capabi_observed obs;
    rt_setup();
    uint32_t slot = rt_loose_of(PBX_PORT_KIND_ENDPOINT);
    for (uint32_t i = 0; i < 5U; i++) {
        rt_ops.slot_query(&rs, slot, &obs);
        PBX_CHECK_EQ(obs.kind, PBX_CAPABI_KIND_ENDPOINT);
        PBX_CHECK_EQ(obs.rights, PBX_CAPABI_RIGHT_SEND);
    }
    PBX_CHECK_EQ(fk.queries[slot], 1U);
}

/* The identity the core observes (rt_identity, the COMMIT scope check)
 * comes from the judgment kept at receipt when the port's query vouched
 * for it: no second port call per observation; a slot emptied since is
 * asked afresh (issue 23 item 4). */
PBX_TEST(rt_judge_identity_answered_from_the_receipt_judgment)
{
    pbx_capabi_observed obs;
    rt_setup();
    fk.identity_on = 1U;
    uint32_t slot = rt_loose_of(PBX_PORT_KIND_ENDPOINT);
    rt_ops.slot_query(&rs, slot, &obs);
    for (uint32_t i = 0; i < 5U; i++) {
        PBX_CHECK_EQ(rt_identity(&rs, slot), FK_IDENTITY(slot));
    }
    PBX_CHECK_EQ(fk.identities[slot], 0U);
    PBX_CHECK_EQ(fk.queries[slot], 1U);
    /* Emptied: the judgment is gone, so the port answers (no identity). */
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, slot), PBX_CORE_DELETE_OK);
    PBX_CHECK_EQ(rt_identity(&rs, slot), 0U);
    PBX_CHECK_EQ(fk.identities[slot], 1U);
    /* A kept judgment without the port's word asks the port. */
    fk.identity_on = 0U;
    PBX_CHECK_EQ(rt_loose_of(PBX_PORT_KIND_ENDPOINT), slot);
    rt_ops.slot_query(&rs, slot, &obs);
    PBX_CHECK_EQ(rt_identity(&rs, slot), 0U);
    PBX_CHECK_EQ(fk.identities[slot], 2U);
}

PBX_TEST(rt_judge_slot_filled_again_is_judged_afresh)
{
    pbx_capabi_observed obs;
    rt_setup();
    uint32_t slot = rt_loose_of(PBX_PORT_KIND_ENDPOINT);
    rt_ops.slot_query(&rs, slot, &obs);
    PBX_CHECK_EQ(obs.kind, PBX_CAPABI_KIND_ENDPOINT);
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, slot), PBX_CORE_DELETE_OK);
    rt_ops.slot_query(&rs, slot, &obs);
    PBX_CHECK_EQ(obs.kind, PBX_CAPABI_KIND_EMPTY);
    /* The same number, now holding a memory object: a new judgment. */
    PBX_CHECK_EQ(rt_loose_of(PBX_PORT_KIND_MEMORY), slot);
    rt_ops.slot_query(&rs, slot, &obs);
    PBX_CHECK_EQ(obs.kind, PBX_CAPABI_KIND_MEMORY);
    PBX_CHECK_EQ(fk.queries[slot], 3U);
}

PBX_TEST(rt_judge_reservation_states_are_judged_afresh)
{
    pbx_capabi_observed obs;
    uint32_t dest = 0;
    rt_setup();
    /* The scope's peer is vfsd's, so it is judged an endpoint. */
    fk.kind[PBX_CAPABI_SLOT_VFSD] = PBX_PORT_KIND_ENDPOINT;
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &dest));
    rt_ops.slot_query(&rs, dest, &obs);
    PBX_CHECK_EQ(obs.kind, PBX_CAPABI_KIND_PLACEHOLDER);
    rs.port.staged[0] = FK_STAGE_FIRST;
    rs.port.staged_count = 1U;
    fk.kind[FK_STAGE_FIRST] = PBX_PORT_KIND_ENDPOINT;
    PBX_REQUIRE(rt_commit_place(&rs, dest));
    rt_ops.slot_query(&rs, dest, &obs);
    PBX_CHECK_EQ(obs.kind, PBX_CAPABI_KIND_ENDPOINT);
    PBX_CHECK_EQ(rt_ops.slot_delete(&rs, dest), PBX_CORE_DELETE_OK);
    rt_ops.slot_query(&rs, dest, &obs);
    PBX_CHECK_EQ(obs.kind, PBX_CAPABI_KIND_PLACEHOLDER);
    PBX_CHECK_EQ(fk.queries[dest], 3U);
}

PBX_TEST(rt_judge_route_slot_kept_while_the_loop_runs_until_attach)
{
    pbx_capabi_observed obs;
    const uint32_t vfsd = PBX_CAPABI_SLOT_VFSD;
    rt_setup();
    fk.kind[vfsd] = PBX_PORT_KIND_ENDPOINT;
    /* During startup every observation asks the port. */
    rt_ops.slot_query(&rs, vfsd, &obs);
    rt_ops.slot_query(&rs, vfsd, &obs);
    PBX_CHECK_EQ(fk.queries[vfsd], 2U);
    rs.judge_routes = 1U;
    rt_ops.slot_query(&rs, vfsd, &obs);
    rt_ops.slot_query(&rs, vfsd, &obs);
    PBX_CHECK_EQ(fk.queries[vfsd], 3U);
    /* A ROUTE_ATTACH replaced the route: judged again, once. */
    rt_judged_forget(&rs, vfsd);
    fk.kind[vfsd] = PBX_PORT_KIND_NOTIFY;
    rt_ops.slot_query(&rs, vfsd, &obs);
    PBX_CHECK_EQ(obs.kind, PBX_CAPABI_KIND_NOTIFY);
    rt_ops.slot_query(&rs, vfsd, &obs);
    PBX_CHECK_EQ(fk.queries[vfsd], 4U);
    /* Any other startup slot is never kept. */
    fk.kind[PBX_CAPABI_SLOT_BROKER] = PBX_PORT_KIND_ENDPOINT;
    rt_ops.slot_query(&rs, PBX_CAPABI_SLOT_BROKER, &obs);
    rt_ops.slot_query(&rs, PBX_CAPABI_SLOT_BROKER, &obs);
    PBX_CHECK_EQ(fk.queries[PBX_CAPABI_SLOT_BROKER], 2U);
}

PBX_TEST(rt_judge_reserve_takes_the_lowest_free_slot_by_word)
{
    const uint32_t count = 150U;
    uint32_t slot = 0;
    rt_setup();
    /* A range of three words, the last one partly used (the fixture's
     * own range fits in one). */
    PBX_REQUIRE(pbx_capabi_layout_init(&rs.slots,
                                       PBX_CAPABI_TRANSIENT_FIRST_DEFAULT,
                                       count) == PBX_OK);
    PBX_REQUIRE(rs.slots.transient_count == count &&
                pbx_capabi_transient_slot(&rs.slots, count - 1U) < FK_SLOTS);
    for (uint32_t i = 0; i < count; i++) {
        PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
        PBX_CHECK_EQ(slot, pbx_capabi_transient_slot(&rs.slots, i));
    }
    /* Full: nothing left, and nothing past the range is handed out. */
    PBX_CHECK(!rt_ops.slot_reserve(&rs, &slot));
    /* Freed in the second and third words, the lower one comes first. */
    rt_ops.slot_release(&rs, pbx_capabi_transient_slot(&rs.slots, 129U));
    rt_ops.slot_release(&rs, pbx_capabi_transient_slot(&rs.slots, 70U));
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
    PBX_CHECK_EQ(slot, pbx_capabi_transient_slot(&rs.slots, 70U));
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
    PBX_CHECK_EQ(slot, pbx_capabi_transient_slot(&rs.slots, 129U));
    PBX_CHECK(!rt_ops.slot_reserve(&rs, &slot));
    /* The last slot of the range, in a partly used word. */
    rt_ops.slot_release(&rs, pbx_capabi_transient_slot(&rs.slots, count - 1U));
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
    PBX_CHECK_EQ(slot, pbx_capabi_transient_slot(&rs.slots, count - 1U));
    PBX_CHECK_EQ(rs.fail_status, 0U);
}

PBX_TEST(rt_judge_reserve_finds_a_free_slot_in_two_steps_over_the_whole_range)
{
    const uint32_t count = PBX_RT_TRANSIENT_MAX;
    uint32_t slot = 0;
    rt_setup();
    /* The largest range (63 words): the word summary (tfull) must follow
     * every fill and release, or a freed low slot is passed over. */
    PBX_REQUIRE(pbx_capabi_layout_init(&rs.slots,
                                       PBX_CAPABI_TRANSIENT_FIRST_DEFAULT,
                                       count) == PBX_OK);
    PBX_REQUIRE(pbx_capabi_transient_slot(&rs.slots, count - 1U) < FK_SLOTS);
    for (uint32_t i = 0; i < count; i++) {
        PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
    }
    PBX_CHECK(!rt_ops.slot_reserve(&rs, &slot));
    rt_ops.slot_release(&rs, pbx_capabi_transient_slot(&rs.slots, count - 1U));
    rt_ops.slot_release(&rs, pbx_capabi_transient_slot(&rs.slots, 5U));
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
    PBX_CHECK_EQ(slot, pbx_capabi_transient_slot(&rs.slots, 5U));
    PBX_REQUIRE(rt_ops.slot_reserve(&rs, &slot));
    PBX_CHECK_EQ(slot, pbx_capabi_transient_slot(&rs.slots, count - 1U));
    PBX_CHECK(!rt_ops.slot_reserve(&rs, &slot));
    PBX_CHECK_EQ(rs.fail_status, 0U);
}
