#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Golden-file tests of the leakwatch command line.

Each case generates traces with gen-trace in a fresh directory, runs
leakwatch there (so that reports name the traces by relative paths), and
compares its standard output with golden/CASE.out, its standard error with
golden/CASE.err (a missing file means "must be empty") and its exit status
with the one in the table below, byte for byte.

    run-golden.py --leakwatch PATH --gen PATH --golden DIR [--libdw 0|1] CASE
    run-golden.py --list

To regenerate the golden files after an intended change of output, run the
tests with LEAKWATCH_REGEN_GOLDEN=1 in the environment, e.g.
    LEAKWATCH_REGEN_GOLDEN=1 meson test -C BUILD --suite report
and review the diff.
"""

import argparse
import os
import subprocess
import sys
import tempfile

# name: (traces to generate, leakwatch arguments, exit status, needs libdw)
# In the arguments, "@NAME" is the trace generated from scenario NAME.
CASES = {
    "leak-loop-text": (["leak-loop"], ["report", "@leak-loop"], 0),
    "leak-loop-json": (["leak-loop"], ["report", "--format", "json", "@leak-loop"], 0),
    "kinds-text": (["kinds"], ["report", "@kinds"], 0),
    "kinds-json": (["kinds"], ["report", "--format=json", "@kinds"], 0),
    "phases-text": (["phases"], ["report", "@phases"], 0, True),
    "phases-json": (["phases"], ["report", "--format", "json", "@phases"], 0, True),
    "truncated-text": (["truncated"], ["report", "@truncated"], 0),
    "truncated-json": (["truncated"], ["report", "--format", "json", "@truncated"], 0),
    "truncated-ext-text": (["truncated-ext"], ["report", "@truncated-ext"], 0),
    "zero-tail-text": (["zero-tail"], ["report", "@zero-tail"], 0),
    "header-only-text": (["header-only"], ["report", "@header-only"], 0),
    "header-only-json": (["header-only"], ["report", "--format", "json", "@header-only"], 0),
    "big-header-text": (["big-header"], ["report", "@big-header"], 0),
    "python-text": (["python"], ["report", "@python"], 0),
    "python-json": (["python"], ["report", "--format", "json", "@python"], 0),
    "python-frames-text": (["python"], ["report", "--frames", "3", "@python"], 0),
    # Modules whose files are missing: the note differs without libdw.
    "python-location-text": (["python-location"], ["report", "--frames", "4", "@python-location"], 0, True),
    "python-location-json": (["python-location"], ["report", "--format", "json", "@python-location"], 0, True),
    "python-finalize-text": (["python-finalize"], ["report", "@python-finalize"], 0),
    "python-finalize-json": (["python-finalize"], ["report", "--format", "json", "@python-finalize"], 0),
    "no-leak-text": (["no-leak"], ["report", "@no-leak"], 0),
    "host-only-text": (["host-only"], ["report", "@host-only"], 0),
    "host-only-json": (["host-only"], ["report", "--format", "json", "@host-only"], 0),
    "many-sites-text": (["many-sites"], ["report", "@many-sites"], 0),
    "many-sites-top3-text": (["many-sites"], ["report", "--top", "3", "--frames", "2", "@many-sites"], 0),
    "many-sites-all-text": (["many-sites"], ["report", "--top=0", "--frames=0", "@many-sites"], 0),
    "many-sites-json": (["many-sites"], ["report", "--format", "json", "--top", "1", "@many-sites"], 0),
    "escapes-text": (["escapes"], ["report", "@escapes"], 0),
    "escapes-json": (["escapes"], ["report", "--format", "json", "@escapes"], 0),
    "two-traces-text": (["leak-loop", "host-only"], ["report", "@leak-loop", "@host-only"], 0),
    "two-traces-json": (["leak-loop", "host-only"], ["report", "--format", "json", "@leak-loop", "@host-only"], 0),
    "good-and-bad-text": (["host-only", "corrupt-tag"], ["report", "@host-only", "@corrupt-tag", "missing.trace"], 2),
    "good-and-bad-json": (["host-only", "corrupt-tag"], ["report", "--format", "json", "@host-only", "@corrupt-tag"], 2),
    # Traces that cannot be reported: one line, exit status 2.
    "corrupt-tag": (["corrupt-tag"], ["report", "@corrupt-tag"], 2),
    "bad-magic": (["bad-magic"], ["report", "@bad-magic"], 2),
    "newer-version": (["newer-version"], ["report", "@newer-version"], 2),
    "short-header": (["short-header"], ["report", "@short-header"], 2),
    "empty": (["empty"], ["report", "@empty"], 2),
    "huge-frames": (["huge-frames"], ["report", "@huge-frames"], 2),
    "undefined-stack": (["undefined-stack"], ["report", "@undefined-stack"], 2),
    "stack-order": (["stack-order"], ["report", "@stack-order"], 2),
    "bad-varint": (["bad-varint"], ["report", "@bad-varint"], 2),
    "ext-overrun": (["ext-overrun"], ["report", "@ext-overrun"], 2),
    "after-end": (["after-end"], ["report", "--format", "json", "@after-end"], 2),
    "pystack-undefined": (["pystack-undefined"], ["report", "@pystack-undefined"], 2),
    # The END record's count of events against what was read.
    "header-skips-to-end": (["header-skips-to-end"], ["report", "@header-skips-to-end"], 2),
    "check-header-skips-to-end": (["header-skips-to-end"], ["check", "--max-growth", "0", "@header-skips-to-end"], 2),
    "end-miscount": (["end-miscount"], ["report", "@end-miscount"], 2),
    # A declared length: damage when no writer writes one so long, a cut
    # when the file ends inside the record.
    "record-too-long": (["record-too-long"], ["report", "@record-too-long"], 2),
    "record-past-end-text": (["record-past-end"], ["report", "@record-past-end"], 0),
    # Checksummed blocks: sound, damaged (read up to the damage, exit 2,
    # no gate passes), cut inside a block.
    "checksummed-text": (["checksummed"], ["report", "@checksummed"], 0),
    "checksummed-json": (["checksummed"], ["report", "--format", "json", "@checksummed"], 0),
    "checksum-damaged-text": (["checksum-damaged"], ["report", "@checksum-damaged"], 2),
    "checksum-damaged-json": (["checksum-damaged"], ["report", "--format", "json", "@checksum-damaged"], 2),
    "check-checksum-damaged": (["checksum-damaged"], ["check", "--max-growth", "1MiB", "@checksum-damaged"], 3),
    "diff-checksum-damaged": (["checksummed", "checksum-damaged"], ["diff", "@checksummed", "@checksum-damaged"], 3),
    "checksum-cut-text": (["checksum-cut"], ["report", "@checksum-cut"], 0),
    # diff against a run with nothing to judge: never "fixed".
    "diff-header-only": (["leak-loop", "header-only"], ["diff", "@leak-loop", "@header-only"], 3),
    "diff-died-before-step": (["leak-loop", "died-before-step"], ["diff", "@leak-loop", "@died-before-step"], 3),
    "missing-file": ([], ["report", "missing.trace"], 2),
    "directory": ([], ["report", "."], 2),
    # Command-line mistakes: one line, exit status 2.
    "no-arguments": ([], [], 2),
    "unknown-command": ([], ["frobnicate"], 2),
    "unknown-top-option": ([], ["--frobnicate"], 2),
    "report-no-trace": ([], ["report"], 2),
    "report-unknown-option": ([], ["report", "--bogus", "x.trace"], 2),
    "report-unknown-short-option": ([], ["report", "-q", "x.trace"], 2),
    "report-missing-value": ([], ["report", "x.trace", "--top"], 2),
    "report-bad-top": ([], ["report", "--top", "ten", "x.trace"], 2),
    "report-negative-frames": ([], ["report", "--frames=-1", "x.trace"], 2),
    "report-bad-format": ([], ["report", "--format", "xml", "x.trace"], 2),
    "report-bad-output": (["leak-loop"], ["report", "-o", "no/such/dir/out.txt", "@leak-loop"], 2),
    "run-no-command": ([], ["run"], 2),
    "run-unknown-option": ([], ["run", "--bogus", "--", "true"], 2),
    "run-missing-value": ([], ["run", "--trace"], 2),
    "help-unknown": ([], ["help", "frobnicate"], 2),
    "help": ([], ["--help"], 0),
    "help-report": ([], ["report", "--help"], 0),
    "help-run": ([], ["help", "run"], 0),
    # Growth verdicts (step series).
    "step-linear-text": (["step-linear"], ["report", "@step-linear"], 0),
    "step-linear-json": (["step-linear"], ["report", "--format", "json", "@step-linear"], 0),
    "step-tiny-text": (["step-tiny"], ["report", "--top", "2", "@step-tiny"], 0),
    "step-few-text": (["step-few"], ["report", "@step-few"], 0),
    # What the growth line says of memory that does not grow.
    "step-plateau-text": (["step-plateau"], ["report", "@step-plateau"], 0),
    "step-sawtooth-flat-text": (["step-sawtooth-flat"],
                                ["report", "@step-sawtooth-flat"], 0),
    "check-step-linear": (["step-linear"], ["check", "--max-growth", "512KiB", "@step-linear"], 1),
    "check-step-tiny-ok": (["step-tiny"], ["check", "--max-growth", "1KiB", "@step-tiny"], 0),
    "check-step-few": (["step-few"], ["check", "--max-growth", "0", "@step-few"], 3),
    "check-bad-size": (["step-linear"], ["check", "--max-growth", "1.5", "@step-linear"], 2),
}


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch")
    p.add_argument("--gen")
    p.add_argument("--golden")
    p.add_argument("--libdw", default="1")
    p.add_argument("--list", action="store_true")
    p.add_argument("case", nargs="?")
    args = p.parse_args()
    for k in ("leakwatch", "gen", "golden"):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    return args


def compare(golden_path, actual, regen, what):
    if regen:
        if actual:
            with open(golden_path, "wb") as f:
                f.write(actual)
        elif os.path.exists(golden_path):
            os.unlink(golden_path)
        return True
    expected = b""
    if os.path.exists(golden_path):
        with open(golden_path, "rb") as f:
            expected = f.read()
    if expected == actual:
        return True
    print(f"FAIL: {what} differs from {golden_path}")
    print("--- expected")
    print(expected.decode("utf-8", "backslashreplace"))
    print("--- actual")
    print(actual.decode("utf-8", "backslashreplace"))
    return False


def main():
    args = parse_args()
    if args.list:
        print("\n".join(CASES))
        return 0
    case = CASES[args.case]
    scenarios, lw_args, status = case[0], case[1], case[2]
    needs_libdw = len(case) > 3 and case[3]
    if needs_libdw and args.libdw != "1":
        print("SKIP: needs a leakwatch built with libdw")
        return 77
    regen = os.environ.get("LEAKWATCH_REGEN_GOLDEN") == "1"

    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAKWATCH_")}
    with tempfile.TemporaryDirectory(prefix="lw-golden-") as tmp:
        for s in scenarios:
            subprocess.run([args.gen, s, os.path.join(tmp, s + ".trace")], check=True)
        argv = [args.leakwatch] + [
            a[1:] + ".trace" if a.startswith("@") else a for a in lw_args
        ]
        r = subprocess.run(argv, cwd=tmp, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
    ok = True
    if r.returncode != status:
        print(f"FAIL: exit status {r.returncode}, expected {status}")
        ok = False
    base = os.path.join(args.golden, args.case)
    ok &= compare(base + ".out", r.stdout, regen, "standard output")
    ok &= compare(base + ".err", r.stderr, regen, "standard error")
    if status == 2 and not regen and r.stderr.count(b"\n") < 1:
        print("FAIL: no error line")
        ok = False
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
