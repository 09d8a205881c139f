/*
 * test_e2e_liars_entry.c: a client that widens a directory-entry request,
 * told to the real powerboxd binary on launchd's broker with the honest
 * peers of liars.h around it. The seed admits exact entry-metadata reads
 * and touch updates only as one-shot directory-entry requests, never
 * widened to generic file metadata or a longer-lived grant
 * (pbx_ipc_admission_check). Every widening is refused at BEGIN with its
 * exact error, nothing is reserved (no descriptor kept), and the exact
 * one-shot requests are then admitted and served as ever.
 */
#define _GNU_SOURCE
#include "../runner/pbx_test.h"
#include "liars.h"

#include <string.h>
#include <unistd.h>

/* Offsets in BEGIN's body (ipc/pbx_ipc_public.c's layout) of the
 * operation, the class, the lifetime and the invocation id: a widened
 * BEGIN is written by hand, since the encoder refuses it. */
#define LRE_OPERATION  44U
#define LRE_CLASS      46U
#define LRE_LIFETIME   48U
#define LRE_INVOCATION 88U

/* One widening: the BEGIN's operation, class and lifetime, and the error
 * its refusal must name. */
typedef struct lre_case {
    uint16_t operation;
    uint16_t object_class;
    uint8_t lifetime;
    uint16_t error;
} lre_case;

#define LRE_TOUCH PBX_IPC_OPERATION_ENTRY_TOUCH
#define LRE_META  PBX_IPC_OPERATION_ENTRY_METADATA_READ
#define LRE_ENTRY PBX_IPC_CLASS_DIRECTORY_ENTRY
#define LRE_ONE   PBX_IPC_LIFETIME_ONE_SHOT
#define LRE_INV   PBX_IPC_LIFETIME_INVOCATION
#define LRE_JOB   PBX_IPC_LIFETIME_JOB
#define LRE_WIDE  PBX_E_IPC_DIR_ENTRY_WIDENED
#define LRE_ADMIT PBX_E_IPC_ADMISSION

/* Every widening: each entry operation made longer-lived; a directory
 * entry asked for every generic operation; each entry operation asked of
 * every other class (generic metadata of a file, a directory, a device,
 * an endpoint). */
static const lre_case lre_cases[] = {
    {LRE_TOUCH, LRE_ENTRY, LRE_INV, LRE_WIDE},
    {LRE_TOUCH, LRE_ENTRY, LRE_JOB, LRE_WIDE},
    {LRE_META, LRE_ENTRY, LRE_INV, LRE_WIDE},
    {LRE_META, LRE_ENTRY, LRE_JOB, LRE_WIDE},
    {PBX_IPC_OPERATION_READ, LRE_ENTRY, LRE_ONE, LRE_WIDE},
    {PBX_IPC_OPERATION_WRITE, LRE_ENTRY, LRE_ONE, LRE_WIDE},
    {PBX_IPC_OPERATION_EXECUTE, LRE_ENTRY, LRE_ONE, LRE_WIDE},
    {PBX_IPC_OPERATION_LIST, LRE_ENTRY, LRE_ONE, LRE_WIDE},
    {PBX_IPC_OPERATION_CREATE, LRE_ENTRY, LRE_ONE, LRE_WIDE},
    {LRE_TOUCH, PBX_IPC_CLASS_FILE, LRE_ONE, LRE_ADMIT},
    {LRE_TOUCH, PBX_IPC_CLASS_DIRECTORY, LRE_ONE, LRE_ADMIT},
    {LRE_TOUCH, PBX_IPC_CLASS_DEVICE, LRE_ONE, LRE_ADMIT},
    {LRE_TOUCH, PBX_IPC_CLASS_ENDPOINT, LRE_ONE, LRE_ADMIT},
    {LRE_META, PBX_IPC_CLASS_FILE, LRE_ONE, LRE_ADMIT},
    {LRE_META, PBX_IPC_CLASS_DIRECTORY, LRE_ONE, LRE_ADMIT},
    {LRE_META, PBX_IPC_CLASS_DEVICE, LRE_ONE, LRE_ADMIT},
    {LRE_META, PBX_IPC_CLASS_ENDPOINT, LRE_ONE, LRE_ADMIT},
};

/* The exact one-shot directory-entry BEGIN of operation op for sel. */
static void lre_begin_rec(pbx_ipc_begin *b, uint16_t op, const char *sel)
{
    lr_begin_rec(b, sel);
    b->ctx.operation = op;
    b->ctx.object_class = PBX_IPC_CLASS_DIRECTORY_ENTRY;
}

/* Sends the admitted BEGIN with c's operation, class and lifetime
 * written by hand (an invocation grant naming its invocation, so that the
 * widening is its only fault); returns the reply status or -1. */
static long lre_widened(lr_run *r, const lre_case *c)
{
    pbx_ipc_begin b;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    lre_begin_rec(&b, LRE_TOUCH, "docs/readme.txt");
    if (pbx_ipc_begin_encode(&b, out, sizeof(out), &n) != PBX_OK) {
        return -1;
    }
    uint8_t *body = out + PBX_IPC_HEADER_BYTES;
    pbx_le_put16(body + LRE_OPERATION, c->operation);
    pbx_le_put16(body + LRE_CLASS, c->object_class);
    body[LRE_LIFETIME] = c->lifetime;
    if (c->lifetime == (uint8_t)PBX_IPC_LIFETIME_INVOCATION) {
        pbx_le_put64(body + LRE_INVOCATION, 77U);
    }
    return lr_public(r->p.broker, out, n);
}

/* Runs the exact one-shot directory-entry request of operation op to its
 * approval and consumes it (*retires counts the RETIREs owed). Failures
 * are checks, never an abort, so that lr_stop still ends powerboxd. */
static void lre_exact(lr_run *r, uint16_t op, unsigned *retires)
{
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t status = 1;
    uint8_t out[64];
    size_t n = 0;
    lre_begin_rec(&b, op, "docs/readme.txt");
    bool open = lr_open(r, &b, "docs/readme.txt", 32U, &status);
    PBX_CHECK(open);
    PBX_CHECK_EQ(status, 0U);
    if (!open || r->nreq == 0U) {
        return;
    }
    unsigned k = r->nreq - 1U;
    PBX_CHECK(lr_serve_for(r, r->req[k], 10000));
    PBX_CHECK(lr_decision(r->p.broker, r->req[k], &d));
    PBX_CHECK_EQ(d.outcome, (unsigned)PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.reason, (unsigned)PBX_IPC_REASON_NONE);
    pbx_ipc_consume c = {d.grant};
    PBX_CHECK(pbx_ipc_consume_encode(&c, out, sizeof(out), &n) == PBX_OK);
    PBX_CHECK_EQ(lr_public(r->p.broker, out, n), 0L);
    r->want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)] = ++*retires;
    PBX_CHECK(lr_settle(r, 10000));
    if (r->scope[k] >= 0) {
        (void)close(r->scope[k]);
        r->scope[k] = -1;
    }
    r->nreq = 0;
}

PBX_TEST(liar_client_directory_entry_never_widened)
{
    lr_run r;
    unsigned retires = 0;
    size_t ncases = sizeof(lre_cases) / sizeof(lre_cases[0]);
    PBX_REQUIRE(lr_start(&r));
    /* Each widening refused with its own error on the broker, which
     * stays open; no peer is called and powerboxd's descriptors stay at
     * the baseline. Nothing is reserved either: the 17 refusals are more
     * than the harness's PBX1 has request records (8), and the exact
     * requests below are still begun. */
    for (size_t k = 0; k < ncases; k++) {
        PBX_CHECK_EQ(lre_widened(&r, &lre_cases[k]), (long)lre_cases[k].error);
        PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline);
    }
    for (unsigned i = 0; i < 8U; i++) {
        PBX_CHECK_EQ(r.seen[i], 0U);
    }
    /* The exact one-shot touch and metadata read are admitted and served
     * as ever, each consumed, removed and retired. */
    lre_exact(&r, LRE_TOUCH, &retires);
    lre_exact(&r, LRE_META, &retires);
    PBX_CHECK_EQ(r.seen[lr_op_slot(PBX_IPC_OP_RESOLVE, 0)], 2U);
    lr_stop(&r);
}
