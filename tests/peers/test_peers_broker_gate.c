/*
 * test_peers_broker_gate.c: what the open broker checks before it asks
 * (peers/broker/broker_notify.c, broker_mount.c; docs/HOST.md "Brokered
 * opens"): the prompt budget charged only for an open a person answered,
 * the refusal before asking when vfsd's FUSE mount is not mounted, the
 * mount table read exactly, and the fail-closed refusal of an open whose
 * memory the broker may not read (Yama's ptrace_scope, by fault
 * injection). A child installs the open family's notification filter,
 * hands its listener over and opens the paths it is given; this process
 * serves them with a fake ask.
 */
#define _GNU_SOURCE
#include "../../peers/broker/broker.h"
#include "../../peers/lib/pbx_peer_seccomp.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The most opens one child makes. */
#define TG_OPENS 8U

/* One gate test's child, broker and fake ask. */
typedef struct tg_run {
    char dir[64];
    const char *paths[TG_OPENS];
    uint32_t nopen;
    int results[TG_OPENS];
    /* The fake ask: answers approved with /dev/null; persons[i] says
     * whether the i-th answer came from a person. */
    bool persons[TG_OPENS];
    uint32_t asks;
    pbx_broker b;
} tg_run;

/* The fake ask (broker.h's pbx_broker_ask_fn). */
static int tg_ask(void *ctx, const pbx_broker_ask *q, int *fd, bool *person)
{
    tg_run *r = ctx;
    (void)q;
    *person = r->persons[r->asks % TG_OPENS];
    r->asks++;
    *fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    return *fd >= 0 ? 0 : EIO;
}

/* The child: the notify filter, its listener on sock, then r's opens,
 * each result (0 or errno) to wfd. Never returns. */
static void tg_child(const tg_run *r, int sock, int wfd)
{
    /* A bound, not a timing: a child left in an open nobody answers (a
     * notification dropped unanswered) dies, so its test fails (no
     * results) instead of hanging. */
    (void)alarm(30U);
    static pbx_peer_seccomp_filter f;
    pbx_peer_seccomp_build_notify(&f);
    struct sock_fprog fp = {f.len, f.insns};
    (void)prctl(PR_SET_NO_NEW_PRIVS, 1UL, 0UL, 0UL, 0UL);
    long l = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                     SECCOMP_FILTER_FLAG_NEW_LISTENER, &fp);
    if (l < 0 || !tp_send_fd(sock, (int)l)) {
        _exit(3);
    }
    (void)close((int)l);
    (void)close(sock);
    int res[TG_OPENS] = {0};
    for (uint32_t i = 0; i < r->nopen && i < TG_OPENS; i++) {
        int fd = open(r->paths[i], O_RDONLY);
        res[i] = fd >= 0 ? 0 : errno;
        if (fd >= 0) {
            (void)close(fd);
        }
    }
    (void)!write(wfd, res, sizeof(res));
    _exit(0);
}

/* Makes r->dir with scope/a.txt in it. */
static bool tg_setup(tg_run *r)
{
    (void)snprintf(r->dir, sizeof(r->dir), "/tmp/pbx-broker-gate-XXXXXX");
    if (mkdtemp(r->dir) == NULL) {
        return false;
    }
    char p[128];
    (void)snprintf(p, sizeof(p), "%s/scope", r->dir);
    if (mkdir(p, 0700) != 0) {
        return false;
    }
    (void)snprintf(p, sizeof(p), "%s/scope/a.txt", r->dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        return false;
    }
    (void)close(fd);
    return true;
}

/* Removes what tg_setup made. */
static void tg_teardown(const tg_run *r)
{
    char p[128];
    (void)snprintf(p, sizeof(p), "%s/scope/a.txt", r->dir);
    (void)unlink(p);
    (void)snprintf(p, sizeof(p), "%s/scope", r->dir);
    (void)rmdir(p);
    (void)rmdir(r->dir);
}

/* Starts the child, fills r->b for its listener (burst, a period of an
 * hour: no refill during the test); setup(r) then adjusts the broker;
 * serves until the child ends and reads its results. False when a step
 * fails. */
static bool tg_serve(tg_run *r, uint32_t burst, void (*setup)(tg_run *))
{
    int sv[2];
    int pp[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0 || pipe(pp) != 0) {
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        tg_child(r, sv[1], pp[1]);
    }
    (void)close(sv[1]);
    (void)close(pp[1]);
    int lfd = pid > 0 ? tp_recv_fd(sv[0]) : -1;
    (void)close(sv[0]);
    static char sreal[PBX_BROKER_PATH_MAX];
    static char rreal[PBX_BROKER_PATH_MAX];
    char scope[128];
    (void)snprintf(scope, sizeof(scope), "%s/scope", r->dir);
    bool ok = lfd >= 0 && pbx_broker_init(&r->b, lfd, scope, r->dir, sreal,
                                          rreal, burst, 3600000U) == 0;
    if (ok) {
        r->b.ask = tg_ask;
        r->b.ask_ctx = r;
        if (setup != NULL) {
            setup(r);
        }
        /* Bounded: the child makes at most TG_OPENS opens and a few of its
         * own (the filter reports only the open family). */
        for (uint32_t i = 0; i < 200U && pbx_broker_serve_one(&r->b) == 0;
             i++) {
        }
    }
    ok = ok && read(pp[0], r->results, sizeof(r->results)) ==
                   (ssize_t)sizeof(r->results);
    (void)close(pp[0]);
    int ws = 0;
    (void)waitpid(pid, &ws, 0);
    pbx_broker_release(&r->b);
    return ok && WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

/* Runs fn with stderr going to a file; the file's text into out. */
static void tg_capture(void (*fn)(void *), void *arg, char *out, size_t cap)
{
    char path[] = "/tmp/pbx-broker-gate-err.XXXXXX";
    int fd = mkstemp(path);
    out[0] = '\0';
    if (fd < 0) {
        return;
    }
    (void)fflush(stderr);
    int saved = dup(STDERR_FILENO);
    (void)dup2(fd, STDERR_FILENO);
    fn(arg);
    (void)fflush(stderr);
    (void)dup2(saved, STDERR_FILENO);
    (void)close(saved);
    ssize_t n = pread(fd, out, cap - 1U, 0);
    out[n > 0 ? (size_t)n : 0U] = '\0';
    (void)close(fd);
    (void)unlink(path);
}

/* An open a rule answers (no person) leaves the budget as it was; the
 * one a person answered takes its prompt; with the budget empty the next
 * is refused without asking. */
PBX_TEST(peers_broker_budget_is_charged_only_for_a_person)
{
    static tg_run r;
    memset(&r, 0, sizeof(r));
    PBX_REQUIRE(tg_setup(&r));
    char a[128];
    (void)snprintf(a, sizeof(a), "%s/scope/a.txt", r.dir);
    for (uint32_t i = 0; i < 6U; i++) {
        r.paths[i] = a;
    }
    r.nopen = 6U;
    /* Four answers by rule, then one by a person (burst 1). */
    r.persons[4] = true;
    PBX_REQUIRE(tg_serve(&r, 1U, NULL));
    for (uint32_t i = 0; i < 5U; i++) {
        PBX_CHECK_EQ(r.results[i], 0);
    }
    PBX_CHECK_EQ(r.results[5], EACCES);
    PBX_CHECK_EQ(r.asks, 5U);
    PBX_CHECK_EQ(r.b.injected, 5U);
    tg_teardown(&r);
}

/* The broker's setup for a mount point where nothing is mounted. */
static void tg_plain_mount(tg_run *r)
{
    r->b.pl.mount = "/nonexistent-pbx-fuse-mount";
    r->b.check_mount = true;
}

static void tg_run_plain_mount(void *arg)
{
    tg_run *r = arg;
    if (!tg_serve(r, 5U, tg_plain_mount)) {
        r->nopen = 0U;
    }
}

/* With vfsd's mount known but FUSE not mounted there, a scope open is
 * refused EACCES before anyone is asked, and the line says why; a system
 * path still goes on. */
PBX_TEST(peers_broker_refuses_before_asking_without_fuse)
{
    static tg_run r;
    memset(&r, 0, sizeof(r));
    PBX_REQUIRE(tg_setup(&r));
    char a[128];
    (void)snprintf(a, sizeof(a), "%s/scope/a.txt", r.dir);
    r.paths[0] = a;
    r.paths[1] = "/etc/passwd";
    r.nopen = 2U;
    static char said[4096];
    tg_capture(tg_run_plain_mount, &r, said, sizeof(said));
    PBX_REQUIRE(r.nopen == 2U);
    PBX_CHECK_EQ(r.results[0], EACCES);
    PBX_CHECK_EQ(r.results[1], 0);
    PBX_CHECK_EQ(r.asks, 0U);
    PBX_CHECK(strstr(said, "vfsd's FUSE mount /nonexistent-pbx-fuse-mount "
                           "is not mounted") != NULL);
    tg_teardown(&r);
}

/* The mount table names FUSE exactly at the mount: its type "fuse" or
 * "fuse.*", the last line for that point deciding, escapes decoded;
 * another point, a prefix of it, or another type is not it. */
PBX_TEST(peers_broker_mount_table_names_fuse_exactly)
{
    const char *t =
        "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
        "40 22 0:44 / /run/pbx/fuse rw,nosuid,nodev - fuse /dev/fuse rw\n"
        "41 22 0:45 / /run/pbx\\040x/fuse rw shared:7 - fuse.pbx vfsd rw\n"
        "42 22 0:46 / /run/other rw - tmpfs tmpfs rw\n"
        "43 22 0:47 / /run/stack rw - fuse /dev/fuse rw\n"
        "44 43 0:48 / /run/stack rw - tmpfs tmpfs rw\n"
        "45 22 0:49 / /run/fuseblk rw - fuseblk /dev/sdb rw";
    size_t n = strlen(t);
    PBX_CHECK(pbx_broker_mount_is_fuse(t, n, "/run/pbx/fuse"));
    PBX_CHECK(pbx_broker_mount_is_fuse(t, n, "/run/pbx x/fuse"));
    PBX_CHECK(!pbx_broker_mount_is_fuse(t, n, "/run/pbx"));
    PBX_CHECK(!pbx_broker_mount_is_fuse(t, n, "/run/pbx/fus"));
    PBX_CHECK(!pbx_broker_mount_is_fuse(t, n, "/run/other"));
    /* Covered by a later mount: no longer FUSE at that point. */
    PBX_CHECK(!pbx_broker_mount_is_fuse(t, n, "/run/stack"));
    PBX_CHECK(!pbx_broker_mount_is_fuse(t, n, "/run/fuseblk"));
    PBX_CHECK(!pbx_broker_mount_is_fuse("", 0U, "/run/pbx/fuse"));
    PBX_CHECK(!pbx_broker_mount_is_fuse("40 22 0:44 / /run/pbx/fuse", 26U,
                                        "/run/pbx/fuse"));
    PBX_CHECK(!pbx_broker_fuse_up("/nonexistent-pbx-fuse-mount"));
}

/* The broker's setup where every read of the program's memory fails. */
static void tg_mem_fail(tg_run *r)
{
    r->b.mem_fail = true;
}

static void tg_run_mem_fail(void *arg)
{
    tg_run *r = arg;
    if (!tg_serve(r, 5U, tg_mem_fail)) {
        r->nopen = 0U;
    }
}

/* Where the broker may not read a process's memory (Yama's ptrace_scope
 * 1 for a process it may not trace; here by fault injection) every open
 * is refused EACCES, a system path too (never continued: Landlock alone
 * would decide a path the broker never saw), nobody is asked, and one
 * line says why. */
PBX_TEST(peers_broker_refuses_fail_closed_without_the_memory)
{
    static tg_run r;
    memset(&r, 0, sizeof(r));
    PBX_REQUIRE(tg_setup(&r));
    char a[128];
    (void)snprintf(a, sizeof(a), "%s/scope/a.txt", r.dir);
    r.paths[0] = a;
    r.paths[1] = "/etc/passwd";
    r.nopen = 2U;
    static char said[4096];
    tg_capture(tg_run_mem_fail, &r, said, sizeof(said));
    PBX_REQUIRE(r.nopen == 2U);
    PBX_CHECK_EQ(r.results[0], EACCES);
    PBX_CHECK_EQ(r.results[1], EACCES);
    PBX_CHECK_EQ(r.asks, 0U);
    PBX_CHECK_EQ(r.b.continued, 0U);
    PBX_CHECK(strstr(said, "may not read its memory or descriptors "
                           "(Operation not permitted; Yama") != NULL);
    tg_teardown(&r);
}

/* The broker's setup where the thread group of the notifying thread
 * cannot be read. */
static void tg_tgid_fail(tg_run *r)
{
    r->b.tgid_fail = true;
}

static void tg_run_tgid_fail(void *arg)
{
    tg_run *r = arg;
    if (!tg_serve(r, 5U, tg_tgid_fail)) {
        r->nopen = 0U;
    }
}

/* Where /proc/TID/status cannot be read (by fault injection) the still
 * valid notification is answered EACCES with one line, a system path
 * too; nobody is asked and no thread is left waiting in its open. */
PBX_TEST(peers_broker_refuses_when_the_process_is_unknown)
{
    static tg_run r;
    memset(&r, 0, sizeof(r));
    PBX_REQUIRE(tg_setup(&r));
    char a[128];
    (void)snprintf(a, sizeof(a), "%s/scope/a.txt", r.dir);
    r.paths[0] = a;
    r.paths[1] = "/etc/passwd";
    r.nopen = 2U;
    static char said[4096];
    tg_capture(tg_run_tgid_fail, &r, said, sizeof(said));
    PBX_REQUIRE(r.nopen == 2U);
    PBX_CHECK_EQ(r.results[0], EACCES);
    PBX_CHECK_EQ(r.results[1], EACCES);
    PBX_CHECK_EQ(r.asks, 0U);
    PBX_CHECK_EQ(r.b.continued, 0U);
    PBX_CHECK(strstr(said, "the broker cannot read its process from /proc/") !=
              NULL);
    tg_teardown(&r);
}

/* The injected descriptor's mode follows the open's access mode as the
 * kernel's would: O_CREAT | O_RDONLY of a missing file reads (it was
 * write-only); only O_RDONLY | O_TRUNC of an existing file (a write) is
 * write-only. */
PBX_TEST(peers_broker_mode_follows_the_access_mode)
{
    const uint8_t rd = PBX_PEER_BROKER_OP_READ;
    const uint8_t wr = PBX_PEER_BROKER_OP_WRITE;
    const uint8_t cr = PBX_PEER_BROKER_OP_CREATE;
    PBX_CHECK_EQ(pbx_broker_mode(O_RDONLY, rd), 1U);
    PBX_CHECK_EQ(pbx_broker_mode(O_RDONLY | O_CREAT, cr), 1U);
    PBX_CHECK_EQ(pbx_broker_mode(O_RDONLY | O_CREAT | O_EXCL, cr), 1U);
    PBX_CHECK_EQ(pbx_broker_mode(O_WRONLY | O_CREAT, cr), 2U);
    PBX_CHECK_EQ(pbx_broker_mode(O_RDWR | O_CREAT, cr), 3U);
    PBX_CHECK_EQ(pbx_broker_mode(O_WRONLY, wr), 2U);
    PBX_CHECK_EQ(pbx_broker_mode(O_RDWR, wr), 3U);
    PBX_CHECK_EQ(pbx_broker_mode(O_RDONLY | O_TRUNC, wr), 2U);
    PBX_CHECK_EQ(pbx_broker_mode(O_RDONLY | O_CREAT | O_TRUNC, wr), 2U);
}

/* 100 lines said with the rate never refilling (a period of an hour): the
 * first 16 are written, the rest counted, and the flush writes the count
 * as one line; a fresh burst then writes again, count first. */
static void tg_say_many(void *arg)
{
    (void)arg;
    pbx_broker_say_limit(16U, 3600000U);
    for (uint32_t i = 0; i < 100U; i++) {
        pbx_broker_say("pbx-broker: line %u\n", i);
    }
    pbx_broker_say_flush();
    pbx_broker_say_flush();
}

PBX_TEST(peers_broker_lines_are_rate_limited)
{
    static char said[8192];
    tg_capture(tg_say_many, NULL, said, sizeof(said));
    size_t lines = 0;
    for (const char *p = said; *p != '\0'; p++) {
        lines += *p == '\n' ? 1U : 0U;
    }
    PBX_CHECK_EQ(lines, 17U);
    PBX_CHECK(strstr(said, "pbx-broker: line 15\n") != NULL);
    PBX_CHECK(strstr(said, "pbx-broker: line 16\n") == NULL);
    PBX_CHECK(strstr(said, "pbx-broker: 84 line(s) suppressed (at most 16 "
                           "at once, then one per 3600000 ms)\n") != NULL);
    pbx_broker_say_limit(16U, 1000U); /* the defaults, for the next test */
}
