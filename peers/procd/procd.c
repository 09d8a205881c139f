/*
 * procd.c: the reference procd for the Linux host. Staged processes are
 * simulated as a table keyed by process id and generation; INSTALL places
 * the received object descriptor into the exact slot of that generation
 * and answers with a MANAGE_ONLY revocation handle (one end of a fresh
 * SEQPACKET socketpair). REVOKE through the handle, or the handle's last
 * close, drops the installed descriptor. See docs/HOST.md.
 *
 *   pbx-procd --stage PID:GEN [--stage ...] [--route PATH] [--route-fd N]
 *             [--state-file PATH] [--ready-fd N]
 */
/* accept4 is a Linux extension. */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_proc.h"

#define PROCD_ROUTES_MAX 8U

/* The whole daemon state (static storage). */
typedef struct procd {
    int listen_fd;
    int routes[PROCD_ROUTES_MAX];
    size_t nroutes;
    const char *state_file;
    pbx_peer_proctab tab;
    pbx_peer_msg msg;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
} procd;

static procd g_procd;

/* Rewrites the state file (one line per installed grant) atomically. */
static void procd_publish(void)
{
    if (g_procd.state_file == NULL) {
        return;
    }
    char tmp[4096];
    (void)snprintf(tmp, sizeof(tmp), "%s.tmp", g_procd.state_file);
    FILE *f = fopen(tmp, "we");
    if (f == NULL) {
        pbx_peer_log("procd", "state file '%s': %s", tmp, strerror(errno));
        return;
    }
    for (size_t i = 0; i < PBX_PEER_PROC_INSTALLS_MAX; i++) {
        const pbx_peer_install_row *r = &g_procd.tab.rows[i];
        if (r->live) {
            (void)fprintf(f,
                          "process %llu gen %u slot %u grant %u.%u "
                          "object %llu\n",
                          (unsigned long long)r->target.process_id,
                          r->target.process_gen, r->target.slot, r->grant.index,
                          r->grant.gen,
                          (unsigned long long)pbx_peer_io_inode(r->object));
        }
    }
    if (fclose(f) != 0 || rename(tmp, g_procd.state_file) != 0) {
        pbx_peer_log("procd", "state file: %s", strerror(errno));
    }
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
    pbx_peer_proctab_drop(&g_procd.tab, row, &fds[0], &fds[1]);
    pbx_peer_io_close_all(fds, 2);
    procd_publish();
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
    size_t row = 0;
    uint32_t st = pbx_peer_proctab_install_check(&g_procd.tab, &rq, &row);
    int h[2] = {-1, -1};
    if (st == 0U &&
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, h) != 0) {
        st = PBX_PEER_E_INTERNAL;
    }
    if (st != 0U) {
        pbx_peer_io_close_all(m->fds, m->nfds);
        procd_fail(fd, st, "INSTALL");
        return;
    }
    pbx_peer_proctab_install_apply(&g_procd.tab, row, &rq, m->fds[0], h[0]);
    m->fds[0] = -1;
    pbx_peer_log(
        "procd", "INSTALL grant %u.%u into process %llu gen %u slot %u",
        rq.grant.index, rq.grant.gen, (unsigned long long)rq.target.process_id,
        rq.target.process_gen, rq.target.slot);
    procd_publish();
    if (!procd_install_reply(fd, &rq, h[1])) {
        pbx_peer_log("procd", "INSTALL reply failed: %s", strerror(errno));
        procd_drop(row, "undeliverable install");
    }
    (void)close(h[1]);
}

/* A message (or hang-up) on the revocation handle of row. */
static void procd_handle(size_t row)
{
    pbx_peer_msg *m = &g_procd.msg;
    int fd = g_procd.tab.rows[row].handle;
    int r = pbx_peer_io_recv_frame(fd, m);
    if (r != 0) {
        procd_drop(row, r == 1 ? "handle closed" : "handle failed");
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
    pbx_peer_proctab_drop(&g_procd.tab, row, &object, &handle);
    (void)close(object);
    procd_publish();
    if (pbx_peer_io_reply(handle, m, g_procd.out, n, -1) != 0) {
        pbx_peer_log("procd", "REVOKE ack failed: %s", strerror(errno));
    }
    (void)close(handle);
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
        procd_fail(fd, PBX_PEER_E_ROUTE, "wrong connection for the op");
    }
    return true;
}

/* Accepts one route connection from the listening socket. */
static void procd_accept(void)
{
    int fd = accept4(g_procd.listen_fd, NULL, NULL, SOCK_CLOEXEC);
    if (fd < 0) {
        return;
    }
    if (g_procd.nroutes >= PROCD_ROUTES_MAX) {
        pbx_peer_log("procd", "route table full; refusing a connection");
        (void)close(fd);
        return;
    }
    g_procd.routes[g_procd.nroutes++] = fd;
}

/* One poll round over the listener, the routes and every live handle. */
static int procd_round(void)
{
    struct pollfd p[1U + PROCD_ROUTES_MAX + PBX_PEER_PROC_INSTALLS_MAX];
    size_t rowof[PBX_PEER_PROC_INSTALLS_MAX];
    size_t n = 0;
    p[n++] = (struct pollfd){g_procd.listen_fd, POLLIN, 0};
    for (size_t i = 0; i < g_procd.nroutes; i++) {
        p[n++] = (struct pollfd){g_procd.routes[i], POLLIN, 0};
    }
    size_t nh = 0;
    for (size_t i = 0; i < PBX_PEER_PROC_INSTALLS_MAX; i++) {
        if (g_procd.tab.rows[i].live) {
            rowof[nh++] = i;
            p[n++] = (struct pollfd){g_procd.tab.rows[i].handle, POLLIN, 0};
        }
    }
    if (poll(p, (nfds_t)n, -1) < 0) {
        return errno == EINTR ? 0 : -1;
    }
    size_t nr = g_procd.nroutes;
    for (size_t k = 0; k < nh; k++) {
        if (p[1U + nr + k].revents != 0 && g_procd.tab.rows[rowof[k]].live) {
            procd_handle(rowof[k]);
        }
    }
    for (size_t k = nr; k > 0U; k--) {
        if (p[k].revents != 0 && !procd_route(g_procd.routes[k - 1U])) {
            (void)close(g_procd.routes[k - 1U]);
            g_procd.routes[k - 1U] = g_procd.routes[--g_procd.nroutes];
        }
    }
    if ((p[0].revents & POLLIN) != 0) {
        procd_accept();
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
    int fd = -1;
    if (strcmp(k, "--route") == 0) {
        g_procd.listen_fd = pbx_peer_io_listen(v, SOCK_SEQPACKET);
        fd = g_procd.listen_fd;
    } else if (strcmp(k, "--route-fd") == 0 &&
               g_procd.nroutes < PROCD_ROUTES_MAX) {
        fd = pbx_peer_io_fd_arg(v);
        g_procd.routes[g_procd.nroutes++] = fd;
    } else if (strcmp(k, "--ready-fd") == 0) {
        fd = pbx_peer_io_fd_arg(v);
        *ready_fd = fd;
    } else if (strcmp(k, "--state-file") == 0) {
        g_procd.state_file = v;
        return true;
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

int main(int argc, char **argv)
{
    int ready_fd = -1;
    g_procd.listen_fd = -1;
    pbx_peer_proctab_init(&g_procd.tab);
    bool ok = (argc % 2) == 1;
    for (int i = 1; ok && i + 1 < argc; i += 2) {
        ok = procd_option(argv[i], argv[i + 1], &ready_fd);
    }
    if (!ok) {
        pbx_peer_log("procd", "usage: pbx-procd --stage PID:GEN ... "
                              "[--route PATH] [--route-fd N] "
                              "[--state-file PATH] [--ready-fd N]");
        return 2;
    }
    procd_publish();
    pbx_peer_log("procd", "ready: %zu staged process(es)",
                 g_procd.tab.staged_count);
    pbx_peer_io_ready(ready_fd);
    for (;;) {
        if (procd_round() != 0) {
            pbx_peer_log("procd", "poll failed: %s", strerror(errno));
            return 1;
        }
    }
}
