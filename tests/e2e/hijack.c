/*
 * hijack.c: pbx-test-hijack, the foreign program of the e2e scenario
 * route-hijack (tests/e2e/run.py). Statically linked, so it also runs
 * under `pbx run --sandbox`.
 *
 *   pbx-test-hijack [--scope PATH] [--scope-fd N] [--rounds N] PATH...
 *
 * Each round connects to every PATH with a SOCK_SEQPACKET, a SOCK_STREAM
 * and a SOCK_DGRAM socket and sends each connection the frames powerboxd
 * sends on its routes: RESOLVE (docs/readme.txt, read, file), INSTALL
 * (with one descriptor, a pipe end), VIEW, POLICY and PROMPT, as a
 * process that wants to become a route would; what comes back is read
 * until the connection closes or stays silent 20 ms. A descriptor that
 * comes first from the --scope PATH is a scope: a RESOLVE is sent
 * through it, as through the scope at --scope-fd N (a sandboxed job's
 * descriptor 4), and must be refused. Any other descriptor, and any
 * object or FOUND a RESOLVE brings, is authority this process must never
 * get. A reply is a refusal when it is a reply frame with a nonzero
 * status (an ipc frame, or a local wire's bare header); any other reply
 * is counted in replies_other and described on stderr. After every
 * round one line is printed and flushed: "round=R sockets_refused=A
 * connects_refused=B connected=C scopes=D resolve_refused=E found=F
 * objects=G replies_refused=H replies_other=I" (cumulative; socket()
 * refused, e.g. EPERM under the sandbox's walls, counts in A). The
 * scenario kills the program and reads the last line; --rounds bounds it
 * (default 100000). Exits 0.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "ipc/pbx_ipc.h"
#include "peers/common/pbx_peer_io.h"
#include "sha2/pbx_sha2.h"

/* The most paths one run probes. */
#define HIJACK_PATHS_MAX 16

/* What the program has seen so far (cumulative over rounds). */
typedef struct hijack_tally {
    unsigned long sockets_refused;
    unsigned long connects_refused;
    unsigned long connected;
    unsigned long scopes;
    unsigned long resolve_refused;
    unsigned long found;
    unsigned long objects;
    unsigned long replies_refused;
    unsigned long replies_other;
} hijack_tally;

/* How many request frames every connection is sent. */
#define HIJACK_FRAMES 5U

/* The request frames every connection is sent (encoded once): RESOLVE
 * (vfsd's route call), INSTALL (procd's, with one descriptor), VIEW,
 * POLICY and PROMPT (ttyd's), as powerboxd would send them on a route. */
static uint8_t g_frames[HIJACK_FRAMES][PBX_IPC_FRAME_BYTES_MAX];
static size_t g_lens[HIJACK_FRAMES];

/* The RESOLVE frame (g_frames[0]), also sent through every scope. */
#define g_frame     (g_frames[0])
#define g_frame_len (g_lens[0])

/* The selector every frame names. */
static const char g_sel[] = "docs/readme.txt";

/* A request context as launchd would have tagged a job's request. */
static void hijack_context(pbx_ipc_context *c)
{
    memset(c, 0, sizeof(*c));
    c->session = 1U;
    c->job_id = 11U;
    c->job_gen = 1U;
    c->realm = 1U;
    c->operation = PBX_IPC_OPERATION_READ;
    c->object_class = PBX_IPC_CLASS_FILE;
    c->lifetime = PBX_IPC_LIFETIME_ONE_SHOT;
    c->mode = PBX_IPC_MODE_INSTALL;
    c->urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    c->entry.len = 4U;
    memcpy(c->entry.bytes, "/bin", 4U);
}

/* Encodes the ttyd and procd frames (g_frames[1..4]); false when the
 * codec refuses one. */
static bool hijack_frames_more(const uint8_t *digest)
{
    const pbx_ipc_id id = {1U, 1U};
    const pbx_ipc_object obj = {1U, 1U};
    pbx_ipc_install in = {{1U, 1U, 3U},
                          id,
                          PBX_IPC_OPERATION_READ,
                          PBX_IPC_CLASS_FILE,
                          PBX_IPC_LIFETIME_ONE_SHOT};
    pbx_ipc_view v;
    memset(&v, 0, sizeof(v));
    v.kind = 1U;
    v.grant = id;
    hijack_context(&v.ctx);
    v.object = obj;
    v.scope_id = 1U;
    v.target = in.target;
    v.installed_slot = 3U;
    memcpy(v.selector_digest, digest, PBX_IPC_DIGEST_BYTES);
    pbx_ipc_policy po;
    hijack_context(&po.ctx);
    po.object = obj;
    pbx_ipc_prompt pr;
    memset(&pr, 0, sizeof(pr));
    hijack_context(&pr.ctx);
    pr.object = obj;
    pr.selector = (const uint8_t *)g_sel;
    pr.selector_len = (uint32_t)(sizeof(g_sel) - 1U);
    memcpy(pr.selector_digest, digest, PBX_IPC_DIGEST_BYTES);
    const size_t cap = PBX_IPC_FRAME_BYTES_MAX;
    return pbx_ipc_install_encode(id, &in, g_frames[1], cap, &g_lens[1]) ==
               PBX_OK &&
           pbx_ipc_view_encode(id, &v, g_frames[2], cap, &g_lens[2]) ==
               PBX_OK &&
           pbx_ipc_policy_encode(id, &po, g_frames[3], cap, &g_lens[3]) ==
               PBX_OK &&
           pbx_ipc_prompt_encode(id, &pr, g_frames[4], cap, &g_lens[4]) ==
               PBX_OK;
}

/* Encodes every frame; false when the codec refuses one. */
static bool hijack_frame(void)
{
    pbx_ipc_resolve rq;
    memset(&rq, 0, sizeof(rq));
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.selector = (const uint8_t *)g_sel;
    rq.selector_len = (uint32_t)(sizeof(g_sel) - 1U);
    pbx_ipc_id id = {1U, 1U};
    return pbx_sha2_digest(rq.selector, rq.selector_len, rq.selector_digest) ==
               PBX_OK &&
           pbx_ipc_resolve_encode(id, &rq, g_frames[0], sizeof(g_frames[0]),
                                  &g_lens[0]) == PBX_OK &&
           hijack_frames_more(rq.selector_digest);
}

/* Sends a RESOLVE through scope and counts what the answer gives: an
 * object or FOUND (authority), else a refusal. Closes nothing. */
static void hijack_resolve(int scope, hijack_tally *t)
{
    static pbx_peer_msg m;
    int r = pbx_peer_io_call(scope, g_frame, g_frame_len, -1, &m, 2000);
    if (r != 0) {
        t->resolve_refused++;
        return;
    }
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    bool found = m.nfds > 0U ||
                 (m.err == PBX_OK && m.frame.status == 0U &&
                  pbx_ipc_resolve_reply_decode(&m.frame, &rep) == PBX_OK &&
                  rep.result == PBX_IPC_RESOLVE_FOUND);
    t->objects += m.nfds;
    pbx_peer_io_close_all(m.fds, m.nfds);
    if (found) {
        t->found++;
    } else {
        t->resolve_refused++;
    }
}

/* Judges one message (n bytes of buf, ncaps descriptors) that came back
 * on a connection to path: a decoded reply with a nonzero status is a
 * refusal; anything else is a reply that must never come, noted on
 * stderr. */
static void hijack_judge(const char *path, const uint8_t *buf, ssize_t n,
                         size_t ncaps, hijack_tally *t)
{
    pbx_ipc_frame f;
    memset(&f, 0, sizeof(f));
    pbx_err e = pbx_ipc_frame_decode(buf, (size_t)n, (uint16_t)ncaps, &f);
    /* A local wire's refusal (procd's stage wire: an op outside the ipc
     * table) is a bare header: the ipc magic, the reply bit, a nonzero
     * status, no body and no descriptor. */
    if (e != PBX_OK && n == (ssize_t)PBX_IPC_HEADER_BYTES && ncaps == 0U &&
        memcmp(buf, g_frame, 4U) == 0) {
        f.op = (uint16_t)(buf[6] | buf[7] << 8);
        f.status = (uint16_t)(buf[8] | buf[9] << 8);
        e = PBX_OK;
    }
    if (e == PBX_OK && (f.op & PBX_IPC_REPLY_BIT) != 0U && f.status != 0U) {
        t->replies_refused++;
        return;
    }
    t->replies_other++;
    (void)fprintf(stderr,
                  "pbx-test-hijack: %s answered %zd byte(s), %zu fd(s), op "
                  "0x%04x status %u (decode %u): not a refusal\n",
                  path, n, ncaps, (unsigned)f.op, (unsigned)f.status,
                  (unsigned)e);
}

/* Takes the descriptors of mh: from the scope path, with no reply yet,
 * a scope (tried, then closed); any other is authority this program must
 * never get (counted as an object, closed). Returns how many came. */
static size_t hijack_fds(struct msghdr *mh, bool scope, hijack_tally *t)
{
    size_t got = 0U;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c != NULL;
         c = CMSG_NXTHDR(mh, c)) {
        size_t n = c->cmsg_type == SCM_RIGHTS
                       ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int)
                       : 0U;
        for (size_t i = 0; i < n && i < 8U; i++) {
            int fd = -1;
            memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (scope) {
                t->scopes++;
                hijack_resolve(fd, t);
            } else {
                t->objects++;
            }
            (void)close(fd);
            got++;
        }
    }
    return got;
}

/* Reads what conn (to path) sends back, each message waited for at most
 * 20 ms, until it closes or falls silent: the scope socket's first
 * message is the scope hand-off; every other message is judged. */
static void hijack_take(int conn, const char *path, bool from_scope,
                        hijack_tally *t)
{
    for (int k = 0; k < 8; k++) {
        struct pollfd p = {conn, POLLIN, 0};
        if (poll(&p, 1U, 20) != 1) {
            return;
        }
        uint8_t buf[PBX_IPC_FRAME_BYTES_MAX];
        union {
            char b[CMSG_SPACE(sizeof(int) * 8U)];
            struct cmsghdr align;
        } ctl;
        struct iovec iov = {buf, sizeof(buf)};
        struct msghdr mh;
        memset(&mh, 0, sizeof(mh));
        memset(&ctl, 0, sizeof(ctl));
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl.b;
        mh.msg_controllen = sizeof(ctl.b);
        ssize_t n = recvmsg(conn, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n <= 0) {
            return;
        }
        size_t fds = hijack_fds(&mh, from_scope && k == 0, t);
        if (!(from_scope && k == 0 && fds > 0U)) {
            hijack_judge(path, buf, n, fds, t);
        }
    }
}

/* One connection of type to path: refused, or sent every frame (INSTALL
 * with one descriptor, as powerboxd's carries the object) and read. */
static void hijack_one(const char *path, int type, bool from_scope,
                       hijack_tally *t)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    (void)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        t->sockets_refused++;
        return;
    }
    if (connect(fd, (const struct sockaddr *)&sa, sizeof(sa)) != 0) {
        t->connects_refused++;
        (void)close(fd);
        return;
    }
    t->connected++;
    int obj[2] = {-1, -1};
    bool have = pipe(obj) == 0;
    for (size_t i = 0; i < HIJACK_FRAMES; i++) {
        bool with = i == 1U && have;
        (void)pbx_peer_io_send_fds(fd, g_frames[i], g_lens[i], obj,
                                   with ? 1U : 0U, MSG_DONTWAIT);
    }
    if (have) {
        (void)close(obj[0]);
        (void)close(obj[1]);
    }
    hijack_take(fd, path, from_scope, t);
    (void)close(fd);
}

int main(int argc, char **argv)
{
    const char *scope_path = NULL;
    int scope_fd = -1;
    unsigned long rounds = 100000UL;
    const char *paths[HIJACK_PATHS_MAX];
    size_t npaths = 0;
    for (int i = 1; i < argc; i++) {
        bool has = i + 1 < argc;
        if (strcmp(argv[i], "--scope") == 0 && has) {
            scope_path = argv[++i];
            paths[npaths++] = scope_path;
        } else if (strcmp(argv[i], "--scope-fd") == 0 && has) {
            scope_fd = (int)strtol(argv[++i], NULL, 10);
        } else if (strcmp(argv[i], "--rounds") == 0 && has) {
            rounds = strtoul(argv[++i], NULL, 10);
        } else {
            paths[npaths++] = argv[i];
        }
        if (npaths >= HIJACK_PATHS_MAX) {
            (void)fputs("pbx-test-hijack: too many paths\n", stderr);
            return 2;
        }
    }
    if (!hijack_frame()) {
        (void)fputs("pbx-test-hijack: cannot encode the frames\n", stderr);
        return 2;
    }
    static const int types[3] = {SOCK_SEQPACKET, SOCK_STREAM, SOCK_DGRAM};
    hijack_tally t;
    memset(&t, 0, sizeof(t));
    for (unsigned long r = 1; r <= rounds; r++) {
        for (size_t i = 0; i < npaths; i++) {
            for (size_t k = 0; k < 3U; k++) {
                hijack_one(paths[i], types[k], paths[i] == scope_path, &t);
            }
        }
        if (scope_fd >= 0) {
            hijack_resolve(scope_fd, &t);
        }
        (void)printf("round=%lu sockets_refused=%lu connects_refused=%lu "
                     "connected=%lu scopes=%lu resolve_refused=%lu found=%lu "
                     "objects=%lu replies_refused=%lu replies_other=%lu\n",
                     r, t.sockets_refused, t.connects_refused, t.connected,
                     t.scopes, t.resolve_refused, t.found, t.objects,
                     t.replies_refused, t.replies_other);
        (void)fflush(stdout);
        struct timespec ts = {0, 20L * 1000L * 1000L};
        (void)nanosleep(&ts, NULL);
    }
    return 0;
}
