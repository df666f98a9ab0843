# SPDX-License-Identifier: MIT
"""PyTorch's native caching allocator seen through its profiler hooks, on
the stand-in libc10/libc10_cuda pair (tests/programs/c10.c, c10_cuda.c),
whose allocator calls c10::reportMemoryUsageToProfiler across the two
objects as PyTorch's does. torch_steps prints the allocator's own counters
(what torch.cuda.memory_allocated()/memory_reserved() would say) and what
the stand-in libc10's hook received, so every figure below is held
against the program's own."""
import re
import sys

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
    the tensors do not. A cache-growth finding, not a leak, whose fix
    names expandable segments; under expandable segments the same program
    is no leak either."""
    run, c = torch_steps("fragment", 20, {})
    rep = report(run.trace())
    check_eq(rep["verdict"], "stable", "tensors: verdict")
    check(rep["torch_allocator"]["reserved_bytes_at_end"] == c["reserved"]
          and c["reserved"] > 10 * c["peak_allocated"] // 2,
          f"reserved grew: {c}")
    growth = [f for f in rep["findings"] if f["category"] == "cache-growth"]
    check_eq(len(growth), 1, f"findings {rep['findings']}")
    check_eq(growth[0]["leak"], False, "not a leak")
    check("expandable_segments:True" in growth[0]["fix"] and
          "empty_cache()" in growth[0]["fix"], f"fix: {growth[0]['fix']}")
    check(growth[0]["evidence"]["bytes_per_step"] > 0, "reserved per step")
    check_eq([f for f in rep["findings"] if f["leak"]], [], "leaks")
    text = report(run.trace(), fmt="text")
    check("cache-growth" in text and "reserved memory grows by" in text,
          f"text: {text}")
    # Steady shapes: no finding.
    run, _ = torch_steps("clean", 20, {})
    check_eq([f["category"] for f in report(run.trace())["findings"]
              if f["category"] == "cache-growth"], [], "steady shapes")
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


if __name__ == "__main__":
    sys.exit(main({f.__name__: f for f in [
        hook_levels, clean_steps, cache_growth, out_of_memory]}))
