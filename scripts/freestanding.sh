#!/bin/sh
# Freestanding gate: every freestanding layer (the arguments are its
# folders) must build with -ffreestanding -nostdlib -fno-builtin for
# x86_64, aarch64 and riscv64, include only the compiler's own headers, and
# reference no symbol that the project does not define itself.
set -eu
allowed='stdint.h|stddef.h|stdbool.h|stdalign.h|limits.h'
bad=$(grep -n '#[[:space:]]*include[[:space:]]*<' "$@" -r --include='*.[ch]' \
      | grep -Ev "<($allowed)>" || true)
if [ -n "$bad" ]; then
    echo "freestanding: system header outside the allowed set:"
    echo "$bad"
    exit 1
fi
out=build/freestanding
rm -rf "$out"
for t in x86_64 aarch64 riscv64; do
    mkdir -p "$out/$t"
    objs=""
    for d in "$@"; do
        for c in "$d"/*.c; do
            [ -f "$c" ] || continue
            o="$out/$t/$(echo "$c" | tr / _).o"
            clang --target="$t-unknown-none-elf" -ffreestanding -nostdlib \
                -fno-builtin -fno-stack-protector -O2 -std=c11 -I. \
                -Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror \
                -c "$c" -o "$o"
            objs="$objs $o"
        done
    done
    ld.lld -r -o "$out/$t/all.o" $objs
    undef=$(llvm-nm -u "$out/$t/all.o" || true)
    if [ -n "$undef" ]; then
        echo "freestanding: $t objects reference symbols the project does not define:"
        echo "$undef"
        exit 1
    fi
    echo "freestanding: $t ok ($(echo $objs | wc -w) objects, no external symbols)"
done
# gcc too, for the host architecture, at the release optimisation level.
mkdir -p "$out/gcc"
objs=""
for d in "$@"; do
    for c in "$d"/*.c; do
        [ -f "$c" ] || continue
        o="$out/gcc/$(echo "$c" | tr / _).o"
        gcc -ffreestanding -nostdlib -fno-builtin -fno-stack-protector \
            -fno-tree-loop-distribute-patterns -O2 -std=c11 -I. \
            -Wall -Wextra -Wpedantic -Wconversion -Wshadow -Werror -c "$c" -o "$o"
        objs="$objs $o"
    done
done
ld -r -o "$out/gcc/all.o" $objs
undef=$(nm -u "$out/gcc/all.o" || true)
if [ -n "$undef" ]; then
    echo "freestanding: gcc objects reference external symbols:"
    echo "$undef"
    exit 1
fi
echo "freestanding: gcc x86_64 ok"
