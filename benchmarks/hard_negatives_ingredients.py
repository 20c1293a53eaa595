"""The random ingredients of the hard-negative job, drawn for many seeds by xpm-torch and by the
reference loop, compared without training: a difference in how either side draws them would show
here before it shows in a dev metric.

- The head: xpm-torch's (the start model runners/xpm-torch-init.mjs writes for each seed: the
  head the Learner draws) against transformers' (torch.manual_seed(seed), then
  AutoModelForSequenceClassification.from_pretrained(model, num_labels=1), as the reference
  does). Both should be N(0, initializer_range²) weights and a zero bias. Compared: the values
  (KS against the normal, and between sides), each head's norm, and what the head does on this
  data before training — the spread of s(q, d+) − s(q, d−) over the training triplets, and the
  fraction of them already ordered right — since that is how a head's draw enters learning.
- The order: the triplets of the first `steps` batches of 16, as xpm-torch's IdTripletSampler
  takes them (shuffled passes, reproduced by text_ranking_torch.xpm_torch_order) and as the
  reference draws them (with replacement, or shuffled passes of Python's random). Compared:
  distinct triplets and queries seen, and batches holding two triplets of one query (the
  triplet file groups a query's three triplets on consecutive lines).

Usage: python benchmarks/hard_negatives_ingredients.py --data DIR --model DIR [--seeds 100]
         [--steps 60] [--markdown OUT.md]
Run from the repository root after `npm run build` (xpm-torch's heads come from dist/).
"""
import argparse
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch
from safetensors import safe_open
from scipy import stats
from transformers import AutoModelForSequenceClassification, AutoTokenizer

sys.path.insert(0, str(Path(__file__).parent / "runners"))
from text_ranking_torch import read_texts, xpm_torch_order  # noqa: E402

BATCH = 16


def our_heads(data, model_dir, seeds):
    """The heads xpm-torch's Learner draws, seed by seed, each from a process of its own."""
    heads = []
    runner = Path(__file__).parent / "runners" / "xpm-torch-init.mjs"
    for seed in range(seeds):
        with tempfile.TemporaryDirectory() as parent:
            out = Path(parent) / "model"
            subprocess.run(["node", str(runner), "--data", str(data), "--model", model_dir, "--seed", str(seed), "--out", str(out)],
                           check=True, stdout=subprocess.DEVNULL)
            with safe_open(out / "model.safetensors", "np") as weights:
                heads.append((weights.get_tensor("classifier.weight")[0], float(weights.get_tensor("classifier.bias")[0])))
    return heads


def reference_heads(model_dir, seeds):
    heads = []
    for seed in range(seeds):
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=1)
        heads.append((model.classifier.weight.detach()[0].numpy().copy(), float(model.classifier.bias.detach()[0])))
    return heads


def pooled_features(model_dir, data, count=512):
    """tanh(pooler(h_CLS)) of (query, positive) and (query, negative) for the first `count` triplets."""
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=1).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    queries, documents = read_texts(data / "queries.train.tsv"), read_texts(data / "collection.tsv")
    triples = [line.split() for line in open(data / "triples.train.tsv")][:count]
    features = []
    with torch.no_grad():
        for column in (1, 2):
            enc = tokenizer([queries[t[0]] for t in triples], [documents[t[column]] for t in triples],
                            truncation="longest_first", max_length=128, padding=True, return_tensors="pt")
            features.append(model.bert(**enc).pooler_output.numpy())
    return features


def head_rows(heads, positive, negative, std):
    rows = []
    for weight, bias in heads:
        margin = (positive - negative) @ weight
        rows.append({
            "norm": float(np.linalg.norm(weight)),
            "bias": bias,
            "margin_sd": float(margin.std()),
            "ordered": float((margin > 0).mean()),
            "lag1": float(np.corrcoef(weight[:-1], weight[1:])[0, 1]),
        })
    values = np.concatenate([w for w, _ in heads])
    return rows, values, stats.kstest(values / std, "norm").pvalue


def order_rows(draws, triples, steps):
    rows = []
    for order in draws:
        taken = order[: steps * BATCH]
        batches = [taken[i:i + BATCH] for i in range(0, len(taken), BATCH)]
        rows.append({
            "distinct_triplets": len(set(taken)),
            "distinct_queries": len({triples[i][0] for i in taken}),
            "batches_with_a_query_twice": sum(len({triples[i][0] for i in b}) < len(b) for b in batches),
        })
    return rows


def summary(rows, key):
    v = np.array([r[key] for r in rows])
    return v, f"{v.mean():.4g} (sd {v.std(ddof=1):.3g})"


def compare_table(title, sides, keys):
    names = list(sides)
    lines = [f"### {title}", "", f"| quantity | {' | '.join(names)} | KS p ({names[0]} vs each) |", "|---|" + "---|" * (len(names) + 1)]
    for key in keys:
        cells, first = [], None
        ps = []
        for name in names:
            v, text = summary(sides[name], key)
            cells.append(text)
            if first is None:
                first = v
            else:
                ps.append(f"{stats.ks_2samp(first, v).pvalue:.3f}")
        lines.append(f"| {key} | {' | '.join(cells)} | {', '.join(ps)} |")
    return lines


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True, type=Path)
    parser.add_argument("--model", required=True)
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--markdown")
    args = parser.parse_args()
    torch.set_num_threads(1)
    config = json.load(open(Path(args.model) / "config.json"))
    std = config.get("initializer_range", 0.02)
    ours = our_heads(args.data, args.model, args.seeds)
    theirs = reference_heads(args.model, len(ours))
    positive, negative = pooled_features(args.model, args.data)
    our_rows, our_values, our_ks = head_rows(ours, positive, negative, std)
    their_rows, their_values, their_ks = head_rows(theirs, positive, negative, std)
    lines = [
        f"## Heads ({len(ours)} seeds a side, {len(positive)} training triplets)",
        "",
        f"Every weight against N(0, {std}²), KS p: xpm-torch {our_ks:.3f}, reference {their_ks:.3f}; "
        f"between sides {stats.ks_2samp(our_values, their_values).pvalue:.3f}. "
        f"Weight sd: xpm-torch {our_values.std():.5f}, reference {their_values.std():.5f}. "
        f"Correlation of consecutive seeds' heads: xpm-torch "
        f"{np.mean([np.corrcoef(ours[i][0], ours[i + 1][0])[0, 1] for i in range(len(ours) - 1)]):+.4f}, reference "
        f"{np.mean([np.corrcoef(theirs[i][0], theirs[i + 1][0])[0, 1] for i in range(len(theirs) - 1)]):+.4f}.",
        "",
    ]
    lines += compare_table("Per head", {"xpm-torch": our_rows, "reference": their_rows},
                           ["norm", "bias", "margin_sd", "ordered", "lag1"])
    triples = [line.split() for line in open(args.data / "triples.train.tsv")]
    n = len(triples)
    seeds = range(args.seeds)
    ours_order = [[next(it) for _ in range(args.steps * BATCH)] for it in (xpm_torch_order(s, n) for s in seeds)]
    replacement = []
    passes = []
    for s in seeds:
        rng = random.Random(s)
        replacement.append([rng.randrange(n) for _ in range(args.steps * BATCH)])
        rng = random.Random(s)
        order = []
        while len(order) < args.steps * BATCH:
            order += rng.sample(range(n), n)
        passes.append(order)
    lines += [""] + compare_table(
        f"Orders ({args.seeds} seeds, the first {args.steps} batches of {BATCH} of {n} triplets)",
        {"xpm-torch (passes)": order_rows(ours_order, triples, args.steps),
         "reference (with replacement)": order_rows(replacement, triples, args.steps),
         "reference (passes)": order_rows(passes, triples, args.steps)},
        ["distinct_triplets", "distinct_queries", "batches_with_a_query_twice"],
    )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).write_text(text)


if __name__ == "__main__":
    main()
