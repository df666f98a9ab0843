#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up leakwatch and runs it on a training-like loop with a planted leak:
# one 512-byte "loss" buffer kept per step. On a machine with an NVIDIA GPU
# the loop runs on the real CUDA runtime, elsewhere on the test suite's
# stand-in runtime. The trace is kept in a new directory under $TMPDIR, and
# the next commands to try on it are printed.
#   scripts/demo.sh [STEPS]
# LEAKWATCH_BUILD   the build directory (default build/)
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${LEAKWATCH_BUILD:-$here/build}
steps=${1:-200}

"$here/scripts/setup.sh" "$build"

cuda=${CUDA_HOME:-${CUDA_PATH:-/usr/local/cuda}}
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  echo "demo: GPU found, using the CUDA runtime in $cuda/lib64"
  export LD_LIBRARY_PATH="$cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  echo "demo: no GPU here, using the stand-in CUDA runtime"
fi

# Kept afterwards, so that the trace can be explored further.
workdir=$(mktemp -d "${TMPDIR:-/tmp}/leakwatch-demo.XXXXXX")
cd "$workdir"
echo "demo: leakwatch run -- train_leak $steps"
echo
"$build/report/leakwatch" run --trace "$workdir/train_leak-%p.trace" -- \
  "$build/examples/train_leak" "$steps"
trace=$(ls "$workdir"/train_leak-*.trace)
lw="$build/report/leakwatch"
cat <<EOF

demo: the trace is kept: $trace
Next, try:
  $lw check --max-growth 0 $trace
  $lw report --format html -o $workdir/report.html $trace
  $lw report --format json $trace
  $lw help
(rm -r $workdir when done)
EOF
