/*
 * test_peers_vfsd_objects.c: the pbx-vfsd process over real socketpairs,
 * its object table and what its objects serve: RETIRE is idempotent (a
 * repeat is acknowledged exactly, even after its row was reused);
 * pipelined calls are answered in order, each reply (error replies
 * included) echoing its call's seq, also after SIGSTOP/SIGCONT. Objects
 * serve OBJ_STAT (device, inode and size of what vfsd resolved), refuse
 * every other op, a malformed call and any call after RETIRE (queued calls
 * answered before the cut), and never stall vfsd: a holder that floods
 * without reading, or shuts its writing side, costs nothing else. Object
 * ids carry vfsd's incarnation (--incarnation sets it).
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"
#include "vfsd_test.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

PBX_TEST(peers_vfs_objtab_retire_is_idempotent)
{
    static pbx_peer_objtab t;
    pbx_peer_objtab_init(&t);
    size_t row = 0;
    int prov = 0;
    PBX_REQUIRE(pbx_peer_objtab_reserve(&t, &row) == 0U);
    uint32_t g = pbx_peer_objtab_mint(&t, row, 500, 7, PBX_IPC_CLASS_FILE, 40);
    /* Never minted, or generation 0: unknown. */
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, g + 1U, 7, PBX_IPC_CLASS_FILE, &prov),
        PBX_PEER_E_UNKNOWN);
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, 0, 7, PBX_IPC_CLASS_FILE, &prov),
        PBX_PEER_E_UNKNOWN);
    /* The generation is live under another id: not this object. */
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 501, g, 7, PBX_IPC_CLASS_FILE, &prov),
        PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(t.rows[row].state, PBX_PEER_OBJ_LIVE);
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, g, 7, PBX_IPC_CLASS_FILE, &prov), 0U);
    PBX_CHECK_EQ(prov, 40);
    /* Every row taken by later objects: the retired row is reused first,
     * and a retried RETIRE of the object it held is still acknowledged,
     * exactly, with nothing to cut. */
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        size_t r = 0;
        PBX_REQUIRE(pbx_peer_objtab_reserve(&t, &r) == 0U);
        (void)pbx_peer_objtab_mint(&t, r, 1000U + i, 7, PBX_IPC_CLASS_FILE, -1);
    }
    PBX_CHECK(t.rows[row].gen != g);
    prov = 5;
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, g, 7, PBX_IPC_CLASS_FILE, &prov), 0U);
    PBX_CHECK_EQ(prov, -1);
    PBX_CHECK_EQ(pbx_peer_objtab_live(&t), PBX_PEER_VFS_OBJECTS_MAX);
    /* Generations wrap past UINT32_MAX to 1, never 0. */
    t.next_gen = UINT32_MAX;
    t.rows[0].state = PBX_PEER_OBJ_RETIRED;
    PBX_CHECK_EQ(pbx_peer_objtab_mint(&t, 0, 9, 7, PBX_IPC_CLASS_FILE, -1),
                 UINT32_MAX);
    PBX_CHECK(t.next_gen == 1U && t.wrapped);
}

/* Sends the encoded frame buf[0..n) on fd with seq (and cap unless
 * negative), without waiting for the reply. */
static void tv_send_seq(int fd, uint8_t *buf, size_t n, uint32_t seq, int cap)
{
    PBX_CHECK(pbx_peer_io_send_seq(fd, buf, n, seq, cap) == 0);
}

/* Receives the next reply on fd within 3 s; checks its op and seq;
 * returns its status. */
static uint16_t tv_reply_seq(int fd, uint16_t op, uint32_t seq, pbx_peer_msg *m)
{
    PBX_REQUIRE(tp_readable(fd, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(fd, m) == 0);
    PBX_REQUIRE(m->err == PBX_OK);
    PBX_CHECK_EQ(m->frame.op, op | PBX_IPC_REPLY_BIT);
    PBX_CHECK_EQ(m->frame.seq, seq);
    return m->frame.status;
}

/* Encodes a RETIRE of rq into buf; returns its length. */
static size_t tv_retire_frame(const pbx_ipc_retire *rq, uint8_t *buf,
                              size_t cap)
{
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    PBX_CHECK_EQ(pbx_ipc_retire_encode(id, rq, buf, cap, &n), PBX_OK);
    return n;
}

PBX_TEST(peers_vfsd_retire_idempotent_and_pipelined_in_order)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int obj = tv_found(&t, &rep, &m);
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    pbx_ipc_retire bad = rq;
    bad.scope_id++;
    /* powerboxd does not wait: DETACH, RETIRE and its retries, a wrong
     * RETIRE, and RESOLVEs go out back to back; each is answered, in
     * order, echoing its own seq. */
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_detach dq = {rep.object};
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    PBX_CHECK_EQ(pbx_ipc_detach_encode(id, &dq, buf, sizeof(buf), &n), PBX_OK);
    int alias = dup(obj);
    PBX_REQUIRE(alias >= 0);
    tv_send_seq(t.route, buf, n, 100, alias);
    (void)close(alias);
    n = tv_retire_frame(&rq, buf, sizeof(buf));
    for (uint32_t s = 101; s <= 103; s++) {
        tv_send_seq(t.route, buf, n, s, -1);
    }
    n = tv_retire_frame(&bad, buf, sizeof(buf));
    tv_send_seq(t.route, buf, n, 104, -1);
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_DETACH, 100, &m), 0U);
    for (uint32_t s = 101; s <= 103; s++) {
        /* The first cuts; every repeat gets the same exact echo. */
        PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_RETIRE, s, &m), 0U);
        pbx_ipc_retire ack;
        PBX_CHECK_EQ(pbx_ipc_retire_reply_decode(&m.frame, &ack), PBX_OK);
        PBX_CHECK(
            ack.object.id == rq.object.id && ack.object.gen == rq.object.gen &&
            ack.scope_id == rq.scope_id && ack.object_class == rq.object_class);
        PBX_CHECK(m.frame.request.index == 3U && m.frame.request.gen == 9U);
    }
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_RETIRE, 104, &m),
                 PBX_PEER_E_MISMATCH);
    PBX_CHECK(tp_hung_up(obj, 2000));
    (void)close(obj);
    /* The retired row is reused once every other row was used; a late
     * retry of the RETIRE is still acknowledged exactly. */
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        pbx_ipc_resolve_reply r2;
        int o = tv_found(&t, &r2, &m);
        (void)close(o);
    }
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 3000), base);
    tv_down(&t);
}

PBX_TEST(peers_vfsd_error_replies_echo_seq)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    /* RESOLVE with a wrong digest; RESOLVE on the route (misrouted).
     * Every answer to this process (the route's) comes on the route. */
    pbx_ipc_resolve rs;
    memset(&rs, 0, sizeof(rs));
    rs.operation = PBX_IPC_OPERATION_READ;
    rs.object_class = PBX_IPC_CLASS_FILE;
    rs.selector = (const uint8_t *)"a.txt";
    rs.selector_len = 5;
    PBX_CHECK_EQ(pbx_ipc_resolve_encode(id, &rs, buf, sizeof(buf), &n), PBX_OK);
    tv_send_seq(t.scope, buf, n, 7, -1);
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_RESOLVE, 7, &m),
                 PBX_PEER_E_DIGEST);
    tv_send_seq(t.route, buf, n, 8, -1);
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_RESOLVE, 8, &m),
                 PBX_PEER_E_ROUTE);
    /* A RESOLVE that decodes, and one whose body does not. */
    PBX_CHECK_EQ(
        pbx_sha2_digest(rs.selector, rs.selector_len, rs.selector_digest),
        PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_resolve_encode(id, &rs, buf, sizeof(buf), &n), PBX_OK);
    tv_send_seq(t.scope, buf, n, 9, -1);
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_RESOLVE, 9, &m), 0U);
    PBX_CHECK_EQ(m.nfds, 1U);
    pbx_ipc_resolve_reply found;
    PBX_CHECK_EQ(pbx_ipc_resolve_reply_decode(&m.frame, &found), PBX_OK);
    /* This vfsd's incarnation: an id under it that was never minted is
     * unknown (another incarnation's would be echoed as absent). */
    uint64_t never = (found.object.id & ~((UINT64_C(1) << 48) - 1U)) | 12345U;
    pbx_peer_io_close_all(m.fds, m.nfds);
    buf[PBX_IPC_HEADER_BYTES + 1U] = 0xFFU; /* operation out of range */
    tv_send_seq(t.scope, buf, n, 10, -1);
    PBX_CHECK(tv_reply_seq(t.route, PBX_IPC_OP_RESOLVE, 10, &m) != 0U);
    /* A frame that fails the header check still names its op and seq. */
    PBX_CHECK_EQ(pbx_ipc_resolve_encode(id, &rs, buf, sizeof(buf), &n), PBX_OK);
    buf[PBX_IPC_RESERVED_OFFSET] = 1U;
    tv_send_seq(t.scope, buf, n, 11, -1);
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_RESOLVE, 11, &m),
                 PBX_E_IPC_RESERVED);
    /* DETACH and RETIRE of an object vfsd never minted. */
    pbx_ipc_detach dq = {{never, 77}};
    PBX_CHECK_EQ(pbx_ipc_detach_encode(id, &dq, buf, sizeof(buf), &n), PBX_OK);
    int other[2];
    PBX_REQUIRE(tp_seqpair(other));
    tv_send_seq(t.route, buf, n, 12, other[0]);
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_DETACH, 12, &m),
                 PBX_PEER_E_UNKNOWN);
    pbx_peer_io_close_all(other, 2);
    pbx_ipc_retire rq = {{never, 77}, t.scope_id, PBX_IPC_CLASS_FILE};
    n = tv_retire_frame(&rq, buf, sizeof(buf));
    tv_send_seq(t.route, buf, n, 0xFFFFFFFFU, -1);
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_RETIRE, 0xFFFFFFFFU, &m),
                 PBX_PEER_E_UNKNOWN);
    tv_down(&t);
}

PBX_TEST(peers_vfsd_stalled_serves_its_backlog_in_order)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int obj = tv_found(&t, &rep, &m);
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    /* vfsd stops; RESOLVEs and the RETIRE (with retries) queue up. */
    PBX_REQUIRE(tp_stall(t.pid, true));
    pbx_ipc_resolve rs;
    memset(&rs, 0, sizeof(rs));
    rs.operation = PBX_IPC_OPERATION_READ;
    rs.object_class = PBX_IPC_CLASS_FILE;
    rs.selector = (const uint8_t *)"missing";
    rs.selector_len = 7;
    PBX_CHECK_EQ(
        pbx_sha2_digest(rs.selector, rs.selector_len, rs.selector_digest),
        PBX_OK);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    PBX_CHECK_EQ(pbx_ipc_resolve_encode(id, &rs, buf, sizeof(buf), &n), PBX_OK);
    for (uint32_t s = 1; s <= 8; s++) {
        tv_send_seq(t.scope, buf, n, s, -1);
    }
    n = tv_retire_frame(&rq, buf, sizeof(buf));
    for (uint32_t s = 20; s <= 22; s++) {
        tv_send_seq(t.route, buf, n, s, -1);
    }
    PBX_CHECK(!tp_readable(t.scope, 200) && !tp_readable(t.route, 0));
    PBX_CHECK(!tp_hung_up(obj, 0));
    PBX_REQUIRE(tp_stall(t.pid, false));
    /* After SIGCONT everything is answered on the route, each
     * connection's backlog in its order (the two interleave as vfsd
     * polls them), and the object is dead. */
    uint32_t next_resolve = 1U;
    uint32_t next_retire = 20U;
    for (uint32_t k = 0; k < 11U; k++) {
        PBX_REQUIRE(tp_readable(t.route, 3000));
        PBX_REQUIRE(pbx_peer_io_recv_frame(t.route, &m) == 0);
        PBX_REQUIRE(m.err == PBX_OK);
        PBX_CHECK_EQ(m.frame.status, 0U);
        if (m.frame.op == (PBX_IPC_OP_RESOLVE | PBX_IPC_REPLY_BIT)) {
            PBX_CHECK_EQ(m.frame.seq, next_resolve++);
        } else {
            PBX_CHECK_EQ(m.frame.op, PBX_IPC_OP_RETIRE | PBX_IPC_REPLY_BIT);
            PBX_CHECK_EQ(m.frame.seq, next_retire++);
        }
    }
    PBX_CHECK(next_resolve == 9U && next_retire == 23U);
    PBX_CHECK(!tp_readable(t.scope, 0));
    PBX_CHECK(tp_hung_up(obj, 2000));
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    tv_down(&t);
}

/* Sends an OBJ_STAT with seq on object obj (no wait). */
static void tv_stat_send(int obj, uint32_t seq)
{
    uint8_t buf[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_encode(seq, buf, sizeof(buf), &n),
                 PBX_OK);
    PBX_CHECK(pbx_peer_io_send(obj, buf, n, -1) == 0);
}

/* Receives the next reply on object obj within 3 s as the OBJ_STAT reply
 * of seq; returns its status (the STAT in *st when zero). */
static uint32_t tv_stat_reply(int obj, uint32_t seq, pbx_peer_vfs_stat *st,
                              pbx_peer_msg *m)
{
    PBX_REQUIRE(tp_readable(obj, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(obj, m) == 0);
    uint32_t status = 0xFFFFFFFFU;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_reply_decode(m->buf, m->len, m->nfds,
                                                    seq, st, &status),
                 PBX_OK);
    return status;
}

/* Sends a header-only call of op with seq on obj and returns the status
 * of its reply, which must echo op and seq. */
static uint32_t tv_obj_op(int obj, uint16_t op, uint32_t seq, pbx_peer_msg *m)
{
    uint8_t buf[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_encode(seq, buf, sizeof(buf), &n),
                 PBX_OK);
    pbx_le_put16(buf + 6, op);
    PBX_CHECK(pbx_peer_io_send(obj, buf, n, -1) == 0);
    PBX_REQUIRE(tp_readable(obj, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(obj, m) == 0);
    PBX_REQUIRE(m->len == PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(pbx_le_get16(m->buf + 6), (uint16_t)(op | PBX_IPC_REPLY_BIT));
    PBX_CHECK_EQ(pbx_le_get32(m->buf + PBX_IPC_SEQ_OFFSET), seq);
    return pbx_le_get16(m->buf + 8);
}

PBX_TEST(peers_vfs_obj_codec)
{
    uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_PEER_VFS_STAT_BODY_BYTES + 8U];
    size_t n = 0;
    pbx_peer_vfs_call call;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_encode(77, buf, 31, &n),
                 PBX_E_IPC_NO_SPACE);
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_encode(77, buf, sizeof(buf), &n),
                 PBX_OK);
    PBX_CHECK_EQ(n, PBX_IPC_HEADER_BYTES);
    /* An exact STAT of a live object is served; of a retired one, or
     * with a descriptor, or shorter than a header, it is not. */
    PBX_CHECK(pbx_peer_vfs_obj_judge(buf, n, false, true, &call));
    PBX_CHECK(call.op == PBX_PEER_OP_OBJ_STAT && call.seq == 77U &&
              call.status == 0U);
    PBX_CHECK(pbx_peer_vfs_obj_judge(buf, n, false, false, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_OBJ_RETIRED);
    PBX_CHECK(pbx_peer_vfs_obj_judge(buf, n, true, true, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_CAP_COUNT);
    PBX_CHECK(!pbx_peer_vfs_obj_judge(buf, n - 1U, false, true, &call));
    buf[PBX_IPC_RESERVED_OFFSET] = 1U;
    PBX_CHECK(pbx_peer_vfs_obj_judge(buf, n, false, true, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_RESERVED);
    buf[PBX_IPC_RESERVED_OFFSET] = 0U;
    buf[8] = 1U; /* a status in a call */
    PBX_CHECK(pbx_peer_vfs_obj_judge(buf, n, false, true, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_STATUS);
    buf[8] = 0U;
    PBX_CHECK(pbx_peer_vfs_obj_judge(buf, n + 8U, false, true, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_IPC_BODY_LEN);
    pbx_le_put16(buf + 6, PBX_IPC_OP_RESOLVE);
    PBX_CHECK(pbx_peer_vfs_obj_judge(buf, n, false, true, &call));
    PBX_CHECK_EQ(call.status, (uint32_t)PBX_E_OBJ_NO_OP);
    pbx_le_put16(buf + 6, PBX_PEER_OP_OBJ_STAT | PBX_IPC_REPLY_BIT);
    PBX_CHECK(!pbx_peer_vfs_obj_judge(buf, n, false, true, &call));
    buf[0] ^= 1U; /* another magic: nothing to answer */
    PBX_CHECK(!pbx_peer_vfs_obj_judge(buf, n, false, true, &call));
    /* A reply round-trips; a reply to another seq, or with a
     * descriptor, does not decode. */
    memset(&call, 0, sizeof(call));
    call.op = PBX_PEER_OP_OBJ_STAT;
    call.seq = 9U;
    pbx_peer_vfs_stat st = {1, 2, 3};
    pbx_peer_vfs_stat got = {0, 0, 0};
    uint32_t status = 5;
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_reply_encode(&call, &st, buf, sizeof(buf), &n),
        PBX_OK);
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_stat_reply_decode(buf, n, 0, 9, &got, &status),
        PBX_OK);
    PBX_CHECK(status == 0U && got.dev == 1U && got.ino == 2U && got.size == 3U);
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_stat_reply_decode(buf, n, 0, 8, &got, &status),
        PBX_E_PEER_MISMATCH);
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_stat_reply_decode(buf, n, 1, 9, &got, &status),
        PBX_E_IPC_CAP_COUNT);
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_stat_reply_decode(buf, n - 1U, 0, 9, &got, &status),
        PBX_E_IPC_BODY_LEN);
    call.status = PBX_PEER_E_UNKNOWN;
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_reply_encode(&call, NULL, buf, sizeof(buf), &n),
        PBX_OK);
    PBX_CHECK_EQ(n, PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_stat_reply_decode(buf, n, 0, 9, &got, &status),
        PBX_OK);
    PBX_CHECK_EQ(status, PBX_PEER_E_UNKNOWN);
    call.op = PBX_IPC_OP_RESOLVE;
    call.status = 0U;
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_reply_encode(&call, &st, buf, sizeof(buf), &n),
        PBX_E_IPC_STATUS);
}

/* Checks that st is what stat(dir/name) reports (device and inode, and
 * the size when size is true). */
static void tv_same_file(const pbx_peer_vfs_stat *st, const char *dir,
                         const char *name, bool size)
{
    char p[600];
    struct stat sb;
    (void)snprintf(p, sizeof(p), "%s/%s", dir, name);
    PBX_REQUIRE(stat(p, &sb) == 0);
    PBX_CHECK_EQ(st->dev, (uint64_t)sb.st_dev);
    PBX_CHECK_EQ(st->ino, (uint64_t)sb.st_ino);
    PBX_CHECK(!size || st->size == (uint64_t)sb.st_size);
}

PBX_TEST(peers_vfsd_object_stat_and_refusals)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int obj = tv_found(&t, &rep, &m);
    pbx_peer_vfs_stat st;
    /* STAT names the file vfsd resolved, by device and inode. */
    tv_stat_send(obj, 5);
    PBX_CHECK_EQ(tv_stat_reply(obj, 5, &st, &m), 0U);
    tv_same_file(&st, t.dir, "pub/a.txt", true);
    PBX_CHECK_EQ(st.size, 6U);
    /* Pipelined calls are answered in order, each echoing its seq. */
    for (uint32_t s = 10; s <= 12; s++) {
        tv_stat_send(obj, s);
    }
    for (uint32_t s = 10; s <= 12; s++) {
        PBX_CHECK_EQ(tv_stat_reply(obj, s, &st, &m), 0U);
    }
    /* An op that is no object call is refused, an ipc op too. */
    PBX_CHECK_EQ(tv_obj_op(obj, 0x0F15U, 6, &m), (uint32_t)PBX_E_OBJ_NO_OP);
    PBX_CHECK_EQ(tv_obj_op(obj, PBX_IPC_OP_DECISION, 7, &m),
                 (uint32_t)PBX_E_OBJ_NO_OP);
    /* A STAT with a body, or with a descriptor (deleted), is refused. */
    uint8_t buf[PBX_IPC_HEADER_BYTES + 8U];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_encode(8, buf, sizeof(buf), &n), PBX_OK);
    memset(buf + n, 0, 8U);
    pbx_le_put32(buf + 20, 8U);
    PBX_CHECK(pbx_peer_io_send(obj, buf, n + 8U, -1) == 0);
    PBX_CHECK_EQ(tv_stat_reply(obj, 8, &st, &m), (uint32_t)PBX_E_IPC_BODY_LEN);
    int sv[2];
    PBX_REQUIRE(tp_seqpair(sv));
    PBX_CHECK(pbx_peer_io_send(obj, buf, n, sv[0]) == 0);
    (void)close(sv[0]);
    PBX_CHECK_EQ(tv_stat_reply(obj, 8, &st, &m), (uint32_t)PBX_E_IPC_CAP_COUNT);
    PBX_CHECK(tp_hung_up(sv[1], 2000));
    (void)close(sv[1]);
    /* A reply sent into the object is never answered. */
    pbx_le_put16(buf + 6, PBX_PEER_OP_OBJ_STAT | PBX_IPC_REPLY_BIT);
    PBX_CHECK(pbx_peer_io_send(obj, buf, n, -1) == 0);
    PBX_CHECK(!tp_readable(obj, 200));
    /* A directory object names the directory. */
    memset(&rep, 0, sizeof(rep));
    PBX_REQUIRE(tv_resolve(t.scope, t.route, "dir", PBX_IPC_OPERATION_LIST,
                           PBX_IPC_CLASS_DIRECTORY, &rep, &m) == PBX_OK);
    PBX_REQUIRE(m.nfds == 1U);
    int dobj = m.fds[0];
    tv_stat_send(dobj, 9);
    PBX_CHECK_EQ(tv_stat_reply(dobj, 9, &st, &m), 0U);
    tv_same_file(&st, t.dir, "pub/dir", false);
    (void)close(dobj);
    /* The READ object holds its connection's end and its open file. */
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base + 2, 2000), base + 2);
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    tv_down(&t);
}

PBX_TEST(peers_vfsd_object_refused_after_retire)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int obj = tv_found(&t, &rep, &m);
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    /* vfsd stopped: a STAT is queued on the object, then the RETIRE. */
    PBX_REQUIRE(tp_stall(t.pid, true));
    tv_stat_send(obj, 21);
    uint8_t buf[128];
    size_t n = tv_retire_frame(&rq, buf, sizeof(buf));
    tv_send_seq(t.route, buf, n, 30, -1);
    PBX_REQUIRE(tp_stall(t.pid, false));
    PBX_CHECK_EQ(tv_reply_seq(t.route, PBX_IPC_OP_RETIRE, 30, &m), 0U);
    /* The STAT served after the RETIRE gets an error status, then the
     * object's connection ends: a call after it cannot even be sent. */
    pbx_peer_vfs_stat st;
    PBX_CHECK_EQ(tv_stat_reply(obj, 21, &st, &m), (uint32_t)PBX_E_OBJ_RETIRED);
    PBX_CHECK(tp_hung_up(obj, 2000));
    PBX_CHECK_EQ(pbx_peer_io_recv_frame(obj, &m), 1);
    uint8_t call[PBX_IPC_HEADER_BYTES];
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_encode(22, call, sizeof(call), &n),
                 PBX_OK);
    PBX_CHECK_EQ(pbx_peer_io_send(obj, call, n, -1), -1);
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    tv_down(&t);
}

/* The CPU time pid used so far, in clock ticks (user + system). */
static long tv_cpu_ticks(pid_t pid)
{
    char p[64];
    char text[1024];
    (void)snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
    if (tp_read_file(p, text, sizeof(text)) <= 0) {
        return -1;
    }
    char *s = strrchr(text, ')');
    long ticks = 0;
    char *save = NULL;
    /* After "pid (comm)" come state (field 3) ... utime (14), stime (15). */
    char *tok = s != NULL ? strtok_r(s + 1, " ", &save) : NULL;
    for (int field = 3; tok != NULL && field <= 15; field++) {
        if (field >= 14) {
            char *end = NULL;
            long v = strtol(tok, &end, 10);
            if (end == tok || *end != '\0') {
                return -1;
            }
            ticks += v;
        }
        tok = strtok_r(NULL, " ", &save);
    }
    return tok != NULL ? ticks : -1;
}

PBX_TEST(peers_vfsd_object_flood_and_shutdown_never_stall)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int obj = tv_found(&t, &rep, &m);
    /* A holder that sends STATs and never reads a reply: vfsd's replies
     * fill its end and are dropped, and vfsd keeps serving the scope. */
    uint8_t buf[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_encode(1, buf, sizeof(buf), &n), PBX_OK);
    size_t sent = 0;
    for (int i = 0; i < 4000; i++) {
        if (send(obj, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)n) {
            sent++;
        } else {
            tp_sleep_ms(1);
        }
    }
    PBX_CHECK(sent > 1000U);
    pbx_ipc_resolve_reply r2;
    memset(&r2, 0, sizeof(r2));
    PBX_CHECK_EQ(tv_resolve(t.scope, t.route, "missing", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &r2, &m),
                 PBX_OK);
    PBX_CHECK_EQ(r2.result, PBX_IPC_RESOLVE_NOT_FOUND);
    /* The holder shuts its writing side: no call can come any more, and
     * vfsd does not spin on the end of its stream. */
    PBX_REQUIRE(shutdown(obj, SHUT_WR) == 0);
    tp_sleep_ms(200);
    long before = tv_cpu_ticks(t.pid);
    tp_sleep_ms(500);
    long after = tv_cpu_ticks(t.pid);
    PBX_CHECK(before >= 0 && after >= 0 && after - before < 10);
    /* Still live: the RETIRE cuts it, and vfsd frees what it held. */
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    tv_down(&t);
}

PBX_TEST(peers_vfsd_object_ids_carry_the_incarnation_and_others_are_absent)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int obj = tv_found(&t, &rep, &m);
    uint64_t inc = rep.object.id >> 48;
    /* The minting incarnation: nonzero, in the top 16 bits. */
    PBX_CHECK(inc != 0U);
    /* RETIRE and DETACH of another incarnation's object (the same id and
     * gen under any other top bits): echoed exactly, nothing cut. */
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    rq.object.id ^= UINT64_C(1) << 63;
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    pbx_ipc_retire echo;
    PBX_CHECK_EQ(pbx_ipc_retire_reply_decode(&m.frame, &echo), PBX_OK);
    PBX_CHECK(
        echo.object.id == rq.object.id && echo.object.gen == rq.object.gen &&
        echo.scope_id == rq.scope_id && echo.object_class == rq.object_class);
    PBX_CHECK(!tp_hung_up(obj, 100));
    pbx_ipc_object old = rq.object;
    int alias = dup(obj);
    PBX_REQUIRE(alias >= 0);
    PBX_CHECK_EQ(tv_detach(t.route, old, alias, &m), 0U);
    (void)close(alias);
    PBX_CHECK(!tp_hung_up(obj, 100));
    /* Of this incarnation but never minted: refused as before. */
    rq.object = rep.object;
    rq.object.id += 1U;
    PBX_CHECK(tv_retire(t.route, &rq, &m) != 0U);
    PBX_CHECK(!tp_hung_up(obj, 100));
    /* The object's own RETIRE still cuts it. */
    rq.object = rep.object;
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    PBX_CHECK(tp_hung_up(obj, 2000));
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 1000), base);
    tv_down(&t);
}

PBX_TEST(peers_vfsd_incarnation_option_sets_the_top_bits)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up_inc(&t, "7");
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int obj = tv_found(&t, &rep, &m);
    /* --incarnation 7: every id minted carries 7 in its top 16 bits. */
    PBX_CHECK_EQ(rep.object.id >> 48, UINT64_C(7));
    /* A RETIRE of incarnation 8's object (the next one a supervisor would
     * pass) is echoed as absent, exactly, and cuts nothing. */
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    rq.object.id = (UINT64_C(8) << 48) | (rep.object.id & VFSD_TEST_LOCAL);
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    pbx_ipc_retire echo;
    PBX_CHECK_EQ(pbx_ipc_retire_reply_decode(&m.frame, &echo), PBX_OK);
    PBX_CHECK(echo.object.id == rq.object.id &&
              echo.object.gen == rq.object.gen && echo.scope_id == rq.scope_id);
    PBX_CHECK(!tp_hung_up(obj, 100));
    /* Its own RETIRE still cuts it. */
    rq.object = rep.object;
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    PBX_CHECK(tp_hung_up(obj, 2000));
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 1000), base);
    tv_down(&t);
}

/* Runs pbx-vfsd --root DIR --incarnation value with stderr to the file
 * out; returns its exit status (5 s). */
static int tv_cli_incarnation(const char *dir, const char *value,
                              const char *out)
{
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) {
            _exit(126);
        }
        char path[512];
        const char *bin = getenv("PBX_PEERS_BIN");
        (void)snprintf(path, sizeof(path), "%s/pbx-vfsd",
                       bin != NULL ? bin : "build/bin");
        const char *argv[] = {"pbx-vfsd",      "--root", dir,
                              "--incarnation", value,    NULL};
        execv(path, (char *const *)(void *)argv);
        _exit(127);
    }
    return tp_wait_exit(pid, 5000);
}

PBX_TEST(peers_vfsd_incarnation_usage_errors)
{
    const char *d = tp_tmpdir();
    char out[600];
    char text[1024];
    (void)snprintf(out, sizeof(out), "%s/out", d);
    /* 0 (no incarnation), 65536 (beyond 16 bits) and junk: exit 2 with
     * one line naming the option and the value. */
    static const char *const bad[] = {"0", "65536", "7x", "", "-1"};
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        PBX_CHECK_EQ(tv_cli_incarnation(d, bad[i], out), 2);
        char want[64];
        (void)snprintf(want, sizeof(want), "--incarnation '%s'", bad[i]);
        PBX_CHECK(tp_read_file(out, text, sizeof(text)) > 0 &&
                  strstr(text, want) != NULL);
        char *nl = strchr(text, '\n');
        PBX_CHECK(nl != NULL && nl[1] == '\0');
    }
}
