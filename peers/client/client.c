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
 *   pbx-client request [--control PATH | --control-fd N]
 *       (--scope PATH | --scope-fd N) --selector S --op OP --class CLASS
 *       --lifetime L [--mode install|runtime-reply] [--urgency U]
 *       [--job ID:GEN] [--session N] [--realm N] [--entry TEXT]
 *       [--label TEXT] [--target PID:GEN] [--slot N] [--wait-ms N]
 *       [--invocation N] [--verify-object ROOT]
 *       [--then consume [--repeat N] | --then hang-up | --then hold |
 *        --then cancel | --then cancel-session]
 *   pbx-client cancel [--control ...] (--request I:G | --job ID:GEN
 *       --session N)
 *   pbx-client consume [--control ...] --grant I:G
 *   pbx-client --help
 *
 * The connection: --control is the socket of `pbx-launchd serve
 * --control`, which relays every frame over launchd's broker connection:
 * powerboxd accepts BEGIN, in either mode, only there, and the broker then
 * owns the request. --public PATH and --public-fd N are the same option
 * under the name of the endpoint it used to be; pointed at powerboxd's own
 * public endpoint the BEGIN is refused. With none of them, pbx-client
 * uses the descriptor in PBX_LAUNCHD_FD: the job connection launchd hands
 * a program it launched.
 *
 * Claims: --job, --entry, --target, --session and --realm are what the
 * BEGIN claims; they default to PBX_JOB, PBX_ENTRY, PBX_TARGET,
 * PBX_SESSION and PBX_REALM (set by launchd for a launched job), else to
 * zero or empty (session 1), which launchd fills in from the job the
 * connection is bound to (and refuses on an unbound connection).
 *
 * Calls: every call carries its own nonzero seq and a reply is matched to
 * its call by seq, so a CANCEL can be outstanding while the DECISION is
 * held. The DECISION is asked once and the client waits for it: launchd
 * answers it when it is final. An older launchd answers PENDING at once;
 * the client then asks again after a short pause, so it works with both.
 * --wait-ms N (0, the default: no limit) bounds that wait: when it passes
 * the client sends the exact CANCEL of its request, prints wait=expired
 * and cancel=accepted or cancel=refused, then waits at most 10 s more for
 * the decision and prints it as usual (outcome=pending and exit 1 when
 * none came). Every other call waits at most 30 s for its reply.
 *
 * --verify-object ROOT: after an APPROVED runtime-reply decision the
 * client asks the alias (vfsd's object connection) OBJ_STAT and compares
 * its device and inode with stat(ROOT/selector) (lstat for a
 * directory-entry request): object=verified, or object=mismatch (exit 1).
 *
 * Modes: `request --then consume` runs a whole one-shot lifecycle on one
 * connection (under --repeat a BEGIN answered BUSY is sent again after a
 * backoff, for at most 10 s, counted as busy_retries=); with `--repeat N`
 * it runs N of them back to back and prints
 * only latency statistics (docs/BENCH.md) and mismatches=M: the decisions
 * that named another request than the one begun, plus (with
 * --verify-object) the objects that did not verify; M nonzero exits 1.
 * `--then hang-up` exits right after COMMIT without asking for the
 * decision, as a program that dies would: launchd then cancels the
 * request it relayed. `--then hold` waits after COMMIT for a line on
 * standard input (or its end) before asking for the decision; `--then
 * cancel` waits for one such line, sends the exact CANCEL of the request
 * on the same connection (cancel=accepted or cancel=refused), waits for
 * another, then asks for the decision; `--then cancel-session` does the
 * same with a generation-zero CANCEL naming the request's job and session
 * instead of the request. --invocation N names the launchd invocation the
 * BEGIN is made within (required with --lifetime invocation; optional for
 * one-shot). A DENIED decision prints its reason (reason=).
 *
 * Exit status: 0 approved or accepted (and --help), 3 denied, cancelled
 * or not found, 1 a protocol or transport failure, a mismatch or an
 * object that does not verify, 2 a usage error.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "peers/app/pbx_app.h"
#include "peers/client/client.h"
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"

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
            pbx_peer_io_scope_acquire(v, (int)PBX_APP_GRACE_MS, &o->scope_id);
        ok = o->scope_fd >= 0;
    } else if (strcmp(k, "--control-fd") == 0 ||
               strcmp(k, "--public-fd") == 0 || strcmp(k, "--scope-fd") == 0) {
        int fd = pbx_peer_io_fd_arg(v);
        *(strcmp(k, "--scope-fd") != 0 ? &o->public_fd : &o->scope_fd) = fd;
        ok = fd >= 0;
    } else if (strcmp(k, "--selector") == 0) {
        o->selector = v;
    } else if (strcmp(k, "--entry") == 0 || strcmp(k, "--label") == 0) {
        *(strcmp(k, "--entry") == 0 ? &o->cl.entry : &o->label) = v;
    } else if (strcmp(k, "--verify-object") == 0) {
        o->verify_root = v;
    } else if (strcmp(k, "--job") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &o->cl.job_id,
                                 &o->cl.job_gen);
    } else if (strcmp(k, "--target") == 0) {
        ok = pbx_peer_parse_pair(v, UINT64_MAX, UINT32_MAX, &o->cl.pid,
                                 &o->cl.pgen);
    } else if (strcmp(k, "--request") == 0 || strcmp(k, "--grant") == 0) {
        ok = pbx_peer_parse_pair(v, UINT32_MAX, UINT32_MAX, &o->a, &o->b);
        o->have_pair = true;
    } else if (strcmp(k, "--session") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &o->cl.session);
    } else if (strcmp(k, "--invocation") == 0) {
        ok = pbx_peer_parse_u64(v, UINT64_MAX, &o->invocation);
    } else if (strcmp(k, "--realm") == 0 || strcmp(k, "--slot") == 0) {
        ok = pbx_peer_parse_u64(v, UINT32_MAX,
                                strcmp(k, "--realm") == 0 ? &o->cl.realm
                                                          : &o->cl.slot);
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

/* Sets the defaults: a routine one-shot install request of session 1,
 * claiming no job, entry or target (launchd fills them in). */
static void client_defaults(client_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->public_fd = -1;
    o->scope_fd = -1;
    o->cl.session = 1;
    o->cl.entry = "";
    o->mode = PBX_IPC_MODE_INSTALL;
    o->urgency = PBX_IPC_URGENCY_ROUTINE;
    o->lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    o->label = "";
}

/* Takes the claims' defaults from what launchd put in the environment of
 * a job it launched (PBX_JOB=ID:GEN, PBX_ENTRY, PBX_TARGET=PID:GEN,
 * PBX_SESSION, PBX_REALM); false with a message when one is malformed. */
static bool client_env(client_opts *o)
{
    return pbx_app_claims_env(&o->cl, "pbx-client");
}

/* With no --control, --public or their -fd forms: the job connection in
 * PBX_LAUNCHD_FD; false with a message when there is none. */
static bool client_connection(client_opts *o)
{
    if (o->public_fd >= 0) {
        return true;
    }
    const char *v = getenv("PBX_LAUNCHD_FD");
    if (v == NULL) {
        pbx_peer_log("pbx-client", "need --control PATH (pbx-launchd serve "
                                   "--control), --control-fd N, or "
                                   "PBX_LAUNCHD_FD (a job launchd launched)");
        return false;
    }
    o->public_fd = pbx_peer_io_fd_arg(v);
    if (o->public_fd < 0) {
        pbx_peer_log("pbx-client",
                     "PBX_LAUNCHD_FD '%s' is not an open "
                     "descriptor",
                     v);
        return false;
    }
    return true;
}

/* The usage text --help prints (docs/HOST.md says more). */
static const char client_usage[] =
    "usage: pbx-client request [CONNECTION] (--scope PATH | --scope-fd N)\n"
    "           --selector S --op OP --class CLASS --lifetime L\n"
    "           [--mode install|runtime-reply] [--urgency U] [--job ID:GEN]\n"
    "           [--session N] [--realm N] [--entry TEXT] [--label TEXT]\n"
    "           [--target PID:GEN] [--slot N] [--invocation N]\n"
    "           [--wait-ms N] [--verify-object ROOT]\n"
    "           [--then consume [--repeat N] | --then hang-up |\n"
    "            --then hold | --then cancel | --then cancel-session]\n"
    "       pbx-client cancel [CONNECTION] (--request I:G |\n"
    "           --job ID:GEN --session N)\n"
    "       pbx-client consume [CONNECTION] --grant I:G\n"
    "       pbx-client --help\n"
    "CONNECTION: --control PATH | --control-fd N (launchd's control\n"
    "socket); without one, the descriptor in PBX_LAUNCHD_FD (a job\n"
    "launchd launched). --job, --entry, --target, --session and --realm\n"
    "default to PBX_JOB, PBX_ENTRY, PBX_TARGET, PBX_SESSION and PBX_REALM;\n"
    "without them job, entry, target and realm are left for launchd to\n"
    "fill in, and the session claimed is 1.\n"
    "--wait-ms N bounds the wait for the decision (0, the default: none);\n"
    "on expiry the request is cancelled.\n"
    "Exit: 0 approved or accepted, 3 denied, cancelled or not found,\n"
    "1 failure or mismatch, 2 usage error.\n";

/* Names the first word in an option position of argv (argv[1] is the
 * command) that is not one of client_option's names, on one line; false
 * then. The list is client_option's; an option added there goes here. */
static bool client_known_options(int argc, char **argv)
{
    static const char *const known[] = {
        "--class",     "--control",       "--control-fd", "--entry",
        "--grant",     "--invocation",    "--job",        "--label",
        "--lifetime",  "--mode",          "--op",         "--public",
        "--public-fd", "--ready-fd",      "--realm",      "--repeat",
        "--request",   "--scope",         "--scope-fd",   "--selector",
        "--session",   "--slot",          "--target",     "--then",
        "--urgency",   "--verify-object", "--wait-ms"};
    for (int i = 2; i < argc; i += 2) {
        bool found = false;
        for (size_t j = 0; j < PBX_ARRAY_LEN(known); j++) {
            found = found || strcmp(argv[i], known[j]) == 0;
        }
        if (!found) {
            pbx_peer_log("pbx-client",
                         "unknown option '%s' (try 'pbx-client --help')",
                         argv[i]);
            return false;
        }
    }
    return true;
}

int main(int argc, char **argv)
{
    static client_opts o;
    client_defaults(&o);
    for (int i = 1; i < argc; i += i == 1 ? 1 : 2) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            (void)fputs(client_usage, stdout);
            return 0;
        }
    }
    const char *cmd = argc > 1 ? argv[1] : "";
    if (!client_known_options(argc, argv)) {
        return 2;
    }
    bool ok = argc >= 2 && (argc % 2) == 0 && client_env(&o);
    for (int i = 2; ok && i + 1 < argc; i += 2) {
        errno = 0;
        ok = client_option(&o, argv[i], argv[i + 1]);
    }
    ok = ok && client_connection(&o);
    pbx_app_conn_init(&g_conn, o.public_fd, "pbx-client");
    if (!ok) {
        pbx_peer_log("pbx-client", "usage: pbx-client request|cancel|consume "
                                   "... (pbx-client --help)");
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
