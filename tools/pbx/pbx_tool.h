/*
 * pbx_tool.h: the pieces of the pbx operator command shared between its
 * source files. Hosted code: libc is available.
 */
#ifndef PBX_TOOL_H
#define PBX_TOOL_H

#include <stdio.h>

/** PBX_TOOL_EXIT_OK is the exit status of a command that succeeded. */
#define PBX_TOOL_EXIT_OK 0

/**
 * PBX_TOOL_EXIT_FAIL is the exit status when the command ran but its
 * subject is bad: an invalid record, an unreadable or unwritable file.
 */
#define PBX_TOOL_EXIT_FAIL 1

/** PBX_TOOL_EXIT_USAGE is the exit status of a malformed command line. */
#define PBX_TOOL_EXIT_USAGE 2

/**
 * pbx_tool_geometry runs `pbx geometry SUBCOMMAND ...`. argv[0] is the
 * word "geometry" and argv[1..argc-1] its arguments; the strings are only
 * read. Prints results on stdout, one-line errors on stderr, and returns a
 * PBX_TOOL_EXIT_* status.
 */
int pbx_tool_geometry(int argc, char **argv);

/** pbx_tool_geometry_usage prints the geometry synopsis to stream fp. */
void pbx_tool_geometry_usage(FILE *fp);

/**
 * pbx_tool_fsm runs `pbx fsm dot|table`: argv[0] is "fsm", argc counts it.
 * It prints the core's transition table (Graphviz dot or a Markdown table)
 * on stdout and returns a PBX_TOOL_EXIT_* status.
 */
int pbx_tool_fsm(int argc, char **argv);

/** pbx_tool_fsm_usage prints the fsm synopsis to stream fp. */
void pbx_tool_fsm_usage(FILE *fp);

#endif /* PBX_TOOL_H */
