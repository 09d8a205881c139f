/*
 * test_ipc.c: every ipc record round-trips, every record decoder fails
 * cleanly at every shorter length, every encoder refuses every short
 * buffer, and every malformed form gets its own error.
 *
 * Each sample is a valid record with every field nonzero where the rules
 * allow, so a decoder that drops or misplaces a field changes the bytes
 * re-encoded from its output. Setting PBX_IPC_CORPUS_DIR writes every
 * sample frame there (the fuzzers' seed corpora come from this).
 */
#include "../ipc/pbx_ipc.h"
#include "runner/pbx_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPLY(op) ((uint16_t)((op) | PBX_IPC_REPLY_BIT))

static const pbx_ipc_id sample_id = {7U, 3U};
static const char sample_entry[] = "/bin/editor";   /* 11 bytes */
static const char sample_label[] = "Open report";   /* 11 bytes */
static const char sample_sel[] = "docs/report.txt"; /* 15 bytes */
#define ENTRY_LEN 11U
#define LABEL_LEN 11U
#define SEL_LEN   15U

static void fill_digest(uint8_t *d)
{
    for (size_t i = 0; i < PBX_IPC_DIGEST_BYTES; i++) {
        d[i] = (uint8_t)(0xA0U + i);
    }
}

static void fill_ctx(pbx_ipc_context *c)
{
    memset(c, 0, sizeof(*c));
    c->session = 0x1111222233334444ULL;
    c->job_id = 0x5555666677778888ULL;
    c->job_gen = 5U;
    c->realm = 9U;
    c->operation = PBX_IPC_OPERATION_WRITE;
    c->object_class = PBX_IPC_CLASS_FILE;
    c->lifetime = PBX_IPC_LIFETIME_JOB;
    c->mode = PBX_IPC_MODE_INSTALL;
    c->urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    c->entry.len = ENTRY_LEN;
    memcpy(c->entry.bytes, sample_entry, ENTRY_LEN);
}

static void fill_label(pbx_ipc_label *l)
{
    memset(l, 0, sizeof(*l));
    l->len = LABEL_LEN;
    memcpy(l->bytes, sample_label, LABEL_LEN);
}

static const pbx_ipc_object sample_object = {0x0102030405060708ULL, 11U};

/* ---- one encode and one decode-then-re-encode per record --------------- */

typedef pbx_err (*enc_fn)(uint8_t *buf, size_t n, size_t *len);
typedef pbx_err (*redo_fn)(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len);

static pbx_err enc_begin(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_begin r;
    memset(&r, 0, sizeof(r));
    fill_ctx(&r.ctx);
    r.target.process_id = 0x99ULL;
    r.target.process_gen = 2U;
    r.target.slot = 33U;
    r.selector_len = 4000U;
    fill_digest(r.selector_digest);
    fill_label(&r.label);
    return pbx_ipc_begin_encode(&r, buf, n, len);
}

/* A one-shot BEGIN may name the invocation it is made within (0: none);
 * a job BEGIN may not; an invocation BEGIN must. */
PBX_TEST(ipc_begin_invocation_id_per_lifetime)
{
    static const struct {
        uint64_t invocation;
        pbx_err want;
        uint8_t lifetime;
    } rows[] = {
        {0U, PBX_OK, PBX_IPC_LIFETIME_ONE_SHOT},
        {7U, PBX_OK, PBX_IPC_LIFETIME_ONE_SHOT},
        {7U, PBX_OK, PBX_IPC_LIFETIME_INVOCATION},
        {0U, PBX_E_IPC_OUTCOME_FIELDS, PBX_IPC_LIFETIME_INVOCATION},
        {0U, PBX_OK, PBX_IPC_LIFETIME_JOB},
        {7U, PBX_E_IPC_OUTCOME_FIELDS, PBX_IPC_LIFETIME_JOB},
    };
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        pbx_ipc_begin r;
        uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
        size_t len = 0;
        memset(&r, 0, sizeof(r));
        fill_ctx(&r.ctx);
        r.ctx.lifetime = rows[i].lifetime;
        r.invocation_id = rows[i].invocation;
        r.target.process_id = 0x99ULL;
        r.target.process_gen = 2U;
        r.target.slot = 33U;
        r.selector_len = 4000U;
        fill_digest(r.selector_digest);
        fill_label(&r.label);
        PBX_CHECK_EQ(pbx_ipc_begin_encode(&r, buf, sizeof(buf), &len),
                     rows[i].want);
    }
}

/* An invocation-lifetime BEGIN names its invocation. */
static pbx_err enc_begin_inv(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_begin r;
    memset(&r, 0, sizeof(r));
    fill_ctx(&r.ctx);
    r.ctx.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    r.target.process_id = 0x99ULL;
    r.target.process_gen = 2U;
    r.target.slot = 33U;
    r.selector_len = 4000U;
    fill_digest(r.selector_digest);
    fill_label(&r.label);
    r.invocation_id = 0x0A0B0C0D0E0F1011ULL;
    return pbx_ipc_begin_encode(&r, buf, n, len);
}

static pbx_err redo_begin(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                          size_t *len)
{
    pbx_ipc_begin r;
    pbx_err e = pbx_ipc_begin_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_begin_encode(&r, buf, n, len);
}

static pbx_err enc_begin_r(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_begin_reply r = {0x1234U};
    return pbx_ipc_begin_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_begin_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                            size_t *len)
{
    pbx_ipc_begin_reply r;
    pbx_err e = pbx_ipc_begin_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_begin_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_selector(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_selector r = {100U, SEL_LEN, (const uint8_t *)sample_sel};
    return pbx_ipc_selector_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_selector(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                             size_t *len)
{
    pbx_ipc_selector r;
    pbx_err e = pbx_ipc_selector_decode(f, &r);
    return e != PBX_OK ? e
                       : pbx_ipc_selector_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_commit(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_commit r = {0x1234U};
    return pbx_ipc_commit_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_commit(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_commit r;
    pbx_err e = pbx_ipc_commit_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_commit_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_decision_inst(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_decision r = {
        PBX_IPC_OUTCOME_APPROVED, PBX_IPC_MODE_INSTALL, {4U, 6U}, 77U, 0U};
    return pbx_ipc_decision_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err enc_decision_rt(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_decision r = {
        PBX_IPC_OUTCOME_APPROVED, PBX_IPC_MODE_RUNTIME_REPLY, {4U, 6U}, 0U, 0U};
    return pbx_ipc_decision_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err enc_decision_nf(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_decision r = {PBX_IPC_OUTCOME_NOT_FOUND, 0U, {0U, 0U}, 0U, 0U};
    return pbx_ipc_decision_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err enc_decision_denied(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_decision r = {PBX_IPC_OUTCOME_DENIED,
                          0U,
                          {0U, 0U},
                          0U,
                          PBX_IPC_REASON_PROMPT_TIMEOUT};
    return pbx_ipc_decision_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_decision(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                             size_t *len)
{
    pbx_ipc_decision r;
    pbx_err e = pbx_ipc_decision_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_decision_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_cancel_exact(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_cancel r;
    memset(&r, 0, sizeof(r));
    r.request = sample_id;
    return pbx_ipc_cancel_encode(&r, buf, n, len);
}

static pbx_err enc_cancel_corr(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_cancel r;
    memset(&r, 0, sizeof(r));
    r.by_correlation = true;
    r.job_id = 0x42ULL;
    r.session = 0x43ULL;
    r.job_gen = 2U;
    return pbx_ipc_cancel_encode(&r, buf, n, len);
}

static pbx_err enc_cancel_grant(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_cancel r;
    memset(&r, 0, sizeof(r));
    r.by_grant = true;
    r.grant.index = 12U;
    r.grant.gen = 13U;
    return pbx_ipc_cancel_encode(&r, buf, n, len);
}

static pbx_err redo_cancel(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_cancel r;
    pbx_err e = pbx_ipc_cancel_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_cancel_encode(&r, buf, n, len);
}

static pbx_err enc_consume(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_consume r = {{12U, 13U}};
    return pbx_ipc_consume_encode(&r, buf, n, len);
}

static pbx_err redo_consume(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                            size_t *len)
{
    pbx_ipc_consume r;
    pbx_err e = pbx_ipc_consume_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_consume_encode(&r, buf, n, len);
}

static pbx_err enc_expire_inv(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_expire r = {PBX_IPC_EXPIRE_INVOCATION, 3U, 0x77ULL, 0x88ULL};
    return pbx_ipc_expire_encode(&r, buf, n, len);
}

static pbx_err enc_expire_job(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_expire r = {PBX_IPC_EXPIRE_JOB, 3U, 0x77ULL, 0U};
    return pbx_ipc_expire_encode(&r, buf, n, len);
}

static pbx_err redo_expire(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_expire r;
    pbx_err e = pbx_ipc_expire_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_expire_encode(&r, buf, n, len);
}

static pbx_err enc_resolve(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_resolve r;
    memset(&r, 0, sizeof(r));
    r.operation = PBX_IPC_OPERATION_READ;
    r.object_class = PBX_IPC_CLASS_DIRECTORY;
    r.selector_len = SEL_LEN;
    fill_digest(r.selector_digest);
    r.selector = (const uint8_t *)sample_sel;
    return pbx_ipc_resolve_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_resolve(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                            size_t *len)
{
    pbx_ipc_resolve r;
    pbx_err e = pbx_ipc_resolve_decode(f, &r);
    return e != PBX_OK ? e
                       : pbx_ipc_resolve_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_resolve_r(uint8_t result, uint16_t cls, uint8_t *buf,
                             size_t n, size_t *len)
{
    pbx_ipc_resolve_reply r;
    memset(&r, 0, sizeof(r));
    r.result = result;
    r.object_class = cls;
    r.operation = PBX_IPC_OPERATION_READ;
    if (result == PBX_IPC_RESOLVE_FOUND) {
        r.object = sample_object;
        r.scope_id = 0x5C0FEULL;
    }
    fill_digest(r.selector_digest);
    return pbx_ipc_resolve_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err enc_resolve_found(uint8_t *buf, size_t n, size_t *len)
{
    return enc_resolve_r(PBX_IPC_RESOLVE_FOUND, PBX_IPC_CLASS_FILE, buf, n,
                         len);
}

static pbx_err enc_resolve_nf(uint8_t *buf, size_t n, size_t *len)
{
    return enc_resolve_r(PBX_IPC_RESOLVE_NOT_FOUND, PBX_IPC_CLASS_DEVICE, buf,
                         n, len);
}

static pbx_err enc_resolve_denied(uint8_t *buf, size_t n, size_t *len)
{
    return enc_resolve_r(PBX_IPC_RESOLVE_DENIED, 0U, buf, n, len);
}

static pbx_err redo_resolve_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                              size_t *len)
{
    pbx_ipc_resolve_reply r;
    pbx_err e = pbx_ipc_resolve_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_resolve_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_detach(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_detach r = {sample_object};
    return pbx_ipc_detach_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_detach(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_detach r;
    pbx_err e = pbx_ipc_detach_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_detach_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_detach_r(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_detach r = {sample_object};
    return pbx_ipc_detach_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err enc_withdraw(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_withdraw r = {sample_object};
    return pbx_ipc_withdraw_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_withdraw(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                             size_t *len)
{
    pbx_ipc_withdraw r;
    pbx_err e = pbx_ipc_withdraw_decode(f, &r);
    return e != PBX_OK ? e
                       : pbx_ipc_withdraw_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_withdraw_r(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_withdraw r = {sample_object};
    return pbx_ipc_withdraw_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_withdraw_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                               size_t *len)
{
    pbx_ipc_withdraw r;
    pbx_err e = pbx_ipc_withdraw_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_withdraw_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err redo_detach_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                             size_t *len)
{
    pbx_ipc_detach r;
    pbx_err e = pbx_ipc_detach_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_detach_reply_encode(f->request, &r, buf, n, len);
}

static const pbx_ipc_retire sample_retire = {
    {0x0102030405060708ULL, 11U}, 0x5C0FEULL, PBX_IPC_CLASS_ENDPOINT};

static pbx_err enc_retire(uint8_t *buf, size_t n, size_t *len)
{
    return pbx_ipc_retire_encode(sample_id, &sample_retire, buf, n, len);
}

static pbx_err redo_retire(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_retire r;
    pbx_err e = pbx_ipc_retire_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_retire_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_retire_r(uint8_t *buf, size_t n, size_t *len)
{
    return pbx_ipc_retire_reply_encode(sample_id, &sample_retire, buf, n, len);
}

static pbx_err redo_retire_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                             size_t *len)
{
    pbx_ipc_retire r;
    pbx_err e = pbx_ipc_retire_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_retire_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_policy(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_policy r;
    memset(&r, 0, sizeof(r));
    fill_ctx(&r.ctx);
    r.object = sample_object;
    return pbx_ipc_policy_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_policy(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_policy r;
    pbx_err e = pbx_ipc_policy_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_policy_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_policy_r(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_policy_reply r = {PBX_IPC_VERDICT_PROMPT,
                              PBX_IPC_URGENCY_EXCEPTIONAL, 9U,
                              0x1111222233334444ULL};
    return pbx_ipc_policy_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_policy_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                             size_t *len)
{
    pbx_ipc_policy_reply r;
    pbx_err e = pbx_ipc_policy_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_policy_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_prompt(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_prompt r;
    memset(&r, 0, sizeof(r));
    fill_ctx(&r.ctx);
    r.object = sample_object;
    fill_label(&r.label);
    r.selector_len = SEL_LEN;
    fill_digest(r.selector_digest);
    r.selector = (const uint8_t *)sample_sel;
    return pbx_ipc_prompt_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_prompt(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_prompt r;
    pbx_err e = pbx_ipc_prompt_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_prompt_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_prompt_answer(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_prompt_reply r;
    memset(&r, 0, sizeof(r));
    r.answer = PBX_IPC_ANSWER_APPROVE;
    r.realm = 9U;
    r.session = 0x1111222233334444ULL;
    r.job_id = 0x5555666677778888ULL;
    r.job_gen = 5U;
    r.request = sample_id;
    r.object = sample_object;
    return pbx_ipc_prompt_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err enc_prompt_retry(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_prompt_reply r;
    memset(&r, 0, sizeof(r));
    r.retry = true;
    return pbx_ipc_prompt_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_prompt_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                             size_t *len)
{
    pbx_ipc_prompt_reply r;
    pbx_err e = pbx_ipc_prompt_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_prompt_reply_encode(f->request, &r, buf, n, len);
}

static void fill_view(pbx_ipc_view *r)
{
    memset(r, 0, sizeof(*r));
    r->kind = PBX_IPC_VIEW_ACTIVE;
    r->grant.index = 4U;
    r->grant.gen = 6U;
    fill_ctx(&r->ctx);
    r->object = sample_object;
    r->scope_id = 0x5C0FEULL;
    r->target.process_id = 0x99ULL;
    r->target.process_gen = 2U;
    r->target.slot = 33U;
    r->installed_slot = 34U;
    fill_digest(r->selector_digest);
    fill_label(&r->label);
}

static pbx_err enc_view(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_view r;
    fill_view(&r);
    return pbx_ipc_view_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_view(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                         size_t *len)
{
    pbx_ipc_view r;
    pbx_err e = pbx_ipc_view_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_view_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_view_r(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_view_ack r = {PBX_IPC_VIEW_REMOVE, {4U, 6U}};
    return pbx_ipc_view_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_view_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_view_ack r;
    pbx_err e = pbx_ipc_view_reply_decode(f, &r);
    return e != PBX_OK ? e
                       : pbx_ipc_view_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_install(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_install r = {{0x99ULL, 2U, 33U},
                         {4U, 6U},
                         PBX_IPC_OPERATION_EXECUTE,
                         PBX_IPC_CLASS_FILE,
                         PBX_IPC_LIFETIME_INVOCATION};
    return pbx_ipc_install_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_install(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                            size_t *len)
{
    pbx_ipc_install r;
    pbx_err e = pbx_ipc_install_decode(f, &r);
    return e != PBX_OK ? e
                       : pbx_ipc_install_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_install_r(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_install_reply r = {
        PBX_IPC_HANDLE_MANAGE_ONLY, 34U, {4U, 6U}, 0x99ULL, 2U};
    return pbx_ipc_install_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_install_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                              size_t *len)
{
    pbx_ipc_install_reply r;
    pbx_err e = pbx_ipc_install_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_install_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_revoke(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_revoke r = {{4U, 6U}, 0x99ULL, 2U, 34U};
    return pbx_ipc_revoke_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_revoke(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                           size_t *len)
{
    pbx_ipc_revoke r;
    pbx_err e = pbx_ipc_revoke_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_revoke_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_revoke_r(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_revoke_ack r = {{4U, 6U}};
    return pbx_ipc_revoke_reply_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_revoke_r(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                             size_t *len)
{
    pbx_ipc_revoke_ack r;
    pbx_err e = pbx_ipc_revoke_reply_decode(f, &r);
    return e != PBX_OK
               ? e
               : pbx_ipc_revoke_reply_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_wake(uint8_t *buf, size_t n, size_t *len)
{
    pbx_ipc_wake r = {0x5555666677778888ULL, 5U};
    return pbx_ipc_wake_encode(sample_id, &r, buf, n, len);
}

static pbx_err redo_wake(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                         size_t *len)
{
    pbx_ipc_wake r;
    pbx_err e = pbx_ipc_wake_decode(f, &r);
    return e != PBX_OK ? e : pbx_ipc_wake_encode(f->request, &r, buf, n, len);
}

static pbx_err enc_decision_q(uint8_t *buf, size_t n, size_t *len)
{
    return pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, sample_id, buf, n, len);
}

static pbx_err redo_decision_q(const pbx_ipc_frame *f, uint8_t *buf, size_t n,
                               size_t *len)
{
    pbx_err e = pbx_ipc_empty_decode(f, PBX_IPC_OP_DECISION);
    return e != PBX_OK ? e
                       : pbx_ipc_empty_encode(f->op, f->request, buf, n, len);
}

/* One row per record form. */
struct sample {
    const char *name;
    enc_fn enc;
    redo_fn redo;
    uint16_t caps;
};

static const struct sample samples[] = {
    {"begin", enc_begin, redo_begin, 0},
    {"begin_invocation", enc_begin_inv, redo_begin, 0},
    {"begin_reply", enc_begin_r, redo_begin_r, 0},
    {"selector", enc_selector, redo_selector, 0},
    {"commit", enc_commit, redo_commit, 1},
    {"decision", enc_decision_q, redo_decision_q, 0},
    {"decision_install", enc_decision_inst, redo_decision, 0},
    {"decision_runtime", enc_decision_rt, redo_decision, 1},
    {"decision_not_found", enc_decision_nf, redo_decision, 0},
    {"decision_denied", enc_decision_denied, redo_decision, 0},
    {"cancel_exact", enc_cancel_exact, redo_cancel, 0},
    {"cancel_correlation", enc_cancel_corr, redo_cancel, 0},
    {"cancel_grant", enc_cancel_grant, redo_cancel, 0},
    {"consume", enc_consume, redo_consume, 0},
    {"expire_invocation", enc_expire_inv, redo_expire, 0},
    {"expire_job", enc_expire_job, redo_expire, 0},
    {"resolve", enc_resolve, redo_resolve, 0},
    {"resolve_found", enc_resolve_found, redo_resolve_r, 1},
    {"resolve_not_found", enc_resolve_nf, redo_resolve_r, 0},
    {"resolve_denied", enc_resolve_denied, redo_resolve_r, 0},
    {"detach", enc_detach, redo_detach, 1},
    {"detach_reply", enc_detach_r, redo_detach_r, 0},
    {"retire", enc_retire, redo_retire, 0},
    {"retire_reply", enc_retire_r, redo_retire_r, 0},
    {"policy", enc_policy, redo_policy, 0},
    {"policy_reply", enc_policy_r, redo_policy_r, 0},
    {"prompt", enc_prompt, redo_prompt, 0},
    {"prompt_answer", enc_prompt_answer, redo_prompt_r, 0},
    {"prompt_retry", enc_prompt_retry, redo_prompt_r, 0},
    {"view", enc_view, redo_view, 0},
    {"view_reply", enc_view_r, redo_view_r, 0},
    {"withdraw", enc_withdraw, redo_withdraw, 0},
    {"withdraw_reply", enc_withdraw_r, redo_withdraw_r, 0},
    {"install", enc_install, redo_install, 1},
    {"install_reply", enc_install_r, redo_install_r, 1},
    {"revoke", enc_revoke, redo_revoke, 0},
    {"revoke_reply", enc_revoke_r, redo_revoke_r, 0},
    {"wake", enc_wake, redo_wake, 0},
};

static const struct sample *sample_named(const char *name)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(samples); i++) {
        if (strcmp(samples[i].name, name) == 0) {
            return &samples[i];
        }
    }
    return NULL;
}

/* Decodes len bytes (copied into an exact-size heap buffer, so ASan sees
 * any over-read) as a frame plus its record. */
static pbx_err decode_exact(const struct sample *s, const uint8_t *bytes,
                            size_t len)
{
    uint8_t *copy = malloc(len == 0U ? 1U : len);
    pbx_ipc_frame f;
    if (copy == NULL) {
        abort();
    }
    memcpy(copy, bytes, len);
    pbx_err e = pbx_ipc_frame_decode(copy, len, s->caps, &f);
    if (e == PBX_OK) {
        uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
        size_t out_len = 0;
        e = s->redo(&f, out, sizeof(out), &out_len);
    }
    free(copy);
    return e;
}

PBX_TEST(ipc_every_record_round_trips)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(samples); i++) {
        const struct sample *s = &samples[i];
        uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
        uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
        size_t alen = 0;
        size_t blen = 0;
        PBX_REQUIRE(s->enc(a, sizeof(a), &alen) == PBX_OK);
        pbx_ipc_frame f;
        PBX_CHECK_EQ(pbx_ipc_frame_decode(a, alen, s->caps, &f), PBX_OK);
        PBX_CHECK_EQ(f.cap_count, s->caps);
        PBX_CHECK_EQ(s->redo(&f, b, sizeof(b), &blen), PBX_OK);
        PBX_CHECK_EQ(blen, alen);
        PBX_CHECK_MEM(a, b, alen);
    }
}

PBX_TEST(ipc_every_record_fails_cleanly_when_truncated)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(samples); i++) {
        const struct sample *s = &samples[i];
        uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
        size_t alen = 0;
        PBX_REQUIRE(s->enc(a, sizeof(a), &alen) == PBX_OK);
        PBX_CHECK_EQ(decode_exact(s, a, alen), PBX_OK);
        for (size_t len = 0; len < alen; len++) {
            /* As received: the header still claims the full body. */
            PBX_CHECK(decode_exact(s, a, len) != PBX_OK);
            if (len < PBX_IPC_HEADER_BYTES) {
                continue;
            }
            /* Consistent header: the record decoder itself must refuse. */
            uint8_t t[PBX_IPC_FRAME_BYTES_MAX];
            memcpy(t, a, len);
            pbx_le_put32(t + 20, (uint32_t)(len - PBX_IPC_HEADER_BYTES));
            pbx_err e = decode_exact(s, t, len);
            if (strcmp(s->name, "prompt_answer") == 0 &&
                len == PBX_IPC_HEADER_BYTES) {
                /* An empty PROMPT reply is, by definition, RETRY. */
                PBX_CHECK_EQ(e, PBX_OK);
            } else {
                PBX_CHECK(e != PBX_OK);
            }
        }
    }
}

PBX_TEST(ipc_every_encoder_refuses_short_buffers)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(samples); i++) {
        const struct sample *s = &samples[i];
        uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
        size_t alen = 0;
        PBX_REQUIRE(s->enc(a, sizeof(a), &alen) == PBX_OK);
        for (size_t n = 0; n < alen; n++) {
            uint8_t *small = malloc(n == 0U ? 1U : n);
            size_t out = 12345U;
            PBX_REQUIRE(small != NULL);
            PBX_CHECK_EQ(s->enc(n == 0U ? NULL : small, n, &out),
                         PBX_E_IPC_NO_SPACE);
            PBX_CHECK_EQ(out, 12345U);
            free(small);
        }
    }
}

PBX_TEST(ipc_trailing_byte_rejected_by_every_record)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(samples); i++) {
        const struct sample *s = &samples[i];
        uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
        size_t alen = 0;
        PBX_REQUIRE(s->enc(a, sizeof(a), &alen) == PBX_OK);
        a[alen] = 0U;
        pbx_le_put32(a + 20, (uint32_t)(alen + 1U - PBX_IPC_HEADER_BYTES));
        pbx_err e = decode_exact(s, a, alen + 1U);
        if (strcmp(s->name, "prompt_retry") == 0) {
            /* A 1-byte PROMPT reply is a truncated ANSWER. */
            PBX_CHECK_EQ(e, PBX_E_IPC_TRUNCATED);
        } else {
            PBX_CHECK_EQ(e, PBX_E_IPC_TRAILING);
        }
    }
}

/* ---- malformed forms: one field changed, one exact error ---------------- */

struct mutation {
    const char *sample;
    size_t off; /* body offset */
    size_t width;
    uint64_t value;
    pbx_err want;
};

#define B  PBX_IPC_BEGIN_FIXED_BYTES
#define PR PBX_IPC_PROMPT_FIXED_BYTES
#define VW PBX_IPC_VIEW_FIXED_BYTES

static const struct mutation mutations[] = {
    /* BEGIN */
    {"begin", 51, 1, 1, PBX_E_IPC_RESERVED},
    {"begin", 52, 2, 0, PBX_E_IPC_BOUND},
    {"begin", 52, 2, PBX_IPC_ENTRY_LEN_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"begin", 54, 2, PBX_IPC_LABEL_LEN_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"begin", 52, 2, ENTRY_LEN + 1U, PBX_E_IPC_TRUNCATED},
    {"begin", 52, 2, ENTRY_LEN - 1U, PBX_E_IPC_TRAILING},
    {"begin", 54, 2, LABEL_LEN - 1U, PBX_E_IPC_TRAILING},
    {"begin", 44, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"begin", 44, 2, 8, PBX_E_IPC_DISCRIMINANT},
    {"begin", 46, 2, 6, PBX_E_IPC_DISCRIMINANT},
    {"begin", 48, 1, 4, PBX_E_IPC_DISCRIMINANT},
    {"begin", 49, 1, 3, PBX_E_IPC_DISCRIMINANT},
    {"begin", 50, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"begin", 24, 4, 0, PBX_E_IPC_GENERATION},
    {"begin", 44, 2, PBX_IPC_OPERATION_ENTRY_TOUCH, PBX_E_IPC_ADMISSION},
    {"begin", 44, 2, PBX_IPC_OPERATION_ENTRY_METADATA_READ,
     PBX_E_IPC_ADMISSION},
    {"begin", 46, 2, PBX_IPC_CLASS_DIRECTORY_ENTRY,
     PBX_E_IPC_DIR_ENTRY_WIDENED},
    {"begin", B, 1, 0x07, PBX_E_IPC_TEXT},
    {"begin", B + ENTRY_LEN, 1, 0x1B, PBX_E_IPC_TEXT},
    {"begin", B + ENTRY_LEN + 1U, 1, 0x7F, PBX_E_IPC_TEXT},
    {"begin", 40, 4, 0, PBX_E_IPC_BOUND},
    {"begin", 40, 4, PBX_IPC_SELECTOR_LEN_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"begin", 32, 4, 0, PBX_E_IPC_MODE_TARGET},
    {"begin", 88, 8, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"begin_invocation", 88, 8, 0, PBX_E_IPC_OUTCOME_FIELDS},
    {"begin_invocation", 48, 1, PBX_IPC_LIFETIME_JOB, PBX_E_IPC_OUTCOME_FIELDS},
    {"begin", 49, 1, PBX_IPC_MODE_RUNTIME_REPLY, PBX_E_IPC_MODE_TARGET},
    /* SELECTOR, COMMIT */
    {"selector", 4, 4, 0, PBX_E_IPC_BOUND},
    {"selector", 4, 4, PBX_IPC_SELECTOR_CHUNK_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"selector", 4, 4, SEL_LEN + 1U, PBX_E_IPC_TRUNCATED},
    {"selector", 4, 4, SEL_LEN - 1U, PBX_E_IPC_TRAILING},
    {"selector", 0, 4, PBX_IPC_SELECTOR_LEN_BYTES_MAX - SEL_LEN + 1U,
     PBX_E_IPC_SELECTOR_RANGE},
    {"selector", 0, 4, 0xFFFFFFFFU, PBX_E_IPC_SELECTOR_RANGE},
    {"commit", 4, 4, 1, PBX_E_IPC_RESERVED},
    /* DECISION */
    /* reason: only DENIED may carry one, and only a known one. */
    {"decision_install", 2, 2, PBX_IPC_REASON_POLICY, PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_runtime", 2, 2, PBX_IPC_REASON_RESOLVE,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_not_found", 2, 2, PBX_IPC_REASON_USER, PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_denied", 2, 2, PBX_IPC_REASON_INSTALLER_LOST + 1U,
     PBX_E_IPC_DISCRIMINANT},
    {"decision_runtime", 2, 2, PBX_IPC_REASON_PROVIDER_LOST,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_denied", 2, 2, 0xFFFFU, PBX_E_IPC_DISCRIMINANT},
    {"decision_denied", 0, 1, PBX_IPC_OUTCOME_CANCELLED,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_denied", 0, 1, PBX_IPC_OUTCOME_PENDING,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_denied", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"decision_denied", 1, 1, PBX_IPC_MODE_INSTALL, PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_install", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"decision_install", 0, 1, 6, PBX_E_IPC_DISCRIMINANT},
    {"decision_install", 1, 1, 3, PBX_E_IPC_DISCRIMINANT},
    {"decision_install", 8, 4, 0, PBX_E_IPC_GENERATION},
    {"decision_install", 1, 1, PBX_IPC_MODE_RUNTIME_REPLY,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_runtime", 12, 4, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_runtime", 1, 1, PBX_IPC_MODE_INSTALL, PBX_E_IPC_CAP_PARTITION},
    {"decision_install", 0, 1, PBX_IPC_OUTCOME_DENIED,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_runtime", 0, 1, PBX_IPC_OUTCOME_CANCELLED,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_not_found", 1, 1, PBX_IPC_MODE_INSTALL,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_not_found", 4, 4, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_not_found", 8, 4, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"decision_not_found", 12, 4, 1, PBX_E_IPC_OUTCOME_FIELDS},
    /* CANCEL, CONSUME, EXPIRE */
    {"cancel_exact", 20, 1, 2, PBX_E_IPC_RESERVED},
    {"cancel_exact", 20, 1, 0x81, PBX_E_IPC_RESERVED},
    {"cancel_exact", 21, 1, 1, PBX_E_IPC_RESERVED},
    {"cancel_exact", 23, 1, 1, PBX_E_IPC_RESERVED},
    {"cancel_correlation", 20, 1, PBX_IPC_CANCEL_F_GRANT, PBX_E_IPC_GENERATION},
    {"cancel_grant", 0, 8, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"cancel_grant", 8, 8, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"cancel_grant", 16, 4, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"cancel_grant", 22, 1, 1, PBX_E_IPC_RESERVED},
    {"cancel_exact", 0, 8, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"cancel_exact", 8, 8, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"cancel_exact", 16, 4, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"cancel_correlation", 16, 4, 0, PBX_E_IPC_GENERATION},
    {"consume", 4, 4, 0, PBX_E_IPC_GENERATION},
    {"expire_invocation", 1, 1, 1, PBX_E_IPC_RESERVED},
    {"expire_invocation", 3, 1, 1, PBX_E_IPC_RESERVED},
    {"expire_invocation", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"expire_invocation", 0, 1, 3, PBX_E_IPC_DISCRIMINANT},
    {"expire_invocation", 4, 4, 0, PBX_E_IPC_GENERATION},
    {"expire_invocation", 16, 8, 0, PBX_E_IPC_OUTCOME_FIELDS},
    {"expire_job", 16, 8, 1, PBX_E_IPC_OUTCOME_FIELDS},
    /* RESOLVE */
    {"resolve", 4, 4, 0, PBX_E_IPC_BOUND},
    {"resolve", 4, 4, PBX_IPC_SELECTOR_LEN_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"resolve", 4, 4, SEL_LEN + 1U, PBX_E_IPC_TRUNCATED},
    {"resolve", 4, 4, SEL_LEN - 1U, PBX_E_IPC_TRAILING},
    {"resolve", 0, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"resolve", 2, 2, 9, PBX_E_IPC_DISCRIMINANT},
    {"resolve_found", 1, 1, 1, PBX_E_IPC_RESERVED},
    {"resolve_found", 6, 2, 1, PBX_E_IPC_RESERVED},
    {"resolve_found", 28, 4, 1, PBX_E_IPC_RESERVED},
    {"resolve_found", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"resolve_found", 0, 1, 4, PBX_E_IPC_DISCRIMINANT},
    {"resolve_found", 4, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"resolve_found", 2, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"resolve_found", 24, 4, 0, PBX_E_IPC_GENERATION},
    {"resolve_found", 0, 1, PBX_IPC_RESOLVE_NOT_FOUND,
     PBX_E_IPC_OUTCOME_FIELDS},
    {"resolve_not_found", 2, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"resolve_not_found", 8, 8, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"resolve_not_found", 16, 8, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"resolve_not_found", 24, 4, 1, PBX_E_IPC_OUTCOME_FIELDS},
    {"resolve_not_found", 0, 1, PBX_IPC_RESOLVE_FOUND, PBX_E_IPC_GENERATION},
    {"resolve_denied", 2, 2, PBX_IPC_CLASS_FILE, PBX_E_IPC_OUTCOME_FIELDS},
    {"resolve_denied", 24, 4, 1, PBX_E_IPC_OUTCOME_FIELDS},
    /* DETACH, RETIRE */
    {"detach", 12, 4, 1, PBX_E_IPC_RESERVED},
    {"detach", 8, 4, 0, PBX_E_IPC_GENERATION},
    {"detach_reply", 12, 4, 1, PBX_E_IPC_RESERVED},
    {"detach_reply", 8, 4, 0, PBX_E_IPC_GENERATION},
    /* WITHDRAW, both directions */
    {"withdraw", 12, 4, 1, PBX_E_IPC_RESERVED},
    {"withdraw", 15, 1, 0x80, PBX_E_IPC_RESERVED},
    {"withdraw", 8, 4, 0, PBX_E_IPC_GENERATION},
    {"withdraw_reply", 12, 4, 1, PBX_E_IPC_RESERVED},
    {"withdraw_reply", 15, 1, 0x80, PBX_E_IPC_RESERVED},
    {"withdraw_reply", 8, 4, 0, PBX_E_IPC_GENERATION},
    {"retire", 22, 2, 1, PBX_E_IPC_RESERVED},
    {"retire", 20, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"retire", 16, 4, 0, PBX_E_IPC_GENERATION},
    {"retire_reply", 22, 2, 1, PBX_E_IPC_RESERVED},
    {"retire_reply", 20, 2, 6, PBX_E_IPC_DISCRIMINANT},
    {"retire_reply", 16, 4, 0, PBX_E_IPC_GENERATION},
    /* POLICY */
    {"policy", 43, 1, 1, PBX_E_IPC_RESERVED},
    {"policy", 46, 2, 1, PBX_E_IPC_RESERVED},
    {"policy", 44, 2, 0, PBX_E_IPC_BOUND},
    {"policy", 44, 2, PBX_IPC_ENTRY_LEN_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"policy", 44, 2, ENTRY_LEN + 1U, PBX_E_IPC_TRUNCATED},
    {"policy", 44, 2, ENTRY_LEN - 1U, PBX_E_IPC_TRAILING},
    {"policy", 36, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"policy", 38, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"policy", 40, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"policy", 41, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"policy", 42, 1, 3, PBX_E_IPC_DISCRIMINANT},
    {"policy", 24, 4, 0, PBX_E_IPC_GENERATION},
    {"policy", 32, 4, 0, PBX_E_IPC_GENERATION},
    {"policy", 36, 2, PBX_IPC_OPERATION_ENTRY_TOUCH, PBX_E_IPC_ADMISSION},
    {"policy", 38, 2, PBX_IPC_CLASS_DIRECTORY_ENTRY,
     PBX_E_IPC_DIR_ENTRY_WIDENED},
    {"policy", PBX_IPC_POLICY_FIXED_BYTES, 1, 0x0A, PBX_E_IPC_TEXT},
    {"policy_reply", 2, 2, 1, PBX_E_IPC_RESERVED},
    {"policy_reply", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"policy_reply", 0, 1, 4, PBX_E_IPC_DISCRIMINANT},
    {"policy_reply", 1, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"policy_reply", 0, 1, PBX_IPC_VERDICT_ALLOW, PBX_E_IPC_EXCEPTIONAL_ALLOW},
    /* PROMPT */
    {"prompt", 43, 1, 1, PBX_E_IPC_RESERVED},
    {"prompt", 52, 4, 1, PBX_E_IPC_RESERVED},
    {"prompt", 44, 2, 0, PBX_E_IPC_BOUND},
    {"prompt", 46, 2, PBX_IPC_LABEL_LEN_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"prompt", 48, 4, 0, PBX_E_IPC_BOUND},
    {"prompt", 48, 4, PBX_IPC_SELECTOR_LEN_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"prompt", 48, 4, SEL_LEN + 1U, PBX_E_IPC_TRUNCATED},
    {"prompt", 48, 4, SEL_LEN - 1U, PBX_E_IPC_TRAILING},
    {"prompt", 46, 2, LABEL_LEN + 1U, PBX_E_IPC_TRUNCATED},
    {"prompt", 36, 2, 8, PBX_E_IPC_DISCRIMINANT},
    {"prompt", 24, 4, 0, PBX_E_IPC_GENERATION},
    {"prompt", 32, 4, 0, PBX_E_IPC_GENERATION},
    {"prompt", 36, 2, PBX_IPC_OPERATION_ENTRY_METADATA_READ,
     PBX_E_IPC_ADMISSION},
    {"prompt", 38, 2, PBX_IPC_CLASS_DIRECTORY_ENTRY,
     PBX_E_IPC_DIR_ENTRY_WIDENED},
    {"prompt", PR + ENTRY_LEN, 1, 0x00, PBX_E_IPC_TEXT},
    {"prompt", PR, 1, 0x80, PBX_E_IPC_TEXT},
    {"prompt_answer", 1, 1, 1, PBX_E_IPC_RESERVED},
    {"prompt_answer", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"prompt_answer", 0, 1, 3, PBX_E_IPC_DISCRIMINANT},
    {"prompt_answer", 32, 4, 0, PBX_E_IPC_GENERATION},
    {"prompt_answer", 40, 4, 0, PBX_E_IPC_GENERATION},
    {"prompt_answer", 44, 4, 0, PBX_E_IPC_GENERATION},
    /* VIEW */
    {"view", 84, 4, 1, PBX_E_IPC_RESERVED},
    {"view", 80, 2, 0, PBX_E_IPC_BOUND},
    {"view", 82, 2, PBX_IPC_LABEL_LEN_BYTES_MAX + 1U, PBX_E_IPC_BOUND},
    {"view", 82, 2, LABEL_LEN + 1U, PBX_E_IPC_TRUNCATED},
    {"view", 82, 2, LABEL_LEN - 1U, PBX_E_IPC_TRAILING},
    {"view", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"view", 0, 1, 3, PBX_E_IPC_DISCRIMINANT},
    {"view", 1, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"view", 6, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"view", 60, 4, 0, PBX_E_IPC_GENERATION},
    {"view", 12, 4, 0, PBX_E_IPC_GENERATION},
    {"view", 64, 4, 0, PBX_E_IPC_GENERATION},
    {"view", 4, 2, PBX_IPC_OPERATION_ENTRY_TOUCH, PBX_E_IPC_ADMISSION},
    {"view", 6, 2, PBX_IPC_CLASS_DIRECTORY_ENTRY, PBX_E_IPC_DIR_ENTRY_WIDENED},
    {"view", 68, 4, 0, PBX_E_IPC_MODE_TARGET},
    {"view", 2, 1, PBX_IPC_MODE_RUNTIME_REPLY, PBX_E_IPC_MODE_TARGET},
    {"view", VW, 1, 0x09, PBX_E_IPC_TEXT},
    {"view", VW + ENTRY_LEN, 1, 0x09, PBX_E_IPC_TEXT},
    {"view_reply", 1, 1, 1, PBX_E_IPC_RESERVED},
    {"view_reply", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"view_reply", 8, 4, 0, PBX_E_IPC_GENERATION},
    /* INSTALL, REVOKE, WAKE */
    {"install", 29, 1, 1, PBX_E_IPC_RESERVED},
    {"install", 31, 1, 1, PBX_E_IPC_RESERVED},
    {"install", 24, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"install", 26, 2, 0, PBX_E_IPC_DISCRIMINANT},
    {"install", 28, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"install", 8, 4, 0, PBX_E_IPC_GENERATION},
    {"install", 20, 4, 0, PBX_E_IPC_GENERATION},
    {"install", 24, 2, PBX_IPC_OPERATION_ENTRY_TOUCH, PBX_E_IPC_ADMISSION},
    {"install", 26, 2, PBX_IPC_CLASS_DIRECTORY_ENTRY,
     PBX_E_IPC_DIR_ENTRY_WIDENED},
    {"install_reply", 1, 1, 1, PBX_E_IPC_RESERVED},
    {"install_reply", 28, 4, 1, PBX_E_IPC_RESERVED},
    {"install_reply", 0, 1, 0, PBX_E_IPC_DISCRIMINANT},
    {"install_reply", 0, 1, 3, PBX_E_IPC_DISCRIMINANT},
    {"install_reply", 12, 4, 0, PBX_E_IPC_GENERATION},
    {"install_reply", 24, 4, 0, PBX_E_IPC_GENERATION},
    {"revoke", 4, 4, 0, PBX_E_IPC_GENERATION},
    {"revoke", 16, 4, 0, PBX_E_IPC_GENERATION},
    {"revoke_reply", 4, 4, 0, PBX_E_IPC_GENERATION},
    {"wake", 12, 4, 1, PBX_E_IPC_RESERVED},
    {"wake", 8, 4, 0, PBX_E_IPC_GENERATION},
};

static void put_width(uint8_t *p, size_t width, uint64_t v)
{
    switch (width) {
    case 1:
        p[0] = (uint8_t)v;
        break;
    case 2:
        pbx_le_put16(p, (uint16_t)v);
        break;
    case 4:
        pbx_le_put32(p, (uint32_t)v);
        break;
    default:
        pbx_le_put64(p, v);
        break;
    }
}

PBX_TEST(ipc_every_malformed_field_gets_its_error)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(mutations); i++) {
        const struct mutation *m = &mutations[i];
        const struct sample *s = sample_named(m->sample);
        PBX_CHECK(s != NULL);
        if (s == NULL) {
            continue;
        }
        uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
        size_t alen = 0;
        PBX_REQUIRE(s->enc(a, sizeof(a), &alen) == PBX_OK);
        PBX_REQUIRE(PBX_IPC_HEADER_BYTES + m->off + m->width <= alen);
        put_width(a + PBX_IPC_HEADER_BYTES + m->off, m->width, m->value);
        pbx_err got = decode_exact(s, a, alen);
        if (got != m->want) {
            pbx_test_failf(
                __FILE__, __LINE__, "mutation %zu (%s @%zu): got %s, want %s",
                i, m->sample, m->off, pbx_err_name(got), pbx_err_name(m->want));
        }
        PBX_CHECK(got == m->want);
    }
}

PBX_TEST(ipc_corpus_frames_decode)
{
    const char *dir = getenv("PBX_IPC_CORPUS_DIR");
    for (size_t i = 0; i < PBX_ARRAY_LEN(samples); i++) {
        uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
        size_t alen = 0;
        PBX_REQUIRE(samples[i].enc(a, sizeof(a), &alen) == PBX_OK);
        PBX_CHECK_EQ(decode_exact(&samples[i], a, alen), PBX_OK);
        if (dir == NULL) {
            continue;
        }
        /* The fuzzer reads the transport cap count from the first byte. */
        char path[512];
        snprintf(path, sizeof(path), "%s/%s", dir, samples[i].name);
        FILE *fp = fopen(path, "wb");
        PBX_CHECK(fp != NULL);
        if (fp == NULL) {
            continue;
        }
        /* Seeds carry a nonzero seq: the fuzzer re-encodes with it. */
        PBX_CHECK_EQ(pbx_ipc_frame_set_seq(a, alen, 0x5E000000U + (uint32_t)i),
                     PBX_OK);
        uint8_t caps = (uint8_t)samples[i].caps;
        PBX_CHECK_EQ(fwrite(&caps, 1, 1, fp), 1U);
        PBX_CHECK_EQ(fwrite(a, 1, alen, fp), alen);
        PBX_CHECK_EQ(fclose(fp), 0);
    }
}

/* ---- every accepted byte is kept ---------------------------------------- */

/* Flips each body byte of every sample three ways. A flipped frame is
 * either refused, or it decodes and re-encodes to exactly the flipped
 * bytes: a decoder that skips a field, or an encoder that leaves one
 * unwritten or writes it at another offset, breaks the second rule for
 * the first accepted flip of that field (the round trip above cannot see
 * an encoder that drops a field, since re-encoding drops it again). */
PBX_TEST(ipc_every_accepted_body_byte_survives_a_round_trip)
{
    static const uint8_t flips[] = {0x01U, 0x80U, 0xFFU};
    for (size_t i = 0; i < PBX_ARRAY_LEN(samples); i++) {
        const struct sample *s = &samples[i];
        uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
        size_t alen = 0;
        size_t accepted = 0;
        PBX_REQUIRE(s->enc(a, sizeof(a), &alen) == PBX_OK);
        for (size_t k = PBX_IPC_HEADER_BYTES; k < alen; k++) {
            for (size_t x = 0; x < PBX_ARRAY_LEN(flips); x++) {
                uint8_t t[PBX_IPC_FRAME_BYTES_MAX];
                uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
                size_t blen = 0;
                pbx_ipc_frame f;
                memcpy(t, a, alen);
                t[k] ^= flips[x];
                if (pbx_ipc_frame_decode(t, alen, s->caps, &f) != PBX_OK ||
                    s->redo(&f, b, sizeof(b), &blen) != PBX_OK) {
                    continue;
                }
                accepted++;
                if (blen != alen || memcmp(t, b, alen) != 0) {
                    pbx_test_failf(__FILE__, __LINE__,
                                   "%s: body byte %zu ^ 0x%02x accepted but "
                                   "not kept",
                                   s->name, k - PBX_IPC_HEADER_BYTES,
                                   (unsigned)flips[x]);
                }
            }
        }
        /* Every sample with a body has at least one field a flip keeps
         * valid, so the loop above checked something. */
        PBX_CHECK(alen == PBX_IPC_HEADER_BYTES || accepted > 0U);
    }
}

/* Every record encodes into a buffer of exactly its size. */
PBX_TEST(ipc_every_encoder_fits_an_exact_buffer)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(samples); i++) {
        const struct sample *s = &samples[i];
        uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
        size_t alen = 0;
        PBX_REQUIRE(s->enc(a, sizeof(a), &alen) == PBX_OK);
        uint8_t *exact = malloc(alen);
        PBX_REQUIRE(exact != NULL);
        size_t blen = 0;
        PBX_CHECK_EQ(s->enc(exact, alen, &blen), PBX_OK);
        PBX_CHECK_EQ(blen, alen);
        PBX_CHECK(memcmp(exact, a, alen) == 0);
        free(exact);
    }
}

/* Every byte of every reserved field is checked: for each malformed-form
 * row that expects PBX_E_IPC_RESERVED, each byte of its field set alone
 * is refused the same way. */
PBX_TEST(ipc_every_reserved_byte_is_checked)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(mutations); i++) {
        const struct mutation *m = &mutations[i];
        const struct sample *s = sample_named(m->sample);
        if (m->want != PBX_E_IPC_RESERVED || s == NULL) {
            continue;
        }
        for (size_t k = 0; k < m->width; k++) {
            uint8_t a[PBX_IPC_FRAME_BYTES_MAX];
            size_t alen = 0;
            PBX_REQUIRE(s->enc(a, sizeof(a), &alen) == PBX_OK);
            PBX_REQUIRE(PBX_IPC_HEADER_BYTES + m->off + m->width <= alen);
            a[PBX_IPC_HEADER_BYTES + m->off + k] = 0x40U;
            pbx_err got = decode_exact(s, a, alen);
            if (got != PBX_E_IPC_RESERVED) {
                pbx_test_failf(__FILE__, __LINE__,
                               "%s reserved byte %zu: got %s", m->sample,
                               m->off + k, pbx_err_name(got));
            }
        }
    }
}
