#!/usr/bin/env python3
"""make memcheck: the end-to-end scenarios under valgrind memcheck
(issue 22 item 5, docs/TESTING.md "Memory checks").

Usage: memcheck.py BIN_DIR WORK_DIR SCENARIO...
       memcheck.py --timed BIN_DIR WORK_DIR SCENARIO...   (see TIMED)

Makes WORK_DIR/bin-TAG, a copy of BIN_DIR's layout in which every program
run.py, launchd or pbx starts by path is a two-line bash wrapper that
execs it under

    valgrind --tool=memcheck --leak-check=full --error-exitcode=97
             --errors-for-leak-kinds=definite,indirect --log-fd=4100
             4100>WORK_DIR/logs/TAG/NAME.PID.log

(no suppression file, no --trace-children): the reference peers, pbx,
pbx-client, pbx-broker and the freestanding powerboxd image. The exec
keeps the pid, so every pid the stack checks (vfsd's route for
powerboxd's exact pid, ttyd's and procd's --jobs-below) is still right.
The statically linked programs launchd runs sandboxed (pbx-stage,
pbx-demo, the pbx-test-* programs) are linked as they are: memcheck
cannot replace a static program's allocator, and a Landlock or seccomp
wall would also fence valgrind itself.

The scenarios that run a program sandboxed run some programs natively
(NATIVE: pbx-launchd; pbx-broker where the job's opens are brokered;
pbx-vfsd where vfsd creates files; the reasons are beside NATIVE), so
the scenarios are grouped by their native set, each group in a bin
directory of its own, WORK_DIR/bin-TAG ("all": every program wrapped;
"n-lb": launchd and the broker native), its logs in WORK_DIR/logs/TAG.

For each group runs tests/e2e/run.py WORK_DIR/bin-TAG WORK_DIR/run-TAG
(WORK_DIR/run for "all") SCENARIO... (with PBX_E2E_SLOW=SLOW in its
environment: the harness's waits and the scenarios' timed bounds grow by
that factor) and reads every log: a run fails when run.py fails, when
any log reports an error (ERROR SUMMARY above zero: invalid accesses,
uninitialised values, bad frees, definitely or indirectly lost blocks),
or when no log at all was written for a wrapped program the scenarios
must start (the five stack programs in each group but for its native
ones; pbx and pbx-client over the whole run). A log without
a summary (a process the scenario killed with SIGKILL) is counted and
listed; the errors valgrind reported in it before the kill (each marked
by --error-markers) fail the run as any other, but it has no leak
check: valgrind cannot report leaks for a process it never saw end. Prints one line per program (processes, errors, leaks) and a total.
"""

import os
import re
import shutil
import subprocess
import sys
import time

# The dynamically linked programs the scenarios start by path.
WRAPPED = ("pbx", "pbx-vfsd", "pbx-ttyd", "pbx-procd", "pbx-launchd",
           "pbx-client", "pbx-broker", "powerboxd")
# At least these must have run under valgrind over the whole run.
REQUIRED = ("pbx", "pbx-vfsd", "pbx-ttyd", "pbx-procd", "pbx-launchd",
            "pbx-client", "powerboxd")
# And these in each group of scenarios (every stack starts them), but for
# the group's NATIVE programs.
STACK = ("pbx-vfsd", "pbx-ttyd", "pbx-procd", "pbx-launchd", "powerboxd")
VALGRIND = ["valgrind", "--tool=memcheck", "--leak-check=full",
            "--error-exitcode=97", "--errors-for-leak-kinds=definite,indirect",
            "--show-leak-kinds=definite,indirect",
            "--error-markers=PBX-MEMCHECK-ERROR,PBX-MEMCHECK-END"]
# Each error valgrind reports is preceded by this line (--error-markers),
# so that the errors of a process killed before its ERROR SUMMARY (a
# scenario's or the C harness's SIGKILL) are counted too.
ERROR_MARK = "PBX-MEMCHECK-ERROR"
# valgrind's log: a descriptor the wrapper opens far above the startup
# slots. --log-file would open it at the lowest free descriptor, and
# powerboxd refuses to start when its slot 9, which must be empty, holds
# one.
LOG_FD = 900
# The scenario wrappers' (make_bin's) log descriptor: above every slot
# powerboxd may place a descriptor in (its transient range ends at slot
# 4095 at most). At 900 it lay inside many-grants' range (slots 64 to
# 1551): the 835th live grant's slot reservation found 900 taken, and the
# request ended "outcome=denied reason=peer-timeout" (natively too, with
# only a descriptor opened at 900). The wrappers start at the hard limit,
# so it is open; memcheck_c.py's wrappers, which keep the limit the test
# sets, use LOG_FD.
SCENARIO_LOG_FD = 4100
# The harness's waits and timed bounds grow by this factor
# (tests/e2e/e2e_harness.py's SLOW): valgrind runs each program many
# times slower.
SLOW = 10
# The scenarios that run a program sandboxed (launchd confines it with
# Landlock and seccomp), each with the programs it runs natively, as they
# are, instead of under valgrind: valgrind 3.19 answers ENOSYS to the
# landlock_* system calls, so pbx-launchd under valgrind finds no Landlock
# and refuses, as it must, to run a program unconfined. pbx-launchd is
# copied into that bin directory (not linked): it starts pbx-broker from
# the folder of its own /proc/self/exe, which must be the one holding
# the wrappers, so the broker still runs under valgrind. Every other
# scenario runs every program of WRAPPED under valgrind (launchd too).
SANDBOXED = ("pbx-run-grant", "sandbox", "any-spoof", "sandbox-walls",
             "sandbox-dynamic", "any-cat", "any-keys", "any-escape",
             "any-revoke", "any-expire", "sandbox-metadata",
             "hold-release", "sandbox-setattr", "sandbox-ipc", "any-userns",
             "any-mount", "any-python", "any-nofuse", "make-run",
             "make-run-slow-start", "route-hijack", "any-broker-lines",
             "any-installer-lost", "any-flood", "any-ask-flood")
# Of those, the scenarios whose job opens files through pbx-broker
# (brokered opens: pbx run --sandbox or --any): the broker runs natively
# too, because it resolves every open with openat2 (system call 437),
# which valgrind 3.19 answers ENOSYS, so each brokered open would fail
# ("pbx-broker: ...: Function not implemented (refused)", seen in sandbox
# and any-cat).
BROKERED = ("sandbox", "any-cat", "any-keys", "any-escape", "any-revoke",
            "any-expire", "sandbox-metadata", "hold-release",
            "sandbox-setattr", "sandbox-ipc", "any-userns", "any-mount",
            "any-python", "any-nofuse", "make-run", "make-run-slow-start",
            "route-hijack", "any-broker-lines", "any-installer-lost",
            "any-flood", "any-ask-flood")
NATIVE = {name: ("pbx-launchd", "pbx-broker") if name in BROKERED else
          ("pbx-launchd",) for name in SANDBOXED}
# any-python has vfsd create files: vfsd_create_lookup (peers/vfsd/
# vfsd_create.c) looks the new name up with openat2 and has no fallback
# (RESOLVE's walk in vfsd_resolve.c has one), so under valgrind 3.19
# every create is denied ("op=create object=docs/py-c.txt ...
# outcome=denied reason=resolve"); vfsd runs natively there too.
NATIVE["any-python"] = ("pbx-launchd", "pbx-broker", "pbx-vfsd")
# make memcheck-timed (memcheck.py --timed): scenarios that measure an
# in-product deadline or a time bound which valgrind's slowdown makes the
# programs miss. Each runs alone (its own run.py), gated on valgrind's
# verdict as every other (0 errors, 0 bytes definitely or indirectly
# lost, its stack programs under valgrind); its own result is reported,
# not gated, only when it passed or its one failure is the timing check
# named here (a regex on run.py's "run: FAIL:" line, and a test on the
# figures it captures that the bound was missed late, never early). Any
# other failure fails the run. The scenario's checks after a missed
# timing check did not run under memcheck (run.py stops at the first).
TIMED = {
    # vfsd-stalled: with vfsd stopped, a DECISION of a request decided
    # before must be served "at once" (within 1 s); its outcome and reason
    # are in the message (rc is not: the message is accepted only with
    # denied and policy, the right answer, so only rc or the time missed).
    # vfsd-stalled: or, when the DECISION came in time, its RETIRE retried
    # while vfsd is stopped: excused only when the stop had less than
    # vfsd's deadline left after the revocation (valgrind spent the rest
    # on the steps before), so no retry was due yet.
    "vfsd-stalled": (
        r"vfsd-stalled: (DECISION of decided request [\d.]+: \{.*"
        r"'outcome': 'denied', 'reason': 'policy'|RETIRE of object \d+ "
        r"sent 1 time\(s\) in 30 s \((?P<left>-?[\d.]+) s of the stop "
        r"left after the revocation, vfsd's deadline (?P<dl>[\d.]+) s\))",
        lambda m: m["left"] is None or float(m["left"]) < float(m["dl"])),
    "ttyd-stalled": (
        r"ttyd-stalled: REMOVE sent 1 time\(s\) in \d+ s against a \d+ s "
        r"deadline", None),
    "slow-prompt-isolation": (
        r"slow-prompt-isolation: A's decision came (?P<t>[\d.]+) s after "
        r"the answer", lambda m: float(m["t"]) > 0.0),
    "restart-during-restart": (
        r"restart-during-restart.*'s restart planned (?P<t>[\d.]+) s after "
        r"its death, not within 1.5 s", lambda m: float(m["t"]) > 1.5),
    "idle-flood": (
        r"idle-flood: the honest client \(try \d+\) after (?P<t>[\d.]+) s: "
        r"rc 0 \{.*'outcome': 'approved'.*'consume': 'accepted'",
        lambda m: float(m["t"]) > 12.0),
    # prompt-timeout: under PBX_E2E_SLOW its early-end checks are timed
    # from the client's start, before PROMPT's send, and are not excused;
    # only a decision past the deadline's 2 s slack after the prompt
    # showed (T above L + 2), no sooner than L after the client started.
    "prompt-timeout": (
        r"prompt-timeout: decided (?P<t>[\d.]+) s after the prompt showed "
        r"\((?P<u>[\d.]+) s after the client started\); the deadline is "
        r"(?P<l>[\d.]+) s",
        lambda m: float(m["t"]) > float(m["l"]) + 2.0 and
        float(m["u"]) >= float(m["l"])),
    # relay-timeout (launchd --call-ms 300): after SIGCONT, B's CANCEL or
    # DECISION of its own request answered ROUTE only because launchd
    # logged that very call unanswered after --call-ms (powerboxd's answer
    # came late), never another answer, op or request.
    "relay-timeout": (
        r"relay-timeout: B's own request (?P<r>[\d.]+) after SIGCONT: "
        r"(?P<op>cancel|decision) answered \['(?P=op)=0x08c3'\]; launchd: "
        r"call op (?P=op) request (?P=r) unanswered after 300 ms$", None),
}
SUMMARY_RE = re.compile(r"ERROR SUMMARY: (\d+) errors")
LOST_RE = re.compile(r"(definitely|indirectly) lost: ([\d,]+) bytes")


def make_bin(src, work, tag, native):
    """WORK/bin-TAG and WORK/logs/TAG: wrappers for WRAPPED but native,
    copies for native (see NATIVE), symlinks for everything else."""
    dst = os.path.join(work, "bin-" + tag)
    logs = os.path.join(work, "logs", tag)
    for d in (dst, logs):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    for name in sorted(os.listdir(src)):
        real = os.path.abspath(os.path.join(src, name))
        path = os.path.join(dst, name)
        if name in native:
            shutil.copy2(real, path)
            continue
        if name not in WRAPPED:
            os.symlink(real, path)
            continue
        log = os.path.abspath(os.path.join(logs, name))
        argv = " ".join(VALGRIND + [f"--log-fd={SCENARIO_LOG_FD}", real])
        # valgrind keeps descriptors of its own at the top of the soft
        # limit and refuses the program a raise past it, so each wrapper
        # starts at the hard limit: powerboxd needs its transient range
        # (up to slot 4095) below the limit, or it refuses with status 32.
        with open(path, "w", encoding="utf-8") as f:
            f.write(f'#!/bin/bash\nulimit -n "$(ulimit -Hn)" 2>/dev/null\n'
                    f'exec {argv} "$@" {SCENARIO_LOG_FD}>"{log}.$$.log"\n')
        os.chmod(path, 0o755)
    return dst, logs


def read_logs(logs, table, bad):
    """Adds the logs of folder logs to table ({program: [processes,
    errors, lost bytes, unfinished]}) and the paths of those that report
    errors to bad; returns the programs that wrote a log there."""
    seen = set()
    for f in sorted(os.listdir(logs)):
        name = f.split(".")[0]
        seen.add(name)
        row = table.setdefault(name, [0, 0, 0, 0])
        with open(os.path.join(logs, f), encoding="utf-8",
                  errors="replace") as fh:
            text = fh.read()
        row[0] += 1
        marked = text.count(ERROR_MARK)
        m = SUMMARY_RE.search(text)
        if m is None:
            row[3] += 1
            row[1] += marked
            if marked:
                bad.append(os.path.join(logs, f))
            continue
        errors = max(int(m.group(1)), marked)
        row[1] += errors
        row[2] += sum(int(b.replace(",", "")) for _, b in
                      LOST_RE.findall(text))
        if errors:
            bad.append(os.path.join(logs, f))
    return seen


def groups(scenarios):
    """[(tag, native programs, scenarios)]: the scenarios grouped by
    their NATIVE set, in the order given; run.py runs each group once."""
    out = {}
    for name in scenarios:
        native = NATIVE.get(name, ())
        out.setdefault(native, []).append(name)
    # A short tag: the run directory's sockets must fit sockaddr_un's
    # 108 bytes (make-run-slow-start's demo stack nests deepest).
    return [("n-" + "".join(n.replace("pbx-", "")[0] for n in native)
             if native else "all", native, names)
            for native, names in out.items()]


def run_group(src, work, tag, native, names, table, bad):
    """Runs run.py on names in WORK/bin-TAG; returns (run.py's exit
    status, the programs that should have run under valgrind there and
    did not)."""
    binp, logs = make_bin(src, work, tag, native)
    env = dict(os.environ, PBX_E2E_SLOW=str(SLOW))
    if native:
        print(f"memcheck: {' '.join(names)}: {' '.join(native)} native "
              f"(NATIVE), everything else under valgrind")
    run = subprocess.run([sys.executable, "tests/e2e/run.py", binp,
                          os.path.join(work, "run" if tag == "all" else
                                       "run-" + tag)] + names,
                         check=False, env=env)
    seen = read_logs(logs, table, bad)
    return run.returncode, [p for p in STACK if p not in native and
                            p not in seen]


def timing_verdict(name, rc, output):
    """For --timed: None when scenario name passed or missed only its
    TIMED check (then that is reported), else why the run fails."""
    fails = [l for l in output.splitlines() if l.startswith("run: FAIL: ")]
    if rc == 0:
        print(f"memcheck: {name}: passed, its timing check included")
        return None
    pattern, late = TIMED[name]
    m = re.search(pattern, fails[-1]) if fails else None
    if m is None or (late is not None and not late(m)):
        return f"{name} failed other than its timing check"
    print(f"memcheck: {name}: missed its timing check under valgrind "
          f"(reported, not gated): {fails[-1][len('run: FAIL: '):]}")
    return None


def run_timed(src, work, names, table, bad):
    """--timed: each scenario of names (each in TIMED) alone in its own
    bin directory; returns the failures (run.py's other than TIMED's
    timing check, programs of the stack that never ran under valgrind)."""
    failed = []
    for name in names:
        native = NATIVE.get(name, ())
        binp, logs = make_bin(src, work, "t-" + name, native)
        env = dict(os.environ, PBX_E2E_SLOW=str(SLOW))
        run = subprocess.run([sys.executable, "tests/e2e/run.py", binp,
                              os.path.join(work, "run-t")] + [name],
                             check=False, env=env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        print(run.stdout, end="")
        why = timing_verdict(name, run.returncode, run.stdout)
        if why is not None:
            failed.append(why)
        seen = read_logs(logs, table, bad)
        failed += [f"{p} never ran under valgrind ({name})" for p in STACK
                   if p not in native and p not in seen]
    return failed


def report(table, bad, scenarios, took):
    """Prints the figures per program, the total and every bad log."""
    for name in sorted(table):
        n, errors, lost, unfinished = table[name]
        print(f"memcheck: {name}: {n} process(es), {errors} error(s), "
              f"{lost} byte(s) lost, {unfinished} without a summary")
    total = sum(r[1] for r in table.values())
    print(f"memcheck: {len(scenarios)} scenario(s) in {took:.0f} s, "
          f"{sum(r[0] for r in table.values())} process(es) under valgrind, "
          f"{total} error(s)")
    for path in bad:
        print(f"memcheck: errors in {path}:")
        with open(path, encoding="utf-8", errors="replace") as fh:
            print(fh.read()[-6000:])


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    if argv[1] == "--timed":
        return main_timed(argv[2], argv[3], argv[4:])
    src, work, scenarios = argv[1], argv[2], argv[3:]
    os.makedirs(work, exist_ok=True)
    shutil.rmtree(os.path.join(work, "logs"), ignore_errors=True)
    start = time.monotonic()
    table, bad, failed, missing = {}, [], [], []
    for tag, native, names in groups(scenarios):
        rc, absent = run_group(src, work, tag, native, names, table, bad)
        if rc != 0:
            failed.append(f"{tag} (run.py exit {rc})")
        missing += [f"{p} ({tag})" for p in absent]
    report(table, bad, scenarios, time.monotonic() - start)
    missing += [p for p in REQUIRED if p not in STACK and p not in table]
    if missing:
        print(f"memcheck: never ran under valgrind: {' '.join(missing)}")
    if failed or bad or missing:
        raise SystemExit(f"memcheck: FAIL {' '.join(failed)}")
    return 0


def main_timed(src, work, scenarios):
    """memcheck.py --timed BIN_DIR WORK_DIR SCENARIO... (see TIMED)."""
    unknown = [n for n in scenarios if n not in TIMED]
    if unknown or not scenarios:
        raise SystemExit(f"memcheck: --timed takes scenarios of TIMED, not "
                         f"{' '.join(unknown) or 'none'}")
    os.makedirs(work, exist_ok=True)
    shutil.rmtree(os.path.join(work, "logs"), ignore_errors=True)
    start = time.monotonic()
    table, bad = {}, []
    failed = run_timed(src, work, scenarios, table, bad)
    report(table, bad, scenarios, time.monotonic() - start)
    if failed or bad:
        raise SystemExit(f"memcheck: FAIL {'; '.join(failed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
