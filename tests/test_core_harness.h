/*
 * test_core_harness.h: a scripted ops table for driving the core through
 * its public API (hosted; tests only).
 *
 * The harness owns a fake slot table (kind, rights, provenance and a
 * reservation flag per slot), answers every peer call from a per-route
 * script of answers built with the ipc encoders (so echoes are exact
 * unless a test asks for a wrong one), injects deletion outcomes, and
 * logs every effect as one space-separated trace string so tests can
 * assert the exact sequence. A client side builds public frames and runs
 * the core until idle. th_conserved checks capability conservation at any
 * point; th_quiescent checks the startup baseline.
 *
 * Peer calls are split-phase: ops.send takes the scripted answer off its
 * route's FIFO (BUSY and FAIL are answered at once), copies the sent
 * frame and queues a pending reply. The reply itself, with its receipts,
 * is built only when it is delivered through pbx_core_on_peer_reply,
 * echoing the sent frame's seq, op and header identity exactly as a
 * correct peer would. Unless h->hold is set, th_step and th_run deliver
 * every pending reply (oldest first) right after each step, so a step's
 * call is answered before the next step, as the synchronous calls were.
 * With h->hold set replies stay queued until a test delivers, drops or
 * tampers with them (th_deliver, th_drop, th_reply_build).
 */
#ifndef TEST_CORE_HARNESS_H
#define TEST_CORE_HARNESS_H

#include "../core/pbx_core.h"

/** TH_SLOTS is the size of the fake slot table. */
#define TH_SLOTS 512U
/** TH_T_FIRST is the first transient slot. */
#define TH_T_FIRST 64U
/** TH_T_COUNT is the number of transient slots. */
#define TH_T_COUNT 256U
/** TH_SCRIPT_MAX bounds each answer queue. */
#define TH_SCRIPT_MAX 32U
/** TH_TRACE_MAX bounds the effect trace. */
#define TH_TRACE_MAX 8192U
/** TH_PEND_MAX bounds the replies pending at once. */
#define TH_PEND_MAX 48U
/** TH_NONE is what th_find returns when no pending reply matches. */
#define TH_NONE UINT32_MAX
/** TH_BADGE is an ordinary public client badge: BEGIN from it is refused
 * (PBX_E_CORE_BROKER), so it owns nothing. */
#define TH_BADGE 7U
/** TH_BROKER is launchd's broker badge, which every request is begun
 * through; the client helpers send with it by default. */
#define TH_BROKER PBX_CORE_BADGE_LAUNCHD

/** th_ans names one scripted peer answer. */
typedef enum th_ans {
    /** Answer the happy path for whatever was asked. */
    TH_OK = 0,
    /** Backpressure: nothing sent, nothing transferred. */
    TH_BUSY,
    /** Transport failure. */
    TH_FAIL,
    /** RESOLVE: NOT_FOUND with the class in arg (0: the request's). */
    TH_NOT_FOUND,
    /** RESOLVE: DENIED. */
    TH_DENIED,
    /** POLICY: DENY. */
    TH_DENY,
    /** POLICY: PROMPT. */
    TH_PROMPT,
    /** PROMPT: empty RETRY. */
    TH_RETRY,
    /** PROMPT: the user answers DENY. */
    TH_USER_DENY,
    /** INSTALL: reply with a STAGING handle. */
    TH_STAGING
} th_ans;

/** th_mut modifies an answer (bit set). */
typedef enum th_mut {
    /** Echo a wrong request/grant identity or record field. */
    TH_M_WRONG_ECHO = 0x01,
    /** Attach one surplus receipt beyond what the record allows. */
    TH_M_SURPLUS = 0x02,
    /** The receipt has the wrong rights (SEND+MANAGE). */
    TH_M_BAD_RIGHTS = 0x04,
    /** Answer ALLOW echoing EXCEPTIONAL urgency (hand-built bytes). */
    TH_M_EXC_ALLOW = 0x08,
    /** INSTALL: report an installed slot other than the target slot. */
    TH_M_WRONG_SLOT = 0x10,
    /** DETACH, RETIRE: answer with a nonzero-status error reply. */
    TH_M_ERR_STATUS = 0x20,
    /** RESOLVE: report a scope identity other than the slot's. */
    TH_M_WRONG_SCOPE = 0x40
} th_mut;

/** th_script is one scripted answer. */
typedef struct th_script {
    /** What to answer. */
    th_ans ans;
    /** th_mut bits. */
    uint32_t mut;
    /** Extra argument (NOT_FOUND class). */
    uint32_t arg;
} th_script;

/**
 * th_pend is one call the core sent whose reply is still pending: the
 * copied frame, where it went and the scripted answer it will get.
 */
typedef struct th_pend {
    /** Route the call went on (pbx_core_route or PBX_CORE_ROUTE_SCOPE). */
    uint32_t route;
    /** The scope slot of a scoped call, else PBX_CORE_SLOT_NONE. */
    uint32_t via_slot;
    /** Header seq of the sent frame (the reply echoes it). */
    uint32_t seq;
    /** Operation sent. */
    uint16_t op;
    /** Capabilities the sent frame carried (0 or 1). */
    uint16_t caps;
    /** Header identity of the sent frame. */
    pbx_ipc_id id;
    /** The scripted answer taken at send time. */
    th_script s;
    /** Trace name of the call ("resolve", "view-", "withdraw", ...). */
    char name[12];
    /** Bytes in frame. */
    size_t len;
    /** Copy of the sent frame. */
    uint8_t frame[PBX_IPC_FRAME_BYTES_MAX];
} th_pend;

/**
 * th_reply is one built peer reply, ready for pbx_core_on_peer_reply:
 * tests may change any field before sending it (th_reply_send).
 */
typedef struct th_reply {
    /** Route it arrives on. */
    uint32_t route;
    /** Scope slot it came through (SCOPE route), else SLOT_NONE. */
    uint32_t via_slot;
    /** Bytes in frame. */
    size_t len;
    /** Receipts that arrive with it (each handed to the core). */
    uint32_t slots[PBX_CORE_RECV_SLOTS_MAX + 1U];
    /** Number of receipts. */
    size_t n;
    /** The reply frame. */
    uint8_t frame[PBX_IPC_FRAME_BYTES_MAX];
} th_reply;

/** th_slot is one fake slot. */
typedef struct th_slot {
    /** pbx_capabi_kind. */
    uint32_t kind;
    /** Rights bits. */
    uint32_t rights;
    /** pbx_capabi_provenance. */
    uint32_t prov;
    /** True while reserved by slot_reserve and not released. */
    bool reserved;
} th_slot;

struct th_h;

/**
 * th_edit changes one field of the reply record a fake peer is about to
 * encode for peer op (after the script's own mutations). rec points at
 * the reply record of op: pbx_ipc_resolve_reply, pbx_ipc_policy_reply,
 * pbx_ipc_prompt_reply, pbx_ipc_install_reply, pbx_ipc_view_ack,
 * pbx_ipc_detach or pbx_ipc_retire. The change must still encode.
 */
typedef void (*th_edit)(struct th_h *h, uint16_t op, void *rec);

/** th_h is the whole harness. Heap-allocated by th_new. */
typedef struct th_h {
    /** The core under test. */
    pbx_core_ctx core;
    /** Arena. */
    uint8_t *arena;
    /** Fake slot table. */
    th_slot slots[TH_SLOTS];
    /** Per-route answer FIFOs. */
    th_script script[PBX_CORE_ROUTE_COUNT][TH_SCRIPT_MAX];
    /** Heads and tails of the FIFOs. */
    uint32_t shead[PBX_CORE_ROUTE_COUNT];
    /** Tails of the FIFOs. */
    uint32_t stail[PBX_CORE_ROUTE_COUNT];
    /** Scripted deletion outcomes, consumed one per deletion. */
    pbx_core_delete dels[TH_SCRIPT_MAX];
    /** Deletion FIFO head and tail. */
    uint32_t dhead;
    /** Deletion FIFO tail. */
    uint32_t dtail;
    /** Scripted wake outcomes. */
    pbx_core_io wakes[TH_SCRIPT_MAX];
    /** Wake FIFO head. */
    uint32_t whead;
    /** Wake FIFO tail. */
    uint32_t wtail;
    /** Scripted alias outcomes. */
    pbx_core_io aliases[TH_SCRIPT_MAX];
    /** Alias FIFO head. */
    uint32_t ahead;
    /** Alias FIFO tail. */
    uint32_t atail;
    /** Capabilities handed to the core (public, receipts, aliases). */
    uint32_t handed;
    /** Capabilities deleted by the core. */
    uint32_t deleted;
    /** Capabilities moved away by the core (send or reply transfer). */
    uint32_t transferred;
    /** Protocol violations the fake kernel saw (must stay 0). */
    uint32_t violations;
    /** Wakes queued: the last request index and generation. */
    pbx_ipc_id last_wake;
    /** Wakes queued successfully. */
    uint32_t wake_count;
    /** The last PROMPT request the ttyd fake received. */
    pbx_ipc_begin last_prompt_ctx;
    /** The last VIEW row received. */
    pbx_ipc_view last_view;
    /** Installed slot procd reports (default: the target slot). */
    uint32_t object_seq;
    /** Error from the last pbx_core_step that failed, or PBX_OK. */
    pbx_err step_err;
    /** Steps taken by the last th_run. */
    uint32_t steps;
    /** When false, th_decision reports the reply as not delivered. */
    bool deliver;
    /** Badge the client helpers send with (default TH_BROKER). */
    uint32_t badge;
    /** Deletions of this slot stay TRANSIENT, unlogged (or SLOT_NONE). */
    uint32_t hold_slot;
    /** While true every deletion of a held slot stays TRANSIENT (del~). */
    bool hold_all;
    /** Identity the ops layer reports for a scope slot (0: unknown). */
    uint64_t scope_identity;
    /** Per-slot identity that overrides scope_identity when nonzero. */
    uint64_t slot_identity[TH_SLOTS];
    /** Rights the fake alias derivation gives (default SEND). */
    uint32_t alias_rights;
    /** Provenance the fake alias derivation gives (default LOCAL). */
    uint32_t alias_prov;
    /** One-shot reply edit: applied to the next reply of edit_op, then
     * cleared (NULL: replies are exact). */
    th_edit edit;
    /** The peer op whose next reply edit changes. */
    uint16_t edit_op;
    /** Which field edit changes (the test's own numbering). */
    uint32_t edit_field;
    /** While true, replies stay pending until a test delivers them. */
    bool hold;
    /** While true, each delivery logs "re:NAME" before its receipts. */
    bool log_replies;
    /** Calls the core sent (ops.send answered OK). */
    uint32_t sends;
    /** Calls sent per route (index PBX_CORE_ROUTE_SCOPE: scoped calls). */
    uint32_t route_sends[PBX_CORE_ROUTE_SCOPE + 1U];
    /** Replies delivered through pbx_core_on_peer_reply. */
    uint32_t delivered;
    /** Error of the last delivery that failed, or PBX_OK. */
    pbx_err deliver_err;
    /** Replies pending, oldest first. */
    uint32_t npend;
    /** The pending replies. */
    th_pend pend[TH_PEND_MAX];
    /** The effect trace. */
    char trace[TH_TRACE_MAX];
} th_h;

/** th_new creates a harness whose pools hold n records (prompts 8n, so
 * one job may hold n; tslots 3n+10:
 * three per request, two spare, four for BEGIN's deletion-retry spare and
 * four of public headroom), with a window of n calls per deadline class
 * and 5000 ms deadlines; the clock starts at 0. */
th_h *th_new(uint32_t n);
/** th_new_prompts is th_new with a prompts pool of prompts records, so
 * that one job may hold pbx_core_prompt_share(prompts) of them (th_new
 * gives PBX_CORE_PROMPT_SHARE_DIVISOR * n records: n per job). */
th_h *th_new_prompts(uint32_t n, uint32_t prompts);
/** th_new_window is th_new with window calls outstanding per deadline
 * class (PBX1 call_window; th_new uses n), and a calls pool of three
 * windows. Every deadline is 5000 ms. */
th_h *th_new_window(uint32_t n, uint32_t window);
/** th_new_grants is th_new_window with a grants pool of grants records
 * (a grant outlives its request, so a geometry may hold more grants than
 * requests). */
th_h *th_new_grants(uint32_t n, uint32_t grants, uint32_t window);
/** th_new_times is th_new_window with the PBX1 deadlines time_ms
 * (PBX_BOOTSTRAP_TIME_COUNT entries, indexed by PBX_BOOTSTRAP_TIME_*;
 * NULL: 5000 ms each). */
th_h *th_new_times(uint32_t n, uint32_t window, const uint32_t *time_ms);
/** TH_SCOPE_ID is the scope identity the fake vfsd reports. */
#define TH_SCOPE_ID UINT64_C(0x5C09E)

/** th_free releases the harness. */
void th_free(th_h *h);

/** th_push scripts one answer on route. */
void th_push(th_h *h, pbx_core_route route, th_ans ans, uint32_t mut,
             uint32_t arg);
/** th_push_del scripts the next deletion outcome. */
void th_push_del(th_h *h, pbx_core_delete d);
/** th_push_wake scripts the next wake outcome. */
void th_push_wake(th_h *h, pbx_core_io io);
/** th_push_alias scripts the next alias derivation outcome. */
void th_push_alias(th_h *h, pbx_core_io io);
/** th_set_edit arms the one-shot edit of field in the next reply to op. */
void th_set_edit(th_h *h, uint16_t op, th_edit edit, uint32_t field);
/** th_clear_trace empties the effect trace. */
void th_clear_trace(th_h *h);

/** th_put_cap puts a received capability into free slot (or the lowest
 * free transient one when slot is PBX_CORE_SLOT_NONE); returns it. */
uint32_t th_put_cap(th_h *h, uint32_t slot, uint32_t kind, uint32_t rights,
                    uint32_t prov);

/** th_default_begin fills a routine install-mode, one-shot READ FILE
 * BEGIN for selector sel of len bytes. */
void th_default_begin(pbx_ipc_begin *b, const uint8_t *sel, uint32_t len);

/**
 * th_public sends a raw public frame with slots and returns the reply
 * status (0, a pbx_err, or UINT32_MAX when no reply was produced); *core
 * gets the core's return value and *out the reply.
 */
uint32_t th_public(th_h *h, uint32_t badge, const uint8_t *frame, size_t len,
                   const uint32_t *slots, size_t n, pbx_err *core,
                   pbx_core_out *out);

/** th_begin sends BEGIN; returns the reply status, *id and *dest. */
uint32_t th_begin(th_h *h, const pbx_ipc_begin *b, pbx_ipc_id *id,
                  uint32_t *dest);
/** th_selector sends one chunk; returns the reply status. */
uint32_t th_selector(th_h *h, pbx_ipc_id id, uint32_t off, const uint8_t *p,
                     uint32_t len);
/** th_commit lands a scope in slot land and sends COMMIT echoing dest. */
uint32_t th_commit(th_h *h, pbx_ipc_id id, uint32_t dest, uint32_t land);
/** th_open runs BEGIN + SELECTOR + COMMIT for b and sel; returns status. */
uint32_t th_open(th_h *h, const pbx_ipc_begin *b, const uint8_t *sel,
                 pbx_ipc_id *id);
/**
 * th_open_parked opens b (th_open) with ttyd scripted to ask for a prompt
 * and then answer RETRY, runs the core until idle and clears the trace:
 * the request is left in flight at the trusted prompt, with no call
 * outstanding, deferred until the next tick (pbx_core_on_tick) asks
 * again. Returns th_open's status; *id is the request.
 */
uint32_t th_open_parked(th_h *h, const pbx_ipc_begin *b, const uint8_t *sel,
                        pbx_ipc_id *id);
/** th_decision asks DECISION; returns status, fills *d and *xfer. */
uint32_t th_decision(th_h *h, pbx_ipc_id id, pbx_ipc_decision *d,
                     uint32_t *xfer);
/** th_cancel sends the exact CANCEL for id. */
uint32_t th_cancel(th_h *h, pbx_ipc_id id);
/** th_cancel_corr sends the generation-zero CANCEL. */
uint32_t th_cancel_corr(th_h *h, uint64_t job, uint32_t gen, uint64_t session);
/** th_cancel_grant sends the exact grant form of CANCEL for grant. */
uint32_t th_cancel_grant(th_h *h, pbx_ipc_id grant);
/** th_consume sends CONSUME for grant. */
uint32_t th_consume(th_h *h, pbx_ipc_id grant);
/** th_expire sends EXPIRE with badge. */
uint32_t th_expire(th_h *h, uint32_t badge, uint8_t kind, uint64_t job,
                   uint32_t gen, uint64_t inv);
/**
 * th_step performs one pbx_core_step and then, unless h->hold, delivers
 * every pending reply; returns whether the step progressed. A failed step
 * or delivery leaves its error in h->step_err.
 */
bool th_step(th_h *h);
/**
 * th_run delivers what is pending (unless h->hold), then steps the core
 * until idle (bounded), delivering after each step unless h->hold;
 * returns the steps that progressed. Stops at the first error, which
 * h->step_err keeps.
 */
uint32_t th_run(th_h *h);

/** th_find returns the index of the oldest pending reply to the call
 * named name (th_pend.name), or TH_NONE. */
uint32_t th_find(const th_h *h, const char *name);
/**
 * th_reply_build builds the scripted reply to pending call k into *r
 * (receipts are put in free transient slots and counted as handed), with
 * the exact echo of seq, op and identity. The call stays pending.
 */
void th_reply_build(th_h *h, uint32_t k, th_reply *r);
/** th_reply_send hands *r to pbx_core_on_peer_reply; returns its error. */
pbx_err th_reply_send(th_h *h, const th_reply *r);
/** th_drop forgets pending call k: its peer never answers. */
void th_drop(th_h *h, uint32_t k);
/**
 * th_deliver builds the reply to pending call k, removes it from the
 * pending list and delivers it. Returns pbx_core_on_peer_reply's error.
 */
pbx_err th_deliver(th_h *h, uint32_t k);
/** th_deliver_all delivers every pending reply, oldest first, including
 * those sent meanwhile; stops at an error (in h->deliver_err). Returns
 * how many were delivered. */
uint32_t th_deliver_all(th_h *h);
/**
 * th_run_to runs the core, delivering every other reply as it comes,
 * until a call named name is pending; that call's reply is left pending
 * (whatever h->hold says). Returns its index, or TH_NONE when the core
 * went idle (or failed: h->step_err) without sending one.
 */
uint32_t th_run_to(th_h *h, const char *name);
/** th_time reports now_ms to the core (pbx_core_on_time). */
pbx_err th_time(th_h *h, uint64_t now_ms);

/** th_conserved reports whether every handed capability is accounted for
 * and the fake table agrees with the core's held count. */
bool th_conserved(const th_h *h);
/** th_quiescent reports conservation plus the startup baseline: no
 * transient slot occupied or reserved and nothing held. */
bool th_quiescent(const th_h *h);

/** th_trace_is checks the trace equals want, failing the test if not. */
void th_trace_is(th_h *h, const char *file, int line, const char *want);

/** TH_TRACE asserts the exact effect trace and clears it. */
#define TH_TRACE(h, want) th_trace_is((h), __FILE__, __LINE__, (want))

/**
 * TH_CHECK_OUTCOME asks DECISION for request id, checks that the core
 * answered, and checks the outcome is want. *d and *xfer keep the reply
 * (the decision record and any transferred slot) for further checks.
 */
#define TH_CHECK_OUTCOME(h, id, d, xfer, want)                                 \
    do {                                                                       \
        PBX_CHECK_EQ(th_decision((h), (id), (d), (xfer)), 0U);                 \
        PBX_CHECK_EQ((d)->outcome, (want));                                    \
    } while (0)

/**
 * th_approve opens b with sel (th_open), runs the core until idle and
 * checks that the decision is APPROVED; the reply is kept undelivered
 * when keep is true. Returns the grant; *req (when not NULL) is the
 * request and *xfer (when not NULL) the slot the reply transferred. The
 * trace is cleared.
 */
pbx_ipc_id th_approve(th_h *h, const pbx_ipc_begin *b, const uint8_t *sel,
                      bool keep, pbx_ipc_id *req, uint32_t *xfer);

#endif /* TEST_CORE_HARNESS_H */
