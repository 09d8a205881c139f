/*
 * EVA driver for ipc/: a received frame of every length up to the largest
 * (PBX_IPC_FRAME_BYTES_MAX + 1, so the too-long refusal is reached too),
 * of unknown bytes and an unknown transport capability count, through
 * pbx_ipc_frame_decode; a decoded frame then goes through every record
 * decoder, and a decoded record back through its encoder into a buffer
 * of unknown capacity, so every encoder runs on every record a decoder
 * accepts (docs/SECURITY.md, "Abstract interpretation").
 */
#include "base/pbx_base.h"
#include "ipc/pbx_ipc.h"
#include <__fc_builtin.h>

#define EVA_IN_MAX (PBX_IPC_FRAME_BYTES_MAX + 1U)

static uint8_t eva_in[EVA_IN_MAX];
static uint8_t eva_out[PBX_IPC_FRAME_BYTES_MAX];
static pbx_ipc_frame eva_frame;

/* The capacity an encoder is given: any, up to the out buffer's size. */
static size_t eva_cap(void)
{
    return Frama_C_size_t_interval(0, sizeof(eva_out));
}

#define EVA_REQ(T, rec, cap, len)                                              \
    T##_encode(eva_frame.request, rec, eva_out, cap, len)
#define EVA_NOREQ(T, rec, cap, len) T##_encode(rec, eva_out, cap, len)

/* eva_rt_NAME: decode the frame as a NAME record, and re-encode it. The
 * record starts zeroed: EVA does not tie a decoder's PBX_OK to the fields
 * it wrote, so an unzeroed record reads as uninitialised in the encoder
 * on paths where the decoder refused (and no encoder runs). */
#define EVA_ROUND_TRIP(name, T, ENC)                                           \
    static void eva_rt_##name(void)                                            \
    {                                                                          \
        T rec;                                                                 \
        size_t len = 0;                                                        \
        pbx_mem_set(&rec, 0, sizeof(rec));                                     \
        if (pbx_ipc_##name##_decode(&eva_frame, &rec) == PBX_OK) {             \
            (void)ENC(pbx_ipc_##name, &rec, eva_cap(), &len);                  \
        }                                                                      \
    }
EVA_ROUND_TRIP(begin, pbx_ipc_begin, EVA_NOREQ)
EVA_ROUND_TRIP(begin_reply, pbx_ipc_begin_reply, EVA_REQ)
EVA_ROUND_TRIP(selector, pbx_ipc_selector, EVA_REQ)
EVA_ROUND_TRIP(commit, pbx_ipc_commit, EVA_REQ)
EVA_ROUND_TRIP(decision_reply, pbx_ipc_decision, EVA_REQ)
EVA_ROUND_TRIP(cancel, pbx_ipc_cancel, EVA_NOREQ)
EVA_ROUND_TRIP(consume, pbx_ipc_consume, EVA_NOREQ)
EVA_ROUND_TRIP(expire, pbx_ipc_expire, EVA_NOREQ)
EVA_ROUND_TRIP(resolve, pbx_ipc_resolve, EVA_REQ)
EVA_ROUND_TRIP(resolve_reply, pbx_ipc_resolve_reply, EVA_REQ)
EVA_ROUND_TRIP(detach, pbx_ipc_detach, EVA_REQ)
EVA_ROUND_TRIP(detach_reply, pbx_ipc_detach, EVA_REQ)
EVA_ROUND_TRIP(retire, pbx_ipc_retire, EVA_REQ)
EVA_ROUND_TRIP(retire_reply, pbx_ipc_retire, EVA_REQ)
EVA_ROUND_TRIP(policy, pbx_ipc_policy, EVA_REQ)
EVA_ROUND_TRIP(policy_reply, pbx_ipc_policy_reply, EVA_REQ)
EVA_ROUND_TRIP(prompt, pbx_ipc_prompt, EVA_REQ)
EVA_ROUND_TRIP(prompt_reply, pbx_ipc_prompt_reply, EVA_REQ)
EVA_ROUND_TRIP(view, pbx_ipc_view, EVA_REQ)
EVA_ROUND_TRIP(view_reply, pbx_ipc_view_ack, EVA_REQ)
EVA_ROUND_TRIP(withdraw, pbx_ipc_withdraw, EVA_REQ)
EVA_ROUND_TRIP(withdraw_reply, pbx_ipc_withdraw, EVA_REQ)
EVA_ROUND_TRIP(install, pbx_ipc_install, EVA_REQ)
EVA_ROUND_TRIP(install_reply, pbx_ipc_install_reply, EVA_REQ)
EVA_ROUND_TRIP(revoke, pbx_ipc_revoke, EVA_REQ)
EVA_ROUND_TRIP(revoke_reply, pbx_ipc_revoke_ack, EVA_REQ)
EVA_ROUND_TRIP(wake, pbx_ipc_wake, EVA_REQ)

/* Every record decoder on the decoded frame. */
static void eva_records(void)
{
    eva_rt_begin();
    eva_rt_begin_reply();
    eva_rt_selector();
    eva_rt_commit();
    eva_rt_decision_reply();
    eva_rt_cancel();
    eva_rt_consume();
    eva_rt_expire();
    eva_rt_resolve();
    eva_rt_resolve_reply();
    eva_rt_detach();
    eva_rt_detach_reply();
    eva_rt_retire();
    eva_rt_retire_reply();
    eva_rt_policy();
    eva_rt_policy_reply();
    eva_rt_prompt();
    eva_rt_prompt_reply();
    eva_rt_view();
    eva_rt_view_reply();
    eva_rt_withdraw();
    eva_rt_withdraw_reply();
    eva_rt_install();
    eva_rt_install_reply();
    eva_rt_revoke();
    eva_rt_revoke_reply();
    eva_rt_wake();
}

/* The helpers that take plain values: every value of their argument. */
static void eva_values(void)
{
    pbx_ipc_op_rule rule;
    uint16_t op = (uint16_t)Frama_C_interval(0, 0xffff);
    uint16_t st = (uint16_t)Frama_C_interval(0, 0xffff);
    uint32_t v = Frama_C_unsigned_int_interval(0, 0xffffffffu);
    size_t len = 0;
    pbx_ipc_id id = {v, v};

    (void)pbx_ipc_op_rule_get(op, &rule);
    (void)pbx_ipc_caps_allowed(op, st, (uint16_t)Frama_C_interval(0, 0xffff));
    (void)pbx_ipc_operation_known(v);
    (void)pbx_ipc_class_known(v);
    (void)pbx_ipc_lifetime_known(v);
    (void)pbx_ipc_admission_check(op, st, (uint8_t)Frama_C_interval(0, 255));
    (void)pbx_ipc_op_name(op);
    (void)pbx_ipc_operation_name(v);
    (void)pbx_ipc_class_name(v);
    (void)pbx_ipc_lifetime_name(v);
    (void)pbx_ipc_mode_name(v);
    (void)pbx_ipc_urgency_name(v);
    (void)pbx_ipc_outcome_name(v);
    (void)pbx_ipc_reason_name(v);
    (void)pbx_ipc_resolve_result_name(v);
    (void)pbx_ipc_status_reply_encode(op, id, (pbx_err)st, eva_out, eva_cap(),
                                      &len);
    (void)pbx_ipc_empty_encode(op, id, eva_out, eva_cap(), &len);
}

/* The entry point EVA starts from (-main eva_main). */
void eva_main(void);
void eva_main(void)
{
    size_t n = Frama_C_size_t_interval(0, EVA_IN_MAX);
    uint16_t caps = (uint16_t)Frama_C_interval(0, 0xffff);
    uint32_t seq = 0;

    Frama_C_make_unknown((char *)eva_in, EVA_IN_MAX);
    /* Two partitions, analysed apart: a header alone (the decoded body
     * is NULL) and a header with a body (the body points into eva_in).
     * Merged, EVA would read a body through NULL. */
    //@ split n <= PBX_IPC_HEADER_BYTES;
    eva_values();
    (void)pbx_ipc_frame_peek_seq(eva_in, n, &seq);
    if (pbx_ipc_frame_decode(eva_in, n, caps, &eva_frame) != PBX_OK) {
        return;
    }
    (void)pbx_ipc_empty_decode(&eva_frame, eva_frame.op);
    eva_records();
    (void)pbx_ipc_frame_set_seq(eva_in, n, seq);
}
