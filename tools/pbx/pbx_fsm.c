/*
 * pbx_fsm.c: `pbx fsm dot|table`, the core's transition table in words.
 *
 * Both outputs are generated from the table the core consults on every
 * state change (pbx_core_fsm_table), so docs/ARCHITECTURE.md, which embeds
 * them, cannot drift from the code: `make docs-check` regenerates them and
 * fails on any difference.
 */
#include "core/pbx_core_fsm.h"
#include "tools/pbx/pbx_tool.h"

#include <stdio.h>
#include <string.h>

/* Writes one chunk of the dot text to the FILE passed as user. */
static void pbx_fsm_emit(void *user, const char *text, size_t len)
{
    (void)fwrite(text, 1, len, (FILE *)user);
}

/* Prints the table as Markdown, one row per transition. */
static void pbx_fsm_table(FILE *fp)
{
    static const char *const machines[PBX_CORE_MACHINE_COUNT] = {"request",
                                                                 "grant"};
    size_t count = 0;
    const pbx_core_transition *t = pbx_core_fsm_table(&count);
    (void)fputs("| machine | from | event | to |\n|---|---|---|---|\n", fp);
    for (size_t i = 0; i < count; i++) {
        (void)fprintf(fp, "| %s | %s | %s | %s |\n",
                      t[i].machine < PBX_CORE_MACHINE_COUNT
                          ? machines[t[i].machine]
                          : "?",
                      pbx_core_state_name((pbx_core_state)t[i].from),
                      pbx_core_event_name((pbx_core_event)t[i].event),
                      pbx_core_state_name((pbx_core_state)t[i].to));
    }
}

void pbx_tool_fsm_usage(FILE *fp)
{
    (void)fputs("  pbx fsm dot|table\n", fp);
}

int pbx_tool_fsm(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "dot") == 0) {
        pbx_core_fsm_dot(pbx_fsm_emit, stdout);
        return PBX_TOOL_EXIT_OK;
    }
    if (argc == 2 && strcmp(argv[1], "table") == 0) {
        pbx_fsm_table(stdout);
        return PBX_TOOL_EXIT_OK;
    }
    if (argc >= 2 && argv[1][0] == '-') {
        return pbx_tool_usage_error(argv[0], "unknown option", argv[1]);
    }
    (void)fputs("pbx: fsm: expected 'dot' or 'table'\n", stderr);
    return PBX_TOOL_EXIT_USAGE;
}
