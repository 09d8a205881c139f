/*
 * test_rt_usage.c: the USAGE query on slot 4 (powerboxd/runtime/
 * rt_usage.c, reached through rt_attach.c's dispatch and rt_loop.c's
 * supervisor event), with a real core over the scripted fake port. The
 * report carries live counts: a begun request takes its records (a grant
 * record among them) and a placeholder descriptor, and everything
 * returns once its decision is delivered. A query carrying a descriptor
 * is refused and the descriptor deleted; a malformed one is refused with
 * its nonce echoed; a frame of another magic still gets the attach
 * refusal.
 */
#include <string.h>

#include "powerboxd/runtime/rt_int.h"
#include "sha2/pbx_sha2.h"
#include "tests/rt/rt_fake_port.h"
#include "tests/rt/rt_fixture.h"
#include "tests/runner/pbx_test.h"

/** The runtime under test (static: it embeds the core and buffers). */
static rt_state ru;
/** The core's arena, allocated once and reused by every test. */
static uint8_t *ru_arena;
/** The slots that hold something before any request (startup routes,
 * stdio and the port's own): what the fake kernel holds at setup. */
static const int32_t ru_base_slots[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};

/* A fresh fake kernel holding the baseline slots and a runtime whose
 * core is ready, set up as rt_startup does after PBX1 (rt_fixture.h). */
static void ru_setup(void)
{
    rt_fixture_setup(&ru, &ru_arena, ru_base_slots,
                     PBX_ARRAY_LEN(ru_base_slots));
}

/* Scripts len bytes of frame with receipts descriptors on slot 4. */
static void ru_script(const uint8_t *frame, uint32_t len, uint32_t receipts)
{
    PBX_REQUIRE(len <= sizeof(fk.sup.bytes));
    memcpy(fk.sup.bytes, frame, len);
    fk.sup.len = len;
    fk.sup.receipts = receipts;
    fk.sup_ready = 1U;
    fk.notified_len = 0U;
    fk.notified_slot = PBX_PORT_SLOT_NONE;
}

/* Sends a USAGE query with nonce through rt_attach and decodes the one
 * report it must answer on slot 4 into *r. */
static void ru_query(uint32_t nonce, pbx_capabi_usage *r)
{
    uint8_t q[PBX_CAPABI_USAGE_QUERY_BYTES];
    PBX_REQUIRE(pbx_capabi_usage_query_encode(nonce, q, sizeof(q)) == PBX_OK);
    ru_script(q, sizeof(q), 0U);
    PBX_CHECK_EQ(rt_attach(&ru, false), PBX_OK);
    PBX_CHECK_EQ(fk.sup_ready, 0U);
    PBX_CHECK_EQ(fk.notified_slot, (int32_t)PBX_CAPABI_SLOT_SUPERVISOR);
    PBX_REQUIRE(pbx_capabi_usage_decode(fk.notified, fk.notified_len, r) ==
                PBX_OK);
    PBX_CHECK_EQ(r->nonce, nonce);
}

/* Begins one request from launchd's broker, as the loop would hand the
 * core a BEGIN frame; returns its identity. */
static pbx_ipc_id ru_begin(void)
{
    static const char entry[] = "/bin/viewer";
    static const uint8_t sel[] = "docs/report.txt";
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin b;
    pbx_ipc_frame f;
    size_t n = 0;
    memset(&b, 0, sizeof(b));
    b.ctx.session = 0x5E55U;
    b.ctx.job_id = 0x70BU;
    b.ctx.job_gen = 2U;
    b.ctx.operation = PBX_IPC_OPERATION_READ;
    b.ctx.object_class = PBX_IPC_CLASS_FILE;
    b.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b.ctx.mode = PBX_IPC_MODE_INSTALL;
    b.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    b.ctx.entry.len = (uint16_t)(sizeof(entry) - 1U);
    memcpy(b.ctx.entry.bytes, entry, sizeof(entry) - 1U);
    b.target.process_id = 0x9C0U;
    b.target.process_gen = 4U;
    b.target.slot = 40U;
    b.selector_len = (uint32_t)(sizeof(sel) - 1U);
    PBX_REQUIRE(pbx_sha2_digest(sel, b.selector_len, b.selector_digest) ==
                PBX_OK);
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) == PBX_OK);
    PBX_REQUIRE(pbx_core_on_public(&ru.core, PBX_CORE_BADGE_LAUNCHD, buf, n,
                                   NULL, 0U, &ru.out) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(ru.out.frame, ru.out.len, 0, &f) ==
                PBX_OK);
    PBX_REQUIRE(f.status == 0U);
    return f.request;
}

/* Lets request id's OPEN deadline pass, runs the core until idle and has
 * launchd take the CANCELLED decision, which retires the request. */
static void ru_end(pbx_ipc_id id)
{
    uint8_t buf[64];
    size_t n = 0;
    bool progressed = true;
    PBX_REQUIRE(pbx_core_on_time(&ru.core, fk.now_ms + 60000U) == PBX_OK);
    for (int i = 0; i < 64 && progressed; i++) {
        PBX_REQUIRE(pbx_core_step(&ru.core, &progressed) == PBX_OK);
    }
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf),
                                     &n) == PBX_OK);
    PBX_REQUIRE(pbx_core_on_public(&ru.core, PBX_CORE_BADGE_LAUNCHD, buf, n,
                                   NULL, 0U, &ru.out) == PBX_OK);
    PBX_REQUIRE(ru.out.token != PBX_CORE_NIL);
    PBX_REQUIRE(pbx_core_on_reply_delivered(&ru.core, ru.out.token,
                                            ru.out.token_generation,
                                            true) == PBX_OK);
}

/* Whether every pool of r is empty. */
static bool ru_pools_free(const pbx_capabi_usage *r)
{
    for (uint32_t i = 0; i < PBX_CAPABI_USAGE_POOLS; i++) {
        if (r->used[i] != 0U) {
            return false;
        }
    }
    return true;
}

PBX_TEST(rt_usage_reports_live_counts_that_return_to_baseline)
{
    pbx_capabi_usage before;
    pbx_capabi_usage during;
    pbx_capabi_usage after;
    ru_setup();
    ru_query(0x1001U, &before);
    PBX_CHECK_EQ(before.status, 0U);
    PBX_CHECK(ru_pools_free(&before));
    PBX_CHECK_EQ(before.fds, (uint32_t)PBX_ARRAY_LEN(ru_base_slots));
    PBX_CHECK_EQ(before.capacity[PBX_BOOTSTRAP_POOL_REQUESTS], 4U);
    PBX_CHECK_EQ(before.capacity[PBX_BOOTSTRAP_POOL_GRANTS], 4U);
    PBX_CHECK_EQ(before.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS],
                 ru.geo.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS]);
    PBX_CHECK_EQ(before.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES],
                 ru.core.chunk_count);
    /* A begun request holds a grant record, its other records (no prompt
     * record: one is taken only when a prompt is due), and a reserved
     * destination: one placeholder descriptor more. */
    pbx_ipc_id id = ru_begin();
    ru_query(0x1002U, &during);
    PBX_CHECK_EQ(during.status, 0U);
    PBX_CHECK_EQ(during.used[PBX_BOOTSTRAP_POOL_REQUESTS], 1U);
    PBX_CHECK_EQ(during.used[PBX_BOOTSTRAP_POOL_GRANTS], 1U);
    PBX_CHECK_EQ(during.used[PBX_BOOTSTRAP_POOL_PROMPTS], 0U);
    PBX_CHECK_EQ(during.used[PBX_BOOTSTRAP_POOL_DECISIONS], 1U);
    PBX_CHECK_EQ(during.used[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS], 3U);
    PBX_CHECK_EQ(during.used[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES], 1U);
    PBX_CHECK_EQ(during.fds, before.fds + 1U);
    /* Ended and delivered: every count is back where it was. */
    ru_end(id);
    ru_query(0x1003U, &after);
    PBX_CHECK_EQ(after.status, 0U);
    PBX_CHECK(ru_pools_free(&after));
    PBX_CHECK_EQ(after.fds, before.fds);
    PBX_CHECK_MEM(after.capacity, before.capacity, sizeof(after.capacity));
    PBX_CHECK_EQ(ru.fail_status, 0U);
}

PBX_TEST(rt_usage_query_with_a_descriptor_is_refused_and_it_is_deleted)
{
    uint8_t q[PBX_CAPABI_USAGE_QUERY_BYTES];
    pbx_capabi_usage r;
    ru_setup();
    PBX_REQUIRE(pbx_capabi_usage_query_encode(0x2002U, q, sizeof(q)) == PBX_OK);
    ru_script(q, sizeof(q), 1U);
    PBX_CHECK_EQ(rt_attach(&ru, false), PBX_OK);
    PBX_REQUIRE(pbx_capabi_usage_decode(fk.notified, fk.notified_len, &r) ==
                PBX_OK);
    PBX_CHECK_EQ(r.nonce, 0x2002U);
    PBX_CHECK_EQ(r.status, (uint32_t)PBX_E_CAPABI_USAGE_COUNT);
    PBX_CHECK(ru_pools_free(&r));
    PBX_CHECK_EQ(r.fds, 0U);
    /* The descriptor it carried is gone, deleted exactly once. */
    PBX_CHECK_EQ(fk.kind[FK_STAGE_FIRST], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(fk.deletes[FK_STAGE_FIRST], 1U);
    PBX_CHECK_EQ(fk_staged_held(&ru.port), 0U);
    PBX_CHECK_EQ(ru.fail_status, 0U);
    /* Three descriptors: all three deleted, the same refusal. */
    ru_script(q, sizeof(q), 3U);
    PBX_CHECK_EQ(rt_attach(&ru, false), PBX_OK);
    PBX_REQUIRE(pbx_capabi_usage_decode(fk.notified, fk.notified_len, &r) ==
                PBX_OK);
    PBX_CHECK_EQ(r.status, (uint32_t)PBX_E_CAPABI_USAGE_COUNT);
    for (int32_t i = 0; i < 3; i++) {
        PBX_CHECK_EQ(fk.kind[FK_STAGE_FIRST + i], PBX_PORT_KIND_EMPTY);
    }
    PBX_CHECK_EQ(fk_staged_held(&ru.port), 0U);
}

PBX_TEST(rt_usage_malformed_query_is_refused_with_its_nonce)
{
    uint8_t q[PBX_CAPABI_USAGE_QUERY_BYTES + 1U];
    pbx_capabi_usage r;
    ru_setup();
    memset(q, 0, sizeof(q));
    PBX_REQUIRE(pbx_capabi_usage_query_encode(0x3003U, q, sizeof(q)) == PBX_OK);
    q[4] = 9U; /* version */
    ru_script(q, PBX_CAPABI_USAGE_QUERY_BYTES, 0U);
    PBX_CHECK_EQ(rt_attach(&ru, false), PBX_OK);
    PBX_REQUIRE(pbx_capabi_usage_decode(fk.notified, fk.notified_len, &r) ==
                PBX_OK);
    PBX_CHECK_EQ(r.nonce, 0x3003U);
    PBX_CHECK_EQ(r.status, (uint32_t)PBX_E_CAPABI_USAGE_VERSION);
    PBX_CHECK_EQ(r.fds, 0U);
    /* Seventeen bytes with the query's magic: refused as a query. */
    q[4] = 1U;
    ru_script(q, sizeof(q), 0U);
    PBX_CHECK_EQ(rt_attach(&ru, false), PBX_OK);
    PBX_REQUIRE(pbx_capabi_usage_decode(fk.notified, fk.notified_len, &r) ==
                PBX_OK);
    PBX_CHECK_EQ(r.status, (uint32_t)PBX_E_CAPABI_USAGE_LENGTH);
    PBX_CHECK_EQ(r.nonce, 0x3003U);
}

PBX_TEST(rt_usage_other_magic_still_gets_the_attach_refusal)
{
    uint8_t q[PBX_CAPABI_USAGE_QUERY_BYTES];
    pbx_capabi_answer ans = {0, 0, 0};
    ru_setup();
    PBX_REQUIRE(pbx_capabi_usage_query_encode(0x4004U, q, sizeof(q)) == PBX_OK);
    q[3] = (uint8_t)'V';
    ru_script(q, sizeof(q), 1U);
    PBX_CHECK_EQ(rt_attach(&ru, false), PBX_OK);
    PBX_CHECK_EQ(fk.notified_len, PBX_CAPABI_ANSWER_BYTES);
    PBX_REQUIRE(pbx_capabi_answer_decode(fk.notified, fk.notified_len, &ans) ==
                PBX_OK);
    PBX_CHECK_EQ(ans.status, (uint32_t)PBX_E_CAPABI_ATTACH_MAGIC);
    PBX_CHECK_EQ(fk.kind[FK_STAGE_FIRST], PBX_PORT_KIND_EMPTY);
    PBX_CHECK_EQ(fk_staged_held(&ru.port), 0U);
}

PBX_TEST(rt_usage_query_is_answered_from_the_loop)
{
    uint8_t q[PBX_CAPABI_USAGE_QUERY_BYTES];
    pbx_capabi_usage r;
    ru_setup();
    PBX_REQUIRE(pbx_capabi_usage_query_encode(0x5005U, q, sizeof(q)) == PBX_OK);
    ru_script(q, sizeof(q), 0U);
    fk_event(PBX_PORT_EV_SUPERVISOR_READABLE,
             (int32_t)PBX_CAPABI_SLOT_SUPERVISOR);
    /* The loop answers, then ends at the script's end (64). */
    PBX_CHECK_EQ(rt_loop(&ru), PBX_CORE_EXIT_PUBLIC);
    PBX_CHECK_EQ(fk.sup_ready, 0U);
    PBX_CHECK_EQ(fk.notified_slot, (int32_t)PBX_CAPABI_SLOT_SUPERVISOR);
    PBX_REQUIRE(pbx_capabi_usage_decode(fk.notified, fk.notified_len, &r) ==
                PBX_OK);
    PBX_CHECK_EQ(r.nonce, 0x5005U);
    PBX_CHECK_EQ(r.status, 0U);
    PBX_CHECK_EQ(r.fds, (uint32_t)PBX_ARRAY_LEN(ru_base_slots));
}

PBX_TEST(rt_usage_query_too_long_for_the_port_gets_the_attach_refusal)
{
    uint8_t q[24];
    pbx_capabi_answer ans = {0, 0, 0};
    ru_setup();
    memset(q, 0, sizeof(q));
    PBX_REQUIRE(pbx_capabi_usage_query_encode(0x6006U, q, sizeof(q)) == PBX_OK);
    /* Longer than slot 4's receive buffer: the port refuses it before
     * its magic is read, so the refusal is the attach answer's. */
    ru_script(q, sizeof(q), 0U);
    PBX_CHECK_EQ(rt_attach(&ru, false), PBX_OK);
    PBX_CHECK_EQ(fk.notified_len, PBX_CAPABI_ANSWER_BYTES);
    PBX_REQUIRE(pbx_capabi_answer_decode(fk.notified, fk.notified_len, &ans) ==
                PBX_OK);
    PBX_CHECK_EQ(ans.status, (uint32_t)PBX_E_CAPABI_ATTACH_LENGTH);
}
