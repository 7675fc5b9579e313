#!/bin/sh
# Compaction vs hole filling vs plan-only over batch 1/8/64 and 4K..64K slots
# per sequence on every backend (scripts/bench_grid.py says what each
# column is). On demand, not in CI: the full grid on lavapipe takes tens of
# minutes.
#
# usage: scripts/bench-grid.sh [--backends LIST] [--slots 4K,16K,64K]
#                              [--batches 1,8,64] [--quick] [--json OUT]
# LAZYKV names the lazykv binary (default build/lazykv).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
exec python3 "$here/scripts/bench_grid.py" "${LAZYKV:-$here/build/lazykv}" "$@"
