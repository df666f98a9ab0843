#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every memory shape of train.py, end to end: the loop runs under the shim
(`leakwatch run --max-growth 0`, or bare LD_PRELOAD with
LEAKWATCH_MAX_GROWTH=0), and the JSON report and the exit status must say
what an engineer reading the memory plot would.

    test_steps.py CASE

Environment (tests/steps/meson.build): LW_LIB, LW_CLI, LW_TINYTENSOR,
LW_TINYTENSOR_PY, LW_PYTHON_DIR.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, failures  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "train.py")
GROWTH_EXIT = 23

LEAK = "growing"
# case: (shape, marks, verdicts allowed, marker of the fastest growing site
#        or None for a control, step source)
CASES = {
    "linear": ("linear", True, {LEAK}, "linear", "api"),
    "tiny": ("tiny", True, {LEAK}, "loss", "api"),
    "sawtooth-rising": ("sawtooth-rising", True, {LEAK}, "metric", "api"),
    "warmup": ("warmup", True, {LEAK}, "warmup-leak", "api"),
    # Unmarked: the shim finds the loop as the program runs.
    "inferred-linear": ("linear", False, {LEAK}, "linear", "loop"),
    "sawtooth-flat": ("sawtooth-flat", True, {"sawtooth-flat"}, None, "api"),
    "plateau": ("plateau", True, {"plateau"}, None, "api"),
    "cache-fill": ("cache-fill", True, {"plateau", "stable", "sawtooth-flat"},
                   None, "api"),
    "lazy-optimizer": ("lazy-optimizer", True, {"stable", "sawtooth-flat",
                                                "plateau"}, None, "api"),
    "grad-accumulation": ("grad-accumulation", True, {"sawtooth-flat"}, None,
                          "api"),
    "eval": ("eval", True, {"stable", "sawtooth-flat"}, None, "api"),
    "inferred-eval": ("eval", False, {"stable", "sawtooth-flat"}, None,
                      "loop"),
    "lingering": ("lingering", True, {"stable", "sawtooth-flat"}, None, "api"),
    "phase-survivor": ("phase-survivor", True, {"stable", "sawtooth-flat",
                                                "plateau"}, None, "api"),
}


def markers():
    lines = {}
    with open(TRAIN) as f:
        for n, text in enumerate(f, 1):
            if "# @" in text:
                lines[text.split("# @")[1].strip()] = n
    return lines


def environment(tmp):
    site = os.path.join(tmp, "site-packages")
    os.mkdir(site)
    shutil.copy(os.environ["LW_TINYTENSOR_PY"], site)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_") and k != "LD_PRELOAD"}
    env.update(TINYTENSOR_SITE=site, LEAKWATCH_PY=os.environ["LW_PYTHON_DIR"],
               LEAKWATCH_LIB=os.environ["LW_LIB"], PYTHONDONTWRITEBYTECODE="1")
    return env


def located_at(obj, line):
    loc = obj.get("location") or {}
    return (loc.get("line") == line and loc.get("file") is not None and
            os.path.basename(loc["file"]) == "train.py")


def run_case(name):
    shape, marks, verdicts, marker, source = CASES[name]
    lines = markers()
    tmp = tempfile.mkdtemp(prefix="lw-steps-")
    env = environment(tmp)
    out = os.path.join(tmp, "report.json")
    argv = [os.environ["LW_CLI"], "run", "--format", "json", "-o", out,
            "--trace", os.path.join(tmp, "lw-%p.trace"), "--max-growth", "0",
            "--", sys.executable, "-E", "-s", TRAIN, shape]
    if not marks:
        argv.append("--no-marks")
    r = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True,
                       timeout=300)
    leak = marker is not None
    check(r.returncode == (GROWTH_EXIT if leak else 0),
          f"{name}: exit status {r.returncode}, expected "
          f"{GROWTH_EXIT if leak else 0}; stderr: {r.stderr[-2000:]}")
    with open(out) as f:
        d = json.load(f)
    check(d["step_source"] == source,
          f"{name}: step_source {d['step_source']}, expected {source}")
    check(d["steps"] >= 50, f"{name}: {d['steps']} steps")
    check(d["verdict"] in verdicts,
          f"{name}: verdict {d['verdict']}, expected one of {verdicts}")
    growing = sorted((s for s in d["sites"] if s["verdict"] == "growing"),
                     key=lambda s: -s["growth_bytes_per_step"])
    if leak:
        check(growing and located_at(growing[0], lines[marker]),
              f"{name}: fastest growing site "
              f"{[(s.get('location'), s['growth_bytes_per_step']) for s in growing[:2]]}"
              f", expected train.py:{lines[marker]}")
    else:
        check(not growing, f"{name}: growing sites in a control: "
              f"{[s.get('location') for s in growing]}")
    if shape == "lingering":
        pa = d["peak_attribution"]
        check(pa is not None and pa["sites"] and
              located_at(pa["sites"][0], lines["lingering"]) and
              pa["sites"][0]["max_bytes"] == 65536 * 4 and
              pa["lingering_steps"] >= d["steps"] - 2,
              f"{name}: peak attribution {json.dumps(pa)[:800]}")
        check(pa["at_highest_peak"]["lingering_bytes"] >= 65536 * 4,
              f"{name}: at the highest peak {pa['at_highest_peak']}")
    if shape == "phase-survivor":
        phases = [p for p in d["phases"] if p["name"] == "text_encoder"]
        check(len(phases) == 1 and phases[0]["surviving_bytes"] == 2 * 32768 * 4
              and phases[0]["surviving_count"] == 2 and
              located_at(phases[0]["sites"][0], lines["encoder"]),
              f"{name}: phases {d['phases']}")
    if shape == "linear" and marks:
        # 64 KiB per step: the rate and its extrapolation are right.
        check(abs(growing[0]["growth_bytes_per_step"] - 65536) < 1,
              f"{name}: rate {growing[0]['growth_bytes_per_step']}")
    return tmp


def run_bare(name, shape, marks, expected_status, expected_text):
    tmp = tempfile.mkdtemp(prefix="lw-steps-bare-")
    env = environment(tmp)
    env.update(LD_PRELOAD=os.environ["LW_LIB"], LEAKWATCH_MAX_GROWTH="0",
               LEAKWATCH_OUT=os.path.join(tmp, "lw-%p.trace"),
               LEAKWATCH_QUIET="1")
    argv = [sys.executable, "-E", "-s", TRAIN, shape]
    if not marks:
        argv.append("--no-marks")
    r = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True,
                       timeout=300)
    check(r.returncode == expected_status,
          f"{name}: bare exit status {r.returncode}, expected "
          f"{expected_status}; stderr: {r.stderr[-1500:]}")
    check(expected_text in r.stderr,
          f"{name}: bare stderr lacks {expected_text!r}: {r.stderr[-1500:]}")
    check(r.stdout.strip() == "ok", f"{name}: the program's output {r.stdout!r}")


def run_serve(name, python):
    """serve.py (a loop whose body is one call, no marks, no optimizer)
    under `leakwatch run` with the interpreter python: its steps are its
    requests, from its loop, and the responses it keeps grow."""
    serve = os.path.join(HERE, "serve.py")
    if not os.path.exists(python):
        print(f"{python}: no such interpreter: skipped")
        sys.exit(77)
    lines = {}
    with open(serve) as f:
        for n, text in enumerate(f, 1):
            if "# @" in text:
                lines[text.split("# @")[1].strip()] = n
    tmp = tempfile.mkdtemp(prefix="lw-steps-serve-")
    env = environment(tmp)
    out = os.path.join(tmp, "report.json")
    r = subprocess.run([os.environ["LW_CLI"], "run", "--format", "json", "-o",
                        out, "--trace", os.path.join(tmp, "lw-%p.trace"),
                        "--", python, "-E", "-s", serve], env=env, cwd=tmp,
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0 and r.stdout.strip() == "requests: 30",
          f"{name}: exit status {r.returncode}, output {r.stdout!r}; "
          f"stderr: {r.stderr[-1500:]}")
    with open(out) as f:
        d = json.load(f)
    loop = d["step_loop"] or {}
    check(d["step_source"] == "loop" and d["steps"] == 30,
          f"{name}: {d['steps']} steps from {d['step_source']}")
    check(loop.get("function") == "serve" and
          loop.get("line") == lines["loop"] and
          os.path.basename(loop.get("file", "")) == "serve.py",
          f"{name}: step_loop {loop}")
    growing = [s for s in d["sites"] if s["verdict"] == "growing"]
    check(growing and (growing[0].get("location") or {}).get("line") ==
          lines["response"], f"{name}: growing sites "
          f"{[s.get('location') for s in growing]}")
    return tmp


def main():
    name = sys.argv[1]
    if name.startswith("serve-"):
        run_serve(name, sys.executable if name == "serve-default"
                  else sys.argv[2])
        if failures:
            return 1
        print("ok:", name)
        return 0
    if name == "bare-linear":
        run_bare(name, "linear", True, GROWTH_EXIT, "GROWING")
    elif name == "bare-control":
        run_bare(name, "grad-accumulation", True, 0, "leakwatch: ok:")
    elif name == "bare-unmarked":
        # Unmarked: the shim's steps come from the loop it finds, and
        # the bare gate judges them.
        run_bare(name, "linear", False, GROWTH_EXIT, "GROWING")
    else:
        run_case(name)
    if failures:
        return 1
    print("ok:", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
