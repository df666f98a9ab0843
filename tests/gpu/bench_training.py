# SPDX-License-Identifier: MIT
"""Step time of real PyTorch training loops with and without leakwatch.

    bench_training.py LIBLEAKWATCH [--steps N] [--repeats R]

Two models on the GPU, a small transformer and a convolutional network,
each trained for N steps in a fresh interpreter: plain, under the shim
(LD_PRELOAD, Python frames on), and with PyTorch's own
torch.cuda.memory._record_memory_history(stacks="python"). Prints the
median step time of each and the overheads; the target is at most 3% for
leakwatch and below PyTorch's recorder. Exits 77 where there is no CUDA
GPU or no PyTorch.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import sys, time, torch
model_name, steps, record = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
torch.manual_seed(0)
dev = "cuda"
if model_name == "transformer":
    layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True)
    model = torch.nn.Sequential(torch.nn.TransformerEncoder(layer, 4),
                                torch.nn.Linear(256, 256)).to(dev)
    def batch():
        return torch.randn(32, 128, 256, device=dev)
else:
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(64, 128, 3, padding=1), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(128, 256, 3, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
        torch.nn.Linear(256, 10)).to(dev)
    def batch():
        return torch.randn(64, 3, 64, 64, device=dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
if record:
    torch.cuda.memory._record_memory_history(stacks="python")
times = []
for i in range(steps):
    torch.cuda.synchronize()
    t = time.perf_counter()
    x = batch()
    loss = model(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    torch.cuda.synchronize()
    times.append(time.perf_counter() - t)
times = sorted(times[steps // 5:])  # after warm-up
print(times[len(times) // 2])
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lib")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    probe = subprocess.run(
        [sys.executable, "-c",
         "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"],
        capture_output=True)
    if probe.returncode != 0:
        print("no PyTorch with a CUDA GPU here: skipped")
        return 77
    base = {k: v for k, v in os.environ.items()
            if not k.startswith("LEAKWATCH_") and k != "LD_PRELOAD"}
    device = subprocess.run(
        [sys.executable, "-c",
         "import torch; print(torch.cuda.get_device_name(0), torch.__version__)"],
        capture_output=True, text=True).stdout.strip()
    print(f"{device}: median step time of {args.steps} steps, median of "
          f"{args.repeats} runs")
    failed = 0
    with tempfile.TemporaryDirectory() as d:
        shim = dict(base, LD_PRELOAD=os.path.abspath(args.lib),
                    LEAKWATCH_QUIET="1",
                    LEAKWATCH_OUT=os.path.join(d, "train-%p.trace"))

        def step_time(model, env, record):
            runs = []
            for _ in range(args.repeats):
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, model, str(args.steps),
                     "1" if record else "0"],
                    env=env, capture_output=True, text=True, timeout=600,
                    check=True)
                runs.append(float(out.stdout.split()[-1]))
            return statistics.median(runs)

        for model in ("transformer", "convnet"):
            plain = step_time(model, base, False)
            lw = step_time(model, shim, False)
            torch_rec = step_time(model, base, True)
            lw_over = lw / plain - 1
            rec_over = torch_rec / plain - 1
            ok = lw_over <= 0.03 and lw < torch_rec
            failed += not ok
            print(f"{model:12s} plain {plain * 1e3:.2f} ms, leakwatch "
                  f"{lw * 1e3:.2f} ms ({lw_over:+.1%}), _record_memory_history"
                  f" {torch_rec * 1e3:.2f} ms ({rec_over:+.1%})"
                  f"  [target <= +3% and below PyTorch's: "
                  f"{'met' if ok else 'missed'}]")
    return 0


if __name__ == "__main__":
    sys.exit(main())
