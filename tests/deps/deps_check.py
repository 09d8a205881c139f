#!/usr/bin/env python3
"""make deps-check: editing a header rebuilds exactly the objects that
include it (issue 22 item 7, docs/TESTING.md "Header dependencies").

Usage: deps_check.py BUILD_DIR [MAKE ARGUMENT...]

Run after a full build (mk/deps.mk builds first). It finds every object
under BUILD_DIR/obj and BUILD_DIR/powerboxd (the hosted programs, their
tests and the freestanding images), and checks:

1. every object has its dependency file (.d) beside it, naming that
   object and its own source: a compile rule that drops -MMD leaves an
   object without one, and fails here;
2. nothing is out of date (`make -n` over every object prints no
   compile), so what follows measures only the header;
3. for each header and .def file the tree tracks, `make -n -W HEADER`
   over every object compiles exactly the objects whose .d names that
   header: none missing (a rule that does not include its .d, or a
   dependency the compiler saw that make ignores) and none extra (a rule
   whose blanket header list rebuilds objects that never include it).

It prints one line per failing header (missing and extra objects) and a
summary, and exits 1 on any failure. The make runs use two workers.
"""

import concurrent.futures
import os
import re
import subprocess
import sys

OBJ_ROOTS = ("obj", "powerboxd")
# A compile's output as make -n prints it ("... -c SRC -o OBJ").
OUT_RE = re.compile(r"\s-o\s+(\S+\.o)(?:\s|$)")


def objects(build):
    """Every .o under the object roots of build, sorted."""
    found = []
    for root in OBJ_ROOTS:
        top = os.path.join(build, root)
        for d, _, files in os.walk(top):
            found.extend(os.path.join(d, f) for f in files
                         if f.endswith(".o"))
    return sorted(found)


def parse_d(path):
    """(target, prerequisites) of a compiler-written .d file: its first
    rule only (the -MP phony rules that follow name no object)."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    first = text.split("\n", 1)[0]
    if ":" not in first:
        return None, []
    target, prereqs = first.split(":", 1)
    return target.strip(), prereqs.split()


def dependencies(objs):
    """{object: set of tree-relative prerequisites} from each .d, and the
    list of problems (missing or foreign .d files)."""
    deps, problems = {}, []
    for o in objs:
        d = o[:-2] + ".d"
        if not os.path.exists(d):
            problems.append(f"{o}: no dependency file {d} (rule without -MMD?)")
            continue
        target, prereqs = parse_d(d)
        if target != o or not prereqs:
            problems.append(f"{d}: names {target!r}, not {o}")
            continue
        deps[o] = {p for p in prereqs if not os.path.isabs(p)}
    return deps, problems


def rebuilt(make, objs, header):
    """The objects `make -n` would compile (header: as if just edited)."""
    argv = list(make) + ["-n"] + (["-W", header] if header else []) + objs
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"deps-check: FAIL: {' '.join(argv[:4])} ... "
                         f"exited {out.returncode}:\n{out.stderr[-2000:]}")
    found = set()
    for line in out.stdout.splitlines():
        found.update(m for m in OUT_RE.findall(line) if m in objs)
    return found


def tracked_headers():
    """Every header and error table the tree tracks."""
    out = subprocess.run(["git", "ls-files", "*.h", "*.def"],
                         capture_output=True, text=True, check=True)
    return sorted(out.stdout.split())


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    build, make = argv[1], ["make", "--no-print-directory"] + argv[2:]
    objs = objects(build)
    if not objs:
        raise SystemExit(f"deps-check: FAIL: no object under {build}")
    deps, problems = dependencies(objs)
    stale = rebuilt(make, objs, None)
    if stale:
        problems.append(f"{len(stale)} object(s) out of date before any "
                        f"header is touched, e.g. {sorted(stale)[0]}")
    for p in problems:
        print(f"deps-check: {p}")
    if problems:
        raise SystemExit("deps-check: FAIL")
    headers = tracked_headers()
    objset = set(objs)
    bad = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        got = dict(zip(headers, pool.map(
            lambda h: rebuilt(make, objs, h) & objset, headers)))
    unused = 0
    for h in headers:
        want = {o for o, ds in deps.items() if h in ds}
        unused += not want
        missing, extra = want - got[h], got[h] - want
        if missing or extra:
            bad += 1
            print(f"deps-check: {h}: {len(want)} dependent(s); "
                  f"not rebuilt {sorted(missing)[:3]}"
                  f"{'...' if len(missing) > 3 else ''} "
                  f"({len(missing)}), rebuilt needlessly "
                  f"{sorted(extra)[:3]}{'...' if len(extra) > 3 else ''} "
                  f"({len(extra)})")
    print(f"deps-check: {len(headers)} header(s) over {len(objs)} "
          f"object(s), {unused} included by none; {bad} wrong")
    if bad:
        raise SystemExit("deps-check: FAIL")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
