#!/usr/bin/env python3
"""make deps-check: editing a header rebuilds exactly the objects and
programs that include it (issue 22 item 7, docs/TESTING.md "Header
dependencies").

Usage: deps_check.py BUILD_DIR [--bins "PROGRAM..."] [MAKE ARGUMENT...]

Run after a full build (mk/deps.mk builds first). It finds every object
under BUILD_DIR's object roots (OBJ_ROOTS: the hosted programs, their
tests, the freestanding images and the fuzz harnesses' objects), takes
the programs compiled in one command from --bins (their .d is the
program's path plus ".d"), and checks:

1. every object and program has its dependency file (.d) beside it,
   naming it and no file under BUILD_DIR: a compile rule that drops -MMD
   (or a one-command program's deps_many line) leaves it without one, and
   a planted simulator whose .d names its copy of core/ (not core/ itself)
   would miss an edit of core/, and both fail here;
2. nothing is out of date (`make -n` over every object and program
   prints no compile), so what follows measures only the header;
3. for each header and .def file the tree tracks, `make -n -W HEADER`
   over every object and program compiles exactly those whose .d names
   that header: none missing (a rule that does not include its .d, or a
   dependency the compiler saw that make ignores) and none extra (a rule
   whose blanket header list rebuilds what never includes it).

It prints one line per failing header (missing and extra objects) and a
summary, and exits 1 on any failure. The make runs use two workers.
"""

import concurrent.futures
import os
import re
import subprocess
import sys

OBJ_ROOTS = ("obj", "powerboxd", "fuzz-obj", "afl-obj")
# A compile's output as make -n prints it ("... -c SRC -o OBJ", or
# "... SRC... -o PROGRAM").
OUT_RE = re.compile(r"\s-o\s+(\S+)(?:\s|$)")
# An archive's update as make -n prints it ("ar rcs LIB.a OBJ...").
AR_RE = re.compile(r"^\S*ar\s+\S+\s+(\S+\.a)\s")


def objects(build):
    """Every .o under the object roots of build, sorted."""
    found = []
    for root in OBJ_ROOTS:
        top = os.path.join(build, root)
        for d, _, files in os.walk(top):
            found.extend(os.path.join(d, f) for f in files
                         if f.endswith(".o"))
    return sorted(found)


def parse_d(path, target):
    """The prerequisites a compiler-written .d file gives target: the
    union of its rules for target (one per source when one command
    compiled several: deps_many), none of the -MP phony rules."""
    with open(path, encoding="utf-8") as f:
        text = f.read().replace("\\\n", " ")
    prereqs = []
    for line in text.splitlines():
        head, colon, rest = line.partition(":")
        if colon and head.strip() == target:
            prereqs.extend(rest.split())
    return prereqs


def dep_file(path):
    """The .d beside an object (x.o: x.d) or a program (p: p.d)."""
    return path[:-2] + ".d" if path.endswith(".o") else path + ".d"


def dependencies(targets, build):
    """{object or program: set of tree-relative prerequisites} from each
    .d, and the list of problems (missing or foreign .d files, and a .d
    naming a file under the build directory: a copy, such as a planted
    simulator's core/, whose source an edit would not reach)."""
    deps, problems = {}, []
    inside = os.path.normpath(build) + os.sep
    for o in targets:
        d = dep_file(o)
        if not os.path.exists(d):
            problems.append(f"{o}: no dependency file {d} (rule without "
                            f"-MMD, or built before its rule had it: remove "
                            f"{o} once)")
            continue
        prereqs = parse_d(d, o)
        if not prereqs:
            problems.append(f"{d}: names no prerequisite of {o}")
            continue
        copies = sorted({p for p in prereqs
                        if os.path.normpath(p).startswith(inside)})
        if copies:
            problems.append(f"{d}: names {copies[0]} ({len(copies)} file(s) "
                            f"under {build}): not the source it came from")
            continue
        deps[o] = {p for p in prereqs if not os.path.isabs(p)}
    return deps, problems


def rebuilt(make, objs, header):
    """The objects and programs `make -n` would compile (header: as if
    just edited), and those of them that are programs relinked because an
    object or archive they link is rebuilt (a program of --bins that
    links objects: its .d names only its own source's headers)."""
    argv = list(make) + ["-n"] + (["-W", header] if header else []) + objs
    out = subprocess.run(argv, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"deps-check: FAIL: {' '.join(argv[:4])} ... "
                         f"exited {out.returncode}:\n{out.stderr[-2000:]}")
    wanted, found, inputs, remade = set(objs), set(), {}, set()
    # A recipe line continued with a backslash is one command.
    for line in out.stdout.replace("\\\n", " ").splitlines():
        words = line.split()
        ar = AR_RE.match(line)
        if ar:
            remade.add(ar.group(1))
        for m in OUT_RE.findall(line):
            remade.add(m)
            if m in wanted:
                found.add(m)
                inputs[m] = {w for w in words if w != m
                             and w.endswith((".o", ".a"))}
    relinked = {b for b in found if inputs[b] & remade}
    return found, relinked


def tracked_headers():
    """Every header and error table the tree tracks."""
    out = subprocess.run(["git", "ls-files", "*.h", "*.def"],
                         capture_output=True, text=True, check=True)
    return sorted(out.stdout.split())


def main(argv):
    if len(argv) < 2:
        raise SystemExit(__doc__)
    build, rest, bins = argv[1], argv[2:], []
    if rest[:1] == ["--bins"] and len(rest) > 1:
        bins, rest = sorted(set(rest[1].split())), rest[2:]
    make = ["make", "--no-print-directory"] + rest
    objs = objects(build)
    if not objs:
        raise SystemExit(f"deps-check: FAIL: no object under {build}")
    missing_bins = [b for b in bins if not os.path.exists(b)]
    if missing_bins:
        raise SystemExit(f"deps-check: FAIL: not built: {missing_bins[:3]}")
    objs = sorted(set(objs) | set(bins))
    deps, problems = dependencies(objs, build)
    stale, _ = rebuilt(make, objs, None)
    if stale:
        problems.append(f"{len(stale)} target(s) out of date before any "
                        f"header is touched, e.g. {sorted(stale)[0]}")
    for p in problems:
        print(f"deps-check: {p}")
    if problems:
        raise SystemExit("deps-check: FAIL")
    headers = tracked_headers()
    bad = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        got = dict(zip(headers, pool.map(
            lambda h: rebuilt(make, objs, h), headers)))
    unused = 0
    for h in headers:
        want = {o for o, ds in deps.items() if h in ds}
        unused += not want
        found, relinked = got[h]
        missing = want - found
        extra = found - want - relinked
        if missing or extra:
            bad += 1
            print(f"deps-check: {h}: {len(want)} dependent(s); "
                  f"not rebuilt {sorted(missing)[:3]}"
                  f"{'...' if len(missing) > 3 else ''} "
                  f"({len(missing)}), rebuilt needlessly "
                  f"{sorted(extra)[:3]}{'...' if len(extra) > 3 else ''} "
                  f"({len(extra)})")
    print(f"deps-check: {len(headers)} header(s) over "
          f"{len(objs) - len(bins)} object(s) and {len(bins)} one-command "
          f"program(s), {unused} included by none; {bad} wrong")
    if bad:
        raise SystemExit("deps-check: FAIL")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
