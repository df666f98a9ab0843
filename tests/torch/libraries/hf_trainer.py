# SPDX-License-Identifier: MIT
"""transformers' Trainer fine-tuning a tiny BERT classifier, written as the
library's documentation shows: a model built from a config (random
weights, nothing downloaded), a dataset of token ids, TrainingArguments
with evaluation every few steps and compute_metrics.

    hf_trainer.py CASE STEPS OUT PYTHON_DIR

CASE:
  clean         the Trainer as documented;
  callback      a TrainerCallback that keeps each step's gradient norm, a
                tensor on the device, in a list (per-step values kept);
  compute_loss  a compute_loss override, written as the Trainer's
                documentation shows, that keeps each loss tensor in a list
                on the trainer.

The line a finding must name is marked `# @lead CASE`. What the program
measured itself (scenarios.py's Record: memory_allocated() after every
optimizer step, and the Trainer's own count of them, state.global_step) is
written as JSON to OUT.
"""
import os
import sys
import tempfile

import numpy as np
import torch
from torch import nn
from transformers import (BertConfig, BertForSequenceClassification, Trainer,
                          TrainerCallback, TrainingArguments)

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from scenarios import Record  # noqa: E402

LABELS = 4
SEQ = 32


class TokenDataset(torch.utils.data.Dataset):
    """Sequences of random token ids with a label each, as a tokenized text
    classification data set gives them."""

    def __init__(self, size, vocab, seed):
        g = torch.Generator().manual_seed(seed)
        self.input_ids = torch.randint(0, vocab, (size, SEQ), generator=g)
        self.labels = torch.randint(0, LABELS, (size,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.input_ids[i],
                "attention_mask": torch.ones(SEQ, dtype=torch.long),
                "labels": self.labels[i]}


def compute_metrics(eval_pred):
    logits, labels = eval_pred
    predictions = np.argmax(logits, axis=-1)
    return {"accuracy": float((predictions == labels).mean())}


class GradNormCallback(TrainerCallback):
    """Tracks the gradient norm before every optimizer step, for a plot at
    the end of training; keeps the tensors, not their values."""

    def __init__(self):
        self.grad_norms = []

    def on_pre_optimizer_step(self, args, state, control, model=None, **kwargs):
        norms = [p.grad.norm() for p in model.parameters() if p.grad is not None]
        self.grad_norms.append(torch.stack(norms).norm())  # @lead callback


class WeightedLossTrainer(Trainer):
    """A custom loss, as the Trainer's documentation shows, that also keeps
    every loss for a summary at the end."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.loss_fct = nn.CrossEntropyLoss(
            weight=torch.tensor([1.0, 2.0, 3.0, 4.0], device=self.args.device))
        self.step_losses = []

    def compute_loss(self, model, inputs, return_outputs=False,
                     num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        logits = outputs.get("logits")
        loss = self.loss_fct(logits.view(-1, LABELS), labels.view(-1))  # @lead compute_loss
        self.step_losses.append(loss)
        return (loss, outputs) if return_outputs else loss


class RecordCallback(TrainerCallback):
    """What the program measures itself: memory_allocated() after every
    optimizer step."""

    def __init__(self, rec):
        self.rec = rec

    def on_step_end(self, args, state, control, **kwargs):
        self.rec.step()


def train(case, steps, rec, output_dir):
    config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=128,
                        max_position_embeddings=64, num_labels=LABELS)
    model = BertForSequenceClassification(config)
    args = TrainingArguments(
        output_dir=output_dir,
        max_steps=steps,
        per_device_train_batch_size=8,
        per_device_eval_batch_size=8,
        learning_rate=5e-5,
        eval_strategy="steps",
        eval_steps=5,
        logging_steps=5,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
    )
    callbacks = [RecordCallback(rec)]
    trainer_class = Trainer
    if case == "callback":
        callbacks.append(GradNormCallback())
    elif case == "compute_loss":
        trainer_class = WeightedLossTrainer
    trainer = trainer_class(
        model=model,
        args=args,
        train_dataset=TokenDataset(8 * steps, config.vocab_size, seed=0),
        eval_dataset=TokenDataset(16, config.vocab_size, seed=1),
        compute_metrics=compute_metrics,
        callbacks=callbacks,
    )
    trainer.train()
    rec.optimizer_steps = trainer.state.global_step


def main():
    case, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if case not in ("clean", "callback", "compute_loss"):
        sys.exit(f"hf_trainer.py: no case {case!r}")
    rec = Record()
    with tempfile.TemporaryDirectory(prefix="hf-trainer-") as output_dir:
        train(case, steps, rec, output_dir)
    torch.cuda.synchronize()
    rec.write(out)
    print("ok")


if __name__ == "__main__":
    main()
