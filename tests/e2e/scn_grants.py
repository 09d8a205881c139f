"""Scenario many-grants: a stack holds 1,000 live grants at once, each
with its vfsd object and procd install live (issue 23 item 3), and the one
past vfsd's and procd's configured tables is refused with backpressure,
not dropped.

Every live install-mode grant keeps its procd revocation handle in one of
powerboxd's transient slots. powerboxd's transient range may hold 4,032
slots (PBX_BOOTSTRAP_TRANSIENT_RANGE_MAX: slots 64 to 4095, the soft
descriptor limit raised to 4096 at startup), so the pools below, not the
range, bound the stack: the PBX1 pools and transient slots of `pbx up`'s
geometry (tools/pbx/pbx_up_stack.c: 1,152 records per pool, 1,472
transient slots), so vfsd's and procd's tables are met first.

The stack is its own (standalone): vfsd runs with --objects 1000 and procd
with --installs 1000, and 32 staged processes are shared by launchd and
procd. 32 launched shell jobs (600:1 and up, each bound to its own staged
process) ask, one request at a time, for job-lifetime install-mode
grants, 32 each (what launchd tracks for one job connection) and 8 in the
last, each into its own slot: every grant's vfsd object is then live
(procd holds the installed copy) and so is its procd revocation handle.
The counts are read, not timed: procd's query socket lists exactly 1,000
installs and vfsd's log 1,000 objects found and none hung up or retired.
The 1,001st request is refused, not dropped: vfsd answers its RESOLVE BUSY
("table full; retry later" in its log) and powerboxd ends the request
with a definite answer (outcome=denied reason=resolve), the 1,000 grants
are all still installed, and once the last job ends (its 8 grants
revoked) the same request from a new job is approved.
"""
import os
import shlex

from e2e_harness import Stack, fail, read_rows, slow_deadlines, wait_for
from e2e_jobs import Shell

# The live grants the scenario holds, and vfsd's and procd's table sizes.
LIMIT = 1000
# Live grants launchd tracks for one job connection
# (PBX_PEER_TRACK_GRANTS_MAX).
PER_JOB = 32
JOBS = (LIMIT + PER_JOB - 1) // PER_JOB
# powerboxd's pools and transient slots as `pbx up` sizes them
# (tools/pbx/pbx_up_stack.c: a table of 1,024 live grants plus the
# default geometry's 128 records and 448 slots), above the peers' tables,
# so that vfsd's and procd's limits are the ones met.
GEOMETRY = ("--grants", "1152", "--requests", "1152", "--decisions", "1152",
            "--policies", "1152", "--resolutions", "1152", "--notifications",
            "1152", "--transient-slots", "1472")
# powerboxd's deadlines for a peer's reply and a resolution through a
# scope (pbx geometry make's defaults: 5 s for vfsd, ttyd and procd, 2 s
# for the scope), SLOW times longer only under PBX_E2E_SLOW (the harness's
# slow_deadlines; no words without the variable): the scenario tests none
# of them, and under valgrind (make memcheck) every peer answers many
# times later. (Its failure there at request 835, "outcome=denied
# reason=peer-timeout", was valgrind's log descriptor inside powerboxd's
# transient range, not a late peer: docs/TESTING.md, "Memory checks".)
GEOMETRY += tuple(slow_deadlines("vfsd", "ttyd", "procd", "scope"))
TABLES = {"vfsd": ["--objects", str(LIMIT)],
          "procd": ["--installs", str(LIMIT)], "stages": JOBS}
# The first slot each job installs into (one slot per grant).
SLOT0 = 100


def hold_line(st, count, err):
    """A shell line asking for count job-lifetime install grants, one per
    slot, stopping at the first refusal; it prints held=N."""
    argv = st.client_argv("--lifetime", "job", "--mode", "install",
                          "--slot", "SLOT")
    line = shlex.join(argv).replace("SLOT", "$((%d + i))" % SLOT0)
    return (f"i=0; while [ $i -lt {count} ]; do {line} >/dev/null "
            f"2>{shlex.quote(err)} || break; i=$((i + 1)); done; "
            'echo "held=$i"')


def counts(st):
    """(procd's installs, vfsd's objects found, hung up, retired)."""
    rows = read_rows(st.installs, seconds=30)
    with open(os.path.join(st.work, "logs", "vfsd.log"), "rb") as f:
        log = f.read().decode("utf-8", "replace")
    return (len(rows), log.count("RESOLVE found"), log.count("HANG-UP"),
            log.count("RETIRE object"))


def many_grants(bin_dir, work):
    """See the module's text."""
    st = Stack(bin_dir, work, geometry=GEOMETRY, tables=TABLES)
    jobs = []
    try:
        # One job at a time, one request at a time: each BEGIN reserves a
        # grant record, so requests in flight beside 1,000 live grants
        # could meet powerboxd's pool (1,152) before vfsd's table.
        for j in range(JOBS):
            job = Shell(st, f"{600 + j}:1")
            jobs.append(job)
            if not job.target():
                fail(f"many-grants: job {600 + j}:1 got no staged process")
            want = min(PER_JOB, LIMIT - j * PER_JOB)
            err = os.path.join(work, f"job{j}.err")
            _, out = job.sh(hold_line(st, want, err), seconds=900)
            if out.get("held") != str(want):
                with open(err, encoding="utf-8", errors="replace") as f:
                    why = f.read()[-300:]
                fail(f"many-grants: a job held {out.get('held')} of {want} "
                     f"grants: {why}")
        # vfsd logs each RESOLVE line just after its reply, so the last
        # one may follow its request's approval: wait (bounded) for all.
        wait_for(lambda: counts(st)[1] >= LIMIT,
                 f"many-grants: vfsd logged {counts(st)[1]} objects found, "
                 f"not {LIMIT}", 10.0)
        got = counts(st)
        print(f"many-grants: procd installs={got[0]} vfsd found={got[1]} "
              f"hung-up={got[2]} retired={got[3]}")
        if got != (LIMIT, LIMIT, 0, 0):
            fail(f"many-grants: {LIMIT} live grants not all held: {got}")
        # One more than the tables hold, in the last job (it holds 8, well
        # under launchd's 32): refused, and nothing held is lost.
        last = jobs[-1]
        held = LIMIT - (JOBS - 1) * PER_JOB
        err = os.path.join(work, "over.err")
        rc, over = last.request("--lifetime", "job", "--mode", "install",
                             "--slot", str(SLOT0 + held), stderr=err)
        with open(err, encoding="utf-8", errors="replace") as f:
            why = " ".join(f.read().split())
        print(f"many-grants: request {LIMIT + 1}: exit {rc}: {over} {why[:200]}")
        with open(os.path.join(work, "logs", "vfsd.log"), "rb") as f:
            full = f.read().count(b"RESOLVE: peer: table full; retry later")
        if (rc != 3 or over.get("outcome") != "denied" or
                over.get("reason") != "resolve" or full != 1):
            fail(f"many-grants: request {LIMIT + 1} not refused by vfsd's "
                 f"full table (exit {rc}, {over}, vfsd 'table full' lines "
                 f"{full})")
        got = counts(st)
        if got[0] != LIMIT or got[2] != 0:
            fail(f"many-grants: the refusal dropped a held grant: {got}")
        # Backpressure, not a wedge: the last job's end revokes its grants
        # and the same request, from another job, is approved.
        last.close()
        jobs.pop()
        again = Shell(st, f"{600 + JOBS}:1")
        jobs.append(again)
        rc, out = again.request("--lifetime", "job", "--mode", "install",
                                "--slot", str(SLOT0), stderr=err)
        if rc != 0 or out.get("outcome") != "approved":
            fail(f"many-grants: after the last job ended the request was "
                 f"not approved (exit {rc}): {out}")
        print(f"many-grants: {LIMIT} live grants held; the next refused "
              "with backpressure; approved once room was made")
    finally:
        for job in jobs:
            job.close()
        st.stop()
