/*
 * fuzz_grants.c: libFuzzer harness for what `pbx grants` and `pbx log`
 * read (peers/lib/pbx_peer_grants.c): the rows of ttyd's query socket
 * (pbx_peer_grants_row_parse, then the exact object of a row:
 * pbx_peer_grants_object_init, _match, _text) and the stack log's event
 * lines (pbx_peer_grants_event_parse, _audit_note, _ended, _end_line).
 *
 * Input layout: byte 0 chooses the mode (modulo 3), byte 1 sizes the
 * output buffers of modes 0 and 2, the rest is the mode's data.
 * - Mode 0, any row: the rest, up to its first NUL, is a line given to
 *   pbx_peer_grants_row_parse. The harness's own reading of the row format
 *   (fg_ref_row, written from pbx_peer_grants.h and the format of
 *   pbx_peer_tty_views_row, not from the parser) must accept exactly the
 *   same lines with the same fields; an accepted row written back in
 *   ttyd's format parses to the same fields, is the very same bytes
 *   exactly when the line was written as ttyd writes (one blank between
 *   the head's words, since without leading zeros), and its object is
 *   the digest's or the prompt's.
 * - Mode 1, ttyd's own rows: the rest fills one row of ttyd's table
 *   (identities, names, times, a selector shown or not, a label, a
 *   program entry of printable bytes, a digest that is or is not the
 *   selector's SHA-256); ttyd's encoder (pbx_peer_tty_views_row) writes
 *   it and the parser must give back every field as the harness escapes
 *   it; the object must be the prompt's selector when shown and exact,
 *   else the selector of a decision line of the log naming it, else the
 *   digest.
 * - Mode 2, log lines: the rest, up to its first NUL, is a log line; the
 *   event parser must agree with the harness's own split (fg_ref_event),
 *   a grant end must be judged as pbx_peer_grants.h says, and its `pbx
 *   log` line must fit any buffer, NUL-terminated.
 * Any difference aborts.
 */
#include "peers/lib/pbx_peer_grants.h"

#include "peers/lib/pbx_peer.h"
#include "sha2/pbx_sha2.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The longest line a mode reads (a row is refused beyond its bound). */
#define FG_LINE_MAX (PBX_PEER_TTY_ROW_BYTES_MAX + 64U)

/* Aborts unless cond holds. */
static void fg_check(bool cond)
{
    if (!cond) {
        abort();
    }
}

/* The harness's own row fields: offsets and lengths into its copy. */
typedef struct fg_ref {
    /** text is the stripped line, NUL-terminated. */
    char text[FG_LINE_MAX];
    /** at gives the 12 head values (grant .. label) in
     * pbx_peer_grants_row's order. */
    size_t at[12];
    /** len is each head value's length. */
    size_t len[12];
    /** entry_at and entry_len place the program entry. */
    size_t entry_at;
    /** entry_len is the entry's length. */
    size_t entry_len;
    /** digest_at places the 64 hex digits. */
    size_t digest_at;
    /** since is the since value. */
    uint64_t since;
} fg_ref;

/* The keywords before the values of the row's head, "" for a bare value
 * (op and class), in order; since's value is head value 8. */
static const char *const fg_keys[] = {
    "grant",   "",         "",      "object",  "job",      "slot",
    "job-gen", "lifetime", "since", "request", "selector", "label"};

/* The harness's own decimal rule, the number rule of pbx_peer.h (as
 * fuzz_peer_parse states it): 1 to 21 characters, all digits, whose
 * value, leading zeros aside, is at most UINT64_MAX (compared as a
 * decimal string). A 21-character since with leading zeros is taken:
 * found by make check's own fuzz run on 58663de. */
static bool fg_ref_u64(const char *s, size_t n, uint64_t *out)
{
    static const char max[] = "18446744073709551615";
    if (n == 0U || n > 21U) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
    }
    while (n > 1U && s[0] == '0') {
        s++;
        n--;
    }
    if (n > 20U || (n == 20U && memcmp(s, max, 20U) > 0)) {
        return false;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        v = v * 10U + (uint64_t)(s[i] - '0');
    }
    *out = v;
    return true;
}

/* The next word of r->text from *pos (blanks skipped): its start and
 * length; false at the end. *pos moves past the word and one blank. */
static bool fg_ref_word(const fg_ref *r, size_t *pos, size_t *at, size_t *len)
{
    size_t i = *pos;
    while (r->text[i] == ' ') {
        i++;
    }
    if (r->text[i] == '\0') {
        return false;
    }
    *at = i;
    while (r->text[i] != '\0' && r->text[i] != ' ') {
        i++;
    }
    *len = i - *at;
    *pos = r->text[i] == ' ' ? i + 1U : i;
    return true;
}

/* Whether the word at/len of r is exactly s. */
static bool fg_ref_is(const fg_ref *r, size_t at, size_t len, const char *s)
{
    return strlen(s) == len && memcmp(r->text + at, s, len) == 0;
}

/* Reads the twelve head values into r (keyword, value); *pos ends after
 * the "program" word and one blank. */
static bool fg_ref_head(fg_ref *r, size_t *pos)
{
    size_t at = 0;
    size_t len = 0;
    for (size_t f = 0; f < 12U; f++) {
        if (fg_keys[f][0] != '\0' && (!fg_ref_word(r, pos, &at, &len) ||
                                      !fg_ref_is(r, at, len, fg_keys[f]))) {
            return false;
        }
        if (!fg_ref_word(r, pos, &r->at[f], &r->len[f])) {
            return false;
        }
    }
    return fg_ref_word(r, pos, &at, &len) && fg_ref_is(r, at, len, "program");
}

/* The harness's reading of a row: the line without its trailing CR and
 * LF bytes, shorter than PBX_PEER_TTY_ROW_BYTES_MAX; the head words in
 * order; after "program" and one blank a nonempty entry, then " digest "
 * and 64 hex digits ending the line; since a decimal u64. */
static bool fg_ref_row(const char *in, fg_ref *r)
{
    size_t n = strlen(in);
    while (n > 0U && (in[n - 1U] == '\r' || in[n - 1U] == '\n')) {
        n--;
    }
    if (n >= PBX_PEER_TTY_ROW_BYTES_MAX || n >= sizeof(r->text)) {
        return false;
    }
    memcpy(r->text, in, n);
    r->text[n] = '\0';
    size_t pos = 0;
    if (!fg_ref_head(r, &pos) || n < pos + 73U ||
        memcmp(r->text + n - 72U, " digest ", 8U) != 0) {
        return false;
    }
    for (size_t i = n - 64U; i < n; i++) {
        if (strchr("0123456789abcdefABCDEF", r->text[i]) == NULL) {
            return false;
        }
    }
    r->entry_at = pos;
    r->entry_len = n - 72U - pos;
    r->digest_at = n - 64U;
    return fg_ref_u64(r->text + r->at[8], r->len[8], &r->since);
}

/* Whether the parser's field s equals the reference's text at/len. */
static bool fg_same(const char *s, const fg_ref *r, size_t at, size_t len)
{
    return s != NULL && strlen(s) == len && memcmp(s, r->text + at, len) == 0;
}

/* Checks every field of parsed row p against the reference r. */
static void fg_check_fields(const pbx_peer_grants_row *p, const fg_ref *r)
{
    const char *f[12] = {p->grant, p->op,      p->cls,      p->object,
                         p->job,   p->slot,    p->job_gen,  p->lifetime,
                         NULL,     p->request, p->selector, p->label};
    for (size_t i = 0; i < 12U; i++) {
        fg_check(i == 8U || fg_same(f[i], r, r->at[i], r->len[i]));
    }
    fg_check(r->entry_len != 0U &&
             fg_same(p->program, r, r->entry_at, r->entry_len));
    fg_check(fg_same(p->digest, r, r->digest_at, 64U));
    fg_check(p->since_ms == r->since);
}

/* Writes row p back in ttyd's format into out (cap bytes). */
static void fg_write(const pbx_peer_grants_row *p, char *out, size_t cap)
{
    (void)snprintf(out, cap,
                   "grant %s %s %s object %s job %s slot %s job-gen %s "
                   "lifetime %s since %llu request %s selector %s label %s "
                   "program %s digest %s\n",
                   p->grant, p->op, p->cls, p->object, p->job, p->slot,
                   p->job_gen, p->lifetime, (unsigned long long)p->since_ms,
                   p->request, p->selector, p->label, p->program, p->digest);
}

static fg_ref ref;
static fg_ref ref2;
static pbx_peer_grants_row row;
static pbx_peer_grants_row row2;
static char line[FG_LINE_MAX];
static char text[2U * PBX_PEER_TTY_ROW_BYTES_MAX];

/* The object text of an accepted row without any log: the prompt's
 * selector exactly when it hashes to the digest, else "sha256:" and the
 * digest in lower case; a buffer too small gives NULL and "". */
static void fg_object_plain(const pbx_peer_grants_row *p, size_t cap)
{
    pbx_peer_grants_object o;
    fg_check(pbx_peer_grants_object_init(&o, p) && !o.found);
    cap = cap < sizeof(text) ? cap : sizeof(text);
    memset(text, 'Z', cap < sizeof(text) ? cap + 1U : sizeof(text));
    const char *from = pbx_peer_grants_object_text(p, &o, text, cap);
    if (from == NULL) {
        /* cppcheck takes sizeof(text) for less than 1 here (it is not). */
        // cppcheck-suppress knownArgument
        fg_check(cap == 0U || text[0] == '\0');
        return;
    }
    fg_check(strlen(text) < cap);
    if (strcmp(from, "prompt") == 0) {
        fg_check(strcmp(text, p->selector) == 0);
        return;
    }
    fg_check(strcmp(from, "digest") == 0 && strlen(text) == 71U &&
             memcmp(text, "sha256:", 7U) == 0);
    for (size_t i = 0; i < 64U; i++) {
        /* The digest's hex digits in lower case. */
        static const char hex[] = "0123456789abcdef0123456789ABCDEF";
        const char *at = strchr(hex, p->digest[i]);
        fg_check(at != NULL && text[7U + i] == hex[(size_t)(at - hex) % 16U]);
    }
}

/* Copies d[0..n) up to its first NUL into line. */
static void fg_line(const uint8_t *d, size_t n)
{
    n = n < sizeof(line) - 1U ? n : sizeof(line) - 1U;
    memcpy(line, d, n);
    line[n] = '\0';
}

/* Whether the row r was written as ttyd writes it: no leading blank, one
 * blank between the head's words, since without leading zeros. Such a
 * row, and only such a row, is written back to the very same bytes. */
static bool fg_ref_canonical(const fg_ref *r)
{
    char since[24];
    int w =
        snprintf(since, sizeof(since), "%llu", (unsigned long long)r->since);
    bool blanks = r->text[0] != ' ';
    for (size_t i = 1; blanks && i < r->entry_at; i++) {
        blanks = !(r->text[i] == ' ' && r->text[i - 1U] == ' ');
    }
    return blanks && w > 0 && (size_t)w == r->len[8] &&
           memcmp(since, r->text + r->at[8], r->len[8]) == 0;
}

/* Mode 0: any line as a row; cap is the object text's buffer. */
static void fg_row_any(const uint8_t *d, size_t n, size_t cap)
{
    fg_line(d, n);
    bool ok = pbx_peer_grants_row_parse(line, &row);
    fg_check(ok == fg_ref_row(line, &ref));
    if (!ok) {
        return;
    }
    fg_check_fields(&row, &ref);
    fg_write(&row, text, sizeof(text));
    size_t n_in = strlen(ref.text);
    bool same = strlen(text) == n_in + 1U && memcmp(text, ref.text, n_in) == 0;
    fg_check(same == fg_ref_canonical(&ref));
    fg_check(pbx_peer_grants_row_parse(text, &row2) && fg_ref_row(text, &ref2));
    fg_check_fields(&row2, &ref2);
    fg_check(strcmp(row.program, row2.program) == 0 &&
             strcmp(row.digest, row2.digest) == 0 &&
             row.since_ms == row2.since_ms);
    fg_object_plain(&row, cap);
}

/* The input as a stream of little-endian numbers and byte runs; zeros
 * once it is used up. */
typedef struct fg_in {
    /** d is the next byte. */
    const uint8_t *d;
    /** n is the number of bytes left. */
    size_t n;
} fg_in;

/* Takes a little-endian number of k bytes. */
static uint64_t fg_take(fg_in *in, size_t k)
{
    uint64_t v = 0;
    for (size_t i = 0; i < k && in->n != 0U; i++) {
        v |= (uint64_t)in->d[0] << (8U * i);
        in->d++;
        in->n--;
    }
    return v;
}

/* Takes up to want bytes into out (printable ASCII when text); returns
 * how many. */
static size_t fg_bytes(fg_in *in, size_t want, uint8_t *out, bool text)
{
    size_t k = want < in->n ? want : in->n;
    for (size_t i = 0; i < k; i++) {
        out[i] = text ? (uint8_t)(0x20U + in->d[i] % 95U) : in->d[i];
    }
    in->d += k;
    in->n -= k;
    return k;
}

/* Escapes b[0..n) as the harness reads ttyd's rules: with field, "-" for
 * none, bytes outside 0x21..0x7E, backslash and a lone "-" as \xNN; an
 * entry keeps blanks plain. */
static void fg_escape(const uint8_t *b, size_t n, bool field, char *out)
{
    size_t pos = 0;
    if (field && n == 0U) {
        memcpy(out, "-", 2U);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint8_t lo = field ? 0x21U : 0x20U;
        bool plain = b[i] >= lo && b[i] <= 0x7EU && b[i] != '\\' &&
                     !(field && n == 1U && b[i] == '-');
        if (plain) {
            out[pos++] = (char)b[i];
        } else {
            pos += (size_t)sprintf(out + pos, "\\x%02x", (unsigned)b[i]);
        }
    }
    out[pos] = '\0';
}

/* One row ttyd would list, as mode 1 builds it. */
typedef struct fg_made {
    /** sel holds the selector bytes (shown or only hashed). */
    uint8_t sel[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    /** sel_len is the selector's length. */
    size_t sel_len;
    /** shown is whether the row lists the selector. */
    bool shown;
    /** exact is whether the digest is the selector's SHA-256. */
    bool exact;
    /** want holds each field as the parser must give it back. */
    char want[12][4U * PBX_IPC_SELECTOR_LEN_BYTES_MAX + 8U];
    /** entry is the program entry as listed. */
    char entry[4U * PBX_IPC_ENTRY_LEN_BYTES_MAX + 1U];
    /** digest is the digest in lower-case hex. */
    char digest[65];
} fg_made;

static pbx_peer_tty_views views;
static fg_made made;

/* Fills views' row 0 and its context from in (identities, names, times). */
static void fg_make_ids(fg_in *in, pbx_ipc_view *v)
{
    v->grant.index = (uint32_t)fg_take(in, 4);
    v->grant.gen = (uint32_t)fg_take(in, 4);
    v->ctx.operation = (uint16_t)fg_take(in, 1);
    v->ctx.object_class = (uint16_t)fg_take(in, 1);
    v->object.id = fg_take(in, 8);
    v->object.gen = (uint32_t)fg_take(in, 4);
    v->ctx.job_id = fg_take(in, 8);
    v->installed_slot = (uint32_t)fg_take(in, 4);
    v->ctx.job_gen = (uint32_t)fg_take(in, 4);
    v->ctx.lifetime = (uint8_t)fg_take(in, 1);
    views.since_ms[0] = fg_take(in, 8);
    views.request[0].index = (uint32_t)fg_take(in, 4);
    views.request[0].gen = (uint32_t)fg_take(in, 1);
    (void)snprintf(made.want[0], sizeof(made.want[0]), "%u.%u", v->grant.index,
                   v->grant.gen);
    (void)snprintf(
        made.want[1], sizeof(made.want[1]), "%s",
        pbx_peer_name_of(PBX_PEER_NAMES_OPERATION, v->ctx.operation));
    (void)snprintf(made.want[2], sizeof(made.want[2]), "%s",
                   pbx_peer_name_of(PBX_PEER_NAMES_CLASS, v->ctx.object_class));
    (void)snprintf(made.want[3], sizeof(made.want[3]), "%llu.%u",
                   (unsigned long long)v->object.id, v->object.gen);
    (void)snprintf(made.want[4], sizeof(made.want[4]), "%llu",
                   (unsigned long long)v->ctx.job_id);
    (void)snprintf(made.want[5], sizeof(made.want[5]), "%u", v->installed_slot);
    (void)snprintf(made.want[6], sizeof(made.want[6]), "%u", v->ctx.job_gen);
    (void)snprintf(made.want[7], sizeof(made.want[7]), "%s",
                   pbx_peer_name_of(PBX_PEER_NAMES_LIFETIME, v->ctx.lifetime));
    (void)snprintf(made.want[8], sizeof(made.want[8]), "%llu",
                   (unsigned long long)views.since_ms[0]);
    if (views.request[0].gen != 0U) {
        (void)snprintf(made.want[9], sizeof(made.want[9]), "%u.%u",
                       views.request[0].index, views.request[0].gen);
    } else {
        memcpy(made.want[9], "-", 2U);
    }
}

/* Fills the texts of row 0 from in: selector (shown or not), label,
 * entry and digest. */
static void fg_make_texts(fg_in *in, pbx_ipc_view *v)
{
    uint8_t flags = (uint8_t)fg_take(in, 1);
    made.shown = (flags & 1U) != 0U;
    made.exact = (flags & 2U) != 0U;
    size_t want =
        (size_t)fg_take(in, 2) % (PBX_IPC_SELECTOR_LEN_BYTES_MAX + 1U);
    made.sel_len = fg_bytes(in, want, made.sel, false);
    views.selector_len[0] = (uint16_t)(made.shown ? made.sel_len : 0U);
    memcpy(views.selector[0], made.sel, made.sel_len);
    fg_escape(made.sel, views.selector_len[0], true, made.want[10]);
    v->label.len =
        (uint16_t)fg_bytes(in, fg_take(in, 1) % 65U, v->label.bytes, true);
    fg_escape(v->label.bytes, v->label.len, true, made.want[11]);
    size_t elen = 1U + (size_t)fg_take(in, 1) % PBX_IPC_ENTRY_LEN_BYTES_MAX;
    v->ctx.entry.len = (uint16_t)elen;
    memset(v->ctx.entry.bytes, 'e', elen);
    (void)fg_bytes(in, elen, v->ctx.entry.bytes, true);
    fg_escape(v->ctx.entry.bytes, elen, false, made.entry);
    made.exact = made.exact && made.sel_len != 0U;
    if (made.exact) {
        fg_check(pbx_sha2_digest(made.sel, made.sel_len, v->selector_digest) ==
                 PBX_OK);
    } else {
        (void)fg_bytes(in, PBX_IPC_DIGEST_BYTES, v->selector_digest, false);
        /* The input may give the selector's own digest (libFuzzer finds it
         * by the comparison): exact is what the digest is. */
        uint8_t h[PBX_SHA2_DIGEST_BYTES];
        made.exact = made.sel_len != 0U &&
                     pbx_sha2_digest(made.sel, made.sel_len, h) == PBX_OK &&
                     memcmp(h, v->selector_digest, sizeof(h)) == 0;
    }
    for (size_t i = 0; i < PBX_IPC_DIGEST_BYTES; i++) {
        (void)sprintf(made.digest + 2U * i, "%02x",
                      (unsigned)v->selector_digest[i]);
    }
}

/* Escapes the selector as powerboxd's log writes an object= value (%XX
 * for every byte outside 0x21..0x7E and for '%') after "object=". */
static void fg_log_line(char *out, size_t cap)
{
    size_t pos = (size_t)snprintf(out, cap,
                                  "2026-12-06T20:00:00.000Z powerboxd "
                                  "event=decision request=1:1 object=");
    for (size_t i = 0; i < made.sel_len && pos + 4U < cap; i++) {
        uint8_t b = made.sel[i];
        if (b > 0x20U && b <= 0x7EU && b != '%') {
            out[pos++] = (char)b;
        } else {
            pos +=
                (size_t)snprintf(out + pos, cap - pos, "%%%02X", (unsigned)b);
        }
    }
    out[pos] = '\0';
}

static pbx_peer_grants_event event;

/* The object of the row ttyd listed: the prompt's when shown and exact;
 * else, once the log's decision line names the selector (whole, at most
 * PBX_PEER_GRANTS_LOGGED_MAX bytes), the log's; else the digest's. */
static void fg_made_object(const pbx_peer_grants_row *p)
{
    pbx_peer_grants_object o;
    fg_check(pbx_peer_grants_object_init(&o, p));
    const char *from = pbx_peer_grants_object_text(p, &o, text, sizeof(text));
    if (made.shown && made.exact) {
        fg_check(from != NULL && strcmp(from, "prompt") == 0 &&
                 strcmp(text, made.want[10]) == 0);
        return;
    }
    fg_check(from != NULL && strcmp(from, "digest") == 0 &&
             strcmp(text + 7, made.digest) == 0);
    fg_log_line(line, sizeof(line));
    fg_check(pbx_peer_grants_event_parse(line, &event));
    bool found = made.exact && made.sel_len <= PBX_PEER_GRANTS_LOGGED_MAX;
    fg_check(pbx_peer_grants_object_match(&o, 1U, &event) == (found ? 1U : 0U));
    fg_check(o.found == found);
    from = pbx_peer_grants_object_text(p, &o, text, sizeof(text));
    char want[4U * PBX_PEER_GRANTS_LOGGED_MAX + 1U];
    if (found) {
        fg_escape(made.sel, made.sel_len, true, want);
    }
    fg_check(from != NULL && strcmp(from, found ? "log" : "digest") == 0 &&
             strcmp(found ? want : text + 7, found ? text : made.digest) == 0);
}

/* Mode 1: a row ttyd's encoder writes, parsed back field by field. */
static void fg_row_made(const uint8_t *d, size_t n)
{
    fg_in in = {d, n};
    pbx_ipc_view *v = &views.rows[0];
    memset(v, 0, sizeof(*v));
    views.used[0] = true;
    fg_make_ids(&in, v);
    fg_make_texts(&in, v);
    size_t len = pbx_peer_tty_views_row(&views, 0, line, sizeof(line));
    fg_check(len != 0U && len < PBX_PEER_TTY_ROW_BYTES_MAX &&
             line[len - 1U] == '\n');
    fg_check(pbx_peer_grants_row_parse(line, &row) && fg_ref_row(line, &ref));
    fg_check_fields(&row, &ref);
    const char *f[12] = {row.grant, row.op,      row.cls,      row.object,
                         row.job,   row.slot,    row.job_gen,  row.lifetime,
                         NULL,      row.request, row.selector, row.label};
    for (size_t i = 0; i < 12U; i++) {
        fg_check(i == 8U || strcmp(f[i], made.want[i]) == 0);
    }
    fg_check(row.since_ms == views.since_ms[0]);
    fg_check(strcmp(row.program, made.entry) == 0 &&
             strcmp(row.digest, made.digest) == 0);
    fg_made_object(&row);
}

/* The harness's own split of a log line (see pbx_peer_grants.h). */
typedef struct fg_ref_ev {
    /** text is the line, cut at its bound and its first CR or LF, with
     * every blank and each pair's first '=' turned into NUL. */
    char text[PBX_PEER_GRANTS_LINE_MAX];
    /** time is the stamp or "". */
    const char *time;
    /** count is the number of pairs. */
    size_t count;
    /** keys are the pairs' keys. */
    const char *keys[PBX_PEER_GRANTS_KEYS_MAX];
    /** values are the pairs' values. */
    const char *values[PBX_PEER_GRANTS_KEYS_MAX];
} fg_ref_ev;

static fg_ref_ev ref_ev;

/* Splits text[from..n) into blank-separated words, every word with an
 * '=' a pair, at most PBX_PEER_GRANTS_KEYS_MAX pairs. */
static void fg_ref_pairs(fg_ref_ev *r, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++) {
        if (r->text[i] == ' ') {
            r->text[i] = '\0';
        }
    }
    r->count = 0;
    size_t i = from;
    while (i < n && r->count < PBX_PEER_GRANTS_KEYS_MAX) {
        while (i < n && r->text[i] == '\0') {
            i++;
        }
        char *w = r->text + i;
        i += strlen(w);
        char *eq = strchr(w, '=');
        if (*w != '\0' && eq != NULL) {
            *eq = '\0';
            r->keys[r->count] = w;
            r->values[r->count++] = eq + 1;
        }
    }
}

/* The harness's reading of an event line: cut at 8191 bytes and at its
 * first CR or LF; the pairs start at "event=" opening the line or after
 * a blank; the line's first word before them is its time when it starts
 * with a digit. False when there is no "event=". */
static bool fg_ref_event(const char *in, fg_ref_ev *r)
{
    size_t n = strnlen(in, sizeof(r->text) - 1U);
    n = strcspn(in, "\r\n") < n ? strcspn(in, "\r\n") : n;
    memcpy(r->text, in, n);
    r->text[n] = '\0';
    size_t ev = 0;
    while (ev < n && !(memcmp(r->text + ev, "event=", 6U) == 0 &&
                       (ev == 0U || r->text[ev - 1U] == ' '))) {
        ev++;
    }
    if (ev >= n || n - ev < 6U) {
        return false;
    }
    r->time = "";
    size_t t = 0;
    while (t + 1U < ev && r->text[t] == ' ') {
        t++;
    }
    if (ev != 0U && r->text[t] >= '0' && r->text[t] <= '9') {
        size_t e = t;
        while (e < ev - 1U && r->text[e] != ' ') {
            e++;
        }
        r->text[e] = '\0';
        r->time = r->text + t;
    }
    fg_ref_pairs(r, ev, n);
    return true;
}

/* The harness's reading of pbx_peer_grants_ended: the phrase and actor
 * for the end value and reason; user is whether the grant's user cancel
 * was noted. */
static const char *fg_ref_ended(const char *end, const char *reason, bool user,
                                const char **by)
{
    *by = "-";
    if (strcmp(end, "consumed") == 0) {
        *by = "program";
        return "consumed by the program";
    }
    if (strcmp(end, "expired") == 0) {
        *by = "launchd";
        return "expired (its job or invocation ended)";
    }
    if (strcmp(end, "cancelled") == 0) {
        *by = user ? "user" : "program";
        return user ? "cancelled by the user" : "cancelled by the program";
    }
    if (strcmp(end, "revoked") != 0 && strcmp(end, "lost") != 0) {
        return "ended";
    }
    bool vfsd = strstr(reason, "provider") || strstr(reason, "vfsd");
    bool procd = strstr(reason, "installer") || strstr(reason, "procd");
    *by = vfsd ? "vfsd-lost" : procd ? "procd-lost" : "powerboxd";
    return vfsd    ? "revoked: its provider (vfsd) was lost"
           : procd ? "revoked: its installer (procd) was lost"
                   : "revoked";
}

/* The value of key in r's pairs, or "-". */
static const char *fg_ref_get(const fg_ref_ev *r, const char *key)
{
    for (size_t i = 0; i < r->count; i++) {
        if (strcmp(r->keys[i], key) == 0) {
            return r->values[i];
        }
    }
    return "-";
}

static pbx_peer_grants_audit audit;
static char grants_seen[3][24];

/* Judges the parsed event against the reference: its end and the `pbx
 * log` line in a cap-byte buffer and in a whole one. */
static void fg_judge(size_t seen, size_t cap)
{
    const char *by = NULL;
    const char *how = pbx_peer_grants_ended(&audit, &event, &by);
    const char *g = fg_ref_get(&ref_ev, "grant");
    bool user = false;
    for (size_t i = 0; i < seen; i++) {
        user = user || strcmp(grants_seen[i], g) == 0;
    }
    const char *rby = NULL;
    const char *rhow = fg_ref_ended(fg_ref_get(&ref_ev, "end"),
                                    fg_ref_get(&ref_ev, "reason"), user, &rby);
    bool end = strcmp(fg_ref_get(&ref_ev, "event"), "grant-end") == 0;
    fg_check(end ? how != NULL && strcmp(how, rhow) == 0 && strcmp(by, rby) == 0
                 : how == NULL && strcmp(by, "-") == 0);
    cap = cap < sizeof(text) ? cap : sizeof(text);
    memset(text, 'Z', cap < sizeof(text) ? cap + 1U : sizeof(text));
    bool ok =
        pbx_peer_grants_end_line(&audit, &event, (cap & 1U) != 0U, text, cap);
    fg_check(ok == (end && cap != 0U));
    fg_check(cap == 0U || strlen(text) < cap);
    if (!end ||
        !pbx_peer_grants_end_line(&audit, &event, false, text, sizeof(text))) {
        fg_check(!end);
        return;
    }
    size_t tl = strlen(text);
    size_t hl = strlen(rhow);
    fg_check(tl > hl + 2U && strcmp(text + tl - hl, rhow) == 0);
}

/* Mode 2: up to three log lines (split at NUL bytes): each parsed and
 * noted, then each judged. cap is the end line's buffer. */
static void fg_log(const uint8_t *d, size_t n, size_t cap)
{
    static uint8_t lines[3][PBX_PEER_GRANTS_LINE_MAX + 64U];
    size_t lens[3] = {0, 0, 0};
    size_t k = 0;
    for (size_t i = 0; i < n && k < 3U; i++) {
        if (d[i] == 0U) {
            k++;
        } else if (lens[k] < sizeof(lines[0]) - 1U) {
            lines[k][lens[k]++] = d[i];
        }
    }
    pbx_peer_grants_audit_init(&audit);
    size_t seen = 0;
    for (size_t i = 0; i < 3U; i++) {
        fg_line(lines[i], lens[i]);
        bool ok = pbx_peer_grants_event_parse(line, &event);
        fg_check(ok == fg_ref_event(line, &ref_ev));
        if (!ok) {
            continue;
        }
        fg_check(event.count == ref_ev.count &&
                 strcmp(event.time, ref_ev.time) == 0);
        for (size_t j = 0; j < event.count; j++) {
            fg_check(strcmp(event.keys[j], ref_ev.keys[j]) == 0 &&
                     strcmp(event.values[j], ref_ev.values[j]) == 0);
        }
        const char *g = fg_ref_get(&ref_ev, "grant");
        if (strcmp(fg_ref_get(&ref_ev, "event"), "user-cancel") == 0 &&
            strcmp(g, "-") != 0 && strlen(g) < 24U) {
            memcpy(grants_seen[seen++], g, strlen(g) + 1U);
        }
        pbx_peer_grants_audit_note(&audit, &event);
    }
    for (size_t i = 0; i < 3U; i++) {
        fg_line(lines[i], lens[i]);
        if (pbx_peer_grants_event_parse(line, &event) &&
            fg_ref_event(line, &ref_ev)) {
            fg_judge(seen, cap);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2U) {
        return 0;
    }
    /* Byte 1 sizes the output buffers of modes 0 and 2 (0 to 255 bytes,
     * 255 meaning a whole one). */
    size_t cap = data[1] == 255U ? sizeof(text) : data[1];
    if (data[0] % 3U == 0U) {
        fg_row_any(data + 2, size - 2U, cap);
    } else if (data[0] % 3U == 1U) {
        fg_row_made(data + 2, size - 2U);
    } else {
        fg_log(data + 2, size - 2U, cap);
    }
    return 0;
}
