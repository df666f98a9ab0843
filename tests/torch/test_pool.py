#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch's caching allocator pool on real PyTorch: the memory account of
each step and of the run, and the pool's verdict, which is never a leak.

    test_pool.py CASE CONFIG

Cases:
  curriculum      scenarios.py's curriculum (a sequence length rising every
                  step, each step's activations freed): under the native
                  allocator a pool-fragmentation verdict (no leak, no
                  growing-buffer) at the rising line, naming
                  expandable_segments:True, and `check --max-growth 0`
                  passes; under expandable_segments:True the pool's growth
                  is gone (reserved within a few MiB of allocated, no
                  verdict) and the account says it is on.
  curriculum_gate the same under the bare gate (LD_PRELOAD,
                  LEAKWATCH_MAX_GROWTH=0): it passes.
  variable_batch  scenarios.py's batch sizes varying within a range: no
                  finding at all.
  outside         pool/outside.py: a library's own cudaMalloc through
                  ctypes, counted outside the pool at every step.
  record_stream   pool/record_stream.py: batches made on a side stream and
                  handed to the main one with record_stream(); blocks held
                  back by pending work are named (stranded). The stand-in
                  GPU completes events at once, so this case runs only on
                  a real GPU (LW_REAL_GPU=1, the gpu suite) and is skipped
                  elsewhere.
CONFIG: native or expandable (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True).

Environment as test_torch.py's (LW_CLI, LW_LIB, LW_PYTHON_DIR, LW_FAKEGPU,
LW_TORCH_PYTHON, LEAKWATCH_BUILD, LW_REAL_GPU).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import test_torch
from test_torch import Failure, check

SKIP = 77
STEPS = 30
MIB = 1 << 20
HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = os.path.join(HERE, "scenarios.py")
CASES = ("curriculum", "curriculum_gate", "variable_batch", "outside",
         "record_stream")
CONFIGS = {"native": {},
           "expandable": {"PYTORCH_CUDA_ALLOC_CONF":
                          "expandable_segments:True"}}


def environment(config, extra=None):
    env = test_torch.environment(config)
    env.update(extra or {})
    return env


def cli(*args):
    return subprocess.run([os.environ["LW_CLI"], *args], capture_output=True,
                          text=True, timeout=300)


def run(tmp, config, argv, real_gpu, extra=None):
    """argv under `leakwatch run`; (the JSON report, its trace)."""
    trace = os.path.join(tmp, "t.trace")
    out = os.path.join(tmp, "report.json")
    cmd = [os.environ["LW_CLI"], "run", "--format", "json", "-o", out,
           "--trace", trace, "--", os.environ["LW_TORCH_PYTHON"], *argv]
    if not real_gpu:
        cmd = [os.environ["LW_FAKEGPU"]] + cmd
    r = subprocess.run(cmd, env=environment(config, extra),
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0, f"exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    with open(out) as f:
        doc = json.load(f)
    rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
    run.stderr = r.stderr
    return rep, trace


def lead_line(function):
    """The line marked @lead in a function of scenarios.py."""
    scope = None
    with open(SCENARIOS) as f:
        for n, line in enumerate(f, 1):
            if line.startswith("def "):
                scope = line.split()[1].split("(")[0]
            if "# @lead" in line and scope == function:
                return n
    raise Failure(f"no @lead line in {function}")


def pool_findings(rep):
    return [f for f in rep["findings"] if f["category"] == "pool-fragmentation"]


def texts(trace):
    text = cli("report", trace)
    html = cli("report", "--format", "html", trace)
    check(text.returncode == 0 and html.returncode == 0,
          f"report: {text.stderr} {html.stderr}")
    return text.stdout, html.stdout


def scenario(tmp, case, config, real_gpu):
    rec = os.path.join(tmp, "program.json")
    rep, trace = run(tmp, config, [SCENARIOS, case, str(STEPS), rec,
                                   os.environ["LW_PYTHON_DIR"], "released"],
                     real_gpu, {"LEAKWATCH_LIVE_EVERY": "10"})
    with open(rec) as f:
        program = json.load(f)
    account = rep["memory_account"]
    # The account agrees with PyTorch's own counters on the same run.
    check(account["reserved_bytes_at_end"] == program["reserved"][-1],
          f"reserved at the end: {account['reserved_bytes_at_end']} vs "
          f"PyTorch's {program['reserved'][-1]}")
    check(account["peak_reserved_bytes"] == program["max_reserved"],
          f"peak reserved: {account['peak_reserved_bytes']} vs "
          f"PyTorch's {program['max_reserved']}")
    check(account["peak_allocated_bytes"] == program["max_allocated"],
          f"peak allocated: {account['peak_allocated_bytes']} vs "
          f"PyTorch's {program['max_allocated']}")
    check([p["reserved_bytes"] for p in rep["step_series"]] ==
          program["reserved"], "reserved at each step's end")
    check(all(p["peak_allocated_bytes"] <= p["peak_reserved_bytes"] and
              p["pool_free_at_peak_bytes"] <= p["peak_reserved_bytes"]
              for p in rep["step_series"]), "each step's account")
    check([f for f in rep["findings"] if f["leak"]] == [],
          f"leaks: {rep['findings']}")
    # The live view's line, every 10 steps, with the pool's two levels.
    live = [line for line in run.stderr.splitlines()
            if line.startswith("leakwatch: step ")]
    check(len(live) == STEPS // 10 and
          all(re.search(r"; PyTorch's pool: \S+ \S+ allocated of \S+ \S+ "
                        r"reserved$", line) for line in live),
          f"live view: {live}")
    return rep, trace, program


def curriculum_gate(tmp, config, real_gpu):
    """The bare gate in the shim judges the curriculum as the report does:
    no growth."""
    bare = [os.environ["LW_TORCH_PYTHON"], SCENARIOS, "curriculum",
            str(STEPS), os.path.join(tmp, "bare.json"),
            os.environ["LW_PYTHON_DIR"], "released"]
    if not real_gpu:
        bare = [os.environ["LW_FAKEGPU"]] + bare
    r = subprocess.run(bare, env=environment(config, {
        "LD_PRELOAD": os.environ["LW_LIB"], "LEAKWATCH_MAX_GROWTH": "0",
        "LEAKWATCH_OUT": os.path.join(tmp, "bare.trace")}),
        capture_output=True, text=True, timeout=600)
    check(r.returncode == 0 and "within the 0 B allowed" in r.stderr,
          f"LEAKWATCH_MAX_GROWTH=0: {r.returncode} {r.stderr[-2000:]}")


def curriculum(tmp, config, real_gpu):
    rep, trace, program = scenario(tmp, "curriculum", config, real_gpu)
    account, pool = rep["memory_account"], rep["memory_account"]["pool"]
    text, html = texts(trace)
    check(not any(f["category"] == "growing-buffer" for f in rep["findings"]),
          "a rising input is no growing buffer")
    gate = cli("check", "--max-growth", "0", trace)
    check(gate.returncode == 0, f"check --max-growth 0: {gate.returncode} "
          f"{gate.stdout} {gate.stderr}")
    found = pool_findings(rep)
    print(f"{config}: allocated {account['allocated_bytes_at_end']} at the "
          f"end, {account['peak_allocated_bytes']} at the peak; reserved "
          f"{account['reserved_bytes_at_end']} at the end, "
          f"{account['peak_reserved_bytes']} at the peak; verdict "
          f"{pool['verdict']} {pool['pattern']}")
    if config == "native":
        check(len(found) == 1 and not found[0]["leak"], f"findings {found}")
        check(found[0]["location"]["line"] == lead_line("curriculum"),
              f"led by the rising line: {found[0]['location']}")
        check("expandable_segments:True" in found[0]["fix"],
              f"fix: {found[0]['fix']}")
        check(pool["verdict"] == "pool-fragmentation" and
              pool["pattern"] == "rising" and pool["reserved_grows"] and
              pool["fix"] == found[0]["fix"], f"pool {pool}")
        # Most of what the pool reserved is free at the peak.
        check(account["pool_free_at_peak_bytes"] * 2 >
              account["peak_reserved_bytes"], f"account {account}")
        check("pool-fragmentation" in text and
              "expandable_segments:True" in text and
              "Diagnosis:" not in text, f"text:\n{text}")
        check("PyTorch&#39;s pool" in html or "PyTorch's pool" in html,
              "the HTML page's pool section")
    else:
        # The fix applied: one segment grows with the largest request.
        check(pool["expandable_segments"] and pool["verdict"] is None and
              not found, f"pool {pool}, findings {found}")
        check(account["peak_reserved_bytes"] <
              account["peak_allocated_bytes"] + 64 * MIB,
              f"reserved follows allocated: {account}")
        check("expandable_segments:True is on" in text, f"text:\n{text}")


def variable_batch(tmp, config, real_gpu):
    rep, _, _ = scenario(tmp, "variable_batch", config, real_gpu)
    check(rep["findings"] == [], f"no finding: {rep['findings']}")
    check(rep["memory_account"]["pool"]["verdict"] is None,
          f"pool {rep['memory_account']['pool']}")


def outside(tmp, config, real_gpu):
    out = os.path.join(tmp, "program.json")
    rep, trace = run(tmp, config, [os.path.join(HERE, "pool", "outside.py"),
                                   "--steps", "20", "--out", out], real_gpu)
    with open(out) as f:
        program = json.load(f)
    workspace = program["workspace"]
    account = rep["memory_account"]
    series = rep["step_series"]
    check(len(series) == 20, f"steps {len(series)}")
    check(all(p["outside_pool_bytes"] == workspace for p in series),
          f"outside the pool at each step: "
          f"{[p['outside_pool_bytes'] for p in series]}")
    check(account["peak_outside_pool_bytes"] == workspace and
          account["outside_pool_bytes_at_end"] == 0, f"account {account}")
    check([p["reserved_bytes"] for p in series] == program["reserved"],
          "the pool's own reserved bytes, without the workspace")
    check(account["peak_in_use_bytes"] ==
          account["peak_reserved_bytes"] + workspace, f"in use {account}")
    check(rep["findings"] == [], f"no finding: {rep['findings']}")
    text, _ = texts(trace)
    check("outside the pool 64.0 MiB" in text, f"text:\n{text}")


def record_stream(tmp, config, real_gpu):
    out = os.path.join(tmp, "program.json")
    rep, trace = run(tmp, config,
                     [os.path.join(HERE, "pool", "record_stream.py"),
                      "--steps", "30", "--out", out], real_gpu,
                     {"LEAKWATCH_TRACE_DETAIL": "full"})
    pool = rep["memory_account"]["pool"]
    found = pool_findings(rep)
    print(f"pool {pool}")
    check(pool["stranded_misses"] >= 2 and pool["pattern"] == "stranded",
          f"pool {pool}")
    check(len(found) == 1 and "record_stream" in found[0]["reason"] and
          "wait_stream" in found[0]["fix"], f"findings {found}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in CASES or \
       sys.argv[2] not in CONFIGS:
        print(f"usage: test_pool.py CASE CONFIG; cases {CASES}, "
              f"configurations {sorted(CONFIGS)}", file=sys.stderr)
        return 2
    case, config = sys.argv[1:]
    real_gpu = os.environ.get("LW_REAL_GPU") == "1"
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured: skipped")
        return SKIP
    if case == "record_stream" and not real_gpu:
        print("the stand-in GPU completes events at once: record_stream "
              "holds nothing back there (the gpu suite runs it): skipped")
        return SKIP
    if real_gpu and not (os.path.exists("/dev/nvidiactl") and test_torch.gpu_present()):
        print("no NVIDIA GPU: skipped")
        return SKIP
    try:
        with tempfile.TemporaryDirectory(prefix="lw-pool-") as tmp:
            globals()[case](tmp, config, real_gpu)
    except Failure as e:
        print(f"FAIL {case} {config}: {e}", file=sys.stderr)
        return 1
    print(f"{case} {config} ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
