#!/usr/bin/env bash
# Learning per step, side by side: all-MiniLM-L6-v2 fine-tuned as a cross-encoder on the data
# of text-ranking-data.mjs by xpm-torch (text-ranking-job.mjs) and by a plain PyTorch +
# transformers loop (runners/text_ranking_torch.py), over several seeds; the dev MRR@10 before
# the first step and after the last, one JSON line per run in results/text-ranking.jsonl.
# Usage: bash benchmarks/text-ranking.sh [--long] [steps (60)] [seeds (0 1 2 3 4)]
#   --long: MS MARCO-length passages that fill max_length 128 (text-ranking-data.mjs --long)
set -euo pipefail

python_packages=(transformers tokenizers)
python_imports="transformers, tokenizers"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

provision_python
(cd "$root" && npm run build >&2)
model="$(cd "$root" && node scripts/minilm.mjs | tail -n 1)"
long=()
if [[ "${1:-}" == "--long" ]]; then
  long=(--long)
  shift
fi
steps="${1:-60}"
shift || true
seeds=("${@:-0 1 2 3 4}")
data="$cache/bench-data/text-ranking${long:+-long}"
node "$root/benchmarks/text-ranking-data.mjs" "$data" "${long[@]}" >&2
out="$root/benchmarks/results/text-ranking${long:+-long}.jsonl"
: >"$out"
for seed in ${seeds[*]}; do
  echo "== seed $seed" >&2
  node "$root/benchmarks/text-ranking-job.mjs" --data "$data" --model "$model" --seed "$seed" \
    --epochs 1 --steps-per-epoch "$steps" | sed 's/^/{"runner":"xpm-torch",/; s/^{"runner":"xpm-torch",{/{"runner":"xpm-torch",/' >>"$out"
  "$python" "$root/benchmarks/runners/text_ranking_torch.py" --data "$data" --model "$model" \
    --seed "$seed" --steps "$steps" | sed 's/^{/{"runner":"PyTorch + transformers",/' >>"$out"
done
"$python" - "$out" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
for runner in ["xpm-torch", "PyTorch + transformers"]:
    after = [r["mrr10"][-1] for r in runs if r["runner"] == runner]
    print(f"{runner}: dev MRR@10 {' / '.join(f'{v:.3f}' for v in after)}; "
          f"mean {statistics.mean(after):.3f}, sd {statistics.pstdev(after):.3f}")
PY
