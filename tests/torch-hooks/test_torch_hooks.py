#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Real PyTorch under leakwatch on the stand-in GPU (scripts/fakegpu.sh),
PyTorch's allocator left as configured: the levels that leakwatch reads
from PyTorch's profiler hooks against torch.cuda's own counters, and the
out-of-memory section. Skipped (77) unless a Python with PyTorch is named,
by LEAKWATCH_TORCH_PYTHON or meson's torch_python option
(scripts/torch-env.sh prints one).

    test_torch_hooks.py levels|oom|backward|cache_growth|graphs
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFIGS = {
    "native": {},
    "expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "async": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
    "no-caching": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
}


def run(tmp, script, env_extra, fmt):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))}
    env["LEAKWATCH_BUILD"] = os.environ["LW_BUILD"]
    env.update(env_extra)
    out = os.path.join(tmp, f"report.{fmt}")
    counters = os.path.join(tmp, "torch.json")
    r = subprocess.run([os.path.join(os.environ["LW_SCRIPTS"], "fakegpu.sh"),
                        os.environ["LW_CLI"], "run", "--format", fmt,
                        "-o", out, "--", os.environ["LW_TORCH_PYTHON"],
                        os.path.join(HERE, script), counters],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        sys.exit(f"{script} exited {r.returncode}: {r.stderr[-2000:]}")
    return out, counters


def levels():
    bad = 0
    for name, env in CONFIGS.items():
        with tempfile.TemporaryDirectory(prefix="lw-torch-") as tmp:
            report, counters = run(tmp, "levels.py", env, "json")
            mode = "native" if name in ("native", "expandable") else "tensors"
            r = subprocess.run([sys.executable,
                                os.path.join(HERE, "compare.py"), report,
                                counters, "--mode", mode])
            print(f"  ({name})")
            bad += r.returncode != 0
    return 1 if bad else 0


def oom():
    with tempfile.TemporaryDirectory(prefix="lw-torch-") as tmp:
        report, counters = run(tmp, "oom.py", {"FAKECUDA_CAPACITY": "512M"},
                               "json")
        torch = json.load(open(counters))
        rep = json.load(open(report))
        if "reports" in rep:
            rep = max(rep["reports"], key=lambda x: x["steps"])
        o = rep["oom"]
        print(f"torch at the error: {torch.get('allocated')} allocated, "
              f"{torch.get('reserved')} reserved; leakwatch: "
              f"{o and (o['allocated'], o['reserved'], o['tracked_allocated'])}")
        if not torch or o is None:
            print("no out-of-memory error in the trace")
            return 1
        top = o["sites"][0]["location"] or {}
        grew = o["grew"]["sites"][0]["location"] or {}
        if not (top.get("file") or "").endswith("oom.py") or \
                not (grew.get("file") or "").endswith("oom.py") or \
                o["tracked_allocated"] != o["allocated"] or \
                o["tracked_reserved"] != o["reserved"]:
            print(f"wrong section: {json.dumps(o)[:2000]}")
            return 1
    return 0


def backward():
    """Gradients made on autograd's device thread and kept every step are
    reported at the line that called torch.autograd.grad(), in backward,
    with the autograd node that made them."""
    script = os.path.join(HERE, "backward.py")
    line = next(i for i, text in enumerate(open(script), 1)
                if "# GRAD" in text)
    weight_grad = 128 * 128 * 4  # backward.py's Linear(128, 128) weight
    bad = 0
    for name, env in CONFIGS.items():
        with tempfile.TemporaryDirectory(prefix="lw-torch-") as tmp:
            report, _ = run(tmp, "backward.py", env, "json")
            rep = json.load(open(report))
            if "reports" in rep:
                rep = max(rep["reports"], key=lambda x: x["steps"])
        sites = [s for s in rep["sites"] if s["location"]
                 and s["location"]["in_backward"]
                 and (s["location"]["file"] or "").endswith("backward.py")
                 and s["location"]["line"] == line]
        grown = [s for s in sites if s["verdict"] == "growing"
                 and s["growth_bytes_per_step"] == weight_grad]
        print(f"{name}: sites at backward.py:{line} in backward: "
              f"{[(s['location']['autograd_node'], s['growth_bytes_per_step']) for s in sites]}")
        if not grown or \
                grown[0]["location"]["autograd_node"] != "AddmmBackward0":
            print(f"{name}: the kept gradient is not reported in backward "
                  "at the grad() line")
            bad += 1
    return 1 if bad else 0


def cache_growth():
    """New shapes every step under the native allocator: reserved memory
    grows, allocated memory does not. One pool-fragmentation finding, not a
    leak, led by the line that makes the new shapes; no leak finding."""
    script = os.path.join(HERE, "fragment.py")
    line = next(i for i, text in enumerate(open(script), 1)
                if "# SHAPES" in text)
    with tempfile.TemporaryDirectory(prefix="lw-torch-") as tmp:
        report, counters = run(tmp, "fragment.py", {}, "json")
        torch = json.load(open(counters))
        rep = json.load(open(report))
        if "reports" in rep:
            rep = max(rep["reports"], key=lambda x: x["steps"])
    reserved = [p["reserved_bytes"] for p in rep["step_series"]]
    theirs = [c["reserved"] for c in torch["steps"]]
    found = [f for f in rep["findings"] if f["category"] == "pool-fragmentation"]
    leaks = [f for f in rep["findings"] if f["leak"]]
    print(f"reserved per step: leakwatch {reserved}, torch {theirs}; "
          f"findings {[(f['category'], f['location']['line']) for f in rep['findings']]}")
    if reserved != theirs or len(found) != 1 or leaks or \
            found[0]["location"]["line"] != line or \
            "expandable_segments:True" not in found[0]["fix"]:
        return 1
    return 0


def graphs():
    """A forward captured in a CUDA graph and replayed every step: the
    graph's private pool is no leak; the one finding is the copy kept per
    step, at its line, 2560 bytes a step; under the native allocator the
    allocated level when the script's code finished is PyTorch's. (No caching is left out:
    PyTorch does not capture without its caching allocator.)"""
    script = os.path.join(HERE, "graphs.py")
    line = next(i for i, text in enumerate(open(script), 1)
                if "# KEPT" in text)
    bad = 0
    for name in ("native", "expandable", "async"):
        with tempfile.TemporaryDirectory(prefix="lw-torch-") as tmp:
            report, counters = run(tmp, "graphs.py", CONFIGS[name], "json")
            torch = json.load(open(counters))
            rep = json.load(open(report))
            if "reports" in rep:
                rep = max(rep["reports"], key=lambda x: x["steps"])
        leaks = [f for f in rep["findings"] if f["leak"]]
        alloc = rep["torch_allocator"]
        print(f"{name}: steps {rep['steps']}, findings "
              f"{[(f['category'], f['location']['line'], f['evidence']['bytes_per_step']) for f in leaks]}, "
              f"allocated when the program's code finished: leakwatch "
              f"{alloc['allocated_bytes_at_program_end']}, "
              f"torch {torch['allocated']}")
        # PyTorch's counter is read as the script ends: what the shim
        # counted then (finalization, after, frees the script's globals
        # in an order the modules loaded decide).
        if rep["steps"] != 30 or len(leaks) != 1 or \
                leaks[0]["location"]["line"] != line or \
                leaks[0]["evidence"]["bytes_per_step"] != 64 * 10 * 4 or \
                (name != "async" and
                 alloc["allocated_bytes_at_program_end"] != torch["allocated"]):
            print(f"{name}: wrong")
            bad += 1
    return 1 if bad else 0


def main():
    python = os.environ.get("LEAKWATCH_TORCH_PYTHON") or \
        os.environ.get("LW_TORCH_PYTHON_OPTION")
    if not python or not os.path.exists(python):
        print("skipped: no Python with PyTorch (LEAKWATCH_TORCH_PYTHON, "
              "or meson setup -Dtorch_python=$(scripts/torch-env.sh | "
              "tail -1))")
        return 77
    os.environ["LW_TORCH_PYTHON"] = python
    return {"levels": levels, "oom": oom, "backward": backward,
            "cache_growth": cache_growth, "graphs": graphs}[sys.argv[1]]()


if __name__ == "__main__":
    sys.exit(main())
