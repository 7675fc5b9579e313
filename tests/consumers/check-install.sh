#!/usr/bin/env bash
# Installs a built lazykv into a fresh prefix and builds three consumers of
# it from outside the tree, then runs each (tests/consumers/consumer.c says
# what they check):
#   find_package   find_package(lazykv) -> lazykv::lazykv and ::lazykv_static
#   pkg-config     cc $(pkg-config --cflags --libs lazykv), and --static
#   subdirectory   add_subdirectory(lazykv) with find_package(PkgConfig)
#                  disabled: no Criterion, no tests, no tools
# The prefix must hold exactly the installed files listed below: the CLI,
# the header, both libraries, the CMake package and lazykv.pc; never a test
# or a test build.
# Usage: check-install.sh BUILD_DIR SOURCE_DIR WORK_DIR
set -euo pipefail
build=$1 src=$2 work=$3
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work" && mkdir -p "$work"
prefix=$work/prefix
say() { echo "check-install: $*"; }

cmake --install "$build" --prefix "$prefix" >"$work/install.log"
libdir=$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$build/CMakeCache.txt")
ver=$(sed -n 's/^CMAKE_PROJECT_VERSION:[A-Z]*=//p' "$build/CMakeCache.txt")
[ -n "$ver" ] || { say "no CMAKE_PROJECT_VERSION in $build/CMakeCache.txt"; exit 1; }
so=$(cd "$prefix/$libdir" && ls liblazykv.so.*.* | sort | tail -1)
soname=$(objdump -p "$prefix/$libdir/$so" | sed -n 's/^ *SONAME *//p')

expected=$(printf '%s\n' bin/lazykv include/lazykv.h "$libdir/liblazykv.a" \
  "$libdir/liblazykv.so" "$libdir/$soname" "$libdir/$so" \
  "$libdir/cmake/lazykv/lazykvConfig.cmake" "$libdir/cmake/lazykv/lazykvConfigVersion.cmake" \
  "$libdir/cmake/lazykv/lazykvTargets.cmake" "$libdir/pkgconfig/lazykv.pc" | sort -u)
installed=$(cd "$prefix" && find . \( -type f -o -type l \) | sed 's|^\./||' |
            grep -v "^$libdir/cmake/lazykv/lazykvTargets-[a-z]*\.cmake$" | sort)
if [ "$installed" != "$expected" ]; then
  say "the prefix does not hold exactly the installed files:"
  diff <(echo "$expected") <(echo "$installed") || true
  exit 1
fi
say "installed $(echo "$installed" | wc -l) files into the prefix (soname $soname)"

say "find_package consumer"
cmake -S "$here/find_package" -B "$work/find_package" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_BUILD_TYPE=Release >"$work/find_package.log"
cmake --build "$work/find_package" >>"$work/find_package.log"
"$work/find_package/consumer_shared"
"$work/find_package/consumer_static"
# The shared consumer must run from the installed library, not the build's.
# (ldd's output is read whole first: grep -q would stop reading early, and
# under pipefail ldd's broken pipe would then read as a failure.)
deps=$(ldd "$work/find_package/consumer_shared")
case $deps in
  *"$prefix/$libdir/$soname"*) ;;
  *) say "consumer_shared does not load $prefix/$libdir/$soname:"; echo "$deps"; exit 1 ;;
esac

say "pkg-config consumer"
export PKG_CONFIG_PATH="$prefix/$libdir/pkgconfig"
pcver=$(pkg-config --modversion lazykv)
if [ "$pcver" != "$ver" ]; then
  say "pkg-config says lazykv $pcver, the build is $ver"; exit 1
fi
cc -std=c11 -Wall -Wextra -Werror -o "$work/pc_shared" "$here/consumer.c" \
   $(pkg-config --cflags --libs lazykv) -Wl,-rpath,"$prefix/$libdir"
"$work/pc_shared"
static_libs=$(pkg-config --static --libs lazykv)
static_libs=${static_libs/-llazykv/$prefix/$libdir/liblazykv.a}
cc -std=c11 -Wall -Wextra -Werror -o "$work/pc_static" "$here/consumer.c" \
   $(pkg-config --cflags lazykv) $static_libs
"$work/pc_static"
deps=$(ldd "$work/pc_static")
case $deps in
  *liblazykv*) say "pc_static loads a shared liblazykv:"; echo "$deps"; exit 1 ;;
esac

# The plain configure the README's first command runs: every backend's
# options at their defaults (the builds here name CUDA and HIP explicitly).
say "configure with every option at its default"
cmake -S "$src" -B "$work/defaults" >"$work/defaults.log" ||
  { cat "$work/defaults.log"; exit 1; }

say "add_subdirectory consumer (no Criterion, no tests, no tools)"
cmake -S "$here/subdirectory" -B "$work/subdirectory" -DLAZYKV_SOURCE="$src" \
      -DCMAKE_DISABLE_FIND_PACKAGE_PkgConfig=ON -DCMAKE_BUILD_TYPE=Release \
      -DLAZYKV_CUDA=OFF -DLAZYKV_HIP=OFF >"$work/subdirectory.log"
cmake --build "$work/subdirectory" -j "$(nproc 2>/dev/null || echo 2)" >>"$work/subdirectory.log"
"$work/subdirectory/consumer_shared"
"$work/subdirectory/consumer_static"
say "all consumers built and ran"
