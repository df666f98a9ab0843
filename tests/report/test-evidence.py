#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The evidence's figures add up: gen-trace's "evidence-frees" run, a line
that makes a kept block and a temporary each step (40 steps: 80 made, 40
freed in their step, 40 live when the program's code ends, 10 of them
freed by its teardown after that). The text evidence must say the frees
and what is live as parts of the allocations made (freed + live = made),
agree with the JSON report's figures, and never say "40 freed" beside "40
live" without the 80 they are parts of.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import fail, finish  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leakwatch", required=True)
    ap.add_argument("--gen", required=True)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="lw-evidence-") as tmp:
        trace = os.path.join(tmp, "ev.trace")
        subprocess.run([args.gen, "evidence-frees", trace], check=True)
        text = subprocess.run([args.leakwatch, "report", trace],
                              capture_output=True, text=True, check=True,
                              timeout=120).stdout
        doc = json.loads(subprocess.run(
            [args.leakwatch, "report", "--format", "json", trace],
            capture_output=True, text=True, check=True,
            timeout=120).stdout)
    leaks = [f for f in doc["findings"] if f["leak"]]
    if len(leaks) != 1 or leaks[0]["category"] != "retained-loss":
        fail(f"one retained-loss finding: {doc['findings']}")
        return finish()
    ev = leaks[0]["evidence"]
    lines = [line.strip()[len("evidence: "):] for line in text.splitlines()
             if line.strip().startswith("evidence: ")]
    if len(lines) != 1:
        fail(f"one evidence line: {text}")
        return finish()
    m = re.search(r"(\d+) allocations made: (\d+) freed after ([\d.]+) "
                  r"steps on average \(at most (\d+)\), (\d+) live "
                  r"\(([\d.]+ [KMG]?i?B)\)", lines[0])
    if not m:
        fail(f"the frees and what is live, as parts: {lines[0]}")
        return finish()
    made, freed, mean, most, live = (int(m[1]), int(m[2]), float(m[3]),
                                     int(m[4]), int(m[5]))
    if (made, freed, live) != (80, 40, 40) or freed + live != made:
        fail(f"80 made = 40 freed + 40 live: {lines[0]}")
    if (mean, most) != (0.0, 0):
        fail(f"the temporaries live 0 steps: {lines[0]}")
    if m[6] != "60.0 KiB" or ev["live_bytes"] != 40 * 1536:
        fail(f"40 x 1536 bytes live: {m[6]}, JSON {ev['live_bytes']}")
    if (ev["frees"], ev["live_count"]) != (freed, live):
        fail(f"the text's figures are the JSON's: {ev}")
    if ev["allocated_bytes"] != made * ev["mean_size"]:
        fail(f"80 allocations of {ev['mean_size']} bytes: {ev}")
    if re.search(r"live in \d+ allocations", lines[0]):
        fail(f"what is live said twice: {lines[0]}")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
