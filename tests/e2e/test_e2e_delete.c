/*
 * test_e2e_delete.c: deletions of the very powerboxd binary that the
 * kernel interrupts or refuses (issue 22 item 1), shown on both Linux
 * images. The harness stands where the kernel does: before exec, the
 * child installs a seccomp filter that hands two system calls to the
 * test as a supervisor (SECCOMP_RET_USER_NOTIF, its listener sent back
 * to the test): dup3 onto slot 64, the first transient slot (the port's
 * restore of the placeholder over a receipt in a reservation, lx_slot.c),
 * and close of slot 64 (the deletion of a loose receipt there). The
 * supervisor answers each as the test says: let it run, EINTR, or EIO
 * with nothing done, which is what a kernel failure looks like to
 * powerboxd.
 *
 * The refused receipt is the scope of a COMMIT whose BEGIN carried a
 * wrong selector digest: the COMMIT is refused and the receipt in the
 * reservation is deleted by putting the placeholder back over it.
 *
 *   interrupted: the COMMIT is answered CLEANUP_PENDING (the pending
 *   deletion takes precedence over the digest refusal); the receipt
 *   stays held in slot 64 (our far end sees no hang-up, USAGE on slot 4
 *   counts its record) and is retried on ticks; the cancelled request's
 *   outcome is not published while it is held; once the supervisor lets
 *   the restore run, the receipt is deleted, the outcome is CANCELLED,
 *   logged once, and powerboxd's descriptors and records are back at
 *   their idle baseline;
 *   failed: the same restore answering EIO, or the close of a loose
 *   receipt answering EIO with the number still open, is the cleanup
 *   fail-stop: exit status 65 with its one log line, and nothing is
 *   answered or published after it (the COMMIT's own DIGEST refusal,
 *   given when the deletion succeeds, is never sent).
 */
#define _GNU_SOURCE
#include "../runner/pbx_test.h"
#include "liars.h"

#include "bootstrap/pbx_bootstrap.h"
#include "capabi/pbx_capabi.h"
#include "core/pbx_core.h"

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/** The slot every test watches: the first transient slot, which the
 * first BEGIN reserves and the first loose receipt takes. */
#define DL_SLOT ((int)PBX_CAPABI_TRANSIENT_FIRST_DEFAULT)

/** How many interrupted restores the interrupted test waits for before
 * it lets one run: the first, the orphan lane's prompt retry, and at
 * least one retry on a tick. */
#define DL_INTERRUPTS 3U

/** The status line of the cleanup fail-stop (rt_loop.c). */
#define DL_STOP_LINE "powerboxd: fail-stop, exit status 65: cleanup\n"

/* What the supervisor answers. */
typedef enum dl_mode {
    DL_PASS = 0,     /**< every call runs */
    DL_INTERRUPT,    /**< restores answer EINTR until released */
    DL_FAIL_RESTORE, /**< restores from the fail_from-th on answer EIO */
    DL_FAIL_CLOSE    /**< close of DL_SLOT answers EIO */
} dl_mode;

/* The supervisor's state, shared with its thread. */
static struct {
    dl_mode mode;
    unsigned fail_from;      /**< DL_FAIL_RESTORE: first restore to fail */
    atomic_int placeholder;  /**< powerboxd's placeholder slot, or -1 */
    atomic_bool release;     /**< DL_INTERRUPT: let the next one run */
    atomic_bool stop;        /**< the thread ends */
    atomic_uint restores;    /**< restores seen */
    atomic_uint interrupted; /**< restores answered EINTR */
    atomic_uint restored;    /**< restores let run */
    atomic_uint failed;      /**< calls answered EIO */
    int listener;            /**< the seccomp listener, or -1 */
    bool running;            /**< the thread was started */
    pthread_t thread;
    struct sockaddr_un addr; /**< where the child sends the listener */
    socklen_t addr_len;
} dl = {.listener = -1};

/* Installs, in the child, the filter that hands dup3(any, DL_SLOT) and
 * close(DL_SLOT) to the listener; returns the listener or -1. */
static int dl_filter(void)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 8),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_dup3, 0, 2),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                 offsetof(struct seccomp_data, args) + 8U),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)DL_SLOT, 3, 4),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_close, 0, 3),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)DL_SLOT, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return -1;
    }
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                        SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

/* Runs in the child just before exec: the filter, then its listener sent
 * to the test's socket (and closed here, so powerboxd's inventory stays
 * exact). A child that cannot exits 126, which no test accepts. */
static void dl_before_exec(void)
{
    int l = dl_filter();
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    char byte = 'L';
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct iovec iov = {&byte, 1};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_name = &dl.addr;
    mh.msg_namelen = dl.addr_len;
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &l, sizeof(int));
    if (l < 0 || s < 0 || sendmsg(s, &mh, 0) != 1) {
        _exit(126);
    }
    (void)close(s);
    (void)close(l);
}

/* The answer to one notified call: 0 to let it run, else an errno. */
static int dl_decide(const struct seccomp_notif *n)
{
    int ph = atomic_load(&dl.placeholder);
    if (n->data.nr == SYS_close) {
        if (dl.mode != DL_FAIL_CLOSE) {
            return 0;
        }
        atomic_fetch_add(&dl.failed, 1U);
        return EIO;
    }
    /* dup3 onto DL_SLOT: only a restore (from the placeholder) is ours;
     * a receipt moved into the slot runs. */
    if (ph < 0 || (int)n->data.args[0] != ph) {
        return 0;
    }
    unsigned k = atomic_fetch_add(&dl.restores, 1U) + 1U;
    if (dl.mode == DL_INTERRUPT && !atomic_load(&dl.release)) {
        atomic_fetch_add(&dl.interrupted, 1U);
        return EINTR;
    }
    if (dl.mode == DL_FAIL_RESTORE && k >= dl.fail_from) {
        atomic_fetch_add(&dl.failed, 1U);
        return EIO;
    }
    atomic_fetch_add(&dl.restored, 1U);
    return 0;
}

/* The supervisor thread: answers every notification until stopped or
 * powerboxd is gone (bounded: at most ten minutes of 50 ms polls). */
static void *dl_supervise(void *arg)
{
    (void)arg;
    for (int i = 0; i < 12000 && !atomic_load(&dl.stop); i++) {
        struct pollfd pfd = {dl.listener, POLLIN, 0};
        if (poll(&pfd, 1, 50) <= 0) {
            continue;
        }
        if ((pfd.revents & POLLIN) == 0) {
            break; /* Hung up: no process runs under the filter any more. */
        }
        struct seccomp_notif req;
        struct seccomp_notif_resp resp;
        memset(&req, 0, sizeof(req));
        if (ioctl(dl.listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0) {
            continue; /* The caller went away meanwhile. */
        }
        memset(&resp, 0, sizeof(resp));
        resp.id = req.id;
        int err = dl_decide(&req);
        if (err == 0) {
            resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
        } else {
            resp.error = -err;
        }
        (void)ioctl(dl.listener, SECCOMP_IOCTL_NOTIF_SEND, &resp);
    }
    return NULL;
}

/* Stops the supervisor thread and closes its listener. */
static void dl_sup_stop(void)
{
    if (dl.running) {
        atomic_store(&dl.stop, true);
        (void)pthread_join(dl.thread, NULL);
        dl.running = false;
    }
    if (dl.listener >= 0) {
        (void)close(dl.listener);
        dl.listener = -1;
    }
}

/* Resets the supervisor for a new run in mode. */
static void dl_reset(dl_mode mode, unsigned fail_from)
{
    dl_sup_stop();
    dl.mode = mode;
    dl.fail_from = fail_from;
    atomic_store(&dl.placeholder, -1);
    atomic_store(&dl.release, false);
    atomic_store(&dl.stop, false);
    atomic_store(&dl.restores, 0U);
    atomic_store(&dl.interrupted, 0U);
    atomic_store(&dl.restored, 0U);
    atomic_store(&dl.failed, 0U);
}

/* Binds the socket the child sends its listener to (an abstract name). */
static int dl_bind(void)
{
    static unsigned serial;
    int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    char name[64];
    int len = snprintf(name, sizeof(name), "pbx-e2e-delete-%d-%u",
                       (int)getpid(), serial++);
    memset(&dl.addr, 0, sizeof(dl.addr));
    dl.addr.sun_family = AF_UNIX;
    memcpy(dl.addr.sun_path + 1, name, (size_t)len);
    dl.addr_len =
        (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1U + (size_t)len);
    if (s >= 0 &&
        bind(s, (const struct sockaddr *)&dl.addr, dl.addr_len) != 0) {
        (void)close(s);
        s = -1;
    }
    return s;
}

/* Takes the listener the child sent on s (5 s), and starts the thread. */
static bool dl_take_listener(int s)
{
    int fds[1] = {-1};
    int n = 0;
    uint8_t b[8];
    if (e2e_recv(s, b, sizeof(b), fds, 1, &n, e2e_slow(5000)) != 1 || n != 1) {
        return false;
    }
    dl.listener = fds[0];
    dl.running = pthread_create(&dl.thread, NULL, dl_supervise, NULL) == 0;
    return dl.running;
}

/* Finds powerboxd's placeholder slot: the memory object the port named
 * pbx-placeholder, below the transient range. */
static int dl_find_placeholder(pid_t pid)
{
    for (int fd = 0; fd < DL_SLOT; fd++) {
        char path[64];
        char link[256];
        (void)snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, fd);
        ssize_t n = readlink(path, link, sizeof(link) - 1U);
        if (n > 0) {
            link[n] = '\0';
            if (strstr(link, "pbx-placeholder") != NULL) {
                return fd;
            }
        }
    }
    return -1;
}

/* lr_start under the supervisor: powerboxd started with the filter, the
 * listener taken and served, ready, its placeholder found and its idle
 * descriptor count recorded. */
static bool dl_start(lr_run *r, dl_mode mode, unsigned fail_from)
{
    uint8_t f[64];
    size_t n = 0;
    pbx_ipc_consume c = {{0, 1}};
    dl_reset(mode, fail_from);
    memset(r, 0, sizeof(*r));
    for (unsigned i = 0; i < LR_REQS_MAX; i++) {
        r->scope[i] = -1;
    }
    int s = dl_bind();
    bool ok = s >= 0 && e2e_prepare(&r->p, E2E_PBX1_GOOD);
    if (ok) {
        r->p.before_exec = dl_before_exec;
        ok = e2e_start(&r->p) && dl_take_listener(s) && e2e_wait_ready(&r->p);
    }
    if (s >= 0) {
        (void)close(s);
    }
    if (!ok || pbx_ipc_consume_encode(&c, f, sizeof(f), &n) != PBX_OK ||
        lr_public(r->p.broker, f, n) < 0) {
        return false;
    }
    atomic_store(&dl.placeholder, dl_find_placeholder(r->p.pid));
    r->baseline = e2e_fd_count(r->p.pid);
    return atomic_load(&dl.placeholder) >= 0 && r->baseline > 0;
}

/* Ends a run: the supervisor, then powerboxd and every kept end. */
static void dl_stop(lr_run *r)
{
    dl_sup_stop();
    lr_stop(r);
}

/* The inode powerboxd's slot names ("socket:[N]"), 0 when it names no
 * socket (the placeholder is a memory object) or cannot be read. */
static unsigned long dl_slot_socket(pid_t pid, int slot)
{
    char path[64];
    char link[128];
    unsigned long ino = 0;
    (void)snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, slot);
    ssize_t n = readlink(path, link, sizeof(link) - 1U);
    if (n <= 0) {
        return 0;
    }
    link[n] = '\0';
    if (strncmp(link, "socket:[", 8) == 0) {
        char *end = NULL;
        ino = strtoul(link + 8, &end, 10);
        ino = end != NULL && *end == ']' ? ino : 0UL;
    }
    return ino;
}

/* Sleeps ms milliseconds. */
static void dl_nap(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    (void)nanosleep(&ts, NULL);
}

/* Waits up to ms for *counter to reach want. */
static bool dl_wait_count(atomic_uint *counter, unsigned want, int ms)
{
    for (int i = 0; i < ms / 10 + 1; i++) {
        if (atomic_load(counter) >= want) {
            return true;
        }
        dl_nap(10);
    }
    return atomic_load(counter) >= want;
}

/* Waits up to ms for powerboxd to hold exactly want descriptors. */
static bool dl_wait_fds(pid_t pid, int want, int ms)
{
    for (int i = 0; i < ms / 10 + 1; i++) {
        if (e2e_fd_count(pid) == want) {
            return true;
        }
        dl_nap(10);
    }
    return false;
}

/* BEGINs a routine request whose digest is wrong at one byte and sends
 * its selector; *dest gets the reservation. False on any failure. */
static bool dl_begin_bad(lr_run *r, pbx_ipc_id *id, uint32_t *dest)
{
    static const char sel[] = "docs/readme.txt";
    pbx_ipc_begin b;
    lr_begin_rec(&b, sel);
    b.selector_digest[5] ^= 0x40U;
    return lr_begin(r, &b, id, dest) == 0L &&
           lr_selector(r, *id, 0U, b.selector_len, (const uint8_t *)sel) == 0L;
}

/* CANCELs id on the broker; returns the reply status or -1. */
static long dl_cancel(lr_run *r, pbx_ipc_id id)
{
    uint8_t out[64];
    size_t n = 0;
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = id;
    if (pbx_ipc_cancel_encode(&c, out, sizeof(out), &n) != PBX_OK) {
        return -1;
    }
    return lr_public(r->p.broker, out, n);
}

/* Counts powerboxd's decision lines for id. */
static int dl_decisions(const lr_run *r, pbx_ipc_id id)
{
    char line[96];
    (void)snprintf(line, sizeof(line), "event=decision request=1-%u.%u ",
                   id.index, id.gen);
    return e2e_log_count(&r->p, line);
}

/* While the restore is interrupted: the receipt still in the slot, our
 * far end open, the request's outcome unpublished, and USAGE counting
 * one transient-slot record more than once the request was begun (the
 * refused receipt's, beside the request's own) and the same
 * descriptors (the receipt stands where the placeholder stood). */
static void dl_check_held(lr_run *r, pbx_ipc_id id,
                          const pbx_capabi_usage *begun)
{
    pbx_ipc_decision d;
    pbx_capabi_usage u;
    const unsigned ts = PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS;
    PBX_CHECK(lr_usage(r, &u));
    PBX_CHECK_EQ(u.used[ts], begun->used[ts] + 1U);
    PBX_CHECK_EQ(u.fds, begun->fds);
    PBX_CHECK_EQ(dl_slot_socket(r->p.pid, DL_SLOT), r->scope_id[0]);
    PBX_CHECK(!lr_gone(r->scope[0], 0));
    PBX_CHECK(lr_decision(r->p.broker, id, &d));
    PBX_CHECK_EQ(d.outcome, (unsigned)PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK_EQ(dl_decisions(r, id), 0);
    PBX_CHECK_EQ(atomic_load(&dl.restored), 0U);
}

PBX_TEST(e2e_delete_interrupted_keeps_the_receipt_until_it_completes)
{
    lr_run r;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    pbx_ipc_decision d;
    pbx_capabi_usage idle;
    pbx_capabi_usage begun;
    pbx_capabi_usage u;
    PBX_REQUIRE(dl_start(&r, DL_INTERRUPT, 0U));
    PBX_REQUIRE(lr_usage(&r, &idle));
    PBX_REQUIRE(dl_begin_bad(&r, &id, &dest));
    PBX_REQUIRE(dest == (uint32_t)DL_SLOT);
    PBX_REQUIRE(lr_usage(&r, &begun));
    /* The refusal's deletion was interrupted: the COMMIT is answered
     * CLEANUP_PENDING, not DIGEST (the pending deletion wins). */
    PBX_CHECK_EQ(lr_commit(&r, id, dest), (long)PBX_E_CORE_CLEANUP_PENDING);
    PBX_CHECK(atomic_load(&dl.interrupted) >= 1U);
    dl_check_held(&r, id, &begun);
    /* The client gives up: the request ends, but its outcome waits for
     * the receipt's deletion, retried on ticks and interrupted again. */
    PBX_CHECK_EQ(dl_cancel(&r, id), 0L);
    PBX_CHECK(dl_wait_count(&dl.interrupted, DL_INTERRUPTS, e2e_slow(10000)));
    dl_check_held(&r, id, &begun);
    unsigned before = atomic_load(&dl.interrupted);
    PBX_CHECK(dl_wait_count(&dl.interrupted, before + 1U, e2e_slow(10000)));
    dl_check_held(&r, id, &begun);
    /* The supervisor lets the next restore run: the receipt is deleted,
     * the outcome published once, exact, and everything released. */
    atomic_store(&dl.release, true);
    PBX_CHECK(lr_gone(r.scope[0], e2e_slow(10000)));
    PBX_CHECK(e2e_log_wait(&r.p, "event=decision request=", 1, e2e_slow(5000)));
    PBX_CHECK(lr_decision(r.p.broker, id, &d));
    PBX_CHECK_EQ(d.outcome, (unsigned)PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(d.reason, (unsigned)PBX_IPC_REASON_NONE);
    PBX_CHECK_EQ(dl_decisions(&r, id), 1);
    PBX_CHECK_EQ(e2e_log_count(&r.p, " outcome=cancelled reason=cancelled\n"),
                 1);
    PBX_CHECK(dl_wait_fds(r.p.pid, r.baseline, e2e_slow(5000)));
    PBX_CHECK(lr_usage(&r, &u));
    PBX_CHECK_EQ(u.used[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS],
                 idle.used[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS]);
    PBX_CHECK_EQ(u.fds, idle.fds);
    PBX_CHECK_EQ(atomic_load(&dl.restored), 1U);
    PBX_CHECK_EQ(atomic_load(&dl.failed), 0U);
    dl_stop(&r);
}

/* After a failed deletion: exit 65, its line last in the log, no
 * decision published. */
static void dl_check_stopped(lr_run *r)
{
    char text[4096];
    PBX_CHECK_EQ(e2e_exit_status(&r->p), (int)PBX_CORE_EXIT_CLEANUP);
    PBX_REQUIRE(e2e_log_text(&r->p, text, sizeof(text)));
    size_t n = strlen(text);
    size_t k = strlen(DL_STOP_LINE);
    PBX_CHECK(n >= k && strcmp(text + n - k, DL_STOP_LINE) == 0);
    PBX_CHECK_EQ(e2e_log_count(&r->p, "powerboxd: fail-stop"), 1);
    PBX_CHECK_EQ(e2e_log_count(&r->p, "event=decision"), 0);
    PBX_CHECK_EQ(atomic_load(&dl.failed), 1U);
}

PBX_TEST(e2e_delete_failed_restore_is_fail_stop_65_over_the_refusal)
{
    lr_run r;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    /* The second restore fails: the first shows the refusal's own
     * answer when its deletion succeeds. */
    PBX_REQUIRE(dl_start(&r, DL_FAIL_RESTORE, 2U));
    PBX_REQUIRE(dl_begin_bad(&r, &id, &dest));
    PBX_REQUIRE(dest == (uint32_t)DL_SLOT);
    PBX_CHECK_EQ(lr_commit(&r, id, dest), (long)PBX_E_CORE_DIGEST);
    PBX_CHECK(lr_gone(r.scope[0], e2e_slow(5000)));
    PBX_CHECK_EQ(atomic_load(&dl.restored), 1U);
    /* The same COMMIT again, its restore answering EIO with the receipt
     * still there: a permanent rejection, which takes precedence over
     * the DIGEST refusal: no reply at all, and the service stops. */
    PBX_CHECK_EQ(lr_commit(&r, id, dest), -1L);
    dl_check_stopped(&r);
    dl_stop(&r);
}

PBX_TEST(e2e_delete_failed_close_of_a_loose_receipt_is_fail_stop_65)
{
    lr_run r;
    pbx_ipc_begin b;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    int sv[2];
    PBX_REQUIRE(dl_start(&r, DL_FAIL_CLOSE, 0U));
    PBX_REQUIRE(e2e_socketpair(SOCK_SEQPACKET, sv));
    /* A BEGIN carrying a descriptor where none belongs: the receipt is
     * placed loose in slot 64 and deleted by close, which answers EIO
     * with the number still open. */
    lr_begin_rec(&b, "docs/readme.txt");
    PBX_REQUIRE(pbx_ipc_begin_encode(&b, out, sizeof(out), &n) == PBX_OK);
    PBX_CHECK(e2e_send(r.p.broker, out, n, &sv[1], 1));
    (void)close(sv[1]);
    /* No reply comes: the broker sees powerboxd's end close instead. */
    PBX_CHECK_EQ(
        e2e_recv(r.p.broker, in, sizeof(in), NULL, 0, NULL, e2e_slow(5000)),
        0L);
    dl_check_stopped(&r);
    (void)close(sv[0]);
    dl_stop(&r);
}
