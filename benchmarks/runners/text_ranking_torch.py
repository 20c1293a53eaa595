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
--loss listnet trains on slates instead of triplets, as text-ranking-job.mjs --loss listnet: per
step --batch-size slates (each a training query's judged candidates of run.train.trec, graded by
qrels.train.tsv: its positive and its hard negatives) drawn with replacement (or in shuffled
passes), ListNet as allRank computes it (−Σ softmax(grades) · log(softmax(scores) + 1e-10), the mean
over slates). --batch-size (16) is triplets or slates per step. --autocast bf16 runs every forward
(validation included) under CPU autocast to bfloat16, as PyTorch users train in mixed precision.

--save-init DIR writes the model this run starts from (its own head) and exits, for xpm-torch to
start from (text-ranking-job.mjs --model DIR).

Prints one JSON object: {"seed", "mrr10": [before, after], "losses": [...], "seconds" (the
training steps only: no model loading, no validation), "stepsPerSecond" (steps over those
seconds), "validationSeconds" (the last validation), "peakTrainingMiB" (the process's peak
resident memory, VmHWM, before the last validation: setup and training), "peakMiB" (at the end,
validation included)}: the last four as text-ranking-job.mjs names them.
"""
import argparse
import contextlib
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


def precision(autocast):
    """The context of a forward: CPU autocast to bfloat16, or none."""
    if autocast == "bf16":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def logits(model, enc, autocast):
    """The one-label logits of a tokenised batch, in float32."""
    with precision(autocast):
        return model(**enc).logits[:, 0].float()


def slates(data):
    """The training slates: per judged query of run.train.trec, its candidates and their grades
    (a query whose candidates all share a grade is left out, as SlateSampler does)."""
    grades = defaultdict(dict)
    for line in open(data / "qrels.train.tsv"):
        qid, _, doc, grade = line.split()
        grades[qid][doc] = int(grade)
    candidates = defaultdict(list)
    for line in open(data / "run.train.trec"):
        qid, _, doc, *_ = line.split()
        candidates[qid].append(doc)
    out = []
    for qid, docs in candidates.items():
        labels = [grades[qid].get(doc, 0) for doc in docs]
        if qid in grades and len(set(labels)) > 1:
            out.append((qid, docs, labels))
    return out


def listnet(scores, labels):
    """allRank's ListNet over equal-length slates, the mean over slates."""
    predicted = torch.log(torch.softmax(scores, dim=1) + 1e-10)
    return -(torch.softmax(labels, dim=1) * predicted).sum(dim=1).mean()


def mrr10(model, tokenizer, data, max_length, batch=64, autocast=None):
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
            scores.extend(logits(model, enc, autocast).tolist())
    model.train()
    by_query = defaultdict(list)
    for (qid, doc), score in zip(pairs, scores):
        by_query[qid].append((score, doc))
    total = 0.0
    for qid, scored in by_query.items():
        ranked = [doc for _, doc in sorted(scored, key=lambda x: -x[0])][:10]
        total += next((1.0 / (i + 1) for i, doc in enumerate(ranked) if doc in relevant[qid]), 0.0)
    return total / len(by_query)


def slate_loss(model, tokenizer, batch, queries, documents, args, rng):
    """ListNet over a batch of slates, each cut to --slate-length candidates (one of its top grade
    kept) and shuffled, all scored in one forward."""
    cut = []
    for qid, docs, labels in batch:
        chosen = list(range(len(docs)))
        rng.shuffle(chosen)
        chosen = chosen[:args.slate_length]
        top = max(labels)
        if all(labels[i] != top for i in chosen):
            chosen[0] = next(i for i, g in enumerate(labels) if g == top)
        cut.append((qid, [docs[i] for i in chosen], [labels[i] for i in chosen]))
    width = min(len(docs) for _, docs, _ in cut)
    if any(len(docs) != width for _, docs, _ in cut):
        raise SystemExit("slates of unequal lengths: this runner needs every slate as long as --slate-length")
    enc = tokenizer([queries[qid] for qid, docs, _ in cut for _ in docs], [documents[d] for _, docs, _ in cut for d in docs],
                    truncation="longest_first", max_length=args.max_length, padding=True, return_tensors="pt")
    scores = logits(model, enc, args.autocast).view(len(cut), width)
    labels = torch.tensor([labels for _, _, labels in cut], dtype=torch.float32)
    return listnet(scores, labels)


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
    parser.add_argument("--loss", choices=["pairwise", "listnet"], default="pairwise")
    parser.add_argument("--batch-size", type=int, default=16, help="triplets or slates per step")
    parser.add_argument("--slate-length", type=int, default=4, help="most candidates per slate")
    parser.add_argument("--autocast", choices=["bf16"], help="CPU autocast of every forward")
    args = parser.parse_args()
    if args.loss == "listnet" and args.draw == "xpm-torch":
        parser.error("--draw xpm-torch follows IdTripletSampler's order: triplets only (--loss pairwise)")
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
    if args.loss == "listnet":
        triples = slates(args.data)
    else:
        triples = [line.split() for line in open(args.data / "triples.train.tsv")]
    rng = random.Random(args.seed)
    ours = xpm_torch_order(args.seed, len(triples))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, round(args.steps / 10), args.steps)
    validate = lambda: mrr10(model, tokenizer, args.data, args.max_length, autocast=args.autocast)
    before = None if args.no_start_validation else validate()
    size = args.batch_size
    started = time.time()
    order, losses = [], []
    model.train()
    for _ in range(args.steps):
        if args.draw == "xpm-torch":
            order = [next(ours) for _ in range(size)]
        elif args.draw == "replacement":
            order = [rng.randrange(len(triples)) for _ in range(size)]
        elif len(order) < size:
            order += rng.sample(range(len(triples)), len(triples))
        batch, order = [triples[i] for i in order[:size]], order[size:]
        if args.loss == "listnet":
            loss = slate_loss(model, tokenizer, batch, queries, documents, args, rng)
        else:
            q = [queries[t[0]] for t in batch]
            enc = lambda col: tokenizer(q, [documents[t[col]] for t in batch], truncation="longest_first",
                                        max_length=args.max_length, padding=True, return_tensors="pt")
            loss = torch.nn.functional.softplus(logits(model, enc(2), args.autocast) - logits(model, enc(1), args.autocast)).mean()
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    seconds = time.time() - started
    training_peak = peak_mib()
    validation_started = time.time()
    after = validate()
    validation_seconds = time.time() - validation_started
    print(json.dumps({"seed": args.seed, "mrr10": [before, after], "losses": losses, "seconds": seconds,
                      "stepsPerSecond": args.steps / seconds, "validationSeconds": validation_seconds,
                      "peakTrainingMiB": training_peak, "peakMiB": peak_mib()}))


if __name__ == "__main__":
    main()
