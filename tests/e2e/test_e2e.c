/*
 * test_e2e.c: the Linux-port powerboxd binary, as built, against a harness
 * that plays its supervisor, vfsd, ttyd, procd, launchd and callers over
 * real sockets: every startup refusal with its own exit status, one full
 * routine grant from BEGIN to RETIRE, and a flood of malformed frames with
 * surplus descriptors after which powerboxd holds exactly its baseline;
 * BEGIN (either mode) and EXPIRE only through launchd's broker endpoint
 * (slot 10), where the harness plays launchd relaying its callers'
 * requests, the runtime-reply alias delivered once to the broker, ttyd
 * RETRY answered by a doubling wait instead of an immediate re-ask,
 * vfsd's FOUND bound to the committed scope's kernel-vouched identity, the
 * public endpoint's own failure ending powerboxd with status 64,
 * callers hanging up early, which never stop it, a request never
 * committed ended CANCELLED at the PBX1 OPEN deadline (reservation
 * returned, launchd woken, a late COMMIT's scope deleted), a silent public
 * connection closed at the IDLE time (logged) while a busy one and the
 * broker stay, and the connection limit: one more than 32 accepted,
 * closed at once and logged, then room again once callers leave.
 */
#define _GNU_SOURCE
#include "../runner/pbx_test.h"
#include "e2e_harness.h"

#include "capabi/pbx_capabi.h"
#include "core/pbx_core.h"
#include "ipc/pbx_ipc.h"
#include "powerboxd/port/pbx_port.h"
#include "powerboxd/runtime/pbx_rt.h"
#include "sha2/pbx_sha2.h"
#include "tests/sock/pbx_test_sock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Checks that a refused powerboxd wrote exactly one line to its stderr,
 * naming its exit status and what was wrong. */
static void e2e_refusal_line(const e2e_proc *p, int status)
{
    char text[1024];
    char head[96];
    (void)snprintf(head, sizeof(head),
                   "powerboxd: startup refused, exit status %d: ", status);
    PBX_REQUIRE(e2e_log_text(p, text, sizeof(text)));
    size_t n = strlen(text);
    /* One line: the head, a reason, one newline at the very end. */
    PBX_CHECK(strncmp(text, head, strlen(head)) == 0);
    PBX_CHECK(n > strlen(head) + 8U && text[n - 1U] == '\n');
    PBX_CHECK(strchr(text, '\n') == text + n - 1U);
    if (strncmp(text, head, strlen(head)) != 0) {
        (void)fprintf(stderr, "  log: %s\n", text);
    }
}

/* Starts powerboxd on an inventory with slot (3..10) replaced by fd (or
 * emptied for -1) and returns its exit status; ready means it reported
 * readiness instead, which fails the test. */
static int e2e_refusal(e2e_pbx1_bad bad, int slot, int fd)
{
    e2e_proc p;
    if (!e2e_prepare(&p, bad)) {
        return -100;
    }
    if (slot >= 3) {
        if (p.theirs[slot - 3] >= 0) {
            (void)close(p.theirs[slot - 3]);
        }
        p.theirs[slot - 3] = fd;
    }
    if (!e2e_start(&p)) {
        e2e_close(&p);
        return -101;
    }
    int st = e2e_exit_status(&p);
    e2e_refusal_line(&p, st);
    e2e_close(&p);
    return st;
}

PBX_TEST(e2e_refuses_bad_pbx1_each_with_its_status)
{
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_NONE, 0, -1), PBX_RT_EXIT_PBX1_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_DEVNULL, 0, -1), PBX_RT_EXIT_PBX1_KIND);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_UNSEALED, 0, -1),
                 PBX_RT_EXIT_PBX1_UNSEALED);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_PARTIAL, 0, -1),
                 PBX_RT_EXIT_PBX1_UNSEALED);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_SHORT, 0, -1), PBX_RT_EXIT_PBX1_RECORD);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_DIGEST, 0, -1), PBX_RT_EXIT_PBX1_RECORD);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_LAYOUT, 0, -1), PBX_RT_EXIT_PBX1_LAYOUT);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_EXTENT, 0, -1), PBX_RT_EXIT_PBX1_EXTENT);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_TRANSIENT, 0, -1), PBX_RT_EXIT_TRANSIENT);
    /* Fewer transient slots than the core needs (`pbx geometry check`
     * refuses the same record: the one shared startup check). */
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_TSLOTS_MIN, 0, -1),
                 PBX_RT_EXIT_CORE_INIT);
}

/* Starts powerboxd with argv (NULL-ended; argv[0] is replaced by the
 * binary's path) on a good inventory; returns its exit status, having
 * checked the refusal line when it is not 0. */
static int e2e_args(const char **argv)
{
    e2e_proc p;
    if (!e2e_prepare(&p, E2E_PBX1_GOOD)) {
        return -100;
    }
    argv[0] = getenv("PBX_POWERBOXD");
    p.argv = argv;
    if (!e2e_start(&p)) {
        e2e_close(&p);
        return -101;
    }
    int st = e2e_exit_status(&p);
    if (st != 0) {
        e2e_refusal_line(&p, st);
    }
    e2e_close(&p);
    return st;
}

PBX_TEST(e2e_refuses_any_command_line_but_one_name_with_a_line)
{
    const char *none[] = {NULL, NULL};
    const char *two[] = {NULL, "@pbx-e2e-a", "@pbx-e2e-b", NULL};
    const char *empty[] = {NULL, "", NULL};
    const char *option[] = {NULL, "--verbose", NULL};
    const char *help_extra[] = {NULL, "-h", "@pbx-e2e-a", NULL};
    PBX_CHECK_EQ(e2e_args(none), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(two), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(empty), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(option), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(help_extra), PBX_RT_EXIT_ARGS);
    /* --incarnation takes 1 to 4294967295, in decimal, before the name. */
    const char *inc_zero[] = {NULL, "--incarnation", "0", "@pbx-e2e-a", NULL};
    const char *inc_word[] = {NULL, "--incarnation", "x", "@pbx-e2e-a", NULL};
    const char *inc_big[] = {NULL, "--incarnation", "4294967296", "@pbx-e2e-a",
                             NULL};
    const char *inc_sign[] = {NULL, "--incarnation", "+1", "@pbx-e2e-a", NULL};
    const char *inc_bare[] = {NULL, "--incarnation", "@pbx-e2e-a", NULL};
    const char *inc_empty[] = {NULL, "--incarnation=", "@pbx-e2e-a", NULL};
    const char *inc_after[] = {NULL, "@pbx-e2e-a", "--incarnation", "2", NULL};
    PBX_CHECK_EQ(e2e_args(inc_zero), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(inc_word), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(inc_big), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(inc_sign), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(inc_bare), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(inc_empty), PBX_RT_EXIT_ARGS);
    PBX_CHECK_EQ(e2e_args(inc_after), PBX_RT_EXIT_ARGS);
}

/* Starts powerboxd with argv (as e2e_args) and returns whether it got
 * ready; it is then stopped. */
static bool e2e_args_ready(const char **argv)
{
    e2e_proc p;
    if (!e2e_prepare(&p, E2E_PBX1_GOOD)) {
        return false;
    }
    argv[0] = getenv("PBX_POWERBOXD");
    p.argv = argv;
    bool ready = e2e_start(&p) && e2e_wait_ready(&p);
    e2e_close(&p);
    return ready;
}

PBX_TEST(e2e_takes_its_incarnation_before_the_name)
{
    const char *two[] = {NULL, "--incarnation", "7", "@pbx-e2e-inc-a", NULL};
    const char *one[] = {NULL, "--incarnation=4294967295", "@pbx-e2e-inc-b",
                         NULL};
    PBX_CHECK(e2e_args_ready(two));
    PBX_CHECK(e2e_args_ready(one));
}

/* Runs `powerboxd FLAG` with stdout and stderr in memory files; stores
 * what each got and returns the exit status. */
static int e2e_help(const char *flag, char *out, char *err, size_t cap)
{
    const char *path = getenv("PBX_POWERBOXD");
    int fo = memfd_create("out", MFD_CLOEXEC);
    int fe = memfd_create("err", MFD_CLOEXEC);
    int st = -1;
    pid_t pid = path != NULL && fo >= 0 && fe >= 0 ? fork() : -1;
    if (pid == 0) {
        (void)dup2(fo, 1);
        (void)dup2(fe, 2);
        char *const argv[] = {(char *)path, (char *)flag, NULL};
        execv(path, argv);
        _exit(127);
    }
    if (pid > 0 && waitpid(pid, &st, 0) == pid) {
        st = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    }
    ssize_t a = fo >= 0 ? pread(fo, out, cap - 1U, 0) : -1;
    ssize_t b = fe >= 0 ? pread(fe, err, cap - 1U, 0) : -1;
    out[a > 0 ? a : 0] = '\0';
    err[b > 0 ? b : 0] = '\0';
    (void)close(fo);
    (void)close(fe);
    return st;
}

PBX_TEST(e2e_help_prints_usage_on_stdout_and_exits_0)
{
    static const char *const flags[] = {"-h", "--help"};
    for (size_t i = 0; i < 2U; i++) {
        char out[256];
        char err[256];
        PBX_CHECK_EQ(e2e_help(flags[i], out, err, sizeof(err)), 0);
        static const char want[] =
            "usage: powerboxd [--incarnation N] ENDPOINT-NAME\n";
        PBX_CHECK(strncmp(out, want, sizeof(want) - 1U) == 0);
        PBX_CHECK(err[0] == '\0');
    }
}

/* A listening SEQPACKET socket (a receive capability). */
static int e2e_listener(void)
{
    sa_family_t fam = AF_UNIX;
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    /* Binding only the family autobinds an abstract name. */
    if (fd >= 0 && (bind(fd, (const struct sockaddr *)(const void *)&fam,
                         sizeof(fam)) != 0 ||
                    listen(fd, 1) != 0)) {
        (void)close(fd);
        return -1;
    }
    return fd;
}

/* One end of a fresh pair of type; the other end is closed. */
static int e2e_one_end(int type)
{
    int sv[2];
    if (!e2e_socketpair(type, sv)) {
        return -1;
    }
    (void)close(sv[0]);
    return sv[1];
}

PBX_TEST(e2e_refuses_bad_inventory_each_with_its_status)
{
    int sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    int mem = memfd_create("x", MFD_CLOEXEC);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 4, -1), PBX_RT_EXIT_INV_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 5, -1), PBX_RT_EXIT_INV_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 6, -1), PBX_RT_EXIT_INV_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 7, -1), PBX_RT_EXIT_INV_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 8, -1), PBX_RT_EXIT_INV_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 4, e2e_one_end(SOCK_SEQPACKET)),
                 PBX_RT_EXIT_INV_KIND);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 5, e2e_one_end(SOCK_DGRAM)),
                 PBX_RT_EXIT_INV_KIND);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 6, mem), PBX_RT_EXIT_INV_KIND);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 8, e2e_one_end(SOCK_STREAM)),
                 PBX_RT_EXIT_INV_KIND);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 7, e2e_listener()),
                 PBX_RT_EXIT_INV_RIGHTS_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 5, sock),
                 PBX_RT_EXIT_INV_RIGHTS_MISSING);
    /* A public endpoint handed over at startup is a self-transfer. */
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 9, e2e_listener()),
                 PBX_RT_EXIT_INV_PROVENANCE);
}

PBX_TEST(e2e_refuses_bad_broker_endpoint_each_with_its_status)
{
    /* Slot 10 must be one end of a connected SEQPACKET pair: absent,
     * a datagram or stream socket, an unconnected socket (nobody can
     * send on it) and a listener (anyone could connect) are refused. */
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 10, -1), PBX_RT_EXIT_INV_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 10, e2e_one_end(SOCK_DGRAM)),
                 PBX_RT_EXIT_INV_KIND);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 10, e2e_one_end(SOCK_STREAM)),
                 PBX_RT_EXIT_INV_KIND);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 10,
                             socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0)),
                 PBX_RT_EXIT_INV_RIGHTS_MISSING);
    PBX_CHECK_EQ(e2e_refusal(E2E_PBX1_GOOD, 10, e2e_listener()),
                 PBX_RT_EXIT_INV_RIGHTS_EXTRA);
}

/* A running powerboxd with one client connection and its fd baseline. */
typedef struct e2e_run {
    e2e_proc p;
    int client;
    int baseline;
} e2e_run;

static bool e2e_run_start(e2e_run *r)
{
    r->client = -1;
    if (!e2e_prepare(&r->p, E2E_PBX1_GOOD) || !e2e_start(&r->p) ||
        !e2e_wait_ready(&r->p)) {
        return false;
    }
    r->client = e2e_connect(&r->p);
    /* A round trip proves the connection is accepted before counting. */
    uint8_t f[64];
    size_t n = 0;
    pbx_ipc_consume c = {{0, 1}};
    if (r->client < 0 || pbx_ipc_consume_encode(&c, f, sizeof(f), &n) != 0 ||
        !e2e_send(r->client, f, n, NULL, 0) ||
        e2e_recv(r->client, f, sizeof(f), NULL, 0, NULL, 5000) <= 0) {
        return false;
    }
    r->baseline = e2e_fd_count(r->p.pid);
    return r->baseline > 0;
}

static void e2e_run_stop(e2e_run *r)
{
    if (r->client >= 0) {
        (void)close(r->client);
    }
    e2e_close(&r->p);
}

/* Receives one frame on fd and decodes its header; returns false on
 * timeout or a frame that does not decode. */
static bool e2e_frame(int fd, uint8_t *buf, size_t cap, pbx_ipc_frame *f,
                      int *fds, int *nfds)
{
    long n = e2e_recv(fd, buf, cap, fds, 4, nfds, 5000);
    return n > 0 &&
           pbx_ipc_frame_decode(buf, (size_t)n, (uint16_t)*nfds, f) == PBX_OK;
}

/* The routine request the grant tests make: install mode, one-shot,
 * unless the caller changes the record afterwards. */
static void e2e_begin_rec(pbx_ipc_begin *b, const char *sel)
{
    memset(b, 0, sizeof(*b));
    b->ctx.session = 7;
    b->ctx.job_id = 11;
    b->ctx.job_gen = 1;
    b->ctx.realm = 3;
    b->ctx.operation = PBX_IPC_OPERATION_READ;
    b->ctx.object_class = PBX_IPC_CLASS_FILE;
    b->ctx.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    b->ctx.mode = PBX_IPC_MODE_INSTALL;
    b->ctx.urgency = PBX_IPC_URGENCY_ROUTINE;
    b->ctx.entry.len = 7;
    memcpy(b->ctx.entry.bytes, "bin/cat", 7);
    b->target.process_id = 42;
    b->target.process_gen = 5;
    b->target.slot = 20;
    b->selector_len = (uint32_t)strlen(sel);
    (void)pbx_sha2_digest((const uint8_t *)sel, strlen(sel),
                          b->selector_digest);
    b->label.len = 6;
    memcpy(b->label.bytes, "readme", 6);
}

/* A caller round trip: send buf with fds, decode the reply into f. */
static bool e2e_call(int fd, const uint8_t *req, size_t len, const int *fds,
                     int nfds, uint8_t *buf, size_t cap, pbx_ipc_frame *f)
{
    int got = 0;
    return e2e_send(fd, req, len, fds, nfds) &&
           e2e_frame(fd, buf, cap, f, NULL, &got) && got == 0;
}

/* E2E_SCOPE_FDS bounds the descriptor numbers whose scope identity the
 * harness remembers (its descriptors stay far below it). */
#define E2E_SCOPE_FDS 4096

/* The identity of the scope end handed over, by the harness's own end. */
static uint64_t e2e_scope_ids[E2E_SCOPE_FDS];

/* The scope identity powerboxd sees for the scope whose far end the
 * harness keeps as fd: the inode of the end it was handed (0: none). */
static uint64_t e2e_scope_id(int fd)
{
    return fd >= 0 && fd < E2E_SCOPE_FDS ? e2e_scope_ids[fd] : 0U;
}

/* The caller side of BEGIN b up to COMMIT; stores the request id. The
 * scope's far end is sent and closed; *scope keeps ours, and vfsd (the
 * harness) names the scope by the far end's inode, as the reference vfsd
 * does: that is the identity powerboxd's fstat of its copy reports. */
static bool e2e_open_as(int client, const pbx_ipc_begin *bp, const char *sel,
                        pbx_ipc_id *id, int *scope)
{
    pbx_ipc_begin b = *bp;
    pbx_ipc_begin_reply br;
    pbx_ipc_frame f;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    int sv[2];
    if (pbx_ipc_begin_encode(&b, out, sizeof(out), &n) != PBX_OK ||
        !e2e_call(client, out, n, NULL, 0, in, sizeof(in), &f) ||
        pbx_ipc_begin_reply_decode(&f, &br) != PBX_OK) {
        return false;
    }
    *id = f.request;
    pbx_ipc_selector s = {0, b.selector_len, (const uint8_t *)sel};
    pbx_ipc_commit c = {br.dest_slot};
    if (pbx_ipc_selector_encode(*id, &s, out, sizeof(out), &n) != PBX_OK ||
        !e2e_call(client, out, n, NULL, 0, in, sizeof(in), &f) ||
        f.status != 0 || !e2e_socketpair(SOCK_SEQPACKET, sv)) {
        return false;
    }
    struct stat st;
    if (fstat(sv[1], &st) != 0 || sv[0] >= E2E_SCOPE_FDS) {
        (void)close(sv[0]);
        (void)close(sv[1]);
        return false;
    }
    e2e_scope_ids[sv[0]] = (uint64_t)st.st_ino;
    *scope = sv[0];
    bool ok = pbx_ipc_commit_encode(*id, &c, out, sizeof(out), &n) == PBX_OK &&
              e2e_call(client, out, n, &sv[1], 1, in, sizeof(in), &f) &&
              f.status == 0;
    (void)close(sv[1]);
    return ok;
}

/* The routine install-mode request of e2e_begin_rec up to COMMIT. */
static bool e2e_open_request(int client, const char *sel, pbx_ipc_id *id,
                             int *scope)
{
    pbx_ipc_begin b;
    e2e_begin_rec(&b, sel);
    return e2e_open_as(client, &b, sel, id, scope);
}

/* vfsd: answers the RESOLVE that came through the scope with an object,
 * naming the scope by scope_id, on vfsd's route (as the real vfsd does:
 * never on the scope, whose copies a job may hold); *obj keeps our end,
 * *ino the object's identity. */
static bool e2e_vfsd_resolve_as(int route, int scope, uint64_t scope_id,
                                int *obj, ino_t *ino)
{
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t out[256];
    pbx_ipc_frame f;
    pbx_ipc_resolve q;
    int nfds = 0;
    int sv[2];
    size_t n = 0;
    struct stat st;
    if (!e2e_frame(scope, in, sizeof(in), &f, NULL, &nfds) || nfds != 0 ||
        pbx_ipc_resolve_decode(&f, &q) != PBX_OK ||
        !e2e_socketpair(SOCK_SEQPACKET, sv) || fstat(sv[1], &st) != 0) {
        return false;
    }
    pbx_ipc_resolve_reply rr;
    memset(&rr, 0, sizeof(rr));
    rr.result = PBX_IPC_RESOLVE_FOUND;
    rr.object_class = q.object_class;
    rr.operation = q.operation;
    rr.object.id = 900;
    rr.object.gen = 1;
    rr.scope_id = scope_id;
    memcpy(rr.selector_digest, q.selector_digest, sizeof(rr.selector_digest));
    *obj = sv[0];
    *ino = st.st_ino;
    bool ok = pbx_ipc_resolve_reply_encode(f.request, &rr, out, sizeof(out),
                                           &n) == PBX_OK &&
              e2e_reply(route, &f, out, n, &sv[1], 1);
    (void)close(sv[1]);
    return ok;
}

/* vfsd: answers the RESOLVE that came through the scope with an object on
 * its route, naming the scope by its true identity (the inode of the end
 * it handed out). */
static bool e2e_vfsd_resolve(int route, int scope, int *obj, ino_t *ino)
{
    return e2e_vfsd_resolve_as(route, scope, e2e_scope_id(scope), obj, ino);
}

/* ttyd: answers one POLICY with verdict, echoing the request's urgency,
 * realm and session. */
static bool e2e_ttyd_verdict(int ttyd, uint8_t verdict)
{
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t out[128];
    pbx_ipc_frame f;
    pbx_ipc_policy q;
    int nfds = 0;
    size_t n = 0;
    if (!e2e_frame(ttyd, in, sizeof(in), &f, NULL, &nfds) || nfds != 0 ||
        pbx_ipc_policy_decode(&f, &q) != PBX_OK) {
        return false;
    }
    pbx_ipc_policy_reply pr = {verdict, q.ctx.urgency, q.ctx.realm,
                               q.ctx.session};
    return pbx_ipc_policy_reply_encode(f.request, &pr, out, sizeof(out), &n) ==
               PBX_OK &&
           e2e_reply(ttyd, &f, out, n, NULL, 0);
}

/* ttyd: answers POLICY with ALLOW for the request's session. */
static bool e2e_ttyd_policy(int ttyd)
{
    return e2e_ttyd_verdict(ttyd, (uint8_t)PBX_IPC_VERDICT_ALLOW);
}

/* procd: takes INSTALL with the object (checked to be vfsd's object) and
 * answers with a manage-only handle; *handle keeps our end. */
static bool e2e_procd_install(int procd, ino_t ino, int *handle,
                              pbx_ipc_id *grant)
{
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t out[128];
    pbx_ipc_frame f;
    pbx_ipc_install q;
    int fds[4];
    int nfds = 0;
    int sv[2];
    size_t n = 0;
    struct stat st;
    if (!e2e_frame(procd, in, sizeof(in), &f, fds, &nfds) || nfds != 1 ||
        pbx_ipc_install_decode(&f, &q) != PBX_OK || fstat(fds[0], &st) != 0 ||
        st.st_ino != ino || !e2e_socketpair(SOCK_SEQPACKET, sv)) {
        return false;
    }
    (void)close(fds[0]); /* the staged child's copy, here simply dropped */
    *grant = q.grant;
    *handle = sv[0];
    pbx_ipc_install_reply ir = {PBX_IPC_HANDLE_MANAGE_ONLY, q.target.slot,
                                q.grant, q.target.process_id,
                                q.target.process_gen};
    bool ok = pbx_ipc_install_reply_encode(f.request, &ir, out, sizeof(out),
                                           &n) == PBX_OK &&
              e2e_reply(procd, &f, out, n, &sv[1], 1);
    (void)close(sv[1]);
    return ok;
}

/* vfsd: takes back powerboxd's own copy of the object (DETACH). */
static bool e2e_vfsd_detach(int vfsd, ino_t ino)
{
    uint8_t in[256];
    uint8_t out[128];
    pbx_ipc_frame f;
    pbx_ipc_detach q;
    int fds[4];
    int nfds = 0;
    size_t n = 0;
    struct stat st;
    if (!e2e_frame(vfsd, in, sizeof(in), &f, fds, &nfds) || nfds != 1 ||
        pbx_ipc_detach_decode(&f, &q) != PBX_OK || fstat(fds[0], &st) != 0 ||
        st.st_ino != ino) {
        return false;
    }
    (void)close(fds[0]);
    return pbx_ipc_detach_reply_encode(f.request, &q, out, sizeof(out), &n) ==
               PBX_OK &&
           e2e_reply(vfsd, &f, out, n, NULL, 0);
}

/* ttyd: acknowledges one VIEW row of kind for grant, installed at slot. */
static bool e2e_ttyd_view_at(int ttyd, uint8_t kind, pbx_ipc_id grant,
                             uint32_t slot)
{
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t out[128];
    pbx_ipc_frame f;
    pbx_ipc_view q;
    int nfds = 0;
    size_t n = 0;
    if (!e2e_frame(ttyd, in, sizeof(in), &f, NULL, &nfds) || nfds != 0 ||
        pbx_ipc_view_decode(&f, &q) != PBX_OK || q.kind != kind ||
        q.grant.index != grant.index || q.grant.gen != grant.gen ||
        q.object.id != 900U || q.installed_slot != slot) {
        return false;
    }
    pbx_ipc_view_ack a = {kind, q.grant};
    return pbx_ipc_view_reply_encode(f.request, &a, out, sizeof(out), &n) ==
               PBX_OK &&
           e2e_reply(ttyd, &f, out, n, NULL, 0);
}

/* ttyd: acknowledges one VIEW row of an install-mode grant (slot 20). */
static bool e2e_ttyd_view(int ttyd, uint8_t kind, pbx_ipc_id grant)
{
    return e2e_ttyd_view_at(ttyd, kind, grant, 20U);
}

/* launchd: receives the authority-free wake for request id. */
static bool e2e_launchd_wake(int launchd, pbx_ipc_id id)
{
    uint8_t in[128];
    pbx_ipc_frame f;
    pbx_ipc_wake w;
    int nfds = 0;
    return e2e_frame(launchd, in, sizeof(in), &f, NULL, &nfds) && nfds == 0 &&
           pbx_ipc_wake_decode(&f, &w) == PBX_OK && w.job_id == 11U &&
           f.request.index == id.index && f.request.gen == id.gen;
}

/* The caller asks for the decision and expects APPROVED for grant. */
static bool e2e_decision(int client, pbx_ipc_id id, pbx_ipc_id grant)
{
    uint8_t out[64];
    uint8_t in[128];
    pbx_ipc_frame f;
    pbx_ipc_decision d;
    size_t n = 0;
    return pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, out, sizeof(out),
                                &n) == PBX_OK &&
           e2e_call(client, out, n, NULL, 0, in, sizeof(in), &f) &&
           pbx_ipc_decision_reply_decode(&f, &d) == PBX_OK &&
           d.outcome == PBX_IPC_OUTCOME_APPROVED &&
           d.grant.index == grant.index && d.grant.gen == grant.gen &&
           d.installed_slot == 20U;
}

/* CONSUME; powerboxd then revokes by deleting procd's manage-only handle,
 * which procd sees as the handle's connection ending. */
static bool e2e_consume_revoke(int client, int handle, pbx_ipc_id grant);

/* vfsd: acknowledges the receipt-free full-identity RETIRE, which must
 * name the scope by scope_id (the identity bound at resolution). */
static bool e2e_vfsd_retire(int vfsd, uint64_t scope_id)
{
    uint8_t in[256];
    uint8_t out[128];
    pbx_ipc_frame f;
    pbx_ipc_retire q;
    int nfds = 0;
    size_t n = 0;
    if (!e2e_frame(vfsd, in, sizeof(in), &f, NULL, &nfds) || nfds != 0 ||
        pbx_ipc_retire_decode(&f, &q) != PBX_OK || q.object.id != 900U ||
        q.scope_id != scope_id || scope_id == 0U) {
        return false;
    }
    return pbx_ipc_retire_reply_encode(f.request, &q, out, sizeof(out), &n) ==
               PBX_OK &&
           e2e_reply(vfsd, &f, out, n, NULL, 0);
}

/* Reports whether fd's peer has closed (EOF within ms). */
static bool e2e_peer_gone(int fd, int ms)
{
    uint8_t b[64];
    return e2e_recv(fd, b, sizeof(b), NULL, 0, NULL, ms) == 0;
}

static bool e2e_consume_revoke(int client, int handle, pbx_ipc_id grant)
{
    uint8_t out[128];
    uint8_t in[256];
    pbx_ipc_frame f;
    pbx_ipc_consume c = {grant};
    size_t n = 0;
    return pbx_ipc_consume_encode(&c, out, sizeof(out), &n) == PBX_OK &&
           e2e_call(client, out, n, NULL, 0, in, sizeof(in), &f) &&
           f.status == 0 && e2e_peer_gone(handle, 5000);
}

/* ttyd: answers one REMOVE row of grant with an inexact acknowledgement
 * (the wrong view kind), which powerboxd must not take as the ack. */
static bool e2e_ttyd_remove_nack(int ttyd, pbx_ipc_id grant)
{
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t out[128];
    pbx_ipc_frame f;
    pbx_ipc_view q;
    int nfds = 0;
    size_t n = 0;
    if (!e2e_frame(ttyd, in, sizeof(in), &f, NULL, &nfds) || nfds != 0 ||
        pbx_ipc_view_decode(&f, &q) != PBX_OK ||
        q.kind != PBX_IPC_VIEW_REMOVE || q.grant.index != grant.index ||
        q.grant.gen != grant.gen) {
        return false;
    }
    pbx_ipc_view_ack a = {PBX_IPC_VIEW_ACTIVE, q.grant};
    return pbx_ipc_view_reply_encode(f.request, &a, out, sizeof(out), &n) ==
               PBX_OK &&
           e2e_reply(ttyd, &f, out, n, NULL, 0);
}

/* Closes every descriptor in fds that is open. */
static void e2e_close_all(const int *fds, int n)
{
    for (int i = 0; i < n; i++) {
        if (fds[i] >= 0) {
            (void)close(fds[i]);
        }
    }
}

/* Plays the peers for request id, committed with scope, from RESOLVE to
 * APPROVED and consumes the grant, which revokes procd's handle; *obj,
 * *handle and *grant are what the peers received (the caller closes the
 * descriptors). */
static void e2e_grant_to_consume(e2e_run *r, pbx_ipc_id id, int scope, int *obj,
                                 int *handle, pbx_ipc_id *grant)
{
    ino_t ino = 0;
    PBX_CHECK(e2e_vfsd_resolve(r->p.vfsd, scope, obj, &ino));
    PBX_CHECK(e2e_ttyd_policy(r->p.ttyd));
    PBX_CHECK(e2e_procd_install(r->p.procd, ino, handle, grant));
    PBX_CHECK(e2e_vfsd_detach(r->p.vfsd, ino));
    PBX_CHECK(e2e_ttyd_view(r->p.ttyd, PBX_IPC_VIEW_ACTIVE, *grant));
    PBX_CHECK(e2e_launchd_wake(r->p.launchd, id));
    /* Request-owned authority is gone before the decision: the scope. */
    PBX_CHECK(e2e_peer_gone(scope, 5000));
    PBX_CHECK(e2e_decision(r->p.broker, id, *grant));
    PBX_CHECK(e2e_consume_revoke(r->p.broker, *handle, *grant));
}

/* e2e_grant_to_consume, then sees the grant removed and retired. */
static void e2e_grant_to_retire(e2e_run *r, pbx_ipc_id id, int scope, int *obj,
                                int *handle, pbx_ipc_id *grant)
{
    e2e_grant_to_consume(r, id, scope, obj, handle, grant);
    PBX_CHECK(e2e_ttyd_view(r->p.ttyd, PBX_IPC_VIEW_REMOVE, *grant));
    /* RETIRE names the scope by the identity that was bound. */
    PBX_CHECK(e2e_vfsd_retire(r->p.vfsd, e2e_scope_id(scope)));
    /* Every copy of the object powerboxd held is gone too. */
    PBX_CHECK(e2e_peer_gone(*obj, 5000));
}

PBX_TEST(e2e_routine_grant_from_begin_to_retire)
{
    e2e_run r;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_id grant = {0, 0};
    int scope = -1;
    int obj = -1;
    int handle = -1;
    char line[512];
    PBX_REQUIRE(e2e_run_start(&r));
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    e2e_grant_to_retire(&r, id, scope, &obj, &handle, &grant);
    /* powerboxd's log: one line for the decision, one for the grant's
     * end, each exactly once. */
    /* An approved decision names its grant and vfsd's object (900 gen 1,
     * as this test's vfsd answered), and so does the grant's end. */
    (void)snprintf(line, sizeof(line),
                   "event=decision request=1-%u.%u job=11:1 entry=bin/cat "
                   "op=read object=docs/readme.txt lifetime=one-shot "
                   "outcome=approved reason=policy grant=1-%u.%u "
                   "object-id=900:1\n",
                   id.index, id.gen, grant.index, grant.gen);
    PBX_CHECK(e2e_log_wait(&r.p, line, 1, 5000));
    PBX_CHECK_EQ(e2e_log_count(&r.p, line), 1);
    (void)snprintf(line, sizeof(line),
                   "event=grant-end grant=1-%u.%u request=1-%u.%u job=11:1 "
                   "entry=bin/cat op=read object=docs/readme.txt "
                   "lifetime=one-shot end=consumed reason=consume "
                   "object-id=900:1\n",
                   grant.index, grant.gen, id.index, id.gen);
    PBX_CHECK(e2e_log_wait(&r.p, line, 1, 5000));
    PBX_CHECK_EQ(e2e_log_count(&r.p, line), 1);
    PBX_CHECK_EQ(e2e_log_count(&r.p, "event="), 2);
    /* One more round trip, then powerboxd holds exactly its baseline. */
    uint8_t f[64];
    size_t n = 0;
    pbx_ipc_consume c = {grant};
    PBX_CHECK(pbx_ipc_consume_encode(&c, f, sizeof(f), &n) == PBX_OK &&
              e2e_send(r.p.broker, f, n, NULL, 0) &&
              e2e_recv(r.p.broker, f, sizeof(f), NULL, 0, NULL, 5000) > 0);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline);
    int fds[3] = {scope, obj, handle};
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}

/* Review D1: ttyd refusing the REMOVE row does not hold the RETIRE back.
 * vfsd retires the object right after the refused REMOVE, and REMOVE is
 * asked again on its own until ttyd acknowledges it exactly. */
PBX_TEST(e2e_refused_remove_does_not_delay_retire)
{
    e2e_run r;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_id grant = {0, 0};
    int scope = -1;
    int obj = -1;
    int handle = -1;
    PBX_REQUIRE(e2e_run_start(&r));
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    e2e_grant_to_consume(&r, id, scope, &obj, &handle, &grant);
    PBX_CHECK(e2e_ttyd_remove_nack(r.p.ttyd, grant));
    PBX_CHECK(e2e_vfsd_retire(r.p.vfsd, e2e_scope_id(scope)));
    PBX_CHECK(e2e_peer_gone(obj, 5000));
    /* The row is still owed: asked again, acknowledged exactly. */
    PBX_CHECK(e2e_ttyd_view(r.p.ttyd, PBX_IPC_VIEW_REMOVE, grant));
    /* Retired: the grant id names nothing now, and nothing leaked. */
    uint8_t f[64];
    uint8_t in[128];
    pbx_ipc_frame rf;
    size_t n = 0;
    pbx_ipc_consume c = {grant};
    PBX_CHECK(pbx_ipc_consume_encode(&c, f, sizeof(f), &n) == PBX_OK &&
              e2e_call(r.p.broker, f, n, NULL, 0, in, sizeof(in), &rf) &&
              rf.status == (uint32_t)PBX_E_CORE_UNKNOWN);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline);
    int fds[3] = {scope, obj, handle};
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}

/* One malformed frame of kind k (0..5) with nfds copies of fd attached. */
static size_t e2e_bad_frame(uint8_t *buf, size_t cap, unsigned k)
{
    pbx_ipc_commit c = {64U + k};
    pbx_ipc_id id = {k, 1U + k};
    size_t n = 0;
    memset(buf, 0xA5, cap);
    switch (k % 6U) {
    case 0: /* garbage */
        return 40;
    case 1: /* a COMMIT naming a slot that holds no reservation */
        (void)pbx_ipc_commit_encode(id, &c, buf, cap, &n);
        return n;
    case 2: /* a truncated header */
        return 10;
    case 3: /* a DECISION claiming capabilities */
        (void)pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, cap, &n);
        return n;
    case 4: /* a peer reply op on the public endpoint */
        (void)pbx_ipc_empty_encode(PBX_IPC_OP_RESOLVE | PBX_IPC_REPLY_BIT, id,
                                   buf, cap, &n);
        return n;
    default: /* longer than any frame */
        return cap;
    }
}

/* Sends one malformed frame with nfds copies of fd on a fresh connection
 * and waits for powerboxd to answer or to drop the connection. */
static bool e2e_one_bad(const e2e_proc *p, const uint8_t *buf, size_t len,
                        const int *fds, int nfds)
{
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    int c = e2e_connect(p);
    bool ok = c >= 0 && e2e_send(c, buf, len, fds, nfds) &&
              e2e_recv(c, in, sizeof(in), NULL, 0, NULL, 5000) >= 0;
    if (c >= 0) {
        (void)close(c);
    }
    return ok;
}

PBX_TEST(e2e_malformed_flood_returns_to_fd_baseline)
{
    e2e_run r;
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX + 64];
    int fds[24];
    int sv[2];
    PBX_REQUIRE(e2e_run_start(&r));
    PBX_REQUIRE(e2e_socketpair(SOCK_SEQPACKET, sv));
    for (int i = 0; i < 24; i++) {
        fds[i] = sv[1];
    }
    unsigned answered = 0;
    for (unsigned i = 0; i < 600U; i++) {
        size_t len = e2e_bad_frame(buf, sizeof(buf), i);
        /* 1..20 descriptors: past the 16 a receive accepts. */
        answered += e2e_one_bad(&r.p, buf, len, fds, 1 + (int)(i % 20U));
    }
    PBX_CHECK_EQ(answered, 600U);
    /* A final round trip on the first connection: powerboxd still serves
     * and holds exactly its baseline (the 600 connections are gone). */
    size_t n = 0;
    pbx_ipc_consume c = {{0, 1}};
    PBX_CHECK(pbx_ipc_consume_encode(&c, buf, sizeof(buf), &n) == PBX_OK &&
              e2e_send(r.client, buf, n, NULL, 0) &&
              e2e_recv(r.client, buf, sizeof(buf), NULL, 0, NULL, 5000) > 0);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline);
    /* Every copy powerboxd received was deleted: only ours remain. */
    (void)close(sv[1]);
    PBX_CHECK(e2e_peer_gone(sv[0], 5000));
    (void)close(sv[0]);
    e2e_run_stop(&r);
}

/* Sends EXPIRE of job 11.1 on conn and returns the reply's status, or -1
 * when no decodable reply came. */
static long e2e_expire_job(int conn)
{
    uint8_t out[64];
    uint8_t in[128];
    pbx_ipc_frame f;
    pbx_ipc_expire e = {PBX_IPC_EXPIRE_JOB, 1U, 11U, 0U};
    size_t n = 0;
    if (pbx_ipc_expire_encode(&e, out, sizeof(out), &n) != PBX_OK ||
        !e2e_call(conn, out, n, NULL, 0, in, sizeof(in), &f)) {
        return -1;
    }
    return (long)f.status;
}

/* Runs a job-lifetime install-mode request from conn to its installed,
 * approved grant; *obj, *handle and *ino as the peers keep them. */
static bool e2e_job_grant(e2e_run *r, pbx_ipc_id *grant, int *scope, int *obj,
                          int *handle, ino_t *ino)
{
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    e2e_begin_rec(&b, "docs/readme.txt");
    b.ctx.lifetime = PBX_IPC_LIFETIME_JOB;
    return e2e_open_as(r->p.broker, &b, "docs/readme.txt", &id, scope) &&
           e2e_vfsd_resolve(r->p.vfsd, *scope, obj, ino) &&
           e2e_ttyd_policy(r->p.ttyd) &&
           e2e_procd_install(r->p.procd, *ino, handle, grant) &&
           e2e_vfsd_detach(r->p.vfsd, *ino) &&
           e2e_ttyd_view(r->p.ttyd, PBX_IPC_VIEW_ACTIVE, *grant) &&
           e2e_launchd_wake(r->p.launchd, id) &&
           e2e_decision(r->p.broker, id, *grant);
}

PBX_TEST(e2e_expire_only_from_the_broker_endpoint_ends_a_live_grant)
{
    e2e_run r;
    pbx_ipc_id grant = {0, 0};
    int fds[3] = {-1, -1, -1}; /* scope, object, procd's handle */
    ino_t ino = 0;
    PBX_REQUIRE(e2e_run_start(&r));
    PBX_REQUIRE(e2e_job_grant(&r, &grant, &fds[0], &fds[1], &fds[2], &ino));
    /* This process holds launchd's wake route and broker end, yet its
     * public connections are ordinary callers: EXPIRE is refused on the
     * route it arrived on, and the grant stays live (the handle is not
     * revoked). */
    PBX_CHECK_EQ(e2e_expire_job(r.client), (long)PBX_E_CORE_PARTITION);
    int other = e2e_connect(&r.p);
    PBX_CHECK_EQ(e2e_expire_job(other), (long)PBX_E_CORE_PARTITION);
    PBX_CHECK(!e2e_peer_gone(fds[2], 200));
    /* On the broker endpoint the same frame ends the grant: procd's
     * handle is deleted, ttyd's row removed, vfsd's object retired. */
    PBX_CHECK_EQ(e2e_expire_job(r.p.broker), 0L);
    PBX_CHECK(e2e_peer_gone(fds[2], 5000));
    PBX_CHECK(e2e_ttyd_view(r.p.ttyd, PBX_IPC_VIEW_REMOVE, grant));
    PBX_CHECK(e2e_vfsd_retire(r.p.vfsd, e2e_scope_id(fds[0])));
    PBX_CHECK(e2e_peer_gone(fds[1], 5000));
    /* A repeated EXPIRE finds nothing more to end and changes nothing;
     * the first one ended everything within its own event, so there is
     * no sweep in progress to refuse it. */
    PBX_CHECK_EQ(e2e_expire_job(r.p.broker), 0L);
    (void)close(other);
    PBX_CHECK_EQ(e2e_expire_job(r.client), (long)PBX_E_CORE_PARTITION);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline);
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}

/* DECISION on conn for request id; stores the reply and the descriptors
 * that came with it (at most 4) in *d, fds and *nfds. */
static bool e2e_decision_fds(int conn, pbx_ipc_id id, pbx_ipc_decision *d,
                             int *fds, int *nfds)
{
    uint8_t out[64];
    uint8_t in[128];
    pbx_ipc_frame f;
    size_t n = 0;
    memset(d, 0, sizeof(*d));
    return pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, out, sizeof(out),
                                &n) == PBX_OK &&
           e2e_send(conn, out, n, NULL, 0) &&
           e2e_frame(conn, in, sizeof(in), &f, fds, nfds) &&
           (f.status != 0U || pbx_ipc_decision_reply_decode(&f, d) == PBX_OK);
}

/* The runtime-reply request launchd's broker relays for a running job:
 * resolved, allowed, its ACTIVE row (installed slot 0) shown, woken. */
static bool e2e_reply_mode_grant(e2e_run *r, pbx_ipc_id *id, int *scope,
                                 int *obj, ino_t *ino, pbx_ipc_id *grant)
{
    pbx_ipc_begin b;
    e2e_begin_rec(&b, "docs/readme.txt");
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    if (!e2e_open_as(r->p.broker, &b, "docs/readme.txt", id, scope) ||
        !e2e_vfsd_resolve(r->p.vfsd, *scope, obj, ino) ||
        !e2e_ttyd_policy(r->p.ttyd) || !e2e_vfsd_detach(r->p.vfsd, *ino)) {
        return false;
    }
    /* The ACTIVE row names the grant; read it without knowing it yet. */
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t out[128];
    pbx_ipc_frame f;
    pbx_ipc_view q;
    int nfds = 0;
    size_t n = 0;
    if (!e2e_frame(r->p.ttyd, in, sizeof(in), &f, NULL, &nfds) || nfds != 0 ||
        pbx_ipc_view_decode(&f, &q) != PBX_OK ||
        q.kind != PBX_IPC_VIEW_ACTIVE || q.installed_slot != 0U) {
        return false;
    }
    pbx_ipc_view_ack a = {q.kind, q.grant};
    *grant = q.grant;
    return pbx_ipc_view_reply_encode(f.request, &a, out, sizeof(out), &n) ==
               PBX_OK &&
           e2e_reply(r->p.ttyd, &f, out, n, NULL, 0) &&
           e2e_launchd_wake(r->p.launchd, *id);
}

PBX_TEST(e2e_runtime_reply_alias_once_to_the_broker_then_revoked)
{
    e2e_run r;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_id grant = {0, 0};
    pbx_ipc_decision d;
    int fds[3] = {-1, -1, -1}; /* scope, vfsd's provider end, the alias */
    int got[4];
    int nfds = 0;
    ino_t ino = 0;
    struct stat st;
    PBX_REQUIRE(e2e_run_start(&r));
    PBX_REQUIRE(e2e_reply_mode_grant(&r, &id, &fds[0], &fds[1], &ino, &grant));
    /* An ordinary caller cannot take launchd's request's decision. */
    PBX_CHECK(e2e_decision_fds(r.client, id, &d, got, &nfds));
    PBX_CHECK_EQ(nfds, 0);
    PBX_CHECK(d.outcome != PBX_IPC_OUTCOME_APPROVED);
    /* The broker gets APPROVED with the alias: one descriptor, the very
     * object vfsd minted (same connection inode). */
    PBX_CHECK(e2e_decision_fds(r.p.broker, id, &d, got, &nfds));
    PBX_CHECK_EQ(d.outcome, PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(d.mode, PBX_IPC_MODE_RUNTIME_REPLY);
    PBX_CHECK_EQ(d.installed_slot, 0U);
    PBX_CHECK(d.grant.index == grant.index && d.grant.gen == grant.gen);
    PBX_REQUIRE(nfds == 1);
    fds[2] = got[0];
    PBX_CHECK(fstat(fds[2], &st) == 0 && st.st_ino == ino);
    /* Exactly once: asking again brings no second alias, and powerboxd
     * holds no copy of it (its descriptors are back at the baseline). */
    PBX_CHECK(e2e_decision_fds(r.p.broker, id, &d, got, &nfds));
    PBX_CHECK_EQ(nfds, 0);
    PBX_CHECK(d.outcome != PBX_IPC_OUTCOME_APPROVED);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline);
    /* CONSUME from the broker ends the grant: REMOVE, then RETIRE of the
     * exact object, on which vfsd cuts the provider end and with it the
     * alias the running caller was given. */
    uint8_t out[64];
    uint8_t in[128];
    pbx_ipc_frame f;
    pbx_ipc_consume c = {grant};
    size_t n = 0;
    PBX_CHECK(pbx_ipc_consume_encode(&c, out, sizeof(out), &n) == PBX_OK &&
              e2e_call(r.p.broker, out, n, NULL, 0, in, sizeof(in), &f) &&
              f.status == 0U);
    PBX_CHECK(e2e_ttyd_view_at(r.p.ttyd, PBX_IPC_VIEW_REMOVE, grant, 0U));
    PBX_CHECK(e2e_vfsd_retire(r.p.vfsd, e2e_scope_id(fds[0])));
    PBX_CHECK(!e2e_peer_gone(fds[2], 50));
    (void)close(fds[1]);
    fds[1] = -1;
    PBX_CHECK(e2e_peer_gone(fds[2], 5000));
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline);
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}

/* ttyd: answers POLICY with PROMPT (an exceptional request). */
static bool e2e_ttyd_policy_prompt(int ttyd)
{
    return e2e_ttyd_verdict(ttyd, (uint8_t)PBX_IPC_VERDICT_PROMPT);
}

/* ttyd: takes one PROMPT (within ms) and answers RETRY, or, with approve,
 * the exact approving answer. Returns false when no PROMPT came. */
static bool e2e_ttyd_prompt(int ttyd, bool approve, int ms)
{
    static uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t out[256];
    pbx_ipc_frame f;
    pbx_ipc_prompt q;
    pbx_ipc_prompt_reply a;
    int nfds = 0;
    size_t n = 0;
    long got = e2e_recv(ttyd, in, sizeof(in), NULL, 0, &nfds, ms);
    if (got <= 0 || pbx_ipc_frame_decode(in, (size_t)got, 0, &f) != PBX_OK ||
        pbx_ipc_prompt_decode(&f, &q) != PBX_OK) {
        return false;
    }
    memset(&a, 0, sizeof(a));
    a.retry = !approve;
    if (approve) {
        a.answer = PBX_IPC_ANSWER_APPROVE;
        a.realm = q.ctx.realm;
        a.session = q.ctx.session;
        a.job_id = q.ctx.job_id;
        a.job_gen = q.ctx.job_gen;
        a.request = f.request;
        a.object = q.object;
    }
    return pbx_ipc_prompt_reply_encode(f.request, &a, out, sizeof(out), &n) ==
               PBX_OK &&
           e2e_reply(ttyd, &f, out, n, NULL, 0);
}

PBX_TEST(e2e_ttyd_retry_waits_instead_of_busy_retrying)
{
    e2e_run r;
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    int scope = -1;
    int obj = -1;
    ino_t ino = 0;
    PBX_REQUIRE(e2e_run_start(&r));
    e2e_begin_rec(&b, "docs/readme.txt");
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    PBX_REQUIRE(e2e_open_as(r.p.broker, &b, "docs/readme.txt", &id, &scope));
    PBX_REQUIRE(e2e_vfsd_resolve(r.p.vfsd, scope, &obj, &ino));
    PBX_REQUIRE(e2e_ttyd_policy_prompt(r.p.ttyd));
    /* Answer RETRY to every PROMPT for 600 ms. The waits between them
     * double from 10 ms (10+20+40+80+160+320 > 600), so at most 7 asks
     * fit; an immediate re-ask on writability would be thousands. */
    unsigned asks = 0;
    struct timespec t0;
    struct timespec t1;
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 1000; i++) {
        (void)clock_gettime(CLOCK_MONOTONIC, &t1);
        long ms = (t1.tv_sec - t0.tv_sec) * 1000L +
                  (t1.tv_nsec - t0.tv_nsec) / 1000000L;
        if (ms >= 600L || !e2e_ttyd_prompt(r.p.ttyd, false, 2000)) {
            break;
        }
        asks++;
    }
    PBX_CHECK(asks >= 3U);
    PBX_CHECK(asks <= 8U);
    /* The request was kept through every RETRY: approving it now gets
     * the grant installed as usual. */
    PBX_CHECK(e2e_ttyd_prompt(r.p.ttyd, true, 5000));
    pbx_ipc_id grant = {0, 0};
    int handle = -1;
    PBX_CHECK(e2e_procd_install(r.p.procd, ino, &handle, &grant));
    int fds[3] = {scope, obj, handle};
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}

/* Milliseconds on the monotonic clock. */
static long e2e_now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Waits up to ms for powerboxd's descriptor count to equal want. */
static bool e2e_fds_settle(pid_t pid, int want, int ms)
{
    for (int i = 0; i < e2e_slow(ms) / 10 + 1; i++) {
        if (e2e_fd_count(pid) == want) {
            return true;
        }
        struct timespec ts = {0, 10000000L};
        (void)nanosleep(&ts, NULL);
    }
    return false;
}

/* One CONSUME round trip of a grant nobody holds on conn: true when any
 * reply arrives within ms. */
static bool e2e_ping(int conn, int ms)
{
    uint8_t f[64];
    size_t n = 0;
    pbx_ipc_consume c = {{0, 1}};
    return pbx_ipc_consume_encode(&c, f, sizeof(f), &n) == PBX_OK &&
           e2e_send(conn, f, n, NULL, 0) &&
           e2e_recv(conn, f, sizeof(f), NULL, 0, NULL, ms) > 0;
}

/* DECISION for id on conn until it is no longer PENDING (at most 5 s);
 * returns the outcome, or 0 when none came. */
static unsigned e2e_outcome(int conn, pbx_ipc_id id)
{
    for (int i = 0; i < 100; i++) {
        pbx_ipc_decision d;
        int nfds = 0;
        if (!e2e_decision_fds(conn, id, &d, NULL, &nfds)) {
            return 0U;
        }
        if (d.outcome != PBX_IPC_OUTCOME_PENDING) {
            return d.outcome;
        }
        struct timespec ts = {0, 50000000L};
        (void)nanosleep(&ts, NULL);
    }
    return 0U;
}

PBX_TEST(e2e_silent_scope_is_denied_within_its_deadline_others_served)
{
    e2e_run r;
    pbx_ipc_id id = {0, 0};
    int scope = -1;
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    PBX_REQUIRE(e2e_run_start(&r));
    int other = e2e_connect(&r.p);
    PBX_REQUIRE(other >= 0 && e2e_ping(other, 5000));
    int baseline = e2e_fd_count(r.p.pid);
    /* The scope is committed and never answered: powerboxd's RESOLVE
     * through it is outstanding at most E2E_DEADLINE_SCOPE_MS, and
     * nobody else waits for it. */
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    long t0 = e2e_now_ms();
    PBX_CHECK(e2e_ping(other, 5000));
    PBX_CHECK(e2e_now_ms() - t0 < (long)E2E_DEADLINE_SCOPE_MS);
    /* The RESOLVE did arrive; then powerboxd deleted the scope. */
    PBX_CHECK(e2e_recv(scope, b, sizeof(b), NULL, 0, NULL, 5000) > 0);
    PBX_CHECK(e2e_peer_gone(scope, 5000));
    PBX_CHECK_EQ(e2e_outcome(r.p.broker, id), (unsigned)PBX_IPC_OUTCOME_DENIED);
    /* The denial's log line says why: the resolution got no answer. */
    char line[512];
    (void)snprintf(line, sizeof(line),
                   "event=decision request=1-%u.%u job=11:1 entry=bin/cat "
                   "op=read object=docs/readme.txt lifetime=one-shot "
                   "outcome=denied reason=peer-timeout\n",
                   id.index, id.gen);
    PBX_CHECK(e2e_log_wait(&r.p, line, 1, 5000));
    PBX_CHECK_EQ(e2e_log_count(&r.p, "event="), 1);
    PBX_CHECK(e2e_ping(other, 5000));
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), baseline);
    (void)close(scope);
    (void)close(other);
    e2e_run_stop(&r);
}

/* BEGIN and SELECTOR for sel on client, then COMMIT carrying fd; stores
 * the COMMIT reply's status in *status. */
static bool e2e_commit_fd(int client, const char *sel, int fd, uint32_t *status)
{
    pbx_ipc_begin b;
    pbx_ipc_begin_reply br;
    pbx_ipc_frame f;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    e2e_begin_rec(&b, sel);
    if (pbx_ipc_begin_encode(&b, out, sizeof(out), &n) != PBX_OK ||
        !e2e_call(client, out, n, NULL, 0, in, sizeof(in), &f) ||
        pbx_ipc_begin_reply_decode(&f, &br) != PBX_OK) {
        return false;
    }
    pbx_ipc_id id = f.request;
    pbx_ipc_selector s = {0, b.selector_len, (const uint8_t *)sel};
    pbx_ipc_commit c = {br.dest_slot};
    if (pbx_ipc_selector_encode(id, &s, out, sizeof(out), &n) != PBX_OK ||
        !e2e_call(client, out, n, NULL, 0, in, sizeof(in), &f) ||
        f.status != 0 ||
        pbx_ipc_commit_encode(id, &c, out, sizeof(out), &n) != PBX_OK ||
        !e2e_call(client, out, n, &fd, 1, in, sizeof(in), &f)) {
        return false;
    }
    *status = f.status;
    return true;
}

/* A connected SEQPACKET pair created by another process (its SO_PEERCRED
 * names that process, not the harness that plays vfsd). */
static bool e2e_foreign_pair(int *sv)
{
    int ch[2];
    int nfds = 0;
    uint8_t b[4];
    if (!e2e_socketpair(SOCK_SEQPACKET, ch)) {
        return false;
    }
    pid_t pid = fork();
    if (pid == 0) {
        int pair[2];
        _exit(e2e_socketpair(SOCK_SEQPACKET, pair) &&
                      e2e_send(ch[1], "x", 1, pair, 2)
                  ? 0
                  : 1);
    }
    long n = e2e_recv(ch[0], b, sizeof(b), sv, 2, &nfds, 5000);
    (void)waitpid(pid, NULL, 0);
    (void)close(ch[0]);
    (void)close(ch[1]);
    return n == 1 && nfds == 2;
}

PBX_TEST(e2e_scope_not_from_the_vfsd_process_is_refused_and_deleted)
{
    e2e_run r;
    int sv[2];
    uint32_t status = 0;
    PBX_REQUIRE(e2e_run_start(&r));
    /* A pair another process made: its peer is not vfsd's peer. */
    PBX_REQUIRE(e2e_foreign_pair(sv));
    PBX_CHECK(e2e_commit_fd(r.p.broker, "docs/a.txt", sv[1], &status));
    PBX_CHECK(status != 0U);
    (void)close(sv[1]);
    PBX_CHECK(e2e_peer_gone(sv[0], 5000));
    (void)close(sv[0]);
    /* An unconnected endpoint has no peer process at all. */
    int lone = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    PBX_REQUIRE(lone >= 0);
    status = 0;
    PBX_CHECK(e2e_commit_fd(r.p.broker, "docs/b.txt", lone, &status));
    PBX_CHECK(status != 0U);
    (void)close(lone);
    PBX_CHECK(e2e_ping(r.client, 5000));
    /* Only the two requests' own reserved destinations remain. */
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline + 2);
    e2e_run_stop(&r);
}

/* DECISION for id on conn; true when the reply is an error status. */
static bool e2e_decision_refused(int conn, pbx_ipc_id id)
{
    uint8_t out[64];
    uint8_t in[128];
    pbx_ipc_frame f;
    int nfds = 0;
    size_t n = 0;
    memset(&f, 0, sizeof(f));
    return pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, out, sizeof(out),
                                &n) == PBX_OK &&
           e2e_send(conn, out, n, NULL, 0) &&
           e2e_frame(conn, in, sizeof(in), &f, NULL, &nfds) &&
           f.status == (uint16_t)PBX_E_CORE_UNKNOWN && nfds == 0;
}

PBX_TEST(e2e_port_badge_keeps_requests_to_their_connection)
{
    e2e_run r;
    pbx_ipc_id id = {0, 0};
    int scope = -1;
    pbx_ipc_decision d;
    int nfds = 0;
    PBX_REQUIRE(e2e_run_start(&r));
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    /* Public connections (other badges) cannot read the decision of a
     * request launchd's broker began. */
    int other = e2e_connect(&r.p);
    PBX_REQUIRE(other >= 0);
    PBX_CHECK(e2e_decision_refused(other, id));
    PBX_CHECK(e2e_decision_refused(r.client, id));
    /* The broker still can (its unanswered scope may have timed out). */
    memset(&d, 0, sizeof(d));
    PBX_CHECK(e2e_decision_fds(r.p.broker, id, &d, NULL, &nfds) &&
              (d.outcome == PBX_IPC_OUTCOME_PENDING ||
               d.outcome == PBX_IPC_OUTCOME_DENIED));
    (void)close(other);
    (void)close(scope);
    e2e_run_stop(&r);
}

/* Sends BEGIN b on conn; returns the reply status, or -1 when no
 * decodable reply without descriptors came. */
static long e2e_begin_status(int conn, const pbx_ipc_begin *b)
{
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t in[128];
    pbx_ipc_frame f;
    size_t n = 0;
    if (pbx_ipc_begin_encode(b, out, sizeof(out), &n) != PBX_OK ||
        !e2e_call(conn, out, n, NULL, 0, in, sizeof(in), &f)) {
        return -1;
    }
    return (long)f.status;
}

PBX_TEST(e2e_begin_on_the_public_endpoint_is_refused_in_either_mode)
{
    e2e_run r;
    pbx_ipc_begin b;
    PBX_REQUIRE(e2e_run_start(&r));
    int other = e2e_connect(&r.p);
    PBX_REQUIRE(other >= 0 && e2e_ping(other, 5000));
    int baseline = e2e_fd_count(r.p.pid);
    /* Install mode sent straight to powerboxd: its job, session, realm
     * and entry would be the caller's own claim, so it is refused and
     * nothing is reserved (no placeholder descriptor appears). */
    e2e_begin_rec(&b, "docs/readme.txt");
    PBX_CHECK_EQ(e2e_begin_status(r.client, &b), (long)PBX_E_CORE_BROKER);
    PBX_CHECK_EQ(e2e_begin_status(other, &b), (long)PBX_E_CORE_BROKER);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    PBX_CHECK_EQ(e2e_begin_status(r.client, &b), (long)PBX_E_CORE_BROKER);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), baseline);
    /* The service keeps serving: both connections still get answers, and
     * the broker's own BEGIN is accepted (one reserved destination). */
    PBX_CHECK(e2e_ping(r.client, 5000));
    PBX_CHECK(e2e_ping(other, 5000));
    e2e_begin_rec(&b, "docs/readme.txt");
    PBX_CHECK_EQ(e2e_begin_status(r.p.broker, &b), 0L);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), baseline + 1);
    (void)close(other);
    e2e_run_stop(&r);
}

PBX_TEST(e2e_no_room_for_receipts_gets_an_error_reply_each_time)
{
    e2e_run r;
    int sv[2];
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    PBX_REQUIRE(e2e_run_start(&r));
    /* Two transient slots (64, 65) are all the descriptor limit leaves. */
    PBX_REQUIRE(e2e_limit_fds(&r.p, 66U));
    /* BEGINs take them until BEGIN answers BUSY: the range is full. */
    int begun = 0;
    for (int i = 0; i < 8; i++) {
        pbx_ipc_begin b;
        pbx_ipc_frame f;
        size_t n = 0;
        e2e_begin_rec(&b, "docs/x.txt");
        if (pbx_ipc_begin_encode(&b, buf, sizeof(buf), &n) != PBX_OK ||
            !e2e_call(r.p.broker, buf, n, NULL, 0, buf, sizeof(buf), &f) ||
            f.status != 0U) {
            break;
        }
        begun++;
    }
    PBX_CHECK(begun < 8);
    /* The reservations filling the range belong to requests begun and
     * never committed: they last E2E_DEADLINE_OPEN_MS, so the refusals
     * below are only meaningful within it (checked after them). */
    long t0 = e2e_now_ms();
    int full = e2e_fd_count(r.p.pid);
    PBX_REQUIRE(e2e_socketpair(SOCK_SEQPACKET, sv));
    unsigned ended = 0;
    for (unsigned i = 0; i < 40U; i++) {
        size_t n = 0;
        pbx_ipc_consume c = {{0, 1}};
        int conn = e2e_connect(&r.p);
        if (conn < 0) {
            continue;
        }
        /* Deterministically: an error reply (the receipt was deleted and
         * the frame refused as carrying one it may not), never silence. */
        pbx_ipc_frame g;
        long got = 0;
        ended +=
            pbx_ipc_consume_encode(&c, buf, sizeof(buf), &n) == PBX_OK &&
            e2e_send(conn, buf, n, &sv[1], 1) &&
            (got = e2e_recv(conn, buf, sizeof(buf), NULL, 0, NULL, 2000)) > 0 &&
            pbx_ipc_frame_decode(buf, (size_t)got, 0U, &g) == PBX_OK &&
            g.status != 0U;
        (void)close(conn);
    }
    PBX_CHECK_EQ(ended, 40U);
    PBX_CHECK(e2e_ping(r.client, 5000));
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), full);
    PBX_CHECK(e2e_now_ms() - t0 < (long)E2E_DEADLINE_OPEN_MS);
    (void)close(sv[1]);
    PBX_CHECK(e2e_peer_gone(sv[0], 5000));
    (void)close(sv[0]);
    /* Then the OPEN deadline returns every reservation: the count drops
     * by one per BEGIN (r.client, pinged just now, is not yet idle). */
    PBX_CHECK(
        e2e_fds_settle(r.p.pid, full - begun, E2E_DEADLINE_OPEN_MS + 1000));
    e2e_run_stop(&r);
}

/* DECISION for id on conn until it is no longer PENDING (at most ms);
 * stores the decision in *d and returns true, or false when none came. */
static bool e2e_final(int conn, pbx_ipc_id id, pbx_ipc_decision *d, int ms)
{
    for (int i = 0; i < ms / 50 + 1; i++) {
        int nfds = 0;
        if (!e2e_decision_fds(conn, id, d, NULL, &nfds)) {
            return false;
        }
        if (d->outcome != PBX_IPC_OUTCOME_PENDING) {
            return true;
        }
        struct timespec ts = {0, 50000000L};
        (void)nanosleep(&ts, NULL);
    }
    return false;
}

/* A person who takes longer than every other deadline to answer a prompt
 * still gets the grant: the calls that follow the answer (INSTALL, DETACH,
 * ACTIVE) are stamped with the time after the wait, not before it, so
 * none of them is born expired. */
PBX_TEST(e2e_slow_prompt_answer_does_not_expire_the_calls_after_it)
{
    e2e_run r;
    pbx_ipc_begin b;
    pbx_ipc_id id = {0, 0};
    int scope = -1;
    int obj = -1;
    int handle = -1;
    ino_t ino = 0;
    pbx_ipc_id grant = {0, 0};
    PBX_REQUIRE(e2e_run_start(&r));
    e2e_begin_rec(&b, "docs/readme.txt");
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    PBX_REQUIRE(e2e_open_as(r.p.broker, &b, "docs/readme.txt", &id, &scope));
    PBX_REQUIRE(e2e_vfsd_resolve(r.p.vfsd, scope, &obj, &ino));
    PBX_REQUIRE(e2e_ttyd_policy_prompt(r.p.ttyd));
    /* Longer than the procd deadline (and the scope's): only the prompt's
     * own deadline bounds this wait. It is longer than the IDLE time too:
     * r.client, silent since the start, is closed meanwhile (nothing here
     * uses it), while the broker, never idle-closed, carries on. */
    struct timespec ts = {e2e_slow(E2E_DEADLINE_PROCD_MS + 1000) / 1000, 0};
    _Static_assert(E2E_DEADLINE_PROCD_MS + 1000 > E2E_DEADLINE_IDLE_MS + 500,
                   "the wait outlasts the IDLE time with a margin");
    (void)nanosleep(&ts, NULL);
    PBX_CHECK(e2e_peer_gone(r.client, 1000));
    PBX_CHECK(e2e_ttyd_prompt(r.p.ttyd, true, 5000));
    PBX_CHECK(e2e_procd_install(r.p.procd, ino, &handle, &grant));
    PBX_CHECK(e2e_vfsd_detach(r.p.vfsd, ino));
    PBX_CHECK(e2e_ttyd_view(r.p.ttyd, PBX_IPC_VIEW_ACTIVE, grant));
    PBX_CHECK(e2e_launchd_wake(r.p.launchd, id));
    pbx_ipc_decision d;
    PBX_CHECK(e2e_final(r.p.broker, id, &d, 3000));
    PBX_CHECK_EQ(d.outcome, (uint8_t)PBX_IPC_OUTCOME_APPROVED);
    int fds[3] = {scope, obj, handle};
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}

PBX_TEST(e2e_dead_peer_never_stops_the_service)
{
    e2e_run r;
    int scope = -1;
    int obj = -1;
    long cpu = -1;
    PBX_REQUIRE(e2e_run_start(&r));
    pbx_ipc_id id = {0, 0};
    ino_t ino = 0;
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    PBX_CHECK(e2e_vfsd_resolve(r.p.vfsd, scope, &obj, &ino));
    PBX_CHECK(e2e_recv(r.p.ttyd, b, sizeof(b), NULL, 0, NULL, 5000) > 0);
    /* ttyd dies with the POLICY call outstanding. */
    (void)close(r.p.ttyd);
    r.p.ttyd = -1;
    long t0 = e2e_now_ms();
    /* Ended at once by the route's loss, not its deadline: the object
     * copy goes back to vfsd, then the decision carries no authority,
     * and the service goes on without spinning. */
    PBX_CHECK(e2e_vfsd_detach(r.p.vfsd, ino));
    pbx_ipc_decision d;
    PBX_CHECK(e2e_final(r.p.broker, id, &d, 3000));
    PBX_CHECK(e2e_now_ms() - t0 < (long)E2E_DEADLINE_MS);
    PBX_CHECK_EQ(d.outcome, (uint8_t)PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, (uint16_t)PBX_IPC_REASON_PEER_TIMEOUT);
    PBX_CHECK(e2e_ping(r.p.broker, 5000));
    PBX_CHECK_EQ(e2e_exit_cpu(&r.p, 1000, &cpu), -2);
    int fds[2] = {scope, obj};
    e2e_close_all(fds, 2);
    e2e_run_stop(&r);
}

PBX_TEST(e2e_silent_startup_peer_ends_only_its_own_request)
{
    e2e_run r;
    int scope = -1;
    int obj = -1;
    PBX_REQUIRE(e2e_run_start(&r));
    pbx_ipc_id id = {0, 0};
    ino_t ino = 0;
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    PBX_CHECK(e2e_vfsd_resolve(r.p.vfsd, scope, &obj, &ino));
    PBX_CHECK(e2e_ttyd_policy(r.p.ttyd));
    /* procd took INSTALL and never answers. The wait for its deadline
     * is about the IDLE time: r.client, silent since the start, may be
     * closed meanwhile; nothing here uses it (only the broker, never
     * idle-closed). */
    PBX_CHECK(e2e_recv(r.p.procd, b, sizeof(b), NULL, 0, NULL, 5000) > 0);
    long t0 = e2e_now_ms();
    /* Meanwhile the service answers at once. */
    PBX_CHECK(e2e_ping(r.p.broker, 1000));
    PBX_CHECK(e2e_now_ms() - t0 < 1000L);
    /* At the deadline the request ends without authority: the object
     * procd may hold is retired at vfsd before DENIED is published. */
    PBX_CHECK(e2e_vfsd_detach(r.p.vfsd, ino));
    PBX_CHECK(e2e_vfsd_retire(r.p.vfsd, e2e_scope_id(scope)));
    PBX_CHECK(e2e_now_ms() - t0 >= (long)E2E_DEADLINE_PROCD_MS - 100L);
    pbx_ipc_decision d;
    PBX_CHECK(e2e_final(r.p.broker, id, &d, 3000));
    PBX_CHECK_EQ(d.outcome, (uint8_t)PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK_EQ(d.reason, (uint16_t)PBX_IPC_REASON_PEER_TIMEOUT);
    long cpu = -1;
    PBX_CHECK_EQ(e2e_exit_cpu(&r.p, 500, &cpu), -2);
    int fds[2] = {scope, obj};
    e2e_close_all(fds, 2);
    e2e_run_stop(&r);
}

/* Reports whether nothing arrives on fd within ms (no call was made). */
static bool e2e_silent(int fd, int ms)
{
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    return e2e_recv(fd, b, sizeof(b), NULL, 0, NULL, ms) < 0;
}

/* vfsd naming the scope by another identity than the one powerboxd's
 * fstat of its copy gives (here the inode of the end vfsd kept, the
 * classic mix-up) is refused as the core refuses a mismatched identity:
 * DENIED, the object receipt and the scope deleted, no POLICY, INSTALL
 * or VIEW, the wake sent; then the true identity resolves and approves. */
PBX_TEST(e2e_resolve_naming_another_scope_identity_is_denied)
{
    e2e_run r;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_id grant = {0, 0};
    int scope = -1;
    int obj = -1;
    int handle = -1;
    ino_t ino = 0;
    struct stat kept;
    PBX_REQUIRE(e2e_run_start(&r));
    PBX_REQUIRE(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    PBX_REQUIRE(fstat(scope, &kept) == 0);
    PBX_REQUIRE((uint64_t)kept.st_ino != e2e_scope_id(scope));
    PBX_CHECK(e2e_vfsd_resolve_as(r.p.vfsd, scope, (uint64_t)kept.st_ino, &obj,
                                  &ino));
    /* powerboxd held the only other copy of the object: deleting it
     * leaves vfsd's provider end hung up. */
    PBX_CHECK(e2e_peer_gone(obj, 5000));
    PBX_CHECK(e2e_peer_gone(scope, 5000));
    PBX_CHECK(e2e_launchd_wake(r.p.launchd, id));
    PBX_CHECK_EQ(e2e_outcome(r.p.broker, id), (unsigned)PBX_IPC_OUTCOME_DENIED);
    PBX_CHECK(e2e_silent(r.p.ttyd, 200));
    PBX_CHECK(e2e_silent(r.p.procd, 10));
    PBX_CHECK(e2e_silent(r.p.vfsd, 10));
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline);
    (void)close(obj);
    (void)close(scope);
    /* The same service, the true identity: approved, and RETIRE names the
     * scope by the identity that was bound. */
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    e2e_grant_to_retire(&r, id, scope, &obj, &handle, &grant);
    int fds[3] = {scope, obj, handle};
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}

/* Reports whether fd reaches end of file within ms, reading past at most
 * 8 messages still queued on it (a call powerboxd made before it ended). */
static bool e2e_drained_gone(int fd, int ms)
{
    uint8_t b[PBX_IPC_FRAME_BYTES_MAX];
    for (int i = 0; i < 8; i++) {
        long n = e2e_recv(fd, b, sizeof(b), NULL, 0, NULL, ms);
        if (n <= 0) {
            return n == 0;
        }
    }
    return false;
}

PBX_TEST(e2e_public_endpoint_shut_down_fail_stops_with_status_64)
{
    e2e_run r;
    pbx_ipc_id id = {0, 0};
    int scope = -1;
    long cpu = -1;
    PBX_REQUIRE(e2e_run_start(&r));
    /* powerboxd holds a committed scope: a capability that must not
     * outlive it. */
    PBX_REQUIRE(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    /* The harness takes a copy of powerboxd's own public endpoint and
     * shuts its receive side: from then on the kernel refuses every new
     * caller, and no accept will ever succeed. That is a failure of the
     * public endpoint itself, never of a caller. */
    int copy = e2e_take_fd(&r.p, 9);
    PBX_REQUIRE(copy >= 0);
    PBX_CHECK_EQ(shutdown(copy, SHUT_RD), 0);
    PBX_CHECK_EQ(e2e_connect(&r.p), -1);
    /* It fail-stops at once with the public status, without spinning. */
    PBX_CHECK_EQ(e2e_exit_cpu(&r.p, 3000, &cpu), (int)PBX_CORE_EXIT_PUBLIC);
    PBX_CHECK(cpu >= 0 && cpu < 500);
    /* Every peer and caller sees its connection end, and the scope
     * powerboxd held is gone with it: nothing is left behind. */
    int ends[6] = {r.client, r.p.vfsd, r.p.ttyd, r.p.procd, r.p.broker, scope};
    unsigned gone = 0;
    for (int i = 0; i < 6; i++) {
        gone += e2e_drained_gone(ends[i], 2000) ? 1U : 0U;
    }
    PBX_CHECK_EQ(gone, 6U);
    /* launchd's wake route is a datagram pair, which carries no end of
     * file: its far end being gone shows as a refused send. */
    PBX_CHECK(send(r.p.launchd, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0);
    (void)close(copy);
    (void)close(scope);
    e2e_run_stop(&r);
}

PBX_TEST(e2e_public_endpoint_write_shutdown_changes_nothing)
{
    e2e_run r;
    PBX_REQUIRE(e2e_run_start(&r));
    /* Shutting the listener's send side refuses no caller: powerboxd has
     * no reason to stop, and it goes on accepting. */
    int copy = e2e_take_fd(&r.p, 9);
    PBX_REQUIRE(copy >= 0);
    PBX_CHECK_EQ(shutdown(copy, SHUT_WR), 0);
    int conn = e2e_connect(&r.p);
    PBX_CHECK(conn >= 0 && e2e_ping(conn, 5000));
    PBX_CHECK(e2e_ping(r.client, 5000));
    long cpu = -1;
    PBX_CHECK_EQ(e2e_exit_cpu(&r.p, 0, &cpu), -2);
    if (conn >= 0) {
        (void)close(conn);
    }
    (void)close(copy);
    e2e_run_stop(&r);
}

/* One caller of kind k (0..3) that stops listening early: 0 sends a
 * request and hangs up before the reply, 1 sends one with a descriptor
 * attached and hangs up, 2 sends one and half-closes (it still reads the
 * reply, then the end of the connection), 3 shuts its receive side and
 * then sends, so the reply cannot be delivered. Returns whether the
 * caller saw what it should. */
static bool e2e_early_caller(const e2e_proc *p, unsigned k, int fd)
{
    uint8_t b[64];
    size_t n = 0;
    pbx_ipc_consume c = {{0, 1}};
    int conn = e2e_connect(p);
    bool ok = conn >= 0 &&
              pbx_ipc_consume_encode(&c, b, sizeof(b), &n) == PBX_OK &&
              (k != 3U || shutdown(conn, SHUT_RD) == 0) &&
              e2e_send(conn, b, n, &fd, k == 1U ? 1 : 0);
    if (ok && k == 2U) {
        ok = shutdown(conn, SHUT_WR) == 0 &&
             e2e_recv(conn, b, sizeof(b), NULL, 0, NULL, 5000) > 0 &&
             e2e_recv(conn, b, sizeof(b), NULL, 0, NULL, 5000) == 0;
    }
    if (conn >= 0) {
        (void)close(conn);
    }
    return ok;
}

PBX_TEST(e2e_callers_hanging_up_early_never_stop_the_service)
{
    e2e_run r;
    pbx_ipc_begin b;
    int sv[2];
    PBX_REQUIRE(e2e_run_start(&r));
    PBX_REQUIRE(e2e_socketpair(SOCK_SEQPACKET, sv));
    unsigned fine = 0;
    for (unsigned i = 0; i < 120U; i++) {
        fine += e2e_early_caller(&r.p, i % 4U, sv[1]) ? 1U : 0U;
    }
    PBX_CHECK_EQ(fine, 120U);
    /* A caller's own hang-up is never a public failure: powerboxd still
     * runs, serves the first connection and a new one, holds exactly its
     * baseline again, and deleted every descriptor it was sent. */
    long cpu = -1;
    PBX_CHECK_EQ(e2e_exit_cpu(&r.p, 0, &cpu), -2);
    PBX_CHECK(e2e_ping(r.client, 5000));
    int other = e2e_connect(&r.p);
    PBX_CHECK(other >= 0 && e2e_ping(other, 5000));
    if (other >= 0) {
        (void)close(other);
    }
    PBX_CHECK(e2e_fds_settle(r.p.pid, r.baseline, 5000));
    (void)close(sv[1]);
    PBX_CHECK(e2e_peer_gone(sv[0], 5000));
    (void)close(sv[0]);
    /* A later BEGIN through the broker is served: one reservation. */
    e2e_begin_rec(&b, "docs/readme.txt");
    PBX_CHECK_EQ(e2e_begin_status(r.p.broker, &b), 0L);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), r.baseline + 1);
    e2e_run_stop(&r);
}

/* A broker frame carrying more capabilities than powerboxd can place
 * (more than a frame may bring) gets an error reply on the broker, with
 * every capability deleted: never silence (before, the broker, which is
 * never closed, got no answer at all). */
PBX_TEST(e2e_broker_frame_with_unplaceable_receipts_gets_an_error_reply)
{
    e2e_run r;
    PBX_REQUIRE(e2e_run_start(&r));
    int base = e2e_fd_count(r.p.pid);
    uint8_t f[64];
    size_t n = 0;
    pbx_ipc_id id = {0, 1};
    PBX_REQUIRE(pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, f, sizeof(f),
                                     &n) == PBX_OK);
    int sv[2];
    PBX_REQUIRE(e2e_socketpair(SOCK_SEQPACKET, sv));
    int fds[6] = {sv[0], sv[0], sv[0], sv[0], sv[0], sv[0]};
    PBX_CHECK(e2e_send(r.p.broker, f, n, fds, 6));
    uint8_t in[128];
    pbx_ipc_frame g;
    long got = e2e_recv(r.p.broker, in, sizeof(in), NULL, 0, NULL, 3000);
    PBX_CHECK(got > 0);
    PBX_CHECK(got > 0 &&
              pbx_ipc_frame_decode(in, (size_t)got, 0U, &g) == PBX_OK &&
              g.op == (uint16_t)(PBX_IPC_OP_DECISION | PBX_IPC_REPLY_BIT) &&
              g.status != 0U);
    PBX_CHECK(e2e_fds_settle(r.p.pid, base, 3000));
    PBX_CHECK(e2e_ping(r.p.broker, 3000));
    e2e_close_all(sv, 2);
    e2e_run_stop(&r);
}

/* Closes r's own public connection, which a test outlasting the IDLE
 * time would otherwise see closed under it at some turn, and returns
 * powerboxd's descriptor count once powerboxd has let go of it (-1 when
 * it does not within 5 s). */
static int e2e_run_drop_client(e2e_run *r)
{
    (void)close(r->client);
    r->client = -1;
    return e2e_fds_settle(r->p.pid, r->baseline - 1, 5000) ? r->baseline - 1
                                                           : -1;
}

/* BEGIN b on conn, nothing more: stores the request id and the
 * destination slot reserved for its scope. */
static bool e2e_begin_only(int conn, const pbx_ipc_begin *b, pbx_ipc_id *id,
                           uint32_t *dest)
{
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_begin_reply br;
    pbx_ipc_frame f;
    size_t n = 0;
    if (pbx_ipc_begin_encode(b, out, sizeof(out), &n) != PBX_OK ||
        !e2e_call(conn, out, n, NULL, 0, in, sizeof(in), &f) ||
        f.status != 0U || pbx_ipc_begin_reply_decode(&f, &br) != PBX_OK) {
        return false;
    }
    *id = f.request;
    *dest = br.dest_slot;
    return true;
}

/* The first half of the selector sel of request id (begun as b): true
 * when powerboxd accepts the chunk. */
static bool e2e_selector_half(int conn, pbx_ipc_id id, const pbx_ipc_begin *b,
                              const char *sel)
{
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    uint8_t in[PBX_IPC_FRAME_BYTES_MAX];
    pbx_ipc_frame f;
    size_t n = 0;
    pbx_ipc_selector s = {0, b->selector_len / 2U, (const uint8_t *)sel};
    return pbx_ipc_selector_encode(id, &s, out, sizeof(out), &n) == PBX_OK &&
           e2e_call(conn, out, n, NULL, 0, in, sizeof(in), &f) &&
           f.status == 0U;
}

/* COMMIT of request id naming dest, carrying the far end of a fresh
 * pair as its scope (closed here once sent); stores the reply's status
 * and keeps our end in *kept, whose end of file shows powerboxd deleted
 * its copy. */
static bool e2e_commit_scope(int conn, pbx_ipc_id id, uint32_t dest,
                             uint32_t *status, int *kept)
{
    uint8_t out[64];
    uint8_t in[128];
    pbx_ipc_frame f;
    pbx_ipc_commit c = {dest};
    size_t n = 0;
    int sv[2];
    *kept = -1;
    memset(&f, 0, sizeof(f));
    if (pbx_ipc_commit_encode(id, &c, out, sizeof(out), &n) != PBX_OK ||
        !e2e_socketpair(SOCK_SEQPACKET, sv)) {
        return false;
    }
    bool ok = e2e_call(conn, out, n, &sv[1], 1, in, sizeof(in), &f);
    (void)close(sv[1]);
    *kept = sv[0];
    *status = f.status;
    return ok;
}

/* A late COMMIT of request id (its OPEN deadline passed) is refused, and
 * the scope it carried is deleted: nothing of it stays in powerboxd. */
static void e2e_late_commit_refused(e2e_run *r, pbx_ipc_id id, uint32_t dest,
                                    int base)
{
    uint32_t status = 0;
    int kept = -1;
    PBX_CHECK(e2e_commit_scope(r->p.broker, id, dest, &status, &kept));
    PBX_CHECK(status != 0U);
    PBX_CHECK(kept >= 0 && e2e_peer_gone(kept, 5000));
    PBX_CHECK(e2e_fds_settle(r->p.pid, base, 2000));
    if (kept >= 0) {
        (void)close(kept);
    }
}

PBX_TEST(e2e_open_deadline_cancels_a_request_never_committed)
{
    e2e_run r;
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    int got[4];
    int nfds = 0;
    const char *sel = "docs/readme.txt";
    PBX_REQUIRE(e2e_run_start(&r));
    int base = e2e_run_drop_client(&r);
    PBX_REQUIRE(base > 0);
    e2e_begin_rec(&b, sel);
    long t0 = e2e_now_ms();
    PBX_REQUIRE(e2e_begin_only(r.p.broker, &b, &id, &dest));
    /* BEGIN reserved the scope's destination: one more descriptor, at
     * the very slot the reply named. */
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), base + 1);
    int held = e2e_take_fd(&r.p, (int)dest);
    PBX_CHECK(held >= 0);
    if (held >= 0) {
        (void)close(held);
    }
    /* Two thirds of the deadline pass with no wake; then half the
     * selector is accepted and the request is still pending. */
    PBX_CHECK(e2e_silent(r.p.launchd, E2E_DEADLINE_OPEN_MS * 2 / 3));
    PBX_CHECK(e2e_selector_half(r.p.broker, id, &b, sel));
    PBX_CHECK(e2e_decision_fds(r.p.broker, id, &d, got, &nfds));
    PBX_CHECK_EQ(d.outcome, (uint8_t)PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK(e2e_now_ms() - t0 < (long)E2E_DEADLINE_OPEN_MS);
    /* launchd is woken for exactly this request, at the deadline counted
     * from BEGIN: counted from the selector chunk, sent at two thirds of
     * it, the wake could come no sooner than E2E_DEADLINE_OPEN_MS * 5 / 3
     * after t0, past the bound checked here. */
    PBX_CHECK(e2e_launchd_wake(r.p.launchd, id));
    long waited = e2e_now_ms() - t0;
    PBX_CHECK(waited >= (long)E2E_DEADLINE_OPEN_MS - 100L);
    PBX_CHECK(waited < (long)E2E_DEADLINE_OPEN_MS + 900L);
    PBX_CHECK(e2e_silent(r.p.launchd, 200));
    /* The reservation returned: the slot is empty, the count is back. */
    PBX_CHECK_EQ(e2e_take_fd(&r.p, (int)dest), -1);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), base);
    /* No peer was ever asked anything for it. */
    PBX_CHECK(e2e_silent(r.p.vfsd, 10));
    PBX_CHECK(e2e_silent(r.p.ttyd, 10));
    PBX_CHECK(e2e_silent(r.p.procd, 10));
    /* Too late: COMMIT is refused and its scope deleted, before and
     * after the CANCELLED decision (no authority) is collected. */
    e2e_late_commit_refused(&r, id, dest, base);
    PBX_CHECK(e2e_decision_fds(r.p.broker, id, &d, got, &nfds));
    PBX_CHECK_EQ(d.outcome, (uint8_t)PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK_EQ(nfds, 0);
    e2e_late_commit_refused(&r, id, dest, base);
    /* The service goes on: a new request is begun and reserved again. */
    PBX_CHECK_EQ(e2e_begin_status(r.p.broker, &b), 0L);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), base + 1);
    e2e_run_stop(&r);
}

/* Waits up to ms for quiet to be closed by powerboxd, pinging busy every
 * 250 ms meanwhile; returns the ms from t0 when quiet saw end of file
 * (-1: never, or a message came instead) and counts the pings sent and
 * answered. */
static long e2e_idle_watch(int quiet, int busy, long t0, int ms,
                           unsigned *pings, unsigned *answered)
{
    uint8_t b[64];
    for (int i = 0; i < ms / 250 + 1; i++) {
        long n = e2e_recv(quiet, b, sizeof(b), NULL, 0, NULL, 250);
        if (n >= 0) {
            return n == 0 ? e2e_now_ms() - t0 : -1L;
        }
        (*pings)++;
        *answered += e2e_ping(busy, 5000) ? 1U : 0U;
    }
    return -1L;
}

PBX_TEST(e2e_idle_public_connection_closed_busy_one_and_broker_kept)
{
    e2e_run r;
    unsigned pings = 0;
    unsigned answered = 0;
    static const char line[] =
        "powerboxd: closed 1 idle public connection(s)\n";
    PBX_REQUIRE(e2e_run_start(&r));
    int base = e2e_run_drop_client(&r);
    PBX_REQUIRE(base > 0);
    long t0 = e2e_now_ms();
    int quiet = e2e_connect(&r.p);
    int busy = e2e_connect(&r.p);
    PBX_REQUIRE(quiet >= 0 && busy >= 0 && e2e_ping(busy, 5000));
    PBX_CHECK(e2e_fds_settle(r.p.pid, base + 2, 2000));
    /* quiet sends nothing: it is closed once the IDLE time has passed,
     * not before, while busy, which keeps sending, is answered. */
    long closed = e2e_idle_watch(quiet, busy, t0, 4 * E2E_DEADLINE_IDLE_MS,
                                 &pings, &answered);
    PBX_CHECK(closed >= (long)E2E_DEADLINE_IDLE_MS - 100L);
    PBX_CHECK(closed < (long)E2E_DEADLINE_IDLE_MS + 1000L);
    PBX_CHECK(e2e_log_wait(&r.p, line, 1, 2000));
    PBX_CHECK(e2e_fds_settle(r.p.pid, base + 1, 2000));
    /* busy stays open well past the IDLE time as long as it sends. */
    for (int i = 0; i < 40; i++) {
        if (e2e_now_ms() - t0 >= (long)E2E_DEADLINE_IDLE_MS + 1500L) {
            break;
        }
        struct timespec ts = {0, 250000000L};
        (void)nanosleep(&ts, NULL);
        pings++;
        answered += e2e_ping(busy, 5000) ? 1U : 0U;
    }
    PBX_CHECK(pings >= (unsigned)(E2E_DEADLINE_IDLE_MS / 250));
    PBX_CHECK_EQ(answered, pings);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), base + 1);
    PBX_CHECK_EQ(e2e_log_count(&r.p, "idle public connection"), 1);
    /* The broker, silent since the start (longer than the IDLE time), is
     * never closed: it still answers. */
    PBX_CHECK(e2e_now_ms() - t0 > (long)E2E_DEADLINE_IDLE_MS + 1000L);
    PBX_CHECK(e2e_ping(r.p.broker, 5000));
    /* Once busy falls silent it is closed in turn, with its own line. */
    PBX_CHECK(e2e_peer_gone(busy, E2E_DEADLINE_IDLE_MS + 1000));
    PBX_CHECK(e2e_log_wait(&r.p, line, 2, 2000));
    PBX_CHECK(e2e_fds_settle(r.p.pid, base, 2000));
    PBX_CHECK(e2e_ping(r.p.broker, 5000));
    (void)close(quiet);
    (void)close(busy);
    e2e_run_stop(&r);
}

/* E2E_CLIENTS is the number of public connections powerboxd holds at
 * once (PBX_PORT_CLIENTS_MAX). */
#define E2E_CLIENTS ((int)PBX_PORT_CLIENTS_MAX)

/* The refusal line powerboxd logs for a connection beyond the limit. */
static const char e2e_refused_line[] =
    "powerboxd: public connection refused: 32 already open\n";
_Static_assert(PBX_PORT_CLIENTS_MAX == 32U, "the line names the limit");

/* Opens public connections into conns[from..E2E_CLIENTS), at most four
 * from each fresh child process (so no process reaches
 * PBX_PORT_CLIENTS_PER_PID), and pings each (so powerboxd has accepted
 * it); returns how many answered. */
static int e2e_fill(const e2e_proc *p, int *conns, int from)
{
    int served = 0;
    for (int i = from; i < E2E_CLIENTS; i += 4) {
        int k = E2E_CLIENTS - i < 4 ? E2E_CLIENTS - i : 4;
        if (pbx_test_sock_connect_child(p->name, conns + i, k) != k) {
            continue; /* conns[i..i+k) hold -1: none of them is served. */
        }
        for (int j = i; j < i + k; j++) {
            served += e2e_ping(conns[j], 5000) ? 1 : 0;
        }
    }
    return served;
}

/* One connection beyond the limit: connecting succeeds (the kernel's
 * backlog), then powerboxd accepts and closes it at once, so its first
 * read is end of file within a second. */
static bool e2e_one_more_refused(const e2e_proc *p)
{
    long t0 = e2e_now_ms();
    int extra = e2e_connect(p);
    bool ok =
        extra >= 0 && e2e_peer_gone(extra, 1000) && e2e_now_ms() - t0 < 1000L;
    if (extra >= 0) {
        (void)close(extra);
    }
    return ok;
}

/* Pings every connection in conns; returns how many answered. */
static int e2e_ping_all(const int *conns, int n)
{
    int served = 0;
    for (int i = 0; i < n; i++) {
        served += conns[i] >= 0 && e2e_ping(conns[i], 5000) ? 1 : 0;
    }
    return served;
}

PBX_TEST(e2e_connection_limit_refuses_one_more_then_serves_again)
{
    e2e_run r;
    int conns[E2E_CLIENTS];
    PBX_REQUIRE(e2e_run_start(&r));
    int base = e2e_run_drop_client(&r);
    PBX_REQUIRE(base > 0);
    PBX_CHECK_EQ(e2e_fill(&r.p, conns, 0), E2E_CLIENTS);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), base + E2E_CLIENTS);
    /* The 33rd is refused, logged, and nothing of it stays; the 32 are
     * still served. */
    PBX_CHECK(e2e_one_more_refused(&r.p));
    PBX_CHECK(e2e_log_wait(&r.p, e2e_refused_line, 1, 2000));
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), base + E2E_CLIENTS);
    PBX_CHECK_EQ(e2e_ping_all(conns, E2E_CLIENTS), E2E_CLIENTS);
    /* Four callers hang up: four new connections are served (every frame
     * answered: EXPIRE on one gets its PARTITION error reply), and with
     * the table full again one more is refused again. */
    e2e_close_all(conns, 4);
    PBX_CHECK(e2e_fds_settle(r.p.pid, base + E2E_CLIENTS - 4, 2000));
    PBX_CHECK_EQ(e2e_fill(&r.p, conns, E2E_CLIENTS - 4), 4);
    PBX_CHECK_EQ(e2e_expire_job(conns[E2E_CLIENTS - 1]),
                 (long)PBX_E_CORE_PARTITION);
    PBX_CHECK(e2e_one_more_refused(&r.p));
    PBX_CHECK(e2e_log_wait(&r.p, e2e_refused_line, 2, 2000));
    /* Nobody sends any more: after the IDLE time every one of the 32 is
     * closed (the log's counts add up to 32) and a new caller is served
     * without any caller hanging up. */
    int gone = 0;
    for (int i = 0; i < E2E_CLIENTS; i++) {
        gone += e2e_peer_gone(conns[i], E2E_DEADLINE_IDLE_MS + 1500) ? 1 : 0;
    }
    PBX_CHECK_EQ(gone, E2E_CLIENTS);
    PBX_CHECK(e2e_fds_settle(r.p.pid, base, 2000));
    /* powerboxd logs a round's closes after closing them: the last line
     * may follow the descriptors by a moment, so wait for it (bounded). */
    long closed = 0;
    for (int i = 0; i < 200 && closed != (long)E2E_CLIENTS; i++) {
        closed = e2e_log_sum(&r.p, "powerboxd: closed ");
        if (closed != (long)E2E_CLIENTS) {
            (void)usleep(10000);
        }
    }
    PBX_CHECK_EQ(closed, (long)E2E_CLIENTS);
    int late = e2e_connect(&r.p);
    PBX_CHECK(late >= 0);
    PBX_CHECK_EQ(e2e_expire_job(late), (long)PBX_E_CORE_PARTITION);
    PBX_CHECK_EQ(e2e_log_count(&r.p, e2e_refused_line), 2);
    if (late >= 0) {
        (void)close(late);
    }
    e2e_close_all(conns, E2E_CLIENTS);
    e2e_run_stop(&r);
}

PBX_TEST(e2e_one_process_ninth_connection_refused_and_logged)
{
    e2e_run r;
    int mine[PBX_PORT_CLIENTS_PER_PID];
    int other = -1;
    char line[96];
    PBX_REQUIRE(e2e_run_start(&r));
    int base = e2e_run_drop_client(&r);
    PBX_REQUIRE(base > 0);
    (void)snprintf(line, sizeof(line),
                   "powerboxd: public connection refused: pid %ld holds %u\n",
                   (long)getpid(), PBX_PORT_CLIENTS_PER_PID);
    int served = 0;
    for (uint32_t i = 0; i < PBX_PORT_CLIENTS_PER_PID; i++) {
        mine[i] = e2e_connect(&r.p);
        served += mine[i] >= 0 && e2e_ping(mine[i], 5000) ? 1 : 0;
    }
    PBX_CHECK_EQ(served, (int)PBX_PORT_CLIENTS_PER_PID);
    /* This process's ninth is refused (far below the 32 in total), logged
     * with its pid, and nothing of it stays in powerboxd. */
    PBX_CHECK(e2e_one_more_refused(&r.p));
    PBX_CHECK(e2e_log_wait(&r.p, line, 1, 2000));
    PBX_CHECK_EQ(e2e_log_count(&r.p, e2e_refused_line), 0);
    PBX_CHECK_EQ(e2e_fd_count(r.p.pid), base + (int)PBX_PORT_CLIENTS_PER_PID);
    /* Another process still connects and is served, and so are the eight. */
    PBX_CHECK_EQ(pbx_test_sock_connect_child(r.p.name, &other, 1), 1);
    PBX_CHECK(other >= 0 && e2e_ping(other, 5000));
    PBX_CHECK_EQ(e2e_ping_all(mine, (int)PBX_PORT_CLIENTS_PER_PID),
                 (int)PBX_PORT_CLIENTS_PER_PID);
    /* Once one of its eight hangs up, this process connects again. */
    e2e_close_all(mine, 1);
    PBX_CHECK(
        e2e_fds_settle(r.p.pid, base + (int)PBX_PORT_CLIENTS_PER_PID, 2000));
    mine[0] = e2e_connect(&r.p);
    PBX_CHECK(mine[0] >= 0 && e2e_ping(mine[0], 5000));
    PBX_CHECK_EQ(e2e_log_count(&r.p, line), 1);
    if (other >= 0) {
        (void)close(other);
    }
    e2e_close_all(mine, (int)PBX_PORT_CLIENTS_PER_PID);
    e2e_run_stop(&r);
}

/* Sends on the supervisor connection a ROUTE_ATTACH for route and pid
 * (its bytes then changed by spoil, which may be NULL) with nfds
 * descriptors; len bytes of the frame go out (16 unless testing length). */
static bool e2e_attach_send(const e2e_proc *p, uint32_t route, uint32_t pid,
                            size_t len, const int *fds, int nfds,
                            void (*spoil)(uint8_t *))
{
    uint8_t buf[PBX_CAPABI_ATTACH_BYTES + 8U];
    memset(buf, 0, sizeof(buf));
    pbx_le_put32(buf, PBX_CAPABI_ATTACH_MAGIC);
    pbx_le_put16(buf + 4, (uint16_t)PBX_CAPABI_ATTACH_VERSION);
    pbx_le_put16(buf + 6, (uint16_t)route);
    pbx_le_put32(buf + 8, pid);
    if (spoil != NULL) {
        spoil(buf);
    }
    return len <= sizeof(buf) && e2e_send(p->supervisor, buf, len, fds, nfds);
}

/* Waits for the answer to an attach on the supervisor connection and
 * returns its status, or UINT32_MAX when none (or no valid one) came. */
static uint32_t e2e_attach_status(const e2e_proc *p, uint32_t route,
                                  uint32_t pid)
{
    uint8_t buf[64];
    pbx_capabi_answer a;
    long n = e2e_recv(p->supervisor, buf, sizeof(buf), NULL, 0, NULL, 5000);
    if (n <= 0 || pbx_capabi_answer_decode(buf, (size_t)n, &a) != PBX_OK ||
        a.route != route || a.peer_pid != pid) {
        return UINT32_MAX;
    }
    return a.status;
}

/* A fresh pair of type whose far end is attached as route for pid with
 * the status expected; returns our end (or -1), the far end closed. */
static int e2e_attach_pair(const e2e_proc *p, int type, uint32_t route,
                           uint32_t pid, uint32_t want)
{
    int sv[2];
    if (!e2e_socketpair(type, sv)) {
        return -1;
    }
    bool sent = e2e_attach_send(p, route, pid, PBX_CAPABI_ATTACH_BYTES, &sv[1],
                                1, NULL);
    (void)close(sv[1]);
    if (!sent || e2e_attach_status(p, route, pid) != want) {
        (void)close(sv[0]);
        return -1;
    }
    return sv[0];
}

PBX_TEST(e2e_route_attach_brings_a_dead_ttyd_and_broker_back)
{
    e2e_run r;
    pbx_ipc_id id = {0, 0};
    pbx_ipc_id grant = {0, 0};
    int scope = -1;
    int obj = -1;
    int handle = -1;
    char line[160];
    uint32_t me = (uint32_t)getpid();
    PBX_REQUIRE(e2e_run_start(&r));
    (void)close(r.client);
    r.client = -1;
    r.baseline--;
    /* ttyd dies: its route hangs up and powerboxd goes on without it. */
    (void)close(r.p.ttyd);
    r.p.ttyd = -1;
    PBX_CHECK(e2e_log_wait(&r.p, "peer route slot 6 hung up", 1, 5000));
    r.p.ttyd = e2e_attach_pair(&r.p, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me,
                               PBX_OK);
    PBX_REQUIRE(r.p.ttyd >= 0);
    (void)snprintf(line, sizeof(line),
                   "event=route-attach route=ttyd pid=%u outcome=accepted\n",
                   me);
    PBX_CHECK(e2e_log_wait(&r.p, line, 1, 5000));
    /* launchd dies too: a fresh broker endpoint comes back the same way. */
    (void)close(r.p.broker);
    r.p.broker = -1;
    PBX_CHECK(e2e_log_wait(&r.p, "broker endpoint hung up", 1, 5000));
    r.p.broker = e2e_attach_pair(&r.p, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_BROKER,
                                 me, PBX_OK);
    PBX_REQUIRE(r.p.broker >= 0);
    /* A whole grant lifecycle then runs on the new routes. */
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    e2e_grant_to_retire(&r, id, scope, &obj, &handle, &grant);
    /* Replaced, not added: powerboxd holds its baseline. */
    PBX_CHECK(e2e_fds_settle(r.p.pid, r.baseline, 5000));
    int fds[3] = {scope, obj, handle};
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}

/* Spoilers of an attach frame's bytes. */
static void e2e_spoil_magic(uint8_t *b)
{
    b[0] ^= 0x20U;
}
static void e2e_spoil_reserved(uint8_t *b)
{
    b[15] = 1U;
}

/* Reports whether the far end of datagram pair end fd is closed within
 * ms: a datagram has no end of stream, so a send must be refused. */
static bool e2e_dgram_peer_gone(int fd, int ms)
{
    long t0 = e2e_now_ms();
    for (int round = 0; round < 1000 && e2e_now_ms() - t0 < ms; round++) {
        if (send(fd, "x", 1U, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 &&
            errno == ECONNREFUSED) {
            return true;
        }
        (void)usleep(5000);
    }
    return false;
}

/* Sends one refused attach and checks its answer, that the descriptors it
 * carried are gone from powerboxd (their far ends see the hang-up) and
 * that powerboxd holds its baseline. */
static void e2e_attach_refused(e2e_run *r, int type, uint32_t route,
                               uint32_t pid, size_t len, int nfds,
                               void (*spoil)(uint8_t *), uint32_t want)
{
    int ours[3] = {-1, -1, -1};
    int theirs[3] = {-1, -1, -1};
    for (int i = 0; i < nfds && i < 3; i++) {
        int sv[2] = {-1, -1};
        PBX_CHECK(type < 0 ? (sv[1] = e2e_listener()) >= 0
                           : e2e_socketpair(type, sv));
        ours[i] = sv[0];
        theirs[i] = sv[1];
    }
    PBX_CHECK(e2e_attach_send(&r->p, route, pid, len, theirs, nfds, spoil));
    e2e_close_all(theirs, 3);
    /* The answer echoes what could be read: nothing of a frame too long
     * (the port refused it whole), the route and pid of a short one only
     * as far as their bytes came. */
    bool whole = len <= PBX_CAPABI_ATTACH_BYTES + 1U;
    PBX_CHECK_EQ(e2e_attach_status(&r->p, whole && len >= 8U ? route : 0U,
                                   whole && len >= 12U ? pid : 0U),
                 want);
    for (int i = 0; i < nfds && i < 3; i++) {
        if (ours[i] >= 0) {
            PBX_CHECK(type == SOCK_DGRAM ? e2e_dgram_peer_gone(ours[i], 5000)
                                         : e2e_peer_gone(ours[i], 5000));
        }
    }
    e2e_close_all(ours, 3);
    PBX_CHECK(e2e_fds_settle(r->p.pid, r->baseline, 5000));
}

PBX_TEST(e2e_route_attach_refusals_close_every_descriptor)
{
    e2e_run r;
    uint32_t me = (uint32_t)getpid();
    PBX_REQUIRE(e2e_run_start(&r));
    /* The baseline without the client connection, which the IDLE time
     * would close while the refusals run. */
    (void)close(r.client);
    r.client = -1;
    r.baseline--;
    PBX_REQUIRE(e2e_fds_settle(r.p.pid, r.baseline, 5000));
    /* A datagram socket for ttyd, a sequenced one for the wake route. */
    e2e_attach_refused(&r, SOCK_DGRAM, PBX_CAPABI_ROUTE_TTYD, me, 16U, 1, NULL,
                       PBX_E_CAPABI_KIND);
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_WAKE, me, 16U, 1,
                       NULL, PBX_E_CAPABI_KIND);
    /* A listener receives: the route would lack SEND. */
    e2e_attach_refused(&r, -1, PBX_CAPABI_ROUTE_VFSD, me, 16U, 1, NULL,
                       PBX_E_CAPABI_RIGHTS_MISSING);
    /* The wrong process at the far end. */
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_PROCD, me + 1U, 16U,
                       1, NULL, PBX_E_CAPABI_PEER_PID);
    /* No descriptor, two, three. */
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me, 16U, 0,
                       NULL, PBX_E_CAPABI_ATTACH_COUNT);
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me, 16U, 2,
                       NULL, PBX_E_CAPABI_ATTACH_COUNT);
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me, 16U, 3,
                       NULL, PBX_E_CAPABI_ATTACH_COUNT);
    /* Malformed frames: unknown route, bad magic, reserved bits, short,
     * long. */
    e2e_attach_refused(&r, SOCK_SEQPACKET, 9U, me, 16U, 1, NULL,
                       PBX_E_CAPABI_ATTACH_ROUTE);
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me, 16U, 1,
                       e2e_spoil_reserved, PBX_E_CAPABI_ATTACH_RESERVED);
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me, 16U, 1,
                       e2e_spoil_magic, PBX_E_CAPABI_ATTACH_MAGIC);
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me, 15U, 1,
                       NULL, PBX_E_CAPABI_ATTACH_LENGTH);
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me, 17U, 1,
                       NULL, PBX_E_CAPABI_ATTACH_LENGTH);
    e2e_attach_refused(&r, SOCK_SEQPACKET, PBX_CAPABI_ROUTE_TTYD, me, 24U, 1,
                       NULL, PBX_E_CAPABI_ATTACH_LENGTH);
    PBX_CHECK_EQ(e2e_log_count(&r.p, "event=route-attach"), 13);
    PBX_CHECK_EQ(e2e_log_count(&r.p, "outcome=refused"), 13);
    PBX_CHECK_EQ(e2e_log_count(&r.p, "error=PBX_E_CAPABI_PEER_PID\n"), 1);
    /* The same frame on a public connection and on the ttyd route is no
     * attach: refused there, its descriptor deleted, nothing attached. */
    int conn = e2e_connect(&r.p);
    int sv[2] = {-1, -1};
    uint8_t frame[PBX_CAPABI_ATTACH_BYTES];
    pbx_capabi_attach a = {PBX_CAPABI_ROUTE_TTYD, me};
    PBX_REQUIRE(pbx_capabi_attach_encode(&a, frame, sizeof(frame)) == PBX_OK);
    PBX_REQUIRE(conn >= 0 && e2e_socketpair(SOCK_SEQPACKET, sv));
    PBX_CHECK(e2e_send(conn, frame, sizeof(frame), &sv[1], 1));
    PBX_CHECK(e2e_send(r.p.ttyd, frame, sizeof(frame), &sv[1], 1));
    (void)close(sv[1]);
    PBX_CHECK(e2e_peer_gone(sv[0], 5000));
    (void)close(sv[0]);
    (void)close(conn);
    PBX_CHECK(e2e_fds_settle(r.p.pid, r.baseline, 5000));
    PBX_CHECK_EQ(e2e_log_count(&r.p, "event=route-attach"), 13);
    /* The routes that were never replaced still serve a whole grant. */
    pbx_ipc_id id = {0, 0};
    pbx_ipc_id grant = {0, 0};
    int scope = -1;
    int obj = -1;
    int handle = -1;
    PBX_CHECK(e2e_open_request(r.p.broker, "docs/readme.txt", &id, &scope));
    e2e_grant_to_retire(&r, id, scope, &obj, &handle, &grant);
    int fds[3] = {scope, obj, handle};
    e2e_close_all(fds, 3);
    e2e_run_stop(&r);
}
