/*
 * vfsd_create.c: the CREATE operation (docs/HOST.md, "Brokered opens").
 * RESOLVE of a CREATE names a file that must not exist yet, in a
 * directory that must (beneath the scope, as every lookup): an existing
 * name is DENIED, a missing directory NOT_FOUND (which, as always, grants
 * nothing), and otherwise the object is minted holding the directory and
 * the name, but no file. The file is created (O_CREAT | O_EXCL, never
 * following a symlink) only by the first call that needs its data, an
 * OPEN or a WRITE, which only the holder of an approved grant can make:
 * a denied or cancelled request creates nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "peers/lib/pbx_peer.h"
#include "peers/vfsd/vfsd.h"

/* The mode a created file gets (the user's own, like vfsd's root). */
#define VFSD_CREATE_MODE 0600

/* Looks path up beneath dirfd (no magic link, no escape) as O_PATH;
 * the descriptor or -1 with errno set. */
static int vfsd_create_lookup(int dirfd, const char *path, uint64_t flags)
{
    struct open_how how;
    memset(&how, 0, sizeof(how));
    how.flags = (uint64_t)(O_PATH | O_CLOEXEC) | flags;
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, dirfd, path[0] != '\0' ? path : ".", &how,
                        sizeof(how));
}

bool vfsd_create_resolve(int dirfd, char *path, vfsd_mint *mt,
                         pbx_peer_vfs_verdict *v)
{
    *v = (pbx_peer_vfs_verdict){PBX_IPC_RESOLVE_DENIED, 0U};
    int fd = vfsd_create_lookup(dirfd, path, (uint64_t)O_NOFOLLOW);
    if (fd >= 0 || errno != ENOENT) {
        /* It exists (a file, a directory, a symlink), or the walk left
         * the scope: nothing to create. */
        if (fd >= 0) {
            (void)close(fd);
        }
        return false;
    }
    char *slash = strrchr(path, '/');
    const char *name = slash != NULL ? slash + 1 : path;
    size_t n = strlen(name);
    if (n == 0U || n >= VFSD_CREATE_NAME_MAX) {
        return false;
    }
    memcpy(mt->create_name, name, n + 1U);
    if (slash != NULL) {
        *slash = '\0';
    }
    int dir = vfsd_create_lookup(dirfd, slash != NULL ? path : "",
                                 (uint64_t)O_DIRECTORY);
    struct stat sb;
    if (dir < 0 || fstat(dir, &sb) != 0) {
        bool missing = errno == ENOENT || errno == ENOTDIR;
        if (dir >= 0) {
            (void)close(dir);
        }
        *v = missing ? (pbx_peer_vfs_verdict){PBX_IPC_RESOLVE_NOT_FOUND,
                                              PBX_IPC_CLASS_FILE}
                     : *v;
        return false;
    }
    mt->create_dir = dir;
    mt->named =
        (pbx_peer_vfs_stat){(uint64_t)sb.st_dev, (uint64_t)sb.st_ino, 0U};
    *v = (pbx_peer_vfs_verdict){PBX_IPC_RESOLVE_FOUND, PBX_IPC_CLASS_FILE};
    return true;
}

uint32_t vfsd_create_now(size_t row)
{
    if (g_vfsd.grant[row].operation != PBX_IPC_OPERATION_CREATE ||
        g_vfsd.data[row] >= 0) {
        return 0U;
    }
    if (g_vfsd.create_dir[row] < 0) {
        return (uint32_t)PBX_E_OBJ_IO;
    }
    int fd =
        openat(g_vfsd.create_dir[row], g_vfsd.create_name[row],
               O_CREAT | O_EXCL | O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY,
               VFSD_CREATE_MODE);
    int e = errno;
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        pbx_peer_log("vfsd", "CREATE of %s failed: %s", g_vfsd.create_name[row],
                     strerror(fd < 0 ? e : errno));
        if (fd >= 0) {
            (void)close(fd);
        }
        return (uint32_t)PBX_E_OBJ_IO;
    }
    /* Created: from now on the object is its file, as a write grant's. */
    (void)close(g_vfsd.create_dir[row]);
    g_vfsd.create_dir[row] = -1;
    g_vfsd.data[row] = fd;
    g_vfsd.stats[row] =
        (pbx_peer_vfs_stat){(uint64_t)sb.st_dev, (uint64_t)sb.st_ino, 0U};
    pbx_peer_log("vfsd", "CREATE made %s (object row %zu)",
                 g_vfsd.create_name[row], row);
    return 0U;
}

void vfsd_create_release(size_t row)
{
    if (g_vfsd.objs.rows[row].state != PBX_PEER_OBJ_LIVE &&
        g_vfsd.create_dir[row] >= 0) {
        (void)close(g_vfsd.create_dir[row]);
        g_vfsd.create_dir[row] = -1;
    }
}
