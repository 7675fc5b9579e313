#!/bin/sh
# The conformance suite must catch a broken kernel. lazykv-faulty is lazykv
# with the test backend `faulty` (faulty_backend.c) in its registry: an inner
# backend (LAZYKV_FAULTY_INNER) with every attention output's sign flipped.
# Run on it, the suite must exit 1 with attend cases FAIL, and the ops the
# fault does not touch must still PASS, so the failure points at attend.
# Exit 77 (ctest SKIP) only when the inner backend is unavailable.
# Usage: faulty_kernel.sh <lazykv-faulty> <inner backend: vulkan, opencl, cpu>
faulty=$1
inner=${2:-cpu}
out=$(LAZYKV_FAULTY_INNER=$inner "$faulty" conformance --backend faulty --quick --seeds 1 --only attend,observe 2>&1)
rc=$?
if [ "$rc" -eq 77 ]; then
  echo "$inner unavailable: $out"
  exit 77
fi
fail() {
  echo "$out"
  echo "faulty_kernel ($inner): $1"
  exit 1
}
[ "$rc" -eq 1 ] || fail "conformance exited $rc on the broken kernel, not 1"
echo "$out" | grep -q '^FAIL  attend(' || fail "no attend case failed"
echo "$out" | grep -q '^PASS  observe(' || fail "observe did not pass"
if echo "$out" | grep -q '^FAIL  observe('; then
  fail "observe failed too: the fault is only in attend"
fi
echo "$out" | grep '^FAIL  attend(' | head -3
echo "faulty_kernel ($inner): the flipped sign was caught"
