#!/bin/sh
# peers/demo/run.sh BIN_DIR WORK_DIR: `make run`, the demo of an unchanged
# system program that is asked for, and loses, exactly one file
# (README.md, "make run").
#
# It starts the stack with `pbx up` in WORK_DIR/stack, serving
# WORK_DIR/root (which holds docs/readme.txt), then:
#   1. `pbx run --sandbox -- /bin/cat ROOT/docs/readme.txt`: cat's own
#      open() is brokered, the prompt names cat and docs/readme.txt, and
#      the file's bytes appear;
#   2. a reader (/bin/sh) opens the same file, prints its first line and
#      waits for a line on its standard input; this script then runs
#      `pbx cancel` of that grant and only then writes the line, so the
#      reader's next read fails with EIO while the reader keeps running
#      (no sleep, no timing: each step waits for the one before).
# On a terminal the policy prompts for every request, so ttyd asks you on
# this terminal (one key: y) and waits; without one (CI) pbx up's routine
# policy allows routine reads, and this script, the launcher, marks the
# brokered opens routine (--opens routine: the program never chooses).
# Exits 0 when every step went as told, else 1.
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
An unchanged /bin/cat read it through a revocable descriptor.
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
FILE=$ROOT/docs/readme.txt
run() { "$BIN/pbx" --dir "$DIR" run --sandbox --opens routine --quiet "$@"; }
say "the stack is up."
echo
say "1. an unchanged program: pbx run --sandbox -- /bin/cat docs/readme.txt"
say "   cat's own open() of the file is brokered: it asks for exactly it."
run -- /bin/cat "$FILE"
cat_st=$?
say "   cat exited $cat_st."
echo
say "2. a reader keeps the file open; then pbx cancel ends its grant."
# The reader prints the first line through its descriptor (head -c: that
# many bytes, no more), waits for a line on its stdin, then reads on.
N=$(head -n 1 "$FILE" | wc -c)
READER='exec 3<"$1" || exit 2; head -c "$2" <&3; read -r line
if cat <&3; then echo "reader: read on, the grant was not revoked"
else echo "reader: that read failed (EIO); I am still running"; fi'
IN=$WORK/reader.in
rm -f "$IN" "$WORK/reader.rc" "$WORK/revoked"
if ! mkfifo -m 600 "$IN"; then
    say "cannot make $IN"
    stop
    exit 1
fi
# Held open read-write here, so the reader's open of it never blocks and
# its stdin sees a line only when this script writes one.
exec 4<>"$IN"
{
    run -- /bin/sh -c "$READER" reader "$FILE" "$N" <"$IN" 2>&1
    echo $? >"$WORK/reader.rc"
} | {
    n=0
    while IFS= read -r line; do
        printf '   | %s\n' "$line"
        n=$((n + 1))
        case $line in *"Input/output error"*) : >"$WORK/revoked" ;; esac
        [ "$n" -eq 1 ] || continue
        # The first line is out: the reader holds its grant and waits.
        g=$("$BIN/pbx" --dir "$DIR" grants --format kv |
            sed -n 's/^grant=\([^ ]*\) .* selector=docs\/readme.txt .*/\1/p' |
            tail -n 1)
        if [ -n "$g" ] && "$BIN/pbx" --dir "$DIR" cancel "$g" >/dev/null; then
            say "   pbx cancel $g: the grant ended; the reader reads on:"
        else
            say "   no live grant to cancel"
        fi
        printf '\n' >&4
    done
}
exec 4>&-
rm -f "$IN"
rd_st=$(cat "$WORK/reader.rc" 2>/dev/null)
echo
stop
if [ "$cat_st" -eq 0 ] && [ "$rd_st" = 0 ] && [ -e "$WORK/revoked" ]; then
    say "done: cat was asked for exactly docs/readme.txt and read it; the"
    say "reader's next read after pbx cancel failed while it kept running."
    say "The stack's log is $DIR/stack.log."
    exit 0
fi
say "a step failed (cat $cat_st, reader ${rd_st:-?}); the stack's log is"
say "$DIR/stack.log."
exit 1
