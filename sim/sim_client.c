/*
 * sim_client.c: the simulated public callers. Each client models a program
 * whose requests launchd relays over its broker (so every request is begun
 * and owned by launchd's badge): it begins requests, streams selectors,
 * commits scopes, polls decisions, cancels, consumes and expires, valid
 * and invalid, interleaved across requests, and sometimes asks directly
 * from its own badge, which must be refused. Every reply is checked
 * against what the shadow state allows.
 */
#include "sim/sim_client.h"

#include "sha2/pbx_sha2.h"

#include <string.h>

static pbx_core_out sim_out;

const pbx_core_out *sim_public(sim_world *w, uint32_t badge,
                               const uint8_t *frame, size_t len,
                               const sim_cap *caps, size_t ncaps, uint32_t want)
{
    uint32_t slots[4];
    if (!pbx_core_public_ready(w->core)) {
        /* The runtime receives nothing while the core holds public
         * intake: the send waits in the kernel (here: is not made). */
        w->stat_held++;
        return NULL;
    }
    for (size_t i = 0; i < ncaps && i < 4U; i++) {
        slots[i] = sim_slot_put(w, &caps[i], i == 0U ? want : SIM_NIL);
        if (slots[i] == SIM_NIL) {
            return NULL;
        }
        w->led_in++;
    }
    w->public_transient = 0U;
    uint16_t op = len >= 8U ? pbx_le_get16(frame + 6) : 0U;
    w->cause = op == (uint16_t)PBX_IPC_OP_CONSUME  ? PBX_CORE_EV_CONSUME + 1U
               : op == (uint16_t)PBX_IPC_OP_CANCEL ? PBX_CORE_EV_CANCEL + 1U
               : op == (uint16_t)PBX_IPC_OP_EXPIRE ? PBX_CORE_EV_EXPIRE + 1U
                                                   : 0U;
    sim_event_add(w, SIM_EV_PUBLIC, badge, op, len, ncaps);
    pbx_err err =
        pbx_core_on_public(w->core, badge, frame, len, slots, ncaps, &sim_out);
    sim_after_core(w);
    if (err == PBX_E_CORE_INTAKE_HELD) {
        sim_fail(w,
                 "the core held intake of %zu capabilities while it "
                 "reported public intake ready",
                 ncaps);
        return NULL;
    }
    if (err != PBX_OK) {
        if (w->permanent == 0U) {
            sim_fail(w, "core fail-stop %s (exit %d) without a permanent fault",
                     pbx_err_name(err), (int)pbx_core_exit_status(w->core));
        }
        return NULL;
    }
    sim_event_add(w, SIM_EV_REPLY, sim_out.len,
                  sim_out.len >= 10U ? pbx_le_get16(sim_out.frame + 8) : 0U,
                  sim_out.token, sim_out.transfer_slot);
    if (w->public_transient > 0U && sim_out.len > 0U &&
        (sim_out.len < 10U || pbx_le_get16(sim_out.frame + 8) !=
                                  (uint16_t)PBX_E_CORE_CLEANUP_PENDING)) {
        sim_fail(w, "invariant 9: a deletion was pending but the reply "
                    "status is not CLEANUP_PENDING");
    }
    return &sim_out;
}

uint16_t sim_reply_status(const pbx_core_out *o, pbx_ipc_id *id)
{
    pbx_ipc_frame f;
    uint16_t caps = o->transfer_slot != PBX_CORE_SLOT_NONE ? 1U : 0U;
    if (o->len == 0U) {
        return UINT16_MAX;
    }
    if (pbx_ipc_frame_decode(o->frame, o->len, caps, &f) != PBX_OK ||
        (f.op & PBX_IPC_REPLY_BIT) == 0U) {
        return UINT16_MAX - 1U;
    }
    if (id != NULL) {
        *id = f.request;
    }
    return f.status;
}

/* Fills a valid, admissible context for client c. */
static void sim_begin_ctx(sim_world *w, uint32_t c, pbx_ipc_begin *b)
{
    memset(b, 0, sizeof(*b));
    b->ctx.session = 1000U + c;
    b->ctx.job_id = (uint64_t)c * 16U + sim_below(w, 3U) + 1U;
    b->ctx.job_gen = 1U + sim_below(w, 2U);
    b->ctx.realm = 7U;
    b->ctx.operation = (uint16_t)(1U + sim_below(w, 6U));
    /* A directory entry is admitted only for the entry operations. */
    static const uint16_t classes[] = {
        PBX_IPC_CLASS_FILE, PBX_IPC_CLASS_DIRECTORY, PBX_IPC_CLASS_DEVICE,
        PBX_IPC_CLASS_ENDPOINT};
    b->ctx.object_class = classes[sim_below(w, 4U)];
    b->ctx.lifetime = (uint8_t)(1U + sim_below(w, 3U));
    if (b->ctx.operation >= (uint16_t)PBX_IPC_OPERATION_ENTRY_METADATA_READ) {
        b->ctx.object_class = PBX_IPC_CLASS_DIRECTORY_ENTRY;
        b->ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    } else if (b->ctx.object_class == (uint16_t)PBX_IPC_CLASS_DIRECTORY_ENTRY) {
        /* A directory entry is admitted only for an exact one-shot entry
         * operation, never widened (PBX_E_IPC_DIR_ENTRY_WIDENED). */
        b->ctx.operation = (uint16_t)(PBX_IPC_OPERATION_ENTRY_METADATA_READ +
                                      (b->ctx.operation & 1U));
        b->ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    }
    /* launchd names the invocation of an invocation request, and of most
     * one-shot ones; two ids per job, so an INVOCATION expiry meets some
     * requests of the job and passes others by, and a one-shot request
     * made within an invocation ends with it. */
    if (b->ctx.lifetime == (uint8_t)PBX_IPC_LIFETIME_INVOCATION ||
        (b->ctx.lifetime == (uint8_t)PBX_IPC_LIFETIME_ONE_SHOT &&
         sim_chance(w, 600U))) {
        b->invocation_id = SIM_INVOCATION_FIRST + sim_below(w, 2U);
    }
    b->ctx.mode =
        sim_chance(w, 700U) ? PBX_IPC_MODE_INSTALL : PBX_IPC_MODE_RUNTIME_REPLY;
    b->ctx.urgency = sim_chance(w, 600U) ? PBX_IPC_URGENCY_ROUTINE
                                         : PBX_IPC_URGENCY_EXCEPTIONAL;
    b->ctx.entry.len = 8U;
    memcpy(b->ctx.entry.bytes, "/bin/app", 8U);
    if (b->ctx.mode == (uint8_t)PBX_IPC_MODE_INSTALL) {
        b->target.process_id = 500U + c;
        b->target.process_gen = 1U + sim_below(w, 3U);
        b->target.slot = 100U + sim_below(w, 50U);
    }
    b->label.len = (uint16_t)sim_below(w, 12U);
    memset(b->label.bytes, 'L', b->label.len);
}

/* Records the shadow of a request the core accepted from badge. */
static void sim_begin_accept(sim_world *w, uint32_t c, uint32_t badge,
                             pbx_ipc_id id, uint32_t dest,
                             const pbx_ipc_begin *b, const uint8_t *sel)
{
    if (id.index >= SIM_REQ_MAX || w->reqs[id.index].live != 0U) {
        sim_fail(w, "BEGIN returned request %u/%u that is already live",
                 id.index, id.gen);
        return;
    }
    sim_req *s = &w->reqs[id.index];
    if (s->gen != 0U && s->gen == id.gen) {
        sim_fail(w,
                 "invariant 7: request slot %u reused without a "
                 "generation bump (gen %u)",
                 id.index, id.gen);
        return;
    }
    if (dest < SIM_TFIRST || dest >= SIM_SLOTS ||
        w->slots[dest].reserved == 0U || w->slots[dest].res_owner != SIM_NIL) {
        sim_fail(w, "BEGIN destination %u is not a fresh reservation", dest);
        return;
    }
    memset(s, 0, sizeof(*s));
    s->live = 1U;
    s->gen = id.gen;
    s->client = c;
    s->badge = badge;
    s->begin = *b;
    memcpy(s->selector, sel, b->selector_len);
    s->dest = dest;
    s->begun_ms = w->now_ms;
    s->grant = SIM_NIL;
    w->slots[dest].res_owner = id.index;
    w->stat_begun++;
}

/* Free records BEGIN would take (requests and selector chunks), packed
 * so one comparison shows that a refused BEGIN took none. */
static uint32_t sim_begin_free(const sim_world *w)
{
    return w->core->pools[PBX_BOOTSTRAP_POOL_REQUESTS].free_count << 16U ^
           w->core->chunk_free_count;
}

/* Checks a BEGIN a client sent directly: always BROKER, nothing taken. */
static void sim_begin_refused(sim_world *w, uint32_t badge, uint16_t st,
                              uint32_t free_before)
{
    if (st != (uint16_t)PBX_E_CORE_BROKER) {
        sim_fail(w, "BEGIN from client badge %#x answered %#x, not BROKER",
                 badge, st);
        return;
    }
    if (sim_begin_free(w) != free_before) {
        sim_fail(w, "BEGIN from client badge %#x refused but took records",
                 badge);
        return;
    }
    w->stat_refused_direct++;
}

void sim_client_begin(sim_world *w, uint32_t c)
{
    static uint8_t sel[SIM_SEL_MAX];
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin b;
    size_t n = 0;
    sim_begin_ctx(w, c, &b);
    b.selector_len = sim_chance(w, 40U) ? 1U + sim_below(w, SIM_SEL_MAX)
                                        : 1U + sim_below(w, 120U);
    uint64_t bits = 0;
    for (uint32_t i = 0; i < b.selector_len; i++) {
        /* Eight selector bytes per draw. */
        bits = i % 8U == 0U ? sim_rand(w) : bits >> 8;
        sel[i] = (uint8_t)bits;
    }
    (void)pbx_sha2_digest(sel, b.selector_len, b.selector_digest);
    if (sim_fault_fires(w, SIM_F_CLIENT)) {
        /* COMMIT must refuse this digest, whichever of its 32 bytes (and
         * bit) is wrong: the comparison must cover every byte. */
        uint32_t at = sim_below(w, 32U);
        b.selector_digest[at] ^= (uint8_t)(1U << sim_below(w, 8U));
    }
    if (pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) != PBX_OK) {
        sim_fail(w, "sim: BEGIN encode failed");
        return;
    }
    /* Client c models a program whose requests launchd relays: in either
     * mode only launchd's exact-job broker can vouch for the context, so
     * the request is begun (and owned) by its badge. Under the client
     * fault the program asks directly and must be refused. */
    bool direct = sim_fault_fires(w, SIM_F_CLIENT);
    uint32_t badge = direct ? SIM_BADGE(c) : PBX_CORE_BADGE_LAUNCHD;
    uint32_t free_before = sim_begin_free(w);
    const pbx_core_out *o = sim_public(w, badge, buf, n, NULL, 0, 0);
    pbx_ipc_frame f;
    pbx_ipc_begin_reply br;
    uint16_t st = o != NULL ? sim_reply_status(o, NULL) : 0U;
    if (o != NULL && direct) {
        sim_begin_refused(w, badge, st, free_before);
        return;
    }
    if (o == NULL || st != 0U) {
        return;
    }
    if (pbx_ipc_frame_decode(o->frame, o->len, 0U, &f) != PBX_OK ||
        pbx_ipc_begin_reply_decode(&f, &br) != PBX_OK) {
        sim_fail(w, "BEGIN reply does not decode");
        return;
    }
    sim_begin_accept(w, c, badge, f.request, br.dest_slot, &b, sel);
}

void sim_client_selector(sim_world *w, uint32_t i)
{
    sim_req *s = &w->reqs[i];
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    uint32_t left = s->begin.selector_len - s->sent;
    uint32_t len = 1U + sim_below(w, PBX_IPC_SELECTOR_CHUNK_BYTES_MAX);
    pbx_ipc_selector q = {s->sent, len < left ? len : left,
                          s->selector + s->sent};
    pbx_ipc_id id = {i, s->gen};
    size_t n = 0;
    if (left == 0U ||
        pbx_ipc_selector_encode(id, &q, buf, sizeof(buf), &n) != PBX_OK) {
        return;
    }
    const pbx_core_out *o = sim_public(w, s->badge, buf, n, NULL, 0, 0);
    if (o != NULL && sim_reply_status(o, NULL) == 0U) {
        s->sent += q.len;
    } else if (o != NULL &&
               sim_reply_status(o, NULL) == (uint32_t)PBX_E_CORE_STATE) {
        /* No longer open (its OPEN deadline passed, or an EXPIRE ended
         * it): a real caller asks for the decision now. */
        s->ended = 1U;
    }
}
