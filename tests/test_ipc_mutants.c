/*
 * test_ipc_mutants.c: codec rules that mutation testing (make mutate,
 * docs/TESTING.md) found unchecked: the request-identity rule of every
 * partition row, the status range of an error reply, the boundary
 * lengths a decoder must still accept, and encoders that must refuse a
 * record their own decoder would refuse (the encoder's self-check is the
 * only thing between a bad record and the wire).
 */
#include "../ipc/pbx_ipc.h"
#include "runner/pbx_test.h"

#include <string.h>

#define REPLY(op) ((uint16_t)((op) | PBX_IPC_REPLY_BIT))

static const pbx_ipc_id live_id = {7U, 3U};

/* The request-identity rule of each op, written out from docs/PBX1.md
 * independently of ipc/: BEGIN requests, CONSUME and EXPIRE carry no
 * identity; CANCEL may select by correlation (generation zero); every
 * other frame names an exact live request. WAKE has no reply (0). */
static const struct {
    uint16_t op;
    uint8_t request;
    uint8_t reply;
} id_rules[] = {
    {PBX_IPC_OP_BEGIN, PBX_IPC_ID_ZERO, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_SELECTOR, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_COMMIT, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_DECISION, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_CANCEL, PBX_IPC_ID_CANCEL, PBX_IPC_ID_CANCEL},
    {PBX_IPC_OP_CONSUME, PBX_IPC_ID_ZERO, PBX_IPC_ID_ZERO},
    {PBX_IPC_OP_EXPIRE, PBX_IPC_ID_ZERO, PBX_IPC_ID_ZERO},
    {PBX_IPC_OP_RESOLVE, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_DETACH, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_RETIRE, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_POLICY, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_PROMPT, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_VIEW, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_WITHDRAW, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_INSTALL, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_REVOKE, PBX_IPC_ID_LIVE, PBX_IPC_ID_LIVE},
    {PBX_IPC_OP_WAKE, PBX_IPC_ID_LIVE, 0U},
};

PBX_TEST(ipc_mutants_every_row_has_its_identity_rule)
{
    PBX_CHECK_EQ(PBX_ARRAY_LEN(id_rules), PBX_IPC_OP_COUNT);
    for (size_t i = 0; i < PBX_ARRAY_LEN(id_rules); i++) {
        pbx_ipc_op_rule row;
        PBX_REQUIRE(pbx_ipc_op_rule_get(id_rules[i].op, &row) == PBX_OK);
        PBX_CHECK_EQ(row.id_rule, id_rules[i].request);
        if (id_rules[i].reply == 0U) {
            continue;
        }
        PBX_REQUIRE(pbx_ipc_op_rule_get(REPLY(id_rules[i].op), &row) == PBX_OK);
        PBX_CHECK_EQ(row.id_rule, id_rules[i].reply);
    }
}

/* An error reply's status is a 16-bit wire field: the largest fits, the
 * next value is refused rather than truncated. */
PBX_TEST(ipc_mutants_status_reply_range_is_sixteen_bits)
{
    uint8_t b[PBX_IPC_HEADER_BYTES];
    size_t len = 999U;
    PBX_CHECK_EQ(pbx_ipc_status_reply_encode(PBX_IPC_OP_BEGIN, live_id,
                                             (pbx_err)0xFFFF, b, sizeof(b),
                                             &len),
                 PBX_OK);
    PBX_CHECK_EQ(len, PBX_IPC_HEADER_BYTES);
    len = 999U;
    PBX_CHECK_EQ(pbx_ipc_status_reply_encode(PBX_IPC_OP_BEGIN, live_id,
                                             (pbx_err)0x10000, b, sizeof(b),
                                             &len),
                 PBX_E_IPC_STATUS);
    PBX_CHECK_EQ(len, 999U);
}

/* A RESOLVE selector of exactly the largest length is accepted both
 * ways; one byte more is refused. */
PBX_TEST(ipc_mutants_resolve_selector_at_its_bound)
{
    static uint8_t sel[PBX_IPC_SELECTOR_LEN_BYTES_MAX + 1U];
    static uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    memset(sel, 'a', sizeof(sel));
    pbx_ipc_resolve r;
    memset(&r, 0, sizeof(r));
    r.operation = PBX_IPC_OPERATION_READ;
    r.object_class = PBX_IPC_CLASS_FILE;
    r.selector_len = PBX_IPC_SELECTOR_LEN_BYTES_MAX;
    r.selector = sel;
    size_t len = 0;
    PBX_REQUIRE(pbx_ipc_resolve_encode(live_id, &r, b, sizeof(b), &len) ==
                PBX_OK);
    pbx_ipc_frame f;
    pbx_ipc_resolve out;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_resolve_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.selector_len, PBX_IPC_SELECTOR_LEN_BYTES_MAX);
    r.selector_len = PBX_IPC_SELECTOR_LEN_BYTES_MAX + 1U;
    size_t keep = 999U;
    PBX_CHECK(pbx_ipc_resolve_encode(live_id, &r, b, sizeof(b), &keep) !=
              PBX_OK);
    PBX_CHECK_EQ(keep, 999U);
}

/* ---- encoders refuse what their decoders refuse ------------------------- */

static uint8_t enc_buf[PBX_IPC_FRAME_BYTES_MAX];

/* Each row encodes one record with one field its decoder refuses; the
 * encoder must return that error and write no length. */
static pbx_err bad_prompt(size_t *len)
{
    pbx_ipc_prompt r;
    memset(&r, 0, sizeof(r));
    r.ctx.session = 1U;
    r.ctx.job_id = 2U;
    r.ctx.job_gen = 3U;
    r.ctx.operation = 0U; /* no such operation */
    r.ctx.object_class = PBX_IPC_CLASS_FILE;
    r.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    r.ctx.mode = PBX_IPC_MODE_INSTALL;
    r.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    r.ctx.entry.len = 1U;
    r.ctx.entry.bytes[0] = 'e';
    r.object.id = 4U;
    r.object.gen = 5U;
    r.selector_len = 1U;
    r.selector = (const uint8_t *)"s";
    return pbx_ipc_prompt_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_revoke_reply(size_t *len)
{
    pbx_ipc_revoke_ack r = {{4U, 0U}};
    return pbx_ipc_revoke_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                       len);
}

static pbx_err bad_revoke(size_t *len)
{
    pbx_ipc_revoke r = {{4U, 0U}, 0x99U, 2U, 34U};
    return pbx_ipc_revoke_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_expire_kind(size_t *len)
{
    pbx_ipc_expire r = {3U, 3U, 0x77U, 0U};
    return pbx_ipc_expire_encode(&r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_expire_gen(size_t *len)
{
    pbx_ipc_expire r = {PBX_IPC_EXPIRE_JOB, 0U, 0x77U, 0U};
    return pbx_ipc_expire_encode(&r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_resolve(size_t *len)
{
    pbx_ipc_resolve r;
    memset(&r, 0, sizeof(r));
    r.operation = 0U; /* no such operation */
    r.object_class = PBX_IPC_CLASS_FILE;
    r.selector_len = 1U;
    r.selector = (const uint8_t *)"s";
    return pbx_ipc_resolve_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_wake(size_t *len)
{
    pbx_ipc_wake r = {0x55U, 0U};
    return pbx_ipc_wake_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_view_reply(size_t *len)
{
    pbx_ipc_view_ack r = {PBX_IPC_VIEW_ACTIVE, {4U, 0U}};
    return pbx_ipc_view_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                     len);
}

static pbx_err bad_policy_reply(size_t *len)
{
    pbx_ipc_policy_reply r = {0U, PBX_IPC_URGENCY_ROUTINE, 9U, 1U};
    return pbx_ipc_policy_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                       len);
}

static pbx_err bad_install_reply(size_t *len)
{
    pbx_ipc_install_reply r = {
        PBX_IPC_HANDLE_MANAGE_ONLY, 34U, {4U, 0U}, 0x99U, 2U};
    return pbx_ipc_install_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                        len);
}

static pbx_err bad_prompt_label(size_t *len)
{
    pbx_ipc_prompt r;
    memset(&r, 0, sizeof(r));
    r.label.len = PBX_IPC_LABEL_LEN_BYTES_MAX + 1U;
    return pbx_ipc_prompt_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_prompt_answer(size_t *len)
{
    pbx_ipc_prompt_reply r;
    memset(&r, 0, sizeof(r));
    r.answer = 0U; /* neither APPROVE nor DENY, and not a RETRY */
    r.realm = 9U;
    r.job_gen = 5U;
    r.request = live_id;
    r.object.gen = 2U;
    return pbx_ipc_prompt_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                       len);
}

static pbx_err bad_install(size_t *len)
{
    pbx_ipc_install r = {{0x99U, 2U, 33U},
                         {4U, 6U},
                         0U, /* no such operation */
                         PBX_IPC_CLASS_FILE,
                         PBX_IPC_LIFETIME_JOB};
    return pbx_ipc_install_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_detach(size_t *len)
{
    pbx_ipc_detach r = {{0x0102U, 0U}};
    return pbx_ipc_detach_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_detach_reply(size_t *len)
{
    pbx_ipc_detach r = {{0x0102U, 0U}};
    return pbx_ipc_detach_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                       len);
}

static pbx_err bad_withdraw(size_t *len)
{
    pbx_ipc_withdraw r = {{0x0102U, 0U}};
    return pbx_ipc_withdraw_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_withdraw_reply(size_t *len)
{
    pbx_ipc_withdraw r = {{0x0102U, 0U}};
    return pbx_ipc_withdraw_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                         len);
}

static pbx_err bad_retire(size_t *len)
{
    pbx_ipc_retire r = {{0x0102U, 11U}, 0x5C0FEU, 0U};
    return pbx_ipc_retire_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_retire_reply(size_t *len)
{
    pbx_ipc_retire r = {{0x0102U, 11U}, 0x5C0FEU, 0U};
    return pbx_ipc_retire_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                       len);
}

static pbx_err bad_resolve_reply(size_t *len)
{
    pbx_ipc_resolve_reply r;
    memset(&r, 0, sizeof(r));
    r.result = 0U; /* no such result */
    r.object_class = PBX_IPC_CLASS_FILE;
    r.operation = PBX_IPC_OPERATION_READ;
    return pbx_ipc_resolve_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                        len);
}

static pbx_err bad_decision(size_t *len)
{
    pbx_ipc_decision r = {0U, 0U, {0U, 0U}, 0U, 0U}; /* no such outcome */
    return pbx_ipc_decision_reply_encode(live_id, &r, enc_buf, sizeof(enc_buf),
                                         len);
}

static void ok_ctx(pbx_ipc_context *c)
{
    memset(c, 0, sizeof(*c));
    c->session = 1U;
    c->job_id = 2U;
    c->job_gen = 3U;
    c->operation = PBX_IPC_OPERATION_READ;
    c->object_class = PBX_IPC_CLASS_FILE;
    c->lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    c->mode = PBX_IPC_MODE_INSTALL;
    c->urgency = PBX_IPC_URGENCY_ROUTINE;
    c->entry.len = 1U;
    c->entry.bytes[0] = 'e';
}

static pbx_err bad_policy(size_t *len)
{
    pbx_ipc_policy r;
    memset(&r, 0, sizeof(r));
    ok_ctx(&r.ctx);
    r.ctx.operation = 0U; /* no such operation */
    r.object.id = 4U;
    r.object.gen = 5U;
    return pbx_ipc_policy_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_policy_entry(size_t *len)
{
    pbx_ipc_policy r;
    memset(&r, 0, sizeof(r));
    ok_ctx(&r.ctx);
    r.ctx.entry.len = PBX_IPC_ENTRY_LEN_BYTES_MAX + 1U;
    r.object.id = 4U;
    r.object.gen = 5U;
    return pbx_ipc_policy_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_view(size_t *len)
{
    pbx_ipc_view r;
    memset(&r, 0, sizeof(r));
    ok_ctx(&r.ctx);
    r.kind = 0U; /* neither ACTIVE nor REMOVE */
    r.grant.index = 4U;
    r.grant.gen = 6U;
    r.object.id = 4U;
    r.object.gen = 5U;
    r.target.process_id = 0x99U;
    r.target.process_gen = 2U;
    r.target.slot = 33U;
    return pbx_ipc_view_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_view_runtime_slot(size_t *len)
{
    pbx_ipc_view r;
    memset(&r, 0, sizeof(r));
    ok_ctx(&r.ctx);
    r.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    r.kind = PBX_IPC_VIEW_ACTIVE;
    r.grant.index = 4U;
    r.grant.gen = 6U;
    r.object.id = 4U;
    r.object.gen = 5U;
    r.installed_slot = 34U; /* a runtime-reply grant installs nothing */
    return pbx_ipc_view_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static pbx_err bad_view_label(size_t *len)
{
    pbx_ipc_view r;
    memset(&r, 0, sizeof(r));
    r.label.len = PBX_IPC_LABEL_LEN_BYTES_MAX + 1U;
    return pbx_ipc_view_encode(live_id, &r, enc_buf, sizeof(enc_buf), len);
}

static const struct {
    const char *name;
    pbx_err (*enc)(size_t *len);
    pbx_err want;
} refusals[] = {
    {"prompt operation", bad_prompt, PBX_E_IPC_DISCRIMINANT},
    {"revoke reply gen", bad_revoke_reply, PBX_E_IPC_GENERATION},
    {"revoke gen", bad_revoke, PBX_E_IPC_GENERATION},
    {"expire kind", bad_expire_kind, PBX_E_IPC_DISCRIMINANT},
    {"expire gen", bad_expire_gen, PBX_E_IPC_GENERATION},
    {"resolve operation", bad_resolve, PBX_E_IPC_DISCRIMINANT},
    {"wake gen", bad_wake, PBX_E_IPC_GENERATION},
    {"view reply gen", bad_view_reply, PBX_E_IPC_GENERATION},
    {"policy reply verdict", bad_policy_reply, PBX_E_IPC_DISCRIMINANT},
    {"install reply gen", bad_install_reply, PBX_E_IPC_GENERATION},
    {"prompt label length", bad_prompt_label, PBX_E_IPC_BOUND},
    {"prompt answer", bad_prompt_answer, PBX_E_IPC_DISCRIMINANT},
    {"install operation", bad_install, PBX_E_IPC_DISCRIMINANT},
    {"detach gen", bad_detach, PBX_E_IPC_GENERATION},
    {"detach reply gen", bad_detach_reply, PBX_E_IPC_GENERATION},
    {"withdraw gen", bad_withdraw, PBX_E_IPC_GENERATION},
    {"withdraw reply gen", bad_withdraw_reply, PBX_E_IPC_GENERATION},
    {"retire class", bad_retire, PBX_E_IPC_DISCRIMINANT},
    {"retire reply class", bad_retire_reply, PBX_E_IPC_DISCRIMINANT},
    {"resolve reply result", bad_resolve_reply, PBX_E_IPC_DISCRIMINANT},
    {"decision outcome", bad_decision, PBX_E_IPC_DISCRIMINANT},
    {"policy operation", bad_policy, PBX_E_IPC_DISCRIMINANT},
    {"policy entry length", bad_policy_entry, PBX_E_IPC_BOUND},
    {"view kind", bad_view, PBX_E_IPC_DISCRIMINANT},
    {"view runtime slot", bad_view_runtime_slot, PBX_E_IPC_MODE_TARGET},
    {"view label length", bad_view_label, PBX_E_IPC_BOUND},
};

PBX_TEST(ipc_mutants_encoders_refuse_what_decoders_refuse)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(refusals); i++) {
        size_t len = 999U;
        pbx_err got = refusals[i].enc(&len);
        if (got != refusals[i].want) {
            pbx_test_failf(__FILE__, __LINE__, "%s: got %s, want %s",
                           refusals[i].name, pbx_err_name(got),
                           pbx_err_name(refusals[i].want));
        }
        PBX_CHECK_EQ(len, 999U);
    }
}

/* The largest entry and label a BEGIN may carry are accepted both ways. */
PBX_TEST(ipc_mutants_begin_texts_at_their_bounds)
{
    static uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin r;
    memset(&r, 0, sizeof(r));
    r.ctx.session = 1U;
    r.ctx.job_id = 2U;
    r.ctx.job_gen = 3U;
    r.ctx.operation = PBX_IPC_OPERATION_READ;
    r.ctx.object_class = PBX_IPC_CLASS_FILE;
    r.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    r.ctx.mode = PBX_IPC_MODE_INSTALL;
    r.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    r.ctx.entry.len = PBX_IPC_ENTRY_LEN_BYTES_MAX;
    memset(r.ctx.entry.bytes, 'e', PBX_IPC_ENTRY_LEN_BYTES_MAX);
    r.label.len = PBX_IPC_LABEL_LEN_BYTES_MAX;
    memset(r.label.bytes, 'l', PBX_IPC_LABEL_LEN_BYTES_MAX);
    r.target.process_id = 0x99U;
    r.target.process_gen = 2U;
    r.target.slot = 33U;
    r.selector_len = 1U;
    size_t len = 0;
    PBX_REQUIRE(pbx_ipc_begin_encode(&r, b, sizeof(b), &len) == PBX_OK);
    pbx_ipc_frame f;
    pbx_ipc_begin out;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_begin_decode(&f, &out), PBX_OK);
    PBX_CHECK_EQ(out.ctx.entry.len, PBX_IPC_ENTRY_LEN_BYTES_MAX);
    PBX_CHECK_EQ(out.label.len, PBX_IPC_LABEL_LEN_BYTES_MAX);
}

/* An exact-form CANCEL carries no correlation fields: a nonzero byte
 * anywhere in the first 20 body bytes, the last one included, is
 * refused. */
PBX_TEST(ipc_mutants_exact_cancel_refuses_every_correlation_byte)
{
    uint8_t b[PBX_IPC_HEADER_BYTES + PBX_IPC_CANCEL_BYTES];
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = live_id;
    size_t len = 0;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, b, sizeof(b), &len) == PBX_OK);
    for (size_t k = 0; k < 20U; k++) {
        uint8_t t[sizeof(b)];
        memcpy(t, b, len);
        t[PBX_IPC_HEADER_BYTES + k] = 1U;
        pbx_ipc_frame f;
        pbx_ipc_cancel out;
        PBX_REQUIRE(pbx_ipc_frame_decode(t, len, 0U, &f) == PBX_OK);
        PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_E_IPC_OUTCOME_FIELDS);
    }
}

/* A SELECTOR chunk of exactly the largest size, and a PROMPT carrying
 * the largest entry, are accepted both ways. */
PBX_TEST(ipc_mutants_selector_chunk_and_prompt_entry_at_their_bounds)
{
    static uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    static uint8_t bytes[PBX_IPC_SELECTOR_CHUNK_BYTES_MAX];
    memset(bytes, 's', sizeof(bytes));
    pbx_ipc_selector s = {0U, PBX_IPC_SELECTOR_CHUNK_BYTES_MAX, bytes};
    size_t len = 0;
    pbx_ipc_frame f;
    PBX_REQUIRE(pbx_ipc_selector_encode(live_id, &s, b, sizeof(b), &len) ==
                PBX_OK);
    pbx_ipc_selector so;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_selector_decode(&f, &so), PBX_OK);
    PBX_CHECK_EQ(so.len, PBX_IPC_SELECTOR_CHUNK_BYTES_MAX);

    pbx_ipc_prompt r;
    memset(&r, 0, sizeof(r));
    r.ctx.session = 1U;
    r.ctx.job_id = 2U;
    r.ctx.job_gen = 3U;
    r.ctx.operation = PBX_IPC_OPERATION_READ;
    r.ctx.object_class = PBX_IPC_CLASS_FILE;
    r.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    r.ctx.mode = PBX_IPC_MODE_INSTALL;
    r.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    r.ctx.entry.len = PBX_IPC_ENTRY_LEN_BYTES_MAX;
    memset(r.ctx.entry.bytes, 'e', PBX_IPC_ENTRY_LEN_BYTES_MAX);
    r.label.len = PBX_IPC_LABEL_LEN_BYTES_MAX;
    memset(r.label.bytes, 'l', PBX_IPC_LABEL_LEN_BYTES_MAX);
    r.object.id = 4U;
    r.object.gen = 5U;
    r.selector_len = 1U;
    r.selector = bytes;
    PBX_REQUIRE(pbx_ipc_prompt_encode(live_id, &r, b, sizeof(b), &len) ==
                PBX_OK);
    pbx_ipc_prompt po;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_prompt_decode(&f, &po), PBX_OK);
    PBX_CHECK_EQ(po.ctx.entry.len, PBX_IPC_ENTRY_LEN_BYTES_MAX);
    PBX_CHECK_EQ(po.label.len, PBX_IPC_LABEL_LEN_BYTES_MAX);
}

/* A POLICY with the largest entry, and a PROMPT with the largest
 * selector, are accepted both ways. */
PBX_TEST(ipc_mutants_policy_entry_and_prompt_selector_at_their_bounds)
{
    static uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    static uint8_t sel[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    memset(sel, 's', sizeof(sel));
    pbx_ipc_policy p;
    memset(&p, 0, sizeof(p));
    ok_ctx(&p.ctx);
    p.ctx.entry.len = PBX_IPC_ENTRY_LEN_BYTES_MAX;
    memset(p.ctx.entry.bytes, 'e', PBX_IPC_ENTRY_LEN_BYTES_MAX);
    p.object.id = 4U;
    p.object.gen = 5U;
    size_t len = 0;
    pbx_ipc_frame f;
    PBX_REQUIRE(pbx_ipc_policy_encode(live_id, &p, b, sizeof(b), &len) ==
                PBX_OK);
    pbx_ipc_policy po;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_policy_decode(&f, &po), PBX_OK);
    PBX_CHECK_EQ(po.ctx.entry.len, PBX_IPC_ENTRY_LEN_BYTES_MAX);

    pbx_ipc_prompt r;
    memset(&r, 0, sizeof(r));
    ok_ctx(&r.ctx);
    r.object.id = 4U;
    r.object.gen = 5U;
    r.selector_len = PBX_IPC_SELECTOR_LEN_BYTES_MAX;
    r.selector = sel;
    PBX_REQUIRE(pbx_ipc_prompt_encode(live_id, &r, b, sizeof(b), &len) ==
                PBX_OK);
    pbx_ipc_prompt q;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 0U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_prompt_decode(&f, &q), PBX_OK);
    PBX_CHECK_EQ(q.selector_len, PBX_IPC_SELECTOR_LEN_BYTES_MAX);
}

/* A DECISION reply that grants nothing carries no capability: one that
 * does is refused for its partition. */
PBX_TEST(ipc_mutants_decision_without_grant_carries_no_capability)
{
    uint8_t b[PBX_IPC_HEADER_BYTES + PBX_IPC_DECISION_REPLY_BYTES];
    pbx_ipc_decision d = {PBX_IPC_OUTCOME_NOT_FOUND, 0U, {0U, 0U}, 0U, 0U};
    size_t len = 0;
    PBX_REQUIRE(pbx_ipc_decision_reply_encode(live_id, &d, b, sizeof(b),
                                              &len) == PBX_OK);
    pbx_le_put16(b + 10, 1U); /* the header claims one capability */
    pbx_ipc_frame f;
    pbx_ipc_decision out;
    PBX_REQUIRE(pbx_ipc_frame_decode(b, len, 1U, &f) == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_decision_reply_decode(&f, &out),
                 PBX_E_IPC_CAP_PARTITION);
}

/* The grant form of CANCEL carries nothing but its flag: a nonzero byte
 * anywhere in the first 20 body bytes is refused. And a VIEW with the
 * largest label is accepted both ways. */
PBX_TEST(ipc_mutants_grant_cancel_body_and_view_label_bound)
{
    uint8_t b[PBX_IPC_HEADER_BYTES + PBX_IPC_CANCEL_BYTES];
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant = live_id;
    size_t len = 0;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, b, sizeof(b), &len) == PBX_OK);
    for (size_t k = 0; k < 20U; k++) {
        uint8_t t[sizeof(b)];
        memcpy(t, b, len);
        t[PBX_IPC_HEADER_BYTES + k] = 1U;
        pbx_ipc_frame f;
        pbx_ipc_cancel out;
        PBX_REQUIRE(pbx_ipc_frame_decode(t, len, 0U, &f) == PBX_OK);
        PBX_CHECK_EQ(pbx_ipc_cancel_decode(&f, &out), PBX_E_IPC_OUTCOME_FIELDS);
    }
    static uint8_t v[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_view r;
    memset(&r, 0, sizeof(r));
    ok_ctx(&r.ctx);
    r.kind = PBX_IPC_VIEW_ACTIVE;
    r.grant.index = 4U;
    r.grant.gen = 6U;
    r.object.id = 4U;
    r.object.gen = 5U;
    r.target.process_id = 0x99U;
    r.target.process_gen = 2U;
    r.target.slot = 33U;
    r.label.len = PBX_IPC_LABEL_LEN_BYTES_MAX;
    memset(r.label.bytes, 'l', PBX_IPC_LABEL_LEN_BYTES_MAX);
    PBX_CHECK_EQ(pbx_ipc_view_encode(live_id, &r, v, sizeof(v), &len), PBX_OK);
}
