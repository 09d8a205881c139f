/*
 * pbx_peer_broker.c: the open broker's decisions (see pbx_peer_broker.h).
 * Paths are compared as strings on component boundaries; nothing here
 * resolves a name (the broker resolves a scope path itself with openat2
 * beneath the scope, and the kernel resolves a continued one under
 * Landlock).
 */
#include "peers/lib/pbx_peer_broker.h"

#include <errno.h>
#include <string.h>

/* The x86_64 open flags (asm-generic/fcntl.h), spelled out so that the
 * decision does not depend on which libc header defined which. */
#define BR_O_ACCMODE   03U
#define BR_O_RDONLY    00U
#define BR_O_CREAT     0100U
#define BR_O_EXCL      0200U
#define BR_O_TRUNC     01000U
#define BR_O_DIRECTORY 0200000U
#define BR_O_PATH      010000000U
#define BR_O_TMPFILE   020000000U

/* The most digits a descriptor or process number has in a path. */
#define BR_NUM_DIGITS 10U

/* Whether path is prefix itself or below it (prefix "/" holds all). */
static bool br_under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (n == 1U && prefix[0] == '/') {
        return path[0] == '/';
    }
    return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

pbx_peer_broker_where pbx_peer_broker_place(const pbx_peer_broker_places *pl,
                                            const char *abs, const char **rest)
{
    *rest = NULL;
    /* Inside the mount, or a parent of it: a path to the mount's files
     * would name objects by a name the program could guess. */
    if (pl->mount != NULL &&
        (br_under(abs, pl->mount) || br_under(pl->mount, abs))) {
        return PBX_PEER_BROKER_MOUNT;
    }
    if (pl->scope != NULL && br_under(abs, pl->scope)) {
        const char *r =
            abs + (strcmp(pl->scope, "/") == 0 ? 0U : strlen(pl->scope));
        while (*r == '/') {
            r++;
        }
        *rest = r;
        return PBX_PEER_BROKER_SCOPE;
    }
    for (size_t i = 0; i < pl->nprofile && i < PBX_PEER_BROKER_PROFILE_MAX;
         i++) {
        if (br_under(abs, pl->profile[i])) {
            return PBX_PEER_BROKER_SYSTEM;
        }
    }
    return PBX_PEER_BROKER_OUTSIDE;
}

int pbx_peer_broker_flags(uint64_t flags, bool exists, uint8_t *op)
{
    uint64_t acc = flags & BR_O_ACCMODE;
    if ((flags & BR_O_TMPFILE) != 0U) {
        return EOPNOTSUPP;
    }
    if ((flags & BR_O_PATH) != 0U || (flags & BR_O_DIRECTORY) != 0U) {
        return EACCES;
    }
    if (acc == BR_O_ACCMODE) {
        return EINVAL;
    }
    bool creat = (flags & BR_O_CREAT) != 0U;
    if (!exists) {
        if (!creat) {
            return ENOENT;
        }
        *op = PBX_PEER_BROKER_OP_CREATE;
        return 0;
    }
    if (creat && (flags & BR_O_EXCL) != 0U) {
        return EEXIST;
    }
    bool write = acc != BR_O_RDONLY || (flags & BR_O_TRUNC) != 0U;
    *op = write ? PBX_PEER_BROKER_OP_WRITE : PBX_PEER_BROKER_OP_READ;
    return 0;
}

/* Reads a decimal number of 1..BR_NUM_DIGITS digits at *p, moving *p past
 * it; false when there is none, it does not fit 32 bits, or it has a
 * leading zero: the kernel reads /proc numbers so (fs/proc's
 * name_to_int), and "/proc/self/fd/05" names no descriptor. */
static bool br_num(const char **p, uint32_t *out)
{
    uint64_t v = 0;
    size_t n = 0;
    while (n < BR_NUM_DIGITS && (*p)[n] >= '0' && (*p)[n] <= '9') {
        v = v * 10U + (uint64_t)((*p)[n] - '0');
        n++;
    }
    if (n == 0U || ((*p)[n] >= '0' && (*p)[n] <= '9') || v > UINT32_MAX ||
        (n > 1U && (*p)[0] == '0')) {
        return false;
    }
    *p += n;
    *out = (uint32_t)v;
    return true;
}

/* Moves *p past the literal s when it starts there. */
static bool br_eat(const char **p, const char *s)
{
    size_t n = strlen(s);
    if (strncmp(*p, s, n) != 0) {
        return false;
    }
    *p += n;
    return true;
}

bool pbx_peer_broker_fd_path(const char *abs, uint32_t tgid, uint32_t tid,
                             uint32_t *fd)
{
    const char *p = abs;
    uint32_t v = 0;
    if (!br_eat(&p, "/proc/")) {
        return false;
    }
    if (br_eat(&p, "self/") || br_eat(&p, "thread-self/")) {
        /* The notifying thread's own table, which is its process's. */
    } else if (br_num(&p, &v) && v == tgid && br_eat(&p, "/")) {
        if (br_eat(&p, "task/")) {
            if (!br_num(&p, &v) || v != tid || !br_eat(&p, "/")) {
                return false;
            }
        }
    } else {
        return false;
    }
    if (!br_eat(&p, "fd/") || !br_num(&p, &v)) {
        return false;
    }
    while (*p == '/') {
        p++;
    }
    if (*p != '\0') {
        return false;
    }
    *fd = v;
    return true;
}

bool pbx_peer_broker_proc_own(const char *abs, uint32_t tgid, char *out,
                              size_t cap)
{
    const char *p = abs;
    uint32_t v = 0;
    /* The kernel finds no process by "/proc/0123": never rewritten. */
    if (!br_eat(&p, "/proc/") || p[0] == '0' || !br_num(&p, &v) || v != tgid ||
        (*p != '\0' && *p != '/')) {
        return false;
    }
    size_t n = strlen(p);
    if (sizeof("/proc/self") + n > cap) {
        return false;
    }
    memcpy(out, "/proc/self", sizeof("/proc/self") - 1U);
    memcpy(out + sizeof("/proc/self") - 1U, p, n + 1U);
    return true;
}

pbx_err pbx_peer_broker_join(const char *base, const char *rel, char *out,
                             size_t cap)
{
    size_t nb = strlen(base);
    size_t nr = strlen(rel);
    if (cap > 0U) {
        out[0] = '\0';
    }
    if (rel[0] == '/') {
        if (nr >= cap) {
            return PBX_E_BASE_OVERFLOW;
        }
        memcpy(out, rel, nr + 1U);
        return PBX_OK;
    }
    bool slash = nb > 0U && base[nb - 1U] == '/';
    size_t need = nb + (slash ? 0U : 1U) + nr;
    if (need >= cap) {
        return PBX_E_BASE_OVERFLOW;
    }
    memcpy(out, base, nb);
    if (!slash) {
        out[nb++] = '/';
    }
    memcpy(out + nb, rel, nr + 1U);
    return PBX_OK;
}

void pbx_peer_broker_rate_init(pbx_peer_broker_rate *r, uint32_t burst,
                               uint32_t per_ms, uint64_t now_ms)
{
    r->burst = burst > 0U ? burst : 1U;
    r->per_ms = per_ms > 0U ? per_ms : 1U;
    r->tokens = r->burst;
    r->last_ms = now_ms;
}

bool pbx_peer_broker_rate_take(pbx_peer_broker_rate *r, uint64_t now_ms)
{
    if (now_ms > r->last_ms) {
        uint64_t add = (now_ms - r->last_ms) / r->per_ms;
        if (add > 0U) {
            uint64_t t = (uint64_t)r->tokens + add;
            r->tokens = t > r->burst ? r->burst : (uint32_t)t;
            /* Keep the remainder, so a steady caller is not slowed. */
            r->last_ms += add * r->per_ms;
        }
    }
    if (r->tokens == 0U) {
        return false;
    }
    r->tokens--;
    return true;
}

void pbx_peer_broker_default_profile(pbx_peer_broker_places *pl)
{
    static const char *const def[] = {
        "/usr",
        "/lib",
        "/lib64",
        "/bin",
        "/sbin",
        "/etc",
        "/dev/null",
        "/dev/zero",
        "/dev/urandom",
        "/proc/self",
        "/proc/thread-self",
        "/sys/devices/system/cpu",
    };
    size_t n = sizeof(def) / sizeof(def[0]);
    for (size_t i = 0; i < n && i < PBX_PEER_BROKER_PROFILE_MAX; i++) {
        pl->profile[i] = def[i];
    }
    pl->nprofile = n;
}
