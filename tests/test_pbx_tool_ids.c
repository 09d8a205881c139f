/*
 * test_pbx_tool_ids.c: `pbx log` and `pbx cancel` on stack logs written
 * here, line by line as `pbx up` writes them, so that every case of the
 * id spelling N-I.G and of the ends `pbx log` derives is exact: a dead
 * powerboxd's grants (with and without the peers' records, a decision
 * logged after the death line), grants live when the stack stopped (one
 * powerboxd logged lost during the stop), a user cancel logged by
 * launchd as I:G, a denial, and two stacks sharing one log whose ids
 * repeat. The real pbx binary runs as a child (PBX_BIN, else "pbx"
 * beside this test binary).
 */
#include "runner/pbx_test.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* What one run of pbx left: exit status (-1: a signal), stdout, stderr. */
typedef struct ids_run {
    int status;
    char out[8192];
    char err[2048];
} ids_run;

/* Writes dir/name into out; a path that does not fit fails the test. */
static void ids_path(char *out, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(out, cap, "%s/%s", dir, name);
    PBX_REQUIRE(n > 0 && (size_t)n < cap);
}

/* Finds the pbx binary (PBX_BIN, else beside this binary). */
static void ids_bin(char *out, size_t cap)
{
    const char *env = getenv("PBX_BIN");
    char self[PATH_MAX];
    if (env != NULL && env[0] != '\0') {
        PBX_REQUIRE(snprintf(out, cap, "%s", env) < (int)cap);
        return;
    }
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1U);
    PBX_REQUIRE(n > 0);
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash != NULL) {
        *slash = '\0';
    } else {
        pbx_test_failf(__FILE__, __LINE__, "no directory in '%s'", self);
    }
    ids_path(out, cap, self, "pbx");
}

/* Reads path whole (at most cap - 1 bytes) as a string. */
static void ids_slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    size_t n = f != NULL ? fread(buf, 1, cap - 1U, f) : 0U;
    buf[n] = '\0';
    if (f != NULL) {
        (void)fclose(f);
    }
}

/* Runs pbx with args (NULL-ended, without argv[0]) in dir's files. */
static void ids_pbx(const char *dir, const char *const *args, ids_run *r)
{
    char bin[PATH_MAX];
    char out[PATH_MAX];
    char err[PATH_MAX];
    char *argv[12];
    size_t argc = 0;
    ids_bin(bin, sizeof(bin));
    ids_path(out, sizeof(out), dir, "stdout");
    ids_path(err, sizeof(err), dir, "stderr");
    argv[argc++] = bin;
    for (size_t i = 0; args[i] != NULL && argc < 11U; i++) {
        argv[argc++] = (char *)args[i]; /* execv takes char *const[] */
    }
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        if (freopen(out, "w", stdout) == NULL ||
            freopen(err, "w", stderr) == NULL) {
            _exit(126);
        }
        execv(bin, argv);
        _exit(127);
    }
    int ws = 0;
    PBX_REQUIRE(waitpid(pid, &ws, 0) == pid);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    ids_slurp(out, r->out, sizeof(r->out));
    ids_slurp(err, r->err, sizeof(r->err));
}

/* Makes a private directory and writes text to its stack.log. */
static void ids_dir(char *dir, size_t cap, const char *text)
{
    char path[PATH_MAX];
    const char *base = getenv("TMPDIR");
    ids_path(dir, cap, base != NULL && base[0] != '\0' ? base : "/tmp",
             "pbx-ids-test.XXXXXX");
    PBX_REQUIRE(mkdtemp(dir) != NULL);
    ids_path(path, sizeof(path), dir, "stack.log");
    FILE *f = fopen(path, "w");
    bool ok = f != NULL && fputs(text, f) >= 0;
    if (f != NULL && fclose(f) != 0) {
        ok = false;
    }
    PBX_REQUIRE(ok);
}

/* Removes what ids_dir and ids_pbx left. */
static void ids_clean(const char *dir)
{
    static const char *const names[] = {"stack.log", "stdout", "stderr"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        ids_path(path, sizeof(path), dir, names[i]);
        (void)unlink(path);
    }
    PBX_CHECK(rmdir(dir) == 0);
}

/* How many lines of text hold needle. */
static int ids_count(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p != NULL && n < 1000;
         p = strstr(p + 1, needle)) {
        n++;
    }
    return n;
}

#define T0 "2026-01-01T00:00:00.000Z "
#define T1 "2026-01-01T00:00:01.000Z "
#define T2 "2026-01-01T00:00:02.000Z "
#define DEC(pid, req, job, entry, rest)                                        \
    T0 "powerboxd[" pid "]: event=decision request=" req " job=" job           \
       " entry=" entry " op=read object=" entry ".txt lifetime=job " rest "\n"

/* Two stacks' lives in one log: the first's powerboxd 1 dies (killed,
 * with records of some grants, and one decision logged after its death
 * line), its powerboxd 2 is stopped with the stack; the second stack's
 * powerboxd 1 runs on, its grant 1-0.1 live and its 1-1.1 cancelled by
 * the program (an end that must not hide the first stack's 1-1.1). */
static const char ids_log[] = T0
    "up[100]: powerboxd incarnation 1 starting\n" T0
    "up[100]: powerboxd[200] started: /bin/powerboxd\n" DEC(
        "200", "1-0.1", "11:1", "bin/a",
        "outcome=approved reason=policy grant=1-0.1 object-id=5:1")
        DEC("200", "1-0.2", "12:1", "bin/b",
            "outcome=approved reason=policy grant=1-1.1 object-id=6:2")
            DEC("200", "1-0.3", "13:1", "bin/c", "outcome=denied reason=policy")
                T1
    "up[100]: powerboxd[200] killed unexpectedly by signal 9 (KILL)\n" T1
    "vfsd[201]: vfsd: RETIRE object 5 gen 1: route to pid 200 closed\n" T1
    "ttyd[202]: ttyd: VIEW ended grant 0.1: route closed (broker lost)\n" T1
    "launchd[203]: launchd: grant 1.1 of job 12.1 ended: broker lost\n" DEC(
        "200", "1-1.1", "14:1", "bin/d",
        "outcome=approved reason=policy grant=1-2.1 object-id=7:1") T1
    "up[100]: powerboxd incarnation 2 starting\n" T1
    "up[100]: powerboxd[300] started: /bin/powerboxd\n" DEC(
        "300", "2-0.1", "15:1", "bin/e",
        "outcome=approved reason=policy grant=2-0.1 object-id=8:1") T1
    "launchd[203]: launchd: event=user-cancel request=0:1 grant=0:1\n" T1
    "powerboxd[300]: event=grant-end grant=2-0.1 request=2-0.1 job=15:1 "
    "entry=bin/e op=read object=bin/e.txt lifetime=job end=cancelled "
    "reason=cancel object-id=8:1\n" DEC("300", "2-0.2", "16:1", "bin/f",
                                        "outcome=approved reason=policy "
                                        "grant=2-1.1 object-id=9:1")
        DEC("300", "2-0.3", "17:1", "bin/g",
            "outcome=approved reason=user grant=2-2.1 object-id=10:1") T2
    "up[100]: signal 15 (TERM): stopping the stack\n" T2
    "powerboxd[300]: event=grant-end grant=2-1.1 request=2-0.2 job=16:1 "
    "entry=bin/f op=read object=bin/f.txt lifetime=job end=lost "
    "reason=provider-lost object-id=9:1\n" T2
    "up[100]: powerboxd[300] killed by signal 15 (TERM)\n" T2
    "up[100]: stopped (exit 0)\n" T2
    "up[400]: powerboxd incarnation 1 starting\n" T2
    "up[400]: powerboxd[500] started: /bin/powerboxd\n" DEC(
        "500", "1-0.1", "18:1", "bin/h",
        "outcome=approved reason=policy grant=1-0.1 object-id=11:1")
        DEC("500", "1-0.2", "19:1", "bin/i",
            "outcome=approved reason=policy grant=1-1.1 object-id=12:1") T2
    "powerboxd[500]: event=grant-end grant=1-1.1 request=1-0.2 job=19:1 "
    "entry=bin/i op=read object=bin/i.txt lifetime=job end=cancelled "
    "reason=cancel object-id=12:1\n";

/* pbx log shows one line per end and per refusal, each id N-I.G: the
 * dead powerboxd's grants at its death line with the peers' records (or
 * none), a decision logged after that line at once, the user's cancel
 * joined by incarnation, both grants live at the stop as "stack
 * stopped", the denial with its reason, and nothing of the live stack. */
PBX_TEST(pbx_tool_log_every_end_and_refusal_once)
{
    char dir[PATH_MAX];
    ids_run r;
    ids_dir(dir, sizeof(dir), ids_log);
    const char *table[] = {"log", "--dir", dir, NULL};
    ids_pbx(dir, table, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK_EQ(ids_count(r.out, "\n"), 8);
    PBX_CHECK(strstr(r.out,
                     T0 "request 1-0.3 (bin/c, job 13:1, read "
                        "bin/c.txt, job): denied (reason policy)\n") != NULL);
    PBX_CHECK(strstr(r.out, "2026-01-01T00:00:01.000Z grant 1-0.1 (bin/a, "
                            "job 11:1, read bin/a.txt, job): lost with its "
                            "broker (powerboxd[200] died; recorded by "
                            "vfsd,ttyd)\n") != NULL);
    PBX_CHECK(strstr(r.out, "grant 1-1.1 (bin/b, job 12:1, read bin/b.txt, "
                            "job): lost with its broker (powerboxd[200] "
                            "died; recorded by launchd)\n") != NULL);
    PBX_CHECK(strstr(r.out, "grant 1-2.1 (bin/d, job 14:1, read bin/d.txt, "
                            "job): lost with its broker (powerboxd[200] "
                            "died; no peer recorded it)\n") != NULL);
    PBX_CHECK(strstr(r.out, "grant 2-0.1 (bin/e, job 15:1, read bin/e.txt, "
                            "job): cancelled by the user\n") != NULL);
    PBX_CHECK(strstr(r.out, "grant 2-1.1 (bin/f, job 16:1, read bin/f.txt, "
                            "job): stack stopped while it was live "
                            "(powerboxd logged it lost, reason "
                            "provider-lost, as the stack stopped)\n") != NULL);
    PBX_CHECK(strstr(r.out, "2026-01-01T00:00:02.000Z grant 2-2.1 (bin/g, job "
                            "17:1, read bin/g.txt, job): stack stopped while "
                            "it was live\n") != NULL);
    PBX_CHECK_EQ(ids_count(r.out, " grant 1-0.1 "), 1);
    PBX_CHECK(strstr(r.out, "grant 1-1.1 (bin/i, job 19:1, read bin/i.txt, "
                            "job): cancelled by the program\n") != NULL);
    PBX_CHECK(r.err[0] == '\0');
    const char *kv[] = {"log", "--format", "kv", "--file", NULL, NULL};
    char path[PATH_MAX];
    ids_path(path, sizeof(path), dir, "stack.log");
    kv[4] = path;
    ids_pbx(dir, kv, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK_EQ(ids_count(r.out, "\n"), 8);
    PBX_CHECK(strstr(r.out, " grant=1-0.1 request=1-0.1 job=11:1 entry=bin/a "
                            "op=read object=bin/a.txt lifetime=job end=lost "
                            "by=powerboxd-lost reason=broker-lost "
                            "records=vfsd,ttyd\n") != NULL);
    PBX_CHECK(strstr(r.out, " grant=- request=1-0.3 job=13:1 entry=bin/c "
                            "op=read object=bin/c.txt lifetime=job "
                            "end=denied by=policy reason=policy\n") != NULL);
    PBX_CHECK(strstr(r.out, " grant=2-0.1 request=2-0.1 job=15:1 entry=bin/e "
                            "op=read object=bin/e.txt lifetime=job "
                            "end=cancelled by=user reason=cancel\n") != NULL);
    PBX_CHECK_EQ(ids_count(r.out, "end=stack-stopped by=pbx-up "
                                  "reason=stack-stopped"),
                 2);
    ids_clean(dir);
}

/* pbx cancel takes only N-I.G (exit 2 otherwise) and refuses an id of
 * any incarnation but the live one, the latest DIR/stack.log names (exit
 * 1, one line saying why), before it asks launchd anything; the live
 * incarnation's id goes on to launchd (absent here: its error). */
PBX_TEST(pbx_tool_cancel_refuses_an_ended_incarnation)
{
    char dir[PATH_MAX];
    ids_run r;
    ids_dir(dir, sizeof(dir),
            T0 "up[100]: powerboxd incarnation 1 starting\n" T0
               "up[100]: powerboxd incarnation 2 starting\n" T0
               "up[100]: powerboxd incarnation 3 starting\n");
    static const char *const bad[] = {"0.1",   "0:1",    "0-0.1",
                                      "1-0.0", "1-0.1x", "a-0.1"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *args[] = {"cancel", "--dir", dir, bad[i], NULL};
        ids_pbx(dir, args, &r);
        PBX_CHECK_EQ(r.status, 2);
        PBX_CHECK(strstr(r.err, "want N-I.G") != NULL);
    }
    const char *old[] = {"cancel", "--dir", dir, "2-0.1", NULL};
    ids_pbx(dir, old, &r);
    PBX_CHECK_EQ(r.status, 1);
    PBX_CHECK(strcmp(r.err,
                     "pbx cancel: grant 2-0.1 is not live: it was "
                     "granted by powerboxd incarnation 2, which has "
                     "ended (the live powerboxd is incarnation 3)\n") == 0);
    PBX_CHECK(r.out[0] == '\0');
    const char *future[] = {"cancel", "--dir", dir, "4-0.1", NULL};
    ids_pbx(dir, future, &r);
    PBX_CHECK_EQ(r.status, 1);
    PBX_CHECK(strstr(r.err, "no powerboxd incarnation 4 has run") != NULL);
    const char *live[] = {"cancel", "--dir", dir, "3-0.1", NULL};
    ids_pbx(dir, live, &r);
    PBX_CHECK_EQ(r.status, 1);
    PBX_CHECK(strstr(r.err, "launchd's control socket") != NULL);
    PBX_CHECK(strstr(r.err, "not live") == NULL);
    ids_clean(dir);
}
