/*
 * pbx_test.c: registration, filtering and reporting for the test runner.
 *
 * Usage: pbx-test [--list] [FILTER...]. With filters, only tests whose name
 * contains one of them run. The last line is always "N passed, N failed",
 * and the exit status is non-zero when any test failed or when a filter
 * selected nothing (a run that tests nothing must not look green).
 *
 * With PBX_TEST_FAILFAST=1 in the environment the run stops after the first
 * failing test (the counts then cover only the tests that ran) and exits
 * non-zero; the mutation tool uses it so that a mutant a test kills does not
 * pay for the rest of the suite. Any other value, or none, runs every test.
 */
#include "pbx_test.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The registry is a fixed array: tests register before main and the limit
 * is far above what the project needs; exceeding it is a loud failure. */
#define PBX_TEST_MAX 4096

struct pbx_test_entry {
    const char *name;
    const char *file;
    pbx_test_fn fn;
};

static struct pbx_test_entry pbx_tests[PBX_TEST_MAX];
static size_t pbx_test_count;
static unsigned long pbx_test_failures;
static jmp_buf pbx_test_jump;
unsigned long pbx_test_checks;

void pbx_test_register(const char *name, const char *file, pbx_test_fn fn)
{
    if (pbx_test_count >= PBX_TEST_MAX) {
        fprintf(stderr, "pbx-test: too many tests (limit %d)\n", PBX_TEST_MAX);
        exit(2);
    }
    pbx_tests[pbx_test_count].name = name;
    pbx_tests[pbx_test_count].file = file;
    pbx_tests[pbx_test_count].fn = fn;
    pbx_test_count++;
}

void pbx_test_fail(const char *file, int line, const char *msg)
{
    pbx_test_failures++;
    fprintf(stderr, "  %s:%d: %s\n", file, line, msg);
}

void pbx_test_failf(const char *file, int line, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    pbx_test_fail(file, line, buf);
}

_Noreturn void pbx_test_abort(void)
{
    longjmp(pbx_test_jump, 1);
}

void pbx_test_check_mem(const char *file, int line, const char *what,
                        const void *a, const void *b, size_t n)
{
    const unsigned char *x = a;
    const unsigned char *y = b;
    for (size_t i = 0; i < n; i++) {
        if (x[i] != y[i]) {
            pbx_test_failf(file, line,
                           "%s differs at byte %zu: 0x%02x != 0x%02x", what, i,
                           x[i], y[i]);
            return;
        }
    }
}

uint64_t pbx_test_rng_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/* Returns 1 when the test's name contains one of the filters (or there are
 * no filters). */
static int pbx_test_selected(const char *name, int nfilter, char **filters)
{
    if (nfilter == 0) {
        return 1;
    }
    for (int i = 0; i < nfilter; i++) {
        if (strstr(name, filters[i]) != NULL) {
            return 1;
        }
    }
    return 0;
}

/* Runs one test and reports whether it passed. A test that evaluated no
 * check at all counts as failed: a test that asserts nothing proves nothing. */
static int pbx_test_run_one(const struct pbx_test_entry *t)
{
    unsigned long before = pbx_test_failures;
    pbx_test_checks = 0;
    if (setjmp(pbx_test_jump) == 0) {
        t->fn();
    }
    if (pbx_test_checks == 0) {
        pbx_test_fail(t->file, 0, "test evaluated no checks");
    }
    int ok = pbx_test_failures == before;
    printf("%s %s (%lu checks)\n", ok ? "ok  " : "FAIL", t->name,
           pbx_test_checks);
    fflush(stdout);
    return ok;
}

/* Returns 1 when PBX_TEST_FAILFAST=1 asks to stop at the first failure. */
static int pbx_test_failfast(void)
{
    const char *v = getenv("PBX_TEST_FAILFAST");
    return v != NULL && strcmp(v, "1") == 0;
}

int main(int argc, char **argv)
{
    int list = argc > 1 && strcmp(argv[1], "--list") == 0;
    int failfast = pbx_test_failfast();
    int nfilter = argc - 1 - list;
    char **filters = argv + 1 + list;
    unsigned long passed = 0;
    unsigned long failed = 0;
    for (size_t i = 0; i < pbx_test_count; i++) {
        if (!pbx_test_selected(pbx_tests[i].name, nfilter, filters)) {
            continue;
        }
        if (list) {
            printf("%s\n", pbx_tests[i].name);
            continue;
        }
        if (pbx_test_run_one(&pbx_tests[i])) {
            passed++;
        } else {
            failed++;
            if (failfast) {
                break;
            }
        }
    }
    if (list) {
        return 0;
    }
    if (passed + failed == 0) {
        fprintf(stderr, "pbx-test: no test matched\n");
        failed = 1;
    }
    printf("%lu passed, %lu failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
