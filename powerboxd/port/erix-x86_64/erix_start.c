/*
 * erix_start.c: the process entry point and exit of the erix-x86_64 port.
 *
 * The EriX loader (procd) starts the process at _start with rsp pointing
 * at the same argc/argv layout the System V ABI describes, which keeps the
 * runtime's start record identical on both ports.
 */
#include "powerboxd/port/erix-x86_64/erix_int.h"

/* Declared here so -Wmissing-prototypes holds; called only from _start. */
_Noreturn void erix_start_c(const uint64_t *sp);

/* The frame pointer is cleared to end backtraces; the stack is realigned to
 * 16 bytes before the call, as the ABI requires at a call boundary. */
__asm__(".section .text.start,\"ax\",@progbits\n"
        ".globl _start\n"
        ".type _start,@function\n"
        "_start:\n"
        "    xorl %ebp, %ebp\n"
        "    movq %rsp, %rdi\n"
        "    andq $-16, %rsp\n"
        "    call erix_start_c\n"
        "    hlt\n"
        ".size _start, . - _start\n"
        ".text\n");

/* Builds the start record from the initial stack and runs the executable. */
_Noreturn void erix_start_c(const uint64_t *sp)
{
    pbx_port_start start;
    uint64_t argc = sp[0];
    start.argc = argc > 0xFFFFU ? 0xFFFFU : (uint32_t)argc;
    start.pad = 0;
    start.argv = (const char *const *)(const void *)(sp + 1);
    pbx_port_exit(pbx_port_main(&start));
}

_Noreturn void pbx_port_exit(uint8_t status)
{
    (void)erix_sys(ERIX_SYS_EXIT, status, 0, 0, 0, (uint64_t *)0);
    /* ERIX_SYS_EXIT cannot return; should it ever, stop rather than run. */
    __builtin_trap();
}

bool pbx_port_log(const uint8_t *msg, uint32_t len_bytes)
{
    /* The assumed EriX ABI has no console: the exit status alone
     * classifies the failure there. */
    (void)msg;
    (void)len_bytes;
    return false;
}

bool pbx_port_print(const uint8_t *msg, uint32_t len_bytes)
{
    (void)msg;
    (void)len_bytes;
    return false;
}
