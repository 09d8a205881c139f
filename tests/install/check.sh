#!/bin/sh
# tests/install/check.sh: `make install` and `make uninstall` into a
# temporary DESTDIR (run by `make install-check`, in `make check`).
#
# 1. make install PREFIX=/usr DESTDIR=$tmp/root writes exactly the files of
#    the manifest (`make install-manifest`), nothing else.
# 2. Every binary of the manifest (each shipped one: pbx, powerboxd, the
#    peers, pbx-client, pbx-stage, pbx-demo) is there and executable, with
#    a man page; every man page of docs/man/ is there in its section and
#    names a binary that is.
# 3. Each installed header, alone, compiles against the installed tree
#    only (-I$tmp/root/usr/include/powerboxd, from a directory outside the
#    source tree), with gcc and clang: a header that needs another one
#    that was not installed, or the tree's -I., fails here.
# 4. No private header of scripts/layers.py was installed.
# 5. make uninstall with the same PREFIX and DESTDIR leaves no file and no
#    directory of the package's own (include/powerboxd, share/doc/powerboxd).
# 6. (before 5) A program that calls the app library compiles and links
#    with `pkg-config --cflags --libs pbx-app` of the installed
#    lib/pkgconfig/pbx-app.pc alone, and runs.
set -eu

MAKE=${MAKE:-make}
prefix=/usr
tmp=$(mktemp -d "${TMPDIR:-/tmp}/pbx-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/root
root=$dest$prefix
fails=0

say() { echo "install-check: $*"; }
bad() {
    echo "install-check: FAIL: $*"
    fails=$((fails + 1))
}

$MAKE --no-print-directory -s install PREFIX=$prefix DESTDIR="$dest" \
    >"$tmp/install.log" || { cat "$tmp/install.log"; exit 1; }
$MAKE --no-print-directory -s install-manifest PREFIX=$prefix \
    DESTDIR="$dest" | sort >"$tmp/manifest"

# 1. The tree holds exactly the manifest.
(cd "$root" && find . -type f -o -type l) | sed 's|^\./||' | sort \
    >"$tmp/found"
if ! cmp -s "$tmp/manifest" "$tmp/found"; then
    bad "installed files differ from the manifest (< manifest, > found):"
    diff "$tmp/manifest" "$tmp/found" || true
fi
if [ -n "$(find "$dest" -mindepth 1 -maxdepth 1 ! -name "${prefix#/}")" ]; then
    bad "files outside PREFIX: $(find "$dest" -mindepth 1 -maxdepth 1)"
fi

# 2. Binaries and man pages, each against the other.
# Every binary the manifest installs, and at least these.
bins=$(sed -n 's|^bin/||p' "$tmp/manifest" | tr '\n' ' ')
for b in pbx powerboxd pbx-vfsd pbx-ttyd pbx-procd pbx-launchd pbx-client \
    pbx-stage pbx-demo; do
    case " $bins " in
    *" $b "*) ;;
    *) bad "binary $b is not in the install manifest" ;;
    esac
done
for b in $bins; do
    [ -f "$root/bin/$b" ] && [ -x "$root/bin/$b" ] ||
        bad "binary bin/$b missing or not executable"
    set -- "$root"/share/man/man[1-8]/"$b".[1-8]
    [ -f "$1" ] || bad "binary $b has no installed man page"
done
pages=0
for page in docs/man/*.[1-8]; do
    [ -f "$page" ] || continue
    pages=$((pages + 1))
    name=$(basename "$page")
    sec=${name##*.}
    cmp -s "$page" "$root/share/man/man$sec/$name" ||
        bad "man page $name not installed in share/man/man$sec"
    [ -x "$root/bin/${name%.*}" ] ||
        bad "man page $name names no installed binary"
done
[ "$pages" -gt 0 ] || bad "docs/man holds no man page"

# 3. Each header alone, through the installed include directory only.
inc=$root/include/powerboxd
mkdir "$tmp/cc"
headers=$(cd "$inc" && find . -name '*.h' | sed 's|^\./||' | sort)
nh=0
for h in $headers; do
    nh=$((nh + 1))
    unit=$tmp/cc/$(echo "$h" | tr / _).c
    # Twice: the include guard must hold too.
    printf '#include "%s"\n#include "%s"\n' "$h" "$h" >"$unit"
    for cc in gcc clang; do
        command -v $cc >/dev/null 2>&1 || continue
        (cd "$tmp/cc" && $cc -std=c11 -Wall -Wextra -Wpedantic -Werror \
            -fsyntax-only -I"$inc" "$unit") >"$tmp/cc.log" 2>&1 ||
            { bad "$h does not compile alone with $cc:"; cat "$tmp/cc.log"; }
    done
done
[ "$nh" -gt 0 ] || bad "no header installed"

# 4. No private header.
private=$(python3 -c 'import sys; sys.path.insert(0, "scripts")
import layers; print(" ".join(sorted(layers.PRIVATE)))')
for p in $private; do
    [ ! -e "$inc/$p" ] || bad "private header $p installed"
done

# 6. The installed pkg-config file's link line alone links an app program.
if command -v pkg-config >/dev/null 2>&1; then
    flags=$(PKG_CONFIG_PATH="$root/lib/pkgconfig" PKG_CONFIG_LIBDIR= \
        pkg-config --cflags --libs pbx-app) ||
        bad "pkg-config --cflags --libs pbx-app failed"
    (cd "$tmp/cc" && cc -std=c11 "$OLDPWD/tests/install/app_link.c" \
        $flags -o "$tmp/app_link") >"$tmp/cc.log" 2>&1 ||
        { bad "an app program does not link with '$flags':"; cat "$tmp/cc.log"; }
    [ ! -x "$tmp/app_link" ] || "$tmp/app_link" >/dev/null ||
        bad "the program linked with pbx-app.pc does not run"
else
    bad "pkg-config is not installed (.ci/run installs it)"
fi

# 5. Uninstall leaves nothing of the package.
$MAKE --no-print-directory -s uninstall PREFIX=$prefix DESTDIR="$dest" \
    >"$tmp/uninstall.log"
left=$(find "$dest" -type f -o -type l)
[ -z "$left" ] || bad "uninstall left files: $left"
for d in include/powerboxd share/doc/powerboxd; do
    [ ! -e "$root/$d" ] || bad "uninstall left the directory $d"
done

if [ "$fails" -ne 0 ]; then
    say "$fails failure(s)"
    exit 1
fi
say "$(wc -l <"$tmp/manifest") files installed and removed; $nh header(s)" \
    "compile alone; $(echo $bins | wc -w) binaries, $pages man page(s)"
