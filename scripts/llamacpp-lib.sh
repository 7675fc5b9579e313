#!/usr/bin/env bash
# Builds llama.cpp's library (libllama, libggml: the C API and its CMake
# package) from the vendored llama.cpp of the pinned llama-cpp-python sdist,
# the same release scripts/check-llamacpp.sh checks against, installs it into
# a cached prefix and prints that prefix. Nothing else is fetched: the sdist
# comes from PyPI through pip, its SHA-256 checked. About 2 minutes on 2
# cores, once; a prefix already built is reused.
#
#   LAZYKV_LLAMACPP_LIB  the prefix (default $XDG_CACHE_HOME/lazykv/
#                        llamacpp-lib-<version>, ~/.cache when unset)
#
# A portable build (GGML_NATIVE=OFF: the cache may move between machines),
# CPU only, shared libraries that find each other ($ORIGIN run path), no
# tools, tests, server or network code. Needs cmake, a C/C++ compiler and
# python3 with pip (scripts/install-deps.sh installs them).
set -euo pipefail

version=0.3.36
sha256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
prefix=${LAZYKV_LLAMACPP_LIB:-${XDG_CACHE_HOME:-$HOME/.cache}/lazykv/llamacpp-lib-$version}
stamp=$prefix/.lazykv-llamacpp-$version
say() { echo "llamacpp-lib: $*" >&2; }

if [ -f "$stamp" ] && [ -f "$prefix/lib/cmake/llama/llama-config.cmake" ]; then
  echo "$prefix"
  exit 0
fi
for tool in cmake cc c++ python3; do
  command -v "$tool" >/dev/null || { say "error: $tool is needed (scripts/install-deps.sh)"; exit 1; }
done
python3 -m pip --version >/dev/null 2>&1 || { say "error: pip is needed (python3-pip)"; exit 1; }

mkdir -p "$(dirname "$prefix")"
work=$(mktemp -d "$prefix.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
say "downloading llama-cpp-python $version's sdist from PyPI (about 77 MB)"
python3 -m pip download --quiet --no-deps --no-cache-dir --disable-pip-version-check \
  --no-binary llama-cpp-python --dest "$work" "llama-cpp-python==$version" >&2
sdist=$work/llama_cpp_python-$version.tar.gz
[ -f "$sdist" ] || { say "error: pip left no $(basename "$sdist")"; exit 1; }
got=$(sha256sum "$sdist" | cut -d' ' -f1)
[ "$got" = "$sha256" ] || { say "error: SHA-256 of the sdist is $got, expected $sha256"; exit 1; }
tar xzf "$sdist" -C "$work" "llama_cpp_python-$version/vendor/llama.cpp"
src=$work/llama_cpp_python-$version/vendor/llama.cpp

say "building libllama (once; several minutes)"
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=ON \
  -DGGML_NATIVE=OFF -DLLAMA_BUILD_COMMON=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_APP=OFF -DLLAMA_OPENSSL=OFF \
  -DLLAMA_CURL=OFF -DCMAKE_INSTALL_LIBDIR=lib -DCMAKE_INSTALL_RPATH='$ORIGIN' \
  -DCMAKE_INSTALL_PREFIX="$prefix" >"$work/configure.log" 2>&1 ||
  { tail -20 "$work/configure.log" >&2; exit 1; }
cmake --build "$work/build" -j "$(nproc 2>/dev/null || echo 2)" >"$work/build.log" 2>&1 ||
  { tail -30 "$work/build.log" >&2; exit 1; }
rm -rf "$prefix"
cmake --install "$work/build" >"$work/install.log" 2>&1 || { tail -20 "$work/install.log" >&2; exit 1; }
touch "$stamp"
say "installed into $prefix"
echo "$prefix"
