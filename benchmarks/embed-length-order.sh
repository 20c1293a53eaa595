#!/usr/bin/env bash
# Inference in length order: all-MiniLM-L6-v2 (a BiEncoder through xpm-torch) embeds 2,000
# texts of varied length (the hard-negative passages, 8–35 tokens), batches of 32 on 2 threads,
# given a batch per call (the caller's order, as before) or all in one call (the library orders
# them by token count and pads each batch to nearly its own length). Each run in a fresh process,
# alternated `repeats` times; one JSON line per run in results/embed-length-order.jsonl, then
# the medians.
# Usage: bash benchmarks/embed-length-order.sh [repeats (3)]
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${XPM_TORCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/xpm-torch}"
repeats="${1:-3}"
(cd "$root" && npm run build >&2)
model="$(cd "$root" && node scripts/minilm.mjs | tail -n 1)"
data="$cache/bench-data/hard-negatives"
[[ -f "$data/collection.tsv" ]] || node "$root/benchmarks/hard-negatives-data.mjs" "$data" >&2
out="$root/benchmarks/results/embed-length-order.jsonl"
: >"$out"
common=(--model "$model" --texts "$data/collection.tsv" --count 2000 --batch 32 --threads 2)
for ((i = 0; i < repeats; i++)); do
  node "$root/benchmarks/runners/embed-xpm-torch.mjs" "${common[@]}" >>"$out"
  node "$root/benchmarks/runners/embed-xpm-torch.mjs" "${common[@]}" --call 2000 >>"$out"
done
node - "$out" <<'JS'
const runs = require("node:fs").readFileSync(process.argv[2], "utf8").trim().split("\n").map((l) => JSON.parse(l));
const median = (v) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)];
console.log("| texts per call | runs | texts/s (median) | range | peak MiB (median) |");
console.log("|---|---|---|---|---|");
for (const call of [...new Set(runs.map((r) => r.call))]) {
  const mine = runs.filter((r) => r.call === call);
  const rates = mine.map((r) => r.vectors / r.seconds);
  console.log(`| ${call} | ${mine.length} | ${median(rates).toFixed(0)} | ${Math.min(...rates).toFixed(0)}–${Math.max(...rates).toFixed(0)} | ${median(mine.map((r) => r.peakMiB)).toFixed(0)} |`);
}
JS
