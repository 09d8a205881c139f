/*
 * pbx_core_fsm.h: the core's two state machines as data.
 *
 * Every state change the core makes goes through pbx_core_fsm_next, which
 * looks the (machine, state, event) triple up in the one transition table
 * and traps when it is missing, so the table is the complete and exact
 * description of what the code does. The same table prints itself as
 * Graphviz dot for docs/ARCHITECTURE.md and backs the simulator's
 * transition coverage report.
 */
#ifndef PBX_CORE_FSM_H
#define PBX_CORE_FSM_H

#include "base/pbx_base.h"

/** pbx_core_machine names the two machines: request and grant. */
typedef enum pbx_core_machine {
    /** A public request from BEGIN to decision delivery. */
    PBX_CORE_MACHINE_REQUEST = 0,
    /** An installed grant from approval to exact retirement. */
    PBX_CORE_MACHINE_GRANT = 1,
    /** Number of machines; not a machine. */
    PBX_CORE_MACHINE_COUNT = 2
} pbx_core_machine;

/** pbx_core_state is a state of either machine (FREE is shared). */
typedef enum pbx_core_state {
    /** Record on its free list. */
    PBX_CORE_ST_FREE = 0,
    /** Request: BEGIN accepted, selector streaming, destination empty. */
    PBX_CORE_ST_OPEN,
    /** Request: committed; the scope is held; resolution next. */
    PBX_CORE_ST_RESOLVE,
    /** Request: resolved; session policy next. */
    PBX_CORE_ST_POLICY,
    /** Request: policy asked for a trusted prompt. */
    PBX_CORE_ST_PROMPT,
    /** Request: allowed; grant installation (or alias derivation) next. */
    PBX_CORE_ST_INSTALL,
    /** Request: installed; powerboxd's own object copy goes back to vfsd. */
    PBX_CORE_ST_DETACH,
    /** Request: the ACTIVE grant row is published to ttyd next. */
    PBX_CORE_ST_ACTIVATE,
    /** Request: terminal; request-owned authority is being released. */
    PBX_CORE_ST_RELEASE,
    /** Request: decision made; the launchd wake is queued next. */
    PBX_CORE_ST_NOTIFY,
    /** Request: wake queued; waiting for the decision reply delivery. */
    PBX_CORE_ST_DECIDED,
    /** Request: reply delivered; waiting for the wake to be queued. */
    PBX_CORE_ST_DELIVERED,
    /** Grant: live, awaiting consumption, expiry or cancellation. */
    PBX_CORE_ST_LIVE,
    /** Grant: ending; its revocation authority is deleted next. */
    PBX_CORE_ST_REVOKE,
    /**
     * Grant: revoked; the REMOVE row at ttyd and the full-identity
     * retirement at vfsd are both owed, and neither waits for the other.
     */
    PBX_CORE_ST_SETTLE,
    /** Grant: retired at vfsd; only ttyd's REMOVE acknowledgement is owed. */
    PBX_CORE_ST_REMOVE,
    /** Grant: removed at ttyd; only vfsd's RETIRE acknowledgement is owed. */
    PBX_CORE_ST_RETIRE,
    /** Number of states; not a state. */
    PBX_CORE_ST_COUNT
} pbx_core_state;

/** pbx_core_event is what moves a machine from one state to the next. */
typedef enum pbx_core_event {
    /** Public BEGIN accepted. */
    PBX_CORE_EV_BEGIN = 0,
    /** Public SELECTOR chunk stored. */
    PBX_CORE_EV_SELECTOR,
    /** Public COMMIT accepted: digest and scope receipt exact. */
    PBX_CORE_EV_COMMIT,
    /** vfsd resolved the selector to an authenticated object. */
    PBX_CORE_EV_RESOLVED,
    /** vfsd answered an exact scoped NOT_FOUND. */
    PBX_CORE_EV_NOT_FOUND,
    /** Policy, prompt or resolver denial, or an unusable peer answer. */
    PBX_CORE_EV_DENY,
    /** Policy or the user allowed the request. */
    PBX_CORE_EV_ALLOW,
    /** Policy asked for a trusted prompt. */
    PBX_CORE_EV_PROMPT,
    /** ttyd answered RETRY: keep the prompt and ask again later. */
    PBX_CORE_EV_RETRY,
    /** procd installed the grant (or the runtime alias was derived). */
    PBX_CORE_EV_INSTALLED,
    /** vfsd took powerboxd's own copy of the object back. */
    PBX_CORE_EV_DETACHED,
    /** ttyd acknowledged the full ACTIVE row. */
    PBX_CORE_EV_ACTIVE_ACK,
    /** Cancellation of a live request or grant. */
    PBX_CORE_EV_CANCEL,
    /** Every request-owned capability is gone. */
    PBX_CORE_EV_RELEASED,
    /** The authority-free wake was queued to launchd. */
    PBX_CORE_EV_WOKEN,
    /** The decision reply was delivered: the request retires. */
    PBX_CORE_EV_DELIVERED,
    /** Grant: one-shot consumption. */
    PBX_CORE_EV_CONSUME,
    /** Grant: invocation or job expiry from launchd. */
    PBX_CORE_EV_EXPIRE,
    /** Grant: the revocation authority was deleted. */
    PBX_CORE_EV_REVOKED,
    /** Grant: ttyd acknowledged the REMOVE row exactly. */
    PBX_CORE_EV_REMOVED,
    /** Grant: vfsd acknowledged the full-identity retirement exactly. */
    PBX_CORE_EV_RETIRED,
    /**
     * Grant: a peer the live grant depends on was lost (vfsd, its object's
     * provider, or procd, its installer): it ends like an expiry, and its
     * object is retired at vfsd (pbx_core_on_route_down).
     */
    PBX_CORE_EV_LOST,
    /** Number of events; not an event. */
    PBX_CORE_EV_COUNT
} pbx_core_event;

/** PBX_CORE_FSM_ROWS is the number of rows in the transition table. */
#define PBX_CORE_FSM_ROWS 40U

/** pbx_core_transition is one row of the table: from --event--> to. */
typedef struct pbx_core_transition {
    /** Machine the row belongs to. */
    uint8_t machine;
    /** State before. */
    uint8_t from;
    /** Event. */
    uint8_t event;
    /** State after. */
    uint8_t to;
} pbx_core_transition;

/**
 * pbx_core_fsm_table returns the static transition table and stores its
 * row count in *count. The table lives for the whole program; read only.
 */
const pbx_core_transition *pbx_core_fsm_table(size_t *count);

/**
 * pbx_core_fsm_find returns the row index of (machine, from, event), or
 * SIZE_MAX when the table has no such row. Pure lookup; bounded by the
 * table size.
 */
size_t pbx_core_fsm_find(pbx_core_machine machine, pbx_core_state from,
                         pbx_core_event event);

/**
 * pbx_core_fsm_next returns the state after event in from. The transition
 * must be in the table: a missing row is a programmer error and traps.
 */
pbx_core_state pbx_core_fsm_next(pbx_core_machine machine, pbx_core_state from,
                                 pbx_core_event event);

/** pbx_core_state_name returns a static name ("open", ...) for state. */
const char *pbx_core_state_name(pbx_core_state state);

/** pbx_core_event_name returns a static name ("commit", ...) for event. */
const char *pbx_core_event_name(pbx_core_event event);

/**
 * pbx_core_fsm_emit is the sink for pbx_core_fsm_dot: it receives len bytes
 * of text (not NUL-terminated, valid only during the call) and user.
 */
typedef void (*pbx_core_fsm_emit)(void *user, const char *text, size_t len);

/**
 * pbx_core_fsm_dot writes the whole transition table as a Graphviz digraph
 * through emit, one cluster per machine, in table order. Calls emit a
 * bounded number of times; keeps no state.
 */
void pbx_core_fsm_dot(pbx_core_fsm_emit emit, void *user);

#endif /* PBX_CORE_FSM_H */
