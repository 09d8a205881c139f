/*
 * test_ipc_names.c: every operation number and discriminant has its
 * exact printable name (pbx_ipc_names.c), the names are distinct, and
 * every other number, over the whole u16 operation space and a wide
 * range of discriminant values, is "unknown".
 */
#include "../ipc/pbx_ipc.h"
#include "runner/pbx_test.h"

#include <stdio.h>
#include <string.h>

/* Every request operation and the name it must log under. */
static const struct {
    uint16_t op;
    const char *name;
} expected_ops[PBX_IPC_OP_COUNT] = {
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

/* The name op must have: its request name, "<name>-reply", or unknown. */
static const char *expected_op_name(uint16_t op, char *buf, size_t cap)
{
    uint16_t base = (uint16_t)(op & 0x7FFFU);
    for (size_t i = 0; i < PBX_IPC_OP_COUNT; i++) {
        if (expected_ops[i].op != base) {
            continue;
        }
        if ((op & PBX_IPC_REPLY_BIT) == 0U) {
            return expected_ops[i].name;
        }
        if (base == PBX_IPC_OP_WAKE) {
            return "unknown";
        }
        (void)snprintf(buf, cap, "%s-reply", expected_ops[i].name);
        return buf;
    }
    return "unknown";
}

PBX_TEST(ipc_names_every_op_number)
{
    uint32_t known = 0;
    for (uint32_t op = 0; op <= 0xFFFFU; op++) {
        char buf[32];
        pbx_ipc_op_rule rule;
        const char *want = expected_op_name((uint16_t)op, buf, sizeof(buf));
        const char *got = pbx_ipc_op_name((uint16_t)op);
        PBX_CHECK(got != NULL && strcmp(got, want) == 0);
        /* Named exactly when the partition table knows the number. */
        bool in_table = pbx_ipc_op_rule_get((uint16_t)op, &rule) == PBX_OK;
        PBX_CHECK_EQ(in_table, got != NULL && strcmp(got, "unknown") != 0);
        known += in_table ? 1U : 0U;
    }
    PBX_CHECK_EQ(known, 2U * PBX_IPC_OP_COUNT - 1U);
}

/* Checks names[i] is the name of first + i, the values around the table
 * are unknown, and no two names are equal. */
static void check_table(const char *(*fn)(uint32_t), uint32_t first,
                        const char *const *names, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        PBX_CHECK(strcmp(fn(first + (uint32_t)i), names[i]) == 0);
        PBX_CHECK(strcmp(names[i], "unknown") != 0);
        for (size_t j = i + 1U; j < count; j++) {
            PBX_CHECK(strcmp(names[i], names[j]) != 0);
        }
    }
    for (uint32_t v = 0; v < 1024U; v++) {
        if (v >= first && v - first < count) {
            continue;
        }
        PBX_CHECK(strcmp(fn(v), "unknown") == 0);
    }
    PBX_CHECK(strcmp(fn(UINT32_MAX), "unknown") == 0);
    PBX_CHECK(strcmp(fn(first + (uint32_t)count), "unknown") == 0);
}

PBX_TEST(ipc_names_every_discriminant)
{
    static const char *const operations[] = {"read", "write", "execute", "list",
                                             "stat", "touch", "create"};
    static const char *const classes[] = {
        "file", "directory", "directory-entry", "device", "endpoint"};
    static const char *const lifetimes[] = {"one-shot", "invocation", "job"};
    static const char *const modes[] = {"install", "runtime-reply"};
    static const char *const urgencies[] = {"routine", "exceptional"};
    static const char *const outcomes[] = {"pending", "approved", "denied",
                                           "cancelled", "not-found"};
    static const char *const reasons[] = {
        "none",           "policy",        "user",
        "prompt-timeout", "peer-timeout",  "peer-failed",
        "resolve",        "provider-lost", "installer-lost"};
    static const char *const results[] = {"found", "not-found", "denied"};
    static const char *const verdicts[] = {"allow", "deny", "prompt"};
    check_table(pbx_ipc_operation_name, PBX_IPC_OPERATION_READ, operations, 7);
    check_table(pbx_ipc_class_name, PBX_IPC_CLASS_FILE, classes, 5);
    check_table(pbx_ipc_lifetime_name, PBX_IPC_LIFETIME_ONE_SHOT, lifetimes, 3);
    check_table(pbx_ipc_mode_name, PBX_IPC_MODE_INSTALL, modes, 2);
    check_table(pbx_ipc_urgency_name, PBX_IPC_URGENCY_ROUTINE, urgencies, 2);
    check_table(pbx_ipc_outcome_name, PBX_IPC_OUTCOME_PENDING, outcomes, 5);
    check_table(pbx_ipc_reason_name, PBX_IPC_REASON_NONE, reasons, 9);
    check_table(pbx_ipc_resolve_result_name, PBX_IPC_RESOLVE_FOUND, results, 3);
    check_table(pbx_ipc_verdict_name, PBX_IPC_VERDICT_ALLOW, verdicts, 3);
}

PBX_TEST(ipc_names_match_the_known_predicates)
{
    /* A value the codec accepts always has a name, and only those. */
    for (uint32_t v = 0; v < 4096U; v++) {
        PBX_CHECK_EQ(pbx_ipc_operation_known(v),
                     strcmp(pbx_ipc_operation_name(v), "unknown") != 0);
        PBX_CHECK_EQ(pbx_ipc_class_known(v),
                     strcmp(pbx_ipc_class_name(v), "unknown") != 0);
        PBX_CHECK_EQ(pbx_ipc_lifetime_known(v),
                     strcmp(pbx_ipc_lifetime_name(v), "unknown") != 0);
    }
}
