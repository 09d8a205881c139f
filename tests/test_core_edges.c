/*
 * test_core_edges.c: every identifier lookup and generation step at its
 * edge, from the public frame down. A request and a grant sit in the last
 * record of their pools (index capacity - 1) with the largest generation;
 * every public operation that names them is sent with the index equal to
 * the capacity, generation zero, the generation below, the wrapped
 * neighbour (1) and the exact identity, and must refuse all but the
 * exact one without any effect (a capability sent along is deleted). The
 * generation wrap itself is shown on the request, grant and call pools:
 * UINT32_MAX becomes 1, never 0, and a call's sequence, which carries only
 * its generation's low 16 bits, keeps matching across the 16-bit wrap
 * while the sequence of the generation before is refused. The header
 * identities of peer replies (generation zero included) are corrupted
 * byte by byte in test_core_echo.c.
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* Pools of four records: the last one is index 3. */
#define EDGE_N 4U

/* Sends frame (len bytes) as the broker with the capabilities in slots;
 * returns the reply status and checks the core produced one. */
static uint32_t edge_raw(th_h *h, const uint8_t *frame, size_t len,
                         const uint32_t *slots, size_t n)
{
    pbx_core_out out;
    pbx_err core = PBX_OK;
    uint32_t st = th_public(h, TH_BROKER, frame, len, slots, n, &core, &out);
    PBX_CHECK_EQ(core, PBX_OK);
    return st;
}

/* Overwrites the header identity of an encoded frame. */
static void edge_put_id(uint8_t *frame, pbx_ipc_id id)
{
    pbx_le_put32(frame + 12, id.index);
    pbx_le_put32(frame + 16, id.gen);
}

/* SELECTOR of the first selector byte naming id (any generation). */
static uint32_t edge_selector(th_h *h, pbx_ipc_id id, uint32_t off)
{
    uint8_t buf[128];
    pbx_ipc_selector s = {off, 1U, sel + off};
    pbx_ipc_id one = {0, 1};
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_selector_encode(one, &s, buf, sizeof(buf), &n) ==
               PBX_OK);
    edge_put_id(buf, id);
    return edge_raw(h, buf, n, NULL, 0);
}

/* COMMIT naming id with a scope capability landed in a free transient
 * slot; *slot_out is where it landed. */
static uint32_t edge_commit(th_h *h, pbx_ipc_id id, uint32_t dest,
                            uint32_t *slot_out)
{
    uint8_t buf[64];
    pbx_ipc_commit c = {dest};
    pbx_ipc_id one = {0, 1};
    size_t n = 0;
    PBX_ASSERT(pbx_ipc_commit_encode(one, &c, buf, sizeof(buf), &n) == PBX_OK);
    edge_put_id(buf, id);
    uint32_t slot = th_put_cap(h, PBX_CORE_SLOT_NONE, PBX_CAPABI_KIND_ENDPOINT,
                               PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED);
    *slot_out = slot;
    return edge_raw(h, buf, n, &slot, 1);
}

/* The grant form of CANCEL naming grant (any generation). */
static uint32_t edge_cancel_grant(th_h *h, pbx_ipc_id grant)
{
    uint8_t buf[64];
    pbx_ipc_cancel c;
    size_t n = 0;
    memset(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant.index = 0U;
    c.grant.gen = 1U;
    PBX_ASSERT(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    /* The grant form names the grant in the header. */
    edge_put_id(buf, grant);
    return edge_raw(h, buf, n, NULL, 0);
}

/* Gives the record pool hands out next the generation gen - 1, so that
 * its allocation yields gen. */
static void edge_next_gen(th_h *h, pbx_bootstrap_pool pool, uint32_t gen)
{
    uint32_t head = h->core.pools[pool].free_head;
    PBX_REQUIRE(head != PBX_CORE_NIL);
    ((pbx_core_link *)pbx_core_inspect_fault(&h->core, pool, head))
        ->generation = gen - 1U;
}

/* Begins requests and leaves them open until the next record pool hands
 * out is its last one (index EDGE_N - 1), so that the next request (or,
 * for the grants pool, its grant) takes it. Returns how many were begun
 * (at most EDGE_N - 1); open[] receives them. */
static uint32_t edge_fill_front(th_h *h, pbx_bootstrap_pool pool,
                                pbx_ipc_id *open)
{
    pbx_ipc_begin b;
    uint32_t n = 0;
    th_default_begin(&b, sel, SEL_LEN);
    while (n + 1U < EDGE_N && h->core.pools[pool].free_head != EDGE_N - 1U) {
        uint32_t dest = 0;
        PBX_CHECK_EQ(th_begin(h, &b, &open[n], &dest), 0U);
        n++;
    }
    PBX_REQUIRE(h->core.pools[pool].free_head == EDGE_N - 1U);
    th_clear_trace(h);
    return n;
}

/* Cancels the n open front requests and runs the core until idle. */
static void edge_drain_front(th_h *h, const pbx_ipc_id *open, uint32_t n)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    for (uint32_t i = 0; i < n; i++) {
        PBX_CHECK_EQ(th_cancel(h, open[i]), 0U);
    }
    th_run(h);
    for (uint32_t i = 0; i < n; i++) {
        TH_CHECK_OUTCOME(h, open[i], &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    }
    th_clear_trace(h);
}

/* The state of request i. */
static uint16_t edge_req_state(const th_h *h, uint32_t i)
{
    return pbx_core_inspect_request(&h->core, i)->link.state;
}

/* Pending call k, or an all-zero record when there is none (which no
 * check accepts). */
static const th_pend *edges_pend(const th_h *h, uint32_t k)
{
    static const th_pend none;
    return k < h->npend ? &h->pend[k] : &none;
}

/* SELECTOR and COMMIT of a request in the last record with the largest
 * generation: the index equal to the capacity is UNKNOWN, generation zero
 * is refused by the codec (before any lookup), the generation below and
 * the wrapped neighbour are STALE; none of them stores a byte or takes
 * the scope, whose capability is deleted at once. commit_dest agrees. The
 * exact identity then works, and the reused record's generation wraps to
 * 1, never 0. */
PBX_TEST(core_edges_selector_and_commit_at_the_last_record)
{
    th_h *h = th_new(EDGE_N);
    pbx_ipc_id open[EDGE_N];
    pbx_ipc_begin b;
    pbx_ipc_id r = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    uint32_t nf = edge_fill_front(h, PBX_BOOTSTRAP_POOL_REQUESTS, open);
    edge_next_gen(h, PBX_BOOTSTRAP_POOL_REQUESTS, UINT32_MAX);
    PBX_CHECK_EQ(th_begin(h, &b, &r, &dest), 0U);
    PBX_CHECK_EQ(r.index, EDGE_N - 1U);
    PBX_CHECK_EQ(r.gen, UINT32_MAX);
    const pbx_ipc_id bad[] = {{EDGE_N, UINT32_MAX},
                              {r.index, 0U},
                              {r.index, UINT32_MAX - 1U},
                              {r.index, 1U}};
    const uint32_t want[] = {PBX_E_CORE_UNKNOWN, PBX_E_IPC_REQUEST_ID,
                             PBX_E_CORE_UNKNOWN, PBX_E_CORE_UNKNOWN};
    for (size_t k = 0; k < PBX_ARRAY_LEN(bad); k++) {
        PBX_CHECK_EQ(edge_selector(h, bad[k], 0U), want[k]);
        PBX_CHECK_EQ(pbx_core_inspect_request(&h->core, r.index)
                         ->selector_received_bytes,
                     0U);
    }
    /* The exact identity streams the whole selector. */
    for (uint32_t off = 0; off < SEL_LEN; off++) {
        PBX_CHECK_EQ(edge_selector(h, r, off), 0U);
    }
    for (size_t k = 0; k < PBX_ARRAY_LEN(bad); k++) {
        uint32_t out = 0;
        uint32_t held = pbx_core_held_caps(&h->core);
        uint32_t deleted = h->deleted;
        uint8_t buf[64];
        pbx_ipc_commit c = {dest};
        size_t n = 0;
        PBX_ASSERT(pbx_ipc_commit_encode(r, &c, buf, sizeof(buf), &n) ==
                   PBX_OK);
        edge_put_id(buf, bad[k]);
        PBX_CHECK(!pbx_core_commit_dest(&h->core, TH_BROKER, buf, n, 1U, &out));
        PBX_CHECK_EQ(edge_commit(h, bad[k], dest, &out), want[k]);
        PBX_CHECK_EQ(h->deleted, deleted + 1U);
        PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
        PBX_CHECK_EQ(edge_req_state(h, r.index), PBX_CORE_ST_OPEN);
        PBX_CHECK(th_conserved(h));
    }
    uint8_t buf[64];
    pbx_ipc_commit c = {dest};
    size_t n = 0;
    uint32_t got = 0;
    PBX_ASSERT(pbx_ipc_commit_encode(r, &c, buf, sizeof(buf), &n) == PBX_OK);
    PBX_CHECK(pbx_core_commit_dest(&h->core, TH_BROKER, buf, n, 1U, &got));
    PBX_CHECK_EQ(got, dest);
    PBX_CHECK_EQ(th_commit(h, r, dest, dest), 0U);
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, r, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    edge_drain_front(h, open, nf);
    PBX_CHECK(th_quiescent(h));
    /* The next use of every record is generation 1 or higher; the last
     * request record went from UINT32_MAX to 1. */
    nf = edge_fill_front(h, PBX_BOOTSTRAP_POOL_REQUESTS, open);
    PBX_CHECK_EQ(th_begin(h, &b, &r, &dest), 0U);
    PBX_CHECK_EQ(r.index, EDGE_N - 1U);
    PBX_CHECK_EQ(r.gen, 1U);
    pbx_ipc_id old = {r.index, UINT32_MAX};
    PBX_CHECK_EQ(edge_selector(h, old, 0U), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(th_cancel(h, r), 0U);
    edge_drain_front(h, open, nf);
    th_run(h);
    th_clear_trace(h);
    th_free(h);
}

/* The grant form of CANCEL names the grant in the last record of its pool
 * with the largest generation: capacity, zero, below and the wrapped
 * neighbour are refused and the grant stays LIVE; the exact identity ends
 * it, and the record's next use is generation 1. */
PBX_TEST(core_edges_grant_cancel_at_the_last_record)
{
    th_h *h = th_new(EDGE_N);
    pbx_ipc_id open[EDGE_N];
    pbx_ipc_begin b;
    pbx_ipc_id r = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    uint32_t nf = edge_fill_front(h, PBX_BOOTSTRAP_POOL_GRANTS, open);
    edge_next_gen(h, PBX_BOOTSTRAP_POOL_GRANTS, UINT32_MAX);
    pbx_ipc_id g = th_approve(h, &b, sel, false, &r, NULL);
    PBX_CHECK_EQ(g.index, EDGE_N - 1U);
    PBX_CHECK_EQ(g.gen, UINT32_MAX);
    const pbx_ipc_id bad[] = {{EDGE_N, UINT32_MAX},
                              {g.index, 0U},
                              {g.index, UINT32_MAX - 1U},
                              {g.index, 1U}};
    /* Generation zero with a nonzero index breaks CANCEL's header rule. */
    const uint32_t want[] = {PBX_E_CORE_UNKNOWN, PBX_E_IPC_REQUEST_ID,
                             PBX_E_CORE_UNKNOWN, PBX_E_CORE_UNKNOWN};
    uint32_t held = pbx_core_held_caps(&h->core);
    for (size_t k = 0; k < PBX_ARRAY_LEN(bad); k++) {
        PBX_CHECK_EQ(edge_cancel_grant(h, bad[k]), want[k]);
        PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                     PBX_CORE_ST_LIVE);
        PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
        PBX_CHECK_EQ(th_run(h), 0U);
        TH_TRACE(h, "");
    }
    PBX_CHECK_EQ(edge_cancel_grant(h, g), 0U);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                 PBX_CORE_ST_REVOKE);
    th_run(h);
    TH_TRACE(h, "del=69 view- retire");
    PBX_CHECK_EQ(edge_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
    edge_drain_front(h, open, nf);
    PBX_CHECK(th_quiescent(h));
    /* Reuse: the wrapped generation names the new grant. */
    nf = edge_fill_front(h, PBX_BOOTSTRAP_POOL_GRANTS, open);
    pbx_ipc_id g2 = th_approve(h, &b, sel, false, &r, NULL);
    PBX_CHECK_EQ(g2.index, g.index);
    PBX_CHECK_EQ(g2.gen, 1U);
    PBX_CHECK_EQ(edge_cancel_grant(h, g), PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(edge_cancel_grant(h, g2), 0U);
    th_run(h);
    edge_drain_front(h, open, nf);
    th_clear_trace(h);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The delivery token of a terminal reply is a request identity too: the
 * capacity, generation zero, the generation below and the wrapped
 * neighbour are PBX_E_CORE_TOKEN and change nothing; the exact token
 * retires the request. */
PBX_TEST(core_edges_delivery_token_at_the_last_record)
{
    th_h *h = th_new(EDGE_N);
    pbx_ipc_id open[EDGE_N];
    pbx_ipc_begin b;
    pbx_ipc_id r = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    uint32_t nf = edge_fill_front(h, PBX_BOOTSTRAP_POOL_REQUESTS, open);
    edge_next_gen(h, PBX_BOOTSTRAP_POOL_REQUESTS, UINT32_MAX);
    pbx_ipc_id g = th_approve(h, &b, sel, true, &r, NULL);
    PBX_CHECK_EQ(r.index, EDGE_N - 1U);
    PBX_CHECK_EQ(r.gen, UINT32_MAX);
    const pbx_ipc_id bad[] = {{EDGE_N, UINT32_MAX},
                              {r.index, 0U},
                              {r.index, UINT32_MAX - 1U},
                              {r.index, 1U},
                              {UINT32_MAX, UINT32_MAX}};
    for (size_t k = 0; k < PBX_ARRAY_LEN(bad); k++) {
        PBX_CHECK_EQ(pbx_core_on_reply_delivered(&h->core, bad[k].index,
                                                 bad[k].gen, true),
                     PBX_E_CORE_TOKEN);
        PBX_CHECK_EQ(edge_req_state(h, r.index), PBX_CORE_ST_DECIDED);
    }
    PBX_CHECK_EQ(pbx_core_on_reply_delivered(&h->core, r.index, r.gen, true),
                 PBX_OK);
    PBX_CHECK(pbx_core_inspect_request(&h->core, r.index)->link.live == 0U);
    PBX_CHECK_EQ(pbx_core_on_reply_delivered(&h->core, r.index, r.gen, true),
                 PBX_E_CORE_TOKEN);
    PBX_CHECK_EQ(th_consume(h, g), 0U);
    th_run(h);
    edge_drain_front(h, open, nf);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* Generation zero is refused in every correlation a public frame can
 * carry: a generation-zero CANCEL without its job generation, and an
 * EXPIRE of job generation zero, are refused by the codec and end
 * nothing. */
PBX_TEST(core_edges_job_generation_zero_correlates_nothing)
{
    th_h *h = th_new(EDGE_N);
    pbx_ipc_begin b;
    pbx_ipc_id r = {0, 0};
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    /* Kept undelivered: the request stays, so a correlation reaches it. */
    pbx_ipc_id g = th_approve(h, &b, sel, true, &r, NULL);
    uint8_t buf[64];
    size_t n = 0;
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.by_correlation = true;
    c.job_id = b.ctx.job_id;
    c.job_gen = b.ctx.job_gen;
    c.session = b.ctx.session;
    PBX_ASSERT(pbx_ipc_cancel_encode(&c, buf, sizeof(buf), &n) == PBX_OK);
    /* The job generation is the body word at offset 16. */
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 16U, 0U);
    PBX_CHECK_EQ(edge_raw(h, buf, n, NULL, 0), PBX_E_IPC_GENERATION);
    pbx_ipc_expire e;
    memset(&e, 0, sizeof(e));
    e.kind = PBX_IPC_EXPIRE_JOB;
    e.job_id = b.ctx.job_id;
    e.job_gen = b.ctx.job_gen;
    PBX_ASSERT(pbx_ipc_expire_encode(&e, buf, sizeof(buf), &n) == PBX_OK);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 4U, 0U);
    PBX_CHECK_EQ(edge_raw(h, buf, n, NULL, 0), PBX_E_IPC_GENERATION);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                 PBX_CORE_ST_LIVE);
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    /* The same frames with the real job generation end the grant. */
    PBX_CHECK_EQ(th_cancel_corr(h, b.ctx.job_id, b.ctx.job_gen, b.ctx.session),
                 0U);
    PBX_CHECK_EQ(pbx_core_inspect_grant(&h->core, g.index)->link.state,
                 PBX_CORE_ST_REVOKE);
    th_run(h);
    /* The published approval stays as published until delivered. */
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, r, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    th_clear_trace(h);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* A call's seq is its record's whole generation, drawn from the core's
 * call serial (issue 22 item 6: once only its low 16 bits). At the wrap
 * the serial steps from UINT32_MAX to 1, never 0: a RESOLVE at
 * UINT32_MAX, the POLICY after it (the same record) at 1 and its reply
 * taken, while the replayed RESOLVE reply (seq UINT32_MAX) is refused
 * with its receipt; the record's generation stays the seq it carries. */
PBX_TEST(core_edges_call_seq_across_the_generation_wraps)
{
    th_h *h = th_new(EDGE_N);
    pbx_ipc_begin b;
    th_reply old;
    th_default_begin(&b, sel, SEL_LEN);
    h->hold = true;
    uint32_t o = h->core.pools[PBX_BOOTSTRAP_POOL_CALLS].free_head;
    h->core.call_serial = UINT32_MAX - 1U;
    pbx_ipc_id r = {0, 0};
    PBX_CHECK_EQ(th_open(h, &b, sel, &r), 0U);
    uint32_t k = th_run_to(h, "resolve");
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(edges_pend(h, k)->seq, UINT32_MAX);
    PBX_CHECK_EQ(pbx_core_inspect_call(&h->core, o)->link.generation,
                 UINT32_MAX);
    th_reply_build(h, k, &old);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    /* The POLICY call reuses record o at generation 1, never 0. */
    k = th_run_to(h, "policy");
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(pbx_core_inspect_call(&h->core, o)->link.generation, 1U);
    PBX_CHECK_EQ(edges_pend(h, k)->seq, 1U);
    PBX_CHECK_EQ(pbx_core_inspect_seq(&h->core, o), 1U);
    /* The replayed RESOLVE reply names generation UINT32_MAX: refused,
     * its object receipt deleted, the POLICY call still outstanding. */
    uint32_t held = pbx_core_held_caps(&h->core);
    uint32_t deleted = h->deleted;
    PBX_CHECK_EQ(th_reply_send(h, &old), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(h->deleted, deleted + 1U);
    PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
    PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), 1U);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(edge_req_state(h, r.index), PBX_CORE_ST_INSTALL);
    h->hold = false;
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, r, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    th_run(h);
    th_clear_trace(h);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* The seq is matched on the call's whole generation: a record reused
 * 2^16 times (the generation a 16-bit seq could not tell from its
 * first use) gives a reply to that first use nothing to match. The
 * RESOLVE goes out with seq 0x10001 in record o; the same reply bytes
 * with seq 1 (what a 16-bit scheme would have sent 2^16 uses ago) are
 * refused, and so is the exact seq with another request's identity; the
 * exact reply is taken. */
PBX_TEST(core_edges_call_seq_alias_needs_the_same_identity)
{
    th_h *h = th_new(EDGE_N);
    pbx_ipc_begin b;
    th_reply r;
    th_default_begin(&b, sel, SEL_LEN);
    h->hold = true;
    h->core.call_serial = 0x10000U;
    pbx_ipc_id a = {0, 0};
    PBX_CHECK_EQ(th_open(h, &b, sel, &a), 0U);
    uint32_t k = th_run_to(h, "resolve");
    PBX_REQUIRE(k != TH_NONE);
    PBX_CHECK_EQ(edges_pend(h, k)->seq, 0x10001U);
    th_reply_build(h, k, &r);
    PBX_REQUIRE(pbx_ipc_frame_set_seq(r.frame, r.len, 1U) == PBX_OK);
    PBX_CHECK_EQ(th_reply_send(h, &r), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 1U);
    PBX_CHECK_EQ(edge_req_state(h, a.index), PBX_CORE_ST_RESOLVE);
    th_reply_build(h, k, &r);
    pbx_le_put32(r.frame + 16, a.gen + 1U);
    PBX_CHECK_EQ(th_reply_send(h, &r), PBX_OK);
    PBX_CHECK_EQ(h->core.replies_refused, 2U);
    PBX_CHECK_EQ(edge_req_state(h, a.index), PBX_CORE_ST_RESOLVE);
    PBX_CHECK_EQ(th_deliver(h, k), PBX_OK);
    PBX_CHECK_EQ(edge_req_state(h, a.index), PBX_CORE_ST_POLICY);
    h->hold = false;
    th_run(h);
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, a, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
    th_run(h);
    th_clear_trace(h);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}
