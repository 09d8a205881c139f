#!/usr/bin/env python3
"""The headers `make install` installs, one path a line.

    install_headers.py DIR...     the public headers of the folders DIR

The public headers are every `*.h` directly in each DIR, less the private
ones of scripts/layers.py (its PRIVATE table, the one copy of that list),
plus every file they include with `#include "..."`, followed to the end
(an error table `base/err/*.def`, a peer header the app library's header
embeds). Each path is printed as it sits in the tree, which is the path
below include/powerboxd/ it is installed at: the headers include each
other by those paths. A private header reached through an include is
printed too, so that the install test sees it installed and fails.
"""
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import layers  # noqa: E402  (the layering gate's tables and resolver)


def main(argv):
    todo = []
    for d in argv[1:]:
        todo += sorted(h for h in glob.glob(os.path.join(d, "*.h"))
                       if h not in layers.PRIVATE)
    seen = set()
    # Each file is taken once, so the walk ends after at most every file
    # of the tree.
    while todo:
        path = os.path.normpath(todo.pop())
        if path in seen:
            continue
        seen.add(path)
        for _, _, _, dst in layers.scan([path]):
            if dst is not None and dst not in seen:
                todo.append(dst)
    for path in sorted(seen):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
