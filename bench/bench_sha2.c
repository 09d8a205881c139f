/*
 * bench_sha2.c: `pbx-bench sha2`, SHA-256 throughput of the project's
 * sha2 library against the machine's sha256sum on the same bytes.
 *
 * The data is deterministic (xorshift64), written to --file so sha256sum
 * reads exactly what was hashed in memory; the two digests must agree or
 * the run fails. Ours is timed in memory with CLOCK_MONOTONIC and the
 * time-stamp counter (cycles per byte): each 1 MiB piece of the buffer as
 * a message of its own, --reps passes, the fastest piece scaled to the
 * whole (sha_time_ours says why); the oracle best-of --reps as a whole
 * process (spawn, read from the page cache, hash). Under callgrind,
 * bench_sha2_measure alone gives instructions per byte: it hashes the
 * buffer once whole and once per pass in pieces.
 *
 * --path picks the compression path: 0 the portable rounds, 1 the x86
 * SHA extensions (the run fails with status 2 where they are missing),
 * 2 (the default) whatever pbx_sha2_select picks, as powerboxd does.
 * Valgrind's CPU does not report the extensions, so under callgrind
 * --path 2 measures the portable path and --path 1 is refused.
 */
#include "bench/bench.h"

#include "sha2/pbx_sha2.h"

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* Fills buf with len deterministic pseudo-random bytes. */
static void sha_fill(uint8_t *buf, size_t len)
{
    uint64_t x = UINT64_C(0x9E3779B97F4A7C15);
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        buf[i] = (uint8_t)(x >> 24);
    }
}

/* The measured hash: callgrind collects exactly this function. */
BENCH_MEASURED static bool bench_sha2_measure(const uint8_t *buf, size_t len,
                                              uint8_t *digest)
{
    return pbx_sha2_digest(buf, len, digest) == PBX_OK;
}

/* Writes len bytes of buf to path. */
static bool sha_write(const char *path, const uint8_t *buf, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (f == NULL) {
        return false;
    }
    bool ok = fwrite(buf, 1, len, f) == len;
    return fclose(f) == 0 && ok;
}

/* Runs `sha256sum path` once; its first 64 output characters go to hex. */
static bool sha_oracle(const char *path, char hex[65])
{
    int fds[2];
    pid_t pid = 0;
    posix_spawn_file_actions_t fa;
    char *args[] = {"sha256sum", (char *)path, NULL};
    if (pipe(fds) != 0) {
        return false;
    }
    (void)posix_spawn_file_actions_init(&fa);
    (void)posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
    (void)posix_spawn_file_actions_addclose(&fa, fds[0]);
    int rc = posix_spawnp(&pid, "sha256sum", &fa, NULL, args, environ);
    (void)posix_spawn_file_actions_destroy(&fa);
    (void)close(fds[1]);
    size_t got = 0;
    while (rc == 0 && got < 64U) {
        ssize_t r = read(fds[0], hex + got, 64U - got);
        if (r <= 0) {
            break;
        }
        got += (size_t)r;
    }
    (void)close(fds[0]);
    int status = 0;
    bool exited = rc == 0 && waitpid(pid, &status, 0) == pid &&
                  WIFEXITED(status) && WEXITSTATUS(status) == 0;
    hex[got] = '\0';
    return exited && got == 64U;
}

/* The size of each timed message: short enough to run within one time
 * slice of a loaded machine (about a millisecond at 2 cycles per byte),
 * long enough that init and final are noise. */
#define SHA_PIECE_BYTES ((size_t)1U << 20U)

/* Timing of our hash: the whole buffer's digest (for the oracle check,
 * untimed), then every 1 MiB piece of it hashed as a message of its own,
 * reps times over; ns and cycles are the fastest piece's, scaled to len.
 * The fastest of many short pieces leaves out the time another process
 * held the CPU, which a best-of-three over 64 MiB on a loaded two-core
 * machine could not (a 64 MiB pass spans many time slices). */
static bool sha_time_ours(const uint8_t *buf, size_t len, uint32_t reps,
                          uint8_t *digest, uint64_t *ns, uint64_t *cycles)
{
    uint8_t piece_digest[PBX_SHA2_DIGEST_BYTES];
    if (len == 0U || !bench_sha2_measure(buf, len, digest)) {
        return false;
    }
    size_t piece = len < SHA_PIECE_BYTES ? len : SHA_PIECE_BYTES;
    size_t pieces = len / piece;
    uint64_t best_t = UINT64_MAX;
    uint64_t best_c = UINT64_MAX;
    for (uint32_t r = 0; r < reps; r++) {
        for (size_t i = 0; i < pieces; i++) {
            uint64_t t0 = bench_now_ns();
            uint64_t c0 = bench_cycles();
            if (!bench_sha2_measure(buf + i * piece, piece, piece_digest)) {
                return false;
            }
            uint64_t c = bench_cycles() - c0;
            uint64_t t = bench_now_ns() - t0;
            best_t = t < best_t ? t : best_t;
            best_c = c < best_c ? c : best_c;
        }
    }
    *ns = (uint64_t)((double)best_t * (double)len / (double)piece);
    *cycles = (uint64_t)((double)best_c * (double)len / (double)piece);
    return true;
}

/* Best-of-reps timing of sha256sum; its digest must equal ours. */
static bool sha_time_oracle(const char *path, uint32_t reps,
                            const uint8_t *digest, uint64_t *ns)
{
    char want[65];
    char hex[65];
    for (size_t i = 0; i < PBX_SHA2_DIGEST_BYTES; i++) {
        (void)snprintf(want + 2U * i, 3, "%02x", digest[i]);
    }
    *ns = UINT64_MAX;
    for (uint32_t r = 0; r < reps; r++) {
        uint64_t t0 = bench_now_ns();
        if (!sha_oracle(path, hex)) {
            (void)fprintf(stderr, "bench: sha256sum did not run\n");
            return false;
        }
        uint64_t t = bench_now_ns() - t0;
        *ns = t < *ns ? t : *ns;
        if (strcmp(hex, want) != 0) {
            (void)fprintf(stderr, "bench: digest differs from sha256sum\n");
            return false;
        }
    }
    return true;
}

int bench_sha2_main(int argc, char **argv)
{
    uint32_t mib = bench_arg_u32(argc, argv, "--mib", 64U);
    uint32_t reps = bench_arg_u32(argc, argv, "--reps", 3U);
    uint32_t oracle = bench_arg_u32(argc, argv, "--oracle", 1U);
    uint32_t want_path = bench_arg_u32(argc, argv, "--path", 2U);
    if (want_path == 2U) {
        (void)pbx_sha2_select();
    } else if (pbx_sha2_path_set((pbx_sha2_path)want_path) != PBX_OK) {
        (void)fprintf(stderr, "bench: sha2 path %u is not available here\n",
                      want_path);
        return 2;
    }
    const char *path = NULL;
    for (int i = 1; i + 1 < argc; i++) {
        path = strcmp(argv[i], "--file") == 0 ? argv[i + 1] : path;
    }
    size_t len = (size_t)mib << 20U;
    uint64_t ns = 0;
    uint64_t cyc = 0;
    uint64_t ons = 0;
    uint8_t *buf = malloc(len > 0U ? len : 1U);
    bool ok = buf != NULL && reps > 0U && (oracle == 0U || path != NULL);
    if (ok) {
        uint8_t digest[PBX_SHA2_DIGEST_BYTES];
        sha_fill(buf, len);
        ok = (oracle == 0U || sha_write(path, buf, len)) &&
             sha_time_ours(buf, len, reps, digest, &ns, &cyc) &&
             (oracle == 0U || sha_time_oracle(path, reps, digest, &ons));
    }
    free(buf);
    if (!ok || ns == 0U) {
        (void)fprintf(stderr, "bench: sha2 failed\n");
        return 1;
    }
    (void)printf("sha2 path=%s bytes=%zu pbx_mb_s=%.1f cycles_per_byte=%.2f "
                 "sha256sum_mb_s=%.1f digest_match=%s\n",
                 pbx_sha2_path_current() == PBX_SHA2_PATH_X86_SHA ? "x86-sha"
                                                                  : "portable",
                 len, (double)len * 1e3 / (double)ns, (double)cyc / (double)len,
                 ons > 0U ? (double)len * 1e3 / (double)ons : 0.0,
                 oracle != 0U ? "yes" : "skipped");
    return 0;
}
