/*
 * lx_start.c: the process entry point and exit of the linux-x86_64 port.
 *
 * The kernel starts the process at _start with rsp pointing at argc, then
 * the argv pointers, a NULL, the environment and the auxiliary vector.
 * Nothing is initialised for us and nothing needs to be: the image has no
 * constructors, no TLS and no relocations (static, non-PIE). _start lives
 * in .text.start so linker.ld can place it first.
 */
#include "powerboxd/port/linux-x86_64/lx_int.h"
#include "powerboxd/port/linux-x86_64/lx_vdso.h"

/* Declared here so -Wmissing-prototypes holds; called only from _start. */
_Noreturn void lx_start_c(const uint64_t *sp);

/* The frame pointer is cleared to end backtraces; the stack is realigned to
 * 16 bytes before the call, as the ABI requires at a call boundary. */
__asm__(".section .text.start,\"ax\",@progbits\n"
        ".globl _start\n"
        ".type _start,@function\n"
        "_start:\n"
        "    xorl %ebp, %ebp\n"
        "    movq %rsp, %rdi\n"
        "    andq $-16, %rsp\n"
        "    call lx_start_c\n"
        "    hlt\n"
        ".size _start, . - _start\n"
        ".text\n");

/* Builds the start record from the initial stack and runs the executable.
 * argc is clamped to what fits the record's 32-bit count. */
_Noreturn void lx_start_c(const uint64_t *sp)
{
    pbx_port_start start;
    uint64_t argc = sp[0];
    start.argc = argc > 0xFFFFU ? 0xFFFFU : (uint32_t)argc;
    start.pad = 0;
    start.argv = (const char *const *)(const void *)(sp + 1);
    /* The vDSO's clock, from the auxiliary vector above the stack. */
    lx_clock_init(sp);
    pbx_port_exit(pbx_port_main(&start));
}

_Noreturn void pbx_port_exit(uint8_t status)
{
    (void)lx_sys1(LX_SYS_EXIT_GROUP, (int64_t)status);
    /* exit_group cannot return; should it ever, stop rather than run on. */
    __builtin_trap();
}

/** LX_START_SYS_POLL is poll(fds, n, timeout). */
#define LX_START_SYS_POLL 7
/** LX_START_POLLOUT asks poll for writability. */
#define LX_START_POLLOUT 0x004
/** LX_START_POLL_BAD is POLLERR | POLLHUP | POLLNVAL: no reader, or no
 * descriptor. */
#define LX_START_POLL_BAD 0x038
/** LX_START_LINE_MAX is PIPE_BUF: a pipe takes a line this long whole. */
#define LX_START_LINE_MAX 4096U

/** lx_start_pollfd is struct pollfd. */
struct lx_start_pollfd {
    /** Descriptor. */
    // cppcheck-suppress unusedStructMember
    int32_t fd;
    /** Requested events. */
    // cppcheck-suppress unusedStructMember
    int16_t events;
    /** Returned events. */
    int16_t revents;
};

bool pbx_port_log(const uint8_t *msg, uint32_t len_bytes)
{
    struct lx_start_pollfd p = {2, LX_START_POLLOUT, 0};
    if (len_bytes == 0U || len_bytes > LX_START_LINE_MAX) {
        return false;
    }
    /* Never wait: a full pipe or a slow terminal loses the line (the
     * runtime counts it), and a pipe with no reader is never written,
     * so it raises no SIGPIPE. A pipe with room for one page takes a
     * line of at most PIPE_BUF bytes whole without blocking. */
    if (lx_sys3(LX_START_SYS_POLL, lx_ptr(&p), 1, 0) != 1 ||
        (p.revents & LX_START_POLL_BAD) != 0 ||
        (p.revents & LX_START_POLLOUT) == 0) {
        return false;
    }
    return lx_sys3(LX_SYS_WRITE, 2, lx_ptr(msg), (int64_t)len_bytes) ==
           (int64_t)len_bytes;
}

bool pbx_port_print(const uint8_t *msg, uint32_t len_bytes)
{
    uint32_t done = 0;
    /* Each write makes progress or fails; bounded by len_bytes writes. */
    for (uint32_t n = 0; n < len_bytes && done < len_bytes; n++) {
        int64_t r = lx_sys3(LX_SYS_WRITE, 1, lx_ptr(msg + done),
                            (int64_t)(len_bytes - done));
        if (r <= 0) {
            return false;
        }
        done += (uint32_t)r;
    }
    return done == len_bytes;
}
