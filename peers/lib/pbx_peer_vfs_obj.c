/*
 * pbx_peer_vfs_obj.c: the codec of object connections (pbx_peer_vfs.h):
 * calls judged by the object's grant, replies encoded and checked. Pure:
 * no I/O. Moved from pbx_peer_vfs.c.
 */
#include "peers/lib/pbx_peer_vfs.h"

#include "ipc/pbx_ipc.h"
#include "peers/lib/pbx_peer.h"

/* Offsets in the 32-byte ipc v2 header (docs/PROTOCOL.md, "Frame"). */
enum {
    VFS_H_MAGIC = 0,
    VFS_H_VERSION = 4,
    VFS_H_OP = 6,
    VFS_H_STATUS = 8,
    VFS_H_CAPS = 10,
    VFS_H_INDEX = 12,
    VFS_H_GEN = 16,
    VFS_H_BODY_LEN = 20
};

/* Writes an object-connection header of op, status, request, body_len
 * and seq; the caller proved PBX_IPC_HEADER_BYTES of room. */
static void vfs_obj_header(uint8_t *buf, uint16_t op, uint16_t status,
                           pbx_ipc_id request, uint32_t body_len, uint32_t seq)
{
    pbx_le_put32(buf + VFS_H_MAGIC, PBX_IPC_MAGIC);
    pbx_le_put16(buf + VFS_H_VERSION, (uint16_t)PBX_IPC_VERSION);
    pbx_le_put16(buf + VFS_H_OP, op);
    pbx_le_put16(buf + VFS_H_STATUS, status);
    pbx_le_put16(buf + VFS_H_CAPS, 0U);
    pbx_le_put32(buf + VFS_H_INDEX, request.index);
    pbx_le_put32(buf + VFS_H_GEN, request.gen);
    pbx_le_put32(buf + VFS_H_BODY_LEN, body_len);
    pbx_le_put32(buf + PBX_IPC_SEQ_OFFSET, seq);
    pbx_le_put32(buf + PBX_IPC_RESERVED_OFFSET, 0U);
}

pbx_peer_vfs_open pbx_peer_vfs_open_for(pbx_peer_vfs_grant g)
{
    if (g.object_class == PBX_IPC_CLASS_FILE &&
        g.operation == PBX_IPC_OPERATION_READ) {
        return PBX_PEER_VFS_OPEN_READ;
    }
    if (g.object_class == PBX_IPC_CLASS_FILE &&
        g.operation == PBX_IPC_OPERATION_WRITE) {
        return PBX_PEER_VFS_OPEN_WRITE;
    }
    if (g.object_class == PBX_IPC_CLASS_DIRECTORY &&
        g.operation == PBX_IPC_OPERATION_LIST) {
        return PBX_PEER_VFS_OPEN_LIST;
    }
    return PBX_PEER_VFS_OPEN_PATH;
}

/* The body length each object call op has (WRITE: its fixed part), or 0
 * with *known false for an op that is no object call. */
static size_t vfs_obj_fixed(uint16_t op, bool *known)
{
    *known = true;
    switch (op) {
    case PBX_PEER_OP_OBJ_STAT:
        return 0U;
    case PBX_PEER_OP_OBJ_READ:
        return PBX_PEER_VFS_READ_BODY_BYTES;
    case PBX_PEER_OP_OBJ_LIST:
        return PBX_PEER_VFS_LIST_BODY_BYTES;
    case PBX_PEER_OP_OBJ_WRITE:
        return PBX_PEER_VFS_WRITE_FIXED_BYTES;
    case PBX_PEER_OP_OBJ_OPEN:
        return PBX_PEER_VFS_OPEN_BODY_BYTES;
    default:
        *known = false;
        return 0U;
    }
}

/* The first fault of an object call's shape, or 0; on 0 the call's
 * arguments are decoded into *call (data borrows buf). */
static uint32_t vfs_obj_shape(const uint8_t *buf, size_t len, bool extra,
                              pbx_peer_vfs_call *call)
{
    bool known = false;
    size_t fixed = vfs_obj_fixed(call->op, &known);
    if (extra || pbx_le_get16(buf + VFS_H_CAPS) != 0U) {
        return (uint32_t)PBX_E_IPC_CAP_COUNT;
    }
    size_t body = len - PBX_IPC_HEADER_BYTES;
    if (pbx_le_get32(buf + VFS_H_BODY_LEN) != (uint32_t)body || body < fixed ||
        (call->op != PBX_PEER_OP_OBJ_WRITE && body != fixed)) {
        return (uint32_t)PBX_E_IPC_BODY_LEN;
    }
    const uint8_t *b = buf + PBX_IPC_HEADER_BYTES;
    bool zero_tail =
        call->op != PBX_PEER_OP_OBJ_READ && call->op != PBX_PEER_OP_OBJ_WRITE;
    bool open = call->op == PBX_PEER_OP_OBJ_OPEN;
    if (pbx_le_get32(buf + PBX_IPC_RESERVED_OFFSET) != 0U ||
        (!zero_tail && pbx_le_get32(b + 12) != 0U) ||
        (open && pbx_le_get32(b + 4) != 0U)) {
        return (uint32_t)PBX_E_IPC_RESERVED;
    }
    call->mode = open ? pbx_le_get32(b) : 0U;
    if (pbx_le_get16(buf + VFS_H_STATUS) != 0U) {
        return (uint32_t)PBX_E_IPC_STATUS;
    }
    if (call->op == PBX_PEER_OP_OBJ_LIST) {
        call->cookie = pbx_le_get32(b);
        call->length = pbx_le_get32(b + 4);
    } else if (!zero_tail) {
        call->offset = pbx_le_get64(b);
        call->length = pbx_le_get32(b + 8);
    }
    if (call->op == PBX_PEER_OP_OBJ_WRITE) {
        if ((size_t)call->length != body - fixed) {
            return (uint32_t)PBX_E_IPC_BODY_LEN;
        }
        call->data = b + fixed;
    }
    return 0U;
}

/* The grant rule for a well-formed call op on an object granted g. */
static uint32_t vfs_obj_grant_rule(uint16_t op, pbx_peer_vfs_grant g)
{
    bool dir = g.object_class == PBX_IPC_CLASS_DIRECTORY;
    bool file = g.object_class == PBX_IPC_CLASS_FILE;
    switch (op) {
    case PBX_PEER_OP_OBJ_READ:
        if (dir || !file) {
            return dir ? (uint32_t)PBX_E_OBJ_IS_DIR : (uint32_t)PBX_E_OBJ_KIND;
        }
        /* A write grant covers reading its own file too: an O_RDWR open
         * is one write request, and its holder reads what it writes. */
        return g.operation == PBX_IPC_OPERATION_READ ||
                       g.operation == PBX_IPC_OPERATION_WRITE ||
                       g.operation == PBX_IPC_OPERATION_CREATE
                   ? 0U
                   : (uint32_t)PBX_E_OBJ_NOT_GRANTED;
    case PBX_PEER_OP_OBJ_LIST:
        if (!dir) {
            return (uint32_t)PBX_E_OBJ_NOT_DIR;
        }
        return g.operation == PBX_IPC_OPERATION_LIST
                   ? 0U
                   : (uint32_t)PBX_E_OBJ_NOT_GRANTED;
    case PBX_PEER_OP_OBJ_WRITE:
        if (dir || !file) {
            return dir ? (uint32_t)PBX_E_OBJ_IS_DIR : (uint32_t)PBX_E_OBJ_KIND;
        }
        /* A created file is written as a write grant's is. */
        return g.operation == PBX_IPC_OPERATION_WRITE ||
                       g.operation == PBX_IPC_OPERATION_CREATE
                   ? 0U
                   : (uint32_t)PBX_E_OBJ_READ_ONLY;
    default:
        return 0U;
    }
}

/* The grant rule for an OPEN of mode on an object granted g: the mode
 * must be one the grant covers, on a regular file. A read grant covers
 * reading only; a write (or create) grant covers reading, writing or
 * both, since its holder may read back the file it may change. */
static uint32_t vfs_obj_open_rule(uint32_t mode, pbx_peer_vfs_grant g)
{
    bool read = g.operation == PBX_IPC_OPERATION_READ;
    bool write = g.operation == PBX_IPC_OPERATION_WRITE ||
                 g.operation == PBX_IPC_OPERATION_CREATE;
    if (mode < PBX_PEER_VFS_MODE_READ || mode > PBX_PEER_VFS_MODE_RDWR) {
        return (uint32_t)PBX_E_OBJ_ARG;
    }
    if (g.object_class != PBX_IPC_CLASS_FILE) {
        return g.object_class == PBX_IPC_CLASS_DIRECTORY
                   ? (uint32_t)PBX_E_OBJ_IS_DIR
                   : (uint32_t)PBX_E_OBJ_KIND;
    }
    if ((mode == PBX_PEER_VFS_MODE_READ && read) || write) {
        return 0U;
    }
    return read ? (uint32_t)PBX_E_OBJ_READ_ONLY
                : (uint32_t)PBX_E_OBJ_NOT_GRANTED;
}

/* The length rule of a call that passed the grant rule. */
static uint32_t vfs_obj_length_rule(const pbx_peer_vfs_call *call)
{
    if (call->op == PBX_PEER_OP_OBJ_LIST) {
        return call->length < PBX_PEER_VFS_NAME_BYTES_MAX ||
                       call->length > PBX_PEER_VFS_LIST_NAMES_MAX
                   ? (uint32_t)PBX_E_OBJ_LENGTH
                   : 0U;
    }
    return call->length > PBX_PEER_VFS_IO_BYTES_MAX ? (uint32_t)PBX_E_OBJ_LENGTH
                                                    : 0U;
}

bool pbx_peer_vfs_obj_call_judge(const uint8_t *buf, size_t len, bool extra,
                                 const pbx_peer_vfs_grant *g,
                                 pbx_peer_vfs_call *call)
{
    if (len < PBX_IPC_HEADER_BYTES ||
        pbx_le_get32(buf + VFS_H_MAGIC) != PBX_IPC_MAGIC ||
        pbx_le_get16(buf + VFS_H_VERSION) != PBX_IPC_VERSION) {
        return false;
    }
    uint16_t op = pbx_le_get16(buf + VFS_H_OP);
    if ((op & PBX_IPC_REPLY_BIT) != 0U) {
        /* Never answer a reply: two peers that did would ping-pong. */
        return false;
    }
    pbx_mem_set(call, 0, sizeof(*call));
    call->op = op;
    call->request.index = pbx_le_get32(buf + VFS_H_INDEX);
    call->request.gen = pbx_le_get32(buf + VFS_H_GEN);
    call->seq = pbx_le_get32(buf + PBX_IPC_SEQ_OFFSET);
    bool known = false;
    (void)vfs_obj_fixed(op, &known);
    if (g == NULL) {
        call->status = (uint32_t)PBX_E_OBJ_RETIRED;
    } else if (!known) {
        call->status = (uint32_t)PBX_E_OBJ_NO_OP;
    } else {
        call->status = vfs_obj_shape(buf, len, extra, call);
    }
    if (call->status == 0U) {
        call->status = op == PBX_PEER_OP_OBJ_OPEN
                           ? vfs_obj_open_rule(call->mode, *g)
                           : vfs_obj_grant_rule(op, *g);
    }
    if (call->status == 0U) {
        call->status = vfs_obj_length_rule(call);
    }
    return true;
}

bool pbx_peer_vfs_obj_judge(const uint8_t *buf, size_t len, bool extra,
                            bool live, pbx_peer_vfs_call *call)
{
    pbx_peer_vfs_grant stat_only = {0U, 0U};
    return pbx_peer_vfs_obj_call_judge(buf, len, extra,
                                       live ? &stat_only : NULL, call);
}

uint32_t pbx_peer_vfs_obj_range(const pbx_peer_vfs_call *call, uint64_t size)
{
    if (call->op != PBX_PEER_OP_OBJ_READ && call->op != PBX_PEER_OP_OBJ_WRITE) {
        return 0U;
    }
    if (call->offset > size || call->offset > UINT64_MAX - call->length) {
        return (uint32_t)PBX_E_OBJ_RANGE;
    }
    return 0U;
}

/* Writes a call header of op with body_len into buf; false when cap is
 * shorter than the whole call. */
static bool vfs_obj_call_head(uint16_t op, uint32_t seq, size_t body_len,
                              uint8_t *buf, size_t cap)
{
    if (cap < PBX_IPC_HEADER_BYTES || cap - PBX_IPC_HEADER_BYTES < body_len) {
        return false;
    }
    pbx_ipc_id zero = {0U, 0U};
    vfs_obj_header(buf, op, 0U, zero, (uint32_t)body_len, seq);
    return true;
}

pbx_err pbx_peer_vfs_obj_read_encode(uint32_t seq, uint64_t offset,
                                     uint32_t length, uint8_t *buf, size_t cap,
                                     size_t *out_len)
{
    if (!vfs_obj_call_head((uint16_t)PBX_PEER_OP_OBJ_READ, seq,
                           PBX_PEER_VFS_READ_BODY_BYTES, buf, cap)) {
        return PBX_E_IPC_NO_SPACE;
    }
    uint8_t *b = buf + PBX_IPC_HEADER_BYTES;
    pbx_le_put64(b, offset);
    pbx_le_put32(b + 8, length);
    pbx_le_put32(b + 12, 0U);
    *out_len = PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_READ_BODY_BYTES;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_list_encode(uint32_t seq, uint32_t cookie,
                                     uint32_t names_cap, uint8_t *buf,
                                     size_t cap, size_t *out_len)
{
    if (!vfs_obj_call_head((uint16_t)PBX_PEER_OP_OBJ_LIST, seq,
                           PBX_PEER_VFS_LIST_BODY_BYTES, buf, cap)) {
        return PBX_E_IPC_NO_SPACE;
    }
    uint8_t *b = buf + PBX_IPC_HEADER_BYTES;
    pbx_le_put32(b, cookie);
    pbx_le_put32(b + 4, names_cap);
    *out_len = PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_LIST_BODY_BYTES;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_write_encode(uint32_t seq, uint64_t offset,
                                      const uint8_t *data, size_t n,
                                      uint8_t *buf, size_t cap, size_t *out_len)
{
    size_t body = PBX_PEER_VFS_WRITE_FIXED_BYTES + n;
    if (n > PBX_PEER_VFS_IO_BYTES_MAX ||
        !vfs_obj_call_head((uint16_t)PBX_PEER_OP_OBJ_WRITE, seq, body, buf,
                           cap)) {
        return PBX_E_IPC_NO_SPACE;
    }
    uint8_t *b = buf + PBX_IPC_HEADER_BYTES;
    pbx_le_put64(b, offset);
    pbx_le_put32(b + 8, (uint32_t)n);
    pbx_le_put32(b + 12, 0U);
    if (n != 0U) {
        pbx_mem_copy(b + PBX_PEER_VFS_WRITE_FIXED_BYTES, data, n);
    }
    *out_len = PBX_IPC_HEADER_BYTES + body;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_reply_head(const pbx_peer_vfs_call *call,
                                    size_t body_len, uint8_t *buf, size_t cap,
                                    size_t *out_len)
{
    if (call->status != 0U) {
        return PBX_E_IPC_STATUS;
    }
    if (body_len > PBX_PEER_VFS_IO_BYTES_MAX || cap < PBX_IPC_HEADER_BYTES ||
        cap - PBX_IPC_HEADER_BYTES < body_len) {
        return PBX_E_IPC_NO_SPACE;
    }
    vfs_obj_header(buf, (uint16_t)(call->op | PBX_IPC_REPLY_BIT), 0U,
                   call->request, (uint32_t)body_len, call->seq);
    *out_len = PBX_IPC_HEADER_BYTES + body_len;
    return PBX_OK;
}

bool pbx_peer_vfs_name_ok(const uint8_t *name, size_t len)
{
    if (len == 0U || len >= PBX_PEER_VFS_NAME_BYTES_MAX) {
        return false;
    }
    if ((len == 1U && name[0] == '.') ||
        (len == 2U && name[0] == '.' && name[1] == '.')) {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        if (name[i] == '\0' || name[i] == '/') {
            return false;
        }
    }
    return true;
}

bool pbx_peer_vfs_page_add(pbx_peer_vfs_page *p, const uint8_t *name,
                           size_t len)
{
    if (!pbx_peer_vfs_name_ok(name, len) || p->used > p->cap ||
        p->cap - p->used < len + 1U) {
        return false;
    }
    pbx_mem_copy(p->names + p->used, name, len);
    p->names[p->used + len] = 0U;
    p->used += len + 1U;
    p->count++;
    return true;
}

pbx_err pbx_peer_vfs_obj_stat_encode(uint32_t seq, uint8_t *buf, size_t cap,
                                     size_t *out_len)
{
    if (cap < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_NO_SPACE;
    }
    pbx_ipc_id zero = {0U, 0U};
    vfs_obj_header(buf, (uint16_t)PBX_PEER_OP_OBJ_STAT, 0U, zero, 0U, seq);
    *out_len = PBX_IPC_HEADER_BYTES;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_reply_encode(const pbx_peer_vfs_call *call,
                                      const pbx_peer_vfs_stat *st, uint8_t *buf,
                                      size_t cap, size_t *out_len)
{
    bool ok = call->status == 0U;
    size_t n = PBX_IPC_HEADER_BYTES + (ok ? PBX_PEER_VFS_STAT_BODY_BYTES : 0U);
    if (call->status > 0xFFFFU || (ok && call->op != PBX_PEER_OP_OBJ_STAT)) {
        return PBX_E_IPC_STATUS;
    }
    if (cap < n) {
        return PBX_E_IPC_NO_SPACE;
    }
    vfs_obj_header(buf, (uint16_t)(call->op | PBX_IPC_REPLY_BIT),
                   (uint16_t)call->status, call->request,
                   (uint32_t)(n - PBX_IPC_HEADER_BYTES), call->seq);
    if (ok) {
        uint8_t *b = buf + PBX_IPC_HEADER_BYTES;
        pbx_le_put64(b, st->dev);
        pbx_le_put64(b + 8, st->ino);
        pbx_le_put64(b + 16, st->size);
    }
    *out_len = n;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_reply_check(const uint8_t *buf, size_t len,
                                     size_t nfds, uint16_t op, uint32_t seq,
                                     uint32_t *status, const uint8_t **body,
                                     size_t *body_len)
{
    if (len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_TRUNCATED;
    }
    if (pbx_le_get32(buf + VFS_H_MAGIC) != PBX_IPC_MAGIC) {
        return PBX_E_IPC_MAGIC;
    }
    if (pbx_le_get16(buf + VFS_H_VERSION) != PBX_IPC_VERSION) {
        return PBX_E_IPC_VERSION;
    }
    if (pbx_le_get16(buf + VFS_H_OP) != (uint16_t)(op | PBX_IPC_REPLY_BIT)) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    if (pbx_le_get32(buf + PBX_IPC_SEQ_OFFSET) != seq) {
        return PBX_E_PEER_MISMATCH;
    }
    if (nfds != 0U || pbx_le_get16(buf + VFS_H_CAPS) != 0U) {
        return PBX_E_IPC_CAP_COUNT;
    }
    if (pbx_le_get32(buf + PBX_IPC_RESERVED_OFFSET) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    uint16_t s = pbx_le_get16(buf + VFS_H_STATUS);
    size_t n = len - PBX_IPC_HEADER_BYTES;
    if (pbx_le_get32(buf + VFS_H_BODY_LEN) != (uint32_t)n ||
        n > PBX_PEER_VFS_IO_BYTES_MAX || (s != 0U && n != 0U)) {
        return PBX_E_IPC_BODY_LEN;
    }
    *status = s;
    *body = buf + PBX_IPC_HEADER_BYTES;
    *body_len = n;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_stat_reply_decode(const uint8_t *buf, size_t len,
                                           size_t nfds, uint32_t seq,
                                           pbx_peer_vfs_stat *st,
                                           uint32_t *status)
{
    uint32_t s = 0U;
    const uint8_t *b = NULL;
    size_t n = 0U;
    pbx_err e = pbx_peer_vfs_obj_reply_check(
        buf, len, nfds, (uint16_t)PBX_PEER_OP_OBJ_STAT, seq, &s, &b, &n);
    if (e != PBX_OK) {
        return e;
    }
    if (s == 0U && n != PBX_PEER_VFS_STAT_BODY_BYTES) {
        return PBX_E_IPC_BODY_LEN;
    }
    if (s == 0U) {
        st->dev = pbx_le_get64(b);
        st->ino = pbx_le_get64(b + 8);
        st->size = pbx_le_get64(b + 16);
    }
    *status = s;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_read_reply_decode(const uint8_t *buf, size_t len,
                                           size_t nfds, uint32_t seq,
                                           size_t asked, const uint8_t **data,
                                           size_t *n, uint32_t *status)
{
    uint32_t s = 0U;
    const uint8_t *b = NULL;
    size_t got = 0U;
    pbx_err e = pbx_peer_vfs_obj_reply_check(
        buf, len, nfds, (uint16_t)PBX_PEER_OP_OBJ_READ, seq, &s, &b, &got);
    if (e != PBX_OK) {
        return e;
    }
    if (got > asked) {
        return PBX_E_IPC_BODY_LEN;
    }
    *data = b;
    *n = got;
    *status = s;
    return PBX_OK;
}

/* Counts the well-formed NUL-terminated names filling names[0..len)
 * exactly; false on an empty or malformed name or a missing NUL. */
static bool vfs_names_count(const uint8_t *names, size_t len, uint32_t *count)
{
    uint32_t c = 0U;
    size_t start = 0U;
    for (size_t i = 0; i < len; i++) {
        if (names[i] != 0U) {
            continue;
        }
        if (!pbx_peer_vfs_name_ok(names + start, i - start)) {
            return false;
        }
        c++;
        start = i + 1U;
    }
    *count = c;
    return start == len;
}

pbx_err pbx_peer_vfs_obj_list_reply_decode(const uint8_t *buf, size_t len,
                                           size_t nfds, uint32_t seq,
                                           size_t names_cap,
                                           const uint8_t **names,
                                           size_t *names_len, uint32_t *count,
                                           uint32_t *next, uint32_t *status)
{
    uint32_t s = 0U;
    const uint8_t *b = NULL;
    size_t n = 0U;
    pbx_err e = pbx_peer_vfs_obj_reply_check(
        buf, len, nfds, (uint16_t)PBX_PEER_OP_OBJ_LIST, seq, &s, &b, &n);
    if (e != PBX_OK || s != 0U) {
        if (e == PBX_OK) {
            *status = s;
        }
        return e;
    }
    if (n < PBX_PEER_VFS_LIST_HEAD_BYTES ||
        n - PBX_PEER_VFS_LIST_HEAD_BYTES > names_cap) {
        return PBX_E_IPC_BODY_LEN;
    }
    uint32_t c = 0U;
    const uint8_t *p = b + PBX_PEER_VFS_LIST_HEAD_BYTES;
    size_t plen = n - PBX_PEER_VFS_LIST_HEAD_BYTES;
    if (!vfs_names_count(p, plen, &c) || c != pbx_le_get32(b + 4)) {
        return PBX_E_IPC_BOUND;
    }
    *names = p;
    *names_len = plen;
    *count = c;
    *next = pbx_le_get32(b);
    *status = 0U;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_write_reply_decode(const uint8_t *buf, size_t len,
                                            size_t nfds, uint32_t seq,
                                            size_t sent, size_t *put,
                                            uint32_t *status)
{
    uint32_t s = 0U;
    const uint8_t *b = NULL;
    size_t n = 0U;
    pbx_err e = pbx_peer_vfs_obj_reply_check(
        buf, len, nfds, (uint16_t)PBX_PEER_OP_OBJ_WRITE, seq, &s, &b, &n);
    if (e != PBX_OK) {
        return e;
    }
    if (s == 0U && (n != PBX_PEER_VFS_WRITE_REPLY_BYTES ||
                    (size_t)pbx_le_get32(b) > sent)) {
        return PBX_E_IPC_BODY_LEN;
    }
    *put = s == 0U ? (size_t)pbx_le_get32(b) : 0U;
    *status = s;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_open_encode(uint32_t seq, uint32_t mode, uint8_t *buf,
                                     size_t cap, size_t *out_len)
{
    if (!vfs_obj_call_head(PBX_PEER_OP_OBJ_OPEN, seq,
                           PBX_PEER_VFS_OPEN_BODY_BYTES, buf, cap)) {
        return PBX_E_IPC_NO_SPACE;
    }
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES, mode);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 4U, 0U);
    *out_len = PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_OPEN_BODY_BYTES;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_open_reply_encode(const pbx_peer_vfs_call *call,
                                           uint8_t *buf, size_t cap,
                                           size_t *out_len)
{
    if (call->status != 0U || call->op != PBX_PEER_OP_OBJ_OPEN) {
        return PBX_E_IPC_STATUS;
    }
    if (cap < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_NO_SPACE;
    }
    vfs_obj_header(buf, (uint16_t)(PBX_PEER_OP_OBJ_OPEN | PBX_IPC_REPLY_BIT),
                   0U, call->request, 0U, call->seq);
    pbx_le_put16(buf + VFS_H_CAPS, 1U);
    *out_len = PBX_IPC_HEADER_BYTES;
    return PBX_OK;
}

pbx_err pbx_peer_vfs_obj_open_reply_decode(const uint8_t *buf, size_t len,
                                           size_t nfds, uint32_t seq,
                                           uint32_t *status)
{
    if (len < PBX_IPC_HEADER_BYTES) {
        return PBX_E_IPC_TRUNCATED;
    }
    if (pbx_le_get32(buf + VFS_H_MAGIC) != PBX_IPC_MAGIC) {
        return PBX_E_IPC_MAGIC;
    }
    if (pbx_le_get16(buf + VFS_H_VERSION) != PBX_IPC_VERSION) {
        return PBX_E_IPC_VERSION;
    }
    if (pbx_le_get16(buf + VFS_H_OP) !=
        (uint16_t)(PBX_PEER_OP_OBJ_OPEN | PBX_IPC_REPLY_BIT)) {
        return PBX_E_IPC_OP_MISMATCH;
    }
    if (pbx_le_get32(buf + PBX_IPC_SEQ_OFFSET) != seq) {
        return PBX_E_PEER_MISMATCH;
    }
    uint16_t st = pbx_le_get16(buf + VFS_H_STATUS);
    size_t want = st == 0U ? 1U : 0U;
    if (pbx_le_get16(buf + VFS_H_CAPS) != want || nfds != want) {
        return PBX_E_IPC_CAP_COUNT;
    }
    if (pbx_le_get32(buf + PBX_IPC_RESERVED_OFFSET) != 0U) {
        return PBX_E_IPC_RESERVED;
    }
    if (len != PBX_IPC_HEADER_BYTES ||
        pbx_le_get32(buf + VFS_H_BODY_LEN) != 0U) {
        return PBX_E_IPC_BODY_LEN;
    }
    *status = st;
    return PBX_OK;
}
