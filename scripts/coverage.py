#!/usr/bin/env python3
"""Branch coverage of the core under the simulator (make coverage).

    coverage.py BIN PROFDATA [--reasons FILE] [--check]
                [--unit-bin TESTBIN] [--out DIR]

BIN is a pbx-sim built with clang's source-based coverage
(-fprofile-instr-generate -fcoverage-mapping) and PROFDATA the merged
profile of its run. llvm-cov export gives, for every condition of
core/*.c (each operand of && and ||, each if, loop and ?: test, and the
test inside every PBX_ASSERT), how often it was true and how often false;
each of the two arms counts as one branch. The report (DIR/report.md,
default build/coverage) gives branches taken per file and lists every arm
never taken, by file:line:column, function, arm and condition, with the
reason the reasons file gives for it.

The reasons file (sim/coverage-reasons.txt) has one entry per line:

    FILE | FUNCTION | TEXT | ARM | REASON

FILE is a core path or *, FUNCTION a function name or *, TEXT a substring
of the condition's source (whitespace collapsed; the special TEXT
PBX_ASSERT names every condition inside an assertion), optionally ending in
" #N" for the Nth such condition of the function, ARM true, false or both,
and REASON (no "|" in it) starts with its kind: "assert:" (an assertion's
failing arm), "defensive:" (unreachable, and why), "unit: TEST" (reached by
that unit test, which --check verifies), "model:" (the simulator does not
model what it takes, and why), "budget:" (modelled, but not met within the
CI budget) or "bug:" (a core bug keeps it unreached). An empty TEXT names
every unreached condition of the function.

With --check the exit status is 1 when any unreached arm has no reason,
when an entry (other than an assertion entry) names no condition or names
an arm that was reached (its reason would be false), or, given --unit-bin
(a coverage build of pbx-test), when a "unit:" entry's test does not
exist, does not select exactly one test, or does not reach every arm the
entry names when run alone. Without --check it only reports.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

KINDS = ("assert:", "defensive:", "unit:", "model:", "budget:", "bug:")


def norm(text):
    """Collapses whitespace so a TEXT pattern survives reformatting."""
    return " ".join(text.split())


def region_text(src, ls, cs, le, ce):
    """Returns the source text of a region (1-based, end column exclusive)."""
    if not src or ls < 1 or le > len(src):
        return ""
    if ls == le:
        return src[ls - 1][cs - 1:ce - 1]
    parts = [src[ls - 1][cs - 1:]]
    parts.extend(src[ls:le - 1])
    parts.append(src[le - 1][:ce - 1])
    return "\n".join(parts)


def export(binary, profdata, sources):
    """Runs llvm-cov export and returns its first data object."""
    out = subprocess.run(
        ["llvm-cov", "export", binary, "-instr-profile", profdata] + sources,
        check=True, capture_output=True, text=True).stdout
    return json.loads(out)["data"][0]


def functions_of(data, root):
    """Maps each core file to [(first line, last line, name)]."""
    funcs = {}
    for fn in data.get("functions", []):
        if not fn.get("regions") or not fn.get("filenames"):
            continue
        name = os.path.relpath(fn["filenames"][0], root)
        r = fn["regions"][0]
        # A static function's name carries its file: "file.c:name".
        fname = fn["name"].rsplit(":", 1)[-1]
        funcs.setdefault(name, []).append((r[0], r[2], fname))
    return funcs


def function_at(funcs, name, line):
    """Names the function of file name that holds line."""
    for first, last, fname in funcs.get(name, []):
        if first <= line <= last:
            return fname
    return "?"


def conditions(data, root):
    """Returns every condition of core/*.c as a dict, in source order."""
    funcs = functions_of(data, root)
    out = []
    for fd in data["files"]:
        name = os.path.relpath(fd["filename"], root)
        if not name.startswith("core/") or not name.endswith(".c"):
            continue
        with open(os.path.join(root, name), encoding="utf-8") as f:
            src = f.read().split("\n")
        seen = set()
        for b in fd.get("branches", []):
            key = (b[0], b[1], b[2], b[3])
            if key in seen:
                continue
            seen.add(key)
            out.append({"file": name, "line": b[0], "col": b[1],
                        "text": norm(region_text(src, *b[:4])),
                        "true": b[4], "false": b[5], "assert": False})
        for e in fd.get("expansions", []):
            sr = e["source_region"]
            macro = norm(region_text(src, *sr[:4]))
            call = norm(src[sr[0] - 1]) if 0 < sr[0] <= len(src) else ""
            for k, b in enumerate(e.get("branches", [])):
                key = ("x", sr[0], sr[1], k)
                if key in seen:
                    continue
                seen.add(key)
                out.append({"file": name, "line": sr[0], "col": sr[1],
                            "text": call, "true": b[4], "false": b[5],
                            "assert": macro == "PBX_ASSERT"})
    out.sort(key=lambda c: (c["file"], c["line"], c["col"]))
    for c in out:
        c["func"] = function_at(funcs, c["file"], c["line"])
    return out


def parse_reasons(path):
    """Reads the reasons file; returns (entries, errors)."""
    entries, errors = [], []
    if path is None or not os.path.exists(path):
        return entries, errors
    with open(path, encoding="utf-8") as f:
        for n, raw in enumerate(f, 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            # TEXT may hold "|" (C's or): FILE and FUNCTION are split off
            # the left, ARM and REASON (which holds no "|") off the right.
            head = line.split("|", 2)
            parts = head[:2] + (head[2].rsplit("|", 2) if len(head) == 3
                                else [])
            parts = [p.strip() for p in parts]
            if len(parts) != 5 or parts[3] not in ("true", "false", "both"):
                errors.append(f"{path}:{n}: not FILE | FUNCTION | TEXT | "
                              f"ARM | REASON with ARM true, false or both")
                continue
            if not parts[4].startswith(KINDS):
                errors.append(f"{path}:{n}: reason must start with one of "
                              f"{', '.join(KINDS)}")
                continue
            text, nth = parts[2], 0
            m = re.match(r"^(.*\S)\s+#(\d+)$", text)
            if m:
                text, nth = m.group(1), int(m.group(2))
            entries.append({"where": f"{path}:{n}", "file": parts[0],
                            "func": parts[1], "text": norm(text), "nth": nth,
                            "arm": parts[3], "reason": parts[4],
                            "hits": []})
    return entries, errors


def entry_conditions(entry, conds):
    """Returns the conditions an entry names (its Nth match if #N)."""
    found = []
    for c in conds:
        if entry["file"] not in ("*", c["file"]):
            continue
        if entry["func"] not in ("*", c["func"]):
            continue
        if entry["text"] == "PBX_ASSERT":
            if c["assert"]:
                found.append(c)
        elif not c["assert"] and entry["text"] in c["text"]:
            found.append(c)
    if entry["nth"] > 0:
        found = found[entry["nth"] - 1:entry["nth"]]
    return found


def arms(entry):
    """The arms an entry speaks for."""
    return ("true", "false") if entry["arm"] == "both" else (entry["arm"],)


def match_reasons(conds, entries):
    """Attaches to every unreached arm the first entry that names it;
    returns the list of problems with entries (for --check)."""
    problems = []
    for e in entries:
        named = entry_conditions(e, conds)
        if not named and e["text"] != "PBX_ASSERT":
            problems.append(f"{e['where']}: names no condition")
        wild = e["text"] in ("", "PBX_ASSERT")
        for c in named:
            for arm in arms(e):
                if c[arm] > 0 and not wild:
                    problems.append(
                        f"{e['where']}: {c['file']}:{c['line']}:{c['col']} "
                        f"{arm} arm was reached {c[arm]} time(s), but the "
                        f"entry says: {e['reason']}")
                elif c[arm] == 0 and arm not in c.setdefault("why", {}):
                    c["why"][arm] = e
                    e["hits"].append((c, arm))
        if named and wild and not e["hits"]:
            problems.append(f"{e['where']}: covers no unreached arm any more")
    return problems


def unit_check(entries, unit_bin, root):
    """Runs each unit: entry's test alone under coverage; returns problems."""
    problems = []
    listed = subprocess.run([unit_bin, "--list"], capture_output=True,
                            text=True, check=False).stdout.split()
    cache = {}
    core = sorted(os.path.join(root, "core", f)
                  for f in os.listdir(os.path.join(root, "core"))
                  if f.endswith(".c"))
    for e in entries:
        if not e["reason"].startswith("unit:") or not e["hits"]:
            continue
        test = e["reason"][len("unit:"):].split()[0].rstrip(",;.:")
        selected = [t for t in listed if test in t]
        if test not in listed or len(selected) != 1:
            problems.append(f"{e['where']}: unit test {test} does not exist "
                            f"or selects {len(selected)} tests")
            continue
        if test not in cache:
            with tempfile.TemporaryDirectory() as tmp:
                raw = os.path.join(tmp, "t.profraw")
                prof = os.path.join(tmp, "t.profdata")
                env = dict(os.environ, LLVM_PROFILE_FILE=raw)
                run = subprocess.run([unit_bin, test], env=env, cwd=root,
                                     capture_output=True, text=True,
                                     check=False)
                if run.returncode != 0:
                    problems.append(f"{e['where']}: unit test {test} fails")
                    cache[test] = None
                    continue
                subprocess.run(["llvm-profdata", "merge", "-o", prof, raw],
                               check=True)
                cache[test] = conditions(export(unit_bin, prof, core), root)
        got = cache[test]
        if got is None:
            continue
        index = {(c["file"], c["line"], c["col"], c["text"], c["assert"]): c
                 for c in got}
        for c, arm in e["hits"]:
            u = index.get((c["file"], c["line"], c["col"], c["text"],
                           c["assert"]))
            if u is None or u[arm] == 0:
                problems.append(f"{e['where']}: unit test {test} does not "
                                f"reach {c['file']}:{c['line']}:{c['col']} "
                                f"{arm} arm")
    return problems


def write_report(conds, out_dir):
    """Writes report.md; returns (taken, total, unreasoned arms)."""
    files = {}
    missing = []
    for c in conds:
        rec = files.setdefault(c["file"], [0, 0])
        for arm in ("true", "false"):
            rec[1] += 1
            if c[arm] > 0:
                rec[0] += 1
            else:
                missing.append((c, arm))
    taken = sum(r[0] for r in files.values())
    total = sum(r[1] for r in files.values())
    pct = 100.0 * taken / total if total else 0.0
    lines = ["# Branch coverage of core/ under the simulator", "",
             f"{taken} of {total} branches taken ({pct:.1f}%): every "
             f"condition's true and false arm, assertions included.", "",
             "| file | taken | total |", "|---|---:|---:|"]
    for name, r in sorted(files.items()):
        lines.append(f"| {name} | {r[0]} | {r[1]} |")
    lines += ["", "## Arms never taken, each with its reason", ""]
    bare = []
    kinds = {}
    for c, arm in missing:
        e = c.get("why", {}).get(arm)
        reason = e["reason"] if e else "NO REASON"
        kind = reason.split(":", 1)[0] if e else "none"
        kinds[kind] = kinds.get(kind, 0) + 1
        where = f"{c['file']}:{c['line']}:{c['col']}"
        lines.append(f"- {where} `{c['func']}` {arm} of `{c['text']}`"
                     f"{' (assertion)' if c['assert'] else ''}: {reason}")
        if e is None:
            bare.append(f"{where} {c['func']} {arm} of {c['text']}")
    summary = ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
    lines.insert(3, f"Arms never taken, by reason: {summary or 'none'}.")
    lines.insert(4, "")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.md"), "w",
              encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return taken, total, bare, summary


def main(argv):
    args = {"--reasons": None, "--unit-bin": None, "--out": "build/coverage"}
    pos, check, i = [], False, 0
    while i < len(argv):
        if argv[i] == "--check":
            check = True
        elif argv[i] in args and i + 1 < len(argv):
            args[argv[i]] = argv[i + 1]
            i += 1
        else:
            pos.append(argv[i])
        i += 1
    if len(pos) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = os.getcwd()
    core = sorted(os.path.join(root, "core", f)
                  for f in os.listdir("core") if f.endswith(".c"))
    conds = conditions(export(pos[0], pos[1], core), root)
    entries, problems = parse_reasons(args["--reasons"])
    problems += match_reasons(conds, entries)
    if check and args["--unit-bin"]:
        problems += unit_check(entries, args["--unit-bin"], root)
    taken, total, bare, summary = write_report(conds, args["--out"])
    pct = 100.0 * taken / total if total else 0.0
    print(f"coverage: {taken} of {total} core branches taken ({pct:.1f}%); "
          f"unreached by reason: {summary or 'none'}; report "
          f"{args['--out']}/report.md")
    if not check:
        return 0
    for b in bare:
        print(f"coverage-check: no reason: {b}")
    for p in problems:
        print(f"coverage-check: {p}")
    if bare or problems:
        print(f"coverage-check: {len(bare)} unreached arm(s) without a "
              f"reason, {len(problems)} problem(s) with the reasons")
        return 1
    print("coverage-check: every unreached arm has a reason that holds")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
