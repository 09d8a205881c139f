/*
 * test_peers_procd.c: procd's install table on cases, and the pbx-procd
 * process over a real socketpair: INSTALL with the object passed as
 * SCM_RIGHTS, the MANAGE_ONLY handle in the reply, REVOKE through the
 * handle and the handle's close each dropping the installed descriptor
 * (observed as the object's provider end hanging up). procd started with
 * --attach-fd and no route: channel refusals, route adoption, and route
 * loss ending every install that came on the route.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_proc.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* An INSTALL record for process 7 gen g, slot s, grant (gi, gg). */
static pbx_ipc_install tpr_install(uint32_t g, uint32_t s, uint32_t gi,
                                   uint32_t gg)
{
    pbx_ipc_install rq;
    memset(&rq, 0, sizeof(rq));
    rq.target.process_id = 7;
    rq.target.process_gen = g;
    rq.target.slot = s;
    rq.grant.index = gi;
    rq.grant.gen = gg;
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.lifetime = PBX_IPC_LIFETIME_JOB;
    return rq;
}

PBX_TEST(peers_proc_table)
{
    static pbx_peer_proctab t;
    pbx_peer_proctab_init(&t);
    PBX_CHECK_EQ(pbx_peer_proctab_stage(&t, 7, 0), PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(pbx_peer_proctab_stage(&t, 7, 2), 0U);
    size_t row = 0;
    pbx_ipc_install rq = tpr_install(2, 40, 1, 1);
    pbx_ipc_install other = tpr_install(2, 40, 1, 1);
    other.target.process_id = 8;
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &other, &row),
                 PBX_PEER_E_UNKNOWN);
    other = tpr_install(1, 40, 1, 1);
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &other, &row),
                 PBX_PEER_E_MISMATCH);
    other = tpr_install(2, PBX_PEER_PROC_SLOT_LIMIT, 1, 1);
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &other, &row),
                 PBX_PEER_E_SLOT);
    PBX_REQUIRE(pbx_peer_proctab_install_check(&t, &rq, &row) == 0U);
    pbx_peer_proctab_install_apply(&t, row, &rq, 50, 51);
    other = tpr_install(2, 40, 2, 1);
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &other, &row),
                 PBX_PEER_E_SLOT);
    other = tpr_install(2, 41, 1, 1);
    PBX_CHECK_EQ(pbx_peer_proctab_install_check(&t, &other, &row),
                 PBX_PEER_E_CONFLICT);
    PBX_CHECK_EQ(pbx_peer_proctab_stage(&t, 7, 3), PBX_PEER_E_CONFLICT);
    PBX_REQUIRE(pbx_peer_proctab_by_handle(&t, 51, &row));
    pbx_ipc_revoke rv = {{1, 1}, 7, 2, 41};
    PBX_CHECK_EQ(pbx_peer_proctab_revoke_check(&t, row, &rv),
                 PBX_PEER_E_MISMATCH);
    rv.installed_slot = 40;
    PBX_CHECK_EQ(pbx_peer_proctab_revoke_check(&t, row, &rv), 0U);
    int o = 0;
    int h = 0;
    pbx_peer_proctab_drop(&t, row, &o, &h);
    PBX_CHECK(o == 50 && h == 51);
    PBX_CHECK_EQ(pbx_peer_proctab_live(&t), 0U);
    PBX_CHECK(!pbx_peer_proctab_by_handle(&t, 51, &row));
}

PBX_TEST(peers_proc_table_rows_remember_their_route)
{
    static pbx_peer_proctab t;
    pbx_peer_proctab_init(&t);
    PBX_REQUIRE(pbx_peer_proctab_stage(&t, 7, 2) == 0U);
    size_t row = 0;
    pbx_ipc_install rq = tpr_install(2, 40, 1, 1);
    PBX_REQUIRE(pbx_peer_proctab_install_check(&t, &rq, &row) == 0U);
    pbx_peer_proctab_install_apply_on(&t, row, &rq, 50, 51, 9);
    rq = tpr_install(2, 41, 2, 1);
    PBX_REQUIRE(pbx_peer_proctab_install_check(&t, &rq, &row) == 0U);
    pbx_peer_proctab_install_apply_on(&t, row, &rq, 52, 53, 10);
    rq = tpr_install(2, 42, 3, 1);
    PBX_REQUIRE(pbx_peer_proctab_install_check(&t, &rq, &row) == 0U);
    pbx_peer_proctab_install_apply(&t, row, &rq, 54, 55); /* no route */
    PBX_CHECK(!pbx_peer_proctab_by_route(&t, -1, &row));
    PBX_CHECK(!pbx_peer_proctab_by_route(&t, 11, &row));
    PBX_REQUIRE(pbx_peer_proctab_by_route(&t, 9, &row));
    PBX_CHECK(t.rows[row].grant.index == 1U && t.rows[row].object == 50);
    int o = 0;
    int h = 0;
    pbx_peer_proctab_drop(&t, row, &o, &h);
    PBX_CHECK(!pbx_peer_proctab_by_route(&t, 9, &row));
    PBX_REQUIRE(pbx_peer_proctab_by_route(&t, 10, &row));
    PBX_CHECK(t.rows[row].grant.index == 2U && t.rows[row].handle == 53);
    PBX_CHECK_EQ(pbx_peer_proctab_live(&t), 2U);
}

/* Sends INSTALL of a fresh object; *provider keeps its other end. */
static uint32_t tpr_call_install(int route, const pbx_ipc_install *rq,
                                 int *provider, int *handle, pbx_peer_msg *m)
{
    int o[2];
    PBX_REQUIRE(tp_seqpair(o));
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {5, 6};
    PBX_CHECK_EQ(pbx_ipc_install_encode(id, rq, buf, sizeof(buf), &n), PBX_OK);
    PBX_REQUIRE(pbx_peer_io_call(route, buf, n, o[0], m, 3000) == 0);
    (void)close(o[0]);
    *provider = o[1];
    PBX_REQUIRE(m->err == PBX_OK);
    if (m->frame.status != 0U) {
        return m->frame.status;
    }
    pbx_ipc_install_reply rep;
    PBX_CHECK_EQ(pbx_ipc_install_reply_decode(&m->frame, &rep), PBX_OK);
    PBX_CHECK_EQ(rep.handle_kind, PBX_IPC_HANDLE_MANAGE_ONLY);
    PBX_CHECK_EQ(rep.installed_slot, rq->target.slot);
    PBX_CHECK(rep.grant.index == rq->grant.index &&
              rep.grant.gen == rq->grant.gen);
    PBX_REQUIRE(m->nfds == 1U);
    *handle = m->fds[0];
    return 0U;
}

/* Reads what procd's query socket at path writes before it closes the
 * connection (at most cap-1 bytes, NUL-terminated); returns the length,
 * or -1 when it could not connect or procd did not close within 3 s. */
static long tpr_query(const char *path, char *text, size_t cap)
{
    int fd = pbx_peer_io_connect(path, SOCK_STREAM);
    if (fd < 0) {
        return -1;
    }
    size_t n = 0;
    long r = -1;
    text[0] = '\0';
    for (int i = 0; i < 1000 && tp_readable(fd, 3000); i++) {
        ssize_t got = read(fd, text + n, cap - 1U - n);
        if (got <= 0) {
            r = got == 0 ? (long)n : -1;
            break;
        }
        n += (size_t)got;
        text[n] = '\0';
    }
    (void)close(fd);
    return r;
}

/* Whether directory d holds exactly the one entry name. */
static bool tpr_only_entry(const char *d, const char *name)
{
    DIR *dir = opendir(d);
    if (dir == NULL) {
        return false;
    }
    int others = 0;
    int found = 0;
    for (struct dirent *e = readdir(dir); e != NULL; e = readdir(dir)) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
            continue;
        }
        found += strcmp(e->d_name, name) == 0 ? 1 : 0;
        others += strcmp(e->d_name, name) != 0 ? 1 : 0;
    }
    (void)closedir(dir);
    return found == 1 && others == 0;
}

PBX_TEST(peers_procd_install_revoke)
{
    static pbx_peer_msg m;
    const char *d = tp_tmpdir();
    char state[512];
    char rarg[16];
    (void)snprintf(state, sizeof(state), "%s/procd.sock", d);
    int rp[2];
    PBX_REQUIRE(tp_seqpair(rp));
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--stage", "7:2", "--route-fd", rarg,
                          "--query", state, NULL};
    pid_t pid = tp_spawn("procd", args, &rp[1], 1, -1);
    (void)close(rp[1]);
    PBX_REQUIRE(pid > 0);
    int base = tp_fd_count(pid);
    int prov = -1;
    int h = -1;
    pbx_ipc_install rq = tpr_install(1, 40, 1, 1);
    PBX_CHECK_EQ(tpr_call_install(rp[0], &rq, &prov, &h, &m),
                 PBX_PEER_E_MISMATCH);
    PBX_CHECK(tp_hung_up(prov, 2000)); /* refused: the object was deleted */
    (void)close(prov);
    rq = tpr_install(2, 40, 1, 1);
    PBX_REQUIRE(tpr_call_install(rp[0], &rq, &prov, &h, &m) == 0U);
    /* The query socket lists the row (mode 0600); nothing else was
     * written in procd's directory. */
    char text[512];
    struct stat qs;
    PBX_CHECK(stat(state, &qs) == 0 && (qs.st_mode & 0777U) == 0600U);
    PBX_CHECK(tpr_query(state, text, sizeof(text)) > 0);
    PBX_CHECK(strncmp(text, "process 7 gen 2 slot 40 grant 1.1 object ", 41) ==
              0);
    PBX_CHECK(strchr(text, '\n') == text + strlen(text) - 1U);
    PBX_CHECK(tpr_only_entry(d, "procd.sock"));
    PBX_CHECK(!tp_hung_up(prov, 100));
    /* A REVOKE that does not name the install exactly is refused. */
    pbx_ipc_revoke rv = {{1, 1}, 7, 2, 41};
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {5, 6};
    PBX_CHECK_EQ(pbx_ipc_revoke_encode(id, &rv, buf, sizeof(buf), &n), PBX_OK);
    PBX_REQUIRE(pbx_peer_io_call(h, buf, n, -1, &m, 3000) == 0);
    PBX_CHECK_EQ(m.frame.status, PBX_PEER_E_MISMATCH);
    PBX_CHECK(!tp_hung_up(prov, 100));
    rv.installed_slot = 40;
    PBX_CHECK_EQ(pbx_ipc_revoke_encode(id, &rv, buf, sizeof(buf), &n), PBX_OK);
    PBX_REQUIRE(pbx_peer_io_call(h, buf, n, -1, &m, 3000) == 0);
    pbx_ipc_revoke_ack ack;
    PBX_CHECK_EQ(pbx_ipc_revoke_reply_decode(&m.frame, &ack), PBX_OK);
    PBX_CHECK(tp_hung_up(prov, 2000));
    (void)close(prov);
    (void)close(h);
    /* Second grant: the handle's close alone revokes it. */
    rq = tpr_install(2, 41, 2, 1);
    PBX_REQUIRE(tpr_call_install(rp[0], &rq, &prov, &h, &m) == 0U);
    PBX_CHECK(!tp_hung_up(prov, 100));
    (void)close(h);
    PBX_CHECK(tp_hung_up(prov, 2000));
    (void)close(prov);
    /* A handle closed and, at once, an INSTALL into the same slot: the
     * close was the slot's revocation, so the slot is free (never SLOT),
     * though the close is read within the grace that waits for a route's
     * hang-up. */
    rq = tpr_install(2, 41, 3, 1);
    PBX_REQUIRE(tpr_call_install(rp[0], &rq, &prov, &h, &m) == 0U);
    (void)close(h);
    int prov2 = -1;
    rq = tpr_install(2, 41, 4, 1);
    PBX_CHECK_EQ(tpr_call_install(rp[0], &rq, &prov2, &h, &m), 0U);
    PBX_CHECK(tp_hung_up(prov, 2000));
    (void)close(prov);
    (void)close(h);
    PBX_CHECK(tp_hung_up(prov2, 2000));
    (void)close(prov2);
    PBX_CHECK_EQ(tp_fd_settle(pid, base, 1000), base);
    PBX_CHECK(tpr_query(state, text, sizeof(text)) == 0);
    PBX_CHECK(tpr_only_entry(d, "procd.sock"));
    (void)close(rp[0]);
    (void)tp_stop(pid);
}

/* Runs pbx-<name> with the NULL-terminated args, stdout and stderr to
 * the file out; returns its exit status (5 s). */
static int tpr_cli_of(const char *name, const char *const *args,
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
        char argv0[32];
        (void)snprintf(path, sizeof(path), "%s/pbx-%s",
                       bin != NULL ? bin : "build/bin", name);
        (void)snprintf(argv0, sizeof(argv0), "pbx-%s", name);
        const char *argv[8] = {argv0};
        for (size_t k = 0; k < 6U && args[k] != NULL; k++) {
            argv[k + 1U] = args[k];
        }
        execv(path, (char *const *)(void *)argv);
        _exit(127);
    }
    return tp_wait_exit(pid, 5000);
}

/* Runs pbx-procd with the NULL-terminated args, as tpr_cli_of. */
static int tpr_cli(const char *const *args, const char *out)
{
    return tpr_cli_of("procd", args, out);
}

/* A route listener would make its first connector a route (issue 20):
 * ttyd and procd refuse --route PATH with a line naming it, exit 2, and
 * leave no socket at the path. */
PBX_TEST(peers_ttyd_and_procd_refuse_a_route_listener)
{
    char out[600];
    char path[600];
    char pol[600];
    char text[1024];
    (void)snprintf(out, sizeof(out), "%s/out", tp_tmpdir());
    (void)snprintf(path, sizeof(path), "%s/route.sock", tp_tmpdir());
    (void)snprintf(pol, sizeof(pol), "%s/policy", tp_tmpdir());
    FILE *f = fopen(pol, "w");
    if (f == NULL) {
        PBX_CHECK(f != NULL);
        return;
    }
    (void)fputs("* * read file routine allow\n", f);
    (void)fclose(f);
    const char *pr[] = {"--stage", "7:2", "--route", path, NULL};
    const char *tr[] = {"--policy", pol,  "--tty", "/dev/null",
                        "--route",  path, NULL};
    const char *const *args[] = {pr, tr};
    const char *names[] = {"procd", "ttyd"};
    for (size_t i = 0; i < 2U; i++) {
        PBX_CHECK_EQ(tpr_cli_of(names[i], args[i], out), 2);
        PBX_CHECK(tp_read_file(out, text, sizeof(text)) > 0 &&
                  strstr(text, "listens for no route") != NULL &&
                  strstr(text, path) != NULL);
        struct stat st;
        PBX_CHECK(stat(path, &st) != 0);
    }
}

PBX_TEST(peers_procd_usage_and_help)
{
    char out[600];
    char text[1024];
    (void)snprintf(out, sizeof(out), "%s/out", tp_tmpdir());
    /* No argument: usage, exit 2 (not a procd serving nothing forever);
     * -h and --help: usage, exit 0; a removed option: exit 2. */
    const char *none[] = {NULL};
    PBX_CHECK_EQ(tpr_cli(none, out), 2);
    PBX_CHECK(tp_read_file(out, text, sizeof(text)) > 0 &&
              strncmp(text, "usage: pbx-procd", 16) == 0);
    const char *h[][2] = {{"-h", NULL}, {"--help", NULL}};
    for (size_t i = 0; i < 2; i++) {
        PBX_CHECK_EQ(tpr_cli(h[i], out), 0);
        PBX_CHECK(tp_read_file(out, text, sizeof(text)) > 0 &&
                  strstr(text, "--query PATH") != NULL);
    }
    const char *old[] = {"--stage", "7:2", "--state-file", out, NULL};
    PBX_CHECK_EQ(tpr_cli(old, out), 2);
}

/* Starts procd with process 7 gen 2 staged; *route is ours. */
static pid_t tpr_up(int *route)
{
    int rp[2];
    char rarg[16];
    PBX_REQUIRE(tp_seqpair(rp));
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--stage", "7:2", "--route-fd", rarg, NULL};
    pid_t pid = tp_spawn("procd", args, &rp[1], 1, -1);
    (void)close(rp[1]);
    PBX_REQUIRE(pid > 0);
    *route = rp[0];
    return pid;
}

/* Sends INSTALL of rq with a fresh object and seq, without waiting;
 * returns the object's other end. */
static int tpr_send_install(int route, const pbx_ipc_install *rq, uint32_t seq)
{
    int o[2];
    PBX_REQUIRE(tp_seqpair(o));
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {5, 6};
    PBX_CHECK_EQ(pbx_ipc_install_encode(id, rq, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, seq, o[0]) == 0);
    (void)close(o[0]);
    return o[1];
}

/* Receives the next reply on fd within 3 s, checking op and seq; returns
 * its status. */
static uint16_t tpr_reply_seq(int fd, uint16_t op, uint32_t seq,
                              pbx_peer_msg *m)
{
    PBX_REQUIRE(tp_readable(fd, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(fd, m) == 0);
    PBX_REQUIRE(m->err == PBX_OK);
    PBX_CHECK_EQ(m->frame.op, op | PBX_IPC_REPLY_BIT);
    PBX_CHECK_EQ(m->frame.seq, seq);
    return m->frame.status;
}

PBX_TEST(peers_procd_replies_echo_seq_in_order)
{
    static pbx_peer_msg m;
    int route = -1;
    pid_t pid = tpr_up(&route);
    int base = tp_fd_count(pid);
    /* Three INSTALLs outstanding at once: answered in order, each with
     * its seq; the second names the first's slot and is refused. */
    pbx_ipc_install a = tpr_install(2, 40, 1, 1);
    pbx_ipc_install b = tpr_install(2, 40, 2, 1);
    pbx_ipc_install c = tpr_install(2, 41, 3, 1);
    int pa = tpr_send_install(route, &a, 0x10U);
    int pb = tpr_send_install(route, &b, 0x11U);
    int pc = tpr_send_install(route, &c, 0x12U);
    PBX_CHECK_EQ(tpr_reply_seq(route, PBX_IPC_OP_INSTALL, 0x10U, &m), 0U);
    PBX_REQUIRE(m.nfds == 1U);
    int ha = m.fds[0];
    PBX_CHECK_EQ(tpr_reply_seq(route, PBX_IPC_OP_INSTALL, 0x11U, &m),
                 PBX_PEER_E_SLOT);
    PBX_CHECK(tp_hung_up(pb, 2000));
    PBX_CHECK_EQ(tpr_reply_seq(route, PBX_IPC_OP_INSTALL, 0x12U, &m), 0U);
    PBX_REQUIRE(m.nfds == 1U);
    int hc = m.fds[0];
    /* On a handle: a wrong REVOKE, then the exact one, each echoed. */
    pbx_ipc_revoke rv = {{1, 1}, 7, 2, 41};
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {5, 6};
    PBX_CHECK_EQ(pbx_ipc_revoke_encode(id, &rv, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(ha, buf, n, 0x20U, -1) == 0);
    PBX_CHECK_EQ(tpr_reply_seq(ha, PBX_IPC_OP_REVOKE, 0x20U, &m),
                 PBX_PEER_E_MISMATCH);
    rv.installed_slot = 40;
    PBX_CHECK_EQ(pbx_ipc_revoke_encode(id, &rv, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(ha, buf, n, 0x21U, -1) == 0);
    PBX_CHECK_EQ(tpr_reply_seq(ha, PBX_IPC_OP_REVOKE, 0x21U, &m), 0U);
    PBX_CHECK(tp_hung_up(pa, 2000));
    /* Misrouted and malformed frames on the route: error replies with
     * the seq. */
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, 0x30U, -1) == 0);
    PBX_CHECK_EQ(tpr_reply_seq(route, PBX_IPC_OP_REVOKE, 0x30U, &m),
                 PBX_PEER_E_ROUTE);
    buf[PBX_IPC_RESERVED_OFFSET] = 1U;
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, 0x31U, -1) == 0);
    PBX_CHECK_EQ(tpr_reply_seq(route, PBX_IPC_OP_REVOKE, 0x31U, &m),
                 PBX_E_IPC_RESERVED);
    (void)close(hc);
    PBX_CHECK(tp_hung_up(pc, 2000));
    pbx_peer_io_close_all(&ha, 1);
    int left[3] = {pa, pb, pc};
    pbx_peer_io_close_all(left, 3);
    PBX_CHECK_EQ(tp_fd_settle(pid, base, 2000), base);
    (void)close(route);
    (void)tp_stop(pid);
}

PBX_TEST(peers_procd_stalled_serves_its_backlog_in_order)
{
    static pbx_peer_msg m;
    int route = -1;
    pid_t pid = tpr_up(&route);
    int base = tp_fd_count(pid);
    PBX_REQUIRE(tp_stall(pid, true));
    int prov[4];
    for (uint32_t i = 0; i < 4U; i++) {
        pbx_ipc_install rq = tpr_install(2, 40U + i, 1U + i, 1);
        prov[i] = tpr_send_install(route, &rq, 100U + i);
    }
    PBX_CHECK(!tp_readable(route, 200));
    PBX_REQUIRE(tp_stall(pid, false));
    int handles[4];
    for (uint32_t i = 0; i < 4U; i++) {
        PBX_CHECK_EQ(tpr_reply_seq(route, PBX_IPC_OP_INSTALL, 100U + i, &m),
                     0U);
        PBX_REQUIRE(m.nfds == 1U);
        handles[i] = m.fds[0];
        pbx_ipc_install_reply rep;
        PBX_CHECK_EQ(pbx_ipc_install_reply_decode(&m.frame, &rep), PBX_OK);
        PBX_CHECK_EQ(rep.installed_slot, 40U + i);
    }
    /* Closing the handles revokes every install. */
    pbx_peer_io_close_all(handles, 4);
    for (uint32_t i = 0; i < 4U; i++) {
        PBX_CHECK(tp_hung_up(prov[i], 2000));
    }
    pbx_peer_io_close_all(prov, 4);
    PBX_CHECK_EQ(tp_fd_settle(pid, base, 2000), base);
    (void)close(route);
    (void)tp_stop(pid);
}

/* How many times what occurs in the file at path (a log), read until
 * that reaches want or 2 s pass. */
static int tpr_count(const char *path, const char *what, int want)
{
    static char text[65536];
    int n = 0;
    for (int i = 0; i < 40 && n < want; i++) {
        n = 0;
        if (tp_read_file(path, text, sizeof(text)) > 0) {
            for (const char *at = strstr(text, what); at != NULL && n < 1000;
                 at = strstr(at + 1, what)) {
                n++;
            }
        }
        tp_sleep_ms(n < want ? 50 : 0);
    }
    return n;
}

/* Starts procd (process 7 gen 2 staged) with --attach-fd and no route,
 * its log in a directory of its own; stores the query path and log path
 * (512 bytes each) and the supervisor's end of the channel. */
static pid_t tpr_attach_up(char *query, char *log, int *chan)
{
    const char *d = tp_tmpdir();
    (void)snprintf(query, 512, "%s/procd.sock", d);
    (void)snprintf(log, 512, "%s/pbx-peer-procd.log", d);
    int ch[2];
    PBX_REQUIRE(tp_seqpair(ch));
    char carg[16];
    (void)snprintf(carg, sizeof(carg), "%d", ch[1]);
    const char *args[] = {"--stage",     "7:2", "--query", query,
                          "--attach-fd", carg,  NULL};
    static char old[512];
    const char *env = getenv("TMPDIR");
    (void)snprintf(old, sizeof(old), "%s", env != NULL ? env : "");
    PBX_REQUIRE(setenv("TMPDIR", d, 1) == 0);
    pid_t pid = tp_spawn("procd", args, &ch[1], 1, -1);
    if (env != NULL) {
        (void)setenv("TMPDIR", old, 1);
    } else {
        (void)unsetenv("TMPDIR");
    }
    (void)close(ch[1]);
    *chan = ch[0];
    PBX_REQUIRE(pid > 0);
    return pid;
}

/* Refusals on the channel: two descriptors, none, a DGRAM socket, an op
 * that is not procd's; each answers status 1 and closes what came (the
 * pair's other end then reads end of file). */
static void tpr_attach_refusals(int chan, const char *log)
{
    int a[2];
    int b[2];
    PBX_REQUIRE(tp_seqpair(a) && tp_seqpair(b));
    int two[2] = {a[1], b[1]};
    PBX_CHECK_EQ(tp_attach_send(chan, 'R', two, 2U, 'r'), 1U);
    (void)close(a[1]);
    (void)close(b[1]);
    PBX_CHECK(tp_hung_up(a[0], 2000) && tp_hung_up(b[0], 2000));
    PBX_CHECK(tp_logged(
        log, "procd: attach channel: refused: wrong descriptor count\n"));
    PBX_CHECK_EQ(tp_attach_send(chan, 'R', NULL, 0U, 'r'), 1U);
    int dg[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dg) == 0);
    PBX_CHECK_EQ(tp_attach_send(chan, 'R', &dg[1], 1U, 'r'), 1U);
    (void)close(dg[1]);
    /* A datagram pair never hangs up: once procd closed its copy, a send
     * to it is refused. */
    bool gone = false;
    for (int i = 0; i < 40 && !gone; i++) {
        gone = send(dg[0], "x", 1U, MSG_DONTWAIT | MSG_NOSIGNAL) < 0;
        tp_sleep_ms(gone ? 0 : 50);
    }
    PBX_CHECK(gone);
    PBX_CHECK(
        tp_logged(log, "procd: attach channel: refused: wrong socket type\n"));
    PBX_CHECK_EQ(tp_attach_send(chan, 'L', NULL, 0U, 'l'), 1U);
    PBX_CHECK(tp_logged(
        log, "procd: attach channel: refused: wrong op for this peer\n"));
    (void)close(a[0]);
    (void)close(b[0]);
    (void)close(dg[0]);
}

/* Adopts a fresh route over the channel; returns powerboxd's end. */
static int tpr_attach_route(int chan)
{
    int r[2];
    PBX_REQUIRE(tp_seqpair(r));
    PBX_CHECK_EQ(tp_attach_send(chan, 'R', &r[1], 1U, 'r'), 0U);
    (void)close(r[1]);
    return r[0];
}

/* procd started with --attach-fd and no route serves its query socket
 * and waits; refused channel messages answer status 1 with their
 * descriptors closed; an adopted route serves INSTALL; when a route
 * closes, every install that came on it is dropped (procd's copy of the
 * object and its handle end closed), logged one line each and counted,
 * and the query lists only the other route's install; the channel's end
 * leaves procd serving. */
PBX_TEST(peers_procd_attach_channel_and_route_loss)
{
    static pbx_peer_msg m;
    static char query[512];
    static char log[512];
    char text[1024];
    int chan = -1;
    pid_t pid = tpr_attach_up(query, log, &chan);
    tp_sleep_ms(100);
    PBX_CHECK_EQ(tpr_query(query, text, sizeof(text)), 0);
    PBX_CHECK_EQ(waitpid(pid, NULL, WNOHANG), 0);
    tpr_attach_refusals(chan, log);
    int ra = tpr_attach_route(chan);
    PBX_CHECK(tp_logged(log, "procd: attach channel: route(s) adopted\n"));
    int prov[3] = {-1, -1, -1};
    int h[3] = {-1, -1, -1};
    pbx_ipc_install rq = tpr_install(2, 40, 1, 1);
    PBX_REQUIRE(tpr_call_install(ra, &rq, &prov[0], &h[0], &m) == 0U);
    rq = tpr_install(2, 41, 2, 1);
    PBX_REQUIRE(tpr_call_install(ra, &rq, &prov[1], &h[1], &m) == 0U);
    int rb = tpr_attach_route(chan);
    rq = tpr_install(2, 42, 3, 1);
    PBX_REQUIRE(tpr_call_install(rb, &rq, &prov[2], &h[2], &m) == 0U);
    PBX_CHECK(tpr_query(query, text, sizeof(text)) > 0);
    PBX_CHECK(strstr(text, " grant 1.1 ") != NULL &&
              strstr(text, " grant 2.1 ") != NULL &&
              strstr(text, " grant 3.1 ") != NULL);
    /* Route A closes; the handles stay open here, yet both of its
     * installs end: procd's copies and handle ends are closed. */
    (void)close(ra);
    PBX_CHECK(tp_hung_up(prov[0], 2000) && tp_hung_up(prov[1], 2000));
    PBX_CHECK(tp_hung_up(h[0], 2000) && tp_hung_up(h[1], 2000));
    PBX_CHECK(!tp_hung_up(prov[2], 100));
    PBX_CHECK(tp_logged(
        log, "procd: INSTALL ended grant 1.1: route closed (broker lost)\n"));
    PBX_CHECK(tp_logged(
        log, "procd: INSTALL ended grant 2.1: route closed (broker lost)\n"));
    PBX_CHECK(tp_logged(
        log, "procd: route closed: 2 install(s) ended (broker lost)\n"));
    PBX_CHECK(tpr_query(query, text, sizeof(text)) > 0);
    PBX_CHECK(strstr(text, " grant 1.1 ") == NULL &&
              strstr(text, " grant 2.1 ") == NULL &&
              strstr(text, " grant 3.1 ") != NULL);
    /* The supervisor goes away: procd keeps serving route B. */
    (void)close(chan);
    PBX_CHECK(tp_logged(log, "procd: attach channel closed"));
    int p4 = -1;
    int h4 = -1;
    rq = tpr_install(2, 43, 4, 1);
    PBX_CHECK_EQ(tpr_call_install(rb, &rq, &p4, &h4, &m), 0U);
    /* A dying powerboxd's descriptors are released in no fixed order: its
     * handles may end a moment before its route. Those hang-ups are the
     * route's loss, recorded as such, never as revocations. */
    (void)close(h[2]);
    (void)close(h4);
    h[2] = -1;
    tp_sleep_ms(20);
    (void)close(rb);
    PBX_CHECK(tp_hung_up(prov[2], 2000) && tp_hung_up(p4, 2000));
    PBX_CHECK(tp_logged(
        log, "procd: INSTALL ended grant 3.1: route closed (broker lost)\n"));
    PBX_CHECK(tp_logged(
        log, "procd: INSTALL ended grant 4.1: route closed (broker lost)\n"));
    PBX_CHECK_EQ(
        tpr_count(log,
                  "procd: route closed: 2 install(s) ended (broker lost)\n", 2),
        2);
    PBX_CHECK(!tp_logged(log, "procd: handle closed: grant 3.1"));
    PBX_CHECK(!tp_logged(log, "procd: handle closed: grant 4.1"));
    pbx_peer_io_close_all(prov, 3U);
    pbx_peer_io_close_all(h, 3U);
    (void)close(p4);
    (void)tp_stop(pid);
}
