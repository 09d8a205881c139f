#!/bin/sh
# scripts/quiet.sh: the shell of `make check`'s recipes in its quiet mode
# (the default; `make check V=1` and `.ci/run V=1` show everything). Make
# calls it as `quiet.sh -c 'RECIPE LINE'` with command echo turned off. It
# runs the line with /bin/sh, its standard output and error into one
# temporary file, and then:
#   - on success prints only the summary lines the line's tools print
#     ("N passed, M failed", "run: ok: ...", "NAME-check: ...", "make
#     check: ...", and each fuzz harness's "fuzz NAME: N runs, R exec/s"
#     with, when it ran fewer than FUZZ_RUNS, its reason), so neither compiler lines nor the expected startup
#     refusals that tests provoke are shown;
#   - on failure prints "make: FAILED: RECIPE LINE", then everything the
#     line printed, in full, and exits with its status.
# Each line's output is printed whole when it ends, so parallel jobs never
# interleave.
out=$(mktemp "${TMPDIR:-/tmp}/pbx-quiet.XXXXXX") || exec /bin/sh "$@"
/bin/sh "$@" >"$out" 2>&1
st=$?
if [ "$st" -ne 0 ]; then
    shift
    printf 'make: FAILED (exit %s): %s\n' "$st" "$*"
    cat "$out"
else
    grep -E '^[0-9]+ passed, [0-9]+ failed|^run: ok:|^[a-z0-9-]+-check: |^make check: |^[a-z0-9-]+: [0-9]+ .*(clean|ok|passed)|^fuzz [a-z0-9_]+: ' \
        "$out" || true
fi
rm -f "$out"
exit "$st"
