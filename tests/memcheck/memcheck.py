#!/usr/bin/env python3
"""make memcheck: the end-to-end scenarios under valgrind memcheck
(issue 22 item 5, docs/TESTING.md "Memory checks").

Usage: memcheck.py BIN_DIR WORK_DIR SCENARIO...

Makes WORK_DIR/bin, a copy of BIN_DIR's layout in which every program
run.py, launchd or pbx starts by path is a two-line bash wrapper that
execs it under

    valgrind --tool=memcheck --leak-check=full --error-exitcode=97
             --errors-for-leak-kinds=definite,indirect --log-fd=900
             900>WORK_DIR/logs/NAME.PID.log

(no suppression file, no --trace-children): the reference peers, pbx,
pbx-client, pbx-broker and the freestanding powerboxd image. The exec
keeps the pid, so every pid the stack checks (vfsd's route for
powerboxd's exact pid, ttyd's and procd's --jobs-below) is still right.
The statically linked programs launchd runs sandboxed (pbx-stage,
pbx-demo, the pbx-test-* programs) are linked as they are: memcheck
cannot replace a static program's allocator, and a Landlock or seccomp
wall would also fence valgrind itself.

Then runs tests/e2e/run.py WORK_DIR/bin WORK_DIR/run SCENARIO... (with
PBX_E2E_SLOW=SLOW in its environment: the harness's waits and the
scenarios' timed bounds grow by that factor) and
reads every log: a run fails when run.py fails, when any log reports an
error (ERROR SUMMARY above zero: invalid accesses, uninitialised values,
bad frees, definitely or indirectly lost blocks), or when no log at all
was written for a wrapped program the scenarios must start. A log without
a summary (a process the scenario killed with SIGKILL) is counted and
listed, not failed: valgrind cannot report for a process it never saw
end. Prints one line per program (processes, errors, leaks) and a total.
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
# At least these must have run (every stack starts them).
REQUIRED = ("pbx", "pbx-vfsd", "pbx-ttyd", "pbx-procd", "pbx-launchd",
            "pbx-client", "powerboxd")
VALGRIND = ["valgrind", "--tool=memcheck", "--leak-check=full",
            "--error-exitcode=97", "--errors-for-leak-kinds=definite,indirect",
            "--show-leak-kinds=definite,indirect"]
# valgrind's log: a descriptor the wrapper opens far above the startup
# slots. --log-file would open it at the lowest free descriptor, and
# powerboxd refuses to start when its slot 9, which must be empty, holds
# one.
LOG_FD = 900
# The harness's waits and timed bounds grow by this factor
# (tests/e2e/e2e_harness.py's SLOW): valgrind runs each program many
# times slower.
SLOW = 10
SUMMARY_RE = re.compile(r"ERROR SUMMARY: (\d+) errors")
LOST_RE = re.compile(r"(definitely|indirectly) lost: ([\d,]+) bytes")


def make_bin(src, work):
    """WORK/bin: wrappers for WRAPPED, symlinks for everything else."""
    dst = os.path.join(work, "bin")
    logs = os.path.join(work, "logs")
    for d in (dst, logs):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    for name in sorted(os.listdir(src)):
        real = os.path.abspath(os.path.join(src, name))
        path = os.path.join(dst, name)
        if name not in WRAPPED:
            os.symlink(real, path)
            continue
        log = os.path.abspath(os.path.join(logs, name))
        argv = " ".join(VALGRIND + [f"--log-fd={LOG_FD}", real])
        with open(path, "w", encoding="utf-8") as f:
            f.write(f'#!/bin/bash\nexec {argv} "$@" '
                    f'{LOG_FD}>"{log}.$$.log"\n')
        os.chmod(path, 0o755)
    return dst, logs


def read_logs(logs):
    """{program: [processes, errors, lost bytes, unfinished]} and the
    paths of the logs that report errors."""
    table, bad = {}, []
    for f in sorted(os.listdir(logs)):
        name = f.split(".")[0]
        row = table.setdefault(name, [0, 0, 0, 0])
        with open(os.path.join(logs, f), encoding="utf-8",
                  errors="replace") as fh:
            text = fh.read()
        row[0] += 1
        m = SUMMARY_RE.search(text)
        if m is None:
            row[3] += 1
            continue
        errors = int(m.group(1))
        row[1] += errors
        row[2] += sum(int(b.replace(",", "")) for _, b in
                      LOST_RE.findall(text))
        if errors:
            bad.append(os.path.join(logs, f))
    return table, bad


def main(argv):
    if len(argv) < 4:
        raise SystemExit(__doc__)
    src, work, scenarios = argv[1], argv[2], argv[3:]
    os.makedirs(work, exist_ok=True)
    binp, logs = make_bin(src, work)
    start = time.monotonic()
    env = dict(os.environ, PBX_E2E_SLOW=str(SLOW))
    run = subprocess.run([sys.executable, "tests/e2e/run.py", binp,
                          os.path.join(work, "run")] + scenarios,
                         check=False, env=env)
    took = time.monotonic() - start
    table, bad = read_logs(logs)
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
    missing = [p for p in REQUIRED if p not in table]
    if missing:
        print(f"memcheck: never ran under valgrind: {' '.join(missing)}")
    if run.returncode != 0 or bad or missing:
        raise SystemExit(f"memcheck: FAIL (run.py exit {run.returncode})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
