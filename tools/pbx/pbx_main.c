/*
 * pbx_main.c: the pbx operator command's entry point.
 *
 * `pbx COMMAND ...` dispatches on the first word. Every command prints its
 * results on stdout and exactly one line per error on stderr, and exits
 * with 0 (success), 1 (bad subject) or 2 (bad command line).
 */
#include "tools/pbx/pbx_tool.h"

#include <stdio.h>
#include <string.h>

/* Prints the synopsis of every command. */
static void pbx_usage(FILE *fp)
{
    (void)fputs("usage: pbx COMMAND ...\n", fp);
    pbx_tool_geometry_usage(fp);
    pbx_tool_fsm_usage(fp);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        pbx_usage(stderr);
        return PBX_TOOL_EXIT_USAGE;
    }
    if (strcmp(argv[1], "geometry") == 0) {
        return pbx_tool_geometry(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "fsm") == 0) {
        return pbx_tool_fsm(argc - 1, argv + 1);
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0) {
        pbx_usage(stdout);
        return PBX_TOOL_EXIT_OK;
    }
    (void)fprintf(stderr, "pbx: unknown command '%s' (try 'pbx help')\n",
                  argv[1]);
    return PBX_TOOL_EXIT_USAGE;
}
