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
           "device_live", "snapshot"]


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
    that made it (the trace's "held by"), as at the end of the program.
    The search keeps to LEAKWATCH_HOLDERS_BUDGET seconds (default 2)."""
    if _snapshot is not None:
        _snapshot()
