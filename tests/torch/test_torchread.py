#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The C reader of PyTorch's objects (interpose/python/torchread.c), on
real PyTorch on the stand-in GPU, checked against PyTorch's own Python
answers: a tensor's TensorImpl and its Python object, its storage's device
address, .grad and grad_fn; a node's name, next nodes and saved tensors
(x @ w, relu, sum, addmm; a custom autograd.Function; AccumulateGrad); a
graph saved under saved_tensors_hooks reported hooked and never unpacked;
what backward released; and no fault on memory that is not an object:
unmapped and PROT_NONE pages, a node cut off by one, and nodes freed by
autograd's device thread while they are read.

The reader is built into a test-only library (LW_TORCHREAD_LIB) and called
through ctypes.PyDLL, so the GIL stays held, as the walker holds it.
Run by meson (suite torch); skips (77) without LW_TORCH_PYTHON."""
import os
import subprocess
import sys

SKIP = 77


def outer():
    python = os.environ.get("LW_TORCH_PYTHON")
    if not python:
        print("no PyTorch configured (meson -Dtorch_python=PATH): skipped")
        return SKIP
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("LEAKWATCH_", "PYTORCH_"))}
    env["LEAKWATCH_BUILD"] = os.environ["LEAKWATCH_BUILD"]
    status = 0
    # Memory read with process_vm_readv(), then through the pipe that
    # stands in where seccomp refuses it.
    for mode in ("vm_readv", "pipe"):
        print(f"== reads through {mode}")
        r = subprocess.run([os.environ["LW_FAKEGPU"], python,
                            os.path.abspath(__file__), "--inner", mode],
                           env=env, capture_output=True, text=True,
                           timeout=280)
        sys.stdout.write(r.stdout)
        sys.stderr.write(r.stderr[-5000:])
        if r.returncode != 0:
            print(f"FAIL: the program exited {r.returncode}")
            status = 1
        elif "ALL OK" not in r.stdout:
            print("FAIL: the program did not finish")
            status = 1
    return status


# ---- inside the PyTorch program ----

failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def load():
    import ctypes as C
    lib = C.PyDLL(os.environ["LW_TORCHREAD_LIB"])
    vp = C.c_void_p
    sig = {
        "lw_torch_ready": (C.c_int, []),
        "lw_torch_is_tensor_type": (C.c_bool, [vp]),
        "lw_torch_impl": (vp, [vp]),
        "lw_torch_impl_data": (C.c_uint64, [vp]),
        "lw_torch_impl_nbytes": (C.c_uint64, [vp]),
        "lw_torch_impl_grad": (vp, [vp]),
        "lw_torch_impl_grad_fn": (vp, [vp]),
        "lw_torch_impl_pyobj": (vp, [vp]),
        "lw_torch_is_node": (C.c_bool, [vp]),
        "lw_torch_node_name": (C.c_int, [vp, C.c_char_p, C.c_size_t]),
        "lw_torch_node_next": (C.c_size_t, [vp, C.POINTER(vp), C.c_size_t]),
        "lw_torch_node_saved": (C.c_size_t, [vp, C.POINTER(vp), C.c_size_t,
                                             C.POINTER(C.c_bool)]),
        "lw_torch_node_pyobj": (vp, [vp]),
        "lw_torch_test_pipe_reads": (None, []),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


class Reader:
    def __init__(self, lib):
        import ctypes
        self.C = ctypes
        self.lib = lib

    def impl(self, t):
        return self.lib.lw_torch_impl(id(t))

    def data(self, impl):
        return self.lib.lw_torch_impl_data(impl)

    def node(self, t):
        return self.lib.lw_torch_impl_grad_fn(self.impl(t))

    def name(self, node):
        buf = self.C.create_string_buffer(128)
        if self.lib.lw_torch_node_name(node, buf, 128) != 0:
            return None
        return buf.value.decode()

    def next(self, node):
        out = (self.C.c_void_p * 64)()
        n = self.lib.lw_torch_node_next(node, out, 64)
        return [out[i] for i in range(n)]

    def saved(self, node):
        out = (self.C.c_void_p * 64)()
        hooked = self.C.c_bool(False)
        n = self.lib.lw_torch_node_saved(node, out, 64,
                                         self.C.byref(hooked))
        return [out[i] for i in range(n)], hooked.value


def storage(t):
    return t.untyped_storage().data_ptr()


def py_name(fn):
    return type(fn).__name__


def py_next(fn):
    return [f for f, _ in fn.next_functions if f is not None]


def compare_graph(r, node, fn, path, seen):
    """Our node against PyTorch's grad_fn object, recursively."""
    if fn in seen:
        return
    seen.add(fn)
    check(r.name(node) == py_name(fn),
          f"{path}: name {r.name(node)!r} == {py_name(fn)!r}")
    ours, theirs = r.next(node), py_next(fn)
    check(len(ours) == len(theirs),
          f"{path}: {len(ours)} next nodes, PyTorch {len(theirs)}")
    for i, (n, f) in enumerate(zip(ours, theirs)):
        compare_graph(r, n, f, f"{path}.next[{i}]", seen)


def saved_storages(fn):
    """The storages of a node's saved tensors, by its _saved_ accessors
    (which unpack: read only after the reader has)."""
    out = []
    for attr in sorted(dir(fn)):
        if attr.startswith("_saved_"):
            v = getattr(fn, attr)
            for t in v if isinstance(v, (tuple, list)) else [v]:
                if hasattr(t, "untyped_storage"):
                    out.append(storage(t))
    return sorted(out)


def stale_words(r, mm):
    """A node's saved tensors are taken from its own allocation only: a
    SavedVariable left past the end of a node's glibc chunk (a stale word
    of a freed object) is not one of its tensors. Faked in a buffer: the
    Node base of a real MmBackward0, then a copy of its first
    SavedVariable, inside or past a chunk header put before it."""
    import ctypes
    saved = set(r.saved(mm)[0])
    usable = (ctypes.c_uint64.from_address(mm - 8).value & ~7) - 8
    real = ctypes.string_at(mm, usable)
    words = [int.from_bytes(real[o:o + 8], "little")
             for o in range(0, usable, 8)]
    at = next(i * 8 for i, w in enumerate(words) if i * 8 >= 464 and w in saved)
    sv = bytearray(real[at:at + 80])
    for size, found in ((560, 1), (480, 0)):
        buf = (ctypes.c_uint8 * 2048)()
        node = ctypes.addressof(buf) + 1024
        ctypes.memmove(node, mm, 464)
        body = bytearray(sv)
        if size - 8 < 464 + 80:
            # the next chunk's header lies inside the stale copy
            body[size - 8 - 464:size - 464] = (0x41).to_bytes(8, "little")
        ctypes.memmove(node + 464, bytes(body), 80)
        ctypes.c_uint64.from_address(node - 8).value = size | 1
        ctypes.c_uint64.from_address(node - 8 + size).value = 0x41
        got = len(r.saved(node)[0])
        check(got == found, f"a SavedVariable {'inside' if found else 'past'} "
              f"a {size}-byte chunk: {got} saved, {found} expected")


def inner(mode):
    import ctypes
    import threading
    import time
    import torch

    lib = load()
    if mode == "pipe":
        lib.lw_torch_test_pipe_reads()
    r = Reader(lib)
    check(lib.lw_torch_ready() == 1, "lw_torch_ready() == 1 after import")
    dev = "cuda"

    # -- tensors --
    x = torch.randn(64, 32, device=dev, requires_grad=True)
    w = torch.nn.Parameter(torch.randn(32, 16, device=dev))
    b = torch.randn(16, device=dev, requires_grad=True)
    cpu = torch.randn(8)
    check(lib.lw_torch_is_tensor_type(id(type(x))), "torch.Tensor is a tensor type")
    check(lib.lw_torch_is_tensor_type(id(type(w))), "Parameter is a tensor type")
    check(not lib.lw_torch_is_tensor_type(id(list)), "list is not")
    check(not lib.lw_torch_is_tensor_type(id(torch.Size)), "torch.Size is not")
    check(r.impl(x) is not None, "a tensor has an impl")
    check(r.impl([1, 2]) is None, "a list has none")
    check(r.data(r.impl(x)) == storage(x), "impl data == untyped_storage().data_ptr()")
    view = x[3:, 1:]
    check(r.impl(view) != r.impl(x) and r.data(r.impl(view)) == storage(x),
          "a view: its own impl, its base's allocation")
    check(r.data(r.impl(cpu)) == 0, "a CPU tensor: no device address")
    check(lib.lw_torch_impl_nbytes(r.impl(x)) == x.untyped_storage().nbytes(),
          "nbytes == untyped_storage().nbytes()")
    check(lib.lw_torch_impl_pyobj(r.impl(x)) == id(x), "impl -> its THPVariable")
    check(lib.lw_torch_impl_pyobj(r.impl(w)) == id(w), "a Parameter's impl -> it")
    check(r.node(x) is None, "a leaf has no grad_fn")
    check(lib.lw_torch_impl_grad(r.impl(x)) is None, "no .grad yet")

    # -- x @ w, relu, sum; addmm --
    h = (x @ w).relu()
    s = h.sum()
    a = torch.addmm(b, x, w)
    idx = torch.tensor([3, 1, 4, 1], device=dev)
    ix = x[idx]  # IndexBackward0: a std::vector<SavedVariable> indices_
    sn, an, ixn = r.node(s), r.node(a), r.node(ix)
    check(lib.lw_torch_is_node(sn), "s.grad_fn is a node")
    check(not lib.lw_torch_is_node(r.impl(x)), "an impl is not a node")
    compare_graph(r, sn, s.grad_fn, "s.grad_fn", set())
    compare_graph(r, an, a.grad_fn, "a.grad_fn", set())
    relu = r.next(sn)[0]
    mm = r.next(relu)[0]
    acc_x, acc_w = r.next(mm)
    cases = [("SumBackward0", sn, s.grad_fn, 0),
             ("ReluBackward0", relu, s.grad_fn.next_functions[0][0], 1),
             ("MmBackward0", mm, py_next(py_next(s.grad_fn)[0])[0], 2),
             ("AddmmBackward0", an, a.grad_fn, 2),
             ("IndexBackward0", ixn, ix.grad_fn, 1)]
    ours = {}
    for label, node, fn, count in cases:
        impls, hooked = r.saved(node)
        ours[label] = sorted(r.data(i) for i in impls)
        check(len(impls) == count and not hooked,
              f"{label}: {len(impls)} saved tensors, {count} expected, not hooked")
    for label, node, fn, count in cases:
        check(ours[label] == saved_storages(fn),
              f"{label}: saved storages == _saved_* data_ptr()")
    check([r.data(i) for i in r.saved(acc_x)[0]] == [storage(x)] and
          r.saved(acc_x)[0] == [r.impl(x)],
          "AccumulateGrad(x): its variable is x's impl")
    check(r.saved(acc_w)[0] == [r.impl(w)], "AccumulateGrad(w): w's impl")
    check(lib.lw_torch_node_pyobj(mm) is None, "a C++ node has no ctx")
    stale_words(r, mm)

    # -- a custom Function --
    class Scale(torch.autograd.Function):
        @staticmethod
        def forward(ctx, t, k):
            ctx.save_for_backward(t, k)
            return t * 2

        @staticmethod
        def backward(ctx, g):
            t, k = ctx.saved_tensors
            return g * 2, None

    k = torch.randn(4, device=dev)
    out = Scale.apply(h, k)
    on = r.node(out)
    check(r.name(on) == "ScaleBackward" == py_name(out.grad_fn),
          f"custom Function: name {r.name(on)!r}")
    check(lib.lw_torch_node_pyobj(on) == id(out.grad_fn),
          "custom Function: its ctx is out.grad_fn")
    impls, hooked = r.saved(on)
    check(sorted(r.data(i) for i in impls) == sorted([storage(h), storage(k)])
          and not hooked, "custom Function: ctx.save_for_backward's tensors")
    check(r.next(on) == [relu], "custom Function: next is relu's node")

    # -- saved_tensors_hooks: reported hooked, never unpacked --
    unpacked = [0]

    def pack(t):
        return t

    def unpack(t):
        unpacked[0] += 1
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
        hs = (x @ w).relu()
        hsum = Scale.apply(hs, k).sum()
    hn = r.node(hsum)
    seen = 0
    stack, visited = [hn], set()
    while stack:
        node = stack.pop()
        if node in visited:
            continue
        visited.add(node)
        impls, hooked = r.saved(node)
        name = r.name(node)
        if name in ("MmBackward0", "ReluBackward0", "ScaleBackward"):
            seen += 1
            check(hooked and not impls, f"hooked {name}: reported hooked, no tensor")
        stack.extend(r.next(node))
    check(seen == 3, f"hooked graph: {seen} of 3 hooked nodes found")
    check(unpacked[0] == 0, f"unpack hook never called ({unpacked[0]} calls)")

    # -- .grad, and what backward released --
    s.backward()
    check(w.grad is not None and
          r.data(lib.lw_torch_impl_grad(r.impl(w))) == storage(w.grad),
          "w.grad: impl_grad's storage == w.grad's")
    g = w.grad
    check(lib.lw_torch_impl_pyobj(lib.lw_torch_impl_grad(r.impl(w))) == id(g),
          "w.grad's impl -> w.grad")
    impls, hooked = r.saved(mm)
    check(not impls and not hooked, "after backward: MmBackward0 saves nothing")
    check(r.saved(acc_x)[0] == [r.impl(x)], "after backward: AccumulateGrad keeps x")

    # -- no fault on what is not an object --
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                          ctypes.c_int, ctypes.c_int, ctypes.c_long]
    libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    page = 4096
    base = libc.mmap(None, 3 * page, 3, 0x22, -1, 0)  # RW, private|anon
    libc.mprotect(base + page, page, 0)                # PROT_NONE
    libc.munmap(base + 2 * page, page)                 # unmapped
    bad = [0x10, 0x1008, base + page, base + page + 64, base + 2 * page,
           base + 2 * page + 8, 0x7ffffffff000, id(x), id([]), r.impl(x)]
    for p in bad:
        lib.lw_torch_impl_data(p), lib.lw_torch_impl_grad(p)
        lib.lw_torch_impl_grad_fn(p), lib.lw_torch_impl_pyobj(p)
        r.name(p), r.next(p), r.saved(p), lib.lw_torch_node_pyobj(p)
    check(all(r.name(p) is None for p in bad), "no name for what is not a node")
    check(all(lib.lw_torch_impl_data(p) == 0 for p in bad[:-1]),
          "no data for what is not an impl")
    live = [None, 3, "str", {}, [x], torch.Size([2]), torch.Tensor, torch]
    check(all(r.impl(o) is None for o in live), "no impl for other objects")

    # The older THPVariable, MaybeOwned<at::Tensor> {bool borrowed; union
    # {Tensor owned; const Tensor *borrowed}}, faked around x's impl.
    def fake_variable(borrowed, word):
        buf = (ctypes.c_uint64 * 6)(1, id(torch.Tensor), borrowed, word)
        keep.append(buf)
        return ctypes.addressof(buf)
    keep = []
    held = (ctypes.c_uint64 * 1)(r.impl(x))
    check(lib.lw_torch_impl(fake_variable(0, r.impl(x))) == r.impl(x),
          "MaybeOwned, owned: the impl")
    check(lib.lw_torch_impl(fake_variable(1, ctypes.addressof(held))) ==
          r.impl(x), "MaybeOwned, borrowed: the impl behind the Tensor *")
    check(lib.lw_torch_impl(fake_variable(0, id(x))) is None and
          lib.lw_torch_impl(fake_variable(1, base + page)) is None and
          lib.lw_torch_impl(fake_variable(2, r.impl(x))) is None,
          "MaybeOwned: no impl from what is not one")
    # A real AccumulateGrad's and MmBackward0's first 128 bytes, at the end
    # of a readable page: vtable valid, their fields past it PROT_NONE, their
    # next_edges_ pointing into it.
    for node in (acc_x, mm, sn):
        fake = base + page - 128
        ctypes.memmove(fake, node, 128)
        check(r.name(fake) == r.name(node), f"cut-off copy of {r.name(node)} still named")
        r.saved(fake), r.next(fake)
        ctypes.c_uint64.from_address(fake + 88).value = base + page
        ctypes.c_uint64.from_address(fake + 96).value = base + page + 160
        ctypes.c_uint64.from_address(fake + 104).value = base + page + 160
        check(r.next(fake) == [], "next_edges_ in a PROT_NONE page: nothing")
    check(True, "nothing faulted on bad memory")

    # -- nodes freed by autograd's device thread while read --
    published = []
    rounds = [0]
    stop = threading.Event()
    xs = torch.randn(256, 64, device=dev, requires_grad=True)
    ws = torch.randn(64, 64, device=dev, requires_grad=True)

    def worker():
        while not stop.is_set():
            rounds[0] += 1
            y = Scale.apply((xs @ ws).relu() @ ws, k).tanh().sum()
            node = r.node(y)
            published.append(node)
            del published[:-8]
            y.backward()
            del y

    th = threading.Thread(target=worker)
    th.start()
    reads = 0
    deadline = time.monotonic() + 3
    try:
        while time.monotonic() < deadline:
            for node in list(published):
                for n in [node] + r.next(node):
                    r.name(n), r.saved(n), lib.lw_torch_node_pyobj(n)
                    for m in r.next(n):
                        r.name(m), r.saved(m), r.next(m)
                reads += 1
    finally:
        stop.set()
        th.join()
    check(reads > 100 and rounds[0] > 10,
          f"{reads} reads of {rounds[0]} graphs being freed, no fault")
    check(unpacked[0] == 0, "still no unpack")

    if failures:
        print(f"{len(failures)} FAILED")
        return 1
    print("ALL OK")
    return 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--inner"]:
        sys.exit(inner(sys.argv[2]))
    sys.exit(outer())
