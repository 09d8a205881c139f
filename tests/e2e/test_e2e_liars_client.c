/*
 * test_e2e_liars_client.c: the client side of the liars harness
 * (liars.h): starting powerboxd, and launchd's broker relaying a job's
 * BEGIN, SELECTOR, COMMIT, DECISION, CANCEL and CONSUME to it.
 */
#define _GNU_SOURCE
#include "liars.h"

#include "sha2/pbx_sha2.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

long lr_public(int conn, const uint8_t *frame, size_t len)
{
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_frame f;
    int fds[4];
    int nfds = 0;
    if (!e2e_send(conn, frame, len, NULL, 0)) {
        return -1;
    }
    long n = e2e_recv(conn, in, sizeof(in), fds, 4, &nfds, 5000);
    for (int i = 0; i < nfds; i++) {
        (void)close(fds[i]);
    }
    if (n <= 0 ||
        pbx_ipc_frame_decode(in, (size_t)n, (uint16_t)nfds, &f) != PBX_OK) {
        return -1;
    }
    return (long)f.status;
}

bool lr_decision(int conn, pbx_ipc_id id, pbx_ipc_decision *d)
{
    uint8_t out[64];
    uint8_t in[128];
    pbx_ipc_frame f;
    int fds[4];
    int nfds = 0;
    size_t n = 0;
    memset(d, 0, sizeof(*d));
    if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, out, sizeof(out), &n) !=
            PBX_OK ||
        !e2e_send(conn, out, n, NULL, 0)) {
        return false;
    }
    long got = e2e_recv(conn, in, sizeof(in), fds, 4, &nfds, 5000);
    for (int i = 0; i < nfds; i++) {
        (void)close(fds[i]);
    }
    return got > 0 &&
           pbx_ipc_frame_decode(in, (size_t)got, (uint16_t)nfds, &f) ==
               PBX_OK &&
           (f.status != 0U || pbx_ipc_decision_reply_decode(&f, d) == PBX_OK);
}

bool lr_start(lr_run *r)
{
    uint8_t f[64];
    size_t n = 0;
    pbx_ipc_consume c = {{0, 1}};
    memset(r, 0, sizeof(*r));
    for (unsigned i = 0; i < LR_REQS_MAX; i++) {
        r->scope[i] = -1;
    }
    if (!e2e_prepare(&r->p, E2E_PBX1_GOOD) || !e2e_start(&r->p) ||
        !e2e_wait_ready(&r->p) ||
        pbx_ipc_consume_encode(&c, f, sizeof(f), &n) != PBX_OK ||
        lr_public(r->p.broker, f, n) < 0) {
        return false;
    }
    r->baseline = e2e_fd_count(r->p.pid);
    return r->baseline > 0;
}

void lr_stop(lr_run *r)
{
    for (unsigned i = 0; i < r->nkept; i++) {
        if (r->kept[i] >= 0) {
            (void)close(r->kept[i]);
        }
    }
    for (unsigned i = 0; i < r->npoison; i++) {
        if (r->poison[i] >= 0) {
            (void)close(r->poison[i]);
        }
    }
    for (unsigned k = 0; k < r->nreq; k++) {
        if (r->scope[k] >= 0) {
            (void)close(r->scope[k]);
        }
    }
    e2e_close(&r->p);
}

void lr_begin_rec(pbx_ipc_begin *b, const char *sel)
{
    memset(b, 0, sizeof(*b));
    b->ctx.session = 7;
    b->ctx.job_id = 11;
    b->ctx.job_gen = 1;
    b->ctx.realm = 3;
    b->ctx.operation = PBX_IPC_OPERATION_READ;
    b->ctx.object_class = PBX_IPC_CLASS_FILE;
    b->ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b->ctx.mode = PBX_IPC_MODE_INSTALL;
    b->ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    b->ctx.entry.len = 7;
    memcpy(b->ctx.entry.bytes, "bin/cat", 7);
    b->target.process_id = 42;
    b->target.process_gen = 5;
    b->target.slot = 20;
    b->selector_len = (uint32_t)strlen(sel);
    (void)pbx_sha2_digest((const uint8_t *)sel, strlen(sel),
                          b->selector_digest);
    b->label.len = 6;
    memcpy(b->label.bytes, "readme", 6);
}

/* Sends frame on conn and decodes the reply header into *f (no
 * descriptors may come with it). */
static bool lr_call(int conn, const uint8_t *out, size_t n, const int *fds,
                    int nfds, pbx_ipc_frame *f, uint8_t *in, size_t cap)
{
    int got = 0;
    long len = 0;
    return e2e_send(conn, out, n, fds, nfds) &&
           (len = e2e_recv(conn, in, cap, NULL, 0, &got, 5000)) > 0 &&
           got == 0 && pbx_ipc_frame_decode(in, (size_t)len, 0, f) == PBX_OK;
}

long lr_begin(lr_run *r, const pbx_ipc_begin *b, pbx_ipc_id *id, uint32_t *dest)
{
    pbx_ipc_begin_reply br;
    pbx_ipc_frame f;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    if (pbx_ipc_begin_encode(b, out, sizeof(out), &n) != PBX_OK ||
        !lr_call(r->p.broker, out, n, NULL, 0, &f, in, sizeof(in))) {
        return -1;
    }
    if (f.status != 0U) {
        return (long)f.status;
    }
    if (pbx_ipc_begin_reply_decode(&f, &br) != PBX_OK) {
        return -1;
    }
    *id = f.request;
    *dest = br.dest_slot;
    return 0;
}

long lr_selector(lr_run *r, pbx_ipc_id id, uint32_t offset, uint32_t len,
                 const uint8_t *bytes)
{
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_selector s = {offset, len, bytes};
    return pbx_ipc_selector_encode(id, &s, out, sizeof(out), &n) == PBX_OK
               ? lr_public(r->p.broker, out, n)
               : -1;
}

long lr_commit(lr_run *r, pbx_ipc_id id, uint32_t dest)
{
    pbx_ipc_frame f;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    int sv[2];
    struct stat st;
    pbx_ipc_commit c = {dest};
    if (r->nreq >= LR_REQS_MAX || !e2e_socketpair(SOCK_SEQPACKET, sv)) {
        return -1;
    }
    unsigned k = r->nreq++;
    r->req[k] = id;
    r->scope[k] = sv[0];
    r->scope_id[k] = fstat(sv[1], &st) == 0 ? (uint64_t)st.st_ino : 0U;
    bool ok = pbx_ipc_commit_encode(id, &c, out, sizeof(out), &n) == PBX_OK &&
              lr_call(r->p.broker, out, n, &sv[1], 1, &f, in, sizeof(in));
    (void)close(sv[1]);
    return ok ? (long)f.status : -1;
}

bool lr_open(lr_run *r, const pbx_ipc_begin *bp, const char *sel,
             unsigned digest_bad, uint32_t *commit_status)
{
    pbx_ipc_begin b = *bp;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    if (r->nreq >= LR_REQS_MAX) {
        return false;
    }
    if (digest_bad < PBX_IPC_DIGEST_BYTES) {
        b.selector_digest[digest_bad] ^= 0x80U;
    }
    if (lr_begin(r, &b, &id, &dest) != 0L ||
        lr_selector(r, id, 0U, b.selector_len, (const uint8_t *)sel) != 0L) {
        return false;
    }
    long st = lr_commit(r, id, dest);
    *commit_status = (uint32_t)st;
    return st >= 0L;
}

bool lr_usage(const lr_run *r, pbx_capabi_usage *u)
{
    static uint32_t nonce = 0x6c7275U;
    uint8_t q[PBX_CAPABI_USAGE_QUERY_BYTES];
    uint8_t in[PBX_CAPABI_USAGE_REPORT_BYTES + 8U];
    memset(u, 0, sizeof(*u));
    nonce++;
    if (pbx_capabi_usage_query_encode(nonce, q, sizeof(q)) != PBX_OK ||
        !e2e_send(r->p.supervisor, q, sizeof(q), NULL, 0)) {
        return false;
    }
    long n = e2e_recv(r->p.supervisor, in, sizeof(in), NULL, 0, NULL,
                      e2e_slow(5000));
    return n > 0 && pbx_capabi_usage_decode(in, (size_t)n, u) == PBX_OK &&
           u->nonce == nonce && u->status == 0U;
}
