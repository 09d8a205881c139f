/*
 * skeleton.c: pbx-bench-skel, the zero-work skeleton of a recorded
 * message pattern (docs/BENCH.md, "Lifecycle beside its skeleton").
 *
 *   pbx-bench-skel PATTERN [COPIES]
 *
 * PATTERN (written by bench/bench_life.py from an strace of the real
 * stack) names the channels (socketpairs: s SEQPACKET, d DGRAM, t STREAM)
 * and, per role (process), the events it performed in order:
 *
 *   skeleton ROLES CHANNELS
 *   chan TYPE                     one line per channel, in index order
 *   ev ROLE OP CHAN END SIZE NFDS  one line per event
 *
 * OP is S (send SIZE bytes carrying NFDS descriptors on end END of CHAN),
 * R (receive one message, expecting NFDS descriptors), H (receive the
 * hang-up: the peer end was closed), W (one epoll_wait over the role's
 * ends), C (close end END of CHAN, or with CHAN -1 a received descriptor,
 * or nothing). Every role is a process that does only that: no decoding,
 * no tables, no files. COPIES independent copies of the whole pattern run
 * at once (the concurrency rows). The parent starts every process, lets
 * them go together, and prints once all are done:
 *
 *   skel copies=K ns=T sends=S recvs=R fds=F hangups=H waits=W closes=C
 *   skel_cpu cpu_ns_role0=N0 cpu_ns_role1=N1 ...
 *
 * with the counts summed over the roles of one copy (the bench compares
 * them with the recorded run's and fails when they differ). A receive that
 * finds something else than the pattern says (data for a hang-up, the
 * wrong descriptor count) is not counted, so the comparison fails. A
 * receive that finds nothing within SK_WAIT_MS ends its role's replay, and
 * the run exits 1 (a broken pattern fails, it never hangs).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Bounds on the pattern (the recorder stays well inside them). */
#define SK_EVENTS_MAX 200000
#define SK_CHANS_MAX  4096
#define SK_ROLES_MAX  16
#define SK_FDS_MAX    8
#define SK_COPIES_MAX 64
#define SK_MSG_MAX    65536
/* A wait or a receive that sees nothing for this long means the pattern is
 * broken: the role stops replaying, so its counts fall short and the bench
 * fails with the comparison instead of hanging. */
#define SK_WAIT_MS 10000

/* One event of one role. */
struct sk_ev {
    int role;
    char op;
    int chan;
    int end;
    int size;
    int nfds;
};

/* What one role did, written to the parent when it is done. */
struct sk_count {
    long sends, recvs, fds, hangups, waits, closes;
    /* The role, and the CPU time its replay used. */
    long role, cpu_ns;
};

static struct sk_ev sk_evs[SK_EVENTS_MAX];
static int sk_nevs;
static int sk_types[SK_CHANS_MAX];
static int sk_nchans;
static int sk_nroles;
/* The parent's pipe ends, which every role closes (so that the go pipe's
 * end-of-file reaches the roles when the parent closes its end). */
static int sk_parent_fds[3];

/* Parses n integers separated by spaces from s into out; false when
 * one is missing or malformed. */
static bool sk_ints(const char *s, long *out, int n)
{
    for (int i = 0; i < n; i++) {
        char *end = NULL;
        out[i] = strtol(s, &end, 10);
        if (end == s)
            return false;
        s = end;
    }
    return true;
}

/* Parses one "ev ROLE OP CHAN END SIZE NFDS" line into *e; false when it
 * is malformed or out of range. */
static bool sk_event(const char *line, struct sk_ev *e)
{
    long v[4];
    char *end = NULL;
    long role = strtol(line + 3, &end, 10);
    if (strncmp(line, "ev ", 3) != 0 || end == line + 3 || end[0] != ' ' ||
        end[1] == '\0' || !sk_ints(end + 2, v, 4))
        return false;
    e->op = end[1];
    e->role = (int)role;
    e->chan = (int)v[0];
    e->end = (int)v[1];
    e->size = (int)v[2];
    e->nfds = (int)v[3];
    return role >= 0 && role < sk_nroles && v[0] >= -1 && v[0] < sk_nchans &&
           v[1] >= 0 && v[1] <= 1 && v[2] >= 0 && v[2] <= SK_MSG_MAX &&
           v[3] >= 0 && v[3] <= SK_FDS_MAX;
}

/* Reads the pattern file's lines; false when one is malformed. */
static bool sk_read(FILE *f)
{
    char line[256];
    long head[2];
    if (fgets(line, sizeof line, f) == NULL ||
        strncmp(line, "skeleton ", 9) != 0 || !sk_ints(line + 9, head, 2) ||
        head[0] < 1 || head[0] > SK_ROLES_MAX || head[1] < 0 ||
        head[1] > SK_CHANS_MAX)
        return false;
    sk_nroles = (int)head[0];
    sk_nchans = (int)head[1];
    for (int i = 0; i < sk_nchans; i++) {
        if (fgets(line, sizeof line, f) == NULL ||
            strncmp(line, "chan ", 5) != 0)
            return false;
        sk_types[i] = line[5] == 'd'   ? SOCK_DGRAM
                      : line[5] == 't' ? SOCK_STREAM
                                       : SOCK_SEQPACKET;
    }
    while (sk_nevs < SK_EVENTS_MAX && fgets(line, sizeof line, f) != NULL) {
        if (!sk_event(line, &sk_evs[sk_nevs]))
            return false;
        sk_nevs++;
    }
    return true;
}

/* Reads the pattern file; false (with a message) when it is malformed. */
static bool sk_load(const char *path)
{
    FILE *f = fopen(path, "r");
    bool ok = f != NULL && sk_read(f);
    if (f != NULL)
        (void)fclose(f);
    if (!ok)
        (void)fprintf(stderr,
                      "skel: %s: malformed pattern (line %d of "
                      "events)\n",
                      path, sk_nevs + 1);
    return ok;
}

/* Sends one event's message: SIZE zero bytes and NFDS copies of fd. */
static bool sk_send(int sock, const struct sk_ev *e, int fd)
{
    /* The bytes sent: zeros, as no receiver reads them. */
    // cppcheck-suppress unassignedVariable
    static uint8_t buf[SK_MSG_MAX];
    union {
        struct cmsghdr h;
        uint8_t b[CMSG_SPACE(sizeof(int) * SK_FDS_MAX)];
    } cm;
    struct iovec iov = {buf, (size_t)e->size};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (e->nfds > 0) {
        int fds[SK_FDS_MAX];
        for (int i = 0; i < e->nfds; i++)
            fds[i] = fd;
        memset(&cm, 0, sizeof cm);
        m.msg_control = cm.b;
        m.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)e->nfds);
        cm.h.cmsg_level = SOL_SOCKET;
        cm.h.cmsg_type = SCM_RIGHTS;
        cm.h.cmsg_len = CMSG_LEN(sizeof(int) * (size_t)e->nfds);
        memcpy(CMSG_DATA(&cm.h), fds, sizeof(int) * (size_t)e->nfds);
    }
    return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)e->size;
}

/*
 * Receives one message into the held-descriptor stack; returns the bytes
 * read (0 at a hang-up, -1 on error) and the descriptor count in *nfds.
 */
static ssize_t sk_recv(int sock, const struct sk_ev *e, int *held, int *nheld,
                       int *nfds)
{
    static uint8_t buf[SK_MSG_MAX];
    union {
        struct cmsghdr h;
        uint8_t b[CMSG_SPACE(sizeof(int) * SK_FDS_MAX)];
    } cm;
    struct iovec iov = {buf, sizeof buf};
    struct msghdr m = {.msg_iov = &iov,
                       .msg_iovlen = 1,
                       .msg_control = cm.b,
                       .msg_controllen = sizeof cm.b};
    int flags = 0;
    if (sk_types[e->chan] == SOCK_STREAM && e->size > 0) {
        iov.iov_len = (size_t)e->size;
        flags = MSG_WAITALL;
    }
    ssize_t n = recvmsg(sock, &m, flags);
    *nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c != NULL;
         c = CMSG_NXTHDR(&m, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
        for (int i = 0; i < k && i < SK_FDS_MAX; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + sizeof(int) * (size_t)i, sizeof fd);
            if (*nheld < SK_FDS_MAX * 64)
                held[(*nheld)++] = fd;
            else
                close(fd);
            (*nfds)++;
        }
    }
    return n;
}

/* One event of role; counts what happened as the pattern says. False when
 * a receive found nothing within SK_WAIT_MS (the pattern cannot go on). */
static bool sk_step(const struct sk_ev *e, int (*ends)[2], int ep, int fd,
                    int *held, int *nheld, struct sk_count *c)
{
    int sock = e->chan >= 0 ? ends[e->chan][e->end] : -1;
    int nfds = 0;
    ssize_t n = 0;
    struct epoll_event evs[16];
    switch (e->op) {
    case 'S':
        if (sk_send(sock, e, fd)) {
            c->sends++;
            c->fds += e->nfds;
        }
        break;
    case 'R':
        n = sk_recv(sock, e, held, nheld, &nfds);
        if (n >= 0 && nfds == e->nfds)
            c->recvs++;
        break;
    case 'H':
        n = sk_recv(sock, e, held, nheld, &nfds);
        if (n == 0)
            c->hangups++;
        break;
    case 'W':
        if (epoll_wait(ep, evs, 16, SK_WAIT_MS) > 0)
            c->waits++;
        break;
    default: /* 'C' */
        if (sock >= 0) {
            close(sock);
            ends[e->chan][e->end] = -1;
        } else if (*nheld > 0) {
            close(held[--(*nheld)]);
        } else {
            close(-1);
        }
        c->closes++;
        break;
    }
    return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
}

/* The time of clock in nanoseconds. */
static long sk_now_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1000000000L + t.tv_nsec;
}

/* The life of one role's process: keep its own ends, wait for go, replay. */
static void sk_role(int role, int (*ends)[2], int ready, int go, int done)
{
    static int held[SK_FDS_MAX * 64];
    int nheld = 0;
    struct sk_count c = {0};
    char own[SK_CHANS_MAX][2] = {{0}};
    int ep = epoll_create1(EPOLL_CLOEXEC);
    int fd = dup(STDIN_FILENO);
    for (int i = 0; i < 3; i++)
        close(sk_parent_fds[i]);
    for (int i = 0; i < sk_nevs; i++)
        if (sk_evs[i].role == role && sk_evs[i].chan >= 0)
            own[sk_evs[i].chan][sk_evs[i].end] = 1;
    for (int ch = 0; ch < sk_nchans; ch++)
        for (int k = 0; k < 2; k++) {
            if (!own[ch][k]) {
                close(ends[ch][k]);
                ends[ch][k] = -1;
                continue;
            }
            struct epoll_event ev = {.events = EPOLLIN,
                                     .data.u32 = (uint32_t)ch};
            struct timeval tv = {SK_WAIT_MS / 1000, 0};
            epoll_ctl(ep, EPOLL_CTL_ADD, ends[ch][k], &ev);
            (void)setsockopt(ends[ch][k], SOL_SOCKET, SO_RCVTIMEO, &tv,
                             sizeof tv);
        }
    char b = 'r';
    if (write(ready, &b, 1) != 1 || read(go, &b, 1) != 0)
        _exit(1);
    long cpu0 = sk_now_ns(CLOCK_PROCESS_CPUTIME_ID);
    int status = 0;
    for (int i = 0; i < sk_nevs && status == 0; i++)
        if (sk_evs[i].role == role &&
            !sk_step(&sk_evs[i], ends, ep, fd, held, &nheld, &c)) {
            (void)fprintf(stderr,
                          "skel: role %d: event %d received nothing "
                          "in %d ms\n",
                          role, i, SK_WAIT_MS);
            status = 3;
        }
    c.role = role;
    c.cpu_ns = sk_now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    if (write(done, &c, sizeof c) != (ssize_t)sizeof c)
        _exit(1);
    _exit(status);
}

/* Starts one copy: its channels, then one process per role. */
static bool sk_copy(int ready, int go, int done)
{
    static int ends[SK_CHANS_MAX][2];
    for (int ch = 0; ch < sk_nchans; ch++)
        if (socketpair(AF_UNIX, sk_types[ch] | SOCK_CLOEXEC, 0, ends[ch]) !=
            0) {
            (void)fprintf(stderr, "skel: socketpair failed\n");
            return false;
        }
    for (int r = 0; r < sk_nroles; r++) {
        pid_t pid = fork();
        if (pid < 0)
            return false;
        if (pid == 0)
            sk_role(r, ends, ready, go, done);
    }
    for (int ch = 0; ch < sk_nchans; ch++) {
        close(ends[ch][0]);
        close(ends[ch][1]);
    }
    return true;
}

int main(int argc, char **argv)
{
    long copies = argc > 2 ? strtol(argv[2], NULL, 10) : 1;
    int ready[2], go[2], done[2];
    if (argc < 2 || copies < 1 || copies > SK_COPIES_MAX) {
        (void)fprintf(stderr,
                      "usage: pbx-bench-skel PATTERN [COPIES (1..%d)]\n",
                      SK_COPIES_MAX);
        return 2;
    }
    if (!sk_load(argv[1]) || pipe(ready) != 0 || pipe(go) != 0 ||
        pipe(done) != 0)
        return 1;
    sk_parent_fds[0] = ready[0];
    sk_parent_fds[1] = go[1];
    sk_parent_fds[2] = done[0];
    for (long k = 0; k < copies; k++)
        if (!sk_copy(ready[1], go[0], done[1]))
            return 1;
    close(go[0]);
    close(done[1]);
    char b;
    for (long i = 0; i < copies * sk_nroles; i++)
        if (read(ready[0], &b, 1) != 1)
            return 1;
    long t0 = sk_now_ns(CLOCK_MONOTONIC);
    close(go[1]);
    struct sk_count sum = {0}, c;
    long cpu[SK_ROLES_MAX] = {0};
    for (long i = 0; i < copies * sk_nroles; i++) {
        if (read(done[0], &c, sizeof c) != (ssize_t)sizeof c)
            return 1;
        sum.sends += c.sends;
        sum.recvs += c.recvs;
        sum.fds += c.fds;
        sum.hangups += c.hangups;
        sum.waits += c.waits;
        sum.closes += c.closes;
        if (c.role >= 0 && c.role < sk_nroles)
            cpu[c.role] += c.cpu_ns;
    }
    long t1 = sk_now_ns(CLOCK_MONOTONIC);
    /* Reap every role (each has written its counts, so each is ending); a
     * role that gave up on a receive fails the run. */
    int failed = 0;
    for (long i = 0; i < copies * sk_nroles; i++) {
        int st = 0;
        failed += wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    (void)printf(
        "skel copies=%ld ns=%ld sends=%ld recvs=%ld fds=%ld hangups=%ld "
        "waits=%ld closes=%ld\n",
        copies, t1 - t0, sum.sends / copies, sum.recvs / copies,
        sum.fds / copies, sum.hangups / copies, sum.waits / copies,
        sum.closes / copies);
    for (int r = 0; r < sk_nroles; r++)
        (void)printf("%scpu_ns_role%d=%ld", r == 0 ? "skel_cpu " : " ", r,
                     cpu[r] / copies);
    (void)printf("\n");
    return failed == 0 ? 0 : 1;
}
