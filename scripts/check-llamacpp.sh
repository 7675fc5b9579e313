#!/usr/bin/env bash
# Checks lazykv's forward pass against llama.cpp on SmolLM2-135M-Instruct.
# lazykv (`generate --policy full --dtype f32`) runs the Q4_1 GGUF, its
# weights dequantized to f32 and f32 arithmetic. The check (pass/fail) runs
# llama.cpp on an F32 GGUF that llama.cpp dequantized itself from the same
# Q4_1 file, with an f32 KV cache and flash attention off, so both sides
# compute in f32 and only rounding differs: the 100 greedy tokens of every
# prompt must agree, and the logit differences are reported. F32 because on
# the Q4_1 file llama.cpp quantizes the activations to 8 bits for each
# quantized matmul and its greedy tokens part from an f32 run at the first
# near-tie; that native Q4_1 run is reported beside the check, never failing
# it. scripts/check-llamacpp.py says the details. Prints a Markdown report and
# writes it to the file given as the first argument, if any:
#
#   scripts/check-llamacpp.sh [REPORT.md] [-- options of check-llamacpp.py]
#
# llama.cpp comes from a pinned llama-cpp-python, built from source by pip
# (several minutes, once) into a virtual environment, reused when it already
# holds that version:
#   LAZYKV_LLAMACPP_VENV   default $XDG_CACHE_HOME/lazykv/llamacpp-venv
#                          (~/.cache/lazykv/llamacpp-venv)
#   LAZYKV_LLAMACPP_PYTHON a python that already imports llama_cpp: no venv
#   LAZYKV_BIN             the lazykv binary (default build-ci/lazykv, then
#                          build/lazykv, then lazykv on PATH)
#   LKV_SHARED_DIR         the shared folder whose data/gsm8k/test.jsonl gives
#                          one prompt (default: shared/ beside the checkout;
#                          without it that prompt is left out)
# The F32 model (about 540 MB) is cached at
# $XDG_CACHE_HOME/lazykv/llamacpp/SmolLM2-135M-Instruct.F32.gguf, made again
# when missing or older than the Q4_1 file; llama.cpp's log of the conversion
# goes to the same path + .log (`-- --f32-model PATH` puts it elsewhere).
# Needs python3 with the venv module (Debian: python3-venv), a C/C++ compiler
# and cmake for the llama.cpp build (build-essential cmake), and the model
# (scripts/fetch-model.sh fetches it). Exit 0 only when every token of the
# check agrees.
set -euo pipefail

version=0.3.36
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
say() { echo "check-llamacpp: $*" >&2; }

out=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then
  out=$1
  shift
fi
[ $# -gt 0 ] && [ "$1" = "--" ] && shift

lazykv=${LAZYKV_BIN:-}
if [ -z "$lazykv" ]; then
  for candidate in "$repo/build-ci/lazykv" "$repo/build/lazykv" "$(command -v lazykv || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ]; then
      lazykv=$candidate
      break
    fi
  done
fi
[ -n "$lazykv" ] && [ -x "$lazykv" ] || {
  say "error: no lazykv binary: build it (scripts/test.sh builds build-ci/) or set LAZYKV_BIN"
  exit 2
}

model=$(bash "$here/fetch-model.sh")

python=${LAZYKV_LLAMACPP_PYTHON:-}
if [ -z "$python" ]; then
  venv=${LAZYKV_LLAMACPP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/lazykv/llamacpp-venv}
  python=$venv/bin/python
  if [ ! -x "$python" ]; then
    say "creating the virtual environment $venv"
    python3 -m venv "$venv" || {
      say "error: python3 -m venv failed: install the venv module (Debian: apt-get install python3-venv)"
      rm -rf "$venv"
      exit 2
    }
  fi
  have=$("$python" -c 'import llama_cpp; print(llama_cpp.__version__)' 2>/dev/null || true)
  if [ "$have" != "$version" ]; then
    for tool in cc c++ cmake; do
      command -v "$tool" >/dev/null || {
        say "error: $tool is needed to build llama.cpp (Debian: apt-get install build-essential cmake)"
        exit 2
      }
    done
    say "building llama-cpp-python $version from source into $venv (several minutes, once)"
    "$python" -m pip install --quiet --disable-pip-version-check --upgrade pip >&2
    "$python" -m pip install --disable-pip-version-check --no-binary llama-cpp-python \
      "llama-cpp-python==$version" >&2
  fi
fi

args=(--lazykv "$lazykv" --model "$model")
[ -n "$out" ] && args+=(--out "$out")
exec "$python" "$here/check-llamacpp.py" "${args[@]}" "$@"
