/*
 * test_obj_fd_cut.c: the revocable descriptor (docs/HOST.md, "Revocable
 * descriptors") against its server's timing and vfsd's death: an OPEN
 * queued while the FUSE server is stopped never stalls vfsd and completes
 * when the server resumes; a private mapping is cut when vfsd dies (every
 * page faults, read or not); a vfsd killed and restarted on the same
 * --fuse-dir leaves no mount behind, and the new one keeps serving.
 */
#define _GNU_SOURCE

#include "../../ipc/pbx_ipc.h"
#include "../../peers/app/pbx_obj.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../runner/pbx_test.h"
#include "obj_fd_harness.h"
#include "peers_child.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* The private mapping of big.bin: three pages (10000 bytes). */
#define OFC_MAP_BYTES ((size_t)3 * 4096U)

/* How many pbx-vfsd mounts /proc/self/mounts lists at exactly path. */
static int ofc_mounts_at(const char *path)
{
    static char buf[1 << 16];
    long n = tp_read_file("/proc/self/mounts", buf, sizeof(buf));
    int count = 0;
    size_t plen = strlen(path);
    for (char *line = n > 0 ? buf : NULL; line != NULL && *line != '\0';) {
        char *end = strchr(line, '\n');
        if (strncmp(line, "pbx-vfsd ", 9U) == 0 &&
            strncmp(line + 9, path, plen) == 0 && line[9U + plen] == ' ') {
            count++;
        }
        line = end != NULL ? end + 1 : NULL;
    }
    return count;
}

/* Waits (bounded, 10 s) until want pbx-vfsd mounts are at path. */
static bool ofc_mounts_settle(const char *path, int want)
{
    for (int i = 0; i < 1000; i++) {
        if (ofc_mounts_at(path) == want) {
            return true;
        }
        tp_sleep_ms(10);
    }
    return false;
}

/* The directory of fd's path on the mount (its mount point). */
static void ofc_mount_of(int fd, char *dir, size_t cap)
{
    char link[64];
    (void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, dir, cap - 1U);
    PBX_REQUIRE(n > 0);
    dir[n] = '\0';
    char *slash = strrchr(dir, '/');
    PBX_REQUIRE(slash != NULL);
    if (slash != NULL) {
        *slash = '\0';
    }
}

/* Whether a child touching the byte at off of map dies of SIGBUS. */
static bool ofc_touch_faults(volatile const char *map, size_t off)
{
    pid_t c = fork();
    if (c == 0) {
        _exit(map[off] == of_byte(off) ? 0 : 3);
    }
    int status = 0;
    if (c < 0 || waitpid(c, &status, 0) != c) {
        return false;
    }
    return WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS;
}

/* F4: vfsd never waits for its FUSE server. With the server stopped, an
 * OPEN that vfsd took (its socket's queue is empty) stays queued while
 * vfsd answers other calls and RESOLVEs; it completes once the server
 * resumes, and its descriptor reads the file. */
PBX_TEST(obj_fd_open_queued_while_the_server_is_stopped)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int a = of_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int b = of_obj(&t, "big.bin", PBX_IPC_OPERATION_READ, &rep);
    pid_t srv = of_server(t.pid);
    PBX_REQUIRE(srv > 0);
    PBX_REQUIRE(tp_stall(srv, true));
    uint8_t call[64];
    size_t n = 0;
    PBX_REQUIRE(pbx_peer_vfs_obj_open_encode(77U, PBX_PEER_VFS_MODE_READ, call,
                                             sizeof(call), &n) == PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send(a, call, n, -1) == 0);
    /* vfsd took the call when the queue it was sent on is empty. */
    int queued = 1;
    for (int i = 0; i < 500 && queued != 0; i++) {
        if (ioctl(a, SIOCOUTQ, &queued) != 0) {
            queued = -1;
        }
        if (queued != 0) {
            tp_sleep_ms(10);
        }
    }
    PBX_CHECK_EQ(queued, 0);
    /* vfsd serves another object and another RESOLVE meanwhile. */
    char buf[16];
    size_t got = 0;
    PBX_CHECK_EQ(pbx_obj_read(b, 0, buf, 5, &got), 0);
    PBX_CHECK(got == 5U && buf[0] == of_byte(0));
    int c = of_obj(&t, "w.txt", PBX_IPC_OPERATION_READ, &rep);
    /* The OPEN has no answer while the server is stopped. */
    PBX_CHECK(!tp_readable(a, 200));
    PBX_REQUIRE(tp_stall(srv, false));
    PBX_REQUIRE(tp_readable(a, 5000));
    static pbx_peer_msg m;
    PBX_REQUIRE(pbx_peer_io_recv_raw(a, &m, 0) == 0);
    uint32_t status = 1;
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_open_reply_decode(m.buf, m.len, m.nfds, 77U, &status),
        PBX_OK);
    PBX_CHECK_EQ(status, 0U);
    PBX_REQUIRE(m.nfds == 1U);
    memset(buf, 0, sizeof(buf));
    PBX_CHECK_EQ(pread(m.fds[0], buf, 6, 0), 6);
    PBX_CHECK(strcmp(buf, "hello\n") == 0);
    (void)close(m.fds[0]);
    (void)close(a);
    (void)close(b);
    (void)close(c);
    of_down(&t);
}

/* F8: vfsd's death cuts a private mapping. The server, whose channel to
 * vfsd ended, revokes every node, drops its pages and only then detaches
 * the mount: once the mount is gone, a page read before the death and a
 * page never read both fault (SIGBUS), and read() is EIO. */
PBX_TEST(obj_fd_private_map_cut_at_vfsd_death)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "big.bin", PBX_IPC_OPERATION_READ, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0);
    char dir[512];
    ofc_mount_of(fd, dir, sizeof(dir));
    PBX_REQUIRE(ofc_mounts_at(dir) == 1);
    void *map = mmap(NULL, OFC_MAP_BYTES, PROT_READ, MAP_PRIVATE, fd, 0);
    PBX_REQUIRE(map != MAP_FAILED);
    volatile const char *mp = map;
    PBX_CHECK(mp[100] == of_byte(100));
    PBX_REQUIRE(kill(t.pid, SIGKILL) == 0);
    int status = 0;
    PBX_REQUIRE(waitpid(t.pid, &status, 0) == t.pid);
    t.pid = -1;
    /* The observable end of the server's cut: its mount is detached. */
    PBX_CHECK(ofc_mounts_settle(dir, 0));
    PBX_CHECK(ofc_touch_faults(mp, 100U));
    PBX_CHECK(ofc_touch_faults(mp, 8200U));
    PBX_CHECK(of_read_eio(fd));
    (void)munmap(map, OFC_MAP_BYTES);
    (void)close(fd);
    (void)close(obj);
    of_down(&t);
}

/* Leftover mounts: vfsd killed while its server is stopped, and a new
 * vfsd mounted on the same --fuse-dir before the old server could react.
 * The old server detaches its own mount (not the new one on top), the
 * new vfsd keeps handing out descriptors that read, and once both are
 * stopped no pbx-vfsd mount is left at the directory. */
PBX_TEST(obj_fd_restart_on_one_fuse_dir_leaves_no_mount)
{
    static of t1;
    static of t2;
    char fuse[300];
    (void)snprintf(fuse, sizeof(fuse), "%s/fuse", tp_tmpdir());
    const char *extra[] = {"--fuse-dir", fuse, NULL};
    of_up(&t1, extra);
    pbx_ipc_resolve_reply rep;
    int o1 = of_obj(&t1, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int f1 = -1;
    PBX_REQUIRE(pbx_obj_open_fd(o1, PBX_PEER_VFS_MODE_READ, &f1) == 0);
    pid_t srv = of_server(t1.pid);
    int pfd = (int)syscall(SYS_pidfd_open, srv, 0);
    PBX_REQUIRE(srv > 0 && pfd >= 0 && tp_stall(srv, true));
    PBX_REQUIRE(kill(t1.pid, SIGKILL) == 0);
    PBX_REQUIRE(waitpid(t1.pid, NULL, 0) == t1.pid);
    t1.pid = -1;
    of_up(&t2, extra);
    PBX_CHECK(tp_stall(srv, false));
    /* The old server ends once its mount is detached and its last
     * descriptor closed. */
    (void)close(f1);
    PBX_CHECK(of_gone(pfd, 10000));
    (void)close(pfd);
    int o2 = of_obj(&t2, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int f2 = -1;
    PBX_CHECK_EQ(pbx_obj_open_fd(o2, PBX_PEER_VFS_MODE_READ, &f2), 0);
    char buf[8];
    PBX_CHECK_EQ(pread(f2, buf, 5, 0), 5);
    PBX_CHECK(memcmp(buf, "hello", 5U) == 0);
    PBX_CHECK_EQ(ofc_mounts_at(fuse), 1);
    if (f2 >= 0) {
        (void)close(f2);
    }
    (void)close(o1);
    (void)close(o2);
    of_down(&t1);
    of_down(&t2);
    PBX_CHECK(ofc_mounts_settle(fuse, 0));
}

/* A close never waits for the FUSE server: the open reply carries
 * FOPEN_NOFLUSH, so closing a revocable descriptor sends no FLUSH. vfsd
 * closes its own copy of every descriptor it hands out, so a close that
 * waited would hold vfsd's event loop for as long as its server is
 * stopped. A child closes its copy while the server is stopped; it must
 * end within 5 s (with a FLUSH it stays in close() until the server
 * resumes). */
PBX_TEST(obj_fd_close_never_waits_for_a_stopped_server)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0);
    pid_t srv = of_server(t.pid);
    PBX_REQUIRE(srv > 0 && tp_stall(srv, true));
    pid_t c = fork();
    PBX_REQUIRE(c >= 0);
    if (c == 0) {
        _exit(close(fd) == 0 ? 0 : 1);
    }
    PBX_CHECK_EQ(tp_wait_exit(c, 5000), 0);
    PBX_REQUIRE(tp_stall(srv, false));
    (void)close(fd);
    (void)close(obj);
    of_down(&t);
}
