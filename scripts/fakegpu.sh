#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs a command on the stand-in GPU: a CUDA device that real PyTorch trains
# on, without a GPU. Kernels do nothing; memory, copies, streams, events,
# allocators and every host-side path of the framework run for real.
# What reads a kernel's result does not work: transformers' generate()
# does not stop where asked (its stop test is computed on the device), so
# tests write generation loops by hand (docs/stand-in-gpu.md).
#   scripts/fakegpu.sh CMD [ARG...]
# Composes with leakwatch in either order:
#   scripts/fakegpu.sh build/report/leakwatch run -- python3 train.py
#   build/report/leakwatch run -- scripts/fakegpu.sh python3 train.py
# LEAKWATCH_BUILD      the build directory holding the stand-in (default build/)
# FAKECUDA_CAPACITY    device memory, bytes with an optional K/M/G/T (default 80G)
# FAKECUDA_DEVICES     how many devices (default 1)
set -euo pipefail

if [ $# -eq 0 ]; then
  echo "usage: fakegpu.sh CMD [ARG...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")/.." && pwd)
build=${LEAKWATCH_BUILD:-$here/build}
lib="$build/tests/fakecuda"
if [ ! -e "$lib/libcudart.so.13" ] || [ ! -e "$lib/libcublas.so.13" ]; then
  echo "fakegpu: no stand-in GPU in $lib; build it first (scripts/setup.sh)" >&2
  exit 2
fi
cuda=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
# The stand-in first; the toolkit's own libraries (cuDNN, cuFFT, NVRTC...)
# after it.
export LD_LIBRARY_PATH="$lib:$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$@"
