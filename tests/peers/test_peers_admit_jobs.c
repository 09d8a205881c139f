/*
 * test_peers_admit_jobs.c: launchd's --max-jobs-per-pid (issue 20, item
 * 3; docs/SECURITY.md): one launching process, counted by its control
 * connections' SO_PEERCRED pid, holds at most that many live jobs; one
 * more LAUNCH, on any of its connections, is refused BUSY and logged,
 * while another process still launches. Without the bound one process
 * could start --max-jobs jobs with --max-open requests each and take
 * every request record of the default geometry.
 */
#define _GNU_SOURCE

#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_launch.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static uint8_t g_buf[PBX_IPC_FRAME_BYTES_MAX];
static pbx_peer_msg g_msg;

/* Sends a LAUNCH of `sleep 60` (stdio /dev/null, launchd picks the id) on
 * control connection conn; returns the reply's status, or 0xffff when no
 * reply came within 5 s. */
static uint16_t tj_launch(int conn)
{
    static pbx_peer_launch_req r;
    static const char *const args[] = {"sleep", "60"};
    memset(&r, 0, sizeof(r));
    r.session = 1;
    r.realm = 1;
    r.entry_len = 5;
    memcpy(r.entry, "sleep", 5);
    for (r.argc = 0; r.argc < 2U; r.argc++) {
        r.args[r.argc] = (const uint8_t *)args[r.argc];
        r.arg_lens[r.argc] = (uint16_t)strlen(args[r.argc]);
    }
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    size_t n = 0;
    if (nul < 0 ||
        pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) != PBX_OK ||
        pbx_ipc_frame_set_seq(g_buf, n, 0x44U) != PBX_OK) {
        return 0xffffU;
    }
    int io[3] = {nul, nul, nul};
    int sent = pbx_peer_io_send_fds(conn, g_buf, n, io, 3U, 0);
    (void)close(nul);
    pbx_peer_launch_frame f;
    if (sent != 0 || !tp_readable(conn, 5000) ||
        pbx_peer_io_recv_frame(conn, &g_msg) != 0 ||
        pbx_peer_launch_peek(g_msg.buf, g_msg.len, g_msg.nfds, &f) != PBX_OK) {
        return 0xffffU;
    }
    pbx_peer_io_close_all(g_msg.fds, g_msg.nfds);
    return f.status;
}

/* Another process: connects to ctl, launches one job, writes the status
 * over out and keeps its connection (hence the job) until go (whose write
 * end go_w it closes) reaches its end. */
static pid_t tj_other(const char *ctl, int out, int go, int go_w)
{
    fflush(NULL);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        /* Only the test's copy of go's write end may stay open. */
        (void)close(go_w);
        int c = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
        uint16_t st = c >= 0 ? tj_launch(c) : 0xffffU;
        (void)!write(out, &st, sizeof(st));
        char b = 0;
        (void)!read(go, &b, 1);
        _exit(0);
    }
    return pid;
}

PBX_TEST(peers_launchd_bounds_live_jobs_per_process)
{
    const char *dir = tp_tmpdir();
    char ctl[512];
    char wake[512];
    char log[600];
    (void)snprintf(ctl, sizeof(ctl), "%s/launchd.sock", dir);
    (void)snprintf(wake, sizeof(wake), "%s/wake.sock", dir);
    (void)snprintf(log, sizeof(log), "%s/pbx-peer-launchd.log", dir);
    const char *args[] = {"serve",     "--wake", wake,
                          "--control", ctl,      "--max-jobs-per-pid",
                          "2",         NULL};
    PBX_REQUIRE(setenv("TMPDIR", dir, 1) == 0);
    pid_t pid = tp_spawn("launchd", args, NULL, 0, -1);
    PBX_REQUIRE(unsetenv("TMPDIR") == 0);
    PBX_REQUIRE(pid > 0);
    int c[2];
    for (size_t i = 0; i < 2U; i++) {
        c[i] = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
        PBX_REQUIRE(c[i] >= 0);
    }
    PBX_CHECK_EQ(tj_launch(c[0]), 0U);
    PBX_CHECK_EQ(tj_launch(c[0]), 0U);
    /* The third job of this process, on either connection, is refused. */
    PBX_CHECK_EQ(tj_launch(c[0]), PBX_PEER_E_BUSY);
    PBX_CHECK_EQ(tj_launch(c[1]), PBX_PEER_E_BUSY);
    char line[160];
    (void)snprintf(line, sizeof(line),
                   "launchd: LAUNCH refused: pid %d has 2 live jobs "
                   "(--max-jobs-per-pid 2)",
                   (int)getpid());
    PBX_CHECK(tp_logged(log, line));
    /* Another process still launches. */
    int out[2];
    int go[2];
    PBX_REQUIRE(pipe2(out, O_CLOEXEC) == 0 && pipe2(go, O_CLOEXEC) == 0);
    pid_t other = tj_other(ctl, out[1], go[0], go[1]);
    uint16_t st = 0xffffU;
    PBX_CHECK(tp_readable(out[0], 10000) &&
              read(out[0], &st, sizeof(st)) == (ssize_t)sizeof(st));
    PBX_CHECK_EQ(st, 0U);
    (void)close(go[1]);
    (void)waitpid(other, NULL, 0);
    (void)close(go[0]);
    (void)close(out[0]);
    (void)close(out[1]);
    pbx_peer_io_close_all(c, 2);
    (void)tp_stop(pid);
}
