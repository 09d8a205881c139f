/*
 * vfsd_test.h: helpers test_peers_vfsd.c shares with
 * test_peers_vfsd_attach.c (a live pbx-vfsd driven over real sockets).
 */
#ifndef VFSD_TEST_H
#define VFSD_TEST_H

#include <stdint.h>

#include "../../ipc/pbx_ipc.h"
#include "../../peers/common/pbx_peer_io.h"

/** tv_file writes a small file ("hello\n") at dir/name (both read). */
void tv_file(const char *dir, const char *name);

/**
 * tv_resolve sends RESOLVE for sel (operation op, class cls) on scope fd
 * and waits (3 s) for the answer into m (the caller's; its descriptors
 * are the caller's to close). Returns PBX_OK with the decoded *rep, or the
 * error status vfsd answered.
 */
pbx_err tv_resolve(int fd, const char *sel, uint16_t op, uint16_t cls,
                   pbx_ipc_resolve_reply *rep, pbx_peer_msg *m);

/**
 * tv_retire sends RETIRE rq on route fd and waits (3 s) for the answer
 * into m; returns 0 when acknowledged exactly, else vfsd's status.
 */
uint32_t tv_retire(int fd, const pbx_ipc_retire *rq, pbx_peer_msg *m);

#endif /* VFSD_TEST_H */
