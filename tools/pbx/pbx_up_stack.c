/*
 * pbx_up_stack.c: starting and stopping the five processes of one stack,
 * as docs/HOST.md ("What powerboxd's runtime must do to talk to them")
 * lays it out and tests/e2e/run.py's Stack does.
 *
 * vfsd, ttyd, procd and launchd start first, in that order, each ready
 * (its `ready` line on a pipe) before the next; powerboxd then starts with
 * descriptors 3..10 as capabi/pbx_capabi.h lays them out: the PBX1 record
 * (the embedded default geometry, built here and sealed in a memfd), the
 * readiness route, vfsd's route (a pair vfsd makes for the exact pid of
 * powerboxd's child, which waits for it before exec: powerboxd accepts
 * scopes only from slot 5's peer process, so a socketpair made here would
 * not do), the ttyd and procd routes (socketpairs), launchd's
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
#include "tools/pbx/pbx_up_spawn.h"

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
#include <sys/mount.h>
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
#define PBX_UP_TERM_MS 3000

/* The staged processes procd simulates and launchd binds launched jobs
 * to: the same list for both, as tests/e2e/run.py uses (ten, so that ten
 * jobs may use install mode at once; a lone job gets 42:5). */
#define PBX_UP_STAGE_FIRST 42
#define PBX_UP_STAGES      10

/* The rows of vfsd's object table (--objects) and procd's install table
 * (--installs): the live grants a stack holds, at least 1,000 (issue 23
 * item 3; e2e many-grants holds 1,000 with tables of 1,000). */
#define PBX_UP_PEER_TABLE 1024U
_Static_assert(PBX_UP_PEER_TABLE >= 1000U, "a stack holds 1,000 grants");

/* What the stack's PBX1 keeps beside its live grants: the default
 * geometry's records (128 per request pool, 448 transient slots) stay
 * free for the lifecycles in flight while the peers' tables are full, so
 * a stack meets the peers' tables before any pool of powerboxd. */
#define PBX_UP_POOL_ROOM      128U
#define PBX_UP_TRANSIENT_ROOM 448U
/* Each live install-mode grant keeps its procd handle in a transient
 * slot: the range (slots plus 16 receipts) must hold the table and the
 * room, inside powerboxd's range. */
_Static_assert(PBX_UP_PEER_TABLE + PBX_UP_TRANSIENT_ROOM +
                       PBX_BOOTSTRAP_RECEIPTS_PER_RECEIVE <=
                   PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX,
               "the transient range holds a full table of grants");

/* The pools a live grant or a lifecycle keeps a record in, raised for a
 * full table of live grants beside the default's room. */
static const pbx_bootstrap_pool pbx_up_grant_pools[] = {
    PBX_BOOTSTRAP_POOL_REQUESTS,    PBX_BOOTSTRAP_POOL_GRANTS,
    PBX_BOOTSTRAP_POOL_POLICIES,    PBX_BOOTSTRAP_POOL_DECISIONS,
    PBX_BOOTSTRAP_POOL_RESOLUTIONS, PBX_BOOTSTRAP_POOL_NOTIFICATIONS,
};

/* The stack's geometry: the tool's defaults, with the pools and the
 * transient slots sized for PBX_UP_PEER_TABLE live grants. */
static void pbx_up_geometry(pbx_bootstrap_geometry *g)
{
    pbx_tool_geometry_defaults(g);
    for (size_t i = 0U;
         i < sizeof(pbx_up_grant_pools) / sizeof(*pbx_up_grant_pools); i++) {
        g->capacity[pbx_up_grant_pools[i]] =
            PBX_UP_PEER_TABLE + PBX_UP_POOL_ROOM;
    }
    g->capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        PBX_UP_PEER_TABLE + PBX_UP_TRANSIENT_ROOM;
}

/* The sockets a stack makes in DIR, removed before a start and at exit. */
static const char *const pbx_up_sockets[] = {
    "public.sock", "launchd.sock", "scope.sock", "ttyd.sock",
    "procd.sock",  "stage.sock",   "hold.sock",
};

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

/* A sealed memfd holding the PBX1 record of the stack's geometry
 * (pbx_up_geometry), or -1 (noted). */
static int pbx_up_pbx1(pbx_up *u)
{
    pbx_bootstrap_geometry g;
    pbx_up_geometry(&g);
    uint32_t pages = 0U;
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    if (pbx_bootstrap_pages_compute(&g, &pages) != PBX_OK) {
        pbx_up_note(u, "the stack's geometry has no page count");
        return -1;
    }
    g.arena_page_count = pages;
    if (pbx_bootstrap_encode(&g, rec, sizeof(rec)) != PBX_OK) {
        pbx_up_note(u, "the stack's geometry does not encode");
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

/* Makes the socketpairs of one start; false (noted) on failure. */
bool pbx_up_wires_make(pbx_up *u, pbx_up_wires *w)
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
void pbx_up_wires_close(pbx_up_wires *w)
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

/* Starts vfsd: its scope socket, and its route either none (h NULL, a
 * whole-stack start, or h->n 0, powerboxd is down: each powerboxd start
 * asks vfsd for a pair over its attach channel) or the hand-off h (a
 * restart while powerboxd runs, whose route's far end is powerboxd:
 * RESOLVE is served only to pid, named by --route-pid since the pair is
 * vfsd's own). vfsd listens for no route. */
int pbx_up_start_vfsd(pbx_up *u, const pbx_up_handoffs *h, pid_t pid)
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
    /* The revocable descriptors' FUSE mount: in the stack's directory,
     * which no sandbox profile may name, rather than under /tmp. */
    pbx_up_arg(&a, "--fuse-dir");
    pbx_up_arg(&a, "%s/fuse", u->dir);
    pbx_up_arg(&a, "--objects");
    pbx_up_arg(&a, "%u", PBX_UP_PEER_TABLE);
    if (h != NULL && h->n > 0U) {
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
int pbx_up_start_ttyd(pbx_up *u, int route, const pbx_up_handoffs *h)
{
    pbx_up_argv t = {0};
    pbx_up_prog(u, &t, "pbx-ttyd");
    pbx_up_arg(&t, "--policy");
    pbx_up_arg(&t, "%s", u->policy);
    pbx_up_arg(&t, "--tty");
    pbx_up_arg(&t, "%s", u->tty);
    pbx_up_arg(&t, "--query");
    pbx_up_arg(&t, "%s/ttyd.sock", u->dir);
    /* launchd's prompt hold: each prompt drawn over held job output. */
    pbx_up_arg(&t, "--hold");
    pbx_up_arg(&t, "%s/hold.sock", u->dir);
    /* Jobs, and a dead launchd's orphans, are below this subreaper. */
    pbx_up_arg(&t, "--jobs-below");
    pbx_up_arg(&t, "%ld", (long)getpid());
    pbx_up_route_arg(&t, route);
    return pbx_up_peer_h(u, PBX_UP_TTYD, &t, h == NULL ? &route : NULL,
                         h == NULL ? 1U : 0U, h);
}

/* Starts procd with its route at descriptor route, as ttyd's. */
int pbx_up_start_procd(pbx_up *u, int route, const pbx_up_handoffs *h)
{
    pbx_up_argv a = {0};
    pbx_up_prog(u, &a, "pbx-procd");
    pbx_up_stages(&a);
    pbx_up_arg(&a, "--query");
    pbx_up_arg(&a, "%s/procd.sock", u->dir);
    pbx_up_arg(&a, "--jobs-below");
    pbx_up_arg(&a, "%ld", (long)getpid());
    pbx_up_arg(&a, "--stage-sock");
    pbx_up_arg(&a, "%s/stage.sock", u->dir);
    pbx_up_arg(&a, "--installs");
    pbx_up_arg(&a, "%u", PBX_UP_PEER_TABLE);
    pbx_up_route_arg(&a, route);
    return pbx_up_peer_h(u, PBX_UP_PROCD, &a, h == NULL ? &route : NULL,
                         h == NULL ? 1U : 0U, h);
}

/* Starts launchd with its wake and broker ends at those descriptors
 * (kept, hand-offs, or both -1: powerboxd is down). */
int pbx_up_start_launchd(pbx_up *u, int wake, int broker,
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
    pbx_up_arg(&l, "--hold");
    pbx_up_arg(&l, "%s/hold.sock", u->dir);
    /* vfsd's FUSE mount, for every open broker (pbx-broker --mount). */
    pbx_up_arg(&l, "--fuse-dir");
    pbx_up_arg(&l, "%s/fuse", u->dir);
    pbx_up_stages(&l);
    const int keep[] = {wake, broker};
    return pbx_up_peer_h(u, PBX_UP_LAUNCHD, &l, h == NULL ? keep : NULL,
                         h == NULL ? 2U : 0U, h);
}

/* Starts vfsd (scope socket, no route yet) and ttyd. */
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

/* Gives the held child at the far end of gate its slot-5 route: asks
 * vfsd for a pair made for pid, sends the far end through gate, and
 * closes gate either way (the child execs with the route, or exits 127
 * when none came). */
static void pbx_up_open_gate(pbx_up *u, int gate, pid_t pid)
{
    int route = pbx_up_vfsd_pair(u, pid);
    const uint8_t one = (uint8_t)'g';
    if (route >= 0 &&
        pbx_peer_io_send_fds(gate, &one, 1U, &route, 1U, 0) != 0) {
        pbx_up_note(u, "powerboxd[%ld]: route not sent through the gate: %s",
                    (long)pid, strerror(errno));
    }
    if (route >= 0) {
        (void)close(route);
    }
    (void)close(gate);
}

/* Starts powerboxd with slots 3..10 and waits for its report. Slot 5 is
 * vfsd's route, made by vfsd itself for this child's exact pid while the
 * child waits before exec (a gate socketpair): RESOLVE is served to that
 * pid alone, and no socket anyone could connect to is ever a route. */
int pbx_up_start_powerboxd(pbx_up *u, pbx_up_wires *w)
{
    int gate[2] = {-1, -1};
    w->pbx1 = pbx_up_pbx1(u);
    if (w->pbx1 < 0) {
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, gate) != 0) {
        pbx_up_note(u, "socketpair: %s", strerror(errno));
        return -1;
    }
    /* Slot 5 (index 2) comes through the gate. */
    const int slot[] = {w->pbx1,    w->sup[1],  -1, w->tty[0],
                        w->proc[0], w->wake[0], -1, w->broker[0]};
    pbx_up_argv a = {0};
    pbx_up_prog(u, &a, "powerboxd");
    pbx_up_arg(&a, "--incarnation=%u", pbx_up_incarnation(u));
    pbx_up_arg(&a, "%s/public.sock", u->dir);
    pbx_up_fds f = {.slot = slot,
                    .nslot = sizeof(slot) / sizeof(*slot),
                    .gate = gate[1],
                    .gate_slot = 2U};
    int rc = pbx_up_spawn(u, PBX_UP_POWERBOXD, &a, &f);
    (void)close(gate[1]);
    if (rc != 0) {
        (void)close(gate[0]);
        return -1;
    }
    pbx_up_open_gate(u, gate[0], u->proc[PBX_UP_POWERBOXD].pid);
    return pbx_up_report(u, w);
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
int pbx_up_kill_children(const pbx_up *u)
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

/* Detaches (lazily) what is still mounted at DIR/fuse: vfsd's FUSE
 * server, a child of vfsd that reparents here when vfsd ends, may have
 * been killed with the stack's other orphans before it detached its
 * mount itself; a dead mount would stay behind in DIR. Bounded: mounts
 * stacked by restarted vfsds are detached one per call. */
static void pbx_up_fuse_detach(const pbx_up *u)
{
    char path[PBX_UP_PATH_MAX];
    if (!pbx_up_path(u, "fuse", path)) {
        return;
    }
    int detached = 0;
    while (detached < 8 && umount2(path, MNT_DETACH) == 0) {
        detached++;
    }
    if (errno == EPERM) {
        /* Not root: the FUSE helper detaches the user's own mount. */
        pid_t p = fork();
        if (p == 0) {
            execlp("fusermount3", "fusermount3", "-u", "-z", "--", path,
                   (char *)NULL);
            _exit(127);
        }
        if (p > 0) {
            (void)waitpid(p, NULL, 0);
        }
    }
}

/* Stops powerboxd alone and waits for it (bounded: SIGKILL after
 * PBX_UP_TERM_MS), before any peer is signalled. Otherwise a peer's own
 * shutdown could still reach a live powerboxd and end grants in its name
 * (launchd ends its jobs on SIGTERM, and its EXPIRE would record a grant
 * live at the stop as expired), so what the log says of a grant live at
 * the stop would depend on which process the kernel ran first. */
static void pbx_up_stop_powerboxd_first(pbx_up *u)
{
    pbx_up_proc *pb = &u->proc[PBX_UP_POWERBOXD];
    if (pb->pid <= 0) {
        return;
    }
    (void)kill(pb->pid, SIGCONT);
    (void)kill(pb->pid, SIGTERM);
    int64_t end = pbx_up_now_ms() + PBX_UP_TERM_MS;
    bool killed = false;
    for (int r = 0; r < 100000 && pb->pid > 0; r++) {
        int64_t left = end - pbx_up_now_ms();
        if (left <= 0) {
            if (killed) {
                return;
            }
            pbx_up_note(u, "powerboxd still running after %d ms: SIGKILL",
                        PBX_UP_TERM_MS);
            (void)kill(pb->pid, SIGKILL);
            killed = true;
            end = pbx_up_now_ms() + PBX_UP_TERM_MS;
        }
        (void)pbx_up_pump(u, -1, left > 50 ? 50 : (int)(left > 0 ? left : 1));
    }
}

void pbx_up_stack_stop(pbx_up *u)
{
    u->stopping_stack = true;
    u->running = false;
    pbx_up_status_write(u);
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
    pbx_up_stop_powerboxd_first(u);
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
    pbx_up_fuse_detach(u);
    u->stopping_stack = false;
}
