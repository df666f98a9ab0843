# SPDX-License-Identifier: MIT
"""The holder search (scripts/leakwatch/_holders.py) on plain Python objects
that expose __cuda_array_interface__, without the shim: the paths it names,
how it groups one container's objects, that hostile objects cannot stop it
and no code of theirs runs, that dictionary keys that are not names stay
out of the paths, that reference cycles no root reaches are named as such,
that it keeps no reference, runs no collection, and stops at its budget,
in the walk and in the search for reference cycles after it.

Without the shim, frames' locals are read through f_locals (the shim reads
them from the interpreter's structures instead; the integration suite's
`holders` test checks that).

    holders_search_test.py SCRIPTS_DIR
"""
import gc
import os
import re
import struct
import sys
import types
import weakref

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
from lwcheck import check, failures  # noqa: E402
from cuda_array import CudaArray  # noqa: E402

sys.path.insert(0, sys.argv[1])
from leakwatch import _holders  # noqa: E402


class Hostile(object):
    """Every attribute access raises, and so does its interface."""

    def __getattr__(self, name):
        raise RuntimeError("no attribute for you")

    @property
    def __class__(self):
        raise RuntimeError("no class either")

    @property
    def __cuda_array_interface__(self):
        raise RuntimeError("no interface")


class Module(object):
    """Keeps its children in _modules, as torch.nn.Module does."""

    def __init__(self, **children):
        self._modules = dict(children)


def targets(*buffers):
    return b"".join(struct.pack("<QQ", b.ptr, 64) for b in buffers)


def frame_locals(frame):
    return list(frame.f_locals.items())


def search(wanted, budget=5.0):
    return _holders.search(wanted, budget, frame_locals)


# Module globals: a cache, and a trainer that keeps copies in a list.
_embedding_cache = {}
hostile = [Hostile() for _ in range(3)]


class Trainer(object):
    def __init__(self):
        self.batch_metrics = []
        self.handler = Module(encoder=Module(layers=Module(**{"0": None})))


trainer = Trainer()


def local_list():
    losses_since_last_log = [CudaArray(0x10000 + 0x100 * i) for i in range(60)]
    found, cut = search(targets(*losses_since_last_log))
    check(not cut, "a small search was cut")
    check(len(found) == 1, f"one holder for one list, got {found}")
    addresses, path, root, objects, graph, flags = found[0]
    check(path == "losses_since_last_log[59]",
          f"the list's last element names it: {path}")
    check(root.startswith("local of local_list ("),
          f"root is the function's frame: {root}")
    check(objects == 60, f"60 objects through the list, got {objects}")
    check(graph == 0, "no autograd graph")
    check(flags == 0, f"reachable: no flags, got {flags}")
    check(addresses and all(0x10000 <= a < 0x10000 + 0x100 * 60
                            for a in addresses), f"addresses {addresses}")


def globals_and_attributes():
    copies = [CudaArray(0x20000 + 0x100 * i) for i in range(5)]
    for c in copies:
        trainer.batch_metrics.append(Module(correct=c))
    del c
    tok = _embedding_cache["tok"] = CudaArray(0x30000)
    layer = trainer.handler._modules["encoder"]._modules["layers"]
    layer._modules["0"] = Module(weight=CudaArray(0x40000))
    weight = layer._modules["0"]._modules["weight"]
    wanted = targets(*copies, tok, weight)
    # Only the program's own references: none from this frame.
    del copies, tok, weight, layer
    found, cut = search(wanted)
    paths = {f[1]: f for f in found}
    want = ("trainer.batch_metrics[4].correct", "_embedding_cache['tok']",
            "trainer.handler.encoder.layers[0].weight")
    for p in want:
        check(p in paths, f"{p} among {sorted(paths)}")
    check(paths.get(want[0], (0, 0, 0, 0))[3] == 5,
          "the five copies are one holder")
    for p in want[1:]:
        check(paths.get(p, (0, 0, "",))[2] == "global of __main__",
              f"{p} is a global of __main__")
    del trainer.batch_metrics[:]
    del _embedding_cache["tok"]


class Registry(object):
    # A class attribute: a root as the module's globals are.
    encoders = {}


def class_attributes():
    Registry.encoders["clip"] = CudaArray(0x38000)
    found, cut = search(targets(Registry.encoders["clip"]))
    check([f[1] for f in found] == ["Registry.encoders['clip']"],
          f"the class attribute holds it: {found}")
    del Registry.encoders["clip"]


def survives_hostile_objects():
    hostile.append(CudaArray(0x50000))
    found, cut = search(targets(hostile[-1]))
    check([f[1] for f in found] == ["hostile[3]"],
          f"found past objects that raise: {found}")
    hostile.pop()


class Metric(object):
    """Refers to itself, as torchmetrics' metrics do: a copy dropped by
    the program waits for the collector."""

    def __init__(self, ptr):
        self.correct = CudaArray(ptr)
        self.me = self


def unreachable_cycles():
    # Garbage in reference cycles, alive while no collection runs: named
    # by the object a person would name, with the collector's state.
    gc.disable()
    copies = [Metric(0x60000 + 0x100 * i) for i in range(4)]
    ref = weakref.ref(copies[0].correct)
    wanted = targets(*[c.correct for c in copies])
    del copies
    found, cut = search(wanted)
    check(not cut and len(found) == 1, f"one holder for the copies: {found}")
    if found:
        addresses, path, root, objects, graph, flags = found[0]
        check(path == "<Metric>.correct", f"the copy holds it: {path}")
        check(objects == 4, f"the four copies: {objects}")
        check(flags == _holders.UNREACHABLE | _holders.GC_OFF,
              f"unreachable, collector off: {flags}")
        # The copy, its attributes and its array: more than the copy.
        m = re.fullmatch(r"unreachable reference cycle \((\d+) objects; "
                         r"the collector is off\)", root)
        check(m and int(m.group(1)) > 2, f"root: {root}")
    check(ref() is not None, "the search ran the collector")
    # A list that holds itself, the collector on: when it last ran.
    gc.collect()
    cycle = [CudaArray(0x68000)]
    cycle.append(cycle)
    del cycle
    gc.enable()
    found, _ = _holders.search(struct.pack("<QQ", 0x68000, 64), 5.0,
                               frame_locals, 3)
    check(len(found) == 1 and found[0][1] == "<list>[0]" and
          re.fullmatch(r"unreachable reference cycle \(\d+ objects; the "
                       r"collector last ran 3 steps ago\)", found[0][2]),
          f"a list's cycle: {found}")
    # Something outside Python's objects keeps it (here a reference the
    # walk cannot see, held by ctypes): not a cycle, no holder.
    gc.disable()
    import ctypes
    held = Metric(0x6c000)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(held))
    wanted = targets(held.correct)
    del held
    found, _ = search(wanted)
    check(found == [], f"held from outside Python's objects: {found}")
    gc.enable()


class Watched(object):
    """Each piece of code of its class that could run counts a call."""
    calls = []

    def __init__(self, ptr):
        self.ptr = ptr

    def __getattr__(self, name):
        Watched.calls.append(name)
        raise AttributeError(name)

    @property
    def __cuda_array_interface__(self):
        Watched.calls.append("__cuda_array_interface__")
        return {"data": (self.ptr, False), "shape": (16,), "typestr": "<f4",
                "version": 3}

    def __eq__(self, other):
        Watched.calls.append("__eq__")
        return False

    def __hash__(self):
        Watched.calls.append("__hash__")
        return 1


class Meta(type):
    def __getattribute__(cls, name):
        Watched.calls.append("meta:" + name)
        return type.__getattribute__(cls, name)


class Exotic(object, metaclass=Meta):
    pass


class Key(str):
    def __repr__(self):
        Watched.calls.append("__repr__")
        return "Key"


def runs_no_program_code():
    """A property with side effects, __getattr__, __eq__, a metaclass and
    a str subclass's __repr__ never run: no lock of the program is taken,
    nothing of it is allocated or raised. Such an array is not recognised
    (its interface is code); the one that holds it still is walked."""
    import threading
    lock = threading.Lock()

    class Locked(Watched):
        @property
        def __cuda_array_interface__(self):
            with lock:      # would deadlock: the program holds the lock
                return Watched.__cuda_array_interface__.fget(self)
    kept = {Key("k"): [Watched(0xa0000), Locked(0xa1000), Exotic(),
                       CudaArray(0xa2000)]}
    globals()["kept_by_watched"] = kept
    Watched.calls.clear()
    with lock:
        found, cut = search(struct.pack("<QQ", 0xa0000, 0x3000))
    check(Watched.calls == [], f"program code ran: {Watched.calls}")
    check([f[1] for f in found] == ["kept[<Key #0>][3]"],
          f"only the array read without code: {found}")
    del globals()["kept_by_watched"]


def keys_stay_out():
    """A secret used as a cache key does not reach the path."""
    secret = "sk-4f9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
    cache = globals()["token_cache"] = {"tok": CudaArray(0xb0000),
                                        secret: CudaArray(0xb1000),
                                        7: CudaArray(0xb2000)}
    found, _ = search(targets(*cache.values()))
    paths = sorted(f[1] for f in found)
    check(paths == ["token_cache"] or
          all(secret not in p for p in paths), f"the secret: {paths}")
    for f in found:
        check(secret[:6] not in f[1] and secret[:6] not in f[2], f)
    _, path, *_ = _holders.search(targets(cache[secret]), 5.0,
                                  frame_locals)[0][0]
    check(path == "cache[<str #1>]", f"type and position: {path}")
    _, path, *_ = _holders.search(targets(cache["tok"]), 5.0,
                                  frame_locals)[0][0]
    check(path == "cache['tok']", f"a name stays: {path}")
    _, path, *_ = _holders.search(targets(cache[7]), 5.0,
                                  frame_locals)[0][0]
    check(path == "cache[7]", f"a number stays: {path}")
    del globals()["token_cache"]


def keeps_no_reference():
    held = [CudaArray(0x70000)]
    ref = weakref.ref(held[0])
    found, _ = search(targets(held[0]))
    check(found, "the held buffer is found")
    held.clear()
    check(ref() is None, "the search kept a reference to what it found")


def runs_no_collection():
    """No pass of the collector runs while the search walks: each pass
    that starts is noted with the function it started in. (Once the
    search turns the collector back on, the program's next allocation may
    start the pass it would have started anyway: that is the program's.)"""
    passes = []

    def count(phase, info):
        if phase == "start":
            passes.append(sys._getframe(1).f_code.co_name)
    gc.callbacks.append(count)
    gc.enable()
    try:
        # Enough objects that their allocation would start a collection,
        # and a target met last, after a long walk.
        big = [[CudaArray(0x80000)] for _ in range(20000)]
        last = CudaArray(0x88000)
        big.append([[last]])
        wanted = targets(last)
        before = len(passes)
        search(wanted)
        during = [f for f in passes[before:] if f != "search"]
    finally:
        gc.callbacks.remove(count)
    check(during == [], f"collector passes ran during the search, in {during}")
    check(gc.isenabled(), "the collector is left enabled")


def budget_cuts():
    # A wide graph and a target out of reach: the budget ends the search.
    wide = [[object() for _ in range(100)] for _ in range(3000)]
    found, cut = _holders.search(struct.pack("<QQ", 0x90000, 64), 1e-4,
                                 frame_locals)
    check(cut, "a 0.1 ms budget does not cut a walk of 300,000 objects")
    del wide


class SlowCollector(object):
    """gc, with time running out while it lists the objects it tracks;
    counts the work asked of it after that."""

    def __init__(self, clock):
        self.clock = clock
        self.referrers = 0

    def __getattr__(self, name):
        return getattr(gc, name)

    def get_objects(self, *args):
        self.clock[0] += 10.0
        return gc.get_objects(*args)

    def get_referrers(self, *objs):
        self.referrers += 1
        return gc.get_referrers(*objs)


def budget_holds_past_the_walk():
    # A target no root reaches (held from outside Python's objects): the
    # walk ends without it and the garbage pass looks for it among the
    # collector's objects. Once the budget is spent there, the pass stops:
    # no referrers are followed, and the search says it was cut.
    import ctypes
    held = CudaArray(0x98000)
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(held))
    wanted = targets(held)
    del held
    clock = [0.0]
    slow = SlowCollector(clock)
    saved = _holders.time, _holders.gc
    _holders.time = types.SimpleNamespace(perf_counter=lambda: clock[0])
    _holders.gc = slow
    try:
        found, cut = _holders.search(wanted, 1.0, frame_locals)
    finally:
        _holders.time, _holders.gc = saved
    check(cut and found == [], f"cut, nothing found: {cut} {found}")
    check(slow.referrers == 0,
          f"{slow.referrers} levels of referrers followed past the budget")


for test in (local_list, globals_and_attributes, class_attributes,
             survives_hostile_objects, unreachable_cycles,
             runs_no_program_code, keys_stay_out, keeps_no_reference,
             runs_no_collection, budget_cuts, budget_holds_past_the_walk):
    test()
print("FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
