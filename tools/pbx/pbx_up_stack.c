/*
 * pbx_up_stack.c: starting and stopping the five processes of one stack,
 * as docs/HOST.md ("What powerboxd's runtime must do to talk to them")
 * lays it out and tests/e2e/run.py's Stack does.
 *
 * vfsd, ttyd, procd and launchd start first, in that order, each ready
 * (its `ready` line on a pipe) before the next; powerboxd then starts with
 * descriptors 3..10 as capabi/pbx_capabi.h lays them out: the PBX1 record
 * (the embedded default geometry, built here and sealed in a memfd), the
 * readiness route, a connection to vfsd's own route listener (powerboxd
 * accepts scopes only from slot 5's peer process, so a socketpair made
 * here would not do), the ttyd and procd routes (socketpairs), launchd's
 * wake datagram socket, nothing at 9 (powerboxd makes its public
 * endpoint), launchd's broker connection. The stack is ready when
 * powerboxd's typed readiness report arrives.
 */
#define _GNU_SOURCE
#include "bootstrap/pbx_bootstrap.h"
#include "capabi/pbx_capabi.h"
#include "peers/common/pbx_peer_io.h"
#include "tools/pbx/pbx_tool.h"
#include "tools/pbx/pbx_up.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* powerboxd's readiness report (powerboxd/runtime/pbx_rt.h, which tools
 * may not include: the layering keeps the tool below the executable):
 * 32 bytes, u32 magic "PBXR", u16 version 1, u16 kind 1 (ready). */
#define PBX_UP_READY_MAGIC   0x52584250U
#define PBX_UP_READY_VERSION 1U
#define PBX_UP_READY_KIND    1U
#define PBX_UP_READY_BYTES   32U

/* How long one process may take to become ready, and how long the stack
 * gets to stop on SIGTERM before SIGKILL. */
#define PBX_UP_READY_MS 10000
#define PBX_UP_TERM_MS  3000

/* The staged processes procd simulates and launchd binds launched jobs
 * to: the same list for both, as tests/e2e/run.py uses (ten, so that ten
 * jobs may use install mode at once; a lone job gets 42:5). */
#define PBX_UP_STAGE_FIRST 42
#define PBX_UP_STAGES      10

/* The most arguments any stack process is started with. */
#define PBX_UP_ARGS_MAX 64U

/* The sockets a stack makes in DIR, removed before a start and at exit. */
static const char *const pbx_up_sockets[] = {
    "public.sock", "launchd.sock",    "scope.sock", "ttyd.sock",
    "procd.sock",  "vfsd-route.sock", "stage.sock",
};

/* A command line under construction: argument strings live in text. */
typedef struct pbx_up_argv {
    char *arg[PBX_UP_ARGS_MAX + 1U];
    size_t n;
    char text[8192];
    size_t used;
    bool full;
} pbx_up_argv;

/* Appends one argument (formatted); sets full instead of overflowing. */
static void pbx_up_arg(pbx_up_argv *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void pbx_up_arg(pbx_up_argv *a, const char *fmt, ...)
{
    if (a->full || a->n >= PBX_UP_ARGS_MAX) {
        a->full = true;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    size_t room = sizeof(a->text) - a->used;
    int len = vsnprintf(a->text + a->used, room, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= room) {
        a->full = true;
        return;
    }
    a->arg[a->n++] = a->text + a->used;
    a->arg[a->n] = NULL;
    a->used += (size_t)len + 1U;
}

/* DIR/name into out; false (noted) when it does not fit. */
static bool pbx_up_path(const pbx_up *u, const char *name, char *out)
{
    int n = snprintf(out, PBX_UP_PATH_MAX, "%s/%s", u->dir, name);
    return n > 0 && n < (int)PBX_UP_PATH_MAX;
}

void pbx_up_stack_clean(const pbx_up *u)
{
    char path[PBX_UP_PATH_MAX];
    for (size_t i = 0U; i < sizeof(pbx_up_sockets) / sizeof(*pbx_up_sockets);
         i++) {
        if (pbx_up_path(u, pbx_up_sockets[i], path)) {
            (void)unlink(path);
        }
    }
}

/* What a child gets besides its standard streams: keep[] stay at their
 * numbers (a peer's --X-fd N), or slot[] are moved to 3, 4, ... in order
 * (powerboxd; -1 leaves that slot empty). With connect set, slot
 * connect_slot is instead a connection the child itself makes to the
 * listener at path connect before exec, so that the listener's
 * SO_PEERCRED names the exec'd program (vfsd serves RESOLVE only to the
 * process that connected its route). */
typedef struct pbx_up_fds {
    const int *keep;
    size_t nkeep;
    const int *slot;
    size_t nslot;
    const char *connect;
    size_t connect_slot;
    /* Route hand-offs (a restarted peer): channel ends kept in the child,
     * each replaced by the child's end of a pair it makes itself, whose
     * other end goes back over the channel (pbx_up_child_handoff). */
    const int *handoff;
    const int *handoff_type;
    size_t nhandoff;
} pbx_up_fds;

static int pbx_up_connect(const char *path);

/* Puts slot[i] at 3 + i, every other descriptor from 3 up closed. */
static void pbx_up_child_slots(const pbx_up_fds *f)
{
    int high[16];
    for (size_t i = 0U; i < f->nslot && i < 16U; i++) {
        int from = f->slot[i];
        if (f->connect != NULL && i == f->connect_slot) {
            from = pbx_up_connect(f->connect);
            if (from < 0) {
                (void)fprintf(stderr, "pbx up: cannot connect to %s\n",
                              f->connect);
                _exit(127);
            }
        }
        high[i] = from < 0 ? -1 : fcntl(from, F_DUPFD, 64);
        if (from >= 0 && high[i] < 0) {
            _exit(127);
        }
    }
    for (size_t i = 0U; i < f->nslot && i < 16U; i++) {
        int to = 3 + (int)i;
        if (high[i] < 0) {
            (void)close(to);
        } else if (dup2(high[i], to) < 0) {
            _exit(127);
        }
    }
    (void)close_range(3U + (unsigned)f->nslot, ~0U, 0);
}

/* In the child: makes a pair of type (so the kernel names this process,
 * the peer after exec, as both ends' peer), sends one end back over the
 * channel ch and puts the other end at ch's number for the peer. */
static void pbx_up_child_handoff(int ch, int type)
{
    int sv[2];
    const uint8_t one = 'r';
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0) {
        _exit(127);
    }
    if (pbx_peer_io_send_fds(ch, &one, 1U, &sv[0], 1U, 0) != 0 ||
        dup2(sv[1], ch) != ch) {
        _exit(127);
    }
    (void)close(sv[0]);
    (void)close(sv[1]);
}

/* The child side of a spawn: its own session and process group (so the
 * terminal's job control reaches only the supervisor and ttyd can read
 * the terminal without being a background job), killed if the supervisor
 * dies, default signal handling, stdin /dev/null, stdout and stderr into
 * the log pipe; then exec. Never returns. */
static void pbx_up_child(pid_t parent, int logw, const pbx_up_fds *f,
                         char *const *argv)
{
    (void)setsid();
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL);
    if (getppid() != parent) {
        _exit(127);
    }
    sigset_t none;
    (void)sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD};
    for (size_t i = 0U; i < sizeof(sigs) / sizeof(*sigs); i++) {
        (void)signal(sigs[i], SIG_DFL);
    }
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(logw, 1) < 0 ||
        dup2(logw, 2) < 0) {
        _exit(127);
    }
    for (size_t i = 0U; i < f->nkeep; i++) {
        (void)fcntl(f->keep[i], F_SETFD, 0);
    }
    for (size_t i = 0U; i < f->nhandoff; i++) {
        pbx_up_child_handoff(f->handoff[i], f->handoff_type[i]);
    }
    if (f->nslot > 0U) {
        pbx_up_child_slots(f);
    }
    (void)execv(argv[0], argv);
    (void)fprintf(stderr, "pbx up: cannot run %s: %s\n", argv[0],
                  strerror(errno));
    _exit(127);
}

/* Starts u->proc[idx] with argv and the descriptors f; notes its pid. */
static int pbx_up_spawn(pbx_up *u, size_t idx, const pbx_up_argv *a,
                        const pbx_up_fds *f)
{
    pbx_up_proc *p = &u->proc[idx];
    int pipefd[2];
    if (a->full) {
        pbx_up_note(u, "%s: command line too long", p->name);
        return -1;
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        pbx_up_note(u, "%s: pipe: %s", p->name, strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        pbx_up_child(parent, pipefd[1], f, a->arg);
    }
    (void)close(pipefd[1]);
    if (pid < 0) {
        (void)close(pipefd[0]);
        pbx_up_note(u, "%s: fork: %s", p->name, strerror(errno));
        return -1;
    }
    (void)fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    pbx_up_proc_closed(u, p);
    p->err = pipefd[0];
    p->len = 0U;
    p->pid = pid;
    p->last_pid = pid;
    pbx_up_note(u, "%s[%ld] started: %s", p->name, (long)pid, a->arg[0]);
    return 0;
}

/* Waits (bounded, serving logs and signals) until fd is readable; false
 * (noted) on timeout, a stop, a death during the first start, or the
 * death of stack process watch (the one expected to answer). */
static bool pbx_up_await(pbx_up *u, int fd, const char *name, size_t watch)
{
    int64_t end = pbx_up_now_ms() + PBX_UP_READY_MS;
    for (int round = 0; round < 100000; round++) {
        if (u->stopping || u->died) {
            return false;
        }
        if (u->proc[watch].pid == 0) {
            pbx_up_note(u, "%s: %s died meanwhile", name, u->proc[watch].name);
            return false;
        }
        int64_t left = end - pbx_up_now_ms();
        if (left <= 0) {
            pbx_up_note(u, "%s not ready within %d ms", name, PBX_UP_READY_MS);
            return false;
        }
        if (pbx_up_pump(u, fd, (int)left)) {
            return true;
        }
    }
    return false;
}

/* The route hand-offs of the peer being restarted (none at a start). */
typedef struct pbx_up_handoffs {
    int ch[2];
    int type[2];
    size_t n;
} pbx_up_handoffs;

/* Starts a peer with a --ready-fd pipe and an --attach-fd channel (whose
 * other end becomes u->proc[idx].chan) and waits for its `ready` line;
 * h (may be NULL) names route hand-offs whose channels the child keeps. */
static int pbx_up_peer_h(pbx_up *u, size_t idx, pbx_up_argv *a, const int *keep,
                         size_t nkeep, const pbx_up_handoffs *h)
{
    int rp[2];
    int ch[2];
    if (pipe2(rp, O_CLOEXEC) != 0) {
        pbx_up_note(u, "pipe: %s", strerror(errno));
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch) != 0) {
        pbx_up_note(u, "socketpair: %s", strerror(errno));
        (void)close(rp[0]);
        (void)close(rp[1]);
        return -1;
    }
    int all[10];
    size_t n = 0U;
    for (; n < nkeep && n < 6U; n++) {
        all[n] = keep[n];
    }
    all[n++] = rp[1];
    all[n++] = ch[1];
    for (size_t i = 0U; h != NULL && i < h->n && n < 10U; i++) {
        all[n++] = h->ch[i];
    }
    pbx_up_arg(a, "--ready-fd");
    pbx_up_arg(a, "%d", rp[1]);
    pbx_up_arg(a, "--attach-fd");
    pbx_up_arg(a, "%d", ch[1]);
    pbx_up_fds f = {.keep = all,
                    .nkeep = n,
                    .handoff = h != NULL ? h->ch : NULL,
                    .handoff_type = h != NULL ? h->type : NULL,
                    .nhandoff = h != NULL ? h->n : 0U};
    int rc = pbx_up_spawn(u, idx, a, &f);
    (void)close(rp[1]);
    (void)close(ch[1]);
    if (u->proc[idx].chan >= 0) {
        (void)close(u->proc[idx].chan);
    }
    u->proc[idx].chan = ch[0];
    const char *name = u->proc[idx].name;
    if (rc == 0 && pbx_up_await(u, rp[0], name, idx)) {
        char line[16] = {0};
        ssize_t got = read(rp[0], line, sizeof(line) - 1U);
        if (got != 6 || strcmp(line, "ready\n") != 0) {
            pbx_up_note(u, "%s did not become ready", name);
            rc = -1;
        }
    } else {
        rc = -1;
    }
    (void)close(rp[0]);
    return rc;
}

/* A sealed memfd holding the PBX1 record of the embedded default
 * geometry, or -1 (noted). */
static int pbx_up_pbx1(pbx_up *u)
{
    pbx_bootstrap_geometry g;
    pbx_tool_geometry_defaults(&g);
    uint32_t pages = 0U;
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    if (pbx_bootstrap_pages_compute(&g, &pages) != PBX_OK) {
        pbx_up_note(u, "the default geometry has no page count");
        return -1;
    }
    g.arena_page_count = pages;
    if (pbx_bootstrap_encode(&g, rec, sizeof(rec)) != PBX_OK) {
        pbx_up_note(u, "the default geometry does not encode");
        return -1;
    }
    int fd = memfd_create("pbx1", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        pbx_up_note(u, "memfd_create: %s", strerror(errno));
        return -1;
    }
    if (write(fd, rec, sizeof(rec)) != (ssize_t)sizeof(rec) ||
        fcntl(fd, F_ADD_SEALS,
              F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) != 0) {
        pbx_up_note(u, "PBX1 memfd: %s", strerror(errno));
        (void)close(fd);
        return -1;
    }
    return fd;
}

/* Connects a SOCK_SEQPACKET socket to the listener at path, or -1. */
static int pbx_up_connect(const char *path)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof(sa.sun_path)) {
        return -1;
    }
    (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        (void)close(fd);
        fd = -1;
    }
    return fd;
}

/* The descriptors of one start: each pair's [0] is powerboxd's end. */
typedef struct pbx_up_wires {
    int sup[2];
    int tty[2];
    int proc[2];
    int broker[2];
    int wake[2];
    int pbx1;
} pbx_up_wires;

/* Makes the socketpairs of one start; false (noted) on failure. */
static bool pbx_up_wires_make(pbx_up *u, pbx_up_wires *w)
{
    bool ok =
        socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w->sup) == 0 &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, w->tty) == 0 &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, w->proc) == 0 &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, w->broker) == 0 &&
        socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, w->wake) == 0;
    if (!ok) {
        pbx_up_note(u, "socketpair: %s", strerror(errno));
    }
    return ok;
}

/* Closes every descriptor of w that is open. */
static void pbx_up_wires_close(pbx_up_wires *w)
{
    int *all[] = {&w->sup[0],  &w->sup[1],  &w->tty[0],    &w->tty[1],
                  &w->proc[0], &w->proc[1], &w->broker[0], &w->broker[1],
                  &w->wake[0], &w->wake[1], &w->pbx1};
    for (size_t i = 0U; i < sizeof(all) / sizeof(*all); i++) {
        if (*all[i] >= 0) {
            (void)close(*all[i]);
            *all[i] = -1;
        }
    }
}

/* The path of bin/name into a, as its first argument. */
static void pbx_up_prog(const pbx_up *u, pbx_up_argv *a, const char *name)
{
    pbx_up_arg(a, "%s/%s", u->bin, name);
}

/* Appends --stage PID:GEN for every staged process. */
static void pbx_up_stages(pbx_up_argv *a)
{
    for (int i = 0; i < PBX_UP_STAGES; i++) {
        pbx_up_arg(a, "--stage");
        pbx_up_arg(a, "%d:5", PBX_UP_STAGE_FIRST + i);
    }
}

/* Starts vfsd: its scope socket, and its route either a listener powerboxd
 * connects to (h NULL, a whole-stack start), the hand-off h (a restart
 * while powerboxd runs, whose route's far end is powerboxd: RESOLVE is
 * served only to pid, named by --route-pid since the pair is vfsd's own),
 * or none (h->n 0: powerboxd is down; its attach channel brings one). */
static int pbx_up_start_vfsd(pbx_up *u, const pbx_up_handoffs *h, pid_t pid)
{
    pbx_up_argv a = {0};
    pbx_up_prog(u, &a, "pbx-vfsd");
    /* An incarnation no earlier vfsd of this supervisor had: a RETIRE of a
     * dead vfsd's object is then echoed as absent, never refused. */
    u->vfsd_incarnation = u->vfsd_incarnation >= UINT16_MAX
                              ? 1U
                              : (uint16_t)(u->vfsd_incarnation + 1U);
    pbx_up_arg(&a, "--incarnation");
    pbx_up_arg(&a, "%u", (unsigned)u->vfsd_incarnation);
    pbx_up_arg(&a, "--root");
    pbx_up_arg(&a, "%s", u->root);
    pbx_up_arg(&a, "--scope");
    pbx_up_arg(&a, "%s/scope.sock", u->dir);
    if (h == NULL) {
        pbx_up_arg(&a, "--route");
        pbx_up_arg(&a, "%s/vfsd-route.sock", u->dir);
    } else if (h->n > 0U) {
        pbx_up_arg(&a, "--route-fd");
        pbx_up_arg(&a, "%d", h->ch[0]);
        pbx_up_arg(&a, "--route-pid");
        pbx_up_arg(&a, "%ld", (long)pid);
    }
    return pbx_up_peer_h(u, PBX_UP_VFSD, &a, NULL, 0U, h);
}

/* Appends "--route-fd N" for a route at descriptor route (-1: none). */
static void pbx_up_route_arg(pbx_up_argv *a, int route)
{
    if (route >= 0) {
        pbx_up_arg(a, "--route-fd");
        pbx_up_arg(a, "%d", route);
    }
}

/* Starts ttyd with its route at descriptor route: kept (h NULL), a
 * hand-off (h->n 1), or none (route -1: powerboxd is down). */
static int pbx_up_start_ttyd(pbx_up *u, int route, const pbx_up_handoffs *h)
{
    pbx_up_argv t = {0};
    pbx_up_prog(u, &t, "pbx-ttyd");
    pbx_up_arg(&t, "--policy");
    pbx_up_arg(&t, "%s", u->policy);
    pbx_up_arg(&t, "--tty");
    pbx_up_arg(&t, "%s", u->tty);
    pbx_up_arg(&t, "--query");
    pbx_up_arg(&t, "%s/ttyd.sock", u->dir);
    pbx_up_route_arg(&t, route);
    return pbx_up_peer_h(u, PBX_UP_TTYD, &t, h == NULL ? &route : NULL,
                         h == NULL ? 1U : 0U, h);
}

/* Starts procd with its route at descriptor route, as ttyd's. */
static int pbx_up_start_procd(pbx_up *u, int route, const pbx_up_handoffs *h)
{
    pbx_up_argv a = {0};
    pbx_up_prog(u, &a, "pbx-procd");
    pbx_up_stages(&a);
    pbx_up_arg(&a, "--query");
    pbx_up_arg(&a, "%s/procd.sock", u->dir);
    pbx_up_arg(&a, "--stage-sock");
    pbx_up_arg(&a, "%s/stage.sock", u->dir);
    pbx_up_route_arg(&a, route);
    return pbx_up_peer_h(u, PBX_UP_PROCD, &a, h == NULL ? &route : NULL,
                         h == NULL ? 1U : 0U, h);
}

/* Starts launchd with its wake and broker ends at those descriptors
 * (kept, hand-offs, or both -1: powerboxd is down). */
static int pbx_up_start_launchd(pbx_up *u, int wake, int broker,
                                const pbx_up_handoffs *h)
{
    pbx_up_argv l = {0};
    pbx_up_prog(u, &l, "pbx-launchd");
    pbx_up_arg(&l, "serve");
    if (wake >= 0) {
        pbx_up_arg(&l, "--wake-fd");
        pbx_up_arg(&l, "%d", wake);
        pbx_up_arg(&l, "--broker-fd");
        pbx_up_arg(&l, "%d", broker);
    }
    pbx_up_arg(&l, "--control");
    pbx_up_arg(&l, "%s/launchd.sock", u->dir);
    pbx_up_stages(&l);
    const int keep[] = {wake, broker};
    return pbx_up_peer_h(u, PBX_UP_LAUNCHD, &l, h == NULL ? keep : NULL,
                         h == NULL ? 2U : 0U, h);
}

/* Starts vfsd (scope socket, route listener) and ttyd. */
static int pbx_up_start_vfsd_ttyd(pbx_up *u, const pbx_up_wires *w)
{
    if (pbx_up_start_vfsd(u, NULL, 0) != 0) {
        return -1;
    }
    return pbx_up_start_ttyd(u, w->tty[1], NULL);
}

/* Starts procd and launchd. */
static int pbx_up_start_procd_launchd(pbx_up *u, const pbx_up_wires *w)
{
    if (pbx_up_start_procd(u, w->proc[1], NULL) != 0) {
        return -1;
    }
    return pbx_up_start_launchd(u, w->wake[1], w->broker[1], NULL);
}

/* Checks powerboxd's readiness report on w->sup[0]. */
static int pbx_up_report(pbx_up *u, const pbx_up_wires *w)
{
    uint8_t rep[PBX_UP_READY_BYTES];
    if (!pbx_up_await(u, w->sup[0], "powerboxd", PBX_UP_POWERBOXD)) {
        return -1;
    }
    ssize_t got = recv(w->sup[0], rep, sizeof(rep), MSG_DONTWAIT);
    uint32_t magic = (uint32_t)rep[0] | (uint32_t)rep[1] << 8 |
                     (uint32_t)rep[2] << 16 | (uint32_t)rep[3] << 24;
    uint32_t ver = (uint32_t)rep[4] | (uint32_t)rep[5] << 8;
    uint32_t kind = (uint32_t)rep[6] | (uint32_t)rep[7] << 8;
    if (got != (ssize_t)sizeof(rep) || magic != PBX_UP_READY_MAGIC ||
        ver != PBX_UP_READY_VERSION || kind != PBX_UP_READY_KIND) {
        pbx_up_note(u, "powerboxd sent no valid readiness report");
        return -1;
    }
    pbx_up_note(u, "powerboxd[%ld] ready on %s/public.sock",
                (long)u->proc[PBX_UP_POWERBOXD].pid, u->dir);
    return 0;
}

/* Starts powerboxd with slots 3..10 and waits for its report. */
static int pbx_up_start_powerboxd(pbx_up *u, pbx_up_wires *w)
{
    char route[PBX_UP_PATH_MAX];
    if (!pbx_up_path(u, "vfsd-route.sock", route)) {
        return -1;
    }
    w->pbx1 = pbx_up_pbx1(u);
    if (w->pbx1 < 0) {
        return -1;
    }
    /* Slot 5 (index 2) is connected by powerboxd's own process. */
    const int slot[] = {w->pbx1,    w->sup[1],  -1, w->tty[0],
                        w->proc[0], w->wake[0], -1, w->broker[0]};
    pbx_up_argv a = {0};
    pbx_up_prog(u, &a, "powerboxd");
    pbx_up_arg(&a, "--incarnation=%u", pbx_up_incarnation(u));
    pbx_up_arg(&a, "%s/public.sock", u->dir);
    pbx_up_fds f = {.slot = slot,
                    .nslot = sizeof(slot) / sizeof(*slot),
                    .connect = route,
                    .connect_slot = 2U};
    int rc = pbx_up_spawn(u, PBX_UP_POWERBOXD, &a, &f) == 0
                 ? pbx_up_report(u, w)
                 : -1;
    /* The listener was for powerboxd's one connection: removing its name
     * leaves nobody else a way to reach vfsd's route. */
    (void)unlink(route);
    return rc;
}

int pbx_up_stack_start(pbx_up *u)
{
    pbx_up_wires w;
    memset(&w, 0xff, sizeof(w));
    u->died = false;
    u->stopping_stack = false;
    pbx_up_stack_clean(u);
    int rc = -1;
    if (pbx_up_wires_make(u, &w) && pbx_up_start_vfsd_ttyd(u, &w) == 0 &&
        pbx_up_start_procd_launchd(u, &w) == 0) {
        rc = pbx_up_start_powerboxd(u, &w);
    }
    if (rc == 0) {
        /* Slot 4 stays: restarted peers' routes go over it. */
        u->sup_fd = w.sup[0];
        w.sup[0] = -1;
        u->running = true;
    }
    pbx_up_wires_close(&w);
    return rc;
}

/* Whether pid is a live stack process. */
static bool pbx_up_is_stack(const pbx_up *u, long pid)
{
    for (size_t i = 0U; i < PBX_UP_PROCS; i++) {
        if (u->proc[i].pid > 0 && (long)u->proc[i].pid == pid) {
            return true;
        }
    }
    return false;
}

/* SIGKILLs every child of the supervisor that is not a live stack
 * process: launched jobs (and their children) reparented here. Returns
 * how many. */
static int pbx_up_kill_children(const pbx_up *u)
{
    DIR *d = opendir("/proc");
    if (d == NULL) {
        return 0;
    }
    pid_t me = getpid();
    int killed = 0;
    for (int round = 0; round < 1 << 20; round++) {
        const struct dirent *e = readdir(d);
        if (e == NULL) {
            break;
        }
        char path[64];
        char stat[512];
        if (e->d_name[0] < '1' || e->d_name[0] > '9' ||
            snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name) < 0) {
            continue;
        }
        FILE *f = fopen(path, "re");
        size_t got = f != NULL ? fread(stat, 1, sizeof(stat) - 1U, f) : 0U;
        if (f != NULL) {
            (void)fclose(f);
        }
        stat[got] = '\0';
        const char *close_paren = strrchr(stat, ')');
        /* After the command name: ") STATE PPID ...". */
        long ppid = close_paren != NULL && strlen(close_paren) > 4U
                        ? strtol(close_paren + 4, NULL, 10)
                        : 0L;
        if (ppid == (long)me &&
            !pbx_up_is_stack(u, strtol(e->d_name, NULL, 10))) {
            (void)kill((pid_t)strtol(e->d_name, NULL, 10), SIGKILL);
            killed++;
        }
    }
    (void)closedir(d);
    return killed;
}

/* Signals every live stack process. */
static void pbx_up_signal_all(pbx_up *u, int sig)
{
    for (size_t i = 0U; i < PBX_UP_PROCS; i++) {
        if (u->proc[i].pid > 0) {
            (void)kill(u->proc[i].pid, SIGCONT);
            (void)kill(u->proc[i].pid, sig);
        }
    }
}

/* True while some stack process is alive (unreaped). */
static bool pbx_up_any_alive(const pbx_up *u)
{
    for (size_t i = 0U; i < PBX_UP_PROCS; i++) {
        if (u->proc[i].pid > 0) {
            return true;
        }
    }
    return false;
}

void pbx_up_stack_stop(pbx_up *u)
{
    u->stopping_stack = true;
    u->running = false;
    if (u->sup_fd >= 0) {
        (void)close(u->sup_fd);
        u->sup_fd = -1;
    }
    for (size_t i = 0U; i < PBX_UP_PROCS; i++) {
        u->proc[i].down = false;
        u->proc[i].due_ms = 0;
        if (u->proc[i].chan >= 0) {
            (void)close(u->proc[i].chan);
            u->proc[i].chan = -1;
        }
    }
    pbx_up_signal_all(u, SIGTERM);
    int64_t end = pbx_up_now_ms() + PBX_UP_TERM_MS;
    for (int r = 0; r < 100000 && pbx_up_any_alive(u); r++) {
        int64_t left = end - pbx_up_now_ms();
        if (left <= 0) {
            pbx_up_note(u, "still running after %d ms: SIGKILL",
                        PBX_UP_TERM_MS);
            pbx_up_signal_all(u, SIGKILL);
            end = pbx_up_now_ms() + PBX_UP_TERM_MS;
        }
        (void)pbx_up_pump(u, -1, left > 50 ? 50 : (int)(left > 0 ? left : 1));
    }
    /* Jobs launched by launchd live in process groups of their own and
     * reparent to the supervisor when launchd is gone: kill them level by
     * level until the supervisor has no child left. */
    int jobs = 0;
    for (int r = 0; r < 1000; r++) {
        jobs += pbx_up_kill_children(u);
        (void)pbx_up_pump(u, -1, 10);
        if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD) {
            break;
        }
    }
    if (jobs > 0) {
        pbx_up_note(u, "%d process(es) below the stack killed", jobs);
    }
    for (size_t i = 0U; i < PBX_UP_PROCS; i++) {
        pbx_up_proc_closed(u, &u->proc[i]);
    }
    u->stopping_stack = false;
}

/* Takes the route end a restarted peer's child sent back over channel ch
 * (waiting at most PBX_UP_READY_MS); -1 (noted) when none came. */
static int pbx_up_take(pbx_up *u, int ch, const char *name)
{
    char one = 0;
    struct iovec iov = {&one, 1U};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh;
    struct pollfd p = {.fd = ch, .events = POLLIN};
    memset(&mh, 0, sizeof(mh));
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    int fd = -1;
    if (poll(&p, 1, PBX_UP_READY_MS) == 1 &&
        recvmsg(ch, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) == 1) {
        const struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        if (c != NULL && c->cmsg_level == SOL_SOCKET &&
            c->cmsg_type == SCM_RIGHTS &&
            c->cmsg_len == CMSG_LEN(sizeof(int))) {
            memcpy(&fd, CMSG_DATA(c), sizeof(int));
        }
    }
    if (fd < 0) {
        pbx_up_note(u, "%s: its new route never came back", name);
    }
    return fd;
}

/* The name of a ROUTE_ATTACH route, for the log. */
static const char *pbx_up_route_name(uint32_t route)
{
    static const char *const names[] = {"?",     "vfsd", "ttyd",
                                        "procd", "wake", "broker"};
    return route < sizeof(names) / sizeof(*names) ? names[route] : "?";
}

/* Sends fd to powerboxd as route, whose peer is process pid, by
 * ROUTE_ATTACH on slot 4 and waits for the answer; logs it. Returns 0
 * when accepted. */
static int pbx_up_attach(pbx_up *u, uint32_t route, pid_t pid, int fd)
{
    uint8_t frame[PBX_CAPABI_ATTACH_BYTES];
    uint8_t in[64];
    pbx_capabi_attach a = {route, (uint32_t)pid};
    pbx_capabi_answer ans = {0, 0, 0};
    if (pbx_capabi_attach_encode(&a, frame, sizeof(frame)) != PBX_OK ||
        u->sup_fd < 0 ||
        pbx_peer_io_send_fds(u->sup_fd, frame, sizeof(frame), &fd, 1U, 0) !=
            0) {
        pbx_up_note(u, "attach %s route of pid %ld: cannot send to powerboxd",
                    pbx_up_route_name(route), (long)pid);
        return -1;
    }
    /* A late datagram (a usage report after its wait, an earlier attach's
     * answer) is skipped: only the answer echoing this route and pid
     * counts. */
    bool answered = false;
    for (int k = 0; k < 8 && !answered; k++) {
        ssize_t got = pbx_up_await(u, u->sup_fd, "powerboxd's attach answer",
                                   PBX_UP_POWERBOXD)
                          ? recv(u->sup_fd, in, sizeof(in), MSG_DONTWAIT)
                          : -1;
        if (got < 0) {
            break;
        }
        answered = pbx_capabi_answer_decode(in, (size_t)got, &ans) == PBX_OK &&
                   ans.route == route && ans.peer_pid == (uint32_t)pid;
    }
    if (!answered) {
        pbx_up_note(u, "attach %s route of pid %ld: no answer from powerboxd",
                    pbx_up_route_name(route), (long)pid);
        return -1;
    }
    if (ans.status != 0U) {
        pbx_up_note(u, "attach %s route of pid %ld: refused by powerboxd: %s",
                    pbx_up_route_name(route), (long)pid,
                    pbx_err_name((pbx_err)ans.status));
        return -1;
    }
    pbx_up_note(u, "attach %s route of pid %ld: accepted by powerboxd",
                pbx_up_route_name(route), (long)pid);
    return 0;
}

/* Starts peer idx with the hand-offs h (their channel ends for the
 * child in h->ch; none when h->n is 0: no route). */
static int pbx_up_restart_start(pbx_up *u, size_t idx, const pbx_up_handoffs *h)
{
    int r0 = h->n > 0U ? h->ch[0] : -1;
    switch (idx) {
    case PBX_UP_VFSD:
        return pbx_up_start_vfsd(u, h, u->proc[PBX_UP_POWERBOXD].pid);
    case PBX_UP_TTYD:
        return pbx_up_start_ttyd(u, r0, h);
    case PBX_UP_PROCD:
        return pbx_up_start_procd(u, r0, h);
    default:
        return pbx_up_start_launchd(u, r0, h->n > 1U ? h->ch[1] : -1, h);
    }
}

/* Kills the dead launchd's jobs before a new launchd starts: they were
 * reparented here, no live launchd manages them, and powerboxd has ended
 * (or, when it died too, vfsd has retired) their grants. */
static void pbx_up_orphans(pbx_up *u, size_t idx)
{
    if (idx != PBX_UP_LAUNCHD) {
        return;
    }
    /* A killed job's own children reparent here in turn: kill level by
     * level until no new one appears (bounded). */
    int killed = 0;
    for (int r = 0; r < 64; r++) {
        int k = pbx_up_kill_children(u);
        killed += k;
        if (k == 0) {
            break;
        }
        (void)pbx_up_pump(u, -1, 10);
    }
    pbx_up_note(u, "launchd: %d orphaned job process(es) killed", killed);
}

int pbx_up_peer_restart(pbx_up *u, size_t idx)
{
    static const uint32_t routes[PBX_UP_LAUNCHD + 1U][2] = {
        {PBX_CAPABI_ROUTE_VFSD, 0U},
        {PBX_CAPABI_ROUTE_TTYD, 0U},
        {PBX_CAPABI_ROUTE_PROCD, 0U},
        {PBX_CAPABI_ROUTE_WAKE, PBX_CAPABI_ROUTE_BROKER}};
    pbx_up_handoffs h = {{-1, -1}, {SOCK_SEQPACKET, SOCK_SEQPACKET}, 0U};
    int parent[2] = {-1, -1};
    int got[2] = {-1, -1};
    if (idx > PBX_UP_LAUNCHD) {
        return -1;
    }
    if (u->proc[PBX_UP_POWERBOXD].pid == 0) {
        /* No powerboxd to attach to: the peer waits for the route its
         * attach channel brings when powerboxd is started again. */
        h.n = 0U;
        pbx_up_orphans(u, idx);
        return pbx_up_restart_start(u, idx, &h);
    }
    h.n = idx == PBX_UP_LAUNCHD ? 2U : 1U;
    h.type[0] = idx == PBX_UP_LAUNCHD ? SOCK_DGRAM : SOCK_SEQPACKET;
    for (size_t i = 0U; i < h.n; i++) {
        int ch[2];
        if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch) != 0) {
            pbx_up_note(u, "socketpair: %s", strerror(errno));
            h.n = i;
            break;
        }
        parent[i] = ch[0];
        h.ch[i] = ch[1];
    }
    pbx_up_orphans(u, idx);
    int rc = h.n == (idx == PBX_UP_LAUNCHD ? 2U : 1U)
                 ? pbx_up_restart_start(u, idx, &h)
                 : -1;
    for (size_t i = 0U; i < 2U; i++) {
        if (h.ch[i] >= 0) {
            (void)close(h.ch[i]);
        }
        got[i] = rc == 0 && parent[i] >= 0
                     ? pbx_up_take(u, parent[i], u->proc[idx].name)
                     : -1;
        if (parent[i] >= 0) {
            (void)close(parent[i]);
        }
    }
    for (size_t i = 0U; i < h.n && rc == 0; i++) {
        rc = got[i] >= 0
                 ? pbx_up_attach(u, routes[idx][i], u->proc[idx].pid, got[i])
                 : -1;
    }
    for (size_t i = 0U; i < 2U; i++) {
        if (got[i] >= 0) {
            (void)close(got[i]);
        }
    }
    return rc;
}

/* Sends one attach-channel message (len bytes of msg, op first, with the
 * descriptors fds) to peer idx and waits for its two-byte answer (the op
 * in lower case, then 0 when done). Returns 0 when the peer took it; the
 * reason is noted when not. */
static int pbx_up_chan_call(pbx_up *u, size_t idx, const uint8_t *msg,
                            size_t len, const int *fds, size_t nfds)
{
    pbx_up_proc *p = &u->proc[idx];
    uint8_t ans[8];
    /* An answer left from an earlier call that timed out is not this
     * call's: drop whatever waits before sending. */
    for (int k = 0; k < 8 && p->chan >= 0 &&
                    recv(p->chan, ans, sizeof(ans), MSG_DONTWAIT) > 0;
         k++) {
    }
    if (p->pid == 0 || p->chan < 0 ||
        pbx_peer_io_send_fds(p->chan, msg, len, fds, nfds, MSG_DONTWAIT) != 0) {
        pbx_up_note(u, "%s: cannot reach its attach channel", p->name);
        return -1;
    }
    ssize_t got = pbx_up_await(u, p->chan, "attach channel answer", idx)
                      ? recv(p->chan, ans, sizeof(ans), MSG_DONTWAIT)
                      : -1;
    if (got != 2 || ans[0] != (uint8_t)(msg[0] | 0x20U)) {
        pbx_up_note(u, "%s: no answer on its attach channel", p->name);
        return -1;
    }
    if (ans[1] != 0U) {
        pbx_up_note(u, "%s: refused its new route (status %u)", p->name,
                    (unsigned)ans[1]);
        return -1;
    }
    return 0;
}

/* Hands the running peers their ends of the new powerboxd's routes: vfsd
 * listens at route for powerboxd's own connection, ttyd, procd and
 * launchd take their ends of w. Whatever a peer did not take is closed by
 * the caller, so the new powerboxd sees that route hung up (down until
 * the peer is restarted) rather than waiting on it. */
static void pbx_up_hand_routes(pbx_up *u, const pbx_up_wires *w,
                               const char *route)
{
    /* 'L' then the path, without its NUL (the channel message's length
     * ends it). */
    char listen[PBX_UP_PATH_MAX + 2U];
    int n = snprintf(listen, sizeof(listen), "L%s", route);
    if (n > 1 && n < (int)sizeof(listen)) {
        (void)pbx_up_chan_call(u, PBX_UP_VFSD, (const uint8_t *)listen,
                               (size_t)n, NULL, 0U);
    }
    const uint8_t r = (uint8_t)'R';
    (void)pbx_up_chan_call(u, PBX_UP_TTYD, &r, 1U, &w->tty[1], 1U);
    (void)pbx_up_chan_call(u, PBX_UP_PROCD, &r, 1U, &w->proc[1], 1U);
    const int lw[2] = {w->wake[1], w->broker[1]};
    (void)pbx_up_chan_call(u, PBX_UP_LAUNCHD, &r, 1U, lw, 2U);
}

int pbx_up_broker_restart(pbx_up *u)
{
    pbx_up_wires w;
    char route[PBX_UP_PATH_MAX];
    memset(&w, 0xff, sizeof(w));
    if (u->sup_fd >= 0) {
        (void)close(u->sup_fd);
        u->sup_fd = -1;
    }
    if (!pbx_up_path(u, "vfsd-route.sock", route) ||
        !pbx_up_wires_make(u, &w)) {
        pbx_up_wires_close(&w);
        return -1;
    }
    /* The dead powerboxd's public endpoint and any route listener name
     * are stale: the new powerboxd binds its own. */
    char pub[PBX_UP_PATH_MAX];
    if (pbx_up_path(u, "public.sock", pub)) {
        (void)unlink(pub);
    }
    (void)unlink(route);
    pbx_up_hand_routes(u, &w, route);
    int *given[] = {&w.tty[1], &w.proc[1], &w.wake[1], &w.broker[1]};
    for (size_t i = 0U; i < sizeof(given) / sizeof(*given); i++) {
        (void)close(*given[i]);
        *given[i] = -1;
    }
    int rc = pbx_up_start_powerboxd(u, &w);
    if (rc == 0) {
        u->sup_fd = w.sup[0];
        w.sup[0] = -1;
    }
    pbx_up_wires_close(&w);
    return rc;
}
