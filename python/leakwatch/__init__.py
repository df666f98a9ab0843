# SPDX-License-Identifier: MIT
"""Mark training steps and phases in leakwatch's trace, from Python.

    import leakwatch
    for batch in loader:
        train_step(batch)
        leakwatch.step()
    with leakwatch.phase("evaluation"):
        evaluate()

Every function is a silent no-op when the leakwatch shim is not loaded, so
the calls can stay in a program that usually runs without it. PyTorch
programs need none of this: leakwatch marks a step at every optimizer step
by itself. An explicit leakwatch.step() takes precedence over that.
"""
import contextlib
import ctypes

__all__ = ["active", "step", "phase", "phase_begin", "phase_end",
           "device_live", "snapshot", "Snapshot"]


def _lookup(name, argtypes, library=ctypes.CDLL):
    try:
        fn = getattr(library(None), name)
    except (OSError, AttributeError):
        return None
    fn.argtypes = argtypes
    fn.restype = None
    return fn


# PyDLL: these keep the GIL, so that a holder search the step end asks
# for runs at once, on the thread that ended the step.
_step = _lookup("leakwatch_step", [], ctypes.PyDLL)
_phase_begin = _lookup("leakwatch_phase_begin", [ctypes.c_char_p],
                       ctypes.PyDLL)
_phase_end = _lookup("leakwatch_phase_end", [], ctypes.PyDLL)
_device_live = _lookup("leakwatch_device_live",
                       [ctypes.POINTER(ctypes.c_ulonglong),
                        ctypes.POINTER(ctypes.c_ulonglong)])
if _device_live is not None:
    _device_live.restype = ctypes.c_int
try:
    # PyDLL: the call keeps the GIL, which the search needs.
    _snapshot = ctypes.PyDLL(None).leakwatch_snapshot
    _snapshot.argtypes = []
    _snapshot.restype = None
except (OSError, AttributeError):
    _snapshot = None
_snapshot_info = _lookup("leakwatch_snapshot_info",
                         [ctypes.c_char_p, ctypes.c_size_t,
                          ctypes.POINTER(ctypes.c_ulonglong),
                          ctypes.POINTER(ctypes.c_ulonglong),
                          ctypes.POINTER(ctypes.c_ulonglong),
                          ctypes.POINTER(ctypes.c_uint),
                          ctypes.POINTER(ctypes.c_double)], ctypes.PyDLL)
if _snapshot_info is not None:
    _snapshot_info.restype = ctypes.c_int


def _size(n):
    """n bytes as the shim writes sizes: 512 B, 1.5 KiB, 2.0 MiB."""
    if n < 1024:
        return f"{n:.0f} B"
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        n /= 1024.0
        if n < 1024 or unit == "TiB":
            return f"{n:.1f} {unit}"


class Snapshot(object):
    """What leakwatch.snapshot() found: the trace it flushed and what the
    trace holds so far.

    trace              the trace's path (`leakwatch report TRACE` reads it
                       now, holders included)
    steps              the steps ended so far
    live_bytes         device memory live now, in bytes
    live_allocations   ... in how many allocations
    growing_sites      the allocation sites whose memory grows from step
                       to step so far
    fastest_growth     the fastest of them, in bytes per step (0.0: none)
    """
    __slots__ = ("trace", "steps", "live_bytes", "live_allocations",
                 "growing_sites", "fastest_growth")

    def __init__(self, trace, steps, live_bytes, live_allocations,
                 growing_sites, fastest_growth):
        self.trace = trace
        self.steps = steps
        self.live_bytes = live_bytes
        self.live_allocations = live_allocations
        self.growing_sites = growing_sites
        self.fastest_growth = fastest_growth

    def _asdict(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __eq__(self, other):
        return isinstance(other, Snapshot) and \
            self._asdict() == other._asdict()

    __hash__ = None

    def __repr__(self):
        grows = "nothing grows from step to step"
        if self.growing_sites:
            grows = "growing at %d site%s (+%s per step at the fastest)" % (
                self.growing_sites, "" if self.growing_sites == 1 else "s",
                _size(self.fastest_growth))
        return "<leakwatch snapshot: step %d: %s live in %d allocation%s; " \
            "%s; trace %s>" % (
                self.steps, _size(self.live_bytes), self.live_allocations,
                "" if self.live_allocations == 1 else "s", grows, self.trace)


def active():
    """True when the leakwatch shim is loaded in this process."""
    return _step is not None


def step():
    """Marks the end of one training step."""
    if _step is not None:
        _step()


def phase_begin(name):
    """Opens a named phase (phases nest)."""
    if _phase_begin is not None:
        _phase_begin(str(name).encode("utf-8", "replace"))


def phase_end():
    """Closes the innermost open phase."""
    if _phase_end is not None:
        _phase_end()


@contextlib.contextmanager
def phase(name):
    """A named phase around a block: model loading, evaluation, ..."""
    phase_begin(name)
    try:
        yield
    finally:
        phase_end()


def device_live():
    """(bytes, allocations) of device memory this process holds now, as
    the shim counts it; None without the shim (or when it is not
    tracking)."""
    if _device_live is None:
        return None
    nbytes, count = ctypes.c_ulonglong(), ctypes.c_ulonglong()
    if _device_live(ctypes.byref(nbytes), ctypes.byref(count)) != 0:
        return None
    return nbytes.value, count.value


def snapshot():
    """Looks now for what holds the device memory that outlived the step
    that made it (the trace's "held by"), as at the end of the program,
    flushes the trace, prints the live view's line on stderr
    ("leakwatch: snapshot: step N: ... live ...; trace flushed: PATH") and
    returns a Snapshot: the trace's path, the steps so far, the device
    memory live and the sites that grow. None without the shim (or when
    it is not tracking). The search keeps to LEAKWATCH_HOLDERS_BUDGET
    seconds (default 2)."""
    if _snapshot is not None:
        _snapshot()
    if _snapshot_info is None:
        return None
    path = ctypes.create_string_buffer(4096)
    steps, nbytes, count = (ctypes.c_ulonglong(), ctypes.c_ulonglong(),
                            ctypes.c_ulonglong())
    sites, fastest = ctypes.c_uint(), ctypes.c_double()
    if _snapshot_info(path, len(path), ctypes.byref(steps),
                      ctypes.byref(nbytes), ctypes.byref(count),
                      ctypes.byref(sites), ctypes.byref(fastest)) != 0:
        return None
    return Snapshot(path.value.decode("utf-8", "replace"), steps.value,
                    nbytes.value, count.value, sites.value, fastest.value)
