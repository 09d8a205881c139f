/*
 * pbx_grants.c: `pbx grants` (the live grants, from ttyd's query socket)
 * and `pbx cancel N-I.G` (the user ends one live grant, through launchd's
 * control socket: USER_CANCEL, peers/lib/pbx_peer_admin.h). Ids are
 * spelled N-I.G, N the live powerboxd's incarnation (pbx_ids.h). The text
 * work is in peers/lib/pbx_peer_grants.c; this file does the I/O. `pbx
 * log` is in pbx_log.c.
 */
#include "tools/pbx/pbx_tool.h"

#include "peers/common/pbx_peer_io.h"
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_admin.h"
#include "peers/lib/pbx_peer_grants.h"
#include "tools/pbx/pbx_ids.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How long a query socket or launchd may take to answer. */
#define GRANTS_WAIT_MS 15000

/* The options every command of this file shares. */
typedef struct grants_opts {
    const char *path; /* an explicit socket or log path, or NULL */
    const char *log;  /* grants' --log PATH, or NULL */
    bool kv;          /* --format kv */
    const char *id;   /* cancel's operand */
} grants_opts;

/* Parses argv (argv[0] the command word): --dir DIR, path_opt PATH,
 * --format table|kv, and with want_id one operand. Returns 0 or the
 * usage error's exit status. */
static int grants_args(int argc, char **argv, const char *path_opt,
                       bool want_id, grants_opts *o)
{
    memset(o, 0, sizeof(*o));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--dir") == 0 && has_value) {
            pbx_tool_dir_set(argv[++i]);
        } else if (path_opt != NULL && strcmp(a, path_opt) == 0 && has_value) {
            o->path = argv[++i];
        } else if (strcmp(argv[0], "grants") == 0 && strcmp(a, "--log") == 0 &&
                   has_value) {
            o->log = argv[++i];
        } else if (strcmp(a, "--format") == 0 && has_value && !want_id) {
            const char *f = argv[++i];
            if (strcmp(f, "kv") != 0 && strcmp(f, "table") != 0) {
                return pbx_tool_usage_error(argv[0], "unknown format", f);
            }
            o->kv = strcmp(f, "kv") == 0;
        } else if (want_id && o->id == NULL && a[0] != '-') {
            o->id = a;
        } else {
            /* Only an option this command takes can lack its value. */
            bool known =
                strcmp(a, "--dir") == 0 ||
                (path_opt != NULL && strcmp(a, path_opt) == 0) ||
                (strcmp(argv[0], "grants") == 0 && strcmp(a, "--log") == 0) ||
                (!want_id && strcmp(a, "--format") == 0);
            return pbx_tool_usage_error(argv[0],
                                        a[0] != '-' ? "unexpected argument"
                                        : known     ? "option needs a value"
                                                    : "unknown option",
                                        a);
        }
    }
    if (want_id && o->id == NULL) {
        return pbx_tool_usage_error(argv[0], "missing grant ID", NULL);
    }
    return 0;
}

/* Writes o->path, or DIR/name, into out. Returns 0 or an exit status. */
static int grants_path(const grants_opts *o, const char *name, char *out,
                       size_t cap)
{
    if (o->path != NULL) {
        size_t n = strlen(o->path);
        if (n >= cap) {
            (void)fprintf(stderr, "pbx: path too long '%s'\n", o->path);
            return PBX_TOOL_EXIT_FAIL;
        }
        memcpy(out, o->path, n + 1U);
        return 0;
    }
    return pbx_tool_dir_path(name, out, cap);
}

/* Formats ms since the Unix epoch as RFC 3339 UTC into out. */
static void grants_time(uint64_t ms, char *out, size_t cap)
{
    time_t s = (time_t)(ms / 1000U);
    struct tm tm;
    if (gmtime_r(&s, &tm) == NULL ||
        strftime(out, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0U) {
        (void)snprintf(out, cap, "%llu", (unsigned long long)ms);
    }
}

/* Prints one parsed row r, whose exact object is o, as a table line or
 * key=value line; its grant and request ids as inc-I.G, the spelling of
 * powerboxd's log and of pbx cancel (ttyd knows only I.G: every row it
 * lists came from the powerboxd attached now, incarnation inc). */
static void grants_print_row(const pbx_peer_grants_row *r,
                             const pbx_peer_grants_object *o, bool kv,
                             uint32_t inc)
{
    char since[32];
    char grant[40];
    char request[40];
    (void)snprintf(grant, sizeof(grant), "%u-%s", (unsigned)inc, r->grant);
    (void)snprintf(request, sizeof(request), "%u-%s", (unsigned)inc,
                   r->request);
    if (strcmp(r->request, "-") == 0) {
        (void)snprintf(request, sizeof(request), "-");
    }
    static char what[PBX_PEER_TTY_ROW_BYTES_MAX];
    grants_time(r->since_ms, since, sizeof(since));
    const char *from = pbx_peer_grants_object_text(r, o, what, sizeof(what));
    bool exact = from != NULL && strcmp(from, "digest") != 0;
    if (kv) {
        (void)printf("grant=%s program=%s job=%s:%s op=%s class=%s "
                     "object=%s selector=%s selector-from=%s digest=%s "
                     "label=%s lifetime=%s since=%s request=%s slot=%s\n",
                     grant, r->program, r->job, r->job_gen, r->op, r->cls,
                     r->object, exact ? what : "-", exact ? from : "-",
                     r->digest, r->label, r->lifetime, since, request, r->slot);
        return;
    }
    /* Never the label in the object's place: without an exact selector
     * the digest is shown, and said to be one. */
    char job[48];
    (void)snprintf(job, sizeof(job), "%s:%s", r->job, r->job_gen);
    (void)printf("%-10s %-20s %-8s %-6s %-10s %-20s %s%s\n", grant, r->program,
                 job, r->op, r->lifetime, since,
                 from != NULL ? what : r->digest,
                 exact ? "" : " (digest only: no log line names it)");
}

/* Reads every row from ttyd's query socket at path into text (cap
 * bytes, NUL-terminated). Returns 0 or PBX_TOOL_EXIT_FAIL (message
 * printed). */
static int grants_query(const char *path, char *text, size_t cap)
{
    int fd = pbx_peer_io_connect(path, SOCK_STREAM);
    if (fd < 0) {
        (void)fprintf(stderr, "pbx grants: ttyd's query socket '%s': %s\n",
                      path, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    size_t got = 0;
    int rc = PBX_TOOL_EXIT_FAIL;
    const char *why = "no answer in time";
    for (int i = 0; i < 1 << 16; i++) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, GRANTS_WAIT_MS) != 1) {
            break;
        }
        ssize_t r = read(fd, text + got, cap - 1U - got);
        if (r == 0) {
            rc = PBX_TOOL_EXIT_OK;
            break;
        }
        if (r < 0 && errno == EINTR) {
            continue;
        }
        why = r < 0 ? strerror(errno) : "more rows than fit";
        if (r < 0 || (got += (size_t)r) + 1U >= cap) {
            break;
        }
    }
    text[got] = '\0';
    (void)close(fd);
    if (rc != PBX_TOOL_EXIT_OK) {
        (void)fprintf(stderr, "pbx grants: '%s': %s\n", path, why);
    }
    return rc;
}

/* Fills objs from the decision lines of the log at path until every one
 * of the n is found. Returns false when the log cannot be read. */
static bool grants_log_objects(const char *path, pbx_peer_grants_object *objs,
                               size_t n, size_t missing)
{
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        return false;
    }
    static char line[PBX_PEER_GRANTS_LINE_MAX];
    static pbx_peer_grants_event e;
    while (missing != 0U && fgets(line, sizeof(line), f) != NULL) {
        if (pbx_peer_grants_event_parse(line, &e)) {
            missing -= pbx_peer_grants_object_match(objs, n, &e);
        }
    }
    (void)fclose(f);
    return true;
}

/* Splits text into its rows (at most cap), each parsed into objs' digest;
 * stores the count in *n. Returns 0 or PBX_TOOL_EXIT_FAIL (message). */
static int grants_rows(char *text, char **lines, pbx_peer_grants_object *objs,
                       size_t cap, size_t *n)
{
    static pbx_peer_grants_row row;
    char *save = NULL;
    *n = 0;
    for (char *l = strtok_r(text, "\n", &save); l != NULL;
         l = strtok_r(NULL, "\n", &save)) {
        if (*n == cap || !pbx_peer_grants_row_parse(l, &row) ||
            !pbx_peer_grants_object_init(&objs[*n], &row)) {
            (void)fprintf(stderr, "pbx grants: unreadable row '%s'\n", l);
            return PBX_TOOL_EXIT_FAIL;
        }
        lines[(*n)++] = l;
    }
    return 0;
}

int pbx_tool_grants(int argc, char **argv)
{
    grants_opts o;
    int rc = grants_args(argc, argv, "--query", false, &o);
    char path[4096];
    if (rc != 0 ||
        (rc = grants_path(&o, "ttyd.sock", path, sizeof(path))) != 0) {
        return rc;
    }
    static char text[PBX_PEER_TTY_VIEWS_MAX * 512U];
    static char *lines[PBX_PEER_TTY_VIEWS_MAX];
    static pbx_peer_grants_object objs[PBX_PEER_TTY_VIEWS_MAX];
    size_t n = 0;
    if ((rc = grants_query(path, text, sizeof(text))) != 0 ||
        (rc = grants_rows(text, lines, objs, PBX_PEER_TTY_VIEWS_MAX, &n)) !=
            0) {
        return rc;
    }
    /* The exact object of every row, by its digest, from the decision
     * lines of the stack's log. */
    grants_opts lo = {o.log, NULL, false, NULL};
    uint32_t inc = 1U;
    if (n != 0U &&
        (grants_path(&lo, "stack.log", path, sizeof(path)) != 0 ||
         !pbx_ids_live(path, &inc) || !grants_log_objects(path, objs, n, n))) {
        (void)fprintf(stderr,
                      "pbx grants: no log at '%s': objects the user was "
                      "not asked about are shown by digest, ids with "
                      "incarnation 1\n",
                      path);
    }
    if (!o.kv) {
        (void)printf("%-10s %-20s %-8s %-6s %-10s %-20s %s\n", "GRANT",
                     "PROGRAM", "JOB", "OP", "LIFETIME", "SINCE", "OBJECT");
    }
    static pbx_peer_grants_row row;
    for (size_t i = 0; i < n; i++) {
        if (pbx_peer_grants_row_parse(lines[i], &row)) {
            grants_print_row(&row, &objs[i], o.kv, inc);
        }
    }
    return PBX_TOOL_EXIT_OK;
}

void pbx_tool_grants_usage(FILE *fp)
{
    (void)fputs("  grants [--dir DIR] [--query PATH] [--log PATH]\n"
                "         [--format table|kv]\n"
                "      the live grants: id, program, job, operation,\n"
                "      lifetime, since when, and the exact object: the\n"
                "      selector whose SHA-256 is the grant's digest (from\n"
                "      the prompt, else from DIR/stack.log's decision\n"
                "      lines), else the digest itself, said to be one\n",
                fp);
}

/* Sends USER_CANCEL of g on fd and waits for launchd's answer into *rep.
 * Returns 0, or PBX_TOOL_EXIT_FAIL after a message. */
static int grants_cancel_call(int fd, pbx_ipc_id g,
                              pbx_peer_user_cancel_reply *rep)
{
    uint8_t buf[PBX_IPC_HEADER_BYTES];
    size_t n = 0;
    static pbx_peer_msg m;
    struct pollfd p = {fd, POLLIN, 0};
    if (pbx_peer_user_cancel_encode(g, 1U, buf, sizeof(buf), &n) != PBX_OK ||
        pbx_peer_io_send(fd, buf, n, -1) != 0 ||
        poll(&p, 1, GRANTS_WAIT_MS) != 1 ||
        pbx_peer_io_recv_raw(fd, &m, 0) != 0) {
        (void)fprintf(stderr, "pbx cancel: launchd gave no answer\n");
        return PBX_TOOL_EXIT_FAIL;
    }
    pbx_err e = pbx_peer_user_cancel_reply_decode(m.buf, m.len, m.nfds, rep);
    pbx_peer_io_close_all(m.fds, m.nfds);
    if (e != PBX_OK || rep->grant.index != g.index || rep->grant.gen != g.gen) {
        (void)fprintf(stderr, "pbx cancel: launchd's answer is malformed\n");
        return PBX_TOOL_EXIT_FAIL;
    }
    return 0;
}

/* Refuses id when it is not of the live powerboxd, whose incarnation
 * DIR/stack.log names (pbx_ids_live): a grant of an ended incarnation
 * ended with it, and its I.G may name another grant now. Returns 0 or
 * PBX_TOOL_EXIT_FAIL after a message. */
static int grants_cancel_live(const pbx_ids_id *id, const char *arg)
{
    char path[4096];
    uint32_t live = 1U;
    if (pbx_tool_dir_path("stack.log", path, sizeof(path)) != 0) {
        return PBX_TOOL_EXIT_FAIL;
    }
    bool read = pbx_ids_live(path, &live);
    if (id->inc == live) {
        return 0;
    }
    (void)fprintf(stderr,
                  "pbx cancel: grant %s is not live: %s powerboxd "
                  "incarnation %u%s (the live powerboxd is incarnation %u%s)\n",
                  arg, id->inc < live ? "it was granted by" : "no",
                  (unsigned)id->inc,
                  id->inc < live ? ", which has ended" : " has run",
                  (unsigned)live, read ? "" : ": no stack.log names another");
    return PBX_TOOL_EXIT_FAIL;
}

/* How long pbx cancel waits for the grant's end to be recorded. */
#define GRANTS_END_WAIT_MS 15000
#define GRANTS_END_STEP_MS 20

/* Scans DIR/stack.log once for the end of grant `want` ("N-I.G"): when
 * powerboxd's "event=grant-end grant=N-I.G ..." line is there, its
 * object-id is copied into obj ("W:G"), and true is returned when vfsd's
 * "RETIRE object W gen G" line is there too. */
static bool grants_end_seen(const char *log, const char *want, char *obj,
                            size_t obj_len)
{
    FILE *fp = fopen(log, "r");
    if (fp == NULL) {
        return false;
    }
    char line[4096];
    char key[96];
    char retire[96] = "";
    (void)snprintf(key, sizeof(key), "event=grant-end grant=%s ", want);
    bool done = false;
    for (unsigned long i = 0;
         i < 10000000UL && !done && fgets(line, sizeof(line), fp) != NULL;
         i++) {
        const char *at = NULL;
        if (obj[0] == '\0' && strstr(line, key) != NULL &&
            (at = strstr(line, "object-id=")) != NULL) {
            size_t n = strcspn(at + 10, " \n");
            if (n > 0U && n < obj_len) {
                (void)memcpy(obj, at + 10, n);
                obj[n] = '\0';
            }
        }
        if (obj[0] != '\0' && retire[0] == '\0') {
            const char *colon = strchr(obj, ':');
            if (colon != NULL) {
                (void)snprintf(retire, sizeof(retire),
                               "RETIRE object %.*s gen %s", (int)(colon - obj),
                               obj, colon + 1);
            }
        }
        /* The whole id: "gen 4" must not match "gen 41". */
        const char *r = retire[0] != '\0' ? strstr(line, retire) : NULL;
        char after = 'x';
        if (r != NULL) {
            after = r[strlen(retire)];
        }
        done = after == '\n' || after == ':' || after == ' ' || after == '\0';
    }
    (void)fclose(fp);
    return done;
}

/* Waits (bounded) until grant `want`'s end is recorded and its object is
 * retired at vfsd, so that when pbx cancel returns the grant's object is
 * cut: the next access through any copy fails. Returns 1 when seen, 0
 * when not within the bound, -1 when DIR has no stack.log to read (a
 * stack not started by pbx up keeps its records elsewhere). */
static int grants_end_wait(const char *want, char *obj, size_t obj_len)
{
    char log[4096];
    obj[0] = '\0';
    if (pbx_tool_dir_path("stack.log", log, sizeof(log)) != 0 ||
        access(log, R_OK) != 0) {
        return -1;
    }
    for (int t = 0; t < GRANTS_END_WAIT_MS; t += GRANTS_END_STEP_MS) {
        if (grants_end_seen(log, want, obj, obj_len)) {
            return 1;
        }
        struct timespec ts = {0, GRANTS_END_STEP_MS * 1000000L};
        (void)nanosleep(&ts, NULL);
    }
    return 0;
}

int pbx_tool_cancel(int argc, char **argv)
{
    grants_opts o;
    pbx_ids_id id;
    int rc = grants_args(argc, argv, "--control", true, &o);
    if (rc != 0) {
        return rc;
    }
    if (!pbx_ids_parse(o.id, &id)) {
        return pbx_tool_usage_error(
            argv[0], "bad grant ID (want N-I.G, as pbx grants shows it)", o.id);
    }
    pbx_ipc_id g = {id.index, id.gen};
    char path[4096];
    if ((rc = grants_cancel_live(&id, o.id)) != 0 ||
        (rc = grants_path(&o, "launchd.sock", path, sizeof(path))) != 0) {
        return rc;
    }
    int fd = pbx_peer_io_connect(path, SOCK_SEQPACKET);
    if (fd < 0) {
        (void)fprintf(stderr, "pbx cancel: launchd's control socket '%s': %s\n",
                      path, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    pbx_peer_user_cancel_reply rep;
    rc = grants_cancel_call(fd, g, &rep);
    (void)close(fd);
    if (rc != 0) {
        return rc;
    }
    if (rep.status != 0U) {
        (void)fprintf(stderr, "pbx cancel: grant %s not cancelled: %s\n", o.id,
                      pbx_peer_status_text(rep.status));
        return PBX_TOOL_EXIT_FAIL;
    }
    char want[48];
    char obj[48];
    (void)snprintf(want, sizeof(want), "%u-%u.%u", (unsigned)id.inc,
                   (unsigned)id.index, (unsigned)id.gen);
    int seen = grants_end_wait(want, obj, sizeof(obj));
    if (seen < 0) {
        (void)printf("grant %s cancelled (request %u-%u.%u)\n", o.id,
                     (unsigned)id.inc, rep.request.index, rep.request.gen);
        return PBX_TOOL_EXIT_OK;
    }
    if (seen == 0) {
        (void)fprintf(stderr,
                      "pbx cancel: grant %s: powerboxd took the cancel, but "
                      "its end and the RETIRE of its object are not in "
                      "stack.log after %d s\n",
                      o.id, GRANTS_END_WAIT_MS / 1000);
        return PBX_TOOL_EXIT_FAIL;
    }
    (void)printf("grant %s cancelled (request %u-%u.%u); object %s retired\n",
                 o.id, (unsigned)id.inc, rep.request.index, rep.request.gen,
                 obj);
    return PBX_TOOL_EXIT_OK;
}

void pbx_tool_cancel_usage(FILE *fp)
{
    (void)fputs("  cancel [--dir DIR] [--control PATH] N-I.G\n"
                "      ends live grant N-I.G (as pbx grants shows it) as the\n"
                "      user (through launchd); under pbx up (DIR/stack.log)\n"
                "      it returns once the end is recorded and vfsd retired\n"
                "      the object (every copy then reads no more); exit 1\n"
                "      with the reason when\n"
                "      it is unknown or ended, or when N is not the live\n"
                "      powerboxd's incarnation (DIR/stack.log)\n",
                fp);
}
