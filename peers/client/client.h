/*
 * client.h: pbx-client's internals shared by its files: the options the
 * command line gave (client.c parses them), the one connection and the
 * counters, and the request, repeat and cancel/consume flows
 * (client_request.c, client_repeat.c). See client.c for the program.
 */
#ifndef PBX_CLIENT_H
#define PBX_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "peers/app/pbx_app.h"

/* Everything the command line (and the environment) said. */
typedef struct client_opts {
    int public_fd;
    int scope_fd;
    /* The identity vfsd named the scope by (--scope PATH), else 0. */
    uint64_t scope_id;
    const char *selector;
    /* --wait-ms: the bound on the DECISION wait (0: none). */
    uint64_t wait_ms;
    /* What the BEGIN claims (session, realm, job, install target, entry;
     * unclaimed ones are filled in by launchd). */
    pbx_app_claims cl;
    /* --invocation N: the BEGIN's invocation id (0: none). */
    uint64_t invocation;
    uint64_t a;
    uint64_t b;
    uint32_t op;
    uint32_t cls;
    uint32_t lifetime;
    uint32_t mode;
    uint32_t urgency;
    const char *label;
    /* --verify-object ROOT, or NULL. */
    const char *verify_root;
    bool have_pair;
    /* --then consume: after APPROVED, consume the grant on the same
     * connection (the caller that began a request owns it). */
    bool then_consume;
    /* --then hang-up: exit after COMMIT without asking for the decision. */
    bool then_hangup;
    /* --then hold: after COMMIT, wait for a line on stdin, then DECISION. */
    bool then_hold;
    /* --then cancel: after COMMIT, wait for a line on stdin, CANCEL the
     * request, wait for another line, then DECISION. */
    bool then_cancel;
    /* --then cancel-session: as --then cancel, but the CANCEL names the
     * request's job and session (generation zero), not the request. */
    bool then_cancel_session;
    /* --repeat N: N whole lifecycles on the one connection (0: one, as
     * a plain request, with its key=value report). */
    uint64_t repeat;
} client_opts;

/* The connection and its calls (the app library's call layer); defined in
 * client_request.c, opened by main. */
extern pbx_app_conn g_conn;
/* In --repeat mode the per-request key=value lines are not printed. */
extern bool g_quiet;
/* --repeat: decisions naming another request + objects not verified. */
extern uint64_t g_mismatches;
/* --repeat: BEGINs answered with retryable backpressure and sent again. */
extern uint64_t g_busy_retries;

/* client_request runs one request as o says (BEGIN, SELECTOR, COMMIT,
 * DECISION, then what --then asks) and prints its key=value report unless
 * g_quiet. Returns the exit status (see client.c). */
int client_request(const client_opts *o);

/* client_repeat runs o->repeat one-shot lifecycles (--repeat) and prints
 * their latency statistics. Returns the exit status. */
int client_repeat(const client_opts *o);

/* client_simple sends CANCEL (cancel true) or CONSUME as o names it and
 * prints cancel=accepted or consume=accepted. Returns the exit status. */
int client_simple(const client_opts *o, bool cancel);

#endif /* PBX_CLIENT_H */
