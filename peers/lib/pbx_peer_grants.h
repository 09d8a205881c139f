/*
 * pbx_peer_grants.h: the user's view of grants, pure text work for `pbx
 * grants` and `pbx log`: one row of ttyd's query socket split into its
 * fields, and the stack log's key=value event lines judged for how each
 * grant ended and by whom. No I/O, no allocation.
 */
#ifndef PBX_PEER_GRANTS_H
#define PBX_PEER_GRANTS_H

#include "peers/lib/pbx_peer_tty.h"

/**
 * pbx_peer_grants_row is one row of ttyd's query socket (the line format
 * of pbx_peer_tty_views_row), split: every pointer points into buf, NUL
 * terminated, valid while the struct is. Values are as ttyd wrote them
 * (selector and label still escaped, "-" for none).
 */
typedef struct pbx_peer_grants_row {
    /** buf holds the split copy of the line. */
    char buf[PBX_PEER_TTY_ROW_BYTES_MAX];
    /** grant is "I.G". */
    const char *grant;
    /** op is the operation name. */
    const char *op;
    /** cls is the object class name. */
    const char *cls;
    /** object is the object identity "ID.GEN". */
    const char *object;
    /** job is the job id. */
    const char *job;
    /** slot is the installed slot. */
    const char *slot;
    /** job_gen is the job generation. */
    const char *job_gen;
    /** lifetime is the lifetime name. */
    const char *lifetime;
    /** request is "I.G" or "-". */
    const char *request;
    /** selector is the escaped selector the user saw, or "-". */
    const char *selector;
    /** label is the escaped display label, or "-". */
    const char *label;
    /** program is the program entry (the rest of the line up to the
     * digest). */
    const char *program;
    /** digest is the selector's SHA-256, 64 lower-case hex digits. */
    const char *digest;
    /** since_ms is the ACTIVE time in ms since the Unix epoch. */
    uint64_t since_ms;
} pbx_peer_grants_row;

/**
 * pbx_peer_grants_row_parse splits line (NUL-terminated, a trailing
 * newline allowed) into *out. Returns false when the line is not a row of
 * that format (a word out of place, a field missing, a bad time or a line
 * longer than PBX_PEER_TTY_ROW_BYTES_MAX, no " digest HEX" at its end);
 * *out is then unspecified.
 */
bool pbx_peer_grants_row_parse(const char *line, pbx_peer_grants_row *out);

/** PBX_PEER_GRANTS_KEYS_MAX bounds the key=value pairs read of one line. */
#define PBX_PEER_GRANTS_KEYS_MAX 16U
/** PBX_PEER_GRANTS_LINE_MAX bounds one log line read (longer: cut). */
#define PBX_PEER_GRANTS_LINE_MAX 8192U

/**
 * pbx_peer_grants_event is one key=value event of the stack log, split:
 * time is the line's first word (the supervisor's RFC 3339 stamp, or ""
 * when the line has none), keys[i]/values[i] the pairs from "event="
 * on, all pointing into buf. Values are as written (%XX escapes kept).
 */
typedef struct pbx_peer_grants_event {
    /** buf holds the split copy of the line. */
    char buf[PBX_PEER_GRANTS_LINE_MAX];
    /** time is the line's time stamp or "". */
    const char *time;
    /** count is the number of pairs. */
    size_t count;
    /** keys are the pairs' keys ("event" first). */
    const char *keys[PBX_PEER_GRANTS_KEYS_MAX];
    /** values are the pairs' values. */
    const char *values[PBX_PEER_GRANTS_KEYS_MAX];
} pbx_peer_grants_event;

/**
 * pbx_peer_grants_event_parse finds " event=" (or "event=" at the start)
 * in line and splits the blank-separated key=value words from there into
 * *out. Returns false when the line holds no event.
 */
bool pbx_peer_grants_event_parse(const char *line, pbx_peer_grants_event *out);

/**
 * pbx_peer_grants_get returns the value of key in e, or "-" when e has
 * none (a static string, never NULL).
 */
const char *pbx_peer_grants_get(const pbx_peer_grants_event *e,
                                const char *key);

/** PBX_PEER_GRANTS_USER_MAX bounds the user cancels an audit remembers. */
#define PBX_PEER_GRANTS_USER_MAX 4096U

/**
 * pbx_peer_grants_audit is the caller-allocated memory of `pbx log`: the
 * grants the user cancelled (launchd's event=user-cancel lines), exact
 * "I:G" identities, the oldest forgotten first past the bound.
 */
typedef struct pbx_peer_grants_audit {
    /** count is how many entries were ever noted. */
    size_t count;
    /** grants holds the noted grant identities ("I:G", NUL-terminated). */
    char grants[PBX_PEER_GRANTS_USER_MAX][24];
} pbx_peer_grants_audit;

/** pbx_peer_grants_audit_init empties a (old contents ignored). */
void pbx_peer_grants_audit_init(pbx_peer_grants_audit *a);

/**
 * pbx_peer_grants_audit_note takes event e into a when it is a user
 * cancel (event=user-cancel with a grant); other events are ignored.
 * The whole log is noted before any end is judged, so the order in which
 * the supervisor interleaved launchd's and powerboxd's lines does not
 * matter.
 */
void pbx_peer_grants_audit_note(pbx_peer_grants_audit *a,
                                const pbx_peer_grants_event *e);

/**
 * pbx_peer_grants_ended judges a grant-end event e: returns NULL when e
 * is not event=grant-end, else a static phrase saying how the grant ended
 * and by whom: "consumed by the program", "expired (its job or
 * invocation ended)", "cancelled by the user" (a user cancel of that
 * exact grant was noted), "cancelled by the program", "revoked: its
 * provider (vfsd) was lost", "revoked: its installer (procd) was lost",
 * "revoked", or "ended" for an end value it does not know. *by is set to
 * the short actor for key=value output: "program", "user", "launchd",
 * "vfsd-lost", "procd-lost", "powerboxd" or "-".
 */
const char *pbx_peer_grants_ended(const pbx_peer_grants_audit *a,
                                  const pbx_peer_grants_event *e,
                                  const char **by);

/** PBX_PEER_GRANTS_LOGGED_MAX is the most selector bytes powerboxd's log
 * shows of one selector (a longer one is cut and ends with "...";
 * docs/HOST.md "powerboxd's log"), so the most a log line can name
 * exactly. */
#define PBX_PEER_GRANTS_LOGGED_MAX 256U

/**
 * pbx_peer_grants_object is the exact object of one live grant, looked
 * up by its selector digest: the digest from the row, and once a log
 * line's selector hashed to it, those selector bytes. Caller-allocated,
 * one per row; no pointer is kept into the row or the log.
 */
typedef struct pbx_peer_grants_object {
    /** digest is the row's selector SHA-256. */
    uint8_t digest[PBX_IPC_DIGEST_BYTES];
    /** found is true once a logged selector hashed to digest. */
    bool found;
    /** len is the number of selector bytes found. */
    uint16_t len;
    /** selector holds the selector bytes found (len of them). */
    uint8_t selector[PBX_PEER_GRANTS_LOGGED_MAX];
} pbx_peer_grants_object;

/**
 * pbx_peer_grants_object_init takes row r's digest into *o (nothing found
 * yet). Returns false when r's digest is not 64 hex digits.
 */
bool pbx_peer_grants_object_init(pbx_peer_grants_object *o,
                                 const pbx_peer_grants_row *r);

/**
 * pbx_peer_grants_object_match looks at one log event e: when it is
 * powerboxd's event=decision line, its object= value is unescaped (%XX)
 * and hashed, and every entry of objs[0..n) not yet found whose digest
 * equals that SHA-256 takes the selector bytes. A cut selector ("..."),
 * a value with a bad escape, an empty one or one longer than
 * PBX_PEER_GRANTS_LOGGED_MAX bytes matches nothing (its hash is not the
 * digest of any whole selector but by chance). Returns how many entries
 * it filled.
 */
size_t pbx_peer_grants_object_match(pbx_peer_grants_object *objs, size_t n,
                                    const pbx_peer_grants_event *e);

/**
 * pbx_peer_grants_object_text writes the exact object of row r (o
 * initialised from r, then matched against the log) NUL-terminated into
 * out (cap bytes; PBX_PEER_TTY_ROW_BYTES_MAX always fits) and returns
 * where it came from: "prompt" when the selector the user saw in r (\xNN
 * escaped, as ttyd lists it) hashes to the digest, else "log" when a log
 * line's selector did (written escaped the way ttyd escapes a selector),
 * else "digest": out is then "sha256:" and the digest in hex, never the
 * label. Returns NULL (out "") when cap is too small for the text.
 */
const char *pbx_peer_grants_object_text(const pbx_peer_grants_row *r,
                                        const pbx_peer_grants_object *o,
                                        char *out, size_t cap);

/**
 * pbx_peer_grants_end_line writes the `pbx log` line of event e (a
 * grant end judged with audit a, see pbx_peer_grants_ended)
 * NUL-terminated into out (cap bytes, cut to fit), in the table form
 * "TIME grant G (ENTRY, job J, OP OBJECT, LIFETIME): HOW" or with kv the
 * key=value form "time=... grant=... ... end=END by=BY reason=R", no
 * newline. Returns false (out "") when e is not a grant end.
 */
bool pbx_peer_grants_end_line(const pbx_peer_grants_audit *a,
                              const pbx_peer_grants_event *e, bool kv,
                              char *out, size_t cap);

#endif /* PBX_PEER_GRANTS_H */
