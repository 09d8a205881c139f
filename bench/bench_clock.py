#!/usr/bin/env python3
"""powerboxd's system calls per lifecycle under strace (docs/BENCH.md).

Usage: bench_clock.py BIN_DIR WORK_DIR N [--expect-no-clock]

Starts powerboxd with the reference peers as bench_host.py does (run.py's
Stack), attaches `strace -c -f` to the running powerboxd only once the
stack is up (so startup is not counted), runs one pbx-client job that
performs N routine one-shot lifecycles, detaches, and prints one line:

  clock lifecycles=N syscalls_per_lifecycle=S clock_gettime_per_lifecycle=C
        vdso=yes|no

vdso says whether the kernel mapped one into powerboxd (/proc/PID/maps).
Clock reads through the vDSO are function calls, not system calls, so
strace does not see them: with the vDSO C is 0, without it every read is
one system call. With --expect-no-clock the run fails when a vDSO is
mapped and C is not 0 (bench-smoke). Without strace the line says
strace=missing and the run passes: the figure is reported, not invented.
"""
import os
import shutil
import signal
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "e2e"))
import run  # noqa: E402  pylint: disable=wrong-import-position


def has_vdso(pid):
    """Whether the process maps a vDSO."""
    with open(f"/proc/{pid}/maps", encoding="ascii") as f:
        return any("[vdso]" in line for line in f)


def attach(pid, out):
    """strace -c -f on pid, returned once strace reports it attached."""
    tr = subprocess.Popen(["strace", "-c", "-f", "-o", out, "-p", str(pid)],
                          stderr=subprocess.PIPE, text=True)
    # strace prints one "Process PID attached" line per thread it seizes;
    # the first means counting has begun. A bounded number of lines.
    for _ in range(64):
        line = tr.stderr.readline()
        if not line or "attached" in line:
            break
    return tr


def summary(path):
    """(total calls, clock_gettime calls) from strace -c's table."""
    total, clock = 0, 0
    with open(path, encoding="ascii") as f:
        for line in f:
            cols = line.split()
            if len(cols) >= 5 and cols[-1] == "total":
                total = int(cols[3])
            elif len(cols) >= 5 and cols[-1] == "clock_gettime":
                clock = int(cols[3])
    return total, clock


def main():
    bin_dir, work, n = sys.argv[1], os.path.abspath(sys.argv[2]), \
        int(sys.argv[3])
    expect = "--expect-no-clock" in sys.argv[4:]
    if shutil.which("strace") is None:
        print(f"clock lifecycles={n} strace=missing")
        return 0
    st = run.Stack(bin_dir, work)
    out = os.path.join(work, "strace-clock.txt")
    try:
        vdso = has_vdso(st.pid)
        tr = attach(st.pid, out)
        argv = st.request_argv("--lifetime", "one-shot", "--urgency",
                               "routine", "--slot", "20", "--then",
                               "consume", "--repeat", str(n))
        res = subprocess.run(argv, capture_output=True, text=True,
                             check=False, timeout=600)
        tr.send_signal(signal.SIGINT)
        tr.communicate(timeout=60)
        if res.returncode != 0:
            run.fail(f"pbx-client --repeat {n}: exit {res.returncode}")
    finally:
        for f in st.logs.values():
            f.close()
        st.logs = {}
        st.stop()
    total, clock = summary(out)
    print(f"clock lifecycles={n} syscalls_per_lifecycle={total / n:.1f} "
          f"clock_gettime_per_lifecycle={clock / n:.2f} "
          f"vdso={'yes' if vdso else 'no'}")
    if expect and vdso and clock != 0:
        print("bench: powerboxd made clock_gettime system calls although a "
              "vDSO is mapped", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
