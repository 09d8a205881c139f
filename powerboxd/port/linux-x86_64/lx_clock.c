/*
 * lx_clock.c: the linux-x86_64 port's clock reads, through the vDSO's
 * __vdso_clock_gettime where the kernel maps one, else the system call.
 *
 * powerboxd reads CLOCK_MONOTONIC a few dozen times per lifecycle (each
 * loop pass and each message's idle stamp). Through the vDSO each read
 * is a function call that stays in user space; the result is the same
 * clock, so every deadline keeps its exact meaning, which reading the
 * clock once per loop pass would not give (a pass can last as long as a
 * peer call). The function is found once, at startup, from the auxiliary
 * vector (lx_clock_init); the lookup is lx_vdso.c's.
 */
#include "powerboxd/port/linux-x86_64/lx_int.h"
#include "powerboxd/port/linux-x86_64/lx_vdso.h"

/** clock_gettime(clock, struct timespec *). */
#define LX_CLOCK_SYS_GETTIME 228
/** AT_NULL ends the auxiliary vector. */
#define LX_AT_NULL 0U
/** AT_SYSINFO_EHDR: the address of the vDSO's ELF header. */
#define LX_AT_SYSINFO_EHDR 33U
/** Bound on environment entries walked to reach the auxiliary vector
 * (the kernel limits argv and envp together to far fewer). */
#define LX_CLOCK_ENV_MAX (1U << 22)
/** Bound on auxiliary vector entries (Linux passes about 20). */
#define LX_CLOCK_AUXV_MAX 512U

/** struct timespec as the kernel and the vDSO write it. */
struct lx_clock_ts {
    /** Seconds. */
    int64_t sec;
    /** Nanoseconds. */
    int64_t nsec;
};

/** The vDSO's clock_gettime: the C calling convention, int clockid_t. */
typedef int (*lx_clock_fn)(int clock, struct lx_clock_ts *ts);

/* clock_gettime as a system call: the read without a vDSO, and the
 * fallback when the vDSO's function fails. */
static int lx_clock_sys(int clock, struct lx_clock_ts *ts)
{
    return (int)lx_sys3(LX_CLOCK_SYS_GETTIME, clock, lx_ptr(ts), 0);
}

/** The clock read: the system call until lx_clock_init finds the vDSO's
 * function. Set once by lx_clock_init, before any read, never after. It
 * is never NULL, so the image's stack check (tests/port/stack_depth.py)
 * sees lx_clock_sys as a target of the one indirect call; the vDSO's own
 * frame is the kernel's and outside the image. */
static lx_clock_fn lx_clock_read = lx_clock_sys;

/* The auxiliary vector's value for type, or 0 when absent. */
static uint64_t lx_clock_auxv(const uint64_t *sp, uint64_t type)
{
    uint64_t argc = sp[0];
    /* argv's argc pointers and its NULL, then the environment. */
    const uint64_t *p = sp + 1 + argc + 1;
    uint32_t n = 0;
    while (n < LX_CLOCK_ENV_MAX && *p != 0U) {
        p++;
        n++;
    }
    if (n == LX_CLOCK_ENV_MAX) {
        return 0;
    }
    p++;
    /* (type, value) pairs up to AT_NULL. */
    for (uint32_t i = 0; i < LX_CLOCK_AUXV_MAX && p[0] != LX_AT_NULL; i++) {
        if (p[0] == type) {
            return p[1];
        }
        p += 2;
    }
    return 0;
}

void lx_clock_init(const uint64_t *sp)
{
    uint64_t base = lx_clock_auxv(sp, LX_AT_SYSINFO_EHDR);
    /* The kernel's address for the image, an integer in the vector. */
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    const uint8_t *image = (const uint8_t *)(uintptr_t)base;
    size_t off = 0;
    if (base == 0U) {
        return;
    }
    size_t len = lx_vdso_image_len(image);
    if (len != 0U && lx_vdso_find(image, len, "__vdso_clock_gettime", &off)) {
        /* A code address inside the vDSO's executable segment. */
        // NOLINTNEXTLINE(performance-no-int-to-ptr)
        lx_clock_read = (lx_clock_fn)(uintptr_t)(base + off);
    }
}

int64_t lx_clock_gettime(int32_t clock, int64_t *sec, int64_t *nsec)
{
    struct lx_clock_ts ts = {0, 0};
    int64_t r = lx_clock_read(clock, &ts);
    if (r != 0 && lx_clock_read != lx_clock_sys) {
        /* The vDSO refused: the kernel answers. */
        r = lx_clock_sys(clock, &ts);
    }
    *sec = ts.sec;
    *nsec = ts.nsec;
    return r;
}
