/*
 * client.c: pbx-client, a program asking powerboxd for authority through
 * launchd. It runs BEGIN, the SELECTOR chunks and COMMIT (transferring the
 * scope descriptor), then asks for the DECISION; it also sends CANCEL and
 * CONSUME. Output is key=value lines. See docs/HOST.md.
 *
 * --scope PATH takes one scope from vfsd's scope socket at PATH: vfsd
 * hands it over by SCM_RIGHTS, named by its socket inode, which is the
 * identity powerboxd checks vfsd's RESOLVE replies against (printed as
 * scope=). --scope-fd N uses a scope this process already holds.
 *
 *   pbx-client request (--control PATH | --control-fd N)
 *       (--scope PATH | --scope-fd N) --selector S --op OP --class CLASS
 *       --lifetime L [--mode install|runtime-reply] [--urgency U]
 *       [--job ID:GEN] [--session N] [--realm N] [--entry TEXT]
 *       [--label TEXT] [--target PID:GEN] [--slot N] [--wait-ms N]
 *       [--invocation N]
 *       [--then consume [--repeat N] | --then hang-up | --then hold |
 *        --then cancel | --then cancel-session]
 *   pbx-client cancel (--control ...) (--request I:G | --job ID:GEN
 *       --session N)
 *   pbx-client consume (--control ...) --grant I:G
 *
 * --control is the socket of `pbx-launchd serve --control`, which relays
 * every frame over launchd's broker connection: powerboxd accepts BEGIN,
 * in either mode, only there, and the broker then owns the request.
 * --public PATH and --public-fd N are the same option under the name of
 * the endpoint it used to be; pointed at powerboxd's own public endpoint
 * the BEGIN is refused (PBX_E_CORE_BROKER). `request --then consume` runs
 * a whole one-shot lifecycle on one connection; with `--repeat N` it runs
 * N of them back to back and prints only latency statistics
 * (docs/BENCH.md). `--then hang-up` exits right after COMMIT without
 * asking for the decision, as a program that dies would: launchd then
 * cancels the request it relayed. `--then hold` waits after COMMIT for a
 * line on standard input (or its end) before asking for the decision;
 * `--then cancel` waits for one such line, sends the exact CANCEL of the
 * request on the same connection (cancel=accepted or cancel=refused),
 * waits for another, then asks for the decision; `--then cancel-session`
 * does the same with a generation-zero CANCEL naming the request's job
 * and session instead of the request. --invocation N names
 * the launchd invocation the BEGIN is made within (required with
 * --lifetime invocation; optional for one-shot). A DENIED decision
 * prints its reason (reason=).
 *
 * Exit status: 0 approved or accepted, 3 denied, cancelled or not found,
 * 1 a protocol or transport failure, 2 a usage error.
 */
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "sha2/pbx_sha2.h"

#define CLIENT_TIMEOUT_MS 10000

/* Everything the command line said. */
typedef struct client_opts {
    int public_fd;
    int scope_fd;
    /* The identity vfsd named the scope by (--scope PATH), else 0. */
    uint64_t scope_id;
    const char *selector;
    uint64_t wait_ms;
    uint64_t session;
    uint64_t realm;
    uint64_t job_id;
    uint64_t job_gen;
    uint64_t pid;
    uint64_t pgen;
    uint64_t slot;
    /* --invocation N: the BEGIN's invocation id (0: none). */
    uint64_t invocation;
    uint64_t a;
    uint64_t b;
    uint32_t op;
    uint32_t cls;
    uint32_t lifetime;
    uint32_t mode;
    uint32_t urgency;
    const char *entry;
    const char *label;
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

static pbx_peer_msg g_reply;
static uint8_t g_buf[PBX_IPC_FRAME_BYTES_MAX];
/* In --repeat mode the per-request key=value lines are not printed. */
static bool g_quiet;
/* DECISION calls made so far (--repeat reports them per lifecycle). */
static uint64_t g_decision_calls;

/* Calls powerboxd; returns the decoded reply or NULL with a message. */
static const pbx_ipc_frame *client_call(int fd, size_t n, int cap,
                                        const char *what)
{
    int r = pbx_peer_io_call(fd, g_buf, n, cap, &g_reply, CLIENT_TIMEOUT_MS);
    if (r != 0) {
        pbx_peer_log("pbx-client", "%s: %s", what,
                     r == 1 ? "powerboxd closed the connection"
                            : strerror(errno));
        return NULL;
    }
    if (g_reply.err != PBX_OK) {
        pbx_peer_log("pbx-client", "%s: malformed reply: %s", what,
                     pbx_err_text(g_reply.err));
        return NULL;
    }
    if (g_reply.frame.status != 0U) {
        pbx_peer_log("pbx-client", "%s refused: %s (0x%04x)", what,
                     pbx_peer_status_text(g_reply.frame.status),
                     g_reply.frame.status);
        pbx_peer_io_close_all(g_reply.fds, g_reply.nfds);
        return NULL;
    }
    return &g_reply.frame;
}

/* Fills the BEGIN record from the options. */
static bool client_begin_rec(const client_opts *o, pbx_ipc_begin *b)
{
    memset(b, 0, sizeof(*b));
    size_t sl = strlen(o->selector);
    size_t el = strlen(o->entry);
    size_t ll = strlen(o->label);
    if (sl == 0U || sl > PBX_IPC_SELECTOR_LEN_BYTES_MAX || el == 0U ||
        el > PBX_IPC_ENTRY_LEN_BYTES_MAX || ll > PBX_IPC_LABEL_LEN_BYTES_MAX) {
        pbx_peer_log("pbx-client", "selector, entry or label length invalid");
        return false;
    }
    b->ctx.session = o->session;
    b->ctx.job_id = o->job_id;
    b->ctx.job_gen = (uint32_t)o->job_gen;
    b->ctx.realm = (uint32_t)o->realm;
    b->ctx.operation = (uint16_t)o->op;
    b->ctx.object_class = (uint16_t)o->cls;
    b->ctx.lifetime = (uint8_t)o->lifetime;
    b->ctx.mode = (uint8_t)o->mode;
    b->ctx.urgency = (uint8_t)o->urgency;
    b->ctx.entry.len = (uint16_t)el;
    memcpy(b->ctx.entry.bytes, o->entry, el);
    b->label.len = (uint16_t)ll;
    memcpy(b->label.bytes, o->label, ll);
    if (o->mode == PBX_IPC_MODE_INSTALL) {
        b->target.process_id = o->pid;
        b->target.process_gen = (uint32_t)o->pgen;
        b->target.slot = (uint32_t)o->slot;
    }
    b->selector_len = (uint32_t)sl;
    b->invocation_id = o->invocation;
    return pbx_sha2_digest((const uint8_t *)o->selector, sl,
                           b->selector_digest) == PBX_OK;
}

/* Streams the selector in chunks at exact offsets. */
static bool client_selector(int fd, pbx_ipc_id id, const char *sel)
{
    size_t len = strlen(sel);
    for (size_t off = 0; off < len; off += PBX_IPC_SELECTOR_CHUNK_BYTES_MAX) {
        size_t n = len - off;
        n = n < PBX_IPC_SELECTOR_CHUNK_BYTES_MAX
                ? n
                : PBX_IPC_SELECTOR_CHUNK_BYTES_MAX;
        pbx_ipc_selector c = {(uint32_t)off, (uint32_t)n,
                              (const uint8_t *)sel + off};
        size_t fl = 0;
        if (pbx_ipc_selector_encode(id, &c, g_buf, sizeof(g_buf), &fl) !=
                PBX_OK ||
            client_call(fd, fl, -1, "SELECTOR") == NULL ||
            pbx_ipc_empty_decode(&g_reply.frame,
                                 PBX_IPC_OP_SELECTOR | PBX_IPC_REPLY_BIT) !=
                PBX_OK) {
            return false;
        }
    }
    return true;
}

/* The grant of the last APPROVED decision, for --then consume. */
static pbx_ipc_id g_grant;
/* The runtime-reply alias kept for --then consume, or -1. */
static int g_alias = -1;

/* The name of a DENIED decision's reason (pbx_ipc_reason). */
static const char *client_reason_name(uint16_t reason)
{
    static const char *const names[] = {
        "none",         "policy",      "user",   "prompt-timeout",
        "peer-timeout", "peer-failed", "resolve"};
    return reason < PBX_ARRAY_LEN(names) ? names[reason] : "?";
}

/* Prints a DECISION and maps it to the exit status. */
static int client_report(const pbx_ipc_decision *d, pbx_ipc_id id)
{
    if (!g_quiet || d->outcome != PBX_IPC_OUTCOME_APPROVED) {
        printf("request=%u.%u\noutcome=%s\n", id.index, id.gen,
               pbx_peer_name_of(PBX_PEER_NAMES_OUTCOME, d->outcome));
    }
    if (d->outcome == PBX_IPC_OUTCOME_DENIED) {
        printf("reason=%s\n", client_reason_name(d->reason));
    }
    if (d->outcome != PBX_IPC_OUTCOME_APPROVED) {
        return 3;
    }
    if (!g_quiet) {
        printf("mode=%s\ngrant=%u.%u\nslot=%u\n",
               pbx_peer_name_of(PBX_PEER_NAMES_MODE, d->mode), d->grant.index,
               d->grant.gen, d->installed_slot);
    }
    g_grant = d->grant;
    if (g_reply.nfds == 1U && !g_quiet) {
        printf("alias_inode=%llu\n",
               (unsigned long long)pbx_peer_io_inode(g_reply.fds[0]));
        /* Kept only to watch its revocation after --then consume. */
        g_alias = g_reply.fds[0];
        g_reply.fds[0] = -1;
    }
    pbx_peer_io_close_all(g_reply.fds, g_reply.nfds);
    return 0;
}

/* After consumption, waits (bounded) for the alias to be revoked: vfsd's
 * RETIRE cuts the object's connection, so the alias reads end of file.
 * Prints alias=revoked or alias=live; returns the exit status. */
static int client_alias_revoked(uint64_t wait_ms)
{
    uint8_t b[64];
    struct pollfd p = {g_alias, POLLIN, 0};
    int r = poll(&p, 1, (int)(wait_ms > 60000U ? 60000U : wait_ms));
    bool gone = r == 1 && recv(g_alias, b, sizeof(b), MSG_DONTWAIT) == 0;
    (void)close(g_alias);
    g_alias = -1;
    printf("alias=%s\n", gone ? "revoked" : "live");
    return gone ? 0 : 1;
}

/* The pause before the next DECISION while it is PENDING, in
 * microseconds. A single request asks every 50 ms. --repeat asks at once
 * after COMMIT, then waits 20 us, doubling up to 1 ms, so a decision that
 * is ready costs no sleep and a pending one at most about 1 ms more. */
static uint64_t client_backoff_us(uint64_t prev_us)
{
    if (!g_quiet) {
        return 50000U;
    }
    return prev_us == 0U ? 20U : (prev_us >= 500U ? 1000U : prev_us * 2U);
}

/* Asks for the DECISION until it is no longer PENDING (bounded). */
static int client_decision(int fd, pbx_ipc_id id, uint64_t wait_ms)
{
    uint64_t pause_us = 0;
    for (uint64_t waited_us = 0; waited_us <= wait_ms * 1000U;
         waited_us += pause_us) {
        size_t n = 0;
        pbx_ipc_decision d;
        g_decision_calls++;
        if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, g_buf, sizeof(g_buf),
                                 &n) != PBX_OK ||
            client_call(fd, n, -1, "DECISION") == NULL ||
            pbx_ipc_decision_reply_decode(&g_reply.frame, &d) != PBX_OK) {
            pbx_peer_io_close_all(g_reply.fds, g_reply.nfds);
            return 1;
        }
        if (d.outcome != PBX_IPC_OUTCOME_PENDING) {
            return client_report(&d, id);
        }
        pause_us = client_backoff_us(pause_us);
        struct timespec ts = {(time_t)(pause_us / 1000000U),
                              (long)(pause_us % 1000000U) * 1000L};
        (void)nanosleep(&ts, NULL);
    }
    printf("outcome=pending\n");
    pbx_peer_log("pbx-client", "no decision within %llu ms",
                 (unsigned long long)wait_ms);
    return 1;
}

/* Waits for one line on standard input, or its end (--then hold and
 * --then cancel: the caller says when to go on). */
static void client_wait_line(void)
{
    (void)fflush(stdout);
    char ch = 0;
    for (;;) {
        if (read(STDIN_FILENO, &ch, 1U) != 1 || ch == '\n') {
            return;
        }
    }
}

/* --then cancel: the exact CANCEL of request id on this connection. */
static void client_cancel_exact(int fd, pbx_ipc_id id, const client_opts *o)
{
    pbx_ipc_cancel c;
    memset(&c, 0, sizeof(c));
    c.request = id;
    if (o->then_cancel_session) {
        c.by_correlation = true;
        memset(&c.request, 0, sizeof(c.request));
        c.job_id = o->job_id;
        c.job_gen = (uint32_t)o->job_gen;
        c.session = o->session;
    }
    size_t n = 0;
    bool ok =
        pbx_ipc_cancel_encode(&c, g_buf, sizeof(g_buf), &n) == PBX_OK &&
        client_call(fd, n, -1, "CANCEL") != NULL &&
        pbx_ipc_empty_decode(&g_reply.frame,
                             PBX_IPC_OP_CANCEL | PBX_IPC_REPLY_BIT) == PBX_OK;
    printf("cancel=%s\n", ok ? "accepted" : "refused");
}

/* request: BEGIN, SELECTOR chunks, COMMIT with the scope, DECISION. */
static int client_request(const client_opts *o)
{
    static pbx_ipc_begin b;
    size_t n = 0;
    pbx_ipc_begin_reply br;
    if (o->scope_fd < 0 || o->selector == NULL || !client_begin_rec(o, &b)) {
        pbx_peer_log("pbx-client", "request needs --scope and --selector");
        return 2;
    }
    if (pbx_ipc_begin_encode(&b, g_buf, sizeof(g_buf), &n) != PBX_OK) {
        pbx_peer_log("pbx-client", "BEGIN is not admissible (check op, "
                                   "class, lifetime, mode and target)");
        return 2;
    }
    if (client_call(o->public_fd, n, -1, "BEGIN") == NULL ||
        pbx_ipc_begin_reply_decode(&g_reply.frame, &br) != PBX_OK) {
        return 1;
    }
    pbx_ipc_id id = g_reply.frame.request;
    if (!g_quiet) {
        printf("request=%u.%u\ndest_slot=%u\n", id.index, id.gen, br.dest_slot);
        if (o->scope_id != 0U) {
            printf("scope=%llu\n", (unsigned long long)o->scope_id);
        }
    }
    if (!client_selector(o->public_fd, id, o->selector)) {
        return 1;
    }
    pbx_ipc_commit c = {br.dest_slot};
    if (pbx_ipc_commit_encode(id, &c, g_buf, sizeof(g_buf), &n) != PBX_OK ||
        client_call(o->public_fd, n, o->scope_fd, "COMMIT") == NULL ||
        pbx_ipc_empty_decode(&g_reply.frame,
                             PBX_IPC_OP_COMMIT | PBX_IPC_REPLY_BIT) != PBX_OK) {
        return 1;
    }
    if (o->then_hangup) {
        /* Exiting closes the connection with the request still open. */
        printf("hang_up=after-commit\n");
        return 0;
    }
    if (o->then_hold || o->then_cancel || o->then_cancel_session) {
        client_wait_line();
    }
    if (o->then_cancel || o->then_cancel_session) {
        client_cancel_exact(o->public_fd, id, o);
        client_wait_line();
    }
    (void)fflush(stdout);
    int rc = client_decision(o->public_fd, id, o->wait_ms);
    if (rc != 0 || !o->then_consume) {
        return rc;
    }
    pbx_ipc_consume cs = {g_grant};
    if (pbx_ipc_consume_encode(&cs, g_buf, sizeof(g_buf), &n) != PBX_OK ||
        client_call(o->public_fd, n, -1, "CONSUME") == NULL ||
        pbx_ipc_empty_decode(&g_reply.frame, PBX_IPC_OP_CONSUME |
                                                 PBX_IPC_REPLY_BIT) != PBX_OK) {
        return 1;
    }
    if (!g_quiet) {
        printf("consume=accepted\n");
    }
    return g_alias >= 0 ? client_alias_revoked(o->wait_ms) : 0;
}

/* Monotonic nanoseconds. */
static uint64_t client_now_ns(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000U + (uint64_t)ts.tv_nsec;
}

/* Orders two latencies for qsort. */
static int client_cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Prints the statistics of the n sorted latencies in ns (n > 0). */
static void client_stats(const uint64_t *ns, uint64_t n, uint64_t total_ns)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        sum += ns[i];
    }
    /* The nearest-rank percentiles: the smallest sample with at least
     * that share of the samples at or below it. */
    uint64_t p50 = (n * 50U + 99U) / 100U;
    uint64_t p99 = (n * 99U + 99U) / 100U;
    printf("repeat=%llu\nmin_ns=%llu\nmedian_ns=%llu\np99_ns=%llu\n"
           "max_ns=%llu\nmean_ns=%llu\nwall_ns_per_lifecycle=%llu\n"
           "decisions_per_lifecycle=%.3f\n",
           (unsigned long long)n, (unsigned long long)ns[0],
           (unsigned long long)ns[p50 - 1U], (unsigned long long)ns[p99 - 1U],
           (unsigned long long)ns[n - 1U], (unsigned long long)(sum / n),
           (unsigned long long)(total_ns / n),
           (double)g_decision_calls / (double)n);
}

/* --repeat: o->repeat whole one-shot lifecycles on the one connection,
 * each timed from sending BEGIN to CONSUME's reply. */
static int client_repeat(const client_opts *o)
{
    if (!o->then_consume || o->lifetime != PBX_IPC_LIFETIME_ONE_SHOT) {
        pbx_peer_log("pbx-client", "--repeat needs --then consume and a "
                                   "one-shot lifetime");
        return 2;
    }
    uint64_t *ns = calloc((size_t)o->repeat, sizeof(*ns));
    if (ns == NULL) {
        pbx_peer_log("pbx-client", "--repeat: out of memory");
        return 1;
    }
    g_quiet = true;
    uint64_t start = client_now_ns();
    for (uint64_t i = 0; i < o->repeat; i++) {
        uint64_t t0 = client_now_ns();
        int rc = client_request(o);
        ns[i] = client_now_ns() - t0;
        if (rc != 0) {
            printf("failed_at=%llu\n", (unsigned long long)i);
            free(ns);
            return rc;
        }
    }
    uint64_t total = client_now_ns() - start;
    qsort(ns, (size_t)o->repeat, sizeof(*ns), client_cmp_u64);
    client_stats(ns, o->repeat, total);
    free(ns);
    return 0;
}

/* cancel (exact request, or job and session correlation) and consume. */
static int client_simple(const client_opts *o, bool cancel)
{
    size_t n = 0;
    pbx_err e = PBX_OK;
    uint16_t op = cancel ? PBX_IPC_OP_CANCEL : PBX_IPC_OP_CONSUME;
    if (cancel) {
        pbx_ipc_cancel c;
        memset(&c, 0, sizeof(c));
        c.by_correlation = !o->have_pair;
        c.request.index = (uint32_t)o->a;
        c.request.gen = (uint32_t)o->b;
        c.job_id = o->have_pair ? 0U : o->job_id;
        c.job_gen = o->have_pair ? 0U : (uint32_t)o->job_gen;
        c.session = o->have_pair ? 0U : o->session;
        e = pbx_ipc_cancel_encode(&c, g_buf, sizeof(g_buf), &n);
    } else {
        pbx_ipc_consume c = {{(uint32_t)o->a, (uint32_t)o->b}};
        e = pbx_ipc_consume_encode(&c, g_buf, sizeof(g_buf), &n);
    }
    if (e != PBX_OK) {
        pbx_peer_log("pbx-client", "invalid %s: %s",
                     cancel ? "cancel" : "consume", pbx_err_text(e));
        return 2;
    }
    if (client_call(o->public_fd, n, -1, cancel ? "CANCEL" : "CONSUME") ==
            NULL ||
        pbx_ipc_empty_decode(&g_reply.frame, op | PBX_IPC_REPLY_BIT) !=
            PBX_OK) {
        return 1;
    }
    printf("%s=accepted\n", cancel ? "cancel" : "consume");
    return 0;
}

/* Parses one name-valued option; returns false when it is not known. */
static bool client_named(client_opts *o, const char *k, const char *v, bool *ok)
{
    static const struct {
        const char *key;
        pbx_peer_name_kind kind;
        size_t off;
    } named[] = {
        {"--op", PBX_PEER_NAMES_OPERATION, offsetof(client_opts, op)},
        {"--class", PBX_PEER_NAMES_CLASS, offsetof(client_opts, cls)},
        {"--lifetime", PBX_PEER_NAMES_LIFETIME,
         offsetof(client_opts, lifetime)},
        {"--mode", PBX_PEER_NAMES_MODE, offsetof(client_opts, mode)},
        {"--urgency", PBX_PEER_NAMES_URGENCY, offsetof(client_opts, urgency)},
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(named); i++) {
        if (strcmp(k, named[i].key) == 0) {
            uint32_t *dst = (uint32_t *)(void *)((char *)o + named[i].off);
            *ok = pbx_peer_name_parse(named[i].kind, v, dst);
            return true;
        }
    }
    return false;
}

/* Parses one option pair; false with a message when it is invalid. */
static bool client_option(client_opts *o, const char *k, const char *v)
{
    bool ok = true;
    if (client_named(o, k, v, &ok)) {
    } else if (strcmp(k, "--control") == 0 || strcmp(k, "--public") == 0) {
        o->public_fd = pbx_peer_io_connect(v, SOCK_SEQPACKET);
        ok = o->public_fd >= 0;
    } else if (strcmp(k, "--scope") == 0) {
        o->scope_fd =
            pbx_peer_io_scope_acquire(v, CLIENT_TIMEOUT_MS, &o->scope_id);
        ok = o->scope_fd >= 0;
    } else if (strcmp(k, "--control-fd") == 0 ||
               strcmp(k, "--public-fd") == 0 || strcmp(k, "--scope-fd") == 0) {
        int fd = pbx_peer_io_fd_arg(v);
        *(strcmp(k, "--scope-fd") != 0 ? &o->public_fd : &o->scope_fd) = fd;
        ok = fd >= 0;
    } else if (strcmp(k, "--selector") == 0) {
        o->selector = v;
    } else if (strcmp(k, "--entry") == 0 || strcmp(k, "--label") == 0) {
        *(strcmp(k, "--entry") == 0 ? &o->entry : &o->label) = v;
    } else if (strcmp(k, "--job") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &o->job_id,
                                 &o->job_gen);
    } else if (strcmp(k, "--target") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &o->pid, &o->pgen);
    } else if (strcmp(k, "--request") == 0 || strcmp(k, "--grant") == 0) {
        ok = pbx_peer_parse_pair(v, UINT32_MAX, UINT32_MAX, &o->a, &o->b);
        o->have_pair = true;
    } else if (strcmp(k, "--session") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &o->session);
    } else if (strcmp(k, "--invocation") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &o->invocation);
    } else if (strcmp(k, "--realm") == 0 || strcmp(k, "--slot") == 0) {
        ok = pbx_peer_parse_u64(
            v, UINT32_MAX, strcmp(k, "--realm") == 0 ? &o->realm : &o->slot);
    } else if (strcmp(k, "--ready-fd") == 0) {
        int fd = pbx_peer_io_fd_arg(v);
        pbx_peer_io_ready(fd);
        ok = fd >= 0;
    } else if (strcmp(k, "--then") == 0) {
        bool *then = strcmp(v, "consume") == 0   ? &o->then_consume
                     : strcmp(v, "hang-up") == 0 ? &o->then_hangup
                     : strcmp(v, "hold") == 0    ? &o->then_hold
                     : strcmp(v, "cancel") == 0  ? &o->then_cancel
                     : strcmp(v, "cancel-session") == 0
                         ? &o->then_cancel_session
                         : NULL;
        if (then == NULL) {
            pbx_peer_log("pbx-client", "--then takes 'consume', 'hang-up', "
                                       "'hold', 'cancel' or 'cancel-session'");
            return false;
        }
        *then = true;
    } else if (strcmp(k, "--repeat") == 0) {
        ok = pbx_peer_parse_u64(v, 10000000U, &o->repeat) && o->repeat > 0U;
    } else if (strcmp(k, "--wait-ms") == 0) {
        ok = pbx_peer_parse_u64(v, 3600000U, &o->wait_ms);
    } else {
        pbx_peer_log("pbx-client", "unknown option '%s'", k);
        return false;
    }
    if (!ok) {
        pbx_peer_log("pbx-client", "invalid %s '%s'%s%s", k, v,
                     errno != 0 ? ": " : "", errno != 0 ? strerror(errno) : "");
    }
    return ok;
}

/* Sets the defaults: a routine one-shot install request of job 1.1. */
static void client_defaults(client_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->public_fd = -1;
    o->scope_fd = -1;
    o->wait_ms = CLIENT_TIMEOUT_MS;
    o->job_id = 1;
    o->job_gen = 1;
    o->session = 1;
    o->mode = PBX_IPC_MODE_INSTALL;
    o->urgency = PBX_IPC_URGENCY_ROUTINE;
    o->lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    o->entry = "/bin/pbx-client";
    o->label = "";
}

int main(int argc, char **argv)
{
    static client_opts o;
    client_defaults(&o);
    const char *cmd = argc > 1 ? argv[1] : "";
    bool ok = argc >= 2 && (argc % 2) == 0;
    for (int i = 2; ok && i + 1 < argc; i += 2) {
        errno = 0;
        ok = client_option(&o, argv[i], argv[i + 1]);
    }
    if (ok && o.public_fd < 0) {
        pbx_peer_log("pbx-client", "need --control PATH (pbx-launchd serve "
                                   "--control) or --control-fd N");
        ok = false;
    }
    if (!ok) {
        pbx_peer_log("pbx-client", "usage: pbx-client request|cancel|consume "
                                   "--control PATH ... (see docs/HOST.md)");
        return 2;
    }
    int rc = 2;
    if (strcmp(cmd, "request") == 0) {
        rc = o.repeat > 0U ? client_repeat(&o) : client_request(&o);
    } else if (strcmp(cmd, "cancel") == 0 || strcmp(cmd, "consume") == 0) {
        rc = client_simple(&o, strcmp(cmd, "cancel") == 0);
    } else {
        pbx_peer_log("pbx-client", "unknown command '%s'", cmd);
    }
    (void)fflush(stdout);
    return rc;
}
