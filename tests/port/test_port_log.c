/*
 * test_port_log.c: the linux-x86_64 port's diagnostic lines
 * (pbx_port_log, lx_log.c), tested from outside through the portcheck
 * image ($PBX_PORTCHECK, request 'L') with its slot 2 set to a pipe, a
 * pipe that is full, a pipe without a reader, a terminal and a regular
 * file. A line is written whole or dropped, never waited for, never
 * raising SIGPIPE, and the port never changes the open file description
 * it shares with its starter (no O_NONBLOCK on it).
 */
#define _GNU_SOURCE
#include "../../base/pbx_base.h"
#include "../../powerboxd/port/pbx_port.h"
#include "../runner/pbx_test.h"
#include "port_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

/* The longest line the tests ask for: request 'L' with argument 255. */
#define T_LINE_MAX 4096

/* Starts a child with err_fd as its slot 2 and one connected client. */
static void t_log_up(t_child *c, int err_fd)
{
    uint32_t w[T_REPLY_WORDS];
    PBX_REQUIRE(t_spawn_err(c, T_PBX1_GOOD, err_fd));
    PBX_REQUIRE(t_wait_ready(c));
    c->client = t_connect(c);
    PBX_REQUIRE(c->client >= 0);
    PBX_REQUIRE(t_request(c, 'F', 0, NULL, 0, w, NULL));
}

/* Asks the child to exit with status 0 and checks that it did. */
static void t_log_down(t_child *c)
{
    uint8_t msg[2] = {'X', 0};
    PBX_CHECK(t_send(c->client, msg, sizeof(msg), NULL, 0));
    PBX_CHECK_EQ(t_exit_status(c), 0);
    t_close_all(c);
}

/* Asks the child to log a line of (arg + 1) * 16 bytes; returns 1 when
 * it was written whole, 0 when dropped, -1 without a reply. The reply
 * must come within 5 s: a port that waited on a full pipe would never
 * send it. A failure lets the test go on to t_log_down, which ends the
 * child. */
static int t_log_line(t_child *c, uint8_t arg)
{
    uint32_t w[T_REPLY_WORDS];
    bool replied = t_request(c, 'L', arg, NULL, 0, w, NULL);
    PBX_CHECK(replied);
    if (!replied) {
        return -1;
    }
    PBX_CHECK_EQ(w[0], PBX_OK);
    return (int)w[1];
}

/* The line the child writes for arg, as the portcheck builds it. */
static size_t t_line_want(uint8_t arg, char *out)
{
    size_t len = ((size_t)arg + 1U) * 16U;
    for (size_t i = 0; i + 1U < len; i++) {
        out[i] = (char)('a' + (i % 26U));
    }
    out[len - 1U] = '\n';
    return len;
}

/* Reads exactly len bytes from fd (5 s per read at most) into out. */
static bool t_read_exact(int fd, char *out, size_t len)
{
    size_t got = 0;
    for (int i = 0; i < 64 && got < len; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 5000) != 1) {
            return false;
        }
        ssize_t r = read(fd, out + got, len - got);
        if (r <= 0) {
            return false;
        }
        got += (size_t)r;
    }
    return got == len;
}

/* Whether fd's open file description has O_NONBLOCK set. */
static bool t_nonblocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 || (fl & O_NONBLOCK) != 0;
}

/* Checks that the next line the child writes for arg arrives on rfd
 * whole and is the only thing waiting there. */
static void t_line_arrives(t_child *c, int rfd, uint8_t arg)
{
    char want[T_LINE_MAX];
    char got[T_LINE_MAX];
    size_t len = t_line_want(arg, want);
    PBX_CHECK_EQ(t_log_line(c, arg), 1);
    bool read = t_read_exact(rfd, got, len);
    PBX_CHECK(read);
    if (read) {
        PBX_CHECK_MEM(got, want, len);
    }
    struct pollfd p = {rfd, POLLIN, 0};
    PBX_CHECK_EQ(poll(&p, 1, 0), 0);
}

PBX_TEST(port_log_line_reaches_a_pipe_whole_and_leaves_it_blocking)
{
    t_child c;
    int p[2];
    PBX_REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    t_log_up(&c, p[1]);
    t_line_arrives(&c, p[0], 3);
    t_line_arrives(&c, p[0], 127);
    /* The child shares our write end's open file description. */
    PBX_CHECK(!t_nonblocking(p[1]));
    t_log_down(&c);
    (void)close(p[0]);
    (void)close(p[1]);
}

/* Fills the pipe behind wfd to the last byte, leaving wfd blocking. */
static void t_fill_pipe(int wfd)
{
    static const char page[4096];
    int fl = fcntl(wfd, F_GETFL);
    PBX_REQUIRE(fl >= 0 && fcntl(wfd, F_SETFL, fl | O_NONBLOCK) == 0);
    /* Whole pages, then single bytes, each until the pipe refuses. */
    for (int i = 0; i < 1 << 12 && write(wfd, page, sizeof(page)) > 0; i++) {
    }
    PBX_REQUIRE(errno == EAGAIN);
    for (int i = 0; i < 1 << 16 && write(wfd, page, 1U) > 0; i++) {
    }
    PBX_REQUIRE(errno == EAGAIN);
    PBX_REQUIRE(fcntl(wfd, F_SETFL, fl & ~O_NONBLOCK) == 0);
}

/* Reads and throws away everything the pipe behind rfd holds. */
static void t_drain_pipe(int rfd)
{
    char buf[4096];
    int fl = fcntl(rfd, F_GETFL);
    PBX_REQUIRE(fl >= 0 && fcntl(rfd, F_SETFL, fl | O_NONBLOCK) == 0);
    for (int i = 0; i < 1 << 16 && read(rfd, buf, sizeof(buf)) > 0; i++) {
    }
    PBX_REQUIRE(fcntl(rfd, F_SETFL, fl) == 0);
}

PBX_TEST(port_log_full_pipe_drops_the_line_without_waiting)
{
    t_child c;
    int p[2];
    PBX_REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    t_fill_pipe(p[1]);
    t_log_up(&c, p[1]);
    /* The first line (the port learns its way then) and a later one. */
    PBX_CHECK_EQ(t_log_line(&c, 127), 0);
    PBX_CHECK_EQ(t_log_line(&c, 0), 0);
    PBX_CHECK(!t_nonblocking(p[1]));
    /* Nothing of the dropped lines went in: once drained, the next line
     * is all the pipe holds. */
    t_drain_pipe(p[0]);
    t_line_arrives(&c, p[0], 127);
    t_log_down(&c);
    (void)close(p[0]);
    (void)close(p[1]);
}

PBX_TEST(port_log_gone_reader_drops_the_line_and_raises_no_sigpipe)
{
    t_child c;
    int p[2];
    PBX_REQUIRE(pipe2(p, O_CLOEXEC) == 0);
    (void)close(p[0]);
    t_log_up(&c, p[1]);
    (void)close(p[1]);
    /* A SIGPIPE would end the child: its reply would never come, and it
     * would not exit with the status asked for. */
    PBX_CHECK_EQ(t_log_line(&c, 3), 0);
    PBX_CHECK_EQ(t_log_line(&c, 3), 0);
    t_log_down(&c);
}

PBX_TEST(port_log_terminal_takes_its_lines)
{
    t_child c;
    struct termios tio;
    int master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    PBX_REQUIRE(master >= 0);
    PBX_REQUIRE(grantpt(master) == 0 && unlockpt(master) == 0);
    int tty = open(ptsname(master), O_RDWR | O_NOCTTY | O_CLOEXEC);
    PBX_REQUIRE(tty >= 0);
    /* Raw, so the terminal passes the newline through unchanged. */
    PBX_REQUIRE(tcgetattr(tty, &tio) == 0);
    cfmakeraw(&tio);
    PBX_REQUIRE(tcsetattr(tty, TCSANOW, &tio) == 0);
    t_log_up(&c, tty);
    t_line_arrives(&c, master, 3);
    t_line_arrives(&c, master, 63);
    PBX_CHECK(!t_nonblocking(tty));
    t_log_down(&c);
    (void)close(tty);
    (void)close(master);
}

PBX_TEST(port_log_regular_file_takes_its_lines)
{
    t_child c;
    char path[] = "/tmp/pbx-port-log-XXXXXX";
    char want[2 * T_LINE_MAX];
    char got[2 * T_LINE_MAX];
    int fd = mkstemp(path);
    PBX_REQUIRE(fd >= 0);
    (void)unlink(path);
    t_log_up(&c, fd);
    PBX_CHECK_EQ(t_log_line(&c, 3), 1);
    PBX_CHECK_EQ(t_log_line(&c, 127), 1);
    t_log_down(&c);
    size_t n = t_line_want(3, want);
    n += t_line_want(127, want + n);
    PBX_CHECK_EQ(pread(fd, got, sizeof(got), 0), (ssize_t)n);
    PBX_CHECK_MEM(got, want, n);
    (void)close(fd);
}
