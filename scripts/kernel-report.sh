#!/bin/sh
# The kernel report (scripts/kernel_report.py says what and why): registers,
# spills, shared memory, resident blocks and, on gfx90a, 16-byte loads in
# flight of every CUDA/HIP kernel, from nvcc's and hipcc's own output; exit 1
# on a spill or an attend split kernel below 2 blocks per SM on sm_90.
#   scripts/kernel-report.sh [--markdown FILE]
exec python3 "$(dirname "$0")/kernel_report.py" "$@"
