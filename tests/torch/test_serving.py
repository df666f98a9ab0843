#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Serving, generation and batch inference (serving/): programs with no
leakwatch call and, but for one story, no optimizer, as people write them
(argparse, the loop in a function, main()), under `fakegpu.sh leakwatch
run`, on real PyTorch.

    test_serving.py STORY VARIANT CONFIG

STORY is a program of serving/; VARIANT `leak` runs a leaking program as
it is, `fixed` with --fixed, `clean` a program with nothing to fix (the
clean model, the program with no loop); CONFIG native or async
(test_torch.py's). Each program
prints how many requests or batches it ran ("requests: N").

Every run: at least 10 steps, as many as the program ran, from its own
loop (step source "loop"; the training story's fixed twin makes one
optimizer, whose steps they are). A leak: exactly one leak finding, at the
program's line marked `# @lead`, of the story's kind, with a holder. A fix
or a clean program: no finding, and `leakwatch check --max-growth 0` on
its trace exits 0. The program with no loop: no steps, and `check` cannot
judge it (exit 3; 0 from a `check` that still passes what it cannot
judge, said in the output).

Each check's result is printed, failed or passed.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))
import test_torch  # noqa: E402
from lwcheck import check, finish  # noqa: E402

SKIP = 77
PROGRAMS = os.path.join(HERE, "serving")
CONFIGS = ("native", "async")

# story: the kinds its leak may end with (None: clean, no leak variant)
STORIES = {
    "kv_generate": {"kept-outputs"},
    "embed_cache": {"unbounded-cache"},
    "lru_tensors": {"unbounded-cache"},
    "batch_grad": {"retained-graph"},
    "batch_nograd": {"kept-outputs"},
    "kept_inputs": {"kept-inputs"},
    "remade_optimizer": {"uncollected-cycle", "cycle-delayed-frees"},
    "retry_exceptions": {"kept-exception"},
    "metric_state": {"metric-state"},
    "sequential": None,
    "no_loop": None,
}


def verdict(ok, what):
    """check(), and the check's result printed either way."""
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    return check(ok, what)


def lead_line(story):
    path = os.path.join(PROGRAMS, story + ".py")
    with open(path) as f:
        lines = [n for n, text in enumerate(f, 1)
                 if text.rstrip().endswith("# @lead")]
    check(len(lines) == 1, f"{len(lines)} lines marked @lead in {path}")
    return lines[0] if lines else None


def run_report(program, extra_env, args=(), config="native", quiet=True):
    """A program under `fakegpu.sh leakwatch run` in a directory of its
    own: (the completed process, the count it printed or None, the JSON
    report of its trace that has the most allocations, or None)."""
    with tempfile.TemporaryDirectory(prefix="lw-serving-") as tmp:
        out = os.path.join(tmp, "report.json")
        trace = os.path.join(os.path.dirname(tmp), os.path.basename(tmp) +
                             "-%p.trace")
        env = test_torch.environment(config)
        if quiet:
            env["LEAKWATCH_QUIET"] = "1"
        env.update(extra_env)
        cmd = [os.environ["LW_FAKEGPU"], os.environ["LW_CLI"], "run",
               "--format", "json", "-o", out, "--trace", trace, "--",
               os.environ["LW_TORCH_PYTHON"], program, *args]
        r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                           timeout=600, cwd=tmp)
        counts = [int(line.split()[-1]) for line in r.stdout.splitlines()
                  if line.startswith(("requests:", "batches:",
                                      "optimizer steps:"))]
        if not verdict(r.returncode == 0 and len(counts) == 1,
                       f"{os.path.basename(program)} ran (exit "
                       f"{r.returncode}, counts {counts})"):
            print(r.stdout[-3000:], r.stderr[-5000:])
            return r, None, None
        with open(out) as f:
            doc = json.load(f)
    rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
    return r, counts[0], rep


def show(rep):
    print(f"steps {rep['steps']} ({rep['step_source']}, "
          f"{rep.get('step_loop')})")
    for f in rep["findings"]:
        loc = f.get("location") or {}
        print(f"  {f['category']}{'' if f['leak'] else ' (no leak)'} at "
              f"{os.path.basename(str(loc.get('file')))}:{loc.get('line')}"
              f" ({loc.get('function')}); held by "
              f"{[h['path'] for h in f['held_by']][:2]}")


def check_steps(story, fixed, count, rep):
    source = rep["step_source"]
    want = "optimizer" if story == "remade_optimizer" and fixed else "loop"
    verdict(source == want, f"step source {source}, want {want}")
    verdict(rep["steps"] >= 10, f"{rep['steps']} steps, want at least 10")
    verdict(rep["steps"] == count,
            f"{rep['steps']} steps for the {count} the program ran")
    if want == "loop":
        loop = rep.get("step_loop") or {}
        verdict(str(loop.get("file", "")).endswith(
                    os.sep + story + ".py") and loop.get("line", 0) > 0
                and loop.get("function"),
                f"the loop is named in the program: {loop}")


def check_clean(story, rep, trace):
    findings = [f for f in rep["findings"] if not f["suppressed"]]
    verdict(not findings, f"no finding: "
            f"{[(f['category'], (f['location'] or {}).get('line')) for f in findings]}")
    r = subprocess.run([os.environ["LW_CLI"], "check", "--max-growth", "0",
                        trace], capture_output=True, text=True, timeout=300)
    verdict(r.returncode == 0, f"check --max-growth 0 exits {r.returncode}, "
            f"want 0: {r.stdout[-1500:]}{r.stderr[-500:]}")


def check_leak(story, rep):
    kinds = STORIES[story]
    want_line = lead_line(story)
    leaks = [f for f in rep["findings"] if f["leak"] and not f["suppressed"]]
    verdict(len(leaks) == 1, f"{len(leaks)} leak findings, want 1")
    at_lead = [f for f in leaks
               if (f.get("location") or {}).get("line") == want_line and
               str((f.get("location") or {}).get("file", "")).endswith(
                   os.sep + story + ".py")]
    if not verdict(at_lead, f"a leak finding at {story}.py:{want_line}"):
        return
    f = at_lead[0]
    verdict(f["category"] in kinds,
            f"kind {f['category']}, want one of {sorted(kinds)}")
    verdict(bool(f["held_by"]), f"a holder: {[h['path'] for h in f['held_by']]}")


def check_no_loop(rep, trace):
    verdict(rep["steps"] == 0 and rep["step_source"] == "none",
            f"no steps: {rep['steps']} ({rep['step_source']})")
    text = subprocess.run([os.environ["LW_CLI"], "report", trace],
                          capture_output=True, text=True, timeout=300).stdout
    verdict("LEAKWATCH_STEP_AT=" in text and "leakwatch.step()" in text,
            "the text report says how to mark the steps")
    r = subprocess.run([os.environ["LW_CLI"], "check", "--max-growth", "0",
                        trace], capture_output=True, text=True, timeout=300)
    if r.returncode == 0:
        print(f"note: check passes a trace it cannot judge: {r.stdout.strip()}")
    verdict(r.returncode == 3 or (r.returncode == 0 and "not enough steps"
                                  in r.stdout + r.stderr),
            f"check cannot judge (exit {r.returncode}): {r.stdout[-800:]}")


def test(story, variant, config):
    fixed = variant == "fixed"
    _, count, rep = run_report(os.path.join(PROGRAMS, story + ".py"), {},
                               ["--fixed"] if fixed else [], config)
    if rep is None:
        return
    try:
        show(rep)
        if story == "no_loop":
            check_no_loop(rep, rep["trace"])
            return
        check_steps(story, fixed, count, rep)
        if fixed or STORIES[story] is None:
            check_clean(story, rep, rep["trace"])
        else:
            check_leak(story, rep)
    finally:
        os.unlink(rep["trace"])


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in STORIES or \
            sys.argv[2] not in (("clean",) if STORIES[sys.argv[1]] is None
                                else ("leak", "fixed")) or \
            sys.argv[3] not in CONFIGS:
        print(f"usage: test_serving.py STORY leak|fixed|clean CONFIG; stories "
              f"{' '.join(STORIES)}; configurations {' '.join(CONFIGS)}",
              file=sys.stderr)
        return 2
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    test(*sys.argv[1:])
    return finish()


if __name__ == "__main__":
    sys.exit(main())
