#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The merged view of several ranks when one of them is bad:

- a rank whose trace is only a header, or is damaged in its first block,
  is said to be empty or damaged and not judged, and is left out of the
  comparison: the site growing in ranks 0, 1 and 2 is common to them, not
  "growing only in" each of them in turn;
- a site growing in some ranks but not all is said once, with each rank;
- a trace given twice (the same file, or a copy of it) counts once, with
  one line on stderr.

    test-merged.py --leakwatch PATH --gen PATH
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, finish  # noqa: E402
from tracebytes import HEADER_SIZE  # noqa: E402

CHECKSUM_RECORD_SIZE = 12


def run(args, cwd, *traces):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}
    env["LEAKWATCH_SYMBOL_CACHE"] = "0"
    p = subprocess.run([args.leakwatch, "report", *traces], cwd=cwd, env=env,
                       capture_output=True, timeout=120)
    out = p.stdout.decode("utf-8", "replace")
    return p.returncode, out[out.find("\nMerged view"):], \
        p.stderr.decode("utf-8", "replace")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leakwatch", required=True)
    ap.add_argument("--gen", required=True)
    args = ap.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    args.gen = os.path.abspath(args.gen)
    tmp = tempfile.mkdtemp(prefix="lw-merged-")
    try:
        for name in ("formats-rank0", "formats-rank1", "formats-rank2",
                     "formats-fixed", "header-only", "checksummed"):
            subprocess.run([args.gen, name, name + ".trace"], cwd=tmp,
                           check=True)
        # One bit flipped inside the first block: nothing is readable.
        with open(os.path.join(tmp, "checksummed.trace"), "rb") as f:
            data = bytearray(f.read())
        data[HEADER_SIZE + CHECKSUM_RECORD_SIZE + 5] ^= 0x40
        with open(os.path.join(tmp, "damaged.trace"), "wb") as f:
            f.write(data)
        ranks = ["formats-rank0.trace", "formats-rank1.trace",
                 "formats-rank2.trace"]

        rc, view, err = run(args, tmp, *ranks, "header-only.trace")
        check(rc == 0 and "Merged view of 4 traces:" in view,
              f"ranks and a header-only trace: exit {rc}: {view!r}")
        lines = view.split("\n")
        empty = [line for line in lines if "header-only.trace" in line]
        check(len(empty) == 1 and "not judged" in empty[0] and
              "EMPTY" in empty[0] and "not-enough-steps" not in empty[0],
              f"the header-only trace is not said to be empty: {empty}")
        check("growing only in" not in view,
              f"a site common to the judged ranks reads as one rank's: {view}")
        check("rank 0 +4.0 KiB/step, rank 1 +8.0 KiB/step, "
              "rank 2 +4.0 KiB/step" in view,
              f"the site growing in ranks 0, 1 and 2 is not common: {view}")
        check("peak: 41.5 MiB (rank 0) to 41.9 MiB (rank 1)" in view,
              f"the empty trace counts in the imbalance: {view}")

        rc, view, err = run(args, tmp, *ranks, "damaged.trace")
        damaged = [line for line in view.split("\n")
                   if "damaged.trace" in line]
        check(len(damaged) == 1 and "DAMAGED: block 1" in damaged[0] and
              "not judged" in damaged[0] and
              "not-enough-steps" not in damaged[0],
              f"the damaged trace is not said to be damaged: {damaged}")
        check("growing only in" not in view,
              f"with a damaged rank, sites read as one rank's: {view}")

        # A run that keeps nothing per step: the site grows in the three
        # ranks, not in all four traces, and is said once.
        rc, view, err = run(args, tmp, *ranks, "formats-fixed.trace")
        check(view.count("growing in rank 0 +4.0 KiB/step, rank 1 +8.0 "
                         "KiB/step and rank 2 +4.0 KiB/step at log_loss") == 1
              and "growing only in" not in view,
              f"a site growing in three of four traces: {view}")

        shutil.copy(os.path.join(tmp, "formats-rank1.trace"),
                    os.path.join(tmp, "copy-of-rank1.trace"))
        for twice in (["formats-rank2.trace"], ["./formats-rank2.trace"],
                      ["copy-of-rank1.trace"]):
            rc, view, err = run(args, tmp, *ranks, *twice)
            check(rc == 0 and "Merged view of 3 traces:" in view,
                  f"{twice} given again counts twice: {view!r}")
            said = [line for line in err.splitlines()
                    if "counted once" in line]
            check(len(said) == 1 and twice[0] in said[0],
                  f"{twice} given again: no one-line warning: {err!r}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
