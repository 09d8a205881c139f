#!/usr/bin/env python3
"""The lifecycle with many live grants beside it with one (docs/BENCH.md).

Usage: bench_grants.py BIN_DIR WORK_DIR HOLD N [ROUNDS]

Starts two stacks as bench_life.py does, both pinned to one CPU and both
running at once: powerboxd's PBX1 pools sized for 1,024 grants and 944
transient slots (GEOMETRY), vfsd's and procd's tables for 1,024 rows
(--objects, --installs), and a staged process for every holding job. On
the first, launched shell jobs (600:1 and up, each bound to its own
staged process) hold HOLD job-lifetime install-mode grants, 32 per job
(what launchd tracks for one job connection, PBX_PEER_TRACK_GRANTS_MAX),
each in its own slot, one request at a time, stopping at the first
refusal; the second holds 1 the same way. An install-mode grant keeps its
vfsd object live (procd holds the installed copy) and its procd
revocation handle live, so the rows held are real in every process:
powerboxd's grant, launchd's tracking, vfsd's object and procd's install.
The counts are checked (procd's query socket and vfsd's log) and printed.

Then ROUNDS rounds (default 7): in each, job 11:1 runs N routine
runtime-reply lifecycles on each stack in turn (which goes first
alternates), and each run's median is kept. It prints

  grants asked=HOLD held=H installs=I objects=O median_ns_held=A
         median_ns_one=B ratio=A/B rounds=R refused=TEXT

where A and B are the medians of the rounds' medians, I and O the
installs procd lists and the objects vfsd minted and still holds on the
held stack, and TEXT the first refusal's output (`none` when all were
held).
"""
import os
import shlex
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import run  # noqa: E402  pylint: disable=wrong-import-position
import bench_life  # noqa: E402  pylint: disable=wrong-import-position
from e2e_harness import read_rows  # noqa: E402  pylint: disable=C0413


# powerboxd's pools sized for 1,000 grants (the default holds 128); its
# 944 transient slots (plus 16 receipts) hold the 900 install-mode grants
# of the row with room for the lifecycles beside them. The range may hold
# up to 4,032 slots, and e2e many-grants holds 1,000 (docs/BENCH.md).
GEOMETRY = ("--grants", "1024", "--requests", "1024", "--decisions", "1024",
            "--policies", "1024", "--resolutions", "1024", "--notifications",
            "1024", "--transient-slots", "944")
# Live grants launchd tracks for one job connection.
PER_JOB = 32
# The first slot each holding job installs into (one slot per grant).
SLOT0 = 100


def tables(count):
    """vfsd's and procd's table sizes and the staged processes (one per
    holding job) of a stack holding count grants."""
    jobs = max(1, (count + PER_JOB - 1) // PER_JOB)
    return {"vfsd": ["--objects", "1024"], "procd": ["--installs", "1024"],
            "stages": min(64, jobs)}


def hold(st, job, count):
    """Asks for count job-lifetime install grants in job, one per slot;
    (held, status)."""
    argv = st.client_argv("--lifetime", "job", "--urgency", "routine",
                          "--mode", "install", "--slot", "SLOT")
    line = shlex.join(argv).replace("SLOT", f"$(({SLOT0} + i))")
    rc, out = job.sh(f'i=0; while [ $i -lt {count} ]; do {line} '
                     '>/dev/null 2>"$PBX_ERR" || break; i=$((i + 1)); '
                     'done; echo "held=$i"', seconds=900)
    held = int(out.get("held", "0"))
    return held, rc


def live_rows(st):
    """(procd's installs, vfsd's objects minted and not hung up or
    retired) on stack st."""
    rows = read_rows(st.installs, seconds=30)
    with open(os.path.join(st.work, "logs", "vfsd.log"), "rb") as f:
        log = f.read()
    return len(rows), (log.count(b"RESOLVE found") - log.count(b"HANG-UP") -
                       log.count(b"RETIRE object"))


def start(bin_dir, work, count):
    """A fresh stack holding count grants: (stack, jobs, held, note)."""
    st = run.Stack(bin_dir, work, geometry=GEOMETRY, tables=tables(count))
    jobs, held, note = [], 0, "none"
    err = os.path.join(work, "refusal.txt")
    while held < count and note == "none":
        job = run.Shell(st, f"{600 + len(jobs)}:1")
        jobs.append(job)
        job.sh(f"export PBX_ERR={shlex.quote(err)}")
        want = min(PER_JOB, count - held)
        got, _ = hold(st, job, want)
        held += got
        if got < want and os.path.exists(err):
            with open(err, encoding="utf-8", errors="replace") as f:
                note = " ".join(f.read().split())[:160] or "unknown"
    return st, jobs, held, note


def stop(st, jobs):
    """Ends the holding jobs and the stack."""
    try:
        for job in jobs:
            job.close()
    finally:
        for f in st.logs.values():
            f.close()
        st.logs = {}
        st.stop()


def main():
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    count, n = int(sys.argv[3]), int(sys.argv[4])
    rounds = int(sys.argv[5]) if len(sys.argv) > 5 else 7
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})
    many = start(bin_dir, os.path.join(work, "many"), count)
    one = None
    try:
        one = start(bin_dir, os.path.join(work, "one"), 1)
        installs, objects = live_rows(many[0])
        times = {"many": [], "one": []}
        for r in range(rounds):
            order = (("many", many), ("one", one))
            for name, stack in order if r % 2 == 0 else order[::-1]:
                got = bench_life.lifecycles(stack[0], n)
                times[name].append(float(got["median_ns"]))
    finally:
        stop(many[0], many[1])
        if one is not None:
            stop(one[0], one[1])
    a = statistics.median(times["many"])
    b = statistics.median(times["one"])
    print(f"grants asked={count} held={many[2]} installs={installs} "
          f"objects={objects} median_ns_held={a:.0f} median_ns_one={b:.0f} "
          f"ratio={a / b:.2f} rounds={rounds} "
          f"refused={many[3].replace(' ', '_')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
