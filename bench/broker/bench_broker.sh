#!/bin/sh
# bench/broker/bench_broker.sh: the brokered-open row (docs/BENCH.md,
# "Brokered open"), called by bench/bench.sh.
#
#   sh bench/broker/bench_broker.sh BIN_DIR WORKDIR [ROUNDS]
#
# Starts `pbx up` (its own runtime directory and root under WORKDIR, a
# policy that allows routine reads, no terminal), then times opens of
# one file of the root: plainly (pbx-bench-open, 1000 opens) and brokered
# (the same program under `pbx run --sandbox --scope root --opens
# routine`, 5 opens per
# job: pbx-broker's burst, ROUNDS jobs, default 4). Prints one line:
#
#   broker plain_ns=P brokered_ns=B ratio=B/P rounds=R failed=F
#
# (medians: the plain run's, and the median of the jobs' medians).
set -eu
BIN_DIR=${1:?usage: bench_broker.sh BIN_DIR WORKDIR [ROUNDS]}
WORK=${2:?usage: bench_broker.sh BIN_DIR WORKDIR [ROUNDS]}
ROUNDS=${3:-4}
rm -rf "$WORK"
mkdir -p "$WORK/root"
# pbx up runs only in a private directory of its user (0700).
mkdir -m 700 "$WORK/run"
WORK=$(cd "$WORK" && pwd -P)
printf 'one file\n' > "$WORK/root/file.txt"
printf '* * read file routine allow\n' > "$WORK/policy"
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

"$BIN_DIR/pbx" up --dir "$WORK/run" --root "$WORK/root" \
    --policy "$WORK/policy" --tty /dev/null </dev/null >"$WORK/up.out" 2>&1 &
UP=$!
trap 'kill "$UP" 2>/dev/null; wait "$UP" 2>/dev/null || true' EXIT
i=0
until grep -q '^pbx up: ready in' "$WORK/up.out"; do
    i=$((i + 1))
    [ "$i" -le 200 ] || { echo "bench: pbx up never ready" >&2; exit 1; }
    sleep 0.1
done
plain=$("$BIN_DIR/pbx-bench-open" "$WORK/root/file.txt" 1000)
failed=$(field failed "$plain")
meds=""
r=0
while [ "$r" -lt "$ROUNDS" ]; do
    line=$("$BIN_DIR/pbx" --dir "$WORK/run" run --sandbox --scope root --opens routine \
        --quiet -- "$BIN_DIR/pbx-bench-open" "$WORK/root/file.txt" 5 \
        2>>"$WORK/jobs.err")
    failed=$((failed + $(field failed "$line")))
    meds="$meds $(field median_ns "$line")"
    r=$((r + 1))
done
brokered=$(printf '%s\n' $meds | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
p=$(field median_ns "$plain")
awk -v p="$p" -v b="$brokered" -v r="$ROUNDS" -v f="$failed" 'BEGIN {
    printf "broker plain_ns=%d brokered_ns=%d ratio=%.0f rounds=%d failed=%d\n",
        p, b, (p > 0 ? b / p : 0), r, f }'
