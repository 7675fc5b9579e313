#!/bin/sh
# The conformance suite must catch a broken kernel. lazykv-faulty is lazykv
# built with attend_combine broken on purpose in the Vulkan and the OpenCL
# kernels (LKV_FAULT_FLIP_SIGN: every attention output has its sign
# flipped). Run on it, the suite must exit 1 with attend cases FAIL, and the
# ops the fault does not touch must still PASS, so the failure points at the
# kernel. Exit 77 (ctest SKIP) only when the backend is unavailable and not
# required.
# Usage: faulty_kernel.sh <lazykv-faulty> <backend: vulkan or opencl>
faulty=$1
backend=${2:-vulkan}
out=$("$faulty" conformance --backend "$backend" --quick --only attend,observe 2>&1)
rc=$?
if [ "$rc" -eq 77 ]; then
  echo "$backend unavailable: $out"
  exit 77
fi
fail() {
  echo "$out"
  echo "faulty_kernel ($backend): $1"
  exit 1
}
[ "$rc" -eq 1 ] || fail "conformance exited $rc on the broken kernel, not 1"
echo "$out" | grep -q '^FAIL  attend(' || fail "no attend case failed"
echo "$out" | grep -q '^PASS  observe(' || fail "observe did not pass"
if echo "$out" | grep -q '^FAIL  observe('; then
  fail "observe failed too: the fault is only in attend"
fi
echo "$out" | grep '^FAIL  attend(' | head -3
echo "faulty_kernel ($backend): the flipped sign was caught"
