#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The trace reader against bad input.

Builds a seed corpus of traces: every scenario of gen-trace (including the
corrupt ones) and, with --shim, real traces of test programs run under the
shim. Then, by mode:

  sweep   runs `leakwatch report` on each seed cut short at many points and
          with bytes overwritten: it must exit 0 or 2, print exactly one
          line on stderr when it exits 2, and never die of a signal.
  regress runs the fuzz target (built without libFuzzer) over the seeds and
          their mutations: it must exit 0.
  fuzz    runs the libFuzzer target from the seeds for --seconds.

    fuzz-traces.py MODE --gen GEN-TRACE [--shim LIB --prog PROG ...]
                   [--leakwatch CLI] [--target FUZZ-TARGET] [--seconds N]

--seconds defaults to $LEAKWATCH_FUZZ_SECONDS, else 60.
"""
import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile

HEADER = 32


def seeds(args, tmp):
    out = os.path.join(tmp, "seeds")
    os.makedirs(out)
    names = subprocess.run([args.gen, "--list"], capture_output=True,
                           text=True, check=True).stdout.split()
    for name in names:
        if name != "large":
            subprocess.run([args.gen, name, os.path.join(out, name)],
                           check=True)
    for i, prog in enumerate(args.prog or []):
        # A sanitized build preloads an instrumented shim ahead of the
        # sanitizer's runtime, which is harmless here.
        env = dict(os.environ, LD_PRELOAD=args.shim, LEAKWATCH_QUIET="1",
                   LEAKWATCH_OUT=os.path.join(out, f"real-{i}-%p"),
                   ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0")
        subprocess.run([prog] + (["20", "100"] if "leaky" in prog else []),
                       env=env, cwd=tmp, check=True,
                       stdout=subprocess.DEVNULL)
    return sorted(os.path.join(out, f) for f in os.listdir(out))


def mutations(data, rng, count):
    """Deterministic variants: cut short, overwritten, counts blown up."""
    n = len(data)
    for _ in range(count):
        what = rng.randrange(4)
        if what == 0 or n <= HEADER:
            yield data[:rng.randrange(n + 1)] if n else b""
        elif what == 1:
            pos = rng.randrange(HEADER, n)
            yield data[:pos] + bytes([rng.randrange(256)]) + data[pos + 1:]
        elif what == 2:
            # A varint claiming an enormous count or length.
            pos = rng.randrange(HEADER, n)
            yield data[:pos] + b"\xff" * 8 + b"\x7f" + data[pos + 1:]
        else:
            pos = rng.randrange(0, n)
            yield data[:pos] + bytes(rng.randrange(256) for _ in range(16))


def sweep(args, files, tmp):
    rng = random.Random(1234)
    path = os.path.join(tmp, "mutant.trace")
    runs = failures = 0
    for seed in files:
        with open(seed, "rb") as f:
            data = f.read()
        for variant in mutations(data, rng, args.per_seed):
            with open(path, "wb") as f:
                f.write(variant)
            for fmt in ("text", "json"):
                r = subprocess.run([args.leakwatch, "report", "--format", fmt,
                                    path], capture_output=True, timeout=60)
                runs += 1
                lines = r.stderr.decode(errors="replace").splitlines()
                bad = None
                if r.returncode < 0:
                    bad = f"killed by signal {-r.returncode}"
                elif r.returncode not in (0, 2):
                    bad = f"exit status {r.returncode}"
                elif r.returncode == 2 and len(lines) != 1:
                    bad = f"{len(lines)} lines on stderr: {lines[:3]}"
                if bad:
                    failures += 1
                    keep = os.path.join(args.keep or tmp,
                                        f"failed-{failures}.trace")
                    shutil.copy(path, keep)
                    print(f"FAIL ({os.path.basename(seed)}, {fmt}): {bad}; "
                          f"input kept as {keep}")
    print(f"{runs} reports of {len(files)} seeds and their mutations, "
          f"{failures} failures")
    return failures == 0


def regress(args, files, tmp):
    rng = random.Random(4321)
    mutants = os.path.join(tmp, "mutants")
    os.makedirs(mutants)
    count = 0
    for seed in files:
        with open(seed, "rb") as f:
            data = f.read()
        for variant in mutations(data, rng, args.per_seed):
            count += 1
            with open(os.path.join(mutants, f"m{count}"), "wb") as f:
                f.write(variant)
    inputs = files + sorted(os.path.join(mutants, f)
                            for f in os.listdir(mutants))
    r = subprocess.run([args.target] + inputs)
    print(f"fuzz target on {len(inputs)} inputs: exit {r.returncode}")
    return r.returncode == 0


def fuzz(args, files, tmp):
    corpus = os.path.join(tmp, "corpus")
    os.makedirs(corpus)
    for f in files:
        shutil.copy(f, corpus)
    artifacts = (args.keep or tmp).rstrip("/") + "/"
    r = subprocess.run([args.target, f"-max_total_time={args.seconds}",
                        "-max_len=65536", "-rss_limit_mb=2048",
                        "-timeout=10", f"-artifact_prefix={artifacts}",
                        "-print_final_stats=1", corpus])
    return r.returncode == 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["sweep", "regress", "fuzz"])
    p.add_argument("--gen", required=True)
    p.add_argument("--shim")
    p.add_argument("--prog", action="append")
    p.add_argument("--leakwatch")
    p.add_argument("--target")
    p.add_argument("--seconds", type=int,
                   default=int(os.environ.get("LEAKWATCH_FUZZ_SECONDS", "60")))
    p.add_argument("--per-seed", type=int, default=10)
    p.add_argument("--keep", help="directory for failing inputs")
    args = p.parse_args()
    for k in ("gen", "shim", "leakwatch", "target"):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    args.prog = [os.path.abspath(x) for x in args.prog or []]
    with tempfile.TemporaryDirectory(prefix="lw-fuzz-") as tmp:
        files = seeds(args, tmp)
        ok = {"sweep": sweep, "regress": regress, "fuzz": fuzz}[args.mode](
            args, files, tmp)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
