#!/usr/bin/env python3
"""The lifecycle with many live grants beside it with one (docs/BENCH.md).

Usage: bench_grants.py BIN_DIR WORK_DIR HOLD N

Starts the stack as bench_life.py does (pinned to one CPU), and in
launched shell jobs (500:1 and up) asks for HOLD routine job-lifetime
runtime-reply grants, which stay live while their job runs: at most 32
per job, the live grants launchd tracks for one job connection
(PBX_PEER_TRACK_GRANTS_MAX); it stops at the first refusal. powerboxd's
PBX1 pools are sized for 1,024 grants (GEOMETRY) on both stacks. Then job 11:1 runs N routine
runtime-reply lifecycles. It does the same with 1 held grant on a fresh
stack, and prints:

  grants asked=HOLD held=H median_ns_held=A median_ns_one=B ratio=A/B
         refused=TEXT

where TEXT is the first refusal's output (`none` when all were held).
"""
import os
import shlex
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import run  # noqa: E402  pylint: disable=wrong-import-position
import bench_life  # noqa: E402  pylint: disable=wrong-import-position


# powerboxd's pools sized for 1,000 grants (the default holds 128).
GEOMETRY = ("--grants", "1024", "--requests", "1024", "--decisions", "1024",
            "--policies", "1024", "--resolutions", "1024", "--notifications",
            "1024", "--transient-slots", "944")
# Live grants launchd tracks for one job connection.
PER_JOB = 32


def hold(st, job, count):
    """Asks for count job-lifetime grants in job; (held, status)."""
    argv = st.client_argv("--lifetime", "job", "--urgency", "routine",
                          "--mode", "runtime-reply")
    line = shlex.join(argv)
    rc, out = job.sh(f'i=0; while [ $i -lt {count} ]; do {line} '
                     '>/dev/null 2>"$PBX_ERR" || break; i=$((i + 1)); '
                     'done; echo "held=$i"', seconds=900)
    held = int(out.get("held", "0"))
    return held, rc


def measure(bin_dir, work, count, n):
    """(held, refusal note, median ns) on a fresh stack."""
    st = run.Stack(bin_dir, work, geometry=GEOMETRY)
    jobs, held, note = [], 0, "none"
    try:
        err = os.path.join(work, "refusal.txt")
        while held < count and note == "none":
            job = run.Shell(st, f"{500 + len(jobs)}:1")
            jobs.append(job)
            job.sh(f"export PBX_ERR={shlex.quote(err)}")
            want = min(PER_JOB, count - held)
            got, _ = hold(st, job, want)
            held += got
            if got < want and os.path.exists(err):
                with open(err, encoding="utf-8", errors="replace") as f:
                    note = " ".join(f.read().split())[:160] or "unknown"
        got = bench_life.lifecycles(st, n)
        for job in jobs:
            job.close()
        return held, note, float(got["median_ns"])
    finally:
        for f in st.logs.values():
            f.close()
        st.logs = {}
        st.stop()


def main():
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    count, n = int(sys.argv[3]), int(sys.argv[4])
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})
    held, note, many = measure(bin_dir, os.path.join(work, "many"), count, n)
    _, _, one = measure(bin_dir, os.path.join(work, "one"), 1, n)
    print(f"grants asked={count} held={held} median_ns_held={many:.0f} "
          f"median_ns_one={one:.0f} ratio={many / one:.2f} "
          f"refused={note.replace(' ', '_')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
