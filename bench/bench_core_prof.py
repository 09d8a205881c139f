#!/usr/bin/env python3
"""Where the core's instructions per lifecycle go
(docs/bench/PROFILES.md, "Profiles of the rows not met (session 10)").

Usage: bench_core_prof.py PBX_BENCH WORK_DIR [N] [--top K]

Runs the two callgrind steps of `make bench` that give issue 23's row
"core instructions per lifecycle / codec floor" again, each once, with
callgrind's call-chain contexts on (--separate-callers), so that a
function's instructions can be told apart by who called it:

  core:  pbx-bench core --cap 1024 --n N, counting inside bench_measure*
         (as bench.sh does); an instruction is the core's when the
         innermost core entry point (pbx_core_on_public, pbx_core_step,
         pbx_core_on_reply_delivered, pbx_core_on_peer_reply) on its
         call chain lies inside any ops callback (bench_op_*) on it, so
         the fake peers' encoding and decoding are left out exactly as
         bench.sh's "core only" leaves them out (entries' inclusive cost
         minus the callbacks').
  floor: pbx-bench floor --n N, counting inside bench_floor_core_half
         and bench_floor_core_digest (the powerboxd half of the floor).

It fails unless the contexts it read add up to the dump's own total
(every instruction attributed once). It prints the totals per lifecycle
(the same figures as bench.sh's core-only and powerboxd-half columns
from the same binary), then per function the
exclusive instructions per lifecycle on each side, largest first, with
the calls per lifecycle into it on each side (C core, D floor), the core's
instructions in each function and below it (inclusive), and
the core's instructions grouped by the core entry and the first core
function below it:

  coreprof core_ir=C floor_ir=F ratio=R
  fn NAME core=A floor=B calls=C/D
  incl NAME core=A
  under ENTRY/CALLEE core=A

Every count is exact: the same binary gives the same numbers.
"""
import os
import re
import subprocess
import sys

ENTRIES = ("pbx_core_on_public", "pbx_core_step",
           "pbx_core_on_reply_delivered", "pbx_core_on_peer_reply")
OPS_PREFIX = "bench_op_"
SUFFIX = re.compile(r"\.(constprop|isra|part|cold)[.0-9a-z]*$")


def fail(msg):
    """Stop with a message naming this script."""
    sys.stderr.write(f"bench_core_prof: {msg}\n")
    sys.exit(1)


def base(name):
    """A function name without gcc's clone suffixes."""
    return SUFFIX.sub("", name)


def run_cg(bench, out, toggles, args):
    """Run pbx-bench ARGS under callgrind with call-chain contexts."""
    cmd = ["valgrind", "--tool=callgrind", "--collect-atstart=no",
           "--separate-callers=60", f"--callgrind-out-file={out}"]
    cmd += [f"--toggle-collect={t}" for t in toggles]
    res = subprocess.run(cmd + [bench] + args, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True, check=False)
    if res.returncode != 0:
        fail(f"callgrind failed: {res.stderr[-2000:]}")


def exclusive_by_context(path):
    """Each call-chain context's exclusive Ir and the calls made into it:
    ({chain: Ir}, {chain: calls}), each chain innermost first, as
    callgrind's --separate-callers names it."""
    names, cost, calls = {}, {}, {}
    ctx, callee, skip, total = None, None, False, -1
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(("fn=", "cfn=")):
                # A name is given once, at its first use in either form.
                m = re.match(r"c?fn=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
                if m.group(2) is not None:
                    names[m.group(1)] = tuple(m.group(2).split("'"))
                if line.startswith("fn="):
                    ctx = names[m.group(1)]
                else:
                    callee = names[m.group(1)]
            elif line.startswith("calls="):
                # The next cost line is the call's inclusive cost.
                skip = True
                calls[callee] = calls.get(callee, 0) + int(line[6:].split()[0])
            elif line[:1].isdigit() or line[:1] in "+-*":
                if skip:
                    skip = False
                    continue
                fields = line.split()
                if ctx is not None and len(fields) >= 2:
                    cost[ctx] = cost.get(ctx, 0) + int(fields[-1])
            elif line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
    if sum(cost.values()) != total:
        fail(f"{path}: contexts add up to {sum(cost.values())}, "
             f"the dump's total is {total}")
    return cost, calls


def core_owner(chain):
    """(entry, first core function below it) when the innermost entry
    point or ops callback on the chain is an entry point, else None."""
    for i, fn in enumerate(chain):
        b = base(fn)
        if b.startswith(OPS_PREFIX):
            return None
        if b in ENTRIES:
            below = base(chain[i - 1]) if i > 0 else "(itself)"
            return b, below
    return None


def core_inclusive(cost):
    """Per function name, the core's instructions spent in it or below
    it (each context counted once per function, however deep the
    recursion), up to the innermost entry point."""
    out = {}
    for chain, ir in cost.items():
        if core_owner(chain) is None:
            continue
        seen = set()
        for fn in chain:
            b = base(fn)
            if b not in seen:
                seen.add(b)
                out[b] = out.get(b, 0) + ir
            if b in ENTRIES:
                break
    return out


def per_fn(cost, keep):
    """Per function name, the sum of cost's values over the contexts
    keep accepts."""
    out = {}
    for chain, ir in cost.items():
        if keep(chain):
            name = base(chain[0])
            out[name] = out.get(name, 0) + ir
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    top = 40
    if "--top" in sys.argv:
        top = int(sys.argv[sys.argv.index("--top") + 1])
        args.remove(str(top))
    if len(args) < 2:
        fail("usage: bench_core_prof.py PBX_BENCH WORK_DIR [N] [--top K]")
    bench, work = args[0], args[1]
    n = int(args[2]) if len(args) > 2 else 200
    os.makedirs(work, exist_ok=True)
    core_out = os.path.join(work, "cg.coreprof")
    floor_out = os.path.join(work, "cg.floorprof")
    run_cg(bench, core_out, ["bench_measure*"],
           ["core", "--cap", "1024", "--n", str(n)])
    run_cg(bench, floor_out, ["bench_floor_core_half",
                              "bench_floor_core_digest"],
           ["floor", "--n", str(n)])
    core_cost, core_calls = exclusive_by_context(core_out)
    floor_cost, floor_calls = exclusive_by_context(floor_out)
    core = per_fn(core_cost, lambda c: core_owner(c) is not None)
    floor = per_fn(floor_cost, lambda c: True)
    ncore = per_fn(core_calls, lambda c: core_owner(c) is not None)
    nfloor = per_fn(floor_calls, lambda c: True)
    core_ir, floor_ir = sum(core.values()), sum(floor.values())
    print(f"coreprof core_ir={core_ir / n:.0f} floor_ir={floor_ir / n:.0f} "
          f"ratio={core_ir / floor_ir:.2f}")
    names = sorted(set(core) | set(floor),
                   key=lambda k: -max(core.get(k, 0), floor.get(k, 0)))
    for name in names[:top]:
        print(f"fn {name} core={core.get(name, 0) / n:.0f} "
              f"floor={floor.get(name, 0) / n:.0f} "
              f"calls={ncore.get(name, 0) / n:g}/{nfloor.get(name, 0) / n:g}")
    for name, ir in sorted(core_inclusive(core_cost).items(),
                           key=lambda kv: -kv[1])[:top]:
        print(f"incl {name} core={ir / n:.0f}")
    under = {}
    for chain, ir in core_cost.items():
        owner = core_owner(chain)
        if owner is not None:
            under[owner] = under.get(owner, 0) + ir
    for (entry, below), ir in sorted(under.items(), key=lambda kv: -kv[1]):
        print(f"under {entry}/{below} core={ir / n:.0f}")


if __name__ == "__main__":
    main()
