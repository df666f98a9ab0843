# SPDX-License-Identifier: MIT
"""Integration tests: real programs, compiled against the real CUDA headers,
run on the stand-in runtime under LD_PRELOAD=libleakwatch.so."""
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

from lwtest import (CLI, LIB, SKIP, Run, check, check_eq, functions, main,
                    prog, report, scratch_dir, site_with)

KIND_OF_API = {
    "cudaMallocManaged": "managed",
    "cudaMallocHost": "pinned_host",
    "cudaHostAlloc": "pinned_host",
    "cudaHostRegister": "host_registered",
}


def leaky_loop():
    run = Run([prog("leaky_loop"), "100", "4096"]).expect_ok()
    trace = run.trace()
    check_eq(stat.S_IMODE(os.stat(trace).st_mode), 0o600, "trace mode")
    rep = report(trace)
    check_eq(rep["truncated"], False, "truncated")
    check_eq(rep["steps"], 100, "steps")
    check_eq(rep["live_bytes_at_exit"], 100 * 4096, "live bytes at exit")
    check_eq(rep["live_count_at_exit"], 100, "live count at exit")
    top = rep["sites"][0]
    check_eq(top["frames"][0]["function"], "leak_one_buffer", "top site")
    check_eq((top["live_count"], top["live_bytes"]), (100, 409600),
             "top site live count and bytes")
    check_eq(top["kind"], "device", "top site kind")
    check("main" in functions(top), f"main not in {functions(top)}")
    check(top["frames"][0]["file"].endswith("leaky_loop.c"),
          f"file of the leaking frame: {top['frames'][0]['file']}")
    check(isinstance(top["frames"][0]["line"], int)
          and top["frames"][0]["line"] > 0, "line of the leaking frame")
    check_eq(len(rep["sites"]), 1, "live sites (weights and temporaries "
             "are freed)")
    # The peak holds the 1 MiB of weights plus leaked buffers.
    check(rep["peak"]["bytes"] >= (1 << 20) + 409600,
          f"peak {rep['peak']}")
    # The shim's own exit summary, in the spirit of LeakSanitizer.
    check("leakwatch: 400.0 KiB of device memory live at exit in 100 "
          "allocations" in run.stderr, f"exit summary: {run.stderr}")
    check("leak_one_buffer" in run.stderr, "summary names the site")
    check(trace in run.stderr, "summary names the trace")
    text = report(trace, fmt="text")
    check("leak_one_buffer" in text and "leaky_loop.c:" in text,
          f"text report: {text}")


def clean_loop():
    run = Run([prog("clean_loop"), "50"]).expect_ok()
    rep = report(run.trace())
    check_eq(len(rep["sites"]), 1, "live sites")
    site = site_with(rep, "keep_until_exit")
    check_eq((site["live_count"], site["live_bytes"]), (1, 65536),
             "the buffer really held at exit")
    check_eq(rep["live_bytes_at_exit"], 65536, "live bytes at exit")
    check_eq(rep["unknown_frees"], 0, "unknown frees")


def every_api():
    run = Run([prog("every_api")]).expect_ok()
    rep = report(run.trace())
    expected = {}
    for line in run.stdout.splitlines():
        api, _ptr, size, fate = line.split()
        kind = KIND_OF_API.get(api, "device")
        e = expected.setdefault(kind, {"allocations": 0, "live_bytes": 0,
                                       "live_count": 0})
        e["allocations"] += 1
        if fate == "kept":
            e["live_bytes"] += int(size)
            e["live_count"] += 1
    check(len(expected) == 4, f"every kind exercised: {expected}")
    for kind, e in expected.items():
        got = rep["kinds"][kind]
        for field in e:
            check_eq(got[field], e[field], f"{kind} {field}")
    check_eq(rep["unknown_frees"], 0, "unknown frees")
    kinds = {s["kind"] for s in rep["sites"]}
    check_eq(kinds, set(expected), "kinds of the live sites")


def driver_api():
    """Every driver entry point, reached by name, through dlsym on libcuda,
    cuGetProcAddress (both) and cudaGetDriverEntryPoint*: each allocation
    is seen once, at the program's own function; virtual memory counts
    physical memory once however often it is mapped."""
    for how in ("direct", "dlsym", "procaddress", "entrypoint"):
        run = Run([prog("driver_api"), how]).expect_ok()
        rep = report(run.trace())
        expected = {}
        for line in run.stdout.splitlines():
            _, kind, allocations, count, size = line.split()
            expected[kind] = (int(allocations), int(count), int(size))
        check_eq(len(expected), 3, f"{how}: kinds exercised")
        for kind, want in expected.items():
            got = rep["kinds"][kind]
            check_eq((got["allocations"], got["live_count"], got["live_bytes"]),
                     want, f"{how}: {kind} allocations, live count, bytes")
        check_eq(rep["unknown_frees"], 0, f"{how}: unknown frees")
        for site in rep["sites"]:
            first = site["frames"][0]["function"]
            check(first and first.startswith("via_"),
                  f"{how}: a site starts in {first}, not the program")
    # Asked for a version older than every ABI leakwatch hooks, the driver
    # refuses, and the refusal reaches the program unchanged.
    Run([prog("driver_api"), "legacy"]).expect_ok()
    # The exported dlsym leaves RTLD_NEXT relative to its caller.
    run = Run([prog("driver_api"), "next"]).expect_ok()
    check(run.stdout.strip().endswith("libleakwatch.so"),
          f"dlsym(RTLD_NEXT) from the program: {run.stdout}")


def runtime_counted_once():
    """The stand-in runtime allocates through the driver, whose functions it
    resolves with cuGetProcAddress like the real one: a cudaMalloc must be
    one allocation, at the caller, not a second one inside the runtime."""
    run = Run([prog("leaky_loop"), "20", "4096"]).expect_ok()
    rep = report(run.trace())
    check_eq(rep["allocations"] - rep["frees"], rep["live_count_at_exit"],
             "allocations minus frees")
    check_eq(rep["live_count_at_exit"], 20, "live count")
    # A bare cudaMalloc: its API, no device asked for, the default stream.
    check_eq([(c["api"], c["device"], c["stream"], c["live_count"])
              for c in rep["device_memory_by_context"]],
             [("cudaMalloc", None, 0, 20)], "device memory by context")
    for site in rep["sites"]:
        check(all("libcudart" not in (f["module"] or "")
                  for f in site["frames"][:1]),
              f"a site starts inside the runtime: {site['frames'][:2]}")


def torch_allocator():
    """PyTorch's allocator is left as the user configured it by default (its
    blocks are seen through its profiler hook); the shim selects the
    cudaMallocAsync backend only when asked, records the choice, and the
    report says what can be seen."""
    def run(env, args=()):
        env = dict(env)
        for name in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF",
                     "PYTORCH_NO_CUDA_MEMORY_CACHING",
                     "LEAKWATCH_TORCH_ALLOCATOR",
                     "LEAKWATCH_TORCH_ALLOC_CONF_SET"):
            env.setdefault(name, None)
        r = Run(list(args) + [prog("torch_like")], env=env).expect_ok()
        return r, report(r.trace()), report(r.trace(), fmt="text")

    def visible(rep):
        t = rep["torch_allocator"]
        return (t["conf"], t["source"], t["tensors_visible"],
                t["expandable_segments"])

    r, rep, text = run({})
    check_eq(r.stdout.strip(), "(unset)", "default: conf the program sees")
    check_eq(visible(rep), ("", "kept", True, False), "default")
    check_eq(rep["torch_allocator"]["blocks"], 4, "default: blocks heard")
    # The blocks carry their device, told by PyTorch's hook.
    check_eq([(c["api"], c["device"], c["live_count"])
              for c in rep["device_memory_by_context"]],
             [("PyTorch allocator", 0, 4)], "default: device memory by context")
    check("through its profiler hook" in text, f"text report: {text}")

    r, rep, text = run({"LEAKWATCH_TORCH_ALLOCATOR": "async"})
    check_eq(r.stdout.strip(), "backend:cudaMallocAsync",
             "async: conf the program sees")
    check_eq(visible(rep), ("backend:cudaMallocAsync", "leakwatch", True,
                            False), "async")
    check("chosen by leakwatch" in text and "tensors tracked one by one" in text,
          f"text report: {text}")

    r, rep, text = run({"PYTORCH_ALLOC_CONF": "expandable_segments:True"})
    check_eq(r.stdout.strip(), "(unset)", "user's PYTORCH_ALLOC_CONF kept")
    check_eq(visible(rep), ("expandable_segments:True", "user", True, True),
             "user's expandable segments")

    r, rep, _ = run({"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"})
    check_eq(r.stdout.strip(), "(unset)", "no caching: nothing set")
    check_eq((rep["torch_allocator"]["source"],
              rep["torch_allocator"]["tensors_visible"]), ("no_caching", True),
             "no caching")

    # leakwatch run --torch-allocator keep opts out; a process started by
    # one that had the shim's choice reports it as the shim's, not the user's.
    r, rep, _ = run({}, [CLI, "run", "--no-report", "--torch-allocator", "keep",
                         "--"])
    check_eq(r.stdout.strip().splitlines()[0], "(unset)", "run --torch-allocator keep")
    r, rep, _ = run({"LEAKWATCH_TORCH_ALLOCATOR": "async"},
                    ["/bin/sh", "-c", 'exec "$0"'])
    check_eq(rep["torch_allocator"]["source"], "leakwatch", "inherited choice")
    # Not PyTorch: no claim about PyTorch.
    plain = Run([prog("leaky_loop"), "2", "64"]).expect_ok()
    check_eq(report(plain.trace())["torch_allocator"], None, "not PyTorch")


PLUGGABLE = r"""
import ctypes, sys
ctypes.CDLL(sys.argv[2])  # loads the runtime, as torch's libraries do
# What torch.cuda.memory.CUDAPluggableAllocator(path, alloc, free) does.
lib = ctypes.CDLL(sys.argv[1])
alloc, free = lib.leakwatch_torch_alloc, lib.leakwatch_torch_free
alloc.restype = ctypes.c_void_p
alloc.argtypes = [ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
free.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_void_p]
blocks = [alloc(1 << 20, 0, None) for _ in range(3)]
assert all(blocks)
free(blocks.pop(), 1 << 20, 0, None)
print("ok")
"""


def pluggable_allocator():
    """The CUDAPluggableAllocator functions allocate through the hooks: each
    tensor once, at the caller, not inside leakwatch."""
    run = Run([sys.executable, "-c", PLUGGABLE, LIB,
               os.environ["LW_TESTEXT"]]).expect_ok()
    rep = report(run.trace())
    check_eq((rep["kinds"]["device"]["allocations"], rep["frees"],
              rep["live_count_at_exit"], rep["live_bytes_at_exit"]),
             (3, 1, 2, 2 << 20), "allocations, frees, live count and bytes")
    check_eq(rep["unknown_frees"], 0, "unknown frees")
    for site in rep["sites"]:
        module = site["frames"][0]["module"] or ""
        check("libleakwatch" not in module,
              f"a site starts inside leakwatch: {site['frames'][:2]}")


def threads():
    run = Run([prog("threads"), "8", "20000"], timeout=300).expect_ok()
    m = re.search(r"expected_live_count (\d+) expected_live_bytes (\d+)",
                  run.stdout)
    check(m, f"program output: {run.stdout}")
    rep = report(run.trace())
    check_eq(rep["live_count_at_exit"], int(m.group(1)), "live count")
    check_eq(rep["live_bytes_at_exit"], int(m.group(2)), "live bytes")
    check_eq(rep["unknown_frees"], 0, "unknown frees")
    check_eq(rep["allocations"] - rep["frees"], int(m.group(1)),
             "allocations minus frees")


def forker():
    run = Run([prog("forker")]).expect_ok()
    pids = dict(line.split() for line in run.stdout.splitlines())
    check_eq(len(run.traces()), 2, "one trace per process that allocated")
    parent = report(run.trace(pids["parent"]))
    child = report(run.trace(pids["child"]))
    check_eq(parent["pid"], int(pids["parent"]), "parent trace pid")
    check_eq(child["pid"], int(pids["child"]), "child trace pid")
    check_eq(child["live_count_at_exit"], 3, "child live count")
    check_eq(child["live_bytes_at_exit"], 3 * 777, "child live bytes")
    check_eq(child["kinds"]["device"]["allocations"], 3,
             "the child's trace holds only the child's allocations")
    check_eq(parent["live_count_at_exit"], 2, "parent live count")
    check(all(s["live_bytes"] != 777 for s in parent["sites"]),
          "the child never wrote into the parent's trace")
    check_eq(parent["truncated"], False, "parent trace complete")
    check_eq(child["truncated"], False, "child trace complete")


def failing_alloc():
    run = Run([prog("failing_alloc")],
              env={"FAKECUDA_CAPACITY": str(1 << 20)}).expect_ok()
    check_eq(run.stdout.strip(), "ok", "return codes passed through")
    rep = report(run.trace())
    check_eq(rep["kinds"]["device"]["allocations"], 1,
             "a failed allocation is not recorded")
    check_eq(rep["live_count_at_exit"], 1, "live count")
    check_eq(rep["live_bytes_at_exit"], 512 << 10, "live bytes")
    check_eq(rep["unknown_frees"], 0, "failed frees are not counted")


def rtld_local():
    lib = os.environ["LW_TESTEXT"]
    run = Run([sys.executable, prog("rtld_local"), lib]).expect_ok()
    check_eq(run.stdout.strip(), "ok", "allocations through RTLD_LOCAL")
    rep = report(run.trace())
    check_eq(rep["live_count_at_exit"], 2, "live count")
    check_eq(rep["live_bytes_at_exit"], 2000, "live bytes")


UNKNOWN_FREE = r"""
import ctypes, os, sys
fake = ctypes.CDLL(os.path.join(sys.argv[1], "libcudart.so.13"))
# A function taken from a handle on the runtime resolves inside it, past
# the runtime hooks; the driver hooks still see the allocation it makes.
p = ctypes.c_void_p()
assert fake.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(4096)) == 0
ext = ctypes.CDLL(sys.argv[2])
ext.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
q = ctypes.c_void_p()
assert ext.testext_alloc(1000, ctypes.byref(q)) == 0
# The driver's host registration is not hooked: leakwatch never sees it...
driver = ctypes.CDLL(os.path.join(sys.argv[1], "libcuda.so.1"))
buf = ctypes.create_string_buffer(4096)
assert driver.cuMemHostRegister_v2(buf, ctypes.c_size_t(4096), 0) == 0
# ...so undoing it through the hooked path passes through, counted as
# unknown.
assert ctypes.CDLL(None).cudaHostUnregister(buf) == 0
print("ok")
"""


def unknown_free():
    run = Run([sys.executable, "-c", UNKNOWN_FREE,
               os.environ["LW_FAKECUDA_DIR"], os.environ["LW_TESTEXT"]])
    run.expect_ok()
    rep = report(run.trace())
    check_eq(rep["unknown_frees"], 1, "unknown frees")
    check_eq(rep["live_count_at_exit"], 2, "live count (one seen by the "
             "driver hooks only)")
    check("free" in run.stderr and "outside" in run.stderr,
          f"the exit summary counts the unknown free: {run.stderr}")


def no_cuda():
    run = Run([prog("no_cuda")]).expect_ok()
    check_eq(run.traces(), [], "traces of a process that allocated nothing")
    check_eq(run.stderr, "", "stderr of a process that allocated nothing")


def quiet():
    run = Run([prog("leaky_loop"), "10", "100"],
              env={"LEAKWATCH_QUIET": "1"}).expect_ok()
    check_eq(run.stderr, "", "LEAKWATCH_QUIET=1 silences the summary")
    check_eq(len(run.traces()), 1, "the trace is still written")


def killed():
    """SIGKILL mid-run: the trace reads back up to the last flush."""
    run_dir_probe = Run([prog("no_cuda")])  # a fresh directory to use
    d = run_dir_probe.dir
    env = dict(os.environ, LD_PRELOAD=LIB,
               LEAKWATCH_OUT=os.path.join(d, "trace-%p.trace"))
    p = subprocess.Popen([prog("leaky_loop"), "100000000", "64"], env=env,
                         cwd=d, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    trace = os.path.join(d, f"trace-{p.pid}.trace")
    deadline = time.time() + 30
    while time.time() < deadline:
        if os.path.exists(trace) and os.path.getsize(trace) > 100000:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    rep = report(trace)
    check_eq(rep["truncated"], True, "a killed process's trace is "
             "reported as truncated")
    check(rep["steps"] > 0, "steps up to the last flush are read")
    check(rep["live_count_at_exit"] >= rep["steps"],
          "leaked buffers up to the last flush are read")
    text = report(trace, fmt="text")
    check("TRUNCATED" in text, f"text report says so: {text[:400]}")


KILLED_AFTER_STEP = r"""
import ctypes, os, signal, sys
ext = ctypes.CDLL(sys.argv[1])
ext.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
step = ctypes.CDLL(None).leakwatch_step
kept = []
for i in range(3):
    p = ctypes.c_void_p()
    assert ext.testext_alloc(100, ctypes.byref(p)) == 0
    kept.append(p)
    step()
os.kill(os.getpid(), signal.SIGKILL)
"""


def killed_after_step():
    """A step mark flushes: a process killed right after it loses nothing,
    although far less than a buffer's worth was recorded."""
    run = Run([sys.executable, "-c", KILLED_AFTER_STEP,
               os.environ["LW_TESTEXT"]])
    check_eq(run.returncode, -signal.SIGKILL, "killed by SIGKILL")
    rep = report(run.trace())
    check_eq(rep["truncated"], True, "truncated")
    check_eq(rep["steps"], 3, "steps")
    check_eq(rep["allocations"], 3, "allocations up to the last step")


OPTIMIZER_STEPS = r"""
import ctypes, os, sys
ext = ctypes.CDLL(sys.argv[1])
ext.testext_alloc.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_void_p)]
ext.testext_free.argtypes = [ctypes.c_void_p]
mode = sys.argv[2]
sys.path.insert(0, sys.argv[3])
if mode == "explicit":
    sys.path.insert(0, sys.argv[4])
    import leakwatch

def tensor():
    p = ctypes.c_void_p()
    assert ext.testext_alloc(256, ctypes.byref(p)) == 0
    return p

warmup = tensor()            # torch is not imported yet: no hook
import torch.optim.optimizer as optim
warmup2 = tensor()           # new code ran: the shim tries again
for _ in range(100):         # the interpreter runs its pending calls
    pass
model, head = optim.Optimizer("model"), optim.Optimizer("head")
for batch in range(40):
    ext.testext_free(tensor())
    if mode == "accumulate":
        if batch % 4 == 3:   # one optimizer step per 4 batches
            model.step()
            head.step()
    else:
        model.step()
        head.step()
        if mode == "explicit":
            leakwatch.step()
print("ok")
"""


def optimizer_steps():
    """PyTorch programs get step boundaries from the optimizer with no
    change to their code: once per iteration, whatever the number of
    optimizers; once per optimizer step under gradient accumulation; and an
    explicit leakwatch.step() takes precedence."""
    faketorch = os.environ["LW_FAKETORCH"]
    pydir = os.environ["LW_PYTHON_DIR"]
    for mode, steps, source in [("every", 40, "optimizer"),
                                ("accumulate", 10, "optimizer"),
                                ("explicit", 40, "api")]:
        run = Run([sys.executable, "-c", OPTIMIZER_STEPS,
                   os.environ["LW_TESTEXT"], mode, faketorch, pydir])
        run.expect_ok()
        rep = report(run.trace())
        check_eq(rep["steps"], steps, f"{mode}: steps")
        check_eq(rep["info"].get("step_source"), source,
                 f"{mode}: step source")


def python_helper_without_shim():
    """import leakwatch is a silent no-op without the shim."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import leakwatch; "
            "assert not leakwatch.active(); leakwatch.step(); "
            "\nwith leakwatch.phase('x'): pass\nprint('ok')")
    run = Run([sys.executable, "-c", code, os.environ["LW_PYTHON_DIR"]],
              preload=False).expect_ok()
    check_eq(run.stdout.strip(), "ok", "output")
    check_eq(run.traces(), [], "no trace")


def symlink_not_followed():
    probe = Run([prog("no_cuda")])
    d = probe.dir
    victim = os.path.join(d, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    os.symlink(victim, os.path.join(d, "planted.trace"))
    run = Run([prog("leaky_loop"), "5", "100"],
              env={"LEAKWATCH_OUT": os.path.join(d, "planted.trace")})
    run.expect_ok()
    with open(victim) as f:
        check_eq(f.read(), "precious\n", "the link's target is untouched")
    check(run.stderr.count("leakwatch: warning:") == 1,
          f"one warning line: {run.stderr}")


def unwritable():
    run = Run([prog("leaky_loop"), "20", "100"],
              env={"LEAKWATCH_OUT": "/nonexistent-dir/x-%p.trace"})
    run.expect_ok()
    lines = [l for l in run.stderr.splitlines() if l.startswith("leakwatch")]
    check_eq(len(lines), 1, f"one warning line, got: {run.stderr}")
    check("cannot write the trace /nonexistent-dir/x-" in lines[0],
          f"warning names the path: {lines[0]}")


def file_size_limit():
    """RLIMIT_FSIZE smaller than the trace would grow: writing past it would
    raise SIGXFSZ and kill the program. The shim stops short of the limit,
    warns once, and the program finishes as without leakwatch; the trace
    reads back up to where it stopped."""
    limit = 8192
    # Python ignores SIGXFSZ; the program must get the default action.
    launcher = ("import os, resource, signal, sys\n"
                f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, {limit}))\n"
                "signal.signal(signal.SIGXFSZ, signal.SIG_DFL)\n"
                "os.execv(sys.argv[1], sys.argv[1:])\n")
    run = Run([sys.executable, "-c", launcher, prog("leaky_loop"), "20000",
               "100"])
    run.expect_ok()
    lines = [l for l in run.stderr.splitlines()
             if l.startswith("leakwatch: warning:")]
    check_eq(len(lines), 1, f"one warning line, got: {run.stderr}")
    trace = run.trace()
    check(os.path.getsize(trace) <= limit,
          f"trace of {os.path.getsize(trace)} bytes past the limit")
    rep = report(trace)
    check(rep["allocations"] > 0, "the trace reads back")


def disk_full():
    """The disk fills up under the trace (a 64 KiB tmpfs in a private mount
    namespace): one warning, the program runs on to the same end, and the
    trace reads back to where the disk filled, reported as cut short."""
    unshare = shutil.which("unshare")
    if not unshare:
        print("skipped: no unshare (util-linux)")
        return SKIP
    probe = Run([prog("no_cuda")])
    mnt, out = os.path.join(probe.dir, "mnt"), os.path.join(probe.dir, "out")
    os.mkdir(mnt)
    os.mkdir(out)
    argv = [prog("leaky_loop"), "20000", "100"]
    bare = {k: v for k, v in os.environ.items()
            if not k.startswith("LEAKWATCH_") and k != "LD_PRELOAD"}
    plain = subprocess.run(argv, env=bare,
                           capture_output=True, text=True, timeout=120)
    # Inside the namespace: mount, run under the shim, copy the trace out
    # (the mount goes with the namespace), keep the program's status.
    script = ('mount -t tmpfs -o size=64k tmpfs "$1" || exit 99\n'
              'dir=$1 out=$2; shift 2\n'
              '$TRACE_WRITES env LD_PRELOAD="$LW_LIB" '
              'LEAKWATCH_OUT="$dir/trace-%p.trace" "$@"\n'
              'st=$?\n'
              'cp "$dir"/*.trace "$out"/ || exit 98\n'
              'exit $st\n')
    # With strace at hand, the failed write() calls are counted: the shim
    # must stop writing at the first failure, not retry at every flush.
    strace = shutil.which("strace")
    writes = os.path.join(probe.dir, "failed-writes")
    env = dict(bare, LW_LIB=LIB, TRACE_WRITES=(
        f"{strace} -f -qq -e trace=write -e status=failed -o {writes}"
        if strace else ""))
    for flags in (["-m"], ["-r", "-m"]):
        p = subprocess.run([unshare, *flags, "sh", "-c", script, "sh", mnt,
                            out, *argv], env=env, capture_output=True,
                           text=True, timeout=120)
        if p.returncode != 99 and "unshare:" not in p.stderr:
            break
    else:
        print(f"skipped: cannot mount a tmpfs here: {p.stderr.strip()}")
        return SKIP
    check_eq(p.returncode, plain.returncode, f"exit status; {p.stderr}")
    check_eq(p.stdout, plain.stdout, "the program's output")
    if strace:
        with open(writes) as f:
            failed = [l for l in f if "ENOSPC" in l]
        check_eq(len(failed), 1,
                 "failed writes to the full disk (one, then no more tries)")
    else:
        print("strace is not installed: failed writes not counted")
    warnings = [l for l in p.stderr.splitlines()
                if l.startswith("leakwatch: warning:")]
    check_eq(len(warnings), 1, f"one warning line, got: {p.stderr}")
    check("No space left on device" in warnings[0], warnings[0])
    # What the trace lacks is counted: with what it holds, every event of
    # the same run on a disk with room (about: the records of a buffer
    # written in part are counted lost, and some reached the file).
    lost = re.search(r"leakwatch: about (\d+) events \(allocations, "
                     r"frees, steps\) from when the trace stopped being "
                     r"written are not in it", p.stderr)
    whole = report(Run(argv).expect_ok().trace())["events"]
    held = report(os.path.join(out, os.listdir(out)[0]))["events"]
    check(lost and abs(whole - held - int(lost.group(1))) < 5000,
          f"lost events: {lost and lost.group(1)} + {held} in the trace, "
          f"of {whole}: {p.stderr}")
    traces = os.listdir(out)
    check_eq(len(traces), 1, f"one trace: {traces}")
    trace = os.path.join(out, traces[0])
    check(os.path.getsize(trace) <= 65536, "the trace fits the disk")
    rep = report(trace)
    check_eq(rep["truncated"], True, "reported as cut short")
    check(rep["allocations"] > 0, "the trace reads back")


def two_runtimes():
    """Two modules, each linked against its own CUDA runtime (12 and 13),
    loaded RTLD_LOCAL in either order: each call goes to the runtime its
    caller is linked against (the runtime that refused a call records the
    error, so each module sees its own), every allocation is counted once
    at its module, and the trace names both runtimes."""
    for first in ("12", "13"):
        run = Run([prog("two_runtimes"), first]).expect_ok()
        seen = {}
        for line in run.stdout.splitlines():
            module, _, version, _, last_error = line.split()
            seen[module] = (int(version) // 1000, int(last_error))
        # cudaErrorInvalidValue (1), recorded by the module's own runtime.
        check_eq(seen, {"libtwort12.so": (12, 1), "libtwort13.so": (13, 1)},
                 f"{first} first: each module's runtime and its last error")
        rep = report(run.trace())
        check_eq(sizes(rep), [1212, 1313], f"{first} first: what is kept")
        check_eq(rep["allocations"], 4, f"{first} first: allocations")
        check_eq(rep["unknown_frees"], 0, f"{first} first: unknown frees")
        runtimes = rep["info"].get("cudart_runtimes", "")
        check("libcudart.so.12" in runtimes and "libcudart.so.13" in runtimes,
              f"{first} first: the runtimes named: {rep['info']}")


def exports():
    out = subprocess.run(["nm", "-D", "--defined-only", LIB],
                         capture_output=True, text=True, check=True).stdout
    got = sorted(l.split()[-1] for l in out.splitlines() if l.strip())
    # The CUDA hooks of hooks.def, and the other exports of exports.txt.
    with open(os.environ["LW_HOOKS"]) as f:
        want = re.findall(r"^LW_(?:RUNTIME|DRIVER)_HOOK\(\w+, (\w+)\)$",
                          f.read(), re.M)
    check(len(want) > 30, f"hooks listed in hooks.def: {want}")
    with open(os.environ["LW_EXPORTS"]) as f:
        want = sorted(want + [l.strip() for l in f if l.strip()])
    check_eq(got, want, "symbols exported by libleakwatch.so")
    needed = subprocess.run(["readelf", "-d", LIB], capture_output=True,
                            text=True, check=True).stdout
    check("libcudart" not in needed and "libcuda.so" not in needed,
          "libleakwatch.so must not depend on the CUDA libraries")


def run_command():
    """`leakwatch run`: report afterwards, exit status forwarded."""
    probe = Run([prog("no_cuda")])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}
    p = subprocess.run([CLI, "run", "--", prog("leaky_loop"), "30", "1000"],
                       cwd=probe.dir, env=env, capture_output=True,
                       text=True, timeout=120)
    check_eq(p.returncode, 0, f"exit status; stderr: {p.stderr}")
    check("leak_one_buffer" in p.stderr, f"report printed: {p.stderr}")
    check("leaky_loop.c:" in p.stderr, "with file:line")
    p = subprocess.run([CLI, "run", "--format", "json", "-o", "r.json", "--",
                        prog("leaky_loop"), "30", "1000"], cwd=probe.dir,
                       env=env, capture_output=True, text=True, timeout=120)
    check_eq(p.returncode, 0, "exit status with -o")
    with open(os.path.join(probe.dir, "r.json")) as f:
        rep = json.load(f)
    check_eq(rep["live_count_at_exit"], 30, "JSON report of the run")
    p = subprocess.run([CLI, "run", "--", "sh", "-c", "exit 3"],
                       cwd=probe.dir, env=env, capture_output=True,
                       text=True, timeout=60)
    check_eq(p.returncode, 3, "the program's own exit status")
    p = subprocess.run([CLI, "run", "--", "sh", "-c", "kill -9 $$"],
                       cwd=probe.dir, env=env, capture_output=True,
                       text=True, timeout=60)
    check_eq(p.returncode, 128 + 9, "killed by a signal: 128+N")


def run_max_growth():
    """`leakwatch run --max-growth`: exit 23 when the program succeeded but
    grew too fast; the program's own failure is never masked."""
    probe = Run([prog("no_cuda")])
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")}

    def run(limit, *cmd):
        return subprocess.run([CLI, "run", "--max-growth", limit, "--", *cmd],
                              cwd=probe.dir, env=env, capture_output=True,
                              text=True, timeout=120)
    leaky = [prog("leaky_loop"), "40", "1000"]  # 1000 bytes per step
    p = run("1KiB", *leaky)
    check_eq(p.returncode, 0, f"within the limit; stderr: {p.stderr}")
    check("within the 1.0 KiB per step allowed" in p.stderr, p.stderr)
    p = run("512", *leaky)
    check_eq(p.returncode, 23, f"over the limit; stderr: {p.stderr}")
    check("GROWING" in p.stderr and "leak_one_buffer" in p.stderr,
          f"names the growing site: {p.stderr}")
    p = run("512", "sh", "-c", '"$0" "$@"; exit 5', *leaky)
    check_eq(p.returncode, 5, "the program's own failure is passed on")
    p = subprocess.run([CLI, "run", "--max-growth", "lots", "--", "true"],
                       cwd=probe.dir, env=env, capture_output=True, text=True)
    check_eq(p.returncode, 2, "a bad size is a usage error")


def manifest():
    """LEAKWATCH_MANIFEST names a file that does not exist yet: it is
    created; one that cannot be opened is a warning."""
    probe = Run([prog("no_cuda")])
    listed = os.path.join(probe.dir, "sub-manifest")
    run = Run([prog("leaky_loop"), "5", "100"],
              env={"LEAKWATCH_MANIFEST": listed}).expect_ok()
    with open(listed) as f:
        check_eq(f.read(), run.trace() + "\n", "the trace is listed")
    check_eq(stat.S_IMODE(os.stat(listed).st_mode), 0o600,
             "the list's mode (it names the user's files)")
    run = Run([prog("leaky_loop"), "5", "100"],
              env={"LEAKWATCH_MANIFEST": "/nonexistent-dir/manifest"})
    run.expect_ok()
    check("warning: LEAKWATCH_MANIFEST=/nonexistent-dir/manifest cannot be "
          "opened" in run.stderr, f"warned: {run.stderr}")


def clean_env():
    return {k: v for k, v in os.environ.items()
            if not k.startswith("LEAKWATCH_")}


def run_daemon_after_exit():
    """`leakwatch run`'s list of traces is private (0600, in a directory
    of its own, 0700) and is gone once the run ends, even when a
    daemonised grandchild (double fork, setsid) opens its trace only after
    the program and the run have exited: it does not make the list again."""
    d = scratch_dir()
    tmp = os.path.join(d, "tmp")
    os.mkdir(tmp)
    env = {**clean_env(), "TMPDIR": tmp}
    pidfile, gofile = os.path.join(d, "daemon.pid"), os.path.join(d, "go")
    p = subprocess.run([CLI, "run", "--no-report", "--trace",
                        os.path.join(d, "t-%p.trace"), "--", prog("hazards"),
                        "daemon", pidfile, gofile],
                       cwd=d, env=env, capture_output=True, text=True,
                       timeout=120)
    check_eq(p.returncode, 0, f"run: {p.stderr}")
    check_eq(os.listdir(tmp), [], "left in TMPDIR as the run ended")
    # Now the grandchild allocates: its trace is opened, and listed
    # nowhere. It writes the pid file after that.
    open(gofile, "w").close()
    deadline = time.time() + 60
    pid = ""
    while not pid and time.time() < deadline:
        if os.path.exists(pidfile):
            with open(pidfile) as f:
                pid = f.read().strip()
        time.sleep(0.05)
    check(pid, "the daemon did not allocate")
    rep = None
    while time.time() < deadline:
        path = os.path.join(d, f"t-{pid}.trace")
        if os.path.exists(path):
            rep = report(path)
            if not rep["truncated"]:
                break
        time.sleep(0.05)
    check(rep is not None and not rep["truncated"],
          "the daemon's trace is complete")
    check_eq(sizes(rep), [4000], "the daemon's allocations")
    check_eq(os.listdir(tmp), [], "left in TMPDIR by the daemon")

    p = subprocess.run([CLI, "run", "--no-report", "--", "sh", "-c",
                        'stat -c %a "$LEAKWATCH_MANIFEST" '
                        '"$(dirname "$LEAKWATCH_MANIFEST")"'],
                       cwd=d, env=env, capture_output=True, text=True,
                       timeout=120)
    check_eq((p.returncode, p.stdout.split()), (0, ["600", "700"]),
             f"the list's mode and its directory's: {p.stderr}")
    check_eq(os.listdir(tmp), [], "left in TMPDIR by a run")


def failed_allocations():
    """A program that never looks at cudaMalloc's result, every call of
    which fails: the failures are recorded and shown, and no gate passes a
    run it could not judge."""
    loop = [prog("unchecked_loop"), "50", "1024"]
    failing = {"FAKECUDA_CAPACITY": "0"}
    run = Run(loop, env={**failing, "LEAKWATCH_MAX_GROWTH": "100"})
    check_eq(run.returncode, 24, f"bare gate, nothing judged: {run.stderr}")
    check("growth cannot be judged: every CUDA allocation failed (100 calls"
          in run.stderr, run.stderr)
    check("100 CUDA allocations failed (the first: cudaMalloc returned "
          "error 2)" in run.stderr, f"exit summary: {run.stderr}")
    rep = report(run.trace())
    check_eq(rep["failed_allocations"], 100, "failed allocations in JSON")
    check_eq(rep["failed_allocation_errors"],
             [{"api": "cudaMalloc", "error": 2,
               "name": "cudaErrorMemoryAllocation", "count": 100}],
             "failed allocations by error")
    check(rep["info"].get("cudart", "").endswith("libcudart.so.13"),
          f"the runtime's path: {rep['info']}")
    text = report(run.trace(), fmt="text")
    check("FAILED allocations: 100 (none succeeded" in text, text)
    check("Growth: not judged" in text and "Growth: stable" not in text,
          text)
    p = subprocess.run([CLI, "check", "--max-growth", "100", run.trace()],
                       capture_output=True, text=True, timeout=60)
    check_eq(p.returncode, 3, f"check cannot judge: {p.stdout}{p.stderr}")
    check("cannot judge: every CUDA allocation failed" in p.stdout,
          p.stdout)
    for mark in ("1", "0"):
        p = subprocess.run([CLI, "run", "--max-growth", "100", "--", *loop,
                            mark], cwd=run.dir,
                           env={**clean_env(), **failing},
                           capture_output=True, text=True, timeout=120)
        check_eq(p.returncode, 24, f"run --max-growth, steps marked "
                 f"{mark}: {p.stderr}")
        check("no trace was written" not in p.stderr, p.stderr)
    p = subprocess.run([CLI, "run", "--", *loop], cwd=run.dir,
                       env={**clean_env(), **failing}, capture_output=True,
                       text=True, timeout=120)
    check_eq(p.returncode, 0, "without a gate, the program's status")
    check("FAILED allocations: 100" in p.stderr, p.stderr)
    # The driver API's failures, named in the driver's words.
    run = Run([prog("driver_api"), "direct"], env=failing)
    check_eq(run.returncode, 1, f"driver_api stops at its failure: "
             f"{run.stderr}")
    check_eq(report(run.trace())["failed_allocation_errors"],
             [{"api": "cuMemAlloc", "error": 2,
               "name": "CUDA_ERROR_OUT_OF_MEMORY", "count": 1}],
             "a failed cuMemAlloc")


def run_unwritable():
    """`leakwatch run` with a trace path that cannot be written says so,
    and its gate does not pass."""
    probe = Run([prog("no_cuda")])
    cmd = [prog("leaky_loop"), "10", "1024"]
    for gate, status in (([], 0), (["--max-growth", "100"], 24)):
        p = subprocess.run([CLI, "run", "--trace", "/nonexistent-dir/x-%p.trace",
                            *gate, "--", *cmd], cwd=probe.dir,
                           env=clean_env(), capture_output=True, text=True,
                           timeout=120)
        check_eq(p.returncode, status, f"run {gate}: {p.stderr}")
        check("could not be written" in p.stderr and
              "no trace was written" not in p.stderr
              and "made no CUDA allocation" not in p.stderr,
              f"says why there is no report: {p.stderr}")


def suppressions():
    """A suppressed site is left out of every command and view: check's
    and run --max-growth's verdicts, the text and JSON reports, diff."""
    leaky = Run([prog("leaky_loop"), "30", "4096"]).expect_ok()
    clean = Run([prog("clean_loop"), "30"]).expect_ok()
    supp = os.path.join(leaky.dir, "ours.supp")
    with open(supp, "w") as f:
        f.write("leak:leak_one_buffer\n")

    def cli(*argv, env=None):
        return subprocess.run([CLI, *argv], capture_output=True, text=True,
                              env={**clean_env(), **(env or {})},
                              timeout=60)

    gate = ["check", "--max-growth", "100", leaky.trace()]
    check_eq(cli(*gate).returncode, 1, "unsuppressed, the leak fails check")
    p = cli("check", "--suppressions", supp, *gate[1:])
    check_eq(p.returncode, 0, f"check --suppressions: {p.stdout}{p.stderr}")
    p = cli(*gate, env={"LEAKWATCH_SUPPRESSIONS": supp})
    check_eq(p.returncode, 0, f"LEAKWATCH_SUPPRESSIONS: {p.stdout}")

    text = report(leaky.trace(), fmt="text", extra=["--suppressions", supp])
    check("leak_one_buffer" not in text.split("Findings")[0] and
          "Growth: growing" not in text,
          f"suppressed site in Growth or Live at exit: {text}")
    check("leak_one_buffer" in report(leaky.trace(), fmt="text"),
          "without the suppression the site shows")
    rep = report(leaky.trace(), extra=["--suppressions", supp])
    check("leak_one_buffer" not in
          [fn for site in rep["sites"] for fn in functions(site)[:1]],
          f"suppressed site in the JSON sites: {rep['sites']}")

    pair = ["diff", clean.trace(), leaky.trace()]
    check_eq(cli(*pair).returncode, 1, "unsuppressed, diff sees a new leak")
    p = cli(*pair, env={"LEAKWATCH_SUPPRESSIONS": supp})
    check_eq(p.returncode, 0, f"diff with suppressions: {p.stdout}")

    # A phase's survivors: the example's "load" phase keeps its weights.
    example = os.path.join(os.path.dirname(os.path.dirname(CLI)),
                           "examples", "train_leak")
    loaded = Run([example, "20"]).expect_ok()
    with open(supp, "w") as f:
        f.write("leak:load_model\n")
    for extra, shown in (([], True), (["--suppressions", supp], False)):
        text = report(loaded.trace(), fmt="text", extra=extra)
        phase = text.split('Phase "load"')[1].split("\n\n")[0]
        check_eq("load_model" in phase, shown, f"phase survivors {extra}")
        rep = report(loaded.trace(), extra=extra)
        sites = [s for ph in rep["phases"] for s in ph["sites"]]
        check_eq(any(s["location"]["function"] == "load_model"
                     for s in sites), shown, f"JSON phase sites {extra}")
    with open(supp, "w") as f:
        f.write("leak:leak_one_buffer\n")

    loop = [prog("leaky_loop"), "30", "4096"]
    for env, status in (({}, 23), ({"LEAKWATCH_SUPPRESSIONS": supp}, 0)):
        p = subprocess.run([CLI, "run", "--max-growth", "100", "--", *loop],
                           cwd=leaky.dir, env={**clean_env(), **env},
                           capture_output=True, text=True, timeout=120)
        check_eq(p.returncode, status, f"run --max-growth {env}: {p.stderr}")


def bare_gate_suggestion():
    """What the bare gate suggests reproduces its verdict, and a program
    that marks no steps is told how to judge it."""
    run = Run([prog("leaky_loop"), "5", "1000"],
              env={"LEAKWATCH_MAX_GROWTH": "100", "LEAKWATCH_MIN_STEPS": "3"})
    check_eq(run.returncode, 23, f"bare gate: {run.stderr}")
    m = re.search(r"`(leakwatch check [^`]*)`", run.stderr)
    check(m, f"a command is suggested: {run.stderr}")
    argv = m.group(1).split()
    p = subprocess.run([CLI, *argv[1:]], capture_output=True, text=True,
                       timeout=60)
    check_eq(p.returncode, 1, f"the suggested command agrees: {p.stdout}")
    # The gate and check write the same number the same way: 1048575
    # bytes a step is "+1.0 MiB" in both (one formatter, lw-size.c).
    run = Run([prog("leaky_loop"), "12", "1048575"],
              env={"LEAKWATCH_MAX_GROWTH": "100", "LEAKWATCH_MIN_STEPS": "3"})
    p = subprocess.run([CLI, "check", "--max-growth", "100", "--min-steps",
                        "3", run.trace()], capture_output=True, text=True,
                       timeout=60)
    rate = r"([+-][\d.]+ (?:B|[KMGTPE]iB)) per step"
    gate, cli = re.search(rate, run.stderr), re.search(rate, p.stdout)
    check(gate and cli and gate.group(1) == cli.group(1) == "+1.0 MiB",
          f"the same rate from the gate and check: {run.stderr} / {p.stdout}")
    # No steps marked: the bare gate cannot judge (it never passes on
    # nothing), and says what does.
    loop = [prog("unchecked_loop"), "60", "1024", "0"]
    run = Run(loop, env={"LEAKWATCH_MAX_GROWTH": "100"})
    check_eq(run.returncode, 24, f"no steps: {run.stderr}")
    check("marked no steps" in run.stderr and "leakwatch.step()" in
          run.stderr, run.stderr)
    m = re.search(r"`(leakwatch check [^`]*)`", run.stderr)
    check(m, f"a command is suggested: {run.stderr}")
    p = subprocess.run([CLI, *m.group(1).split()[1:]], capture_output=True,
                       text=True, timeout=60)
    q = subprocess.run([CLI, "run", "--max-growth", "100", "--", *loop],
                       cwd=run.dir, env=clean_env(), capture_output=True,
                       text=True, timeout=120)
    check_eq((p.returncode, q.returncode), (1, 23),
             f"check and run agree: {p.stdout} / {q.stderr}")


def gate_no_steps():
    """A gate never passes on nothing: a run with too few steps is not
    judged, by `run` (24), the bare gate (24) or `check` (3), each with
    one line saying why; `run` judges a run by the traces that have steps
    when some do."""
    short = [prog("leaky_loop"), "3", "1000"]  # 3 steps, 10 needed
    probe = Run([prog("no_cuda")])

    def lw(*argv, env=None):
        return subprocess.run([CLI, *argv], cwd=probe.dir,
                              env={**clean_env(), **(env or {})},
                              capture_output=True, text=True, timeout=120)
    for gate in (["--max-growth", "0"], ["--max-peak", "1TiB"],
                 ["--fail-on", "all"]):
        p = lw("run", *gate, "--", *short)
        check_eq(p.returncode, 24, f"run {gate}, 3 steps: {p.stderr}")
        lines = [ln for ln in p.stderr.splitlines() if "cannot judge" in ln]
        check(len(lines) == 1 and "3 steps, at least 10 needed" in lines[0]
              and "leakwatch.step()" in lines[0], f"run {gate}: {p.stderr}")
    # A helper process with too few steps (a compiler, a worker) beside
    # one that has them: the run is judged by the latter; by none, not.
    long = [prog("leaky_loop"), "40", "1000"]
    both = ["sh", "-c", '"$0" "$@" && exec "$0" 3 1000', *long]
    p = lw("run", "--max-growth", "1MiB", "--", *both)
    check_eq(p.returncode, 0, f"one judged, one short: {p.stderr}")
    check("3 steps, at least 10 needed" in p.stderr and "ok: " in p.stderr,
          f"each trace's line: {p.stderr}")
    p = lw("run", "--max-growth", "1MiB", "--", "sh", "-c",
           '"$0" 3 1000 && "$0" 4 1000', long[0])
    check_eq(p.returncode, 24, f"two short traces: {p.stderr}")
    # The variables stand for the options.
    p = lw("run", "--", *short, env={"LEAKWATCH_MAX_PEAK": "1TiB"})
    check_eq(p.returncode, 24, f"LEAKWATCH_MAX_PEAK, 3 steps: {p.stderr}")
    p = lw("run", "--", *short)
    check_eq(p.returncode, 0, f"no gate: the program's status: {p.stderr}")
    # The bare gate: 3 marked steps, 10 needed.
    run = Run(short, env={"LEAKWATCH_MAX_GROWTH": "0"})
    check_eq(run.returncode, 24, f"bare gate, 3 steps: {run.stderr}")
    check("growth cannot be judged: 3 steps, at least 10 needed"
          in run.stderr, run.stderr)
    p = lw("check", "--max-growth", "0", run.trace())
    check_eq(p.returncode, 3, f"check, 3 steps: {p.stdout}")
    check_eq(p.stdout.count("\n"), 1, f"one line: {p.stdout}")
    # The program's own failure still wins.
    run = Run(["sh", "-c", '"$0" "$@"; exit 5', *short],
              env={"LEAKWATCH_MAX_GROWTH": "0"})
    check_eq(run.returncode, 5, f"the program's status kept: {run.stderr}")


def gate_limits_from_environment():
    """`run` reads each limit from its variable where no option says
    otherwise, refuses a bad one before the run, and the bare shim says
    once that it leaves those limits to `run` and `check`."""
    probe = Run([prog("no_cuda")])
    leaky = [prog("leaky_loop"), "40", "4096"]

    def lw(*argv, env=None):
        return subprocess.run([CLI, *argv], cwd=probe.dir,
                              env={**clean_env(), **(env or {})},
                              capture_output=True, text=True, timeout=120)
    p = lw("run", "--", *leaky, env={"LEAKWATCH_MAX_PEAK": "64KiB"})
    check_eq(p.returncode, 23, f"LEAKWATCH_MAX_PEAK 64KiB: {p.stderr}")
    check("FAIL: device memory peaked at" in p.stderr and
          "(--max-peak)" in p.stderr, p.stderr)
    p = lw("run", "--max-peak", "1TiB", "--", *leaky,
           env={"LEAKWATCH_MAX_PEAK": "64KiB"})
    check_eq(p.returncode, 0, f"--max-peak over the variable: {p.stderr}")
    p = lw("run", "--", *leaky, env={"LEAKWATCH_FAIL_ON": "all"})
    check_eq(p.returncode, 23, f"LEAKWATCH_FAIL_ON=all: {p.stderr}")
    check("FAIL: " in p.stderr and "(--fail-on all)" in p.stderr, p.stderr)
    for name, value in (("LEAKWATCH_FAIL_ON", "nosuchkind"),
                        ("LEAKWATCH_MAX_PEAK", "banana"),
                        ("LEAKWATCH_MAX_RESERVED_GROWTH", "-1")):
        p = lw("run", "--", "sh", "-c", "touch ran", env={name: value})
        check_eq(p.returncode, 2, f"{name}={value}: {p.stderr}")
        check(p.stderr.count("\n") == 1 and name in p.stderr and
              value in p.stderr, f"{name}={value}: {p.stderr}")
        check(not os.path.exists(os.path.join(probe.dir, "ran")),
              f"{name}={value}: the program ran")
    # Bare shim: said once, at the exit of the process that traced; the
    # status stays the program's.
    run = Run(leaky, env={"LEAKWATCH_FAIL_ON": "all",
                          "LEAKWATCH_MAX_PEAK": "1"})
    check_eq(run.returncode, 0, f"bare shim, LEAKWATCH_FAIL_ON: {run.stderr}")
    lines = [ln for ln in run.stderr.splitlines()
             if "not judged by the shim alone" in ln]
    check(len(lines) == 1 and "LEAKWATCH_FAIL_ON" in lines[0] and
          "LEAKWATCH_MAX_PEAK" in lines[0] and "leakwatch check" in lines[0]
          and run.trace() in lines[0], f"the note: {run.stderr}")


def exec_format_hint():
    """A script that cannot be run as it is (no #! line, or not
    executable): the error says how to run it."""
    probe = Run([prog("no_cuda")])
    script = os.path.join(probe.dir, "train.py")
    with open(script, "w") as f:
        f.write("print('hi')\n")
    for mode, what in ((0o755, "no #! line"), (0o644, "not executable")):
        os.chmod(script, mode)
        p = subprocess.run([CLI, "run", "--", script], cwd=probe.dir,
                           env=clean_env(), capture_output=True, text=True,
                           timeout=60)
        check_eq(p.returncode, 126, f"{what}: {p.stderr}")
        check(f"leakwatch run -- python3 {script}" in p.stderr,
              f"{what}: hint to name the interpreter: {p.stderr}")


def diff_cannot_judge():
    """diff of a judged run against one too short to judge says "cannot
    judge", never "fixed" nor "no regression", and exits 3."""
    before = Run([prog("leaky_loop"), "30", "1024"]).expect_ok()
    after = Run([prog("leaky_loop"), "5", "4096"]).expect_ok()
    p = subprocess.run([CLI, "diff", before.trace(), after.trace()],
                       capture_output=True, text=True, env=clean_env(),
                       timeout=60)
    check_eq(p.returncode, 3, f"diff exit status: {p.stdout}{p.stderr}")
    site = [line for line in p.stdout.splitlines() if "growth" in line
            and "/step" in line]
    check(site and site[0].strip().startswith("cannot judge"),
          f"the leaking site: {p.stdout}")
    check("fixed" not in p.stdout and "no regression:" not in p.stdout,
          p.stdout)
    check(f"{after.trace()} has 5 steps" in p.stdout, p.stdout)
    # Long enough on both sides, the same comparison is judged.
    after = Run([prog("leaky_loop"), "30", "4096"]).expect_ok()
    p = subprocess.run([CLI, "diff", before.trace(), after.trace()],
                       capture_output=True, text=True, env=clean_env(),
                       timeout=60)
    check_eq(p.returncode, 1, f"4x faster is WORSE: {p.stdout}")


def report_directory():
    """A directory given for a trace: one line that says to pass the trace
    files in it, exit status 2, from every command that reads traces."""
    run = Run([prog("leaky_loop"), "12", "1024"]).expect_ok()
    for argv in (["report"], ["check", "--max-growth", "0"],
                 ["diff", run.trace()]):
        p = subprocess.run([CLI, *argv, run.dir], capture_output=True,
                           text=True, env=clean_env(), timeout=60)
        check_eq(p.returncode, 2, f"{argv}: {p.stderr}")
        check_eq(p.stderr.strip(),
                 f"leakwatch: {run.dir}: Is a directory; pass the trace "
                 f"files in it ({run.dir}/*.trace)", f"{argv}")


def demo():
    """scripts/demo.sh keeps its trace and prints its path and the next
    commands to try, which work on it. It runs in the build tree under
    test (LEAKWATCH_BUILD), which is built already."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    build = os.path.dirname(os.path.dirname(os.path.realpath(CLI)))
    tmp = scratch_dir("lw-demo-")
    p = subprocess.run(["bash", os.path.join(root, "scripts", "demo.sh"),
                        "20"], env={**clean_env(), "TMPDIR": tmp,
                                    "LEAKWATCH_BUILD": build},
                       capture_output=True, text=True, timeout=300)
    check_eq(p.returncode, 0, f"demo: {p.stdout}{p.stderr}")
    m = re.search(r"^demo: the trace is kept: (\S+)$", p.stdout, re.M)
    check(m and os.path.exists(m.group(1)),
          f"the trace is kept and named: {p.stdout}")
    commands = re.findall(rf"^  ({re.escape(CLI)} .*)$", p.stdout, re.M)
    check(len(commands) >= 3, f"next commands: {p.stdout}")
    for command in commands:
        q = subprocess.run(command.split(), capture_output=True, text=True,
                           env=clean_env(), timeout=60)
        # check fails the planted leak (1); the others succeed.
        check_eq(q.returncode, 1 if " check " in command else 0,
                 f"{command}: {q.stderr}")


def teardown_not_lingering():
    """Buffers kept one per step and freed after the loop: teardown, not
    memory lingering at step peaks, and the finding says they were released
    after the last step, as its evidence shows."""
    run = Run([prog("keep_then_free"), "100", "4096"]).expect_ok()
    rep = report(run.trace())
    check_eq(rep["peak_attribution"]["lingering_steps"], 0,
             f"lingering: {rep['peak_attribution']}")
    check(all(p["lingering_bytes"] == 0 for p in rep["step_series"]),
          "no step point has lingering bytes")
    finding = [f for f in rep["findings"]
               if f["location"]["function"] == "keep_one_buffer"]
    check(finding, f"the kept buffers are a finding: {rep['findings']}")
    check_eq(finding[0]["evidence"]["frees"], 100, "freed at teardown")
    check("never released" not in finding[0]["reason"] and
          "after the last step" in finding[0]["reason"],
          f"the wording matches the evidence: {finding[0]['reason']}")
    text = report(run.trace(), fmt="text")
    check("Peak attribution" not in text and "lingering" not in text, text)
    # (Memory a step leaves to the next, freed during it, still lingers:
    # the diagnose suite's lingering scenarios.)


def hazards(*args, **kw):
    return Run([prog("hazards"), *args], **kw)


def sizes(rep):
    """The sizes of the live device allocations, per site, sorted."""
    return sorted(s["live_bytes"] // s["live_count"] for s in rep["sites"])


def exec_chain():
    """exec() keeps the pid: each program of the chain gets a trace of its
    own, and none clobbers the one before it."""
    run = hazards("exec", "2").expect_ok()
    pids = set(run.stdout.split()[1::2])
    check_eq(len(pids), 1, f"one pid for the chain: {run.stdout}")
    pid = pids.pop()
    names = [os.path.basename(t) for t in run.traces()]
    check_eq(sorted(names), sorted([f"trace-{pid}.trace",
                                    f"trace-{pid}-1.trace",
                                    f"trace-{pid}-2.trace"]), "traces")
    for name, size, cut in [(f"trace-{pid}.trace", 1002, True),
                            (f"trace-{pid}-1.trace", 1001, True),
                            (f"trace-{pid}-2.trace", 1000, False)]:
        rep = report(os.path.join(run.dir, name))
        check_eq(sizes(rep), [size], f"{name}: what it keeps")
        check_eq(rep["steps"], 1, f"{name}: the step before exec")
        check_eq(rep["truncated"], cut, f"{name}: truncated")


def exec_flush():
    """exec() replaces the program without its exit handlers: what the shim
    buffered since its last flush is written before the exec, through
    every member of the family. The old image's trace has every allocation
    and no END record; the new image's is its own."""
    for how in ["execl", "execlp", "execle", "execv", "execvp", "execvpe",
                "execve", "fexecve", "execveat"]:
        run = hazards("exec-now", how).expect_ok()
        traces = run.traces()
        check_eq(len(traces), 2, f"{how}: two traces, got {traces}")
        reps = sorted((report(t) for t in traces), key=sizes)
        check_eq(sizes(reps[0]), [1500], f"{how}: the image before exec")
        check_eq(reps[0]["truncated"], True, f"{how}: no END record")
        check_eq(sizes(reps[1]), [3000], f"{how}: the image after it")
        check_eq(reps[1]["truncated"], False, f"{how}: complete")


def exec_failed():
    """An exec that fails returns -1 with the C library's errno, and the
    program and its trace go on."""
    run = hazards("exec-fail").expect_ok()
    check_eq(run.stdout.strip(), "exec-fail -1 ENOENT", "exec's result")
    rep = report(run.trace())
    check_eq(sizes(rep), [1600, 1601], "both allocations, one trace")
    check_eq(rep["truncated"], False, "complete")


def secure_exec():
    """A set-user-ID program (secure execution: AT_SECURE) is left alone:
    no trace, no PYTORCH_CUDA_ALLOC_CONF, the same results. The same
    binary without the bit is traced, so the difference is the shim's.

    Secure mode ignores LD_PRELOAD paths with a slash, so the probe is
    linked against the shim (and the stand-in runtime) with an absolute
    RPATH, which secure mode honours. Run as root with the file owned by
    nobody, its effective user differs from its real one."""
    if os.geteuid() != 0:
        print("skipped: needs root (to give a file to nobody)")
        return SKIP
    cc = shutil.which(os.environ.get("CC", "cc"))
    if not cc:
        print("skipped: no C compiler")
        return SKIP
    d = tempfile.mkdtemp(prefix="lw-secure-")
    os.chmod(d, 0o755)
    fake = os.environ["LW_FAKECUDA_DIR"]
    for src in (LIB, os.path.join(fake, "libcudart.so.13"),
                os.path.join(fake, "libcuda.so.1")):
        shutil.copy(src, d)
    probe = os.path.join(d, "secure_probe")
    here = os.path.dirname(os.path.abspath(__file__))
    subprocess.run([cc, "-o", probe, os.path.join(here, "secure_probe.c"),
                    "-Wl,--no-as-needed", os.path.join(d, "libleakwatch.so"),
                    os.path.join(d, "libcudart.so.13"),
                    os.path.join(d, "libcuda.so.1"),
                    f"-Wl,-rpath,{d}", "-Wl,--disable-new-dtags"],
                   check=True)
    out = os.path.join(d, "out")
    os.mkdir(out)
    os.chmod(out, 0o1777)  # nobody could write here, were it to try
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))
           and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}
    env["LEAKWATCH_OUT"] = os.path.join(out, "trace-%p.trace")
    # So that the shim visibly changes the environment when it runs.
    env["LEAKWATCH_TORCH_ALLOCATOR"] = "async"

    def run(tag):
        p = subprocess.run([probe], env=env, capture_output=True, text=True,
                           timeout=60)
        check_eq(p.returncode, 0, f"{tag}: exit status; {p.stderr}")
        got = dict(l.split(" ", 1) for l in p.stdout.splitlines())
        traces = os.listdir(out)
        for t in traces:
            os.unlink(os.path.join(out, t))
        return got, traces, p.stderr

    plain, plain_traces, _ = run("without the bit")
    check_eq(plain["secure"], "0", "without the bit: not secure")
    check_eq(len(plain_traces), 1, "without the bit: traced")
    check(plain["conf"] != "(unset)", "without the bit: the shim chose "
          f"PyTorch's allocator: {plain}")
    shutil.chown(probe, user="nobody")
    os.chmod(probe, 0o4755)
    secure, secure_traces, stderr = run("set-user-ID")
    if secure["secure"] != "1":
        print("skipped: the set-user-ID bit is not honoured here "
              "(a nosuid mount?)")
        return SKIP
    check_eq(secure_traces, [], "set-user-ID: no trace")
    check_eq(secure["conf"], "(unset)", "set-user-ID: no allocator choice")
    check_eq((secure["malloc"], secure["free"]),
             (plain["malloc"], plain["free"]), "the program's results")
    check("leakwatch" not in stderr, f"set-user-ID: silent: {stderr}")
    shutil.rmtree(d)


def spawned_children():
    """vfork()+exec and posix_spawn() children (no fork handlers run) trace
    themselves; the parent's trace holds only its own allocations."""
    for mode in ["vfork", "spawn"]:
        run = hazards(mode).expect_ok()
        reps = [report(t) for t in run.traces()]
        check_eq(len(reps), 2, f"{mode}: two traces")
        by_pid = sorted(reps, key=lambda r: sizes(r))
        check_eq(sizes(by_pid[0]), [2000, 2001], f"{mode}: the parent")
        check_eq(sizes(by_pid[1]), [3000], f"{mode}: the child")
        for r in reps:
            check_eq(r["truncated"], False, f"{mode}: complete")


def vfork_exec():
    """A vfork() child shares its parent's memory until it execs: the
    shim's exec hook must leave the parent's trace buffer alone there (the
    parent holds an allocation not yet flushed). Counted with strace: no
    write at all from the child before its exec."""
    strace = shutil.which("strace")
    if not strace:
        print("skipped: strace is not installed")
        return SKIP
    probe = Run([prog("no_cuda")])
    log = os.path.join(probe.dir, "syscalls")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_") and k != "LD_PRELOAD"}
    env["LEAKWATCH_OUT"] = os.path.join(probe.dir, "traced-%p.trace")
    p = subprocess.run([strace, "-f", "-qq", "-o", log, "-e",
                        "trace=write,execve", "env", f"LD_PRELOAD={LIB}",
                        prog("hazards"), "vfork"], env=env,
                       capture_output=True, text=True, timeout=120)
    check_eq(p.returncode, 0, f"exit status; {p.stderr}")
    with open(log) as f:
        calls = [l.split(None, 1) for l in f if l.strip()]
    parent = calls[0][0]
    child = next(pid for pid, _ in calls if pid != parent)
    before_exec = []
    for pid, call in calls:
        if pid != child:
            continue
        if call.startswith("execve("):
            break
        before_exec.append(call)
    check_eq([c for c in before_exec if c.startswith("write(")], [],
             "writes by the vfork child before its exec")
    reps = sorted((report(os.path.join(probe.dir, t))
                   for t in os.listdir(probe.dir) if t.startswith("traced-")),
                  key=sizes)
    check_eq([sizes(r) for r in reps], [[2000, 2001], [3000]],
             "the parent's trace and the child's")


def daemon_child():
    """A double-forked, setsid() daemon whose output is closed and whose
    working directory is / writes its own complete trace."""
    probe = Run([prog("no_cuda")])
    pidfile = os.path.join(probe.dir, "daemon.pid")
    run = Run([prog("hazards"), "daemon", pidfile]).expect_ok()
    deadline = time.time() + 60
    rep = None
    while time.time() < deadline:
        if os.path.exists(pidfile):
            with open(pidfile) as f:
                pid = f.read().strip()
            path = os.path.join(run.dir, f"trace-{pid}.trace")
            if pid and os.path.exists(path):
                rep = report(path)
                if not rep["truncated"]:
                    break
        time.sleep(0.05)
    check(rep is not None and not rep["truncated"],
          "the daemon's trace is complete")
    check_eq(sizes(rep), [4000], "the daemon's allocations")
    others = [t for t in run.traces() if not t.endswith(f"-{pid}.trace")]
    check_eq(len(others), 1, f"one more trace, the parent's: {others}")
    parent = report(others[0])
    check_eq(sizes(parent), [2000, 2001], "the parent's allocations")


def crash_flush():
    """A program that crashes keeps what was recorded before the crash: the
    shim writes its buffer out and the signal kills the program as it
    would have (status and all); a handler of the program's is left in
    place."""
    for mode, sig in [("segv", signal.SIGSEGV), ("abort", signal.SIGABRT)]:
        run = hazards(mode)
        check_eq(run.returncode, -sig, f"{mode}: killed by the signal")
        rep = report(run.trace())
        check_eq(rep["truncated"], True, f"{mode}: truncated")
        check_eq(rep["allocations"], 3, f"{mode}: allocations before "
                 "the crash, though nothing had been flushed")
        check_eq(rep["live_bytes_at_exit"], 15000, f"{mode}: live bytes")
    run = hazards("own-handler")
    check_eq(run.returncode, 3, "the program's own handler ran")
    check_eq(run.stdout, "own handler\n", "its output")


def signals():
    """A timer interrupting hooks every 50 us (no SA_RESTART, so the
    trace's writes see EINTR), another thread churning, and allocations
    made by a signal handler: every event is recorded."""
    run = hazards("signals", "100000", timeout=300).expect_ok()
    check_eq(run.stdout.strip(), "alarms 1", "the timer fired")
    rep = report(run.trace())
    check_eq(rep["truncated"], False, "complete")
    check_eq(rep["live_count_at_exit"], 10, "live count")
    check_eq(rep["live_bytes_at_exit"], 60000, "live bytes")
    check_eq(rep["allocations"] - rep["frees"], 10, "allocations - frees")
    check_eq(rep["unknown_frees"], 0, "unknown frees")
    check("signal_kept" in functions(rep["sites"][0]),
          f"the handler's site: {functions(rep['sites'][0])}")


def exit_handlers():
    """An atexit handler allocates and frees: recorded. A thread that goes
    on allocating while the process exits, after the trace was closed,
    passes through untouched."""
    for _ in range(3):
        run = hazards("atexit").expect_ok()
        rep = report(run.trace())
        check_eq(rep["truncated"], False, "complete")
        # The churning thread's 64-byte buffer may be between its alloc
        # and its free when the trace closes: live at the end, rightly.
        check_eq([s for s in sizes(rep) if s != 64], [7000],
                 "the atexit handler's buffer, and not main's, freed by the "
                 "handler")
        check(rep["live_count_at_exit"] <= 2, f"live: {rep['live_count_at_exit']}")


def double_free():
    """Double frees, frees of unknown addresses and of the wrong kind
    return the runtime's own error; nothing is counted for a failed free."""
    plain = Run([prog("hazards"), "double-free"], preload=False).expect_ok()
    run = hazards("double-free").expect_ok()
    check_eq(run.stdout, plain.stdout, "results as without leakwatch")
    check("double free 0" not in run.stdout, f"errors: {run.stdout}")
    rep = report(run.trace())
    check_eq(rep["live_count_at_exit"], 0, "live count")
    check_eq(rep["unknown_frees"], 0, "failed frees are not counted")
    check_eq((rep["allocations"], rep["frees"]), (3, 3), "records")


def reopen_runtime():
    """dlclose() then dlopen() of the runtime, moved elsewhere: the shim
    never calls into where it was."""
    lib = os.environ["LW_TESTEXT"]
    plain = Run([prog("reopen"), lib], preload=False).expect_ok()
    check_eq(plain.stdout, "unloaded yes\nok\n",
             "without leakwatch, the runtime really is unloaded")
    run = Run([prog("reopen"), lib]).expect_ok()
    check("ok" in run.stdout, f"output: {run.stdout}")
    rep = report(run.trace())
    check_eq(sizes(rep), [100, 200], "both allocations")


def deepbind():
    """A library loaded with RTLD_DEEPBIND calls its own runtime, out of the
    runtime hooks' reach: one warning, on stderr and in the trace (here the
    runtime, loaded before, still allocates through the hooked driver, so
    the allocation is seen, from inside the runtime). The exported dlopen
    leaves glibc seeing the program as the caller: the library is found
    through the program's RUNPATH."""
    plain = Run([prog("deepbind"), "plain"]).expect_ok()
    check("RTLD_DEEPBIND" not in plain.stderr, f"warned: {plain.stderr}")
    rep = report(plain.trace())
    check_eq(sizes(rep), [1000, 4096], "both allocations seen")
    check_eq(rep["warnings"], [], "no warning")
    deep = Run([prog("deepbind"), "deep"]).expect_ok()
    check_eq(deep.stdout, "ok\n", "the program's output")
    check_eq(deep.stderr.count("RTLD_DEEPBIND"), 1, "one warning")
    rep = report(deep.trace())
    check_eq(sizes(rep), [1000, 4096], "both allocations, one by the driver")
    check(any("RTLD_DEEPBIND" in w for w in rep["warnings"]),
          f"the trace's warnings: {rep['warnings']}")


def early_constructor():
    """A library's constructor that allocates runs before the shim's own
    constructors (the program's libraries are loaded after the preloaded
    shim): the first hook starts the shim, and that allocation is
    recorded like the program's."""
    run = Run([prog("early_ctor")]).expect_ok()
    check_eq(run.stdout, "ok\n", "the program's output")
    rep = report(run.trace())
    check_eq(sizes(rep), [1000, 1 << 20], "both allocations seen")


def threads_million():
    """8 threads, 1M allocations and frees each: exact counts at the end."""
    run = Run([prog("threads"), "8", "500000"], timeout=600).expect_ok()
    m = re.search(r"expected_live_count (\d+) expected_live_bytes (\d+)",
                  run.stdout)
    check(m, f"program output: {run.stdout}")
    rep = report(run.trace())
    check_eq(rep["allocations"], 8 * 500000 + int(m.group(1)), "allocations")
    check_eq(rep["live_count_at_exit"], int(m.group(1)), "live count")
    check_eq(rep["live_bytes_at_exit"], int(m.group(2)), "live bytes")
    check_eq(rep["unknown_frees"], 0, "unknown frees")
    check_eq(rep["dropped_events"], 0, "dropped events")


if __name__ == "__main__":
    sys.exit(main({f.__name__: f for f in [
        leaky_loop, clean_loop, every_api, driver_api, runtime_counted_once,
        torch_allocator, pluggable_allocator, threads, forker, failing_alloc,
        rtld_local, unknown_free, no_cuda, quiet, killed, killed_after_step,
        optimizer_steps, python_helper_without_shim,
        symlink_not_followed, unwritable, exports, run_command,
        run_max_growth, exec_chain, exec_flush, exec_failed,
        secure_exec, spawned_children, vfork_exec, daemon_child,
        crash_flush, signals, exit_handlers, double_free, reopen_runtime,
        deepbind, file_size_limit, disk_full, two_runtimes, threads_million,
        early_constructor,
        manifest, run_daemon_after_exit,
        failed_allocations,
        run_unwritable, suppressions,
        bare_gate_suggestion, gate_no_steps, gate_limits_from_environment,
        diff_cannot_judge,
        exec_format_hint, report_directory, demo, teardown_not_lingering]}))
