#!/usr/bin/env bash
# Builds examples/llama.cpp against llama.cpp (scripts/llamacpp-lib.sh, cached)
# and a built lazykv (installed from BUILD_DIR into WORK_DIR), then runs it on
# a GSM8K question and checks what it must show: (1) a generation with
# LazyEviction deciding the cells, text produced, evictions made, the peak
# within the policy's bound (the program fails otherwise); (2) --eval, where
# the full-cache lane through lazykv must equal plain llama.cpp's logits bit
# for bit and its greedy tokens, and every lane stays within its bound.
# The ctest llamacpp_example runs it.
#
#   llamacpp-example.sh BUILD_DIR WORK_DIR
#   LAZYKV_TEST_MODEL   the SmolLM2 GGUF (default: scripts/fetch-model.sh)
#   LKV_SHARED_DIR      the shared folder with data/gsm8k/test.jsonl
#                       (default: shared/ beside the checkout)
set -euo pipefail
build=$(cd "$1" && pwd) work=$2
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
say() { echo "llamacpp-example: $*"; }
shared=${LKV_SHARED_DIR:-$repo/../shared}
gsm8k=$shared/data/gsm8k/test.jsonl
[ -f "$gsm8k" ] || { say "error: no $gsm8k (set LKV_SHARED_DIR)"; exit 1; }
model=${LAZYKV_TEST_MODEL:-$(bash "$here/fetch-model.sh")}

llama=$(bash "$here/llamacpp-lib.sh")
rm -rf "$work" && mkdir -p "$work"
cmake --install "$build" --prefix "$work/lazykv" >"$work/install.log"
cmake -S "$repo/examples/llama.cpp" -B "$work/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_PREFIX_PATH="$llama;$work/lazykv" -DCMAKE_C_FLAGS="-Werror" >"$work/configure.log"
cmake --build "$work/build" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
bin=$work/build/lazykv-llama

say "generate: lazy, budget 128, window 32, on GSM8K test #1"
"$bin" --model "$model" --gsm8k "$gsm8k" --policy lazy --budget 128 --window 32 \
       --max-tokens 200 --ignore-eos --threads 1 | tee "$work/generate.txt"
text=$(sed -n '1,/^model  /p' "$work/generate.txt" | grep -v '^model  ' | tr -d '[:space:]')
[ -n "$text" ] || { say "error: no text generated"; exit 1; }
grep -Eq 'positions evicted in [1-9][0-9]* plans' "$work/generate.txt" ||
  { say "error: LazyEviction never evicted"; exit 1; }

say "eval: full through lazykv == plain llama.cpp; lazy, h2o at 50%"
"$bin" --eval --model "$model" --gsm8k "$gsm8k" --policies lazy,h2o --budgets 50% \
       --max-tokens 96 --threads 1 | tee "$work/eval.txt"
grep -q '^| full (through lazykv) | .* | 0 | 1.0000 |' "$work/eval.txt" ||
  { say "error: the full-cache lane's row does not show KL 0 and top-1 1"; exit 1; }
say "passed"
