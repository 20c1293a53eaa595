#!/usr/bin/env bash
# Steps per second and final held-out accuracy of the demo model (MLP 16→64→32→1, hinge loss,
# Adam, batches of 128, 8 epochs × 100 steps) on CUDA in 32-true, bf16-mixed and 16-mixed, with
# a CPU 32-true line for comparison. One JSON line per run (examples/precision_demo.rs).
#
#   scripts/gpu/precision.sh build   # here, with LIBTORCH and CARGO_TARGET_DIR set: builds the
#                                    # example and puts a stripped copy in target/gpu/
#   scripts/gpu/precision.sh run     # on the GPU machine, with target/gpu carried there
#
# On the GPU machine the binary runs against the torch 2.11 of the Python that holds PyTorch
# (LD_LIBRARY_PATH to its torch/lib). The binary was linked on a machine where libtorch_cuda is
# not a dependency, so it is preloaded to register CUDA. Results go to stdout and, when OUT is
# set, to $OUT/precision.jsonl.
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$here/target/gpu"

build() {
  : "${LIBTORCH:?set LIBTORCH to the torch 2.11 install to build against}"
  : "${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR}"
  (cd "$here" && cargo build --release --target x86_64-unknown-linux-gnu -p xpm-torch-core --example precision_demo)
  mkdir -p "$dest"
  strip -o "$dest/precision_demo" "$CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/release/examples/precision_demo"
  echo "built $dest/precision_demo; carry target/gpu and run: scripts/gpu/precision.sh run"
}

run() {
  local python="${PYTHON:-python3}"
  local torch_lib
  torch_lib="$("$python" -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')"
  "$python" -c 'import torch; assert torch.__version__.startswith("2.11."), torch.__version__; print("torch", torch.__version__, "cuda", torch.cuda.is_available())'
  export LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_PRELOAD="$torch_lib/libtorch_cuda.so"
  local out="${OUT:-}"
  local results="${out:+$out/precision.jsonl}"
  for spec in "32-true cuda" "bf16-mixed cuda" "16-mixed cuda" "32-true cpu"; do
    # shellcheck disable=SC2086
    line="$("$dest/precision_demo" $spec default 8 || true)"
    echo "$line"
    if [[ -n "$results" ]]; then echo "$line" >>"$results"; fi
  done
}

case "${1:-}" in
  build) build ;;
  run) run ;;
  *) echo "usage: $0 build|run" >&2; exit 2 ;;
esac
