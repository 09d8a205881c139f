#!/usr/bin/env python3
"""Worst-case stack depth of a freestanding image from gcc call graphs.

Usage: stack_depth.py LIMIT_BYTES NAME FILE.ci...

Each .ci file comes from gcc -fcallgraph-info=su: nodes carry the frame
size that -fstack-usage measured, edges are direct calls. The image has no
recursion, so the worst depth is the heaviest root-to-leaf path. Every call
also pushes an 8-byte return address, which is added per level. A call to
a function whose size no file gives (a symbol from outside the image) or a
cycle fails the check. An indirect call (gcc names its target
"__indirect_call") is charged the deepest function that can be its
target: every function whose address the image takes, found from the
relocations of the object file beside each .ci file (an absolute
relocation anywhere, or a rip-relative one that is not the operand of a
call or jump, to the function's first byte; jump tables point inside a
function and take no address), except those already on the current path. Should an
object file be missing, every defined function is a candidate instead.
Prints one report line and exits 1 above LIMIT_BYTES.
"""
import os
import re
import subprocess
import sys

NODE = re.compile(r'node: \{ title: "([^"]+)" label: "([^"]*)"')
EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"')
SIZE = re.compile(r"\\n(\d+) bytes \(([a-z,]+)\)")
RET_ADDR = 8


def load(paths):
    """Return (sizes, edges, qualifiers) merged from every .ci file."""
    sizes, edges, quals = {}, {}, {}
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                m = NODE.search(line)
                if m:
                    s = SIZE.search(m.group(2))
                    if s:
                        sizes[m.group(1)] = int(s.group(1))
                        quals[m.group(1)] = s.group(2)
                    continue
                m = EDGE.search(line)
                if m:
                    edges.setdefault(m.group(1), []).append(m.group(2))
    return sizes, edges, quals


RELOC = re.compile(
    r"R_X86_64_(PC32|PLT32|32S|32|64)\s+([^\s+-]+)\s*([+-])?\s*(?:0x)?([0-9a-f]*)")
RELA = re.compile(r"R_X86_64_(PC32|PLT32|32S|32|64)\s+[0-9a-f]+\s+"
                  r"([^\s+-]+)\s*([+-])?\s*([0-9a-f]*)")


def entry_ref(m):
    """Whether relocation match m points at a symbol's first byte: addend
    0, or -4 for a rip-relative one. Jump tables point inside functions
    (nonzero offsets from the section symbol) and take no address."""
    addend = int(m.group(4) or "0", 16) * (-1 if m.group(3) == "-" else 1)
    return addend == (-4 if m.group(1) in ("PC32", "PLT32") else 0)
INSN = re.compile(r"^\s+[0-9a-f]+:\s+(?:[0-9a-f]{2} )+\s*([a-z]+)")
ADDR_TYPES = ("32", "32S", "64")


def unit_name(ci_path):
    """The source file a .ci describes (its graph's title)."""
    with open(ci_path, encoding="utf-8") as f:
        m = re.match(r'graph: \{ title: "([^"]+)"', f.readline())
    return m.group(1) if m else ""


def resolve(sym, unit, sizes):
    """The .ci function name a relocation symbol refers to, or None."""
    if sym.startswith(".text."):
        sym = sym[len(".text."):]
    local = unit + ":" + sym
    if local in sizes:
        return local
    return sym if sym in sizes else None


RO_TABLE = re.compile(r"^\.rela(\.rodata|\.data\.rel\.ro(?:\.local)?)\.(.+)$")
FUNC = re.compile(r"^[0-9a-f]+ <([^>]+)>:$")


def address_taken(paths, sizes, owners=None):
    """Functions whose address any object file takes, or None.

    When owners is a dict it is filled with the functions an indirect call
    can reach only from certain callers: a function whose address appears
    only in read-only tables (compiled with -fdata-sections, so each table
    has its own relocation section), none of which any data refers to,
    maps to the set of functions whose code reads one of those tables. A
    pointer loaded from such a table is called by the function that read
    it (core/pbx_core_judges.c: pbx_core_judge indexes the judge table
    and calls the entry), so the judges are no candidates for another
    function's indirect call (such as the ops table's delete, which the
    judges reach themselves and which would otherwise close a cycle)."""
    taken = set()
    homes, readers, data_refs = {}, {}, set()
    for ci in paths:
        obj = ci[:-3] + ".o"
        if not os.path.exists(obj):
            return None
        unit = unit_name(ci)
        dis = subprocess.run(["objdump", "-dr", obj], capture_output=True,
                             text=True, check=False).stdout
        data = subprocess.run(["readelf", "-rW", obj], capture_output=True,
                              text=True, check=False).stdout
        last, insn, here = "", "", None
        for line in dis.splitlines():
            m = FUNC.match(line)
            if m:
                here = resolve(m.group(1), unit, sizes)
                continue
            m = INSN.match(line)
            if m:
                last, insn = m.group(1), line[m.end(1):]
                continue
            m = RELOC.search(line)
            if not m:
                continue
            if resolve(m.group(2), unit, sizes) is None:
                # A table read by a load through a memory operand gives
                # its reader an entry; any other use (lea, an immediate)
                # lets its address escape, and then no caller is known.
                load = last.startswith("mov") and "(" in insn and \
                    "$" not in insn
                if load and here is not None:
                    readers.setdefault(m.group(2), set()).add(here)
                else:
                    data_refs.add(m.group(2))
            fn = resolve(m.group(2), unit, sizes) if entry_ref(m) else None
            direct = m.group(1) in ("PC32", "PLT32") and \
                last.startswith(("call", "j"))
            if fn and not direct:
                taken.add(fn)
                homes.setdefault(fn, set()).add(None)
        section = ""
        for line in data.splitlines():
            if line.startswith("Relocation section"):
                section = line.split("'")[1]
                continue
            m = RELA.search(line)
            if not m or section.startswith((".rela.text", ".rela.debug")):
                continue
            fn = resolve(m.group(2), unit, sizes)
            if fn is None:
                data_refs.add(m.group(2))
            elif m.group(1) in ADDR_TYPES and entry_ref(m):
                taken.add(fn)
                t = RO_TABLE.match(section)
                homes.setdefault(fn, set()).add(t.group(2) if t else None)
    if owners is not None:
        for fn, where in homes.items():
            if None in where or where & data_refs:
                continue
            owners[fn] = set().union(*(readers.get(t, set()) for t in where))
    return taken


def targets_empty(paths, sizes):
    """Whether indirect calls exist but no function can be their target."""
    targets = address_taken(paths, sizes)
    return targets is not None and not targets


def depth_of(fn, sizes, edges, memo, path, targets=None, owners=None):
    """Deepest stack below and including fn (the graph is acyclic).
    owners (address_taken) limits some indirect targets to their readers."""
    owners = owners or {}
    if fn in memo:
        return memo[fn]
    if fn in path:
        raise ValueError("call cycle through " + fn)
    if fn not in sizes:
        raise ValueError("no stack size for callee " + fn)
    path.add(fn)
    worst = 0
    for callee in edges.get(fn, []):
        if callee == "__indirect_call":
            pool = targets if targets is not None else sizes
            cands = [g for g in pool if g not in path and
                     (g not in owners or fn in owners[g])]
            sub = max((depth_of(g, sizes, edges, memo, path, targets, owners)
                       for g in cands), default=0)
        else:
            sub = depth_of(callee, sizes, edges, memo, path, targets, owners)
        worst = max(worst, sub + RET_ADDR)
    path.discard(fn)
    memo[fn] = sizes[fn] + worst
    return memo[fn]


def main():
    limit, name, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    sizes, edges, quals = load(paths)
    unbounded = [f for f, q in quals.items() if "bounded" not in q
                 and "static" not in q]
    if "__indirect_call" in {c for cs in edges.values() for c in cs} and \
            targets_empty(paths, sizes):
        print(f"stack {name}: indirect calls but no address-taken function")
        return 1
    if unbounded:
        print(f"stack {name}: unbounded frames: {', '.join(unbounded)}")
        return 1
    memo, owners = {}, {}
    targets = address_taken(paths, sizes, owners)
    try:
        worst = max((depth_of(f, sizes, edges, memo, set(), targets, owners),
                     f) for f in sizes)
    except ValueError as e:
        print(f"stack {name}: {e}")
        return 1
    total = worst[0] + RET_ADDR
    verdict = "ok" if total <= limit else "OVER LIMIT"
    nind = "all" if targets is None else str(len(targets))
    print(f"stack {name}: max depth {total} bytes from {worst[1]} "
          f"({len(sizes)} functions, {nind} indirect targets; "
          f"limit {limit}) {verdict}")
    return 0 if total <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
