#!/usr/bin/env bash
# Memory of inference, side by side: all-MiniLM-L6-v2 embeds 2,000 texts in batches of 32 on
# 2 threads through xpm-torch and through transformers.js (ONNX Runtime for Node, the model
# exported to ONNX here from the same weights); each runner in a fresh process, alternated,
# `repeats` times. One JSON line per run in results/embed-memory.jsonl, then the medians.
# Usage: bash benchmarks/embed-memory.sh [repeats (3)]
set -euo pipefail

python_packages=(transformers onnx onnxscript)
python_imports="transformers, onnx, onnxscript"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

repeats="${1:-3}"
provision_python
(cd "$root" && npm run build >&2)
model="$(cd "$root" && node scripts/minilm.mjs | tail -n 1)"
provision_transformers_js "$model"
data="$cache/bench-data/text-ranking"
node "$root/benchmarks/text-ranking-data.mjs" "$data" >&2
out="$root/benchmarks/results/embed-memory.jsonl"
: >"$out"
common=(--texts "$data/collection.tsv" --count 2000 --batch 32 --threads 2)
for ((i = 0; i < repeats; i++)); do
  node "$root/benchmarks/runners/embed-xpm-torch.mjs" --model "$model" "${common[@]}" >>"$out"
  node "$root/benchmarks/runners/embed-transformers-js.mjs" --modules "$transformers_js_modules" --model "$onnx_model" "${common[@]}" >>"$out"
done
node - "$out" <<'JS'
const runs = require("node:fs").readFileSync(process.argv[2], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
console.log("| runner | seconds | Node before opening (MiB) | peak opening | resident after opening | peak | resident after |");
console.log("|---|---|---|---|---|---|---|");
for (const runner of [...new Set(runs.map((r) => r.runner))]) {
  const mine = runs.filter((r) => r.runner === runner);
  const m = (key, digits = 0) => median(mine.map((r) => r[key])).toFixed(digits);
  console.log(`| ${runner} | ${m("seconds", 1)} | ${m("nodeMiB")} | ${m("openPeakMiB")} | ${m("openMiB")} | ${m("peakMiB")} | ${m("afterMiB")} |`);
}
JS
