/*
 * launchd_run.c: pbx-launchd run, a program's way to start another as a
 * job: one LAUNCH with this process's stdio on launchd's control socket
 * (sandboxed with --sandbox: docs/HOST.md, "Sandboxed programs"), then
 * the wait for the job's EXIT, whose status becomes this process's.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "peers/common/pbx_peer_profile_file.h"
#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* How long run waits, by default, for launchd to connect and answer the
 * LAUNCH (--wait-ms changes it), and the longest wait --wait-ms takes (one
 * hour: a launcher that waits longer for an answer is better told no). */
#define LAUNCHD_RUN_WAIT_MS     10000
#define LAUNCHD_RUN_WAIT_MS_MAX 3600000
/* What run exits with when the job never ran or its end is unknown. */
#define LAUNCHD_RUN_REFUSED 125

static pbx_peer_msg g_run;

/* Parses one numeric option of run (--session, --realm: 1..max) into
 * *out; false when v is not such a number. */
static bool launchd_run_num(const char *v, uint64_t max, uint64_t *out)
{
    return pbx_peer_parse_u64(v, max, out) && *out != 0U;
}

/* run's options that are not part of the LAUNCH: the control socket's
 * path, the program entry and profile file named (NULL: none), and how
 * long to wait for launchd's answer. The strings are argv's. */
typedef struct {
    const char *path;
    const char *entry;
    const char *profile;
    int wait_ms;
} launchd_run_how;

/* Parses --wait-ms's value v (1..LAUNCHD_RUN_WAIT_MS_MAX) into *how;
 * false, after a line naming the range, when it is not such a number. */
static bool launchd_run_wait(const char *v, launchd_run_how *how)
{
    uint64_t ms = 0;
    if (!launchd_run_num(v, LAUNCHD_RUN_WAIT_MS_MAX, &ms)) {
        pbx_peer_log("launchd",
                     "run: --wait-ms %s: not a number of ms in "
                     "1..%d",
                     v, LAUNCHD_RUN_WAIT_MS_MAX);
        return false;
    }
    how->wait_ms = (int)ms;
    return true;
}

/* Parses one option k (with its value v, when it takes one) of run into
 * *how or *req; returns how many words it took (1 or 2), or 0 when it is
 * not a valid option. */
static int launchd_run_opt(const char *k, const char *v, launchd_run_how *how,
                           pbx_peer_launch_req *req)
{
    uint64_t a = 0;
    uint64_t b = 0;
    if (strcmp(k, "--sandbox") == 0) {
        req->flags |= PBX_PEER_LAUNCH_SANDBOX;
        return 1;
    }
    if (v == NULL) {
        return 0;
    }
    if (strcmp(k, "--control") == 0) {
        how->path = v;
    } else if (strcmp(k, "--profile") == 0) {
        how->profile = v;
    } else if (strcmp(k, "--wait-ms") == 0) {
        return launchd_run_wait(v, how) ? 2 : 0;
    } else if (strcmp(k, "--job") == 0 &&
               pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &a, &b) &&
               b != 0U) {
        req->job_id = a;
        req->job_gen = (uint32_t)b;
    } else if (strcmp(k, "--entry") == 0) {
        how->entry = v;
    } else if (!(strcmp(k, "--session") == 0 &&
                 launchd_run_num(v, UINT64_MAX, &req->session)) &&
               !(strcmp(k, "--realm") == 0 &&
                 launchd_run_num(v, UINT32_MAX, &req->realm))) {
        return 0;
    }
    return 2;
}

/* --profile FILE (only with --sandbox): checked here for a message with
 * its line, then named in the LAUNCH; the stack directory is the control
 * socket's. True when there is none or it was taken. */
static bool launchd_run_profile(const char *file, const char *control,
                                pbx_peer_launch_req *req)
{
    static char abs[PBX_PEER_LAUNCH_PROFILE_MAX + 1U];
    static char stack[PBX_PEER_LAUNCH_PROFILE_MAX + 1U];
    if (file == NULL) {
        return true;
    }
    if ((req->flags & PBX_PEER_LAUNCH_SANDBOX) == 0U) {
        pbx_peer_log("launchd", "run: --profile needs --sandbox");
        return false;
    }
    const char *slash = strrchr(control, '/');
    (void)snprintf(stack, sizeof(stack), "%.*s",
                   slash != NULL ? (int)(slash - control) : 1,
                   slash != NULL ? control : ".");
    return pbx_peer_profile_file_take("pbx-launchd run", file,
                                      stack[0] != '\0' ? stack : "/", abs,
                                      sizeof(abs), req);
}

/* Parses run's options up to "--" into *how (the wait defaults to
 * LAUNCHD_RUN_WAIT_MS) and *req (session and realm default 1); returns
 * the index of PROG, or -1 on a usage error. */
static int launchd_run_args(int argc, char **argv, launchd_run_how *how,
                            pbx_peer_launch_req *req)
{
    int i = 2;
    how->wait_ms = LAUNCHD_RUN_WAIT_MS;
    req->session = 1;
    req->realm = 1;
    while (i < argc && strcmp(argv[i], "--") != 0) {
        int took = launchd_run_opt(argv[i], i + 1 < argc ? argv[i + 1] : NULL,
                                   how, req);
        if (took == 0) {
            return -1;
        }
        i += took;
    }
    if (i >= argc || i + 1 >= argc || how->path == NULL ||
        !launchd_run_profile(how->profile, how->path, req)) {
        return -1;
    }
    const char *entry = how->entry;
    if (entry == NULL) {
        const char *slash = strrchr(argv[i + 1], '/');
        entry = slash != NULL ? slash + 1 : argv[i + 1];
    }
    size_t n = strlen(entry);
    if (n == 0U || n > PBX_PEER_LAUNCH_ENTRY_MAX) {
        return -1;
    }
    memcpy(req->entry, entry, n);
    req->entry[n] = '\0';
    req->entry_len = (uint16_t)n;
    return i + 1;
}

/* Fills req's arguments from argv[first..argc); false when too many. */
static bool launchd_run_argv(int argc, char **argv, int first,
                             pbx_peer_launch_req *req)
{
    if (argc - first > (int)PBX_PEER_LAUNCH_ARGS_MAX) {
        return false;
    }
    req->argc = (uint16_t)(argc - first);
    for (int i = first; i < argc; i++) {
        size_t n = strlen(argv[i]);
        if (n == 0U || n > UINT16_MAX) {
            return false;
        }
        req->args[i - first] = (const uint8_t *)argv[i];
        req->arg_lens[i - first] = (uint16_t)n;
    }
    return true;
}

/* Waits for one local-wire frame on fd into *f; wait_ms < 0: no limit.
 * Returns false (with a line saying why) when none came. */
static bool launchd_run_recv(int fd, int wait_ms, pbx_peer_launch_frame *f)
{
    if (!launchd_wait_readable(fd, wait_ms)) {
        pbx_peer_log("launchd", "run: no answer from launchd within %d ms",
                     wait_ms);
        return false;
    }
    int r = launchd_recv(fd, &g_run);
    if (r != 0) {
        pbx_peer_log("launchd", "run: launchd closed the control connection%s",
                     r == 1 ? "" : " (receive failed)");
        return false;
    }
    pbx_peer_io_close_all(g_run.fds, g_run.nfds);
    pbx_err e = pbx_peer_launch_peek(g_run.buf, g_run.len, 0, f);
    if (e != PBX_OK) {
        pbx_peer_log("launchd", "run: bad frame from launchd: %s",
                     pbx_err_text(e));
        return false;
    }
    return true;
}

/* Sends the LAUNCH to launchd's control socket at path and reads its
 * reply, waiting at most wait_ms for each; returns the connection, or -1
 * after saying why. */
static int launchd_run_launch(const char *path, int wait_ms,
                              const pbx_peer_launch_req *req)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_err e = pbx_peer_launch_encode(req, buf, sizeof(buf), &n);
    if (e != PBX_OK) {
        pbx_peer_log("launchd", "run: LAUNCH not encodable: %s",
                     pbx_err_text(e));
        return -1;
    }
    (void)pbx_ipc_frame_set_seq(buf, n, 1U);
    int fd = launchd_connect(path, wait_ms);
    int stdio[3] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO};
    if (fd < 0 || launchd_send_fds(fd, buf, n, stdio, 3) != 0) {
        pbx_peer_log("launchd", "run: launchd at %s: %s", path,
                     strerror(errno));
        return -1;
    }
    pbx_peer_launch_frame f;
    pbx_peer_launch_reply rep;
    if (!launchd_run_recv(fd, wait_ms, &f)) {
        return -1;
    }
    e = pbx_peer_launch_reply_decode(&f, &rep);
    if (e != PBX_OK) {
        pbx_peer_log("launchd", "run: launch refused: %s (0x%04x)",
                     e == PBX_E_IPC_STATUS ? pbx_peer_status_text(f.status)
                                           : pbx_err_text(e),
                     e == PBX_E_IPC_STATUS ? f.status : (unsigned)e);
        return -1;
    }
    pbx_peer_log("launchd", "job %llu:%u pid %u",
                 (unsigned long long)rep.job_id, rep.job_gen, rep.pid);
    return fd;
}

int launchd_run(int argc, char **argv)
{
    static pbx_peer_launch_req req;
    launchd_run_how how = {NULL, NULL, NULL, LAUNCHD_RUN_WAIT_MS};
    int first = launchd_run_args(argc, argv, &how, &req);
    if (first < 0 || !launchd_run_argv(argc, argv, first, &req)) {
        pbx_peer_log("launchd",
                     "usage: pbx-launchd run --control PATH "
                     "[--sandbox [--profile FILE]] [--job ID:GEN] "
                     "[--entry NAME] "
                     "[--session N] [--realm N] [--wait-ms N] "
                     "-- PROG [ARG...] (session and realm "
                     "nonzero, default 1; --wait-ms 1..%d, "
                     "default %d)",
                     LAUNCHD_RUN_WAIT_MS_MAX, LAUNCHD_RUN_WAIT_MS);
        return 2;
    }
    int fd = launchd_run_launch(how.path, how.wait_ms, &req);
    if (fd < 0) {
        return LAUNCHD_RUN_REFUSED;
    }
    /* Only the EXIT frame is expected from here on; it comes whenever
     * the job ends. */
    pbx_peer_launch_frame f;
    uint32_t ws = 0;
    if (!launchd_run_recv(fd, -1, &f) ||
        pbx_peer_exit_decode(&f, &ws) != PBX_OK) {
        pbx_peer_log("launchd", "run: the job's end is unknown");
        return LAUNCHD_RUN_REFUSED;
    }
    int st = (int)ws;
    if (WIFEXITED(st)) {
        return WEXITSTATUS(st);
    }
    return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : LAUNCHD_RUN_REFUSED;
}
