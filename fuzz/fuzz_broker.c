/*
 * fuzz_broker.c: libFuzzer harness for the broker's judges of what a
 * sandboxed job's trapped open carries (peers/lib/pbx_peer_broker.c): the
 * path it names (pbx_peer_broker_join against a base,
 * pbx_peer_broker_place, pbx_peer_broker_fd_path,
 * pbx_peer_broker_proc_own) and its flags (pbx_peer_broker_flags).
 * peers/broker/broker_notify.c reads both from the job's memory and
 * registers.
 *
 * Input layout: byte 0 bit 0 says the file exists, bits 1-2 choose the
 * base a relative path is joined to, bit 3 makes the notifying thread
 * the process's main one; bytes 1-8 are the open flags (x86_64 values,
 * little-endian); the rest, up to a NUL, is the path.
 *
 * Checked against the harness's own reading of pbx_peer_broker.h: the
 * join is base "/" path (or the absolute path alone), or "" when it does
 * not fit; the place is MOUNT exactly for a path at, beneath or above the
 * FUSE mount, else SCOPE exactly beneath the scope (its rest the path
 * after the scope, without leading slashes), else SYSTEM exactly beneath
 * a profile path; a reopen through /proc is recognised only in its four
 * exact forms for this thread and process (trailing slashes aside), its
 * numbers written as the kernel reads them; an own-/proc rewrite is exactly
 * "/proc/self" and the same rest; the flags give an operation only as their
 * bits allow. Any difference aborts.
 */
#include "peers/lib/pbx_peer_broker.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FBR_PATH  4096U
#define FBR_TGID  1234U
#define FBR_TID   1240U
#define FBR_CREAT 0100U
#define FBR_EXCL  0200U
#define FBR_TRUNC 01000U
#define FBR_DIR   0200000U
#define FBR_OPATH 010000000U
#define FBR_TMP   020000000U

static const char *const bases[] = {"/", "/home/u/work", "/home/u/work/",
                                    "/tmp"};
static char g_path[FBR_PATH + 1U];
static char g_abs[FBR_PATH + 64U];
static char g_out[FBR_PATH + 64U];
static char g_want[FBR_PATH + 64U];
static pbx_peer_broker_places g_pl;

/* Aborts unless cond holds. */
static void fbr_check(bool cond)
{
    if (!cond) {
        abort();
    }
}

/* Whether path is prefix or lies beneath it (literally, on component
 * boundaries; "/" holds everything). */
static bool fbr_under(const char *path, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strcmp(prefix, "/") == 0) {
        return path[0] == '/';
    }
    return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Checks the join of path to base into g_abs; false when it overflowed. */
static bool fbr_join(const char *base)
{
    pbx_err e = pbx_peer_broker_join(base, g_path, g_abs, sizeof(g_abs));
    if (g_path[0] == '/') {
        (void)snprintf(g_want, sizeof(g_want), "%s", g_path);
    } else {
        size_t nb = strlen(base);
        (void)snprintf(g_want, sizeof(g_want), "%s%s%s", base,
                       base[nb - 1U] == '/' ? "" : "/", g_path);
    }
    if (e != PBX_OK) {
        fbr_check(e == PBX_E_BASE_OVERFLOW && g_abs[0] == '\0' &&
                  strlen(g_want) >= sizeof(g_abs));
        return false;
    }
    fbr_check(strcmp(g_abs, g_want) == 0);
    return true;
}

/* Checks where g_abs is placed. */
static void fbr_place(void)
{
    const char *rest = NULL;
    pbx_peer_broker_where w = pbx_peer_broker_place(&g_pl, g_abs, &rest);
    bool mount = fbr_under(g_abs, g_pl.mount) || fbr_under(g_pl.mount, g_abs);
    bool scope = !mount && fbr_under(g_abs, g_pl.scope);
    bool system = false;
    for (size_t i = 0; i < g_pl.nprofile; i++) {
        system = system || fbr_under(g_abs, g_pl.profile[i]);
    }
    if (mount) {
        fbr_check(w == PBX_PEER_BROKER_MOUNT && rest == NULL);
    } else if (scope) {
        const char *r = g_abs + strlen(g_pl.scope);
        while (*r == '/') {
            r++;
        }
        fbr_check(w == PBX_PEER_BROKER_SCOPE && rest == r);
    } else {
        fbr_check(rest == NULL && w == (system ? PBX_PEER_BROKER_SYSTEM
                                               : PBX_PEER_BROKER_OUTSIDE));
    }
}

/* Checks the reopen recognition of g_abs by thread tid of FBR_TGID. */
static void fbr_fd_path(uint32_t tid)
{
    uint32_t fd = UINT32_MAX;
    if (!pbx_peer_broker_fd_path(g_abs, FBR_TGID, tid, &fd)) {
        return;
    }
    char forms[4][96];
    (void)snprintf(forms[0], sizeof(forms[0]), "/proc/self/fd/%u", fd);
    (void)snprintf(forms[1], sizeof(forms[1]), "/proc/thread-self/fd/%u", fd);
    (void)snprintf(forms[2], sizeof(forms[2]), "/proc/%u/fd/%u", FBR_TGID, fd);
    (void)snprintf(forms[3], sizeof(forms[3]), "/proc/%u/task/%u/fd/%u",
                   FBR_TGID, tid, fd);
    /* Trailing slashes are taken (the kernel follows the link). */
    size_t n = strlen(g_abs);
    while (n > 1U && g_abs[n - 1U] == '/') {
        n--;
    }
    bool one = false;
    for (size_t i = 0; i < 4U; i++) {
        one =
            one || (strlen(forms[i]) == n && strncmp(g_abs, forms[i], n) == 0);
    }
    fbr_check(one);
}

/* Checks the own-/proc rewrite of g_abs. */
static void fbr_proc_own(void)
{
    char tg[32];
    memset(g_out, 0x7F, sizeof(g_out));
    bool ok = pbx_peer_broker_proc_own(g_abs, FBR_TGID, g_out, sizeof(g_out));
    (void)snprintf(tg, sizeof(tg), "/proc/%u", FBR_TGID);
    bool own = fbr_under(g_abs, tg);
    if (!ok) {
        fbr_check(!own && (unsigned char)g_out[0] == 0x7FU);
        return;
    }
    fbr_check(own);
    (void)snprintf(g_want, sizeof(g_want), "/proc/self%s", g_abs + strlen(tg));
    fbr_check(strcmp(g_out, g_want) == 0);
}

/* Checks what the flags ask of a file that exists or not. */
static void fbr_flags(uint64_t f, bool exists)
{
    uint8_t op = 0;
    int e = pbx_peer_broker_flags(f, exists, &op);
    if ((f & FBR_TMP) != 0U) {
        fbr_check(e == EOPNOTSUPP);
    } else if ((f & (FBR_OPATH | FBR_DIR)) != 0U) {
        fbr_check(e == EACCES);
    } else if ((f & 3U) == 3U) {
        fbr_check(e == EINVAL);
    } else if (!exists) {
        fbr_check((f & FBR_CREAT) != 0U ? e == 0 && op == 3U : e == ENOENT);
    } else if ((f & (FBR_CREAT | FBR_EXCL)) == (FBR_CREAT | FBR_EXCL)) {
        fbr_check(e == EEXIST);
    } else {
        bool write = (f & 3U) != 0U || (f & FBR_TRUNC) != 0U;
        fbr_check(e == 0 && op == (write ? 2U : 1U));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 9U) {
        return 0;
    }
    if (g_pl.scope == NULL) {
        pbx_peer_broker_default_profile(&g_pl);
        g_pl.scope = "/home/u/work";
        g_pl.mount = "/run/user/1000/pbx-fuse";
    }
    uint64_t flags = 0;
    for (size_t i = 0; i < 8U; i++) {
        flags |= (uint64_t)data[1U + i] << (8U * i);
    }
    fbr_flags(flags, (data[0] & 1U) != 0U);
    size_t n = size - 9U < FBR_PATH ? size - 9U : FBR_PATH;
    memcpy(g_path, data + 9, n);
    g_path[n] = '\0';
    if (!fbr_join(bases[(data[0] >> 1) & 3U]) || g_abs[0] != '/') {
        return 0;
    }
    fbr_place();
    fbr_fd_path((data[0] & 8U) != 0U ? FBR_TGID : FBR_TID);
    fbr_proc_own();
    return 0;
}
