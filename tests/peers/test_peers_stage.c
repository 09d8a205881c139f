/*
 * test_peers_stage.c: install mode on the host (docs/HOST.md, "Install
 * mode on the host"). The stage wire's codec; procd's table staging real
 * processes by pid with fresh generations; and pbx-procd over its stage
 * socket: a process stages itself, an INSTALL for it is delivered at its
 * slot over the stage connection, a STAGE naming another pid is refused,
 * and a stage ends with its connection.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_proc.h"
#include "../../peers/lib/pbx_peer_stage.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

PBX_TEST(peers_stage_codec_round_trips_and_refuses)
{
    uint8_t buf[PBX_PEER_STAGE_FRAME_MAX + 8U];
    size_t n = 0;
    pbx_peer_stage_frame f;
    PBX_CHECK_EQ(pbx_peer_stage_encode(0, 1, buf, sizeof(buf), &n),
                 PBX_E_IPC_BOUND);
    PBX_REQUIRE(pbx_peer_stage_encode(4242, 7, buf, sizeof(buf), &n) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 0, &f), PBX_OK);
    PBX_CHECK(f.op == PBX_PEER_OP_STAGE && f.pid == 4242U && f.seq == 7U);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 1, &f), PBX_E_IPC_CAP_COUNT);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n - 1U, 0, &f), PBX_E_IPC_BODY_LEN);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, 10, 0, &f), PBX_E_IPC_TRUNCATED);
    pbx_le_put64(buf + PBX_IPC_HEADER_BYTES, 0);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 0, &f), PBX_E_IPC_BOUND);
    /* Replies: a generation, or a status with no body. */
    PBX_CHECK_EQ(pbx_peer_stage_reply_encode(0, 0, 1, buf, sizeof(buf), &n),
                 PBX_E_IPC_GENERATION);
    PBX_REQUIRE(pbx_peer_stage_reply_encode(0, 9, 1, buf, sizeof(buf), &n) ==
                PBX_OK);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 0, &f), PBX_OK);
    PBX_CHECK(f.op == (PBX_PEER_OP_STAGE | PBX_IPC_REPLY_BIT) && f.gen == 9U);
    PBX_REQUIRE(pbx_peer_stage_reply_encode(PBX_PEER_E_NOT_YOURS, 0, 1, buf,
                                            sizeof(buf), &n) == PBX_OK);
    PBX_CHECK_EQ(n, PBX_IPC_HEADER_BYTES);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 0, &f), PBX_OK);
    PBX_CHECK_EQ(f.status, PBX_PEER_E_NOT_YOURS);
    /* DELIVER: one descriptor exactly, a nonzero grant generation. */
    pbx_peer_deliver d = {5, {3, 0}, PBX_IPC_OPERATION_READ};
    PBX_CHECK_EQ(pbx_peer_deliver_encode(&d, 2, buf, sizeof(buf), &n),
                 PBX_E_IPC_GENERATION);
    d.grant.gen = 4;
    PBX_REQUIRE(pbx_peer_deliver_encode(&d, 2, buf, sizeof(buf), &n) == PBX_OK);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 0, &f), PBX_E_IPC_CAP_COUNT);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 1, &f), PBX_OK);
    PBX_CHECK(f.op == PBX_PEER_OP_DELIVER && f.deliver.slot == 5U &&
              f.deliver.grant.index == 3U && f.deliver.grant.gen == 4U &&
              f.deliver.operation == PBX_IPC_OPERATION_READ);
    pbx_le_put16(buf + PBX_IPC_HEADER_BYTES + 14U, 1);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 1, &f), PBX_E_IPC_RESERVED);
    /* An unknown op, a DELIVER in reply form. */
    pbx_le_put16(buf + 6, PBX_PEER_OP_DELIVER | PBX_IPC_REPLY_BIT);
    PBX_CHECK_EQ(pbx_peer_stage_decode(buf, n, 1, &f), PBX_E_IPC_UNKNOWN_OP);
}

PBX_TEST(peers_proc_stages_real_processes_by_pid_and_generation)
{
    static pbx_peer_proctab t;
    pbx_peer_proctab_init(&t);
    /* A simulated stage (--stage 42:5): registrations never reuse its
     * generation. */
    PBX_REQUIRE(pbx_peer_proctab_stage(&t, 42, 5) == 0U);
    uint32_t g = 0;
    /* Only process P stages P, and pid 0 is no process. */
    PBX_CHECK_EQ(pbx_peer_proctab_register(&t, 100, 101, 30, &g),
                 PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(pbx_peer_proctab_register(&t, 0, 0, 30, &g),
                 PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(t.staged_count, 1U);
    PBX_REQUIRE(pbx_peer_proctab_register(&t, 100, 100, 30, &g) == 0U);
    PBX_CHECK(g > 5U);
    uint32_t g1 = g;
    pbx_ipc_target tg = {100, g1, 5};
    PBX_CHECK_EQ(pbx_peer_proctab_conn(&t, &tg), 30);
    pbx_ipc_target sim = {42, 5, 5};
    PBX_CHECK_EQ(pbx_peer_proctab_conn(&t, &sim), -1);
    /* A second registration of a registered pid is refused. */
    PBX_CHECK_EQ(pbx_peer_proctab_register(&t, 100, 100, 31, &g),
                 PBX_PEER_E_CONFLICT);
    /* INSTALL is judged against the registered generation. */
    pbx_ipc_install rq;
    memset(&rq, 0, sizeof(rq));
    rq.target = tg;
    rq.grant = (pbx_ipc_id){1, 1};
    size_t row = 0;
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &rq, &row), 0U);
    rq.target.process_gen = g1 + 1U;
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &rq, &row),
                 PBX_PEER_E_MISMATCH);
    /* The stage ends with its connection: UNKNOWN from then on; the
     * connection of the simulated stage is no connection. */
    uint64_t pid = 0;
    PBX_CHECK(!pbx_peer_proctab_unstage(&t, -1, &pid));
    PBX_CHECK(!pbx_peer_proctab_unstage(&t, 31, &pid));
    PBX_REQUIRE(pbx_peer_proctab_unstage(&t, 30, &pid));
    PBX_CHECK_EQ(pid, 100U);
    rq.target.process_gen = g1;
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &rq, &row),
                 PBX_PEER_E_UNKNOWN);
    PBX_CHECK_EQ(pbx_peer_proctab_conn(&t, &tg), -1);
    /* The same pid again (a later process) gets a fresh generation, so a
     * target naming the old one is refused. */
    PBX_REQUIRE(pbx_peer_proctab_register(&t, 100, 100, 32, &g) == 0U);
    PBX_CHECK(g != g1 && g != 0U);
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &rq, &row),
                 PBX_PEER_E_MISMATCH);
    /* A pid with a live install is not restaged until it is revoked. */
    rq.target.process_gen = g;
    PBX_REQUIRE(pbx_peer_proctab_install_check(&t, &rq, &row) == 0U);
    pbx_peer_proctab_install_apply(&t, row, &rq, 50, 51);
    PBX_REQUIRE(pbx_peer_proctab_unstage(&t, 32, &pid));
    PBX_CHECK_EQ(pbx_peer_proctab_register(&t, 100, 100, 33, &g),
                 PBX_PEER_E_CONFLICT);
    /* The table bounds registrations. */
    for (uint64_t p = 200; p < 200U + PBX_PEER_PROC_STAGED_MAX; p++) {
        (void)pbx_peer_proctab_register(&t, p, p, (int)p, &g);
    }
    PBX_CHECK_EQ(t.staged_count, PBX_PEER_PROC_STAGED_MAX);
    PBX_CHECK_EQ(pbx_peer_proctab_register(&t, 300, 300, 300, &g),
                 PBX_PEER_E_BUSY);
}

/* Sends STAGE naming pid on fd and waits for its reply; returns its
 * status and the generation in *gen. */
static uint16_t tst_stage(int fd, uint64_t pid, uint32_t *gen)
{
    static pbx_peer_msg m;
    uint8_t buf[PBX_PEER_STAGE_FRAME_MAX];
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_stage_encode(pid, 3, buf, sizeof(buf), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send_fds(fd, buf, n, NULL, 0, 0) == 0);
    PBX_REQUIRE(tp_readable(fd, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_raw(fd, &m, 0) == 0);
    pbx_peer_stage_frame f;
    PBX_REQUIRE(pbx_peer_stage_decode(m.buf, m.len, m.nfds, &f) == PBX_OK);
    PBX_CHECK(f.op == (PBX_PEER_OP_STAGE | PBX_IPC_REPLY_BIT) && f.seq == 3U);
    *gen = f.gen;
    return f.status;
}

/* Sends INSTALL of a fresh object into (pid, gen, slot) for grant gi.1
 * on route; returns the reply's status, the object's other end in *prov,
 * the object's inode in *ino and (status 0) the handle in *h. */
static uint16_t tst_install(int route, uint64_t pid, uint32_t gen,
                            uint32_t slot, uint32_t gi, int *prov,
                            uint64_t *ino, int *h)
{
    static pbx_peer_msg m;
    pbx_ipc_install rq;
    memset(&rq, 0, sizeof(rq));
    rq.target = (pbx_ipc_target){pid, gen, slot};
    rq.grant = (pbx_ipc_id){gi, 1};
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.lifetime = PBX_IPC_LIFETIME_JOB;
    int o[2];
    PBX_REQUIRE(tp_seqpair(o));
    *ino = pbx_peer_io_inode(o[0]);
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {5, 6};
    PBX_REQUIRE(pbx_ipc_install_encode(id, &rq, buf, sizeof(buf), &n) ==
                PBX_OK);
    PBX_REQUIRE(pbx_peer_io_call(route, buf, n, o[0], &m, 3000) == 0);
    (void)close(o[0]);
    *prov = o[1];
    PBX_REQUIRE(m.err == PBX_OK);
    if (m.frame.status == 0U && m.nfds == 1U) {
        *h = m.fds[0];
    }
    return m.frame.status;
}

/* Takes one DELIVER from the stage connection fd: returns its object
 * (-1 when none came within 2 s) and its body in *d. */
static int tst_delivered(int fd, pbx_peer_deliver *d)
{
    static pbx_peer_msg m;
    if (!tp_readable(fd, 2000) || pbx_peer_io_recv_raw(fd, &m, 0) != 0) {
        return -1;
    }
    pbx_peer_stage_frame f;
    if (pbx_peer_stage_decode(m.buf, m.len, m.nfds, &f) != PBX_OK ||
        f.op != PBX_PEER_OP_DELIVER) {
        pbx_peer_io_close_all(m.fds, m.nfds);
        return -1;
    }
    *d = f.deliver;
    return m.fds[0];
}

PBX_TEST(peers_procd_stages_and_delivers_at_the_slot)
{
    const char *dir = tp_tmpdir();
    char sock[512];
    char rarg[16];
    (void)snprintf(sock, sizeof(sock), "%s/stage.sock", dir);
    int rp[2];
    PBX_REQUIRE(tp_seqpair(rp));
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--stage-sock", sock, "--route-fd", rarg, NULL};
    pid_t procd = tp_spawn("procd", args, &rp[1], 1, -1);
    (void)close(rp[1]);
    PBX_REQUIRE(procd > 0);
    uint64_t me = (uint64_t)getpid();
    /* A STAGE naming another process is refused; this process then
     * stages itself and gets a nonzero generation. */
    int other = pbx_peer_io_connect(sock, SOCK_SEQPACKET);
    PBX_REQUIRE(other >= 0);
    uint32_t gen = 0;
    PBX_CHECK_EQ(tst_stage(other, me + 1U, &gen), PBX_PEER_E_NOT_YOURS);
    PBX_CHECK_EQ(tst_stage(other, (uint64_t)procd, &gen), PBX_PEER_E_NOT_YOURS);
    int conn = pbx_peer_io_connect(sock, SOCK_SEQPACKET);
    PBX_REQUIRE(conn >= 0);
    PBX_REQUIRE(tst_stage(conn, me, &gen) == 0U);
    PBX_CHECK(gen != 0U);
    /* The same process on another connection: already staged. */
    uint32_t g2 = 0;
    PBX_CHECK_EQ(tst_stage(other, me, &g2), PBX_PEER_E_CONFLICT);
    /* INSTALL into slot 5 of (me, gen): the object comes over the stage
     * connection with its slot and grant, before INSTALL's reply. */
    int prov = -1;
    int h = -1;
    uint64_t ino = 0;
    PBX_REQUIRE(tst_install(rp[0], me, gen, 5, 1, &prov, &ino, &h) == 0U);
    pbx_peer_deliver d;
    int obj = tst_delivered(conn, &d);
    PBX_REQUIRE(obj >= 0);
    PBX_CHECK(d.slot == 5U && d.grant.index == 1U && d.grant.gen == 1U &&
              d.operation == PBX_IPC_OPERATION_READ);
    PBX_CHECK_EQ(pbx_peer_io_inode(obj), ino);
    /* Another generation of this pid is refused. */
    int p2 = -1;
    int h2 = -1;
    PBX_CHECK_EQ(tst_install(rp[0], me, gen + 1U, 6, 2, &p2, &ino, &h2),
                 PBX_PEER_E_MISMATCH);
    (void)close(p2);
    /* Revocation drops procd's copy; the delivered copy alone keeps the
     * object (vfsd's RETIRE is what cuts it, docs/HOST.md). */
    (void)close(h);
    tp_sleep_ms(100);
    PBX_CHECK(!tp_hung_up(prov, 100));
    (void)close(obj);
    PBX_CHECK(tp_hung_up(prov, 2000));
    (void)close(prov);
    /* The stage ends with its connection: INSTALL for it is UNKNOWN. */
    (void)close(conn);
    uint16_t st = 0;
    for (int i = 0; i < 50; i++) {
        st = tst_install(rp[0], me, gen, 7, 3 + (uint32_t)i, &p2, &ino, &h2);
        (void)close(p2);
        if (st != 0U) {
            break;
        }
        (void)close(h2);
        tp_sleep_ms(20);
    }
    PBX_CHECK_EQ(st, PBX_PEER_E_UNKNOWN);
    (void)close(other);
    (void)close(rp[0]);
    (void)tp_stop(procd);
}
