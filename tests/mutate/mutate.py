#!/usr/bin/env python3
"""Mutation testing of the core, the wire codec and PBX1 (docs/TESTING.md).

A test tool: never installed, never shipped. It generates one-line mutants
of the C sources of the given folders, builds each against the unit tests,
the operator tool and the simulator, and counts the mutants the tests and
a bounded simulator run fail to notice.

    mutate.py [--sample N] [--jobs N] [--threshold PCT] [--out DIR] ...
    mutate.py --list              print every mutant and exit
    mutate.py --only ID           run one mutant, keep its worker tree
    mutate.py --only ID,ID,...    run these mutants (or --only @FILE: the
                                  first word of each line of FILE)
    mutate.py --files "F F ..."   only the mutants of these source files

Operators (each mutant is one change on one line; comments, preprocessor
lines, compiled-out PBX_PLANT_* branches, _Static_assert and PBX_ASSERT
statements are never mutated):

    ror    comparison flips: < <-> <=, > <-> >=, < -> >=, > -> <=, == <-> !=
    bound  integer constant +1 and -1
    swap   an enumerator (or error code) for the next one of its enum;
           true <-> false
    del    an expression statement on one line replaced by (void)0;
    neg    the condition of an if or while wrapped in !( )

A mutant is killed when it fails to build, pbx-test fails, the simulator
fails, or any of them runs past its time limit; otherwise it survived.
Mutants listed in the equivalence file are excluded from the rate.
"""
import argparse
import concurrent.futures
import glob
import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutcache  # noqa: E402  (beside this file)
from mutgen import (all_mutants, equivalent_of, load_equivalent,  # noqa
                    sample)

DEFAULT_DIRS = ["core", "ipc", "bootstrap"]
FREE_DIRS = ["base", "sha2", "ipc", "bootstrap", "capabi", "core"]
HOSTED = ["-D_POSIX_C_SOURCE=200809L", "-D_DEFAULT_SOURCE"]
WARN = ["-std=c11", "-Wall", "-Wextra", "-Wpedantic", "-Wconversion",
        "-Wshadow", "-Wstrict-prototypes", "-Wmissing-prototypes", "-Wvla"]

# ---- building and running ---------------------------------------------------

class Build:
    """Baseline objects shared by every worker, and per-worker trees."""

    def __init__(self, args, root):
        self.args = args
        self.root = root
        self.out = os.path.abspath(args.out)
        self.flags = args.cflags.split() if args.cflags else WARN + ["-O1"]
        self.srcs = {
            "lib": split_or_glob(args.lib_srcs, [f"{d}/*.c" for d in FREE_DIRS]),
            "test": split_or_glob(args.test_srcs,
                                  ["tests/runner/pbx_test.c", "tests/*.c"]),
            "tool": split_or_glob(args.tool_srcs, ["tools/pbx/*.c"]),
            "sim": split_or_glob(args.sim_srcs, ["sim/*.c"]),
        }

    def obj(self, src):
        return os.path.join(self.out, "obj", src[:-2] + ".o")

    def compile_cmd(self, src, obj, cwd):
        hosted = [] if src in self.srcs["lib"] else HOSTED
        return ([self.args.cc, "-I.", *hosted, *self.flags, "-c",
                 os.path.join(cwd, src), "-o", obj], cwd)

    def baseline(self, jobs):
        """Compile every source once; the workers link against these."""
        stamp = os.path.join(self.out, "obj", "flags")
        flags = " ".join([self.args.cc] + self.flags)
        same = os.path.isfile(stamp) and open(stamp).read() == flags
        # pbx links the app library and the peer library (tools/pbx's
        # stack commands), so their headers count too.
        headers = [h for d in FREE_DIRS + ["sim", "tests", "tools/pbx",
                                           "peers/app", "peers/lib",
                                           "peers/common"]
                   for h in glob.glob(os.path.join(self.root, d, "*.h"))]
        headers += glob.glob(os.path.join(self.root, "base", "err", "*.def"))
        newest = max((os.path.getmtime(h) for h in headers), default=0)
        tasks = []
        for group in self.srcs.values():
            for src in group:
                obj = self.obj(src)
                os.makedirs(os.path.dirname(obj), exist_ok=True)
                if same and os.path.isfile(obj) and os.path.getmtime(obj) > \
                        max(newest, os.path.getmtime(src)):
                    continue  # up to date, as make would judge it
                tasks.append(self.compile_cmd(src, obj, self.root))
        with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
            for (cmd, _), res in zip(tasks, ex.map(
                    lambda t: run(t[0], t[1], 300), tasks)):
                if res[0] != 0:
                    sys.exit("mutate: baseline build failed:\n" + res[1])
        with open(stamp, "w") as f:
            f.write(flags)

    def link(self, wdir, mutated_src, mutant_obj,
             names=("pbx-test", "pbx", "pbx-sim")):
        """Link the named binaries (pbx-test, pbx, pbx-sim) with one object
        replaced; a mutant links pbx-sim only once its tests passed."""
        lib = [mutant_obj if s == mutated_src else self.obj(s)
               for s in self.srcs["lib"]]
        bins = {}
        for name, group in (("pbx-test", "test"), ("pbx", "tool"),
                            ("pbx-sim", "sim")):
            if name not in names:
                continue
            out = os.path.join(wdir, "bin", name)
            objs = [self.obj(s) for s in self.srcs[group]]
            rc, log = run([self.args.cc, *self.args.ldflags.split(), *objs,
                           *lib, "-o", out], wdir, 120)
            if rc != 0:
                return None, log
            bins[name] = out
        return bins, ""


def split_or_glob(value, patterns):
    if value:
        return value.split()
    return sorted(p for pat in patterns for p in glob.glob(pat))


def run(cmd, cwd, timeout, env=None, cpu_limit=None):
    """(exit status or 'timeout', output) of a command in its own group.

    With cpu_limit the command is judged by the processor time it uses
    (RLIMIT_CPU, so a loaded machine never turns a slow but correct run
    into a kill); timeout is then only a wall-clock backstop against a
    command that blocks without computing.
    """
    def limit():
        if cpu_limit is not None:
            secs = max(1, int(cpu_limit + 0.999))
            resource.setrlimit(resource.RLIMIT_CPU, (secs, secs + 5))
    try:
        p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, text=True,
                             errors="replace", start_new_session=True,
                             preexec_fn=limit)
    except OSError as e:
        return 127, str(e)
    try:
        out, _ = p.communicate(timeout=timeout)
        if p.returncode in (-signal.SIGXCPU, -signal.SIGKILL) and \
                cpu_limit is not None:
            return "timeout", out
        return p.returncode, out
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return "timeout", ""


def child_cpu_seconds():
    """Processor time (user + system) used so far by reaped children."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def copy_tree(root, dst):
    """The sources a worker builds from (its copy is mutated, never ours)."""
    if os.path.isdir(dst):
        shutil.rmtree(dst)
    for d in FREE_DIRS + ["sim", "tests", "tools"]:
        src = os.path.join(root, d)
        if os.path.isdir(src):
            shutil.copytree(src, os.path.join(dst, d),
                            ignore=shutil.ignore_patterns("*.o", "mutate"))
    os.makedirs(os.path.join(dst, "bin"), exist_ok=True)


def module_filter(path):
    """The test-name filter of a source's module: core/pbx_core_calls.c ->
    core_calls (the tests of a module are named after it)."""
    base = os.path.basename(path)[:-2]
    return base[4:] if base.startswith("pbx_") else base


FAIL_LINE = re.compile(r"^FAIL (\S+)", re.M)
OK_LINE = re.compile(r"^ok   (\S+)", re.M)


def killer_of(out, order, filters):
    """The test that failed in a pbx-test run's output: its FAIL line, or
    (a sanitizer or a signal ended the process mid-test) the test after
    the last that passed among those the filters select, in run order."""
    fail = FAIL_LINE.search(out)
    if fail:
        return fail.group(1)
    chosen = [t for t in order if not filters or
              any(f in t for f in filters)]
    oks = OK_LINE.findall(out)
    if oks and oks[-1] in chosen:
        i = chosen.index(oks[-1]) + 1
        return chosen[i] if i < len(chosen) else ""
    return chosen[0] if chosen and not oks else ""


class Runner:
    """Builds and checks mutants. The checks run cheapest-kill first: the
    tests of the mutated module and the tests that killed earlier mutants
    of the same file, then every test, then pbx-sim (linked only then);
    pbx-test stops at its first failure (PBX_TEST_FAILFAST=1). A mutant is
    killed exactly when one of them fails, as when every check ran."""

    def __init__(self, build, args):
        self.build = build
        self.args = args
        self.limits = {}
        self.tests = set()    # every test name of the unmutated build
        self.order = []       # the same, in run order
        self.killers = {}     # file -> {test name: mutants it killed}
        self.alone = {}       # filter -> passes alone on the baseline
        self.base_bins = None
        self.base_dir = None
        self.base_cwd = None
        self.klock = threading.Lock()

    def env(self, bins, wdir):
        env = dict(os.environ, PBX_BIN=bins["pbx"],
                   TMPDIR=os.path.join(wdir, "tmp"), PBX_TEST_FAILFAST="1")
        os.makedirs(env["TMPDIR"], exist_ok=True)
        return env

    def sim_checks(self, sim):
        return [
            ("sim", [sim, "--regress", "sim/regress.txt", "--steps",
                     str(self.args.sim_steps)]),
            ("sim", [sim, "--seeds", self.args.sim_seeds, "--steps",
                     str(self.args.sim_steps)]),
        ]

    def learn(self, path, killer):
        """Remember that test killer killed a mutant of path."""
        if killer:
            with self.klock:
                k = self.killers.setdefault(path, {})
                k[killer] = k.get(killer, 0) + 1

    def first_filters(self, path):
        """The filters of the first test pass for a mutant of path: its
        module's name and the (at most 16) tests that killed the most
        mutants of path so far; only filters that select a test."""
        with self.klock:
            k = dict(self.killers.get(path, {}))
        best = sorted(k, key=lambda n: (-k[n], n))[:16]
        mod = module_filter(path)
        filters = best + ([mod] if mod not in best else [])
        return [f for f in filters if self.alone_passes(f)]

    def alone_passes(self, name):
        """Whether the tests a filter selects pass on their own on the
        unmutated build (asked once per filter): only then may a failure
        of theirs in the first pass kill a mutant, so that a test that
        leans on an earlier one never kills a mutant the whole suite
        would let live."""
        with self.klock:
            known = self.alone.get(name)
        if known is not None:
            return known
        ok = any(name in t for t in self.tests)
        if ok:
            b = self.base_bins
            rc, _ = run([b["pbx-test"], name], self.base_cwd,
                        self.limits[0] * self.args.wall_factor,
                        self.env(b, self.base_dir),
                        cpu_limit=self.limits[0])
            ok = rc == 0
        with self.klock:
            self.alone[name] = ok
        return ok

    def calibrate(self, wdir):
        """Run the unmutated build; every limit is a multiple of its time."""
        bins, log = self.build.link(wdir, None, None)
        if bins is None:
            sys.exit("mutate: baseline link failed:\n" + log)
        rc, out = run([bins["pbx-test"], "--list"], wdir, 600)
        self.order = out.split() if rc == 0 else []
        self.tests = set(self.order)
        # The unmutated binaries stay, to try a first-pass filter alone.
        self.base_dir = os.path.join(self.build.out, "base")
        os.makedirs(os.path.join(self.base_dir, "bin"), exist_ok=True)
        self.base_cwd = wdir
        self.base_bins = {}
        for name, path in bins.items():
            self.base_bins[name] = os.path.join(self.base_dir, "bin", name)
            shutil.copy2(path, self.base_bins[name])
        env = self.env(bins, wdir)
        checks = [("tests", [bins["pbx-test"]])] + \
            self.sim_checks(bins["pbx-sim"])
        for i, (what, cmd) in enumerate(checks):
            c0 = child_cpu_seconds()
            rc, out = run(cmd, wdir, 600, env)
            took = child_cpu_seconds() - c0
            if rc != 0:
                sys.exit(f"mutate: the unmutated tree fails its {what} run "
                         f"({' '.join(cmd)}):\n{out[-2000:]}")
            self.limits[i] = max(self.args.min_timeout,
                                 took * self.args.timeout_factor)

    def mutant(self, m, wdir):
        """Build and test one mutant in worker tree wdir; restore the file."""
        t0 = time.monotonic()
        src = os.path.join(wdir, m["file"])
        pristine = open(src, encoding="utf-8").read()
        lines = pristine.split("\n")
        assert lines[m["line"] - 1] == m["orig"], "stale mutant"
        lines[m["line"] - 1] = m["mutated"]
        obj = os.path.join(wdir, "mutant.o")
        try:
            with open(src, "w", encoding="utf-8") as f:
                f.write("\n".join(lines))
            cmd, cwd = self.build.compile_cmd(m["file"], obj, wdir)
            rc, log = run(cmd, cwd, self.args.build_timeout)
        finally:
            with open(src, "w", encoding="utf-8") as f:
                f.write(pristine)
        if rc != 0:
            return verdict("killed", "timeout" if rc == "timeout" else
                           "build", t0)
        return self.check(m, wdir, obj, t0)

    def check(self, m, wdir, obj, t0):
        """The checks of a compiled mutant, cheapest kill first."""
        bins = self.build.link(wdir, m["file"], obj, ("pbx-test", "pbx"))[0]
        if bins is None:
            return verdict("killed", "build", t0)
        env = self.env(bins, wdir)
        first = self.first_filters(m["file"])
        passes = ([[bins["pbx-test"], *first]] if first else []) + \
            [[bins["pbx-test"]]]
        for cmd in passes:
            rc, out = run(cmd, wdir, self.limits[0] * self.args.wall_factor,
                          env, cpu_limit=self.limits[0])
            if rc == "timeout":
                return verdict("killed", "timeout", t0)
            if rc != 0:
                killer = killer_of(out, self.order, cmd[1:])
                self.learn(m["file"], killer)
                return dict(verdict("killed", "tests", t0), killer=killer)
        sim = self.build.link(wdir, m["file"], obj, ("pbx-sim",))[0]
        if sim is None:
            return verdict("killed", "build", t0)
        for i, (what, cmd) in enumerate(self.sim_checks(sim["pbx-sim"]), 1):
            rc, _ = run(cmd, wdir, self.limits[i] * self.args.wall_factor,
                        env, cpu_limit=self.limits[i])
            if rc == "timeout":
                return verdict("killed", "timeout", t0)
            if rc != 0:
                return verdict("killed", what, t0)
        return verdict("survived", "", t0)


def verdict(status, by, t0):
    return {"status": status, "by": by,
            "seconds": round(time.monotonic() - t0, 2)}


def interrupt(signum, frame):
    """SIGTERM handler: stop the run as Ctrl-C does."""
    raise KeyboardInterrupt


def open_cache(args, build, root):
    """The cached verdicts valid for today's inputs, the key function and
    the writer that appends new verdicts (both off with --cache none)."""
    path = args.cache or os.path.join(build.out, "cache.jsonl")
    if path == "none":
        return {"hits": {}, "key": lambda m: m["id"], "writer": None}
    settings = {"cc": args.cc, "cflags": build.flags,
                "ldflags": args.ldflags, "srcs": build.srcs,
                "sim_seeds": args.sim_seeds, "sim_steps": args.sim_steps,
                "limits": [args.build_timeout, args.timeout_factor,
                           args.min_timeout, args.wall_factor]}
    inputs = mutcache.inputs_hash(root, settings)
    return {"hits": mutcache.load(path),
            "key": lambda m: mutcache.mutant_key(m, inputs),
            "writer": mutcache.Writer(path)}


def jobs_from_env(default):
    """-j of the calling make (MAKEFLAGS), else MUTATE_JOBS, else default."""
    m = re.search(r"(?:^|\s)-\w*j\s*(\d+)", " " + os.environ.get("MAKEFLAGS", ""))
    if m:
        return max(1, int(m.group(1)))
    return int(os.environ.get("MUTATE_JOBS", default))


# ---- report -----------------------------------------------------------------

def summarise(results, entries, all_ids, args, seconds):
    total = len(results)
    equivalent = [r for r in results if r.get("equivalent")]
    counted = [r for r in results if not r.get("equivalent")]
    survived = [r for r in counted if r["status"] == "survived"]
    by = {}
    for r in counted:
        if r["status"] == "killed":
            by[r["by"]] = by.get(r["by"], 0) + 1
    rate = 100.0 * len(survived) / len(counted) if counted else 0.0
    stale = [r for r in equivalent if r["status"] == "killed"]
    # Only entries of files in scope (--dirs, --files) can be judged.
    def in_scope(path):
        if args.files:
            return path in args.files.split()
        return path.split("/")[0] in args.dirs.split()
    unmatched = [e for e in entries if in_scope(e["file"]) and not any(
        e["file"] == m["file"] and e["key"] in (m["id"], m["mutated"].strip())
        for m in all_ids)]
    return {"mutants": total, "counted": len(counted),
            "killed": len(counted) - len(survived), "killed_by": by,
            "survived": len(survived), "equivalent": len(equivalent),
            "survival_rate_percent": round(rate, 2),
            "threshold_percent": args.threshold,
            "sample": args.sample, "seed": args.seed,
            "sim": f"--seeds {args.sim_seeds} --steps {args.sim_steps}",
            "seconds": round(seconds, 1),
            "survivors": survived, "equivalents": equivalent,
            "stale_equivalents": stale,
            "unmatched_equivalent_entries": unmatched}


def write_report(s, out):
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "report.json"), "w") as f:
        json.dump(s, f, indent=1)
    kb = ", ".join(f"{k} {v}" for k, v in sorted(s["killed_by"].items()))
    md = ["# Mutation testing report", "",
          f"- mutants run: {s['mutants']} of {s['chosen']} chosen"
          + (f" (a sample, seed {s['seed']})"
             if s["sample"] else " (every mutant)"),
          f"- verdicts from the cache (build/mutate/cache.jsonl unless "
          f"--cache): {s['from_cache']}",
          f"- killed: {s['killed']} ({kb})",
          f"- survived: {s['survived']}",
          f"- equivalent (excluded from the rate): {s['equivalent']}",
          f"- survival rate: {s['survival_rate_percent']}% "
          f"(threshold {s['threshold_percent']}%)",
          f"- simulator: {s['sim']}; wall time {s['seconds']} s",
          (f"- PARTIAL: stopped at --max-seconds after {s['mutants']} of "
           f"{s['chosen']} mutants" if s["partial"] else
           f"- complete: every chosen mutant ran"), "",
          "## Survivors", "",
          "Each survivor is a change no test and no simulator seed noticed: "
          "add a test that fails on it, or argue it equivalent in "
          "`tests/mutate/equivalent.txt`.", ""]
    if not s["survivors"]:
        md.append("None.")
    for r in s["survivors"]:
        md += [f"- `{r['file']}:{r['line']}` {r['op']} `{r['desc']}` "
               f"(id `{r['id']}`)", "", "      -" + r["orig"].strip(),
               "      +" + r["mutated"].strip(), ""]
    md += ["", "## Equivalent mutants", ""]
    if not s["equivalents"]:
        md.append("None.")
    for r in s["equivalents"]:
        md.append(f"- `{r['file']}:{r['line']}` {r['op']} `{r['desc']}` "
                  f"({r['status']}): {r['reason']}")
    if s["stale_equivalents"] or s["unmatched_equivalent_entries"]:
        md += ["", "## Stale equivalence entries", ""]
        for r in s["stale_equivalents"]:
            md.append(f"- `{r['file']}:{r['line']}` id `{r['id']}` is killed "
                      f"({r['by']}): not equivalent, delete the entry")
        for e in s["unmatched_equivalent_entries"]:
            md.append(f"- {e['where']}: matches no mutant any more")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")


# ---- main -------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dirs", default=" ".join(DEFAULT_DIRS))
    p.add_argument("--out", default="build/mutate")
    p.add_argument("--jobs", type=int, default=0)
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threshold", type=float, default=100.0)
    p.add_argument("--equivalent", default="tests/mutate/equivalent.txt")
    p.add_argument("--cc", default=os.environ.get("CC", "cc"))
    p.add_argument("--cflags", default="")
    p.add_argument("--ldflags", default="",
                   help="link flags (the sanitizers of --cflags)")
    p.add_argument("--lib-srcs", default="")
    p.add_argument("--test-srcs", default="")
    p.add_argument("--tool-srcs", default="")
    p.add_argument("--sim-srcs", default="")
    p.add_argument("--sim-seeds", default="1..200")
    p.add_argument("--sim-steps", type=int, default=5000)
    p.add_argument("--build-timeout", type=float, default=120)
    p.add_argument("--timeout-factor", type=float, default=10)
    p.add_argument("--min-timeout", type=float, default=20)
    p.add_argument("--wall-factor", type=float, default=30)
    p.add_argument("--max-seconds", type=float, default=0,
                   help="stop starting mutants after this long; the report "
                   "covers those that ran")
    p.add_argument("--cache", default="",
                   help="the verdict cache (default OUT/cache.jsonl); "
                   "'none' runs every mutant and keeps nothing")
    p.add_argument("--list", action="store_true")
    p.add_argument("--only", default="",
                   help="mutant ids, comma or space separated, or @FILE")
    p.add_argument("--files", default="",
                   help="only mutate these files (paths from the root)")
    return p.parse_args(argv)


def only_ids(value):
    """The ids of --only: a list, or @FILE with an id first on each line."""
    if value.startswith("@"):
        with open(value[1:], encoding="utf-8") as f:
            words = [ln.split()[0] for ln in f
                     if ln.strip() and not ln.lstrip().startswith("#")]
    else:
        words = value.replace(",", " ").split()
    return set(words)


def main(argv):
    args = parse_args(argv)
    root = os.getcwd()
    mutants = all_mutants(root, args.dirs.split())
    if args.files:
        files = set(args.files.split())
        missing = files - {m["file"] for m in mutants}
        if missing:
            sys.exit(f"mutate: no mutants in {' '.join(sorted(missing))}")
        mutants = [m for m in mutants if m["file"] in files]
    if args.list:
        for m in mutants:
            print(f"{m['id']} {m['file']}:{m['line']} {m['op']} {m['desc']}")
        print(f"{len(mutants)} mutants")
        return 0
    chosen = mutants
    if args.only:
        ids = only_ids(args.only)
        chosen = [m for m in mutants if m["id"] in ids]
        unknown = ids - {m["id"] for m in chosen}
        if unknown:
            sys.exit(f"mutate: no mutant {' '.join(sorted(unknown))} "
                     "(see --list)")
    elif args.sample:
        chosen = sample(mutants, args.sample, args.seed)
    entries = load_equivalent(args.equivalent)
    t0 = time.monotonic()
    build = Build(args, root)
    cache = open_cache(args, build, root)
    todo = [m for m in chosen if cache["key"](m) not in cache["hits"]]
    jobs = args.jobs or jobs_from_env(2)
    jobs = max(1, min(jobs, len(todo) or 1))
    print(f"mutate: {len(mutants)} mutants in {args.dirs}; "
          f"{len(chosen)} chosen, {len(chosen) - len(todo)} verdicts from "
          f"the cache, running {len(todo)} on {jobs} worker(s)", flush=True)
    runner = Runner(build, args)
    for m in chosen:
        hit = cache["hits"].get(cache["key"](m))
        if hit:
            runner.learn(m["file"], hit.get("killer", ""))
    wdirs = [os.path.join(build.out, f"w{i}") for i in range(jobs)]
    if todo:
        build.baseline(jobs)
        for w in wdirs:
            copy_tree(root, w)
        runner.calibrate(wdirs[0])
    free = list(wdirs)
    lock = threading.Lock()
    results = []
    os.makedirs(build.out, exist_ok=True)
    log = open(os.path.join(build.out, "results.jsonl"), "w")

    deadline = t0 + args.max_seconds if args.max_seconds else None
    stop = threading.Event()

    def one(m):
        key = cache["key"](m)
        hit = cache["hits"].get(key)
        if hit:
            r = dict(m, status=hit["status"], by=hit["by"],
                     seconds=hit["seconds"], cached=True)
        elif stop.is_set() or (deadline and time.monotonic() > deadline):
            return None
        else:
            with lock:
                w = free.pop()
            try:
                r = dict(m, **runner.mutant(m, w))
            finally:
                with lock:
                    free.append(w)
            if cache["writer"]:
                cache["writer"].add(key, r)
        e = equivalent_of(m, entries)
        if e:
            r["equivalent"] = True
            r["reason"] = e["reason"]
        with lock:
            results.append(r)
            log.write(json.dumps(r) + "\n")
            log.flush()
            tag = r["status"] + (f" ({r['by']})" if r["by"] else "")
            print(f"mutate: [{len(results)}/{len(chosen)}] {r['file']}:"
                  f"{r['line']} {r['op']} {r['desc']}: {tag}", flush=True)
        return r

    # Run in hash order, so a run stopped by --max-seconds is a fair sample.
    order = sorted(chosen, key=lambda m: hashlib.sha1(
        f"{args.seed}:{m['id']}".encode()).hexdigest())
    # Ctrl-C and SIGTERM stop the run cleanly even when it was started in
    # the background (where a shell ignores SIGINT for it).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt)
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        try:
            list(ex.map(one, order))
        except KeyboardInterrupt:
            # Let the running mutants finish (their verdicts reach the
            # cache), start no more, and report what ran.
            stop.set()
            print("mutate: interrupted; finishing the running mutants",
                  flush=True)
    log.close()
    if cache["writer"]:
        cache["writer"].close()
    results.sort(key=lambda r: (r["file"], r["line"], r["id"]))
    s = summarise(results, entries, mutants, args, time.monotonic() - t0)
    s["chosen"] = len(chosen)
    s["from_cache"] = sum(1 for r in results if r.get("cached"))
    s["partial"] = len(results) < len(chosen)
    write_report(s, build.out)
    if len(chosen) != 1 or not args.only:
        for w in wdirs:
            shutil.rmtree(w, ignore_errors=True)
    kb = ", ".join(f"{k} {v}" for k, v in sorted(s["killed_by"].items()))
    kb = kb or "none"
    print(f"mutate: {s['mutants']} run ({s['from_cache']} verdicts from the "
          f"cache), {s['killed']} killed ({kb}), "
          f"{s['survived']} survived, {s['equivalent']} equivalent; "
          f"survival rate {s['survival_rate_percent']}% (threshold "
          f"{args.threshold}%) in {s['seconds']} s; report "
          f"{os.path.relpath(build.out)}/report.md")
    for r in s["stale_equivalents"]:
        print(f"mutate: warning: equivalent mutant {r['id']} is killed")
    for e in s["unmatched_equivalent_entries"]:
        print(f"mutate: warning: {e['where']} matches no mutant")
    if s["survival_rate_percent"] > args.threshold:
        print(f"mutate: survival rate above the threshold; see "
              f"{os.path.relpath(build.out)}/report.md")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
