#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Trace bytes per training step, in full and bounded, on real PyTorch.

    bench-trace-size.py BUILD_DIR TORCH_PYTHON [--steps N] [--quick]

On the stand-in GPU (scripts/fakegpu.sh), under `leakwatch run
--trace-detail full` and `--trace-detail bounded`: the three models of
bench-torch.py (a transformer block, an MLP, a convolution net; AdamW, its
training step, each in a process of its own), the GPT-style model of
bench-report-torch.py (4 layers, d=256), and every scenario of the torch
suite (tests/torch/scenarios.py: the seed stories, the controls, the other
kinds of leak and their fixes) for N steps (default 60), and the clean
programs written with the training libraries (tests/torch/libraries:
transformers' Trainer, Lightning, accelerate, torchmetrics, for their own
number of steps) when the interpreter has them. A step is the span between two
STEP records of the trace; the figure is the bytes between the 10th step
of a model (or scenario) and its last, over the steps between (its start,
imports and warm-up left out), with the allocations and frees of a step in
full. Target: a bounded trace grows by at most 1 KiB per step. The last
column says whether `leakwatch report` finds the same in both traces:
the steps, the peak, the growth verdict and rate, and per finding its
kind, line, growth per step,
lingering bytes and holders. Always exits 0: the figures are for
reading, not a gate.
"""
import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
from tracebytes import records  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
SCENARIOS = os.path.join(SOURCE, "tests", "torch", "scenarios.py")
TORCH_CASES = ("torchtitan", "composer", "composer_no_gc", "espnet",
               "simpletuner", "eval_grad", "control_adam",
               "control_accumulation", "control_eval", "control_cache",
               "control_gc", "steps_two_optimizers", "steps_grad_scaler",
               "growing_buffer", "growing_buffer_fixed", "kept_exception",
               "kept_exception_fixed", "uncollected_cycle",
               "uncollected_cycle_fixed", "kept_activations",
               "kept_activations_fixed", "torchtitan_fixed",
               "eval_grad_fixed", "espnet_adamw", "espnet_fixed",
               "composer_fixed", "two_holders", "train_eval_grad")
QUICK_CASES = ("torchtitan", "espnet", "control_adam", "control_gc",
               "eval_grad")
SKIP_STEPS = 10
LIBRARIES = os.path.join(SOURCE, "tests", "torch", "libraries")
# The libraries' programs and the optimizer steps each runs (as
# tests/torch/test_libraries.py runs them).
LIBRARY_PROGRAMS = {"hf_trainer": 30, "lightning_fit": 32,
                    "accelerate_loop": 30, "torchmetrics_loop": 30}
LIBRARY_MODULES = ("transformers", "accelerate", "lightning", "torchmetrics")

# One of bench-torch.py's models, trained as there.
MODEL_CHILD = r'''
import sys, torch
name, steps = sys.argv[1], int(sys.argv[2])
torch.backends.cudnn.enabled = False  # cuDNN does not start on the stand-in
dev = "cuda"
''' + "{models}" + r'''
for n, model, batch in models():
    if n != name:
        continue
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for _ in range(steps):
        x = batch()
        loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    torch.cuda.synchronize()
'''


def load(name):
    """A sibling bench script as a module (for its child program)."""
    spec = importlib.util.spec_from_file_location(
        name.replace("-", "_"), os.path.join(HERE, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def walk(path):
    """The trace's records: (offset, tag) each."""
    return [(start, tag) for start, _, tag in
            records(open(path, "rb").read())]


def per_step(records, first, last):
    """Bytes per step between the STEP records first and last (1-based),
    and ALLOC and FREE records per step there."""
    steps = [off for off, tag in records if tag == 9]
    if last > len(steps) or first >= last:
        return None, None
    a, b = steps[first - 1], steps[last - 1]
    events = sum(1 for off, tag in records
                 if a < off < b and tag in (1, 2, 3, 4, 8))
    return (b - a) / (last - first), events / (last - first)


def clean_env(build):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_CUDA_ALLOC"))
           and k != "LD_PRELOAD"}
    env.update(LEAKWATCH_BUILD=build, LEAKWATCH_QUIET="1",
               LEAKWATCH_SYMBOL_CACHE="0", PYTHONDONTWRITEBYTECODE="1")
    return env


def has_libraries(python):
    probe = ("import importlib.util, sys\n"
             f"sys.exit(any(importlib.util.find_spec(m) is None "
             f"for m in {LIBRARY_MODULES!r}))\n")
    return subprocess.run([python, "-c", probe]).returncode == 0


def traced(build, detail, argv, tmp, name, extra_env=None):
    """Runs argv under `leakwatch run`; the trace of its main process."""
    cli = os.path.join(build, "report", "leakwatch")
    pattern = os.path.join(tmp, f"{name}-{detail}-%p.trace")
    cmd = [os.path.join(SOURCE, "scripts", "fakegpu.sh"), cli, "run",
           "--trace-detail", detail, "--trace", pattern, "--no-report",
           "--"] + argv
    env = clean_env(build)
    env.update(extra_env or {})
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=1800, cwd=tmp)
    prefix = f"{name}-{detail}-"
    paths = [os.path.join(tmp, f) for f in os.listdir(tmp)
             if f.startswith(prefix)]
    if r.returncode != 0 or not paths:
        sys.exit(f"bench-trace-size: {name} ({detail}) failed "
                 f"({r.returncode}):\n{r.stderr[-3000:]}")
    return max(paths, key=os.path.getsize)


def findings(build, trace):
    """What the report finds in a trace: per finding its kind, line,
    growth, lingering and holders; the steps, the peak, the growth."""
    r = subprocess.run([os.path.join(build, "report", "leakwatch"), "report",
                        "--format", "json", trace], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        return f"report failed: {r.stderr.strip()}"
    doc = json.loads(r.stdout)
    return (doc["steps"], doc["peak"], doc["verdict"],
            doc["growth_bytes_per_step"], sorted(
        (f["category"], str(f.get("location")),
         round(f["evidence"]["bytes_per_step"]),
         f["evidence"]["lingering_bytes"],
         tuple(sorted(h["path"] for h in f["held_by"])))
        for f in doc["findings"]))


def measure(build, argv, tmp, name, extra_env=None):
    """The program in full and bounded: {detail: (bytes per step, events
    per step)}, and whether the two reports find the same."""
    figures, found = {}, {}
    for detail in ("full", "bounded"):
        trace = traced(build, detail, argv, tmp, name, extra_env)
        records = walk(trace)
        last = sum(1 for _, tag in records if tag == 9)
        figures[detail] = per_step(records, SKIP_STEPS, last)
        found[detail] = findings(build, trace)
    return figures, found["full"] == found["bounded"]


def row(name, measured):
    figures, same = measured
    (full, events), (bounded, _) = figures["full"], figures["bounded"]
    if full is None or bounded is None:
        print(f"| {name} | too few steps | | | | |")
        return bounded, same
    print(f"| {name} | {events:.0f} | {full:.0f} | {bounded:.0f} | "
          f"{full / bounded:.0f}x | {'yes' if same else 'NO'} |", flush=True)
    return bounded, same


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build")
    ap.add_argument("python")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    if not args.python:
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return 0
    build = os.path.abspath(args.build)
    steps = args.steps
    print(f"trace bytes per step, steps {SKIP_STEPS} to {steps} of each; "
          "events: ALLOC and FREE records per step in full\n")
    print("| program | events | full | bounded | full / bounded "
          "| same findings |")
    print("|---|---|---|---|---|---|")
    rows = []
    with tempfile.TemporaryDirectory(prefix="lw-trace-size-") as tmp:
        child = os.path.join(tmp, "model.py")
        with open(child, "w") as f:
            f.write(MODEL_CHILD.replace("{models}",
                                        load("bench-torch").MODELS_SOURCE))
        gpt = os.path.join(tmp, "gpt.py")
        with open(gpt, "w") as f:
            f.write(load("bench-report-torch").CHILD)
        pydir = os.path.join(SOURCE, "python")
        for model in ("transformer", "mlp", "convnet"):
            rows.append(row(f"{model} (bench-torch.py)", measure(
                build, [args.python, child, model, str(steps)], tmp, model)))
        rows.append(row("GPT, 4 layers (bench-report-torch.py)", measure(
            build, [args.python, gpt, str(steps)], tmp, "gpt")))
        for case in QUICK_CASES if args.quick else TORCH_CASES:
            out = os.path.join(tmp, case + ".json")
            rows.append(row(f"scenario {case}", measure(
                build, [args.python, SCENARIOS, case, str(steps), out,
                        pydir], tmp, case)))
        libraries = {} if args.quick else LIBRARY_PROGRAMS
        if libraries and not has_libraries(args.python):
            print("| the libraries' programs | not installed | | | | |")
            libraries = {}
        offline = {"HF_HUB_OFFLINE": "1", "HF_HOME": os.path.join(tmp, "hf"),
                   "TOKENIZERS_PARALLELISM": "false"}
        for name, program_steps in libraries.items():
            out = os.path.join(tmp, name + ".json")
            rows.append(row(f"{name} (libraries)", measure(
                build, [args.python, os.path.join(LIBRARIES, name + ".py"),
                        "clean", str(program_steps), out, pydir], tmp,
                name, offline)))
    worst = max((bounded or 0) for bounded, _ in rows)
    differ = sum(1 for _, same in rows if not same)
    print(f"\nthe most a bounded trace grew by per step: {worst:.0f} bytes "
          f"[target: <= 1024: {'met' if worst <= 1024 else 'MISSED'}]")
    print(f"programs whose bounded trace reports other findings than the "
          f"full one: {differ} of {len(rows)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
