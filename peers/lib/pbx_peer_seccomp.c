/*
 * pbx_peer_seccomp.c: the walls' seccomp-BPF filter (see
 * pbx_peer_seccomp.h). The program is laid out as
 *
 *   check the architecture, load the call number, refuse x32,
 *   dispatch: clone3, clone, ioctl, each denied call, each self-only call,
 *   allow,
 *   clone's flags block, ioctl's request block, one block per self-only
 *   call, deny (EPERM), no such call (ENOSYS).
 *
 * Classic BPF only jumps forward, so every jump names a label further on;
 * the labels are resolved once every instruction is placed.
 */
#include "peers/lib/pbx_peer_seccomp.h"

#include <errno.h>
#include <linux/seccomp.h>
#include <stddef.h>

/* x86_64 system call numbers (arch/x86/entry/syscalls/syscall_64.tbl);
 * spelled out because the build host's headers may predate the calls. */
#define SC_NR_IOCTL  16U
#define SC_NR_CLONE  56U
#define SC_NR_CLONE3 435U

/* Where seccomp_data keeps the call number, the architecture and the low
 * half of argument i (little-endian). */
#define SC_OFF_NR     0U
#define SC_OFF_ARCH   4U
#define SC_OFF_ARG(i) (16U + 8U * (uint32_t)(i))

/* Jump targets: a label per block; SC_L_SELF + i for self-only call i. */
enum {
    SC_L_NONE = 0,
    SC_L_DENY,
    SC_L_NOSYS,
    SC_L_CLONE,
    SC_L_IOCTL,
    SC_L_SELF,
    SC_L_MAX = SC_L_SELF + 16
};

static const pbx_peer_seccomp_call sc_denied[] = {
    /* Sockets: no new socket, no address of its own, no connection. */
    {41U, 0U, "socket"},
    {42U, 0U, "connect"},
    {43U, 0U, "accept"},
    {49U, 0U, "bind"},
    {50U, 0U, "listen"},
    {53U, 0U, "socketpair"},
    {288U, 0U, "accept4"},
    /* Other processes: no tracing, no reading or writing their memory,
     * no descriptors of theirs, no comparing their objects. */
    {101U, 0U, "ptrace"},
    {310U, 0U, "process_vm_readv"},
    {311U, 0U, "process_vm_writev"},
    {312U, 0U, "kcmp"},
    {424U, 0U, "pidfd_send_signal"},
    /* A signal by thread id alone (tkill) cannot be checked against the
     * caller's own threads; glibc's raise() uses tgkill, which is. */
    {200U, 0U, "tkill"},
    /* Advice on and reaping of another process's memory. */
    {440U, 0U, "process_madvise"},
    {448U, 0U, "process_mrelease"},
    {434U, 0U, "pidfd_open"},
    {438U, 0U, "pidfd_getfd"},
    /* io_uring does its work outside these checks. */
    {425U, 0U, "io_uring_setup"},
    {426U, 0U, "io_uring_enter"},
    {427U, 0U, "io_uring_register"},
    /* Kernel surfaces a confined program never needs. */
    {321U, 0U, "bpf"},
    {298U, 0U, "perf_event_open"},
    {323U, 0U, "userfaultfd"},
    {248U, 0U, "add_key"},
    {249U, 0U, "request_key"},
    {250U, 0U, "keyctl"},
    {103U, 0U, "syslog"},
    {254U, 0U, "inotify_add_watch"},
    {300U, 0U, "fanotify_init"},
    {301U, 0U, "fanotify_mark"},
    {303U, 0U, "name_to_handle_at"},
    {304U, 0U, "open_by_handle_at"},
    /* Mounts and namespaces. */
    {155U, 0U, "pivot_root"},
    {161U, 0U, "chroot"},
    {165U, 0U, "mount"},
    {166U, 0U, "umount2"},
    {428U, 0U, "open_tree"},
    {429U, 0U, "move_mount"},
    {430U, 0U, "fsopen"},
    {431U, 0U, "fsconfig"},
    {432U, 0U, "fsmount"},
    {433U, 0U, "fspick"},
    {442U, 0U, "mount_setattr"},
    {272U, 0U, "unshare"},
    {308U, 0U, "setns"},
    /* A file's attributes: Landlock mediates none of these, so without
     * them here a program could chmod, chown (to its own ids), retime or
     * tag with extended attributes any file of the user's, in its scope
     * or outside it (sandbox-setattr). */
    {90U, 0U, "chmod"},
    {91U, 0U, "fchmod"},
    {268U, 0U, "fchmodat"},
    {452U, 0U, "fchmodat2"},
    {92U, 0U, "chown"},
    {93U, 0U, "fchown"},
    {94U, 0U, "lchown"},
    {260U, 0U, "fchownat"},
    {132U, 0U, "utime"},
    {235U, 0U, "utimes"},
    {261U, 0U, "futimesat"},
    {280U, 0U, "utimensat"},
    {188U, 0U, "setxattr"},
    {189U, 0U, "lsetxattr"},
    {190U, 0U, "fsetxattr"},
    {463U, 0U, "setxattrat"},
    {197U, 0U, "removexattr"},
    {198U, 0U, "lremovexattr"},
    {199U, 0U, "fremovexattr"},
    {466U, 0U, "removexattrat"},
    /* System V IPC and POSIX message queues are named by keys and names,
     * not paths, so Landlock mediates none of them: without these a
     * program could attach the user's shared memory segments (a
     * compositor's, say) or read another program's queue
     * (sandbox-ipc). */
    {29U, 0U, "shmget"},
    {30U, 0U, "shmat"},
    {31U, 0U, "shmctl"},
    {64U, 0U, "semget"},
    {65U, 0U, "semop"},
    {66U, 0U, "semctl"},
    {220U, 0U, "semtimedop"},
    {68U, 0U, "msgget"},
    {69U, 0U, "msgsnd"},
    {70U, 0U, "msgrcv"},
    {71U, 0U, "msgctl"},
    {240U, 0U, "mq_open"},
    {241U, 0U, "mq_unlink"},
    {242U, 0U, "mq_timedsend"},
    {243U, 0U, "mq_timedreceive"},
    {244U, 0U, "mq_notify"},
    {245U, 0U, "mq_getsetattr"},
};

static const pbx_peer_seccomp_call sc_self_only[] = {
    {142U, 0U, "sched_setparam"},
    {144U, 0U, "sched_setscheduler"},
    {203U, 0U, "sched_setaffinity"},
    {314U, 0U, "sched_setattr"},
    {141U, 1U, "setpriority"},
    {251U, 1U, "ioprio_set"},
    {302U, 0U, "prlimit64"},
    {256U, 0U, "migrate_pages"},
    {279U, 0U, "move_pages"},
    {274U, 0U, "get_robust_list"},
    /* Signals: kill to 0 (its own group: launchd makes each job lead
     * one) or itself, never -1, another pid or another group; tgkill to
     * a thread of its own (raise() and abort() keep working). Below
     * Landlock ABI 6 nothing else keeps a job from signalling powerboxd. */
    {62U, 0U, "kill"},
    {234U, 0U, "tgkill"},
};
/* Each self-only call takes one label of its own after SC_L_SELF. */
_Static_assert(SC_L_SELF + sizeof(sc_self_only) / sizeof(sc_self_only[0]) <=
                   SC_L_MAX,
               "a label for every self-only call");

const pbx_peer_seccomp_call *pbx_peer_seccomp_denied(size_t *n)
{
    *n = sizeof(sc_denied) / sizeof(sc_denied[0]);
    return sc_denied;
}

const pbx_peer_seccomp_call *pbx_peer_seccomp_self_only(size_t *n)
{
    *n = sizeof(sc_self_only) / sizeof(sc_self_only[0]);
    return sc_self_only;
}

/* The program under construction: instructions, the label each jump
 * names (true and false branch), and where each label landed. */
typedef struct sc_build {
    pbx_peer_seccomp_filter *f;
    uint8_t jt_label[PBX_PEER_SECCOMP_INSNS_MAX];
    uint8_t jf_label[PBX_PEER_SECCOMP_INSNS_MAX];
    uint16_t at[SC_L_MAX];
    bool over;
} sc_build;

/* Appends one instruction; its jumps go to labels lt and lf (SC_L_NONE:
 * the next instruction). */
static void sc_emit(sc_build *b, uint16_t code, uint32_t k, uint8_t lt,
                    uint8_t lf)
{
    if (b->f->len >= PBX_PEER_SECCOMP_INSNS_MAX) {
        b->over = true;
        return;
    }
    uint16_t i = b->f->len++;
    b->f->insns[i] = (struct sock_filter){code, 0U, 0U, k};
    b->jt_label[i] = lt;
    b->jf_label[i] = lf;
}

/* Places label l at the next instruction. */
static void sc_label(sc_build *b, uint8_t l)
{
    b->at[l] = b->f->len;
}

static void sc_ret(sc_build *b, uint32_t k)
{
    sc_emit(b, BPF_RET | BPF_K, k, SC_L_NONE, SC_L_NONE);
}

static void sc_load(sc_build *b, uint32_t off)
{
    sc_emit(b, BPF_LD | BPF_W | BPF_ABS, off, SC_L_NONE, SC_L_NONE);
}

/* Resolves every jump into a forward offset; false when one does not fit
 * or goes backwards. */
static bool sc_resolve(sc_build *b)
{
    for (uint16_t i = 0; i < b->f->len; i++) {
        const uint8_t ls[2] = {b->jt_label[i], b->jf_label[i]};
        /* A jump with no label keeps the offset it was written with. */
        uint8_t off[2] = {b->f->insns[i].jt, b->f->insns[i].jf};
        for (uint32_t j = 0; j < 2U; j++) {
            if (ls[j] == SC_L_NONE) {
                continue;
            }
            uint32_t to = b->at[ls[j]];
            if (to <= i || to - i - 1U > 255U) {
                return false;
            }
            off[j] = (uint8_t)(to - i - 1U);
        }
        b->f->insns[i].jt = off[0];
        b->f->insns[i].jf = off[1];
    }
    return true;
}

/* The blocks after the dispatch: clone's flags, ioctl's request, one per
 * self-only call, then the two refusals. */
static void sc_blocks(sc_build *b, uint32_t self_pid)
{
    const uint16_t jeq = BPF_JMP | BPF_JEQ | BPF_K;
    sc_label(b, SC_L_CLONE);
    sc_load(b, SC_OFF_ARG(0));
    sc_emit(b, BPF_JMP | BPF_JSET | BPF_K, PBX_PEER_SECCOMP_CLONE_NS, SC_L_DENY,
            SC_L_NONE);
    sc_ret(b, SECCOMP_RET_ALLOW);
    sc_label(b, SC_L_IOCTL);
    sc_load(b, SC_OFF_ARG(1));
    sc_emit(b, jeq, PBX_PEER_SECCOMP_TIOCSTI, SC_L_DENY, SC_L_NONE);
    sc_ret(b, SECCOMP_RET_ALLOW);
    for (size_t i = 0; i < sizeof(sc_self_only) / sizeof(sc_self_only[0]);
         i++) {
        sc_label(b, (uint8_t)(SC_L_SELF + i));
        sc_load(b, SC_OFF_ARG(sc_self_only[i].arg));
        /* 0 or self: skip to the allow; anything else: deny. */
        sc_emit(b, jeq, 0U, SC_L_NONE, SC_L_NONE);
        b->f->insns[b->f->len - 1U].jt = 1U;
        sc_emit(b, jeq, self_pid, SC_L_NONE, SC_L_DENY);
        sc_ret(b, SECCOMP_RET_ALLOW);
    }
    sc_label(b, SC_L_DENY);
    sc_ret(b, SECCOMP_RET_ERRNO | ((uint32_t)EPERM & SECCOMP_RET_DATA));
    sc_label(b, SC_L_NOSYS);
    sc_ret(b, SECCOMP_RET_ERRNO | ((uint32_t)ENOSYS & SECCOMP_RET_DATA));
}

pbx_err pbx_peer_seccomp_build(uint32_t self_pid, pbx_peer_seccomp_filter *out)
{
    static sc_build b;
    pbx_mem_set(&b, 0U, sizeof(b));
    out->len = 0U;
    b.f = out;
    const uint16_t jeq = BPF_JMP | BPF_JEQ | BPF_K;
    sc_load(&b, SC_OFF_ARCH);
    sc_emit(&b, jeq, PBX_PEER_SECCOMP_ARCH_X86_64, SC_L_NONE, SC_L_DENY);
    sc_load(&b, SC_OFF_NR);
    sc_emit(&b, BPF_JMP | BPF_JGE | BPF_K, PBX_PEER_SECCOMP_X32_BIT, SC_L_DENY,
            SC_L_NONE);
    sc_emit(&b, jeq, SC_NR_CLONE3, SC_L_NOSYS, SC_L_NONE);
    sc_emit(&b, jeq, SC_NR_CLONE, SC_L_CLONE, SC_L_NONE);
    sc_emit(&b, jeq, SC_NR_IOCTL, SC_L_IOCTL, SC_L_NONE);
    for (size_t i = 0; i < sizeof(sc_denied) / sizeof(sc_denied[0]); i++) {
        sc_emit(&b, jeq, sc_denied[i].nr, SC_L_DENY, SC_L_NONE);
    }
    for (size_t i = 0; i < sizeof(sc_self_only) / sizeof(sc_self_only[0]);
         i++) {
        sc_emit(&b, jeq, sc_self_only[i].nr, (uint8_t)(SC_L_SELF + i),
                SC_L_NONE);
    }
    sc_ret(&b, SECCOMP_RET_ALLOW);
    sc_blocks(&b, self_pid);
    if (b.over || !sc_resolve(&b)) {
        out->len = 0U;
        return PBX_E_BASE_OVERFLOW;
    }
    return PBX_OK;
}

void pbx_peer_seccomp_build_notify(pbx_peer_seccomp_filter *out)
{
    const uint16_t jeq = BPF_JMP | BPF_JEQ | BPF_K;
    /* The open family by number; jt counts the instructions to skip to
     * the notify return, from each compare. */
    static const uint32_t nrs[] = {2U, 85U, 257U, 437U};
    uint16_t n = 0;
    out->insns[n++] =
        (struct sock_filter){BPF_LD | BPF_W | BPF_ABS, 0U, 0U, SC_OFF_ARCH};
    out->insns[n++] =
        (struct sock_filter){jeq, 0U, 5U, PBX_PEER_SECCOMP_ARCH_X86_64};
    out->insns[n++] =
        (struct sock_filter){BPF_LD | BPF_W | BPF_ABS, 0U, 0U, SC_OFF_NR};
    for (uint8_t i = 0; i < 4U; i++) {
        out->insns[n++] =
            (struct sock_filter){jeq, (uint8_t)(4U - i), 0U, nrs[i]};
    }
    out->insns[n++] =
        (struct sock_filter){BPF_RET | BPF_K, 0U, 0U, SECCOMP_RET_ALLOW};
    out->insns[n++] =
        (struct sock_filter){BPF_RET | BPF_K, 0U, 0U, SECCOMP_RET_USER_NOTIF};
    out->len = n;
}
