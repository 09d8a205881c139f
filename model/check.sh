#!/bin/sh
# model/check.sh: run the spin verifications of model/powerboxd.pml and
# model/split.pml.
#
#   model/check.sh OUTDIR gate       the gate (make model-check): the
#                                    verifications must pass and every
#                                    mutant must be rejected
#   model/check.sh OUTDIR findings   the findings (make model-findings):
#                                    reports which still reproduce
#
# Each run: spin -a, gcc pan, pan; the verdict is read from pan's report.
# Logs and trails stay in OUTDIR/<name>/.
set -eu

out=$1
mode=${2:-gate}
here=$(cd "$(dirname "$0")" && pwd)
SPIN=${SPIN:-spin}
PANCC=${PANCC:-gcc}
mkdir -p "$out"
fail=0

# The text by which pan names a violated invariant of powerboxd.pml: a
# ghost that only that property's macro reads (pan prints the expanded
# assertion).
prop_text() {
    case $1 in
    a) echo 'o_ack[' ;;
    d) echo 'o_nf[' ;;
    e) echo 'o_rm_sent[' ;;
    f) echo 'o_woke[' ;;
    F) echo 'pubg[' ;;
    "G'") echo 'o_rt_done[' ;;
    *) echo "model: unknown property $1" >&2; echo '@@none@@' ;;
    esac
}

# run NAME EXPECT PML "SPIN_DEFINES" "PAN_CFLAGS" "PAN_RUNFLAGS" [PROP]
# PAN_CFLAGS carries the optimisation level: -O0 compiles pan in about a
# second, -O2 takes ten but runs the large searches twice as fast.
# EXPECT is pass (no error, complete search) or fail (an error found);
# with PROP, fail also requires the error to be that property's assertion
# (and finding names it).
run() {
    name=$1 expect=$2 pml=$3 defs=$4 cflags=$5 rflags=$6 prop=${7:-}
    dir=$out/$name
    rm -rf "$dir"
    mkdir -p "$dir"
    start=$(date +%s)
    # shellcheck disable=SC2086
    (cd "$dir" && $SPIN -a $defs "$here/$pml" >spin.log 2>&1) || {
        echo "model: $name: spin -a failed"; cat "$dir/spin.log"; fail=1; return; }
    # shellcheck disable=SC2086
    (cd "$dir" && $PANCC -w $cflags -o pan pan.c >cc.log 2>&1) || {
        echo "model: $name: pan did not compile"; cat "$dir/cc.log"; fail=1; return; }
    # shellcheck disable=SC2086
    (cd "$dir" && ./pan $rflags >pan.log 2>&1) || true
    secs=$(( $(date +%s) - start ))
    errs=$(sed -n 's/.*errors: \([0-9][0-9]*\).*/\1/p' "$dir/pan.log" | head -1)
    states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' "$dir/pan.log" | head -1)
    what=$(grep -E -m1 'assertion violated|acceptance cycle|invalid end state|non-progress' \
               "$dir/pan.log" | sed "s/ (at depth.*//" | cut -c1-70 || true)
    incomplete=$(grep -E -m1 'max search depth too small|out of memory|Search not completed' \
                     "$dir/pan.log" || true)
    if [ -z "$errs" ]; then
        echo "model: $name: no verdict from pan"; tail -20 "$dir/pan.log"; fail=1; return
    fi
    case $expect in
    pass)
        if [ "$errs" = 0 ] && [ -z "$incomplete" ]; then
            echo "model: $name: verified, $states states, ${secs}s"
        else
            echo "model: $name: FAILED ($what$incomplete), ${secs}s; trail in $dir"
            fail=1
        fi ;;
    fail)
        if [ "$errs" != 0 ] && [ -n "$prop" ]; then
            if grep -m1 'assertion violated' "$dir/pan.log" |
                    grep -qF "$(prop_text "$prop")"; then
                echo "model: $name: rejected by ($prop) as it must be, ${secs}s"
            else
                echo "model: $name: rejected, but not by ($prop): $what; trail in $dir"
                fail=1
            fi
        elif [ "$errs" != 0 ]; then
            echo "model: $name: rejected as it must be ($what), ${secs}s"
        else
            echo "model: $name: NOT REJECTED, $states states: the check does not bite"
            fail=1
        fi ;;
    finding)
        if [ "$errs" != 0 ] && [ -n "$prop" ] &&
                grep -m1 'assertion violated' "$dir/pan.log" |
                grep -qF "$(prop_text "$prop")"; then
            echo "model: $name: reproduces (invariant ($prop) fails), ${secs}s; trail in $dir"
        elif [ "$errs" != 0 ]; then
            echo "model: $name: reproduces ($what), ${secs}s; trail in $dir"
        else
            echo "model: $name: no longer reproduces ($states states)"
        fi ;;
    esac
}

CC_SAFE="-O0 -DVECTORSZ=512 -DSAFETY"
CC_LIVE="-O0 -DVECTORSZ=512"
CC_BIG="-O2 -DVECTORSZ=512 -DSAFETY -DCOLLAPSE"

case $mode in
gate)
    # One request, every peer answer, three BUSY/transient/RETRY/lost-reply
    # answers and one unexpected receipt: safety, deadlock, quiescence.
    run safety-1 pass powerboxd.pml "-DNOLTL -DNREQ=1 -DBUSY_MAX=3 -DEXTRA_MAX=1" \
        "$CC_SAFE" "-m400000"
    # The same, liveness (h) with no fairness assumption at all (so it also
    # holds under weak fairness).
    run liveness-1 pass powerboxd.pml "-DNREQ=1 -DBUSY_MAX=3 -DEXTRA_MAX=1" \
        "$CC_LIVE" "-a -m400000"
    # Two concurrent requests (install/routine/one-shot beside
    # runtime-reply/exceptional/job) sharing launchd's job expiry.
    run safety-2 pass powerboxd.pml "-DNOLTL -DNREQ=2 -DPAIR -DBUSY_MAX=0 -DEXTRA_MAX=0" \
        "$CC_BIG" "-m400000 -w24"
    # Each mutant with the property that must reject it. unpublish is the
    # core before 9592232 (a published approval withdrawn as CANCELLED).
    # retire_skip is caught by (e) first; without (e), (G') must catch it.
    for mp in early_approve:a wake_drop:f remove_skip:e remove_gates:e \
              detach_late:e nf_on_failure:d unpublish:F; do
        m=${mp%%:*}
        run "mutant-$m" fail "mutants/$m.pml" "-DNOLTL -DNREQ=1" "$CC_SAFE" \
            "-m400000" "${mp#*:}"
    done
    run mutant-retire_skip fail mutants/retire_skip.pml "-DNOLTL -DNREQ=1 -DNO_P_E" \
        "$CC_SAFE" "-m400000" "G'"
    # The split-phase engine (split.pml): one request with every answer,
    # BUSY, a late reply, a silent peer and an unexpected receipt; its
    # liveness; two requests on the same routes, replies in any order and
    # one late reply.
    run split-safety-1 pass split.pml "-DNOLTL -DNREQ=1" "$CC_SAFE" "-m400000"
    run split-liveness-1 pass split.pml "-DNREQ=1" "$CC_LIVE" "-a -m400000"
    run split-safety-2 pass split.pml \
        "-DNOLTL -DNREQ=2 -DPAIR -DBUSY_MAX=0 -DSIL_MAX=0 -DEXTRA_MAX=0 -DDL_MAX=1" \
        "-O0 -DVECTORSZ=512 -DSAFETY -DCOLLAPSE" "-m400000 -w24"
    for m in seq_ignored withdraw_keep no_withdraw retire_waits fifo_match \
             install_abandon; do
        run "mutant-split_$m" fail "mutants/split_$m.pml" "-DNOLTL -DNREQ=2 -DPAIR" \
            "$CC_SAFE" "-m400000"
    done ;;
findings)
    # F1: invariant (F) (DECISION answers STATE), and liveness (h).
    run f1-6c5ae03 finding findings/f1_stop_before_delivery_6c5ae03.pml \
        "-DNOLTL -DNREQ=1" "$CC_SAFE" "-m400000" F
    run f1-6c5ae03-live finding findings/f1_stop_before_delivery_6c5ae03.pml \
        "-DNREQ=1" "$CC_LIVE" "-a -m400000"
    run f2-install-leak finding findings/f2_install_leak.pml "-DNOLTL -DNREQ=1" \
        "$CC_SAFE" "-m400000" ;;
*)
    echo "usage: $0 OUTDIR gate|findings" >&2; exit 2 ;;
esac

exit $fail
