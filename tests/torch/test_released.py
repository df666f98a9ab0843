#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Leaks held inside a function, on real PyTorch: a seed story of
scenarios.py with its loop inside a function that main() calls and lets
go of (`scenarios.py CASE STEPS OUT PYTHON_DIR released`), as most training
code is written, so that nothing of the leak is live when the program's
code finishes. Every view must still show it:

  - the JSON report: one leak finding, of the story's category, at its
    `# @lead` line, measuring what the program measured itself within 10%
    (as test_torch.py checks the module-level version), what it held at
    step ends, released after the last step, when the function returned
    (when a local held it); its site, with frames, among "sites";
  - its holder, found while the run was alive: the function's local, or
    an unreachable reference cycle where the program dropped the copies;
  - `leakwatch check --max-growth 0` fails and names the line (a leak
    that grows);
  - `leakwatch diff CLEAN LEAK` says NEW LEAK at the line and exits 1,
    CLEAN being a leak-free control of the same program;
  - `--format folded` and `--format html` show the line.

    test_released.py CASE CONFIG
    test_released.py ranks CONFIG

`ranks`: two ranks of one job (RANK=0 and 1, as torchrun sets them) both
running torchtitan's story released: the merged view of `report` lists
the line among the growing sites common to both, with each rank's rate.

Environment as for test_torch.py. The last line printed is the cell of the
table: CASE CONFIG found.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_torch  # noqa: E402
from test_torch import Failure, check  # noqa: E402

SKIP = 77
STEPS = test_torch.STEPS
# The function whose local holds each story's leak, or the unreachable
# cycle's words.
HOLDERS = {
    "torchtitan": ("local of torchtitan (", "losses_since_last_log["),
    "composer": ("unreachable reference cycle (", "<Accuracy>.correct"),
    "composer_no_gc": ("unreachable reference cycle (", "<Accuracy>.correct"),
    "espnet": ("local of espnet (", "retval['loss'].grad_fn ("),
    "simpletuner": ("local of simpletuner (", "_embedding_cache['tok']"),
    "eval_grad": ("local of eval_grad (", "val_total.grad_fn ("),
}
CLEAN = "control_adam"


def run(case, config, tmp, name, env=None):
    """The case under `leakwatch run`, released; (report, program, trace)."""
    python = os.environ["LW_TORCH_PYTHON"]
    out = os.path.join(tmp, name + ".json")
    rec = os.path.join(tmp, name + "-program.json")
    trace = os.path.join(tmp, name + ".trace")
    cmd = [os.environ["LW_FAKEGPU"], os.environ["LW_CLI"], "run", "--format",
           "json", "-o", out, "--trace", trace, "--", python,
           test_torch.SCENARIOS, case, str(STEPS), rec,
           os.environ["LW_PYTHON_DIR"], "released"]
    r = subprocess.run(cmd, env=dict(test_torch.environment(config),
                                     **(env or {})),
                       capture_output=True, text=True, timeout=600)
    check(r.returncode == 0,
          f"{case}/{config} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    check("holder search failed" not in r.stderr, r.stderr[-2000:])
    with open(out) as f:
        doc = json.load(f)
    with open(rec) as f:
        program = json.load(f)
    rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
    return rep, program, rep["trace"]


def cli(*args):
    return subprocess.run([os.environ["LW_CLI"], *args], capture_output=True,
                          text=True, timeout=300)


def flame_labels(page):
    """Every frame label of the HTML page's icicle (its data block)."""
    start = page.index('class="lw-data">') + len('class="lw-data">')
    data = json.loads(page[start:page.index("</script>", start)])
    labels, stack = [], [data["flame"]]
    while stack:
        node = stack.pop()
        labels.append(node.get("n", ""))
        stack += node.get("c", [])
    return "\n".join(labels)


def where(finding):
    loc = finding["location"]
    return f"{os.path.basename(loc['file'])}:{loc['line']}"


def test(case, config):
    category = test_torch.CASES[case]
    with tempfile.TemporaryDirectory(prefix="lw-released-") as tmp:
        rep, program, trace = run(case, config, tmp, case)
        leaks = [f for f in rep["findings"]
                 if f["leak"] and not f["suppressed"]]
        print(json.dumps({"leaks": leaks,
                          "live_at_exit": rep["live_bytes_at_exit"]},
                         indent=1)[:5000])
        test_torch.check_steps(rep, program)
        test_torch.check_leak(case, rep, program, leaks, held="held_bytes")
        f = leaks[0]
        ev = f["evidence"]
        check(ev["held_bytes"] > 0, f"held nothing at step ends: {ev}")

        # Its site, with frames, among the report's sites.
        sites = {s["id"]: s for s in rep["sites"]}
        check(f["site"] in sites, f"site {f['site']} not in sites")
        s = sites[f["site"]]
        check(s["frames"] and s["leaked"], f"the finding's site: {s}")

        # The holder, found while the function ran.
        root, path = HOLDERS[case]
        held = f["held_by"]
        check(held, "no holder")
        check(held[0]["root"].startswith(root) and
              held[0]["path"].startswith(path),
              f"held by {held[0]['path']!r} ({held[0]['root']!r}), want "
              f"{path}... ({root}...)")
        if root.startswith("local of "):
            function = root[len("local of "):-2]
            check(ev["released"] and ev["released_when"] ==
                  {"function_returned": function},
                  f"released when {function} returned: {ev}")
            text = cli("report", trace).stdout
            check(f"when `{function}` returned" in text,
                  f"the text report says when it was let go:\n{text}")

        # check names the line of a leak that grows.
        if category in test_torch.GROWING and not ev["gc_frees"]:
            p = cli("check", "--max-growth", "0", trace)
            check(p.returncode == 1 and where(f) in p.stdout,
                  f"check: {p.returncode}\n{p.stdout}")

        # diff against a clean run of the same program: a new leak.
        clean = run(CLEAN, config, tmp, "clean")[2]
        p = cli("diff", clean, trace)
        check(p.returncode == 1 and "NEW LEAK" in p.stdout and
              where(f) in p.stdout, f"diff: {p.returncode}\n{p.stdout}")

        # The retained views draw it.
        folded = cli("report", "--format", "folded", trace).stdout
        function = f["location"]["function"]
        check(any(function in line for line in folded.splitlines()),
              f"folded does not show {function}:\n{folded[:2000]}")
        page = cli("report", "--format", "html", trace).stdout
        check(where(f) in page, "the HTML page's findings do not show the "
              "line")
        check(function in flame_labels(page),
              f"the HTML's retained view does not show {function}")
    return "found"


def ranks(config):
    """Two ranks growing at one line: the merged view names it on both."""
    with tempfile.TemporaryDirectory(prefix="lw-released-") as tmp:
        traces, rates = [], []
        for rank in ("0", "1"):
            rep, _, trace = run("torchtitan", config, tmp, "rank" + rank,
                                {"RANK": rank})
            leaks = [f for f in rep["findings"] if f["leak"]]
            check(len(leaks) == 1, f"rank {rank}: {leaks}")
            traces.append(trace)
            rates.append(leaks[0]["evidence"]["bytes_per_step"])
            line = where(leaks[0])
        p = cli("report", *traces)
        view = p.stdout[p.stdout.find("Merged view of 2 traces:"):]
        print(view)
        check(p.returncode == 0 and view, f"report: {p.stderr}")
        check("growing sites common to all traces:" in view,
              f"no common growing site:\n{view}")
        common = view.split("growing sites common to all traces:")[1]
        entry = common.split("\n      at ")
        check(len(entry) > 1 and line in entry[1].split("\n")[0],
              f"the common site is not {line}:\n{view}")
        for rank, rate in zip(("0", "1"), rates):
            check(f"rank {rank} +{rate:.0f} B/step" in entry[0],
                  f"rank {rank}'s rate {rate}:\n{view}")
        check("held at the last step end: 0 B" not in view,
              f"the ranks held nothing?\n{view}")
    return "found on both ranks"


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "ranks" and \
            sys.argv[2] in test_torch.CONFIGS:
        if not os.environ.get("LW_TORCH_PYTHON"):
            print("no PyTorch configured: skipped")
            return SKIP
        try:
            cell = ranks(sys.argv[2])
        except Failure as e:
            print(f"FAIL ranks {sys.argv[2]}: {e}", file=sys.stderr)
            return 1
        print(f"ranks {sys.argv[2]} {cell}")
        return 0
    if len(sys.argv) != 3 or sys.argv[1] not in HOLDERS or \
       sys.argv[2] not in test_torch.CONFIGS:
        print(f"usage: test_released.py CASE CONFIG; cases {sorted(HOLDERS)}",
              file=sys.stderr)
        return 2
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    case, config = sys.argv[1:]
    try:
        cell = test(case, config)
    except Failure as e:
        print(f"FAIL {case} {config}: {e}", file=sys.stderr)
        return 1
    print(f"{case} {config} {cell}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
