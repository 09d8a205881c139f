/*
 * test_peers_sandbox.c: the pure decisions of launchd's sandbox: the
 * Landlock plan for every ABI a kernel may report (and for a kernel that
 * has none). The profile's are in test_peers_profile.c.
 */
#include "../../peers/lib/pbx_peer_sandbox.h"
#include "../runner/pbx_test.h"

#include <errno.h>
#include <string.h>

PBX_TEST(peers_sandbox_plans_every_abi_and_refuses_without_landlock)
{
    /* The filesystem rights each ABI knows: 13 with ABI 1, REFER with 2,
     * TRUNCATE with 3, none new with 4, IOCTL_DEV with 5, none new with
     * 6 and 7 (6 brought the two scopes, 4 the two TCP rights). A newer
     * ABI keeps them all. */
    static const struct {
        long abi;
        uint64_t fs;
        uint64_t scoped;
        uint64_t net;
    } cases[] = {
        {1, 0x1FFFU, 0U, 0U}, {2, 0x3FFFU, 0U, 0U}, {3, 0x7FFFU, 0U, 0U},
        {4, 0x7FFFU, 0U, 3U}, {5, 0xFFFFU, 0U, 3U}, {6, 0xFFFFU, 3U, 3U},
        {7, 0xFFFFU, 3U, 3U}, {8, 0xFFFFU, 3U, 3U}, {1000, 0xFFFFU, 3U, 3U},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        pbx_peer_sandbox_plan p;
        memset(&p, 0xA5, sizeof(p));
        PBX_CHECK_EQ(pbx_peer_sandbox_decide(cases[i].abi, 0, &p), PBX_OK);
        PBX_CHECK(p.abi == cases[i].abi);
        PBX_CHECK(p.handled_fs == cases[i].fs);
        PBX_CHECK(p.scoped == cases[i].scoped);
        /* From ABI 4 TCP bind and connect are handled with no rule that
         * allows a port: denied (the seccomp socket ban holds anyway). */
        PBX_CHECK(p.handled_net == cases[i].net);
        /* The one rule: execute and read the program's own file, both
         * handled (so nothing else is allowed). */
        PBX_CHECK(p.prog_access ==
                  (PBX_PEER_LL_FS_EXECUTE | PBX_PEER_LL_FS_READ_FILE));
        PBX_CHECK((p.prog_access & ~p.handled_fs) == 0U);
    }
    /* No Landlock: not built in (ENOSYS), disabled at boot (EOPNOTSUPP),
     * or an ABI below 1. Any other failure is refused too. *out is left
     * alone either way. */
    static const struct {
        long abi;
        int err;
        pbx_err want;
    } no[] = {
        {-1, ENOSYS, PBX_E_PEER_NO_LANDLOCK},
        {-1, EOPNOTSUPP, PBX_E_PEER_NO_LANDLOCK},
        {0, 0, PBX_E_PEER_NO_LANDLOCK},
        {-5, 0, PBX_E_PEER_SANDBOX},
        {-1, EINVAL, PBX_E_PEER_SANDBOX},
        {-1, EPERM, PBX_E_PEER_SANDBOX},
    };
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
        pbx_peer_sandbox_plan p;
        memset(&p, 0xA5, sizeof(p));
        PBX_CHECK_EQ(pbx_peer_sandbox_decide(no[i].abi, no[i].err, &p),
                     no[i].want);
        PBX_CHECK(p.handled_fs == 0xA5A5A5A5A5A5A5A5ULL);
    }
}
