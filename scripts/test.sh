#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up, builds and runs the whole test suite, the torch suite with real
# PyTorch (scripts/torch-env.sh installs it on the first run).
#   scripts/test.sh [BUILD_DIR]
# Prints "N passed, N failed, N skipped" last; exits non-zero on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$here/build"}

"$here/scripts/setup.sh" "$build" -Dwerror=true || exit 1

# Real PyTorch for the torch suite: installed once into an environment
# outside the tree, reused after. No PyTorch, no test run.
torch_python=$("$here/scripts/torch-env.sh" | tail -n 1) || {
  echo "test: could not install PyTorch (scripts/torch-env.sh)" >&2
  exit 1
}
meson configure "$build" -Dtorch_python="$torch_python" >/dev/null || exit 1

meson test -C "$build" --print-errorlogs --num-processes 2
status=$?

python3 "$here/scripts/test-summary.py" "$build/meson-logs/testlog.json"
exit $status
