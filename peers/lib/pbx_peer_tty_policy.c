/*
 * pbx_peer_tty_policy.c: ttyd's policy table: the rule line parser (the
 * old 6-field form and the 8-field form with a program entry and a
 * selector pattern), the bounded glob matcher and the decisions for a
 * POLICY call, a PROMPT call and `pbx policy check`. Pure: nothing is read
 * or written but the caller's buffers.
 */
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_tty.h"

#include <stdio.h>
#include <string.h>

/* The most fields a line may have (the 8-field form). */
#define TTY_FIELDS_MAX 8U

/* Splits line into at most TTY_FIELDS_MAX + 1 blank-separated fields in
 * buf (one more than allowed, so that too many is seen). */
static size_t tty_split(const char *line, char *buf, size_t buf_len,
                        char *fields[TTY_FIELDS_MAX + 1U])
{
    size_t n = strlen(line);
    n = n < buf_len - 1U ? n : buf_len - 1U;
    memcpy(buf, line, n);
    buf[n] = '\0';
    char *hash = strchr(buf, '#');
    if (hash != NULL) {
        *hash = '\0';
    }
    size_t count = 0;
    char *save = NULL;
    for (char *t = strtok_r(buf, " \t\r\n", &save);
         t != NULL && count <= TTY_FIELDS_MAX;
         t = strtok_r(NULL, " \t\r\n", &save)) {
        fields[count++] = t;
    }
    return count;
}

/* Parses "*" or a name of kind or a number into *v (0 means any). */
static bool tty_field(const char *s, pbx_peer_name_kind kind, uint32_t *v)
{
    uint64_t n = 0;
    if (strcmp(s, "*") == 0) {
        *v = PBX_PEER_TTY_ANY;
        return true;
    }
    if (pbx_peer_name_parse(kind, s, v)) {
        return true;
    }
    if (pbx_peer_parse_u64(s, 0xFFFFU, &n) && n != 0U) {
        *v = (uint32_t)n;
        return true;
    }
    return false;
}

/* Checks pattern s and copies it into out ("" for "*"); false when it is
 * too long, holds a byte outside 0x21..0x7E, or has "**" anywhere but as
 * the whole last component. */
static bool tty_pattern(const char *s, char out[PBX_PEER_TTY_PATTERN_MAX])
{
    size_t n = strlen(s);
    if (n >= PBX_PEER_TTY_PATTERN_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x21 || s[i] > 0x7E) {
            return false;
        }
    }
    const char *dd = strstr(s, "**");
    if (dd != NULL) {
        bool whole_last = (dd == s || dd[-1] == '/') && dd[2] == '\0';
        if (!whole_last) {
            return false;
        }
    }
    out[0] = '\0';
    if (strcmp(s, "*") != 0) {
        memcpy(out, s, n + 1U);
    }
    return true;
}

/* Parses SESSION and REALM (f[0], f[1]) into r; NULL or the message. */
static const char *tty_session_realm(char *const *f, pbx_peer_tty_rule *r)
{
    uint64_t num = 0;
    r->any_session = strcmp(f[0], "*") == 0;
    r->any_realm = strcmp(f[1], "*") == 0;
    if (!r->any_session && !pbx_peer_parse_u64(f[0], UINT64_MAX, &r->session)) {
        return "SESSION must be a number or *";
    }
    if (!r->any_realm && !pbx_peer_parse_u64(f[1], UINT32_MAX, &num)) {
        return "REALM must be a number or *";
    }
    r->realm = (uint32_t)num;
    return NULL;
}

/* Parses the fields of one rule (n of them: 6 or 8) into r; NULL or the
 * message naming what is wrong. */
static const char *tty_rule_parse(char *const *f, size_t n,
                                  pbx_peer_tty_rule *r)
{
    uint32_t op = 0;
    uint32_t cls = 0;
    uint32_t urg = 0;
    uint32_t verdict = 0;
    const char *bad = tty_session_realm(f, r);
    if (bad != NULL) {
        return bad;
    }
    if (!tty_field(f[2], PBX_PEER_NAMES_OPERATION, &op) ||
        !tty_field(f[3], PBX_PEER_NAMES_CLASS, &cls) ||
        !tty_field(f[4], PBX_PEER_NAMES_URGENCY, &urg)) {
        return "unknown OPERATION, CLASS or URGENCY";
    }
    if (n == TTY_FIELDS_MAX &&
        (!tty_pattern(f[5], r->entry) || !tty_pattern(f[6], r->selector))) {
        return "ENTRY and SELECTOR must be * or a pattern of printable "
               "bytes without blanks (** only as a whole last component)";
    }
    if (!pbx_peer_name_parse(PBX_PEER_NAMES_VERDICT, f[n - 1U], &verdict)) {
        return "VERDICT must be allow, deny or prompt";
    }
    if (verdict == PBX_IPC_VERDICT_ALLOW && urg != PBX_IPC_URGENCY_ROUTINE) {
        return "allow needs urgency routine: exceptional requests are "
               "deny-or-prompt only";
    }
    r->operation = (uint16_t)op;
    r->object_class = (uint16_t)cls;
    r->urgency = (uint8_t)urg;
    r->verdict = (uint8_t)verdict;
    return NULL;
}

const char *pbx_peer_tty_policy_line(pbx_peer_tty_policy *p, const char *line)
{
    char buf[512];
    char *f[TTY_FIELDS_MAX + 1U];
    size_t n = tty_split(line, buf, sizeof(buf), f);
    if (n == 0U) {
        return NULL;
    }
    if (n != 6U && n != TTY_FIELDS_MAX) {
        return "need 6 fields (SESSION REALM OPERATION CLASS URGENCY "
               "VERDICT) or 8 (SESSION REALM OPERATION CLASS URGENCY "
               "ENTRY SELECTOR VERDICT)";
    }
    pbx_peer_tty_rule r;
    memset(&r, 0, sizeof(r));
    const char *bad = tty_rule_parse(f, n, &r);
    if (bad != NULL) {
        return bad;
    }
    if (p->count >= PBX_PEER_TTY_RULES_MAX) {
        return "too many rules";
    }
    p->rules[p->count++] = r;
    return NULL;
}

/* Matches one component: pattern pc (pn bytes, no '/') against text tc (tn
 * bytes, no '/'). The one-star backtracking walk: on a mismatch after a
 * '*', that star takes one more byte; each step advances t or the star's
 * restart point, so fewer than 2 * (pn + 1) * (tn + 1) steps are taken. */
static bool tty_glob_part(const char *pc, size_t pn, const uint8_t *tc,
                          size_t tn)
{
    size_t pi = 0;
    size_t ti = 0;
    size_t star = SIZE_MAX;
    size_t star_t = 0;
    for (size_t step = 0; step <= 2U * (pn + 1U) * (tn + 1U) && ti < tn;
         step++) {
        if (pi < pn && (pc[pi] == '?' || (uint8_t)pc[pi] == tc[ti])) {
            pi++;
            ti++;
        } else if (pi < pn && pc[pi] == '*') {
            star = pi++;
            star_t = ti;
        } else if (star != SIZE_MAX) {
            pi = star + 1U;
            ti = ++star_t;
        } else {
            return false;
        }
    }
    while (pi < pn && pc[pi] == '*') {
        pi++;
    }
    return ti == tn && pi == pn;
}

/* The length of the component starting at s (n bytes left): up to '/'. */
static size_t tty_part_len(const uint8_t *s, size_t n)
{
    if (n == 0U) {
        return 0U;
    }
    const uint8_t *slash = memchr(s, '/', n);
    return slash != NULL ? (size_t)(slash - s) : n;
}

bool pbx_peer_tty_glob(const char *pattern, const uint8_t *text, size_t len)
{
    /* No text (a prompt without a selector) is the empty text. */
    static const uint8_t none[1] = {0};
    if (text == NULL) {
        text = none;
        len = 0U;
    }
    size_t pn = strlen(pattern);
    size_t pi = 0;
    size_t ti = 0;
    /* Each round consumes one component of each (or ends). */
    for (size_t round = 0; round <= pn + len + 1U; round++) {
        size_t pl = tty_part_len((const uint8_t *)pattern + pi, pn - pi);
        if (pl == 2U && pi + 2U == pn && memcmp(pattern + pi, "**", 2) == 0) {
            return ti < len;
        }
        size_t tl = tty_part_len(text + ti, len - ti);
        if (!tty_glob_part(pattern + pi, pl, text + ti, tl)) {
            return false;
        }
        pi += pl;
        ti += tl;
        bool p_end = pi == pn;
        bool t_end = ti == len;
        if (p_end || t_end) {
            return p_end && t_end;
        }
        /* Both stand on a '/': step over it together. */
        pi++;
        ti++;
    }
    return false;
}

/* Reports whether r matches ctx in every field but the selector. */
static bool tty_match(const pbx_peer_tty_rule *r, const pbx_ipc_context *ctx)
{
    return (r->any_session || r->session == ctx->session) &&
           (r->any_realm || r->realm == ctx->realm) &&
           (r->operation == PBX_PEER_TTY_ANY ||
            r->operation == ctx->operation) &&
           (r->object_class == PBX_PEER_TTY_ANY ||
            r->object_class == ctx->object_class) &&
           (r->urgency == PBX_PEER_TTY_ANY || r->urgency == ctx->urgency) &&
           (r->entry[0] == '\0' ||
            pbx_peer_tty_glob(r->entry, ctx->entry.bytes,
                              ctx->entry.len <= PBX_IPC_ENTRY_LEN_BYTES_MAX
                                  ? ctx->entry.len
                                  : PBX_IPC_ENTRY_LEN_BYTES_MAX));
}

/* Never ALLOW for an exceptional request (the second line of defence:
 * the parser already refuses such a rule). */
static uint8_t tty_clamp(uint8_t v, const pbx_ipc_context *ctx)
{
    if (v == PBX_IPC_VERDICT_ALLOW && ctx->urgency != PBX_IPC_URGENCY_ROUTINE) {
        return PBX_IPC_VERDICT_DENY;
    }
    return v;
}

/* The first rule matching ctx but for the selector, or p->count. */
static size_t tty_first(const pbx_peer_tty_policy *p,
                        const pbx_ipc_context *ctx)
{
    for (size_t i = 0; i < p->count && i < PBX_PEER_TTY_RULES_MAX; i++) {
        if (tty_match(&p->rules[i], ctx)) {
            return i;
        }
    }
    return p->count;
}

uint8_t pbx_peer_tty_decide(const pbx_peer_tty_policy *p,
                            const pbx_ipc_context *ctx)
{
    size_t i = tty_first(p, ctx);
    if (i >= p->count) {
        return PBX_IPC_VERDICT_DENY;
    }
    if (p->rules[i].selector[0] != '\0') {
        return PBX_IPC_VERDICT_PROMPT;
    }
    return tty_clamp(p->rules[i].verdict, ctx);
}

uint8_t pbx_peer_tty_decide_selector(const pbx_peer_tty_policy *p,
                                     const pbx_ipc_context *ctx,
                                     const uint8_t *sel, size_t len,
                                     size_t *rule)
{
    size_t i = 0;
    for (; i < p->count && i < PBX_PEER_TTY_RULES_MAX; i++) {
        const pbx_peer_tty_rule *r = &p->rules[i];
        if (tty_match(r, ctx) && (r->selector[0] == '\0' ||
                                  pbx_peer_tty_glob(r->selector, sel, len))) {
            break;
        }
    }
    if (rule != NULL) {
        *rule = i < p->count ? i : p->count;
    }
    if (i >= p->count) {
        return PBX_IPC_VERDICT_DENY;
    }
    return tty_clamp(p->rules[i].verdict, ctx);
}

uint8_t pbx_peer_tty_decide_prompt(const pbx_peer_tty_policy *p,
                                   const pbx_ipc_prompt *pr)
{
    size_t i = tty_first(p, &pr->ctx);
    if (i >= p->count || p->rules[i].selector[0] == '\0') {
        return PBX_IPC_VERDICT_PROMPT;
    }
    size_t len = pr->selector != NULL ? pr->selector_len : 0U;
    return pbx_peer_tty_decide_selector(p, &pr->ctx, pr->selector, len, NULL);
}

/* Writes the number v, or "*" when any. */
static void tty_num_text(bool any, uint64_t v, char *out, size_t out_len)
{
    if (any) {
        (void)snprintf(out, out_len, "*");
    } else {
        (void)snprintf(out, out_len, "%llu", (unsigned long long)v);
    }
}

/* Writes the name of v of kind, "*" for any, or the number itself when
 * v has no name (the parser takes numbers too, so the text parses back
 * to the same rule: fuzz/fuzz_tty.c found "?" written for operation 21). */
static const char *tty_name_text(pbx_peer_name_kind kind, uint32_t v, char *buf,
                                 size_t len)
{
    const char *name = pbx_peer_name_of(kind, v);
    if (v == PBX_PEER_TTY_ANY) {
        return "*";
    }
    if (strcmp(name, "?") == 0) {
        (void)snprintf(buf, len, "%u", (unsigned)v);
        return buf;
    }
    return name;
}

size_t pbx_peer_tty_rule_text(const pbx_peer_tty_rule *r, char *out,
                              size_t out_len)
{
    char session[24];
    char realm[24];
    char num[3][12];
    tty_num_text(r->any_session, r->session, session, sizeof(session));
    tty_num_text(r->any_realm, r->realm, realm, sizeof(realm));
    int n = snprintf(out, out_len, "%s %s %s %s %s %s %s %s", session, realm,
                     tty_name_text(PBX_PEER_NAMES_OPERATION, r->operation,
                                   num[0], sizeof(num[0])),
                     tty_name_text(PBX_PEER_NAMES_CLASS, r->object_class,
                                   num[1], sizeof(num[1])),
                     tty_name_text(PBX_PEER_NAMES_URGENCY, r->urgency, num[2],
                                   sizeof(num[2])),
                     r->entry[0] != '\0' ? r->entry : "*",
                     r->selector[0] != '\0' ? r->selector : "*",
                     pbx_peer_name_of(PBX_PEER_NAMES_VERDICT, r->verdict));
    if (n < 0) {
        out[0] = '\0';
        return 0U;
    }
    return (size_t)n < out_len ? (size_t)n : out_len - 1U;
}
