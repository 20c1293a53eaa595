#!/usr/bin/env bash
# xpm-torch's text models against what a user would pick instead, in one run, on the same texts,
# the same model files and the same thread count, each runner in a fresh process, the runners
# alternated, `repeats` times:
#   embedding    all-MiniLM-L6-v2 embeds 2,000 texts, batches of 32, fp32, mean pooling then L2
#                normalisation: xpm-torch (runners/embed-xpm-torch.mjs, all texts in one embed
#                call, which orders them by length), transformers.js 4.3.2 (ONNX Runtime for
#                Node, the model exported to ONNX from the same weights, a batch per call as its
#                pipeline is used), sentence-transformers (runners/embed_sentence_transformers.py,
#                one encode call). Equal when the least cosine to xpm-torch's vectors is ≥ 0.99999.
#   scoring      a cross-encoder scores 2,000 (query, passage) pairs, batches of 32, max_length
#                128: xpm-torch (runners/score-xpm-torch.mjs, one score call) and
#                sentence-transformers' CrossEncoder.predict (runners/score_sentence_transformers.py,
#                raw logits). The model: all-MiniLM-L6-v2 with a one-label head drawn once after
#                torch.manual_seed(0), saved as a Hugging Face directory that both sides read.
#                Equal when the scores differ by at most 1e-4.
#   fine-tuning  steps/s and peak memory of the hard-negatives job (hard-negatives.sh's main
#                campaign, no validation at start, 20 steps, seed = repeat): xpm-torch
#                (text-ranking-job.mjs) and the plain PyTorch + transformers loop
#                (runners/text_ranking_torch.py). Steps/s counts the training steps only, the
#                peak is before the closing validation. Both also in mixed precision:
#                xpm-torch in bf16-mixed, PyTorch under CPU autocast to bfloat16 (faster than
#                float32 only on a CPU with native bf16: `xpm-torch doctor`'s CPU bf16 line).
#                The closing validation (re-ranking the dev run's 2,000 pairs) is timed on each side.
#   bf16         embedding and scoring also in mixed precision: xpm-torch with precision
#                bf16-mixed, sentence-transformers under CPU autocast to bfloat16; checked against
#                xpm-torch's float32 outputs (no equality goal). INFER_BF16=0 leaves them out,
#                TUNE_BF16=0 the mixed-precision fine-tuning.
#   profile      what bounds scoring: transformers' forward over the scoring pairs in length order
#                under torch.profiler (runners/profile_forward.py; xpm-torch runs the same ATen
#                operators), in float32 and under autocast bf16: each operator's share of the time,
#                and the linear layers' GFLOP/s against one large product's on this machine.
# Texts and pairs come from the hard-negatives data (hard-negatives-data.mjs: invented facts,
# 8–35 tokens, so nothing is cut at 128 tokens): the texts are its collection's passages,
# cycled as embed-measure.mjs's texts() does; the pairs its dev run's (query, candidate), 100
# queries × 20. One JSON line per run in results/text-anchors.jsonl (emptied first); then the
# medians, ranges, ratios and equality checks, printed and written to results/text-anchors.md.
#
# Usage: bash benchmarks/text-anchors.sh [repeats (3)]
#   THREADS (2): intra-op threads of every runner (and OMP/MKL/RAYON_NUM_THREADS)
#   COUNT (2000): texts and pairs; STEPS (20): fine-tuning steps
#   TASKS (embedding,scoring,fine-tuning,profile): a subset; BUILD=0: use dist/ as it is (no npm run build)
set -euo pipefail

python_packages=("sentence-transformers==6.2.0" transformers onnx onnxscript)
python_imports="sentence_transformers, transformers, onnx, onnxscript"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

repeats="${1:-3}"
threads="${THREADS:-2}"
count="${COUNT:-2000}"
steps="${STEPS:-20}"
tasks=",${TASKS:-embedding,scoring,fine-tuning,profile},"
wants() { [[ "$tasks" == *",$1,"* ]]; }
infer_bf16() { [[ "${INFER_BF16:-1}" != 0 ]]; }
export OMP_NUM_THREADS="$threads" MKL_NUM_THREADS="$threads" RAYON_NUM_THREADS="$threads" HF_HUB_OFFLINE=1

provision_python
[[ "${BUILD:-1}" == 0 ]] || (cd "$root" && npm run build >&2)
model="$(cd "$root" && node scripts/minilm.mjs | tail -n 1)"
data="$cache/bench-data/hard-negatives"
[[ -f "$data/run.dev.trec" ]] || node "$root/benchmarks/hard-negatives-data.mjs" "$data" >&2

if wants embedding; then
  provision_transformers_js "$model"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

if wants scoring || wants profile; then
  # The cross-encoder both sides read, made once: the encoder's weights, a new one-label head.
  cross="$cache/bench-data/minilm-cross-encoder"
  if [[ ! -f "$cross/model.safetensors" ]]; then
    rm -rf "$cross.partial"
    "$python" - "$model" "$cross.partial" >&2 <<'PY'
import sys

import torch
from transformers import AutoTokenizer, BertForSequenceClassification

encoder_dir, out_dir = sys.argv[1:]
torch.manual_seed(0)
BertForSequenceClassification.from_pretrained(encoder_dir, num_labels=1).save_pretrained(out_dir)
AutoTokenizer.from_pretrained(encoder_dir).save_pretrained(out_dir)
PY
    mv "$cross.partial" "$cross"
  fi
  # The pairs: query<TAB>passage of the dev run, in its order, cycled up to COUNT (a repeat's
  # passage made distinct by its index, as texts() does).
  pairs="$work/pairs.tsv"
  node - "$data" "$count" "$pairs" <<'JS'
const { readFileSync, writeFileSync } = require("node:fs");
const [data, count, out] = process.argv.slice(2);
const texts = (name) => new Map(readFileSync(`${data}/${name}`, "utf8").split("\n").filter(Boolean).map((l) => [l.slice(0, l.indexOf("\t")), l.slice(l.indexOf("\t") + 1)]));
const queries = texts("queries.dev.tsv");
const passages = texts("collection.tsv");
const run = readFileSync(`${data}/run.dev.trec`, "utf8").split("\n").filter(Boolean).map((l) => l.split(/\s+/));
const lines = Array.from({ length: Number(count) }, (_, i) => {
  const [query, , passage] = run[i % run.length];
  return `${queries.get(query)}\t${passages.get(passage)}${i < run.length ? "" : ` ${i}`}`;
});
writeFileSync(out, `${lines.join("\n")}\n`);
JS
fi

out="$root/benchmarks/results/text-anchors.jsonl"
: >"$out"
load_before="$(cut -d ' ' -f 1-3 /proc/loadavg)"
# The runner's last line of output with its task, runner name (when it gives none) and repeat in
# front, appended to $out. Vectors and scores go to $work/<task>-<runner>-<repeat>.f32.
record() {
  node -e '
const [task, runner, repeat] = process.argv.slice(1);
const lines = require("node:fs").readFileSync(0, "utf8").trim().split("\n");
const run = JSON.parse(lines[lines.length - 1]);
console.log(JSON.stringify({ task, runner: run.runner ?? runner, repeat: Number(repeat), ...run }));
' "$@" >>"$out"
}
embed_args=(--texts "$data/collection.tsv" --count "$count" --batch 32 --threads "$threads")
score_args=(--model "${cross:-}" --pairs "${pairs:-}" --count "$count" --batch 32 --threads "$threads")
tune_args=(--data "$data" --model "$model" --threads "$threads" --no-start-validation)
for ((i = 0; i < repeats; i++)); do
  echo "== repeat $((i + 1)) of $repeats" >&2
  if wants embedding; then
    node "$root/benchmarks/runners/embed-xpm-torch.mjs" --model "$model" "${embed_args[@]}" --call "$count" \
      --vectors "$work/embedding-xpm-torch-$i.f32" | record embedding xpm-torch "$i"
    node "$root/benchmarks/runners/embed-transformers-js.mjs" --modules "$transformers_js_modules" --model "$onnx_model" "${embed_args[@]}" \
      --vectors "$work/embedding-transformers.js-$i.f32" | record embedding transformers.js "$i"
    "$python" "$root/benchmarks/runners/embed_sentence_transformers.py" --model "$model" "${embed_args[@]}" \
      --vectors "$work/embedding-sentence-transformers-$i.f32" | record embedding sentence-transformers "$i"
    if infer_bf16; then
      node "$root/benchmarks/runners/embed-xpm-torch.mjs" --model "$model" "${embed_args[@]}" --call "$count" \
        --precision bf16-mixed --vectors "$work/embedding-xpm-torch bf16-mixed-$i.f32" | record embedding "xpm-torch bf16-mixed" "$i"
      "$python" "$root/benchmarks/runners/embed_sentence_transformers.py" --model "$model" "${embed_args[@]}" --autocast bf16 \
        --vectors "$work/embedding-sentence-transformers, autocast bf16-$i.f32" | record embedding "sentence-transformers, autocast bf16" "$i"
    fi
  fi
  if wants scoring; then
    node "$root/benchmarks/runners/score-xpm-torch.mjs" "${score_args[@]}" \
      --scores "$work/scoring-xpm-torch-$i.f32" | record scoring xpm-torch "$i"
    "$python" "$root/benchmarks/runners/score_sentence_transformers.py" "${score_args[@]}" \
      --scores "$work/scoring-sentence-transformers-$i.f32" | record scoring sentence-transformers "$i"
    if infer_bf16; then
      node "$root/benchmarks/runners/score-xpm-torch.mjs" "${score_args[@]}" --precision bf16-mixed \
        --scores "$work/scoring-xpm-torch bf16-mixed-$i.f32" | record scoring "xpm-torch bf16-mixed" "$i"
      "$python" "$root/benchmarks/runners/score_sentence_transformers.py" "${score_args[@]}" --autocast bf16 \
        --scores "$work/scoring-sentence-transformers, autocast bf16-$i.f32" | record scoring "sentence-transformers, autocast bf16" "$i"
    fi
  fi
  if wants fine-tuning; then
    node "$root/benchmarks/text-ranking-job.mjs" "${tune_args[@]}" --seed "$i" --epochs 1 --steps-per-epoch "$steps" \
      --workspace "$work/workspace-$i" |
      record fine-tuning xpm-torch "$i"
    "$python" "$root/benchmarks/runners/text_ranking_torch.py" "${tune_args[@]}" --seed "$i" --steps "$steps" \
      --draw replacement | record fine-tuning "PyTorch + transformers" "$i"
    if [[ "${TUNE_BF16:-1}" != 0 ]]; then
      node "$root/benchmarks/text-ranking-job.mjs" "${tune_args[@]}" --seed "$i" --epochs 1 --steps-per-epoch "$steps" \
        --precision bf16-mixed --workspace "$work/workspace-bf16-$i" |
        record fine-tuning "xpm-torch bf16-mixed" "$i"
      "$python" "$root/benchmarks/runners/text_ranking_torch.py" "${tune_args[@]}" --seed "$i" --steps "$steps" \
        --draw replacement --autocast bf16 | record fine-tuning "PyTorch + transformers, autocast bf16" "$i"
    fi
  fi
done

if wants profile; then
  echo "== profile" >&2
  for autocast in "" bf16; do
    [[ -z "$autocast" ]] || infer_bf16 || continue
    (cd "$root/benchmarks/runners" && "$python" profile_forward.py "${score_args[@]}" ${autocast:+--autocast "$autocast"}) 2>/dev/null |
      record profile "transformers forward" 0
  done
fi

"$python" - "$out" "$work" "$root/benchmarks/results/text-anchors.md" "$count" "$threads" "$repeats" "$steps" \
  "$load_before" <<'PY'
import json
import statistics
import sys

import numpy as np

runs_file, work, markdown, count, threads, repeats, steps, load_before = sys.argv[1:]
meta = dict(count=int(count), threads=threads, repeats=repeats, steps=steps, load_before=load_before)
runs = [json.loads(line) for line in open(runs_file)]
with open("/proc/loadavg") as loadavg:
    load_after = " ".join(loadavg.read().split()[:3])


def outputs(task, runner, repeat, rows):
    """The vectors or scores (one per row) a run wrote, as float64."""
    return np.fromfile(f"{work}/{task}-{runner}-{repeat}.f32", dtype="<f4").reshape(rows, -1).astype(np.float64)


# Each anchor's output against xpm-torch's of the same repeat, added to its run's line.
for run in runs:
    if run["runner"] == "xpm-torch" or run["task"] not in ("embedding", "scoring"):
        continue
    if run["task"] == "embedding":
        ours = outputs("embedding", "xpm-torch", run["repeat"], run["vectors"])
        theirs = outputs("embedding", run["runner"], run["repeat"], run["vectors"])
        cosines = (ours * theirs).sum(1) / np.linalg.norm(ours, axis=1) / np.linalg.norm(theirs, axis=1)
        run["minCosine"] = float(cosines.min())
    else:
        ours = outputs("scoring", "xpm-torch", run["repeat"], run["pairs"])
        theirs = outputs("scoring", run["runner"], run["repeat"], run["pairs"])
        run["maxAbsDiff"] = float(np.abs(ours - theirs).max())
        run["maxAbsScore"] = float(np.abs(theirs).max())
with open(runs_file, "w") as rewritten:
    rewritten.writelines(json.dumps(run, separators=(",", ":")) + "\n" for run in runs)


def rate(run):
    """Items or steps per second of a run."""
    if run["task"] == "embedding":
        return run["vectors"] / run["seconds"]
    if run["task"] == "scoring":
        return run["pairs"] / run["seconds"]
    per_epoch = run["stepsPerSecond"]
    return per_epoch if isinstance(per_epoch, (int, float)) else statistics.mean(per_epoch)


def last_validation(run):
    """The seconds of a fine-tuning run's closing validation."""
    seconds = run["validationSeconds"]
    return seconds[-1] if isinstance(seconds, list) else seconds


def peak(run):
    return run["peakTrainingMiB"] if run["task"] == "fine-tuning" else run["peakMiB"]


def check(task, mine):
    """The equality check of an anchor's runs (the worst of its repeats), or its training loss;
    for a bfloat16 runner, its distance from xpm-torch's float32 outputs, with no goal."""
    bf16 = "bf16" in mine[0]["runner"]
    if task == "embedding":
        worst = min(r["minCosine"] for r in mine)
        if bf16:
            return f"least cosine to xpm-torch float32 1 − {1 - worst:.1e} (bfloat16: no equality goal)"
        return f"least cosine 1 − {1 - worst:.1e} {'✓' if worst >= 0.99999 else '✗'} (goal ≥ 0.99999)"
    if task == "scoring":
        worst = max(r["maxAbsDiff"] for r in mine)
        scale = max(r["maxAbsScore"] for r in mine)
        if bf16:
            return f"max abs. difference to xpm-torch float32 {worst:.1e} (bfloat16: no equality goal; scores up to {scale:.2f})"
        return f"max abs. difference {worst:.1e} {'✓' if worst <= 1e-4 else '✗'} (goal ≤ 1e-4; scores up to {scale:.2f})"
    losses = [statistics.mean(r["losses"]) for r in mine]
    return f"mean training loss {statistics.median(losses):.4f} (own draws: no equality)"


titles = {
    "embedding": (f"Embedding {meta['count']:,} texts (all-MiniLM-L6-v2, batch 32, mean pooling, L2-normalised)", "texts/s"),
    "scoring": (f"Scoring {meta['count']:,} (query, passage) pairs (MiniLM cross-encoder, batch 32, max_length 128)", "pairs/s"),
    "fine-tuning": (f"Fine-tuning, {meta['steps']} steps of 16 triplets (hard-negatives job)", "steps/s"),
}
lines = [
    f"{meta['threads']} threads, {meta['repeats']} repeat(s); medians over the repeats, range in between;"
    f" load average {meta['load_before']} before, {load_after} after. Peak MiB: the process's VmHWM"
    " (fine-tuning: before the closing validation). xpm-torch ÷ this: xpm-torch's median over this runner's.",
]
for task, (title, unit) in titles.items():
    in_task = [r for r in runs if r["task"] == task]
    if not in_task:
        continue
    runners = list(dict.fromkeys(r["runner"] for r in in_task))
    medians = {name: (statistics.median(rate(r) for r in in_task if r["runner"] == name),
                      statistics.median(peak(r) for r in in_task if r["runner"] == name)) for name in runners}
    lines += ["", f"### {title}", "",
              f"| runner | runs | {unit} | range | peak MiB | xpm-torch ÷ this: {unit} | xpm-torch ÷ this: peak | check |",
              "|---|---|---|---|---|---|---|---|"]
    ours = medians.get("xpm-torch")
    for name in runners:
        mine = [r for r in in_task if r["runner"] == name]
        rates = [rate(r) for r in mine]
        median_rate, median_peak = medians[name]
        digits = 2 if task == "fine-tuning" else 0
        if name == "xpm-torch" or ours is None:
            ratios = ["—", "—"]
        else:
            ratios = [f"{ours[0] / median_rate:.2f}×", f"{ours[1] / median_peak:.2f}×"]
        verdict = check(task, mine) if name != "xpm-torch" or task == "fine-tuning" else "(the reference of the checks)"
        lines.append(f"| {name} | {len(mine)} | {median_rate:.{digits}f} | {min(rates):.{digits}f}–{max(rates):.{digits}f} |"
                     f" {median_peak:.0f} | {ratios[0]} | {ratios[1]} | {verdict} |")
    mixed = medians.get("xpm-torch bf16-mixed")
    if task in ("embedding", "scoring") and mixed:
        against = [f"{mixed[0] / medians[name][0]:.2f}× {name}" for name in runners if not name.startswith("xpm-torch")]
        lines += ["", f"xpm-torch bf16-mixed: {', '.join(against)} ({unit})."]
    if task == "fine-tuning":
        closing = [(name, statistics.median(last_validation(r) for r in in_task if r["runner"] == name))
                   for name in runners]
        lines += ["", f"Closing validation (re-ranking the dev run's pairs), median seconds: "
                  + ", ".join(f"{name} {seconds:.1f}" for name, seconds in closing) + "."]
    torch32 = medians.get("PyTorch + transformers")
    if task == "fine-tuning" and mixed and torch32:
        torch16 = medians.get("PyTorch + transformers, autocast bf16")
        against16 = f", {mixed[0] / torch16[0]:.2f}× PyTorch + transformers under autocast bf16" if torch16 else ""
        lines += ["", f"xpm-torch bf16-mixed: {mixed[0] / torch32[0]:.2f}× the steps/s of PyTorch + transformers in"
                  f" float32 at {mixed[1] / torch32[1]:.2f}× its peak{against16}."]
for run in (r for r in runs if r["task"] == "profile"):
    waste = run["paddedTokens"] / run["tokens"] - 1
    lines += ["", f"### What bounds scoring: {run['runner']}, operator by operator (torch.profiler, self time)", "",
              f"{run['pairs']:,} pairs in length order: {run['tokens']:,} tokens, {waste:.1%} more padded;"
              f" {run['pairs'] / run['seconds']:.0f} pairs/s without the profiler. The linear layers' products run at"
              f" {run['linearGflops']:.0f} GFLOP/s, one 1,024-row product of the same width at {run['peakGflops']:.0f}.",
              "", "| operator | share of the time | calls |", "|---|---|---|"]
    lines += [f"| {op['name']} | {op['share']:.1%} | {op['calls']} |" for op in run["ops"]]
text = "\n".join(lines) + "\n"
print(text, end="")
with open(markdown, "w") as written:
    written.write(text)
PY
