/*
 * pbx_test.h: the project's own test runner (hosted; never shipped).
 *
 * A test is a function declared with PBX_TEST(name). It registers itself
 * before main runs, so adding a test file to tests/ is all it takes. Checks
 * record a failure with file and line and let the test continue, so one run
 * shows every broken assertion; PBX_REQUIRE stops the current test instead.
 */
#ifndef PBX_TEST_H
#define PBX_TEST_H

#include <stddef.h>
#include <stdint.h>

/** pbx_test_fn is the signature of every test body. */
typedef void (*pbx_test_fn)(void);

/**
 * pbx_test_register adds a test to the global list. name and file must be
 * static strings; the runner keeps the pointers for the whole run.
 */
void pbx_test_register(const char *name, const char *file, pbx_test_fn fn);

/**
 * pbx_test_fail records one failed check in the running test and prints
 * file, line and message to stderr. Returns nothing; the test continues.
 */
void pbx_test_fail(const char *file, int line, const char *msg);

/** pbx_test_failf is pbx_test_fail with printf-style formatting. */
void pbx_test_failf(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * pbx_test_abort ends the running test at once (after a failed
 * PBX_REQUIRE); the runner moves on to the next test.
 */
_Noreturn void pbx_test_abort(void);

/** pbx_test_checks counts the checks evaluated so far by the running test. */
extern unsigned long pbx_test_checks;

/** PBX_TEST declares and registers a test named name. */
#define PBX_TEST(name)                                                         \
    static void pbx_test_body_##name(void);                                    \
    __attribute__((constructor)) static void pbx_test_reg_##name(void)         \
    {                                                                          \
        pbx_test_register(#name, __FILE__, pbx_test_body_##name);              \
    }                                                                          \
    static void pbx_test_body_##name(void)

/** PBX_CHECK records a failure when cond is false. */
#define PBX_CHECK(cond)                                                        \
    do {                                                                       \
        pbx_test_checks++;                                                     \
        if (!(cond)) {                                                         \
            pbx_test_fail(__FILE__, __LINE__, "check failed: " #cond);         \
        }                                                                      \
    } while (0)

/** PBX_REQUIRE ends the test when cond is false. */
#define PBX_REQUIRE(cond)                                                      \
    do {                                                                       \
        pbx_test_checks++;                                                     \
        if (!(cond)) {                                                         \
            pbx_test_fail(__FILE__, __LINE__, "required: " #cond);             \
            pbx_test_abort();                                                  \
        }                                                                      \
    } while (0)

/** PBX_CHECK_EQ compares two integers and prints both on mismatch. */
#define PBX_CHECK_EQ(a, b)                                                     \
    do {                                                                       \
        unsigned long long pbx_a_ = (unsigned long long)(a);                   \
        unsigned long long pbx_b_ = (unsigned long long)(b);                   \
        pbx_test_checks++;                                                     \
        if (pbx_a_ != pbx_b_) {                                                \
            pbx_test_failf(__FILE__, __LINE__, "%s == %s: 0x%llx != 0x%llx",   \
                           #a, #b, pbx_a_, pbx_b_);                            \
        }                                                                      \
    } while (0)

/** PBX_CHECK_MEM compares n bytes and prints the first difference. */
#define PBX_CHECK_MEM(a, b, n)                                                 \
    do {                                                                       \
        pbx_test_checks++;                                                     \
        pbx_test_check_mem(__FILE__, __LINE__, #a, (a), (b), (n));             \
    } while (0)

/**
 * pbx_test_check_mem backs PBX_CHECK_MEM: compares n bytes of a and b and
 * records a failure naming the first differing offset.
 */
void pbx_test_check_mem(const char *file, int line, const char *what,
                        const void *a, const void *b, size_t n);

/**
 * pbx_test_rng_next is a small deterministic generator (xorshift64*) for
 * tests that need varied input; *state must be nonzero.
 */
uint64_t pbx_test_rng_next(uint64_t *state);

#endif /* PBX_TEST_H */
