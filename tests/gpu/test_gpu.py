#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""GPU tests: real PyTorch, CuPy and JAX programs under `leakwatch run`, on
a real GPU, asserting what leakwatch sees under each allocator setting.

Exit 77 (skipped) without an NVIDIA GPU, or without the framework a
scenario needs. Run with `meson test -C build --suite gpu --verbose` on a
machine with a GPU; record the result (date, device) in README.md.

Usage: test_gpu.py SCENARIO
"""
import ctypes
import importlib.util
import json
import os
import subprocess
import sys
import tempfile

SKIP = 77
STEPS = 30
PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "gpu_programs.py")
LEAK_LINE = {}


class Failure(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failure(what)


def leak_line(program):
    """The line marked LEAK in the given program's function."""
    if not LEAK_LINE:
        with open(PROGRAM) as f:
            func = None
            for n, line in enumerate(f, 1):
                if line.startswith("def "):
                    func = line.split()[1].split("_")[0]
                if "# LEAK" in line:
                    LEAK_LINE[func] = n
    return LEAK_LINE[program]


def clean_environment():
    """The suite's environment without the stand-in CUDA libraries."""
    env = dict(os.environ)
    fake = env.get("LW_FAKECUDA_DIR", "\0")
    paths = [p for p in env.get("LD_LIBRARY_PATH", "").split(":")
             if p and not p.startswith(fake)]
    env["LD_LIBRARY_PATH"] = ":".join(paths)
    for key in list(env):
        if key.startswith(("LEAKWATCH_", "PYTORCH_", "XLA_")):
            del env[key]
    return env


def gpu_present():
    """True when the real driver initializes and finds a device. Asked in a
    child process, so that this one never holds a CUDA context."""
    if not os.path.exists("/dev/nvidiactl"):
        return False
    probe = ("import ctypes, sys\n"
             "try:\n"
             "    cuda = ctypes.CDLL('libcuda.so.1')\n"
             "except OSError:\n"
             "    sys.exit(1)\n"
             "n = ctypes.c_int(0)\n"
             "ok = cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(n)) == 0\n"
             "sys.exit(0 if ok and n.value > 0 else 1)\n")
    return subprocess.run([sys.executable, "-c", probe],
                          env=clean_environment()).returncode == 0


def run_program(program, env_extra, run_args=()):
    """Runs the program under `leakwatch run`; returns (json report of its
    one trace, text report)."""
    cli = os.environ["LW_CLI"]
    env = clean_environment()
    env["LEAKWATCH_LIB"] = os.environ["LW_LIB"]
    env.update(env_extra)
    with tempfile.TemporaryDirectory(prefix="lw-gpu-") as tmp:
        pattern = os.path.join(tmp, "trace-%p.trace")
        r = subprocess.run([cli, "run", "--no-report", "--trace", pattern,
                            *run_args, "--", sys.executable, PROGRAM,
                            program, str(STEPS)],
                           env=env, capture_output=True, text=True,
                           timeout=900)
        check(r.returncode == 0, f"{program} exited {r.returncode}:\n"
              f"{r.stdout}\n{r.stderr}")
        traces = sorted(os.path.join(tmp, f) for f in os.listdir(tmp)
                        if f.endswith(".trace"))
        check(len(traces) >= 1, f"no trace: {r.stderr}")
        # The process with the most allocations is the program itself.
        reports = []
        for t in traces:
            rep = json.loads(subprocess.run(
                [cli, "report", "--format", "json", t], check=True,
                capture_output=True, text=True).stdout)
            reports.append((rep["allocations"], t, rep))
        _, trace, rep = max(reports)
        text = subprocess.run([cli, "report", trace], check=True,
                              capture_output=True, text=True).stdout
    print(text)
    return rep, text


def leak_site(rep, program):
    """The live site whose location is the planted leak's line."""
    line = leak_line(program)
    for site in rep["sites"]:
        loc = site.get("location") or {}
        if str(loc.get("file", "")).endswith("gpu_programs.py") and \
           loc.get("line") == line:
            return site
    return None


def expect_tensors(rep, program, source):
    torch = rep["torch_allocator"]
    if program == "torch":
        check(torch is not None, "PyTorch not recognized in the trace")
        check(torch["source"] == source, f"allocator source: {torch}")
        check(torch["tensors_visible"], f"tensors not visible: {torch}")
    site = leak_site(rep, program)
    check(site is not None, f"no live site at the leak line "
          f"{leak_line(program)}: {[s.get('location') for s in rep['sites']]}")
    check(site["live_count"] >= STEPS,
          f"leak site holds {site['live_count']} allocations, "
          f"expected at least {STEPS}")
    check(rep["verdict"] == "growing" or program != "torch",
          f"verdict {rep['verdict']}")


def torch_default():
    """No configuration: PyTorch's native allocator, left as it is; its
    blocks are seen through its profiler hook."""
    rep, _ = run_program("torch", {})
    expect_tensors(rep, "torch", "kept")
    check(rep["torch_allocator"]["blocks"] > 0, "no block heard")


def torch_async():
    rep, _ = run_program("torch",
                         {"PYTORCH_CUDA_ALLOC_CONF": "backend:cudaMallocAsync"})
    expect_tensors(rep, "torch", "user")


def torch_no_caching():
    rep, _ = run_program("torch", {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    expect_tensors(rep, "torch", "no_caching")


def torch_expandable():
    """Expandable segments: pages made with cuMemCreate, reached through
    cudaGetDriverEntryPoint*, are segments; tensors come from the hook."""
    rep, text = run_program("torch",
                            {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"})
    expect_tensors(rep, "torch", "user")
    torch = rep["torch_allocator"]
    check(torch["expandable_segments"] and torch["segments"] >= 1,
          f"allocator: {torch}")


def torch_native():
    """--torch-allocator async: the shim selects the cudaMallocAsync
    backend, and no block comes through the hook."""
    rep, text = run_program("torch", {}, ["--torch-allocator", "async"])
    expect_tensors(rep, "torch", "leakwatch")
    check(rep["torch_allocator"]["blocks"] == 0, "blocks counted twice")
    check("chosen by leakwatch" in text, text)


def cupy_async():
    rep, _ = run_program("cupy", {})
    expect_tensors(rep, "cupy", None)


def jax_platform():
    """XLA's platform allocator: one driver allocation per buffer."""
    rep, _ = run_program("jax", {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"})
    expect_tensors(rep, "jax", None)


def jax_cuda_async():
    rep, _ = run_program("jax", {"XLA_PYTHON_CLIENT_ALLOCATOR": "cuda_async",
                                 "XLA_PYTHON_CLIENT_PREALLOCATE": "false"})
    expect_tensors(rep, "jax", None)


SCENARIOS = {
    "torch_default": ("torch", torch_default),
    "torch_async": ("torch", torch_async),
    "torch_no_caching": ("torch", torch_no_caching),
    "torch_expandable": ("torch", torch_expandable),
    "torch_native": ("torch", torch_native),
    "cupy_async": ("cupy", cupy_async),
    "jax_platform": ("jax", jax_platform),
    "jax_cuda_async": ("jax", jax_cuda_async),
}


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in SCENARIOS:
        print(f"unknown scenario {name!r}; known: {sorted(SCENARIOS)}",
              file=sys.stderr)
        return 2
    module, scenario = SCENARIOS[name]
    if not gpu_present():
        print("no NVIDIA GPU: skipped")
        return SKIP
    if importlib.util.find_spec(module) is None:
        print(f"{module} is not installed for {sys.executable}: skipped")
        return SKIP
    try:
        scenario()
    except Failure as e:
        print(f"FAIL {name}: {e}", file=sys.stderr)
        return 1
    print(f"ok {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
