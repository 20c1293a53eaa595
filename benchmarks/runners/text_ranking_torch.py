"""The reference for benchmarks/text-ranking-job.mjs: the same fine-tuning as a plain PyTorch +
transformers loop. all-MiniLM-L6-v2 as BertForSequenceClassification with a new one-label head
(drawn after torch.manual_seed(seed)), pairwise cross-entropy over (positive, negative) (the mean
of softplus(s_neg - s_pos)), AdamW (lr 3e-5, weight decay 0.01) on every parameter, 10 % linear
warm-up then linear decay (get_linear_schedule_with_warmup), 16 triplets a step drawn from the
triplet file in a fresh random order each pass (--draw passes) or with replacement (--draw
replacement), max_length 128 (--max-length). MRR@10 of the dev run re-ranked (batches of 64
pairs, evaluation mode) before the first step (unless --no-start-validation) and after the last.

To take the run apart, one ingredient at a time can be xpm-torch's instead of its own:
  --init DIR        start from that model (head included), e.g. the one xpm-torch draws for a
                    seed (runners/xpm-torch-init.mjs), instead of a head drawn here;
  --draw xpm-torch  the triplets in the order xpm-torch's IdTripletSampler takes them for --seed
                    (shuffled passes of SplitMix64, as crates/core/src/rng.rs draws them);
  --dropout 0       no dropout at all (every dropout probability of the config at 0).
--save-init DIR writes the model this run starts from (its own head) and exits, for xpm-torch to
start from (text-ranking-job.mjs --model DIR).

Prints one JSON object: {"seed", "mrr10": [before, after], "losses": [...], "seconds" (the
training steps only: no model loading, no validation), "stepsPerSecond" (steps over those
seconds), "peakTrainingMiB" (the process's peak resident memory, VmHWM, before the last
validation: setup and training), "peakMiB" (at the end, validation included)}: the last three
as text-ranking-job.mjs names them.
"""
import argparse
import json
import random
import time
from collections import defaultdict
from pathlib import Path

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

from process_memory import peak_mib


MASK = (1 << 64) - 1
DROPOUTS = ["hidden_dropout_prob", "attention_probs_dropout_prob", "classifier_dropout"]


class SplitMix64:
    """xpm-torch's generator (crates/core/src/rng.rs): `derive`, `below` and `shuffle` as there."""

    def __init__(self, state):
        self.state = state & MASK

    @classmethod
    def derive(cls, seed, stream):
        h = 0xCBF29CE484222325
        for b in stream.encode():
            h = ((h ^ b) * 0x100000001B3) & MASK
        rng = cls(seed ^ h)
        rng.next()
        return rng

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(self, n):
        return (self.next() * n) >> 64

    def shuffle(self, items):
        for i in range(len(items) - 1, 0, -1):
            j = self.below(i + 1)
            items[i], items[j] = items[j], items[i]


def xpm_torch_order(seed, count):
    """The triplet indices, pass after pass, as the Learner's IdTripletSampler draws them."""
    rng = SplitMix64.derive(seed, "learner.trainer/sampler")
    while True:
        order = list(range(count))
        rng.shuffle(order)
        yield from order


def read_texts(path):
    return dict(line.rstrip("\n").split("\t", 1) for line in open(path, encoding="utf-8"))


def mrr10(model, tokenizer, data, max_length, batch=64):
    queries, documents = read_texts(data / "queries.dev.tsv"), read_texts(data / "collection.tsv")
    relevant = defaultdict(set)
    for line in open(data / "qrels.dev.tsv"):
        qid, _, doc, grade = line.split()
        if int(grade) > 0:
            relevant[qid].add(doc)
    candidates = defaultdict(list)
    for line in open(data / "run.dev.trec"):
        qid, _, doc, *_ = line.split()
        candidates[qid].append(doc)
    pairs = [(qid, doc) for qid in candidates for doc in candidates[qid]]
    model.eval()
    scores = []
    with torch.no_grad():
        for start in range(0, len(pairs), batch):
            chunk = pairs[start:start + batch]
            enc = tokenizer([queries[q] for q, _ in chunk], [documents[d] for _, d in chunk],
                            truncation="longest_first", max_length=max_length, padding=True, return_tensors="pt")
            scores.extend(model(**enc).logits[:, 0].tolist())
    model.train()
    by_query = defaultdict(list)
    for (qid, doc), score in zip(pairs, scores):
        by_query[qid].append((score, doc))
    total = 0.0
    for qid, scored in by_query.items():
        ranked = [doc for _, doc in sorted(scored, key=lambda x: -x[0])][:10]
        total += next((1.0 / (i + 1) for i, doc in enumerate(ranked) if doc in relevant[qid]), 0.0)
    return total / len(by_query)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--draw", choices=["passes", "replacement", "xpm-torch"], default="passes")
    parser.add_argument("--init", help="the model to start from, head included")
    parser.add_argument("--save-init", help="write the model this run starts from here, and exit")
    parser.add_argument("--dropout", type=float, help="every dropout probability of the model")
    parser.add_argument("--no-start-validation", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    overrides = {name: args.dropout for name in DROPOUTS} if args.dropout is not None else {}
    model = AutoModelForSequenceClassification.from_pretrained(args.init or args.model, num_labels=1, **overrides)
    if args.save_init:
        model.save_pretrained(args.save_init, safe_serialization=True)
        AutoTokenizer.from_pretrained(args.model).save_pretrained(args.save_init)
        return
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    queries, documents = read_texts(args.data / "queries.train.tsv"), read_texts(args.data / "collection.tsv")
    triples = [line.split() for line in open(args.data / "triples.train.tsv")]
    rng = random.Random(args.seed)
    ours = xpm_torch_order(args.seed, len(triples))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, round(args.steps / 10), args.steps)
    before = None if args.no_start_validation else mrr10(model, tokenizer, args.data, args.max_length)
    started = time.time()
    order, losses = [], []
    model.train()
    for _ in range(args.steps):
        if args.draw == "xpm-torch":
            order = [next(ours) for _ in range(16)]
        elif args.draw == "replacement":
            order = [rng.randrange(len(triples)) for _ in range(16)]
        elif len(order) < 16:
            order += rng.sample(range(len(triples)), len(triples))
        batch, order = [triples[i] for i in order[:16]], order[16:]
        q = [queries[t[0]] for t in batch]
        enc = lambda col: tokenizer(q, [documents[t[col]] for t in batch], truncation="longest_first",
                                    max_length=args.max_length, padding=True, return_tensors="pt")
        loss = torch.nn.functional.softplus(model(**enc(2)).logits[:, 0] - model(**enc(1)).logits[:, 0]).mean()
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    seconds = time.time() - started
    training_peak = peak_mib()
    after = mrr10(model, tokenizer, args.data, args.max_length)
    print(json.dumps({"seed": args.seed, "mrr10": [before, after], "losses": losses, "seconds": seconds,
                      "stepsPerSecond": args.steps / seconds, "peakTrainingMiB": training_peak, "peakMiB": peak_mib()}))


if __name__ == "__main__":
    main()
