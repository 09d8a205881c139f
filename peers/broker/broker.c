/*
 * broker.c: pbx-broker, one sandboxed job's open broker (broker.h).
 *
 *   pbx-broker (--listener-fd N | --listener-sock N) --scope DIR
 *              --root DIR [--mount DIR] [--burst N] [--per-ms N]
 *              [--urgency routine|exceptional] [--profile FILE]
 *
 * launchd runs it beside a job launched with the brokered-open flag, with
 * the job's claims in the environment and a second job connection bound
 * to the same job at $PBX_LAUNCHD_FD (so its requests are the job's), the
 * job's scope at $PBX_SCOPE_FD when it has one, and the seccomp listener
 * of the job's open family at descriptor N (--listener-sock: received on
 * socket N with the job's own stderr, which becomes the broker's, so its
 * lines go where the job's output goes). It serves the listener until
 * the job's last thread exits (the listener then reports its end), one
 * notification at a time: a prompt holds only this job's next open.
 *
 * Each brokered open is a runtime-reply request made as the job (urgency
 * --urgency's, default exceptional: set by launchd from the launching
 * user's LAUNCH, never by the program; lifetime: invocation, the job's
 * one invocation BROKER_INVOCATION, which ends when the program exits
 * since launchd EXPIREs the whole job then), labelled
 * with the path the broker resolved; an approved object is asked for a
 * revocable descriptor (OPEN, pbx_obj_open_fd) and exactly that descriptor
 * is injected. The object connections are kept (bounded) until the job
 * ends, so each descriptor lives as long as its grant.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peers/app/pbx_app.h"
#include "peers/app/pbx_obj.h"
#include "peers/broker/broker.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"

/* The invocation every brokered grant is made within: a job run by pbx
 * run is one invocation of one program, so its grants end with it (the
 * job's EXPIRE when it exits ends them; docs/HOST.md, "Brokered opens"). */
#define BROKER_INVOCATION 1U
/* The default prompt budget: 5 in a row, then one every 2 seconds. */
#define BROKER_BURST  5U
#define BROKER_PER_MS 2000U

/* The broker's options and its kept objects. */
typedef struct broker_opts {
    int listener;
    const char *scope;
    const char *root;
    const char *mount;
    const char *profile;
    uint32_t burst;
    uint32_t per_ms;
    uint8_t urgency;
    uint32_t nobjs;
    int objs[PBX_BROKER_OBJS_MAX];
} broker_opts;

/* broker.h's ask: the powerbox request, then OPEN on the object. */

static int broker_ask(void *ctx, const pbx_broker_ask *q, int *fd, bool *person)
{
    broker_opts *o = ctx;
    if (o->nobjs >= PBX_BROKER_OBJS_MAX) {
        pbx_broker_say("pbx-broker: %s: %u objects kept; refused\n", q->path,
                       PBX_BROKER_OBJS_MAX);
        return EMFILE;
    }
    pbx_app_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.selector = q->selector;
    rq.operation = q->op == PBX_PEER_BROKER_OP_READ ? PBX_IPC_OPERATION_READ
                   : q->op == PBX_PEER_BROKER_OP_WRITE
                       ? PBX_IPC_OPERATION_WRITE
                       : PBX_IPC_OPERATION_CREATE;
    rq.lifetime = PBX_IPC_LIFETIME_INVOCATION;
    rq.invocation = BROKER_INVOCATION;
    /* The broker, never the program, says how urgent an open is:
     * exceptional (the policies prompt) unless the launching user asked
     * for routine opens. */
    rq.urgency = o->urgency;
    /* The label (display only, at most 64 bytes) shows the resolved
     * path, its end when it is longer; the selector names the object. */
    static char label[PBX_IPC_LABEL_LEN_BYTES_MAX + 1U];
    pbx_broker_label(q->path, label, sizeof(label));
    rq.label = label;
    pbx_app_grant g;
    int r = pbx_app_open(&rq, &g);
    /* A routine approval is never charged (docs/HOST.md, "The prompt
     * budget"). */
    *person = pbx_broker_person(g.outcome, g.reason, rq.urgency);
    if (r == PBX_APP_E_REFUSED &&
        g.status == (uint32_t)PBX_E_PEER_PROMPT_RATE) {
        /* launchd's budget, which the job's own requests share. */
        pbx_broker_say("pbx-broker: %s: over the job's prompt rate (launchd's "
                       "budget for the job), refused without a prompt\n",
                       q->path);
        return EACCES;
    }
    if (r != PBX_APP_OK) {
        pbx_broker_say("pbx-broker: %s: %s\n", q->path, pbx_app_strerror(r));
        return pbx_broker_refusal_errno(r);
    }
    int st = pbx_obj_open_fd(g.obj, q->mode, fd);
    if (st != 0) {
        /* Nothing is handed over without revocation. */
        pbx_broker_say("pbx-broker: %s: %s\n", q->path, pbx_obj_strerror(st));
        (void)close(g.obj);
        return EACCES;
    }
    o->objs[o->nobjs++] = g.obj;
    return 0;
}

/* Receives the seccomp listener launchd's child sends on sock (one
 * message: the listener, then the child's standard error, the job's own,
 * which becomes the broker's: pbx_broker_say_adopt), then closes sock;
 * the listener or -1 after a line saying why. A message with the
 * listener alone leaves the broker's standard error as it is. */
static int broker_recv_listener(int sock)
{
    static pbx_peer_msg m;
    int r = pbx_peer_io_recv_raw(sock, &m, 0);
    (void)close(sock);
    if (r != 0 || m.nfds < 1U || m.nfds > 2U) {
        pbx_broker_say("pbx-broker: no listener came from the job\n");
        if (r == 0) {
            pbx_peer_io_close_all(m.fds, m.nfds);
        }
        return -1;
    }
    if (m.nfds == 2U && pbx_broker_say_adopt(m.fds[1]) != 0) {
        /* Closing the listener fails every open of the job (ENOSYS). */
        (void)close(m.fds[0]);
        return -1;
    }
    return m.fds[0];
}

/* The mount's path as the kernel names it (its parent's real path, then
 * its name; the mount itself is not resolved: a stat there would reach
 * vfsd's FUSE server) into out (PBX_BROKER_PATH_MAX bytes); mount as
 * given when its parent does not resolve. */
static const char *broker_mount_real(const char *mount, char *out)
{
    static char parent[PBX_BROKER_PATH_MAX];
    static char real[PBX_BROKER_PATH_MAX];
    const char *slash = strrchr(mount, '/');
    size_t pn = slash != NULL ? (size_t)(slash - mount) : 0U;
    if (slash == NULL || pn >= sizeof(parent) || slash[1] == '\0') {
        return mount;
    }
    memcpy(parent, mount, pn);
    parent[pn] = '\0';
    if (realpath(pn > 0U ? parent : "/", real) == NULL ||
        pbx_peer_broker_join(real, slash + 1, out, PBX_BROKER_PATH_MAX) !=
            PBX_OK) {
        return mount;
    }
    return out;
}

/* Parses argv into *o; false after the usage line. */
static bool broker_args(int argc, char **argv, broker_opts *o)
{
    o->listener = -1;
    o->burst = BROKER_BURST;
    o->per_ms = BROKER_PER_MS;
    o->urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i];
        const char *v = argv[i + 1];
        uint64_t n = 0;
        bool num = pbx_peer_parse_u64(v, INT_MAX, &n);
        if (strcmp(k, "--listener-fd") == 0 && num) {
            o->listener = (int)n;
        } else if (strcmp(k, "--listener-sock") == 0 && num) {
            o->listener = broker_recv_listener((int)n);
        } else if (strcmp(k, "--burst") == 0 && num && n > 0U) {
            o->burst = (uint32_t)n;
        } else if (strcmp(k, "--per-ms") == 0 && num && n > 0U) {
            o->per_ms = (uint32_t)n;
        } else if (strcmp(k, "--scope") == 0) {
            o->scope = v;
        } else if (strcmp(k, "--root") == 0) {
            o->root = v;
        } else if (strcmp(k, "--mount") == 0) {
            o->mount = v;
        } else if (strcmp(k, "--profile") == 0) {
            o->profile = v;
        } else if (strcmp(k, "--urgency") == 0 &&
                   (strcmp(v, "routine") == 0 ||
                    strcmp(v, "exceptional") == 0)) {
            o->urgency = v[0] == 'r' ? PBX_IPC_URGENCY_ROUTINE
                                     : PBX_IPC_URGENCY_EXCEPTIONAL;
        } else {
            o->listener = -1;
            break;
        }
    }
    if (o->listener < 0 || o->scope == NULL || o->root == NULL ||
        (argc % 2) != 1) {
        pbx_broker_say("usage: pbx-broker (--listener-fd N | "
                       "--listener-sock N) --scope DIR --root DIR "
                       "[--mount DIR] [--burst N] [--per-ms N] "
                       "[--urgency routine|exceptional] "
                       "[--profile FILE]\n");
        return false;
    }
    return true;
}

int main(int argc, char **argv)
{
    static broker_opts o;
    static pbx_broker b;
    static char scope_real[PBX_BROKER_PATH_MAX];
    static char root_real[PBX_BROKER_PATH_MAX];
    if (!broker_args(argc, argv, &o)) {
        return 2;
    }
    /* Each kept object is an open descriptor: the soft limit (often
     * 1024) would refuse the last ones before PBX_BROKER_OBJS_MAX. */
    uint64_t lim =
        pbx_broker_nofile_raise(PBX_BROKER_OBJS_MAX + PBX_BROKER_FDS_SPARE);
    if (lim < PBX_BROKER_OBJS_MAX + PBX_BROKER_FDS_SPARE) {
        pbx_broker_say("pbx-broker: RLIMIT_NOFILE is %llu (hard limit): "
                       "fewer than %u approved opens can be kept\n",
                       (unsigned long long)lim, PBX_BROKER_OBJS_MAX);
    }
    if (pbx_broker_init(&b, o.listener, o.scope, o.root, scope_real, root_real,
                        o.burst, o.per_ms) != 0) {
        /* Closing the listener fails every open of the job (ENOSYS). */
        pbx_broker_release(&b);
        return 1;
    }
    static char mount_real[PBX_BROKER_PATH_MAX];
    b.pl.mount =
        o.mount != NULL ? broker_mount_real(o.mount, mount_real) : NULL;
    /* Where vfsd's mount is known, an open is refused before anyone is
     * asked whenever FUSE is not mounted there (no revocable descriptor
     * could be handed over after the answer). */
    b.check_mount = o.mount != NULL;
    /* Without the profile's own paths their opens are refused as outside
     * the scope: never more than the file allows, so the job still runs. */
    if (o.profile != NULL) {
        (void)pbx_broker_profile_load(&b, o.profile);
    }
    b.ask = broker_ask;
    b.ask_ctx = &o;
    while (pbx_broker_serve_one(&b) == 0) {
    }
    pbx_broker_say_flush();
    pbx_broker_release(&b);
    for (uint32_t i = 0; i < o.nobjs; i++) {
        (void)close(o.objs[i]);
    }
    return 0;
}
