#!/bin/bash
# e2e_loop.sh [RUNS] [OUT]: issue 22 item 10's proof that no scenario is
# flaky. It clones HEAD twice under OUT (default build/e2e-loop), builds one
# clone, and runs `run.py all` RUNS times in a row (default 10) there, while
# the other clone runs `make check` from a clean build in a loop beside it,
# so the machine is loaded by a parallel make check during every run. It
# stops at the first failing run and exits 1; each run's line (exit status,
# seconds, load average at its start and end, whether its make check was
# running at its start and at its end) goes to OUT/loop.txt, each run's output to
# OUT/run-N.log, each make check's to OUT/check-N.log. A test tool: never
# installed; a full loop takes about 40 minutes on 2 cores (not in make check).
set -u
runs=${1:-10}
out=$(realpath -m "${2:-build/e2e-loop}")
top=$(git rev-parse --show-toplevel) || exit 2
rm -rf "$out" && mkdir -p "$out" || exit 2
git clone -q "$top" "$out/run" && git clone -q "$top" "$out/check" || exit 2
log="$out/loop.txt"
echo "tree $(git -C "$out/run" rev-parse --short HEAD) start $(date -u +%H:%M:%S)" >> "$log"
# Whether the loop's own make check is running (1) or not (0): a marker
# file it holds while it runs (another make check on the machine does not
# count).
checks() { [ -e "$out/checking" ] && echo 1 || echo 0; }
# The make check loop runs in a process group of its own, ended with the
# loop (it is only the load beside the runs).
setsid bash -c '
  out=$1; runs=$2; log=$3; cd "$out/check" || exit 2; n=0
  # Bounded: at most one make check per run, and none after the loop ends.
  while [ ! -e "$out/done" ] && [ "$n" -lt "$runs" ]; do
      n=$((n + 1)); rm -rf build; s=$(date +%s)
      touch "$out/checking"
      make check > "$out/check-$n.log" 2>&1; rc=$?
      rm -f "$out/checking"
      echo "check $n rc=$rc secs=$(( $(date +%s) - s ))" >> "$log"
  done' e2e-loop-check "$out" "$runs" "$log" &
checker=$!
cd "$out/run" || exit 2
make -j2 all peers build/bin/powerboxd > "$out/build.log" 2>&1 ||
    { echo "build failed" >> "$log"; touch "$out/done"; kill -- "-$checker"; exit 1; }
# Let the make check beside reach its compiling before the first run.
sleep 60
status=0
for i in $(seq 1 "$runs"); do
    s=$(date +%s); l0=$(cut -d' ' -f1-3 /proc/loadavg); c0=$(checks)
    rm -rf build/run-e2e
    python3 tests/e2e/run.py build/bin build/run-e2e all > "$out/run-$i.log" 2>&1
    rc=$?
    echo "run $i rc=$rc secs=$(( $(date +%s) - s )) load_start=$l0" \
         "load_end=$(cut -d' ' -f1-3 /proc/loadavg) checks_start=$c0" \
         "checks_end=$(checks) $(date -u +%H:%M:%S)" >> "$log"
    [ "$rc" -ne 0 ] && { status=1; break; }
done
touch "$out/done"
kill -- "-$checker" 2>/dev/null
echo "loop end $(date -u +%H:%M:%S) status $status" >> "$log"
exit "$status"
