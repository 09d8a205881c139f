/*
 * obj_fd_harness.c: what the OPEN tests share (obj_fd_harness.h): a live
 * pbx-vfsd with one scope on a scratch tree, objects resolved through it,
 * RETIRE on its route.
 */
#define _GNU_SOURCE

#include "obj_fd_harness.h"

#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The byte at offset i of big.bin. */
char of_byte(size_t i)
{
    return (char)('a' + (i * 7U) % 26U);
}

/* Writes n bytes to dir/name: text, or big.bin's pattern (text NULL). */
void of_file(const char *dir, const char *name, const char *text, size_t n)
{
    static char buf[1U << 20];
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(fd >= 0 && n <= sizeof(buf));
    for (size_t i = 0; i < n; i++) {
        if (text != NULL) {
            buf[i] = text[i];
        } else {
            buf[i] = of_byte(i);
        }
    }
    PBX_REQUIRE(write(fd, buf, n) == (ssize_t)n);
    (void)close(fd);
}

/* Builds root/pub/{a.txt, big.bin, w.txt} and starts vfsd with a scope on
 * pub, a route made here and extra arguments (NULL-terminated, or
 * NULL). */
void of_up(of *t, const char *const *extra)
{
    const char *d = tp_tmpdir();
    (void)snprintf(t->dir, sizeof(t->dir), "%s/pub", d);
    PBX_REQUIRE(mkdir(t->dir, 0700) == 0);
    of_file(t->dir, "a.txt", "hello\n", 6);
    of_file(t->dir, "big.bin", NULL, 10000);
    of_file(t->dir, "w.txt", "0123", 4);
    int sp[2];
    int rp[2];
    PBX_REQUIRE(tp_seqpair(sp) && tp_seqpair(rp));
    char sarg[32];
    char rarg[32];
    (void)snprintf(sarg, sizeof(sarg), "%d=pub", sp[1]);
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[16] = {"--root",     d,    "--scope-fd", sarg,
                            "--route-fd", rarg, NULL};
    for (size_t i = 0; extra != NULL && extra[i] != NULL && i < 8U; i++) {
        args[6U + i] = extra[i];
        args[7U + i] = NULL;
    }
    int keep[2] = {sp[1], rp[1]};
    t->pid = tp_spawn("vfsd", args, keep, 2, -1);
    (void)close(sp[1]);
    (void)close(rp[1]);
    PBX_REQUIRE(t->pid > 0);
    uint64_t scope_id = 0;
    t->scope = pbx_peer_io_scope_take(sp[0], 3000, &scope_id);
    PBX_REQUIRE(t->scope >= 0);
    (void)close(sp[0]);
    t->route = rp[0];
}

pid_t of_server(pid_t vfsd)
{
    char p[64];
    char buf[128];
    (void)snprintf(p, sizeof(p), "/proc/%d/task/%d/children", (int)vfsd,
                   (int)vfsd);
    if (vfsd <= 0 || tp_read_file(p, buf, sizeof(buf)) <= 0) {
        return -1;
    }
    long pid = strtol(buf, NULL, 10);
    return pid > 0 ? (pid_t)pid : -1;
}

bool of_gone(int pfd, int timeout_ms)
{
    struct pollfd p = {pfd, POLLIN, 0};
    return pfd >= 0 && poll(&p, 1, timeout_ms) == 1;
}

void of_down(of *t)
{
    (void)close(t->scope);
    if (t->route >= 0) {
        (void)close(t->route);
    }
    pid_t srv = of_server(t->pid);
    int pfd = srv > 0 ? (int)syscall(SYS_pidfd_open, srv, 0) : -1;
    if (srv > 0) {
        /* A test that stopped the server and failed before resuming it
         * must not leave vfsd's shutdown waiting on it. */
        (void)kill(srv, SIGCONT);
    }
    if (t->pid > 0) {
        (void)tp_stop(t->pid);
    }
    /* Leftovers: vfsd's FUSE server ends by itself once vfsd is gone (no
     * descriptor on its mount is open any more), and the connection, so
     * its mount, ends with it (bounded wait: it detaches first). */
    if (pfd >= 0) {
        PBX_CHECK(of_gone(pfd, 10000));
        (void)close(pfd);
    }
}

/* Resolves sel for (op, file) through t's scope, which must be FOUND;
 * returns the object and stores its identity in *rep. */
int of_obj(const of *t, const char *sel, uint16_t op,
           pbx_ipc_resolve_reply *rep)
{
    static pbx_peer_msg m;
    pbx_ipc_resolve rq;
    memset(&rq, 0, sizeof(rq));
    rq.operation = op;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.selector = (const uint8_t *)sel;
    rq.selector_len = (uint32_t)strlen(sel);
    PBX_REQUIRE(pbx_sha2_digest(rq.selector, rq.selector_len,
                                rq.selector_digest) == PBX_OK);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    PBX_REQUIRE(pbx_ipc_resolve_encode(id, &rq, buf, sizeof(buf), &n) ==
                PBX_OK);
    /* The answer comes on the route, never on the scope. */
    PBX_REQUIRE(pbx_peer_io_send(t->scope, buf, n, -1) == 0);
    PBX_REQUIRE(tp_readable(t->route, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(t->route, &m) == 0);
    PBX_REQUIRE(m.err == PBX_OK);
    PBX_REQUIRE(pbx_ipc_resolve_reply_decode(&m.frame, rep) == PBX_OK);
    PBX_REQUIRE(rep->result == PBX_IPC_RESOLVE_FOUND && m.nfds == 1U);
    return m.fds[0];
}

/* RETIREs rep's object on t's route; vfsd must acknowledge it. */
void of_retire(const of *t, const pbx_ipc_resolve_reply *rep)
{
    static pbx_peer_msg m;
    pbx_ipc_retire rq = {rep->object, rep->scope_id, PBX_IPC_CLASS_FILE};
    uint8_t fr[128];
    size_t n = 0;
    pbx_ipc_id rid = {3, 9};
    PBX_REQUIRE(pbx_ipc_retire_encode(rid, &rq, fr, sizeof(fr), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_io_call(t->route, fr, n, -1, &m, 3000) == 0);
    PBX_REQUIRE(pbx_le_get16(m.buf + 8) == 0U);
}

/* Whether read(fd) now fails with EIO (the holder keeps running). */
bool of_read_eio(int fd)
{
    char b[16];
    errno = 0;
    return read(fd, b, sizeof(b)) == -1 && errno == EIO;
}
