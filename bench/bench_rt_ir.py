#!/usr/bin/env python3
"""The live powerboxd's user instructions per lifecycle under callgrind.

Usage: bench_rt_ir.py BIN_DIR WORK_DIR N

Starts powerboxd with the reference peers as bench_clock.py does (run.py's
Stack), but with powerboxd run under `valgrind --tool=callgrind
--instr-atstart=no` (a wrapper in WORK_DIR/bin that execs valgrind keeps
powerboxd's pid, which vfsd's route names). Once the stack is up,
`callgrind_control -i on` starts counting, one pbx-client job performs N
routine one-shot lifecycles, and `callgrind_control -d` dumps the counts;
startup is never counted. Prints one line:

  rt_ir lifecycles=N ir_per_lifecycle=I profile=PATH

PATH is the dump, for `callgrind_annotate` (where the instructions go).
Without valgrind the line says valgrind=missing.
"""
import glob
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "e2e"))
import run  # noqa: E402  pylint: disable=wrong-import-position


def wrap_bin(bin_dir, work):
    """WORK/bin: every file of bin_dir linked, powerboxd a wrapper script
    that execs the real one under callgrind."""
    out = os.path.join(work, "bin")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(bin_dir):
        dst = os.path.join(out, name)
        if not os.path.lexists(dst):
            os.symlink(os.path.abspath(os.path.join(bin_dir, name)), dst)
    os.unlink(os.path.join(out, "powerboxd"))
    real = os.path.abspath(os.path.join(bin_dir, "powerboxd"))
    cg = os.path.join(work, "callgrind.out")
    with open(os.path.join(out, "powerboxd"), "w", encoding="ascii") as f:
        # valgrind keeps descriptors of its own at the top of the soft
        # limit and lets the program raise it no further, so the script
        # starts it at the hard limit: powerboxd needs its whole
        # transient range (up to slot 4095) below the limit.
        f.write("#!/bin/sh\n"
                "ulimit -n \"$(ulimit -Hn)\" 2>/dev/null\n"
                "exec valgrind --tool=callgrind -q "
                "--instr-atstart=no "
                f"--callgrind-out-file={cg}.%p {real} \"$@\"\n")
    os.chmod(os.path.join(out, "powerboxd"), 0o755)
    return out, cg


def total_ir(path):
    """The Ir total of one callgrind dump."""
    with open(path, encoding="ascii", errors="replace") as f:
        for line in f:
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    return 0


def control(*args):
    """callgrind_control with args; fails the run if it fails."""
    res = subprocess.run(["callgrind_control"] + list(args),
                         capture_output=True, text=True, check=False,
                         timeout=120)
    if res.returncode != 0:
        run.fail(f"callgrind_control {args}: {res.stdout}{res.stderr}")


def main():
    bin_dir, work, n = sys.argv[1], os.path.abspath(sys.argv[2]), \
        int(sys.argv[3])
    if shutil.which("valgrind") is None:
        print(f"rt_ir lifecycles={n} valgrind=missing")
        return 0
    os.makedirs(work, exist_ok=True)
    wbin, cg = wrap_bin(bin_dir, work)
    for old in glob.glob(cg + ".*"):
        os.unlink(old)
    st = run.Stack(wbin, work)
    try:
        pid = st.pid
        control("-i", "on", str(pid))
        argv = st.request_argv("--lifetime", "one-shot", "--urgency",
                               "routine", "--slot", "20", "--then",
                               "consume", "--repeat", str(n))
        res = subprocess.run(argv, capture_output=True, text=True,
                             check=False, timeout=1200)
        # The last lifecycle's VIEW REMOVE and RETIRE end after CONSUME's
        # reply: wait until powerboxd's log names the last retirement, a
        # bounded while, before the dump.
        time.sleep(2)
        control("-d", str(pid))
        control("-i", "off", str(pid))
        if res.returncode != 0:
            run.fail(f"pbx-client --repeat {n}: exit {res.returncode}")
    finally:
        for f in st.logs.values():
            f.close()
        st.logs = {}
        st.stop()
    dumps = sorted(p for p in glob.glob(f"{cg}.{pid}*")
                   if total_ir(p) > 0)
    if not dumps:
        run.fail("no callgrind dump with counts")
    ir = sum(total_ir(p) for p in dumps if p != f"{cg}.{pid}")
    print(f"rt_ir lifecycles={n} ir_per_lifecycle={ir / n:.0f} "
          f"profile={dumps[-1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
