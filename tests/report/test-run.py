#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of `leakwatch run`, with fake-shim.c standing in for
libleakwatch.so (through LEAKWATCH_LIB): the environment the program gets,
exit statuses, signals, the manifest of traces, and the reports.

    test-run.py --leakwatch PATH --shim PATH
"""

import argparse
import glob
import json
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, failures  # noqa: E402


class Runner:
    def __init__(self, leakwatch, shim, tmp):
        self.leakwatch = leakwatch
        self.shim = os.path.realpath(shim)
        self.tmp = tmp
        self.tmpdir = os.path.join(tmp, "tmpdir")
        os.mkdir(self.tmpdir)

    def env(self, **extra):
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("LEAKWATCH_") and k not in
               ("LD_PRELOAD", "LW_FAKE_SHIM_MODE")}
        env["LEAKWATCH_LIB"] = self.shim
        env["TMPDIR"] = self.tmpdir
        # An ASan build of leakwatch linked with gcc (shared libasan) would
        # refuse to start under the LD_PRELOAD some cases set.
        env["ASAN_OPTIONS"] = ":".join(
            x for x in [os.environ.get("ASAN_OPTIONS"),
                        "verify_asan_link_order=0"] if x)
        env.update(extra)
        return {k: v for k, v in env.items() if v is not None}

    def run(self, *args, cwd=None, **extra):
        cwd = cwd or tempfile.mkdtemp(dir=self.tmp)
        r = subprocess.run([self.leakwatch, "run", *args], cwd=cwd,
                           env=self.env(**extra), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        r.cwd = cwd
        r.out = r.stdout.decode()
        r.err = r.stderr.decode()
        check(os.listdir(self.tmpdir) == [], f"{args}: manifest left behind")
        return r


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch", required=True)
    p.add_argument("--shim", required=True)
    args = p.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    args.shim = os.path.abspath(args.shim)

    with tempfile.TemporaryDirectory(prefix="lw-run-") as tmp:
        t = Runner(args.leakwatch, args.shim, tmp)

        # The exit status is the program's; the report goes to stderr.
        r = t.run("--", "sh", "-c", "echo out; exit 3")
        check(r.returncode == 3, f"exit status {r.returncode}")
        check(r.out == "out\n", "the program's stdout is left alone")
        traces = glob.glob(os.path.join(r.cwd, "leakwatch-*.trace"))
        check(len(traces) == 1, f"default trace name: {traces}")
        check(f"leakwatch: leak report for {traces[0] if traces else '?'}\n" in r.err,
              "report names the trace by its absolute path")
        check("live device memory at exit: 4.0 KiB (4096 bytes) in 1 allocation" in r.err,
              "report content")

        # What the program's environment holds.
        r = t.run("--", "sh", "-c",
                  'printf "%s\\n" "$LD_PRELOAD" "$LEAKWATCH_OUT" "$LEAKWATCH_QUIET" "$LEAKWATCH_MANIFEST"',
                  LD_PRELOAD="libc.so.6")
        lines = r.out.split("\n")
        check(lines[0] == t.shim + ":libc.so.6", f"LD_PRELOAD prepended: {lines[0]!r}")
        check(lines[1] == "leakwatch-%p.trace", f"default LEAKWATCH_OUT: {lines[1]!r}")
        check(lines[2] == "1", "LEAKWATCH_QUIET")
        check(lines[3].startswith(t.tmpdir + "/"), f"manifest in TMPDIR: {lines[3]!r}")
        r = t.run("--", "true", LD_PRELOAD=None)
        traces = glob.glob(os.path.join(r.cwd, "leakwatch-*.trace"))
        check(len(traces) == 1, "a trace without LD_PRELOAD set before")

        # The user's LEAKWATCH_OUT is kept; --trace wins over it.
        r = t.run("--", "true", LEAKWATCH_OUT="mine-%p.trace")
        check(len(glob.glob(os.path.join(r.cwd, "mine-*.trace"))) == 1, "LEAKWATCH_OUT kept")
        r = t.run("--trace", "given-%p.lwt", "--", "true", LEAKWATCH_OUT="mine-%p.trace")
        check(len(glob.glob(os.path.join(r.cwd, "given-*.lwt"))) == 1, "--trace")
        check(glob.glob(os.path.join(r.cwd, "mine-*")) == [], "--trace over LEAKWATCH_OUT")

        # Killed by a signal: 128 + the signal, and still a report.
        r = t.run("--", "sh", "-c", "kill -TERM $$")
        check(r.returncode == 128 + signal.SIGTERM, f"killed: {r.returncode}")
        check("leak report for" in r.err, "report after a kill")

        # Cannot run: like a shell.
        r = t.run("--", "no-such-command-for-leakwatch")
        check(r.returncode == 127, f"not found: {r.returncode}")
        check(r.err == "leakwatch: no-such-command-for-leakwatch: command not found\n",
              f"not found message: {r.err!r}")
        r = t.run("--", "/nonexistent/program")
        check(r.returncode == 127 and r.err.count("\n") == 1, "missing path")
        noexec = os.path.join(tmp, "not-executable")
        open(noexec, "w").close()
        r = t.run("--", noexec)
        check(r.returncode == 126, f"not executable: {r.returncode}")
        check(r.err == f"leakwatch: {noexec}: Permission denied\n", f"{r.err!r}")

        # No CUDA allocation, no trace.
        r = t.run("--", "true", LW_FAKE_SHIM_MODE="none")
        check(r.returncode == 0, "no trace: status")
        check(r.err == "leakwatch: no trace was written (the program made no CUDA allocation)\n",
              f"no trace: {r.err!r}")

        # A gated run that wrote no trace judged nothing: it does not pass,
        # and says what may have happened (LD_PRELOAD dropped...).
        r = t.run("--max-growth", "1MiB", "--", "true",
                  LW_FAKE_SHIM_MODE="none")
        check(r.returncode == 24, f"gated, no trace: {r.returncode}")
        check(r.err.count("\n") == 1 and "cannot judge" in r.err
              and "LD_PRELOAD" in r.err, f"gated, no trace: {r.err!r}")
        r = t.run("--max-growth", "1MiB", "--", "sh", "-c", "exit 6",
                  LW_FAKE_SHIM_MODE="none")
        check(r.returncode == 6, f"gated, no trace, failed: {r.returncode}")

        # A trace that cannot be read: its line, and the program's status.
        r = t.run("--", "sh", "-c", "exit 4", LW_FAKE_SHIM_MODE="corrupt")
        check(r.returncode == 4, "corrupt trace keeps the status")
        check(r.err.count("\n") == 1 and ": corrupt record at offset" in r.err,
              f"corrupt trace line: {r.err!r}")

        # Several processes: every trace, in order, as a JSON wrapper.
        out = os.path.join(tmp, "report.json")
        r = t.run("--format", "json", "-o", out, "--", "sh", "-c",
                  "/bin/true; /bin/true; exit 5")
        check(r.returncode == 5, "several: status")
        check(r.err == "", f"several: nothing on stderr with -o: {r.err!r}")
        with open(out) as f:
            doc = json.load(f)
        reports = doc.get("reports", [])
        check(len(reports) == 3, f"several: {len(reports)} reports")
        check(len({x["trace"] for x in reports}) == 3, "several: distinct traces")
        check(all(x["trace"].startswith("/") for x in reports), "several: absolute paths")
        check([x["command"][0].split("/")[-1] for x in reports] == ["sh", "true", "true"],
              f"several: order {[x['command'] for x in reports]}")
        check(all(x["info"].get("quiet") == "1" for x in reports), "several: quiet")

        # The same process writing its trace twice (exec): reported once.
        r = t.run("--", "sh", "-c", "exec /bin/true")
        check(r.err.count("leak report for") == 1, "duplicates in the manifest")

        # One trace in JSON is one object; none is an empty list.
        r = t.run("--format", "json", "--", "true")
        check(json.loads(r.err).get("trace", "").endswith(".trace"), "one JSON report")
        r = t.run("--format", "json", "-o", out, "--", "true", LW_FAKE_SHIM_MODE="none")
        with open(out) as f:
            check(json.load(f) == {"leakwatch_report": 1, "reports": [],
                                   "schema_version": 1}, "no JSON report")

        # --no-report lists the traces.
        r = t.run("--no-report", "--", "true")
        check(r.err.startswith("leakwatch: trace written to /") and r.err.count("\n") == 1,
              f"--no-report: {r.err!r}")

        # A signal sent to leakwatch reaches the program.
        cwd = tempfile.mkdtemp(dir=tmp)
        proc = subprocess.Popen([args.leakwatch, "run", "--", "sleep", "30"], cwd=cwd,
                                env=t.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while not glob.glob(os.path.join(cwd, "leakwatch-*.trace")) and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.1)
        start = time.time()
        proc.send_signal(signal.SIGTERM)
        try:
            _, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
        check(proc.returncode == 128 + signal.SIGTERM, f"forwarded SIGTERM: {proc.returncode}")
        check(time.time() - start < 5, "forwarded SIGTERM: promptly")
        check(b"leak report for" in err, "forwarded SIGTERM: report")
        check(os.listdir(t.tmpdir) == [], "forwarded SIGTERM: manifest removed")

        # Usage problems: one line, status 2, nothing run.
        r = t.run("--", "true", LEAKWATCH_LIB=os.path.join(tmp, "missing.so"))
        check(r.returncode == 2 and r.err.count("\n") == 1 and "LEAKWATCH_LIB" in r.err,
              f"missing LEAKWATCH_LIB: {r.err!r}")
        r = t.run("--top", "x", "--", "true")
        check(r.returncode == 2 and r.err == "leakwatch: --top needs a whole number, not 'x'\n",
              f"bad --top: {r.err!r}")
        r = t.run("-o", os.path.join(tmp, "no", "dir"), "--", "touch", "ran")
        check(r.returncode == 2 and not os.path.exists(os.path.join(r.cwd, "ran")),
              "a bad -o fails before running")

    if failures:
        print(f"{len(failures)} failures")
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
