/*
 * pbx_core_fsm.c: the transition table both machines run on, and its dot
 * rendering.
 */
#include "core/pbx_core_fsm.h"

/* Shorthands keep the table one row per line. */
#define RQ PBX_CORE_MACHINE_REQUEST
#define GR PBX_CORE_MACHINE_GRANT
#define ROW(m, f, e, t)                                                        \
    {                                                                          \
        (uint8_t)(m), (uint8_t)PBX_CORE_ST_##f, (uint8_t)PBX_CORE_EV_##e,      \
            (uint8_t)PBX_CORE_ST_##t                                           \
    }

/* The complete behaviour of both machines. Anything not listed here is
 * refused before any state changes (untrusted input) or traps (a
 * programmer error reaching pbx_core_fsm_next). */
static const pbx_core_transition pbx_core_table[] = {
    ROW(RQ, FREE, BEGIN, OPEN),
    ROW(RQ, OPEN, SELECTOR, OPEN),
    ROW(RQ, OPEN, COMMIT, RESOLVE),
    ROW(RQ, OPEN, CANCEL, RELEASE),
    ROW(RQ, RESOLVE, RESOLVED, POLICY),
    ROW(RQ, RESOLVE, NOT_FOUND, RELEASE),
    ROW(RQ, RESOLVE, DENY, RELEASE),
    ROW(RQ, RESOLVE, CANCEL, RELEASE),
    ROW(RQ, POLICY, ALLOW, INSTALL),
    ROW(RQ, POLICY, PROMPT, PROMPT),
    ROW(RQ, POLICY, DENY, RELEASE),
    ROW(RQ, POLICY, CANCEL, RELEASE),
    ROW(RQ, PROMPT, RETRY, PROMPT),
    ROW(RQ, PROMPT, ALLOW, INSTALL),
    ROW(RQ, PROMPT, DENY, RELEASE),
    ROW(RQ, PROMPT, CANCEL, RELEASE),
    ROW(RQ, INSTALL, INSTALLED, DETACH),
    ROW(RQ, INSTALL, DENY, RELEASE),
    ROW(RQ, INSTALL, CANCEL, RELEASE),
    ROW(RQ, DETACH, DETACHED, ACTIVATE),
    ROW(RQ, DETACH, DENY, RELEASE),
    ROW(RQ, DETACH, CANCEL, RELEASE),
    ROW(RQ, ACTIVATE, ACTIVE_ACK, RELEASE),
    ROW(RQ, ACTIVATE, DENY, RELEASE),
    ROW(RQ, ACTIVATE, CANCEL, RELEASE),
    ROW(RQ, RELEASE, RELEASED, NOTIFY),
    ROW(RQ, NOTIFY, WOKEN, DECIDED),
    ROW(RQ, NOTIFY, DELIVERED, DELIVERED),
    ROW(RQ, DECIDED, DELIVERED, FREE),
    ROW(RQ, DELIVERED, WOKEN, FREE),
    ROW(GR, FREE, INSTALLED, LIVE),
    ROW(GR, LIVE, CONSUME, REVOKE),
    ROW(GR, LIVE, EXPIRE, REVOKE),
    ROW(GR, LIVE, CANCEL, REVOKE),
    ROW(GR, LIVE, LOST, REVOKE),
    ROW(GR, REVOKE, REVOKED, SETTLE),
    ROW(GR, SETTLE, REMOVED, RETIRE),
    ROW(GR, SETTLE, RETIRED, REMOVE),
    ROW(GR, REMOVE, REMOVED, FREE),
    ROW(GR, RETIRE, RETIRED, FREE),
};

_Static_assert(PBX_ARRAY_LEN(pbx_core_table) == PBX_CORE_FSM_ROWS,
               "PBX_CORE_FSM_ROWS must count the transition table");

#undef ROW
#undef RQ
#undef GR

static const char *const pbx_core_state_names[PBX_CORE_ST_COUNT] = {
    "free",   "open",     "resolve", "policy", "prompt",  "install",
    "detach", "activate", "release", "notify", "decided", "delivered",
    "live",   "revoke",   "settle",  "remove", "retire",
};

static const char *const pbx_core_event_names[PBX_CORE_EV_COUNT] = {
    "begin",   "selector", "commit",  "resolved",  "not_found", "deny",
    "allow",   "prompt",   "retry",   "installed", "detached",  "active_ack",
    "cancel",  "released", "woken",   "delivered", "consume",   "expire",
    "revoked", "removed",  "retired", "lost",
};

const pbx_core_transition *pbx_core_fsm_table(size_t *count)
{
    *count = PBX_ARRAY_LEN(pbx_core_table);
    return pbx_core_table;
}

size_t pbx_core_fsm_find(pbx_core_machine machine, pbx_core_state from,
                         pbx_core_event event)
{
    for (size_t i = 0; i < PBX_ARRAY_LEN(pbx_core_table); i++) {
        const pbx_core_transition *t = &pbx_core_table[i];
        if (t->machine == (uint8_t)machine && t->from == (uint8_t)from &&
            t->event == (uint8_t)event) {
            return i;
        }
    }
    return SIZE_MAX;
}

pbx_core_state pbx_core_fsm_next(pbx_core_machine machine, pbx_core_state from,
                                 pbx_core_event event)
{
    size_t row = pbx_core_fsm_find(machine, from, event);
    PBX_ASSERT(row != SIZE_MAX);
    return (pbx_core_state)pbx_core_table[row].to;
}

const char *pbx_core_state_name(pbx_core_state state)
{
    if ((unsigned)state >= (unsigned)PBX_CORE_ST_COUNT) {
        return "unknown";
    }
    return pbx_core_state_names[state];
}

const char *pbx_core_event_name(pbx_core_event event)
{
    if ((unsigned)event >= (unsigned)PBX_CORE_EV_COUNT) {
        return "unknown";
    }
    return pbx_core_event_names[event];
}

/* Emits a NUL-terminated static string through the sink. */
static void pbx_core_fsm_put(pbx_core_fsm_emit emit, void *user, const char *s)
{
    size_t n = 0;
    while (n < 256U && s[n] != '\0') {
        n++;
    }
    emit(user, s, n);
}

/* Emits one edge line: "  m_from -> m_to [label=event];". */
static void pbx_core_fsm_edge(pbx_core_fsm_emit emit, void *user,
                              const pbx_core_transition *t)
{
    const char *prefix = t->machine == (uint8_t)PBX_CORE_MACHINE_REQUEST
                             ? "  request_"
                             : "  grant_";
    pbx_core_fsm_put(emit, user, prefix);
    pbx_core_fsm_put(emit, user, pbx_core_state_name(t->from));
    pbx_core_fsm_put(emit, user, " -> ");
    pbx_core_fsm_put(emit, user, prefix + 2);
    pbx_core_fsm_put(emit, user, pbx_core_state_name(t->to));
    pbx_core_fsm_put(emit, user, " [label=\"");
    pbx_core_fsm_put(emit, user, pbx_core_event_name(t->event));
    pbx_core_fsm_put(emit, user, "\"];\n");
}

void pbx_core_fsm_dot(pbx_core_fsm_emit emit, void *user)
{
    static const char *const heads[PBX_CORE_MACHINE_COUNT] = {
        " subgraph cluster_request {\n  label=\"request\";\n",
        " subgraph cluster_grant {\n  label=\"grant\";\n",
    };
    pbx_core_fsm_put(emit, user, "digraph powerboxd {\n rankdir=LR;\n");
    for (size_t m = 0; m < (size_t)PBX_CORE_MACHINE_COUNT; m++) {
        pbx_core_fsm_put(emit, user, heads[m]);
        for (size_t i = 0; i < PBX_ARRAY_LEN(pbx_core_table); i++) {
            if (pbx_core_table[i].machine == (uint8_t)m) {
                pbx_core_fsm_edge(emit, user, &pbx_core_table[i]);
            }
        }
        pbx_core_fsm_put(emit, user, " }\n");
    }
    pbx_core_fsm_put(emit, user, "}\n");
}
