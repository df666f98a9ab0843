#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Growth verdicts of gen-trace's step scenarios, and `leakwatch check`.

For each scenario: the run's verdict, the growing site that comes first
(fastest), no "growing" verdict at all in the leak-free controls, the step
series, and the exit status of `leakwatch check` (0 for controls, 1 for
leaks, 2 for unusable input and bad options, 3 for a trace with too few
steps: a gate never passes on nothing).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import fail, failures  # noqa: E402

# scenario: (run verdict, stack id of the first growing site or None,
#            check exit status with --max-growth 0)
LEAKS = {
    "step-linear": ("growing", 3, 1),
    "step-tiny": ("growing", 3, 1),
    "step-sawtooth-rising": ("growing", 3, 1),
    "step-warmup": ("growing", 3, 1),
    "step-long": ("growing", 3, 1),
    # Grows within a phase seen once (a test), a plateau over the run.
    "step-phase-leak": ("growing", 3, 1),
}
CONTROLS = {
    "step-sawtooth-flat": ("sawtooth-flat", None, 0),
    "step-plateau": ("plateau", None, 0),
    "step-lazy-optimizer": ("stable", None, 0),
    "step-grad-accum": ("sawtooth-flat", None, 0),
    "step-eval": ("stable", None, 0),
    "step-cache-fill": (None, None, 0),  # stable or plateau
    # The same growth in a phase seen 5 times, released at each end.
    "step-phase-epochs": ("sawtooth-flat", None, 0),
    "step-few": ("not-enough-steps", None, 3),
    "leak-loop": ("growing", 3, 1),  # an older scenario: 4 KiB per step
    "no-leak": ("not-enough-steps", None, 3),  # 4 steps
    "kinds": ("not-enough-steps", None, 3),  # no steps marked
}


def run(argv, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEAKWATCH_")}
    return subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=60)


def check_scenario(lw, tmp, name, expected, leak):
    verdict, top_id, status = expected
    trace = name + ".trace"
    r = run([lw, "report", "--format", "json", trace], tmp)
    if r.returncode != 0:
        fail(f"{name}: report exit {r.returncode}: {r.stderr!r}")
        return
    d = json.loads(r.stdout)
    if verdict is not None and d["verdict"] != verdict:
        fail(f"{name}: run verdict {d['verdict']}, expected {verdict}")
    if verdict is None and d["verdict"] not in ("stable", "plateau"):
        fail(f"{name}: run verdict {d['verdict']}, expected stable or plateau")
    growing = [s for s in d["sites"] if s["verdict"] == "growing"]
    growing.sort(key=lambda s: -s["growth_bytes_per_step"])
    if leak:
        if not growing or growing[0]["id"] != top_id:
            fail(f"{name}: first growing site {growing[:1]}, expected id {top_id}")
        elif growing[0]["growth_bytes_per_step"] <= 0:
            fail(f"{name}: growing site with rate {growing[0]['growth_bytes_per_step']}")
        if len(growing) != 1:
            fail(f"{name}: {len(growing)} growing sites, expected 1")
    elif growing:
        fail(f"{name}: control has growing sites {[s['id'] for s in growing]}")
    for s in d["sites"]:
        for k in ("growth_bytes_per_step", "growth_count_per_step", "verdict"):
            if k not in s:
                fail(f"{name}: site without {k}")
        keys = list(s)
        at = keys.index("growth_bytes_per_step")
        if keys[at - 1:at + 3] != ["live_count_at_end", "growth_bytes_per_step",
                                   "growth_count_per_step", "verdict"]:
            fail(f"{name}: growth fields not after live_count_at_end: {keys}")
    growth_keys = ["step_series", "step_series_stride",
                   "growth_bytes_per_step", "verdict", "min_steps"]
    keys = list(d)
    at = keys.index("step_series") if "step_series" in keys else -1
    if at < 0 or keys[at:at + 5] != growth_keys or \
       keys.index("program_end") > at:
        fail(f"{name}: growth fields out of place: {keys}")
    # The series: one point per step (or per stride), in order.
    series, stride = d["step_series"], d["step_series_stride"]
    if d["steps"] and not series:
        fail(f"{name}: no step series")
    steps = [p["step"] for p in series]
    if steps != [stride * (i + 1) for i in range(len(series))]:
        fail(f"{name}: series steps {steps[:5]}... stride {stride}")
    if len(series) > 8192:
        fail(f"{name}: {len(series)} points")
    for p in series:
        if p["peak_bytes"] < p["live_bytes"]:
            fail(f"{name}: peak below live at step {p['step']}")
            break
    if series and series[-1]["step"] == d["steps"]:
        if series[-1]["live_bytes"] != d["live_bytes_at_end"] and name != "kinds":
            pass  # frees after the last step are allowed
    r = run([lw, "check", "--max-growth", "0", trace], tmp)
    if r.returncode != status:
        fail(f"{name}: check exit {r.returncode}, expected {status}: {r.stdout!r} {r.stderr!r}")
    if status == 1:
        out = r.stdout.decode()
        if "GROWING" not in out or "per 10,000 steps" not in out or "    at " not in out:
            fail(f"{name}: check output lacks the site: {out!r}")
        if out.count("\n") > 24:
            fail(f"{name}: check output longer than a screen")
    if "not-enough-steps" == verdict:
        out = r.stdout.decode()
        if "cannot judge" not in out or "leakwatch.step()" not in out \
           or out.count("\n") != 1:
            fail(f"{name}: check does not say in one line why it cannot judge: {out!r}")
        # Every gate: no steps to judge a peak or a kind by either.
        for argv in (["--max-peak", "1TiB"], ["--fail-on", "all"],
                     ["--max-growth", "1TiB", "--max-peak", "1TiB"]):
            r = run([lw, "check"] + argv + [trace], tmp)
            if r.returncode != 3 or b"cannot judge" not in r.stdout:
                fail(f"{name}: check {argv}: exit {r.returncode}, expected 3: {r.stdout!r}")
    # Only growth that goes on is extrapolated (a plateau stopped).
    r = run([lw, "report", trace], tmp)
    growth = [line for line in r.stdout.decode().splitlines()
              if line.startswith("Growth:")]
    if growth and ("per 10,000 steps" in growth[0]) != (d["verdict"] == "growing"):
        fail(f"{name}: {d['verdict']} run's growth line: {growth[0]!r}")
    # A generous limit lets every leak pass but... the 1 MiB/step ones.
    r = run([lw, "check", "--max-growth", "2MiB", trace], tmp)
    if r.returncode != (3 if verdict == "not-enough-steps" else 0):
        fail(f"{name}: check --max-growth 2MiB exit {r.returncode}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch", required=True)
    p.add_argument("--gen", required=True)
    args = p.parse_args()
    lw = os.path.abspath(args.leakwatch)
    with tempfile.TemporaryDirectory(prefix="lw-growth-") as tmp:
        for name in list(LEAKS) + list(CONTROLS):
            subprocess.run([args.gen, name, os.path.join(tmp, name + ".trace")],
                           check=True)
        for name, exp in LEAKS.items():
            check_scenario(lw, tmp, name, exp, True)
        for name, exp in CONTROLS.items():
            check_scenario(lw, tmp, name, exp, False if exp[1] is None else True)

        # The limit is per step: 512 B/step passes 512B, fails 511.
        for limit, status in (("512B", 0), ("511", 1), ("1KiB", 0)):
            r = run([lw, "check", "--max-growth", limit, "step-tiny.trace"], tmp)
            if r.returncode != status:
                fail(f"step-tiny --max-growth {limit}: exit {r.returncode}, expected {status}")
        # --min-steps: 5 steps can be judged with --min-steps 5... too few
        # points after the warm-up, still; 300 makes every scenario unjudged.
        r = run([lw, "check", "--max-growth", "0", "--min-steps", "300",
                 "step-linear.trace"], tmp)
        if r.returncode != 3 or b"at least 300 needed" not in r.stdout:
            fail(f"--min-steps 300: exit {r.returncode} {r.stdout!r}")
        r = run([lw, "report", "--min-steps", "300", "--format", "json",
                 "step-linear.trace"], tmp)
        if r.returncode != 0 or json.loads(r.stdout)["verdict"] != "not-enough-steps":
            fail(f"report --min-steps 300: {r.returncode} {r.stdout[-200:]!r}")
        # --max-peak: the highest step peak of the series; the limit
        # at it passes, a byte under fails, naming the peak and its step.
        d = json.loads(run([lw, "report", "--format", "json",
                            "step-eval.trace"], tmp).stdout)
        top = max(d["step_series"], key=lambda p: p["peak_bytes"])
        for limit, status in ((top["peak_bytes"], 0), (top["peak_bytes"] - 1, 1)):
            r = run([lw, "check", "--max-peak", str(limit), "step-eval.trace"], tmp)
            out = r.stdout.decode()
            if r.returncode != status:
                fail(f"--max-peak {limit}: exit {r.returncode}, expected {status}: {out!r}")
            if status and (f"at step {top['step']}" not in out
                           or "(--max-peak)" not in out or "FAIL" not in out):
                fail(f"--max-peak {limit}: failure line without figures: {out!r}")
        # No PyTorch pool: a reserved limit cannot judge it.
        for opt in ("--max-reserved-peak", "--max-reserved-growth"):
            r = run([lw, "check", opt, "1TiB", "step-eval.trace"], tmp)
            if r.returncode != 3 or opt.encode() not in r.stdout:
                fail(f"{opt} without PyTorch: exit {r.returncode}: {r.stdout!r}")
        # --fail-on: the diagnosed leak of step-linear by its kind and
        # confidence; step-eval has none. Several limits: each judged.
        for argv, status in ((["--fail-on", "all"], 1),
                             (["--fail-on", "growth"], 1),
                             (["--fail-on", "low"], 1),
                             (["--fail-on", "high"], 0),
                             (["--fail-on", "metric-copy"], 0),
                             (["--fail-on", "metric-copy,growth"], 1),
                             (["--max-growth", "2MiB", "--fail-on", "all"], 1),
                             (["--max-growth", "2MiB", "--max-peak", "1TiB"], 0)):
            r = run([lw, "check"] + argv + ["step-linear.trace"], tmp)
            out = r.stdout.decode()
            if r.returncode != status:
                fail(f"step-linear {argv}: exit {r.returncode}, expected {status}: {out!r}")
            if status and "--fail-on" in argv and \
               f"FAIL: growth (low confidence) at " not in out:
                fail(f"step-linear {argv}: failure line: {out!r}")
        r = run([lw, "check", "--fail-on", "all", "step-eval.trace"], tmp)
        if r.returncode != 0:
            fail(f"step-eval --fail-on all: exit {r.returncode}: {r.stdout!r}")
        # The gate's verdict and its site list agree: blocks made once in
        # the first steps are no growth; growth spread over sites that each
        # keep one block (a new one every step) is, said as such.
        for name in ("step-one-time", "step-new-site"):
            subprocess.run([args.gen, name, os.path.join(tmp, name + ".trace")],
                           check=True)
        r = run([lw, "check", "--max-growth", "0", "step-one-time.trace"], tmp)
        if r.returncode != 0 or b"ok: " not in r.stdout:
            fail(f"step-one-time: exit {r.returncode}: {r.stdout!r}")
        r = run([lw, "check", "--max-growth", "0", "step-new-site.trace"], tmp)
        out = r.stdout.decode()
        if r.returncode != 1 or "+4.0 KiB per step" not in out or \
           "at no single site" not in out or "0 sites" in out:
            fail(f"step-new-site: exit {r.returncode}: {out!r}")
        r = run([lw, "check", "--max-growth", "8KiB", "step-new-site.trace"], tmp)
        if r.returncode != 0:
            fail(f"step-new-site within 8KiB: exit {r.returncode}: {r.stdout!r}")
        # Several traces: 1 if any grows, 2 if any is unusable.
        r = run([lw, "check", "--max-growth", "0", "step-eval.trace",
                 "step-linear.trace"], tmp)
        if r.returncode != 1:
            fail(f"two traces, one growing: exit {r.returncode}")
        with open(os.path.join(tmp, "bad.trace"), "wb") as f:
            f.write(b"not a trace at all, no")
        bad_input = [
            ["check", "--max-growth", "0", "missing.trace"],
            ["check", "--max-growth", "0", "bad.trace"],
            ["check", "--max-growth", "0", "step-linear.trace", "bad.trace"],
        ]
        bad_options = [
            ["check", "step-linear.trace"],
            ["check", "--max-growth", "0"],
            ["check", "--max-growth", "-1", "step-linear.trace"],
            ["check", "--max-growth", "1.5", "step-linear.trace"],
            ["check", "--max-growth", "10 MB", "step-linear.trace"],
            ["check", "--max-growth", "1XB", "step-linear.trace"],
            ["check", "--max-growth", "99999999999999999999", "step-linear.trace"],
            ["check", "--max-growth", "0", "--min-steps", "0", "step-linear.trace"],
            ["check", "--max-growth", "0", "--min-steps", "x", "step-linear.trace"],
            ["check", "--max-growth", "0", "--bogus", "step-linear.trace"],
            ["check", "--max-growth"],
            ["check", "--max-peak", "banana", "step-linear.trace"],
            ["check", "--max-reserved-peak", "-1", "step-linear.trace"],
            ["check", "--max-reserved-growth", "1XB", "step-linear.trace"],
            ["check", "--fail-on", "nosuchkind", "step-linear.trace"],
            ["check", "--fail-on", "metric-copy,nosuchkind", "step-linear.trace"],
            ["check", "--fail-on", ",", "step-linear.trace"],
            ["check", "--min-steps", "5", "step-linear.trace"],
            ["report", "--min-steps", "0", "step-linear.trace"],
        ]
        for argv in bad_input + bad_options:
            r = run([lw] + argv, tmp)
            if r.returncode != 2:
                fail(f"{argv}: exit {r.returncode}, expected 2")
            if r.stderr.count(b"\n") < 1 or not r.stderr.startswith(b"leakwatch: "):
                fail(f"{argv}: no error line: {r.stderr!r}")
            if argv in bad_options and r.stderr.count(b"\n") != 1:
                fail(f"{argv}: more than one error line: {r.stderr!r}")
        # The error names the bad value, and for a kind, the known kinds.
        r = run([lw, "check", "--fail-on", "nosuchkind", "step-linear.trace"], tmp)
        if b"'nosuchkind'" not in r.stderr or b"metric-copy" not in r.stderr:
            fail(f"--fail-on nosuchkind: {r.stderr!r}")
        r = run([lw, "check", "--max-peak", "banana", "step-linear.trace"], tmp)
        if b"--max-peak" not in r.stderr or b"'banana'" not in r.stderr:
            fail(f"--max-peak banana: {r.stderr!r}")
        for argv in (["check", "--help"], ["help", "check"]):
            r = run([lw] + argv, tmp)
            if r.returncode != 0 or b"--max-growth SIZE" not in r.stdout \
               or b"--fail-on KINDS" not in r.stdout \
               or b"never passes on nothing" not in r.stdout:
                fail(f"{argv}: {r.returncode} {r.stdout[:200]!r}")
        r = run([lw, "--help"], tmp)
        if b"leakwatch check" not in r.stdout:
            fail("--help does not mention check")
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
