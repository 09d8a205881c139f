/*
 * ttyd.c: the reference ttyd for the Linux host. POLICY answers from a
 * policy file; PROMPTs are queued (RETRY when the queue is full) and shown
 * one at a time on a real terminal, which is read without ever blocking
 * (RETRY while earlier input is pending), or denied at once when --tty is
 * not a terminal (/dev/null); WITHDRAW takes a showing or queued prompt
 * away; VIEW keeps the ACTIVE rows in a table in memory, listed to whoever
 * connects to the --query socket (no file is written on any call), except
 * a launched job (--jobs-below) or a process past --max-per-pid. Every
 * reply echoes its call's seq. Each row remembers the route it came on:
 * when that route closes, the powerboxd on it can no longer remove the
 * row, so every such row is removed and logged. With --attach-fd the
 * supervisor hands ttyd new routes ('R') and ttyd may start with none.
 * See docs/HOST.md.
 *
 *   pbx-ttyd --policy FILE [--tty PATH] [--route-fd N]
 *            [--query PATH] [--jobs-below PID] [--max-per-pid N]
 *            [--attach-fd N] [--ready-fd N] [--hold PATH]
 *
 * A prompt is answered by one key (y or n, no Enter) in non-canonical
 * mode without echo, the terminal's settings restored afterwards; a soft
 * reset (PBX_PEER_TTY_RESET) precedes it. With --hold PATH (launchd's
 * hold socket) every prompt is drawn only after launchd holds its jobs'
 * terminal output and keyboard (ttyd_hold.c).
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
#include <time.h>
#include <unistd.h>

#include "peers/common/pbx_peer_attach.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_tty.h"
#include "peers/ttyd/ttyd.h"

/* The usage line, printed by -h and after a bad option. */
#define TTYD_USAGE                                                             \
    "usage: pbx-ttyd --policy FILE [--tty PATH] "                              \
    "[--route-fd N] [--query PATH] [--jobs-below PID] [--max-per-pid N] "      \
    "[--attach-fd N] [--ready-fd N] [--hold PATH]"

ttyd g_ttyd;

/* Sends the n encoded reply bytes in g_ttyd.out on fd, echoing the
 * current request's seq. */
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

/* Writes s to the terminal in full. The terminal is non-blocking: while it
 * takes nothing (flow control) ttyd waits at most TTYD_WRITE_WAIT_MS in
 * all, then gives up. Returns TTYD_OUT_OK, TTYD_OUT_SLOW (gave up
 * waiting) or TTYD_OUT_FAILED (the terminal is gone). */
static int ttyd_write(const char *s, size_t n)
{
    size_t done = 0;
    int waited = 0;
    for (int i = 0; i < 256 && done < n; i++) {
        ssize_t w = write(g_ttyd.tty, s + done, n - done);
        if (w > 0) {
            done += (size_t)w;
            continue;
        }
        if (w < 0 && errno != EINTR && errno != EAGAIN &&
            errno != EWOULDBLOCK) {
            return TTYD_OUT_FAILED;
        }
        if (w < 0 && errno != EINTR) {
            if (waited >= TTYD_WRITE_WAIT_MS) {
                return TTYD_OUT_SLOW;
            }
            struct pollfd p = {g_ttyd.tty, POLLOUT, 0};
            (void)poll(&p, 1, TTYD_WRITE_STEP_MS);
            waited += TTYD_WRITE_STEP_MS;
        }
    }
    return done == n ? TTYD_OUT_OK : TTYD_OUT_SLOW;
}

/* Writes a literal line to the terminal; its outcome does not matter. */
static void ttyd_say(const char *s)
{
    (void)ttyd_write(s, strlen(s));
}

/* Puts the terminal in one-key mode for a prompt: non-canonical, no
 * echo, each byte readable at once (the settings before are kept and
 * restored by ttyd_key_mode_off when the prompt ends). */
static void ttyd_key_mode_on(void)
{
    struct termios t;
    if (g_ttyd.raw || tcgetattr(g_ttyd.tty, &g_ttyd.saved) != 0) {
        return;
    }
    t = g_ttyd.saved;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ECHONL);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    g_ttyd.raw = tcsetattr(g_ttyd.tty, TCSANOW, &t) == 0;
}

/* Restores the terminal's settings from before the prompt. */
static void ttyd_key_mode_off(void)
{
    if (g_ttyd.raw) {
        (void)tcsetattr(g_ttyd.tty, TCSANOW, &g_ttyd.saved);
        g_ttyd.raw = false;
    }
}

/* Answers the PROMPT call of queued prompt e: RETRY, or answer a with
 * every identity echoed; the reply echoes the call's seq. */
static void ttyd_reply_prompt(const pbx_peer_tty_queued *e, bool retry,
                              uint8_t a)
{
    pbx_ipc_prompt_reply rep;
    memset(&rep, 0, sizeof(rep));
    if (retry) {
        rep.retry = true;
    } else {
        pbx_peer_tty_answer_fill(&e->prompt, e->request, a, &rep);
    }
    size_t n = 0;
    pbx_err err = pbx_ipc_prompt_reply_encode(e->request, &rep, g_ttyd.out,
                                              sizeof(g_ttyd.out), &n);
    PBX_ASSERT(err == PBX_OK);
    if (pbx_peer_io_send_seq(e->route, g_ttyd.out, n, e->seq, -1) != 0) {
        pbx_peer_log("ttyd", "reply send failed: %s", strerror(errno));
    }
}

/* Denies the oldest waiting prompt at once when the --tty path is not a
 * terminal (/dev/null when pbx up had none): nobody can ever answer it
 * there, and RETRY would have powerboxd ask again forever. Logged once per
 * prompt. Returns true when a prompt was denied. */
static bool ttyd_deny_no_tty(const pbx_peer_tty_queued *e)
{
    if (g_ttyd.is_tty) {
        return false;
    }
    pbx_peer_log("ttyd", "PROMPT %u.%u: deny (no terminal to ask on)",
                 e->request.index, e->request.gen);
    ttyd_reply_prompt(e, false, PBX_IPC_ANSWER_DENY);
    (void)pbx_peer_tty_queue_pop(&g_ttyd.queue);
    return true;
}

/* Shows the oldest waiting prompt when none is showing. A prompt about to
 * show while terminal input is pending is answered RETRY and the input
 * discarded (type-ahead must never answer a prompt nobody has seen); one
 * the terminal would not take in time is answered RETRY, one it failed
 * to show DENY; then the next is tried. */
void ttyd_next(void)
{
    for (size_t i = 0; i < PBX_PEER_TTY_QUEUE_MAX + 1U; i++) {
        const pbx_peer_tty_queued *e = pbx_peer_tty_queue_head(&g_ttyd.queue);
        if (e == NULL || g_ttyd.queue.showing) {
            return;
        }
        if (ttyd_deny_no_tty(e)) {
            continue;
        }
        if (!ttyd_hold_ready()) {
            return; /* drawn once every relay holds its job's output */
        }
        /* One-key mode first: a key typed ahead without Enter (a partial
         * line, invisible in canonical mode) then shows as pending and
         * is discarded, never taken as the answer; no key pressed after
         * the prompt appears is echoed or waits for Enter. */
        ttyd_key_mode_on();
        bool pending = g_ttyd.typed_ahead || ttyd_input_pending();
        g_ttyd.typed_ahead = false;
        int out = TTYD_OUT_SLOW;
        if (pbx_peer_tty_prompt_admit(pending)) {
            /* The soft reset undoes what a program left on the terminal. */
            static const char reset[] = PBX_PEER_TTY_RESET;
            size_t n = pbx_peer_tty_prompt_text(
                &e->prompt, e->request, g_ttyd.text, sizeof(g_ttyd.text));
            /* Input that came before the prompt is drawn was sent before
             * anyone saw it (a terminal's reply, a mouse report, a part
             * of a sequence): it is discarded, and reading starts in the
             * ground state. */
            (void)tcflush(g_ttyd.tty, TCIFLUSH);
            pbx_peer_tty_keys_reset(&g_ttyd.keys);
            out = ttyd_write(reset, sizeof(reset) - 1U);
            out = out == TTYD_OUT_OK ? ttyd_write(g_ttyd.text, n) : out;
        } else {
            (void)tcflush(g_ttyd.tty, TCIFLUSH);
        }
        if (out == TTYD_OUT_OK) {
            (void)pbx_peer_tty_queue_show(&g_ttyd.queue);
            g_ttyd.shown++;
            pbx_peer_log("ttyd", "PROMPT %u.%u: showing (%zu waiting)",
                         e->request.index, e->request.gen,
                         g_ttyd.queue.count - 1U);
            return;
        }
        bool retry = out == TTYD_OUT_SLOW;
        pbx_peer_log(
            "ttyd", "PROMPT %u.%u: %s", e->request.index, e->request.gen,
            !pending
                ? (retry ? "RETRY (terminal busy)" : "deny (terminal failed)")
                : "RETRY (input pending)");
        ttyd_reply_prompt(e, retry, PBX_IPC_ANSWER_DENY);
        (void)pbx_peer_tty_queue_pop(&g_ttyd.queue);
    }
}

/* The user answered the showing prompt with a: reply, then show the next. */
static void ttyd_finish(uint8_t a)
{
    const pbx_peer_tty_queued *e = pbx_peer_tty_queue_head(&g_ttyd.queue);
    PBX_ASSERT(e != NULL && g_ttyd.queue.showing);
    ttyd_say(a == PBX_IPC_ANSWER_APPROVE ? "\r\n[approved]\r\n"
                                         : "\r\n[denied]\r\n");
    pbx_peer_log("ttyd", "PROMPT %u.%u: %s", e->request.index, e->request.gen,
                 a == PBX_IPC_ANSWER_APPROVE ? "approve" : "deny");
    ttyd_reply_prompt(e, false, a);
    if (a == PBX_IPC_ANSWER_APPROVE) {
        /* The grant's row will carry only the selector's digest: keep the
         * selector the user saw for it. */
        pbx_peer_tty_views_seen(&g_ttyd.views, e->request, &e->prompt);
    }
    (void)pbx_peer_tty_queue_pop(&g_ttyd.queue);
    ttyd_next();
}

void ttyd_retry_head(const char *why)
{
    const pbx_peer_tty_queued *e = pbx_peer_tty_queue_head(&g_ttyd.queue);
    if (e == NULL || g_ttyd.queue.showing) {
        return;
    }
    pbx_peer_log("ttyd", "PROMPT %u.%u: %s", e->request.index, e->request.gen,
                 why);
    ttyd_reply_prompt(e, true, PBX_IPC_ANSWER_DENY);
    (void)pbx_peer_tty_queue_pop(&g_ttyd.queue);
}

/* Reads what the terminal has (it is non-blocking, and polled only while
 * a prompt shows) toward the showing prompt as a terminal's parser reads
 * it (pbx_peer_tty_keys.h): a lone y or n answers at once; escape
 * sequences (mouse and focus reports, query replies, keypad and function
 * keys, pastes) are dropped whole, whatever bytes they carry, and any
 * other byte is ignored. End of input or a terminal failure is DENY: no
 * trusted answer. Bytes left after the answer (other than blanks and line
 * ends) were typed before the next prompt showed: they count as
 * type-ahead. */
static void ttyd_tty_input(void)
{
    uint8_t buf[256];
    ssize_t r = read(g_ttyd.tty, buf, sizeof(buf));
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        return;
    }
    if (r <= 0) {
        ttyd_finish(PBX_IPC_ANSWER_DENY);
        return;
    }
    size_t used = 0;
    uint8_t a = pbx_peer_tty_keys_scan(&g_ttyd.keys, buf, (size_t)r, &used);
    if (a == 0U) {
        return;
    }
    bool ahead = false;
    for (size_t k = used; k < (size_t)r; k++) {
        ahead = ahead || strchr(" \t\r\n", buf[k]) == NULL;
    }
    /* Set before the answer: it shows the next prompt at once, and what
     * follows it was typed before that prompt. */
    g_ttyd.typed_ahead = ahead;
    ttyd_finish(a);
}

/* A PROMPT that a rule's selector pattern decides (POLICY answered PROMPT
 * only because the rule needed the selector, which the PROMPT carries):
 * answered at once, approve or deny, without showing anything. Returns
 * false when the prompt is to be shown. */
static bool ttyd_prompt_by_rule(int fd, const pbx_ipc_prompt *rq,
                                pbx_ipc_id request)
{
    uint8_t v = pbx_peer_tty_decide_prompt(&g_ttyd.policy, rq);
    if (v == PBX_IPC_VERDICT_PROMPT) {
        return false;
    }
    uint8_t a = v == PBX_IPC_VERDICT_ALLOW ? PBX_IPC_ANSWER_APPROVE
                                           : PBX_IPC_ANSWER_DENY;
    pbx_ipc_prompt_reply rep;
    memset(&rep, 0, sizeof(rep));
    pbx_peer_tty_answer_fill(rq, request, a, &rep);
    size_t n = 0;
    pbx_err e = pbx_ipc_prompt_reply_encode(request, &rep, g_ttyd.out,
                                            sizeof(g_ttyd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    if (a == PBX_IPC_ANSWER_APPROVE) {
        pbx_peer_tty_views_seen(&g_ttyd.views, request, rq);
    }
    pbx_peer_log("ttyd", "PROMPT %u.%u: %s by a selector rule (not shown)",
                 request.index, request.gen,
                 pbx_peer_name_of(PBX_PEER_NAMES_VERDICT, v));
    if (pbx_peer_io_send_seq(fd, g_ttyd.out, n, g_ttyd.msg.frame.seq, -1) !=
        0) {
        pbx_peer_log("ttyd", "reply send failed: %s", strerror(errno));
    }
    return true;
}

/* PROMPT: taken into the queue (RETRY when it is full) and shown when its
 * turn comes; the call is answered when the user answers. */
static void ttyd_prompt(int fd)
{
    pbx_ipc_prompt rq;
    pbx_err e = pbx_ipc_prompt_decode(&g_ttyd.msg.frame, &rq);
    if (e != PBX_OK) {
        ttyd_fail(fd, (uint32_t)e, "PROMPT malformed");
        return;
    }
    pbx_ipc_id request = g_ttyd.msg.frame.request;
    if (ttyd_prompt_by_rule(fd, &rq, request)) {
        return;
    }
    uint32_t st = pbx_peer_tty_queue_push(&g_ttyd.queue, fd,
                                          g_ttyd.msg.frame.seq, request, &rq);
    if (st == PBX_PEER_E_BUSY) {
        pbx_ipc_prompt_reply rep;
        memset(&rep, 0, sizeof(rep));
        rep.retry = true;
        size_t n = 0;
        e = pbx_ipc_prompt_reply_encode(request, &rep, g_ttyd.out,
                                        sizeof(g_ttyd.out), &n);
        PBX_ASSERT(e == PBX_OK);
        pbx_peer_log("ttyd", "PROMPT %u.%u: RETRY (%u prompts waiting)",
                     request.index, request.gen, PBX_PEER_TTY_QUEUE_MAX);
        ttyd_send(fd, n);
        return;
    }
    if (st != 0U) {
        ttyd_fail(fd, st, "PROMPT already held for that request");
        return;
    }
    pbx_peer_log("ttyd", "PROMPT %u.%u: queued (%zu held)", request.index,
                 request.gen, g_ttyd.queue.count);
    ttyd_next();
}

/* WITHDRAW: powerboxd ended the request whose prompt may be showing or
 * queued. It is removed (the terminal says so when it was showing) and
 * its PROMPT call is never answered; an unknown one is acknowledged all
 * the same, so a repeat reconciles. */
static void ttyd_withdraw(int fd)
{
    pbx_ipc_withdraw rq;
    pbx_err e = pbx_ipc_withdraw_decode(&g_ttyd.msg.frame, &rq);
    if (e != PBX_OK) {
        ttyd_fail(fd, (uint32_t)e, "WITHDRAW malformed");
        return;
    }
    pbx_ipc_id request = g_ttyd.msg.frame.request;
    pbx_peer_tty_withdrawn w =
        pbx_peer_tty_queue_withdraw(&g_ttyd.queue, fd, request, rq.object);
    if (w == PBX_PEER_TTY_WD_MISMATCH) {
        ttyd_fail(fd, PBX_PEER_E_MISMATCH, "WITHDRAW names another object");
        return;
    }
    static const char *const what[] = {"not held (acknowledged)",
                                       "withdrawn from the terminal",
                                       "withdrawn from the queue"};
    pbx_peer_log("ttyd", "WITHDRAW %u.%u object %llu gen %u: %s", request.index,
                 request.gen, (unsigned long long)rq.object.id, rq.object.gen,
                 what[w]);
    if (w == PBX_PEER_TTY_WD_SHOWING) {
        char line[96];
        (void)snprintf(line, sizeof(line),
                       "\r\n[prompt for request %u.%u withdrawn]\r\n",
                       request.index, request.gen);
        ttyd_say(line);
    }
    size_t n = 0;
    e = pbx_ipc_withdraw_reply_encode(request, &rq, g_ttyd.out,
                                      sizeof(g_ttyd.out), &n);
    PBX_ASSERT(e == PBX_OK);
    ttyd_send(fd, n);
    ttyd_next();
}

/* The wall clock in ms since the Unix epoch (a row's "since"). */
static uint64_t ttyd_wall_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000U + (uint64_t)ts.tv_nsec / 1000000U;
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
    uint32_t st =
        pbx_peer_tty_views_apply(&g_ttyd.views, &rq, fd, ttyd_wall_ms());
    if (st != 0U) {
        ttyd_fail(fd, st, "VIEW");
        return;
    }
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
    } else if (m->frame.op == PBX_IPC_OP_WITHDRAW) {
        ttyd_withdraw(fd);
    } else {
        pbx_peer_io_close_all(m->fds, m->nfds);
        ttyd_fail(fd, PBX_PEER_E_ROUTE, "wrong connection for the op");
    }
    return true;
}

/* Route fd closed: the powerboxd on it can no longer remove the grant
 * rows it published, so each is removed and logged, then counted. */
static void ttyd_route_views_gone(int fd)
{
    size_t n = 0;
    pbx_ipc_id g = {0, 0};
    for (size_t i = 0; i < PBX_PEER_TTY_VIEWS_MAX &&
                       pbx_peer_tty_views_take_route(&g_ttyd.views, fd, &g);
         i++) {
        pbx_peer_log("ttyd",
                     "VIEW ended grant %u.%u: route closed (broker "
                     "lost)",
                     g.index, g.gen);
        n++;
    }
    pbx_peer_log("ttyd", "route closed: %zu grant row(s) ended (broker lost)",
                 n);
}

/* Route fd closed: the prompts that came on it have nobody left to
 * answer; the one showing leaves the terminal, and the next shows. Its
 * grant rows end too. */
static void ttyd_route_gone(int fd)
{
    ttyd_route_views_gone(fd);
    const pbx_peer_tty_queued *e = pbx_peer_tty_queue_head(&g_ttyd.queue);
    pbx_ipc_id showing = {0, 0};
    if (e != NULL && g_ttyd.queue.showing) {
        showing = e->request;
    }
    bool was_showing = false;
    size_t n = pbx_peer_tty_queue_drop_route(&g_ttyd.queue, fd, &was_showing);
    if (n != 0U) {
        pbx_peer_log("ttyd", "route closed: %zu prompt(s) dropped", n);
    }
    if (was_showing) {
        char line[96];
        (void)snprintf(line, sizeof(line),
                       "\r\n[prompt for request %u.%u withdrawn]\r\n",
                       showing.index, showing.gen);
        ttyd_say(line);
        ttyd_next();
    }
}

/* Serves the attach channel: one message (a new route), or its end (the
 * supervisor is gone: the channel is closed and ttyd keeps serving). */
static void ttyd_attach(void)
{
    static pbx_peer_attach_msg m;
    if (pbx_peer_attach_next(&g_ttyd.attach_fd, "ttyd", &m)) {
        pbx_peer_attach_adopt(g_ttyd.attach_fd, &m, "ttyd", g_ttyd.routes,
                              &g_ttyd.nroutes, TTYD_ROUTES_MAX);
    }
}

/* One poll round over the routes, the query readers and,
 * while a prompt shows, the terminal. Routes are served first, one frame
 * each, so POLICY, VIEW and WITHDRAW are answered while a prompt waits
 * for the user; terminal input is read only for the prompt that was
 * showing when poll began; a reader gets what its socket takes now. */
static int ttyd_round(void)
{
    struct pollfd p[4U + TTYD_ROUTES_MAX + TTYD_READERS_MAX + TTYD_HOLDERS_MAX];
    size_t nr = g_ttyd.nroutes;
    for (size_t i = 0; i < nr; i++) {
        p[i] = (struct pollfd){g_ttyd.routes[i], POLLIN, 0};
    }
    bool showing = g_ttyd.queue.showing;
    uint64_t shown = g_ttyd.shown;
    p[nr] = (struct pollfd){showing ? g_ttyd.tty : -1, POLLIN, 0};
    bool reading = ttyd_poll_readers(&p[1U + nr]);
    size_t a = 2U + nr + TTYD_READERS_MAX;
    p[a] = (struct pollfd){g_ttyd.attach_fd, POLLIN, 0};
    bool asked = ttyd_hold_poll(&p[a + 1U]);
    nfds_t n = (nfds_t)(a + 1U + TTYD_HOLDERS_MAX);
    if (poll(p, n, reading || asked ? (int)TTYD_READER_MS / 10 : -1) < 0) {
        return errno == EINTR ? 0 : -1;
    }
    for (size_t k = nr; k > 0U; k--) {
        if (p[k - 1U].revents != 0 && !ttyd_route(g_ttyd.routes[k - 1U])) {
            int fd = g_ttyd.routes[k - 1U];
            g_ttyd.routes[k - 1U] = g_ttyd.routes[--g_ttyd.nroutes];
            ttyd_route_gone(fd);
            (void)close(fd);
        }
    }
    if (showing && p[nr].revents != 0 && g_ttyd.queue.showing &&
        g_ttyd.shown == shown) {
        ttyd_tty_input();
    }
    ttyd_serve_readers(&p[1U + nr]);
    if (p[a].revents != 0 && g_ttyd.attach_fd >= 0) {
        ttyd_attach();
    }
    ttyd_hold_serve(&p[a + 1U]);
    if (!g_ttyd.queue.showing) {
        ttyd_key_mode_off(); /* before RELEASE: the relay reads keys again */
    }
    ttyd_hold_settle();
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
    if (strcmp(k, "--tty") == 0) {
        *tty = v;
        return true;
    }
    if (strcmp(k, "--hold") == 0) {
        g_ttyd.hold_path = v;
        return true;
    }
    int a = pbx_peer_admit_option(&g_ttyd.admit, k, v, TTYD_READERS_MAX);
    if (a != 0) {
        if (a < 0) {
            pbx_peer_log("ttyd", "invalid %s '%s'", k, v);
        }
        return a > 0;
    }
    if (strcmp(k, "--query") == 0) {
        g_ttyd.query_fd = ttyd_query_listen(v);
        fd = g_ttyd.query_fd;
    } else if (strcmp(k, "--route") == 0) {
        pbx_peer_log("ttyd",
                     "bad argument: --route '%s': ttyd listens for no route "
                     "(its first connector would become one); use --route-fd "
                     "or the attach channel",
                     v);
        return false;
    } else if (strcmp(k, "--route-fd") == 0 &&
               g_ttyd.nroutes < TTYD_ROUTES_MAX) {
        fd = pbx_peer_io_fd_arg(v);
        g_ttyd.routes[g_ttyd.nroutes++] = fd;
    } else if (strcmp(k, "--ready-fd") == 0) {
        fd = pbx_peer_io_fd_arg(v);
        *ready_fd = fd;
    } else if (strcmp(k, "--attach-fd") == 0 && g_ttyd.attach_fd < 0) {
        fd = pbx_peer_io_fd_arg(v);
        g_ttyd.attach_fd = fd;
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

/* Names the first word in an option position of argv that is not one of
 * ttyd's options, on one line; false then. Checked before any option is
 * applied, so a typo never leaves a half-opened socket behind. */
static bool ttyd_known_options(int argc, char **argv)
{
    static const char *const known[] = {
        "--policy",      "--tty",       "--query",    "--route",
        "--route-fd",    "--attach-fd", "--ready-fd", "--jobs-below",
        "--max-per-pid", "--hold"};
    for (int i = 1; i < argc; i += 2) {
        bool found = false;
        for (size_t j = 0; j < sizeof(known) / sizeof(known[0]); j++) {
            found = found || strcmp(argv[i], known[j]) == 0;
        }
        if (!found) {
            pbx_peer_log("pbx-ttyd",
                         "unknown option '%s' (try 'pbx-ttyd --help')",
                         argv[i]);
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    int ready_fd = -1;
    const char *tty = "/dev/tty";
    g_ttyd.query_fd = -1;
    g_ttyd.attach_fd = -1;
    for (size_t i = 0; i < TTYD_HOLDERS_MAX; i++) {
        g_ttyd.holders[i].fd = -1;
    }
    g_ttyd.admit = (pbx_peer_admit){0, TTYD_READERS_PER_PID};
    for (size_t i = 0; i < TTYD_READERS_MAX; i++) {
        g_ttyd.readers[i].fd = -1;
    }
    if (argc == 2 &&
        (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        (void)puts(TTYD_USAGE);
        return 0;
    }
    if (argc == 1) {
        /* Without a policy ttyd would serve nothing of use. */
        pbx_peer_log("ttyd", "%s", TTYD_USAGE);
        return 2;
    }
    if (!ttyd_known_options(argc, argv)) {
        return 2;
    }
    pbx_peer_tty_views_init(&g_ttyd.views);
    pbx_peer_tty_queue_init(&g_ttyd.queue);
    bool ok = (argc % 2) == 1;
    for (int i = 1; ok && i + 1 < argc; i += 2) {
        ok = ttyd_option(argv[i], argv[i + 1], &ready_fd, &tty);
    }
    if (!ok) {
        pbx_peer_log("ttyd", "%s", TTYD_USAGE);
        return 2;
    }
    g_ttyd.tty = open(tty, O_RDWR | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
    if (g_ttyd.tty < 0) {
        pbx_peer_log("ttyd", "terminal '%s': %s", tty, strerror(errno));
        return 2;
    }
    g_ttyd.is_tty = isatty(g_ttyd.tty) == 1;
    pbx_peer_log("ttyd", "ready: %zu policy rule(s), terminal %s%s",
                 g_ttyd.policy.count, tty,
                 g_ttyd.is_tty ? "" : " (not a terminal: prompts are denied)");
    pbx_peer_io_ready(ready_fd);
    for (;;) {
        if (ttyd_round() != 0) {
            pbx_peer_log("ttyd", "poll failed: %s", strerror(errno));
            return 1;
        }
    }
}
