#!/usr/bin/env python3
"""Worst-case stack depth of a freestanding image from gcc call graphs.

Usage: stack_depth.py LIMIT_BYTES NAME FILE.ci...

Each .ci file comes from gcc -fcallgraph-info=su: nodes carry the frame
size that -fstack-usage measured, edges are direct calls. The image has no
recursion, so the worst depth is the heaviest root-to-leaf path. Every call
also pushes an 8-byte return address, which is added per level. A call to
a function whose size no file gives (a symbol from outside the image) or a
cycle fails the check. An indirect call (gcc names its target
"__indirect_call") is charged the deepest function whose address is taken
anywhere, conservatively: every defined function that is not on the
current path. Prints one report line and exits 1 above LIMIT_BYTES.
"""
import re
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


def depth_of(fn, sizes, edges, memo, path):
    """Deepest stack below and including fn (the graph is acyclic)."""
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
            cands = [g for g in sizes if g not in path]
            sub = max((depth_of(g, sizes, edges, memo, path) for g in cands),
                      default=0)
        else:
            sub = depth_of(callee, sizes, edges, memo, path)
        worst = max(worst, sub + RET_ADDR)
    path.discard(fn)
    memo[fn] = sizes[fn] + worst
    return memo[fn]


def main():
    limit, name, paths = int(sys.argv[1]), sys.argv[2], sys.argv[3:]
    sizes, edges, quals = load(paths)
    unbounded = [f for f, q in quals.items() if "bounded" not in q
                 and "static" not in q]
    if unbounded:
        print(f"stack {name}: unbounded frames: {', '.join(unbounded)}")
        return 1
    memo = {}
    try:
        worst = max((depth_of(f, sizes, edges, memo, set()), f)
                    for f in sizes)
    except ValueError as e:
        print(f"stack {name}: {e}")
        return 1
    total = worst[0] + RET_ADDR
    verdict = "ok" if total <= limit else "OVER LIMIT"
    print(f"stack {name}: max depth {total} bytes from {worst[1]} "
          f"({len(sizes)} functions; limit {limit}) {verdict}")
    return 0 if total <= limit else 1


if __name__ == "__main__":
    sys.exit(main())
