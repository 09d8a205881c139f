/*
 * test_e2e_liars_missing.c: vfsd's NOT_FOUND in the liars harness
 * (liars.h). In a run whose vfsd finds nothing (lr_run.missing), RESOLVE
 * is answered as vfsd answers a missing object: the exact scoped
 * NOT_FOUND of the request's class, carrying no receipt, echoing the
 * operation, class and selector digest and naming no object and no scope
 * (ipc/pbx_ipc_vfsd.h). The armed lie changes exactly one thing of it;
 * the rows that tell these lies are in test_e2e_liars.c.
 */
#define _GNU_SOURCE
#include "liars.h"

#include <string.h>

/* The object a poisoned FOUND names under a wrong header. */
#define LRM_OBJ_POISON 901U

/* Offsets in a RESOLVE reply's body (ipc/pbx_ipc_vfsd.c's layout) of
 * the object id, the scope identity and the object generation, and in the
 * header of the declared capability count: these lies are written by
 * hand, since the encoder refuses a NOT_FOUND that names an object or a
 * scope or carries a receipt. */
#define LRM_BODY_OBJ_ID  8U
#define LRM_BODY_SCOPE   16U
#define LRM_BODY_OBJ_GEN 24U
#define LRM_HEAD_CAPS    10U

/* Writes the armed field lie into the encoded NOT_FOUND (n bytes of out)
 * that only the decoder's NOT_FOUND rule refuses: a scope echo (the very
 * scope the request committed, the one a FOUND would name), an object
 * id or an object generation. */
static void lrm_named(const lr_run *r, unsigned k, uint8_t *out, size_t n)
{
    uint8_t *b = out + PBX_IPC_HEADER_BYTES;
    if (n < PBX_IPC_HEADER_BYTES + PBX_IPC_RESOLVE_REPLY_BYTES) {
        return;
    }
    if (r->fault.field == LR_F_SCOPE) {
        pbx_le_put64(b + LRM_BODY_SCOPE, r->scope_id[k]);
    } else if (r->fault.field == LR_F_OBJ_ID) {
        pbx_le_put64(b + LRM_BODY_OBJ_ID, LRM_OBJ_POISON);
    } else if (r->fault.field == LR_F_OBJ_GEN) {
        pbx_le_put32(b + LRM_BODY_OBJ_GEN, 1U);
    }
}

/* A header lie on NOT_FOUND: a FOUND naming an object, with its object
 * receipt, under the wrong header, before the honest NOT_FOUND. Taken, it
 * would lead to POLICY and an approval; refused, the request ends
 * NOT_FOUND and its receipt is deleted. */
static void lrm_poison(lr_run *r, unsigned k, const pbx_ipc_frame *f,
                       const pbx_ipc_resolve_reply *honest)
{
    pbx_ipc_resolve_reply bad = *honest;
    uint8_t out[256];
    size_t n = 0;
    bad.result = PBX_IPC_RESOLVE_FOUND;
    bad.object.id = LRM_OBJ_POISON;
    bad.object.gen = 1U;
    bad.scope_id = r->scope_id[k];
    n = pbx_ipc_resolve_reply_encode(f->request, &bad, out, sizeof(out), &n) ==
                PBX_OK
            ? n
            : 0U;
    lr_poison_send(r, r->p.vfsd, f, out, n, true);
}

void lr_on_missing(lr_run *r, unsigned k, const pbx_ipc_frame *f)
{
    pbx_ipc_resolve q;
    pbx_ipc_resolve_reply rr;
    uint8_t out[256];
    size_t n = 0;
    int none = -1;
    if (k >= LR_REQS_MAX || pbx_ipc_resolve_decode(f, &q) != PBX_OK) {
        return;
    }
    bool armed = lr_armed(r, PBX_IPC_OP_RESOLVE, 0);
    memset(&rr, 0, sizeof(rr));
    rr.result = PBX_IPC_RESOLVE_NOT_FOUND;
    rr.object_class = q.object_class;
    rr.operation = q.operation;
    memcpy(rr.selector_digest, q.selector_digest, sizeof(rr.selector_digest));
    if (armed && lr_header(&r->fault)) {
        lrm_poison(r, k, f, &rr);
    }
    if (armed) {
        lr_flip16(&r->fault, LR_F_OPERATION, &rr.operation,
                  PBX_IPC_OPERATION_READ, PBX_IPC_OPERATION_WRITE);
        lr_flip16(&r->fault, LR_F_CLASS, &rr.object_class, PBX_IPC_CLASS_FILE,
                  PBX_IPC_CLASS_DIRECTORY);
        if (r->fault.how == LR_HOW_DIGEST) {
            rr.selector_digest[r->fault.digest_at % 32U] ^= 0x01U;
        }
    }
    n = pbx_ipc_resolve_reply_encode(f->request, &rr, out, sizeof(out), &n) ==
                PBX_OK
            ? n
            : 0U;
    if (armed && r->fault.how == LR_HOW_BODY) {
        lrm_named(r, k, out, n);
    }
    if (armed && r->fault.how == LR_HOW_EXTRA_FD && n >= PBX_IPC_HEADER_BYTES) {
        /* The receipt is declared in the header too, so the frame layer's
         * count matches and only NOT_FOUND's own rule (no receipt) can
         * refuse it. */
        int fd = lr_pair(r, true, NULL);
        pbx_le_put16(out + LRM_HEAD_CAPS, 1U);
        r->send_failed = r->send_failed || fd < 0;
        lr_send(r, r->p.vfsd, f, out, n, &fd, fd < 0 ? 0 : 1);
        return;
    }
    lr_deliver(r, armed, r->p.vfsd, f, out, n, &none, 0);
}
