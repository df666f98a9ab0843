#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Several traces read on several threads (report/trace-pool.h):

- with LEAKWATCH_THREADS=2 the first trace is read alone, then the third
  is opened while the second is still being read (FIFOs: the test feeds
  the third before the second); with LEAKWATCH_THREADS=1 none is read
  ahead;
- `report` (text, with the merged view, and JSON) and `check` of a dozen
  traces, an unreadable one and a missing one among them, write the same
  bytes, error lines and exit status on 1, 2 and 5 threads;
- a LEAKWATCH_THREADS that does not parse is said once, and ignored.

Also run under ThreadSanitizer (suite unit): the traces' modules are
symbolized, with one symbol cache, by several threads at once.

    test-many-traces.py --leakwatch PATH --gen PATH
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, finish  # noqa: E402

SCENARIOS = ("symbols", "formats-rank0", "formats-rank1", "leak-loop",
             "python", "python-location", "step-linear", "phases",
             "symbols", "formats", "step-sawtooth-flat", "symbols")


def environment(threads, cache):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}
    env["LEAKWATCH_SYMBOL_CACHE"] = cache
    if threads is not None:
        env["LEAKWATCH_THREADS"] = str(threads)
    return env


def run(args, cwd, argv, threads, cache):
    p = subprocess.run([args.leakwatch] + argv, cwd=cwd,
                       env=environment(threads, cache), capture_output=True,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr


def fifo_read_ahead(args, tmp, threads):
    """Whether the report opens its third trace (a FIFO) before its second
    (another FIFO) has been written. The first is written at once: it is
    read alone, before the others."""
    d = os.path.join(tmp, f"fifo-{threads}")
    os.mkdir(d)
    names = ("first", "second", "third")
    data = {}
    for name, scenario in zip(names, ("formats-rank0", "formats-rank1",
                                      "formats")):
        os.mkfifo(os.path.join(d, name))
        data[name] = open(os.path.join(tmp, scenario + ".trace"), "rb").read()
    # JSON: the merged view of the text report would read them again.
    p = subprocess.Popen([args.leakwatch, "report", "--format", "json"] +
                         list(names),
                         cwd=d, env=environment(threads, "0"),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Read the output meanwhile, so that the report never blocks on it.
    out = {}
    reader = threading.Thread(
        target=lambda: out.update(zip(("stdout", "stderr"), p.communicate())))
    reader.start()
    # A FIFO opens for writing without waiting only once a reader has it
    # open. "second" is not opened while "first" is being read; "third" is
    # while "second" is, given two threads. What does not happen is seen
    # by a short wait.
    written = []

    def feed(name, f=None):
        with f or open(os.path.join(d, name), "wb") as out:
            out.write(data[name])
        written.append(name)

    f = writer_when_opened(os.path.join(d, "second"), 1)
    alone = f is None
    if f:
        feed("second", f)
    feed("first")
    f = None
    if alone:
        f = writer_when_opened(os.path.join(d, "third"),
                               60 if threads > 1 else 1)
    ahead = f is not None
    if f:
        feed("third", f)
    for name in names:
        if name not in written:
            feed(name)
    reader.join(timeout=300)
    check(p.returncode == 0, f"report of three FIFOs on {threads} threads "
          f"exited {p.returncode}: {out.get('stderr')!r}")
    reports = json.loads(out.get("stdout") or b"{}").get("reports", [])
    check([r.get("trace") for r in reports] == list(names),
          f"report of three FIFOs on {threads} threads: "
          f"{out.get('stdout')!r}")
    return alone, ahead


def writer_when_opened(path, seconds):
    """The FIFO at path open for writing once the report opened it for
    reading, or None if it did not within seconds."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError:
            time.sleep(0.01)
            continue
        os.set_blocking(fd, True)
        return os.fdopen(fd, "wb")
    return None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--leakwatch", required=True)
    ap.add_argument("--gen", required=True)
    args = ap.parse_args()
    args.leakwatch = os.path.abspath(args.leakwatch)
    tmp = tempfile.mkdtemp(prefix="lw-many-")
    try:
        traces = []
        for i, scenario in enumerate(SCENARIOS):
            name = f"{i:02d}-{scenario}.trace"
            subprocess.run([args.gen, scenario, os.path.join(tmp, name)],
                           check=True)
            subprocess.run([args.gen, scenario,
                            os.path.join(tmp, scenario + ".trace")],
                           check=True)
            traces.append(name)
        subprocess.run([args.gen, "corrupt-tag",
                        os.path.join(tmp, "bad.trace")], check=True)
        traces[4:4] = ["bad.trace"]
        traces[9:9] = ["missing.trace"]

        alone, ahead = fifo_read_ahead(args, tmp, 2)
        check(alone, "on 2 threads the first trace was not read alone")
        check(ahead, "on 2 threads the third trace was not read ahead")
        check(fifo_read_ahead(args, tmp, 1) == (True, False),
              "on 1 thread a trace was read ahead")

        cache = os.path.join(tmp, "cache")
        commands = {
            "report": ["report"] + traces,
            "report json": ["report", "--format", "json"] + traces,
            "check": ["check", "--max-growth", "1KiB"] + traces,
        }
        for what, argv in commands.items():
            one = run(args, tmp, argv, 1, cache)
            check(one[0] == 2 and b"bad.trace" in one[2] and
                  b"missing.trace" in one[2],
                  f"{what}: exit {one[0]}, stderr {one[2][:300]!r}")
            if what == "report":
                check(b"Merged view of 12 traces" in one[1],
                      "report: no merged view of the readable traces")
            for threads in (2, 5):
                # The first run of each fills the cache; both must agree.
                for attempt in ("fresh", "cached"):
                    if attempt == "fresh":
                        shutil.rmtree(cache, ignore_errors=True)
                    got = run(args, tmp, argv, threads, cache)
                    check(got == one,
                          f"{what} on {threads} threads ({attempt} cache) "
                          f"differs from one thread")

        rc, out, err = run(args, tmp, ["report"] + traces[:3], "two", cache)
        check(err.count(b"LEAKWATCH_THREADS=two") == 1 and
              run(args, tmp, ["report"] + traces[:3], 1, cache)[1] == out,
              f"a bad LEAKWATCH_THREADS: {err[:300]!r}")
    finally:
        shutil.rmtree(tmp)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
