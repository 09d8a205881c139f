/*
 * pbx_run.c: `pbx run`, a program started as a launchd job of the
 * running stack (docs/HOST.md, "launchd" and "Sandboxed programs").
 *
 * One LAUNCH on launchd's control socket (DIR/launchd.sock) with this
 * process's stdin, stdout and stderr and, when vfsd's scope socket
 * (DIR/scope.sock) gives one, a scope the job gets as descriptor 4
 * (PBX_SCOPE_FD=4), and this process's working directory (the job runs
 * there, PBX_PEER_LAUNCH_CWD); then the wait for the job's EXIT, whose status
 * becomes this process's. PROG is resolved here, against this process's
 * directory and PATH, so launchd runs the file the user named.
 *
 * With --grant (install mode, docs/HOST.md "Install mode on the host")
 * the job's first program is pbx-stage (next to this binary), which
 * stages itself at procd (DIR/stage.sock), asks for each grant in
 * install mode, puts the objects at descriptors 5, 6, ... and executes
 * PROG; the LAUNCH then carries the stage flag, so a sandboxed job may
 * execute both static files.
 */
/* O_PATH (the working directory handed to launchd) is a GNU name. */
#define _GNU_SOURCE
#include "tools/pbx/pbx_tool.h"

#include "peers/common/pbx_peer_io.h"
#include "peers/common/pbx_peer_profile_file.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* What run exits with when the job never ran or its end is unknown (the
 * job's own statuses are passed through, so this cannot be 1). */
#define PBX_RUN_REFUSED 125
/* How long run waits for launchd's answer to the LAUNCH. */
#define PBX_RUN_WAIT_MS 10000
/* How long run waits for vfsd's scope socket to hand out a scope. */
#define PBX_RUN_SCOPE_MS 5000
/* The most PATH entries searched for PROG. */
#define PBX_RUN_PATH_DIRS 64U
/* The most --grant options (each takes two of LAUNCH's arguments). */
#define PBX_RUN_GRANTS_MAX 8U
/* pbx-stage's own arguments besides the grants: its path, --stage-sock
 * PATH, --lifetime LT and "--". */
#define PBX_RUN_STAGE_ARGS 6U

/* What the command line asked for. */
typedef struct pbx_run_opts {
    const char *control;
    const char *entry;
    bool quiet;
    int first; /* argv index of PROG */
    const char *lifetime;
    uint32_t ngrants;
    const char *grants[PBX_RUN_GRANTS_MAX]; /* OP:SELECTOR */
    const char *profile;                    /* --profile FILE, or NULL */
    const char *scope; /* --scope DIR: brokered opens below DIR */
    bool no_broker;    /* --no-broker: the kernel refuses every open */
    bool routine;      /* --opens routine */
} pbx_run_opts;

void pbx_tool_run_usage(FILE *fp)
{
    (void)fputs(
        "  pbx run [--sandbox [--profile FILE] [--scope DIR | --no-broker]\n"
        "          [--opens routine|exceptional]] [--grant OP:SELECTOR]...\n"
        "          [--lifetime LT]\n"
        "          [--job ID:GEN] [--entry NAME] [--session N] [--realm N]\n"
        "          [--control PATH] [--quiet] -- PROG [ARG...]\n"
        "      run PROG as a job of the stack's launchd (DIR/launchd.sock)\n"
        "      with this terminal, a scope at fd 4 (PBX_SCOPE_FD) from\n"
        "      DIR/scope.sock when it gives one, and exit with PROG's\n"
        "      status (128+N for signal N; 125 when it was not run).\n"
        "      --sandbox: under Landlock and seccomp with the system\n"
        "      profile (read and execute /usr and the libraries, a few\n"
        "      files of /etc, three devices, /proc/self; nothing of yours)\n"
        "      and no new privileges; a kernel without Landlock refuses\n"
        "      (never run unconfined). --profile FILE: lines '+r PATH',\n"
        "      '+rx PATH', '-PATH' change that profile (pbx(1)).\n"
        "      --grant OP:SELECTOR (up to 8; OP read, write, list, ...):\n"
        "      asked for in install mode before PROG runs; PROG starts with\n"
        "      the objects at fds 5, 6, ... in order; one not approved:\n"
        "      PROG is not run (exit 1, one line naming it). --lifetime:\n"
        "      the grants' lifetime (default job; one-shot, invocation).\n"
        "      Under --sandbox PROG's opens of files below the stack's\n"
        "      root (DIR/root.path) are brokered: each asks, as the job,\n"
        "      for exactly that file (docs/HOST.md, \"Brokered opens\").\n"
        "      --scope DIR narrows that to below DIR (\"root\": the whole\n"
        "      root); --no-broker: none is, the kernel refuses them;\n"
        "      --opens routine|exceptional: their urgency (default\n"
        "      exceptional: the default policies prompt).\n",
        fp);
}

/* Parses one numeric option value (1..max) into *out. */
static bool pbx_run_num(const char *v, uint64_t max, uint64_t *out)
{
    return pbx_peer_parse_u64(v, max, out) && *out != 0U;
}

/* Takes --grant OP:SELECTOR's value v into o; returns 2, or -2 after one
 * line on stderr naming the bad value, what is wrong and the valid
 * operations (so the caller prints nothing more). */
static int pbx_run_grant(pbx_run_opts *o, const char *v)
{
    const char *colon = v != NULL ? strchr(v, ':') : NULL;
    char op[32];
    size_t n = colon != NULL ? (size_t)(colon - v) : 0U;
    const char *why = NULL;
    uint32_t x = 0;
    if (v == NULL) {
        why = "missing value";
    } else if (o->ngrants >= PBX_RUN_GRANTS_MAX) {
        why = "too many grants (at most 8)";
    } else if (colon == NULL || n == 0U || colon[1] == '\0') {
        why = "OP or SELECTOR missing";
    } else {
        (void)snprintf(op, sizeof(op), "%.*s", (int)n, v);
        if (n >= sizeof(op) ||
            !pbx_peer_name_parse(PBX_PEER_NAMES_OPERATION, op, &x)) {
            why = "unknown operation";
        }
    }
    if (why != NULL) {
        char ops[256];
        pbx_tool_names(PBX_PEER_NAMES_OPERATION, ops, sizeof(ops));
        (void)fprintf(stderr,
                      "pbx run: bad --grant '%s': %s (want OP:SELECTOR, e.g. "
                      "read:docs/a.txt; OP one of: %s)\n",
                      v != NULL ? v : "", why, ops);
        return -2;
    }
    o->grants[o->ngrants++] = v;
    return 2;
}

/* Parses option k with value v (NULL at the end of argv) into *o and
 * *req; returns the words taken (1 or 2), 0 for an unknown option, -1
 * for a bad or missing value, -2 for one already reported. */
static int pbx_run_opt(const char *k, const char *v, pbx_run_opts *o,
                       pbx_peer_launch_req *req)
{
    uint64_t a = 0;
    uint64_t b = 0;
    if (strcmp(k, "--sandbox") == 0) {
        req->flags |= PBX_PEER_LAUNCH_SANDBOX;
        return 1;
    }
    if (strcmp(k, "--profile") == 0) {
        o->profile = v;
        return v != NULL ? 2 : -1;
    }
    if (strcmp(k, "--quiet") == 0) {
        o->quiet = true;
        return 1;
    }
    uint32_t x = 0;
    if (strcmp(k, "--grant") == 0) {
        return pbx_run_grant(o, v);
    }
    if (strcmp(k, "--opens") == 0) {
        bool routine = v != NULL && strcmp(v, "routine") == 0;
        o->routine = routine;
        return routine || (v != NULL && strcmp(v, "exceptional") == 0) ? 2 : -1;
    }
    if (strcmp(k, "--scope") == 0) {
        o->scope = v;
        return v != NULL && v[0] != '\0' ? 2 : -1;
    }
    if (strcmp(k, "--no-broker") == 0) {
        o->no_broker = true;
        return 1;
    }
    if (strcmp(k, "--lifetime") == 0) {
        o->lifetime = v;
        return v != NULL && pbx_peer_name_parse(PBX_PEER_NAMES_LIFETIME, v, &x)
                   ? 2
                   : -1;
    }
    bool known = strcmp(k, "--job") == 0 || strcmp(k, "--entry") == 0 ||
                 strcmp(k, "--session") == 0 || strcmp(k, "--realm") == 0 ||
                 strcmp(k, "--control") == 0 || strcmp(k, "--dir") == 0;
    if (!known) {
        return 0;
    }
    bool ok = v != NULL;
    if (ok && strcmp(k, "--job") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &a, &b) && b != 0U;
        req->job_id = a;
        req->job_gen = (uint32_t)b;
    } else if (ok && strcmp(k, "--session") == 0) {
        ok = pbx_run_num(v, UINT64_MAX, &req->session);
    } else if (ok && strcmp(k, "--realm") == 0) {
        ok = pbx_run_num(v, UINT32_MAX, &req->realm);
    } else if (ok && strcmp(k, "--entry") == 0) {
        o->entry = v;
        ok = v[0] != '\0' && strlen(v) <= PBX_PEER_LAUNCH_ENTRY_MAX;
    } else if (ok && strcmp(k, "--control") == 0) {
        o->control = v;
    } else if (ok) {
        pbx_tool_dir_set(v);
    }
    return ok ? 2 : -1;
}

/* Parses argv into *o and *req; returns PBX_TOOL_EXIT_OK or the usage
 * error's status (after its line). */
static int pbx_run_args(int argc, char **argv, pbx_run_opts *o,
                        pbx_peer_launch_req *req)
{
    req->session = 1;
    req->realm = 1;
    int i = 1;
    while (i < argc && strcmp(argv[i], "--") != 0 && argv[i][0] == '-') {
        int took =
            pbx_run_opt(argv[i], i + 1 < argc ? argv[i + 1] : NULL, o, req);
        if (took == -2) {
            return PBX_TOOL_EXIT_USAGE;
        }
        if (took <= 0) {
            return pbx_tool_usage_error("run",
                                        took == 0 ? "unknown option"
                                                  : "bad or missing value for",
                                        argv[i]);
        }
        i += took;
    }
    i += i < argc && strcmp(argv[i], "--") == 0 ? 1 : 0;
    if (i >= argc) {
        return pbx_tool_usage_error("run", "missing PROG", NULL);
    }
    uint32_t extra =
        o->ngrants != 0U ? PBX_RUN_STAGE_ARGS + 2U * o->ngrants : 0U;
    if (argc - i + (int)extra > (int)PBX_PEER_LAUNCH_ARGS_MAX) {
        return pbx_tool_usage_error("run", "too many arguments for", argv[i]);
    }
    if (o->profile != NULL && (req->flags & PBX_PEER_LAUNCH_SANDBOX) == 0U) {
        return pbx_tool_usage_error("run", "--sandbox is needed by",
                                    "--profile");
    }
    o->first = i;
    return PBX_TOOL_EXIT_OK;
}

/* Resolves prog as execvp would (a name with a slash as it is, any other
 * through PATH) to an absolute path in out[0..cap); false when there is
 * no such executable file. */
static bool pbx_run_resolve(const char *prog, char *out, size_t cap)
{
    static char cand[PATH_MAX];
    if (strchr(prog, '/') != NULL) {
        return realpath(prog, cand) != NULL && access(cand, X_OK) == 0 &&
               snprintf(out, cap, "%s", cand) < (int)cap;
    }
    const char *path = getenv("PATH");
    path = path != NULL && path[0] != '\0' ? path : "/usr/bin:/bin";
    for (uint32_t k = 0; k < PBX_RUN_PATH_DIRS && path[0] != '\0'; k++) {
        const char *colon = strchr(path, ':');
        size_t n = colon != NULL ? (size_t)(colon - path) : strlen(path);
        char dir[PATH_MAX];
        int w = snprintf(dir, sizeof(dir), "%.*s/%s", (int)n,
                         n != 0U ? path : ".", prog);
        if (w > 0 && (size_t)w < sizeof(dir) && access(dir, X_OK) == 0 &&
            realpath(dir, cand) != NULL) {
            return snprintf(out, cap, "%s", cand) < (int)cap;
        }
        path += n + (colon != NULL ? 1U : 0U);
    }
    return false;
}

/* The words before PROG: none, or (with --grant) pbx-stage next to this
 * binary and its options; fills pre[0..*n), false after a line when
 * pbx-stage or the stage socket's path cannot be had. */
static bool pbx_run_stage(const pbx_run_opts *o, const char **pre, size_t *n)
{
    static char stage[PATH_MAX];
    static char sock[PATH_MAX];
    *n = 0;
    if (o->ngrants == 0U) {
        return true;
    }
    ssize_t len = readlink("/proc/self/exe", stage, sizeof(stage) - 1U);
    stage[len > 0 ? (size_t)len : 0U] = '\0';
    char *slash = strrchr(stage, '/');
    size_t dir = slash != NULL ? (size_t)(slash - stage) : 0U;
    if (slash == NULL || dir + sizeof("/pbx-stage") > sizeof(stage)) {
        (void)fprintf(stderr, "pbx run: cannot find this program's file\n");
        return false;
    }
    memcpy(slash, "/pbx-stage", sizeof("/pbx-stage"));
    if (access(stage, X_OK) != 0) {
        (void)fprintf(stderr, "pbx run: %s: %s\n", stage, strerror(errno));
        return false;
    }
    if (pbx_tool_dir_path("stage.sock", sock, sizeof(sock)) != 0) {
        return false;
    }
    pre[(*n)++] = stage;
    pre[(*n)++] = "--stage-sock";
    pre[(*n)++] = sock;
    pre[(*n)++] = "--lifetime";
    pre[(*n)++] = o->lifetime != NULL ? o->lifetime : "job";
    for (uint32_t k = 0; k < o->ngrants; k++) {
        pre[(*n)++] = "--grant";
        pre[(*n)++] = o->grants[k];
    }
    pre[(*n)++] = "--";
    return true;
}

/* Fills req's entry (o->entry, else PROG's basename) and arguments:
 * pre[0..npre), the resolved path, then argv[first+1..argc). */
static bool pbx_run_fill(int argc, char **argv, const pbx_run_opts *o,
                         const char *prog, const char *const *pre, size_t npre,
                         pbx_peer_launch_req *req)
{
    const char *entry = o->entry;
    if (entry == NULL) {
        const char *slash = strrchr(argv[o->first], '/');
        entry = slash != NULL ? slash + 1 : argv[o->first];
    }
    size_t n = strlen(entry);
    if (n == 0U || n > PBX_PEER_LAUNCH_ENTRY_MAX) {
        return false;
    }
    memcpy(req->entry, entry, n);
    req->entry[n] = '\0';
    req->entry_len = (uint16_t)n;
    req->argc = (uint16_t)(npre + (size_t)(argc - o->first));
    for (size_t k = 0; k < req->argc; k++) {
        int i = o->first + (int)k - (int)npre;
        const char *a = k < npre ? pre[k] : i == o->first ? prog : argv[i];
        size_t len = strlen(a);
        if (len == 0U || len > UINT16_MAX) {
            return false;
        }
        req->args[k] = (const uint8_t *)a;
        req->arg_lens[k] = (uint16_t)len;
    }
    if (npre != 0U) {
        req->flags |= PBX_PEER_LAUNCH_STAGE;
    }
    return true;
}

/* A scope for the job from DIR/scope.sock, or -1 when there is none (the
 * job then fetches its own, as the app library does). */
static int pbx_run_scope(void)
{
    char path[PATH_MAX];
    if (pbx_tool_dir_path("scope.sock", path, sizeof(path)) != 0 ||
        access(path, F_OK) != 0) {
        return -1;
    }
    uint64_t id = 0;
    return pbx_peer_io_scope_acquire(path, PBX_RUN_SCOPE_MS, &id);
}

/* Waits (wait_ms < 0: without limit) for one launchd-local frame on fd
 * into *f, using m's buffer; false after a line saying why. */
static bool pbx_run_recv(int fd, int wait_ms, pbx_peer_msg *m,
                         pbx_peer_launch_frame *f)
{
    struct pollfd p = {fd, POLLIN, 0};
    int r = 0;
    do {
        r = poll(&p, 1, wait_ms);
    } while (r < 0 && errno == EINTR);
    if (r <= 0) {
        (void)fprintf(stderr, "pbx run: no answer from launchd\n");
        return false;
    }
    if (pbx_peer_io_recv_raw(fd, m, 0) != 0) {
        (void)fprintf(stderr, "pbx run: launchd closed the connection\n");
        return false;
    }
    pbx_peer_io_close_all(m->fds, m->nfds);
    if (pbx_peer_launch_peek(m->buf, m->len, 0, f) != PBX_OK) {
        (void)fprintf(stderr, "pbx run: bad frame from launchd\n");
        return false;
    }
    return true;
}

/* Reads the stack's root (DIR/root.path, written by pbx up) into out; false
 * when there is none. */
static bool pbx_run_root(char *out, size_t cap)
{
    char path[PATH_MAX];
    if (pbx_tool_dir_path("root.path", path, sizeof(path)) != 0) {
        return false;
    }
    FILE *fp = fopen(path, "re");
    bool ok = fp != NULL && fgets(out, (int)cap, fp) != NULL;
    if (fp != NULL) {
        (void)fclose(fp);
    }
    size_t n = ok ? strcspn(out, "\n") : 0U;
    out[n] = '\0';
    return n > 0U && out[0] == '/';
}

/* Whether the options ask for brokered opens; false after a line saying
 * why when they contradict each other (or when --opens or --scope come
 * without --sandbox). */
static bool pbx_run_wants_broker(const pbx_run_opts *o, bool sandbox,
                                 bool *want)
{
    const char *bad = NULL;
    if (o->no_broker && (o->scope != NULL || o->routine)) {
        bad = "--no-broker takes neither --scope nor --opens";
    } else if (!sandbox && (o->scope != NULL || o->routine)) {
        bad = o->scope != NULL ? "--scope needs --sandbox"
                               : "--opens needs --sandbox";
    } else if (!sandbox && o->no_broker) {
        bad = "--no-broker needs --sandbox";
    }
    if (bad != NULL) {
        (void)fprintf(stderr, "pbx run: %s\n", bad);
        return false;
    }
    *want = sandbox && !o->no_broker;
    return true;
}

/* Fills req's broker block: brokered opens are the default of --sandbox,
 * beneath the stack's root or --scope DIR ("root": the whole root), with
 * the scope's and the root's real paths. False after a line saying why. */
static bool pbx_run_broker(const pbx_run_opts *o, pbx_peer_launch_req *req)
{
    static char root[PATH_MAX];
    static char scope[PATH_MAX];
    bool want = false;
    if (!pbx_run_wants_broker(o, (req->flags & PBX_PEER_LAUNCH_SANDBOX) != 0U,
                              &want)) {
        return false;
    }
    if (!want) {
        return true;
    }
    if (!pbx_run_root(root, sizeof(root))) {
        /* Never a silent fallback: the user asks for no broker by name. */
        (void)fprintf(stderr, "pbx run: --sandbox brokers opens below the "
                              "stack's root, but the stack names none (no "
                              "DIR/root.path: is pbx up running?); "
                              "--no-broker runs without\n");
        return false;
    }
    const char *dir = o->scope != NULL ? o->scope : "root";
    bool whole = strcmp(dir, "root") == 0;
    if (realpath(whole ? root : dir, scope) == NULL) {
        (void)fprintf(stderr, "pbx run: --scope %s: %s\n", dir,
                      strerror(errno));
        return false;
    }
    size_t nr = strlen(root);
    bool under =
        strcmp(root, "/") == 0 || (strncmp(scope, root, nr) == 0 &&
                                   (scope[nr] == '\0' || scope[nr] == '/'));
    if (!under || strlen(scope) > PBX_PEER_LAUNCH_DIR_MAX ||
        nr > PBX_PEER_LAUNCH_DIR_MAX) {
        (void)fprintf(stderr,
                      "pbx run: --scope %s is not below the stack's "
                      "root %s\n",
                      scope, root);
        return false;
    }
    req->flags |= PBX_PEER_LAUNCH_BROKERED |
                  (o->routine ? PBX_PEER_LAUNCH_ROUTINE_OPENS : 0U);
    req->broker_scope = (const uint8_t *)scope;
    req->broker_scope_len = (uint16_t)strlen(scope);
    req->broker_root = (const uint8_t *)root;
    req->broker_root_len = (uint16_t)nr;
    return true;
}

/* Sends the LAUNCH (stdio, and the scope when there is one) on a new
 * control connection and reads its answer; returns the connection, or
 * -1 after a line saying why. */
static int pbx_run_launch(const char *control, pbx_peer_launch_req *req,
                          pbx_peer_msg *m, pbx_peer_launch_reply *rep)
{
    static uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    int fds[5] = {STDIN_FILENO, STDOUT_FILENO, STDERR_FILENO, pbx_run_scope(),
                  -1};
    req->scope = fds[3] >= 0;
    /* The job runs in this working directory, not launchd's: its relative
     * paths name what they name here (docs/HOST.md, "launchd"). */
    int cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cwd < 0) {
        (void)fprintf(stderr, "pbx run: the working directory: %s\n",
                      strerror(errno));
        if (fds[3] >= 0) {
            (void)close(fds[3]);
        }
        return -1;
    }
    req->flags |= PBX_PEER_LAUNCH_CWD;
    fds[req->scope ? 4 : 3] = cwd;
    size_t n = 0;
    int fd = -1;
    if (pbx_peer_launch_encode(req, buf, sizeof(buf), &n) != PBX_OK ||
        pbx_ipc_frame_set_seq(buf, n, 1U) != PBX_OK) {
        (void)fprintf(stderr, "pbx run: the LAUNCH does not fit a frame\n");
    } else if ((fd = pbx_peer_io_connect(control, SOCK_SEQPACKET)) < 0 ||
               pbx_peer_io_send_fds(fd, buf, n, fds, pbx_peer_launch_nfds(req),
                                    0) != 0) {
        (void)fprintf(stderr, "pbx run: launchd at %s: %s\n", control,
                      strerror(errno));
        fd = fd >= 0 ? (close(fd), -1) : -1;
    }
    for (size_t i = 3; i < 5U; i++) {
        if (fds[i] >= 0) {
            (void)close(fds[i]);
        }
    }
    pbx_peer_launch_frame f;
    if (fd < 0 || !pbx_run_recv(fd, PBX_RUN_WAIT_MS, m, &f)) {
        return fd >= 0 ? (close(fd), -1) : -1;
    }
    pbx_err e = pbx_peer_launch_reply_decode(&f, rep);
    if (e != PBX_OK) {
        (void)fprintf(stderr, "pbx run: launchd refused: %s\n",
                      e == PBX_E_IPC_STATUS ? pbx_peer_status_text(f.status)
                                            : pbx_err_text(e));
        (void)close(fd);
        return -1;
    }
    return fd;
}

/* --profile FILE: checked here for a message with its line, then named
 * in the LAUNCH (launchd reads and checks it again); the stack directory
 * is the control socket's. True when there is none or it was taken. */
static bool pbx_run_profile(const pbx_run_opts *o, const char *control,
                            pbx_peer_launch_req *req)
{
    static char abs[PBX_PEER_LAUNCH_PROFILE_MAX + 1U];
    static char stack[PATH_MAX];
    if (o->profile == NULL) {
        return true;
    }
    const char *slash = strrchr(control, '/');
    (void)snprintf(stack, sizeof(stack), "%.*s",
                   slash != NULL ? (int)(slash - control) : 1,
                   slash != NULL ? control : ".");
    return pbx_peer_profile_file_take("pbx run", o->profile,
                                      stack[0] != '\0' ? stack : "/", abs,
                                      sizeof(abs), req);
}

int pbx_tool_run(int argc, char **argv)
{
    static pbx_peer_launch_req req;
    static pbx_peer_msg m;
    static char prog[PATH_MAX];
    static char control[PATH_MAX];
    memset(&req, 0, sizeof(req));
    static pbx_run_opts o;
    memset(&o, 0, sizeof(o));
    int st = pbx_run_args(argc, argv, &o, &req);
    if (st != PBX_TOOL_EXIT_OK) {
        return st;
    }
    if (!pbx_run_resolve(argv[o.first], prog, sizeof(prog))) {
        (void)fprintf(stderr, "pbx run: %s: no such executable file\n",
                      argv[o.first]);
        return PBX_RUN_REFUSED;
    }
    const char *pre[PBX_RUN_STAGE_ARGS + 2U * PBX_RUN_GRANTS_MAX] = {NULL};
    size_t npre = 0;
    if (!pbx_run_stage(&o, pre, &npre)) {
        return PBX_RUN_REFUSED;
    }
    if (!pbx_run_fill(argc, argv, &o, prog, pre, npre, &req)) {
        return pbx_tool_usage_error("run", "bad entry or argument for",
                                    argv[o.first]);
    }
    if (!pbx_run_broker(&o, &req)) {
        return PBX_RUN_REFUSED;
    }
    if (o.control != NULL) {
        (void)snprintf(control, sizeof(control), "%s", o.control);
    } else if (pbx_tool_dir_path("launchd.sock", control, sizeof(control)) !=
               0) {
        return PBX_RUN_REFUSED;
    }
    if (!pbx_run_profile(&o, control, &req)) {
        return PBX_RUN_REFUSED;
    }
    pbx_peer_launch_reply rep;
    int fd = pbx_run_launch(control, &req, &m, &rep);
    if (fd < 0) {
        return PBX_RUN_REFUSED;
    }
    if (!o.quiet) {
        (void)fprintf(stderr, "pbx run: %s is job %llu:%u (pid %u)%s\n",
                      req.entry, (unsigned long long)rep.job_id, rep.job_gen,
                      rep.pid,
                      (req.flags & PBX_PEER_LAUNCH_SANDBOX) != 0U
                          ? ", sandboxed: the system profile, nothing of yours"
                          : "");
    }
    /* Only EXIT comes from here on, whenever the job ends. */
    pbx_peer_launch_frame f;
    uint32_t ws = 0;
    bool ended =
        pbx_run_recv(fd, -1, &m, &f) && pbx_peer_exit_decode(&f, &ws) == PBX_OK;
    (void)close(fd);
    if (!ended) {
        (void)fprintf(stderr, "pbx run: the job's end is unknown\n");
        return PBX_RUN_REFUSED;
    }
    int w = (int)ws;
    if (WIFEXITED(w)) {
        return WEXITSTATUS(w);
    }
    return WIFSIGNALED(w) ? 128 + WTERMSIG(w) : PBX_RUN_REFUSED;
}
