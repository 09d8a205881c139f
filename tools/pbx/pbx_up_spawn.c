/*
 * pbx_up_spawn.c: how `pbx up` starts one stack process: its command
 * line, a fork whose child gets exactly the descriptors it is given (at
 * their numbers, at powerboxd's slots, or made by the child itself), and
 * the bounded wait for its readiness (docs/HOST.md, "The supervisor").
 */
#define _GNU_SOURCE
#include "tools/pbx/pbx_up_spawn.h"
#include "bootstrap/pbx_bootstrap.h"
#include "capabi/pbx_capabi.h"
#include "peers/common/pbx_peer_io.h"
#include "tools/pbx/pbx_tool.h"
#include "tools/pbx/pbx_up.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* Appends one argument (formatted); sets full instead of overflowing. */
void pbx_up_arg(pbx_up_argv *a, const char *fmt, ...)
{
    if (a->full || a->n >= PBX_UP_ARGS_MAX) {
        a->full = true;
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    size_t room = sizeof(a->text) - a->used;
    int len = vsnprintf(a->text + a->used, room, fmt, ap);
    va_end(ap);
    if (len < 0 || (size_t)len >= room) {
        a->full = true;
        return;
    }
    a->arg[a->n++] = a->text + a->used;
    a->arg[a->n] = NULL;
    a->used += (size_t)len + 1U;
}

/* DIR/name into out; false (noted) when it does not fit. */
bool pbx_up_path(const pbx_up *u, const char *name, char *out)
{
    int n = snprintf(out, PBX_UP_PATH_MAX, "%s/%s", u->dir, name);
    return n > 0 && n < (int)PBX_UP_PATH_MAX;
}

/* In the child, before exec: waits on gate for the one descriptor the
 * supervisor sends (one byte with it by SCM_RIGHTS) and returns it; exits
 * 127 when the gate closes first or anything else comes. The wait ends:
 * the supervisor always sends or closes its end, and the child dies with
 * the supervisor (PR_SET_PDEATHSIG). */
static int pbx_up_child_gate(int gate)
{
    char one = 0;
    struct iovec iov = {&one, 1U};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl;
    struct msghdr mh;
    memset(&mh, 0, sizeof(mh));
    memset(&ctl, 0, sizeof(ctl));
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof(ctl.buf);
    ssize_t got = -1;
    for (int tries = 0; tries < 64; tries++) {
        got = recvmsg(gate, &mh, MSG_CMSG_CLOEXEC);
        if (got >= 0 || errno != EINTR) {
            break;
        }
    }
    const struct cmsghdr *c = got == 1 ? CMSG_FIRSTHDR(&mh) : NULL;
    int fd = -1;
    if (c == NULL || c->cmsg_level != SOL_SOCKET ||
        c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(sizeof(int)) ||
        (mh.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) != 0) {
        (void)fprintf(stderr, "pbx up: no route came through the gate\n");
        _exit(127);
    }
    memcpy(&fd, CMSG_DATA(c), sizeof(int));
    return fd;
}

/* Puts slot[i] at 3 + i, every other descriptor from 3 up closed. */
static void pbx_up_child_slots(const pbx_up_fds *f)
{
    int high[16];
    for (size_t i = 0U; i < f->nslot && i < 16U; i++) {
        int from = f->slot[i];
        if (f->gate >= 0 && i == f->gate_slot) {
            from = pbx_up_child_gate(f->gate);
        }
        high[i] = from < 0 ? -1 : fcntl(from, F_DUPFD, 64);
        if (from >= 0 && high[i] < 0) {
            _exit(127);
        }
    }
    for (size_t i = 0U; i < f->nslot && i < 16U; i++) {
        int to = 3 + (int)i;
        if (high[i] < 0) {
            (void)close(to);
        } else if (dup2(high[i], to) < 0) {
            _exit(127);
        }
    }
    (void)close_range(3U + (unsigned)f->nslot, ~0U, 0);
}

/* In the child: makes a pair of type (so the kernel names this process,
 * the peer after exec, as both ends' peer), sends one end back over the
 * channel ch and puts the other end at ch's number for the peer. */
static void pbx_up_child_handoff(int ch, int type)
{
    int sv[2];
    const uint8_t one = 'r';
    if (socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0) {
        _exit(127);
    }
    if (pbx_peer_io_send_fds(ch, &one, 1U, &sv[0], 1U, 0) != 0 ||
        dup2(sv[1], ch) != ch) {
        _exit(127);
    }
    (void)close(sv[0]);
    (void)close(sv[1]);
}

/* The child side of a spawn: its own session and process group (so the
 * terminal's job control reaches only the supervisor and ttyd can read
 * the terminal without being a background job), killed if the supervisor
 * dies, default signal handling, stdin /dev/null, stdout and stderr into
 * the log pipe; then exec. Never returns. */
static void pbx_up_child(pid_t parent, int logw, const pbx_up_fds *f,
                         char *const *argv)
{
    (void)setsid();
    (void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0UL, 0UL, 0UL);
    if (getppid() != parent) {
        _exit(127);
    }
    sigset_t none;
    (void)sigemptyset(&none);
    (void)sigprocmask(SIG_SETMASK, &none, NULL);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE, SIGCHLD};
    for (size_t i = 0U; i < sizeof(sigs) / sizeof(*sigs); i++) {
        (void)signal(sigs[i], SIG_DFL);
    }
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0 || dup2(null, 0) < 0 || dup2(logw, 1) < 0 ||
        dup2(logw, 2) < 0) {
        _exit(127);
    }
    for (size_t i = 0U; i < f->nkeep; i++) {
        (void)fcntl(f->keep[i], F_SETFD, 0);
    }
    for (size_t i = 0U; i < f->nhandoff; i++) {
        pbx_up_child_handoff(f->handoff[i], f->handoff_type[i]);
    }
    if (f->nslot > 0U) {
        pbx_up_child_slots(f);
    }
    (void)execv(argv[0], argv);
    (void)fprintf(stderr, "pbx up: cannot run %s: %s\n", argv[0],
                  strerror(errno));
    _exit(127);
}

/* Starts u->proc[idx] with argv and the descriptors f; notes its pid. */
int pbx_up_spawn(pbx_up *u, size_t idx, const pbx_up_argv *a,
                 const pbx_up_fds *f)
{
    pbx_up_proc *p = &u->proc[idx];
    int pipefd[2];
    if (a->full) {
        pbx_up_note(u, "%s: command line too long", p->name);
        return -1;
    }
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
        pbx_up_note(u, "%s: pipe: %s", p->name, strerror(errno));
        return -1;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid == 0) {
        pbx_up_child(parent, pipefd[1], f, a->arg);
    }
    (void)close(pipefd[1]);
    if (pid < 0) {
        (void)close(pipefd[0]);
        pbx_up_note(u, "%s: fork: %s", p->name, strerror(errno));
        return -1;
    }
    (void)fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
    pbx_up_proc_closed(u, p);
    p->err = pipefd[0];
    p->len = 0U;
    p->pid = pid;
    p->last_pid = pid;
    p->starts++;
    pbx_up_note(u, "%s[%ld] started: %s", p->name, (long)pid, a->arg[0]);
    pbx_up_status_write(u);
    return 0;
}

/* Waits (bounded, serving logs and signals) until fd is readable; false
 * (noted) on timeout, a stop, a death during the first start, or the
 * death of stack process watch (the one expected to answer). */
bool pbx_up_await(pbx_up *u, int fd, const char *name, size_t watch)
{
    int64_t end = pbx_up_now_ms() + PBX_UP_READY_MS;
    for (int round = 0; round < 100000; round++) {
        if (u->stopping || u->died) {
            return false;
        }
        if (u->proc[watch].pid == 0) {
            pbx_up_note(u, "%s: %s died meanwhile", name, u->proc[watch].name);
            return false;
        }
        int64_t left = end - pbx_up_now_ms();
        if (left <= 0) {
            pbx_up_note(u, "%s not ready within %d ms", name, PBX_UP_READY_MS);
            return false;
        }
        if (pbx_up_pump(u, fd, (int)left)) {
            return true;
        }
    }
    return false;
}

/* Starts a peer with a --ready-fd pipe and an --attach-fd channel (whose
 * other end becomes u->proc[idx].chan) and waits for its `ready` line;
 * h (may be NULL) names route hand-offs whose channels the child keeps. */
int pbx_up_peer_h(pbx_up *u, size_t idx, pbx_up_argv *a, const int *keep,
                  size_t nkeep, const pbx_up_handoffs *h)
{
    int rp[2];
    int ch[2];
    if (pipe2(rp, O_CLOEXEC) != 0) {
        pbx_up_note(u, "pipe: %s", strerror(errno));
        return -1;
    }
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ch) != 0) {
        pbx_up_note(u, "socketpair: %s", strerror(errno));
        (void)close(rp[0]);
        (void)close(rp[1]);
        return -1;
    }
    int all[10];
    size_t n = 0U;
    for (; n < nkeep && n < 6U; n++) {
        all[n] = keep[n];
    }
    all[n++] = rp[1];
    all[n++] = ch[1];
    for (size_t i = 0U; h != NULL && i < h->n && n < 10U; i++) {
        all[n++] = h->ch[i];
    }
    pbx_up_arg(a, "--ready-fd");
    pbx_up_arg(a, "%d", rp[1]);
    pbx_up_arg(a, "--attach-fd");
    pbx_up_arg(a, "%d", ch[1]);
    pbx_up_fds f = {.gate = -1,
                    .keep = all,
                    .nkeep = n,
                    .handoff = h != NULL ? h->ch : NULL,
                    .handoff_type = h != NULL ? h->type : NULL,
                    .nhandoff = h != NULL ? h->n : 0U};
    int rc = pbx_up_spawn(u, idx, a, &f);
    (void)close(rp[1]);
    (void)close(ch[1]);
    if (u->proc[idx].chan >= 0) {
        (void)close(u->proc[idx].chan);
    }
    u->proc[idx].chan = ch[0];
    const char *name = u->proc[idx].name;
    if (rc == 0 && pbx_up_await(u, rp[0], name, idx)) {
        char line[16] = {0};
        ssize_t got = read(rp[0], line, sizeof(line) - 1U);
        if (got != 6 || strcmp(line, "ready\n") != 0) {
            pbx_up_note(u, "%s did not become ready", name);
            u->start_failed =
                u->start_failed != 0U ? u->start_failed : idx + 1U;
            rc = -1;
        }
    } else {
        u->start_failed = u->start_failed != 0U ? u->start_failed : idx + 1U;
        rc = -1;
    }
    (void)close(rp[0]);
    return rc;
}
