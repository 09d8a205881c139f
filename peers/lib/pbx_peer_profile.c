/*
 * pbx_peer_profile.c: the system profile and profile files of sandboxed
 * jobs (see pbx_peer_profile.h).
 */
#include "peers/lib/pbx_peer_profile.h"

#include <string.h>

#include "peers/lib/pbx_peer_sandbox.h"

/* Landlock rights by the kernel's uapi numbers (linux/landlock.h). */
#define PROFILE_LL_WRITE_FILE (1ULL << 1)
#define PROFILE_LL_READ_DIR   (1ULL << 3)
/* The rights a rule on a file that is not a directory may carry:
 * EXECUTE, WRITE_FILE, READ_FILE, TRUNCATE, IOCTL_DEV. */
#define PROFILE_LL_FILE_RIGHTS                                                 \
    (PBX_PEER_LL_FS_EXECUTE | PROFILE_LL_WRITE_FILE |                          \
     PBX_PEER_LL_FS_READ_FILE | PBX_PEER_LL_FS_TRUNCATE |                      \
     PBX_PEER_LL_FS_IOCTL_DEV)

/* The system profile (docs/HOST.md, "The system profile"). */
static const struct {
    const char *path;
    uint8_t access;
} profile_system[] = {
    {"/usr", PBX_PEER_PROFILE_RX},
    {"/bin", PBX_PEER_PROFILE_RX},
    {"/sbin", PBX_PEER_PROFILE_RX},
    {"/lib", PBX_PEER_PROFILE_RX},
    {"/lib32", PBX_PEER_PROFILE_RX},
    {"/lib64", PBX_PEER_PROFILE_RX},
    {"/libx32", PBX_PEER_PROFILE_RX},
    {"/etc/ld.so.cache", PBX_PEER_PROFILE_R},
    {"/etc/ld.so.preload", PBX_PEER_PROFILE_R},
    {"/etc/nsswitch.conf", PBX_PEER_PROFILE_R},
    {"/etc/passwd", PBX_PEER_PROFILE_R},
    {"/etc/group", PBX_PEER_PROFILE_R},
    {"/etc/localtime", PBX_PEER_PROFILE_R},
    {"/etc/locale.alias", PBX_PEER_PROFILE_R},
    {"/etc/terminfo", PBX_PEER_PROFILE_R},
    {"/dev/null", PBX_PEER_PROFILE_RW},
    {"/dev/zero", PBX_PEER_PROFILE_RW},
    {"/dev/urandom", PBX_PEER_PROFILE_RW},
};

void pbx_peer_profile_system(pbx_peer_profile *p)
{
    memset(p, 0, sizeof(*p));
    size_t n = sizeof(profile_system) / sizeof(profile_system[0]);
    for (size_t i = 0; i < n && i < PBX_PEER_PROFILE_ENTRIES; i++) {
        size_t len = strlen(profile_system[i].path);
        memcpy(p->entries[i].path, profile_system[i].path, len + 1U);
        p->entries[i].access = profile_system[i].access;
        p->entries[i].line = 0U;
    }
    p->n = (uint32_t)n;
    p->proc_self = true;
}

/* Whether a (length alen) is b or lies beneath it, component-wise. */
static bool profile_within(const char *a, size_t alen, const char *b)
{
    size_t blen = strlen(b);
    if (blen == 1U) {
        return true; /* everything lies beneath "/" */
    }
    if (alen < blen || memcmp(a, b, blen) != 0) {
        return false;
    }
    return alen == blen || a[blen] == '/';
}

/* Whether path (length len) is written plainly: absolute, no empty, "."
 * or ".." component, no trailing '/' but for "/", no control byte. */
static bool profile_plain(const char *path, size_t len)
{
    if (len == 0U || len >= PBX_PEER_PROFILE_PATH || path[0] != '/') {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        uint8_t c = (uint8_t)path[i];
        if (c < 0x20U || c == 0x7FU) {
            return false;
        }
    }
    for (size_t i = 0; i < len; i++) {
        if (path[i] != '/' || (len == 1U)) {
            continue;
        }
        size_t j = i + 1U;
        size_t k = j;
        while (k < len && path[k] != '/') {
            k++;
        }
        size_t c = k - j;
        if (c == 0U || (c == 1U && path[j] == '.') ||
            (c == 2U && path[j] == '.' && path[j + 1U] == '.')) {
            return false;
        }
    }
    return true;
}

const char *pbx_peer_profile_forbidden(const char *path,
                                       const char *const *forbidden,
                                       size_t nforbidden)
{
    size_t len = strlen(path);
    if (profile_within(path, len, "/proc") ||
        profile_within("/proc", 5U, path)) {
        return "a path at, beneath or above /proc (the job's own /proc/PID "
               "is in the system profile; no other process's ever is)";
    }
    for (size_t i = 0; i < nforbidden && i < PBX_PEER_PROFILE_FORBIDDEN; i++) {
        const char *f = forbidden[i];
        if (f != NULL && (profile_within(path, len, f) ||
                          profile_within(f, strlen(f), path))) {
            return "a path at, beneath or above the stack directory, the "
                   "FUSE mount or vfsd's root (no profile may open them to a "
                   "job: a brokered scope's files are asked for)";
        }
    }
    return NULL;
}

bool pbx_peer_profile_removed(const pbx_peer_profile *p, const char *path,
                              uint32_t after)
{
    size_t len = strlen(path);
    for (uint32_t i = 0; i < p->nremoved && i < PBX_PEER_PROFILE_ENTRIES; i++) {
        if (p->removed[i].line > after &&
            profile_within(path, len, p->removed[i].path)) {
            return true;
        }
    }
    return false;
}

uint64_t pbx_peer_profile_rights(uint8_t access, bool dir, uint64_t handled)
{
    uint64_t r = PBX_PEER_LL_FS_READ_FILE | PROFILE_LL_READ_DIR;
    if (access == PBX_PEER_PROFILE_RX) {
        r |= PBX_PEER_LL_FS_EXECUTE;
    } else if (access == PBX_PEER_PROFILE_RW) {
        r |= PROFILE_LL_WRITE_FILE | PBX_PEER_LL_FS_TRUNCATE;
    }
    if (!dir) {
        r &= PROFILE_LL_FILE_RIGHTS;
    }
    return r & handled;
}

/* One line of a profile file, split: op '+' or '-' (0: blank or a
 * comment), access for '+', the path and its length. */
typedef struct profile_line {
    char op;
    uint8_t access;
    const char *path;
    size_t len;
} profile_line;

/* Whether c is a blank (space or tab). */
static bool profile_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Splits the line s[0..len) (no newline) into *out; a static sentence
 * when it is none of the four forms, else NULL. */
static const char *profile_split(const char *s, size_t len, profile_line *out)
{
    while (len > 0U && (profile_blank(s[len - 1U]) || s[len - 1U] == '\r')) {
        len--;
    }
    size_t i = 0;
    while (i < len && profile_blank(s[i])) {
        i++;
    }
    out->op = 0;
    out->access = 0U;
    if (i == len || s[i] == '#') {
        return NULL;
    }
    size_t skip = 0;
    if (len - i >= 3U && memcmp(s + i, "+rx", 3) == 0) {
        out->access = PBX_PEER_PROFILE_RX;
        skip = 3U;
    } else if (len - i >= 2U && memcmp(s + i, "+r", 2) == 0) {
        out->access = PBX_PEER_PROFILE_R;
        skip = 2U;
    } else if (s[i] == '-') {
        skip = 1U;
    } else {
        return "not a line of the format (want '+r PATH', '+rx PATH', "
               "'-PATH', a '#' comment or a blank line)";
    }
    size_t j = i + skip;
    if (s[i] == '+' && (j == len || !profile_blank(s[j]))) {
        return "'+r' and '+rx' take a blank, then an absolute PATH";
    }
    while (j < len && profile_blank(s[j])) {
        j++;
    }
    out->op = s[i];
    out->path = s + j;
    out->len = len - j;
    return profile_plain(out->path, out->len)
               ? NULL
               : "PATH must be absolute and plain (no '//', '.', '..', "
                 "trailing '/' or control byte) and shorter than 256 bytes";
}

/* Adds (or, for a path already there, changes) the entry of line l. */
static const char *profile_add(pbx_peer_profile *p, const profile_line *l,
                               uint32_t line, const char *const *forbidden,
                               size_t nforbidden)
{
    char path[PBX_PEER_PROFILE_PATH] = {0};
    memcpy(path, l->path, l->len);
    path[l->len] = '\0';
    const char *no = pbx_peer_profile_forbidden(path, forbidden, nforbidden);
    if (no != NULL) {
        return no;
    }
    uint32_t at = p->n;
    for (uint32_t i = 0; i < p->n && i < PBX_PEER_PROFILE_ENTRIES; i++) {
        if (strcmp(p->entries[i].path, path) == 0) {
            at = i;
        }
    }
    if (at >= PBX_PEER_PROFILE_ENTRIES) {
        return "more entries than a profile may hold (48)";
    }
    memcpy(p->entries[at].path, path, l->len + 1U);
    p->entries[at].access = l->access;
    p->entries[at].line = line;
    p->n = at == p->n ? p->n + 1U : p->n;
    return NULL;
}

/* Removes every entry at or beneath the path of line l and records the
 * removal. */
static const char *profile_remove(pbx_peer_profile *p, const profile_line *l,
                                  uint32_t line)
{
    if (p->nremoved >= PBX_PEER_PROFILE_ENTRIES) {
        return "more removals than a profile may hold (48)";
    }
    pbx_peer_profile_entry *r = &p->removed[p->nremoved++];
    memcpy(r->path, l->path, l->len);
    r->path[l->len] = '\0';
    r->line = line;
    uint32_t kept = 0;
    for (uint32_t i = 0; i < p->n && i < PBX_PEER_PROFILE_ENTRIES; i++) {
        const pbx_peer_profile_entry *e = &p->entries[i];
        if (!profile_within(e->path, strlen(e->path), r->path)) {
            p->entries[kept++] = *e;
        }
    }
    p->n = kept;
    if (profile_within("/proc/self", 10U, r->path)) {
        p->proc_self = false;
    }
    return NULL;
}

/* The last check: no removal lies strictly beneath an entry that
 * stays. Returns the sentence and sets *line, or NULL. */
static const char *profile_final(const pbx_peer_profile *p, uint32_t *line)
{
    for (uint32_t r = 0; r < p->nremoved && r < PBX_PEER_PROFILE_ENTRIES; r++) {
        const char *rp = p->removed[r].path;
        for (uint32_t i = 0; i < p->n && i < PBX_PEER_PROFILE_ENTRIES; i++) {
            const char *ep = p->entries[i].path;
            if (strcmp(rp, ep) != 0 && profile_within(rp, strlen(rp), ep)) {
                *line = p->removed[r].line;
                return "the removed PATH lies beneath a path the profile "
                       "still allows (Landlock only adds rights: remove "
                       "the allowed path, then add back what is wanted)";
            }
        }
    }
    return NULL;
}

pbx_err pbx_peer_profile_apply(pbx_peer_profile *p, const uint8_t *text,
                               size_t len, const char *const *forbidden,
                               size_t nforbidden, pbx_peer_profile_refusal *why)
{
    /* The profile is changed on a copy, so a refusal leaves *p as it
     * was (launchd is single-threaded; the copy is 25 KiB). */
    static pbx_peer_profile next;
    why->line = 0U;
    why->why = NULL;
    if (len > PBX_PEER_PROFILE_BYTES || (len > 0U && text == NULL) ||
        (len > 0U && memchr(text, 0, len) != NULL)) {
        why->why = "the profile is larger than 16384 bytes or holds a NUL "
                   "byte";
        return PBX_E_PEER_PROFILE;
    }
    next = *p;
    const char *s = (const char *)text;
    size_t off = 0;
    uint32_t line = 0;
    while (off < len && why->why == NULL) {
        const char *nl = memchr(s + off, '\n', len - off);
        size_t n = nl != NULL ? (size_t)(nl - (s + off)) : len - off;
        profile_line l = {0, 0U, NULL, 0U};
        line++;
        why->line = line;
        why->why = line > PBX_PEER_PROFILE_LINES
                       ? "more lines than a profile may have (512)"
                       : profile_split(s + off, n, &l);
        if (why->why == NULL && l.op == '+') {
            why->why = profile_add(&next, &l, line, forbidden, nforbidden);
        } else if (why->why == NULL && l.op == '-') {
            why->why = profile_remove(&next, &l, line);
        }
        off += n + 1U;
    }
    if (why->why == NULL) {
        why->why = profile_final(&next, &why->line);
    }
    if (why->why != NULL) {
        return PBX_E_PEER_PROFILE;
    }
    why->line = 0U;
    *p = next;
    return PBX_OK;
}
