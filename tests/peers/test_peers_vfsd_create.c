/*
 * test_peers_vfsd_create.c: vfsd's CREATE (peers/vfsd/vfsd_create.c) in
 * a live pbx-vfsd: an existing name is DENIED, a missing directory is
 * NOT_FOUND, and a FOUND object creates its file only with its first
 * WRITE: an object dropped unused (a denied or cancelled request) leaves
 * nothing behind.
 */
#include "../../peers/app/pbx_obj.h"
#include "../runner/pbx_test.h"
#include "peers_child.h"
#include "vfsd_test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Whether t's served root (pub) holds name. */
static bool tc_exists(const tv *t, const char *name)
{
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/pub/%s", t->dir, name);
    return access(p, F_OK) == 0;
}

PBX_TEST(peers_vfsd_create_makes_the_file_only_when_used)
{
    static tv t;
    static pbx_peer_msg m;
    tv_up(&t);
    pbx_ipc_resolve_reply rep;
    const uint16_t op = PBX_IPC_OPERATION_CREATE;
    const uint16_t cls = PBX_IPC_CLASS_FILE;
    /* An existing file, directory or symlink: DENIED, nothing minted. */
    static const char *const taken[] = {"a.txt", "dir", "link_out"};
    for (size_t i = 0; i < sizeof(taken) / sizeof(taken[0]); i++) {
        PBX_REQUIRE(tv_resolve(t.scope, t.route, taken[i], op, cls, &rep, &m) ==
                    PBX_OK);
        PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_DENIED);
        PBX_CHECK_EQ(m.nfds, 0U);
    }
    /* A missing directory: NOT_FOUND, which grants nothing. */
    PBX_REQUIRE(tv_resolve(t.scope, t.route, "nodir/new.txt", op, cls, &rep,
                           &m) == PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_NOT_FOUND);
    PBX_CHECK_EQ(m.nfds, 0U);
    /* FOUND, then dropped unused: no file. */
    PBX_REQUIRE(tv_resolve(t.scope, t.route, "dir/new.txt", op, cls, &rep,
                           &m) == PBX_OK);
    PBX_CHECK_EQ(rep.result, PBX_IPC_RESOLVE_FOUND);
    PBX_REQUIRE(m.nfds == 1U);
    PBX_CHECK(!tc_exists(&t, "dir/new.txt"));
    (void)close(m.fds[0]);
    PBX_CHECK(!tc_exists(&t, "dir/new.txt"));
    /* FOUND, then written: the file holds exactly the bytes. */
    PBX_REQUIRE(tv_resolve(t.scope, t.route, "made.txt", op, cls, &rep, &m) ==
                PBX_OK);
    PBX_REQUIRE(rep.result == PBX_IPC_RESOLVE_FOUND && m.nfds == 1U);
    int obj = m.fds[0];
    PBX_CHECK(!tc_exists(&t, "made.txt"));
    size_t put = 0;
    PBX_CHECK_EQ(pbx_obj_write(obj, 0U, "made\n", 5U, &put), 0);
    PBX_CHECK_EQ(put, 5U);
    char p[512];
    (void)snprintf(p, sizeof(p), "%s/pub/made.txt", t.dir);
    char got[16] = {0};
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    PBX_CHECK(fd >= 0 && read(fd, got, sizeof(got)) == 5 &&
              memcmp(got, "made\n", 5U) == 0);
    if (fd >= 0) {
        (void)close(fd);
    }
    /* A create grant reads the file it made, as a write grant does. */
    size_t n = 0;
    memset(got, 0, sizeof(got));
    PBX_CHECK_EQ(pbx_obj_read(obj, 0U, got, sizeof(got), &n), 0);
    PBX_CHECK(n == 5U && memcmp(got, "made\n", 5U) == 0);
    (void)close(obj);
    (void)unlink(p);
    tv_down(&t);
}
