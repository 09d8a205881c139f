#!/bin/sh
# scripts/pbx1_corpus.sh: rewrites the PBX1 seed corpus of fuzz_pbx1 from
# the build's own `pbx geometry make`, so the seeds carry this build's
# record layouts (a record whose sizes no longer match would stop at the
# layout check and never reach derivation). Run it after any change to a
# pool record type, and commit the result.
#
#   sh scripts/pbx1_corpus.sh build/bin/pbx
set -eu
pbx=${1:?usage: pbx1_corpus.sh PATH-TO-pbx}
dir=fuzz/corpus/fuzz_pbx1
pools="requests selector-bytes grants prompts policies decisions receipts
transient-slots resolutions replies notifications"
ones=""
for p in $pools; do ones="$ones --$p 1"; done
# The smallest calls pool that holds a window of one on every call route.
ones="$ones --calls 3 --window 1"
"$pbx" geometry make -o "$dir/default.pbx1" >/dev/null
# shellcheck disable=SC2086
"$pbx" geometry make $ones -o "$dir/minimal.pbx1" >/dev/null
"$pbx" geometry make --page-size 2097152 --selector-bytes 16777216 \
    -o "$dir/large.pbx1" >/dev/null
# The call fields at the ends of their ranges.
"$pbx" geometry make --calls 65536 --window 4096 --deadline-vfsd-ms 1 \
    --deadline-ttyd-ms 86400000 --deadline-procd-ms 1 \
    --deadline-scope-ms 86400000 --deadline-prompt-ms 1 \
    --deadline-open-ms 86400000 -o "$dir/edges.pbx1" >/dev/null
# One flipped bit in the digest (byte 250), and a record cut at 100 bytes.
python3 - "$dir" <<'PY'
import sys
d = sys.argv[1]
rec = bytearray(open(d + "/default.pbx1", "rb").read())
bad = bytearray(rec)
bad[250] ^= 1
open(d + "/bad_digest.bin", "wb").write(bytes(bad))
open(d + "/truncated.bin", "wb").write(bytes(rec[:100]))
PY
for f in default minimal large edges; do "$pbx" geometry check "$dir/$f.pbx1"; done
