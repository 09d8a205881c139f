/*
 * bench_core.c: `pbx-bench core`, full routine install-mode lifecycles
 * through the real core: BEGIN, SELECTOR, COMMIT, then the core's own
 * steps (RESOLVE, POLICY, INSTALL, DETACH, VIEW ACTIVE, release, wake),
 * DECISION and its delivery, CONSUME, then revocation and VIEW REMOVE
 * with RETIRE (sent together in one step). Each peer call is split-phase:
 * its reply is one more core event (pbx_core_on_peer_reply), so a
 * lifecycle is 22 events: 5 public frames, 1 delivery report, 9 steps
 * and 7 replies. Before measuring, half of the grant pool is filled with live
 * grants and a quarter of the request pool with open requests (which
 * hold grant records too: three quarters of the grant pool in use), so
 * the measured lifecycles run against a busy core. bench_measure is the
 * function callgrind collects (bench/bench.sh); setup is outside it.
 */
#include "bench/bench.h"

#include "sha2/pbx_sha2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/** The selector every lifecycle streams (one chunk). */
static const char bench_sel[] = "home/alice/reports/2024/q3-summary.pdf";

/* The client: the BEGIN it repeats and scratch for frames and replies. */
typedef struct bench_client {
    pbx_ipc_begin begin;
    uint8_t begin_frame[PBX_IPC_FRAME_BYTES_MAX];
    size_t begin_len;
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_core_out out;
} bench_client;

const uint8_t *bench_selector(uint32_t *len)
{
    *len = (uint32_t)(sizeof(bench_sel) - 1U);
    return (const uint8_t *)bench_sel;
}

bool bench_default_begin(pbx_ipc_begin *b)
{
    static const char entry[] = "/bin/viewer";
    static const char label[] = "open report";
    memset(b, 0, sizeof(*b));
    b->ctx.session = 0x5E55U;
    b->ctx.job_id = 0x70BU;
    b->ctx.job_gen = 2U;
    b->ctx.realm = 9U;
    b->ctx.operation = PBX_IPC_OPERATION_READ;
    b->ctx.object_class = PBX_IPC_CLASS_FILE;
    b->ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b->ctx.mode = PBX_IPC_MODE_INSTALL;
    b->ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    b->ctx.entry.len = (uint16_t)(sizeof(entry) - 1U);
    memcpy(b->ctx.entry.bytes, entry, sizeof(entry) - 1U);
    b->target.process_id = 0x9C0U;
    b->target.process_gen = 4U;
    b->target.slot = 40U;
    b->selector_len = (uint32_t)(sizeof(bench_sel) - 1U);
    b->label.len = (uint16_t)(sizeof(label) - 1U);
    memcpy(b->label.bytes, label, sizeof(label) - 1U);
    return pbx_sha2_digest((const uint8_t *)bench_sel, b->selector_len,
                           b->selector_digest) == PBX_OK;
}

/* Builds the BEGIN frame once; the client's own digest is not
 * powerboxd's work, so it is not measured. */
static bool bench_client_init(bench_client *c)
{
    memset(c, 0, sizeof(*c));
    return bench_default_begin(&c->begin) &&
           pbx_ipc_begin_encode(&c->begin, c->begin_frame,
                                sizeof(c->begin_frame),
                                &c->begin_len) == PBX_OK;
}

/* Sends one public frame with nslots capabilities and decodes the reply
 * header into *f. Returns false on a core error or an error status. */
static bool bench_public(bench_env *e, bench_client *c, const uint8_t *frame,
                         size_t len, const uint32_t *slots, size_t nslots,
                         pbx_ipc_frame *f)
{
    pbx_core_out *out = &c->out;
    e->events++;
    /* The client is a program launchd relays for: powerboxd accepts BEGIN
     * only from launchd's broker badge, which then owns the request. */
    if (pbx_core_on_public(&e->core, PBX_CORE_BADGE_LAUNCHD, frame, len, slots,
                           nslots, out) != PBX_OK) {
        return false;
    }
    uint16_t caps = out->transfer_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    return pbx_ipc_frame_decode(out->frame, out->len, caps, f) == PBX_OK &&
           f->status == 0U;
}

/* Steps the core until it is idle (bounded), delivering each peer reply
 * (one event each) before the next step, as a runtime would once the
 * reply arrived. */
static bool bench_run_idle(bench_env *e)
{
    for (uint32_t i = 0; i < 1000U; i++) {
        bool progressed = false;
        if (!bench_deliver_all(e) ||
            pbx_core_step(&e->core, &progressed) != PBX_OK) {
            return false;
        }
        if (!progressed && e->pend_count == 0U) {
            return true;
        }
        e->events += progressed ? 1U : 0U;
    }
    return false;
}

/* BEGIN and the one SELECTOR chunk; *id and *dest come from the reply. */
static bool bench_begin(bench_env *e, bench_client *c, pbx_ipc_id *id,
                        uint32_t *dest)
{
    pbx_ipc_frame f;
    pbx_ipc_begin_reply r;
    pbx_ipc_selector s = {0U, c->begin.selector_len,
                          (const uint8_t *)bench_sel};
    size_t n = 0;
    if (!bench_public(e, c, c->begin_frame, c->begin_len, NULL, 0, &f) ||
        pbx_ipc_begin_reply_decode(&f, &r) != PBX_OK) {
        return false;
    }
    *id = f.request;
    *dest = r.dest_slot;
    return pbx_ipc_selector_encode(*id, &s, c->buf, sizeof(c->buf), &n) ==
               PBX_OK &&
           bench_public(e, c, c->buf, n, NULL, 0, &f) &&
           pbx_ipc_empty_decode(&f, PBX_IPC_OP_SELECTOR | PBX_IPC_REPLY_BIT) ==
               PBX_OK;
}

/* COMMIT with the scope landed in dest, then the core runs to idle. */
static bool bench_commit(bench_env *e, bench_client *c, pbx_ipc_id id,
                         uint32_t dest)
{
    pbx_ipc_frame f;
    pbx_ipc_commit cm = {dest};
    size_t n = 0;
    uint32_t slot = bench_put_cap(e, dest, PBX_CAPABI_RIGHT_SEND);
    return slot != PBX_CORE_SLOT_NONE &&
           pbx_ipc_commit_encode(id, &cm, c->buf, sizeof(c->buf), &n) ==
               PBX_OK &&
           bench_public(e, c, c->buf, n, &slot, 1, &f) && bench_run_idle(e);
}

/* DECISION must be APPROVED; its delivery is reported so it retires. */
static bool bench_decision(bench_env *e, bench_client *c, pbx_ipc_id id,
                           pbx_ipc_id *grant)
{
    pbx_ipc_frame f;
    pbx_ipc_decision d;
    size_t n = 0;
    if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, c->buf, sizeof(c->buf),
                             &n) != PBX_OK ||
        !bench_public(e, c, c->buf, n, NULL, 0, &f) ||
        pbx_ipc_decision_reply_decode(&f, &d) != PBX_OK ||
        d.outcome != (uint8_t)PBX_IPC_OUTCOME_APPROVED ||
        c->out.token == PBX_CORE_NIL) {
        return false;
    }
    *grant = d.grant;
    e->events++;
    return pbx_core_on_reply_delivered(&e->core, c->out.token,
                                       c->out.token_generation,
                                       true) == PBX_OK &&
           bench_run_idle(e);
}

/* One lifecycle up to a live grant: BEGIN .. DECISION delivered. */
static bool bench_grant(bench_env *e, bench_client *c, pbx_ipc_id *grant)
{
    pbx_ipc_id id = {0U, 0U};
    uint32_t dest = 0;
    return bench_begin(e, c, &id, &dest) && bench_commit(e, c, id, dest) &&
           bench_decision(e, c, id, grant);
}

/* One full lifecycle: a live grant, CONSUME, and its whole cleanup. */
static bool bench_lifecycle(bench_env *e, bench_client *c)
{
    pbx_ipc_id grant = {0U, 0U};
    pbx_ipc_consume cs;
    pbx_ipc_frame f;
    size_t n = 0;
    if (!bench_grant(e, c, &grant)) {
        return false;
    }
    cs.grant = grant;
    return pbx_ipc_consume_encode(&cs, c->buf, sizeof(c->buf), &n) == PBX_OK &&
           bench_public(e, c, c->buf, n, NULL, 0, &f) && bench_run_idle(e);
}

/* The measured loop: callgrind collects exactly this function. */
BENCH_MEASURED static bool bench_measure(bench_env *e, bench_client *c,
                                         uint32_t n)
{
    bool ok = true;
    for (uint32_t i = 0; i < n && ok; i++) {
        ok = bench_lifecycle(e, c);
    }
    return ok;
}

/* Fills the pools: live grants, then open requests (BEGIN + SELECTOR;
 * each also holds the grant, decision and slot records BEGIN reserves). */
static bool bench_prefill(bench_env *e, bench_client *c, uint32_t live,
                          uint32_t open)
{
    for (uint32_t i = 0; i < live; i++) {
        pbx_ipc_id grant;
        if (!bench_grant(e, c, &grant)) {
            (void)fprintf(stderr, "bench: prefill grant %u failed\n", i);
            return false;
        }
    }
    for (uint32_t i = 0; i < open; i++) {
        pbx_ipc_id id;
        uint32_t dest = 0;
        if (!bench_begin(e, c, &id, &dest)) {
            (void)fprintf(stderr, "bench: prefill request %u failed\n", i);
            return false;
        }
    }
    return true;
}

/* Prints the result line bench.sh parses; checks conservation. */
static int bench_core_report(const bench_env *e, uint32_t live, uint32_t open,
                             uint32_t n, uint64_t events, uint64_t ns)
{
    uint32_t held = pbx_core_held_caps(&e->core);
    if (e->violations != 0U || held != live) {
        (void)fprintf(stderr, "bench: violations %u, held %u (want %u)\n",
                      e->violations, held, live);
        return 1;
    }
    (void)printf("core cap=%u live=%u open=%u n=%u events_per_lifecycle=%.2f "
                 "ns_per_lifecycle=%.1f arena_bytes=%zu "
                 "arena_bytes_per_request=%.0f\n",
                 e->capacity, live, open, n, (double)events / (double)n,
                 (double)ns / (double)n, e->arena_bytes,
                 (double)e->arena_bytes / (double)e->capacity);
    return 0;
}

int bench_core_main(int argc, char **argv)
{
    uint32_t cap = bench_arg_u32(argc, argv, "--cap", 64U);
    uint32_t live = bench_arg_u32(argc, argv, "--live", cap / 2U);
    uint32_t open = bench_arg_u32(argc, argv, "--open", cap / 4U);
    uint32_t n = bench_arg_u32(argc, argv, "--n", 100U);
    bench_client *c = calloc(1, sizeof(*c));
    bench_env *e = bench_env_new(cap);
    int rc = 1;
    if (c != NULL && e != NULL && n > 0U && live + open < cap &&
        bench_client_init(c) && bench_prefill(e, c, live, open)) {
        uint64_t ev0 = e->events;
        uint64_t t0 = bench_now_ns();
        bool ok = bench_measure(e, c, n);
        uint64_t ns = bench_now_ns() - t0;
        rc = ok ? bench_core_report(e, live, open, n, e->events - ev0, ns) : 1;
        if (!ok) {
            (void)fprintf(stderr, "bench: a measured lifecycle failed\n");
        }
    }
    bench_env_free(e);
    free(c);
    return rc;
}
