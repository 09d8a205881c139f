#!/usr/bin/env python3
"""Branch coverage of the core under the simulator (make coverage).

Reads the gcov JSON files gcc wrote for core/*.c after a simulator run and
writes build/coverage/report.md: per file, branches taken at least once
out of all, and every branch never taken (file:line and the source line),
so that each can be reached by a fault mix or argued unreachable. Exits 0;
it is a report, not a gate.
"""
import glob
import gzip
import json
import os
import sys


def main():
    out_dir = sys.argv[1]
    files = {}
    for path in sorted(glob.glob(os.path.join(out_dir, "*.gcov.json.gz"))):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
        for fd in data.get("files", []):
            name = os.path.relpath(fd["file"], os.getcwd())
            if not name.startswith("core/"):
                continue
            rec = files.setdefault(name, {"total": 0, "taken": 0, "missed": []})
            for line in fd.get("lines", []):
                for b in line.get("branches", []):
                    rec["total"] += 1
                    if b.get("count", 0) > 0:
                        rec["taken"] += 1
                    else:
                        rec["missed"].append(line["line_number"])
    total = sum(r["total"] for r in files.values())
    taken = sum(r["taken"] for r in files.values())
    lines = ["# Branch coverage of core/ under the simulator", ""]
    pct = 100.0 * taken / total if total else 0.0
    lines.append(f"{taken} of {total} branches taken ({pct:.1f}%).")
    lines.append("")
    lines.append("| file | taken | total |")
    lines.append("|---|---:|---:|")
    for name, r in sorted(files.items()):
        lines.append(f"| {name} | {r['taken']} | {r['total']} |")
    lines.append("")
    lines.append("## Branches never taken (file:line, source)")
    lines.append("")
    for name, r in sorted(files.items()):
        src = []
        if os.path.exists(name):
            with open(name, encoding="utf-8") as f:
                src = f.read().split("\n")
        for ln in sorted(set(r["missed"])):
            text = src[ln - 1].strip() if 0 < ln <= len(src) else ""
            n = r["missed"].count(ln)
            lines.append(f"- {name}:{ln} ({n} branch(es)): `{text}`")
    os.makedirs("build/coverage", exist_ok=True)
    with open("build/coverage/report.md", "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    print(f"coverage: {taken} of {total} core branches taken ({pct:.1f}%); "
          f"report build/coverage/report.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
