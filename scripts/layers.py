#!/usr/bin/env python3
"""Include layering gate: which folder may use which.

The rules below are the only copy of the tree's layering. The script

  * resolves every `#include "..."` in the tree (relative to the including
    file first, then to the root, as `-I.` does) and fails on any include
    that points against the layers, naming file, line and forbidden edge;
  * fails on a private header included from outside its owner (the
    temporary allow-list is printed as warnings instead);
  * fails on an include cycle between folders and on one between files
    (which covers the files of core/);
  * fails on a function-level circle between the files of a folder in
    CALL_CYCLE_DIRS (core/): a cycle in the graph "a function defined in
    file A calls a function defined in file B", read from the call graph
    gcc writes with -fcallgraph-info (calls through a function pointer,
    such as the core's dispatch tables, are not edges);
  * prints the "The tree" table of docs/HACKING.md from the same data and
    fails when the doc's generated block differs from it.

    layers.py check          every check above (the `make layers` gate)
    layers.py table          print the generated markdown block
    layers.py update-doc     rewrite the block in docs/HACKING.md
"""
import os
import re
import subprocess
import sys

DOC = "docs/HACKING.md"
BEGIN = "<!-- BEGIN GENERATED: scripts/layers.py table -->"
END = "<!-- END GENERATED: scripts/layers.py table -->"

LIBS = ["sha2", "ipc", "bootstrap", "capabi"]
FREE = ["base"] + LIBS
CORE_AND_BELOW = FREE + ["core"]
# The peers' libraries: what a hosted program (the peers, the pbx command)
# may link besides the freestanding layers.
PEERS_LIBS = ["peers/app", "peers/common", "peers/lib"]

# One row per folder of the tree, in the doc's order: folder, what lives
# there, whether it is hosted (may use libc and POSIX), the folders its
# files may include (a folder may always include its own files; "*" is
# every folder with C code) and, for the doc, how that list reads.
LAYERS = [
    ("base", "error enum (`base/err/<layer>.def`, one range per layer), "
     "`PBX_ASSERT`, little-endian helpers, memory primitives",
     False, [], "compiler headers only"),
    ("sha2", "SHA-256 (seed lib-sha2)", False, ["base"], "base"),
    ("ipc", "every operation number, discriminant and wire record, and the "
     "canonical frame codec (seed lib-ipc)", False, ["base"], "base"),
    ("bootstrap", "PBX1, the authenticated storage geometry, and the arena "
     "layout it implies (seed lib-bootstrap)",
     False, ["base", "sha2"], "base, sha2"),
    ("capabi", "endpoint routes, rights and local slot layout (seed "
     "lib-capabi)", False, ["base"], "base"),
    ("core", "the sans-IO semantic core: every lifecycle decision, effects "
     "through a caller-supplied ops table",
     False, FREE, "base and the four libraries"),
    ("powerboxd", "the freestanding executable: `linker.ld`, runtime loop, "
     "the port interface `port/pbx_port.h` and its ports "
     "(`port/linux-x86_64`, `port/erix-x86_64`), the port smoke driver "
     "`portcheck/`", False, CORE_AND_BELOW, "core and below, its port"),
    ("peers", "reference vfsd, ttyd, procd, launchd and a client for the "
     "Linux host; the app library programs link (`peers/app/`)", True,
     ["base", "sha2", "ipc"] + PEERS_LIBS,
     "libc, base, sha2, ipc, its libraries below"),
    ("sim", "deterministic seeded simulator", True, CORE_AND_BELOW,
     "libc, core and below"),
    ("tools/pbx", "operator command `pbx`", True,
     CORE_AND_BELOW + PEERS_LIBS,
     "libc, core and below, peers/app, peers/common, peers/lib"),
    ("tests", "unit tests (`tests/test_*.c`) on our own runner in "
     "`tests/runner/`; hosted tests of the built images in `tests/port/` "
     "and `tests/e2e/`; the runtime against a scripted fake port in "
     "`tests/rt/`; the reference peers in `tests/peers/`; the mutation "
     "tester `tests/mutate/`",
     True, ["*"], "libc, everything"),
    ("model", "the Promela model of the lifecycle, checked with spin",
     False, None, ""),
    ("scripts", "the doc-comment, freestanding, generated-docs and "
     "include-layering gates", False, None, ""),
    ("fuzz", "libFuzzer harnesses `fuzz/fuzz_*.c`, seed corpora in "
     "`fuzz/corpus/fuzz_*/`, dictionaries in `fuzz/dict/`", True, ["*"],
     "libc, everything (they drive the core through the simulator and "
     "the peers' own code)"),
    ("bench", "benchmarks (`make bench`)", True, ["*"], "libc, everything"),
    ("eva", "Frama-C EVA drivers `eva/eva_<lib>.c` and their alarm "
     "baseline (`make eva`)", False, CORE_AND_BELOW, "core and below"),
    ("docs", "PROTOCOL.md (normative wire and states), ARCHITECTURE.md, "
     "PBX1.md, PORTS.md (port interface, host port limits), TESTING.md, "
     "HOST.md, MODEL.md", False, None, ""),
    ("mk", "make fragments for parts with their own rules", False, None, ""),
]

# Finer rules inside a folder: a file under the first path uses the rule
# of that sub-folder instead of its folder's. "<port>" stands for each
# folder under powerboxd/port/: a port sees the port interface and base,
# never the core, the runtime or another port.
SUBLAYERS = [
    ("powerboxd/port/<port>", ["base", "powerboxd/port"],
     "a port: base and the port interface"),
    ("powerboxd/port", ["base"], "the port interface: base"),
    ("powerboxd/portcheck", ["base", "powerboxd/port"],
     "the smoke driver: base and the port interface"),
    ("powerboxd/runtime", CORE_AND_BELOW + ["powerboxd/port"],
     "the runtime: core and below and the port interface"),
    ("peers/lib", ["base", "sha2", "ipc"],
     "the peers' pure decision logic (no I/O): base, sha2, ipc"),
    ("peers/common", ["base", "sha2", "ipc", "peers/lib"],
     "the shared socket layer: base, sha2, ipc, peers/lib"),
    ("peers/app", ["base", "sha2", "ipc", "peers/common", "peers/lib"],
     "the app library (`libpbx-app.a`): base, sha2, ipc, peers/common, "
     "peers/lib"),
]

# Private headers: only their owner folder may include them.
PRIVATE = {
    "core/pbx_core_internal.h": "core",
    "core/pbx_core_peer.h": "core",
    "core/pbx_core_progress.h": "core",
    "ipc/pbx_ipc_internal.h": "ipc",
}

# TEMPORARY: includes of private headers that still exist and are being
# replaced by an inspection API. Each is printed as a warning; delete an
# entry together with its include (an entry that matches nothing fails).
PRIVATE_ALLOW = []

# Folders whose file-level include graph must be acyclic ("" is every file).
FILE_CYCLE_SCOPES = [""]

# Folders whose files must not call each other in a circle: the graph
# "a function defined in file A calls one defined in file B" is acyclic.
CALL_CYCLE_DIRS = ["core"]
# gcc's -fcallgraph-info output (VCG): a node's label is its name and the
# place it is defined ("shape : ellipse" marks one only declared in that
# unit); an edge's label is the place of the call.
CG_NODE = re.compile(r'node: \{ title: "([^"]+)" label: "([^"\\]+)\\n'
                     r'([^"]+):\d+:\d+"( shape : ellipse)?')
CG_EDGE = re.compile(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"'
                     r' label: "([^"]+):(\d+):\d+"')

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_EXT = (".c", ".h", ".def")


def tree_files():
    """Tracked and new (not ignored) C sources, or a walk without git."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard",
             "*.c", "*.h", "*.def"],
            check=True, capture_output=True, text=True).stdout
        return sorted(p for p in out.splitlines() if os.path.isfile(p))
    except (OSError, subprocess.CalledProcessError):
        found = []
        for root, dirs, files in os.walk("."):
            dirs[:] = [d for d in dirs if d not in ("build", ".git")]
            for f in files:
                if f.endswith(SOURCE_EXT):
                    found.append(os.path.relpath(os.path.join(root, f)))
        return sorted(found)


def unit_of(path):
    """The rule (sub-folder or folder) a file belongs to, or None."""
    parts = path.split("/")
    if len(parts) >= 4 and parts[0] == "powerboxd" and parts[1] == "port":
        return "powerboxd/port/" + parts[2]
    for sub, _, _ in SUBLAYERS:
        if "<" not in sub and path.startswith(sub + "/"):
            return sub
    for name, _, _, _, _ in LAYERS:
        if path.startswith(name + "/"):
            return name
    return None


def folder_of(unit):
    for name, _, _, _, _ in LAYERS:
        if unit == name or unit.startswith(name + "/"):
            return name
    return unit


def allowed_of(unit):
    """The units a unit may include, or None when it may include anything."""
    for sub, allowed, _ in SUBLAYERS:
        if unit == sub or (sub == "powerboxd/port/<port>" and
                           unit.startswith("powerboxd/port/")):
            return set(allowed)
    for name, _, _, allowed, _ in LAYERS:
        if unit == name:
            if allowed is None:
                return set()
            return None if "*" in allowed else set(allowed)
    return set()


def may_use(src, dst):
    if src == dst:
        return True
    allowed = allowed_of(src)
    if allowed is None:
        return True
    # A folder's rule covers its sub-folders (core and below includes
    # nothing under powerboxd; "powerboxd" would cover its parts).
    folders = {name for name, _, _, _, _ in LAYERS}
    return any(dst == a or (a in folders and dst.startswith(a + "/"))
               for a in allowed)


def resolve(path, target):
    """Where `#include "target"` in path lands: own folder first, then root."""
    for base in (os.path.dirname(path), ""):
        cand = os.path.normpath(os.path.join(base, target))
        if os.path.isfile(cand) and not cand.startswith(".."):
            return cand
    return None


def scan(files):
    """Every quoted include as (file, line, target text, resolved path)."""
    edges = []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if m:
                    edges.append((path, n, m.group(1), resolve(path, m.group(1))))
    return edges


def find_cycle(graph):
    """One cycle of a directed graph as a list of nodes, or None."""
    colour = {}
    for start in sorted(graph):
        if start in colour:
            continue
        stack = [(start, iter(sorted(graph.get(start, ()))))]
        path = [start]
        colour[start] = 1
        while stack:
            node, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour.get(nxt) == 1:
                return path[path.index(nxt):] + [nxt]
            elif nxt not in colour:
                colour[nxt] = 1
                path.append(nxt)
                stack.append((nxt, iter(sorted(graph.get(nxt, ())))))
    return None


def check_includes(files):
    errors, warnings = [], []
    used_allow = set()
    unit_graph, file_graph = {}, {}
    for path in files:
        if unit_of(path) is None:
            errors.append(f"{path}: folder is not in the layer table "
                          "(add a row to LAYERS in scripts/layers.py)")
    for path, n, text, dst in scan(files):
        where = f"{path}:{n}"
        if dst is None:
            errors.append(f'{where}: #include "{text}" resolves to no file '
                          "of the tree")
            continue
        src_u, dst_u = unit_of(path), unit_of(dst)
        if src_u is None or dst_u is None:
            continue
        file_graph.setdefault(path, set()).add(dst)
        if folder_of(src_u) != folder_of(dst_u):
            unit_graph.setdefault(folder_of(src_u), set()).add(folder_of(dst_u))
        if not may_use(src_u, dst_u):
            errors.append(f'{where}: #include "{text}": forbidden edge '
                          f"{src_u} -> {dst_u} ({src_u} may use: "
                          f"{describe(src_u)})")
        owner = PRIVATE.get(dst)
        if owner and folder_of(src_u) != owner:
            if (path, dst) in PRIVATE_ALLOW:
                used_allow.add((path, dst))
                warnings.append(f'{where}: #include "{text}": private header '
                                f"of {owner}/ (temporarily allowed)")
            else:
                errors.append(f'{where}: #include "{text}": {dst} is private '
                              f"to {owner}/; only {owner}/ may include it")
    for entry in PRIVATE_ALLOW:
        if entry not in used_allow:
            errors.append(f"PRIVATE_ALLOW entry {entry[0]} -> {entry[1]} "
                          "matches no include any more: delete it from "
                          "scripts/layers.py")
    cycle = find_cycle(unit_graph)
    if cycle:
        errors.append("include cycle between folders: " + " -> ".join(cycle))
    for scope in FILE_CYCLE_SCOPES:
        sub = {a: {b for b in bs if b.startswith(scope)}
               for a, bs in file_graph.items() if a.startswith(scope)}
        cycle = find_cycle(sub)
        if cycle:
            errors.append("include cycle between files: " + " -> ".join(cycle))
    return errors, warnings


def call_graph_units(sources, tmp):
    """Compiles each source with gcc -fcallgraph-info into tmp and returns
    (source, text of its .ci file) pairs, or an error string."""
    units = []
    for n, src in enumerate(sources):
        obj = os.path.join(tmp, f"u{n}.o")
        try:
            run = subprocess.run(
                ["gcc", "-std=c11", "-O0", "-I.", "-fcallgraph-info", "-c",
                 src, "-o", obj], capture_output=True, text=True)
        except OSError as e:
            return f"cannot run gcc for the call graph: {e}"
        if run.returncode != 0:
            return f"gcc -fcallgraph-info {src} failed:\n{run.stderr}"
        with open(obj[:-2] + ".ci", encoding="utf-8") as f:
            units.append((src, f.read()))
    return units


def call_file_graph(units):
    """The graph file -> {file: (caller, callee, line)} of calls between
    functions defined in different files (headers count as files: a
    static inline function belongs to the header that defines it)."""
    external, local = {}, {}
    for src, text in units:
        for title, _, where, declared in CG_NODE.findall(text):
            if not declared:
                local[(src, title)] = os.path.relpath(where)
                if ":" not in title:
                    external[title] = os.path.relpath(where)
    graph = {}
    for src, text in units:
        for caller, callee, where, line in CG_EDGE.findall(text):
            a = local.get((src, caller))
            b = local.get((src, callee)) or external.get(callee)
            if a is None or b is None or a == b:
                continue
            hop = (caller.rsplit(":", 1)[-1], callee.rsplit(":", 1)[-1],
                   f"{os.path.relpath(where)}:{line}")
            graph.setdefault(a, {}).setdefault(b, hop)
    return graph


def check_call_cycles(files):
    """Fails on a function-level circle between the files of each folder
    of CALL_CYCLE_DIRS, naming one call per step of the circle."""
    import tempfile
    errors = call_canary()
    for folder in CALL_CYCLE_DIRS:
        sources = [p for p in files
                   if p.startswith(folder + "/") and p.endswith(".c")]
        with tempfile.TemporaryDirectory(prefix="layers-cg-") as tmp:
            units = call_graph_units(sources, tmp)
        if isinstance(units, str):
            errors.append(units)
            continue
        full = call_file_graph(units)
        graph = {a: {b for b in bs if b.startswith(folder + "/")}
                 for a, bs in full.items() if a.startswith(folder + "/")}
        for group in circles(graph):
            sub = {a: graph.get(a, set()) & group for a in group}
            cycle = find_cycle(sub)
            steps = [f"{a} -> {b} ({full[a][b][0]} calls {full[a][b][1]} "
                     f"at {full[a][b][2]})"
                     for a, b in zip(cycle, cycle[1:])]
            errors.append(f"function-level circle between {len(group)} "
                          f"{folder}/ files ({', '.join(sorted(group))}); "
                          "one of its cycles:\n    " + "\n    ".join(steps))
    return errors


def call_canary():
    """Reads two planted files that call each other (a circle) and a
    third that only calls down; returns an error unless exactly the
    planted circle is found, so a change in gcc's output can never turn
    the check into one that passes on everything."""
    import tempfile
    planted = {"a.c": "int b(void);\nint a(void);\nint a(void) "
                      "{ return b(); }\n",
               "b.c": "int a(void);\nint b(void);\nint b(void) "
                      "{ static int n; return n++ ? 0 : a(); }\n",
               "c.c": "int a(void);\nint c(void);\nint c(void) "
                      "{ return a(); }\n"}
    with tempfile.TemporaryDirectory(prefix="layers-canary-") as tmp:
        for name, text in planted.items():
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                f.write(text)
        units = call_graph_units(
            [os.path.join(tmp, n) for n in sorted(planted)], tmp)
        if isinstance(units, str):
            return [units]
        full = call_file_graph(units)
        found = [{os.path.basename(p) for p in g} for g in circles(
            {a: set(bs) for a, bs in full.items()})]
    if found != [{"a.c", "b.c"}]:
        return ["the call-graph reader missed the planted circle a.c <-> "
                f"b.c (found {found}): has gcc's -fcallgraph-info output "
                "changed?"]
    return []

def circles(graph):
    """The strongly connected parts of more than one node: sets of files
    each of which reaches every other (the graphs here are small)."""
    nodes = set(graph) | {b for bs in graph.values() for b in bs}
    reach = {}
    for n in nodes:
        seen, todo = {n}, [n]
        while todo:
            for m in graph.get(todo.pop(), ()):
                if m not in seen:
                    seen.add(m)
                    todo.append(m)
        reach[n] = seen
    groups = []
    for n in sorted(nodes):
        group = {m for m in reach[n] if n in reach[m]}
        if len(group) > 1 and group not in groups:
            groups.append(group)
    return groups


def describe(unit):
    allowed = allowed_of(unit)
    if allowed is None:
        return "everything"
    return ", ".join(sorted(allowed)) or "nothing outside itself"


def table():
    """The generated block of docs/HACKING.md, without its markers."""
    rows = ["| folder | what lives there | may use |", "|---|---|---|"]
    for name, what, _, _, uses in LAYERS:
        rows.append(f"| `{name}/` | {what} | {uses} |".replace("|  |", "| |"))
    for top in sorted({sub.split("/")[0] for sub, _, _ in SUBLAYERS},
                      key=lambda t: [n for n, _, _, _, _ in LAYERS].index(t)):
        rows.append("")
        rows.append(f"Inside `{top}/`:")
        for sub, _, what in SUBLAYERS:
            if sub.split("/")[0] == top:
                rows.append(f"- `{sub}/`: {what}.")
    rows.append("")
    rows.append("Private headers, included only by their own folder: " +
                ", ".join(f"`{h}`" for h in sorted(PRIVATE)) + ".")
    return "\n".join(rows) + "\n"


def check_table_data():
    """The doc's prose must agree with the rule it stands for."""
    errors = []
    for name, _, hosted, allowed, uses in LAYERS:
        if allowed is None:
            continue
        if hosted != uses.startswith("libc"):
            errors.append(f"LAYERS row {name}: hosted={hosted} but the doc "
                          f"text reads '{uses}'")
    return errors


def doc_with(text, block):
    if BEGIN not in text or END not in text:
        return None
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + BEGIN + "\n" + block + END + tail


def main(argv):
    mode = argv[1] if len(argv) > 1 else "check"
    if mode == "table":
        sys.stdout.write(table())
        return 0
    with open(DOC, encoding="utf-8") as f:
        doc = f.read()
    fresh = doc_with(doc, table())
    if fresh is None:
        print(f"layers: {DOC} has no '{BEGIN}' ... '{END}' block")
        return 1
    if mode == "update-doc":
        with open(DOC, "w", encoding="utf-8") as f:
            f.write(fresh)
        print(f"layers: {DOC} table regenerated")
        return 0
    if mode != "check":
        print(__doc__)
        return 2
    files = tree_files()
    errors, warnings = check_includes(files)
    errors += check_call_cycles(files)
    errors += check_table_data()
    if fresh != doc:
        errors.append(f"{DOC}: the folder table differs from scripts/layers.py;"
                      " run 'make docs' (or 'python3 scripts/layers.py "
                      "update-doc') and commit the result")
    for w in warnings:
        print("layers: warning: " + w)
    for e in errors:
        print("layers: " + e)
    if errors:
        print(f"layers: {len(errors)} finding(s)")
        return 1
    print(f"layers: {len(files)} files, every include follows the layers "
          f"({len(warnings)} temporary exception(s)); no function-level "
          f"circle in {', '.join(d + '/' for d in CALL_CYCLE_DIRS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
