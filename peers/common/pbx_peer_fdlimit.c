/*
 * pbx_peer_fdlimit.c: raising a peer's soft RLIMIT_NOFILE for its table.
 * See pbx_peer_fdlimit.h.
 */
#include "peers/common/pbx_peer_fdlimit.h"

#include <errno.h>
#include <string.h>

#include "peers/common/pbx_peer_io.h"

bool pbx_peer_fdlimit_raise(const char *who, const char *opt, size_t n,
                            const char *rows, rlim_t want)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        pbx_peer_log(who, "getrlimit: %s", strerror(errno));
        return false;
    }
    if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < want) {
        pbx_peer_log(who,
                     "%s %zu needs %llu descriptors; the hard "
                     "RLIMIT_NOFILE is %llu (use fewer %s or raise it)",
                     opt, n, (unsigned long long)want,
                     (unsigned long long)rl.rlim_max, rows);
        return false;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < want) {
        rl.rlim_cur = want;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
            pbx_peer_log(who, "setrlimit to %llu: %s", (unsigned long long)want,
                         strerror(errno));
            return false;
        }
    }
    return true;
}
