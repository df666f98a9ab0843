#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Sets up, builds and runs the whole test suite.
#   scripts/test.sh [BUILD_DIR]
# Prints "N passed, N failed, N skipped" last; exits non-zero on any failure.
set -uo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-"$here/build"}

"$here/scripts/setup.sh" "$build" -Dwerror=true || exit 1

meson test -C "$build" --print-errorlogs --num-processes 2
status=$?

python3 "$here/scripts/test-summary.py" "$build/meson-logs/testlog.json"
exit $status
