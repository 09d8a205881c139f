/*
 * fuzz_stage.c: libFuzzer harness for procd's stage wire
 * (peers/lib/pbx_peer_stage.c): pbx_peer_stage_decode, which procd runs
 * on every STAGE a job's stage program sends and the stage program runs
 * on procd's STAGE reply and DELIVER.
 *
 * Input layout: byte 0 is the descriptor count the frame arrived with
 * (low three bits), the rest is the frame. A frame the decoder accepts
 * holds within the rules its header documents (a known op, the bounded
 * length, the descriptor count of its op, nonzero pid, generation and
 * grant generation) and re-encodes by its op's encoder to the same
 * bytes. Any difference aborts.
 */
#include "peers/lib/pbx_peer_stage.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[PBX_PEER_STAGE_FRAME_MAX];

/* Aborts unless cond holds. */
static void fst_check(bool cond)
{
    if (!cond) {
        abort();
    }
}

/* Re-encodes the accepted frame f by its op's encoder into out. */
static pbx_err fst_encode(const pbx_peer_stage_frame *f, size_t *len)
{
    if (f->op == PBX_PEER_OP_STAGE) {
        return pbx_peer_stage_encode(f->pid, f->seq, out, sizeof(out), len);
    }
    if (f->op == PBX_PEER_OP_DELIVER) {
        return pbx_peer_deliver_encode(&f->deliver, f->seq, out, sizeof(out),
                                       len);
    }
    return pbx_peer_stage_reply_encode(f->status, f->gen, f->seq, out,
                                       sizeof(out), len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1U) {
        return 0;
    }
    size_t nfds = data[0] & 7U;
    const uint8_t *buf = data + 1;
    size_t n = size - 1U;
    pbx_peer_stage_frame f;
    if (pbx_peer_stage_decode(buf, n, nfds, &f) != PBX_OK) {
        return 0;
    }
    bool deliver = f.op == PBX_PEER_OP_DELIVER;
    bool reply = f.op == (PBX_PEER_OP_STAGE | PBX_IPC_REPLY_BIT);
    fst_check(f.op == PBX_PEER_OP_STAGE || deliver || reply);
    fst_check(n <= PBX_PEER_STAGE_FRAME_MAX && nfds == (deliver ? 1U : 0U));
    fst_check(f.status == 0U || (reply && f.gen == 0U));
    fst_check(f.op != PBX_PEER_OP_STAGE || f.pid != 0U);
    fst_check(!reply || f.status != 0U || f.gen != 0U);
    fst_check(!deliver || f.deliver.grant.gen != 0U);
    size_t len = 0;
    pbx_err e = fst_encode(&f, &len);
    fst_check(e == PBX_OK && len == n && memcmp(out, buf, n) == 0);
    return 0;
}
