#!/usr/bin/env bash
# This tree against another checkout of xpm-torch (built there: `npm run build`) on the
# hard-negatives fine-tuning job (text-ranking-job.mjs: MiniLM cross-encoder, 16 triplets a
# step, no validation at start), each run in a fresh process, the trees alternated: training
# steps/s, the closing re-ranking validation's seconds, the peak memory of training, dev MRR@10.
# One JSON line per run in results/text-ranking-ab.jsonl (emptied first), then the medians.
# Usage: bash benchmarks/text-ranking-ab.sh OTHER_TREE [repeats (2)]   STEPS (15), THREADS (2)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${XPM_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xpm-torch}"
other="$(cd "${1:?usage: text-ranking-ab.sh OTHER_TREE [repeats]}" && pwd)"
repeats="${2:-2}"
(cd "$root" && npm run build >&2)
model="$(cd "$root" && node scripts/minilm.mjs | tail -n 1)"
data="$cache/bench-data/hard-negatives"
[[ -f "$data/run.dev.trec" ]] || node "$root/benchmarks/hard-negatives-data.mjs" "$data" >&2
out="$root/benchmarks/results/text-ranking-ab.jsonl"
: >"$out"
for ((i = 1; i <= repeats; i++)); do
  for tree in "$other" "$root"; do
    label=$([[ "$tree" == "$root" ]] && echo this || echo other)
    node "$tree/benchmarks/text-ranking-job.mjs" --data "$data" --model "$model" --seed "$i" --epochs 1 \
      --steps-per-epoch "${STEPS:-15}" --threads "${THREADS:-2}" --no-start-validation 2>/dev/null |
      tail -n 1 | node -e '
        const r = JSON.parse(require("node:fs").readFileSync(0, "utf8"));
        console.log(JSON.stringify({ tree: process.argv[1], commit: process.argv[2], seed: Number(process.argv[3]),
          stepsPerSecond: r.stepsPerSecond[0], validationSeconds: r.validationSeconds[0],
          peakTrainingMiB: r.peakTrainingMiB, mrr10: r.mrr10[1] }));' \
        "$label" "$(git -C "$tree" rev-parse --short HEAD)" "$i" >>"$out"
  done
done
node - "$out" <<'JS'
const runs = require("node:fs").readFileSync(process.argv[2], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
console.log("| tree | commit | runs | steps/s | validation s | peak training MiB |");
console.log("|---|---|---|---|---|---|");
for (const tree of ["other", "this"]) {
  const mine = runs.filter((r) => r.tree === tree);
  const m = (k, d) => median(mine.map((r) => r[k])).toFixed(d);
  console.log(`| ${tree} | ${mine[0].commit} | ${mine.length} | ${m("stepsPerSecond", 2)} | ${m("validationSeconds", 1)} | ${m("peakTrainingMiB", 0)} |`);
}
JS
