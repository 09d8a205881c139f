/*
 * model/powerboxd.pml: a Promela model of powerboxd's request and grant
 * lifecycle, checked with spin (docs/MODEL.md).
 *
 * NREQ concurrent requests (default 2), each driven by one Client process
 * (public BEGIN, SELECTOR, COMMIT, CANCEL, CONSUME, DECISION and the reply
 * delivery) and served by one Core process (the retained steps of
 * core/pbx_core_resolve.c, pbx_core_install.c, pbx_core_release.c,
 * pbx_core_grant.c and pbx_core_sched.c, one peer answer per step: the
 * split-phase calls are model/split.pml's subject). One Launchd
 * process issues invocation/job expiry and, once both callers have their
 * replies, the job end that expires every remaining live grant. Every peer
 * answer is a nondeterministic choice inside the atomic step that makes
 * the call, exactly as the single-threaded core performs one synchronous
 * ops call per step.
 *
 * The state and event names are those of core/pbx_core_fsm.c; rq_move and
 * gr_move encode that table row for row and trap on a missing row, as
 * pbx_core_fsm_next does.
 *
 * Build switches (all off by default):
 *   MUT_EARLY_APPROVE   mutant: ttyd BUSY on ACTIVE is taken as the ack
 *   MUT_WAKE_DROP       mutant: a BUSY wake is forgotten instead of retried
 *   MUT_REMOVE_SKIP     mutant: a failed REMOVE is taken as acknowledged
 *   MUT_REMOVE_GATES    mutant: RETIRE waits for the REMOVE ack (the core
 *                       before review D1)
 *   MUT_DETACH_LATE     mutant: release ends an unpublished grant before
 *                       DETACH, so RETIRE precedes it (before review D4)
 *   MUT_NF_ON_FAILURE   mutant: a vfsd transport failure reports NOT_FOUND
 *   MUT_UNPUBLISH       mutant: the core before 9592232: a published,
 *                       undelivered approval whose grant ends turns
 *                       CANCELLED (grant_unpublish) and revocation deletes
 *                       the unexported alias
 *   MUT_RETIRE_SKIP     mutant: a BUSY or failed RETIRE is taken as
 *                       acknowledged
 *   CORE_AT_6C5AE03     the core at 6c5ae03: revocation deletes the
 *                       unexported alias although the published reply
 *                       still owes it (finding F1)
 *   CORE_BEFORE_F2_FIX  the core before a refused or lost INSTALL retired
 *                       the object at vfsd (finding F2)
 *   NO_P_E              property (e) is not checked, so that a mutant it
 *                       would catch first must be caught by another one
 *
 * procd may install the object behind a STAGING or lost reply, and CANCEL,
 * CONSUME and EXPIRE may end a grant before its approval reply is
 * delivered, in every run.
 */

#ifndef NREQ
#define NREQ 2
#endif
#ifndef BUSY_MAX
#define BUSY_MAX 2   /* peer BUSY / transient / RETRY answers, in total */
#endif
#ifndef EXTRA_MAX
#define EXTRA_MAX 1  /* unexpected receipts (peer or public), in total */
#endif

/* ---- states and events: core/pbx_core_fsm.h ------------------------- */
#define ST_FREE       0
#define ST_OPEN       1
#define ST_RESOLVE    2
#define ST_POLICY     3
#define ST_PROMPT     4
#define ST_INSTALL    5
#define ST_DETACH     6
#define ST_ACTIVATE   7
#define ST_RELEASE    8
#define ST_NOTIFY     9
#define ST_DECIDED    10
#define ST_DELIVERED  11
#define ST_LIVE       12
#define ST_REVOKE     13
#define ST_SETTLE     14   /* revoked: REMOVE and RETIRE both owed */
#define ST_REMOVE     15   /* RETIRE acked: only REMOVE owed */
#define ST_RETIRE     16   /* REMOVE acked: only RETIRE owed */

/* Events are tokens, not numbers: rq_move(i, EV_X) pastes them into the
 * name of the row group for X. The core's events: begin selector commit resolved not_found deny allow prompt retry installed detached active_ack cancel released woken delivered consume expire revoked removed retired. */

/* ---- outcomes (ipc) --------------------------------------------------- */
#define O_NONE      0
#define O_APPROVED  1
#define O_DENIED    2
#define O_CANCELLED 3
#define O_NOT_FOUND 4

/* ---- one capability slot as powerboxd sees it ------------------------- */
#define C_NONE  0   /* nothing (never received, or reservation released) */
#define C_RSV   1   /* scope only: destination reserved at BEGIN, empty */
#define C_HELD  2   /* powerboxd holds the capability */
#define C_XFER  3   /* transferred away (vfsd DETACH, alias export) */
#define C_DEL   4   /* exactly deleted */

/* ---- authority installed in the target / exported to the caller ------- */
#define K_NONE 0
#define K_LIVE 1    /* the child's copy or the exported alias works */
#define K_DEAD 2    /* revoked at procd or retired at vfsd */

/* ---- a DECISION that could not be answered (STATE) -------------------- */
#define A_STATE 5

/* ---- request and grant records (pool index i owns grant i) ------------ */
byte r_st[NREQ];      /* request machine state */
byte g_st[NREQ];      /* grant machine state */
byte outcome[NREQ];   /* r->outcome */
byte scope[NREQ];     /* r->scope_tslot */
byte obj[NREQ];       /* r->object_tslot */
byte hnd[NREQ];       /* r->handle_tslot: revocation handle or alias */
byte orphans[NREQ];   /* orphan tslots holding unwanted receipts */
bit  rt_mode[NREQ];   /* 0 install, 1 runtime-reply */
bit  exceptional[NREQ];
bit  one_shot[NREQ];
bit  g_approved[NREQ];/* PBX_CORE_GRANT_F_APPROVED */
bit  notif[NREQ];     /* notification queued, wake not yet accepted */
bit  retired[NREQ];   /* request record retired (pbx_core_req_retire) */
bit  cdone[NREQ];     /* the caller sends nothing more */

/* ---- capability bookkeeping: held + transferred + deleted = received --- */
byte c_rcv, c_held, c_xfr, c_del;
byte kid[NREQ];       /* K_*: authority outside powerboxd for request i */
byte ali[NREQ];       /* K_*: the runtime alias while powerboxd holds it */
bit  rtobj[NREQ];     /* PBX_CORE_REQ_F_RETIRE: object retired before DENIED */

/* ---- observations (ghosts): set at the externally visible event ------- */
byte pub[NREQ];       /* decision currently published (DECISION answers it) */
byte pub0[NREQ];      /* decision as first published */
bit  pubg[NREQ];      /* the published decision names the grant */
byte ans[NREQ];       /* last DECISION answer before delivery (A_STATE:
                       * refused), O_NONE before the first */
bit  ans_g[NREQ];     /* that answer named the grant */
byte ndec[NREQ];      /* number of publications */
byte rep[NREQ];       /* outcome of the delivered reply */
bit  rep_cap[NREQ];   /* the delivered reply transferred a capability */
bit  o_ack[NREQ];     /* ttyd acknowledged the full ACTIVE row */
bit  o_nf[NREQ];      /* vfsd answered an exact scoped NOT_FOUND */
bit  o_revoked[NREQ]; /* the grant's revocation step is done: procd's handle
                       * deleted, or the unexported alias deleted unless
                       * the owed reply keeps it (vfsd's RETIRE kills it) */
bit  o_rm_sent[NREQ], o_rm_ack[NREQ];
bit  o_rm_fail[NREQ]; /* a REMOVE attempt was refused (BUSY, failure, nack) */
bit  o_rt_sent[NREQ], o_rt_ack[NREQ];
bit  o_rt_done[NREQ]; /* the core took the grant's RETIRE as acknowledged */
bit  o_gen[NREQ];     /* the grant generation retired */
bit  o_woke[NREQ];    /* the launchd wake was queued */
bit  o_dlv[NREQ];     /* the decision reply was delivered */

/* ---- environment budgets --------------------------------------------- */
byte busy;            /* BUSY, transient deletion, RETRY, lost replies */
byte extra;           /* unexpected receipts */

#define CAN_BUSY (busy < BUSY_MAX)
#define FIN(i) (cdone[i] && retired[i] && g_st[i] == ST_FREE && orphans[i] == 0)

/* ---- the transition table, row for row (core/pbx_core_fsm.c) ----------
 * rq_move(i, EV_X) and gr_move(i, EV_X) expand to the rows of event X
 * only (grouped by event so pan stays small); a state with no row for the
 * event traps, as pbx_core_fsm_next does. The 29 request rows and 9 grant
 * rows below are exactly the core's table. */
#define rq_move(i, ev) rq_##ev(i)
#define gr_move(i, ev) gr_##ev(i)

inline rq_EV_BEGIN(i)
{
    true;
    if
    :: r_st[i] == ST_FREE -> r_st[i] = ST_OPEN
    :: else -> assert(false)
    fi
}
inline rq_EV_SELECTOR(i)
{
    true;
    if
    :: r_st[i] == ST_OPEN -> r_st[i] = ST_OPEN
    :: else -> assert(false)
    fi
}
inline rq_EV_COMMIT(i)
{
    true;
    if
    :: r_st[i] == ST_OPEN -> r_st[i] = ST_RESOLVE
    :: else -> assert(false)
    fi
}
inline rq_EV_CANCEL(i)
{
    true;
    if
    :: r_st[i] == ST_OPEN -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_RESOLVE -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_POLICY -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_PROMPT -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_INSTALL -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_DETACH -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_ACTIVATE -> r_st[i] = ST_RELEASE
    :: else -> assert(false)
    fi
}
inline rq_EV_RESOLVED(i)
{
    true;
    if
    :: r_st[i] == ST_RESOLVE -> r_st[i] = ST_POLICY
    :: else -> assert(false)
    fi
}
inline rq_EV_NOT_FOUND(i)
{
    true;
    if
    :: r_st[i] == ST_RESOLVE -> r_st[i] = ST_RELEASE
    :: else -> assert(false)
    fi
}
inline rq_EV_DENY(i)
{
    true;
    if
    :: r_st[i] == ST_RESOLVE -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_POLICY -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_PROMPT -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_INSTALL -> r_st[i] = ST_RELEASE
    :: r_st[i] == ST_ACTIVATE -> r_st[i] = ST_RELEASE
    :: else -> assert(false)
    fi
}
inline rq_EV_ALLOW(i)
{
    true;
    if
    :: r_st[i] == ST_POLICY -> r_st[i] = ST_INSTALL
    :: r_st[i] == ST_PROMPT -> r_st[i] = ST_INSTALL
    :: else -> assert(false)
    fi
}
inline rq_EV_PROMPT(i)
{
    true;
    if
    :: r_st[i] == ST_POLICY -> r_st[i] = ST_PROMPT
    :: else -> assert(false)
    fi
}
inline rq_EV_RETRY(i)
{
    true;
    if
    :: r_st[i] == ST_PROMPT -> r_st[i] = ST_PROMPT
    :: else -> assert(false)
    fi
}
inline rq_EV_INSTALLED(i)
{
    true;
    if
    :: r_st[i] == ST_INSTALL -> r_st[i] = ST_DETACH
    :: else -> assert(false)
    fi
}
inline rq_EV_DETACHED(i)
{
    true;
    if
    :: r_st[i] == ST_DETACH -> r_st[i] = ST_ACTIVATE
    :: else -> assert(false)
    fi
}
inline rq_EV_ACTIVE_ACK(i)
{
    true;
    if
    :: r_st[i] == ST_ACTIVATE -> r_st[i] = ST_RELEASE
    :: else -> assert(false)
    fi
}
inline rq_EV_RELEASED(i)
{
    true;
    if
    :: r_st[i] == ST_RELEASE -> r_st[i] = ST_NOTIFY
    :: else -> assert(false)
    fi
}
inline rq_EV_WOKEN(i)
{
    true;
    if
    :: r_st[i] == ST_NOTIFY -> r_st[i] = ST_DECIDED
    :: r_st[i] == ST_DELIVERED -> r_st[i] = ST_FREE
    :: else -> assert(false)
    fi
}
inline rq_EV_DELIVERED(i)
{
    true;
    if
    :: r_st[i] == ST_NOTIFY -> r_st[i] = ST_DELIVERED
    :: r_st[i] == ST_DECIDED -> r_st[i] = ST_FREE
    :: else -> assert(false)
    fi
}

inline gr_EV_INSTALLED(i)
{
    true;
    if
    :: g_st[i] == ST_FREE -> g_st[i] = ST_LIVE
    :: else -> assert(false)
    fi
}
inline gr_EV_CONSUME(i)
{
    true;
    if
    :: g_st[i] == ST_LIVE -> g_st[i] = ST_REVOKE
    :: else -> assert(false)
    fi
}
inline gr_EV_EXPIRE(i)
{
    true;
    if
    :: g_st[i] == ST_LIVE -> g_st[i] = ST_REVOKE
    :: else -> assert(false)
    fi
}
inline gr_EV_CANCEL(i)
{
    true;
    if
    :: g_st[i] == ST_LIVE -> g_st[i] = ST_REVOKE
    :: else -> assert(false)
    fi
}
inline gr_EV_REVOKED(i)
{
    true;
    if
    :: g_st[i] == ST_REVOKE -> g_st[i] = ST_SETTLE
    :: else -> assert(false)
    fi
}
inline gr_EV_REMOVED(i)
{
    true;
    if
    :: g_st[i] == ST_SETTLE -> g_st[i] = ST_RETIRE
    :: g_st[i] == ST_REMOVE -> g_st[i] = ST_FREE
    :: else -> assert(false)
    fi
}
inline gr_EV_RETIRED(i)
{
    true;
    if
    :: g_st[i] == ST_SETTLE -> g_st[i] = ST_REMOVE
    :: g_st[i] == ST_RETIRE -> g_st[i] = ST_FREE
    :: else -> assert(false)
    fi
}

/* Requests states with a cancel row in the table. */
#define HAS_CANCEL(i) (r_st[i] == ST_OPEN || r_st[i] == ST_RESOLVE || \
    r_st[i] == ST_POLICY || r_st[i] == ST_PROMPT || r_st[i] == ST_INSTALL || \
    r_st[i] == ST_DETACH || r_st[i] == ST_ACTIVATE)

/* ---- capability effects ----------------------------------------------- */
inline cap_receive(slot)  { slot = C_HELD; c_rcv++; c_held++ }
inline cap_deleted(slot)  { slot = C_DEL;  c_held--; c_del++ }
inline cap_moved(slot)    { slot = C_XFER; c_held--; c_xfr++ }

/* An unwanted receipt arrives with a reply: deleted now, or kept in an
 * orphan tslot when the deletion is transient (pbx_core_drop_receipts). */
inline unwanted(i)
{
    c_rcv++;
    if
    :: c_del++
    :: CAN_BUSY -> busy++; c_held++; orphans[i]++
    fi
}

inline maybe_unwanted(i)
{
    true;
    if
    :: skip
    :: extra < EXTRA_MAX -> extra++; unwanted(i)
    fi
}

/* pbx_core_req_terminate and pbx_core_grant_end */
#define terminate(i, ev, o) rq_move(i, ev); outcome[i] = o
#define grant_end(i, ev) gr_move(i, ev)

/* Whether the request's published approval is not delivered yet
 * (pbx_core_grant_reply_owed: the request is live, still names the grant,
 * and is in NOTIFY or DECIDED). */
#define REPLY_OWED(i) (!retired[i] && \
    (r_st[i] == ST_NOTIFY || r_st[i] == ST_DECIDED))

/* The withdrawal of the core before 9592232 (mutant only): a published,
 * undelivered approval whose grant ends becomes CANCELLED, naming no
 * grant. Today a published decision is final until delivered. */
inline grant_unpublish(i)
{
#ifdef MUT_UNPUBLISH
    true;
    if
    :: REPLY_OWED(i) ->
        pub[i] = O_CANCELLED; pubg[i] = 0;
        outcome[i] = O_CANCELLED
    :: else -> skip
    fi
#else
    skip
#endif
}

/* pbx_core_grant_stop: cancel, consume or expire of a live grant. A
 * published grant ends at once and its decision stays as published; an
 * approval decided but not yet published ends through its request and
 * turns CANCELLED. */
#define grant_stop(i, ev) \
    true; \
    if \
    :: g_approved[i] -> grant_unpublish(i); grant_end(i, ev) \
    :: else -> \
        assert(!retired[i]); \
        if \
        :: HAS_CANCEL(i) -> terminate(i, EV_CANCEL, O_CANCELLED) \
        :: !HAS_CANCEL(i) && outcome[i] == O_APPROVED -> \
            outcome[i] = O_CANCELLED \
        :: else -> skip \
        fi \
    fi

/* pbx_core_req_retire */
inline req_retire(i)
{
    assert(r_st[i] == ST_FREE);
    retired[i] = 1
}

/* ---- retained steps (core/pbx_core_steps.c) ------------------------ */
inline step_resolve(i)
{
    true;
    if
    :: /* FOUND: the SEND-only object receipt is kept */
        cap_receive(obj[i]); maybe_unwanted(i); rq_move(i, EV_RESOLVED)
    :: /* exact scoped NOT_FOUND with the matching missing-object class */
        o_nf[i] = 1; maybe_unwanted(i);
        terminate(i, EV_NOT_FOUND, O_NOT_FOUND)
    :: /* NOT_FOUND with a mismatched class, or a malformed reply */
        maybe_unwanted(i); terminate(i, EV_DENY, O_DENIED)
    :: /* DENIED */
        terminate(i, EV_DENY, O_DENIED)
    :: CAN_BUSY -> busy++ /* BUSY: parked on vfsd, state kept */
    :: /* transport failure */
#ifdef MUT_NF_ON_FAILURE
        terminate(i, EV_NOT_FOUND, O_NOT_FOUND)
#else
        terminate(i, EV_DENY, O_DENIED)
#endif
    fi
}

inline step_policy(i)
{
    true;
    if
    :: !exceptional[i] -> rq_move(i, EV_ALLOW)
    :: exceptional[i] -> terminate(i, EV_DENY, O_DENIED) /* ALLOW refused */
    :: rq_move(i, EV_PROMPT)
    :: terminate(i, EV_DENY, O_DENIED)           /* DENY or failure */
    :: CAN_BUSY -> busy++
    fi
}

inline step_prompt(i)
{
    true;
    if
    :: CAN_BUSY -> busy++; rq_move(i, EV_RETRY)  /* RETRY: kept, parked */
    :: rq_move(i, EV_ALLOW)                      /* exact approve */
    :: terminate(i, EV_DENY, O_DENIED)           /* deny, or echo mismatch */
    :: CAN_BUSY -> busy++                        /* BUSY */
    fi
}

inline installed(i)
{
    gr_move(i, EV_INSTALLED);
    rq_move(i, EV_INSTALLED)
}

inline step_install(i)
{
    true;
    if
    :: !rt_mode[i] -> /* procd INSTALL: manage-only handle */
        cap_receive(hnd[i]); kid[i] = K_LIVE; installed(i)
    :: !rt_mode[i] -> /* STAGING handle: refused, receipt deleted; procd
                       * may have installed the object all the same */
        kid[i] = K_LIVE; rtobj[i] = 1;
        unwanted(i); terminate(i, EV_DENY, O_DENIED)
    :: !rt_mode[i] -> /* transport failure: procd may have installed */
        if :: kid[i] = K_LIVE :: skip fi;
        rtobj[i] = 1;
        terminate(i, EV_DENY, O_DENIED)
    :: rt_mode[i] -> /* alias derived from the held object */
        cap_receive(hnd[i]); ali[i] = K_LIVE; installed(i)
    :: rt_mode[i] -> terminate(i, EV_DENY, O_DENIED)
    :: CAN_BUSY -> busy++
    fi
}

/* pbx_core_detach: give powerboxd's object copy back to vfsd, or delete it
 * when the call failed. Leaves obj[i] held when it must be retried. */
inline detach(i)
{
    true;
    if
    :: cap_moved(obj[i])                         /* DETACH delivered */
    :: CAN_BUSY -> busy++                        /* BUSY: parked */
    :: /* transport failure: exact deletion instead */
        if
        :: cap_deleted(obj[i])
        :: CAN_BUSY -> busy++                    /* transient: retried */
        fi
    fi
}

inline step_detach(i)
{
    detach(i);
    if
    :: obj[i] != C_HELD -> rq_move(i, EV_DETACHED)
    :: else -> skip
    fi
}

inline step_activate(i)
{
    true;
    if
    :: o_ack[i] = 1; terminate(i, EV_ACTIVE_ACK, O_APPROVED)
    :: terminate(i, EV_DENY, O_DENIED)           /* nack, bad echo, failure */
    :: CAN_BUSY -> busy++;
#ifdef MUT_EARLY_APPROVE
        terminate(i, EV_ACTIVE_ACK, O_APPROVED)
#else
        skip
#endif
    fi
}

/* ---- release and publication (core/pbx_core_cleanup.c) ---------------- */
inline publish(i)
{
    /* (b) checked at the event: nothing request-owned remains. */
    assert(scope[i] != C_HELD && scope[i] != C_RSV && obj[i] != C_HELD);
    assert(outcome[i] == O_APPROVED || (hnd[i] != C_HELD && g_st[i] == ST_FREE));
    pub[i] = outcome[i];
    pub0[i] = outcome[i];
    ndec[i]++;
    if
    :: outcome[i] == O_APPROVED -> g_approved[i] = 1; pubg[i] = 1
    :: else -> skip
    fi;
    rq_move(i, EV_RELEASED);
    notif[i] = 1
}

/* Enabled unless it waits for its unpublished grant's cleanup (the core
 * re-queues the request from pbx_core_grant_retire). */
#define RELEASE_READY(i) (r_st[i] == ST_RELEASE && \
    !(outcome[i] != O_APPROVED && g_st[i] != ST_FREE && g_st[i] != ST_LIVE))

inline release_step(i)
{
    true;
    if
#ifndef MUT_DETACH_LATE
    :: obj[i] == C_HELD -> detach(i)             /* re-queued after */
    :: obj[i] != C_HELD && outcome[i] != O_APPROVED && g_st[i] == ST_LIVE ->
        grant_end(i, EV_CANCEL)   /* unpublished grant: after the DETACH */
#else
    :: outcome[i] != O_APPROVED && g_st[i] == ST_LIVE ->
        grant_end(i, EV_CANCEL)   /* the core before review D4: first */
#endif
    :: else ->
        true;
        if
        :: obj[i] == C_HELD -> detach(i)         /* re-queued after */
        :: else ->
            true;
            if
            :: outcome[i] != O_APPROVED && hnd[i] == C_HELD ->
                if
                :: cap_deleted(hnd[i]);
                   if :: rt_mode[i] -> ali[i] = K_NONE :: else -> skip fi
                :: CAN_BUSY -> busy++; tr = 1
                fi
            :: else ->
                true;
                if
                :: scope[i] == C_HELD ->
                    if
                    :: cap_deleted(scope[i])
                    :: CAN_BUSY -> busy++; tr = 1
                    fi
                :: scope[i] == C_RSV -> scope[i] = C_NONE
                :: else -> skip
                fi
            fi;
            if
            :: !tr && scope[i] != C_HELD && scope[i] != C_RSV ->
#ifndef CORE_BEFORE_F2_FIX
                /* A refused or lost INSTALL: vfsd retires the object (every
                 * copy, the child's included) before DENIED; anything but
                 * the exact ack parks. */
                if
                :: rtobj[i] ->
                    if
                    :: rtobj[i] = 0; kid[i] = K_DEAD
                    :: CAN_BUSY -> busy++
                    fi
                :: else -> publish(i)
                fi
#else
                publish(i)
#endif
            :: else -> skip                      /* re-queued */
            fi;
            tr = 0
        fi
    fi
}

/* ---- grant cleanup chain ----------------------------------------------- */

/* pbx_core_grant_revoke keeps an unexported alias behind a published,
 * undelivered approval (the reply still owes it; vfsd's RETIRE kills it);
 * the core at 6c5ae03 and before 9592232 deleted it all the same. */
#if defined(CORE_AT_6C5AE03) || defined(MUT_UNPUBLISH)
#define KEEP_ALIAS(i) false
#else
#define KEEP_ALIAS(i) (rt_mode[i] && REPLY_OWED(i))
#endif

inline grant_revoke(i)
{
    true;
    if
    :: hnd[i] == C_HELD && !KEEP_ALIAS(i) ->
        if
        :: cap_deleted(hnd[i]);
           if :: !rt_mode[i] -> kid[i] = K_DEAD :: else -> ali[i] = K_NONE fi;
           o_revoked[i] = 1; gr_move(i, EV_REVOKED)
        :: CAN_BUSY -> busy++                    /* transient: retried */
        fi
    :: else ->   /* alias exported, or kept for the owed reply */
        o_revoked[i] = 1; gr_move(i, EV_REVOKED)
    fi
}

/* One REMOVE at ttyd; ok says it was acknowledged exactly. */
inline remove_call(i, ok)
{
    o_rm_sent[i] = 1;
    if
    :: o_rm_ack[i] = 1; ok = 1
    :: CAN_BUSY -> busy++; o_rm_fail[i] = 1;     /* BUSY, failure or nack */
#ifdef MUT_REMOVE_SKIP
        ok = 1
#else
        skip
#endif
    fi
}

/* A copy of the object dies at vfsd's retirement. */
#define kill_copy(k) if :: k == K_LIVE -> k = K_DEAD :: else -> skip fi

/* (G') no copy of grant i's object is usable: not the child's install,
 * not an exported alias, not the alias held for the owed reply. */
#define COPIES_DEAD(i) (kid[i] != K_LIVE && ali[i] != K_LIVE)

/* The core takes the grant's RETIRE as acknowledged: (G') checked at the
 * event, and by the Monitor at every later step. */
inline rt_done(i)
{
    o_rt_done[i] = 1;
    assert(!o_rt_done[i] || COPIES_DEAD(i))   /* P_GONE(i) */
}

/* One full-identity RETIRE at vfsd: every copy of the object (the child's
 * install, an exported alias, an alias still held for the reply) dies with
 * the exact acknowledgement. */
inline retire_call(i, ok)
{
    o_rt_sent[i] = 1;
    if
    :: o_rt_ack[i] = 1; kill_copy(kid[i]); kill_copy(ali[i]); ok = 1
    :: CAN_BUSY -> busy++;
#ifdef MUT_RETIRE_SKIP
        ok = 1
#else
        skip
#endif
    fi
}

/* pbx_core_grant_settle: REMOVE, and unless ttyd echoed it exactly also
 * RETIRE in the same step; at most one transition. */
inline grant_settle(i)
{
    remove_call(i, ok);
    if
    :: ok -> gr_move(i, EV_REMOVED)
    :: else ->
#ifndef MUT_REMOVE_GATES
        retire_call(i, ok);
        if :: ok -> gr_move(i, EV_RETIRED); rt_done(i) :: else -> skip fi
#else
        skip                                     /* RETIRE waits for REMOVE */
#endif
    fi;
    ok = 0
}

/* Only REMOVE owed; its exact ack retires the generation. */
inline grant_remove(i)
{
    remove_call(i, ok);
    if :: ok -> gr_move(i, EV_REMOVED); o_gen[i] = 1 :: else -> skip fi;
    ok = 0
}

/* Only RETIRE owed; its exact ack retires the generation. */
inline grant_retire(i)
{
    retire_call(i, ok);
    if
    :: ok -> gr_move(i, EV_RETIRED); rt_done(i); o_gen[i] = 1
    :: else -> skip
    fi;
    ok = 0
}

/* pbx_core_notify_step */
inline notify_step(i)
{
    true;
    if
    :: o_woke[i] = 1; notif[i] = 0; rq_move(i, EV_WOKEN);
        if :: r_st[i] == ST_FREE -> req_retire(i) :: else -> skip fi
    :: CAN_BUSY -> busy++;
#ifdef MUT_WAKE_DROP
        notif[i] = 0; rq_move(i, EV_WOKEN);
        if :: r_st[i] == ST_FREE -> req_retire(i) :: else -> skip fi
#else
        skip                                     /* parked on launchd */
#endif
    fi
}

proctype Core(byte i)
{
    bit tr;                                      /* a deletion was transient */
    bit ok;                                      /* a peer acked exactly */
    do
    :: atomic { r_st[i] == ST_RESOLVE  -> step_resolve(i) }
    :: atomic { r_st[i] == ST_POLICY   -> step_policy(i) }
    :: atomic { r_st[i] == ST_PROMPT   -> step_prompt(i) }
    :: atomic { r_st[i] == ST_INSTALL  -> step_install(i) }
    :: atomic { r_st[i] == ST_DETACH   -> step_detach(i) }
    :: atomic { r_st[i] == ST_ACTIVATE -> step_activate(i) }
    :: atomic { RELEASE_READY(i)       -> release_step(i) }
    :: atomic { notif[i]               -> notify_step(i) }
    :: atomic { g_st[i] == ST_REVOKE   -> grant_revoke(i) }
    :: atomic { g_st[i] == ST_SETTLE   -> grant_settle(i) }
    :: atomic { g_st[i] == ST_REMOVE   -> grant_remove(i) }
    :: atomic { g_st[i] == ST_RETIRE   -> grant_retire(i) }
    :: atomic { orphans[i] > 0 ->                /* orphan lane */
        if
        :: orphans[i]--; c_held--; c_del++
        :: CAN_BUSY -> busy++
        fi }
    :: FIN(i) -> break
    od
}

/* ---- public operations (core/pbx_core_public.c) ----------------------- */
#define CANCELLABLE(i) (!retired[i] && (HAS_CANCEL(i) || \
    (outcome[i] == O_APPROVED && g_st[i] == ST_LIVE)))

inline on_cancel(i)
{
    true;
    if
    :: CANCELLABLE(i) ->
        if
        :: HAS_CANCEL(i) -> terminate(i, EV_CANCEL, O_CANCELLED)
        :: else -> grant_stop(i, EV_CANCEL)
        fi
    :: else -> skip                              /* refused: STATE */
    fi
}

/* CONSUME names the grant by id; the owner may send it before the
 * approval reply is delivered (a lost reply, or an id learnt otherwise).
 * It stops the grant like CANCEL and EXPIRE. */
inline on_consume(i)
{
    true;
    if
    :: g_st[i] == ST_LIVE && g_approved[i] && one_shot[i] ->
        grant_stop(i, EV_CONSUME)
    :: else -> skip                              /* refused */
    fi
}

/* DECISION and its delivery (pbx_core_decision_fill,
 * pbx_core_on_reply_delivered). A failed delivery keeps everything. The
 * alias leaves with the reply as it is: dead if vfsd retired the object. */
inline on_decision(i)
{
    true;
    if
    :: pub[i] == O_APPROVED && rt_mode[i] && hnd[i] != C_HELD ->
        ans[i] = A_STATE; ans_g[i] = 0           /* STATE: cannot answer */
    :: else ->
        ans[i] = pub[i]; ans_g[i] = pubg[i];
        true;
        if
        :: /* delivered */
            rep[i] = pub[i];
            if
            :: pub[i] == O_APPROVED && rt_mode[i] ->
                cap_moved(hnd[i]); kid[i] = ali[i]; ali[i] = K_NONE;
                rep_cap[i] = 1
            :: else -> skip
            fi;
            o_dlv[i] = 1;
            rq_move(i, EV_DELIVERED);
            if :: r_st[i] == ST_FREE -> req_retire(i) :: else -> skip fi
        :: CAN_BUSY -> busy++                    /* not delivered: kept */
        fi
    fi
}

proctype Client(byte i)
{
    bit sel, bad, cancelled, consumed, stray;
    atomic {
#ifdef PAIR
        /* Two fixed, different requests: install/routine/one-shot and
         * runtime-reply/exceptional/job-lifetime. */
        rt_mode[i] = i; exceptional[i] = i; one_shot[i] = 1 - i;
#else
        if :: rt_mode[i] = 0 :: rt_mode[i] = 1 fi;
        if :: exceptional[i] = 0 :: exceptional[i] = 1 fi;
        if :: one_shot[i] = 0 :: one_shot[i] = 1 fi;
#endif
        rq_move(i, EV_BEGIN);
        scope[i] = C_RSV                         /* BEGIN: no authority */
    }
    do
    :: atomic { r_st[i] == ST_OPEN && !sel -> sel = 1; rq_move(i, EV_SELECTOR) }
    :: atomic { r_st[i] == ST_OPEN && sel ->     /* exact COMMIT */
        scope[i] = C_RSV; cap_receive(scope[i]); rq_move(i, EV_COMMIT) }
    :: atomic { r_st[i] == ST_OPEN && !bad && extra < EXTRA_MAX ->
        /* COMMIT with a wrong digest: the receipt is deleted */
        bad = 1; extra++; unwanted(i) }
    :: atomic { !stray && extra < EXTRA_MAX ->   /* capability on DECISION */
        stray = 1; extra++; unwanted(i) }
    :: atomic { !cancelled -> cancelled = 1; on_cancel(i) }
    :: atomic { !consumed -> consumed = 1; on_consume(i) }
    :: atomic { (r_st[i] == ST_NOTIFY || r_st[i] == ST_DECIDED) && !o_dlv[i] ->
        on_decision(i) }
    :: atomic { o_dlv[i] -> cdone[i] = 1; break }
    od
}

/* ---- launchd: expiry of live grants, then the job end ----------------- */
#define ALL_DELIVERED (o_dlv[0] && (NREQ < 2 || o_dlv[NREQ - 1]))
#define ALL_FIN (FIN(0) && (NREQ < 2 || FIN(NREQ - 1)))

/* Early invocation/job expiry reaching grant k (pbx_core_expire);
 * enabled only when it ends something, so launchd never idles in a loop. */
#define EXPIRE_EARLY(k) \
    :: atomic { !early[k] && g_st[k] == ST_LIVE -> \
        early[k] = 1; grant_stop(k, EV_EXPIRE) }

proctype Launchd()
{
    byte k;
    bit early[NREQ];
    do
    EXPIRE_EARLY(0)
#if NREQ > 1
    EXPIRE_EARLY(1)
#endif
    :: ALL_DELIVERED -> break
    od;
    /* The job ends: every remaining live grant expires. */
    atomic {
        k = 0;
        do
        :: k < NREQ ->
            if :: g_st[k] == ST_LIVE -> grant_stop(k, EV_EXPIRE) :: else -> skip fi;
            k++
        :: else -> k = 0; break
        od
    }
    ALL_FIN;
    /* (g) quiescence: every capability deleted or transferred, and no
     * authority outside powerboxd survives. */
    k = 0;
    do
    :: k < NREQ ->
        assert(scope[k] != C_HELD && scope[k] != C_RSV);
        assert(obj[k] != C_HELD && hnd[k] != C_HELD && orphans[k] == 0);
        assert(kid[k] != K_LIVE && ali[k] != K_LIVE);
        assert(ndec[k] == 1 && o_dlv[k] && rep[k] != O_NONE);
        k++
    :: else -> break
    od;
    assert(c_held == 0 && c_rcv == c_xfr + c_del)
}

/* ---- safety invariants, checked after every step ----------------------
 * One macro per property of the brief; the monitor fires (one transition,
 * no state of its own) as soon as any of them is false and asserts them
 * one by one, so the report names the property that broke. */
#define P_A(i) ((pub[i] != O_APPROVED || o_ack[i]) && \
                (rep[i] != O_APPROVED || o_ack[i]))
#define P_B(i) ((pub0[i] == O_NONE || (scope[i] != C_HELD && \
                  scope[i] != C_RSV && obj[i] != C_HELD)) && \
                (pub0[i] == O_NONE || pub0[i] == O_APPROVED || \
                  (hnd[i] != C_HELD && g_st[i] == ST_FREE)))
#define P_C(i) ((pub0[i] == O_NONE || pub0[i] == O_APPROVED || \
                  kid[i] != K_LIVE) && \
                (rep[i] == O_NONE || rep[i] == O_APPROVED || !rep_cap[i]))
#define P_D(i) (pub[i] != O_NOT_FOUND || o_nf[i])
#ifdef NO_P_E
#define P_E(i) true
#else
#define P_E(i) ((!o_rm_sent[i] || o_revoked[i]) && \
                (!o_rt_sent[i] || (o_revoked[i] && obj[i] != C_HELD)) && \
                (!o_gen[i] || (o_revoked[i] && o_rm_ack[i] && o_rt_ack[i])) && \
                (!o_rm_fail[i] || o_rt_sent[i]))
#endif
#define P_F(i) ((!retired[i] || (o_woke[i] && o_dlv[i])) && \
                (!o_dlv[i] || o_woke[i] || notif[i]) && \
                ndec[i] <= 1 && (rep[i] == O_NONE || rep[i] == pub[i]))
#define P_G (c_rcv == c_held + c_xfr + c_del)
/* (F) a published decision is final until delivered: once APPROVED is
 * published, the retained decision stays APPROVED naming its grant, and
 * every DECISION answered before delivery reads exactly that (never STATE
 * or CANCELLED), whatever CANCEL, CONSUME or EXPIRE did to the grant. */
#define P_FINAL(i) (pub0[i] != O_APPROVED || \
                (pub[i] == O_APPROVED && pubg[i] && \
                 (ans[i] == O_NONE || (ans[i] == O_APPROVED && ans_g[i]))))
/* (G') no live authority survives the grant's end: once the core took the
 * grant's RETIRE as acknowledged, no copy of the object is usable: not the
 * child's install, not an exported alias, not the alias powerboxd still
 * holds for the owed reply. */
#define P_GONE(i) (!o_rt_done[i] || COPIES_DEAD(i))
#define INV(i) (P_A(i) && P_B(i) && P_C(i) && P_D(i) && P_E(i) && P_F(i) && \
                P_FINAL(i) && P_GONE(i))
#define J (NREQ - 1)

active proctype Monitor()
{
end:
    atomic {
        !(P_G && INV(0) && INV(J)) ->
        assert(P_G);
        assert(P_A(0)); assert(P_A(J));
        assert(P_B(0)); assert(P_B(J));
        assert(P_C(0)); assert(P_C(J));
        assert(P_D(0)); assert(P_D(J));
        assert(P_E(0)); assert(P_E(J));
        assert(P_F(0)); assert(P_F(J));
        assert(P_FINAL(0)); assert(P_FINAL(J));
        assert(P_GONE(0)); assert(P_GONE(J))
    }
}

init
{
    byte n;
    atomic {
        do
        :: n < NREQ -> run Client(n); run Core(n); n++
        :: else -> break
        od;
        run Launchd()
    }
}

/* (h) every request reaches exactly one delivered terminal decision and
 * every grant retires, when peers are eventually not busy (BUSY_MAX). */
#ifndef NOLTL
ltl live { <> (ALL_FIN && ndec[0] == 1 && (NREQ < 2 || ndec[NREQ - 1] == 1)) }
#endif
