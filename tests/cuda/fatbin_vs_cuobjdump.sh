#!/bin/sh
# The fatbin parser (backends/cuda/cuda_fatbin.c, through fatbin_list) and
# NVIDIA's cuobjdump must list the same GPU code, in the same order, for the
# fatbin embedded in lazykv. Exit 77 (ctest: skipped) where cuobjdump is not
# installed: it ships with the full CUDA toolkit, or from PyPI as
# nvidia-cuda-cuobjdump.
#   fatbin_vs_cuobjdump.sh FATBIN_LIST FATBIN [CUOBJDUMP]
list=$1
fatbin=$2
tool=${3:-}
if [ -z "$tool" ] || [ ! -x "$tool" ]; then
  tool=$(command -v cuobjdump 2>/dev/null || true)
fi
for dir in "${CUDA_HOME:-}" "${CUDA_PATH:-}"; do
  if [ -z "$tool" ] && [ -n "$dir" ] && [ -x "$dir/bin/cuobjdump" ]; then
    tool=$dir/bin/cuobjdump
  fi
done
if [ -z "$tool" ]; then
  echo "SKIP: cuobjdump not found (PATH, \$CUDA_HOME/bin, \$CUDA_PATH/bin)"
  exit 77
fi
ours=$("$list" "$fatbin") || { echo "FAIL: lazykv's parser rejected $fatbin"; exit 1; }
# "ELF file    1: lazykv.1.sm_75.cubin" -> sm_75, "PTX file    1: lazykv.1.sm_90.ptx" -> compute_90
theirs=$("$tool" --list-elf --list-ptx "$fatbin" | sed -n \
  -e 's/^ELF file *[0-9]*: .*\.\(sm_[0-9a-z]*\)\.cubin$/\1/p' \
  -e 's/^PTX file *[0-9]*: .*\.sm_\([0-9a-z]*\)\.ptx$/compute_\1/p') ||
  { echo "FAIL: $tool could not list $fatbin"; exit 1; }
if [ -z "$theirs" ]; then
  echo "FAIL: $tool listed nothing in $fatbin"
  exit 1
fi
if [ "$ours" != "$theirs" ]; then
  echo "FAIL: lazykv and $tool disagree on $fatbin"
  echo "lazykv:    $(echo $ours)"
  echo "cuobjdump: $(echo $theirs)"
  exit 1
fi
echo "PASS: lazykv and $tool both list: $(echo $ours)"
