/*
 * test_peers_tty_policy.c: ttyd's policy rules by program entry and
 * selector pattern on cases: the 8-field form and its refusals, the old
 * 6-field form unchanged, the glob matcher (components, '*', '?', a last
 * "**", long inputs bounded), the POLICY verdict that defers to the
 * PROMPT when a selector pattern is in the way, the PROMPT-time decision
 * and the rule text `pbx policy` lists. No rule ever allows an exceptional
 * request, with or without a selector.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/lib/pbx_peer_tty.h"
#include "../runner/pbx_test.h"

#include <stdio.h>
#include <string.h>

/* A routine read-file context of session 1, realm 1, entry e. */
static pbx_ipc_context tp_ctx(const char *e, uint8_t urgency)
{
    pbx_ipc_context c;
    memset(&c, 0, sizeof(c));
    c.session = 1;
    c.job_id = 11;
    c.job_gen = 2;
    c.realm = 1;
    c.operation = PBX_IPC_OPERATION_READ;
    c.object_class = PBX_IPC_CLASS_FILE;
    c.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    c.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    c.urgency = urgency;
    c.entry.len = (uint16_t)strlen(e);
    memcpy(c.entry.bytes, e, c.entry.len);
    return c;
}

/* Does pattern match the NUL-terminated text s? */
static bool tp_glob(const char *pattern, const char *s)
{
    return pbx_peer_tty_glob(pattern, (const uint8_t *)s, strlen(s));
}

PBX_TEST(peers_tty_policy_glob)
{
    PBX_CHECK(tp_glob("docs/a.txt", "docs/a.txt"));
    PBX_CHECK(!tp_glob("docs/a.txt", "docs/a.txt2"));
    PBX_CHECK(!tp_glob("docs/a.txt", "docs/a.tx"));
    PBX_CHECK(tp_glob("docs/*.txt", "docs/a.txt"));
    PBX_CHECK(tp_glob("docs/*.txt", "docs/.txt"));
    /* '*' never crosses a '/'. */
    PBX_CHECK(!tp_glob("docs/*.txt", "docs/x/a.txt"));
    PBX_CHECK(!tp_glob("*", "docs/a"));
    PBX_CHECK(tp_glob("*/*", "docs/a"));
    PBX_CHECK(tp_glob("d?cs/a", "docs/a"));
    PBX_CHECK(!tp_glob("d?cs/a", "dcs/a"));
    PBX_CHECK(!tp_glob("docs?a", "docs/a"));
    PBX_CHECK(tp_glob("*a*b*c", "xxaxxbxxc"));
    PBX_CHECK(!tp_glob("*a*b*c", "xxaxxcxxb"));
    /* A last "**" takes one or more components whole. */
    PBX_CHECK(tp_glob("docs/**", "docs/a"));
    PBX_CHECK(tp_glob("docs/**", "docs/a/b/c"));
    PBX_CHECK(!tp_glob("docs/**", "docs"));
    PBX_CHECK(!tp_glob("docs/**", "docs/"));
    PBX_CHECK(!tp_glob("docs/**", "docsx/a"));
    PBX_CHECK(tp_glob("**", "a/b"));
    /* The same number of components, no more, no fewer. */
    PBX_CHECK(!tp_glob("docs/a", "docs/a/b"));
    PBX_CHECK(!tp_glob("docs/a/b", "docs/a"));
    PBX_CHECK(!tp_glob("docs/a", "docs//a"));
    /* Bytes outside ASCII and NUL are matched by '*' and '?' only. */
    PBX_CHECK(pbx_peer_tty_glob("a?b", (const uint8_t *)"a\0b", 3));
    PBX_CHECK(!pbx_peer_tty_glob("ab", (const uint8_t *)"a\0b", 3));
    /* The worst case for a one-star walk finishes (bounded) and answers. */
    static uint8_t big[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    memset(big, 'a', sizeof(big));
    PBX_CHECK(
        !pbx_peer_tty_glob("*a*a*a*a*a*a*a*a*a*a*a*a*a*b", big, sizeof(big)));
    PBX_CHECK(
        pbx_peer_tty_glob("*a*a*a*a*a*a*a*a*a*a*a*a*a*a", big, sizeof(big)));
}

PBX_TEST(peers_tty_policy_format)
{
    static pbx_peer_tty_policy p;
    memset(&p, 0, sizeof(p));
    /* Wrong field counts, bad patterns, an exceptional allow. */
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "* * read file routine cat allow") !=
              NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(
                  &p, "* * read file routine cat docs/** x allow") != NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(
                  &p, "* * read file routine cat docs/**/a allow") != NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(
                  &p, "* * read file routine cat docs/a** allow") != NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(
                  &p, "* * read file exceptional cat docs/** allow") != NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(
                  &p, "* * read file routine cat docs/** maybe") != NULL);
    /* A selector pattern of 250 bytes: longer than any rule may hold. */
    char longer[300];
    (void)snprintf(longer, sizeof(longer),
                   "* * read file routine cat %0250d deny", 0);
    PBX_CHECK(pbx_peer_tty_policy_line(&p, longer) != NULL);
    PBX_CHECK_EQ(p.count, 0U);
    /* The old form still parses, as ENTRY * SELECTOR *. */
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "1 * read file routine allow") ==
              NULL);
    PBX_CHECK(pbx_peer_tty_policy_line(
                  &p, "* 2 write * routine cat docs/*.txt deny # note") ==
              NULL);
    PBX_CHECK_EQ(p.count, 2U);
    char out[512];
    PBX_CHECK(pbx_peer_tty_rule_text(&p.rules[0], out, sizeof(out)) > 0U);
    PBX_CHECK(strcmp(out, "1 * read file routine * * allow") == 0);
    (void)pbx_peer_tty_rule_text(&p.rules[1], out, sizeof(out));
    PBX_CHECK(strcmp(out, "* 2 write * routine cat docs/*.txt deny") == 0);
    /* What rule_text writes parses back to the same rule. */
    static pbx_peer_tty_policy q;
    memset(&q, 0, sizeof(q));
    PBX_CHECK(pbx_peer_tty_policy_line(&q, out) == NULL);
    char back[512];
    (void)pbx_peer_tty_rule_text(&q.rules[0], back, sizeof(back));
    PBX_CHECK(strcmp(back, out) == 0);
    PBX_CHECK_EQ(q.rules[0].verdict, p.rules[1].verdict);
    PBX_CHECK_EQ(q.rules[0].realm, p.rules[1].realm);
    char tiny[8];
    PBX_CHECK_EQ(pbx_peer_tty_rule_text(&p.rules[1], tiny, sizeof(tiny)), 7U);
}

/* A rule naming an operation, class or urgency by a number without a
 * name is written back with that number, so its text parses back to the
 * same rule (fuzz/fuzz_tty.c found "?" written for operation 21). */
PBX_TEST(peers_tty_rule_text_keeps_unnamed_numbers)
{
    static pbx_peer_tty_policy p;
    static pbx_peer_tty_policy q;
    memset(&p, 0, sizeof(p));
    memset(&q, 0, sizeof(q));
    PBX_CHECK(pbx_peer_tty_policy_line(&p, "2 * 21 2 2 deny") == NULL);
    PBX_CHECK_EQ(p.count, 1U);
    char out[512];
    char back[512];
    (void)pbx_peer_tty_rule_text(&p.rules[0], out, sizeof(out));
    PBX_CHECK(strcmp(out, "2 * 21 directory exceptional * * deny") == 0);
    PBX_CHECK(pbx_peer_tty_policy_line(&q, out) == NULL);
    PBX_CHECK_EQ(q.count, 1U);
    PBX_CHECK_EQ(q.rules[0].operation, 21U);
    (void)pbx_peer_tty_rule_text(&q.rules[0], back, sizeof(back));
    PBX_CHECK(strcmp(back, out) == 0);
}

/* The policy the decision cases use. */
static void tp_policy(pbx_peer_tty_policy *p)
{
    memset(p, 0, sizeof(*p));
    static const char *const lines[] = {
        "* * * * exceptional * * prompt",
        "* * read file routine cat secrets/** deny",
        "* * read file routine cat docs/*.txt allow",
        "* * read file routine pbx-* * allow",
        "* * * * * * * prompt",
    };
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
        PBX_CHECK(pbx_peer_tty_policy_line(p, lines[i]) == NULL);
    }
}

/* decide_selector for entry e, urgency u and selector s. */
static uint8_t tp_sel(const pbx_peer_tty_policy *p, const char *e, uint8_t u,
                      const char *s, size_t *rule)
{
    pbx_ipc_context c = tp_ctx(e, u);
    return pbx_peer_tty_decide_selector(p, &c, (const uint8_t *)s, strlen(s),
                                        rule);
}

PBX_TEST(peers_tty_policy_decide)
{
    static pbx_peer_tty_policy p;
    tp_policy(&p);
    const uint8_t r = PBX_IPC_URGENCY_ROUTINE;
    size_t rule = 99;
    PBX_CHECK_EQ(tp_sel(&p, "cat", r, "docs/a.txt", &rule),
                 PBX_IPC_VERDICT_ALLOW);
    PBX_CHECK_EQ(rule, 2U);
    PBX_CHECK_EQ(tp_sel(&p, "cat", r, "secrets/k/a.txt", &rule),
                 PBX_IPC_VERDICT_DENY);
    PBX_CHECK_EQ(rule, 1U);
    PBX_CHECK_EQ(tp_sel(&p, "cat", r, "docs/x/a.txt", &rule),
                 PBX_IPC_VERDICT_PROMPT);
    PBX_CHECK_EQ(rule, 4U);
    PBX_CHECK_EQ(tp_sel(&p, "less", r, "docs/a.txt", NULL),
                 PBX_IPC_VERDICT_PROMPT);
    PBX_CHECK_EQ(tp_sel(&p, "pbx-demo", r, "any/thing", NULL),
                 PBX_IPC_VERDICT_ALLOW);
    PBX_CHECK_EQ(
        tp_sel(&p, "cat", PBX_IPC_URGENCY_EXCEPTIONAL, "docs/a.txt", NULL),
        PBX_IPC_VERDICT_PROMPT);
    /* POLICY has no selector: cat's first candidate rule has a pattern,
     * so the answer waits for the PROMPT; pbx-demo's rule has none. */
    pbx_ipc_context c = tp_ctx("cat", r);
    PBX_CHECK_EQ(pbx_peer_tty_decide(&p, &c), PBX_IPC_VERDICT_PROMPT);
    c = tp_ctx("pbx-demo", r);
    PBX_CHECK_EQ(pbx_peer_tty_decide(&p, &c), PBX_IPC_VERDICT_ALLOW);
    /* The PROMPT then decides with its selector. */
    pbx_ipc_prompt pr;
    memset(&pr, 0, sizeof(pr));
    pr.ctx = tp_ctx("cat", r);
    pr.selector = (const uint8_t *)"docs/a.txt";
    pr.selector_len = 10;
    PBX_CHECK_EQ(pbx_peer_tty_decide_prompt(&p, &pr), PBX_IPC_VERDICT_ALLOW);
    pr.selector = (const uint8_t *)"secrets/a";
    pr.selector_len = 9;
    PBX_CHECK_EQ(pbx_peer_tty_decide_prompt(&p, &pr), PBX_IPC_VERDICT_DENY);
    pr.selector = (const uint8_t *)"other";
    pr.selector_len = 5;
    PBX_CHECK_EQ(pbx_peer_tty_decide_prompt(&p, &pr), PBX_IPC_VERDICT_PROMPT);
    /* A prompt whose first candidate has no pattern is shown as before. */
    pr.ctx = tp_ctx("cat", PBX_IPC_URGENCY_EXCEPTIONAL);
    pr.selector = (const uint8_t *)"docs/a.txt";
    pr.selector_len = 10;
    PBX_CHECK_EQ(pbx_peer_tty_decide_prompt(&p, &pr), PBX_IPC_VERDICT_PROMPT);
}

PBX_TEST(peers_tty_policy_never_allows_exceptional)
{
    static pbx_peer_tty_policy p;
    memset(&p, 0, sizeof(p));
    PBX_CHECK(pbx_peer_tty_policy_line(
                  &p, "* * read file routine cat docs/** allow") == NULL);
    /* A forged rule (urgency any) with a selector pattern: the decision
     * still never allows an exceptional request. */
    p.rules[0].urgency = PBX_PEER_TTY_ANY;
    PBX_CHECK_EQ(tp_sel(&p, "cat", PBX_IPC_URGENCY_EXCEPTIONAL, "docs/a", NULL),
                 PBX_IPC_VERDICT_DENY);
    pbx_ipc_prompt pr;
    memset(&pr, 0, sizeof(pr));
    pr.ctx = tp_ctx("cat", PBX_IPC_URGENCY_EXCEPTIONAL);
    pr.selector = (const uint8_t *)"docs/a";
    pr.selector_len = 6;
    PBX_CHECK_EQ(pbx_peer_tty_decide_prompt(&p, &pr), PBX_IPC_VERDICT_DENY);
    PBX_CHECK_EQ(tp_sel(&p, "cat", PBX_IPC_URGENCY_ROUTINE, "docs/a", NULL),
                 PBX_IPC_VERDICT_ALLOW);
}
