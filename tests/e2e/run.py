#!/usr/bin/env python3
"""powerboxd with the reference peers: `make run` and the peer scenarios.

Usage: run.py BIN_DIR WORK_DIR [SCENARIO... | all]

Plays the supervisor of docs/HOST.md: writes a PBX1 record with
`pbx geometry make`, seals it into a memfd, starts pbx-vfsd, pbx-ttyd,
pbx-procd and pbx-launchd on socketpairs and waits for each readiness
line, execs the freestanding powerboxd with fds 3..10 exactly as
capabi/pbx_capabi.h lays them out (9 left empty; 10 is powerboxd's end of
launchd's broker connection, whose other end pbx-launchd holds), waits
for its typed readiness report, then runs each scenario against that one
powerboxd. Without a scenario it runs `lifecycle` (what `make run` does).

Scenarios: tests/e2e/scn_list.py lists them, each with what it shows
(each exits the run with 1 on the first failure); their code is in
the scn_*.py modules next to this file, the harness (Stack, Launched
and its kinds, the tmux panes, Up) in e2e_harness.py, e2e_jobs.py and
e2e_up.py. This file keeps the SCENARIOS table and main().

The scenarios marked "own powerboxd" or "own stack" run on a stack of
their own, started with their own `pbx geometry make` arguments and
`pbx-launchd serve` options in WORK_DIR/<scenario>; the others share one
stack in WORK_DIR. `run.py BIN_DIR WORK_DIR all` runs every scenario in
the order of the SCENARIOS table (what `make check` does). Standalone
scenarios (geometry STANDALONE in the table) are called with BIN_DIR and
WORK_DIR/<scenario> and start what they need themselves. Every stack
runs in a process group of its own; when a scenario fails (fail(), an
exception, or SIGTERM, SIGHUP or SIGINT of run.py), the stack's group,
every job launchd launched and every process whose environment carries
the stack's mark (PBX_E2E_STACK, launchd's and so its jobs', even once
launchd is gone) are killed. Scenarios that prompt
get a tmux pane (a window of the run's own tmux server) per stack.

Peer logs go to WORK_DIR/[<scenario>/]logs/<peer>.log and are printed at
the end (a long log only its head and tail).
"""
import os
import signal
import sys
import time

# cleaned, last_object (e2e_harness) and Shell (e2e_jobs) are not used
# here: bench/*.py import run and reach them as run.cleaned, ...
from e2e_harness import (cleaned, END_SIGNALS, fail, last_object, Stack,
                         vfsd_mounts_under)
from e2e_harness import slow_call_ms, slow_deadlines
from e2e_jobs import job_program, Panes, Shell
from scn_lifecycle import (direct, expire, foreign, hangup, lie_scope,
                           lifecycle, runtime_reply, scope_hoard)
from scn_prompt import prompt, prompt_cancel, prompt_pending, prompt_timeout
from scn_stall import (cancel_lost_reply, invocation_expiry, not_found,
                       ttyd_stalled, unwanted_receipts, user_deny,
                       vfsd_stalled)
from scn_backpressure import (backpressure, relay_timeout,
                              slow_prompt_isolation, wake_backpressure)
from scn_flood import idle_flood, many_clients, quota
from scn_up import (grants_cli, restart_during_restart, up, up_backoff,
                    up_restart)
from scn_admission import fail_on_purpose, job_spoof, query_admission
from scn_any import any_cat, any_escape, any_keys, any_revoke
from scn_ends import any_consume, any_expire
from scn_sandbox import (any_spoof, pbx_open, pbx_run_grant, sandbox,
                         sandbox_dynamic, sandbox_walls)
from scn_restart import (restart_procd, restart_ttyd, restart_vfsd,
                         vfsd_restart_pending_prompt)
from scn_fairness import (fair_program, prompt_fairness, scope_steal,
                          steal_program)
from scn_restart_ids import (ids_across_restarts, restart_launchd,
                             restart_powerboxd)
from scn_chaos import chaos
from scn_demo import (make_run, make_run_slow_start, policy_rules,
                      policy_terminal, stop_status)
from scn_hijack import route_hijack
from scn_sandbox_meta import (hold_release, sandbox_ipc, sandbox_metadata,
                              sandbox_setattr)
from scn_any_limits import (any_ask_flood, any_flood, any_mount, any_nofuse,
                            any_python, any_userns)
from scn_i21 import any_broker_lines, any_installer_lost
from scn_grants import many_grants


# The scenarios `all` leaves out.
HIDDEN = ("fail-on-purpose",)
# The geometry of a standalone scenario: it is called with (BIN_DIR, its
# own work directory) and starts what it needs itself (no Stack).
STANDALONE = "standalone"


SCENARIOS = {
    "lifecycle": (lifecycle, False, None, None),
    "expire": (expire, False, None, None),
    "runtime-reply": (runtime_reply, False, None, None),
    "direct": (direct, False, None, None),
    "hangup": (hangup, False, None, None),
    "lie-scope": (lie_scope, False, None, None),
    "foreign": (foreign, False, None, None),
    "scope-hoard": (scope_hoard, False, None, None),
    # A long scope deadline: powerboxd and vfsd are each stopped a moment.
    "scope-steal": (scope_steal, True, ["--deadline-scope-ms", "30000"],
                    None),
    "prompt": (prompt, True, None, None),
    "prompt-pending": (prompt_pending, True, None, None),
    "prompt-cancel": (prompt_cancel, True, None, None),
    "prompt-timeout": (prompt_timeout, True,
                       ["--deadline-prompt-ms", "3000"], None),
    "ttyd-stalled": (ttyd_stalled, False, ["--deadline-ttyd-ms", "1000"],
                     None),
    "vfsd-stalled": (vfsd_stalled, False,
                     ["--deadline-vfsd-ms", "1000",
                      "--deadline-scope-ms", "1000"], None),
    "not-found": (not_found, False, None, None),
    "user-deny": (user_deny, True, None, None),
    "cancel-lost-reply": (cancel_lost_reply, False, None, None),
    "invocation-expiry": (invocation_expiry, False, None, None),
    "unwanted-receipts": (unwanted_receipts, False, None, None),
    "backpressure": (backpressure, False,
                     ["--requests", "2", "--grants", "2"], None),
    "wake-backpressure": (wake_backpressure, False, None, None),
    "quota": (quota, False, None, None),
    "job-spoof": (job_spoof, False, None, None),
    "query-admission": (query_admission, False, STANDALONE, None),
    "slow-prompt-isolation": (slow_prompt_isolation, True, [],
                              ["--call-ms", "1000"]),
    # Pools for 64 requests at once, with room for the grants whose
    # cleanup (REMOVE, RETIRE) is still under way when their clients
    # begin the next: each open request holds a request, prompt, policy,
    # resolution, grant, decision and notification record and three
    # transient slots.
    "relay-timeout": (relay_timeout, False, [], ["--call-ms", "300"]),
    # Under PBX_E2E_SLOW (make memcheck) only, powerboxd's peer, scope
    # and OPEN deadlines and launchd's --call-ms grow SLOW times too
    # (slow_deadlines, slow_call_ms): the scenario tests none of them.
    "many-clients": (many_clients, False,
                     ["--requests", "256", "--grants", "512", "--prompts",
                      "256", "--policies", "256", "--decisions", "256",
                      "--resolutions", "256", "--notifications", "256",
                      "--transient-slots", "640", "--selector-bytes",
                      "131072", "--calls", "256"] +
                     slow_deadlines("vfsd", "ttyd", "procd", "scope",
                                    "open"), slow_call_ms() or None),
    # The OPEN deadline four seconds short of the idle time: the honest
    # job, refused BUSY until the half-begun requests end, must then
    # complete within the idle timeout of the flood. Both are long enough
    # that setting up the half-begun requests and the flood fits inside
    # them on a machine loaded by a parallel make check (at 2 and 3 s the
    # setup alone outran the OPEN deadline at load average 11).
    "idle-flood": (idle_flood, False,
                   ["--requests", "16", "--deadline-open-ms", "8000",
                    "--deadline-idle-ms", "12000"],
                   # The flood comes from this one process: launchd's
                   # per-process bound (query-admission) is lifted here.
                   ["--idle-ms", "12000", "--max-conns", "32",
                    "--max-per-pid", "512"]),
    # Hidden: fails on purpose (tests/e2e/orphans.py).
    "fail-on-purpose": (fail_on_purpose, False, [], None),
    # Standalone: they start `pbx up` themselves, no Stack.
    "up": (up, False, STANDALONE, None),
    "up-restart": (up_restart, False, STANDALONE, None),
    "up-backoff": (up_backoff, False, STANDALONE, None),
    "restart-during-restart": (restart_during_restart, False, STANDALONE,
                               None),
    "grants-cli": (grants_cli, False, STANDALONE, None),
    "pbx-open": (pbx_open, False, None, None),
    "sandbox": (sandbox, True, None, None),
    "any-spoof": (any_spoof, True, None, None),
    "pbx-run-grant": (pbx_run_grant, False, None, None),
    "sandbox-walls": (sandbox_walls, False, None, None),
    "sandbox-dynamic": (sandbox_dynamic, False, None, None),
    "any-cat": (any_cat, True, None, None),
    "any-keys": (any_keys, True, None, None),
    "any-escape": (any_escape, True, None, None),
    "any-revoke": (any_revoke, True, None, None),
    "any-expire": (any_expire, True, None, None),
    "any-consume": (any_consume, True, None, None),
    "sandbox-metadata": (sandbox_metadata, True, None, None),
    "hold-release": (hold_release, True, None, None),
    "sandbox-setattr": (sandbox_setattr, False, None, None),
    "sandbox-ipc": (sandbox_ipc, False, None, None),
    "any-flood": (any_flood, True, None, None),
    "any-python": (any_python, False, STANDALONE, None),
    "any-userns": (any_userns, True, None, None),
    "any-mount": (any_mount, False, None, None),
    "any-nofuse": (any_nofuse, False, STANDALONE, None),
    "any-ask-flood": (any_ask_flood, True, None, None),
    "any-broker-lines": (any_broker_lines, True, None, None),
    "any-installer-lost": (any_installer_lost, False, STANDALONE, None),
    "restart-vfsd": (restart_vfsd, False, STANDALONE, None),
    "restart-ttyd": (restart_ttyd, False, STANDALONE, None),
    "restart-procd": (restart_procd, False, STANDALONE, None),
    "restart-launchd": (restart_launchd, False, STANDALONE, None),
    "restart-powerboxd": (restart_powerboxd, False, STANDALONE, None),
    "ids-across-restarts": (ids_across_restarts, False, STANDALONE, None),
    "vfsd-restart-pending-prompt": (vfsd_restart_pending_prompt, False,
                                    STANDALONE, None),
    # pbx up's default geometry (the stack's --transient-slots 64 put
    # back to tools/pbx/pbx_geometry.c's 448) and launchd's default
    # --max-jobs (128, room for the 67 jobs).
    # Under PBX_E2E_SLOW only, its peer, scope and prompt deadlines and
    # launchd's --call-ms grow SLOW times (it tests none of them): under
    # valgrind the first exceptional request was denied peer-timeout.
    "prompt-fairness": (prompt_fairness, True,
                        ["--transient-slots", "448"] +
                        slow_deadlines("vfsd", "ttyd", "procd", "scope",
                                       "prompt"), slow_call_ms()),
    "chaos": (chaos, False, STANDALONE, None),
    "route-hijack": (route_hijack, False, STANDALONE, None),
    "make-run": (make_run, False, STANDALONE, None),
    "make-run-slow-start": (make_run_slow_start, False, STANDALONE, None),
    "stop-status": (stop_status, False, STANDALONE, None),
    "policy-rules": (policy_rules, False, STANDALONE, None),
    "policy-terminal": (policy_terminal, False, STANDALONE, None),
    # Standalone: 1,000 live grants with vfsd's and procd's tables sized
    # by their options (tests/e2e/scn_grants.py).
    "many-grants": (many_grants, False, STANDALONE, None),
}


def on_term(signum, _frame):
    """SIGTERM or SIGHUP (make interrupted): ends the run through the same
    cleanup as a failure. A second signal is ignored, so that it cannot cut
    that cleanup short."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    raise SystemExit(f"run: FAIL: signal {signum}")


def main():
    if sys.argv[1:2] == ["--program"]:
        return job_program()
    if sys.argv[1:2] == ["--fair-program"]:
        return fair_program()
    if sys.argv[1:2] == ["--steal-program"]:
        return steal_program()
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    names = sys.argv[3:] or ["lifecycle"]
    if names == ["all"]:
        names = [n for n in SCENARIOS if n not in HIDDEN]
    for n in names:
        if n not in SCENARIOS:
            fail(f"unknown scenario {n}")
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_term)
    # Every launchd started here recomputes its indexes after each loop
    # pass and stops on a drift (launchd_index.c; a test aid only).
    os.environ.setdefault("PBX_LAUNCHD_CHECK_INDEX", "1")
    # Every procd likewise recomputes its install indexes and hung list
    # after each round and stops on a drift (pbx_peer_proc_index.c).
    os.environ.setdefault("PBX_PROCD_CHECK_INDEX", "1")
    os.makedirs(work, exist_ok=True)
    panes, shared = Panes(work), None
    own_stack = lambda n: SCENARIOS[n][2] is not None or \
        SCENARIOS[n][3] is not None
    shared_prompts = any(SCENARIOS[n][1] and not own_stack(n) for n in names)
    t_all = time.monotonic()
    try:
        for n in names:
            func, prompts, geometry, launchd = SCENARIOS[n]
            print(f"run: --- {n} ---")
            t0 = time.monotonic()
            if geometry == STANDALONE:
                func(bin_dir, os.path.join(work, n))
            elif not own_stack(n):
                if shared is None:
                    pane, tty = panes.new() if shared_prompts else \
                        (None, "/dev/null")
                    shared = Stack(bin_dir, work, tty, pane)
                func(shared)
            else:
                pane, tty = panes.new() if prompts else (None, "/dev/null")
                own = Stack(bin_dir, os.path.join(work, n), tty, pane,
                            geometry or [], launchd or [])
                try:
                    func(own)
                finally:
                    own.stop()
            print(f"run: {n} passed in {time.monotonic() - t0:.1f} s")
        print(f"run: ok: {' '.join(names)} "
              f"({time.monotonic() - t_all:.1f} s)")
    finally:
        signal.pthread_sigmask(signal.SIG_BLOCK, END_SIGNALS)
        try:
            if shared is not None:
                shared.stop()
        finally:
            panes.stop()
            signal.pthread_sigmask(signal.SIG_UNBLOCK, END_SIGNALS)
    # Every stack stopped: no FUSE mount of a vfsd may be left under the
    # work directory (a dead one would fail every later stat there).
    left = vfsd_mounts_under(work)
    if left:
        fail(f"pbx-vfsd mount(s) left behind: {' '.join(left)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
