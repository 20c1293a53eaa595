"""Tokenization throughput of the Python side, on the pairs of the MiniLM job: the Python
`tokenizers` batch encoding (`Tokenizer.encode_batch` of (query, document) pairs, truncation
longest first to `--max-length`, padding to the batch's longest), or with `--transformers` the
fast tokenizer called as a training loop calls it (`return_tensors="pt"`). Prints one JSON line:
pairs, real tokens, seconds.
"""

import argparse
import json
import os
import time


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--triplets", required=True)
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--transformers", action="store_true")
    args = parser.parse_args()
    queries, documents = [], []
    with open(args.triplets, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                query, positive, negative = line.rstrip("\n").split("\t")
                queries += [query, query]
                documents += [positive, negative]
    chunks = [(queries[i:i + args.pairs], documents[i:i + args.pairs]) for i in range(0, len(queries), args.pairs)]
    if args.transformers:
        from transformers import AutoTokenizer
        tokenizer = AutoTokenizer.from_pretrained(args.model)

        def encode(q, d):
            return tokenizer(q, d, truncation="longest_first", max_length=args.max_length, padding=True,
                             return_tensors="pt")

        def real_tokens(encoded):
            return int(encoded["attention_mask"].sum())
    else:
        from tokenizers import Tokenizer
        tokenizer = Tokenizer.from_file(os.path.join(args.model, "tokenizer.json"))
        tokenizer.enable_truncation(args.max_length, strategy="longest_first")
        tokenizer.enable_padding()

        def encode(q, d):
            return tokenizer.encode_batch(list(zip(q, d)))

        def real_tokens(encoded):
            return sum(sum(e.attention_mask) for e in encoded)
    # Counted apart, outside the timed loop.
    tokens = args.rounds * sum(real_tokens(encode(q, d)) for q, d in chunks)
    pairs = 0
    started = time.perf_counter()
    for _ in range(args.rounds):
        for q, d in chunks:
            encode(q, d)
            pairs += len(q)
    print(json.dumps({"pairs": pairs, "tokens": tokens, "seconds": time.perf_counter() - started}))


if __name__ == "__main__":
    main()
