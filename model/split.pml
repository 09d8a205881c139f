/*
 * model/split.pml: the split-phase engine (DESIGN section 2b), checked
 * with spin (docs/MODEL.md, "The split-phase model").
 *
 * The core sends a peer call and goes on; the reply is a later event,
 * matched to its outstanding call by what it echoes (route, op, request,
 * per-call sequence). Calls of NREQ requests are outstanding on the same
 * routes at once, and the Peers process answers any of them in any order,
 * including replies to calls that already ended (by deadline,
 * cancellation or expiry): those must be refused and their capabilities
 * deleted. Deadlines are nondeterministic Env events. Every step is one
 * atomic block: the core is single-threaded, one event per step.
 *
 * Lanes: each request has three call lanes, P (its progress calls:
 * RESOLVE, POLICY, PROMPT, INSTALL, DETACH, ACTIVE, then its grant's
 * REVOKE), M (REMOVE) and T (RETIRE), each with one live call at most and
 * a window of two replies in flight (the live one and one stale one).
 * Routes: vfsd (RESOLVE, DETACH, RETIRE), ttyd (POLICY, PROMPT, ACTIVE,
 * REMOVE, WITHDRAW), procd (INSTALL, REVOKE).
 *
 * Build switches (all off by default):
 *   MUT_SEQ_IGNORED      mutant: a reply is matched without its sequence,
 *                        so a late reply to an ended call is accepted by
 *                        the re-sent call
 *   MUT_WITHDRAW_KEEP    mutant: CANCEL/EXPIRE of a showing prompt leaves
 *                        the PROMPT call live, so the late answer counts
 *   MUT_NO_WITHDRAW      mutant: no WITHDRAW for a showing prompt
 *   MUT_RETIRE_WAITS     mutant: RETIRE goes out only after REMOVE's ack
 *   MUT_FIFO_MATCH       mutant: a ttyd reply is matched to the oldest
 *                        live call of its op on the route (as if ttyd
 *                        answered in order), not by its echo, so one
 *                        request's ACTIVE ack approves another
 *   MUT_INSTALL_ABANDON  mutant: an INSTALL ended by deadline or cancel is
 *                        forgotten (no object retirement), so procd's
 *                        late install outlives the DENIED/CANCELLED
 */

#ifndef NREQ
#define NREQ 2
#endif
#ifndef BUSY_MAX
#define BUSY_MAX 1   /* BUSY / RETRY answers, in total */
#endif
#ifndef DL_MAX
#define DL_MAX 1     /* deadlines that fire while the reply is in flight */
#endif
#ifndef SIL_MAX
#define SIL_MAX 1    /* replies a peer never sends (silence) */
#endif
#ifndef EXTRA_MAX
#define EXTRA_MAX 1  /* unexpected receipts on replies, in total */
#endif
#define SEQ_MOD 4    /* per-lane call sequence, modulo (no alias: asserted) */

/* request states (the terminal path: RELEASE, then DONE = published) */
#define R_RESOLVE  1
#define R_POLICY   2
#define R_PROMPT   3
#define R_INSTALL  4
#define R_DETACH   5
#define R_ACTIVATE 6
#define R_RELEASE  7
#define R_DONE     8
/* grant states: SETTLE owes REMOVE (if its ACTIVE row was sent) and RETIRE */
#define G_FREE   0
#define G_LIVE   1
#define G_REVOKE 2
#define G_SETTLE 3

#define O_NONE 0
#define O_APPROVED 1
#define O_DENIED 2
#define O_CANCELLED 3
#define O_NOT_FOUND 4

#define OP_RESOLVE 1
#define OP_POLICY  2
#define OP_PROMPT  3
#define OP_INSTALL 4
#define OP_DETACH  5
#define OP_ACTIVE  6
#define OP_REVOKE  7
#define OP_REMOVE  8
#define OP_RETIRE  9
#define TTYD(op) (op == OP_POLICY || op == OP_PROMPT || op == OP_ACTIVE || op == OP_REMOVE)

#define A_OK     1   /* FOUND / ALLOW / approve / ack */
#define A_NF     2   /* exact scoped NOT_FOUND */
#define A_DENY   3   /* DENIED / DENY / deny / nack / failure */
#define A_PROMPT 4
#define A_BUSY   5   /* BUSY or RETRY: the call ended, sent again later */

#define LP 0
#define LM 1
#define LT 2
#define L(i, ln) ((i) * 3 + (ln))
#define F(i, ln, s) (((i) * 3 + (ln)) * 2 + (s))

#define C_NONE 0
#define C_HELD 2
#define C_XFER 3
#define C_DEL  4
#define K_NONE 0
#define K_LIVE 1
#define K_DEAD 2

/* ---- request and grant records ---------------------------------------- */
byte r_st[NREQ], g_st[NREQ], outcome[NREQ];
byte scope[NREQ], obj[NREQ], hnd[NREQ];
bit  excp[NREQ];     /* exceptional: never allowed by policy alone */
bit  rtobj[NREQ];    /* an INSTALL may have installed: retire before deciding */
bit  dtok[NREQ];     /* vfsd acknowledged DETACH of powerboxd's copy */
bit  rm_owed[NREQ];  /* the ACTIVE row was sent: REMOVE owed at cleanup */
bit  rm_done[NREQ], rt_done[NREQ];

/* ---- the outstanding-call table (core) and replies in flight (peers) --- */
byte c_op[NREQ * 3], c_sq[NREQ * 3], c_nx[NREQ * 3];
byte fl_op[NREQ * 6], fl_sq[NREQ * 6];
bit  fl_lv[NREQ * 6];  /* ghost: the call this reply answers is still live */

/* ---- capabilities: received = held + transferred + deleted ------------- */
byte c_rcv, c_held, c_xfr, c_del;
byte kid[NREQ];        /* authority installed in the child (procd) */
bit  objdead[NREQ];    /* vfsd retired the object: every copy is dead */

/* ---- observations ------------------------------------------------------ */
byte pub[NREQ], ndec[NREQ];
bit  o_ack[NREQ];      /* ttyd acknowledged this request's ACTIVE row */
bit  o_as[NREQ];       /* an ACTIVE row was sent */
bit  o_nf[NREQ];
bit  o_revoked[NREQ];
bit  o_rm_sent[NREQ], o_rm_ack[NREQ], o_rt_sent[NREQ], o_rt_ack[NREQ];
bit  o_gen[NREQ];
bit  o_cps[NREQ];      /* CANCEL/EXPIRE arrived while the prompt showed */
bit  o_wd[NREQ];       /* WITHDRAW sent to ttyd */

byte busy, dl, sil, extra;

#define ROOM(i, ln) (fl_op[F(i, ln, 0)] == 0 || fl_op[F(i, ln, 1)] == 0)
#define INFLIGHT_LIVE(i, ln) (fl_lv[F(i, ln, 0)] || fl_lv[F(i, ln, 1)])
#define OBJ_GONE(i) (obj[i] != C_HELD && (obj[i] != C_XFER || dtok[i]))
#define NO_CALLS(i) (c_op[L(i, LP)] == 0 && c_op[L(i, LM)] == 0 && c_op[L(i, LT)] == 0)
#define FIN(i) (r_st[i] == R_DONE && g_st[i] == G_FREE && !rtobj[i] && NO_CALLS(i))
#define ALL_FIN (FIN(0) && (NREQ < 2 || FIN(NREQ - 1)))
#define ALL_DONE (r_st[0] == R_DONE && (NREQ < 2 || r_st[NREQ - 1] == R_DONE))
#define NO_FL(i) (fl_op[F(i,0,0)] == 0 && fl_op[F(i,0,1)] == 0 && \
    fl_op[F(i,1,0)] == 0 && fl_op[F(i,1,1)] == 0 && \
    fl_op[F(i,2,0)] == 0 && fl_op[F(i,2,1)] == 0)
#define NO_INFLIGHT (NO_FL(0) && (NREQ < 2 || NO_FL(NREQ - 1)))

inline cap_receive(slot) { slot = C_HELD; c_rcv++; c_held++ }
inline cap_deleted(slot) { slot = C_DEL;  c_held--; c_del++ }
inline cap_moved(slot)   { slot = C_XFER; c_held--; c_xfr++ }

/* Send a call on lane ln: a fresh sequence, the table entry, and the
 * peer's pending reply (in a free window place). */
inline send(i, ln, op)
{
    c_nx[L(i, ln)] = (c_nx[L(i, ln)] + 1) % SEQ_MOD;
    /* the abstraction is exact: no reply in flight on this lane echoes
     * the same op and sequence (a wider counter changes nothing) */
    assert(!(fl_op[F(i, ln, 0)] == op && fl_sq[F(i, ln, 0)] == c_nx[L(i, ln)]));
    assert(!(fl_op[F(i, ln, 1)] == op && fl_sq[F(i, ln, 1)] == c_nx[L(i, ln)]));
    c_op[L(i, ln)] = op; c_sq[L(i, ln)] = c_nx[L(i, ln)];
    if
    :: fl_op[F(i, ln, 0)] == 0 ->
        fl_op[F(i, ln, 0)] = op; fl_sq[F(i, ln, 0)] = c_nx[L(i, ln)]; fl_lv[F(i, ln, 0)] = 1
    :: else ->
        assert(fl_op[F(i, ln, 1)] == 0);
        fl_op[F(i, ln, 1)] = op; fl_sq[F(i, ln, 1)] = c_nx[L(i, ln)]; fl_lv[F(i, ln, 1)] = 1
    fi;
    if
    :: op == OP_REMOVE -> o_rm_sent[i] = 1
    :: op == OP_RETIRE && g_st[i] == G_SETTLE -> o_rt_sent[i] = 1
    :: op == OP_ACTIVE -> o_as[i] = 1; rm_owed[i] = 1
    :: else -> skip
    fi
}

/* The core ends a live call without its reply (deadline, cancellation,
 * expiry): the ghost marks its reply late, the table forgets the entry. */
inline ghost_end(i, ln)
{
    if
    :: fl_op[F(i, ln, 0)] == c_op[L(i, ln)] && fl_sq[F(i, ln, 0)] == c_sq[L(i, ln)] ->
        fl_lv[F(i, ln, 0)] = 0
    :: else -> skip
    fi;
    if
    :: fl_op[F(i, ln, 1)] == c_op[L(i, ln)] && fl_sq[F(i, ln, 1)] == c_sq[L(i, ln)] ->
        fl_lv[F(i, ln, 1)] = 0
    :: else -> skip
    fi
}
inline end_call(i, ln)
{
    ghost_end(i, ln);
    c_op[L(i, ln)] = 0; c_sq[L(i, ln)] = 0
}

/* The request ends without authority (or is cancelled): its live progress
 * call ends, except a DETACH, which is cleanup and is never abandoned. An
 * ended INSTALL may still install, so the object is retired at vfsd
 * before the decision; an ended PROMPT is withdrawn at ttyd. */
inline terminate(i, o)
{
    assert(r_st[i] >= R_RESOLVE && r_st[i] <= R_ACTIVATE);
    if
    :: c_op[L(i, LP)] != 0 && c_op[L(i, LP)] != OP_DETACH ->
        if
        :: c_op[L(i, LP)] == OP_INSTALL ->
#ifndef MUT_INSTALL_ABANDON
            rtobj[i] = 1
#else
            skip
#endif
        :: c_op[L(i, LP)] == OP_PROMPT ->
#ifndef MUT_NO_WITHDRAW
            o_wd[i] = 1                     /* WITHDRAW to ttyd */
#else
            skip
#endif
        :: else -> skip
        fi;
#ifdef MUT_WITHDRAW_KEEP
        if
        :: c_op[L(i, LP)] == OP_PROMPT -> ghost_end(i, LP) /* entry kept */
        :: else -> end_call(i, LP)
        fi
#else
        end_call(i, LP)
#endif
    :: else -> skip
    fi;
    r_st[i] = R_RELEASE;
    outcome[i] = o
}

inline grant_done(i)
{
    if
    :: rm_done[i] && rt_done[i] ->
        g_st[i] = G_FREE; o_gen[i] = 1;
        rm_done[i] = 0; rt_done[i] = 0; rm_owed[i] = 0
    :: else -> skip
    fi
}

/* An accepted reply (its call was live and matched exactly). */
inline handle(j, op, ans)
{
    if
    :: op == OP_RESOLVE ->
        assert(r_st[j] == R_RESOLVE);
        if
        :: ans == A_OK -> cap_receive(obj[j]); ncap--; r_st[j] = R_POLICY
        :: ans == A_NF -> o_nf[j] = 1; terminate(j, O_NOT_FOUND)
        :: ans == A_DENY -> terminate(j, O_DENIED)
        :: ans == A_BUSY -> skip
        fi
    :: op == OP_POLICY ->
        assert(r_st[j] == R_POLICY);
        if
        :: ans == A_OK && !excp[j] -> r_st[j] = R_INSTALL
        :: ans == A_OK && excp[j] -> terminate(j, O_DENIED) /* ALLOW refused */
        :: ans == A_PROMPT -> r_st[j] = R_PROMPT
        :: ans == A_DENY -> terminate(j, O_DENIED)
        :: ans == A_BUSY -> skip
        fi
    :: op == OP_PROMPT ->
        assert(r_st[j] == R_PROMPT);
        if
        :: ans == A_OK -> r_st[j] = R_INSTALL
        :: ans == A_DENY -> terminate(j, O_DENIED)
        :: ans == A_BUSY -> skip                  /* RETRY or BUSY */
        fi
    :: op == OP_INSTALL ->
        assert(r_st[j] == R_INSTALL);
        if
        :: ans == A_OK ->
            cap_receive(hnd[j]); ncap--; g_st[j] = G_LIVE; r_st[j] = R_DETACH
        :: ans == A_DENY -> rtobj[j] = 1; terminate(j, O_DENIED)
        :: ans == A_BUSY -> skip
        fi
    :: op == OP_DETACH ->
        dtok[j] = 1;
        if
        :: r_st[j] == R_DETACH -> r_st[j] = R_ACTIVATE
        :: else -> assert(r_st[j] == R_RELEASE)
        fi
    :: op == OP_ACTIVE ->
        assert(r_st[j] == R_ACTIVATE);
        if
        :: ans == A_OK -> r_st[j] = R_RELEASE; outcome[j] = O_APPROVED
        :: ans == A_DENY -> terminate(j, O_DENIED)
        :: ans == A_BUSY -> skip
        fi
    :: op == OP_REVOKE ->
        assert(g_st[j] == G_REVOKE);
        if
        :: ans == A_OK ->
            cap_deleted(hnd[j]); o_revoked[j] = 1; g_st[j] = G_SETTLE;
            rm_done[j] = !rm_owed[j];
            /* REMOVE and RETIRE go out together */
            if
            :: rm_owed[j] -> assert(ROOM(j, LM)); send(j, LM, OP_REMOVE)
            :: else -> skip
            fi;
#ifndef MUT_RETIRE_WAITS
            assert(ROOM(j, LT)); send(j, LT, OP_RETIRE)
#else
            if
            :: !rm_owed[j] -> send(j, LT, OP_RETIRE)
            :: else -> skip
            fi
#endif
        :: ans == A_BUSY -> skip
        fi
    :: op == OP_REMOVE ->
        assert(g_st[j] == G_SETTLE);
        if
        :: ans == A_OK -> rm_done[j] = 1; grant_done(j)
        :: ans == A_BUSY -> skip
        fi
    :: op == OP_RETIRE ->
        if
        :: ans == A_OK && g_st[j] == G_SETTLE -> rt_done[j] = 1; grant_done(j)
        :: ans == A_OK && g_st[j] != G_SETTLE -> assert(rtobj[j]); rtobj[j] = 0
        :: ans == A_BUSY -> skip
        fi
    fi
}

/* ---- peers: one reply in flight answered, in any order ----------------- */
inline peer_answer(i, op)
{
    if
    :: op == OP_RESOLVE ->
        if
        :: ans = A_OK; ncap = 1
        :: ans = A_NF
        :: ans = A_DENY
        :: busy < BUSY_MAX -> busy++; ans = A_BUSY
        fi
    :: op == OP_POLICY ->
        if
        :: ans = A_OK
        :: ans = A_PROMPT
        :: ans = A_DENY
        :: busy < BUSY_MAX -> busy++; ans = A_BUSY
        fi
    :: op == OP_PROMPT ->
        if
        :: ans = A_OK
        :: ans = A_DENY
        :: busy < BUSY_MAX -> busy++; ans = A_BUSY
        fi
    :: op == OP_INSTALL ->
        if
        :: ans = A_OK; ncap = 1;
           if :: !objdead[i] -> kid[i] = K_LIVE :: else -> kid[i] = K_DEAD fi
        :: ans = A_DENY;                        /* failed, maybe installed */
           if :: !objdead[i] -> kid[i] = K_LIVE :: skip fi
        :: busy < BUSY_MAX -> busy++; ans = A_BUSY
        fi
    :: op == OP_DETACH -> ans = A_OK
    :: op == OP_ACTIVE ->
        if
        :: ans = A_OK; o_ack[i] = 1
        :: ans = A_DENY
        :: busy < BUSY_MAX -> busy++; ans = A_BUSY
        fi
    :: op == OP_REVOKE ->
        if
        :: ans = A_OK; if :: kid[i] == K_LIVE -> kid[i] = K_DEAD :: else -> skip fi
        :: busy < BUSY_MAX -> busy++; ans = A_BUSY
        fi
    :: op == OP_REMOVE ->
        if
        :: ans = A_OK; o_rm_ack[i] = 1
        :: busy < BUSY_MAX -> busy++; ans = A_BUSY
        fi
    :: op == OP_RETIRE ->
        if
        :: ans = A_OK; objdead[i] = 1; o_rt_ack[i] = 1;
           if :: kid[i] == K_LIVE -> kid[i] = K_DEAD :: else -> skip fi
        :: busy < BUSY_MAX -> busy++; ans = A_BUSY
        fi
    fi
}

#ifdef MUT_SEQ_IGNORED
#define SEQ_OK(a, b) true
#else
#define SEQ_OK(a, b) (a == b)
#endif

/* The core's reply event: match against the live table entry, or refuse
 * and delete every receipt (state unchanged). */
inline core_reply(i, ln, op, sq, lv)
{
    j = 255;
    if
    :: c_op[L(i, ln)] == op && SEQ_OK(c_sq[L(i, ln)], sq) -> j = i
    :: else -> skip
    fi;
#ifdef MUT_FIFO_MATCH
    if
    :: TTYD(op) && c_op[L(0, ln)] == op -> j = 0
    :: TTYD(op) && c_op[L(0, ln)] != op && c_op[L(NREQ - 1, ln)] == op -> j = NREQ - 1
    :: else -> skip
    fi;
#endif
    if
    :: j == 255 ->                              /* refused */
        c_rcv = c_rcv + ncap; c_del = c_del + ncap; ncap = 0
    :: else ->
        /* (L) only a reply to a live call is ever accepted */
        assert(j != i || lv);
        c_op[L(j, ln)] = 0; c_sq[L(j, ln)] = 0;
        handle(j, op, ans);              /* takes the expected receipt */
        c_rcv = c_rcv + ncap; c_del = c_del + ncap;  /* extras deleted */
        ncap = 0
    fi
}

inline deliver(i, ln, s)
{
    op = fl_op[F(i, ln, s)]; sq = fl_sq[F(i, ln, s)]; lv = fl_lv[F(i, ln, s)];
    fl_op[F(i, ln, s)] = 0; fl_sq[F(i, ln, s)] = 0; fl_lv[F(i, ln, s)] = 0;
    ncap = 0;
    peer_answer(i, op);
    if :: extra < EXTRA_MAX -> extra++; ncap++ :: skip fi;
    core_reply(i, ln, op, sq, lv);
    op = 0; sq = 0; lv = 0; ans = 0; j = 0
}

/* A peer never answers (its reply is lost); procd may have installed. */
inline silent(i, ln, s)
{
    if
    :: fl_op[F(i, ln, s)] == OP_INSTALL && !objdead[i] -> kid[i] = K_LIVE
    :: else -> skip
    fi;
    fl_op[F(i, ln, s)] = 0; fl_sq[F(i, ln, s)] = 0; fl_lv[F(i, ln, s)] = 0
}

/* Any reply in flight may be the next event (out of order, across
 * requests and routes); fk is its window place, i its request, ln its lane. */
#define PICK(k) :: fl_op[k] != 0 -> fk = k
#if NREQ > 1
#define PICK_ANY PICK(0) PICK(1) PICK(2) PICK(3) PICK(4) PICK(5) \
    PICK(6) PICK(7) PICK(8) PICK(9) PICK(10) PICK(11)
#else
#define PICK_ANY PICK(0) PICK(1) PICK(2) PICK(3) PICK(4) PICK(5)
#endif

/* The final assertions (g): at quiescence every capability is deleted
 * or transferred, no authority survives outside an approval, and every
 * request published exactly one decision. */
#define QUIET(k) \
    assert(r_st[k] == R_DONE && ndec[k] == 1 && g_st[k] == G_FREE); \
    assert(scope[k] != C_HELD && obj[k] != C_HELD && hnd[k] != C_HELD); \
    assert(kid[k] != K_LIVE)

proctype Peers()
{
    byte op, sq, ans, ncap, j, fk, i, ln, s;
    bit lv;
    do
    :: atomic {
        if PICK_ANY fi;
        i = fk / 6; ln = (fk / 2) % 3; s = fk % 2;
        if
        :: deliver(i, ln, s)
        :: sil < SIL_MAX -> sil++; silent(i, ln, s)
        fi;
        fk = 0; i = 0; ln = 0; s = 0 }
    :: ALL_FIN && NO_INFLIGHT -> break
    od;
    QUIET(0);
    QUIET(NREQ - 1);
    assert(c_held == 0 && c_rcv == c_xfr + c_del)
}

/* ---- the core's own steps: sends and the release/publication lane ------ */
inline publish(i)
{
    assert(scope[i] != C_HELD && obj[i] != C_HELD);
    assert(outcome[i] == O_APPROVED || (hnd[i] != C_HELD && g_st[i] == G_FREE));
    pub[i] = outcome[i]; ndec[i]++; r_st[i] = R_DONE
}

#define IDLE_P(i) (c_op[L(i, LP)] == 0 && ROOM(i, LP))
#define REL(i) (r_st[i] == R_RELEASE)
#define GRANT_QUIET(i) (outcome[i] == O_APPROVED || g_st[i] == G_FREE)

#ifdef MUT_RETIRE_WAITS
#define RT_AFTER(i) rm_done[i]
#else
#define RT_AFTER(i) true
#endif

/* The guards of the core's own steps for request i (each one atomic step;
 * the core picks any enabled one: the round-robin lanes are a subset). */
#define S_PROG(i)  (r_st[i] >= R_RESOLVE && r_st[i] <= R_ACTIVATE && \
    (r_st[i] != R_DETACH || !OBJ_GONE(i)) && IDLE_P(i))
#define S_RDET(i)  (REL(i) && !OBJ_GONE(i) && IDLE_P(i))
#define S_REND(i)  (REL(i) && OBJ_GONE(i) && outcome[i] != O_APPROVED && g_st[i] == G_LIVE)
#define S_RRET(i)  (REL(i) && OBJ_GONE(i) && GRANT_QUIET(i) && rtobj[i] && \
    c_op[L(i, LT)] == 0 && ROOM(i, LT))
#define S_RSCO(i)  (REL(i) && OBJ_GONE(i) && scope[i] == C_HELD)
#define S_PUB(i)   (REL(i) && OBJ_GONE(i) && GRANT_QUIET(i) && !rtobj[i] && \
    scope[i] != C_HELD && c_op[L(i, LT)] == 0)
#define S_REV(i)   (g_st[i] == G_REVOKE && IDLE_P(i))
#define S_RM(i)    (g_st[i] == G_SETTLE && rm_owed[i] && !rm_done[i] && \
    c_op[L(i, LM)] == 0 && ROOM(i, LM))
#define S_RT(i)    (g_st[i] == G_SETTLE && !rt_done[i] && RT_AFTER(i) && \
    c_op[L(i, LT)] == 0 && ROOM(i, LT))
#define CORE_EN(i) (S_PROG(i) || S_RDET(i) || S_REND(i) || S_RRET(i) || \
    S_RSCO(i) || S_PUB(i) || S_REV(i) || S_RM(i) || S_RT(i))

inline core_step(i)
{
    if
    :: S_PROG(i) ->
        if
        :: r_st[i] == R_RESOLVE -> op = OP_RESOLVE
        :: r_st[i] == R_POLICY -> op = OP_POLICY
        :: r_st[i] == R_PROMPT -> op = OP_PROMPT
        :: r_st[i] == R_INSTALL -> op = OP_INSTALL
        :: r_st[i] == R_DETACH -> op = OP_DETACH
        :: r_st[i] == R_ACTIVATE -> op = OP_ACTIVE
        fi;
        if :: obj[i] == C_HELD && op == OP_DETACH -> cap_moved(obj[i]) :: else -> skip fi;
        send(i, LP, op)
    :: S_RDET(i) ->                  /* the request's own copy goes back first */
        if :: obj[i] == C_HELD -> cap_moved(obj[i]) :: else -> skip fi;
        send(i, LP, OP_DETACH)
    :: S_REND(i) -> g_st[i] = G_REVOKE  /* unpublished grant: after DETACH */
    :: S_RRET(i) -> send(i, LT, OP_RETIRE) /* a maybe-installed object */
    :: S_RSCO(i) -> cap_deleted(scope[i])
    :: S_PUB(i) -> publish(i)
    :: S_REV(i) -> send(i, LP, OP_REVOKE)
    :: S_RM(i) -> send(i, LM, OP_REMOVE)   /* again, after BUSY or deadline */
    :: S_RT(i) -> send(i, LT, OP_RETIRE)   /* again, never behind REMOVE */
    fi
}

proctype Core()
{
    byte i, op;
    do
    :: atomic {
        if
        :: CORE_EN(0) -> i = 0
        :: NREQ > 1 && CORE_EN(NREQ - 1) -> i = NREQ - 1
        fi;
        core_step(i);
        i = 0; op = 0 }
    :: ALL_FIN -> break
    od
}

/* ---- environment: CANCEL/EXPIRE/CONSUME, deadlines, the job end -------- */
inline on_stop(i)
{
    if
    :: r_st[i] >= R_RESOLVE && r_st[i] <= R_ACTIVATE ->
        if :: c_op[L(i, LP)] == OP_PROMPT -> o_cps[i] = 1 :: else -> skip fi;
        terminate(i, O_CANCELLED)
    :: r_st[i] == R_RELEASE && outcome[i] == O_APPROVED -> outcome[i] = O_CANCELLED
    :: r_st[i] == R_DONE && g_st[i] == G_LIVE -> g_st[i] = G_REVOKE
    :: else -> skip                              /* refused */
    fi
}

/* A deadline ends a live call. Resolution, policy, install and ACTIVE
 * timeouts end the request DENIED; an unanswered prompt ends DENIED (and
 * is withdrawn); cleanup calls are only sent again. Enabled from the DL
 * budget while the reply is still in flight (it will arrive late), and
 * always when the peer is silent. */
inline on_deadline(i, ln)
{
    if
    :: (c_op[L(i, ln)] == OP_RESOLVE || c_op[L(i, ln)] == OP_POLICY ||
        c_op[L(i, ln)] == OP_INSTALL || c_op[L(i, ln)] == OP_ACTIVE ||
        c_op[L(i, ln)] == OP_PROMPT) &&
       r_st[i] >= R_RESOLVE && r_st[i] <= R_ACTIVATE -> terminate(i, O_DENIED)
    :: else -> end_call(i, ln)   /* cleanup call: sent again */
    fi
}

#define DL_EN(k) (c_op[k] != 0 && (dl < DL_MAX || !INFLIGHT_LIVE(k / 3, k % 3)))
#define DPICK(k) :: DL_EN(k) -> dk = k
#if NREQ > 1
#define DPICK_ANY DPICK(0) DPICK(1) DPICK(2) DPICK(3) DPICK(4) DPICK(5)
#else
#define DPICK_ANY DPICK(0) DPICK(1) DPICK(2)
#endif

proctype Env()
{
    bit stopped[NREQ];
    bit jobend;
    byte k, dk, i, ln;
    do
    :: atomic { !stopped[0] -> stopped[0] = 1; on_stop(0) }
#if NREQ > 1
    :: atomic { !stopped[1] -> stopped[1] = 1; on_stop(1) }
#endif
    :: atomic {                                  /* a deadline */
        if DPICK_ANY fi;
        i = dk / 3; ln = dk % 3;
        if :: INFLIGHT_LIVE(i, ln) -> dl++ :: else -> skip fi;
        on_deadline(i, ln);
        dk = 0; i = 0; ln = 0 }
    :: atomic { !jobend && ALL_DONE ->          /* every live grant expires */
        jobend = 1;
        k = 0;
        do
        :: k < NREQ -> if :: g_st[k] == G_LIVE -> g_st[k] = G_REVOKE :: else -> skip fi; k++
        :: else -> k = 0; break
        od }
    :: jobend && ALL_FIN -> break
    od
}

/* ---- safety invariants, checked after every step ----------------------- */
#define P_A(i) (pub[i] != O_APPROVED || o_ack[i])
#define P_B(i) ((pub[i] == O_NONE || (scope[i] != C_HELD && obj[i] != C_HELD)) && \
    (pub[i] == O_NONE || pub[i] == O_APPROVED || \
     (hnd[i] != C_HELD && g_st[i] == G_FREE && !rtobj[i])))
#define P_C(i) (pub[i] == O_NONE || pub[i] == O_APPROVED || kid[i] != K_LIVE)
#define P_D(i) (pub[i] != O_NOT_FOUND || o_nf[i])
#define P_E(i) ((!o_rm_sent[i] || (o_revoked[i] && o_as[i])) && \
    (!o_rt_sent[i] || (o_revoked[i] && OBJ_GONE(i))) && \
    (!o_gen[i] || (o_revoked[i] && (o_rm_ack[i] || !o_as[i]) && o_rt_ack[i])) && \
    (g_st[i] != G_SETTLE || o_rt_sent[i]))
#define P_W(i) (!o_cps[i] || o_wd[i])
#define P_G (c_rcv == c_held + c_xfr + c_del)
#define INV(i) (P_A(i) && P_B(i) && P_C(i) && P_D(i) && P_E(i) && P_W(i))
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
        assert(P_W(0)); assert(P_W(J))
    }
}

init
{
    byte n;
    atomic {
        do
        :: n < NREQ ->
#ifdef PAIR
            excp[n] = n;                         /* routine beside exceptional */
#else
            if :: excp[n] = 0 :: excp[n] = 1 fi;
#endif
            r_st[n] = R_RESOLVE;
            cap_receive(scope[n]);               /* the committed scope */
            n++
        :: else -> break
        od;
        run Core(); run Peers(); run Env()
    }
}

/* (h) every request publishes one decision and every grant retires. */
#ifndef NOLTL
ltl live { <> (ALL_FIN && NO_INFLIGHT) }
#endif
