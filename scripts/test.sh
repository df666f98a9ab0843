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

python3 - "$build/meson-logs/testlog.json" <<'PY'
import json, sys
counts = {"passed": 0, "failed": 0, "skipped": 0}
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        counts["passed"] += 1
    elif r == "SKIP":
        counts["skipped"] += 1
    else:
        counts["failed"] += 1
print("{passed} passed, {failed} failed, {skipped} skipped".format(**counts))
PY
exit $status
