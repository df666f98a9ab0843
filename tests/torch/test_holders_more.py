#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Who holds it, where the holder is not a frame's plain local nor a
module's global: programs written as people write them (holders/: a loop in
a function, argparse, no leakwatch call, the optimizer's steps marking the
steps) under `fakegpu.sh leakwatch run`, on real PyTorch.

    test_holders_more.py CASE CONFIG

Each must end with exactly one leak finding (unsuppressed), of a kind the
case allows, led by the program's line marked `# @lead`; its first holder
must name what a person would name, with the fix phrased against it, and
the text report must show it:

  hook_closure       a forward hook's list, referred to only by the hook
                     function's closure (its free variable `acts`)
  thread_train       losses[N] (local of train), train() run in a thread
                     while the main thread waits in join()
  async_serve        answered[N] (local of handle), an asyncio task's
                     coroutine
  generator_batches  replay[N] (local of device_batches), a suspended
                     generator's frame
  metric_deepcopy    the copies in reference cycles that only the collector
                     frees: an unreachable reference cycle, not the copy
                     the program keeps (`m`)
  cat_preds          evaluator.all_preds, a torch.cat buffer on an object
  saved_hooks        outputs[N], graphs whose saved activations only
                     saved_tensors_hooks' packed values hold (never
                     unpacked: the program prints 0 unpack hook calls)

CONFIG: native or async (test_torch.py's). Environment as for
test_torch.py.
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
PROGRAMS = os.path.join(HERE, "holders")
CONFIGS = ("native", "async")


def any_of(*words):
    """A test on a text: it holds one of words."""
    return lambda text: any(w in text for w in words), " or ".join(
        repr(w) for w in words)


def starts(prefix):
    return lambda text: text.startswith(prefix), f"starts with {prefix!r}"


def ends(suffix):
    return lambda text: text.endswith(suffix), f"ends with {suffix!r}"


# case: (the categories its finding may get, and tests of its first
# holder's path, root and fix)
CASES = {
    "hook_closure": ({"kept-activations"},
                     any_of("acts", "__closure__"),
                     starts(""),
                     any_of("acts", "__closure__")),
    "thread_train": ({"retained-loss"}, starts("losses["),
                     starts("local of train "), any_of("drain `losses`")),
    # Outputs made under no_grad and kept: no graph, no hook.
    "async_serve": ({"kept-outputs"},
                    starts("answered["), starts("local of handle "),
                    any_of("drain `answered`")),
    # Batches made on the device (torch.randn) and kept: inputs.
    "generator_batches": ({"kept-inputs"},
                          starts("replay["),
                          starts("local of device_batches "),
                          any_of("drain `replay`")),
    "metric_deepcopy": ({"metric-copy"}, starts("<ConfusionMatrix>"),
                        starts("unreachable reference cycle"),
                        any_of("break the reference cycle of "
                               "`ConfusionMatrix`")),
    "cat_preds": ({"growing-buffer"}, ends("all_preds"),
                  starts("local of train "), any_of("`evaluator.all_preds`")),
    "saved_hooks": ({"retained-graph"}, starts("outputs["),
                    starts("local of train "), any_of("`outputs`")),
}


def lead_line(case):
    path = os.path.join(PROGRAMS, case + ".py")
    with open(path) as f:
        lines = [n for n, text in enumerate(f, 1)
                 if text.rstrip().endswith("# @lead")]
    check(len(lines) == 1, f"{len(lines)} lines marked @lead in {path}")
    return lines[0] if lines else None


def run(case, config, tmp):
    """(the training process's JSON report, the text report)."""
    out = os.path.join(tmp, "report.json")
    trace = os.path.join(tmp, "t-%p.trace")
    env = test_torch.environment(config)
    env["LEAKWATCH_QUIET"] = "1"
    cmd = [os.environ["LW_FAKEGPU"], os.environ["LW_CLI"], "run", "--format",
           "json", "-o", out, "--trace", trace, "--",
           os.environ["LW_TORCH_PYTHON"],
           os.path.join(PROGRAMS, case + ".py")]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=600, cwd=tmp)
    if not check(r.returncode == 0 and "ok" in r.stdout.split(),
                 f"{case}/{config} exited {r.returncode}:\n"
                 f"{r.stdout[-3000:]}\n{r.stderr[-5000:]}"):
        return None, None
    check("holder search failed" not in r.stderr,
          f"the holder search failed: {r.stderr[-2000:]}")
    # A program that counts its saved-tensor unpack hook: the searches
    # never call it.
    calls = [line for line in r.stdout.splitlines()
             if line.startswith("unpack hook calls:")]
    check(all(line.split()[-1] == "0" for line in calls),
          f"{case}: the unpack hook ran: {calls}")
    with open(out) as f:
        doc = json.load(f)
    rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
    text = subprocess.run([os.environ["LW_CLI"], "report", rep["trace"]],
                          capture_output=True, text=True, timeout=300)
    return rep, text.stdout


def summary(findings):
    for f in findings:
        loc = f.get("location") or {}
        print(f"{f['category']}{'' if f['leak'] else ' (no leak)'} at "
              f"{os.path.basename(str(loc.get('file')))}:{loc.get('line')} "
              f"({loc.get('function')})")
        for h in f["held_by"]:
            print(f"  held by: {h['path']} ({h['root']}); {h['objects']} "
                  f"objects; cut {h['cut']}\n    fix: {h['fix']}")
        if not f["held_by"]:
            print("  held by: nothing found")


def test(case, config):
    categories, path_ok, root_ok, fix_ok = CASES[case]
    want_line = lead_line(case)
    with tempfile.TemporaryDirectory(prefix="lw-holders-more-") as tmp:
        rep, text = run(case, config, tmp)
        if rep is None:
            return
        findings = [f for f in rep["findings"] if not f["suppressed"]]
        summary(findings)
        leaks = [f for f in findings if f["leak"]]
        print(f"leak findings: {len(leaks)}; steps {rep['steps']} "
              f"({rep['step_source']})")
        check(rep["step_source"] == "optimizer",
              f"steps from {rep['step_source']}, want the optimizer's")
        if not check(len(leaks) == 1,
                     f"{len(leaks)} leak findings, want 1: "
                     f"{[(f['category'], (f['location'] or {}).get('line')) for f in leaks]}"):
            leaks = [f for f in leaks if f["category"] in categories][:1]
            if not leaks:
                return
        f = leaks[0]
        check(f["category"] in categories,
              f"category {f['category']}, want one of {sorted(categories)}")
        loc = f.get("location") or {}
        check(str(loc.get("file", "")).endswith(os.sep + case + ".py") and
              loc.get("line") == want_line,
              f"led by {loc.get('file')}:{loc.get('line')}, want "
              f"{case}.py:{want_line}")
        if not check(f["held_by"], "no holder (held_by is empty)"):
            return
        h = f["held_by"][0]
        for what, value, (ok, want) in (("path", h["path"], path_ok),
                                        ("root", h["root"], root_ok),
                                        ("fix", h["fix"] or "", fix_ok)):
            check(ok(value), f"first holder's {what} {value!r}: want it "
                  f"{want if want.startswith(('starts', 'ends')) else 'to name ' + want}")
        # A later search runs within what is left of the in-run share,
        # so on a loaded machine it may be cut: the holder stays right,
        # and the text report says the search ran out of time.
        if h["cut"]:
            check("the holder search ran out of time" in text,
                  "the search was cut and the text report does not say so")
        check("held by: " + h["path"] in text,
              f"the text report does not show held by: {h['path']}")


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in CASES or \
            sys.argv[2] not in CONFIGS:
        print(f"usage: test_holders_more.py CASE CONFIG; cases "
              f"{' '.join(CASES)}; configurations {' '.join(CONFIGS)}",
              file=sys.stderr)
        return 2
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    test(*sys.argv[1:])
    return finish()


if __name__ == "__main__":
    sys.exit(main())
