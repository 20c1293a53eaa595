#!/usr/bin/env bash
# The GPU suite, for a machine with a CUDA GPU and a Python torch 2.11, no Node and no Rust
# needed there. `npm run test:gpu` runs `all` on the machine it is on.
#
#   scripts/gpu/suite.sh build   # on a build machine (LIBTORCH and CARGO_TARGET_DIR set, after
#                                # `npm run build`): stripped binaries and the CUDA library
#                                # into target/gpu/ (carry that folder with the repository)
#   scripts/gpu/suite.sh run     # on the GPU machine: runs what target/gpu/ holds
#   scripts/gpu/suite.sh all     # both, here
#
# What runs: the GPU tests (crates/core/tests/gpu.rs: 32-true vs CPU losses, bf16/16-mixed
# accuracy, the loss scaler with an injected inf, a real out-of-memory replayed in
# micro-batches, the memory probe, NCCL with world size 1, pinned-memory copies; with two GPUs,
# NCCL between two ranks, crates/core/tests/distributed.rs); the runner on the demo job with
# accelerator cuda; kill-and-resume bit-identity with dropout on CUDA (examples/dropout_repro);
# then the predictive batcher's predicted against measured GPU peaks (examples/batching_sim)
# and the precision benchmark lines (examples/precision_demo), which report, not judge.
#
# The binaries run against the torch of PYTHON (default python3): LD_LIBRARY_PATH to its
# torch/lib, XPM_TORCH_CUDA_LIBRARY to the carried CUDA library. Results also go to $OUT when
# set. Exit status: 0 all passed; 1 a check failed; 3 no CUDA GPU here, so nothing ran (never a
# pass); 4 the suite cannot start (no torch 2.11 in PYTHON, or target/gpu not built).
set -euo pipefail

here="$(cd "$(dirname "$0")/../.." && pwd)"
dest="$here/target/gpu"
triple=x86_64-unknown-linux-gnu

NO_GPU=3
CANNOT_START=4

# The executable cargo reports for one artifact of a `--message-format=json` build.
executable() {
  python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == sys.argv[1]:
        print(m["executable"])' "$1"
}

build() {
  : "${LIBTORCH:?set LIBTORCH to the torch 2.11 install to build against}"
  : "${CARGO_TARGET_DIR:?set CARGO_TARGET_DIR}"
  local library="$here/libxpm_torch_cuda.so"
  [[ -f "$library" ]] || { echo "no $library: run npm run build first" >&2; exit "$CANNOT_START"; }
  mkdir -p "$dest"
  local json tests
  json="$(cd "$here" && cargo test --release --target "$triple" -p xpm-torch-core --test gpu --no-run --message-format=json)"
  tests="$(executable gpu <<<"$json")"
  [[ -n "$tests" ]] || { echo "cargo built no gpu test binary" >&2; exit 1; }
  strip -o "$dest/gpu-tests" "$tests"
  json="$(cd "$here" && cargo test --release --target "$triple" -p xpm-torch-core --test distributed --no-run --message-format=json)"
  tests="$(executable distributed <<<"$json")"
  [[ -n "$tests" ]] || { echo "cargo built no distributed test binary" >&2; exit 1; }
  strip -o "$dest/distributed-tests" "$tests"
  (cd "$here" && cargo build --release --target "$triple" -p xpm-torch-core --example precision_demo --example dropout_repro --example batching_sim)
  (cd "$here" && cargo build --release --target "$triple" -p xpm-torch-runner)
  local release="$CARGO_TARGET_DIR/$triple/release"
  strip -o "$dest/precision_demo" "$release/examples/precision_demo"
  strip -o "$dest/dropout_repro" "$release/examples/dropout_repro"
  strip -o "$dest/batching_sim" "$release/examples/batching_sim"
  strip -o "$dest/xpm-torch-run" "$release/xpm-torch-run"
  cp "$library" "$dest/"
  cp "$here/crates/runner/tests/fixtures/demo.json" "$dest/demo.json"
  du -ch "$dest"/* | tail -1 | sed 's/total/in target\/gpu (carried)/'
}

# One line "<torch version> <torch/lib> <CUDA devices>" from PYTHON's torch.
probe() {
  "$1" -c 'import os, torch
print(torch.__version__, os.path.join(os.path.dirname(torch.__file__), "lib"), torch.cuda.device_count() if torch.cuda.is_available() else 0)'
}

run() {
  local python="${PYTHON:-python3}"
  local found
  if ! found="$(probe "$python" 2>/dev/null)"; then
    if nvidia-smi -L 2>/dev/null | grep -q '^GPU '; then
      echo "the GPU suite cannot start: $python has no importable torch (set PYTHON to the python of a torch 2.11 virtualenv)" >&2
      exit "$CANNOT_START"
    fi
    echo "no CUDA GPU on this machine (nvidia-smi lists none, and $python has no torch): the GPU suite did not run"
    exit "$NO_GPU"
  fi
  local version torch_lib gpus
  read -r version torch_lib gpus <<<"$found"
  if [[ "$version" != 2.11.* ]]; then
    echo "the GPU suite cannot start: $python has torch $version, the suite needs 2.11" >&2
    exit "$CANNOT_START"
  fi
  if [[ "$gpus" -lt 1 ]]; then
    echo "no CUDA GPU on this machine (torch $version sees none): the GPU suite did not run"
    exit "$NO_GPU"
  fi
  [[ -x "$dest/gpu-tests" ]] || { echo "no $dest/gpu-tests: run scripts/gpu/suite.sh build first" >&2; exit "$CANNOT_START"; }
  echo "torch $version, $gpus CUDA GPU(s)"
  export LD_LIBRARY_PATH="$torch_lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export XPM_TORCH_CUDA_LIBRARY="$dest/libxpm_torch_cuda.so"
  local out="${OUT:-}"
  local log="${out:+$out/gpu-suite.log}"
  local status=0
  note() { echo "$*"; if [[ -n "$log" ]]; then echo "$*" >>"$log"; fi; }

  note "== GPU tests"
  "$dest/gpu-tests" --ignored --test-threads=1 2>&1 | tee ${log:+-a "$log"} || status=1

  note "== NCCL between two GPUs"
  if [[ "$gpus" -ge 2 ]]; then
    "$dest/distributed-tests" --ignored --exact nccl_between_two_gpus_trains_like_one_process 2>&1 | tee ${log:+-a "$log"} || status=1
  else
    note "NOT RUN: needs 2 GPUs, this machine has $gpus"
  fi

  note "== runner, demo job on CUDA"
  local job
  job="$(mktemp -d)"
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["fabric_config"]["accelerator"]="cuda"; json.dump(c, open(sys.argv[2],"w"))' \
    "$dest/demo.json" "$job/cuda.json"
  if "$dest/xpm-torch-run" "$job/cuda.json" --job-dir "$job" >"$job/output.json" 2>"$job/stderr"; then
    note "$(cat "$job/stderr")"
  else
    note "runner failed: $(cat "$job/stderr")"
    status=1
  fi

  # The examples were written for a preloaded libtorch_cuda.
  note "== kill and resume with dropout on CUDA"
  local line
  for accelerator in cuda cpu; do
    line="$(LD_PRELOAD="$torch_lib/libtorch_cuda.so" "$dest/dropout_repro" "$accelerator")" || status=1
    note "$line"
  done

  note "== predictive batcher: predicted against measured peaks on the GPU"
  line="$("$dest/batching_sim" cuda)" || status=1
  note "$line"

  note "== precision benchmark (MLP demo, 8 epochs)"
  for spec in "32-true cuda" "bf16-mixed cuda" "16-mixed cuda" "32-true cpu"; do
    # shellcheck disable=SC2086
    line="$(LD_PRELOAD="$torch_lib/libtorch_cuda.so" "$dest/precision_demo" $spec default 8 || true)"
    note "$line"
  done

  if [[ "$status" -eq 0 ]]; then note "GPU suite: passed"; else note "GPU suite: FAILED"; fi
  exit "$status"
}

case "${1:-all}" in
  build) build ;;
  run) run ;;
  all)
    build
    run
    ;;
  *) echo "usage: $0 build|run|all" >&2; exit 2 ;;
esac
