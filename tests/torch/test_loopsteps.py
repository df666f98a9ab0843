#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where the steps of a program come from when it marks none, on real
PyTorch under `fakegpu.sh leakwatch run`:

    test_loopsteps.py CASE

  nested       requests, then each request's tokens, in one function
               (loops/nested_tokens.py): the steps are the requests, from
               the loop in serve
  accumulate   a training loop whose optimizer steps every 4 batches
               (loops/train_accumulate.py): the optimizer's steps, not the
               batches
  step_at      LEAKWATCH_STEP_AT=kv_generate.py:LINE (serving/): a step
               each time the line is reached, source "line"
  step_at_bad  LEAKWATCH_STEP_AT with no line: one warning line naming it,
               the program runs as it does without it, and its steps come
               from its loop

Environment as for test_torch.py.
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
from lwcheck import check, finish  # noqa: E402
from test_serving import run_report  # noqa: E402

SKIP = 77
KV = os.path.join(HERE, "serving", "kv_generate.py")


def line_of(path, text):
    with open(path) as f:
        return next(n for n, line in enumerate(f, 1) if text in line)


def report(program, extra_env, quiet=True, text=False):
    """run_report(), its trace removed once read (and, with text, its text
    report too: the fourth value)."""
    r, count, rep = run_report(program, extra_env, quiet=quiet)
    if rep is None:
        sys.exit(finish())
    out = subprocess.run([os.environ["LW_CLI"], "report", rep["trace"]],
                         capture_output=True, text=True).stdout if text else ""
    os.unlink(rep["trace"])
    return r, count, rep, out


def case_nested():
    r, count, rep, _ = report(os.path.join(HERE, "loops",
                                            "nested_tokens.py"), {})
    loop = rep["step_loop"] or {}
    check(rep["step_source"] == "loop" and loop.get("function") == "serve",
          f"steps from {rep['step_source']} {loop}, want the loop in serve")
    check(rep["steps"] == count and count >= 10,
          f"{rep['steps']} steps for {count} requests")


def case_accumulate():
    r, count, rep, _ = report(os.path.join(HERE, "loops",
                                            "train_accumulate.py"), {})
    check(rep["step_source"] == "optimizer" and rep["step_loop"] is None,
          f"steps from {rep['step_source']}, want the optimizer's")
    check(rep["steps"] == count and count >= 10,
          f"{rep['steps']} steps for {count} optimizer steps")


def case_step_at():
    line = line_of(KV, "out = generate(")
    r, count, rep, text = report(KV, {"LEAKWATCH_STEP_AT":
                                      f"kv_generate.py:{line}"}, text=True)
    loop = rep["step_loop"] or {}
    check(rep["step_source"] == "line", f"source {rep['step_source']}")
    check(loop.get("line") == line and loop.get("function") ==
          "Server.handle" and loop.get("file", "").endswith(
              os.sep + "kv_generate.py"), f"step_loop {loop}")
    check(rep["steps"] == count and count >= 10,
          f"{rep['steps']} steps for {count} requests")
    check(f"marked each time kv_generate.py:{line} was reached" in text,
          f"the text report's steps line: {text[:600]}")


def case_step_at_bad():
    plain, count, _, _ = report(KV, {}, quiet=False)
    r, count_bad, rep, _ = report(KV, {"LEAKWATCH_STEP_AT":
                                       "kv_generate.py"}, quiet=False)
    warnings = [line for line in r.stderr.splitlines()
                if "LEAKWATCH_STEP_AT" in line]
    check(len(warnings) == 1 and "FILE:LINE" in warnings[0],
          f"warnings naming LEAKWATCH_STEP_AT: {warnings}")
    check(r.stdout == plain.stdout, f"the program's output changed: "
          f"{r.stdout!r} vs {plain.stdout!r}")
    check(rep["step_source"] == "loop" and rep["steps"] == count_bad,
          f"{rep['steps']} steps from {rep['step_source']}")


CASES = {"nested": case_nested, "accumulate": case_accumulate,
         "step_at": case_step_at, "step_at_bad": case_step_at_bad}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(f"usage: test_loopsteps.py CASE; cases {' '.join(CASES)}",
              file=sys.stderr)
        return 2
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    CASES[sys.argv[1]]()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
