/*
 * test_e2e_liars_lie.c: how the liars harness (liars.h) tells a reply
 * wrongly: which reply is armed, the field edits of a lying body, the
 * header lies told in a poisoned reply before the honest one, and the
 * delivery lies (a receipt too many or too few, a duplicate, a reply on
 * the wrong route). The honest peers that call these are in
 * test_e2e_liars_peer.c.
 */
#define _GNU_SOURCE
#include "liars.h"

#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* Makes a SEQPACKET pair, keeps our end (sv[0]) in the run's list (the
 * poison list when poison) and returns the end to pass, or -1. */
int lr_pair(lr_run *r, bool poison, ino_t *ino)
{
    int sv[2];
    struct stat st;
    int *list = poison ? r->poison : r->kept;
    unsigned *n = poison ? &r->npoison : &r->nkept;
    if (*n >= LR_KEPT_MAX || !e2e_socketpair(SOCK_SEQPACKET, sv)) {
        return -1;
    }
    if (ino != NULL) {
        *ino = fstat(sv[1], &st) == 0 ? st.st_ino : 0;
    }
    list[(*n)++] = sv[0];
    return sv[1];
}

/* Whether the reply to this call is the armed lie; marks it told. */
bool lr_armed(lr_run *r, uint16_t op, uint8_t kind)
{
    if (r->fired || r->fault.how == LR_HOW_NONE || r->fault.op != op ||
        (op == PBX_IPC_OP_VIEW && r->fault.view_kind != kind)) {
        return false;
    }
    r->fired = true;
    return true;
}

/* Whether the lie is told in the header (a poisoned reply first). */
bool lr_header(const lr_fault *x)
{
    return x->how == LR_HOW_HEADER ||
           (x->how == LR_HOW_ZERO && x->field >= LR_F_H_INDEX);
}

/* One field edit: +1 when f is the armed field (LR_HOW_ZERO then zeroes
 * the changed byte: lr_zero_patch). */
void lr_e64(const lr_fault *x, lr_field f, uint64_t *v)
{
    if (x->field == f) {
        *v = *v + 1U;
    }
}

void lr_e32(const lr_fault *x, lr_field f, uint32_t *v)
{
    if (x->field == f) {
        *v = *v + 1U;
    }
}

/* The other known value of a two-valued discriminant. */
void lr_flip16(const lr_fault *x, lr_field f, uint16_t *v, uint16_t a,
               uint16_t b)
{
    if (x->field == f) {
        *v = *v == a ? b : a;
    }
}

void lr_flip8(const lr_fault *x, lr_field f, uint8_t *v, uint8_t a, uint8_t b)
{
    if (x->field == f) {
        *v = *v == a ? b : a;
    }
}

/* LR_HOW_ZERO on a body field: no encoder writes a zero generation, so
 * the reply is encoded with the field one more than honest (out) and
 * once honestly (honest), and the byte where the two differ is zeroed
 * (the honest values are small: the increment carries into no other
 * byte). */
void lr_zero_patch(const lr_fault *x, uint8_t *out, const uint8_t *honest,
                   size_t n)
{
    if (x->how != LR_HOW_ZERO || x->field >= LR_F_H_INDEX) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        out[i] = out[i] != honest[i] ? 0U : out[i];
    }
}

/* Changes one header field of an encoded reply (LR_HOW_HEADER). */
void lr_header_lie(const lr_fault *x, uint8_t *out, size_t n, uint32_t seq)
{
    static const uint16_t other[][2] = {
        {PBX_IPC_OP_RESOLVE, PBX_IPC_OP_RETIRE},
        {PBX_IPC_OP_DETACH, PBX_IPC_OP_RETIRE},
        {PBX_IPC_OP_RETIRE, PBX_IPC_OP_DETACH},
        {PBX_IPC_OP_POLICY, PBX_IPC_OP_WITHDRAW},
        {PBX_IPC_OP_PROMPT, PBX_IPC_OP_POLICY},
        {PBX_IPC_OP_VIEW, PBX_IPC_OP_POLICY},
        {PBX_IPC_OP_WITHDRAW, PBX_IPC_OP_VIEW},
        {PBX_IPC_OP_INSTALL, PBX_IPC_OP_REVOKE}};
    uint16_t op = pbx_le_get16(out + 6) & (uint16_t)~PBX_IPC_REPLY_BIT;
    if (x->field == LR_F_H_SEQ) {
        (void)pbx_ipc_frame_set_seq(out, n, seq ^ 0x80000000U);
    } else if (x->field == LR_F_H_INDEX) {
        pbx_le_put32(out + 12, pbx_le_get32(out + 12) + 1U);
    } else if (x->field == LR_F_H_GEN) {
        pbx_le_put32(out + 16,
                     x->how == LR_HOW_ZERO ? 0U : pbx_le_get32(out + 16) + 1U);
    } else {
        for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
            if (other[i][0] == op) {
                pbx_le_put16(out + 6,
                             (uint16_t)(other[i][1] | PBX_IPC_REPLY_BIT));
            }
        }
    }
}

/* Sends a reply (seq echoed) with the descriptors in fds, then closes
 * them (our ends are kept in the run). */
void lr_send(lr_run *r, int fd, const pbx_ipc_frame *q, uint8_t *out, size_t n,
             int *fds, int nfds)
{
    /* A reply that cannot be encoded or sent would make a row a silent
     * peer in disguise: the runner fails on it. */
    r->send_failed = r->send_failed || n < PBX_IPC_HEADER_BYTES ||
                     !e2e_reply(fd, q, out, n, fds, nfds);
    for (int i = 0; i < nfds; i++) {
        if (fds[i] >= 0) {
            (void)close(fds[i]);
        }
    }
}

/* Sends the honest reply in out as the armed fault says (armed false:
 * honestly). to is the route it belongs on; honest_fds the receipts an
 * honest reply carries (0 or 1), made by mk when needed again. */
void lr_deliver(lr_run *r, bool armed, int to, const pbx_ipc_frame *q,
                uint8_t *out, size_t n, int *fds, int nfds)
{
    lr_how how = armed ? r->fault.how : LR_HOW_NONE;
    if (how == LR_HOW_EXTRA_FD) {
        int extra[2] = {fds[0], -1};
        extra[nfds] = lr_pair(r, true, NULL);
        lr_send(r, to, q, out, n, extra, nfds + 1);
        return;
    }
    if (how == LR_HOW_NO_FD) {
        for (int i = 0; i < nfds; i++) {
            (void)close(fds[i]);
        }
        lr_send(r, to, q, out, n, NULL, 0);
        return;
    }
    if (how == LR_HOW_ON_SCOPE && q->op == PBX_IPC_OP_RESOLVE) {
        for (unsigned k = 0; k < r->nreq; k++) {
            if (r->req[k].index == q->request.index &&
                r->req[k].gen == q->request.gen) {
                to = r->scope[k];
            }
        }
    }
    if (how == LR_HOW_DUPLICATE) {
        uint8_t copy[PBX_IPC_FRAME_BYTES_MAX];
        int dup = nfds > 0 ? lr_pair(r, true, NULL) : -1;
        memcpy(copy, out, n);
        lr_send(r, to, q, out, n, fds, nfds);
        lr_send(r, to, q, copy, n, &dup, nfds);
        return;
    }
    lr_send(r, to, q, out, n, fds, nfds);
}

void lr_poison_send(lr_run *r, int to, const pbx_ipc_frame *q, uint8_t *out,
                    size_t n, bool with_fd)
{
    int fd = with_fd ? lr_pair(r, true, NULL) : -1;
    (void)pbx_ipc_frame_set_seq(out, n, q->seq);
    lr_header_lie(&r->fault, out, n, q->seq);
    /* A poisoned reply that is not sent would make the row an honest
     * one in disguise: the runner fails on it. */
    r->send_failed =
        r->send_failed || n < PBX_IPC_HEADER_BYTES || (with_fd && fd < 0) ||
        !e2e_send(to, out, n, with_fd ? &fd : NULL, with_fd ? 1 : 0);
    if (fd >= 0) {
        (void)close(fd);
    }
}

/* An ALLOW echoing an exceptional request: the POLICY reply decoder's
 * refusal (PBX_E_IPC_EXCEPTIONAL_ALLOW), so the encoder never writes it;
 * the verdict byte (the body's first) is set by hand in the honest
 * PROMPT reply, whose every echo stays exact. */
void lr_verdict_lie(const lr_fault *x, uint8_t *out, size_t n)
{
    if (x->field == LR_F_VERDICT && n > PBX_IPC_HEADER_BYTES) {
        out[PBX_IPC_HEADER_BYTES] = (uint8_t)PBX_IPC_VERDICT_ALLOW;
    }
}
