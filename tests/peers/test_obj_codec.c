/*
 * test_obj_codec.c: the object wire (peers/lib/pbx_peer_vfs.h) on tables
 * of cases, without sockets: which call an object of each grant serves
 * and the exact refusal of every other, the length and range rules, every
 * call and reply round-tripped, and every one of them cut at every length
 * refused (never read past its end, never taken for a shorter message).
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../runner/pbx_test.h"

#include <string.h>

/* One grant-rule case: a well-formed call op on an object granted
 * (operation, class) is answered status. */
typedef struct obj_rule_case {
    uint16_t op;
    uint16_t operation;
    uint16_t cls;
    uint32_t status;
} obj_rule_case;

/* Encodes a well-formed call of op (seq 7) into buf; returns its length. */
static size_t oc_call(uint16_t op, uint8_t *buf, size_t cap)
{
    static const uint8_t data[5] = {'h', 'e', 'l', 'l', 'o'};
    size_t n = 0;
    pbx_err e = PBX_E_IPC_NO_SPACE;
    if (op == PBX_PEER_OP_OBJ_STAT) {
        e = pbx_peer_vfs_obj_stat_encode(7, buf, cap, &n);
    } else if (op == PBX_PEER_OP_OBJ_READ) {
        e = pbx_peer_vfs_obj_read_encode(7, 3, 100, buf, cap, &n);
    } else if (op == PBX_PEER_OP_OBJ_LIST) {
        e = pbx_peer_vfs_obj_list_encode(7, 2, 512, buf, cap, &n);
    } else if (op == PBX_PEER_OP_OBJ_WRITE) {
        e = pbx_peer_vfs_obj_write_encode(7, 4, data, sizeof(data), buf, cap,
                                          &n);
    }
    PBX_CHECK_EQ(e, PBX_OK);
    return n;
}

PBX_TEST(obj_grant_rules_table)
{
    enum {
        R = PBX_IPC_OPERATION_READ,
        W = PBX_IPC_OPERATION_WRITE,
        L = PBX_IPC_OPERATION_LIST,
        X = PBX_IPC_OPERATION_EXECUTE,
        F = PBX_IPC_CLASS_FILE,
        D = PBX_IPC_CLASS_DIRECTORY,
        V = PBX_IPC_CLASS_DEVICE,
        E = PBX_IPC_CLASS_DIRECTORY_ENTRY
    };
    const uint16_t st = PBX_PEER_OP_OBJ_STAT;
    const uint16_t rd = PBX_PEER_OP_OBJ_READ;
    const uint16_t ls = PBX_PEER_OP_OBJ_LIST;
    const uint16_t wr = PBX_PEER_OP_OBJ_WRITE;
    const obj_rule_case cases[] = {
        /* STAT on every object. */
        {st, R, F, 0U},
        {st, W, F, 0U},
        {st, L, D, 0U},
        {st, X, F, 0U},
        {st, 5U, E, 0U},
        {st, R, V, 0U},
        /* READ: a READ or WRITE grant on a file only (a write grant
         * reads its own file). */
        {rd, R, F, 0U},
        {rd, W, F, 0U},
        {rd, X, F, PBX_E_OBJ_NOT_GRANTED},
        {rd, R, D, PBX_E_OBJ_IS_DIR},
        {rd, L, D, PBX_E_OBJ_IS_DIR},
        {rd, R, V, PBX_E_OBJ_KIND},
        {rd, 5U, E, PBX_E_OBJ_KIND},
        /* LIST: a LIST grant on a directory only. */
        {ls, L, D, 0U},
        {ls, R, D, PBX_E_OBJ_NOT_GRANTED},
        {ls, R, F, PBX_E_OBJ_NOT_DIR},
        {ls, W, F, PBX_E_OBJ_NOT_DIR},
        {ls, R, V, PBX_E_OBJ_NOT_DIR},
        /* WRITE: a WRITE grant on a file only. */
        {wr, W, F, 0U},
        {wr, R, F, PBX_E_OBJ_READ_ONLY},
        {wr, X, F, PBX_E_OBJ_READ_ONLY},
        {wr, L, D, PBX_E_OBJ_IS_DIR},
        {wr, W, V, PBX_E_OBJ_KIND},
    };
    uint8_t buf[PBX_PEER_VFS_CALL_BYTES_MAX];
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        const obj_rule_case *c = &cases[i];
        size_t n = oc_call(c->op, buf, sizeof(buf));
        pbx_peer_vfs_grant g = {c->operation, c->cls};
        pbx_peer_vfs_call call;
        PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &g, &call));
        if (call.status != c->status) {
            pbx_test_failf(__FILE__, __LINE__, "case %zu: status 0x%x", i,
                           call.status);
        }
        PBX_CHECK_EQ(call.op, c->op);
        PBX_CHECK_EQ(call.seq, 7U);
        /* A retired object refuses every call the same way. */
        PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, NULL, &call));
        PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_OBJ_RETIRED);
    }
    /* An op that is no object call. */
    size_t n = oc_call(PBX_PEER_OP_OBJ_STAT, buf, sizeof(buf));
    pbx_le_put16(buf + 6, 0x0F15U);
    pbx_peer_vfs_grant g = {R, F};
    pbx_peer_vfs_call call;
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &g, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_OBJ_NO_OP);
}

PBX_TEST(obj_open_modes_table)
{
    pbx_peer_vfs_grant g = {PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE};
    PBX_CHECK_EQ(pbx_peer_vfs_open_for(g), PBX_PEER_VFS_OPEN_READ);
    g.operation = PBX_IPC_OPERATION_WRITE;
    PBX_CHECK_EQ(pbx_peer_vfs_open_for(g), PBX_PEER_VFS_OPEN_WRITE);
    g.operation = PBX_IPC_OPERATION_EXECUTE;
    PBX_CHECK_EQ(pbx_peer_vfs_open_for(g), PBX_PEER_VFS_OPEN_PATH);
    g = (pbx_peer_vfs_grant){PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY};
    PBX_CHECK_EQ(pbx_peer_vfs_open_for(g), PBX_PEER_VFS_OPEN_LIST);
    g.operation = PBX_IPC_OPERATION_READ;
    PBX_CHECK_EQ(pbx_peer_vfs_open_for(g), PBX_PEER_VFS_OPEN_PATH);
    g = (pbx_peer_vfs_grant){PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_DEVICE};
    PBX_CHECK_EQ(pbx_peer_vfs_open_for(g), PBX_PEER_VFS_OPEN_PATH);
    g = (pbx_peer_vfs_grant){PBX_IPC_OPERATION_WRITE, PBX_IPC_CLASS_ENDPOINT};
    PBX_CHECK_EQ(pbx_peer_vfs_open_for(g), PBX_PEER_VFS_OPEN_PATH);
}

PBX_TEST(obj_calls_round_trip_and_lengths)
{
    uint8_t buf[PBX_PEER_VFS_CALL_BYTES_MAX + 8U];
    static uint8_t big[PBX_PEER_VFS_IO_BYTES_MAX + 1U];
    pbx_peer_vfs_grant rg = {PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE};
    pbx_peer_vfs_grant wg = {PBX_IPC_OPERATION_WRITE, PBX_IPC_CLASS_FILE};
    pbx_peer_vfs_grant lg = {PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY};
    pbx_peer_vfs_call call;
    size_t n = 0;
    /* READ carries offset and length; at most the I/O bound. */
    PBX_CHECK_EQ(pbx_peer_vfs_obj_read_encode(1, 0x0102030405060708ULL,
                                              PBX_PEER_VFS_IO_BYTES_MAX, buf,
                                              sizeof(buf), &n),
                 PBX_OK);
    PBX_CHECK_EQ(n, PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_READ_BODY_BYTES);
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &rg, &call));
    PBX_CHECK(call.status == 0U && call.offset == 0x0102030405060708ULL &&
              call.length == PBX_PEER_VFS_IO_BYTES_MAX);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 8, PBX_PEER_VFS_IO_BYTES_MAX + 1);
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &rg, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_OBJ_LENGTH);
    /* READ's reserved word must be zero. */
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 8, 1U);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 12, 1U);
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &rg, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_RESERVED);
    /* LIST: cookie and cap; cap between one name and a full page. */
    const uint32_t caps[] = {
        0U, PBX_PEER_VFS_NAME_BYTES_MAX - 1U, PBX_PEER_VFS_NAME_BYTES_MAX,
        PBX_PEER_VFS_LIST_NAMES_MAX, PBX_PEER_VFS_LIST_NAMES_MAX + 1U};
    const uint32_t want[] = {PBX_E_OBJ_LENGTH, PBX_E_OBJ_LENGTH, 0U, 0U,
                             PBX_E_OBJ_LENGTH};
    for (size_t i = 0; i < PBX_ARRAY_LEN(caps); i++) {
        PBX_CHECK_EQ(
            pbx_peer_vfs_obj_list_encode(2, 9U, caps[i], buf, sizeof(buf), &n),
            PBX_OK);
        PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &lg, &call));
        PBX_CHECK_EQ(call.status, want[i]);
        PBX_CHECK(call.status != 0U || call.cookie == 9U);
    }
    /* WRITE carries its bytes, borrowed from the buffer; the length field
     * must match them; at most the I/O bound fits the encoder. */
    memset(big, 'x', sizeof(big));
    PBX_CHECK_EQ(pbx_peer_vfs_obj_write_encode(3, 5, big, sizeof(big), buf,
                                               sizeof(buf), &n),
                 PBX_E_IPC_NO_SPACE);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_write_encode(3, 5, big,
                                               PBX_PEER_VFS_IO_BYTES_MAX, buf,
                                               sizeof(buf), &n),
                 PBX_OK);
    PBX_CHECK_EQ(n, PBX_PEER_VFS_CALL_BYTES_MAX);
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &wg, &call));
    PBX_CHECK(call.status == 0U && call.offset == 5U &&
              call.length == PBX_PEER_VFS_IO_BYTES_MAX &&
              call.data == buf + PBX_IPC_HEADER_BYTES + 16U);
    pbx_le_put32(buf + PBX_IPC_HEADER_BYTES + 8, 7U);
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, false, &wg, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_BODY_LEN);
    /* A call with a descriptor is refused whatever it is. */
    n = oc_call(PBX_PEER_OP_OBJ_READ, buf, sizeof(buf));
    PBX_CHECK(pbx_peer_vfs_obj_call_judge(buf, n, true, &rg, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_CAP_COUNT);
}

PBX_TEST(obj_calls_cut_at_every_length_refused)
{
    const uint16_t ops[] = {PBX_PEER_OP_OBJ_STAT, PBX_PEER_OP_OBJ_READ,
                            PBX_PEER_OP_OBJ_LIST, PBX_PEER_OP_OBJ_WRITE};
    const pbx_peer_vfs_grant grants[] = {
        {PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE},
        {PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE},
        {PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY},
        {PBX_IPC_OPERATION_WRITE, PBX_IPC_CLASS_FILE}};
    uint8_t buf[PBX_PEER_VFS_CALL_BYTES_MAX];
    for (size_t k = 0; k < PBX_ARRAY_LEN(ops); k++) {
        size_t n = oc_call(ops[k], buf, sizeof(buf));
        pbx_peer_vfs_call call;
        PBX_CHECK(
            pbx_peer_vfs_obj_call_judge(buf, n, false, &grants[k], &call));
        PBX_CHECK_EQ(call.status, 0U);
        for (size_t len = 0; len < n; len++) {
            bool answered = pbx_peer_vfs_obj_call_judge(
                len == 0U ? NULL : buf, len, false, &grants[k], &call);
            /* Shorter than a header: nothing to answer; else refused. */
            PBX_CHECK(answered == (len >= PBX_IPC_HEADER_BYTES));
            PBX_CHECK(!answered || call.status == (uint32_t)PBX_E_IPC_BODY_LEN);
        }
    }
}

/* Builds the reply to call op (seq 7) with body b[0..blen) in out. */
static size_t oc_reply(uint16_t op, const uint8_t *b, size_t blen, uint8_t *out,
                       size_t cap)
{
    pbx_peer_vfs_call call;
    memset(&call, 0, sizeof(call));
    call.op = op;
    call.seq = 7U;
    size_t n = 0;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_reply_head(&call, blen, out, cap, &n),
                 PBX_OK);
    memcpy(out + PBX_IPC_HEADER_BYTES, b, blen);
    return n;
}

PBX_TEST(obj_replies_round_trip_and_cut)
{
    uint8_t out[PBX_PEER_VFS_REPLY_BYTES_MAX];
    const uint8_t *data = NULL;
    size_t got = 0;
    uint32_t status = 9U;
    /* READ: the bytes, at most as many as asked. */
    size_t n = oc_reply(PBX_PEER_OP_OBJ_READ, (const uint8_t *)"abc", 3, out,
                        sizeof(out));
    PBX_CHECK_EQ(pbx_peer_vfs_obj_read_reply_decode(out, n, 0, 7, 3, &data,
                                                    &got, &status),
                 PBX_OK);
    PBX_CHECK(got == 3U && status == 0U && memcmp(data, "abc", 3) == 0);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_read_reply_decode(out, n, 0, 7, 2, &data,
                                                    &got, &status),
                 PBX_E_IPC_BODY_LEN);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_read_reply_decode(out, n, 0, 8, 3, &data,
                                                    &got, &status),
                 PBX_E_PEER_MISMATCH);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_read_reply_decode(out, n, 1, 7, 3, &data,
                                                    &got, &status),
                 PBX_E_IPC_CAP_COUNT);
    for (size_t len = 0; len < n; len++) {
        /* Every cut is refused (the body length no longer matches). */
        PBX_CHECK(pbx_peer_vfs_obj_read_reply_decode(out, len, 0, 7, 3, &data,
                                                     &got, &status) != PBX_OK);
    }
    /* WRITE: the count written, at most what was sent. */
    uint8_t w[4];
    pbx_le_put32(w, 5U);
    n = oc_reply(PBX_PEER_OP_OBJ_WRITE, w, 4, out, sizeof(out));
    size_t put = 0;
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_write_reply_decode(out, n, 0, 7, 5, &put, &status),
        PBX_OK);
    PBX_CHECK_EQ(put, 5U);
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_write_reply_decode(out, n, 0, 7, 4, &put, &status),
        PBX_E_IPC_BODY_LEN);
    for (size_t len = 0; len < n; len++) {
        PBX_CHECK(pbx_peer_vfs_obj_write_reply_decode(out, len, 0, 7, 5, &put,
                                                      &status) != PBX_OK);
    }
    /* An error reply has no body and decodes to its status for every op. */
    pbx_peer_vfs_call call;
    memset(&call, 0, sizeof(call));
    call.op = PBX_PEER_OP_OBJ_READ;
    call.seq = 7U;
    call.status = PBX_E_OBJ_RANGE;
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_reply_encode(&call, NULL, out, sizeof(out), &n),
        PBX_OK);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_read_reply_decode(out, n, 0, 7, 3, &data,
                                                    &got, &status),
                 PBX_OK);
    PBX_CHECK_EQ(status, (uint32_t)PBX_E_OBJ_RANGE);
    /* A reply of another op does not decode as this one's. */
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_write_reply_decode(out, n, 0, 7, 3, &put, &status),
        PBX_E_IPC_OP_MISMATCH);
}

/* Decodes out[0..n) as a LIST reply to seq 7 with cap 512. */
static pbx_err oc_list(const uint8_t *out, size_t n, uint32_t *count,
                       uint32_t *next)
{
    const uint8_t *names = NULL;
    size_t len = 0;
    uint32_t status = 0;
    return pbx_peer_vfs_obj_list_reply_decode(out, n, 0, 7, 512, &names, &len,
                                              count, next, &status);
}

PBX_TEST(obj_list_pages_and_names)
{
    uint8_t names[PBX_PEER_VFS_NAME_BYTES_MAX + 8U];
    pbx_peer_vfs_page p = {names, 12U, 0U, 0U};
    PBX_CHECK(pbx_peer_vfs_page_add(&p, (const uint8_t *)"abc", 3));
    PBX_CHECK(pbx_peer_vfs_page_add(&p, (const uint8_t *)"de", 2));
    /* 7 bytes used: a 5-byte name needs 6 more, one too many. */
    PBX_CHECK(!pbx_peer_vfs_page_add(&p, (const uint8_t *)"fghij", 5));
    PBX_CHECK(pbx_peer_vfs_page_add(&p, (const uint8_t *)"fghi", 4));
    PBX_CHECK(p.used == 12U && p.count == 3U);
    PBX_CHECK(memcmp(names, "abc\0de\0fghi\0", 12) == 0);
    /* Names that are never listed. */
    PBX_CHECK(!pbx_peer_vfs_name_ok((const uint8_t *)"", 0));
    PBX_CHECK(!pbx_peer_vfs_name_ok((const uint8_t *)".", 1));
    PBX_CHECK(!pbx_peer_vfs_name_ok((const uint8_t *)"..", 2));
    PBX_CHECK(!pbx_peer_vfs_name_ok((const uint8_t *)"a/b", 3));
    PBX_CHECK(!pbx_peer_vfs_name_ok((const uint8_t *)"a\0b", 3));
    PBX_CHECK(pbx_peer_vfs_name_ok((const uint8_t *)"...", 3));
    memset(names, 'n', sizeof(names));
    PBX_CHECK(pbx_peer_vfs_name_ok(names, PBX_PEER_VFS_NAME_BYTES_MAX - 1U));
    PBX_CHECK(!pbx_peer_vfs_name_ok(names, PBX_PEER_VFS_NAME_BYTES_MAX));
    /* A reply: next cookie, count, the names; round trip and cuts. */
    uint8_t body[32];
    pbx_le_put32(body, 4U);
    pbx_le_put32(body + 4, 2U);
    static const uint8_t two_names[5] = {'x', 0, 'y', 'z', 0};
    memcpy(body + 8, two_names, sizeof(two_names));
    uint8_t out[PBX_PEER_VFS_REPLY_BYTES_MAX];
    size_t n = oc_reply(PBX_PEER_OP_OBJ_LIST, body, 13, out, sizeof(out));
    uint32_t count = 0;
    uint32_t next = 0;
    PBX_CHECK_EQ(oc_list(out, n, &count, &next), PBX_OK);
    PBX_CHECK(count == 2U && next == 4U);
    for (size_t len = 0; len < n; len++) {
        PBX_CHECK(oc_list(out, len, &count, &next) != PBX_OK);
    }
    /* A wrong count, an empty name, "..", a name without its NUL. */
    const char *bad[] = {"x\0yz\0", "x\0\0", "x\0..\0", "x\0yz!"};
    const uint32_t counts[] = {3U, 2U, 2U, 2U};
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        pbx_le_put32(body + 4, counts[i]);
        size_t blen = i == 1U ? 3U : 5U;
        memcpy(body + 8, bad[i], blen);
        n = oc_reply(PBX_PEER_OP_OBJ_LIST, body, 8U + blen, out, sizeof(out));
        PBX_CHECK_EQ(oc_list(out, n, &count, &next), PBX_E_IPC_BOUND);
    }
}

PBX_TEST(obj_range_table)
{
    pbx_peer_vfs_call c;
    memset(&c, 0, sizeof(c));
    c.op = PBX_PEER_OP_OBJ_READ;
    c.length = 10U;
    c.offset = 6U;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_range(&c, 6U), 0U); /* at the end: empty */
    c.offset = 7U;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_range(&c, 6U), (uint32_t)PBX_E_OBJ_RANGE);
    c.op = PBX_PEER_OP_OBJ_WRITE;
    c.offset = 6U;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_range(&c, 6U), 0U); /* appends */
    c.offset = UINT64_MAX - 5U;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_range(&c, UINT64_MAX),
                 (uint32_t)PBX_E_OBJ_RANGE);
    c.op = PBX_PEER_OP_OBJ_LIST;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_range(&c, 0U), 0U);
}
