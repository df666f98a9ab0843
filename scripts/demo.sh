#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up leakwatch and runs it on a training-like loop with a planted leak:
# one 512-byte "loss" buffer kept per step. On a machine with an NVIDIA GPU
# the loop runs on the real CUDA runtime, elsewhere on the test suite's
# stand-in runtime.
#   scripts/demo.sh [STEPS]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build="$here/build"
steps=${1:-200}

"$here/scripts/setup.sh" "$build"

cuda=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "demo: GPU found, using the CUDA runtime in $cuda/lib64"
  export LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  echo "demo: no GPU here, using the stand-in CUDA runtime"
fi

workdir=$(mktemp -d)
trap 'rm -rf "$workdir"' EXIT
cd "$workdir"
echo "demo: leakwatch run -- train_leak $steps"
echo
"$build/report/leakwatch" run -- "$build/examples/train_leak" "$steps"
