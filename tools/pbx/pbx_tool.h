/*
 * pbx_tool.h: the pieces of the pbx operator command shared between its
 * source files. Hosted code: libc is available.
 *
 * Adding a command NAME (one source file tools/pbx/pbx_NAME.c):
 *   1. declare its two functions below, next to the others:
 *          int pbx_tool_NAME(int argc, char **argv);
 *          void pbx_tool_NAME_usage(FILE *fp);
 *   2. add one line to the command table in pbx_main.c:
 *          {"NAME", pbx_tool_NAME, pbx_tool_NAME_usage},
 * pbx_main.c answers `pbx NAME -h`, `pbx NAME --help` and `pbx help NAME`
 * itself (usage on stdout, exit 0), so a command never sees those words
 * before a `--` argument. argv[0] is the word NAME; argc counts it. A
 * command prints its results on stdout and exactly one line per error on
 * stderr (pbx_tool_usage_error names a bad argument), and returns one of
 * the PBX_TOOL_EXIT_* statuses. A command that talks to a running stack
 * finds it with pbx_tool_dir_path, which honours `pbx --dir DIR` (and a
 * command's own --dir, through pbx_tool_dir_set).
 */
#ifndef PBX_TOOL_H
#define PBX_TOOL_H

#include <stddef.h>
#include <stdio.h>

/** PBX_TOOL_EXIT_OK is the exit status of a command that succeeded. */
#define PBX_TOOL_EXIT_OK 0

/**
 * PBX_TOOL_EXIT_FAIL is the exit status when the command ran but its
 * subject is bad or the operation was refused or failed: an invalid
 * record, an unreadable file, a denied or cancelled request. The message
 * on stderr says why.
 */
#define PBX_TOOL_EXIT_FAIL 1

/** PBX_TOOL_EXIT_USAGE is the exit status of a malformed command line. */
#define PBX_TOOL_EXIT_USAGE 2

/**
 * pbx_tool_usage_error prints one line on stderr, "pbx CMD: WHAT 'ARG'
 * (try 'pbx CMD --help')", naming the bad argument, and returns
 * PBX_TOOL_EXIT_USAGE. cmd is the command word (or NULL for pbx itself),
 * what a short phrase such as "unknown option", arg the offending argument
 * (or NULL when there is none, e.g. a missing operand). The strings are
 * only read.
 */
int pbx_tool_usage_error(const char *cmd, const char *what, const char *arg);

/**
 * pbx_tool_dir_set records the runtime directory named on the command
 * line (`pbx --dir DIR`, or a command's own --dir), which then wins over
 * the environment. dir must stay valid until the command returns (an argv
 * string does); NULL forgets it.
 */
void pbx_tool_dir_set(const char *dir);

/**
 * pbx_tool_dir_path writes the path of name inside the runtime directory
 * into out[0..cap) (NUL-terminated): the --dir given to pbx_tool_dir_set,
 * else $PBX_DIR, else $XDG_RUNTIME_DIR/powerboxd, else /tmp/powerboxd-UID
 * (pbx_app_dir, the one resolution every command and the app library
 * share). name NULL or "" gives the directory itself. Returns 0, or
 * PBX_TOOL_EXIT_FAIL after one line on stderr when the path does not fit.
 */
int pbx_tool_dir_path(const char *name, char *out, size_t cap);

/**
 * pbx_tool_digest runs `pbx digest SELECTOR...|-`: prints the SHA-256 of
 * each selector's bytes (standard input's for "-"), in hex, and returns a
 * PBX_TOOL_EXIT_* status. argv[0] is the word "digest"; strings are only
 * read.
 */
int pbx_tool_digest(int argc, char **argv);

/** pbx_tool_digest_usage prints the digest synopsis to stream fp. */
void pbx_tool_digest_usage(FILE *fp);

/**
 * pbx_tool_geometry runs `pbx geometry SUBCOMMAND ...`. argv[0] is the
 * word "geometry" and argv[1..argc-1] its arguments; the strings are only
 * read. Prints results on stdout, one-line errors on stderr, and returns a
 * PBX_TOOL_EXIT_* status.
 */
int pbx_tool_geometry(int argc, char **argv);

/** pbx_tool_geometry_usage prints the geometry synopsis to stream fp. */
void pbx_tool_geometry_usage(FILE *fp);

/** pbx_bootstrap_geometry is the PBX1 geometry record
 * (bootstrap/pbx_bootstrap.h), declared here without its fields. */
struct pbx_bootstrap_geometry;

/**
 * pbx_tool_geometry_defaults fills the caller-allocated *g with the
 * embedded default geometry, exactly what `pbx geometry make` starts from
 * with no options (capacities, call window, deadlines, page size and the
 * type layouts this build was compiled with; the page count is left 0 for
 * pbx_bootstrap_pages_compute). `pbx up` builds its PBX1 record from it.
 */
void pbx_tool_geometry_defaults(struct pbx_bootstrap_geometry *g);

/**
 * pbx_tool_fsm runs `pbx fsm dot|table`: argv[0] is "fsm", argc counts it.
 * It prints the core's transition table (Graphviz dot or a Markdown table)
 * on stdout and returns a PBX_TOOL_EXIT_* status.
 */
int pbx_tool_fsm(int argc, char **argv);

/** pbx_tool_fsm_usage prints the fsm synopsis to stream fp. */
void pbx_tool_fsm_usage(FILE *fp);

/**
 * pbx_tool_up runs `pbx up [OPTIONS]` (tools/pbx/pbx_up.c): the stack in
 * the foreground until SIGINT or SIGTERM. argv[0] is "up", argc counts it;
 * the strings are only read and must stay valid until it returns. Returns
 * PBX_TOOL_EXIT_OK after a requested stop, PBX_TOOL_EXIT_FAIL when DIR is
 * held by another supervisor, the stack did not start or kept dying.
 */
int pbx_tool_up(int argc, char **argv);

/** pbx_tool_up_usage prints the up synopsis to stream fp. */
void pbx_tool_up_usage(FILE *fp);

/**
 * pbx_tool_open runs `pbx open [OPTION]... SELECTOR` inside a launchd job
 * (tools/pbx/pbx_open.c): a runtime-reply request for SELECTOR, the
 * granted operation on the object, then a one-shot grant consumed.
 * argv[0] is "open", argc counts it; the strings are only read. Returns
 * PBX_TOOL_EXIT_FAIL after one line when the request was refused, not
 * found, cancelled or timed out, or the operation failed.
 */
int pbx_tool_open(int argc, char **argv);
/** pbx_tool_open_usage prints the open synopsis to stream fp. */
void pbx_tool_open_usage(FILE *fp);

/**
 * pbx_tool_grants runs `pbx grants [--dir DIR] [--query PATH] [--format
 * table|kv]` (tools/pbx/pbx_grants.c): the live grants read from ttyd's
 * query socket (DIR/ttyd.sock). argv[0] is "grants", argc counts it; the
 * strings are only read. Returns a PBX_TOOL_EXIT_* status.
 */
int pbx_tool_grants(int argc, char **argv);
/** pbx_tool_grants_usage prints the grants synopsis to stream fp. */
void pbx_tool_grants_usage(FILE *fp);
/**
 * pbx_tool_cancel runs `pbx cancel [--dir DIR] [--control PATH] I.G`:
 * asks launchd (DIR/launchd.sock) to cancel live grant I.G for the user.
 * argv[0] is "cancel". Returns PBX_TOOL_EXIT_OK when powerboxd accepted
 * the cancel, PBX_TOOL_EXIT_FAIL with the reason otherwise.
 */
int pbx_tool_cancel(int argc, char **argv);
/** pbx_tool_cancel_usage prints the cancel synopsis to stream fp. */
void pbx_tool_cancel_usage(FILE *fp);
/**
 * pbx_tool_log runs `pbx log [--dir DIR] [--file PATH] [--format
 * table|kv]`: how each grant ended and by whom, from the stack's log
 * (DIR/stack.log). argv[0] is "log". Returns a PBX_TOOL_EXIT_* status.
 */
int pbx_tool_log(int argc, char **argv);
/** pbx_tool_log_usage prints the log synopsis to stream fp. */
void pbx_tool_log_usage(FILE *fp);

/**
 * pbx_tool_run runs `pbx run [OPTIONS] -- PROG [ARG...]`
 * (tools/pbx/pbx_run.c): PROG as a launchd job of the stack (sandboxed
 * with --sandbox). argv[0] is "run", argc counts it; the strings are only
 * read. Returns PROG's exit status (128+N for signal N), 125 when PROG was
 * not run or its end is unknown (one line on stderr says why), or
 * PBX_TOOL_EXIT_USAGE.
 */
int pbx_tool_run(int argc, char **argv);
/** pbx_tool_run_usage prints the run synopsis to stream fp. */
void pbx_tool_run_usage(FILE *fp);

/**
 * pbx_tool_policy runs `pbx policy [--file FILE]` (the rules in effect)
 * and `pbx policy check ... PROG OP PATH` (what ttyd would answer, asking
 * nobody; exit 0 allow, 3 deny, 4 prompt). argv[0] is the word "policy";
 * strings are only read.
 */
int pbx_tool_policy(int argc, char **argv);

/** pbx_tool_policy_usage prints the policy synopsis to stream fp. */
void pbx_tool_policy_usage(FILE *fp);

/**
 * pbx_tool_names writes the names of every value of the pbx_peer name
 * table kind (a pbx_peer_name_kind: operations, classes, ...), in value
 * order, separated by ", ", NUL-terminated into out (cap bytes, at least
 * 1; truncated to fit), for error lines that list the valid words.
 */
void pbx_tool_names(int kind, char *out, size_t cap);

/**
 * pbx_tool_status runs `pbx status [--dir DIR]`: whether a stack runs in
 * DIR (DIR/lock held), pbx up's pid and state, each process's pid, state
 * and incarnation (DIR/status) and the live grant count (ttyd's query
 * socket). argv[0] is the word "status"; strings are only read.
 */
int pbx_tool_status(int argc, char **argv);

/** pbx_tool_status_usage prints the status synopsis to stream fp. */
void pbx_tool_status_usage(FILE *fp);

/**
 * pbx_tool_stop runs `pbx stop [--dir DIR]`: SIGTERM to the pbx up that
 * holds DIR/lock, then a bounded wait until the lock is free (pbx up has
 * ended). argv[0] is the word "stop"; strings are only read.
 */
int pbx_tool_stop(int argc, char **argv);

/** pbx_tool_stop_usage prints the stop synopsis to stream fp. */
void pbx_tool_stop_usage(FILE *fp);

#endif /* PBX_TOOL_H */
