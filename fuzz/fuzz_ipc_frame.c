/*
 * fuzz_ipc_frame.c: libFuzzer harness for the canonical frame parser and
 * every record decoder.
 *
 * Input layout: byte 0 is the capability count the transport reports (so
 * the partition checks are fuzzed too), the rest is the frame. A frame the
 * frame decoder accepts is dispatched by op to its record decoder; a
 * record that decodes is re-encoded and must reproduce the input bytes
 * exactly (the codec is canonical; encoders write seq 0, so the decoded
 * seq is patched back with pbx_ipc_frame_set_seq first), and every
 * decoded length must stay within its bound.
 */
#include "ipc/pbx_ipc.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define REPLY(op) ((uint16_t)((op) | PBX_IPC_REPLY_BIT))

static uint8_t out[PBX_IPC_FRAME_BYTES_MAX];

/* Checks that a successful decode re-encodes to the same frame, once the
 * input's seq is echoed into the output the way a replier does it. */
static void same(pbx_err e, size_t len, const uint8_t *frame, size_t flen)
{
    uint32_t seq = 0U;
    if (e != PBX_OK || pbx_ipc_frame_peek_seq(frame, flen, &seq) != PBX_OK ||
        pbx_ipc_frame_set_seq(out, len, seq) != PBX_OK || len != flen ||
        memcmp(out, frame, flen) != 0) {
        abort();
    }
}

static void public_ops(const pbx_ipc_frame *f, const uint8_t *p, size_t n)
{
    size_t len = 0;
    union {
        pbx_ipc_begin begin;
        pbx_ipc_begin_reply begin_r;
        pbx_ipc_selector sel;
        pbx_ipc_commit commit;
        pbx_ipc_decision dec;
        pbx_ipc_cancel cancel;
        pbx_ipc_consume consume;
        pbx_ipc_expire expire;
    } u;
    switch (f->op) {
    case PBX_IPC_OP_BEGIN:
        if (pbx_ipc_begin_decode(f, &u.begin) == PBX_OK) {
            if (u.begin.ctx.entry.len > PBX_IPC_ENTRY_LEN_BYTES_MAX ||
                u.begin.label.len > PBX_IPC_LABEL_LEN_BYTES_MAX) {
                abort();
            }
            same(pbx_ipc_begin_encode(&u.begin, out, sizeof(out), &len), len, p,
                 n);
        }
        break;
    case REPLY(PBX_IPC_OP_BEGIN):
        if (pbx_ipc_begin_reply_decode(f, &u.begin_r) == PBX_OK) {
            same(pbx_ipc_begin_reply_encode(f->request, &u.begin_r, out,
                                            sizeof(out), &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_SELECTOR:
        if (pbx_ipc_selector_decode(f, &u.sel) == PBX_OK) {
            same(pbx_ipc_selector_encode(f->request, &u.sel, out, sizeof(out),
                                         &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_COMMIT:
        if (pbx_ipc_commit_decode(f, &u.commit) == PBX_OK) {
            same(pbx_ipc_commit_encode(f->request, &u.commit, out, sizeof(out),
                                       &len),
                 len, p, n);
        }
        break;
    case REPLY(PBX_IPC_OP_DECISION):
        if (pbx_ipc_decision_reply_decode(f, &u.dec) == PBX_OK) {
            same(pbx_ipc_decision_reply_encode(f->request, &u.dec, out,
                                               sizeof(out), &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_CANCEL:
        if (pbx_ipc_cancel_decode(f, &u.cancel) == PBX_OK) {
            same(pbx_ipc_cancel_encode(&u.cancel, out, sizeof(out), &len), len,
                 p, n);
        }
        break;
    case PBX_IPC_OP_CONSUME:
        if (pbx_ipc_consume_decode(f, &u.consume) == PBX_OK) {
            same(pbx_ipc_consume_encode(&u.consume, out, sizeof(out), &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_EXPIRE:
        if (pbx_ipc_expire_decode(f, &u.expire) == PBX_OK) {
            same(pbx_ipc_expire_encode(&u.expire, out, sizeof(out), &len), len,
                 p, n);
        }
        break;
    default:
        if (pbx_ipc_empty_decode(f, f->op) == PBX_OK) {
            same(
                pbx_ipc_empty_encode(f->op, f->request, out, sizeof(out), &len),
                len, p, n);
        }
        break;
    }
}

static void vfsd_ops(const pbx_ipc_frame *f, const uint8_t *p, size_t n)
{
    size_t len = 0;
    union {
        pbx_ipc_resolve res;
        pbx_ipc_resolve_reply res_r;
        pbx_ipc_detach det;
        pbx_ipc_retire ret;
    } u;
    switch (f->op) {
    case PBX_IPC_OP_RESOLVE:
        if (pbx_ipc_resolve_decode(f, &u.res) == PBX_OK) {
            same(pbx_ipc_resolve_encode(f->request, &u.res, out, sizeof(out),
                                        &len),
                 len, p, n);
        }
        break;
    case REPLY(PBX_IPC_OP_RESOLVE):
        if (pbx_ipc_resolve_reply_decode(f, &u.res_r) == PBX_OK) {
            same(pbx_ipc_resolve_reply_encode(f->request, &u.res_r, out,
                                              sizeof(out), &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_DETACH:
        if (pbx_ipc_detach_decode(f, &u.det) == PBX_OK) {
            same(pbx_ipc_detach_encode(f->request, &u.det, out, sizeof(out),
                                       &len),
                 len, p, n);
        }
        break;
    case REPLY(PBX_IPC_OP_DETACH):
        if (pbx_ipc_detach_reply_decode(f, &u.det) == PBX_OK) {
            same(pbx_ipc_detach_reply_encode(f->request, &u.det, out,
                                             sizeof(out), &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_RETIRE:
        if (pbx_ipc_retire_decode(f, &u.ret) == PBX_OK) {
            same(pbx_ipc_retire_encode(f->request, &u.ret, out, sizeof(out),
                                       &len),
                 len, p, n);
        }
        break;
    default:
        if (pbx_ipc_retire_reply_decode(f, &u.ret) == PBX_OK) {
            same(pbx_ipc_retire_reply_encode(f->request, &u.ret, out,
                                             sizeof(out), &len),
                 len, p, n);
        }
        break;
    }
}

static void ttyd_ops(const pbx_ipc_frame *f, const uint8_t *p, size_t n)
{
    size_t len = 0;
    union {
        pbx_ipc_policy pol;
        pbx_ipc_policy_reply pol_r;
        pbx_ipc_prompt pr;
        pbx_ipc_prompt_reply pr_r;
        pbx_ipc_view view;
        pbx_ipc_view_ack ack;
        pbx_ipc_withdraw wd;
    } u;
    switch (f->op) {
    case PBX_IPC_OP_POLICY:
        if (pbx_ipc_policy_decode(f, &u.pol) == PBX_OK) {
            same(pbx_ipc_policy_encode(f->request, &u.pol, out, sizeof(out),
                                       &len),
                 len, p, n);
        }
        break;
    case REPLY(PBX_IPC_OP_POLICY):
        if (pbx_ipc_policy_reply_decode(f, &u.pol_r) == PBX_OK) {
            same(pbx_ipc_policy_reply_encode(f->request, &u.pol_r, out,
                                             sizeof(out), &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_PROMPT:
        if (pbx_ipc_prompt_decode(f, &u.pr) == PBX_OK) {
            same(pbx_ipc_prompt_encode(f->request, &u.pr, out, sizeof(out),
                                       &len),
                 len, p, n);
        }
        break;
    case REPLY(PBX_IPC_OP_PROMPT):
        if (pbx_ipc_prompt_reply_decode(f, &u.pr_r) == PBX_OK) {
            same(pbx_ipc_prompt_reply_encode(f->request, &u.pr_r, out,
                                             sizeof(out), &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_VIEW:
        if (pbx_ipc_view_decode(f, &u.view) == PBX_OK) {
            same(pbx_ipc_view_encode(f->request, &u.view, out, sizeof(out),
                                     &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_WITHDRAW:
        if (pbx_ipc_withdraw_decode(f, &u.wd) == PBX_OK) {
            same(pbx_ipc_withdraw_encode(f->request, &u.wd, out, sizeof(out),
                                         &len),
                 len, p, n);
        }
        break;
    case REPLY(PBX_IPC_OP_WITHDRAW):
        if (pbx_ipc_withdraw_reply_decode(f, &u.wd) == PBX_OK) {
            same(pbx_ipc_withdraw_reply_encode(f->request, &u.wd, out,
                                               sizeof(out), &len),
                 len, p, n);
        }
        break;
    default:
        if (pbx_ipc_view_reply_decode(f, &u.ack) == PBX_OK) {
            same(pbx_ipc_view_reply_encode(f->request, &u.ack, out, sizeof(out),
                                           &len),
                 len, p, n);
        }
        break;
    }
}

static void procd_ops(const pbx_ipc_frame *f, const uint8_t *p, size_t n)
{
    size_t len = 0;
    union {
        pbx_ipc_install ins;
        pbx_ipc_install_reply ins_r;
        pbx_ipc_revoke rev;
        pbx_ipc_revoke_ack rev_r;
        pbx_ipc_wake wake;
    } u;
    switch (f->op) {
    case PBX_IPC_OP_INSTALL:
        if (pbx_ipc_install_decode(f, &u.ins) == PBX_OK) {
            same(pbx_ipc_install_encode(f->request, &u.ins, out, sizeof(out),
                                        &len),
                 len, p, n);
        }
        break;
    case REPLY(PBX_IPC_OP_INSTALL):
        if (pbx_ipc_install_reply_decode(f, &u.ins_r) == PBX_OK) {
            same(pbx_ipc_install_reply_encode(f->request, &u.ins_r, out,
                                              sizeof(out), &len),
                 len, p, n);
        }
        break;
    case PBX_IPC_OP_REVOKE:
        if (pbx_ipc_revoke_decode(f, &u.rev) == PBX_OK) {
            same(pbx_ipc_revoke_encode(f->request, &u.rev, out, sizeof(out),
                                       &len),
                 len, p, n);
        }
        break;
    case REPLY(PBX_IPC_OP_REVOKE):
        if (pbx_ipc_revoke_reply_decode(f, &u.rev_r) == PBX_OK) {
            same(pbx_ipc_revoke_reply_encode(f->request, &u.rev_r, out,
                                             sizeof(out), &len),
                 len, p, n);
        }
        break;
    default:
        if (pbx_ipc_wake_decode(f, &u.wake) == PBX_OK) {
            same(pbx_ipc_wake_encode(f->request, &u.wake, out, sizeof(out),
                                     &len),
                 len, p, n);
        }
        break;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0U) {
        return 0;
    }
    uint16_t caps = data[0];
    const uint8_t *p = data + 1;
    size_t n = size - 1U;
    pbx_ipc_frame f;
    pbx_err e = pbx_ipc_frame_decode(n == 0U ? NULL : p, n, caps, &f);
    if (e != PBX_OK) {
        return 0;
    }
    if (f.status != 0U) {
        size_t len = 0;
        uint16_t req = (uint16_t)(f.op & ~PBX_IPC_REPLY_BIT);
        same(pbx_ipc_status_reply_encode(req, f.request, (pbx_err)f.status, out,
                                         sizeof(out), &len),
             len, p, n);
        return 0;
    }
    switch ((f.op & ~PBX_IPC_REPLY_BIT) >> 8) {
    case 0:
        public_ops(&f, p, n);
        break;
    case 1:
        vfsd_ops(&f, p, n);
        break;
    case 2:
        ttyd_ops(&f, p, n);
        break;
    default:
        procd_ops(&f, p, n);
        break;
    }
    return 0;
}
