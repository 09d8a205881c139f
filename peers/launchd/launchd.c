/*
 * launchd.c: the reference launchd for the Linux host, in three commands.
 *
 *   pbx-launchd serve (--wake PATH | --wake-fd N | --attach-fd N)
 *                     [--broker-fd N] [--attach-fd N]
 *                     [--control PATH] [--wake-log PATH] [--ready-fd N]
 *                     [--wake-hold-file PATH] [--stage PID:GEN ...]
 *                     [--max-conns N] [--idle-ms N] [--max-open N]
 *                     [--max-jobs N] [--call-ms N] [--first-job N]
 *                     [--max-per-pid N] [--max-jobs-per-pid N]
 *                     [--hold PATH] [--fuse-dir DIR]
 *                     [--prompt-burst N] [--prompt-per-ms N]
 *       receives powerboxd's authority-free WAKE datagrams (a descriptor
 *       that arrives with one is deleted and reported; each valid WAKE is
 *       logged, and appended as "wake request I.G job J.G" to
 *       --wake-log). With --wake-hold-file (a test aid) it leaves the wake
 *       route unread while PATH exists.
 *       --attach-fd is launchd's end of the supervisor's attach channel
 *       (launchd_attach.c): an 'R' message with a wake route and a broker
 *       replaces both (the old broker lost first). With it launchd may
 *       start with neither: no wakes, and callers answered ROUTE, until
 *       routes arrive.
 *       --broker-fd is launchd's end of the broker connection (powerboxd's
 *       slot 10). Every public request that arrives on a connection is
 *       relayed over it stamped with launchd's own nonzero seq and kept
 *       in a call table {connection and its generation, caller's seq, op,
 *       request id}; powerboxd's reply is matched by that seq, op and
 *       request id and goes to exactly the caller, with the caller's seq
 *       restored. Many calls are in flight at once. A reply that matches
 *       no call is logged and its descriptors closed; a reply whose caller
 *       is gone is never delivered: a new request is CANCELled, an alias
 *       closed. A call unanswered for --call-ms (default 10000) answers
 *       its caller PBX_PEER_E_ROUTE and stays in the table for its late
 *       reply (a late approval's grant is CANCELled). Sends to powerboxd
 *       never wait: a full broker answers the caller PBX_PEER_E_BUSY, as
 *       does a connection with 64 calls at powerboxd.
 *       DECISION is answered only when final: a PENDING answer holds the
 *       caller until powerboxd's WAKE for that request, then launchd asks
 *       again and delivers the decision (with a runtime-reply alias) to
 *       that caller; a WAKE that comes first is remembered; held
 *       DECISIONs are re-asked every 5000 ms as a safety net.
 *       Programs are launched through launchd: LAUNCH on a --control
 *       connection (pbx-launchd run) starts a job in its own process group
 *       with the caller's stdio and a job connection at descriptor 3
 *       (PBX_LAUNCHD_FD=3, PBX_JOB, PBX_ENTRY, PBX_SESSION, PBX_REALM,
 *       PBX_TARGET when bound to one of the --stage processes). launchd is
 *       a child subreaper and refuses a control connection from any
 *       process below it (a job or its descendants). BEGIN is accepted
 *       only on a job connection and is bound to the job: its job id,
 *       generation, session, realm, entry and install target are filled
 *       in when zero or empty and must equal the job's otherwise
 *       (PBX_PEER_E_NOT_YOURS). A connection may drive only
 *       the requests it began and the grants it received. When a job
 *       exits its launcher gets EXIT, the job is EXPIREd at powerboxd and
 *       its staged process freed; when the launcher hangs up first, the
 *       job's process group is killed. When a connection hangs up, each of
 *       its open requests is CANCELled exactly and its decision collected.
 *       Limits: --max-conns control connections (96; at the limit a new
 *       one evicts the longest-silent control connection with nothing
 *       outstanding and no live job, or is refused and logged when there
 *       is none), --max-per-pid control connections one process (by
 *       SO_PEERCRED pid) holds at once (16; refused beyond, before any
 *       eviction), --idle-ms (10000) without an accepted LAUNCH or EXPIRE
 *       before such a control connection is dropped, --max-open open
 *       requests per connection, hence per job (8; PBX_PEER_E_BUSY
 *       beyond), --max-jobs live jobs (128), --max-jobs-per-pid live jobs
 *       launched by one process (by its control connection's SO_PEERCRED
 *       pid; 8, so one process's jobs hold at most 64 of the default 128
 *       request records; PBX_PEER_E_BUSY and a log line beyond),
 *       --first-job the first job id allocated (11).
 *       A sandboxed job's terminal stdio is a pty launchd relays
 *       (launchd_pty.c). --hold PATH is the prompt hold's socket
 *       (launchd_hold.c): while ttyd holds (HOLD n, answered HELD n,
 *       until RELEASE n) no job output is written and no key is read.
 *       --fuse-dir DIR names vfsd's FUSE mount (vfsd's own --fuse-dir);
 *       every open broker gets it as --mount (launchd_broker.c).
 *       --prompt-burst and --prompt-per-ms are a sandboxed job's prompt
 *       budget, one for its own requests and its open broker's
 *       (launchd_budget.c; default 5, then one per 2000 ms).
 *   pbx-launchd run --control PATH [--sandbox [--profile FILE]] [--job ID:GEN]
 *                   [--entry NAME] [--session N] [--realm N] [--wait-ms N]
 *                   -- PROG [ARG...]
 *       launches PROG as a job (session and realm default 1; sandboxed
 *       under Landlock with --sandbox, see docs/HOST.md) with this
 *       process's stdio, logs "launchd: job ID:GEN pid P", waits for its EXIT
 * and exits with its status (128+N for signal N); 125 when the launch is
 * refused, launchd gives no answer to it within --wait-ms (1..3600000,
 * default 10000) or goes away first; 2 on a usage error. pbx-launchd expire
 * (--control PATH | --public PATH | --public-fd N)
 *                      --job ID:GEN [--invocation N]
 *       sends EXPIRE for an invocation or a whole job and prints
 *       "expire=accepted"; waits at most 5 s for the answer. Through
 *       --control it travels over the broker; powerboxd's public endpoint
 *       refuses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* How long expire waits for its answer. */
#define LAUNCHD_EXPIRE_WAIT_MS 5000

static launchd_srv g_srv;
static pbx_peer_msg g_msg;

/* Makes room for one more control connection at --max-conns: evicts the
 * longest-silent one that has no call outstanding, no DECISION held and
 * no live job. Returns false (nothing evicted) when none qualifies. */
static bool launchd_evict(launchd_srv *srv)
{
    int best = -1;
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        if (launchd_evictable(srv, i) &&
            (best < 0 || srv->conns[i].last_ms < srv->conns[best].last_ms)) {
            best = (int)i;
        }
    }
    if (best < 0) {
        return false;
    }
    pbx_peer_log("launchd",
                 "control connection %d evicted for a new one: silent for "
                 "%llu ms",
                 best,
                 (unsigned long long)(srv->now - srv->conns[best].last_ms));
    launchd_conn_close(srv, (uint32_t)best, NULL);
    return true;
}

/* The control connections process pid holds now. */
static uint32_t launchd_held_by(const launchd_srv *srv, pid_t pid)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        const launchd_conn *k = &srv->conns[i];
        n += k->fd >= 0 && !k->job_conn && k->peer == pid ? 1U : 0U;
    }
    return n;
}

/* Whether the new control connection c may stay: not a launched job's
 * (or a descendant's), its process below --max-per-pid, and room for it
 * (evicting if need be). Closes it with a log line otherwise; *peer is
 * its SO_PEERCRED pid. */
static bool launchd_admit(launchd_srv *srv, int c, pid_t *peer)
{
    int origin = launchd_peer_origin(c, srv->self, peer);
    if (origin != LAUNCHD_ORIGIN_OUTSIDE) {
        if (origin == LAUNCHD_ORIGIN_JOB) {
            pbx_peer_log("launchd",
                         "control connection from a launched job refused "
                         "(pid %d)",
                         (int)*peer);
        } else {
            pbx_peer_log("launchd",
                         "control connection refused: the ancestry of pid "
                         "%d cannot be read within %d steps",
                         (int)*peer, LAUNCHD_ANCESTRY_STEPS);
        }
        (void)close(c);
        return false;
    }
    /* Judged before any eviction: one process's many connections never
     * push out another's. */
    uint32_t held = launchd_held_by(srv, *peer);
    if (held >= srv->max_per_pid) {
        pbx_peer_log("launchd",
                     "control connection refused: pid %d already holds %u "
                     "(--max-per-pid %u)",
                     (int)*peer, held, srv->max_per_pid);
        (void)close(c);
        return false;
    }
    if (srv->ncontrol >= srv->max_conns && !launchd_evict(srv)) {
        pbx_peer_log("launchd", "control connection refused: limit %u",
                     srv->max_conns);
        (void)close(c);
        return false;
    }
    return true;
}

/* Accepts pending control connections (see launchd_admit). */
void launchd_accept(launchd_srv *srv)
{
    for (int i = 0; i < 16; i++) {
        int c = accept(srv->control, NULL, NULL);
        if (c < 0) {
            return;
        }
        (void)fcntl(c, F_SETFD, FD_CLOEXEC);
        pid_t peer = 0;
        if (!launchd_admit(srv, c, &peer)) {
            continue;
        }
        int ci = launchd_conn_alloc(srv);
        if (ci < 0) {
            pbx_peer_log("launchd", "control connection refused: no slot");
            (void)close(c);
            continue;
        }
        launchd_nonblock(c);
        launchd_conn *k = &srv->conns[ci];
        k->fd = c;
        k->job_conn = false;
        k->calls = k->begins = 0;
        k->last_ms = srv->now;
        k->peer = peer;
        pbx_peer_track_init(&k->track);
        srv->ncontrol++;
        launchd_loop_watch_conn(srv, (uint32_t)ci);
        launchd_conn_arm(srv, (uint32_t)ci);
    }
}

/* Parses one numeric serve option v into *out (1..max); false if bad. */
static bool launchd_num(const char *v, uint64_t max, uint32_t *out)
{
    uint64_t x = 0;
    if (!pbx_peer_parse_u64(v, max, &x) || x == 0U) {
        return false;
    }
    *out = (uint32_t)x;
    return true;
}

/* Parses a --stage PID:GEN into the stage table. */
static bool launchd_stage_arg(launchd_srv *srv, const char *v)
{
    uint64_t pid = 0;
    uint64_t gen = 0;
    if (srv->nstage >= LAUNCHD_STAGE_MAX ||
        !pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &pid, &gen) ||
        gen == 0U) {
        return false;
    }
    srv->stage[srv->nstage++] = (launchd_stage){pid, (uint32_t)gen, false};
    return true;
}

/* Parses one limit option k v; false when k is not one or v is bad. */
static bool launchd_limit_arg(launchd_srv *srv, const char *k, const char *v)
{
    uint32_t first = 0;
    if (strcmp(k, "--max-conns") == 0) {
        return launchd_num(v, LAUNCHD_CONTROL_CAP, &srv->max_conns);
    }
    if (strcmp(k, "--max-per-pid") == 0) {
        return launchd_num(v, LAUNCHD_CONTROL_CAP, &srv->max_per_pid);
    }
    if (strcmp(k, "--idle-ms") == 0) {
        return launchd_num(v, 86400000U, &srv->idle_ms);
    }
    if (strcmp(k, "--max-open") == 0) {
        return launchd_num(v, PBX_PEER_TRACK_MAX, &srv->max_open);
    }
    if (strcmp(k, "--max-jobs") == 0) {
        return launchd_num(v, LAUNCHD_JOBS_CAP, &srv->max_jobs);
    }
    if (strcmp(k, "--max-jobs-per-pid") == 0) {
        return launchd_num(v, LAUNCHD_JOBS_CAP, &srv->max_jobs_per_pid);
    }
    if (strcmp(k, "--call-ms") == 0) {
        return launchd_num(v, 86400000U, &srv->call_ms);
    }
    if (strcmp(k, "--prompt-burst") == 0) {
        return launchd_num(v, 1000000U, &srv->prompt_burst) &&
               srv->prompt_burst > 0U;
    }
    if (strcmp(k, "--prompt-per-ms") == 0) {
        return launchd_num(v, 86400000U, &srv->prompt_per_ms) &&
               srv->prompt_per_ms > 0U;
    }
    if (strcmp(k, "--first-job") == 0 && launchd_num(v, UINT32_MAX, &first)) {
        srv->next_job = first;
        return true;
    }
    return strcmp(k, "--stage") == 0 && launchd_stage_arg(srv, v);
}

/* Parses serve's options into *srv; false on any error. */
static bool launchd_serve_args(int argc, char **argv, launchd_srv *srv,
                               int *ready)
{
    bool wake_given = false;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i];
        const char *v = argv[i + 1];
        if (strcmp(k, "--wake") == 0) {
            wake_given = true;
            srv->wake = pbx_peer_io_listen(v, SOCK_DGRAM);
        } else if (strcmp(k, "--wake-fd") == 0) {
            wake_given = true;
            srv->wake = pbx_peer_io_fd_arg(v);
        } else if (strcmp(k, "--attach-fd") == 0) {
            srv->attach = pbx_peer_io_fd_arg(v);
            if (srv->attach < 0) {
                pbx_peer_log("launchd", "invalid option %s '%s'", k, v);
                return false;
            }
        } else if (strcmp(k, "--broker-fd") == 0) {
            srv->broker = pbx_peer_io_fd_arg(v);
        } else if (strcmp(k, "--control") == 0) {
            srv->control = pbx_peer_io_listen_private(v, SOCK_SEQPACKET);
            srv->control_path = v;
        } else if (strcmp(k, "--wake-log") == 0) {
            srv->log = fopen(v, "ae");
        } else if (strcmp(k, "--hold") == 0) {
            srv->hold_listen = pbx_peer_io_listen_private(v, SOCK_STREAM);
            if (srv->hold_listen < 0 || listen(srv->hold_listen, 4) != 0) {
                pbx_peer_log("launchd", "cannot listen on --hold '%s': %s", v,
                             strerror(errno));
                return false;
            }
        } else if (strcmp(k, "--wake-hold-file") == 0) {
            srv->hold = v;
        } else if (strcmp(k, "--fuse-dir") == 0 && v[0] == '/') {
            srv->fuse_dir = v;
        } else if (strcmp(k, "--ready-fd") == 0) {
            *ready = pbx_peer_io_fd_arg(v);
        } else if (!launchd_limit_arg(srv, k, v)) {
            pbx_peer_log("launchd", "invalid option %s '%s'", k, v);
            return false;
        }
    }
    /* Without --attach-fd the wake route is required; with it, routes
     * may come later (but a wake route that was asked for must work). */
    bool wake_ok = wake_given ? srv->wake >= 0 : srv->attach >= 0;
    return wake_ok && (argc % 2) == 0;
}

/* Sets the defaults of every serve option. */
static void launchd_defaults(launchd_srv *srv)
{
    srv->wake = srv->broker = srv->control = srv->attach = -1;
    srv->ttyd_fd = srv->hold_listen = -1;
    srv->max_conns = 96;
    srv->max_per_pid = 16;
    srv->idle_ms = 10000;
    srv->max_open = 8;
    /* As many jobs as pbx geometry's default requests pool (128), so
     * that 64 programs may each hold an exceptional request beside others
     * (issue 20, prompt-fairness). */
    srv->max_jobs = 128;
    /* One launching process's jobs, each with --max-open requests, hold
     * at most 8 x 8 = 64 request records: half the default pool, so that
     * one process cannot take them all (issue 20, item 3). */
    srv->max_jobs_per_pid = 8;
    srv->call_ms = 10000;
    /* A sandboxed job's prompts: 5 in a row, then one every 2 s (as
     * pbx-broker's own default: docs/HOST.md, "The prompt budget"). */
    srv->prompt_burst = 5;
    srv->prompt_per_ms = 2000;
    srv->next_job = 11;
    srv->ep = -1;
    launchd_index_init(srv);
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        srv->conns[i].fd = -1;
    }
}

/* serve: relay, deliver, launch and reap until killed. */
static int launchd_serve(int argc, char **argv)
{
    launchd_srv *srv = &g_srv;
    int ready = -1;
    launchd_defaults(srv);
    if (!launchd_serve_args(argc, argv, srv, &ready)) {
        pbx_peer_log("launchd", "usage: pbx-launchd serve (--wake PATH | "
                                "--wake-fd N | --attach-fd N) [--broker-fd N] "
                                "[--attach-fd N] "
                                "[--control PATH] [--wake-log PATH] "
                                "[--wake-hold-file PATH] [--stage PID:GEN] "
                                "[--max-conns N] [--idle-ms N] [--max-open N] "
                                "[--max-jobs N] [--call-ms N] "
                                "[--first-job N] [--max-per-pid N] "
                                "[--max-jobs-per-pid N] [--hold PATH] "
                                "[--fuse-dir DIR] [--prompt-burst N] "
                                "[--prompt-per-ms N]");
        return 2;
    }
    int fds[5] = {srv->wake, srv->broker, srv->control, srv->attach,
                  srv->hold_listen};
    for (int i = 0; i < 5; i++) {
        if (fds[i] >= 0) {
            (void)fcntl(fds[i], F_SETFD, FD_CLOEXEC);
            launchd_nonblock(fds[i]);
        }
    }
    (void)signal(SIGPIPE, SIG_IGN);
    if (!launchd_events_init(srv) || !launchd_loop_start(srv)) {
        return 1;
    }
    /* Every descendant of a job, however it detaches, stays below
     * launchd: so the control socket can tell a job's connection. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0UL, 0UL, 0UL) != 0) {
        pbx_peer_log("launchd", "cannot become a child subreaper: %s",
                     strerror(errno));
        return 1;
    }
    srv->self = getpid();
    srv->now = launchd_now_ms();
    pbx_peer_log("launchd", "ready%s%s",
                 srv->broker >= 0 ? " (broker connected)" : "",
                 srv->attach >= 0 ? " (attach channel open)" : "");
    pbx_peer_io_ready(ready);
    /* A test aid, on only where a test sets PBX_LAUNCHD_CHECK_INDEX (the
     * e2e runner does): every index is recomputed after each pass, and a
     * drift, always a bug, stops launchd at once with its reason. */
    bool check = getenv("PBX_LAUNCHD_CHECK_INDEX") != NULL;
    for (;;) {
        launchd_loop_pass(srv);
        const char *drift = check ? launchd_index_check(srv) : NULL;
        if (drift != NULL) {
            pbx_peer_log("launchd", "index drift: %s", drift);
            abort();
        }
    }
}

/* Parses the expire options into *fd and *rec; false on any error. */
static bool launchd_expire_args(int argc, char **argv, int *fd,
                                pbx_ipc_expire *rec)
{
    uint64_t job = 0;
    uint64_t gen = 0;
    bool have_job = false;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i];
        const char *v = argv[i + 1];
        bool ok = true;
        if (strcmp(k, "--public") == 0 || strcmp(k, "--control") == 0) {
            *fd = launchd_connect(v, LAUNCHD_EXPIRE_WAIT_MS);
            ok = *fd >= 0;
        } else if (strcmp(k, "--public-fd") == 0) {
            *fd = pbx_peer_io_fd_arg(v);
        } else if (strcmp(k, "--job") == 0) {
            ok = have_job =
                pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &job, &gen);
        } else if (strcmp(k, "--invocation") == 0) {
            ok = pbx_peer_parse_u64(v, UINT64_MAX, &rec->invocation_id) &&
                 rec->invocation_id != 0U;
        } else {
            ok = false;
        }
        if (!ok) {
            pbx_peer_log("launchd", "invalid %s '%s'%s%s", k, v,
                         errno != 0 ? ": " : "",
                         errno != 0 ? strerror(errno) : "");
            return false;
        }
    }
    rec->kind = rec->invocation_id != 0U ? PBX_IPC_EXPIRE_INVOCATION
                                         : PBX_IPC_EXPIRE_JOB;
    rec->job_id = job;
    rec->job_gen = (uint32_t)gen;
    return *fd >= 0 && have_job && (argc % 2) == 0;
}

/* expire: one EXPIRE call, answered within LAUNCHD_EXPIRE_WAIT_MS. */
static int launchd_expire(int argc, char **argv)
{
    int fd = -1;
    pbx_ipc_expire rec;
    memset(&rec, 0, sizeof(rec));
    uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_IPC_EXPIRE_BYTES];
    size_t n = 0;
    errno = 0;
    if (!launchd_expire_args(argc, argv, &fd, &rec) ||
        pbx_ipc_expire_encode(&rec, buf, sizeof(buf), &n) != PBX_OK) {
        pbx_peer_log("launchd", "usage: pbx-launchd expire (--control PATH "
                                "| --public PATH | --public-fd N) --job "
                                "ID:GEN [--invocation N] (generation nonzero)");
        return 2;
    }
    int r = pbx_peer_io_call(fd, buf, n, -1, &g_msg, LAUNCHD_EXPIRE_WAIT_MS);
    if (r != 0 || g_msg.err != PBX_OK) {
        pbx_peer_log("launchd", "EXPIRE: %s",
                     r == 0   ? pbx_err_text(g_msg.err)
                     : r == 1 ? "the connection was closed without an answer"
                     : errno == ETIMEDOUT ? "no answer within 5 s"
                                          : strerror(errno));
        return 1;
    }
    pbx_peer_io_close_all(g_msg.fds, g_msg.nfds);
    if (g_msg.frame.status != 0U ||
        pbx_ipc_empty_decode(&g_msg.frame,
                             PBX_IPC_OP_EXPIRE | PBX_IPC_REPLY_BIT) != PBX_OK) {
        pbx_peer_log("launchd", "EXPIRE refused: %s (0x%04x)",
                     pbx_peer_status_text(g_msg.frame.status),
                     g_msg.frame.status);
        return 1;
    }
    printf("expire=accepted\n");
    return 0;
}

/* The synopsis of every command (docs/HOST.md says the rest). */
static const char launchd_usage[] =
    "usage: pbx-launchd serve (--wake PATH | --wake-fd N | --attach-fd N)\n"
    "                   [--broker-fd N] [--attach-fd N]\n"
    "                   [--control PATH] [--wake-log PATH] [--ready-fd N]\n"
    "                   [--wake-hold-file PATH] [--stage PID:GEN ...]\n"
    "                   [--max-conns N] [--idle-ms N] [--max-open N]\n"
    "                   [--max-jobs N] [--call-ms N] [--first-job N]\n"
    "                   [--max-per-pid N] [--max-jobs-per-pid N]\n"
    "                   [--hold PATH] [--fuse-dir DIR]\n"
    "                   [--prompt-burst N] [--prompt-per-ms N]\n"
    "       pbx-launchd run --control PATH [--sandbox [--profile FILE]]\n"
    "                   [--job ID:GEN] [--entry NAME] [--session N]\n"
    "                   [--realm N] [--wait-ms N]\n"
    "                   -- PROG [ARG...]\n"
    "       pbx-launchd expire (--control PATH | --public PATH |\n"
    "                   --public-fd N) --job ID:GEN [--invocation N]\n"
    "       pbx-launchd -h | --help\n";

/* Whether k is one of the names in the NULL-terminated list known. */
static bool launchd_in(const char *k, const char *const *known)
{
    for (size_t j = 0; j < 24U && known[j] != NULL; j++) {
        if (strcmp(k, known[j]) == 0) {
            return true;
        }
    }
    return false;
}

/* Names the first word in an option position of subcommand argv[1]'s
 * words (up to run's "--") that is not one of its options, on one line;
 * false then. run's --sandbox alone takes no value. */
static bool launchd_known_options(int argc, char **argv)
{
    static const char *const serve[] = {"--wake",
                                        "--wake-fd",
                                        "--broker-fd",
                                        "--control",
                                        "--wake-log",
                                        "--ready-fd",
                                        "--wake-hold-file",
                                        "--stage",
                                        "--max-conns",
                                        "--idle-ms",
                                        "--max-open",
                                        "--max-jobs",
                                        "--call-ms",
                                        "--first-job",
                                        "--attach-fd",
                                        "--max-per-pid",
                                        "--hold",
                                        "--max-jobs-per-pid",
                                        NULL};
    static const char *const run[] = {"--control", "--sandbox", "--job",
                                      "--entry",   "--session", "--realm",
                                      "--profile", "--wait-ms", NULL};
    static const char *const expire[] = {
        "--control", "--public", "--public-fd", "--job", "--invocation", NULL};
    bool is_run = strcmp(argv[1], "run") == 0;
    const char *const *known = is_run                          ? run
                               : strcmp(argv[1], "serve") == 0 ? serve
                                                               : expire;
    int i = 2;
    while (i < argc && !(is_run && strcmp(argv[i], "--") == 0)) {
        /* serve's options of issue 21 are named apart from the table. */
        static const char *const serve21[] = {"--fuse-dir", "--prompt-burst",
                                              "--prompt-per-ms", NULL};
        bool more =
            strcmp(argv[1], "serve") == 0 && launchd_in(argv[i], serve21);
        if (!more && !launchd_in(argv[i], known)) {
            pbx_peer_log("pbx-launchd",
                         "unknown option '%s' (try 'pbx-launchd %s --help')",
                         argv[i], argv[1]);
            return false;
        }
        i += strcmp(argv[i], "--sandbox") == 0 ? 1 : 2;
    }
    return true;
}

int main(int argc, char **argv)
{
    /* Neither serve (the broker end, every job connection) nor run (the
     * launcher's control connection) may be traced, nor its descriptors
     * taken (pidfd_getfd), by another process of the same user without
     * CAP_SYS_PTRACE: a launched job could otherwise borrow its
     * launcher's control connection. */
    if (prctl(PR_SET_DUMPABLE, 0UL, 0UL, 0UL, 0UL) != 0) {
        pbx_peer_log("launchd", "cannot make the process undumpable: %s",
                     strerror(errno));
        return 1;
    }
    bool sub = argc >= 2 &&
               (strcmp(argv[1], "serve") == 0 || strcmp(argv[1], "run") == 0 ||
                strcmp(argv[1], "expire") == 0);
    if (sub && argc == 3 &&
        (strcmp(argv[2], "-h") == 0 || strcmp(argv[2], "--help") == 0)) {
        (void)fputs(launchd_usage, stdout);
        return 0;
    }
    if (sub && !launchd_known_options(argc, argv)) {
        return 2;
    }
    if (argc >= 2 && strcmp(argv[1], "serve") == 0) {
        return launchd_serve(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "expire") == 0) {
        return launchd_expire(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "run") == 0) {
        return launchd_run(argc, argv);
    }
    if (argc == 2 &&
        (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        (void)fputs(launchd_usage, stdout);
        return 0;
    }
    (void)fputs(launchd_usage, stderr);
    return 2;
}
