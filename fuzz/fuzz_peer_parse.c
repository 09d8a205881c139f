/*
 * fuzz_peer_parse.c: libFuzzer harness for the shared text parsers the
 * peers and pbx run on bytes from outside: the numbers and "A:B" pairs of
 * every `--x N` option and of the rows and lines they read
 * (pbx_peer_parse_u64, pbx_peer_parse_pair, peers/lib/pbx_peer.c), the
 * name tables of operations, classes and the rest (pbx_peer_name_parse,
 * _name_of), the query sockets' admission options (pbx_peer_admit_option)
 * and the /proc/PID/stat text whose comm the connecting process names
 * itself, which the query sockets' admission walks
 * (pbx_peer_origin_stat_ppid, peers/common/pbx_peer_origin.c).
 *
 * Input layout: byte 0 chooses the mode (modulo 6), byte 1 a bound, the
 * rest (up to its first NUL) is the text:
 * - 0: a number under a bound (byte 1's low 5 bits pick one of the 16
 *   bounds the peers use, or above 15 the next 8 bytes give one), against
 *   the harness's own rule (digits compared as strings, never as
 *   arithmetic);
 * - 1: a pair under two such bounds (byte 1's top 3 bits pick the second
 *   among the first 8);
 * - 2: a name of each table, and byte 1..4 as a value named back;
 * - 3: an admission option and its value;
 * - 4: any stat text;
 * - 5: a stat line as the kernel writes it, with the input as the comm
 *   (up to 15 bytes), the state and the parent: the parent must come back.
 * Any difference aborts; a refused parse must leave its outputs alone.
 */
#include "peers/common/pbx_peer_origin.h"
#include "peers/lib/pbx_peer.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Aborts unless cond holds. */
static void fp_check(bool cond)
{
    if (!cond) {
        abort();
    }
}

/* A value a refused parse must leave in its outputs. */
#define FP_UNTOUCHED 0x5A5A5A5A5A5A5A5AULL

/* The bounds the callers pass (peers/, tools/pbx: ids, generations,
 * pids, descriptors, counts, milliseconds), and the edges around them. */
static const uint64_t fp_bounds[] = {
    UINT64_MAX,
    UINT32_MAX,
    INT32_MAX,
    INT_MAX,
    65535U,
    10000000U,
    3600000U,
    86400000U,
    0U,
    1U,
    9U,
    10U,
    99U,
    100U,
    UINT64_MAX - 1U,
    UINT64_MAX / 10U,
};

/* The harness's own number rule (pbx_peer.h): 1 to 21 characters, all
 * digits, whose value is at most max. The code refuses a string of more
 * than 21 characters even when leading zeros keep its value small (its
 * loop reads at most 21); the header does not say so, and the rule here
 * follows the code. Compared as decimal strings, not by arithmetic. */
static bool fp_ref_u64(const char *s, uint64_t max, uint64_t *out)
{
    size_t n = strlen(s);
    if (n == 0U || n > 21U || strspn(s, "0123456789") != n) {
        return false;
    }
    const char *d = s + strspn(s, "0");
    char m[24];
    (void)snprintf(m, sizeof(m), "%llu", (unsigned long long)max);
    size_t dn = strlen(d);
    if (dn > strlen(m) || (dn == strlen(m) && strcmp(d, m) > 0)) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < dn; i++) {
        v = v * 10U + (uint64_t)(d[i] - '0');
    }
    *out = v;
    return true;
}

/* The harness's own pair rule: the first ':' or '.' splits two numbers,
 * each under the number rule. */
static bool fp_ref_pair(const char *s, uint64_t ma, uint64_t mb, uint64_t *a,
                        uint64_t *b)
{
    size_t i = strcspn(s, ":.");
    char first[32];
    if (s[i] == '\0' || i >= sizeof(first)) {
        return false;
    }
    memcpy(first, s, i);
    first[i] = '\0';
    return fp_ref_u64(first, ma, a) && fp_ref_u64(s + i + 1, mb, b);
}

/* The bound byte b picks: one of fp_bounds, or the next 8 bytes of *d. */
static uint64_t fp_bound(uint8_t b, const uint8_t **d, size_t *n)
{
    size_t count = sizeof(fp_bounds) / sizeof(fp_bounds[0]);
    if (b < count) {
        return fp_bounds[b];
    }
    uint64_t v = 0;
    for (size_t i = 0; i < 8U && *n != 0U; i++) {
        v |= (uint64_t)(*d)[0] << (8U * i);
        (*d)++;
        (*n)--;
    }
    return v;
}

static char text[4096];

/* Copies d[0..n) up to its first NUL into text. */
static void fp_text(const uint8_t *d, size_t n)
{
    n = n < sizeof(text) - 1U ? n : sizeof(text) - 1U;
    memcpy(text, d, n);
    text[n] = '\0';
}

/* Modes 0 and 1: a number or a pair against the harness's rule. */
static void fp_numbers(bool pair, uint8_t b, const uint8_t *d, size_t n)
{
    uint64_t ma = fp_bound(b & 0x1FU, &d, &n);
    uint64_t mb = fp_bounds[b >> 5];
    fp_text(d, n);
    uint64_t a = FP_UNTOUCHED;
    uint64_t bb = FP_UNTOUCHED;
    uint64_t ra = 0;
    uint64_t rb = 0;
    bool ok = pair ? pbx_peer_parse_pair(text, ma, mb, &a, &bb)
                   : pbx_peer_parse_u64(text, ma, &a);
    bool want =
        pair ? fp_ref_pair(text, ma, mb, &ra, &rb) : fp_ref_u64(text, ma, &ra);
    fp_check(ok == want);
    if (!ok) {
        fp_check(a == FP_UNTOUCHED && bb == FP_UNTOUCHED);
        return;
    }
    fp_check(a == ra && a <= ma && (!pair || (bb == rb && bb <= mb)));
    fp_check(pair || bb == FP_UNTOUCHED);
}

/* Mode 2: every table names back what it parses, and parses back what it
 * names. */
static void fp_names(const uint8_t *d, size_t n)
{
    uint32_t value = 0;
    for (size_t i = 0; i < 4U && i < n; i++) {
        value |= (uint32_t)d[i] << (8U * i);
    }
    value = (value & 0x80000000U) != 0U ? value : value % 300U;
    fp_text(d, n);
    for (int k = PBX_PEER_NAMES_OPERATION; k <= PBX_PEER_NAMES_RESULT; k++) {
        uint32_t v = 0xA5A5A5A5U;
        if (pbx_peer_name_parse((pbx_peer_name_kind)k, text, &v)) {
            fp_check(strcmp(pbx_peer_name_of((pbx_peer_name_kind)k, v), text) ==
                     0);
        } else {
            fp_check(v == 0xA5A5A5A5U);
        }
        const char *name = pbx_peer_name_of((pbx_peer_name_kind)k, value);
        fp_check(name != NULL);
        uint32_t back = 0;
        fp_check(
            strcmp(name, "?") == 0 ||
            (pbx_peer_name_parse((pbx_peer_name_kind)k, name, &back) &&
             strcmp(pbx_peer_name_of((pbx_peer_name_kind)k, back), name) == 0));
    }
}

/* Mode 3: --jobs-below (a pid above 1) and --max-per-pid (1 to the
 * bound); any other key is not an admission option. */
static void fp_admit(uint8_t b, const uint8_t *d, size_t n)
{
    static const char *const keys[] = {"--jobs-below", "--max-per-pid",
                                       "--jobs", "--max-per-pid="};
    const char *k = keys[b & 3U];
    uint32_t per_pid_max = (uint32_t)(b >> 2);
    fp_text(d, n);
    pbx_peer_admit a = {.jobs_below = 77, .per_pid = 3};
    int rc = pbx_peer_admit_option(&a, k, text, per_pid_max);
    uint64_t v = 0;
    bool below = strcmp(k, "--jobs-below") == 0;
    bool per = strcmp(k, "--max-per-pid") == 0;
    bool good = below ? fp_ref_u64(text, INT32_MAX, &v) && v > 1U
                      : fp_ref_u64(text, per_pid_max, &v) && v != 0U;
    int want = !below && !per ? 0 : good ? 1 : -1;
    fp_check(rc == want);
    fp_check(rc == 1 ? (below ? a.jobs_below == (pid_t)v && a.per_pid == 3U
                              : a.per_pid == v && a.jobs_below == 77)
                     : a.jobs_below == 77 && a.per_pid == 3U);
}

/* The harness's reading of a stat text: the last ')' then " S " (S any
 * byte), then the parent as strtol(3) reads it (blanks, a sign, digits)
 * followed by a blank, not negative. Returns -1 when refused, -2 when the
 * parent is beyond INT32_MAX (the kernel never writes one; not judged). */
static long fp_ref_ppid(const char *s)
{
    const char *end = strrchr(s, ')');
    if (end == NULL || end[1] != ' ' || end[2] == '\0' || end[3] != ' ') {
        return -1;
    }
    const char *p = end + 4;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r')) {
        p++;
    }
    bool neg = *p == '-';
    p += *p == '-' || *p == '+' ? 1 : 0;
    size_t digits = strspn(p, "0123456789");
    if (digits == 0U || p[digits] != ' ') {
        return -1;
    }
    long v = 0;
    for (size_t i = 0; i < digits; i++) {
        if (v > INT32_MAX) {
            return -2;
        }
        v = v * 10 + (p[i] - '0');
    }
    if (v > INT32_MAX) {
        return -2;
    }
    return neg && v != 0 ? -1 : v;
}

/* Mode 4: any stat text. */
static void fp_stat_any(const uint8_t *d, size_t n)
{
    fp_text(d, n);
    long want = fp_ref_ppid(text);
    pid_t got = pbx_peer_origin_stat_ppid(text);
    fp_check(want == -2 || got == (pid_t)want);
}

/* Mode 5: the kernel's line for a process that named itself with the
 * input (comm: up to 15 bytes, NUL excluded), in state b, whose parent is
 * the next three bytes' value (0 .. 2^22, the kernel's pid range). */
static void fp_stat_kernel(uint8_t b, const uint8_t *d, size_t n)
{
    static const char states[] = "RSDZTtXxKWPI";
    uint32_t ppid = 0;
    for (size_t i = 0; i < 3U && n != 0U; i++, n--) {
        ppid |= (uint32_t)*d++ << (8U * i);
    }
    ppid %= 4194305U;
    char comm[16];
    size_t c = 0;
    for (; c < 15U && c < n && d[c] != 0U; c++) {
        comm[c] = (char)d[c];
    }
    comm[c] = '\0';
    (void)snprintf(text, sizeof(text),
                   "%u (%s) %c %u %u %u 0 -1 4194560 110 0 0 0 0 0 0 0 20 0 "
                   "1 0 12345 1000 100 18446744073709551615 1 1 0 0 0 0 0 "
                   "0 0 0 0 0 0 17 1 0 0 0 0 0\n",
                   (unsigned)(ppid + 1U), comm, states[b % 12U], (unsigned)ppid,
                   (unsigned)ppid, (unsigned)ppid);
    fp_check(pbx_peer_origin_stat_ppid(text) == (pid_t)ppid);
    fp_check(fp_ref_ppid(text) == (long)ppid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2U) {
        return 0;
    }
    uint8_t b = data[1];
    const uint8_t *d = data + 2;
    size_t n = size - 2U;
    switch (data[0] % 6U) {
    case 0:
        fp_numbers(false, b, d, n);
        break;
    case 1:
        fp_numbers(true, b, d, n);
        break;
    case 2:
        fp_names(d, n);
        break;
    case 3:
        fp_admit(b, d, n);
        break;
    case 4:
        fp_stat_any(d, n);
        break;
    default:
        fp_stat_kernel(b, d, n);
        break;
    }
    return 0;
}
