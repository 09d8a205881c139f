/*
 * test_peers_pty.c: the prompt hold end to end on real processes with a
 * fake terminal (a pty pair the test holds). launchd: a sandboxed job
 * whose stdio is the terminal runs on a pty of launchd's own (its
 * controlling terminal, not the user's), its output relayed, its window
 * size following the terminal's; while the
 * test, as ttyd, holds (HOLD n, HELD n) no key is read from the terminal
 * and no output reaches it, the program blocking once the relay's buffer
 * is full; after RELEASE both flow again, nothing lost. ttyd: a prompt is
 * drawn only after launchd (the test, listening) acknowledges HOLD, is
 * preceded by the soft reset, answered by one key without Enter, and
 * followed by RELEASE; an unacknowledged HOLD answers RETRY and the
 * prompt never draws; a key typed ahead without Enter is discarded, never
 * the answer.
 */
#define _XOPEN_SOURCE 700

#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_launch.h"
#include "../../peers/lib/pbx_peer_tty.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <termios.h>
#include <unistd.h>

static pbx_peer_msg g_pm;
static uint8_t g_buf[PBX_IPC_FRAME_BYTES_MAX];

/* A fake terminal: the master (non-blocking) and the slave's name. */
static int pt_terminal(char *name, size_t cap)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    PBX_REQUIRE(m >= 0 && grantpt(m) == 0 && unlockpt(m) == 0);
    const char *s = ptsname(m);
    PBX_REQUIRE(s != NULL);
    (void)snprintf(name, cap, "%s", s != NULL ? s : "");
    PBX_REQUIRE(fcntl(m, F_SETFL, O_NONBLOCK) == 0);
    return m;
}

/* Reads fd (non-blocking) into buf (appending, NUL-terminated) until it
 * holds want or ms pass; whether it does. */
static bool pt_until(int fd, char *buf, size_t cap, size_t *len,
                     const char *want, int ms)
{
    for (int i = 0; i <= ms / 10; i++) {
        if (strstr(buf, want) != NULL) {
            return true;
        }
        (void)tp_readable(fd, 10);
        ssize_t r = read(fd, buf + *len, cap - 1U - *len);
        if (r > 0) {
            *len += (size_t)r;
            buf[*len] = '\0';
        }
    }
    return strstr(buf, want) != NULL;
}

/* Counts byte ch in buf[0..n). */
static size_t pt_count(const char *buf, size_t n, char ch)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        k += buf[i] == ch ? 1U : 0U;
    }
    return k;
}

/* A stream connection to path (the test as ttyd), or -1. */
static int pt_connect(const char *path)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t n = strlen(path);
    if (n >= sizeof(sa.sun_path)) {
        return -1;
    }
    memcpy(sa.sun_path, path, n);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        (void)close(fd);
        fd = -1;
    }
    return fd;
}

/* Sends line on fd and, when want is not NULL, expects exactly want back
 * within 5 s. */
static bool pt_say(int fd, const char *line, const char *want)
{
    if (line != NULL &&
        send(fd, line, strlen(line), MSG_NOSIGNAL) != (ssize_t)strlen(line)) {
        return false;
    }
    if (want == NULL) {
        return true;
    }
    char got[64] = {0};
    size_t n = 0;
    while (n < strlen(want) && tp_readable(fd, 5000)) {
        ssize_t r = recv(fd, got + n, strlen(want) - n, 0);
        if (r <= 0) {
            return false;
        }
        n += (size_t)r;
    }
    return n == strlen(want) && memcmp(got, want, n) == 0;
}

/* Starts launchd (broker and wake ends in b[0], w[0]) holding on hold. */
static pid_t pt_launchd(const char *ctl, const char *hold, int *b, int *w)
{
    PBX_REQUIRE(tp_seqpair(b));
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w) == 0);
    char barg[16];
    char warg[16];
    (void)snprintf(barg, sizeof(barg), "%d", b[1]);
    (void)snprintf(warg, sizeof(warg), "%d", w[1]);
    const char *args[] = {"serve", "--wake-fd", warg, "--broker-fd",
                          barg,    "--control", ctl,  "--hold",
                          hold,    NULL};
    int keep[2] = {b[1], w[1]};
    pid_t pid = tp_spawn("launchd", args, keep, 2U, -1);
    (void)close(b[1]);
    (void)close(w[1]);
    PBX_REQUIRE(pid > 0);
    return pid;
}

/* LAUNCHes the sandboxed probe with args on conn, stdio the slave. */
static void pt_launch(int conn, const char *const *args, int slave)
{
    static pbx_peer_launch_req r;
    memset(&r, 0, sizeof(r));
    r.session = 7;
    r.realm = 3;
    r.entry_len = 5;
    memcpy(r.entry, "probe", 5);
    r.flags = PBX_PEER_LAUNCH_SANDBOX;
    for (; args[r.argc] != NULL; r.argc++) {
        r.args[r.argc] = (const uint8_t *)args[r.argc];
        r.arg_lens[r.argc] = (uint16_t)strlen(args[r.argc]);
    }
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_launch_encode(&r, g_buf, sizeof(g_buf), &n) == PBX_OK);
    int io[3] = {slave, slave, slave};
    PBX_REQUIRE(pbx_peer_io_send_fds(conn, g_buf, n, io, 3, 0) == 0);
    PBX_REQUIRE(tp_readable(conn, 5000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(conn, &g_pm) == 0);
    pbx_peer_launch_frame f;
    PBX_REQUIRE(pbx_peer_launch_peek(g_pm.buf, g_pm.len, g_pm.nfds, &f) ==
                PBX_OK);
    PBX_CHECK_EQ(f.status, 0U);
}

PBX_TEST(peers_launchd_relays_a_sandboxed_jobs_pty_and_holds_it)
{
    static char out[1U << 20];
    size_t len = 0;
    char name[128];
    char ctl[512];
    char hold[512];
    char probe[512];
    const char *dir = tp_tmpdir();
    const char *bin = getenv("PBX_PEERS_BIN");
    (void)snprintf(ctl, sizeof(ctl), "%s/launchd.sock", dir);
    (void)snprintf(hold, sizeof(hold), "%s/hold.sock", dir);
    (void)snprintf(probe, sizeof(probe), "%s/pbx-sandbox-probe",
                   bin != NULL ? bin : "build/bin");
    int master = pt_terminal(name, sizeof(name));
    PBX_REQUIRE(setenv("PBX_PROBE_OUTER", name, 1) == 0);
    int b[2];
    int w[2];
    /* tp_spawn puts launchd's log in $TMPDIR: this test's directory. */
    static char old[512];
    const char *t = getenv("TMPDIR");
    (void)snprintf(old, sizeof(old), "%s", t != NULL ? t : "");
    PBX_REQUIRE(setenv("TMPDIR", dir, 1) == 0);
    pid_t pid = pt_launchd(ctl, hold, b, w);
    if (t != NULL) {
        (void)setenv("TMPDIR", old, 1);
    } else {
        (void)unsetenv("TMPDIR");
    }
    int ttyd = pt_connect(hold);
    PBX_REQUIRE(ttyd >= 0);
    int slave = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
    PBX_REQUIRE(slave >= 0);
    int conn = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
    PBX_REQUIRE(conn >= 0);
    const char *args[] = {probe,  "tty",         "rows:33", "line",
                          "line", "spam:262144", NULL};
    /* The terminal's size (24 rows here) is the pty's at the start. */
    struct winsize ws = {24, 80, 0, 0};
    PBX_REQUIRE(ioctl(master, TIOCSWINSZ, &ws) == 0);
    pt_launch(conn, args, slave);
    out[0] = '\0';
    /* Its stdio are terminals, its own session's controlling one, and
     * not the user's terminal. */
    PBX_CHECK(pt_until(master, out, sizeof(out), &len,
                       "tty 0=1 1=1 2=1 leader=1 ctty=1 outer=0", 5000));
    /* The terminal grows to 33 rows: the job's pty follows. */
    ws.ws_row = 33;
    PBX_REQUIRE(ioctl(master, TIOCSWINSZ, &ws) == 0);
    PBX_CHECK(
        pt_until(master, out, sizeof(out), &len, "rows 33: got 33", 8000));
    /* Held: a line typed stays on the terminal, unread. */
    PBX_CHECK(pt_say(ttyd, "HOLD 7\n", "HELD 7\n"));
    PBX_CHECK(write(master, "one\r", 4) == 4);
    int queued = 0;
    tp_sleep_ms(200);
    PBX_CHECK(ioctl(slave, FIONREAD, &queued) == 0 && queued == 4);
    PBX_CHECK(!pt_until(master, out, sizeof(out), &len, "line: one", 200));
    /* Released: the line reaches the job. */
    PBX_CHECK(pt_say(ttyd, "RELEASE 7\n", NULL));
    PBX_CHECK(pt_until(master, out, sizeof(out), &len, "line: one", 5000));
    /* Held again once the next line is echoed: the job's answer and its
     * 256 KiB of output wait; launchd says the program blocks. */
    PBX_CHECK(write(master, "two\r", 4) == 4);
    PBX_CHECK(pt_until(master, out, sizeof(out), &len, "two", 5000));
    PBX_CHECK(pt_say(ttyd, "HOLD 8\n", "HELD 8\n"));
    /* What launchd wrote before HELD reaches the terminal (the kernel
     * hands pty bytes on asynchronously: read until 300 ms of quiet). */
    for (int i = 0; i < 4096 && tp_readable(master, 300); i++) {
        ssize_t r = read(master, out + len, sizeof(out) - 1U - len);
        len += r > 0 ? (size_t)r : 0U;
        out[len] = '\0';
    }
    size_t before = len;
    static char logf[600];
    static char text[65536];
    (void)snprintf(logf, sizeof(logf), "%s/pbx-peer-launchd.log", dir);
    bool full = false;
    for (int i = 0; i < 1000 && !full; i++) {
        full = tp_read_file(logf, text, sizeof(text)) > 0 &&
               strstr(text, "output held while ttyd shows a prompt") != NULL;
        tp_sleep_ms(10);
    }
    PBX_CHECK(full);
    PBX_CHECK(!tp_readable(master, 300));
    PBX_CHECK_EQ(len, before);
    /* Released: every byte arrives, nothing lost. */
    PBX_CHECK(pt_say(ttyd, "RELEASE 8\n", NULL));
    PBX_CHECK(pt_until(master, out, sizeof(out), &len, "spam done", 20000));
    PBX_CHECK(strstr(out, "line: two") != NULL);
    PBX_CHECK_EQ(pt_count(out, len, 'x'), 262144U);
    (void)close(conn);
    (void)close(ttyd);
    (void)close(slave);
    (void)close(master);
    (void)close(b[0]);
    (void)close(w[0]);
    (void)tp_stop(pid);
    (void)unsetenv("PBX_PROBE_OUTER");
}
