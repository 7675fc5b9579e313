#!/usr/bin/env bash
# Installs what lazykv needs to build and test on Debian 12. Safe to run again.
#   build:  a C compiler, CMake, pkg-config, Criterion (tests)
#   vulkan: glslc and the Vulkan headers to build the backend; the loader,
#           Mesa's lavapipe (a software Vulkan device) and the Khronos
#           validation layer to run and check it on a machine without a GPU
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
packages=(build-essential cmake pkg-config libcriterion-dev
          glslc libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-validationlayers)
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
echo "install-deps: ${packages[*]} installed"
