/*
 * test_core_oneanswer.c: the public endpoint gives one refusal for "not
 * yours" and "does not exist" (issue 20, item 3). For every public op that
 * names a request or a grant (SELECTOR, DECISION, CANCEL in its three
 * forms, CONSUME), a caller that is not the owner gets exactly the answer
 * for an id that names nothing (out of range, free, stale generation):
 * PBX_E_CORE_UNKNOWN, so no holder of the endpoint learns whether someone
 * else's request or grant is live. Each check fails on a core that answers
 * a live foreign id with another status (before this part: PARTITION,
 * NOT_OWNER, STALE or AMBIGUOUS).
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))
/* A caller on the public endpoint that began nothing (not the broker). */
#define STRANGER (TH_BADGE + 2U)

/* What ask answers for id from the stranger. */
typedef uint32_t (*oa_ask)(th_h *h, pbx_ipc_id id);

static uint32_t oa_decision(th_h *h, pbx_ipc_id id)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    uint32_t st = th_decision(h, id, &d, &xfer);
    PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
    return st;
}

static uint32_t oa_selector(th_h *h, pbx_ipc_id id)
{
    return th_selector(h, id, 0U, sel, SEL_LEN);
}

/* Checks that ask gives the stranger the same refusal, UNKNOWN, for the
 * live foreign id, the same index one generation later and earlier
 * (stale), and an index past the pool (missing); nothing moves. */
static void oa_same(th_h *h, oa_ask ask, pbx_ipc_id live)
{
    pbx_ipc_id later = {live.index, live.gen + 1U};
    pbx_ipc_id past = {1000U, live.gen};
    uint32_t held = pbx_core_held_caps(&h->core);
    h->badge = STRANGER;
    PBX_CHECK_EQ(ask(h, live), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(ask(h, later), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(ask(h, past), PBX_E_CORE_UNKNOWN);
    if (live.gen > 1U) {
        pbx_ipc_id earlier = {live.index, live.gen - 1U};
        PBX_CHECK_EQ(ask(h, earlier), PBX_E_CORE_UNKNOWN);
    }
    h->badge = TH_BROKER;
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
}

/* An open request (selector streaming) and an in-flight one (at the
 * prompt): SELECTOR, DECISION and the exact CANCEL of each answer the
 * stranger as if it did not exist. */
PBX_TEST(core_oneanswer_requests_not_yours_equals_missing)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id open = {0, 0};
    pbx_ipc_id parked = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_CHECK_EQ(th_begin(h, &b, &open, &dest), 0U);
    th_clear_trace(h);
    oa_same(h, oa_selector, open);
    oa_same(h, oa_decision, open);
    oa_same(h, th_cancel, open);
    pbx_ipc_begin x;
    th_default_begin(&x, sel, SEL_LEN);
    x.ctx.job_id = 77U;
    PBX_CHECK_EQ(th_open_parked(h, &x, sel, &parked), 0U);
    oa_same(h, oa_decision, parked);
    oa_same(h, th_cancel, parked);
    /* The owner still gets its own answers. */
    PBX_CHECK_EQ(th_selector(h, open, 0U, sel, SEL_LEN), 0U);
    PBX_CHECK_EQ(oa_decision(h, parked), 0U);
    th_free(h);
}

/* A live, published grant: CONSUME and the grant CANCEL answer the
 * stranger as if it did not exist; the owner consumes it afterwards. */
PBX_TEST(core_oneanswer_grants_not_yours_equals_missing)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id g = th_approve(h, &b, sel, false, NULL, NULL);
    oa_same(h, th_consume, g);
    oa_same(h, th_cancel_grant, g);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The generation-zero CANCEL names a job and session: the stranger gets
 * UNKNOWN whether none, one or two of the broker's requests match, so it
 * learns neither that one exists nor that two do (ambiguity is only ever
 * reported to the owner of every match). */
PBX_TEST(core_oneanswer_correlation_not_yours_equals_missing)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_id a = {0, 0};
    pbx_ipc_id c = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    uint64_t job = b.ctx.job_id;
    uint32_t gen = b.ctx.job_gen;
    uint64_t ses = b.ctx.session;
    h->badge = STRANGER;
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), PBX_E_CORE_UNKNOWN);
    h->badge = TH_BROKER;
    PBX_CHECK_EQ(th_open_parked(h, &b, sel, &a), 0U);
    h->badge = STRANGER;
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), PBX_E_CORE_UNKNOWN);
    h->badge = TH_BROKER;
    PBX_CHECK_EQ(th_open_parked(h, &b, sel, &c), 0U);
    h->badge = STRANGER;
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), PBX_E_CORE_UNKNOWN);
    h->badge = TH_BROKER;
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    /* The owner of both is told the correlation is ambiguous. */
    PBX_CHECK_EQ(th_cancel_corr(h, job, gen, ses), PBX_E_CORE_AMBIGUOUS);
    th_free(h);
}
