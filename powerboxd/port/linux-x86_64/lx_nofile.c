/*
 * lx_nofile.c: fitting the process's descriptor limit (RLIMIT_NOFILE) to
 * the port's reservable range, once, at startup.
 *
 * The kernel refuses any descriptor number at or above the soft limit, so
 * a reservation, a receipt move or a received descriptor landing high in
 * the range would fail at run time, long after startup, when the range
 * ends above the limit. The range of powerboxd ends at slot 4095
 * (PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX slots from slot 64), above the
 * usual soft limit of 1024 and inside the kernel's default hard limit of
 * 4096. An unprivileged process may raise its soft limit up to its hard
 * limit, so the port does that; a hard limit below the range's end is a
 * deployment the port cannot serve, and startup is refused instead
 * (PBX_E_PORT_NOFILE; powerboxd exits with PBX_RT_EXIT_NOFILE).
 */
#include "powerboxd/port/linux-x86_64/lx_int.h"

/** LX_SYS_PRLIMIT64 is prlimit64(pid, resource, new, old). */
#define LX_SYS_PRLIMIT64 302
/** LX_RLIMIT_NOFILE is the descriptor-count resource. */
#define LX_RLIMIT_NOFILE 7
/** LX_RLIM_INFINITY is "no limit". */
#define LX_RLIM_INFINITY UINT64_MAX

/** lx_rlimit64 is struct rlimit64: the soft limit, then the hard. */
struct lx_rlimit64 {
    /** Soft limit: the kernel's bound on new descriptor numbers. */
    uint64_t cur;
    /** Hard limit: the most the soft limit may be raised to. */
    uint64_t max;
};

pbx_err lx_nofile_fit(int32_t slot_max)
{
    struct lx_rlimit64 rl = {0U, 0U};
    if (!lx_slot_valid(slot_max)) {
        return PBX_E_PORT_SLOT_RANGE;
    }
    /* Descriptor numbers below the limit are allowed: the range's last
     * slot needs a limit of one more. */
    uint64_t need = (uint64_t)slot_max + 1U;
    if (lx_sys6(LX_SYS_PRLIMIT64, 0, LX_RLIMIT_NOFILE, 0, lx_ptr(&rl), 0, 0) !=
        0) {
        return PBX_E_PORT_SYSCALL;
    }
    if (rl.max != LX_RLIM_INFINITY && rl.max < need) {
        return PBX_E_PORT_NOFILE;
    }
    if (rl.cur != LX_RLIM_INFINITY && rl.cur < need) {
        /* Raised to what the range needs, never above the hard limit
         * (checked just above), so no privilege is involved. */
        rl.cur = need;
        if (lx_sys6(LX_SYS_PRLIMIT64, 0, LX_RLIMIT_NOFILE, lx_ptr(&rl), 0, 0,
                    0) != 0) {
            return PBX_E_PORT_SYSCALL;
        }
    }
    return PBX_OK;
}
