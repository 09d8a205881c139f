/*
 * pbx_stop.c: `pbx status` (the stack in DIR: whether a pbx up runs
 * there, its processes with their pids and incarnations, and how many
 * grants are live) and `pbx stop` (what SIGTERM to pbx up does: the whole
 * stack stops; it returns once pbx up has ended).
 *
 * Whether a stack runs is DIR/lock's: pbx up holds an flock on it for its
 * whole life and writes its pid there, and the kernel drops the lock when
 * it ends, however it ends. So nothing here trusts a file a dead stack
 * left: DIR/status (pbx_up_status.c) is read only while the lock is held,
 * and `pbx stop` waits for the lock to be free, the observable end.
 */
#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "tools/pbx/pbx_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

/* How long `pbx stop` waits for pbx up's end (pbx up's own stop waits at
 * most a few seconds per process before SIGKILL). */
#define PBX_STOP_WAIT_MS 60000
/* How often it looks. */
#define PBX_STOP_STEP_MS 20
/* How long the grant count waits for ttyd's query socket. */
#define PBX_STATUS_QUERY_MS 5000

/* Reads the pid of the pbx up that holds DIR/lock into *pid; returns
 * false (after one line on stderr) when no pbx up holds it. */
static bool pbx_stop_holder(const char *cmd, const char *dir, pid_t *pid)
{
    char path[PATH_MAX];
    if (pbx_tool_dir_path("lock", path, sizeof(path)) != 0) {
        return false;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    bool held =
        fd >= 0 && flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    char text[32] = {0};
    ssize_t got = fd >= 0 ? pread(fd, text, sizeof(text) - 1U, 0) : -1;
    if (fd >= 0) {
        (void)close(fd); /* drops the shared lock when it was taken */
    }
    uint64_t n = 0;
    char *nl = got > 0 ? strchr(text, '\n') : NULL;
    if (nl != NULL) {
        *nl = '\0';
    }
    if (!held || got <= 0 || !pbx_peer_parse_u64(text, INT_MAX, &n) ||
        n == 0U) {
        (void)fprintf(stderr,
                      "pbx %s: no stack runs in %s (no pbx up holds "
                      "its lock)\n",
                      cmd, dir);
        return false;
    }
    *pid = (pid_t)n;
    return true;
}

/* True once no process holds DIR/lock (pbx up has ended). */
static bool pbx_stop_free(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return errno == ENOENT;
    }
    bool free_now = flock(fd, LOCK_EX | LOCK_NB) == 0;
    (void)close(fd);
    return free_now;
}

/* How many live grants ttyd lists (its query socket's rows); -1 when it
 * cannot be asked. */
static long pbx_status_grants(void)
{
    char path[PATH_MAX];
    if (pbx_tool_dir_path("ttyd.sock", path, sizeof(path)) != 0) {
        return -1;
    }
    int fd = pbx_peer_io_connect(path, SOCK_STREAM);
    if (fd < 0) {
        return -1;
    }
    long rows = 0;
    char buf[4096];
    bool ended = false;
    for (int i = 0; i < 1 << 16 && !ended; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        ssize_t r = poll(&p, 1, PBX_STATUS_QUERY_MS) == 1
                        ? read(fd, buf, sizeof(buf))
                        : -1;
        if (r < 0 && errno == EINTR) {
            continue;
        }
        for (ssize_t k = 0; k < r; k++) {
            rows += buf[k] == '\n' ? 1 : 0;
        }
        ended = r == 0;
        if (r < 0) {
            break;
        }
    }
    (void)close(fd);
    return ended ? rows : -1;
}

/* `pbx status`: prints DIR/status's lines and the grant count. */
static int pbx_status_run(const char *dir)
{
    pid_t pid = 0;
    if (!pbx_stop_holder("status", dir, &pid)) {
        return PBX_TOOL_EXIT_FAIL;
    }
    char path[PATH_MAX];
    if (pbx_tool_dir_path("status", path, sizeof(path)) != 0) {
        return PBX_TOOL_EXIT_FAIL;
    }
    (void)printf("stack %s\n", dir);
    FILE *f = fopen(path, "re");
    char line[256];
    for (int i = 0; f != NULL && i < 16 && fgets(line, sizeof(line), f); i++) {
        (void)fputs(line, stdout);
    }
    if (f == NULL) {
        (void)printf("pbx-up %ld starting\n", (long)pid);
    } else {
        (void)fclose(f);
    }
    long grants = pbx_status_grants();
    if (grants < 0) {
        (void)printf("grants ? (ttyd's query socket did not answer)\n");
    } else {
        (void)printf("grants %ld live\n", grants);
    }
    return PBX_TOOL_EXIT_OK;
}

/* `pbx stop`: SIGTERM to pbx up, then waits (bounded) for its end. */
static int pbx_stop_run(const char *dir)
{
    pid_t pid = 0;
    char lock[PATH_MAX];
    if (!pbx_stop_holder("stop", dir, &pid) ||
        pbx_tool_dir_path("lock", lock, sizeof(lock)) != 0) {
        return PBX_TOOL_EXIT_FAIL;
    }
    if (kill(pid, SIGTERM) != 0) {
        (void)fprintf(stderr, "pbx stop: pbx up (pid %ld): %s\n", (long)pid,
                      strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    for (int waited = 0; waited < PBX_STOP_WAIT_MS;
         waited += PBX_STOP_STEP_MS) {
        if (pbx_stop_free(lock)) {
            (void)printf("pbx stop: the stack in %s stopped (pbx up pid %ld "
                         "ended)\n",
                         dir, (long)pid);
            return PBX_TOOL_EXIT_OK;
        }
        (void)poll(NULL, 0, PBX_STOP_STEP_MS);
    }
    (void)fprintf(stderr, "pbx stop: pbx up (pid %ld) still runs after %d s\n",
                  (long)pid, PBX_STOP_WAIT_MS / 1000);
    return PBX_TOOL_EXIT_FAIL;
}

/* Parses [--dir DIR] into the tool's directory; usage status or OK. */
static int pbx_stop_args(const char *cmd, int argc, char **argv, char *dir,
                         size_t cap)
{
    if (argc == 3 && strcmp(argv[1], "--dir") == 0) {
        pbx_tool_dir_set(argv[2]);
    } else if (argc != 1) {
        return pbx_tool_usage_error(cmd, "unknown argument", argv[1]);
    }
    return pbx_tool_dir_path(NULL, dir, cap);
}

void pbx_tool_status_usage(FILE *fp)
{
    (void)fputs(
        "  pbx status [--dir DIR]\n"
        "    the stack in DIR: pbx up's pid and state (starting, ready,\n"
        "    stopping), each process's pid, state and incarnation, and how\n"
        "    many grants are live; exit 1 when no stack runs there\n",
        fp);
}

int pbx_tool_status(int argc, char **argv)
{
    char dir[PATH_MAX];
    int rc = pbx_stop_args("status", argc, argv, dir, sizeof(dir));
    return rc != PBX_TOOL_EXIT_OK ? rc : pbx_status_run(dir);
}

void pbx_tool_stop_usage(FILE *fp)
{
    (void)fputs("  pbx stop [--dir DIR]\n"
                "    stops the stack in DIR as SIGTERM to its pbx up does, "
                "and returns\n"
                "    once pbx up has ended (at most 60 s); exit 1 when no "
                "stack runs\n"
                "    there\n",
                fp);
}

int pbx_tool_stop(int argc, char **argv)
{
    char dir[PATH_MAX];
    int rc = pbx_stop_args("stop", argc, argv, dir, sizeof(dir));
    return rc != PBX_TOOL_EXIT_OK ? rc : pbx_stop_run(dir);
}
