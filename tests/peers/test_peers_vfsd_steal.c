/*
 * test_peers_vfsd_steal.c: a job cannot take the answer to powerboxd's
 * RESOLVE from its copy of the scope (issue 20). Every copy of a scope is
 * one connection with one receive queue, so vfsd answers the route's
 * process on its route: a process that keeps reading its scope copy while
 * powerboxd resolves through the scope receives nothing (no frame, no
 * descriptor) but what vfsd sends to it by design.
 */
#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"
#include "../../peers/lib/pbx_peer.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"
#include "vfsd_test.h"

#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/** STEAL_READS_MAX bounds what the reader takes before giving up. */
#define STEAL_READS_MAX 16

/* Sends a RETIRE on scope: vfsd refuses it there (wrong connection),
 * on the scope itself since the sender is no route's process. */
static void steal_marker(int scope)
{
    pbx_ipc_retire rq;
    memset(&rq, 0, sizeof(rq));
    rq.object.id = 1U;
    rq.object.gen = 1U;
    rq.object_class = PBX_IPC_CLASS_FILE;
    uint8_t buf[128];
    size_t n = 0;
    pbx_ipc_id id = {3, 9};
    if (pbx_ipc_retire_encode(id, &rq, buf, sizeof(buf), &n) != PBX_OK ||
        pbx_peer_io_send(scope, buf, n, -1) != 0) {
        _exit(3);
    }
}

/* Whether m is vfsd's refusal of steal_marker's RETIRE. */
static bool steal_is_marker(const pbx_peer_msg *m)
{
    return m->len >= PBX_IPC_HEADER_BYTES && m->nfds == 0U &&
           pbx_le_get16(m->buf + 6) ==
               (uint16_t)(PBX_IPC_OP_RETIRE | PBX_IPC_REPLY_BIT);
}

/* The reader (a forked child holding a copy of the scope, as a job
 * does): reads the copy all along; when go becomes readable (the parent
 * has its RESOLVE answers) it sends the marker, whose refusal vfsd queues
 * on the scope after anything it ever sent there before. Exits 0 when
 * the marker was the first and only thing that came, 1 when anything
 * came first (a frame or a descriptor meant for the route's process),
 * 2 when nothing came. */
static void steal_reader(int copy, int go)
{
    static pbx_peer_msg m;
    int stolen = 0;
    bool sent = false;
    for (int i = 0; i < STEAL_READS_MAX; i++) {
        struct pollfd p[2] = {{copy, POLLIN, 0}, {go, POLLIN, 0}};
        /* Generous: the parent's two RESOLVEs and the marker take
         * milliseconds. */
        if (poll(p, sent ? 1U : 2U, 10000) <= 0) {
            _exit(2);
        }
        if ((p[0].revents & POLLIN) != 0) {
            if (pbx_peer_io_recv_raw(copy, &m, 0) != 0) {
                _exit(2);
            }
            bool marker = steal_is_marker(&m);
            stolen += marker ? 0 : 1 + (int)m.nfds;
            pbx_peer_io_close_all(m.fds, m.nfds);
            if (marker) {
                _exit(stolen == 0 ? 0 : 1);
            }
        } else if (!sent && (p[1].revents & (POLLIN | POLLHUP)) != 0) {
            steal_marker(copy);
            sent = true;
        }
    }
    _exit(1);
}

/* RESOLVE through the scope (FOUND with its object, and NOT_FOUND) is
 * answered on the route; a reader of a copy of the same scope gets none
 * of it, only the marker. */
PBX_TEST(peers_vfsd_resolve_answers_on_the_route_never_the_scope)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    int go[2];
    PBX_REQUIRE(pipe(go) == 0);
    pid_t kid = fork();
    PBX_REQUIRE(kid >= 0);
    if (kid == 0) {
        (void)close(t.route);
        (void)close(go[1]);
        steal_reader(t.scope, go[0]);
    }
    (void)close(go[0]);
    pbx_ipc_resolve_reply rep;
    memset(&rep, 0, sizeof(rep));
    PBX_CHECK_EQ(tv_resolve(t.scope, t.route, "a.txt", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_FOUND);
    PBX_CHECK_EQ(rep.scope_id, t.scope_id);
    PBX_CHECK_EQ(m.nfds, 1U);
    pbx_peer_io_close_all(m.fds, m.nfds);
    PBX_CHECK_EQ(tv_resolve(t.scope, t.route, "missing", PBX_IPC_OPERATION_READ,
                            PBX_IPC_CLASS_FILE, &rep, &m),
                 PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_NOT_FOUND);
    PBX_CHECK_EQ(m.nfds, 0U);
    /* Each answer came once: nothing more waits on the route. */
    PBX_CHECK(!tp_readable(t.route, 0));
    (void)close(go[1]);
    int ws = 0;
    PBX_REQUIRE(waitpid(kid, &ws, 0) == kid);
    PBX_CHECK(WIFEXITED(ws));
    PBX_CHECK_EQ(WEXITSTATUS(ws), 0);
    tv_down(&t);
}
