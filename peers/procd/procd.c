/*
 * procd.c: the reference procd for the Linux host. Staged processes are a
 * table keyed by process id and generation: simulated ones (--stage) and
 * real ones that staged themselves over the --stage-sock socket (the
 * kernel names the caller, SO_PEERCRED; procd picks a fresh generation).
 * INSTALL places the received object descriptor into the exact slot of
 * that generation, hands a registered process a copy over its stage
 * connection (DELIVER, with the slot), and answers with a MANAGE_ONLY
 * revocation handle (one end of a fresh SEQPACKET socketpair). REVOKE
 * through the handle, or the handle's last close, drops procd's copy.
 * See docs/HOST.md ("procd", "Install mode on the host").
 *
 * The install table lives in memory only (no file is written on any
 * call): whoever connects to the --query socket is sent the rows as they
 * are at that moment, one line per installed grant, and the connection is
 * closed; a launched job (--jobs-below) or a process past --max-per-pid
 * is sent one "refused: WHY" line instead.
 *
 * Each install remembers the route its INSTALL came on: when that route
 * closes, the powerboxd on it can no longer revoke through it, so every
 * such install is dropped (procd closes its copy of the object) and
 * logged. With --attach-fd the supervisor hands procd new routes ('R')
 * and procd may start with none.
 *
 *   pbx-procd [--stage PID:GEN ...] [--stage-sock PATH]
 *             [--route-fd N] [--query PATH] [--jobs-below PID]
 *             [--max-per-pid N] [--attach-fd N] [--ready-fd N]
 *             [--installs N]
 *   pbx-procd -h | --help
 *
 * --installs N (1..4096, default 64) sizes the install table: at most N
 * grants installed at once, an INSTALL beyond refused BUSY. Its storage
 * is static and fixed at startup, and the descriptor limit is raised to
 * hold two descriptors per install (or startup fails).
 */
/* accept4 is a Linux extension. */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "peers/common/pbx_peer_attach.h"
#include "peers/common/pbx_peer_fdlimit.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_proc.h"
#include "peers/lib/pbx_peer_stage.h"
#include "peers/procd/procd.h"

/* The usage, printed by -h (stdout) and after a bad command line. */
#define PROCD_USAGE                                                            \
    "usage: pbx-procd [--stage PID:GEN ...] [--stage-sock PATH]\n"             \
    "                 [--route-fd N] [--query PATH] [--jobs-below PID]\n"      \
    "                 [--max-per-pid N] [--attach-fd N] [--ready-fd N]\n"      \
    "                 [--installs N]\n"                                        \
    "       pbx-procd -h | --help\n"                                           \
    "--installs N (1..4096, default 64): grants installed at once; an\n"       \
    "INSTALL beyond is refused BUSY. See docs/HOST.md.\n"

procd g_procd;

/* The epoll set of the live revocation handles (-1 until main makes it).
 * Each handle is added at INSTALL and removed before it is closed (or
 * when it hangs up: the row then waits out its grace unwatched), tagged
 * with its row and descriptor, so a ready handle maps to its row in O(1)
 * and a round costs the same whatever the live installs (issue 23 item
 * 3). The set sits in each round's poll set beside procd's fixed few
 * descriptors (attach channel, query readers, stages, routes). */
static int g_procd_ep = -1;

/* Handle events one round takes from the set: level-triggered, so what a
 * round leaves is reported again by the next (a bound on a round's work
 * that does not grow with the table). */
#define PROCD_HANDLE_EVENTS 64U

/* Adds live row's handle to the set; a failure is logged (the handle then
 * goes unserved until its route or a REVOKE-less hang-up is seen). */
static void procd_watch(size_t row)
{
    int fd = g_procd.tab.rows[row].handle;
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = EPOLLIN;
    ev.data.u64 = (uint64_t)row << 32 | (uint32_t)fd;
    if (g_procd_ep >= 0 && fd >= 0 &&
        epoll_ctl(g_procd_ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        pbx_peer_log("procd", "epoll_ctl of handle %d: %s", fd,
                     strerror(errno));
    }
}

/* Removes handle fd from the set (before it is closed); absent is fine. */
static void procd_unwatch(int fd)
{
    if (g_procd_ep >= 0 && fd >= 0) {
        (void)epoll_ctl(g_procd_ep, EPOLL_CTL_DEL, fd, NULL);
    }
}

/* The monotonic clock in milliseconds (query deadlines). */
uint64_t procd_mono_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000U + (uint64_t)ts.tv_nsec / 1000000U;
}

/* Replies to the current message with an error status. */
static void procd_fail(int fd, uint32_t status, const char *what)
{
    pbx_peer_log("procd", "%s: %s", what, pbx_peer_status_text(status));
    (void)pbx_peer_io_reply_status(fd, &g_procd.msg, status);
}

/* Drops row: closes the installed object and procd's handle end. */
static void procd_drop(size_t row, const char *why)
{
    const pbx_peer_install_row *r = &g_procd.tab.rows[row];
    pbx_peer_log("procd", "%s: grant %u.%u leaves process %llu slot %u", why,
                 r->grant.index, r->grant.gen,
                 (unsigned long long)r->target.process_id, r->target.slot);
    int fds[2] = {-1, -1};
    procd_unhang(row);
    pbx_peer_proctab_drop(&g_procd.tab, row, &fds[0], &fds[1]);
    procd_unwatch(fds[1]);
    pbx_peer_io_close_all(fds, 2);
}

/* Encodes and sends the INSTALL reply with the handle's other end. */
static bool procd_install_reply(int fd, const pbx_ipc_install *rq, int cap)
{
    pbx_ipc_install_reply rep;
    memset(&rep, 0, sizeof(rep));
    rep.handle_kind = PBX_IPC_HANDLE_MANAGE_ONLY;
    rep.installed_slot = rq->target.slot;
    rep.grant = rq->grant;
    rep.target_process_id = rq->target.process_id;
    rep.target_process_gen = rq->target.process_gen;
    size_t n = 0;
    pbx_err e = pbx_ipc_install_reply_encode(
        g_procd.msg.frame.request, &rep, g_procd.out, sizeof(g_procd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    return pbx_peer_io_reply(fd, &g_procd.msg, g_procd.out, n, cap) == 0;
}

/* Hands the stage connection of rq's target, when it is a registered
 * process, a copy of object with its slot (DELIVER); true when the target
 * is simulated or the copy went out. Never waits: a process that does not
 * read its stage connection gets its INSTALL refused. */
static bool procd_deliver(const pbx_ipc_install *rq, int object)
{
    int conn = pbx_peer_proctab_conn(&g_procd.tab, &rq->target);
    if (conn < 0) {
        return true;
    }
    pbx_peer_deliver d = {rq->target.slot, rq->grant, rq->operation};
    uint8_t buf[PBX_PEER_STAGE_FRAME_MAX];
    size_t n = 0;
    if (pbx_peer_deliver_encode(&d, ++g_procd.deliver_seq, buf, sizeof(buf),
                                &n) != PBX_OK ||
        pbx_peer_io_send_fds(conn, buf, n, &object, 1U, MSG_DONTWAIT) != 0) {
        pbx_peer_log("procd", "DELIVER to process %llu slot %u failed: %s",
                     (unsigned long long)rq->target.process_id, rq->target.slot,
                     strerror(errno));
        return false;
    }
    pbx_peer_log("procd", "DELIVER grant %u.%u to process %llu slot %u",
                 rq->grant.index, rq->grant.gen,
                 (unsigned long long)rq->target.process_id, rq->target.slot);
    return true;
}

/* An INSTALL into the slot of an install whose handle hung up within the
 * grace: powerboxd closed that handle to revoke it before it sent this
 * INSTALL (it installs into a slot only once what was there is revoked),
 * so that hang-up is a revocation, ended now so the slot is free. */
static void procd_settle_slot(const pbx_ipc_install *rq)
{
    /* At most one live row holds that slot of that process: the target
     * index names it, so no INSTALL walks the table. */
    size_t row = pbx_peer_procix_target(&g_procd.tab, rq->target.process_id,
                                        rq->target.slot);
    if (row < g_procd.tab.cap && g_procd.hung_ms[row] != 0U) {
        procd_drop(row, "handle closed");
    }
}

/* INSTALL on the route: the object goes into the exact staged slot. */
static void procd_install(int fd)
{
    pbx_peer_msg *m = &g_procd.msg;
    pbx_ipc_install rq;
    pbx_err e = pbx_ipc_install_decode(&m->frame, &rq);
    if (e != PBX_OK || m->nfds != 1U) {
        pbx_peer_io_close_all(m->fds, m->nfds);
        procd_fail(fd, e != PBX_OK ? (uint32_t)e : PBX_E_IPC_CAP_COUNT,
                   "INSTALL malformed");
        return;
    }
    procd_settle_slot(&rq);
    size_t row = 0;
    uint32_t st = pbx_peer_proctab_install_check(&g_procd.tab, &rq, &row);
    int h[2] = {-1, -1};
    if (st == 0U &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, h) != 0) {
        st = PBX_PEER_E_INTERNAL;
    }
    if (st == 0U && !procd_deliver(&rq, m->fds[0])) {
        pbx_peer_io_close_all(h, 2);
        st = PBX_PEER_E_INTERNAL;
    }
    if (st != 0U) {
        pbx_peer_io_close_all(m->fds, m->nfds);
        procd_fail(fd, st, "INSTALL");
        return;
    }
    pbx_peer_proctab_install_apply_on(&g_procd.tab, row, &rq, m->fds[0], h[0],
                                      fd);
    procd_watch(row);
    m->fds[0] = -1;
    pbx_peer_log(
        "procd", "INSTALL grant %u.%u into process %llu gen %u slot %u",
        rq.grant.index, rq.grant.gen, (unsigned long long)rq.target.process_id,
        rq.target.process_gen, rq.target.slot);
    if (!procd_install_reply(fd, &rq, h[1])) {
        pbx_peer_log("procd", "INSTALL reply failed: %s", strerror(errno));
        procd_drop(row, "undeliverable install");
    }
    (void)close(h[1]);
}

/* Whether route rf has hung up, polling every route once per sweep (q
 * holds that poll, *polled whether it was made). A powerboxd that dies
 * closes its route (a low descriptor) and then every handle, so a
 * handle's hang-up is then not a revocation but the route's loss. */
static bool procd_route_hung(int rf, struct pollfd *q, bool *polled)
{
    size_t n = g_procd.nroutes;
    if (!*polled) {
        for (size_t i = 0; i < n; i++) {
            q[i] = (struct pollfd){g_procd.routes[i], POLLRDHUP, 0};
        }
        if (poll(q, (nfds_t)n, 0) < 0) {
            for (size_t i = 0; i < n; i++) {
                q[i].revents = 0;
            }
        }
        *polled = true;
    }
    for (size_t i = 0; rf >= 0 && i < n; i++) {
        if (q[i].fd == rf) {
            return (q[i].revents & (POLLHUP | POLLRDHUP | POLLERR)) != 0;
        }
    }
    return false;
}

/* Ends the installs whose handle hung up PROCD_HANDLE_GRACE_MS ago while
 * their route still stands: powerboxd revoked them by closing the handle.
 * Looks at the hung rows only (their list), backwards, so the row a drop
 * moves into a place was looked at already; the routes are polled once,
 * and only when a row is due. Returns whether any hung-up handle is
 * still waiting (the next poll must then wake up to sweep again). */
static bool procd_hung_sweep(void)
{
    bool waiting = false;
    if (g_procd.nhung == 0U) {
        /* The usual round: no handle hung up, nothing to look at. */
        return false;
    }
    uint64_t now = procd_mono_ms();
    struct pollfd q[PROCD_ROUTES_MAX];
    bool polled = false;
    for (size_t k = g_procd.nhung; k > 0U; k--) {
        size_t row = g_procd.hung[k - 1U];
        if (now < g_procd.hung_ms[row]) {
            waiting = true;
        } else if (!procd_route_hung(g_procd.tab.rows[row].route, q, &polled)) {
            procd_drop(row, "handle closed");
        }
    }
    return waiting;
}

/* A message (or hang-up) on the revocation handle of row. A hang-up is
 * not acted on at once: the row stops being polled and, unless its route
 * hangs up meanwhile (then procd_route_lost records the route's loss),
 * counts as a revocation PROCD_HANDLE_GRACE_MS later (procd_hung_sweep). */
static void procd_handle(size_t row)
{
    pbx_peer_msg *m = &g_procd.msg;
    int fd = g_procd.tab.rows[row].handle;
    int r = pbx_peer_io_recv_frame(fd, m);
    if (r == 1) {
        /* Unwatched: the hang-up would be reported on every wait. */
        procd_unwatch(fd);
        procd_hang(row, procd_mono_ms() + PROCD_HANDLE_GRACE_MS);
        return;
    }
    if (r != 0) {
        procd_drop(row, "handle failed");
        return;
    }
    if (m->err != PBX_OK) {
        procd_fail(fd, (uint32_t)m->err, "malformed frame on a handle");
        return;
    }
    pbx_ipc_revoke rq;
    pbx_err e = pbx_ipc_revoke_decode(&m->frame, &rq);
    pbx_peer_io_close_all(m->fds, m->nfds);
    if (e != PBX_OK) {
        pbx_peer_log("procd", "%s on a handle refused",
                     pbx_ipc_op_name(m->frame.op));
        procd_fail(fd,
                   m->frame.op == PBX_IPC_OP_REVOKE ? (uint32_t)e
                                                    : PBX_PEER_E_ROUTE,
                   "on a handle");
        return;
    }
    uint32_t st = pbx_peer_proctab_revoke_check(&g_procd.tab, row, &rq);
    if (st != 0U) {
        procd_fail(fd, st, "REVOKE");
        return;
    }
    pbx_ipc_revoke_ack ack = {rq.grant};
    size_t n = 0;
    e = pbx_ipc_revoke_reply_encode(m->frame.request, &ack, g_procd.out,
                                    sizeof(g_procd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    /* Drop first: the ack must never precede the revocation. */
    int object = -1;
    int handle = -1;
    pbx_peer_log("procd", "REVOKE grant %u.%u", rq.grant.index, rq.grant.gen);
    procd_unhang(row);
    pbx_peer_proctab_drop(&g_procd.tab, row, &object, &handle);
    procd_unwatch(handle);
    (void)close(object);
    if (pbx_peer_io_reply(handle, m, g_procd.out, n, -1) != 0) {
        pbx_peer_log("procd", "REVOKE ack failed: %s", strerror(errno));
    }
    (void)close(handle);
}

/* Ends stage connection i: its process is no longer staged. */
static void procd_stage_end(size_t i, const char *why)
{
    uint64_t pid = 0;
    if (pbx_peer_proctab_unstage(&g_procd.tab, g_procd.stages[i], &pid)) {
        pbx_peer_log("procd", "process %llu unstaged: %s",
                     (unsigned long long)pid, why);
    }
    (void)close(g_procd.stages[i]);
    g_procd.stages[i] = -1;
}

/* Answers the message in g_procd.msg on stage connection i with status
 * st (and gen when st is 0); ends the connection when that fails. */
static void procd_stage_reply(size_t i, uint32_t st, uint32_t gen)
{
    uint8_t buf[PBX_PEER_STAGE_FRAME_MAX];
    size_t n = 0;
    uint32_t seq = pbx_peer_io_msg_seq(&g_procd.msg);
    if (pbx_peer_stage_reply_encode((uint16_t)st, gen, seq, buf, sizeof(buf),
                                    &n) != PBX_OK ||
        pbx_peer_io_send_fds(g_procd.stages[i], buf, n, NULL, 0U,
                             MSG_DONTWAIT) != 0) {
        procd_stage_end(i, "its STAGE reply failed");
    }
}

/* A STAGE (or hang-up) on stage connection i: the process the kernel
 * names as the connection's peer is staged with a fresh generation, when
 * it names itself. */
static void procd_stage(size_t i)
{
    int fd = g_procd.stages[i];
    pbx_peer_msg *m = &g_procd.msg;
    int r = pbx_peer_io_recv_raw(fd, m, MSG_DONTWAIT);
    if (r != 0) {
        if (r > 0 || errno != EAGAIN) {
            procd_stage_end(i, r > 0 ? "connection closed" : strerror(errno));
        }
        return;
    }
    pbx_peer_stage_frame f;
    memset(&f, 0, sizeof(f));
    pbx_err e = pbx_peer_stage_decode(m->buf, m->len, m->nfds, &f);
    pbx_peer_io_close_all(m->fds, m->nfds);
    uint32_t st = e != PBX_OK                 ? (uint32_t)e
                  : f.op != PBX_PEER_OP_STAGE ? PBX_PEER_E_ROUTE
                                              : 0U;
    struct ucred cr = {0, 0, 0};
    socklen_t cl = sizeof(cr);
    if (st == 0U && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) != 0) {
        st = PBX_PEER_E_INTERNAL;
    }
    uint32_t gen = 0;
    if (st == 0U) {
        st = pbx_peer_proctab_register(&g_procd.tab, f.pid, (uint64_t)cr.pid,
                                       fd, &gen);
    }
    if (st == 0U) {
        pbx_peer_log("procd", "STAGE process %llu gen %u",
                     (unsigned long long)f.pid, gen);
    } else {
        pbx_peer_log("procd",
                     "STAGE refused (process %llu, connection of "
                     "%lld): %s",
                     (unsigned long long)f.pid, (long long)cr.pid,
                     pbx_peer_status_text(st));
    }
    procd_stage_reply(i, st, gen);
}

/* Takes one stage connection (the listener is polled only while an
 * entry is free). */
static void procd_stage_accept(void)
{
    int fd = accept4(g_procd.stage_fd, NULL, NULL, SOCK_CLOEXEC);
    for (size_t i = 0; fd >= 0 && i < PROCD_STAGES_MAX; i++) {
        if (g_procd.stages[i] < 0) {
            g_procd.stages[i] = fd;
            return;
        }
    }
    if (fd >= 0) {
        (void)close(fd);
    }
}

/* Fills q[0..PROCD_STAGES_MAX] with the stage listener (only while an
 * entry is free) and the stage connections. */
static void procd_poll_stages(struct pollfd *q)
{
    bool room = false;
    for (size_t i = 0; i < PROCD_STAGES_MAX; i++) {
        q[1U + i] = (struct pollfd){g_procd.stages[i], POLLIN, 0};
        room = room || g_procd.stages[i] < 0;
    }
    q[0] = (struct pollfd){room ? g_procd.stage_fd : -1, POLLIN, 0};
}

/* Serves the stage connections and the stage listener after poll. */
static void procd_serve_stages(const struct pollfd *q)
{
    for (size_t i = 0; i < PROCD_STAGES_MAX; i++) {
        if (g_procd.stages[i] >= 0 && q[1U + i].revents != 0) {
            procd_stage(i);
        }
    }
    if ((q[0].revents & POLLIN) != 0) {
        procd_stage_accept();
    }
}

/* Serves one message on route i; false when the route must be closed. */
static bool procd_route(int fd)
{
    pbx_peer_msg *m = &g_procd.msg;
    int r = pbx_peer_io_recv_frame(fd, m);
    if (r != 0) {
        return r < 0 && errno == EMSGSIZE;
    }
    if (m->err != PBX_OK) {
        procd_fail(fd, (uint32_t)m->err, "malformed frame");
    } else if (m->frame.op == PBX_IPC_OP_INSTALL) {
        procd_install(fd);
    } else {
        pbx_peer_io_close_all(m->fds, m->nfds);
        pbx_peer_log("procd", "%s on the route refused",
                     pbx_ipc_op_name(m->frame.op));
        procd_fail(fd, PBX_PEER_E_ROUTE, "wrong connection for the op");
    }
    return true;
}

/* Route fd closed: the powerboxd on it can no longer revoke through it,
 * so every install that came on it is dropped (procd's copy of the
 * object and its handle end closed), logged one line each, then
 * counted. */
static void procd_route_lost(int fd)
{
    /* One walk for the whole event (a route's loss ends every install on
     * it), never one per install. */
    size_t n = 0;
    for (size_t row = 0; fd >= 0 && row < g_procd.tab.cap; row++) {
        const pbx_peer_install_row *r = &g_procd.tab.rows[row];
        if (!r->live || r->route != fd) {
            continue;
        }
        pbx_peer_log("procd",
                     "INSTALL ended grant %u.%u: route closed (broker lost)",
                     r->grant.index, r->grant.gen);
        int fds[2] = {-1, -1};
        procd_unhang(row);
        pbx_peer_proctab_drop(&g_procd.tab, row, &fds[0], &fds[1]);
        procd_unwatch(fds[1]);
        pbx_peer_io_close_all(fds, 2);
        n++;
    }
    pbx_peer_log("procd", "route closed: %zu install(s) ended (broker lost)",
                 n);
}

/* Serves the attach channel: one message (a new route), or its end (the
 * supervisor is gone: the channel is closed and procd keeps serving). */
static void procd_attach(void)
{
    static pbx_peer_attach_msg m;
    if (pbx_peer_attach_next(&g_procd.attach_fd, "procd", &m)) {
        pbx_peer_attach_adopt(g_procd.attach_fd, &m, "procd", g_procd.routes,
                              &g_procd.nroutes, PROCD_ROUTES_MAX);
    }
}

/* Serves the handles the set reports ready (its poll entry was): each
 * event names its row and descriptor, served only while that row is live,
 * not hung up, and still holds that descriptor (a drop this round may
 * have ended it). */
static void procd_serve_handles(void)
{
    static struct epoll_event evs[PROCD_HANDLE_EVENTS];
    int n = epoll_wait(g_procd_ep, evs, (int)PROCD_HANDLE_EVENTS, 0);
    for (int i = 0; i < n; i++) {
        size_t row = (size_t)(evs[i].data.u64 >> 32);
        int fd = (int)(uint32_t)evs[i].data.u64;
        if (row < g_procd.tab.cap && g_procd.tab.rows[row].live &&
            g_procd.hung_ms[row] == 0U && g_procd.tab.rows[row].handle == fd) {
            procd_handle(row);
        }
    }
}

/* One poll round over the routes, the query readers, the stages and the
 * handles' epoll set (one entry, whatever the live installs). */
static int procd_round(void)
{
    struct pollfd
        p[5U + PROCD_READERS_MAX + PROCD_STAGES_MAX + PROCD_ROUTES_MAX];
    size_t n = 0;
    size_t a0 = n;
    p[n++] = (struct pollfd){g_procd.attach_fd, POLLIN, 0};
    bool reading = procd_poll_readers(&p[n]);
    n += 1U + PROCD_READERS_MAX;
    size_t s0 = n;
    procd_poll_stages(&p[s0]);
    n += 1U + PROCD_STAGES_MAX;
    size_t r0 = n;
    for (size_t i = 0; i < g_procd.nroutes; i++) {
        p[n++] = (struct pollfd){g_procd.routes[i], POLLIN, 0};
    }
    size_t h0 = n;
    p[n++] = (struct pollfd){g_procd_ep, POLLIN, 0};
    int wait = reading ? (int)PROCD_READER_MS / 10 : -1;
    if (procd_hung_sweep()) {
        wait = 10;
    }
    if (poll(p, (nfds_t)n, wait) < 0) {
        return errno == EINTR ? 0 : -1;
    }
    /* Stage hang-ups first: an INSTALL read in the same round for a
     * process whose stage just ended is then refused UNKNOWN. */
    procd_serve_stages(&p[s0]);
    size_t nr = g_procd.nroutes;
    if (p[h0].revents != 0) {
        procd_serve_handles();
    }
    for (size_t k = nr; k > 0U; k--) {
        if (p[r0 + k - 1U].revents != 0 &&
            !procd_route(g_procd.routes[k - 1U])) {
            int fd = g_procd.routes[k - 1U];
            g_procd.routes[k - 1U] = g_procd.routes[--g_procd.nroutes];
            procd_route_lost(fd);
            (void)close(fd);
        }
    }
    procd_serve_readers(&p[a0 + 1U]);
    if (p[a0].revents != 0 && g_procd.attach_fd >= 0) {
        procd_attach();
    }
    return 0;
}

/* Handles one option pair; false with a message when it is invalid. */
static bool procd_option(const char *k, const char *v, int *ready_fd)
{
    uint64_t a = 0;
    uint64_t b = 0;
    if (strcmp(k, "--stage") == 0) {
        if (!pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &a, &b) ||
            pbx_peer_proctab_stage(&g_procd.tab, a, (uint32_t)b) != 0U) {
            pbx_peer_log("procd", "bad --stage '%s' (PID:GEN, GEN > 0)", v);
            return false;
        }
        return true;
    }
    int adm = pbx_peer_admit_option(&g_procd.admit, k, v, PROCD_READERS_MAX);
    if (adm != 0) {
        if (adm < 0) {
            pbx_peer_log("procd", "invalid %s '%s'", k, v);
        }
        return adm > 0;
    }
    int fd = -1;
    if (strcmp(k, "--installs") == 0) {
        /* Applied before the others (procd_installs_arg). */
        return true;
    }
    if (strcmp(k, "--route") == 0) {
        pbx_peer_log("procd",
                     "bad argument: --route '%s': procd listens for no route "
                     "(its first connector would become one); use --route-fd "
                     "or the attach channel",
                     v);
        return false;
    } else if (strcmp(k, "--route-fd") == 0 &&
               g_procd.nroutes < PROCD_ROUTES_MAX) {
        fd = pbx_peer_io_fd_arg(v);
        g_procd.routes[g_procd.nroutes++] = fd;
    } else if (strcmp(k, "--ready-fd") == 0) {
        fd = pbx_peer_io_fd_arg(v);
        *ready_fd = fd;
    } else if (strcmp(k, "--attach-fd") == 0 && g_procd.attach_fd < 0) {
        fd = pbx_peer_io_fd_arg(v);
        g_procd.attach_fd = fd;
    } else if (strcmp(k, "--query") == 0) {
        /* Mode 0600: the rows name the user's grants. */
        fd = pbx_peer_io_listen_private(v, SOCK_STREAM);
        if (fd >= 0 && listen(fd, 16) != 0) {
            (void)close(fd);
            fd = -1;
        }
        g_procd.query_fd = fd;
    } else if (strcmp(k, "--stage-sock") == 0 && g_procd.stage_fd < 0) {
        /* Mode 0600: only the user's own processes stage themselves. */
        fd = pbx_peer_io_listen_private(v, SOCK_SEQPACKET);
        g_procd.stage_fd = fd;
    } else {
        pbx_peer_log("procd", "unknown option '%s'", k);
        return false;
    }
    if (fd < 0) {
        pbx_peer_log("procd", "cannot use %s '%s'", k, v);
        return false;
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return true;
}

/* Takes --installs from argv (the last one wins) into g_procd.installs
 * before any other option is applied; false after a message naming a bad
 * value (a decimal 1..PBX_PEER_PROC_INSTALLS_CAP). */
static bool procd_installs_arg(int argc, char **argv)
{
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--installs") != 0) {
            continue;
        }
        char *end = NULL;
        errno = 0;
        long n = strtol(argv[i + 1], &end, 10);
        if (end == argv[i + 1] || *end != '\0' || errno != 0 || n < 1L ||
            n > (long)PBX_PEER_PROC_INSTALLS_CAP) {
            pbx_peer_log("procd", "bad argument: --installs '%s' (1..%u)",
                         argv[i + 1], PBX_PEER_PROC_INSTALLS_CAP);
            return false;
        }
        g_procd.installs = (size_t)n;
    }
    return true;
}

/* Sizes the install table for --installs (static storage, only the rows
 * in use touched) and raises the soft RLIMIT_NOFILE, at most to the hard
 * limit, to hold every install's two descriptors beside procd's own
 * (PROCD_FDS_BASE); false after a message when the hard limit is too low,
 * so a too-large table fails at startup, never later with EMFILE. */
static bool procd_table_start(void)
{
    size_t n = g_procd.installs;
    rlim_t want = (rlim_t)(PROCD_FDS_BASE + n * PROCD_FDS_PER_INSTALL);
    if (!pbx_peer_fdlimit_raise("procd", "--installs", n, "installs", want)) {
        return false;
    }
    pbx_peer_proctab_init_cap(&g_procd.tab, n);
    return true;
}

/* Names the first word in an option position of argv that is not one of
 * procd's options, on one line; false then. Checked before any option is
 * applied, so a typo never leaves a half-opened socket behind. */
static bool procd_known_options(int argc, char **argv)
{
    static const char *const known[] = {
        "--stage",       "--stage-sock", "--route",     "--route-fd",
        "--ready-fd",    "--query",      "--attach-fd", "--jobs-below",
        "--max-per-pid", "--installs"};
    for (int i = 1; i < argc; i += 2) {
        bool found = false;
        for (size_t j = 0; j < sizeof(known) / sizeof(known[0]); j++) {
            found = found || strcmp(argv[i], known[j]) == 0;
        }
        if (!found) {
            pbx_peer_log("pbx-procd",
                         "unknown option '%s' (try 'pbx-procd --help')",
                         argv[i]);
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    int ready_fd = -1;
    g_procd.query_fd = -1;
    g_procd.stage_fd = -1;
    g_procd.attach_fd = -1;
    g_procd.admit = (pbx_peer_admit){0, PROCD_READERS_PER_PID};
    for (size_t i = 0; i < PROCD_STAGES_MAX; i++) {
        g_procd.stages[i] = -1;
    }
    for (size_t i = 0; i < PROCD_READERS_MAX; i++) {
        g_procd.readers[i].fd = -1;
    }
    g_procd.installs = PBX_PEER_PROC_INSTALLS_MAX;
    if (argc == 2 &&
        (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        (void)fputs(PROCD_USAGE, stdout);
        return 0;
    }
    /* No argument at all is a usage error too: a procd with no staged
     * process and no route would serve nothing forever. The table is sized
     * before any option is applied (--stage fills it). */
    if (!procd_known_options(argc, argv) || !procd_installs_arg(argc, argv)) {
        return 2;
    }
    if (!procd_table_start()) {
        return 1;
    }
    bool ok = argc > 1 && (argc % 2) == 1;
    for (int i = 1; ok && i + 1 < argc; i += 2) {
        ok = procd_option(argv[i], argv[i + 1], &ready_fd);
    }
    if (!ok) {
        (void)fputs(PROCD_USAGE, stderr);
        return 2;
    }
    pbx_peer_log("procd", "ready: %zu staged process(es), %zu install row(s)",
                 g_procd.tab.staged_count, g_procd.tab.cap);
    g_procd_ep = epoll_create1(EPOLL_CLOEXEC);
    if (g_procd_ep < 0) {
        pbx_peer_log("procd", "epoll_create1 failed: %s", strerror(errno));
        return 1;
    }
    pbx_peer_io_ready(ready_fd);
    /* A test aid, on only where a test sets PBX_PROCD_CHECK_INDEX (make
     * peers-test and the e2e runner do): every index is recomputed by
     * walking after each round, and a drift, always a bug, stops procd at
     * once with its reason. */
    bool check = getenv("PBX_PROCD_CHECK_INDEX") != NULL;
    for (;;) {
        if (procd_round() != 0) {
            pbx_peer_log("procd", "poll failed: %s", strerror(errno));
            return 1;
        }
        const char *drift = check ? procd_index_check() : NULL;
        if (drift != NULL) {
            pbx_peer_log("procd", "index drift: %s", drift);
            abort();
        }
    }
}
