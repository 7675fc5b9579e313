#!/usr/bin/env bash
# Installs what lazykv needs to build and test on Debian 12: a C compiler,
# CMake, pkg-config and Criterion. Safe to run again.
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  build-essential cmake pkg-config libcriterion-dev >/dev/null
echo "install-deps: build-essential cmake pkg-config libcriterion-dev installed"
