/*
 * bench_open.c: pbx-bench-open, the cost of one open() (docs/BENCH.md,
 * "Brokered open"). It opens FILE read-only and closes it N times,
 * timing each pair, and prints one line:
 *
 *   open n=N best_ns=B median_ns=M failed=F
 *
 * Run plainly it times the kernel's open; run under `pbx run --sandbox
 * --scope` every open is brokered (a request made as the job, the
 * policy's answer, vfsd's OPEN, the injected descriptor). Statically
 * linked, so launchd's sandbox runs it without the system profile's
 * libraries. Usage: pbx-bench-open FILE N (N 1..100000).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* The most opens timed. */
#define BO_N_MAX 100000L

static uint64_t bo_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000U + (uint64_t)ts.tv_nsec;
}

/* qsort's order for the samples. */
static int bo_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y ? 1 : 0;
}

int main(int argc, char **argv)
{
    static uint64_t ns[BO_N_MAX];
    long n = argc == 3 ? strtol(argv[2], NULL, 10) : 0L;
    if (n < 1L || n > BO_N_MAX) {
        (void)fprintf(stderr, "usage: pbx-bench-open FILE N (1..%ld)\n",
                      BO_N_MAX);
        return 2;
    }
    long ok = 0;
    long failed = 0;
    for (long i = 0; i < n; i++) {
        uint64_t t0 = bo_now_ns();
        int fd = open(argv[1], O_RDONLY | O_CLOEXEC);
        uint64_t t1 = bo_now_ns();
        if (fd < 0) {
            failed++;
            continue;
        }
        (void)close(fd);
        ns[ok++] = t1 - t0;
    }
    if (ok == 0L) {
        (void)printf("open n=%ld best_ns=0 median_ns=0 failed=%ld\n", n,
                     failed);
        return 1;
    }
    qsort(ns, (size_t)ok, sizeof(ns[0]), bo_cmp);
    (void)printf("open n=%ld best_ns=%llu median_ns=%llu failed=%ld\n", n,
                 (unsigned long long)ns[0], (unsigned long long)ns[ok / 2L],
                 failed);
    return 0;
}
