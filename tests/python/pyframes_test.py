# -*- coding: utf-8 -*-
# SPDX-License-Identifier: MIT
"""Checks lw_py_capture() and lw_py_code_info() inside a real interpreter.

    python pyframes_test.py LIBPYFRAMES_PROBE [--bench]

Loads the probe library twice, with ctypes.PyDLL (the GIL stays held during
the call) and ctypes.CDLL (the GIL is released, as when PyTorch allocates),
captures the Python stack from many kinds of frames and compares every frame
(file, line, qualified name) with what the interpreter itself reports
(frame.f_lineno, code.co_qualname), innermost first, plus fixed expectations
written below. Also checks that the frames flagged `entry` match, one to one,
the native _PyEval_EvalFrameDefault frames on the C stack.
"""

import asyncio
import ctypes
import os
import shutil
import sys
import tempfile
import threading

SUPPORTED = 1
HAS_QUALNAME = sys.version_info >= (3, 11)
INLINED_COMPREHENSIONS = sys.version_info >= (3, 12)
ONE_FRAME_PER_ACTIVATION = sys.version_info < (3, 11)
MAX_FRAMES = 256  # PROBE_MAX_FRAMES in pyframes-probe.c

failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL: " + what)


def qualname_of(code):
    return code.co_qualname if HAS_QUALNAME else code.co_name


def expected(new, old):
    """The qualified name from 3.11 (co_qualname), the plain name before."""
    return new if HAS_QUALNAME else old


def reference(frame):
    """The stack as the interpreter reports it, innermost first."""
    stack = []
    while frame is not None:
        stack.append((frame.f_code.co_filename, frame.f_lineno, qualname_of(frame.f_code)))
        frame = frame.f_back
    return stack


def marker_line(marker):
    with open(__file__, encoding="utf-8") as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# " + marker):
                return number
    raise AssertionError("no marker " + marker)


class Capture(object):
    def __init__(self, frames, stack, entries, evals):
        self.frames = frames  # [(file, line, qualname, entry)]
        self.stack = stack    # reference(), same call site
        self.entries = entries
        self.evals = evals

    def qualnames(self):
        return [f[2] for f in self.frames]


class Probe(object):
    def __init__(self, path, keep_gil):
        self.name = "PyDLL" if keep_gil else "CDLL"
        self.lib = (ctypes.PyDLL if keep_gil else ctypes.CDLL)(path)
        self.lib.probe_capture_max.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.c_int]
        self.lib.probe_capture_max.restype = ctypes.c_int
        self.lib.probe_version.restype = ctypes.c_char_p
        self.lib.probe_bench_capture.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_int)]
        self.lib.probe_bench_capture.restype = ctypes.c_double
        self.lib.probe_bench_info.argtypes = [ctypes.c_int]
        self.lib.probe_bench_info.restype = ctypes.c_double
        self.buffer = ctypes.create_string_buffer(1 << 18)

    def capture(self, max_frames=MAX_FRAMES):
        n, stack = self.lib.probe_capture_max(self.buffer, len(self.buffer), max_frames), reference(sys._getframe())  # CAPTURE
        check(n >= 0, "%s: probe_capture failed" % self.name)
        lines = self.buffer.value.decode("utf-8", "surrogateescape").splitlines()
        _, entries, evals = lines[0].split(" ")
        frames = []
        for line in lines[1:]:
            file, number, qualname, entry = line.split("\t")
            frames.append((file, int(number), qualname, int(entry)))
        check(len(frames) == n, "%s: %d frames written, %d returned" % (self.name, len(frames), n))
        return Capture(frames, stack, int(entries), int(evals))


def verify(probe, what, capture, truncated=False):
    """Every frame against the interpreter's own view of the same stack."""
    label = "%s/%s" % (probe.name, what)
    stack = capture.stack[:MAX_FRAMES] if truncated else capture.stack
    check(len(capture.frames) == len(stack),
          "%s: %d frames, interpreter has %d" % (label, len(capture.frames), len(stack)))
    for i, (got, want) in enumerate(zip(capture.frames, stack)):
        check(got[:3] == want, "%s: frame %d is %r, interpreter says %r" % (label, i, got[:3], want))
    check(capture.frames and capture.frames[0][1] == marker_line("CAPTURE"),
          "%s: innermost line %r" % (label, capture.frames and capture.frames[0][1]))
    check(capture.frames and capture.frames[0][2] == expected("Probe.capture", "capture"),
          "%s: innermost frame %r" % (label, capture.frames and capture.frames[0][2]))
    if ONE_FRAME_PER_ACTIVATION:
        check(all(f[3] == 1 for f in capture.frames), "%s: a frame without entry" % label)
    if not truncated:
        check(capture.frames and capture.frames[-1][3] == 1, "%s: outermost frame not entry" % label)
        check(capture.entries == capture.evals,
              "%s: %d entry frames but %d native evaluation frames" %
              (label, capture.entries, capture.evals))


# ---- the kinds of frames ----

def nested(probe):
    def inner():
        return probe.capture()  # NESTED
    return inner()


class Model(object):
    def forward(self, probe):
        return probe.capture()  # METHOD


def generator(probe, count):
    for _ in range(count):
        yield probe.capture()  # GENERATOR


def comprehension(probe):
    return [probe.capture() for _ in range(1)][0]  # COMPREHENSION


def through_c(probe):
    return list(map(lambda _: probe.capture(), [0]))[0]  # THROUGH_C


def truncated(probe):
    """Captures of 1, 2, ... frames from one place: each a prefix of the
    whole, entry flags included."""
    captures = []
    for k in list(range(1, 12)) + [MAX_FRAMES]:
        captures.append(probe.capture(k))
    return captures


def recursive(probe, depth):
    if depth == 0:
        return probe.capture()
    return recursive(probe, depth - 1)


def in_except(probe):
    try:
        raise KeyError("x")
    except KeyError:
        return probe.capture()  # EXCEPT


async def coroutine(probe):
    return probe.capture()  # COROUTINE


def class_body(probe):
    class Body(object):
        captured = probe.capture()  # CLASS_BODY
    return Body.captured


def at_import(probe, directory):
    with open(os.path.join(directory, "lw_imported.py"), "w") as f:
        f.write("import builtins\nbuiltins.lw_captured = builtins.lw_probe.capture()\n")
    import builtins
    builtins.lw_probe = probe
    sys.path.insert(0, directory)
    try:
        sys.modules.pop("lw_imported", None)
        __import__("lw_imported")
        return builtins.lw_captured
    finally:
        sys.path.pop(0)
        del builtins.lw_probe, builtins.lw_captured


def größe(probe):
    return probe.capture()


def 函数(probe):
    return probe.capture()


def run_scenarios(probe):
    c = nested(probe)
    verify(probe, "nested", c)
    check(c.qualnames()[1:3] == [expected("nested.<locals>.inner", "inner"), "nested"],
          "nested: %r" % c.qualnames()[:3])
    check(c.frames[1][1] == marker_line("NESTED"), "nested: line %d" % c.frames[1][1])

    c = Model().forward(probe)
    verify(probe, "method", c)
    check(c.qualnames()[1] == expected("Model.forward", "forward"), "method: %r" % c.qualnames()[1])
    check(c.frames[1][1] == marker_line("METHOD"), "method: line %d" % c.frames[1][1])

    # Ten times: 3.12 specialises FOR_ITER into an inlined generator frame.
    for i, c in enumerate(generator(probe, 10)):
        verify(probe, "generator %d" % i, c)
        check(c.qualnames()[1] == "generator", "generator: %r" % c.qualnames()[1])
        check(c.frames[1][1] == marker_line("GENERATOR"), "generator: line %d" % c.frames[1][1])

    c = comprehension(probe)
    verify(probe, "comprehension", c)
    if INLINED_COMPREHENSIONS:
        check(c.qualnames()[1] == "comprehension", "comprehension: %r" % c.qualnames()[1])
    else:
        check(c.qualnames()[1:3] == [expected("comprehension.<locals>.<listcomp>", "<listcomp>"),
                                     "comprehension"], "comprehension: %r" % c.qualnames()[1:3])
    check(c.frames[1][1] == marker_line("COMPREHENSION"), "comprehension: line %d" % c.frames[1][1])

    c = through_c(probe)
    verify(probe, "lambda through map()", c)
    check(c.qualnames()[1:3] == [expected("through_c.<locals>.<lambda>", "<lambda>"), "through_c"],
          "lambda: %r" % c.qualnames()[1:3])
    check(c.frames[1][1] == marker_line("THROUGH_C"), "lambda: line %d" % c.frames[1][1])
    # map() calls the lambda from C: a new evaluation-loop activation.
    check(c.frames[1][3] == 1, "lambda: not an entry frame")
    if not ONE_FRAME_PER_ACTIVATION:
        check(c.frames[0][3] == 0, "lambda: Probe.capture is an entry frame")

    c = in_except(probe)
    verify(probe, "except block", c)
    check(c.frames[1][1] == marker_line("EXCEPT"), "except: line %d" % c.frames[1][1])

    c = asyncio.run(coroutine(probe))
    verify(probe, "coroutine", c)
    check(c.qualnames()[1] == "coroutine", "coroutine: %r" % c.qualnames()[1])
    check(c.frames[1][1] == marker_line("COROUTINE"), "coroutine: line %d" % c.frames[1][1])

    c = class_body(probe)
    verify(probe, "class body", c)
    check(c.qualnames()[1] == expected("class_body.<locals>.Body", "Body"),
          "class body: %r" % c.qualnames()[1])
    check(c.frames[1][1] == marker_line("CLASS_BODY"), "class body: line %d" % c.frames[1][1])

    directory = tempfile.mkdtemp()
    try:
        c = at_import(probe, directory)
    finally:
        shutil.rmtree(directory)
    verify(probe, "module import", c)
    check(c.frames[1][:3] == (os.path.join(directory, "lw_imported.py"), 2, "<module>"),
          "import: %r" % (c.frames[1][:3],))

    captures = list(map(lambda _: truncated(probe), [0]))[0]
    whole = captures[-1]
    verify(probe, "truncation source", whole)
    for k, c in enumerate(captures[:-1], 1):
        check(c.frames == whole.frames[:k],
              "truncated to %d: %r, whole %r" % (k, c.frames, whole.frames[:k]))

    c = recursive(probe, 50)
    verify(probe, "recursion 50", c)
    c = recursive(probe, MAX_FRAMES + 40)
    verify(probe, "recursion past the maximum", c, truncated=True)
    check(len(c.frames) == MAX_FRAMES, "truncation: %d frames" % len(c.frames))

    c = größe(probe)
    verify(probe, "latin-1 name", c)
    check(c.qualnames()[1] == "größe", "latin-1 name: %r" % c.qualnames()[1])
    c = 函数(probe)
    verify(probe, "UCS-2 name", c)
    check(c.qualnames()[1] == "函数", "UCS-2 name: %r" % c.qualnames()[1])

    # File names of every string kind, one with an undecodable byte.
    for file in ["/tmp/ascii.py", "/tmp/é.py", "/tmp/€.py", "/tmp/\U0001F600.py", "/tmp/\udcff.py"]:
        scope = {"probe": probe}
        exec(compile("def in_file():\n    return probe.capture()\n", file, "exec"), scope)
        c = scope["in_file"]()
        verify(probe, "file %r" % file, c)
        check(c.frames[1][0] == file, "file: %r" % c.frames[1][0])
        check(c.frames[1][1] == 2, "file: line %d" % c.frames[1][1])

    # A tracer changes how lines are tracked (3.11's line array, 3.12's
    # instrumented bytecode) but not what is read.
    sys.settrace(lambda *args: None)
    try:
        verify(probe, "traced", nested(probe))
    finally:
        sys.settrace(None)

    results = []
    thread = threading.Thread(target=lambda: results.append(nested(probe)))
    thread.start()
    thread.join()
    verify(probe, "threading.Thread", results[0])


def run_c_threads(path):
    # The callback runs on a pthread the probe creates, so the call into the
    # probe must release the GIL (CDLL).
    cdll = ctypes.CDLL(path)
    check(cdll.probe_native_thread() == 0, "native thread: frames captured")
    for probe in (Probe(path, True), Probe(path, False)):
        results = []
        callback_type = ctypes.CFUNCTYPE(None)
        callback = callback_type(lambda: results.append(nested(probe)))
        check(cdll.probe_call_in_thread(callback) == 0, "C thread: not started")
        verify(probe, "thread created by C", results[0])
        check(len(results[0].frames) == 4, "C thread: %r" % results[0].qualnames())


def bench(path):
    probe = Probe(path, False)
    depth = ctypes.c_int()
    base = len(reference(sys._getframe()))
    for wanted in (10, 30):
        def at_depth(n):
            if n > 0:
                return at_depth(n - 1)
            return probe.lib.probe_bench_capture(200000, ctypes.byref(depth))
        ns = at_depth(wanted - base - 1)
        print("python %s: lw_py_capture of %d frames: %.0f ns" % (sys.version.split()[0], depth.value, ns))
    print("python %s: lw_py_code_info: %.0f ns" % (sys.version.split()[0],
                                                  probe.lib.probe_bench_info(200000)))


def main():
    path = os.path.abspath(sys.argv[1])
    lib = ctypes.CDLL(path)
    lib.probe_version.restype = ctypes.c_char_p
    status = lib.probe_status()
    version = lib.probe_version().decode()
    print("python %s: status %d, version %r" % (sys.version.split()[0], status, version))
    if status != SUPPORTED:
        print("FAIL: this interpreter should be supported")
        return 1
    check(version == "%d.%d.%d" % sys.version_info[:3], "version %r" % version)
    lib.probe_is_eval_address.argtypes = [ctypes.c_size_t]
    eval_function = ctypes.cast(ctypes.pythonapi._PyEval_EvalFrameDefault, ctypes.c_void_p).value
    other_function = ctypes.cast(ctypes.pythonapi.Py_GetVersion, ctypes.c_void_p).value
    check(lib.probe_is_eval_address(eval_function + 16) == 1, "eval address not recognised")
    check(lib.probe_is_eval_address(other_function + 16) == 0, "Py_GetVersion taken for eval")
    if "--bench" in sys.argv:
        bench(path)
        return 0
    for keep_gil in (True, False):
        run_scenarios(Probe(path, keep_gil))
    run_c_threads(path)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
