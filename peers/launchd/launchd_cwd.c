/*
 * launchd_cwd.c: the launching caller's working directory for its job
 * (PBX_PEER_LAUNCH_CWD, docs/HOST.md "launchd"). pbx run hands its
 * working directory over as an O_PATH directory descriptor, the LAUNCH's
 * last; launchd checks it before anything is started and the job's child
 * changes to it before its sandbox is applied and its program runs, so a
 * relative path names for the job what it names for the caller (and the
 * open broker, which reads the thread's own /proc/TID/cwd, resolves it
 * there too). launchd's own copy is closed with the LAUNCH's other
 * descriptors once the job was forked.
 */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "peers/launchd/launchd.h"
#include "peers/lib/pbx_peer.h"

/* The working-directory descriptor among the LAUNCH's fds, or -1. */
static int launchd_cwd_fd(const pbx_peer_launch_req *req, const int *fds)
{
    int i = pbx_peer_launch_cwd_index(req);
    return i >= 0 ? fds[i] : -1;
}

uint16_t launchd_cwd_check(const pbx_peer_launch_req *req, const int *fds)
{
    int fd = launchd_cwd_fd(req, fds);
    struct stat st;
    if (fd < 0 || (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))) {
        return 0U;
    }
    /* Never a silent fallback to launchd's own directory: the caller's
     * relative paths would name other files. */
    pbx_peer_log("launchd",
                 "LAUNCH refused: its working-directory descriptor is not "
                 "a directory");
    return (uint16_t)PBX_E_PEER_CWD;
}

void launchd_cwd_enter(const pbx_peer_launch_req *req, const int *fds)
{
    int fd = launchd_cwd_fd(req, fds);
    if (fd >= 0 && fchdir(fd) != 0) {
        /* The job never runs elsewhere than where it was asked to. */
        _exit(127);
    }
}
