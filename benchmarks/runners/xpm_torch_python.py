"""The side-by-side job through the Python xpm-torch package's Learner, by its public API.

The package ships the learner, the loss trainer, the losses and the optimizers, but no sampler of
LETOR pairs and no MLP: the two small configurations below supply them (a Sampler of preference
pairs, a LossTrainer that scores them) as a user of the package would. The Learner is an
experimaestro Task; instead of submitting it to a scheduler, it is instantiated in a scratch
directory (experimaestro's DirectoryContext gives its generated paths) and executed in this
process, which is what the scheduler's job process does.

Prints one JSON line like the other runners.
"""

import argparse
import json
import logging
import os
import sys
import tempfile
from pathlib import Path
from typing import List

import torch
from experimaestro import Param
from experimaestro.taskglobals import Env as TaskEnv
from experimaestro.xpmutils import DirectoryContext
from torch import nn
from torch.utils.data import IterableDataset

from xpm_torch import Module, Random, Sampler
from xpm_torch.learner import Learner
from xpm_torch.losses.pairwise import HingeLoss, PairwiseLoss
from xpm_torch.optim import Adam, ParameterOptimizer, RegexParameterFilter
from xpm_torch.trainers import LossTrainer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from letor import load_letor  # noqa: E402


class MlpScorer(Module):
    """Features to one score, ReLU between layers (nn.Linear's default init)."""

    widths: Param[List[int]]

    def __initialize__(self):
        layers = []
        for i in range(len(self.widths) - 1):
            layers.append(nn.Linear(self.widths[i], self.widths[i + 1]))
            if i < len(self.widths) - 2:
                layers.append(nn.ReLU())
        self.layers = nn.Sequential(*layers)

    def forward(self, x):
        return self.layers(x).squeeze(-1)


class ShuffledPairs(IterableDataset):
    """Preference pairs (row indices), a fresh random order each pass, for ever."""

    def __init__(self, pairs, generator):
        self.pairs, self.generator = pairs, generator

    def __iter__(self):
        while True:
            yield from self.pairs[torch.randperm(len(self.pairs), generator=self.generator)]


class LetorPairSampler(Sampler):
    """Every preference pair of a LETOR file."""

    path: Param[str]
    num_features: Param[int]

    def initialize(self, random):
        super().initialize(random)
        self.features, self.pairs = load_letor(self.path, self.num_features)


class PairTrainer(LossTrainer):
    """Scores each batch's (preferred, other) pairs and hands the B × 2 scores to the loss (the
    package's losses are not training hooks, so the loss is a parameter, as in xpmir)."""

    lossfn: Param[PairwiseLoss]

    def initialize(self, random, context):
        super().initialize(random, context)
        # The Learner leaves building the model to the trainer (xpmir's trainers do the same).
        self.model.initialize()
        generator = torch.Generator().manual_seed(int(random.randint(2**31)))
        self._create_dataloader(ShuffledPairs(self.sampler.pairs, generator), torch.stack)

    def train_batch(self, records):
        model = getattr(self, "_fabric_model", None) or self.model
        features = self.sampler.features
        scores = torch.stack([model(features[records[:, 0]]), model(features[records[:, 1]])], 1)
        self.lossfn.process(scores, self.context)


def main():
    parser = argparse.ArgumentParser()
    for name in ("train", "heldout", "hidden"):
        parser.add_argument(f"--{name}", required=True)
    for name in ("features", "batch", "steps", "epochs", "seed"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--lr", type=float, required=True)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
    logging.disable(logging.WARNING)

    widths = [args.features] + [int(d) for d in args.hidden.split(",")] + [1]
    learner = Learner.C(
        random=Random.C(seed=args.seed),
        model=MlpScorer.C(widths=widths),
        trainer=PairTrainer.C(
            sampler=LetorPairSampler.C(path=args.train, num_features=args.features),
            batch_size=args.batch,
            num_workers=0,
            lossfn=HingeLoss.C(margin=1.0),
        ),
        max_epochs=args.epochs,
        steps_per_epoch=args.steps // args.epochs,
        checkpoint_interval=args.epochs,
        # Two optimizers, weights and biases, both Adam at the same rate, which is one Adam (it
        # updates each parameter on its own). With a single optimizer, Learner.execute fails
        # in xpm-torch 0.3.1: it calls list() on fabric.setup_optimizers(opt), which returns the
        # optimizer itself, not a tuple, when given one ("'FabricAdam' object is not iterable").
        optimizers=[
            ParameterOptimizer.C(optimizer=Adam.C(lr=args.lr), filter=RegexParameterFilter.C(includes=[part]))
            for part in (r"\.weight$", r"\.bias$")
        ],
        listeners=[],
    )
    with tempfile.TemporaryDirectory(prefix="xpm-torch-python-bench-") as workdir:
        task = learner.instance(context=DirectoryContext(workdir))
        # What the scheduler's job process sets before execute(): progress reports go there.
        TaskEnv.instance().taskpath = Path(workdir)
        task.execute()
        train_seconds, epoch_losses = read_epochs(task, args)

    model = task.model
    model.eval()
    features, pairs = load_letor(args.heldout, args.features)
    with torch.no_grad():
        scores = model(features)
        accuracy = (scores[pairs[:, 0]] > scores[pairs[:, 1]]).double().mean().item()
    print(
        json.dumps(
            {
                "steps": args.steps // args.epochs * args.epochs,
                "train_seconds": train_seconds,
                "epoch_losses": epoch_losses,
                "heldout_pairwise_accuracy": accuracy,
                "threads": torch.get_num_threads(),
            }
        )
    )


def read_epochs(task, args):
    """Training-loop seconds and each epoch's loss, from the run's TensorBoard log. The package
    logs no metrics for the last epoch (it leaves the loop before reporting them), so the time of
    the logged epochs stands for all and the final loss is the next-to-last epoch's."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(task.logpath))
    events.Reload()
    steps_per_epoch = args.steps // args.epochs
    speed = [e.value for e in events.Scalars("train/iter_per_seconds")]
    loss_tag = next(t for t in events.Tags()["scalars"] if t.startswith("train/") and "hinge" in t)
    losses = [e.value for e in events.Scalars(loss_tag)]
    seconds_per_epoch = sum(steps_per_epoch / s for s in speed) / len(speed)
    return seconds_per_epoch * args.epochs, losses


if __name__ == "__main__":
    main()
