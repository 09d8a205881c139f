/*
 * pbx_geometry.c: `pbx geometry make|show|check`, the operator's view of
 * PBX1 records (docs/PBX1.md).
 *
 * make writes a record from an embedded default geometry plus per-pool,
 * call-window and deadline overrides, with the type layouts this build was
 * compiled with and the page count those imply. show prints a record in words.
 * check validates a record exactly as powerboxd does at startup: parse, then
 * derive against the compiled layouts. Every failure is one line on stderr and
 * a nonzero exit; no input can crash the command.
 */
#include "bootstrap/pbx_bootstrap.h"
#include "core/pbx_core_inspect.h"
#include "core/pbx_core_layout.h"
#include "tools/pbx/pbx_tool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The default geometry `make` (and `pbx up`) starts from: small, valid and
 * page-sized, and sized so that 64 programs can each hold an exceptional
 * request and two more hold 8 each (80 requests in flight, each holding a
 * request, grant, policy, decision, resolution and notification record,
 * three transient slots and a selector chunk) while other programs' routine
 * requests still find every record they need (issue 20, item 4; run.py
 * prompt-fairness). Prompt records are taken only when a prompt is due;
 * 32 of them give each job a share of 4 (pbx_core_prompt_share). */
static const uint32_t pbx_geom_default_capacity[PBX_BOOTSTRAP_POOL_COUNT] = {
    [PBX_BOOTSTRAP_POOL_REQUESTS] = 128U,
    [PBX_BOOTSTRAP_POOL_SELECTOR_BYTES] = 32768U,
    [PBX_BOOTSTRAP_POOL_GRANTS] = 128U,
    [PBX_BOOTSTRAP_POOL_PROMPTS] = 32U,
    [PBX_BOOTSTRAP_POOL_POLICIES] = 128U,
    [PBX_BOOTSTRAP_POOL_DECISIONS] = 128U,
    [PBX_BOOTSTRAP_POOL_TRANSIENT_SLOTS] = 448U,
    [PBX_BOOTSTRAP_POOL_RESOLUTIONS] = 128U,
    [PBX_BOOTSTRAP_POOL_NOTIFICATIONS] = 128U,
    [PBX_BOOTSTRAP_POOL_CALLS] = 48U,
};

/* The default call window: 16 outstanding calls on each of the three call
 * routes, which the default calls pool (48) holds exactly; outstanding
 * PROMPTs (their own deadline class) take at most 16 of them, so 32 stay
 * for everyone else's calls. */
#define PBX_GEOM_DEFAULT_CALL_WINDOW 16U

/* The default deadlines in ms: 5 s for a peer call, 2 s for a resolution
 * through a caller's scope, 5 min for a person to answer a prompt, 30 s
 * for a request to be committed and 30 s of silence on a public
 * connection. */
static const uint32_t pbx_geom_default_time_ms[PBX_BOOTSTRAP_TIME_COUNT] = {
    [PBX_BOOTSTRAP_TIME_VFSD] = 5000U,     [PBX_BOOTSTRAP_TIME_TTYD] = 5000U,
    [PBX_BOOTSTRAP_TIME_PROCD] = 5000U,    [PBX_BOOTSTRAP_TIME_SCOPE] = 2000U,
    [PBX_BOOTSTRAP_TIME_PROMPT] = 300000U, [PBX_BOOTSTRAP_TIME_OPEN] = 30000U,
    [PBX_BOOTSTRAP_TIME_IDLE] = 30000U,
};

/* The default page size: the smallest PBX1 accepts, the x86_64 page. */
#define PBX_GEOM_DEFAULT_PAGE_SIZE 4096U

/* The one place the tool learns the layouts this build was compiled with,
 * so that `check` judges a record exactly as powerboxd would. */
static void pbx_geom_expected(pbx_bootstrap_type_layout *out)
{
    pbx_core_pool_layouts(out);
}

void pbx_tool_geometry_usage(FILE *fp)
{
    (void)fputs("  pbx geometry make [defaults] [--POOL N]... [--page-size N] "
                "[--window N]\n"
                "                    [--deadline-KIND-ms N]... -o FILE\n"
                "  pbx geometry show FILE\n"
                "  pbx geometry check FILE\n"
                "  POOL is one of:",
                fp);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        (void)fprintf(fp, " %s",
                      pbx_bootstrap_pool_name((pbx_bootstrap_pool)i));
    }
    (void)fputs("\n  KIND is one of:", fp);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; i++) {
        (void)fprintf(fp, " %s",
                      pbx_bootstrap_time_name((pbx_bootstrap_time)i));
    }
    (void)fputs("\n", fp);
}

/* Reports err for path in one line and returns the failure status. */
static int pbx_geom_fail(const char *path, pbx_err err)
{
    (void)fprintf(stderr, "pbx: geometry: %s: %s (%s)\n", path,
                  pbx_err_text(err), pbx_err_name(err));
    return PBX_TOOL_EXIT_FAIL;
}

/* Parses a decimal u32 with no sign, no spaces and no trailing bytes. */
static bool pbx_geom_parse_u32(const char *s, uint32_t *out)
{
    uint64_t v = 0U;
    size_t n = strlen(s);
    if (n == 0U || n > 10U) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        v = v * 10U + (uint64_t)(s[i] - '0');
    }
    if (v > UINT32_MAX) {
        return false;
    }
    *out = (uint32_t)v;
    return true;
}

/* Reads at most cap bytes of path into buf and stores the count; a file
 * longer than cap is reported as cap + 1 bytes so the length check fails.
 * Prints one line and returns false on any I/O failure. */
static bool pbx_geom_read(const char *path, uint8_t *buf, size_t cap,
                          size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        (void)fprintf(stderr, "pbx: geometry: %s: cannot open: %s\n", path,
                      strerror(errno));
        return false;
    }
    size_t got = 0U;
    uint8_t extra = 0U;
    /* Each read either makes progress, ends the file or fails; progress
     * is bounded by cap + 1 bytes, so the loop is bounded too. */
    while (got <= cap) {
        uint8_t *dst = got < cap ? buf + got : &extra;
        size_t want = got < cap ? cap - got : 1U;
        ssize_t r = read(fd, dst, want);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0) {
            (void)fprintf(stderr, "pbx: geometry: %s: cannot read: %s\n", path,
                          strerror(errno));
            (void)close(fd);
            return false;
        }
        if (r == 0) {
            break;
        }
        got += (size_t)r;
    }
    (void)close(fd);
    *len = got;
    return true;
}

/* Reads and parses path; prints one line and returns false on failure. */
static bool pbx_geom_load(const char *path, pbx_bootstrap_geometry *g)
{
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    size_t len = 0U;
    if (!pbx_geom_read(path, buf, sizeof(buf), &len)) {
        return false;
    }
    pbx_err err = pbx_bootstrap_parse(buf, len, g);
    if (err == PBX_E_BOOTSTRAP_LENGTH) {
        (void)fprintf(
            stderr, "pbx: geometry: %s: %s (%s): %s%zu bytes, want %u\n", path,
            pbx_err_text(err), pbx_err_name(err),
            len > sizeof(buf) ? "more than " : "",
            len > sizeof(buf) ? sizeof(buf) : len, PBX_BOOTSTRAP_RECORD_BYTES);
        return false;
    }
    if (err != PBX_OK) {
        (void)pbx_geom_fail(path, err);
        return false;
    }
    return true;
}

/* Writes len bytes to fd, retrying short writes and EINTR; bounded because
 * every iteration either fails or makes progress through len bytes. */
static bool pbx_geom_write_all(int fd, const uint8_t *buf, size_t len)
{
    size_t done = 0U;
    while (done < len) {
        ssize_t w = write(fd, buf + done, len - done);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        done += (size_t)w;
    }
    return true;
}

/* Writes the record to path through a temporary file and a rename, so a
 * reader never sees a half-written record. Prints one line on failure. */
static bool pbx_geom_write(const char *path, const uint8_t *buf, size_t len)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    if (n < 0 || (size_t)n >= sizeof(tmp)) {
        (void)fprintf(stderr, "pbx: geometry: %s: path too long\n", path);
        return false;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        (void)fprintf(stderr, "pbx: geometry: %s: cannot create: %s\n", tmp,
                      strerror(errno));
        return false;
    }
    bool ok = pbx_geom_write_all(fd, buf, len) && fsync(fd) == 0;
    int saved = errno;
    ok = close(fd) == 0 && ok;
    if (ok && rename(tmp, path) != 0) {
        saved = errno;
        ok = false;
    }
    if (!ok) {
        (void)fprintf(stderr, "pbx: geometry: %s: cannot write: %s\n", path,
                      strerror(saved != 0 ? saved : EIO));
        (void)unlink(tmp);
    }
    return ok;
}

/* Finds the deadline whose option is "--deadline-KIND-ms"; returns false
 * if none is. */
static bool pbx_geom_time_option(const char *arg, pbx_bootstrap_time *time)
{
    static const char prefix[] = "--deadline-";
    static const char suffix[] = "-ms";
    size_t n = strlen(arg);
    if (strncmp(arg, prefix, sizeof(prefix) - 1U) != 0 ||
        n < sizeof(prefix) - 1U + sizeof(suffix) - 1U ||
        strcmp(arg + n - (sizeof(suffix) - 1U), suffix) != 0) {
        return false;
    }
    const char *kind = arg + sizeof(prefix) - 1U;
    size_t kind_len = n - (sizeof(prefix) - 1U) - (sizeof(suffix) - 1U);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; i++) {
        const char *name = pbx_bootstrap_time_name((pbx_bootstrap_time)i);
        if (strlen(name) == kind_len && strncmp(kind, name, kind_len) == 0) {
            *time = (pbx_bootstrap_time)i;
            return true;
        }
    }
    return false;
}

/* Finds the geometry field an option that takes a number sets: a pool's
 * capacity ("--NAME"), the page size, the call window or a deadline.
 * Returns NULL for any other argument. */
static uint32_t *pbx_geom_value_option(const char *arg,
                                       pbx_bootstrap_geometry *g)
{
    if (strcmp(arg, "--page-size") == 0) {
        return &g->page_size_bytes;
    }
    if (strcmp(arg, "--window") == 0) {
        return &g->call_window;
    }
    pbx_bootstrap_time time = PBX_BOOTSTRAP_TIME_COUNT;
    if (pbx_geom_time_option(arg, &time)) {
        return &g->time_ms[time];
    }
    if (strncmp(arg, "--", 2) != 0) {
        return NULL;
    }
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        if (strcmp(arg + 2, pbx_bootstrap_pool_name((pbx_bootstrap_pool)i)) ==
            0) {
            return &g->capacity[i];
        }
    }
    return NULL;
}

/* Applies make's options to g and finds the output path. Prints one line
 * and returns false on a malformed command line. */
static bool pbx_geom_make_args(int argc, char **argv, pbx_bootstrap_geometry *g,
                               const char **out)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strcmp(arg, "defaults") == 0 || strcmp(arg, "--defaults") == 0) {
            continue;
        }
        uint32_t *field = pbx_geom_value_option(arg, g);
        if (field == NULL && strcmp(arg, "-o") != 0) {
            (void)fprintf(stderr, "pbx: geometry make: unknown argument '%s'\n",
                          arg);
            return false;
        }
        if (i + 1 >= argc) {
            (void)fprintf(stderr, "pbx: geometry make: %s needs a value\n",
                          arg);
            return false;
        }
        const char *val = argv[++i];
        if (field == NULL) {
            *out = val; /* the only value option without a field: -o */
            continue;
        }
        uint32_t v = 0U;
        if (!pbx_geom_parse_u32(val, &v)) {
            (void)fprintf(
                stderr,
                "pbx: geometry make: %s: '%s' is not a decimal number "
                "below 2^32\n",
                arg, val);
            return false;
        }
        *field = v;
    }
    if (*out == NULL) {
        (void)fputs("pbx: geometry make: missing -o FILE\n", stderr);
        return false;
    }
    return true;
}

/* Names the first pool whose capacity is zero or over its maximum, so the
 * operator learns which option to fix. Returns false after printing. */
static bool pbx_geom_make_capacities_ok(const pbx_bootstrap_geometry *g)
{
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        pbx_bootstrap_pool pool = (pbx_bootstrap_pool)i;
        uint32_t max = pbx_bootstrap_capacity_max(pool);
        if (g->capacity[i] == 0U) {
            (void)fprintf(stderr, "pbx: geometry make: --%s 0: %s\n",
                          pbx_bootstrap_pool_name(pool),
                          pbx_err_text(PBX_E_BOOTSTRAP_CAPACITY_ZERO));
            return false;
        }
        if (g->capacity[i] > max) {
            (void)fprintf(stderr, "pbx: geometry make: --%s %u: %s (%u)\n",
                          pbx_bootstrap_pool_name(pool), g->capacity[i],
                          pbx_err_text(PBX_E_BOOTSTRAP_CAPACITY_MAX), max);
            return false;
        }
    }
    return true;
}

/* Names the option to fix when the call window is out of range or does not
 * fit the calls pool, or a deadline is out of range. Returns false after
 * printing one line. */
static bool pbx_geom_make_calls_ok(const pbx_bootstrap_geometry *g)
{
    uint32_t calls = g->capacity[PBX_BOOTSTRAP_POOL_CALLS];
    if (g->call_window == 0U ||
        g->call_window > PBX_BOOTSTRAP_CALL_WINDOW_MAX) {
        (void)fprintf(stderr, "pbx: geometry make: --window %u: %s (1..%u)\n",
                      g->call_window, pbx_err_text(PBX_E_BOOTSTRAP_WINDOW),
                      PBX_BOOTSTRAP_CALL_WINDOW_MAX);
        return false;
    }
    if ((uint64_t)g->call_window * PBX_BOOTSTRAP_CALL_ROUTES > calls) {
        (void)fprintf(stderr,
                      "pbx: geometry make: --window %u: %s (--calls %u < "
                      "%u routes x %u)\n",
                      g->call_window,
                      pbx_err_text(PBX_E_BOOTSTRAP_WINDOW_CALLS), calls,
                      PBX_BOOTSTRAP_CALL_ROUTES, g->call_window);
        return false;
    }
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; i++) {
        if (g->time_ms[i] == 0U || g->time_ms[i] > PBX_BOOTSTRAP_TIME_MS_MAX) {
            (void)fprintf(stderr,
                          "pbx: geometry make: --deadline-%s-ms %u: %s "
                          "(1..%u)\n",
                          pbx_bootstrap_time_name((pbx_bootstrap_time)i),
                          g->time_ms[i], pbx_err_text(PBX_E_BOOTSTRAP_TIME),
                          PBX_BOOTSTRAP_TIME_MS_MAX);
            return false;
        }
    }
    return true;
}

void pbx_tool_geometry_defaults(pbx_bootstrap_geometry *g)
{
    memset(g, 0, sizeof(*g));
    g->version = PBX_BOOTSTRAP_VERSION;
    g->page_size_bytes = PBX_GEOM_DEFAULT_PAGE_SIZE;
    memcpy(g->capacity, pbx_geom_default_capacity, sizeof(g->capacity));
    g->call_window = PBX_GEOM_DEFAULT_CALL_WINDOW;
    memcpy(g->time_ms, pbx_geom_default_time_ms, sizeof(g->time_ms));
    pbx_geom_expected(g->layout);
}

/* The exit status powerboxd refuses a record with, per failing verdict of
 * the shared startup check (docs/HOST.md lists them). */
static unsigned pbx_geom_refusal_status(pbx_core_startup_verdict v)
{
    switch (v) {
    case PBX_CORE_STARTUP_LAYOUT:
        return 17U;
    case PBX_CORE_STARTUP_EXTENT:
        return 18U;
    case PBX_CORE_STARTUP_TRANSIENT:
        return 19U;
    case PBX_CORE_STARTUP_CORE:
        return 29U;
    default:
        return 16U;
    }
}

/* Reports, in one line, that powerboxd would refuse the record at path
 * (what, and its exit status); returns the failure status. */
static int pbx_geom_refused(const char *path,
                            const pbx_core_startup_result *res)
{
    (void)fprintf(stderr,
                  "pbx: geometry: %s: %s (%s): powerboxd would refuse it at "
                  "startup (exit status %u)\n",
                  path, pbx_err_text(res->err), pbx_err_name(res->err),
                  pbx_geom_refusal_status(res->verdict));
    return PBX_TOOL_EXIT_FAIL;
}

/* `pbx geometry make`: defaults, overrides, compiled layouts, derived page
 * count, encode, write. */
static int pbx_geom_make(int argc, char **argv)
{
    pbx_bootstrap_geometry g;
    pbx_tool_geometry_defaults(&g);
    const char *out = NULL;
    if (!pbx_geom_make_args(argc, argv, &g, &out)) {
        return PBX_TOOL_EXIT_USAGE;
    }
    if (!pbx_geom_make_capacities_ok(&g) || !pbx_geom_make_calls_ok(&g)) {
        return PBX_TOOL_EXIT_FAIL;
    }
    uint32_t pages = 0U;
    pbx_err err = pbx_bootstrap_pages_compute(&g, &pages);
    if (err != PBX_OK) {
        return pbx_geom_fail(out, err);
    }
    g.arena_page_count = pages;
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    err = pbx_bootstrap_encode(&g, buf, sizeof(buf));
    if (err != PBX_OK) {
        return pbx_geom_fail(out, err);
    }
    /* Never write a record powerboxd could never run with. */
    static pbx_core_startup_result res;
    if (pbx_core_startup_check(buf, sizeof(buf), &res) != PBX_CORE_STARTUP_OK) {
        return pbx_geom_refused(out, &res);
    }
    if (!pbx_geom_write(out, buf, sizeof(buf))) {
        return PBX_TOOL_EXIT_FAIL;
    }
    printf("%s: wrote PBX1 record (%u pages of %u bytes)\n", out, pages,
           g.page_size_bytes);
    return PBX_TOOL_EXIT_OK;
}

/* Prints the pool table of g, with offsets laid out from g's own type
 * layouts and its derived page count (so a record built for another build
 * can still be inspected). */
static void pbx_geom_show_pools(const pbx_bootstrap_geometry *g)
{
    pbx_bootstrap_geometry own = *g;
    uint32_t pages = 0U;
    pbx_bootstrap_layout l;
    bool laid_out = pbx_bootstrap_pages_compute(&own, &pages) == PBX_OK;
    own.arena_page_count = pages;
    laid_out =
        laid_out && pbx_bootstrap_layout_derive(&own, own.layout, &l) == PBX_OK;
    printf("%-16s %10s %8s %6s %12s %12s\n", "pool", "capacity", "record",
           "align", "offset", "bytes");
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_POOL_COUNT; i++) {
        printf("%-16s %10u %8u %6u",
               pbx_bootstrap_pool_name((pbx_bootstrap_pool)i), g->capacity[i],
               g->layout[i].record_size_bytes, g->layout[i].record_align_bytes);
        if (laid_out) {
            printf(" %12zu %12zu\n", l.pools[i].offset_bytes,
                   l.pools[i].size_bytes);
        } else {
            printf(" %12s %12s\n", "-", "-");
        }
    }
    if (laid_out) {
        printf("pools span       %zu bytes, %zu derived pages\n", l.used_bytes,
               l.page_count);
    }
}

/* `pbx geometry show FILE`: everything the record says, then the verdict
 * against this build (a failing verdict also fails the command). */
static int pbx_geom_show(const char *path)
{
    pbx_bootstrap_geometry g;
    if (!pbx_geom_load(path, &g)) {
        return PBX_TOOL_EXIT_FAIL;
    }
    printf("PBX1 record      %s\n", path);
    printf("version          %u\n", (unsigned)g.version);
    printf("page size        %u bytes\n", g.page_size_bytes);
    printf("arena pages      %u (%llu bytes)\n", g.arena_page_count,
           (unsigned long long)g.arena_page_count * g.page_size_bytes);
    printf("digest (SHA-256) ");
    for (size_t i = 0; i < sizeof(g.digest); i++) {
        printf("%02x", g.digest[i]);
    }
    printf("\n");
    pbx_geom_show_pools(&g);
    printf("call window      %u per route, %u routes, %u calls pooled\n",
           g.call_window, PBX_BOOTSTRAP_CALL_ROUTES,
           g.capacity[PBX_BOOTSTRAP_POOL_CALLS]);
    printf("prompt share     %u prompt records per job (prompts / %u, at "
           "least 1)\n",
           pbx_core_prompt_share(g.capacity[PBX_BOOTSTRAP_POOL_PROMPTS]),
           PBX_CORE_PROMPT_SHARE_DIVISOR);
    for (unsigned i = 0; i < (unsigned)PBX_BOOTSTRAP_TIME_COUNT; i++) {
        printf("deadline %-7s %u ms\n",
               pbx_bootstrap_time_name((pbx_bootstrap_time)i), g.time_ms[i]);
    }
    pbx_bootstrap_type_layout expected[PBX_BOOTSTRAP_POOL_COUNT];
    pbx_geom_expected(expected);
    pbx_bootstrap_layout l;
    pbx_err err = pbx_bootstrap_layout_derive(&g, expected, &l);
    printf("this build       %s\n", err == PBX_OK ? "matches" : "MISMATCH");
    (void)fflush(stdout);
    return err == PBX_OK ? PBX_TOOL_EXIT_OK : pbx_geom_fail(path, err);
}

/* `pbx geometry check FILE`: the very startup check powerboxd runs on the
 * record (pbx_core_startup_check): "ok" exactly when powerboxd accepts
 * it. */
static int pbx_geom_check(const char *path)
{
    pbx_bootstrap_geometry g;
    static pbx_core_startup_result res;
    uint8_t buf[PBX_BOOTSTRAP_RECORD_BYTES];
    size_t len = 0U;
    /* pbx_geom_load names a short or long file and a record that does not
     * parse; the shared check below judges the very same bytes. */
    if (!pbx_geom_load(path, &g) ||
        !pbx_geom_read(path, buf, sizeof(buf), &len)) {
        return PBX_TOOL_EXIT_FAIL;
    }
    if (pbx_core_startup_check(buf, len, &res) != PBX_CORE_STARTUP_OK) {
        return pbx_geom_refused(path, &res);
    }
    printf("%s: ok: PBX1 version %u, %zu pages of %zu bytes\n", path,
           (unsigned)res.geo.version, res.layout.page_count,
           res.layout.page_size_bytes);
    return PBX_TOOL_EXIT_OK;
}

int pbx_tool_geometry(int argc, char **argv)
{
    const char *sub = argc >= 2 ? argv[1] : "";
    if (strcmp(sub, "make") == 0) {
        return pbx_geom_make(argc - 1, argv + 1);
    }
    if ((strcmp(sub, "show") == 0 || strcmp(sub, "check") == 0) && argc == 3) {
        return sub[0] == 's' ? pbx_geom_show(argv[2]) : pbx_geom_check(argv[2]);
    }
    /* One line naming what is wrong, as every pbx command does. */
    if (argc < 2) {
        return pbx_tool_usage_error("geometry", "missing subcommand", NULL);
    }
    if (strcmp(sub, "show") != 0 && strcmp(sub, "check") != 0) {
        return pbx_tool_usage_error("geometry", "unknown subcommand", sub);
    }
    return pbx_tool_usage_error(
        "geometry", argc < 3 ? "missing FILE" : "unexpected argument",
        argc < 3 ? NULL : argv[3]);
}
