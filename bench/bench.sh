#!/bin/sh
# bench/bench.sh: run every benchmark and print one table (docs/BENCH.md).
#
#   sh bench/bench.sh [--smoke] PBX_BENCH WORKDIR
#
# Instruction counts come from callgrind with --collect-atstart=no and
# --toggle-collect on the measured loop only, so setup (arena, PBX1,
# prefilling the pools) is never counted and every count is exact and
# repeatable; the core-only and powerboxd-half figures are inclusive
# costs inside that region (callgrind_annotate --inclusive=yes). Wall-clock numbers are native runs, best of several, and
# noisy on a shared machine. --smoke runs a few iterations of everything
# natively and only checks that each benchmark completes and reports
# sane numbers (make check).
#
# The host latency row starts powerboxd (built next to PBX_BENCH) with the
# reference peers exactly as `make run` does (bench/bench_host.py imports
# tests/e2e/run.py) and times BENCH_HOST_N back-to-back lifecycles of one
# pbx-client connection (relayed by pbx-launchd over the broker) beside
# 12 raw SEQPACKET round trips.
#
# Environment: BENCH_CAPS (default "64 1024 16384"), BENCH_N (measured
# lifecycles under callgrind, default 200), BENCH_WALL_N (native, 20000),
# BENCH_HOST_N (powerboxd lifecycles end to end, default 2000).
set -eu

SMOKE=0
if [ "${1:-}" = "--smoke" ]; then SMOKE=1; shift; fi
BIN=${1:?usage: bench.sh [--smoke] PBX_BENCH WORKDIR}
WORK=${2:?usage: bench.sh [--smoke] PBX_BENCH WORKDIR}
CAPS=${BENCH_CAPS:-64 1024 16384}
N=${BENCH_N:-200}
WALL_N=${BENCH_WALL_N:-20000}
HOST_N=${BENCH_HOST_N:-2000}
BIN_DIR=$(dirname "$BIN")
HOST_PY="$(dirname "$0")/bench_host.py"
CLOCK_PY="$(dirname "$0")/bench_clock.py"
LIFE_PY="$(dirname "$0")/bench_life.py"
mkdir -p "$WORK"

# capture NAME CMD...: runs CMD with its output in $WORK/NAME.out and its
# errors in $WORK/NAME.err, and fails the bench when CMD fails (a pipe
# into sed would hide the exit status: sh has no pipefail), so a failed
# part never becomes an empty or missing row.
capture() {
    name=$1
    shift
    if ! "$@" > "$WORK/$name.out" 2> "$WORK/$name.err"; then
        echo "bench: $name failed: $*" >&2
        tail -n 20 "$WORK/$name.err" >&2
        exit 1
    fi
}

# field NAME LINE: the value of NAME=value in a result line.
field() { printf '%s\n' "$2" | tr ' ' '\n' | sed -n "s/^$1=//p"; }

# positive VALUE WHAT: fail unless VALUE is a number above zero.
positive() {
    awk -v v="$1" 'BEGIN { exit !(v + 0 > 0) }' ||
        { echo "bench: $2 is not a positive number: '$1'" >&2; exit 1; }
}

if [ "$SMOKE" = 1 ]; then
    for cap in 64 1024; do
        line=$("$BIN" core --cap "$cap" --n 20)
        positive "$(field ns_per_lifecycle "$line")" "core cap=$cap time"
        [ "$(field events_per_lifecycle "$line")" = "22.00" ] ||
            { echo "bench: unexpected lifecycle shape: $line" >&2; exit 1; }
    done
    line=$("$BIN" floor --n 20)
    positive "$(field wire_bytes_per_lifecycle "$line")" "floor bytes"
    line=$("$BIN" sha2 --path 0 --mib 1 --reps 1 --file "$WORK/sha2.dat")
    positive "$(field pbx_mb_s "$line")" "sha2 MB/s"
    [ "$(field digest_match "$line")" = yes ] || exit 1
    # The x86 SHA path too, where the CPU has it (status 2: it does not).
    rc=0
    line=$("$BIN" sha2 --path 1 --mib 1 --reps 1 --file "$WORK/sha2.dat") ||
        rc=$?
    if [ "$rc" = 0 ]; then
        positive "$(field pbx_mb_s "$line")" "sha2 x86-sha MB/s"
        [ "$(field digest_match "$line")" = yes ] || exit 1
    elif [ "$rc" != 2 ]; then
        exit 1
    fi
    # powerboxd reads its clock through the vDSO: no clock_gettime system
    # call in 3 lifecycles where one is mapped (bench_clock.py).
    python3 "$CLOCK_PY" "$BIN_DIR" "$WORK/clock" 3 --expect-no-clock \
        | grep '^clock ' || exit 1
    line=$("$BIN" seqpacket --n 200 --batches 1)
    positive "$(field best_ns "$(printf '%s\n' "$line" | head -1)")" \
        "seqpacket round trip"
    rm -f "$WORK/sha2.dat"
    capture host-smoke python3 "$HOST_PY" "$BIN_DIR" "$WORK/host" 3
    line=$(sed -n 's/^host //p' "$WORK/host-smoke.out")
    [ "$(field repeat "$line")" = 3 ] ||
        { echo "bench: host lifecycles did not all complete: $line" >&2; exit 1; }
    positive "$(field median_ns "$line")" "host lifecycle latency"
    # The revocable descriptor (pbx-bench-fd): reads complete and match,
    # through vfsd and through the zero-work FUSE server (the floor), at
    # both read sizes of the table.
    for chunk in 65536 4096; do
        line=$("$BIN_DIR/pbx-bench-fd" "$BIN_DIR" "$WORK/fd" --chunk "$chunk" \
            --reps 2 2>/dev/null) || true
        [ "$(field same "$line")" = yes ] ||
            { echo "bench: revocable descriptor read failed: $line" >&2; exit 1; }
        [ "$(field floor_same "$line")" = yes ] ||
            { echo "bench: zero-work FUSE floor read failed: $line" >&2; exit 1; }
        positive "$(field fuse_mb_s "$line")" "revocable descriptor MB/s"
        positive "$(field floor_mb_s "$line")" "zero-work FUSE floor MB/s"
    done
    # The brokered open (pbx up, one sandboxed job of 5 brokered opens).
    line=$(sh "$(dirname "$0")/broker/bench_broker.sh" "$BIN_DIR" \
        "$WORK/broker" 1)
    [ "$(field failed "$line")" = 0 ] ||
        { echo "bench: brokered opens failed: $line" >&2; exit 1; }
    positive "$(field brokered_ns "$line")" "brokered open time"
    # The lifecycle beside its skeletons (bench_life.py --smoke): 3
    # recorded lifecycles replayed with the same counts, a round, 2 jobs
    # at once; it fails when a skeleton's counts differ.
    capture life-smoke python3 "$LIFE_PY" "$BIN_DIR" "$WORK/life" --smoke
    line=$(sed -n 's/^life ok //p' "$WORK/life-smoke.out")
    positive "$(field lifecycle_ns "$line")" "lifecycle beside its skeleton"
    positive "$(field skel_ns "$line")" "skeleton replay"
    positive "$(field cpu_life_ns "$line")" "lifecycle CPU time"
    positive "$(field cpu_needed_ns "$line")" "skeleton CPU time"
    # The live powerboxd under callgrind: one pair of short runs.
    capture live-smoke python3 "$(dirname "$0")/bench_live_ir.py" \
        "$BIN_DIR" "$WORK/live" 1 3 1
    line=$(sed -n 's/^live //p' "$WORK/live-smoke.out")
    positive "$(field ir_per_lifecycle "$line")" "live powerboxd instructions"
    # The core's profile against the floor (bench_core_prof.py): it
    # fails unless every instruction of each dump is attributed once.
    capture coreprof-smoke python3 "$(dirname "$0")/bench_core_prof.py" \
        "$BIN" "$WORK/coreprof" 5 --top 1
    line=$(sed -n 's/^coreprof //p' "$WORK/coreprof-smoke.out")
    positive "$(field core_ir "$line")" "core profile"
    positive "$(field floor_ir "$line")" "floor profile"
    # Held grants beside one: 3 held, 3 lifecycles.
    capture grants-smoke python3 "$(dirname "$0")/bench_grants.py" \
        "$BIN_DIR" "$WORK/grants" 3 3
    line=$(sed -n 's/^grants //p' "$WORK/grants-smoke.out")
    [ "$(field held "$line")" = 3 ] ||
        { echo "bench: held grants: $line" >&2; exit 1; }
    positive "$(field ratio "$line")" "lifecycle beside held grants"
    # The held grants are real rows: procd installs and vfsd objects.
    [ "$(field installs "$line")" = 3 ] && [ "$(field objects "$line")" = 3 ] ||
        { echo "bench: held grants not live at procd and vfsd: $line" >&2; exit 1; }
    echo "bench-smoke: core, floor, sha2, seqpacket, 3 powerboxd lifecycles, the revocable descriptor beside its zero-work FUSE floor, the brokered open and the lifecycle beside its skeletons, the live powerboxd under callgrind, the core's profile and the lifecycle beside held grants ran and look sane"
    exit 0
fi

command -v valgrind >/dev/null 2>&1 ||
    { echo "bench: valgrind is required for instruction counts" >&2; exit 1; }

# ir NAME TOGGLES... -- ARGS...: instructions callgrind collected inside
# the toggled functions while running pbx-bench ARGS.
ir() {
    name=$1; shift
    toggles=""
    while [ "$1" != "--" ]; do toggles="$toggles --toggle-collect=$1"; shift; done
    shift
    # shellcheck disable=SC2086
    valgrind --tool=callgrind --collect-atstart=no $toggles \
        --callgrind-out-file="$WORK/cg.$name" "$BIN" "$@" \
        >"$WORK/cg.$name.stdout" 2>"$WORK/cg.$name.log" ||
        { cat "$WORK/cg.$name.log" >&2; exit 1; }
    sed -n 's/^totals: *//p' "$WORK/cg.$name" | head -1
}
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", a / b }'; }

# incl NAME FUNCTION...: the summed inclusive instructions of FUNCTIONs
# inside the collected region of run NAME (0 for a function not called).
# callgrind_annotate may print a function twice, under its object and
# under its absolute source path, and the second line can hold code
# inlined from elsewhere that the first leaves out (35 instructions a
# lifecycle of pbx_core_on_peer_reply: docs/bench/PROFILES.md, "Profiles
# of the rows not met"), so each function counts its largest line.
incl() {
    name=$1; shift
    callgrind_annotate --inclusive=yes --threshold=100 --auto=no \
        "$WORK/cg.$name" >"$WORK/cg.$name.incl" 2>/dev/null
    for fn in "$@"; do
        grep -E ":$fn(\.[a-z0-9.]+)?( \[.*)?\$" "$WORK/cg.$name.incl" |
            awk '{ gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0 }
                 END { printf "%.0f\n", m }'
    done | awk '{ s += $1 } END { printf "%.0f", s }'
}
CORE_ENTRIES="pbx_core_on_public pbx_core_step pbx_core_on_reply_delivered \
pbx_core_on_peer_reply"
BENCH_OPS="bench_op_send bench_op_query bench_op_delete bench_op_reserve \
bench_op_release bench_op_alias bench_op_wake"

# The floor: both ends of every frame, and powerboxd's half of it.
fl_all=$(div "$(ir floor 'bench_floor_measure*' -- floor --n "$N")" "$N")
fl_core=$(div "$(incl floor bench_floor_core_half bench_floor_core_digest)" "$N")
fl_line=$("$BIN" floor --n "$WALL_N")

echo "## core lifecycle (routine install mode, one-shot, 38-byte selector)"
echo
echo "| capacity | live grants | open requests | Ir/lifecycle (client+core+peers) | Ir/lifecycle (core only) | Ir/core event | core over its floor | wall ns/lifecycle |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
for cap in $CAPS; do
    sys=$(div "$(ir "core-$cap" 'bench_measure*' -- core --cap "$cap" --n "$N")" "$N")
    # Core only: its entry points minus the ops callbacks they made.
    # shellcheck disable=SC2086
    entries=$(incl "core-$cap" $CORE_ENTRIES)
    # shellcheck disable=SC2086
    ops=$(incl "core-$cap" $BENCH_OPS)
    core=$(div "$((entries - ops))" "$N")
    line=$("$BIN" core --cap "$cap" --n "$WALL_N")
    ev=$(field events_per_lifecycle "$line")
    printf '| %s | %s | %s | %s | %s | %s | %sx | %.0f |\n' "$cap" \
        "$(field live "$line")" "$(field open "$line")" "$sys" "$core" \
        "$(div "$core" "$ev")" \
        "$(awk -v a="$core" -v b="$fl_core" 'BEGIN { printf "%.2f", a / b }')" \
        "$(field ns_per_lifecycle "$line")"
done
echo
echo "## physical floor of one lifecycle (ipc codec + SHA-256 only)"
echo
echo "| floor | Ir/lifecycle | wall ns/lifecycle |"
echo "|---|---:|---:|"
printf '| both ends: %s frames, %s wire bytes, 1 SHA-256 | %s | %.0f |\n' \
    "$(field frames_per_lifecycle "$fl_line")" \
    "$(field wire_bytes_per_lifecycle "$fl_line")" "$fl_all" \
    "$(field ns_per_lifecycle "$fl_line")"
printf '| powerboxd half: encode sent, decode received, 1 SHA-256 | %s | |\n' \
    "$fl_core"

# With --reps 1, pbx-bench hashes the buffer once whole (the digest the
# oracle checks) and once in 1 MiB messages (timed): 2 x mib MiB in all,
# which the Ir/byte below divides by.
mib=4
sha_ir=$(ir sha2 'bench_sha2_measure*' -- sha2 --path 0 --mib "$mib" --reps 1 --oracle 0)
sha_line=$("$BIN" sha2 --path 0 --mib 64 --reps 3 --file "$WORK/sha2.dat")
# The x86 SHA extensions where the CPU has them (status 2 where not).
# Valgrind's CPU does not offer them, so that row has no Ir/byte.
rc=0
sha_ni_line=$("$BIN" sha2 --path 1 --mib 64 --reps 3 --file "$WORK/sha2.dat") ||
    rc=$?
[ "$rc" = 0 ] || [ "$rc" = 2 ] || exit 1
rm -f "$WORK/sha2.dat"
echo
echo "## SHA-256 (64 MiB as 1 MiB messages, the fastest message of 3 passes)"
echo
echo "| implementation | MB/s | cycles/byte (TSC) | Ir/byte |"
echo "|---|---:|---:|---:|"
printf '| pbx sha2 portable (in memory) | %s | %s | %s |\n' \
    "$(field pbx_mb_s "$sha_line")" "$(field cycles_per_byte "$sha_line")" \
    "$(awk -v a="$sha_ir" -v b="$mib" 'BEGIN { printf "%.2f", a / (2 * b * 1048576) }')"
if [ "$rc" = 0 ]; then
    printf '| pbx sha2 x86 SHA extensions (in memory, digest %s) | %s | %s | n/a (valgrind lacks SHA) |\n' \
        "$(field digest_match "$sha_ni_line" | sed 's/yes/matches/')" \
        "$(field pbx_mb_s "$sha_ni_line")" \
        "$(field cycles_per_byte "$sha_ni_line")"
else
    echo '| pbx sha2 x86 SHA extensions | not available on this CPU | | |'
fi
printf '| sha256sum (whole process, same file, digest %s) | %s | | |\n' \
    "$(field digest_match "$sha_line" | sed 's/yes/matches/')" \
    "$(field sha256sum_mb_s "$sha_line")"

# powerboxd's system calls per lifecycle under strace -c (bench_clock.py).
clk_line=$(python3 "$CLOCK_PY" "$BIN_DIR" "$WORK/clock" 200 | grep '^clock ')
echo
echo "## powerboxd system calls per lifecycle (strace -c, 200 lifecycles)"
echo
if [ "$(field strace "$clk_line")" = missing ]; then
    echo "strace is not installed: not measured."
else
    echo "| vDSO mapped | syscalls/lifecycle | clock_gettime/lifecycle |"
    echo "|---|---:|---:|"
    printf '| %s | %s | %s |\n' "$(field vdso "$clk_line")" \
        "$(field syscalls_per_lifecycle "$clk_line")" \
        "$(field clock_gettime_per_lifecycle "$clk_line")"
fi

echo
echo "## host transport floor: AF_UNIX SOCK_SEQPACKET round trip, 128 bytes"
echo
echo "| form | best ns/round trip | mean ns/round trip |"
echo "|---|---:|---:|"
"$BIN" seqpacket --n 20000 --batches 5 >"$WORK/seqpacket.out"
while read -r _ form _ best mean; do
    printf '| %s | %s | %s |\n' "${form#form=}" "${best#best_ns=}" \
        "${mean#mean_ns=}"
done <"$WORK/seqpacket.out"
plain=$(sed -n 's/.*form=plain .*best_ns=\([0-9]*\).*/\1/p' "$WORK/seqpacket.out")
out=$(sed -n 's/.*form=fd_out .*best_ns=\([0-9]*\).*/\1/p' "$WORK/seqpacket.out")
both=$(sed -n 's/.*form=fd_both .*best_ns=\([0-9]*\).*/\1/p' "$WORK/seqpacket.out")
# One lifecycle on the host: 12 round trips (BEGIN, SELECTOR, DECISION,
# CONSUME, POLICY, VIEW ACTIVE, VIEW REMOVE, RETIRE plain; COMMIT, DETACH
# fd out; RESOLVE fd back, timed as fd out; INSTALL fd both ways).
echo
printf 'host lifecycle transport floor: 8 plain + 3 one-fd + 1 two-fd round trips = %s ns\n' \
    "$(awk -v p="$plain" -v o="$out" -v b="$both" 'BEGIN { printf "%.0f", 8*p + 3*o + b }')"
pmean=$(sed -n 's/.*form=plain .*mean_ns=\([0-9]*\).*/\1/p' "$WORK/seqpacket.out")
omean=$(sed -n 's/.*form=fd_out .*mean_ns=\([0-9]*\).*/\1/p' "$WORK/seqpacket.out")
bmean=$(sed -n 's/.*form=fd_both .*mean_ns=\([0-9]*\).*/\1/p' "$WORK/seqpacket.out")
fbest=$(awk -v p="$plain" -v o="$out" -v b="$both" 'BEGIN { printf "%.0f", 8*p + 3*o + b }')
fmean=$(awk -v p="$pmean" -v o="$omean" -v b="$bmean" 'BEGIN { printf "%.0f", 8*p + 3*o + b }')

# powerboxd end to end, right after the floor so both see the same load.
load=$(cut -d' ' -f1-3 /proc/loadavg)
python3 "$HOST_PY" "$BIN_DIR" "$WORK/host" "$HOST_N" >"$WORK/host.out"
h=$(sed -n 's/^host //p' "$WORK/host.out")
us() { awk -v v="$1" 'BEGIN { printf "%.0f", v / 1000 }'; }
echo
echo "## powerboxd end to end: $HOST_N routine one-shot install lifecycles on one connection (load $load)"
echo
echo "| measure | min µs | median µs | p99 µs | mean µs |"
echo "|---|---:|---:|---:|---:|"
printf '| powerboxd + 4 reference peers, BEGIN to CONSUME reply | %s | %s | %s | %s |\n' \
    "$(us "$(field min_ns "$h")")" "$(us "$(field median_ns "$h")")" \
    "$(us "$(field p99_ns "$h")")" "$(us "$(field mean_ns "$h")")"
printf '| floor: 12 SEQPACKET round trips (best batch / mean) | %s | | | %s |\n' \
    "$(us "$fbest")" "$(us "$fmean")"
echo
printf 'median over the best floor: %sx; DECISION calls per lifecycle: %s\n' \
    "$(awk -v a="$(field median_ns "$h")" -v b="$fbest" 'BEGIN { printf "%.1f", a / b }')" \
    "$(field decisions_per_lifecycle "$h")"
printf 'peer calls per lifecycle: vfsd RESOLVE %s DETACH %s RETIRE %s; ttyd POLICY %s VIEW ACTIVE %s VIEW REMOVE %s; procd INSTALL %s handle closed %s; launchd WAKE %s\n' \
    "$(field vfsd_resolve "$h")" "$(field vfsd_detach "$h")" \
    "$(field vfsd_retire "$h")" "$(field ttyd_policy "$h")" \
    "$(field ttyd_view_active "$h")" "$(field ttyd_view_remove "$h")" \
    "$(field procd_install "$h")" "$(field procd_handle_closed "$h")" \
    "$(field launchd_wake_request "$h")"
printf 'CPU µs per lifecycle: client %s, powerboxd %s, vfsd %s, ttyd %s, procd %s, launchd %s\n' \
    "$(us "$(field cpu_ns_client "$h")")" "$(us "$(field cpu_ns_powerboxd "$h")")" \
    "$(us "$(field cpu_ns_vfsd "$h")")" "$(us "$(field cpu_ns_ttyd "$h")")" \
    "$(us "$(field cpu_ns_procd "$h")")" "$(us "$(field cpu_ns_launchd "$h")")"

# The revocable descriptor (docs/BENCH.md): 1 MiB read through vfsd's
# OPEN descriptor (FUSE, direct I/O) beside a plain read of the same file
# and a read through the zero-work FUSE server (every READ one reply from
# a static buffer: the floor of a FUSE read), 64 KiB and 4 KiB preads,
# read in turn, best of 20 each. Where the floor cannot be mounted its
# columns say so (pbx-bench-fd's stderr says why).
echo
echo "## revocable descriptor: 1 MiB read through vfsd's OPEN descriptor beside a direct read and a zero-work FUSE server"
echo
echo "| read size | direct MB/s | zero-work FUSE MB/s | revocable MB/s | revocable / direct (target >= 0.5 at 64 KiB) | floor / direct | revocable / floor |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for chunk in 65536 4096; do
    line=$("$BIN_DIR/pbx-bench-fd" "$BIN_DIR" "$WORK/fd" --chunk "$chunk" \
        --reps 20 2>/dev/null) || true
    [ "$(field same "$line")" = yes ] ||
        { echo "bench: revocable descriptor read failed: $line" >&2; exit 1; }
    floor=$(field floor_mb_s "$line")
    case $(field floor_same "$line") in
    yes) ;;
    unmounted) floor="not mounted (FUSE cannot be mounted here)" ;;
    *) echo "bench: zero-work FUSE floor read failed: $line" >&2; exit 1 ;;
    esac
    printf '| %s KiB | %s | %s | %s | %s | %s | %s |\n' "$((chunk / 1024))" \
        "$(field direct_mb_s "$line")" "$floor" "$(field fuse_mb_s "$line")" \
        "$(field ratio "$line")" "$(field floor_ratio "$line")" \
        "$(field fuse_floor_ratio "$line")"
done

# The brokered open (docs/BENCH.md, "Brokered open"): open() of one file
# of the root under `pbx run --sandbox --scope root --opens routine`
# (request as the job, routine policy answer, OPEN, injected descriptor)
# beside a plain open() of the same file.
echo
echo "## brokered open: one open() through pbx-broker beside a plain open() of the same file"
echo
echo "| plain open ns (median) | brokered open ns (median) | ratio |"
echo "|---:|---:|---:|"
line=$(sh "$(dirname "$0")/broker/bench_broker.sh" "$BIN_DIR" "$WORK/broker" 8)
[ "$(field failed "$line")" = 0 ] ||
    { echo "bench: brokered opens failed: $line" >&2; exit 1; }
printf '| %s | %s | %s |\n' "$(field plain_ns "$line")" \
    "$(field brokered_ns "$line")" "$(field ratio "$line")"

# The lifecycle beside its zero-work skeletons, its system calls, launchd's
# CPU, throughput, polkit and powerboxd's RSS (bench_life.py, pinned to
# one CPU), then the rows it cannot measure yet and why.
echo
capture life python3 "$LIFE_PY" "$BIN_DIR" "$WORK/life"
sed -n '/^## lifecycle/,$p' "$WORK/life.out"
echo
echo "arena bytes per request (PBX1 arena over capacity): $(for cap in $CAPS; do
    l=$("$BIN" core --cap "$cap" --n 1)
    printf '%s at %s, ' "$(field arena_bytes_per_request "$l")" "$cap"
done | sed 's/, $//')"
# The lifecycle beside 900 live grants (bench_grants.py): shell jobs hold
# 900 job-lifetime install-mode grants (vfsd objects and procd installs
# live) on one stack and 1 on another; 7 interleaved rounds of 200.
capture grants python3 "$(dirname "$0")/bench_grants.py" "$BIN_DIR" \
    "$WORK/grants" 900 200
g=$(sed -n 's/^grants //p' "$WORK/grants.out")
printf 'lifecycle with %s live grants (of %s asked; procd installs %s, vfsd objects %s; first refusal: %s) / with 1: %s / %s µs = %sx (medians of %s interleaved rounds; target <= 1.1x at 900)\n' \
    "$(field held "$g")" "$(field asked "$g")" "$(field installs "$g")" \
    "$(field objects "$g")" \
    "$(field refused "$g" | tr '_' ' ')" "$(us "$(field median_ns_held "$g")")" \
    "$(us "$(field median_ns_one "$g")")" "$(field ratio "$g")" \
    "$(field rounds "$g")"
# The live powerboxd under callgrind (bench_live_ir.py): instructions per
# lifecycle from 220 - 20 lifecycles, twice, over the floor's powerboxd half.
capture live python3 "$(dirname "$0")/bench_live_ir.py" "$BIN_DIR" \
    "$WORK/live" 20 220
live=$(sed -n 's/^live //p' "$WORK/live.out")
lir=$(field ir_per_lifecycle "$live")
printf "live powerboxd's user instructions per routine install-mode lifecycle, the floor's (callgrind, 200 lifecycles, two runs): %s and %s (spread %s%%) / codec floor's powerboxd half %s = %s\n" \
    "$lir" "$(field second "$live")" "$(field spread_pct "$live")" "$fl_core" \
    "$(awk -v a="$lir" -v b="$fl_core" 'BEGIN { printf "%.2fx", a / b }')"
