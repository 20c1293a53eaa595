"""Embeds texts with all-MiniLM-L6-v2 through sentence-transformers, the anchor of
embed-xpm-torch.mjs and embed-transformers-js.mjs: `SentenceTransformer(model_dir)` (its modules:
the encoder, mean pooling, L2 normalisation) and `encode(texts, batch_size=...)`, given all the
texts in one call by default (it orders them by length itself), fp32, on the CPU.

Takes the options of embed-measure.mjs: --model DIR --texts FILE [--count 2000] [--batch 32]
[--threads 2] [--call N] (texts per encode call; default all) [--vectors FILE] (float32
little-endian rows, in the texts' order, written after the measures), and prints one JSON line
with the same fields: runner, call, vectors, seconds (the encode calls only), then the process's
memory in MiB (VmHWM, the peak, and VmRSS, the resident): nodeMiB (named as there: here the
interpreter with torch and sentence-transformers imported, before opening the model),
openPeakMiB and openMiB (after opening), peakMiB and afterMiB (after the last call).
"""
import argparse
import json
import time

import numpy as np
import torch
from sentence_transformers import SentenceTransformer

from process_memory import inference_measures, peak_mib, resident_mib


def read_texts(collection, count):
    """The texts of embed-measure.mjs's `texts()`: the collection's (the text after each line's
    first tab), cycled, each repeat made distinct by its index."""
    with open(collection, encoding="utf-8") as lines:
        base = [line.rstrip("\n").split("\t", 1)[-1] for line in lines if line.rstrip("\n")]
    return [base[i] if i < len(base) else f"{base[i % len(base)]} {i}" for i in range(count)]


def runner_name(autocast):
    """The runner's name in the results, with its autocast if any."""
    return "sentence-transformers" + (f", autocast {autocast}" if autocast else "")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--texts", required=True)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--call", type=int, help="texts per encode call (default: all of them)")
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--autocast", choices=["bf16"],
                        help="run the forwards under CPU autocast to bfloat16 (the runner is then named so)")
    parser.add_argument("--vectors", help="write the vectors here (float32 little-endian rows)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    texts = read_texts(args.texts, args.count)
    call = args.call or len(texts)
    before_open_mib = peak_mib()
    model = SentenceTransformer(args.model, device="cpu", local_files_only=True)
    model.max_seq_length = args.max_length
    open_peak_mib, open_mib = peak_mib(), resident_mib()
    started = time.perf_counter()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast == "bf16"):
        batches = [model.encode(texts[i:i + call], batch_size=args.batch, convert_to_numpy=True, show_progress_bar=False)
                   for i in range(0, len(texts), call)]
    seconds = time.perf_counter() - started
    vectors = np.concatenate(batches).astype(np.float32)
    print(json.dumps({
        "runner": runner_name(args.autocast), "call": call, "vectors": len(vectors), "seconds": seconds,
        **inference_measures(before_open_mib, open_peak_mib, open_mib),
    }), flush=True)
    if args.vectors:
        vectors.astype("<f4").tofile(args.vectors)


if __name__ == "__main__":
    main()
