"""The verdict cache of mutate.py (docs/TESTING.md "Mutation testing").

A verdict is reusable only while nothing it depends on has changed, so its
key is two hashes: one of the mutant (file, line, original and mutated
text, operator) and one of every input of the build and the checks (the
bytes of every source, header, test and simulator file the worker trees
are built from, sim/regress.txt, the mutation tool itself, the compiler's
version, the flags, the source lists, the simulator seeds and steps, and
the limits). Results are appended one JSON object a line and flushed, so a
run stopped at any moment (Ctrl-C, --max-seconds, a killed session) leaves
a valid cache; a torn last line is ignored when the cache is read.
"""
import hashlib
import json
import os
import subprocess

# Folders whose files the mutant binaries are compiled from or run against.
INPUT_DIRS = ["base", "sha2", "ipc", "bootstrap", "capabi", "core", "sim",
              "tests", "tools", "peers"]
INPUT_EXT = (".c", ".h", ".def", ".txt", ".py", ".inc")
# Files under the input folders that decide no verdict.
NOT_INPUTS = {"tests/mutate/equivalent.txt"}


def input_files(root):
    """Every input file under root, as sorted relative paths."""
    out = []
    for d in INPUT_DIRS:
        base = os.path.join(root, d)
        for dirpath, dirnames, files in os.walk(base):
            dirnames[:] = sorted(n for n in dirnames
                                 if n not in ("__pycache__", "e2e"))
            for name in files:
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                if name.endswith(INPUT_EXT) and rel not in NOT_INPUTS:
                    out.append(rel)
    return sorted(out)


def compiler_version(cc):
    try:
        p = subprocess.run([cc, "--version"], capture_output=True,
                           text=True, timeout=30)
        return p.stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def inputs_hash(root, settings):
    """One hash of every input file's path and bytes and of settings (a
    dict of the flags, source lists, seeds, steps and limits)."""
    h = hashlib.sha256()
    h.update(json.dumps(settings, sort_keys=True).encode())
    h.update(compiler_version(settings.get("cc", "cc")).encode())
    for rel in input_files(root):
        h.update(rel.encode() + b"\0")
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
        h.update(str(len(data)).encode() + b"\0" + data)
    return h.hexdigest()


def mutant_key(m, inputs):
    """The cache key of mutant m under the inputs hash."""
    fields = [m["file"], str(m["line"]), m["orig"], m["mutated"], m["op"],
              m["desc"], inputs]
    return hashlib.sha256("\0".join(fields).encode()).hexdigest()


def load(path):
    """key -> cached verdict, from every well-formed line of path."""
    found = {}
    if not os.path.isfile(path):
        return found
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            try:
                row = json.loads(line)
            except ValueError:
                continue  # a line torn by a killed run
            if isinstance(row, dict) and "key" in row and \
                    row.get("status") in ("killed", "survived"):
                found[row["key"]] = row
    return found


class Writer:
    """Appends verdicts to the cache, each flushed to disk at once."""

    def __init__(self, path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        torn = False
        if os.path.isfile(path) and os.path.getsize(path) > 0:
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                torn = f.read(1) != b"\n"
        self.f = open(path, "a", encoding="utf-8")
        if torn:
            self.f.write("\n")  # end a line a killed run left torn

    def add(self, key, result):
        row = {"key": key, "status": result["status"], "by": result["by"],
               "seconds": result["seconds"]}
        if result.get("killer"):
            row["killer"] = result["killer"]
        self.f.write(json.dumps(row) + "\n")
        self.f.flush()
        os.fsync(self.f.fileno())

    def close(self):
        self.f.close()
