/*
 * stage.c: pbx-stage, the first program of a job `pbx run --grant`
 * starts (docs/HOST.md, "Install mode on the host"). Statically linked,
 * so that a sandboxed job can run it.
 *
 *   pbx-stage [--stage-sock PATH] [--lifetime LT] [--wait-ms N]
 *             --grant OP:SELECTOR [--grant ...] -- PROG [ARG...]
 *   pbx-stage -h | --help
 *
 * It stages itself at procd (STAGE on procd's stage socket, or on the
 * connection to it launchd made for a sandboxed job, named by
 * PBX_STAGE_FD: procd names it by the kernel's SO_PEERCRED pid and
 * answers a fresh generation G),
 * asks for each grant in install mode with the target (its own pid, G,
 * slot 5, 6, ... in the order of the --grant options) over its job
 * connection, and takes each installed object from procd's DELIVER on
 * the stage connection. When every grant was approved and delivered it
 * puts each object at its slot, closes every other descriptor it opened
 * (stdio, the job connection at 3 and the scope at 4 stay: they are the
 * job's), and executes PROG in its place: same pid, so the installs stay
 * the job's. A grant that is not approved ends it with one line naming
 * the selector and why, exit 1, without running PROG.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/app/pbx_app.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_stage.h"

/* The first slot an object is put at (0..2 stdio, 3 the job connection,
 * 4 the scope). */
#define STAGE_SLOT_FIRST 5U
/* The most grants one job asks for. */
#define STAGE_GRANTS_MAX 16U
/* How long procd may take to answer STAGE, and to deliver an object
 * after its decision (it delivers before it answers INSTALL, so this only
 * bounds a broken procd). */
#define STAGE_WAIT_MS 10000
/* Where descriptors are kept until they go to their slots (above every
 * slot). */
#define STAGE_FD_HIGH 64
/* Descriptors closed before PROG runs are below this. */
#define STAGE_FDS_MAX 1024
/* What the stub exits with when PROG was not run. */
#define STAGE_EXIT_REFUSED 1
#define STAGE_EXIT_USAGE   2

#define STAGE_USAGE                                                            \
    "usage: pbx-stage [--stage-sock PATH] [--lifetime LT] [--wait-ms N]\n"     \
    "                 --grant OP:SELECTOR [--grant ...] -- PROG [ARG...]\n"    \
    "       pbx-stage -h | --help\n"

/* One grant asked for: what the option said, and what came. */
typedef struct stage_grant {
    const char *spec; /* the option's OP:SELECTOR */
    const char *selector;
    uint32_t op;
    int obj; /* the delivered object (a high descriptor), or -1 */
} stage_grant;

/* The command line. */
typedef struct stage_opts {
    const char *sock;
    uint32_t lifetime;
    uint64_t wait_ms;
    size_t ngrants;
    stage_grant grants[STAGE_GRANTS_MAX];
    int first; /* argv index of PROG */
} stage_opts;

/* Splits spec (OP:SELECTOR) into g; false when the operation is unknown
 * or the selector empty. */
static bool stage_grant_parse(const char *spec, stage_grant *g)
{
    const char *colon = strchr(spec, ':');
    char op[32];
    size_t n = colon != NULL ? (size_t)(colon - spec) : 0U;
    if (colon == NULL || n == 0U || n >= sizeof(op) || colon[1] == '\0') {
        return false;
    }
    memcpy(op, spec, n);
    op[n] = '\0';
    g->spec = spec;
    g->selector = colon + 1;
    g->obj = -1;
    return pbx_peer_name_parse(PBX_PEER_NAMES_OPERATION, op, &g->op) &&
           pbx_app_class_for((uint16_t)g->op) != 0U;
}

/* Parses option k with value v into *o; false after one line naming an
 * unknown option, or a line and the usage for a bad or missing value. */
static bool stage_opt(const char *k, const char *v, stage_opts *o)
{
    bool ok = v != NULL;
    if (ok && strcmp(k, "--grant") == 0) {
        ok = o->ngrants < STAGE_GRANTS_MAX &&
             stage_grant_parse(v, &o->grants[o->ngrants]);
        o->ngrants += ok ? 1U : 0U;
    } else if (ok && strcmp(k, "--stage-sock") == 0) {
        o->sock = v;
    } else if (ok && strcmp(k, "--lifetime") == 0) {
        ok = pbx_peer_name_parse(PBX_PEER_NAMES_LIFETIME, v, &o->lifetime);
    } else if (ok && strcmp(k, "--wait-ms") == 0) {
        ok = pbx_peer_parse_u64(v, UINT32_MAX, &o->wait_ms);
    } else {
        (void)fprintf(stderr,
                      "pbx-stage: unknown option '%s' (try 'pbx-stage "
                      "--help')\n",
                      k);
        return false;
    }
    if (!ok) {
        (void)fprintf(stderr, "pbx-stage: bad or missing value for %s\n", k);
        (void)fputs(STAGE_USAGE, stderr);
    }
    return ok;
}

/* Parses argv into *o; returns 0, or the exit status after a message. */
static int stage_args(int argc, char **argv, stage_opts *o)
{
    if (argc == 2 &&
        (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        (void)fputs(STAGE_USAGE, stdout);
        return -1;
    }
    int i = 1;
    while (i < argc && strcmp(argv[i], "--") != 0) {
        if (!stage_opt(argv[i], i + 1 < argc ? argv[i + 1] : NULL, o)) {
            return STAGE_EXIT_USAGE;
        }
        i += 2;
    }
    if (i + 1 >= argc || o->ngrants == 0U) {
        (void)fprintf(stderr, "pbx-stage: %s\n",
                      o->ngrants == 0U ? "no --grant" : "missing PROG");
        (void)fputs(STAGE_USAGE, stderr);
        return STAGE_EXIT_USAGE;
    }
    o->first = i + 1;
    return 0;
}

/* Waits up to STAGE_WAIT_MS for one stage-wire frame on fd into *f (its
 * descriptor, if any, in m); false after a line saying why. */
static bool stage_recv(int fd, pbx_peer_msg *m, pbx_peer_stage_frame *f)
{
    struct pollfd p = {fd, POLLIN, 0};
    int r = 0;
    do {
        r = poll(&p, 1, STAGE_WAIT_MS);
    } while (r < 0 && errno == EINTR);
    if (r <= 0 || pbx_peer_io_recv_raw(fd, m, 0) != 0) {
        (void)fprintf(stderr, "pbx-stage: procd did not answer\n");
        return false;
    }
    pbx_err e = pbx_peer_stage_decode(m->buf, m->len, m->nfds, f);
    if (e != PBX_OK) {
        pbx_peer_io_close_all(m->fds, m->nfds);
        (void)fprintf(stderr, "pbx-stage: bad frame from procd: %s\n",
                      pbx_err_text(e));
        return false;
    }
    return true;
}

/* Stages this process at procd's stage socket path; returns the stage
 * connection and the generation in *gen, or -1 after a line. */
static int stage_register(const char *path, uint32_t *gen)
{
    static pbx_peer_msg m;
    uint8_t buf[PBX_PEER_STAGE_FRAME_MAX];
    size_t n = 0;
    /* A sandboxed job may create no socket: launchd connected for it
     * before the walls went up and names the connection here. */
    const char *given = getenv("PBX_STAGE_FD");
    int fd = given != NULL ? pbx_peer_io_fd_arg(given)
                           : pbx_peer_io_connect(path, SOCK_SEQPACKET);
    (void)unsetenv("PBX_STAGE_FD");
    if (fd < 0) {
        (void)fprintf(stderr, "pbx-stage: procd's stage socket %s: %s\n", path,
                      strerror(errno));
        return -1;
    }
    pbx_peer_stage_frame f;
    bool ok = pbx_peer_stage_encode((uint64_t)getpid(), 1U, buf, sizeof(buf),
                                    &n) == PBX_OK &&
              pbx_peer_io_send_fds(fd, buf, n, NULL, 0U, 0) == 0 &&
              stage_recv(fd, &m, &f);
    if (ok &&
        (f.op != (PBX_PEER_OP_STAGE | PBX_IPC_REPLY_BIT) || f.status != 0U)) {
        (void)fprintf(stderr, "pbx-stage: procd refused to stage: %s\n",
                      pbx_peer_status_text(f.status));
        ok = false;
    }
    if (!ok) {
        (void)close(fd);
        return -1;
    }
    *gen = f.gen;
    return fd;
}

/* Takes the DELIVER of grant g (approved as *ag into slot) from the
 * stage connection; false after a line. */
static bool stage_take(int conn, stage_grant *g, const pbx_app_grant *ag)
{
    static pbx_peer_msg m;
    pbx_peer_stage_frame f;
    if (!stage_recv(conn, &m, &f)) {
        return false;
    }
    bool exact = f.op == PBX_PEER_OP_DELIVER && f.deliver.slot == ag->slot &&
                 f.deliver.grant.index == ag->grant.index &&
                 f.deliver.grant.gen == ag->grant.gen && m.nfds == 1U;
    if (!exact) {
        pbx_peer_io_close_all(m.fds, m.nfds);
        (void)fprintf(stderr, "pbx-stage: %s: procd delivered another object\n",
                      g->selector);
        return false;
    }
    g->obj = fcntl(m.fds[0], F_DUPFD_CLOEXEC, STAGE_FD_HIGH);
    (void)close(m.fds[0]);
    return g->obj >= 0;
}

/* Asks for grant k (slot STAGE_SLOT_FIRST + k) and takes its object;
 * false after one line naming the selector and why. */
static bool stage_ask(const stage_opts *o, size_t k, uint32_t gen, int conn)
{
    stage_grant *g = (stage_grant *)&o->grants[k];
    pbx_app_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.selector = g->selector;
    rq.operation = (uint16_t)g->op;
    rq.lifetime = (uint8_t)o->lifetime;
    rq.wait_ms = o->wait_ms;
    pbx_app_grant ag;
    int rc = pbx_app_install(&rq, gen, STAGE_SLOT_FIRST + (uint32_t)k, &ag);
    if (rc != PBX_APP_OK) {
        (void)fprintf(stderr, "pbx-stage: %s: %s (%s)%s%s\n", g->selector,
                      pbx_peer_name_of(PBX_PEER_NAMES_OUTCOME, ag.outcome),
                      pbx_app_strerror(rc), ag.status != 0U ? ": " : "",
                      ag.status != 0U ? pbx_peer_status_text(ag.status) : "");
        return false;
    }
    return stage_take(conn, g, &ag);
}

/* Puts every object at its slot and closes every other descriptor above
 * the job's own (0..4); false when a dup2 failed. */
static bool stage_place(stage_opts *o)
{
    for (size_t k = 0; k < o->ngrants; k++) {
        int slot = (int)(STAGE_SLOT_FIRST + k);
        if (dup2(o->grants[k].obj, slot) != slot) {
            return false;
        }
    }
    int keep = (int)(STAGE_SLOT_FIRST + o->ngrants);
    for (int fd = keep; fd < STAGE_FDS_MAX; fd++) {
        (void)close(fd);
    }
    return true;
}

int main(int argc, char **argv)
{
    static stage_opts o;
    o.lifetime = PBX_IPC_LIFETIME_JOB;
    int st = stage_args(argc, argv, &o);
    if (st != 0) {
        return st < 0 ? 0 : st;
    }
    char path[4096];
    if (o.sock == NULL && pbx_app_dir_path(NULL, "stage.sock", path,
                                           sizeof(path)) != PBX_APP_OK) {
        (void)fputs("pbx-stage: the runtime directory's path is too long\n",
                    stderr);
        return STAGE_EXIT_REFUSED;
    }
    uint32_t gen = 0;
    int conn = stage_register(o.sock != NULL ? o.sock : path, &gen);
    bool ok = conn >= 0;
    for (size_t k = 0; ok && k < o.ngrants; k++) {
        ok = stage_ask(&o, k, gen, conn);
    }
    if (!ok) {
        (void)fprintf(stderr, "pbx-stage: %s was not run\n", argv[o.first]);
        return STAGE_EXIT_REFUSED;
    }
    /* The stage ends with this connection: procd unstages the process. */
    (void)close(conn);
    if (!stage_place(&o)) {
        (void)fprintf(stderr, "pbx-stage: dup2: %s; %s was not run\n",
                      strerror(errno), argv[o.first]);
        return STAGE_EXIT_REFUSED;
    }
    execvp(argv[o.first], &argv[o.first]);
    (void)fprintf(stderr, "pbx-stage: %s: %s\n", argv[o.first],
                  strerror(errno));
    return 127;
}
