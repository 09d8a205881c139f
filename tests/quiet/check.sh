#!/bin/sh
# tests/quiet/check.sh: make check's quiet mode (`make quiet-check`, in
# `make check`). A throw-away Makefile in a temporary directory includes
# nothing of the project; it is driven with the project's own switch
# (QUIET_GOALS, V) and scripts/quiet.sh:
# 1. A passing goal prints its summary lines ("3 passed, 0 failed", a
#    fuzz harness's runs and rate, and its reason for fewer runs) and
#    neither its compiler line nor a test's expected refusal.
# 2. A failing goal exits non-zero and prints the failing line and all its
#    output (the refusal included), in full.
# 3. With V=1 every command and every line is printed, as before.
set -eu
# The inner makes are make's own children under `make -j2 check`: its
# jobserver flags would make them warn, which is not what is tested.
unset MAKEFLAGS MFLAGS MAKELEVEL
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pbx-quiet.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
bad() {
    echo "quiet-check: FAIL: $*"
    fails=$((fails + 1))
}
# The Makefile's quiet block, taken from the project's Makefile itself, so
# this tests the lines make check runs with.
awk '/^QUIET_GOALS \?=/{on=1} on{print} on&&/^endif$/{n++} n==2{exit}' \
    "$here/Makefile" >"$tmp/quiet.mk"
cat >"$tmp/Makefile" <<MK
include $tmp/quiet.mk
check: pass
pass:
	echo "cc -O2 -c x.c -o x.o"
	echo "pbx-vfsd: --root '/x': refused (expected by the test)" >&2
	echo "3 passed, 0 failed"
	echo "fuzz fuzz_x: 12000 runs, 40 exec/s"
	echo "fuzz fuzz_x: fewer than 2000000 runs: each input boots a core"
failing:
	echo "cc -O2 -c y.c -o y.o"
	echo "pbx-vfsd: refused, and this time it matters" >&2; exit 3
MK
# The quiet block names \$(CURDIR)/scripts/quiet.sh: run from a directory
# that has it.
mkdir -p "$tmp/scripts"
cp "$here/scripts/quiet.sh" "$tmp/scripts/quiet.sh"
out=$(cd "$tmp" && make --no-print-directory check 2>&1) || bad "check failed: $out"
want=$(printf '%s\n' "3 passed, 0 failed" "fuzz fuzz_x: 12000 runs, 40 exec/s" \
    "fuzz fuzz_x: fewer than 2000000 runs: each input boots a core")
[ "$out" = "$want" ] || bad "a passing check printed: $out"
st=0
out=$(cd "$tmp" && make --no-print-directory QUIET_GOALS="check failing" \
    check failing 2>&1) || st=$?
[ "$st" -ne 0 ] || bad "a failing goal exited 0"
case "$out" in
*"FAILED (exit 3)"*"refused, and this time it matters"*) ;;
*) bad "a failure was not shown in full: $out" ;;
esac
out=$(cd "$tmp" && make --no-print-directory V=1 check 2>&1) ||
    bad "V=1 check failed: $out"
case "$out" in
*"cc -O2 -c x.c"*"refused (expected by the test)"*) ;;
*) bad "V=1 did not show every line: $out" ;;
esac
if [ "$fails" -ne 0 ]; then
    echo "quiet-check: $fails failure(s)"
    exit 1
fi
echo "quiet-check: passing, failing and V=1 runs print what they should"
