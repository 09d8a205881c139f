/*
 * liars.h: lying peers in front of the real powerboxd binary. The harness
 * plays vfsd, ttyd, procd and launchd (its broker and its wake route)
 * honestly, except for one armed fault: one reply of one call told
 * wrongly (tests/e2e/test_e2e_liars.c holds the table of faults and the
 * runner; tests/e2e/test_e2e_liars_peer.c the honest peers;
 * tests/e2e/test_e2e_liars_lie.c how a reply is told wrongly;
 * tests/e2e/test_e2e_liars_missing.c vfsd's NOT_FOUND, honest or not).
 */
#ifndef PBX_E2E_LIARS_H
#define PBX_E2E_LIARS_H

#include "capabi/pbx_capabi.h"
#include "e2e_harness.h"
#include "ipc/pbx_ipc.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** LR_KEPT_MAX bounds the descriptor ends the harness keeps per run. */
#define LR_KEPT_MAX 32

/** LR_REQS_MAX bounds the requests one row has in flight at once. */
#define LR_REQS_MAX 2

/** lr_how names the way the armed reply is told wrongly. */
typedef enum lr_how {
    LR_HOW_NONE = 0,  /**< every reply honest */
    LR_HOW_BODY,      /**< one echoed body field wrong (lr_field) */
    LR_HOW_ZERO,      /**< one echoed identity zero (lr_field) */
    LR_HOW_HEADER,    /**< a header field wrong, a poisoned body, then the
                           honest reply (RETIRE, REMOVE: the honest body
                           under the wrong header, and nothing after) */
    LR_HOW_EXTRA_FD,  /**< the honest reply with a receipt none belongs */
    LR_HOW_NO_FD,     /**< the reply without the receipt it must carry */
    LR_HOW_DUPLICATE, /**< the honest reply twice, each with its receipt */
    LR_HOW_ON_SCOPE,  /**< RESOLVE answered on the scope, not vfsd's route */
    LR_HOW_SILENT,    /**< never answered */
    LR_HOW_LATE,      /**< answered only after the request's decision */
    LR_HOW_STAGING,   /**< procd's staging handle as revocation authority */
    LR_HOW_HOLD,      /**< held while the decision is asked, then honest */
    LR_HOW_REORDER,   /**< the first request's reply after the second's */
    LR_HOW_ENDED,     /**< answered after the request was cancelled */
    LR_HOW_DIGEST,    /**< the echoed selector digest wrong at one byte */
    LR_HOW_STALE      /**< never answered; its reply sent again before
                           every later call of the same op */
} lr_how;

/** lr_field names the field an LR_HOW_BODY, ZERO or HEADER fault changes. */
typedef enum lr_field {
    LR_F_NONE = 0,
    LR_F_SESSION,
    LR_F_REALM,
    LR_F_URGENCY,
    LR_F_JOB_ID,
    LR_F_JOB_GEN,
    LR_F_REQ_INDEX,
    LR_F_REQ_GEN,
    LR_F_OBJ_ID,
    LR_F_OBJ_GEN,
    LR_F_OPERATION,
    LR_F_CLASS,
    LR_F_SCOPE,
    LR_F_PROC_ID,
    LR_F_PROC_GEN,
    LR_F_GRANT_INDEX,
    LR_F_GRANT_GEN,
    LR_F_SLOT,
    LR_F_KIND,
    LR_F_VERDICT, /**< POLICY's verdict byte, patched in the encoded reply */
    LR_F_H_INDEX, /**< header request index */
    LR_F_H_GEN,   /**< header request generation */
    LR_F_H_SEQ,   /**< header seq */
    LR_F_H_OP     /**< header operation (another reply of the same peer) */
} lr_field;

/** lr_fault is the one armed lie: the reply to the first call of op (and,
 * for VIEW, of view kind) is told as how says, changing field; digest_at
 * is the digest byte an LR_HOW_DIGEST fault flips. */
typedef struct lr_fault {
    uint16_t op;
    uint8_t view_kind;
    lr_how how;
    lr_field field;
    unsigned digest_at;
} lr_fault;

/**
 * lr_run is one powerboxd with the harness's honest peers around it. The
 * caller owns it; lr_start fills it, lr_stop closes everything.
 */
typedef struct lr_run {
    e2e_proc p;                     /**< powerboxd and our ends of its slots */
    int baseline;                   /**< powerboxd's descriptors when idle */
    lr_fault fault;                 /**< the armed lie */
    bool fired;                     /**< whether the lie was told */
    int scope[LR_REQS_MAX];         /**< our ends of committed scopes, or -1 */
    uint64_t scope_id[LR_REQS_MAX]; /**< their identities (far-end inode) */
    pbx_ipc_id req[LR_REQS_MAX];    /**< the requests begun */
    unsigned nreq;                  /**< how many of req are begun */
    int kept[LR_KEPT_MAX];   /**< our ends of every descriptor we passed */
    unsigned nkept;          /**< how many of kept are used */
    int poison[LR_KEPT_MAX]; /**< our ends of receipts passed in lies */
    unsigned npoison;        /**< how many of poison are used */
    unsigned seen[8];        /**< calls seen, by lr_op_slot */
    unsigned wakes;          /**< WAKEs launchd received */
    pbx_ipc_id woken[8];     /**< the last 8 requests woken */
    uint8_t held[PBX_IPC_FRAME_BYTES_MAX]; /**< a request held back */
    size_t held_len;                       /**< its length, 0 when none */
    int held_route;                        /**< the route it arrived on */
    uint8_t held_outcome; /**< DECISION's outcome while it was held */
    uint32_t last_slot;   /**< installed slot in the last ACTIVE row */
    uint64_t last_object; /**< object id in the last POLICY */
    unsigned want[8];     /**< calls lr_settle waits to have seen */
    bool send_failed;     /**< a reply could not be encoded or sent */
    unsigned stale_sent;  /**< stale replies sent (LR_HOW_STALE) */
    uint16_t cancel_at;   /**< op whose first call makes the client cancel its
                             first request (0: none) */
    bool missing;         /**< vfsd answers RESOLVE NOT_FOUND (lr_on_missing) */
} lr_run;

/** lr_op_slot maps a peer call (op, and view kind for VIEW) to its
 * index in lr_run.seen: 0 RESOLVE, 1 POLICY, 2 PROMPT, 3 INSTALL,
 * 4 DETACH, 5 ACTIVE, 6 REMOVE, 7 RETIRE (and WITHDRAW). */
unsigned lr_op_slot(uint16_t op, uint8_t view_kind);

/** lr_start starts powerboxd on a good inventory and records its idle
 * descriptor count; false when it does not become ready. */
bool lr_start(lr_run *r);

/** lr_stop closes every kept end and stops powerboxd. */
void lr_stop(lr_run *r);

/** lr_open begins b with selector sel on launchd's broker and commits a
 * fresh scope; stores the request in r->req[r->nreq++]. digest_bad, when
 * below 32, flips that byte of the BEGIN digest; *commit_status gets the
 * COMMIT reply's status. False on any transport failure. */
bool lr_open(lr_run *r, const pbx_ipc_begin *b, const char *sel,
             unsigned digest_bad, uint32_t *commit_status);

/** lr_begin sends BEGIN b on the broker; returns its status (0: *id and
 * *dest hold the request and its reserved destination) or -1. */
long lr_begin(lr_run *r, const pbx_ipc_begin *b, pbx_ipc_id *id,
              uint32_t *dest);

/** lr_selector sends len selector bytes at offset for id on the broker
 * (bytes borrowed); returns the reply status or -1. */
long lr_selector(lr_run *r, pbx_ipc_id id, uint32_t offset, uint32_t len,
                 const uint8_t *bytes);

/** lr_commit sends COMMIT of id to dest with a fresh scope, whose far end
 * is recorded as request r->req[r->nreq++]; returns the status or -1. */
long lr_commit(lr_run *r, pbx_ipc_id id, uint32_t dest);

/** lr_begin_rec fills the routine one-shot install-mode BEGIN for sel. */
void lr_begin_rec(pbx_ipc_begin *b, const char *sel);

/** lr_serve answers every peer call honestly (the armed one as the fault
 * says) until want WAKEs have come or ms pass (grown by PBX_E2E_SLOW,
 * e2e_slow, as powerboxd's deadlines are); true when they came. */
bool lr_serve(lr_run *r, unsigned want, int ms);

/** lr_serve_for serves as lr_serve until a WAKE names id (among the
 * last 8), at most ms (grown by PBX_E2E_SLOW); true when one did. */
bool lr_serve_for(lr_run *r, pbx_ipc_id id, int ms);

/** lr_usage asks powerboxd for its USAGE on slot 4 (as its supervisor
 * may) and decodes the report into *u (caller-owned, zeroed first); false
 * when no answered report with this call's nonce comes within 5 s (grown
 * by PBX_E2E_SLOW). */
bool lr_usage(const lr_run *r, pbx_capabi_usage *u);

/** lr_settle serves until powerboxd holds its baseline descriptors,
 * every end in kept and poison sees its far end closed and every call in
 * want was seen as often, at most ms (grown by PBX_E2E_SLOW, so that a
 * peer deadline powerboxd waits out, scaled alike, stays inside it). */
bool lr_settle(lr_run *r, int ms);

/** lr_decision asks DECISION for id on conn; false when no decodable
 * reply came. Descriptors that come with it are closed. */
bool lr_decision(int conn, pbx_ipc_id id, pbx_ipc_decision *d);

/** lr_public sends one public request frame on conn and returns the
 * reply's status, or -1 when none decodes. */
long lr_public(int conn, const uint8_t *frame, size_t len);

/** lr_gone reports whether fd's far end is closed (EOF within ms). */
bool lr_gone(int fd, int ms);

/* The lie helpers (test_e2e_liars_lie.c), used by the honest peers. */

/** lr_pair makes a SEQPACKET pair, keeps our end in r's kept list (its
 * poison list when poison) and returns the end to pass (the caller closes
 * it once sent), or -1; *ino, when not NULL, gets that end's inode. */
int lr_pair(lr_run *r, bool poison, ino_t *ino);

/** lr_armed reports whether the reply to this call (op, and view kind
 * for VIEW) is the armed lie, and marks the lie told when it is. */
bool lr_armed(lr_run *r, uint16_t op, uint8_t kind);

/** lr_header reports whether x is told in the header (a poisoned reply
 * first, then the honest one). */
bool lr_header(const lr_fault *x);

/** lr_e64 adds one to *v when f is x's field. */
void lr_e64(const lr_fault *x, lr_field f, uint64_t *v);

/** lr_e32 adds one to *v when f is x's field. */
void lr_e32(const lr_fault *x, lr_field f, uint32_t *v);

/** lr_flip16 sets *v to the other of a and b when f is x's field. */
void lr_flip16(const lr_fault *x, lr_field f, uint16_t *v, uint16_t a,
               uint16_t b);

/** lr_flip8 sets *v to the other of a and b when f is x's field. */
void lr_flip8(const lr_fault *x, lr_field f, uint8_t *v, uint8_t a, uint8_t b);

/** lr_zero_patch zeroes, for an LR_HOW_ZERO body lie, each of the n bytes
 * of out that differ from honest (the reply encoded honestly). */
void lr_zero_patch(const lr_fault *x, uint8_t *out, const uint8_t *honest,
                   size_t n);

/** lr_header_lie changes x's header field in the n encoded bytes of out
 * (seq is the call's). */
void lr_header_lie(const lr_fault *x, uint8_t *out, size_t n, uint32_t seq);

/** lr_send sends the n bytes of out on fd as the reply to q with the nfds
 * descriptors in fds, then closes those (our ends stay kept). */
void lr_send(lr_run *r, int fd, const pbx_ipc_frame *q, uint8_t *out, size_t n,
             int *fds, int nfds);

/** lr_deliver sends the honest reply in out (with its nfds receipts, 0 or
 * 1) on route to, as the armed lie says when armed. */
void lr_deliver(lr_run *r, bool armed, int to, const pbx_ipc_frame *q,
                uint8_t *out, size_t n, int *fds, int nfds);

/** lr_verdict_lie sets, for an LR_F_VERDICT lie, the verdict of the n
 * encoded bytes of a POLICY reply in out to ALLOW by hand (no encoder
 * writes an ALLOW echoing an exceptional request). */
void lr_verdict_lie(const lr_fault *x, uint8_t *out, size_t n);

/** lr_on_missing answers RESOLVE f, which came through scope k, as vfsd
 * answers a missing object: the exact scoped NOT_FOUND of the request's
 * class (test_e2e_liars_missing.c), or as the armed lie says. */
void lr_on_missing(lr_run *r, unsigned k, const pbx_ipc_frame *f);

/** lr_poison_send sends the n encoded bytes of out (a poisoned body) on
 * route to as a reply to q with the armed header lie told in it, and a
 * fresh receipt (our end in the poison list) when with_fd. */
void lr_poison_send(lr_run *r, int to, const pbx_ipc_frame *q, uint8_t *out,
                    size_t n, bool with_fd);

#endif /* PBX_E2E_LIARS_H */
