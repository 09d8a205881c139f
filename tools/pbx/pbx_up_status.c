/*
 * pbx_up_status.c: the supervisor's DIR/status file, rewritten whenever a
 * stack process starts or ends and when the stack becomes ready or stops,
 * so that `pbx status` can say what runs without asking any process.
 */
#include "tools/pbx/pbx_up.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

/* The incarnation shown for process i. */
static unsigned pbx_up_status_inc(const pbx_up *u, size_t i)
{
    if (i == PBX_UP_POWERBOXD) {
        return (unsigned)u->broker_incarnation;
    }
    if (i == PBX_UP_VFSD) {
        return (unsigned)u->vfsd_incarnation;
    }
    return u->proc[i].starts;
}

void pbx_up_status_write(const pbx_up *u)
{
    char path[PBX_UP_PATH_MAX + 16U];
    char tmp[PBX_UP_PATH_MAX + 16U];
    (void)snprintf(path, sizeof(path), "%s/status", u->dir);
    (void)snprintf(tmp, sizeof(tmp), "%s/status.tmp", u->dir);
    int fd =
        open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return;
    }
    const char *state = u->stopping || u->stopping_stack ? "stopping"
                        : u->running                     ? "ready"
                                                         : "starting";
    bool ok = dprintf(fd, "pbx-up %ld %s\n", (long)getpid(), state) > 0;
    for (size_t i = 0; ok && i < PBX_UP_PROCS; i++) {
        const pbx_up_proc *p = &u->proc[i];
        ok = dprintf(fd, "%s %ld %s incarnation %u\n", p->name, (long)p->pid,
                     p->pid != 0 ? "running" : "down",
                     pbx_up_status_inc(u, i)) > 0;
    }
    ok = close(fd) == 0 && ok;
    if (!ok || rename(tmp, path) != 0) {
        (void)unlink(tmp);
    }
}
