/*
 * test_peers_ttyd.c: ttyd's policy parser, decisions, prompt text and
 * VIEW table on cases, and the pbx-ttyd process over a real socketpair
 * with a real pseudo-terminal: POLICY verdicts, PROMPT answered with "y"
 * typed on the terminal, RETRY while type-ahead is pending, and VIEW rows
 * listed in the view file.
 */
#define _XOPEN_SOURCE 700

#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_tty.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row), 0U); /* repeat */
    row.object.gen = 6;
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row), PBX_PEER_E_CONFLICT);
    row.kind = PBX_IPC_VIEW_REMOVE;
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row), PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 1U);
    row.object.gen = 5;
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row), 0U);
    PBX_CHECK_EQ(pbx_peer_tty_views_apply(&v, &row), 0U); /* reconciles */
    PBX_CHECK_EQ(pbx_peer_tty_views_list(&v, text, sizeof(text)), 0U);
}

/* Reads the terminal's output until it holds want (or 3 s pass). */
static bool tt_read_until(int master, char *buf, size_t cap, const char *want)
{
    size_t len = 0;
    buf[0] = '\0';
    for (int i = 0; i < 60 && strstr(buf, want) == NULL; i++) {
        struct pollfd p = {master, POLLIN, 0};
        if (poll(&p, 1, 50) == 1 && len + 1U < cap) {
            ssize_t r = read(master, buf + len, cap - 1U - len);
            len += r > 0 ? (size_t)r : 0U;
            buf[len] = '\0';
        }
    }
    return strstr(buf, want) != NULL;
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

/* Starts ttyd on a fresh pty; returns the pid, the master and route. */
static pid_t tt_up(int *master, int *route, char *views, size_t views_len)
{
    const char *d = tp_tmpdir();
    char pol[512];
    (void)snprintf(pol, sizeof(pol), "%s/policy", d);
    (void)snprintf(views, views_len, "%s/views", d);
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
    const char *args[] = {"--policy",    pol,          "--tty",
                          slave,         "--route-fd", rarg,
                          "--view-file", views,        NULL};
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
        PBX_CHECK_EQ(tp_read_file(views, out, sizeof(out)) > 0, k == 1);
        PBX_CHECK_EQ(strstr(out, "grant 4.2 read file") != NULL, k == 1);
    }
    (void)close(route);
    (void)close(master);
    (void)tp_stop(pid);
}
