#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# What leakwatch costs: builds, then runs the five benchmarks side by side
# (hook cost, heaptrack, Python, size, report) and prints each figure
# beside its target.
#   scripts/bench.sh [BUILD_DIR] [--quick]
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
build="$here/build"
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
  build=$1
  shift
fi
"$here/scripts/setup.sh" "$build" >/dev/null
exec python3 "$here/tests/bench/bench-all.py" "$build" "$@"
