/*
 * test_core_echo.c: every authenticated echo the core checks in a peer
 * reply, one field at a time. Each table row corrupts exactly one field
 * of one reply through the harness's one-shot reply edit and asserts the
 * outcome, the receipts deleted and that the core made no further peer
 * call on the strength of the corrupted reply. A first, uncorrupted row
 * proves the path is otherwise the approving one, so the corruption is
 * the only reason for the refusal. The last two tests corrupt the encoded
 * bytes instead: every byte of every peer reply's header identity and
 * seq (refused as matching no call), and every byte of every echoed
 * identity field and digest in the bodies the core judges (taken as
 * inexact).
 */
#include "core/pbx_core_inspect.h"
#include "runner/pbx_test.h"
#include "test_core_harness.h"

#include <stdio.h>
#include <string.h>

static const uint8_t sel[] = "docs/report.txt";
#define SEL_LEN ((uint32_t)(sizeof(sel) - 1U))

/* The reply fields a row may corrupt (each op changes its own subset). */
enum echo_field {
    EF_NONE = 0,
    EF_SESSION,
    EF_REALM,
    EF_JOB_ID,
    EF_JOB_GEN,
    EF_REQ_INDEX,
    EF_REQ_GEN,
    EF_OBJ_ID,
    EF_OBJ_GEN,
    EF_URGENCY,
    EF_OPERATION,
    EF_CLASS,
    EF_PROC_ID,
    EF_PROC_GEN,
    EF_GRANT_INDEX,
    EF_GRANT_GEN,
    EF_SLOT,
    EF_KIND,
    EF_SCOPE
};

/* Changes one identity field to another valid value (the decoders would
 * refuse a zero generation or an unknown discriminant, which would test
 * the decoder rather than the echo check). */
static void echo_edit_prompt(uint32_t field, pbx_ipc_prompt_reply *a)
{
    a->session += field == EF_SESSION ? 1U : 0U;
    a->realm += field == EF_REALM ? 1U : 0U;
    a->job_id += field == EF_JOB_ID ? 1U : 0U;
    a->job_gen += field == EF_JOB_GEN ? 1U : 0U;
    a->request.index += field == EF_REQ_INDEX ? 1U : 0U;
    a->request.gen += field == EF_REQ_GEN ? 1U : 0U;
    a->object.id += field == EF_OBJ_ID ? 1U : 0U;
    a->object.gen += field == EF_OBJ_GEN ? 1U : 0U;
}

static void echo_edit_policy(uint32_t field, pbx_ipc_policy_reply *p)
{
    p->session += field == EF_SESSION ? 1U : 0U;
    p->realm += field == EF_REALM ? 1U : 0U;
    if (field == EF_URGENCY) {
        p->urgency = p->urgency == (uint8_t)PBX_IPC_URGENCY_ROUTINE
                         ? (uint8_t)PBX_IPC_URGENCY_EXCEPTIONAL
                         : (uint8_t)PBX_IPC_URGENCY_ROUTINE;
    }
}

static void echo_edit_install(uint32_t field, pbx_ipc_install_reply *r)
{
    r->target_process_id += field == EF_PROC_ID ? 1U : 0U;
    r->target_process_gen += field == EF_PROC_GEN ? 1U : 0U;
    r->grant.index += field == EF_GRANT_INDEX ? 1U : 0U;
    r->grant.gen += field == EF_GRANT_GEN ? 1U : 0U;
    r->installed_slot += field == EF_SLOT ? 1U : 0U;
}

static void echo_edit_view(uint32_t field, pbx_ipc_view_ack *v)
{
    v->grant.index += field == EF_GRANT_INDEX ? 1U : 0U;
    v->grant.gen += field == EF_GRANT_GEN ? 1U : 0U;
    if (field == EF_KIND) {
        v->kind = v->kind == (uint8_t)PBX_IPC_VIEW_ACTIVE
                      ? (uint8_t)PBX_IPC_VIEW_REMOVE
                      : (uint8_t)PBX_IPC_VIEW_ACTIVE;
    }
}

/* An object class other than c (both known). */
static uint16_t echo_other_class(uint16_t c)
{
    return c == (uint16_t)PBX_IPC_CLASS_FILE ? (uint16_t)PBX_IPC_CLASS_DIRECTORY
                                             : (uint16_t)PBX_IPC_CLASS_FILE;
}

static void echo_edit_retire(uint32_t field, pbx_ipc_retire *q)
{
    q->object.id += field == EF_OBJ_ID ? 1U : 0U;
    q->object.gen += field == EF_OBJ_GEN ? 1U : 0U;
    q->scope_id += field == EF_SCOPE ? 1U : 0U;
    if (field == EF_CLASS) {
        q->object_class = echo_other_class(q->object_class);
    }
}

static void echo_edit_resolve(uint32_t field, pbx_ipc_resolve_reply *r)
{
    if (field == EF_OPERATION) {
        r->operation = r->operation == (uint16_t)PBX_IPC_OPERATION_READ
                           ? (uint16_t)PBX_IPC_OPERATION_WRITE
                           : (uint16_t)PBX_IPC_OPERATION_READ;
    }
    if (field == EF_CLASS) {
        r->object_class = echo_other_class(r->object_class);
    }
}

/* The harness edit: dispatches on the peer op to the record's editor. */
static void echo_edit(th_h *h, uint16_t op, void *rec)
{
    uint32_t f = h->edit_field;
    switch (op) {
    case PBX_IPC_OP_RESOLVE:
        echo_edit_resolve(f, rec);
        break;
    case PBX_IPC_OP_POLICY:
        echo_edit_policy(f, rec);
        break;
    case PBX_IPC_OP_PROMPT:
        echo_edit_prompt(f, rec);
        break;
    case PBX_IPC_OP_INSTALL:
        echo_edit_install(f, rec);
        break;
    case PBX_IPC_OP_VIEW:
        echo_edit_view(f, rec);
        break;
    case PBX_IPC_OP_DETACH:
        ((pbx_ipc_detach *)rec)->object.id += f == EF_OBJ_ID ? 1U : 0U;
        ((pbx_ipc_detach *)rec)->object.gen += f == EF_OBJ_GEN ? 1U : 0U;
        break;
    case PBX_IPC_OP_RETIRE:
        echo_edit_retire(f, rec);
        break;
    default:
        PBX_CHECK(false); /* No other peer reply is edited. */
        break;
    }
}

/* Arms the edit of field in the next reply to op (EF_NONE: none). */
static void echo_arm(th_h *h, uint16_t op, uint32_t field)
{
    if (field != EF_NONE) {
        th_set_edit(h, op, echo_edit, field);
    }
}

/* Opens b, runs the core until idle and checks no step failed. */
static pbx_ipc_id echo_open(th_h *h, const pbx_ipc_begin *b)
{
    pbx_ipc_id id = {0, 0};
    PBX_CHECK_EQ(th_open(h, b, sel, &id), 0U);
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    return id;
}

/* Checks the trace starts with want and does not hold lacks (NULL: no
 * such check), then clears it. Used where the rest of the trace is the
 * terminal grant cleanup, whose order is asserted elsewhere. */
static void echo_trace_head(th_h *h, int line, const char *want,
                            const char *lacks)
{
    pbx_test_checks++;
    if (strncmp(h->trace, want, strlen(want)) != 0 ||
        (lacks != NULL && strstr(h->trace, lacks) != NULL)) {
        pbx_test_failf(__FILE__, line, "trace\n  got:  %s\n  want: %s ...%s%s",
                       h->trace, want, lacks != NULL ? " without " : "",
                       lacks != NULL ? lacks : "");
    }
    th_clear_trace(h);
}

/* Checks the outcome of id and that nothing is left behind. */
static void echo_expect(th_h *h, pbx_ipc_id id, uint8_t outcome)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    TH_CHECK_OUTCOME(h, id, &d, &xfer, outcome);
    th_clear_trace(h);
    PBX_CHECK(th_quiescent(h));
    PBX_CHECK_EQ(h->violations, 0U);
}

PBX_TEST(core_echo_prompt_answer_checks_every_field)
{
    static const uint32_t fields[] = {EF_NONE,    EF_SESSION, EF_REALM,
                                      EF_JOB_ID,  EF_JOB_GEN, EF_REQ_INDEX,
                                      EF_REQ_GEN, EF_OBJ_ID,  EF_OBJ_GEN};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    for (size_t k = 0; k < PBX_ARRAY_LEN(fields); k++) {
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0); /* APPROVE */
        echo_arm(h, PBX_IPC_OP_PROMPT, fields[k]);
        pbx_ipc_id id = echo_open(h, &b);
        if (fields[k] == EF_NONE) {
            TH_TRACE(h, "reserve=64 resolve@64 <65 policy prompt install^65 "
                        "<66 detach>65 view+ del=64 release=64 wake");
            pbx_ipc_decision d;
            uint32_t xfer = 0;
            TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
            PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
            th_run(h);
            th_clear_trace(h);
            PBX_CHECK(th_quiescent(h));
            continue;
        }
        /* An APPROVE that misnames anything is no approval: nothing is
         * installed, the object goes back and the scope is deleted. No
         * exact answer came, so the prompt may still be showing: release
         * withdraws it first (WITHDRAW, new with split-phase calls). */
        TH_TRACE(h, "reserve=64 resolve@64 <65 policy prompt withdraw "
                    "detach>65 del=64 release=64 wake");
        echo_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    }
    th_free(h);
}

PBX_TEST(core_echo_policy_reply_checks_session_realm_and_urgency)
{
    /* The urgency row answers PROMPT: ALLOW with an exceptional echo is
     * refused by the decoder already, before any echo is compared. */
    static const struct {
        uint32_t field;
        th_ans ans;
    } rows[] = {{EF_SESSION, TH_OK},
                {EF_REALM, TH_OK},
                {EF_URGENCY, TH_PROMPT},
                {EF_REALM, TH_PROMPT}};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (size_t k = 0; k < PBX_ARRAY_LEN(rows); k++) {
        th_push(h, PBX_CORE_ROUTE_TTYD, rows[k].ans, 0, 0);
        echo_arm(h, PBX_IPC_OP_POLICY, rows[k].field);
        pbx_ipc_id id = echo_open(h, &b);
        /* Neither installed nor prompted. */
        TH_TRACE(h, "reserve=64 resolve@64 <65 policy detach>65 del=64 "
                    "release=64 wake");
        echo_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    }
    th_free(h);
}

/* D5: the request's own urgency decides routine or exceptional. An
 * exceptional request whose POLICY reply echoes ROUTINE with ALLOW is
 * refused by the echo comparison and, independently, because ALLOW is
 * only ever taken for a request that is routine in its own context. */
PBX_TEST(core_echo_exceptional_request_echoed_routine_allow_is_not_installed)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0); /* ALLOW */
    echo_arm(h, PBX_IPC_OP_POLICY, EF_URGENCY);   /* echoes ROUTINE */
    pbx_ipc_id id = echo_open(h, &b);
    TH_TRACE(h, "reserve=64 resolve@64 <65 policy detach>65 del=64 "
                "release=64 wake");
    PBX_CHECK_EQ(h->last_prompt_ctx.ctx.job_id, 0U); /* never prompted */
    echo_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    th_free(h);
}

PBX_TEST(core_echo_resolve_reply_checks_operation_and_class)
{
    static const uint32_t fields[] = {EF_OPERATION, EF_CLASS};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (size_t k = 0; k < PBX_ARRAY_LEN(fields); k++) {
        echo_arm(h, PBX_IPC_OP_RESOLVE, fields[k]);
        pbx_ipc_id id = echo_open(h, &b);
        /* The object receipt is deleted, never bound; no POLICY. */
        TH_TRACE(h, "reserve=64 resolve@64 <65 del=65 del=64 release=64 "
                    "wake");
        echo_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    }
    th_free(h);
}

PBX_TEST(core_echo_install_reply_checks_process_grant_and_slot)
{
    static const uint32_t fields[] = {EF_PROC_ID, EF_PROC_GEN, EF_GRANT_INDEX,
                                      EF_GRANT_GEN, EF_SLOT};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (size_t k = 0; k < PBX_ARRAY_LEN(fields); k++) {
        echo_arm(h, PBX_IPC_OP_INSTALL, fields[k]);
        pbx_ipc_id id = echo_open(h, &b);
        /* The handle is deleted at once, never kept as revocation
         * authority, and no ACTIVE row is published. */
        echo_trace_head(h, __LINE__,
                        "reserve=64 resolve@64 <65 policy install^65 <66 "
                        "del=66 detach>65",
                        "view+");
        echo_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    }
    th_free(h);
}

PBX_TEST(core_echo_view_ack_checks_kind_and_grant)
{
    static const uint32_t fields[] = {EF_KIND, EF_GRANT_INDEX, EF_GRANT_GEN};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (size_t k = 0; k < PBX_ARRAY_LEN(fields); k++) {
        echo_arm(h, PBX_IPC_OP_VIEW, fields[k]);
        pbx_ipc_id id = echo_open(h, &b);
        /* Approval is never decided; the installed grant is ended, its
         * revocation handle deleted first. */
        echo_trace_head(h, __LINE__,
                        "reserve=64 resolve@64 <65 policy install^65 <66 "
                        "detach>65 view+ del=66",
                        NULL);
        echo_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    }
    th_free(h);
}

PBX_TEST(core_echo_detach_ack_checks_object_identity)
{
    static const uint32_t fields[] = {EF_OBJ_ID, EF_OBJ_GEN};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (size_t k = 0; k < PBX_ARRAY_LEN(fields); k++) {
        echo_arm(h, PBX_IPC_OP_DETACH, fields[k]);
        pbx_ipc_id id = echo_open(h, &b);
        /* No ACTIVE row: the installed grant is ended instead. */
        echo_trace_head(h, __LINE__,
                        "reserve=64 resolve@64 <65 policy install^65 <66 "
                        "detach>65 del=66",
                        "view+");
        echo_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    }
    th_free(h);
}

PBX_TEST(core_echo_retire_ack_checks_full_identity)
{
    static const uint32_t fields[] = {EF_OBJ_ID, EF_OBJ_GEN, EF_SCOPE,
                                      EF_CLASS};
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (size_t k = 0; k < PBX_ARRAY_LEN(fields); k++) {
        /* A refused INSTALL: procd may hold the object, so DENIED waits
         * for vfsd's exact retirement of it. */
        uint32_t wakes = h->wake_count;
        th_push(h, PBX_CORE_ROUTE_PROCD, TH_STAGING, 0, 0);
        echo_arm(h, PBX_IPC_OP_RETIRE, fields[k]);
        pbx_ipc_id id = echo_open(h, &b);
        echo_trace_head(h, __LINE__,
                        "reserve=64 resolve@64 <65 policy install^65 <66 "
                        "del=66 detach>65",
                        "wake");
        PBX_CHECK_EQ(h->wake_count, wakes);
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
        TH_TRACE(h, "");
        /* The inexact acknowledgement waits for a tick: vfsd's route is
         * writable all along, so its readiness does not re-ask. */
        PBX_CHECK_EQ(th_run(h), 0U);
        pbx_core_on_route_ready(&h->core, PBX_CORE_ROUTE_VFSD);
        PBX_CHECK_EQ(th_run(h), 0U);
        TH_TRACE(h, "");
        pbx_core_on_tick(&h->core);
        th_run(h);
        TH_TRACE(h, "retire wake");
        PBX_CHECK_EQ(h->wake_count, wakes + 1U);
        echo_expect(h, id, PBX_IPC_OUTCOME_DENIED);
    }
    th_free(h);
}

PBX_TEST(core_echo_runtime_alias_receipt_is_checked)
{
    static const struct {
        uint32_t rights;
        uint32_t prov;
    } rows[] = {
        {PBX_CAPABI_RIGHT_SEND | PBX_CAPABI_RIGHT_MANAGE,
         PBX_CAPABI_PROV_LOCAL},
        {PBX_CAPABI_RIGHT_SEND, PBX_CAPABI_PROV_RECEIVED},
    };
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
    memset(&b.target, 0, sizeof(b.target));
    for (size_t k = 0; k < PBX_ARRAY_LEN(rows); k++) {
        h->alias_rights = rows[k].rights;
        h->alias_prov = rows[k].prov;
        pbx_ipc_id id = echo_open(h, &b);
        /* The wrong alias is deleted, never exported. */
        TH_TRACE(h, "reserve=64 resolve@64 <65 policy alias=66 del=66 "
                    "detach>65 del=64 release=64 wake");
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
        PBX_CHECK_EQ(xfer, PBX_CORE_SLOT_NONE);
        th_clear_trace(h);
        PBX_CHECK(th_quiescent(h));
    }
    th_free(h);
}

PBX_TEST(core_echo_consume_before_approval_is_published_is_refused)
{
    /* The grant is installed and LIVE while the request waits at DETACH
     * (vfsd busy) or at the ACTIVE view (ttyd busy). */
    static const struct {
        pbx_core_route route;
        const char *parked;
        const char *resumed;
    } rows[] = {
        {PBX_CORE_ROUTE_VFSD, "detach>65:busy",
         "detach>65 view+ del=64 release=64 wake"},
        {PBX_CORE_ROUTE_TTYD, "detach>65 view+:busy",
         "view+ del=64 release=64 wake"},
    };
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    for (size_t k = 0; k < PBX_ARRAY_LEN(rows); k++) {
        char want[128];
        th_push(h, rows[k].route, TH_OK, 0, 0); /* RESOLVE or POLICY */
        th_push(h, rows[k].route, TH_BUSY, 0, 0);
        pbx_ipc_id id = echo_open(h, &b);
        (void)snprintf(want, sizeof(want),
                       "reserve=64 resolve@64 <65 policy install^65 <66 %s",
                       rows[k].parked);
        TH_TRACE(h, want);
        pbx_ipc_id grant = pbx_core_inspect_id(
            &h->core, PBX_BOOTSTRAP_POOL_GRANTS,
            pbx_core_inspect_request(&h->core, id.index)->grant);
        PBX_CHECK_EQ(th_consume(h, grant), PBX_E_CORE_STATE);
        th_run(h);
        /* Refused without effect: the grant stays, nothing is revoked. */
        TH_TRACE(h, "");
        pbx_ipc_decision d;
        uint32_t xfer = 0;
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
        pbx_core_on_route_ready(&h->core, rows[k].route);
        th_run(h);
        TH_TRACE(h, rows[k].resumed);
        TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_APPROVED);
        PBX_CHECK_EQ(d.grant.index, grant.index);
        PBX_CHECK_EQ(d.grant.gen, grant.gen);
        /* Published, the same CONSUME is accepted. */
        PBX_CHECK_EQ(th_consume(h, grant), 0U);
        th_run(h);
        th_clear_trace(h);
        PBX_CHECK(th_quiescent(h));
    }
    th_free(h);
}

/* Issue item 12: a cancellation before COMMIT releases the reserved
 * destination only after proving it empty. Here a refused COMMIT receipt
 * sits in the destination and its deletion cannot finish yet. */
PBX_TEST(core_echo_release_waits_for_pending_receipt_in_reservation)
{
    th_h *h = th_new(4);
    pbx_ipc_begin b;
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    pbx_ipc_id id = {0, 0};
    uint32_t dest = 0;
    th_default_begin(&b, sel, SEL_LEN);
    PBX_REQUIRE(th_begin(h, &b, &id, &dest) == 0U);
    PBX_CHECK_EQ(dest, 64U);
    th_clear_trace(h);
    h->hold_slot = dest; /* every deletion of dest stays TRANSIENT */
    /* No selector was sent, so the digest fails and the receipt is
     * refused; its deletion is still pending. */
    PBX_CHECK_EQ(th_commit(h, id, dest, dest), PBX_E_CORE_CLEANUP_PENDING);
    PBX_CHECK_EQ(th_cancel(h, id), 0U);
    th_run(h);
    /* Neither released nor decided while the receipt is there. */
    TH_TRACE(h, "");
    PBX_CHECK(h->slots[dest].reserved);
    PBX_CHECK_EQ(h->wake_count, 0U);
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
    PBX_CHECK(th_conserved(h));
    h->hold_slot = PBX_CORE_SLOT_NONE;
    /* The held deletion is retried on the next tick, not by polling. */
    PBX_CHECK_EQ(th_run(h), 0U);
    TH_TRACE(h, "");
    pbx_core_on_tick(&h->core);
    th_run(h);
    /* The receipt is deleted, only then is the destination released. */
    TH_TRACE(h, "del=64 release=64 wake");
    TH_CHECK_OUTCOME(h, id, &d, &xfer, PBX_IPC_OUTCOME_CANCELLED);
    PBX_CHECK(th_quiescent(h));
    th_free(h);
}

/* ---- every byte of every echo, every peer reply ------------------------ */

/*
 * The tables above change whole fields through the reply records. The
 * tests below corrupt the encoded bytes instead: every byte of the header
 * identity and seq of every peer reply type, and every byte of every
 * identity field and digest a reply's body echoes, one byte per run.
 */

/* The peer calls whose replies are corrupted, each reached on its own. */
enum echo_call {
    EC_RESOLVE = 0,
    EC_POLICY,
    EC_PROMPT,
    EC_INSTALL,
    EC_DETACH,
    EC_ACTIVE,
    EC_REMOVE,
    EC_RETIRE,
    EC_REQ_RETIRE,
    EC_WITHDRAW,
    EC_REL_DETACH,
    EC_COUNT
};

/* The harness's name of each call's pending reply. */
static const char *const echo_call_name[EC_COUNT] = {
    "resolve", "policy", "prompt", "install",  "detach", "view+",
    "view-",   "retire", "retire", "withdraw", "detach"};

/* One reached call: the request and grant behind it and its pending
 * reply (k). */
typedef struct echo_at {
    pbx_ipc_id req;
    pbx_ipc_id grant;
    uint32_t k;
} echo_at;

/* Scripts the answers call c needs and opens the default request with
 * replies held, so that the run stops at c's pending reply. */
static void echo_reach_request(th_h *h, uint32_t c, echo_at *at)
{
    pbx_ipc_begin b;
    th_default_begin(&b, sel, SEL_LEN);
    if (c == EC_PROMPT || c == EC_WITHDRAW) {
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_PROMPT, 0, 0);
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_OK, 0, 0); /* APPROVE */
    } else if (c == EC_REQ_RETIRE) {
        th_push(h, PBX_CORE_ROUTE_PROCD, TH_STAGING, 0, 0);
    } else if (c == EC_REL_DETACH) {
        th_push(h, PBX_CORE_ROUTE_TTYD, TH_DENY, 0, 0);
    }
    PBX_CHECK_EQ(th_open(h, &b, sel, &at->req), 0U);
    h->hold = true;
    if (c == EC_WITHDRAW) {
        /* Cancelled while the prompt is showing: release withdraws it. */
        uint32_t p = th_run_to(h, "prompt");
        PBX_REQUIRE(p != TH_NONE);
        th_drop(h, p);
        PBX_CHECK_EQ(th_cancel(h, at->req), 0U);
    }
}

/* Reaches call c of a fresh request (or, for REMOVE and RETIRE, of an
 * approved grant being consumed); the reply is left pending and the
 * trace is cleared. */
static void echo_reach(th_h *h, uint32_t c, echo_at *at)
{
    at->grant.index = 0U;
    at->grant.gen = 0U;
    if (c == EC_REMOVE || c == EC_RETIRE) {
        pbx_ipc_begin b;
        th_default_begin(&b, sel, SEL_LEN);
        at->grant = th_approve(h, &b, sel, false, &at->req, NULL);
        PBX_CHECK_EQ(th_consume(h, at->grant), 0U);
        h->hold = true;
    } else {
        echo_reach_request(h, c, at);
    }
    at->k = th_run_to(h, echo_call_name[c]);
    PBX_REQUIRE(at->k != TH_NONE);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    th_clear_trace(h);
}

/* The state of the record the reached call belongs to. */
static uint32_t echo_owner_state(const th_h *h, uint32_t c, const echo_at *at)
{
    if (c == EC_REMOVE || c == EC_RETIRE) {
        return pbx_core_inspect_grant(&h->core, at->grant.index)->link.state;
    }
    return pbx_core_inspect_request(&h->core, at->req.index)->link.state;
}

/* Header corruptions: every byte of the identity and of seq, generation
 * zero, an index equal to the pool capacity, a seq naming the call record
 * past the calls pool, the operation without its reply bit, another
 * route. */
enum echo_hdr {
    EH_INDEX_B0 = 0,
    EH_GEN_B0 = 4,
    EH_SEQ_B0 = 8,
    EH_GEN_ZERO = 12,
    EH_INDEX_CAP,
    EH_SEQ_CAP,
    EH_OP_REQUEST,
    EH_ROUTE,
    EH_COUNT
};

/* Applies header corruption v to r. */
static void echo_hdr_corrupt(const th_h *h, th_reply *r, uint32_t v)
{
    uint32_t seq = pbx_le_get32(r->frame + PBX_IPC_SEQ_OFFSET);
    if (v < EH_GEN_ZERO) {
        /* Bytes 12..15 index, 16..19 generation; seq is at its offset. */
        uint32_t at = v < EH_SEQ_B0 ? 12U + v : PBX_IPC_SEQ_OFFSET + v - 8U;
        r->frame[at] ^= 0x01U;
    } else if (v == EH_GEN_ZERO) {
        pbx_le_put32(r->frame + 16, 0U);
    } else if (v == EH_INDEX_CAP) {
        pbx_le_put32(r->frame + 12,
                     h->core.pools[PBX_BOOTSTRAP_POOL_REQUESTS].capacity);
    } else if (v == EH_SEQ_CAP) {
        pbx_le_put32(r->frame + PBX_IPC_SEQ_OFFSET,
                     (seq & 0xFFFF0000U) |
                         h->core.pools[PBX_BOOTSTRAP_POOL_CALLS].capacity);
    } else if (v == EH_OP_REQUEST) {
        pbx_le_put16(r->frame + 6, (uint16_t)(pbx_le_get16(r->frame + 6) &
                                              ~PBX_IPC_REPLY_BIT));
    } else {
        r->route = r->route == PBX_CORE_ROUTE_VFSD ? PBX_CORE_ROUTE_TTYD
                                                   : PBX_CORE_ROUTE_VFSD;
        r->via_slot = PBX_CORE_SLOT_NONE;
    }
}

/* Runs what follows the exact reply to the reached call and checks that
 * the call's path ends as it does without corruption. */
static void echo_finish(th_h *h, uint32_t c, const echo_at *at)
{
    static const uint8_t outcome[EC_COUNT] = {
        [EC_RESOLVE] = PBX_IPC_OUTCOME_APPROVED,
        [EC_POLICY] = PBX_IPC_OUTCOME_APPROVED,
        [EC_PROMPT] = PBX_IPC_OUTCOME_APPROVED,
        [EC_INSTALL] = PBX_IPC_OUTCOME_APPROVED,
        [EC_DETACH] = PBX_IPC_OUTCOME_APPROVED,
        [EC_ACTIVE] = PBX_IPC_OUTCOME_APPROVED,
        [EC_REQ_RETIRE] = PBX_IPC_OUTCOME_DENIED,
        [EC_WITHDRAW] = PBX_IPC_OUTCOME_CANCELLED,
        [EC_REL_DETACH] = PBX_IPC_OUTCOME_DENIED,
    };
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    if (c != EC_REMOVE && c != EC_RETIRE) {
        TH_CHECK_OUTCOME(h, at->req, &d, &xfer, outcome[c]);
        if (d.outcome == (uint8_t)PBX_IPC_OUTCOME_APPROVED) {
            PBX_CHECK_EQ(th_consume(h, d.grant), 0U);
            th_run(h);
        }
    }
    th_clear_trace(h);
    PBX_CHECK(th_quiescent(h));
    PBX_CHECK_EQ(h->violations, 0U);
}

/* A reply whose header names anything but its call matches nothing: it
 * is refused, every receipt it carried is deleted, the core holds what it
 * held, the call stays outstanding and no record moves; the exact reply
 * that follows is still taken, so the corruption alone was refused. This
 * covers generation zero in every peer reply's header. */
PBX_TEST(core_echo_every_header_byte_of_every_reply_is_refused)
{
    th_h *h = th_new(4);
    for (uint32_t c = 0; c < EC_COUNT; c++) {
        echo_at at;
        th_reply r;
        echo_reach(h, c, &at);
        for (uint32_t v = 0; v < EH_COUNT; v++) {
            uint32_t held = pbx_core_held_caps(&h->core);
            uint32_t out = pbx_core_calls_outstanding(&h->core);
            uint32_t refused = h->core.replies_refused;
            uint32_t deleted = h->deleted;
            uint32_t state = echo_owner_state(h, c, &at);
            th_reply_build(h, at.k, &r);
            echo_hdr_corrupt(h, &r, v);
            PBX_CHECK_EQ(th_reply_send(h, &r), PBX_OK);
            PBX_CHECK_EQ(h->core.replies_refused, refused + 1U);
            PBX_CHECK_EQ(h->deleted, deleted + (uint32_t)r.n);
            PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
            PBX_CHECK_EQ(pbx_core_calls_outstanding(&h->core), out);
            PBX_CHECK_EQ(echo_owner_state(h, c, &at), state);
            PBX_CHECK_EQ(th_run(h), 0U);
            PBX_CHECK(th_conserved(h));
        }
        th_clear_trace(h);
        uint32_t refused = h->core.replies_refused;
        PBX_CHECK_EQ(th_deliver(h, at.k), PBX_OK);
        PBX_CHECK_EQ(h->core.replies_refused, refused);
        echo_finish(h, c, &at);
    }
    th_free(h);
}

/* One echoed field of a reply body: offset and length. */
typedef struct echo_span {
    uint16_t off;
    uint16_t len;
} echo_span;

/* The echoed identity fields and digests of each call's reply body, at
 * the offsets docs/PROTOCOL.md gives. WITHDRAW and the release DETACH
 * have none the core judges: either ends its call on any answer. */
static size_t echo_spans(uint32_t c, const echo_span **out)
{
    /* RESOLVE: class, operation, scope identity, selector digest. */
    static const echo_span resolve[] = {{2, 2}, {4, 2}, {16, 8}, {32, 32}};
    /* POLICY: urgency, realm, session. */
    static const echo_span policy[] = {{1, 1}, {4, 4}, {8, 8}};
    /* PROMPT answer: realm, session, job id, object id, job generation,
     * request index, request generation, object generation. */
    static const echo_span prompt[] = {{4, 4},  {8, 8},  {16, 8}, {24, 8},
                                       {32, 4}, {36, 4}, {40, 4}, {44, 4}};
    /* INSTALL: handle kind, installed slot, grant index and generation,
     * target process id and generation. */
    static const echo_span install[] = {{0, 1},  {4, 4},  {8, 4},
                                        {12, 4}, {16, 8}, {24, 4}};
    /* DETACH: object id and generation. */
    static const echo_span detach[] = {{0, 8}, {8, 4}};
    /* VIEW: kind, grant index and generation. */
    static const echo_span view[] = {{0, 1}, {4, 4}, {8, 4}};
    /* RETIRE: object id, scope identity, object generation, class. */
    static const echo_span retire[] = {{0, 8}, {8, 8}, {16, 4}, {20, 2}};
    static const struct {
        const echo_span *s;
        size_t n;
    } t[EC_COUNT] = {
        [EC_RESOLVE] = {resolve, PBX_ARRAY_LEN(resolve)},
        [EC_POLICY] = {policy, PBX_ARRAY_LEN(policy)},
        [EC_PROMPT] = {prompt, PBX_ARRAY_LEN(prompt)},
        [EC_INSTALL] = {install, PBX_ARRAY_LEN(install)},
        [EC_DETACH] = {detach, PBX_ARRAY_LEN(detach)},
        [EC_ACTIVE] = {view, PBX_ARRAY_LEN(view)},
        [EC_REMOVE] = {view, PBX_ARRAY_LEN(view)},
        [EC_RETIRE] = {retire, PBX_ARRAY_LEN(retire)},
        [EC_REQ_RETIRE] = {retire, PBX_ARRAY_LEN(retire)},
    };
    *out = t[c].s;
    return t[c].n;
}

/* The call the harness sends right after an exact reply to c, which a
 * corrupted reply must never lead to (NULL: checked otherwise). */
static const char *const echo_next[EC_COUNT] = {
    [EC_RESOLVE] = "policy", [EC_POLICY] = "install", [EC_PROMPT] = "install",
    [EC_INSTALL] = "view+",  [EC_DETACH] = "view+",
};

/* Checks what follows a matched but corrupted reply to c: a progression
 * call's request ends DENIED without the next step; a cleanup
 * acknowledgement does not count (the grant or the decision waits), and
 * the exact one asked again on the next tick does. */
static void echo_body_after(th_h *h, uint32_t c, const echo_at *at)
{
    pbx_ipc_decision d;
    uint32_t xfer = 0;
    h->hold = false;
    th_run(h);
    PBX_CHECK_EQ(h->step_err, PBX_OK);
    if (c == EC_REMOVE || c == EC_RETIRE || c == EC_REQ_RETIRE) {
        if (c == EC_REQ_RETIRE) {
            TH_CHECK_OUTCOME(h, at->req, &d, &xfer, PBX_IPC_OUTCOME_PENDING);
        } else {
            PBX_CHECK(
                pbx_core_inspect_grant(&h->core, at->grant.index)->link.state !=
                (uint16_t)PBX_CORE_ST_FREE);
        }
        pbx_core_on_tick(&h->core);
        echo_finish(h, c, at);
        return;
    }
    echo_trace_head(h, __LINE__, "", echo_next[c]);
    TH_CHECK_OUTCOME(h, at->req, &d, &xfer, PBX_IPC_OUTCOME_DENIED);
    th_clear_trace(h);
    PBX_CHECK(th_quiescent(h));
    PBX_CHECK_EQ(h->violations, 0U);
}

/* Every byte of every echoed identity field and digest, one at a time: the
 * reply matches its call (the header is exact) and is judged inexact, its
 * receipts are deleted at once (the core holds no more than before it),
 * and nothing advances on it. */
PBX_TEST(core_echo_every_body_echo_byte_of_every_reply_is_refused)
{
    th_h *h = th_new(4);
    h->scope_identity = TH_SCOPE_ID; /* the FOUND scope identity counts */
    uint32_t runs = 0;
    for (uint32_t c = 0; c < EC_COUNT; c++) {
        const echo_span *s = NULL;
        size_t n = echo_spans(c, &s);
        for (size_t f = 0; f < n; f++) {
            for (uint32_t b = 0; b < s[f].len; b++) {
                echo_at at;
                th_reply r;
                echo_reach(h, c, &at);
                uint32_t held = pbx_core_held_caps(&h->core);
                uint32_t refused = h->core.replies_refused;
                th_reply_build(h, at.k, &r);
                th_drop(h, at.k);
                r.frame[PBX_IPC_HEADER_BYTES + s[f].off + b] ^= 0x01U;
                PBX_CHECK_EQ(th_reply_send(h, &r), PBX_OK);
                PBX_CHECK_EQ(h->core.replies_refused, refused);
                PBX_CHECK_EQ(pbx_core_held_caps(&h->core), held);
                echo_body_after(h, c, &at);
                runs++;
            }
        }
    }
    /* 44 + 13 + 44 + 25 + 12 + 9 + 9 + 22 + 22 bytes. */
    PBX_CHECK_EQ(runs, 200U);
    th_free(h);
}
