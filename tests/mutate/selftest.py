#!/usr/bin/env python3
"""Self-test of the mutation tool's speed-ups (docs/TESTING.md "Mutation
testing"): pbx-test's fail-fast mode and the verdict cache.

    selftest.py CC OUTDIR

Builds the test runner with a three-test file (fail, fail, pass) and checks
that PBX_TEST_FAILFAST=1 stops at the first failure while the default run
runs all three; then checks that the cache returns what it was given, skips
a torn line, and that changing one byte of one input file changes every key.
Exits non-zero with a message on the first broken promise.
"""
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutcache  # noqa: E402

TESTS = r'''
#include "tests/runner/pbx_test.h"
PBX_TEST(selftest_a_fails) { PBX_CHECK(1 == 2); }
PBX_TEST(selftest_b_fails) { PBX_CHECK(2 == 3); }
PBX_TEST(selftest_c_passes) { PBX_CHECK(1 == 1); }
'''


def fail(msg):
    sys.exit("mutate selftest: " + msg)


def runner(cc, out):
    src = os.path.join(out, "selftest_tests.c")
    with open(src, "w") as f:
        f.write(TESTS)
    exe = os.path.join(out, "selftest-runner")
    subprocess.run([cc, "-std=c11", "-I.", "tests/runner/pbx_test.c", src,
                    "-o", exe], check=True)
    for env, fails in ((None, 2), ("0", 2), ("1", 1)):
        e = dict(os.environ)
        e.pop("PBX_TEST_FAILFAST", None)
        if env is not None:
            e["PBX_TEST_FAILFAST"] = env
        p = subprocess.run([exe], env=e, capture_output=True, text=True)
        got = p.stdout.count("FAIL ")
        if p.returncode == 0 or got != fails:
            fail(f"PBX_TEST_FAILFAST={env}: {got} failures reported, exit "
                 f"{p.returncode}; expected {fails} and non-zero")
        if env == "1" and "selftest_c_passes" in p.stdout:
            fail("fail-fast ran a test after the first failure")


def cache(out):
    root = os.path.join(out, "tree")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "core"))
    os.makedirs(os.path.join(root, "tests"))
    for rel, text in (("core/a.c", "int a;\n"), ("tests/t.c", "int t;\n")):
        with open(os.path.join(root, rel), "w") as f:
            f.write(text)
    m = {"file": "core/a.c", "line": 1, "orig": "int a;", "mutated": "",
         "op": "del", "desc": "d"}
    k1 = mutcache.mutant_key(m, mutcache.inputs_hash(root, {"cc": "cc"}))
    path = os.path.join(out, "cache.jsonl")
    if os.path.exists(path):
        os.remove(path)
    w = mutcache.Writer(path)
    w.add(k1, {"status": "survived", "by": "", "seconds": 1.0})
    w.close()
    with open(path, "a") as f:
        f.write('{"key": "torn", "sta')   # a run killed mid-line
    w = mutcache.Writer(path)
    w.add("k2", {"status": "killed", "by": "tests", "seconds": 2.0})
    w.close()
    got = mutcache.load(path)
    if got.get(k1, {}).get("status") != "survived" or \
            got.get("k2", {}).get("by") != "tests" or "torn" in got:
        fail(f"the cache read back {sorted(got)}")
    if mutcache.mutant_key(m, mutcache.inputs_hash(root, {"cc": "cc"})) != k1:
        fail("the same inputs gave another key")
    with open(os.path.join(root, "tests/t.c"), "a") as f:
        f.write(" ")
    if mutcache.mutant_key(m, mutcache.inputs_hash(root, {"cc": "cc"})) == k1:
        fail("a changed test source kept the key")
    if mutcache.mutant_key(m, mutcache.inputs_hash(
            root, {"cc": "cc", "sim_steps": 1})) == k1:
        fail("a changed setting kept the key")


def main(argv):
    cc, out = argv
    os.makedirs(out, exist_ok=True)
    runner(cc, out)
    cache(out)
    print("mutate selftest: fail-fast and cache ok")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
