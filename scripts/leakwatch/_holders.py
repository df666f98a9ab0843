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


class _Search(object):
    def __init__(self, ranges, deadline):
        self.starts = [r[0] for r in ranges]
        self.ranges = ranges
        self.deadline = deadline
        self.cut = False
        self.found = {}    # range index -> (node, objects)
        self.torch = sys.modules.get("torch")
        self.tensor_type = getattr(self.torch, "Tensor", None) \
            if self.torch else None
        # BFS nodes: parallel lists (object ids, parents, labels, flags).
        self.objs = []
        self.parent = []
        self.label = []
        self.attr_dict = []   # its dict entries read as attributes
        self.root = []
        self.seen = set()

    # -- what a device buffer is --

    def _range_of(self, ptr):
        i = bisect.bisect_right(self.starts, ptr) - 1
        if i >= 0 and ptr < self.ranges[i][0] + self.ranges[i][1]:
            return i
        return -1

    def _buffer(self, obj):
        """The device pointer of obj's buffer, or None."""
        t = self.tensor_type
        if t is not None and _is(obj, t):
            try:
                return obj.untyped_storage().data_ptr()
            except Exception:
                return None
        try:
            for klass in type(obj).__mro__:
                if "__cuda_array_interface__" in klass.__dict__:
                    iface = obj.__cuda_array_interface__
                    return int(iface["data"][0])
        except Exception:
            return None
        return None

    # -- the walk --

    def _add(self, obj, parent, label, attr_dict=False, root=None):
        if _is(obj, _ATOMS) or obj is self:
            return
        i = id(obj)
        if i in self.seen:
            return
        self.seen.add(i)
        self.objs.append(obj)
        self.parent.append(parent)
        self.label.append(label)
        self.attr_dict.append(attr_dict)
        self.root.append(root if root is not None else self.root[parent])

    def _edges(self, n):
        """The named referents of node n."""
        obj = self.objs[n]
        if _is(obj, _SKIP_TYPES):
            return
        attr = self.attr_dict[n]
        if type(obj) is dict:
            for k, v in list(obj.items()):
                if attr and _is(k, str):
                    yield v, "." + k, False
                else:
                    yield v, "[" + _key(k) + "]", False
            return
        if type(obj) in (list, tuple):
            for i, v in enumerate(obj):
                yield v, "[%d]" % i, False
            return
        t = self.tensor_type
        if t is not None and _is(obj, t):
            for name in ("grad_fn", "grad"):
                try:
                    v = getattr(obj, name)
                except Exception:
                    continue
                if v is not None:
                    yield v, "." + name, False
        elif hasattr(type(obj), "next_functions"):
            for v, label in self._node_edges(obj):
                yield v, label, False
        own = _instance_dict(obj)
        if own is not None:
            yield own, "", True
        named = set(id(v) for v in own.values()) if own else ()
        for v in gc.get_referents(obj):
            if v is own or id(v) in named:
                continue
            if type(v) is dict and not _is(obj, (dict, list, tuple)):
                # An instance's or a class's __dict__: its entries are
                # attributes.
                yield v, "", True
            elif not _is(v, type):
                yield v, ".<%s>" % type(v).__name__, False

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
                self._add(v, -1, name, root="local of " + where)
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
                self._add(v, -1, name, root="global of " + mname)

    def run(self, skip_frame):
        """Breadth first from the program's own roots (live frames and
        __main__), then from every other module's globals."""
        self._roots(skip_frame)
        n = self._walk(0)
        if not self.cut and len(self.found) < len(self.ranges):
            self._globals(sorted((k, m) for k, m in list(sys.modules.items())
                                 if k != "__main__" and m is not None))
            self._walk(n)

    def _walk(self, n):
        want = len(self.ranges)
        while n < len(self.objs):
            if (n & 1023) == 0 and time.perf_counter() > self.deadline:
                self.cut = True
                break
            obj = self.objs[n]
            ptr = self._buffer(obj)
            if ptr is not None:
                r = self._range_of(ptr)
                if r >= 0 and r not in self.found:
                    self.found[r] = n
                    if len(self.found) == want:
                        return n + 1
            try:
                for v, label, attr in self._edges(n):
                    self._add(v, n, label, attr_dict=bool(attr))
            except Exception:
                pass
            n += 1
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
            label = self.label[n]
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
            key = (_container(path), s.root[n])
            if key not in groups:
                nodes = _graph_nodes(s.objs[top], s.tensor_type) \
                    if graph else 0
                groups[key] = [{}, path, s.root[n], 0, nodes]
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
        # the walk outlives this call.
        for part in (s.objs, s.parent, s.label, s.attr_dict, s.root,
                     s.seen, s.found):
            part.clear()
        del s
        caught.__exit__(None, None, None)
        if collecting:
            gc.enable()
