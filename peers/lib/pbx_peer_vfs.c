/*
 * pbx_peer_vfs.c: vfsd's selector confinement, RESOLVE verdicts and object
 * table. Pure: no I/O.
 */
#include "peers/lib/pbx_peer_vfs.h"

#include "ipc/pbx_ipc.h"
#include "peers/lib/pbx_peer.h"

/* Judges one component [start, end) of sel. */
static pbx_peer_sel vfs_component(const uint8_t *sel, size_t start, size_t end)
{
    size_t n = end - start;
    if (n == 0U) {
        return PBX_PEER_SEL_EMPTY_COMPONENT;
    }
    if (n == 1U && sel[start] == '.') {
        return PBX_PEER_SEL_DOT;
    }
    if (n == 2U && sel[start] == '.' && sel[start + 1U] == '.') {
        return PBX_PEER_SEL_DOTDOT;
    }
    return PBX_PEER_SEL_OK;
}

pbx_peer_sel pbx_peer_vfs_selector_check(const uint8_t *sel, size_t len,
                                         char *out, size_t out_len)
{
    if (len == 0U) {
        return PBX_PEER_SEL_EMPTY;
    }
    if (sel[0] == '/') {
        return PBX_PEER_SEL_ABSOLUTE;
    }
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && sel[i] == '\0') {
            return PBX_PEER_SEL_NUL;
        }
        if (i == len || sel[i] == '/') {
            pbx_peer_sel c = vfs_component(sel, start, i);
            if (c != PBX_PEER_SEL_OK) {
                return c;
            }
            start = i + 1U;
        }
    }
    if (len >= out_len) {
        return PBX_PEER_SEL_TOO_LONG;
    }
    for (size_t i = 0; i < len; i++) {
        out[i] = (char)sel[i];
    }
    out[len] = '\0';
    return PBX_PEER_SEL_OK;
}

const char *pbx_peer_sel_text(pbx_peer_sel s)
{
    switch (s) {
    case PBX_PEER_SEL_OK:
        return "clean relative path";
    case PBX_PEER_SEL_EMPTY:
        return "empty selector";
    case PBX_PEER_SEL_ABSOLUTE:
        return "absolute path";
    case PBX_PEER_SEL_DOTDOT:
        return "'..' component";
    case PBX_PEER_SEL_DOT:
        return "'.' component";
    case PBX_PEER_SEL_EMPTY_COMPONENT:
        return "empty component";
    case PBX_PEER_SEL_NUL:
        return "NUL byte";
    case PBX_PEER_SEL_TOO_LONG:
        return "too long";
    default:
        return "unknown selector verdict";
    }
}

bool pbx_peer_vfs_class_allows(uint16_t operation, uint16_t object_class)
{
    bool data = object_class == PBX_IPC_CLASS_FILE ||
                object_class == PBX_IPC_CLASS_DEVICE ||
                object_class == PBX_IPC_CLASS_ENDPOINT;
    switch (operation) {
    case PBX_IPC_OPERATION_READ:
        return data || object_class == PBX_IPC_CLASS_DIRECTORY;
    case PBX_IPC_OPERATION_WRITE:
        return data;
    case PBX_IPC_OPERATION_EXECUTE:
        return object_class == PBX_IPC_CLASS_FILE;
    case PBX_IPC_OPERATION_LIST:
        return object_class == PBX_IPC_CLASS_DIRECTORY;
    case PBX_IPC_OPERATION_ENTRY_METADATA_READ:
    case PBX_IPC_OPERATION_ENTRY_TOUCH:
        return object_class == PBX_IPC_CLASS_DIRECTORY_ENTRY;
    default:
        return false;
    }
}

bool pbx_peer_vfs_follow_final(uint16_t object_class)
{
    return object_class != PBX_IPC_CLASS_DIRECTORY_ENTRY;
}

/* The class an object of file type ft has when asked as want_class. */
static uint16_t vfs_class_of(uint16_t want_class, pbx_peer_ftype ft)
{
    if (want_class == PBX_IPC_CLASS_DIRECTORY_ENTRY) {
        return ft == PBX_PEER_FT_OTHER ? 0U : PBX_IPC_CLASS_DIRECTORY_ENTRY;
    }
    switch (ft) {
    case PBX_PEER_FT_REGULAR:
        return PBX_IPC_CLASS_FILE;
    case PBX_PEER_FT_DIRECTORY:
        return PBX_IPC_CLASS_DIRECTORY;
    case PBX_PEER_FT_DEVICE:
        return PBX_IPC_CLASS_DEVICE;
    case PBX_PEER_FT_SOCKET:
        return PBX_IPC_CLASS_ENDPOINT;
    default:
        return 0U;
    }
}

pbx_peer_vfs_verdict pbx_peer_vfs_judge(uint16_t operation, uint16_t want_class,
                                        pbx_peer_sel sel,
                                        pbx_peer_lookup lookup,
                                        pbx_peer_ftype ftype)
{
    pbx_peer_vfs_verdict v = {PBX_IPC_RESOLVE_DENIED, 0U};
    if (sel != PBX_PEER_SEL_OK ||
        !pbx_peer_vfs_class_allows(operation, want_class)) {
        return v;
    }
    if (lookup == PBX_PEER_LOOKUP_MISSING) {
        v.result = PBX_IPC_RESOLVE_NOT_FOUND;
        v.object_class = want_class;
        return v;
    }
    if (lookup != PBX_PEER_LOOKUP_OK) {
        return v;
    }
    if (vfs_class_of(want_class, ftype) != want_class) {
        return v;
    }
    v.result = PBX_IPC_RESOLVE_FOUND;
    v.object_class = want_class;
    return v;
}

void pbx_peer_objtab_init(pbx_peer_objtab *t)
{
    pbx_mem_set(t, 0, sizeof(*t));
    t->next_gen = 1U;
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        t->rows[i].provider = -1;
    }
}

uint32_t pbx_peer_objtab_reserve(const pbx_peer_objtab *t, size_t *row)
{
    size_t retired = PBX_PEER_VFS_OBJECTS_MAX;
    size_t hung = PBX_PEER_VFS_OBJECTS_MAX;
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        uint8_t st = t->rows[i].state;
        if (st == PBX_PEER_OBJ_FREE) {
            *row = i;
            return 0U;
        }
        if (st == PBX_PEER_OBJ_RETIRED && retired == PBX_PEER_VFS_OBJECTS_MAX) {
            retired = i;
        }
        if (st == PBX_PEER_OBJ_HUNG && hung == PBX_PEER_VFS_OBJECTS_MAX) {
            hung = i;
        }
    }
    /* A hung-up row may still be named by a RETIRE powerboxd has not sent
     * yet; a retired one was acknowledged already, so it goes first. */
    size_t pick = retired != PBX_PEER_VFS_OBJECTS_MAX ? retired : hung;
    if (pick == PBX_PEER_VFS_OBJECTS_MAX) {
        return PBX_PEER_E_BUSY;
    }
    *row = pick;
    return 0U;
}

uint32_t pbx_peer_objtab_mint(pbx_peer_objtab *t, size_t row, uint64_t id,
                              uint64_t scope_id, uint16_t object_class,
                              int provider)
{
    PBX_ASSERT(row < PBX_PEER_VFS_OBJECTS_MAX);
    PBX_ASSERT(t->rows[row].state != PBX_PEER_OBJ_LIVE);
    pbx_peer_obj *o = &t->rows[row];
    o->state = PBX_PEER_OBJ_LIVE;
    o->object_class = object_class;
    o->gen = t->next_gen;
    o->id = id;
    o->scope_id = scope_id;
    o->provider = provider;
    o->detached = 0U;
    /* Generations never repeat zero: wrap from UINT32_MAX to 1. */
    if (t->next_gen == UINT32_MAX) {
        t->next_gen = 1U;
        t->wrapped = true;
    } else {
        t->next_gen++;
    }
    return o->gen;
}

/* Finds the row with exactly id and gen in any non-free state. */
static bool objtab_find(const pbx_peer_objtab *t, uint64_t id, uint32_t gen,
                        size_t *row)
{
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        const pbx_peer_obj *o = &t->rows[i];
        if (o->state != PBX_PEER_OBJ_FREE && o->id == id && o->gen == gen) {
            *row = i;
            return true;
        }
    }
    return false;
}

uint32_t pbx_peer_objtab_detach_check(const pbx_peer_objtab *t, uint64_t id,
                                      uint32_t gen, uint64_t observed_id,
                                      size_t *row)
{
    size_t i = 0;
    if (gen == 0U || !objtab_find(t, id, gen, &i) ||
        t->rows[i].state != PBX_PEER_OBJ_LIVE) {
        return PBX_PEER_E_UNKNOWN;
    }
    if (observed_id != id) {
        return PBX_PEER_E_MISMATCH;
    }
    *row = i;
    return 0U;
}

/* Reports whether any non-free row holds generation gen. */
static bool objtab_gen_held(const pbx_peer_objtab *t, uint32_t gen)
{
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        if (t->rows[i].state != PBX_PEER_OBJ_FREE && t->rows[i].gen == gen) {
            return true;
        }
    }
    return false;
}

uint32_t pbx_peer_objtab_retire(pbx_peer_objtab *t, uint64_t id, uint32_t gen,
                                uint64_t scope_id, uint16_t object_class,
                                int *provider)
{
    size_t i = 0;
    if (gen == 0U) {
        return PBX_PEER_E_UNKNOWN;
    }
    if (!objtab_find(t, id, gen, &i)) {
        if (objtab_gen_held(t, gen)) {
            return PBX_PEER_E_MISMATCH;
        }
        if (!t->wrapped && gen >= t->next_gen) {
            return PBX_PEER_E_UNKNOWN;
        }
        /* Minted once, no longer in the table: its row was reused, which
         * only happens to a retired or hung-up row (or one whose FOUND was
         * never delivered), so the object is dead and a repeated RETIRE is
         * acknowledged with nothing to cut. */
        *provider = -1;
        return 0U;
    }
    pbx_peer_obj *o = &t->rows[i];
    if (o->scope_id != scope_id || o->object_class != object_class) {
        return PBX_PEER_E_MISMATCH;
    }
    if (o->state != PBX_PEER_OBJ_LIVE) {
        /* Nothing is left to cut: a repeat, or every copy hung up. */
        *provider = -1;
        o->state = PBX_PEER_OBJ_RETIRED;
        return 0U;
    }
    *provider = o->provider;
    o->provider = -1;
    o->state = PBX_PEER_OBJ_RETIRED;
    return 0U;
}

uint32_t pbx_peer_objtab_hangup(pbx_peer_objtab *t, size_t row, int *provider)
{
    if (row >= PBX_PEER_VFS_OBJECTS_MAX ||
        t->rows[row].state != PBX_PEER_OBJ_LIVE) {
        return PBX_PEER_E_UNKNOWN;
    }
    pbx_peer_obj *o = &t->rows[row];
    *provider = o->provider;
    o->provider = -1;
    o->state = PBX_PEER_OBJ_HUNG;
    return 0U;
}

size_t pbx_peer_objtab_live(const pbx_peer_objtab *t)
{
    size_t n = 0;
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        n += t->rows[i].state == PBX_PEER_OBJ_LIVE ? 1U : 0U;
    }
    return n;
}

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
    if (pbx_le_get32(buf + PBX_IPC_RESERVED_OFFSET) != 0U ||
        (!zero_tail && pbx_le_get32(b + 12) != 0U)) {
        return (uint32_t)PBX_E_IPC_RESERVED;
    }
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
        return g.operation == PBX_IPC_OPERATION_READ
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
        return g.operation == PBX_IPC_OPERATION_WRITE
                   ? 0U
                   : (uint32_t)PBX_E_OBJ_READ_ONLY;
    default:
        return 0U;
    }
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
        call->status = vfs_obj_grant_rule(op, *g);
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
