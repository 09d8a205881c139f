/*
 * pbx_policy.c: `pbx policy` lists the rules in effect (the stack's
 * policy file, DIR/policy, which pbx up hands ttyd) and `pbx policy check
 * PROG OP PATH` says what ttyd would answer for that request, without
 * asking anyone and without a running stack (as polkit's pkcheck does).
 * The file is parsed and decided by the very functions ttyd uses
 * (peers/lib/pbx_peer_tty.h), so the answer cannot drift from ttyd's.
 */
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_tty.h"
#include "tools/pbx/pbx_tool.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

/* Exit statuses of `pbx policy check`, one per verdict. */
#define PBX_POLICY_EXIT_ALLOW  0
#define PBX_POLICY_EXIT_DENY   3
#define PBX_POLICY_EXIT_PROMPT 4

/* Bounds the lines read from a policy file (comments included). */
#define PBX_POLICY_LINES_MAX 4096U

/* What `pbx policy check` was asked. */
typedef struct pbx_policy_req {
    const char *file;
    const char *root;
    const char *entry;
    uint32_t cls;
    uint32_t urgency;
    uint64_t session;
    uint64_t realm;
} pbx_policy_req;

/* The policy table (large: static, one command per process). */
static pbx_peer_tty_policy g_policy;

/* Loads path into g_policy as ttyd does; a bad line is named on stderr
 * (FILE:LINE: why) and fails, as ttyd then refuses to start. */
static int pbx_policy_load(const char *path)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        (void)fprintf(stderr, "pbx policy: %s: %s\n", path, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    memset(&g_policy, 0, sizeof(g_policy));
    char line[512];
    int rc = PBX_TOOL_EXIT_OK;
    for (unsigned n = 1;
         n <= PBX_POLICY_LINES_MAX && fgets(line, (int)sizeof(line), f) != NULL;
         n++) {
        const char *bad = pbx_peer_tty_policy_line(&g_policy, line);
        if (bad != NULL) {
            (void)fprintf(stderr, "pbx policy: %s:%u: %s\n", path, n, bad);
            rc = PBX_TOOL_EXIT_FAIL;
            break;
        }
    }
    (void)fclose(f);
    return rc;
}

/* The policy file: --file, else DIR/policy. */
static int pbx_policy_path(const char *file, char *out, size_t cap)
{
    if (file == NULL) {
        return pbx_tool_dir_path("policy", out, cap);
    }
    if ((size_t)snprintf(out, cap, "%s", file) >= cap) {
        (void)fprintf(stderr, "pbx policy: --file path too long\n");
        return PBX_TOOL_EXIT_FAIL;
    }
    return PBX_TOOL_EXIT_OK;
}

/* `pbx policy [--file FILE]`: every rule, numbered from 1, in the
 * 8-field form, then what happens when none matches. */
static int pbx_policy_list(const char *file)
{
    char path[PATH_MAX];
    int rc = pbx_policy_path(file, path, sizeof(path));
    if (rc == PBX_TOOL_EXIT_OK) {
        rc = pbx_policy_load(path);
    }
    if (rc != PBX_TOOL_EXIT_OK) {
        return rc;
    }
    (void)printf("# %s: SESSION REALM OPERATION CLASS URGENCY ENTRY "
                 "SELECTOR VERDICT\n",
                 path);
    char text[512];
    for (size_t i = 0; i < g_policy.count; i++) {
        (void)pbx_peer_tty_rule_text(&g_policy.rules[i], text, sizeof(text));
        (void)printf("%zu %s\n", i + 1U, text);
    }
    (void)printf("- no rule matches: deny\n");
    return PBX_TOOL_EXIT_OK;
}

/* Parses one check option k v into q; usage error status or OK. */
static int pbx_policy_opt(pbx_policy_req *q, const char *k, const char *v)
{
    bool ok = true;
    if (strcmp(k, "--file") == 0) {
        q->file = v;
    } else if (strcmp(k, "--root") == 0) {
        q->root = v;
    } else if (strcmp(k, "--entry") == 0) {
        q->entry = v;
    } else if (strcmp(k, "--class") == 0) {
        ok = pbx_peer_name_parse(PBX_PEER_NAMES_CLASS, v, &q->cls);
    } else if (strcmp(k, "--urgency") == 0) {
        ok = pbx_peer_name_parse(PBX_PEER_NAMES_URGENCY, v, &q->urgency);
    } else if (strcmp(k, "--session") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &q->session);
    } else if (strcmp(k, "--realm") == 0) {
        ok = pbx_peer_parse_u64(v, UINT32_MAX, &q->realm);
    } else {
        return pbx_tool_usage_error("policy", "unknown option", k);
    }
    return ok ? PBX_TOOL_EXIT_OK
              : pbx_tool_usage_error("policy", "bad value", v);
}

/* The selector PATH names: PATH itself when relative; with --root, an
 * absolute PATH beneath ROOT loses ROOT and its '/'. NULL (after one line
 * on stderr) for an absolute PATH that is not beneath --root. */
static const char *pbx_policy_selector(const pbx_policy_req *q,
                                       const char *path)
{
    if (path[0] != '/') {
        return path;
    }
    size_t n = q->root != NULL ? strlen(q->root) : 0U;
    while (n > 1U && q->root[n - 1U] == '/') {
        n--;
    }
    if (n > 0U && strncmp(path, q->root, n) == 0 && path[n] == '/' &&
        path[n + 1U] != '\0') {
        return path + n + 1U;
    }
    (void)fprintf(stderr,
                  "pbx policy: '%s' is absolute and not beneath --root: a "
                  "selector is relative to the stack's root (give PATH "
                  "relative to it, or --root DIR)\n",
                  path);
    return NULL;
}

/* Fills the request context check decides for q, PROG and operation op. */
static void pbx_policy_ctx(const pbx_policy_req *q, const char *prog,
                           uint32_t op, pbx_ipc_context *c)
{
    const char *entry = q->entry;
    if (entry == NULL) {
        const char *slash = strrchr(prog, '/');
        entry = slash != NULL ? slash + 1 : prog;
    }
    memset(c, 0, sizeof(*c));
    c->session = q->session;
    c->realm = (uint32_t)q->realm;
    c->job_gen = 1;
    c->operation = (uint16_t)op;
    c->object_class = (uint16_t)q->cls;
    c->urgency = (uint8_t)q->urgency;
    c->lifetime = PBX_IPC_LIFETIME_INVOCATION;
    c->mode = PBX_IPC_MODE_RUNTIME_REPLY;
    size_t n = strlen(entry);
    n = n < PBX_IPC_ENTRY_LEN_BYTES_MAX ? n : PBX_IPC_ENTRY_LEN_BYTES_MAX;
    c->entry.len = (uint16_t)n;
    memcpy(c->entry.bytes, entry, n);
}

/* Prints the verdict v of rule i (or of no rule) and returns its status. */
static int pbx_policy_answer(uint8_t v, size_t i)
{
    const char *name = pbx_peer_name_of(PBX_PEER_NAMES_VERDICT, v);
    if (i >= g_policy.count) {
        (void)printf("%s: no rule matches\n", name);
    } else {
        char text[512];
        (void)pbx_peer_tty_rule_text(&g_policy.rules[i], text, sizeof(text));
        (void)printf("%s: rule %zu: %s\n", name, i + 1U, text);
    }
    if (v == PBX_IPC_VERDICT_ALLOW) {
        return PBX_POLICY_EXIT_ALLOW;
    }
    return v == PBX_IPC_VERDICT_PROMPT ? PBX_POLICY_EXIT_PROMPT
                                       : PBX_POLICY_EXIT_DENY;
}

/* `pbx policy check [OPTIONS] PROG OP PATH`. */
static int pbx_policy_check(int argc, char **argv)
{
    pbx_policy_req q = {
        NULL, NULL, NULL, PBX_IPC_CLASS_FILE, PBX_IPC_URGENCY_ROUTINE, 1U, 1U};
    int i = 2;
    for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
        int rc = pbx_policy_opt(&q, argv[i], argv[i + 1]);
        if (rc != PBX_TOOL_EXIT_OK) {
            return rc;
        }
    }
    if (argc - i != 3) {
        return pbx_tool_usage_error("policy", "check needs PROG OP PATH",
                                    i < argc ? argv[i] : NULL);
    }
    uint32_t op = 0;
    if (!pbx_peer_name_parse(PBX_PEER_NAMES_OPERATION, argv[i + 1], &op)) {
        char ops[256];
        pbx_tool_names(PBX_PEER_NAMES_OPERATION, ops, sizeof(ops));
        (void)fprintf(stderr,
                      "pbx policy: unknown operation '%s' (one of: %s)\n",
                      argv[i + 1], ops);
        return PBX_TOOL_EXIT_USAGE;
    }
    const char *sel = pbx_policy_selector(&q, argv[i + 2]);
    char path[PATH_MAX];
    int rc = sel == NULL ? PBX_TOOL_EXIT_USAGE
                         : pbx_policy_path(q.file, path, sizeof(path));
    if (rc == PBX_TOOL_EXIT_OK) {
        rc = pbx_policy_load(path);
    }
    if (rc != PBX_TOOL_EXIT_OK) {
        return rc;
    }
    pbx_ipc_context c;
    pbx_policy_ctx(&q, argv[i], op, &c);
    size_t rule = 0;
    uint8_t v = pbx_peer_tty_decide_selector(
        &g_policy, &c, (const uint8_t *)sel, strlen(sel), &rule);
    return pbx_policy_answer(v, rule);
}

void pbx_tool_names(int kind, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    /* Every table's values are small numbers from 1 (pbx_ipc.h). */
    for (uint32_t v = 1; v <= 64U && used < cap; v++) {
        const char *name = pbx_peer_name_of((pbx_peer_name_kind)kind, v);
        if (strcmp(name, "?") == 0) {
            continue;
        }
        int n = snprintf(out + used, cap - used, "%s%s", used == 0U ? "" : ", ",
                         name);
        if (n < 0) {
            break;
        }
        used += (size_t)n;
    }
}

void pbx_tool_policy_usage(FILE *fp)
{
    (void)fputs(
        "  pbx policy [--file FILE]\n"
        "    lists the rules in effect: the stack's policy file (DIR/policy,\n"
        "    what pbx up hands ttyd; --file FILE reads another), numbered,\n"
        "    first match wins, then what happens when none matches\n"
        "  pbx policy check [--file FILE] [--root DIR] [--entry NAME]\n"
        "      [--class C] [--urgency U] [--session N] [--realm N]\n"
        "      PROG OP PATH\n"
        "    what ttyd would answer for PROG's OP of PATH (a selector\n"
        "    relative to the stack's root, or absolute beneath --root),\n"
        "    without asking anyone: prints the verdict and the rule that\n"
        "    decides; entry PROG's basename (pbx run's), class file,\n"
        "    urgency routine, session 1, realm 1 unless given. Exit 0 allow,\n"
        "    3 deny, 4 prompt (asked on the stack's terminal; denied when it\n"
        "    has none), 1 an unreadable or bad policy file, 2 usage\n",
        fp);
}

int pbx_tool_policy(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "check") == 0) {
        return pbx_policy_check(argc, argv);
    }
    if (argc == 1) {
        return pbx_policy_list(NULL);
    }
    if (argc == 3 && strcmp(argv[1], "--file") == 0) {
        return pbx_policy_list(argv[2]);
    }
    return pbx_tool_usage_error("policy", "unknown argument", argv[1]);
}
