/*
 * pbx_peer_tty.h: ttyd's pure decisions. The session policy table (parsed
 * from a configuration file, first matching rule wins, exceptional
 * requests never ALLOW), the trusted prompt's bookkeeping (RETRY while
 * earlier input is pending, the exact text shown, the answer parsed and
 * echoed), the bounded queue of prompts waiting for the one terminal (one
 * showing at a time; WITHDRAW removes one), and the table of VIEW rows
 * published by powerboxd.
 */
#ifndef PBX_PEER_TTY_H
#define PBX_PEER_TTY_H

#include "ipc/pbx_ipc.h"

/** PBX_PEER_TTY_RULES_MAX bounds the policy table. */
#define PBX_PEER_TTY_RULES_MAX 64U
/** PBX_PEER_TTY_VIEWS_MAX bounds the VIEW table: one row per live grant
 * whose ACTIVE row powerboxd sent, so it must be at least the PBX1
 * grants capacity of the deployment (1024 covers every geometry the
 * tests and `pbx geometry make`'s default use). When it is full ttyd
 * answers ACTIVE with PBX_PEER_E_BUSY and powerboxd denies that request
 * (PEER_FAILED); a REMOVE always frees its row. */
#define PBX_PEER_TTY_VIEWS_MAX 1024U
/** PBX_PEER_TTY_PATTERN_MAX bounds a rule's entry or selector pattern, its
 * NUL included (a longer one is refused when the line is parsed). */
#define PBX_PEER_TTY_PATTERN_MAX 192U
/** PBX_PEER_TTY_ANY is the wildcard value of a rule field ("*"). */
#define PBX_PEER_TTY_ANY 0U

/**
 * pbx_peer_tty_rule is one policy rule. Each field is a value to match or
 * PBX_PEER_TTY_ANY (session and realm use any_session / any_realm because
 * zero is a real value there).
 */
typedef struct pbx_peer_tty_rule {
    /** any_session is true for "*". */
    bool any_session;
    /** any_realm is true for "*". */
    bool any_realm;
    /** session to match. */
    uint64_t session;
    /** realm to match. */
    uint32_t realm;
    /** operation to match (a pbx_ipc_operation) or ANY. */
    uint16_t operation;
    /** object_class to match (a pbx_ipc_class) or ANY. */
    uint16_t object_class;
    /** urgency to match (a pbx_ipc_urgency) or ANY. */
    uint8_t urgency;
    /** verdict is the pbx_ipc_verdict given on a match. */
    uint8_t verdict;
    /** entry is the program entry pattern (see pbx_peer_tty_glob),
     * NUL-terminated; "" matches every entry ("*" in the file). */
    char entry[PBX_PEER_TTY_PATTERN_MAX];
    /** selector is the selector pattern (see pbx_peer_tty_glob),
     * NUL-terminated; "" matches every selector ("*" in the file). */
    char selector[PBX_PEER_TTY_PATTERN_MAX];
} pbx_peer_tty_rule;

/** pbx_peer_tty_policy is the caller-allocated policy table. */
typedef struct pbx_peer_tty_policy {
    /** count is the number of rules in use. */
    size_t count;
    /** rules are matched in order; the first match decides. */
    pbx_peer_tty_rule rules[PBX_PEER_TTY_RULES_MAX];
} pbx_peer_tty_policy;

/**
 * pbx_peer_tty_policy_line parses one configuration line (NUL-terminated,
 * at most 511 bytes are read) and appends the rule to p. Two forms:
 *
 *   SESSION REALM OPERATION CLASS URGENCY VERDICT                (6 fields)
 *   SESSION REALM OPERATION CLASS URGENCY ENTRY SELECTOR VERDICT (8 fields)
 *
 * The 6-field form (every older policy file) still parses, as the 8-field
 * form with ENTRY and SELECTOR "*". SESSION and REALM are numbers or "*";
 * OPERATION, CLASS and URGENCY a name from pbx_peer.h, a number or "*";
 * ENTRY and SELECTOR "*" (any) or a pattern (pbx_peer_tty_glob; printable
 * ASCII without blanks, shorter than PBX_PEER_TTY_PATTERN_MAX, "**" only
 * as a whole last component); VERDICT allow, deny or prompt. '#' starts a
 * comment; blank lines are skipped. ALLOW is accepted only with urgency
 * "routine", so no rule can ever allow an exceptional request. Returns
 * NULL on success or a static message naming what is wrong (p unchanged).
 */
const char *pbx_peer_tty_policy_line(pbx_peer_tty_policy *p, const char *line);

/**
 * pbx_peer_tty_glob reports whether text (len bytes, any bytes) matches
 * pattern (NUL-terminated). Both are split on '/' into components, and
 * component k of the pattern must match component k of the text, with
 * the same number of components, except that a last pattern component
 * "**" matches one or more remaining components whole (the pattern docs,
 * slash, two stars matches "docs/a" and "docs/a/b", not "docs"). Inside a
 * component '*' matches any run of bytes (none included, never '/'), '?'
 * exactly one byte (never '/'), every other byte itself. Matching is
 * iterative, with no recursion: fewer than 2 * (component pattern length
 * + 1) * (component text length + 1) steps per component.
 */
bool pbx_peer_tty_glob(const char *pattern, const uint8_t *text, size_t len);

/**
 * pbx_peer_tty_decide returns the verdict for a POLICY request, whose body
 * carries the program entry but not the selector: the verdict of the
 * first rule matching every field but the selector when that rule's
 * selector is "*"; PROMPT when that rule has a selector pattern (the
 * answer needs the selector, which the PROMPT call carries: see
 * pbx_peer_tty_decide_prompt); DENY when no rule matches; and never ALLOW
 * for an exceptional request (turned into DENY as a second line of
 * defence).
 */
uint8_t pbx_peer_tty_decide(const pbx_peer_tty_policy *p,
                            const pbx_ipc_context *ctx);

/**
 * pbx_peer_tty_decide_selector returns the verdict for ctx and the
 * scope-relative selector sel (len bytes): the first rule matching every
 * field, selector pattern included, decides; DENY when none matches; never
 * ALLOW for an exceptional request. *rule (may be NULL) gets the deciding
 * rule's index, or p->count when none matched. This is the whole answer
 * `pbx policy check` prints.
 */
uint8_t pbx_peer_tty_decide_selector(const pbx_peer_tty_policy *p,
                                     const pbx_ipc_context *ctx,
                                     const uint8_t *sel, size_t len,
                                     size_t *rule);

/**
 * pbx_peer_tty_decide_prompt decides what ttyd does with PROMPT pr: PROMPT
 * (show it) unless pbx_peer_tty_decide answered PROMPT for pr's context
 * only because a selector pattern was in the way; then the verdict of
 * pbx_peer_tty_decide_selector with pr's selector (ALLOW: answer approve
 * without showing, DENY: answer deny, PROMPT: show). A policy without
 * selector patterns therefore shows every PROMPT, as before.
 */
uint8_t pbx_peer_tty_decide_prompt(const pbx_peer_tty_policy *p,
                                   const pbx_ipc_prompt *pr);

/**
 * pbx_peer_tty_rule_text writes rule r in the 8-field form (the form
 * pbx_peer_tty_policy_line parses, names for names) NUL-terminated into
 * out (out_len bytes, at least 1; truncated to fit). Returns the length
 * written without the NUL.
 */
size_t pbx_peer_tty_rule_text(const pbx_peer_tty_rule *r, char *out,
                              size_t out_len);

/**
 * pbx_peer_tty_prompt_admit decides whether a PROMPT may be shown now:
 * false (answer RETRY and discard the pending input) while earlier
 * terminal input is pending, so type-ahead can never answer a prompt the
 * user has not seen.
 */
bool pbx_peer_tty_prompt_admit(bool input_pending);

/**
 * pbx_peer_tty_prompt_text writes the trusted prompt for p (request id
 * request) NUL-terminated into out (out_len bytes): program entry, job,
 * session, realm, request, operation, class, lifetime, mode, urgency,
 * object identity, the exact selector (non-printable bytes escaped as
 * \xNN), its SHA-256 and the display label marked as such. Returns the
 * length written (truncated to fit).
 */
size_t pbx_peer_tty_prompt_text(const pbx_ipc_prompt *p, pbx_ipc_id request,
                                char *out, size_t out_len);

/**
 * pbx_peer_tty_answer_parse reads one answer line of len bytes: "y" or
 * "yes" gives PBX_IPC_ANSWER_APPROVE, "n" or "no" PBX_IPC_ANSWER_DENY
 * (case-insensitive, surrounding blanks and newline ignored); anything
 * else returns 0 (ask again).
 */
uint8_t pbx_peer_tty_answer_parse(const char *line, size_t len);

/**
 * PBX_PEER_TTY_RESET is what ttyd writes before every prompt, so that no
 * state a program left on the terminal changes how the prompt looks or
 * what the terminal sends back while it shows: a soft reset that keeps
 * the cursor where the output ended, never a screen clear. In order: SGR
 * reset (ESC [ 0 m), show the cursor (ESC [ ? 25 h), leave the alternate
 * screen without restoring a saved cursor (ESC [ ? 1047 l); then, between
 * a cursor save and restore (ESC 7, ESC 8) because each of them moves the
 * cursor home, the whole screen as scroll region (ESC [ r) and origin
 * mode off (ESC [ ? 6 l); insert mode off (ESC [ 4 l), autowrap on
 * (ESC [ ? 7 h), G0 as US ASCII (ESC ( B) and G0 shifted in (SI, 0x0F).
 * Then the input modes a program could use to make the terminal send
 * bytes while the prompt shows: 7-bit replies (S7C1T, ESC SP F), mouse
 * tracking off in every mode and encoding (ESC [ ? 9 ; 1000 ; 1001 ; 1002
 * ; 1003 ; 1005 ; 1006 ; 1007 ; 1015 l), focus reports off (? 1004 l),
 * bracketed paste off (? 2004 l), normal cursor keys (? 1 l), numeric
 * keypad (ESC >), xterm's modifyOtherKeys off (ESC [ > 4 ; 0 m), the
 * kitty keyboard flags cleared and their stack popped (ESC [ = 0 ; 1 u,
 * ESC [ < 99 u). Then the colours a program could use to hide the
 * prompt: the palette, foreground and background reset (OSC 104, OSC
 * 110, OSC 111, each ended by ST) and reverse video off (ESC [ ? 5 l);
 * SGR reset again. Last a new line and erase below (CR LF, ESC [ J), so
 * nothing written before stays on the lines the prompt draws over, while
 * the lines above it (the story so far) stay on the screen. The restore
 * may bring back origin mode, which with the whole screen as scroll
 * region addresses the same cells. ttyd discards the terminal's input
 * after it draws (docs/HOST.md, "The job's terminal").
 */
#define PBX_PEER_TTY_RESET                                                     \
    "\033[0m\033[?25h\033[?1047l\0337\033[r\033[?6l\0338\033[4l\033[?7h"       \
    "\033(B\017\033 F\033[?9;1000;1001;1002;1003;1005;1006;1007;1015l"         \
    "\033[?1004l\033[?2004l\033[?1l\033>\033[>4;0m\033[=0;1u\033[<99u"         \
    "\033]104\033\\\033]110\033\\\033]111\033\\\033[?5l\033[0m\r\n\033[J"

/**
 * pbx_peer_tty_answer_fill fills *out with the ANSWER reply that echoes
 * the prompt's session, realm, job, request and object with answer.
 */
void pbx_peer_tty_answer_fill(const pbx_ipc_prompt *p, pbx_ipc_id request,
                              uint8_t answer, pbx_ipc_prompt_reply *out);

/** PBX_PEER_TTY_QUEUE_MAX bounds the prompts ttyd holds at once (the one
 * showing included); a PROMPT beyond it is answered RETRY. */
#define PBX_PEER_TTY_QUEUE_MAX 16U

/**
 * pbx_peer_tty_queued is one PROMPT ttyd holds: the call to answer (route,
 * seq, request id) and a copy of the prompt, whose selector points into
 * the entry's own selector bytes (entries never move while in use).
 */
typedef struct pbx_peer_tty_queued {
    /** route is the I/O main's handle of the connection the PROMPT came on. */
    int route;
    /** seq is the PROMPT's per-call seq, echoed by its reply. */
    uint32_t seq;
    /** request is the PROMPT's header request id (gen nonzero). */
    pbx_ipc_id request;
    /** prompt is the decoded PROMPT; prompt.selector points at selector. */
    pbx_ipc_prompt prompt;
    /** selector holds the prompt's selector bytes. */
    uint8_t selector[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
} pbx_peer_tty_queued;

/**
 * pbx_peer_tty_queue holds the prompts ttyd has taken and not yet answered,
 * oldest first. At most one is showing on the terminal: the oldest, and
 * only once the I/O main says so (pbx_peer_tty_queue_show). Plain data.
 */
typedef struct pbx_peer_tty_queue {
    /** order lists the entries in use, oldest first (count of them). */
    uint8_t order[PBX_PEER_TTY_QUEUE_MAX];
    /** count is how many entries are in use. */
    size_t count;
    /** showing is true while order[0] is on the terminal. */
    bool showing;
    /** used marks the entries in use. */
    bool used[PBX_PEER_TTY_QUEUE_MAX];
    /** entries are the prompts, in no order (see order). */
    pbx_peer_tty_queued entries[PBX_PEER_TTY_QUEUE_MAX];
} pbx_peer_tty_queue;

/** pbx_peer_tty_queue_init empties q (old contents ignored). */
void pbx_peer_tty_queue_init(pbx_peer_tty_queue *q);

/**
 * pbx_peer_tty_queue_push takes the PROMPT p (request id request, per-call
 * seq, arrived on route) at the tail of q, copying p and its selector.
 * Returns 0; PBX_PEER_E_BUSY when q is full (the caller answers RETRY:
 * nothing is dropped and nothing is shown); PBX_PEER_E_CONFLICT when q
 * already holds a prompt of the same request from the same route (that
 * call is the one that will be answered). q is unchanged on an error.
 */
uint32_t pbx_peer_tty_queue_push(pbx_peer_tty_queue *q, int route, uint32_t seq,
                                 pbx_ipc_id request, const pbx_ipc_prompt *p);

/**
 * pbx_peer_tty_queue_head returns the oldest prompt in q (the one showing,
 * or the next to show), or NULL when q is empty. The pointer is valid
 * until the entry leaves q.
 */
const pbx_peer_tty_queued *pbx_peer_tty_queue_head(const pbx_peer_tty_queue *q);

/**
 * pbx_peer_tty_queue_show marks the head as showing on the terminal.
 * Returns false (nothing changes) when q is empty or the head is already
 * showing.
 */
bool pbx_peer_tty_queue_show(pbx_peer_tty_queue *q);

/**
 * pbx_peer_tty_queue_pop removes the head (answered, or refused RETRY as
 * it was about to show) and clears showing. Returns false when q is empty.
 */
bool pbx_peer_tty_queue_pop(pbx_peer_tty_queue *q);

/** pbx_peer_tty_withdrawn is what a WITHDRAW found. */
typedef enum pbx_peer_tty_withdrawn {
    /** No prompt of that request from that route: acknowledged, nothing
     * changes (a repeat, or one already answered). */
    PBX_PEER_TTY_WD_UNKNOWN = 0,
    /** The prompt was showing: removed; the terminal must say so. */
    PBX_PEER_TTY_WD_SHOWING = 1,
    /** The prompt was queued, not shown: removed silently. */
    PBX_PEER_TTY_WD_QUEUED = 2,
    /** The request's prompt shows another object: refused
     * (PBX_PEER_E_MISMATCH), nothing changes. */
    PBX_PEER_TTY_WD_MISMATCH = 3
} pbx_peer_tty_withdrawn;

/**
 * pbx_peer_tty_queue_withdraw withdraws the prompt of request (exact index
 * and generation) that came on route and shows object (exact id and
 * generation). A withdrawn prompt is removed without an answer: its PROMPT
 * call is never answered, since powerboxd has already ended it.
 */
pbx_peer_tty_withdrawn pbx_peer_tty_queue_withdraw(pbx_peer_tty_queue *q,
                                                   int route,
                                                   pbx_ipc_id request,
                                                   pbx_ipc_object object);

/**
 * pbx_peer_tty_queue_drop_route removes every prompt that came on route
 * (its connection closed: nobody is left to answer). Returns how many were
 * removed and stores in *was_showing whether one of them was showing.
 */
size_t pbx_peer_tty_queue_drop_route(pbx_peer_tty_queue *q, int route,
                                     bool *was_showing);

/** PBX_PEER_TTY_SEEN_MAX bounds the approved prompts ttyd remembers until
 * their grant's ACTIVE row arrives (the row itself carries only the
 * selector's digest, so the selector a user saw is taken from here). */
#define PBX_PEER_TTY_SEEN_MAX 32U

/** PBX_PEER_TTY_ROW_BYTES_MAX bounds one listed row, its newline and NUL
 * included: the fixed words, numbers and digest (under 400 bytes), the
 * selector and label escaped (at most 4 bytes per byte) and the program
 * entry escaped. */
#define PBX_PEER_TTY_ROW_BYTES_MAX                                             \
    (512U + 4U * (PBX_IPC_SELECTOR_LEN_BYTES_MAX +                             \
                  PBX_IPC_LABEL_LEN_BYTES_MAX + PBX_IPC_ENTRY_LEN_BYTES_MAX))

/**
 * pbx_peer_tty_seen is one approved prompt: its request, the object it
 * showed, the selector's digest and the selector bytes the user saw.
 */
typedef struct pbx_peer_tty_seen {
    /** request is the PROMPT's request id (gen nonzero when in use). */
    pbx_ipc_id request;
    /** object is the object identity the prompt showed. */
    pbx_ipc_object object;
    /** digest is the prompt's selector SHA-256. */
    uint8_t digest[PBX_IPC_DIGEST_BYTES];
    /** selector_len is the number of selector bytes. */
    uint16_t selector_len;
    /** selector holds the selector bytes shown. */
    uint8_t selector[PBX_IPC_SELECTOR_LEN_BYTES_MAX];
} pbx_peer_tty_seen;

/**
 * pbx_peer_tty_views is the caller-allocated table of ACTIVE rows. Besides
 * each row it keeps the time the row became ACTIVE and, when the grant's
 * prompt was shown and approved, its request id and the selector shown.
 */
typedef struct pbx_peer_tty_views {
    /** used marks the entries of rows in use. */
    bool used[PBX_PEER_TTY_VIEWS_MAX];
    /** rows are the published grant rows. */
    pbx_ipc_view rows[PBX_PEER_TTY_VIEWS_MAX];
    /** since_ms is each row's ACTIVE time (ms since the Unix epoch). */
    uint64_t since_ms[PBX_PEER_TTY_VIEWS_MAX];
    /** route is the I/O main's handle of the route each row came on. */
    int route[PBX_PEER_TTY_VIEWS_MAX];
    /** request is each row's request id from its prompt ({0,0}: none). */
    pbx_ipc_id request[PBX_PEER_TTY_VIEWS_MAX];
    /** selector_len is each row's shown selector length (0: none). */
    uint16_t selector_len[PBX_PEER_TTY_VIEWS_MAX];
    /** selector holds each row's shown selector bytes. */
    uint8_t selector[PBX_PEER_TTY_VIEWS_MAX][PBX_IPC_SELECTOR_LEN_BYTES_MAX];
    /** seen is a ring of approved prompts waiting for their ACTIVE row. */
    pbx_peer_tty_seen seen[PBX_PEER_TTY_SEEN_MAX];
    /** seen_next is the ring slot the next approved prompt overwrites. */
    size_t seen_next;
} pbx_peer_tty_views;

/** pbx_peer_tty_views_init empties v (old contents ignored). */
void pbx_peer_tty_views_init(pbx_peer_tty_views *v);

/**
 * pbx_peer_tty_views_seen remembers that the user approved prompt p of
 * request (gen nonzero), so that the ACTIVE row of its grant (the same
 * object identity and selector digest) lists the selector the user saw.
 * The oldest remembered prompt is forgotten first (ring of
 * PBX_PEER_TTY_SEEN_MAX); p's selector bytes are copied.
 */
void pbx_peer_tty_views_seen(pbx_peer_tty_views *v, pbx_ipc_id request,
                             const pbx_ipc_prompt *p);

/**
 * pbx_peer_tty_views_apply applies one VIEW that arrived on route (the I/O
 * main's handle of the connection) at now_ms (ms since the Unix epoch, the
 * row's "since" when it is added). ACTIVE adds the row, remembering route
 * (an identical repeat is acknowledged, keeps its first time and then
 * belongs to the route it came on last: that powerboxd is the one that can
 * remove it; the same grant with another row is PBX_PEER_E_CONFLICT; a
 * full table PBX_PEER_E_BUSY). REMOVE removes the row with the same grant
 * after checking the full row matches (PBX_PEER_E_MISMATCH otherwise); a
 * REMOVE of an absent grant is acknowledged, so a retried REMOVE
 * reconciles. Returns 0 or a status.
 */
uint32_t pbx_peer_tty_views_apply(pbx_peer_tty_views *v, const pbx_ipc_view *rq,
                                  int route, uint64_t now_ms);

/**
 * pbx_peer_tty_views_take_route removes one row that came on route (the
 * route closed: the powerboxd on it can no longer remove the row) and
 * stores its grant in *grant. Returns false when no row of route is left;
 * a caller removes them all by calling it until then (at most
 * PBX_PEER_TTY_VIEWS_MAX times).
 */
bool pbx_peer_tty_views_take_route(pbx_peer_tty_views *v, int route,
                                   pbx_ipc_id *grant);

/**
 * pbx_peer_tty_views_row writes the line of row i (newline and NUL
 * included, truncated to fit) into out (out_len bytes, at least 1) and
 * returns its length without the NUL, or 0 when row i is not in use or i
 * is past the table. The line reads
 *
 *   grant I.G OP CLASS object ID.GEN job JOB slot S job-gen N lifetime LT
 *   since MS request I.G selector SEL label LABEL program ENTRY
 *   digest HEX
 *
 * (one line): MS is the ACTIVE time in ms since the Unix epoch; HEX the
 * row's selector SHA-256 (64 lower-case hex digits, last, after the
 * entry, so that a reader takes it from the line's end); request
 * and selector are "-" unless the grant's prompt was shown, and label "-"
 * when empty. SEL and LABEL escape every byte outside 0x21..0x7E, and
 * backslash, as \xNN (so neither holds a blank and "-" alone means none;
 * a one-byte "-" is written \x2d); ENTRY, last, is written as the prompt
 * writes it (blanks kept, other bytes escaped) before the digest. The
 * words up to slot are the old view file's, in its order.
 */
size_t pbx_peer_tty_views_row(const pbx_peer_tty_views *v, size_t i, char *out,
                              size_t out_len);

/**
 * pbx_peer_tty_views_list writes one line per ACTIVE row (see
 * pbx_peer_tty_views_row) NUL-terminated into out (out_len bytes,
 * truncated to fit) and returns the row count.
 */
size_t pbx_peer_tty_views_list(const pbx_peer_tty_views *v, char *out,
                               size_t out_len);

#endif /* PBX_PEER_TTY_H */
