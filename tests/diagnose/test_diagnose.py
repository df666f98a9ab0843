# SPDX-License-Identifier: MIT
"""The diagnosis of the seed cases: scenario scripts (scenarios/) that
reproduce each reported leak with tinytensor run under the shim, and
`leakwatch report` must name the right kind of leak, the right Python line
first and the right fix; the leak-free controls must get no leak verdict.

    test_diagnose.py CASE [INTERPRETER]

INTERPRETER is a path, or "default" (this script's own interpreter); a
missing one skips (77). Reports are read with --rules tinytensor.rules,
which says of tinytensor's frames what data/rules.conf says of PyTorch's.

Environment (tests/diagnose/meson.build): LW_LIB, LW_CLI, LW_TINYTENSOR,
LW_TINYTENSOR_PY, LW_PYTHON_DIR, LW_FAKETORCH.
"""
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from lwtest import (CLI, SKIP, Run, check, check_eq, main,  # noqa: E402
                    markers, report, same_file)

SCENARIOS = os.path.join(HERE, "scenarios")
RULES = os.path.join(HERE, "tinytensor.rules")


def interpreter():
    arg = sys.argv[2] if len(sys.argv) > 2 else "default"
    path = sys.executable if arg == "default" else arg
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        print(f"skip: no interpreter {path}")
        return None
    return path


class Scenario(object):
    def __init__(self, py, name, args, extra=()):
        self.script = os.path.join(SCENARIOS, name + ".py")
        self.lines = markers(self.script)
        site_dir = os.path.join(tempfile.mkdtemp(prefix="lw-diagnose-"),
                                "site-packages")
        os.mkdir(site_dir)
        shutil.copy(os.environ["LW_TINYTENSOR_PY"], site_dir)
        self.run = Run([py, "-E", "-s", self.script, *args],
                       env={"TINYTENSOR_SITE": site_dir,
                            "LW_TINYTENSOR": os.environ["LW_TINYTENSOR"],
                            "LW_PYTHON_DIR": os.environ["LW_PYTHON_DIR"],
                            "LW_FAKETORCH": os.environ["LW_FAKETORCH"],
                            "LEAKWATCH_QUIET": "1"})
        self.run.expect_ok()
        self.extra = ["--rules", RULES, *extra]
        self.rep = report(self.run.trace(), extra=self.extra)

    def text(self):
        return report(self.run.trace(), fmt="text", extra=self.extra)

    def leaks(self):
        return [f for f in self.rep["findings"]
                if f["leak"] and not f["suppressed"]]

    def describe(self):
        return "; ".join(
            f"{f['category']}/{f['confidence']} at "
            f"{(f['location'] or {}).get('function')}:"
            f"{(f['location'] or {}).get('line')}"
            f"{' held by ' + f['held_by'][0]['path'] if f['held_by'] else ''}"
            for f in self.rep["findings"])

    def check_one_leak(self, category, marker, fix_words):
        """Exactly one leak: of this category, led by the scenario's line
        `# @marker`, with a fix that says fix_words."""
        leaks = self.leaks()
        check(len(leaks) == 1, f"one leak expected; findings: {self.describe()}")
        f = leaks[0]
        check_eq(f["category"], category, "the finding's category")
        loc = f["location"] or {}
        check(loc.get("python") is True and
              same_file(loc.get("file"), self.script) and
              loc.get("line") == self.lines[marker],
              f"the finding's line: {loc}, expected {self.script}:"
              f"{self.lines[marker]}")
        for word in fix_words:
            check(word in f["fix"], f"the fix says {word!r}: {f['fix']}")
        lead = [s for s in self.rep["sites"]
                if s["id"] == f["site"] and s["kind"] == f["kind"]]
        for s in lead:
            check_eq((s["category"], s["fix"]), (category, f["fix"]),
                     "the lead site's category and fix")
        # The text report leads the finding with the same line.
        text = self.text()
        want = f"{os.path.basename(self.script)}:{self.lines[marker]}"
        check(f"{category} (" in text and want in text,
              f"the text report names {category} at {want}:\n{text}")
        return f

    def check_no_leak(self):
        check_eq(self.leaks(), [], "leak findings of a control")
        for s in self.rep["sites"]:
            check(s["category"] in (None, "not-a-leak"),
                  f"a control's site has category {s['category']}")


def case(name, args, body, extra=()):
    def run():
        py = interpreter()
        if not py:
            return SKIP
        body(Scenario(py, name, args, extra))
    return run


def composer_gc(sc):
    f = sc.check_one_leak("metric-copy", "deepcopy", ["deepcopy"])
    ev = f["evidence"]
    check(sc.rep["gc_passes"] > 0 and ev["gc_frees"] > 0 and
          ev["gc_frees"] * 2 >= ev["frees"],
          f"frees inside GC passes: {ev}, {sc.rep['gc_passes']} passes")


def composer_nogc(sc):
    f = sc.check_one_leak("metric-copy", "deepcopy", ["deepcopy"])
    check(f["evidence"]["count_per_step"] >= 3.5 and
          f["evidence"]["gc_frees"] == 0, f"growth, no GC: {f['evidence']}")


def espnet(sc):
    f = sc.check_one_leak("lingering-previous-step", "gradbuf",
                          ["del loss", "retval = None"])
    ev = f["evidence"]
    check(ev["lingering_bytes"] == 32 * 1024 * 4 and
          ev["lingering_steps"] >= sc.rep["steps"] - 2,
          f"a gradient buffer at every step's peak: {ev}")
    check_eq(sc.rep["step_source"], "optimizer", "step source")


def torchtitan_off(sc):
    f = sc.check_one_leak("retained-loss", "loss", [".item()", ".detach()"])
    # No steps marked, no loop-shaped optimizer: the shim finds the loop.
    check_eq(sc.rep["step_source"], "loop", "step source")
    check(f["evidence"]["count_per_step"] > 0.9, f"count growth: {f}")


def torchtitan_interval(sc):
    # Drained at every log step, every 50 steps: the losses kept in
    # between are released in batches and do not grow from one interval
    # to the next, so this is no leak (the same list never drained is:
    # torchtitan).
    sc.check_no_leak()
    check(sc.rep["verdict"] != "growing",
          f"the run's verdict: {sc.rep['verdict']}")


def simpletuner(sc):
    f = sc.check_one_leak("unreleased-module", "load",
                          ["last reference", "gc.collect()",
                           "torch.cuda.empty_cache()"])
    check_eq(f["phase"], "encode prompts", "the phase")
    check(f["evidence"]["phase_bytes"] >= 1024 * 1024, f"{f['evidence']}")


def eval_grad(sc):
    f = sc.check_one_leak("retained-graph", "forward", ["torch.no_grad()"])
    check(f["evidence"]["sites"] >= 3, f"sites of the graph: {f}")


def control(sc):
    sc.check_no_leak()


def control_workspace(sc):
    # No finding: nothing grows. The workspace's site is named as such,
    # in the JSON and in the text report's live section.
    sc.check_no_leak()
    check(sc.rep["findings"] == [], f"findings: {sc.describe()}")
    check(any(s["category"] == "not-a-leak" and s["live_bytes"]
              for s in sc.rep["sites"]),
          "the workspace's site is named as such")
    check("(not a leak: a library workspace" in sc.text(),
          "the text report's live section says the workspace is no leak")


def suppressed(sc):
    check_eq(sc.leaks(), [], "unsuppressed leaks")
    check_eq(sc.rep["suppressed_findings"], 1, "suppressed findings")
    check("1 suppressed" in sc.text(), "the text report counts it")


def bad_rules():
    with tempfile.NamedTemporaryFile("w", suffix=".rules") as f:
        f.write("tag forward x\n")
        f.flush()
        proc = subprocess.run([CLI, "report", "--rules", f.name, "/dev/null"],
                              capture_output=True, text=True, timeout=60)
    check_eq(proc.returncode, 2, "exit status")
    lines = proc.stderr.strip().splitlines()
    check(len(lines) == 1 and f.name in lines[0] and "line 1" in lines[0],
          f"one line naming the file and line: {proc.stderr!r}")


def suppressions_file():
    path = os.path.join(tempfile.mkdtemp(prefix="lw-supp-"), "supp.txt")
    with open(path, "w") as f:
        f.write("# the known list of losses\nleak:torchtitan.py\n")
    return path


CASES = {
    "composer-gc": case("composer", ["on", "300"], composer_gc),
    "composer-nogc": case("composer", ["off", "100"], composer_nogc),
    "espnet": case("espnet", ["40"], espnet),
    "torchtitan-off": case("torchtitan", ["off", "200"], torchtitan_off),
    "torchtitan-interval": case("torchtitan", ["every", "50", "200"],
                                torchtitan_interval),
    "simpletuner": case("simpletuner", ["30"], simpletuner),
    "eval-grad": case("eval_grad", ["40"], eval_grad),
    "control-optimizer-state": case("controls", ["optimizer-state", "60"],
                                    control),
    "control-grad-accumulation": case("controls", ["grad-accumulation", "40"],
                                      control),
    "control-eval-no-grad": case("controls", ["eval-no-grad", "60"], control),
    "control-cache": case("controls", ["cache", "60"], control),
    "control-workspace": case("controls", ["workspace", "60"],
                              control_workspace),
    "suppressions": lambda: case("torchtitan", ["off", "200"], suppressed,
                                 ["--suppressions", suppressions_file()])(),
    "bad-rules": bad_rules,
}

if __name__ == "__main__":
    sys.exit(main(CASES))
