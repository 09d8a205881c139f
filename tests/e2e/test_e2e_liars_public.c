/*
 * test_e2e_liars_public.c: the lies told to the real powerboxd binary on
 * launchd's broker endpoint rather than by a peer, with the honest peers
 * of liars.h around it: a COMMIT whose digest is wrong in any one of its
 * 32 bytes, identities that must be exact and nonzero, a stale
 * generation after a record's slot is reused, selector storage at its
 * edges, and receipts where none belong or missing where one must be.
 * Each shows the refusal as the client sees it, every receipt deleted,
 * nothing ended on its strength and powerboxd's descriptors back at
 * their baseline.
 */
#define _GNU_SOURCE
#include "../runner/pbx_test.h"
#include "liars.h"

#include "core/pbx_core_layout.h"

#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Runs one honest routine request to its decision; stores it in *d. */
static bool lrp_grant(lr_run *r, pbx_ipc_decision *d)
{
    pbx_ipc_begin b;
    uint32_t status = 1;
    lr_begin_rec(&b, "docs/readme.txt");
    return lr_open(r, &b, "docs/readme.txt", 32U, &status) && status == 0U &&
           lr_serve_for(r, r->req[r->nreq - 1U], 10000) &&
           lr_decision(r->p.broker, r->req[r->nreq - 1U], d) &&
           d->outcome == PBX_IPC_OUTCOME_APPROVED;
}

/* CONSUME of grant on the broker; the reply status or -1. */
static long lrp_consume(lr_run *r, pbx_ipc_id grant)
{
    uint8_t out[64];
    size_t n = 0;
    pbx_ipc_consume c = {grant};
    return pbx_ipc_consume_encode(&c, out, sizeof(out), &n) == PBX_OK
               ? lr_public(r->p.broker, out, n)
               : -1;
}

/* CANCEL of grant (the grant form) on the broker; the status or -1. */
static long lrp_cancel_grant(lr_run *r, pbx_ipc_id grant)
{
    uint8_t out[64];
    size_t n = 0;
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant = grant;
    return pbx_ipc_cancel_encode(&c, out, sizeof(out), &n) == PBX_OK
               ? lr_public(r->p.broker, out, n)
               : -1;
}

/* CANCEL of request id (the exact form) on the broker; the status or
 * -1. */
static long lrp_cancel(lr_run *r, pbx_ipc_id id)
{
    uint8_t out[64];
    size_t n = 0;
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = id;
    return pbx_ipc_cancel_encode(&c, out, sizeof(out), &n) == PBX_OK
               ? lr_public(r->p.broker, out, n)
               : -1;
}

/* The request slots are forgotten once their scopes are gone, so that
 * one run can make more than LR_REQS_MAX requests in turn. */
static void lrp_forget(lr_run *r)
{
    for (unsigned k = 0; k < r->nreq; k++) {
        if (r->scope[k] >= 0) {
            (void)close(r->scope[k]);
            r->scope[k] = -1;
        }
    }
    r->nreq = 0;
}

PBX_TEST(liar_client_commit_digest_every_byte)
{
    lr_run r;
    pbx_ipc_begin b;
    PBX_REQUIRE(lr_start(&r));
    lr_begin_rec(&b, "docs/readme.txt");
    for (unsigned at = 0; at < PBX_IPC_DIGEST_BYTES; at++) {
        uint32_t status = 0;
        PBX_CHECK(lr_open(&r, &b, "docs/readme.txt", at, &status));
        /* COMMIT is refused for the digest, and the scope it carried is
         * deleted unused: no RESOLVE ever goes through it (lr_gone would
         * read that message instead of the hang-up). */
        PBX_CHECK_EQ(status, (uint32_t)PBX_E_CORE_DIGEST);
        PBX_CHECK(lr_gone(r.scope[0], 5000));
        /* The request stays open (its reservation kept for an exact
         * COMMIT) until its caller cancels it: then CANCELLED. */
        pbx_ipc_decision d;
        PBX_CHECK(lr_decision(r.p.broker, r.req[0], &d));
        PBX_CHECK_EQ(d.outcome, (unsigned)PBX_IPC_OUTCOME_PENDING);
        PBX_CHECK_EQ(lrp_cancel(&r, r.req[0]), 0L);
        PBX_CHECK(lr_serve_for(&r, r.req[0], 5000));
        PBX_CHECK(lr_decision(r.p.broker, r.req[0], &d));
        PBX_CHECK_EQ(d.outcome, (unsigned)PBX_IPC_OUTCOME_CANCELLED);
        lrp_forget(&r);
    }
    PBX_CHECK_EQ(r.seen[lr_op_slot(PBX_IPC_OP_RESOLVE, 0)], 0U);
    /* Every reservation is returned: the baseline, then an honest
     * request is served as ever. */
    PBX_CHECK(lr_settle(&r, 10000));
    pbx_ipc_decision d;
    PBX_CHECK(lrp_grant(&r, &d));
    PBX_CHECK_EQ(lrp_consume(&r, d.grant), 0L);
    PBX_CHECK(lr_settle(&r, 10000));
    lr_stop(&r);
}

/* Encodes a frame twice, with a generation of 1 and of 2 (enc fills out
 * for the value given), and zeroes the byte where the two differ: the
 * same frame with that generation zero, which no encoder writes. Returns
 * the length, or 0. */
static size_t lrp_zeroed(size_t (*enc)(uint32_t gen, uint8_t *out, size_t cap),
                         uint8_t *out, size_t cap)
{
    uint8_t two[128];
    size_t n = enc(1U, out, cap);
    if (n == 0U || n > sizeof(two) || enc(2U, two, sizeof(two)) != n) {
        return 0U;
    }
    for (size_t i = 0; i < n; i++) {
        out[i] = out[i] != two[i] ? 0U : out[i];
    }
    return n;
}

/* The grant index the zero-generation frames name (set by the test). */
static uint32_t lrp_index;

static size_t lrp_enc_consume(uint32_t gen, uint8_t *out, size_t cap)
{
    size_t n = 0;
    pbx_ipc_consume c = {{lrp_index, gen}};
    return pbx_ipc_consume_encode(&c, out, cap, &n) == PBX_OK ? n : 0U;
}

static size_t lrp_enc_cancel(uint32_t gen, uint8_t *out, size_t cap)
{
    size_t n = 0;
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.by_grant = true;
    c.grant = (pbx_ipc_id){lrp_index, gen};
    return pbx_ipc_cancel_encode(&c, out, cap, &n) == PBX_OK ? n : 0U;
}

static size_t lrp_enc_decision(uint32_t gen, uint8_t *out, size_t cap)
{
    size_t n = 0;
    pbx_ipc_id id = {0U, gen};
    return pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, out, cap, &n) == PBX_OK
               ? n
               : 0U;
}

static size_t lrp_enc_expire(uint32_t gen, uint8_t *out, size_t cap)
{
    size_t n = 0;
    pbx_ipc_expire e = {PBX_IPC_EXPIRE_JOB, gen, 11U, 0U};
    return pbx_ipc_expire_encode(&e, out, cap, &n) == PBX_OK ? n : 0U;
}

PBX_TEST(liar_client_zero_identities_are_refused)
{
    static size_t (*const encs[])(uint32_t, uint8_t *, size_t) = {
        lrp_enc_consume, lrp_enc_cancel, lrp_enc_decision, lrp_enc_expire};
    lr_run r;
    pbx_ipc_decision d;
    uint8_t out[128];
    PBX_REQUIRE(lr_start(&r));
    PBX_REQUIRE(lrp_grant(&r, &d));
    /* The live grant named with generation zero by CONSUME and by the
     * grant form of CANCEL, its request by DECISION, its job by EXPIRE:
     * each answered with an error on the broker, which stays open. */
    lrp_index = d.grant.index;
    for (size_t k = 0; k < sizeof(encs) / sizeof(encs[0]); k++) {
        size_t n = lrp_zeroed(encs[k], out, sizeof(out));
        PBX_CHECK(n > 0U);
        long st = lr_public(r.p.broker, out, n);
        PBX_CHECK(st > 0L);
    }
    /* Nothing ended on their strength: the exact CONSUME still finds
     * the grant live and revokes it (procd's handle hangs up). */
    PBX_CHECK_EQ(lrp_consume(&r, d.grant), 0L);
    r.want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)] = 1U;
    PBX_CHECK(lr_settle(&r, 10000));
    lr_stop(&r);
}

/* Serves until powerboxd's USAGE counts no grant record in use, at most
 * about 10 s (grown by PBX_E2E_SLOW): a grant's record is released only
 * after its whole cleanup chain, which can end after the RETIRE the test
 * settled on. The pool's free list is last in, first out, so a grant begun
 * once no record is in use takes the record released last. */
static bool lrp_grants_idle(lr_run *r)
{
    for (unsigned i = 0; i < 100U; i++) {
        pbx_capabi_usage u;
        if (lr_usage(r, &u) && u.used[PBX_BOOTSTRAP_POOL_GRANTS] == 0U) {
            return true;
        }
        (void)lr_serve(r, 1U, 100);
    }
    return false;
}

PBX_TEST(liar_client_stale_generation_after_slot_reuse)
{
    lr_run r;
    pbx_ipc_decision a;
    pbx_ipc_decision b;
    PBX_REQUIRE(lr_start(&r));
    /* Grant A runs its whole life: consumed, removed, retired. */
    PBX_REQUIRE(lrp_grant(&r, &a));
    pbx_ipc_id req_a = r.req[0];
    PBX_CHECK_EQ(lrp_consume(&r, a.grant), 0L);
    r.want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)] = 1U;
    PBX_CHECK(lr_settle(&r, 10000));
    PBX_REQUIRE(lrp_grants_idle(&r));
    lrp_forget(&r);
    /* Grants run their whole lives until one, B, reuses the grant
     * record A had (the pools hold 8), with a new generation: each begun
     * only once no grant record is in use, so the first takes A's record
     * (released last); the loop bounds a free list of another order. */
    unsigned ends = 1;
    for (unsigned i = 0; i < 16U; i++) {
        PBX_REQUIRE(lrp_grant(&r, &b));
        if (b.grant.index == a.grant.index) {
            break;
        }
        PBX_CHECK_EQ(lrp_consume(&r, b.grant), 0L);
        r.want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)] = ++ends;
        PBX_CHECK(lr_settle(&r, 10000));
        PBX_REQUIRE(lrp_grants_idle(&r));
        lrp_forget(&r);
    }
    PBX_CHECK_EQ(b.grant.index, a.grant.index);
    PBX_CHECK(b.grant.gen != a.grant.gen);
    /* A's identities are stale now: refused, B untouched. */
    PBX_CHECK_EQ(lrp_consume(&r, a.grant), (long)PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(lrp_cancel_grant(&r, a.grant), (long)PBX_E_CORE_UNKNOWN);
    pbx_ipc_decision s;
    PBX_CHECK(lr_decision(r.p.broker, req_a, &s));
    PBX_CHECK_EQ(s.outcome, 0U); /* an error status, no decision */
    /* B is still live: its exact CONSUME succeeds and revokes it. */
    PBX_CHECK_EQ(lrp_consume(&r, b.grant), 0L);
    r.want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)] = ends + 1U;
    PBX_CHECK(lr_settle(&r, 10000));
    lr_stop(&r);
}

/* LRP_SEL is the selector length that fills the deployment's selector
 * storage exactly: the harness's PBX1 gives it 4096 bytes, cut into
 * chunks that each hold a link and their data. */
#define LRP_SEL                                                                \
    (4096U / PBX_CORE_SELECTOR_CHUNK_BYTES * PBX_CORE_SELECTOR_CHUNK_DATA_BYTES)

PBX_TEST(liar_client_selector_storage_at_its_edges)
{
    static char sel[LRP_SEL + 1U];
    lr_run r;
    pbx_ipc_begin b;
    pbx_ipc_begin small;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_id other = {0, 0};
    uint32_t dest = 0;
    uint32_t dest2 = 0;
    const uint8_t *s = (const uint8_t *)sel;
    const uint32_t full = LRP_SEL;
    for (uint32_t i = 0; i < full; i++) {
        sel[i] = (char)('a' + i % 26U);
    }
    PBX_REQUIRE(lr_start(&r));
    /* A selector one byte longer than the whole storage is refused for
     * good; one exactly as long is taken, and then not one byte more
     * fits for another request. */
    sel[full] = 'z';
    lr_begin_rec(&b, sel); /* one byte more than the storage holds */
    PBX_CHECK_EQ(lr_begin(&r, &b, &id, &dest),
                 (long)PBX_E_CORE_SELECTOR_LENGTH);
    sel[full] = '\0';
    lr_begin_rec(&b, sel);
    lr_begin_rec(&small, "x");
    PBX_REQUIRE(lr_begin(&r, &b, &id, &dest) == 0L);
    PBX_CHECK_EQ(lr_begin(&r, &small, &other, &dest2), (long)PBX_E_CORE_BUSY);
    /* Chunks only at the next exact offset and never past the declared
     * length; COMMIT only after the last byte (its scope deleted). */
    const uint32_t chunk = PBX_IPC_SELECTOR_CHUNK_BYTES_MAX;
    PBX_CHECK_EQ(lr_selector(&r, id, 1U, chunk, s + 1),
                 (long)PBX_E_CORE_SELECTOR_OFFSET);
    uint32_t off = 0;
    for (; off + chunk <= LRP_SEL; off += chunk) {
        PBX_CHECK_EQ(lr_selector(&r, id, off, chunk, s + off), 0L);
    }
    PBX_REQUIRE(off < LRP_SEL); /* a short tail is left */
    PBX_CHECK_EQ(lr_selector(&r, id, off, chunk, s + off),
                 (long)PBX_E_CORE_SELECTOR_OVERRUN);
    PBX_CHECK_EQ(lr_commit(&r, id, dest), (long)PBX_E_CORE_SELECTOR_INCOMPLETE);
    PBX_CHECK(lr_gone(r.scope[0], 5000));
    lrp_forget(&r);
    PBX_CHECK_EQ(lr_selector(&r, id, off, LRP_SEL - off, s + off), 0L);
    /* Complete: COMMIT is taken and the whole selector resolved. */
    PBX_CHECK_EQ(lr_commit(&r, id, dest), 0L);
    PBX_CHECK(lr_serve_for(&r, id, 10000));
    pbx_ipc_decision d;
    PBX_CHECK(lr_decision(r.p.broker, id, &d));
    PBX_CHECK_EQ(d.outcome, (unsigned)PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(lrp_consume(&r, d.grant), 0L);
    r.want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)] = 1U;
    PBX_CHECK(lr_settle(&r, 10000));
    /* The storage is back whole once the request ended. */
    PBX_CHECK_EQ(lr_begin(&r, &small, &other, &dest2), 0L);
    PBX_CHECK_EQ(lrp_cancel(&r, other), 0L);
    PBX_CHECK(lr_settle(&r, 10000));
    lr_stop(&r);
}

/* Sends frame on the broker with nfds fresh receipts (our ends kept in
 * the run's poison list, so lr_settle waits for each to be closed);
 * returns the reply's status or -1. */
static long lrp_with_receipts(lr_run *r, const uint8_t *frame, size_t n,
                              int nfds)
{
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_frame f;
    int fds[2] = {-1, -1};
    for (int i = 0; i < nfds && i < 2 && r->npoison < LR_KEPT_MAX; i++) {
        int sv[2];
        if (e2e_socketpair(SOCK_SEQPACKET, sv)) {
            r->poison[r->npoison++] = sv[0];
            fds[i] = sv[1];
        }
    }
    bool sent = e2e_send(r->p.broker, frame, n, fds, nfds);
    for (int i = 0; i < 2; i++) {
        if (fds[i] >= 0) {
            (void)close(fds[i]);
        }
    }
    long got =
        sent ? e2e_recv(r->p.broker, in, sizeof(in), NULL, 0, NULL, 5000) : -1;
    return got > 0 && pbx_ipc_frame_decode(in, (size_t)got, 0, &f) == PBX_OK
               ? (long)f.status
               : -1;
}

PBX_TEST(liar_broker_receipts_where_none_belong_and_missing)
{
    lr_run r;
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    PBX_REQUIRE(lr_start(&r));
    lr_begin_rec(&b, "docs/readme.txt");
    /* BEGIN, SELECTOR, DECISION, CANCEL, CONSUME and EXPIRE take no
     * capability: each is refused with UNEXPECTED_CAPS and its receipt
     * deleted (checked by lr_settle: our end of it sees the hang-up). */
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, out, sizeof(out), &n) == PBX_OK);
    PBX_CHECK_EQ(lrp_with_receipts(&r, out, n, 1),
                 (long)PBX_E_CORE_UNEXPECTED_CAPS);
    PBX_REQUIRE(lr_begin(&r, &b, &id, &dest) == 0L);
    pbx_ipc_selector s = {0U, b.selector_len,
                          (const uint8_t *)"docs/readme.txt"};
    PBX_REQUIRE(pbx_ipc_selector_encode(id, &s, out, sizeof(out), &n) ==
                PBX_OK);
    PBX_CHECK_EQ(lrp_with_receipts(&r, out, n, 1),
                 (long)PBX_E_CORE_UNEXPECTED_CAPS);
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, out, sizeof(out),
                                     &n) == PBX_OK);
    PBX_CHECK_EQ(lrp_with_receipts(&r, out, n, 2),
                 (long)PBX_E_CORE_UNEXPECTED_CAPS);
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = id;
    PBX_REQUIRE(pbx_ipc_cancel_encode(&c, out, sizeof(out), &n) == PBX_OK);
    PBX_CHECK_EQ(lrp_with_receipts(&r, out, n, 1),
                 (long)PBX_E_CORE_UNEXPECTED_CAPS);
    pbx_ipc_consume u = {{0U, 1U}};
    PBX_REQUIRE(pbx_ipc_consume_encode(&u, out, sizeof(out), &n) == PBX_OK);
    PBX_CHECK_EQ(lrp_with_receipts(&r, out, n, 1),
                 (long)PBX_E_CORE_UNEXPECTED_CAPS);
    pbx_ipc_expire e = {PBX_IPC_EXPIRE_JOB, 9U, 99U, 0U};
    PBX_REQUIRE(pbx_ipc_expire_encode(&e, out, sizeof(out), &n) == PBX_OK);
    PBX_CHECK_EQ(lrp_with_receipts(&r, out, n, 1),
                 (long)PBX_E_CORE_UNEXPECTED_CAPS);
    /* COMMIT takes exactly one: none, or two (both deleted), refused. */
    PBX_CHECK_EQ(lr_selector(&r, id, 0U, b.selector_len,
                             (const uint8_t *)"docs/readme.txt"),
                 0L);
    pbx_ipc_commit m = {dest};
    PBX_REQUIRE(pbx_ipc_commit_encode(id, &m, out, sizeof(out), &n) == PBX_OK);
    PBX_CHECK_EQ(lrp_with_receipts(&r, out, n, 0),
                 (long)PBX_E_CORE_COMMIT_COUNT);
    PBX_CHECK_EQ(lrp_with_receipts(&r, out, n, 2),
                 (long)PBX_E_CORE_COMMIT_COUNT);
    /* The request was kept through every refusal: its exact COMMIT is
     * taken and it is approved as ever. */
    PBX_CHECK_EQ(lr_commit(&r, id, dest), 0L);
    PBX_CHECK(lr_serve_for(&r, id, 10000));
    pbx_ipc_decision d;
    PBX_CHECK(lr_decision(r.p.broker, id, &d));
    PBX_CHECK_EQ(d.outcome, (unsigned)PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(lrp_consume(&r, d.grant), 0L);
    r.want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)] = 1U;
    PBX_CHECK(lr_settle(&r, 10000));
    lr_stop(&r);
}

PBX_TEST(liar_procd_install_stale_generation_after_slot_reuse)
{
    lr_run r;
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t status = 1;
    PBX_REQUIRE(lr_start(&r));
    /* Request A's INSTALL is never answered: A ends at procd's deadline. */
    r.fault = (lr_fault){PBX_IPC_OP_INSTALL, 0, LR_HOW_STALE, LR_F_NONE, 0};
    lr_begin_rec(&b, "docs/readme.txt");
    PBX_REQUIRE(lr_open(&r, &b, "docs/readme.txt", 32U, &status));
    pbx_ipc_id a = r.req[0];
    PBX_CHECK(lr_serve_for(&r, a, 10000));
    PBX_CHECK(lr_decision(r.p.broker, a, &d));
    PBX_CHECK_EQ(d.outcome, (unsigned)PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, (unsigned)PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK(lr_settle(&r, 10000));
    lrp_forget(&r);
    /* Requests run until one reuses A's request record. Before each of
     * their INSTALLs is answered, procd sends A's reply (A's identity,
     * its old generation, a handle): refused every time, its handle
     * deleted, and the live request installed with its own exact reply. */
    unsigned ends = r.seen[lr_op_slot(PBX_IPC_OP_RETIRE, 0)];
    unsigned stale = 0;
    bool reused = false;
    for (unsigned i = 0; i < 16U && !reused; i++) {
        PBX_REQUIRE(lrp_grant(&r, &d));
        reused = r.req[0].index == a.index;
        PBX_CHECK(!reused || r.req[0].gen != a.gen);
        PBX_CHECK_EQ(d.installed_slot, 20U);
        PBX_CHECK_EQ(lrp_consume(&r, d.grant), 0L);
        r.want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)] = ++ends;
        PBX_CHECK(lr_settle(&r, 10000));
        lrp_forget(&r);
        stale++;
    }
    PBX_CHECK(reused);
    PBX_CHECK_EQ(r.stale_sent, stale);
    PBX_CHECK(!r.send_failed);
    lr_stop(&r);
}
