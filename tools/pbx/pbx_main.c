/*
 * pbx_main.c: the pbx operator command's entry point.
 *
 * `pbx [--dir DIR] COMMAND ...` dispatches on the command word through
 * one table (pbx_tool.h says how to add a command). `pbx -h`, `pbx
 * --help` and `pbx help` print every command's synopsis on stdout; `pbx
 * COMMAND -h`, `pbx COMMAND --help` and `pbx help COMMAND` print that
 * command's. Every command prints its results on stdout and exactly one
 * line per error on stderr, and exits with 0 (success), 1 (the operation
 * was refused or failed) or 2 (bad command line).
 */
#include "tools/pbx/pbx_tool.h"

#include "peers/app/pbx_app.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>

/* One command: its word, its entry point and its synopsis printer. */
typedef struct pbx_tool_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    void (*usage)(FILE *fp);
} pbx_tool_cmd;

/* The command table: one line per command, in the order `pbx --help`
 * lists them. */
static const pbx_tool_cmd g_pbx_cmds[] = {
    {"geometry", pbx_tool_geometry, pbx_tool_geometry_usage},
    {"fsm", pbx_tool_fsm, pbx_tool_fsm_usage},
    {"digest", pbx_tool_digest, pbx_tool_digest_usage},
    {"up", pbx_tool_up, pbx_tool_up_usage},
    {"status", pbx_tool_status, pbx_tool_status_usage},
    {"stop", pbx_tool_stop, pbx_tool_stop_usage},
    {"open", pbx_tool_open, pbx_tool_open_usage},
    {"grants", pbx_tool_grants, pbx_tool_grants_usage},
    {"cancel", pbx_tool_cancel, pbx_tool_cancel_usage},
    {"log", pbx_tool_log, pbx_tool_log_usage},
    {"run", pbx_tool_run, pbx_tool_run_usage},
    {"policy", pbx_tool_policy, pbx_tool_policy_usage},
};

/* The runtime directory named on the command line, or NULL. */
static const char *g_pbx_dir;

int pbx_tool_usage_error(const char *cmd, const char *what, const char *arg)
{
    const char *sp = cmd != NULL ? " " : "";
    const char *c = cmd != NULL ? cmd : "";
    if (arg != NULL) {
        (void)fprintf(stderr, "pbx%s%s: %s '%s' (try 'pbx%s%s --help')\n", sp,
                      c, what, arg, sp, c);
    } else {
        (void)fprintf(stderr, "pbx%s%s: %s (try 'pbx%s%s --help')\n", sp, c,
                      what, sp, c);
    }
    return PBX_TOOL_EXIT_USAGE;
}

void pbx_tool_dir_set(const char *dir)
{
    g_pbx_dir = dir;
}

int pbx_tool_dir_path(const char *name, char *out, size_t cap)
{
    if (pbx_app_dir_path(g_pbx_dir, name, out, cap) != PBX_APP_OK) {
        (void)fprintf(stderr, "pbx: the runtime directory's path is too "
                              "long (set --dir or PBX_DIR)\n");
        return PBX_TOOL_EXIT_FAIL;
    }
    return PBX_TOOL_EXIT_OK;
}

/* Prints the synopsis of every command. */
static void pbx_usage(FILE *fp)
{
    (void)fputs("usage: pbx [--dir DIR] COMMAND [ARG...]\n"
                "       pbx [COMMAND] -h|--help\n"
                "commands:\n",
                fp);
    for (size_t i = 0; i < sizeof(g_pbx_cmds) / sizeof(g_pbx_cmds[0]); i++) {
        g_pbx_cmds[i].usage(fp);
    }
    (void)fputs(
        "--dir DIR: the running stack's runtime directory (default\n"
        "  $PBX_DIR, else $XDG_RUNTIME_DIR/powerboxd, else "
        "/tmp/powerboxd-UID).\n"
        "Exit status: 0 success, 1 the operation was refused or failed\n"
        "  (the message says why), 2 a usage error.\n",
        fp);
}

/* The command named word, or NULL. */
static const pbx_tool_cmd *pbx_find(const char *word)
{
    for (size_t i = 0; i < sizeof(g_pbx_cmds) / sizeof(g_pbx_cmds[0]); i++) {
        if (strcmp(g_pbx_cmds[i].name, word) == 0) {
            return &g_pbx_cmds[i];
        }
    }
    return NULL;
}

/* Whether word asks for help. */
static bool pbx_is_help(const char *word)
{
    return strcmp(word, "-h") == 0 || strcmp(word, "--help") == 0;
}

/* Prints one command's synopsis on stdout (its help). */
static int pbx_cmd_help(const pbx_tool_cmd *c)
{
    (void)fputs("usage:\n", stdout);
    c->usage(stdout);
    return PBX_TOOL_EXIT_OK;
}

/* Runs command c on argv[0..argc) (argv[0] is its word): help when any
 * argument before a `--` asks for it, else the command itself. */
static int pbx_run(const pbx_tool_cmd *c, int argc, char **argv)
{
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
        if (pbx_is_help(argv[i])) {
            return pbx_cmd_help(c);
        }
    }
    return c->run(argc, argv);
}

/* `pbx help [COMMAND]`. */
static int pbx_help(int argc, char **argv)
{
    if (argc < 2) {
        pbx_usage(stdout);
        return PBX_TOOL_EXIT_OK;
    }
    const pbx_tool_cmd *c = pbx_find(argv[1]);
    if (c == NULL || argc > 2) {
        return pbx_tool_usage_error(
            NULL, c == NULL ? "unknown command" : "unexpected argument",
            argv[c == NULL ? 1 : 2]);
    }
    return pbx_cmd_help(c);
}

int main(int argc, char **argv)
{
    /* pbx run, open and up hold connections to launchd and the stack
     * (launch, expire, cancel, the public endpoint) while the user's other
     * processes run beside them, some of them jobs pbx run started. A
     * dumpable pbx lets any process of the same user take those
     * descriptors (pidfd_getfd, ptrace), so every command makes pbx
     * non-dumpable before it connects anywhere. Programs pbx starts are
     * dumpable again after their execve. */
    if (prctl(PR_SET_DUMPABLE, 0L, 0L, 0L, 0L) != 0) {
        perror("pbx: prctl(PR_SET_DUMPABLE)");
        return PBX_TOOL_EXIT_FAIL;
    }
    int i = 1;
    /* pbx's own options come before the command word. */
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (pbx_is_help(argv[i])) {
            pbx_usage(stdout);
            return PBX_TOOL_EXIT_OK;
        }
        if (strcmp(argv[i], "--dir") != 0) {
            return pbx_tool_usage_error(NULL, "unknown option", argv[i]);
        }
        if (i + 1 >= argc || argv[i + 1][0] == '\0') {
            return pbx_tool_usage_error(NULL, "--dir needs a directory", NULL);
        }
        pbx_tool_dir_set(argv[++i]);
    }
    if (i >= argc) {
        return pbx_tool_usage_error(NULL, "no command given", NULL);
    }
    if (strcmp(argv[i], "help") == 0) {
        return pbx_help(argc - i, argv + i);
    }
    const pbx_tool_cmd *c = pbx_find(argv[i]);
    if (c == NULL) {
        return pbx_tool_usage_error(NULL, "unknown command", argv[i]);
    }
    return pbx_run(c, argc - i, argv + i);
}
