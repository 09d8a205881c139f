/*
 * fuzz_vfs_obj.c: libFuzzer harness for the codec of vfsd's object
 * connections (peers/lib/pbx_peer_vfs_obj.c): the judge of the calls a
 * sandboxed job sends on an object (pbx_peer_vfs_obj_call_judge and its
 * STAT-only form pbx_peer_vfs_obj_judge) and the checks of vfsd's replies
 * a client runs (pbx_peer_vfs_obj_reply_check and the STAT, READ, LIST,
 * WRITE and OPEN reply decoders).
 *
 * Input layout: byte 0 is the object's grant (bits 0-2 the operation,
 * bits 3-5 the class, bit 6 "extra": descriptors came with the call,
 * bit 7: the object is retired); byte 1 is the descriptor count a reply
 * came with (bits 0-2), bit 3 asks the reply decoders for another seq
 * than the frame's; bytes 2-3 (little-endian) are the bytes a READ asked,
 * a WRITE sent and a LIST page may hold; the rest is the frame.
 *
 * Every call the judge serves (status 0) re-encodes to the same bytes by
 * its encoder, obeys the grant and length rules the header documents, and
 * its reply (encoded by vfsd's encoders) passes the client's decoder;
 * every refused call's error reply decodes to its status. Every reply a
 * decoder accepts re-encodes to the same bytes and holds within its
 * bounds. Any difference aborts.
 */
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The header offset of the request identity (docs/PROTOCOL.md). */
#define FVO_REQUEST 12U

static uint8_t out[PBX_PEER_VFS_CALL_BYTES_MAX + PBX_IPC_HEADER_BYTES];
static uint8_t page_names[PBX_PEER_VFS_IO_BYTES_MAX];

/* Aborts unless out[0..len) is exactly buf[0..n). */
static void fvo_same(pbx_err e, size_t len, const uint8_t *buf, size_t n)
{
    if (e != PBX_OK || len != n || memcmp(out, buf, n) != 0) {
        abort();
    }
}

/* Aborts unless cond holds. */
static void fvo_check(bool cond)
{
    if (!cond) {
        abort();
    }
}

/* Writes call's request identity into the encoded call in out (the call
 * encoders write zero; vfsd ignores it on a call and echoes it). */
static void fvo_request(const pbx_peer_vfs_call *call)
{
    pbx_le_put32(out + FVO_REQUEST, call->request.index);
    pbx_le_put32(out + FVO_REQUEST + 4U, call->request.gen);
}

/* Re-encodes a served call by its op's encoder into out. */
static pbx_err fvo_call_encode(const pbx_peer_vfs_call *c, size_t *len)
{
    size_t cap = sizeof(out);
    switch (c->op) {
    case PBX_PEER_OP_OBJ_STAT:
        return pbx_peer_vfs_obj_stat_encode(c->seq, out, cap, len);
    case PBX_PEER_OP_OBJ_READ:
        return pbx_peer_vfs_obj_read_encode(c->seq, c->offset, c->length, out,
                                            cap, len);
    case PBX_PEER_OP_OBJ_LIST:
        return pbx_peer_vfs_obj_list_encode(c->seq, c->cookie, c->length, out,
                                            cap, len);
    case PBX_PEER_OP_OBJ_WRITE:
        return pbx_peer_vfs_obj_write_encode(c->seq, c->offset, c->data,
                                             c->length, out, cap, len);
    case PBX_PEER_OP_OBJ_OPEN:
        return pbx_peer_vfs_obj_open_encode(c->seq, c->mode, out, cap, len);
    default:
        abort();
    }
}

/* Whether the served call c obeys the grant rules of g and the length
 * bounds (pbx_peer_vfs.h, pbx_peer_vfs_obj_call_judge). */
static bool fvo_rules(const pbx_peer_vfs_call *c, pbx_peer_vfs_grant g)
{
    bool file = g.object_class == PBX_IPC_CLASS_FILE;
    bool r = g.operation == PBX_IPC_OPERATION_READ;
    bool w = g.operation == PBX_IPC_OPERATION_WRITE ||
             g.operation == PBX_IPC_OPERATION_CREATE;
    switch (c->op) {
    case PBX_PEER_OP_OBJ_STAT:
        return true;
    case PBX_PEER_OP_OBJ_READ:
        return file && (r || w) && c->length <= PBX_PEER_VFS_IO_BYTES_MAX;
    case PBX_PEER_OP_OBJ_WRITE:
        return file && w && c->length <= PBX_PEER_VFS_IO_BYTES_MAX &&
               c->data != NULL;
    case PBX_PEER_OP_OBJ_LIST:
        return g.object_class == PBX_IPC_CLASS_DIRECTORY &&
               g.operation == PBX_IPC_OPERATION_LIST &&
               c->length >= PBX_PEER_VFS_NAME_BYTES_MAX &&
               c->length <= PBX_PEER_VFS_LIST_NAMES_MAX;
    case PBX_PEER_OP_OBJ_OPEN:
        return file && c->mode >= PBX_PEER_VFS_MODE_READ &&
               c->mode <= PBX_PEER_VFS_MODE_RDWR &&
               ((r && c->mode == PBX_PEER_VFS_MODE_READ) || w);
    default:
        return false;
    }
}

/* Answers the served call c as vfsd does (a READ with its first bytes, a
 * one-name page, a whole WRITE) and checks that the client's decoder for
 * its op accepts the reply with status 0. */
static void fvo_serve(const pbx_peer_vfs_call *c)
{
    size_t len = 0;
    uint32_t st = 1U;
    const uint8_t *p = NULL;
    size_t n = 0;
    uint32_t count = 0;
    uint32_t next = 0;
    if (c->op == PBX_PEER_OP_OBJ_STAT) {
        pbx_peer_vfs_stat s = {1U, 2U, 3U};
        pbx_peer_vfs_stat back = {0U, 0U, 0U};
        fvo_check(pbx_peer_vfs_obj_reply_encode(c, &s, out, sizeof(out),
                                                &len) == PBX_OK);
        fvo_check(pbx_peer_vfs_obj_stat_reply_decode(out, len, 0U, c->seq,
                                                     &back, &st) == PBX_OK &&
                  st == 0U && memcmp(&s, &back, sizeof(s)) == 0);
    } else if (c->op == PBX_PEER_OP_OBJ_READ) {
        size_t body = c->length;
        fvo_check(pbx_peer_vfs_obj_reply_head(c, body, out, sizeof(out),
                                              &len) == PBX_OK);
        memset(out + PBX_IPC_HEADER_BYTES, 0x5A, body);
        fvo_check(pbx_peer_vfs_obj_read_reply_decode(
                      out, len, 0U, c->seq, c->length, &p, &n, &st) == PBX_OK &&
                  st == 0U && n == body);
    } else if (c->op == PBX_PEER_OP_OBJ_LIST) {
        fvo_check(pbx_peer_vfs_obj_reply_head(c, 10U, out, sizeof(out), &len) ==
                  PBX_OK);
        pbx_le_put32(out + PBX_IPC_HEADER_BYTES, 7U);
        pbx_le_put32(out + PBX_IPC_HEADER_BYTES + 4U, 1U);
        memcpy(out + PBX_IPC_HEADER_BYTES + 8U, "a", 2U);
        fvo_check(pbx_peer_vfs_obj_list_reply_decode(out, len, 0U, c->seq,
                                                     c->length, &p, &n, &count,
                                                     &next, &st) == PBX_OK &&
                  st == 0U && n == 2U && count == 1U && next == 7U);
    } else if (c->op == PBX_PEER_OP_OBJ_WRITE) {
        fvo_check(pbx_peer_vfs_obj_reply_head(c, 4U, out, sizeof(out), &len) ==
                  PBX_OK);
        pbx_le_put32(out + PBX_IPC_HEADER_BYTES, c->length);
        fvo_check(pbx_peer_vfs_obj_write_reply_decode(
                      out, len, 0U, c->seq, c->length, &n, &st) == PBX_OK &&
                  st == 0U && n == c->length);
    } else {
        fvo_check(pbx_peer_vfs_obj_open_reply_encode(c, out, sizeof(out),
                                                     &len) == PBX_OK);
        fvo_check(pbx_peer_vfs_obj_open_reply_decode(out, len, 1U, c->seq,
                                                     &st) == PBX_OK &&
                  st == 0U);
    }
}

/* Checks that the error reply to the refused call c decodes, by the
 * reply check of its op, to c's status with no body. */
static void fvo_refuse(const pbx_peer_vfs_call *c)
{
    size_t len = 0;
    uint32_t st = 0U;
    const uint8_t *body = NULL;
    size_t body_len = 1U;
    fvo_check(c->status <= 0xFFFFU);
    fvo_check(pbx_peer_vfs_obj_reply_encode(c, NULL, out, sizeof(out), &len) ==
              PBX_OK);
    fvo_check(len == PBX_IPC_HEADER_BYTES);
    fvo_check(pbx_peer_vfs_obj_reply_check(out, len, 0U, c->op, c->seq, &st,
                                           &body, &body_len) == PBX_OK &&
              st == c->status && body_len == 0U);
}

/* Whether two judged calls are the same, field by field. */
static bool fvo_call_same(const pbx_peer_vfs_call *a,
                          const pbx_peer_vfs_call *b)
{
    return a->op == b->op && a->request.index == b->request.index &&
           a->request.gen == b->request.gen && a->seq == b->seq &&
           a->status == b->status && a->offset == b->offset &&
           a->length == b->length && a->cookie == b->cookie &&
           a->data == b->data && a->mode == b->mode;
}

/* Judges buf as a call on an object granted g (NULL: retired). */
static void fvo_judge(const uint8_t *buf, size_t n, bool extra,
                      const pbx_peer_vfs_grant *g)
{
    pbx_peer_vfs_call call;
    bool answered = pbx_peer_vfs_obj_call_judge(buf, n, extra, g, &call);
    bool header = n >= PBX_IPC_HEADER_BYTES &&
                  pbx_le_get32(buf) == PBX_IPC_MAGIC &&
                  pbx_le_get16(buf + 4U) == PBX_IPC_VERSION &&
                  (pbx_le_get16(buf + 6U) & PBX_IPC_REPLY_BIT) == 0U;
    fvo_check(answered == header);
    if (!answered) {
        return;
    }
    fvo_check(g != NULL || call.status == (uint32_t)PBX_E_OBJ_RETIRED);
    /* The STAT-only form judges as a path handle of no class does. */
    pbx_peer_vfs_call plain;
    pbx_peer_vfs_call none_call;
    pbx_peer_vfs_grant none = {0U, 0U};
    fvo_check(pbx_peer_vfs_obj_judge(buf, n, extra, true, &plain) &&
              pbx_peer_vfs_obj_call_judge(buf, n, extra, &none, &none_call) &&
              fvo_call_same(&plain, &none_call));
    if (call.status != 0U) {
        fvo_refuse(&call);
        return;
    }
    fvo_check(fvo_rules(&call, *g) && !extra);
    size_t len = 0;
    pbx_err e = fvo_call_encode(&call, &len);
    fvo_request(&call);
    fvo_same(e, len, buf, n);
    fvo_serve(&call);
}

/* A reply header for re-encoding: op, the frame's request identity and
 * seq, and status st. */
static pbx_peer_vfs_call fvo_reply_call(const uint8_t *buf, uint16_t op,
                                        uint32_t seq, uint32_t st)
{
    pbx_peer_vfs_call c;
    memset(&c, 0, sizeof(c));
    c.op = op;
    c.request.index = pbx_le_get32(buf + FVO_REQUEST);
    c.request.gen = pbx_le_get32(buf + FVO_REQUEST + 4U);
    c.seq = seq;
    c.status = st;
    return c;
}

/* Re-encodes an accepted reply of op with status st and the body bytes
 * body[0..body_len) into out and compares it with buf[0..n): an error
 * reply by vfsd's error encoder, a served one by the reply head and its
 * body. */
static void fvo_reply_same(const uint8_t *buf, size_t n, uint16_t op,
                           uint32_t seq, uint32_t st, const uint8_t *body,
                           size_t body_len)
{
    pbx_peer_vfs_call c = fvo_reply_call(buf, op, seq, st);
    size_t len = 0;
    if (st != 0U) {
        fvo_same(
            pbx_peer_vfs_obj_reply_encode(&c, NULL, out, sizeof(out), &len),
            len, buf, n);
        return;
    }
    pbx_err e =
        pbx_peer_vfs_obj_reply_head(&c, body_len, out, sizeof(out), &len);
    if (e == PBX_OK && body_len != 0U) {
        memcpy(out + PBX_IPC_HEADER_BYTES, body, body_len);
    }
    fvo_same(e, len, buf, n);
}

/* Rebuilds an accepted LIST page from its names (each must be listable
 * and fit in cap) and checks it is the same bytes and count. */
static void fvo_page(const uint8_t *names, size_t len, uint32_t count,
                     size_t cap)
{
    pbx_peer_vfs_page pg = {page_names,
                            cap < sizeof(page_names) ? cap : sizeof(page_names),
                            0U, 0U};
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (names[i] == 0U) {
            fvo_check(pbx_peer_vfs_page_add(&pg, names + start, i - start));
            start = i + 1U;
        }
    }
    fvo_check(start == len && pg.used == len && pg.count == count &&
              memcmp(page_names, names, len) == 0);
}

/* Runs the STAT, READ and WRITE reply decoders on buf. */
static void fvo_replies_io(const uint8_t *buf, size_t n, size_t nfds,
                           uint32_t seq, size_t limit)
{
    pbx_peer_vfs_stat s;
    uint32_t st = 0;
    if (pbx_peer_vfs_obj_stat_reply_decode(buf, n, nfds, seq, &s, &st) ==
        PBX_OK) {
        uint8_t body[PBX_PEER_VFS_STAT_BODY_BYTES];
        pbx_le_put64(body, s.dev);
        pbx_le_put64(body + 8U, s.ino);
        pbx_le_put64(body + 16U, s.size);
        fvo_check(nfds == 0U);
        fvo_reply_same(buf, n, PBX_PEER_OP_OBJ_STAT, seq, st, body,
                       st == 0U ? sizeof(body) : 0U);
    }
    const uint8_t *p = NULL;
    size_t got = 0;
    if (pbx_peer_vfs_obj_read_reply_decode(buf, n, nfds, seq, limit, &p, &got,
                                           &st) == PBX_OK) {
        fvo_check(got <= limit && got <= PBX_PEER_VFS_IO_BYTES_MAX &&
                  (st == 0U || got == 0U));
        fvo_reply_same(buf, n, PBX_PEER_OP_OBJ_READ, seq, st, p, got);
    }
    size_t put = 0;
    if (pbx_peer_vfs_obj_write_reply_decode(buf, n, nfds, seq, limit, &put,
                                            &st) == PBX_OK) {
        uint8_t body[PBX_PEER_VFS_WRITE_REPLY_BYTES];
        pbx_le_put32(body, (uint32_t)put);
        fvo_check(put <= limit && (st == 0U || put == 0U));
        fvo_reply_same(buf, n, PBX_PEER_OP_OBJ_WRITE, seq, st, body,
                       st == 0U ? sizeof(body) : 0U);
    }
}

/* Runs the LIST and OPEN reply decoders on buf. */
static void fvo_replies_dir(const uint8_t *buf, size_t n, size_t nfds,
                            uint32_t seq, size_t limit)
{
    const uint8_t *names = NULL;
    size_t names_len = 0;
    uint32_t count = 0;
    uint32_t next = 0;
    uint32_t st = 0;
    if (pbx_peer_vfs_obj_list_reply_decode(buf, n, nfds, seq, limit, &names,
                                           &names_len, &count, &next,
                                           &st) == PBX_OK) {
        /* The page is rebuilt from what the decoder returned: the next
         * cookie, its count and names added one by one. */
        static uint8_t body[PBX_PEER_VFS_IO_BYTES_MAX];
        size_t body_len = 0;
        fvo_check(nfds == 0U);
        if (st == 0U) {
            fvo_check(names_len <= limit);
            fvo_page(names, names_len, count, limit);
            pbx_le_put32(body, next);
            pbx_le_put32(body + 4U, count);
            memcpy(body + PBX_PEER_VFS_LIST_HEAD_BYTES, page_names, names_len);
            body_len = PBX_PEER_VFS_LIST_HEAD_BYTES + names_len;
        }
        fvo_reply_same(buf, n, PBX_PEER_OP_OBJ_LIST, seq, st, body, body_len);
    }
    if (pbx_peer_vfs_obj_open_reply_decode(buf, n, nfds, seq, &st) == PBX_OK) {
        size_t len = 0;
        pbx_peer_vfs_call c =
            fvo_reply_call(buf, PBX_PEER_OP_OBJ_OPEN, seq, st);
        fvo_check(nfds == (st == 0U ? 1U : 0U));
        fvo_same(st == 0U ? pbx_peer_vfs_obj_open_reply_encode(
                                &c, out, sizeof(out), &len)
                          : pbx_peer_vfs_obj_reply_encode(&c, NULL, out,
                                                          sizeof(out), &len),
                 len, buf, n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4U) {
        return 0;
    }
    pbx_peer_vfs_grant g = {(uint16_t)(data[0] & 7U),
                            (uint16_t)((data[0] >> 3) & 7U)};
    bool extra = (data[0] & 0x40U) != 0U;
    bool retired = (data[0] & 0x80U) != 0U;
    size_t nfds = data[1] & 7U;
    size_t limit = pbx_le_get16(data + 2);
    const uint8_t *buf = data + 4;
    size_t n = size - 4U;
    fvo_judge(buf, n, extra, retired ? NULL : &g);
    uint32_t seq = 0;
    if (n >= PBX_IPC_HEADER_BYTES) {
        seq = pbx_le_get32(buf + PBX_IPC_SEQ_OFFSET);
    }
    if ((data[1] & 8U) != 0U) {
        seq++;
    }
    fvo_replies_io(buf, n, nfds, seq, limit);
    fvo_replies_dir(buf, n, nfds, seq, limit);
    return 0;
}
