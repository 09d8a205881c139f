/*
 * fuzz_profile.c: libFuzzer harness for the sandbox profile files a
 * LAUNCH may name (peers/lib/pbx_peer_profile.c, pbx_peer_profile_apply):
 * text launchd, procd and the broker read on a job's behalf and apply
 * after the system profile.
 *
 * Input layout: byte 0 says how many of the forbidden directories (a
 * stack directory, a FUSE mount) the caller passes (0 to 2, bits 0-1);
 * the rest is the profile file's text.
 *
 * A refused text leaves the profile it was applied to unchanged and says
 * why. An accepted one leaves a profile within its bounds whose every
 * entry is an absolute path written plainly, outside every forbidden
 * directory and /proc (not at, beneath or above one, judged here
 * independently), named once, with read-write access on the system's
 * devices only, not undone by a later removal, and no removal lies
 * beneath an entry that stays. Any difference aborts. The format has no writer,
 * so there is no re-encoding to compare.
 */
#include "peers/lib/pbx_peer_profile.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const forbidden[] = {"/home/u/.pbx/stack",
                                        "/run/user/1000/pbx-fuse"};

static pbx_peer_profile g_sys;
static pbx_peer_profile g_p;

/* Aborts unless cond holds. */
static void fpr_check(bool cond)
{
    if (!cond) {
        abort();
    }
}

/* Whether path (NUL-terminated within PBX_PEER_PROFILE_PATH) is absolute
 * and written plainly: no "//", "." or ".." component, no trailing '/'
 * but "/" itself, no control byte. */
static bool fpr_plain(const char *path)
{
    size_t len = strnlen(path, PBX_PEER_PROFILE_PATH);
    if (len == 0U || len == PBX_PEER_PROFILE_PATH || path[0] != '/') {
        return false;
    }
    if (len > 1U && path[len - 1U] == '/') {
        return false;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)path[i];
        if (c < 0x20U || c == 0x7FU) {
            return false;
        }
        if (c == '/' && i + 1U < len) {
            const char *s = path + i + 1;
            size_t rest = len - i - 1U;
            if (s[0] == '/' || (s[0] == '.' && (rest == 1U || s[1] == '/')) ||
                (rest >= 2U && s[0] == '.' && s[1] == '.' &&
                 (rest == 2U || s[2] == '/'))) {
                return false;
            }
        }
    }
    return true;
}

/* Whether path a is b or lies beneath it, component-wise (written here
 * again, not taken from the module under test). */
static bool fpr_within(const char *a, const char *b)
{
    size_t blen = strlen(b);
    if (strcmp(b, "/") == 0) {
        return true;
    }
    return strncmp(a, b, blen) == 0 && (a[blen] == '\0' || a[blen] == '/');
}

/* Whether path is at, beneath or above /proc or one of the first nf
 * forbidden directories. */
static bool fpr_forbidden(const char *path, size_t nf)
{
    if (fpr_within(path, "/proc") || fpr_within("/proc", path)) {
        return true;
    }
    for (size_t i = 0; i < nf; i++) {
        if (fpr_within(path, forbidden[i]) || fpr_within(forbidden[i], path)) {
            return true;
        }
    }
    return false;
}

/* Whether entries a[0..n) and b[0..n) are the same, field by field. */
static bool fpr_entries_same(const pbx_peer_profile_entry *a,
                             const pbx_peer_profile_entry *b, uint32_t n)
{
    for (uint32_t i = 0; i < n && i < PBX_PEER_PROFILE_ENTRIES; i++) {
        if (memcmp(a[i].path, b[i].path, sizeof(a[i].path)) != 0 ||
            a[i].access != b[i].access || a[i].line != b[i].line) {
            return false;
        }
    }
    return true;
}

/* Whether profiles a and b are the same, field by field. */
static bool fpr_same(const pbx_peer_profile *a, const pbx_peer_profile *b)
{
    return a->n == b->n && a->nremoved == b->nremoved &&
           a->proc_self == b->proc_self &&
           fpr_entries_same(a->entries, b->entries, a->n) &&
           fpr_entries_same(a->removed, b->removed, a->nremoved);
}

/* Checks one entry of an accepted profile. */
static void fpr_entry(const pbx_peer_profile_entry *e, size_t nf)
{
    fpr_check(fpr_plain(e->path));
    fpr_check(e->access == (uint8_t)PBX_PEER_PROFILE_R ||
              e->access == (uint8_t)PBX_PEER_PROFILE_RX ||
              (e->access == (uint8_t)PBX_PEER_PROFILE_RW && e->line == 0U));
    fpr_check(e->line == 0U ||
              (!fpr_forbidden(e->path, nf) &&
               pbx_peer_profile_forbidden(e->path, forbidden, nf) == NULL));
    fpr_check(!pbx_peer_profile_removed(&g_p, e->path, e->line));
}

/* Checks an accepted profile. */
static void fpr_accepted(size_t nf)
{
    fpr_check(g_p.n <= PBX_PEER_PROFILE_ENTRIES &&
              g_p.nremoved <= PBX_PEER_PROFILE_ENTRIES);
    for (uint32_t i = 0; i < g_p.n; i++) {
        fpr_entry(&g_p.entries[i], nf);
        for (uint32_t j = i + 1U; j < g_p.n; j++) {
            fpr_check(strncmp(g_p.entries[i].path, g_p.entries[j].path,
                              PBX_PEER_PROFILE_PATH) != 0);
        }
    }
    /* No removal lies strictly beneath an entry that stays (Landlock
     * could not take that part back). */
    for (uint32_t i = 0; i < g_p.nremoved; i++) {
        const char *r = g_p.removed[i].path;
        fpr_check(fpr_plain(r) && g_p.removed[i].line != 0U);
        for (uint32_t j = 0; j < g_p.n; j++) {
            const char *e = g_p.entries[j].path;
            fpr_check(strcmp(r, e) == 0 || !fpr_within(r, e));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1U) {
        return 0;
    }
    size_t nf = data[0] & 3U;
    if (nf > 2U) {
        nf = 2U;
    }
    const uint8_t *text = data + 1;
    size_t len = size - 1U;
    pbx_peer_profile_system(&g_sys);
    memcpy(&g_p, &g_sys, sizeof(g_p));
    pbx_peer_profile_refusal why = {0U, NULL};
    pbx_err e = pbx_peer_profile_apply(&g_p, text, len, forbidden, nf, &why);
    if (e != PBX_OK) {
        size_t lines = 1U;
        for (size_t i = 0; i < len; i++) {
            lines += text[i] == '\n' ? 1U : 0U;
        }
        fpr_check(e == PBX_E_PEER_PROFILE && why.why != NULL &&
                  why.line <= lines && fpr_same(&g_p, &g_sys));
        return 0;
    }
    fpr_check(memchr(text, 0, len) == NULL);
    fpr_accepted(nf);
    return 0;
}
