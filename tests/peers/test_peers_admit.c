/*
 * test_peers_admit.c: admission at the stack's shared sockets (issue 20,
 * item 3). The shared ancestry walk and query rule on a socketpair (self,
 * parent, init; the per-process bound; the options); ttyd's and procd's
 * query sockets with --jobs-below: a job (a process below the named pid,
 * here a child of a stand-in for launchd) is answered one "refused:" line
 * and logged once, a process outside is served; ttyd's default bound of 2
 * readers per process (a third is refused, another process is served);
 * launchd's --max-per-pid on its control socket.
 */
#define _GNU_SOURCE

#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/common/pbx_peer_origin.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_tty.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* Everything fd says until its end (at most cap - 1 bytes, 3 s per
 * read), NUL-terminated; -1 when the end did not come. */
static long ta_read_all(int fd, char *buf, size_t cap)
{
    size_t got = 0;
    long result = -1;
    for (int i = 0; i < 100000 && got + 1U < cap; i++) {
        if (!tp_readable(fd, 3000)) {
            break;
        }
        ssize_t r = read(fd, buf + got, cap - 1U - got);
        if (r == 0) {
            result = (long)got;
            break;
        }
        if (r < 0 && errno != EINTR) {
            break;
        }
        got += r > 0 ? (size_t)r : 0U;
    }
    buf[got] = '\0';
    return result;
}

/* Connects to the stream socket at path and reads it to its end. */
static long ta_query(const char *path, char *buf, size_t cap)
{
    int fd = pbx_peer_io_connect(path, SOCK_STREAM);
    if (fd < 0) {
        return -1;
    }
    long n = ta_read_all(fd, buf, cap);
    (void)close(fd);
    return n;
}

/* A stand-in for launchd: a child of the test that, told by one byte on
 * go, forks a "job" below itself which connects to path (stream or, with
 * seq, SEQPACKET) and writes back over out its pid, then what it read
 * to the end (stream), or '1'/'0' for a connection still open (or not)
 * after 300 ms (SEQPACKET). */
typedef struct ta_boss {
    pid_t pid;
    int go;
    int out;
} ta_boss;

/* The job's part (in the grandchild); never returns. */
static void ta_job(const char *path, bool seq, int out)
{
    static char text[PBX_PEER_TTY_VIEWS_MAX * 256U];
    pid_t me = getpid();
    (void)!write(out, &me, sizeof(me));
    if (seq) {
        int fd = pbx_peer_io_connect(path, SOCK_SEQPACKET);
        char c = fd >= 0 && !tp_hung_up(fd, 300) ? '1' : '0';
        (void)!write(out, &c, 1);
        _exit(0);
    }
    long n = ta_query(path, text, sizeof(text));
    if (n > 0) {
        (void)!write(out, text, (size_t)n);
    }
    _exit(n < 0 ? 1 : 0);
}

static void ta_boss_start(ta_boss *b, const char *path, bool seq)
{
    int go[2];
    int out[2];
    PBX_REQUIRE(pipe2(go, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0);
    b->pid = fork();
    PBX_REQUIRE(b->pid >= 0);
    if (b->pid == 0) {
        (void)close(go[1]);
        (void)close(out[0]);
        char c = 0;
        if (read(go[0], &c, 1) != 1) {
            _exit(1);
        }
        pid_t j = fork();
        if (j == 0) {
            ta_job(path, seq, out[1]);
        }
        (void)close(out[1]);
        (void)waitpid(j, NULL, 0);
        _exit(0);
    }
    (void)close(go[0]);
    (void)close(out[1]);
    b->go = go[1];
    b->out = out[0];
}

/* Lets b's job run; returns what it wrote after its pid (in *job). */
static long ta_boss_run(ta_boss *b, pid_t *job, char *buf, size_t cap)
{
    PBX_REQUIRE(write(b->go, "g", 1) == 1);
    static char all[PBX_PEER_TTY_VIEWS_MAX * 256U + 16U];
    long n = ta_read_all(b->out, all, sizeof(all));
    (void)waitpid(b->pid, NULL, 0);
    (void)close(b->go);
    (void)close(b->out);
    PBX_REQUIRE(n >= (long)sizeof(pid_t));
    memcpy(job, all, sizeof(pid_t));
    size_t len = (size_t)n - sizeof(pid_t);
    PBX_REQUIRE(len < cap);
    memcpy(buf, all + sizeof(pid_t), len);
    buf[len] = '\0';
    return (long)len;
}

/* Spawns pbx-name with args and its log at log (a fresh directory). */
static pid_t ta_spawn(const char *name, const char *const *args,
                      const int *keep, size_t nkeep, char *log, size_t cap)
{
    const char *dir = tp_tmpdir();
    (void)snprintf(log, cap, "%s/pbx-peer-%s.log", dir, name);
    static char old[512];
    const char *t = getenv("TMPDIR");
    (void)snprintf(old, sizeof(old), "%s", t != NULL ? t : "");
    PBX_REQUIRE(setenv("TMPDIR", dir, 1) == 0);
    pid_t pid = tp_spawn(name, args, keep, nkeep, -1);
    if (t != NULL) {
        (void)setenv("TMPDIR", old, 1);
    } else {
        (void)unsetenv("TMPDIR");
    }
    PBX_REQUIRE(pid > 0);
    return pid;
}

/* How often what occurs in the file at path. */
static size_t ta_count(const char *path, const char *what)
{
    static char text[65536];
    if (tp_read_file(path, text, sizeof(text)) <= 0) {
        return 0;
    }
    size_t n = 0;
    for (const char *p = strstr(text, what); p != NULL && n < 1000U;
         p = strstr(p + 1, what)) {
        n++;
    }
    return n;
}

/* Whether the file at path holds what within 3 s. */
static bool ta_logged(const char *path, const char *what)
{
    for (int i = 0; i < 300; i++) {
        if (ta_count(path, what) != 0U) {
            return true;
        }
        tp_sleep_ms(10);
    }
    return false;
}

PBX_TEST(peers_admit_query_judges_origin_and_bound)
{
    pid_t me = getpid();
    /* The walk: pid 1 is above everyone; nothing is above pid 1. */
    PBX_CHECK_EQ(pbx_peer_origin_walk(me, 1), PBX_PEER_ORIGIN_BELOW);
    PBX_CHECK_EQ(pbx_peer_origin_walk(me, getppid()), PBX_PEER_ORIGIN_BELOW);
    PBX_CHECK_EQ(pbx_peer_origin_walk(me, me), PBX_PEER_ORIGIN_SELF);
    PBX_CHECK_EQ(pbx_peer_origin_walk(getppid(), me), PBX_PEER_ORIGIN_OUTSIDE);
    PBX_CHECK_EQ(pbx_peer_origin_walk(0, me), PBX_PEER_ORIGIN_UNKNOWN);
    /* A socketpair's peer is this process. */
    struct {
        pid_t below;
        pid_t held[2];
        bool admitted;
        const char *why;
    } cases[] = {
        {0, {0, 0}, true, NULL},
        {0, {me, 0}, true, NULL},
        {0, {me, me}, false, "already holds 2 connection(s) here"},
        {me, {0, 0}, true, NULL},
        {getppid(), {0, 0}, false, "is a launched job (below pid"},
    };
    pbx_peer_admit a = {0, 2};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int sv[2];
        PBX_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) ==
                    0);
        a.jobs_below = cases[i].below;
        pid_t got = pbx_peer_admit_query(sv[0], &a, cases[i].held, 2, "test");
        char line[PBX_PEER_ADMIT_LINE_MAX + 1U];
        long n = ta_read_all(sv[1], line, sizeof(line));
        if (cases[i].admitted) {
            PBX_CHECK_EQ(got, me);
            (void)close(sv[0]);
        } else {
            PBX_CHECK_EQ(got, 0);
            PBX_CHECK(n > 0 && strncmp(line, "refused: pid ", 13) == 0 &&
                      strstr(line, cases[i].why) != NULL &&
                      line[n - 1] == '\n');
        }
        (void)close(sv[1]);
    }
    /* The options: a pid above 1, a bound of 1..max; others untouched. */
    a = (pbx_peer_admit){0, 2};
    PBX_CHECK_EQ(pbx_peer_admit_option(&a, "--jobs-below", "1", 8), -1);
    PBX_CHECK_EQ(pbx_peer_admit_option(&a, "--jobs-below", "x", 8), -1);
    PBX_CHECK_EQ(pbx_peer_admit_option(&a, "--max-per-pid", "0", 8), -1);
    PBX_CHECK_EQ(pbx_peer_admit_option(&a, "--max-per-pid", "9", 8), -1);
    PBX_CHECK_EQ(pbx_peer_admit_option(&a, "--query", "9", 8), 0);
    PBX_CHECK(a.jobs_below == 0 && a.per_pid == 2U);
    PBX_CHECK_EQ(pbx_peer_admit_option(&a, "--jobs-below", "42", 8), 1);
    PBX_CHECK_EQ(pbx_peer_admit_option(&a, "--max-per-pid", "8", 8), 1);
    PBX_CHECK(a.jobs_below == 42 && a.per_pid == 8U);
}

/* Writes a policy file in a fresh directory; its path into pol. */
static void ta_policy(char *pol, size_t cap)
{
    (void)snprintf(pol, cap, "%s/policy", tp_tmpdir());
    static const char rules[] = "* * * * exceptional prompt\n";
    int pf = open(pol, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(pf >= 0);
    PBX_CHECK(write(pf, rules, sizeof(rules) - 1U) ==
              (ssize_t)(sizeof(rules) - 1U));
    (void)close(pf);
}

/* Publishes count ACTIVE rows (grants 1.2 .. count.2) on route. */
static void ta_views(int route, uint32_t count)
{
    static pbx_ipc_view v;
    static pbx_peer_msg m;
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    for (uint32_t i = 1; i <= count; i++) {
        memset(&v, 0, sizeof(v));
        v.kind = PBX_IPC_VIEW_ACTIVE;
        v.grant.index = i;
        v.grant.gen = 2;
        v.ctx.session = 1;
        v.ctx.job_id = 11;
        v.ctx.job_gen = 2;
        v.ctx.realm = 3;
        v.ctx.operation = PBX_IPC_OPERATION_READ;
        v.ctx.object_class = PBX_IPC_CLASS_FILE;
        v.ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
        v.ctx.mode = PBX_IPC_MODE_INSTALL;
        v.ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
        v.ctx.entry.len = 8;
        memcpy(v.ctx.entry.bytes, "/bin/cat", 8);
        v.object.id = 1000U + i;
        v.object.gen = 1;
        v.target.process_id = 7;
        v.target.process_gen = 1;
        v.target.slot = 40;
        v.installed_slot = 40;
        size_t n = 0;
        PBX_CHECK_EQ(pbx_ipc_view_encode(v.grant, &v, buf, sizeof(buf), &n),
                     PBX_OK);
        PBX_REQUIRE(pbx_peer_io_call(route, buf, n, -1, &m, 3000) == 0);
        PBX_REQUIRE(m.frame.status == 0U);
    }
}

/* Starts ttyd (terminal /dev/null) with its query socket at views, extra
 * options (NULL-terminated), its route in *route and its log at log. */
static pid_t ta_ttyd(const char *views, const char *const *extra, int *route,
                     char *log, size_t cap)
{
    char pol[512];
    ta_policy(pol, sizeof(pol));
    int rp[2];
    PBX_REQUIRE(tp_seqpair(rp));
    char rarg[16];
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[TP_ARGS_MAX] = {"--policy",   pol,  "--tty",   "/dev/null",
                                     "--route-fd", rarg, "--query", views};
    size_t n = 8;
    for (size_t i = 0; extra[i] != NULL && n + 1U < TP_ARGS_MAX; i++) {
        args[n++] = extra[i];
    }
    args[n] = NULL;
    pid_t pid = ta_spawn("ttyd", args, &rp[1], 1, log, cap);
    (void)close(rp[1]);
    *route = rp[0];
    return pid;
}

/* The refusal a job of boss gets: "refused: pid J is a launched job
 * (below pid B)". */
static bool ta_job_refused(const char *text, pid_t job, pid_t boss)
{
    char want[128];
    (void)snprintf(want, sizeof(want),
                   "refused: pid %d is a launched job (below pid %d): ",
                   (int)job, (int)boss);
    return strncmp(text, want, strlen(want)) == 0 &&
           strchr(text, '\n') == text + strlen(text) - 1U;
}

PBX_TEST(peers_ttyd_query_refuses_launched_jobs)
{
    char views[512];
    char log[600];
    (void)snprintf(views, sizeof(views), "%s/ttyd.sock", tp_tmpdir());
    ta_boss boss;
    ta_boss_start(&boss, views, false);
    char below[16];
    (void)snprintf(below, sizeof(below), "%d", (int)boss.pid);
    const char *extra[] = {"--jobs-below", below, NULL};
    int route = -1;
    pid_t pid = ta_ttyd(views, extra, &route, log, sizeof(log));
    ta_views(route, 1);
    /* This process is not below the boss: it is served the row. */
    static char out[4096];
    PBX_CHECK(ta_query(views, out, sizeof(out)) > 0);
    static const char row[] = "grant 1.2 read file object 1001.1 ";
    PBX_CHECK(strncmp(out, row, sizeof(row) - 1U) == 0);
    /* The boss's job is refused with one line naming it, and no row. */
    pid_t job = 0;
    PBX_CHECK(ta_boss_run(&boss, &job, out, sizeof(out)) > 0);
    PBX_CHECK(ta_job_refused(out, job, boss.pid));
    PBX_CHECK(strstr(out, "grant ") == NULL);
    char line[160];
    (void)snprintf(line, sizeof(line),
                   "ttyd: query connection refused: pid %d is a launched job",
                   (int)job);
    PBX_CHECK(ta_logged(log, line));
    PBX_CHECK_EQ(ta_count(log, "query connection refused"), 1U);
    (void)close(route);
    (void)tp_stop(pid);
}

PBX_TEST(peers_procd_query_refuses_launched_jobs)
{
    char inst[512];
    char log[600];
    (void)snprintf(inst, sizeof(inst), "%s/procd.sock", tp_tmpdir());
    ta_boss boss;
    ta_boss_start(&boss, inst, false);
    char below[16];
    (void)snprintf(below, sizeof(below), "%d", (int)boss.pid);
    const char *args[] = {"--stage",      "7:2", "--query", inst,
                          "--jobs-below", below, NULL};
    pid_t pid = ta_spawn("procd", args, NULL, 0, log, sizeof(log));
    /* This process is served: no install, so nothing, then the end. */
    static char out[4096];
    PBX_CHECK_EQ(ta_query(inst, out, sizeof(out)), 0L);
    pid_t job = 0;
    PBX_CHECK(ta_boss_run(&boss, &job, out, sizeof(out)) > 0);
    PBX_CHECK(ta_job_refused(out, job, boss.pid));
    char line[160];
    (void)snprintf(line, sizeof(line),
                   "procd: query connection refused: pid %d is a launched job",
                   (int)job);
    PBX_CHECK(ta_logged(log, line));
    PBX_CHECK_EQ(ta_count(log, "query connection refused"), 1U);
    (void)tp_stop(pid);
}

PBX_TEST(peers_ttyd_query_bounds_readers_per_process)
{
    char views[512];
    char log[600];
    (void)snprintf(views, sizeof(views), "%s/ttyd.sock", tp_tmpdir());
    ta_boss other;
    ta_boss_start(&other, views, false);
    const char *extra[] = {NULL};
    int route = -1;
    pid_t pid = ta_ttyd(views, extra, &route, log, sizeof(log));
    /* More rows than a socket buffer takes: a reader that reads nothing
     * holds its entry (up to its 2 s deadline). */
    ta_views(route, PBX_PEER_TTY_VIEWS_MAX);
    int stuck[2];
    for (size_t i = 0; i < 2U; i++) {
        stuck[i] = pbx_peer_io_connect(views, SOCK_STREAM);
        PBX_REQUIRE(stuck[i] >= 0);
        PBX_REQUIRE(tp_readable(stuck[i], 3000));
    }
    /* The default bound is 2 per process: a third is refused. */
    static char out[PBX_PEER_TTY_VIEWS_MAX * 256U];
    PBX_CHECK(ta_query(views, out, sizeof(out)) > 0);
    char want[128];
    (void)snprintf(want, sizeof(want),
                   "refused: pid %d already holds 2 connection(s) here (at "
                   "most 2 per process)\n",
                   (int)getpid());
    PBX_CHECK(strcmp(out, want) == 0);
    /* Another process is served every row meanwhile. */
    pid_t job = 0;
    PBX_CHECK(ta_boss_run(&other, &job, out, sizeof(out)) > 0);
    size_t rows = 0;
    for (const char *c = strchr(out, '\n'); c != NULL;
         c = strchr(c + 1, '\n')) {
        rows++;
    }
    PBX_CHECK_EQ(rows, (size_t)PBX_PEER_TTY_VIEWS_MAX);
    PBX_CHECK(ta_logged(log, "ttyd: query connection refused: pid "));
    PBX_CHECK_EQ(ta_count(log, "query connection refused"), 1U);
    pbx_peer_io_close_all(stuck, 2);
    (void)close(route);
    (void)tp_stop(pid);
}

PBX_TEST(peers_launchd_bounds_control_connections_per_process)
{
    const char *dir = tp_tmpdir();
    char ctl[512];
    char wake[512];
    char log[600];
    (void)snprintf(ctl, sizeof(ctl), "%s/launchd.sock", dir);
    (void)snprintf(wake, sizeof(wake), "%s/wake.sock", dir);
    ta_boss other;
    ta_boss_start(&other, ctl, true);
    const char *args[] = {"serve", "--wake",        wake, "--control",
                          ctl,     "--max-per-pid", "2",  NULL};
    pid_t pid = ta_spawn("launchd", args, NULL, 0, log, sizeof(log));
    int c[3];
    for (size_t i = 0; i < 3U; i++) {
        c[i] = pbx_peer_io_connect(ctl, SOCK_SEQPACKET);
        PBX_REQUIRE(c[i] >= 0);
    }
    /* The third of this process is refused and logged; two stay. */
    PBX_CHECK(tp_hung_up(c[2], 3000));
    char line[160];
    (void)snprintf(line, sizeof(line),
                   "launchd: control connection refused: pid %d already "
                   "holds 2 (--max-per-pid 2)",
                   (int)getpid());
    PBX_CHECK(ta_logged(log, line));
    PBX_CHECK(!tp_hung_up(c[0], 100) && !tp_hung_up(c[1], 10));
    /* Another process's connection stays. */
    pid_t job = 0;
    char said[8];
    PBX_CHECK_EQ(ta_boss_run(&other, &job, said, sizeof(said)), 1L);
    PBX_CHECK_EQ(said[0], '1');
    PBX_CHECK_EQ(ta_count(log, "control connection refused"), 1U);
    pbx_peer_io_close_all(c, 3);
    (void)tp_stop(pid);
}
