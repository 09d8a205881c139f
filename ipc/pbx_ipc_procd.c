/*
 * pbx_ipc_procd.c: the procd peer exchanges (INSTALL with its manage-only
 * revocation handle, REVOKE through that handle) and launchd's
 * authority-free WAKE datagram.
 */
#include "ipc/pbx_ipc_internal.h"

/* ---- INSTALL -------------------------------------------------------------
 */

pbx_err pbx_ipc_install_encode(pbx_ipc_id request, const pbx_ipc_install *rec,
                               uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_INSTALL, request,
                                      1U, PBX_IPC_INSTALL_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put64(b, rec->target.process_id);
    pbx_le_put32(b + 8, rec->target.process_gen);
    pbx_le_put32(b + 12, rec->target.slot);
    pbx_le_put32(b + 16, rec->grant.index);
    pbx_le_put32(b + 20, rec->grant.gen);
    pbx_le_put16(b + 24, rec->operation);
    pbx_le_put16(b + 26, rec->object_class);
    b[28] = rec->lifetime;
    pbx_ipc_frame f;
    pbx_ipc_install chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_INSTALL_BYTES, 1U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_install_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_INSTALL_BYTES, out_len);
}

pbx_err pbx_ipc_install_decode(const pbx_ipc_frame *f, pbx_ipc_install *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_exact(f, PBX_IPC_OP_INSTALL, PBX_IPC_INSTALL_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if (!pbx_ipc_all_zero(b + 29, 3U)) {
        return PBX_E_IPC_RESERVED;
    }
    out->target.process_id = pbx_le_get64(b);
    out->target.process_gen = pbx_le_get32(b + 8);
    out->target.slot = pbx_le_get32(b + 12);
    out->grant.index = pbx_le_get32(b + 16);
    out->grant.gen = pbx_le_get32(b + 20);
    out->operation = pbx_le_get16(b + 24);
    out->object_class = pbx_le_get16(b + 26);
    out->lifetime = b[28];
    if (!pbx_ipc_operation_known(out->operation) ||
        !pbx_ipc_class_known(out->object_class) ||
        !pbx_ipc_lifetime_known(out->lifetime)) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (out->target.process_gen == 0U || out->grant.gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    return pbx_ipc_admission_check(out->operation, out->object_class,
                                   out->lifetime);
}

pbx_err pbx_ipc_install_reply_encode(pbx_ipc_id request,
                                     const pbx_ipc_install_reply *rec,
                                     uint8_t *buf, size_t buf_len,
                                     size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_REPLY_OF(PBX_IPC_OP_INSTALL),
                            request, 1U, PBX_IPC_INSTALL_REPLY_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    b[0] = rec->handle_kind;
    pbx_le_put32(b + 4, rec->installed_slot);
    pbx_le_put32(b + 8, rec->grant.index);
    pbx_le_put32(b + 12, rec->grant.gen);
    pbx_le_put64(b + 16, rec->target_process_id);
    pbx_le_put32(b + 24, rec->target_process_gen);
    pbx_ipc_frame f;
    pbx_ipc_install_reply chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_INSTALL_REPLY_BYTES, 1U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_install_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_INSTALL_REPLY_BYTES, out_len);
}

pbx_err pbx_ipc_install_reply_decode(const pbx_ipc_frame *f,
                                     pbx_ipc_install_reply *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_INSTALL),
                                     PBX_IPC_INSTALL_REPLY_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    if (!pbx_ipc_all_zero(b + 1, 3U) || pbx_le_get32(b + 28) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    out->handle_kind = b[0];
    out->installed_slot = pbx_le_get32(b + 4);
    out->grant.index = pbx_le_get32(b + 8);
    out->grant.gen = pbx_le_get32(b + 12);
    out->target_process_id = pbx_le_get64(b + 16);
    out->target_process_gen = pbx_le_get32(b + 24);
    if (out->handle_kind != PBX_IPC_HANDLE_MANAGE_ONLY &&
        out->handle_kind != PBX_IPC_HANDLE_STAGING) {
        return PBX_E_IPC_DISCRIMINANT;
    }
    if (out->grant.gen == 0U || out->target_process_gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    return PBX_OK;
}

/* ---- REVOKE --------------------------------------------------------------
 */

pbx_err pbx_ipc_revoke_encode(pbx_ipc_id request, const pbx_ipc_revoke *rec,
                              uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_REVOKE, request,
                                      0U, PBX_IPC_REVOKE_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put32(b, rec->grant.index);
    pbx_le_put32(b + 4, rec->grant.gen);
    pbx_le_put64(b + 8, rec->target_process_id);
    pbx_le_put32(b + 16, rec->target_process_gen);
    pbx_le_put32(b + 20, rec->installed_slot);
    pbx_ipc_frame f;
    pbx_ipc_revoke chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_REVOKE_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_revoke_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_REVOKE_BYTES, out_len);
}

pbx_err pbx_ipc_revoke_decode(const pbx_ipc_frame *f, pbx_ipc_revoke *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err =
        pbx_ipc_body_exact(f, PBX_IPC_OP_REVOKE, PBX_IPC_REVOKE_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    const uint8_t *b = f->body;
    out->grant.index = pbx_le_get32(b);
    out->grant.gen = pbx_le_get32(b + 4);
    out->target_process_id = pbx_le_get64(b + 8);
    out->target_process_gen = pbx_le_get32(b + 16);
    out->installed_slot = pbx_le_get32(b + 20);
    if (out->grant.gen == 0U || out->target_process_gen == 0U) {
        return PBX_E_IPC_GENERATION;
    }
    return PBX_OK;
}

pbx_err pbx_ipc_revoke_reply_encode(pbx_ipc_id request,
                                    const pbx_ipc_revoke_ack *rec, uint8_t *buf,
                                    size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err =
        pbx_ipc_frame_start(buf, buf_len, PBX_IPC_REPLY_OF(PBX_IPC_OP_REVOKE),
                            request, 0U, PBX_IPC_REVOKE_REPLY_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put32(b, rec->grant.index);
    pbx_le_put32(b + 4, rec->grant.gen);
    pbx_ipc_frame f;
    pbx_ipc_revoke_ack chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_REVOKE_REPLY_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_revoke_reply_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_REVOKE_REPLY_BYTES, out_len);
}

pbx_err pbx_ipc_revoke_reply_decode(const pbx_ipc_frame *f,
                                    pbx_ipc_revoke_ack *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, PBX_IPC_REPLY_OF(PBX_IPC_OP_REVOKE),
                                     PBX_IPC_REVOKE_REPLY_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    out->grant.index = pbx_le_get32(f->body);
    out->grant.gen = pbx_le_get32(f->body + 4);
    return out->grant.gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}

/* ---- WAKE ----------------------------------------------------------------
 */

pbx_err pbx_ipc_wake_encode(pbx_ipc_id request, const pbx_ipc_wake *rec,
                            uint8_t *buf, size_t buf_len, size_t *out_len)
{
    PBX_ASSERT(rec != NULL);
    uint8_t *b = NULL;
    pbx_err err = pbx_ipc_frame_start(buf, buf_len, PBX_IPC_OP_WAKE, request,
                                      0U, PBX_IPC_WAKE_BYTES, &b);
    if (err != PBX_OK) {
        return err;
    }
    pbx_le_put64(b, rec->job_id);
    pbx_le_put32(b + 8, rec->job_gen);
    pbx_ipc_frame f;
    pbx_ipc_wake chk;
    err = pbx_ipc_frame_reopen(buf, PBX_IPC_WAKE_BYTES, 0U, &f);
    if (err == PBX_OK) {
        err = pbx_ipc_wake_decode(&f, &chk);
    }
    return pbx_ipc_frame_done(err, PBX_IPC_WAKE_BYTES, out_len);
}

pbx_err pbx_ipc_wake_decode(const pbx_ipc_frame *f, pbx_ipc_wake *out)
{
    PBX_ASSERT(out != NULL);
    pbx_err err = pbx_ipc_body_exact(f, PBX_IPC_OP_WAKE, PBX_IPC_WAKE_BYTES);
    if (err != PBX_OK) {
        return err;
    }
    if (pbx_le_get32(f->body + 12) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    out->job_id = pbx_le_get64(f->body);
    out->job_gen = pbx_le_get32(f->body + 8);
    return out->job_gen != 0U ? PBX_OK : PBX_E_IPC_GENERATION;
}
