"""The reference for benchmarks/text-ranking-job.mjs: the same fine-tuning as a plain PyTorch +
transformers loop. all-MiniLM-L6-v2 as BertForSequenceClassification with a new one-label head
(drawn after torch.manual_seed(seed)), pairwise cross-entropy over (positive, negative) (the mean
of softplus(s_neg - s_pos)), AdamW (lr 3e-5, weight decay 0.01) on every parameter, 10 % linear
warm-up then linear decay (get_linear_schedule_with_warmup), 16 triplets a step drawn from the
triplet file in a fresh random order each pass, max_length 128. MRR@10 of the dev run re-ranked
(batches of 64 pairs, evaluation mode) before the first step and after the last.

Prints one JSON object: {"seed", "mrr10": [before, after], "losses": [...], "seconds"}.
"""
import argparse
import json
import random
import time
from collections import defaultdict
from pathlib import Path

import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup


def read_texts(path):
    return dict(line.rstrip("\n").split("\t", 1) for line in open(path, encoding="utf-8"))


def mrr10(model, tokenizer, data, batch=64):
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
                            truncation="longest_first", max_length=128, padding=True, return_tensors="pt")
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
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = AutoModelForSequenceClassification.from_pretrained(args.model, num_labels=1)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    queries, documents = read_texts(args.data / "queries.train.tsv"), read_texts(args.data / "collection.tsv")
    triples = [line.split() for line in open(args.data / "triples.train.tsv")]
    rng = random.Random(args.seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-5, weight_decay=0.01)
    schedule = get_linear_schedule_with_warmup(optimizer, round(args.steps / 10), args.steps)
    before = mrr10(model, tokenizer, args.data)
    started = time.time()
    order, losses = [], []
    model.train()
    for _ in range(args.steps):
        if len(order) < 16:
            order += rng.sample(range(len(triples)), len(triples))
        batch, order = [triples[i] for i in order[:16]], order[16:]
        q = [queries[t[0]] for t in batch]
        enc = lambda col: tokenizer(q, [documents[t[col]] for t in batch], truncation="longest_first",
                                    max_length=128, padding=True, return_tensors="pt")
        loss = torch.nn.functional.softplus(model(**enc(2)).logits[:, 0] - model(**enc(1)).logits[:, 0]).mean()
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    seconds = time.time() - started
    after = mrr10(model, tokenizer, args.data)
    print(json.dumps({"seed": args.seed, "mrr10": [before, after], "losses": losses, "seconds": seconds}))


if __name__ == "__main__":
    main()
