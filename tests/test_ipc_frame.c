/*
 * test_ipc_frame.c: the frame header checks, the authority partition
 * table for every op, error replies, empty records, the admission rule and
 * the encoders' refusal of records they cannot emit.
 */
#include "../ipc/pbx_ipc.h"
#include "runner/pbx_test.h"

#include <string.h>

#define REPLY(op) ((uint16_t)((op) | PBX_IPC_REPLY_BIT))

static const pbx_ipc_id live_id = {7U, 3U};
static const pbx_ipc_id zero_id = {0U, 0U};

/* The partition table written out independently of ipc/: op, request caps
 * range, reply caps range (reply_max < 0: no reply). */
struct expect {
    uint16_t op;
    int req_min;
    int req_max;
    int rep_min;
    int rep_max;
};

static const struct expect table[] = {
    {PBX_IPC_OP_BEGIN, 0, 0, 0, 0},   {PBX_IPC_OP_SELECTOR, 0, 0, 0, 0},
    {PBX_IPC_OP_COMMIT, 1, 1, 0, 0},  {PBX_IPC_OP_DECISION, 0, 0, 0, 1},
    {PBX_IPC_OP_CANCEL, 0, 0, 0, 0},  {PBX_IPC_OP_CONSUME, 0, 0, 0, 0},
    {PBX_IPC_OP_EXPIRE, 0, 0, 0, 0},  {PBX_IPC_OP_RESOLVE, 0, 0, 0, 1},
    {PBX_IPC_OP_DETACH, 1, 1, 0, 0},  {PBX_IPC_OP_RETIRE, 0, 0, 0, 0},
    {PBX_IPC_OP_POLICY, 0, 0, 0, 0},  {PBX_IPC_OP_PROMPT, 0, 0, 0, 0},
    {PBX_IPC_OP_VIEW, 0, 0, 0, 0},    {PBX_IPC_OP_WITHDRAW, 0, 0, 0, 0},
    {PBX_IPC_OP_INSTALL, 1, 1, 1, 1}, {PBX_IPC_OP_REVOKE, 0, 0, 0, 0},
    {PBX_IPC_OP_WAKE, 0, 0, -1, -1},
};

PBX_TEST(ipc_partition_table_for_every_op)
{
    PBX_CHECK_EQ(PBX_ARRAY_LEN(table), PBX_IPC_OP_COUNT);
    for (size_t i = 0; i < PBX_ARRAY_LEN(table); i++) {
        const struct expect *e = &table[i];
        pbx_ipc_op_rule row;
        PBX_CHECK_EQ(pbx_ipc_op_rule_get(e->op, &row), PBX_OK);
        PBX_CHECK_EQ(row.op, e->op);
        for (uint16_t caps = 0; caps <= 3U; caps++) {
            bool req = (int)caps >= e->req_min && (int)caps <= e->req_max;
            bool rep = (int)caps >= e->rep_min && (int)caps <= e->rep_max;
            PBX_CHECK_EQ(pbx_ipc_caps_allowed(e->op, 0U, caps), req);
            PBX_CHECK_EQ(pbx_ipc_caps_allowed(REPLY(e->op), 0U, caps), rep);
            /* A request never has a status; an error reply never
             * carries a capability. */
            PBX_CHECK(!pbx_ipc_caps_allowed(e->op, 1U, caps));
            PBX_CHECK_EQ(pbx_ipc_caps_allowed(REPLY(e->op), 0x0301U, caps),
                         e->rep_max >= 0 && caps == 0U);
        }
        pbx_err want = e->rep_max < 0 ? PBX_E_IPC_UNKNOWN_OP : PBX_OK;
        PBX_CHECK_EQ(pbx_ipc_op_rule_get(REPLY(e->op), &row), want);
    }
    pbx_ipc_op_rule row;
    PBX_CHECK_EQ(pbx_ipc_op_rule_get(0U, &row), PBX_E_IPC_UNKNOWN_OP);
    PBX_CHECK_EQ(pbx_ipc_op_rule_get(0x0008U, &row), PBX_E_IPC_UNKNOWN_OP);
    PBX_CHECK_EQ(pbx_ipc_op_rule_get(0xFFFFU, &row), PBX_E_IPC_UNKNOWN_OP);
    PBX_CHECK(!pbx_ipc_caps_allowed(0x0104U, 0U, 0U));
    PBX_CHECK_EQ(pbx_ipc_op_rule_get(0x0205U, &row), PBX_E_IPC_UNKNOWN_OP);
    /* WITHDRAW names an exact live request both ways. */
    PBX_CHECK_EQ(pbx_ipc_op_rule_get(PBX_IPC_OP_WITHDRAW, &row), PBX_OK);
    PBX_CHECK_EQ(row.id_rule, PBX_IPC_ID_LIVE);
    PBX_CHECK_EQ(pbx_ipc_op_rule_get(REPLY(PBX_IPC_OP_WITHDRAW), &row), PBX_OK);
    PBX_CHECK_EQ(row.id_rule, PBX_IPC_ID_LIVE);
}

/* Whether op is one of the table's ops or, where it has one, its reply. */
static bool expect_known(uint32_t op)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(table); i++) {
        if (op == table[i].op ||
            (op == REPLY(table[i].op) && table[i].rep_max >= 0)) {
            return true;
        }
    }
    return false;
}

/* The partition table is found by indexing with the op number (issue 23
 * item 5): every one of the 65,536 numbers finds exactly its own row or
 * none, so no number aliases another's row through the index arithmetic
 * (a family or number bit dropped, the reply bit ignored). */
PBX_TEST(ipc_rule_lookup_every_op_number)
{
    size_t known = 0;
    for (uint32_t op = 0; op <= 0xFFFFU; op++) {
        pbx_ipc_op_rule row = {0, 0, 0, 0};
        pbx_err err = pbx_ipc_op_rule_get((uint16_t)op, &row);
        bool want = expect_known(op);
        PBX_CHECK_EQ(err, want ? PBX_OK : PBX_E_IPC_UNKNOWN_OP);
        PBX_CHECK_EQ(row.op, want ? op : 0U);
        PBX_CHECK_EQ(pbx_ipc_caps_allowed((uint16_t)op, 0U, row.caps_min),
                     want);
        known += want ? 1U : 0U;
    }
    PBX_CHECK_EQ(known, 2U * PBX_IPC_OP_COUNT - 1U);
}

/* Writes a header (seq 0, reserved 0) with the given fields. */
#define H PBX_IPC_HEADER_BYTES
static void put_header(uint8_t *b, uint16_t op, uint16_t status, uint16_t caps,
                       pbx_ipc_id id, uint32_t body_len)
{
    pbx_le_put32(b, PBX_IPC_MAGIC);
    pbx_le_put16(b + 4, (uint16_t)PBX_IPC_VERSION);
    pbx_le_put16(b + 6, op);
    pbx_le_put16(b + 8, status);
    pbx_le_put16(b + 10, caps);
    pbx_le_put32(b + 12, id.index);
    pbx_le_put32(b + 16, id.gen);
    pbx_le_put32(b + 20, body_len);
    pbx_le_put32(b + 24, 0U);
    pbx_le_put32(b + 28, 0U);
}

PBX_TEST(ipc_frame_header_rejections)
{
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX + 8U];
    pbx_ipc_frame f;
    memset(b, 0, sizeof(b));
    put_header(b, PBX_IPC_OP_DECISION, 0U, 0U, live_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_OK);
    PBX_CHECK_EQ(f.op, PBX_IPC_OP_DECISION);
    PBX_CHECK_EQ(f.request.index, 7U);
    PBX_CHECK_EQ(f.request.gen, 3U);
    PBX_CHECK(f.body == NULL);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(NULL, 0, 0, &f), PBX_E_IPC_TRUNCATED);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H - 1U, 0, &f), PBX_E_IPC_TRUNCATED);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H + 1U, 0, &f), PBX_E_IPC_BODY_LEN);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 1, &f), PBX_E_IPC_CAP_COUNT);
    b[0] = 'Q';
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_MAGIC);
    b[0] = 'P';
    PBX_CHECK_EQ(b[3], (uint8_t)'F');
    pbx_le_put16(b + 4, 1U); /* version 1 is gone */
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_VERSION);
    pbx_le_put16(b + 4, (uint16_t)PBX_IPC_VERSION);
    pbx_le_put16(b + 6, 0x0099U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_UNKNOWN_OP);
    pbx_le_put16(b + 6, REPLY(PBX_IPC_OP_WAKE));
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_UNKNOWN_OP);
    /* Over the frame bound, whatever body_len says. */
    put_header(b, PBX_IPC_OP_PROMPT, 0U, 0U, live_id,
               PBX_IPC_FRAME_BYTES_MAX + 1U - PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, PBX_IPC_FRAME_BYTES_MAX + 1U, 0, &f),
                 PBX_E_IPC_FRAME_TOO_LARGE);
    put_header(b, PBX_IPC_OP_PROMPT, 0U, 0U, live_id, 0xFFFFFFFFU);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_BODY_LEN);
}

PBX_TEST(ipc_frame_status_caps_and_id_rules)
{
    uint8_t b[64];
    pbx_ipc_frame f;
    memset(b, 0, sizeof(b));
    /* A request with a status. */
    put_header(b, PBX_IPC_OP_DECISION, 1U, 0U, live_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_STATUS);
    /* An error reply with a body, or with a capability. */
    put_header(b, REPLY(PBX_IPC_OP_BEGIN), 0x0301U, 0U, zero_id, 4U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H + 4U, 0, &f), PBX_E_IPC_STATUS);
    put_header(b, REPLY(PBX_IPC_OP_RESOLVE), 0x0301U, 1U, live_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 1, &f), PBX_E_IPC_STATUS);
    /* An error reply echoes any identity. */
    put_header(b, REPLY(PBX_IPC_OP_BEGIN), 0x0301U, 0U, zero_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_OK);
    /* Capability counts outside the table. */
    put_header(b, PBX_IPC_OP_COMMIT, 0U, 0U, live_id, 8U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H + 8U, 0, &f),
                 PBX_E_IPC_CAP_PARTITION);
    put_header(b, PBX_IPC_OP_COMMIT, 0U, 2U, live_id, 8U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H + 8U, 2, &f),
                 PBX_E_IPC_CAP_PARTITION);
    put_header(b, PBX_IPC_OP_BEGIN, 0U, 1U, zero_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 1, &f), PBX_E_IPC_CAP_PARTITION);
    put_header(b, REPLY(PBX_IPC_OP_INSTALL), 0U, 0U, live_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_CAP_PARTITION);
    /* Request identity rules. */
    put_header(b, PBX_IPC_OP_BEGIN, 0U, 0U, live_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_REQUEST_ID);
    pbx_ipc_id idx_only = {5U, 0U};
    put_header(b, PBX_IPC_OP_BEGIN, 0U, 0U, idx_only, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_REQUEST_ID);
    put_header(b, PBX_IPC_OP_DECISION, 0U, 0U, idx_only, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_REQUEST_ID);
    put_header(b, PBX_IPC_OP_CONSUME, 0U, 0U, live_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_REQUEST_ID);
    put_header(b, PBX_IPC_OP_CANCEL, 0U, 0U, idx_only, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_REQUEST_ID);
    put_header(b, PBX_IPC_OP_CANCEL, 0U, 0U, zero_id, 0U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_OK);
    put_header(b, REPLY(PBX_IPC_OP_BEGIN), 0U, 0U, zero_id, 4U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H + 4U, 0, &f), PBX_E_IPC_REQUEST_ID);
}

PBX_TEST(ipc_status_reply_encode)
{
    uint8_t b[64];
    size_t len = 0;
    pbx_ipc_frame f;
    PBX_CHECK_EQ(pbx_ipc_status_reply_encode(PBX_IPC_OP_BEGIN, zero_id,
                                             PBX_E_IPC_BOUND, b, sizeof(b),
                                             &len),
                 PBX_OK);
    PBX_CHECK_EQ(len, PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, len, 0, &f), PBX_OK);
    PBX_CHECK_EQ(f.op, REPLY(PBX_IPC_OP_BEGIN));
    PBX_CHECK_EQ(f.status, PBX_E_IPC_BOUND);
    /* A record decoder refuses an error reply. */
    pbx_ipc_begin_reply br;
    PBX_CHECK_EQ(pbx_ipc_begin_reply_decode(&f, &br), PBX_E_IPC_STATUS);
    PBX_CHECK_EQ(pbx_ipc_empty_decode(&f, REPLY(PBX_IPC_OP_SELECTOR)),
                 PBX_E_IPC_OP_MISMATCH);
    PBX_CHECK_EQ(pbx_ipc_status_reply_encode(PBX_IPC_OP_WAKE, live_id,
                                             PBX_E_IPC_BOUND, b, sizeof(b),
                                             &len),
                 PBX_E_IPC_UNKNOWN_OP);
    PBX_CHECK_EQ(pbx_ipc_status_reply_encode(REPLY(PBX_IPC_OP_BEGIN), live_id,
                                             PBX_E_IPC_BOUND, b, sizeof(b),
                                             &len),
                 PBX_E_IPC_UNKNOWN_OP);
    PBX_CHECK_EQ(pbx_ipc_status_reply_encode(PBX_IPC_OP_BEGIN, live_id, PBX_OK,
                                             b, sizeof(b), &len),
                 PBX_E_IPC_STATUS);
    PBX_CHECK_EQ(pbx_ipc_status_reply_encode(PBX_IPC_OP_BEGIN, live_id,
                                             PBX_E_IPC_BOUND, b, H - 1U, &len),
                 PBX_E_IPC_NO_SPACE);
}

PBX_TEST(ipc_empty_records)
{
    static const uint16_t ok_ops[] = {
        PBX_IPC_OP_DECISION,       REPLY(PBX_IPC_OP_SELECTOR),
        REPLY(PBX_IPC_OP_COMMIT),  REPLY(PBX_IPC_OP_CANCEL),
        REPLY(PBX_IPC_OP_CONSUME), REPLY(PBX_IPC_OP_EXPIRE),
        REPLY(PBX_IPC_OP_PROMPT),
    };
    uint8_t b[64];
    size_t len = 0;
    pbx_ipc_frame f;
    for (size_t i = 0; i < PBX_ARRAY_LEN(ok_ops); i++) {
        pbx_ipc_op_rule row;
        PBX_REQUIRE(pbx_ipc_op_rule_get(ok_ops[i], &row) == PBX_OK);
        pbx_ipc_id id = row.id_rule == PBX_IPC_ID_ZERO ? zero_id : live_id;
        PBX_CHECK_EQ(pbx_ipc_empty_encode(ok_ops[i], id, b, sizeof(b), &len),
                     PBX_OK);
        PBX_CHECK_EQ(len, PBX_IPC_HEADER_BYTES);
        PBX_CHECK_EQ(pbx_ipc_frame_decode(b, len, 0, &f), PBX_OK);
        PBX_CHECK_EQ(pbx_ipc_empty_decode(&f, ok_ops[i]), PBX_OK);
    }
    PBX_CHECK_EQ(
        pbx_ipc_empty_encode(PBX_IPC_OP_BEGIN, zero_id, b, sizeof(b), &len),
        PBX_E_IPC_OP_MISMATCH);
    PBX_CHECK_EQ(
        pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, zero_id, b, sizeof(b), &len),
        PBX_E_IPC_REQUEST_ID);
    /* A DECISION request with a body is trailing; another op mismatches. */
    put_header(b, PBX_IPC_OP_DECISION, 0U, 0U, live_id, 1U);
    b[H] = 0U;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, H + 1U, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_empty_decode(&f, PBX_IPC_OP_DECISION),
                 PBX_E_IPC_TRAILING);
    PBX_CHECK_EQ(pbx_ipc_empty_decode(&f, REPLY(PBX_IPC_OP_COMMIT)),
                 PBX_E_IPC_OP_MISMATCH);
    pbx_ipc_wake w;
    PBX_CHECK_EQ(pbx_ipc_wake_decode(&f, &w), PBX_E_IPC_OP_MISMATCH);
}

PBX_TEST(ipc_admission_rule)
{
    for (uint16_t op = 1; op <= 7U; op++) {
        for (uint16_t cls = 1; cls <= 5U; cls++) {
            for (uint8_t life = 1; life <= 3U; life++) {
                bool entry = op == PBX_IPC_OPERATION_ENTRY_METADATA_READ ||
                             op == PBX_IPC_OPERATION_ENTRY_TOUCH;
                bool dir_entry = cls == PBX_IPC_CLASS_DIRECTORY_ENTRY;
                bool exact = entry && life == PBX_IPC_LIFETIME_ONE_SHOT;
                bool bad_create =
                    op == PBX_IPC_OPERATION_CREATE && cls != PBX_IPC_CLASS_FILE;
                pbx_err want =
                    dir_entry ? (exact ? PBX_OK : PBX_E_IPC_DIR_ENTRY_WIDENED)
                    : entry || bad_create ? PBX_E_IPC_ADMISSION
                                          : PBX_OK;
                PBX_CHECK_EQ(pbx_ipc_admission_check(op, cls, life), want);
            }
        }
    }
    PBX_CHECK(pbx_ipc_operation_known(PBX_IPC_OPERATION_ENTRY_TOUCH));
    PBX_CHECK(!pbx_ipc_operation_known(0U));
    PBX_CHECK(pbx_ipc_operation_known(PBX_IPC_OPERATION_CREATE));
    PBX_CHECK(!pbx_ipc_operation_known(8U));
    PBX_CHECK(pbx_ipc_class_known(PBX_IPC_CLASS_ENDPOINT));
    PBX_CHECK(!pbx_ipc_class_known(6U));
    PBX_CHECK(pbx_ipc_lifetime_known(PBX_IPC_LIFETIME_JOB));
    PBX_CHECK(!pbx_ipc_lifetime_known(0U));
}

/* A valid one-shot directory-entry BEGIN in runtime-reply mode. */
static void entry_begin(pbx_ipc_begin *r)
{
    memset(r, 0, sizeof(*r));
    r->ctx.session = 1U;
    r->ctx.job_id = 2U;
    r->ctx.job_gen = 3U;
    r->ctx.realm = 4U;
    r->ctx.operation = PBX_IPC_OPERATION_ENTRY_TOUCH;
    r->ctx.object_class = PBX_IPC_CLASS_DIRECTORY_ENTRY;
    r->ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    r->ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    r->ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    r->ctx.entry.len = 1U;
    r->ctx.entry.bytes[0] = 'x';
    r->selector_len = PBX_IPC_SELECTOR_LEN_BYTES_MAX;
}

PBX_TEST(ipc_begin_entry_request_and_encoder_refusals)
{
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    size_t len = 0;
    pbx_ipc_frame f;
    pbx_ipc_begin r;
    pbx_ipc_begin out;
    entry_begin(&r);
    PBX_REQUIRE(pbx_ipc_begin_encode(&r, b, sizeof(b), &len) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_begin_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.ctx.operation, PBX_IPC_OPERATION_ENTRY_TOUCH);
    PBX_CHECK_EQ(out.label.len, 0U);
    PBX_CHECK_EQ(out.selector_len, PBX_IPC_SELECTOR_LEN_BYTES_MAX);
    /* Encoders refuse what decoders would refuse, and write no length. */
    size_t keep = 999U;
    r.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    PBX_CHECK_EQ(pbx_ipc_begin_encode(&r, b, sizeof(b), &keep),
                 PBX_E_IPC_DIR_ENTRY_WIDENED);
    r.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    r.ctx.entry.len = PBX_IPC_ENTRY_LEN_BYTES_MAX + 1U;
    PBX_CHECK_EQ(pbx_ipc_begin_encode(&r, b, sizeof(b), &keep),
                 PBX_E_IPC_BOUND);
    r.ctx.entry.len = 1U;
    r.label.len = PBX_IPC_LABEL_LEN_BYTES_MAX + 1U;
    PBX_CHECK_EQ(pbx_ipc_begin_encode(&r, b, sizeof(b), &keep),
                 PBX_E_IPC_BOUND);
    PBX_CHECK_EQ(keep, 999U);
    pbx_ipc_selector s = {0U, PBX_IPC_SELECTOR_CHUNK_BYTES_MAX + 1U, b};
    PBX_CHECK_EQ(pbx_ipc_selector_encode(live_id, &s, b, sizeof(b), &keep),
                 PBX_E_IPC_BOUND);
    pbx_ipc_selector s0 = {0U, 0U, NULL};
    PBX_CHECK_EQ(pbx_ipc_selector_encode(live_id, &s0, b, sizeof(b), &keep),
                 PBX_E_IPC_BOUND);
    pbx_ipc_decision d = {PBX_IPC_OUTCOME_DENIED, 0U, {1U, 1U}, 0U, 0U};
    PBX_CHECK_EQ(
        pbx_ipc_decision_reply_encode(live_id, &d, b, sizeof(b), &keep),
        PBX_E_IPC_OUTCOME_FIELDS);
    pbx_ipc_prompt_reply pr;
    memset(&pr, 0, sizeof(pr));
    pr.retry = true;
    pr.answer = PBX_IPC_ANSWER_APPROVE;
    PBX_CHECK_EQ(pbx_ipc_prompt_reply_encode(live_id, &pr, b, sizeof(b), &keep),
                 PBX_E_IPC_OUTCOME_FIELDS);
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = live_id;
    c.job_gen = 1U;
    PBX_CHECK_EQ(pbx_ipc_cancel_encode(&c, b, sizeof(b), &keep),
                 PBX_E_IPC_OUTCOME_FIELDS);
    PBX_CHECK_EQ(pbx_ipc_consume_encode(&(pbx_ipc_consume){{1U, 0U}}, b,
                                        sizeof(b), &keep),
                 PBX_E_IPC_GENERATION);
    PBX_CHECK_EQ(keep, 999U);
}

PBX_TEST(ipc_cancel_forms_and_hand_built_frames)
{
    uint8_t b[64];
    size_t len = 0;
    pbx_ipc_frame f;
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.by_correlation = true;
    c.job_gen = 4U;
    c.session = 8U;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, b, sizeof(b), &len) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    pbx_ipc_cancel out;
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_OK);
    PBX_CHECK(out.by_correlation);
    PBX_CHECK_EQ(out.session, 8U);
    PBX_CHECK_EQ(out.job_gen, 4U);
    /* A frame built by hand (not through frame_decode) is still checked. */
    f.request.index = 9U;
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_E_IPC_REQUEST_ID);
    f.request.index = 0U;
    f.cap_count = 1U;
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_E_IPC_CAP_PARTITION);
    f.cap_count = 0U;
    f.status = 5U;
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_E_IPC_STATUS);
}

/* Record decoders trust pbx_ipc_frame_decode's proof instead of looking
 * the partition row up again (issue 23 item 5): a frame built by hand
 * carries no proof and is refused even when its fields are valid, a
 * decoded frame changed by hand loses its proof, and a copy of a decoded
 * frame keeps it. */
PBX_TEST(ipc_body_decoders_refuse_frames_not_from_frame_decode)
{
    uint8_t b[64];
    size_t len = 0;
    pbx_ipc_frame f;
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, live_id, b, sizeof(b),
                                     &len) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK(f.proven != 0U);
    pbx_ipc_frame copy = f;
    PBX_CHECK_EQ(pbx_ipc_empty_decode(&copy, PBX_IPC_OP_DECISION), PBX_OK);
    pbx_ipc_frame hand;
    memset(&hand, 0, sizeof(hand));
    hand.op = PBX_IPC_OP_DECISION;
    hand.request = live_id;
    PBX_CHECK_EQ(pbx_ipc_empty_decode(&hand, PBX_IPC_OP_DECISION),
                 PBX_E_IPC_CAP_PARTITION);
    /* A COMMIT decoded with its one capability, then told it has none. */
    pbx_ipc_commit c = {7U};
    PBX_REQUIRE(pbx_ipc_commit_encode(live_id, &c, b, sizeof(b), &len) ==
                PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 1U, &f) == PBX_OK);
    pbx_ipc_commit out;
    PBX_CHECK_EQ(pbx_ipc_commit_decode(&f, &out), PBX_OK);
    f.cap_count = 0U;
    PBX_CHECK_EQ(pbx_ipc_commit_decode(&f, &out), PBX_E_IPC_CAP_PARTITION);
    /* The proof keeps op, capability count and its mark apart: a count
     * whose top bit would land on the mark, or a request op and count
     * that would read as the reply op, is no proof. */
    PBX_REQUIRE(pbx_ipc_empty_encode(REPLY(PBX_IPC_OP_COMMIT), live_id, b,
                                     sizeof(b), &len) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    pbx_ipc_frame big = f;
    big.cap_count = 0x8000U;
    PBX_CHECK_EQ(pbx_ipc_empty_decode(&big, REPLY(PBX_IPC_OP_COMMIT)),
                 PBX_E_IPC_CAP_PARTITION);
    f.op = PBX_IPC_OP_COMMIT;
    f.cap_count = 1U;
    PBX_CHECK_EQ(pbx_ipc_commit_decode(&f, &out), PBX_E_IPC_CAP_PARTITION);
    /* An error reply decodes but proves nothing for a record. */
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_COMMIT, live_id,
                                            PBX_E_IPC_STATUS, b, sizeof(b),
                                            &len) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(f.proven, 0U);
}

PBX_TEST(ipc_cancel_grant_form)
{
    uint8_t b[64];
    size_t len = 0;
    pbx_ipc_frame f;
    pbx_ipc_cancel c;
    pbx_ipc_cancel out;
    memset(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant.index = 5U;
    c.grant.gen = 9U;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, b, sizeof(b), &len) == PBX_OK);
    PBX_CHECK_EQ(len, PBX_IPC_HEADER_BYTES + PBX_IPC_CANCEL_BYTES);
    /* The header carries the grant identity; the body only the flag. */
    PBX_CHECK_EQ(pbx_le_get32(b + 12), 5U);
    PBX_CHECK_EQ(pbx_le_get32(b + 16), 9U);
    PBX_CHECK_EQ(b[PBX_IPC_HEADER_BYTES + 20U], PBX_IPC_CANCEL_F_GRANT);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_OK);
    PBX_CHECK(out.by_grant);
    PBX_CHECK(!out.by_correlation);
    PBX_CHECK_EQ(out.grant.index, 5U);
    PBX_CHECK_EQ(out.grant.gen, 9U);
    PBX_CHECK_EQ(out.request.gen, 0U);
    /* A zero grant generation is never an exact grant. */
    f.request.gen = 0U;
    f.request.index = 0U;
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_E_IPC_GENERATION);
    c.grant.gen = 0U;
    size_t keep = 999U;
    PBX_CHECK_EQ(pbx_ipc_cancel_encode(&c, b, sizeof(b), &keep),
                 PBX_E_IPC_REQUEST_ID);
    /* The grant and correlation forms exclude each other. */
    c.grant.gen = 9U;
    c.by_correlation = true;
    c.job_gen = 1U;
    PBX_CHECK_EQ(pbx_ipc_cancel_encode(&c, b, sizeof(b), &keep),
                 PBX_E_IPC_REQUEST_ID);
    /* A zero-initialised record is still the exact request form. */
    memset(&c, 0, sizeof(c));
    c.request.index = 2U;
    c.request.gen = 3U;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, b, sizeof(b), &len) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_OK);
    PBX_CHECK(!out.by_grant);
    PBX_CHECK_EQ(out.request.gen, 3U);
    PBX_CHECK_EQ(keep, 999U);
}

PBX_TEST(ipc_begin_invocation_id_follows_lifetime)
{
    static const uint8_t sel[] = "x";
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    size_t len = 0;
    size_t keep = 999U;
    pbx_ipc_frame f;
    pbx_ipc_begin r;
    pbx_ipc_begin out;
    memset(&r, 0, sizeof(r));
    r.ctx.job_gen = 1U;
    r.ctx.operation = PBX_IPC_OPERATION_READ;
    r.ctx.object_class = PBX_IPC_CLASS_FILE;
    r.ctx.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    r.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    r.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    r.ctx.entry.len = 1U;
    r.ctx.entry.bytes[0] = 'e';
    r.selector_len = sizeof(sel) - 1U;
    /* INVOCATION without an invocation id is refused. */
    PBX_CHECK_EQ(pbx_ipc_begin_encode(&r, b, sizeof(b), &keep),
                 PBX_E_IPC_OUTCOME_FIELDS);
    r.invocation_id = 77U;
    PBX_REQUIRE(pbx_ipc_begin_encode(&r, b, sizeof(b), &len) == PBX_OK);
    PBX_CHECK_EQ(len, PBX_IPC_HEADER_BYTES + 96U + 1U);
    PBX_CHECK_EQ(pbx_le_get64(b + PBX_IPC_HEADER_BYTES + 88U), 77U);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_begin_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.invocation_id, 77U);
    /* Any other lifetime carries none. */
    r.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    PBX_CHECK_EQ(pbx_ipc_begin_encode(&r, b, sizeof(b), &keep),
                 PBX_E_IPC_OUTCOME_FIELDS);
    PBX_CHECK_EQ(keep, 999U);
}

PBX_TEST(ipc_resolve_found_needs_its_capability)
{
    uint8_t b[128];
    size_t len = 0;
    pbx_ipc_frame f;
    pbx_ipc_resolve_reply r;
    memset(&r, 0, sizeof(r));
    r.result = PBX_IPC_RESOLVE_NOT_FOUND;
    r.object_class = PBX_IPC_CLASS_FILE;
    r.operation = PBX_IPC_OPERATION_READ;
    PBX_REQUIRE(pbx_ipc_resolve_reply_encode(live_id, &r, b, sizeof(b), &len) ==
                PBX_OK);
    /* NOT_FOUND with a capability attached is a partition violation. */
    pbx_le_put16(b + 10, 1U);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 1, &f) == PBX_OK);
    pbx_ipc_resolve_reply out;
    PBX_CHECK_EQ(pbx_ipc_resolve_reply_decode(&f, &out),
                 PBX_E_IPC_CAP_PARTITION);
    /* DENIED likewise. */
    b[H] = PBX_IPC_RESOLVE_DENIED;
    pbx_le_put16(b + H + 2U, 0U);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 1, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_resolve_reply_decode(&f, &out),
                 PBX_E_IPC_CAP_PARTITION);
    /* The decoder reports a STAGING handle; rejecting it is the core's. */
    pbx_ipc_install_reply ir = {PBX_IPC_HANDLE_STAGING, 1U, {1U, 1U}, 1U, 1U};
    PBX_REQUIRE(pbx_ipc_install_reply_encode(live_id, &ir, b, sizeof(b),
                                             &len) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 1, &f) == PBX_OK);
    pbx_ipc_install_reply iout;
    PBX_CHECK_EQ(pbx_ipc_install_reply_decode(&f, &iout), PBX_OK);
    PBX_CHECK_EQ(iout.handle_kind, PBX_IPC_HANDLE_STAGING);
}

/* ---- version 2 header: seq and the reserved word ------------------------ */

PBX_TEST(ipc_seq_round_trips_and_is_patched_in_place)
{
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    size_t len = 0;
    pbx_ipc_frame f;
    pbx_ipc_detach d = {{0x1122334455667788ULL, 9U}};
    PBX_REQUIRE(pbx_ipc_detach_reply_encode(live_id, &d, b, sizeof(b), &len) ==
                PBX_OK);
    /* Every encoder writes seq 0. */
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(f.seq, 0U);
    uint32_t seq = 1U;
    PBX_CHECK_EQ(pbx_ipc_frame_peek_seq(b, len, &seq), PBX_OK);
    PBX_CHECK_EQ(seq, 0U);
    static const uint32_t seqs[] = {1U, 0x80000000U, 0xDEADBEEFU, UINT32_MAX};
    for (size_t i = 0; i < PBX_ARRAY_LEN(seqs); i++) {
        uint8_t before[PBX_IPC_FRAME_BYTES_MAX];
        memcpy(before, b, len);
        PBX_CHECK_EQ(pbx_ipc_frame_set_seq(b, len, seqs[i]), PBX_OK);
        /* Little-endian at offset 24; nothing else changes. */
        PBX_CHECK_EQ(pbx_le_get32(b + 24), seqs[i]);
        PBX_CHECK_MEM(b, before, 24U);
        PBX_CHECK_MEM(b + 28, before + 28, len - 28U);
        PBX_CHECK_EQ(pbx_ipc_frame_peek_seq(b, len, &seq), PBX_OK);
        PBX_CHECK_EQ(seq, seqs[i]);
        PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
        PBX_CHECK_EQ(f.seq, seqs[i]);
        pbx_ipc_detach out;
        PBX_CHECK_EQ(pbx_ipc_detach_reply_decode(&f, &out), PBX_OK);
        PBX_CHECK_EQ(out.object.id, d.object.id);
    }
    /* An error reply echoes the seq through set_seq after encoding. */
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_DETACH, live_id,
                                            PBX_E_IPC_BOUND, b, sizeof(b),
                                            &len) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_frame_set_seq(b, len, 77U), PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(f.seq, 77U);
    PBX_CHECK_EQ(f.status, PBX_E_IPC_BOUND);
    /* Any seq in a request: the decoder never judges it. */
    put_header(b, PBX_IPC_OP_DECISION, 0U, 0U, live_id, 0U);
    pbx_le_put32(b + 24, UINT32_MAX);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_OK);
    PBX_CHECK_EQ(f.seq, UINT32_MAX);
}

PBX_TEST(ipc_set_and_peek_seq_need_a_whole_header)
{
    uint8_t b[H];
    uint32_t seq = 42U;
    memset(b, 0xAB, sizeof(b));
    for (size_t len = 0; len < H; len++) {
        const uint8_t *p = len == 0U ? NULL : b;
        PBX_CHECK_EQ(pbx_ipc_frame_peek_seq(p, len, &seq), PBX_E_IPC_TRUNCATED);
        PBX_CHECK_EQ(seq, 42U);
        PBX_CHECK_EQ(pbx_ipc_frame_set_seq(len == 0U ? NULL : b, len, 1U),
                     PBX_E_IPC_TRUNCATED);
    }
    /* Nothing was written by the refused calls. */
    for (size_t i = 0; i < H; i++) {
        PBX_CHECK_EQ(b[i], 0xABU);
    }
    /* peek_seq reads garbage headers too: it checks nothing else. */
    PBX_CHECK_EQ(pbx_ipc_frame_peek_seq(b, H, &seq), PBX_OK);
    PBX_CHECK_EQ(seq, 0xABABABABU);
    PBX_CHECK_EQ(pbx_ipc_frame_set_seq(b, H, 5U), PBX_OK);
    PBX_CHECK_EQ(pbx_le_get32(b + 24), 5U);
    PBX_CHECK_EQ(b[23], 0xABU);
    PBX_CHECK_EQ(b[28], 0xABU);
}

PBX_TEST(ipc_header_v2_layout_reserved_and_every_truncation)
{
    uint8_t b[64];
    pbx_ipc_frame f;
    PBX_CHECK_EQ(PBX_IPC_HEADER_BYTES, 32U);
    PBX_CHECK_EQ(PBX_IPC_VERSION, 2U);
    PBX_CHECK_EQ(PBX_IPC_SEQ_OFFSET, 24U);
    PBX_CHECK_EQ(PBX_IPC_RESERVED_OFFSET, 28U);
    PBX_CHECK_EQ(PBX_IPC_FRAME_BYTES_MAX, 4608U);
    memset(b, 0, sizeof(b));
    put_header(b, PBX_IPC_OP_DECISION, 0U, 0U, live_id, 0U);
    pbx_le_put32(b + 24, 0x01020304U);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, H, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(f.seq, 0x01020304U);
    /* Every shorter length is TRUNCATED, whatever the header says. */
    for (size_t len = 0; len < H; len++) {
        PBX_CHECK_EQ(pbx_ipc_frame_decode(len == 0U ? NULL : b, len, 0, &f),
                     PBX_E_IPC_TRUNCATED);
    }
    /* Each byte of the reserved word, alone, is refused. */
    for (size_t i = 0; i < 4U; i++) {
        put_header(b, PBX_IPC_OP_DECISION, 0U, 0U, live_id, 0U);
        b[28U + i] = 1U;
        PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_RESERVED);
    }
    /* In an error reply too, and before the capability count. */
    put_header(b, REPLY(PBX_IPC_OP_DETACH), 0x0301U, 0U, live_id, 0U);
    pbx_le_put32(b + 28, 0x80000000U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 1, &f), PBX_E_IPC_RESERVED);
    /* A version 1 frame (24-byte header) is refused by its version. */
    put_header(b, PBX_IPC_OP_DECISION, 0U, 0U, live_id, 0U);
    pbx_le_put16(b + 4, 1U);
    pbx_le_put32(b + 20, 8U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_VERSION);
}

/* ---- WITHDRAW ----------------------------------------------------------- */

PBX_TEST(ipc_withdraw_round_trips_and_every_malformed_form)
{
    uint8_t b[64];
    size_t len = 0;
    pbx_ipc_frame f;
    pbx_ipc_withdraw w = {{0x0A0B0C0D01020304ULL, 6U}};
    pbx_ipc_withdraw out;
    PBX_CHECK_EQ(PBX_IPC_OP_WITHDRAW, 0x0204);
    PBX_REQUIRE(pbx_ipc_withdraw_encode(live_id, &w, b, sizeof(b), &len) ==
                PBX_OK);
    PBX_CHECK_EQ(len, H + PBX_IPC_WITHDRAW_BYTES);
    PBX_CHECK_EQ(pbx_le_get16(b + 6), 0x0204U);
    PBX_CHECK_EQ(pbx_le_get16(b + 10), 0U);
    PBX_CHECK_EQ(pbx_le_get64(b + H), w.object.id);
    PBX_CHECK_EQ(pbx_le_get32(b + H + 8U), 6U);
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_withdraw_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.object.id, w.object.id);
    PBX_CHECK_EQ(out.object.gen, w.object.gen);
    /* The request decoder refuses the reply and the reverse. */
    PBX_CHECK_EQ(pbx_ipc_withdraw_reply_decode(&f, &out),
                 PBX_E_IPC_OP_MISMATCH);
    pbx_ipc_detach dd;
    PBX_CHECK_EQ(pbx_ipc_detach_decode(&f, &dd), PBX_E_IPC_OP_MISMATCH);
    /* Header rules: a live request id, no capability, no status. */
    PBX_CHECK_EQ(pbx_ipc_withdraw_encode(zero_id, &w, b, sizeof(b), &len),
                 PBX_E_IPC_REQUEST_ID);
    pbx_ipc_id idx_only = {4U, 0U};
    PBX_CHECK_EQ(pbx_ipc_withdraw_encode(idx_only, &w, b, sizeof(b), &len),
                 PBX_E_IPC_REQUEST_ID);
    PBX_REQUIRE(pbx_ipc_withdraw_encode(live_id, &w, b, sizeof(b), &len) ==
                PBX_OK);
    pbx_le_put16(b + 10, 1U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, len, 1, &f), PBX_E_IPC_CAP_PARTITION);
    pbx_le_put16(b + 10, 0U);
    pbx_le_put16(b + 8, 1U);
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, len, 0, &f), PBX_E_IPC_STATUS);
    pbx_le_put16(b + 8, 0U);
    /* Body: zero object generation, nonzero reserved, short, long. */
    pbx_ipc_withdraw w0 = {{1U, 0U}};
    size_t keep = 999U;
    PBX_CHECK_EQ(pbx_ipc_withdraw_encode(live_id, &w0, b, sizeof(b), &keep),
                 PBX_E_IPC_GENERATION);
    PBX_CHECK_EQ(
        pbx_ipc_withdraw_reply_encode(live_id, &w0, b, sizeof(b), &keep),
        PBX_E_IPC_GENERATION);
    PBX_CHECK_EQ(keep, 999U);
    PBX_REQUIRE(pbx_ipc_withdraw_encode(live_id, &w, b, sizeof(b), &len) ==
                PBX_OK);
    b[H + 13U] = 1U;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_withdraw_decode(&f, &out), PBX_E_IPC_RESERVED);
    b[H + 13U] = 0U;
    for (uint32_t body = 0; body < PBX_IPC_WITHDRAW_BYTES + 2U; body++) {
        if (body == PBX_IPC_WITHDRAW_BYTES) {
            continue;
        }
        pbx_le_put32(b + 20, body);
        b[H + PBX_IPC_WITHDRAW_BYTES] = 0U;
        b[H + PBX_IPC_WITHDRAW_BYTES + 1U] = 0U;
        PBX_REQUIRE(pbx_ipc_frame_decode(b, H + body, 0, &f) == PBX_OK);
        PBX_CHECK_EQ(pbx_ipc_withdraw_decode(&f, &out),
                     body < PBX_IPC_WITHDRAW_BYTES ? PBX_E_IPC_TRUNCATED
                                                   : PBX_E_IPC_TRAILING);
    }
    /* The acknowledgement echoes the same 16 bytes. */
    uint8_t r[64];
    PBX_REQUIRE(pbx_ipc_withdraw_reply_encode(live_id, &w, r, sizeof(r),
                                              &len) == PBX_OK);
    PBX_CHECK_EQ(pbx_le_get16(r + 6), 0x8204U);
    PBX_CHECK_MEM(r + H, b + H, PBX_IPC_WITHDRAW_BYTES);
    PBX_REQUIRE(pbx_ipc_frame_decode(r, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_withdraw_reply_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.object.gen, 6U);
    /* An error reply to WITHDRAW is a frame, never a record. */
    PBX_REQUIRE(pbx_ipc_status_reply_encode(PBX_IPC_OP_WITHDRAW, live_id,
                                            PBX_E_IPC_BOUND, r, sizeof(r),
                                            &len) == PBX_OK);
    PBX_REQUIRE(pbx_ipc_frame_decode(r, len, 0, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_withdraw_reply_decode(&f, &out), PBX_E_IPC_STATUS);
    PBX_CHECK_EQ(pbx_ipc_withdraw_encode(live_id, &w, r, H + 15U, &keep),
                 PBX_E_IPC_NO_SPACE);
}

/* ---- DECISION reason ---------------------------------------------------- */

PBX_TEST(ipc_decision_reason_only_when_denied)
{
    uint8_t b[64];
    size_t len = 0;
    pbx_ipc_frame f;
    pbx_ipc_decision_reply out;
    for (uint8_t outcome = 1; outcome <= 5U; outcome++) {
        for (uint16_t reason = 0; reason <= 10U; reason++) {
            pbx_ipc_decision d;
            memset(&d, 0, sizeof(d));
            d.outcome = outcome;
            d.reason = reason;
            if (outcome == PBX_IPC_OUTCOME_APPROVED) {
                d.mode = PBX_IPC_MODE_INSTALL;
                d.grant = live_id;
            }
            pbx_err want = PBX_OK;
            if (reason > PBX_IPC_REASON_INSTALLER_LOST) {
                want = PBX_E_IPC_DISCRIMINANT;
            } else if (reason != 0U && outcome != PBX_IPC_OUTCOME_DENIED) {
                want = PBX_E_IPC_OUTCOME_FIELDS;
            }
            PBX_CHECK_EQ(
                pbx_ipc_decision_reply_encode(live_id, &d, b, sizeof(b), &len),
                want);
            if (want != PBX_OK) {
                continue;
            }
            PBX_CHECK_EQ(pbx_le_get16(b + H + 2U), reason);
            PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
            PBX_CHECK_EQ(pbx_ipc_decision_reply_decode(&f, &out), PBX_OK);
            PBX_CHECK_EQ(out.reason, reason);
            PBX_CHECK_EQ(out.outcome, outcome);
        }
    }
    PBX_CHECK_EQ(PBX_IPC_REASON_NONE, 0);
    PBX_CHECK_EQ(PBX_IPC_REASON_POLICY, 1);
    PBX_CHECK_EQ(PBX_IPC_REASON_USER, 2);
    PBX_CHECK_EQ(PBX_IPC_REASON_PROMPT_TIMEOUT, 3);
    PBX_CHECK_EQ(PBX_IPC_REASON_PEER_TIMEOUT, 4);
    PBX_CHECK_EQ(PBX_IPC_REASON_PEER_FAILED, 5);
    PBX_CHECK_EQ(PBX_IPC_REASON_RESOLVE, 6);
    PBX_CHECK_EQ(PBX_IPC_REASON_PROVIDER_LOST, 7);
    PBX_CHECK_EQ(PBX_IPC_REASON_INSTALLER_LOST, 8);
}

/* ---- the directory-entry class is never widened ------------------------- */

PBX_TEST(ipc_dir_entry_class_only_exact_one_shot_entry_operations)
{
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    size_t len = 0;
    pbx_ipc_frame f;
    pbx_ipc_begin r;
    pbx_ipc_begin out;
    size_t accepted = 0;
    /* Hand-built BEGIN frames: a valid one-shot entry request with the
     * operation and lifetime rewritten (the encoder would refuse them). */
    for (uint16_t op = 1; op <= 6U; op++) {
        for (uint8_t life = 1; life <= 3U; life++) {
            entry_begin(&r);
            PBX_REQUIRE(pbx_ipc_begin_encode(&r, b, sizeof(b), &len) == PBX_OK);
            pbx_le_put16(b + H + 44U, op);
            b[H + 48U] = life;
            /* An INVOCATION names its invocation, so only the triple can
             * be what is refused. */
            pbx_le_put64(b + H + 88U,
                         life == PBX_IPC_LIFETIME_INVOCATION ? 9U : 0U);
            PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0, &f) == PBX_OK);
            bool exact = (op == PBX_IPC_OPERATION_ENTRY_METADATA_READ ||
                          op == PBX_IPC_OPERATION_ENTRY_TOUCH) &&
                         life == PBX_IPC_LIFETIME_ONE_SHOT;
            pbx_err got = pbx_ipc_begin_decode(&f, &out);
            PBX_CHECK_EQ(got, exact ? PBX_OK : PBX_E_IPC_DIR_ENTRY_WIDENED);
            accepted += got == PBX_OK ? 1U : 0U;
            /* The encoder agrees with the decoder. */
            r.ctx.operation = op;
            r.ctx.lifetime = life;
            r.invocation_id = life == PBX_IPC_LIFETIME_INVOCATION ? 9U : 0U;
            PBX_CHECK_EQ(pbx_ipc_begin_encode(&r, b, sizeof(b), &len), got);
        }
    }
    PBX_CHECK_EQ(accepted, 2U);
}

/* pbx_ipc_frame_decode defines every field on every path (ipc/pbx_ipc.h)
 * without clearing what it writes next: a frame too short for a header
 * leaves a zeroed record; any longer one has every field read from its
 * header before the first check, so a refusal leaves no stale field
 * behind and proven is 0 (make eva relies on every field being defined). */
/* True when every byte of the frame record, padding included, is zero. */
static bool frame_bytes_zero(const pbx_ipc_frame *f)
{
    const uint8_t *p = (const uint8_t *)f;
    for (size_t i = 0; i < sizeof(*f); i++) {
        if (p[i] != 0U) {
            return false;
        }
    }
    return true;
}

PBX_TEST(ipc_frame_decode_defines_every_field_on_refusal)
{
    uint8_t b[PBX_IPC_HEADER_BYTES];
    pbx_ipc_frame f;
    memset(b, 0, sizeof(b));
    put_header(b, PBX_IPC_OP_DECISION, 0U, 0U, live_id, 0U);
    memset(&f, 0xA5, sizeof(f));
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H - 1U, 0, &f), PBX_E_IPC_TRUNCATED);
    PBX_CHECK(frame_bytes_zero(&f));
    memset(&f, 0xA5, sizeof(f));
    b[0] = 'Q';
    PBX_CHECK_EQ(pbx_ipc_frame_decode(b, H, 0, &f), PBX_E_IPC_MAGIC);
    PBX_CHECK_EQ(f.op, PBX_IPC_OP_DECISION);
    PBX_CHECK_EQ(f.status, 0U);
    PBX_CHECK_EQ(f.cap_count, 0U);
    PBX_CHECK_EQ(f.request.index, live_id.index);
    PBX_CHECK_EQ(f.request.gen, live_id.gen);
    PBX_CHECK_EQ(f.seq, 0U);
    PBX_CHECK_EQ(f.body_len, 0U);
    PBX_CHECK(f.body == NULL);
    PBX_CHECK_EQ(f.proven, 0U);
    /* A header whose only fault comes last (the identity rule) is read
     * whole, body included, and still carries no proof. */
    uint8_t c[H + 4U];
    memset(c, 0, sizeof(c));
    put_header(c, PBX_IPC_OP_DECISION, 0U, 0U, (pbx_ipc_id){3U, 0U}, 4U);
    memset(&f, 0xA5, sizeof(f));
    PBX_CHECK_EQ(pbx_ipc_frame_decode(c, sizeof(c), 0, &f),
                 PBX_E_IPC_REQUEST_ID);
    PBX_CHECK_EQ(f.request.index, 3U);
    PBX_CHECK_EQ(f.body_len, 4U);
    PBX_CHECK(f.body == c + H);
    PBX_CHECK_EQ(f.proven, 0U);
}
