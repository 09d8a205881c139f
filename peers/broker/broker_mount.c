/*
 * broker_mount.c: whether vfsd's FUSE mount is up (broker.h). Where FUSE
 * cannot be mounted vfsd gives no revocable descriptors, so a brokered
 * open would be asked of a person and then refused anyway; the broker
 * reads the mount table before it asks and refuses at once, saying why.
 * The table is read, never the mount itself: a stat of the mount would
 * be a request to vfsd's FUSE server.
 */
#define _GNU_SOURCE
#include "peers/broker/broker.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The most bytes of the mount table read (a host with thousands of
 * mounts is cut there: the mount is then not found, and opens refused). */
#define BM_TABLE_MAX ((size_t)256U * 1024U)
/* The fields of a mountinfo line before the mount point. */
#define BM_FIELDS_BEFORE_POINT 4U

/* Decodes the mountinfo field at p (up to a space or the line's end e)
 * into out (cap bytes, NUL-terminated): "\\ooo" octal escapes become their
 * byte. Returns the position after the field; out holds "" when the
 * field does not fit. */
static const char *bm_field(const char *p, const char *e, char *out, size_t cap)
{
    size_t n = 0;
    bool fits = true;
    while (p < e && *p != ' ') {
        char ch = *p;
        if (ch == '\\' && e - p >= 4 && p[1] >= '0' && p[1] <= '3' &&
            p[2] >= '0' && p[2] <= '7' && p[3] >= '0' && p[3] <= '7') {
            ch = (char)(((p[1] - '0') << 6) | ((p[2] - '0') << 3) |
                        (p[3] - '0'));
            p += 3;
        }
        p++;
        if (n + 1U < cap) {
            out[n++] = ch;
        } else {
            fits = false;
        }
    }
    out[fits ? n : 0U] = '\0';
    return p;
}

/* Skips count space-separated fields from p within e; NULL when the line
 * has fewer. */
static const char *bm_skip(const char *p, const char *e, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        const char *sp = memchr(p, ' ', (size_t)(e - p));
        if (sp == NULL) {
            return NULL;
        }
        p = sp + 1;
    }
    return p;
}

/* One mountinfo line [p, e): 1 when it mounts FUSE at mount, 0 when it
 * mounts something else there, -1 when it is not about mount. */
static int bm_line(const char *p, const char *e, const char *mount)
{
    static char point[PBX_BROKER_PATH_MAX];
    p = bm_skip(p, e, BM_FIELDS_BEFORE_POINT);
    if (p == NULL) {
        return -1;
    }
    (void)bm_field(p, e, point, sizeof(point));
    if (strcmp(point, mount) != 0) {
        return -1;
    }
    /* The optional fields end at " - "; the filesystem type follows. */
    const char *dash = NULL;
    for (const char *q = p; q + 2 < e; q++) {
        if (q[0] == ' ' && q[1] == '-' && q[2] == ' ') {
            dash = q + 3;
            break;
        }
    }
    if (dash == NULL) {
        return 0;
    }
    size_t tl = (size_t)(e - dash);
    const char *sp = memchr(dash, ' ', tl);
    tl = sp != NULL ? (size_t)(sp - dash) : tl;
    bool fuse = (tl == 4U && memcmp(dash, "fuse", 4U) == 0) ||
                (tl > 5U && memcmp(dash, "fuse.", 5U) == 0);
    return fuse ? 1 : 0;
}

bool pbx_broker_mount_is_fuse(const char *text, size_t len, const char *mount)
{
    const char *p = text;
    const char *end = text + len;
    int last = -1;
    /* Bounded: each round consumes one line of at least one byte. */
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *e = nl != NULL ? nl : end;
        int r = bm_line(p, e, mount);
        last = r >= 0 ? r : last;
        p = e + 1;
    }
    return last == 1;
}

bool pbx_broker_fuse_up(const char *mount)
{
    int fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return false;
    }
    char *buf = malloc(BM_TABLE_MAX);
    size_t have = 0;
    /* Bounded by the buffer: each read adds at least one byte or ends. */
    while (buf != NULL && have < BM_TABLE_MAX) {
        ssize_t n = read(fd, buf + have, BM_TABLE_MAX - have);
        if (n <= 0) {
            break;
        }
        have += (size_t)n;
    }
    (void)close(fd);
    bool up = buf != NULL && pbx_broker_mount_is_fuse(buf, have, mount);
    free(buf);
    return up;
}
