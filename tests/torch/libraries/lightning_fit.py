# SPDX-License-Identifier: MIT
"""A LightningModule trained with `Trainer.fit()` for several epochs, written
as Lightning's documentation shows: `self.log(..., on_epoch=True)` in
`training_step`, and the documented way to use every step's outputs at an
epoch's end (append them in `training_step`, use and clear them in
`on_train_epoch_end`).

    lightning_fit.py CASE STEPS OUT PYTHON_DIR

CASE:
  clean    the documented pattern: the list grows within an epoch and is
           cleared at its end (a sawtooth with the epoch's period);
  outputs  the same list never cleared: every step's loss stays on the
           device.

STEPS optimizer steps in all, 8 a epoch. The line a finding must name is
marked `# @lead CASE`. What the program measured itself (scenarios.py's
Record: memory_allocated() after every optimizer step, and Lightning's own
count of them, trainer.global_step) is written as JSON to OUT.
"""
import os
import sys
import tempfile

import lightning as L
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from scenarios import Record  # noqa: E402

BATCHES_PER_EPOCH = 8
BATCH = 32


class LitClassifier(L.LightningModule):
    def __init__(self, clear_outputs=True):
        super().__init__()
        self.model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(),
                                   nn.Linear(512, 10))
        self.clear_outputs = clear_outputs
        self.training_step_outputs = []

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.model(x), y)  # @lead outputs
        self.log("train_loss", loss, on_step=True, on_epoch=True)
        self.training_step_outputs.append(loss)
        return loss

    def on_train_epoch_end(self):
        epoch_mean = torch.stack(self.training_step_outputs).mean()
        self.log("training_epoch_mean", epoch_mean)
        if self.clear_outputs:
            # free up the memory
            self.training_step_outputs.clear()

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


class RecordCallback(L.Callback):
    """What the program measures itself: memory_allocated() after every
    training batch (one optimizer step each)."""

    def __init__(self, rec):
        self.rec = rec

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.rec.step()


def train(case, steps, rec, root_dir):
    data = TensorDataset(torch.randn(BATCH * BATCHES_PER_EPOCH, 256),
                         torch.randint(0, 10, (BATCH * BATCHES_PER_EPOCH,)))
    train_loader = DataLoader(data, batch_size=BATCH, shuffle=True)
    model = LitClassifier(clear_outputs=case == "clean")
    trainer = L.Trainer(max_epochs=steps // BATCHES_PER_EPOCH,
                        accelerator="gpu", devices=1,
                        default_root_dir=root_dir,
                        enable_checkpointing=False,
                        enable_progress_bar=False,
                        enable_model_summary=False,
                        callbacks=[RecordCallback(rec)])
    trainer.fit(model, train_dataloaders=train_loader)
    rec.optimizer_steps = trainer.global_step


def main():
    case, steps, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    if case not in ("clean", "outputs"):
        sys.exit(f"lightning_fit.py: no case {case!r}")
    rec = Record()
    with tempfile.TemporaryDirectory(prefix="lightning-") as root_dir:
        train(case, steps, rec, root_dir)
    torch.cuda.synchronize()
    rec.write(out)
    print("ok")


if __name__ == "__main__":
    main()
