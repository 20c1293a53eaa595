#!/usr/bin/env bash
# Reproducibility with dropout on CUDA (examples/dropout_repro.rs): for an MLP and a Transformer
# cross-encoder with dropout, two runs with one seed and an interrupted-then-resumed run must end
# with the same bytes; the run's own CUDA generator is seeded, checkpointed and restored. Also
# on the CPU for comparison. One JSON line per model and device; exits non-zero on a mismatch.
#
#   scripts/gpu/reproducibility.sh build   # here, with LIBTORCH and CARGO_TARGET_DIR set: builds
#                                          # the example and puts a stripped copy in target/gpu/
#   scripts/gpu/reproducibility.sh run     # on the GPU machine, with target/gpu carried there
#
# As scripts/gpu/precision.sh: the binary runs against the torch 2.11 of the Python that holds
# PyTorch, with libtorch_cuda preloaded. Results go to stdout and, when OUT is set, to
# $OUT/reproducibility.jsonl.
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$here/target/gpu"

build() {
  : "${LIBTORCH:?set LIBTORCH to the torch 2.11 install to build against}"
  : "${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR}"
  (cd "$here" && cargo build --release --target x86_64-unknown-linux-gnu -p xpm-torch-core --example dropout_repro)
  mkdir -p "$dest"
  strip -o "$dest/dropout_repro" "$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/examples/dropout_repro"
  echo "built $dest/dropout_repro; carry target/gpu and run: scripts/gpu/reproducibility.sh run"
}

run() {
  local python="${PYTHON:-python3}"
  local torch_lib
  torch_lib="$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
  export LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_PRELOAD="$torch_lib/libtorch_cuda.so"
  local results="${OUT:+$OUT/reproducibility.jsonl}"
  local status=0
  for accelerator in cuda cpu; do
    out="$("$dest/dropout_repro" "$accelerator")" || status=1
    echo "$out"
    if [[ -n "$results" ]]; then echo "$out" >>"$results"; fi
  done
  exit "$status"
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) echo "usage: $0 build|run" >&2; exit 2 ;;
esac
