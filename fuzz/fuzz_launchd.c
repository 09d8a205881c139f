/*
 * fuzz_launchd.c: libFuzzer harness for launchd's control and job frames
 * (peers/lib/pbx_peer_launch.c, peers/lib/pbx_peer_admin.c): LAUNCH and
 * its reply, EXIT, USER_CANCEL and its reply.
 *
 * Input layout: byte 0 is the descriptor count the frame arrived with
 * (low three bits), the rest is the frame. Each decoder judges it; every
 * frame a decoder accepts re-encodes to the same bytes (the encoders
 * write seq 0 for LAUNCH, so its seq is patched back first), and every
 * accepted LAUNCH holds within its documented bounds. Any difference
 * aborts.
 */
#include "peers/lib/pbx_peer_admin.h"
#include "peers/lib/pbx_peer_launch.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t out[PBX_IPC_FRAME_BYTES_MAX];

/* Aborts unless out[0..len) is exactly the input frame. */
static void fuzz_launchd_same(pbx_err e, size_t len, const uint8_t *buf,
                              size_t n)
{
    if (e != PBX_OK || len != n || memcmp(out, buf, n) != 0) {
        abort();
    }
}

/* Checks an accepted LAUNCH against its documented bounds. */
static void fuzz_launchd_bounds(const pbx_peer_launch_req *r, size_t caps)
{
    if (r->entry_len < 1U || r->entry_len > PBX_PEER_LAUNCH_ENTRY_MAX ||
        r->argc < 1U || r->argc > PBX_PEER_LAUNCH_ARGS_MAX ||
        r->session == 0U || r->realm == 0U || r->realm > UINT32_MAX ||
        (r->job_id != 0U && r->job_gen == 0U) ||
        (r->flags & ~(uint32_t)PBX_PEER_LAUNCH_FLAGS_KNOWN) != 0U ||
        r->scope !=
            (caps - ((r->flags & PBX_PEER_LAUNCH_CWD) != 0U ? 1U : 0U) ==
             PBX_PEER_LAUNCH_FDS_SCOPE) ||
        ((r->flags & PBX_PEER_LAUNCH_PROFILE) != 0U) !=
            (r->profile_len != 0U) ||
        (r->profile_len != 0U && r->profile[0] != (uint8_t)'/')) {
        abort();
    }
    for (size_t i = 0; i < r->argc; i++) {
        if (r->arg_lens[i] == 0U ||
            memchr(r->args[i], 0, r->arg_lens[i]) != NULL) {
            abort();
        }
    }
}

/* Judges buf as a LAUNCH-family frame. */
static void fuzz_launchd_launch(const uint8_t *buf, size_t n, size_t nfds)
{
    pbx_peer_launch_frame f;
    size_t len = 0;
    if (pbx_peer_launch_peek(buf, n, nfds, &f) != PBX_OK) {
        return;
    }
    if (f.op == PBX_PEER_OP_LAUNCH) {
        pbx_peer_launch_req r;
        if (pbx_peer_launch_decode(&f, &r) == PBX_OK) {
            fuzz_launchd_bounds(&r, f.caps);
            pbx_err e = pbx_peer_launch_encode(&r, out, sizeof(out), &len);
            if (e == PBX_OK) {
                e = pbx_ipc_frame_set_seq(out, len, f.seq);
            }
            fuzz_launchd_same(e, len, buf, n);
        }
    } else if (f.op == (PBX_PEER_OP_LAUNCH | PBX_IPC_REPLY_BIT)) {
        pbx_peer_launch_reply r;
        if (f.status != 0U) {
            fuzz_launchd_same(pbx_peer_launch_reply_encode(f.status, NULL,
                                                           f.seq, out,
                                                           sizeof(out), &len),
                              len, buf, n);
        } else if (pbx_peer_launch_reply_decode(&f, &r) == PBX_OK) {
            fuzz_launchd_same(pbx_peer_launch_reply_encode(0U, &r, f.seq, out,
                                                           sizeof(out), &len),
                              len, buf, n);
        }
    } else if (f.op == PBX_PEER_OP_EXIT) {
        uint32_t ws = 0;
        if (pbx_peer_exit_decode(&f, &ws) == PBX_OK) {
            fuzz_launchd_same(
                pbx_peer_exit_encode(ws, f.seq, out, sizeof(out), &len), len,
                buf, n);
        }
    }
}

/* Judges buf as a USER_CANCEL request and as its reply. */
static void fuzz_launchd_cancel(const uint8_t *buf, size_t n, size_t nfds)
{
    pbx_ipc_id grant;
    uint32_t seq = 0;
    size_t len = 0;
    if (pbx_peer_user_cancel_decode(buf, n, nfds, &grant, &seq) == PBX_OK) {
        if (grant.gen == 0U ||
            pbx_peer_admin_op(buf, n) != PBX_PEER_OP_USER_CANCEL) {
            abort();
        }
        fuzz_launchd_same(
            pbx_peer_user_cancel_encode(grant, seq, out, sizeof(out), &len),
            len, buf, n);
    }
    pbx_peer_user_cancel_reply r;
    if (pbx_peer_user_cancel_reply_decode(buf, n, nfds, &r) == PBX_OK &&
        pbx_ipc_frame_peek_seq(buf, n, &seq) == PBX_OK) {
        fuzz_launchd_same(
            pbx_peer_user_cancel_reply_encode(&r, seq, out, sizeof(out), &len),
            len, buf, n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2U) {
        return 0;
    }
    size_t nfds = data[0] & 7U;
    fuzz_launchd_launch(data + 1, size - 1U, nfds);
    fuzz_launchd_cancel(data + 1, size - 1U, nfds);
    return 0;
}
