/*
 * sim_main.c: the pbx-sim command line.
 *
 *   pbx-sim --seed N [--steps M] [--faults LIST] [-v]
 *   pbx-sim --seeds A..B [--steps M] [--faults LIST] [--coverage]
 *   pbx-sim --regress FILE [--steps M]
 *
 * LIST is "all", "none" or a comma list of fault names (see --help). Every
 * run prints its trace hash and what its seeds saw of the split-phase
 * calls; --coverage fails when a transition of the core's table was never
 * reached. --strict is accepted and changes nothing: the strict checks
 * always run. Exit status 1 on any violation.
 */
#include "sim/sim.h"

#include <stdlib.h>
#include <string.h>

/* Parses a fault list into a bit set; false on an unknown name. */
static bool sim_parse_faults(const char *list, uint32_t *out)
{
    char buf[512];
    *out = 0U;
    if (strcmp(list, "all") == 0) {
        *out = (1U << SIM_F_COUNT) - 1U;
        return true;
    }
    if (strcmp(list, "none") == 0) {
        return true;
    }
    (void)snprintf(buf, sizeof(buf), "%s", list);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t != NULL;
         t = strtok_r(NULL, ",", &save)) {
        uint32_t f = 0;
        while (f < (uint32_t)SIM_F_COUNT &&
               strcmp(t, sim_fault_name((sim_fault)f)) != 0) {
            f++;
        }
        if (f == (uint32_t)SIM_F_COUNT) {
            (void)fprintf(stderr, "pbx-sim: unknown fault '%s'\n", t);
            return false;
        }
        *out |= 1U << f;
    }
    return true;
}

static void sim_usage(void)
{
    (void)fprintf(stderr, "usage: pbx-sim (--seed N | --seeds A..B | "
                          "--regress FILE) [--steps M] [--faults LIST] "
                          "[--coverage] [-v]\nfaults:");
    for (uint32_t f = 0; f < (uint32_t)SIM_F_COUNT; f++) {
        (void)fprintf(stderr, " %s", sim_fault_name((sim_fault)f));
    }
    (void)fprintf(stderr, "\n");
}

/* Prints the coverage report; returns the number of unreached rows. */
static size_t sim_coverage_report(const uint64_t *cov, bool print_all)
{
    size_t n = 0;
    size_t missing = 0;
    const pbx_core_transition *t = pbx_core_fsm_table(&n);
    for (size_t i = 0; i < n && i < SIM_ROW_MAX; i++) {
        if (cov[i] == 0U || print_all) {
            (void)printf("  %s %s --%s--> %s: %llu\n",
                         t[i].machine == 0U ? "request" : "grant",
                         pbx_core_state_name((pbx_core_state)t[i].from),
                         pbx_core_event_name((pbx_core_event)t[i].event),
                         pbx_core_state_name((pbx_core_state)t[i].to),
                         (unsigned long long)cov[i]);
        }
        missing += cov[i] == 0U ? 1U : 0U;
    }
    (void)printf("coverage: %zu of %zu transitions reached\n", n - missing, n);
    return missing;
}

/* Runs seeds [a, b]; returns the number of failing seeds. */
static sim_totals sim_tot;

static uint64_t sim_range(uint64_t a, uint64_t b, const sim_opts *o,
                          uint64_t *cov, uint64_t *hash)
{
    uint64_t failed = 0;
    for (uint64_t s = a; s <= b && s >= a; s++) {
        uint64_t h = 0;
        failed += (uint64_t)sim_run(s, o, cov, &h, &sim_tot);
        for (unsigned i = 0; i < 8U; i++) {
            *hash ^= (h >> (8U * i)) & 0xFFU;
            *hash *= 0x100000001B3ULL;
        }
    }
    return failed;
}

/* Replays every seed listed in path ("seed [steps]" per line, '#'
 * comments). A seed whose finding lay deeper than the run's --steps names
 * its own step count, so that it replays the very step that failed. */
static uint64_t sim_regress(const char *path, const sim_opts *o, uint64_t *cov,
                            uint64_t *hash, uint64_t *count)
{
    FILE *f = fopen(path, "r");
    char line[256];
    uint64_t failed = 0;
    if (f == NULL) {
        (void)fprintf(stderr, "pbx-sim: cannot open %s\n", path);
        return 1U;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        char *end = NULL;
        unsigned long long s = strtoull(line, &end, 10);
        if (end == line) {
            continue;
        }
        sim_opts one = *o;
        char *rest = end;
        unsigned long long steps = strtoull(rest, &end, 10);
        if (end != rest && steps > one.steps) {
            one.steps = steps;
        }
        failed += sim_range(s, s, &one, cov, hash);
        (*count)++;
    }
    (void)fclose(f);
    return failed;
}

/* Parsed command line. */
typedef struct sim_cli {
    sim_opts opts;
    uint64_t first;
    uint64_t last;
    const char *regress;
    bool coverage;
} sim_cli;

/* Parses "A..B" (or "N") into the range. */
static bool sim_parse_range(const char *s, sim_cli *cli)
{
    char *end = NULL;
    cli->first = strtoull(s, &end, 10);
    cli->last = cli->first;
    if (end == s) {
        return false;
    }
    if (end[0] == '.' && end[1] == '.') {
        const char *b = end + 2;
        cli->last = strtoull(b, &end, 10);
        return end != b && cli->last >= cli->first;
    }
    return end[0] == '\0';
}

static bool sim_parse(int argc, char **argv, sim_cli *cli)
{
    bool have = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "-v") == 0) {
            cli->opts.verbose = 1U;
            continue;
        }
        if (strcmp(a, "--strict") == 0 || strcmp(a, "--coverage") == 0) {
            cli->opts.strict |= a[2] == 's' ? 1U : 0U;
            cli->coverage = cli->coverage || a[2] == 'c';
            continue;
        }
        if (v == NULL) {
            return false;
        }
        if (strcmp(a, "--seed") == 0 || strcmp(a, "--seeds") == 0) {
            have = sim_parse_range(v, cli);
            i++;
        } else if (strcmp(a, "--steps") == 0) {
            cli->opts.steps = strtoull(v, NULL, 10);
            i++;
        } else if (strcmp(a, "--faults") == 0) {
            if (!sim_parse_faults(v, &cli->opts.faults)) {
                return false;
            }
            i++;
        } else if (strcmp(a, "--regress") == 0) {
            cli->regress = v;
            have = true;
            i++;
        } else {
            return false;
        }
    }
    return have && cli->opts.steps > 0U;
}

int main(int argc, char **argv)
{
    static uint64_t cov[SIM_ROW_MAX];
    sim_cli cli;
    memset(&cli, 0, sizeof(cli));
    cli.opts.steps = 20000U;
    cli.opts.faults = (1U << SIM_F_COUNT) - 1U;
    if (!sim_parse(argc, argv, &cli)) {
        sim_usage();
        return 2;
    }
    uint64_t hash = 0xCBF29CE484222325ULL;
    uint64_t count = 0;
    uint64_t failed = 0;
    if (cli.regress != NULL) {
        failed = sim_regress(cli.regress, &cli.opts, cov, &hash, &count);
    } else {
        failed = sim_range(cli.first, cli.last, &cli.opts, cov, &hash);
        count = cli.last - cli.first + 1U;
    }
    (void)printf("pbx-sim: %llu seed(s) x %llu steps, %llu failed, trace "
                 "hash %016llx\n",
                 (unsigned long long)count, (unsigned long long)cli.opts.steps,
                 (unsigned long long)failed, (unsigned long long)hash);
    (void)printf("pbx-sim: %llu replies, %llu refused as late or "
                 "unmatched, %llu calls timed out; worst grant cleanup "
                 "%llu steps after its routes answered (bound %llu)\n",
                 (unsigned long long)sim_tot.replies,
                 (unsigned long long)sim_tot.refused,
                 (unsigned long long)sim_tot.timeouts,
                 (unsigned long long)sim_tot.cleanup_age,
                 (unsigned long long)sim_tot.cleanup_bound);
    (void)printf("pbx-sim: %llu waits for a prompt record; %llu seeds lost "
                 "launchd's broker, %llu met an alias BUSY\n",
                 (unsigned long long)sim_tot.prompt_waits,
                 (unsigned long long)sim_tot.broker_seeds,
                 (unsigned long long)sim_tot.alias_busy_seeds);
    size_t missing = sim_coverage_report(cov, cli.opts.verbose != 0U);
    if (cli.coverage && missing > 0U) {
        (void)printf("pbx-sim: transition coverage incomplete\n");
        return 1;
    }
    return failed > 0U ? 1 : 0;
}
