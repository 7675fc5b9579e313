#!/bin/sh
# One GPU seen through two APIs is one device: a fake CUDA driver and a
# fake HIP runtime (tests/cuda/, tests/hip/) both report a GPU on PCI bus
# 0x65, so `lazykv devices` must link cuda:0 and hip:0, and `auto` must
# take it once, through CUDA (first in the registry), falling back to HIP
# when CUDA cannot open it. A second CUDA device on another bus stays
# apart, and so does everything when the buses differ.
# Usage: same_device.sh <lazykv> <fake libcuda> <fake libamdhip64>
lazykv=$1
export LAZYKV_CUDA_LIBRARY=$2 LAZYKV_HIP_LIBRARY=$3 LAZYKV_BACKEND=
export FAKE_HIP_ARCH=gfx90a LKV_FAKE_CUDA_PCI_BUS=65 FAKE_HIP_PCI_BUS=65
fail() {
  echo "$out"
  echo "same_device: $1"
  exit 1
}
expect() { echo "$out" | grep -q -- "$1" || fail "missing: $1"; }
refuse() { if echo "$out" | grep -q -- "$1"; then fail "unexpected: $1"; fi; }

out=$("$lazykv" devices 2>&1) || fail "lazykv devices exited $?"
expect "pci 0000:65:00.0"
expect "the same device as hip:0"
expect "the same device as cuda:0"
refuse "the same device as cuda:1"
expect "default: auto chose cuda:0 (Fake H200, also hip:0)"

out=$(LKV_FAKE_CUDA_FAIL=cuDevicePrimaryCtxRetain "$lazykv" devices 2>&1) ||
  fail "lazykv devices exited $? with CUDA failing to open"
expect "default: auto chose hip:0 (Fake AMD gfx90a, also cuda:0) after cuda:0 failed"

out=$(FAKE_HIP_PCI_BUS=24 "$lazykv" devices 2>&1) || fail "lazykv devices exited $?"
refuse "the same device as"
echo "same_device: one GPU through CUDA and HIP is listed as one and opened once"
