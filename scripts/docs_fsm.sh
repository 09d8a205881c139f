#!/bin/sh
# Keeps the generated state-machine sections of docs/ARCHITECTURE.md equal
# to what `pbx fsm table` and `pbx fsm dot` print from the core's own
# transition table.
#   docs_fsm.sh PBX check    fail (exit 1) when the doc differs
#   docs_fsm.sh PBX update   rewrite the doc in place
set -eu
pbx=$1
mode=$2
doc=docs/ARCHITECTURE.md
tmp=$(mktemp)
trap 'rm -f "$tmp" "$tmp.table" "$tmp.dot"' EXIT
"$pbx" fsm table >"$tmp.table"
"$pbx" fsm dot >"$tmp.dot"
# Replace everything between each BEGIN/END marker pair by fresh output.
awk -v table="$tmp.table" -v dot="$tmp.dot" '
    /<!-- BEGIN GENERATED: pbx fsm table -->/ { print; while ((getline l < table) > 0) print l; skip = 1; next }
    /<!-- BEGIN GENERATED: pbx fsm dot -->/ { print; while ((getline l < dot) > 0) print l; skip = 1; next }
    /<!-- END GENERATED/ { skip = 0 }
    !skip { print }
' "$doc" >"$tmp"
if [ "$mode" = update ]; then
    cp "$tmp" "$doc"
    echo "docs: $doc regenerated"
elif ! cmp -s "$tmp" "$doc"; then
    echo "docs: $doc is out of date with the core's transition table;"
    echo "      run 'make docs' and commit the result"
    diff -u "$doc" "$tmp" | head -40
    exit 1
else
    echo "docs: state machine sections match the core"
fi
