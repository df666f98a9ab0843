#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Cost on real PyTorch: leakwatch beside torch.cuda.memory's own recorder.

    bench-torch.py BUILD_DIR TORCH_PYTHON [--steps N] [--runs R] [--quick]

Three models (a small transformer block, an MLP, a small convolution net with
cuDNN off) train for N steps each on the stand-in GPU (scripts/fakegpu.sh),
in one fresh interpreter per configuration and run, the configurations
alternated run by run:

  none            no tool (PyTorch's native caching allocator)
  none-async      no tool, PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
                  (the baseline of leakwatch's configurations that run on it)
  lw-default      `leakwatch run`, its defaults
  lw-async        `leakwatch run`, PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
  lw-native       `leakwatch run`, LEAKWATCH_TORCH_ALLOCATOR=keep
  rmh-all         _record_memory_history(enabled="all", context="all",
                  stacks="python")
  rmh-alloc       _record_memory_history(context="alloc", stacks="python")
  lw-leak         (not in the default list) `leakwatch run`, its defaults,
                  on models whose timed loop, a function, keeps every
                  step's loss in a local list: the holder searches made
                  during the run, their count and their share of the
                  process's wall time [target: <= 1%]

The figure is the process's CPU time per step (time.process_time, all
threads, around each step, synchronised, after warm-up steps; start-up,
imports and the report are outside it): the median step of a run, then the
median over runs. The mean step is printed too (it also counts the rare
steps that a flush, a collection or another process made slow). Kernels take no time on the stand-in, so a
step is pure host work (the cycle collector's long-lived objects are frozen
before the timed steps: a full collection is the same work under every tool
and, landing in some runs' windows and not others', only noise): the worst case for relative overhead, and what the
targets are judged on:

  - leakwatch's added CPU per step <= 0.5x what _record_memory_history
    (stacks="python") adds (the cheaper of its two settings);
  - leakwatch's added CPU <= 10% of the step's CPU time;
  - the shim's resident memory <= 100 bytes per live tensor (a program that
    holds many small tensors, RSS growth with and without the tool), and
    bounded in steps (RSS growth from the end of warm-up to the last step).

The added cost of a configuration is taken against the no-tool run on the
same allocator (none for lw-native and the recorders; the allocator
leakwatch's default selects, for lw-default; none-async for lw-async), so
that the change of allocator is not counted as the tool's. Both are printed.
The spread (max-min over median, of the no-tool runs) is printed as the
noise. Always exits 0: the figures are for reading, not a gate.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))

# The three models, as a program's source (bench-trace-size.py trains them
# too).
MODELS_SOURCE = r'''
def models():
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(128, 4, 512, batch_first=True)
    yield "transformer", layer.to(dev), lambda: torch.randn(16, 64, 128, device=dev)
    mlp = torch.nn.Sequential(
        torch.nn.Linear(512, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 1024), torch.nn.ReLU(),
        torch.nn.Linear(1024, 10))
    yield "mlp", mlp.to(dev), lambda: torch.randn(64, 512, device=dev)
    conv = torch.nn.Sequential(
        torch.nn.Conv2d(3, 32, 3, padding=1), torch.nn.BatchNorm2d(32),
        torch.nn.ReLU(), torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(32, 64, 3, padding=1), torch.nn.BatchNorm2d(64),
        torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(64, 10))
    yield "convnet", conv.to(dev), lambda: torch.randn(16, 3, 32, 32, device=dev)

'''

CHILD = r'''
import gc, os, sys, time
start = time.perf_counter()
import torch
mode, steps, warm, hold = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
torch.backends.cudnn.enabled = False  # cuDNN does not start on the stand-in
dev = "cuda"

def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

''' + MODELS_SOURCE + r'''
if mode == "rmh-all":
    torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks="python")
elif mode == "rmh-alloc":
    torch.cuda.memory._record_memory_history(context="alloc", stacks="python")

def timed(step, steps):
    """The timed steps, in a function as training loops are; lw-leak
    keeps each step's loss in its local list."""
    kept, cpu = [], []
    for _ in range(steps):
        t = time.process_time()
        loss = step()
        torch.cuda.synchronize()
        cpu.append(time.process_time() - t)
        if mode == "lw-leak":
            kept.append(loss)
    return cpu

for name, model, batch in models():
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    def step():
        x = batch()
        loss = model(x).float().pow(2).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        return loss
    for _ in range(warm):
        step()
    torch.cuda.synchronize()
    # A full collection lands in one run's timed window and not another's,
    # scanning the same module-level objects in every configuration: freeze
    # them, so the figure is the step's own work.
    gc.collect()
    gc.freeze()
    rss0 = rss()
    cpu = timed(step, steps)
    cpu.sort()
    print(f"{name} {cpu[len(cpu) // 2] * 1e6:.1f} {rss() - rss0} "
          f"{sum(cpu) / steps * 1e6:.1f}", flush=True)
    del model, opt

# Many small live tensors at once: the resident memory per live tensor.
torch.cuda.synchronize()
before = rss()
held = [torch.empty(64, device=dev) for _ in range(hold)]
torch.cuda.synchronize()
print(f"hold {(rss() - before) / hold:.1f} 0 0", flush=True)
del held
print(f"wall {time.perf_counter() - start:.6f} 0 0", flush=True)
'''

CONFIGS = ("none", "none-async", "lw-default", "lw-async", "lw-native",
           "rmh-all", "rmh-alloc")
MODELS = ("transformer", "mlp", "convnet")
ASYNC = {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"}


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith(("LEAKWATCH_", "PYTORCH_CUDA_ALLOC"))
            and k != "LD_PRELOAD"}


def command(build, python, child, config, args, out):
    fakegpu = [os.path.join(SOURCE, "scripts", "fakegpu.sh")]
    prog = [python, child, config, str(args.steps), str(args.warm),
            str(args.hold)]
    env = dict(clean_env(), LEAKWATCH_BUILD=build,
               PYTHONDONTWRITEBYTECODE="1")
    if config == "none-async":
        env.update(ASYNC)
    if config.startswith("lw-"):
        if config == "lw-leak":
            env["LEAKWATCH_QUIET"] = "1"
        if config == "lw-async":
            env.update(ASYNC)
        if config == "lw-native":
            env["LEAKWATCH_TORCH_ALLOCATOR"] = "keep"
        cli = os.path.join(build, "report", "leakwatch")
        return fakegpu + [cli, "run", "--format", "json", "-o", out,
                          "--"] + prog, env
    return fakegpu + prog, env


def run_once(build, python, child, config, args, out):
    cmd, env = command(build, python, child, config, args, out)
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=900)
    figures = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in MODELS + ("hold", "wall"):
            figures[parts[0]] = (float(parts[1]), int(parts[2]),
                                 float(parts[3]))
    if r.returncode != 0 or len(figures) != len(MODELS) + 2:
        sys.exit(f"bench-torch: {config} failed ({r.returncode}):\n"
                 f"{r.stdout[-2000:]}{r.stderr[-4000:]}")
    if config == "lw-leak":
        # The shim's own count of its searches during the run.
        with open(out) as f:
            doc = json.load(f)
        rep = max(doc.get("reports", [doc]), key=lambda x: x["allocations"])
        n, seconds = rep["info"].get("holder_searches_in_run", "0 0").split()
        figures["searches"] = (float(seconds), int(n), 0.0)
    return figures


def default_allocator(build, python, child, args, out):
    """The allocator leakwatch's default runs PyTorch on: its baseline."""
    probe = ("import torch; torch.zeros(1, device='cuda'); "
             "print('ALLOC', torch.cuda.get_allocator_backend())")
    cmd, env = command(build, python, child, "lw-default", args, out)
    cmd = cmd[:cmd.index("--") + 1] + [python, "-c", probe]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True,
                       timeout=300)
    for line in r.stdout.splitlines():
        if line.startswith("ALLOC "):
            return line.split()[1]
    return "native"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("python", nargs="?",
                        default=os.environ.get("LW_TORCH_PYTHON", ""))
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--warm", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--hold", type=int, default=100000)
    parser.add_argument("--configs", default=",".join(CONFIGS))
    parser.add_argument("--quick", action="store_true",
                        help="3 runs of 50 steps")
    args = parser.parse_args()
    if args.quick:
        args.runs, args.steps, args.hold = 3, 50, 50000
    build = os.path.abspath(args.build)
    if not args.python:
        print("no PyTorch (pass TORCH_PYTHON or configure -Dtorch_python): "
              "skipped")
        return 77
    configs = args.configs.split(",")
    with tempfile.TemporaryDirectory() as d:
        child = os.path.join(d, "train.py")
        with open(child, "w") as f:
            f.write(CHILD)
        out = os.path.join(d, "report.json")
        backend = default_allocator(build, args.python, child, args, out)
        results = {c: [] for c in configs}
        for i in range(args.runs):
            # Alternate, and rotate the order so no configuration always
            # runs first (after the idle gap) or last.
            k = i % len(configs)
            for config in configs[k:] + configs[:k]:
                results[config].append(
                    run_once(build, args.python, child, config, args, out))
            print(f"run {i + 1}/{args.runs} done", file=sys.stderr,
                  flush=True)
    print_table(results, [c for c in configs if c != "lw-leak"], backend,
                args)
    print_searches(results, args)
    return 0


def med(results, config, key, index=0):
    return statistics.median(r[key][index] for r in results[config])


def print_table(results, configs, backend, args):
    base_of = {"lw-default": "none-async" if backend == "cudaMallocAsync"
               else "none",
               "lw-async": "none-async", "lw-native": "none",
               "rmh-all": "none", "rmh-alloc": "none"}
    print(f"CPU time of the median step, us: median of {args.runs} runs of "
          f"{args.steps} steps after {args.warm} of warm-up; leakwatch's "
          f"default runs PyTorch on {backend}")
    print(f"{'model':12s}" + "".join(f"{c:>12s}" for c in configs))
    for m in MODELS:
        print(f"{m:12s}" + "".join(f"{med(results, c, m):12.0f}"
                                   for c in configs))
    print("mean step, us (median over runs):")
    for m in MODELS:
        print(f"{m:12s}" + "".join(f"{med(results, c, m, 2):12.0f}"
                                   for c in configs))
    print("noise (max-min)/median of the no-tool runs: " + ", ".join(
        f"{m} {noise(results, 'none', m):.0%}" for m in MODELS
        if "none" in results))
    print()
    print("added CPU per step against the no-tool run on the same allocator;"
          " targets: <= 0.5x the recorder's (stacks=python) added, <= 10% of "
          "the step")
    for m in MODELS:
        added = {}
        for c in configs:
            b = base_of.get(c)
            if b in results:
                added[c] = med(results, c, m) - med(results, b, m)
        rmh = [added[c] for c in ("rmh-alloc", "rmh-all") if c in added]
        rmh_added = min(rmh) if rmh else None
        for c in ("lw-default", "lw-async", "lw-native"):
            if c not in added:
                continue
            b = base_of[c]
            step = med(results, b, m)
            share = added[c] / step
            line = (f"  {m:12s} {c:11s} +{added[c]:7.0f} us "
                    f"({share:+6.1%} of {step:.0f} us)"
                    f" [<= 10%: {'met' if share <= 0.10 else 'MISSED'}]")
            if rmh_added:
                ratio = added[c] / rmh_added
                line += (f"  {ratio:5.2f}x the recorder's +{rmh_added:.0f}"
                         f" us [<= 0.5x: "
                         f"{'met' if ratio <= 0.5 else 'MISSED'}]")
            print(line)
        if base_of.get("lw-default") != "none" and {"lw-default",
                                                    "none"} <= set(results):
            whole = med(results, "lw-default", m) - med(results, "none", m)
            print(f"  {m:12s} {'lw-default':11s} +{whole:7.0f} us against "
                  "no tool on the native allocator (the switch included)")
        for c in ("rmh-all", "rmh-alloc"):
            if c in added:
                print(f"  {m:12s} {c:11s} +{added[c]:7.0f} us "
                      f"({added[c] / med(results, 'none', m):+6.1%})")
    print()
    print(f"resident memory: per live tensor ({args.hold} tensors of 256 "
          "bytes held at once), and growth over the timed steps, KiB "
          "[target: <= 100 bytes per tensor more than without the tool; "
          "bounded in steps]")
    for c in configs:
        per = med(results, c, "hold")
        grow = ", ".join(f"{m} {med(results, c, m, 1) / 1024:.0f}"
                         for m in MODELS)
        line = f"  {c:11s} {per:7.1f} bytes/tensor; growth {grow}"
        b = base_of.get(c)
        if c.startswith("lw-") and b in results:
            extra = per - med(results, b, "hold")
            line += (f"; the tool's {extra:+.1f} bytes/tensor [<= 100: "
                     f"{'met' if extra <= 100 else 'MISSED'}]")
        print(line)


def print_searches(results, args):
    """The holder searches of lw-leak: each model's loop keeps its losses
    in a local list, the leak the searches during the run are for."""
    if "lw-leak" not in results:
        return
    runs = results["lw-leak"]
    share = [r["searches"][0] / r["wall"][0] for r in runs]
    print()
    print(f"holder searches during the run (lw-leak: {len(MODELS)} models, "
          f"{args.steps} steps each, every loss kept by the loop's local "
          f"list): median of {len(runs)} runs")
    print(f"  {statistics.median(r['searches'][1] for r in runs):.0f} "
          f"searches, {statistics.median(r['searches'][0] for r in runs) * 1e3:.1f}"
          f" ms in all, of {statistics.median(r['wall'][0] for r in runs):.2f}"
          f" s of the process's wall time: {statistics.median(share):.2%} "
          f"[<= 1%: {'met' if statistics.median(share) <= 0.01 else 'MISSED'}]")


def noise(results, config, key):
    xs = [r[key][0] for r in results[config]]
    return (max(xs) - min(xs)) / statistics.median(xs)


if __name__ == "__main__":
    sys.exit(main())
