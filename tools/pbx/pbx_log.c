/*
 * pbx_log.c: `pbx log`, how each grant ended and by whom, and every
 * decision that granted nothing, from DIR/stack.log.
 *
 * Three kinds of grant end are shown. powerboxd's own `event=grant-end`
 * lines; the grants of a powerboxd that died (`pbx up`'s "powerboxd[PID]
 * killed unexpectedly ..." or "exited unexpectedly ..." line), which that
 * powerboxd could no longer log, each joined to the peers' records of its
 * end (vfsd's RETIRE or HANG-UP of its object-id, ttyd's, procd's and
 * launchd's broker-lost lines naming its grant); and the grants still
 * live when `pbx up` stopped the stack (powerboxd's death line without
 * "unexpectedly"), shown as "stack stopped". The last two are derived
 * here from the stop and death lines: `pbx up` writes nothing per grant.
 *
 * Two passes over the file: the first notes what ended, what the user
 * cancelled, what the peers recorded and when each powerboxd died; the
 * second prints, in log order, each end and each decision that granted
 * nothing, and the derived ends at their powerboxd's death line. Ids
 * from different stacks that shared the file (one `pbx up` after
 * another) are kept apart: a stack's incarnations only grow, so a note
 * whose number does not begins the next stack.
 */
#include "tools/pbx/pbx_tool.h"

#include "peers/lib/pbx_peer_grants.h"
#include "tools/pbx/pbx_ids.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Records one log can hold (ended grants, user cancels, peers' records,
 * powerboxd deaths); more are counted and reported, never overflowed. */
#define LOG_KEYS    (1U << 17)
#define LOG_KEY_MAX 56U
/* Grants of a live powerboxd whose death line is still ahead (pass 2). */
#define LOG_PENDING (1U << 16)

/* One entry of the record table: a key and a value. */
typedef struct log_key {
    char key[LOG_KEY_MAX];
    long value;
} log_key;

/* One approved grant whose end is derived at its powerboxd's death line:
 * where its decision line starts in the file, and that powerboxd. */
typedef struct log_pending {
    long offset;
    long pid;
} log_pending;

/* The whole state of one `pbx log`, in static storage. */
typedef struct log_state {
    log_key keys[LOG_KEYS];
    size_t used;
    size_t lost;
    log_pending pending[LOG_PENDING];
    size_t npending;
    bool noted;    /* a "powerboxd incarnation N starting" line was read */
    long life;     /* how many stacks the file held so far */
    uint32_t inc;  /* the live incarnation at the line being read */
    bool stopping; /* `pbx up` is stopping the stack at that line */
    bool kv;
} log_state;

static log_state log_g;

/* A string's FNV-1a hash. */
static size_t log_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (size_t i = 0; i < LOG_KEY_MAX && s[i] != '\0'; i++) {
        h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
    }
    return (size_t)(h % LOG_KEYS);
}

/* The entry of key, or the free one where it would go (NULL: full). */
static log_key *log_slot(const char *key)
{
    size_t at = log_hash(key);
    for (size_t i = 0; i < LOG_KEYS; i++) {
        log_key *k = &log_g.keys[(at + i) % LOG_KEYS];
        if (k->key[0] == '\0' || strcmp(k->key, key) == 0) {
            return k;
        }
    }
    return NULL;
}

/* Writes "KIND LIFE WHAT" into out (LOG_KEY_MAX bytes). */
static void log_make(char *out, char kind, const char *what)
{
    (void)snprintf(out, LOG_KEY_MAX, "%c%ld %s", kind, log_g.life, what);
}

/* Sets kind/what to value (the first value stays when keep is set). */
static void log_put(char kind, const char *what, long value, bool keep)
{
    char key[LOG_KEY_MAX];
    log_make(key, kind, what);
    log_key *k = log_slot(key);
    /* One slot stays free so that every probe ends. */
    if (k == NULL || (k->key[0] == '\0' && log_g.used + 1U >= LOG_KEYS)) {
        log_g.lost++;
        return;
    }
    if (k->key[0] == '\0') {
        memcpy(k->key, key, sizeof(key));
        log_g.used++;
    } else if (keep) {
        return;
    }
    k->value = value;
}

/* The value of kind/what, or -1 when it was never put. */
static long log_get(char kind, const char *what)
{
    char key[LOG_KEY_MAX];
    log_make(key, kind, what);
    const log_key *k = log_slot(key);
    return k != NULL && k->key[0] != '\0' ? k->value : -1;
}

/* Writes "INC-I.G" into out from a peer's "I.G" or "I:G" (the live
 * incarnation at that line); false when g is neither. */
static bool log_peer_id(const char *g, size_t n, char *out, size_t cap)
{
    char buf[32];
    pbx_ids_id id;
    if (n == 0U || n >= sizeof(buf) - 12U) {
        return false;
    }
    (void)snprintf(buf, sizeof(buf), "%u-%.*s", (unsigned)log_g.inc, (int)n, g);
    char *c = strchr(buf, ':');
    if (c != NULL) {
        *c = '.';
    }
    if (!pbx_ids_parse(buf, &id)) {
        return false;
    }
    (void)snprintf(out, cap, "%s", buf);
    return true;
}

/* Follows the stack: a note starts a new incarnation, or a new stack's
 * life when its number does not grow. */
static void log_follow(const pbx_ids_line *l)
{
    if (!pbx_ids_is(l, "up")) {
        return;
    }
    /* Within one stack the incarnations only grow: a note that does not
     * is the next stack's first (`pbx up` appends to the log). */
    uint32_t n = pbx_ids_note(l);
    if (n != 0U && log_g.noted && n <= log_g.inc) {
        log_g.life++;
        log_g.stopping = false;
    }
    log_g.noted |= n != 0U;
    log_g.inc = n != 0U ? n : log_g.inc;
    /* From a stop's first line on (a signal, or the give-up rule), a
     * grant powerboxd logs lost was lost to the stop: the supervisor
     * signals the peers a moment before powerboxd. */
    if ((strncmp(l->rest, "signal ", 7) == 0 &&
         strstr(l->rest, ": stopping the stack") != NULL) ||
        strncmp(l->rest, "giving up: ", 11) == 0) {
        log_g.stopping = true;
    }
}

/* Parses the decimal number at s (digits only, below 2^63) into *v and
 * returns the text after it, or NULL when s does not start with one. */
static const char *log_number(const char *s, unsigned long long *v)
{
    char *end = NULL;
    if (s[0] < '0' || s[0] > '9') {
        return NULL;
    }
    errno = 0;
    *v = strtoull(s, &end, 10);
    return errno == 0 && *v <= (unsigned long long)INT64_MAX ? end : NULL;
}

/* Whether rest is `pbx up`'s death line of a powerboxd ("powerboxd[P]
 * killed ..." or "... exited ..."); stores P in *pid and P as text in
 * key (24 bytes). */
static bool log_death(const char *rest, long *pid, char *key)
{
    unsigned long long v = 0;
    const char *after =
        strncmp(rest, "powerboxd[", 10) == 0 ? log_number(rest + 10, &v) : NULL;
    if (after == NULL || (strncmp(after, "] killed ", 9) != 0 &&
                          strncmp(after, "] exited ", 9) != 0)) {
        return false;
    }
    *pid = (long)v;
    (void)snprintf(key, 24, "%ld", *pid);
    return true;
}

/* Notes a death line of `pbx up` ("powerboxd[P] killed ..."): 1 when it
 * died unexpectedly, 2 when the stack was being stopped. */
static void log_note_death(const pbx_ids_line *l)
{
    long pid = 0;
    char key[24];
    if (!log_death(l->rest, &pid, key)) {
        return;
    }
    log_put('D', key, strstr(l->rest, " unexpectedly ") != NULL ? 1 : 2, true);
}

/* Notes vfsd's end of an object ("vfsd: RETIRE object W gen G" or
 * HANG-UP, the pid of a "route to pid P closed" retirement, else 0). */
static void log_note_vfsd(const pbx_ids_line *l)
{
    unsigned long long w = 0;
    unsigned long long g = 0;
    unsigned long long pid = 0;
    char key[48];
    const char *p =
        strncmp(l->rest, "vfsd: RETIRE object ", 20) == 0    ? l->rest + 20
        : strncmp(l->rest, "vfsd: HANG-UP object ", 21) == 0 ? l->rest + 21
                                                             : NULL;
    p = p != NULL ? log_number(p, &w) : NULL;
    p = p != NULL && strncmp(p, " gen ", 5) == 0 ? log_number(p + 5, &g) : NULL;
    if (p == NULL) {
        return;
    }
    const char *route = strstr(p, ": route to pid ");
    if (route == NULL || log_number(route + 15, &pid) == NULL) {
        pid = 0;
    }
    (void)snprintf(key, sizeof(key), "%llu:%llu", w, g);
    log_put('V', key, (long)pid, false);
}

/* Notes a peer's broker-lost line naming a grant (ttyd, procd, launchd)
 * or launchd's user cancel, each keyed by the grant as N-I.G. */
static void log_note_peer(const pbx_ids_line *l)
{
    static const struct {
        const char *name;
        const char *head;
        const char *tail;
        char kind;
    } forms[] = {
        {"ttyd", "ttyd: VIEW ended grant ", "(broker lost)", 'T'},
        {"procd", "procd: INSTALL ended grant ", "(broker lost)", 'P'},
        {"launchd", "launchd: grant ", "ended: broker lost", 'L'},
        {"launchd", "launchd: event=user-cancel ", NULL, 'U'},
    };
    for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
        size_t h = strlen(forms[i].head);
        if (!pbx_ids_is(l, forms[i].name) ||
            strncmp(l->rest, forms[i].head, h) != 0 ||
            (forms[i].tail != NULL && strstr(l->rest, forms[i].tail) == NULL)) {
            continue;
        }
        /* The peers write I.G then ':' or a blank; launchd's user-cancel
         * line writes grant=I:G. */
        const char *g = l->rest + h;
        size_t n = strcspn(g, " :\r\n");
        if (forms[i].tail == NULL) {
            g = strstr(l->rest, " grant=");
            g = g != NULL ? g + 7 : "";
            n = strcspn(g, " \r\n");
        }
        char id[32];
        if (log_peer_id(g, n, id, sizeof(id))) {
            log_put(forms[i].kind, id, 1, true);
        }
        return;
    }
}

/* The first pass's notes of one line. */
static void log_note(const char *line)
{
    static pbx_peer_grants_event e;
    pbx_ids_line l;
    if (!pbx_ids_split(line, &l)) {
        return;
    }
    log_follow(&l);
    if (pbx_ids_is(&l, "up")) {
        log_note_death(&l);
    } else if (pbx_ids_is(&l, "vfsd")) {
        log_note_vfsd(&l);
    } else if (pbx_ids_is(&l, "powerboxd")) {
        if (pbx_peer_grants_event_parse(line, &e) &&
            strcmp(pbx_peer_grants_get(&e, "event"), "grant-end") == 0) {
            log_put('E', pbx_peer_grants_get(&e, "grant"), 1, true);
        }
    } else {
        log_note_peer(&l);
    }
}

/* Who made a decision that granted nothing, from its reason. */
static const char *log_refused_by(const char *reason)
{
    if (strcmp(reason, "user") == 0 || strcmp(reason, "policy") == 0) {
        return reason;
    }
    return strcmp(reason, "not-found") == 0 ? "vfsd" : "powerboxd";
}

/* Prints the line of a decision e that granted nothing. */
static void log_print_refusal(const pbx_peer_grants_event *e)
{
    const char *t = e->time[0] != '\0' ? e->time : "-";
    const char *out = pbx_peer_grants_get(e, "outcome");
    const char *why = pbx_peer_grants_get(e, "reason");
    const char *req = pbx_peer_grants_get(e, "request");
    const char *job = pbx_peer_grants_get(e, "job");
    const char *entry = pbx_peer_grants_get(e, "entry");
    const char *op = pbx_peer_grants_get(e, "op");
    const char *obj = pbx_peer_grants_get(e, "object");
    const char *lt = pbx_peer_grants_get(e, "lifetime");
    if (log_g.kv) {
        (void)printf("time=%s grant=- request=%s job=%s entry=%s op=%s "
                     "object=%s lifetime=%s end=%s by=%s reason=%s\n",
                     t, req, job, entry, op, obj, lt, out, log_refused_by(why),
                     why);
        return;
    }
    (void)printf("%s request %s (%s, job %s, %s %s, %s): %s (reason %s)\n", t,
                 req, entry, job, op, obj, lt,
                 strcmp(out, "not-found") == 0   ? "not found, nothing granted"
                 : strcmp(out, "cancelled") == 0 ? "cancelled before a grant"
                                                 : "denied",
                 why);
}

/* Writes the peers' records of the end of approved grant e (of
 * powerboxd pid) into out as "vfsd,ttyd,..." or "-". */
static void log_records(const pbx_peer_grants_event *e, long pid, char *out,
                        size_t cap)
{
    const char *g = pbx_peer_grants_get(e, "grant");
    long v = log_get('V', pbx_peer_grants_get(e, "object-id"));
    size_t n = 0;
    out[0] = '\0';
    const struct {
        bool has;
        const char *name;
    } recs[] = {{v == 0 || v == pid, "vfsd"},
                {log_get('T', g) >= 0, "ttyd"},
                {log_get('P', g) >= 0, "procd"},
                {log_get('L', g) >= 0, "launchd"}};
    for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++) {
        if (recs[i].has && n < cap) {
            int w = snprintf(out + n, cap - n, "%s%s", n != 0U ? "," : "",
                             recs[i].name);
            n += w > 0 ? (size_t)w : 0U;
        }
    }
    if (n == 0U) {
        (void)snprintf(out, cap, "-");
    }
}

/* Prints the derived end of approved grant e of powerboxd pid, whose
 * death line (stamped t) said how: 1 died, 2 stopped with the stack. */
static void log_print_derived(const pbx_peer_grants_event *e, const char *t,
                              long how, long pid)
{
    char recs[64];
    const char *g = pbx_peer_grants_get(e, "grant");
    const char *job = pbx_peer_grants_get(e, "job");
    const char *entry = pbx_peer_grants_get(e, "entry");
    const char *op = pbx_peer_grants_get(e, "op");
    const char *obj = pbx_peer_grants_get(e, "object");
    const char *lt = pbx_peer_grants_get(e, "lifetime");
    bool died = how == 1;
    /* A grant-end line powerboxd wrote while the stack stopped. */
    bool logged = strcmp(pbx_peer_grants_get(e, "event"), "grant-end") == 0;
    log_records(e, pid, recs, sizeof(recs));
    if (log_g.kv) {
        (void)printf("time=%s grant=%s request=%s job=%s entry=%s op=%s "
                     "object=%s lifetime=%s end=%s by=%s reason=%s "
                     "records=%s\n",
                     t, g, pbx_peer_grants_get(e, "request"), job, entry, op,
                     obj, lt, died ? "lost" : "stack-stopped",
                     died ? "powerboxd-lost" : "pbx-up",
                     died ? "broker-lost" : "stack-stopped",
                     died     ? recs
                     : logged ? "powerboxd"
                              : "-");
        return;
    }
    (void)printf("%s grant %s (%s, job %s, %s %s, %s): ", t, g, entry, job, op,
                 obj, lt);
    if (!died && logged) {
        (void)printf("stack stopped while it was live (powerboxd logged it "
                     "%s, reason %s, as the stack stopped)\n",
                     pbx_peer_grants_get(e, "end"),
                     pbx_peer_grants_get(e, "reason"));
    } else if (!died) {
        (void)printf("stack stopped while it was live\n");
    } else if (strcmp(recs, "-") == 0) {
        (void)printf("lost with its broker (powerboxd[%ld] died; no peer "
                     "recorded it)\n",
                     pid);
    } else {
        (void)printf("lost with its broker (powerboxd[%ld] died; recorded "
                     "by %s)\n",
                     pid, recs);
    }
}

/* Prints the derived ends of powerboxd pid's pending grants (its death
 * line, stamped t, is being read) and forgets them; f is left where it
 * was. */
static void log_flush(FILE *f, long pid, const char *t, long how)
{
    static char line[PBX_PEER_GRANTS_LINE_MAX];
    static pbx_peer_grants_event e;
    long here = ftell(f);
    size_t kept = 0;
    for (size_t i = 0; i < log_g.npending; i++) {
        const log_pending *p = &log_g.pending[i];
        if (p->pid != pid) {
            log_g.pending[kept++] = *p;
            continue;
        }
        if (fseek(f, p->offset, SEEK_SET) == 0 &&
            fgets(line, sizeof(line), f) != NULL &&
            pbx_peer_grants_event_parse(line, &e)) {
            log_print_derived(&e, t, how, pid);
        }
    }
    log_g.npending = kept;
    (void)fseek(f, here, SEEK_SET);
}

/* A `pbx up` line in the second pass: at powerboxd's death line, the
 * derived ends of its grants that had no end line. */
static void log_show_up(FILE *f, const pbx_ids_line *l, const char *line)
{
    long pid = 0;
    char key[24];
    char t[64];
    if (!log_death(l->rest, &pid, key)) {
        return;
    }
    (void)snprintf(t, sizeof(t), "%.*s", (int)strcspn(line, " "), line);
    log_put('X', key, 1, true);
    log_flush(f, pid, t, log_get('D', key));
}

/* An approved decision e of powerboxd pid (its line at offset): nothing
 * when its grant has an end line or its powerboxd never died; else its
 * derived end now (the death line came first) or at the death line. */
static void log_show_approved(const pbx_peer_grants_event *e, long pid,
                              long offset)
{
    char key[24];
    (void)snprintf(key, sizeof(key), "%ld", pid);
    long how = log_get('D', key);
    if (log_get('E', pbx_peer_grants_get(e, "grant")) >= 0 || how < 0) {
        return;
    }
    if (log_get('X', key) >= 0 || log_g.npending == LOG_PENDING) {
        log_print_derived(e, e->time[0] != '\0' ? e->time : "-", how, pid);
        return;
    }
    log_g.pending[log_g.npending++] = (log_pending){offset, pid};
}

/* The second pass's output for one line, which starts at offset. */
static void log_show(FILE *f, const char *line, long offset)
{
    static pbx_peer_grants_event e;
    static pbx_peer_grants_audit user;
    pbx_ids_line l = {NULL, 0U, 0, NULL};
    bool split = pbx_ids_split(line, &l);
    if (split) {
        log_follow(&l);
    }
    if (split && pbx_ids_is(&l, "up")) {
        log_show_up(f, &l, line);
        return;
    }
    if ((split && !pbx_ids_is(&l, "powerboxd")) ||
        !pbx_peer_grants_event_parse(line, &e)) {
        return;
    }
    const char *ev = pbx_peer_grants_get(&e, "event");
    const char *g = pbx_peer_grants_get(&e, "grant");
    if (strcmp(ev, "grant-end") == 0 && log_g.stopping &&
        strcmp(pbx_peer_grants_get(&e, "end"), "lost") == 0) {
        log_print_derived(&e, e.time[0] != '\0' ? e.time : "-", 2, l.pid);
    } else if (strcmp(ev, "grant-end") == 0) {
        /* The user's cancel was logged by launchd as I:G at this
         * incarnation; the audit gets the one grant in question. */
        static char out[PBX_PEER_GRANTS_LINE_MAX];
        user.count = log_get('U', g) >= 0 && strlen(g) < sizeof(user.grants[0])
                         ? 1U
                         : 0U;
        (void)snprintf(user.grants[0], sizeof(user.grants[0]), "%s", g);
        if (pbx_peer_grants_end_line(&user, &e, log_g.kv, out, sizeof(out))) {
            (void)printf("%s\n", out);
        }
    } else if (strcmp(ev, "decision") == 0 &&
               strcmp(pbx_peer_grants_get(&e, "outcome"), "approved") == 0) {
        if (strcmp(g, "-") != 0) {
            log_show_approved(&e, l.pid, offset);
        }
    } else if (strcmp(ev, "decision") == 0) {
        log_print_refusal(&e);
    }
}

/* Rewinds the stack's position for a pass. */
static void log_rewind(void)
{
    log_g.noted = false;
    log_g.life = 0;
    log_g.inc = 1U;
    log_g.stopping = false;
}

/* Both passes over f. Returns 0 or PBX_TOOL_EXIT_FAIL (message). */
static int log_passes(FILE *f, const char *path)
{
    static char line[PBX_PEER_GRANTS_LINE_MAX];
    log_rewind();
    for (size_t n = 0; fgets(line, sizeof(line), f) != NULL; n++) {
        log_note(line);
    }
    if (fseek(f, 0, SEEK_SET) != 0) {
        (void)fprintf(stderr, "pbx log: '%s' cannot be read twice\n", path);
        return PBX_TOOL_EXIT_FAIL;
    }
    log_rewind();
    for (long at = ftell(f); fgets(line, sizeof(line), f) != NULL;
         at = ftell(f)) {
        log_show(f, line, at);
    }
    if (log_g.lost != 0U) {
        (void)fprintf(stderr,
                      "pbx log: '%s' holds more records than %u: %zu were "
                      "not kept, so some ends may be shown as derived\n",
                      path, (unsigned)LOG_KEYS, log_g.lost);
    }
    return PBX_TOOL_EXIT_OK;
}

int pbx_tool_log(int argc, char **argv)
{
    const char *file = NULL;
    memset(&log_g, 0, sizeof(log_g));
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has = i + 1 < argc;
        if (strcmp(a, "--dir") == 0 && has) {
            pbx_tool_dir_set(argv[++i]);
        } else if (strcmp(a, "--file") == 0 && has) {
            file = argv[++i];
        } else if (strcmp(a, "--format") == 0 && has) {
            const char *fmt = argv[++i];
            if (strcmp(fmt, "kv") != 0 && strcmp(fmt, "table") != 0) {
                return pbx_tool_usage_error(argv[0], "unknown format", fmt);
            }
            log_g.kv = strcmp(fmt, "kv") == 0;
        } else {
            bool known = strcmp(a, "--dir") == 0 || strcmp(a, "--file") == 0 ||
                         strcmp(a, "--format") == 0;
            return pbx_tool_usage_error(argv[0],
                                        a[0] != '-' ? "unexpected argument"
                                        : known     ? "option needs a value"
                                                    : "unknown option",
                                        a);
        }
    }
    char path[4096];
    if (file != NULL) {
        (void)snprintf(path, sizeof(path), "%s", file);
    } else {
        int rc = pbx_tool_dir_path("stack.log", path, sizeof(path));
        if (rc != 0) {
            return rc;
        }
    }
    FILE *f = fopen(path, "re");
    if (f == NULL) {
        (void)fprintf(stderr, "pbx log: '%s': %s\n", path, strerror(errno));
        return PBX_TOOL_EXIT_FAIL;
    }
    int rc = log_passes(f, path);
    (void)fclose(f);
    return rc;
}

void pbx_tool_log_usage(FILE *fp)
{
    (void)fputs("  log [--dir DIR] [--file PATH] [--format table|kv]\n"
                "      how each grant ended and by whom (consumed, expired,\n"
                "      cancelled by the program or the user, revoked, lost\n"
                "      with a dead powerboxd, or live when the stack\n"
                "      stopped) and each request denied, not found or\n"
                "      cancelled, with its reason, from DIR/stack.log\n",
                fp);
}
