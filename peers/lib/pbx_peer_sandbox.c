/*
 * pbx_peer_sandbox.c: Landlock plans for launchd's sandboxed jobs (see
 * pbx_peer_sandbox.h).
 */
#include "peers/lib/pbx_peer_sandbox.h"

#include <errno.h>

pbx_err pbx_peer_sandbox_decide(long abi, int err, pbx_peer_sandbox_plan *out)
{
    if (abi < 0) {
        /* ENOSYS: built without Landlock; EOPNOTSUPP: built in but
         * disabled at boot. Either way nothing could confine the job. */
        return err == ENOSYS || err == EOPNOTSUPP ? PBX_E_PEER_NO_LANDLOCK
                                                  : PBX_E_PEER_SANDBOX;
    }
    if (abi < 1) {
        return PBX_E_PEER_NO_LANDLOCK;
    }
    uint64_t fs = PBX_PEER_LL_FS_ABI1;
    if (abi >= 2) {
        fs |= PBX_PEER_LL_FS_REFER;
    }
    if (abi >= 3) {
        fs |= PBX_PEER_LL_FS_TRUNCATE;
    }
    /* ABI 4 added network rights (handled_net below) and ABI 7 audit
     * flags: no new filesystem right, so nothing to add for them. */
    if (abi >= 5) {
        fs |= PBX_PEER_LL_FS_IOCTL_DEV;
    }
    out->abi = abi;
    out->handled_fs = fs;
    /* No rule names a port, so a handled network right is denied. */
    out->handled_net =
        abi >= 4 ? (PBX_PEER_LL_NET_BIND_TCP | PBX_PEER_LL_NET_CONNECT_TCP)
                 : 0U;
    out->scoped =
        abi >= 6 ? (PBX_PEER_LL_SCOPE_ABSTRACT_UNIX | PBX_PEER_LL_SCOPE_SIGNAL)
                 : 0U;
    out->prog_access = PBX_PEER_LL_FS_EXECUTE | PBX_PEER_LL_FS_READ_FILE;
    return PBX_OK;
}
