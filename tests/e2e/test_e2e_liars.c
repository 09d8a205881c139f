/*
 * test_e2e_liars.c: lying peers in front of the real powerboxd binary
 * (both Linux images, as every C e2e test runs). One table of (peer,
 * call, field, lie) rows and one runner: each row starts powerboxd, plays
 * its peers honestly (liars.h) except for one reply told wrongly, and
 * checks, on the host, what the client sees (the request's exact outcome
 * and reason in the DECISION reply), that the lie was refused (a refused
 * reply changes nothing: the honest reply that follows it is taken; a
 * judged reply ends the request), that every receipt the liar passed was
 * closed by powerboxd (our end of each descriptor sees the hang-up), and
 * that powerboxd's descriptors are back at its idle baseline. Each row is
 * a named test that docs/STATUS.md cites.
 */
#define _GNU_SOURCE
#include "../runner/pbx_test.h"
#include "liars.h"

#include <stdio.h>
#include <string.h>

/** A row: the call whose reply lies, how, and what the client must see. */
typedef struct lr_row {
    uint16_t op;       /**< the peer call whose first reply lies */
    uint8_t view_kind; /**< ACTIVE or REMOVE when op is VIEW */
    lr_how how;        /**< the lie */
    lr_field field;    /**< the field it changes */
    uint8_t shape;     /**< the request: LR_ROUTINE, LR_PROMPTED, LR_REPLY */
    uint8_t outcome;   /**< the outcome the client must see */
    uint16_t reason;   /**< and its reason */
    unsigned asked;    /**< times the call must be asked (0: unchecked) */
} lr_row;

/* The requests a row makes: routine or prompted (exceptional) install
 * mode, routine runtime-reply mode (the alias exported to launchd), or
 * prompted and cancelled by its client while the prompt shows (so that
 * powerboxd withdraws it). */
enum { LR_ROUTINE = 0, LR_PROMPTED, LR_REPLY, LR_WITHDRAWN, LR_MISSING };

/* Short names for the table. */
#define R_    LR_ROUTINE
#define X_    LR_PROMPTED
#define Y_    LR_REPLY
#define W_    LR_WITHDRAWN
#define N_    LR_MISSING
#define OK_   PBX_IPC_OUTCOME_APPROVED, PBX_IPC_REASON_NONE
#define FAIL_ PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_FAILED
#define LATE_ PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PEER_TIMEOUT
#define BIND_ PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_RESOLVE
#define GONE_ PBX_IPC_OUTCOME_CANCELLED, PBX_IPC_REASON_NONE
#define RES_  PBX_IPC_OP_RESOLVE, 0
#define DET_  PBX_IPC_OP_DETACH, 0
#define RET_  PBX_IPC_OP_RETIRE, 0
#define POL_  PBX_IPC_OP_POLICY, 0
#define PRO_  PBX_IPC_OP_PROMPT, 0
#define ACT_  PBX_IPC_OP_VIEW, PBX_IPC_VIEW_ACTIVE
#define REM_  PBX_IPC_OP_VIEW, PBX_IPC_VIEW_REMOVE
#define INS_  PBX_IPC_OP_INSTALL, 0
#define WDR_  PBX_IPC_OP_WITHDRAW, 0

/* The rest of the matrix of every peer reply powerboxd takes (RESOLVE,
 * DETACH, RETIRE, POLICY, PROMPT, the ACTIVE and REMOVE rows of VIEW,
 * WITHDRAW, INSTALL) against every lie: each header identity (index,
 * generation, operation, seq) wrong, a duplicate, late, out of order,
 * for a call that ended, never sent. Cells that cannot apply:
 * - a missing receipt only where one must be: RESOLVE (the object) and
 *   INSTALL (the handle); every other reply must carry none, and its
 *   receipt where none belongs is its _extra_receipt row;
 * - no reply at all to WAKE (one-way) nor REVOKE (never sent: a handle is
 *   revoked by closing it), and launchd's broker answers no call;
 * - RETIRE, REMOVE and WITHDRAW are cleanup no client can end: a
 *   RETIRE or REMOVE call ends at its deadline and is asked again (the
 *   _silent rows), so its reply for a call that ended is the _late row
 *   (the ended call's reply, sent just before it is asked again);
 * - WITHDRAW out of order: a row withdraws one prompt (its client
 *   cancels the first request only), so there is no second to reorder;
 * - WITHDRAW late: it is asked once and never again (its _silent row),
 *   and nothing follows its deadline on the wire (the request's decision
 *   came before it), so no event places a reply after that deadline;
 * - a header lie on WITHDRAW is refused, but a WITHDRAW acknowledgement
 *   changes nothing when taken (pbx_core_release_judge), so its rows show
 *   only that nothing goes wrong (outcome, one call, baseline).
 * PTO_: a prompt never answered ends at the prompt deadline. */
#define PTO_ PBX_IPC_OUTCOME_DENIED, PBX_IPC_REASON_PROMPT_TIMEOUT
#define LR_ROWS_FILL(X)                                                        \
    X(liar_vfsd_resolve_silent, RES_, LR_HOW_SILENT, LR_F_NONE, R_, LATE_, 1)  \
    X(liar_vfsd_detach_header_index, DET_, LR_HOW_HEADER, LR_F_H_INDEX, R_,    \
      OK_, 1)                                                                  \
    X(liar_vfsd_detach_header_gen, DET_, LR_HOW_HEADER, LR_F_H_GEN, R_, OK_,   \
      1)                                                                       \
    X(liar_vfsd_detach_header_op, DET_, LR_HOW_HEADER, LR_F_H_OP, R_, OK_, 1)  \
    X(liar_vfsd_detach_silent, DET_, LR_HOW_SILENT, LR_F_NONE, R_, LATE_, 1)   \
    X(liar_vfsd_detach_late, DET_, LR_HOW_LATE, LR_F_NONE, R_, LATE_, 1)       \
    X(liar_vfsd_detach_out_of_order, DET_, LR_HOW_REORDER, LR_F_NONE, R_, OK_, \
      2)                                                                       \
    X(liar_vfsd_detach_for_a_cancelled_request, DET_, LR_HOW_ENDED, LR_F_NONE, \
      R_, GONE_, 1)                                                            \
    X(liar_vfsd_retire_header_index, RET_, LR_HOW_HEADER, LR_F_H_INDEX, R_,    \
      OK_, 2)                                                                  \
    X(liar_vfsd_retire_header_gen, RET_, LR_HOW_HEADER, LR_F_H_GEN, R_, OK_,   \
      2)                                                                       \
    X(liar_vfsd_retire_header_op, RET_, LR_HOW_HEADER, LR_F_H_OP, R_, OK_, 2)  \
    X(liar_vfsd_retire_header_seq, RET_, LR_HOW_HEADER, LR_F_H_SEQ, R_, OK_,   \
      2)                                                                       \
    X(liar_vfsd_retire_duplicate, RET_, LR_HOW_DUPLICATE, LR_F_NONE, R_, OK_,  \
      1)                                                                       \
    X(liar_vfsd_retire_silent, RET_, LR_HOW_SILENT, LR_F_NONE, R_, OK_, 2)     \
    X(liar_vfsd_retire_late, RET_, LR_HOW_STALE, LR_F_NONE, R_, OK_, 2)        \
    X(liar_vfsd_retire_out_of_order, RET_, LR_HOW_REORDER, LR_F_NONE, R_, OK_, \
      2)                                                                       \
    X(liar_ttyd_prompt_header_index, PRO_, LR_HOW_HEADER, LR_F_H_INDEX, X_,    \
      OK_, 1)                                                                  \
    X(liar_ttyd_prompt_header_gen, PRO_, LR_HOW_HEADER, LR_F_H_GEN, X_, OK_,   \
      1)                                                                       \
    X(liar_ttyd_prompt_header_op, PRO_, LR_HOW_HEADER, LR_F_H_OP, X_, OK_, 1)  \
    X(liar_ttyd_prompt_silent, PRO_, LR_HOW_SILENT, LR_F_NONE, X_, PTO_, 1)    \
    X(liar_ttyd_prompt_late, PRO_, LR_HOW_LATE, LR_F_NONE, X_, PTO_, 1)        \
    X(liar_ttyd_prompt_out_of_order, PRO_, LR_HOW_REORDER, LR_F_NONE, X_, OK_, \
      2)                                                                       \
    X(liar_ttyd_withdraw_header_index, WDR_, LR_HOW_HEADER, LR_F_H_INDEX, W_,  \
      GONE_, 1)                                                                \
    X(liar_ttyd_withdraw_header_gen, WDR_, LR_HOW_HEADER, LR_F_H_GEN, W_,      \
      GONE_, 1)                                                                \
    X(liar_ttyd_withdraw_header_op, WDR_, LR_HOW_HEADER, LR_F_H_OP, W_, GONE_, \
      1)                                                                       \
    X(liar_ttyd_withdraw_header_seq, WDR_, LR_HOW_HEADER, LR_F_H_SEQ, W_,      \
      GONE_, 1)                                                                \
    X(liar_ttyd_withdraw_duplicate, WDR_, LR_HOW_DUPLICATE, LR_F_NONE, W_,     \
      GONE_, 1)                                                                \
    X(liar_ttyd_withdraw_silent, WDR_, LR_HOW_SILENT, LR_F_NONE, W_, GONE_, 1) \
    X(liar_ttyd_active_header_index, ACT_, LR_HOW_HEADER, LR_F_H_INDEX, R_,    \
      OK_, 1)                                                                  \
    X(liar_ttyd_active_header_gen, ACT_, LR_HOW_HEADER, LR_F_H_GEN, R_, OK_,   \
      1)                                                                       \
    X(liar_ttyd_active_late, ACT_, LR_HOW_LATE, LR_F_NONE, R_, LATE_, 1)       \
    X(liar_ttyd_active_out_of_order, ACT_, LR_HOW_REORDER, LR_F_NONE, R_, OK_, \
      2)                                                                       \
    X(liar_ttyd_active_for_a_cancelled_request, ACT_, LR_HOW_ENDED, LR_F_NONE, \
      R_, GONE_, 1)                                                            \
    X(liar_ttyd_remove_header_index, REM_, LR_HOW_HEADER, LR_F_H_INDEX, R_,    \
      OK_, 2)                                                                  \
    X(liar_ttyd_remove_header_gen, REM_, LR_HOW_HEADER, LR_F_H_GEN, R_, OK_,   \
      2)                                                                       \
    X(liar_ttyd_remove_header_op, REM_, LR_HOW_HEADER, LR_F_H_OP, R_, OK_, 2)  \
    X(liar_ttyd_remove_header_seq, REM_, LR_HOW_HEADER, LR_F_H_SEQ, R_, OK_,   \
      2)                                                                       \
    X(liar_ttyd_remove_duplicate, REM_, LR_HOW_DUPLICATE, LR_F_NONE, R_, OK_,  \
      1)                                                                       \
    X(liar_ttyd_remove_silent, REM_, LR_HOW_SILENT, LR_F_NONE, R_, OK_, 2)     \
    X(liar_ttyd_remove_late, REM_, LR_HOW_STALE, LR_F_NONE, R_, OK_, 2)        \
    X(liar_ttyd_remove_out_of_order, REM_, LR_HOW_REORDER, LR_F_NONE, R_, OK_, \
      2)                                                                       \
    X(liar_procd_install_silent, INS_, LR_HOW_SILENT, LR_F_NONE, R_, LATE_, 1)

/* The lies told with vfsd's NOT_FOUND (N_: a run whose vfsd finds
 * nothing, test_e2e_liars_missing.c), the POLICY ALLOW of an exceptional
 * request, REMOVE's grant index. NOT_FOUND is reported only for vfsd's
 * exact scoped NOT_FOUND of the request's class: one with a wrong class,
 * operation or digest echo (pbx_core_resolve_judge), naming the scope or
 * an object, or carrying a receipt (the decoder's NOT_FOUND rule) is a
 * refused reply, DENIED for the resolver like any other, never
 * NOT_FOUND; one under a wrong header matches no call (its poisoned FOUND
 * is not taken) and the exact one after it ends the request NOT_FOUND.
 * The ALLOW is set by hand in the honest PROMPT verdict (the decoder
 * refuses it: no encoder writes it). */
#define NF_ PBX_IPC_OUTCOME_NOT_FOUND, PBX_IPC_REASON_NONE
#define LR_ROWS_MORE(X)                                                        \
    X(liar_vfsd_not_found_honest, RES_, LR_HOW_NONE, LR_F_NONE, N_, NF_, 1)    \
    X(liar_vfsd_not_found_class, RES_, LR_HOW_BODY, LR_F_CLASS, N_, BIND_, 1)  \
    X(liar_vfsd_not_found_operation, RES_, LR_HOW_BODY, LR_F_OPERATION, N_,    \
      BIND_, 1)                                                                \
    X(liar_vfsd_not_found_digest_every_byte, RES_, LR_HOW_DIGEST, LR_F_NONE,   \
      N_, BIND_, 1)                                                            \
    X(liar_vfsd_not_found_scope, RES_, LR_HOW_BODY, LR_F_SCOPE, N_, BIND_, 1)  \
    X(liar_vfsd_not_found_object_id, RES_, LR_HOW_BODY, LR_F_OBJ_ID, N_,       \
      BIND_, 1)                                                                \
    X(liar_vfsd_not_found_object_gen, RES_, LR_HOW_BODY, LR_F_OBJ_GEN, N_,     \
      BIND_, 1)                                                                \
    X(liar_vfsd_not_found_carries_a_receipt, RES_, LR_HOW_EXTRA_FD, LR_F_NONE, \
      N_, BIND_, 1)                                                            \
    X(liar_vfsd_not_found_on_the_scope, RES_, LR_HOW_ON_SCOPE, LR_F_NONE, N_,  \
      LATE_, 1)                                                                \
    X(liar_vfsd_not_found_header_index, RES_, LR_HOW_HEADER, LR_F_H_INDEX, N_, \
      NF_, 1)                                                                  \
    X(liar_vfsd_not_found_header_gen, RES_, LR_HOW_HEADER, LR_F_H_GEN, N_,     \
      NF_, 1)                                                                  \
    X(liar_vfsd_not_found_header_seq, RES_, LR_HOW_HEADER, LR_F_H_SEQ, N_,     \
      NF_, 1)                                                                  \
    X(liar_vfsd_not_found_header_op, RES_, LR_HOW_HEADER, LR_F_H_OP, N_, NF_,  \
      1)                                                                       \
    X(liar_vfsd_not_found_duplicate, RES_, LR_HOW_DUPLICATE, LR_F_NONE, N_,    \
      NF_, 1)                                                                  \
    X(liar_vfsd_not_found_late, RES_, LR_HOW_LATE, LR_F_NONE, N_, LATE_, 1)    \
    X(liar_vfsd_not_found_out_of_order, RES_, LR_HOW_REORDER, LR_F_NONE, N_,   \
      NF_, 2)                                                                  \
    X(liar_vfsd_not_found_for_a_cancelled_request, RES_, LR_HOW_ENDED,         \
      LR_F_NONE, N_, GONE_, 1)                                                 \
    X(liar_ttyd_policy_allow_exceptional, POL_, LR_HOW_BODY, LR_F_VERDICT, X_, \
      FAIL_, 1)                                                                \
    X(liar_ttyd_remove_grant_index, REM_, LR_HOW_BODY, LR_F_GRANT_INDEX, R_,   \
      OK_, 2)

/* The table: X(test name, call, lie, field, urgency, outcome and reason,
 * times asked); LR_ROWS_FILL and LR_ROWS_MORE (above) complete the
 * matrix. */
#define LR_ROWS(X)                                                             \
    LR_ROWS_FILL(X)                                                            \
    LR_ROWS_MORE(X)                                                            \
    X(liar_none_honest_path, RES_, LR_HOW_NONE, LR_F_NONE, R_, OK_, 1)         \
    X(liar_vfsd_resolve_operation, RES_, LR_HOW_BODY, LR_F_OPERATION, R_,      \
      BIND_, 1)                                                                \
    X(liar_vfsd_resolve_class, RES_, LR_HOW_BODY, LR_F_CLASS, R_, BIND_, 1)    \
    X(liar_vfsd_resolve_scope, RES_, LR_HOW_BODY, LR_F_SCOPE, R_, BIND_, 1)    \
    X(liar_vfsd_resolve_digest_every_byte, RES_, LR_HOW_DIGEST, LR_F_NONE, R_, \
      BIND_, 1)                                                                \
    X(liar_vfsd_resolve_object_gen_zero, RES_, LR_HOW_ZERO, LR_F_OBJ_GEN, R_,  \
      BIND_, 1)                                                                \
    X(liar_vfsd_resolve_header_index, RES_, LR_HOW_HEADER, LR_F_H_INDEX, R_,   \
      OK_, 1)                                                                  \
    X(liar_vfsd_resolve_header_gen, RES_, LR_HOW_HEADER, LR_F_H_GEN, R_, OK_,  \
      1)                                                                       \
    X(liar_vfsd_resolve_header_gen_zero, RES_, LR_HOW_ZERO, LR_F_H_GEN, R_,    \
      OK_, 1)                                                                  \
    X(liar_vfsd_resolve_header_seq, RES_, LR_HOW_HEADER, LR_F_H_SEQ, R_, OK_,  \
      1)                                                                       \
    X(liar_vfsd_resolve_header_op, RES_, LR_HOW_HEADER, LR_F_H_OP, R_, OK_, 1) \
    X(liar_vfsd_resolve_missing_receipt, RES_, LR_HOW_NO_FD, LR_F_NONE, R_,    \
      BIND_, 1)                                                                \
    X(liar_vfsd_resolve_extra_receipt, RES_, LR_HOW_EXTRA_FD, LR_F_NONE, R_,   \
      BIND_, 1)                                                                \
    X(liar_vfsd_resolve_duplicate, RES_, LR_HOW_DUPLICATE, LR_F_NONE, R_, OK_, \
      1)                                                                       \
    X(liar_vfsd_resolve_on_the_scope, RES_, LR_HOW_ON_SCOPE, LR_F_NONE, R_,    \
      LATE_, 1)                                                                \
    X(liar_vfsd_resolve_late, RES_, LR_HOW_LATE, LR_F_NONE, R_, LATE_, 1)      \
    X(liar_vfsd_resolve_out_of_order, RES_, LR_HOW_REORDER, LR_F_NONE, R_,     \
      OK_, 2)                                                                  \
    X(liar_vfsd_resolve_for_a_cancelled_request, RES_, LR_HOW_ENDED,           \
      LR_F_NONE, R_, GONE_, 1)                                                 \
    X(liar_vfsd_detach_object_id, DET_, LR_HOW_BODY, LR_F_OBJ_ID, R_, FAIL_,   \
      1)                                                                       \
    X(liar_vfsd_detach_object_gen, DET_, LR_HOW_BODY, LR_F_OBJ_GEN, R_, FAIL_, \
      1)                                                                       \
    X(liar_vfsd_detach_header_seq, DET_, LR_HOW_HEADER, LR_F_H_SEQ, R_, OK_,   \
      1)                                                                       \
    X(liar_vfsd_detach_extra_receipt, DET_, LR_HOW_EXTRA_FD, LR_F_NONE, R_,    \
      FAIL_, 1)                                                                \
    X(liar_vfsd_detach_duplicate, DET_, LR_HOW_DUPLICATE, LR_F_NONE, R_, OK_,  \
      1)                                                                       \
    X(liar_vfsd_retire_object_id, RET_, LR_HOW_BODY, LR_F_OBJ_ID, R_, OK_, 2)  \
    X(liar_vfsd_retire_object_gen, RET_, LR_HOW_BODY, LR_F_OBJ_GEN, R_, OK_,   \
      2)                                                                       \
    X(liar_vfsd_retire_scope, RET_, LR_HOW_BODY, LR_F_SCOPE, R_, OK_, 2)       \
    X(liar_vfsd_retire_class, RET_, LR_HOW_BODY, LR_F_CLASS, R_, OK_, 2)       \
    X(liar_vfsd_retire_extra_receipt, RET_, LR_HOW_EXTRA_FD, LR_F_NONE, R_,    \
      OK_, 2)                                                                  \
    X(liar_ttyd_policy_session, POL_, LR_HOW_BODY, LR_F_SESSION, R_, FAIL_, 1) \
    X(liar_ttyd_policy_realm, POL_, LR_HOW_BODY, LR_F_REALM, R_, FAIL_, 1)     \
    X(liar_ttyd_policy_urgency, POL_, LR_HOW_BODY, LR_F_URGENCY, R_, FAIL_, 1) \
    X(liar_ttyd_policy_header_index, POL_, LR_HOW_HEADER, LR_F_H_INDEX, R_,    \
      OK_, 1)                                                                  \
    X(liar_ttyd_policy_header_gen, POL_, LR_HOW_HEADER, LR_F_H_GEN, R_, OK_,   \
      1)                                                                       \
    X(liar_ttyd_policy_header_seq, POL_, LR_HOW_HEADER, LR_F_H_SEQ, R_, OK_,   \
      1)                                                                       \
    X(liar_ttyd_policy_header_op, POL_, LR_HOW_HEADER, LR_F_H_OP, R_, OK_, 1)  \
    X(liar_ttyd_policy_extra_receipt, POL_, LR_HOW_EXTRA_FD, LR_F_NONE, R_,    \
      FAIL_, 1)                                                                \
    X(liar_ttyd_policy_duplicate, POL_, LR_HOW_DUPLICATE, LR_F_NONE, R_, OK_,  \
      1)                                                                       \
    X(liar_ttyd_policy_silent, POL_, LR_HOW_SILENT, LR_F_NONE, R_, LATE_, 1)   \
    X(liar_ttyd_policy_late, POL_, LR_HOW_LATE, LR_F_NONE, R_, LATE_, 1)       \
    X(liar_ttyd_policy_out_of_order, POL_, LR_HOW_REORDER, LR_F_NONE, R_, OK_, \
      2)                                                                       \
    X(liar_ttyd_policy_for_a_cancelled_request, POL_, LR_HOW_ENDED, LR_F_NONE, \
      R_, GONE_, 1)                                                            \
    X(liar_ttyd_prompt_session, PRO_, LR_HOW_BODY, LR_F_SESSION, X_, FAIL_, 1) \
    X(liar_ttyd_prompt_realm, PRO_, LR_HOW_BODY, LR_F_REALM, X_, FAIL_, 1)     \
    X(liar_ttyd_prompt_job_id, PRO_, LR_HOW_BODY, LR_F_JOB_ID, X_, FAIL_, 1)   \
    X(liar_ttyd_prompt_job_gen, PRO_, LR_HOW_BODY, LR_F_JOB_GEN, X_, FAIL_, 1) \
    X(liar_ttyd_prompt_request_index, PRO_, LR_HOW_BODY, LR_F_REQ_INDEX, X_,   \
      FAIL_, 1)                                                                \
    X(liar_ttyd_prompt_request_gen, PRO_, LR_HOW_BODY, LR_F_REQ_GEN, X_,       \
      FAIL_, 1)                                                                \
    X(liar_ttyd_prompt_object_id, PRO_, LR_HOW_BODY, LR_F_OBJ_ID, X_, FAIL_,   \
      1)                                                                       \
    X(liar_ttyd_prompt_object_gen, PRO_, LR_HOW_BODY, LR_F_OBJ_GEN, X_, FAIL_, \
      1)                                                                       \
    X(liar_ttyd_prompt_header_seq, PRO_, LR_HOW_HEADER, LR_F_H_SEQ, X_, OK_,   \
      1)                                                                       \
    X(liar_ttyd_prompt_carries_a_descriptor, PRO_, LR_HOW_EXTRA_FD, LR_F_NONE, \
      X_, FAIL_, 1)                                                            \
    X(liar_ttyd_prompt_duplicate, PRO_, LR_HOW_DUPLICATE, LR_F_NONE, X_, OK_,  \
      1)                                                                       \
    X(liar_ttyd_prompt_for_a_cancelled_request, PRO_, LR_HOW_ENDED, LR_F_NONE, \
      X_, GONE_, 1)                                                            \
    X(liar_ttyd_withdraw_honest, WDR_, LR_HOW_NONE, LR_F_NONE, W_, GONE_, 1)   \
    X(liar_ttyd_withdraw_extra_receipt, WDR_, LR_HOW_EXTRA_FD, LR_F_NONE, W_,  \
      GONE_, 1)                                                                \
    X(liar_ttyd_active_duplicate, ACT_, LR_HOW_DUPLICATE, LR_F_NONE, R_, OK_,  \
      1)                                                                       \
    X(liar_ttyd_active_kind, ACT_, LR_HOW_BODY, LR_F_KIND, R_, FAIL_, 1)       \
    X(liar_ttyd_active_grant_index, ACT_, LR_HOW_BODY, LR_F_GRANT_INDEX, R_,   \
      FAIL_, 1)                                                                \
    X(liar_ttyd_active_grant_gen, ACT_, LR_HOW_BODY, LR_F_GRANT_GEN, R_,       \
      FAIL_, 1)                                                                \
    X(liar_ttyd_active_header_seq, ACT_, LR_HOW_HEADER, LR_F_H_SEQ, R_, OK_,   \
      1)                                                                       \
    X(liar_ttyd_active_header_op, ACT_, LR_HOW_HEADER, LR_F_H_OP, R_, OK_, 1)  \
    X(liar_ttyd_active_extra_receipt, ACT_, LR_HOW_EXTRA_FD, LR_F_NONE, R_,    \
      FAIL_, 1)                                                                \
    X(liar_ttyd_active_held_no_approval_before_ack, ACT_, LR_HOW_HOLD,         \
      LR_F_NONE, R_, OK_, 1)                                                   \
    X(liar_ttyd_active_never_acknowledged, ACT_, LR_HOW_SILENT, LR_F_NONE, R_, \
      LATE_, 1)                                                                \
    X(liar_ttyd_remove_kind, REM_, LR_HOW_BODY, LR_F_KIND, R_, OK_, 2)         \
    X(liar_ttyd_remove_grant_gen, REM_, LR_HOW_BODY, LR_F_GRANT_GEN, R_, OK_,  \
      2)                                                                       \
    X(liar_ttyd_remove_extra_receipt, REM_, LR_HOW_EXTRA_FD, LR_F_NONE, R_,    \
      OK_, 2)                                                                  \
    X(liar_procd_install_process_id, INS_, LR_HOW_BODY, LR_F_PROC_ID, R_,      \
      FAIL_, 1)                                                                \
    X(liar_procd_install_process_gen, INS_, LR_HOW_BODY, LR_F_PROC_GEN, R_,    \
      FAIL_, 1)                                                                \
    X(liar_procd_install_grant_index, INS_, LR_HOW_BODY, LR_F_GRANT_INDEX, R_, \
      FAIL_, 1)                                                                \
    X(liar_procd_install_grant_gen, INS_, LR_HOW_BODY, LR_F_GRANT_GEN, R_,     \
      FAIL_, 1)                                                                \
    X(liar_procd_install_grant_gen_zero, INS_, LR_HOW_ZERO, LR_F_GRANT_GEN,    \
      R_, FAIL_, 1)                                                            \
    X(liar_procd_install_slot, INS_, LR_HOW_BODY, LR_F_SLOT, R_, FAIL_, 1)     \
    X(liar_procd_install_staging_handle, INS_, LR_HOW_STAGING, LR_F_NONE, R_,  \
      FAIL_, 1)                                                                \
    X(liar_procd_install_missing_handle, INS_, LR_HOW_NO_FD, LR_F_NONE, R_,    \
      FAIL_, 1)                                                                \
    X(liar_procd_install_extra_receipt, INS_, LR_HOW_EXTRA_FD, LR_F_NONE, R_,  \
      FAIL_, 1)                                                                \
    X(liar_procd_install_header_index, INS_, LR_HOW_HEADER, LR_F_H_INDEX, R_,  \
      OK_, 1)                                                                  \
    X(liar_procd_install_header_gen, INS_, LR_HOW_HEADER, LR_F_H_GEN, R_, OK_, \
      1)                                                                       \
    X(liar_procd_install_header_seq, INS_, LR_HOW_HEADER, LR_F_H_SEQ, R_, OK_, \
      1)                                                                       \
    X(liar_procd_install_header_op, INS_, LR_HOW_HEADER, LR_F_H_OP, R_, OK_,   \
      1)                                                                       \
    X(liar_procd_install_duplicate, INS_, LR_HOW_DUPLICATE, LR_F_NONE, R_,     \
      OK_, 1)                                                                  \
    X(liar_procd_install_late, INS_, LR_HOW_LATE, LR_F_NONE, R_, LATE_, 1)     \
    X(liar_procd_install_out_of_order, INS_, LR_HOW_REORDER, LR_F_NONE, R_,    \
      OK_, 2)                                                                  \
    X(liar_procd_install_for_a_cancelled_request, INS_, LR_HOW_ENDED,          \
      LR_F_NONE, R_, GONE_, 1)                                                 \
    X(liar_reply_mode_detach_object_id, DET_, LR_HOW_BODY, LR_F_OBJ_ID, Y_,    \
      FAIL_, 1)                                                                \
    X(liar_reply_mode_active_grant_gen, ACT_, LR_HOW_BODY, LR_F_GRANT_GEN, Y_, \
      FAIL_, 1)                                                                \
    X(liar_reply_mode_active_held_no_approval_before_ack, ACT_, LR_HOW_HOLD,   \
      LR_F_NONE, Y_, OK_, 1)                                                   \
    X(liar_reply_mode_active_never_acknowledged, ACT_, LR_HOW_SILENT,          \
      LR_F_NONE, Y_, LATE_, 1)                                                 \
    X(liar_reply_mode_retire_scope, RET_, LR_HOW_BODY, LR_F_SCOPE, Y_, OK_, 2)

#define LR_ROW(name, ...) {__VA_ARGS__},
static const lr_row lr_rows[] = {LR_ROWS(LR_ROW)};
#undef LR_ROW

/* Index of each row's name in the table. */
#define LR_ENUM(name, ...) LR_ROW_##name,
enum { LR_ROWS(LR_ENUM) LR_ROW_COUNT };
#undef LR_ENUM

/* CONSUMEs grant on the broker; returns the reply status or -1. */
static long lr_consume(lr_run *r, pbx_ipc_id grant)
{
    uint8_t out[64];
    size_t n = 0;
    pbx_ipc_consume c = {grant};
    if (pbx_ipc_consume_encode(&c, out, sizeof(out), &n) != PBX_OK) {
        return -1;
    }
    return lr_public(r->p.broker, out, n);
}

/* LR_NO_CALL: no peer call follows an accepted reply. */
#define LR_NO_CALL 8U

/* The call an accepted reply to op leads to (lr_op_slot numbering):
 * RESOLVE to POLICY, POLICY and PROMPT to INSTALL, INSTALL and DETACH to
 * the ACTIVE row. */
static unsigned lr_next_call(uint16_t op)
{
    switch (op) {
    case PBX_IPC_OP_RESOLVE:
        return lr_op_slot(PBX_IPC_OP_POLICY, 0);
    case PBX_IPC_OP_POLICY:
    case PBX_IPC_OP_PROMPT:
        return lr_op_slot(PBX_IPC_OP_INSTALL, 0);
    case PBX_IPC_OP_INSTALL:
    case PBX_IPC_OP_DETACH:
        return lr_op_slot(PBX_IPC_OP_VIEW, PBX_IPC_VIEW_ACTIVE);
    default:
        /* After the ACTIVE row only the decision follows (checked). */
        return LR_NO_CALL;
    }
}

/* What the lie must show beyond outcome and baseline. */
static void lr_row_extra(const lr_row *w, const lr_run *r)
{
    if (w->how == LR_HOW_HEADER && w->shape != LR_MISSING) {
        /* The refused reply's poisoned body changed nothing: the object,
         * verdict, answer, slot and row taken are the honest ones. */
        PBX_CHECK_EQ(r->last_object, 900U);
        if (w->outcome == PBX_IPC_OUTCOME_APPROVED) {
            PBX_CHECK_EQ(r->last_slot, w->shape == LR_REPLY ? 0U : 20U);
        }
    }
    if (w->how == LR_HOW_HOLD) {
        /* While ttyd held the ACTIVE row, the decision was PENDING and
         * launchd had no wake: no approval before the ack. */
        PBX_CHECK_EQ(r->held_outcome, (unsigned)PBX_IPC_OUTCOME_PENDING);
    }
    if (w->outcome != PBX_IPC_OUTCOME_APPROVED) {
        /* Nothing was done on the strength of the lie: the call that
         * would follow an accepted reply was never made. */
        unsigned next = lr_next_call(w->op);
        PBX_CHECK(next == LR_NO_CALL || r->seen[next] == 0U);
    }
    if (w->field == LR_F_VERDICT) {
        /* The ALLOW was not taken as the PROMPT it replaced either. */
        PBX_CHECK_EQ(r->seen[lr_op_slot(PBX_IPC_OP_PROMPT, 0)], 0U);
    }
    if (w->how == LR_HOW_STALE) {
        /* The ended call's reply came once, before the call was asked
         * again (or never, when it was not: then it stays held). */
        PBX_CHECK_EQ(r->stale_sent, w->asked > 1U ? 1U : 0U);
    }
    if (w->asked != 0U && w->how != LR_HOW_REORDER) {
        PBX_CHECK_EQ(r->seen[lr_op_slot(w->op, w->view_kind)], w->asked);
    }
}

/* powerboxd's own log tells the same end: one decision line per
 * request, with the outcome (and, when not approved, the reason) the
 * client was told. */
static void lr_row_log(const lr_row *w, const lr_run *r, unsigned nreq)
{
    static const char *const reasons[] = {"",
                                          "policy",
                                          "user",
                                          "prompt-timeout",
                                          "peer-timeout",
                                          "peer-failed",
                                          "resolve"};
    char line[128];
    for (unsigned k = 0; k < nreq; k++) {
        (void)snprintf(line, sizeof(line), "event=decision request=1-%u.%u ",
                       r->req[k].index, r->req[k].gen);
        PBX_CHECK(e2e_log_wait(&r->p, line, 1, 5000));
        PBX_CHECK_EQ(e2e_log_count(&r->p, line), 1);
    }
    if (w->outcome == PBX_IPC_OUTCOME_APPROVED) {
        (void)snprintf(line, sizeof(line), " outcome=approved ");
    } else if (w->outcome == PBX_IPC_OUTCOME_CANCELLED) {
        (void)snprintf(line, sizeof(line),
                       " outcome=cancelled reason=cancelled\n");
    } else if (w->outcome == PBX_IPC_OUTCOME_NOT_FOUND) {
        (void)snprintf(line, sizeof(line),
                       " outcome=not-found reason=not-found\n");
    } else {
        size_t n = sizeof(reasons) / sizeof(reasons[0]);
        (void)snprintf(line, sizeof(line), " outcome=denied reason=%s\n",
                       w->reason < n ? reasons[w->reason] : "unnamed");
    }
    PBX_CHECK_EQ(e2e_log_count(&r->p, line), (int)nreq);
}

/* One run of row w (digest_at: the byte an LR_HOW_DIGEST lie flips). */
static void lr_row_once(const lr_row *w, unsigned digest_at)
{
    lr_run r;
    pbx_ipc_begin b;
    uint32_t status = 1;
    unsigned nreq = w->how == LR_HOW_REORDER ? 2U : 1U;
    PBX_REQUIRE(lr_start(&r));
    r.fault = (lr_fault){w->op, w->view_kind, w->how, w->field, digest_at};
    r.missing = w->shape == LR_MISSING;
    lr_begin_rec(&b, "docs/readme.txt");
    if (w->shape == LR_PROMPTED || w->shape == LR_WITHDRAWN) {
        b.ctx.urgency = PBX_IPC_URGENCY_EXCEPTIONAL;
    }
    if (w->shape == LR_WITHDRAWN) {
        r.cancel_at = PBX_IPC_OP_PROMPT;
    }
    if (w->shape == LR_REPLY) {
        b.ctx.mode = PBX_IPC_MODE_RUNTIME_REPLY;
        memset(&b.target, 0, sizeof(b.target));
    }
    for (unsigned k = 0; k < nreq; k++) {
        if (k > 0U && w->shape == LR_PROMPTED) {
            /* One prompt record per job at a time (pbx_core_prompt_share):
             * a second prompt is shown at once only for another job. */
            b.ctx.job_id++;
        }
        PBX_CHECK(lr_open(&r, &b, "docs/readme.txt", 32U, &status));
        PBX_CHECK_EQ(status, 0U);
    }
    PBX_CHECK(lr_serve(&r, nreq, 15000));
    for (unsigned k = 0; k < nreq; k++) {
        pbx_ipc_decision d;
        PBX_CHECK(lr_decision(r.p.broker, r.req[k], &d));
        PBX_CHECK_EQ(d.outcome, w->outcome);
        PBX_CHECK_EQ(d.reason, w->reason);
        if (d.outcome == PBX_IPC_OUTCOME_APPROVED) {
            /* Consumed: the row is removed and the object retired. */
            PBX_CHECK_EQ(lr_consume(&r, d.grant), 0L);
            r.want[lr_op_slot(PBX_IPC_OP_VIEW, PBX_IPC_VIEW_REMOVE)]++;
            r.want[lr_op_slot(PBX_IPC_OP_RETIRE, 0)]++;
        }
    }
    lr_row_log(w, &r, nreq);
    unsigned *want = &r.want[lr_op_slot(w->op, w->view_kind)];
    *want = *want > w->asked ? *want : w->asked;
    /* Every receipt closed, every scope deleted, the baseline back. */
    PBX_CHECK(lr_settle(&r, 15000));
    PBX_CHECK(r.fired || w->how == LR_HOW_NONE);
    PBX_CHECK(!r.send_failed);
    lr_row_extra(w, &r);
    PBX_CHECK(r.held_len == 0U || w->how == LR_HOW_STALE);
    lr_stop(&r);
}

/* The runner: one row, or for a digest lie each of the 32 bytes. */
static void lr_row_run(unsigned k)
{
    const lr_row *w = &lr_rows[k];
    unsigned n = w->how == LR_HOW_DIGEST ? PBX_IPC_DIGEST_BYTES : 1U;
    for (unsigned at = 0; at < n; at++) {
        lr_row_once(w, at);
    }
}

/* Each row is a named test. */
#define LR_TEST(name, ...)                                                     \
    PBX_TEST(name)                                                             \
    {                                                                          \
        lr_row_run(LR_ROW_##name);                                             \
    }
LR_ROWS(LR_TEST)
#undef LR_TEST
