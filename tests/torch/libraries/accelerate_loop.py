# SPDX-License-Identifier: MIT
"""A hand-written training loop with accelerate, as its documentation shows
(`Accelerator()`, `accelerator.prepare(...)`, `accelerator.backward(loss)`),
training a tiny GPT-2 built from a config (random weights, nothing
downloaded) on token ids, with a validation pass every 5 steps.

    accelerate_loop.py CASE STEPS OUT PYTHON_DIR

CASE:
  clean       validation under torch.no_grad(), losses summed as floats;
              the last batches and outputs of training and validation stay
              in the loop's locals until they are replaced;
  eval_graph  validation without no_grad(), losses summed as tensors and
              each validation's mean kept for a summary: every validation
              forward's graph, with the activations it saved, is kept.
  eval_graph_iter
              the same leak with one validation batch every 5 steps,
              drawn with next() from an iterator over the validation
              loader that is made anew when it runs out: the graph also
              keeps the batch's input ids (EmbeddingBackward0 saves them),
              made on the device at the two next(val_iter) lines. One
              cause: one finding, at the forward.

The line a finding must name is marked `# @lead CASE`. What the program
measured itself (scenarios.py's Record: memory_allocated() after every
step, and the optimizer's count of its steps) is written as JSON to OUT.
"""
import os
import sys

import torch
from accelerate import Accelerator
from torch.utils.data import DataLoader, Dataset
from transformers import GPT2Config, GPT2LMHeadModel, get_linear_schedule_with_warmup

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from scenarios import Record  # noqa: E402

SEQ = 32
BATCH = 8
EVAL_EVERY = 5


class TokenDataset(Dataset):
    """Sequences of random token ids, as a tokenized corpus gives them; the
    labels are the inputs (the model shifts them)."""

    def __init__(self, size, vocab, seed):
        g = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(0, vocab, (size, SEQ), generator=g)

    def __len__(self):
        return len(self.input_ids)

    def __getitem__(self, i):
        return {"input_ids": self.input_ids[i], "labels": self.input_ids[i]}


def setup(accelerator, steps, rec):
    config = GPT2Config(vocab_size=1000, n_positions=SEQ, n_embd=64,
                        n_layer=2, n_head=2)
    model = GPT2LMHeadModel(config)
    optimizer = rec.count(torch.optim.AdamW(model.parameters(), lr=5e-5))
    train_dataloader = DataLoader(TokenDataset(BATCH * steps, config.vocab_size, 0),
                                  batch_size=BATCH, shuffle=True)
    eval_dataloader = DataLoader(TokenDataset(2 * BATCH, config.vocab_size, 1),
                                 batch_size=BATCH)
    lr_scheduler = get_linear_schedule_with_warmup(optimizer, 2, steps)
    return accelerator.prepare(model, optimizer, train_dataloader,
                               eval_dataloader, lr_scheduler)


def train(accelerator, steps, rec):
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = \
        setup(accelerator, steps, rec)
    model.train()
    val_history = []
    for step, batch in enumerate(train_dataloader):
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        if step % EVAL_EVERY == EVAL_EVERY - 1:
            model.eval()
            val_loss = 0.0
            for val_batch in eval_dataloader:
                with torch.no_grad():
                    val_outputs = model(**val_batch)
                val_loss += val_outputs.loss.item()
            val_history.append(val_loss / len(eval_dataloader))
            accelerator.print(f"step {step}: validation loss {val_history[-1]:.3f}")
            model.train()
        rec.step()


def train_eval_graph(accelerator, steps, rec):
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = \
        setup(accelerator, steps, rec)
    model.train()
    val_history = []
    for step, batch in enumerate(train_dataloader):
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        if step % EVAL_EVERY == EVAL_EVERY - 1:
            model.eval()
            val_loss = 0
            for val_batch in eval_dataloader:
                val_outputs = model(**val_batch)  # @lead eval_graph
                val_loss = val_loss + val_outputs.loss
            val_history.append(val_loss / len(eval_dataloader))
            accelerator.print(f"step {step}: validation loss {val_history[-1]}")
            model.train()
        rec.step()


def train_eval_graph_iter(accelerator, steps, rec):
    model, optimizer, train_dataloader, eval_dataloader, lr_scheduler = \
        setup(accelerator, steps, rec)
    model.train()
    val_iter = iter(eval_dataloader)
    val_losses = []
    for step, batch in enumerate(train_dataloader):
        outputs = model(**batch)
        loss = outputs.loss
        accelerator.backward(loss)
        optimizer.step()
        lr_scheduler.step()
        optimizer.zero_grad()
        if step % EVAL_EVERY == EVAL_EVERY - 1:
            model.eval()
            try:
                val_batch = next(val_iter)
            except StopIteration:
                val_iter = iter(eval_dataloader)
                val_batch = next(val_iter)
            val_outputs = model(**val_batch)  # @lead eval_graph_iter
            val_losses.append(val_outputs.loss)
            accelerator.print(f"step {step}: validation loss {val_losses[-1]}")
            model.train()
        rec.step()


def main():
    case, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    loops = {"clean": train, "eval_graph": train_eval_graph,
             "eval_graph_iter": train_eval_graph_iter}
    if case not in loops:
        sys.exit(f"accelerate_loop.py: no case {case!r}")
    rec = Record()
    accelerator = Accelerator()
    loops[case](accelerator, steps, rec)
    torch.cuda.synchronize()
    rec.write(out)
    print("ok")


if __name__ == "__main__":
    main()
