/*
 * pbx_up_restart.c: how `pbx up` restarts one stack process alone while
 * the others run: a peer's new routes made by the peer itself and handed
 * to powerboxd by ROUTE_ATTACH, or a new powerboxd given fresh routes to
 * the running peers over their attach channels (docs/HOST.md, "The
 * supervisor").
 */
#define _GNU_SOURCE
#include "bootstrap/pbx_bootstrap.h"
#include "capabi/pbx_capabi.h"
#include "peers/common/pbx_peer_attach.h"
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
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* Receives one answer of at most cap bytes on chan without waiting, and
 * the descriptor that came with it into *fd (-1 when none; more than one
 * are closed and the answer counted malformed, as is a truncated one).
 * Returns its length, or -1 with errno set (EBADMSG: one was received but
 * malformed). */
static ssize_t pbx_up_chan_answer(int chan, uint8_t *ans, size_t cap, int *fd)
{
    struct iovec iov = {ans, cap};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    ssize_t got = recvmsg(chan, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    const struct cmsghdr *c = got >= 0 ? CMSG_FIRSTHDR(&mh) : NULL;
    int in = -1;
    if (c != NULL && c->cmsg_level == SOL_SOCKET &&
        c->cmsg_type == SCM_RIGHTS && c->cmsg_len == CMSG_LEN(sizeof(int))) {
        memcpy(&in, CMSG_DATA(c), sizeof(int));
    }
    bool odd =
        (c != NULL && in < 0) || (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0;
    if (odd && in >= 0) {
        (void)close(in);
        in = -1;
    }
    *fd = in;
    if (odd) {
        /* Received but malformed: told from a failed receive. */
        errno = EBADMSG;
    }
    return odd ? -1 : got;
}

/* Waits for the answer to msg (len bytes) on peer idx's channel: answers
 * that are not its exact echo (late ones of earlier calls that timed out)
 * are skipped, their descriptors closed. Returns the status byte with
 * the descriptor that came with it in *in (-1 when none), or -1 with *in
 * -1 when no such answer came in time. */
static int pbx_up_chan_await(pbx_up *u, size_t idx, const uint8_t *msg,
                             size_t len, int *in)
{
    pbx_up_proc *p = &u->proc[idx];
    uint8_t ans[PBX_PEER_ATTACH_ANSWER_MAX + 1U];
    *in = -1;
    for (int k = 0; k < 16; k++) {
        if (!pbx_up_await(u, p->chan, "attach channel answer", idx)) {
            return -1;
        }
        ssize_t n = pbx_up_chan_answer(p->chan, ans, sizeof(ans), in);
        if (n >= 0 && pbx_peer_attach_echoes(ans, (size_t)n, msg, len)) {
            return ans[1];
        }
        if (*in >= 0) {
            (void)close(*in);
            *in = -1;
        }
        /* The channel's end (0 bytes) or a failed receive: no answer
         * will come. */
        if (n == 0 || (n < 0 && errno != EBADMSG && errno != EAGAIN &&
                       errno != EWOULDBLOCK && errno != EINTR)) {
            return -1;
        }
        pbx_up_note(u,
                    "%s: an attach answer that is not this call's "
                    "skipped",
                    p->name);
    }
    return -1;
}

/* Sends one attach-channel message (len bytes of msg, op first, its body
 * the tag the answer must echo, at most PBX_PEER_ATTACH_TAG_MAX bytes)
 * with the descriptors fds to peer idx and waits for its answer (the op in
 * lower case, 0 when done, the tag). With got non-NULL the answer must
 * carry one descriptor, stored there (owned by the caller; -1 on any
 * failure). Returns 0 when the peer took it; the reason is noted when
 * not. */
static int pbx_up_chan_call(pbx_up *u, size_t idx, const uint8_t *msg,
                            size_t len, const int *fds, size_t nfds, int *got)
{
    pbx_up_proc *p = &u->proc[idx];
    int in = -1;
    if (got != NULL) {
        *got = -1;
    }
    if (p->pid == 0 || p->chan < 0 ||
        pbx_peer_io_send_fds(p->chan, msg, len, fds, nfds, MSG_DONTWAIT) != 0) {
        pbx_up_note(u, "%s: cannot reach its attach channel", p->name);
        return -1;
    }
    int st = pbx_up_chan_await(u, idx, msg, len, &in);
    if (st < 0) {
        pbx_up_note(u, "%s: no answer on its attach channel", p->name);
    } else if (st != 0) {
        pbx_up_note(u, "%s: refused its new route (status %d)", p->name, st);
    } else if ((got != NULL) != (in >= 0)) {
        pbx_up_note(u, "%s: its answer carried %s", p->name,
                    in < 0 ? "no route" : "an unasked descriptor");
    } else {
        if (got != NULL) {
            *got = in;
        }
        return 0;
    }
    if (in >= 0) {
        (void)close(in);
    }
    return -1;
}

int pbx_up_vfsd_pair(pbx_up *u, pid_t pid)
{
    uint8_t msg[1U + 4U];
    uint32_t v = (uint32_t)pid;
    msg[0] = (uint8_t)'P';
    for (size_t i = 0U; i < 4U; i++) {
        msg[1U + i] = (uint8_t)(v >> (8U * i));
    }
    int fd = -1;
    if (pbx_up_chan_call(u, PBX_UP_VFSD, msg, sizeof(msg), NULL, 0U, &fd) !=
        0) {
        return -1;
    }
    pbx_up_note(u, "vfsd: route pair made for pid %ld", (long)pid);
    return fd;
}

/* Sends peer idx an 'R' with the route ends fds, tagged with a fresh call
 * number so that its answer is told from a late one of an earlier 'R'.
 * Returns pbx_up_chan_call's result. */
static int pbx_up_chan_route(pbx_up *u, size_t idx, const int *fds, size_t nfds)
{
    uint8_t msg[1U + PBX_PEER_ATTACH_TAG_MAX];
    uint32_t call = ++u->proc[idx].chan_calls;
    msg[0] = (uint8_t)PBX_PEER_ATTACH_OP_ROUTE;
    for (size_t i = 0U; i < PBX_PEER_ATTACH_TAG_MAX; i++) {
        msg[1U + i] = (uint8_t)(call >> (8U * i));
    }
    return pbx_up_chan_call(u, idx, msg, sizeof(msg), fds, nfds, NULL);
}

/* Hands the running peers ttyd, procd and launchd their ends of the new
 * powerboxd's routes (vfsd makes its own when powerboxd's child exists:
 * pbx_up_start_powerboxd). Whatever a peer did not take is closed by the
 * caller, so the new powerboxd sees that route hung up (down until the
 * peer is restarted) rather than waiting on it. */
static void pbx_up_hand_routes(pbx_up *u, const pbx_up_wires *w)
{
    (void)pbx_up_chan_route(u, PBX_UP_TTYD, &w->tty[1], 1U);
    (void)pbx_up_chan_route(u, PBX_UP_PROCD, &w->proc[1], 1U);
    const int lw[2] = {w->wake[1], w->broker[1]};
    (void)pbx_up_chan_route(u, PBX_UP_LAUNCHD, lw, 2U);
}

int pbx_up_broker_restart(pbx_up *u)
{
    pbx_up_wires w;
    memset(&w, 0xff, sizeof(w));
    if (u->sup_fd >= 0) {
        (void)close(u->sup_fd);
        u->sup_fd = -1;
    }
    if (!pbx_up_wires_make(u, &w)) {
        pbx_up_wires_close(&w);
        return -1;
    }
    /* The dead powerboxd's public endpoint is stale: the new powerboxd
     * binds its own. */
    char pub[PBX_UP_PATH_MAX];
    if (pbx_up_path(u, "public.sock", pub)) {
        (void)unlink(pub);
    }
    pbx_up_hand_routes(u, &w);
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
