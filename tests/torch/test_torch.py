#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Real PyTorch under `leakwatch run`: one scenario of scenarios.py under one
allocator configuration, checked against the JSON report.

    test_torch.py CASE CONFIG

On the stand-in GPU (the torch suite) the program runs through
scripts/fakegpu.sh; with LW_REAL_GPU=1 (the gpu suite) on the machine's own
GPU, unchanged, and the test exits 77 (skipped) when there is none.

Environment: LW_CLI (the leakwatch command), LW_LIB (the shim), LW_PYTHON_DIR
(python/), LW_TORCH_PYTHON (a python3 that imports torch; the torch suite
fails when it is set and broken, and skips only when it is empty),
LW_FAKEGPU (scripts/fakegpu.sh) and LEAKWATCH_BUILD (the build directory
with the stand-in).

For a leak, the report must hold exactly one leak finding: of the case's
category, led by the line marked `# @lead`, and measuring what the program
itself measures on the same run within 10%: its torch.cuda.memory_allocated()
growth per step, or the bytes it holds (for the leaks that do not grow). A
control must get no leak finding. Wherever the program steps an optimizer,
the report's step count must equal the program's count of optimizer steps.
The last line printed is the cell of the allocator matrix: CASE CONFIG
found|clean.
"""
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
STEPS = 30
HERE = os.path.dirname(os.path.abspath(__file__))
SCENARIOS = os.path.join(HERE, "scenarios.py")

# The category each seed story must get; None: a control, no leak finding.
CASES = {
    "torchtitan": "retained-loss",
    "composer": "metric-copy",
    "composer_no_gc": "metric-copy",
    "espnet": "lingering-previous-step",
    "simpletuner": "unreleased-module",
    "eval_grad": "retained-graph",
    "control_adam": None,
    "control_accumulation": None,
    "control_eval": None,
    "control_cache": None,
    "control_gc": None,
    "steps_two_optimizers": None,
    "steps_grad_scaler": None,
    # More kinds, each with its fix applied as the finding words it: the
    # fixed version must have no leak.
    "growing_buffer": "growing-buffer",
    "growing_buffer_fixed": None,
    "kept_exception": "kept-exception",
    "kept_exception_fixed": None,
    "uncollected_cycle": "uncollected-cycle",
    "uncollected_cycle_fixed": None,
    "kept_activations": "kept-activations",
    "kept_activations_fixed": None,
    "torchtitan_fixed": None,
    "eval_grad_fixed": None,
    "espnet_adamw": "lingering-previous-step",
    "espnet_fixed": None,
    "composer_fixed": None,
    "train_eval_grad": "retained-graph",
    "simpletuner_fixed": None,
    "cycle_delayed": "cycle-delayed-frees",
    # Two causes in one loop: two findings, each with its own holder (the
    # model's outputs, detached, are kept outputs; the losses, losses).
    "two_holders": ("kept-outputs", "retained-loss"),
    # Kinds told by what the memory is and what holds it, never by its
    # size: each with its fix applied as the finding words it.
    "kept_outputs": "kept-outputs",
    "kept_outputs_fixed": None,
    "unbounded_cache": "unbounded-cache",
    "unbounded_cache_fixed": None,
    "unbounded_lru": "unbounded-cache",
    "unbounded_lru_fixed": None,
    "kept_inputs": "kept-inputs",
    "kept_inputs_fixed": None,
    "metric_state": "metric-state",
    "metric_state_fixed": None,
    "kept_exception_retry": "kept-exception",
    "kept_exception_retry_fixed": None,
    "metric_state_cat": "metric-state",
    "metric_state_cat_fixed": None,
    # A metric made anew every batch and dropped: no copy, a cycle.
    "metric_per_step": "cycle-delayed-frees",
    "metric_per_step_fixed": None,
}

# What the first holder of each such case must be, and words its fix (the
# holder's) must have: the fix phrased against the holder's type.
HOLDER_FIXES = {
    "kept_outputs": ("val_logits[", "`.cpu()`"),
    "unbounded_cache": ("cache['batch-", "`OrderedDict`"),
    "unbounded_lru": ("prompt_embedding (an lru_cache: ", "maxsize=N"),
    "kept_inputs": ("replay[", "`.cpu()`"),
    "metric_state": ("self.preds[", "`self.reset()`"),
    "metric_state_cat": ("scores_seen.value[", "`scores_seen.reset()`"),
    "metric_per_step": ("<MulticlassConfusionMatrix>",
                        "break the reference cycle"),
    "kept_exception_retry": ("reports[", "traceback.format_exc()"),
}
# Words the finding's own fix must have, and words it must not: a tensor
# that is not a loss never gets the loss's fix.
FINDING_FIXES = {
    "kept_outputs": ("on the host", "loss.item()"),
    "unbounded_cache": ("lru_cache(maxsize=N)", "loss.item()"),
    "unbounded_lru": ("lru_cache(maxsize=N)", "loss.item()"),
    "kept_inputs": ("host", "loss.item()"),
    "metric_state": ("reset()", "deepcopy"),
    "metric_state_cat": ("reset()", "loss.item()"),
    "metric_per_step": ("gc.collect()", "deepcopy"),
    "kept_exception_retry": ("str(e)", "hook"),
}

# The allocator configurations, by the environment each adds. Under every
# one leakwatch sees PyTorch's tensors one by one (the native allocator's
# blocks through its profiler hook). "native" is leakwatch's default, which
# leaves the allocator alone; "leakwatch_async" is its opt-in switch to the
# cudaMallocAsync backend.
CONFIGS = {
    "native": {},
    "leakwatch_async": {"LEAKWATCH_TORCH_ALLOCATOR": "async"},
    "expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "async": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
    "no_caching": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
}

# Where each configuration's device memory comes from: the API and device
# of device_memory_by_context. PyTorch's own allocator tells the device of
# its blocks; a cudaMalloc or cudaMallocAsync the shim hooks does not.
CONTEXTS = {
    "native": ("PyTorch allocator", 0),
    "expandable": ("PyTorch allocator", 0),
    "leakwatch_async": ("cudaMallocAsync", None),
    "async": ("cudaMallocAsync", None),
    "no_caching": ("cudaMalloc", None),
}

# The categories whose leak grows every step; the others hold memory that
# does not grow (a previous step's buffers, a phase's modules).
GROWING = {"retained-loss", "cycle-delayed-frees", "metric-copy",
           "retained-graph", "growing-buffer", "kept-exception",
           "uncollected-cycle", "kept-activations", "kept-outputs",
           "unbounded-cache", "kept-inputs", "metric-state"}


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def lead_line(case):
    """The line marked @lead in the scenario function that case runs
    (composer_no_gc runs composer's loop; espnet's lead is in its loss, and
    eval_grad's, the biggest part of the graph it keeps, in the model's
    forward)."""
    owner = {"composer_no_gc": "composer", "espnet": "GradBufferLoss",
             "eval_grad": "MLP", "espnet_adamw": "GradBufferLoss",
             "kept_exception": "MLP", "kept_activations": "Probe",
             "train_eval_grad": "MLP", "kept_outputs": "MLP",
             "kept_inputs": "batches", "kept_exception_retry": "MLP"}
    want = owner.get(case, case)
    scope = None
    with open(SCENARIOS) as f:
        for n, line in enumerate(f, 1):
            if line.startswith(("def ", "class ")):
                scope = line.split()[1].split("(")[0].rstrip(":")
            if "# @lead" in line and scope == want:
                return n
    raise Failure(f"no @lead line for {case} in {SCENARIOS}")


def environment(config):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))}
    env["LEAKWATCH_LIB"] = os.environ["LW_LIB"]
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if "LEAKWATCH_BUILD" in os.environ:
        env["LEAKWATCH_BUILD"] = os.environ["LEAKWATCH_BUILD"]
    if os.environ.get("LW_TRACE_DETAIL"):  # meson test --setup full
        env["LEAKWATCH_TRACE_DETAIL"] = os.environ["LW_TRACE_DETAIL"]
    env.update(CONFIGS[config])
    return env


def run_program(source, tmp, name):
    """A program (its source) on the stand-in GPU under `leakwatch run`,
    with the leakwatch module importable: (the completed process, the JSON
    report of its trace, its trace)."""
    env = environment("native")
    env["PYTHONPATH"] = os.environ["LW_PYTHON_DIR"]
    script = os.path.join(tmp, name + ".py")
    with open(script, "w") as f:
        f.write(source)
    trace = os.path.join(tmp, name + ".trace")
    r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"],
                        "run", "--no-report", "--trace", trace, "--",
                        os.environ["LW_TORCH_PYTHON"], script], env=env,
                       capture_output=True, text=True, timeout=600)
    print(r.stdout, r.stderr[-3000:])
    rep = subprocess.run([os.environ["LW_CLI"], "report", "--format", "json",
                          trace], capture_output=True, text=True, timeout=300)
    return r, json.loads(rep.stdout) if rep.returncode == 0 else None, trace


def run(case, config, python, real_gpu):
    """Runs the case under `leakwatch run --format json`; returns (the
    program's report, what the program recorded)."""
    with tempfile.TemporaryDirectory(prefix="lw-torch-") as tmp:
        out = os.path.join(tmp, "report.json")
        rec = os.path.join(tmp, "program.json")
        cmd = [os.environ["LW_CLI"], "run", "--format", "json", "-o", out,
               "--trace", os.path.join(tmp, "t-%p.trace"), "--",
               python, SCENARIOS, case, str(STEPS), rec,
               os.environ["LW_PYTHON_DIR"]]
        if not real_gpu:
            cmd = [os.environ["LW_FAKEGPU"]] + cmd
        r = subprocess.run(cmd, env=environment(config), capture_output=True,
                           text=True, timeout=600)
        check(r.returncode == 0,
              f"{case}/{config} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
        with open(out) as f:
            doc = json.load(f)
        with open(rec) as f:
            program = json.load(f)
    # Data loader workers and compiler children have traces of their own;
    # the training process is the one with the most allocations.
    rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
    return rep, program


def program_growth(program):
    """Bytes per step by the program's own counter, past the first third
    (Adam's state, the allocator's warm-up)."""
    a = program["allocated"]
    first = len(a) // 3
    return (a[-1] - a[first]) / (len(a) - 1 - first)


def program_rise(program):
    """Bytes per step by the program's own counter while the collector has
    not run: the typical rise of a step that rises (a sawtooth's slope)."""
    a = program["allocated"]
    rises = sorted(b - a for a, b in zip(a, a[1:]) if b > a)
    check(rises, "the program's memory never rises")
    return rises[len(rises) // 2]


def within(measured, expected, what):
    check(expected > 0, f"the program measures no {what}")
    check(abs(measured - expected) <= 0.10 * expected,
          f"{what}: leakwatch measured {measured}, the program {expected}")


def check_leak(case, rep, program, leaks, held="live_bytes"):
    """held: the evidence's figure of a leak that does not grow (live at
    the report point; held_bytes where a function let go of it)."""
    category = CASES[case]
    check(len(leaks) == 1, f"{len(leaks)} leak findings, expected 1")
    f = leaks[0]
    check(f["category"] == category,
          f"category {f['category']}, expected {category}")
    loc = f.get("location") or {}
    check(str(loc.get("file", "")).endswith("scenarios.py") and
          loc.get("line") == lead_line(case),
          f"led by {loc}, expected scenarios.py:{lead_line(case)}")
    check(f["fix"], "the finding names no fix")
    ev = f["evidence"]
    if category in GROWING and ev["gc_frees"]:
        # Freed by the collector's passes: no growth in the long run, a
        # rise of blocks made each step until the next pass.
        within(ev["allocated_bytes"] / rep["steps"], program_rise(program),
               "growth per step between collections")
    elif category in GROWING:
        within(ev["bytes_per_step"], program_growth(program),
               "growth per step")
    elif category == "lingering-previous-step":
        within(ev["lingering_bytes"], program["held"], "bytes held")
    else:
        within(ev[held], program["held"], "bytes held")


def check_steps(rep, program):
    if program["optimizer_steps"] == 0:
        return
    check(rep["steps"] == program["optimizer_steps"],
          f"{rep['steps']} steps ({rep['step_source']}), the program made "
          f"{program['optimizer_steps']} optimizer steps")


def test(case, config, python, real_gpu):
    rep, program = run(case, config, python, real_gpu)
    leaks = [f for f in rep["findings"] if f["leak"] and not f["suppressed"]]
    print(json.dumps({"steps": rep["steps"], "step_source": rep["step_source"],
                      "verdict": rep["verdict"],
                      "torch_allocator": rep["torch_allocator"],
                      "program": program, "leaks": leaks}, indent=1)[:6000])
    check_steps(rep, program)
    torch = rep["torch_allocator"]
    check(torch is not None and torch["tensors_visible"],
          f"PyTorch's tensors not seen one by one: {torch}")
    contexts = rep["device_memory_by_context"]
    made = [(c["api"], c["device"]) for c in contexts]
    check(made == [CONTEXTS[config]],
          f"device memory by context: {contexts}, expected {CONTEXTS[config]}")
    check(sum(c["live_bytes"] for c in contexts) == rep["live_bytes_at_exit"],
          f"device memory by context does not add up: {contexts}")
    if CASES[case] is None:
        check(leaks == [], "a control has leak findings")
        if case.endswith("_fixed"):
            # The fix, applied as the finding words it, ends the growth.
            check(rep["verdict"] != "growing",
                  f"still growing after the fix: {rep['verdict']} "
                  f"{rep['growth_bytes_per_step']} B per step")
        return "clean"
    if isinstance(CASES[case], tuple):
        check_causes(case, leaks)
        return "found"
    check_leak(case, rep, program, leaks)
    check_fixes(case, leaks[0])
    return "found"


def check_fixes(case, f):
    """The finding's fix fits what the memory is; its holder's, the
    holder's type."""
    if case in FINDING_FIXES:
        want, never = FINDING_FIXES[case]
        check(want in f["fix"] and never not in f["fix"],
              f"the fix {f['fix']!r}: want {want!r}, never {never!r}")
        # What the story returned is kept to the program's end (main()
        # keeps it): its function's return let go of nothing, whatever
        # the loop's last batch freed as it ended.
        check(f["evidence"]["released_when"] is None,
              f"released when {f['evidence']['released_when']}, though "
              f"what it returned is kept to the end")
    if case in HOLDER_FIXES:
        start, words = HOLDER_FIXES[case]
        held = f["held_by"]
        check(held and held[0]["path"].startswith(start),
              f"held by {held}, want a path starting {start!r}")
        check(words is None or words in held[0]["fix"],
              f"the holder's fix {held[0]['fix']!r} does not say {words!r}")


def check_causes(case, leaks):
    """One finding per cause: as many findings as kinds expected, each
    with its own holder, the one that grows fastest first."""
    want = CASES[case]
    check([f["category"] for f in leaks] == list(want),
          f"findings {[f['category'] for f in leaks]}, expected {want}")
    holders = [f["held_by"][0]["path"] if f["held_by"] else None
               for f in leaks]
    check(all(holders) and len(set(h.split("[")[0] for h in holders)) ==
          len(holders), f"each its own holder: {holders}")
    rates = [f["evidence"]["bytes_per_step"] for f in leaks]
    check(rates == sorted(rates, reverse=True),
          f"the fastest first: {rates}")


def gpu_present():
    probe = ("import torch, sys\n"
             "sys.exit(0 if torch.cuda.is_available() else 1)\n")
    return subprocess.run([os.environ["LW_TORCH_PYTHON"], "-c", probe],
                          capture_output=True).returncode == 0


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in CASES or \
       sys.argv[2] not in CONFIGS:
        print(f"usage: test_torch.py CASE CONFIG; cases {sorted(CASES)}, "
              f"configurations {sorted(CONFIGS)}", file=sys.stderr)
        return 2
    case, config = sys.argv[1:]
    python = os.environ.get("LW_TORCH_PYTHON", "")
    real_gpu = os.environ.get("LW_REAL_GPU") == "1"
    if not python:
        print("no PyTorch configured (meson -Dtorch_python=PATH, as "
              "scripts/test.sh does with scripts/torch-env.sh): skipped")
        return SKIP
    if real_gpu and not (os.path.exists("/dev/nvidiactl") and gpu_present()):
        print("no NVIDIA GPU: skipped")
        return SKIP
    try:
        cell = test(case, config, python, real_gpu)
    except Failure as e:
        print(f"FAIL {case} {config}: {e}", file=sys.stderr)
        return 1
    print(f"{case} {config} {cell}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
