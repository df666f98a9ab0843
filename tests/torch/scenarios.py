# SPDX-License-Identifier: MIT
"""The seed leak stories and leak-free controls, written as ordinary PyTorch
training code: an nn.Module, a real optimizer, loss.backward(), a
DataLoader. The torch suite runs them on the stand-in GPU in every test run
(test_torch.py); the gpu suite runs the same file on a real GPU.

Each function is one scenario. The line a test expects to lead the finding
is marked `# @lead`. Each scenario records torch.cuda.memory_allocated()
after every step and the number of optimizer steps it made, and writes them
as JSON to OUT, so that a test can compare what leakwatch measured with
PyTorch's own counter on the same run.

Usage: scenarios.py CASE STEPS OUT [PYTHON_DIR [held|released]]
(PYTHON_DIR: where the leakwatch helper module is, for phase marks.)

held (the default): what the story kept stays live to the program's end,
as a job's memory is when it runs out. released: main() calls the story and
lets go of it, as most training code does (its loop in train(), called from
main()): what the loop kept dies when the function returns, and only what
happened during the steps shows the leak.
"""
import collections
import copy
import ctypes
import functools
import gc
import json
import os
import sys

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

DEVICE = "cuda"
BATCH = 64


class MLP(nn.Module):
    def __init__(self, width=512):
        super().__init__()
        self.fc1 = nn.Linear(256, width)
        self.fc2 = nn.Linear(width, 10)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))  # @lead (eval_grad's graph)


def batches(steps, batch=BATCH):
    """steps batches from a DataLoader over a small data set, on the device."""
    data = TensorDataset(torch.randn(batch * 8, 256),
                         torch.randint(0, 10, (batch * 8,)))
    loader = DataLoader(data, batch_size=batch, shuffle=True)
    done = 0
    while True:
        for x, y in loader:
            if done == steps:
                return
            yield done, x.to(DEVICE), y.to(DEVICE)  # @lead (kept inputs)
            done += 1


def caching():
    """Whether PyTorch's caching allocator is on (it keeps the counters)."""
    return os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING", "0") in ("", "0")


def helper():
    """leakwatch's Python helper (step and phase marks), from PYTHON_DIR."""
    sys.path.insert(0, sys.argv[4])
    import leakwatch
    return leakwatch


class Record(object):
    """What the program itself saw: memory_allocated() and
    memory_reserved() after each step (the device's used bytes when the
    cache is off), the most of both (max_memory_allocated(),
    max_memory_reserved()), how
    many times an optimizer stepped, and, for a leak that does not grow, the
    bytes it holds that it should not (held)."""

    def __init__(self):
        self.allocated = []
        self.reserved = []
        self.optimizer_steps = 0
        self.iterations = 0
        self.held = None
        # LW_SNAPSHOT_AT=N: leakwatch.snapshot() (who holds it) at the Nth
        # step's end, or at the start of the iteration after it where a
        # scenario asks (a loop whose leak lives between steps).
        self.snapshot_at = int(os.environ.get("LW_SNAPSHOT_AT", "0"))

    def snapshot(self):
        helper().snapshot()

    def iteration_start(self):
        if self.snapshot_at and self.iterations == self.snapshot_at:
            self.snapshot()

    def step(self):
        torch.cuda.synchronize()
        if caching():
            self.allocated.append(torch.cuda.memory_allocated())
            self.reserved.append(torch.cuda.memory_reserved())
        else:
            # Without the cache, memory_allocated() counts nothing; every
            # tensor is its own cudaMalloc, seen in the device's free bytes.
            free, total = torch.cuda.mem_get_info()
            self.allocated.append(total - free)
        self.iterations += 1
        if self.snapshot_at and self.iterations == self.snapshot_at:
            self.snapshot()

    def count(self, optimizer):
        def hook(opt, args, kwargs):
            self.optimizer_steps += 1
        optimizer.register_step_post_hook(hook)
        return optimizer

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"allocated": self.allocated, "iterations": self.iterations,
                       "optimizer_steps": self.optimizer_steps,
                       "held": self.held, "reserved": self.reserved,
                       "max_allocated": torch.cuda.max_memory_allocated(),
                       "max_reserved": torch.cuda.max_memory_reserved()}, f)


# ---- the seed stories ----

def torchtitan(steps, rec):
    """The loss of every step kept for a log that never comes (logging off)."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.AdamW(model.parameters(), lr=1e-3))
    log_freq = 0
    losses_since_last_log = []
    for step, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)  # @lead
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses_since_last_log.append(loss)
        if log_freq and step % log_freq == 0:
            losses_since_last_log.clear()
        rec.step()
    return losses_since_last_log


class Accuracy(nn.Module):
    """A metric that refers to itself, as Composer's torchmetrics objects
    do: a copy of it is freed only by the cycle collector."""

    def __init__(self):
        super().__init__()
        self.register_buffer("correct", torch.zeros(1024, device=DEVICE))
        self.me = self

    def update(self, out):
        self.correct += out.sum()


class Trainer(object):
    def __init__(self):
        self.model = MLP().to(DEVICE)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        self.metrics = Accuracy()
        self.batch_metrics = []


def composer(steps, rec, collect=True, keep=False):
    """A deep copy of the metrics every batch (kept on the trainer with
    keep)."""
    if not collect:
        gc.disable()
    trainer = Trainer()
    rec.count(trainer.opt)
    for _, x, y in batches(steps):
        out = trainer.model(x)
        loss = F.cross_entropy(out, y)
        trainer.opt.zero_grad()
        loss.backward()
        trainer.opt.step()
        metrics = copy.deepcopy(trainer.metrics)  # @lead
        metrics.update(out.detach())
        if keep:
            trainer.batch_metrics.append(metrics)
        del metrics
        rec.step()


def composer_no_gc(steps, rec):
    composer(steps, rec, collect=False)


def composer_kept(steps, rec):
    """The copies kept in a list on the trainer, as a logger would."""
    composer(steps, rec, keep=True)


class GradBufferLoss(torch.autograd.Function):
    """A loss that computes its gradient in the forward pass and keeps it on
    ctx, as warp-ctc's CTC loss does: an attribute of ctx, not a saved
    tensor, so backward() does not release it; it dies with the graph, when
    nothing refers to the loss any more."""

    @staticmethod
    def forward(ctx, logits):
        ctx.grad = torch.softmax(logits, dim=1) * 2  # @lead
        return logits.square().mean()

    @staticmethod
    def backward(ctx, g):
        return ctx.grad * g


def frontend(x, frames=64):
    """Feature extraction on the device, as ESPnet's frontends do: a
    spectrogram-sized transient, pooled to the features."""
    with torch.no_grad():
        spec = x.repeat(1, frames)
        return spec.view(len(x), frames, -1).mean(1)


def espnet(steps, rec):
    """The previous step's retval alive while the next step's frontend and
    forward run: its gradient buffer adds to the step's peak."""
    # An encoder and an output layer over a large vocabulary: the loss's
    # gradient buffer (frames x vocabulary) is large, as in speech
    # recognition.
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 4096)).to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    retval = None
    for _, x, _y in batches(steps, batch=2048):
        rec.iteration_start()
        retval = {"loss": GradBufferLoss.apply(model(frontend(x)))}
        opt.zero_grad()
        retval["loss"].backward()
        opt.step()
        rec.step()
    # What the previous step's retval keeps: its gradient buffer.
    rec.held = retval["loss"].grad_fn.grad.untyped_storage().nbytes()
    return retval


class PromptHandler(object):
    def __init__(self, encoder):
        self.encoder = encoder


def simpletuner(steps, rec):
    """Text encoders loaded in a phase and "unloaded", while a prompt
    handler and an embedding cache still hold them."""
    leakwatch = helper()
    _embedding_cache = {}
    with leakwatch.phase("text_encoder"):
        encoders = [nn.Linear(1024, 1024).to(DEVICE)  # @lead
                    for _ in range(3)]
        prompt = torch.randn(8, 1024, device=DEVICE)
        with torch.no_grad():
            embeds = encoders[2](encoders[1](encoders[0](prompt)))
        _embedding_cache["tok"] = encoders[0].weight
        handler = PromptHandler(encoders[1])
        del encoders
    # What the "unloaded" encoders still hold: one weight, and a whole module.
    kept = [_embedding_cache["tok"], *handler.encoder.parameters()]
    rec.held = sum(t.untyped_storage().nbytes() for t in kept)
    del kept
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    for _, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y) + embeds.mean() * 0
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.step()
    return _embedding_cache, handler


def eval_grad(steps, rec):
    """Evaluation without no_grad(), summing losses: every forward's graph
    is kept by the running total."""
    leakwatch = helper()
    model = MLP().to(DEVICE)
    model.eval()
    val_total = 0
    for _, x, y in batches(steps):
        out = model(x)
        val_total = val_total + F.cross_entropy(out, y)
        rec.step()
        leakwatch.step()  # no optimizer: each batch is a marked step
    return val_total


# ---- leak-free controls ----

def control_adam(steps, rec):
    """Adam's state, made lazily at the first step."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.Adam(model.parameters()))
    for _, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.step()


def control_accumulation(steps, rec, accumulate=4):
    """Gradient accumulation: four micro-batches per optimizer step."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9))
    for i, x, y in batches(steps * accumulate):
        loss = F.cross_entropy(model(x), y) / accumulate
        loss.backward()
        if i % accumulate == accumulate - 1:
            opt.step()
            opt.zero_grad()
            rec.step()


def control_eval(steps, rec):
    """Periodic evaluation under no_grad(), losses kept as floats."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    losses = []
    for step, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if step % 5 == 4:
            model.eval()
            with torch.no_grad():
                losses.append(F.cross_entropy(model(x), y).item())
            model.train()
        rec.step()


def control_cache(steps, rec):
    """A cache of per-shape masks that fills in its first steps, then only
    hits."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    masks = {}
    for step, x, y in batches(steps):
        key = step % 6
        if key not in masks:
            masks[key] = torch.ones(BATCH, 512 + 64 * key, device=DEVICE)
        loss = F.cross_entropy(model(x), y) + masks[key].mean() * 0
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.step()


class Node(object):
    """A step's scratch state in a reference cycle: freed by the cycle
    collector, not when the step ends."""

    def __init__(self, tensor):
        self.tensor = tensor
        self.me = self


def control_gc(steps, rec):
    """Frees that wait for the collector, which the loop runs every step:
    nothing piles up."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    for _, x, y in batches(steps):
        out = model(x)
        scratch = Node(out.detach() * 2)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        del scratch
        gc.collect()
        rec.step()


# ---- step detection ----

def steps_two_optimizers(steps, rec):
    """A generator and a discriminator, each with its own optimizer: one
    iteration is one step."""
    gen, disc = MLP().to(DEVICE), MLP().to(DEVICE)
    opt_g = rec.count(torch.optim.Adam(gen.parameters()))
    opt_d = torch.optim.Adam(disc.parameters())
    for _, x, y in batches(steps):
        opt_d.zero_grad()
        F.cross_entropy(disc(x), y).backward()
        opt_d.step()
        opt_g.zero_grad()
        F.cross_entropy(gen(x), y).backward()
        opt_g.step()
        rec.step()


def steps_grad_scaler(steps, rec):
    """Mixed precision with a GradScaler: a step it skips (inf gradients)
    runs no optimizer step, and counts as none."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    scaler = torch.amp.GradScaler("cuda")
    for _, x, y in batches(steps):
        with torch.autocast("cuda", dtype=torch.float16):
            loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        rec.step()


# ---- more kinds of leak, each with its fix applied ----

def growing_buffer(steps, rec, fixed=False):
    """Evaluation that gathers its logits by concatenating each batch's
    onto all before it, as the old Trainer did: one tensor made anew,
    larger, every batch. Fixed: each batch's piece kept on the host,
    concatenated once."""
    leakwatch = helper()
    model = MLP().to(DEVICE)
    model.eval()
    all_logits = torch.zeros(0, 10, device=DEVICE)
    pieces = []
    with torch.no_grad():
        for _, x, _y in batches(steps):
            logits = model(x)
            if fixed:
                pieces.append(logits.cpu())
            else:
                all_logits = torch.cat([all_logits, logits])  # @lead
            rec.step()
            leakwatch.step()
    if fixed:
        all_logits = torch.cat(pieces)
    return all_logits


def growing_buffer_fixed(steps, rec):
    return growing_buffer(steps, rec, fixed=True)


def risky_step(model, x, y):
    """A step that fails after its forward pass, as a bad batch does."""
    logits = model(x)  # @lead
    loss = F.cross_entropy(logits, y)
    if loss.numel():
        raise ValueError("bad batch")
    return loss


def kept_exception(steps, rec, fixed=False):
    """Errors kept for a summary at the end: each exception's traceback
    keeps the frame of the step that raised it, and its tensors. Fixed:
    the message is kept, not the exception."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    errors = []
    for _, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        try:
            risky_step(model, x, y)
        except ValueError as e:
            errors.append(str(e) if fixed else e)
        rec.step()
    return errors


def kept_exception_fixed(steps, rec):
    return kept_exception(steps, rec, fixed=True)


def uncollected_cycle(steps, rec, fixed=False):
    """Scratch state in a reference cycle, with the collector turned off
    for speed: every step's cycle, and its tensor, stays forever. Fixed:
    the back-reference is cleared once the step is done."""
    gc.disable()
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    for _, x, y in batches(steps):
        out = model(x)
        scratch = Node(out.detach() * 2)  # @lead
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if fixed:
            scratch.me = None
        del scratch
        rec.step()
    gc.enable()


def uncollected_cycle_fixed(steps, rec):
    uncollected_cycle(steps, rec, fixed=True)


class Probe(nn.Module):
    """A layer whose output a forward hook keeps, as feature probes and
    activation statistics do."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(256, 512)

    def forward(self, x):
        return F.relu(self.fc(x))  # @lead


def kept_activations(steps, rec, fixed=False):
    """A forward hook that stores each batch's activations, detached:
    no graph is kept, but every tensor is. Fixed: a host copy is kept."""
    probe = Probe().to(DEVICE)
    head = nn.Linear(512, 10).to(DEVICE)
    opt = rec.count(torch.optim.SGD(list(probe.parameters()) +
                                    list(head.parameters()), lr=0.01))
    stored = []
    probe.register_forward_hook(
        lambda module, inputs, output: stored.append(
            output.detach().cpu() if fixed else output.detach()))
    for _, x, y in batches(steps):
        loss = F.cross_entropy(head(probe(x)), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.step()
    return stored


def kept_activations_fixed(steps, rec):
    return kept_activations(steps, rec, fixed=True)


def torchtitan_fixed(steps, rec):
    """torchtitan's loop with the fix the finding gives: the number is
    kept, not the tensor."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.AdamW(model.parameters(), lr=1e-3))
    losses_since_last_log = []
    for step, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses_since_last_log.append(loss.item())
        rec.step()
    return losses_since_last_log


def eval_grad_fixed(steps, rec):
    """The evaluation under torch.no_grad(), adding numbers."""
    leakwatch = helper()
    model = MLP().to(DEVICE)
    model.eval()
    val_total = 0
    with torch.no_grad():
        for _, x, y in batches(steps):
            out = model(x)
            val_total = val_total + F.cross_entropy(out, y).item()
            rec.step()
            leakwatch.step()
    return val_total


def espnet_adamw(steps, rec, fixed=False):
    """ESPnet's story with AdamW: the optimizer's state, made at the
    first step, holds the run's highest peak, but every later step's peak
    still holds the previous step's gradient buffer. Fixed: retval is let
    go of once backward() has run."""
    model = nn.Sequential(nn.Linear(256, 256), nn.ReLU(),
                          nn.Linear(256, 4096)).to(DEVICE)
    opt = rec.count(torch.optim.AdamW(model.parameters(), lr=1e-3))
    retval = None
    for _, x, _y in batches(steps, batch=2048):
        retval = {"loss": GradBufferLoss.apply(model(frontend(x)))}
        opt.zero_grad()
        retval["loss"].backward()
        opt.step()
        if fixed:
            retval = None
        rec.step()
    if not fixed:
        rec.held = retval["loss"].grad_fn.grad.untyped_storage().nbytes()
    return retval


def espnet_fixed(steps, rec):
    return espnet_adamw(steps, rec, fixed=True)


def composer_fixed(steps, rec):
    """Composer's loop with the fix: one metric object, reset and reused
    instead of copied every batch."""
    trainer = Trainer()
    rec.count(trainer.opt)
    metrics = Accuracy()
    for _, x, y in batches(steps):
        out = trainer.model(x)
        loss = F.cross_entropy(out, y)
        trainer.opt.zero_grad()
        loss.backward()
        trainer.opt.step()
        metrics.correct.zero_()
        metrics.update(out.detach())
        rec.step()
    metrics.me = None


def simpletuner_fixed(steps, rec):
    """SimpleTuner's phase with the fix: the last references dropped (the
    cache entry, the handler), then gc.collect() and empty_cache()."""
    leakwatch = helper()
    _embedding_cache = {}
    with leakwatch.phase("text_encoder"):
        encoders = [nn.Linear(1024, 1024).to(DEVICE) for _ in range(3)]
        prompt = torch.randn(8, 1024, device=DEVICE)
        with torch.no_grad():
            embeds = encoders[2](encoders[1](encoders[0](prompt)))
        _embedding_cache["tok"] = encoders[0].weight
        handler = PromptHandler(encoders[1])
        del encoders
        del _embedding_cache["tok"], handler
        gc.collect()
        torch.cuda.empty_cache()
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    for _, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y) + embeds.mean() * 0
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.step()


def cycle_delayed(steps, rec):
    """A step's scratch state in a reference cycle, the collector left to
    its own schedule: each step's tensor waits for a pass. Its fix is
    control_gc (a collection at every step's end)."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    gc.set_threshold(100000, 1000, 1000)
    for _, x, y in batches(steps):
        out = model(x)
        scratch = Node(out.detach() * 2)  # @lead
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        del scratch
        rec.step()
    gc.set_threshold(700, 10, 10)


def two_holders(steps, rec):
    """Two leaks in one loop: the losses kept in a list, and each batch's
    outputs kept in a dict by step. Two causes: two findings."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    losses, outputs = [], {}
    for step, x, y in batches(steps):
        out = model(x)
        loss = F.cross_entropy(out, y)  # @lead (the losses)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss)
        outputs[step] = out.detach()
        rec.step()
    return losses, outputs


def train_eval_grad(steps, rec):
    """Training with an evaluation batch every step whose loss is added
    to a running total as a tensor, no torch.no_grad(): one bug, whose
    graph keeps every evaluation batch's activations."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    val_total = 0
    for _, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.eval()
        val_total = val_total + F.cross_entropy(model(x), y)
        model.train()
        rec.step()
    return val_total


# ---- what is kept, and what keeps it: each with its fix applied ----

def kept_outputs(steps, rec, fixed=False):
    """Each step's validation logits kept on the device for a report at
    the end, made under torch.no_grad(): no graph, but every tensor.
    Fixed: a host copy is kept."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    val_logits = []
    for _, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            logits = model(x)
        val_logits.append(logits.cpu() if fixed else logits)
        rec.step()
    return val_logits


def kept_outputs_fixed(steps, rec):
    return kept_outputs(steps, rec, fixed=True)


def unbounded_cache(steps, rec, fixed=False):
    """Each batch's embeddings cached by the batch's id, a key no later
    batch asks for again: the cache only grows. Fixed: an OrderedDict
    bounded to its last 8 entries."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    cache = collections.OrderedDict()
    for step, x, y in batches(steps):
        key = f"batch-{step}"
        if key not in cache:
            with torch.no_grad():
                cache[key] = model.fc1(x)  # @lead
            if fixed and len(cache) > 8:
                cache.popitem(last=False)
        loss = F.cross_entropy(model(x), y) + cache[key].mean() * 0
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.step()
    return cache


def unbounded_cache_fixed(steps, rec):
    return unbounded_cache(steps, rec, fixed=True)


def unbounded_lru(steps, rec, fixed=False):
    """Prompt embeddings memoised with functools.lru_cache(maxsize=None),
    one entry per prompt id, and every step asks for a new prompt.
    Fixed: lru_cache(maxsize=8)."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))

    @functools.lru_cache(maxsize=8 if fixed else None)
    def prompt_embedding(prompt_id):
        ids = torch.full((BATCH, 256), prompt_id / 1000, device=DEVICE)
        with torch.no_grad():
            return model.fc1(ids)  # @lead

    for step, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y) + \
            prompt_embedding(step).mean() * 0
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.step()
    return prompt_embedding


def unbounded_lru_fixed(steps, rec):
    return unbounded_lru(steps, rec, fixed=True)


def kept_inputs(steps, rec, fixed=False):
    """Every input batch kept for a replay of the hard examples that
    never comes: the batches stay on the device. Fixed: a host copy."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    replay = []
    for _, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        replay.append(x.cpu() if fixed else x)
        rec.step()
    return replay


def kept_inputs_fixed(steps, rec):
    return kept_inputs(steps, rec, fixed=True)


def metric_state(steps, rec, fixed=False):
    """torchmetrics' AveragePrecision updated every step and never reset:
    its list states (preds, target) keep every batch. Fixed: computed and
    reset at the end of each epoch (8 batches)."""
    from torchmetrics.classification import MulticlassAveragePrecision

    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    average_precision = MulticlassAveragePrecision(
        num_classes=10, validate_args=False).to(DEVICE)
    epoch_scores = []
    for step, x, y in batches(steps):
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        average_precision.update(out.detach(), y)  # @lead
        if fixed and step % 8 == 7:
            # compute() reads the values the kernels made (bincount of
            # the targets): on a real GPU only, since the stand-in's
            # kernels make none. reset() is what lets go of the states.
            if os.environ.get("LW_REAL_GPU") == "1":
                epoch_scores.append(average_precision.compute().item())
            average_precision.reset()
        rec.step()
    return average_precision


def metric_state_fixed(steps, rec):
    return metric_state(steps, rec, fixed=True)


def metric_state_cat(steps, rec, fixed=False):
    """Every batch's scores collected in torchmetrics' CatMetric, to report
    their spread at the end: its list state keeps each batch. The scores
    are the program's own (no metric code made them): the metric's state
    that holds them tells. Fixed: computed and reset each epoch."""
    from torchmetrics import CatMetric

    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    scores_seen = CatMetric(nan_strategy="disable").to(DEVICE)
    spreads = []
    for step, x, y in batches(steps):
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            scores = out.softmax(1).amax(1)  # @lead
        scores_seen.update(scores)
        if fixed and step % 8 == 7:
            spreads.append(scores_seen.compute().std().item())
            scores_seen.reset()
        rec.step()
    return scores_seen


def metric_state_cat_fixed(steps, rec):
    return metric_state_cat(steps, rec, fixed=True)


def metric_per_step(steps, rec, fixed=False):
    """A torchmetrics metric made anew for every batch's figure and
    dropped: a Metric refers to itself (its wrapped update() is bound to
    it), so each one, and its states on the device, waits for the cycle
    collector. Nothing is copied. Fixed: one metric, reset every batch."""
    from torchmetrics.classification import MulticlassConfusionMatrix

    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    gc.set_threshold(100000, 1000, 1000)
    reused = MulticlassConfusionMatrix(num_classes=512).to(DEVICE)
    for _, x, y in batches(steps):
        out = model(x)
        loss = F.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if fixed:
            reused.reset()
        else:
            reused = MulticlassConfusionMatrix(num_classes=512)
            reused = reused.to(DEVICE)  # @lead
        rec.step()
    gc.set_threshold(700, 10, 10)


def metric_per_step_fixed(steps, rec):
    metric_per_step(steps, rec, fixed=True)


def retry_step(model, optimizer, x, y):
    """A step that fails once its forward pass has run, as a flaky data
    source or an out-of-memory retry does."""
    logits = model(x)
    loss = F.cross_entropy(logits, y)
    optimizer.zero_grad()
    if loss.numel():
        raise RuntimeError("transient failure")
    return loss


def kept_exception_retry(steps, rec, fixed=False):
    """A retry loop that keeps sys.exc_info() of each failure for a report:
    each traceback keeps the failed step's frame, its model, optimizer
    and tensors. Fixed: the formatted traceback is kept."""
    import traceback
    model = MLP().to(DEVICE)
    optimizer = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    reports = []
    for _, x, y in batches(steps):
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        for attempt in range(1):
            try:
                retry_step(model, optimizer, x * 1.0, y)
            except RuntimeError:
                reports.append(traceback.format_exc() if fixed
                               else sys.exc_info())
        rec.step()
    return reports


def kept_exception_retry_fixed(steps, rec):
    return kept_exception_retry(steps, rec, fixed=True)


# ---- the allocator's pool ----

def curriculum(steps, rec):
    """A curriculum: the sequence length rises every step, and each step's
    activations are freed at its end. Nothing leaks; PyTorch's native pool
    cannot reuse the smaller blocks for the larger requests and reserves
    new segments (expandable_segments:True grows one segment instead)."""
    model = nn.Sequential(nn.Linear(256, 256), nn.GELU(),
                          nn.Linear(256, 256)).to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    for step in range(steps):
        seq = 2048 + step * 96
        x = torch.randn(8, seq, 256, device=DEVICE)  # @lead (the rising size)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        del x, loss
        rec.step()


def variable_batch(steps, rec):
    """Batch sizes that vary from step to step within a fixed range (the
    last batch of an epoch, bucketed sequence lengths): the pool's floor
    stays flat once the largest size has been seen."""
    model = MLP().to(DEVICE)
    opt = rec.count(torch.optim.SGD(model.parameters(), lr=0.01))
    sizes = [64, 48, 96, 32, 80, 64, 128, 16]
    for step in range(steps):
        n = sizes[step % len(sizes)]
        x = torch.randn(n, 256, device=DEVICE)
        y = torch.randint(0, 10, (n,), device=DEVICE)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        rec.step()


CASES = {f.__name__: f for f in (
    torchtitan, composer, composer_no_gc, composer_kept, espnet, simpletuner, eval_grad,
    control_adam, control_accumulation, control_eval, control_cache, control_gc,
    steps_two_optimizers, steps_grad_scaler,
    growing_buffer, growing_buffer_fixed, kept_exception,
    kept_exception_fixed, uncollected_cycle, uncollected_cycle_fixed,
    kept_activations, kept_activations_fixed, torchtitan_fixed,
    eval_grad_fixed, espnet_adamw, espnet_fixed, composer_fixed,
    simpletuner_fixed, cycle_delayed, two_holders, train_eval_grad,
    curriculum, variable_batch, kept_outputs, kept_outputs_fixed,
    unbounded_cache, unbounded_cache_fixed, unbounded_lru, unbounded_lru_fixed,
    kept_inputs, kept_inputs_fixed, metric_state, metric_state_fixed,
    kept_exception_retry, kept_exception_retry_fixed, metric_state_cat,
    metric_state_cat_fixed, metric_per_step, metric_per_step_fixed)}

def main():
    record = Record()
    case, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    released = len(sys.argv) > 5 and sys.argv[5] == "released"
    if released:
        CASES[case](steps, record)
    else:
        kept = CASES[case](steps, record)
        # What the story kept stays live to the program's end, but
        # through no Python object of this harness: a holder found at the
        # end is the story's own, or none.
        ctypes.pythonapi.Py_IncRef(ctypes.py_object(kept))
        del kept
    torch.cuda.synchronize()
    record.write(out)
    print("ok")


if __name__ == "__main__":
    main()
