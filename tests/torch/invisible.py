# SPDX-License-Identifier: MIT
"""Programs that would notice being watched, if the holder search were
visible to them: each is an ordinary training loop, in a function, that
leaks (a tensor a step kept in a list local to the function, an optimizer
stepping each iteration), so that leakwatch searches for the holder while
the loop runs, and that does one thing a search could disturb: takes a
signal, relies on the collector's schedule, hooks autograd's saved tensors,
patches a function, runs threads, warns, profiles itself.

test_invisible.py runs each case twice on the stand-in GPU, without
leakwatch and under `leakwatch run`, and compares what it printed: nothing
here calls leakwatch or knows of it.

Usage: invisible.py CASE STEPS AT [OUT]
  STEPS  optimizer steps to run
  AT     the step at whose end (once its optimizer stepped) the signal,
         the thread or the fork of the case begins: the test gives the
         step whose end has the first search (LEAKWATCH_MIN_STEPS + 1)
  OUT    where a case writes what it observed as JSON, if it does

A search during the run walks the program's objects from its frames'
locals; each case keeps a data set index of INDEX small objects alive in
its frame, met before the list that holds the leak (one level deeper), so
that a search takes long enough (about a second on the test machine) for a
signal, a thread or a fork to land inside it.
"""
import cProfile
import gc
import json
import os
import pstats
import signal
import sys
import threading
import time
import warnings
from unittest import mock

import torch
import torch.nn.functional as F
from torch import nn

DEVICE = "cuda"
INDEX = 1_000_000


class MLP(nn.Module):
    def __init__(self, width=256):
        super().__init__()
        self.fc1 = nn.Linear(64, width)
        self.fc2 = nn.Linear(width, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def data_index(n=INDEX):
    """A data set's index: (sample id, [labels]) for each sample (a list
    of labels each, which a walk enters: a search reads them all before
    the leak's list, one level deeper)."""
    return [(i, [i % 10]) for i in range(1000, 1000 + n)]


def batches(steps, batch=32, count=128):
    """steps batches from a small data set (1 MiB) that lives on the
    device, copied there before the first step."""
    gen = torch.Generator().manual_seed(0)
    data = [(torch.randn(batch, 64, generator=gen).to(DEVICE),
             torch.randint(0, 10, (batch,), generator=gen).to(DEVICE))
            for _ in range(count)]
    for step in range(steps):
        x, y = data[step % count]
        yield step, x, y


def setup():
    model = MLP().to(DEVICE)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    return model, opt


def train_step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss


def log(step, running):
    """The step's log line, for the program's own reader."""
    return f"step {step}"


def out_path():
    return sys.argv[4] if len(sys.argv) > 4 else None


# ---- signals ----

def sigint(steps, at):
    """Ctrl-C as step AT ends (a timer thread kills the process with
    SIGINT 0.1 s after its optimizer stepped). The next step waits for its
    data long enough that the interrupt lands before that step's log line
    and optimizer step, wherever it lands from the timer on: the program
    stops with KeyboardInterrupt after AT + 1 steps, AT + 1 lines logged
    (a search that holds the interpreter past the 0.1 s only delays it)."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    done = 0
    try:
        for step, x, y in batches(steps):
            if step == at + 1:
                time.sleep(3)   # a shard boundary: the next file is read
            print(f"step {step}", flush=True)
            loss = train_step(model, opt, x, y)
            done += 1
            if step == at:
                threading.Timer(0.1, os.kill,
                                (os.getpid(), signal.SIGINT)).start()
            history["train"]["losses"].append(loss)
            running = running + loss.detach()
    except KeyboardInterrupt:
        print(f"KeyboardInterrupt after {done} steps", flush=True)
        return 130
    print(f"finished {done} steps of {len(index)} samples", flush=True)
    return 0


def sigterm(steps, at):
    """A scheduler's preemption notice (SIGTERM) as step AT ends, as in
    sigint; the program's handler saves and exits (sys.exit), as cluster
    jobs do: after AT + 1 steps."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    progress = {"done": 0}

    def on_sigterm(signum, frame):
        print(f"SIGTERM after {progress['done']} steps: checkpoint saved, "
              "exiting", flush=True)
        sys.exit(143)

    signal.signal(signal.SIGTERM, on_sigterm)
    for step, x, y in batches(steps):
        if step == at + 1:
            time.sleep(3)   # a shard boundary: the next file is read
        print(f"step {step}", flush=True)
        loss = train_step(model, opt, x, y)
        progress["done"] += 1
        if step == at:
            threading.Timer(0.1, os.kill,
                            (os.getpid(), signal.SIGTERM)).start()
        history["train"]["losses"].append(loss)
        running = running + loss.detach()
    print(f"finished {progress['done']} steps of {len(index)} samples",
          flush=True)
    return 0


class StepTimeout(Exception):
    pass


def wait_for_data(seconds):
    """The next batch's files, read in the step (slow storage)."""
    time.sleep(seconds)


def sigalrm(steps, at):
    """A per-step timeout: SIGALRM every 5 ms, whose handler raises
    StepTimeout once the step's deadline (0.05 s after its optimizer
    stepped) has passed; every step but the first waits for its data past
    its deadline, and the loop counts the timeouts it catches. Each one
    raised must be caught."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    never = float("inf")
    state = {"deadline": never, "raised": 0, "caught": 0}

    def on_alarm(signum, frame):
        if time.monotonic() > state["deadline"]:
            state["deadline"] = never
            state["raised"] += 1
            raise StepTimeout()

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, 0.005, 0.005)
    for step, x, y in batches(steps):
        try:
            loss = train_step(model, opt, x, y)
            if step >= 1:  # the first step (the warm-up) has no deadline
                state["deadline"] = time.monotonic() + 0.05
            running = running + loss.detach()
            history["train"]["losses"].append(loss)
            wait_for_data(0.1)
            state["deadline"] = never
        except StepTimeout:
            state["caught"] += 1
    signal.setitimer(signal.ITIMER_REAL, 0)
    print(f"timeouts raised {state['raised']}, caught {state['caught']}",
          flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


# ---- the program's own objects ----

class Staging(object):
    """A host staging buffer that goes back to the pool when dropped."""
    returned = 0

    def __init__(self, lock):
        self.lock = lock

    def __del__(self):
        with self.lock:
            Staging.returned += 1


def deadlock(steps, at):
    """A prefetching thread holds a staging buffer; asked as step AT ends,
    it reads the next shard (0.2 s) and swaps its buffer for a new one.
    The buffer it drops goes back to the pool under the pool's lock, which
    the main loop holds while it logs a step. Only the thread that drops
    the last reference runs __del__: here the prefetcher, never the main
    loop, where that lock may be held already."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    pool_lock = threading.Lock()
    asked = threading.Event()
    stop = threading.Event()

    def prefetch():
        staged = Staging(pool_lock)
        while True:
            asked.wait()
            asked.clear()
            if stop.is_set():
                return
            time.sleep(0.2)                 # reading the next shard
            staged = Staging(pool_lock)     # noqa: F841 (the last goes back)

    thread = threading.Thread(target=prefetch)
    thread.start()
    try:
        for step, x, y in batches(steps):
            loss = train_step(model, opt, x, y)
            if step == at:
                asked.set()
            history["train"]["losses"].append(loss)
            running = running + loss.detach()
            with pool_lock:     # the pool's bookkeeping, and the log
                line = log(step, running)
            print(line, flush=True)
    finally:
        stop.set()
        asked.set()
        thread.join()
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


class Scratch(object):
    """A step's scratch state that refers to itself: freed by the
    collector."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.me = self


def collector(steps, at):
    """Each step leaves a reference cycle that holds 1 MiB of device
    memory, freed when the collector next runs on its own schedule. What
    the collector did and the memory it left, after every step, must not
    depend on being watched."""
    model, opt = setup()
    losses = []
    base = None
    for step, x, y in batches(steps):
        loss = train_step(model, opt, x, y)
        losses.append(loss)
        Scratch(torch.empty(1 << 18, device=DEVICE))
        torch.cuda.synchronize()
        # The collector's count of new objects, from the end of step 3
        # on: before, PyTorch's threads make one at a time of their own
        # (a few steps in, under leakwatch).
        count = gc.get_count()
        if step == 3:
            base = count[0]
        since = "-" if base is None else f"{count[0] - base:+d}"
        print(f"step {step}: objects since step 3 {since}, counts of the "
              f"older generations {count[1:]}, collections "
              f"{[s['collections'] for s in gc.get_stats()]}, allocated "
              f"{torch.cuda.memory_allocated()}", flush=True)
    return 0


def saved_tensors(steps, at):
    """Activations packed and unpacked by saved-tensor hooks (as
    activation offloading does), counted; an evaluation loss summed as a
    tensor every step, without no_grad(), keeps each evaluation's graph
    and its saved tensors (a retained graph)."""
    model, opt = setup()
    counts = {"pack": 0, "unpack": 0}

    def pack(t):
        counts["pack"] += 1
        return t

    def unpack(t):
        counts["unpack"] += 1
        return t

    val_total = 0
    for step, x, y in batches(steps):
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            train_step(model, opt, x, y)
            val_total = val_total + F.cross_entropy(model(x * 0.5), y)
        print(f"step {step}: packed {counts['pack']} unpacked "
              f"{counts['unpack']}", flush=True)
    return 0


def patched(steps, at):
    """The loop under a test's mocks: time.perf_counter wrapped to count
    the timings taken, os.path.exists and os.listdir mocked (a checkpoint
    directory that is not there). The program's calls, counted."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    counts = {"perf_counter": 0}
    real = time.perf_counter

    def perf_counter():
        counts["perf_counter"] += 1
        return real()

    with mock.patch("time.perf_counter", perf_counter), \
            mock.patch("os.path.exists", return_value=False) as exists, \
            mock.patch("os.listdir", return_value=[]) as listdir:
        for step, x, y in batches(steps):
            start = time.perf_counter()
            loss = train_step(model, opt, x, y)
            running = running + loss.detach()
            history["train"]["losses"].append(loss)
            if step == steps - 1 and not os.path.exists("checkpoints"):
                os.listdir(".")
            took = time.perf_counter() - start
            assert took >= 0
        calls = (counts["perf_counter"], exists.call_count,
                 listdir.call_count)
    print(f"time.perf_counter called {calls[0]} times, os.path.exists "
          f"{calls[1]}, os.listdir {calls[2]}", flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


# ---- threads, and a fork ----

def threads_gc(steps, at):
    """A monitoring thread reads gc.isenabled() every millisecond for the
    whole loop; the program never turns the collector off."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    stop = threading.Event()
    seen = {"off": 0, "reads": 0}

    def monitor():
        while not stop.is_set():
            seen["reads"] += 1
            if not gc.isenabled():
                seen["off"] += 1
            time.sleep(0.001)

    thread = threading.Thread(target=monitor)
    thread.start()
    for step, x, y in batches(steps):
        loss = train_step(model, opt, x, y)
        running = running + loss.detach()
        history["train"]["losses"].append(loss)
        print(log(step, running), flush=True)
    stop.set()
    thread.join()
    print(f"the monitor saw the collector off {seen['off']} times",
          flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


def threads_gc_disable(steps, at):
    """A checkpoint writer thread, started as step AT ends, turns the collector
    off while it serializes (to avoid the collector's pauses), and reads
    it back before it turns it on again."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    result = {}

    def write_checkpoint():
        time.sleep(0.1)
        gc.disable()
        time.sleep(3)           # serializing
        result["still off"] = not gc.isenabled()
        gc.enable()

    writer = None
    for step, x, y in batches(steps):
        loss = train_step(model, opt, x, y)
        if step == at:
            writer = threading.Thread(target=write_checkpoint)
            writer.start()
        running = running + loss.detach()
        history["train"]["losses"].append(loss)
        print(log(step, running), flush=True)
    writer.join()
    print(f"the checkpoint writer's gc.disable() held: "
          f"{result['still off']}", flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


def threads_warnings(steps, at):
    """A thread, started as step AT ends, silences a warning of its own with
    warnings.catch_warnings() for three seconds; after the loop, the program
    warns once per step's record, and every warning must be shown."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    shown = []
    warnings.showwarning = lambda message, *args, **kwargs: shown.append(
        str(message))

    def upload():
        time.sleep(0.1)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            time.sleep(3)       # uploading

    uploader = None
    for step, x, y in batches(steps):
        loss = train_step(model, opt, x, y)
        if step == at:
            uploader = threading.Thread(target=upload)
            uploader.start()
        running = running + loss.detach()
        history["train"]["losses"].append(loss)
        print(log(step, running), flush=True)
    uploader.join()
    for step in range(steps):
        warnings.warn(f"step {step}: no validation loss recorded")
    print(f"warnings shown: {len(shown)} of {steps}", flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


def fork(steps, at):
    """A thread, started as step AT ends, forks a child (a data worker); the
    child reports whether its collector is on, as it inherits it."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    result = {}

    def spawn_worker():
        time.sleep(0.1)
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, b"on" if gc.isenabled() else b"off")
            os._exit(0)
        os.close(w)
        result["collector"] = os.read(r, 16).decode()
        os.close(r)
        os.waitpid(pid, 0)

    spawner = None
    for step, x, y in batches(steps):
        loss = train_step(model, opt, x, y)
        if step == at:
            spawner = threading.Thread(target=spawn_worker)
            spawner.start()
        running = running + loss.detach()
        history["train"]["losses"].append(loss)
        print(log(step, running), flush=True)
    spawner.join()
    print(f"the forked worker's collector: {result['collector']}",
          flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


# ---- warnings and profilers ----

def deprecated_schedule(step):
    """A library function that warns of its deprecation."""
    warnings.warn("schedule(step) is deprecated; use schedule.step()",
                  FutureWarning)
    return 0.01


def warn_once(steps, at):
    """A library's FutureWarning, from one line, every step: Python's
    default filter shows it once."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    for step, x, y in batches(steps):
        deprecated_schedule(step)
        loss = train_step(model, opt, x, y)
        running = running + loss.detach()
        history["train"]["losses"].append(loss)
        print(log(step, running), flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


def profiled_loop(steps, model, opt, history, running):
    # The running sum last: the first point after it where the interpreter
    # may run something queued (a search asked at that step's end) is the
    # loop's jump back, in this frame. Anywhere else, the next is as likely
    # inside the profile function, where nothing is profiled.
    for step, x, y in batches(steps):
        loss = train_step(model, opt, x, y)
        history["train"]["losses"].append(loss)
        running = running + loss.detach()


def setprofile(steps, at):
    """The loop under sys.setprofile: every Python function called is
    noted, by its code's file and name (written to OUT)."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    seen = set()

    def profile(frame, event, arg):
        if event == "call":
            seen.add((frame.f_code.co_filename, frame.f_code.co_name))

    sys.setprofile(profile)
    profiled_loop(steps, model, opt, history, running)
    sys.setprofile(None)
    with open(out_path(), "w") as f:
        json.dump(sorted(seen), f)
    print(f"functions seen by the profile function: {len(seen) > 0}",
          flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


def cprofile(steps, at):
    """The loop under cProfile: its functions, by file and name, are
    written to OUT."""
    index = data_index()
    model, opt = setup()
    history = {"train": {"losses": []}}
    running = torch.zeros((), device=DEVICE)
    profiler = cProfile.Profile()
    profiler.enable()
    profiled_loop(steps, model, opt, history, running)
    profiler.disable()
    stats = pstats.Stats(profiler)
    seen = sorted((f, name) for f, _line, name in stats.stats
                  if f != "~")     # "~": functions written in C
    with open(out_path(), "w") as f:
        json.dump(seen, f)
    print(f"functions in the profile: {len(seen) > 0}", flush=True)
    print(f"finished {steps} steps of {len(index)} samples", flush=True)
    return 0


CASES = {f.__name__: f for f in (
    sigint, sigterm, sigalrm, deadlock, collector, saved_tensors, patched,
    threads_gc, threads_gc_disable, threads_warnings, fork, warn_once,
    setprofile, cprofile)}


def main():
    case, steps, at = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    return CASES[case](steps, at)


if __name__ == "__main__":
    sys.exit(main())
