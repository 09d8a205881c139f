/*
 * pbx_ipc_names.c: the printable names of every operation number and
 * discriminant (pbx_ipc.h), for logs. Pure tables, no state; a number
 * outside a table is named "unknown", never guessed.
 */
#include "ipc/pbx_ipc.h"

/** The name every table gives a number it does not hold. */
static const char pbx_ipc_unknown[] = "unknown";

/* One row of the operation number table. */
typedef struct pbx_ipc_op_named {
    uint16_t op;
    const char *name;
} pbx_ipc_op_named;

/* Every request operation; a reply form is named from its request. */
static const pbx_ipc_op_named pbx_ipc_op_names[PBX_IPC_OP_COUNT] = {
    {PBX_IPC_OP_BEGIN, "begin"},     {PBX_IPC_OP_SELECTOR, "selector"},
    {PBX_IPC_OP_COMMIT, "commit"},   {PBX_IPC_OP_DECISION, "decision"},
    {PBX_IPC_OP_CANCEL, "cancel"},   {PBX_IPC_OP_CONSUME, "consume"},
    {PBX_IPC_OP_EXPIRE, "expire"},   {PBX_IPC_OP_RESOLVE, "resolve"},
    {PBX_IPC_OP_DETACH, "detach"},   {PBX_IPC_OP_RETIRE, "retire"},
    {PBX_IPC_OP_POLICY, "policy"},   {PBX_IPC_OP_PROMPT, "prompt"},
    {PBX_IPC_OP_VIEW, "view"},       {PBX_IPC_OP_WITHDRAW, "withdraw"},
    {PBX_IPC_OP_INSTALL, "install"}, {PBX_IPC_OP_REVOKE, "revoke"},
    {PBX_IPC_OP_WAKE, "wake"},
};

/* The reply forms, in the order of pbx_ipc_op_names. WAKE has none. */
static const char *const pbx_ipc_reply_names[PBX_IPC_OP_COUNT] = {
    "begin-reply",  "selector-reply", "commit-reply",  "decision-reply",
    "cancel-reply", "consume-reply",  "expire-reply",  "resolve-reply",
    "detach-reply", "retire-reply",   "policy-reply",  "prompt-reply",
    "view-reply",   "withdraw-reply", "install-reply", "revoke-reply",
    NULL,
};

const char *pbx_ipc_op_name(uint16_t op)
{
    uint16_t base = (uint16_t)(op & (uint16_t)~PBX_IPC_REPLY_BIT);
    bool reply = (op & PBX_IPC_REPLY_BIT) != 0U;
    for (uint32_t i = 0; i < PBX_IPC_OP_COUNT; i++) {
        if (pbx_ipc_op_names[i].op != base) {
            continue;
        }
        if (!reply) {
            return pbx_ipc_op_names[i].name;
        }
        return pbx_ipc_reply_names[i] != NULL ? pbx_ipc_reply_names[i]
                                              : pbx_ipc_unknown;
    }
    return pbx_ipc_unknown;
}

/* Looks v up in a table of count names indexed from first. */
static const char *pbx_ipc_name_of(const char *const *names, uint32_t first,
                                   uint32_t count, uint32_t v)
{
    if (v < first || v - first >= count) {
        return pbx_ipc_unknown;
    }
    return names[v - first];
}

const char *pbx_ipc_operation_name(uint32_t operation)
{
    static const char *const names[] = {"read", "write", "execute", "list",
                                        "stat", "touch", "create"};
    return pbx_ipc_name_of(names, PBX_IPC_OPERATION_READ,
                           (uint32_t)(sizeof(names) / sizeof(names[0])),
                           operation);
}

const char *pbx_ipc_class_name(uint32_t object_class)
{
    static const char *const names[] = {"file", "directory", "directory-entry",
                                        "device", "endpoint"};
    return pbx_ipc_name_of(names, PBX_IPC_CLASS_FILE,
                           (uint32_t)(sizeof(names) / sizeof(names[0])),
                           object_class);
}

const char *pbx_ipc_lifetime_name(uint32_t lifetime)
{
    static const char *const names[] = {"one-shot", "invocation", "job"};
    return pbx_ipc_name_of(names, PBX_IPC_LIFETIME_ONE_SHOT,
                           (uint32_t)(sizeof(names) / sizeof(names[0])),
                           lifetime);
}

const char *pbx_ipc_mode_name(uint32_t mode)
{
    static const char *const names[] = {"install", "runtime-reply"};
    return pbx_ipc_name_of(names, PBX_IPC_MODE_INSTALL,
                           (uint32_t)(sizeof(names) / sizeof(names[0])), mode);
}

const char *pbx_ipc_urgency_name(uint32_t urgency)
{
    static const char *const names[] = {"routine", "exceptional"};
    return pbx_ipc_name_of(names, PBX_IPC_URGENCY_ROUTINE,
                           (uint32_t)(sizeof(names) / sizeof(names[0])),
                           urgency);
}

const char *pbx_ipc_outcome_name(uint32_t outcome)
{
    static const char *const names[] = {"pending", "approved", "denied",
                                        "cancelled", "not-found"};
    return pbx_ipc_name_of(names, PBX_IPC_OUTCOME_PENDING,
                           (uint32_t)(sizeof(names) / sizeof(names[0])),
                           outcome);
}

const char *pbx_ipc_reason_name(uint32_t reason)
{
    static const char *const names[] = {
        "none",           "policy",        "user",
        "prompt-timeout", "peer-timeout",  "peer-failed",
        "resolve",        "provider-lost", "installer-lost"};
    return pbx_ipc_name_of(names, PBX_IPC_REASON_NONE,
                           (uint32_t)(sizeof(names) / sizeof(names[0])),
                           reason);
}

const char *pbx_ipc_resolve_result_name(uint32_t result)
{
    static const char *const names[] = {"found", "not-found", "denied"};
    return pbx_ipc_name_of(names, PBX_IPC_RESOLVE_FOUND,
                           (uint32_t)(sizeof(names) / sizeof(names[0])),
                           result);
}

const char *pbx_ipc_verdict_name(uint32_t verdict)
{
    static const char *const names[] = {"allow", "deny", "prompt"};
    return pbx_ipc_name_of(names, PBX_IPC_VERDICT_ALLOW,
                           (uint32_t)(sizeof(names) / sizeof(names[0])),
                           verdict);
}
