#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Training programs written with the libraries people train with
(tests/torch/libraries/: transformers' Trainer, Lightning, accelerate,
torchmetrics), under `leakwatch run --format json` on the stand-in GPU,
judged against what each program measured itself on the same run.

    test_libraries.py [--bare] PROGRAM CASE CONFIG

A clean case must get no finding of any kind, and `leakwatch check
--max-growth 0` must pass on its trace. A leak must get exactly one
finding (of any kind: what its graph keeps is part of it, not findings of
their own): a leak, of the case's category, led by the line of the program
marked `# @lead CASE`, with a holder (held_by; for accelerate_loop's, the
list a person would name, and a fix that names it), and growing by what the
program's own torch.cuda.memory_allocated() grew per step within 10%
(over whole periods of the program's evaluation or epoch interval; for
copies the cycle collector frees, by the typical rise of a step). The
report's step count must equal the library's own count of optimizer steps.
The last line printed is the cell of the table: PROGRAM CASE CONFIG
clean|found.

--bare runs the program on the stand-in without leakwatch and checks only
the program: that it runs to its end, that the library counted the steps
asked for, and that its own figures grow for a leak and do not for a
clean case (a failure of the test without --bare is then leakwatch's).

Environment as for test_torch.py; LW_TORCH_PYTHON must also import
transformers, accelerate, lightning and torchmetrics (scripts/torch-env.sh
installs them).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_torch  # noqa: E402
from test_torch import Failure, check, within  # noqa: E402

SKIP = 77
LIBRARIES = os.path.join(HERE, "libraries")
MODULES = ("transformers", "accelerate", "lightning", "torchmetrics")


class Program(object):
    def __init__(self, steps, period, cases, holders=None):
        self.steps = steps        # optimizer steps it runs
        self.period = period      # its evaluation or epoch interval, in steps
        self.cases = cases        # case: the category its leak must get
        # case: (how its first holder's path starts, what its fix says)
        self.holders = holders or {}


PROGRAMS = {
    # callback keeps gradient norms: values the program computed, not
    # a loss, so never the loss's fix.
    "hf_trainer": Program(30, 5, {"clean": None,
                                  "callback": "kept-outputs",
                                  "compute_loss": "retained-loss"}),
    "lightning_fit": Program(32, 8, {"clean": None,
                                     "outputs": "retained-loss"}),
    "accelerate_loop": Program(30, 5, {"clean": None,
                                       "eval_graph": "retained-graph",
                                       "eval_graph_iter": "retained-graph"},
                               # Graphs never back-propagated: keep
                               # numbers, not graphs (not "let go of it
                               # once backward() has run").
                               {"eval_graph": ("val_history[",
                                               "keep numbers, not graphs, "
                                               "in `val_history"),
                                "eval_graph_iter": ("val_losses[",
                                                    "keep numbers, not "
                                                    "graphs, in `val_losses")}),
    "torchmetrics_loop": Program(30, 10, {"clean": None,
                                          "metric_copy": "metric-copy"}),
}
CONFIGS = ("native", "async")


def source(name):
    return os.path.join(LIBRARIES, name + ".py")


def lead_line(name, case):
    """The line of the program marked `# @lead CASE`."""
    with open(source(name)) as f:
        lines = [n for n, text in enumerate(f, 1)
                 if text.rstrip().endswith("# @lead " + case)]
    if len(lines) != 1:
        raise Failure(f"{len(lines)} lines marked @lead {case} in "
                      f"{source(name)}, expected 1")
    return lines[0]


def environment(config, tmp):
    env = test_torch.environment(config)
    # Nothing is downloaded, and nothing is written outside the run's
    # directory.
    env.update({"HF_HUB_OFFLINE": "1", "HF_HOME": os.path.join(tmp, "hf"),
                "TOKENIZERS_PARALLELISM": "false"})
    return env


def run(name, case, config, tmp, leakwatch=True):
    """The program under `leakwatch run --format json` (or alone):
    (the training process's report or None, what the program recorded)."""
    out = os.path.join(tmp, "report.json")
    rec = os.path.join(tmp, "program.json")
    cmd = [os.environ["LW_TORCH_PYTHON"], source(name), case,
           str(PROGRAMS[name].steps), rec, os.environ["LW_PYTHON_DIR"]]
    if leakwatch:
        cmd = [os.environ["LW_CLI"], "run", "--format", "json", "-o", out,
               "--trace", os.path.join(tmp, "t-%p.trace"), "--"] + cmd
    r = subprocess.run([os.environ["LW_FAKEGPU"]] + cmd,
                       env=environment(config, tmp), capture_output=True,
                       text=True, timeout=600, cwd=tmp)
    check(r.returncode == 0,
          f"{name} {case}/{config} exited {r.returncode}:\n{r.stdout[-3000:]}"
          f"\n{r.stderr[-5000:]}")
    with open(rec) as f:
        program = json.load(f)
    if not leakwatch:
        return None, program
    with open(out) as f:
        doc = json.load(f)
    rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
    return rep, program


def program_growth(program, period):
    """Bytes per step by the program's own counter, from a step past the
    first third to the last, over whole periods (an evaluation every 5
    steps adds its memory in stairs)."""
    a = program["allocated"]
    last = len(a) - 1
    first = last - (last - len(a) // 3) // period * period
    check(first < last, f"fewer than a period of steps: {a}")
    return (a[last] - a[first]) / (last - first)


def check_program_clean(program, period, where):
    """A clean program's own figures do not grow: its last period peaks no
    higher than the one before."""
    a = program["allocated"]
    check(len(a) >= 3 * period, f"fewer than three periods of steps: {a}")
    check(max(a[-period:]) <= max(a[-2 * period:-period]),
          f"{where}, the clean program's own memory_allocated() grows: {a}")


def check_leak(name, case, rep, program, findings):
    category = PROGRAMS[name].cases[case]
    check(len(findings) == 1, f"{len(findings)} findings, expected 1")
    f = findings[0]
    check(f["leak"], f"the finding is no leak: {f['category']}")
    check(f["category"] == category,
          f"category {f['category']}, expected {category}")
    loc = f.get("location") or {}
    want = lead_line(name, case)
    check(str(loc.get("file", "")).endswith(os.sep + name + ".py") and
          loc.get("line") == want,
          f"led by {loc.get('file')}:{loc.get('line')}, expected "
          f"{name}.py:{want}")
    check(f["held_by"], "no holder (held_by is empty)")
    if case in PROGRAMS[name].holders:
        start, fix = PROGRAMS[name].holders[case]
        h = f["held_by"][0]
        check(h["path"].startswith(start),
              f"held by {h['path']!r}, want {start}...")
        check(fix in (h["fix"] or ""),
              f"the holder's fix {h['fix']!r} does not name {fix}")
    ev = f["evidence"]
    if ev["gc_frees"]:
        # Copies freed by the collector's passes: the bytes made each step
        # until the next pass.
        within(ev["allocated_bytes"] / rep["steps"],
               test_torch.program_rise(program),
               "growth per step between collections")
    else:
        within(ev["bytes_per_step"],
               program_growth(program, PROGRAMS[name].period),
               "growth per step")


def typical_rise(program):
    a = program["allocated"]
    rises = sorted(y - x for x, y in zip(a, a[1:]) if y > x)
    return rises[len(rises) // 2] if rises else 0


def summary(name, rep, program, findings):
    """What leakwatch said, beside what the program measured, one line a
    finding (the table the tests' results are read from)."""
    period = PROGRAMS[name].period
    lines = [f"steps: report {rep['steps']} ({rep['step_source']}), library "
             f"{program['optimizer_steps']}",
             f"program: +{program_growth(program, period):.0f} B/step over "
             f"whole periods of {period} steps, typical rise of a step that "
             f"rises {typical_rise(program)} B",
             f"findings: {len(findings)}"]
    for f in findings:
        loc, ev = f["location"] or {}, f["evidence"]
        held = "; ".join(f"{h['path']} ({h['root']})" for h in f["held_by"])
        lines.append(
            f"  {f['category']}{'' if f['leak'] else ' (no leak)'} at "
            f"{os.path.basename(str(loc.get('file')))}:{loc.get('line')} "
            f"({loc.get('function')}): +{ev['bytes_per_step']:.0f} B/step, "
            f"{ev['mean_size']:.0f} B blocks, {ev['gc_frees']} freed by the "
            f"collector; held by: {held or 'nothing found'}")
    return "\n".join(lines)


def check_program(name, case, program, alone):
    """What the program measured itself shows its leak, or its absence.
    Alone it always does (--bare); under leakwatch, a failure here means
    that the shim changed the program's own memory."""
    where = ("alone" if alone else "under leakwatch (compare the program "
             "alone: test_libraries.py --bare)")
    check(program["optimizer_steps"] == PROGRAMS[name].steps,
          f"{where}, the library counted {program['optimizer_steps']} "
          f"optimizer steps, the program asked for {PROGRAMS[name].steps}")
    if PROGRAMS[name].cases[case] is None:
        check_program_clean(program, PROGRAMS[name].period, where)
    else:
        check(program_growth(program, PROGRAMS[name].period) > 0,
              f"{where}, the program's own memory_allocated() does not grow "
              f"over whole periods: {program['allocated']}")


def bare(name, case, config):
    """The program on the stand-in without leakwatch: it runs to its end
    and its own figures show the leak, or its absence."""
    with tempfile.TemporaryDirectory(prefix="lw-libraries-") as tmp:
        program = run(name, case, config, tmp, leakwatch=False)[1]
    print(json.dumps(program))
    check_program(name, case, program, alone=True)
    return "program " + ("clean" if PROGRAMS[name].cases[case] is None
                         else "leaks")


def test(name, case, config):
    with tempfile.TemporaryDirectory(prefix="lw-libraries-") as tmp:
        rep, program = run(name, case, config, tmp)
        findings = [f for f in rep["findings"] if not f["suppressed"]]
        print(json.dumps({"verdict": rep["verdict"], "program": program,
                          "findings": findings}, indent=1)[:20000])
        print(summary(name, rep, program, findings))
        test_torch.check_steps(rep, program)
        check_program(name, case, program, alone=False)
        torch = rep["torch_allocator"]
        check(torch is not None and torch["tensors_visible"],
              f"PyTorch's tensors not seen one by one: {torch}")
        if PROGRAMS[name].cases[case] is None:
            check(findings == [], f"{len(findings)} findings on a clean "
                  f"program: {[(f['category'], f['location']) for f in findings]}")
            p = subprocess.run([os.environ["LW_CLI"], "check", "--max-growth",
                                "0", rep["trace"]], capture_output=True,
                               text=True, timeout=300)
            check(p.returncode == 0,
                  f"check --max-growth 0 exited {p.returncode}:\n{p.stdout}")
            return "clean"
        check_leak(name, case, rep, program, findings)
    return "found"


def libraries_missing(python):
    """The libraries LW_TORCH_PYTHON cannot find (found, not imported)."""
    probe = ("import importlib.util, sys\n"
             f"print(' '.join(m for m in {MODULES!r} "
             "if importlib.util.find_spec(m) is None))\n")
    r = subprocess.run([python, "-c", probe], capture_output=True, text=True)
    return r.stdout.split() if r.returncode == 0 else [r.stderr.strip()]


def main():
    args = sys.argv[1:]
    alone = args[:1] == ["--bare"]
    if alone:
        args = args[1:]
    if len(args) != 3 or args[0] not in PROGRAMS or \
       args[1] not in PROGRAMS[args[0]].cases or args[2] not in CONFIGS:
        print("usage: test_libraries.py [--bare] PROGRAM CASE CONFIG; " +
              "; ".join(f"{p}: {' '.join(v.cases)}" for p, v in PROGRAMS.items())
              + f"; configurations {' '.join(CONFIGS)}", file=sys.stderr)
        return 2
    name, case, config = args
    python = os.environ.get("LW_TORCH_PYTHON", "")
    if not python:
        print("no PyTorch configured (meson -Dtorch_python=PATH, as "
              "scripts/test.sh does with scripts/torch-env.sh): skipped")
        return SKIP
    missing = libraries_missing(python)
    if missing:
        print(f"FAIL {name} {case} {config}: {python} lacks "
              f"{', '.join(missing)} (scripts/torch-env.sh installs them)",
              file=sys.stderr)
        return 1
    try:
        cell = (bare if alone else test)(name, case, config)
    except Failure as e:
        print(f"FAIL {name} {case} {config}: {e}", file=sys.stderr)
        return 1
    print(f"{name} {case} {config} {cell}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
