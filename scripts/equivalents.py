"""The equivalent-mutants table of docs/TESTING.md, generated.

tests/mutate/equivalent.txt is the one list of equivalent mutants that
`make mutate` reads (one line each: FILE | ID or mutated line | why no
input can tell it apart). docs/TESTING.md shows the same arguments as a
table between the markers below; this script writes that block from the
list and fails when the doc's block differs, so the doc can never argue
a different set than the tool excludes.

    equivalents.py check        fail when the doc's block is stale
    equivalents.py update-doc   rewrite the block in docs/TESTING.md
"""
import sys

LIST = "tests/mutate/equivalent.txt"
DOC = "docs/TESTING.md"
BEGIN = "<!-- BEGIN GENERATED: scripts/equivalents.py -->"
END = "<!-- END GENERATED: scripts/equivalents.py -->"


def entries():
    """(file, id, reason) of every entry line, sorted by file then id."""
    out = []
    with open(LIST, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = [p.strip() for p in line.split("|", 2)]
            if len(parts) != 3 or not all(parts):
                sys.exit(f"{LIST}:{n}: expected 'FILE | ID | reason'")
            out.append(tuple(parts))
    return sorted(out, key=lambda e: (e[0], e[1]))


def block():
    """The generated markdown block (markers included)."""
    rows = entries()
    lines = [BEGIN,
             f"The {len(rows)} entries today, one reason each:", "",
             "| file | id | why no input can tell it apart |",
             "|---|---|---|"]
    for file, key, why in rows:
        cell = why.replace("|", "\\|")
        lines.append(f"| `{file}` | `{key}` | {cell} |")
    lines.append(END)
    return "\n".join(lines)


def main():
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    if BEGIN not in doc or END not in doc:
        sys.exit(f"{DOC}: the generated equivalents block is missing")
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = head + block() + tail
    if cmd == "update-doc":
        with open(DOC, "w", encoding="utf-8") as f:
            f.write(new)
        return 0
    if cmd == "check":
        if new != doc:
            sys.exit(f"{DOC}: the equivalents table differs from {LIST}: "
                     "run `make docs`")
        print(f"equivalents: {len(entries())} entries, {DOC} up to date")
        return 0
    sys.exit(f"usage: {sys.argv[0]} check|update-doc")


if __name__ == "__main__":
    sys.exit(main())
