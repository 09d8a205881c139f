#!/usr/bin/env python3
"""Check a freestanding powerboxd image against powerboxd/linker.ld.

Usage: elf_check.py NAME IMAGE

Fails unless: nm -u lists nothing (no symbol from outside the image); the
file is a static ELF executable (no PT_INTERP, no PT_DYNAMIC); the only
allocated sections are .text, .rodata, .data and .bss, with .text present;
.text sits in a read+execute PT_LOAD, .rodata in a read-only one, .data
and .bss in a read+write one; the stack is not executable; and the entry
point is _start at the very start of .text. Prints the `size` line.
"""
import re
import subprocess
import sys

ALLOWED = {".text": "R E", ".rodata": "R", ".data": "RW", ".bss": "RW"}


def run(*cmd):
    """Return the stdout of cmd; a failing tool fails the check."""
    return subprocess.run(cmd, check=True, capture_output=True,
                          text=True).stdout


def sections(image):
    """Map allocated section name -> address from readelf -SW."""
    out = {}
    for line in run("readelf", "-SW", image).splitlines():
        m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+"
                     r"\s+[0-9a-f]+\s+[0-9a-f]+\s+([A-Za-z]*)", line)
        if m and "A" in m.group(3):
            out[m.group(1)] = int(m.group(2), 16)
    return out


def segments(image):
    """Return (program header lines, section-to-segment rows)."""
    text = run("readelf", "-lW", image)
    heads = [ln.split() for ln in text.splitlines()
             if re.match(r"\s+(LOAD|INTERP|DYNAMIC|GNU_STACK|TLS)\s", ln)]
    rows = re.findall(r"^\s+(\d\d)\s+(.*)$", text, re.M)
    return heads, {int(i): s.split() for i, s in rows}


def flags_of(head):
    """Permission letters of one program header line (R, RW, R E ...)."""
    return " ".join(head[6:-1])


def check(name, image):
    """Return a list of problems; empty means the image is as designed."""
    bad = []
    undef = run("nm", "-u", image).strip()
    if undef:
        bad.append("undefined symbols: " + undef.replace("\n", ", "))
    if "EXEC" not in run("readelf", "-hW", image):
        bad.append("not a static non-PIE executable (ELF type is not EXEC)")
    secs = sections(image)
    extra = sorted(set(secs) - set(ALLOWED))
    if extra or ".text" not in secs:
        bad.append("unexpected allocated sections: " + ", ".join(extra))
    heads, mapping = segments(image)
    for i, h in enumerate(heads):
        if h[0] in ("INTERP", "DYNAMIC", "TLS"):
            bad.append("program header " + h[0] + " present")
        if h[0] == "GNU_STACK" and "E" in flags_of(h):
            bad.append("executable stack")
        for sec in mapping.get(i, []):
            want = ALLOWED.get(sec)
            if h[0] == "LOAD" and want and flags_of(h) != want:
                bad.append(f"{sec} in a {flags_of(h)} segment, not {want}")
    if not any(h[0] == "GNU_STACK" for h in heads):
        bad.append("no PT_GNU_STACK header")
    entry = int(re.search(r"Entry point address:\s+0x([0-9a-f]+)",
                          run("readelf", "-hW", image)).group(1), 16)
    start = re.search(r"^([0-9a-f]+) T _start$", run("nm", image), re.M)
    if not start or int(start.group(1), 16) != entry or \
            entry != secs.get(".text"):
        bad.append("entry point is not _start at the start of .text")
    return bad


def main():
    name, image = sys.argv[1], sys.argv[2]
    bad = check(name, image)
    size = run("size", image).splitlines()[-1].split()
    print(f"elf {name}: text {size[0]} data {size[1]} bss {size[2]} bytes; "
          + ("sections and symbols ok" if not bad else "FAILED"))
    for b in bad:
        print(f"elf {name}: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
