/*
 * vfsd_loop.c: vfsd's event loop. Every descriptor vfsd waits on (scope
 * listeners, scope and route connections, the provider end of each live
 * object, the attach channel and the FUSE server's channel) sits in one
 * epoll set, added when it is accepted or minted and removed before it is
 * closed. Each registration carries its kind, its table index and (for an
 * object) its generation, so a ready descriptor maps to its row in O(1):
 * the cost of one event does not grow with the live objects or
 * connections (issue 23 item 3; bench/bench_grants.py's 900-grant row).
 */
#define _GNU_SOURCE

#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/lib/pbx_peer.h"
#include "peers/vfsd/vfsd.h"

/* What a registration names (the top bits of its event data). */
enum {
    VFSD_EV_LISTEN = 1,
    VFSD_EV_CONN = 2,
    VFSD_EV_OBJ = 3,
    VFSD_EV_ATTACH = 4,
    VFSD_EV_FUSE = 5
};

/* Events one epoll_wait hands back: level-triggered, so what a pass
 * leaves unserved is reported again by the next one. */
#define VFSD_LOOP_EVENTS 32U

/* The loop's state: the epoll set (-1 before vfsd_loop_start), the
 * table epoch (bumped whenever a connection's index moves or a
 * registration goes, so the rest of a pass's events, whose indexes may
 * now name another row, are left to the next wait), what each live
 * object's registration asks for, and the rows parked while an OPEN of
 * theirs is pending at the FUSE server (re-armed once it is answered). */
typedef struct vfsd_loop {
    int ep;
    uint64_t epoch;
    bool armed[PBX_PEER_VFS_OBJECTS_CAP];
    bool parked[PBX_PEER_VFS_OBJECTS_CAP];
    size_t park[PBX_PEER_VFS_OBJECTS_CAP];
    size_t npark;
} vfsd_loop;

static vfsd_loop g_loop = {.ep = -1};

/* The event data of a registration: kind, index and generation. */
static uint64_t vfsd_loop_tag(unsigned kind, size_t index, uint32_t gen)
{
    return (uint64_t)kind << 60 | (uint64_t)(index & 0x0FFFFFFFU) << 32 | gen;
}

/* Adds (op EPOLL_CTL_ADD) or changes (EPOLL_CTL_MOD) fd's registration;
 * a failure is logged: the descriptor then goes unserved, never misread. */
static void vfsd_loop_ctl(int op, int fd, uint32_t events, uint64_t tag)
{
    struct epoll_event ev;
    memset(&ev, 0, sizeof(ev));
    ev.events = events;
    ev.data.u64 = tag;
    if (g_loop.ep >= 0 && fd >= 0 && epoll_ctl(g_loop.ep, op, fd, &ev) != 0) {
        pbx_peer_log("vfsd", "epoll_ctl(%d) of descriptor %d: %s", op, fd,
                     strerror(errno));
    }
}

void vfsd_loop_watch_conn(size_t i)
{
    vfsd_loop_ctl(EPOLL_CTL_ADD, g_vfsd.conns[i].fd, EPOLLIN,
                  vfsd_loop_tag(VFSD_EV_CONN, i, 0U));
}

void vfsd_loop_moved_conn(size_t i)
{
    g_loop.epoch++;
    vfsd_loop_ctl(EPOLL_CTL_MOD, g_vfsd.conns[i].fd, EPOLLIN,
                  vfsd_loop_tag(VFSD_EV_CONN, i, 0U));
}

void vfsd_loop_unwatch(int fd)
{
    g_loop.epoch++;
    if (g_loop.ep >= 0 && fd >= 0) {
        (void)epoll_ctl(g_loop.ep, EPOLL_CTL_DEL, fd, NULL);
    }
}

void vfsd_loop_watch_obj(size_t row)
{
    const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
    g_loop.armed[row] = true;
    vfsd_loop_ctl(EPOLL_CTL_ADD, o->provider, EPOLLIN | EPOLLRDHUP,
                  vfsd_loop_tag(VFSD_EV_OBJ, row, o->gen));
}

/* Sets what row's registration asks for: calls (EPOLLIN, EPOLLRDHUP)
 * when on, else hang-up and error alone (always reported). */
static void vfsd_loop_arm(size_t row, bool on)
{
    const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
    if (g_loop.armed[row] == on) {
        return;
    }
    g_loop.armed[row] = on;
    vfsd_loop_ctl(EPOLL_CTL_MOD, o->provider,
                  on ? (uint32_t)(EPOLLIN | EPOLLRDHUP) : 0U,
                  vfsd_loop_tag(VFSD_EV_OBJ, row, o->gen));
}

/* Re-arms the parked rows whose OPEN was answered (or which are gone):
 * bounded by the rows parked, never by the live objects. */
static void vfsd_loop_unpark(void)
{
    size_t k = 0;
    while (k < g_loop.npark) {
        size_t row = g_loop.park[k];
        const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
        bool live = o->state == PBX_PEER_OBJ_LIVE && o->provider >= 0;
        if (live && vfsd_fuse_pending(row)) {
            k++;
            continue;
        }
        if (live && !g_vfsd.mute[row]) {
            vfsd_loop_arm(row, true);
        }
        g_loop.parked[row] = false;
        g_loop.park[k] = g_loop.park[--g_loop.npark];
    }
}

/* Serves what object row's event ev reports, when the registration
 * (generation gen) still names the live object in that row: a RETIRE or a
 * hang-up served before may have closed it and a FOUND re-minted the row. */
static void vfsd_loop_obj(size_t row, uint32_t gen, uint32_t ev)
{
    const pbx_peer_obj *o = &g_vfsd.objs.rows[row];
    if (o->state != PBX_PEER_OBJ_LIVE || o->gen != gen || o->provider < 0) {
        return;
    }
    if ((ev & (EPOLLHUP | EPOLLERR)) != 0U) {
        vfsd_hangup(row);
        return;
    }
    if ((ev & (EPOLLIN | EPOLLRDHUP)) == 0U) {
        return;
    }
    bool empty = vfsd_obj_serve(row);
    if (o->state != PBX_PEER_OBJ_LIVE || o->gen != gen) {
        return;
    }
    /* The writing side was shut and the queue is empty: calls can never
     * come again, and a level-triggered set would report it every wait. */
    g_vfsd.mute[row] = empty && (ev & EPOLLRDHUP) != 0U;
    bool pending = vfsd_fuse_pending(row);
    /* A queued OPEN is answered before any later call of its object: the
     * row waits for hang-up alone until the FUSE server answers. */
    vfsd_loop_arm(row, !g_vfsd.mute[row] && !pending);
    if (pending && !g_loop.parked[row]) {
        g_loop.parked[row] = true;
        g_loop.park[g_loop.npark++] = row;
    }
}

/* Accepts what scope listener l has waiting: one scope hand-out. No
 * listener of vfsd ever makes a route: every route is a pair whose far
 * end the supervisor gives to the process it names. */
static void vfsd_loop_accept(const vfsd_conn *l)
{
    int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        (void)vfsd_hand_scope(fd, l->dirfd, l->lie);
    }
}

static int vfsd_loop_fill(void);

/* Replaces the set by a fresh one holding exactly what is open now
 * (listeners, connections, channels and live objects as armed). */
static void vfsd_loop_rebuild(void)
{
    int old = g_loop.ep;
    if (vfsd_loop_fill() != 0) {
        pbx_peer_log("vfsd", "epoll set not remade: %s", strerror(errno));
        g_loop.ep = old;
        return;
    }
    (void)close(old);
    g_loop.epoch++;
    for (size_t r = 0; r < g_vfsd.objs.cap; r++) {
        const pbx_peer_obj *o = &g_vfsd.objs.rows[r];
        if (o->state == PBX_PEER_OBJ_LIVE && o->provider >= 0) {
            bool on = g_loop.armed[r];
            vfsd_loop_watch_obj(r);
            vfsd_loop_arm(r, on);
        }
    }
}

/* Serves one event whose registration is tagged tag. */
static void vfsd_loop_event(uint64_t tag, uint32_t ev)
{
    unsigned kind = (unsigned)(tag >> 60);
    size_t index = (size_t)(tag >> 32 & 0x0FFFFFFFU);
    if (kind == VFSD_EV_LISTEN && index < g_vfsd.nlistens) {
        vfsd_loop_accept(&g_vfsd.listens[index]);
    } else if (kind == VFSD_EV_CONN && index < g_vfsd.nconns) {
        if (!vfsd_serve(&g_vfsd.conns[index])) {
            vfsd_drop_conn(index);
        }
    } else if (kind == VFSD_EV_OBJ && index < g_vfsd.objs.cap) {
        vfsd_loop_obj(index, (uint32_t)tag, ev);
    } else if (kind == VFSD_EV_ATTACH && g_vfsd.attach >= 0) {
        vfsd_attach_input();
    } else if (kind == VFSD_EV_FUSE && g_vfsd.fuse.chan >= 0) {
        vfsd_fuse_input();
        vfsd_loop_unpark();
    } else if (kind == VFSD_EV_ATTACH || kind == VFSD_EV_FUSE) {
        /* A channel closed where it was read (vfsd_attach_input,
         * vfsd_fuse.c) whose open file lives on in another process: its
         * registration outlived the descriptor and would be reported on
         * every wait. Once in vfsd's life: the set is made again. */
        vfsd_loop_rebuild();
    }
}

int vfsd_loop_start(void)
{
    return vfsd_loop_fill();
}

/* Makes a fresh set (g_loop.ep) holding the listeners, the connections
 * and the channels that are open; -1 with errno when it cannot. */
static int vfsd_loop_fill(void)
{
    g_loop.ep = epoll_create1(EPOLL_CLOEXEC);
    if (g_loop.ep < 0) {
        return -1;
    }
    for (size_t i = 0; i < g_vfsd.nlistens; i++) {
        vfsd_loop_ctl(EPOLL_CTL_ADD, g_vfsd.listens[i].fd, EPOLLIN,
                      vfsd_loop_tag(VFSD_EV_LISTEN, i, 0U));
    }
    for (size_t i = 0; i < g_vfsd.nconns; i++) {
        vfsd_loop_watch_conn(i);
    }
    vfsd_loop_ctl(EPOLL_CTL_ADD, g_vfsd.attach, EPOLLIN,
                  vfsd_loop_tag(VFSD_EV_ATTACH, 0U, 0U));
    vfsd_loop_ctl(EPOLL_CTL_ADD, g_vfsd.fuse.chan, EPOLLIN,
                  vfsd_loop_tag(VFSD_EV_FUSE, 0U, 0U));
    return 0;
}

/* The order a pass serves its events in: listeners and connections
 * first (a RETIRE on a route is served before calls queued on its
 * object, which then get an error status, as with the poll loop this
 * replaced), then objects, then the attach and FUSE channels. */
static unsigned vfsd_loop_stage(uint64_t tag)
{
    unsigned kind = (unsigned)(tag >> 60);
    return kind == VFSD_EV_LISTEN || kind == VFSD_EV_CONN ? 0U
           : kind == VFSD_EV_OBJ                          ? 1U
                                                          : 2U;
}

int vfsd_loop_pass(void)
{
    static struct epoll_event evs[VFSD_LOOP_EVENTS];
    int n = epoll_wait(g_loop.ep, evs, (int)VFSD_LOOP_EVENTS, -1);
    if (n < 0) {
        return errno == EINTR ? 0 : -1;
    }
    uint64_t epoch = g_loop.epoch;
    for (unsigned stage = 0; stage < 3U; stage++) {
        for (int i = 0; i < n; i++) {
            /* A connection event after the table moved may name another
             * row: it is left to the next wait (level-triggered), which
             * reports it with current indexes. Objects are checked by
             * generation, channels have no index. */
            if (vfsd_loop_stage(evs[i].data.u64) == stage &&
                (stage != 0U || g_loop.epoch == epoch)) {
                vfsd_loop_event(evs[i].data.u64, evs[i].events);
            }
        }
    }
    return 0;
}
