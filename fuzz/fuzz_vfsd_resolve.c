/*
 * fuzz_vfsd_resolve.c: libFuzzer harness for vfsd's selector resolution
 * (peers/vfsd/vfsd_resolve.c and vfsd_create.c, linked, driven through
 * vfsd_resolve itself) against a temporary directory tree.
 *
 * At the first input the harness builds, under a fresh temporary
 * directory, a scope root holding files, directories, a FIFO and
 * symlinks that stay inside (to a file, to a directory) and that try to
 * leave it (to "..", to an absolute path, to a directory beside the
 * root, dangling, a loop), plus that directory beside the root with a
 * file in it. It records the device and inode of every entry beneath the
 * root (not following symlinks).
 *
 * Input layout: byte 0 is the operation (low three bits), byte 1 the
 * class (mod 6), byte 2 bit 0 corrupts the selector digest; the rest is
 * the selector. The harness encodes that RESOLVE, hands it to
 * vfsd_resolve as if it came through a scope on the root from the route's
 * process, and reads the answer vfsd sends on the route. Checked:
 *  - the answer is a well-formed RESOLVE reply or error status on the
 *    route, carrying a descriptor exactly when FOUND;
 *  - a FOUND answer echoes the operation, the class asked, the digest and
 *    the scope, and the object it minted (what it names, the file opened
 *    for its data, a CREATE's directory) is an entry beneath the root:
 *    never anything outside it, whatever the selector or the symlinks;
 *  - a wrong digest, an absolute selector or one with a ".." component is
 *    never FOUND;
 *  - every descriptor is released (the lowest free one is the same
 *    before and after the input).
 * vfsd's log lines go to /dev/null while it runs. Any failure aborts.
 */
#include "peers/vfsd/vfsd.h"
#include "sha2/pbx_sha2.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* vfsd's one state, which vfsd.c (with its main) owns in the daemon. */
vfsd g_vfsd;

/* The harness runs no event loop (vfsd_loop.c): a minted object needs no
 * registration here. */
void vfsd_loop_watch_obj(size_t row)
{
    (void)row;
}

/* Entries beneath the root whose device and inode are recorded. */
#define FUZZ_VFSD_INSIDE_MAX 32U
/* The scope identity the harness's scope connection carries. */
#define FUZZ_VFSD_SCOPE 77U

static struct {
    bool ready;
    int route[2]; /* [0] vfsd's end of the route, [1] powerboxd's */
    vfsd_conn scope;
    dev_t dev[FUZZ_VFSD_INSIDE_MAX];
    ino_t ino[FUZZ_VFSD_INSIDE_MAX];
    size_t ninside;
    char base[32]; /* the temporary directory, removed at exit */
} fz;

/* Runs a shell-free setup step; any failure ends the harness. */
static void fuzz_vfsd_must(bool ok, const char *what)
{
    if (!ok) {
        perror(what);
        abort();
    }
}

/* Records the entry rel beneath root (not followed). */
static void fuzz_vfsd_note(int root, const char *rel)
{
    struct stat st;
    fuzz_vfsd_must(fstatat(root, rel, &st, AT_SYMLINK_NOFOLLOW) == 0, rel);
    fuzz_vfsd_must(fz.ninside < FUZZ_VFSD_INSIDE_MAX, "inside table");
    fz.dev[fz.ninside] = st.st_dev;
    fz.ino[fz.ninside] = st.st_ino;
    fz.ninside++;
}

/* Removes the tree at exit (nothing in it is ever created by a RESOLVE:
 * a CREATE's file is made only when its object is first used). */
static void fuzz_vfsd_cleanup(void)
{
    static const char *const files[] = {
        "root/a/b/f.txt", "root/top",      "root/fifo",    "root/in_file",
        "root/in_dir",    "root/up",       "root/out_rel", "root/out_abs",
        "root/etc",       "root/dangling", "root/loop",    "root/a/b/up2",
        "outside/secret"};
    static const char *const dirs[] = {"root/a/b", "root/a", "root/empty",
                                       "root", "outside"};
    char path[128];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        (void)snprintf(path, sizeof(path), "%s/%s", fz.base, files[i]);
        (void)unlink(path);
    }
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
        (void)snprintf(path, sizeof(path), "%s/%s", fz.base, dirs[i]);
        (void)rmdir(path);
    }
    (void)rmdir(fz.base);
}

/* Builds the tree: base/root (the scope) and base/outside beside it. */
static void fuzz_vfsd_tree(void)
{
    char *base = fz.base;
    char path[128];
    (void)snprintf(fz.base, sizeof(fz.base), "/tmp/pbx-fuzz-vfsd-XXXXXX");
    fuzz_vfsd_must(mkdtemp(base) != NULL, "mkdtemp");
    fuzz_vfsd_must(atexit(fuzz_vfsd_cleanup) == 0, "atexit");
    (void)snprintf(path, sizeof(path), "%s/outside", base);
    fuzz_vfsd_must(mkdir(path, 0700) == 0, path);
    (void)snprintf(path, sizeof(path), "%s/outside/secret", base);
    int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    fuzz_vfsd_must(fd >= 0, path);
    (void)close(fd);
    (void)snprintf(path, sizeof(path), "%s/root", base);
    fuzz_vfsd_must(mkdir(path, 0700) == 0, path);
    int root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    fuzz_vfsd_must(root >= 0, path);
    fuzz_vfsd_must(mkdirat(root, "a", 0700) == 0 &&
                       mkdirat(root, "a/b", 0700) == 0 &&
                       mkdirat(root, "empty", 0700) == 0,
                   "mkdirat");
    fd = openat(root, "a/b/f.txt", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    fuzz_vfsd_must(fd >= 0 && write(fd, "data\n", 5U) == 5, "a/b/f.txt");
    (void)close(fd);
    fd = openat(root, "top", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    fuzz_vfsd_must(fd >= 0, "top");
    (void)close(fd);
    fuzz_vfsd_must(mkfifoat(root, "fifo", 0600) == 0, "fifo");
    (void)snprintf(path, sizeof(path), "%s/outside", base);
    fuzz_vfsd_must(symlinkat("a/b/f.txt", root, "in_file") == 0 &&
                       symlinkat("a", root, "in_dir") == 0 &&
                       symlinkat("..", root, "up") == 0 &&
                       symlinkat("../outside/secret", root, "out_rel") == 0 &&
                       symlinkat(path, root, "out_abs") == 0 &&
                       symlinkat("/etc", root, "etc") == 0 &&
                       symlinkat("nowhere", root, "dangling") == 0 &&
                       symlinkat("loop", root, "loop") == 0 &&
                       symlinkat("../../up", root, "a/b/up2") == 0,
                   "symlinkat");
    static const char *const inside[] = {
        ".",    "a",        "a/b",    "a/b/f.txt", "empty",   "top",
        "fifo", "in_file",  "in_dir", "up",        "out_rel", "out_abs",
        "etc",  "dangling", "loop",   "a/b/up2"};
    for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
        fuzz_vfsd_note(root, inside[i]);
    }
    fz.scope.fd = -1;
    fz.scope.kind = VFSD_KIND_SCOPE;
    fz.scope.dirfd = root;
    fz.scope.scope_id = FUZZ_VFSD_SCOPE;
}

/* Sets vfsd's state up once: the tree, the route, the object table. */
static void fuzz_vfsd_setup(void)
{
    fuzz_vfsd_tree();
    fuzz_vfsd_must(
        socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fz.route) == 0,
        "socketpair");
    g_vfsd.incarnation = 1U;
    g_vfsd.conns[0].fd = fz.route[0];
    g_vfsd.conns[0].kind = VFSD_KIND_ROUTE;
    g_vfsd.conns[0].pid = getpid();
    g_vfsd.conns[0].serial = 1U;
    g_vfsd.nconns = 1U;
    pbx_peer_objtab_init(&g_vfsd.objs);
    for (size_t r = 0; r < PBX_PEER_VFS_OBJECTS_MAX; r++) {
        g_vfsd.data[r] = -1;
        g_vfsd.create_dir[r] = -1;
    }
    fz.ready = true;
}

/* Whether fd (or, fd < 0, the recorded dev and ino) is beneath the root. */
static bool fuzz_vfsd_inside(int fd, uint64_t dev, uint64_t ino)
{
    struct stat st;
    if (fd >= 0) {
        fuzz_vfsd_must(fstat(fd, &st) == 0, "fstat");
        dev = (uint64_t)st.st_dev;
        ino = (uint64_t)st.st_ino;
    }
    for (size_t i = 0; i < fz.ninside; i++) {
        if ((uint64_t)fz.dev[i] == dev && (uint64_t)fz.ino[i] == ino) {
            return true;
        }
    }
    return false;
}

/* Checks every live object row, then closes it and empties the table. */
static size_t fuzz_vfsd_rows(void)
{
    size_t live = 0;
    for (size_t r = 0; r < PBX_PEER_VFS_OBJECTS_MAX; r++) {
        pbx_peer_obj *o = &g_vfsd.objs.rows[r];
        if (o->state == PBX_PEER_OBJ_LIVE) {
            live++;
            bool ok = g_vfsd.create_dir[r] >= 0
                          ? fuzz_vfsd_inside(g_vfsd.create_dir[r], 0U, 0U)
                          : fuzz_vfsd_inside(-1, g_vfsd.stats[r].dev,
                                             g_vfsd.stats[r].ino);
            if (!ok || (g_vfsd.data[r] >= 0 &&
                        !fuzz_vfsd_inside(g_vfsd.data[r], 0U, 0U))) {
                abort(); /* an object outside the scope was minted */
            }
        }
        if (o->state != PBX_PEER_OBJ_FREE && o->provider >= 0) {
            (void)close(o->provider);
        }
        if (g_vfsd.data[r] >= 0) {
            (void)close(g_vfsd.data[r]);
            g_vfsd.data[r] = -1;
        }
        if (g_vfsd.create_dir[r] >= 0) {
            (void)close(g_vfsd.create_dir[r]);
            g_vfsd.create_dir[r] = -1;
        }
    }
    pbx_peer_objtab_init(&g_vfsd.objs);
    return live;
}

/* Whether the selector may never be FOUND: absolute, or a ".." in it. */
static bool fuzz_vfsd_escapes(const uint8_t *sel, size_t len)
{
    if (len != 0U && sel[0] == (uint8_t)'/') {
        return true;
    }
    for (size_t i = 0; i + 1U < len; i++) {
        bool start = i == 0U || sel[i - 1U] == (uint8_t)'/';
        bool end = i + 2U == len || sel[i + 2U] == (uint8_t)'/';
        if (start && end && sel[i] == (uint8_t)'.' &&
            sel[i + 1U] == (uint8_t)'.') {
            return true;
        }
    }
    return false;
}

/* Encodes the RESOLVE into vfsd's current message; false when the
 * record's encoder refuses it (an empty selector, an unknown operation or
 * class: what no sender can send, since powerboxd's decoder refuses it). */
static bool fuzz_vfsd_message(const pbx_ipc_resolve *rq)
{
    static const pbx_ipc_id req = {3U, 1U};
    pbx_peer_msg *m = &g_vfsd.msg;
    memset(m, 0, sizeof(*m));
    if (pbx_ipc_resolve_encode(req, rq, m->buf, sizeof(m->buf), &m->len) !=
        PBX_OK) {
        return false;
    }
    fuzz_vfsd_must(pbx_ipc_frame_set_seq(m->buf, m->len, 41U) == PBX_OK, "seq");
    m->err = pbx_ipc_frame_decode(m->buf, m->len, 0U, &m->frame);
    fuzz_vfsd_must(m->err == PBX_OK, "decode");
    return true;
}

/* Runs vfsd_resolve with vfsd's log lines sent to /dev/null. */
static void fuzz_vfsd_run(void)
{
    int saved = dup(STDERR_FILENO);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    fuzz_vfsd_must(saved >= 0 && null >= 0 &&
                       dup2(null, STDERR_FILENO) == STDERR_FILENO,
                   "dup2");
    vfsd_resolve(&fz.scope, getpid());
    fuzz_vfsd_must(dup2(saved, STDERR_FILENO) == STDERR_FILENO, "dup2");
    (void)close(saved);
    (void)close(null);
}

/* Reads vfsd's answer from the route into buf; *fd gets its descriptor. */
static size_t fuzz_vfsd_answer(uint8_t *buf, size_t cap, int *fd, size_t *nfds)
{
    union {
        char c[CMSG_SPACE(sizeof(int) * 2U)];
        struct cmsghdr align;
    } cbuf;
    struct iovec iov = {buf, cap};
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&cbuf, 0, sizeof(cbuf));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = cbuf.c;
    mh.msg_controllen = sizeof(cbuf.c);
    ssize_t n = recvmsg(fz.route[1], &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
    fuzz_vfsd_must(n > 0 && (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) == 0,
                   "vfsd sent no whole answer on the route");
    *fd = -1;
    *nfds = 0;
    struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
    if (c != NULL && c->cmsg_type == SCM_RIGHTS) {
        *nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        memcpy(fd, CMSG_DATA(c), sizeof(int));
        fuzz_vfsd_must(*nfds == 1U, "more than one descriptor");
    }
    return (size_t)n;
}

/* Judges vfsd's answer to rq. */
static void fuzz_vfsd_judge(const pbx_ipc_resolve *rq, bool bad_digest,
                            bool escapes)
{
    uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
    int fd = -1;
    size_t nfds = 0;
    size_t n = fuzz_vfsd_answer(buf, sizeof(buf), &fd, &nfds);
    pbx_ipc_frame f;
    pbx_ipc_resolve_reply rep;
    if (pbx_ipc_frame_decode(buf, n, (uint16_t)nfds, &f) != PBX_OK ||
        f.seq != 41U) {
        abort();
    }
    bool found = f.status == 0U &&
                 pbx_ipc_resolve_reply_decode(&f, &rep) == PBX_OK &&
                 rep.result == PBX_IPC_RESOLVE_FOUND;
    if (found != (nfds == 1U) || (found && (bad_digest || escapes))) {
        abort();
    }
    if (found && (rep.operation != rq->operation ||
                  rep.object_class != rq->object_class ||
                  rep.scope_id != FUZZ_VFSD_SCOPE ||
                  memcmp(rep.selector_digest, rq->selector_digest,
                         sizeof(rep.selector_digest)) != 0)) {
        abort();
    }
    if (fuzz_vfsd_rows() != (found ? 1U : 0U)) {
        abort();
    }
    if (fd >= 0) {
        (void)close(fd);
    }
}

/* Returns the lowest free descriptor number. */
static int fuzz_vfsd_lowest_fd(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    fuzz_vfsd_must(fd >= 0, "/dev/null");
    (void)close(fd);
    return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3U || size - 3U > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return 0;
    }
    if (!fz.ready) {
        fuzz_vfsd_setup();
    }
    int low = fuzz_vfsd_lowest_fd();
    pbx_ipc_resolve rq;
    memset(&rq, 0, sizeof(rq));
    rq.operation = (uint16_t)(data[0] & 7U);
    rq.object_class = (uint16_t)(data[1] % 6U);
    rq.selector_len = (uint32_t)(size - 3U);
    rq.selector = size > 3U ? data + 3 : NULL;
    fuzz_vfsd_must(pbx_sha2_digest(rq.selector, rq.selector_len,
                                   rq.selector_digest) == PBX_OK,
                   "digest");
    bool bad_digest = (data[2] & 1U) != 0U;
    rq.selector_digest[data[2] % PBX_IPC_DIGEST_BYTES] ^=
        (uint8_t)(bad_digest ? 0x40U : 0U);
    if (!fuzz_vfsd_message(&rq)) {
        return 0;
    }
    fuzz_vfsd_run();
    fuzz_vfsd_judge(&rq, bad_digest, fuzz_vfsd_escapes(rq.selector, size - 3U));
    if (fuzz_vfsd_lowest_fd() != low) {
        abort();
    }
    return 0;
}
