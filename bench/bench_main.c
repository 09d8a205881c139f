/*
 * bench_main.c: the pbx-bench entry point (subcommand dispatch) and the
 * helpers every benchmark shares: option parsing and the two clocks.
 */
#include "bench/bench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

uint32_t bench_arg_u32(int argc, char **argv, const char *name, uint32_t def)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) != 0) {
            continue;
        }
        char *end = NULL;
        errno = 0;
        unsigned long v = strtoul(argv[i + 1], &end, 10);
        if (errno != 0 || end == argv[i + 1] || *end != '\0' ||
            v > UINT32_MAX) {
            (void)fprintf(stderr, "pbx-bench: bad value for %s: %s\n", name,
                          argv[i + 1]);
            exit(2);
        }
        return (uint32_t)v;
    }
    return def;
}

uint64_t bench_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000U + (uint64_t)ts.tv_nsec;
}

uint64_t bench_cycles(void)
{
#if defined(__x86_64__)
    return (uint64_t)__rdtsc();
#else
    return 0U;
#endif
}

/* Prints the usage text to stderr. */
static void bench_usage(void)
{
    (void)fprintf(
        stderr,
        "usage: pbx-bench core [--cap N] [--live L] [--open O] [--n K]\n"
        "       pbx-bench floor [--n K]\n"
        "       pbx-bench sha2 [--mib M] [--reps R] --file PATH\n"
        "       pbx-bench seqpacket [--n K] [--batches B]\n"
        "bench/bench.sh runs them all and prints the table.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        bench_usage();
        return 2;
    }
    if (strcmp(argv[1], "core") == 0) {
        return bench_core_main(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "floor") == 0) {
        return bench_floor_main(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "sha2") == 0) {
        return bench_sha2_main(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "seqpacket") == 0) {
        return bench_seqpacket_main(argc - 1, argv + 1);
    }
    bench_usage();
    return 2;
}
