#!/usr/bin/env python3
"""Fail when a test a doc section cites does not exist.

Usage: seedrows_check.py [FILE SECTION]...   (default: docs/STATUS.md's
"Every seed row on the host")
       seedrows_check.py --tables FILE       (every table row of FILE;
reports misses, for a doc whose tables also name functions and targets)

Every backquoted span in the section must be one of: a test name
registered with PBX_TEST (or SHA2_PATH_TEST) in a C file under tests/,
a row name of the lying-peer table (X(liar_..., ...) in tests/e2e/), a
scenario of tests/e2e/run.py's SCENARIOS table, or a path that exists in
the tree. A misspelt name, or a test renamed or deleted after the doc
cited it, fails the check with the name and its line.
"""
import ast
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT = (("docs/STATUS.md", "Every seed row on the host"),)
TEST_RE = re.compile(r"\b(?:PBX_TEST|SHA2_PATH_TEST)\((\w+)\)")
ROW_RE = re.compile(r"\bX\((liar_\w+),")
SPAN_RE = re.compile(r"`([^`]+)`")


def c_test_names():
    """Every PBX_TEST and lying-peer row name in the C files of tests/."""
    names = set()
    for top, _dirs, files in os.walk(os.path.join(ROOT, "tests")):
        for f in files:
            if not f.endswith((".c", ".h")):
                continue
            with open(os.path.join(top, f), encoding="utf-8") as fh:
                text = fh.read()
            names.update(TEST_RE.findall(text))
            names.update(ROW_RE.findall(text))
    names.discard("name")  # the macros' own parameter
    return names


def scenario_names():
    """The keys of run.py's SCENARIOS dict, read without importing it."""
    path = os.path.join(ROOT, "tests", "e2e", "run.py")
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read(), path)
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                and any(getattr(t, "id", "") == "SCENARIOS"
                        for t in node.targets)):
            return {k.value for k in node.value.keys
                    if isinstance(k, ast.Constant)}
    sys.exit("seedrows_check: no SCENARIOS table in " + path)


def section_lines(path, title):
    """(line number, text) of the lines under '## title' up to the next
    heading of that level; exits when the section is missing."""
    with open(os.path.join(ROOT, path), encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    out, inside = [], False
    for i, line in enumerate(lines, 1):
        if line.startswith("## "):
            inside = line[3:].strip() == title
            continue
        if inside:
            out.append((i, line))
    if not out:
        sys.exit(f"seedrows_check: {path} has no section '## {title}'")
    return out


def misses(path, lines, known):
    """Print each backquoted span of lines that names nothing known."""
    bad = 0
    for i, line in lines:
        for span in SPAN_RE.findall(line):
            if span in known or os.path.exists(os.path.join(ROOT, span)):
                continue
            print(f"{path}:{i}: `{span}` is no test, liar row, scenario "
                  "or existing path")
            bad += 1
    return bad


def main(argv):
    known = c_test_names() | scenario_names()
    if argv[:1] == ["--tables"] and len(argv) == 2:
        with open(os.path.join(ROOT, argv[1]), encoding="utf-8") as fh:
            rows = [(i, s) for i, s in enumerate(fh.read().splitlines(), 1)
                    if s.startswith("|")]
        return 1 if misses(argv[1], rows, known) else 0
    if len(argv) % 2:
        sys.exit(__doc__)
    pairs = list(zip(argv[::2], argv[1::2])) or DEFAULT
    sections = [(p, section_lines(p, t)) for p, t in pairs]
    bad = sum(misses(p, lines, known) for p, lines in sections)
    names = sum(len(SPAN_RE.findall(s)) for _, lines in sections
                for _, s in lines)
    if not bad:
        print(f"seedrows-check: {names} name(s) in {len(sections)} "
              "section(s), each a test, liar row, scenario or path")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
