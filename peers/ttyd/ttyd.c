/*
 * ttyd.c: the reference ttyd for the Linux host. POLICY answers from a
 * policy file; PROMPT shows the trusted prompt on a real terminal and
 * reads y/n from it (RETRY while earlier input is pending); VIEW keeps the
 * ACTIVE rows in a table, listed in --view-file. See docs/HOST.md.
 *
 *   pbx-ttyd --policy FILE [--tty PATH] [--route PATH] [--route-fd N]
 *            [--view-file PATH] [--ready-fd N]
 */
/* accept4 is a Linux extension. */
#define _GNU_SOURCE

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <termios.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_tty.h"

#define TTYD_ROUTES_MAX 8U
#define TTYD_ASK_MAX    3

/* The whole daemon state (static storage). */
typedef struct ttyd {
    int listen_fd;
    int tty;
    int routes[TTYD_ROUTES_MAX];
    size_t nroutes;
    const char *view_file;
    pbx_peer_tty_policy policy;
    pbx_peer_tty_views views;
    pbx_peer_msg msg;
    uint8_t out[PBX_IPC_FRAME_BYTES_MAX];
    char text[8192];
} ttyd;

static ttyd g_ttyd;

/* Sends the n encoded bytes in g_ttyd.out on fd. */
static void ttyd_send(int fd, size_t n)
{
    if (pbx_peer_io_reply(fd, &g_ttyd.msg, g_ttyd.out, n, -1) != 0) {
        pbx_peer_log("ttyd", "reply send failed: %s", strerror(errno));
    }
}

/* Replies to the current message with an error status. */
static void ttyd_fail(int fd, uint32_t status, const char *what)
{
    pbx_peer_log("ttyd", "%s: %s", what, pbx_peer_status_text(status));
    (void)pbx_peer_io_reply_status(fd, &g_ttyd.msg, status);
}

/* Loads the policy file; false with a message naming the bad line. */
static bool ttyd_load_policy(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        pbx_peer_log("ttyd", "policy '%s': %s", path, strerror(errno));
        return false;
    }
    char line[512];
    bool ok = true;
    for (unsigned no = 1; ok && fgets(line, sizeof(line), f) != NULL; no++) {
        const char *bad = pbx_peer_tty_policy_line(&g_ttyd.policy, line);
        if (bad != NULL) {
            pbx_peer_log("ttyd", "%s:%u: %s", path, no, bad);
            ok = false;
        }
    }
    (void)fclose(f);
    return ok;
}

/* POLICY: the session's verdict from the table. */
static void ttyd_policy(int fd)
{
    pbx_ipc_policy rq;
    pbx_err e = pbx_ipc_policy_decode(&g_ttyd.msg.frame, &rq);
    if (e != PBX_OK) {
        ttyd_fail(fd, (uint32_t)e, "POLICY malformed");
        return;
    }
    pbx_ipc_policy_reply rep;
    memset(&rep, 0, sizeof(rep));
    rep.verdict = pbx_peer_tty_decide(&g_ttyd.policy, &rq.ctx);
    rep.urgency = rq.ctx.urgency;
    rep.realm = rq.ctx.realm;
    rep.session = rq.ctx.session;
    size_t n = 0;
    e = pbx_ipc_policy_reply_encode(g_ttyd.msg.frame.request, &rep, g_ttyd.out,
                                    sizeof(g_ttyd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    pbx_peer_log("ttyd", "POLICY %s %s %s -> %s",
                 pbx_peer_name_of(PBX_PEER_NAMES_OPERATION, rq.ctx.operation),
                 pbx_peer_name_of(PBX_PEER_NAMES_CLASS, rq.ctx.object_class),
                 pbx_peer_name_of(PBX_PEER_NAMES_URGENCY, rq.ctx.urgency),
                 pbx_peer_name_of(PBX_PEER_NAMES_VERDICT, rep.verdict));
    ttyd_send(fd, n);
}

/* Reports whether the terminal has unread input right now. */
static bool ttyd_input_pending(void)
{
    struct pollfd p = {g_ttyd.tty, POLLIN, 0};
    return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

/* Writes s to the terminal in full (bounded retries). */
static void ttyd_write(const char *s, size_t n)
{
    size_t done = 0;
    for (int i = 0; i < 64 && done < n; i++) {
        ssize_t w = write(g_ttyd.tty, s + done, n - done);
        if (w < 0 && errno != EINTR) {
            return;
        }
        done += w > 0 ? (size_t)w : 0U;
    }
}

/* Shows the prompt and reads the user's answer from the terminal. */
static uint8_t ttyd_ask(const pbx_ipc_prompt *rq, pbx_ipc_id request)
{
    size_t n =
        pbx_peer_tty_prompt_text(rq, request, g_ttyd.text, sizeof(g_ttyd.text));
    ttyd_write(g_ttyd.text, n);
    for (int attempt = 0; attempt < TTYD_ASK_MAX; attempt++) {
        char line[64];
        ssize_t r = read(g_ttyd.tty, line, sizeof(line));
        if (r <= 0) {
            return PBX_IPC_ANSWER_DENY; /* no trusted answer: deny */
        }
        uint8_t a = pbx_peer_tty_answer_parse(line, (size_t)r);
        if (a != 0U) {
            return a;
        }
        static const char again[] = "please answer y or n: ";
        ttyd_write(again, sizeof(again) - 1U);
    }
    return PBX_IPC_ANSWER_DENY;
}

/* PROMPT: RETRY while input is pending, else ask and echo the answer. */
static void ttyd_prompt(int fd)
{
    pbx_ipc_prompt rq;
    pbx_err e = pbx_ipc_prompt_decode(&g_ttyd.msg.frame, &rq);
    if (e != PBX_OK) {
        ttyd_fail(fd, (uint32_t)e, "PROMPT malformed");
        return;
    }
    pbx_ipc_id request = g_ttyd.msg.frame.request;
    pbx_ipc_prompt_reply rep;
    memset(&rep, 0, sizeof(rep));
    if (!pbx_peer_tty_prompt_admit(ttyd_input_pending())) {
        /* Type-ahead must never answer a prompt nobody has seen. */
        (void)tcflush(g_ttyd.tty, TCIFLUSH);
        rep.retry = true;
        pbx_peer_log("ttyd", "PROMPT %u.%u: RETRY (input pending)",
                     request.index, request.gen);
    } else {
        uint8_t a = ttyd_ask(&rq, request);
        pbx_peer_tty_answer_fill(&rq, request, a, &rep);
        static const char ok[] = "\r\n[approved]\r\n";
        static const char no[] = "\r\n[denied]\r\n";
        ttyd_write(a == PBX_IPC_ANSWER_APPROVE ? ok : no,
                   a == PBX_IPC_ANSWER_APPROVE ? sizeof(ok) - 1U
                                               : sizeof(no) - 1U);
        pbx_peer_log("ttyd", "PROMPT %u.%u: %s", request.index, request.gen,
                     a == PBX_IPC_ANSWER_APPROVE ? "approve" : "deny");
    }
    size_t n = 0;
    e = pbx_ipc_prompt_reply_encode(request, &rep, g_ttyd.out,
                                    sizeof(g_ttyd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    ttyd_send(fd, n);
}

/* Rewrites the view file with the current ACTIVE rows, atomically. */
static void ttyd_publish(void)
{
    if (g_ttyd.view_file == NULL) {
        return;
    }
    (void)pbx_peer_tty_views_list(&g_ttyd.views, g_ttyd.text,
                                  sizeof(g_ttyd.text));
    char tmp[4096];
    (void)snprintf(tmp, sizeof(tmp), "%s.tmp", g_ttyd.view_file);
    FILE *f = fopen(tmp, "we");
    if (f == NULL || fputs(g_ttyd.text, f) < 0 || fclose(f) != 0 ||
        rename(tmp, g_ttyd.view_file) != 0) {
        pbx_peer_log("ttyd", "view file: %s", strerror(errno));
    }
}

/* VIEW: publish or remove one grant row. */
static void ttyd_view(int fd)
{
    static pbx_ipc_view rq;
    pbx_err e = pbx_ipc_view_decode(&g_ttyd.msg.frame, &rq);
    if (e != PBX_OK) {
        ttyd_fail(fd, (uint32_t)e, "VIEW malformed");
        return;
    }
    uint32_t st = pbx_peer_tty_views_apply(&g_ttyd.views, &rq);
    if (st != 0U) {
        ttyd_fail(fd, st, "VIEW");
        return;
    }
    ttyd_publish();
    pbx_ipc_view_ack ack = {rq.kind, rq.grant};
    size_t n = 0;
    e = pbx_ipc_view_reply_encode(g_ttyd.msg.frame.request, &ack, g_ttyd.out,
                                  sizeof(g_ttyd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    pbx_peer_log("ttyd", "VIEW %s grant %u.%u",
                 rq.kind == PBX_IPC_VIEW_ACTIVE ? "ACTIVE" : "REMOVE",
                 rq.grant.index, rq.grant.gen);
    ttyd_send(fd, n);
}

/* Serves one message on a route; false when it must be closed. */
static bool ttyd_route(int fd)
{
    pbx_peer_msg *m = &g_ttyd.msg;
    int r = pbx_peer_io_recv_frame(fd, m);
    if (r != 0) {
        return r < 0 && errno == EMSGSIZE;
    }
    if (m->err != PBX_OK) {
        ttyd_fail(fd, (uint32_t)m->err, "malformed frame");
        return true;
    }
    /* Every ttyd operation is receipt-free; the frame decoder already
     * refused any descriptor, so there is nothing to delete here. */
    if (m->frame.op == PBX_IPC_OP_POLICY) {
        ttyd_policy(fd);
    } else if (m->frame.op == PBX_IPC_OP_PROMPT) {
        ttyd_prompt(fd);
    } else if (m->frame.op == PBX_IPC_OP_VIEW) {
        ttyd_view(fd);
    } else {
        pbx_peer_io_close_all(m->fds, m->nfds);
        ttyd_fail(fd, PBX_PEER_E_ROUTE, "wrong connection for the op");
    }
    return true;
}

/* One poll round over the listener and the routes. */
static int ttyd_round(void)
{
    struct pollfd p[1U + TTYD_ROUTES_MAX];
    p[0] = (struct pollfd){g_ttyd.listen_fd, POLLIN, 0};
    size_t nr = g_ttyd.nroutes;
    for (size_t i = 0; i < nr; i++) {
        p[1U + i] = (struct pollfd){g_ttyd.routes[i], POLLIN, 0};
    }
    if (poll(p, (nfds_t)(1U + nr), -1) < 0) {
        return errno == EINTR ? 0 : -1;
    }
    for (size_t k = nr; k > 0U; k--) {
        if (p[k].revents != 0 && !ttyd_route(g_ttyd.routes[k - 1U])) {
            (void)close(g_ttyd.routes[k - 1U]);
            g_ttyd.routes[k - 1U] = g_ttyd.routes[--g_ttyd.nroutes];
        }
    }
    if ((p[0].revents & POLLIN) != 0) {
        int fd = accept4(g_ttyd.listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0 && g_ttyd.nroutes < TTYD_ROUTES_MAX) {
            g_ttyd.routes[g_ttyd.nroutes++] = fd;
        } else if (fd >= 0) {
            pbx_peer_log("ttyd", "route table full; refusing a connection");
            (void)close(fd);
        }
    }
    return 0;
}

/* Handles one option pair; false with a message when it is invalid. */
static bool ttyd_option(const char *k, const char *v, int *ready_fd,
                        const char **tty)
{
    int fd = -1;
    if (strcmp(k, "--policy") == 0) {
        return ttyd_load_policy(v);
    }
    if (strcmp(k, "--tty") == 0 || strcmp(k, "--view-file") == 0) {
        *(strcmp(k, "--tty") == 0 ? tty : &g_ttyd.view_file) = v;
        return true;
    }
    if (strcmp(k, "--route") == 0) {
        g_ttyd.listen_fd = pbx_peer_io_listen(v, SOCK_SEQPACKET);
        fd = g_ttyd.listen_fd;
    } else if (strcmp(k, "--route-fd") == 0 &&
               g_ttyd.nroutes < TTYD_ROUTES_MAX) {
        fd = pbx_peer_io_fd_arg(v);
        g_ttyd.routes[g_ttyd.nroutes++] = fd;
    } else if (strcmp(k, "--ready-fd") == 0) {
        fd = pbx_peer_io_fd_arg(v);
        *ready_fd = fd;
    } else {
        pbx_peer_log("ttyd", "unknown option '%s'", k);
        return false;
    }
    if (fd < 0) {
        pbx_peer_log("ttyd", "cannot use %s '%s': %s", k, v, strerror(errno));
        return false;
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    return true;
}

int main(int argc, char **argv)
{
    int ready_fd = -1;
    const char *tty = "/dev/tty";
    g_ttyd.listen_fd = -1;
    pbx_peer_tty_views_init(&g_ttyd.views);
    bool ok = (argc % 2) == 1;
    for (int i = 1; ok && i + 1 < argc; i += 2) {
        ok = ttyd_option(argv[i], argv[i + 1], &ready_fd, &tty);
    }
    if (!ok) {
        pbx_peer_log("ttyd", "usage: pbx-ttyd --policy FILE [--tty PATH] "
                             "[--route PATH] [--route-fd N] "
                             "[--view-file PATH] [--ready-fd N]");
        return 2;
    }
    g_ttyd.tty = open(tty, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (g_ttyd.tty < 0) {
        pbx_peer_log("ttyd", "terminal '%s': %s", tty, strerror(errno));
        return 2;
    }
    ttyd_publish();
    pbx_peer_log("ttyd", "ready: %zu policy rule(s), terminal %s",
                 g_ttyd.policy.count, tty);
    pbx_peer_io_ready(ready_fd);
    for (;;) {
        if (ttyd_round() != 0) {
            pbx_peer_log("ttyd", "poll failed: %s", strerror(errno));
            return 1;
        }
    }
}
