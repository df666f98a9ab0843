# SPDX-License-Identifier: MIT
"""PyTorch's native caching allocator seen through its profiler hooks, on
the stand-in libc10/libc10_cuda pair (tests/programs/c10.c, c10_cuda.c),
whose allocator calls c10::reportMemoryUsageToProfiler across the two
objects as PyTorch's does. torch_steps prints the allocator's own counters
(what torch.cuda.memory_allocated()/memory_reserved() would say) and what
the stand-in libc10's hook received, so every figure below is held
against the program's own."""
import os
import re
import shutil
import sys
import tempfile

from lwtest import Run, check, check_eq, main, prog, report

CONFIGS = {
    "native": {},
    "expandable": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"},
    "async": {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"},
    "no-caching": {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"},
}
CLEAN = {"PYTORCH_CUDA_ALLOC_CONF": None, "PYTORCH_ALLOC_CONF": None,
         "PYTORCH_NO_CUDA_MEMORY_CACHING": None}


def torch_steps(mode, steps, env):
    run = Run([prog("torch_steps"), mode, str(steps)],
              env={**CLEAN, **env}).expect_ok()
    counters = {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", run.stdout)}
    return run, counters


def hook_levels():
    """Under each configuration, with the allocator left as configured:
    the 512-byte loss kept per step is found at +512 B per step, each
    tensor counted once; under the native allocator (plain or expandable)
    allocated and reserved are the allocator's own counters to the byte,
    and every hook call reached the real libc10 with its arguments."""
    native_live = None
    for name, env in CONFIGS.items():
        run, c = torch_steps("leak", 20, env)
        rep = report(run.trace())
        t = rep["torch_allocator"]
        check(t is not None and t["tensors_visible"], f"{name}: {t}")
        hooked = name in ("native", "expandable")
        if hooked:
            check_eq((t["allocated_bytes_at_end"], t["reserved_bytes_at_end"],
                      t["peak_allocated_bytes"], t["peak_reserved_bytes"]),
                     (c["allocated"], c["reserved"], c["peak_allocated"],
                      c["peak_reserved"]), f"{name}: the two levels")
            last = rep["step_series"][-1]
            check_eq((last["allocated_bytes"], last["reserved_bytes"]),
                     (c["allocated"], c["reserved"]),
                     f"{name}: the last step point")
            # Forwarded: the real hook saw the same blocks and bytes.
            check(c["hook_calls"] > t["blocks"] > 0,
                  f"{name}: hook calls {c['hook_calls']}, blocks {t['blocks']}")
            check_eq(c["hook_bytes"], c["allocated"],
                     f"{name}: the real hook's running total")
            # Counted once: the segments are not live allocations.
            check_eq(rep["live_bytes_at_exit"], c["allocated"],
                     f"{name}: live bytes are the tensors")
            native_live = native_live or rep["live_bytes_at_exit"]
        else:
            check_eq((t["blocks"], t["segments"], c["hook_calls"]), (0, 0, 0),
                     f"{name}: no hook, no segment")
            # The same tensors as under the native allocator.
            check_eq(rep["live_bytes_at_exit"], native_live,
                     f"{name}: live bytes")
        losses = [f for f in rep["findings"]
                  if f["category"] == "retained-loss"]
        check_eq(len(losses), 1, f"{name}: findings {rep['findings']}")
        check_eq((losses[0]["evidence"]["bytes_per_step"],
                  losses[0]["evidence"]["count_per_step"]), (512, 1),
                 f"{name}: growth of the kept loss")
        check_eq(losses[0]["location"]["function"], "loss_of",
                 f"{name}: the loss's location")
    return 0


def clean_steps():
    """The same loop freeing its loss: no leak under any configuration."""
    for name, env in CONFIGS.items():
        run, _ = torch_steps("clean", 20, env)
        rep = report(run.trace())
        check_eq([f["category"] for f in rep["findings"] if f["leak"]], [],
                 f"{name}: leaks")
        check_eq(rep["verdict"], "stable", f"{name}: verdict")
    return 0


def cache_growth():
    """A larger activation every step, freed each time: the cache grows,
    the tensors do not. A pool-fragmentation finding, not a leak, whose fix
    names expandable segments; under expandable segments the same program
    is no leak either."""
    run, c = torch_steps("fragment", 20, {})
    rep = report(run.trace())
    check_eq(rep["verdict"], "stable", "tensors: verdict")
    check(rep["torch_allocator"]["reserved_bytes_at_end"] == c["reserved"]
          and c["reserved"] > 10 * c["peak_allocated"] // 2,
          f"reserved grew: {c}")
    growth = [f for f in rep["findings"] if f["category"] == "pool-fragmentation"]
    check_eq(len(growth), 1, f"findings {rep['findings']}")
    check_eq(growth[0]["leak"], False, "not a leak")
    check("expandable_segments:True" in growth[0]["fix"] and
          "empty_cache()" in growth[0]["fix"], f"fix: {growth[0]['fix']}")
    check(growth[0]["evidence"]["bytes_per_step"] > 0, "reserved per step")
    check_eq([f for f in rep["findings"] if f["leak"]], [], "leaks")
    text = report(run.trace(), fmt="text")
    check("pool-fragmentation" in text and "reserved memory grows by" in text,
          f"text: {text}")
    # Steady shapes: no finding.
    run, _ = torch_steps("clean", 20, {})
    check_eq([f["category"] for f in report(run.trace())["findings"]
              if f["category"] == "pool-fragmentation"], [], "steady shapes")
    return 0


def out_of_memory():
    """The allocator runs out: the trace has PyTorch's request and counters
    (flushed at once), what was live then by site, and the text report's
    section."""
    run, c = torch_steps("oom", 1, {"FAKECUDA_CAPACITY": "64M"})
    check_eq(c["hook_ooms"], 1, "the real OOM hook was called")
    rep = report(run.trace())
    oom = rep["oom"]
    check(oom is not None, "an oom object")
    check_eq((oom["count"], oom["size"]), (1, 1 << 20), "the request")
    check_eq((oom["allocated"], oom["reserved"]),
             (c["allocated"], c["reserved"]), "PyTorch's counters then")
    check_eq(oom["tracked_allocated"], oom["allocated"],
             "allocated as the trace shows it")
    check_eq(oom["live_bytes"], c["allocated"], "live then")
    top = oom["sites"][0]
    check_eq((top["bytes"], top["location"]["function"]),
             (c["allocated"] - 4096, "main"), "the site that filled it")
    text = report(run.trace(), fmt="text")
    check("At the out-of-memory error" in text and
          "PyTorch asked for 1.0 MiB" in text, f"text: {text}")
    # No OOM, no section.
    run, _ = torch_steps("clean", 2, {})
    check_eq(report(run.trace())["oom"], None, "no oom")
    return 0


# A stand-in of torch.autograd, installed as a package: backward() makes
# the initial gradient in _make_grads() on the calling thread, then runs
# the graph on the stand-in engine's device thread (tests/programs/
# torch_cpu.c), which allocates a 4 KiB gradient that it keeps.
AUTOGRAD = """
import ctypes, os
c10_cuda = ctypes.CDLL(os.environ["LW_C10_CUDA"])
c10_cuda.c10_cuda_alloc.restype = ctypes.c_void_p
c10_cuda.c10_cuda_alloc.argtypes = [ctypes.c_size_t]
c10_cuda.c10_cuda_free.argtypes = [ctypes.c_void_p]
torch_cpu = ctypes.CDLL(os.environ["LW_TORCH_CPU"])
torch_cpu.torch_cpu_run_backward.argtypes = [ctypes.c_size_t, ctypes.c_int]

def _make_grads():
    return c10_cuda.c10_cuda_alloc(512)

def backward():
    # A gradient given: nothing made on the calling thread.
    ones = None if os.environ.get("GRADIENT_GIVEN") else _make_grads()
    rc = torch_cpu.torch_cpu_run_backward(4096, 1)
    if ones:
        c10_cuda.c10_cuda_free(ones)
    if rc:
        raise RuntimeError("backward failed")
"""
TRAIN = """
import sys
sys.path.insert(0, sys.argv[1])
import leakwatch
import torch.autograd
for step in range(20):
    torch.autograd.backward()  # BACKWARD
    leakwatch.step()
"""


def backward_attribution():
    """Blocks allocated on the autograd engine's device thread (no Python
    frames) are attributed to the line that called backward(), and shown
    in backward; without _make_grads first, they keep their native stack."""
    tmp = tempfile.mkdtemp(prefix="lw-backward-")
    site = os.path.join(tmp, "lib", "python3", "site-packages")
    os.makedirs(os.path.join(site, "torch", "autograd"))
    open(os.path.join(site, "torch", "__init__.py"), "w").close()
    with open(os.path.join(site, "torch", "autograd", "__init__.py"),
              "w") as f:
        f.write(AUTOGRAD)
    train = os.path.join(tmp, "train.py")
    with open(train, "w") as f:
        f.write(TRAIN)
    line = next(i for i, text in enumerate(TRAIN.splitlines(), 1)
                if "# BACKWARD" in text)
    pydir = os.environ["LW_PYTHON_DIR"]
    env = {**CLEAN, "PYTHONPATH": site}
    run = Run([sys.executable, train, pydir], env=env).expect_ok()
    rep = report(run.trace())
    grads = [s for s in rep["sites"] if s["live_count"] == 20]
    check_eq(len(grads), 1, f"the kept gradients' site: {rep['sites']}")
    loc = grads[0]["location"]
    check_eq((loc["file"], loc["line"], loc["in_backward"]),
             (train, line, True), "attributed to the backward() line")
    check_eq(grads[0]["native_thread"], False, "not a native thread's")
    check_eq(grads[0]["verdict"], "growing", "verdict")
    text = report(run.trace(), fmt="text")
    check(f"in backward() called from <module>  {train}:{line}" in text,
          f"text: {text}")
    # No _make_grads: the engine's native stack, a native thread's.
    run = Run([sys.executable, train, pydir],
              env={**env, "GRADIENT_GIVEN": "1"}).expect_ok()
    grads = [s for s in report(run.trace())["sites"]
             if s["live_count"] == 20]
    check_eq((len(grads), grads[0]["native_thread"],
              grads[0]["location"]["python"],
              grads[0]["location"]["in_backward"]), (1, True, False, False),
             "a gradient given: not attributed")
    shutil.rmtree(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main({f.__name__: f for f in [
        hook_levels, clean_steps, cache_growth, out_of_memory,
        backward_attribution]}))
