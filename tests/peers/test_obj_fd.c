/*
 * test_obj_fd.c: OPEN on objects of a live pbx-vfsd (pbx_obj_open_fd):
 * the revocable descriptor on vfsd's FUSE mount reads, preads, seeks and
 * stats as the file does; a write grant writes and truncates exactly and
 * nothing else does; after RETIRE, the route's loss or vfsd's death the
 * next access fails with EIO and the holder keeps running; a shared
 * mapping is refused and a private one is cut at RETIRE; the entry's
 * name is one-use and the mount refuses every other process; where FUSE
 * cannot be mounted OPEN answers PBX_E_OBJ_NO_REVOCABLE; and
 * --fuse-open-max bounds the descriptors open at once (freed by close and
 * by RETIRE).
 */
#define _GNU_SOURCE

#include "../../ipc/pbx_ipc.h"
#include "../../peers/app/pbx_obj.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"
#include "obj_fd_harness.h"
#include "peers_child.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

PBX_TEST(obj_fd_reads_preads_seeks_and_stats_as_the_file)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "big.bin", PBX_IPC_OPERATION_READ, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0);
    PBX_REQUIRE(fd >= 0);
    static char buf[12000];
    size_t got = 0;
    for (int i = 0; i < 64; i++) {
        ssize_t r = read(fd, buf + got, 3000);
        PBX_REQUIRE(r >= 0);
        if (r == 0) {
            break;
        }
        got += (size_t)r;
    }
    PBX_CHECK_EQ(got, 10000U);
    bool same = true;
    for (size_t i = 0; i < got; i++) {
        same = same && buf[i] == of_byte(i);
    }
    PBX_CHECK(same);
    PBX_CHECK_EQ(pread(fd, buf, 5000, 9000), 1000);
    PBX_CHECK(buf[0] == of_byte(9000));
    PBX_CHECK_EQ(lseek(fd, 0, SEEK_END), 10000);
    PBX_CHECK_EQ(lseek(fd, 20, SEEK_SET), 20);
    PBX_CHECK_EQ(read(fd, buf, 1), 1);
    PBX_CHECK(buf[0] == of_byte(20));
    struct stat sb;
    PBX_CHECK_EQ(fstat(fd, &sb), 0);
    PBX_CHECK(S_ISREG(sb.st_mode) && sb.st_size == 10000);
    /* A read grant's descriptor never writes or truncates. */
    PBX_CHECK_EQ(write(fd, "x", 1), -1);
    PBX_CHECK_EQ(ftruncate(fd, 1), -1);
    /* The holder's other modes are refused, and nothing is handed over. */
    int no = 7;
    PBX_CHECK_EQ(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_WRITE, &no),
                 PBX_E_OBJ_READ_ONLY);
    PBX_CHECK_EQ(no, -1);
    PBX_CHECK_EQ(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_RDWR, &no),
                 PBX_E_OBJ_READ_ONLY);
    PBX_CHECK_EQ(pbx_obj_open_fd(obj, 0U, &no), PBX_E_OBJ_ARG);
    PBX_CHECK_EQ(no, -1);
    (void)close(fd);
    (void)close(obj);
    of_down(&t);
}

PBX_TEST(obj_fd_write_grant_writes_exactly)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "w.txt", PBX_IPC_OPERATION_WRITE, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_WRITE, &fd) == 0);
    PBX_CHECK_EQ(pwrite(fd, "AB", 2, 1), 2);
    char p[512];
    char text[64];
    (void)snprintf(p, sizeof(p), "%s/w.txt", t.dir);
    PBX_CHECK_EQ(tp_read_file(p, text, sizeof(text)), 4);
    PBX_CHECK(strcmp(text, "0AB3") == 0);
    PBX_CHECK_EQ(ftruncate(fd, 2), 0);
    PBX_CHECK_EQ(tp_read_file(p, text, sizeof(text)), 2);
    PBX_CHECK(strcmp(text, "0A") == 0);
    /* A mode 2 descriptor is write-only: it does not read. */
    PBX_CHECK_EQ(read(fd, text, 1), -1);
    (void)close(fd);
    (void)close(obj);
    of_down(&t);
}

/* Issue 21: an O_RDWR open is one write request, so OPEN mode 3 on a
 * write grant gives a descriptor that reads, seeks, writes and truncates
 * the very file; a read grant still refuses mode 3. */
PBX_TEST(obj_fd_rdwr_open_of_a_write_grant_reads_and_writes)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "w.txt", PBX_IPC_OPERATION_WRITE, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_RDWR, &fd) == 0);
    char b[16];
    memset(b, 0, sizeof(b));
    PBX_CHECK_EQ(read(fd, b, 2), 2);
    PBX_CHECK(memcmp(b, "01", 2U) == 0);
    PBX_CHECK_EQ(lseek(fd, 1, SEEK_SET), 1);
    PBX_CHECK_EQ(write(fd, "AB", 2), 2);
    PBX_CHECK_EQ(pread(fd, b, 4, 0), 4);
    PBX_CHECK(memcmp(b, "0AB3", 4U) == 0);
    char p[512];
    char text[64];
    (void)snprintf(p, sizeof(p), "%s/w.txt", t.dir);
    PBX_CHECK_EQ(tp_read_file(p, text, sizeof(text)), 4);
    PBX_CHECK(strcmp(text, "0AB3") == 0);
    PBX_CHECK_EQ(ftruncate(fd, 3), 0);
    PBX_CHECK_EQ(tp_read_file(p, text, sizeof(text)), 3);
    PBX_CHECK(strcmp(text, "0AB") == 0);
    (void)close(fd);
    (void)close(obj);
    int ro = of_obj(&t, "w.txt", PBX_IPC_OPERATION_READ, &rep);
    int no = 7;
    PBX_CHECK_EQ(pbx_obj_open_fd(ro, PBX_PEER_VFS_MODE_RDWR, &no),
                 PBX_E_OBJ_READ_ONLY);
    PBX_CHECK_EQ(no, -1);
    (void)close(ro);
    of_down(&t);
}

PBX_TEST(obj_fd_retire_fails_the_next_access_with_eio)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0);
    char b[8];
    PBX_CHECK_EQ(read(fd, b, 2), 2);
    of_retire(&t, &rep);
    /* This process is the holder: it gets EIO and keeps running. */
    PBX_CHECK(of_read_eio(fd));
    errno = 0;
    PBX_CHECK_EQ(pread(fd, b, 2, 0), -1);
    PBX_CHECK_EQ(errno, EIO);
    struct stat sb;
    errno = 0;
    PBX_CHECK_EQ(fstat(fd, &sb), -1);
    PBX_CHECK_EQ(errno, EIO);
    /* A retired object opens nothing more. */
    int no = 7;
    PBX_CHECK(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &no) != 0);
    PBX_CHECK_EQ(no, -1);
    (void)close(fd);
    (void)close(obj);
    of_down(&t);
}

PBX_TEST(obj_fd_route_loss_fails_the_next_access_with_eio)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0);
    /* The holder closes its object connection: the descriptor stays. */
    (void)close(obj);
    char b[8];
    PBX_CHECK_EQ(read(fd, b, 2), 2);
    /* powerboxd's route closes: vfsd retires what it minted, and the
     * hang-up of a second object shows it has. */
    int other = of_obj(&t, "w.txt", PBX_IPC_OPERATION_READ, &rep);
    (void)close(t.route);
    t.route = -1;
    PBX_CHECK(tp_hung_up(other, 3000));
    PBX_CHECK(of_read_eio(fd));
    (void)close(other);
    (void)close(fd);
    of_down(&t);
}

PBX_TEST(obj_fd_vfsd_death_fails_the_next_access_with_eio)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0);
    char b[8];
    PBX_CHECK_EQ(pread(fd, b, 2, 0), 2);
    PBX_REQUIRE(kill(t.pid, SIGKILL) == 0);
    int status = 0;
    PBX_REQUIRE(waitpid(t.pid, &status, 0) == t.pid);
    t.pid = -1;
    PBX_CHECK(of_read_eio(fd));
    (void)close(fd);
    (void)close(obj);
    of_down(&t);
}

PBX_TEST(obj_fd_mmap_shared_refused_private_cut_at_retire)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "big.bin", PBX_IPC_OPERATION_READ, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0);
    PBX_CHECK(mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED);
    void *map = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);
    PBX_REQUIRE(map != MAP_FAILED);
    volatile const char *m = map;
    PBX_CHECK(m[0] == of_byte(0) && m[100] == of_byte(100));
    of_retire(&t, &rep);
    /* The mapped page was dropped at RETIRE: touching it again reaches
     * vfsd, which refuses, and the kernel reports it as SIGBUS. */
    pid_t c = fork();
    PBX_REQUIRE(c >= 0);
    if (c == 0) {
        _exit(m[100] == of_byte(100) ? 0 : 3);
    }
    int status = 0;
    PBX_REQUIRE(waitpid(c, &status, 0) == c);
    PBX_CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS);
    (void)munmap(map, 4096);
    (void)close(fd);
    (void)close(obj);
    of_down(&t);
}

PBX_TEST(obj_fd_name_is_one_use_and_the_mount_refuses_others)
{
    static of t;
    of_up(&t, NULL);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int fd = -1;
    PBX_REQUIRE(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd) == 0);
    char link[64];
    char path[512];
    (void)snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof(path) - 1U);
    PBX_REQUIRE(n > 0);
    path[n] = '\0';
    /* The name is 128 random bits in hex. */
    const char *slash = strrchr(path, '/');
    PBX_REQUIRE(slash != NULL);
    const char *name = slash != NULL ? slash + 1 : path;
    PBX_CHECK_EQ(strlen(name), 32U);
    PBX_CHECK_EQ(strspn(name, "0123456789abcdef"), 32U);
    /* Reopening it fails (used once, and nobody but vfsd looks up). */
    PBX_CHECK_EQ(open(path, O_RDONLY | O_CLOEXEC), -1);
    /* Neither the mount nor a path above it is listed. */
    char dir[512];
    (void)snprintf(dir, sizeof(dir), "%.*s", (int)(name - 1 - path), path);
    PBX_CHECK(opendir(dir) == NULL);
    char again[600];
    (void)snprintf(again, sizeof(again), "%s/../%s", dir, name);
    PBX_CHECK_EQ(open(again, O_RDONLY | O_CLOEXEC), -1);
    /* The descriptor handed out still reads. */
    char b[8];
    PBX_CHECK_EQ(pread(fd, b, 5, 0), 5);
    (void)close(fd);
    (void)close(obj);
    of_down(&t);
}

/* The path of vfsd's log (tp_spawn's). */
static void of_log_path(char *p, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    (void)snprintf(p, cap, "%s/pbx-peer-vfsd.log", tmp != NULL ? tmp : "/tmp");
}

/* The size of vfsd's log now. */
static long of_log_size(void)
{
    char p[512];
    struct stat sb;
    of_log_path(p, sizeof(p));
    return stat(p, &sb) == 0 ? (long)sb.st_size : 0L;
}

/* Whether vfsd's log holds what after offset (the log is shared by every
 * test's vfsd). */
static bool of_logged_since(long offset, const char *what)
{
    static char buf[65536];
    char p[512];
    of_log_path(p, sizeof(p));
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    ssize_t n = pread(fd, buf, sizeof(buf) - 1U, (off_t)offset);
    (void)close(fd);
    buf[n > 0 ? n : 0] = '\0';
    return strstr(buf, what) != NULL;
}

PBX_TEST(obj_fd_without_fuse_answers_no_revocable_descriptors)
{
    static of t;
    const char *extra[] = {"--fuse-dir", "/proc/pbx-no-such-dir/mnt", NULL};
    long mark = of_log_size();
    of_up(&t, extra);
    pbx_ipc_resolve_reply rep;
    int obj = of_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, &rep);
    int fd = 7;
    PBX_CHECK_EQ(pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, &fd),
                 PBX_E_OBJ_NO_REVOCABLE);
    PBX_CHECK_EQ(fd, -1);
    PBX_CHECK(strstr(pbx_obj_strerror(PBX_E_OBJ_NO_REVOCABLE),
                     "no revocable descriptors") != NULL);
    /* The object itself still serves its calls. */
    char b[8];
    size_t got = 0;
    PBX_CHECK_EQ(pbx_obj_read(obj, 0, b, 5, &got), 0);
    /* vfsd said why at its start (before it was ready). */
    PBX_CHECK(of_logged_since(
        mark, "FUSE unavailable at /proc/pbx-no-such-dir/mnt: No such file"));
    (void)close(obj);
    of_down(&t);
}

PBX_TEST(obj_fd_open_bound_freed_by_close_and_retire)
{
    static of t;
    const char *extra[] = {"--fuse-open-max", "1", NULL};
    of_up(&t, extra);
    pbx_ipc_resolve_reply ra;
    pbx_ipc_resolve_reply rb;
    int a = of_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, &ra);
    int b = of_obj(&t, "big.bin", PBX_IPC_OPERATION_READ, &rb);
    int fa = -1;
    int fb = 7;
    PBX_REQUIRE(pbx_obj_open_fd(a, PBX_PEER_VFS_MODE_READ, &fa) == 0);
    /* The one row is taken: a second OPEN is busy, nothing handed. */
    PBX_CHECK_EQ(pbx_obj_open_fd(b, PBX_PEER_VFS_MODE_READ, &fb),
                 PBX_E_PEER_BUSY);
    PBX_CHECK_EQ(fb, -1);
    /* Closing the descriptor frees it (the server tells vfsd; wait for
     * that, bounded). */
    (void)close(fa);
    int st = -1;
    for (int i = 0; i < 300 && st != 0; i++) {
        st = pbx_obj_open_fd(b, PBX_PEER_VFS_MODE_READ, &fb);
        if (st != 0) {
            PBX_CHECK_EQ(st, PBX_E_PEER_BUSY);
            tp_sleep_ms(10);
        }
    }
    PBX_REQUIRE(st == 0);
    /* RETIRE frees it at once. */
    of_retire(&t, &rb);
    PBX_CHECK(of_read_eio(fb));
    PBX_CHECK_EQ(pbx_obj_open_fd(a, PBX_PEER_VFS_MODE_READ, &fa), 0);
    char c[8];
    PBX_CHECK_EQ(pread(fa, c, 5, 0), 5);
    PBX_CHECK(memcmp(c, "hello", 5) == 0);
    (void)close(fa);
    (void)close(fb);
    (void)close(a);
    (void)close(b);
    of_down(&t);
}

PBX_TEST(obj_fd_open_max_usage_errors)
{
    const char *d = tp_tmpdir();
    static const char *const bad[] = {"0", "65537", "x"};
    for (size_t i = 0; i < PBX_ARRAY_LEN(bad); i++) {
        char out[4096];
        char err[4096];
        const char *args[] = {"--root", d, "--fuse-open-max", bad[i], NULL};
        PBX_CHECK_EQ(tp_cli("vfsd", args, out, err, sizeof(err)), 2);
        char want[64];
        (void)snprintf(want, sizeof(want), "--fuse-open-max '%s'", bad[i]);
        PBX_CHECK(strstr(err, want) != NULL);
    }
}
