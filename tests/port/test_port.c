/*
 * test_port.c: the linux-x86_64 port, tested from outside through the
 * freestanding powerboxd-portcheck image ($PBX_PORTCHECK): refused
 * startups with their own exit statuses, receipts moved into exact
 * reserved slots, surplus and truncated receipts deleted (the child's
 * descriptor count returns to its baseline after floods), exact deletion
 * and restore, slot queries, peer calls, datagram backpressure and its
 * writability retry, the bounded public connection table, and the
 * kernel-vouched identity of a socket and of its passed copies.
 */
/* O_PATH is a Linux extension. */
#define _GNU_SOURCE
#include "../../base/pbx_base.h"
#include "../../powerboxd/port/pbx_port.h"
#include "../runner/pbx_test.h"
#include "../sock/pbx_test_sock.h"
#include "port_child.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* The portcheck layout (powerboxd/portcheck/portcheck.c). */
#define T_RESV             200
#define T_KIND_PLACEHOLDER 1U
#define T_KIND_ENDPOINT    2U
#define T_KIND_NOTIFY      3U
#define T_KIND_MEMORY      5U
#define T_KIND_EMPTY       0U

/* Starts a child that must come up, with one connected client. */
static void t_up(t_child *c)
{
    PBX_REQUIRE(t_spawn(c, T_PBX1_GOOD));
    PBX_REQUIRE(t_wait_ready(c));
    c->client = t_connect(c);
    PBX_REQUIRE(c->client >= 0);
    /* One round trip, so the connection is accepted before any count. */
    uint32_t w[T_REPLY_WORDS];
    PBX_REQUIRE(t_request(c, 'F', 0, NULL, 0, w, NULL));
}

/* Asks the child to exit with status 0 and checks that it did. */
static void t_down(t_child *c)
{
    uint8_t msg[2] = {'X', 0};
    PBX_CHECK(t_send(c->client, msg, sizeof(msg), NULL, 0));
    PBX_CHECK_EQ(t_exit_status(c), 0);
    t_close_all(c);
}

/* Opens n fresh descriptors (memfds) into fds. */
static void t_open_n(int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        fds[i] = t_memfd("pbx-test-obj", NULL, 0);
        PBX_REQUIRE(fds[i] >= 0);
    }
}

/* Closes n descriptors. */
static void t_close_n(const int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        (void)close(fds[i]);
    }
}

/* Spawns with a bad PBX1 and checks the refusal's exit status. */
static void t_refused(t_pbx1_mode mode, int status)
{
    t_child c;
    PBX_REQUIRE(t_spawn(&c, mode));
    PBX_CHECK_EQ(t_exit_status(&c), status);
    t_close_all(&c);
}

PBX_TEST(port_refuses_missing_pbx1)
{
    t_refused(T_PBX1_NONE, 10);
}

PBX_TEST(port_refuses_unsealed_pbx1)
{
    t_refused(T_PBX1_UNSEALED, 11);
    t_refused(T_PBX1_PARTIAL, 11);
}

PBX_TEST(port_refuses_non_memory_pbx1)
{
    t_refused(T_PBX1_DEVNULL, 12);
}

PBX_TEST(port_refuses_malformed_pbx1)
{
    t_refused(T_PBX1_BADMAGIC, 13);
}

/* The portcheck range ends at slot 263 (powerboxd/portcheck/portcheck.c). */
#define T_RANGE_END 264U
/* portcheck's status for PBX_E_PORT_NOFILE from pbx_port_init. */
#define T_EXIT_NOFILE 21

/* A hard descriptor limit one below the range's end refuses startup with
 * its own status (nothing of the range could be placed at its top); a
 * soft limit below it under a hard limit that reaches it is raised to
 * exactly the range's end, and the child starts. */
PBX_TEST(port_descriptor_limit_fitted_to_the_range)
{
    t_child c;
    t_spawn_nofile(T_RANGE_END - 1U, T_RANGE_END - 1U);
    PBX_REQUIRE(t_spawn(&c, T_PBX1_GOOD));
    PBX_CHECK_EQ(t_exit_status(&c), T_EXIT_NOFILE);
    t_close_all(&c);
    t_spawn_nofile(100U, T_RANGE_END);
    PBX_REQUIRE(t_spawn(&c, T_PBX1_GOOD));
    PBX_REQUIRE(t_wait_ready(&c));
    struct rlimit rl = {0U, 0U};
    PBX_CHECK_EQ(prlimit(c.pid, RLIMIT_NOFILE, NULL, &rl), 0);
    PBX_CHECK_EQ(rl.rlim_cur, (rlim_t)T_RANGE_END);
    PBX_CHECK_EQ(rl.rlim_max, (rlim_t)T_RANGE_END);
    t_close_all(&c);
    /* A soft limit already above the range's end is left alone. */
    t_spawn_nofile(T_RANGE_END + 50U, T_RANGE_END + 100U);
    PBX_REQUIRE(t_spawn(&c, T_PBX1_GOOD));
    PBX_REQUIRE(t_wait_ready(&c));
    PBX_CHECK_EQ(prlimit(c.pid, RLIMIT_NOFILE, NULL, &rl), 0);
    PBX_CHECK_EQ(rl.rlim_cur, (rlim_t)T_RANGE_END + 50U);
    t_close_all(&c);
}

PBX_TEST(port_ready_query_and_exit_status)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    uint8_t q[5] = {'Q', 0, 0, 0, 0};
    struct {
        int32_t slot;
        uint32_t kind;
    } want[] = {{T_RESV, T_KIND_PLACEHOLDER}, {4, T_KIND_ENDPOINT},
                {5, T_KIND_NOTIFY},           {3, T_KIND_MEMORY},
                {150, T_KIND_EMPTY},          {T_RESV + 3, T_KIND_PLACEHOLDER}};
    t_up(&c);
    for (size_t i = 0; i < PBX_ARRAY_LEN(want); i++) {
        pbx_le_put32(q + 1, (uint32_t)want[i].slot);
        PBX_REQUIRE(t_send(c.client, q, sizeof(q), NULL, 0));
        PBX_REQUIRE(t_recv_reply(c.client, w, NULL, 5000));
        PBX_CHECK_EQ(w[0], PBX_OK);
        PBX_CHECK_EQ(w[1], want[i].kind);
    }
    /* Slot 4 is connected to us: SO_PEERCRED names this process. */
    pbx_le_put32(q + 1, 4U);
    PBX_REQUIRE(t_send(c.client, q, sizeof(q), NULL, 0));
    PBX_REQUIRE(t_recv_reply(c.client, w, NULL, 5000));
    PBX_CHECK_EQ(w[5], (uint32_t)getpid());
    uint8_t x[2] = {'X', 7};
    PBX_CHECK(t_send(c.client, x, sizeof(x), NULL, 0));
    PBX_CHECK_EQ(t_exit_status(&c), 7);
    t_close_all(&c);
}

PBX_TEST(port_receipt_moves_into_reserved_slot_and_back)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    int obj;
    int echoed = -1;
    t_up(&c);
    int base = t_fd_count(c.pid);
    t_open_n(&obj, 1);
    PBX_REQUIRE(t_request(&c, 'H', 1, &obj, 1, w, NULL));
    PBX_CHECK_EQ(w[0], PBX_OK);
    PBX_CHECK_EQ(w[1], 1U);
    PBX_CHECK_EQ(w[2], 0U);
    PBX_CHECK_EQ(w[3], T_RESV + 1);
    PBX_CHECK(t_same_object(c.pid, T_RESV + 1, obj));
    PBX_CHECK_EQ(t_fd_count(c.pid), base);
    /* The held capability goes back out in a reply, as a copy. */
    PBX_REQUIRE(t_request(&c, 'E', 1, NULL, 0, w, &echoed));
    PBX_REQUIRE(echoed >= 0);
    PBX_CHECK(t_same_object(getpid(), echoed, obj));
    (void)close(echoed);
    /* Restore puts the placeholder back; unreserving a receipt fails. */
    PBX_REQUIRE(t_request(&c, 'U', 2, NULL, 0, w, NULL));
    PBX_CHECK_EQ(w[0], PBX_OK);
    PBX_CHECK_EQ(w[1], PBX_OK);
    PBX_REQUIRE(t_request(&c, 'R', 1, NULL, 0, w, NULL));
    PBX_CHECK_EQ(w[0], PBX_OK);
    PBX_CHECK(!t_same_object(c.pid, T_RESV + 1, obj));
    PBX_REQUIRE(t_request(&c, 'H', 1, &obj, 1, w, NULL));
    PBX_REQUIRE(t_request(&c, 'D', 1, NULL, 0, w, NULL));
    PBX_CHECK_EQ(w[0], PBX_OK);
    PBX_CHECK_EQ(w[1], PBX_OK);
    PBX_CHECK(!t_same_object(c.pid, T_RESV + 1, obj));
    PBX_CHECK_EQ(t_fd_count(c.pid), base);
    (void)close(obj);
    t_down(&c);
}

PBX_TEST(port_surplus_flood_returns_to_baseline)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    int fds[16];
    t_up(&c);
    int base = t_fd_count(c.pid);
    PBX_REQUIRE(base > 0);
    t_open_n(fds, 16);
    for (int i = 0; i < 2000; i++) {
        int n = 1 + (int)(pbx_test_rng_next(&rng) % 16U);
        char op = (i % 5 == 0) ? 'H' : 'F';
        PBX_REQUIRE(t_request(&c, op, (uint8_t)i, fds, n, w, NULL));
        PBX_CHECK_EQ(w[1], (uint32_t)n);
        PBX_CHECK_EQ(w[2], (uint32_t)(op == 'H' ? n - 1 : n));
        if (op == 'H') {
            PBX_REQUIRE(t_request(&c, 'R', (uint8_t)i, NULL, 0, w, NULL));
            PBX_CHECK_EQ(w[0], PBX_OK);
        }
    }
    PBX_CHECK_EQ(t_fd_count(c.pid), base);
    t_close_n(fds, 16);
    t_down(&c);
}

PBX_TEST(port_truncated_receipts_are_deleted)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    int fds[64];
    uint8_t big[100];
    t_up(&c);
    int base = t_fd_count(c.pid);
    t_open_n(fds, 64);
    const int counts[] = {17, 40, 64, 16};
    for (size_t i = 0; i < PBX_ARRAY_LEN(counts); i++) {
        PBX_REQUIRE(t_request(&c, 'F', 0, fds, counts[i], w, NULL));
        PBX_CHECK_EQ(w[0], counts[i] > 16 ? PBX_E_PORT_CTRUNC : PBX_OK);
        PBX_CHECK_EQ(t_fd_count(c.pid), base);
    }
    /* A message longer than the receive buffer is refused the same way. */
    memset(big, 'F', sizeof(big));
    PBX_REQUIRE(t_send(c.client, big, sizeof(big), fds, 3));
    PBX_REQUIRE(t_recv_reply(c.client, w, NULL, 5000));
    PBX_CHECK_EQ(w[0], PBX_E_PORT_MSG_TRUNC);
    PBX_CHECK_EQ(t_fd_count(c.pid), base);
    t_close_n(fds, 64);
    t_down(&c);
}

PBX_TEST(port_peer_call_places_reply_receipt)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    uint32_t unused[T_REPLY_WORDS];
    int fds[3];
    char req[8] = {0};
    t_up(&c);
    int base = t_fd_count(c.pid);
    t_open_n(fds, 3);
    uint8_t msg[2] = {'P', 2};
    PBX_REQUIRE(t_send(c.client, msg, sizeof(msg), NULL, 0));
    PBX_REQUIRE(!t_recv_reply(c.client, unused, NULL, 100));
    PBX_REQUIRE(recv(c.peer, req, sizeof(req), 0) == 4);
    PBX_CHECK(memcmp(req, "CALL", 4) == 0);
    PBX_REQUIRE(t_send(c.peer, "OK", 2, fds, 3));
    PBX_REQUIRE(t_recv_reply(c.client, w, NULL, 5000));
    PBX_CHECK_EQ(w[0], PBX_OK);
    PBX_CHECK_EQ(w[1], 3U);
    PBX_CHECK_EQ(w[2], 2U);
    PBX_CHECK_EQ(w[3], 2U);
    PBX_CHECK(t_same_object(c.pid, T_RESV + 2, fds[0]));
    PBX_REQUIRE(t_request(&c, 'R', 2, NULL, 0, w, NULL));
    PBX_CHECK_EQ(t_fd_count(c.pid), base);
    t_close_n(fds, 3);
    t_down(&c);
}

/* Reads every queued datagram from fd without blocking; returns the count. */
static int t_drain(int fd)
{
    char buf[16];
    int n = 0;
    for (int i = 0; i < 100000 && recv(fd, buf, sizeof(buf), MSG_DONTWAIT) == 4;
         i++) {
        n++;
    }
    return n;
}

PBX_TEST(port_notify_backpressure_retries_when_writable)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS] = {0};
    char buf[16];
    int sent = 0;
    t_up(&c);
    for (int i = 0; i < 20000 && w[3] == 0U; i++) {
        PBX_REQUIRE(t_request(&c, 'N', 0, NULL, 0, w, NULL));
        sent += w[3] == 0U;
    }
    PBX_CHECK_EQ(w[0], PBX_OK);
    PBX_REQUIRE(w[3] == 1U);
    PBX_CHECK(sent > 0);
    /* Nothing is reported before the route drains. */
    PBX_CHECK(recv(c.supervisor, buf, sizeof(buf), MSG_DONTWAIT) < 0);
    int got = t_drain(c.notify);
    /* The held wake goes out once the route is writable again, and only
     * then does the supervisor hear WOKE: the wake was kept, not dropped. */
    PBX_REQUIRE(t_recv_reply(c.supervisor, w, NULL, 5000));
    got += t_drain(c.notify);
    PBX_CHECK_EQ(got, sent + 1);
    t_down(&c);
}

/* Reports whether fd hangs up (reads end of file) within ms. */
static bool t_hung_up(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    uint8_t b[8];
    return poll(&p, 1, ms) == 1 && recv(fd, b, sizeof(b), MSG_DONTWAIT) == 0;
}

/* The table holds PBX_PORT_CLIENTS_MAX connections; one more is accepted
 * and closed at once (a hang-up its caller sees at once, never a wait in
 * the backlog behind connections that may stay idle), and once an entry
 * is free a new caller is served. Nothing leaks: the descriptor count
 * returns to its baseline. */
/* Opens n public connections into conns, at most four from each fresh
 * child process (under PBX_PORT_CLIENTS_PER_PID), and pings each so the
 * port has accepted it; returns how many answered. */
static int t_fill_from_children(const t_child *c, int *conns, int n)
{
    uint32_t w[T_REPLY_WORDS];
    uint8_t f[2] = {'F', 0};
    int served = 0;
    for (int i = 0; i < n; i += 4) {
        int k = n - i < 4 ? n - i : 4;
        PBX_REQUIRE(pbx_test_sock_connect_child(c->name, conns + i, k) == k);
        for (int j = i; j < i + k; j++) {
            served += t_send(conns[j], f, sizeof(f), NULL, 0) &&
                              t_recv_reply(conns[j], w, NULL, 5000)
                          ? 1
                          : 0;
        }
    }
    return served;
}

PBX_TEST(port_connection_table_is_bounded_refuses_one_more)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    int conns[32];
    uint8_t f[2] = {'F', 0};
    t_up(&c);
    int base = t_fd_count(c.pid);
    /* The first client holds one entry; fill the other 31 from several
     * processes (none at its own bound), then one more. */
    PBX_REQUIRE(t_fill_from_children(&c, conns, 31) == 31);
    conns[31] = t_connect(&c);
    PBX_REQUIRE(conns[31] >= 0);
    PBX_CHECK(t_hung_up(conns[31], 5000));
    (void)close(conns[31]);
    (void)close(conns[0]);
    /* The port frees the entry when it sees the hang-up; a round trip on
     * the first client orders that before the next connection. */
    PBX_REQUIRE(t_request(&c, 'F', 0, NULL, 0, w, NULL));
    conns[0] = t_connect(&c);
    PBX_REQUIRE(conns[0] >= 0);
    PBX_REQUIRE(t_send(conns[0], f, sizeof(f), NULL, 0));
    PBX_CHECK(t_recv_reply(conns[0], w, NULL, 5000));
    for (int i = 0; i < 31; i++) {
        (void)close(conns[i]);
    }
    PBX_REQUIRE(t_request(&c, 'F', 0, NULL, 0, w, NULL));
    int now = -1;
    for (int i = 0; i < 200 && now != base; i++) {
        PBX_REQUIRE(t_request(&c, 'F', 0, NULL, 0, w, NULL));
        now = t_fd_count(c.pid);
    }
    PBX_CHECK_EQ(now, base);
    t_down(&c);
}

PBX_TEST(port_one_process_holds_at_most_eight_connections)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    int mine[PBX_PORT_CLIENTS_PER_PID];
    int other = -1;
    uint8_t f[2] = {'F', 0};
    t_up(&c);
    int base = t_fd_count(c.pid);
    /* This process holds the first client; seven more reach the bound. */
    for (uint32_t i = 0; i + 1U < PBX_PORT_CLIENTS_PER_PID; i++) {
        mine[i] = t_connect(&c);
        PBX_REQUIRE(mine[i] >= 0);
        PBX_REQUIRE(t_send(mine[i], f, sizeof(f), NULL, 0));
        PBX_REQUIRE(t_recv_reply(mine[i], w, NULL, 5000));
    }
    /* Its ninth is accepted and closed at once, far below the table's 32,
     * and nothing of it stays in the port. */
    int ninth = t_connect(&c);
    PBX_REQUIRE(ninth >= 0);
    PBX_CHECK(t_hung_up(ninth, 5000));
    (void)close(ninth);
    PBX_REQUIRE(t_request(&c, 'F', 0, NULL, 0, w, NULL));
    PBX_CHECK_EQ(t_fd_count(c.pid), base + (int)PBX_PORT_CLIENTS_PER_PID - 1);
    /* Another process still connects and is served. */
    PBX_REQUIRE(pbx_test_sock_connect_child(c.name, &other, 1) == 1);
    PBX_REQUIRE(t_send(other, f, sizeof(f), NULL, 0));
    PBX_CHECK(t_recv_reply(other, w, NULL, 5000));
    /* Once one of its own closes, this process connects again. */
    (void)close(mine[0]);
    PBX_REQUIRE(t_request(&c, 'F', 0, NULL, 0, w, NULL));
    mine[0] = t_connect(&c);
    PBX_REQUIRE(mine[0] >= 0);
    PBX_REQUIRE(t_send(mine[0], f, sizeof(f), NULL, 0));
    PBX_CHECK(t_recv_reply(mine[0], w, NULL, 5000));
    for (uint32_t i = 0; i + 1U < PBX_PORT_CLIENTS_PER_PID; i++) {
        (void)close(mine[i]);
    }
    (void)close(other);
    t_down(&c);
}

/* Asks the child for the identity of slot; stores it in *id and returns
 * the port's status. */
static uint32_t t_identity(t_child *c, int32_t slot, uint64_t *id)
{
    uint32_t w[T_REPLY_WORDS];
    uint8_t q[5] = {'I', 0, 0, 0, 0};
    pbx_le_put32(q + 1, (uint32_t)slot);
    PBX_REQUIRE(t_send(c->client, q, sizeof(q), NULL, 0));
    PBX_REQUIRE(t_recv_reply(c->client, w, NULL, 5000));
    *id = (uint64_t)w[1] | ((uint64_t)w[2] << 32);
    return w[0];
}

/* The inode of fd as this process sees it. */
static uint64_t t_inode(int fd)
{
    struct stat st;
    PBX_REQUIRE(fstat(fd, &st) == 0);
    return (uint64_t)st.st_ino;
}

/* An O_PATH descriptor of a socket file bound in a fresh directory: it has
 * the socket mode but is no socket. */
static int t_socket_file_path_fd(char *dir, size_t cap)
{
    struct sockaddr_un a;
    (void)snprintf(dir, cap, "/tmp/pbx-port-XXXXXX");
    PBX_REQUIRE(mkdtemp(dir) != NULL);
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    (void)snprintf(a.sun_path, sizeof(a.sun_path), "%s/s", dir);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    PBX_REQUIRE(s >= 0 && bind(s, (const struct sockaddr *)(const void *)&a,
                               sizeof(a)) == 0);
    int fd = open(a.sun_path, O_PATH | O_CLOEXEC);
    (void)close(s);
    PBX_REQUIRE(fd >= 0);
    (void)unlink(a.sun_path);
    (void)rmdir(dir);
    return fd;
}

PBX_TEST(port_identity_is_the_socket_inode_through_passed_copies)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    uint64_t id = 0;
    uint64_t copy = 0;
    int sv[2];
    int other[2];
    t_up(&c);
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, other) ==
                0);
    /* Two separately passed copies of one end: the same identity, and
     * exactly the inode this process sees for its own descriptor. */
    PBX_REQUIRE(t_request(&c, 'H', 0, &sv[1], 1, w, NULL) && w[0] == PBX_OK);
    PBX_REQUIRE(t_request(&c, 'H', 1, &sv[1], 1, w, NULL) && w[0] == PBX_OK);
    PBX_REQUIRE(t_request(&c, 'H', 2, &sv[0], 1, w, NULL) && w[0] == PBX_OK);
    PBX_REQUIRE(t_request(&c, 'H', 3, &other[1], 1, w, NULL) && w[0] == PBX_OK);
    PBX_CHECK_EQ(t_identity(&c, T_RESV, &id), PBX_OK);
    PBX_CHECK_EQ(t_identity(&c, T_RESV + 1, &copy), PBX_OK);
    PBX_CHECK(id != 0U);
    PBX_CHECK_EQ(id, copy);
    PBX_CHECK_EQ(id, t_inode(sv[1]));
    /* The other end of the same pair, and another pair: different. */
    PBX_CHECK_EQ(t_identity(&c, T_RESV + 2, &copy), PBX_OK);
    PBX_CHECK_EQ(copy, t_inode(sv[0]));
    PBX_CHECK(copy != id);
    PBX_CHECK_EQ(t_identity(&c, T_RESV + 3, &copy), PBX_OK);
    PBX_CHECK_EQ(copy, t_inode(other[1]));
    PBX_CHECK(copy != id);
    for (int i = 0; i < 4; i++) {
        PBX_REQUIRE(t_request(&c, 'R', (uint8_t)i, NULL, 0, w, NULL));
    }
    /* A copy echoed back out of the child is still the same object. */
    PBX_REQUIRE(t_request(&c, 'H', 1, &sv[1], 1, w, NULL) && w[0] == PBX_OK);
    int echoed = -1;
    PBX_REQUIRE(t_request(&c, 'E', 1, NULL, 0, w, &echoed) && echoed >= 0);
    PBX_CHECK_EQ(t_inode(echoed), id);
    (void)close(echoed);
    PBX_REQUIRE(t_request(&c, 'R', 1, NULL, 0, w, NULL));
    t_close_n(sv, 2);
    t_close_n(other, 2);
    t_down(&c);
}

PBX_TEST(port_identity_refuses_what_is_not_a_socket)
{
    t_child c;
    uint32_t w[T_REPLY_WORDS];
    uint64_t id = 1;
    char dir[64];
    t_up(&c);
    /* A placeholder, a memory object, an empty slot: no identity. */
    PBX_CHECK_EQ(t_identity(&c, T_RESV, &id), PBX_E_PORT_NO_IDENTITY);
    PBX_CHECK_EQ(id, 0U);
    PBX_CHECK_EQ(t_identity(&c, 3, &id), PBX_E_PORT_NO_IDENTITY);
    PBX_CHECK_EQ(t_identity(&c, 150, &id), PBX_E_PORT_NO_IDENTITY);
    PBX_CHECK_EQ(t_identity(&c, -1, &id), PBX_E_PORT_SLOT_RANGE);
    PBX_CHECK_EQ(t_identity(&c, 70000, &id), PBX_E_PORT_SLOT_RANGE);
    /* An O_PATH descriptor of a socket file has the socket mode and a
     * filesystem inode; it is not a socket and gets no identity. */
    int pathfd = t_socket_file_path_fd(dir, sizeof(dir));
    PBX_REQUIRE(t_request(&c, 'H', 2, &pathfd, 1, w, NULL) && w[0] == PBX_OK);
    PBX_CHECK(t_same_object(c.pid, T_RESV + 2, pathfd));
    PBX_CHECK_EQ(t_identity(&c, T_RESV + 2, &id), PBX_E_PORT_NO_IDENTITY);
    PBX_CHECK_EQ(id, 0U);
    PBX_REQUIRE(t_request(&c, 'R', 2, NULL, 0, w, NULL));
    (void)close(pathfd);
    t_down(&c);
}
