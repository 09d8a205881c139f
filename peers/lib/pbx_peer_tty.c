/*
 * pbx_peer_tty.c: ttyd's prompt bookkeeping and VIEW rows (the policy
 * table is pbx_peer_tty_policy.c's).
 * Pure: formatting goes to caller buffers, nothing is read or written.
 */
#include "peers/lib/pbx_peer_tty.h"

#include "peers/lib/pbx_peer.h"

#include <stdio.h>
#include <string.h>

bool pbx_peer_tty_prompt_admit(bool input_pending)
{
    return !input_pending;
}

/* A bounded text builder over a caller buffer. */
typedef struct tty_text {
    char *out;
    size_t cap;
    size_t pos;
} tty_text;

/* Appends printable bytes, escaping anything else as \xNN. */
static void tty_bytes(tty_text *t, const uint8_t *b, size_t n)
{
    for (size_t i = 0; i < n && t->pos + 5U < t->cap; i++) {
        if (b[i] >= 0x20U && b[i] <= 0x7EU && b[i] != '\\') {
            t->out[t->pos++] = (char)b[i];
        } else {
            int w = snprintf(t->out + t->pos, t->cap - t->pos, "\\x%02x",
                             (unsigned)b[i]);
            t->pos += w > 0 ? (size_t)w : 0U;
        }
    }
    t->out[t->pos] = '\0';
}

/* Appends a trusted literal (our own text, which may hold CR LF). */
static void tty_str(tty_text *t, const char *s)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n && t->pos + 1U < t->cap; i++) {
        t->out[t->pos++] = s[i];
    }
    t->out[t->pos] = '\0';
}

/* Appends n bytes at b as lower-case hex (a digest). */
static void tty_hex(tty_text *t, const uint8_t *b, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n && t->pos + 3U < t->cap; i++) {
        t->out[t->pos++] = hex[b[i] >> 4];
        t->out[t->pos++] = hex[b[i] & 0x0FU];
    }
    t->out[t->pos] = '\0';
}

/* Appends an unsigned number. */
static void tty_num(tty_text *t, unsigned long long v)
{
    char b[24];
    int w = snprintf(b, sizeof(b), "%llu", v);
    tty_bytes(t, (const uint8_t *)b, w > 0 ? (size_t)w : 0U);
}

size_t pbx_peer_tty_prompt_text(const pbx_ipc_prompt *p, pbx_ipc_id request,
                                char *out, size_t out_len)
{
    tty_text t = {out, out_len, 0U};
    const pbx_ipc_context *c = &p->ctx;
    out[0] = '\0';
    tty_str(&t, "\r\n=== powerboxd trusted request ===\r\n  program : ");
    tty_bytes(&t, c->entry.bytes, c->entry.len);
    tty_str(&t, "\r\n  job     : ");
    tty_num(&t, c->job_id);
    tty_str(&t, " gen ");
    tty_num(&t, c->job_gen);
    tty_str(&t, "  session ");
    tty_num(&t, c->session);
    tty_str(&t, " realm ");
    tty_num(&t, c->realm);
    tty_str(&t, "\r\n  request : ");
    tty_num(&t, request.index);
    tty_str(&t, ".");
    tty_num(&t, request.gen);
    tty_str(&t, "\r\n  wants   : ");
    tty_str(&t, pbx_peer_name_of(PBX_PEER_NAMES_OPERATION, c->operation));
    tty_str(&t, " on ");
    tty_str(&t, pbx_peer_name_of(PBX_PEER_NAMES_CLASS, c->object_class));
    tty_str(&t, " (");
    tty_str(&t, pbx_peer_name_of(PBX_PEER_NAMES_LIFETIME, c->lifetime));
    tty_str(&t, ", ");
    tty_str(&t, pbx_peer_name_of(PBX_PEER_NAMES_MODE, c->mode));
    tty_str(&t, ", ");
    tty_str(&t, pbx_peer_name_of(PBX_PEER_NAMES_URGENCY, c->urgency));
    tty_str(&t, ")\r\n  object  : ");
    tty_num(&t, p->object.id);
    tty_str(&t, " gen ");
    tty_num(&t, p->object.gen);
    tty_str(&t, "\r\n  selector: \"");
    tty_bytes(&t, p->selector, p->selector_len);
    tty_str(&t, "\"\r\n  sha256  : ");
    tty_hex(&t, p->selector_digest, PBX_IPC_DIGEST_BYTES);
    tty_str(&t, "\r\n  label   : \"");
    tty_bytes(&t, p->label.bytes, p->label.len);
    tty_str(&t, "\" (display only)\r\nApprove? [y/n] (press y or n, "
                "no Enter) ");
    return t.pos;
}

/* Whether ch is a blank an answer line may have around its word. */
static bool tty_answer_blank(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

uint8_t pbx_peer_tty_answer_parse(const char *line, size_t len)
{
    char w[8];
    size_t lo = 0;
    size_t hi = len;
    /* Only the blanks around the word are skipped: a blank or a NUL
     * inside it ("y e s", "y\0x") is no answer, as the contract says. */
    while (lo < hi && tty_answer_blank(line[lo])) {
        lo++;
    }
    while (hi > lo && tty_answer_blank(line[hi - 1U])) {
        hi--;
    }
    if (hi - lo >= sizeof(w)) {
        return 0U;
    }
    size_t n = 0;
    for (size_t i = lo; i < hi; i++) {
        char ch = line[i];
        if (ch == '\0' || tty_answer_blank(ch)) {
            return 0U;
        }
        if (ch >= 'A' && ch <= 'Z') {
            ch = (char)(unsigned char)((unsigned char)ch | 0x20U);
        }
        w[n++] = ch;
    }
    w[n] = '\0';
    if (strcmp(w, "y") == 0 || strcmp(w, "yes") == 0) {
        return PBX_IPC_ANSWER_APPROVE;
    }
    if (strcmp(w, "n") == 0 || strcmp(w, "no") == 0) {
        return PBX_IPC_ANSWER_DENY;
    }
    return 0U;
}

void pbx_peer_tty_answer_fill(const pbx_ipc_prompt *p, pbx_ipc_id request,
                              uint8_t answer, pbx_ipc_prompt_reply *out)
{
    memset(out, 0, sizeof(*out));
    out->retry = false;
    out->answer = answer;
    out->realm = p->ctx.realm;
    out->session = p->ctx.session;
    out->job_id = p->ctx.job_id;
    out->job_gen = p->ctx.job_gen;
    out->request = request;
    out->object = p->object;
}

void pbx_peer_tty_queue_init(pbx_peer_tty_queue *q)
{
    memset(q, 0, sizeof(*q));
}

/* Finds the position in q->order of the prompt of request from route. */
static bool tty_queue_find(const pbx_peer_tty_queue *q, int route,
                           pbx_ipc_id request, size_t *pos)
{
    for (size_t k = 0; k < q->count && k < PBX_PEER_TTY_QUEUE_MAX; k++) {
        const pbx_peer_tty_queued *e = &q->entries[q->order[k]];
        if (e->route == route && e->request.index == request.index &&
            e->request.gen == request.gen) {
            *pos = k;
            return true;
        }
    }
    return false;
}

/* Removes the entry at position pos of q->order, keeping the order; the
 * head leaving clears showing. */
static void tty_queue_remove(pbx_peer_tty_queue *q, size_t pos)
{
    PBX_ASSERT(pos < q->count);
    q->used[q->order[pos]] = false;
    for (size_t k = pos; k + 1U < q->count; k++) {
        q->order[k] = q->order[k + 1U];
    }
    q->count--;
    if (pos == 0U) {
        q->showing = false;
    }
}

uint32_t pbx_peer_tty_queue_push(pbx_peer_tty_queue *q, int route, uint32_t seq,
                                 pbx_ipc_id request, const pbx_ipc_prompt *p)
{
    size_t pos = 0;
    if (tty_queue_find(q, route, request, &pos)) {
        return PBX_PEER_E_CONFLICT;
    }
    if (q->count >= PBX_PEER_TTY_QUEUE_MAX ||
        p->selector_len > PBX_IPC_SELECTOR_LEN_BYTES_MAX) {
        return PBX_PEER_E_BUSY;
    }
    size_t slot = 0;
    while (slot < PBX_PEER_TTY_QUEUE_MAX && q->used[slot]) {
        slot++;
    }
    PBX_ASSERT(slot < PBX_PEER_TTY_QUEUE_MAX);
    pbx_peer_tty_queued *e = &q->entries[slot];
    e->route = route;
    e->seq = seq;
    e->request = request;
    e->prompt = *p;
    if (p->selector_len != 0U) {
        memcpy(e->selector, p->selector, p->selector_len);
    }
    e->prompt.selector = e->selector;
    q->used[slot] = true;
    q->order[q->count++] = (uint8_t)slot;
    return 0U;
}

const pbx_peer_tty_queued *pbx_peer_tty_queue_head(const pbx_peer_tty_queue *q)
{
    return q->count != 0U ? &q->entries[q->order[0]] : NULL;
}

bool pbx_peer_tty_queue_show(pbx_peer_tty_queue *q)
{
    if (q->count == 0U || q->showing) {
        return false;
    }
    q->showing = true;
    return true;
}

bool pbx_peer_tty_queue_pop(pbx_peer_tty_queue *q)
{
    if (q->count == 0U) {
        return false;
    }
    tty_queue_remove(q, 0U);
    return true;
}

pbx_peer_tty_withdrawn pbx_peer_tty_queue_withdraw(pbx_peer_tty_queue *q,
                                                   int route,
                                                   pbx_ipc_id request,
                                                   pbx_ipc_object object)
{
    size_t pos = 0;
    if (!tty_queue_find(q, route, request, &pos)) {
        return PBX_PEER_TTY_WD_UNKNOWN;
    }
    const pbx_ipc_object *shown = &q->entries[q->order[pos]].prompt.object;
    if (shown->id != object.id || shown->gen != object.gen) {
        return PBX_PEER_TTY_WD_MISMATCH;
    }
    bool was_showing = pos == 0U && q->showing;
    tty_queue_remove(q, pos);
    return was_showing ? PBX_PEER_TTY_WD_SHOWING : PBX_PEER_TTY_WD_QUEUED;
}

size_t pbx_peer_tty_queue_drop_route(pbx_peer_tty_queue *q, int route,
                                     bool *was_showing)
{
    size_t dropped = 0;
    *was_showing = false;
    size_t k = 0;
    while (k < q->count) {
        if (q->entries[q->order[k]].route != route) {
            k++;
            continue;
        }
        *was_showing = *was_showing || (k == 0U && q->showing);
        tty_queue_remove(q, k);
        dropped++;
    }
    return dropped;
}

void pbx_peer_tty_views_init(pbx_peer_tty_views *v)
{
    memset(v, 0, sizeof(*v));
}

/* Compares the request contexts of two rows field by field. */
static bool tty_ctx_same(const pbx_ipc_context *a, const pbx_ipc_context *b)
{
    return a->session == b->session && a->job_id == b->job_id &&
           a->job_gen == b->job_gen && a->realm == b->realm &&
           a->operation == b->operation && a->object_class == b->object_class &&
           a->lifetime == b->lifetime && a->mode == b->mode &&
           a->urgency == b->urgency && a->entry.len == b->entry.len &&
           memcmp(a->entry.bytes, b->entry.bytes, a->entry.len) == 0;
}

/* Compares two rows on every field except kind. */
static bool tty_row_same(const pbx_ipc_view *a, const pbx_ipc_view *b)
{
    return a->grant.index == b->grant.index && a->grant.gen == b->grant.gen &&
           tty_ctx_same(&a->ctx, &b->ctx) && a->object.id == b->object.id &&
           a->object.gen == b->object.gen && a->scope_id == b->scope_id &&
           a->target.process_id == b->target.process_id &&
           a->target.process_gen == b->target.process_gen &&
           a->target.slot == b->target.slot &&
           a->installed_slot == b->installed_slot &&
           memcmp(a->selector_digest, b->selector_digest,
                  PBX_IPC_DIGEST_BYTES) == 0 &&
           a->label.len == b->label.len &&
           memcmp(a->label.bytes, b->label.bytes, a->label.len) == 0;
}

void pbx_peer_tty_views_seen(pbx_peer_tty_views *v, pbx_ipc_id request,
                             const pbx_ipc_prompt *p)
{
    pbx_peer_tty_seen *e = &v->seen[v->seen_next % PBX_PEER_TTY_SEEN_MAX];
    v->seen_next = (v->seen_next + 1U) % PBX_PEER_TTY_SEEN_MAX;
    size_t n = p->selector_len <= PBX_IPC_SELECTOR_LEN_BYTES_MAX
                   ? p->selector_len
                   : 0U;
    e->request = request;
    e->object = p->object;
    memcpy(e->digest, p->selector_digest, PBX_IPC_DIGEST_BYTES);
    e->selector_len = (uint16_t)n;
    if (n != 0U) {
        memcpy(e->selector, p->selector, n);
    }
}

/* Gives new row i the request and selector of the approved prompt that
 * showed its object and digest, if ttyd remembers one; that prompt is
 * then forgotten (one prompt, one grant). */
static void tty_views_attach(pbx_peer_tty_views *v, size_t i)
{
    const pbx_ipc_view *r = &v->rows[i];
    v->request[i] = (pbx_ipc_id){0, 0};
    v->selector_len[i] = 0;
    for (size_t k = 0; k < PBX_PEER_TTY_SEEN_MAX; k++) {
        pbx_peer_tty_seen *e = &v->seen[k];
        if (e->request.gen == 0U || e->object.id != r->object.id ||
            e->object.gen != r->object.gen ||
            memcmp(e->digest, r->selector_digest, PBX_IPC_DIGEST_BYTES) != 0) {
            continue;
        }
        v->request[i] = e->request;
        v->selector_len[i] = e->selector_len;
        memcpy(v->selector[i], e->selector, e->selector_len);
        e->request.gen = 0U;
        return;
    }
}

uint32_t pbx_peer_tty_views_apply(pbx_peer_tty_views *v, const pbx_ipc_view *rq,
                                  int route, uint64_t now_ms)
{
    size_t free_row = PBX_PEER_TTY_VIEWS_MAX;
    for (size_t i = 0; i < PBX_PEER_TTY_VIEWS_MAX; i++) {
        if (!v->used[i]) {
            free_row = free_row == PBX_PEER_TTY_VIEWS_MAX ? i : free_row;
            continue;
        }
        if (v->rows[i].grant.index != rq->grant.index ||
            v->rows[i].grant.gen != rq->grant.gen) {
            continue;
        }
        if (!tty_row_same(&v->rows[i], rq)) {
            return rq->kind == PBX_IPC_VIEW_ACTIVE ? PBX_PEER_E_CONFLICT
                                                   : PBX_PEER_E_MISMATCH;
        }
        if (rq->kind == PBX_IPC_VIEW_REMOVE) {
            v->used[i] = false;
        } else {
            v->route[i] = route;
        }
        return 0U;
    }
    if (rq->kind == PBX_IPC_VIEW_REMOVE) {
        return 0U;
    }
    if (free_row == PBX_PEER_TTY_VIEWS_MAX) {
        return PBX_PEER_E_BUSY;
    }
    v->used[free_row] = true;
    v->rows[free_row] = *rq;
    v->rows[free_row].kind = PBX_IPC_VIEW_ACTIVE;
    v->since_ms[free_row] = now_ms;
    v->route[free_row] = route;
    tty_views_attach(v, free_row);
    return 0U;
}

bool pbx_peer_tty_views_take_route(pbx_peer_tty_views *v, int route,
                                   pbx_ipc_id *grant)
{
    for (size_t i = 0; i < PBX_PEER_TTY_VIEWS_MAX; i++) {
        if (v->used[i] && v->route[i] == route) {
            *grant = v->rows[i].grant;
            v->used[i] = false;
            return true;
        }
    }
    return false;
}

/* Appends one field value: "-" when n is 0, else every byte outside
 * 0x21..0x7E, and backslash, as \xNN, and a lone "-" as \x2d. */
static void tty_field_value(tty_text *t, const uint8_t *b, size_t n)
{
    if (n == 0U) {
        tty_str(t, "-");
        return;
    }
    for (size_t i = 0; i < n && t->pos + 5U < t->cap; i++) {
        bool plain = b[i] > 0x20U && b[i] <= 0x7EU && b[i] != '\\' &&
                     !(n == 1U && b[i] == '-');
        if (plain) {
            t->out[t->pos++] = (char)b[i];
        } else {
            int w = snprintf(t->out + t->pos, t->cap - t->pos, "\\x%02x",
                             (unsigned)b[i]);
            t->pos += w > 0 ? (size_t)w : 0U;
        }
    }
    t->out[t->pos] = '\0';
}

/* Appends "I.G" of id. */
static void tty_id(tty_text *t, uint64_t index, uint32_t gen)
{
    tty_num(t, index);
    tty_str(t, ".");
    tty_num(t, gen);
}

size_t pbx_peer_tty_views_row(const pbx_peer_tty_views *v, size_t i, char *out,
                              size_t out_len)
{
    tty_text t = {out, out_len, 0U};
    out[0] = '\0';
    if (i >= PBX_PEER_TTY_VIEWS_MAX || !v->used[i]) {
        return 0U;
    }
    const pbx_ipc_view *r = &v->rows[i];
    tty_str(&t, "grant ");
    tty_id(&t, r->grant.index, r->grant.gen);
    tty_str(&t, " ");
    tty_str(&t, pbx_peer_name_of(PBX_PEER_NAMES_OPERATION, r->ctx.operation));
    tty_str(&t, " ");
    tty_str(&t, pbx_peer_name_of(PBX_PEER_NAMES_CLASS, r->ctx.object_class));
    tty_str(&t, " object ");
    tty_id(&t, r->object.id, r->object.gen);
    tty_str(&t, " job ");
    tty_num(&t, r->ctx.job_id);
    tty_str(&t, " slot ");
    tty_num(&t, r->installed_slot);
    tty_str(&t, " job-gen ");
    tty_num(&t, r->ctx.job_gen);
    tty_str(&t, " lifetime ");
    tty_str(&t, pbx_peer_name_of(PBX_PEER_NAMES_LIFETIME, r->ctx.lifetime));
    tty_str(&t, " since ");
    tty_num(&t, v->since_ms[i]);
    tty_str(&t, " request ");
    if (v->request[i].gen != 0U) {
        tty_id(&t, v->request[i].index, v->request[i].gen);
    } else {
        tty_str(&t, "-");
    }
    tty_str(&t, " selector ");
    tty_field_value(&t, v->selector[i], v->selector_len[i]);
    tty_str(&t, " label ");
    tty_field_value(&t, r->label.bytes, r->label.len);
    tty_str(&t, " program ");
    tty_bytes(&t, r->ctx.entry.bytes, r->ctx.entry.len);
    /* Appended after the entry (which may hold blanks), so every older
     * word keeps its place; a reader takes it from the line's end. */
    tty_str(&t, " digest ");
    tty_hex(&t, r->selector_digest, PBX_IPC_DIGEST_BYTES);
    tty_str(&t, "\n");
    return t.pos;
}

size_t pbx_peer_tty_views_list(const pbx_peer_tty_views *v, char *out,
                               size_t out_len)
{
    size_t rows = 0;
    size_t pos = 0;
    out[0] = '\0';
    for (size_t i = 0; i < PBX_PEER_TTY_VIEWS_MAX && pos + 1U < out_len; i++) {
        size_t n = pbx_peer_tty_views_row(v, i, out + pos, out_len - pos);
        rows += n != 0U ? 1U : 0U;
        pos += n;
    }
    return rows;
}
