/*
 * pbx_ipc_ttyd.h: the ttyd (trusted prompt and policy) records.
 *
 * Part of the wire codec of ipc/pbx_ipc.h, which includes this header;
 * include ipc/pbx_ipc.h, not this file. The rules of that header
 * (frame layout, encoder self-check, borrowed byte pointers) hold here.
 */
#ifndef PBX_IPC_TTYD_H
#define PBX_IPC_TTYD_H

#include "ipc/pbx_ipc_wire.h"

/* ---- ttyd -------------------------------------------------------------- */

/**
 * pbx_ipc_policy asks ttyd for the session policy of a resolved request
 * (0 caps both ways). object.gen is nonzero.
 */
typedef struct pbx_ipc_policy {
    /** ctx is the request context. */
    pbx_ipc_context ctx;
    /** object is the resolved object's identity. */
    pbx_ipc_object object;
} pbx_ipc_policy;

/** pbx_ipc_policy_encode writes a POLICY request. */
pbx_err pbx_ipc_policy_encode(pbx_ipc_id request, const pbx_ipc_policy *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_policy_decode decodes a POLICY request frame into *out. */
pbx_err pbx_ipc_policy_decode(const pbx_ipc_frame *f, pbx_ipc_policy *out);

/**
 * pbx_ipc_policy_reply is ttyd's verdict with echoed urgency, realm and
 * session. ALLOW with urgency EXCEPTIONAL is rejected by the decoder
 * (PBX_E_IPC_EXCEPTIONAL_ALLOW); the core still checks the echoes.
 */
typedef struct pbx_ipc_policy_reply {
    /** verdict is a pbx_ipc_verdict. */
    uint8_t verdict;
    /** urgency echoes the request's pbx_ipc_urgency. */
    uint8_t urgency;
    /** realm echoes the request's realm. */
    uint32_t realm;
    /** session echoes the request's session. */
    uint64_t session;
} pbx_ipc_policy_reply;

/** pbx_ipc_policy_reply_encode writes a POLICY reply. */
pbx_err pbx_ipc_policy_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_policy_reply *rec,
                                    uint8_t *buf, size_t buf_len,
                                    size_t *out_len);
/** pbx_ipc_policy_reply_decode decodes a POLICY reply into *out. */
pbx_err pbx_ipc_policy_reply_decode(const pbx_ipc_frame *f,
                                    pbx_ipc_policy_reply *out);

/**
 * pbx_ipc_prompt asks ttyd to show a trusted prompt bound to the exact
 * object (0 caps both ways). selector is borrowed (see pbx_ipc_selector);
 * selector_len is 1..SELECTOR max; object.gen is nonzero.
 */
typedef struct pbx_ipc_prompt {
    /** ctx is the request context. */
    pbx_ipc_context ctx;
    /** object is the resolved object shown to the user. */
    pbx_ipc_object object;
    /** label is the display label. */
    pbx_ipc_label label;
    /** selector_len is the selector length. */
    uint32_t selector_len;
    /** selector_digest is the committed selector SHA-256. */
    uint8_t selector_digest[PBX_IPC_DIGEST_BYTES];
    /** selector is the scope-relative selector (borrowed). */
    const uint8_t *selector;
} pbx_ipc_prompt;

/** pbx_ipc_prompt_encode writes a PROMPT request. */
pbx_err pbx_ipc_prompt_encode(pbx_ipc_id request, const pbx_ipc_prompt *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_prompt_decode decodes a PROMPT request frame into *out. */
pbx_err pbx_ipc_prompt_decode(const pbx_ipc_frame *f, pbx_ipc_prompt *out);

/**
 * pbx_ipc_prompt_reply is RETRY (empty body: not admitted yet, ask again)
 * or an ANSWER echoing session, realm, job, request and object. When retry
 * is true every other field is zero.
 */
typedef struct pbx_ipc_prompt_reply {
    /** retry is true for the empty RETRY reply. */
    bool retry;
    /** answer is a pbx_ipc_answer (ANSWER only). */
    uint8_t answer;
    /** realm echoes the prompt's realm. */
    uint32_t realm;
    /** session echoes the prompt's session. */
    uint64_t session;
    /** job_id echoes the prompt's job. */
    uint64_t job_id;
    /** job_gen echoes the prompt's job generation (nonzero). */
    uint32_t job_gen;
    /** request echoes the request identity (gen nonzero). */
    pbx_ipc_id request;
    /** object echoes the object shown (gen nonzero). */
    pbx_ipc_object object;
} pbx_ipc_prompt_reply;

/** pbx_ipc_prompt_reply_encode writes a PROMPT RETRY or ANSWER reply. */
pbx_err pbx_ipc_prompt_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_prompt_reply *rec,
                                    uint8_t *buf, size_t buf_len,
                                    size_t *out_len);
/** pbx_ipc_prompt_reply_decode decodes a PROMPT reply into *out. */
pbx_err pbx_ipc_prompt_reply_decode(const pbx_ipc_frame *f,
                                    pbx_ipc_prompt_reply *out);

/**
 * pbx_ipc_view publishes (ACTIVE) or removes (REMOVE) the full grant row
 * at ttyd, receipt-free (0 caps both ways). grant.gen and object.gen are
 * nonzero; target follows the mode rule of pbx_ipc_target, and in
 * RUNTIME_REPLY mode installed_slot is zero too.
 */
typedef struct pbx_ipc_view {
    /** kind is a pbx_ipc_view_kind. */
    uint8_t kind;
    /** grant is the grant identity. */
    pbx_ipc_id grant;
    /** ctx is the request context. */
    pbx_ipc_context ctx;
    /** object is the granted object's identity. */
    pbx_ipc_object object;
    /** scope_id is vfsd's scope identity. */
    uint64_t scope_id;
    /** target is the install target (process and requested slot). */
    pbx_ipc_target target;
    /** installed_slot is the slot procd reported (data). */
    uint32_t installed_slot;
    /** selector_digest is the committed selector SHA-256. */
    uint8_t selector_digest[PBX_IPC_DIGEST_BYTES];
    /** label is the display label. */
    pbx_ipc_label label;
} pbx_ipc_view;

/** pbx_ipc_view_encode writes a VIEW request. */
pbx_err pbx_ipc_view_encode(pbx_ipc_id request, const pbx_ipc_view *rec,
                            uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_view_decode decodes a VIEW request frame into *out. */
pbx_err pbx_ipc_view_decode(const pbx_ipc_frame *f, pbx_ipc_view *out);

/** pbx_ipc_view_ack is ttyd's VIEW acknowledgement: kind and grant echo. */
typedef struct pbx_ipc_view_ack {
    /** kind echoes the pbx_ipc_view_kind. */
    uint8_t kind;
    /** grant echoes the grant identity (gen nonzero). */
    pbx_ipc_id grant;
} pbx_ipc_view_ack;

/** pbx_ipc_view_reply_encode writes a VIEW acknowledgement. */
pbx_err pbx_ipc_view_reply_encode(pbx_ipc_id request,
                                  const pbx_ipc_view_ack *rec, uint8_t *buf,
                                  size_t buf_len, size_t *out_len);
/** pbx_ipc_view_reply_decode decodes a VIEW acknowledgement into *out. */
pbx_err pbx_ipc_view_reply_decode(const pbx_ipc_frame *f,
                                  pbx_ipc_view_ack *out);

/**
 * pbx_ipc_withdraw withdraws a trusted prompt that ttyd is showing or has
 * queued (0 caps both ways). The header request id is the exact live
 * request (gen nonzero); object is the identity the prompt shows (gen
 * nonzero). The acknowledgement echoes the same object identity.
 */
typedef struct pbx_ipc_withdraw {
    /** object is the object identity the prompt shows. */
    pbx_ipc_object object;
} pbx_ipc_withdraw;

/** pbx_ipc_withdraw_encode writes a WITHDRAW request for request. */
pbx_err pbx_ipc_withdraw_encode(pbx_ipc_id request, const pbx_ipc_withdraw *rec,
                                uint8_t *buf, size_t buf_len, size_t *out_len);
/** pbx_ipc_withdraw_decode decodes a WITHDRAW request frame into *out. */
pbx_err pbx_ipc_withdraw_decode(const pbx_ipc_frame *f, pbx_ipc_withdraw *out);
/** pbx_ipc_withdraw_reply_encode writes the WITHDRAW acknowledgement. */
pbx_err pbx_ipc_withdraw_reply_encode(pbx_ipc_id request,
                                      const pbx_ipc_withdraw *rec, uint8_t *buf,
                                      size_t buf_len, size_t *out_len);
/** pbx_ipc_withdraw_reply_decode decodes a WITHDRAW acknowledgement. */
pbx_err pbx_ipc_withdraw_reply_decode(const pbx_ipc_frame *f,
                                      pbx_ipc_withdraw *out);

#endif /* PBX_IPC_TTYD_H */
