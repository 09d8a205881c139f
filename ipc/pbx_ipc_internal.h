/*
 * pbx_ipc_internal.h: helpers shared by the ipc record codecs. Not part of
 * the public API; only the ipc sources include it.
 */
#ifndef PBX_IPC_INTERNAL_H
#define PBX_IPC_INTERNAL_H

#include "ipc/pbx_ipc.h"

/** PBX_IPC_REPLY_OF gives the reply op number of request op. */
#define PBX_IPC_REPLY_OF(op) ((uint16_t)((op) | PBX_IPC_REPLY_BIT))

/**
 * pbx_ipc_body_exact opens the body of f as a status-zero record of op
 * whose length is exactly len: PBX_E_IPC_OP_MISMATCH, PBX_E_IPC_STATUS,
 * PBX_E_IPC_CAP_PARTITION when f does not carry pbx_ipc_frame_decode's
 * proof for op and its cap_count (built or changed by hand),
 * PBX_E_IPC_TRUNCATED when shorter, PBX_E_IPC_TRAILING when longer.
 */
pbx_err pbx_ipc_body_exact(const pbx_ipc_frame *f, uint16_t op, size_t len);

/**
 * pbx_ipc_body_at_least is pbx_ipc_body_exact for a variable record: the
 * body must hold at least fixed bytes; the caller checks the exact total
 * with pbx_ipc_body_total once it has read the variable lengths.
 */
pbx_err pbx_ipc_body_at_least(const pbx_ipc_frame *f, uint16_t op,
                              size_t fixed);

/**
 * pbx_ipc_body_total compares f's body length with want: TRUNCATED when
 * the body is shorter, TRAILING when longer, PBX_OK when equal.
 */
pbx_err pbx_ipc_body_total(const pbx_ipc_frame *f, size_t want);

/**
 * pbx_ipc_texts_total reads the program-entry and label lengths stored
 * little-endian at body offsets lens_off and lens_off + 2 of a record whose
 * fixed part (already proven present) is fixed bytes, bounds them (entry
 * 1..PBX_IPC_ENTRY_LEN_BYTES_MAX, label 0..PBX_IPC_LABEL_LEN_BYTES_MAX:
 * PBX_E_IPC_BOUND) and checks that the body is exactly fixed + entry +
 * label + extra bytes (pbx_ipc_body_total). The lengths are written to
 * *entry_len and *label_len only on success. BEGIN, PROMPT and VIEW share
 * this layout rule; extra is the selector length for PROMPT, else 0.
 */
pbx_err pbx_ipc_texts_total(const pbx_ipc_frame *f, size_t fixed,
                            size_t lens_off, size_t extra, uint16_t *entry_len,
                            uint16_t *label_len);

/** pbx_ipc_all_zero reports whether the n bytes at p are all zero. */
bool pbx_ipc_all_zero(const uint8_t *p, size_t n);

/**
 * pbx_ipc_text_check checks a program entry or label length against
 * [min, max] (PBX_E_IPC_BOUND) and its bytes for printable ASCII
 * (PBX_E_IPC_TEXT). bytes must hold len readable bytes when len <= max.
 */
pbx_err pbx_ipc_text_check(const uint8_t *bytes, size_t len, size_t min,
                           size_t max);

/**
 * pbx_ipc_context_check validates the discriminants of ctx, its nonzero
 * job generation, the admission rule and its program entry.
 */
pbx_err pbx_ipc_context_check(const pbx_ipc_context *ctx);

/**
 * pbx_ipc_target_check applies the mode rule: INSTALL needs a nonzero
 * process generation, RUNTIME_REPLY needs every target field zero. mode
 * must already be a known pbx_ipc_mode.
 */
pbx_err pbx_ipc_target_check(uint8_t mode, const pbx_ipc_target *t);

/**
 * pbx_ipc_frame_start checks that a frame with body_len body bytes fits
 * buf_len (PBX_E_IPC_NO_SPACE) and the frame bound (PBX_E_IPC_BOUND),
 * then writes a status-zero header for op, request and caps and zeroes the
 * body, so reserved fields need no further writes. Returns the body start
 * through *body.
 */
pbx_err pbx_ipc_frame_start(uint8_t *buf, size_t buf_len, uint16_t op,
                            pbx_ipc_id request, uint16_t caps, size_t body_len,
                            uint8_t **body);

/**
 * pbx_ipc_frame_reopen decodes the frame an encoder just wrote (header
 * plus body_len body bytes, carrying caps) so the encoder can run its own
 * record decoder over it before reporting success.
 */
pbx_err pbx_ipc_frame_reopen(const uint8_t *buf, size_t body_len, uint16_t caps,
                             pbx_ipc_frame *f);

/**
 * pbx_ipc_frame_done finishes an encoder: on PBX_OK it stores the frame
 * length (header plus body_len) in *out_len; it returns err unchanged.
 */
pbx_err pbx_ipc_frame_done(pbx_err err, size_t body_len, size_t *out_len);

/**
 * pbx_ipc_entry_put writes entry length and bytes of ctx-style entry e at
 * the given body offsets. The caller proved e->len <= ENTRY max and room.
 */
void pbx_ipc_entry_put(uint8_t *body, size_t len_off, size_t bytes_off,
                       const pbx_ipc_entry *e);

/**
 * pbx_ipc_bytes_copy copies len bytes from src to dst[0..len); a zero len
 * needs no source.
 */
void pbx_ipc_bytes_copy(uint8_t *dst, const uint8_t *src, size_t len);

/**
 * PBX_IPC_OBJECT_BODY_BYTES is the size of a body that is one object
 * identity: u64 id, u32 nonzero generation, u32 reserved zero (DETACH,
 * WITHDRAW and their acknowledgements).
 */
#define PBX_IPC_OBJECT_BODY_BYTES 16U

/**
 * pbx_ipc_object_body_put writes a frame of op carrying caps capabilities
 * whose body is exactly object o into buf (buf_len bytes). Returns
 * PBX_OK or PBX_E_IPC_NO_SPACE; never writes past buf_len.
 */
pbx_err pbx_ipc_object_body_put(uint16_t op, uint16_t caps, pbx_ipc_id request,
                                const pbx_ipc_object *o, uint8_t *buf,
                                size_t buf_len);

/**
 * pbx_ipc_object_body_get decodes the body of f (a status-zero record of
 * op) as exactly one object identity into *o: reserved word zero,
 * generation nonzero. *o is written only on success.
 */
pbx_err pbx_ipc_object_body_get(const pbx_ipc_frame *f, uint16_t op,
                                pbx_ipc_object *o);

#endif /* PBX_IPC_INTERNAL_H */
