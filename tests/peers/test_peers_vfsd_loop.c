/*
 * test_peers_vfsd_loop.c: vfsd's event loop (vfsd_loop.c). Every
 * descriptor sits in one epoll set tagged with its table index; removing
 * a connection moves the last one into its row, so the moved one must be
 * re-tagged or its events would name a row that no longer exists (and it
 * would never be served again). Objects are tagged with their row and
 * generation: many live at once are each served on their own row.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"
#include "vfsd_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Scopes taken from one listener: the first is closed, which moves the
 * last into its row of vfsd's connection table. */
#define TL_SCOPES 4

/* Starts vfsd on dir with a scope listener and a route pair we made;
 * returns its pid and sets *route and sock (the listener's path). */
static pid_t tl_up(const char *d, int *route, char *sock, size_t cap)
{
    char arg[600];
    (void)snprintf(arg, sizeof(arg), "%s/scope.sock", d);
    int rp[2];
    PBX_REQUIRE(tp_seqpair(rp));
    char rarg[32];
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--root",     d,    "--scope", arg,
                          "--route-fd", rarg, NULL};
    pid_t pid = tp_spawn("vfsd", args, &rp[1], 1U, -1);
    (void)close(rp[1]);
    PBX_REQUIRE(pid > 0);
    *route = rp[0];
    (void)snprintf(sock, cap, "%s", arg);
    return pid;
}

PBX_TEST(peers_vfsd_loop_moved_connection_still_served)
{
    const char *d = tp_tmpdir();
    tv_file(d, "f");
    int route = -1;
    char sock[600];
    pid_t pid = tl_up(d, &route, sock, sizeof(sock));
    int fd[TL_SCOPES];
    uint64_t id[TL_SCOPES];
    fd[0] = -1;
    for (int i = 0; i < 100 && fd[0] < 0; i++) {
        fd[0] = pbx_peer_io_scope_acquire(sock, 3000, &id[0]);
        if (fd[0] < 0) {
            (void)usleep(20000);
        }
    }
    PBX_REQUIRE(fd[0] >= 0);
    for (int i = 1; i < TL_SCOPES; i++) {
        fd[i] = pbx_peer_io_scope_acquire(sock, 3000, &id[i]);
        PBX_REQUIRE(fd[i] >= 0);
    }
    static pbx_peer_msg m;
    pbx_ipc_resolve_reply rep;
    /* A RESOLVE answered on the first scope: vfsd is done with every
     * hand-out before it (each accepted connection closed). It names a
     * missing file, so no object (with descriptors of its own) is made. */
    PBX_REQUIRE(tv_resolve(fd[0], route, "missing", PBX_IPC_OPERATION_READ,
                           PBX_IPC_CLASS_FILE, &rep, &m) == PBX_OK);
    pbx_peer_io_close_all(m.fds, m.nfds);
    /* vfsd sees the first scope's end and drops its row: the last scope
     * (the route is row 0) moves into it. Wait until it is closed. */
    int base = tp_fd_count(pid);
    (void)close(fd[0]);
    PBX_REQUIRE(tp_fd_settle(pid, base - 1, 3000) == base - 1);
    for (int k = TL_SCOPES - 1; k >= 1; k--) {
        memset(&rep, 0, sizeof(rep));
        PBX_CHECK_EQ(tv_resolve(fd[k], route, "f", PBX_IPC_OPERATION_READ,
                                PBX_IPC_CLASS_FILE, &rep, &m),
                     PBX_OK);
        PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_FOUND);
        PBX_CHECK_EQ(rep.scope_id, id[k]);
        pbx_peer_io_close_all(m.fds, m.nfds);
    }
    for (int k = 1; k < TL_SCOPES; k++) {
        (void)close(fd[k]);
    }
    (void)close(route);
    (void)tp_stop(pid);
}

/* Whether vfsd's epoll set (the one eventpoll descriptor of pid) holds a
 * registration for descriptor number fd: /proc/PID/fdinfo lists each as
 * "tfd: N". -1 when the set cannot be read. */
static int tl_registered(pid_t pid, int fd)
{
    char path[128];
    char target[64];
    for (int e = 0; e < 1024; e++) {
        (void)snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)pid, e);
        ssize_t n = readlink(path, target, sizeof(target) - 1U);
        if (n <= 0) {
            continue;
        }
        target[n] = '\0';
        if (strcmp(target, "anon_inode:[eventpoll]") != 0) {
            continue;
        }
        (void)snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", (int)pid, e);
        FILE *f = fopen(path, "r");
        if (f == NULL) {
            return -1;
        }
        char line[256];
        int found = 0;
        int lines = 0;
        while (lines++ < 4096 && fgets(line, sizeof(line), f) != NULL) {
            /* fdinfo's registration lines read "tfd: N events: ...". */
            if (strncmp(line, "tfd:", 4) == 0) {
                char *end = NULL;
                long t = strtol(line + 4, &end, 10);
                if (end != line + 4 && t == (long)fd) {
                    found = 1;
                }
            }
        }
        (void)fclose(f);
        return found;
    }
    return -1;
}

PBX_TEST(peers_vfsd_loop_attach_end_leaves_no_registration)
{
    const char *d = tp_tmpdir();
    int sv[2];
    PBX_REQUIRE(tp_seqpair(sv));
    /* A copy of vfsd's end lives on here, as a supervisor's might: closing
     * vfsd's descriptor alone does not take it out of the epoll set. */
    int copy = dup(sv[1]);
    PBX_REQUIRE(copy >= 0);
    char aarg[32];
    (void)snprintf(aarg, sizeof(aarg), "%d", sv[1]);
    const char *args[] = {"--root", d, "--attach-fd", aarg, NULL};
    pid_t pid = tp_spawn("vfsd", args, &sv[1], 1U, -1);
    (void)close(sv[1]);
    PBX_REQUIRE(pid > 0);
    PBX_CHECK_EQ(tl_registered(pid, sv[1]), 1);
    /* The supervisor's end goes: vfsd closes its attach descriptor and
     * serves on; its stale registration must be gone within 3 s. */
    (void)close(sv[0]);
    int reg = 1;
    for (int i = 0; i < 150 && reg != 0; i++) {
        (void)usleep(20000);
        reg = tl_registered(pid, sv[1]);
    }
    PBX_CHECK_EQ(reg, 0);
    (void)close(copy);
    (void)tp_stop(pid);
}
