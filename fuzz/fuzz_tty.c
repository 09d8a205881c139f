/*
 * fuzz_tty.c: libFuzzer harness for ttyd's policy file and answers
 * (peers/lib/pbx_peer_tty_policy.c, peers/lib/pbx_peer_tty.c).
 *
 * Input layout: an 8-byte head (session, realm, operation, class and
 * urgency of a context, each reduced to a few values so rules match it;
 * then the entry, selector and answer lengths), the entry, selector and
 * answer bytes, then the policy file: lines split at '\n', each handed to
 * pbx_peer_tty_policy_line. Checked:
 *  - an accepted line's rule, written back (pbx_peer_tty_rule_text),
 *    parses again to a rule that writes the same text (one canonical
 *    text per rule);
 *  - no verdict is ever ALLOW for an exceptional request (decide,
 *    decide_selector and decide_prompt); the deciding rule's index is at
 *    most the rule count, and a matching rule's verdict is the answer;
 *  - the answer line gives APPROVE exactly for "y"/"yes", DENY exactly for
 *    "n"/"no" (any case, surrounding blanks ignored), else 0; one key
 *    gives APPROVE exactly for y/Y and DENY for n/N.
 * The glob's bound (no recursion, quadratic per component) is held by
 * the -timeout. Any failure aborts.
 */
#include "peers/lib/pbx_peer.h"
#include "peers/lib/pbx_peer_tty.h"
#include "peers/lib/pbx_peer_tty_keys.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The head: context fields and three lengths. */
#define FUZZ_TTY_HEAD 8U
/* The longest line handed to the parser (it reads at most 511 bytes). */
#define FUZZ_TTY_LINE_MAX 600U

/* Parses one line into p; an accepted rule must write back canonically. */
static void fuzz_tty_line(pbx_peer_tty_policy *p, const char *line)
{
    static pbx_peer_tty_policy again;
    char text[2U * FUZZ_TTY_LINE_MAX];
    char text2[2U * FUZZ_TTY_LINE_MAX];
    size_t before = p->count;
    const char *why = pbx_peer_tty_policy_line(p, line);
    if (why != NULL || p->count == before) {
        if (p->count != before) {
            abort(); /* a refused line changed the table */
        }
        return;
    }
    (void)pbx_peer_tty_rule_text(&p->rules[before], text, sizeof(text));
    again.count = 0;
    if (pbx_peer_tty_policy_line(&again, text) != NULL || again.count != 1U) {
        abort();
    }
    (void)pbx_peer_tty_rule_text(&again.rules[0], text2, sizeof(text2));
    if (strcmp(text, text2) != 0) {
        abort();
    }
}

/* Whether c is a blank an answer may have around its word. */
static bool fuzz_tty_blank(uint8_t c)
{
    return c == (uint8_t)' ' || c == (uint8_t)'\t' || c == (uint8_t)'\r' ||
           c == (uint8_t)'\n';
}

/* The documented answer of the len bytes at a: the word between the
 * blanks, compared without case with y, yes, n and no. */
static uint8_t fuzz_tty_expected(const uint8_t *a, size_t len)
{
    size_t lo = 0;
    size_t hi = len;
    while (lo < hi && fuzz_tty_blank(a[lo])) {
        lo++;
    }
    while (hi > lo && fuzz_tty_blank(a[hi - 1U])) {
        hi--;
    }
    char w[4];
    size_t n = 0;
    memset(w, 0, sizeof(w));
    for (size_t i = lo; i < hi; i++) {
        uint8_t c = a[i];
        if (c == 0U || n == 3U) {
            return 0U; /* a NUL in the word, or a word longer than "yes" */
        }
        w[n++] = (char)(c >= 'A' && c <= 'Z' ? c | 0x20U : c);
    }
    if (strcmp(w, "y") == 0 || strcmp(w, "yes") == 0) {
        return PBX_IPC_ANSWER_APPROVE;
    }
    if (strcmp(w, "n") == 0 || strcmp(w, "no") == 0) {
        return PBX_IPC_ANSWER_DENY;
    }
    return 0U;
}

/* The answer line must follow its documented words exactly. The key
 * parser answers only on a y/Y/n/N byte, and reading the input byte by
 * byte or in passes of pbx_peer_tty_keys_scan gives the same answers at
 * the same bytes (a sequence split between reads is dropped whole). */
static void fuzz_tty_answer(const uint8_t *a, size_t len)
{
    uint8_t want = fuzz_tty_expected(a, len);
    if (pbx_peer_tty_answer_parse((const char *)a, len) != want) {
        abort();
    }
    pbx_peer_tty_keys bytewise;
    pbx_peer_tty_keys passes;
    pbx_peer_tty_keys_reset(&bytewise);
    pbx_peer_tty_keys_reset(&passes);
    size_t pos = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t k = pbx_peer_tty_keys_feed(&bytewise, a[i]);
        uint8_t c = (uint8_t)(a[i] | 0x20U);
        uint8_t exp = c == 'y'   ? PBX_IPC_ANSWER_APPROVE
                      : c == 'n' ? PBX_IPC_ANSWER_DENY
                                 : 0U;
        if (k != 0U && k != exp) {
            abort();
        }
        if (k == 0U) {
            continue;
        }
        /* The pass reader must stop at exactly this byte with this key. */
        size_t used = 0;
        if (pbx_peer_tty_keys_scan(&passes, a + pos, i + 1U - pos, &used) !=
                k ||
            used != i + 1U - pos) {
            abort();
        }
        pos = i + 1U;
    }
    size_t used = 0;
    if (pos < len &&
        pbx_peer_tty_keys_scan(&passes, a + pos, len - pos, &used) != 0U) {
        abort();
    }
}

/* Checks every verdict the table gives ctx and the selector. */
static void fuzz_tty_decide(const pbx_peer_tty_policy *p,
                            const pbx_ipc_context *ctx, const uint8_t *sel,
                            size_t slen)
{
    bool exc = ctx->urgency == PBX_IPC_URGENCY_EXCEPTIONAL;
    size_t rule = SIZE_MAX;
    uint8_t v1 = pbx_peer_tty_decide(p, ctx);
    uint8_t v2 = pbx_peer_tty_decide_selector(p, ctx, sel, slen, &rule);
    pbx_ipc_prompt pr;
    memset(&pr, 0, sizeof(pr));
    pr.ctx = *ctx;
    pr.selector = sel;
    pr.selector_len = (uint32_t)slen;
    uint8_t v3 = pbx_peer_tty_decide_prompt(p, &pr);
    if (rule > p->count || v1 < PBX_IPC_VERDICT_ALLOW ||
        v1 > PBX_IPC_VERDICT_PROMPT || v2 < PBX_IPC_VERDICT_ALLOW ||
        v2 > PBX_IPC_VERDICT_PROMPT || v3 < PBX_IPC_VERDICT_ALLOW ||
        v3 > PBX_IPC_VERDICT_PROMPT) {
        abort();
    }
    if (exc && (v1 == PBX_IPC_VERDICT_ALLOW || v2 == PBX_IPC_VERDICT_ALLOW ||
                v3 == PBX_IPC_VERDICT_ALLOW)) {
        abort();
    }
    if (rule == p->count ? v2 != PBX_IPC_VERDICT_DENY
                         : (v2 != p->rules[rule].verdict &&
                            !(exc && v2 == PBX_IPC_VERDICT_DENY))) {
        abort();
    }
}

/* Reads the context from the head; entry and selector follow it. */
static void fuzz_tty_context(const uint8_t *h, const uint8_t *entry,
                             size_t elen, pbx_ipc_context *ctx)
{
    memset(ctx, 0, sizeof(*ctx));
    ctx->session = h[0] & 3U;
    ctx->realm = h[1] & 3U;
    ctx->operation = (uint16_t)(h[2] & 15U);
    ctx->object_class = (uint16_t)(h[3] & 15U);
    ctx->urgency = (uint8_t)(h[4] & 3U);
    ctx->job_id = 1U;
    ctx->job_gen = 1U;
    ctx->entry.len = (uint16_t)elen;
    memcpy(ctx->entry.bytes, entry, elen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static pbx_peer_tty_policy pol;
    char line[FUZZ_TTY_LINE_MAX + 1U];
    if (size < FUZZ_TTY_HEAD) {
        return 0;
    }
    size_t elen = data[5] % (PBX_IPC_ENTRY_LEN_BYTES_MAX + 1U);
    size_t slen = data[6];
    size_t alen = data[7] % 16U;
    if (elen + slen + alen > size - FUZZ_TTY_HEAD) {
        return 0;
    }
    const uint8_t *entry = data + FUZZ_TTY_HEAD;
    const uint8_t *sel = entry + elen;
    const uint8_t *ans = sel + slen;
    const uint8_t *text = ans + alen;
    size_t tlen = size - FUZZ_TTY_HEAD - elen - slen - alen;
    pbx_ipc_context ctx;
    fuzz_tty_context(data, entry, elen, &ctx);
    fuzz_tty_answer(ans, alen);
    pol.count = 0;
    for (size_t off = 0, lines = 0;
         off < tlen && lines < (size_t)2U * PBX_PEER_TTY_RULES_MAX; lines++) {
        const uint8_t *nl = memchr(text + off, '\n', tlen - off);
        size_t n = nl == NULL ? tlen - off : (size_t)(nl - (text + off));
        size_t take = n < FUZZ_TTY_LINE_MAX ? n : FUZZ_TTY_LINE_MAX;
        memcpy(line, text + off, take);
        line[take] = '\0';
        fuzz_tty_line(&pol, line);
        off += n + 1U;
    }
    fuzz_tty_decide(&pol, &ctx, slen == 0U ? NULL : sel, slen);
    return 0;
}
