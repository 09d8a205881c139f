/*
 * test_peers_ttyd.c: ttyd's policy parser, decisions, prompt text and
 * VIEW table on cases, and the pbx-ttyd process over a real socketpair
 * with a real pseudo-terminal: POLICY verdicts, PROMPT answered with "y"
 * typed on the terminal, RETRY while type-ahead is pending, and VIEW rows
 * listed to a reader of the query socket (the selector an approved prompt
 * showed, the ACTIVE time; a reader that does not read is dropped at its
 * deadline and never holds up the routes). The prompt queue on cases, and the
 * process with prompts pending: POLICY and VIEW served meanwhile, prompts shown
 * one at a time and answered in order, WITHDRAW of the showing, a queued
 * and an unknown prompt, RETRY when the queue is full, every reply (error
 * replies included) echoing its call's seq, and a backlog served in order
 * after SIGSTOP/SIGCONT. With /dev/null as its terminal every PROMPT is
 * denied at once, never RETRY.
 */
#define _XOPEN_SOURCE 700

#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_tty.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A routine READ FILE context of session 1. */
static pbx_ipc_context tt_ctx(uint8_t urgency)
{
    pbx_ipc_context c;
    memset(&c, 0, sizeof(c));
    c.session = 1;
    c.job_id = 11;
    c.job_gen = 2;
    c.realm = 3;
    c.operation = PBX_IPC_OPERATION_READ;
    c.object_class = PBX_IPC_CLASS_FILE;
    c.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    c.mode = PBX_IPC_MODE_INSTALL;
    c.urgency = urgency;
    c.entry.len = 8;
    memcpy(c.entry.bytes, "/bin/cat", 8);
    return c;
}

PBX_TEST(peers_tty_policy_table)
{
    static pbx_peer_tty_policy p;
    memset(&p, 0, sizeof(p));
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "# comment\n") == NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "   \n") == NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "* * * * * allow") != NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "1 * read file exceptional allow") !=
              NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "1 * read file routine") != NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "1 * read fil routine deny") !=
              NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "x * read file routine deny") !=
              NULL);
    PBX_CHECK_EQ(p.count, 0U);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "1 3 read file routine allow") ==
              NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "* * * * exceptional prompt") ==
              NULL);
    pbx_ipc_context c = tt_ctx(PBX_IPC_URGENCY_ROUTINE);
    PBX_CHECK_EQ(pbx_peer_tty_decide(&p, &c), PBX_IPC_VERDICT_ALLOW);
    c.realm = 4;
    PBX_CHECK_EQ(pbx_peer_tty_decide(&p, &c), PBX_IPC_VERDICT_DENY);
    c = tt_ctx(PBX_IPC_URGENCY_EXCEPTIONAL);
    PBX_CHECK_EQ(pbx_peer_tty_decide(&p, &c), PBX_IPC_VERDICT_PROMPT);
    /* Even a forged ALLOW rule never allows an exceptional request. */
    p.rules[0].urgency = 0;
    PBX_CHECK_EQ(pbx_peer_tty_decide(&p, &c), PBX_IPC_VERDICT_DENY);
    PBX_CHECK(!pbx_peer_tty_prompt_admit(true));
    PBX_CHECK(pbx_peer_tty_prompt_admit(false));
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse(" Yes\n", 5),
                 PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse("n\n", 2), PBX_IPC_ANSWER_DENY);
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse("maybe\n", 6), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse("\n", 1), 0U);
}

/* An answer line is its word alone: blanks only around it, no NUL
 * (fuzz/fuzz_tty.c found "y\0 e" approving). */
PBX_TEST(peers_tty_answer_is_the_word_alone)
{
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse("y\0 e", 4), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse("y\0", 2), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse("y e s", 5), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse("n o\n", 4), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse(" \tNO \r\n", 7),
                 PBX_IPC_ANSWER_DENY);
    PBX_CHECK_EQ(pbx_peer_tty_answer_parse("yes", 3), PBX_IPC_ANSWER_APPROVE);
}

/* A PROMPT record with selector sel (borrowed). */
static pbx_ipc_prompt tt_prompt(const char *sel)
{
    pbx_ipc_prompt p;
    memset(&p, 0, sizeof(p));
    p.ctx = tt_ctx(PBX_IPC_URGENCY_EXCEPTIONAL);
    p.object.id = 777;
    p.object.gen = 5;
    p.label.len = 4;
    memcpy(p.label.bytes, "demo", 4);
    p.selector = (const uint8_t *)sel;
    p.selector_len = (uint32_t)strlen(sel);
    return p;
}

PBX_TEST(peers_tty_prompt_text_and_views)
{
    pbx_ipc_prompt p = tt_prompt("docs/a\x1b[2Jb");
    pbx_ipc_id req = {4, 9};
    char text[2048];
    size_t n = pbx_peer_tty_prompt_text(&p, req, text, sizeof(text));
    PBX_CHECK(n == strlen(text));
    PBX_CHECK(strstr(text, "program : /bin/cat") != NULL);
    PBX_CHECK(strstr(text, "request : 4.9") != NULL);
    PBX_CHECK(strstr(text, "object  : 777 gen 5") != NULL);
    PBX_CHECK(strstr(text, "docs/a\\x1b[2Jb") != NULL); /* escaped */
    PBX_CHECK(strchr(text, 0x1b) == NULL);
    pbx_ipc_prompt_reply r;
    pbx_peer_tty_answer_fill(&p, req, PBX_IPC_ANSWER_APPROVE, &r);
    PBX_CHECK(r.request.gen == 9U && r.object.id == 777U && r.job_gen == 2U);
    static pbx_peer_tty_views v;
    pbx_peer_tty_views_init(&v);
    static pbx_ipc_view row;
    memset(&row, 0, sizeof(row));
    row.kind = PBX_IPC_VIEW_ACTIVE;
    row.grant.index = 1;
    row.grant.gen = 1;
    row.ctx = p.ctx;
    row.object = p.object;
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 1000U), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 2000U), 0U); /* repeat */
    row.object.gen = 6;
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 3000U),
                 PBX_PEER_E_CONFLICT);
    row.kind = PBX_IPC_VIEW_REMOVE;
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 3000U),
                 PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 1U);
    /* The repeat kept the first ACTIVE time; no prompt: no selector. */
    PBX_CHECK(strstr(text, " since 1000 request - selector - label - "
                           "program /bin/cat digest ") != NULL);
    row.object.gen = 5;
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 4000U), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 4000U), 0U); /* again */
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 0U);
}

PBX_TEST(peers_tty_views_remember_their_route)
{
    static pbx_peer_tty_views v;
    pbx_peer_tty_views_init(&v);
    static pbx_ipc_view row;
    memset(&row, 0, sizeof(row));
    row.kind = PBX_IPC_VIEW_ACTIVE;
    row.ctx = tt_ctx(PBX_IPC_URGENCY_ROUTINE);
    row.grant = (pbx_ipc_id){1, 1};
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 10U), 0U);
    row.grant = (pbx_ipc_id){2, 1};
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 4, 10U), 0U);
    row.grant = (pbx_ipc_id){3, 7};
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 10U), 0U);
    /* An identical repeat on route 5 moves grant 2.1 there. */
    row.grant = (pbx_ipc_id){2, 1};
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 5, 20U), 0U);
    char text[4096];
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 3U);
    pbx_ipc_id g = {0, 0};
    uint32_t seen = 0;
    for (int i = 0; i < 4 && pbx_peer_tty_views_take_route(&v, 3, &g); i++) {
        seen |= g.index == 1U && g.gen == 1U ? 1U : 0U;
        seen |= g.index == 3U && g.gen == 7U ? 2U : 0U;
        seen |= g.index == 2U ? 4U : 0U;
    }
    PBX_CHECK_EQ(seen, 3U);
    PBX_CHECK(!pbx_peer_tty_views_take_route(&v, 3, &g));
    PBX_CHECK(!pbx_peer_tty_views_take_route(&v, 4, &g));
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 1U);
    PBX_CHECK(strncmp(text, "grant 2.1 ", 10) == 0);
    PBX_CHECK(pbx_peer_tty_views_take_route(&v, 5, &g));
    PBX_CHECK(g.index == 2U && g.gen == 1U);
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 0U);
}

/* Reads the terminal's output until it holds want (or ms pass). */
static bool tt_read_for(int master, char *buf, size_t cap, const char *want,
                        int ms)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < ms / 50 && strstr(buf, want) == NULL; i++) {
        struct pollfd p = {master, POLLIN, 0};
        if (poll(&p, 1, 50) == 1 && len + 1U < cap) {
            ssize_t r = read(master, buf + len, cap - 1U - len);
            len += r > 0 ? (size_t)r : 0U;
            buf[len] = '\0';
        }
    }
    return strstr(buf, want) != NULL;
}

/* Reads the terminal's output until it holds want (or 3 s pass). */
static bool tt_read_until(int master, char *buf, size_t cap, const char *want)
{
    return tt_read_for(master, buf, cap, want, 3000);
}

/* Sends a PROMPT on route and returns after the reply is in *m. */
static void tt_prompt_send(int route)
{
    pbx_ipc_prompt p = tt_prompt("docs/report.txt");
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {4, 9};
    PBX_CHECK_EQ(pbx_ipc_prompt_encode(id, &p, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send(route, buf, n, -1) == 0);
}

/* Connects to ttyd's query socket at path and reads every row until
 * ttyd closes (at most 3 s); returns the bytes read (NUL-terminated in
 * buf) or -1 when the socket could not be read. */
static long tt_query(const char *path, char *buf, size_t cap)
{
    int fd = pbx_peer_io_connect(path, SOCK_STREAM);
    if (fd < 0) {
        return -1;
    }
    size_t got = 0;
    long result = -1;
    for (int i = 0; i < 1000 && got + 1U < cap; i++) {
        if (!tp_readable(fd, 3000)) {
            break;
        }
        ssize_t r = read(fd, buf + got, cap - 1U - got);
        if (r == 0) {
            result = (long)got;
            break;
        }
        if (r < 0 && errno != EINTR) {
            break;
        }
        got += r > 0 ? (size_t)r : 0U;
    }
    buf[got] = '\0';
    (void)close(fd);
    return result;
}

/* When set (before tt_up): ttyd gets --hold with this path. */
static const char *g_tt_hold;

/* Starts ttyd on a fresh pty; returns the pid, the master and route. */
static pid_t tt_up(int *master, int *route, char *views, size_t views_len)
{
    const char *d = tp_tmpdir();
    char pol[512];
    (void)snprintf(pol, sizeof(pol), "%s/policy", d);
    (void)snprintf(views, views_len, "%s/ttyd.sock", d);
    static const char rules[] =
        "1 * read file routine allow\n* * * * exceptional prompt\n";
    int pf = open(pol, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(pf >= 0);
    PBX_CHECK(write(pf, rules, sizeof(rules) - 1U) ==
              (ssize_t)(sizeof(rules) - 1U));
    (void)close(pf);
    *master = posix_openpt(O_RDWR | O_NOCTTY);
    PBX_REQUIRE(*master >= 0 && grantpt(*master) == 0 &&
                unlockpt(*master) == 0);
    const char *slave = ptsname(*master);
    PBX_REQUIRE(slave != NULL);
    int rp[2];
    PBX_REQUIRE(tp_seqpair(rp));
    char rarg[16];
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--policy", pol,   "--tty", slave, "--route-fd", rarg,
                          "--query",  views, NULL,    NULL,  NULL};
    if (g_tt_hold != NULL) {
        args[8] = "--hold";
        args[9] = g_tt_hold;
    }
    pid_t pid = tp_spawn("ttyd", args, &rp[1], 1, -1);
    (void)close(rp[1]);
    *route = rp[0];
    PBX_REQUIRE(pid > 0);
    return pid;
}

PBX_TEST(peers_ttyd_policy_prompt_view)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    pbx_ipc_policy pr;
    memset(&pr, 0, sizeof(pr));
    pr.ctx = tt_ctx(PBX_IPC_URGENCY_ROUTINE);
    pr.object.id = 777;
    pr.object.gen = 5;
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {4, 9};
    pbx_ipc_policy_reply rep;
    for (int u = 1; u <= 2; u++) {
        pr.ctx.urgency = (uint8_t)u;
        PBX_CHECK_EQ(pbx_ipc_policy_encode(id, &pr, buf, sizeof(buf), &n),
                     PBX_OK);
        /* Every reply echoes the call's seq. */
        PBX_CHECK_EQ(pbx_ipc_frame_set_seq(buf, n, 0xC0DE0000U + (uint32_t)u),
                     PBX_OK);
        PBX_REQUIRE(pbx_peer_io_call(route, buf, n, -1, &m, 3000) == 0);
        PBX_CHECK_EQ(m.frame.seq, 0xC0DE0000U + (uint32_t)u);
        PBX_CHECK_EQ(pbx_ipc_policy_reply_decode(&m.frame, &rep), PBX_OK);
        PBX_CHECK_EQ(rep.verdict,
                     u == 1 ? PBX_IPC_VERDICT_ALLOW : PBX_IPC_VERDICT_PROMPT);
        PBX_CHECK(rep.urgency == u && rep.session == 1U && rep.realm == 3U);
    }
    /* Type-ahead before the prompt: RETRY, and the input is discarded. */
    PBX_CHECK(write(master, "y\n", 2) == 2);
    struct timespec ts = {0, 100L * 1000L * 1000L};
    (void)nanosleep(&ts, NULL);
    tt_prompt_send(route);
    pbx_ipc_prompt_reply ans;
    PBX_REQUIRE(pbx_peer_io_recv_frame(route, &m) == 0 && m.err == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_prompt_reply_decode(&m.frame, &ans), PBX_OK);
    PBX_CHECK(ans.retry);
    /* Now the prompt is shown; the user types y on the terminal. */
    tt_prompt_send(route);
    char out[4096];
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "Approve? [y/n]"));
    PBX_CHECK(strstr(out, "selector: \"docs/report.txt\"") != NULL);
    PBX_CHECK(write(master, "y\n", 2) == 2);
    PBX_REQUIRE(pbx_peer_io_recv_frame(route, &m) == 0 && m.err == PBX_OK);
    PBX_CHECK_EQ(pbx_ipc_prompt_reply_decode(&m.frame, &ans), PBX_OK);
    PBX_CHECK(!ans.retry && ans.answer == PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK(ans.request.index == 4U && ans.request.gen == 9U &&
              ans.object.id == 777U && ans.job_id == 11U);
    /* VIEW ACTIVE then REMOVE, listed in the view file. */
    static pbx_ipc_view v;
    memset(&v, 0, sizeof(v));
    v.kind = PBX_IPC_VIEW_ACTIVE;
    v.grant.index = 4;
    v.grant.gen = 2;
    v.ctx = tt_ctx(PBX_IPC_URGENCY_ROUTINE);
    v.object = pr.object;
    v.target.process_id = 7;
    v.target.process_gen = 1;
    v.target.slot = 40;
    v.installed_slot = 40;
    for (int k = 1; k <= 2; k++) {
        v.kind = (uint8_t)k;
        PBX_CHECK_EQ(pbx_ipc_view_encode(id, &v, buf, sizeof(buf), &n), PBX_OK);
        PBX_CHECK_EQ(pbx_ipc_frame_set_seq(buf, n, UINT32_MAX - (uint32_t)k),
                     PBX_OK);
        PBX_REQUIRE(pbx_peer_io_call(route, buf, n, -1, &m, 3000) == 0);
        PBX_CHECK_EQ(m.frame.seq, UINT32_MAX - (uint32_t)k);
        pbx_ipc_view_ack ack;
        PBX_CHECK_EQ(pbx_ipc_view_reply_decode(&m.frame, &ack), PBX_OK);
        PBX_CHECK(ack.kind == k && ack.grant.gen == 2U);
        PBX_CHECK_EQ(tt_query(views, out, sizeof(out)) > 0, k == 1);
        PBX_CHECK_EQ(strstr(out, "grant 4.2 read file") != NULL, k == 1);
        /* The approved prompt of object 777.5 named the selector shown. */
        PBX_CHECK_EQ(strstr(out, " lifetime one-shot since ") != NULL &&
                         strstr(out,
                                " request 4.9 selector docs/report.txt "
                                "label - program /bin/cat digest ") != NULL,
                     k == 1);
    }
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}

/* A PROMPT of request id showing object obj (id, gen 1) of selector sel. */
static pbx_ipc_prompt tt_prompt_of(const char *sel, uint64_t obj)
{
    pbx_ipc_prompt p = tt_prompt(sel);
    p.object.id = obj;
    p.object.gen = 1;
    return p;
}

PBX_TEST(peers_tty_views_take_the_selector_an_approved_prompt_showed)
{
    static pbx_peer_tty_views v;
    pbx_peer_tty_views_init(&v);
    pbx_ipc_prompt p = tt_prompt("my docs/a\\b");
    p.selector_digest[0] = 0xAB;
    pbx_peer_tty_views_seen(&v, (pbx_ipc_id){8, 3}, &p);
    static pbx_ipc_view row;
    memset(&row, 0, sizeof(row));
    row.kind = PBX_IPC_VIEW_ACTIVE;
    row.grant = (pbx_ipc_id){1, 1};
    row.ctx = p.ctx;
    row.object = p.object;
    row.label = p.label;
    /* Another digest: not the prompt's grant, nothing taken. */
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 5U), 0U);
    row.grant = (pbx_ipc_id){2, 1};
    row.selector_digest[0] = 0xAB;
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 6U), 0U);
    /* The prompt is taken once: a second grant of the same object and
     * digest (a reused identity) gets no selector. */
    row.grant = (pbx_ipc_id){3, 1};
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 7U), 0U);
    static char text[4 * PBX_PEER_TTY_ROW_BYTES_MAX];
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 3U);
    /* Each row ends with its own selector digest. */
    PBX_CHECK(strstr(text, "grant 1.1 read file object 777.5 job 11 slot 0 "
                           "job-gen 2 lifetime one-shot since 5 request - "
                           "selector - label demo program /bin/cat digest "
                           "00000000000000000000000000000000"
                           "00000000000000000000000000000000\n") != NULL);
    /* Blanks and backslash escaped: the selector is one word. */
    PBX_CHECK(strstr(text, "grant 2.1 read file object 777.5 job 11 slot 0 "
                           "job-gen 2 lifetime one-shot since 6 request 8.3 "
                           "selector my\\x20docs/a\\x5cb label demo "
                           "program /bin/cat digest "
                           "ab000000000000000000000000000000"
                           "00000000000000000000000000000000\n") != NULL);
    PBX_CHECK(strstr(text, "grant 3.1 read file object 777.5 job 11 slot 0 "
                           "job-gen 2 lifetime one-shot since 7 request - "
                           "selector - ") != NULL);
    /* A one-byte "-" label is escaped so "-" alone means none. */
    row.grant = (pbx_ipc_id){4, 1};
    row.label.len = 1;
    row.label.bytes[0] = '-';
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row, 3, 8U), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 4U);
    PBX_CHECK(strstr(text, "label \\x2d program") != NULL);
    PBX_CHECK_EQ(
        pbx_peer_tty_views_row(&v, PBX_PEER_TTY_VIEWS_MAX, text, sizeof(text)),
        0U);
}

PBX_TEST(peers_tty_queue_table)
{
    static pbx_peer_tty_queue q;
    pbx_peer_tty_queue_init(&q);
    PBX_CHECK(pbx_peer_tty_queue_head(&q) == NULL);
    PBX_CHECK(!pbx_peer_tty_queue_show(&q));
    PBX_CHECK(!pbx_peer_tty_queue_pop(&q));
    pbx_ipc_prompt a = tt_prompt_of("docs/a", 100);
    pbx_ipc_prompt b = tt_prompt_of("docs/b", 200);
    const pbx_ipc_id ia = {1, 1};
    const pbx_ipc_id ib = {2, 1};
    PBX_CHECK_EQ(pbx_peer_tty_queue_push(&q, 5, 11, ia, &a), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_queue_push(&q, 5, 12, ib, &b), 0U);
    /* The same request from the same route is held once; from another
     * route it is another call. */
    PBX_CHECK_EQ(pbx_peer_tty_queue_push(&q, 5, 13, ia, &a),
                 PBX_PEER_E_CONFLICT);
    const pbx_peer_tty_queued *h = pbx_peer_tty_queue_head(&q);
    if (h == NULL) {
        pbx_test_fail(__FILE__, __LINE__, "the queue lost its head");
        return;
    }
    PBX_CHECK(h->seq == 11U && h->request.index == 1U && h->route == 5);
    PBX_CHECK(h->prompt.selector == h->selector); /* its own copy */
    PBX_CHECK(memcmp(h->selector, "docs/a", 6) == 0);
    PBX_CHECK(pbx_peer_tty_queue_show(&q));
    PBX_CHECK(!pbx_peer_tty_queue_show(&q));
    /* WITHDRAW: another object is refused; another route finds nothing;
     * the queued one goes silently, the showing one as showing. */
    pbx_ipc_object wrong = {100, 2};
    PBX_CHECK_EQ(pbx_peer_tty_queue_withdraw(&q, 5, ia, wrong),
                 PBX_PEER_TTY_WD_MISMATCH);
    PBX_CHECK_EQ(pbx_peer_tty_queue_withdraw(&q, 6, ia, a.object),
                 PBX_PEER_TTY_WD_UNKNOWN);
    PBX_CHECK_EQ(pbx_peer_tty_queue_withdraw(&q, 5, ib, b.object),
                 PBX_PEER_TTY_WD_QUEUED);
    PBX_CHECK(q.showing && q.count == 1U);
    PBX_CHECK_EQ(pbx_peer_tty_queue_withdraw(&q, 5, ia, a.object),
                 PBX_PEER_TTY_WD_SHOWING);
    PBX_CHECK(!q.showing && q.count == 0U);
    PBX_CHECK_EQ(pbx_peer_tty_queue_withdraw(&q, 5, ia, a.object),
                 PBX_PEER_TTY_WD_UNKNOWN); /* a repeat */
    /* Bounded: past the limit BUSY (the caller answers RETRY); answered
     * prompts leave in arrival order. */
    for (uint32_t i = 0; i < PBX_PEER_TTY_QUEUE_MAX; i++) {
        pbx_ipc_id id = {10U + i, 1U};
        PBX_CHECK_EQ(
            pbx_peer_tty_queue_push(&q, i % 2U == 0U ? 5 : 6, i, id, &a), 0U);
    }
    pbx_ipc_id more = {99, 1};
    PBX_CHECK_EQ(pbx_peer_tty_queue_push(&q, 5, 0, more, &a), PBX_PEER_E_BUSY);
    PBX_CHECK(pbx_peer_tty_queue_show(&q));
    PBX_CHECK(pbx_peer_tty_queue_pop(&q));
    PBX_CHECK_EQ(pbx_peer_tty_queue_head(&q)->request.index, 11U);
    PBX_CHECK(!q.showing);
    /* A route that closes takes its prompts with it, the showing one too. */
    PBX_CHECK(pbx_peer_tty_queue_show(&q));
    bool was = false;
    PBX_CHECK_EQ(pbx_peer_tty_queue_drop_route(&q, 6, &was),
                 PBX_PEER_TTY_QUEUE_MAX / 2U);
    PBX_CHECK(was && !q.showing);
    PBX_CHECK_EQ(q.count, PBX_PEER_TTY_QUEUE_MAX / 2U - 1U);
    PBX_CHECK_EQ(pbx_peer_tty_queue_head(&q)->request.index, 12U);
    PBX_CHECK_EQ(pbx_peer_tty_queue_drop_route(&q, 6, &was), 0U);
    PBX_CHECK(!was);
}

/* Sends PROMPT of request id (object obj, selector sel) with seq. */
static void tt_prompt_seq(int route, pbx_ipc_id id, uint64_t obj,
                          const char *sel, uint32_t seq)
{
    pbx_ipc_prompt p = tt_prompt_of(sel, obj);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_prompt_encode(id, &p, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, seq, -1) == 0);
}

/* Receives one reply on route within 3 s into *m, checking its seq. */
static void tt_reply_seq(int route, pbx_peer_msg *m, uint32_t seq)
{
    PBX_REQUIRE(tp_readable(route, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(route, m) == 0);
    PBX_REQUIRE(m->err == PBX_OK);
    PBX_CHECK_EQ(m->frame.seq, seq);
}

/* Expects the PROMPT reply in m: an answer (RETRY when answer is 0) for
 * request id and object obj. */
static void tt_answer_is(const pbx_peer_msg *m, pbx_ipc_id id, uint64_t obj,
                         uint8_t answer)
{
    pbx_ipc_prompt_reply r;
    PBX_REQUIRE(pbx_ipc_prompt_reply_decode(&m->frame, &r) == PBX_OK);
    PBX_CHECK_EQ(r.retry, answer == 0U);
    PBX_CHECK_EQ(m->frame.request.index, id.index);
    PBX_CHECK_EQ(m->frame.request.gen, id.gen);
    if (answer != 0U) {
        PBX_CHECK_EQ(r.answer, answer);
        PBX_CHECK(r.request.index == id.index && r.request.gen == id.gen);
        PBX_CHECK(r.object.id == obj && r.object.gen == 1U);
        PBX_CHECK(r.session == 1U && r.realm == 3U && r.job_id == 11U &&
                  r.job_gen == 2U);
    }
}

/* Sends WITHDRAW of request id, object obj (gen 1), with seq, and checks
 * the exact echo. */
static void tt_withdraw(int route, pbx_ipc_id id, uint64_t obj, uint32_t seq,
                        pbx_peer_msg *m)
{
    pbx_ipc_withdraw w = {{obj, 1}};
    uint8_t buf[128];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_withdraw_encode(id, &w, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, seq, -1) == 0);
    tt_reply_seq(route, m, seq);
    pbx_ipc_withdraw ack;
    PBX_CHECK_EQ(m->frame.status, 0U);
    PBX_CHECK_EQ(pbx_ipc_withdraw_reply_decode(&m->frame, &ack), PBX_OK);
    PBX_CHECK(ack.object.id == obj && ack.object.gen == 1U);
    PBX_CHECK(m->frame.request.index == id.index &&
              m->frame.request.gen == id.gen);
}

/* A VIEW row of grant {4, 2} for object obj. */
static void tt_view_row(pbx_ipc_view *v, uint8_t kind, uint64_t obj)
{
    memset(v, 0, sizeof(*v));
    v->kind = kind;
    v->grant.index = 4;
    v->grant.gen = 2;
    v->ctx = tt_ctx(PBX_IPC_URGENCY_ROUTINE);
    v->object.id = obj;
    v->object.gen = 1;
    v->target.process_id = 7;
    v->target.process_gen = 1;
    v->target.slot = 40;
    v->installed_slot = 40;
}

/* Sends VIEW (kind) with seq; returns the reply status (0: exact ack). */
static uint16_t tt_view_seq(int route, uint8_t kind, uint64_t obj, uint32_t seq,
                            pbx_peer_msg *m)
{
    static pbx_ipc_view v;
    tt_view_row(&v, kind, obj);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {4, 9};
    PBX_CHECK_EQ(pbx_ipc_view_encode(id, &v, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, seq, -1) == 0);
    tt_reply_seq(route, m, seq);
    if (m->frame.status != 0U) {
        return m->frame.status;
    }
    pbx_ipc_view_ack ack;
    PBX_CHECK_EQ(pbx_ipc_view_reply_decode(&m->frame, &ack), PBX_OK);
    PBX_CHECK(ack.kind == kind && ack.grant.index == 4U && ack.grant.gen == 2U);
    return 0U;
}

/* Sends POLICY (routine: ALLOW by the test policy) with seq; checks it. */
static void tt_policy_seq(int route, uint32_t seq, pbx_peer_msg *m)
{
    pbx_ipc_policy pr;
    memset(&pr, 0, sizeof(pr));
    pr.ctx = tt_ctx(PBX_IPC_URGENCY_ROUTINE);
    pr.object.id = 777;
    pr.object.gen = 5;
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {4, 9};
    PBX_CHECK_EQ(pbx_ipc_policy_encode(id, &pr, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, seq, -1) == 0);
    tt_reply_seq(route, m, seq);
    pbx_ipc_policy_reply rep;
    PBX_CHECK_EQ(pbx_ipc_policy_reply_decode(&m->frame, &rep), PBX_OK);
    PBX_CHECK_EQ(rep.verdict, PBX_IPC_VERDICT_ALLOW);
}

PBX_TEST(peers_ttyd_serves_policy_and_view_while_a_prompt_waits)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    char out[8192];
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    const pbx_ipc_id a = {6, 3};
    tt_prompt_seq(route, a, 600, "docs/waiting.txt", 0xA0000001U);
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "Approve? [y/n]"));
    PBX_CHECK(strstr(out, "request : 6.3") != NULL);
    /* Nobody answers: powerboxd's other calls are served meanwhile. */
    tt_policy_seq(route, 0xA0000002U, &m);
    PBX_CHECK_EQ(tt_view_seq(route, PBX_IPC_VIEW_ACTIVE, 600, 0xA0000003U, &m),
                 0U);
    PBX_CHECK(tt_query(views, out, sizeof(out)) > 0 &&
              strstr(out, "grant 4.2 read file object 600.1") != NULL);
    PBX_CHECK_EQ(tt_view_seq(route, PBX_IPC_VIEW_REMOVE, 600, 0xA0000004U, &m),
                 0U);
    PBX_CHECK(tt_query(views, out, sizeof(out)) == 0);
    PBX_CHECK(!tp_readable(route, 100)); /* the PROMPT is still unanswered */
    /* Now the user answers: the reply echoes the PROMPT's seq. */
    PBX_CHECK(write(master, "y\n", 2) == 2);
    tt_reply_seq(route, &m, 0xA0000001U);
    tt_answer_is(&m, a, 600, PBX_IPC_ANSWER_APPROVE);
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}

PBX_TEST(peers_ttyd_two_prompts_shown_one_at_a_time_answered_in_order)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    char out[8192];
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    const pbx_ipc_id a = {6, 3};
    const pbx_ipc_id b = {7, 1};
    tt_prompt_seq(route, a, 600, "docs/first.txt", 21);
    tt_prompt_seq(route, b, 700, "docs/second.txt", 22);
    /* Only the first shows, naming its program and exact object. */
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "Approve? [y/n]"));
    PBX_CHECK(strstr(out, "program : /bin/cat") != NULL);
    PBX_CHECK(strstr(out, "object  : 600 gen 1") != NULL);
    PBX_CHECK(strstr(out, "selector: \"docs/first.txt\"") != NULL);
    PBX_CHECK(!tt_read_for(master, out, sizeof(out), "docs/second.txt", 300));
    PBX_CHECK(!tp_readable(route, 50));
    PBX_CHECK(write(master, "y\n", 2) == 2);
    tt_reply_seq(route, &m, 21);
    tt_answer_is(&m, a, 600, PBX_IPC_ANSWER_APPROVE);
    /* Then the second shows, and its own answer goes to its own call. */
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "docs/second.txt"));
    PBX_CHECK(strstr(out, "object  : 700 gen 1") != NULL);
    PBX_CHECK(!tp_readable(route, 50));
    /* One key answers, without Enter; any other key is ignored. */
    PBX_CHECK(write(master, "m\r", 2) == 2);
    PBX_CHECK(!tp_readable(route, 200));
    PBX_CHECK(write(master, "n", 1) == 1);
    tt_reply_seq(route, &m, 22);
    tt_answer_is(&m, b, 700, PBX_IPC_ANSWER_DENY);
    PBX_CHECK(!tp_readable(route, 100));
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}

PBX_TEST(peers_ttyd_withdraw_showing_queued_and_unknown_prompts)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    char out[8192];
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    const pbx_ipc_id a = {6, 3};
    const pbx_ipc_id b = {7, 1};
    const pbx_ipc_id c = {8, 4};
    tt_prompt_seq(route, a, 600, "docs/first.txt", 31);
    tt_prompt_seq(route, b, 700, "docs/second.txt", 32);
    tt_prompt_seq(route, c, 800, "docs/third.txt", 33);
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "docs/first.txt"));
    /* The queued one goes silently; the first still shows. */
    tt_withdraw(route, b, 700, 34, &m);
    PBX_CHECK(!tt_read_for(master, out, sizeof(out), "withdrawn", 300));
    /* Another object under a's id is not a's prompt: refused, seq echoed. */
    pbx_ipc_withdraw w = {{601, 1}};
    uint8_t buf[128];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_withdraw_encode(a, &w, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, 35, -1) == 0);
    tt_reply_seq(route, &m, 35);
    PBX_CHECK_EQ(m.frame.status, PBX_PEER_E_MISMATCH);
    /* The showing one leaves the terminal, which says so; the next (c,
     * not the withdrawn b) shows. */
    tt_withdraw(route, a, 600, 36, &m);
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "docs/third.txt"));
    PBX_CHECK(strstr(out, "[prompt for request 6.3 withdrawn]") != NULL);
    PBX_CHECK(strstr(out, "docs/second.txt") == NULL);
    /* Unknown and repeated withdrawals are acknowledged with the echo. */
    const pbx_ipc_id never = {40, 9};
    tt_withdraw(route, never, 4000, 37, &m);
    tt_withdraw(route, a, 600, 38, &m);
    /* The answer goes to c; a and b are never answered. */
    PBX_CHECK(write(master, "y\n", 2) == 2);
    tt_reply_seq(route, &m, 33);
    tt_answer_is(&m, c, 800, PBX_IPC_ANSWER_APPROVE);
    PBX_CHECK(!tp_readable(route, 200));
    /* A late answer, typed after the withdrawal of the only prompt,
     * answers nothing, and never a later prompt: that one is RETRY. */
    tt_prompt_seq(route, a, 600, "docs/first.txt", 39);
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "docs/first.txt"));
    tt_withdraw(route, a, 600, 40, &m);
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "withdrawn"));
    PBX_CHECK(write(master, "y\n", 2) == 2);
    PBX_CHECK(!tp_readable(route, 200));
    tt_prompt_seq(route, b, 700, "docs/second.txt", 41);
    tt_reply_seq(route, &m, 41);
    tt_answer_is(&m, b, 700, 0U);
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}

PBX_TEST(peers_ttyd_full_queue_retry_and_error_replies_echo_seq)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    char out[8192];
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    for (uint32_t i = 0; i < PBX_PEER_TTY_QUEUE_MAX; i++) {
        pbx_ipc_id id = {100U + i, 1U};
        tt_prompt_seq(route, id, 1000U + i, "docs/many.txt", 500U + i);
    }
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "request : 100.1"));
    /* Full: the next PROMPT is answered RETRY (authority-free) at once. */
    const pbx_ipc_id extra = {200, 1};
    tt_prompt_seq(route, extra, 2000, "docs/many.txt", 0xFFFFFFFFU);
    tt_reply_seq(route, &m, 0xFFFFFFFFU);
    tt_answer_is(&m, extra, 2000, 0U);
    /* A second PROMPT of a held request is refused; the first call stays
     * the one that will be answered. */
    const pbx_ipc_id held = {101, 1};
    tt_prompt_seq(route, held, 1001, "docs/many.txt", 77);
    tt_reply_seq(route, &m, 77);
    PBX_CHECK_EQ(m.frame.status, PBX_PEER_E_CONFLICT);
    /* Error replies echo seq: a VIEW REMOVE of another row, an op ttyd
     * does not serve, a body that does not decode. */
    PBX_CHECK_EQ(tt_view_seq(route, PBX_IPC_VIEW_ACTIVE, 600, 78, &m), 0U);
    PBX_CHECK_EQ(tt_view_seq(route, PBX_IPC_VIEW_REMOVE, 601, 79, &m),
                 PBX_PEER_E_MISMATCH);
    pbx_ipc_retire rt = {{5, 1}, 9, PBX_IPC_CLASS_FILE};
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {4, 9};
    PBX_CHECK_EQ(pbx_ipc_retire_encode(id, &rt, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, 80, -1) == 0);
    tt_reply_seq(route, &m, 80);
    PBX_CHECK_EQ(m.frame.status, PBX_PEER_E_ROUTE);
    PBX_CHECK_EQ(m.frame.op, PBX_IPC_OP_RETIRE | PBX_IPC_REPLY_BIT);
    pbx_ipc_withdraw w = {{5, 1}};
    PBX_CHECK_EQ(pbx_ipc_withdraw_encode(id, &w, buf, sizeof(buf), &n), PBX_OK);
    buf[PBX_IPC_HEADER_BYTES + 12U] = 1U; /* a reserved byte */
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, 81, -1) == 0);
    tt_reply_seq(route, &m, 81);
    PBX_CHECK_EQ(m.frame.status, PBX_E_IPC_RESERVED);
    PBX_CHECK_EQ(m.frame.op, PBX_IPC_OP_WITHDRAW | PBX_IPC_REPLY_BIT);
    /* The first prompt still shows and is still answered. */
    PBX_CHECK(write(master, "y\n", 2) == 2);
    const pbx_ipc_id first = {100, 1};
    tt_reply_seq(route, &m, 500);
    tt_answer_is(&m, first, 1000, PBX_IPC_ANSWER_APPROVE);
    /* powerboxd hangs up: its prompts leave the terminal. */
    (void)close(route);
    PBX_CHECK(
        tt_read_until(master, out, sizeof(out), "request 101.1 withdrawn"));
    (void)close(master);
    (void)tp_stop(pid);
}

PBX_TEST(peers_ttyd_stalled_serves_its_backlog_in_order)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    PBX_CHECK_EQ(tt_view_seq(route, PBX_IPC_VIEW_ACTIVE, 600, 1, &m), 0U);
    /* Stopped while the grant is revoked: REMOVE (and powerboxd's
     * retry of it) wait in the route until ttyd runs again. */
    PBX_REQUIRE(tp_stall(pid, true));
    static pbx_ipc_view v;
    tt_view_row(&v, PBX_IPC_VIEW_REMOVE, 600);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {4, 9};
    PBX_CHECK_EQ(pbx_ipc_view_encode(id, &v, buf, sizeof(buf), &n), PBX_OK);
    for (uint32_t s = 2; s <= 4; s++) {
        PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, s, -1) == 0);
    }
    PBX_CHECK(!tp_readable(route, 200));
    PBX_REQUIRE(tp_stall(pid, false));
    for (uint32_t s = 2; s <= 4; s++) {
        tt_reply_seq(route, &m, s);
        PBX_CHECK_EQ(m.frame.status, 0U);
    }
    char out[512];
    PBX_CHECK(tt_query(views, out, sizeof(out)) == 0);
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}

/* Publishes ACTIVE rows for grants 1..count (object 1000+i) on route. */
static void tt_fill_views(int route, uint32_t count, pbx_peer_msg *m)
{
    static pbx_ipc_view v;
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    for (uint32_t i = 1; i <= count; i++) {
        tt_view_row(&v, PBX_IPC_VIEW_ACTIVE, 1000U + i);
        v.grant.index = i;
        size_t n = 0;
        PBX_CHECK_EQ(pbx_ipc_view_encode(v.grant, &v, buf, sizeof(buf), &n),
                     PBX_OK);
        PBX_REQUIRE(pbx_peer_io_call(route, buf, n, -1, m, 3000) == 0);
        PBX_REQUIRE(m->frame.status == 0U);
    }
}

/* Counts the lines of text. */
static size_t tt_lines(const char *text)
{
    size_t n = 0;
    for (const char *c = strchr(text, '\n'); c != NULL;
         c = strchr(c + 1, '\n')) {
        n++;
    }
    return n;
}

PBX_TEST(peers_ttyd_query_reader_that_never_reads_is_dropped)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    /* A full table: more rows than one socket buffer takes at once. */
    tt_fill_views(route, PBX_PEER_TTY_VIEWS_MAX, &m);
    int stuck = pbx_peer_io_connect(views, SOCK_STREAM);
    PBX_REQUIRE(stuck >= 0);
    /* It reads nothing: ttyd still answers its route at once. */
    struct timespec t0;
    struct timespec t1;
    (void)clock_gettime(CLOCK_MONOTONIC, &t0);
    tt_policy_seq(route, 77, &m);
    (void)clock_gettime(CLOCK_MONOTONIC, &t1);
    PBX_CHECK(t1.tv_sec - t0.tv_sec < 1);
    /* A reader that reads gets every row meanwhile. */
    static char out[PBX_PEER_TTY_VIEWS_MAX * 256U];
    PBX_CHECK(tt_query(views, out, sizeof(out)) > 0);
    PBX_CHECK_EQ(tt_lines(out), (size_t)PBX_PEER_TTY_VIEWS_MAX);
    PBX_CHECK(strstr(out, "grant 1024.2 read file object 2024.1 ") != NULL);
    /* The one that never read is closed at its deadline (2 s): what it
     * reads then is a part of the list, then end of file. */
    struct timespec ts = {2, 500L * 1000L * 1000L};
    (void)nanosleep(&ts, NULL);
    size_t got = 0;
    bool eof = false;
    for (int i = 0; i < 10000 && !eof && tp_readable(stuck, 1000); i++) {
        ssize_t r = read(stuck, out, sizeof(out));
        eof = r <= 0;
        got += r > 0 ? (size_t)r : 0U;
    }
    PBX_CHECK(eof);
    PBX_CHECK(got > 0U && got < (size_t)PBX_PEER_TTY_VIEWS_MAX * 100U);
    (void)close(stuck);
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}

PBX_TEST(peers_ttyd_duplicate_active_and_unheld_remove_are_acknowledged)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    char out[4096];
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    static pbx_ipc_view v;
    memset(&v, 0, sizeof(v));
    v.grant.index = 6;
    v.grant.gen = 3;
    v.ctx = tt_ctx(PBX_IPC_URGENCY_ROUTINE);
    v.object.id = 901;
    v.object.gen = 1;
    v.target.process_id = 7;
    v.target.process_gen = 1;
    v.target.slot = 40;
    v.installed_slot = 40;
    /* A restarted ttyd gets every live row again: a REMOVE of a row it
     * never held, then the same ACTIVE twice; each is acknowledged
     * exactly, and the view holds the row once. */
    static const uint8_t kinds[] = {PBX_IPC_VIEW_REMOVE, PBX_IPC_VIEW_ACTIVE,
                                    PBX_IPC_VIEW_ACTIVE};
    for (size_t k = 0; k < sizeof(kinds); k++) {
        size_t n = 0;
        pbx_ipc_id id = {6, (uint32_t)(10U + k)};
        pbx_ipc_view_ack ack;
        v.kind = kinds[k];
        PBX_CHECK_EQ(pbx_ipc_view_encode(id, &v, buf, sizeof(buf), &n), PBX_OK);
        PBX_REQUIRE(pbx_peer_io_call(route, buf, n, -1, &m, 3000) == 0);
        PBX_CHECK_EQ(m.frame.status, 0U);
        PBX_CHECK_EQ(pbx_ipc_view_reply_decode(&m.frame, &ack), PBX_OK);
        PBX_CHECK(ack.kind == kinds[k] && ack.grant.index == 6U &&
                  ack.grant.gen == 3U);
    }
    PBX_CHECK(tt_query(views, out, sizeof(out)) > 0);
    const char *first = strstr(out, "grant 6.3 ");
    PBX_CHECK(first != NULL && strstr(first + 1, "grant 6.3 ") == NULL);
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}

/* ttyd given /dev/null as its terminal (pbx up without one): nobody can
 * answer there, so every PROMPT is answered DENY at once, with every
 * identity echoed, never RETRY (which would have powerboxd ask forever);
 * POLICY is still served. */
PBX_TEST(peers_ttyd_no_terminal_denies_prompts_at_once)
{
    static pbx_peer_msg m;
    const char *d = tp_tmpdir();
    char pol[512];
    (void)snprintf(pol, sizeof(pol), "%s/policy-null", d);
    static const char rules[] =
        "1 * read file routine allow\n* * * * * prompt\n";
    int pf = open(pol, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(pf >= 0);
    PBX_CHECK(write(pf, rules, sizeof(rules) - 1U) ==
              (ssize_t)(sizeof(rules) - 1U));
    (void)close(pf);
    int rp[2];
    PBX_REQUIRE(tp_seqpair(rp));
    char rarg[16];
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--policy",   pol,  "--tty", "/dev/null",
                          "--route-fd", rarg, NULL};
    pid_t pid = tp_spawn("ttyd", args, &rp[1], 1, -1);
    (void)close(rp[1]);
    PBX_REQUIRE(pid > 0);
    int route = rp[0];
    /* Three prompts in a row, the later ones queued behind the first:
     * each is denied within a second, in order. */
    for (uint32_t k = 0; k < 3U; k++) {
        pbx_ipc_id id = {40U + k, 1};
        tt_prompt_seq(route, id, 900U + k, "docs/readme.txt", 0x5000U + k);
    }
    for (uint32_t k = 0; k < 3U; k++) {
        pbx_ipc_id id = {40U + k, 1};
        PBX_REQUIRE(tp_readable(route, 1000));
        PBX_REQUIRE(pbx_peer_io_recv_frame(route, &m) == 0);
        PBX_REQUIRE(m.err == PBX_OK);
        PBX_CHECK_EQ(m.frame.seq, 0x5000U + k);
        tt_answer_is(&m, id, 900U + k, PBX_IPC_ANSWER_DENY);
    }
    /* Nothing else follows: no late RETRY of a denied prompt. */
    PBX_CHECK(!tp_readable(route, 200));
    tt_policy_seq(route, 0x6000U, &m);
    (void)close(route);
    (void)tp_stop(pid);
}

/* A ttyd started with --attach-fd and no route: the supervisor's end of
 * the channel, the query socket path and the log ttyd writes. */
typedef struct tt_attached {
    pid_t pid;
    int chan;
    char views[512];
    char log[512];
} tt_attached;

/* Starts ttyd on /dev/null with --attach-fd and no route, its log in a
 * directory of its own ($TMPDIR for tp_spawn). */
static void tt_attach_up(tt_attached *t)
{
    const char *d = tp_tmpdir();
    char pol[512];
    (void)snprintf(pol, sizeof(pol), "%s/policy", d);
    (void)snprintf(t->views, sizeof(t->views), "%s/ttyd.sock", d);
    (void)snprintf(t->log, sizeof(t->log), "%s/pbx-peer-ttyd.log", d);
    static const char rules[] = "1 * read file routine allow\n";
    int pf = open(pol, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(pf >= 0);
    PBX_CHECK(write(pf, rules, sizeof(rules) - 1U) ==
              (ssize_t)(sizeof(rules) - 1U));
    (void)close(pf);
    int ch[2];
    PBX_REQUIRE(tp_seqpair(ch));
    char carg[16];
    (void)snprintf(carg, sizeof(carg), "%d", ch[1]);
    const char *args[] = {"--policy",    pol,       "--tty",
                          "/dev/null",   "--query", t->views,
                          "--attach-fd", carg,      NULL};
    static char old[512];
    const char *env = getenv("TMPDIR");
    (void)snprintf(old, sizeof(old), "%s", env != NULL ? env : "");
    PBX_REQUIRE(setenv("TMPDIR", d, 1) == 0);
    t->pid = tp_spawn("ttyd", args, &ch[1], 1, -1);
    if (env != NULL) {
        (void)setenv("TMPDIR", old, 1);
    } else {
        (void)unsetenv("TMPDIR");
    }
    (void)close(ch[1]);
    t->chan = ch[0];
    PBX_REQUIRE(t->pid > 0);
}

/* Sends VIEW (kind) of grant g for object obj on route; checks the ack. */
static void tt_view_grant(int route, uint8_t kind, pbx_ipc_id g, uint64_t obj)
{
    static pbx_ipc_view v;
    static pbx_peer_msg m;
    tt_view_row(&v, kind, obj);
    v.grant = g;
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_ipc_view_encode(g, &v, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK(pbx_peer_io_send_seq(route, buf, n, 77U, -1) == 0);
    tt_reply_seq(route, &m, 77U);
    PBX_CHECK_EQ(m.frame.status, 0U);
}

/* Refusals on the channel: wrong descriptor count, a DGRAM socket, an op
 * that is not ttyd's; each answers status 1 and closes what came (the
 * pair's other end then reads end of file). */
static void tt_attach_refusals(const tt_attached *t)
{
    int a[2];
    int b[2];
    PBX_REQUIRE(tp_seqpair(a) && tp_seqpair(b));
    int two[2] = {a[1], b[1]};
    PBX_CHECK_EQ(tp_attach_send(t->chan, 'R', two, 2U, 'r'), 1U);
    (void)close(a[1]);
    (void)close(b[1]);
    PBX_CHECK(tp_hung_up(a[0], 2000) && tp_hung_up(b[0], 2000));
    PBX_CHECK(tp_logged(
        t->log, "ttyd: attach channel: refused: wrong descriptor count"));
    PBX_CHECK_EQ(tp_attach_send(t->chan, 'R', NULL, 0U, 'r'), 1U);
    int dg[2];
    PBX_REQUIRE(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, dg) == 0);
    PBX_CHECK_EQ(tp_attach_send(t->chan, 'R', &dg[1], 1U, 'r'), 1U);
    PBX_CHECK(
        tp_logged(t->log, "ttyd: attach channel: refused: wrong socket type"));
    int c[2];
    PBX_REQUIRE(tp_seqpair(c));
    PBX_CHECK_EQ(tp_attach_send(t->chan, 'L', &c[1], 1U, 'l'), 1U);
    (void)close(c[1]);
    PBX_CHECK(tp_hung_up(c[0], 2000));
    PBX_CHECK(tp_logged(
        t->log, "ttyd: attach channel: refused: wrong op for this peer"));
    pbx_peer_io_close_all(a, 1U);
    pbx_peer_io_close_all(b, 1U);
    pbx_peer_io_close_all(dg, 2U);
    pbx_peer_io_close_all(c, 1U);
}

/* Adopts a fresh route over the channel; returns powerboxd's end. */
static int tt_attach_route(const tt_attached *t)
{
    int r[2];
    PBX_REQUIRE(tp_seqpair(r));
    PBX_CHECK_EQ(tp_attach_send(t->chan, 'R', &r[1], 1U, 'r'), 0U);
    (void)close(r[1]);
    return r[0];
}

/* ttyd started with --attach-fd and no route serves its query socket and
 * waits; refused channel messages answer status 1 with their descriptors
 * closed; an adopted route serves frames; when a route closes, each grant
 * row it published is removed and logged, then counted, and the query
 * lists only the other route's row; the channel's end leaves ttyd
 * serving. */
PBX_TEST(peers_ttyd_attach_channel_and_route_loss)
{
    static pbx_peer_msg m;
    static tt_attached t;
    char out[8192];
    tt_attach_up(&t);
    /* No route at all: ttyd stays up and lists no rows. */
    tp_sleep_ms(100);
    PBX_CHECK_EQ(tt_query(t.views, out, sizeof(out)), 0);
    PBX_CHECK_EQ(waitpid(t.pid, NULL, WNOHANG), 0);
    tt_attach_refusals(&t);
    int ra = tt_attach_route(&t);
    PBX_CHECK(tp_logged(t.log, "ttyd: attach channel: route(s) adopted"));
    tt_policy_seq(ra, 0x100U, &m);
    tt_view_grant(ra, PBX_IPC_VIEW_ACTIVE, (pbx_ipc_id){4, 2}, 600);
    tt_view_grant(ra, PBX_IPC_VIEW_ACTIVE, (pbx_ipc_id){9, 3}, 601);
    int rb = tt_attach_route(&t);
    tt_view_grant(rb, PBX_IPC_VIEW_ACTIVE, (pbx_ipc_id){5, 1}, 602);
    PBX_CHECK(tt_query(t.views, out, sizeof(out)) > 0);
    PBX_CHECK(strstr(out, "grant 4.2 ") != NULL &&
              strstr(out, "grant 9.3 ") != NULL &&
              strstr(out, "grant 5.1 ") != NULL);
    (void)close(ra);
    PBX_CHECK(tp_logged(
        t.log, "ttyd: VIEW ended grant 4.2: route closed (broker lost)\n"));
    PBX_CHECK(tp_logged(
        t.log, "ttyd: VIEW ended grant 9.3: route closed (broker lost)\n"));
    PBX_CHECK(tp_logged(
        t.log, "ttyd: route closed: 2 grant row(s) ended (broker lost)\n"));
    PBX_CHECK(tt_query(t.views, out, sizeof(out)) > 0);
    PBX_CHECK(strstr(out, "grant 4.2 ") == NULL &&
              strstr(out, "grant 9.3 ") == NULL &&
              strstr(out, "grant 5.1 ") != NULL);
    /* The supervisor goes away: ttyd keeps serving its route. */
    (void)close(t.chan);
    PBX_CHECK(tp_logged(t.log, "ttyd: attach channel closed"));
    tt_policy_seq(rb, 0x101U, &m);
    (void)close(rb);
    (void)tp_stop(t.pid);
}

/* Expects exactly line from the hold connection c within 5 s. */
static bool tt_hold_hears(int c, const char *line)
{
    char got[64] = {0};
    size_t n = 0;
    size_t want = strlen(line);
    while (n < want && tp_readable(c, 5000)) {
        ssize_t r = recv(c, got + n, want - n, 0);
        if (r <= 0) {
            return false;
        }
        n += (size_t)r;
    }
    return n == want && memcmp(got, line, n) == 0;
}

PBX_TEST(peers_ttyd_draws_a_prompt_only_over_held_output)
{
    static pbx_peer_msg m;
    int master = -1;
    int route = -1;
    char views[512];
    static char out[16384];
    /* The test plays launchd: it listens where ttyd holds. */
    char hold[512];
    (void)snprintf(hold, sizeof(hold), "%s/hold.sock", tp_tmpdir());
    int lis = pbx_peer_io_listen_private(hold, SOCK_STREAM);
    PBX_REQUIRE(lis >= 0 && listen(lis, 4) == 0);
    g_tt_hold = hold;
    pid_t pid = tt_up(&master, &route, views, sizeof(views));
    g_tt_hold = NULL;
    const pbx_ipc_id a = {6, 3};
    tt_prompt_seq(route, a, 600, "docs/held.txt", 41);
    PBX_REQUIRE(tp_readable(lis, 5000));
    int c = accept(lis, NULL, NULL);
    PBX_REQUIRE(c >= 0);
    PBX_CHECK(tt_hold_hears(c, "HOLD 1\n"));
    /* Not drawn before launchd holds; then drawn after the soft reset. */
    PBX_CHECK(!tt_read_for(master, out, sizeof(out), "Approve?", 300));
    PBX_CHECK(send(c, "HELD 1\n", 7, MSG_NOSIGNAL) == 7);
    PBX_CHECK(tt_read_until(master, out, sizeof(out), "Approve? [y/n]"));
    /* The soft reset, then erase below, then the prompt (the terminal's
     * ONLCR turns the reset's CR LF into CR CR LF). */
    const char *r = strstr(
        out, "\033[0m\033[?25h\033[?1047l\0337\033[r"
             "\033[?6l\0338\033[4l\033[?7h\033(B\017\033 F"
             "\033[?9;1000;1001;1002;1003;1005;1006;1007;1015l"
             "\033[?1004l\033[?2004l\033[?1l\033>\033[>4;0m\033[=0;1u"
             "\033[<99u\033]104\033\\\033]110\033\\\033]111\033\\\033[?5l"
             "\033[0m\r");
    const char *j = r != NULL ? strstr(r, "\033[J") : NULL;
    PBX_CHECK(j != NULL && strstr(j, "=== powerboxd") != NULL);
    PBX_CHECK(strstr(out, "press y or n, no Enter") != NULL);
    /* A terminal's reply (DECRQM), a mouse report at column 57 ('Y')
     * and keypad 9 in application mode (ESC O y) carry y bytes but are
     * no key; the lone n after them answers. Then the hold is released. */
    static const char keys[] = "\033[?2004;2$y\033[MCY!\033Oyn";
    PBX_CHECK(write(master, keys, sizeof(keys) - 1U) ==
              (ssize_t)(sizeof(keys) - 1U));
    tt_reply_seq(route, &m, 41);
    tt_answer_is(&m, a, 600, PBX_IPC_ANSWER_DENY);
    PBX_CHECK(tt_hold_hears(c, "RELEASE 1\n"));
    /* launchd never acknowledges: RETRY after the bound, never drawn. */
    const pbx_ipc_id b = {7, 1};
    tt_prompt_seq(route, b, 700, "docs/unheld.txt", 42);
    PBX_CHECK(tt_hold_hears(c, "HOLD 2\n"));
    tt_reply_seq(route, &m, 42);
    tt_answer_is(&m, b, 700, 0U);
    PBX_CHECK(!tt_read_for(master, out, sizeof(out), "docs/unheld.txt", 100));
    PBX_CHECK(tt_hold_hears(c, "RELEASE 2\n"));
    /* A key typed ahead without Enter is discarded, never the answer. */
    PBX_CHECK(write(master, "y", 1) == 1);
    tp_sleep_ms(100);
    const pbx_ipc_id k = {8, 4};
    tt_prompt_seq(route, k, 800, "docs/ahead.txt", 43);
    PBX_CHECK(tt_hold_hears(c, "HOLD 3\n"));
    PBX_CHECK(send(c, "HELD 3\n", 7, MSG_NOSIGNAL) == 7);
    tt_reply_seq(route, &m, 43);
    tt_answer_is(&m, k, 800, 0U);
    PBX_CHECK(tt_hold_hears(c, "RELEASE 3\n"));
    (void)close(c);
    (void)close(lis);
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}
