#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The CI gate on real PyTorch: `leakwatch run` and `leakwatch check` with
each limit, on the scenarios of scenarios.py that show what the limit is
for, each against its fixed twin or a control.

    test_gate.py CASE

  fail_on    Composer's deep-copied metrics (collector on): --fail-on
             metric-copy and --fail-on high fail them; --max-growth 0
             alone passes them (the memory is a sawtooth with a flat
             floor: no growth).
  fail_on_fixed  composer_fixed passes both.
  growth_fixed   torchtitan_fixed, whose small blocks are made once,
             passes --max-growth 0.
  peak       ESPnet's lingering previous step: --max-peak between the
             fixed twin's measured peak and espnet's fails espnet and
             passes espnet_fixed.
  reserved   A curriculum of rising sizes: --max-reserved-growth fails
             it under the native allocator and passes it with
             expandable_segments:True, at twice the growth of the
             allocated peak that both runs measure.
  variable   Batch sizes that vary within a range: --max-reserved-growth
             0 and --max-growth 0 pass.
  pytest_limits  The pytest plugin's max_peak and max_reserved_growth
             (tests/pytest-plugin/test_torch_limits.py), with the system's
             pytest borrowed for the PyTorch interpreter (skipped without).

Where a case runs under a limit, `run` exits 23 where `check` exits 1, and
0 where it does; limits derived from a run are judged by `check`. Environment as
for test_torch.py (LW_CLI, LW_LIB, LW_PYTHON_DIR, LW_TORCH_PYTHON, LW_FAKEGPU,
LEAKWATCH_BUILD); skipped (77) without PyTorch.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

from test_torch import SCENARIOS, SKIP, Failure, check, environment

STEPS = 30


def run(tmp, case, gate, extra_env=None):
    """The case under `leakwatch run GATE`: (its exit status, stderr, its
    trace)."""
    trace = os.path.join(tmp, f"{case}-%p.trace")
    rec = os.path.join(tmp, f"{case}.json")
    env = environment("native")
    env.update(extra_env or {})
    r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"], "run",
                        "--no-report", "--trace", trace, *gate, "--",
                        os.environ["LW_TORCH_PYTHON"], SCENARIOS, case,
                        str(STEPS), rec, os.environ["LW_PYTHON_DIR"]],
                       env=env, capture_output=True, text=True, timeout=300)
    traces = [os.path.join(tmp, f) for f in os.listdir(tmp)
              if f.startswith(case + "-") and f.endswith(".trace")]
    check(traces, f"{case}: no trace: {r.stderr[-2000:]}")
    # The training process's: the largest (a compiler child has its own).
    # Renamed, so that a later run of the same case finds its own.
    path = os.path.join(tmp, f"{case}-{len(os.listdir(tmp))}.done")
    os.rename(max(traces, key=os.path.getsize), path)
    for t in traces:
        if os.path.exists(t):
            os.unlink(t)
    return r.returncode, r.stderr, path


def cli(*argv):
    return subprocess.run([os.environ["LW_CLI"], *argv], capture_output=True,
                          text=True, timeout=300)


def judged(what, code, out, status, says):
    check(code == status, f"{what} exited {code}:\n{out[-3000:]}")
    for text in says or []:
        check(text in out, f"{what}: {text!r} not in the verdicts:\n{out[-3000:]}")


def gate(tmp, case, limits, status, extra_env=None, says=None):
    """`run LIMITS` on case exits 23 (status 1) or 0, and `check LIMITS` on
    its trace exits status; the verdict's lines hold says. Returns the
    trace."""
    code, err, trace = run(tmp, case, limits, extra_env)
    judged(f"{case}: run {limits}", code, err,
           23 if status == 1 else status, says)
    return check_trace(case, trace, limits, status, says)


def check_trace(case, trace, limits, status, says=None):
    p = cli("check", *limits, trace)
    judged(f"{case}: check {limits}", p.returncode, p.stdout + p.stderr,
           status, says)
    return trace


def series(trace):
    p = cli("report", "--format", "json", trace)
    check(p.returncode == 0, f"report {trace}: {p.stderr}")
    return json.loads(p.stdout)["step_series"]


def fail_on(tmp):
    trace = gate(tmp, "composer", ["--fail-on", "metric-copy"], 1,
                 says=["FAIL: metric-copy (high confidence) at ",
                       "scenarios.py:", "(--fail-on metric-copy)"])
    # Not growth: a sawtooth with a flat floor.
    check_trace("composer", trace, ["--max-growth", "0"], 0,
                says=["ok: sawtooth-flat"])
    check_trace("composer", trace, ["--max-growth", "0", "--fail-on",
                                    "high"], 1, says=["(--fail-on high)"])


def fail_on_fixed(tmp):
    trace = gate(tmp, "composer_fixed", ["--fail-on", "metric-copy"], 0)
    check_trace("composer_fixed", trace, ["--max-growth", "0"], 0)


def growth_fixed(tmp):
    gate(tmp, "torchtitan_fixed", ["--max-growth", "0"], 0)


def peak(tmp):
    _, _, fixed = run(tmp, "espnet_fixed", [])
    _, _, leaky = run(tmp, "espnet", [])
    fixed_peak = max(p["peak_bytes"] for p in series(fixed))
    leaky_peak = max(p["peak_bytes"] for p in series(leaky))
    check(leaky_peak > fixed_peak,
          f"espnet's peak {leaky_peak} is not above its fix's {fixed_peak}")
    limit = ["--max-peak", str((fixed_peak + leaky_peak) // 2)]
    check_trace("espnet", leaky, limit, 1,
                says=["FAIL: device memory peaked at", "(--max-peak)"])
    check_trace("espnet_fixed", fixed, limit, 0)


def reserved(tmp):
    _, _, native = run(tmp, "curriculum", [])
    points = series(native)
    rise = (points[-1]["peak_bytes"] - points[0]["peak_bytes"]) / \
        (points[-1]["step"] - points[0]["step"])
    check(rise > 0, f"the curriculum's allocated peak does not rise: {rise}")
    limit = ["--max-reserved-growth", str(int(2 * rise))]
    check_trace("curriculum", native, limit, 1,
                says=["FAIL: PyTorch's reserved memory grows by",
                      "(--max-reserved-growth)"])
    gate(tmp, "curriculum", limit, 0,
         extra_env={"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})


def variable(tmp):
    gate(tmp, "variable_batch", ["--max-reserved-growth", "0",
                                 "--max-growth", "0"], 0)


def pytest_path(tmp):
    """pytest for the PyTorch interpreter: the system's (python3-pytest),
    its packages linked into a directory of their own, so that nothing
    else of the system's shadows the environment's; None without it."""
    site = "/usr/lib/python3/dist-packages"
    need = ["pytest", "_pytest", "pluggy", "iniconfig"]
    if not all(os.path.exists(os.path.join(site, n)) for n in need):
        return None
    path = os.path.join(tmp, "pytest-path")
    os.mkdir(path)
    for name in need + ["py.py", "attr", "exceptiongroup", "tomli"]:
        if os.path.exists(os.path.join(site, name)):
            os.symlink(os.path.join(site, name), os.path.join(path, name))
    return path


def pytest_limits(tmp):
    """The pytest plugin's max_peak and max_reserved_growth on PyTorch:
    a run that holds the previous run's buffer through its own fails
    max_peak, its fix passes; rising sizes fail max_reserved_growth, one
    size passes."""
    path = pytest_path(tmp)
    if path is None:
        print("no python3-pytest to borrow: skipped")
        sys.exit(SKIP)
    tests = os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "pytest-plugin", "test_torch_limits.py")
    env = environment("native")
    env["PYTHONPATH"] = os.pathsep.join([path, os.environ["LW_PYTHON_DIR"]])
    r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"], "run",
                        "--no-report", "--trace",
                        os.path.join(tmp, "pytest-%p.trace"), "--",
                        os.environ["LW_TORCH_PYTHON"], "-m", "pytest", "-p",
                        "pytest_leakwatch", "-p", "no:cacheprovider", "-q",
                        "-rA", "--leakwatch", tests], cwd=tmp, env=env,
                       capture_output=True, text=True, timeout=300)
    out = r.stdout
    check(r.returncode == 1, f"pytest exited {r.returncode}:\n{out}\n{r.stderr[-2000:]}")
    for name, failed, says in (
            ("test_previous_run_lingers", True,
             "leakwatch: FAIL: device memory peaked at 64.0 MiB in run"),
            ("test_previous_run_released", False, None),
            ("test_rising_sizes", True,
             "leakwatch: FAIL: PyTorch's reserved memory grows by"),
            ("test_one_size", False, None)):
        status = "FAILED" if failed else "PASSED"
        check(re.search(rf"^{status} \S*::{name}\b", out, re.M),
              f"{name} not {status}:\n{out}")
        if says:
            check(says in out, f"{name}: {says!r} not said:\n{out}")


CASES = {"fail_on": fail_on, "fail_on_fixed": fail_on_fixed,
         "growth_fixed": growth_fixed, "peak": peak, "reserved": reserved,
         "variable": variable, "pytest_limits": pytest_limits}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in CASES:
        print(f"usage: test_gate.py CASE; cases {sorted(CASES)}",
              file=sys.stderr)
        return 2
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured: skipped")
        return SKIP
    with tempfile.TemporaryDirectory(prefix="lw-gate-") as tmp:
        try:
            CASES[sys.argv[1]](tmp)
        except Failure as e:
            print(f"FAIL {sys.argv[1]}: {e}", file=sys.stderr)
            return 1
    print("ok", sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
