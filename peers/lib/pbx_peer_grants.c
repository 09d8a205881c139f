/*
 * pbx_peer_grants.c: ttyd's rows split and the stack log's grant ends
 * judged, for `pbx grants` and `pbx log`. Pure text work on caller
 * buffers; every loop is bounded by the buffer it walks.
 */
#include "peers/lib/pbx_peer_grants.h"

#include "peers/lib/pbx_peer.h"
#include "sha2/pbx_sha2.h"

#include <stdio.h>
#include <string.h>

/* " digest " and 64 hex digits: the end of every row. */
#define GRANTS_DIGEST_HEX  64U
#define GRANTS_DIGEST_TAIL (8U + GRANTS_DIGEST_HEX)
_Static_assert(GRANTS_DIGEST_HEX == 2U * PBX_IPC_DIGEST_BYTES,
               "two hex digits per digest byte");

/* The next blank-separated word of *p (NUL-terminated in place), or NULL
 * at the end; *p moves past it. */
static char *grants_word(char **p)
{
    char *s = *p;
    while (*s == ' ') {
        s++;
    }
    if (*s == '\0') {
        return NULL;
    }
    char *w = s;
    while (*s != '\0' && *s != ' ') {
        s++;
    }
    if (*s == ' ') {
        *s++ = '\0';
    }
    *p = s;
    return w;
}

/* Reads the word after keyword key into *v; false when key is not next. */
static bool grants_keyed(char **p, const char *key, const char **v)
{
    const char *k = grants_word(p);
    *v = k != NULL && strcmp(k, key) == 0 ? grants_word(p) : NULL;
    return *v != NULL;
}

/* The value of one hex digit, or -1. */
static int grants_hex_digit(char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* Decodes the two hex digits at s into *b; false when they are not. */
static bool grants_hex_byte(const char *s, uint8_t *b)
{
    int hi = grants_hex_digit(s[0]);
    int lo = hi >= 0 ? grants_hex_digit(s[1]) : -1;
    *b = (uint8_t)(hi >= 0 && lo >= 0 ? (hi << 4) | lo : 0);
    return hi >= 0 && lo >= 0;
}

bool pbx_peer_grants_row_parse(const char *line, pbx_peer_grants_row *out)
{
    size_t n = strlen(line);
    while (n != 0U && (line[n - 1U] == '\n' || line[n - 1U] == '\r')) {
        n--;
    }
    if (n >= sizeof(out->buf)) {
        return false;
    }
    memcpy(out->buf, line, n);
    out->buf[n] = '\0';
    char *p = out->buf;
    const char *since = NULL;
    bool ok = grants_keyed(&p, "grant", &out->grant) &&
              (out->op = grants_word(&p)) != NULL &&
              (out->cls = grants_word(&p)) != NULL &&
              grants_keyed(&p, "object", &out->object) &&
              grants_keyed(&p, "job", &out->job) &&
              grants_keyed(&p, "slot", &out->slot) &&
              grants_keyed(&p, "job-gen", &out->job_gen) &&
              grants_keyed(&p, "lifetime", &out->lifetime) &&
              grants_keyed(&p, "since", &since) &&
              grants_keyed(&p, "request", &out->request) &&
              grants_keyed(&p, "selector", &out->selector) &&
              grants_keyed(&p, "label", &out->label);
    const char *kw = ok ? grants_word(&p) : NULL;
    size_t rest = kw != NULL ? strlen(p) : 0U;
    if (kw == NULL || strcmp(kw, "program") != 0 ||
        rest <= GRANTS_DIGEST_TAIL ||
        strncmp(p + rest - GRANTS_DIGEST_TAIL, " digest ", 8) != 0) {
        return false;
    }
    /* The entry is the rest of the line up to the digest, which ttyd
     * appends last: the entry may hold blanks, the digest never does. */
    p[rest - GRANTS_DIGEST_TAIL] = '\0';
    out->program = p;
    out->digest = p + rest - GRANTS_DIGEST_HEX;
    for (size_t i = 0; i < GRANTS_DIGEST_HEX; i++) {
        if (grants_hex_digit(out->digest[i]) < 0) {
            return false;
        }
    }
    return pbx_peer_parse_u64(since, UINT64_MAX, &out->since_ms);
}

bool pbx_peer_grants_event_parse(const char *line, pbx_peer_grants_event *out)
{
    size_t n = strlen(line);
    n = n < sizeof(out->buf) - 1U ? n : sizeof(out->buf) - 1U;
    memcpy(out->buf, line, n);
    out->buf[n] = '\0';
    char *nl = strpbrk(out->buf, "\r\n");
    if (nl != NULL) {
        *nl = '\0';
    }
    char *ev = strncmp(out->buf, "event=", 6) == 0
                   ? out->buf
                   : strstr(out->buf, " event=");
    if (ev == NULL) {
        return false;
    }
    out->time = "";
    if (ev != out->buf) {
        *ev++ = '\0';
        char *t = out->buf;
        const char *first = grants_word(&t);
        /* A supervisor stamp starts with a digit (RFC 3339). */
        out->time =
            first != NULL && first[0] >= '0' && first[0] <= '9' ? first : "";
    }
    out->count = 0;
    for (char *w = grants_word(&ev);
         w != NULL && out->count < PBX_PEER_GRANTS_KEYS_MAX;
         w = grants_word(&ev)) {
        char *eq = strchr(w, '=');
        if (eq == NULL) {
            continue;
        }
        *eq = '\0';
        out->keys[out->count] = w;
        out->values[out->count++] = eq + 1;
    }
    return out->count != 0U && strcmp(out->keys[0], "event") == 0;
}

const char *pbx_peer_grants_get(const pbx_peer_grants_event *e, const char *key)
{
    for (size_t i = 0; i < e->count && i < PBX_PEER_GRANTS_KEYS_MAX; i++) {
        if (strcmp(e->keys[i], key) == 0) {
            return e->values[i];
        }
    }
    return "-";
}

void pbx_peer_grants_audit_init(pbx_peer_grants_audit *a)
{
    memset(a, 0, sizeof(*a));
}

void pbx_peer_grants_audit_note(pbx_peer_grants_audit *a,
                                const pbx_peer_grants_event *e)
{
    const char *g = pbx_peer_grants_get(e, "grant");
    if (strcmp(pbx_peer_grants_get(e, "event"), "user-cancel") != 0 ||
        strcmp(g, "-") == 0 || strlen(g) >= sizeof(a->grants[0])) {
        return;
    }
    char *slot = a->grants[a->count % PBX_PEER_GRANTS_USER_MAX];
    memcpy(slot, g, strlen(g) + 1U);
    a->count++;
}

/* Whether the user cancel of grant g was noted. */
static bool grants_user_cancelled(const pbx_peer_grants_audit *a, const char *g)
{
    for (size_t i = 0; i < a->count && i < PBX_PEER_GRANTS_USER_MAX; i++) {
        if (strcmp(a->grants[i], g) == 0) {
            return true;
        }
    }
    return false;
}

const char *pbx_peer_grants_ended(const pbx_peer_grants_audit *a,
                                  const pbx_peer_grants_event *e,
                                  const char **by)
{
    *by = "-";
    if (strcmp(pbx_peer_grants_get(e, "event"), "grant-end") != 0) {
        return NULL;
    }
    const char *end = pbx_peer_grants_get(e, "end");
    const char *reason = pbx_peer_grants_get(e, "reason");
    if (strcmp(end, "consumed") == 0) {
        *by = "program";
        return "consumed by the program";
    }
    if (strcmp(end, "expired") == 0) {
        *by = "launchd";
        return "expired (its job or invocation ended)";
    }
    if (strcmp(end, "cancelled") == 0) {
        bool user = grants_user_cancelled(a, pbx_peer_grants_get(e, "grant"));
        *by = user ? "user" : "program";
        return user ? "cancelled by the user" : "cancelled by the program";
    }
    /* powerboxd logs a grant its provider's or installer's loss ended as
     * end=lost (pbx_core_inspect.c); "revoked" is the older word. */
    if (strcmp(end, "revoked") != 0 && strcmp(end, "lost") != 0) {
        return "ended";
    }
    if (strstr(reason, "provider") != NULL || strstr(reason, "vfsd") != NULL) {
        *by = "vfsd-lost";
        return "revoked: its provider (vfsd) was lost";
    }
    if (strstr(reason, "installer") != NULL ||
        strstr(reason, "procd") != NULL) {
        *by = "procd-lost";
        return "revoked: its installer (procd) was lost";
    }
    *by = "powerboxd";
    return "revoked";
}

/* Unescapes v into out (cap bytes) and stores the length in *len: with
 * lead '%' every "%XX" (powerboxd's log), with lead '\\' every "\xNN"
 * (ttyd's rows) is one byte, any other byte itself. False on a bad
 * escape or more than cap bytes. */
static bool grants_unescape(const char *v, char lead, uint8_t *out, size_t cap,
                            size_t *len)
{
    size_t n = 0;
    size_t skip = lead == '%' ? 1U : 2U;
    for (size_t i = 0; v[i] != '\0'; i++) {
        if (n == cap) {
            return false;
        }
        if (v[i] != lead) {
            out[n++] = (uint8_t)v[i];
            continue;
        }
        if ((lead == '\\' && v[i + 1U] != 'x') ||
            !grants_hex_byte(v + i + skip, &out[n])) {
            return false;
        }
        n++;
        i += skip + 1U;
    }
    *len = n;
    return true;
}

bool pbx_peer_grants_object_init(pbx_peer_grants_object *o,
                                 const pbx_peer_grants_row *r)
{
    memset(o, 0, sizeof(*o));
    if (strlen(r->digest) != GRANTS_DIGEST_HEX) {
        return false;
    }
    for (size_t i = 0; i < PBX_IPC_DIGEST_BYTES; i++) {
        if (!grants_hex_byte(r->digest + 2U * i, &o->digest[i])) {
            return false;
        }
    }
    return true;
}

/* The value of key in e, or NULL when e has none. */
static const char *grants_find(const pbx_peer_grants_event *e, const char *key)
{
    for (size_t i = 0; i < e->count && i < PBX_PEER_GRANTS_KEYS_MAX; i++) {
        if (strcmp(e->keys[i], key) == 0) {
            return e->values[i];
        }
    }
    return NULL;
}

size_t pbx_peer_grants_object_match(pbx_peer_grants_object *objs, size_t n,
                                    const pbx_peer_grants_event *e)
{
    const char *v = grants_find(e, "object");
    uint8_t sel[PBX_PEER_GRANTS_LOGGED_MAX];
    size_t len = 0;
    uint8_t d[PBX_SHA2_DIGEST_BYTES];
    if (strcmp(pbx_peer_grants_get(e, "event"), "decision") != 0 || v == NULL ||
        !grants_unescape(v, '%', sel, sizeof(sel), &len) || len == 0U ||
        pbx_sha2_digest(sel, len, d) != PBX_OK) {
        return 0U;
    }
    size_t filled = 0;
    for (size_t i = 0; i < n; i++) {
        pbx_peer_grants_object *o = &objs[i];
        if (o->found || memcmp(o->digest, d, sizeof(d)) != 0) {
            continue;
        }
        o->found = true;
        o->len = (uint16_t)len;
        memcpy(o->selector, sel, len);
        filled++;
    }
    return filled;
}

/* Whether row r's shown selector (escaped, "-" for none) hashes to d. */
static bool grants_prompt_exact(const pbx_peer_grants_row *r,
                                const uint8_t d[PBX_IPC_DIGEST_BYTES])
{
    uint8_t sel[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    size_t len = 0;
    uint8_t got[PBX_SHA2_DIGEST_BYTES];
    return strcmp(r->selector, "-") != 0 &&
           grants_unescape(r->selector, '\\', sel, sizeof(sel), &len) &&
           len != 0U && pbx_sha2_digest(sel, len, got) == PBX_OK &&
           memcmp(got, d, sizeof(got)) == 0;
}

/* Writes b[0..n) escaped as ttyd escapes a selector (every byte outside
 * 0x21..0x7E, and backslash, as \xNN; a lone "-" as \x2d) into out. */
static bool grants_escape(const uint8_t *b, size_t n, char *out, size_t cap)
{
    size_t pos = 0;
    for (size_t i = 0; i < n; i++) {
        bool plain = b[i] > 0x20U && b[i] <= 0x7EU && b[i] != '\\' &&
                     !(n == 1U && b[i] == '-');
        if (pos + 5U > cap) {
            return false;
        }
        if (plain) {
            out[pos++] = (char)b[i];
        } else {
            (void)snprintf(out + pos, cap - pos, "\\x%02x", (unsigned)b[i]);
            pos += 4U;
        }
    }
    out[pos] = '\0';
    return true;
}

const char *pbx_peer_grants_object_text(const pbx_peer_grants_row *r,
                                        const pbx_peer_grants_object *o,
                                        char *out, size_t cap)
{
    size_t n = strlen(r->selector);
    if (cap == 0U) {
        return NULL;
    }
    out[0] = '\0';
    if (grants_prompt_exact(r, o->digest) && n < cap) {
        memcpy(out, r->selector, n + 1U);
        return "prompt";
    }
    if (o->found) {
        return grants_escape(o->selector, o->len, out, cap) ? "log" : NULL;
    }
    if (cap < 8U + GRANTS_DIGEST_HEX) {
        return NULL;
    }
    static const char hex[] = "0123456789abcdef";
    memcpy(out, "sha256:", 7);
    for (size_t i = 0; i < PBX_IPC_DIGEST_BYTES; i++) {
        out[7U + 2U * i] = hex[o->digest[i] >> 4];
        out[8U + 2U * i] = hex[o->digest[i] & 0x0FU];
    }
    out[7U + GRANTS_DIGEST_HEX] = '\0';
    return "digest";
}

bool pbx_peer_grants_end_line(const pbx_peer_grants_audit *a,
                              const pbx_peer_grants_event *e, bool kv,
                              char *out, size_t cap)
{
    const char *by = "-";
    const char *how = pbx_peer_grants_ended(a, e, &by);
    if (cap != 0U) {
        out[0] = '\0';
    }
    if (how == NULL || cap == 0U) {
        return false;
    }
    const char *t = e->time[0] != '\0' ? e->time : "-";
    const char *g = pbx_peer_grants_get(e, "grant");
    const char *job = pbx_peer_grants_get(e, "job");
    const char *entry = pbx_peer_grants_get(e, "entry");
    const char *op = pbx_peer_grants_get(e, "op");
    const char *obj = pbx_peer_grants_get(e, "object");
    const char *lt = pbx_peer_grants_get(e, "lifetime");
    if (kv) {
        (void)snprintf(out, cap,
                       "time=%s grant=%s request=%s job=%s entry=%s op=%s "
                       "object=%s lifetime=%s end=%s by=%s reason=%s",
                       t, g, pbx_peer_grants_get(e, "request"), job, entry, op,
                       obj, lt, pbx_peer_grants_get(e, "end"), by,
                       pbx_peer_grants_get(e, "reason"));
    } else {
        /* The log writes I:G; the human line uses I.G, the form pbx
         * grants shows and pbx cancel takes. */
        char gid[64];
        (void)snprintf(gid, sizeof(gid), "%s", g);
        char *colon = strchr(gid, ':');
        if (colon != NULL) {
            *colon = '.';
        }
        (void)snprintf(out, cap, "%s grant %s (%s, job %s, %s %s, %s): %s", t,
                       gid, entry, job, op, obj, lt, how);
    }
    return true;
}
