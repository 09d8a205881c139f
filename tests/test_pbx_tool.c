/*
 * test_pbx_tool.c: `pbx geometry make|show|check` end to end, and the
 * pbx command's dispatch: help for pbx and for every command it lists,
 * and the usage errors (exit 2, one line naming the bad argument).
 *
 * The tests run the real pbx binary as a child process on generated good
 * and bad files, and check its exit status, that it was not killed by a
 * signal, and that every failure is exactly one line on stderr. The binary
 * is found through the PBX_BIN environment variable when it is set, and
 * otherwise as "pbx" beside this test binary (build/<variant>/bin/), which
 * is where the Makefile puts both. A missing binary fails the tests.
 */
#include "../bootstrap/pbx_bootstrap.h"
#include "../core/pbx_core.h"
#include "../core/pbx_core_layout.h"
#include "runner/pbx_test.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* What one run of the tool left behind. */
typedef struct t_run_result {
    int status; /* exit status, or -1 when killed by a signal */
    char out[16384];
    char err[1024];
} t_run_result;

/* Joins dir and name into path; a path that does not fit fails the test. */
static void t_join(char *path, size_t cap, const char *dir, const char *name)
{
    int n = snprintf(path, cap, "%s/%s", dir, name);
    PBX_REQUIRE(n > 0 && (size_t)n < cap);
}

/* Finds the pbx binary; returns false when it does not exist. */
static bool t_pbx_bin(char *path, size_t cap)
{
    const char *env = getenv("PBX_BIN");
    if (env != NULL && env[0] != '\0') {
        int n = snprintf(path, cap, "%s", env);
        if (n <= 0 || (size_t)n >= cap) {
            return false;
        }
    } else {
        char self[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1U);
        if (n <= 0) {
            return false;
        }
        self[n] = '\0';
        char *slash = strrchr(self, '/');
        if (slash == NULL) {
            return false;
        }
        *slash = '\0';
        t_join(path, cap, self, "pbx");
    }
    return access(path, X_OK) == 0;
}

/* Makes a fresh private directory for one test's files. */
static void t_tmpdir(char *dir, size_t cap)
{
    const char *base = getenv("TMPDIR");
    t_join(dir, cap, base != NULL && base[0] != '\0' ? base : "/tmp",
           "pbx-tool-test.XXXXXX");
    PBX_REQUIRE(mkdtemp(dir) != NULL);
}

/* Reads up to cap bytes of path into buf and stores the count; returns
 * false when the file cannot be opened. */
static bool t_read_file(const char *path, void *buf, size_t cap, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return false;
    }
    *len = fread(buf, 1, cap, f);
    (void)fclose(f);
    return true;
}

/* Reads up to cap - 1 bytes of path as a NUL-terminated string. */
static void t_slurp(const char *path, char *buf, size_t cap)
{
    size_t n = 0;
    PBX_REQUIRE(t_read_file(path, buf, cap - 1U, &n));
    buf[n] = '\0';
}

/* Redirects fd to path in the child; exits the child on failure. */
static void t_child_redirect(int fd, const char *path)
{
    int f = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (f < 0 || dup2(f, fd) < 0) {
        _exit(126);
    }
    (void)close(f);
}

/* Runs pbx with args (NULL-terminated, without argv[0]) and collects its
 * exit status, stdout and stderr. */
static void t_run(const char *dir, const char *const *args, t_run_result *r)
{
    char bin[PATH_MAX] = "";
    if (!t_pbx_bin(bin, sizeof(bin))) {
        pbx_test_failf(__FILE__, __LINE__,
                       "pbx binary not found or not executable: build it "
                       "(make all) or set PBX_BIN");
    }
    PBX_REQUIRE(access(bin, X_OK) == 0);
    char out_path[PATH_MAX];
    char err_path[PATH_MAX];
    t_join(out_path, sizeof(out_path), dir, "stdout");
    t_join(err_path, sizeof(err_path), dir, "stderr");
    char *argv[16];
    size_t argc = 0;
    argv[argc++] = bin;
    for (size_t i = 0; args[i] != NULL; i++) {
        PBX_REQUIRE(argc < PBX_ARRAY_LEN(argv) - 1U);
        argv[argc++] = (char *)args[i]; /* execv takes char *const[] */
    }
    argv[argc] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        t_child_redirect(1, out_path);
        t_child_redirect(2, err_path);
        execv(bin, argv);
        _exit(127);
    }
    int ws = 0;
    PBX_REQUIRE(waitpid(pid, &ws, 0) == pid);
    r->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    t_slurp(out_path, r->out, sizeof(r->out));
    t_slurp(err_path, r->err, sizeof(r->err));
}

/* Counts newline characters in s. */
static size_t t_lines(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++) {
        n += *s == '\n' ? 1U : 0U;
    }
    return n;
}

/* Writes len bytes of buf to dir/name and stores the full path. */
static void t_write_file(const char *dir, const char *name, const void *buf,
                         size_t len, char *path, size_t cap)
{
    t_join(path, cap, dir, name);
    FILE *f = fopen(path, "wb");
    bool ok = f != NULL;
    if (ok) {
        ok = len == 0U || fwrite(buf, 1, len, f) == len;
        ok = fclose(f) == 0 && ok;
    }
    PBX_REQUIRE(ok);
}

/* Removes the files a test may have left and its directory. */
static void t_cleanup(const char *dir)
{
    static const char *const names[] = {
        "stdout", "stderr", "good", "bad", "made", "made.tmp", "x",
    };
    char path[PATH_MAX];
    for (size_t i = 0; i < PBX_ARRAY_LEN(names); i++) {
        t_join(path, sizeof(path), dir, names[i]);
        (void)unlink(path);
    }
    PBX_CHECK(rmdir(dir) == 0);
}

/* Runs `pbx geometry make defaults -o dir/made` and reads the record. */
static void t_make_default(const char *dir, uint8_t *rec, char *path,
                           size_t cap)
{
    t_join(path, cap, dir, "made");
    const char *args[] = {"geometry", "make", "defaults", "-o", path, NULL};
    t_run_result r;
    t_run(dir, args, &r);
    PBX_REQUIRE(r.status == 0);
    PBX_CHECK_EQ(t_lines(r.err), 0U);
    uint8_t whole[PBX_BOOTSTRAP_RECORD_BYTES + 1];
    size_t n = 0;
    PBX_REQUIRE(t_read_file(path, whole, sizeof(whole), &n));
    PBX_REQUIRE(n == PBX_BOOTSTRAP_RECORD_BYTES);
    memcpy(rec, whole, PBX_BOOTSTRAP_RECORD_BYTES);
}

PBX_TEST(pbx_tool_make_check_show_default)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    char made[PATH_MAX];
    t_make_default(dir, rec, made, sizeof(made));
    pbx_bootstrap_geometry g;
    PBX_REQUIRE(pbx_bootstrap_parse(rec, sizeof(rec), &g) == PBX_OK);
    pbx_bootstrap_type_layout expected[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_core_pool_layouts(expected);
    pbx_bootstrap_layout l;
    PBX_CHECK_EQ(pbx_bootstrap_layout_derive(&g, expected, &l), PBX_OK);
    t_run_result r;
    const char *check[] = {"geometry", "check", made, NULL};
    t_run(dir, check, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK(strstr(r.out, ": ok:") != NULL);
    const char *show[] = {"geometry", "show", made, NULL};
    t_run(dir, show, &r);
    PBX_CHECK_EQ(r.status, 0);
    char hex[2U * PBX_BOOTSTRAP_DIGEST_BYTES + 1U];
    for (size_t i = 0; i < PBX_BOOTSTRAP_DIGEST_BYTES; i++) {
        (void)snprintf(hex + 2U * i, 3, "%02x", g.digest[i]);
    }
    PBX_CHECK(strstr(r.out, hex) != NULL);
    for (unsigned p = 0; p < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; p++) {
        PBX_CHECK(strstr(r.out, pbx_bootstrap_pool_name(
                                    (pbx_bootstrap_pool)p)) != NULL);
    }
    PBX_CHECK(strstr(r.out, "matches") != NULL);
    PBX_CHECK(strstr(r.out, "call window      16 per route") != NULL);
    PBX_CHECK(strstr(r.out, "prompt share     4 prompt records per job") !=
              NULL);
    PBX_CHECK(strstr(r.out, "deadline prompt  300000 ms") != NULL);
    for (unsigned t = 0; t < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        PBX_CHECK(strstr(r.out, pbx_bootstrap_time_name(
                                    (pbx_bootstrap_time)t)) != NULL);
    }
    t_cleanup(dir);
}

PBX_TEST(pbx_tool_make_default_calls)
{
    static const uint32_t want_ms[PBX_BOOTSTRAP_TIME_COUNT] = {
        5000U, 5000U, 5000U, 2000U, 300000U, 30000U, 30000U,
    };
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    char made[PATH_MAX];
    t_make_default(dir, rec, made, sizeof(made));
    pbx_bootstrap_geometry g;
    PBX_REQUIRE(pbx_bootstrap_parse(rec, sizeof(rec), &g) == PBX_OK);
    PBX_CHECK_EQ(g.version, 3U);
    PBX_CHECK_EQ(g.call_window, 16U);
    PBX_CHECK_EQ(g.capacity[PBX_BOOTSTRAP_POOL_CALLS], 48U);
    PBX_CHECK_MEM(g.time_ms, want_ms, sizeof(want_ms));
    t_cleanup(dir);
}

PBX_TEST(pbx_tool_make_call_overrides)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    char made[PATH_MAX];
    t_join(made, sizeof(made), dir, "made");
    const char *args[] = {"geometry",
                          "make",
                          "--calls",
                          "30",
                          "--window",
                          "10",
                          "--deadline-vfsd-ms",
                          "1",
                          "--deadline-scope-ms",
                          "86400000",
                          "--deadline-open-ms",
                          "777",
                          "-o",
                          made,
                          NULL};
    t_run_result r;
    t_run(dir, args, &r);
    PBX_REQUIRE(r.status == 0);
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES + 1];
    size_t n = 0;
    PBX_REQUIRE(t_read_file(made, rec, sizeof(rec), &n));
    pbx_bootstrap_geometry g;
    PBX_REQUIRE(pbx_bootstrap_parse(rec, n, &g) == PBX_OK);
    PBX_CHECK_EQ(g.capacity[PBX_BOOTSTRAP_POOL_CALLS], 30U);
    PBX_CHECK_EQ(g.call_window, 10U);
    PBX_CHECK_EQ(g.time_ms[PBX_BOOTSTRAP_TIME_VFSD], 1U);
    PBX_CHECK_EQ(g.time_ms[PBX_BOOTSTRAP_TIME_TTYD], 5000U);
    PBX_CHECK_EQ(g.time_ms[PBX_BOOTSTRAP_TIME_SCOPE], 86400000U);
    PBX_CHECK_EQ(g.time_ms[PBX_BOOTSTRAP_TIME_OPEN], 777U);
    const char *show[] = {"geometry", "show", made, NULL};
    t_run(dir, show, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK(strstr(r.out, "call window      10 per route") != NULL);
    PBX_CHECK(strstr(r.out, "deadline open    777 ms") != NULL);
    t_cleanup(dir);
}

PBX_TEST(pbx_tool_make_overrides)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    char made[PATH_MAX];
    t_join(made, sizeof(made), dir, "made");
    const char *args[] = {
        "geometry", "make",        "--grants", "123", "--resolutions",
        "7",        "--page-size", "16384",    "-o",  made,
        NULL};
    t_run_result r;
    t_run(dir, args, &r);
    PBX_REQUIRE(r.status == 0);
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES + 1];
    size_t n = 0;
    PBX_REQUIRE(t_read_file(made, rec, sizeof(rec), &n));
    pbx_bootstrap_geometry g;
    PBX_REQUIRE(pbx_bootstrap_parse(rec, n, &g) == PBX_OK);
    PBX_CHECK_EQ(g.capacity[PBX_BOOTSTRAP_POOL_GRANTS], 123U);
    PBX_CHECK_EQ(g.capacity[PBX_BOOTSTRAP_POOL_RESOLUTIONS], 7U);
    PBX_CHECK_EQ(g.page_size_bytes, 16384U);
    const char *check[] = {"geometry", "check", made, NULL};
    t_run(dir, check, &r);
    PBX_CHECK_EQ(r.status, 0);
    t_cleanup(dir);
}

/* Runs check and show on path and expects a clean one-line failure whose
 * text contains want. */
static void t_expect_bad(const char *dir, const char *path, const char *want)
{
    static const char *const subs[] = {"check", "show"};
    for (size_t i = 0; i < PBX_ARRAY_LEN(subs); i++) {
        const char *args[] = {"geometry", subs[i], path, NULL};
        t_run_result r;
        t_run(dir, args, &r);
        PBX_CHECK_EQ(r.status, 1);
        PBX_CHECK_EQ(t_lines(r.err), 1U);
        if (strstr(r.err, want) == NULL) {
            pbx_test_failf(__FILE__, __LINE__, "%s %s: '%s' lacks '%s'",
                           subs[i], path, r.err, want);
        }
    }
}

PBX_TEST(pbx_tool_rejects_bad_files)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES + 1];
    char made[PATH_MAX];
    t_make_default(dir, rec, made, sizeof(made));
    char bad[PATH_MAX];
    t_join(bad, sizeof(bad), dir, "missing");
    t_expect_bad(dir, bad, "cannot open");
    t_expect_bad(dir, dir, "cannot read");
    t_write_file(dir, "bad", rec, 0, bad, sizeof(bad));
    t_expect_bad(dir, bad, "PBX_E_BOOTSTRAP_LENGTH");
    t_write_file(dir, "bad", rec, 100, bad, sizeof(bad));
    t_expect_bad(dir, bad, "PBX_E_BOOTSTRAP_LENGTH");
    rec[PBX_BOOTSTRAP_RECORD_BYTES] = 0;
    t_write_file(dir, "bad", rec, sizeof(rec), bad, sizeof(bad));
    t_expect_bad(dir, bad, "PBX_E_BOOTSTRAP_LENGTH");
    rec[PBX_BOOTSTRAP_RECORD_BYTES - 1U] ^= 1U;
    t_write_file(dir, "bad", rec, PBX_BOOTSTRAP_RECORD_BYTES, bad, sizeof(bad));
    t_expect_bad(dir, bad, "PBX_E_BOOTSTRAP_DIGEST");
    rec[PBX_BOOTSTRAP_RECORD_BYTES - 1U] ^= 1U;
    rec[0] = 'Q';
    t_write_file(dir, "bad", rec, PBX_BOOTSTRAP_RECORD_BYTES, bad, sizeof(bad));
    t_expect_bad(dir, bad, "PBX_E_BOOTSTRAP_MAGIC");
    /* A version 1 record (224 bytes) is refused for its version. */
    rec[0] = 'P';
    pbx_le_put16(rec + 4, 1U);
    t_write_file(dir, "bad", rec, 224U, bad, sizeof(bad));
    t_expect_bad(dir, bad, "PBX_E_BOOTSTRAP_VERSION");
    t_cleanup(dir);
}

/* Encodes g (valid on its own) into dir/bad and returns the path. */
static void t_write_geometry(const char *dir, const pbx_bootstrap_geometry *g,
                             char *path, size_t cap)
{
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    PBX_REQUIRE(pbx_bootstrap_encode(g, rec, sizeof(rec)) == PBX_OK);
    t_write_file(dir, "bad", rec, sizeof(rec), path, cap);
}

PBX_TEST(pbx_tool_rejects_wrong_layout_and_extent)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    char made[PATH_MAX];
    t_make_default(dir, rec, made, sizeof(made));
    pbx_bootstrap_geometry g;
    PBX_REQUIRE(pbx_bootstrap_parse(rec, sizeof(rec), &g) == PBX_OK);
    /* A record built for a different grant record size, with the page
     * count that other build would derive: authentic, but not ours. */
    pbx_bootstrap_geometry other = g;
    other.layout[PBX_BOOTSTRAP_POOL_GRANTS].record_size_bytes +=
        other.layout[PBX_BOOTSTRAP_POOL_GRANTS].record_align_bytes;
    uint32_t pages = 0;
    PBX_REQUIRE(pbx_bootstrap_pages_compute(&other, &pages) == PBX_OK);
    other.arena_page_count = pages;
    char bad[PATH_MAX];
    t_write_geometry(dir, &other, bad, sizeof(bad));
    t_expect_bad(dir, bad, "PBX_E_BOOTSTRAP_LAYOUT_MISMATCH_GRANTS");
    pbx_bootstrap_geometry extent = g;
    extent.arena_page_count += 1U;
    t_write_geometry(dir, &extent, bad, sizeof(bad));
    t_expect_bad(dir, bad, "PBX_E_BOOTSTRAP_PAGE_EXTENT");
    t_cleanup(dir);
}

PBX_TEST(pbx_tool_random_files_never_crash)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    uint64_t rng = 0xC0FFEE1234567ULL;
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    char made[PATH_MAX];
    t_make_default(dir, rec, made, sizeof(made));
    for (unsigned iter = 0; iter < 24U; iter++) {
        uint8_t junk[PBX_BOOTSTRAP_RECORD_BYTES];
        memcpy(junk, rec, sizeof(junk));
        size_t at = (size_t)(pbx_test_rng_next(&rng) % sizeof(junk));
        junk[at] ^= (uint8_t)(1U + pbx_test_rng_next(&rng) % 255U);
        char bad[PATH_MAX];
        t_write_file(dir, "bad", junk, sizeof(junk), bad, sizeof(bad));
        const char *args[] = {"geometry", iter % 2U ? "show" : "check", bad,
                              NULL};
        t_run_result r;
        t_run(dir, args, &r);
        PBX_CHECK_EQ(r.status, 1);
        PBX_CHECK_EQ(t_lines(r.err), 1U);
    }
    t_cleanup(dir);
}

PBX_TEST(pbx_tool_make_rejects_bad_arguments)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    char x[PATH_MAX];
    t_join(x, sizeof(x), dir, "x");
    static const struct {
        const char *opt;
        const char *val;
        int status;
    } cases[] = {
        {"--grants", "0", 1},
        {"--selector-bytes", "16777217", 1},
        {"--page-size", "5000", 1},
        {"--grants", "12x", 2},
        {"--grants", "-1", 2},
        {"--bogus", "1", 2},
        {"--requests", "99999999999", 2},
        {"--calls", "0", 1},
        {"--window", "0", 1},
        {"--window", "17", 1},
        {"--window", "4097", 1},
        {"--window", "x", 2},
        {"--deadline-vfsd-ms", "0", 1},
        {"--deadline-open-ms", "86400001", 1},
        {"--deadline-prompt-ms", "-5", 2},
        {"--deadline-bogus-ms", "5", 2},
        {"--deadline-ms", "5", 2},
        {"--deadline-vfsd", "5", 2},
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        const char *args[] = {"geometry", "make", cases[i].opt, cases[i].val,
                              "-o",       x,      NULL};
        t_run_result r;
        t_run(dir, args, &r);
        PBX_CHECK_EQ(r.status, cases[i].status);
        PBX_CHECK_EQ(t_lines(r.err), 1U);
        PBX_CHECK(access(x, F_OK) != 0);
    }
    const char *no_out[] = {"geometry", "make", "defaults", NULL};
    t_run_result r;
    t_run(dir, no_out, &r);
    PBX_CHECK_EQ(r.status, 2);
    PBX_CHECK_EQ(t_lines(r.err), 1U);
    t_cleanup(dir);
}

/* Whether r is a successful help answer whose stdout shows the synopsis
 * of command cmd ("  pbx CMD") and whose stderr is empty. */
static bool t_is_help(const t_run_result *r, const char *cmd)
{
    char want[64];
    int n = snprintf(want, sizeof(want), "  pbx %s", cmd);
    PBX_REQUIRE(n > 0 && (size_t)n < sizeof(want));
    return r->status == 0 && r->err[0] == '\0' &&
           strncmp(r->out, "usage:", 6) == 0 && strstr(r->out, want) != NULL;
}

/* Collects the command words `pbx --help` lists: the second word of every
 * line that starts with "  pbx ", each once, into words[0..*count). */
static void t_listed_commands(const char *out, char words[][32], size_t cap,
                              size_t *count)
{
    *count = 0;
    for (const char *p = strstr(out, "\n  pbx "); p != NULL;
         p = strstr(p + 1, "\n  pbx ")) {
        const char *w = p + 7;
        size_t len = strcspn(w, " \n");
        PBX_REQUIRE(len > 0U && len < 32U);
        bool seen = false;
        for (size_t i = 0; i < *count; i++) {
            seen = seen ||
                   (strlen(words[i]) == len && strncmp(words[i], w, len) == 0);
        }
        if (!seen) {
            PBX_REQUIRE(*count < cap);
            memcpy(words[*count], w, len);
            words[*count][len] = '\0';
            (*count)++;
        }
    }
}

/* pbx -h, --help and help print the synopsis of every command on stdout
 * and exit 0; each command listed answers COMMAND -h, COMMAND --help and
 * help COMMAND the same way with its own synopsis, even with other
 * arguments after it. */
PBX_TEST(pbx_tool_help_for_every_command)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    static const char *const top[] = {"-h", "--help", "help"};
    t_run_result r;
    for (size_t i = 0; i < PBX_ARRAY_LEN(top); i++) {
        const char *args[] = {top[i], NULL};
        t_run(dir, args, &r);
        PBX_CHECK(t_is_help(&r, "geometry"));
        PBX_CHECK(t_is_help(&r, "fsm"));
        PBX_CHECK(strstr(r.out, "Exit status") != NULL);
    }
    const char *with_dir[] = {"--dir", dir, "--help", NULL};
    t_run(dir, with_dir, &r);
    PBX_CHECK(t_is_help(&r, "fsm"));
    const char *all[] = {"--help", NULL};
    t_run(dir, all, &r);
    char words[32][32];
    size_t count = 0;
    t_listed_commands(r.out, words, PBX_ARRAY_LEN(words), &count);
    PBX_CHECK(count >= 2U);
    for (size_t i = 0; i < count; i++) {
        const char *forms[][4] = {
            {words[i], "-h", NULL, NULL},
            {words[i], "--help", NULL, NULL},
            {"help", words[i], NULL, NULL},
            {words[i], "bogus-word", "--help", NULL},
        };
        for (size_t k = 0; k < PBX_ARRAY_LEN(forms); k++) {
            t_run(dir, forms[k], &r);
            PBX_CHECK(t_is_help(&r, words[i]));
        }
    }
    t_cleanup(dir);
}

/* A malformed pbx command line exits 2 with exactly one line on stderr
 * that names the bad argument, and nothing on stdout. */
PBX_TEST(pbx_tool_usage_errors_name_the_argument)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    static const struct {
        const char *args[5];
        const char *named;
    } cases[] = {
        {{NULL}, "no command"},
        {{"frobnicate", NULL}, "'frobnicate'"},
        {{"--frob", "fsm", NULL}, "'--frob'"},
        {{"--dir", NULL}, "--dir"},
        {{"--dir", "", "fsm", NULL}, "--dir"},
        {{"--dir", "/tmp", NULL}, "no command"},
        {{"help", "frobnicate", NULL}, "'frobnicate'"},
        {{"help", "fsm", "table", NULL}, "'table'"},
        {{"fsm", "frobnicate", NULL}, "fsm"},
        {{"fsm", "--bogus", NULL}, "unknown option '--bogus'"},
        {{"grants", "--bogus", NULL}, "unknown option '--bogus'"},
        {{"cancel", "--bogus", NULL}, "unknown option '--bogus'"},
        {{"log", "--bogus", NULL}, "unknown option '--bogus'"},
        {{"log", "--bogus", "x", NULL}, "unknown option '--bogus'"},
        {{"grants", "--dir", NULL}, "option needs a value '--dir'"},
        {{"log", "--format", NULL}, "option needs a value '--format'"},
        {{"geometry", NULL}, "missing subcommand"},
        {{"geometry", "frob", NULL}, "'frob'"},
        {{"geometry", "show", NULL}, "missing FILE"},
        {{"geometry", "check", "a", "b", NULL}, "'b'"},
        {{"geometry", "make", "--frob", NULL}, "'--frob'"},
        {{"digest", NULL}, "missing selector"},
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        t_run_result r;
        t_run(dir, cases[i].args, &r);
        PBX_CHECK_EQ(r.status, 2);
        PBX_CHECK_EQ(t_lines(r.err), 1U);
        PBX_CHECK(strstr(r.err, cases[i].named) != NULL);
        PBX_CHECK_EQ(r.out[0], '\0');
    }
    /* After --dir the command runs as before. */
    const char *args[] = {"--dir", dir, "fsm", "table", NULL};
    t_run_result r;
    t_run(dir, args, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK(strstr(r.out, "|") != NULL);
    t_cleanup(dir);
}

/* pbx open: each malformed command line exits 2 with one line naming the
 * bad argument before anything is asked; outside a launchd job (no
 * PBX_LAUNCHD_FD) a well-formed one exits 1 with one line saying so. */
PBX_TEST(pbx_tool_open_usage_and_outside_a_job)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    (void)unsetenv("PBX_LAUNCHD_FD");
    static const struct {
        const char *args[5];
        const char *named;
    } cases[] = {
        {{"open", NULL}, "SELECTOR"},
        {{"open", "--op", "frob", "x", NULL}, "'frob'"},
        {{"open", "--lifetime", "forever", "x", NULL}, "'forever'"},
        {{"open", "--urgency", "now", "x", NULL}, "'now'"},
        {{"open", "--wait-ms", "12x", "x", NULL}, "'12x'"},
        {{"open", "x", "--wait-ms", NULL}, "'--wait-ms'"},
        {{"open", "--frob", "x", NULL}, "'--frob'"},
        {{"open", "x", "y", NULL}, "'y'"},
    };
    t_run_result r;
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        t_run(dir, cases[i].args, &r);
        PBX_CHECK_EQ(r.status, 2);
        PBX_CHECK_EQ(t_lines(r.err), 1U);
        PBX_CHECK(strstr(r.err, cases[i].named) != NULL);
        PBX_CHECK_EQ(r.out[0], '\0');
    }
    const char *alone[] = {"--dir", dir, "open", "docs/readme.txt", NULL};
    t_run(dir, alone, &r);
    PBX_CHECK_EQ(r.status, 1);
    PBX_CHECK_EQ(t_lines(r.err), 1U);
    PBX_CHECK(strstr(r.err, "PBX_LAUNCHD_FD") != NULL);
    PBX_CHECK_EQ(r.out[0], '\0');
    t_cleanup(dir);
}

/* `pbx digest` prints SHA-256 over exactly the selector's bytes (the FIPS
 * 180-4 "abc" vector and the empty-free two-block vector), refuses an
 * empty or over-long selector with one line (exit 1) and a missing one as
 * a usage error (exit 2). */
PBX_TEST(pbx_tool_digest_vectors_and_refusals)
{
    char dir[PATH_MAX];
    t_tmpdir(dir, sizeof(dir));
    t_run_result r;
    const char *abc[] = {"digest", "abc", NULL};
    t_run(dir, abc, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK(strcmp(r.out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb"
                            "410ff61f20015ad  abc\n") == 0);
    const char *two[] = {
        "digest", "abc",
        "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", NULL};
    t_run(dir, two, &r);
    PBX_CHECK_EQ(r.status, 0);
    PBX_CHECK(strstr(r.out, "\n248d6a61d20638b8e5c026930c3e6039a33ce45964ff2"
                            "167f6ecedd419db06c1  abcdbcdecdefdefgefghfghighij"
                            "hijkijkljklmklmnlmnomnopnopq\n") != NULL);
    PBX_CHECK_EQ(t_lines(r.out), 2U);
    static char long_sel[PBX_CORE_SELECTOR_BYTES_MAX + 2U];
    memset(long_sel, 'a', PBX_CORE_SELECTOR_BYTES_MAX + 1U);
    const char *too_long[] = {"digest", long_sel, NULL};
    t_run(dir, too_long, &r);
    PBX_CHECK_EQ(r.status, 1);
    PBX_CHECK_EQ(t_lines(r.err), 1U);
    PBX_CHECK_EQ(r.out[0], '\0');
    const char *empty[] = {"digest", "", NULL};
    t_run(dir, empty, &r);
    PBX_CHECK_EQ(r.status, 1);
    const char *none[] = {"digest", NULL};
    t_run(dir, none, &r);
    PBX_CHECK_EQ(r.status, 2);
    PBX_CHECK(strstr(r.err, "missing selector") != NULL);
    t_cleanup(dir);
}
