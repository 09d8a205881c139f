/*
 * pbx_peer.c: peer statuses, discriminant names and number parsing.
 */
#include "peers/lib/pbx_peer.h"

#include "ipc/pbx_ipc.h"

#include <string.h>

/* One name of one discriminant table. */
typedef struct peer_name {
    uint32_t value;
    const char *name;
} peer_name;

static const peer_name peer_operations[] = {
    {PBX_IPC_OPERATION_READ, "read"},
    {PBX_IPC_OPERATION_WRITE, "write"},
    {PBX_IPC_OPERATION_EXECUTE, "execute"},
    {PBX_IPC_OPERATION_LIST, "list"},
    {PBX_IPC_OPERATION_ENTRY_METADATA_READ, "entry-metadata-read"},
    {PBX_IPC_OPERATION_ENTRY_TOUCH, "entry-touch"},
    {PBX_IPC_OPERATION_CREATE, "create"},
};
static const peer_name peer_classes[] = {
    {PBX_IPC_CLASS_FILE, "file"},
    {PBX_IPC_CLASS_DIRECTORY, "directory"},
    {PBX_IPC_CLASS_DIRECTORY_ENTRY, "directory-entry"},
    {PBX_IPC_CLASS_DEVICE, "device"},
    {PBX_IPC_CLASS_ENDPOINT, "endpoint"},
};
static const peer_name peer_lifetimes[] = {
    {PBX_IPC_LIFETIME_ONE_SHOT, "one-shot"},
    {PBX_IPC_LIFETIME_INVOCATION, "invocation"},
    {PBX_IPC_LIFETIME_JOB, "job"},
};
static const peer_name peer_modes[] = {
    {PBX_IPC_MODE_INSTALL, "install"},
    {PBX_IPC_MODE_RUNTIME_REPLY, "runtime-reply"},
};
static const peer_name peer_urgencies[] = {
    {PBX_IPC_URGENCY_ROUTINE, "routine"},
    {PBX_IPC_URGENCY_EXCEPTIONAL, "exceptional"},
};
static const peer_name peer_verdicts[] = {
    {PBX_IPC_VERDICT_ALLOW, "allow"},
    {PBX_IPC_VERDICT_DENY, "deny"},
    {PBX_IPC_VERDICT_PROMPT, "prompt"},
};
static const peer_name peer_outcomes[] = {
    {PBX_IPC_OUTCOME_PENDING, "pending"},
    {PBX_IPC_OUTCOME_APPROVED, "approved"},
    {PBX_IPC_OUTCOME_DENIED, "denied"},
    {PBX_IPC_OUTCOME_CANCELLED, "cancelled"},
    {PBX_IPC_OUTCOME_NOT_FOUND, "not-found"},
};
static const peer_name peer_results[] = {
    {PBX_IPC_RESOLVE_FOUND, "found"},
    {PBX_IPC_RESOLVE_NOT_FOUND, "not-found"},
    {PBX_IPC_RESOLVE_DENIED, "denied"},
};

/* Returns the table of kind and its length in *n (NULL for none). */
static const peer_name *peer_table(pbx_peer_name_kind kind, size_t *n)
{
    switch (kind) {
    case PBX_PEER_NAMES_OPERATION:
        *n = PBX_ARRAY_LEN(peer_operations);
        return peer_operations;
    case PBX_PEER_NAMES_CLASS:
        *n = PBX_ARRAY_LEN(peer_classes);
        return peer_classes;
    case PBX_PEER_NAMES_LIFETIME:
        *n = PBX_ARRAY_LEN(peer_lifetimes);
        return peer_lifetimes;
    case PBX_PEER_NAMES_MODE:
        *n = PBX_ARRAY_LEN(peer_modes);
        return peer_modes;
    case PBX_PEER_NAMES_URGENCY:
        *n = PBX_ARRAY_LEN(peer_urgencies);
        return peer_urgencies;
    case PBX_PEER_NAMES_VERDICT:
        *n = PBX_ARRAY_LEN(peer_verdicts);
        return peer_verdicts;
    case PBX_PEER_NAMES_OUTCOME:
        *n = PBX_ARRAY_LEN(peer_outcomes);
        return peer_outcomes;
    case PBX_PEER_NAMES_RESULT:
        *n = PBX_ARRAY_LEN(peer_results);
        return peer_results;
    default:
        *n = 0;
        return NULL;
    }
}

bool pbx_peer_name_parse(pbx_peer_name_kind kind, const char *name,
                         uint32_t *value)
{
    size_t n = 0;
    const peer_name *t = peer_table(kind, &n);
    for (size_t i = 0; i < n; i++) {
        if (strcmp(t[i].name, name) == 0) {
            *value = t[i].value;
            return true;
        }
    }
    return false;
}

const char *pbx_peer_name_of(pbx_peer_name_kind kind, uint32_t value)
{
    size_t n = 0;
    const peer_name *t = peer_table(kind, &n);
    for (size_t i = 0; i < n; i++) {
        if (t[i].value == value) {
            return t[i].name;
        }
    }
    return "?";
}

const char *pbx_peer_status_text(uint32_t status)
{
    switch (status) {
    case PBX_PEER_E_BUSY:
        return "peer: table full; retry later";
    case PBX_PEER_E_UNKNOWN:
        return "peer: no such object, grant, process or request";
    case PBX_PEER_E_MISMATCH:
        return "peer: identity does not match the record exactly";
    case PBX_PEER_E_ROUTE:
        return "peer: operation not served on this connection";
    case PBX_PEER_E_SLOT:
        return "peer: target slot occupied or out of range";
    case PBX_PEER_E_CONFLICT:
        return "peer: grant already present with another row";
    case PBX_PEER_E_DIGEST:
        return "peer: selector digest mismatch";
    case PBX_PEER_E_INTERNAL:
        return "peer: local failure";
    default:
        return pbx_err_text((pbx_err)status);
    }
}

bool pbx_peer_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    uint64_t v = 0;
    size_t i = 0;
    /* Twenty digits hold any u64; a longer string cannot fit. */
    for (; i < 21U && s[i] != '\0'; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
        uint64_t d = (uint64_t)(s[i] - '0');
        if (d > max || v > (max - d) / 10U) {
            return false;
        }
        v = v * 10U + d;
    }
    if (i == 0U || s[i] != '\0') {
        return false;
    }
    *out = v;
    return true;
}

bool pbx_peer_parse_pair(const char *s, uint64_t max_a, uint64_t max_b,
                         uint64_t *a, uint64_t *b)
{
    char first[24];
    size_t i = 0;
    for (; i < sizeof(first) - 1U && s[i] != '\0'; i++) {
        if (s[i] == ':' || s[i] == '.') {
            break;
        }
        first[i] = s[i];
    }
    if (s[i] != ':' && s[i] != '.') {
        return false;
    }
    first[i] = '\0';
    uint64_t x = 0;
    uint64_t y = 0;
    if (!pbx_peer_parse_u64(first, max_a, &x) ||
        !pbx_peer_parse_u64(s + i + 1, max_b, &y)) {
        return false;
    }
    *a = x;
    *b = y;
    return true;
}
