#!/usr/bin/env bash
# lazykv built for aarch64 and run there under user-mode qemu: the whole
# library and CLI cross-compiled (aarch64-linux-gnu-gcc, warnings as
# errors), `lazykv devices` must open cpu with the NEON kernel, and the cpu
# backend must pass a cut of the conformance quick grid against ref on the
# emulated CPU (attend without its two largest shapes, observe, score,
# select, compact; one seed). What no x86 CI machine can run natively: the
# NEON kernel inside cpu_attend's chunking and pool, and every portable file
# compiled for another architecture. About a minute and a half on 2 cores.
#
# usage: scripts/check-aarch64.sh [BUILD_DIR]   (default build-aarch64)
# Needs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user
# (scripts/install-deps.sh installs them: backends/cpu/debian-packages).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-aarch64}
for tool in aarch64-linux-gnu-gcc qemu-aarch64; do
  if ! command -v "$tool" >/dev/null; then
    echo "check-aarch64: $tool is not installed (scripts/install-deps.sh installs it)" >&2
    exit 1
  fi
done
jobs=$(nproc 2>/dev/null || echo 2)
# -O2: Debian 12's aarch64 gcc 12 stops with an internal compiler error
# (vect_transform_reduction) vectorizing one of conformance's loops at -O3
echo "== configure $dir (aarch64 cross)"
cmake -S . -B "$dir" -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 \
      -DCMAKE_C_COMPILER=aarch64-linux-gnu-gcc -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DLAZYKV_WERROR=ON -DLAZYKV_BUILD_TESTS=OFF \
      -DLAZYKV_CUDA=OFF -DLAZYKV_HIP=OFF -DLAZYKV_INSTALL=OFF >/dev/null
echo "== build $dir"
cmake --build "$dir" -j "$jobs" --target lazykv
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu # the aarch64 loader and libc
devices=$(qemu-aarch64 "$dir/lazykv" devices)
if ! grep -q 'SIMD neon' <<<"$devices"; then
  echo "check-aarch64: cpu did not open with the NEON kernel:" >&2
  echo "$devices" >&2
  exit 1
fi
echo "check-aarch64: cpu opens with SIMD neon under qemu-aarch64"
cases='attend(d=33,*|attend(d=64,*|attend(d=100,*|attend(d=128,n=257,*|attend(d=256,*'
cases+='|observe(*|score(*|select(*|compact(*'
if ! out=$(qemu-aarch64 "$dir/lazykv" conformance --backend cpu --quick --seeds 1 \
             --only attend,observe,score,select,compact --filter "$cases" 2>&1); then
  grep -v '^PASS' <<<"$out" >&2
  echo "check-aarch64: conformance of cpu (NEON) against ref failed under qemu-aarch64" >&2
  exit 1
fi
tail -1 <<<"$out"
