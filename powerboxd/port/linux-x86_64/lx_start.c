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
