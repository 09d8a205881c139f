/*
 * launchd.c: the reference launchd for the Linux host, in two commands.
 *
 *   pbx-launchd serve (--wake PATH | --wake-fd N) [--wake-log PATH]
 *                     [--ready-fd N]
 *       receives powerboxd's authority-free WAKE datagrams (SOCK_DGRAM;
 *       any descriptor that arrives with one is deleted and reported),
 *       and appends "wake request I.G job J.G" per valid WAKE to the log.
 *   pbx-launchd expire (--public PATH | --public-fd N) --job ID:GEN
 *                      [--invocation N]
 *       sends EXPIRE for an invocation (with --invocation) or a whole job
 *       and prints "expire=accepted".
 *
 * See docs/HOST.md for what is not done yet (the runtime-reply broker).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"

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

/* serve: receive WAKE datagrams until killed. */
static int launchd_serve(int argc, char **argv)
{
    int fd = -1;
    int ready = -1;
    FILE *log = NULL;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *k = argv[i];
        const char *v = argv[i + 1];
        if (strcmp(k, "--wake") == 0) {
            fd = pbx_peer_io_listen(v, SOCK_DGRAM);
        } else if (strcmp(k, "--wake-fd") == 0) {
            fd = pbx_peer_io_fd_arg(v);
        } else if (strcmp(k, "--wake-log") == 0) {
            log = fopen(v, "ae");
        } else if (strcmp(k, "--ready-fd") == 0) {
            ready = pbx_peer_io_fd_arg(v);
        }
    }
    if (fd < 0 || (argc % 2) != 0) {
        pbx_peer_log("launchd", "usage: pbx-launchd serve (--wake PATH | "
                                "--wake-fd N) [--wake-log PATH]");
        return 2;
    }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    pbx_peer_log("launchd", "ready");
    pbx_peer_io_ready(ready);
    for (;;) {
        if (!launchd_wake(fd, log)) {
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
        if (strcmp(k, "--public") == 0) {
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
        pbx_peer_log("launchd", "usage: pbx-launchd expire (--public PATH | "
                                "--public-fd N) --job ID:GEN "
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
