#!/usr/bin/env python3
"""The routine lifecycle beside its zero-work skeleton (docs/BENCH.md).

Usage: bench_life.py BIN_DIR WORK_DIR [--smoke]

Pins itself, and so the whole stack and every skeleton it starts, to one
CPU; starts powerboxd with the reference peers as `make run` does (run.py's
Stack); then:

1. records the messages of REC routine runtime-reply lifecycles of one
   pbx-client job under strace (bench_trace.py), writes the skeleton of
   that pattern and of the needed pattern (one DECISION to powerboxd,
   after the wake), and replays each once with pbx-bench-skel: the bench
   FAILS when a skeleton's counts differ from the recorded run's, and
   when the recorded pattern is not the needed one (check_needed());
2. runs ROUNDS interleaved rounds: N lifecycles on the stack (the
   client's median BEGIN to CONSUME reply; the client returns only after
   the cleanup), then each skeleton (the least of 7 replays' time over
   REC lifecycles: see rounds());
3. measures launchd's and powerboxd's CPU (/proc/PID/stat utime+stime)
   and powerboxd's RSS (/proc/PID/status VmRSS) over LONG lifecycles,
   beside the skeleton's launchd role;
4. throughput with 1, 8 and 64 client jobs at once, beside as many
   copies of the skeleton at once (best of 3);
5. polkit's CheckAuthorization (bench_polkit.py) over the lifecycle.

It prints the markdown tables of docs/BENCH.md's "Lifecycle beside its
skeleton". --smoke runs a tiny version of each part (no polkit) and
checks only that everything completes and the counts agree.
"""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))
sys.path.insert(0, HERE)
import run  # noqa: E402  pylint: disable=wrong-import-position
import bench_trace  # noqa: E402  pylint: disable=wrong-import-position

FULL = {"rec": 20, "rounds": 7, "n": 200, "long": 10000,
        "conc": (1, 8, 64), "per": 40, "polkit": (200, 7)}
SMOKE = {"rec": 3, "rounds": 1, "n": 3, "long": 20, "conc": (1, 2),
         "per": 2, "polkit": None}
# Seconds a skeleton waits after the stack's last client (see quiet()).
QUIET_S = 0.3
# Replays of each skeleton per round (see rounds()).
REPLAYS = 7
ROLES = ("vfsd", "ttyd", "procd", "launchd")
COUNTED = ("sends", "recvs", "fds", "hangups", "waits", "closes")


def kv(text):
    """key=value pairs of text as a dict."""
    out = {}
    for word in text.split():
        if "=" in word:
            k, v = word.split("=", 1)
            out[k] = v
    return out


def client_argv(st, n, job="11:1"):
    """A routine runtime-reply one-shot client of n lifecycles."""
    return st.request_argv("--job", job, "--lifetime", "one-shot",
                           "--urgency", "routine", "--mode", "runtime-reply",
                           "--slot", "20", "--then", "consume", "--repeat",
                           str(n))


def lifecycles(st, n, job="11:1"):
    """Runs n lifecycles; their key=value results (fails on error)."""
    out = subprocess.run(client_argv(st, n, job), capture_output=True,
                         text=True, check=False, timeout=900)
    res = kv(out.stdout)
    if out.returncode != 0 or res.get("repeat") != str(n):
        run.fail(f"client of {n} lifecycles: exit {out.returncode}: "
                 f"{out.stdout[-300:]} {out.stderr[-300:]}")
    return res


def skel(bin_dir, pattern, copies=1):
    """One pbx-bench-skel run: its key=value results."""
    out = subprocess.run([os.path.join(bin_dir, "pbx-bench-skel"), pattern,
                          str(copies)], capture_output=True, text=True,
                         check=False, timeout=600)
    if out.returncode != 0:
        run.fail(f"pbx-bench-skel {pattern}: {out.stderr[-300:]}")
    return kv(out.stdout)


def record(st, work, rec):
    """Records rec lifecycles; writes real.pat and needed.pat; returns
    {name: (events, path, roles)} and the syscalls per role."""
    roles = {st.pid: "powerboxd"}
    roles.update(zip((p.pid for p in st.procs), ROLES))
    res, calls, types = bench_trace.record(
        roles, client_argv(st, rec), os.path.join(work, "pattern.strace"))
    if res.returncode != 0:
        run.fail(f"recorded client: exit {res.returncode}")
    evs, syscalls = bench_trace.events(calls, roles)
    out = {}
    for name, e in (("real", evs), ("needed", bench_trace.needed(evs))):
        text, names = bench_trace.pattern_text(e, types)
        path = os.path.join(work, name + ".pat")
        with open(path, "w", encoding="ascii") as f:
            f.write(text)
        out[name] = (e, path, names)
    return out, syscalls


def check_skeletons(bin_dir, pats):
    """Each skeleton replays exactly the recorded counts, or the bench
    fails."""
    for name, (evs, path, _) in pats.items():
        want = bench_trace.counts(evs)
        got = skel(bin_dir, path)
        bad = [k for k in COUNTED if int(got[k]) != want[k]]
        if bad:
            run.fail(f"the {name} skeleton differs from the recording in "
                     f"{bad}: recorded {want}, replayed {got}")


def check_replay_rules(bin_dir, work):
    """The smoke run's checks of the recorder and the replayer: a dup3
    onto a socket is that socket's close, and a replay whose receive never
    comes fails (exit 1) instead of hanging; either failing fails the
    bench."""
    dup = ("dup3(17<\\x2f\\x6d>(deleted), 64<UNIX:[501->502]>, O_CLOEXEC) "
           "= 64<\\x2f\\x6d>")
    got = bench_trace.classify(dup)
    if got is None or got[:3] != ("C", 501, 502):
        run.fail(f"a dup3 onto a socket is not its close: {got}")
    path = os.path.join(work, "stuck.pat")
    with open(path, "w", encoding="ascii") as f:
        f.write("skeleton 2 1\nchan s\nev 0 R 0 0 8 0\nev 1 R 0 1 8 0\n")
    out = subprocess.run([os.path.join(bin_dir, "pbx-bench-skel"), path],
                         capture_output=True, text=True, check=False,
                         timeout=120)
    if out.returncode != 1 or "received nothing" not in out.stderr:
        run.fail(f"a replay stuck on a receive did not fail: exit "
                 f"{out.returncode}: {out.stderr[-200:]}")


def check_needed(pats, rec):
    """The recorded pattern is the needed one (17 round trips, launchd's
    one DECISION to powerboxd per lifecycle, after the wake), or the
    bench fails: launchd sending its DECISION early again shows here."""
    real, need = pats["real"][0], pats["needed"][0]
    sent = sum(1 for e in real if e["kind"] == "S" and
               e["role"] == "launchd" and e["op"] == bench_trace.DECISION)
    if sent != rec or bench_trace.counts(real) != bench_trace.counts(need):
        run.fail(f"the recorded pattern is not the needed one: launchd sent "
                 f"{sent} DECISIONs to powerboxd in {rec} lifecycles; "
                 f"recorded {bench_trace.counts(real)}, needed "
                 f"{bench_trace.counts(need)}")


def cpu_ticks(pid):
    """utime+stime of pid in clock ticks (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        cols = f.read().rsplit(")", 1)[1].split()
    return int(cols[11]) + int(cols[12])


def rss_kib(pid):
    """VmRSS of pid in KiB."""
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def median(xs):
    """The median of xs (the upper one of an even count)."""
    xs = sorted(list(xs))
    return xs[len(xs) // 2]


def quiet():
    """Lets the stack finish what a client left (its job's reaping, the
    last grant's cleanup) before a skeleton runs on the same CPU."""
    time.sleep(QUIET_S)


def stack_cpu_ns(st):
    """CPU time (user+system, ns) powerboxd and each of the four peers
    has used, by role: the first field of /proc/PID/schedstat, the
    scheduler's exact runtime (each is one thread)."""
    out = {}
    for role, pid in zip(("powerboxd",) + ROLES,
                         [st.pid] + [p.pid for p in st.procs]):
        with open(f"/proc/{pid}/schedstat", encoding="ascii") as f:
            out[role] = int(f.read().split()[0])
    return out


def life_cpu_ns(st, n):
    """Runs n lifecycles; (their key=value results, CPU ns per lifecycle
    by role, client included). The client's own getrusage covers its
    whole process, its launch included; the stack's schedstat deltas
    cover the run, launchd's launch of the job included."""
    before = stack_cpu_ns(st)
    got = lifecycles(st, n)
    after = stack_cpu_ns(st)
    cpu = {role: (after[role] - before[role]) / n for role in after}
    cpu["client"] = float(got["cpu_ns_client"])
    return got, cpu


def launch_cpu_ns(st, runs=3):
    """CPU time (ns) all processes used for a client of one lifecycle,
    its launch included: the median of runs (rounds() counts one launch
    per round, which bench_report.cpu_all() takes out with this)."""
    got = []
    for _ in range(runs):
        got.append(sum(life_cpu_ns(st, 1)[1].values()))
        quiet()
    return median(got)


def skel_cpu_ns(got, names):
    """CPU time (ns) each role of one skeleton replay used in it, by role
    name (pbx-bench-skel's cpu_ns_roleN, CLOCK_PROCESS_CPUTIME_ID; names
    are the pattern's roles in index order)."""
    return {names[int(k[len("cpu_ns_role"):])]: int(v)
            for k, v in got.items() if k.startswith("cpu_ns_role")}


def add_cpu(acc, side, by_role, n):
    """Appends one round's CPU per lifecycle (by_role over n lifecycles)
    to acc: the total under side, each role under side:role."""
    acc.setdefault(side, []).append(sum(by_role.values()) / n)
    for role, ns in by_role.items():
        acc.setdefault(f"{side}:{role}", []).append(ns / n)


def rounds(st, bin_dir, pats, cfg):
    """Interleaved rounds: medians of the lifecycle and each skeleton,
    in ns per lifecycle, and of the CPU time their processes used per
    lifecycle ({"life": all, "life:ROLE": one role, and the same under
    each skeleton's name}: see bench_report.cpu_all())."""
    life, span, sk, cpu = [], [], {name: [] for name in pats}, {}
    for _ in range(cfg["rounds"]):
        got, by_role = life_cpu_ns(st, cfg["n"])
        add_cpu(cpu, "life", by_role, 1)
        life.append(float(got["median_ns"]))
        span.append(float(got["wall_ns_per_lifecycle"]))
        quiet()
        # The lifecycle's figure is a median over single lifecycles, each
        # shorter than another user's time slice, so a preemption moves
        # it little; a replay is one span of REC lifecycles that a
        # preemption lands in whole, so take the least of REPLAYS. Its
        # CPU time is not stretched by a preemption: take the median.
        for name, (_, path, names) in pats.items():
            reps = [skel(bin_dir, path) for _ in range(REPLAYS)]
            sk[name].append(min(int(r["ns"]) for r in reps) / cfg["rec"])
            mid = sorted(reps, key=lambda r, nm=names: sum(
                skel_cpu_ns(r, nm).values()))[len(reps) // 2]
            add_cpu(cpu, name, skel_cpu_ns(mid, names), cfg["rec"])
    return (median(life), median(span), {k: median(v) for k, v in sk.items()},
            {k: median(v) for k, v in cpu.items()})


def throughput(st, bin_dir, pats, cfg, k):
    """(lifecycles/s of k jobs at once, of k skeleton copies at once)."""
    per = cfg["per"]
    t0 = time.perf_counter()
    procs = [subprocess.Popen(client_argv(st, per, f"{300 + i}:1"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for i in range(k)]
    fails = 0
    for p in procs:
        out, _ = p.communicate(timeout=900)
        fails += p.returncode != 0 or kv(out).get("repeat") != str(per)
    wall = time.perf_counter() - t0
    quiet()
    best = min(int(skel(bin_dir, pats["real"][1], k)["ns"]) for _ in range(3))
    return (k * per / wall, fails, k * cfg["rec"] / (best / 1e9))


def polkit_line(work, cfg):
    """bench_polkit.py's line (or None in smoke runs)."""
    if cfg["polkit"] is None:
        return None
    n, r = cfg["polkit"]
    out = subprocess.run([sys.executable, os.path.join(HERE,
                                                       "bench_polkit.py"),
                          os.path.join(work, "polkit"), str(n), str(r)],
                         capture_output=True, text=True, check=False,
                         timeout=600)
    return kv(out.stdout) if out.returncode == 0 else \
        {"missing": f"error: {out.stderr.strip()[-200:]}"}


def main():
    bin_dir, work = sys.argv[1], os.path.abspath(sys.argv[2])
    cfg = SMOKE if "--smoke" in sys.argv[3:] else FULL
    cpus = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {cpus[-1]})
    os.makedirs(work, exist_ok=True)
    st = run.Stack(bin_dir, os.path.join(work, "stack"))
    res = {"cpu": cpus[-1], "load": open("/proc/loadavg",
                                         encoding="ascii").read().split()[:3]}
    try:
        res["rss_idle"] = rss_kib(st.pid)
        if cfg is SMOKE:
            check_replay_rules(bin_dir, work)
        pats, res["syscalls"] = record(st, work, cfg["rec"])
        check_skeletons(bin_dir, pats)
        check_needed(pats, cfg["rec"])
        res["life"], res["span"], res["skel"], res["allcpu"] = rounds(
            st, bin_dir, pats, cfg)
        res["allcpu"]["launch1"] = launch_cpu_ns(st)
        launchd = st.procs[3].pid
        before = (cpu_ticks(launchd), cpu_ticks(st.pid))
        lifecycles(st, cfg["long"])
        res["launchd_ticks"] = cpu_ticks(launchd) - before[0]
        res["pbx_ticks"] = cpu_ticks(st.pid) - before[1]
        res["rss_long"] = rss_kib(st.pid)
        res["skel_cpu"] = skel(bin_dir, pats["real"][1])
        res["tput"] = {k: throughput(st, bin_dir, pats, cfg, k)
                       for k in cfg["conc"]}
    finally:
        for f in st.logs.values():
            f.close()
        st.logs = {}
        st.stop()
    res["polkit"] = polkit_line(work, cfg)
    import bench_report  # pylint: disable=import-outside-toplevel
    bench_report.show(res, pats, cfg)
    return 0


if __name__ == "__main__":
    sys.exit(main())
