#!/usr/bin/env python3
"""The live powerboxd's user instructions per lifecycle (docs/BENCH.md).

Usage: bench_live_ir.py BIN_DIR WORK_DIR SHORT LONG [PAIRS]

Starts the stack as bench_life.py does, but with powerboxd run under
`valgrind --tool=callgrind` (a directory of links to BIN_DIR whose
powerboxd is a script that execs valgrind on the real one; the process
keeps its pid, so vfsd's route still names it), runs SHORT routine
install-mode lifecycles of one client (pbx-client's default mode, the
lifecycle the codec floor of bench_floor.c counts, so the ratio compares
the same frames), stops the stack, and reads the
instructions callgrind counted over powerboxd's whole life. It does the
same with LONG lifecycles; the difference over LONG - SHORT is the
instructions per lifecycle, with startup, the client's connection and the
shutdown cancelled out. The pair runs PAIRS times (2 by default; 1 in
bench-smoke), and the line gives the figures and how far apart they are
(the count is not exact to the instruction: a receive that finds its
socket empty, EAGAIN, depends on scheduling):

  live ir_per_lifecycle=A second=B spread_pct=P

Without valgrind it prints `live missing=valgrind`.
"""
import os
import shutil
import stat
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import run  # noqa: E402  pylint: disable=wrong-import-position
import bench_life  # noqa: E402  pylint: disable=wrong-import-position


def wrapped_bin(bin_dir, work, out):
    """A directory like bin_dir whose powerboxd runs under callgrind,
    writing its profile to out."""
    vg = os.path.join(work, "bin")
    os.makedirs(vg, exist_ok=True)
    for name in os.listdir(bin_dir):
        link = os.path.join(vg, name)
        if name != "powerboxd" and not os.path.lexists(link):
            os.symlink(os.path.abspath(os.path.join(bin_dir, name)), link)
    script = os.path.join(vg, "powerboxd")
    real = os.path.abspath(os.path.join(bin_dir, "powerboxd"))
    with open(script, "w", encoding="ascii") as f:
        # valgrind keeps descriptors of its own at the top of the soft
        # limit and lets the program raise it no further, so the script
        # starts it at the hard limit: powerboxd needs its whole
        # transient range (up to slot 4095) below the limit.
        f.write(f"#!/bin/sh\n"
                f"ulimit -n \"$(ulimit -Hn)\" 2>/dev/null\n"
                f"exec valgrind --tool=callgrind -q "
                f"--callgrind-out-file={out} {real} \"$@\"\n")
    os.chmod(script, os.stat(script).st_mode | stat.S_IXUSR)
    return vg


def total_ir(bin_dir, work, n):
    """Instructions powerboxd executed over a stack's life with n
    lifecycles."""
    out = os.path.join(work, f"cg.live.{n}")
    if os.path.exists(out):
        os.unlink(out)
    vg = wrapped_bin(bin_dir, work, out)
    st = run.Stack(vg, os.path.join(work, f"stack-{n}"))
    try:
        argv = st.request_argv("--job", "11:1", "--lifetime", "one-shot",
                               "--urgency", "routine", "--slot", "20",
                               "--then", "consume", "--repeat", str(n))
        res = subprocess.run(argv, capture_output=True, text=True,
                             check=False, timeout=1200)
        if res.returncode != 0 or \
                bench_life.kv(res.stdout).get("repeat") != str(n):
            run.fail(f"install-mode client of {n} lifecycles: exit "
                     f"{res.returncode}: {res.stdout[-300:]} "
                     f"{res.stderr[-300:]}")
    finally:
        for f in st.logs.values():
            f.close()
        st.logs = {}
        st.stop()
    with open(out, encoding="ascii") as f:
        for line in f:
            if line.startswith(("totals:", "summary:")):
                return int(line.split()[1])
    run.fail(f"no totals in {out}")
    return 0


def main():
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    short, long_n = int(sys.argv[3]), int(sys.argv[4])
    pairs = int(sys.argv[5]) if len(sys.argv) > 5 else 2
    if shutil.which("valgrind") is None:
        print("live missing=valgrind")
        return 0
    os.makedirs(work, exist_ok=True)
    figs = []
    for _ in range(pairs):
        a = total_ir(bin_dir, work, short)
        b = total_ir(bin_dir, work, long_n)
        figs.append((b - a) / (long_n - short))
    spread = 100 * (max(figs) - min(figs)) / min(figs)
    print(f"live ir_per_lifecycle={figs[0]:.0f} second={figs[-1]:.0f} "
          f"spread_pct={spread:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
