# SPDX-License-Identifier: MIT
"""Prints 'N passed, N failed, N skipped' over one or more meson testlog.json
files; exits 1 if any test failed or a log is missing."""
import json
import sys

counts = {"passed": 0, "failed": 0, "skipped": 0}
for path in sys.argv[1:]:
    try:
        lines = open(path).read().splitlines()
    except OSError as e:
        print(f"test-summary: {path}: {e.strerror}", file=sys.stderr)
        counts["failed"] += 1
        continue
    for line in lines:
        result = json.loads(line)["result"]
        if result in ("OK", "EXPECTEDFAIL"):
            counts["passed"] += 1
        elif result == "SKIP":
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
print("{passed} passed, {failed} failed, {skipped} skipped".format(**counts))
sys.exit(1 if counts["failed"] else 0)
