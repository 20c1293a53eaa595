"""The MiniLM cross-encoder benchmark of the GPU suite (scripts/gpu/suite.sh), torch alone:

    minilm_bench.py weights MODEL_DIR [--seed N]
        writes MODEL_DIR/model.safetensors: fresh BERT weights for MODEL_DIR/config.json
    minilm_bench.py loop MODEL_DIR IDS --device cuda --precision bf16-mixed --warmup 10 --steps 50
        the plain PyTorch loop; prints one JSON line
    minilm_bench.py table OUT.json NAME=RESULT.json...
        the runs side by side: a table on stdout, all of it in OUT.json

The loop: PlainBertCrossEncoder (plain_bert.py) with a new one-label head, 16 (query, document)
pairs a step (the batch's 8 positives, then its 8 negatives) from the pre-tokenized ids
(`suite.sh build` writes them with xpm-torch's own tokenizer code), pairwise cross-entropy
softplus(s- - s+), AdamW (weight decay 0.01, torch's default implementation), dropout on, under
`torch.autocast(device, torch.bfloat16)` for bf16-mixed. As `transformers` does, a batch without
padding (all of them here) goes without an attention mask, so that SDPA may pick a fused kernel. The batches are copied from pinned
memory without blocking. `--warmup` steps run first; the timed steps run between two device
synchronisations. The loss stays on the device until the end (no synchronisation per step).
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plain_bert import PlainBertCrossEncoder, fresh_bert_tensors, read_safetensors, write_safetensors  # noqa: E402

PRECISIONS = ("32-true", "bf16-mixed")


def read_config(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        return json.load(f)


def weights(args):
    tensors = fresh_bert_tensors(read_config(args.model), args.seed)
    write_safetensors(os.path.join(args.model, "model.safetensors"), tensors)


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def loop(args):
    device = torch.device(args.device)
    torch.manual_seed(args.seed)
    config = read_config(args.model)
    model = PlainBertCrossEncoder(config)
    torch.nn.init.normal_(model.classifier.weight, 0.0, config["initializer_range"])
    torch.nn.init.zeros_(model.classifier.bias)
    model.load_encoder(read_safetensors(os.path.join(args.model, "model.safetensors")))
    model.to(device).train()
    # --fused: AdamW's fused kernel, the one xpm-torch's AdamW calls; PyTorch's default is foreach.
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01, fused=args.fused or None)

    ids = read_safetensors(args.ids)
    inputs = [ids[k] for k in ("input_ids", "token_type_ids", "attention_mask")]
    if device.type == "cuda":
        inputs = [t.pin_memory() for t in inputs]
        torch.cuda.reset_peak_memory_stats(device)
    batches = inputs[0].shape[0] // args.pairs
    half = args.pairs // 2

    def step(i, loss_sum):
        rows = slice((i % batches) * args.pairs, (i % batches + 1) * args.pairs)
        batch = [t[rows].to(device, non_blocking=True) for t in inputs]
        if bool(inputs[2][rows].all()):
            batch[2] = None  # transformers drops a mask without padding too (checked on the host)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.precision == "bf16-mixed"):
            scores = model(*batch)
        loss = F.softplus(scores[half:].float() - scores[:half].float()).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss.detach() if loss_sum is None else loss_sum + loss.detach()

    loss_sum = None
    for i in range(args.warmup):
        loss_sum = step(i, loss_sum)
    synchronize(device)
    started = time.perf_counter()
    timed_loss = None
    for i in range(args.warmup, args.warmup + args.steps):
        timed_loss = step(i, timed_loss)
    synchronize(device)
    seconds = time.perf_counter() - started
    peak = None
    if device.type == "cuda":
        peak = {"peak_allocated_bytes": torch.cuda.max_memory_allocated(device),
                "peak_reserved_bytes": torch.cuda.max_memory_reserved(device)}
    print(json.dumps({"device": str(device), "precision": args.precision, "warmup_steps": args.warmup,
                      "timed_steps": args.steps, "timed_seconds": seconds, "steps_per_second": args.steps / seconds,
                      "timed_mean_loss": float(timed_loss) / args.steps, "cuda_memory": peak}))


def runner_result(result):
    """The figures of an xpm-torch-run output: timed from the first epoch's report (warm-up)
    to the last one's; the peaks from its `cuda_memory`."""
    epochs, seconds = result["epochs"], result["epoch_report_seconds"]
    if len(epochs) < 2:
        raise ValueError("the xpm-torch run has fewer than 2 epochs: the first is the warm-up")
    steps = epochs[-1]["step"] - epochs[0]["step"]
    timed = seconds[-1] - seconds[0]
    losses = [e["loss"] for e in epochs[1:]]
    return {"timed_steps": steps, "timed_seconds": timed, "steps_per_second": steps / timed,
            "timed_mean_loss": sum(losses) / len(losses), "cuda_memory": result.get("cuda_memory"),
            "epoch_steps_per_second": [e["stepsPerSecond"] for e in epochs]}


def mib(value):
    return f"{value / 2**20:.0f}" if value is not None else "-"


def table(args):
    rows = {}
    for spec in args.results:
        name, _, path = spec.partition("=")
        with open(path) as f:
            text = f.read().strip()
        try:
            result = json.loads(text.splitlines()[-1]) if text else None
            rows[name] = runner_result(result) if result and "epochs" in result else result
        except (ValueError, KeyError) as e:
            rows[name] = {"error": f"{path}: {e}"}
        if rows[name] is None:
            rows[name] = {"error": f"{path}: no result"}
    lines = ["| run | steps/s | timed steps | peak allocated MiB | peak reserved MiB | mean loss (timed) |",
             "|---|---|---|---|---|---|"]
    for name, r in rows.items():
        if "error" in r:
            lines.append(f"| {name} | failed: {r['error'][:120]} | | | | |")
            continue
        memory = r.get("cuda_memory") or {}
        lines.append(f"| {name} | {r['steps_per_second']:.2f} | {r['timed_steps']} | "
                     f"{mib(memory.get('peak_allocated_bytes'))} | {mib(memory.get('peak_reserved_bytes'))} | "
                     f"{r['timed_mean_loss']:.4f} |")
    print("\n".join(lines))
    with open(args.out, "w") as f:
        json.dump({"runs": rows}, f, indent=1)
    if any("error" in r for r in rows.values()):
        sys.exit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    w = commands.add_parser("weights")
    w.add_argument("model")
    w.add_argument("--seed", type=int, default=0)
    w.set_defaults(run=weights)
    lp = commands.add_parser("loop")
    lp.add_argument("model")
    lp.add_argument("ids")
    lp.add_argument("--device", default="cuda")
    lp.add_argument("--precision", choices=PRECISIONS, default="bf16-mixed")
    lp.add_argument("--warmup", type=int, default=10)
    lp.add_argument("--steps", type=int, default=50)
    lp.add_argument("--pairs", type=int, default=16)
    lp.add_argument("--lr", type=float, default=2e-5)
    lp.add_argument("--seed", type=int, default=0)
    lp.add_argument("--fused", action="store_true", help="AdamW's fused kernel")
    lp.set_defaults(run=loop)
    t = commands.add_parser("table")
    t.add_argument("out")
    t.add_argument("results", nargs="+")
    t.set_defaults(run=table)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
