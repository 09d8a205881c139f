/*
 * launchd_broker.c: the open broker of a job launched with
 * PBX_PEER_LAUNCH_BROKERED (docs/HOST.md, "Brokered opens"). Before the
 * job's fork launchd starts pbx-broker (next to its own file) outside the
 * sandbox with:
 *   0   /dev/null; 1 and 2 the job's stderr (its refusals are the job's)
 *       until the listener comes: the job's child sends its own stderr
 *       with it (the pty slave under launchd's relay), which becomes the
 *       broker's 1 and 2, so the relay holds the broker's lines with the
 *       job's output while a prompt shows;
 *   3   a second job connection, bound to the same job as the job's own
 *       (every BEGIN on it is the job's, so the object arrives as the
 *       job's alias; launchd's relay treats it as any job connection);
 *   4   the job's scope, when the LAUNCH brought one;
 *   5   the socket the job's child sends its open family's seccomp
 *       listener on (after Landlock, before the walls' filter);
 * and the job's claims in the environment; --mount names vfsd's FUSE
 * mount when launchd was given --fuse-dir. The broker exits when the
 * job's last thread does (its listener hangs up); launchd reaps it as any
 * child and closes its connection with the job's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* The broker's descriptors (see the top of this file). */
#define LB_FD_CONN   3
#define LB_FD_SCOPE  4
#define LB_FD_LISTEN 5
/* The broker program's name, next to launchd's own file. */
#define LB_PROG "pbx-broker"
/* The longest path handled. */
#define LB_PATH_MAX 4096U

/* Whether the kernel has the user-notification action; false after a
 * line saying why. */
static bool lb_can_notify(void)
{
    uint32_t act = SECCOMP_RET_USER_NOTIF;
    if (syscall(__NR_seccomp, SECCOMP_GET_ACTION_AVAIL, 0U, &act) == 0) {
        return true;
    }
    pbx_peer_log("launchd", "brokered opens: seccomp user notification: %s",
                 strerror(errno));
    return false;
}

/* pbx-broker's path (next to this program) into out; false when none. */
static bool lb_prog(char *out, size_t cap)
{
    ssize_t n = readlink("/proc/self/exe", out, cap - 1U);
    out[n > 0 ? (size_t)n : 0U] = '\0';
    char *slash = strrchr(out, '/');
    if (slash == NULL || (size_t)(slash - out) + sizeof("/" LB_PROG) > cap) {
        return false;
    }
    memcpy(slash, "/" LB_PROG, sizeof("/" LB_PROG));
    return access(out, X_OK) == 0;
}

/* The broker's side after its fork: descriptors in place, the job's
 * environment, exec. Never returns. */
static void lb_child(const launchd_job *j, const int *src, bool scope,
                     char *const *argv)
{
    (void)setpgid(0, 0);
    int high[6];
    for (int i = 0; i < 6; i++) {
        high[i] = src[i] >= 0 ? fcntl(src[i], F_DUPFD, 16) : -1;
    }
    for (int i = 0; i < 6; i++) {
        if (high[i] >= 0 && dup2(high[i], i) < 0) {
            _exit(127);
        }
    }
    (void)syscall(__NR_close_range, 6U, ~0U, 0U);
    launchd_child_env(j, scope);
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    (void)sigaction(SIGPIPE, &sa, NULL);
    (void)execv(argv[0], argv);
    _exit(127);
}

/* Copies len bytes of p into a NUL-terminated out (cap LB_PATH_MAX). */
static void lb_str(char *out, const uint8_t *p, uint16_t len)
{
    size_t n = len < LB_PATH_MAX ? len : LB_PATH_MAX - 1U;
    memcpy(out, p, n);
    out[n] = '\0';
}

/* Registers launchd's end jc of the broker's job connection for job j;
 * false when no slot is free. */
static bool lb_conn(launchd_srv *srv, launchd_job *j, int jc)
{
    int ci = launchd_conn_alloc(srv);
    if (ci < 0) {
        return false;
    }
    launchd_conn *c = &srv->conns[ci];
    launchd_nonblock(jc);
    c->fd = jc;
    c->job_conn = true;
    c->job = (uint32_t)(j - srv->jobs);
    c->calls = c->begins = 0;
    c->last_ms = srv->now;
    pbx_peer_track_init(&c->track);
    pbx_peer_track_bind(&c->track, j->bind.job_id, j->bind.job_gen);
    launchd_loop_watch_conn(srv, (uint32_t)ci);
    j->broker_conn = ci;
    return true;
}

uint16_t launchd_broker_start(launchd_srv *srv, launchd_job *j,
                              const pbx_peer_launch_req *req, const int *fds,
                              launchd_sandbox *sb)
{
    static char prog[LB_PATH_MAX];
    static char scope[LB_PATH_MAX];
    static char root[LB_PATH_MAX];
    static char prof[LB_PATH_MAX];
    if (!lb_can_notify()) {
        return (uint16_t)PBX_E_PEER_NO_SECCOMP;
    }
    if (!lb_prog(prog, sizeof(prog))) {
        pbx_peer_log("launchd", "brokered opens: %s: %s", prog,
                     strerror(errno));
        return PBX_PEER_E_INTERNAL;
    }
    lb_str(scope, req->broker_scope, req->broker_scope_len);
    lb_str(root, req->broker_root, req->broker_root_len);
    lb_str(prof, req->profile, req->profile_len);
    int jc[2] = {-1, -1};
    int lp[2] = {-1, -1};
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, jc) != 0 ||
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, lp) != 0 ||
        !lb_conn(srv, j, jc[0])) {
        int all[4] = {jc[0], jc[1], lp[0], lp[1]};
        for (int i = 0; i < 4; i++) {
            if (all[i] >= 0) {
                (void)close(all[i]);
            }
        }
        return PBX_PEER_E_BUSY;
    }
    pid_t pid = fork();
    if (pid == 0) {
        bool routine = (req->flags & PBX_PEER_LAUNCH_ROUTINE_OPENS) != 0U;
        char *argv[16] = {prog,
                          "--listener-sock",
                          "5",
                          "--scope",
                          scope,
                          "--root",
                          root,
                          "--urgency",
                          routine ? "routine" : "exceptional",
                          NULL};
        size_t n = 9U;
        /* vfsd's FUSE mount: a path inside or above it is refused, and no
         * open is asked while FUSE is not mounted there. */
        if (srv->fuse_dir != NULL) {
            argv[n++] = "--mount";
            argv[n++] = (char *)srv->fuse_dir;
        }
        /* The job's profile file: its paths go on as the program's own
         * opens, as the system's. */
        if (prof[0] != '\0') {
            argv[n++] = "--profile";
            argv[n++] = prof;
        }
        argv[n] = NULL;
        int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
        int src[6] = {null, fds[2], fds[2], jc[1], req->scope ? fds[3] : -1,
                      lp[0]};
        lb_child(j, src, req->scope, argv);
    }
    (void)close(jc[1]);
    (void)close(lp[0]);
    if (pid < 0) {
        (void)close(lp[1]);
        return PBX_PEER_E_INTERNAL;
    }
    pbx_peer_log("launchd",
                 "job %llu.%u: open broker pid %d, scope %s under root %s",
                 (unsigned long long)j->bind.job_id, j->bind.job_gen, (int)pid,
                 scope, root);
    sb->notify = lp[1];
    sb->broker_pid = pid;
    return 0U;
}

void launchd_broker_done(launchd_sandbox *sb)
{
    if (sb->notify >= 0) {
        (void)close(sb->notify);
    }
    sb->notify = -1;
}

void launchd_job_conn_gone(launchd_srv *srv, uint32_t ji, uint32_t ci)
{
    launchd_job *j = &srv->jobs[ji];
    if (j->conn == (int)ci) {
        j->conn = -1;
    }
    if (j->broker_conn == (int)ci) {
        j->broker_conn = -1;
    }
}
