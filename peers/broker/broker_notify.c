/*
 * broker_notify.c: one seccomp notification of a job's open family,
 * answered (see broker.h). The program's memory is read once per
 * argument, and SECCOMP_IOCTL_NOTIF_ID_VALID is checked after every read,
 * so a value read from a thread that was no longer waiting (its pid
 * reused) is never acted on. A brokered path is never continued: the
 * object is resolved here, beneath the scope, and only the descriptor the
 * answer carries is injected (SECCOMP_IOCTL_NOTIF_ADDFD), so rewriting
 * the path buffer after the read gains nothing.
 */
#define _GNU_SOURCE
#include "peers/broker/broker.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

/* The open family's x86_64 numbers. */
#define BN_NR_OPEN    2U
#define BN_NR_CREAT   85U
#define BN_NR_OPENAT  257U
#define BN_NR_OPENAT2 437U
/* AT_FDCWD as the low 32 bits of a call argument. */
#define BN_AT_FDCWD ((uint32_t)-100)
/* FUSE's filesystem type (statfs f_type): vfsd's revocable mount. */
#define BN_FUSE_MAGIC 0x65735546L
/* The pages read for one path (each read stops at a page's end). */
#define BN_PAGE 4096U

/* What the program's call asks, read once. */
typedef struct bn_call {
    uint32_t tid;
    uint32_t tgid;
    int dirfd; /* AT_FDCWD or the program's descriptor */
    uint64_t flags;
    uint64_t resolve;
    /* The errno of the failed open of the thread's memory or descriptor
     * (EACCES, EPERM: Yama or the ptrace rules), 0 when none failed so. */
    int denied;
    char path[PBX_BROKER_PATH_MAX];
    char abs[PBX_BROKER_PATH_MAX];
} bn_call;

/* Answers notification id: error (a positive errno, 0 with cont for the
 * program's own call). */
static void bn_answer(const pbx_broker *b, uint64_t id, int error, bool cont)
{
    struct seccomp_notif_resp r;
    memset(&r, 0, sizeof(r));
    r.id = id;
    r.error = -error;
    r.flags = cont ? SECCOMP_USER_NOTIF_FLAG_CONTINUE : 0U;
    /* ENOENT: the thread is gone (killed), nothing to answer. */
    (void)ioctl(b->listener, SECCOMP_IOCTL_NOTIF_SEND, &r);
}

/* Whether notification id still waits (so what was read is its). */
static bool bn_valid(const pbx_broker *b, uint64_t id)
{
    uint64_t v = id;
    return ioctl(b->listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &v) == 0;
}

/* Opens the memory of c's thread; -1 with c->denied set when the kernel
 * refuses (b->mem_fail: as it would under Yama's ptrace_scope 1). */
static int bn_mem_open(const pbx_broker *b, bn_call *c)
{
    char p[64];
    (void)snprintf(p, sizeof(p), "/proc/%u/mem", c->tid);
    int fd = b->mem_fail ? -1 : open(p, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        c->denied = b->mem_fail ? EPERM : errno;
    }
    return fd;
}

/* Reads len bytes at addr of c's thread into out; false when not all. */
static bool bn_mem(const pbx_broker *b, bn_call *c, uint64_t addr, void *out,
                   size_t len)
{
    int fd = bn_mem_open(b, c);
    if (fd < 0) {
        return false;
    }
    ssize_t got = pread(fd, out, len, (off_t)addr);
    (void)close(fd);
    return got == (ssize_t)len;
}

/* Reads the NUL-terminated path at addr of thread tid into c->path, a
 * page at a time (a read never crosses into a page that may be unmapped);
 * ENAMETOOLONG, EFAULT or 0. */
static int bn_path(const pbx_broker *b, bn_call *c, uint64_t addr)
{
    int fd = bn_mem_open(b, c);
    if (fd < 0) {
        return EACCES;
    }
    size_t have = 0;
    int r = ENAMETOOLONG;
    for (uint32_t i = 0;
         i <= PBX_BROKER_PATH_MAX / BN_PAGE && have < PBX_BROKER_PATH_MAX;
         i++) {
        uint64_t at = addr + have;
        size_t n = BN_PAGE - (size_t)(at % BN_PAGE);
        n = n < PBX_BROKER_PATH_MAX - have ? n : PBX_BROKER_PATH_MAX - have;
        ssize_t got = pread(fd, c->path + have, n, (off_t)at);
        if (got <= 0) {
            r = EFAULT;
            break;
        }
        if (memchr(c->path + have, '\0', (size_t)got) != NULL) {
            r = 0;
            break;
        }
        have += (size_t)got;
    }
    (void)close(fd);
    return r;
}

/* The thread group (process) of thread tid, from /proc/TID/status; 0
 * when it cannot be read. */
static uint32_t bn_tgid(uint32_t tid)
{
    char p[64];
    char buf[1024];
    (void)snprintf(p, sizeof(p), "/proc/%u/status", tid);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1U) : -1;
    if (fd >= 0) {
        (void)close(fd);
    }
    buf[n > 0 ? (size_t)n : 0U] = '\0';
    const char *t = strstr(buf, "\nTgid:");
    return t != NULL ? (uint32_t)strtoul(t + 6, NULL, 10) : 0U;
}

/* A copy of c's process's descriptor fd (pidfd_getfd), or -1; c->denied
 * set when the kernel refuses it (as Yama would, or b->mem_fail). */
static int bn_getfd(const pbx_broker *b, bn_call *c, int fd)
{
    long pfd = syscall(SYS_pidfd_open, (pid_t)c->tgid, 0U);
    if (pfd < 0) {
        return -1;
    }
    long copy = b->mem_fail ? -1 : syscall(SYS_pidfd_getfd, (int)pfd, fd, 0U);
    int e = b->mem_fail ? EPERM : errno;
    (void)close((int)pfd);
    if (copy < 0 && (e == EPERM || e == EACCES)) {
        c->denied = e;
    }
    return (int)copy;
}

/* The path of our descriptor fd into out (PBX_BROKER_PATH_MAX bytes);
 * false when it has none (not absolute, or deleted). */
static bool bn_fd_path(int fd, char *out)
{
    char p[64];
    (void)snprintf(p, sizeof(p), "/proc/self/fd/%d", fd);
    ssize_t n = readlink(p, out, PBX_BROKER_PATH_MAX - 1U);
    if (n <= 0 || out[0] != '/') {
        out[0] = '\0';
        return false;
    }
    out[n] = '\0';
    return strstr(out, " (deleted)") == NULL;
}

/* Whether our descriptor fd is on a FUSE filesystem (vfsd's mount is
 * one: its files are never reopened or resolved into). */
static bool bn_on_fuse(int fd)
{
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 && (long)sf.f_type == BN_FUSE_MAGIC;
}

/* Makes c->path absolute into c->abs: against the thread's cwd or the
 * program's directory descriptor; 0 or the errno the open fails with. */
static int bn_absolute(const pbx_broker *b, bn_call *c)
{
    static char base[PBX_BROKER_PATH_MAX];
    if (c->path[0] == '\0') {
        return ENOENT;
    }
    if (c->path[0] != '/') {
        int fd = -1;
        if ((uint32_t)c->dirfd == BN_AT_FDCWD) {
            char p[64];
            (void)snprintf(p, sizeof(p), "/proc/%u/cwd", c->tid);
            fd = b->mem_fail ? -1 : open(p, O_PATH | O_CLOEXEC);
            if (fd < 0 && (b->mem_fail || errno == EACCES || errno == EPERM)) {
                c->denied = b->mem_fail ? EPERM : errno;
            }
        } else {
            fd = bn_getfd(b, c, c->dirfd);
        }
        struct stat st;
        bool dir = fd >= 0 && fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
        bool named = dir && bn_fd_path(fd, base);
        int e = !dir ? ENOTDIR : !named ? ENOENT : 0;
        if (fd < 0) {
            /* Refused by the kernel's ptrace rules, or no descriptor. */
            e = c->denied != 0 ? EACCES : EBADF;
        }
        if (fd >= 0) {
            (void)close(fd);
        }
        if (e != 0) {
            return e;
        }
    }
    return pbx_peer_broker_join(c->path[0] == '/' ? "/" : base, c->path, c->abs,
                                sizeof(c->abs)) == PBX_OK
               ? 0
               : ENAMETOOLONG;
}

/* Reads the call's arguments once, then checks ID_VALID once after the
 * last read (an invalid notification never becomes valid again); 0 or
 * the errno the open fails with (-1: the notification is gone). */
static int bn_read_call(const pbx_broker *b, const struct seccomp_notif *n,
                        bn_call *c)
{
    const __u64 *a = n->data.args;
    c->tid = n->pid;
    c->tgid = b->tgid_fail ? 0U : bn_tgid(n->pid);
    c->dirfd = (int)(uint32_t)a[0];
    c->resolve = 0U;
    uint64_t addr = a[0];
    int e = 0;
    switch (n->data.nr) {
    case BN_NR_OPEN:
        c->dirfd = (int)BN_AT_FDCWD;
        c->flags = a[1];
        break;
    case BN_NR_CREAT:
        c->dirfd = (int)BN_AT_FDCWD;
        c->flags = (uint64_t)(O_CREAT | O_WRONLY | O_TRUNC);
        break;
    case BN_NR_OPENAT:
        addr = a[1];
        c->flags = a[2];
        break;
    default: {
        struct open_how how;
        memset(&how, 0, sizeof(how));
        addr = a[1];
        if (a[3] < sizeof(how) || !bn_mem(b, c, a[2], &how, sizeof(how))) {
            e = c->denied != 0 ? EACCES : EFAULT;
        }
        c->flags = how.flags;
        c->resolve = how.resolve;
        break;
    }
    }
    e = e != 0 ? e : bn_path(b, c, addr);
    e = e != 0 ? e : bn_absolute(b, c);
    /* Checked after the last read (memory, cwd, descriptor): the thread
     * still waits in its call, so everything read was its own. */
    if (!bn_valid(b, n->id)) {
        return -1;
    }
    if (c->tgid == 0U) {
        /* The notification is still valid: it is answered, never left
         * waiting (its thread would hang in its open). */
        pbx_broker_say("pbx-broker: pid %u: its open is refused: the broker "
                       "cannot read its process from /proc/%u/status\n",
                       c->tid, c->tid);
        return EACCES;
    }
    if (c->denied != 0) {
        /* Fail-closed: an open the broker cannot read is never continued
         * (Landlock alone would then decide a path it never saw). */
        pbx_broker_say("pbx-broker: pid %u: its open is refused: the broker "
                       "may not read its memory or descriptors (%s; Yama's "
                       "ptrace_scope: see docs/HOST.md)\n",
                       c->tid, strerror(c->denied));
        return EACCES;
    }
    return e;
}

/* Resolves rest beneath the scope (no magic links, no escape) with
 * O_PATH, following a last symlink unless nofollow; the descriptor or -1
 * with errno set. */
static int bn_beneath(const pbx_broker *b, const char *rest, bool nofollow,
                      uint64_t resolve)
{
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)(O_PATH | O_CLOEXEC | (nofollow ? O_NOFOLLOW : 0));
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS |
                  (resolve & (RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV));
    return (int)syscall(SYS_openat2, b->scope_fd, rest[0] != '\0' ? rest : ".",
                        &how, sizeof(how));
}

/* The object c names beneath the scope: its real path into real (for an
 * existing file) or its parent's real path and name (for a missing one);
 * *exists says which. 0 or the errno the open fails with. */
static int bn_resolve(const pbx_broker *b, const bn_call *c, const char *rest,
                      char *real, bool *exists)
{
    int fd = bn_beneath(b, rest, (c->flags & O_NOFOLLOW) != 0U, c->resolve);
    *exists = fd >= 0;
    if (fd < 0 && errno != ENOENT) {
        /* EXDEV: the walk left the scope (a symlink or ".."). */
        return errno == EXDEV || errno == ELOOP ? EACCES : errno;
    }
    if (fd >= 0) {
        struct stat st;
        bool ok = fstat(fd, &st) == 0 && bn_fd_path(fd, real);
        bool fuse = ok && bn_on_fuse(fd);
        bool reg = ok && S_ISREG(st.st_mode);
        bool dir = ok && S_ISDIR(st.st_mode);
        (void)close(fd);
        return fuse                  ? EACCES
               : !ok                 ? ENOENT
               : S_ISLNK(st.st_mode) ? ELOOP
               : reg                 ? 0
               : dir                 ? EISDIR
                                     : EACCES;
    }
    /* Missing: its directory must exist beneath the scope. */
    static char dir[PBX_BROKER_PATH_MAX];
    const char *slash = strrchr(rest, '/');
    const char *name = slash != NULL ? slash + 1 : rest;
    size_t dn = slash != NULL ? (size_t)(slash - rest) : 0U;
    memcpy(dir, rest, dn);
    dir[dn] = '\0';
    if (name[0] == '\0' || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
        return EACCES;
    }
    int dfd = bn_beneath(b, dir, false, c->resolve);
    if (dfd < 0) {
        return errno == ENOENT ? ENOENT : EACCES;
    }
    static char base[PBX_BROKER_PATH_MAX];
    bool ok = bn_fd_path(dfd, base);
    (void)close(dfd);
    return ok && pbx_peer_broker_join(base, name, real, PBX_BROKER_PATH_MAX) ==
                       PBX_OK
               ? 0
               : ENOENT;
}

/* The selector of real below vfsd's root; NULL when real is not in it. */
static const char *bn_selector(const pbx_broker *b, const char *real)
{
    size_t n = strlen(b->root);
    if (strcmp(b->root, "/") == 0) {
        n = 0U;
    } else if (strncmp(real, b->root, n) != 0 || real[n] != '/') {
        return NULL;
    }
    while (real[n] == '/') {
        n++;
    }
    return real[n] != '\0' ? real + n : NULL;
}

/* Applies what the open's flags ask of the new descriptor fd before it
 * is injected: O_TRUNC on a write truncates (through vfsd, so a grant
 * that does not allow it fails), O_APPEND and O_NONBLOCK become its
 * status flags (shared with the injected copy: one open file). 0 or the
 * errno to answer. */
static int bn_apply_flags(int fd, uint64_t flags)
{
    if ((flags & O_TRUNC) != 0U && ftruncate(fd, 0) != 0) {
        return errno == EIO ? EIO : EACCES;
    }
    int fl = (int)(flags & (uint64_t)(O_APPEND | O_NONBLOCK));
    if (fl != 0 && fcntl(fd, F_SETFL, fl) != 0) {
        return EINVAL;
    }
    return 0;
}

/* Injects the addfd record for notification id: srcfd as the call's
 * result (close-on-exec as flags asked); 0 or the errno to answer. */
static int bn_inject(pbx_broker *b, uint64_t id, int srcfd, uint64_t flags)
{
    int e = bn_apply_flags(srcfd, flags);
    if (e != 0) {
        (void)close(srcfd);
        return e;
    }
    struct seccomp_notif_addfd add;
    memset(&add, 0, sizeof(add));
    add.id = id;
    add.flags = SECCOMP_ADDFD_FLAG_SEND;
    add.srcfd = (uint32_t)srcfd;
    add.newfd_flags = (uint32_t)(flags & O_CLOEXEC);
    /* With FLAG_SEND the kernel answers the call with the new number. */
    int r = ioctl(b->listener, SECCOMP_IOCTL_NOTIF_ADDFD, &add);
    (void)close(srcfd);
    if (r < 0) {
        pbx_broker_say("pbx-broker: ADDFD: %s\n", strerror(errno));
        return errno == ENOENT ? 0 : EMFILE;
    }
    b->injected++;
    return 0;
}

/* Whether openat2's resolve flags of c can be honoured beneath the
 * scope: RESOLVE_IN_ROOT, and RESOLVE_BENEATH with an absolute path or
 * "..", name their objects relative to the program's directory
 * descriptor, which is not mapped exactly here: refused (false, after a
 * line), as the kernel refuses an escape. */
static bool bn_resolve_mappable(const bn_call *c)
{
    bool dotdot = strstr(c->path, "..") != NULL;
    if ((c->resolve & RESOLVE_IN_ROOT) != 0U ||
        ((c->resolve & RESOLVE_BENEATH) != 0U &&
         (c->path[0] == '/' || dotdot))) {
        pbx_broker_say("pbx-broker: %s: openat2 RESOLVE_IN_ROOT or "
                       "RESOLVE_BENEATH with \"..\" is not brokered\n",
                       c->path);
        return false;
    }
    return true;
}

/* What is checked just before a brokered open is asked: vfsd's FUSE
 * mount is up (b->check_mount), and the job's prompt budget has a prompt
 * left. 0, or EACCES with *why set (nobody is asked). */
static int bn_before_asking(pbx_broker *b, const char **why)
{
    static char line[PBX_BROKER_PATH_MAX + 128U];
    if (b->check_mount && !pbx_broker_fuse_up(b->pl.mount)) {
        (void)snprintf(line, sizeof(line),
                       "vfsd's FUSE mount %s is not mounted: no revocable "
                       "descriptor can be handed over, refused without "
                       "asking",
                       b->pl.mount);
        *why = line;
        return EACCES;
    }
    /* A look at a copy: the budget is charged only once a person was
     * asked (bn_brokered), but an empty one refuses without asking. */
    pbx_peer_broker_rate peek = b->rate;
    if (!pbx_peer_broker_rate_take(&peek, pbx_broker_now_ms())) {
        *why = "over the job's prompt rate, refused without a prompt";
        return EACCES;
    }
    return 0;
}

/* Asks for the scope object c names (rest below the scope) and injects
 * the answer; returns the errno to answer (0: injected, answered). */
static int bn_brokered(pbx_broker *b, uint64_t id, const bn_call *c,
                       const char *rest)
{
    static char real[PBX_BROKER_PATH_MAX];
    real[0] = '\0';
    if (!bn_resolve_mappable(c)) {
        return EXDEV;
    }
    bool exists = false;
    int e = bn_resolve(b, c, rest, real, &exists);
    /* A directory cannot be handed over revocably: O_PATH cannot be
     * injected and a real one would list without a grant. */
    const char *why =
        e == EISDIR ? "a directory: only files are brokered" : "refused";
    e = e == EISDIR ? EACCES : e;
    uint8_t op = 0;
    int fe = e != 0 ? 0 : pbx_peer_broker_flags(c->flags, exists, &op);
    if (fe == EACCES || fe == EOPNOTSUPP) {
        why = "O_PATH, O_DIRECTORY and O_TMPFILE cannot be handed over "
              "revocably";
    }
    e = e != 0 ? e : fe;
    const char *sel = e == 0 ? bn_selector(b, real) : NULL;
    if (e == 0 && (sel == NULL || pbx_peer_broker_place(&b->pl, real, &rest) !=
                                      PBX_PEER_BROKER_SCOPE)) {
        e = EACCES;
        why = "resolved outside the scope";
    }
    e = e != 0 ? e : bn_before_asking(b, &why);
    if (e != 0) {
        pbx_broker_say("pbx-broker: %s -> %s: %s (%s)\n", c->path,
                       real[0] != '\0' ? real : "?", strerror(e), why);
        return e;
    }
    pbx_broker_ask q = {real, sel, op, pbx_broker_mode(c->flags, op), c->tid};
    int fd = -1;
    bool person = false;
    b->asked++;
    e = b->ask(b->ask_ctx, &q, &fd, &person);
    if (person) {
        /* Charged only now, for an open that reached a person; a rule's
         * answer costs nothing (it may leave the bucket empty). */
        (void)pbx_peer_broker_rate_take(&b->rate, pbx_broker_now_ms());
    }
    if (e != 0 || fd < 0) {
        return e != 0 ? e : EACCES;
    }
    return bn_inject(b, id, fd, c->flags);
}

/* A reopen of descriptor fd through /proc: checked again as the object
 * it names. Stores the path to go on with in c->abs; 0, the errno, or -1
 * when notification id is gone (the descriptor read was not its). */
static int bn_reopen(pbx_broker *b, uint64_t id, bn_call *c, uint32_t fd)
{
    int copy = bn_getfd(b, c, (int)fd);
    if (!bn_valid(b, id)) {
        if (copy >= 0) {
            (void)close(copy);
        }
        return -1;
    }
    if (copy < 0 && c->denied != 0) {
        pbx_broker_say("pbx-broker: pid %u: its reopen of descriptor %u is "
                       "refused: the broker may not take its descriptors "
                       "(%s; Yama's ptrace_scope: see docs/HOST.md)\n",
                       c->tid, fd, strerror(c->denied));
        return EACCES;
    }
    if (copy < 0) {
        return EBADF;
    }
    static char target[PBX_BROKER_PATH_MAX];
    bool named = bn_fd_path(copy, target);
    bool fuse = bn_on_fuse(copy);
    (void)close(copy);
    if (fuse) {
        pbx_broker_say("pbx-broker: %s: a reopen of a brokered descriptor is "
                       "refused (ask again by the file's own path)\n",
                       c->path);
        return EACCES;
    }
    if (!named) {
        /* A pipe, socket or deleted file: the kernel decides, Landlock
         * allowing (the profile covers /proc/self). */
        return 0;
    }
    const char *rest = NULL;
    if (pbx_peer_broker_place(&b->pl, target, &rest) == PBX_PEER_BROKER_MOUNT) {
        pbx_broker_say("pbx-broker: %s: a reopen of a brokered descriptor is "
                       "refused (ask again by the file's own path)\n",
                       c->path);
        return EACCES;
    }
    (void)snprintf(c->abs, sizeof(c->abs), "%s", target);
    return 0;
}

int pbx_broker_serve_one(pbx_broker *b)
{
    static struct seccomp_notif n;
    static bn_call c;
    memset(&n, 0, sizeof(n));
    /* The listener hangs up once no task uses the filter (the job's last
     * thread exited); RECV would then wait forever. */
    struct pollfd p = {b->listener, POLLIN, 0};
    if (poll(&p, 1U, -1) < 0) {
        return errno == EINTR ? 0 : -1;
    }
    if ((p.revents & POLLIN) == 0) {
        return -1;
    }
    if (ioctl(b->listener, SECCOMP_IOCTL_NOTIF_RECV, &n) != 0) {
        return errno == EINTR || errno == ENOENT ? 0 : -1;
    }
    memset(&c, 0, sizeof(c));
    int e = bn_read_call(b, &n, &c);
    if (e < 0) {
        return 0;
    }
    uint32_t fd = 0;
    bool reopen = e == 0 && pbx_peer_broker_fd_path(c.abs, c.tgid, c.tid, &fd);
    if (reopen) {
        e = bn_reopen(b, n.id, &c, fd);
        if (e < 0) {
            return 0;
        }
    }
    const char *rest = NULL;
    /* The process's own /proc/TGID is its /proc/self (the notification
     * names its thread; the kernel resolves the continued call to the
     * same entry, which the sandbox's rule on /proc/self covers). */
    static char own[PBX_BROKER_PATH_MAX];
    const char *where =
        pbx_peer_broker_proc_own(c.abs, c.tgid, own, sizeof(own)) ? own : c.abs;
    pbx_peer_broker_where w = pbx_peer_broker_place(&b->pl, where, &rest);
    if (e == 0 && w == PBX_PEER_BROKER_SYSTEM) {
        b->continued++;
        bn_answer(b, n.id, 0, true);
        return 0;
    }
    if (e == 0 && w == PBX_PEER_BROKER_SCOPE) {
        e = bn_brokered(b, n.id, &c, rest);
        if (e == 0) {
            return 0;
        }
    } else if (e == 0) {
        e = EACCES;
        pbx_broker_say("pbx-broker: %s: %s, refused without asking\n", c.abs,
                       w == PBX_PEER_BROKER_MOUNT ? "the revocable mount"
                                                  : "outside the scope");
    }
    b->refused++;
    bn_answer(b, n.id, e, false);
    return 0;
}

uint32_t pbx_broker_mode(uint64_t flags, uint8_t op)
{
    uint64_t acc = flags & O_ACCMODE;
    if (acc == O_RDWR) {
        return 3U;
    }
    /* O_RDONLY|O_TRUNC of an existing file asked for a write: its
     * descriptor is write-only (the grant is a write grant), truncated
     * before it is injected. */
    return acc == O_WRONLY || op == PBX_PEER_BROKER_OP_WRITE ? 2U : 1U;
}

uint64_t pbx_broker_now_ms(void)
{
    struct timespec ts;
    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000U + (uint64_t)ts.tv_nsec / 1000000U;
}

int pbx_broker_init(pbx_broker *b, int listener, const char *scope,
                    const char *root, char *scope_real, char *root_real,
                    uint32_t burst, uint32_t per_ms)
{
    memset(b, 0, sizeof(*b));
    b->listener = listener;
    b->scope_fd = -1;
    if (realpath(root, root_real) == NULL ||
        realpath(scope, scope_real) == NULL) {
        pbx_broker_say("pbx-broker: %s: %s\n", scope, strerror(errno));
        return -1;
    }
    b->root = root_real;
    b->pl.scope = scope_real;
    if (bn_selector(b, scope_real) == NULL &&
        strcmp(scope_real, root_real) != 0) {
        pbx_broker_say("pbx-broker: scope %s is not under vfsd's root %s\n",
                       scope_real, root_real);
        return -1;
    }
    b->scope_fd = open(scope_real, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (b->scope_fd < 0) {
        pbx_broker_say("pbx-broker: %s: %s\n", scope, strerror(errno));
        return -1;
    }
    pbx_peer_broker_default_profile(&b->pl);
    pbx_peer_broker_rate_init(&b->rate, burst, per_ms, pbx_broker_now_ms());
    return 0;
}

void pbx_broker_release(pbx_broker *b)
{
    if (b->listener >= 0) {
        (void)close(b->listener);
    }
    if (b->scope_fd >= 0) {
        (void)close(b->scope_fd);
    }
    b->listener = b->scope_fd = -1;
}
