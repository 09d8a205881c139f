/*
 * test_core_inspect_views.c: the read-only views powerboxd writes its log
 * lines from (pbx_core_inspect_decision, pbx_core_inspect_selector) and
 * the one startup check of a PBX1 record (pbx_core_startup_check). Each
 * view is read for a record in every state it answers for, and refuses
 * the states it does not; every field it returns is checked. Every
 * refusal of the startup check is provoked with its exact verdict and
 * error, and each limit is also shown accepted at its edge. Where a view
 * guards against records that cannot disagree in a running core, the
 * record is changed through pbx_core_inspect_fault, read once, and put
 * back, so the guard's answer is what is checked.
 */
#include "bootstrap/pbx_bootstrap.h"
#include "core/pbx_core_inspect.h"
#include "core/pbx_core_layout.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* ---- decision view ------------------------------------------------------- */

/* Reads the decision view of id, requiring that it answers. */
static pbx_core_log_decision iv_decision(const th_h *h, pbx_ipc_id id)
{
    pbx_core_log_decision v;
    memset(&v, 0, sizeof(v));
    PBX_REQUIRE(pbx_core_inspect_decision(&h->core, id, &v));
    return v;
}

/* Checks the view's fields that every outcome shares: the request's
 * identity, the BEGIN context borrowed from the request record and the
 * committed selector's length. */
static void iv_common(const th_h *h, const pbx_core_log_decision *v,
                      pbx_ipc_id id, const pbx_ipc_begin *b)
{
    PBX_CHECK_EQ(v->request.index, id.index);
    PBX_CHECK_EQ(v->request.gen, id.gen);
    PBX_CHECK(v->ctx == &pbx_core_inspect_request(&h->core, id.index)->ctx.ctx);
    PBX_CHECK_EQ(v->ctx->job_id, b->ctx.job_id);
    PBX_CHECK_EQ(v->ctx->job_gen, b->ctx.job_gen);
    PBX_CHECK_EQ(v->selector_len, b->selector_len);
}

/* Opens one request with a fresh job generation and runs the core until
 * idle; returns the request. */
static pbx_ipc_id iv_decide(th_h *h, pbx_ipc_begin *b)
{
    pbx_ipc_id id = {0, 0};
    b->ctx.job_gen += 1U;
    PBX_CHECK_EQ(th_open(h, b, sel, &id), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    return id;
}

/* The state of request id's record. */
static uint16_t iv_state(const th_h *h, pbx_ipc_id id)
{
    return pbx_core_inspect_request(&h->core, id.index)->link.state;
}

/* An approval is "user" only when the request's own prompt record (its
 * index and generation) holds the exact APPROVE, else "policy": a
 * routine ALLOW at request 0 and at request 2 (neither ever holds a prompt
 * record: one is taken only when a prompt is due), a user's APPROVE at
 * request 1 (prompt record 0). Each names its grant. The pools hand out
 * records in index order from a fresh core, which the test checks before
 * it relies on it. */
PBX_TEST(core_inspect_views_approval_reason_is_the_requests_own_prompt)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id ids[3];
    pbx_ipc_id grants[3];
    static const char *const want[3] = {"policy", "user", "policy"};
    for (uint32_t k = 0; k < 3U; k++) {
        if (k == 1U) {
            th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        }
        b.ctx.job_gen += 1U;
        grants[k] = th_approve(h, &b, sel, true, &ids[k], NULL);
        PBX_CHECK_EQ(ids[k].index, k);
        PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, k)->prompt,
                     k == 1U ? 0U : PBX_CORE_NIL);
        pbx_core_log_decision v = iv_decision(h, ids[k]);
        iv_common(h, &v, ids[k], &b);
        PBX_CHECK_EQ(v.outcome, PBX_IPC_OUTCOME_APPROVED);
        PBX_CHECK_EQ(v.grant.index, grants[k].index);
        PBX_CHECK_EQ(v.grant.gen, grants[k].gen);
        PBX_CHECK(strcmp(v.reason, want[k]) == 0);
    }
    const pbx_core_prompt *q =
        pbx_core_inspect_record(&h->core, PBX_BOOTSTRAP_POOL_PROMPTS, 0U);
    PBX_CHECK_EQ(q->request, 1U);
    PBX_CHECK_EQ(q->request_generation, ids[1].gen);
    PBX_CHECK_EQ(q->answer, PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* The guards no running core's records take: a user-approved request
 * whose prompt record holds another answer, or whose prompt index is out
 * of range, reads "policy"; an outcome outside the four published ones
 * reads "unknown". Each record is changed through pbx_core_inspect_fault,
 * read once and restored, and the decision is then delivered as usual. */
PBX_TEST(core_inspect_views_guards_of_records_that_disagree)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_ipc_id id = {0, 0};
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    pbx_ipc_id g = th_approve(h, &b, sel, true, &id, NULL);
    PBX_CHECK(strcmp(iv_decision(h, id).reason, "user") == 0);
    pbx_core_request *r = (pbx_core_request *)pbx_core_inspect_fault(
        &h->core, PBX_BOOTSTRAP_POOL_REQUESTS, id.index);
    pbx_core_prompt *q = (pbx_core_prompt *)pbx_core_inspect_fault(
        &h->core, PBX_BOOTSTRAP_POOL_PROMPTS, r->prompt);
    q->answer = PBX_IPC_ANSWER_DENY;
    PBX_CHECK(strcmp(iv_decision(h, id).reason, "policy") == 0);
    q->answer = PBX_IPC_ANSWER_APPROVE;
    uint32_t prompt = r->prompt;
    r->prompt = PBX_CORE_NIL;
    PBX_CHECK(strcmp(iv_decision(h, id).reason, "policy") == 0);
    r->prompt = prompt;
    r->outcome = (uint16_t)PBX_IPC_OUTCOME_PENDING;
    pbx_core_log_decision v = iv_decision(h, id);
    PBX_CHECK(strcmp(v.reason, "unknown") == 0);
    PBX_CHECK_EQ(v.outcome, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(v.grant.index, 0U);
    PBX_CHECK_EQ(v.grant.gen, 0U);
    r->outcome = (uint16_t)PBX_IPC_OUTCOME_APPROVED;
    v = iv_decision(h, id);
    PBX_CHECK(strcmp(v.reason, "user") == 0);
    PBX_CHECK_EQ(v.grant.index, g.index);
    PBX_CHECK_EQ(v.grant.gen, g.gen);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* Every non-approval names no grant and its own reason: a policy DENY
 * ("policy"), the user's DENY ("user"), a NOT_FOUND resolution
 * ("not-found") and a CANCEL of a request parked at the prompt
 * ("cancelled"). */
PBX_TEST(core_inspect_views_denials_name_their_reason)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    h->deliver = false;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    pbx_ipc_id ids[4];
    ids[0] = iv_decide(h, &b);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_USER_DENY, 0, 0);
    ids[1] = iv_decide(h, &b);
    th_push(h, PBX_CORE_ROUTE_VFSD, TH_NOT_FOUND, 0, 0);
    ids[2] = iv_decide(h, &b);
    b.ctx.job_gen += 1U;
    PBX_CHECK_EQ(th_open_parked(h, &b, sel, &ids[3]), 0U);
    PBX_CHECK_EQ(th_cancel(h, ids[3]), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    static const uint32_t outcome[4] = {
        PBX_IPC_OUTCOME_DENIED, PBX_IPC_OUTCOME_DENIED,
        PBX_IPC_OUTCOME_NOT_FOUND, PBX_IPC_OUTCOME_CANCELLED};
    static const char *const reason[4] = {"policy", "user", "not-found",
                                          "cancelled"};
    for (uint32_t k = 0; k < 4U; k++) {
        pbx_core_log_decision v = iv_decision(h, ids[k]);
        PBX_CHECK_EQ(v.request.index, ids[k].index);
        PBX_CHECK_EQ(v.request.gen, ids[k].gen);
        PBX_CHECK_EQ(v.outcome, outcome[k]);
        PBX_CHECK_EQ(v.grant.index, 0U);
        PBX_CHECK_EQ(v.grant.gen, 0U);
        PBX_CHECK_EQ(v.selector_len, SEL_LEN);
        PBX_CHECK(strcmp(v.reason, reason[k]) == 0);
    }
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* The view answers from publication until retirement, in each of NOTIFY
 * (the wake refused), DELIVERED (the reply went before the wake) and
 * DECIDED (the wake went, the reply not yet), and for no other record: a
 * request still OPEN, a wrong generation, a retired request. An approval
 * whose grant was consumed and freed before its decision was delivered
 * still reads APPROVED, naming no grant. */
PBX_TEST(core_inspect_views_decision_answers_only_while_published)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    pbx_core_log_decision v;
    memset(&v, 0x5A, sizeof(v));
    pbx_ipc_id open = {0, 0};
    uint32_t dest = 0;
    PBX_CHECK_EQ(th_begin(h, &b, &open, &dest), 0U);
    PBX_CHECK_EQ(iv_state(h, open), PBX_CORE_ST_OPEN);
    PBX_CHECK(!pbx_core_inspect_decision(&h->core, open, &v));
    PBX_CHECK_EQ(v.outcome, 0x5A5A5A5AU);
    th_push_wake(h, PBX_CORE_IO_FAILED);
    b.ctx.job_gen += 1U;
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open(h, &b, sel, &id), 0U);
    th_run(h);
    PBX_CHECK_EQ(iv_state(h, id), PBX_CORE_ST_NOTIFY);
    PBX_CHECK_EQ(iv_decision(h, id).outcome, PBX_IPC_OUTCOME_APPROVED);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(iv_state(h, id), PBX_CORE_ST_DELIVERED);
    v = iv_decision(h, id);
    iv_common(h, &v, id, &b);
    PBX_CHECK_EQ(v.grant.index, d.grant.index);
    PBX_CHECK_EQ(v.grant.gen, d.grant.gen);
    pbx_ipc_id stale = {id.index, id.gen + 1U};
    PBX_CHECK(!pbx_core_inspect_decision(&h->core, stale, &v));
    pbx_core_on_tick(&h->core);
    th_run(h);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, id.index)->link.live, 0U);
    PBX_CHECK(!pbx_core_inspect_decision(&h->core, id, &v));
    /* Approved, woken, undelivered (DECIDED); the grant then consumed. */
    b.ctx.job_gen += 1U;
    pbx_ipc_id req = {0, 0};
    pbx_ipc_id g = th_approve(h, &b, sel, true, &req, NULL);
    PBX_CHECK_EQ(iv_state(h, req), PBX_CORE_ST_DECIDED);
    PBX_CHECK_EQ(iv_decision(h, req).grant.gen, g.gen);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.live, 0U);
    PBX_CHECK_EQ(iv_state(h, req), PBX_CORE_ST_DECIDED);
    v = iv_decision(h, req);
    iv_common(h, &v, req, &b);
    PBX_CHECK_EQ(v.outcome, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(v.grant.index, 0U);
    PBX_CHECK_EQ(v.grant.gen, 0U);
    PBX_CHECK(strcmp(v.reason, "policy") == 0);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- selector view ------------------------------------------------------- */

/* A 150-byte selector spans three chunks (60, 60 and 30 bytes): the view
 * copies it whole when cap allows, stops at cap inside the second chunk,
 * copies only what a request still OPEN has received so far, and copies
 * nothing for a request it does not know. */
PBX_TEST(core_inspect_views_selector_copies_chunks_up_to_cap)
{
    th_h *h = th_new(4);
    uint8_t long_sel[150];
    for (uint32_t k = 0; k < (uint32_t)sizeof(long_sel); k++) {
        long_sel[k] = (uint8_t)('a' + k % 26U);
    }
    PBX_CHECK_EQ(PBX_CORE_SELECTOR_CHUNK_DATA_BYTES, 60U);
    pbx_ipc_begin b;
    th_default_begin(&b, long_sel, (uint32_t)sizeof(long_sel));
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open(h, &b, long_sel, &id), 0U);
    PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, id.index)->selector_chunks,
                 3U);
    uint8_t buf[200];
    memset(buf, 0, sizeof(buf));
    PBX_CHECK_EQ(
        pbx_core_inspect_selector(&h->core, id, buf, (uint32_t)sizeof(buf)),
        150U);
    PBX_CHECK_MEM(buf, long_sel, sizeof(long_sel));
    PBX_CHECK_EQ(buf[150], 0U);
    memset(buf, 0, sizeof(buf));
    PBX_CHECK_EQ(pbx_core_inspect_selector(&h->core, id, buf, 100U), 100U);
    PBX_CHECK_MEM(buf, long_sel, 100U);
    PBX_CHECK_EQ(buf[100], 0U);
    PBX_CHECK_EQ(pbx_core_inspect_selector(&h->core, id, buf, 0U), 0U);
    /* A second request, still OPEN, with 70 of its 150 bytes received. */
    b.ctx.job_gen += 1U;
    pbx_ipc_id part = {0, 0};
    uint32_t dest = 0;
    PBX_CHECK_EQ(th_begin(h, &b, &part, &dest), 0U);
    PBX_CHECK_EQ(th_selector(h, part, 0U, long_sel, 70U), 0U);
    memset(buf, 0, sizeof(buf));
    PBX_CHECK_EQ(
        pbx_core_inspect_selector(&h->core, part, buf, (uint32_t)sizeof(buf)),
        70U);
    PBX_CHECK_MEM(buf, long_sel, 70U);
    PBX_CHECK_EQ(buf[70], 0U);
    pbx_ipc_id stale = {part.index, part.gen + 1U};
    PBX_CHECK_EQ(
        pbx_core_inspect_selector(&h->core, stale, buf, (uint32_t)sizeof(buf)),
        0U);
    PBX_CHECK(th_conserved(h));
    th_free(h);
}

/* ---- startup check ------------------------------------------------------- */

/* Fills g with a valid geometry of this build's compiled layouts, every
 * pool holding cap records (selector bytes: 64 per record), tslots
 * transient slots and the derived page count. */
static void iv_geometry(pbx_bootstrap_geometry *g, uint32_t cap,
                        uint32_t tslots)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = 4096U;
    pbx_core_pool_layouts(g->layout);
    for (size_t i = 0; i < (size_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g->capacity[i] = cap;
    }
    g->capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] =
        cap * PBX_CORE_SELECTOR_CHUNK_BYTES;
    g->capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] = tslots;
    g->call_window = 4U;
    g->capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * 4U;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g->time_ms[t] = 5000U;
    }
    PBX_REQUIRE(pbx_bootstrap_pages_compute(g, &g->arena_page_count) == PBX_OK);
}

/* Encodes g and runs the startup check on it; returns the verdict. */
static pbx_core_startup_verdict iv_check(const pbx_bootstrap_geometry *g,
                                         pbx_core_startup_result *out)
{
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    PBX_REQUIRE(pbx_bootstrap_encode(g, rec, sizeof(rec)) == PBX_OK);
    return pbx_core_startup_check(rec, sizeof(rec), out);
}

/* A record powerboxd would start with passes with every field filled in;
 * the transient limits pass at their edges (11 and 4016 slots). */
PBX_TEST(core_inspect_views_startup_check_accepts_at_each_limit)
{
    static const uint32_t tslots[3] = {40U, 11U, 4016U};
    for (uint32_t k = 0; k < 3U; k++) {
        pbx_bootstrap_geometry g;
        pbx_core_startup_result out;
        iv_geometry(&g, 8U, tslots[k]);
        PBX_CHECK_EQ(iv_check(&g, &out), PBX_CORE_STARTUP_OK);
        PBX_CHECK_EQ(out.verdict, PBX_CORE_STARTUP_OK);
        PBX_CHECK_EQ(out.err, PBX_OK);
        PBX_CHECK_EQ(out.transient_count, tslots[k] + 16U);
        PBX_CHECK_MEM(out.geo.capacity, g.capacity, sizeof(g.capacity));
        PBX_CHECK_EQ(out.geo.arena_page_count, g.arena_page_count);
        PBX_CHECK_EQ(out.layout.page_count, g.arena_page_count);
        PBX_CHECK_EQ(out.layout.call_window, 4U);
        PBX_CHECK_EQ(
            out.layout.pools[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS].capacity,
            tslots[k]);
    }
}

/* The record itself refused (exit 16): a short record and a changed byte
 * under the digest, each with its parse error and nothing else filled. */
PBX_TEST(core_inspect_views_startup_check_refuses_an_unparsed_record)
{
    pbx_bootstrap_geometry g;
    pbx_core_startup_result out;
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    iv_geometry(&g, 8U, 40U);
    PBX_REQUIRE(pbx_bootstrap_encode(&g, rec, sizeof(rec)) == PBX_OK);
    PBX_CHECK_EQ(pbx_core_startup_check(rec, sizeof(rec) - 1U, &out),
                 PBX_CORE_STARTUP_RECORD);
    PBX_CHECK_EQ(out.err, PBX_E_BOOTSTRAP_LENGTH);
    PBX_CHECK_EQ(out.transient_count, 0U);
    PBX_CHECK_EQ(out.geo.version, 0U);
    PBX_CHECK_EQ(out.layout.page_count, 0U);
    rec[PBX_BOOTSTRAP_DIGEST_OFFSET - 1U] ^= 1U;
    PBX_CHECK_EQ(pbx_core_startup_check(rec, sizeof(rec), &out),
                 PBX_CORE_STARTUP_RECORD);
    PBX_CHECK_EQ(out.verdict, PBX_CORE_STARTUP_RECORD);
    PBX_CHECK_EQ(out.err, PBX_E_BOOTSTRAP_DIGEST);
    PBX_CHECK_EQ(out.transient_count, 0U);
}

/* A grants layout other than this build's (exit 17) names its pool; a
 * patched page count one above the derived extent is refused as the
 * extent (exit 18). Both records parsed: the geometry is filled in, the
 * layout is not. */
PBX_TEST(core_inspect_views_startup_check_refuses_layout_and_extent)
{
    pbx_bootstrap_geometry g;
    pbx_core_startup_result out;
    iv_geometry(&g, 8U, 40U);
    g.layout[PBX_BOOTSTRAP_POOL_GRANTS].record_size_bytes +=
        g.layout[PBX_BOOTSTRAP_POOL_GRANTS].record_align_bytes;
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_CHECK_EQ(iv_check(&g, &out), PBX_CORE_STARTUP_LAYOUT);
    PBX_CHECK_EQ(out.err, PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_GRANTS);
    PBX_CHECK_EQ(out.geo.capacity[PBX_BOOTSTRAP_POOL_GRANTS], 8U);
    PBX_CHECK_EQ(out.transient_count, 56U);
    PBX_CHECK_EQ(out.layout.page_count, 0U);
    iv_geometry(&g, 8U, 40U);
    g.arena_page_count += 1U;
    PBX_CHECK_EQ(iv_check(&g, &out), PBX_CORE_STARTUP_EXTENT);
    PBX_CHECK_EQ(out.err, PBX_E_BOOTSTRAP_PAGE_EXTENT);
    PBX_CHECK_EQ(out.geo.arena_page_count, g.arena_page_count);
    PBX_CHECK_EQ(out.layout.page_count, 0U);
}

/* One transient slot past each limit: 4017 slots need a range of 4033
 * (exit 19, PBX_E_BOOTSTRAP_TRANSIENT_RANGE), 10 are too few to serve
 * (exit 29, PBX_E_BOOTSTRAP_TRANSIENT_MIN); both derived their layout. */
PBX_TEST(core_inspect_views_startup_check_refuses_transient_limits)
{
    pbx_bootstrap_geometry g;
    pbx_core_startup_result out;
    iv_geometry(&g, 8U, 4017U);
    PBX_CHECK_EQ(iv_check(&g, &out), PBX_CORE_STARTUP_TRANSIENT);
    PBX_CHECK_EQ(out.err, PBX_E_BOOTSTRAP_TRANSIENT_RANGE);
    PBX_CHECK_EQ(out.transient_count, 4033U);
    PBX_CHECK_EQ(out.layout.page_count, g.arena_page_count);
    iv_geometry(&g, 8U, 10U);
    PBX_CHECK_EQ(iv_check(&g, &out), PBX_CORE_STARTUP_CORE);
    PBX_CHECK_EQ(out.err, PBX_E_BOOTSTRAP_TRANSIENT_MIN);
    PBX_CHECK_EQ(out.transient_count, 26U);
    PBX_CHECK_EQ(out.layout.page_count, g.arena_page_count);
}

/* The largest record this build can accept, every pool at its documented
 * maximum capacity with the compiled layouts, derives its layout (it is
 * refused only for its transient range): the layout derivation after a
 * parse that passed cannot refuse for the arena's size, which is why the
 * startup check's last record refusal is unreachable. */
PBX_TEST(core_inspect_views_startup_check_largest_record_derives)
{
    pbx_bootstrap_geometry g;
    pbx_core_startup_result out;
    iv_geometry(&g, 8U, 40U);
    for (uint32_t i = 0; i < (uint32_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = pbx_bootstrap_capacity_max((pbx_bootstrap_pool)i);
    }
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&g, &g.arena_page_count) == PBX_OK);
    PBX_CHECK_EQ(iv_check(&g, &out), PBX_CORE_STARTUP_TRANSIENT);
    PBX_CHECK_EQ(out.err, PBX_E_BOOTSTRAP_TRANSIENT_RANGE);
    PBX_CHECK_EQ(out.transient_count, PBX_BOOTSTRAP_RECORDS_MAX + 16U);
    PBX_CHECK_EQ(out.layout.page_count, g.arena_page_count);
    /* Far inside the arena maximum: no alignment padding closes the gap. */
    PBX_CHECK(out.layout.arena_bytes < PBX_BOOTSTRAP_ARENA_BYTES_MAX / 4U);
}
