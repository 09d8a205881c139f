/*
 * test_obj_live.c: objects of a live pbx-vfsd over real sockets, called
 * through the program-side library (peers/app/pbx_obj.h) and, for what
 * the library never sends, on the raw wire. Every operation an object
 * serves (READ with offsets and chunking, STAT, LIST paged by cookie,
 * WRITE with append), every refusal (operation not granted, write on a
 * read grant, read of a directory, list of a file, offset and cookie past
 * the end, oversized lengths, a call after RETIRE, a call after the route
 * closed), the file opened for the granted access alone, RESOLVE refused
 * to a scope holder that is not the route's process (nothing minted), and
 * pbx-vfsd's -h/--help and usage errors.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/app/pbx_obj.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* A running vfsd with one scope and a route held by this process. */
typedef struct ol {
    pid_t pid;
    int scope;
    uint64_t scope_id;
    int route;
    char dir[256];
} ol;

/* Writes n bytes of text (or a byte pattern when text is NULL) to
 * dir/name. */
static void ol_file(const char *dir, const char *name, const char *text,
                    size_t n)
{
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(fd >= 0);
    for (size_t i = 0; i < n; i++) {
        static const char letters[] = "abcdefghijklmnopqrstuvwxyz";
        const char *c = text != NULL ? &text[i] : &letters[(i * 7U) % 26U];
        PBX_REQUIRE(write(fd, c, 1) == 1);
    }
    (void)close(fd);
}

/* Builds root/pub/{a.txt, big.bin, w.txt, dir/ with 40 entries} and
 * starts vfsd with a scope on pub and a route made here. */
static void ol_up(ol *t)
{
    const char *d = tp_tmpdir();
    char p[512];
    (void)snprintf(t->dir, sizeof(t->dir), "%s/pub", d);
    PBX_REQUIRE(mkdir(t->dir, 0700) == 0);
    ol_file(t->dir, "a.txt", "hello\n", 6);
    ol_file(t->dir, "big.bin", NULL, 10000);
    ol_file(t->dir, "w.txt", "0123", 4);
    (void)snprintf(p, sizeof(p), "%s/dir", t->dir);
    PBX_REQUIRE(mkdir(p, 0700) == 0);
    for (int i = 0; i < 40; i++) {
        char name[64];
        (void)snprintf(name, sizeof(name), "entry-%02d-padding-padding", i);
        ol_file(p, name, "x", 1);
    }
    int sp[2];
    int rp[2];
    PBX_REQUIRE(tp_seqpair(sp) && tp_seqpair(rp));
    char sarg[32];
    char rarg[32];
    (void)snprintf(sarg, sizeof(sarg), "%d=pub", sp[1]);
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--root",     d,    "--scope-fd", sarg,
                          "--route-fd", rarg, NULL};
    int keep[2] = {sp[1], rp[1]};
    t->pid = tp_spawn("vfsd", args, keep, 2, -1);
    (void)close(sp[1]);
    (void)close(rp[1]);
    PBX_REQUIRE(t->pid > 0);
    t->scope = pbx_peer_io_scope_take(sp[0], 3000, &t->scope_id);
    PBX_REQUIRE(t->scope >= 0);
    (void)close(sp[0]);
    t->route = rp[0];
}

static void ol_down(ol *t)
{
    (void)close(t->scope);
    if (t->route >= 0) {
        (void)close(t->route);
    }
    (void)tp_stop(t->pid);
}

/* Sends RESOLVE of sel for (op, cls) on scope and waits for the reply on
 * reply (the route for the route's process, else the scope) into *m;
 * returns the reply's status (its header field). */
static uint32_t ol_resolve_raw(int scope, int reply, const char *sel,
                               uint16_t op, uint16_t cls, pbx_peer_msg *m)
{
    pbx_ipc_resolve rq;
    memset(&rq, 0, sizeof(rq));
    rq.operation = op;
    rq.object_class = cls;
    rq.selector = (const uint8_t *)sel;
    rq.selector_len = (uint32_t)strlen(sel);
    PBX_CHECK_EQ(
        pbx_sha2_digest(rq.selector, rq.selector_len, rq.selector_digest),
        PBX_OK);
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    PBX_CHECK_EQ(pbx_ipc_resolve_encode(id, &rq, buf, sizeof(buf), &n), PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send(scope, buf, n, -1) == 0);
    PBX_REQUIRE(tp_readable(reply, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_frame(reply, m) == 0);
    return m->len >= PBX_IPC_HEADER_BYTES ? pbx_le_get16(m->buf + 8) : 0xFFFFU;
}

/* Resolves sel for (op, cls) through t's scope, which must be FOUND;
 * returns the object and stores its identity in *rep. */
static int ol_obj(const ol *t, const char *sel, uint16_t op, uint16_t cls,
                  pbx_ipc_resolve_reply *rep)
{
    static pbx_peer_msg m;
    PBX_CHECK_EQ(ol_resolve_raw(t->scope, t->route, sel, op, cls, &m), 0U);
    PBX_REQUIRE(m.err == PBX_OK);
    PBX_REQUIRE(pbx_ipc_resolve_reply_decode(&m.frame, rep) == PBX_OK);
    PBX_CHECK_EQ(rep->result, PBX_IPC_RESOLVE_FOUND);
    PBX_REQUIRE(m.nfds == 1U);
    return m.fds[0];
}

/* The status of one raw call buf[0..n) on obj (its reply's status). */
static uint32_t ol_raw(int obj, const uint8_t *buf, size_t n)
{
    static pbx_peer_msg m;
    PBX_CHECK(pbx_peer_io_send(obj, buf, n, -1) == 0);
    PBX_REQUIRE(tp_readable(obj, 3000));
    PBX_REQUIRE(pbx_peer_io_recv_raw(obj, &m, 0) == 0);
    PBX_REQUIRE(m.len == PBX_IPC_HEADER_BYTES);
    return pbx_le_get16(m.buf + 8);
}

PBX_TEST(obj_live_read_and_stat)
{
    static ol t;
    ol_up(&t);
    pbx_ipc_resolve_reply rep;
    int obj =
        ol_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE, &rep);
    char buf[64];
    size_t got = 0;
    PBX_CHECK_EQ(pbx_obj_read(obj, 0, buf, sizeof(buf), &got), 0);
    PBX_CHECK(got == 6U && memcmp(buf, "hello\n", 6) == 0);
    PBX_CHECK_EQ(pbx_obj_read(obj, 2, buf, 3, &got), 0);
    PBX_CHECK(got == 3U && memcmp(buf, "llo", 3) == 0);
    /* At the end: nothing, no error; past it: RANGE. */
    PBX_CHECK_EQ(pbx_obj_read(obj, 6, buf, sizeof(buf), &got), 0);
    PBX_CHECK_EQ(got, 0U);
    PBX_CHECK_EQ(pbx_obj_read(obj, 7, buf, sizeof(buf), &got), PBX_E_OBJ_RANGE);
    pbx_obj_info info;
    PBX_CHECK_EQ(pbx_obj_stat(obj, &info), 0);
    char p[512];
    struct stat sb;
    (void)snprintf(p, sizeof(p), "%s/a.txt", t.dir);
    PBX_REQUIRE(stat(p, &sb) == 0);
    PBX_CHECK(info.dev == (uint64_t)sb.st_dev &&
              info.ino == (uint64_t)sb.st_ino && info.size == 6U);
    /* A long read is chunked by the library into bounded calls. */
    pbx_ipc_resolve_reply r2;
    int big =
        ol_obj(&t, "big.bin", PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE, &r2);
    static char bb[12000];
    PBX_CHECK_EQ(pbx_obj_read(big, 0, bb, sizeof(bb), &got), 0);
    PBX_CHECK_EQ(got, 10000U);
    bool same = true;
    for (size_t i = 0; i < got; i++) {
        same = same && bb[i] == (char)('a' + (i * 7U) % 26U);
    }
    PBX_CHECK(same);
    PBX_CHECK_EQ(pbx_obj_read(big, 9000, bb, 5000, &got), 0);
    PBX_CHECK(got == 1000U && bb[0] == (char)('a' + (9000U * 7U) % 26U));
    (void)close(big);
    (void)close(obj);
    ol_down(&t);
}

PBX_TEST(obj_live_list_pages)
{
    static ol t;
    ol_up(&t);
    pbx_ipc_resolve_reply rep;
    int obj = ol_obj(&t, "dir", PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY,
                     &rep);
    /* 40 names of 25 bytes with their NULs: a 256-byte page holds 10. */
    bool seen[40];
    memset(seen, 0, sizeof(seen));
    uint32_t cookie = 0;
    size_t pages = 0;
    size_t names = 0;
    char page[256];
    for (int i = 0; i < 20; i++) {
        size_t used = 0;
        uint32_t next = 0;
        PBX_REQUIRE(
            pbx_obj_list(obj, cookie, page, sizeof(page), &used, &next) == 0);
        pages++;
        for (size_t at = 0; at < used;) {
            char *end = NULL;
            const char *num = page + at + strlen("entry-");
            PBX_CHECK(strncmp(page + at, "entry-", strlen("entry-")) == 0);
            int k = (int)strtol(num, &end, 10);
            PBX_CHECK(end != num && strcmp(end, "-padding-padding") == 0);
            PBX_CHECK(k >= 0 && k < 40 && !seen[k]);
            if (k >= 0 && k < 40) {
                seen[k] = true;
            }
            names++;
            at += strlen(page + at) + 1U;
        }
        if (next == 0U) {
            break;
        }
        cookie = next;
    }
    PBX_CHECK_EQ(names, 40U);
    PBX_CHECK_EQ(pages, 4U);
    /* A full page holds all of them. */
    static char full[8192];
    size_t used = 0;
    uint32_t next = 7;
    PBX_CHECK_EQ(pbx_obj_list(obj, 0, full, sizeof(full), &used, &next), 0);
    PBX_CHECK(used == (size_t)40U * 25U && next == 0U);
    /* A cookie at the end is an empty last page; past it RANGE. */
    PBX_CHECK_EQ(pbx_obj_list(obj, 40, page, sizeof(page), &used, &next), 0);
    PBX_CHECK(used == 0U && next == 0U);
    PBX_CHECK_EQ(pbx_obj_list(obj, 41, page, sizeof(page), &used, &next),
                 PBX_E_OBJ_RANGE);
    /* Too small a buffer for one name is the caller's error. */
    PBX_CHECK_EQ(pbx_obj_list(obj, 0, page, 255, &used, &next), PBX_E_OBJ_ARG);
    (void)close(obj);
    ol_down(&t);
}

/* Reads dir/name into buf (cap bytes, NUL-terminated); returns length. */
static long ol_slurp(const char *dir, const char *name, char *buf, size_t cap)
{
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/%s", dir, name);
    return tp_read_file(p, buf, cap);
}

/* The access mode (O_RDONLY, O_WRONLY, O_RDWR) of the descriptor pid has
 * open on path, or -1 when it has none. */
static int ol_open_mode(pid_t pid, const char *path)
{
    for (int fd = 0; fd < 1024; fd++) {
        char link[64];
        char to[512];
        (void)snprintf(link, sizeof(link), "/proc/%d/fd/%d", (int)pid, fd);
        ssize_t n = readlink(link, to, sizeof(to) - 1U);
        if (n <= 0) {
            continue;
        }
        to[n] = '\0';
        if (strcmp(to, path) != 0) {
            continue;
        }
        char info[256];
        (void)snprintf(link, sizeof(link), "/proc/%d/fdinfo/%d", (int)pid, fd);
        if (tp_read_file(link, info, sizeof(info)) <= 0) {
            return -1;
        }
        const char *f = strstr(info, "flags:");
        return f != NULL ? (int)(strtol(f + 6, NULL, 8) & O_ACCMODE) : -1;
    }
    return -1;
}

PBX_TEST(obj_live_write_grant_reads_and_writes_its_file)
{
    static ol t;
    ol_up(&t);
    pbx_ipc_resolve_reply rep;
    int obj =
        ol_obj(&t, "w.txt", PBX_IPC_OPERATION_WRITE, PBX_IPC_CLASS_FILE, &rep);
    char p[512];
    char real[512];
    (void)snprintf(p, sizeof(p), "%s/w.txt", t.dir);
    PBX_REQUIRE(realpath(p, real) != NULL);
    /* Opened for reading and writing (never created or truncated): a
     * write grant's holder reads its own file too. */
    PBX_CHECK_EQ(ol_open_mode(t.pid, real), O_RDWR);
    size_t put = 0;
    PBX_CHECK_EQ(pbx_obj_write(obj, 1, "AB", 2, &put), 0);
    PBX_CHECK_EQ(put, 2U);
    PBX_CHECK_EQ(pbx_obj_write(obj, 4, "xyz", 3, &put), 0); /* appends */
    char text[64];
    PBX_CHECK_EQ(ol_slurp(t.dir, "w.txt", text, sizeof(text)), 7);
    PBX_CHECK(strcmp(text, "0AB3xyz") == 0);
    /* Past the end: RANGE, nothing written. */
    PBX_CHECK_EQ(pbx_obj_write(obj, 9, "q", 1, &put), PBX_E_OBJ_RANGE);
    PBX_CHECK_EQ(put, 0U);
    pbx_obj_info info;
    PBX_CHECK_EQ(pbx_obj_stat(obj, &info), 0);
    PBX_CHECK_EQ(info.size, 7U);
    /* A WRITE grant reads back what it wrote. */
    size_t got = 0;
    memset(text, 0, sizeof(text));
    PBX_CHECK_EQ(pbx_obj_read(obj, 1, text, 4, &got), 0);
    PBX_CHECK(got == 4U && memcmp(text, "AB3x", 4U) == 0);
    /* A long write is chunked. */
    static char big[9000];
    memset(big, 'z', sizeof(big));
    PBX_CHECK_EQ(pbx_obj_write(obj, 7, big, sizeof(big), &put), 0);
    PBX_CHECK_EQ(put, sizeof(big));
    PBX_CHECK_EQ(pbx_obj_stat(obj, &info), 0);
    PBX_CHECK_EQ(info.size, 9007U);
    /* A READ grant on the same file is opened for reading only and
     * refuses to write. */
    pbx_ipc_resolve_reply r2;
    (void)close(obj);
    int ro =
        ol_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE, &r2);
    (void)snprintf(p, sizeof(p), "%s/a.txt", t.dir);
    PBX_REQUIRE(realpath(p, real) != NULL);
    PBX_CHECK_EQ(ol_open_mode(t.pid, real), O_RDONLY);
    PBX_CHECK_EQ(pbx_obj_write(ro, 0, "HE", 2, &put), PBX_E_OBJ_READ_ONLY);
    PBX_CHECK_EQ(ol_slurp(t.dir, "a.txt", text, sizeof(text)), 6);
    PBX_CHECK(strcmp(text, "hello\n") == 0);
    (void)close(ro);
    ol_down(&t);
}

PBX_TEST(obj_live_refusals)
{
    static ol t;
    ol_up(&t);
    pbx_ipc_resolve_reply rep;
    int file =
        ol_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE, &rep);
    int dir = ol_obj(&t, "dir", PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY,
                     &rep);
    int rdir = ol_obj(&t, "dir", PBX_IPC_OPERATION_READ,
                      PBX_IPC_CLASS_DIRECTORY, &rep);
    char buf[300];
    size_t got = 0;
    uint32_t next = 0;
    /* List of a file; read of a directory; list without a LIST grant. */
    PBX_CHECK_EQ(pbx_obj_list(file, 0, buf, sizeof(buf), &got, &next),
                 PBX_E_OBJ_NOT_DIR);
    PBX_CHECK_EQ(pbx_obj_read(dir, 0, buf, 10, &got), PBX_E_OBJ_IS_DIR);
    PBX_CHECK_EQ(pbx_obj_read(rdir, 0, buf, 10, &got), PBX_E_OBJ_IS_DIR);
    PBX_CHECK_EQ(pbx_obj_list(rdir, 0, buf, sizeof(buf), &got, &next),
                 PBX_E_OBJ_NOT_GRANTED);
    PBX_CHECK_EQ(pbx_obj_write(dir, 0, "x", 1, &got), PBX_E_OBJ_IS_DIR);
    /* Oversized lengths on the raw wire (the library never sends them). */
    uint8_t call[PBX_PEER_VFS_CALL_BYTES_MAX + 1024U];
    size_t n = 0;
    PBX_CHECK_EQ(pbx_peer_vfs_obj_read_encode(5, 0,
                                              PBX_PEER_VFS_IO_BYTES_MAX + 1U,
                                              call, sizeof(call), &n),
                 PBX_OK);
    PBX_CHECK_EQ(ol_raw(file, call, n), (uint32_t)PBX_E_OBJ_LENGTH);
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_list_encode(6, 0, 100, call, sizeof(call), &n),
        PBX_OK);
    PBX_CHECK_EQ(ol_raw(dir, call, n), (uint32_t)PBX_E_OBJ_LENGTH);
    /* A WRITE longer than any call is cut by vfsd's receive: LENGTH. */
    PBX_CHECK_EQ(
        pbx_peer_vfs_obj_write_encode(7, 0, NULL, 0, call, sizeof(call), &n),
        PBX_OK);
    size_t over = sizeof(call);
    memset(call + n, 'w', over - n);
    pbx_le_put32(call + 20, (uint32_t)(over - PBX_IPC_HEADER_BYTES));
    pbx_le_put32(call + PBX_IPC_HEADER_BYTES + 8,
                 (uint32_t)(over - PBX_IPC_HEADER_BYTES - 16U));
    PBX_CHECK_EQ(ol_raw(file, call, over), (uint32_t)PBX_E_OBJ_LENGTH);
    /* An op that is no object call. */
    PBX_CHECK_EQ(pbx_peer_vfs_obj_stat_encode(8, call, sizeof(call), &n),
                 PBX_OK);
    pbx_le_put16(call + 6, 0x0F1FU);
    PBX_CHECK_EQ(ol_raw(file, call, n), (uint32_t)PBX_E_OBJ_NO_OP);
    /* Every refusal left the object serving. */
    PBX_CHECK_EQ(pbx_obj_read(file, 0, buf, 5, &got), 0);
    PBX_CHECK(got == 5U && memcmp(buf, "hello", 5) == 0);
    (void)close(file);
    (void)close(dir);
    (void)close(rdir);
    ol_down(&t);
}

PBX_TEST(obj_live_retire_fails_every_call)
{
    static ol t;
    ol_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int obj =
        ol_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE, &rep);
    char buf[16];
    size_t got = 0;
    PBX_CHECK_EQ(pbx_obj_read(obj, 0, buf, 5, &got), 0);
    static pbx_peer_msg m;
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    uint8_t fr[128];
    size_t n = 0;
    pbx_ipc_id rid = {3, 9};
    PBX_CHECK_EQ(pbx_ipc_retire_encode(rid, &rq, fr, sizeof(fr), &n), PBX_OK);
    PBX_REQUIRE(pbx_peer_io_call(t.route, fr, n, -1, &m, 3000) == 0);
    PBX_CHECK_EQ(pbx_le_get16(m.buf + 8), 0U);
    /* Every call fails at once: the connection is gone. */
    PBX_CHECK_EQ(pbx_obj_read(obj, 0, buf, 5, &got), PBX_E_OBJ_GONE);
    pbx_obj_info info;
    PBX_CHECK_EQ(pbx_obj_stat(obj, &info), PBX_E_OBJ_GONE);
    PBX_CHECK_EQ(pbx_obj_write(obj, 0, "x", 1, &got), PBX_E_OBJ_GONE);
    PBX_CHECK(strstr(pbx_obj_strerror(PBX_E_OBJ_GONE), "closed") != NULL);
    /* vfsd holds neither the connection nor the file any more. */
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    (void)close(obj);
    ol_down(&t);
}

/* The bytes of the vfsd log from offset on, NUL-terminated, in buf. */
static void ol_log_since(long offset, char *buf, size_t cap)
{
    const char *tmp = getenv("TMPDIR");
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/pbx-peer-vfsd.log", tmp ? tmp : "/tmp");
    buf[0] = '\0';
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return;
    }
    ssize_t n = pread(fd, buf, cap - 1U, (off_t)offset);
    buf[n > 0 ? n : 0] = '\0';
    (void)close(fd);
}

/* The size of the vfsd log now. */
static long ol_log_size(void)
{
    const char *tmp = getenv("TMPDIR");
    char p[512];
    struct stat sb;
    (void)snprintf(p, sizeof(p), "%s/pbx-peer-vfsd.log", tmp ? tmp : "/tmp");
    return stat(p, &sb) == 0 ? (long)sb.st_size : 0L;
}

PBX_TEST(obj_live_route_close_retires_every_object)
{
    static ol t;
    ol_up(&t);
    long mark = ol_log_size();
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    int a =
        ol_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE, &rep);
    int d = ol_obj(&t, "dir", PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY,
                   &rep);
    char buf[300];
    size_t got = 0;
    uint32_t next = 0;
    PBX_CHECK_EQ(pbx_obj_read(a, 0, buf, 5, &got), 0);
    /* powerboxd's route closes (powerboxd died): both objects die. */
    (void)close(t.route);
    t.route = -1;
    PBX_CHECK(tp_hung_up(a, 2000));
    PBX_CHECK(tp_hung_up(d, 2000));
    PBX_CHECK_EQ(pbx_obj_read(a, 0, buf, 5, &got), PBX_E_OBJ_GONE);
    PBX_CHECK_EQ(pbx_obj_list(d, 0, buf, sizeof(buf), &got, &next),
                 PBX_E_OBJ_GONE);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base - 1, 2000), base - 1);
    /* Logged once, with the count. */
    static char log[16384];
    ol_log_since(mark, log, sizeof(log));
    char want[128];
    (void)snprintf(want, sizeof(want),
                   "route to pid %d closed: 2 object(s) minted for it retired",
                   (int)getpid());
    const char *hit = strstr(log, want);
    PBX_CHECK(hit != NULL);
    PBX_CHECK(hit == NULL || strstr(hit + 1, "route to pid") == NULL);
    /* Nothing more can be minted: no route, no RESOLVE. */
    static pbx_peer_msg m;
    PBX_CHECK_EQ(ol_resolve_raw(t.scope, t.scope, "a.txt",
                                PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE, &m),
                 (uint32_t)PBX_E_PEER_NOT_ROUTE);
    PBX_CHECK_EQ(m.nfds, 0U);
    (void)close(a);
    (void)close(d);
    ol_down(&t);
}

PBX_TEST(obj_live_resolve_only_from_the_route)
{
    static ol t;
    ol_up(&t);
    long mark = ol_log_size();
    int base = tp_fd_count(t.pid);
    /* A holder of the scope that is not the route's process: refused,
     * nothing minted, no descriptor. */
    pid_t kid = fork();
    PBX_REQUIRE(kid >= 0);
    if (kid == 0) {
        static pbx_peer_msg km;
        uint32_t st =
            ol_resolve_raw(t.scope, t.scope, "a.txt", PBX_IPC_OPERATION_READ,
                           PBX_IPC_CLASS_FILE, &km);
        _exit(st == (uint32_t)PBX_E_PEER_NOT_ROUTE && km.nfds == 0U ? 0 : 1);
    }
    int ws = 0;
    PBX_REQUIRE(waitpid(kid, &ws, 0) == kid);
    PBX_CHECK(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 500), base);
    static char log[16384];
    ol_log_since(mark, log, sizeof(log));
    char want[96];
    (void)snprintf(want, sizeof(want), "refused: sent by pid %d,", (int)kid);
    PBX_CHECK(strstr(log, want) != NULL);
    PBX_CHECK(strstr(log, "RESOLVE found") == NULL);
    /* The route's process (this one; it sends no credentials itself, the
     * kernel attaches them) is served on the same scope. */
    pbx_ipc_resolve_reply rep;
    int obj =
        ol_obj(&t, "a.txt", PBX_IPC_OPERATION_READ, PBX_IPC_CLASS_FILE, &rep);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base + 2, 1000), base + 2);
    (void)close(obj);
    ol_down(&t);
}

/* Runs pbx-vfsd with args (NULL-terminated, argv[0] excluded), its
 * stdout and stderr into out (cap bytes, NUL-terminated); returns its
 * exit status, or -1. */
static int ol_run(const char *const *args, char *out, size_t cap)
{
    const char *bin = getenv("PBX_PEERS_BIN");
    char path[512];
    (void)snprintf(path, sizeof(path), "%s/pbx-vfsd", bin ? bin : "build/bin");
    int pp[2];
    PBX_REQUIRE(pipe(pp) == 0);
    pid_t pid = fork();
    PBX_REQUIRE(pid >= 0);
    if (pid == 0) {
        char *argv[16];
        size_t n = 0;
        argv[n++] = path;
        for (size_t i = 0; args[i] != NULL && n < 15U; i++) {
            argv[n++] = (char *)args[i]; /* execv takes char *const[] */
        }
        argv[n] = NULL;
        (void)dup2(pp[1], 1);
        (void)dup2(pp[1], 2);
        execv(path, argv);
        _exit(127);
    }
    (void)close(pp[1]);
    size_t used = 0;
    ssize_t r = 0;
    while (used + 1U < cap &&
           (r = read(pp[0], out + used, cap - 1U - used)) > 0) {
        used += (size_t)r;
    }
    out[used] = '\0';
    (void)close(pp[0]);
    int ws = 0;
    PBX_REQUIRE(waitpid(pid, &ws, 0) == pid);
    return WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
}

PBX_TEST(obj_vfsd_help_and_usage_errors)
{
    static char out[2048];
    const char *h[] = {"-h", NULL};
    PBX_CHECK_EQ(ol_run(h, out, sizeof(out)), 0);
    PBX_CHECK(strncmp(out, "usage: pbx-vfsd --root DIR", 26) == 0);
    const char *help[] = {"--root", "/", "--help", NULL};
    PBX_CHECK_EQ(ol_run(help, out, sizeof(out)), 0);
    PBX_CHECK(strstr(out, "usage: pbx-vfsd") != NULL);
    const char *bad[] = {"--root", "/", "--bogus", "1", NULL};
    PBX_CHECK_EQ(ol_run(bad, out, sizeof(out)), 2);
    PBX_CHECK(strstr(out, "'--bogus'") != NULL);
    const char *noval[] = {"--root", "/", "--route", NULL};
    PBX_CHECK_EQ(ol_run(noval, out, sizeof(out)), 2);
    PBX_CHECK(strstr(out, "'--route' needs a value") != NULL);
    const char *noroot[] = {"--route-fd", "1", NULL};
    PBX_CHECK_EQ(ol_run(noroot, out, sizeof(out)), 2);
    PBX_CHECK(strstr(out, "missing --root") != NULL);
    const char *badfd[] = {"--root", "/", "--route-fd", "x", NULL};
    PBX_CHECK_EQ(ol_run(badfd, out, sizeof(out)), 2);
    PBX_CHECK(strstr(out, "--route-fd 'x'") != NULL);
}
