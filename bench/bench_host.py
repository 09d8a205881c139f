#!/usr/bin/env python3
"""powerboxd end to end on the host: lifecycles per second (docs/BENCH.md).

Usage: bench_host.py BIN_DIR WORK_DIR N

Starts powerboxd with the reference peers exactly as `make run` does (it
imports tests/e2e/run.py and uses its Stack: the same PBX1 record, the same
socketpairs, fds 3..10 and readiness checks), then runs one pbx-client,
launched by launchd as job 11:1, that performs N routine one-shot
install-mode lifecycles back to back on its job connection, which launchd
relays over its broker connection as powerboxd requires for BEGIN
(`request ... --then consume --repeat N`), and
prints its statistics as one line of key=value pairs, plus, per
lifecycle, the calls each peer logged and the CPU time each process used
while the client ran (/proc/PID/schedstat for powerboxd and the peers,
the client's own getrusage). Peer logs stay in WORK_DIR/logs.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "e2e"))
import run  # noqa: E402  pylint: disable=wrong-import-position

# The peer log lines that mark one call served (docs/HOST.md).
PEER_CALLS = {"vfsd": ("RESOLVE", "DETACH", "RETIRE"),
              "ttyd": ("POLICY", "VIEW ACTIVE", "VIEW REMOVE", "PROMPT"),
              "procd": ("INSTALL", "REVOKE", "handle closed"),
              "launchd": ("wake request", "broker")}
# Run.Stack starts its peers in this order.
PEER_ORDER = ("vfsd", "ttyd", "procd", "launchd")


def count_calls(st, n):
    """key=value pairs: each peer's logged call lines per lifecycle."""
    out = []
    for name, words in PEER_CALLS.items():
        log = st.peer_log(name).splitlines()
        for w in words:
            hits = sum(1 for line in log if f": {w} " in line or f": {w}:" in line)
            key = w.lower().replace(" ", "_")
            out.append(f"{name}_{key}={hits / n:.2f}")
    return out


def cpu_ns(st):
    """Nanoseconds on CPU so far of powerboxd and each peer, by name."""
    pids = {"powerboxd": st.pid}
    pids.update(zip(PEER_ORDER, (p.pid for p in st.procs)))
    out = {}
    for name, pid in pids.items():
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
            out[name] = int(f.read().split()[0])
    return out


def main():
    bin_dir, work, n = sys.argv[1], os.path.abspath(sys.argv[2]), \
        int(sys.argv[3])
    st = run.Stack(bin_dir, work)
    try:
        # The client is a job launched by launchd (job 11:1, bin/cat,
        # session 7 realm 3), as every program is: launchd binds its job
        # and staged process, and only a job may BEGIN.
        argv = st.request_argv("--lifetime", "one-shot", "--urgency",
                               "routine", "--slot", "20", "--then",
                               "consume", "--repeat", str(n))
        before = cpu_ns(st)
        out = subprocess.run(argv, capture_output=True, text=True,
                             check=False, timeout=600)
        after = cpu_ns(st)
        sys.stderr.write(out.stderr)
        kv = [l.strip() for l in out.stdout.splitlines() if "=" in l]
        if out.returncode != 0:
            run.fail(f"pbx-client --repeat {n}: exit {out.returncode}: "
                     f"{' '.join(kv)}")
        run.cleaned(st, run.last_object(st))
        # The client reports its own CPU (cpu_ns_client= in kv): it is
        # launchd's child, not this process's.
        cpu = [f"cpu_ns_{k}={(after[k] - before[k]) / n:.0f}" for k in after]
        print("host " + " ".join(kv + count_calls(st, n) + cpu))
    finally:
        # The peer logs hold a line per call: keep them in WORK_DIR/logs
        # rather than printing them as run.py's stop() does.
        for f in st.logs.values():
            f.close()
        st.logs = {}
        st.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
