#!/usr/bin/env bash
# Learning on hard negatives, settled over many seeds: all-MiniLM-L6-v2 fine-tuned as a
# cross-encoder on the data of hard-negatives-data.mjs by xpm-torch (text-ranking-job.mjs:
# IdTripletSampler, PairwiseCrossEntropyLoss, AdamW 3e-5 / 0.01, 10 % warm-up then linear decay,
# 16 triplets a step) and by a plain PyTorch + transformers loop drawing triplets with replacement
# (runners/text_ranking_torch.py), dev MRR@10 after the last step, one line per run in
# results/hard-negatives.jsonl (runs already there are skipped: a campaign resumes), then the
# statistics (seeds_stats.py) in results/hard-negatives.md.
#
# Usage: bash benchmarks/hard-negatives.sh [campaign ...]   (default: main)
#   main, main-100, main-200   both sides, 60 / 100 / 200 steps
#   long                       both sides, MS MARCO-length passages truncated to max_length 128
#   listwise                   both sides, a loss comparing the documents of a query: ListNet over
#                              slates of a training query's positive and its 3 hard negatives,
#                              8 slates a step (the 32 pairs of 16 triplets)
#   bf16                       both sides in mixed precision: xpm-torch bf16-mixed, the reference
#                              under CPU autocast to bfloat16 (a CPU with native bf16 is faster)
#   bf16-highest               xpm-torch in bf16-mixed with torch_fp32_precision "highest" (as the
#                              reference, rather than the "medium" bf16-mixed defaults to)
#   Each ingredient of the reference's run in turn xpm-torch's (60 steps):
#   reference-passes           the reference drawing shuffled passes, as xpm-torch does
#   reference-our-head         the reference starting from the head xpm-torch draws for the seed
#   reference-our-order        the reference taking the triplets in xpm-torch's order
#   reference-our-head-order   both: only the dropout masks (and rounding) remain the reference's
#   xpm-torch-reference-head   xpm-torch starting from the head the reference draws
#   ingredients                no training: the heads and orders each side draws for 100 seeds,
#                              compared (hard_negatives_ingredients.py), in results/hard-negatives-ingredients.md
# SEEDS (default 0-19) chooses the seeds; PARALLEL (2) and THREADS (1) how runs share the cores.
# Your own data: DATA=DIR (the MS MARCO layout of hard-negatives-data.mjs; listwise also reads
# qrels.train.tsv and run.train.trec, the training queries' judged candidates) and MODEL=DIR.
# BUILD=0 skips `npm run build` (a campaign beside work on the tree runs the build it started with).
set -euo pipefail

python_packages=(transformers tokenizers scipy)
python_imports="transformers, tokenizers, scipy"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

provision_python
[[ "${BUILD:-1}" == 0 ]] || (cd "$root" && npm run build >&2)
model="${MODEL:-$(cd "$root" && node scripts/minilm.mjs | tail -n 1)}"
seeds="${SEEDS:-0-19}"
out="$root/benchmarks/results/hard-negatives.jsonl"
data_of() {
  local dir="$cache/bench-data/hard-negatives${1:+-$1}"
  [[ -f "$dir/run.train.trec" ]] || node "$root/benchmarks/hard-negatives-data.mjs" "$dir" ${1:+--$1} >&2
  echo "$dir"
}
data="${DATA:-$(data_of)}"
inits="$cache/bench-data/hard-negatives-inits"

# The model each seed starts from on one side: inits/<side>-<seed>.
prepare_inits() {
  local side="$1" first last seed dir
  IFS=- read -r first last <<<"$seeds"
  for seed in $(seq "$first" "${last:-$first}"); do
    dir="$inits/$side-$seed"
    [[ -f "$dir/model.safetensors" ]] && continue
    rm -rf "$dir"
    mkdir -p "$inits"
    if [[ "$side" == xpm-torch ]]; then
      node "$root/benchmarks/runners/xpm-torch-init.mjs" --data "$data" --model "$model" --seed "$seed" --out "$dir" >&2
    else
      "$python" "$root/benchmarks/runners/text_ranking_torch.py" --data "$data" --model "$model" --seed "$seed" \
        --save-init "$dir" 2>/dev/null
    fi
  done
}

campaign() {
  local variant="$1" steps="$2" sides="$3" xpm="$4" reference="$5" dir="${6:-$data}"
  echo "== $variant, $steps steps" >&2
  node "$root/benchmarks/seeds.mjs" --out "$out" --data "$dir" --model "$model" --steps "$steps" --python "$python" \
    --seeds "$seeds" --sides "$sides" --variant "$variant" --parallel "${PARALLEL:-2}" --threads "${THREADS:-1}" \
    --xpm-args "--no-start-validation $xpm" --reference-args "--no-start-validation $reference"
}

both=xpm-torch,reference
for name in "${@:-main}"; do
  case "$name" in
    main) campaign main 60 "$both" "" "--draw replacement" ;;
    main-100) campaign main 100 "$both" "" "--draw replacement" ;;
    main-200) campaign main 200 "$both" "" "--draw replacement" ;;
    long) campaign long 60 "$both" "" "--draw replacement" "$(data_of long)" ;;
    listwise) campaign listwise 60 "$both" "--loss listnet --batch-size 8" "--loss listnet --batch-size 8 --draw replacement" ;;
    bf16) campaign bf16 60 "$both" "--precision bf16-mixed" "--autocast bf16 --draw replacement" ;;
    bf16-highest) campaign bf16-highest 60 xpm-torch "--precision bf16-mixed --fp32-matmul highest" "" ;;
    reference-passes) campaign passes 60 reference "" "--draw passes" ;;
    reference-our-head)
      prepare_inits xpm-torch
      campaign our-head 60 reference "" "--draw replacement --init $inits/xpm-torch-{seed}" ;;
    reference-our-order) campaign our-order 60 reference "" "--draw xpm-torch" ;;
    reference-our-head-order)
      prepare_inits xpm-torch
      campaign our-head-order 60 reference "" "--draw xpm-torch --init $inits/xpm-torch-{seed}" ;;
    xpm-torch-reference-head)
      prepare_inits reference
      campaign reference-head 60 xpm-torch "--model $inits/reference-{seed}" "" ;;
    ingredients)
      (cd "$root" && "$python" benchmarks/hard_negatives_ingredients.py --data "$data" --model "$model" \
        --markdown benchmarks/results/hard-negatives-ingredients.md) ;;
    *) echo "unknown campaign: $name (see the usage at the top of $0)" >&2; exit 2 ;;
  esac
done

# Each fixed ingredient against the side it was taken from and the side it was given to (those
# whose runs are there).
"$python" "$root/benchmarks/seeds_stats.py" "$out" --markdown "$root/benchmarks/results/hard-negatives.md" \
  --compare xpm-torch/main/60=reference/passes/60 \
  --compare reference/passes/60=reference/main/60 \
  --compare reference/our-head/60=reference/main/60 \
  --compare reference/our-order/60=reference/main/60 \
  --compare xpm-torch/main/60=reference/our-head-order/60 \
  --compare xpm-torch/reference-head/60=xpm-torch/main/60 \
  --compare reference/our-head-order/60=reference/main/60 \
  --compare xpm-torch/bf16/60=xpm-torch/main/60 \
  --compare reference/bf16/60=reference/main/60 \
  --paired xpm-torch/main/60=reference/our-head-order/60 \
  --paired xpm-torch/main/60=reference/our-head/60 \
  --paired xpm-torch/main/60=reference/our-order/60 \
  --paired xpm-torch/reference-head/60=reference/main/60 \
  --paired xpm-torch/main/60=reference/main/60 \
  --paired xpm-torch/bf16/60=xpm-torch/main/60 \
  --paired reference/bf16/60=reference/main/60 \
  --paired xpm-torch/bf16-attention-bf16/60=xpm-torch/main/60 \
  --paired xpm-torch/bf16-highest/60=xpm-torch/main/60 \
  --paired xpm-torch/long/60=reference/long/60 \
  --paired xpm-torch/listwise/60=reference/listwise/60
