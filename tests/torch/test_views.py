#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The views of a Python program's report, on real PyTorch: eval_graph.py
(an evaluation that keeps its graphs) under `fakegpu.sh leakwatch run`.

Checks that the line that leaks through several framework paths (the
evaluation's) is one entry in every view: one finding, one location in the
JSON with its sites' growth summed, once in the text report's growth and
live lists, once among the HTML page's growth lines, once in the GitHub
annotations and once in a diff. And that by default
  - the text report's stacks hold no frame of the interpreter (the frames of
    the module that holds CPython's evaluation loop, found from the JSON
    report's full stacks), folded into "... N interpreter frames" lines,
    and that --native brings them back;
  - folded stacks (flame graphs) start at the user's script;
  - the HTML page holds no interpreter frame either (--native: it does),
    opens with the verdict and the findings (each with its evidence and
    fix) before the charts, the phases and the stacks, and its icicle
    starts at the user's script;
  - each run of the framework's native frames (PyTorch's dispatcher and
    allocator) is one line naming the operator in the text report, one
    node in the icicle and one frame in the folded stacks, and in the JSON
    every frame of it is marked with that name ("folded"); --native brings
    the frames back; Python frames are never cut by --frames, in the text
    report nor in the HTML finding's breakdown by site.
With chromium installed it takes a screenshot of the page (the file named by
--screenshot). Environment as for test_torch.py."""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import conclude  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = "eval_graph.py"
FRAME_LEAD = "       "


def leaking_line():
    with open(os.path.join(HERE, SCRIPT)) as f:
        return next(n for n, text in enumerate(f, 1) if "the leak" in text)


def report(tmp, trace, *args, command="report"):
    r = subprocess.run([os.environ["LW_CLI"], command, *args, trace],
                       cwd=tmp, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: leakwatch report {' '.join(args)} exited "
                         f"{r.returncode}: {r.stderr}")
    return r.stdout


def text_frames(text):
    """The function of every stack frame line of a text report."""
    return [line.strip().split("  ")[0] for line in text.splitlines()
            if line.startswith(FRAME_LEAD) and
            not line.strip().startswith("...")]


def interpreter_functions(doc):
    """The functions of the module that holds the evaluation loop."""
    frames = [f for s in doc["sites"] for f in s["frames"]
              if not f["python"]]
    modules = {f["module"] for f in frames
               if (f.get("function") or "").startswith("_PyEval_EvalFrame")}
    return {f["function"] for f in frames
            if f["module"] in modules and f.get("function")}


def framework_functions(doc):
    """The functions of the frames the JSON marks as a framework run's."""
    return {f["function"] for s in doc["sites"] for f in s["frames"]
            if f["folded"] not in (None, "interpreter", "start-up") and
            f.get("function")}


def flame_labels(node):
    return [node["n"]] + [x for c in node["c"] for x in flame_labels(c)]


def has_python(node):
    return ".py:" in node["n"] or any(has_python(c) for c in node["c"])


def screenshot(page, shot):
    for name in ("chromium", "chromium-browser", "google-chrome"):
        chrome = shutil.which(name)
        if chrome:
            break
    else:
        print("chromium is not installed: no screenshot")
        return
    with tempfile.TemporaryDirectory() as profile:
        subprocess.run([chrome, "--headless", "--no-sandbox", "--disable-gpu",
                        "--no-first-run", "--hide-scrollbars",
                        "--user-data-dir=" + profile,
                        "--virtual-time-budget=10000",
                        "--screenshot=" + shot, "--window-size=1280,900",
                        "file://" + page], capture_output=True, timeout=120)
    print("screenshot:", shot)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--screenshot", default="torch-report.png")
    args = ap.parse_args()
    python = os.environ.get("LW_TORCH_PYTHON", "")
    if not python:
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))}
    env["LEAKWATCH_LIB"] = os.environ["LW_LIB"]
    env["LEAKWATCH_BUILD"] = os.environ["LEAKWATCH_BUILD"]
    if os.environ.get("LW_TRACE_DETAIL"):  # meson test --setup full
        env["LEAKWATCH_TRACE_DETAIL"] = os.environ["LW_TRACE_DETAIL"]
    failures = []
    with tempfile.TemporaryDirectory(prefix="lw-views-") as tmp:
        shutil.copy(os.path.join(HERE, SCRIPT), tmp)
        trace = os.path.join(tmp, "eval.trace")
        r = subprocess.run([os.environ["LW_FAKEGPU"], os.environ["LW_CLI"],
                            "run", "--no-report", "--trace", trace, "--",
                            python, SCRIPT], cwd=tmp, env=env,
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0 or "done" not in r.stdout:
            print(r.stdout, r.stderr[-3000:])
            print(f"FAIL: {SCRIPT} exited {r.returncode}")
            return 1
        doc = json.loads(report(tmp, trace, "--format", "json"))
        interp = interpreter_functions(doc)
        print(f"{len(interp)} interpreter functions in the stacks")
        if len(interp) < 5:
            failures.append(f"only {len(interp)} interpreter functions in "
                            "the JSON stacks: the scenario shows nothing")

        line = leaking_line()
        here = f"<module>  {SCRIPT}:{line}"
        loc = [x for x in doc["locations"] if x["location"] and
               x["location"]["line"] == line and x["kind"] == "device"]
        at_line = [x for x in doc["sites"] if x["location"] and
                   x["location"]["line"] == line and x["kind"] == "device"]
        leaks = [f for f in doc["findings"] if f["leak"]]
        print(f"line {line}: {len(at_line)} sites, locations {loc}")
        if len(at_line) < 2:
            failures.append(f"line {line} has {len(at_line)} site(s): the "
                            "scenario no longer leaks through several paths")
        if len(loc) != 1 or sorted(loc[0]["sites"]) != \
                sorted(x["id"] for x in at_line):
            failures.append(f"JSON locations: not one entry holding line "
                            f"{line}'s sites: {loc}")
        elif abs(loc[0]["growth_bytes_per_step"] -
                 sum(x["growth_bytes_per_step"] for x in at_line)) > 1:
            failures.append("the location's growth is not its sites' sum")
        if len(leaks) != 1 or leaks[0]["location"]["line"] != line:
            failures.append(f"findings: want one leak at line {line}, got "
                            f"{[(f['category'], f['location']) for f in leaks]}")

        text = report(tmp, trace, "--top", "0", "--frames", "0")
        growth = text.split("\nGrowth:")[1].split("\n\n")[0] + "\n" \
            if "\nGrowth:" in text else ""
        live = text.split("by site (largest first):")[1] \
            if "by site (largest first):" in text else ""
        for name, section in (("growth", growth), ("live", live)):
            n = section.count("    at " + here + "\n")
            if n != 1:
                failures.append(f"text {name} section shows line {line} "
                                f"{n} times, not once")
        if not re.search(r"from \d+ sites", growth + live):
            failures.append("text does not say how many sites a line holds")
        with_sites = report(tmp, trace, "--top", "0", "--sites")
        if with_sites.count("    at " + here + "\n") <= \
                text.count("    at " + here + "\n"):
            failures.append("--sites does not show each site of the line")
        github = report(tmp, trace, "--format", "github")
        n = github.count(f"file={SCRIPT},line={line},")
        if n != 1:
            failures.append(f"{n} GitHub annotations on line {line}, not 1")
        diff = report(tmp, trace, trace, command="diff")
        n = diff.count(f"at <module> ({SCRIPT}:{line})")
        if n != 1:
            failures.append(f"the diff shows line {line} {n} times, not once")
        shown = set(text_frames(text)) & interp
        if shown:
            failures.append(f"default text shows interpreter frames: "
                            f"{sorted(shown)[:5]}")
        if not re.search(r"^ {7}\.\.\. \d+ interpreter frames?$", text, re.M):
            failures.append("default text has no folded-frames line")
        for want in ("<module>  " + SCRIPT + ":", "Sequential.forward"):
            if want not in text:
                failures.append(f"default text lost the Python frame {want!r}")
        if re.search(r"/Python-3[^ ]*/(Python|Objects|Modules)/", text):
            failures.append("default text shows the interpreter's build tree")
        native = report(tmp, trace, "--top", "0", "--frames", "0", "--native")
        back = set(text_frames(native)) & interp
        if len(back) < 5:
            failures.append(f"--native shows {len(back)} interpreter "
                            "functions, not all of them")

        # The framework's frames: one line per operator, marked in JSON.
        fw = framework_functions(doc)
        print(f"{len(fw)} framework functions in the stacks")
        if not any(f.startswith("at::_ops::") for f in fw) or \
                not any("wrap_kernel_functor_unboxed_" in f for f in fw):
            failures.append("the JSON marks no dispatcher frame as folded: "
                            f"{sorted(fw)[:5]}")
        ops = {f["folded"] for x in doc["sites"] for f in x["frames"]
               if f["folded"] not in (None, "interpreter", "start-up")}
        if not any(op.startswith("aten::") for op in ops):
            failures.append(f"no framework run named by an operator: {ops}")
        shown = set(text_frames(text)) & fw
        if shown:
            failures.append(f"default text shows the framework's frames: "
                            f"{sorted(shown)[:3]}")
        if not re.search(r"^ {7}(\w+: )?aten::\w+  \(\d+ framework frames?\)$",
                         text, re.M):
            failures.append("default text has no operator line")
        if not any("wrap_kernel_functor_unboxed_" in f or
                   f.startswith("at::_ops::") for f in text_frames(native)):
            failures.append("--native does not show the framework's frames")
        # Python frames are never cut: with the default --frames and every
        # native frame, each stack still reaches the script.
        cut = report(tmp, trace, "--top", "0", "--native")
        cut = cut.split("by site (largest first):")[-1]
        for block in cut.split("\n  #")[1:]:
            if "eval_graph.py" in block and \
                    f"<module>  {SCRIPT}:" not in block.split("\n", 2)[2]:
                failures.append("--native with the default --frames cut "
                                "a stack's Python frames: " +
                                block.splitlines()[0])
                break
        folded_all = report(tmp, trace, "--format", "folded")
        if ";aten::" not in folded_all or any(
                f in folded_all for f in fw if len(f) >= 20):
            failures.append("folded stacks do not name the operators, or "
                            "show the framework's frames")

        # Stacks with Python frames; those of autograd's native thread
        # have none, and start where that thread starts.
        folded = [line for line in
                  report(tmp, trace, "--format", "folded").splitlines()
                  if ".py:" in line]
        wrong = [line for line in folded
                 if not line.startswith(f"<module> ({SCRIPT}:")]
        if not folded or wrong:
            failures.append("a folded stack does not start at the script: " +
                            (wrong[0][:120] if wrong else "(none)"))

        page = os.path.join(tmp, "report.html")
        report(tmp, trace, "--format", "html", "-o", page)
        with open(page, encoding="utf-8") as f:
            html = f.read()
        # Long names only: short ones could be words of the page itself.
        named = sorted(name for name in interp if len(name) >= 10)
        leaked = [name for name in named if name in html]
        if leaked:
            failures.append(f"the HTML page shows interpreter frames: "
                            f"{leaked[:5]}")
        # The finding's line expands to each of its sites.
        breakdown = re.findall(r'<details class="lw-breakdown">(.*?)</details>',
                               html, re.S)
        ids = [sorted(int(x) for x in re.findall(r'data-lw-site="(\d+)"', b))
               for b in breakdown]
        if ids != [sorted(x["id"] for x in at_line)]:
            failures.append(f"the HTML finding does not expand to line "
                            f"{line}'s sites {[x['id'] for x in at_line]}: "
                            f"{ids}")
        report(tmp, trace, "--format", "html", "--native", "-o",
               page + ".native")
        with open(page + ".native", encoding="utf-8") as f:
            native_html = f.read()
        if not any(name in native_html for name in named):
            failures.append("--native HTML lacks the interpreter frames")
        stacks = re.findall(r'<ol class="lw-stack">(.*?)</ol>', native_html,
                            re.S)
        if not stacks or not all(f"&lt;module&gt; ({SCRIPT}:" in x
                                 for x in stacks):
            failures.append("a --native breakdown's stack lost its Python "
                            "frames")
        order = [html.find(f'class="{c}"') for c in
                 ("lw-verdict", "lw-findings", "lw-evidence", "lw-fix",
                  "lw-memory", "lw-sites", "lw-flame", "lw-summary")]
        if -1 in order or order != sorted(order):
            failures.append(f"the page's order is not verdict, findings "
                            f"(evidence, fix), charts, stacks: {order}")
        data = re.search(r'<script type="application/json" class="lw-data">'
                         r'(.*?)</script>', html, re.S)
        data = json.loads(data.group(1)) if data else {"flame": {"c": []},
                                                        "sites": []}
        labels = [x["label"] for x in data["sites"]]
        if len(labels) != len(set(labels)) or \
                labels.count(f"<module> ({SCRIPT}:{line})") != 1:
            failures.append(f"the growth chart's lines repeat a location: "
                            f"{labels}")
        flame = data["flame"]
        names = flame_labels(flame)
        if not any(n.startswith("aten::") or ": aten::" in n
                   for n in names) or any(n in fw for n in names):
            failures.append("the icicle does not fold the framework's "
                            "frames into operators")
        tops = [c["n"] for c in flame["c"] if has_python(c)]
        if not tops or not all(n.startswith(f"<module> ({SCRIPT}:")
                                for n in tops):
            failures.append(f"the icicle starts at {tops[:3]}, not at "
                            "the script")
        screenshot(page, os.path.abspath(args.screenshot))
    return conclude(failures)


if __name__ == "__main__":
    sys.exit(main())
