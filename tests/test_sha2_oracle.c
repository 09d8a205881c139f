/*
 * test_sha2_oracle.c: pbx_sha2 against the system's sha256sum on
 * pseudo-random inputs of every length from 0 to 1,100 bytes.
 *
 * All inputs are written as files into one temporary directory and a
 * single sha256sum run digests them, so the oracle costs one process, not
 * 1,101. The child is started with posix_spawnp and an explicit argument
 * vector, so no shell is involved. Our digests are taken on every
 * compression path the CPU has, each forced in turn.
 */
#include "runner/pbx_test.h"
#include "sha2/pbx_sha2.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { ORACLE_LEN_MAX = 1100 };

static uint8_t oracle_input[ORACLE_LEN_MAX + 1];
static uint8_t oracle_want[ORACLE_LEN_MAX + 1][PBX_SHA2_DIGEST_BYTES];
static bool oracle_seen[ORACLE_LEN_MAX + 1];

/* Writes input prefix n as file <dir>/<n zero-padded>; true on success. */
static bool oracle_write(const char *dir, size_t n)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/%04zu", dir, n);
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return false;
    }
    bool ok = fwrite(oracle_input, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Returns the value of one lower-case hex digit, or 16 for any other
 * character. */
static unsigned oracle_nibble(char c)
{
    if (c >= '0' && c <= '9') {
        return (unsigned)(c - '0');
    }
    if (c >= 'a' && c <= 'f') {
        return (unsigned)(c - 'a') + 10U;
    }
    return 16U;
}

/* Parses one "<64 hex>  <dir>/<nnnn>" line into oracle_want. */
static bool oracle_parse_line(const char *line)
{
    const char *slash = strrchr(line, '/');
    if (strlen(line) < (size_t)2 * PBX_SHA2_DIGEST_BYTES || slash == NULL) {
        return false;
    }
    char *end = NULL;
    long n = strtol(slash + 1, &end, 10);
    if (end == slash + 1 || n < 0 || n > ORACLE_LEN_MAX || oracle_seen[n]) {
        return false;
    }
    for (size_t i = 0; i < PBX_SHA2_DIGEST_BYTES; i++) {
        unsigned hi = oracle_nibble(line[2U * i]);
        unsigned lo = oracle_nibble(line[(2U * i) + 1U]);
        if (hi > 15U || lo > 15U) {
            return false;
        }
        oracle_want[n][i] = (uint8_t)((hi << 4) | lo);
    }
    oracle_seen[n] = true;
    return true;
}

/* Runs one sha256sum over every input file (no shell: argv is built
 * here), its output going to <dir>/sums; returns true on exit status 0. */
static bool oracle_spawn(const char *dir)
{
    static char names[ORACLE_LEN_MAX + 1][64];
    static char *argv[ORACLE_LEN_MAX + 4];
    char out[256];
    snprintf(out, sizeof(out), "%s/sums", dir);
    argv[0] = "sha256sum";
    argv[1] = "--";
    for (size_t n = 0; n <= ORACLE_LEN_MAX; n++) {
        snprintf(names[n], sizeof(names[n]), "%s/%04zu", dir, n);
        argv[n + 2U] = names[n];
    }
    argv[ORACLE_LEN_MAX + 3] = NULL;
    posix_spawn_file_actions_t fa;
    pid_t pid = 0;
    int status = 0;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        return false;
    }
    int rc = posix_spawn_file_actions_addopen(
        &fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (rc == 0) {
        rc = posix_spawnp(&pid, "sha256sum", &fa, NULL, argv, environ);
    }
    posix_spawn_file_actions_destroy(&fa);
    return rc == 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
}

/* Digests every input with sha256sum; returns the lines parsed. */
static size_t oracle_run(const char *dir)
{
    char path[256];
    char line[512];
    size_t parsed = 0;
    if (!oracle_spawn(dir)) {
        return 0;
    }
    snprintf(path, sizeof(path), "%s/sums", dir);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return 0;
    }
    while (parsed <= ORACLE_LEN_MAX && fgets(line, sizeof(line), f) != NULL) {
        if (!oracle_parse_line(line)) {
            break;
        }
        parsed++;
    }
    (void)fclose(f);
    return parsed;
}

static void oracle_cleanup(const char *dir)
{
    char path[256];
    for (size_t n = 0; n <= ORACLE_LEN_MAX; n++) {
        snprintf(path, sizeof(path), "%s/%04zu", dir, n);
        (void)unlink(path);
    }
    snprintf(path, sizeof(path), "%s/sums", dir);
    (void)unlink(path);
    (void)rmdir(dir);
}

PBX_TEST(sha2_oracle_sha256sum_every_length_to_1100)
{
    char dir[] = "/tmp/pbx-sha2-oracle-XXXXXX";
    uint64_t rng = 0x9E3779B97F4A7C15ULL;
    size_t written = 0;
    size_t bad = 0;
    for (size_t i = 0; i <= ORACLE_LEN_MAX; i++) {
        oracle_input[i] = (uint8_t)(pbx_test_rng_next(&rng) >> 56);
    }
    memset(oracle_seen, 0, sizeof(oracle_seen));
    PBX_REQUIRE(mkdtemp(dir) != NULL);
    for (size_t n = 0; n <= ORACLE_LEN_MAX; n++) {
        written += oracle_write(dir, n) ? 1U : 0U;
    }
    size_t parsed = written == ORACLE_LEN_MAX + 1U ? oracle_run(dir) : 0U;
    oracle_cleanup(dir);
    PBX_REQUIRE(parsed == ORACLE_LEN_MAX + 1U);
    for (size_t n = 0; n <= ORACLE_LEN_MAX; n++) {
        PBX_CHECK(oracle_seen[n]);
    }
    /* Every compression path this CPU has, each forced in turn. */
    pbx_sha2_path was = pbx_sha2_path_current();
    const pbx_sha2_path paths[] = {PBX_SHA2_PATH_PORTABLE,
                                   PBX_SHA2_PATH_X86_SHA};
    for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
        if (pbx_sha2_path_set(paths[p]) != PBX_OK) {
            continue;
        }
        for (size_t n = 0; n <= ORACLE_LEN_MAX; n++) {
            uint8_t got[PBX_SHA2_DIGEST_BYTES];
            if (pbx_sha2_digest(oracle_input, n, got) != PBX_OK ||
                memcmp(got, oracle_want[n], sizeof(got)) != 0) {
                pbx_test_failf(__FILE__, __LINE__,
                               "path %d: length %zu disagrees", (int)paths[p],
                               n);
                bad++;
            }
        }
    }
    PBX_REQUIRE(pbx_sha2_path_set(was) == PBX_OK);
    PBX_CHECK_EQ(bad, 0U);
}
