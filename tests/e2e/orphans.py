#!/usr/bin/env python3
"""A failed scenario leaves no process behind (issue 14 item 9).

Usage: orphans.py BIN_DIR WORK_DIR

Runs `run.py BIN_DIR WORK_DIR/MODE fail-on-purpose` once per failure mode
($PBX_E2E_FAIL): `fail` (the scenario calls fail()), `raise` (it raises an
exception after killing launchd, so that launchd's jobs are orphans no
longer below the stack) and `term` (this script sends run.py SIGTERM).
Each time, once the scenario prints `hold=DIR` (its stack is up, a job,
the job's child in a session of its own and a held request running), it
counts the processes of the stack: those whose command line names DIR or
whose environment names it (launchd and every job it starts carry
PBX_E2E_STACK=DIR). There must be at least MIN_RUNNING (so the count can
see them). Then it lets the scenario fail, expects run.py to exit 1 with
its failure line, and counts again: there must be none, within SETTLE_S.
Anything found is killed here and reported, and the check fails.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

MODES = ("fail", "raise", "term")
# powerboxd, vfsd, ttyd, procd, launchd, two launchers, the job's shell
# (now sleep), its child, and the held client: at least these name DIR.
MIN_RUNNING = 9
SETTLE_S = 5.0
RUN_S = 90.0


def lineage():
    """This process and its ancestors (their command lines name WORK_DIR
    too): never counted."""
    pids, pid = set(), os.getpid()
    for _ in range(64):
        if pid <= 1 or pid in pids:
            break
        pids.add(pid)
        try:
            with open(f"/proc/{pid}/stat", encoding="ascii") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            break
    return pids


def stack_pids(work, skip):
    """Pids of live processes whose command line or environment names
    work (a zombie has neither)."""
    key = work.encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in skip:
            continue
        seen = b""
        for part in ("cmdline", "environ"):
            try:
                with open(f"/proc/{d}/{part}", "rb") as f:
                    seen += f.read() + b"\0"
            except OSError:
                pass
        if key in seen:
            found.append(int(d))
    return found


def describe(pids):
    """One line per pid: its command line."""
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            cmd = "(gone)"
        out.append(f"  pid {pid}: {cmd.strip()}")
    return "\n".join(out)


def wait_hold(proc, log, seconds):
    """Waits until run.py printed hold=DIR; returns DIR (None when run.py
    ended or the time passed first)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with open(log, encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("hold="):
                    return line.strip().split("=", 1)[1]
        if proc.poll() is not None:
            return None
        time.sleep(0.1)
    return None


def one(bin_dir, work, mode, skip):
    """One failing run; returns a list of problems (empty: passed)."""
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    log = os.path.join(work, "run.out")
    env = dict(os.environ, PBX_E2E_FAIL=mode)
    with open(log, "w", encoding="utf-8") as out:
        proc = subprocess.Popen(
            [sys.executable, os.path.join(here, "run.py"), bin_dir, work,
             "fail-on-purpose"], stdout=out, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, env=env)
    problems = []
    stack = wait_hold(proc, log, 60.0)
    if stack is None:
        problems.append("the scenario never printed hold=")
        stack = os.path.join(work, "fail-on-purpose")
    else:
        running = stack_pids(stack, skip | {proc.pid})
        print(f"orphans: {mode}: {len(running)} process(es) of the stack "
              "running before the failure")
        if len(running) < MIN_RUNNING:
            problems.append(f"only {len(running)} process(es) of the stack "
                            f"seen running, expected >= {MIN_RUNNING}:\n" +
                            describe(running))
        if mode == "term":
            proc.send_signal(signal.SIGTERM)
        else:
            open(os.path.join(stack, "go"), "w", encoding="utf-8").close()
    try:
        rc = proc.wait(timeout=RUN_S)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = proc.wait()
        problems.append(f"run.py did not end within {RUN_S:.0f} s")
    with open(log, encoding="utf-8", errors="replace") as f:
        text = f.read()
    want = {"fail": "run: FAIL: fail-on-purpose",
            "raise": "RuntimeError: fail-on-purpose",
            "term": "run: FAIL: signal 15"}[mode]
    if rc != 1 or want not in text:
        problems.append(f"run.py exited {rc}, expected 1 with '{want}'")
    deadline = time.monotonic() + SETTLE_S
    left = stack_pids(stack, skip)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = stack_pids(stack, skip)
    if left:
        problems.append(f"{len(left)} process(es) of the stack left after "
                        "the failure:\n" + describe(left))
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    if problems:
        sys.stdout.write(text[-4000:])
    return problems


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    bin_dir = sys.argv[1]
    work = os.path.abspath(sys.argv[2])
    skip = lineage()
    failed = 0
    for mode in MODES:
        problems = one(bin_dir, os.path.join(work, mode), mode, skip)
        for p in problems:
            print(f"orphans: {mode}: FAIL: {p}")
        if not problems:
            print(f"orphans: {mode}: run.py exited 1, no process of the "
                  "stack left")
        failed += bool(problems)
    if failed:
        return 1
    print(f"orphans: ok: {' '.join(MODES)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
