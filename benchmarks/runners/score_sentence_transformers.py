"""Scores (query, passage) pairs with a cross-encoder through sentence-transformers, the anchor of
score-xpm-torch.mjs: `CrossEncoder(model_dir, max_length=128)` and `predict(pairs,
batch_size=...)` given every pair in one call (it orders them by length itself), fp32, on the
CPU. The scores are the raw logits: `activation_fn=torch.nn.Identity()` (a one-label
CrossEncoder applies a sigmoid by default).

Usage: score_sentence_transformers.py --model DIR --pairs FILE [--count 2000] [--batch 32]
  [--threads 2] [--scores FILE]
Prints one JSON line with the fields of score-xpm-torch.mjs (see embed_sentence_transformers.py
for the memory fields).
"""
import argparse
import json
import time

import torch
from sentence_transformers import CrossEncoder

from embed_sentence_transformers import runner_name
from process_memory import inference_measures, peak_mib, resident_mib


def read_pairs(path, count):
    """The first `count` (query, passage) pairs of a file of query<TAB>passage lines."""
    with open(path, encoding="utf-8") as lines:
        pairs = [tuple(line.rstrip("\n").split("\t", 1)) for line in lines if line.rstrip("\n")][:count]
    if len(pairs) < count:
        raise SystemExit(f"{path}: {len(pairs)} pairs, fewer than --count {count}")
    return pairs


def pair_arguments():
    """The options of the runners over the scoring pairs: model, pairs, count, batch, threads,
    max length and autocast."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--pairs", required=True)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--autocast", choices=["bf16"],
                        help="run the forwards under CPU autocast to bfloat16 (the runner is then named so)")
    return parser


def main():
    parser = pair_arguments()
    parser.add_argument("--scores", help="write the scores here (float32 little-endian)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    pairs = read_pairs(args.pairs, args.count)
    before_open_mib = peak_mib()
    model = CrossEncoder(args.model, device="cpu", local_files_only=True, max_length=args.max_length,
                         activation_fn=torch.nn.Identity())
    open_peak_mib, open_mib = peak_mib(), resident_mib()
    started = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast == "bf16"):
        scores = model.predict(pairs, batch_size=args.batch, convert_to_numpy=True, show_progress_bar=False)
    seconds = time.perf_counter() - started
    print(json.dumps({
        "runner": runner_name(args.autocast), "call": len(pairs), "pairs": len(scores), "seconds": seconds,
        **inference_measures(before_open_mib, open_peak_mib, open_mib),
    }), flush=True)
    if args.scores:
        scores.astype("<f4").tofile(args.scores)


if __name__ == "__main__":
    main()
