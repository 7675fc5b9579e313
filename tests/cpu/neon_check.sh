#!/bin/sh
# The NEON attend kernel's check (chunk_check.c), cross-compiled for aarch64
# and run under user-mode qemu, next to the portable kernel on the same
# emulated CPU.
# usage: neon_check.sh SOURCE_DIR BUILD_DIR
# Exit 77 (skip) when aarch64-linux-gnu-gcc or qemu-aarch64 is missing,
# unless LAZYKV_REQUIRE_AARCH64=1.
set -eu
src=$1
out=$2
cc=${LKV_AARCH64_CC:-aarch64-linux-gnu-gcc}
qemu=${LKV_AARCH64_QEMU:-qemu-aarch64}
for tool in "$cc" "$qemu"; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        if [ "${LAZYKV_REQUIRE_AARCH64:-}" = 1 ]; then
            echo "neon_check: $tool is not installed (scripts/install-deps.sh installs it)" >&2
            exit 1
        fi
        echo "neon_check: $tool is not installed; skipped"
        exit 77
    fi
done
# static: qemu then needs no aarch64 loader or libraries on the host
"$cc" -std=c11 -O2 -Wall -Wextra -Werror -static \
    -I"$src/include" -I"$src/base" -I"$src/backends" \
    "$src/tests/cpu/chunk_check.c" "$src/backends/cpu/cpu_chunk_neon.c" \
    "$src/backends/cpu/cpu_chunk_generic.c" "$src/base/dtype.c" "$src/base/error.c" -lm \
    -o "$out/chunk_check_aarch64"
"$qemu" "$out/chunk_check_aarch64" neon generic
