/*
 * test_e2e_status.c: the startup refusals test_e2e.c cannot cause with a
 * spoiled record or inventory alone, each shown on the very powerboxd
 * binary with its exit status and its one line on stderr (issue 22 item
 * 6). The harness causes each the way a supervisor or the kernel could:
 *
 *   11  no descriptor at or above the port's range can be made
 *       (RLIMIT_NOFILE at the startup slots, two limits);
 *   15  a sealed PBX1 memory object that is empty, or longer than any
 *       record;
 *   20  an address space too small for the arena PBX1 derives
 *       (RLIMIT_AS);
 *   27  a public endpoint name that fits no socket address, or one
 *       another socket already holds;
 *   28  the kernel failing to describe the public endpoint powerboxd just
 *       created (fstat of slot 9 answering ENOMEM, by a seccomp filter);
 *   30  a supervisor that hung up, or whose readiness route is full;
 *   31  the kernel refusing to watch the broker endpoint (epoll_ctl ADD
 *       of slot 10 answering ENOMEM, by a seccomp filter);
 *   32  a hard RLIMIT_NOFILE below 4096, the end of the transient range
 *       (and a low soft limit under a hard one that reaches it, raised).
 *
 * 28 and 31 need an injected kernel failure: no record, descriptor or
 * name the harness can hand over makes them happen (docs/STATUS.md says
 * why, and why 26 cannot happen at all). Each limit or filter is set in
 * the child just before exec (e2e_proc.before_exec), so it is the image
 * itself, from its first instruction, that runs under it.
 */
#define _GNU_SOURCE
#include "../runner/pbx_test.h"
#include "e2e_harness.h"

#include "bootstrap/pbx_bootstrap.h"
#include "capabi/pbx_capabi.h"
#include "core/pbx_core_inspect.h"
#include "core/pbx_core_layout.h"
#include "powerboxd/port/pbx_port.h"
#include "powerboxd/runtime/pbx_rt.h"
#include "powerboxd/runtime/rt_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

/** The PBX1 read buffer of the runtime: longer objects are the port's
 * refusal (15), shorter ones the parser's (16). */
#define ST_PBX1_BUFFER RT_PBX1_BYTES_MAX

/** The arena of the record the address-space test starts on: large
 * enough that no limit which lets the image itself load can hold it. */
#define ST_ARENA_MIN (64ULL << 20)

/** The address-space limit of that test: the image, its stack and the
 * vDSO fit many times over, the arena does not. */
#define ST_AS_LIMIT (24ULL << 20)

/* What the next child does before exec, set by each test before its
 * start (the child inherits it with the rest of the test's memory). */
static struct {
    int resource;        /**< an RLIMIT_* to set, or -1 */
    rlim_t limit;        /**< its hard value (and soft, unless soft) */
    rlim_t soft;         /**< its soft value, or 0: the same as limit */
    long nr;             /**< a system call to fail, or -1 */
    unsigned arg_a;      /**< first argument index it is matched on */
    unsigned long val_a; /**< the value that argument must have */
    unsigned arg_b;      /**< second argument index */
    unsigned long val_b; /**< the value that argument must have */
    int err;             /**< the errno the filter answers */
} st_child = {-1, 0, 0, -1, 0, 0, 0, 0, 0};

/* Installs a seccomp filter failing st_child.nr with st_child.err when
 * both its arguments match (low 32 bits; descriptors and operations fit
 * them); every other call, on any architecture, is allowed. */
static void st_filter(void)
{
    const unsigned allow = 9U;
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, allow - 2U),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)st_child.nr, 0,
                 allow - 4U),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 (unsigned)offsetof(struct seccomp_data, args) +
                     8U * st_child.arg_a),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)st_child.val_a, 0,
                 allow - 6U),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 (unsigned)offsetof(struct seccomp_data, args) +
                     8U * st_child.arg_b),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)st_child.val_b, 0,
                 allow - 8U),
        BPF_STMT(BPF_RET | BPF_K,
                 SECCOMP_RET_ERRNO | ((unsigned)st_child.err & 0xFFFFU)),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
        syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) != 0) {
        _exit(126);
    }
}

/* Runs in the child just before exec: the limit, then the filter. A
 * child that cannot set them exits 126, which no test accepts. */
static void st_before_exec(void)
{
    if (st_child.resource >= 0) {
        struct rlimit rl = {st_child.soft != 0U ? st_child.soft
                                                : st_child.limit,
                            st_child.limit};
        if (setrlimit(st_child.resource, &rl) != 0) {
            _exit(126);
        }
    }
    if (st_child.nr >= 0) {
        st_filter();
    }
}

/* No limit and no filter for the next child. */
static void st_plain(void)
{
    st_child.resource = -1;
    st_child.soft = 0U;
    st_child.nr = -1;
}

/* The next child runs with resource limited to limit. */
static void st_rlimit(int resource, rlim_t limit)
{
    st_plain();
    st_child.resource = resource;
    st_child.limit = limit;
}

/* The next child's system call nr answers err when its argument a is va
 * and its argument b is vb. */
static void st_fail_call(long nr, unsigned a, unsigned long va, unsigned b,
                         unsigned long vb, int err)
{
    st_plain();
    st_child.nr = nr;
    st_child.arg_a = a;
    st_child.val_a = va;
    st_child.arg_b = b;
    st_child.val_b = vb;
    st_child.err = err;
}

/* Checks that powerboxd's stderr is exactly one line: the refusal head
 * with status, then reason (the runtime's text for that status), then
 * an optional detail, and the newline at the very end. */
static void st_line(const e2e_proc *p, int status, const char *reason)
{
    char text[1024];
    char head[512];
    (void)snprintf(head, sizeof(head),
                   "powerboxd: startup refused, exit status %d: %s", status,
                   reason);
    PBX_REQUIRE(e2e_log_text(p, text, sizeof(text)));
    size_t n = strlen(text);
    PBX_CHECK(strncmp(text, head, strlen(head)) == 0);
    PBX_CHECK(n > 0U && text[n - 1U] == '\n');
    PBX_CHECK(strchr(text, '\n') == text + n - 1U);
    if (strncmp(text, head, strlen(head)) != 0) {
        (void)fprintf(stderr, "  log: %s\n", text);
    }
}

/* Starts the prepared p under st_child, returns its exit status (-2: it
 * did not exit within 5 s, e.g. it reported ready) and checks its line
 * when it is status. p is closed. */
static int st_run(e2e_proc *p, int status, const char *reason)
{
    p->before_exec = st_before_exec;
    if (!e2e_start(p)) {
        e2e_close(p);
        return -101;
    }
    int st = e2e_exit_status(p);
    if (st == status) {
        st_line(p, status, reason);
    }
    e2e_close(p);
    st_plain();
    return st;
}

/* Starts the prepared p under st_child and reports whether it became
 * ready (within 5 s). p is closed. */
static bool st_ready(e2e_proc *p)
{
    p->before_exec = st_before_exec;
    bool ready = e2e_start(p) && e2e_wait_ready(p);
    e2e_close(p);
    st_plain();
    return ready;
}

/* Whether powerboxd on a good inventory becomes ready under st_child. */
static bool st_good_ready(void)
{
    e2e_proc p;
    return e2e_prepare(&p, E2E_PBX1_GOOD) && st_ready(&p);
}

/* Starts powerboxd on a good inventory under st_child. */
static int st_good(int status, const char *reason)
{
    e2e_proc p;
    if (!e2e_prepare(&p, E2E_PBX1_GOOD)) {
        return -100;
    }
    return st_run(&p, status, reason);
}

/* Starts powerboxd with pbx1 (owned; closed here) in slot 3. */
static int st_with_pbx1(int pbx1, int status, const char *reason)
{
    e2e_proc p;
    if (pbx1 < 0 || !e2e_prepare(&p, E2E_PBX1_GOOD)) {
        if (pbx1 >= 0) {
            (void)close(pbx1);
        }
        return -100;
    }
    (void)close(p.theirs[0]);
    p.theirs[0] = pbx1;
    return st_run(&p, status, reason);
}

PBX_TEST(e2e_status_11_port_init_without_room_for_its_descriptors)
{
    static const char why[] = "the syscall port could not be prepared";
    /* The port moves each object it creates (the wait set, then the
     * placeholder) to a number at or above PBX_PORT_STARTUP_SLOTS. With
     * no number there allowed, the wait set cannot move: status 11. */
    st_rlimit(RLIMIT_NOFILE, PBX_PORT_STARTUP_SLOTS);
    PBX_CHECK_EQ(st_good(PBX_RT_EXIT_PORT_INIT, why), PBX_RT_EXIT_PORT_INIT);
    /* One number there: the wait set takes it, the placeholder cannot
     * move (and the wait set is released): status 11 again. */
    st_rlimit(RLIMIT_NOFILE, PBX_PORT_STARTUP_SLOTS + 1U);
    PBX_CHECK_EQ(st_good(PBX_RT_EXIT_PORT_INIT, why), PBX_RT_EXIT_PORT_INIT);
}

/* A memory object of len bytes of b, sealed against every change. */
static int st_sealed(size_t len, uint8_t b)
{
    uint8_t *buf = malloc(len + 1U);
    if (buf == NULL) {
        return -1;
    }
    memset(buf, b, len + 1U);
    int fd = memfd_create("pbx1", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    int all = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    if (fd >= 0 && (write(fd, buf, len) != (ssize_t)len ||
                    fcntl(fd, F_ADD_SEALS, all) != 0)) {
        (void)close(fd);
        fd = -1;
    }
    free(buf);
    return fd;
}

PBX_TEST(e2e_status_15_pbx1_empty_or_longer_than_any_record)
{
    static const char why[] =
        "the PBX1 object is empty, too large, or could not be read whole";
    /* Sealed, a memory object, and empty. */
    PBX_CHECK_EQ(st_with_pbx1(st_sealed(0U, 0U), PBX_RT_EXIT_PBX1_SIZE, why),
                 PBX_RT_EXIT_PBX1_SIZE);
    /* Sealed, and one byte longer than the runtime's read buffer (a
     * record one byte too long still fits it, and is the parser's). */
    PBX_CHECK_EQ(st_with_pbx1(st_sealed(ST_PBX1_BUFFER + 1U, 0x50U),
                              PBX_RT_EXIT_PBX1_SIZE, why),
                 PBX_RT_EXIT_PBX1_SIZE);
    /* The buffer's own length is the parser's to refuse (16), which
     * shows the boundary is where the test says. */
    PBX_CHECK_EQ(st_with_pbx1(st_sealed(ST_PBX1_BUFFER, 0x50U),
                              PBX_RT_EXIT_PBX1_RECORD,
                              "the PBX1 record does not parse or "
                              "authenticate"),
                 PBX_RT_EXIT_PBX1_RECORD);
}

/* A good record whose derived arena is at least ST_ARENA_MIN bytes: the
 * harness's small deployment with its requests, grants and selector
 * bytes at their maxima. It passes the very startup check powerboxd runs
 * (pbx_core_startup_check, as `pbx geometry check` does). */
static int st_big_arena_pbx1(uint64_t *arena)
{
    static pbx_core_startup_result res;
    pbx_bootstrap_geometry g;
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    memset(&g, 0, sizeof(g));
    g.version = PBX_BOOTSTRAP_VERSION;
    g.page_size_bytes = 4096U;
    pbx_core_pool_layouts(g.layout);
    for (uint32_t i = 0; i < (uint32_t)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g.capacity[i] = 8U;
    }
    static const pbx_bootstrap_pool big[] = {PBX_BOOTSTRAP_POOL_REQUESTS,
                                             PBX_BOOTSTRAP_POOL_GRANTS,
                                             PBX_BOOTSTRAP_POOL_SELECTOR_BYTES};
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) {
        g.capacity[big[i]] = pbx_bootstrap_capacity_max(big[i]);
    }
    g.capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] = 32U;
    g.call_window = 8U;
    g.capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * 8U;
    for (uint32_t t = 0; t < (uint32_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g.time_ms[t] = 5000U;
    }
    if (pbx_bootstrap_pages_compute(&g, &g.arena_page_count) != PBX_OK ||
        pbx_bootstrap_encode(&g, rec, sizeof(rec)) != PBX_OK ||
        pbx_core_startup_check(rec, sizeof(rec), &res) != PBX_CORE_STARTUP_OK) {
        return -1;
    }
    *arena = (uint64_t)g.arena_page_count * g.page_size_bytes;
    return e2e_pbx1_fd(rec, sizeof(rec));
}

PBX_TEST(e2e_status_20_arena_larger_than_the_address_space)
{
    uint64_t arena = 0;
    int pbx1 = st_big_arena_pbx1(&arena);
    PBX_REQUIRE(pbx1 >= 0);
    /* The record is valid (`pbx geometry check` would accept it); only
     * the mapping of its arena fails. */
    PBX_REQUIRE(arena >= ST_ARENA_MIN);
    st_rlimit(RLIMIT_AS, (rlim_t)ST_AS_LIMIT);
    PBX_CHECK_EQ(
        st_with_pbx1(pbx1, PBX_RT_EXIT_ARENA, "the arena could not be mapped"),
        PBX_RT_EXIT_ARENA);
    /* The same limit lets the harness's small deployment start: it is
     * the arena, not the image, that does not fit. */
    st_rlimit(RLIMIT_AS, (rlim_t)ST_AS_LIMIT);
    PBX_CHECK(st_good_ready());
}

/* Starts powerboxd on a good inventory with name as its public
 * endpoint's name (argv[1]). */
static int st_named(const char *name, int status, const char *reason)
{
    e2e_proc p;
    const char *argv[3] = {getenv("PBX_POWERBOXD"), name, NULL};
    if (argv[0] == NULL || !e2e_prepare(&p, E2E_PBX1_GOOD)) {
        return -100;
    }
    p.argv = argv;
    return st_run(&p, status, reason);
}

PBX_TEST(e2e_status_27_public_endpoint_name_too_long_or_taken)
{
    static const char why[] = "the public endpoint could not be created";
    char name[200];
    /* A name no socket address holds (108 bytes with its '@'). */
    memset(name, 'n', sizeof(name) - 1U);
    name[0] = '@';
    name[sizeof(name) - 1U] = '\0';
    PBX_CHECK_EQ(st_named(name, PBX_RT_EXIT_PUBLIC, why), PBX_RT_EXIT_PUBLIC);
    /* A name another socket is bound to already. */
    (void)snprintf(name, sizeof(name), "@pbx-e2e-taken-%d", (int)getpid());
    int taken = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    size_t len = strlen(name);
    memcpy(sa.sun_path + 1, name + 1, len - 1U);
    PBX_REQUIRE(taken >= 0);
    PBX_REQUIRE(
        bind(taken, (const struct sockaddr *)&sa,
             (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) == 0);
    PBX_CHECK_EQ(st_named(name, PBX_RT_EXIT_PUBLIC, why), PBX_RT_EXIT_PUBLIC);
    /* Once it is free again, the same name is served. */
    (void)close(taken);
    e2e_proc p;
    const char *argv[3] = {getenv("PBX_POWERBOXD"), name, NULL};
    PBX_REQUIRE(e2e_prepare(&p, E2E_PBX1_GOOD));
    p.argv = argv;
    PBX_CHECK(st_ready(&p));
}

PBX_TEST(e2e_status_28_ready_inventory_when_slot_9_cannot_be_described)
{
    /* Before the public endpoint exists, fstat of slot 9 failing changes
     * nothing (an empty slot answers EBADF to F_GETFD as well); once it
     * exists, the kernel's ENOMEM leaves the ready-phase check unable to
     * see it as the endpoint it created, and it refuses. */
    st_fail_call(SYS_fstat, 0U, PBX_CAPABI_SLOT_PUBLIC, 0U,
                 PBX_CAPABI_SLOT_PUBLIC, ENOMEM);
    PBX_CHECK_EQ(st_good(PBX_RT_EXIT_READY_INVENTORY,
                         "the ready-phase inventory (with the public "
                         "endpoint) is not exact"),
                 PBX_RT_EXIT_READY_INVENTORY);
    /* The same filter on a slot powerboxd never describes at startup
     * lets it start: the filter itself refuses nothing. */
    st_fail_call(SYS_fstat, 0U, 15U, 0U, 15U, ENOMEM);
    PBX_CHECK(st_good_ready());
}

PBX_TEST(e2e_status_30_supervisor_hung_up_or_full)
{
    static const char why[] =
        "the readiness report could not be sent to the supervisor (slot 4)";
    /* The supervisor closed its end of the readiness route before the
     * start: the route still passes the inventory (its peer was a live
     * process when it was made), and the report is refused. */
    e2e_proc p;
    PBX_REQUIRE(e2e_prepare(&p, E2E_PBX1_GOOD));
    (void)close(p.supervisor);
    p.supervisor = -1;
    PBX_CHECK_EQ(st_run(&p, PBX_RT_EXIT_READY_SEND, why),
                 PBX_RT_EXIT_READY_SEND);
    /* The supervisor never reads, and its route is full: the report
     * cannot go out without waiting, and powerboxd never waits for it. */
    PBX_REQUIRE(e2e_prepare(&p, E2E_PBX1_GOOD));
    int fill = dup(p.theirs[1]);
    PBX_REQUIRE(fill >= 0);
    int queued = 0;
    for (int i = 0; i < 100000; i++) {
        if (send(fill, "full", 4, MSG_DONTWAIT | MSG_NOSIGNAL) != 4) {
            PBX_CHECK(errno == EAGAIN || errno == EWOULDBLOCK);
            break;
        }
        queued++;
    }
    PBX_CHECK(queued > 0);
    PBX_CHECK_EQ(st_run(&p, PBX_RT_EXIT_READY_SEND, why),
                 PBX_RT_EXIT_READY_SEND);
    (void)close(fill);
}

PBX_TEST(e2e_status_31_broker_endpoint_cannot_be_watched)
{
    /* epoll_ctl(wait set, EPOLL_CTL_ADD, 10, ...) answering ENOMEM: the
     * broker endpoint passed the inventory but cannot be received on. */
    st_fail_call(SYS_epoll_ctl, 1U, 1U /* EPOLL_CTL_ADD */, 2U,
                 PBX_CAPABI_SLOT_BROKER, ENOMEM);
    PBX_CHECK_EQ(st_good(PBX_RT_EXIT_BROKER,
                         "the launchd broker endpoint (slot 10) could not "
                         "be received on"),
                 PBX_RT_EXIT_BROKER);
    /* The same refusal for another number lets it start. */
    st_fail_call(SYS_epoll_ctl, 1U, 1U, 2U, 15U, ENOMEM);
    PBX_CHECK(st_good_ready());
}

/* The transient range's end: the descriptor limit powerboxd needs. */
#define ST_RANGE_END                                                           \
    ((rlim_t)PBX_CAPABI_TRANSIENT_FIRST_DEFAULT + PBX_RT_TRANSIENT_MAX)

/* Starts powerboxd on a good inventory under a soft and a hard
 * RLIMIT_NOFILE; once ready, stores the limits it runs with in *rl and
 * reports true. */
static bool st_nofile_ready(rlim_t soft, rlim_t hard, struct rlimit *rl)
{
    e2e_proc p;
    bool ok = false;
    st_rlimit(RLIMIT_NOFILE, hard);
    st_child.soft = soft;
    if (e2e_prepare(&p, E2E_PBX1_GOOD)) {
        p.before_exec = st_before_exec;
        ok = e2e_start(&p) && e2e_wait_ready(&p) &&
             prlimit(p.pid, RLIMIT_NOFILE, NULL, rl) == 0;
        e2e_close(&p);
    }
    st_plain();
    return ok;
}

PBX_TEST(e2e_status_32_hard_descriptor_limit_below_the_range)
{
    static const char why[] =
        "the hard descriptor limit (RLIMIT_NOFILE) is below 4096, the end "
        "of the transient slot range (raise the hard limit)";
    struct rlimit rl = {0U, 0U};
    PBX_REQUIRE(ST_RANGE_END == 4096U);
    /* One descriptor short of the range's last slot: refused at once. */
    st_rlimit(RLIMIT_NOFILE, ST_RANGE_END - 1U);
    PBX_CHECK_EQ(st_good(PBX_RT_EXIT_NOFILE, why), PBX_RT_EXIT_NOFILE);
    /* Linux's usual soft limit under a hard limit that reaches the end:
     * raised to exactly the end, and powerboxd serves. */
    PBX_CHECK(st_nofile_ready(1024U, ST_RANGE_END, &rl));
    PBX_CHECK_EQ(rl.rlim_cur, ST_RANGE_END);
    PBX_CHECK_EQ(rl.rlim_max, ST_RANGE_END);
    /* A soft limit already above the end is left as it is. */
    PBX_CHECK(st_nofile_ready(ST_RANGE_END + 8U, ST_RANGE_END + 16U, &rl));
    PBX_CHECK_EQ(rl.rlim_cur, ST_RANGE_END + 8U);
}
