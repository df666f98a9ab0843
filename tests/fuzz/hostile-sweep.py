#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Hostile inputs against the leakwatch command, counted the way the
adversarial trial counted them.

Seeds are real traces (test programs run under the shim) and synthetic ones
(gen-trace). From them it makes inputs of many kinds: random mutants (bits
flipped, bytes overwritten), cuts, crafted lengths and counts, a header
that skips to the END record, spliced and reordered blocks, devices
(/dev/zero, /dev/urandom), traces made to be slow to read (many strings
and unknown phase names, many INFO records), a sparse file of 4 GiB, a
trace that shrinks while it is read; and situations: a diff against a run
with no step, a report written over its own input, a verdict written to
a full disk, a gated run whose program dropped LD_PRELOAD. It runs
`leakwatch report` (text and JSON), `check` and `diff` on each input, each
with a time limit and an address-space limit, and counts:

  crash        a command killed by a signal
  hang         a command past its time limit
  memory       a command whose peak resident memory passed --memory-mb
               and 32 times the input's size on disk (a sparse file's
               holes take no room)
  silent wrong an answer that is wrong and says nothing: a mutant read as
               complete (exit 0, not truncated) whose figures differ from
               its original's; a gate that passes what it cannot judge
  check passes of those, the mutants that `check` also passes
  data lost    an input changed by a command that reads it

Mutants are labelled by their seed: real (written by the shim) or
synthetic (gen-trace), and "no checksums" for a trace whose blocks carry
none (every synthetic one but "checksummed", and real traces of a shim
from before checksums), whose silent wrong answers are counted apart.

    hostile-sweep.py --leakwatch CLI --gen GEN-TRACE --shim LIB
                     --prog PROG [--prog PROG ...] [--count N] [--quick]
                     [--keep DIR] [--seed N]

--count is the number of random mutants (default 3000); --quick makes a
small sweep for the test suite (a few hundred inputs, no sparse file, no
slow crafted traces at full size). It prints the figures and exits 1 when
a command crashed, hung or took too much memory, an input was changed, or
a trace with checksums gave a silent wrong answer.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import signal
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from tracebytes import HEADER_SIZE as HEADER, ext, header, varint  # noqa: E402
REC_STEP, REC_PHASE_END = 0x09, 0x0a
REC_STRING, REC_PHASE_BEGIN, REC_INFO, REC_END = 0x42, 0x43, 0x44, 0x46
REC_CHECKSUM = 0x50
FIGURES = ("events", "allocations", "frees", "steps", "live_bytes_at_exit",
           "live_count_at_exit", "peak", "kinds", "unknown_frees",
           "verdict", "growth_bytes_per_step", "live_bytes_at_end")


def string(s):
    return varint(len(s)) + s


def origin_of(path):
    """real: written by the shim; synthetic: by gen-trace; and whether it
    has checksums."""
    what = "real" if os.path.basename(path).startswith("real-") \
        else "synthetic"
    return what + ("" if checksummed(path) else ", no checksums")


def checksummed(path):
    """Whether the trace at path says its blocks carry checksums."""
    with open(path, "rb") as f:
        head = f.read(HEADER)
    return len(head) == HEADER and head[12] & 1 == 1


def end_record(data):
    """The offset of the END record that closes data, or None."""
    for p in range(len(data) - 3, max(HEADER, len(data) - 24) - 1, -1):
        if data[p] == REC_END and data[p + 1] == len(data) - p - 2:
            return p
    return None


# Measures a command's own peak resident memory (Debian: time).
TIME = "/usr/bin/time" if os.path.exists("/usr/bin/time") else None

class Sweep:
    def __init__(self, args, tmp):
        self.args = args
        self.tmp = tmp
        self.counts = dict.fromkeys(("inputs", "runs", "crash", "hang",
                                     "memory", "silent wrong",
                                     "check passes",
                                     "of which without checksums",
                                     "data lost"), 0)
        self.kinds = {}
        self.examples = []
        self.serial = 0

    # -- running the command -------------------------------------------

    def limits(self):
        """The command's limits, set by prlimit(1) (a sanitized command
        reserves terabytes of address space for its shadow memory: its
        resident memory is still measured)."""
        cap = [] if self.sanitized else \
            [f"--as={self.args.address_space_mb << 20}"]
        return ["prlimit", "--core=0"] + cap + ["--"]

    def run(self, argv, timeout=None, stdin=None, stdout=None, env=None):
        """(exit status or None on a timeout, stdout, stderr, peak RSS in
        MiB); a signal is a negative status. The peak is the command's
        own, from /usr/bin/time, whose child starts from its small size:
        a child of this process (fork or vfork) counts this process's
        peak in its ru_maxrss, as exec keeps it."""
        with tempfile.TemporaryFile() as out, \
                tempfile.TemporaryFile() as err, \
                tempfile.NamedTemporaryFile("r") as peak:
            timed = [TIME, "-f", "%M %x", "-o", peak.name] \
                if TIME else []
            p = subprocess.Popen(timed + self.limits() +
                                 [self.args.leakwatch] + argv, stdin=stdin,
                                 stdout=stdout or out, stderr=err,
                                 cwd=self.tmp, env=env or self.env,
                                 start_new_session=True)
            timer = threading.Timer(timeout or self.args.timeout,
                                    os.killpg, (p.pid, signal.SIGKILL))
            timer.start()
            try:
                _, status, usage = os.wait4(p.pid, 0)
                p.returncode = os.waitstatus_to_exitcode(status)
            finally:
                killed = not timer.is_alive()
                timer.cancel()
            out.seek(0)
            err.seek(0)
            got_out, got_err = out.read(), err.read()
            rss = usage.ru_maxrss
            if TIME:
                # "KiB status", or "Command terminated by signal N" first.
                words = peak.read().split()
                if len(words) >= 2 and words[-2].isdigit():
                    rss = int(words[-2])
                if "signal" in words:
                    p.returncode = -int(words[words.index("signal") + 1])
                elif len(words) >= 2 and words[-1].lstrip("-").isdigit():
                    p.returncode = int(words[-1])
        self.counts["runs"] += 1
        code = None if killed else p.returncode
        return code, got_out, got_err, rss / 1024

    def judge(self, kind, what, code, rss, path=None):
        """Counts a crash, hang or memory blowup of one run; True if any."""
        bad = None
        # What the report holds may grow with what the trace holds (a
        # trace of 300,000 sites); not with its size on disk, nor past
        # --memory-mb for a small one.
        limit = self.args.memory_mb
        if path and os.path.exists(path):
            limit = max(limit, 32 * os.stat(path).st_blocks * 512 / 2**20)
        if code is None:
            bad = "hang"
        elif code < 0:
            bad = "crash"
        elif rss > limit:
            bad = "memory"
        if bad:
            self.note(bad, kind, f"{what}: {bad} (status {code}, "
                      f"{rss:.0f} MiB)", path)
        return bad is not None

    def input(self, kind):
        self.counts["inputs"] += 1
        self.kinds.setdefault(kind, {}).setdefault("inputs", 0)
        self.kinds[kind]["inputs"] += 1

    def note(self, counter, kind, message, path=None):
        self.counts[counter] += 1
        self.kinds.setdefault(kind, {}).setdefault(counter, 0)
        self.kinds[kind][counter] += 1
        if path and self.args.keep:
            self.serial += 1
            keep = os.path.join(self.args.keep,
                                f"{counter.replace(' ', '-')}-"
                                f"{self.serial}.trace")
            shutil.copy(path, keep)
            message += f" (kept as {keep})"
        if len(self.examples) < 40:
            self.examples.append(f"{kind}: {message}")

    # -- the reference figures of a trace ------------------------------

    def figures(self, path):
        code, out, _, _ = self.run(["report", "--format", "json", path])
        if code != 0:
            return None, None
        try:
            r = json.loads(out)
        except ValueError:
            return None, None
        sites = sorted((s.get("live_bytes"), s.get("live_count"))
                       for s in r.get("sites", []))
        return ({k: r.get(k) for k in FIGURES}, sites), r

    def check_status(self, path):
        code, _, _, _ = self.run(["check", "--max-growth", "0", path])
        return code

    # -- one input ----------------------------------------------------

    def trace_input(self, kind, data, seed=None, commands=("text", "json",
                                                           "check", "diff")):
        """Runs the commands on data written to a file; seed: (path,
        figures, check status) of the trace it was made from."""
        path = os.path.join(self.tmp, "input.trace")
        with open(path, "wb") as f:
            f.write(data)
        digest = hashlib.sha256(data).digest()
        self.input(kind)
        bad = False
        complete_json = None
        for what in commands:
            if what == "text":
                code, _, _, rss = self.run(["report", path])
            elif what == "json":
                code, out, _, rss = self.run(["report", "--format", "json",
                                              path])
                if code == 0:
                    try:
                        complete_json = json.loads(out)
                    except ValueError:
                        pass
            elif what == "check":
                code, _, _, rss = self.run(["check", "--max-growth", "0",
                                            path])
                check_code = code
            elif what == "diff" and seed:
                code, _, _, rss = self.run(["diff", seed[0], path])
            else:
                continue
            bad |= self.judge(kind, what, code, rss, path)
        with open(path, "rb") as f:
            if hashlib.sha256(f.read()).digest() != digest:
                self.note("data lost", kind, "the input changed", path)
        if bad or not seed or complete_json is None:
            return
        if complete_json.get("truncated"):
            return
        sites = sorted((s.get("live_bytes"), s.get("live_count"))
                       for s in complete_json.get("sites", []))
        mine = ({k: complete_json.get(k) for k in FIGURES}, sites)
        if mine != seed[1]:
            self.note("silent wrong", kind,
                      "read as complete with other figures", path)
            if "check" in commands and check_code == 0 and seed[2] != 0:
                self.counts["check passes"] += 1
            if not checksummed(seed[0]):
                self.counts["of which without checksums"] += 1

    # -- the kinds ----------------------------------------------------

    def seeds(self):
        out = os.path.join(self.tmp, "seeds")
        os.makedirs(out)
        names = ["leak-loop", "phases", "python", "step-linear", "kinds",
                 "python-finalize", "many-sites", "checksummed"]
        known = subprocess.run([self.args.gen, "--list"], check=True,
                               capture_output=True, text=True).stdout.split()
        for name in names:
            if name in known:
                subprocess.run([self.args.gen, name,
                                os.path.join(out, name + ".trace")],
                               check=True)
        for i, prog in enumerate(self.args.prog):
            env = dict(os.environ, LD_PRELOAD=self.args.shim,
                       LEAKWATCH_QUIET="1",
                       LEAKWATCH_OUT=os.path.join(out, f"real-{i}-%p.trace"),
                       ASAN_OPTIONS="verify_asan_link_order=0:detect_leaks=0")
            argv = [prog] + (["40", "4096"] if "leaky" in prog else [])
            subprocess.run(argv, env=env, cwd=self.tmp, check=True,
                           stdout=subprocess.DEVNULL)
        seeds = []
        for f in sorted(os.listdir(out)):
            path = os.path.join(out, f)
            fig, _ = self.figures(path)
            if fig is None:
                continue
            seeds.append((path, fig, self.check_status(path)))
        return seeds

    def mutants(self, seeds, rng, count):
        for i in range(count):
            path, fig, status = seeds[i % len(seeds)]
            origin = origin_of(path)
            with open(path, "rb") as f:
                data = bytearray(f.read())
            what = rng.randrange(4)
            if what == 0:
                kind = "mutant: one bit"
                pos = rng.randrange(HEADER, len(data))
                data[pos] ^= 1 << rng.randrange(8)
            elif what == 1:
                kind = "mutant: one byte"
                pos = rng.randrange(HEADER, len(data))
                data[pos] = rng.randrange(256)
            elif what == 2:
                kind = "mutant: several bits"
                for _ in range(rng.randrange(2, 5)):
                    pos = rng.randrange(0, len(data))
                    data[pos] ^= 1 << rng.randrange(8)
            else:
                kind = "mutant: header field"
                pos = rng.randrange(8, HEADER)
                data[pos] ^= 1 << rng.randrange(8)
            self.trace_input(f"{kind} [{origin}]", bytes(data),
                             (path, fig, status))

    def cuts(self, seeds, rng, count):
        for i in range(count):
            path, fig, status = seeds[i % len(seeds)]
            with open(path, "rb") as f:
                data = f.read()
            self.trace_input("cut", data[:rng.randrange(len(data))],
                             (path, fig, status))

    def crafted(self, seeds, rng, count):
        """Lengths and counts that claim more than there is."""
        for i in range(count):
            path, fig, status = seeds[i % len(seeds)]
            with open(path, "rb") as f:
                data = f.read()
            pos = rng.randrange(HEADER, len(data))
            origin = origin_of(path)
            what = i % 5
            if what == 0:
                kind = "crafted: huge varint"
                data = data[:pos] + b"\xff" * 8 + b"\x7f" + data[pos + 1:]
            elif what == 1:
                kind = "crafted: length past the end, data after"
                data = (data[:pos] + bytes([0x7e]) +
                        varint(len(data) - pos + 4096) + data[pos:])
            elif what == 2:
                kind = "crafted: huge frame count"
                data = (data[:pos] + ext(0x40, varint(1) + varint(1 << 40))
                        + data[pos:])
            elif what == 3:
                kind = "crafted: header skips to END"
                end = end_record(data)
                if end is None or end > 0xffff:
                    continue
                data = data[:10] + struct.pack("<H", end) + data[12:]
            else:
                kind = "crafted: END count changed"
                end = end_record(data)
                if end is None:
                    continue
                b = bytearray(data)
                b[end + 2] ^= 1
                data = bytes(b)
            self.trace_input(f"{kind} [{origin}]", data, (path, fig, status))

    def blocks(self, seeds, rng):
        """Checksummed traces: blocks removed, swapped, duplicated."""
        for path, fig, status in seeds:
            with open(path, "rb") as f:
                data = f.read()
            spans, p = [], HEADER
            while p + 14 <= len(data) and data[p] == REC_CHECKSUM:
                n = struct.unpack_from("<I", data, p + 2)[0]
                spans.append((p, p + 14 + n))
                p += 14 + n
            if len(spans) < 3:
                continue
            body = [data[a:b] for a, b in spans]
            for kind, blocks in (
                    ("blocks: one removed", body[:1] + body[2:]),
                    ("blocks: two swapped", [body[0], body[2], body[1]]
                     + body[3:]),
                    ("blocks: one twice", body[:2] + body[1:])):
                self.trace_input(kind, data[:HEADER] + b"".join(blocks),
                                 (path, fig, status))

    def slow(self, quick):
        """Traces made to be slow to read (quadratic readers)."""
        n = 30000 if quick else 300000
        strings = b"".join(ext(REC_STRING, varint(1000000 + i) + b"s")
                           for i in range(n))
        phases = b"".join(ext(REC_PHASE_BEGIN, varint(7)) + bytes(
            [REC_PHASE_END]) for _ in range(n))
        data = header() + strings + phases + ext(REC_END, varint(n) +
                                                  varint(0))
        self.trace_input("slow: unknown phase names", data,
                         commands=("text", "json", "check"))
        m = 20000 if quick else 200000
        infos = b"".join(ext(REC_INFO, string(b"k%d" % i) + string(b"v"))
                         for i in range(m))
        self.trace_input("slow: many INFO keys",
                         header() + infos + ext(REC_END, b"\0\0"),
                         commands=("json",))
        # Code ids far from dense, each on its own site's stack: every
        # frame of the JSON report looks one up.
        body = bytearray()
        for i in range(n):
            code = 1 << 40 | i
            body += ext(0x48, varint(code) + b"\1\1\1")
            body += ext(0x40, varint(i + 1) + varint(1) + varint(2 * i + 2))
            body += ext(0x49, varint(i + 1) + varint(1) + varint(code) +
                        varint(4) + varint(0))
            body += bytes([0x01]) + varint(2 * 4096) + varint(64) + \
                varint(i + 1)
        segments = b"".join(ext(0x4c, varint(1 << 40 | i << 21) +
                                varint(2 << 20) + varint(0))
                            for i in range(n))
        self.trace_input("slow: many PyTorch segments",
                         header() + segments + ext(REC_END, b"\0\0"),
                         commands=("text", "check"))
        self.trace_input("slow: sparse code ids",
                         header() + bytes(body) +
                         ext(REC_END, varint(n) + varint(0)),
                         commands=("text", "json"))

    def devices(self):
        for dev in ("/dev/zero", "/dev/urandom"):
            if not os.path.exists(dev):
                continue
            self.input("device")
            for argv in (["report", dev], ["check", "--max-growth", "0", dev]):
                code, _, _, rss = self.run(argv, timeout=10)
                self.judge("device", f"{argv[0]} {dev}", code, rss)

    def pipe(self, seeds):
        """A trace streamed through a pipe still reads, and a device that
        streams zeros does not."""
        path, fig, _ = seeds[0]
        self.input("pipe")
        cat = subprocess.Popen(["cat", path], stdout=subprocess.PIPE)
        code, out, _, rss = self.run(["report", "--format", "json",
                                      "/dev/stdin"], stdin=cat.stdout)
        cat.stdout.close()
        cat.wait()
        if not self.judge("pipe", "report of a pipe", code, rss) and \
                code != 0:
            self.note("silent wrong", "pipe", f"a piped trace: exit {code}")

    def sparse(self):
        path = os.path.join(self.tmp, "sparse.trace")
        with open(path, "wb") as f:
            f.write(header())
            f.truncate(4 << 30)
        self.input("sparse 4 GiB")
        # Room to map it: the memory it takes is what is measured.
        cap = self.args.address_space_mb
        self.args.address_space_mb = 4 * 4096
        code, _, _, rss = self.run(["report", path], timeout=120)
        self.args.address_space_mb = cap
        self.judge("sparse 4 GiB", "report", code, rss)
        os.unlink(path)

    def shrinking(self, attempts):
        """A trace cut while `report` reads it."""
        big = os.path.join(self.tmp, "big.trace")
        subprocess.run([self.args.gen, "large", big, "3000000"], check=True)
        with open(big, "rb") as f:
            data = f.read()
        for i in range(attempts):
            path = os.path.join(self.tmp, "shrinking.trace")
            with open(path, "wb") as f:
                f.write(data)
            self.input("shrinks while read")
            p = subprocess.Popen(self.limits() + [self.args.leakwatch,
                                                  "report", path],
                                 stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE)
            time.sleep(0.02 + 0.02 * i)
            os.truncate(path, len(data) // 3)
            try:
                p.communicate(timeout=self.args.timeout)
                code = p.returncode
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                code = None
            self.counts["runs"] += 1
            self.judge("shrinks while read", "report", code, 0)
        os.unlink(big)

    def situations(self, seeds):
        """Gates that must not pass, outputs that must not destroy."""
        growing = [s for s in seeds if s[2] == 1]
        if growing:
            before = growing[0][0]
            empty = os.path.join(self.tmp, "empty-run.trace")
            with open(empty, "wb") as f:
                f.write(header())
            with open(before, "rb") as f:
                data = f.read()
            # A run that died before its first step.
            first_step = data.find(bytes([REC_STEP]), HEADER)
            died = os.path.join(self.tmp, "died.trace")
            with open(died, "wb") as f:
                f.write(data[:max(HEADER, first_step)])
            for after, what in ((empty, "only a header"),
                                (died, "died before its first step")):
                self.input("diff")
                code, out, _, rss = self.run(["diff", before, after])
                if not self.judge("diff", what, code, rss) and code in (0, 1):
                    self.note("silent wrong", "diff",
                              f"diff against a run with {what}: exit {code}")
        # A report written over its own input.
        path = os.path.join(self.tmp, "own.trace")
        shutil.copy(seeds[0][0], path)
        with open(path, "rb") as f:
            digest = hashlib.sha256(f.read()).digest()
        for fmt in ("text", "html"):
            self.input("report -o its input")
            code, _, _, rss = self.run(["report", "--format", fmt, "-o",
                                        path, path])
            self.judge("report -o its input", fmt, code, rss)
            with open(path, "rb") as f:
                if hashlib.sha256(f.read()).digest() != digest:
                    self.note("data lost", "report -o its input",
                              f"{fmt}: the trace was overwritten")
                    shutil.copy(seeds[0][0], path)
        # Verdicts written where they cannot be.
        if growing and os.path.exists("/dev/full"):
            for argv in (["check", "--max-growth", "0", growing[0][0]],
                         ["diff", growing[0][0], growing[0][0]]):
                self.input("output to a full disk")
                with open("/dev/full", "wb") as full:
                    code, _, _, rss = self.run(argv, stdout=full)
                if not self.judge("output to a full disk", argv[0], code,
                                  rss) and code in (0, 1, 3):
                    self.note("silent wrong", "output to a full disk",
                              f"{argv[0]} > /dev/full: exit {code}")
        # A gated run whose program drops LD_PRELOAD and allocates.
        leaky = [p for p in self.args.prog if "leaky" in p]
        if leaky:
            self.input("gated run without the shim")
            # A sanitized build's shim preloaded into env, which is not.
            env = dict(self.env, LEAKWATCH_LIB=self.args.shim,
                       ASAN_OPTIONS="verify_asan_link_order=0:"
                       "detect_leaks=0")
            code, _, err, rss = self.run(
                ["run", "--max-growth", "0", "--", "env", "-u",
                 "LD_PRELOAD", leaky[0], "20", "4096"], env=env,
                timeout=60)
            if not self.judge("gated run without the shim", "run", code,
                              rss) and code == 0:
                self.note("silent wrong", "gated run without the shim",
                          "run --max-growth passed a program it never saw")

    def report(self):
        width = max(len(k) for k in self.kinds) if self.kinds else 10
        cols = ("inputs", "crash", "hang", "memory", "silent wrong",
                "data lost")
        print(f"{'kind':<{width}}  " + "  ".join(f"{c:>12}" for c in cols))
        for kind in sorted(self.kinds):
            row = self.kinds[kind]
            print(f"{kind:<{width}}  " +
                  "  ".join(f"{row.get(c, 0):>12}" for c in cols))
        print()
        for k, v in self.counts.items():
            print(f"{k}: {v}")
        for e in self.examples:
            print("  " + e)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--leakwatch", required=True)
    p.add_argument("--gen", required=True)
    p.add_argument("--shim", required=True)
    p.add_argument("--prog", action="append", default=[])
    p.add_argument("--count", type=int, default=3000)
    p.add_argument("--quick", action="store_true")
    p.add_argument("--seed", type=int, default=33)
    p.add_argument("--timeout", type=float, default=20)
    p.add_argument("--memory-mb", type=float, default=256)
    p.add_argument("--address-space-mb", type=int, default=4096)
    p.add_argument("--keep", help="directory for the inputs that failed")
    args = p.parse_args()
    for k in ("leakwatch", "gen", "shim", "keep"):
        if getattr(args, k):
            setattr(args, k, os.path.abspath(getattr(args, k)))
    args.prog = [os.path.abspath(x) for x in args.prog]
    if args.quick:
        args.count = min(args.count, 200)
    rng = random.Random(args.seed)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="lw-hostile-") as tmp:
        s = Sweep(args, tmp)
        s.env = {k: v for k, v in os.environ.items()
                 if not k.startswith("LEAKWATCH_")}
        with open(args.leakwatch, "rb") as f:
            s.sanitized = b"__asan_init" in f.read()
        if s.sanitized:
            args.timeout *= 5
            args.memory_mb *= 4
        seeds = s.seeds()
        if not seeds:
            print("no seed trace could be read")
            return 1
        s.mutants(seeds, rng, args.count)
        s.cuts(seeds, rng, args.count // 10)
        s.crafted(seeds, rng, args.count // 10)
        s.blocks(seeds, rng)
        s.slow(args.quick)
        s.devices()
        s.pipe(seeds)
        s.situations(seeds)
        if not args.quick:
            s.sparse()
            s.shrinking(8)
        s.report()
    print(f"{time.monotonic() - start:.0f} s")
    # Traces written before the shim checksummed its blocks cannot be
    # checked: their mutants are counted, not failed.
    bad = sum(s.counts[k] for k in ("crash", "hang", "memory",
                                    "silent wrong", "data lost")) - \
        s.counts["of which without checksums"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
