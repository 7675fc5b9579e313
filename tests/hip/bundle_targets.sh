#!/bin/sh
# The code-object bundle must hold exactly the configured gfx targets, as
# clang's own clang-offload-bundler lists them (besides the empty host
# entry). Exit 77 (ctest: skipped) where the bundler is not installed.
# usage: bundle_targets.sh BUNDLER BUNDLE ARCH...
bundler=$1
bundle=$2
shift 2
if [ -z "$bundler" ] || [ ! -x "$bundler" ]; then
  echo "clang-offload-bundler not found: skipped"
  exit 77
fi
listed=$("$bundler" --list --type=o --input="$bundle") || {
  echo "FAIL: $bundler --list --input=$bundle failed"
  exit 1
}
got=$(echo "$listed" | grep -v '^host-' | sort)
want=$(for arch in "$@"; do echo "hipv4-amdgcn-amd-amdhsa--$arch"; done | sort)
if [ "$got" != "$want" ]; then
  echo "FAIL: the bundle lists"
  echo "$got"
  echo "expected"
  echo "$want"
  exit 1
fi
echo "PASS: $bundle holds" "$@"
