/*
 * fdcat.c: pbx-test-fdcat, the program of the e2e scenario pbx-run-grant
 * (tests/e2e/run.py). Statically linked, so it also runs sandboxed.
 *
 *   pbx-test-fdcat [--again] FD
 *
 * Reads the whole file behind the object at descriptor FD (a grant's,
 * put there by pbx-stage) through pbx_obj_read and writes exactly its
 * bytes to standard output. With --again it then waits for one line on
 * standard input (the scenario ends the grant meanwhile) and reads again
 * from offset 0: it says "read again: ok" or "read again: <why>" on
 * standard error and exits 0 or 3. A failed first read exits 1.
 *
 *   pbx-test-fdcat --open [--exceptional] [--job-lifetime] SELECTOR
 *   pbx-test-fdcat --cycles N SELECTOR
 *   pbx-test-fdcat --asks N SELECTOR
 *   pbx-test-fdcat --installed FD
 *
 * Inside a launchd job (the restart and chaos scenarios). --open asks for
 * SELECTOR in runtime-reply mode through pbx_app_open (one-shot unless
 * --job-lifetime, routine unless --exceptional, no bound on the wait),
 * prints "outcome=approved grant=I:G" (or "outcome=failed error=...") and
 * "read=ok N" (the bytes read through the object) on standard output,
 * then serves standard input one line at a time: "read" reads again from
 * offset 0 ("read=ok N" or "read=failed WHY"), "consume" consumes the
 * grant ("consume=ok" or "consume=failed WHY"), "send PATH" sends a
 * copy of the object's descriptor to the datagram socket PATH (the
 * scenario then reads through it outside the stack; "send=ok" or
 * "send=failed WHY"), "openfd" asks vfsd for a revocable read descriptor
 * of the object (pbx_obj_open_fd; "openfd=ok" or "openfd=failed WHY"),
 * "fdread" reads 100 bytes through that descriptor ("fdread=ok N" or
 * "fdread=failed ERRNO", e.g. EIO once the grant has ended: scenario
 * any-consume); end of input exits 0 (1
 * when the open failed). --cycles runs N one-shot lifecycles (open, read,
 * consume), prints "cycles=N ok=K" and exits 0 when all K == N, else 4.
 * --asks makes N exceptional one-shot requests of SELECTOR in a row on
 * its own job connection (each a prompt unless refused first) and prints
 * "asks=N approved=A denied=D rate=R other=O", R counting the requests
 * launchd refused over the job's prompt budget; exits 0. --installed
 * prints "installed=FD", then serves the same commands as --open on the
 * object pbx-stage installed at FD (an install-mode grant, e2e
 * any-installer-lost); end of input exits 0.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "peers/common/pbx_peer_io.h"

#include "ipc/pbx_ipc.h"
#include "peers/app/pbx_app.h"
#include "peers/app/pbx_obj.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_vfs.h"

/* The largest file read (the scenario's is small). */
#define FDCAT_MAX 65536U

/* Reads everything behind obj into buf[0..FDCAT_MAX); returns the status
 * and the length in *n. */
static int fdcat_read(int obj, char *buf, size_t *n)
{
    *n = 0;
    for (unsigned k = 0; k < FDCAT_MAX / 4096U; k++) {
        size_t got = 0;
        int st = pbx_obj_read(obj, *n, buf + *n, 4096U, &got);
        *n += got;
        if (st != 0 || got == 0U) {
            return st;
        }
    }
    return 0;
}

/* Prints what a read through the object gave: "read=ok N" or
 * "read=failed WHY" (rd -1: no object was held). */
static void fdcat_said(int rd, size_t n)
{
    if (rd == 0) {
        printf("read=ok %zu\n", n);
    } else {
        printf("read=failed %s\n", rd < 0 ? "no object" : pbx_obj_strerror(rd));
    }
    (void)fflush(stdout);
}

/* One runtime-reply open of selector; prints the outcome line and the
 * first read's. Returns the open's status (obj in *g when approved). */
static int fdcat_open(const char *selector, bool job, bool exceptional,
                      pbx_app_grant *g, char *buf)
{
    pbx_app_request rq;
    memset(&rq, 0, sizeof(rq));
    rq.selector = selector;
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.lifetime = job ? PBX_IPC_LIFETIME_JOB : PBX_IPC_LIFETIME_ONE_SHOT;
    rq.urgency =
        exceptional ? PBX_IPC_URGENCY_EXCEPTIONAL : PBX_IPC_URGENCY_ROUTINE;
    int st = pbx_app_open(&rq, g);
    if (st != PBX_APP_OK) {
        printf("outcome=failed error=%s\n", pbx_app_strerror(st));
        (void)fflush(stdout);
        return st;
    }
    printf("outcome=approved grant=%u:%u\n", g->grant.index, g->grant.gen);
    size_t n = 0;
    int rd = fdcat_read(g->obj, buf, &n);
    fdcat_said(rd, n);
    return st;
}

/* "send PATH": one datagram holding a copy of obj to the socket PATH. */
static void fdcat_send(int obj, const char *path)
{
    struct sockaddr_un a;
    memset(&a, 0, sizeof(a));
    a.sun_family = AF_UNIX;
    size_t len = strcspn(path, "\n");
    int s = -1;
    const char *why = obj < 0                     ? "no object"
                      : len >= sizeof(a.sun_path) ? "path too long"
                                                  : NULL;
    if (why == NULL) {
        memcpy(a.sun_path, path, len);
        s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        static const uint8_t one[1] = {'o'};
        if (s < 0 || connect(s, (const struct sockaddr *)&a, sizeof(a)) != 0 ||
            pbx_peer_io_send(s, one, sizeof(one), obj) != 0) {
            why = strerror(errno);
        }
    }
    if (s >= 0) {
        (void)close(s);
    }
    printf(why == NULL ? "send=ok%s\n" : "send=failed %s\n",
           why == NULL ? "" : why);
}

/* "openfd": a revocable read descriptor of obj into *fd (one at most). */
static void fdcat_open_fd(int obj, int *fd)
{
    int st = (int)PBX_E_OBJ_ARG;
    if (*fd < 0 && obj >= 0) {
        st = pbx_obj_open_fd(obj, PBX_PEER_VFS_MODE_READ, fd);
    }
    printf(st == 0 ? "openfd=ok%s\n" : "openfd=failed %s\n",
           st == 0 ? "" : pbx_obj_strerror(st));
}

/* "fdread": the next 100 bytes through the revocable descriptor fd; the
 * errno's symbolic name when the read fails (the scenario wants EIO). */
static void fdcat_fd_read(int fd)
{
    char piece[100];
    ssize_t n = fd >= 0 ? read(fd, piece, sizeof(piece)) : -1;
    int e = fd >= 0 ? errno : EBADF;
    if (n >= 0) {
        printf("fdread=ok %zd\n", n);
    } else {
        printf("fdread=failed %s\n", e == EIO ? "EIO" : strerror(e));
    }
}

/* One command per line of standard input on the object of g (its
 * revocable descriptor, once "openfd" made it, in fd). */
static void fdcat_commands(pbx_app_grant *g, char *buf)
{
    int fd = -1;
    char line[512];
    for (unsigned k = 0; k < 1000000U && fgets(line, sizeof(line), stdin);
         k++) {
        if (strncmp(line, "read", 4) == 0) {
            size_t n = 0;
            int rd = g->obj >= 0 ? fdcat_read(g->obj, buf, &n) : -1;
            fdcat_said(rd, n);
        } else if (strncmp(line, "send ", 5) == 0) {
            fdcat_send(g->obj, line + 5);
        } else if (strncmp(line, "openfd", 6) == 0) {
            fdcat_open_fd(g->obj, &fd);
        } else if (strncmp(line, "fdread", 6) == 0) {
            fdcat_fd_read(fd);
        } else if (strncmp(line, "consume", 7) == 0) {
            int c = pbx_app_consume(g);
            printf(c == 0 ? "consume=ok%s\n" : "consume=failed %s\n",
                   c == 0 ? "" : pbx_app_strerror(c));
        }
        (void)fflush(stdout);
    }
}

/* --open: the open, then one command per line of standard input. */
static int fdcat_serve(const char *selector, bool job, bool exceptional,
                       char *buf)
{
    pbx_app_grant g;
    memset(&g, 0, sizeof(g));
    g.obj = -1;
    int st = fdcat_open(selector, job, exceptional, &g, buf);
    fdcat_commands(&g, buf);
    return st == PBX_APP_OK ? 0 : 1;
}

/* --installed FD: the commands on the object pbx-stage installed at FD
 * (an install-mode grant: e2e any-installer-lost). */
static int fdcat_installed(int obj, char *buf)
{
    pbx_app_grant g;
    memset(&g, 0, sizeof(g));
    g.obj = obj;
    printf("installed=%d\n", obj);
    (void)fflush(stdout);
    fdcat_commands(&g, buf);
    return 0;
}

/* --cycles: n one-shot lifecycles of selector (open, read, consume). */
static int fdcat_cycles(uint64_t n, const char *selector, char *buf)
{
    uint64_t ok = 0;
    for (uint64_t i = 0; i < n; i++) {
        pbx_app_grant g;
        memset(&g, 0, sizeof(g));
        g.obj = -1;
        size_t got = 0;
        if (fdcat_open(selector, false, false, &g, buf) == PBX_APP_OK &&
            fdcat_read(g.obj, buf, &got) == 0 && pbx_app_consume(&g) == 0) {
            ok++;
        }
        if (g.obj >= 0) {
            (void)close(g.obj);
        }
    }
    printf("cycles=%llu ok=%llu\n", (unsigned long long)n,
           (unsigned long long)ok);
    return ok == n ? 0 : 4;
}

/* --asks: n exceptional one-shot requests of selector, counted by how
 * each ended. */
static int fdcat_asks(uint64_t n, const char *selector)
{
    uint64_t approved = 0;
    uint64_t denied = 0;
    uint64_t rate = 0;
    for (uint64_t i = 0; i < n; i++) {
        pbx_app_request rq;
        memset(&rq, 0, sizeof(rq));
        rq.selector = selector;
        rq.operation = PBX_IPC_OPERATION_READ;
        rq.lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
        rq.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
        pbx_app_grant g;
        memset(&g, 0, sizeof(g));
        g.obj = -1;
        int st = pbx_app_open(&rq, &g);
        approved += st == PBX_APP_OK;
        denied += st == PBX_APP_E_DENIED;
        rate += st == PBX_APP_E_REFUSED &&
                g.status == (uint32_t)PBX_E_PEER_PROMPT_RATE;
        if (g.obj >= 0) {
            (void)close(g.obj);
        }
    }
    printf("asks=%llu approved=%llu denied=%llu rate=%llu other=%llu\n",
           (unsigned long long)n, (unsigned long long)approved,
           (unsigned long long)denied, (unsigned long long)rate,
           (unsigned long long)(n - approved - denied - rate));
    return 0;
}

/* The --open, --cycles and --asks forms; -1 when argv is none. */
static int fdcat_app(int argc, char **argv, char *buf)
{
    if (argc == 4 && strcmp(argv[1], "--asks") == 0) {
        uint64_t n = 0;
        return pbx_peer_parse_u64(argv[2], 100000U, &n) && n > 0U
                   ? fdcat_asks(n, argv[3])
                   : -1;
    }
    if (argc == 3 && strcmp(argv[1], "--installed") == 0) {
        uint64_t fd = 0;
        return pbx_peer_parse_u64(argv[2], 1023U, &fd)
                   ? fdcat_installed((int)fd, buf)
                   : -1;
    }
    if (argc == 4 && strcmp(argv[1], "--cycles") == 0) {
        uint64_t n = 0;
        return pbx_peer_parse_u64(argv[2], 100000U, &n) && n > 0U
                   ? fdcat_cycles(n, argv[3], buf)
                   : -1;
    }
    if (argc < 3 || strcmp(argv[1], "--open") != 0) {
        return -1;
    }
    bool job = false;
    bool exceptional = false;
    for (int i = 2; i < argc - 1; i++) {
        if (strcmp(argv[i], "--job-lifetime") == 0) {
            job = true;
        } else if (strcmp(argv[i], "--exceptional") == 0) {
            exceptional = true;
        } else {
            return -1;
        }
    }
    return fdcat_serve(argv[argc - 1], job, exceptional, buf);
}

int main(int argc, char **argv)
{
    static char buf[FDCAT_MAX];
    if (argc >= 2 && strncmp(argv[1], "--", 2) == 0 &&
        strcmp(argv[1], "--again") != 0) {
        int rc = fdcat_app(argc, argv, buf);
        if (rc < 0) {
            (void)fputs("usage: pbx-test-fdcat --open [--exceptional] "
                        "[--job-lifetime] SELECTOR | --cycles N SELECTOR "
                        "| --asks N SELECTOR | --installed FD\n",
                        stderr);
            return 2;
        }
        return rc;
    }
    bool again = argc == 3 && strcmp(argv[1], "--again") == 0;
    uint64_t fd = 0;
    if ((argc != 2 && !again) ||
        !pbx_peer_parse_u64(argv[argc - 1], 1023U, &fd)) {
        (void)fputs("usage: pbx-test-fdcat [--again] FD\n", stderr);
        return 2;
    }
    size_t n = 0;
    int st = fdcat_read((int)fd, buf, &n);
    if (st != 0) {
        (void)fprintf(stderr, "pbx-test-fdcat: read fd %llu: %s\n",
                      (unsigned long long)fd, pbx_obj_strerror(st));
        return 1;
    }
    (void)fwrite(buf, 1, n, stdout);
    (void)fflush(stdout);
    if (!again) {
        return 0;
    }
    char line[64];
    (void)fgets(line, sizeof(line), stdin);
    st = fdcat_read((int)fd, buf, &n);
    (void)fprintf(stderr, "pbx-test-fdcat: read again: %s\n",
                  st == 0 ? "ok" : pbx_obj_strerror(st));
    return st == 0 ? 0 : 3;
}
