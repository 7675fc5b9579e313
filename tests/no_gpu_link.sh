#!/bin/sh
# The lazykv binary must link no GPU library: backends dlopen their drivers.
# The drivers are the ones the backends registered (lkv_backend's DRIVERS in
# each backends/<name>/backend.cmake), passed after the binary.
# Usage: no_gpu_link.sh <binary> <driver library name>...
bin=$1
shift
[ "$#" -gt 0 ] || { echo "no_gpu_link.sh: no driver names given"; exit 1; }
libs=$(ldd "$bin") || { echo "ldd failed on $bin"; exit 1; }
for driver in "$@"; do
  if echo "$libs" | grep -F "$driver"; then
    echo "FAIL: $bin links a GPU library ($driver)"
    exit 1
  fi
done
echo "PASS: $bin links none of: $*"
