# SPDX-License-Identifier: MIT
"""The holder search (interpose/holders/walk.c) in real programs, under the
shim with the stand-in CUDA runtime, on the interpreter that runs this
script: programs written as users write them (loops in functions) keep
tinytensor tensors or CudaArray objects (tests/cuda_array.py) somewhere,
call leakwatch.snapshot() or simply end, and the report's JSON `held_by`
must name what keeps them: its path, its root, how many objects, whether
the search was cut.

    holders_walk_test.py GROUP

GROUP is one of the keys of GROUPS below. The paths come from the
environment (tests/python/meson.build): LW_LIB, LW_CLI, LW_TINYTENSOR,
LW_TINYTENSOR_PY, LW_PYTHON_DIR. LW_KEEP=1 keeps the programs and traces.
Kept to Python 3.9 syntax, as the programs are.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
from lwcheck import SKIP, check, check_eq, finish  # noqa: E402

STEPS = 20

# ---- the programs ----

# A list local to a running function; the newest loss is also the local
# `loss`, a holder of its own.
LOCAL_LIST = r'''
import leakwatch
import tinytensor as tt


def train(steps):  # @train
    losses = []
    for step in range(steps):
        x = tt.ones(16)
        loss = (x * x).sum()  # @alloc
        losses.append(loss)
        leakwatch.step()
    leakwatch.snapshot()
    return len(losses)


train(STEPS)
'''

# train() in a thread of its own, calling snapshot() itself while the main
# thread waits in join().
THREAD = r'''
import threading
import leakwatch
import tinytensor as tt


def train(steps):  # @train
    losses = []
    for step in range(steps):
        losses.append(tt.ones(16))  # @alloc
        leakwatch.step()
    leakwatch.snapshot()


worker = threading.Thread(target=train, args=(STEPS,))
worker.start()
worker.join()
'''

# Globals, instance attributes (a plain instance whose __dict__ nothing
# asked for: 3.11+ keep its attributes inline; one whose __dict__ was
# read; one with __slots__), a class attribute, dict keys of every kind,
# modules kept as torch.nn.Module keeps them. The search at the
# program's end finds them.
PATHS = r'''
import sys
import leakwatch
import tinytensor as tt

SECRET = "sk-" + "".join(chr(97 + (i * 7) % 26) for i in range(40))


class Trainer:
    def __init__(self):
        self.history = []


class Plain:
    def __init__(self):
        self.kept = []


class Asked:
    def __init__(self):
        self.kept = []


class Slotted:
    __slots__ = ("kept",)

    def __init__(self):
        self.kept = []


class Registry:
    encoders = {"clip": []}


class Module:
    """Children in _modules, reached as attributes, as torch.nn.Module."""

    def __init__(self):
        object.__setattr__(self, "_modules", {})

    def __setattr__(self, name, value):
        if isinstance(value, Module):
            self._modules[name] = value
        else:
            object.__setattr__(self, name, value)

    def __getattr__(self, name):
        modules = object.__getattribute__(self, "_modules")
        if name in modules:
            return modules[name]
        raise AttributeError(name)


class Block(Module):
    def __init__(self):
        super().__init__()
        self.outputs = []


class Sequential(Module):
    def __init__(self, *blocks):
        super().__init__()
        for i, b in enumerate(blocks):
            self._modules[str(i)] = b

    def __getitem__(self, i):
        return self._modules[str(i)]


trainer = Trainer()
plain = Plain()
asked = Asked()
assert "kept" in vars(asked)      # its __dict__ asked for
slotted = Slotted()
named = {"tok": []}
numbered = {7: []}
by_none = {None: []}
tokens = {"first": [], SECRET: []}
model = Module()
model.encoder = Module()
model.encoder.layers = Sequential(Block())


def train(steps, part):
    for step in range(steps):
        if part == "attributes":
            trainer.history.append(tt.ones(16))  # @trainer
            plain.kept.append(tt.ones(16))  # @plain
            asked.kept.append(tt.ones(16))  # @asked
            slotted.kept.append(tt.ones(16))  # @slotted
            Registry.encoders["clip"].append(tt.ones(16))  # @registry
            model.encoder.layers[0].outputs.append(tt.ones(16))  # @module
        else:
            named["tok"].append(tt.ones(16))  # @key_str
            numbered[7].append(tt.ones(16))  # @key_int
            by_none[None].append(tt.ones(16))  # @key_none
            tokens[SECRET].append(tt.ones(16))  # @key_secret
        leakwatch.step()


train(STEPS, sys.argv[1])
print("secret", SECRET)
'''

# Objects hostile to code execution: a property named
# __cuda_array_interface__, __getattr__ raising, __eq__ and __hash__
# counting, a metaclass counting __instancecheck__, __subclasscheck__ and
# every attribute read, __class__ raising; the program holds its lock
# while it asks for the search. None of their code may run.
HOSTILE = r'''
import threading
import leakwatch
import tinytensor as tt

lock = threading.Lock()
ran = []


class Watched:
    def __init__(self, t):
        self.t = t

    @property
    def __cuda_array_interface__(self):
        ran.append("property")
        if lock.acquire(timeout=2):   # blocks while the program holds it
            lock.release()
        return self.t.__cuda_array_interface__

    def __getattr__(self, name):
        ran.append("getattr " + name)
        raise RuntimeError("no attribute for you")

    def __eq__(self, other):
        ran.append("eq")
        return False

    def __hash__(self):
        ran.append("hash")
        return 1


class Hostile:
    def __getattr__(self, name):
        ran.append("hostile getattr " + name)
        raise RuntimeError("no attribute for you")

    @property
    def __class__(self):
        ran.append("hostile class")
        raise RuntimeError("no class either")

    @property
    def __dict__(self):
        ran.append("hostile dict")
        raise RuntimeError("no dict either")


class Meta(type):
    def __instancecheck__(cls, obj):
        ran.append("instancecheck")
        return False

    def __subclasscheck__(cls, sub):
        ran.append("subclasscheck")
        return False

    def __getattribute__(cls, name):
        if name not in ("__name__", "__qualname__", "__module__"):
            ran.append("meta " + name)
        return type.__getattribute__(cls, name)


class Exotic(metaclass=Meta):
    pass


class Key(str):
    def __repr__(self):
        ran.append("repr")
        return "Key"

    def __eq__(self, other):
        ran.append("key eq")
        return str.__eq__(self, other)

    __hash__ = str.__hash__


def train(steps):  # @train
    key = Key("k")
    history = {key: []}
    kept = []
    for step in range(steps):
        kept.append(Hostile())
        kept.append(Exotic)
        kept.append(Exotic())
        kept.append(Watched(tt.ones(16)))  # @watched
        history[key].append(Hostile())
        history[key].append(tt.ones(16))  # @plain
        leakwatch.step()
    with lock:
        leakwatch.snapshot()
    print("ran:", ran)


train(STEPS)
'''

# A closure: hook() keeps what it sees in a list of the function that
# made it, which has returned.
CLOSURE = r'''
import leakwatch
import tinytensor as tt

hooks = []


def register():
    seen = []

    def hook(t):
        seen.append(t)
    hooks.append(hook)


def train(steps):  # @train
    for step in range(steps):
        for hook in hooks:
            hook(tt.ones(16))  # @alloc
        leakwatch.step()
    leakwatch.snapshot()


register()
train(STEPS)
'''

# A generator keeping a local list between its yields: only the loop that
# drives it refers to it (from its frame's value stack).
GENERATOR = r'''
import leakwatch
import tinytensor as tt


def batches(steps):  # @batches
    cache = []
    for step in range(steps):
        cache.append(tt.ones(16))  # @alloc
        yield step


def train(steps):
    for step in batches(steps):
        leakwatch.step()
        if step == steps - 1:
            leakwatch.snapshot()


train(STEPS)
'''

# The same generator, kept in a global between the loops that advance it.
GENERATOR_GLOBAL = r'''
import leakwatch
import tinytensor as tt


def batches():
    cache = []
    while True:
        cache.append(tt.ones(16))  # @alloc
        yield len(cache)


def train(steps):
    for step in range(steps):
        next(loader)
        leakwatch.step()
    leakwatch.snapshot()


loader = batches()
train(STEPS)
'''

# An asyncio task keeping a local list while another coroutine calls
# snapshot().
ASYNCIO = r'''
import asyncio
import leakwatch
import tinytensor as tt


async def worker(stop):  # @worker
    cache = []
    while not stop.is_set():
        cache.append(tt.ones(16))  # @alloc
        leakwatch.step()
        await asyncio.sleep(0)


async def main(steps):
    stop = asyncio.Event()
    asyncio.ensure_future(worker(stop))
    for step in range(steps):
        await asyncio.sleep(0)
    leakwatch.snapshot()
    stop.set()
    await asyncio.sleep(0)


asyncio.run(main(STEPS))
'''

# An exception kept with its traceback, and the frame that raised it.
EXCEPTION = r'''
import leakwatch
import tinytensor as tt

errors = []


def step_once():
    x = tt.ones(16)  # @alloc
    raise ValueError("bad batch")


def train(steps):
    for step in range(steps):
        try:
            step_once()
        except ValueError as e:
            errors.append(e)
        leakwatch.step()
    leakwatch.snapshot()


train(STEPS)
'''

# Reference cycles nothing refers to, with the collector on (and not due
# to run: few objects are made) and off: a metric that refers to itself,
# a list that holds itself, CudaArray objects in a cycle; and one object
# kept from outside Python's objects (a reference ctypes took), which is
# neither reachable nor garbage.
CYCLES = r'''
import ctypes
import gc
import sys
import leakwatch
import tinytensor as tt
from cuda_array import CudaArray

if sys.argv[1] == "off":
    gc.disable()


class Metric:
    def __init__(self):
        self.correct = tt.ones(16)  # @metric
        self.me = self


class Pair:
    def __init__(self, t):
        self.array = CudaArray(t.ptr)
        self.t = t
        self.other = None


storages = []


def train(steps):
    for step in range(steps):
        Metric()
        cycle = [tt.ones(16)]  # @list
        cycle.append(cycle)
        t = tt.ones(16)  # @outside
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(t))
        del t
        t = tt.ones(16)  # @array
        storages.append(t.storage)    # the memory lives on its own
        a, b = Pair(t), Pair(t)
        a.other, b.other = b, a
        del t, a, b, cycle
        leakwatch.step()
    leakwatch.snapshot()


gc.collect()
train(STEPS)
print("enabled", gc.isenabled())
'''

# The search keeps nothing alive, runs no collection, and makes no
# object: the collector's counts and statistics do not move across it, and
# whether the collector is on stays as it was. LEAKWATCH_HOLDERS=0 runs the
# same program without the search: the counts move the same in both. A
# signal that arrives during a search is handled once it returns, in the
# program's own code, so the exception its handler raises is the
# program's to catch.
QUIET = r'''
import gc
import json
import signal
import sys
import weakref
import leakwatch
import tinytensor as tt

passes = []


def note(phase, info):
    if phase == "start":
        passes.append(info["generation"])


def measure():
    gc.collect()
    gc.callbacks.append(note)
    enabled = gc.isenabled()
    stats = gc.get_stats()
    before = gc.get_count()
    leakwatch.snapshot()
    after = gc.get_count()
    gc.callbacks.remove(note)
    return {"delta": [a - b for a, b in zip(after, before)],
            "stats": stats == gc.get_stats(),
            "enabled": enabled == gc.isenabled()}


class Alarm(Exception):
    pass


alarms = {"armed": False, "raised": 0, "caught": 0}


def on_alarm(signum, frame):
    # A timeout's handler: raises while a snapshot() is under way. One
    # that lands during a search runs when the search has returned, and
    # its exception reaches the program.
    if alarms["armed"]:
        alarms["armed"] = False
        alarms["raised"] += 1
        raise Alarm()


def interrupted(index):
    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    for _ in range(5):
        try:
            alarms["armed"] = True
            leakwatch.snapshot()
            alarms["armed"] = False
        except Alarm:
            alarms["caught"] += 1
    signal.setitimer(signal.ITIMER_REAL, 0)
    alarms["armed"] = False
    return len(index)


def train(steps):  # @train
    losses = []
    big = [[tt] for _ in range(20000)]
    # A data set's index the walk reads before it reaches the losses.
    index = [(i, [i % 10]) for i in range(300000)]
    for step in range(steps):
        losses.append(tt.ones(16))  # @alloc
        leakwatch.step()
    scratch = tt.ones(16)
    gone = weakref.ref(scratch)
    on = measure()
    gc.disable()
    off = measure()
    gc.enable()
    del scratch
    interrupted(index)
    print(json.dumps({"on": on, "off": off, "freed": gone() is None,
                      "passes": passes, "alarms": alarms}))


train(STEPS)
'''

# The budget: a millisecond (the least the shim takes) for a walk of many
# objects. The search is cut: what it met first (a list local to train())
# is named, and says it was cut; what lies behind 100,000 lists is not.
BUDGET = r'''
import leakwatch
import tinytensor as tt


def train(steps):  # @train
    # Each entry a list holding a dict holding a list: a walk enters
    # every one (an entry of atoms only is checked without being entered).
    junk = [[{"k": i, "v": [i]}] for i in range(100000)]
    recent = []
    for step in range(steps):
        junk[-1].append(tt.ones(16))  # @deep
        recent.append(tt.ones(16))  # @near
        leakwatch.step()
    leakwatch.snapshot()
    print("alive")


train(STEPS)
'''


# ---- running them ----

def env_path(name):
    value = os.environ.get(name)
    check(value and os.path.exists(value), "%s not set or missing" % name)
    return value


def markers(source):
    """{name: line} for each line ending with `# @name`."""
    found = {}
    for number, text in enumerate(source.splitlines(), 1):
        m = re.search(r"#\s*@([\w-]+)\s*$", text)
        if m:
            found[m.group(1)] = number
    return found


class Program:
    """One program run under the shim, and its report."""

    def __init__(self, name, source, args=(), env=None):
        self.dir = tempfile.mkdtemp(prefix="lw-walk-%s-" % name)
        if os.environ.get("LW_KEEP"):
            print("kept:", self.dir)
        self.source = source.replace("STEPS", str(STEPS))
        self.lines = markers(self.source)
        self.path = os.path.join(self.dir, "walk_%s.py" % name)
        with open(self.path, "w") as f:
            f.write(self.source)
        full = {k: v for k, v in os.environ.items()
                if not k.startswith(("LEAKWATCH_", "PYTHON"))}
        full.update({
            "LD_PRELOAD": env_path("LW_LIB"),
            "LW_TINYTENSOR": env_path("LW_TINYTENSOR"),
            "PYTHONPATH": os.pathsep.join([
                env_path("LW_PYTHON_DIR"),
                os.path.dirname(env_path("LW_TINYTENSOR_PY")),
                os.path.join(HERE, "..")]),
            "PYTHONDONTWRITEBYTECODE": "1",
            "LEAKWATCH_OUT": os.path.join(self.dir, "trace-%p.trace"),
        })
        full.update(env or {})
        self.name = name
        proc = subprocess.run([sys.executable, "-s", self.path] + list(args),
                              env=full, cwd=self.dir, capture_output=True,
                              text=True, timeout=60)
        self.stdout, self.stderr = proc.stdout, proc.stderr
        check(proc.returncode == 0,
                        "%s: exited %d\nstdout: %s\nstderr: %s"
                        % (name, proc.returncode, proc.stdout, proc.stderr))
        check("holder search failed" not in proc.stderr,
              "%s: %s" % (name, proc.stderr))
        self.report = {"findings": []}
        self.text = ""
        traces = sorted(f for f in os.listdir(self.dir)
                        if f.endswith(".trace"))
        if not check(len(traces) == 1, "%s: one trace, got %s\nstderr: %s"
                     % (name, traces, proc.stderr)):
            return
        self.trace = os.path.join(self.dir, traces[0])
        cli = env_path("LW_CLI")
        rep = subprocess.run([cli, "report", "--format", "json", self.trace],
                             capture_output=True, text=True, timeout=60)
        if check(rep.returncode == 0, "%s: report: %s" % (name, rep.stderr)):
            self.json_text = rep.stdout
            self.report = json.loads(rep.stdout)
        text = subprocess.run([cli, "report", self.trace],
                              capture_output=True, text=True, timeout=60)
        self.text = text.stdout

    def cleanup(self):
        if not os.environ.get("LW_KEEP"):
            shutil.rmtree(self.dir, True)

    def finding(self, marker):
        """The leak finding at the line marked @marker (its lead's line or
        one of its lines)."""
        line = self.lines[marker]
        for f in self.report["findings"]:
            if not f["leak"]:
                continue
            lines = [f.get("location") or {}] + list(f.get("lines") or [])
            if any(loc.get("line") == line and
                   os.path.basename(loc.get("file") or "") ==
                   os.path.basename(self.path) for loc in lines):
                return f
        check(False, "%s: no leak finding at @%s (line %d): %s"
              % (self.name, marker, line, self.summary()))
        return None

    def held(self, marker):
        """The held_by list of the finding at @marker."""
        f = self.finding(marker)
        return f["held_by"] if f else []

    def first(self, marker):
        held = self.held(marker)
        check(held, "%s @%s: no holder\n%s" % (self.name, marker,
                                                  self.summary()))
        return held[0] if held else {"path": "", "root": "", "objects": 0,
                                     "cut": None, "fix": "",
                                     "graph_nodes": 0}

    def root_of(self, function_marker, function):
        return "local of %s (defined at %s:%d)" % (
            function, self.path, self.lines[function_marker])

    def summary(self):
        out = []
        for f in self.report["findings"]:
            loc = f.get("location") or {}
            out.append("%s %s:%s held_by=%s" % (
                f["category"], os.path.basename(loc.get("file") or "?"),
                loc.get("line"), [(h["path"], h["root"], h["objects"],
                                   h["cut"]) for h in f["held_by"]]))
        return "\n  ".join(["findings:"] + out) + "\nstderr: " + self.stderr


def expect(p, marker, path, root, objects=None, cut=False, first=False):
    """A holder of the finding at @marker (its first with first=True):
    the one whose path is path (a string, or a compiled pattern it must
    match in full), with root (a string, or a pattern the root must match
    from its start), objects (a number, or a range) and cut as given. A
    finding lists every holder of the lines one holder keeps (up to three),
    so that a list that keeps two lines' tensors is one finding."""
    held = p.held(marker)
    what = "%s @%s" % (p.name, marker)

    def fits(h):
        if hasattr(path, "fullmatch"):
            return path.fullmatch(h["path"])
        return h["path"] == path
    found = [h for h in held if fits(h)]
    if not check(found and (not first or fits(held[0])),
                 "%s: no holder %s%s\n%s"
                 % (what, getattr(path, "pattern", path),
                    " first" if first else "", p.summary())):
        return {"path": "", "root": "", "objects": 0, "cut": None,
                "fix": "", "graph_nodes": 0}
    h = found[0]
    if hasattr(root, "match"):
        check(root.match(h["root"]), "%s: root %r does not match %r"
              % (what, h["root"], root.pattern))
    else:
        check_eq(h["root"], root, what + ": root")
    if objects is not None:
        if isinstance(objects, range):
            check(h["objects"] in objects, "%s: %d objects, expected %s"
                  % (what, h["objects"], objects))
        else:
            check_eq(h["objects"], objects, what + ": objects")
    check_eq(h["cut"], cut, what + ": cut")
    check_eq(h["graph_nodes"], 0, what + ": graph nodes")
    return h


# Objects a list holds by the end of STEPS steps: those made before the
# first step's end and the newest may not count.
MOST = range(STEPS - 3, STEPS + 1)


# ---- the groups ----

def group_locals():
    """A list local to a running function, in the main thread and in a
    thread of its own (snapshot() called by that thread while the main
    thread waits in join())."""
    p = Program("local_list", LOCAL_LIST)
    expect(p, "alloc", "losses[%d]" % (STEPS - 2),
           p.root_of("train", "train"), MOST, first=True)
    held = p.held("alloc")
    check(any(h["path"] == "loss" and h["objects"] == 1 for h in held),
          "the newest loss is held by the local `loss` too: %s" % held)
    f = p.finding("alloc")
    check(f and "drain `losses`" in f["held_by"][0]["fix"],
          "the fix names the list: %s" % (f and f["held_by"][0]["fix"]))
    # The text names the function by its own line, with its file as the
    # sites' are: relative to the program's directory.
    check("held by: losses[%d] (local of train (defined at %s:%d); " % (
              STEPS - 2, os.path.basename(p.path), p.lines["train"])
          in p.text, "the text report names the holder:\n" + p.text)
    p.cleanup()

    p = Program("thread", THREAD)
    expect(p, "alloc", "losses[%d]" % (STEPS - 1),
           p.root_of("train", "train"), MOST, first=True)
    p.cleanup()


# Tensors memoised by functools.lru_cache with no bound, one entry per
# request id: its cache is a dict only the wrapper's traversal shows.
LRU = r'''
import functools
import leakwatch
import tinytensor as tt


@functools.lru_cache(maxsize=None)
def embed(request_id):
    return tt.ones(16) * request_id  # @alloc


def serve(steps):
    for step in range(steps):
        embed(step)
        leakwatch.step()


serve(STEPS)
'''


def group_paths():
    """Globals, instance attributes with and without __dict__, __slots__,
    a class attribute, dict keys (str, int, None, a secret that must not
    show), modules kept in _modules; found by the search at the end."""
    glob = "global of __main__"
    last = STEPS - 1
    p = Program("attributes", PATHS, args=["attributes"])
    for marker, path in [
            ("trainer", "trainer.history[%d]"),
            ("plain", "plain.kept[%d]"),
            ("asked", "asked.kept[%d]"),
            ("slotted", "slotted.kept[%d]"),
            ("registry", "Registry.encoders['clip'][%d]"),
            ("module", "model.encoder.layers[0].outputs[%d]")]:
        expect(p, marker, path % last, glob, MOST, first=True)
    p.cleanup()

    # An lru_cache's entries, named as the cached function's with their
    # count; the fix bounds it.
    p = Program("lru", LRU)
    h = expect(p, "alloc", "embed (an lru_cache: %d entries)[%d]"
               % (STEPS, last), glob, MOST, first=True)
    check("maxsize=N" in h["fix"] and "embed.cache_clear()" in h["fix"],
          "lru: the holder's fix: %r" % h["fix"])
    p.cleanup()

    p = Program("keys", PATHS, args=["keys"])
    for marker, path in [
            ("key_str", "named['tok'][%d]"),
            ("key_int", "numbered[7][%d]"),
            ("key_none", "by_none[None][%d]"),
            ("key_secret", "tokens[<str #1>][%d]")]:
        expect(p, marker, path % last, glob, MOST, first=True)
    m = re.search(r"^secret (\S+)$", p.stdout, re.M)
    if check(m, "the program prints its secret: %r" % p.stdout):
        secret = m.group(1)
        for where, text in [("JSON report", getattr(p, "json_text", "")),
                            ("text report", p.text)]:
            check(secret[:12] not in text, "the secret is in the %s"
                  % where)
        with open(p.trace, "rb") as f:
            check(secret[:12].encode() not in f.read(),
                  "the secret is in the trace")
    p.cleanup()


def group_hostile():
    """Objects hostile to code execution: none of their code runs, the
    search does not block on the program's lock, and the tensors past
    them are found."""
    p = Program("hostile", HOSTILE)
    check("ran: []" in p.stdout, "program code ran: %s" % p.stdout)
    root = p.root_of("train", "train")
    expect(p, "plain", "history[<Key #0>][%d]" % (2 * STEPS - 1), root, MOST)
    # A property named __cuda_array_interface__ is code: the object is
    # walked, not read as an array; its tensor is its attribute.
    expect(p, "watched", "kept[%d].t" % (4 * STEPS - 1), root, MOST)
    p.cleanup()


def group_frames():
    """Frames other than the running functions': a closure's cell, a
    suspended generator, an asyncio task, an exception's traceback."""
    p = Program("closure", CLOSURE)
    expect(p, "alloc", "hooks[0].__closure__[0].cell_contents[%d]"
           % (STEPS - 1), "global of __main__", MOST)
    # The loop's own `hook` is nearer, and found first.
    expect(p, "alloc", "hook.__closure__[0].cell_contents[%d]" % (STEPS - 1),
           p.root_of("train", "train"), MOST, first=True)
    p.cleanup()

    p = Program("generator", GENERATOR)
    expect(p, "alloc", "cache[%d]" % (STEPS - 1),
           p.root_of("batches", "batches") + ", a suspended generator",
           MOST, first=True)
    p.cleanup()

    p = Program("generator_global", GENERATOR_GLOBAL)
    expect(p, "alloc", "loader.gi_frame.f_locals['cache'][%d]"
           % (STEPS - 1), "global of __main__", MOST, first=True)
    p.cleanup()

    p = Program("asyncio", ASYNCIO)
    h = p.first("alloc")
    worker = p.root_of("worker", "worker")
    # The task's coroutine is a root of its own, named by its local: not
    # a path through the event loop's queues.
    check(re.fullmatch(r"cache\[\d+\]", h["path"]) and
          h["root"] == worker + ", an asyncio task",
          "asyncio: the task's list: %s" % p.summary())
    check(h["objects"] >= STEPS - 3, "asyncio: objects %s" % h)
    p.cleanup()

    p = Program("exception", EXCEPTION)
    expect(p, "alloc", re.compile(
        r"errors\[%d\]\.__traceback__(\.tb_next)*\.tb_frame"
        r"\.f_locals\['x'\]" % (STEPS - 1)), "global of __main__", MOST,
        first=True)
    p.cleanup()


def group_cycles():
    """Unreachable reference cycles, the collector on and off; memory
    kept from outside Python's objects has no holder."""
    for mode in ("on", "off"):
        p = Program("cycles_" + mode, CYCLES, args=[mode])
        check("enabled %s" % (mode == "on") in p.stdout,
              "the search left the collector %s: %s" % (mode, p.stdout))
        root = re.compile(
            r"unreachable reference cycle \(\d+ objects; the collector %s\)$"
            % ("is off" if mode == "off" else
               "(has not run since|last ran \\d+ steps? ago)"))
        for marker, path in [("metric", "<Metric>.correct"),
                             ("list", "<list>[0]"),
                             ("array", re.compile(r"<Pair>(\.other)?\.array"))]:
            # With the collector on, a pass may have freed the older.
            h = expect(p, marker, path, root,
                       MOST if mode == "off" else range(1, STEPS + 1))
            check("gc.collect()" in h["fix"], "%s: fix %s" % (mode, h["fix"]))
            check(("turned the collector off" in h["fix"]) == (mode == "off"),
                  "%s: fix %s" % (mode, h["fix"]))
        check(p.held("outside") == [],
              "%s: memory held from outside Python has no holder: %s"
              % (mode, p.held("outside")))
        p.cleanup()


def group_quiet():
    """The search keeps nothing alive, runs no collection, makes no
    object, leaves the collector as it was."""
    p = Program("quiet", QUIET)
    off = Program("quiet_off", QUIET, env={"LEAKWATCH_HOLDERS": "0"})
    expect(p, "alloc", "losses[%d]" % (STEPS - 1),
           p.root_of("train", "train"), MOST, first=True)
    try:
        got = json.loads(p.stdout.strip().splitlines()[-1])
        base = json.loads(off.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        check(False, "quiet: no result: %r %r" % (p.stdout, off.stdout))
        return
    check(got["freed"], "the search kept a local alive")
    # SIGALRM every millisecond through five searches of 300,000 objects
    # and more: some land inside a search (none when the search is off).
    alarms = got["alarms"]
    check(alarms["raised"] >= 1 and alarms["caught"] == alarms["raised"],
          "a timeout raised by a signal handler during a search reaches the "
          "program: %s" % alarms)
    check(got["passes"] == [], "collections ran: %s" % got["passes"])
    for state in ("on", "off"):
        check(got[state]["stats"], "collector %s: gc.get_stats() moved"
              % state)
        check(got[state]["enabled"], "collector %s: gc.isenabled() changed"
              % state)
        check_eq(got[state]["delta"], base[state]["delta"],
                 "collector %s: gc.get_count() across snapshot(), with the "
                 "search and without" % state)
    p.cleanup()
    off.cleanup()


def group_budget():
    """A budget of a microsecond: the search is cut, says so, and the
    program goes on."""
    p = Program("budget", BUDGET, env={"LEAKWATCH_HOLDERS_BUDGET": "0.001"})
    check("alive" in p.stdout, "the program went on: %r" % p.stdout)
    expect(p, "near", "recent[%d]" % (STEPS - 1),
           p.root_of("train", "train"), MOST, cut=True, first=True)
    held = p.held("deep")
    check(held == [] or all(h["cut"] for h in held),
          "behind 100,000 lists: %s" % held)
    check("ran out of time" in p.text, "the text report says it was cut\n"
          + p.text)
    p.cleanup()


GROUPS = {
    "locals": group_locals,
    "paths": group_paths,
    "hostile": group_hostile,
    "frames": group_frames,
    "cycles": group_cycles,
    "quiet": group_quiet,
    "budget": group_budget,
}


def main():
    name = sys.argv[1] if len(sys.argv) > 1 else ""
    if name not in GROUPS:
        print("usage: holders_walk_test.py {%s}" % ",".join(GROUPS))
        return 2
    if not os.environ.get("LW_LIB"):
        print("LW_LIB is not set: run through meson test")
        return SKIP
    GROUPS[name]()
    return finish()


if __name__ == "__main__":
    sys.exit(main())
