/*
 * rt_log.c: powerboxd's log, one key=value line per published decision
 * and per ended grant (docs/HOST.md, "powerboxd's log"), and the one line
 * every startup refusal prints. Lines are built in static storage (the
 * image's stack budget is small), escaped so that a value never holds a
 * space or '=', and written without ever blocking: a line the port could
 * not write at once is dropped and counted, and the count is reported by
 * the next line that gets through.
 *
 * The runtime learns of a decision when the core asks it to send the
 * decision's wake, and of a grant's end when the core asks it to send
 * the grant's RETIRE; it then reads the records through the core's
 * inspection views, which change nothing. Both effects may be retried,
 * so each record generation is logged once.
 */
#include "core/pbx_core_inspect.h"
#include "powerboxd/runtime/rt_int.h"

/** RT_LOG_LINE_MAX bounds one line; it stays below PIPE_BUF (4096), so a
 * pipe takes a line whole or not at all. */
#define RT_LOG_LINE_MAX 2048U
/** RT_LOG_OBJECT_MAX is the most selector bytes a line shows; a longer
 * selector is cut there and ends with "...". */
#define RT_LOG_OBJECT_MAX 256U
/** RT_LOG_GRANTS is the number of grants whose selector the log keeps
 * from their decision to their end (indexed by grant index modulo it). */
#define RT_LOG_GRANTS 1024U

/* The longest line: fixed keys and numbers (under 300 bytes), an entry
 * and an object each escaped to at most three bytes per byte, "...". */
_Static_assert(300U + 3U * PBX_IPC_ENTRY_LEN_BYTES_MAX +
                       3U * RT_LOG_OBJECT_MAX + 3U <=
                   RT_LOG_LINE_MAX,
               "the longest log line fits its buffer");

/** rt_log_grant is the selector of one approved grant, kept for its end. */
typedef struct rt_log_grant {
    /** The grant's identity; gen 0 when the entry is empty. */
    pbx_ipc_id grant;
    /** The request that made it. */
    pbx_ipc_id request;
    /** Selector bytes kept (at most RT_LOG_OBJECT_MAX). */
    uint32_t len;
    /** Nonzero when the selector was longer than what is kept. */
    uint32_t cut;
    /** The first len selector bytes. */
    uint8_t bytes[RT_LOG_OBJECT_MAX];
} rt_log_grant;

/** rt_log_state is the log's whole state, in static storage. */
typedef struct rt_log_state {
    /** Lines dropped since the last line written. */
    uint32_t dropped;
    /** Lines dropped since start (saturating), for the USAGE report. */
    uint32_t dropped_total;
    /** Length of the line being built. */
    uint32_t len;
    /** The line being built. */
    uint8_t line[RT_LOG_LINE_MAX];
    /** Selector scratch for a decision line. */
    uint8_t object[RT_LOG_OBJECT_MAX];
    /** Per request index: the low 16 bits of the generation last logged. */
    uint16_t request_logged[PBX_BOOTSTRAP_RECORDS_MAX];
    /** Per grant index: the low 16 bits of the generation last logged. */
    uint16_t grant_logged[PBX_BOOTSTRAP_RECORDS_MAX];
    /** Selectors of approved grants, by grant index modulo RT_LOG_GRANTS. */
    rt_log_grant grants[RT_LOG_GRANTS];
} rt_log_state;

/** The log's state; static so that no stack frame holds it. */
static rt_log_state rt_log_g;

/* Appends n raw bytes, never past the buffer (one byte stays for '\n'):
 * what does not fit is cut. One bounded word-wise copy, not a byte loop
 * with a bound check per byte (issue 23 item 5). */
static void rt_log_raw(const uint8_t *b, uint32_t n)
{
    uint32_t room = RT_LOG_LINE_MAX - 1U - rt_log_g.len;
    uint32_t k = n < room ? n : room;
    pbx_mem_copy(rt_log_g.line + rt_log_g.len, b, k);
    rt_log_g.len += k;
}

/** RT_LOG_LIT appends a string literal, its length known at compile time. */
#define RT_LOG_LIT(text)                                                       \
    rt_log_raw((const uint8_t *)(text), (uint32_t)(sizeof(text) - 1U))

/** RT_LOG_KEY gives the bytes and length of " name=" as two arguments, for
 * the appenders below that start a key. */
#define RT_LOG_KEY(name)                                                       \
    (const uint8_t *)(" " name "="), (uint32_t)(sizeof(" " name "=") - 1U)

/* Appends a NUL-terminated string, bounded by the line buffer (each step
 * appends one byte, so at most RT_LOG_LINE_MAX steps). Only for strings
 * whose length is not known at compile time (names, refusal texts). */
static void rt_log_str(const char *str)
{
    uint32_t len = rt_log_g.len;
    for (uint32_t i = 0; len + 1U < RT_LOG_LINE_MAX && str[i] != '\0'; i++) {
        rt_log_g.line[len++] = (uint8_t)str[i];
    }
    rt_log_g.len = len;
}

/* Writes v in decimal at out (room for 20 digits); returns the count.
 * Two digits per division, from a table of the pairs 00..99, then the
 * digits are copied out in order with one word-wise copy. */
static uint32_t rt_log_digits(uint8_t *out, uint64_t v)
{
    static const char pairs[] = "00010203040506070809"
                                "10111213141516171819"
                                "20212223242526272829"
                                "30313233343536373839"
                                "40414243444546474849"
                                "50515253545556575859"
                                "60616263646566676869"
                                "70717273747576777879"
                                "80818283848586878889"
                                "90919293949596979899";
    uint8_t digits[20];
    uint32_t n = sizeof(digits);
    /* Each pass takes two digits off v; a u64 has at most 20. */
    while (v >= 100U && n >= 2U) {
        size_t at = 2U * (size_t)(v % 100U);
        v /= 100U;
        digits[--n] = (uint8_t)pairs[at + 1U];
        digits[--n] = (uint8_t)pairs[at];
    }
    if (v >= 10U) {
        size_t at = 2U * (size_t)v;
        digits[--n] = (uint8_t)pairs[at + 1U];
        digits[--n] = (uint8_t)pairs[at];
    } else {
        digits[--n] = (uint8_t)('0' + (uint32_t)v);
    }
    uint32_t count = (uint32_t)sizeof(digits) - n;
    pbx_mem_copy(out, digits + n, count);
    return count;
}

/* Appends v in decimal, straight into the line when 20 digits fit (they
 * always do below the line bound; a full line takes them cut). */
static void rt_log_u64(uint64_t v)
{
    if (RT_LOG_LINE_MAX - 1U - rt_log_g.len >= 20U) {
        rt_log_g.len += rt_log_digits(rt_log_g.line + rt_log_g.len, v);
        return;
    }
    uint8_t digits[20];
    uint32_t n = rt_log_digits(digits, v);
    rt_log_raw(digits, n);
}

/* Appends " key=INDEX:GEN" (key and key_len from RT_LOG_KEY). */
static void rt_log_id(const uint8_t *key, uint32_t key_len, uint64_t index,
                      uint32_t gen)
{
    rt_log_raw(key, key_len);
    rt_log_u64(index);
    RT_LOG_LIT(":");
    rt_log_u64(gen);
}

/* Appends " key=N-I.G": one of powerboxd's own ids (a request or a
 * grant) prefixed with this powerboxd's incarnation, so that ids of
 * different incarnations of one stack never read alike (docs/HOST.md,
 * "powerboxd's log"). key and key_len come from RT_LOG_KEY. */
static void rt_log_own(const rt_state *s, const uint8_t *key, uint32_t key_len,
                       pbx_ipc_id id)
{
    rt_log_raw(key, key_len);
    rt_log_u64(s->incarnation);
    RT_LOG_LIT("-");
    rt_log_u64(id.index);
    RT_LOG_LIT(".");
    rt_log_u64(id.gen);
}

/* Appends n bytes as one value: printable ASCII except '%' and '=' as
 * is, every other byte (space included) as %XX. Stops while three more
 * bytes always fit, so no escape is ever cut in half. */
static void rt_log_escaped(const uint8_t *b, uint32_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    uint32_t len = rt_log_g.len;
    for (uint32_t i = 0; i < n && len + 4U <= RT_LOG_LINE_MAX; i++) {
        uint8_t c = b[i];
        if (c > 0x20U && c < 0x7FU && c != (uint8_t)'%' && c != (uint8_t)'=') {
            rt_log_g.line[len++] = c;
            continue;
        }
        rt_log_g.line[len++] = (uint8_t)'%';
        rt_log_g.line[len++] = (uint8_t)hex[c >> 4];
        rt_log_g.line[len++] = (uint8_t)hex[c & 0x0FU];
    }
    rt_log_g.len = len;
}

/* Appends " key=" (key and key_len from RT_LOG_KEY) and a static name
 * (names never need escaping). */
static void rt_log_name(const uint8_t *key, uint32_t key_len, const char *name)
{
    rt_log_raw(key, key_len);
    rt_log_str(name);
}

/* Counts one dropped line (saturating). */
static void rt_log_drop(void)
{
    if (rt_log_g.dropped != UINT32_MAX) {
        rt_log_g.dropped++;
    }
    if (rt_log_g.dropped_total != UINT32_MAX) {
        rt_log_g.dropped_total++;
    }
}

uint32_t rt_log_dropped_total(void)
{
    return rt_log_g.dropped_total;
}

bool rt_log_write(const uint8_t *line, uint32_t len)
{
    static const char head[] = "event=log-dropped lines=";
    if (rt_log_g.dropped != 0U) {
        /* Say first how many lines were lost, if that gets through. */
        uint8_t note[sizeof(head) + 21U];
        uint32_t n = 0;
        for (uint32_t i = 0; head[i] != '\0'; i++) {
            note[n++] = (uint8_t)head[i];
        }
        n += rt_log_digits(note + n, rt_log_g.dropped);
        note[n++] = (uint8_t)'\n';
        if (!pbx_port_log(note, n)) {
            rt_log_drop();
            return false;
        }
        rt_log_g.dropped = 0U;
    }
    if (!pbx_port_log(line, len)) {
        rt_log_drop();
        return false;
    }
    return true;
}

/* Ends the line being built and writes it. */
static void rt_log_flush(void)
{
    rt_log_g.line[rt_log_g.len++] = (uint8_t)'\n';
    (void)rt_log_write(rt_log_g.line, rt_log_g.len);
    rt_log_g.len = 0U;
}

/* Appends the job, entry and operation keys of ctx. */
static void rt_log_context(const pbx_ipc_context *ctx)
{
    rt_log_id(RT_LOG_KEY("job"), ctx->job_id, ctx->job_gen);
    RT_LOG_LIT(" entry=");
    rt_log_escaped(ctx->entry.bytes,
                   ctx->entry.len <= PBX_IPC_ENTRY_LEN_BYTES_MAX
                       ? ctx->entry.len
                       : PBX_IPC_ENTRY_LEN_BYTES_MAX);
    rt_log_name(RT_LOG_KEY("op"), pbx_ipc_operation_name(ctx->operation));
}

/* Appends " object=" and the kept selector (cut marks a longer one). */
static void rt_log_object(const uint8_t *sel, uint32_t len, bool cut)
{
    RT_LOG_LIT(" object=");
    rt_log_escaped(sel, len);
    if (cut) {
        RT_LOG_LIT("...");
    }
}

/* Keeps an approved grant's selector for the line of its end. */
static void rt_log_keep(const pbx_core_log_decision *d, uint32_t len)
{
    rt_log_grant *k = &rt_log_g.grants[d->grant.index % RT_LOG_GRANTS];
    k->grant = d->grant;
    k->request = d->request;
    k->len = len;
    k->cut = d->selector_len > len ? 1U : 0U;
    pbx_mem_copy(k->bytes, rt_log_g.object, len);
}

void rt_log_decision(rt_state *s, const uint8_t *frame, size_t len)
{
    pbx_core_log_decision d;
    if (len < PBX_IPC_HEADER_BYTES) {
        return;
    }
    pbx_ipc_id id = {pbx_le_get32(frame + 12), pbx_le_get32(frame + 16)};
    if (id.index >= PBX_BOOTSTRAP_RECORDS_MAX ||
        rt_log_g.request_logged[id.index] == (uint16_t)id.gen ||
        !pbx_core_inspect_decision(&s->core, id, &d)) {
        return;
    }
    rt_log_g.request_logged[id.index] = (uint16_t)id.gen;
    uint32_t n = pbx_core_inspect_selector(&s->core, id, rt_log_g.object,
                                           RT_LOG_OBJECT_MAX);
    if (d.grant.gen != 0U) {
        rt_log_keep(&d, n);
    }
    rt_log_g.len = 0U;
    RT_LOG_LIT("event=decision");
    rt_log_own(s, RT_LOG_KEY("request"), id);
    rt_log_context(d.ctx);
    rt_log_object(rt_log_g.object, n, d.selector_len > n);
    rt_log_name(RT_LOG_KEY("lifetime"), pbx_ipc_lifetime_name(d.ctx->lifetime));
    rt_log_name(RT_LOG_KEY("outcome"), pbx_ipc_outcome_name(d.outcome));
    rt_log_name(RT_LOG_KEY("reason"), d.reason);
    if (d.grant.gen != 0U) {
        /* The grant and vfsd's name of its object: every later line about
         * either (the peers', vfsd's RETIRE) can be joined to this one. */
        rt_log_own(s, RT_LOG_KEY("grant"), d.grant);
        rt_log_id(RT_LOG_KEY("object-id"), d.object.id, d.object.gen);
    }
    rt_log_flush();
}

void rt_log_grant_end(rt_state *s, const uint8_t *frame, size_t len)
{
    pbx_core_log_grant_end e;
    if (len < PBX_IPC_HEADER_BYTES ||
        pbx_le_get16(frame + 6) != (uint16_t)PBX_IPC_OP_RETIRE) {
        return;
    }
    pbx_ipc_id id = {pbx_le_get32(frame + 12), pbx_le_get32(frame + 16)};
    if (id.index >= PBX_BOOTSTRAP_RECORDS_MAX ||
        rt_log_g.grant_logged[id.index] == (uint16_t)id.gen ||
        !pbx_core_inspect_grant_end(&s->core, id, &e)) {
        return;
    }
    rt_log_g.grant_logged[id.index] = (uint16_t)id.gen;
    const rt_log_grant *k = &rt_log_g.grants[id.index % RT_LOG_GRANTS];
    bool kept = k->grant.index == id.index && k->grant.gen == id.gen;
    pbx_ipc_id req = kept ? k->request : e.request;
    rt_log_g.len = 0U;
    RT_LOG_LIT("event=grant-end");
    rt_log_own(s, RT_LOG_KEY("grant"), id);
    rt_log_own(s, RT_LOG_KEY("request"), req);
    rt_log_context(e.ctx);
    /* A selector the log no longer keeps is written empty: no selector
     * is empty, so an empty value only ever means "not known". */
    rt_log_object(k->bytes, kept ? k->len : 0U, kept && k->cut != 0U);
    rt_log_name(RT_LOG_KEY("lifetime"), pbx_ipc_lifetime_name(e.ctx->lifetime));
    rt_log_name(RT_LOG_KEY("end"), e.end);
    rt_log_name(RT_LOG_KEY("reason"), e.reason);
    rt_log_id(RT_LOG_KEY("object-id"), e.object.id, e.object.gen);
    rt_log_flush();
}

/* What each startup refusal (PBX_RT_EXIT_ARGS..PBX_RT_EXIT_NOFILE) means.
 * Long texts are split literals on purpose: the count is asserted below. */
// NOLINTBEGIN(bugprone-suspicious-missing-comma)
static const char *const rt_log_refusals[] = {
    "usage: powerboxd [--incarnation N] ENDPOINT-NAME (the public "
    "endpoint's name; N 1 to 4294967295; see powerboxd -h)",
    "the syscall port could not be prepared",
    "slot 3 (PBX1) holds nothing",
    "slot 3 (PBX1) is not a memory object",
    "the PBX1 memory object is not sealed against every change",
    "the PBX1 object is empty, too large, or could not be read whole",
    "the PBX1 record does not parse or authenticate",
    "a PBX1 pool's type layout differs from the compiled record types",
    "the PBX1 page count differs from the derived arena extent",
    "the transient slot range PBX1 implies does not fit the slot space",
    "the arena could not be mapped",
    "a startup inventory slot is empty",
    "a startup inventory slot holds the wrong kind of capability",
    "a startup capability lacks a right it needs",
    "a startup capability carries a right it must not have",
    "a startup capability has the wrong provenance (the public endpoint "
    "slot must be empty at startup)",
    "the startup inventory is refused",
    "the public endpoint could not be created",
    "the ready-phase inventory (with the public endpoint) is not exact",
    "the core refused the layout or the arena",
    "the readiness report could not be sent to the supervisor (slot 4)",
    "the launchd broker endpoint (slot 10) could not be received on",
    "the hard descriptor limit (RLIMIT_NOFILE) is below 4096, the end of "
    "the transient slot range (raise the hard limit)",
};
// NOLINTEND(bugprone-suspicious-missing-comma)

_Static_assert(PBX_CAPABI_TRANSIENT_FIRST_DEFAULT + PBX_RT_TRANSIENT_MAX ==
                   4096U,
               "the descriptor-limit refusal names the range's end");
_Static_assert(sizeof(rt_log_refusals) / sizeof(rt_log_refusals[0]) ==
                   (size_t)PBX_RT_EXIT_NOFILE - PBX_RT_EXIT_ARGS + 1U,
               "every startup refusal has its text");

void rt_log_refused(uint8_t status, pbx_err detail, int32_t slot)
{
    uint32_t i = (uint32_t)status - PBX_RT_EXIT_ARGS;
    rt_log_g.len = 0U;
    RT_LOG_LIT("powerboxd: startup refused, exit status ");
    rt_log_u64(status);
    RT_LOG_LIT(": ");
    rt_log_str(status >= (uint8_t)PBX_RT_EXIT_ARGS &&
                       status <= (uint8_t)PBX_RT_EXIT_NOFILE
                   ? rt_log_refusals[i]
                   : "unknown refusal");
    if (slot >= 0) {
        RT_LOG_LIT(" (slot ");
        rt_log_u64((uint64_t)slot);
        RT_LOG_LIT(")");
    }
    if (detail != PBX_OK) {
        RT_LOG_LIT(": ");
        rt_log_str(pbx_err_text(detail));
        RT_LOG_LIT(" (");
        rt_log_str(pbx_err_name(detail));
        RT_LOG_LIT(")");
    }
    rt_log_flush();
}

void rt_log_note(const char *text)
{
    rt_log_g.len = 0U;
    rt_log_str(text);
    rt_log_flush();
}

void rt_log_attach(uint32_t route, uint32_t pid, pbx_err status)
{
    static const char *const names[] = {"none",  "vfsd", "ttyd",
                                        "procd", "wake", "broker"};
    rt_log_g.len = 0U;
    RT_LOG_LIT("event=route-attach");
    rt_log_name(RT_LOG_KEY("route"),
                route < PBX_ARRAY_LEN(names) ? names[route] : "none");
    RT_LOG_LIT(" pid=");
    rt_log_u64(pid);
    if (status == PBX_OK) {
        RT_LOG_LIT(" outcome=accepted");
    } else {
        RT_LOG_LIT(" outcome=refused");
        rt_log_name(RT_LOG_KEY("error"), pbx_err_name(status));
    }
    rt_log_flush();
}
