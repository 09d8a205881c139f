/*
 * test_peers_vfsd.c: vfsd's pure confinement rules on tables of cases, and
 * the pbx-vfsd process over real socketpairs: RESOLVE through a scope
 * (FOUND with one SCM_RIGHTS object, NOT_FOUND with its class, DENIED for
 * "..", absolute paths and escaping symlinks), DETACH authenticated by
 * inode, RETIRE cutting the connection so every copy dies, malformed
 * or misrouted frames refused without leaking descriptors, and scopes
 * handed out by SCM_RIGHTS, each named by the inode of the end handed out
 * (misnamed on purpose only behind the --lie-scope fault switch).
 * RETIRE's idempotence, pipelining and what objects serve are tested in
 * test_peers_vfsd_objects.c; vfsd's attach channel, route pairs and scope
 * admission in test_peers_vfsd_attach.c.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../../peers/lib/pbx_peer_vfs.h"
#include "../../sha2/pbx_sha2.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"
#include "vfsd_test.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

/* One selector shape case. */
typedef struct sel_case {
    const char *sel;
    pbx_peer_sel want;
} sel_case;

PBX_TEST(peers_vfs_selector_table)
{
    static const sel_case cases[] = {
        {"a.txt", PBX_PEER_SEL_OK},
        {"dir/a.txt", PBX_PEER_SEL_OK},
        {"..a/b..", PBX_PEER_SEL_OK},
        {"...", PBX_PEER_SEL_OK},
        {"", PBX_PEER_SEL_EMPTY},
        {"/etc/passwd", PBX_PEER_SEL_ABSOLUTE},
        {"/", PBX_PEER_SEL_ABSOLUTE},
        {"..", PBX_PEER_SEL_DOTDOT},
        {"../secret", PBX_PEER_SEL_DOTDOT},
        {"a/../../b", PBX_PEER_SEL_DOTDOT},
        {"a/..", PBX_PEER_SEL_DOTDOT},
        {".", PBX_PEER_SEL_DOT},
        {"a/./b", PBX_PEER_SEL_DOT},
        {"a//b", PBX_PEER_SEL_EMPTY_COMPONENT},
        {"a/", PBX_PEER_SEL_EMPTY_COMPONENT},
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        char out[64];
        pbx_peer_sel got =
            pbx_peer_vfs_selector_check((const uint8_t *)cases[i].sel,
                                        strlen(cases[i].sel), out, sizeof(out));
        if (got != cases[i].want) {
            pbx_test_failf(__FILE__, __LINE__, "selector '%s': %d != %d",
                           cases[i].sel, (int)got, (int)cases[i].want);
        }
        PBX_CHECK(got != PBX_PEER_SEL_OK || strcmp(out, cases[i].sel) == 0);
    }
    const uint8_t nul[3] = {'a', 0, 'b'};
    char out[8];
    PBX_CHECK_EQ(pbx_peer_vfs_selector_check(nul, 3, out, sizeof(out)),
                 PBX_PEER_SEL_NUL);
    PBX_CHECK_EQ(pbx_peer_vfs_selector_check((const uint8_t *)"abcdefgh", 8,
                                             out, sizeof(out)),
                 PBX_PEER_SEL_TOO_LONG);
}

/* One RESOLVE verdict case. */
typedef struct judge_case {
    uint16_t op;
    uint16_t cls;
    pbx_peer_sel sel;
    pbx_peer_lookup lk;
    pbx_peer_ftype ft;
    uint8_t result;
    uint16_t out_class;
} judge_case;

PBX_TEST(peers_vfs_judge_table)
{
    enum { R = PBX_IPC_OPERATION_READ, L = PBX_IPC_OPERATION_LIST };
    enum { X = PBX_IPC_OPERATION_EXECUTE, M = PBX_IPC_OPERATION_ENTRY_TOUCH };
    enum { F = PBX_IPC_CLASS_FILE, D = PBX_IPC_CLASS_DIRECTORY };
    enum { E = PBX_IPC_CLASS_DIRECTORY_ENTRY };
    enum { FOUND = 1, NOTF = 2, DEN = 3 };
    static const judge_case cases[] = {
        {R, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_REGULAR, FOUND,
         F},
        {R, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_MISSING, PBX_PEER_FT_OTHER,
         NOTF, F},
        {L, D, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_MISSING, PBX_PEER_FT_OTHER,
         NOTF, D},
        {M, E, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_MISSING, PBX_PEER_FT_OTHER,
         NOTF, E},
        {R, F, PBX_PEER_SEL_DOTDOT, PBX_PEER_LOOKUP_MISSING, PBX_PEER_FT_OTHER,
         DEN, 0},
        {R, F, PBX_PEER_SEL_ABSOLUTE, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_REGULAR,
         DEN, 0},
        {R, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_ESCAPE, PBX_PEER_FT_OTHER, DEN,
         0},
        {R, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_LOOP, PBX_PEER_FT_OTHER, DEN,
         0},
        {R, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_ACCESS, PBX_PEER_FT_OTHER, DEN,
         0},
        {R, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_NOTDIR, PBX_PEER_FT_OTHER, DEN,
         0},
        {R, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OTHER, PBX_PEER_FT_OTHER, DEN,
         0},
        {R, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_DIRECTORY, DEN,
         0},
        {L, D, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_DIRECTORY,
         FOUND, D},
        {L, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_REGULAR, DEN,
         0},
        {X, D, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_MISSING, PBX_PEER_FT_OTHER, DEN,
         0},
        {M, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_REGULAR, DEN,
         0},
        {M, E, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_SYMLINK, FOUND,
         E},
        {R, E, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_REGULAR, DEN,
         0},
        {0, F, PBX_PEER_SEL_OK, PBX_PEER_LOOKUP_OK, PBX_PEER_FT_REGULAR, DEN,
         0},
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        const judge_case *c = &cases[i];
        pbx_peer_vfs_verdict v =
            pbx_peer_vfs_judge(c->op, c->cls, c->sel, c->lk, c->ft);
        if (v.result != c->result || v.object_class != c->out_class) {
            pbx_test_failf(__FILE__, __LINE__, "judge case %zu: %u/%u", i,
                           v.result, v.object_class);
        }
        pbx_test_checks++;
    }
}

PBX_TEST(peers_vfs_objtab)
{
    static pbx_peer_objtab t;
    pbx_peer_objtab_init(&t);
    size_t row = 99;
    PBX_CHECK_EQ(pbx_peer_objtab_reserve(&t, &row), 0U);
    uint32_t g = pbx_peer_objtab_mint(&t, row, 500, 7, PBX_IPC_CLASS_FILE, 40);
    PBX_CHECK(g != 0U);
    PBX_CHECK_EQ(pbx_peer_objtab_detach_check(&t, 500, g, 501, &row),
                 PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(pbx_peer_objtab_detach_check(&t, 500, g + 1U, 500, &row),
                 PBX_PEER_E_UNKNOWN);
    PBX_CHECK_EQ(pbx_peer_objtab_detach_check(&t, 500, g, 500, &row), 0U);
    int prov = 0;
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, g, 8, PBX_IPC_CLASS_FILE, &prov),
        PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, g, 7, PBX_IPC_CLASS_DIRECTORY, &prov),
        PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, g, 7, PBX_IPC_CLASS_FILE, &prov), 0U);
    PBX_CHECK_EQ(prov, 40);
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, g, 7, PBX_IPC_CLASS_FILE, &prov), 0U);
    PBX_CHECK_EQ(prov, -1);
    PBX_CHECK_EQ(pbx_peer_objtab_detach_check(&t, 500, g, 500, &row),
                 PBX_PEER_E_UNKNOWN);
    PBX_CHECK_EQ(pbx_peer_objtab_live(&t), 0U);
    /* Fill every row: the table answers BUSY and drops nothing. */
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        PBX_REQUIRE(pbx_peer_objtab_reserve(&t, &row) == 0U);
        (void)pbx_peer_objtab_mint(&t, row, 1000U + i, 7, PBX_IPC_CLASS_FILE,
                                   -1);
    }
    PBX_CHECK_EQ(pbx_peer_objtab_reserve(&t, &row), PBX_PEER_E_BUSY);
    PBX_CHECK_EQ(pbx_peer_objtab_live(&t), PBX_PEER_VFS_OBJECTS_MAX);
}

PBX_TEST(peers_vfs_objtab_hangup)
{
    static pbx_peer_objtab t;
    pbx_peer_objtab_init(&t);
    size_t a = 0;
    size_t b = 0;
    int prov = 0;
    PBX_REQUIRE(pbx_peer_objtab_reserve(&t, &a) == 0U);
    uint32_t ga = pbx_peer_objtab_mint(&t, a, 500, 7, PBX_IPC_CLASS_FILE, 40);
    PBX_REQUIRE(pbx_peer_objtab_reserve(&t, &b) == 0U);
    uint32_t gb = pbx_peer_objtab_mint(&t, b, 600, 7, PBX_IPC_CLASS_FILE, 41);
    PBX_CHECK_EQ(pbx_peer_objtab_live(&t), 2U);
    /* Every copy of a hung up: its provider end goes back, the row stops
     * being live, and a second hang-up or a DETACH finds nothing. */
    PBX_CHECK_EQ(pbx_peer_objtab_hangup(&t, a, &prov), 0U);
    PBX_CHECK_EQ(prov, 40);
    PBX_CHECK_EQ(t.rows[a].state, PBX_PEER_OBJ_HUNG);
    PBX_CHECK_EQ(t.rows[a].provider, -1);
    PBX_CHECK_EQ(pbx_peer_objtab_live(&t), 1U);
    prov = 5;
    PBX_CHECK_EQ(pbx_peer_objtab_hangup(&t, a, &prov), PBX_PEER_E_UNKNOWN);
    PBX_CHECK_EQ(pbx_peer_objtab_hangup(&t, PBX_PEER_VFS_OBJECTS_MAX, &prov),
                 PBX_PEER_E_UNKNOWN);
    PBX_CHECK_EQ(prov, 5);
    size_t row = 0;
    PBX_CHECK_EQ(pbx_peer_objtab_detach_check(&t, 500, ga, 500, &row),
                 PBX_PEER_E_UNKNOWN);
    /* A RETIRE that still comes is checked exactly and acknowledged with
     * nothing left to cut. */
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, ga, 8, PBX_IPC_CLASS_FILE, &prov),
        PBX_PEER_E_MISMATCH);
    PBX_CHECK_EQ(
        pbx_peer_objtab_retire(&t, 500, ga, 7, PBX_IPC_CLASS_FILE, &prov), 0U);
    PBX_CHECK_EQ(prov, -1);
    PBX_CHECK_EQ(t.rows[a].state, PBX_PEER_OBJ_RETIRED);
    /* Reuse order: free rows, then retired ones, hung-up ones last (a
     * RETIRE may still name them). */
    PBX_CHECK_EQ(pbx_peer_objtab_hangup(&t, b, &prov), 0U);
    PBX_CHECK_EQ(prov, 41);
    PBX_CHECK_EQ(pbx_peer_objtab_live(&t), 0U);
    for (size_t i = 0; i < PBX_PEER_VFS_OBJECTS_MAX; i++) {
        if (i != a && i != b) {
            t.rows[i].state = PBX_PEER_OBJ_HUNG;
        }
    }
    PBX_CHECK_EQ(pbx_peer_objtab_reserve(&t, &row), 0U);
    PBX_CHECK_EQ(row, a);
    t.rows[a].state = PBX_PEER_OBJ_HUNG;
    /* No free or retired row left: the hung-up row the table itself hung
     * up (b) is taken in O(1), before the first by index it was not told
     * of. */
    PBX_CHECK_EQ(pbx_peer_objtab_reserve(&t, &row), 0U);
    PBX_CHECK_EQ(row, b);
    /* Told of none (b hung up behind its back too, after a mint took it
     * off the ring): the first hung-up row by index. */
    (void)pbx_peer_objtab_mint(&t, b, 700, 7, PBX_IPC_CLASS_FILE, 42);
    t.rows[b].state = PBX_PEER_OBJ_HUNG;
    PBX_CHECK_EQ(pbx_peer_objtab_reserve(&t, &row), 0U);
    PBX_CHECK_EQ(row, 0U);
    (void)gb;
}

/* Writes a small file. */
void tv_file(const char *dir, const char *name)
{
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    PBX_REQUIRE(fd >= 0);
    PBX_CHECK(write(fd, "hello\n", 6) == 6);
    (void)close(fd);
}

/* Builds root/{secret,pub/{a.txt,dir/,links}} and starts vfsd on pub,
 * with --incarnation inc unless inc is NULL. */
void tv_up_inc(tv *t, const char *inc)
{
    const char *d = tp_tmpdir();
    (void)snprintf(t->dir, sizeof(t->dir), "%s", d);
    char p[512];
    char q[512];
    tv_file(d, "secret");
    (void)snprintf(p, sizeof(p), "%s/pub", d);
    PBX_REQUIRE(mkdir(p, 0700) == 0);
    tv_file(p, "a.txt");
    (void)snprintf(q, sizeof(q), "%s/pub/dir", d);
    PBX_REQUIRE(mkdir(q, 0700) == 0);
    (void)snprintf(q, sizeof(q), "%s/pub/link_in", d);
    PBX_REQUIRE(symlink("dir/../a.txt", q) == 0);
    (void)snprintf(q, sizeof(q), "%s/pub/link_out", d);
    PBX_REQUIRE(symlink("../secret", q) == 0);
    (void)snprintf(q, sizeof(q), "%s/pub/link_abs", d);
    PBX_REQUIRE(symlink("/etc/passwd", q) == 0);
    int sp[2];
    int rp[2];
    PBX_REQUIRE(tp_seqpair(sp) && tp_seqpair(rp));
    char sarg[32];
    char rarg[32];
    (void)snprintf(sarg, sizeof(sarg), "%d=pub", sp[1]);
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--root", d,    "--scope-fd", sarg, "--route-fd",
                          rarg,     NULL, NULL,         NULL};
    if (inc != NULL) {
        args[6] = "--incarnation";
        args[7] = inc;
    }
    int keep[2] = {sp[1], rp[1]};
    t->pid = tp_spawn("vfsd", args, keep, 2, -1);
    (void)close(sp[1]);
    (void)close(rp[1]);
    PBX_REQUIRE(t->pid > 0);
    /* The handed-over connection gets one scope, then vfsd closes it:
     * after the hang-up vfsd holds exactly its serving descriptors. */
    t->scope = pbx_peer_io_scope_take(sp[0], 3000, &t->scope_id);
    PBX_REQUIRE(t->scope >= 0);
    PBX_CHECK(tp_hung_up(sp[0], 2000));
    (void)close(sp[0]);
    PBX_CHECK(t->scope_id != 0U);
    PBX_CHECK_EQ(t->scope_id, pbx_peer_io_inode(t->scope));
    t->route = rp[0];
}

/* Starts vfsd as tv_up_inc does, its incarnation its own random one. */
void tv_up(tv *t)
{
    tv_up_inc(t, NULL);
}

void tv_down(tv *t)
{
    (void)close(t->scope);
    (void)close(t->route);
    (void)tp_stop(t->pid);
}

/* Waits (3 s) for one frame on fd into m; 0, or -1 with errno set. */
static int tv_await(int fd, pbx_peer_msg *m)
{
    struct pollfd p = {fd, POLLIN, 0};
    if (poll(&p, 1, 3000) != 1) {
        errno = ETIMEDOUT;
        return -1;
    }
    return pbx_peer_io_recv_frame(fd, m);
}

/* Sends RESOLVE for sel on fd, takes the answer from reply_fd and
 * decodes it into *rep. */
pbx_err tv_resolve(int fd, int reply_fd, const char *sel, uint16_t op,
                   uint16_t cls, pbx_ipc_resolve_reply *rep, pbx_peer_msg *m)
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
    PBX_REQUIRE(pbx_peer_io_send(fd, buf, n, -1) == 0);
    PBX_REQUIRE(tv_await(reply_fd, m) == 0);
    PBX_REQUIRE(m->err == PBX_OK);
    if (m->frame.status != 0U) {
        return (pbx_err)m->frame.status;
    }
    PBX_CHECK_EQ(m->frame.request.gen, 9U);
    return pbx_ipc_resolve_reply_decode(&m->frame, rep);
}

/* One scoped RESOLVE case against the live vfsd. */
typedef struct live_case {
    const char *sel;
    uint16_t op;
    uint16_t cls;
    uint8_t result;
} live_case;

PBX_TEST(peers_vfsd_resolve_confinement)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    enum { R = PBX_IPC_OPERATION_READ, F = PBX_IPC_CLASS_FILE };
    static const live_case cases[] = {
        {"a.txt", R, F, PBX_IPC_RESOLVE_FOUND},
        {"link_in", R, F, PBX_IPC_RESOLVE_FOUND},
        {"dir", PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY,
         PBX_IPC_RESOLVE_FOUND},
        {"link_out", PBX_IPC_OPERATION_ENTRY_METADATA_READ,
         PBX_IPC_CLASS_DIRECTORY_ENTRY, PBX_IPC_RESOLVE_FOUND},
        {"missing.txt", R, F, PBX_IPC_RESOLVE_NOT_FOUND},
        {"dir/missing", PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY,
         PBX_IPC_RESOLVE_NOT_FOUND},
        {"../secret", R, F, PBX_IPC_RESOLVE_DENIED},
        {"dir/../../secret", R, F, PBX_IPC_RESOLVE_DENIED},
        {"/etc/passwd", R, F, PBX_IPC_RESOLVE_DENIED},
        {"link_out", R, F, PBX_IPC_RESOLVE_DENIED},
        {"link_abs", R, F, PBX_IPC_RESOLVE_DENIED},
        {"dir", R, F, PBX_IPC_RESOLVE_DENIED},
        {"a.txt", PBX_IPC_OPERATION_LIST, PBX_IPC_CLASS_DIRECTORY,
         PBX_IPC_RESOLVE_DENIED},
        {"a.txt/x", R, F, PBX_IPC_RESOLVE_DENIED},
    };
    for (size_t i = 0; i < PBX_ARRAY_LEN(cases); i++) {
        const live_case *c = &cases[i];
        pbx_ipc_resolve_reply rep;
        memset(&rep, 0, sizeof(rep));
        memset(&rep, 0, sizeof(rep));
        PBX_CHECK_EQ(
            tv_resolve(t.scope, t.route, c->sel, c->op, c->cls, &rep, &m),
            PBX_OK);
        if (rep.result != c->result) {
            pbx_test_failf(__FILE__, __LINE__, "'%s': result %u, want %u",
                           c->sel, rep.result, c->result);
        }
        PBX_CHECK_EQ(m.nfds, rep.result == PBX_IPC_RESOLVE_FOUND ? 1U : 0U);
        PBX_CHECK_EQ(rep.operation, c->op);
        if (rep.result == PBX_IPC_RESOLVE_FOUND) {
            /* The provider end's inode, under the incarnation's bits. */
            PBX_CHECK_EQ(rep.object.id & ((UINT64_C(1) << 48) - 1U),
                         pbx_peer_io_inode(m.fds[0]));
            PBX_CHECK(rep.object.id >> 48 != 0U);
            PBX_CHECK_EQ(rep.scope_id, t.scope_id);
            PBX_CHECK(rep.object.gen != 0U);
        }
        if (rep.result == PBX_IPC_RESOLVE_NOT_FOUND) {
            PBX_CHECK_EQ(rep.object_class, c->cls);
        }
        pbx_peer_io_close_all(m.fds, m.nfds);
    }
    tv_down(&t);
}

/* Sends a DETACH of object with cap on the route; returns the status. */
uint32_t tv_detach(int route, pbx_ipc_object obj, int cap, pbx_peer_msg *m)
{
    pbx_ipc_detach rq = {obj};
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    PBX_CHECK_EQ(pbx_ipc_detach_encode(id, &rq, buf, sizeof(buf), &n), PBX_OK);
    PBX_REQUIRE(pbx_peer_io_call(route, buf, n, cap, m, 3000) == 0);
    PBX_REQUIRE(m->err == PBX_OK);
    if (m->frame.status != 0U) {
        return m->frame.status;
    }
    pbx_ipc_detach ack;
    PBX_CHECK_EQ(pbx_ipc_detach_reply_decode(&m->frame, &ack), PBX_OK);
    PBX_CHECK(ack.object.id == obj.id && ack.object.gen == obj.gen);
    return 0U;
}

/* Sends a RETIRE on fd; returns the status. */
uint32_t tv_retire(int fd, const pbx_ipc_retire *rq, pbx_peer_msg *m)
{
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    PBX_CHECK_EQ(pbx_ipc_retire_encode(id, rq, buf, sizeof(buf), &n), PBX_OK);
    PBX_REQUIRE(pbx_peer_io_call(fd, buf, n, -1, m, 3000) == 0);
    PBX_REQUIRE(m->err == PBX_OK);
    if (m->frame.status != 0U) {
        return m->frame.status;
    }
    pbx_ipc_retire ack;
    PBX_CHECK_EQ(pbx_ipc_retire_reply_decode(&m->frame, &ack), PBX_OK);
    PBX_CHECK(ack.object.id == rq->object.id &&
              ack.object.gen == rq->object.gen);
    return 0U;
}

/* Sends the encoded frame buf[0..n) (with cap unless negative) on t's
 * scope as the route's process and returns the status of the answer,
 * which vfsd sends on the route (never on the scope). */
static uint32_t tv_on_scope(const tv *t, const uint8_t *buf, size_t n, int cap,
                            pbx_peer_msg *m)
{
    PBX_REQUIRE(pbx_peer_io_send(t->scope, buf, n, cap) == 0);
    PBX_REQUIRE(tv_await(t->route, m) == 0);
    PBX_REQUIRE(m->err == PBX_OK);
    return m->frame.status;
}

PBX_TEST(peers_vfsd_detach_retire_cut)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_REQUIRE(tv_resolve(t.scope, t.route, "a.txt", PBX_IPC_OPERATION_READ,
                           PBX_IPC_CLASS_FILE, &rep, &m) == PBX_OK);
    PBX_REQUIRE(m.nfds == 1U);
    int obj = m.fds[0];
    /* The provider end and the file opened for reading. */
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base + 2, 1000), base + 2);
    int alias = dup(obj);
    PBX_REQUIRE(alias >= 0);
    /* A capability that is not the object is refused and deleted. */
    int other[2];
    PBX_REQUIRE(tp_seqpair(other));
    PBX_CHECK_EQ(tv_detach(t.route, rep.object, other[0], &m),
                 PBX_PEER_E_MISMATCH);
    (void)close(other[0]);
    PBX_CHECK(tp_hung_up(other[1], 2000));
    (void)close(other[1]);
    /* DETACH on a scope connection is misrouted (answered on the route). */
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    pbx_ipc_detach dq = {rep.object};
    PBX_CHECK_EQ(pbx_ipc_detach_encode(id, &dq, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK_EQ(tv_on_scope(&t, buf, n, alias, &m), PBX_PEER_E_ROUTE);
    /* powerboxd's alias back: accepted, and the object stays alive. */
    PBX_CHECK_EQ(tv_detach(t.route, rep.object, alias, &m), 0U);
    (void)close(alias);
    PBX_CHECK(!tp_hung_up(obj, 100));
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_DIRECTORY};
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), PBX_PEER_E_MISMATCH);
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.scope_id++;
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), PBX_PEER_E_MISMATCH);
    rq.scope_id--;
    PBX_CHECK_EQ(pbx_ipc_retire_encode(id, &rq, buf, sizeof(buf), &n), PBX_OK);
    PBX_CHECK_EQ(tv_on_scope(&t, buf, n, -1, &m), PBX_PEER_E_ROUTE);
    PBX_CHECK(!tp_hung_up(obj, 100));
    /* The exact RETIRE cuts the connection: every copy dies. */
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    PBX_CHECK(tp_hung_up(obj, 2000));
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U); /* a repeat is acked */
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 1000), base);
    tv_down(&t);
}

/* Resolves a.txt on t's scope: the object's SEND end, or -1. */
int tv_found(const tv *t, pbx_ipc_resolve_reply *rep, pbx_peer_msg *m)
{
    memset(rep, 0, sizeof(*rep));
    PBX_REQUIRE(tv_resolve(t->scope, t->route, "a.txt", PBX_IPC_OPERATION_READ,
                           PBX_IPC_CLASS_FILE, rep, m) == PBX_OK);
    PBX_REQUIRE(m->nfds == 1U);
    return m->fds[0];
}

PBX_TEST(peers_vfsd_denied_object_row_freed)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    pbx_ipc_resolve_reply rep;
    /* A FOUND powerboxd refuses (misnamed scope, mismatched class): it
     * deletes the receipt, the only copy; vfsd sees the hang-up and
     * frees the row and its provider end. */
    int obj = tv_found(&t, &rep, &m);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base + 2, 1000), base + 2);
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    /* The RETIRE that may still come is acknowledged exactly. */
    pbx_ipc_retire rq = {rep.object, rep.scope_id, PBX_IPC_CLASS_DIRECTORY};
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), PBX_PEER_E_MISMATCH);
    rq.object_class = PBX_IPC_CLASS_FILE;
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    /* Policy or user denial: powerboxd DETACHes its only copy; vfsd
     * closes it and the hang-up frees the row. */
    obj = tv_found(&t, &rep, &m);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base + 2, 1000), base + 2);
    PBX_CHECK_EQ(tv_detach(t.route, rep.object, obj, &m), 0U);
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    int other[2];
    PBX_REQUIRE(tp_seqpair(other));
    PBX_CHECK_EQ(tv_detach(t.route, rep.object, other[0], &m),
                 PBX_PEER_E_UNKNOWN);
    pbx_peer_io_close_all(other, 2);
    /* An installed copy (procd's) keeps the object: DETACH frees
     * nothing until that copy goes too. */
    obj = tv_found(&t, &rep, &m);
    int installed = dup(obj);
    PBX_REQUIRE(installed >= 0);
    PBX_CHECK_EQ(tv_detach(t.route, rep.object, obj, &m), 0U);
    (void)close(obj);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base + 2, 300), base + 2);
    PBX_CHECK(!tp_hung_up(installed, 100));
    (void)close(installed);
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 2000), base);
    rq = (pbx_ipc_retire){rep.object, rep.scope_id, PBX_IPC_CLASS_FILE};
    PBX_CHECK_EQ(tv_retire(t.route, &rq, &m), 0U);
    tv_down(&t);
}

PBX_TEST(peers_vfsd_malformed_frames_leak_nothing)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int base = tp_fd_count(t.pid);
    uint8_t junk[40];
    memset(junk, 0xA5, sizeof(junk));
    int sv[2];
    PBX_REQUIRE(tp_seqpair(sv));
    for (int i = 0; i < 20; i++) {
        PBX_CHECK(pbx_peer_io_send(t.scope, junk, sizeof(junk), sv[0]) == 0);
        PBX_CHECK(pbx_peer_io_send(t.route, junk, 10, sv[0]) == 0);
    }
    (void)close(sv[0]);
    sv[0] = -1;
    /* A RESOLVE on the route is misrouted; a bad digest is refused. */
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_CHECK_EQ(tv_resolve(t.route, t.route, "a.txt", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 (pbx_err)PBX_PEER_E_ROUTE);
    pbx_ipc_resolve rq;
    memset(&rq, 0, sizeof(rq));
    rq.operation = PBX_IPC_OPERATION_READ;
    rq.object_class = PBX_IPC_CLASS_FILE;
    rq.selector = (const uint8_t *)"a.txt";
    rq.selector_len = 5;
    uint8_t buf[256];
    size_t n = 0;
    pbx_ipc_id id = {1, 1};
    PBX_CHECK_EQ(pbx_ipc_resolve_encode(id, &rq, buf, sizeof(buf), &n), PBX_OK);
    PBX_REQUIRE(pbx_peer_io_send(t.scope, buf, n, -1) == 0);
    PBX_REQUIRE(tv_await(t.route, &m) == 0);
    PBX_CHECK_EQ(m.frame.status, PBX_PEER_E_DIGEST);
    /* Still serving, and every received descriptor was deleted. */
    PBX_CHECK_EQ(tv_resolve(t.scope, t.route, "missing", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_NOT_FOUND);
    PBX_CHECK(tp_hung_up(sv[1], 2000));
    PBX_CHECK_EQ(tp_fd_settle(t.pid, base, 1000), base);
    pbx_peer_io_close_all(sv, 2);
    tv_down(&t);
}

PBX_TEST(peers_vfsd_scope_socket)
{
    const char *d = tp_tmpdir();
    char p[512];
    char sock[600];
    (void)snprintf(p, sizeof(p), "%s/sub", d);
    PBX_REQUIRE(mkdir(p, 0700) == 0);
    tv_file(p, "f");
    tv_file(d, "outside");
    (void)snprintf(sock, sizeof(sock), "%s/scope.sock=sub", d);
    /* This process made the route pair (SO_PEERCRED of --route-fd names
     * it), so its RESOLVEs are served. */
    int rp[2];
    PBX_REQUIRE(tp_seqpair(rp));
    char rarg[32];
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--root",     d,    "--scope", sock,
                          "--route-fd", rarg, NULL};
    pid_t pid = tp_spawn("vfsd", args, &rp[1], 1U, -1);
    (void)close(rp[1]);
    PBX_REQUIRE(pid > 0);
    int route = rp[0];
    (void)snprintf(sock, sizeof(sock), "%s/scope.sock", d);
    uint64_t id = 0;
    uint64_t id2 = 0;
    int fd = -1;
    for (int i = 0; i < 100 && fd < 0; i++) {
        fd = pbx_peer_io_scope_acquire(sock, 3000, &id);
        if (fd < 0) {
            (void)usleep(20000);
        }
    }
    PBX_REQUIRE(fd >= 0);
    int fd2 = pbx_peer_io_scope_acquire(sock, 3000, &id2);
    PBX_REQUIRE(fd2 >= 0);
    /* Each connection gets its own scope, named by its own inode. */
    PBX_CHECK_EQ(id, pbx_peer_io_inode(fd));
    PBX_CHECK_EQ(id2, pbx_peer_io_inode(fd2));
    PBX_CHECK(id != id2);
    static pbx_peer_msg m;
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_CHECK_EQ(tv_resolve(fd, route, "f", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_FOUND);
    PBX_CHECK_EQ(rep.scope_id, id);
    pbx_peer_io_close_all(m.fds, m.nfds);
    PBX_CHECK_EQ(tv_resolve(fd2, route, "f", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.scope_id, id2);
    pbx_peer_io_close_all(m.fds, m.nfds);
    (void)close(fd2);
    PBX_CHECK_EQ(tv_resolve(fd, route, "outside", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_NOT_FOUND);
    (void)close(fd);
    (void)close(route);
    (void)tp_stop(pid);
}

PBX_TEST(peers_vfsd_lie_scope_misnames_only_its_own_scopes)
{
    const char *d = tp_tmpdir();
    char honest[600];
    char liar[600];
    tv_file(d, "f");
    (void)snprintf(honest, sizeof(honest), "%s/honest.sock", d);
    (void)snprintf(liar, sizeof(liar), "%s/liar.sock", d);
    int rp[2];
    PBX_REQUIRE(tp_seqpair(rp));
    char rarg[32];
    (void)snprintf(rarg, sizeof(rarg), "%d", rp[1]);
    const char *args[] = {"--root",      d,    "--scope",    honest,
                          "--lie-scope", liar, "--route-fd", rarg,
                          NULL};
    pid_t pid = tp_spawn("vfsd", args, &rp[1], 1U, -1);
    (void)close(rp[1]);
    PBX_REQUIRE(pid > 0);
    int route = rp[0];
    uint64_t hid = 0;
    uint64_t lid = 0;
    int h = -1;
    for (int i = 0; i < 100 && h < 0; i++) {
        h = pbx_peer_io_scope_acquire(honest, 3000, &hid);
        if (h < 0) {
            (void)usleep(20000);
        }
    }
    PBX_REQUIRE(h >= 0);
    /* The hand-out itself is truthful on both sockets. */
    int l = pbx_peer_io_scope_acquire(liar, 3000, &lid);
    PBX_REQUIRE(l >= 0);
    PBX_CHECK_EQ(lid, pbx_peer_io_inode(l));
    static pbx_peer_msg m;
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_CHECK_EQ(tv_resolve(h, route, "f", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.scope_id, hid);
    pbx_peer_io_close_all(m.fds, m.nfds);
    /* FOUND through a --lie-scope scope names another identity. */
    PBX_CHECK_EQ(tv_resolve(l, route, "f", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_FOUND);
    PBX_CHECK(rep.scope_id != lid);
    pbx_peer_io_close_all(m.fds, m.nfds);
    (void)close(h);
    (void)close(l);
    (void)close(route);
    (void)tp_stop(pid);
}
