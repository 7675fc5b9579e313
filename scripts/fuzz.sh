#!/usr/bin/env bash
# Builds the libFuzzer harnesses (fuzz/, clang with
# -fsanitize=fuzzer,address,undefined) and runs each for SECONDS (default 60)
# over its corpus:
#   scripts/fuzz.sh [SECONDS]
# Before fuzzing, every input kept in fuzz/regressions/<harness>/ is replayed
# once. Then each harness runs from the seeds fuzz/make-corpus.py writes
# (into the build folder, from ../shared at run time) plus what earlier runs
# found (BUILD/fuzz-work/<harness>/, kept between runs, so a longer run
# carries on from a shorter one). Exits non-zero if any harness crashes,
# leaks, times out (-timeout) or runs out of memory (-rss_limit_mb); the
# input that did it lands in BUILD/fuzz-artifacts/<harness>/.
# Environment:
#   LAZYKV_FUZZ_BUILD      build folder (build-fuzz)
#   LAZYKV_FUZZ_HARNESSES  which to run ("trace gguf llama2c tokenizer cache eval_prompts")
#   LAZYKV_FUZZ_JOBS       parallel fuzzing processes per harness (1)
#   LKV_SHARED_DIR         the shared folder the seeds come from (../shared)
#   CC                     the compiler (clang)
set -euo pipefail
seconds=${1:-60}
case $seconds in
  '' | *[!0-9]*) echo "fuzz.sh: SECONDS must be a whole number, not '$seconds'" >&2; exit 2 ;;
esac
cd "$(dirname "$0")/.."
root=$PWD
build=${LAZYKV_FUZZ_BUILD:-build-fuzz}
shared=${LKV_SHARED_DIR:-$root/../shared}
harnesses=${LAZYKV_FUZZ_HARNESSES:-trace gguf llama2c tokenizer cache eval_prompts}
fuzz_jobs=${LAZYKV_FUZZ_JOBS:-1}
jobs=$(nproc 2>/dev/null || echo 2)

# Inputs larger than this are cut; each harness's input layout is at the
# top of fuzz/fuzz_<harness>.c.
max_len() {
  case $1 in
    gguf) echo 65536 ;;
    trace | eval_prompts | llama2c) echo 8192 ;;
    *) echo 4096 ;;
  esac
}

echo "== configure $build (clang, LAZYKV_FUZZ=ON)"
CC=${CC:-clang} cmake -S . -B "$build" -DLAZYKV_FUZZ=ON -DLAZYKV_BUILD_TESTS=OFF \
  -DLAZYKV_CUDA=OFF -DLAZYKV_HIP=OFF -DLAZYKV_VULKAN=OFF -DLAZYKV_OPENCL=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
echo "== build the harnesses"
cmake --build "$build" --target fuzz -j "$jobs"

seeds=$build/fuzz-corpus
rm -rf "$seeds"
python3 fuzz/make-corpus.py "$seeds" "$shared"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for h in $harnesses; do
  bin=$build/fuzz/fuzz_$h
  if [ ! -x "$bin" ]; then
    echo "fuzz.sh: no harness '$h' ($bin)" >&2
    exit 2
  fi
  artifacts=$build/fuzz-artifacts/$h
  work=$build/fuzz-work/$h
  mkdir -p "$artifacts" "$work"
  flags=(-max_len="$(max_len "$h")" -rss_limit_mb=2048 -timeout=10
         -artifact_prefix="$artifacts/" -print_final_stats=1)
  regressions=()
  if [ -d "fuzz/regressions/$h" ]; then
    while IFS= read -r -d '' f; do regressions+=("$f"); done \
      < <(find "fuzz/regressions/$h" -type f ! -name '*.md' -print0 | sort -z)
  fi
  if [ ${#regressions[@]} -gt 0 ]; then
    echo "== $h: replay ${#regressions[@]} regression input(s)"
    if ! "$bin" "${flags[@]}" "${regressions[@]}" >"$artifacts/regressions.log" 2>&1; then
      tail -n 40 "$artifacts/regressions.log"
      failed+=("$h (regressions)")
      continue
    fi
  fi
  echo "== $h: fuzz for ${seconds}s"
  if [ -f "fuzz/$h.dict" ]; then
    flags+=(-dict="fuzz/$h.dict")
  fi
  log=$artifacts/fuzz.log
  rc=0
  if [ "$fuzz_jobs" -gt 1 ]; then
    "$bin" "${flags[@]}" -max_total_time="$seconds" -fork="$fuzz_jobs" \
      "$work" "$seeds/$h" >"$log" 2>&1 || rc=$?
  else
    "$bin" "${flags[@]}" -max_total_time="$seconds" "$work" "$seeds/$h" >"$log" 2>&1 || rc=$?
  fi
  if [ $rc -ne 0 ]; then
    tail -n 60 "$log"
    failed+=("$h (exit $rc; inputs in $artifacts/)")
  else
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb)' "$log" |
      tr '\n' ' '
    echo
  fi
done

if [ ${#failed[@]} -gt 0 ]; then
  echo "== fuzzing found problems in: ${failed[*]}" >&2
  echo "   reproduce with: $build/fuzz/fuzz_<harness> <input>; keep the input in fuzz/regressions/<harness>/" >&2
  exit 1
fi
echo "== fuzzing: no crash, leak, timeout or OOM in ${seconds}s per harness ($harnesses)"
