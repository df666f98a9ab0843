# SPDX-License-Identifier: MIT
"""Who holds it: the shortest reference path from a root of the program
(a module global, a local of a live frame, a class attribute) to the live
objects whose device buffers lie inside given allocations.

The shim runs search() inside the program's interpreter, with the GIL held,
at the report point and on demand; the source is compiled into the shim, so
this module needs no import path. It walks the object graph with
gc.get_referents() and reads a few attributes whose getters are C code
(a tensor's storage, grad_fn, grad; an autograd node's next_functions and
saved tensors; __cuda_array_interface__ where a type declares it), each
guarded, so that an object whose attribute access raises or runs code
cannot stop it. It never runs the garbage collector and keeps no reference
once it returns.
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

# Objects that refer to nothing: never visited.
_ATOMS = (str, bytes, int, float, bool, complex, type(None))
_SKIP_TYPES = (type(sys), types.FrameType, types.CodeType, types.FunctionType,
               types.BuiltinFunctionType, type(gc.get_referents), str, bytes,
               int, float, bool, type(None))


def _is(obj, types_):
    """isinstance() by the object's real type: isinstance() may read a
    __class__ that the object computes."""
    return issubclass(type(obj), types_)


def _instance_dict(obj):
    """obj's __dict__ through the C getter its class inherits, never
    through code of the class; None if it has none."""
    if _is(obj, type):
        return None
    try:
        for klass in type(obj).__mro__:
            d = klass.__dict__.get("__dict__")
            if d is not None:
                if type(d) is not types.GetSetDescriptorType:
                    return None
                own = d.__get__(obj, type(obj))
                return own if type(own) is dict else None
    except Exception:
        return None
    return None


def _key(k):
    if _is(k, str):
        return repr(k) if len(k) <= 40 else repr(k[:37] + "...")
    if _is(k, (int, float, bool)) or k is None:
        return repr(k)
    return "<" + type(k).__name__ + ">"


# What a type's objects are to the walk, decided once per type.
_ATOM, _SKIP, _SEQ, _DICT, _TENSOR, _ARRAY, _NODE, _CLASS, _OBJECT = range(9)
_ATOM_TYPES = frozenset(_ATOMS)


class _Search(object):
    def __init__(self, ranges, deadline):
        self.starts = [r[0] for r in ranges]
        self.ranges = ranges
        self.deadline = deadline
        self.cut = False
        self.found = {}    # range index -> node
        self.torch = sys.modules.get("torch")
        self.tensor_type = getattr(self.torch, "Tensor", None) \
            if self.torch else None
        # The walk's nodes: the objects and their parents' indexes, in
        # the order met. Labels are worked out again only for the nodes
        # on a path found (_label), so that a node costs two appends.
        self.objs = []
        self.parent = array.array("q")
        self.root = {}        # node of a root -> (name, where)
        self.seen = set()
        self.kinds = {}       # type -> what its objects are to the walk
        self.labels = {}      # node -> {id of a referent: its label}

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
            if tp in _ATOM_TYPES:
                kind = _ATOM
            elif issubclass(tp, _SKIP_TYPES):
                kind = _SKIP
            elif issubclass(tp, type):
                kind = _CLASS
            elif tp is list or tp is tuple:
                kind = _SEQ
            elif tp is dict:
                kind = _DICT
            elif t is not None and issubclass(tp, t):
                kind = _TENSOR
            elif any("__cuda_array_interface__" in k.__dict__
                     for k in tp.__mro__):
                kind = _ARRAY
            elif any("next_functions" in k.__dict__ for k in tp.__mro__):
                kind = _NODE
            else:
                kind = _OBJECT
        except Exception:
            kind = _OBJECT
        self.kinds[tp] = kind
        return kind

    def _buffer(self, obj, kind):
        """The device pointer of obj's buffer, or None."""
        try:
            if kind == _TENSOR:
                return obj.untyped_storage().data_ptr()
            iface = obj.__cuda_array_interface__
            return int(iface["data"][0])
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

    def _edges(self, n):
        """The named referents of node n: (object, label, whether it is a
        dict of attributes). The walk takes the same objects, unnamed."""
        obj = self.objs[n]
        kind = self._kind(type(obj))
        if kind == _SKIP or kind == _ATOM:
            return
        if kind == _DICT:
            attr = self._attributes(n)
            for k, v in list(obj.items()):
                if attr and _is(k, str):
                    yield v, "." + k, False
                else:
                    yield v, "[" + _key(k) + "]", False
            return
        if kind == _SEQ:
            for i, v in enumerate(obj):
                yield v, "[%d]" % i, False
            return
        if kind == _TENSOR:
            for name in ("grad_fn", "grad"):
                try:
                    v = getattr(obj, name)
                except Exception:
                    continue
                if v is not None:
                    yield v, "." + name, False
        elif kind == _NODE:
            for v, label in self._node_edges(obj):
                yield v, label, False
        own = _instance_dict(obj)
        if own is not None:
            # Its entries, which the walk may meet directly (CPython 3.11
            # and later keep an instance's attributes in the instance
            # until its __dict__ is asked for), and the dict itself.
            for k, v in list(own.items()):
                if _is(k, str):
                    yield v, "." + k, False
            yield own, "", True
        for v in gc.get_referents(obj):
            if v is own:
                continue
            if type(v) is dict and not _is(obj, (dict, list, tuple)):
                # An instance's or a class's __dict__: its entries are
                # attributes.
                yield v, "", True
            elif not _is(v, type):
                yield v, ".<%s>" % type(v).__name__, False

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
        return labels.get(id(want), ".<%s>" % type(want).__name__)

    def _node_edges(self, node):
        try:
            names = [a for a in dir(node) if a.startswith("_saved_")]
        except Exception:
            names = []
        for a in names:
            try:
                v = getattr(node, a)
            except Exception:
                continue
            if _is(v, (tuple, list)):
                for i, x in enumerate(v):
                    yield x, " saved tensor"
            elif v is not None:
                yield v, " saved tensor"
        try:
            nexts = node.next_functions
        except Exception:
            nexts = ()
        for pair in nexts or ():
            try:
                fn = pair[0]
            except Exception:
                continue
            if fn is not None:
                yield fn, " \u2192"

    def _roots(self, skip_frame):
        frames = []
        try:
            current = sys._current_frames().values()
        except Exception:
            current = []
        for f in current:
            while f is not None:
                # Not the search's own frames.
                if f.f_globals is not _OWN_GLOBALS:
                    frames.append(f)
                f = f.f_back
        for f in frames:
            where = "%s (%s:%d)" % (f.f_code.co_name, f.f_code.co_filename,
                                    f.f_lineno)
            try:
                local = dict(f.f_locals) if f.f_globals is not f.f_locals \
                    else {}
            except Exception:
                local = {}
            for name, v in local.items():
                self._add_root(v, name, "local of " + where)
        main = sys.modules.get("__main__")
        self._globals([("__main__", main)] if main else [])

    def _globals(self, mods):
        for mname, m in mods:
            try:
                d = m.__dict__
            except Exception:
                continue
            if type(d) is not dict:
                continue
            for name, v in list(d.items()):
                if _is(v, type(sys)):
                    continue
                self._add_root(v, name, "global of " + mname)

    def run(self, skip_frame):
        """Breadth first from the program's own roots (live frames and
        __main__), then from every other module's globals."""
        self._roots(skip_frame)
        n = self._walk(0)
        if not self.cut and len(self.found) < len(self.ranges):
            self._globals(sorted((k, m) for k, m in list(sys.modules.items())
                                 if k != "__main__" and m is not None))
            self._walk(n)

    def _met(self, obj, kind, node):
        """Whether obj, just met as node, was the last target to find."""
        ptr = self._buffer(obj, kind)
        r = self._range_of(ptr) if ptr is not None else -1
        if r >= 0 and r not in self.found:
            self.found[r] = node
        return len(self.found) == len(self.ranges)

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
            kind = kind_of(type(objs[i]))
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
                elif kind == _SKIP or kind == _ATOM:
                    children = ()
                else:
                    children = [v for v, _, _ in self._edges(n)]
                for v in children:
                    tp = type(v)
                    if tp in atoms:
                        continue
                    i = id(v)
                    if i in seen:
                        continue
                    k = kinds_get(tp)
                    if k is None:
                        k = kind_of(tp)
                    if k == _SKIP or (k == _CLASS and kind != _SEQ and
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
                    if not added & 4095 and clock() > deadline:
                        self.cut = True
                        return len(objs)
            except Exception:
                pass
            n += 1
            if not n & 1023 and clock() > deadline:
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
            name = type(self.objs[n]).__name__
            if label == ".grad_fn":
                out += ".grad_fn (%s)" % name
                graph, hops, last = True, 0, name
            elif label == " \u2192":
                hops += 1
                last = name
            elif label == " saved tensor":
                parent = type(self.objs[self.parent[n]]).__name__
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


def _hops(folded, last):
    """Graph nodes after grad_fn: the first ones folded, the last kept."""
    if folded <= 0:
        return " \u2192 " + last
    return " \u2192 \u2026 \u2192 " + last


def _pretty(path):
    """nn.Module's own dicts read as the attributes they serve."""
    for d in ("._parameters", "._buffers", "._modules"):
        while d + "[" in path:
            i = path.index(d + "[")
            j = path.index("]", i)
            key = path[i + len(d) + 1:j]
            name = key.strip("'\"")
            rest = path[j + 1:]
            if name.isdigit():
                path = path[:i] + "[" + name + "]" + rest
            else:
                path = path[:i] + "." + name + rest
    return path


def _container(path):
    """The path with its list indexes left out: the objects of one list
    (trainer.batch_metrics[0].correct, [1].correct...) are one holder, as
    are the entries of one dict."""
    path = re.sub(r"\[\d+\]", "[*]", path)
    if path.endswith("]") and "[" in path:
        return path[:path.rindex("[")]
    return path


def _graph_nodes(root_obj, torch_tensor):
    """How many autograd nodes the graph behind root_obj holds."""
    fn = None
    try:
        if torch_tensor is not None and _is(root_obj, torch_tensor):
            fn = root_obj.grad_fn
    except Exception:
        return 0
    if fn is None:
        return 0
    seen = {id(fn)}
    stack = [fn]
    while stack and len(seen) < MAX_GRAPH_NODES:
        node = stack.pop()
        try:
            nexts = node.next_functions
        except Exception:
            continue
        for pair in nexts or ():
            nxt = pair[0] if pair else None
            if nxt is not None and id(nxt) not in seen:
                seen.add(id(nxt))
                stack.append(nxt)
    return len(seen)


_OWN_GLOBALS = globals()


def search(targets, budget):
    """targets: bytes of little-endian (start, size) u64 pairs, sorted by
    start. Returns ([([address...], path, root, objects, graph_nodes)],
    cut)."""
    import struct
    ranges = [struct.unpack_from("<QQ", targets, i)
              for i in range(0, len(targets) - 15, 16)]
    ranges.sort()
    s = _Search(ranges, time.perf_counter() + budget)
    # The search makes many objects: no collection may run meanwhile (its
    # frees would land inside the search, and it is the program's to run).
    collecting = gc.isenabled()
    gc.disable()
    caught = warnings.catch_warnings()
    caught.__enter__()
    warnings.simplefilter("ignore")
    try:
        s.run(sys._getframe())
        groups = {}
        order = []
        for r, n in sorted(s.found.items(), key=lambda kv: kv[1]):
            path, graph = s.path(n)
            top = n
            while s.parent[top] >= 0:
                top = s.parent[top]
            root = s.root[top][1]
            key = (_container(path), root)
            if key not in groups:
                nodes = _graph_nodes(s.objs[top], s.tensor_type) \
                    if graph else 0
                groups[key] = [{}, path, root, 0, nodes]
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
        return found, s.cut
    finally:
        # Nothing of the program stays referenced, even if something of
        # the walk outlives this call (the parents are numbers).
        for part in (s.objs, s.root, s.seen, s.found, s.labels, s.kinds):
            part.clear()
        del s
        caught.__exit__(None, None, None)
        if collecting:
            gc.enable()
