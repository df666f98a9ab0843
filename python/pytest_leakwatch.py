# SPDX-License-Identifier: MIT
"""pytest plugin: fail tests whose loop grows GPU memory.

    pytest --leakwatch

    @pytest.mark.leakwatch(max_growth="1MiB", steps=20)
    def test_training_step(model, batch):
        train_step(model, batch)          # one iteration

Under --leakwatch a test marked `leakwatch` is run `steps` times in a row
(its fixtures set up once), with a step mark after each run; the test fails
when the device memory held after each run grows by more than max_growth
per run, or (fail_on=, as `leakwatch check --fail-on`) when what its runs
left live is diagnosed as a leak of a kind named ("metric-copy",
"high", "medium", "all"; default: $LEAKWATCH_FAIL_ON, else none). A test
whose runs cannot be judged (too few runs after the warm-up, or the shim
not tracking) fails too: a gate never passes on nothing. max_peak=,
max_reserved_peak= and max_reserved_growth= (defaults: $LEAKWATCH_MAX_PEAK,
$LEAKWATCH_MAX_RESERVED_PEAK, $LEAKWATCH_MAX_RESERVED_GROWTH) judge PyTorch's
caching allocator through torch.cuda's statistics: the highest peak of a
run (its peak statistics are reset before each run), and the reserved pool's
growth from run to run; a test that does not use it cannot be judged. The series is judged by the shim's leakwatch_judge_growth(), the
judge of `leakwatch check` and of the report, which judges the test's steps
(a phase of the trace) the same way, so that both give one verdict: memory
made by the first runs (caches, optimizer state), memory freed every few
runs and growth that stops (a plateau) are not growth. The failure output gets a
"leakwatch" section with the series and the growing sites of the trace,
each with its holder ("held by: ...", searched for as the test fails) and
fix, and its frames down to the test's own (pytest's folded in one line).
Every test is a phase of the trace, named by its node id.

The shim must be loaded in the pytest process: run `leakwatch run --
pytest --leakwatch`, or preload it yourself, or let the plugin start pytest
again with LD_PRELOAD set to the library of --leakwatch-lib (default:
$LEAKWATCH_LIB, else the installed shim, else the source tree's build).
Without --leakwatch the marker does nothing and tests run once.

--leakwatch-user-code DIR (repeatable) names the directories of the code
under test as the program's own, so that a growing site is located at its
line rather than in the libraries it calls (`leakwatch report --user-code`;
it sets LEAKWATCH_USER_CODE for the shim and the command). Without it, the
tests' tree is, less the libraries the interpreter imported.

pip installs the plugin with an entry point, so pytest loads it by itself;
from a source checkout, put python/ on PYTHONPATH and pass -p
pytest_leakwatch.
"""
import ctypes
import json
import os
import re
import subprocess
import sys

import pytest

from leakwatch import _paths

_REEXEC = "LEAKWATCH_PYTEST_REEXEC"
_UNITS = {"": 1, "b": 1, "k": 1024, "kib": 1024, "m": 1024 ** 2,
          "mib": 1024 ** 2, "g": 1024 ** 3, "gib": 1024 ** 3,
          "t": 1024 ** 4, "tib": 1024 ** 4, "kb": 1000, "mb": 1000 ** 2,
          "gb": 1000 ** 3, "tb": 1000 ** 4}


def parse_size(value):
    """Bytes in "0", "100", "512KiB", "1.5GiB", "10MB" (as `leakwatch
    check --max-growth` reads them); ValueError otherwise."""
    if isinstance(value, int) and value >= 0:
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {value!r} (use 0, 100, 512KiB, 1MiB, 10MB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n):
    sign = "-" if n < 0 else "+"
    n = abs(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{sign}{n:.0f} {unit}" if unit == "B" else f"{sign}{n:.1f} {unit}"
        n /= 1024.0
    return f"{sign}{n}"


class _Shim:
    def __init__(self):
        try:
            lib = ctypes.CDLL(None)
            self.step = lib.leakwatch_step
            self.phase_begin = lib.leakwatch_phase_begin
            self.phase_end = lib.leakwatch_phase_end
            self.live = lib.leakwatch_device_live
            self.judge_growth = lib.leakwatch_judge_growth
            # PyDLL: the holder search needs the GIL held.
            self.search = ctypes.PyDLL(None).leakwatch_snapshot
        except (OSError, AttributeError):
            self.step = None
            return
        self.search.argtypes = []
        self.search.restype = None
        self.step.restype = None
        self.phase_begin.argtypes = [ctypes.c_char_p]
        self.phase_begin.restype = None
        self.phase_end.restype = None
        self.live.argtypes = [ctypes.POINTER(ctypes.c_ulonglong)] * 2
        self.live.restype = ctypes.c_int
        self.judge_growth.argtypes = [ctypes.POINTER(ctypes.c_double),
                                      ctypes.c_ulong,
                                      ctypes.POINTER(ctypes.c_double)]
        self.judge_growth.restype = ctypes.c_char_p

    @property
    def loaded(self):
        return self.step is not None

    def judge(self, series):
        """(verdict, bytes per run) of series, as the report judges it."""
        values = (ctypes.c_double * len(series))(*series)
        rate = ctypes.c_double()
        verdict = self.judge_growth(values, len(series), ctypes.byref(rate))
        return verdict.decode(), rate.value

    def device_live(self):
        b, c = ctypes.c_ulonglong(), ctypes.c_ulonglong()
        if self.live(ctypes.byref(b), ctypes.byref(c)) != 0:
            return None
        return b.value, c.value


def _trace_path():
    """The trace of this process, from LEAKWATCH_OUT as the shim expands
    it (%p pid, %r rank, %h host, %% percent)."""
    pattern = os.environ.get("LEAKWATCH_OUT") or ""
    rank = ""
    for name in ("RANK", "LOCAL_RANK"):
        if os.environ.get(name, "").isdigit():
            rank = os.environ[name]
            break
    if not pattern:
        pattern = "leakwatch-rank%r-%p.trace" if rank else "leakwatch-%p.trace"
    subst = {"p": str(os.getpid()), "r": rank, "h": os.uname().nodename,
             "%": "%"}
    path = re.sub(r"%([prh%])", lambda m: subst[m.group(1)], pattern)
    return os.path.abspath(path)


def pytest_addoption(parser):
    group = parser.getgroup("leakwatch", "GPU memory growth (leakwatch)")
    group.addoption("--leakwatch", action="store_true", default=False,
                    help="run tests marked leakwatch in a loop and fail "
                         "those whose GPU memory grows")
    group.addoption("--leakwatch-lib", default=None, metavar="PATH",
                    help="the shim to preload when it is not loaded yet "
                         "(default: $LEAKWATCH_LIB, else the installed one)")
    group.addoption("--leakwatch-steps", type=int, default=20, metavar="N",
                    help="runs of a marked test without steps= (default 20)")
    group.addoption("--leakwatch-user-code", action="append", default=[],
                    metavar="DIR",
                    help="Python code under DIR is the program's own: "
                         "growing sites are located at its lines "
                         "(repeatable; as leakwatch report --user-code)")


def _reexec(config):
    lib = config.getoption("leakwatch_lib") or _paths.library() or \
        "libleakwatch.so (not found)"
    lib = os.path.abspath(lib)
    if os.environ.get(_REEXEC) or not os.path.exists(lib):
        raise pytest.UsageError(
            f"--leakwatch: the leakwatch shim is not loaded and {lib} "
            "cannot be preloaded; run `leakwatch run -- pytest --leakwatch` "
            "or set --leakwatch-lib")
    env = dict(os.environ)
    env["LD_PRELOAD"] = lib + (":" + env["LD_PRELOAD"]
                               if env.get("LD_PRELOAD") else "")
    env[_REEXEC] = "1"
    argv = list(getattr(sys, "orig_argv", [])) or \
        [sys.executable, "-m", "pytest", *sys.argv[1:]]
    capman = config.pluginmanager.getplugin("capturemanager")
    if capman is not None:
        capman.stop_global_capturing()
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable, *argv[1:]], env)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "leakwatch(max_growth='0', steps=20, warmup=None, fail_on=None, "
        "max_peak=None, max_reserved_peak=None, max_reserved_growth=None): "
        "under --leakwatch, run the test `steps` times and fail it when "
        "GPU memory grows by more than max_growth per run, what its "
        "runs left is a leak of a kind fail_on names, or PyTorch's "
        "allocator passes a peak or reserved growth limit")
    if not config.getoption("leakwatch"):
        return
    _name_user_code(config.getoption("leakwatch_user_code"))
    shim = _Shim()
    if not shim.loaded:
        _reexec(config)
    config._leakwatch = shim


def _name_user_code(dirs):
    """Adds dirs (absolute) to LEAKWATCH_USER_CODE, which the shim and the
    leakwatch command read, in this pytest and the one started again."""
    if not dirs:
        return
    known = [d for d in os.environ.get("LEAKWATCH_USER_CODE", "").split(
        os.pathsep) if d]
    for d in dirs:
        d = os.path.abspath(d)
        if not os.path.exists(d):
            raise pytest.UsageError(
                f"--leakwatch-user-code {d}: no such directory")
        if d not in known:
            known.append(d)
    os.environ["LEAKWATCH_USER_CODE"] = os.pathsep.join(known)


def _active(config):
    return getattr(config, "_leakwatch", None)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    # A marked test's phase is its runs' own (pytest_pyfunc_call), so that
    # what they left is the test's to report before it ends.
    shim = _active(item.config)
    phase = shim and item.get_closest_marker("leakwatch") is None
    if phase:
        shim.phase_begin(item.nodeid.encode("utf-8", "replace"))
    try:
        yield
    finally:
        if phase:
            shim.phase_end()


def _frame_text(f):
    where = f.get("file") or f.get("module") or "?"
    if f.get("line"):
        where += f":{f['line']}"
    return f"{f.get('function') or '??'}  {where}"


_HARNESS = re.compile(r"(^|/)(_pytest|pluggy|pytest)(/|\.py$)|"
                      r"(^|/)pytest_leakwatch\.py$")


def _harness_frame(f):
    """A frame of pytest's own machinery (pytest, _pytest, pluggy, this
    plugin), which runs every test the same way."""
    return bool(_HARNESS.search(f.get("file") or f.get("module") or ""))


def _fold_harness(frames):
    """The frames up to the test's own, then one line for pytest's: its
    frames are the same under every test."""
    out = []
    for i, f in enumerate(frames):
        if _harness_frame(f):
            rest = len(frames) - i
            out.append(f"… {rest} pytest frame{'s' if rest != 1 else ''}")
            break
        out.append(_frame_text(f))
    return out


def _finding_of(rep, site):
    """The report's finding for a site of the test's phase: the one it
    leads, else the one at its line."""
    findings = [f for f in rep.get("findings", []) if f.get("leak")]
    for f in findings:
        if (f.get("site"), f.get("kind")) == (site["id"], site["kind"]):
            return f
    where = site.get("location") or {}
    key = (where.get("file"), where.get("line"), where.get("function"))
    for f in findings:
        lines = [f.get("location") or {}] + (f.get("lines") or [])
        if any((x.get("file"), x.get("line"), x.get("function")) == key
               for x in lines):
            return f
    return None


def _holder_lines(finding):
    """"held by: PATH (ROOT; N objects)" for each holder, and the fix:
    against the holder when there is one, else the finding's."""
    if not finding:
        return []
    out = []
    held = finding.get("held_by") or []
    for h in held:
        n = h.get("objects", 0)
        out.append(f"held by: {h['path']} ({h['root']}; {n} "
                   f"object{'s' if n != 1 else ''})")
    fix = held[0].get("fix") if held else finding.get("fix")
    if fix:
        out.append(f"fix: {fix}")
    return out


def _test_sites(cli, trace, nodeid, runs, limit=3, frames=8):
    """What the test's runs left behind, by site, most first: the sites of
    the test's own phase of the trace (memory born in its runs and live
    when they ended), each with its bytes per run and Python frames (its
    native ones when it has none). Other tests' sites are not there."""
    p = subprocess.run([cli, "report", "--format", "json", trace],
                       capture_output=True, text=True, timeout=300)
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        return [f"  (leakwatch report failed: {p.stderr.strip()})"]
    phase = next((ph for ph in reversed(rep.get("phases", []))
                  if ph.get("name") == nodeid), None)
    frames_of = {(s["id"], s["kind"]): s["frames"]
                 for s in rep.get("sites", [])}
    out = []
    for s in (phase or {}).get("sites", [])[:limit]:
        out.append(f"  {format_size(s['bytes'] / runs)} per run "
                   f"({s['count']} allocations in {runs} runs) at "
                   f"{_frame_text(s.get('location') or {})}")
        out += ["      " + line for line in _holder_lines(_finding_of(rep, s))]
        stack = frames_of.get((s["id"], s["kind"]), [])
        shown = [f for f in stack if f.get("python")] or stack
        out += ["      " + line for line in _fold_harness(shown)[:frames]]
    return out or ["  (nothing the test's runs made is still live)"]


def _section(item, shim, series, per_step, limit, steps, warmup):
    lines = [
        f"device memory after each of {steps} runs "
        f"(warm-up: the first {warmup}):",
        "  " + (", ".join(str(b) for b in series) if len(series) <= 24 else
                ", ".join(str(b) for b in series[:10]) + ", ..., " +
                ", ".join(str(b) for b in series[-10:])),
        f"growth: {format_size(per_step)} per run "
        f"(allowed: {format_size(limit)})",
    ]
    trace = _trace_path()
    cli = _paths.command()
    if cli and os.path.exists(trace):
        lines += ["", f"what the test's runs left live, by site ({trace}):"]
        lines += _test_sites(cli, trace, item.nodeid, steps)
    else:
        lines.append(f"trace: {trace}")
    return "\n".join(lines)


_CONFIDENCE = {"all": 0, "low": 0, "medium": 1, "high": 2}


def _known_kinds():
    """The kinds `leakwatch check --fail-on` knows, from its own error."""
    cli = _paths.command()
    if not cli:
        return None
    p = subprocess.run([cli, "check", "--fail-on", "?", "/dev/null"],
                       capture_output=True, text=True, timeout=60)
    m = re.search(r"known kinds: ([^;]*);", p.stderr)
    return m.group(1).split(", ") if m else None


def parse_fail_on(value):
    """(kinds, least confidence or None) of a fail_on list, as `leakwatch
    check --fail-on` reads it; ValueError naming an unknown kind."""
    kinds, least = set(), None
    items = [i.strip() for i in str(value).split(",") if i.strip()]
    known = None
    for item in items:
        if item in _CONFIDENCE:
            c = _CONFIDENCE[item]
            least = c if least is None else min(least, c)
            continue
        if known is None:
            known = _known_kinds() or []
        if known and item not in known:
            raise ValueError(f"unknown kind {item!r} (known kinds: "
                             f"{', '.join(known)}; or high, medium, all)")
        kinds.add(item)
    if not items:
        raise ValueError(f"fail_on={value!r} names no kind or confidence")
    return kinds, least


def _marker_options(item, marker):
    """(max_growth in bytes, steps, warmup, fail_on) of a leakwatch marker;
    pytest.UsageError, one line naming the test and the value, when one is
    bad."""
    opts = dict(marker.kwargs)

    def bad(what):
        return pytest.UsageError(f"{item.nodeid}: leakwatch marker: {what}")
    unknown = sorted(set(opts) - {"max_growth", "steps", "warmup",
                                  "fail_on", *_POOL_LIMITS})
    if unknown or marker.args:
        what = (f"unknown argument {unknown[0]}=" if unknown else
                f"positional argument {marker.args[0]!r}")
        raise bad(f"{what} (it takes max_growth=, steps=, warmup=, "
                  "fail_on=, max_peak=, max_reserved_peak=, "
                  "max_reserved_growth=)")
    pool = {}
    for name, variable in _POOL_LIMITS.items():
        value = opts.get(name, os.environ.get(variable))
        if value is None:
            continue
        try:
            pool[name] = parse_size(value)
        except ValueError as e:
            raise bad(f"{'' if name in opts else variable + ': '}"
                      f"{name}: {e}") from None
    fail_on = opts.get("fail_on", os.environ.get("LEAKWATCH_FAIL_ON"))
    if fail_on is not None:
        try:
            fail_on = (str(fail_on), *parse_fail_on(fail_on))
        except ValueError as e:
            what = "" if "fail_on" in opts else "LEAKWATCH_FAIL_ON: "
            raise bad(f"{what}{e}") from None
    try:
        limit = parse_size(opts.get("max_growth", 0))
    except ValueError as e:
        raise bad(e) from None
    values = {}
    for name, default in (("steps", item.config.getoption("leakwatch_steps")),
                          ("warmup", None)):
        value = opts.get(name, default)
        if value is None:
            continue
        try:
            values[name] = int(value)
        except (TypeError, ValueError):
            raise bad(f"{name}={value!r} is not a whole number") from None
        if values[name] < 0:
            raise bad(f"{name}={value!r} is negative")
    steps = values["steps"]
    warmup = values.get("warmup", max(1, steps // 10))
    if steps < 5:
        raise bad(f"steps={steps}: growth is judged on at least 5 runs")
    if steps < warmup + 2:
        raise bad(f"steps={steps} leaves nothing to judge after "
                  f"warmup={warmup}")
    return limit, steps, warmup, fail_on, pool


# The limits on PyTorch's allocator a marker takes, and their variables.
_POOL_LIMITS = {"max_peak": "LEAKWATCH_MAX_PEAK",
                "max_reserved_peak": "LEAKWATCH_MAX_RESERVED_PEAK",
                "max_reserved_growth": "LEAKWATCH_MAX_RESERVED_GROWTH"}


class _PoolStats:
    """Each run's peaks and the reserved pool after it, from PyTorch's
    caching allocator (torch.cuda's statistics: the peak of a run is
    PyTorch's, reset before it), for the max_peak, max_reserved_peak and
    max_reserved_growth limits of a marker."""

    def __init__(self, limits):
        self.limits = limits
        self.cuda = None
        self.reset = False
        self.peaks, self.reserved_peaks, self.reserved = [], [], []

    def _find(self):
        torch = sys.modules.get("torch")
        if self.limits and self.cuda is None and torch is not None:
            try:
                if torch.cuda.is_initialized():
                    self.cuda = torch.cuda
            except Exception:  # noqa: BLE001 - a broken torch: no stats
                self.cuda = None

    def before(self):
        self._find()
        if self.cuda is not None:
            self.cuda.reset_peak_memory_stats()
        self.reset = self.cuda is not None

    def after(self):
        # A run whose peaks were not reset before it (the one that started
        # CUDA) holds the process's, not its own: not counted.
        if self.reset:
            self.cuda.synchronize()
            self.peaks.append(self.cuda.max_memory_allocated())
            self.reserved_peaks.append(self.cuda.max_memory_reserved())
            self.reserved.append(self.cuda.memory_reserved())

    def judge(self, shim, warmup, steps):
        """Fails the test over a limit, or when it cannot be judged."""
        names = ", ".join(f"{k}=" for k in self.limits)
        if not self.peaks:
            pytest.fail(f"leakwatch: cannot judge {names}: the test's runs "
                        "did not use PyTorch's CUDA allocator",
                        pytrace=False)
        for name, runs in (("max_peak", self.peaks),
                           ("max_reserved_peak", self.reserved_peaks)):
            if name not in self.limits:
                continue
            top = max(runs)
            if top > self.limits[name]:
                what = "device memory" if name == "max_peak" else \
                    "PyTorch's reserved memory"
                pytest.fail(f"leakwatch: FAIL: {what} peaked at "
                            f"{format_size(top)[1:]} in run "
                            f"{steps - len(runs) + runs.index(top) + 1}, "
                            "over the "
                            f"{format_size(self.limits[name])[1:]} allowed "
                            f"({name}=)", pytrace=False)
        if "max_reserved_growth" in self.limits:
            skip = max(0, warmup - max(1, steps // 10) -
                       (steps - len(self.reserved)))
            verdict, rate = shim.judge(self.reserved[skip:])
            if verdict == "not-enough-steps":
                pytest.fail(f"leakwatch: cannot judge max_reserved_growth=: "
                            f"{len(self.reserved) - skip} runs after the "
                            "warm-up, at least 5 needed", pytrace=False)
            if verdict == "growing" and \
               rate > self.limits["max_reserved_growth"]:
                pytest.fail(f"leakwatch: FAIL: PyTorch's reserved memory "
                            f"grows by {format_size(rate)} per run, over "
                            f"the {format_size(self.limits['max_reserved_growth'])[1:]}"
                            " allowed (max_reserved_growth=)",
                            pytrace=False)


def _check_fail_on(item, fail_on, runs):
    """Fails the test when what its runs left live (its phase's sites) is
    diagnosed as a leak that fail_on names."""
    text, kinds, least = fail_on
    trace = _trace_path()
    cli = _paths.command()
    if not cli or not os.path.exists(trace):
        pytest.fail(f"leakwatch: cannot judge fail_on={text!r}: "
                    f"{'no leakwatch command' if not cli else 'no trace'} "
                    f"({trace})", pytrace=False)
    p = subprocess.run([cli, "report", "--format", "json", trace],
                       capture_output=True, text=True, timeout=300)
    try:
        rep = json.loads(p.stdout)
    except ValueError:
        pytest.fail(f"leakwatch: cannot judge fail_on={text!r}: "
                    f"leakwatch report failed: {p.stderr.strip()}",
                    pytrace=False)
    phase = next((ph for ph in reversed(rep.get("phases", []))
                  if ph.get("name") == item.nodeid), None)
    ours = {s["id"] for s in (phase or {}).get("sites", [])}
    for f in rep.get("findings", []):
        if f.get("suppressed") or f.get("site") not in ours:
            continue
        named = f.get("category") in kinds or (
            f.get("leak") and least is not None and
            _CONFIDENCE.get(f.get("confidence"), -1) >= least)
        if not named:
            continue
        loc = f.get("location") or {}
        at = loc.get("function") or "??"
        if loc.get("file"):
            at += f" ({loc['file']}:{loc.get('line') or '?'})"
        item.add_report_section("call", "leakwatch", "\n".join(
            [f"what the test's runs left live, by site ({trace}):"] +
            _test_sites(cli, trace, item.nodeid, runs)))
        pytest.fail(f"leakwatch: FAIL: {f.get('category')} "
                    f"({f.get('confidence')} confidence) at {at} "
                    f"(fail_on={text!r})", pytrace=False)


def pytest_collection_modifyitems(session, config, items):
    """Bad marker values are usage errors before any test runs."""
    if not _active(config):
        return
    for item in items:
        marker = item.get_closest_marker("leakwatch")
        if marker is not None:
            _marker_options(item, marker)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    shim = _active(pyfuncitem.config)
    marker = pyfuncitem.get_closest_marker("leakwatch")
    if not shim or marker is None:
        return None
    limit, steps, warmup, fail_on, pool = _marker_options(pyfuncitem, marker)
    func = pyfuncitem.obj
    args = {name: pyfuncitem.funcargs[name]
            for name in pyfuncitem._fixtureinfo.argnames}
    series = []
    stats = _PoolStats(pool)
    shim.phase_begin(pyfuncitem.nodeid.encode("utf-8", "replace"))
    try:
        for _ in range(steps):
            stats.before()
            func(**args)
            stats.after()
            shim.step()
            live = shim.device_live()
            if live is None:
                pytest.fail("leakwatch: cannot judge: leakwatch is not "
                            "tracking (its trace could not be written)",
                            pytrace=False)
            series.append(live[0])
        # The report ignores the first tenth of a series: the default
        # warm-up.
        judged = series[warmup - max(1, steps // 10):] \
            if warmup > max(1, steps // 10) else series
        verdict, per_step = shim.judge(judged)
        failed = verdict == "growing" and per_step > limit
        if failed:
            # What holds what the runs kept, looked for now, while it is
            # held: the failure names it (the phase's end flushes it).
            shim.search()
    finally:
        shim.phase_end()
    # A gate never passes on nothing.
    if verdict == "not-enough-steps":
        pytest.fail(f"leakwatch: cannot judge: {len(judged)} runs after "
                    f"the warm-up of {warmup}, at least 5 needed: raise "
                    "steps= or lower warmup=", pytrace=False)
    if fail_on:
        _check_fail_on(pyfuncitem, fail_on, steps)
    if pool:
        stats.judge(shim, warmup, steps)
    if failed:
        pyfuncitem.add_report_section(
            "call", "leakwatch",
            _section(pyfuncitem, shim, series, per_step, limit, steps, warmup))
        pytest.fail(f"leakwatch: GPU memory grows by {format_size(per_step)} "
                    f"per run over {steps} runs (allowed "
                    f"{format_size(limit)})", pytrace=False)
    return True


def pytest_terminal_summary(terminalreporter, config):
    if _active(config):
        terminalreporter.write_line(
            f"leakwatch: trace {_trace_path()} "
            "(leakwatch report TRACE for the whole session)")
