#!/bin/sh
# The lazykv binary must link no GPU library: backends dlopen their drivers.
bin=$1
libs=$(ldd "$bin") || { echo "ldd failed on $bin"; exit 1; }
if echo "$libs" | grep -E 'libcuda|libamdhip64|libvulkan|libOpenCL'; then
  echo "FAIL: $bin links a GPU library"
  exit 1
fi
echo "PASS: $bin links no GPU library"
