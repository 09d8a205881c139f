/*
 * vfsd_test.h: helpers test_peers_vfsd.c shares with
 * test_peers_vfsd_objects.c and test_peers_vfsd_attach.c (a live
 * pbx-vfsd driven over real sockets).
 */
#ifndef VFSD_TEST_H
#define VFSD_TEST_H

#include <stdint.h>

#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"

#include <sys/types.h>

/** VFSD_TEST_LOCAL masks the local part of an object id (below the
 * incarnation's 16 bits). */
#define VFSD_TEST_LOCAL ((UINT64_C(1) << 48) - 1U)

/** tv is a running vfsd with one handed-over scope and one route (tv_up). */
typedef struct tv {
    /** pid is vfsd's. */
    pid_t pid;
    /** scope is the scope vfsd handed out (what powerboxd holds). */
    int scope;
    /** scope_id is the identity vfsd named it by. */
    uint64_t scope_id;
    /** route is our end of powerboxd's vfsd route (a pair we made). */
    int route;
    /** dir is the served root (a fresh scratch directory). */
    char dir[256];
} tv;

/**
 * tv_up_inc builds root/{secret,pub/{a.txt,dir/,links}} and starts vfsd
 * on pub with a handed-over scope and a route, with --incarnation inc
 * unless inc is NULL; fills *t (the caller's).
 */
void tv_up_inc(tv *t, const char *inc);

/** tv_up is tv_up_inc with vfsd's own random incarnation. */
void tv_up(tv *t);

/** tv_down closes t's scope and route and stops its vfsd. */
void tv_down(tv *t);

/**
 * tv_found resolves a.txt (read, file) on t's scope into *rep and m;
 * returns the object's SEND end (owned by the caller, also m->fds[0]).
 */
int tv_found(const tv *t, pbx_ipc_resolve_reply *rep, pbx_peer_msg *m);

/**
 * tv_detach sends DETACH of obj with cap (our alias, or -1) on route and
 * waits (3 s) for the answer into m; returns 0 when acknowledged exactly,
 * else vfsd's status.
 */
uint32_t tv_detach(int route, pbx_ipc_object obj, int cap, pbx_peer_msg *m);

/** tv_file writes a small file ("hello\n") at dir/name (both read). */
void tv_file(const char *dir, const char *name);

/**
 * tv_resolve sends RESOLVE for sel (operation op, class cls) on scope fd
 * and waits (3 s) for the answer on reply_fd (vfsd answers the route's
 * process on its route; a refused sender on the scope) into m (the
 * caller's; its descriptors are the caller's to close). Returns PBX_OK
 * with the decoded *rep, or the error status vfsd answered.
 */
pbx_err tv_resolve(int fd, int reply_fd, const char *sel, uint16_t op,
                   uint16_t cls, pbx_ipc_resolve_reply *rep, pbx_peer_msg *m);

/**
 * tv_retire sends RETIRE rq on route fd and waits (3 s) for the answer
 * into m; returns 0 when acknowledged exactly, else vfsd's status.
 */
uint32_t tv_retire(int fd, const pbx_ipc_retire *rq, pbx_peer_msg *m);

#endif /* VFSD_TEST_H */
