/*
 * launchd_jobs.c: jobs launched through launchd. A LAUNCH on a control
 * connection starts the program in its own process group with the
 * caller's stdio and, at descriptor 3, one end of a fresh connection that
 * launchd binds to the job: every BEGIN on it is the job's. When the
 * process exits the launching connection gets EXIT, the job is expired at
 * powerboxd and its staged process freed; when the launching connection
 * hangs up first, the job's process group is killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* Descriptors the child closes above its own (stdio, the job's, and the
 * scope when one came). */
#define LAUNCHD_CHILD_FDS_MAX 4096

int launchd_conn_alloc(launchd_srv *srv)
{
    for (uint32_t i = 0; i < LAUNCHD_CONNS_CAP; i++) {
        if (srv->conns[i].fd < 0) {
            return (int)i;
        }
    }
    return -1;
}

/* Answers a LAUNCH on ci with status st (and the job when st is 0). */
static void launchd_launch_reply(launchd_srv *srv, uint32_t ci, uint32_t seq,
                                 uint16_t st, const pbx_peer_launch_reply *rec)
{
    uint8_t out[PBX_IPC_HEADER_BYTES + PBX_PEER_LAUNCH_REPLY_BYTES];
    size_t n = 0;
    if (st != 0U) {
        pbx_peer_log("launchd", "LAUNCH refused: %s", pbx_peer_status_text(st));
    }
    if (pbx_peer_launch_reply_encode(st, rec, seq, out, sizeof(out), &n) ==
        PBX_OK) {
        (void)launchd_reply(srv, ci, out, n, seq, -1);
    }
}

/* Picks the job identity for req: the named one, or the next free id
 * with generation 1. Returns the free job slot, or -1 (BUSY). */
static int launchd_job_slot(launchd_srv *srv, const pbx_peer_launch_req *req,
                            uint64_t *id, uint32_t *gen)
{
    int slot = -1;
    uint64_t want = req->job_id;
    /* At most LAUNCHD_JOBS_CAP ids are live, so one of this many
     * candidates is free; each is looked up in the id index. */
    for (uint32_t tries = 0; want == 0U && tries <= LAUNCHD_JOBS_CAP; tries++) {
        uint64_t cand = srv->next_job++;
        want = launchd_job_by_id(srv, cand) >= 0 ? 0U : cand;
    }
    if (launchd_job_by_id(srv, want) >= 0) {
        return -1;
    }
    /* The first free slot: a walk, but once per LAUNCH (which forks). */
    for (uint32_t j = 0; j < LAUNCHD_JOBS_CAP && slot < 0; j++) {
        slot = srv->jobs[j].live ? -1 : (int)j;
    }
    *id = want;
    *gen = req->job_id != 0U ? req->job_gen : 1U;
    return want != 0U && srv->njobs < srv->max_jobs ? slot : -1;
}

/* Whether the process behind control connection ci already has
 * --max-jobs-per-pid live jobs (logged then): its LAUNCH is refused BUSY
 * so that one process cannot take every job and, through them, every
 * request record. A job stays counted until its id is freed. */
static bool launchd_pid_full(const launchd_srv *srv, uint32_t ci)
{
    pid_t pid = srv->conns[ci].peer;
    uint32_t n = 0;
    for (uint32_t j = 0; j < LAUNCHD_JOBS_CAP; j++) {
        n += srv->jobs[j].live && srv->jobs[j].launcher_pid == pid ? 1U : 0U;
    }
    if (n < srv->max_jobs_per_pid) {
        return false;
    }
    pbx_peer_log("launchd",
                 "LAUNCH refused: pid %d has %u live jobs "
                 "(--max-jobs-per-pid %u)",
                 (int)pid, n, srv->max_jobs_per_pid);
    return true;
}

/* Sets the job's environment: its identity, its launchd connection and,
 * when one came with the LAUNCH, its scope at fd 4. */
void launchd_child_env(const launchd_job *j, bool scope)
{
    char v[96];
    (void)snprintf(v, sizeof(v), "%llu:%u", (unsigned long long)j->bind.job_id,
                   j->bind.job_gen);
    (void)setenv("PBX_JOB", v, 1);
    (void)setenv("PBX_LAUNCHD_FD", "3", 1);
    if (scope) {
        (void)setenv("PBX_SCOPE_FD", "4", 1);
    } else {
        (void)unsetenv("PBX_SCOPE_FD");
    }
    (void)snprintf(v, sizeof(v), "%.*s", (int)j->bind.entry_len,
                   (const char *)j->bind.entry);
    (void)setenv("PBX_ENTRY", v, 1);
    (void)snprintf(v, sizeof(v), "%llu", (unsigned long long)j->bind.session);
    (void)setenv("PBX_SESSION", v, 1);
    (void)snprintf(v, sizeof(v), "%u", j->bind.realm);
    (void)setenv("PBX_REALM", v, 1);
    if (j->bind.target_gen != 0U) {
        (void)snprintf(v, sizeof(v), "%llu:%u",
                       (unsigned long long)j->bind.target_pid,
                       j->bind.target_gen);
        (void)setenv("PBX_TARGET", v, 1);
    } else {
        (void)unsetenv("PBX_TARGET");
    }
}

/* The child side: stdio, the job connection and the scope (if any) at
 * 0..nsrc-1, every other descriptor closed (but a sandbox's two, which
 * close on exec), the environment set; then exec, sandboxed when sb
 * holds a ruleset. Never returns. */
static void launchd_child(const int *src, int nsrc, const launchd_job *j,
                          launchd_sandbox sb, char *const *argv, int slave)
{
    /* With a pty: a session of its own whose controlling terminal is the
     * slave, so the program never reaches the user's terminal (/dev/tty
     * names the pty). Otherwise a process group of its own. */
    if (slave < 0) {
        (void)setpgid(0, 0);
    } else if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) != 0) {
        _exit(127);
    }
    /* Decided once: a sandboxed job whose setup fails below is never run
     * unconfined. */
    bool sandboxed = sb.ruleset >= 0;
    /* Out of the way of 0..4 first, the sandbox's descriptors too. */
    int high[5];
    for (int i = 0; i < nsrc; i++) {
        high[i] = fcntl(src[i], F_DUPFD, 16);
    }
    if (sandboxed) {
        sb.prog = fcntl(sb.prog, F_DUPFD_CLOEXEC, 16);
        sb.ruleset = fcntl(sb.ruleset, F_DUPFD_CLOEXEC, 16);
        sb.notify = sb.notify >= 0 ? fcntl(sb.notify, F_DUPFD_CLOEXEC, 16) : -1;
    }
    for (int i = 0; i < nsrc; i++) {
        if (high[i] < 0 || dup2(high[i], i) < 0) {
            _exit(127);
        }
    }
    long max = sysconf(_SC_OPEN_MAX);
    for (int fd = nsrc; fd < LAUNCHD_CHILD_FDS_MAX && fd < max; fd++) {
        if (fd != sb.prog && fd != sb.ruleset && fd != sb.notify) {
            (void)close(fd);
        }
    }
    launchd_child_env(j, nsrc > 4);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    (void)sigaction(SIGPIPE, &sa, NULL);
    if (sandboxed) {
        if (sb.prog < 0 || sb.ruleset < 0) {
            _exit(127);
        }
        launchd_sandbox_exec(&sb, argv);
    }
    execvp(argv[0], argv);
    _exit(127);
}

/* Copies req's arguments into NUL-terminated strings for exec. */
static void launchd_argv(const pbx_peer_launch_req *req, char **argv)
{
    static char store[PBX_IPC_FRAME_BYTES_MAX + PBX_PEER_LAUNCH_ARGS_MAX];
    size_t off = 0;
    for (uint16_t i = 0; i < req->argc; i++) {
        argv[i] = store + off;
        memcpy(store + off, req->args[i], req->arg_lens[i]);
        off += req->arg_lens[i];
        store[off++] = '\0';
    }
    argv[req->argc] = NULL;
}

/* Binds job j to the first free staged process, if any. */
static void launchd_stage_take(launchd_srv *srv, launchd_job *j)
{
    j->stage = -1;
    for (uint32_t s = 0; s < srv->nstage; s++) {
        if (!srv->stage[s].used) {
            srv->stage[s].used = true;
            j->stage = (int)s;
            j->bind.target_pid = srv->stage[s].pid;
            j->bind.target_gen = srv->stage[s].gen;
            return;
        }
    }
    j->bind.target_pid = 0U;
    j->bind.target_gen = 0U;
}

/* Starts job j (prepared) with the stdio (and the scope, when req has
 * one) in fds, sandboxed when sb holds a ruleset; returns its job
 * connection slot, or -1 with nothing started. */
static int launchd_start(launchd_srv *srv, launchd_job *j, const int *fds,
                         const pbx_peer_launch_req *req,
                         const launchd_sandbox *sb)
{
    int ci = launchd_conn_alloc(srv);
    int sv[2];
    if (ci < 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) {
        return -1;
    }
    char *argv[PBX_PEER_LAUNCH_ARGS_MAX + 1U];
    launchd_argv(req, argv);
    int slave = -1;
    j->pty.master = j->pty.term_in = j->pty.term_out = -1;
    if (sb->ruleset >= 0 && launchd_pty_wanted(fds) &&
        launchd_pty_open(srv, &j->pty, fds, &slave) != 0) {
        (void)close(sv[0]);
        (void)close(sv[1]);
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        launchd_cwd_enter(req, fds);
        int src[5] = {fds[0], fds[1], fds[2], sv[1], req->scope ? fds[3] : -1};
        for (int i = 0; i < 3 && slave >= 0; i++) {
            src[i] = isatty(fds[i]) == 1 ? slave : fds[i];
        }
        launchd_child(src, req->scope ? 5 : 4, j, *sb, argv, slave);
    }
    (void)close(sv[1]);
    if (slave >= 0) {
        (void)close(slave);
    }
    if (pid < 0) {
        (void)close(sv[0]);
        launchd_pty_close(srv, &j->pty);
        return -1;
    }
    if (j->pty.master < 0) {
        /* A pty job makes its own session (its group): never moved. */
        (void)setpgid(pid, pid);
    }
    j->pid = pid;
    /* The job's real process: its install-mode BEGINs may target it. */
    j->bind.own_pid = (uint64_t)pid;
    launchd_conn *c = &srv->conns[ci];
    launchd_nonblock(sv[0]);
    c->fd = sv[0];
    c->job_conn = true;
    c->job = (uint32_t)(j - srv->jobs);
    c->calls = c->begins = 0;
    c->last_ms = srv->now;
    pbx_peer_track_init(&c->track);
    pbx_peer_track_bind(&c->track, j->bind.job_id, j->bind.job_gen);
    launchd_loop_watch_conn(srv, (uint32_t)ci);
    return ci;
}

/* Copies req's argument i into out[0..cap) as a string. */
static void launchd_arg(const pbx_peer_launch_req *req, uint16_t i, char *out,
                        size_t cap)
{
    (void)snprintf(out, cap, "%.*s", (int)req->arg_lens[i],
                   (const char *)req->args[i]);
}

/* The directory of launchd's control socket (the stack directory: no
 * profile may open it to a job), or NULL when there is none. */
static const char *launchd_stack_dir(const launchd_srv *srv)
{
    static char dir[PBX_IPC_FRAME_BYTES_MAX];
    const char *c = srv->control_path;
    const char *slash = c != NULL ? strrchr(c, '/') : NULL;
    if (c == NULL) {
        return NULL;
    }
    if (slash == NULL) {
        return ".";
    }
    (void)snprintf(dir, sizeof(dir), "%.*s", slash == c ? 1 : (int)(slash - c),
                   c);
    return dir;
}

/* The sandbox of a LAUNCH with the sandbox flag: the program's file,
 * the profile (when the LAUNCH names one) and, with the stage flag, the
 * file of the program the stage program runs (the argument after its
 * first "--"; none refuses the LAUNCH). */
static uint16_t launchd_launch_sandbox(const launchd_srv *srv,
                                       const pbx_peer_launch_req *req,
                                       launchd_sandbox *sb)
{
    static char prog[PBX_IPC_FRAME_BYTES_MAX];
    static char next[PBX_IPC_FRAME_BYTES_MAX];
    static char prof[PBX_PEER_LAUNCH_PROFILE_MAX + 1U];
    static char root[PBX_PEER_LAUNCH_DIR_MAX + 1U];
    launchd_arg(req, 0, prog, sizeof(prog));
    (void)snprintf(prof, sizeof(prof), "%.*s", (int)req->profile_len,
                   (const char *)req->profile);
    bool brokered = (req->flags & PBX_PEER_LAUNCH_BROKERED) != 0U;
    (void)snprintf(root, sizeof(root), "%.*s",
                   brokered ? (int)req->broker_root_len : 0,
                   brokered ? (const char *)req->broker_root : "");
    launchd_sandbox_want w = {prog, NULL, req->profile_len != 0U ? prof : NULL,
                              launchd_stack_dir(srv), brokered ? root : NULL};
    if ((req->flags & PBX_PEER_LAUNCH_STAGE) == 0U) {
        return launchd_sandbox_prepare(&w, sb);
    }
    for (uint16_t i = 1; i + 1U < req->argc; i++) {
        if (req->arg_lens[i] == 2U && memcmp(req->args[i], "--", 2) == 0) {
            launchd_arg(req, (uint16_t)(i + 1U), next, sizeof(next));
            w.next = next;
            return launchd_sandbox_prepare(&w, sb);
        }
    }
    pbx_peer_log("launchd",
                 "sandbox: %s: a stage program without a program "
                 "after \"--\"",
                 prog);
    return (uint16_t)PBX_E_IPC_BOUND;
}

/* Starts prepared job j (a sandboxed one after its sandbox was set up)
 * and stores its job connection in *jc; returns 0 or the LAUNCH's
 * refusal status (its staged process then freed again). */
static uint16_t launchd_launch_start(launchd_srv *srv, launchd_job *j,
                                     const int *fds,
                                     const pbx_peer_launch_req *req, int *jc)
{
    launchd_sandbox sb = {-1, -1, false, 0U, -1, 0};
    uint16_t st = 0U;
    j->broker_conn = -1;
    if ((req->flags & PBX_PEER_LAUNCH_SANDBOX) != 0U) {
        st = launchd_launch_sandbox(srv, req, &sb);
    }
    if (st == 0U && (req->flags & PBX_PEER_LAUNCH_BROKERED) != 0U) {
        st = launchd_broker_start(srv, j, req, fds, &sb);
    }
    if (st == 0U) {
        *jc = launchd_start(srv, j, fds, req, &sb);
        st = *jc < 0 ? PBX_PEER_E_INTERNAL : 0U;
    }
    launchd_broker_done(&sb);
    launchd_sandbox_release(&sb);
    if (st != 0U && j->broker_conn >= 0) {
        /* The broker ends when its listener never comes. */
        launchd_conn_close(srv, (uint32_t)j->broker_conn, NULL);
        j->broker_conn = -1;
    }
    if (st != 0U && j->stage >= 0) {
        srv->stage[j->stage].used = false;
    }
    return st;
}

void launchd_launch(launchd_srv *srv, uint32_t ci, pbx_peer_msg *m,
                    const pbx_peer_launch_frame *f)
{
    static pbx_peer_launch_req req;
    uint32_t seq = f->seq;
    pbx_err e = pbx_peer_launch_decode(f, &req);
    uint64_t id = 0;
    uint32_t gen = 0;
    int slot = -1;
    uint16_t st = e != PBX_OK ? (uint16_t)e : 0U;
    if (st == 0U && srv->conns[ci].job_conn) {
        st = PBX_PEER_E_NOT_YOURS;
    }
    if (st == 0U) {
        st = launchd_cwd_check(&req, m->fds);
    }
    if (st == 0U && launchd_pid_full(srv, ci)) {
        st = PBX_PEER_E_BUSY;
    }
    if (st == 0U) {
        slot = launchd_job_slot(srv, &req, &id, &gen);
        st = slot < 0 ? PBX_PEER_E_BUSY : 0U;
    }
    launchd_job *j = slot >= 0 ? &srv->jobs[slot] : NULL;
    int jc = -1;
    if (j != NULL) {
        memset(j, 0, sizeof(*j));
        j->pty.master = j->pty.term_in = j->pty.term_out = -1;
        j->bind.job_id = id;
        j->bind.job_gen = gen;
        j->bind.session = req.session;
        j->bind.realm = (uint32_t)req.realm;
        j->bind.entry_len = req.entry_len;
        memcpy(j->bind.entry, req.entry, req.entry_len);
        launchd_budget_init(srv, j,
                            (req.flags & PBX_PEER_LAUNCH_SANDBOX) != 0U);
        launchd_stage_take(srv, j);
        st = launchd_launch_start(srv, j, m->fds, &req, &jc);
    }
    pbx_peer_io_close_all(m->fds, m->nfds);
    if (st != 0U) {
        launchd_launch_reply(srv, ci, seq, st, NULL);
        return;
    }
    j->live = true;
    j->conn = jc;
    j->launcher = ci;
    j->launcher_pid = srv->conns[ci].peer;
    j->launcher_gen = srv->conns[ci].gen;
    j->launch_seq = seq;
    launchd_job_indexed(srv, (uint32_t)slot);
    srv->njobs++;
    /* An accepted LAUNCH is the one thing (with EXPIRE) that shows a
     * control connection in use. */
    srv->conns[ci].last_ms = srv->now;
    pbx_peer_launch_reply rep = {id, gen, (uint32_t)j->pid, j->bind.target_pid,
                                 j->bind.target_gen};
    pbx_peer_log("launchd",
                 "launched job %llu.%u pid %d entry %s target "
                 "%llu:%u session %llu realm %u%s%s",
                 (unsigned long long)id, gen, (int)j->pid, req.entry,
                 (unsigned long long)j->bind.target_pid, j->bind.target_gen,
                 (unsigned long long)j->bind.session, j->bind.realm,
                 (req.flags & PBX_PEER_LAUNCH_SANDBOX) != 0U ? " sandboxed"
                                                             : "",
                 req.scope ? " with a scope" : "");
    launchd_launch_reply(srv, ci, seq, 0, &rep);
}

/* Sends job j's EXIT (once) to its launcher, if that is still there. */
static void launchd_job_exit(launchd_srv *srv, launchd_job *j)
{
    if (j->exit_sent) {
        return;
    }
    j->exit_sent = true;
    launchd_job_index_exit(srv, (uint32_t)(j - srv->jobs));
    if (launchd_conn_live(srv, j->launcher, j->launcher_gen)) {
        /* Its launcher may be idle from now on. */
        launchd_conn_arm(srv, j->launcher);
        uint8_t out[PBX_IPC_HEADER_BYTES + PBX_PEER_EXIT_BYTES];
        size_t n = 0;
        if (pbx_peer_exit_encode((uint32_t)j->ws, j->launch_seq, out,
                                 sizeof(out), &n) == PBX_OK) {
            (void)launchd_reply(srv, j->launcher, out, n, j->launch_seq, -1);
        }
    }
}

/* The last of job j: EXIT to its launcher (unless it went already), its
 * staged process and its id freed, once powerboxd answered the job's
 * EXPIRE (or its call was forgotten, or there is no broker). So no EXPIRE
 * of the old job can reach one launched again under the same id. */
void launchd_job_finish(launchd_srv *srv, uint32_t ref, const char *expire)
{
    uint32_t ji = ref - LAUNCHD_JOB_REF(0);
    if (ref < LAUNCHD_JOB_REF(0) || ji >= LAUNCHD_JOBS_CAP ||
        !srv->jobs[ji].live || !srv->jobs[ji].ending) {
        return;
    }
    launchd_job *j = &srv->jobs[ji];
    if (j->pty.master >= 0) {
        /* Its output is still on the way: finished when it is out. */
        j->finish_wanted = true;
        return;
    }
    pbx_peer_log("launchd", "job %llu.%u ended: EXPIRE %s",
                 (unsigned long long)j->bind.job_id, j->bind.job_gen, expire);
    launchd_job_exit(srv, j);
    if (j->stage >= 0) {
        srv->stage[j->stage].used = false;
    }
    launchd_job_index_drop(srv, ji);
    j->live = false;
    j->ending = false;
    srv->njobs--;
}

/* Sends the EXPIRE of the whole job ji over the broker, if it can go now
 * (a full broker or call table: the jobs' timer tries again). */
static void launchd_job_expire(launchd_srv *srv, uint32_t ji)
{
    launchd_job *j = &srv->jobs[ji];
    pbx_ipc_expire ex = {PBX_IPC_EXPIRE_JOB, j->bind.job_gen, j->bind.job_id,
                         0};
    uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_IPC_EXPIRE_BYTES];
    size_t n = 0;
    pbx_ipc_id zero = {0, 0};
    if (srv->broker < 0 ||
        pbx_ipc_expire_encode(&ex, buf, sizeof(buf), &n) != PBX_OK) {
        launchd_job_finish(srv, LAUNCHD_JOB_REF(ji), "not sent: no broker");
        return;
    }
    j->expire_out = launchd_own_call(srv, LAUNCHD_CALL_EXPIRE, buf, n,
                                     LAUNCHD_JOB_REF(ji), zero);
}

/* Job j's process exited with wait status ws: its connection closed
 * (open requests cancelled), EXPIRE of the whole job sent to powerboxd;
 * launchd_job_finish follows when that is answered. */
static void launchd_job_end(launchd_srv *srv, uint32_t ji, int ws)
{
    launchd_job *j = &srv->jobs[ji];
    pbx_peer_log("launchd", "job %llu.%u pid %d exited (wait status 0x%x)",
                 (unsigned long long)j->bind.job_id, j->bind.job_gen,
                 (int)j->pid, (unsigned)ws);
    launchd_job_index_ended(srv, ji);
    j->ending = true;
    j->ws = ws;
    j->ended_ms = srv->now;
    if (j->conn >= 0) {
        launchd_conn_close(srv, (uint32_t)j->conn, NULL);
        j->conn = -1;
    }
    if (j->broker_conn >= 0) {
        launchd_conn_close(srv, (uint32_t)j->broker_conn, NULL);
        j->broker_conn = -1;
    }
    launchd_job_expire(srv, ji);
    launchd_job_arm(srv, ji);
}

void launchd_job_timer(launchd_srv *srv, uint32_t ji)
{
    launchd_job *j = &srv->jobs[ji];
    if (!j->live || !j->ending) {
        return;
    }
    if (srv->broker < 0) {
        /* No powerboxd to answer (or to hold the job's grants). */
        launchd_job_finish(srv, LAUNCHD_JOB_REF(ji), "not answered: no broker");
        return;
    }
    if (!j->expire_out) {
        launchd_job_expire(srv, ji);
    }
    if (j->live && !j->exit_sent && srv->now >= j->ended_ms + srv->call_ms) {
        pbx_peer_log("launchd",
                     "job %llu.%u: EXPIRE unanswered after %u ms; EXIT "
                     "sent, the job id kept until it is answered",
                     (unsigned long long)j->bind.job_id, j->bind.job_gen,
                     srv->call_ms);
        launchd_job_exit(srv, j);
    }
}

void launchd_job_arm(launchd_srv *srv, uint32_t ji)
{
    const launchd_job *j = &srv->jobs[ji];
    uint64_t due = UINT64_MAX;
    if (j->live && j->ending) {
        if (srv->broker < 0 || !j->expire_out) {
            /* Its EXPIRE could not go (or no broker): tried again soon. */
            due = srv->now + (uint64_t)LAUNCHD_TICK_MS;
        } else if (!j->exit_sent) {
            due = j->ended_ms + srv->call_ms;
        }
    }
    launchd_timer_set(&srv->timer, LAUNCHD_T_JOB + ji, due);
}

bool launchd_reap(launchd_srv *srv)
{
    for (int i = 0; i < 64; i++) {
        int ws = 0;
        pid_t pid = waitpid(-1, &ws, WNOHANG);
        if (pid <= 0) {
            return true;
        }
        /* The pid index holds exactly the running jobs. */
        int ji = launchd_job_by_pid(srv, pid);
        if (ji >= 0) {
            launchd_job_end(srv, (uint32_t)ji, ws);
        }
    }
    return false;
}

void launchd_jobs_hangup(launchd_srv *srv, uint32_t ci)
{
    for (uint32_t j = 0; j < LAUNCHD_JOBS_CAP; j++) {
        launchd_job *job = &srv->jobs[j];
        /* The connection's generation was already bumped on close. An
         * ending job's pid was reaped and may be another's by now. */
        if (job->live && !job->ending && job->launcher == ci &&
            job->launcher_gen + 1U == srv->conns[ci].gen) {
            pbx_peer_log("launchd",
                         "launcher of job %llu.%u hung up: process "
                         "group %d and pid %d killed",
                         (unsigned long long)job->bind.job_id,
                         job->bind.job_gen, (int)job->pid, (int)job->pid);
            /* The group, and the pid itself in case the job moved to
             * another group. */
            (void)kill(-job->pid, SIGKILL);
            (void)kill(job->pid, SIGKILL);
        }
    }
}
