#!/usr/bin/env bash
# Line coverage of core/, backends/ref and backends/cpu (gcov), for the
# tests the ASan+UBSan stage of scripts/test.sh runs and for every test, so
# that moving a test out of the sanitizer build (scripts/test-sets.sh) shows
# what it alone reached. Not part of CI: a gcc --coverage build at -O0
# (CUDA/HIP device code left out: it is not measured), then the ASan stage's
# tests, a snapshot, the rest of the tests, a second snapshot, and the
# table: per folder the lines, those every test covers ("before": both
# builds used to run everything) and those the ASan stage covers ("after"),
# then the lines only the other tests reach. About 25 minutes on 2 cores.
#   scripts/coverage.sh [BUILD_DIR]      (default build-coverage)
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-coverage}
jobs=$(nproc 2>/dev/null || echo 2)
. scripts/test-sets.sh
export LAZYKV_VULKAN_VALIDATION=1
export LAZYKV_TEST_MODEL=${LAZYKV_TEST_MODEL:-$(bash scripts/fetch-model.sh)}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O0 --coverage" \
      -DCMAKE_CXX_FLAGS_DEBUG="-g -O0 --coverage" -DCMAKE_EXE_LINKER_FLAGS=--coverage \
      -DCMAKE_SHARED_LINKER_FLAGS=--coverage -DLAZYKV_CUDA=OFF -DLAZYKV_HIP=OFF >/dev/null
cmake --build "$dir" -j "$jobs"
find "$dir" -name '*.gcda' -delete
# a failing test still counts what it ran: carry on, and say so at the end
rc=0
ctest --test-dir "$dir" -j "$jobs" "${LKV_CTEST_ASAN[@]}" >"$dir/coverage-asan.log" 2>&1 || rc=1
python3 scripts/coverage.py snapshot "$dir" "$dir/coverage-asan.json"
ctest --test-dir "$dir" -j "$jobs" -R "$LKV_TESTS_WERROR_ONLY" >"$dir/coverage-rest.log" 2>&1 || rc=1
python3 scripts/coverage.py snapshot "$dir" "$dir/coverage-all.json"
python3 scripts/coverage.py report "$dir/coverage-asan.json" "$dir/coverage-all.json"
[ "$rc" -eq 0 ] || echo "coverage: some tests failed (see $dir/coverage-*.log)"
