#!/usr/bin/env bash
# One command for the MiniLM side-by-side benchmark: provisions the Python side (transformers,
# tokenizers, sentence-transformers) and all-MiniLM-L6-v2, builds the Rust side, runs every
# runner, writes benchmarks/results/minilm.{json,md}. Arguments go to minilm.py (e.g. --steps
# 100 --repeats 3 --threads 2).
# `minilm.sh learning [--long] [steps] [seeds]` compares learning per step instead (dev MRR@10
# over seeds, text-ranking.sh).
set -euo pipefail

if [[ "${1:-}" == "learning" ]]; then
  shift
  exec bash "$(dirname "${BASH_SOURCE[0]}")/text-ranking.sh" "$@"
fi

python_packages=(transformers tokenizers sentence-transformers datasets accelerate)
python_imports="transformers, tokenizers, sentence_transformers, datasets, accelerate"
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"

provision_python
build_rust
model="$(cd "$root" && node scripts/minilm.mjs | tail -n 1)"
exec "$python" "$root/benchmarks/minilm.py" --tch "$tch_runner" --model "$model" "$@"
