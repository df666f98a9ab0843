#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Who holds it, on real PyTorch: the seed stories of scenarios.py under
`fakegpu.sh leakwatch run`, each with a leakwatch.snapshot() near its last
step (LW_SNAPSHOT_AT) and the search at the program's end. Each story's
leak must be held by what a person would name, and the fix must be phrased
against it:
  torchtitan     the list of losses       losses_since_last_log[N]
  composer_kept  the copies on the trainer trainer.batch_metrics[N]...
  simpletuner    the embedding cache      _embedding_cache['tok']
  espnet         the previous step's loss retval['loss']...
  eval_grad      the evaluation total     val_total.grad_fn ... saved tensor
The controls get none, and LEAKWATCH_HOLDERS=0 turns the search off.
Environment as for test_torch.py."""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import conclude  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON_DIR = os.path.join(os.path.dirname(os.path.dirname(HERE)), "python")
STEPS = 30

# case: (the finding's category, how its first holder's path starts, what
# the path holds further on, the word the fix names)
STORIES = {
    "torchtitan": ("retained-loss", "losses_since_last_log[", "",
                   "drain `losses_since_last_log`"),
    "composer_kept": ("metric-copy", "trainer.batch_metrics[", ".correct",
                      "drain `trainer.batch_metrics`"),
    "simpletuner": ("unreleased-module", "_embedding_cache['tok']", "",
                    "_embedding_cache"),
    "espnet": ("lingering-previous-step", "retval['loss'].grad_fn (", ".grad",
               "let go of `retval`"),
    "eval_grad": ("retained-graph", "val_total.grad_fn (AddBackward0)",
                  "saved tensor of AddmmBackward0", "torch.no_grad()"),
}
CONTROLS = ("control_adam", "control_cache", "control_gc")


def run(tmp, case, env_extra=None, name=None):
    python = os.environ["LW_TORCH_PYTHON"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))}
    env["LEAKWATCH_LIB"] = os.environ["LW_LIB"]
    env["LEAKWATCH_BUILD"] = os.environ["LEAKWATCH_BUILD"]
    env["LEAKWATCH_QUIET"] = "1"
    if os.environ.get("LW_TRACE_DETAIL"):  # meson test --setup full
        env["LEAKWATCH_TRACE_DETAIL"] = os.environ["LW_TRACE_DETAIL"]
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["LW_SNAPSHOT_AT"] = str(STEPS - 2)
    env.update(env_extra or {})
    trace = os.path.join(tmp, (name or case) + ".trace")
    r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"], "run",
                        "--no-report", "--trace", trace, "--", python,
                        os.path.join(HERE, "scenarios.py"), case, str(STEPS),
                        os.path.join(tmp, case + ".json"), PYTHON_DIR],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0 or "ok" not in r.stdout:
        print(r.stdout, r.stderr[-3000:])
        return None, f"{case} exited {r.returncode}"
    if "holder search failed" in r.stderr:
        return None, f"{case}: {r.stderr.strip()[-500:]}"
    out = subprocess.run([os.environ["LW_CLI"], "report", "--format", "json",
                          trace], capture_output=True, text=True, timeout=300)
    text = subprocess.run([os.environ["LW_CLI"], "report", trace],
                          capture_output=True, text=True, timeout=300)
    return (json.loads(out.stdout), text.stdout), None


def main():
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    failures = []
    firsts = {}
    with tempfile.TemporaryDirectory(prefix="lw-holders-") as tmp:
        for case, (category, start, within, fix) in STORIES.items():
            got, err = run(tmp, case)
            if err:
                failures.append(err)
                continue
            doc, text = got
            found = [f for f in doc["findings"]
                     if f["leak"] and f["category"] == category]
            held = found[0]["held_by"] if found else []
            print(f"{case}: {[(h['path'], h['objects'], h['graph_nodes']) for h in held]}")
            if not found:
                failures.append(f"{case}: no {category} finding")
            elif not held:
                failures.append(f"{case}: the {category} finding has no holder")
            else:
                h = firsts[case] = held[0]
                if not h["path"].startswith(start) or within not in h["path"]:
                    failures.append(f"{case}: held by {h['path']!r}, want "
                                    f"{start}...{within}")
                if not h["root"].startswith("local of "):
                    failures.append(f"{case}: root {h['root']!r}, want the "
                                    "scenario's frame")
                if fix not in (h["fix"] or ""):
                    failures.append(f"{case}: fix {h['fix']!r} does not say "
                                    f"{fix!r}")
                if h["cut"]:
                    failures.append(f"{case}: the search was cut")
                if "held by: " + h["path"] not in text:
                    failures.append(f"{case}: the text report does not show "
                                    f"held by: {h['path']}")
        # The list of losses holds one tensor per step but the first; the
        # evaluation total's graph, a few nodes per step.
        for case, key, want in (("torchtitan", "objects", STEPS - 4),
                                ("eval_grad", "graph_nodes", STEPS)):
            if firsts.get(case, {}).get(key, 0) < want:
                failures.append(f"{case}: {key} {firsts.get(case)}, want at "
                                f"least {want}")
        for case in CONTROLS:
            got, err = run(tmp, case)
            if err:
                failures.append(err)
                continue
            held = [h for f in got[0]["findings"] for h in f["held_by"]]
            print(f"{case}: {held}")
            if held:
                failures.append(f"{case}: a control is held by {held}")
        got, err = run(tmp, "torchtitan", {"LEAKWATCH_HOLDERS": "0"},
                       "torchtitan-off")
        if err or any(f["held_by"] for f in got[0]["findings"]):
            failures.append(f"LEAKWATCH_HOLDERS=0 still searched: {err}")
    return conclude(failures)


if __name__ == "__main__":
    sys.exit(main())
