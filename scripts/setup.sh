#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs what leakwatch needs (Debian 12 packages) and builds it.
#   scripts/setup.sh [BUILD_DIR] [extra meson options...]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$here/build"}
shift || true

packages=(meson ninja-build pkg-config gcc libc6-dev libunwind-dev uthash-dev
          libdw-dev libelf-dev python3 python3-venv binutils)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cuda=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
if [ ! -f "$cuda/include/cuda_runtime_api.h" ]; then
  echo "setup: no CUDA headers in $cuda/include; install the CUDA toolkit or set CUDA_HOME" >&2
  exit 1
fi

if [ -f "$build/build.ninja" ]; then
  meson configure "$build" "$@" >/dev/null
else
  meson setup "$build" "$here" "$@" >/dev/null
fi
ninja -C "$build" >/dev/null
echo "setup: built in $build"
