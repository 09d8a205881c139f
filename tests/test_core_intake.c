/*
 * test_core_intake.c: public dispatch, BEGIN, SELECTOR and COMMIT through
 * the scripted ops: BEGIN only through launchd's broker, unexpected
 * receipts, exact offsets, digest and scope receipt checks, each with the
 * exact deletions and replies.
 */
#include "runner/pbx_test.h"
#include "test_core_fixture.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

PBX_TEST(core_begin_is_authority_free)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), 0U);
    PBX_CHECK(id.gen != 0U);
    /* The reply names the reserved destination as data: nothing moved,
     * nothing is held, the slot holds only its placeholder. */
    PBX_CHECK_EQ(dest, TH_T_FIRST);
    PBX_CHECK(h->slots[dest].reserved);
    PBX_CHECK_EQ(h->slots[dest].kind, PBX_CAPABI_KIND_PLACEHOLDER);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    PBX_CHECK_EQ(h->handed, 0U);
    TH_TRACE(h, "reserve=64");
    /* A second BEGIN gets its own request and destination. */
    pbx_ipc_id id2 = {0, 0};
    uint32_t dest2 = 0;
    PBX_CHECK_EQ(th_begin(h, &b, &id2, &dest2), 0U);
    PBX_CHECK(id2.index != id.index);
    PBX_CHECK_EQ(dest2, TH_T_FIRST + 1U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Snapshots every pool's free count and the free selector chunks. */
static void intake_free_counts(const th_h *h,
                               uint32_t out[PBX_BOOTSTRAP_POOL_COUNT + 1U])
{
    for (size_t p = 0; p < (size_t)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        out[p] = h->core.pools[p].free_count;
    }
    out[PBX_BOOTSTRAP_POOL_COUNT] = h->core.chunk_free_count;
}

/* Checks that out is exactly the BEGIN error reply with status err: the
 * zero request id, an empty body, nothing transferred, no token. */
static void intake_check_begin_refusal(const pbx_core_out *out, pbx_err err)
{
    PBX_CHECK_EQ(out->len, (size_t)PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(pbx_le_get16(out->frame + 6), 0x8001U);
    PBX_CHECK_EQ(pbx_le_get16(out->frame + 8), (uint32_t)err);
    PBX_CHECK_EQ(pbx_le_get16(out->frame + 10), 0U);
    PBX_CHECK_EQ(pbx_le_get32(out->frame + 12), 0U);
    PBX_CHECK_EQ(pbx_le_get32(out->frame + 16), 0U);
    PBX_CHECK_EQ(pbx_le_get32(out->frame + 20), 0U);
    PBX_CHECK_EQ(out->transfer_slot, PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(out->token, PBX_CORE_NIL);
    PBX_CHECK_EQ(out->drop, PBX_OK);
}

PBX_TEST(core_begin_only_through_launchd_broker_in_either_mode)
{
    static const uint8_t modes[] = {PBX_IPC_MODE_INSTALL,
                                    PBX_IPC_MODE_RUNTIME_REPLY};
    static const uint32_t callers[] = {TH_BADGE, TH_BADGE + 1U, 0U};
    th_h *h = th_new(2);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    uint32_t before[PBX_BOOTSTRAP_POOL_COUNT + 1U];
    uint32_t after[PBX_BOOTSTRAP_POOL_COUNT + 1U];
    pbx_core_out out;
    pbx_err core = PBX_OK;
    pbx_ipc_begin b;
    size_t n = 0;
    intake_free_counts(h, before);
    for (size_t m = 0; m < PBX_ARRAY_LEN(modes); m++) {
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.mode = modes[m];
        if (modes[m] == PBX_IPC_MODE_RUNTIME_REPLY) {
            memset(&b.target, 0, sizeof(b.target));
        }
        PBX_REQUIRE(pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) == PBX_OK);
        /* Any ordinary public caller, install mode included: its job,
         * session, realm and entry would be only its own claim. */
        for (size_t c = 0; c < PBX_ARRAY_LEN(callers); c++) {
            PBX_CHECK_EQ(th_public(h, callers[c], buf, n, NULL, 0, &core, &out),
                         PBX_E_CORE_BROKER);
            PBX_CHECK_EQ(core, PBX_OK);
            intake_check_begin_refusal(&out, PBX_E_CORE_BROKER);
        }
        /* A capability sent with it is deleted like any other refused
         * frame's (the partition refuses the count before the caller). */
        uint32_t s =
            th_put_cap(h, 70U, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND,
                       PBX_CAPABI_PROV_RECEIVED);
        PBX_CHECK_EQ(th_public(h, TH_BADGE, buf, n, &s, 1, &core, &out),
                     PBX_E_CORE_UNEXPECTED_CAPS);
        intake_check_begin_refusal(&out, PBX_E_CORE_UNEXPECTED_CAPS);
        TH_TRACE(h, "del=70");
    }
    /* No slot reserved, no record or selector chunk taken, nothing held. */
    intake_free_counts(h, after);
    PBX_CHECK_MEM(after, before, sizeof(before));
    PBX_CHECK(th_quiescent(h));
    /* launchd's broker relays both modes. */
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    for (size_t m = 0; m < PBX_ARRAY_LEN(modes); m++) {
        th_default_begin(&b, sel, SEL_LEN);
        b.ctx.mode = modes[m];
        if (modes[m] == PBX_IPC_MODE_RUNTIME_REPLY) {
            memset(&b.target, 0, sizeof(b.target));
        }
        PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), 0U);
        PBX_CHECK_EQ(dest, TH_T_FIRST + (uint32_t)m);
    }
    TH_TRACE(h, "reserve=64 reserve=65");
    PBX_CHECK_EQ(h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].free_count, 0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

PBX_TEST(core_begin_with_capability_deletes_it_and_answers)
{
    tfx_public f;
    tfx_setup(&f, 4, sel, SEL_LEN);
    th_h *h = f.h;
    /* Transport says one capability, header says none. */
    uint32_t s = th_put_cap(h, 70U, PBX_CAPABI_KIND_ENDPOINT,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    PBX_CHECK_EQ(tfx_send(&f, TH_BADGE, f.n, &s, 1),
                 PBX_E_CORE_UNEXPECTED_CAPS);
    PBX_CHECK_EQ(f.core, PBX_OK);
    PBX_CHECK_EQ(f.out.transfer_slot, PBX_CORE_SLOT_NONE);
    TH_TRACE(h, "del=70");
    /* Header and transport agree on one: the partition refuses it. */
    pbx_le_put16(f.buf + 10, 1U);
    s = th_put_cap(h, 71U, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND,
                   PBX_CAPABI_PROV_RECEIVED);
    PBX_CHECK_EQ(tfx_send(&f, TH_BADGE, f.n, &s, 1),
                 PBX_E_CORE_UNEXPECTED_CAPS);
    TH_TRACE(h, "del=71");
    /* Garbage with a capability: deleted, no op to answer, so no reply
     * and the runtime is told to drop the connection. */
    memset(f.buf, 0xEE, 40);
    s = th_put_cap(h, 72U, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND,
                   PBX_CAPABI_PROV_RECEIVED);
    PBX_CHECK_EQ(tfx_send(&f, TH_BADGE, 40, &s, 1), UINT32_MAX);
    PBX_CHECK_EQ(f.core, PBX_OK);
    PBX_CHECK_EQ(f.out.drop, PBX_E_CORE_FRAME);
    TH_TRACE(h, "del=72");
    PBX_CHECK(th_quiescent(h));
    tfx_teardown(&f);
}

PBX_TEST(core_unexpected_capability_transient_deletion_is_pending)
{
    tfx_public f;
    tfx_setup(&f, 4, sel, SEL_LEN);
    th_h *h = f.h;
    uint32_t s = th_put_cap(h, 70U, PBX_CAPABI_KIND_ENDPOINT,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    /* The deletion failure takes precedence over UNEXPECTED_CAPS. */
    PBX_CHECK_EQ(tfx_send(&f, TH_BADGE, f.n, &s, 1),
                 PBX_E_CORE_CLEANUP_PENDING);
    TH_TRACE(h, "del~70");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    PBX_CHECK(th_conserved(h));
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    TH_TRACE(h, "del=70");
    PBX_CHECK(th_quiescent(h));
    tfx_teardown(&f);
}

PBX_TEST(core_unexpected_capability_rejected_deletion_fail_stops)
{
    tfx_public f;
    tfx_setup(&f, 4, sel, SEL_LEN);
    th_h *h = f.h;
    uint32_t s = th_put_cap(h, 70U, PBX_CAPABI_KIND_ENDPOINT,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    (void)tfx_send(&f, TH_BADGE, f.n, &s, 1);
    PBX_CHECK_EQ(f.core, PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    TH_TRACE(h, "del!70");
    /* Stopped: nothing more is accepted. */
    (void)tfx_send(&f, TH_BADGE, f.n, NULL, 0);
    PBX_CHECK_EQ(f.core, PBX_E_CORE_NOT_READY);
    TH_TRACE(h, "");
    tfx_teardown(&f);
}

PBX_TEST(core_selector_exact_offsets)
{
    th_h *h = th_new(4);
    uint8_t big[100];
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    for (size_t i = 0; i < sizeof(big); i++) {
        big[i] = (uint8_t)('a' + i % 26U);
    }
    th_default_begin(&b, big, sizeof(big));
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_CHECK_EQ(th_selector(h, id, 0, big, 50), 0U);
    /* Gap, rewrite and overrun are refused without storing anything. */
    PBX_CHECK_EQ(th_selector(h, id, 60, big + 60, 10),
                 PBX_E_CORE_SELECTOR_OFFSET);
    PBX_CHECK_EQ(th_selector(h, id, 0, big, 10), PBX_E_CORE_SELECTOR_OFFSET);
    PBX_CHECK_EQ(th_selector(h, id, 49, big + 49, 10),
                 PBX_E_CORE_SELECTOR_OFFSET);
    PBX_CHECK_EQ(th_selector(h, id, 50, big, 51), PBX_E_CORE_SELECTOR_OVERRUN);
    /* Only the owner may stream; a stale generation is refused. */
    pbx_ipc_id stale = {id.index, id.gen + 1U};
    PBX_CHECK_EQ(th_selector(h, stale, 50, big + 50, 50), PBX_E_CORE_UNKNOWN);
    /* The rest crosses a chunk boundary (60 bytes per chunk). */
    PBX_CHECK_EQ(th_selector(h, id, 50, big + 50, 50), 0U);
    PBX_CHECK_EQ(th_selector(h, id, 100, big, 1), PBX_E_CORE_SELECTOR_OVERRUN);
    /* The digest over the stored bytes matches: COMMIT is accepted. */
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), 0U);
    PBX_CHECK_EQ(th_selector(h, id, 100, big, 1), PBX_E_CORE_STATE);
    TH_TRACE(h, "reserve=64");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Sends COMMIT for id with the caps in slots (n of them). */
static uint32_t intake_commit_raw(th_h *h, pbx_ipc_id id, uint32_t dest,
                                  const uint32_t *slots, size_t n)
{
    uint8_t buf[64];
    pbx_core_out out;
    pbx_err core = PBX_OK;
    pbx_ipc_commit c = {dest};
    size_t len = 0;
    PBX_REQUIRE(pbx_ipc_commit_encode(id, &c, buf, sizeof(buf), &len) ==
                PBX_OK);
    uint32_t st = th_public(h, h->badge, buf, len, slots, n, &core, &out);
    PBX_CHECK_EQ(core, PBX_OK);
    return st;
}

PBX_TEST(core_commit_rejections_are_distinct_and_delete)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_SELECTOR_INCOMPLETE);
    TH_TRACE(h, "del=64");
    PBX_CHECK_EQ(h->slots[dest].kind, PBX_CAPABI_KIND_PLACEHOLDER);
    PBX_CHECK_EQ(th_selector(h, id, 0, sel, SEL_LEN), 0U);
    /* Landed outside the reservation, or the echo names another slot. */
    PBX_CHECK_EQ(th_commit(h, id, dest, 80U), PBX_E_CORE_COMMIT_SLOT);
    TH_TRACE(h, "del=80");
    PBX_CHECK_EQ(th_commit(h, id, 80U, dest), PBX_E_CORE_COMMIT_SLOT);
    TH_TRACE(h, "del=64");
    /* No capability, or two. */
    PBX_CHECK_EQ(intake_commit_raw(h, id, dest, NULL, 0),
                 PBX_E_CORE_COMMIT_COUNT);
    TH_TRACE(h, "");
    uint32_t two[2];
    two[0] = th_put_cap(h, dest, PBX_CAPABI_KIND_ENDPOINT,
                        PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    two[1] = th_put_cap(h, 81U, PBX_CAPABI_KIND_ENDPOINT, PBX_CAPABI_RIGHT_SEND,
                        PBX_CAPABI_PROV_RECEIVED);
    PBX_CHECK_EQ(intake_commit_raw(h, id, dest, two, 2),
                 PBX_E_CORE_COMMIT_COUNT);
    TH_TRACE(h, "del=64 del=81");
    /* Not an endpoint-send receipt. */
    uint32_t k = th_put_cap(h, dest, PBX_CAPABI_KIND_NOTIFY,
                            PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    PBX_CHECK_EQ(intake_commit_raw(h, id, dest, &k, 1), PBX_E_CORE_COMMIT_KIND);
    TH_TRACE(h, "del=64");
    k = th_put_cap(h, dest, PBX_CAPABI_KIND_ENDPOINT,
                   PBX_CAPABI_RIGHT_SEND | PBX_CAPABI_RIGHT_GRANT,
                   PBX_CAPABI_PROV_RECEIVED);
    PBX_CHECK_EQ(intake_commit_raw(h, id, dest, &k, 1), PBX_E_CORE_COMMIT_KIND);
    TH_TRACE(h, "del=64");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 0U);
    PBX_CHECK(th_conserved(h));
    /* The request is still open: the exact COMMIT is accepted. */
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), 0U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), 1U);
    /* A second COMMIT is refused and its capability deleted. */
    PBX_CHECK_EQ(th_commit(h, id, dest, 82U), PBX_E_CORE_STATE);
    TH_TRACE(h, "del=82");
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

PBX_TEST(core_commit_wrong_digest_and_deletion_precedence)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    b.selector_digest[5] ^= 0x40U;
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_REQUIRE(th_selector(h, id, 0, sel, SEL_LEN) == 0U);
    th_clear_trace(h);
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_DIGEST);
    TH_TRACE(h, "del=64");
    /* The deletion cannot finish now: CLEANUP_PENDING wins. */
    th_push_del(h, PBX_CORE_DELETE_TRANSIENT);
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_CLEANUP_PENDING);
    TH_TRACE(h, "del~64");
    PBX_CHECK(th_conserved(h));
    th_run(h);
    TH_TRACE(h, "del=64");
    /* A permanent rejection stops the service with the cleanup status. */
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_CLEANUP_REJECTED);
    PBX_CHECK_EQ(pbx_core_exit_status(&h->core), PBX_CORE_EXIT_CLEANUP);
    th_free(h);
}

PBX_TEST(core_begin_admission_is_one_shot_directory_entry)
{
    tfx_public f;
    tfx_setup(&f, 4, sel, SEL_LEN);
    th_h *h = f.h;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    /* ENTRY_METADATA_READ on a FILE is never admitted (hand-built: no
     * encoder emits it). Nothing is reserved. */
    pbx_le_put16(f.buf + PBX_IPC_HEADER_BYTES + 44U,
                 PBX_IPC_OPERATION_ENTRY_METADATA_READ);
    PBX_CHECK_EQ(tfx_send(&f, TH_BROKER, f.n, NULL, 0), PBX_E_IPC_ADMISSION);
    /* Nor as a longer-lived directory-entry grant: ipc v2 names this
     * refusal on its own (a directory entry is never widened). */
    f.b.ctx.operation = PBX_IPC_OPERATION_ENTRY_TOUCH;
    f.b.ctx.object_class = PBX_IPC_CLASS_DIRECTORY_ENTRY;
    tfx_encode_begin(&f);
    f.buf[PBX_IPC_HEADER_BYTES + 48U] = PBX_IPC_LIFETIME_JOB;
    PBX_CHECK_EQ(tfx_send(&f, TH_BROKER, f.n, NULL, 0),
                 PBX_E_IPC_DIR_ENTRY_WIDENED);
    TH_TRACE(h, "");
    /* One-shot directory-entry touch is admitted. */
    PBX_CHECK_EQ(th_begin(h, &f.b, &id, &dest), 0U);
    TH_TRACE(h, "reserve=64");
    tfx_teardown(&f);
}

/* The runtime may place a COMMIT's capability into a reserved destination
 * only after the canonical parser accepted the frame and the reservation
 * is proven to belong to that caller's own open request
 * (pbx_core_commit_dest). Every other frame, caller, state, destination or
 * capability count is refused, and nothing changes. */
PBX_TEST(core_commit_dest_only_for_the_callers_own_open_reservation)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    uint32_t got = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    uint8_t buf[64];
    size_t n = 0;
    pbx_ipc_commit c = {dest};
    PBX_REQUIRE(pbx_ipc_commit_encode(id, &c, buf, sizeof(buf), &n) == PBX_OK);
    uint32_t held = pbx_core_held_caps(&h->core);
    PBX_CHECK(pbx_core_commit_dest(&h->core, h->badge, buf, n, 1U, &got));
    PBX_CHECK_EQ(got, dest);
    /* Another caller, a capability count other than one, a cut frame. */
    PBX_CHECK(!pbx_core_commit_dest(&h->core, h->badge + 1U, buf, n, 1U, &got));
    PBX_CHECK(!pbx_core_commit_dest(&h->core, h->badge, buf, n, 0U, &got));
    PBX_CHECK(!pbx_core_commit_dest(&h->core, h->badge, buf, n, 2U, &got));
    PBX_CHECK(!pbx_core_commit_dest(&h->core, h->badge, buf, n - 1U, 1U, &got));
    /* Another destination than the reserved one. */
    pbx_ipc_commit other = {dest + 1U};
    uint8_t buf2[64];
    size_t n2 = 0;
    PBX_REQUIRE(pbx_ipc_commit_encode(id, &other, buf2, sizeof(buf2), &n2) ==
                PBX_OK);
    PBX_CHECK(!pbx_core_commit_dest(&h->core, h->badge, buf2, n2, 1U, &got));
    /* A stale request generation. */
    pbx_ipc_id stale = {id.index, id.gen + 1U};
    PBX_REQUIRE(pbx_ipc_commit_encode(stale, &c, buf2, sizeof(buf2), &n2) ==
                PBX_OK);
    PBX_CHECK(!pbx_core_commit_dest(&h->core, h->badge, buf2, n2, 1U, &got));
    /* Not a COMMIT. */
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf2,
                                     sizeof(buf2), &n2) == PBX_OK);
    PBX_CHECK(!pbx_core_commit_dest(&h->core, h->badge, buf2, n2, 1U, &got));
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
    /* Once committed, the reservation is no longer open to anyone. */
    for (uint32_t off = 0; off < b.selector_len;) {
        uint32_t len = b.selector_len - off;
        len = len > PBX_IPC_SELECTOR_CHUNK_BYTES_MAX
                  ? PBX_IPC_SELECTOR_CHUNK_BYTES_MAX
                  : len;
        PBX_REQUIRE(th_selector(h, id, off, sel + off, len) == 0U);
        off += len;
    }
    PBX_REQUIRE(th_commit(h, id, dest, dest) == 0U);
    PBX_CHECK(!pbx_core_commit_dest(&h->core, h->badge, buf, n, 1U, &got));
    th_free(h);
}
