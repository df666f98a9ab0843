#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The report on real PyTorch traces: its fixed cost, its rate, the symbol
cache, and the merged view of many ranks.

    bench-report-torch.py BUILD_DIR TORCH_PYTHON [--steps N] [--runs R]
                          [--ranks K] [--quick]

A GPT-style model (4 layers, d=256, 4 heads, vocabulary 1000, batch 8x64,
AdamW) trains on the stand-in GPU (scripts/fakegpu.sh) under `leakwatch
run`, three times: 1 step (the tiny trace: the fixed cost), 50 steps (a
rank's trace) and N steps (the big trace: the rate). K rank traces are
the 50-step one copied with varied figures: its own pid and INFO "rank",
and one more block held from the start, of (rank + 1) MiB.

Each figure is the median of R runs of `leakwatch report` (text, to
/dev/null): wall time, CPU time (user + system, all threads) and peak
resident memory (MB, 10^6 bytes; from /usr/bin/time). "first" runs start from an empty symbol cache (what the
first report of a job costs), "cached" ones from the cache the first
filled. The rate is the big trace's events over its time less the tiny
trace's (the fixed cost). The ranks: `report` of all K traces (each
rank's report, then the merged view) against `report` of rank 0 alone, on
one thread (LEAKWATCH_THREADS=1) and on every processor; from the two,
the part that does not run in parallel (Amdahl) gives what more
processors would make of it. Targets: fixed cost <= 0.5 s and 64 MB,
>= 20 M events/s, K ranks <= 2x one rank. Always exits 0: the figures
are for reading, not a gate.
"""
import argparse
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
from tracebytes import (FLAG_CHECKSUMS, HEADER_SIZE,  # noqa: E402
                        REC_CHECKSUM, REC_END, end, ext, read_varint,
                        records, varint)

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))

CHILD = r'''
import sys, torch
steps = int(sys.argv[1])
torch.backends.cudnn.enabled = False  # cuDNN does not start on the stand-in
torch.manual_seed(0)
d, layers, vocab, seq, batch = 256, 4, 1000, 64, 8

class GPT(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(vocab, d)
        self.pos = torch.nn.Parameter(torch.zeros(seq, d))
        layer = torch.nn.TransformerEncoderLayer(
            d, 4, 4 * d, batch_first=True, norm_first=True)
        self.body = torch.nn.TransformerEncoder(
            layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(d, vocab)
        self.mask = torch.nn.Transformer.generate_square_subsequent_mask(seq)

    def forward(self, x):
        h = self.emb(x) + self.pos
        h = self.body(h, mask=self.mask.to(x.device), is_causal=True)
        return self.head(h)

model = GPT().to("cuda")
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
for _ in range(steps):
    x = torch.randint(0, vocab, (batch, seq), device="cuda")
    loss = torch.nn.functional.cross_entropy(model(x).flatten(0, 1),
                                             x.flatten())
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
torch.cuda.synchronize()
'''


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("LEAKWATCH_", "PYTORCH_CUDA_ALLOC"))
            and k != "LD_PRELOAD"}


def make_trace(build, python, child, steps, path):
    cli = os.path.join(build, "report", "leakwatch")
    env = dict(clean_env(), LEAKWATCH_BUILD=build, LEAKWATCH_SYMBOL_CACHE="0",
               PYTHONDONTWRITEBYTECODE="1")
    # Every event written, as the figures of docs/cost.md were measured:
    # the reader's rate per event (a bounded trace sums most of them).
    cmd = [os.path.join(SOURCE, "scripts", "fakegpu.sh"), cli, "run",
           "--trace-detail", "full", "--trace", path, "--no-report", "--",
           python, child, str(steps)]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=3600)
    if r.returncode != 0 or not os.path.exists(path):
        sys.exit(f"bench-report-torch: the {steps}-step run failed "
                 f"({r.returncode}):\n{r.stderr[-4000:]}")


def events(build, path):
    cli = os.path.join(build, "report", "leakwatch")
    r = subprocess.run([cli, "report", "--format", "json", path],
                       env=dict(clean_env(), LEAKWATCH_SYMBOL_CACHE="0"),
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["events"]


def unsealed(data, extra_events):
    """A trace without its blocks' checksums (the flag off, the CHECKSUM
    records left out), so that records can be put in it, and its END
    counting extra_events more events."""
    head = bytearray(data[:HEADER_SIZE])
    flags = struct.unpack_from("<I", head, 12)[0]
    struct.pack_into("<I", head, 12, flags & ~FLAG_CHECKSUMS)
    body = bytearray()
    for start, stop, tag in records(data):
        if tag == REC_CHECKSUM:
            continue
        if tag == REC_END:
            i = start + 1
            _, i = read_varint(data, i)
            events, i = read_varint(data, i)
            dropped, i = read_varint(data, i)
            body += end(events + extra_events, dropped)
            continue
        body += data[start:stop]
    return bytes(head), bytes(body)


def make_ranks(src, directory, count):
    """count copies of a trace: pid 100000 + rank, INFO "rank", and one
    block of (rank + 1) MiB at address 0 from the start (address 0 keeps
    the deltas of the records after it). The copies are written without
    checksums: the shim's would not hold for the records changed."""
    head, body = unsealed(open(src, "rb").read(), 1)
    paths = []
    for rank in range(count):
        head = bytearray(head)
        struct.pack_into("<I", head, 24, 100000 + rank)
        key, value = b"rank", str(rank).encode()
        extra = ext(0x44, varint(len(key)) + key + varint(len(value)) +
                    value)  # INFO
        extra += bytes([0x01]) + varint(0) + varint((rank + 1) << 20) + \
            varint(0)  # ALLOC_DEVICE at 0, no stack
        path = os.path.join(directory, f"rank{rank}.trace")
        with open(path, "wb") as f:
            f.write(bytes(head) + extra + body)
        paths.append(path)
    return paths


# The peak RSS of a process started from this one counts this one's pages
# from before its exec: /usr/bin/time, small, reports the report's own.
TIME = "/usr/bin/time"


def measure(build, traces, cache, threads=None):
    """(wall s, CPU s, peak RSS MB or NaN) of one `leakwatch report`."""
    cli = os.path.join(build, "report", "leakwatch")
    env = dict(clean_env(), LEAKWATCH_SYMBOL_CACHE=cache)
    if threads:
        env["LEAKWATCH_THREADS"] = str(threads)
    rss_file = os.path.join(cache + ".rss")
    cmd = [cli, "report", "-o", os.devnull] + traces
    if os.access(TIME, os.X_OK):
        cmd = [TIME, "-f", "%M", "-o", rss_file] + cmd
    start = time.perf_counter()
    p = subprocess.Popen(cmd, env=env, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - start
    err = p.stderr.read()
    p.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"bench-report-torch: report failed: {err[-2000:]!r}")
    rss = float("nan")
    if os.path.exists(rss_file):
        rss = int(open(rss_file).read().split()[-1]) * 1024 / 1e6
        os.unlink(rss_file)
    return wall, usage.ru_utime + usage.ru_stime, rss


def median_of(runs, build, traces, tmp, cached, threads=None):
    """Medians of wall, CPU and RSS over runs, from an empty cache each
    time (cached False) or from a filled one."""
    cache = os.path.join(tmp, "cache")
    results = []
    if cached:
        shutil.rmtree(cache, ignore_errors=True)
        measure(build, traces, cache, threads)
    for _ in range(runs):
        if not cached:
            shutil.rmtree(cache, ignore_errors=True)
        results.append(measure(build, traces, cache, threads))
    return tuple(statistics.median(r[i] for r in results) for i in range(3))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("python", nargs="?",
                        default=os.environ.get("LW_TORCH_PYTHON", ""))
    parser.add_argument("--steps", type=int, default=4000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--quick", action="store_true",
                        help="3 runs, 1000 steps, 16 ranks")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.steps, args.ranks = 3, 1000, 16
    build = os.path.abspath(args.build)
    if not args.python:
        print("no PyTorch (pass TORCH_PYTHON or configure -Dtorch_python): "
              "skipped")
        return 77
    with tempfile.TemporaryDirectory() as tmp:
        child = os.path.join(tmp, "gpt.py")
        with open(child, "w") as f:
            f.write(CHILD)
        traces = {}
        for name, steps in (("tiny", 1), ("rank", 50), ("big", args.steps)):
            traces[name] = os.path.join(tmp, f"{name}.trace")
            make_trace(build, args.python, child, steps, traces[name])
            print(f"{name} trace: {steps} steps", file=sys.stderr,
                  flush=True)
        counts = {k: events(build, p) for k, p in traces.items()}
        ranks_dir = os.path.join(tmp, "ranks")
        os.mkdir(ranks_dir)
        ranks = make_ranks(traces["rank"], ranks_dir, args.ranks)
        report(args, build, tmp, traces, counts, ranks)
    return 0


def report(args, build, tmp, traces, counts, ranks):
    cpus = len(os.sched_getaffinity(0))
    print(f"leakwatch report on real PyTorch traces (GPT, 4 layers, d=256), "
          f"{cpus} processors, median of {args.runs} runs; load average "
          f"{os.getloadavg()[0]:.1f} (wall times mean something only on a "
          f"machine otherwise idle)\n")
    fig = {}
    for name in ("tiny", "big"):
        for cached in (False, True):
            fig[name, cached] = median_of(args.runs, build, [traces[name]],
                                          tmp, cached)
    print(f"{'':50} {'wall s':>8} {'CPU s':>8} {'RSS MB':>8}")
    for name, label in (("tiny", f"fixed cost: 1 step, {counts['tiny']:,} "
                                 "events"),
                        ("big", f"{args.steps} steps, {counts['big']:,} "
                                "events")):
        for cached in (False, True):
            w, c, m = fig[name, cached]
            what = "cached" if cached else "first"
            print(f"  {label + ', ' + what:<48.48} {w:8.3f} {c:8.3f} "
                  f"{m:8.1f}")
    for cached in (False, True):
        t, b = fig["tiny", cached], fig["big", cached]
        extra = counts["big"] - counts["tiny"]
        rate_wall = extra / max(b[0] - t[0], 1e-9) / 1e6
        rate_cpu = extra / max(b[1] - t[1], 1e-9) / 1e6
        print(f"  rate beyond the fixed cost, "
              f"{'cached' if cached else 'first'}: {rate_wall:.1f} M "
              f"events/s by wall time, {rate_cpu:.1f} M by CPU time "
              f"(target >= 20)")
    w, c, m = fig["tiny", False]
    print(f"  fixed cost, first report: {w:.3f} s, {m:.1f} MB (target "
          f"<= 0.5 s, 64 MB: {'met' if w <= 0.5 and m <= 64 else 'MISSED'})")

    k = len(ranks)
    print(f"\nmerged view: {k} ranks of {counts['rank']:,} events each "
          f"against rank 0 alone")
    for cached in (False, True):
        one = median_of(args.runs, build, ranks[:1], tmp, cached)
        seq = median_of(args.runs, build, ranks, tmp, cached, threads=1)
        par = median_of(args.runs, build, ranks, tmp, cached)
        what = "cached" if cached else "first"
        print(f"  {what}: one rank {one[0]:.3f} s ({one[2]:.1f} MB); "
              f"{k} ranks on 1 thread {seq[0]:.3f} s, on {cpus} "
              f"{par[0]:.3f} s ({par[1]:.3f} s CPU, {par[2]:.1f} MB): "
              f"{par[0] / one[0]:.1f}x one rank (target <= 2x)")
        print(f"    one rank {one[1]:.3f} s CPU; {k} ranks on 1 thread "
              f"{seq[1]:.3f} s CPU")
        if cpus > 1 and seq[0] > par[0]:
            # Amdahl: seq = s + p, par = s + p / cpus.
            p = (seq[0] - par[0]) * cpus / (cpus - 1)
            s = max(seq[0] - p, 0.0)
            more = ", ".join(f"{n}: {s + p / n:.3f} s "
                             f"({(s + p / n) / one[0]:.1f}x)"
                             for n in (4, 16, 64))
            print(f"    from the wall times: not in parallel {s:.3f} s, in "
                  f"parallel {p:.3f} s on one processor; with more "
                  f"processors {more}")


if __name__ == "__main__":
    sys.exit(main())
