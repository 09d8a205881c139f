/*
 * launchd.c: the reference launchd for the Linux host, in two commands.
 *
 *   pbx-launchd serve (--wake PATH | --wake-fd N) [--broker-fd N]
 *                     [--control PATH] [--wake-log PATH] [--ready-fd N]
 *                     [--wake-hold-file PATH]
 *       receives powerboxd's authority-free WAKE datagrams (SOCK_DGRAM;
 *       any descriptor that arrives with one is deleted and reported),
 *       and appends "wake request I.G job J.G" per valid WAKE to the log.
 *       With --wake-hold-file (a test aid, off by default) it does not
 *       read the wake route while PATH exists (checked every
 *       LAUNCHD_HOLD_CHECK_MS), so the route fills as a stalled launchd's
 *       would; control connections are served meanwhile.
 *       With --broker-fd it holds launchd's end of the broker connection
 *       (the other end is powerboxd's startup slot 10, the only place
 *       powerboxd accepts launchd's authority) and relays, one call at a
 *       time, every frame that arrives on a --control connection over
 *       it: BEGIN/SELECTOR/COMMIT (with the scope), DECISION (whose
 *       runtime-reply alias is handed to the caller and not kept),
 *       CONSUME, CANCEL and EXPIRE. The frame goes over and the reply
 *       comes back unchanged, byte for byte (the per-call seq included:
 *       launchd neither sets nor checks it; its own refusals echo the
 *       caller's seq and its own calls carry seq 0).
 *       powerboxd accepts BEGIN (either mode) only over the broker, so
 *       this relay is how every program asks. powerboxd sees every
 *       request as the broker's, so the relay itself enforces ownership:
 *       a connection may drive only the requests it began and the grants
 *       it received in an APPROVED DECISION (anything else is answered
 *       PBX_PEER_E_NOT_YOURS without reaching powerboxd); EXPIRE stays
 *       open, since the control socket (mode 0600) is launchd's own
 *       administrative surface. Per control connection it
 *       remembers the exact request ids it relayed BEGINs for until their
 *       terminal DECISION reply went back; when the connection closes it
 *       sends an exact CANCEL for each over the broker, then collects the
 *       decision so powerboxd can retire the record (all bounded, logged).
 *   pbx-launchd expire (--control PATH | --public PATH | --public-fd N)
 *                      --job ID:GEN [--invocation N]
 *       sends EXPIRE for an invocation (with --invocation) or a whole job
 *       and prints "expire=accepted". Through --control it travels over
 *       the broker; on powerboxd's public endpoint it is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_track.h"

/* Control connections served at once. */
#define LAUNCHD_CONTROL_MAX 16
/* How long one relayed call may wait for powerboxd's reply. */
#define LAUNCHD_BROKER_TIMEOUT_MS 10000
/* DECISION polls per cancelled request after a hang-up, and the pause
 * between them: the cancellation's cleanup runs through vfsd, procd and
 * ttyd, so the decision is CANCELLED only a few peer calls later. */
#define LAUNCHD_COLLECT_TRIES    100
#define LAUNCHD_COLLECT_PAUSE_MS 10
/* How often serve looks for its --wake-hold-file while it exists. */
#define LAUNCHD_HOLD_CHECK_MS 50

/* One control connection and the requests relayed for it that still wait
 * for their terminal DECISION. */
typedef struct launchd_conn {
    int fd;
    pbx_peer_track track;
} launchd_conn;

/* What serve holds: its routes and its control connections. */
typedef struct launchd_srv {
    int wake;
    int broker;
    int control;
    launchd_conn conns[LAUNCHD_CONTROL_MAX];
    int nconns;
    FILE *log;
    const char *hold;
} launchd_srv;

static pbx_peer_msg g_reply;
static pbx_peer_msg g_msg;

/* Logs one received datagram; returns false on a fatal receive error. */
static bool launchd_wake(int fd, FILE *log)
{
    int r = pbx_peer_io_recv_frame(fd, &g_msg);
    if (r == 1) {
        pbx_peer_log("launchd", "empty datagram ignored");
        return true;
    }
    if (r != 0) {
        return errno == EMSGSIZE;
    }
    pbx_ipc_wake w;
    pbx_err e = g_msg.err;
    if (e == PBX_OK) {
        e = pbx_ipc_wake_decode(&g_msg.frame, &w);
    }
    if (g_msg.nfds != 0U) {
        pbx_peer_log("launchd", "WAKE carried %zu descriptor(s); deleted",
                     g_msg.nfds);
        pbx_peer_io_close_all(g_msg.fds, g_msg.nfds);
        e = e == PBX_OK ? PBX_E_IPC_CAP_PARTITION : e;
    }
    if (e != PBX_OK) {
        pbx_peer_log("launchd", "malformed WAKE refused: %s", pbx_err_text(e));
        return true;
    }
    pbx_peer_log("launchd", "wake request %u.%u job %llu.%u",
                 g_msg.frame.request.index, g_msg.frame.request.gen,
                 (unsigned long long)w.job_id, w.job_gen);
    if (log != NULL) {
        (void)fprintf(log, "wake request %u.%u job %llu.%u\n",
                      g_msg.frame.request.index, g_msg.frame.request.gen,
                      (unsigned long long)w.job_id, w.job_gen);
        (void)fflush(log);
    }
    return true;
}

/* Answers a frame from conn without relaying it: closes whatever came
 * with it (and says how many) and replies status st. Returns false when
 * conn failed. */
static bool launchd_refuse(int conn, uint32_t st)
{
    size_t closed = g_msg.nfds;
    pbx_peer_io_close_all(g_msg.fds, g_msg.nfds);
    if (g_msg.err == PBX_OK) {
        pbx_peer_log("launchd",
                     "relay refused: op 0x%04x request %u.%u: %s; %zu "
                     "descriptor(s) closed",
                     g_msg.frame.op, g_msg.frame.request.index,
                     g_msg.frame.request.gen, pbx_peer_status_text(st), closed);
    } else {
        pbx_peer_log("launchd", "relay refused: %s; %zu descriptor(s) closed",
                     pbx_peer_status_text(st), closed);
    }
    return pbx_peer_io_reply_status(conn, &g_msg, st) == 0;
}

/* Relays one frame from control connection c over the broker and sends
 * powerboxd's reply back with whatever capability it carried; the relay
 * keeps no copy of the scope or the alias, and notes in c's table which
 * requests it began and which got their terminal DECISION, and which
 * grants it received. A frame naming a request or grant that c does not
 * own is answered by launchd (PBX_PEER_E_NOT_YOURS) and never relayed.
 * Returns false when c is finished (hang-up or failure) and must be
 * closed. */
static bool launchd_relay(const launchd_srv *srv, launchd_conn *c)
{
    int r = pbx_peer_io_recv_frame(c->fd, &g_msg);
    if (r != 0) {
        return false;
    }
    if (g_msg.err != PBX_OK || g_msg.nfds > 1U || srv->broker < 0) {
        return launchd_refuse(c->fd, g_msg.err != PBX_OK
                                         ? (uint32_t)g_msg.err
                                         : (uint32_t)PBX_PEER_E_ROUTE);
    }
    /* powerboxd sees every frame from here as the broker's, so only this
     * table can keep one program from driving another's request or grant:
     * anything it does not admit never reaches powerboxd. */
    uint16_t st = pbx_peer_track_admit(&c->track, &g_msg.frame);
    if (st != 0U) {
        return launchd_refuse(c->fd, st);
    }
    int cap = g_msg.nfds == 1U ? g_msg.fds[0] : -1;
    r = pbx_peer_io_call(srv->broker, g_msg.buf, g_msg.len, cap, &g_reply,
                         LAUNCHD_BROKER_TIMEOUT_MS);
    pbx_peer_io_close_all(g_msg.fds, g_msg.nfds);
    if (r != 0) {
        pbx_peer_log("launchd", "broker call failed: %s",
                     r == 1 ? "powerboxd closed the broker" : strerror(errno));
        return pbx_peer_io_reply_status(c->fd, &g_msg, PBX_PEER_E_ROUTE) == 0;
    }
    int alias = g_reply.nfds == 1U ? g_reply.fds[0] : -1;
    pbx_peer_log("launchd", "broker: op 0x%04x request %u.%u status 0x%04x%s",
                 g_msg.frame.op,
                 g_reply.err == PBX_OK ? g_reply.frame.request.index
                                       : g_msg.frame.request.index,
                 g_reply.err == PBX_OK ? g_reply.frame.request.gen
                                       : g_msg.frame.request.gen,
                 g_reply.err == PBX_OK ? g_reply.frame.status : 0U,
                 alias >= 0 ? ", alias handed to the caller" : "");
    if (g_reply.err == PBX_OK) {
        (void)pbx_peer_track_relayed(&c->track, &g_msg.frame, &g_reply.frame);
    }
    bool ok = pbx_peer_io_send(c->fd, g_reply.buf, g_reply.len, alias) == 0;
    pbx_peer_io_close_all(g_reply.fds, g_reply.nfds);
    return ok;
}

/* One broker call of the len bytes in buf on behalf of launchd itself;
 * returns the reply status, or -1 when powerboxd did not answer. Any
 * descriptor in the reply (a runtime-reply alias nobody will use now) is
 * deleted at once. */
static long launchd_own_call(const launchd_srv *srv, const uint8_t *buf,
                             size_t len)
{
    int r = pbx_peer_io_call(srv->broker, buf, len, -1, &g_reply,
                             LAUNCHD_BROKER_TIMEOUT_MS);
    if (r != 0) {
        return -1;
    }
    pbx_peer_io_close_all(g_reply.fds, g_reply.nfds);
    return g_reply.err == PBX_OK ? (long)g_reply.frame.status : -1;
}

/* Asks DECISION for id until it is no longer PENDING (bounded) so that
 * powerboxd can retire the record; returns the outcome name. */
static const char *launchd_collect(const launchd_srv *srv, pbx_ipc_id id)
{
    uint8_t buf[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    if (pbx_ipc_empty_encode(PBX_IPC_OP_DECISION, id, buf, sizeof(buf), &n) !=
        PBX_OK) {
        return "unasked";
    }
    for (int i = 0; i < LAUNCHD_COLLECT_TRIES; i++) {
        long st = launchd_own_call(srv, buf, n);
        pbx_ipc_decision d;
        if (st != 0 ||
            pbx_ipc_decision_reply_decode(&g_reply.frame, &d) != PBX_OK) {
            return st < 0 ? "no answer" : pbx_peer_status_text((uint32_t)st);
        }
        if (d.outcome != (uint8_t)PBX_IPC_OUTCOME_PENDING) {
            return pbx_peer_name_of(PBX_PEER_NAMES_OUTCOME, d.outcome);
        }
        struct timespec ts = {0, LAUNCHD_COLLECT_PAUSE_MS * 1000000L};
        (void)nanosleep(&ts, NULL);
    }
    return "still pending";
}

/* The program behind c hung up: cancels, by exact request id over the
 * broker, every request it began that has no terminal DECISION yet, and
 * collects each decision. A request that already ended answers CANCEL
 * with an error; that is logged and the decision is collected anyway. */
static void launchd_hangup(const launchd_srv *srv, launchd_conn *c)
{
    uint32_t count = c->track.count;
    for (uint32_t i = 0; i < count && i < PBX_PEER_TRACK_MAX; i++) {
        pbx_ipc_id id = c->track.reqs[i].id;
        pbx_ipc_cancel rec;
        uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_IPC_CANCEL_BYTES];
        size_t n = 0;
        memset(&rec, 0, sizeof(rec));
        rec.request = id;
        long st = pbx_ipc_cancel_encode(&rec, buf, sizeof(buf), &n) == PBX_OK
                      ? launchd_own_call(srv, buf, n)
                      : -1;
        pbx_peer_log("launchd", "hang-up: CANCEL request %u.%u %s, decision %s",
                     id.index, id.gen,
                     st < 0    ? "not answered"
                     : st == 0 ? "accepted"
                               : pbx_peer_status_text((uint32_t)st),
                     srv->broker >= 0 ? launchd_collect(srv, id) : "unasked");
    }
    pbx_peer_track_init(&c->track);
}

/* Accepts one control connection (or refuses it when all are in use). */
static void launchd_accept(launchd_srv *srv)
{
    int c = accept(srv->control, NULL, NULL);
    if (c < 0) {
        return;
    }
    (void)fcntl(c, F_SETFD, FD_CLOEXEC);
    if (srv->nconns >= LAUNCHD_CONTROL_MAX) {
        (void)close(c);
        return;
    }
    srv->conns[srv->nconns].fd = c;
    pbx_peer_track_init(&srv->conns[srv->nconns].track);
    srv->nconns++;
}

/* One poll round over the wake route, the control socket and its
 * connections; returns false on a fatal wake receive error. */
static bool launchd_round(launchd_srv *srv)
{
    struct pollfd p[2 + LAUNCHD_CONTROL_MAX];
    int n = 0;
    bool held = srv->hold != NULL && access(srv->hold, F_OK) == 0;
    /* A negative fd is skipped by poll: the wake route is left unread. */
    p[n++] = (struct pollfd){held ? -1 : srv->wake, POLLIN, 0};
    p[n++] = (struct pollfd){srv->control, POLLIN, 0};
    for (int i = 0; i < srv->nconns; i++) {
        p[n++] = (struct pollfd){srv->conns[i].fd, POLLIN, 0};
    }
    if (poll(p, (nfds_t)n, held ? LAUNCHD_HOLD_CHECK_MS : -1) < 0) {
        return errno == EINTR;
    }
    if (p[0].revents != 0 && !launchd_wake(srv->wake, srv->log)) {
        return false;
    }
    if (p[1].revents != 0 && srv->control >= 0) {
        launchd_accept(srv);
    }
    /* Walk backwards so that removing an entry keeps the rest in place. */
    for (int i = n - 3; i >= 0; i--) {
        if (p[2 + i].revents != 0 && !launchd_relay(srv, &srv->conns[i])) {
            (void)close(srv->conns[i].fd);
            launchd_hangup(srv, &srv->conns[i]);
            srv->conns[i] = srv->conns[--srv->nconns];
        }
    }
    return true;
}

/* Parses serve's options into *srv; false on any error. */
static bool launchd_serve_args(int argc, char **argv, launchd_srv *srv,
                               int *ready)
{
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i];
        const char *v = argv[i + 1];
        if (strcmp(k, "--wake") == 0) {
            srv->wake = pbx_peer_io_listen(v, SOCK_DGRAM);
        } else if (strcmp(k, "--wake-fd") == 0) {
            srv->wake = pbx_peer_io_fd_arg(v);
        } else if (strcmp(k, "--broker-fd") == 0) {
            srv->broker = pbx_peer_io_fd_arg(v);
        } else if (strcmp(k, "--control") == 0) {
            srv->control = pbx_peer_io_listen_private(v, SOCK_SEQPACKET);
        } else if (strcmp(k, "--wake-log") == 0) {
            srv->log = fopen(v, "ae");
        } else if (strcmp(k, "--wake-hold-file") == 0) {
            srv->hold = v;
        } else if (strcmp(k, "--ready-fd") == 0) {
            *ready = pbx_peer_io_fd_arg(v);
        } else {
            return false;
        }
    }
    return srv->wake >= 0 && (argc % 2) == 0;
}

/* serve: receive WAKE datagrams and relay broker calls until killed. */
static int launchd_serve(int argc, char **argv)
{
    static launchd_srv srv;
    int ready = -1;
    srv.wake = srv.broker = srv.control = -1;
    if (!launchd_serve_args(argc, argv, &srv, &ready)) {
        pbx_peer_log("launchd", "usage: pbx-launchd serve (--wake PATH | "
                                "--wake-fd N) [--broker-fd N] "
                                "[--control PATH] [--wake-log PATH] "
                                "[--wake-hold-file PATH]");
        return 2;
    }
    int fds[2] = {srv.wake, srv.broker};
    for (int i = 0; i < 2; i++) {
        if (fds[i] >= 0) {
            (void)fcntl(fds[i], F_SETFD, FD_CLOEXEC);
        }
    }
    pbx_peer_log("launchd", "ready%s",
                 srv.broker >= 0 ? " (broker connected)" : "");
    pbx_peer_io_ready(ready);
    for (;;) {
        if (!launchd_round(&srv)) {
            pbx_peer_log("launchd", "wake receive failed: %s", strerror(errno));
            return 1;
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
            *fd = pbx_peer_io_connect(v, SOCK_SEQPACKET);
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
            pbx_peer_log("launchd", "invalid %s '%s'", k, v);
            return false;
        }
    }
    rec->kind = rec->invocation_id != 0U ? PBX_IPC_EXPIRE_INVOCATION
                                         : PBX_IPC_EXPIRE_JOB;
    rec->job_id = job;
    rec->job_gen = (uint32_t)gen;
    return *fd >= 0 && have_job && (argc % 2) == 0;
}

/* expire: one EXPIRE call on powerboxd's public endpoint. */
static int launchd_expire(int argc, char **argv)
{
    int fd = -1;
    pbx_ipc_expire rec;
    memset(&rec, 0, sizeof(rec));
    uint8_t buf[PBX_IPC_HEADER_BYTES + PBX_IPC_EXPIRE_BYTES];
    size_t n = 0;
    if (!launchd_expire_args(argc, argv, &fd, &rec) ||
        pbx_ipc_expire_encode(&rec, buf, sizeof(buf), &n) != PBX_OK) {
        pbx_peer_log("launchd", "usage: pbx-launchd expire (--control PATH "
                                "| --public PATH | --public-fd N) --job "
                                "ID:GEN "
                                "[--invocation N] (generation nonzero)");
        return 2;
    }
    int r = pbx_peer_io_call(fd, buf, n, -1, &g_msg, 10000);
    if (r != 0 || g_msg.err != PBX_OK) {
        pbx_peer_log("launchd", "EXPIRE: %s",
                     r == 0   ? pbx_err_text(g_msg.err)
                     : r == 1 ? "powerboxd closed the connection"
                              : strerror(errno));
        return 1;
    }
    pbx_peer_io_close_all(g_msg.fds, g_msg.nfds);
    if (g_msg.frame.status != 0U ||
        pbx_ipc_empty_decode(&g_msg.frame,
                             PBX_IPC_OP_EXPIRE | PBX_IPC_REPLY_BIT) != PBX_OK) {
        pbx_peer_log("launchd", "EXPIRE refused: %s",
                     pbx_peer_status_text(g_msg.frame.status));
        return 1;
    }
    printf("expire=accepted\n");
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "serve") == 0) {
        return launchd_serve(argc, argv);
    }
    if (argc >= 2 && strcmp(argv[1], "expire") == 0) {
        return launchd_expire(argc, argv);
    }
    pbx_peer_log("launchd", "usage: pbx-launchd serve|expire ...");
    return 2;
}
