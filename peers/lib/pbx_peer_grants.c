/*
 * pbx_peer_grants.c: ttyd's rows split and the stack log's grant ends
 * judged, for `pbx grants` and `pbx log`. Pure text work on caller
 * buffers; every loop is bounded by the buffer it walks.
 */
#include "peers/lib/pbx_peer_grants.h"

#include "peers/lib/pbx_peer.h"

#include <string.h>

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
    if (kw == NULL || strcmp(kw, "program") != 0 || *p == '\0') {
        return false;
    }
    /* The entry is the rest of the line: it may hold blanks. */
    out->program = p;
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
    if (strcmp(end, "revoked") != 0) {
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
