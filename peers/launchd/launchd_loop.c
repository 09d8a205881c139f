/*
 * launchd_loop.c: launchd's event loop. Every descriptor launchd waits on
 * (the broker, the wake route, the attach channel, the hold listener and
 * subscriber, the control listener, the SIGCHLD pipe, the hold file's
 * inotify descriptor, every connection and every pty relay's descriptors)
 * sits in one epoll set. A connection is added when its slot gets its
 * descriptor and removed before it is closed; a relay's descriptors are
 * set before each wait to what the relay can move (a relay is one of the
 * few live ones, listed apart); the lone descriptors are compared with
 * their registration before each wait (a constant number). Each
 * registration carries its kind, its slot and its generation, so a ready
 * descriptor maps to its owner in O(1) and an event for a slot closed and
 * reused since is ignored: a pass costs what is ready, never the 768
 * connection slots (issue 23 item 2; docs/BENCH.md, launchd's row).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* Events one epoll_wait hands back: level-triggered, so what a pass
 * leaves unserved is reported again by the next one. */
#define LAUNCHD_LOOP_EVENTS 64U

uint64_t launchd_loop_tag(unsigned kind, uint32_t index, uint32_t gen)
{
    return (uint64_t)kind << 56 | (uint64_t)(index & 0x00FFFFFFU) << 32 | gen;
}

void launchd_loop_want(launchd_srv *srv, int fd, uint32_t *have, uint32_t want,
                       uint64_t tag)
{
    if (*have == want || srv->ep < 0 || fd < 0) {
        return;
    }
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = want;
    ev.data.u64 = tag;
    /* Not registered while nothing is wanted: a registration always
     * reports hang-up, which a level-triggered set repeats every wait. */
    int op = want == 0U    ? EPOLL_CTL_DEL
             : *have == 0U ? EPOLL_CTL_ADD
                           : EPOLL_CTL_MOD;
    if (epoll_ctl(srv->ep, op, fd, &ev) != 0) {
        pbx_peer_log("launchd", "epoll_ctl(%d) of descriptor %d: %s", op, fd,
                     strerror(errno));
        return;
    }
    *have = want;
}

void launchd_loop_forget(launchd_srv *srv, int fd)
{
    if (srv->ep < 0 || fd < 0) {
        return;
    }
    (void)epoll_ctl(srv->ep, EPOLL_CTL_DEL, fd, NULL);
    for (unsigned k = 0; k < LAUNCHD_EV_KINDS; k++) {
        if (srv->reg_fd[k] == fd) {
            srv->reg_fd[k] = -1;
            srv->reg_ev[k] = 0U;
        }
    }
}

void launchd_loop_watch_conn(launchd_srv *srv, uint32_t ci)
{
    const launchd_conn *c = &srv->conns[ci];
    uint32_t have = 0U;
    launchd_loop_want(srv, c->fd, &have, EPOLLIN,
                      launchd_loop_tag(LAUNCHD_EV_CONN, ci, c->gen));
}

/* The descriptor of lone kind k now, and what it is wanted for. */
static int launchd_loop_lone(const launchd_srv *srv, unsigned k, uint32_t *want)
{
    static const int none = -1;
    const int *fd = k == LAUNCHD_EV_BROKER    ? &srv->broker
                    : k == LAUNCHD_EV_WAKE    ? &srv->wake
                    : k == LAUNCHD_EV_ATTACH  ? &srv->attach
                    : k == LAUNCHD_EV_TTYD    ? &srv->ttyd_fd
                    : k == LAUNCHD_EV_HOLD    ? &srv->hold_listen
                    : k == LAUNCHD_EV_CONTROL ? &srv->control
                    : k == LAUNCHD_EV_WATCH   ? &srv->hold_watch
                    : k == LAUNCHD_EV_CHLD    ? &srv->chld_r
                                              : &none;
    /* With --wake-hold-file present the wake route is left unread. */
    *want = *fd < 0 || (k == LAUNCHD_EV_WAKE && srv->wake_held)
                ? 0U
                : (uint32_t)EPOLLIN;
    return *fd;
}

static void launchd_loop_fill(launchd_srv *srv);

/* Sets each lone descriptor's registration to what it is now. One whose
 * descriptor changed without launchd_loop_forget (the attach channel,
 * closed in the shared attach code) may live on in a forked child's copy:
 * then the set is made again first (at most once per such close). */
static void launchd_loop_lones(launchd_srv *srv)
{
    uint32_t want = 0U;
    for (unsigned k = 0; k < LAUNCHD_EV_KINDS; k++) {
        if (srv->reg_fd[k] >= 0 &&
            srv->reg_fd[k] != launchd_loop_lone(srv, k, &want)) {
            (void)close(srv->ep);
            launchd_loop_fill(srv);
            break;
        }
    }
    for (unsigned k = 0; k < LAUNCHD_EV_KINDS; k++) {
        int fd = launchd_loop_lone(srv, k, &want);
        if (fd < 0) {
            continue;
        }
        launchd_loop_want(srv, fd, &srv->reg_ev[k], want,
                          launchd_loop_tag(k, 0U, (uint32_t)fd));
        srv->reg_fd[k] = srv->reg_ev[k] != 0U ? fd : -1;
    }
}

/* A fresh set holding the connections (the lone descriptors and relays
 * are registered again by the next pass); -1 in srv->ep if none can be
 * made (logged; launchd then only runs its timers). */
static void launchd_loop_fill(launchd_srv *srv)
{
    srv->ep = epoll_create1(EPOLL_CLOEXEC);
    if (srv->ep < 0) {
        pbx_peer_log("launchd", "epoll set: %s", strerror(errno));
        return;
    }
    for (unsigned k = 0; k < LAUNCHD_EV_KINDS; k++) {
        srv->reg_fd[k] = -1;
        srv->reg_ev[k] = 0U;
    }
    for (uint32_t ci = 0; ci < LAUNCHD_CONNS_CAP; ci++) {
        if (srv->conns[ci].fd >= 0) {
            launchd_loop_watch_conn(srv, ci);
        }
    }
    for (uint32_t i = 0; i < srv->npty && i < LAUNCHD_JOBS_CAP; i++) {
        launchd_pty *t = &srv->jobs[srv->pty_jobs[i]].pty;
        memset(t->ev, 0, sizeof(t->ev));
    }
}

bool launchd_loop_start(launchd_srv *srv)
{
    launchd_loop_fill(srv);
    return srv->ep >= 0;
}

/* Serves one event tagged tag. */
static void launchd_loop_event(launchd_srv *srv, uint64_t tag)
{
    unsigned kind = (unsigned)(tag >> 56);
    uint32_t index = (uint32_t)(tag >> 32) & 0x00FFFFFFU;
    uint32_t gen = (uint32_t)tag;
    uint32_t want = 0U;
    if (kind == LAUNCHD_EV_CONN) {
        if (index < LAUNCHD_CONNS_CAP && srv->conns[index].fd >= 0 &&
            srv->conns[index].gen == gen) {
            launchd_conn_frame(srv, index);
        }
        return;
    }
    if (kind == LAUNCHD_EV_PTY) {
        launchd_pty_input(srv, index / LAUNCHD_PTY_FDS, index % LAUNCHD_PTY_FDS,
                          gen);
        return;
    }
    /* A lone descriptor closed (or replaced) earlier this pass. */
    int fd = launchd_loop_lone(srv, kind, &want);
    if (fd < 0 || (uint32_t)fd != gen || want == 0U) {
        return;
    }
    switch (kind) {
    case LAUNCHD_EV_BROKER:
        launchd_broker_input(srv);
        break;
    case LAUNCHD_EV_WAKE:
        launchd_wake_input(srv);
        break;
    case LAUNCHD_EV_ATTACH:
        launchd_attach_input(srv);
        break;
    case LAUNCHD_EV_TTYD:
        launchd_hold_input(srv);
        break;
    case LAUNCHD_EV_HOLD:
        launchd_hold_accept(srv);
        break;
    case LAUNCHD_EV_CONTROL:
        launchd_accept(srv);
        break;
    case LAUNCHD_EV_WATCH:
        launchd_events_watch(srv);
        break;
    default:
        launchd_events_chld(srv);
        break;
    }
}

void launchd_loop_pass(launchd_srv *srv)
{
    static struct epoll_event evs[LAUNCHD_LOOP_EVENTS];
    launchd_loop_lones(srv);
    launchd_pty_arm(srv);
    int wait = launchd_timer_wait(&srv->timer, srv->now, LAUNCHD_TICK_MS);
    /* Without a set (none could be made again) only the timers run, at
     * their pace. */
    int n = srv->ep >= 0
                ? epoll_wait(srv->ep, evs, (int)LAUNCHD_LOOP_EVENTS, wait)
                : poll(NULL, 0U, wait);
    srv->now = launchd_now_ms();
    /* Served kind by kind, in launchd_srv's order of kinds: the order the
     * poll loop this replaced served them in. */
    for (unsigned kind = 0; kind < LAUNCHD_EV_KINDS && n > 0; kind++) {
        for (int i = 0; i < n; i++) {
            if ((unsigned)(evs[i].data.u64 >> 56) == kind) {
                launchd_loop_event(srv, evs[i].data.u64);
            }
        }
    }
    launchd_timers(srv);
    launchd_pty_timer(srv);
}
