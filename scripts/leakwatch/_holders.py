# SPDX-License-Identifier: MIT
"""Who holds it: the shortest reference path from a root of the program
(a module global, a local of a live frame, a class attribute) to the live
objects whose device buffers lie inside given allocations; and, for those
no root reaches, the reference cycle that keeps them until the collector
runs.

The shim runs search() inside the program's interpreter, with the GIL held,
at the report point, during the run and on demand; the source is compiled
into the shim, so this module needs no import path.

No code of the program runs during a search. Objects are walked with
gc.get_referents() (the types' own traversal, C code); attributes are read
only from the instance's and the types' dictionaries, never through
__getattribute__, __getattr__, a property or any descriptor written in
Python, and a descriptor is called only when it is C code (a getset or
member descriptor: a tensor's grad_fn, an autograd node's saved tensors,
CuPy's __cuda_array_interface__). PyTorch tensors are recognised by their
type and read through torch's own C methods, taken from torch's base class
(a subclass's overrides never run) with __torch_function__ dispatch off;
tensor subclasses that dispatch in Python (__torch_dispatch__) are walked
as plain objects. Frames' locals come from the shim (frame_locals), which
reads them without filling a frame's f_locals dict. The search never runs
the garbage collector and keeps no reference once it returns.
"""
import array
import bisect
import gc
import re
import sys
import time
import types
import warnings

# How many holders the search reports, after grouping the objects of one
# container into one holder.
MAX_HOLDERS = 8
# Allocations named per holder at most, one of each size.
MAX_SIZES = 16
# Graph nodes counted behind one autograd root at most.
MAX_GRAPH_NODES = 100000
# How far the search for garbage follows what refers to a target: levels
# of referrers, and objects in all.
MAX_LEVELS = 8
MAX_PART = 20000

# Flags of a holder (common/lw-format.h, enum lw_holder_flags).
UNREACHABLE = 4
GC_OFF = 8
TORCH = 16

# Objects that refer to nothing: never visited.
_ATOMS = (str, bytes, int, float, bool, complex, type(None))
_SKIP_TYPES = (type(sys), types.FrameType, types.CodeType, types.FunctionType,
               types.BuiltinFunctionType, type(gc.get_referents), str, bytes,
               int, float, bool, type(None))
# Descriptors whose __get__ is C code of the type that defines them.
_C_DESCRIPTORS = (types.GetSetDescriptorType, types.MemberDescriptorType)

# Read straight from `type`, so that no metaclass of the program answers.
_type_mro = type.__dict__["__mro__"].__get__
_type_dict = type.__dict__["__dict__"].__get__
_type_name = type.__dict__["__name__"].__get__
_cell_contents = types.CellType.__dict__["cell_contents"].__get__
_module_dict = types.ModuleType.__dict__["__dict__"].__get__


def _mro(tp):
    try:
        return _type_mro(tp)
    except Exception:
        return (tp,)


def _tname(tp):
    try:
        name = _type_name(tp)
    except Exception:
        return "?"
    return name if type(name) is str else "?"


def _is(obj, types_):
    """isinstance() by the object's real type, along its MRO: isinstance()
    may read a __class__ that the object computes, and issubclass() may
    call a metaclass's __subclasscheck__."""
    mro = _mro(type(obj))
    if type(types_) is not tuple:
        types_ = (types_,)
    return any(t in mro for t in types_)


def _static(tp, name):
    """The attribute name of type tp as its MRO's dictionaries hold it
    (inspect.getattr_static for types): (value, True), or (None, False)."""
    for klass in _mro(tp):
        try:
            d = _type_dict(klass)
        except Exception:
            continue
        if name in d:
            return d[name], True
    return None, False


def _c_attribute(obj, name):
    """obj.name, only where a C descriptor of its type gives it; None
    otherwise (a Python property, __getattr__, nothing)."""
    value, found = _static(type(obj), name)
    if not found or type(value) not in _C_DESCRIPTORS:
        return None
    try:
        return value.__get__(obj, type(obj))
    except Exception:
        return None


def _instance_dict(obj):
    """obj's __dict__ through the C getter its class inherits, never
    through code of the class; None if it has none."""
    if _is(obj, type):
        return None
    d, found = _static(type(obj), "__dict__")
    if not found or type(d) is not types.GetSetDescriptorType:
        return None
    try:
        own = d.__get__(obj, type(obj))
    except Exception:
        return None
    return own if type(own) is dict else None


_KEY = re.compile(r"([A-Za-z_][A-Za-z0-9_.\-]{0,23}|[0-9]{1,24})\Z")


def _key(k, position):
    """A dictionary key as the path shows it: a short identifier-like
    string or a number as it is; anything else (a token used as a cache
    key, a long text) by its type and position, so that no secret of the
    program reaches the trace."""
    if type(k) is str and _KEY.match(k):
        return repr(k)
    if type(k) in (int, bool) or k is None:
        return repr(k)
    if type(k) is float and k == k and abs(k) < 1e15:
        return repr(k)
    return "<%s #%d>" % (_tname(type(k)), position)


# What a type's objects are to the walk, decided once per type.
_ATOM, _SKIP, _SEQ, _DICT, _TENSOR, _ARRAY, _NODE, _CLASS, _OBJECT, \
    _TRACEBACK = range(10)
# An exception's links, and a traceback's, by their C getters.
_EXCEPTION_LINKS = [(n, BaseException.__dict__[n].__get__)
                    for n in ("__traceback__", "__context__", "__cause__")]
_TRACEBACK_LINKS = [(n, types.TracebackType.__dict__[n].__get__)
                    for n in ("tb_frame", "tb_next")]


def _links(obj, links):
    """(object, ".name") of each link of obj that is set."""
    for name, get in links:
        try:
            v = get(obj)
        except Exception:
            continue
        if v is not None:
            yield v, "." + name


def _unwrapped(v):
    """A local's value: a cell's contents (or None if it is empty)."""
    if type(v) is not types.CellType:
        return v
    try:
        return _cell_contents(v)
    except Exception:
        return None
_ATOM_TYPES = frozenset(_ATOMS)


class _Torch(object):
    """PyTorch's C methods, from its base classes: they read a tensor
    without running a subclass's code (enter() turns __torch_function__
    dispatch off for the search's thread)."""

    def __init__(self):
        self.tensor = None
        self.disabled = None
        torch = sys.modules.get("torch")
        if torch is None or not _is(torch, types.ModuleType):
            return
        try:
            tmod = _module_dict(torch)
            cmod = _module_dict(tmod["_C"])
            base = cmod.get("TensorBase") or cmod.get("_TensorBase")
            bdict = _type_dict(base)
            self.storage = bdict["untyped_storage"]
            self.grad_fn = bdict["grad_fn"]
            self.grad = bdict["_grad"] if "_grad" in bdict else bdict["grad"]
            self.data_ptr = _type_dict(cmod["StorageBase"])["data_ptr"]
            self.disable = cmod["DisableTorchFunction"]
            self.base = base
            tensor = tmod["Tensor"]
        except Exception:
            return
        if _is(tensor, type) and base in _mro(tensor):
            self.tensor = tensor

    def enter(self):
        if self.tensor is not None:
            try:
                self.disabled = self.disable()
                self.disabled.__enter__()
            except Exception:
                self.disabled = None

    def leave(self):
        if self.disabled is not None:
            self.disabled.__exit__(None, None, None)
            self.disabled = None

    def own(self, tp):
        """Whether a tensor type's objects can be read: no Python
        __torch_dispatch__ of its own (FakeTensor, DTensor and the like
        have no storage of their own to read)."""
        for klass in _mro(tp):
            try:
                if "__torch_dispatch__" in _type_dict(klass):
                    return klass in (self.tensor, self.base)
            except Exception:
                return False
        return True

    def buffer(self, obj):
        try:
            return self.data_ptr(self.storage(obj))
        except Exception:
            return None

    def attribute(self, obj, getset):
        try:
            return getset.__get__(obj, type(obj))
        except Exception:
            return None


class _Search(object):
    def __init__(self, ranges, deadline, frame_locals):
        self.starts = [r[0] for r in ranges]
        self.ranges = ranges
        self.deadline = deadline
        self.frame_locals = frame_locals
        self.cut = False
        self.found = {}    # range index -> node
        self.torch = _Torch()
        self.tensor_type = self.torch.tensor
        # The walk's nodes: the objects and their parents' indexes, in
        # the order met. Labels are worked out again only for the nodes
        # on a path found (_label), so that a node costs two appends.
        self.objs = []
        self.parent = array.array("q")
        self.root = {}        # node of a root -> (name, where)
        self.seen = set()
        self.kinds = {}       # type -> what its objects are to the walk
        self.labels = {}      # node -> {id of a referent: its label}
        self.frames = set()   # nodes of frames a traceback keeps
        self.reachable = 0    # nodes met from the program's roots

    # -- what a device buffer is --

    def _range_of(self, ptr):
        i = bisect.bisect_right(self.starts, ptr) - 1
        if i >= 0 and ptr < self.ranges[i][0] + self.ranges[i][1]:
            return i
        return -1

    def _kind(self, tp):
        kind = self.kinds.get(tp)
        if kind is not None:
            return kind
        t = self.tensor_type
        try:
            mro = _mro(tp)
            if tp in _ATOM_TYPES:
                kind = _ATOM
            elif tp is types.TracebackType:
                kind = _TRACEBACK
            elif any(s in mro for s in _SKIP_TYPES):
                kind = _SKIP
            elif type in mro:
                kind = _CLASS
            elif tp is list or tp is tuple:
                kind = _SEQ
            elif tp is dict:
                kind = _DICT
            elif t is not None and t in mro:
                kind = _TENSOR if self.torch.own(tp) else _OBJECT
            elif _static(tp, "__cuda_array_interface__")[1]:
                kind = _ARRAY
            elif _static(tp, "next_functions")[1]:
                kind = _NODE
            else:
                kind = _OBJECT
        except Exception:
            kind = _OBJECT
        self.kinds[tp] = kind
        return kind

    def _first_of(self, obj):
        """The kind of obj's type, decided with obj, the first of its type
        met: a class whose instances carry __cuda_array_interface__ in
        their own dictionary is an array type."""
        tp = type(obj)
        kind = self._kind(tp)
        if kind == _OBJECT:
            own = _instance_dict(obj)
            if own is not None and "__cuda_array_interface__" in own:
                kind = self.kinds[tp] = _ARRAY
        return kind

    def _interface(self, obj):
        """__cuda_array_interface__ where no code of the program gives it:
        a dict in the instance's dictionary or the type's, or a C
        descriptor's (CuPy's, compiled); a Python property is not run."""
        own = _instance_dict(obj)
        if own is not None:
            iface = own.get("__cuda_array_interface__")
            if type(iface) is dict:
                return iface
        value, found = _static(type(obj), "__cuda_array_interface__")
        if type(value) is dict:
            return value
        if type(value) in _C_DESCRIPTORS:
            try:
                iface = value.__get__(obj, type(obj))
            except Exception:
                return None
            return iface if type(iface) is dict else None
        return None

    def _buffer(self, obj, kind):
        """The device pointer of obj's buffer, or None."""
        if kind == _TENSOR:
            return self.torch.buffer(obj)
        iface = self._interface(obj)
        try:
            data = iface["data"] if iface is not None else None
            ptr = data[0] if type(data) in (tuple, list) and data else None
            return ptr if type(ptr) is int else None
        except Exception:
            return None

    # -- the walk --

    def _add_root(self, obj, name, where):
        i = id(obj)
        if type(obj) in _ATOM_TYPES or i in self.seen:
            return
        self.seen.add(i)
        self.root[len(self.objs)] = (name, where)
        self.objs.append(obj)
        self.parent.append(-1)

    def _tensor_edges(self, obj):
        t = self.torch
        for name, getset in (("grad_fn", t.grad_fn), ("grad", t.grad)):
            v = t.attribute(obj, getset)
            if v is not None:
                yield v, "." + name

    def _frame_edges(self, frame):
        """A finished frame a traceback keeps: its locals, which it keeps
        alive as long as the exception lives."""
        got = self.frame_locals(frame) if self.frame_locals else None
        if type(got) is not list:
            return
        for name, v in got:
            v = _unwrapped(v)
            if v is not None:
                yield v, ".f_locals[%s]" % _key(name, 0)

    def _edges(self, n):
        """The named referents of node n: (object, label, whether it is a
        dict of attributes). The walk takes the same objects, unnamed."""
        obj = self.objs[n]
        kind = self._kind(type(obj))
        if kind == _SKIP and n in self.frames:
            for v, label in self._frame_edges(obj):
                yield v, label, False
            return
        if kind == _SKIP or kind == _ATOM:
            return
        if kind == _TRACEBACK:
            for v, label in _links(obj, _TRACEBACK_LINKS):
                yield v, label, False
            return
        if _is(obj, BaseException):
            for v, label in _links(obj, _EXCEPTION_LINKS):
                yield v, label, False
        if kind == _DICT:
            attr = self._attributes(n)
            for i, (k, v) in enumerate(list(obj.items())):
                if attr and type(k) is str and k.isidentifier():
                    yield v, "." + k, False
                else:
                    yield v, "[" + _key(k, i) + "]", False
            return
        if kind == _SEQ:
            for i, v in enumerate(obj):
                yield v, "[%d]" % i, False
            return
        if kind == _TENSOR:
            for v, label in self._tensor_edges(obj):
                yield v, label, False
        elif kind == _NODE:
            for v, label in self._node_edges(obj):
                yield v, label, False
        own = _instance_dict(obj)
        if own is not None:
            # Its entries, which the walk may meet directly (CPython 3.11
            # and later keep an instance's attributes in the instance
            # until its __dict__ is asked for), and the dict itself.
            for i, (k, v) in enumerate(list(own.items())):
                if type(k) is str and k.isidentifier():
                    yield v, "." + k, False
                else:
                    yield v, "[" + _key(k, i) + "]", False
            yield own, "", True
        for v in gc.get_referents(obj):
            if v is own:
                continue
            if type(v) is dict and not _is(obj, (dict, list, tuple)):
                # An instance's or a class's __dict__: its entries are
                # attributes.
                yield v, "", True
            elif type(v) is types.CellType:
                yield v, "", False
            elif not _is(v, type):
                yield v, ".<%s>" % _tname(type(v)), False

    def _attributes(self, n):
        """Whether dict node n holds its parent's attributes: a class's
        dict, or an instance's __dict__."""
        p = self.parent[n]
        if p < 0:
            return False
        kind = self._kind(type(self.objs[p]))
        if kind == _CLASS:
            return True
        if kind in (_SEQ, _DICT, _ATOM, _SKIP):
            return False
        return _instance_dict(self.objs[p]) is self.objs[n]

    def _label(self, n):
        """How node n's parent refers to it, worked out again from the
        parent's edges (once per parent)."""
        p = self.parent[n]
        if p < 0:
            return self.root[n][0]
        labels = self.labels.get(p)
        if labels is None:
            labels = self.labels[p] = {}
            try:
                for v, label, _ in self._edges(p):
                    labels.setdefault(id(v), label)
            except Exception:
                pass
        want = self.objs[n]
        return labels.get(id(want), ".<%s>" % _tname(type(want)))

    def _node_edges(self, node):
        """An autograd node's saved tensors and next nodes, through the C
        getters of its type (torch generates one per kind of node)."""
        tp = type(node)
        names = []
        for klass in _mro(tp):
            try:
                d = _type_dict(klass)
            except Exception:
                continue
            for a, descr in list(d.items()):
                if type(a) is str and a.startswith("_saved_") and \
                        type(descr) in _C_DESCRIPTORS and a not in names:
                    names.append(a)
        for a in names:
            v = _c_attribute(node, a)
            if _is(v, (tuple, list)):
                for x in v:
                    yield x, " saved tensor"
            elif v is not None:
                yield v, " saved tensor"
        nexts = _c_attribute(node, "next_functions")
        for pair in nexts if type(nexts) is tuple else ():
            fn = pair[0] if type(pair) is tuple and pair else None
            if fn is not None:
                yield fn, " \u2192"

    def _roots(self):
        """The locals of every running function (the threads' frames),
        then __main__'s globals. The search's own frames are not roots,
        and no frame object is kept once done: sys._current_frames()
        makes one for this very frame, and a reference to it from one of
        its locals would keep its last local (a tensor) alive past the
        search, in a cycle only the collector breaks."""
        frames = []
        try:
            current = list(sys._current_frames().values())
        except Exception:
            current = []
        for f in current:
            while f is not None:
                # Not the search's own frames.
                if f.f_globals is not _OWN_GLOBALS:
                    frames.append(f)
                f = f.f_back
        current = f = None
        try:
            self._frame_roots(frames)
        finally:
            frames.clear()
        main = sys.modules.get("__main__")
        self._globals([("__main__", main)] if main else [])

    def _frame_roots(self, frames):
        for f in frames:
            code = f.f_code
            where = "%s (%s:%d)" % (code.co_name, code.co_filename,
                                    f.f_lineno)
            for name, v in self._locals(f):
                v = _unwrapped(v)
                if v is not None:
                    self._add_root(v, name, "local of " + where)

    def _locals(self, f):
        """A function's bound locals, read by the shim; a module's code
        (its locals are its globals) has none of its own."""
        if not f.f_code.co_flags & 0x0001:     # CO_OPTIMIZED
            return ()
        got = self.frame_locals(f) if self.frame_locals else None
        if type(got) is list:
            return got
        if sys.version_info >= (3, 13):
            # A proxy that reads the frame, filling nothing.
            try:
                return list(f.f_locals.items())
            except Exception:
                return ()
        return ()

    def _globals(self, mods):
        for mname, m in mods:
            if self._late():
                return
            if not _is(m, types.ModuleType):
                continue
            try:
                d = _module_dict(m)
            except Exception:
                continue
            if type(d) is not dict:
                continue
            for name, v in list(d.items()):
                if _is(v, types.ModuleType):
                    continue
                self._add_root(v, name, "global of " + mname)

    def run(self):
        """Breadth first from the program's own roots (live frames and
        __main__); then, for what they do not reach, the reference cycles
        the collector has yet to free (garbage()); then every other
        module's globals. Returns {root node: objects in its cycle} for
        the holders that are cycles."""
        self._roots()
        n = self._walk(0)
        cycles = {}
        if not self.cut and len(self.found) < len(self.ranges):
            cycles = self.garbage()
            n = len(self.objs)
        if not self.cut and len(self.found) < len(self.ranges):
            self._globals(sorted((k, m) for k, m in list(sys.modules.items())
                                 if k != "__main__" and m is not None
                                 and type(k) is str))
            n = self._walk(n)
        self.reachable = len(self.objs)
        return cycles

    def garbage(self):
        """Targets held by reference cycles that nothing else refers to,
        waiting for a pass of the collector (or for ever, when it is
        off). The targets the walk has not met are looked for among the
        objects the collector tracks; from them, what refers to them is
        followed up, level by level (gc.get_referrers), into parts that
        stop where nothing more refers in. A part that reaches a frame,
        a module, a class, or grows past MAX_PART objects is not garbage.
        A part is garbage when nothing outside it refers to any of its
        objects (their reference counts are all its own); it is then
        walked from the object a person would name (an instance of a
        class, else a container), which names the holder. Returns {root
        node: objects in its part}."""
        # The reference counts this relies on (_closed) are exact only
        # where every reference is counted: not with 3.14's borrowed
        # stack references, nor in a free-threaded build.
        if sys.version_info >= (3, 14) or \
                not getattr(sys, "_is_gil_enabled", lambda: True)():
            return {}
        want = self._unmet()
        if not want or self._late():
            return {}
        part = {}       # id -> object, everything followed up
        mine = {id(want), id(self.objs), id(self.seen), id(self.root),
                id(part)}
        globals_ = set()
        for m in list(sys.modules.values()):
            try:
                globals_.add(id(_module_dict(m)))
            except Exception:
                continue
        owner = {}      # id -> the id its part is known by (union-find)
        bad = set()     # parts that are not garbage

        def find(i):
            while owner[i] != i:
                owner[i] = owner[owner[i]]
                i = owner[i]
            return i

        def union(a, b):
            a, b = find(a), find(b)
            if a != b:
                owner[b] = a
                if b in bad:
                    bad.add(a)
        for obj in want:
            part[id(obj)] = obj
            owner[id(obj)] = id(obj)
        frontier = list(want)
        mine.add(id(frontier))
        level = 0
        while frontier and level < MAX_LEVELS and len(part) < MAX_PART:
            level += 1
            try:
                refs = gc.get_referrers(*frontier)
            except Exception:
                return {}
            if self._late():
                return {}
            mine.add(id(refs))
            known = {id(o) for o in frontier}
            nxt = []
            mine.add(id(nxt))
            for r in refs:
                i = id(r)
                if i in mine or type(r) in _ATOM_TYPES:
                    continue
                if i in self.seen and i not in part:
                    # The walk from the program's roots met it: what it
                    # refers to is reachable.
                    for v in gc.get_referents(r):
                        if id(v) in known:
                            bad.add(find(id(v)))
                    continue
                rooted = i in globals_ or \
                    _is(r, (types.FrameType, types.ModuleType, type))
                if i not in part:
                    part[i] = r
                    owner[i] = i
                    # A frame, module or class: its part is not garbage,
                    # and what refers to it (a class's instances, a
                    # module's functions) is not followed.
                    if not rooted:
                        nxt.append(r)
                for v in gc.get_referents(r):
                    if id(v) in known:
                        union(id(v), i)
                if rooted:
                    bad.add(find(i))
            frontier = nxt
            refs = None
        if frontier:
            # Still referred to from further than it followed.
            for obj in frontier:
                bad.add(find(id(obj)))
        # No reference of this function's may count in _closed().
        frontier = nxt = want = obj = r = v = None
        parts = {}
        for i in part:
            parts.setdefault(find(i), []).append(i)
        sizes = {}
        first = len(self.objs)
        for head_id, members in parts.items():
            if head_id in bad or not self._closed(members, part):
                continue
            head = self._head(members, part)
            self._add_root(head, "<%s>" % _tname(type(head)), None)
            sizes[len(self.objs) - 1] = len(members)
        part = owner = None
        if len(self.objs) > first:
            self._walk(first)
        # Targets met from a part's head; the others are not garbage.
        return {top: n for top, n in sizes.items()}

    def _unmet(self):
        """The objects of the targets not met yet, among those the
        collector tracks."""
        want = []
        if self._late():
            return want
        try:
            tracked = gc.get_objects()
        except Exception:
            return want
        kinds_get = self.kinds.get
        for n, obj in enumerate(tracked):
            if not n & 4095 and self._late():
                return []
            tp = type(obj)
            k = kinds_get(tp)
            if k is None:
                k = self._first_of(obj)
            if k != _TENSOR and k != _ARRAY or id(obj) in self.seen:
                continue
            ptr = self._buffer(obj, k)
            r = self._range_of(ptr) if ptr is not None else -1
            if r >= 0 and r not in self.found:
                want.append(obj)
        return want

    def _closed(self, members, part):
        """Whether nothing outside members refers to any of them: each
        one's reference count is what members hold of it."""
        ids = set(members)
        inside = {}
        for i in members:
            try:
                refs = gc.get_referents(part[i])
            except Exception:
                return False
            for v in refs:
                j = id(v)
                if j in ids:
                    inside[j] = inside.get(j, 0) + 1
        # No reference of this function's may count.
        refs = v = None
        for i in members:
            # getrefcount's argument, part's entry, the walk's list when
            # the object is one of its nodes.
            ours = 2 + (i in self.seen)
            if sys.getrefcount(part[i]) - ours > inside.get(i, 0):
                return False
        return True

    def _head(self, members, part):
        """The object a person would name in a part: an instance of a
        class of theirs, else a container."""
        best = None
        for i in members:
            obj = part[i]
            kind = self._kind(type(obj))
            if kind == _OBJECT and _instance_dict(obj) is not None and \
                    not _is(obj, (dict, list, tuple, set)):
                return obj
            if best is None and kind in (_SEQ, _DICT, _OBJECT):
                best = obj
        return best if best is not None else part[members[0]]

    def _met(self, obj, kind, node):
        """Whether obj, just met as node, was the last target to find."""
        ptr = self._buffer(obj, kind)
        r = self._range_of(ptr) if ptr is not None else -1
        if r >= 0 and r not in self.found:
            self.found[r] = node
        return len(self.found) == len(self.ranges)

    def _late(self):
        """Whether the budget is spent (the search is then cut)."""
        if time.perf_counter() > self.deadline:
            self.cut = True
        return self.cut

    def _walk(self, n):
        """Visits the nodes from n on, adding what they refer to; returns
        where it stopped. A target is recognised when it is met, so that
        the walk ends as soon as the last is."""
        objs, parent, seen = self.objs, self.parent, self.seen
        kinds_get, kind_of, atoms = self.kinds.get, self._kind, _ATOM_TYPES
        seen_add, objs_append, parent_append = seen.add, objs.append, \
            parent.append
        referents, clock, deadline = gc.get_referents, time.perf_counter, \
            self.deadline
        # The roots, met before the walk.
        for i in range(n, len(objs)):
            kind = kinds_get(type(objs[i]))
            if kind is None:
                kind = self._first_of(objs[i])
            if (kind == _TENSOR or kind == _ARRAY) and \
                    self._met(objs[i], kind, i):
                return len(objs)
        added = 0
        while n < len(objs):
            obj = objs[n]
            kind = kinds_get(type(obj))
            try:
                if kind == _SEQ:
                    children = obj
                elif kind == _DICT:
                    children = list(obj.values())
                elif kind == _OBJECT or kind == _CLASS:
                    children = referents(obj)
                elif (kind == _SKIP and n not in self.frames) or \
                        kind == _ATOM:
                    children = ()
                else:
                    # Frames, tracebacks, tensors, autograd nodes: read
                    # through their own accessors, slower by far.
                    children = [v for v, _, _ in self._edges(n)]
                    if clock() > deadline:
                        self.cut = True
                        return n
                for v in children:
                    tp = type(v)
                    if tp in atoms:
                        continue
                    i = id(v)
                    if i in seen:
                        continue
                    k = kinds_get(tp)
                    if k is None:
                        k = self._first_of(v)
                    if kind == _TRACEBACK and tp is types.FrameType:
                        # A frame a traceback keeps: its locals are
                        # walked (the frames of running code are roots).
                        self.frames.add(len(objs))
                    elif k == _SKIP or (k == _CLASS and kind != _SEQ and
                                        kind != _DICT):
                        # Modules and functions never (a module's globals
                        # are roots); classes from a container, not from
                        # each of their instances.
                        continue
                    seen_add(i)
                    objs_append(v)
                    parent_append(n)
                    if (k == _TENSOR or k == _ARRAY) and \
                            self._met(v, k, len(objs) - 1):
                        return len(objs)
                    added += 1
                    if not added & 1023 and clock() > deadline:
                        self.cut = True
                        return len(objs)
            except Exception:
                pass
            n += 1
            if not n & 255 and clock() > deadline:
                self.cut = True
                break
        return n

    # -- how a person writes it --

    def path(self, n):
        """The path to node n as the user would write it, and whether it
        runs through an autograd graph."""
        chain = []
        while n >= 0:
            chain.append(n)
            n = self.parent[n]
        chain.reverse()
        out = ""
        graph = False
        hops = 0        # graph nodes passed since the last one named
        last = None     # the type name of the last graph node passed
        for n in chain:
            label = self._label(n)
            name = _tname(type(self.objs[n]))
            if label == ".grad_fn":
                out += ".grad_fn (%s)" % name
                graph, hops, last = True, 0, name
            elif label == " \u2192":
                hops += 1
                last = name
            elif label == " saved tensor":
                parent = _tname(type(self.objs[self.parent[n]]))
                out += _hops(hops - 1 if hops else 0, "saved tensor of " +
                             parent)
                hops = 0
            else:
                if hops:
                    out += _hops(hops - 1, last)
                    hops = 0
                out += label
        if hops:
            out += _hops(hops - 1, last)
        return _pretty(out), graph

    def graph_nodes(self, root_obj):
        """How many autograd nodes the graph behind root_obj holds."""
        if self.tensor_type is None or \
                self._kind(type(root_obj)) != _TENSOR:
            return 0
        fn = self.torch.attribute(root_obj, self.torch.grad_fn)
        if fn is None:
            return 0
        seen = {id(fn)}
        stack = [fn]
        while stack and len(seen) < MAX_GRAPH_NODES:
            if not len(seen) & 1023 and self._late():
                break
            node = stack.pop()
            nexts = _c_attribute(node, "next_functions")
            for pair in nexts if type(nexts) is tuple else ():
                nxt = pair[0] if type(pair) is tuple and pair else None
                if nxt is not None and id(nxt) not in seen:
                    seen.add(id(nxt))
                    stack.append(nxt)
        return len(seen)


def _hops(folded, last):
    """Graph nodes after grad_fn: the first ones folded, the last kept."""
    if folded <= 0:
        return " \u2192 " + last
    return " \u2192 \u2026 \u2192 " + last


_MODULE_DICT = re.compile(r"\._(?:parameters|buffers|modules)\[('([^']*)'|[^\]]*)\]")


def _pretty(path):
    """nn.Module's own dicts read as the attributes they serve."""
    def name(m):
        key = m.group(2)
        if key is None:
            return m.group(0)
        if key.isdigit():
            return "[" + key + "]"
        return "." + key if key.isidentifier() else m.group(0)
    return _MODULE_DICT.sub(name, path)


def _container(path):
    """The path with its list indexes left out: the objects of one list
    (trainer.batch_metrics[0].correct, [1].correct...) are one holder, as
    are the entries of one dict."""
    path = re.sub(r"\[\d+\]", "[*]", path)
    path = re.sub(r"\[<[^>]*#\d+>\]", "[*]", path)
    if path.endswith("]") and "[" in path:
        return path[:path.rindex("[")]
    return path


def _unreachable_root(objects, collecting, steps_since_gc):
    if not collecting:
        when = "the collector is off"
    elif steps_since_gc is not None and steps_since_gc >= 0:
        when = "the collector last ran %d step%s ago" % (
            steps_since_gc, "" if steps_since_gc == 1 else "s")
    else:
        when = "the collector has not run since"
    return "unreachable reference cycle (%d objects; %s)" % (objects, when)


_OWN_GLOBALS = globals()


def search(targets, budget, frame_locals=None, steps_since_gc=-1):
    """targets: bytes of little-endian (start, size) u64 pairs, sorted by
    start; frame_locals: the shim's reader of a frame's locals;
    steps_since_gc: steps since the collector last ran (-1: not known).
    Returns ([([address...], path, root, objects, graph_nodes, flags)],
    cut)."""
    import struct
    ranges = [struct.unpack_from("<QQ", targets, i)
              for i in range(0, len(targets) - 15, 16)]
    ranges.sort()
    s = _Search(ranges, time.perf_counter() + budget, frame_locals)
    # The search makes many objects: no collection may run meanwhile (its
    # frees would land inside the search, and it is the program's to run).
    collecting = gc.isenabled()
    gc.disable()
    caught = warnings.catch_warnings()
    caught.__enter__()
    warnings.simplefilter("ignore")
    s.torch.enter()
    try:
        cycles = s.run()
        groups = {}
        order = []
        for r, n in sorted(s.found.items(), key=lambda kv: kv[1]):
            path, graph = s.path(n)
            top = n
            while s.parent[top] >= 0:
                top = s.parent[top]
            flags = TORCH if s.tensor_type is not None else 0
            if top in cycles:
                flags |= UNREACHABLE | (0 if collecting else GC_OFF)
                root = _unreachable_root(cycles[top], collecting,
                                         steps_since_gc)
            else:
                root = s.root[top][1]
            key = (_container(path),
                   root if not flags & UNREACHABLE else "unreachable")
            if key not in groups:
                nodes = s.graph_nodes(s.objs[top]) if graph else 0
                groups[key] = [{}, path, root, 0, nodes, flags]
                order.append(key)
            g = groups[key]
            g[3] += 1
            # The last one found (the highest index of a list) names it.
            g[1] = path
            # An allocation of each size it holds, so that the report can
            # tell which of its lines' memory it keeps.
            if len(g[0]) < MAX_SIZES or ranges[r][1] in g[0]:
                g[0][ranges[r][1]] = ranges[r][0]
        found = [(list(groups[k][0].values()),) + tuple(groups[k][1:])
                 for k in order[:MAX_HOLDERS]]
        # Cut short after it met every target, it missed nothing.
        return found, s.cut and len(s.found) < len(s.ranges)
    finally:
        # Nothing of the program stays referenced, even if something of
        # the walk outlives this call (the parents are numbers).
        for part in (s.objs, s.root, s.seen, s.found, s.labels, s.kinds,
                     s.frames):
            part.clear()
        s.torch.leave()
        del s
        caught.__exit__(None, None, None)
        if collecting:
            gc.enable()
