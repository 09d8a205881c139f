#!/usr/bin/env python3
"""Which process makes which system calls beyond the needed messages
(docs/bench/PROFILES.md, "Profiles of the rows not met (session 10)").

Usage: bench_sysprof.py BIN_DIR WORK_DIR [REC]

Starts the stack as bench_life.py does (pinned to one CPU, run.py's
Stack), records REC (default 20) routine runtime-reply lifecycles of one
pbx-client job with bench_trace.py (strace -f of powerboxd and every
peer, the launched client traced from its start) and prints, per
process, its system calls per lifecycle by name beside the needed
skeleton's events of that process (bench_life.py's "needed"), and the
failed calls apart (name!ERRNO):

  sysprof ROLE total=T needed=N
  sysprof ROLE NAME=C ...

It is the strace -c of every process, counted from one trace; it
measures only, and asserts nothing beyond the run completing.
"""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import run  # noqa: E402  pylint: disable=wrong-import-position
import bench_life  # noqa: E402  pylint: disable=wrong-import-position
import bench_trace  # noqa: E402  pylint: disable=wrong-import-position

ERRNO = re.compile(r"= -1 (E[A-Z]+)")
NAMES = {"S": "send", "R": "receive", "H": "hang-up", "W": "wait",
         "C": "close"}


def by_name(calls, roles):
    """{role: {syscall name (with !ERRNO when it failed): count}}."""
    out = {}
    for pid, text in calls:
        role = roles.get(pid, "client")
        name = text.split("(", 1)[0]
        err = ERRNO.search(text)
        if err is not None:
            name += "!" + err.group(1)
        per = out.setdefault(role, {})
        per[name] = per.get(name, 0) + 1
    return out


def main():
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    rec = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})
    os.makedirs(work, exist_ok=True)
    st = run.Stack(bin_dir, os.path.join(work, "stack"))
    try:
        roles = {st.pid: "powerboxd"}
        roles.update(zip((p.pid for p in st.procs), bench_life.ROLES))
        res, calls, _ = bench_trace.record(
            roles, bench_life.client_argv(st, rec),
            os.path.join(work, "sysprof.strace"))
        if res.returncode != 0:
            run.fail(f"recorded client: exit {res.returncode}")
    finally:
        for f in st.logs.values():
            f.close()
        st.logs = {}
        st.stop()
    evs, _ = bench_trace.events(calls, roles)
    need = bench_trace.needed(evs)
    for role, names in sorted(by_name(calls, roles).items()):
        mine = [e for e in need if e["role"] == role]
        kinds = {}
        for e in mine:
            kinds[NAMES[e["kind"]]] = kinds.get(NAMES[e["kind"]], 0) + 1
        print(f"sysprof {role} total={sum(names.values()) / rec:.1f} "
              f"needed={len(mine) / rec:.1f} " +
              " ".join(f"needed_{k}={v / rec:.1f}"
                       for k, v in sorted(kinds.items())))
        print(f"sysprof {role} " + " ".join(
            f"{k}={v / rec:.2f}" for k, v in
            sorted(names.items(), key=lambda kv: -kv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
