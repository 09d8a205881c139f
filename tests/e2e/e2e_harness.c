/*
 * e2e_harness.c: start powerboxd with an exact startup inventory and talk
 * to it the way its supervisor, peers and callers do.
 */
#define _GNU_SOURCE
#include "e2e_harness.h"
#include "../sock/pbx_test_sock.h"

#include "bootstrap/pbx_bootstrap.h"
#include "core/pbx_core_layout.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The highest descriptor the child closes before exec. */
#define E2E_FD_SWEEP 4096

int e2e_slow(int ms)
{
    const char *v = getenv("PBX_E2E_SLOW");
    long f = v != NULL ? strtol(v, NULL, 10) : 1L;
    return f >= 2L && f <= 100L && ms > 0 && ms <= 10000000 ? ms * (int)f : ms;
}

/* A small deployment: 8 of everything, 4096 selector bytes, 32 slots. */
static void e2e_geometry(pbx_bootstrap_geometry *g, e2e_pbx1_bad bad)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = 4096U;
    pbx_core_pool_layouts(g->layout);
    for (int i = 0; i < PBX_BOOTSTRAP_POOL_COUNT; i++) {
        g->capacity[i] = 8U;
    }
    g->capacity[PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] = 4096U;
    g->capacity[PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] =
        bad == E2E_PBX1_TRANSIENT    ? 5000U
        : bad == E2E_PBX1_TSLOTS_MIN ? 10U
                                     : 32U;
    /* A window of 8 calls on every peer route; deadlines of 5 s, 2 s to
     * procd and 1 s through a caller's scope; a request uncommitted for
     * 1.5 s ends, a public connection silent for 2 s is closed. */
    g->call_window = 8U;
    g->capacity[PBX_BOOTSTRAP_POOL_CALLS] = PBX_BOOTSTRAP_CALL_ROUTES * 8U;
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g->time_ms[t] = (uint32_t)E2E_DEADLINE_MS;
    }
    g->time_ms[PBX_BOOTSTRAP_TIME_SCOPE] = (uint32_t)E2E_DEADLINE_SCOPE_MS;
    g->time_ms[PBX_BOOTSTRAP_TIME_PROCD] = (uint32_t)E2E_DEADLINE_PROCD_MS;
    g->time_ms[PBX_BOOTSTRAP_TIME_OPEN] = (uint32_t)E2E_DEADLINE_OPEN_MS;
    g->time_ms[PBX_BOOTSTRAP_TIME_IDLE] = (uint32_t)E2E_DEADLINE_IDLE_MS;
    /* Under PBX_E2E_SLOW every deadline grows with the harness's waits,
     * so that each keeps its place among them (e2e_slow). */
    for (size_t t = 0; t < (size_t)PBX_BOOTSTRAP_TIME_COUNT; t++) {
        g->time_ms[t] = (uint32_t)e2e_slow((int)g->time_ms[t]);
    }
    if (bad == E2E_PBX1_LAYOUT) {
        g->layout[PBX_BOOTSTRAP_POOL_GRANTS].record_size_bytes += 8U;
    }
    (void)pbx_bootstrap_pages_compute(g, &g->arena_page_count);
    if (bad == E2E_PBX1_EXTENT) {
        g->arena_page_count++;
    }
}

int e2e_pbx1_fd(const uint8_t *rec, size_t len)
{
    int all = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    int fd = memfd_create("pbx1", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || write(fd, rec, len) != (ssize_t)len ||
        fcntl(fd, F_ADD_SEALS, all) != 0) {
        return fd < 0 ? -1 : (close(fd), -1);
    }
    return fd;
}

/* Builds the PBX1 object for bad; -1 means "slot 3 empty". */
static int e2e_pbx1(e2e_pbx1_bad bad)
{
    pbx_bootstrap_geometry g;
    uint8_t rec[PBX_BOOTSTRAP_RECORD_BYTES];
    size_t len = sizeof(rec);
    int all = F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE;
    if (bad == E2E_PBX1_NONE) {
        return -1;
    }
    if (bad == E2E_PBX1_DEVNULL) {
        return open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    e2e_geometry(&g, bad);
    if (pbx_bootstrap_encode(&g, rec, sizeof(rec)) != PBX_OK) {
        return -1;
    }
    if (bad == E2E_PBX1_DIGEST) {
        rec[20] ^= 1U;
    }
    len -= bad == E2E_PBX1_SHORT ? 1U : 0U;
    if (bad != E2E_PBX1_PARTIAL && bad != E2E_PBX1_UNSEALED) {
        return e2e_pbx1_fd(rec, len);
    }
    int fd = memfd_create("pbx1", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0 || write(fd, rec, len) != (ssize_t)len) {
        return fd < 0 ? -1 : (close(fd), -1);
    }
    if (bad == E2E_PBX1_PARTIAL) {
        (void)fcntl(fd, F_ADD_SEALS, all & ~F_SEAL_WRITE);
    } else if (bad != E2E_PBX1_UNSEALED) {
        (void)fcntl(fd, F_ADD_SEALS, all);
    }
    return fd;
}

bool e2e_socketpair(int type, int *sv)
{
    return socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) == 0;
}

bool e2e_prepare(e2e_proc *p, e2e_pbx1_bad bad)
{
    static unsigned serial;
    /* Slots 4..8, then slot 10 (the broker); slot 9 stays empty. */
    static const int types[6] = {SOCK_DGRAM,     SOCK_SEQPACKET,
                                 SOCK_SEQPACKET, SOCK_SEQPACKET,
                                 SOCK_DGRAM,     SOCK_SEQPACKET};
    static const int at[6] = {1, 2, 3, 4, 5, 7};
    int *ours[6] = {&p->supervisor, &p->vfsd,    &p->ttyd,
                    &p->procd,      &p->launchd, &p->broker};
    int sv[2];
    memset(p, 0, sizeof(*p));
    for (int i = 0; i < E2E_SLOTS; i++) {
        p->theirs[i] = -1;
    }
    for (int i = 0; i < 6; i++) {
        *ours[i] = -1;
    }
    p->log = -1;
    for (int i = 0; i < 6; i++) {
        if (!e2e_socketpair(types[i], sv)) {
            e2e_close(p);
            return false;
        }
        *ours[i] = sv[0];
        p->theirs[at[i]] = sv[1];
    }
    p->theirs[0] = e2e_pbx1(bad);
    /* A memory file, not a pipe: powerboxd can never block writing to it,
     * and the harness reads it at any offset without consuming it. */
    p->log = memfd_create("powerboxd-stderr", MFD_CLOEXEC);
    (void)snprintf(p->name, sizeof(p->name), "@pbx-e2e-%d-%u", (int)getpid(),
                   serial++);
    return true;
}

/* In the child: theirs[i] to slot 3 + i, everything else above 2 closed. */
static _Noreturn void e2e_exec(const char *path, const e2e_proc *p)
{
    int high[E2E_SLOTS];
    if (p->log >= 0) {
        (void)dup2(p->log, 2);
    }
    for (int i = 0; i < E2E_SLOTS; i++) {
        high[i] = p->theirs[i] >= 0 ? fcntl(p->theirs[i], F_DUPFD, 100) : -1;
    }
    for (int i = 0; i < E2E_SLOTS; i++) {
        if (high[i] >= 0) {
            (void)dup2(high[i], 3 + i);
        } else {
            (void)close(3 + i);
        }
    }
    for (int fd = 3 + E2E_SLOTS; fd < E2E_FD_SWEEP; fd++) {
        (void)close(fd);
    }
    char *const argv[] = {(char *)path, (char *)p->name, NULL};
    if (p->before_exec != NULL) {
        p->before_exec();
    }
    execv(path, p->argv != NULL ? (char *const *)p->argv : argv);
    _exit(127);
}

bool e2e_start(e2e_proc *p)
{
    const char *path = getenv("PBX_POWERBOXD");
    if (path == NULL) {
        return false;
    }
    p->pid = fork();
    if (p->pid == 0) {
        e2e_exec(path, p);
    }
    for (int i = 0; i < E2E_SLOTS; i++) {
        if (p->theirs[i] >= 0) {
            (void)close(p->theirs[i]);
            p->theirs[i] = -1;
        }
    }
    if (p->pid < 0) {
        p->pid = 0;
        return false;
    }
    return true;
}

bool e2e_wait_ready(e2e_proc *p)
{
    uint8_t b[64];
    long n = e2e_recv(p->supervisor, b, sizeof(b), NULL, 0, NULL, 5000);
    return n == 32 && memcmp(b, "PBXR", 4) == 0 && b[4] == 1U && b[6] == 1U;
}

int e2e_exit_status(e2e_proc *p)
{
    int st = 0;
    for (int i = 0; i < e2e_slow(500) && p->pid > 0; i++) {
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            p->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        struct timespec ts = {0, 10000000L};
        (void)nanosleep(&ts, NULL);
    }
    return -2;
}

int e2e_exit_cpu(e2e_proc *p, int ms, long *cpu_ms)
{
    int st = 0;
    struct rusage ru;
    *cpu_ms = -1;
    for (int i = 0; i < ms / 10 + 1 && p->pid > 0; i++) {
        memset(&ru, 0, sizeof(ru));
        if (wait4(p->pid, &st, WNOHANG, &ru) == p->pid) {
            p->pid = 0;
            *cpu_ms = (long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000L +
                      (long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000L;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        struct timespec ts = {0, 10000000L};
        (void)nanosleep(&ts, NULL);
    }
    return -2;
}

bool e2e_limit_fds(const e2e_proc *p, unsigned limit)
{
    struct rlimit rl = {limit, limit};
    return p->pid > 0 && prlimit(p->pid, RLIMIT_NOFILE, &rl, NULL) == 0;
}

/* Reads the whole log into a fresh NUL-terminated buffer (the caller
 * frees it); NULL when there is none or it cannot be read. */
static char *e2e_log_read(const e2e_proc *p)
{
    struct stat st;
    if (p->log < 0 || fstat(p->log, &st) != 0 || st.st_size < 0) {
        return NULL;
    }
    size_t len = (size_t)st.st_size;
    char *buf = malloc(len + 1U);
    if (buf == NULL) {
        return NULL;
    }
    ssize_t got = pread(p->log, buf, len, 0);
    if (got < 0) {
        free(buf);
        return NULL;
    }
    buf[got] = '\0';
    return buf;
}

bool e2e_log_text(const e2e_proc *p, char *buf, size_t cap)
{
    char *text = e2e_log_read(p);
    if (text == NULL || cap == 0U) {
        free(text);
        return false;
    }
    (void)snprintf(buf, cap, "%s", text);
    free(text);
    return true;
}

int e2e_log_count(const e2e_proc *p, const char *needle)
{
    char *text = e2e_log_read(p);
    if (text == NULL || needle[0] == '\0') {
        free(text);
        return -1;
    }
    int n = 0;
    for (const char *at = strstr(text, needle); at != NULL && n < INT32_MAX;
         at = strstr(at + 1, needle)) {
        n++;
    }
    free(text);
    return n;
}

long e2e_log_sum(const e2e_proc *p, const char *head)
{
    char *text = e2e_log_read(p);
    size_t hl = strlen(head);
    if (text == NULL || hl == 0U) {
        free(text);
        return -1;
    }
    long sum = 0;
    for (const char *at = strstr(text, head); at != NULL;
         at = strstr(at + hl, head)) {
        long n = 0;
        /* At most 9 digits: a count, never an overflow. */
        for (const char *d = at + hl; *d >= '0' && *d <= '9' && d < at + hl + 9;
             d++) {
            n = n * 10 + (*d - '0');
        }
        sum += n;
    }
    free(text);
    return sum;
}

bool e2e_log_wait(const e2e_proc *p, const char *needle, int want, int ms)
{
    for (int i = 0; i < e2e_slow(ms) / 10 + 1; i++) {
        if (e2e_log_count(p, needle) >= want) {
            return true;
        }
        struct timespec ts = {0, 10000000L};
        (void)nanosleep(&ts, NULL);
    }
    return false;
}

/* Copies what powerboxd wrote to its stderr to the harness's own. */
static void e2e_log_dump(const e2e_proc *p)
{
    char *text = e2e_log_read(p);
    if (text != NULL) {
        (void)fputs(text, stderr);
        free(text);
    }
}

void e2e_close(e2e_proc *p)
{
    int *fds[6] = {&p->supervisor, &p->vfsd,    &p->ttyd,
                   &p->procd,      &p->launchd, &p->broker};
    for (int i = 0; i < 6; i++) {
        if (*fds[i] >= 0) {
            (void)close(*fds[i]);
            *fds[i] = -1;
        }
    }
    for (int i = 0; i < E2E_SLOTS; i++) {
        if (p->theirs[i] >= 0) {
            (void)close(p->theirs[i]);
            p->theirs[i] = -1;
        }
    }
    if (p->pid > 0) {
        (void)kill(p->pid, SIGKILL);
        (void)waitpid(p->pid, NULL, 0);
        p->pid = 0;
    }
    if (p->log >= 0) {
        e2e_log_dump(p);
        (void)close(p->log);
        p->log = -1;
    }
}

int e2e_connect(const e2e_proc *p)
{
    return pbx_test_sock_connect(p->name);
}

bool e2e_reply(int fd, const pbx_ipc_frame *req, uint8_t *buf, size_t len,
               const int *fds, int nfds)
{
    return pbx_ipc_frame_set_seq(buf, len, req->seq) == PBX_OK &&
           e2e_send(fd, buf, len, fds, nfds);
}

bool e2e_send(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
    return pbx_test_sock_send(fd, buf, len, fds, nfds);
}

/* Stores (or closes) the descriptors of one control message. */
static void e2e_take_fds(struct msghdr *mh, int *fds, int fds_cap, int *nfds)
{
    int n = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL;
         c = CMSG_NXTHDR(mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
            if (fds != NULL && n < fds_cap) {
                fds[n++] = fd;
            } else {
                (void)close(fd);
            }
        }
    }
    if (nfds != NULL) {
        *nfds = n;
    }
}

long e2e_recv(int fd, uint8_t *buf, size_t cap, int *fds, int fds_cap,
              int *nfds, int ms)
{
    union {
        char buf[CMSG_SPACE(sizeof(int) * 16)];
        struct cmsghdr align;
    } ctrl;
    struct pollfd pf = {fd, POLLIN, 0};
    struct iovec iov = {buf, cap};
    struct msghdr mh;
    if (nfds != NULL) {
        *nfds = 0;
    }
    if (poll(&pf, 1, e2e_slow(ms)) != 1 || (pf.revents & POLLIN) == 0) {
        return -1;
    }
    memset(&mh, 0, sizeof(mh));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctrl.buf;
    mh.msg_controllen = sizeof(ctrl.buf);
    ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0) {
        return -1;
    }
    e2e_take_fds(&mh, fds, fds_cap, nfds);
    return (long)n;
}

int e2e_take_fd(const e2e_proc *p, int slot)
{
    if (p->pid <= 0) {
        return -1;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, p->pid, 0);
    if (pidfd < 0) {
        return -1;
    }
    int fd = (int)syscall(SYS_pidfd_getfd, pidfd, slot, 0);
    (void)close(pidfd);
    return fd;
}

int e2e_fd_count(pid_t pid)
{
    char path[64];
    int n = 0;
    (void)snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
    DIR *d = opendir(path);
    if (d == NULL) {
        return -1;
    }
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        n += e->d_name[0] != '.';
    }
    (void)closedir(d);
    return n;
}
