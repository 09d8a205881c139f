/*
 * pbx_up_dir.c: the checks `pbx up` makes on its runtime directory DIR
 * before it takes DIR/lock. DIR holds public.sock and scope.sock, so a DIR
 * that another user made first (the default /tmp/powerboxd-UID is in a
 * world-writable /tmp), that is a symbolic link, or that others may open
 * would hand the stack's sockets to them. Hosted code, Linux only.
 */
#include "tools/pbx/pbx_up.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Refuses DIR with one line naming it and the reason; returns -1. */
static int pbx_up_dir_refuse(const char *dir, const char *why)
{
    (void)fprintf(stderr, "pbx up: %s: refused: %s\n", dir, why);
    return -1;
}

/* Checks DIR's parent: a parent that others may write (without the sticky
 * bit, which keeps them from renaming or removing DIR) or that another
 * user owns lets them replace DIR after it is checked. */
static int pbx_up_dir_parent(const char *dir)
{
    char parent[PBX_UP_PATH_MAX];
    int n = snprintf(parent, sizeof(parent), "%s", dir);
    if (n <= 0 || (size_t)n >= sizeof(parent)) {
        return pbx_up_dir_refuse(dir, "the path is too long");
    }
    /* Trailing slashes do not name another directory. */
    size_t len = (size_t)n;
    while (len > 1U && parent[len - 1U] == '/') {
        parent[--len] = '\0';
    }
    char *slash = strrchr(parent, '/');
    if (slash == NULL) {
        (void)snprintf(parent, sizeof(parent), ".");
    } else if (slash == parent) {
        parent[1] = '\0';
    } else {
        *slash = '\0';
    }
    struct stat st;
    if (stat(parent, &st) != 0) {
        (void)fprintf(stderr, "pbx up: %s: refused: its parent %s: %s\n", dir,
                      parent, strerror(errno));
        return -1;
    }
    if (st.st_uid != 0U && st.st_uid != geteuid()) {
        return pbx_up_dir_refuse(dir, "its parent is owned by another user");
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0U &&
        (st.st_mode & S_ISVTX) == 0U) {
        return pbx_up_dir_refuse(
            dir, "its parent is writable by others and not sticky");
    }
    return 0;
}

int pbx_up_dir_secure(const char *dir)
{
    if (pbx_up_dir_parent(dir) != 0) {
        return -1;
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    /* lstat, not stat: a symbolic link is refused, whatever it names. */
    struct stat st;
    if (lstat(dir, &st) != 0) {
        (void)fprintf(stderr, "pbx up: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    if (S_ISLNK(st.st_mode)) {
        return pbx_up_dir_refuse(dir, "it is a symbolic link");
    }
    if (!S_ISDIR(st.st_mode)) {
        return pbx_up_dir_refuse(dir, "it is not a directory");
    }
    if (st.st_uid != geteuid()) {
        return pbx_up_dir_refuse(dir, "it is owned by another user");
    }
    if ((st.st_mode & (S_IRWXG | S_IRWXO)) != 0U) {
        return pbx_up_dir_refuse(dir,
                                 "group or others have access (chmod 700 it)");
    }
    return 0;
}
