# SPDX-License-Identifier: MIT
"""The holder search (scripts/leakwatch/_holders.py) on plain Python objects
that expose __cuda_array_interface__, without the shim: the paths it names,
how it groups one container's objects, that hostile objects cannot stop it,
that it keeps no reference, runs no collection, and stops at its budget.

    holders_search_test.py SCRIPTS_DIR
"""
import gc
import os
import struct
import sys
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


def search(wanted, budget=5.0):
    return _holders.search(wanted, budget)


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
    addresses, path, root, objects, graph = found[0]
    check(path == "losses_since_last_log[59]",
          f"the list's last element names it: {path}")
    check(root.startswith("local of local_list ("),
          f"root is the function's frame: {root}")
    check(objects == 60, f"60 objects through the list, got {objects}")
    check(graph == 0, "no autograd graph")
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


def nothing_unreachable():
    # Garbage in a reference cycle, still alive while no collection runs.
    gc.disable()
    cycle = [CudaArray(0x60000)]
    cycle.append(cycle)
    ref = weakref.ref(cycle[0])
    del cycle
    found, cut = search(struct.pack("<QQ", 0x60000, 64))
    check(found == [], f"only reachable objects are holders: {found}")
    check(ref() is not None, "the search ran the collector")
    gc.enable()


def keeps_no_reference():
    held = [CudaArray(0x70000)]
    ref = weakref.ref(held[0])
    found, _ = search(targets(held[0]))
    check(found, "the held buffer is found")
    held.clear()
    check(ref() is None, "the search kept a reference to what it found")


def runs_no_collection():
    passes = []

    def count(phase, info):
        passes.append(phase)
    gc.callbacks.append(count)
    gc.enable()
    try:
        # Enough objects that their allocation would start a collection.
        big = [[CudaArray(0x80000)] for _ in range(20000)]
        before = len(passes)
        search(targets(big[0][0]))
        during = len(passes) - before
    finally:
        gc.callbacks.remove(count)
    check(during == 0, f"{during} collector passes ran during the search")
    check(gc.isenabled(), "the collector is left enabled")


def budget_cuts():
    # A wide graph and a target out of reach: the budget ends the search.
    wide = [[object() for _ in range(100)] for _ in range(3000)]
    found, cut = _holders.search(struct.pack("<QQ", 0x90000, 64), 1e-4)
    check(cut, "a 0.1 ms budget does not cut a walk of 300,000 objects")
    del wide


for test in (local_list, globals_and_attributes, class_attributes,
             survives_hostile_objects,
             nothing_unreachable, keeps_no_reference, runs_no_collection,
             budget_cuts):
    test()
print("FAILED" if failures else "ok")
sys.exit(1 if failures else 0)
