/*
 * test_app.c: the app library (peers/app/pbx_app.h). The runtime
 * directory's resolution (--dir, $PBX_DIR, $XDG_RUNTIME_DIR, /tmp); and a
 * whole pbx_app_open in a child process against a fake launchd played by
 * the test over a real socketpair: the BEGIN is runtime-reply with the
 * class the operation implies and the claims of the job's environment,
 * the scope in
 * $PBX_SCOPE_FD rides COMMIT, one DECISION call, the object descriptor
 * handed back, and pbx_app_consume sends the CONSUME of exactly that grant
 * and closes the object (its peer end reads end of file); a wait that
 * passes wait_ms sends the exact CANCEL and reports PBX_APP_E_TIMEOUT; a
 * NOT_FOUND decision is PBX_APP_E_NOT_FOUND with no object; outside a job
 * PBX_APP_E_NO_JOB.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/app/pbx_app.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pbx_peer_msg g_am;
static uint8_t g_aout[PBX_IPC_FRAME_BYTES_MAX];

/* Receives one call of op from the library (within 5 s). */
static void ta_call(int fd, uint16_t op)
{
    PBX_REQUIRE(tp_readable(fd, 5000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(fd, &g_am) == 0);
    PBX_REQUIRE(g_am.err == PBX_OK);
    PBX_CHECK_EQ(g_am.frame.op, op);
    PBX_CHECK(g_am.frame.seq != 0U);
}

/* Answers the call of seq with an empty reply of op for id. */
static void ta_empty(int fd, uint16_t op, pbx_ipc_id id, uint32_t seq)
{
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_empty_encode(op | PBX_IPC_REPLY_BIT, id, g_aout,
                                      sizeof(g_aout), &n),
                 PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(fd, g_aout, n, seq, -1) == 0);
}

/* Plays launchd for BEGIN, the one SELECTOR chunk of "f.txt" and COMMIT
 * (which must carry one descriptor); the BEGIN goes to *b. */
static void ta_serve_commit(int pub, pbx_ipc_id id, pbx_ipc_begin *b)
{
    ta_call(pub, PBX_IPC_OP_BEGIN);
    PBX_REQUIRE(pbx_ipc_begin_decode(&g_am.frame, b) == PBX_OK);
    pbx_ipc_begin_reply br = {70};
    size_t n = 0;
    PBX_CHECK_EQ(
        pbx_ipc_begin_reply_encode(id, &br, g_aout, sizeof(g_aout), &n),
        PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(pub, g_aout, n, g_am.frame.seq, -1) == 0);
    ta_call(pub, PBX_IPC_OP_SELECTOR);
    pbx_ipc_selector c;
    PBX_REQUIRE(pbx_ipc_selector_decode(&g_am.frame, &c) == PBX_OK);
    PBX_CHECK(c.offset == 0U && c.len == 5U &&
              memcmp(c.bytes, "f.txt", 5U) == 0);
    ta_empty(pub, PBX_IPC_OP_SELECTOR, id, g_am.frame.seq);
    ta_call(pub, PBX_IPC_OP_COMMIT);
    PBX_CHECK_EQ(g_am.nfds, 1U);
    pbx_peer_io_close_all(g_am.fds, g_am.nfds);
    ta_empty(pub, PBX_IPC_OP_COMMIT, id, g_am.frame.seq);
}

/* Answers the DECISION call of seq with outcome for id (APPROVED:
 * runtime-reply grant 9.1 with descriptor alias). */
static void ta_decision(int fd, pbx_ipc_id id, uint8_t outcome, uint32_t seq,
                        int alias)
{
    pbx_ipc_decision d;
    memset(&d, 0, sizeof(d));
    d.outcome = outcome;
    if (outcome == PBX_IPC_OUTCOME_APPROVED) {
        d.mode = PBX_IPC_MODE_RUNTIME_REPLY;
        d.grant.index = 9;
        d.grant.gen = 1;
    }
    size_t n = 0;
    PBX_CHECK_EQ(
        pbx_ipc_decision_reply_encode(id, &d, g_aout, sizeof(g_aout), &n),
        PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(fd, g_aout, n, seq, alias) == 0);
}

/* In a child: the environment of job 11:1 (entry bin/cat, session 7,
 * realm 3) on connection fd with scope fd scope, then pbx_app_open of READ
 * "f.txt" bounded by wait_ms; consumes an approved grant. Exits 10 + the open
 * status, or 0 when approved, the object came and the consume succeeded; 99
 * when the grant it reports is not 9.1 or the consume failed. */
static pid_t ta_child(int fd, int scope, uint64_t wait_ms)
{
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid != 0) {
        return pid;
    }
    char v[16];
    (void)snprintf(v, sizeof(v), "%d", fd);
    (void)setenv("PBX_LAUNCHD_FD", v, 1);
    (void)snprintf(v, sizeof(v), "%d", scope);
    (void)setenv("PBX_SCOPE_FD", v, 1);
    /* The claims launchd sets for job 11:1 entry bin/cat. */
    (void)setenv("PBX_JOB", "11:1", 1);
    (void)setenv("PBX_ENTRY", "bin/cat", 1);
    (void)setenv("PBX_SESSION", "7", 1);
    (void)setenv("PBX_REALM", "3", 1);
    (void)unsetenv("PBX_TARGET");
    pbx_app_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.selector = "f.txt";
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.wait_ms = wait_ms;
    pbx_app_grant g;
    int st = pbx_app_open(&rq, &g);
    if (st != PBX_APP_OK) {
        _exit(g.obj == -1 && g.decision_calls == 1U ? 10 + st : 98);
    }
    if (g.obj < 0 || g.grant.index != 9U || g.grant.gen != 1U) {
        _exit(99);
    }
    _exit(pbx_app_consume(&g) == PBX_APP_OK && g.obj == -1 ? 0 : 99);
}

PBX_TEST(peers_app_dir_resolution)
{
    char out[64];
    (void)setenv("PBX_DIR", "/run/a", 1);
    (void)setenv("XDG_RUNTIME_DIR", "/run/user/7", 1);
    PBX_CHECK_EQ(pbx_app_dir("/flag", out, sizeof(out)), PBX_APP_OK);
    PBX_CHECK(strcmp(out, "/flag") == 0);
    PBX_CHECK_EQ(pbx_app_dir(NULL, out, sizeof(out)), PBX_APP_OK);
    PBX_CHECK(strcmp(out, "/run/a") == 0);
    (void)setenv("PBX_DIR", "", 1);
    PBX_CHECK_EQ(pbx_app_dir("", out, sizeof(out)), PBX_APP_OK);
    PBX_CHECK(strcmp(out, "/run/user/7/powerboxd") == 0);
    (void)unsetenv("PBX_DIR");
    (void)unsetenv("XDG_RUNTIME_DIR");
    char want[64];
    (void)snprintf(want, sizeof(want), "/tmp/powerboxd-%lu",
                   (unsigned long)getuid());
    PBX_CHECK_EQ(pbx_app_dir(NULL, out, sizeof(out)), PBX_APP_OK);
    PBX_CHECK(strcmp(out, want) == 0);
    PBX_CHECK_EQ(pbx_app_dir_path("/d", "scope.sock", out, sizeof(out)),
                 PBX_APP_OK);
    PBX_CHECK(strcmp(out, "/d/scope.sock") == 0);
    /* A path that does not fit is refused and leaves "". */
    PBX_CHECK_EQ(pbx_app_dir_path("/d", "scope.sock", out, 13U),
                 PBX_APP_E_PATH);
    PBX_CHECK_EQ(out[0], '\0');
    PBX_CHECK_EQ(pbx_app_dir("/abcdef", out, 7U), PBX_APP_E_PATH);
    PBX_CHECK_EQ(out[0], '\0');
    PBX_CHECK_EQ(pbx_app_dir_path("/d", "scope.sock", out, 14U), PBX_APP_OK);
}

PBX_TEST(peers_app_open_approved_then_consumed)
{
    int pub[2];
    int scope[2];
    int obj[2];
    PBX_REQUIRE(tp_seqpair(pub) && tp_seqpair(scope) && tp_seqpair(obj));
    pid_t pid = ta_child(pub[1], scope[1], 0U);
    pbx_ipc_id id = {5, 2};
    static pbx_ipc_begin b;
    ta_serve_commit(pub[0], id, &b);
    PBX_CHECK_EQ(b.ctx.mode, PBX_IPC_MODE_RUNTIME_REPLY);
    PBX_CHECK_EQ(b.ctx.operation, PBX_IPC_OPERATION_READ);
    PBX_CHECK_EQ(b.ctx.object_class, PBX_IPC_CLASS_FILE);
    PBX_CHECK_EQ(b.ctx.lifetime, PBX_IPC_LIFETIME_ONE_SHOT);
    PBX_CHECK_EQ(b.ctx.urgency, PBX_IPC_URGENCY_ROUTINE);
    PBX_CHECK(b.ctx.job_id == 11U && b.ctx.job_gen == 1U);
    PBX_CHECK(b.ctx.session == 7U && b.ctx.realm == 3U);
    PBX_CHECK(b.ctx.entry.len == 7U &&
              memcmp(b.ctx.entry.bytes, "bin/cat", 7U) == 0);
    ta_call(pub[0], PBX_IPC_OP_DECISION);
    PBX_CHECK(g_am.frame.request.index == 5U && g_am.frame.request.gen == 2U);
    ta_decision(pub[0], id, PBX_IPC_OUTCOME_APPROVED, g_am.frame.seq, obj[1]);
    (void)close(obj[1]);
    ta_call(pub[0], PBX_IPC_OP_CONSUME);
    pbx_ipc_consume cs;
    PBX_REQUIRE(pbx_ipc_consume_decode(&g_am.frame, &cs) == PBX_OK);
    PBX_CHECK(cs.grant.index == 9U && cs.grant.gen == 1U);
    ta_empty(pub[0], PBX_IPC_OP_CONSUME, g_am.frame.request, g_am.frame.seq);
    PBX_CHECK_EQ(tp_wait_exit(pid, 5000), 0);
    /* Every copy of the object is closed: its peer end sees the end. */
    PBX_CHECK(tp_hung_up(obj[0], 2000));
    (void)close(obj[0]);
    (void)close(pub[0]);
    (void)close(pub[1]);
    (void)close(scope[0]);
    (void)close(scope[1]);
}

PBX_TEST(peers_app_open_wait_expiry_and_not_found)
{
    int pub[2];
    int scope[2];
    PBX_REQUIRE(tp_seqpair(pub) && tp_seqpair(scope));
    pid_t pid = ta_child(pub[1], scope[1], 200U);
    pbx_ipc_id id = {6, 1};
    static pbx_ipc_begin b;
    ta_serve_commit(pub[0], id, &b);
    ta_call(pub[0], PBX_IPC_OP_DECISION);
    uint32_t decision_seq = g_am.frame.seq;
    /* Left unanswered: after wait_ms the exact CANCEL comes beside it. */
    ta_call(pub[0], PBX_IPC_OP_CANCEL);
    PBX_CHECK(g_am.frame.request.index == 6U && g_am.frame.request.gen == 1U);
    PBX_CHECK(g_am.frame.seq != decision_seq);
    ta_empty(pub[0], PBX_IPC_OP_CANCEL, id, g_am.frame.seq);
    ta_decision(pub[0], id, PBX_IPC_OUTCOME_CANCELLED, decision_seq, -1);
    PBX_CHECK_EQ(tp_wait_exit(pid, 5000), 10 + PBX_APP_E_TIMEOUT);
    /* NOT_FOUND: no object, its own status. */
    pid = ta_child(pub[1], scope[1], 0U);
    ta_serve_commit(pub[0], id, &b);
    ta_call(pub[0], PBX_IPC_OP_DECISION);
    ta_decision(pub[0], id, PBX_IPC_OUTCOME_NOT_FOUND, g_am.frame.seq, -1);
    PBX_CHECK_EQ(tp_wait_exit(pid, 5000), 10 + PBX_APP_E_NOT_FOUND);
    (void)close(pub[0]);
    (void)close(pub[1]);
    (void)close(scope[0]);
    (void)close(scope[1]);
}

PBX_TEST(peers_app_open_outside_a_job)
{
    (void)unsetenv("PBX_LAUNCHD_FD");
    pbx_app_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.selector = "f.txt";
    rq.operation = PBX_IPC_OPERATION_READ;
    pbx_app_grant g;
    PBX_CHECK_EQ(pbx_app_open(&rq, &g), PBX_APP_E_NO_JOB);
    PBX_CHECK_EQ(g.obj, -1);
    rq.selector = "";
    PBX_CHECK_EQ(pbx_app_open(&rq, &g), PBX_APP_E_ARG);
    rq.selector = "f.txt";
    rq.operation = 77;
    PBX_CHECK_EQ(pbx_app_open(&rq, &g), PBX_APP_E_ARG);
    PBX_CHECK_EQ(pbx_app_consume(&g), PBX_APP_E_STATE);
    PBX_CHECK_EQ(pbx_app_cancel(&g), PBX_APP_E_STATE);
    /* Every status has its own text; others are named unknown. */
    for (int a = PBX_APP_OK; a <= PBX_APP_E_STATE; a++) {
        PBX_CHECK(strcmp(pbx_app_strerror(a), "unknown status") != 0);
        for (int b = a + 1; b <= PBX_APP_E_STATE; b++) {
            PBX_CHECK(strcmp(pbx_app_strerror(a), pbx_app_strerror(b)) != 0);
        }
    }
    PBX_CHECK(strcmp(pbx_app_strerror(PBX_APP_E_STATE + 1), "unknown status") ==
              0);
    PBX_CHECK(strcmp(pbx_app_strerror(-1), "unknown status") == 0);
}
