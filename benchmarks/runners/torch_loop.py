"""The side-by-side job as a plain PyTorch loop, or (--fabric) the same loop under Lightning Fabric.

--fused switches Adam to its fused kernel, the one xpm-torch uses (PyTorch's CPU default is a
per-parameter loop of separate operations).

Prints one JSON line: training seconds (the loop only), the mean loss of each epoch and the
pairwise accuracy on the held-out file. Written as a careful user would: no .item() per step,
batches gathered with tensor indexing rather than a per-item DataLoader.
"""

import argparse
import json
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from letor import load_letor  # noqa: E402


def mlp(widths):
    layers = []
    for i in range(len(widths) - 1):
        # nn.Linear's default init: weights and biases uniform in ±1/sqrt(fan_in).
        layers.append(nn.Linear(widths[i], widths[i + 1]))
        if i < len(widths) - 2:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


def main():
    parser = argparse.ArgumentParser()
    for name in ("train", "heldout", "hidden"):
        parser.add_argument(f"--{name}", required=True)
    for name in ("features", "batch", "steps", "epochs", "seed"):
        parser.add_argument(f"--{name}", type=int, required=True)
    parser.add_argument("--lr", type=float, required=True)
    parser.add_argument("--fabric", action="store_true")
    parser.add_argument("--fused", action="store_true", help="Adam's fused kernel (not the default on CPU)")
    args = parser.parse_args()

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", torch.get_num_threads())))
    torch.manual_seed(args.seed)
    features, pairs = load_letor(args.train, args.features)
    heldout_features, heldout_pairs = load_letor(args.heldout, args.features)
    widths = [args.features] + [int(d) for d in args.hidden.split(",")] + [1]
    model = mlp(widths)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, fused=args.fused or None)
    backward = lambda loss: loss.backward()  # noqa: E731
    if args.fabric:
        from lightning.fabric import Fabric

        fabric = Fabric(accelerator="cpu", devices=1, precision="32-true")
        fabric.launch()
        model, optimizer = fabric.setup(model, optimizer)
        backward = fabric.backward

    num_pairs = pairs.shape[0]
    steps_per_epoch = args.steps // args.epochs
    order = torch.randperm(num_pairs)
    cursor = 0
    epoch_losses = []
    started = time.perf_counter()
    for _ in range(args.epochs):
        loss_sum = torch.zeros(())
        for _ in range(steps_per_epoch):
            if cursor + args.batch > num_pairs:
                order = torch.randperm(num_pairs)
                cursor = 0
            chosen = pairs[order[cursor : cursor + args.batch]]
            cursor += args.batch
            positive = model(features[chosen[:, 0]]).squeeze(-1)
            negative = model(features[chosen[:, 1]]).squeeze(-1)
            loss = (negative - positive + 1.0).clamp_min(0.0).mean()
            optimizer.zero_grad()
            backward(loss)
            optimizer.step()
            loss_sum += loss.detach()
        epoch_losses.append(loss_sum.item() / steps_per_epoch)
    seconds = time.perf_counter() - started

    with torch.no_grad():
        scores = model(heldout_features).squeeze(-1)
        accuracy = (scores[heldout_pairs[:, 0]] > scores[heldout_pairs[:, 1]]).double().mean().item()
    print(
        json.dumps(
            {
                "steps": steps_per_epoch * args.epochs,
                "train_seconds": seconds,
                "epoch_losses": epoch_losses,
                "heldout_pairwise_accuracy": accuracy,
                "threads": torch.get_num_threads(),
            }
        )
    )


if __name__ == "__main__":
    main()
