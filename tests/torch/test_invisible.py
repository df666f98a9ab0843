#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The program cannot tell it is watched: a case of invisible.py (a
training loop that leaks, so that leakwatch searches for the holder while
it runs, and that does one thing a search could disturb) runs on the
stand-in GPU twice, without leakwatch and under `leakwatch run`, and must
print the same, exit the same, and see nothing of the search:

  sigint              Ctrl-C during a search stops the program, at the step
                      it would stop at without leakwatch
  sigterm             a SIGTERM handler's sys.exit() during a search exits
  sigalrm             every exception a SIGALRM handler raises reaches the
                      program
  deadlock            no __del__ runs inside a search (one that takes a lock
                      the program holds would hang it)
  collector           the collector runs when it would: gc.get_count(), its
                      collections and memory_allocated() after every step
  saved_tensors       saved-tensor hooks: packs and unpacks as without
  patched             the program's patched functions (time.perf_counter,
                      os.path.exists, os.listdir) called as often
  threads_gc          another thread never sees the collector turned off
  threads_gc_disable  another thread's gc.disable() is not undone
  threads_warnings    warnings.catch_warnings() in another thread does not
                      leave warnings silenced
  fork                a child forked during a search has its collector on
  warn_once           a once-per-location warning is shown once
  setprofile          sys.setprofile sees no function of leakwatch's
  cprofile            cProfile sees no function of leakwatch's

Each case also needs a search during the run to have happened (the JSON
report's info holder_searches_in_run), or it proves nothing. When a case
differs, it is run once more with LEAKWATCH_HOLDERS=0, to tell whether the
search made the difference.

Usage: test_invisible.py CASE. Environment as for test_torch.py."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import conclude  # noqa: E402

SKIP = 77
HERE = os.path.dirname(os.path.abspath(__file__))
PROGRAM = os.path.join(HERE, "invisible.py")
# A line that has grown for MIN_STEPS steps (LEAKWATCH_MIN_STEPS) gets its
# holder searched for: the leak's first high is at the end of step 1 (the
# first step's memory is the warm-up), so the first search during the run
# is asked at the end of step AT, where each case's signal, thread or fork
# begins. No other search runs: the next would be asked once the leak has
# doubled, and waits past the share of time the searches may take.
MIN_STEPS = 4
AT = MIN_STEPS + 1
STEPS = 12
# A search stops after this many seconds (LEAKWATCH_HOLDERS_BUDGET): the
# cases' threads and the signal-less waits outlast it.
BUDGET = "2"


class Run(object):
    def __init__(self, rc, out, err, seconds, hung, searches):
        self.rc, self.out, self.err = rc, out, err
        self.seconds, self.hung, self.searches = seconds, hung, searches


def run(case, tmp, name, watched, env_extra=None, timeout=120):
    """One run of the case: under `leakwatch run` when watched, else
    plainly (the stand-in GPU both times)."""
    python = os.environ["LW_TORCH_PYTHON"]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))
           and k != "LD_PRELOAD"}
    env["LEAKWATCH_BUILD"] = os.environ["LEAKWATCH_BUILD"]
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    out = os.path.join(tmp, name + ".json")
    trace = os.path.join(tmp, name + ".trace")
    cmd = [os.environ["LW_FAKEGPU"]]
    if watched:
        env["LEAKWATCH_LIB"] = os.environ["LW_LIB"]
        env["LEAKWATCH_QUIET"] = "1"
        env["LEAKWATCH_MIN_STEPS"] = str(MIN_STEPS)
        env["LEAKWATCH_HOLDERS_BUDGET"] = BUDGET
        if os.environ.get("LW_TRACE_DETAIL"):  # meson test --setup full
            env["LEAKWATCH_TRACE_DETAIL"] = os.environ["LW_TRACE_DETAIL"]
        cmd += [os.environ["LW_CLI"], "run", "--no-report", "--trace", trace,
                "--"]
    env.update(env_extra or {})
    cmd += [python, PROGRAM, case, str(STEPS), str(AT), out]
    start = time.monotonic()
    p = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    hung = False
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        hung = True
        os.killpg(p.pid, signal.SIGKILL)
        stdout, stderr = p.communicate()
    seconds = time.monotonic() - start
    searches = None
    spent = ""
    if watched and not hung and os.path.exists(trace):
        r = subprocess.run([os.environ["LW_CLI"], "report", "--format",
                            "json", trace], capture_output=True, text=True,
                           timeout=300)
        try:
            info = json.loads(r.stdout)["info"]
            searches, spent = info.get("holder_searches_in_run",
                                       "0 0").split()[:2]
            searches = int(searches)
        except (ValueError, KeyError):
            searches = None
    print(f"{name}: exit {p.returncode}{' (hung, killed)' if hung else ''}"
          f" in {seconds:.1f} s; searches during the run: {searches}"
          f"{f' ({spent} s)' if spent else ''}")
    for line in stdout.splitlines():
        print(f"  | {line}")
    return Run(p.returncode, stdout, stderr, seconds, hung, searches)


SINCE = re.compile(r"objects since step 3 ([+-]\d+)")


def same_line(x, y):
    """Lines equal, but for the collector case's count of new objects,
    which may differ by the one object the shim's hooks are registered
    with (a C function in PyTorch's optimizer hooks, made when the main
    thread next runs, which under load can fall after step 3): a search
    that made objects or ran the collector moves it by more, and the
    collections and memory beside it."""
    if x == y:
        return True
    mx, my = SINCE.search(x), SINCE.search(y)
    return bool(mx and my and abs(int(mx.group(1)) - int(my.group(1))) <= 1
                and SINCE.sub("", x) == SINCE.sub("", y))


def first_difference(plain, watched):
    """The first line that differs, as the failure says it."""
    a, b = plain.splitlines(), watched.splitlines()
    for i in range(max(len(a), len(b))):
        x = a[i] if i < len(a) else "(nothing)"
        y = b[i] if i < len(b) else "(nothing)"
        if not same_line(x, y):
            return (f"line {i + 1}: without leakwatch {x!r}, under "
                    f"leakwatch {y!r}")
    return None


def profiled(path):
    """The (file, function) pairs a profile case wrote, or None."""
    try:
        with open(path) as f:
            return {tuple(pair) for pair in json.load(f)}
    except (OSError, ValueError):
        return None


def leakwatch_functions(seen):
    """The (file, function) pairs of leakwatch's own code: what the shim
    compiles in (<leakwatch holders>, <leakwatch origins>) and the Python
    module it installs (python/leakwatch)."""
    package = os.path.join(os.environ["LW_PYTHON_DIR"], "leakwatch") + os.sep
    return sorted((f, name) for f, name in seen
                  if f.startswith("<leakwatch") or f.startswith(package) or
                  "/site-packages/leakwatch/" in f)


def warned(err, text="FutureWarning: schedule(step) is deprecated"):
    return err.count(text)


def main():
    if not os.environ.get("LW_TORCH_PYTHON"):
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    case = sys.argv[1]
    failures = []
    with tempfile.TemporaryDirectory(prefix="lw-invisible-") as tmp:
        plain = run(case, tmp, "without", False)
        if plain.rc not in (0, 130, 143) or plain.hung:
            print(plain.err[-3000:])
            return conclude([f"{case}: the program failed without "
                             f"leakwatch (exit {plain.rc})"])
        watched = run(case, tmp, "under", True,
                      timeout=max(40, int(3 * plain.seconds) + 20))
        if watched.hung:
            failures.append(f"{case}: hung under leakwatch (killed after "
                            f"{watched.seconds:.0f} s; "
                            f"{plain.seconds:.0f} s without), after "
                            f"{watched.out.splitlines()[-1:]}")
        else:
            if watched.rc != plain.rc:
                failures.append(f"{case}: exit status {watched.rc} under "
                                f"leakwatch, {plain.rc} without")
            diff = first_difference(plain.out, watched.out)
            if diff:
                failures.append(f"{case}: {diff}")
            if "holder search failed" in watched.err:
                failures.append(f"{case}: " + watched.err.strip()
                                .splitlines()[0])
            if case == "warn_once" and \
                    warned(watched.err) != warned(plain.err):
                failures.append(f"{case}: the FutureWarning shown "
                                f"{warned(watched.err)} times under "
                                f"leakwatch, {warned(plain.err)} without")
            if case in ("setprofile", "cprofile"):
                seen = profiled(os.path.join(tmp, "under.json"))
                plain_seen = profiled(os.path.join(tmp, "without.json"))
                if seen is None or plain_seen is None:
                    failures.append(f"{case}: no profile written")
                elif leakwatch_functions(seen):
                    own = leakwatch_functions(seen)
                    failures.append(f"{case}: the profile saw {len(own)} "
                                    f"functions of leakwatch's: {own[:3]}")
                if seen and plain_seen:
                    extra = sorted(seen - plain_seen)
                    print(f"functions profiled only under leakwatch: "
                          f"{len(extra)} {extra[:10]}")
            if watched.searches is None or watched.searches < 1:
                failures.append(f"{case}: no holder search ran during the "
                                "run (holder_searches_in_run "
                                f"{watched.searches}): the case proves "
                                "nothing")
        if failures:
            off = run(case, tmp, "holders-off", True,
                      {"LEAKWATCH_HOLDERS": "0"},
                      timeout=max(40, int(3 * plain.seconds) + 20))
            same = not off.hung and off.rc == plain.rc and \
                first_difference(plain.out, off.out) is None
            print("with LEAKWATCH_HOLDERS=0 the program " +
                  ("behaves as without leakwatch: the holder search made "
                   "the difference" if same else
                   "differs too: not (only) the search"))
            print(watched.err[-2000:])
    return conclude(failures)


if __name__ == "__main__":
    sys.exit(main())
