/*
 * test_pbx_policy.c: `pbx policy` and `pbx policy check` end to end on
 * the real pbx binary (PBX_BIN, else "pbx" beside this test binary, as
 * test_pbx_tool.c finds it): the listing of DIR/policy (old and new rule
 * forms, numbered, in the 8-field form), the verdict and its exit status
 * (0 allow, 3 deny, 4 prompt) with the deciding rule named, an absolute
 * PATH beneath --root, and the failures: a bad policy line named with
 * its file and line (exit 1), a missing file (1), an unknown operation
 * and an absolute PATH outside --root (2, one line on stderr). Also
 * `pbx run --grant`'s errors: one line naming the bad value, what is
 * wrong and the valid operations. And `pbx up` with a --root that does
 * not exist prints vfsd's reason on its own stderr; pbx status and pbx
 * stop exit 1 where no stack runs.
 */
#include "runner/pbx_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* What one run of pbx left behind. */
typedef struct tp_result {
    int status; /* exit status, or -1 when killed by a signal */
    char out[4096];
    char err[4096];
} tp_result;

/* Joins dir and name into path; a path that does not fit fails the test. */
static void tp_join(char *path, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(path, cap, "%s/%s", dir, name);
    PBX_REQUIRE(n > 0 && (size_t)n < cap);
}

/* The pbx binary: PBX_BIN, else beside this test binary. */
static void tp_bin(char *path, size_t cap)
{
    const char *env = getenv("PBX_BIN");
    if (env != NULL && env[0] != '\0') {
        PBX_REQUIRE((size_t)snprintf(path, cap, "%s", env) < cap);
        return;
    }
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1U);
    PBX_REQUIRE(n > 0);
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    if (slash == NULL) {
        pbx_test_failf(__FILE__, __LINE__, "no directory in '%s'", self);
        return;
    }
    *slash = '\0';
    tp_join(path, cap, self, "pbx");
}

/* Reads path (at most cap - 1 bytes) into buf as a string. */
static void tp_slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    buf[0] = '\0';
    if (f == NULL) {
        pbx_test_failf(__FILE__, __LINE__, "cannot read '%s'", path);
        return;
    }
    size_t n = fread(buf, 1, cap - 1U, f);
    buf[n] = '\0';
    (void)fclose(f);
}

/* Runs `pbx --dir dir ARGS` (args NULL-terminated) into r. */
static void tp_run(const char *dir, const char *const *args, tp_result *r)
{
    char bin[PATH_MAX];
    tp_bin(bin, sizeof(bin));
    char out[PATH_MAX];
    char err[PATH_MAX];
    tp_join(out, sizeof(out), dir, "stdout");
    tp_join(err, sizeof(err), dir, "stderr");
    char *argv[24] = {bin, "--dir", (char *)dir};
    size_t argc = 3;
    for (size_t i = 0; args[i] != NULL && argc < 23U; i++) {
        argv[argc++] = (char *)args[i]; /* execv takes char *const[] */
    }
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) {
            _exit(126);
        }
        execv(bin, argv);
        _exit(127);
    }
    int ws = 0;
    PBX_REQUIRE(waitpid(pid, &ws, 0) == pid);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    tp_slurp(out, r->out, sizeof(r->out));
    tp_slurp(err, r->err, sizeof(r->err));
}

/* A fresh directory holding a policy file with text. */
static void tp_dir(char *dir, size_t cap, const char *text)
{
    const char *base = getenv("TMPDIR");
    tp_join(dir, cap, base != NULL && base[0] != '\0' ? base : "/tmp",
            "pbx-policy-test.XXXXXX");
    PBX_REQUIRE(mkdtemp(dir) != NULL);
    char path[PATH_MAX];
    tp_join(path, sizeof(path), dir, "policy");
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        pbx_test_failf(__FILE__, __LINE__, "cannot write '%s'", path);
        return;
    }
    PBX_REQUIRE(fputs(text, f) >= 0);
    PBX_REQUIRE(fclose(f) == 0);
}

/* Removes what tp_dir and tp_run left. */
static void tp_cleanup(const char *dir)
{
    static const char *const names[] = {"policy", "stdout", "stderr"};
    char path[PATH_MAX];
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        tp_join(path, sizeof(path), dir, names[i]);
        (void)unlink(path);
    }
    PBX_CHECK(rmdir(dir) == 0);
}

/* The policy the tests use: both rule forms. */
static const char tp_text[] = "# a comment\n"
                              "* * * * exceptional prompt\n"
                              "* * read file routine cat secrets/** deny\n"
                              "* * read file routine cat docs/*.txt allow\n"
                              "* * * * routine * * prompt\n";

PBX_TEST(pbx_policy_lists_the_rules_in_effect)
{
    char dir[PATH_MAX];
    tp_dir(dir, sizeof(dir), tp_text);
    tp_result r;
    const char *list[] = {"policy", NULL};
    tp_run(dir, list, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK(strstr(r.out, "\n1 * * * * exceptional * * prompt\n") != NULL);
    PBX_CHECK(strstr(r.out, "\n2 * * read file routine cat secrets/** deny\n"
                            "3 * * read file routine cat docs/*.txt allow\n"
                            "4 * * * * routine * * prompt\n"
                            "- no rule matches: deny\n") != NULL);
    PBX_CHECK_EQ(r.err[0], '\0');
    tp_cleanup(dir);
}

PBX_TEST(pbx_policy_check_says_what_would_happen)
{
    char dir[PATH_MAX];
    tp_dir(dir, sizeof(dir), tp_text);
    tp_result r;
    const char *allow[] = {"policy", "check",      "/bin/cat",
                           "read",   "docs/a.txt", NULL};
    tp_run(dir, allow, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK(strcmp(r.out, "allow: rule 3: * * read file routine cat "
                            "docs/*.txt allow\n") == 0);
    const char *deny[] = {"policy", "check",       "cat",
                          "read",   "secrets/k/x", NULL};
    tp_run(dir, deny, &r);
    PBX_CHECK_EQ(r.status, 3);
    PBX_CHECK(strncmp(r.out, "deny: rule 2:", 13) == 0);
    const char *prompt[] = {"policy", "check",        "cat",
                            "read",   "docs/x/a.txt", NULL};
    tp_run(dir, prompt, &r);
    PBX_CHECK_EQ(r.status, 4);
    PBX_CHECK(strncmp(r.out, "prompt: rule 4:", 15) == 0);
    const char *rooted[] = {"policy", "check", "--root",        "/r/",
                            "cat",    "read",  "/r/docs/b.txt", NULL};
    tp_run(dir, rooted, &r);
    PBX_CHECK_EQ(r.status, 0);
    /* No ALLOW for an exceptional request: rule 1 prompts. */
    const char *exc[] = {"policy", "check", "--urgency",  "exceptional",
                         "cat",    "read",  "docs/a.txt", NULL};
    tp_run(dir, exc, &r);
    PBX_CHECK_EQ(r.status, 4);
    tp_cleanup(dir);
}

PBX_TEST(pbx_policy_refusals_name_what_is_wrong)
{
    char dir[PATH_MAX];
    tp_dir(dir, sizeof(dir), "* * read file routine cat docs/**/x allow\n");
    tp_result r;
    const char *list[] = {"policy", NULL};
    tp_run(dir, list, &r);
    PBX_CHECK_EQ(r.status, 1);
    PBX_CHECK(strstr(r.err, "/policy:1: ENTRY and SELECTOR") != NULL);
    tp_cleanup(dir);
    tp_dir(dir, sizeof(dir), tp_text);
    const char *op[] = {"policy", "check", "cat", "frob", "x", NULL};
    tp_run(dir, op, &r);
    PBX_CHECK_EQ(r.status, 2);
    PBX_CHECK(strstr(r.err, "'frob'") != NULL);
    const char *outside[] = {"policy", "check",       "cat",
                             "read",   "/etc/passwd", NULL};
    tp_run(dir, outside, &r);
    PBX_CHECK_EQ(r.status, 2);
    PBX_CHECK(strstr(r.err, "'/etc/passwd'") != NULL);
    const char *few[] = {"policy", "check", "cat", "read", NULL};
    tp_run(dir, few, &r);
    PBX_CHECK_EQ(r.status, 2);
    char path[PATH_MAX];
    tp_join(path, sizeof(path), dir, "policy");
    PBX_REQUIRE(unlink(path) == 0);
    tp_run(dir, list, &r);
    PBX_CHECK_EQ(r.status, 1);
    PBX_CHECK(strstr(r.err, "No such file") != NULL);
    tp_cleanup(dir);
}

PBX_TEST(pbx_run_grant_errors_show_the_value_and_the_operations)
{
    char dir[PATH_MAX];
    tp_dir(dir, sizeof(dir), tp_text);
    tp_result r;
    static const char *const bad[] = {"red:docs/a.txt", "read",
                                      "read:", ":docs/a.txt"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *args[] = {"run", "--grant", bad[i], "--", "true", NULL};
        tp_run(dir, args, &r);
        PBX_CHECK_EQ(r.status, 2);
        char quoted[64];
        (void)snprintf(quoted, sizeof(quoted), "'%s'", bad[i]);
        PBX_CHECK(strstr(r.err, quoted) != NULL);
        PBX_CHECK(strstr(r.err, "read, write, execute, list") != NULL);
        /* One line: the error alone. */
        PBX_CHECK(strchr(r.err, '\n') == r.err + strlen(r.err) - 1U);
    }
    const char *op[] = {"policy", "check", "cat", "frob", "x", NULL};
    tp_run(dir, op, &r);
    PBX_CHECK(strstr(r.err, "read, write, execute, list") != NULL);
    tp_cleanup(dir);
}

/* Removes every file in dir (no subdirectories) and dir itself. */
static void tp_rm_flat(const char *dir)
{
    DIR *d = opendir(dir);
    PBX_REQUIRE(d != NULL);
    char path[PATH_MAX];
    for (int i = 0; i < 64; i++) {
        const struct dirent *e = readdir(d);
        if (e == NULL) {
            break;
        }
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
            tp_join(path, sizeof(path), dir, e->d_name);
            (void)unlink(path);
        }
    }
    (void)closedir(d);
    PBX_CHECK(rmdir(dir) == 0);
}

PBX_TEST(pbx_up_prints_the_reason_a_bad_root_fails)
{
    char dir[PATH_MAX];
    tp_dir(dir, sizeof(dir), "");
    char root[PATH_MAX];
    tp_join(root, sizeof(root), dir, "no-such-root");
    /* A stand-in vfsd that refuses the root as the real one does: this is
     * pbx up's behaviour under test (the failing process's reason on its
     * own stderr), and it holds where no peer is built (the mutation
     * runner's tree has the pbx binary only). */
    char bin[PATH_MAX];
    char vfsd[PATH_MAX];
    tp_join(bin, sizeof(bin), dir, "bin");
    tp_join(vfsd, sizeof(vfsd), bin, "pbx-vfsd");
    PBX_REQUIRE(mkdir(bin, 0700) == 0);
    FILE *f = fopen(vfsd, "w");
    if (f == NULL) {
        PBX_CHECK(f != NULL);
        return;
    }
    (void)fputs("#!/bin/sh\n"
                "while [ $# -gt 0 ] && [ \"$1\" != --root ]; do shift; done\n"
                "echo \"vfsd: --root '$2': No such file or directory\" >&2\n"
                "exit 2\n",
                f);
    (void)fclose(f);
    PBX_REQUIRE(chmod(vfsd, 0700) == 0);
    tp_result r;
    const char *args[] = {"up",        "--root", root, "--tty",
                          "/dev/null", "--bin",  bin,  NULL};
    tp_run(dir, args, &r);
    (void)unlink(vfsd);
    (void)rmdir(bin);
    PBX_CHECK_EQ(r.status, 1);
    char want[PATH_MAX + 64];
    (void)snprintf(want, sizeof(want), "said: vfsd: --root '%s': No such file",
                   root);
    PBX_CHECK(strstr(r.err, want) != NULL);
    if (strstr(r.err, want) == NULL) {
        (void)fprintf(stderr, "pbx up's stderr:\n%s", r.err);
    }
    tp_rm_flat(dir);
}

PBX_TEST(pbx_status_and_stop_without_a_stack_exit_1)
{
    char dir[PATH_MAX];
    tp_dir(dir, sizeof(dir), "");
    tp_result r;
    static const char *const cmds[] = {"status", "stop"};
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
        const char *args[] = {cmds[i], NULL};
        tp_run(dir, args, &r);
        PBX_CHECK_EQ(r.status, 1);
        PBX_CHECK(strstr(r.err, "no stack runs in") != NULL);
        PBX_CHECK_EQ(r.out[0], '\0');
        const char *extra[] = {cmds[i], "bogus", NULL};
        tp_run(dir, extra, &r);
        PBX_CHECK_EQ(r.status, 2);
    }
    tp_rm_flat(dir);
}
