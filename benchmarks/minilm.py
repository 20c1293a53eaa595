"""Runs the MiniLM side-by-side benchmark and writes the comparison (see README.md).

Cross-encoder fine-tuning from all-MiniLM-L6-v2 on the CPU, `--pairs` (query, document) pairs of
`--max-length` tokens per step, AdamW: xpm-torch against a plain PyTorch + `transformers` loop
and sentence-transformers' CrossEncoder training (steps/s, peak RSS); and tokenization
throughput of the same pairs: the `tokenizers` crate as xpm-torch calls it against the Python
`tokenizers` batch encoding and the `transformers` fast tokenizer. Each run is its own process
(harness.measure); runners take turns within each repeat.

Standard library only, as harness.py.
"""

import argparse
import json
import os
import random
import statistics
import sys
from datetime import datetime, timezone

import harness

HERE = harness.HERE
RUNNERS = os.path.join(HERE, "runners")
REFERENCE = "xpm-torch"
TOKENIZER_REFERENCE = "xpm-torch (tokenizers crate)"

TOPICS = ["paris", "tokyo", "river", "mountain", "train", "model", "city", "capital", "music", "forest",
          "ocean", "engine", "garden", "planet", "market", "bridge"]
WORDS = ["the", "is", "a", "of", "what", "many", "things", "detail", "about", "where", "when", "people",
         "often", "large", "small", "history", "known", "during", "years", "region", "several", "built",
         "between", "their", "first", "century", "around", "local", "visitors", "famous"]


def write_triplets(path, count, words_per_document, seed=7):
    """Template triplets whose documents are long enough that every pair is cut to the maximum
    length: the positive mentions the query's topic, the negative another one."""
    rng = random.Random(seed)

    def document(topic):
        words = [rng.choice(WORDS) for _ in range(words_per_document)]
        for _ in range(3):
            words.insert(rng.randrange(len(words)), topic)
        return " ".join(words)

    lines = []
    for _ in range(count):
        topic, other = rng.sample(TOPICS, 2)
        lines.append(f"what is known about the {topic}\t{document(topic)}\t{document(other)}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")


def training_runners(tools, job):
    common = ["--model", job["model"], "--triplets", job["triplets"], "--pairs", str(job["pairs"]),
              "--steps", str(job["steps"]), "--max-length", str(job["max_length"]), "--lr", str(job["lr"])]
    torch_loop = [tools["python"], os.path.join(RUNNERS, "minilm_torch.py")]
    return {
        "xpm-torch": lambda seed: [tools["node"], os.path.join(RUNNERS, "minilm-xpm-torch.mjs")] + common + ["--seed", str(seed)],
        "PyTorch + transformers loop": lambda seed: torch_loop + common + ["--seed", str(seed)],
        "sentence-transformers CrossEncoder": lambda seed: torch_loop + common + ["--seed", str(seed), "--st"],
    }


def tokenizer_runners(tools, job):
    python = [tools["python"], os.path.join(RUNNERS, "minilm_tokenize.py"), "--model", job["model"],
              "--triplets", job["triplets"], "--pairs", str(job["pairs"]), "--rounds", str(job["rounds"]),
              "--max-length", str(job["max_length"])]
    return {
        TOKENIZER_REFERENCE: [tools["tch"], "tokenize", job["model"], job["triplets"], str(job["pairs"]),
                              str(job["rounds"]), str(job["max_length"])],
        "Python tokenizers (encode_batch)": python,
        "transformers fast tokenizer (return_tensors=pt)": python + ["--transformers"],
    }


def median_of(runs, metrics):
    ok = [r for r in runs if "error" not in r]
    if not ok:
        return {"error": runs[0]["error"]}
    summary = {m: statistics.median(r[m] for r in ok) for m in metrics}
    summary["repeats"] = len(ok)
    return summary


def ratios(table, reference, metrics):
    base = table.get(reference, {})
    for summary in table.values():
        if "error" not in summary and "error" not in base:
            summary["ratio"] = {m: summary[m] / base[m] for m in metrics if base[m]}
    return table


TRAINING = ("steps_per_second", "wall_seconds", "cpu_seconds", "peak_rss_mib", "final_loss")
TOKENIZING = ("pairs_per_second", "tokens_per_second", "peak_rss_mib")


def targets(training, tokenizing):
    checks = []
    ours, loop = training.get(REFERENCE, {}), training.get("PyTorch + transformers loop", {})
    if "error" not in ours and "error" not in loop and ours and loop:
        speed = ours["steps_per_second"] / loop["steps_per_second"]
        memory = ours["peak_rss_mib"] / loop["peak_rss_mib"]
        checks.append({"target": "steps/s >= 1.0x the PyTorch loop's", "value": speed, "met": speed >= 1.0})
        checks.append({"target": "peak RSS <= 0.6x the PyTorch loop's", "value": memory, "met": memory <= 0.6})
    ours, python = tokenizing.get(TOKENIZER_REFERENCE, {}), tokenizing.get("Python tokenizers (encode_batch)", {})
    if "error" not in ours and "error" not in python and ours and python:
        speed = ours["pairs_per_second"] / python["pairs_per_second"]
        checks.append({"target": "tokenization >= 1.0x Python tokenizers", "value": speed, "met": speed >= 1.0})
    return checks


def cell(summary, metric, fmt):
    text = fmt.format(summary[metric])
    ratio = summary.get("ratio", {}).get(metric)
    return f"{text} ({ratio:.2f}×)" if ratio is not None else text


def markdown(report):
    job = report["job"]
    lines = [f"### Fine-tuning: {job['pairs']} pairs × {job['max_length']} tokens, {job['steps']} steps, "
             f"{report['threads']} thread(s)", "",
             "| runner | steps/s | wall s | CPU s | peak RSS MiB | mean loss |", "|---|---|---|---|---|---|"]
    for name, s in report["training"].items():
        if "error" in s:
            lines.append(f"| {name} | failed: {s['error'][:150]} | | | | |")
            continue
        lines.append(f"| {name} | {cell(s, 'steps_per_second', '{:.2f}')} | {cell(s, 'wall_seconds', '{:.1f}')} | "
                     f"{cell(s, 'cpu_seconds', '{:.1f}')} | {cell(s, 'peak_rss_mib', '{:.0f}')} | {cell(s, 'final_loss', '{:.4f}')} |")
    lines += ["", f"### Tokenization: batches of {job['pairs']} pairs, cut to {job['max_length']} tokens", "",
              "| runner | pairs/s | tokens/s | peak RSS MiB |", "|---|---|---|---|"]
    for name, s in report["tokenizing"].items():
        if "error" in s:
            lines.append(f"| {name} | failed: {s['error'][:150]} | | |")
            continue
        lines.append(f"| {name} | {cell(s, 'pairs_per_second', '{:.0f}')} | {cell(s, 'tokens_per_second', '{:.0f}')} | "
                     f"{cell(s, 'peak_rss_mib', '{:.0f}')} |")
    lines += ["", "### Targets", "", "| target | measured | met |", "|---|---|---|"]
    for c in report["targets"]:
        lines.append(f"| {c['target']} | {c['value']:.2f}× | {'yes' if c['met'] else 'no'} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tch", required=True, help="the side_by_side example binary (minilm.sh passes it)")
    parser.add_argument("--model", required=True, help="the all-MiniLM-L6-v2 directory (minilm.sh passes it)")
    parser.add_argument("--node", default="node")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--max-length", type=int, default=128)
    parser.add_argument("--lr", type=float, default=2e-5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3, help="passes over the pairs when tokenising")
    parser.add_argument("--triplets", type=int, default=512, help="triplets in the data file")
    parser.add_argument("--runners", default=None, help="comma-separated subset of the runners")
    parser.add_argument("--data", default=None, help="where the triplet file goes (default: a cache folder)")
    parser.add_argument("--out", default=os.path.join(HERE, "results"))
    parser.add_argument("--name", default="minilm", help="stem of the result files in --out")
    args = parser.parse_args()

    cache = os.environ.get("XPM_TORCH_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "xpm-torch")
    data_dir = args.data or os.path.join(cache, "bench-data", "minilm")
    job = {"model": args.model, "triplets": os.path.join(data_dir, f"triplets-{args.triplets}.tsv"),
           "pairs": args.pairs, "steps": args.steps, "max_length": args.max_length, "lr": args.lr, "rounds": args.rounds}
    write_triplets(job["triplets"], args.triplets, words_per_document=args.max_length)
    tools = {"node": args.node, "tch": args.tch, "python": sys.executable}
    train, tokenize = training_runners(tools, job), tokenizer_runners(tools, job)
    chosen = set(args.runners.split(",")) if args.runners else set(train) | set(tokenize)
    load_before = harness.load_average()
    runs = {name: [] for name in list(train) + list(tokenize) if name in chosen}
    for repeat in range(args.repeats):
        for name, argv in train.items():
            if name in chosen:
                result = harness.run_once(argv(repeat), args.threads)
                runs[name].append(result)
                shown = result.get("error") or f"{result['steps_per_second']:.2f} steps/s, {result['peak_rss_mib']:.0f} MiB"
                print(f"[#{repeat}] {name}: {shown}", file=sys.stderr, flush=True)
        for name, argv in tokenize.items():
            if name in chosen:
                result = harness.measure(argv, args.threads)
                if "error" not in result:
                    result["pairs_per_second"] = result["pairs"] / result["seconds"]
                    result["tokens_per_second"] = result["tokens"] / result["seconds"]
                runs[name].append(result)
                shown = result.get("error") or f"{result['pairs_per_second']:.0f} pairs/s ({result['tokens']} tokens)"
                print(f"[#{repeat}] {name}: {shown}", file=sys.stderr, flush=True)
    training = ratios({n: median_of(runs[n], TRAINING) for n in train if n in runs}, REFERENCE, TRAINING)
    tokenizing = ratios({n: median_of(runs[n], TOKENIZING) for n in tokenize if n in runs}, TOKENIZER_REFERENCE, TOKENIZING)
    report = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": harness.machine(),
        "load_average": {"before": load_before, "after": harness.load_average()},
        "threads": args.threads,
        "repeats": args.repeats,
        "job": {k: v for k, v in job.items() if k not in ("model", "triplets")},
        "training": training,
        "tokenizing": tokenizing,
        "targets": targets(training, tokenizing),
        "runs": runs,
    }
    table = markdown(report)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"{args.name}.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.out, f"{args.name}.md"), "w") as f:
        f.write(table)
    print(table)


if __name__ == "__main__":
    main()
