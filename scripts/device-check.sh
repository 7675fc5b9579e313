#!/usr/bin/env bash
# The GPU check, in one prepared run, for a machine with an NVIDIA GPU, the
# CUDA toolkit (nvcc) and CMake but none of the test-only packages: builds
# lazykv with the CUDA backend required, lists the devices, runs the CUDA
# conformance suite (quick grid, then the full grid) and the benchmark of
# cpu against cuda, with the roofline model of the GPU it found (h200, h100
# or a100 by nvidia-smi's name; h200 otherwise) after the measured tables,
# at the same lengths and shapes, and prints a short table. Where the driver also
# registers the GPU for OpenCL (the NVIDIA OpenCL ICD), the OpenCL quick
# grid runs too and the benchmark adds it (the same GPU, a second API). Results (JSONL, JSON, SVG,
# logs) go to $OUT when set, else to ./device-check/.
#
#   bash scripts/device-check.sh            everything (about 5-8 minutes)
#   DEVICE_CHECK_FULL=0 bash ...            skip the full conformance grid
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-device-check}
mkdir -p "$out"
build=build-device
jobs=$(nproc 2>/dev/null || echo 4)
started=$(date +%s)
step() { echo "== $* (+$(( $(date +%s) - started ))s)"; }

step "configure"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DLAZYKV_CUDA=ON -DLAZYKV_HIP=OFF \
      -DLAZYKV_VULKAN=OFF -DLAZYKV_BUILD_TESTS=OFF >"$out/configure.log" 2>&1 ||
  { tail -30 "$out/configure.log"; exit 1; }
step "build"
cmake --build "$build" -j "$jobs" >"$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
bin=$build/lazykv
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
step "devices"
"$bin" devices | tee "$out/devices.txt"

step "conformance --backend cuda --quick"
"$bin" conformance --backend cuda --quick --json "$out/conformance-quick.jsonl" \
  >"$out/conformance-quick.txt" 2>&1
quick_rc=$?
grep -E "^(FAIL|SKIP)|pass, " "$out/conformance-quick.txt" | head -40
full_rc=-
if [ "${DEVICE_CHECK_FULL:-1}" != 0 ]; then
  step "conformance --backend cuda (full grid)"
  "$bin" conformance --backend cuda --json "$out/conformance-full.jsonl" \
    >"$out/conformance-full.txt" 2>&1
  full_rc=$?
  grep -E "^(FAIL|SKIP)|pass, " "$out/conformance-full.txt" | head -40
fi

opencl_rc=-
benches=cpu,cuda
if grep -Eq "^opencl +[0-9]+ +PASS" "$out/devices.txt" &&
   ! grep -Eq "^opencl +0 +PASS .*emulated on the CPU" "$out/devices.txt"; then
  step "conformance --backend opencl --quick"
  "$bin" conformance --backend opencl:0 --quick --json "$out/conformance-opencl.jsonl" \
    >"$out/conformance-opencl.txt" 2>&1
  opencl_rc=$?
  grep -E "^(FAIL|SKIP)|pass, " "$out/conformance-opencl.txt" | head -20
  benches=cpu,cuda,opencl:0
fi

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
case "$gpu_name" in
  *H100*) model=h100 ;;
  *A100*) model=a100 ;;
  *) model=h200 ;;
esac
step "bench --backends $benches --model $model"
"$bin" bench --backends "$benches" --model "$model" --json "$out/bench.json" \
  --plot "$out/bench.svg" >"$out/bench.txt" 2>&1
bench_rc=$?
cat "$out/bench.txt"

step "engine example --backend cuda (batched calls against per-sequence calls)"
"$build/examples/lazykv-engine-example" --backend cuda --steps 256 2>&1 | tee "$out/engine.txt"
engine_rc=${PIPESTATUS[0]}

step "summary"
printf '%-34s %s\n' "conformance quick (exit status)" "$quick_rc" \
                    "conformance full (exit status)" "$full_rc" \
                    "opencl quick (exit status)" "$opencl_rc" \
                    "bench (exit status)" "$bench_rc" \
                    "engine example (exit status)" "$engine_rc"
[ "$quick_rc" = 0 ] && [ "$bench_rc" = 0 ] && [ "$engine_rc" = 0 ] && { [ "$full_rc" = - ] || [ "$full_rc" = 0 ]; }
