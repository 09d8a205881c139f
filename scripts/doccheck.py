#!/usr/bin/env python3
"""Fail when a declaration in a public header has no doc comment.

A declaration is any statement at file scope (outside braces and outside
parentheses): a function prototype, a typedef, a struct/union/enum
definition, an extern object, or a #define other than the include guard.
It is documented when the closest non-blank line before it closes a
comment that opened with "/**" (or is a run of "///" lines). Static inline
functions count as public declarations too: they are part of the API.
"""
import re
import sys

GUARD = re.compile(r"#\s*(ifndef|define|endif)\s+\w*_H\b")
SKIP_PP = re.compile(r"#\s*(include|if|ifdef|ifndef|else|elif|endif|undef|pragma|error)\b")


def doc_before(lines, i):
    """Return True when lines[i] is preceded by a doc comment."""
    j = i - 1
    while j >= 0 and lines[j].strip() == "":
        j -= 1
    if j < 0:
        return False
    if lines[j].strip().startswith("///"):
        return True
    if not lines[j].rstrip().endswith("*/"):
        return False
    k = j
    while k >= 0 and "/*" not in lines[k]:
        k -= 1
    return k >= 0 and "/**" in lines[k]


def strip_strings_and_comments(line, in_comment):
    """Remove comment text and string contents so braces count truly."""
    out = []
    i = 0
    while i < len(line):
        if in_comment:
            end = line.find("*/", i)
            if end < 0:
                return "".join(out), True
            i = end + 2
            in_comment = False
        elif line.startswith("/*", i):
            in_comment = True
            i += 2
        elif line.startswith("//", i):
            break
        elif line[i] in "\"'":
            q = line[i]
            i += 1
            while i < len(line) and line[i] != q:
                i += 2 if line[i] == "\\" else 1
            i += 1
        else:
            out.append(line[i])
            i += 1
    return "".join(out), in_comment


def check(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    problems = []
    depth = 0
    in_comment = False
    in_stmt = False
    continued = False
    guard_seen = 0
    for i, raw in enumerate(lines):
        code, was_comment = strip_strings_and_comments(raw, in_comment)
        starts_in_comment = in_comment
        in_comment = was_comment
        text = code.strip()
        if continued:
            continued = raw.rstrip().endswith("\\")
            continue
        if starts_in_comment or text == "":
            continue
        if text.startswith("#"):
            continued = raw.rstrip().endswith("\\")
            if GUARD.match(text) and guard_seen < 3:
                guard_seen += 1
                continue
            if SKIP_PP.match(text):
                continue
            if depth == 0 and re.match(r"#\s*define\b", text) and not doc_before(lines, i):
                problems.append((i + 1, text))
            continue
        if depth == 0 and not in_stmt:
            # A static assertion declares nothing a caller uses; its
            # message says why it holds.
            exempt = text.startswith("}") or text.startswith("_Static_assert")
            if not exempt and not doc_before(lines, i):
                problems.append((i + 1, text))
            in_stmt = True
        depth += code.count("{") + code.count("(") - code.count("}") - code.count(")")
        if depth == 0 and (text.endswith(";") or text.endswith("}")):
            in_stmt = False
    return problems


def main(argv):
    bad = 0
    for path in argv[1:]:
        for line, text in check(path):
            print(f"{path}:{line}: public declaration has no doc comment: {text}")
            bad += 1
    if bad:
        print(f"doccheck: {bad} undocumented declaration(s)")
        return 1
    print(f"doccheck: {len(argv) - 1} header(s) fully documented")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
