/*
 * test_mut_m1.c: behaviour of the public dispatch (core/pbx_core_public.c)
 * and of the public codec (ipc/pbx_ipc_frame.c, ipc/pbx_ipc_public.c)
 * that the mutation campaign of issue 11 found unchecked: the reply op of
 * every refused and answered public operation, the fail-stop of a COMMIT
 * whose receipt cannot be deleted, the exact refusal of a grant that is
 * not installed yet, the state of a just-begun request and its transient
 * slots, BEGIN's check of the request pool itself, and codec boundaries
 * (printable text, the largest frame, the last selector byte, identity
 * rules the encoders' self-checks enforce).
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <stdlib.h>
#include <string.h>

static const uint8_t m1_sel[] = "docs/report.txt";
#define M1_SEL_LEN ((uint32_t)(sizeof(m1_sel) - 1U))

/* The reply op of a public request op. */
#define M1_REPLY(op) ((uint16_t)((op) | PBX_IPC_REPLY_BIT))

/* ---- the public codec ---------------------------------------------------- */

/* Encodes b and decodes it again; returns the first error. */
static pbx_err m1_begin_roundtrip(const pbx_ipc_begin *b)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_err err = pbx_ipc_begin_encode(b, buf, sizeof(buf), &n);
    if (err != PBX_OK) {
        return err;
    }
    pbx_ipc_frame f;
    pbx_ipc_begin out;
    err = pbx_ipc_frame_decode(buf, n, 0U, &f);
    return err != PBX_OK ? err : pbx_ipc_begin_decode(&f, &out);
}

/* Program entries and labels are printable ASCII, 0x20 to 0x7E inclusive:
 * a tilde and a space pass, a unit separator (0x1F) and DEL (0x7F) are
 * refused as text. */
PBX_TEST(mut_m1_text_is_printable_ascii_inclusive)
{
    pbx_ipc_begin b;
    th_default_begin(&b, m1_sel, M1_SEL_LEN);
    static const uint8_t entry[] = "/bin/a b~";
    b.ctx.entry.len = (uint16_t)(sizeof(entry) - 1U);
    memcpy(b.ctx.entry.bytes, entry, sizeof(entry) - 1U);
    b.label.len = 2U;
    b.label.bytes[0] = (uint8_t)'~';
    b.label.bytes[1] = (uint8_t)' ';
    PBX_CHECK_EQ(m1_begin_roundtrip(&b), PBX_OK);
    b.ctx.entry.bytes[0] = 0x1FU;
    PBX_CHECK_EQ(m1_begin_roundtrip(&b), PBX_E_IPC_TEXT);
    b.ctx.entry.bytes[0] = 0x7FU;
    PBX_CHECK_EQ(m1_begin_roundtrip(&b), PBX_E_IPC_TEXT);
    b.ctx.entry.bytes[0] = (uint8_t)'/';
    b.label.bytes[1] = 0x1FU;
    PBX_CHECK_EQ(m1_begin_roundtrip(&b), PBX_E_IPC_TEXT);
}

/* A frame of exactly PBX_IPC_FRAME_BYTES_MAX bytes passes the header
 * checks; one byte more is refused as too large. */
PBX_TEST(mut_m1_largest_frame_decodes)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX + 1U];
    memset(buf, 0, sizeof(buf));
    pbx_le_put32(buf, PBX_IPC_MAGIC);
    pbx_le_put16(buf + 4, (uint16_t)PBX_IPC_VERSION);
    pbx_le_put16(buf + 6, (uint16_t)PBX_IPC_OP_SELECTOR);
    pbx_le_put32(buf + 12, 1U);
    pbx_le_put32(buf + 16, 1U);
    pbx_le_put32(buf + 20, PBX_IPC_BODY_BYTES_MAX);
    pbx_ipc_frame f;
    PBX_CHECK_EQ(pbx_ipc_frame_decode(buf, PBX_IPC_FRAME_BYTES_MAX, 0U, &f),
                 PBX_OK);
    PBX_CHECK_EQ(f.body_len, (size_t)PBX_IPC_BODY_BYTES_MAX);
    pbx_le_put32(buf + 20, PBX_IPC_BODY_BYTES_MAX + 1U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(buf, sizeof(buf), 0U, &f),
                 PBX_E_IPC_FRAME_TOO_LARGE);
}

/* pbx_ipc_empty_decode asked for an op that never has an empty body
 * (BEGIN) answers OP_MISMATCH, whatever the frame. */
PBX_TEST(mut_m1_empty_decode_of_a_non_empty_op_is_op_mismatch)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_id id = {1U, 1U};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf),
                                     &n) == PBX_OK);
    pbx_ipc_frame f;
    PBX_REQUIRE(pbx_ipc_frame_decode(buf, n, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_empty_decode(&f, PBX_IPC_OP_DECISION), PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_empty_decode(&f, PBX_IPC_OP_BEGIN),
                 PBX_E_IPC_OP_MISMATCH);
}

/* A SELECTOR chunk ending exactly at the largest selector length is in
 * range; one ending a byte later is not. */
PBX_TEST(mut_m1_selector_chunk_may_end_at_the_last_byte)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    static uint8_t bytes[PBX_IPC_SELECTOR_CHUNK_BYTES_MAX];
    memset(bytes, 'a', sizeof(bytes));
    pbx_ipc_id id = {1U, 1U};
    uint32_t last =
        PBX_IPC_SELECTOR_LEN_BYTES_MAX - PBX_IPC_SELECTOR_CHUNK_BYTES_MAX;
    pbx_ipc_selector s = {last, PBX_IPC_SELECTOR_CHUNK_BYTES_MAX, bytes};
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_selector_encode(id, &s, buf, sizeof(buf), &n), PBX_OK);
    pbx_ipc_frame f;
    pbx_ipc_selector out;
    PBX_REQUIRE(pbx_ipc_frame_decode(buf, n, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_selector_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.offset, last);
    PBX_CHECK_EQ(out.len, PBX_IPC_SELECTOR_CHUNK_BYTES_MAX);
    s.offset = last + 1U;
    PBX_CHECK_EQ(pbx_ipc_selector_encode(id, &s, buf, sizeof(buf), &n),
                 PBX_E_IPC_SELECTOR_RANGE);
}

/* A runtime-reply approval must carry exactly one capability (the
 * alias): the same reply without it is a capability-partition error. */
PBX_TEST(mut_m1_runtime_approval_without_alias_is_cap_partition)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_id id = {1U, 1U};
    pbx_ipc_decision d = {
        PBX_IPC_OUTCOME_APPROVED, PBX_IPC_MODE_INSTALL, {2U, 3U}, 9U, 0U};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_decision_reply_encode(id, &d, buf, sizeof(buf), &n) ==
                PBX_OK);
    /* The same approval in runtime-reply mode, no installed slot. */
    buf[PBX_IPC_HEADER_BYTES + 1U] = (uint8_t)PBX_IPC_MODE_RUNTIME_REPLY;
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 12U, 0U);
    pbx_ipc_frame f;
    pbx_ipc_decision out;
    PBX_REQUIRE(pbx_ipc_frame_decode(buf, n, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_decision_reply_decode(&f, &out),
                 PBX_E_IPC_CAP_PARTITION);
    /* With its one capability it decodes. */
    pbx_le_put16(buf + 10, 1U);
    PBX_REQUIRE(pbx_ipc_frame_decode(buf, n, 1U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_decision_reply_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.mode, PBX_IPC_MODE_RUNTIME_REPLY);
}

/* The exact form of CANCEL names a request and no grant: the decoded
 * grant is the zero identity, whatever the record held before. */
PBX_TEST(mut_m1_exact_cancel_decodes_no_grant)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request.index = 4U;
    c.request.gen = 5U;
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    pbx_ipc_frame f;
    pbx_ipc_cancel out;
    memset(&out, 0xA5, sizeof(out));
    PBX_REQUIRE(pbx_ipc_frame_decode(buf, n, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_OK);
    PBX_CHECK(!out.by_grant);
    PBX_CHECK(!out.by_correlation);
    PBX_CHECK_EQ(out.request.index, 4U);
    PBX_CHECK_EQ(out.request.gen, 5U);
    PBX_CHECK_EQ(out.grant.index, 0U);
    PBX_CHECK_EQ(out.grant.gen, 0U);
}

/* An exact CANCEL naming the zero identity would go out as the
 * correlation form: the encoder refuses it with REQUEST_ID rather than
 * send a different request than it was given. */
PBX_TEST(mut_m1_exact_cancel_of_the_zero_identity_is_refused)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.job_gen = 1U;
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n),
                 PBX_E_IPC_REQUEST_ID);
    /* The same record asking for correlation is fine. */
    c.by_correlation = true;
    PBX_CHECK_EQ(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n), PBX_OK);
}

/* BEGIN's reply and COMMIT name a live request: their encoders refuse
 * the zero identity (their own decoders' header rule). */
PBX_TEST(mut_m1_encoders_refuse_a_dead_identity)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_id zero = {0U, 0U};
    pbx_ipc_id live = {3U, 4U};
    pbx_ipc_begin_reply r = {70U};
    pbx_ipc_commit c = {70U};
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_begin_reply_encode(zero, &r, buf, sizeof(buf), &n),
                 PBX_E_IPC_REQUEST_ID);
    PBX_CHECK_EQ(pbx_ipc_commit_encode(zero, &c, buf, sizeof(buf), &n),
                 PBX_E_IPC_REQUEST_ID);
    PBX_CHECK_EQ(pbx_ipc_begin_reply_encode(live, &r, buf, sizeof(buf), &n),
                 PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_commit_encode(live, &c, buf, sizeof(buf), &n), PBX_OK);
}

/* ---- public replies of the core ----------------------------------------- */

/* Sends frame with slots (n of them) as badge and decodes the reply's
 * header into *f; returns the core's own return value. */
static pbx_err m1_send(th_h *h, uint32_t badge, const uint8_t *frame,
                       size_t len, const uint32_t *slots, size_t n,
                       pbx_ipc_frame *f)
{
    static pbx_core_out out;
    pbx_err core = PBX_OK;
    memset(f, 0, sizeof(*f));
    (void)th_public(h, badge, frame, len, slots, n, &core, &out);
    if (out.len != 0U) {
        uint16_t caps = out.transfer_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
        PBX_CHECK_EQ(pbx_ipc_frame_decode(out.frame, out.len, caps, f), PBX_OK);
    }
    return core;
}

/* Checks that f is an error reply of op with exactly status err. */
static void m1_refused(const pbx_ipc_frame *f, uint16_t op, pbx_err err)
{
    PBX_CHECK_EQ(f->op, M1_REPLY(op));
    PBX_CHECK_EQ(f->status, (uint16_t)err);
}

/* A BEGIN refused for want of records is answered BUSY in BEGIN's own
 * reply form; one in a free pool is answered too, in the same form. */
PBX_TEST(mut_m1_busy_begin_reply_op)
{
    th_h *h = th_new(1);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin b;
    th_default_begin(&b, m1_sel, M1_SEL_LEN);
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) == PBX_OK);
    pbx_ipc_frame f;
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, NULL, 0, &f), PBX_OK);
    PBX_CHECK_EQ(f.op, M1_REPLY(PBX_IPC_OP_BEGIN));
    PBX_CHECK_EQ(f.status, 0U);
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, NULL, 0, &f), PBX_OK);
    m1_refused(&f, PBX_IPC_OP_BEGIN, PBX_E_CORE_BUSY);
    th_free(h);
}

/* An accepted SELECTOR chunk is answered with SELECTOR's own empty
 * reply. */
PBX_TEST(mut_m1_selector_reply_op)
{
    th_h *h = th_new(2);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, m1_sel, M1_SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    pbx_ipc_selector s = {0U, M1_SEL_LEN, m1_sel};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_selector_encode(id, &s, buf, sizeof(buf), &n) ==
                PBX_OK);
    pbx_ipc_frame f;
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, NULL, 0, &f), PBX_OK);
    PBX_CHECK_EQ(f.op, M1_REPLY(PBX_IPC_OP_SELECTOR));
    PBX_CHECK_EQ(f.status, 0U);
    PBX_CHECK_EQ(f.body_len, 0U);
    PBX_CHECK_EQ(f.request.index, id.index);
    PBX_CHECK_EQ(f.request.gen, id.gen);
    th_free(h);
}

/* Encodes a COMMIT of id echoing dest and lands one scope capability for
 * it; returns the landed slot. */
static uint32_t m1_commit_frame(th_h *h, pbx_ipc_id id, uint32_t dest,
                                uint8_t *buf, size_t cap, size_t *n)
{
    pbx_ipc_commit c = {dest};
    PBX_REQUIRE(pbx_ipc_commit_encode(id, &c, buf, cap, n) == PBX_OK);
    return th_put_cap(h, PBX_CORE_SLOT_NONE, PBX_CAPABI_KIND_ENDPOINT,
                      PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
}

/* A COMMIT for no live request is refused in COMMIT's own reply form and
 * its capability deleted; when that deletion is rejected the core stops
 * (CLEANUP_REJECTED), whatever the refusal was. */
PBX_TEST(mut_m1_refused_commit_reply_op_and_rejected_deletion)
{
    th_h *h = th_new(2);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_id nobody = {1U, 9U};
    size_t n = 0;
    uint32_t slot = m1_commit_frame(h, nobody, 70U, buf, sizeof(buf), &n);
    pbx_ipc_frame f;
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, &slot, 1, &f), PBX_OK);
    m1_refused(&f, PBX_IPC_OP_COMMIT, PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(h->deleted, 1U);
    PBX_CHECK(th_conserved(h));
    slot = m1_commit_frame(h, nobody, 70U, buf, sizeof(buf), &n);
    th_push_del(h, PBX_CORE_DELETE_REJECTED);
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, &slot, 1, &f),
                 PBX_E_CORE_CLEANUP_REJECTED);
    m1_refused(&f, PBX_IPC_OP_COMMIT, PBX_E_CORE_CLEANUP_REJECTED);
    th_free(h);
}

/* DECISION, CANCEL and CONSUME naming nothing are refused, each in its
 * own reply form with UNKNOWN. */
PBX_TEST(mut_m1_refused_decision_cancel_consume_reply_ops)
{
    th_h *h = th_new(2);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_id nobody = {1U, 9U};
    size_t n = 0;
    pbx_ipc_frame f;
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, nobody, buf,
                                     sizeof(buf), &n) == PBX_OK);
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, NULL, 0, &f), PBX_OK);
    m1_refused(&f, PBX_IPC_OP_DECISION, PBX_E_CORE_UNKNOWN);
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = nobody;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, NULL, 0, &f), PBX_OK);
    m1_refused(&f, PBX_IPC_OP_CANCEL, PBX_E_CORE_UNKNOWN);
    pbx_ipc_consume k = {nobody};
    PBX_REQUIRE(pbx_ipc_consume_encode(&k, buf, sizeof(buf), &n) == PBX_OK);
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, NULL, 0, &f), PBX_OK);
    m1_refused(&f, PBX_IPC_OP_CONSUME, PBX_E_CORE_UNKNOWN);
    th_free(h);
}

/* A CONSUME of a live one-shot grant is answered with CONSUME's own
 * empty reply, and the grant leaves LIVE. */
PBX_TEST(mut_m1_consume_reply_op)
{
    th_h *h = th_new(2);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin b;
    th_default_begin(&b, m1_sel, M1_SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, m1_sel, false, NULL, NULL);
    PBX_REQUIRE(g.gen != 0U);
    pbx_ipc_consume k = {g};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_consume_encode(&k, buf, sizeof(buf), &n) == PBX_OK);
    pbx_ipc_frame f;
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, NULL, 0, &f), PBX_OK);
    PBX_CHECK_EQ(f.op, M1_REPLY(PBX_IPC_OP_CONSUME));
    PBX_CHECK_EQ(f.status, 0U);
    PBX_CHECK(pbx_core_inspect_grant(&h->core, g.index)->link.state !=
              (uint16_t)PBX_CORE_ST_LIVE);
    th_free(h);
}

/* The grant record BEGIN takes names nothing until the grant is
 * installed: CONSUME and CANCEL of its exact identity are refused with
 * UNKNOWN, as for any id that names no grant. */
PBX_TEST(mut_m1_grant_not_installed_yet_is_unknown)
{
    th_h *h = th_new(2);
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, m1_sel, M1_SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, id.index);
    pbx_ipc_id g =
        pbx_core_inspect_id(&h->core, PBX_BOOTSTRAP_POOL_GRANTS, r->grant);
    PBX_REQUIRE(g.gen != 0U);
    pbx_ipc_consume k = {g};
    size_t n = 0;
    PBX_REQUIRE(pbx_ipc_consume_encode(&k, buf, sizeof(buf), &n) == PBX_OK);
    pbx_ipc_frame f;
    PBX_CHECK_EQ(m1_send(h, TH_BROKER, buf, n, NULL, 0, &f), PBX_OK);
    m1_refused(&f, PBX_IPC_OP_CONSUME, PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_cancel_grant(h, g), (uint32_t)PBX_E_CORE_UNKNOWN);
    th_free(h);
}

/* ---- a just-begun request ------------------------------------------------ */

/* Checks that transient slot t, just taken for request owner, is idle,
 * empty and owned by it. */
static void m1_idle_tslot(const th_h *h, uint32_t t, uint32_t owner)
{
    const pbx_core_tslot *ts = pbx_core_inspect_tslot(&h->core, t);
    PBX_CHECK_EQ(ts->link.state, PBX_CORE_TSLOT_IDLE);
    PBX_CHECK_EQ(ts->owner, owner);
    PBX_CHECK_EQ(ts->owner_kind, 0U);
    PBX_CHECK_EQ(ts->slot, PBX_CORE_SLOT_NONE);
    PBX_CHECK_EQ(ts->kind, 0U);
}

/* Every request just begun, on fresh records, is parked nowhere, has no
 * flag, outcome, reason or reserved bits, and its object and handle
 * transient slots are idle, empty and owned by it; its scope slot is
 * reserved at the destination BEGIN answered. */
PBX_TEST(mut_m1_begun_requests_and_their_tslots_are_exact)
{
    th_h *h = th_new(3);
    for (uint32_t k = 0; k < 3U; k++) {
        pbx_ipc_begin b;
        pbx_ipc_id id = {0, 0};
        uint32_t dest = 0;
        th_default_begin(&b, m1_sel, M1_SEL_LEN);
        b.ctx.job_id += k;
        PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
        const pbx_core_request *r =
            pbx_core_inspect_request(&h->core, id.index);
        PBX_CHECK_EQ(r->parked_route, PBX_CORE_NIL);
        PBX_CHECK_EQ(r->flags, 0U);
        PBX_CHECK_EQ(r->outcome, 0U);
        PBX_CHECK_EQ(r->reason, 0U);
        PBX_CHECK_EQ(r->reserved, 0U);
        PBX_CHECK_EQ(r->caller_badge, TH_BROKER);
        m1_idle_tslot(h, r->object_tslot, id.index);
        m1_idle_tslot(h, r->handle_tslot, id.index);
        const pbx_core_tslot *scope =
            pbx_core_inspect_tslot(&h->core, r->scope_tslot);
        PBX_CHECK_EQ(scope->link.state, PBX_CORE_TSLOT_RESERVED);
        PBX_CHECK_EQ(scope->owner, id.index);
        PBX_CHECK_EQ(scope->slot, dest);
    }
    th_free(h);
}

/* A request begun on the record of one that was cancelled carries none
 * of it: no CANCELLED flag, no outcome, and its transient slots are idle
 * and empty again. */
PBX_TEST(mut_m1_request_reused_after_a_cancel_is_clean)
{
    th_h *h = th_new(1);
    pbx_ipc_begin b;
    pbx_ipc_id first = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, m1_sel, M1_SEL_LEN);
    PBX_REQUIRE(th_open(h, &b, m1_sel, &first) == 0U);
    PBX_CHECK_EQ(th_cancel(h, first), 0U);
    const pbx_core_request *r = pbx_core_inspect_request(&h->core, first.index);
    PBX_CHECK((r->flags & PBX_CORE_REQ_F_CANCELLED) != 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, first, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    th_run(h);
    PBX_CHECK(th_quiescent(h));
    pbx_ipc_id id = {0, 0};
    b.ctx.job_gen += 1U;
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_CHECK_EQ(id.index, first.index);
    r = pbx_core_inspect_request(&h->core, id.index);
    PBX_CHECK_EQ(r->flags, 0U);
    PBX_CHECK_EQ(r->outcome, 0U);
    PBX_CHECK_EQ(r->parked_route, PBX_CORE_NIL);
    m1_idle_tslot(h, r->object_tslot, id.index);
    m1_idle_tslot(h, r->handle_tslot, id.index);
    th_free(h);
}

/* ---- BEGIN counts the request pool itself -------------------------------- */

/* Re-initialises h's core on a fresh arena whose request pool holds one
 * record while every other record pool holds n. */
static void m1_reinit_one_request(th_h *h, uint32_t n)
{
    pbx_bootstrap_geometry g;
    pbx_bootstrap_type_layout want[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_bootstrap_layout l;
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    pbx_core_pool_layouts(want);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = n;
    }
    g.capacity[PBX_BOOTSTRAP_POOL_REQUESTS] = 1U;
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        3U * n + 2U + 2U * PBX_CORE_RECV_SLOTS_MAX;
    g.capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        4U * n * PBX_CORE_SELECTOR_CHUNK_BYTES;
    g.call_window = n;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * n;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_REQUIRE(pbx_bootstrap_layout_derive(&g, want, &l) == PBX_OK);
    uint8_t *arena = aligned_alloc(4096U, l.arena_bytes);
    PBX_REQUIRE(arena != NULL);
    const pbx_core_ops *ops = h->core.ops;
    void *user = h->core.ops_user;
    pbx_capabi_layout slots = h->core.slots;
    pbx_core_identity_fn identity = h->core.identity;
    free(h->arena);
    h->arena = arena;
    memset(&h->core, 0, sizeof(h->core));
    PBX_REQUIRE(pbx_core_init(&h->core, &l, h->arena, l.arena_bytes, &slots,
                              ops, user) == PBX_OK);
    pbx_core_set_identity(&h->core, identity);
}

/* With the request pool full and every other pool free, BEGIN is
 * refused BUSY: the request record is counted like the others. */
PBX_TEST(mut_m1_begin_is_busy_when_only_requests_are_full)
{
    th_h *h = th_new(4);
    m1_reinit_one_request(h, 4U);
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, m1_sel, M1_SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    b.ctx.job_id += 1U;
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), (uint32_t)PBX_E_CORE_BUSY);
    /* Once the first is cancelled, delivered and retired, BEGIN fits. */
    pbx_ipc_id first =
        pbx_core_inspect_id(&h->core, PBX_BOOTSTRAP_POOL_REQUESTS, 0U);
    PBX_CHECK_EQ(th_cancel(h, first), 0U);
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, first, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    th_run(h);
    PBX_CHECK_EQ(th_begin(h, &b, &id, &dest), 0U);
    th_free(h);
}
