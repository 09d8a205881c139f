#!/bin/sh
# peers/demo/run.sh BIN_DIR WORK_DIR: `make run`, the demo of a sandboxed
# program that gets exactly one file (README.md, "make run").
#
# It starts the stack with `pbx up` in WORK_DIR/stack, serving
# WORK_DIR/root (which holds docs/readme.txt), then runs
# `pbx run --sandbox -- pbx-demo docs/readme.txt` and stops the stack.
# On a terminal the policy prompts for every read, so ttyd asks you on
# this terminal and waits for your answer; without one (CI) the routine
# policy of `pbx up` approves routine reads, so the run still exits 0.
# Exits with pbx-demo's status (0: every step went as told).
set -u
BIN=$(cd "$1" && pwd)
WORK=$2
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
ROOT=$WORK/root
DIR=$WORK/stack
rm -rf "$ROOT" "$DIR"
mkdir -p "$ROOT/docs"
# pbx up uses only a private DIR of this user (docs/SECURITY.md 3.2).
mkdir -m 700 "$DIR"
cat >"$ROOT/docs/readme.txt" <<'TEXT'
This is docs/readme.txt, served by vfsd from the demo's root.
A sandboxed program read it through a one-shot grant.
TEXT

say() { printf '%s\n' "make run: $*"; }

POLICY=
TTY=
if [ -t 0 ] && [ -t 1 ]; then
    # pbx up runs in the background below, where the shell gives it
    # /dev/null as standard input: name this terminal to it explicitly.
    TTY=$(tty)
    POLICY=$WORK/policy
    cat >"$POLICY" <<'TEXT'
# make run on a terminal: every request is shown to you (SESSION REALM
# OPERATION CLASS URGENCY VERDICT; first match wins).
* * * * * prompt
TEXT
    say "you are on a terminal: when the program asks, you will be prompted here."
else
    say "no terminal: pbx up's routine policy answers (routine reads are allowed)."
fi

say "starting the stack (powerboxd, vfsd, ttyd, procd, launchd) in $DIR,"
say "vfsd serving $ROOT."
# Readiness is pbx up's own event, never a file a previous run may have
# left: pbx up writes "ready" to --ready-fd once every process is ready and
# closes it. That descriptor is a FIFO made fresh here, so the read below
# returns that line, or end of file when pbx up exits first (it closes the
# FIFO on any end): no stale state, no polling, no time limit of our own.
READY=$WORK/ready
rm -f "$READY" "$WORK/up.out"
if ! mkfifo -m 600 "$READY"; then
    say "cannot make $READY"
    exit 1
fi
# pbx up's own lines and every process's log go to stack.log and up.out;
# the story stays on this terminal.
if [ -n "$POLICY" ]; then
    "$BIN/pbx" up --dir "$DIR" --root "$ROOT" --bin "$BIN" \
        --policy "$POLICY" --tty "$TTY" --ready-fd 3 \
        3>"$READY" >"$WORK/up.out" 2>&1 &
else
    "$BIN/pbx" up --dir "$DIR" --root "$ROOT" --bin "$BIN" --ready-fd 3 \
        3>"$READY" >"$WORK/up.out" 2>&1 </dev/null &
fi
UP=$!
stop() {
    kill -TERM "$UP" 2>/dev/null
    wait "$UP" 2>/dev/null
}
trap 'stop; exit 130' INT TERM
ready=
read -r ready <"$READY" || ready=
rm -f "$READY"
if [ "$ready" != "ready" ]; then
    say "the stack did not start; its output:"
    cat "$WORK/up.out"
    stop
    exit 1
fi
say "the stack is up. Now: pbx run --sandbox -- pbx-demo docs/readme.txt"
say "(pbx-demo runs under Landlock: no file access of its own.)"
echo
"$BIN/pbx" --dir "$DIR" run --sandbox --quiet -- "$BIN/pbx-demo" \
    --direct "$ROOT/docs/readme.txt" docs/readme.txt
st=$?
echo
stop
if [ "$st" -eq 0 ]; then
    say "done: the program read exactly the granted file, once. The stack's"
    say "log is $DIR/stack.log."
else
    say "pbx-demo exited $st; the stack's log is $DIR/stack.log."
fi
exit "$st"
