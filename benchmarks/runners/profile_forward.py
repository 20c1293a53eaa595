"""Where the time of a cross-encoder's scoring goes, operator by operator: the anchor's forward
(transformers' BertForSequenceClassification, SDPA attention, inference mode) over the scoring
benchmark's pairs in length order, batches of --batch, as xpm-torch and sentence-transformers
batch them, under torch.profiler. xpm-torch's forwards call the same ATen operators with the
same shapes (libtorch's kernels), so this says what bounds both: the share of each operator,
and the rate of the linear layers' matrix products against this machine's rate on one large
product of the same width.

Usage: profile_forward.py --model DIR --pairs FILE [--count 2000] [--batch 32] [--threads 2]
  [--max-length 128] [--autocast bf16]
Prints one JSON line: runner, pairs, tokens (real), paddedTokens, seconds (the forwards, no
profiler), linearGflops (2·MACs of the linear layers over the forwards' addmm time), peakGflops
(one 1,024 × H by H × 4H product), ops: [{name, share, calls}] (self CPU time, largest first).
"""
import json
import time

import torch
from torch.profiler import ProfilerActivity, profile
from transformers import AutoTokenizer, BertForSequenceClassification

from score_sentence_transformers import pair_arguments, read_pairs


def main():
    args = pair_arguments().parse_args()
    torch.set_num_threads(args.threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    model = BertForSequenceClassification.from_pretrained(args.model, attn_implementation="sdpa").eval()
    config = model.config
    pairs = read_pairs(args.pairs, args.count)
    lengths = [len(ids) for ids in tokenizer([q for q, _ in pairs], [d for _, d in pairs], truncation=True,
                                              max_length=args.max_length)["input_ids"]]
    order = sorted(range(len(pairs)), key=lambda i: -lengths[i])
    batches = [order[s:s + args.batch] for s in range(0, len(order), args.batch)]
    padded = sum(max(lengths[i] for i in b) * len(b) for b in batches)
    inputs = [tokenizer([pairs[i][0] for i in b], [pairs[i][1] for i in b], truncation=True, max_length=args.max_length,
                        padding=True, return_tensors="pt") for b in batches]

    def forwards():
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast == "bf16"):
            for batch in inputs:
                model(**batch)

    forwards()
    started = time.perf_counter()
    forwards()
    seconds = time.perf_counter() - started
    with profile(activities=[ProfilerActivity.CPU]) as profiled:
        forwards()
    events = [e for e in profiled.key_averages() if e.self_cpu_time_total > 0]
    total = sum(e.self_cpu_time_total for e in events)
    ops = sorted(({"name": e.key, "share": e.self_cpu_time_total / total, "calls": e.count,
                   "seconds": e.self_cpu_time_total / 1e6} for e in events), key=lambda o: -o["share"])
    h, f = config.hidden_size, config.intermediate_size
    macs = padded * config.num_hidden_layers * (4 * h * h + 2 * h * f)
    addmm = sum(o["seconds"] for o in ops if o["name"] in ("aten::addmm", "aten::mm", "aten::linear"))
    x, w = torch.randn(1024, h), torch.randn(f, h)
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.autocast == "bf16"):
        for _ in range(5):
            torch.nn.functional.linear(x, w)
        started = time.perf_counter()
        for _ in range(50):
            torch.nn.functional.linear(x, w)
        one = (time.perf_counter() - started) / 50
    print(json.dumps({
        "runner": "transformers forward" + (f", autocast {args.autocast}" if args.autocast else ""),
        "pairs": len(pairs), "tokens": sum(lengths), "paddedTokens": padded, "seconds": seconds,
        "linearGflops": 2 * macs / addmm / 1e9 if addmm else None, "peakGflops": 2 * 1024 * h * f / one / 1e9,
        "ops": [{k: o[k] for k in ("name", "share", "calls")} for o in ops[:8]],
    }), flush=True)


if __name__ == "__main__":
    main()
