"""The MiniLM cross-encoder job as a plain PyTorch + `transformers` loop (what a careful user
writes), or with `--st` through sentence-transformers' CrossEncoder training (its
CrossEncoderTrainer with its usual BinaryCrossEntropyLoss on the same pairs labelled 1 and 0: the
same forward and backward, a pointwise loss). Prints one JSON line: training seconds, steps,
mean loss.

Each step tokenises `--pairs` (query, document) pairs (the batch's positives, then its
negatives), cut longest first to `--max-length`, and runs one forward and backward and an
AdamW step (weight decay 0.01, as xpm-torch's AdamW).
"""

import argparse
import json
import os
import random
import time

import torch
import torch.nn.functional as F


def read_triplets(path):
    with open(path, encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f if line.strip()]


def batches(triplets, size, seed):
    """Triplets in a fresh random order each pass, `size` at a time."""
    rng = random.Random(seed)
    while True:
        order = list(range(len(triplets)))
        rng.shuffle(order)
        for start in range(0, len(order) - size + 1, size):
            yield [triplets[i] for i in order[start:start + size]]


def plain_loop(args, triplets):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=1)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    per_step = args.pairs // 2
    data = batches(triplets, per_step, args.seed)
    losses = []
    started = time.perf_counter()
    for _ in range(args.steps):
        rows = next(data)
        queries = [q for q, _, _ in rows] * 2
        documents = [p for _, p, _ in rows] + [n for _, _, n in rows]
        encoded = tokenizer(queries, documents, truncation="longest_first", max_length=args.max_length,
                            padding=True, return_tensors="pt")
        scores = model(**encoded).logits.squeeze(-1)
        loss = F.softplus(scores[per_step:] - scores[:per_step]).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    seconds = time.perf_counter() - started
    return seconds, float(torch.stack(losses).mean())


def sentence_transformers(args, triplets):
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, CrossEncoderTrainingArguments
    from sentence_transformers.cross_encoder.losses import BinaryCrossEntropyLoss
    from transformers import TrainerCallback

    model = CrossEncoder(args.model, num_labels=1, max_length=args.max_length)
    queries, documents, labels = [], [], []
    for i in range(args.pairs // 2 * args.steps):
        query, positive, negative = triplets[i % len(triplets)]
        queries += [query, query]
        documents += [positive, negative]
        labels += [1.0, 0.0]
    dataset = Dataset.from_dict({"query": queries, "document": documents, "label": labels})
    loss = BinaryCrossEntropyLoss(model)

    class Timer(TrainerCallback):
        """The training loop only: from the first step's start to the last step's end."""
        start = end = None

        def on_step_begin(self, *_, **__):
            if self.start is None:
                self.start = time.perf_counter()

        def on_step_end(self, *_, **__):
            self.end = time.perf_counter()

    timer = Timer()
    training = CrossEncoderTrainingArguments(
        output_dir=args.workdir, per_device_train_batch_size=args.pairs, max_steps=args.steps,
        learning_rate=args.lr, weight_decay=0.01, warmup_steps=0, lr_scheduler_type="constant",
        logging_steps=args.steps, save_strategy="no", report_to="none", seed=args.seed,
        use_cpu=True, dataloader_num_workers=0, disable_tqdm=True,
    )
    trainer = CrossEncoderTrainer(model=model, args=training, train_dataset=dataset, loss=loss, callbacks=[timer])
    result = trainer.train()
    return timer.end - timer.start, float(result.training_loss)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in ("model", "triplets"):
        parser.add_argument(f"--{name}", required=True)
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--st", action="store_true", help="sentence-transformers' CrossEncoder training")
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    torch.manual_seed(args.seed)
    triplets = read_triplets(args.triplets)
    if args.st:
        import tempfile
        with tempfile.TemporaryDirectory() as workdir:
            args.workdir = workdir
            seconds, loss = sentence_transformers(args, triplets)
    else:
        seconds, loss = plain_loop(args, triplets)
    print(json.dumps({"steps": args.steps, "train_seconds": seconds, "epoch_losses": [loss]}))


if __name__ == "__main__":
    main()
