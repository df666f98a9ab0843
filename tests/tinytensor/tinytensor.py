# SPDX-License-Identifier: MIT
"""tinytensor: a tensor-like library for leakwatch's tests.

Every storage is one cudaMalloc made by libtinytensor.so (the native half,
which links the CUDA runtime as torch's libraries do) and freed by cudaFree
when Python drops the last reference to it, so real reference semantics
decide when memory is released: a list that keeps tensors, an exception
traceback that keeps a frame, a graph that keeps its inputs. The library is
loaded with ctypes.CDLL (the GIL is released around each call, as torch's
operators do); `pylib` is the same library through ctypes.PyDLL (the GIL
stays held).

The library is $LW_TINYTENSOR, else libtinytensor.so beside this file. Kept
to Python 3.8 syntax: the tests also run it on interpreters leakwatch does
not read.

    x = tinytensor.ones(4, requires_grad=True)
    loss = (x * 3.0 + 1.0).sum()    # keeps x, x * 3.0, ... alive
    loss.backward()                 # x.grad; frees the graph
    loss.item()                     # a Python float
"""
import contextlib
import ctypes
import os

__all__ = ["Storage", "Tensor", "Module", "Linear", "SGD", "empty", "zeros",
           "ones", "full", "tensor", "no_grad", "workspace_sum", "lib",
           "pylib"]

FLOAT_SIZE = 4


def _library_path():
    path = os.environ.get("LW_TINYTENSOR")
    if path:
        return path
    return os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "libtinytensor.so")


def _declare(handle):
    p, size, f, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_float, ctypes.c_int
    pp = ctypes.POINTER(ctypes.c_void_p)
    signatures = {
        "tt_alloc": [size, pp],
        "tt_free": [p],
        "tt_fill": [p, size, f],
        "tt_add": [p, p, p, size],
        "tt_mul": [p, p, p, size],
        "tt_axpb": [p, f, f, p, size],
        "tt_axpy": [p, f, p, size],
        "tt_sum": [p, size, ctypes.POINTER(f)],
        "tt_copy": [p, p, size],
        "tt_read": [p, size, ctypes.POINTER(f)],
        "tt_write": [p, ctypes.POINTER(f), size],
        "tt_native_leak": [ctypes.c_uint, size],
        "tt_native_release": [],
        "tt_locked_alloc": [size, pp],
        "tt_locked_alloc_start": [size],
        "tt_locked_alloc_join": [pp],
        "tt_lock_wait": [],
        "tt_workspace": [size, pp],
    }
    for name, argtypes in signatures.items():
        fn = getattr(handle, name)
        fn.argtypes = argtypes
        fn.restype = i
    return handle


LIBRARY_PATH = _library_path()
lib = _declare(ctypes.CDLL(LIBRARY_PATH))
pylib = _declare(ctypes.PyDLL(LIBRARY_PATH))


class CudaError(RuntimeError):
    pass


def _check(rc, what):
    if rc != 0:
        raise CudaError("%s failed with error %d" % (what, rc))


class Storage(object):
    """nbytes of device memory, freed when the last reference goes."""
    __slots__ = ("ptr", "nbytes", "__weakref__")

    def __init__(self, nbytes):
        self.ptr = None
        self.nbytes = nbytes
        out = ctypes.c_void_p()
        _check(lib.tt_alloc(max(nbytes, 1), ctypes.byref(out)), "tt_alloc")
        self.ptr = out.value

    def __del__(self, _free=lib.tt_free):
        # _free is bound at definition time: module globals may already be
        # gone when the interpreter finalizes.
        ptr, self.ptr = self.ptr, None
        if ptr:
            _free(ptr)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        copy = Storage(self.nbytes)
        _check(lib.tt_copy(copy.ptr, self.ptr, self.nbytes), "tt_copy")
        memo[id(self)] = copy
        return copy

    def __reduce_ex__(self, protocol):
        raise TypeError("a tinytensor Storage cannot be pickled")


_grad_enabled = [True]


@contextlib.contextmanager
def no_grad():
    """Within it, operations record no graph (as torch.no_grad())."""
    previous = _grad_enabled[0]
    _grad_enabled[0] = False
    try:
        yield
    finally:
        _grad_enabled[0] = previous


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _shape_of(shape):
    if isinstance(shape, int):
        return (shape,)
    return tuple(shape)


class Tensor(object):
    """A shape over a Storage of float32s.

    A tensor that requires grad and was made by an operation keeps its
    inputs in _parents (and the operation in _op, _ctx): keeping the output
    keeps the whole forward alive, as torch's graph does, until backward()
    frees the graph (unless retain_graph=True).
    """

    def __init__(self, storage, shape, requires_grad=False, op=None,
                 parents=(), ctx=None):
        self.storage = storage
        self.shape = _shape_of(shape)
        self.requires_grad = requires_grad
        self.grad = None
        self._op = op
        self._parents = tuple(parents)
        self._ctx = ctx
        self._graph_freed = False
        # The CUDA Array Interface (version 3), as CuPy gives it: an
        # attribute, read without running code of this class (a storage
        # keeps its pointer for life).
        self.__cuda_array_interface__ = {
            "shape": self.shape, "typestr": "<f4",
            "data": (storage.ptr or 0, False), "strides": None,
            "version": 3}

    # ---- making tensors ----

    @staticmethod
    def _new(shape):
        shape = _shape_of(shape)
        return Tensor(Storage(_numel(shape) * FLOAT_SIZE), shape)

    def _result(self, out, op, parents, ctx=None):
        """Attaches the graph to out when an input requires grad."""
        if _grad_enabled[0] and any(p.requires_grad for p in parents):
            out.requires_grad = True
            out._op = op
            out._parents = tuple(parents)
            out._ctx = ctx
        return out

    @property
    def numel(self):
        return _numel(self.shape)

    @property
    def nbytes(self):
        return self.numel * FLOAT_SIZE

    @property
    def is_leaf(self):
        return self._op is None

    @property
    def ptr(self):
        return self.storage.ptr

    # ---- operations: each result is a new storage ----

    def _binary(self, other, op):
        if isinstance(other, Tensor):
            if other.shape != self.shape:
                raise ValueError("shapes %r and %r differ"
                                 % (self.shape, other.shape))
            out = Tensor._new(self.shape)
            fn = lib.tt_add if op == "add" else lib.tt_mul
            _check(fn(self.ptr, other.ptr, out.ptr, self.numel), "tt_" + op)
            return self._result(out, op, (self, other))
        value = float(other)
        out = Tensor._new(self.shape)
        alpha, beta = (1.0, value) if op == "add" else (value, 0.0)
        _check(lib.tt_axpb(self.ptr, alpha, beta, out.ptr, self.numel),
               "tt_axpb")
        return self._result(out, "axpb", (self,), (alpha, beta))

    def __add__(self, other):
        return self._binary(other, "add")

    def __radd__(self, other):
        return self._binary(other, "add")

    def __mul__(self, other):
        return self._binary(other, "mul")

    def __rmul__(self, other):
        return self._binary(other, "mul")

    def __neg__(self):
        return self._binary(-1.0, "mul")

    def __sub__(self, other):
        return self + (-other if isinstance(other, Tensor) else -float(other))

    def __rsub__(self, other):
        return -self + other

    def sum(self):
        """A new one-element tensor (shape ())."""
        total = ctypes.c_float()
        _check(lib.tt_sum(self.ptr, self.numel, ctypes.byref(total)), "tt_sum")
        out = Tensor._new(())
        _check(lib.tt_fill(out.ptr, 1, total.value), "tt_fill")
        return self._result(out, "sum", (self,))

    def clone(self):
        out = Tensor._new(self.shape)
        _check(lib.tt_copy(out.ptr, self.ptr, self.nbytes), "tt_copy")
        return self._result(out, "clone", (self,))

    def detach(self):
        """The same storage, outside the graph (as torch's detach())."""
        return Tensor(self.storage, self.shape)

    def item(self):
        if self.numel != 1:
            raise ValueError("item() of a tensor of %d elements" % self.numel)
        return self.tolist_flat()[0]

    def tolist_flat(self):
        host = (ctypes.c_float * max(self.numel, 1))()
        _check(lib.tt_read(self.ptr, self.numel, host), "tt_read")
        return [float(v) for v in host[:self.numel]]

    def fill_(self, value):
        _check(lib.tt_fill(self.ptr, self.numel, float(value)), "tt_fill")
        return self

    def __float__(self):
        return self.item()

    def __repr__(self):
        values = self.tolist_flat()
        if len(values) > 6:
            values = values[:6] + ["..."]
        return "tensor(%s, shape=%r%s)" % (
            values, self.shape, ", requires_grad=True" if self.requires_grad
            else "")

    def __deepcopy__(self, memo):
        """A new storage, as torch's deepcopy of a leaf tensor."""
        with no_grad():
            copy = self.clone()
        copy.requires_grad = self.requires_grad
        memo[id(self)] = copy
        return copy

    # ---- the graph ----

    def _topological(self):
        order, seen, stack = [], set(), [(self, False)]
        while stack:
            node, done = stack.pop()
            if done:
                order.append(node)
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            stack.append((node, True))
            for parent in node._parents:
                if parent.requires_grad:
                    stack.append((parent, False))
        return order

    def backward(self, grad=None, retain_graph=False):
        """Accumulates d(self)/d(leaf) into each leaf's .grad. Frees the
        graph afterwards (drops _parents) unless retain_graph."""
        if not self.requires_grad:
            raise RuntimeError("backward() of a tensor that does not "
                               "require grad")
        if self._graph_freed:
            raise RuntimeError("backward() through a graph that was "
                               "already freed; use retain_graph=True")
        with no_grad():
            grads = {id(self): grad if grad is not None
                     else full(self.shape, 1.0)}
            for node in reversed(self._topological()):
                g = grads.pop(id(node), None)
                if g is None:
                    continue
                if node.is_leaf:
                    node.grad = g if node.grad is None else node.grad + g
                    continue
                for parent, pg in zip(node._parents, node._parent_grads(g)):
                    if not parent.requires_grad:
                        continue
                    previous = grads.get(id(parent))
                    grads[id(parent)] = pg if previous is None else previous + pg
            if not retain_graph:
                for node in self._topological():
                    if not node.is_leaf:
                        node._parents = ()
                        node._ctx = None
                        node._graph_freed = True

    def _parent_grads(self, g):
        if self._op == "add":
            return (g, g)
        if self._op == "mul":
            a, b = self._parents
            return (g * b, g * a)
        if self._op == "axpb":
            return (g * self._ctx[0],)
        if self._op == "sum":
            return (full(self._parents[0].shape, g.item()),)
        if self._op == "clone":
            return (g,)
        raise RuntimeError("no gradient for %r" % self._op)


def empty(shape, requires_grad=False):
    t = Tensor._new(shape)
    t.requires_grad = requires_grad
    return t


def full(shape, value, requires_grad=False):
    return empty(shape, requires_grad).fill_(value)


def zeros(shape, requires_grad=False):
    return full(shape, 0.0, requires_grad)


def ones(shape, requires_grad=False):
    return full(shape, 1.0, requires_grad)


def workspace_sum(t):
    """The sum of t, computed through the library's kept workspace (as a
    cuBLAS call uses cuBLAS's): a Python float."""
    ws = ctypes.c_void_p()
    _check(lib.tt_workspace(t.nbytes, ctypes.byref(ws)), "tt_workspace")
    _check(lib.tt_copy(ws.value, t.ptr, t.nbytes), "tt_copy")
    total = ctypes.c_float()
    _check(lib.tt_sum(ws.value, t.numel, ctypes.byref(total)), "tt_sum")
    return total.value


def tensor(values, requires_grad=False):
    values = [float(v) for v in values]
    t = empty(len(values), requires_grad)
    host = (ctypes.c_float * max(len(values), 1))(*values)
    _check(lib.tt_write(t.ptr, host, len(values)), "tt_write")
    return t


class Module(object):
    """Parameters are the attributes that are tensors requiring grad, and
    those of attributes that are modules, in attribute order."""

    def parameters(self):
        for value in vars(self).values():
            if isinstance(value, Tensor) and value.requires_grad:
                yield value
            elif isinstance(value, Module):
                for p in value.parameters():
                    yield p

    def zero_grad(self):
        for p in self.parameters():
            p.grad = None

    def forward(self, *args):
        raise NotImplementedError

    def to(self, device):
        """Moving to "cuda" gives every tensor attribute (and those of
        submodules) a new device copy, as torch's Module.to() allocates on
        the target device; the old storages go when unreferenced."""
        if device != "cuda":
            raise ValueError("tinytensor keeps tensors on the device only")
        for name, value in list(vars(self).items()):
            if isinstance(value, Tensor):
                with no_grad():
                    moved = value.clone()
                moved.requires_grad = value.requires_grad
                setattr(self, name, moved)
            elif isinstance(value, Module):
                value.to(device)
        return self

    def __call__(self, *args):
        return self.forward(*args)


class Linear(Module):
    """Elementwise y = x * weight + bias, over `features` values."""

    def __init__(self, features):
        self.weight = full(features, 0.5, requires_grad=True)
        self.bias = zeros(features, requires_grad=True)

    def forward(self, x):
        return x * self.weight + self.bias


class SGD(object):
    """With momentum, a buffer per parameter is made lazily at the first
    step() (as torch's optimizers make their state) and kept."""

    def __init__(self, params, lr=0.1, momentum=0.0):
        self.params = list(params)
        self.lr = lr
        self.momentum = momentum
        self.state = {}

    def step(self):
        for p in self.params:
            if p.grad is None:
                continue
            grad = p.grad
            if self.momentum:
                buf = self.state.get(id(p))
                if buf is None:
                    buf = self.state[id(p)] = zeros(p.shape)
                _check(lib.tt_axpb(buf.ptr, self.momentum, 0.0, buf.ptr,
                                   p.numel), "tt_axpb")
                _check(lib.tt_axpy(buf.ptr, 1.0, grad.ptr, p.numel),
                       "tt_axpy")
                grad = buf
            _check(lib.tt_axpy(p.ptr, -self.lr, grad.ptr, p.numel),
                   "tt_axpy")

    def zero_grad(self):
        for p in self.params:
            p.grad = None
