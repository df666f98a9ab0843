# SPDX-License-Identifier: MIT
"""What leakwatch costs, all measured side by side in one run.

    bench-all.py BUILD_DIR [--quick] [--repeats N] [--parts 1,1w,5]

1. hook cost: cudaMalloc+cudaFree pairs on the stand-in runtime at native
   depths 10, 30, 60, without and with the shim;
2. heaptrack: the same loop with malloc+free, without and under heaptrack
   (skipped, and said so, when heaptrack is not installed);
3. Python: tinytensor alloc+free pairs from Python, without and with the
   shim (Python frames on);
4. size: trace bytes per event; the shim's resident memory per live
   allocation and per distinct stack;
5. report: events per second and peak memory of `leakwatch report` on
   1M-, 10M- and 20M-event traces (1M and 2M with --quick).

Every timing is the allocating thread's CPU time (the machines these run on
are shared; wall time would count other processes), the median of N runs,
with and without taken in alternation. Prints one table, each figure beside
its target.
"""
import argparse
import importlib.util
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
DEPTHS = (10, 30, 60)
SERIES_BOUND = 8192  # report/model/model.h: LW_STEP_POINTS_MAX

rows = []  # (benchmark, figure, value, target, verdict)


def row(bench, figure, value, target="", verdict=""):
    rows.append((bench, figure, value, target, verdict))
    print(f"  {figure}: {value}" + (f"   [target {target}: {verdict}]"
                                    if target else ""), flush=True)


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("LEAKWATCH_")
           and k not in ("LD_PRELOAD", "MALLOC_PERTURB_")}
    return env


def run_out(cmd, env):
    out = subprocess.run(cmd, env=env, capture_output=True, text=True,
                         timeout=600)
    if out.returncode != 0:
        raise SystemExit(f"bench-all: {' '.join(cmd)} failed "
                         f"({out.returncode}):\n{out.stderr}")
    return out.stdout


def run_ns(cmd, env):
    stdout = run_out(cmd, env)
    # heaptrack writes to the same stdout: find the program's own line.
    for line in stdout.splitlines():
        if line.startswith("ns-per-pair "):
            return float(line.split()[1])
    raise SystemExit(f"bench-all: {' '.join(cmd)} printed no ns-per-pair "
                     f"line:\n{stdout}")


def run_bytes(cmd, env):
    """bench-footprint's one figure: bytes."""
    stdout = run_out(cmd, env).split()
    if len(stdout) != 1 or not stdout[0].lstrip("-").isdigit():
        raise SystemExit(f"bench-all: {' '.join(cmd)} printed no byte "
                         f"count:\n{' '.join(stdout)}")
    return int(stdout[0])


def hooks_and_heaptrack(b, work, repeats, pairs):
    print("1. hook cost and 2. heaptrack: ns of CPU time per alloc+free pair"
          f" ({pairs} pairs, median of {repeats})", flush=True)
    heaptrack = shutil.which("heaptrack")
    if not heaptrack:
        print("  heaptrack is not installed (Debian: apt-get install "
              "heaptrack): the heaptrack column is skipped", flush=True)
    base = clean_env()
    shim = dict(base, LD_PRELOAD=b["lib"], LEAKWATCH_QUIET="1",
                LEAKWATCH_OUT=os.path.join(work, "hooks-%p.trace"))
    result = {}
    for depth in DEPTHS:
        plain, traced, mplain, htrack, sizes = [], [], [], [], []
        for _ in range(repeats):
            plain.append(run_ns([b["hooks"], str(depth), str(pairs)], base))
            traced.append(run_ns([b["hooks"], str(depth), str(pairs)], shim))
            for f in os.listdir(work):
                if f.startswith("hooks-"):
                    path = os.path.join(work, f)
                    sizes.append(os.path.getsize(path))
                    os.unlink(path)
            if heaptrack:
                mplain.append(run_ns([b["malloc"], str(depth), str(pairs)],
                                     base))
                htrack.append(run_ns(
                    [heaptrack, "-o", os.path.join(work, "ht"),
                     b["malloc"], str(depth), str(pairs)], base))
                for f in os.listdir(work):
                    if f.startswith("ht"):
                        os.unlink(os.path.join(work, f))
        p, t = statistics.median(plain), statistics.median(traced)
        added = t - p
        result[depth] = (p, t)
        row("hooks", f"depth {depth}: without shim {p:.0f} ns, with {t:.0f}"
            f" ns", f"+{added:.0f} ns, {t / p:.2f}x")
        row("size", f"depth {depth}: trace bytes per event",
            f"{statistics.median(sizes) / (2 * pairs):.2f}",
            "<= 4", "met" if statistics.median(sizes) / (2 * pairs) <= 4
            else "missed")
        if heaptrack:
            mp, ht = statistics.median(mplain), statistics.median(htrack)
            hadded = ht - mp
            ratio = added / hadded if hadded > 0 else float("inf")
            row("heaptrack", f"depth {depth}: malloc+free without "
                f"{mp:.0f} ns, under heaptrack {ht:.0f} ns (+{hadded:.0f})",
                f"leakwatch/heaptrack added cost {ratio:.2f}, whole pair "
                f"{t / ht:.2f}",
                "<= 0.5", "met" if ratio <= 0.5 else "missed")
    return result


def run_wall(cmd, env):
    t0 = time.perf_counter()
    run_out(cmd, env)
    return time.perf_counter() - t0


def hooks_wall(b, work, repeats, pairs):
    """Part 1 again, by whole-process wall time: the shim's writer thread
    and heaptrack's interpreter process count. Each figure is the time of
    a run of `pairs` pairs less that of a run of one (start-up, exit and
    heaptrack's final pass), per pair."""
    print("1w. hook cost against heaptrack by whole-process wall time, "
          f"ns per pair ({pairs} pairs less one, median of {repeats})",
          flush=True)
    heaptrack = shutil.which("heaptrack")
    if not heaptrack:
        print("  heaptrack is not installed: part 1w is skipped", flush=True)
        return
    base = clean_env()
    shim = dict(base, LD_PRELOAD=b["lib"], LEAKWATCH_QUIET="1",
                LEAKWATCH_OUT=os.path.join(work, "wall-%p.trace"))
    ht = [heaptrack, "-o", os.path.join(work, "ht")]

    def per_pair(prefix, prog, depth, env):
        many = run_wall(prefix + [prog, str(depth), str(pairs)], env)
        none = run_wall(prefix + [prog, str(depth), "1"], env)
        for f in os.listdir(work):
            if f.startswith(("ht", "wall-")):
                os.unlink(os.path.join(work, f))
        return (many - none) / pairs * 1e9

    for depth in DEPTHS:
        lw, htr = [], []
        for _ in range(repeats):
            lw.append(per_pair([], b["hooks"], depth, shim) -
                      per_pair([], b["hooks"], depth, base))
            htr.append(per_pair(ht, b["malloc"], depth, base) -
                       per_pair([], b["malloc"], depth, base))
        added, hadded = statistics.median(lw), statistics.median(htr)
        ratio = added / hadded if hadded > 0 else float("inf")
        row("heaptrack-wall", f"depth {depth}: wall time added per pair, "
            f"leakwatch +{added:.0f} ns, heaptrack +{hadded:.0f} ns",
            f"{ratio:.2f}", "<= 0.5", "met" if ratio <= 0.5 else "missed")


def python_loop(b, work, repeats, pairs):
    print(f"3. Python: tinytensor alloc+free pairs from Python ({pairs} "
          f"pairs, best of {repeats} inside each run)", flush=True)
    spec = importlib.util.spec_from_file_location(
        "bench_python", os.path.join(SOURCE, "tests/pysites/bench_python.py"))
    bp = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bp)
    os.environ["LW_LIB"] = b["lib"]
    os.environ["LW_TINYTENSOR"] = b["tinytensor"]
    site = os.path.join(work, "site-packages")
    os.makedirs(site, exist_ok=True)
    shutil.copy(os.path.join(SOURCE, "tests/tinytensor/tinytensor.py"), site)
    for depth in (5, 30):
        base = bp.measure(sys.executable, depth, pairs, repeats, site, work,
                          preload=False)
        shim = bp.measure(sys.executable, depth, pairs, repeats, site, work,
                          preload=True)
        traces = [f for f in os.listdir(work) if f.startswith("bench-")]
        per_event = 0.0
        for f in traces:
            per_event = max(per_event, os.path.getsize(
                os.path.join(work, f)) / (2 * (pairs * repeats + 1000)))
            os.unlink(os.path.join(work, f))
        row("python", f"Python depth {depth}: without {base:.0f} ns, with "
            f"{shim:.0f} ns per allocation", f"{shim / base:.2f}x",
            "<= 2x", "met" if shim / base <= 2 else "missed")
        row("size", f"Python depth {depth}: trace bytes per event",
            f"{per_event:.2f}", "<= 4", "met" if per_event <= 4 else "missed")


def footprint(b, repeats):
    print("4. size: the shim's resident memory", flush=True)
    base = clean_env()
    with tempfile.TemporaryDirectory() as d:
        shim = dict(base, LD_PRELOAD=b["lib"], LEAKWATCH_QUIET="1",
                    LEAKWATCH_OUT=os.path.join(d, "fp-%p.trace"))
        for mode, n in (("live", 200000), ("stacks", 32768)):
            deltas = []
            for _ in range(max(1, repeats // 2)):
                without = run_bytes([b["footprint"], mode, str(n)], base)
                with_ = run_bytes([b["footprint"], mode, str(n)], shim)
                deltas.append((with_ - without) / n)
            what = ("per live allocation" if mode == "live"
                    else "per distinct stack (depth about 20)")
            row("size", f"shim resident memory {what} ({n})",
                f"{statistics.median(deltas):.0f} bytes")


def wait_rusage(cmd):
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"bench-all: {' '.join(cmd)} failed: "
                         f"{proc.stderr.read().decode()}")
    return (usage.ru_utime + usage.ru_stime, time.monotonic() - start,
            usage.ru_maxrss * 1024)


def report(b, work, repeats, sizes):
    print("5. report: `leakwatch report` on synthetic traces (256 stacks, "
          "about 4096 live allocations), median of "
          f"{repeats}", flush=True)
    cpu_of, rss_of, html_rss_of = {}, {}, {}
    for events in sizes:
        path = os.path.join(work, f"r{events}.trace")
        subprocess.run([b["gen"], "large", path, str(events), "8192"],
                       check=True)
        cpu, rss = [], []
        for _ in range(repeats):
            c, _, r = wait_rusage([b["cli"], "report", path])
            cpu.append(c)
            rss.append(r)
        parse = subprocess.run([b["parse"], path], capture_output=True,
                               text=True, check=True).stdout.strip()
        c, r = statistics.median(cpu), statistics.median(rss)
        cpu_of[events], rss_of[events] = c, r
        rate = events / c / 1e6
        row("report", f"{events / 1e6:g}M events, "
            f"{os.path.getsize(path) / 1e6:.1f} MB: CPU {c:.3f} s, peak RSS "
            f"{r / 2**20:.1f} MiB", f"{rate:.1f} M events/s",
            ">= 20 M/s", "met" if rate >= 20 else "missed")
        row("report", "  parser alone (bench-parse)",
            parse.split(": ", 1)[-1])
        # html and perfetto read the trace a second time (the timeline).
        hc, _, hr = wait_rusage([b["cli"], "report", "--format", "html",
                                 "-o", os.devnull, path])
        row("report", f"  --format html: CPU {hc:.3f} s, peak RSS "
            f"{hr / 2**20:.1f} MiB", f"{events / hc / 1e6:.1f} M events/s")
        html_rss_of[events] = hr
        os.unlink(path)
    first, last = sizes[0], sizes[-1]
    scale = last / first
    growth = cpu_of[last] / cpu_of[first]
    row("report", f"time {first / 1e6:g}M -> {last / 1e6:g}M events "
        f"({scale:g}x)", f"{growth:.1f}x", "linear",
        "met" if growth <= scale * 1.3 else "missed")
    # Memory is bounded by live allocations, stacks and the per-step
    # series, which fill up to SERIES_BOUND steps (a STEP every 1000
    # events here): it must stay flat between two traces past that.
    full = [n for n in sizes if n // 1000 >= SERIES_BOUND]
    for name, rss in (("", rss_of), ("--format html ", html_rss_of)):
        a, z = (full[-2], full[-1]) if len(full) >= 2 else (first, last)
        figure = (f"{rss[a] / 2**20:.1f} -> {rss[z] / 2**20:.1f} MiB, "
                  f"{rss[z] / rss[a]:.2f}x")
        if len(full) >= 2:
            row("report", f"{name}peak RSS {a / 1e6:g}M -> {z / 1e6:g}M "
                "events", figure, "flat",
                "met" if rss[z] / rss[a] <= 1.2 else "missed")
        else:
            row("report", f"{name}peak RSS {a / 1e6:g}M -> {z / 1e6:g}M "
                "events (the step series still fill: not judged)", figure)

def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("build")
    parser.add_argument("--quick", action="store_true",
                        help="fewer pairs and runs, 1M and 2M events")
    parser.add_argument("--repeats", type=int, default=0)
    parser.add_argument("--parts", default="1,1w,3,4,5",
                        help="which parts to run: 1 (hooks, and heaptrack's "
                        "part 2), 1w (the same by whole-process wall time), "
                        "3, 4, 5")
    args = parser.parse_args()
    build = os.path.abspath(args.build)
    b = {
        "lib": f"{build}/interpose/libleakwatch.so",
        "hooks": f"{build}/tests/bench/bench-hooks",
        "malloc": f"{build}/tests/bench/bench-malloc",
        "footprint": f"{build}/tests/bench/bench-footprint",
        "tinytensor": f"{build}/tests/tinytensor/libtinytensor.so",
        "cli": f"{build}/report/leakwatch",
        "gen": f"{build}/tests/report/gen-trace",
        "parse": f"{build}/tests/report/bench-parse",
    }
    for name, path in b.items():
        if not os.path.exists(path):
            print(f"bench-all: {path} is missing; build first "
                  f"(scripts/setup.sh {args.build})", file=sys.stderr)
            return 2
    repeats = args.repeats or (3 if args.quick else 7)
    pairs = 50000 if args.quick else 200000
    print(f"leakwatch benchmarks, {time.strftime('%Y-%m-%d')}, "
          f"{os.cpu_count()} CPUs, Python {sys.version.split()[0]}",
          flush=True)
    work = tempfile.mkdtemp(prefix="lw-bench-")
    try:
        parts = set(args.parts.split(","))
        if "1" in parts or "2" in parts:
            hooks_and_heaptrack(b, work, repeats, pairs)
        if "1w" in parts:
            hooks_wall(b, work, repeats, pairs)
        if "3" in parts:
            python_loop(b, work, max(3, repeats // 2), pairs // 2)
        if "4" in parts:
            footprint(b, repeats)
        if "5" in parts:
            report(b, work, max(3, repeats // 2),
                   (1000000, 2000000) if args.quick
                   else (1000000, 10000000, 20000000))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    missed = [r for r in rows if r[4] == "missed"]
    print(f"\n{len([r for r in rows if r[4]])} targets checked, "
          f"{len(missed)} missed" + (":" if missed else ""))
    for r in missed:
        print(f"  {r[1]}: {r[2]} (target {r[3]})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
